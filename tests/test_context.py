"""_context: build_session_context / convert_to_llm against every corpus scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree._backend import ContextPlan
from sessiontree._context import (
    SessionContext,
    assemble_context,
    build_session_context,
    convert_to_llm,
    plan_context,
    walk_path,
)
from sessiontree._jsonl import BOM, decode_line, encode_entry, is_blank, iter_lines

from _shared import CORPUS, as_pi_099

CORPUS_INDEX = CORPUS / "index.json"


def _scenario_names() -> list[str]:
    try:
        return [s["name"] for s in json.loads(CORPUS_INDEX.read_text())["scenarios"]]
    except OSError:
        return ["<no corpus>"]


def load_entries(path: Path) -> list[dict[str, Any]]:
    """Entries as sessiontree accepts them: decodable objects after the header, first
    definition of an id only (CONTRACT §5 point 1)."""
    data = path.read_bytes()
    start = len(BOM) if data.startswith(BOM) else 0
    entries, seen = [], set()
    for _, _, raw, _ in iter_lines(data, start):
        if is_blank(raw):
            continue
        try:
            v = decode_line(raw)
        except ValueError:
            continue
        if not isinstance(v, dict) or v.get("type") == "session":
            continue
        if v.get("id") in seen:
            continue
        seen.add(v.get("id"))
        entries.append(v)
    return entries


def as_js(value: Any) -> Any:
    """What JSON.stringify would print, read back; ints beyond 2**53 as doubles (Pi has
    no exact big ints, CONTRACT §5 point 6)."""
    stack_in = json.loads(encode_entry(value))

    def fix(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
            return float(v)
        return v

    return fix(stack_in)


def context_as_pi(ctx: SessionContext) -> dict[str, Any]:
    out: dict[str, Any] = {"messages": ctx.messages}
    if ctx.thinking_level is not None:  # None = Pi's undefined (omitted) or null
        out["thinkingLevel"] = ctx.thinking_level
    out["model"] = ctx.model
    return out


@pytest.mark.parametrize("name", _scenario_names())
def test_contexts_and_llm_match_pi(corpus_dir: Path, name: str) -> None:
    expected = json.loads((corpus_dir / f"{name}.expected.json").read_text())
    entries = load_entries(corpus_dir / f"{name}.jsonl")
    for key, want in expected["contexts"].items():
        ctx = build_session_context(entries) if key == "@leaf" else build_session_context(entries, key)
        want = dict(want)
        if "thinkingLevel" in want and want["thinkingLevel"] is None:
            del want["thinkingLevel"]
        assert as_js(context_as_pi(ctx)) == as_js(as_pi_099(want)), f"{name} context {key}"
        # Pi's convertToLlm of Pi's own context (0.87+ passes system messages through,
        # the 0.73.1 corpus dropped them).
        llm = convert_to_llm(want["messages"], merge_consecutive_user=False)
        assert as_js([m for m in llm if m.get("role") != "system"]) == as_js(expected["llm"][key]), f"{name} llm {key}"


def test_idfree_contexts_of_migrated_files(corpus_dir: Path) -> None:
    """The migrated files' contexts by entry position (same data, other keys)."""
    for path in sorted(corpus_dir.glob("*.idfree.json")):
        idfree = json.loads(path.read_text())
        name = path.name[: -len(".idfree.json")]
        entries = load_entries(corpus_dir / f"{name}.jsonl")
        for key, want in idfree["contexts"].items():
            ctx = build_session_context(entries) if key == "@leaf" else build_session_context(
                entries, entries[int(key)]["id"]
            )
            assert as_js(context_as_pi(ctx)) == as_js(want), f"{name} {key}"


# ------------------------------------------------------------------- unit rules


def _e(eid: str, parent: str | None, type_: str = "message", ts: str = "2025-01-01T00:00:00.000Z", **kw: Any) -> dict:
    return {"type": type_, "id": eid, "parentId": parent, "timestamp": ts, **kw}


def _user(text: Any, ts: int = 1) -> dict:
    return {"role": "user", "content": text, "timestamp": ts}


def test_leaf_none_omitted_unknown() -> None:
    es = [_e("a", None, message=_user("1")), _e("b", "a", message=_user("2")), _e("c", "a", message=_user("3"))]
    assert build_session_context(es, None) == SessionContext([], "off", None)
    assert [m["content"] for m in build_session_context(es).messages] == ["1", "3"]
    assert [m["content"] for m in build_session_context(es, "nope").messages] == ["1", "3"]
    assert [m["content"] for m in build_session_context(es, "").messages] == ["1", "3"]
    assert [m["content"] for m in build_session_context(es, "b").messages] == ["1", "2"]
    assert build_session_context([]) == SessionContext()


