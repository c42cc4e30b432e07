"""Damaged files from the field (``../shared/cases``) and every other loader rule.

Each ``F*.expect.md`` becomes the test of the same number (exact line numbers, offsets,
ids, leaf, branch, context, writer checks, file byte-identical after reading). The rest
builds small files for the loader rules of docs/ARCHITECTURE.md that the cases do not
cover. Everything runs on both backends.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import (
    EntryNotFoundError,
    FirstKeptEntryError,
    InvalidSessionError,
    IssueKind,
    LoadReportWarning,
    SessionManager,
)

from _shared import CASES, open_quiet, report

HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


# --------------------------------------------------------------------- helpers


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def case(name: str, tmp_path: Path) -> Path:
    """A copy of a case file (the originals are read-only and must stay intact)."""
    src = next(CASES.glob(f"{name}*.jsonl"))
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst




def texts(mgr: SessionManager, leaf: Any = None) -> list[tuple[str, str]]:
    """The context as (role, text) pairs."""
    ctx = mgr.build_session_context() if leaf is None else mgr.build_session_context(leaf)
    out = []
    for m in ctx.messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            out.append((m["role"], m["summary"]))
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append((m["role"], content))
        else:
            parts = [b.get("text", "") if b.get("type") == "text" else f"<{b.get('type')}:{b.get('id', '')}>" for b in content]
            out.append((m["role"], "".join(parts)))
    return out


def msg(i: str, parent: Any, role: str = "user", text: str = "hi", ts: str = "2026-01-01T00:00:01.000Z", **extra: Any) -> dict:
    e: dict[str, Any] = {"type": "message", "id": i, "parentId": parent, "timestamp": ts}
    if role == "assistant":
        e["message"] = {"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "p", "model": "m", "timestamp": 1}
    else:
        e["message"] = {"role": role, "content": text, "timestamp": 1}
    e.update(extra)
    return e


def write(tmp_path: Path, *lines: Any, name: str = "s.jsonl", header: bool = True) -> Path:
    """A session file from dicts (JSON-encoded) and bytes (written as they are)."""
    parts = [json.dumps(HEADER, separators=(",", ":")).encode() + b"\n"] if header else []
    for line in lines:
        if isinstance(line, bytes):
            parts.append(line)
        else:
            parts.append(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
    p = tmp_path / name
    p.write_bytes(b"".join(parts))
    return p


# ------------------------------------------------------------------ the cases


def test_case_files_intact(cases_dir: Path) -> None:
    sums = {}
    for line in (cases_dir / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        sums[name] = digest
    assert len(sums) == 8
    for name, digest in sums.items():
        assert sha(cases_dir / name) == digest, name


def test_f01_truncated_tail(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F01", tmp_path)
    digest = sha(path)
    with pytest.warns(LoadReportWarning):
        mgr = SessionManager.open(str(path), backend=backend)
    with mgr:
        assert mgr.get_header()["id"] == "0f1e2d3c-0001-4a5b-8c7d-000000000001"
        assert mgr.cwd == "/home/user/project"
        ids = [e["id"] for e in mgr.get_entries()]
        assert ids == [f"a000000{i}" for i in range(1, 7)]
        assert report(mgr) == [(IssueKind.TRUNCATED, 8, 2293, ())]
        assert mgr.leaf_id == "a0000006"
        assert [e["id"] for e in mgr.get_branch()] == ids
        assert texts(mgr) == [
            ("user", "List the files in the project root."),
            ("assistant", "I'll list them.<toolCall:call_01>"),
            ("toolResult", "total 8\nREADME.md\nsrc"),
            ("assistant", "There are two entries: README.md and src."),
            ("user", "Now run the tests."),
            ("assistant", "<toolCall:call_02>"),
        ]
        # The tool call at the tail has no result: visible to the caller in the context.
        ctx = mgr.build_session_context()
        assert not any(m.get("toolCallId") == "call_02" for m in ctx.messages)
        assert "a0000007" not in mgr
    assert sha(path) == digest

    # Writer check: the append starts on a fresh line, never fused with the fragment;
    # the fragment is sealed first (`#`, issue 11), so no part of it can ever parse.
    original = path.read_bytes()
    with open_quiet(path, backend) as mgr:
        new_id = mgr.append_message({"role": "user", "content": "Continue.", "timestamp": 1})
    data = path.read_bytes()
    assert data.startswith(original)
    assert data[len(original) : len(original) + 2] == b"#\n"
    lines = data.split(b"\n")
    assert len(lines) == 10 and lines[-1] == b""
    assert json.loads(lines[8])["id"] == new_id and json.loads(lines[8])["parentId"] == "a0000006"
    with open_quiet(path, backend) as again:
        assert [e["id"] for e in again.get_entries()] == ids + [new_id]
        assert again.leaf_id == new_id
        assert report(again) == [(IssueKind.INVALID_JSON, 8, 2293, ())]


def test_f04_unicode_line_separators(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F04", tmp_path)
    digest = sha(path)
    with open_quiet(path, backend) as mgr:
        assert [e["id"] for e in mgr.get_entries()] == ["a0000001", "a0000002", "a0000003", "a0000004"]
        assert mgr.load_report == []
        u = mgr["a0000001"]["message"]["content"]
        assert u == "Here is the error text I copied:\u2028TypeError: x is undefined\u2029end" and len(u) == 62
        t = mgr["a0000003"]["message"]["content"][0]["text"]
        assert t == "line one\u0085line two\u2028line three" and len(t) == 28
        assert mgr.leaf_id == "a0000004"
        assert [r for r, _ in texts(mgr)] == ["user", "assistant", "toolResult", "assistant"]
        assert texts(mgr)[3][1] == "The log has three lines; the second one mentions the failure."
    assert sha(path) == digest

    # Writer check: the characters are written raw, and every reader frames on LF only.
    text = "a\u2028b\u2029c\u0085d"
    with SessionManager.create("/p", str(tmp_path / "new"), backend=backend) as mgr:
        mgr.append_message({"role": "user", "content": text, "timestamp": 1})
        mgr.append_message({"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": 2})
        written = mgr.session_file
    raw = Path(written).read_bytes()  # type: ignore[arg-type]
    assert b"\xe2\x80\xa8" in raw and b"\xe2\x80\xa9" in raw and b"\xc2\x85" in raw
    assert raw.count(b"\n") == 3
    for b in ("python", "native") if backend == "native" else (backend,):
        with open_quiet(written, b) as again:  # type: ignore[arg-type]
            assert [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in again.build_session_context().messages] == [text, text]
            assert again.load_report == []


def test_f07_bom_crlf(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F07", tmp_path)
    digest = sha(path)
    with open_quiet(path, backend) as mgr:
        h = mgr.get_header()
        assert (h["id"], h["cwd"], h["version"]) == ("0f1e2d3c-0007-4a5b-8c7d-000000000007", "/home/user/project", 3)
        assert report(mgr) == [(IssueKind.BOM, 1, 0, ())]  # informational only
        entries = mgr.get_entries()
        assert len(entries) == 4
        assert not any(s.endswith("\r") for e in entries for s in _strings(e))
        assert mgr.get_session_name() == "Readme summary"
        assert mgr.leaf_id == "a0000004"
        assert texts(mgr) == [
            ("user", "Summarize README.md."),
            ("assistant", "It describes installation and usage."),
            ("user", "Thanks, that is enough."),
        ]
        assert mgr.get_entry("a0000004")["parentId"] == "a0000003"
    assert sha(path) == digest
    # Listed, and picked by continue_recent.
    folder = tmp_path
    assert [s.id for s in SessionManager.list("/home/user/project", str(folder))] == ["0f1e2d3c-0007-4a5b-8c7d-000000000007"]
    with pytest.warns(LoadReportWarning), SessionManager.continue_recent("/home/user/project", str(folder), backend=backend) as mgr:
        assert mgr.session_file == str(path)
        mgr.append_message({"role": "user", "content": "More.", "timestamp": 1})
    data = path.read_bytes()
    assert data.startswith(Path(CASES / path.name).read_bytes())
    with open_quiet(path, backend) as again:
        assert len(again) == 5 and report(again) == [(IssueKind.BOM, 1, 0, ())]


def _strings(v: Any) -> list[str]:
    out, stack = [], [v]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


def test_f08_corrupt_header(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F08", tmp_path)
    digest = sha(path)
    with pytest.raises(InvalidSessionError) as info:
        SessionManager.open(str(path), backend=backend)
    assert (info.value.path, info.value.line, info.value.offset) == (str(path), 1, 0)
    assert "JSON" in info.value.reason
    assert sha(path) == digest
    problems: list[Any] = []
    from sessiontree._listing import list_sessions

    assert list_sessions(str(tmp_path), on_problem=problems.append) == []
    assert [(p.path, p.line) for p in problems] == [(str(path), 1)]
    assert SessionManager.list("/x", str(tmp_path)) == []
    with SessionManager.continue_recent("/x", str(tmp_path), backend=backend) as mgr:
        assert mgr.session_file != str(path) and len(mgr) == 0
    assert sha(path) == digest
    assert sorted(os.listdir(tmp_path)) == [path.name]  # nothing written


@pytest.mark.parametrize(
    "first_line",
    [
        json.dumps(msg("a1", None)).encode() + b"\n",  # header lost, first line is an entry
        b'{"kind":"log","msg":"not a session"}\n',  # any other JSONL file
        b'{"type":"session","version":3}\n',  # header without id
        b"[1,2,3]\n",
    ],
)
def test_f08_neighbouring_shapes(first_line: bytes, backend: str, tmp_path: Path) -> None:
    path = write(tmp_path, first_line, msg("a2", None), header=False)
    before = path.read_bytes()
    with pytest.raises(InvalidSessionError) as info:
        SessionManager.open(str(path), backend=backend)
    assert (info.value.line, info.value.offset) == (1, 0)
    assert path.read_bytes() == before


def test_empty_file_is_invalid_and_kept(backend: str, tmp_path: Path) -> None:
    for content in (b"", b"\n\n  \n"):
        path = tmp_path / "e.jsonl"
        path.write_bytes(content)
        with pytest.raises(InvalidSessionError):
            SessionManager.open(str(path), backend=backend)
        assert path.read_bytes() == content


def test_f13_dangling_parent(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F13", tmp_path)
    digest = sha(path)
    with open_quiet(path, backend) as mgr:
        assert len(mgr) == 6
        assert report(mgr) == [(IssueKind.MISSING_PARENT, 6, 1437, ("a0000005", "f00dcafe"))]
        tree = mgr.get_tree()
        assert [n.entry["id"] for n in tree] == ["a0000001", "a0000005"]
        assert [c.entry["id"] for c in tree[1].children] == ["a0000006"]
        assert mgr.leaf_id == "a0000006"
        assert [e["id"] for e in mgr.get_branch()] == ["a0000005", "a0000006"]
        assert texts(mgr) == [("user", "Now cache the dependencies."), ("assistant", "Added a cache keyed on the lock file.")]
    assert sha(path) == digest


def test_f17_first_kept_off_path(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F17", tmp_path)
    digest = sha(path)
    with open_quiet(path, backend) as mgr:
        assert len(mgr) == 7 and mgr.leaf_id == "a0000006"
        assert [e["id"] for e in mgr.get_branch()] == ["a0000001", "a0000002", "c0000001", "a0000005", "a0000006"]
        assert texts(mgr) == [
            ("compactionSummary", "The user compared cache approaches A and B."),
            ("user", "Go with A."),
            ("assistant", "Implementing the write-through cache."),
        ]
        assert report(mgr) == [(IssueKind.FIRST_KEPT_OFF_PATH, 6, 1465, ("c0000001", "a0000004"))]
        assert [c["id"] for c in mgr.get_children("a0000002")] == ["a0000003", "c0000001"]
        # Writer rule: a compaction must keep an entry of the current branch.
        with pytest.raises(FirstKeptEntryError):
            mgr.append_compaction("s", "a0000004", 1)
        with pytest.raises(FirstKeptEntryError):
            mgr.append_compaction("s", "nope", 1)
    assert sha(path) == digest

    # pi#2608: a second compaction's input covers the first one's kept messages.
    with SessionManager.in_memory("/p", backend=backend) as mgr:
        u1 = mgr.append_message({"role": "user", "content": "u1", "timestamp": 1})
        mgr.append_message({"role": "assistant", "content": [{"type": "text", "text": "a1"}], "timestamp": 1})
        u2 = mgr.append_message({"role": "user", "content": "u2", "timestamp": 1})
        mgr.append_message({"role": "assistant", "content": [{"type": "text", "text": "a2"}], "timestamp": 1})
        mgr.append_compaction("summary C1", u2, 100)
        mgr.append_message({"role": "user", "content": "u3", "timestamp": 1})
        mgr.append_message({"role": "assistant", "content": [{"type": "text", "text": "a3"}], "timestamp": 1})
        assert texts(mgr) == [("compactionSummary", "summary C1"), ("user", "u2"), ("assistant", "a2"), ("user", "u3"), ("assistant", "a3")]
        assert mgr.load_report == [] and u1 in mgr


def test_f18_second_root(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F18", tmp_path)
    digest = sha(path)
    with open_quiet(path, backend) as mgr:
        assert len(mgr) == 5 and mgr.load_report == []
        tree = mgr.get_tree()
        assert [n.entry["id"] for n in tree] == ["a0000001", "b0000001"]
        assert [c.entry["id"] for c in tree[0].children] == ["a0000002"]
        assert [c.entry["id"] for c in tree[1].children] == ["b0000002"]
        assert mgr.leaf_id == "b0000003"
        assert [e["id"] for e in mgr.get_branch()] == ["b0000001", "b0000002", "b0000003"]
        assert texts(mgr) == [
            ("branchSummary", "Earlier attempt: a haiku about rain; the user restarted."),
            ("user", "Write a limerick about rain instead."),
            ("assistant", "There once was a cloud ..."),
        ]
    assert sha(path) == digest

    original = path.read_bytes()
    with open_quiet(path, backend) as mgr:
        old_ids = set(e["id"] for e in mgr.get_entries())
        mgr.branch("a0000002")
        u = mgr.append_message({"role": "user", "content": "Shorter, please.", "timestamp": 1})
        a = mgr.append_message({"role": "assistant", "content": [{"type": "text", "text": "Rain."}], "timestamp": 2})
    assert path.read_bytes().startswith(original)
    with open_quiet(path, backend) as mgr:
        assert u not in old_ids and a not in old_ids and u != a
        assert mgr[u]["parentId"] == "a0000002" and mgr.leaf_id == a
        assert texts(mgr) == [
            ("user", "Write a haiku about rain."),
            ("assistant", "Soft rain on the roof / ..."),
            ("user", "Shorter, please."),
            ("assistant", "Rain."),
        ]
        mgr.reset_leaf()
        r = mgr.append_message({"role": "user", "content": "again", "timestamp": 3})
        s = mgr.branch_with_summary(None, "from the top")
        assert mgr[r]["parentId"] is None
        assert mgr[s]["parentId"] is None and mgr[s]["fromId"] == "root"
    with open_quiet(path, backend) as mgr:
        assert mgr.load_report == [] and len(mgr) == 9


def test_f22_v1_legacy(backend: str, cases_dir: Path, tmp_path: Path) -> None:
    path = case("F22", tmp_path)
    original = path.read_bytes()
    with open_quiet(path, backend) as mgr:
        entries = mgr.get_entries()
        ids = [e["id"] for e in entries]
        assert len(ids) == 8 == len(set(ids)) and all(isinstance(i, str) and i for i in ids)
        assert [e["parentId"] for e in entries] == [None] + ids[:-1]
        comp = entries[4]
        assert comp["type"] == "compaction" and comp["firstKeptEntryId"] == ids[2]
        assert "firstKeptEntryIndex" not in comp
        assert entries[6]["message"]["role"] == "custom"
        assert mgr.load_report == []
        assert mgr.leaf_id == ids[-1]
        ctx = mgr.build_session_context()
        assert [m["role"] for m in ctx.messages] == ["compactionSummary", "user", "assistant", "user", "custom", "assistant"]
        assert texts(mgr) == [
            ("compactionSummary", "The user asked about the build script and made it faster."),
            ("user", "Make it faster."),
            ("assistant", "Enabled incremental builds."),
            ("user", "Now add a watch mode."),
            ("custom", "Remember to run the tests."),
            ("assistant", "Added --watch."),
        ]
        assert ctx.messages[4]["customType"] == "reminder" and ctx.messages[4]["display"] is True
    assert path.read_bytes() == original  # migrated in memory only
    with open_quiet(path, backend) as again:
        assert [e["id"] for e in again.get_entries()] == ids  # stable ids
    other = "native" if backend == "python" else "python"
    if other == "python" or _native_ok():
        with open_quiet(path, other) as again:
            assert [e["id"] for e in again.get_entries()] == ids  # both backends agree

    # Write rule: persisted as v3 before the first append, original kept, no temp left.
    with open_quiet(path, backend) as mgr:
        new = mgr.append_message({"role": "user", "content": "more", "timestamp": 1})
    backup = Path(str(path) + ".v1.bak")
    assert backup.read_bytes() == original
    assert sorted(os.listdir(tmp_path)) == sorted([path.name, backup.name])
    lines = path.read_bytes().split(b"\n")
    assert json.loads(lines[0])["version"] == 3
    with open_quiet(path, backend) as again:
        assert [e["id"] for e in again.get_entries()] == ids + [new]
        assert again[new]["parentId"] == ids[-1]
        assert again.load_report == []


def _native_ok() -> bool:
    from _shared import native_available

    return native_available()


# ---------------------------------------------------------- other loader rules


def test_torn_fragment_then_entry_on_same_line(backend: str, tmp_path: Path) -> None:
    a1 = msg("a1", None)
    full = json.dumps(msg("a2", "a1", "assistant"), separators=(",", ":")).encode()
    fused = full[:57] + json.dumps(msg("a3", "a1"), separators=(",", ":")).encode() + b"\n"
    path = write(tmp_path, a1, fused, msg("a4", "a3"))
    with open_quiet(path, backend) as mgr:
        assert [e["id"] for e in mgr.get_entries()] == ["a1", "a3", "a4"]
        line3 = len(path.read_bytes().split(b"\n")[0]) + 1 + len(json.dumps(a1, separators=(",", ":"))) + 1
        assert report(mgr) == [(IssueKind.TORN_FRAGMENT, 3, line3, ())]
        assert mgr["a3"] == msg("a3", "a1")
        assert [e["id"] for e in mgr.get_branch()] == ["a1", "a3", "a4"]


def test_duplicate_ids_first_definition_stands(backend: str, tmp_path: Path) -> None:
    path = write(tmp_path, msg("a1", None, text="first"), msg("a2", "a1"), msg("a1", None, text="second"), msg("a2", "a1", text="replayed"))
    with open_quiet(path, backend) as mgr:
        assert [e["id"] for e in mgr.get_entries()] == ["a1", "a2"]
        assert mgr["a1"]["message"]["content"] == "first"
        assert mgr.leaf_id == "a2" and mgr["a2"]["message"]["content"] == "hi"
        assert [(k, line, ids) for k, line, _, ids in report(mgr)] == [
            (IssueKind.DUPLICATE_ID, 4, ("a1",)),
            (IssueKind.DUPLICATE_ID, 5, ("a2",)),
        ]


def test_missing_and_invalid_parents(backend: str, tmp_path: Path) -> None:
    no_parent = msg("a3", None)
    del no_parent["parentId"]
    path = write(tmp_path, msg("a1", None), msg("a2", "gone"), no_parent, msg("a4", ""), msg("a5", 7), msg("a6", "a6"), msg("a7", "a9"), msg("a8", "a7"), msg("a9", "a1"))
    with open_quiet(path, backend) as mgr:
        assert [(k, line, ids) for k, line, _, ids in report(mgr)] == [
            (IssueKind.MISSING_PARENT, 3, ("a2", "gone")),
            (IssueKind.INVALID_PARENT, 4, ("a3",)),
            (IssueKind.INVALID_PARENT, 5, ("a4",)),
            (IssueKind.INVALID_PARENT, 6, ("a5",)),
            (IssueKind.CYCLE, 7, ("a6",)),
        ]
        # a6 is its own parent: a root (as in Pi), reported as a cycle of one.
        # a7 names a later entry: linked.
        roots = [n.entry["id"] for n in mgr.get_tree()]
        assert roots == ["a1", "a2", "a3", "a4", "a5", "a6"]
        assert [e["id"] for e in mgr.get_branch("a8")] == ["a1", "a9", "a7", "a8"]
        assert [m["content"] for m in mgr.build_session_context("a2").messages] == ["hi"]


@pytest.mark.parametrize("size", [2, 3])
def test_cycles_are_broken_at_the_earliest_entry(size: int, backend: str, tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(size)]
    # c0 -> c{n-1} -> ... -> c1 -> c0: every parent is defined, the chain never ends.
    lines = [msg(ids[i], ids[i - 1] if i else ids[-1]) for i in range(size)]
    path = write(tmp_path, msg("r", None), *lines, msg("x", "c1"))
    with open_quiet(path, backend) as mgr:
        rep = report(mgr)
        assert [(k, line, i) for k, line, _, i in rep] == [(IssueKind.CYCLE, 3, tuple(ids))]
        assert rep[0][2] == len(path.read_bytes().split(b"\n")[0]) + 1 + len(json.dumps(msg("r", None), separators=(",", ":"))) + 1
        tree = mgr.get_tree()
        assert [n.entry["id"] for n in tree] == ["r", "c0"]
        seen = []
        stack = list(tree)
        while stack:
            n = stack.pop()
            seen.append(n.entry["id"])
            stack.extend(n.children)
        assert sorted(seen) == sorted(["r", "x", *ids])  # every entry once
        assert [e["id"] for e in mgr.get_branch("x")][0] == "c0"
        assert len(mgr.build_session_context("x").messages) == len(mgr.get_branch("x"))


def test_two_cycles_on_one_glued_line_are_reported_in_entry_order(backend: str, tmp_path: Path) -> None:
    """Found by the persisted-index state machine: x's walk reaches the cycle {a, b}
    before the walk from c finds {c, d}, yet c comes first on their shared line."""
    glued = (json.dumps(msg("c", "d"), separators=(",", ":")) + json.dumps(msg("a", "b"), separators=(",", ":"))).encode()
    path = write(tmp_path, msg("x", "a"), glued + b"\n", msg("b", "a"), msg("d", "c"))
    with open_quiet(path, backend) as mgr:
        assert [(k, line, i) for k, line, _, i in report(mgr) if k == IssueKind.CYCLE] == [
            (IssueKind.CYCLE, 3, ("c", "d")),
            (IssueKind.CYCLE, 3, ("a", "b")),
        ]


def test_compaction_off_path_unknown_type_not_object_extra_header_nan(backend: str, tmp_path: Path) -> None:
    comp = {"type": "compaction", "id": "k1", "parentId": "a2", "timestamp": "2026-01-01T00:00:03.000Z", "summary": "S", "firstKeptEntryId": "b1", "tokensBefore": 1}
    path = write(
        tmp_path,
        msg("a1", None),
        msg("b1", "a1"),
        msg("a2", "a1", "assistant"),
        comp,
        {"type": "future", "id": "f1", "parentId": "k1", "timestamp": "2026-01-01T00:00:04.000Z"},
        b"[1,2]\n",
        b"42\n",
        json.dumps(HEADER).encode() + b"\n",
        b'{"type":"message","id":"n1","parentId":"f1","timestamp":"t","x":NaN}\n',
        b'{"type":"message","id":"n2","parentId":"f1","timestamp":"t","x":-Infinity}\n',
        {"type": "message", "parentId": "f1"},
        {"type": "message", "id": "", "parentId": "f1"},
        msg("a3", "f1"),
    )
    with open_quiet(path, backend) as mgr:
        assert [(k, line, ids) for k, line, _, ids in report(mgr)] == [
            (IssueKind.FIRST_KEPT_OFF_PATH, 5, ("k1", "b1")),
            (IssueKind.UNKNOWN_TYPE, 6, ("f1",)),
            (IssueKind.NOT_AN_OBJECT, 7, ()),
            (IssueKind.NOT_AN_OBJECT, 8, ()),
            (IssueKind.EXTRA_HEADER, 9, ()),
            (IssueKind.INVALID_JSON, 10, ()),
            (IssueKind.INVALID_JSON, 11, ()),
            (IssueKind.MISSING_ID, 12, ()),
            (IssueKind.MISSING_ID, 13, ()),
        ]
        assert [e["id"] for e in mgr.get_entries()] == ["a1", "b1", "a2", "k1", "f1", "a3"]
        # Off-path firstKept: only the summary, then what follows the compaction.
        assert [m["role"] for m in mgr.build_session_context().messages] == ["compactionSummary", "user"]
        assert mgr.get_header()["id"] == "s-1"


def test_invalid_utf8_replaced_and_reported(backend: str, tmp_path: Path) -> None:
    bad = b'{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"a\xff\xc3(b","timestamp":1}}\n'
    path = write(tmp_path, bad)
    with open_quiet(path, backend) as mgr:
        assert report(mgr) == [(IssueKind.INVALID_UTF8, 2, len(json.dumps(HEADER, separators=(",", ":"))) + 1, ())]
        assert mgr["u1"]["message"]["content"] == "a\ufffd\ufffd(b"


def test_entries_equal_json_loads_including_big_ints_and_lone_surrogates(backend: str, tmp_path: Path) -> None:
    raw = (
        b'{"type":"custom","customType":"x","data":{"big":123456789012345678901234567890,"s":"\\ud83d end","lo":"\\udc00",'
        b'"e":1e400,"f":1.0,"neg":-0},"id":"c1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}\n'
    )
    path = write(tmp_path, raw)
    with open_quiet(path, backend) as mgr:
        assert mgr["c1"] == json.loads(raw)
        assert mgr.load_report == []
        # Written back as the same escapes: copying keeps the bytes, encoding gives \udxxx.
        mgr.append_message({"role": "assistant", "content": [{"type": "text", "text": "\ud83d"}], "timestamp": 1})
        mgr.append_custom_entry("y", {"s": "\ud83d end", "lo": "\udc00"})
        new_file = mgr.create_branched_session(mgr.leaf_id)
    data = Path(new_file).read_bytes()  # type: ignore[arg-type]
    assert raw.rstrip(b"\n") in data.split(b"\n")
    assert b'"text":"\\ud83d"' in data
    assert b'{"s":"\\ud83d end","lo":"\\udc00"}' in data


def test_huge_line(backend: str, tmp_path: Path) -> None:
    big = "x\u2028y" * (50 * 1024 * 1024 // 5)
    line = json.dumps(msg("h1", "a1", "user", big), separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    path = write(tmp_path, msg("a1", None), line, msg("a2", "h1"))
    with open_quiet(path, backend) as mgr:
        assert len(mgr) == 3 and mgr.load_report == []
        assert mgr["h1"]["message"]["content"] == big
        assert [m["role"] for m in mgr.build_session_context().messages] == ["user", "user", "user"]


def test_deep_chain(backend: str, tmp_path: Path) -> None:
    n = 100_000
    parts = [json.dumps(HEADER, separators=(",", ":")).encode()]
    prev = "null"
    for i in range(n):
        parts.append(
            b'{"type":"message","id":"%08x","parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"m","timestamp":1}}'
            % (i, prev.encode())
        )
        prev = '"%08x"' % i
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join(parts) + b"\n")
    with open_quiet(path, backend) as mgr:
        assert mgr.load_report == []
        assert len(mgr.get_branch()) == n
        assert len(mgr.build_session_context().messages) == n
        tree = mgr.get_tree()
        depth, node = 1, tree[0]
        while node.children:
            node = node.children[0]
            depth += 1
        assert depth == n
        assert tree[0] == tree[0]  # structural equality without recursion
        assert sys.getrecursionlimit() < n


def test_refresh_reads_only_complete_new_lines(backend: str, tmp_path: Path) -> None:
    path = write(tmp_path, msg("a1", None))
    with open_quiet(path, backend) as mgr:
        with open(path, "ab") as f:
            f.write(json.dumps(msg("a2", "a1"), separators=(",", ":")).encode() + b"\n")
            f.write(b'{"type":"message","id":"a3","parentId":"a2"')  # half written
        assert mgr.refresh() == 1
        assert mgr.leaf_id == "a2"
        assert [k for k, *_ in report(mgr)] == [IssueKind.TRUNCATED]
        with open(path, "ab") as f:
            f.write(b',"timestamp":"t","message":{"role":"user","content":"c","timestamp":1}}\n')
        assert mgr.refresh() == 1
        assert mgr.leaf_id == "a3" and mgr.load_report == []
        assert mgr.refresh() == 0


def test_truncated_or_replaced_file_is_stale(backend: str, tmp_path: Path) -> None:
    from sessiontree import StaleSessionError

    path = write(tmp_path, msg("a1", None), msg("a2", "a1"))
    with open_quiet(path, backend) as mgr:
        data = path.read_bytes()
        with open(path, "r+b") as f:
            f.truncate(len(data) - 10)
        with pytest.raises(StaleSessionError):
            mgr.get_entries()
    path.write_bytes(data)
    with open_quiet(path, backend) as mgr:
        tmp = tmp_path / "other.jsonl"
        tmp.write_bytes(data)
        os.replace(tmp, path)
        with pytest.raises(StaleSessionError):
            mgr.build_session_context()


def test_reading_leaves_files_byte_identical(backend: str, tmp_path: Path) -> None:
    for src in sorted(CASES.glob("F*.jsonl")):
        path = tmp_path / src.name
        shutil.copyfile(src, path)
        st = os.stat(path)
        try:
            with open_quiet(path, backend) as mgr:
                mgr.get_tree()
                mgr.build_session_context()
                for e in list(mgr):
                    mgr.get_branch(e["id"])
        except InvalidSessionError:
            pass
        SessionManager.list("/x", str(tmp_path))
        assert path.read_bytes() == src.read_bytes()
        assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in CASES.glob("F*.jsonl"))


def test_errors_for_unknown_ids(backend: str) -> None:
    with SessionManager.in_memory("/p", backend=backend) as mgr:
        a = mgr.append_message({"role": "user", "content": "x", "timestamp": 1})
        for call in (lambda: mgr.branch("zz"), lambda: mgr.append_label_change("zz", "l"), lambda: mgr.branch_with_summary("zz", "s"), lambda: mgr.create_branched_session("zz"), lambda: mgr["zz"]):
            with pytest.raises(EntryNotFoundError) as info:
                call()
            assert str(info.value) == "Entry zz not found"
            assert isinstance(info.value, KeyError)
        assert mgr.get_entry("zz") is None and "zz" not in mgr and mgr.get_children("zz") == []
        assert mgr.get_branch("zz") == [] and mgr.get_label("zz") is None
        assert list(mgr) == [mgr[a]]


def test_set_session_file_to_invalid_file_changes_nothing(backend: str, tmp_path: Path) -> None:
    good = write(tmp_path, msg("a1", None), name="good.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"garbage\n" + json.dumps(msg("a1", None)).encode() + b"\n")
    with open_quiet(good, backend) as mgr:
        with pytest.raises(InvalidSessionError):
            mgr.set_session_file(str(bad))
        assert mgr.session_file == str(good) and mgr.leaf_id == "a1" and len(mgr) == 1
        mgr.set_session_file(str(tmp_path / "fresh.jsonl"))
        assert len(mgr) == 0 and mgr.session_file == str(tmp_path / "fresh.jsonl")
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl", "good.jsonl"]
