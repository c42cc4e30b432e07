"""Files in agent-core's harness format (issue 29, item 1): the ``leaf`` and
``active_tools_change`` entry types, loader rule 13 (the leaf after a ``leaf`` entry is
its ``targetId``) on open, through ``refresh()``, in the catalog and the commands, the
context's ``active_tool_names``, the header's ``metadata``, and the writers of both leaf
semantics. Every file here is written by the test (the shapes are agent-core's,
``packages/agent/src/harness/session/jsonl-storage.ts``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import JsonlSessionStorage, LoadReportWarning, SessionManager
from sessiontree import catalog

HEADER = {"type": "session", "version": 3, "id": "sess_h", "timestamp": "2026-07-03T00:00:00.000Z",
          "cwd": "/workspace", "parentSession": "/parent/session.jsonl", "metadata": {"host": "sdk", "n": 1}}


def e(etype: str, eid: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {"type": etype, "id": eid, "parentId": parent, "timestamp": f"2026-07-03T00:00:{int(eid[-2:]):02d}.000Z",
            **fields}


def user(eid: str, parent: str | None, text: str) -> dict[str, Any]:
    return e("message", eid, parent, message={"role": "user", "content": [{"type": "text", "text": text}],
                                              "timestamp": 1})


def assistant(eid: str, parent: str | None, text: str) -> dict[str, Any]:
    return e("message", eid, parent, message={
        "role": "assistant", "content": [{"type": "text", "text": text}], "provider": "openai", "model": "m",
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.25}},
        "stopReason": "stop", "timestamp": 2})


def write(path: Path, entries: list[dict[str, Any]], header: dict[str, Any] = HEADER) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [header, *entries]), "utf-8")
    return path


def opened(path: Path, backend: str, **kw: Any) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        return SessionManager.open(str(path), backend=backend, **kw)


# The issue's file: the leaf moves back to the first entry; a coding-agent reader took the
# leaf entry itself as the leaf (leaf 00000004, two context messages).
ISSUE = [
    user("00000001", None, "Hello"),
    assistant("00000002", "00000001", "Hi"),
    e("label", "00000003", "00000002", targetId="00000001", label="start"),
    e("leaf", "00000004", "00000003", targetId="00000001"),
]


def test_the_leaf_of_a_harness_file_is_the_last_moves_target(tmp_path: Path, backend: str) -> None:
    p = write(tmp_path / "s.jsonl", ISSUE)
    with opened(p, backend) as sm:
        assert sm.leaf_id == "00000001"
        assert sm.load_report == []
        ctx = sm.build_session_context()
        assert [m["content"][0]["text"] for m in ctx.messages] == ["Hello"]
        assert sm.get_header()["metadata"] == {"host": "sdk", "n": 1}
        assert sm.get_label("00000001") == "start"
        # The leaf entry is a tree node: a child of the leaf before the move.
        assert sm.parent_of("00000004") == "00000003"
        assert sm.get_entry_type("00000004") == "leaf"
        meta = sm.storage.get_metadata()
        assert (meta.id, meta.cwd, meta.parent_session_path, meta.metadata) == (
            "sess_h", "/workspace", "/parent/session.jsonl", {"host": "sdk", "n": 1})
        # The next entry continues from the target, not from the leaf entry.
        new = sm.append_message({"role": "user", "content": "again", "timestamp": 3})
        assert sm.parent_of(new) == "00000001"
    with opened(p, backend) as sm:
        assert sm.leaf_id == new


def test_a_move_to_null_and_moves_that_move_nothing(tmp_path: Path, backend: str) -> None:
    base = [user("00000001", None, "a"), user("00000002", "00000001", "b")]
    p = write(tmp_path / "n.jsonl", [*base, e("leaf", "00000003", "00000002", targetId=None)])
    with opened(p, backend) as sm:
        assert sm.leaf_id is None
        assert sm.build_session_context().messages == []
        assert sm.load_report == []
    bad = [
        e("leaf", "00000003", "00000002", targetId="00000009"),  # a later entry
        e("leaf", "00000004", "00000002", targetId="00000004"),  # itself
        e("leaf", "00000005", "00000002", targetId=7),
        e("leaf", "00000006", "00000002"),  # no targetId
        user("00000009", "00000001", "late"),
        e("leaf", "00000010", "00000009", targetId="nowhere"),
    ]
    p = write(tmp_path / "bad.jsonl", [*base, *bad])
    with opened(p, backend) as sm:
        # Every bad move is reported and moves nothing: the leaf is the last good one's.
        assert sm.leaf_id == "00000009"
        report = [(i.kind, i.line, i.ids) for i in sm.load_report]
        assert report == [
            ("invalid_leaf_target", 4, ("00000003", "00000009")),
            ("invalid_leaf_target", 5, ("00000004", "00000004")),
            ("invalid_leaf_target", 6, ("00000005",)),
            ("invalid_leaf_target", 7, ("00000006",)),
            ("invalid_leaf_target", 9, ("00000010", "nowhere")),
        ]


def test_refresh_follows_a_leaf_move_another_process_appends(tmp_path: Path, backend: str) -> None:
    p = write(tmp_path / "r.jsonl", [user("00000001", None, "a"), assistant("00000002", "00000001", "b")])
    with opened(p, backend) as sm:
        assert sm.leaf_id == "00000002"
        with open(p, "a", encoding="utf-8") as f:
            f.write(json.dumps(e("leaf", "00000003", "00000002", targetId="00000001")) + "\n")
        assert sm.refresh() == 1
        assert sm.leaf_id == "00000001"  # the viewer was at the file's leaf: it follows
        sm.branch("00000002")
        with open(p, "a", encoding="utf-8") as f:
            f.write(json.dumps(e("leaf", "00000004", "00000003", targetId=None)) + "\n")
        assert sm.refresh() == 1
        assert sm.leaf_id == "00000002"  # moved away by the caller: it stays


def test_active_tools_are_context_state(tmp_path: Path, backend: str) -> None:
    p = write(tmp_path / "t.jsonl", [
        user("00000001", None, "a"),
        e("active_tools_change", "00000002", "00000001", activeToolNames=["read", "edit"]),
        assistant("00000003", "00000002", "b"),
        e("active_tools_change", "00000004", "00000001", activeToolNames=["bash"]),
    ])
    with opened(p, backend) as sm:
        assert sm.build_session_context().active_tool_names == ["bash"]
        assert sm.build_session_context("00000003").active_tool_names == ["read", "edit"]
        assert sm.build_session_projection("00000003").active_tool_names == ["read", "edit"]
        assert sm.build_session_context("00000001").active_tool_names is None
        # A copy: changing it leaves the session's answer as it is.
        sm.build_session_context("00000003").active_tool_names.append("x")  # type: ignore[union-attr]
        assert sm.build_session_context("00000003").active_tool_names == ["read", "edit"]
        new = sm.append_active_tools_change(["grep"])
        assert sm.get_entry(new)["activeToolNames"] == ["grep"]
        assert sm.build_session_context().active_tool_names == ["grep"]
        with pytest.raises(TypeError):
            sm.append_active_tools_change(["ok", 5])  # type: ignore[list-item]


def test_the_two_leaf_semantics_of_the_writer(tmp_path: Path, backend: str) -> None:
    for leaf_entries in (False, True):
        folder = tmp_path / f"w{leaf_entries}"
        sm = SessionManager.create("/w", str(folder), backend=backend, leaf_entries=leaf_entries)
        a = sm.append_message({"role": "user", "content": "a", "timestamp": 1})
        sm.append_message({"role": "assistant", "content": [], "timestamp": 2})
        sm.branch(a)
        path = sm.session_file
        types = [x["type"] for x in sm.get_entries()]
        sm.close()
        assert types == (["message", "message", "leaf"] if leaf_entries else ["message", "message"])
        with opened(Path(path), backend) as again:  # type: ignore[arg-type]
            # agent-core's semantics keep the leaf across a reopen; the coding agent's do not.
            assert again.leaf_id == (a if leaf_entries else again.get_entries()[-1]["id"])
        line = json.loads(Path(path).read_text().splitlines()[-1])  # type: ignore[arg-type]
        if leaf_entries:
            assert list(line) == ["type", "id", "parentId", "timestamp", "targetId"]


def test_the_storage_interface_over_a_file(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "agent-core.jsonl"
    st = JsonlSessionStorage.create(path, cwd="/w", session_id="s", first_write="now", leaf_entries=True,
                                    metadata={"k": "v"}, backend=backend)
    assert json.loads(path.read_text())["metadata"] == {"k": "v"}
    ids = []
    for text in ("a", "b"):
        eid = st.create_entry_id()
        st.append_entry({"type": "message", "id": eid, "parentId": st.get_leaf_id(), "timestamp": "2026-01-01T00:00:00.000Z",
                         "message": {"role": "user", "content": text, "timestamp": 1}})
        ids.append(eid)
    st.append_entry({"type": "label", "id": "lab", "parentId": ids[1], "timestamp": "2026-01-01T00:00:00.000Z",
                     "targetId": ids[0], "label": "  start  "})
    st.set_leaf_id(ids[0])
    assert st.get_label(ids[0]) == "start"  # agent-core trims labels
    assert [x["id"] for x in st.get_path_to_root(st.get_leaf_id())] == [ids[0]]
    assert [x["type"] for x in st.find_entries("leaf")] == ["leaf"]
    st.close()
    again = JsonlSessionStorage.open(path, backend=backend)
    assert again.get_leaf_id() == ids[0]
    assert [x["id"] for x in again.get_entries()][:2] == ids
    again.close()


# --------------------------------------------------------------- the catalog, the CLI
def _moved_session(folder: Path) -> Path:
    """A session whose leaf moved back off its last branch (a long answer left behind)."""
    folder.mkdir(parents=True, exist_ok=True)
    return write(folder / "2026-07-03T00-00-00-000Z_sess_h.jsonl", [
        user("00000001", None, "plan the refactor"),
        assistant("00000002", "00000001", "kept answer"),
        user("00000003", "00000002", "try the zebra approach"),
        assistant("00000004", "00000003", "zebra answer"),
        e("leaf", "00000005", "00000004", targetId="00000002"),
    ])


def test_catalog_search_and_usage_know_the_current_path(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--w--"
    _moved_session(folder)
    for way in ("catalog", "files", "index"):  # the index: its hits' path bits from the catalog's records
        kw: dict[str, Any] = {"no_cache": True} if way == "files" else {"catalog": str(tmp_path / "c.sqlite3")}
        if way == "index":
            catalog.index([str(folder)], **kw)
        hits = catalog.search("zebra", [str(folder)], **kw).hits
        assert {(h.entry_id, h.on_path) for h in hits} == {("00000003", False), ("00000004", False)}
        hits = catalog.search("kept", [str(folder)], **kw).hits
        assert {(h.entry_id, h.on_path) for h in hits} == {("00000002", True)}
        whole = catalog.usage("session", [str(folder)], **kw)
        active = catalog.usage("session", [str(folder)], active_path=True, **kw)
        assert whole.total.cost == pytest.approx(0.5) and active.total.cost == pytest.approx(0.25)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=str(cwd / "home"), XDG_CACHE_HOME=str(cwd / "cache"),
               SESSIONTREE_CATALOG=str(cwd / "cat.sqlite3"), COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def test_commands_on_a_harness_file(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "--w--"
    p = _moved_session(folder)
    r = _cli("check", str(p), cwd=tmp_path)
    assert r.returncode == 0 and "clean" in r.stdout, r.stdout + r.stderr
    r = _cli("tree", str(p), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    leaf_line = next(line for line in r.stdout.splitlines() if "← leaf" in line)
    assert "00000002" in leaf_line
    assert "→ 00000002" in r.stdout  # the leaf entry drawn as the move it is
    r = _cli("context", str(p), "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["leafId"] == "00000002"
    r = _cli("export", str(p), "--format", "html", "--out", str(tmp_path / "out.html"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "leaf moved → 00000002" in (tmp_path / "out.html").read_text()
    r = _cli("search", "zebra", str(folder), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _cli("usage", "session", str(folder), "--active-path", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