def test_compaction_rules() -> None:
    es = [
        _e("a", None, message=_user("1")),
        _e("b", "a", message=_user("2")),
        _e("c", "b", "compaction", summary="S", firstKeptEntryId="b", tokensBefore=9),
        _e("d", "c", message=_user("3")),
        _e("e", "d", "compaction", summary="T", firstKeptEntryId="zz", tokensBefore=1),
        _e("f", "e", message=_user("4")),
    ]
    ctx = build_session_context(es, "d")
    assert [m.get("content", m.get("summary")) for m in ctx.messages] == ["S", "2", "3"]
    assert ctx.messages[0] == {"role": "compactionSummary", "summary": "S", "tokensBefore": 9,
                               "timestamp": 1735689600000}
    # latest compaction wins; an off-path firstKeptEntryId keeps only its summary
    ctx = build_session_context(es, "f")
    assert [m.get("content", m.get("summary")) for m in ctx.messages] == ["T", "4"]
    plan = plan_context(walk_path(es[-1], {e["id"]: e for e in es}))
    assert plan == ContextPlan(message_ids=["f"], compaction_id="e", thinking_id=None, model_id=None,
                               entry_ids=["e", "f"])


def test_state_from_whole_path_and_model_keys() -> None:
    es = [
        _e("a", None, "thinking_level_change", thinkingLevel="high"),
        _e("b", "a", "model_change", provider="p", modelId="m"),
        _e("c", "b", message={"role": "assistant", "content": [], "provider": "q", "model": "n"}),
        _e("d", "c", "model_change", provider="only"),
        _e("e", "d", "thinking_level_change"),
    ]
    assert build_session_context(es, "c").model == {"provider": "q", "modelId": "n"}
    assert build_session_context(es, "c").thinking_level == "high"
    ctx = build_session_context(es, "e")
    assert ctx.model == {"provider": "only"}
    assert ctx.thinking_level is None  # Pi: undefined


def test_synthesised_messages_keep_js_undefined_out() -> None:
    es = [
        _e("a", None, "custom_message", customType="x", content="hi"),
        _e("b", "a", "branch_summary", fromId="root", summary=""),
        _e("c", "b", "branch_summary", fromId="a", summary="B", ts="bad"),
        _e("d", "c", "custom_message", customType="y", content=[], display=False, details=None),
    ]
    ms = build_session_context(es).messages
    assert ms == [
        {"role": "custom", "customType": "x", "content": "hi", "timestamp": 1735689600000},
        {"role": "branchSummary", "summary": "B", "fromId": "a", "timestamp": None},
        {"role": "custom", "customType": "y", "content": [], "display": False, "details": None,
         "timestamp": 1735689600000},
    ]


def test_cycles_and_orphans_never_hang() -> None:
    es = [_e("a", "b", message=_user("1")), _e("b", "a", message=_user("2")), _e("c", "zz", message=_user("3"))]
    assert [m["content"] for m in build_session_context(es, "b").messages] == ["1", "2"]
    assert [m["content"] for m in build_session_context(es, "c").messages] == ["3"]


def test_long_path_no_recursion() -> None:
    n = 200_000
    es = [_e(f"{i:08x}", f"{i - 1:08x}" if i else None, message=_user(str(i))) for i in range(n)]
    ctx = build_session_context(es)
    assert len(ctx.messages) == n and ctx.messages[-1]["content"] == str(n - 1)


def test_assemble_uses_only_get() -> None:
    es = {e["id"]: e for e in [_e("a", None, message=_user("1")), _e("b", "a", "branch_summary", summary="s", fromId="a")]}
    calls: list[str] = []

    def get(i: str) -> dict | None:
        calls.append(i)
        return es.get(i)

    ctx = assemble_context(ContextPlan(["a", "b", "missing"], None, None, None), get)
    assert [m["role"] for m in ctx.messages] == ["user", "branchSummary"]
    assert calls == ["a", "b", "missing"]


# ---------------------------------------------------------------- convert_to_llm


