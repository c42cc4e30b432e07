"""Claude Code 2.1.x writes a response with several tool calls as several assistant lines
(one ``tool_use`` block each, one ``message.id``), and each ``tool_result`` line's
``parentUuid`` names the line holding its own call (``sourceToolAssistantUUID``). The
import must give what Pi writes for such a turn: one assistant message, then each tool
result in order on one path (issue 23, item 2), in a session and in a subagent's file,
whatever order the results and calls were written in; a rewind stays a branch; older
transcripts (one line per response) import as before.

The transcripts are written here from the facts in docs/IMPORT.md (field names and
shapes), never copied from a real one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.importers import import_claude

from _import_helpers import open_clean

SID = "5e551021-0000-4000-8000-000000000001"
CWD = "/home/dev/app"


def uid(n: int, side: str = "0") -> str:
    return f"c1a0de21-000{side}-4000-8000-{n:012d}"


class Transcript:
    """Records of one Claude Code 2.1.x transcript (a session, or a subagent's file)."""

    def __init__(self, agent: str | None = None) -> None:
        self.records: list[dict[str, Any]] = []
        self.agent = agent
        self.side = "1" if agent else "0"

    def _base(self, n: int, parent: int | None, kind: str, **more: Any) -> dict[str, Any]:
        d: dict[str, Any] = {"parentUuid": None if parent is None else uid(parent, self.side),
                             "isSidechain": self.agent is not None, "userType": "external", "cwd": CWD,
                             "sessionId": SID, "version": "2.1.114", "gitBranch": "main"}
        if self.agent:
            d["agentId"] = self.agent
        d.update(type=kind, uuid=uid(n, self.side), timestamp=f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}.000Z")
        d.update(more)
        return d

    def prompt(self, n: int, parent: int | None, text: str) -> None:
        self.records.append(self._base(n, parent, "user", message={"role": "user", "content": text}))

    def line(self, n: int, parent: int, mid: str, block: dict[str, Any], stop: str | None = None) -> None:
        """One assistant line: one content block of the response ``mid``."""
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000,
                 "output_tokens": 10, "service_tier": "standard"}
        msg = {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-4-6", "content": [block],
               "stop_reason": stop, "stop_sequence": None, "usage": usage}
        self.records.append(self._base(n, parent, "assistant", requestId="req_" + mid, message=msg))

    def result(self, n: int, call_line: int, tid: str, text: str) -> None:
        """A tool result whose parent is the line holding its call."""
        block = {"tool_use_id": tid, "type": "tool_result", "content": text, "is_error": False}
        self.records.append(self._base(n, call_line, "user", message={"role": "user", "content": [block]},
                                       toolUseResult={"stdout": text, "stderr": "", "interrupted": False},
                                       sourceToolAssistantUUID=uid(call_line, self.side)))

    def hook(self, n: int, parent: int) -> None:
        self.records.append(self._base(n, parent, "attachment",
                                       attachment={"type": "hook_success", "hookName": "PostToolUse:Bash"}))

    def progress(self, n: int, parent: int) -> None:
        self.records.append(self._base(n, parent, "progress", data={"type": "hook_progress"},
                                       toolUseID="toolu_x", parentToolUseID="toolu_x"))

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in self.records))
        return path


