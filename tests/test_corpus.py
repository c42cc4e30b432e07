"""The Pi conformance corpus (``../shared/corpus/pi-golden``), on both backends.

For every scenario: open the ``.jsonl`` and compare everything Pi's reading recorded in
``.expected.json``; replay every ``.ops.json`` through the API with Pi's recorded ids and
timestamps, in memory (contexts) and to disk (the written file, line for line, byte for
byte); migrate every ``migrated-*`` input and compare with ``.idfree.json``.

Only CONTRACT §5's differences are accounted for, each where it applies:
duplicate ids (first definition stands: Pi's lists are de-duplicated, its nested
``tree`` repeats nodes and is not compared), a header-less input (raises and is left
untouched), numbers (compared as JavaScript doubles: both sides go through
``JSON.stringify`` form, then every number becomes a float), ``convert_to_llm`` with
``merge_consecutive_user=False``, a compaction whose ``firstKeptEntryId`` is off the
path (the replay stops there), and the migration's ids (compared by position).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import (
    EntryNotFoundError,
    FirstKeptEntryError,
    InvalidSessionError,
    SessionManager,
    convert_to_llm,
)
from sessiontree._jsonl import encode_entry

from _shared import CORPUS, as_pi_099


def _scenarios() -> list[dict[str, Any]]:
    index = CORPUS / "index.json"
    if not index.is_file():
        return []
    return json.loads(index.read_text())["scenarios"]


SCENARIOS = _scenarios()
BY_KIND = {k: [s["name"] for s in SCENARIOS if s["kind"] == k] for k in {s["kind"] for s in SCENARIOS}}
OPENABLE = [s["name"] for s in SCENARIOS if s["kind"] != "migrated"]
REPLAYABLE = [s["name"] for s in SCENARIOS if s["kind"] in ("hand", "branched", "random")]
MIGRATED = BY_KIND.get("migrated", [])


# ------------------------------------------------------------------- helpers


def _num(v: Any) -> Any:
    """JSON value with every number as a float (how JavaScript holds it)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        return {k: _num(x) for k, x in v.items()}
    return [_num(x) for x in v]


def js(value: Any) -> Any:
    """Our value in the form Pi's JSON output has: JSON.stringify, parsed, numbers as doubles."""
    return _num(json.loads(encode_entry(value)))


def context_json(ctx: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"messages": ctx.messages}
    if ctx.thinking_level is not None:
        out["thinkingLevel"] = ctx.thinking_level
    out["model"] = ctx.model
    return out


def _dedupe(ids: list[str]) -> list[str]:
    seen: set[str] = set()
    return [i for i in ids if not (i in seen or seen.add(i))]  # type: ignore[func-returns-value]


def _tree_maps(roots: list[Any]) -> tuple[list[str], dict[str, list[str]], dict[str, str], int, list[Any]]:
    """(root ids, children ids per node, label timestamps, depth, nested tree) iteratively."""
    children: dict[str, list[str]] = {}
    label_ts: dict[str, str] = {}
    depth = 0
    nested: list[Any] = []
    stack = [(n, 1, nested) for n in reversed(roots)]
    while stack:
        node, level, sink = stack.pop()
        eid = node.entry["id"]
        depth = max(depth, level)
        children[eid] = [c.entry["id"] for c in node.children]
        if node.label_timestamp is not None:
            label_ts[eid] = node.label_timestamp
        item: dict[str, Any] = {"id": eid}
        if node.label is not None:
            item["label"] = node.label
        item["children"] = []
        sink.append(item)
        stack.extend((c, level + 1, item["children"]) for c in reversed(node.children))
    return [n.entry["id"] for n in roots], children, label_ts, depth, nested


# ------------------------------------------------------- 0.73.1 lines as Pi 0.99 writes

_CRLF = re.compile(r"[\r\n]+")
_JS_TRIM = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def name_as_pi_099(name: str | None) -> str | None:
    """Pi 0.99's appendSessionInfo: CR/LF runs become one space, then trim (CONTRACT §4, ``append_session_info``)."""
    if name is None:
        return None
    return _CRLF.sub(" ", name).strip(_JS_TRIM) or None