def test_convert_bash_rules() -> None:
    base = {"role": "bashExecution", "command": "ls", "output": "", "cancelled": False, "truncated": False,
            "timestamp": 5}
    cases = [
        ({}, "Ran `ls`\n(no output)"),
        ({"exitCode": 0}, "Ran `ls`\n(no output)"),
        ({"exitCode": None}, "Ran `ls`\n(no output)"),
        ({"exitCode": "0"}, "Ran `ls`\n(no output)\n\nCommand exited with code 0"),
        ({"exitCode": False}, "Ran `ls`\n(no output)\n\nCommand exited with code false"),
        ({"exitCode": 2.5}, "Ran `ls`\n(no output)\n\nCommand exited with code 2.5"),
        ({"output": "x", "exitCode": 1}, "Ran `ls`\n```\nx\n```\n\nCommand exited with code 1"),
        ({"cancelled": True, "exitCode": 1}, "Ran `ls`\n(no output)\n\n(command cancelled)"),
        ({"truncated": True, "fullOutputPath": "/t"}, "Ran `ls`\n(no output)\n\n[Output truncated. Full output: /t]"),
        ({"truncated": True}, "Ran `ls`\n(no output)"),
    ]
    for extra, text in cases:
        (out,) = convert_to_llm([{**base, **extra}], merge_consecutive_user=False)
        assert out == {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 5}, extra
    for flag in (True, "yes", 1, [], {}):
        assert convert_to_llm([{**base, "excludeFromContext": flag}]) == []
    for flag in (False, 0, "", None):
        assert len(convert_to_llm([{**base, "excludeFromContext": flag}])) == 1


def test_convert_summaries_custom_and_unknown() -> None:
    msgs = [
        {"role": "compactionSummary", "tokensBefore": 1, "timestamp": 1},
        {"role": "branchSummary", "summary": "b", "fromId": "x"},
        {"role": "custom", "customType": "c", "display": True, "timestamp": 3},
        {"role": "system", "content": "kept (Pi 0.87+)"},
        {"role": "hookMessage", "content": "dropped"},
        None,
        "junk",
    ]
    out = convert_to_llm(msgs, merge_consecutive_user=False)
    assert out == [
        {"role": "user", "content": [{"type": "text", "text":
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\nundefined\n</summary>"}],
         "timestamp": 1},
        {"role": "user", "content": [{"type": "text", "text":
            "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nb</summary>"}]},
        {"role": "user", "timestamp": 3},
        {"role": "system", "content": "kept (Pi 0.87+)"},
    ]


def test_merge_consecutive_user() -> None:
    a = _user("one", 1)
    b = {"role": "user", "content": [{"type": "text", "text": "two"}, {"type": "image", "data": "x", "mimeType": "m"}],
         "timestamp": 2, "extra": 1}
    c = {"role": "custom", "customType": "t", "content": "three", "display": True, "timestamp": 3}
    asst = {"role": "assistant", "content": [{"type": "text", "text": "r"}]}
    d = _user("four", 4)
    out = convert_to_llm([a, b, c, asst, d])
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"},
                                     {"type": "image", "data": "x", "mimeType": "m"},
                                     {"type": "text", "text": "three"}], "timestamp": 1},
        asst,
        d,
    ]
    assert out[2] is d  # lone user messages are passed through unchanged
    assert a == _user("one", 1)  # inputs are not modified
    assert len(convert_to_llm([a, b, c, asst, d], merge_consecutive_user=False)) == 5


def test_merge_runs_in_corpus_never_leave_two_users_adjacent(corpus_dir: Path) -> None:
    entries = load_entries(corpus_dir / "hand-custom.jsonl")
    out = convert_to_llm(build_session_context(entries).messages)
    roles = [m["role"] for m in out]
    assert all(not (x == y == "user") for x, y in zip(roles, roles[1:]))
    raw = convert_to_llm(build_session_context(entries).messages, merge_consecutive_user=False)
    assert sum(len(m.get("content", [])) if isinstance(m.get("content"), list) else 1
               for m in raw if m["role"] == "user") == sum(
        len(m["content"]) if isinstance(m["content"], list) else 1 for m in out if m["role"] == "user")


def test_context_lines_break_where_the_escaping_rule_does() -> None:
    """A message's lines break at LF, CR, CRLF, U+2028 and U+2029 (the one escaping
    rule's line breaks) and nowhere else: VT, FF, FS..US and NEL are shown escaped in
    their line (``str.splitlines`` broke there, and counted them as hidden lines)."""
    from sessiontree.view import render_message

    msg = {"role": "user", "content": "one\x0btwo\x0cthree\x1cfour\x85five\u2028six\r\nseven\n"}
    body = [line for line, _ in render_message(0, msg, full=True, max_lines=20)[1:]]
    assert body == ["    one\\x0btwo\\x0cthree\\x1cfour\\x85five", "    six", "    seven"], body
    folded = [line for line, _ in render_message(0, msg, full=False, max_lines=1)[1:]]
    assert folded[0] == body[0] and folded[1].startswith("    ⋯ 2 more lines"), folded