def call(tid: str, cmd: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": cmd}}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def parallel_turns(t: Transcript, interleaved: bool) -> None:
    """A prompt, a response of three calls (lines 2-5), their results (one with a hook
    record after it, one behind a progress record), an answer; then a rewind: two
    prompts answer that answer, the second one starts another parallel turn."""
    t.prompt(1, None, "Check the three files")
    t.line(2, 1, "msg_A", text("Reading all three."))
    t.line(3, 2, "msg_A", call("toolu_1", "cat a"))
    if interleaved:  # streaming tool execution: a result written before the next call
        t.result(6, 3, "toolu_1", "A")
    t.line(4, 3, "msg_A", call("toolu_2", "cat b"))
    t.line(5, 4, "msg_A", call("toolu_3", "cat c"), stop="tool_use")
    if not interleaved:
        t.result(6, 3, "toolu_1", "A")
    t.result(7, 4, "toolu_2", "B")
    t.hook(8, 7)
    t.progress(19, 5)
    t.result(9, 19, "toolu_3", "C")
    t.line(10, 9, "msg_B", text("All three say hello."), stop="end_turn")
    t.prompt(11, 10, "Now delete them")
    t.line(12, 11, "msg_C", text("Deleted."), stop="end_turn")
    t.prompt(13, 10, "No, keep them; count lines")
    t.line(14, 13, "msg_D", call("toolu_4", "wc -l a"))
    t.line(15, 14, "msg_D", call("toolu_5", "wc -l b"), stop="tool_use")
    t.result(17, 15, "toolu_5", "2 b")  # the second call's result first
    t.result(16, 14, "toolu_4", "1 a")
    t.line(18, 16, "msg_E", text("3 lines."), stop="end_turn")


def unanswered(sm: SessionManager) -> list[tuple[str, str]]:
    """``(leaf, call id)`` for each tool call on a leaf's path whose result is in the file
    but not on that path."""
    results = {e["message"]["toolCallId"] for e in sm.get_entries()
               if e["type"] == "message" and e["message"]["role"] == "toolResult"}
    out = []
    for leaf in sm.get_leaf_ids():
        path = sm.get_branch(leaf)
        on_path = {e["message"]["toolCallId"] for e in path
                   if e["type"] == "message" and e["message"]["role"] == "toolResult"}
        for e in path:
            if e["type"] == "message" and e["message"]["role"] == "assistant":
                for b in e["message"]["content"]:
                    if b["type"] == "toolCall" and b["id"] in results and b["id"] not in on_path:
                        out.append((leaf, b["id"]))
    return out


def context_view(sm: SessionManager, leaf: str | None = None) -> list[str]:
    out = []
    ctx = sm.build_session_context() if leaf is None else sm.build_session_context(leaf)
    for m in ctx.messages:
        c = m["content"]
        parts = [b.get("text") or b.get("id") for b in c] if isinstance(c, list) else [c]
        out.append(f"{m['role']}:{'|'.join(parts)}")
    return out


def branch_points(sm: SessionManager) -> int:
    return sum(1 for e in sm.get_entries() if len(sm.get_children_ids(e["id"])) > 1)


@pytest.mark.parametrize("interleaved", [False, True], ids=["calls-then-results", "results-between-calls"])
def test_a_turn_of_parallel_calls_is_one_path(interleaved: bool, backend: str, tmp_path: Path) -> None:
    t = Transcript()
    parallel_turns(t, interleaved)
    src = t.write(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl")
    [r] = import_claude(src, to=tmp_path / "out", backend=backend)
    sm = open_clean(r.path, backend)
    with sm:
        assert unanswered(sm) == []
        assert len(sm.get_leaf_ids()) == 2 and branch_points(sm) == 1  # the rewind, nothing else
        assert context_view(sm) == [
            "user:Check the three files",
            "assistant:Reading all three.|toolu_1|toolu_2|toolu_3",
            "toolResult:A", "toolResult:B", "toolResult:C",
            "assistant:All three say hello.",
            "user:No, keep them; count lines",
            "assistant:toolu_4|toolu_5",
            "toolResult:2 b", "toolResult:1 a",
            "assistant:3 lines.",
        ]
        assert context_view(sm, uid(12))[-2:] == ["user:Now delete them", "assistant:Deleted."]
        # The response's usage is counted once, on its one message.
        assistants = [e for e in sm.get_entries() if e["type"] == "message" and e["message"]["role"] == "assistant"]
        assert len(assistants) == 5
        assert sm.get_usage_totals().tokens["input"] == 5 * 3


def test_a_subagent_file_gets_the_same_shape(backend: str, tmp_path: Path) -> None:
    """A subagent's transcript (``<session>/subagents/agent-<id>.jsonl``, every record
    ``isSidechain`` with its ``agentId``) imported with its session."""
    main = Transcript()
    main.prompt(1, None, "Delegate the checks")
    main.line(2, 1, "msg_M", call("toolu_task", "agent"), stop="tool_use")
    main.result(3, 2, "toolu_task", "done")
    main.line(4, 3, "msg_N", text("The agent is done."), stop="end_turn")
    project = tmp_path / "projects" / "-home-dev-app"
    src = main.write(project / f"{SID}.jsonl")
    sub = Transcript(agent="a1b2c3d4e5")
    parallel_turns(sub, True)
    sub.write(project / SID / "subagents" / "agent-a1b2c3d4e5.jsonl")
    results = import_claude(src, to=tmp_path / "out", backend=backend)
    assert [r.role for r in results] == ["main", "subagent"]
    for r in results:
        sm = open_clean(r.path, backend)
        with sm:
            assert unanswered(sm) == []
            assert branch_points(sm) == (1 if r.role == "subagent" else 0)
    assert results[1].parent_session == results[0].path


def test_one_line_per_response_imports_as_before(backend: str, tmp_path: Path) -> None:
    """Older versions: a response with two calls on one line; each result line's parent
    is the record before it. Nothing is re-hung."""
    t = Transcript()
    t.prompt(1, None, "Two things")
    usage = {"input_tokens": 1, "output_tokens": 2}
    t.records.append(t._base(2, 1, "assistant", message={
        "id": "msg_old", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage, "stop_reason": "tool_use",
        "content": [call("toolu_a", "ls"), call("toolu_b", "pwd")]}))
    t.result(3, 2, "toolu_a", "x")
    t.result(4, 3, "toolu_b", "/")  # parent: the previous record, not the call's line
    t.line(5, 4, "msg_old2", text("ok"), stop="end_turn")
    src = t.write(tmp_path / "p" / f"{SID}.jsonl")
    [r] = import_claude(src, to=tmp_path / "out", backend=backend)
    sm = open_clean(r.path, backend)
    with sm:
        assert sm.get_path_ids() == [uid(1), uid(2), uid(3), uid(4), uid(5)]
        assert unanswered(sm) == [] and branch_points(sm) == 0


def test_a_record_holding_any_key_is_imported(backend: str, tmp_path: Path) -> None:
    """The importer marked a record whose uuid came before with a key of its own
    (``__duplicate__``); a source record holding that key was taken for such a copy and
    dropped silently, and with it everything below it (3 of 4 messages lost)."""
    t = Transcript()
    t.prompt(1, None, "go")
    t.line(2, 1, "msg_A", text("hi"), stop="end_turn")
    t.prompt(3, 2, "second")
    t.line(4, 3, "msg_B", text("yo"), stop="end_turn")
    t.records[1]["__duplicate__"] = True
    src = t.write(tmp_path / "projects" / "-home-dev-app" / f"{SID}.jsonl")
    [r] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert not r.skipped
    with open_clean(r.path, backend) as sm:
        assert context_view(sm) == ["user:go", "assistant:hi", "user:second", "assistant:yo"]
