"""Version 4 files of agent-core's harness (issue 29, item 3), read-only: the tree per
lane, the lane's leaf, names and labels from facts, the context with ``retainedTail``,
``info``'s records by kind. The files are written here in the shapes of upstream's codec
(``packages/agent/src/harness/session/jsonl.ts``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree import InvalidSessionError
from sessiontree.v4 import is_v4, read_v4


class Writer:
    """Lines as the codec writes them: one shared seq, entries chained to their lane."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = [{"kind": "header", "version": 4, "id": "s4", "createdAt": 1_700_000_000_000,
                                             "cwd": "/w"}]
        self.seq = 0
        self.lanes: dict[str, str | None] = {"main": None}

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def entry(self, eid: str, etype: str, lane: str = "main", **fields: Any) -> str:
        seq = self._next()
        self.lines.append({"kind": "entry", "lane": lane, "type": etype, "id": eid, **fields,
                           "parentId": self.lanes[lane], "seq": seq, "timestamp": 1_700_000_000_000 + seq})
        self.lanes[lane] = eid
        return eid

    def lane(self, lane: str, leaf: str | None) -> None:
        self.lines.append({"kind": "lane", "seq": self._next(), "lane": lane, "leafId": leaf})
        self.lanes[lane] = leaf

    def record(self, rid: str, rtype: str, lane: str = "main", **fields: Any) -> None:
        seq = self._next()
        self.lines.append({"kind": "record", "id": rid, "lane": lane, "type": rtype, **fields, "seq": seq,
                           "timestamp": 1_700_000_000_000 + seq})

    def fact(self, **fields: Any) -> None:
        self.lines.append({"kind": "fact", "seq": self._next(), **fields})

    def write(self, path: Path, tail: bytes = b"") -> Path:
        path.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in self.lines) + tail)
        return path


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def sample(tmp_path: Path) -> Path:
    w = Writer()
    u1 = w.entry("u1", "message", message=user("first"))
    w.entry("t1", "active_tools_change", activeToolNames=["read"])
    w.entry("a1", "message", message={"role": "assistant", "provider": "p", "model": "m", "stopReason": "toolUse",
                                      "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}]})
    w.entry("x1", "custom", customType="note")
    w.entry("r1", "message", message={"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": []})
    w.record("op1", "operation_started", sourceLeafId=u1, intent={"kind": "run"})
    w.record("us1", "usage", cause="adjustment", usage={"input": 1})
    w.entry("k1", "compaction", summary="earlier", tokensBefore=900, retainedTail=[user("kept tail")])
    w.entry("u2", "message", message=user("after"))
    w.lane("side", "u1")
    w.entry("s1", "message", lane="side", message=user("side work"))
    w.fact(fact="name", name="my session")
    w.fact(fact="label", targetId="u1", label="start")
    w.fact(fact="label", targetId="u2", label="gone")
    w.fact(fact="label", targetId="u2")
    return w.write(tmp_path / "v4.jsonl")


def test_a_v4_file_reads_as_lanes_entries_records_and_facts(tmp_path: Path) -> None:
    p = sample(tmp_path)
    before = p.read_bytes()
    assert is_v4(p)
    s = read_v4(p)
    assert s.report == []
    assert s.lanes == {"main": "u2", "side": "s1"}
    assert s.leaf_id("side") == "s1" and s.lane_of["s1"] == "side"
    assert [e["id"] for e in s.path_to(s.leaf_id("side"))] == ["u1", "s1"]
    assert [e["id"] for e in s.children("u1")] == ["t1", "s1"]
    assert [e["id"] for e in s.children("u1", lane="side")] == ["s1"]
    assert s.name == "my session" and s.labels == {"u1": "start"}
    assert dict(s.kinds) == {"header": 1, "entry": 8, "record": 2, "lane": 1, "fact": 4}
    assert s.records_by_type() == {"operation_started": 1, "usage": 1}
    assert "kind" not in s.get_entry("u1") and s.get_entry("u1")["seq"] == 1  # type: ignore[index,operator]
    ctx = s.context()
    # The latest compaction: its summary, its retained tail, then what follows it.
    assert [m["role"] for m in ctx.messages] == ["compactionSummary", "user", "user"]
    assert ctx.messages[0]["tokensBefore"] == 900 and ctx.messages[1]["content"] == "kept tail"
    assert ctx.model == {"provider": "p", "modelId": "m"} and ctx.active_tool_names == ["read"]
    side = s.context("side")
    assert [m["content"] for m in side.messages] == ["first", "side work"]
    assert p.read_bytes() == before  # reading never writes


def test_tool_results_follow_their_call_and_deferred_answers_are_left_out(tmp_path: Path) -> None:
    w = Writer()
    w.entry("a1", "message", message={"role": "assistant", "content": [{"type": "toolCall", "id": "c1"}]})
    w.entry("n1", "message", message=user("a notice between"))
    w.entry("r1", "message", message={"role": "toolResult", "toolCallId": "c1", "content": []})
    w.entry("r2", "message", message={"role": "toolResult", "toolCallId": "orphan", "content": []})
    w.entry("a2", "message", message={"role": "assistant", "stopReason": "deferred", "content": []})
    s = read_v4(w.write(tmp_path / "t.jsonl"))
    assert [m.get("toolCallId", m["role"]) for m in s.context().messages] == ["assistant", "c1", "user"]


def test_lines_the_codec_would_refuse_are_skipped_and_reported(tmp_path: Path) -> None:
    w = Writer()
    w.entry("u1", "message", message=user("a"))
    w.lines.append({"kind": "entry", "lane": "main", "type": "message", "id": "u1", "parentId": "u1", "seq": 2,
                    "timestamp": 5})  # a duplicate id (its seq still counts)
    w.lines.append({"kind": "entry", "lane": "main", "type": "message", "id": "z", "parentId": "nope", "seq": 3,
                    "timestamp": 5})  # a parent that is no entry
    w.lines.append({"kind": "lane", "seq": 9, "lane": "x", "leafId": None})  # seq out of order
    w.lines.append({"kind": "record", "id": "r", "lane": "ghost", "type": "usage", "seq": 4, "timestamp": 5})
    w.lines.append({"kind": "fact", "seq": 5, "fact": "label", "targetId": "nope", "label": "l"})
    w.lines.append({"kind": "mystery", "seq": 6})
    w.lines.append({"kind": "fact", "seq": 7, "fact": "name", "name": "n"})  # fine
    p = w.write(tmp_path / "bad.jsonl", tail=b'{"kind":"entry","lane":"main","ty')
    s = read_v4(p)
    assert s.name == "n" and [e["id"] for e in s.entries] == ["u1"]
    assert [(i.kind, i.line) for i in s.report] == [("invalid_line", n) for n in range(3, 9)] + [("truncated", 10)]


def test_a_file_that_is_not_v4(tmp_path: Path) -> None:
    p = tmp_path / "v3.jsonl"
    p.write_text('{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n')
    assert not is_v4(p) and not is_v4(tmp_path / "missing.jsonl")
    with pytest.raises(InvalidSessionError):
        read_v4(p)


def test_info_reports_records_by_kind(tmp_path: Path) -> None:
    p = sample(tmp_path)
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "c"), SESSIONTREE_CATALOG="off")
    r = subprocess.run([sys.executable, "-m", "sessiontree", "info", str(p), "--json"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["linesByKind"] == {"header": 1, "entry": 8, "record": 2, "lane": 1, "fact": 4}
    assert d["recordsByType"] == {"operation_started": 1, "usage": 1}
    assert d["lanes"] == {"main": "u2", "side": "s1"}
    r = subprocess.run([sys.executable, "-m", "sessiontree", "info", str(p)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0 and "operation_started 1" in r.stdout and "side → s1" in r.stdout, r.stdout + r.stderr


V4_WORDS = "a version 4 agent-core harness file: read-only, read by `info` / `sessiontree.v4.read_v4`"


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "c"),
               SESSIONTREE_CATALOG=str(tmp_path / "catalog.sqlite3"))
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_opening_a_v4_file_says_what_it_is(tmp_path: Path, backend: str) -> None:
    """Not "no session header … (type is None …)": the loader of version 3 files names
    a v4 file as one (both backends, the same words)."""
    from sessiontree import SessionManager

    p = sample(tmp_path)
    with pytest.raises(InvalidSessionError) as e:
        SessionManager.open(str(p), backend=backend)
    assert e.value.reason == V4_WORDS and (e.value.line, e.value.offset) == (1, 0)


def test_every_command_but_info_names_a_v4_file(tmp_path: Path, backend: str) -> None:
    (tmp_path / "sessions").mkdir()
    p = sample(tmp_path / "sessions")
    for command in ("check", "tree"):
        r = _cli(tmp_path, command, str(p), "--backend", backend)
        assert r.returncode == 1 and V4_WORDS in r.stdout + r.stderr, (command, r.stdout, r.stderr)
        assert "no session header" not in r.stdout + r.stderr
    for extra in ((), ("--no-cache",)):
        r = _cli(tmp_path, "ls", str(p.parent), *extra)
        out = r.stdout + r.stderr
        assert V4_WORDS in out and "no session header" not in out, (extra, out)


def test_context_of_a_v4_file_is_the_v4_readers(tmp_path: Path) -> None:
    p = sample(tmp_path)
    s = read_v4(p)
    for args, leaf in (((), "u2"), (("--leaf", "s1"), "s1"), (("--leaf", "k"), "k1")):
        r = _cli(tmp_path, "context", str(p), "--json", *args)
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        ctx = s.context_at(leaf)
        assert d["leafId"] == leaf and d["messages"] == ctx.messages and d["model"] == ctx.model
    r = _cli(tmp_path, "context", str(p))
    assert r.returncode == 0 and r.stdout.startswith("context at u2: 3 messages") and "kept tail" in r.stdout, r.stdout
    r = _cli(tmp_path, "context", str(p), "--leaf", "nope")
    assert r.returncode == 1 and "--leaf nope not found" in r.stderr, r.stderr
    # An ambiguous prefix and an empty id, in the wording of a version 3 file's (cli._leaf.id_error).
    r = _cli(tmp_path, "context", str(p), "--leaf", "u")
    assert r.returncode == 1 and f"{p}: --leaf u is ambiguous (2 entries start with u: u1, u2)" in r.stderr, r.stderr
    r = _cli(tmp_path, "context", str(p), "--leaf", "")
    assert r.returncode == 1 and "--leaf '' (an empty id) names no entry" in r.stderr, r.stderr
