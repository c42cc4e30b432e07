"""Importers on damaged and extreme source files (adversary round 46): glued records
(F1), a torn record's nested objects (F2), legacy Codex rollouts (F3), a NUL in a cwd
(F5), deep tool input (F6) and a FIFO as PATH (N2).

Every source is written here from the formats' facts (docs/IMPORT.md), never copied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree._jsonl import decode_line, encode_entry
from sessiontree.importers import import_claude, import_codex

from _import_helpers import open_clean

SID = "5e551046-0000-4000-8000-000000000001"
TID = "0199a046-0000-7000-8000-000000000001"
COMMON = {"isSidechain": False, "userType": "external", "cwd": "/home/u/proj", "sessionId": SID, "version": "2.1.3"}


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def user(uuid: str, parent: str | None, content: Any, **more: Any) -> str:
    return dumps({"parentUuid": parent, **COMMON, "type": "user", "message": {"role": "user", "content": content},
                  "uuid": uuid, "timestamp": "2025-11-07T10:00:00.000Z", **more})


def assistant(uuid: str, parent: str, blocks: list[dict[str, Any]], mid: str) -> str:
    return dumps({"parentUuid": parent, **COMMON, "type": "assistant",
                  "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                              "content": blocks, "stop_reason": "end_turn",
                              "usage": {"input_tokens": 3, "output_tokens": 5}},
                  "uuid": uuid, "timestamp": "2025-11-07T10:00:01.000Z"})


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def claude_file(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "src" / f"{SID}.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(body)
    return src


def rollout_line(kind: str, payload: dict[str, Any]) -> str:
    return dumps({"timestamp": "2025-11-07T10:00:00.000Z", "type": kind, "payload": payload})


def rollout_file(tmp_path: Path, body: str, tid: str = TID) -> Path:
    src = tmp_path / "sessions" / "2025" / "11" / "07" / f"rollout-2025-11-07T10-00-00-{tid}.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(body)
    return src


META = rollout_line("session_meta", {"id": TID, "timestamp": "2025-11-07T10:00:00.000Z", "cwd": "/home/u/cx"})
TOKENS = rollout_line("event_msg", {"type": "token_count", "info": {
    "total_token_usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1, "total_tokens": 11},
    "last_token_usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1, "total_tokens": 11}}})


def item_user(t: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}


def item_answer(t: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}


def path_of(sm: Any) -> list[tuple[str, str]]:
    """(role or custom type, first text) of each entry on the path to the leaf."""
    out = []
    for e in sm.get_branch():
        m = e.get("message")
        if isinstance(m, dict):
            c = m.get("content")
            first = c if isinstance(c, str) else next((b.get("text", "") for b in c if isinstance(b, dict)), "")
            out.append((m["role"], first))
        else:
            out.append((e.get("customType") or e["type"], ""))
    return out


def roots(sm: Any) -> int:
    return len(sm.get_tree())


def all_text(sm: Any) -> str:
    return "\n".join(json.dumps(e) for e in sm.get_entries())


# ------------------------------------------------------------------ F1: glued records


def test_claude_records_glued_on_one_line_are_each_imported(tmp_path: Path, backend: str) -> None:
    a1 = assistant("a1", "u1", [text("THE ANSWER")], "msg_1")
    body = "\n".join([user("u1", None, "hello"), a1 + user("u2", "a1", "thanks"),
                      assistant("a2", "u2", [text("bye")], "msg_2")]) + "\n"
    [r] = import_claude(claude_file(tmp_path, body), to=tmp_path / "out", backend=backend)
    assert r.path and r.entries_added == 4 and r.problems == [] and r.skipped == {}, r
    sm = open_clean(r.path, backend)
    assert path_of(sm) == [("user", "hello"), ("assistant", "THE ANSWER"), ("user", "thanks"), ("assistant", "bye")]
    assert roots(sm) == 1


def test_codex_items_glued_on_one_line_are_each_imported(tmp_path: Path, backend: str) -> None:
    glued = rollout_line("response_item", item_user("THE QUESTION")) + rollout_line("response_item", item_answer("a"))
    src = rollout_file(tmp_path, "\n".join([META, glued, TOKENS]) + "\n")
    [r] = import_codex(src, to=tmp_path / "out", backend=backend)
    assert r.path and r.problems == [] and r.skipped == {}, r
    sm = open_clean(r.path, backend)
    assert [p for p in path_of(sm) if p[0] in ("user", "assistant")] == [("user", "THE QUESTION"), ("assistant", "a")]


# ------------------------------------------------------------------ F2: torn records


def torn_tool_result() -> str:
    """A tool result record whose write was cut before its final ``}``: its last field,
    ``toolUseResult``, is a complete object that looks like a record."""
    whole = user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
                 toolUseResult={"type": "user", "uuid": "phantom-1", "parentUuid": None,
                                "message": {"role": "user", "content": "PHANTOM USER MESSAGE"},
                                "timestamp": "2025-11-07T10:00:02.000Z"})
    assert whole.endswith("}}")
    return whole[:-1]


def torn_block() -> str:
    """An assistant record cut right after its first content block."""
    whole = assistant("a9", "a1", [text("block one"), text("block two")], "msg_9")
    return whole[: whole.index('{"type":"text","text":"block two"') - 1]


TOOL = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}


@pytest.mark.parametrize("torn", [torn_tool_result, torn_block])
@pytest.mark.parametrize("last", [False, True], ids=["then-a-line", "last-line"])
def test_nothing_nested_in_a_torn_claude_record_becomes_an_entry(tmp_path: Path, backend: str, torn: Any,
                                                                 last: bool) -> None:
    lines = [user("u1", None, "hello"), assistant("a1", "u1", [TOOL], "msg_1"), torn()]
    if not last:
        lines.append(user("u3", "a1", "after"))
    body = "\n".join(lines) + ("\n" if not last else "")
    [r] = import_claude(claude_file(tmp_path, body), to=tmp_path / "out", backend=backend)
    assert r.path, r
    sm = open_clean(r.path, backend)
    dump = all_text(sm)
    assert "PHANTOM" not in dump and "block one" not in dump and "claude-code:text" not in dump
    assert roots(sm) == 1 and len(sm) == (2 if last else 3)
    why = "truncated last line (not complete yet)" if last else "invalid JSON"
    assert r.skipped == {why: 1} and r.problems == [f"line 3: {why}"], r


def test_a_record_glued_behind_a_torn_one_is_kept(tmp_path: Path, backend: str) -> None:
    """A write cut inside a string, then a whole record with no line feed between."""
    cut = assistant("ax", "u1", [text("never finished")], "msg_x")
    cut = cut[: cut.index("never") + 5]
    body = "\n".join([user("u1", None, "hello"), cut + assistant("a1", "u1", [text("whole")], "msg_1")]) + "\n"
    [r] = import_claude(claude_file(tmp_path, body), to=tmp_path / "out", backend=backend)
    assert r.path and r.skipped == {"torn fragment": 1}, r
    assert r.problems == [f"line 2: torn fragment (bytes 0-{len(cut)}, {len(cut)} bytes) skipped"]
    sm = open_clean(r.path, backend)
    assert path_of(sm) == [("user", "hello"), ("assistant", "whole")]


# ------------------------------------------------------------------ F3: legacy Codex


def test_a_legacy_codex_rollout_imports_its_last_answer(tmp_path: Path, backend: str) -> None:
    body = "\n".join([dumps({"id": TID, "timestamp": "2025-07-01T10:00:00.000Z", "instructions": None}),
                      dumps({"record_type": "state"}), dumps(item_user("what is 2+2")),
                      dumps(item_answer("FINAL ANSWER 4")), dumps({"record_type": "state"})]) + "\n"
    src = rollout_file(tmp_path, body)
    [r] = import_codex(src, to=tmp_path / "out", backend=backend)
    assert r.path and not any("held back" in k for k in r.skipped) and r.problems == [], r
    sm = open_clean(r.path, backend)
    assert ("assistant", "FINAL ANSWER 4") in path_of(sm)
    [again] = import_codex(src, to=tmp_path / "out", backend=backend)
    assert again.entries_added == 0 and again.conflicts == {}
    # A rollout of today's format still holds back a response with no token_count yet.
    [now] = import_codex(rollout_file(tmp_path / "new", "\n".join([
        META, rollout_line("response_item", item_user("q")), rollout_line("response_item", item_answer("part"))]) + "\n"),
        to=tmp_path / "out2", backend=backend)
    assert any("held back" in k for k in now.skipped), now


# ------------------------------------------------------------------ F5: NUL in a cwd


def test_a_cwd_with_a_nul_fails_that_session_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi"))
    project = tmp_path / "project"
    project.mkdir()
    good = "5e551046-0000-4000-8000-000000000002"
    for sid, cwd in ((SID, "/a\x00b"), (good, "/home/u/ok")):
        recs = [{"parentUuid": None, "cwd": cwd, "sessionId": sid, "type": "user", "uuid": "u1",
                 "message": {"role": "user", "content": "hi"}, "timestamp": "2025-11-07T10:00:00.000Z"},
                {"parentUuid": "u1", "cwd": cwd, "sessionId": sid, "type": "assistant", "uuid": "a1",
                 "timestamp": "2025-11-07T10:00:01.000Z",
                 "message": {"id": "m1", "role": "assistant", "model": "c", "content": [text("x")],
                             "usage": {"input_tokens": 1, "output_tokens": 1}}}]
        (project / f"{sid}.jsonl").write_text("".join(dumps(x) + "\n" for x in recs))
    p = subprocess.run([sys.executable, "-m", "sessiontree", "import", "claude", str(project), "--json"],
                       capture_output=True, text=True, timeout=300, env={**os.environ})
    assert "Traceback" not in p.stderr and p.returncode == 1, p.stderr
    rows = {r["sessionId"]: r for r in json.loads(p.stdout)}
    assert rows[SID]["path"] is None and "NUL" in rows[SID]["error"]
    assert rows[good]["path"] and rows[good]["path"].startswith(str(tmp_path / "pi"))
    # A Codex rollout the same; with --out the session has a folder and is imported.
    src = rollout_file(tmp_path / "cx", "\n".join([
        rollout_line("session_meta", {"id": TID, "timestamp": "2025-11-07T10:00:00.000Z", "cwd": "/a\x00b"}),
        rollout_line("response_item", item_user("hi")), rollout_line("response_item", item_answer("yo")), TOKENS]) + "\n")
    [r] = import_codex(src)
    assert r.path is None and "NUL" in (r.error or "")
    [r] = import_codex(src, to=tmp_path / "out")
    assert r.path and open_clean(r.path, "python").get_header()["cwd"] == "/a\x00b"


# ------------------------------------------------------------------ F6: deep values


def test_deep_tool_input_is_imported_without_a_traceback(tmp_path: Path, backend: str) -> None:
    deep = "[" * 990 + "]" * 990
    a = assistant("a1", "u1", [{"type": "tool_use", "id": "t", "name": "x", "input": {"k": 1}}], "m2")
    a = a.replace('{"k":1}', deep)
    decode_line(a)  # valid JSON within the loader's 1,024 levels (json.loads may recurse too deep here)
    [r] = import_claude(claude_file(tmp_path, user("u1", None, "hi") + "\n" + a + "\n"), to=tmp_path / "out",
                        backend=backend)
    assert r.path and r.entries_added == 2 and r.problems == [], r
    sm = open_clean(r.path, backend)
    call = sm.get_branch()[-1]["message"]["content"][0]
    assert call["type"] == "toolCall" and encode_entry(call["arguments"]) == b'{"input":' + deep.encode() + b"}"


@pytest.mark.parametrize("depth", [1022, 100_000])
def test_codex_deep_arguments_never_make_an_unreadable_line(tmp_path: Path, backend: str, depth: int) -> None:
    """Arguments are JSON text: parsed, they sit 4 levels down in the Pi entry (too
    deep when 1,022 deep: the response is left out, reported); past 1,024 levels they
    are no JSON the loader reads, and are kept as the text they are."""
    call = {"type": "function_call", "name": "f", "call_id": "c1", "arguments": "[" * depth + "]" * depth}
    src = rollout_file(tmp_path, "\n".join([META, rollout_line("response_item", item_user("q")),
                                            rollout_line("response_item", call), TOKENS]) + "\n")
    [r] = import_codex(src, to=tmp_path / "out", backend=backend)
    assert r.path, r
    sm = open_clean(r.path, backend)
    answers = [e for e in sm.get_entries() if e["type"] == "message" and e["message"]["role"] == "assistant"]
    if depth == 1022:
        assert answers == [] and r.skipped.get("message (nested deeper than 1024 levels)") == 1, r
        assert any("nested deeper than 1024 levels" in p for p in r.problems)
    else:
        [a] = answers
        assert a["message"]["content"][0]["arguments"] == {"input": call["arguments"]}


# ------------------------------------------------------------------ N2: a FIFO as PATH


def test_a_fifo_path_is_named_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / f"{SID}.jsonl"
    os.mkfifo(fifo)
    p = subprocess.run([sys.executable, "-m", "sessiontree", "import", "claude", str(fifo), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "not a regular file" in p.stderr and "no such file" not in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "sessiontree", "import", "claude", str(tmp_path / "none.jsonl")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no such file" in p.stderr