def lines_as_pi_099(name: str, lines: list[bytes], ops: dict[str, Any]) -> list[bytes]:
    """The lines of Pi 0.73.1's file as Pi 0.99 writes them (CONTRACT §5, its last paragraph):
    a session name with CR/LF runs replaced, and in a branched file each copied entry
    re-linked to the previous copied entry (labels dropped from the copied path, then
    re-created at the end: the ``newEntries`` of the op)."""
    out = []
    for raw in lines:
        e = json.loads(raw)
        if e.get("type") == "session_info" and isinstance(e.get("name"), str):
            fixed = name_as_pi_099(e["name"]) or ""
            if fixed != e["name"]:
                e["name"] = fixed
                raw = encode_entry(e)
        out.append(raw)
    branched = [op for op in ops["ops"] if op["op"] == "createBranchedSession" and op.get("newFile") == name]
    if branched:
        recreated = {n["id"] for n in branched[-1]["newEntries"]}
        previous = None
        for i in range(1, len(out)):
            e = json.loads(out[i])
            if e["id"] in recreated:
                break
            if e.get("parentId") != previous:
                e["parentId"] = previous
                out[i] = encode_entry(e)
            previous = e["id"]
    return out


def contexts_as_pi_099(name: str, exp: dict[str, Any], ops: dict[str, Any]) -> dict[str, Any]:
    """The contexts of a branched file as Pi 0.99 builds them: its copied path is the
    source's path without label entries, and labels contribute nothing, so the context
    at an entry is Pi's recorded context at that entry (or, for a re-created label, at
    the last copied entry) in the *source* session."""
    branched = [op for op in ops["ops"] if op["op"] == "createBranchedSession" and op.get("newFile") == name]
    if not branched or ops["ops"].index(branched[-1]) != len(ops["ops"]) - 1:
        return exp["contexts"]
    source = _load(branched[-1]["file"])["contexts"]
    recreated = {n["id"] for n in branched[-1]["newEntries"]}
    copied = [i for i in exp["entryIds"] if i not in recreated]
    out = {}
    for key, want in exp["contexts"].items():
        at = copied[-1] if key == "@leaf" or key in recreated else key
        out[key] = source.get(at, want)
    return out


def _load(name: str) -> dict[str, Any]:
    return json.loads((CORPUS / f"{name}.expected.json").read_text())


