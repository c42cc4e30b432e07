"""Property: imports of random valid Claude Code / Codex sources always load clean.

Random sources (branches, split responses, tool calls and results, compactions, titles,
records without a Pi equivalent, rollbacks, model changes, token counts) are imported
and reopened on both backends: ``load_report`` is empty, every entry's parent is
defined before it, re-importing adds nothing, and assistant usage sums to the source's
usage counted once per response.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.importers import import_claude, import_codex

from _import_helpers import open_clean, usage_total
from _shared import backends

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def claude_source(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int]:
    """Records of a session and the expected sum of output tokens (once per message.id)."""
    recs: list[dict[str, Any]] = []
    uuids: list[str] = []
    msg_out: dict[str, int] = {}
    n = draw(st.integers(1, 14))
    tool_ids: list[str] = []
    # Issue 24: ids and a cwd with lone surrogates (\udxxx escapes in the JSON) or path characters.
    sid = draw(st.sampled_from(["s", "\ud800", "a/b", "x\udcff"]))
    cwd = draw(st.sampled_from(["/w", "/w/\ud834", "/\udcfe"]))
    for i in range(n):
        uid = f"00000000-0000-4000-8000-{i:012d}"
        parent = draw(st.sampled_from([None, *uuids])) if uuids and draw(st.booleans()) else (uuids[-1] if uuids else None)
        ts = f"2025-11-0{1 + i % 9}T10:00:{i % 60:02d}.{i:03d}Z"
        base = {"parentUuid": parent, "uuid": uid, "timestamp": ts, "sessionId": sid, "cwd": cwd, "isSidechain": False}
        kind = draw(st.sampled_from(["user", "assistant", "assistant", "tool_result", "progress", "system", "snapshot", "title"]))
        if kind == "user":
            recs.append({**base, "type": "user", "message": {"role": "user", "content": draw(st.text(max_size=8))}})
        elif kind == "tool_result" and tool_ids:
            recs.append({**base, "type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": draw(st.sampled_from(tool_ids)), "content": "r"}]}})
        elif kind == "assistant":
            # continue the previous response (same message.id) or start a new one
            prev = recs[-1] if recs else None
            same = prev is not None and prev.get("type") == "assistant" and parent == prev["uuid"] and draw(st.booleans())
            mid = prev["message"]["id"] if same else f"msg_{i}"  # type: ignore[index]
            out = draw(st.integers(0, 50))
            msg_out[mid] = max(msg_out.get(mid, 0), out)
            block: dict[str, Any] = draw(st.sampled_from([
                {"type": "text", "text": f"t{i}"},
                {"type": "thinking", "thinking": f"k{i}", "signature": "sig"},
                {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"c": i}},
            ]))
            if block["type"] == "tool_use":
                tool_ids.append(block["id"])
            recs.append({**base, "type": "assistant", "message": {"id": mid, "model": "claude-x", "role": "assistant",
                         "content": [block], "usage": {"input_tokens": 3, "output_tokens": out}}})
        elif kind == "progress":
            recs.append({**base, "type": "progress", "data": {"i": i}})
        elif kind == "system":
            if draw(st.booleans()) and uuids:
                recs.append({**base, "parentUuid": None, "logicalParentUuid": uuids[-1], "type": "system",
                             "subtype": "compact_boundary", "compactMetadata": {"preTokens": 10}})
                uuids.append(uid)
                uid2 = f"00000000-0000-4000-9000-{i:012d}"
                recs.append({"parentUuid": uid, "uuid": uid2, "timestamp": ts, "sessionId": "s", "cwd": "/w",
                             "type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "sum"}})
                uid = uid2
            else:
                recs.append({**base, "type": "system", "subtype": "informational", "content": "x"})
        elif kind == "snapshot":
            recs.append({"type": "file-history-snapshot", "messageId": parent, "snapshot": {}})
            continue
        else:
            recs.append({"type": draw(st.sampled_from(["summary", "custom-title", "ai-title"])),
                         "summary": "S", "customTitle": "C", "aiTitle": "A"})
            continue
        uuids.append(uid)
    # At least one real user message (a compact summary is not one: it becomes a compaction).
    if not any(r.get("type") == "user" and not r.get("isCompactSummary") for r in recs):
        recs.insert(0, {"parentUuid": None, "uuid": "00000000-0000-4000-8000-ffffffffffff", "timestamp": "2025-11-01T09:00:00.000Z",
                        "sessionId": "s", "cwd": "/w", "type": "user", "message": {"role": "user", "content": "hi"}})
    return recs, sum(msg_out.values())


@st.composite
def codex_source(draw: st.DrawFn) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [{"timestamp": "2025-11-01T10:00:00.000Z", "type": "session_meta",
                                    "payload": {"id": "0199b000-0000-7000-8000-000000000001", "cwd": "/w",
                                                "timestamp": "2025-11-01T10:00:00.000Z"}}]
    total = [0, 0, 0]
    for i in range(draw(st.integers(1, 20))):
        ts = f"2025-11-01T10:00:{i % 60:02d}.{i:03d}Z"
        kind = draw(st.sampled_from(["user", "assistant", "reasoning", "call", "output", "tok", "tok", "rollback",
                                     "ctx", "compacted", "event"]))
        if kind == "user":
            p: dict[str, Any] = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"u{i}"}]}
            lines.append({"timestamp": ts, "type": "response_item", "payload": p})
        elif kind == "assistant":
            lines.append({"timestamp": ts, "type": "response_item", "payload": {
                "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"a{i}"}]}})
        elif kind == "reasoning":
            lines.append({"timestamp": ts, "type": "response_item", "payload": {
                "type": "reasoning", "summary": [{"type": "summary_text", "text": f"r{i}"}], "encrypted_content": "e"}})
        elif kind == "call":
            lines.append({"timestamp": ts, "type": "response_item", "payload": {
                "type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{i}"}})
        elif kind == "output":
            lines.append({"timestamp": ts, "type": "response_item", "payload": {
                "type": "function_call_output", "call_id": f"c{max(i - 1, 0)}", "output": "ok"}})
        elif kind == "tok":
            inc = [draw(st.integers(0, 100)), 0, draw(st.integers(0, 9))]
            inc[1] = draw(st.integers(0, inc[0]))
            repeat = draw(st.booleans()) and total != [0, 0, 0]
            if not repeat:
                total = [total[0] + inc[0], total[1] + inc[1], total[2] + inc[2]]
            def u(v: list[int]) -> dict[str, int]:
                return {"input_tokens": v[0], "cached_input_tokens": v[1], "output_tokens": v[2], "total_tokens": v[0] + v[2]}
            lines.append({"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": {
                "total_token_usage": u(total), "last_token_usage": u(inc)}}})
        elif kind == "rollback":
            lines.append({"timestamp": ts, "type": "event_msg", "payload": {"type": "thread_rolled_back",
                                                                           "num_turns": draw(st.integers(0, 3))}})
        elif kind == "ctx":
            lines.append({"timestamp": ts, "type": "turn_context", "payload": {
                "model": draw(st.sampled_from(["m1", "m2"])), "effort": draw(st.sampled_from(["low", "high", "none"]))}})
        elif kind == "compacted":
            lines.append({"timestamp": ts, "type": "compacted", "payload": {"message": f"s{i}"}})
        else:
            lines.append({"timestamp": ts, "type": "event_msg", "payload": {"type": draw(st.sampled_from(
                ["agent_message", "user_message", "turn_aborted", "task_complete", "whatever"])), "message": f"a{i}"}})
    # Issue 24: records before the session_meta, a segment's meta met again, hostile ids.
    meta = lines[0]
    meta["payload"]["id"] = draw(st.sampled_from([meta["payload"]["id"], "\ud800", "a/../b", "", "x\x1fy"]))
    if len(lines) > 1 and draw(st.booleans()):
        lines.insert(draw(st.integers(1, len(lines) - 1)), lines.pop(0))
    for _ in range(draw(st.integers(0, 2))):
        again = {**meta, "payload": {**meta["payload"], "id": draw(st.sampled_from([meta["payload"]["id"], "other"]))}}
        lines.insert(draw(st.integers(0, len(lines))), again)
    return lines


def _write(path: Path, recs: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _check_file(path: str, backend: str) -> dict[str, int]:
    with open_clean(path, backend) as sm:
        seen: set[str] = set()
        for e in sm.get_entries():
            assert e["parentId"] is None or e["parentId"] in seen
            seen.add(e["id"])
        sm.build_session_context()
        sm.get_tree()
        return usage_total(sm)


@SETTINGS
@given(src=claude_source())
def test_random_claude_sources_import_clean(src: tuple[list[dict[str, Any]], int]) -> None:
    recs, expected_output = src
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "s.jsonl"
        _write(p, recs)
        results = import_claude(p, to=Path(tmp) / "out")
        (r,) = results
        assert r.path is not None, r.error
        for backend in backends():
            total = _check_file(r.path, backend)
            assert total["output"] == expected_output
        again = import_claude(p, to=Path(tmp) / "out")
        assert again[0].entries_added == 0 and not again[0].conflicts


@SETTINGS
@given(lines=codex_source())
def test_random_codex_rollouts_import_clean(lines: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "rollout-2025-11-01T10-00-00-0199b000-0000-7000-8000-000000000001.jsonl"
        _write(p, lines)
        (r,) = import_codex(p, to=Path(tmp) / "out", include_incomplete=True)
        if r.path is None:
            assert "no message" in (r.error or "")
            return
        for backend in backends():
            _check_file(r.path, backend)
        (again,) = import_codex(p, to=Path(tmp) / "out", include_incomplete=True)
        assert again.entries_added == 0 and not again.conflicts