def _open(path: Path | str, backend: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SessionManager.open(str(path), backend=backend)


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / f"{name}.jsonl"
    shutil.copyfile(CORPUS / f"{name}.jsonl", dst)
    return dst


def compare_reading(mgr: SessionManager, exp: dict[str, Any]) -> None:
    """Everything ``.expected.json`` records, against an opened manager."""
    dups = len(set(exp["entryIds"])) != len(exp["entryIds"])
    ids = [e["id"] for e in mgr.get_entries()]
    assert ids == _dedupe(exp["entryIds"])
    assert mgr.session_id == exp["sessionId"]
    assert js(mgr.get_header()) == _num(exp["header"])
    assert mgr.leaf_id == (ids[-1] if ids else None)
    if not dups:
        assert mgr.leaf_id == exp["leafId"]
    assert mgr.get_session_name() == exp["sessionName"]
    labels = {i: mgr.get_label(i) for i in ids if mgr.get_label(i) is not None}
    assert labels == exp["labels"]
    for eid in set(ids):
        assert [c["id"] for c in mgr.get_children(eid)] == exp["children"][eid], eid
    roots, tchildren, label_ts, depth, nested = _tree_maps(mgr.get_tree())
    assert label_ts == exp["labelTimestamps"]
    if dups:
        assert roots == _dedupe(exp["treeRoots"])
        assert tchildren == {k: _dedupe(v) for k, v in exp["treeChildren"].items()}
    else:
        assert roots == exp["treeRoots"]
        assert tchildren == exp["treeChildren"]
        assert depth == exp["treeDepth"]
        if exp["tree"] is not None:
            assert nested == exp["tree"]
    for eid, branch in exp["branches"].items():
        assert [e["id"] for e in mgr.get_branch(eid)] == branch, eid
    for key, want in exp["contexts"].items():
        ctx = mgr.build_session_context() if key == "@leaf" else mgr.build_session_context(key)
        assert js(context_json(ctx)) == _num(as_pi_099(want)), key
        # convertToLlm of Pi's own context; Pi 0.87+ passes system messages through,
        # 0.73.1 dropped them.
        llm = convert_to_llm(want["messages"], merge_consecutive_user=False)
        assert js([m for m in llm if m.get("role") != "system"]) == _num(exp["llm"][key]), key
        assert convert_to_llm(ctx.messages, merge_consecutive_user=False) == convert_to_llm(
            as_pi_099(context_json(ctx))["messages"], merge_consecutive_user=False
        )


# ------------------------------------------------------------------- reading


@pytest.mark.parametrize("name", OPENABLE)
def test_open_matches_pi(name: str, backend: str, corpus_dir: Path, tmp_path: Path) -> None:
    exp = _load(name)
    path = _copy(name, tmp_path)
    before = path.read_bytes()
    with _open(path, backend) as mgr:
        assert mgr.backend == backend
        compare_reading(mgr, exp)
    assert path.read_bytes() == before  # reading never writes


@pytest.mark.parametrize("name", [n for n in OPENABLE if _load(n).get("rewrittenOnOpen")] if SCENARIOS else [])
def test_headerless_input_raises_and_is_untouched(name: str, backend: str, tmp_path: Path) -> None:
    """CONTRACT §5 point 2: Pi overwrote this input with a fresh header; we raise and keep it."""
    exp = _load(name)
    src = CORPUS / exp["inputFile"]
    path = tmp_path / "input.jsonl"
    shutil.copyfile(src, path)
    with pytest.raises(InvalidSessionError) as info:
        SessionManager.open(str(path), backend=backend)
    assert info.value.line == 1 and info.value.offset == 0
    assert path.read_bytes() == src.read_bytes()


def test_corpus_present(corpus_dir: Path) -> None:
    assert len(SCENARIOS) == 55
    assert set(BY_KIND) == {"hand", "branched", "random", "migrated", "edge"}


# ------------------------------------------------------------------ migration


@pytest.mark.parametrize("name", MIGRATED)
def test_migration_matches_idfree(name: str, backend: str, tmp_path: Path) -> None:
    exp = _load(name)
    idfree = json.loads((CORPUS / f"{name}.idfree.json").read_text())
    path = tmp_path / "old.jsonl"
    shutil.copyfile(CORPUS / exp["inputFile"], path)
    before = path.read_bytes()
    with _open(path, backend) as mgr:
        ids = [e["id"] for e in mgr.get_entries()]
        assert len(ids) == idfree["entryCount"] == exp["entryCount"]
        assert mgr.leaf_id == ids[idfree["leafIndex"]]
        assert mgr.get_header()["version"] == 3
        assert mgr.session_id == exp["sessionId"]
        assert all(len(i) == 8 and int(i, 16) >= 0 and i == i.lower() for i in ids)
        for key, want in idfree["contexts"].items():
            ctx = mgr.build_session_context() if key == "@leaf" else mgr.build_session_context(ids[int(key)])
            assert js(context_json(ctx)) == _num(want), key
        # Same shape as Pi's rewrite: positions of parents and firstKeptEntryIds.
        pi = [json.loads(line) for line in (CORPUS / f"{name}.jsonl").read_bytes().splitlines()[1:]]
        pos_pi = {e["id"]: i for i, e in enumerate(pi)}
        pos_us = {e: i for i, e in enumerate(ids)}
        for ours, theirs in zip(mgr.get_entries(), pi):
            assert list(ours) == list(theirs)  # same keys in the same order
            for k in ("parentId", "firstKeptEntryId"):
                if k in theirs and theirs[k] is not None:
                    assert pos_us.get(ours[k]) == pos_pi.get(theirs[k]), k
    assert path.read_bytes() == before  # migrated in memory only
    # Deterministic ids: a second load gives the same ones.
    with _open(path, backend) as again:
        assert [e["id"] for e in again.get_entries()] == ids


# --------------------------------------------------------------------- replay


def _ops(name: str) -> dict[str, Any]:
    return json.loads((CORPUS / f"{name}.ops.json").read_text())


class _Replay(SessionManager):
    """Injects Pi's recorded ids, timestamps and session ids (the test hook)."""

    queue_ids: list[str] = []
    queue_times: list[str] = []
    queue_sessions: list[str] = []

    def _new_id(self, taken: Any) -> str:
        new = self.queue_ids.pop(0)
        assert new not in taken
        return new

    def _now(self) -> str:
        return self.queue_times.pop(0)

    def _new_session_id(self) -> str:
        return self.queue_sessions.pop(0)


def replay(ops: dict[str, Any], backend: str, session_dir: str | None) -> tuple[SessionManager, bool, dict[str, str]]:
    """Run the ops; returns (manager, stopped at a refused compaction, parentSession
    written for each branched scenario file)."""
    cls = type("Replay", (_Replay,), {"queue_ids": [], "queue_times": [], "queue_sessions": []})
    first = ops["ops"][0]
    assert first["op"] == "create"
    cls.queue_sessions.append(first["result"]["sessionId"])
    cls.queue_times.append(first["result"]["timestamp"])
    if session_dir is None:
        mgr: SessionManager = cls.in_memory(first["args"]["cwd"], backend=backend)
    else:
        mgr = cls.create(first["args"]["cwd"], session_dir, backend=backend)
        assert os.path.basename(mgr.session_file) == first["result"]["fileName"]  # type: ignore[arg-type]
    parents: dict[str, str] = {}
    assistant_seen = False
    for op in ops["ops"][1:]:
        name, args = op["op"], op.get("args", {})
        if "timestamp" in op:
            cls.queue_ids.append(op["result"])
            cls.queue_times.append(op["timestamp"])
        if "error" in op:
            with pytest.raises(EntryNotFoundError) as info:
                _call(mgr, name, args)
            assert str(info.value) == op["error"]
            continue
        if name == "createBranchedSession":
            cls.queue_sessions.append(op["result"]["sessionId"])
            cls.queue_times.append(op["result"]["timestamp"])
            cls.queue_ids.extend(e["id"] for e in op["newEntries"])
        if name == "appendMessage" and args["message"].get("role") == "assistant":
            assistant_seen = True
        source_file = mgr.session_file
        try:
            result = _call(mgr, name, args)
        except FirstKeptEntryError:
            assert name == "appendCompaction"
            ids_on_path = {e["id"] for e in mgr.get_branch()}
            assert args["firstKeptEntryId"] not in ids_on_path
            cls.queue_ids.clear()
            cls.queue_times.clear()
            return mgr, True, parents
        if "timestamp" in op:
            assert result == op["result"]
        if name == "createBranchedSession":
            parents[op["newFile"]] = source_file or ""
            if session_dir is not None:
                assert os.path.basename(result) == op["result"]["fileName"]
                assert os.path.exists(result) == op["result"]["fileWrittenImmediately"]
                assistant_seen = op["result"]["fileWrittenImmediately"]
            written = {e["id"]: e["timestamp"] for e in mgr.get_entries() if e["id"] in {n["id"] for n in op["newEntries"]}}
            assert written == {n["id"]: n["timestamp"] for n in op["newEntries"]}
        if "leafAfter" in op:
            assert mgr.leaf_id == op["leafAfter"], name
        else:
            assert mgr.leaf_id == op["result"]
        if session_dir is not None and not assistant_seen:
            assert not os.path.exists(mgr.session_file)  # nothing before the first assistant message
    assert not cls.queue_ids and not cls.queue_sessions
    return mgr, False, parents


def _call(mgr: SessionManager, name: str, a: dict[str, Any]) -> Any:
    from sessiontree import NULL

    def g(key: str) -> Any:
        # Pi's optional arguments: absent is undefined (None here), a recorded null is NULL.
        return (NULL if a[key] is None else a[key]) if key in a else None

    if name == "appendMessage":
        return mgr.append_message(a["message"])
    if name == "appendThinkingLevelChange":
        return mgr.append_thinking_level_change(a["thinkingLevel"])
    if name == "appendModelChange":
        return mgr.append_model_change(a["provider"], a["modelId"])
    if name == "appendCompaction":
        return mgr.append_compaction(
            a["summary"], a["firstKeptEntryId"], a["tokensBefore"], g("details"), g("fromHook")
        )
    if name == "appendCustomEntry":
        return mgr.append_custom_entry(a["customType"], g("data"))
    if name == "appendSessionInfo":
        return mgr.append_session_info(a["name"])
    if name == "appendCustomMessageEntry":
        return mgr.append_custom_message_entry(a["customType"], a["content"], a["display"], g("details"))
    if name == "appendLabelChange":
        return mgr.append_label_change(a["targetId"], a.get("label"))
    if name == "branch":
        return mgr.branch(a["branchFromId"])
    if name == "resetLeaf":
        return mgr.reset_leaf()
    if name == "branchWithSummary":
        return mgr.branch_with_summary(a["branchFromId"], a["summary"], g("details"), g("fromHook"))
    if name == "createBranchedSession":
        return mgr.create_branched_session(a["leafId"])
    raise AssertionError(f"unknown op {name}")


@pytest.mark.parametrize("name", REPLAYABLE)
def test_replay_in_memory_contexts(name: str, backend: str) -> None:
    exp = _load(name)
    ops = _ops(name)
    mgr, stopped, _ = replay(ops, backend, None)
    ids = {e["id"] for e in mgr.get_entries()}
    if not stopped:
        assert [e["id"] for e in mgr.get_entries()] == exp["entryIds"]
        assert mgr.get_session_name() == name_as_pi_099(exp["sessionName"])
    for key, want in contexts_as_pi_099(name, exp, ops).items():
        if key == "@leaf":
            if stopped:
                continue
            ctx = mgr.build_session_context(exp["leafId"])
        elif key in ids:
            ctx = mgr.build_session_context(key)
        else:
            assert stopped
            continue
        assert js(context_json(ctx)) == _num(want), key


@pytest.mark.parametrize("name", REPLAYABLE)
def test_replay_to_disk_is_byte_identical(name: str, backend: str, tmp_path: Path) -> None:
    ops = _ops(name)
    mgr, stopped, parents = replay(ops, backend, str(tmp_path))
    target = ops.get("scenarioFile", name)
    path = mgr.session_file
    mgr.close()
    pi_lines = (CORPUS / f"{name}.jsonl").read_bytes().split(b"\n")
    assert pi_lines[-1] == b""
    ours = Path(path).read_bytes().split(b"\n") if os.path.exists(path) else [b""]  # type: ignore[arg-type]
    assert ours[-1] == b""
    ours, pi_lines = ours[:-1], lines_as_pi_099(target, pi_lines[:-1], ops)
    if not stopped:
        assert len(ours) == len(pi_lines)
    else:
        assert len(ours) <= len(pi_lines)
    for i, (a, b) in enumerate(zip(ours, pi_lines)):
        if i == 0 and target in parents:
            # A branched file's header: Pi's parentSession is its own absolute path.
            ha, hb = json.loads(a), json.loads(b)
            assert list(ha) == list(hb)
            assert ha.pop("parentSession") == parents[target]
            hb.pop("parentSession")
            assert ha == hb
            continue
        assert a == b, f"line {i + 1} differs"


def test_replay_refuses_off_path_compaction(backend: str, corpus_dir: Path) -> None:
    """CONTRACT §5 point 4: the corpus's hand-compaction appends off-path compactions; we refuse."""
    mgr, stopped, _ = replay(_ops("hand-compaction"), backend, None)
    assert stopped
