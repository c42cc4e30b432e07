"""Claude Code import: one hand-made fixture per mapping rule, expected values by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessiontree.importers import import_claude

from _import_helpers import CLAUDE, open_clean, shape, texts, usage_total


def U(n: int) -> str:
    return f"c1a0de00-0000-4000-8000-{n:012d}"


def one(name: str, tmp_path: Path, backend: str):  # type: ignore[no-untyped-def]
    results = import_claude(CLAUDE / name, to=tmp_path, backend=backend)
    assert len(results) == 1, results
    r = results[0]
    assert r.path is not None, r.error
    return r, open_clean(r.path, backend)


def test_linear_ids_usage_and_header(tmp_path: Path, backend: str) -> None:
    r, sm = one("linear.jsonl", tmp_path, backend)
    with sm:
        assert shape(sm) == [(0, U(1), "user"), (1, U(2), "assistant"), (2, U(3), "user"), (3, U(4), "assistant")]
        h = sm.get_header()
        assert h["cwd"] == "/home/dev/proj" and h["timestamp"] == "2025-10-01T10:00:00.000Z"
        assert Path(r.path).name == f"2025-10-01T10-00-00-000Z_{h['id']}.jsonl"
        a = sm[U(2)]
        assert a["timestamp"] == "2025-10-01T10:00:02.500Z"
        m = a["message"]
        assert m["timestamp"] == 1759312802500 and m["stopReason"] == "stop"
        assert (m["api"], m["provider"], m["model"]) == ("anthropic-messages", "anthropic", "claude-sonnet-4-5-20250929")
        # input 10 (non-cached), cacheRead 2000, cacheWrite 100, output 5 -> 2115
        assert m["usage"] == {"input": 10, "output": 5, "cacheRead": 2000, "cacheWrite": 100, "totalTokens": 2115,
                              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
        assert usage_total(sm) == {"input": 18, "output": 8, "cacheRead": 4110, "cacheWrite": 100, "totalTokens": 4236}
        ctx = sm.build_session_context()
        assert texts(ctx.messages) == ["user:What is 2+2?", "assistant:4", "user:Thanks", "assistant:You're welcome."]
        assert ctx.model == {"provider": "anthropic", "modelId": "claude-sonnet-4-5-20250929"}
    assert r.imported == {"user": 2, "assistant": 2} and r.unmapped == {} and r.skipped == {}


def test_rewind_becomes_a_branch(tmp_path: Path, backend: str) -> None:
    _, sm = one("rewind.jsonl", tmp_path, backend)
    with sm:
        assert shape(sm) == [(0, U(1), "user"), (1, U(2), "assistant"), (2, U(3), "user"), (3, U(4), "assistant"),
                             (2, U(5), "user"), (3, U(6), "assistant")]
        assert sm.leaf_id == U(6)
        assert texts(sm.build_session_context().messages) == ["user:Name a colour", "assistant:Red",
                                                               "user:A warm one", "assistant:Orange"]
        assert texts(sm.build_session_context(U(4)).messages)[-1] == "assistant:Blue"


def test_one_response_over_three_lines_is_one_message_with_usage_once(tmp_path: Path, backend: str) -> None:
    r, sm = one("multiblock.jsonl", tmp_path, backend)
    with sm:
        # U2, U3, U4 share message.id msg_03a: one assistant entry with U2's id; U5's parent U4 -> U2
        assert shape(sm) == [(0, U(1), "user"), (1, U(2), "assistant"), (2, U(5), "toolResult"), (3, U(6), "assistant")]
        m = sm[U(2)]["message"]
        assert m["content"] == [
            {"type": "thinking", "thinking": "I should run ls.", "thinkingSignature": "EqQBsig=="},
            {"type": "text", "text": "Running ls."},
            {"type": "toolCall", "id": "toolu_01", "name": "Bash", "arguments": {"command": "ls"}},
        ]
        assert m["stopReason"] == "toolUse"
        # the usage repeats on each line; the last (output 42) is final; counted once
        assert m["usage"]["input"] == 3 and m["usage"]["output"] == 42
        assert m["usage"]["cacheRead"] == 5000 and m["usage"]["cacheWrite"] == 200 and m["usage"]["totalTokens"] == 5245
        tr = sm[U(5)]["message"]
        assert tr == {"role": "toolResult", "toolCallId": "toolu_01", "toolName": "Bash",
                      "content": [{"type": "text", "text": "a.txt\nb.txt"}],
                      "details": {"stdout": "a.txt\nb.txt", "stderr": "", "interrupted": False},
                      "isError": False, "timestamp": 1759312922000}
        assert usage_total(sm) == {"input": 7, "output": 51, "cacheRead": 10300, "cacheWrite": 200, "totalTokens": 10558}
    assert r.imported["assistant (merged into its response)"] == 2


def test_compact_boundary_becomes_a_compaction(tmp_path: Path, backend: str) -> None:
    r, sm = one("compact.jsonl", tmp_path, backend)
    with sm:
        # the boundary (a new root in the source) hangs under its logicalParentUuid
        assert shape(sm) == [(0, U(1), "user"), (1, U(2), "assistant"), (2, U(3), "claude-code:compact_boundary"),
                             (3, U(4), "compaction"), (4, U(5), "user"), (5, U(6), "assistant")]
        c = sm[U(4)]
        assert c["firstKeptEntryId"] == U(3) and c["tokensBefore"] == 15321
        assert c["summary"].startswith("This session is being continued")
        msgs = sm.build_session_context().messages
        assert [m["role"] for m in msgs] == ["compactionSummary", "user", "assistant"]
        assert msgs[0]["summary"] == c["summary"] and msgs[0]["tokensBefore"] == 15321
    assert r.imported["system compact_boundary (-> compaction)"] == 1


def test_titles_become_session_info_and_custom_title_wins(tmp_path: Path, backend: str) -> None:
    r, sm = one("titles.jsonl", tmp_path, backend)
    with sm:
        kinds = [k for _, _, k in shape(sm)]
        assert kinds == ["session_info", "user", "assistant", "session_info", "session_info"]
        assert sm.get_session_name() == "My greeting"
        names = [e["name"] for e in sm.get_entries() if e["type"] == "session_info"]
        assert names == ["Greeting exchange", "Saying hello", "My greeting"]
        assert sm.leaf_id == [e["id"] for e in sm.get_entries()][-1]
        assert texts(sm.build_session_context().messages) == ["user:Hello", "assistant:Hi!"]
    assert r.skipped == {"ai-title (after a custom-title, which wins)": 1}


def test_inline_sidechain_is_its_own_session(tmp_path: Path, backend: str) -> None:
    main, side = import_claude(CLAUDE / "sidechain.jsonl", to=tmp_path, backend=backend)
    assert main.role == "main" and side.role == "subagent"
    assert side.parent_session == main.path
    with open_clean(main.path, backend) as sm:  # type: ignore[arg-type]
        assert shape(sm) == [(0, U(1), "user"), (1, U(2), "assistant"), (2, U(3), "toolResult"), (3, U(4), "assistant")]
        assert sm[U(3)]["message"]["toolName"] == "Task"
    with open_clean(side.path, backend) as sm:  # type: ignore[arg-type]
        assert sm.get_header()["parentSession"] == main.path
        assert shape(sm) == [(0, U(10), "user"), (1, U(11), "assistant")]
        assert usage_total(sm)["totalTokens"] == 26


def test_subagent_transcripts_in_the_subagents_folder(tmp_path: Path, backend: str) -> None:
    sid = "5e551017-0000-4000-8000-0000000000ab"
    main, sub = import_claude(CLAUDE / f"{sid}.jsonl", to=tmp_path, backend=backend)
    assert main.session_id == sid and sub.role == "subagent" and sub.parent_session == main.path
    # importing the subagent file alone names the same parent and gives the same file
    again = import_claude(CLAUDE / sid / "subagents" / "agent-planner1.jsonl", to=tmp_path, backend=backend)
    assert [(r.path, r.parent_session, r.entries_added) for r in again] == [(sub.path, main.path, 0)]
    with open_clean(sub.path, backend) as sm:  # type: ignore[arg-type]
        assert texts(sm.build_session_context().messages) == ["user:plan it", "assistant:Step 1, step 2."]


def test_records_without_pi_equivalent_keep_the_chain(tmp_path: Path, backend: str) -> None:
    r, sm = one("no-equivalent.jsonl", tmp_path, backend)
    with sm:
        rows = shape(sm)
        kinds = [(d, k) for d, _, k in rows]
        # one chain, no false roots: progress skipped and U3 re-linked to U1 (through the snapshot)
        assert kinds == [(0, "claude-code:queue-operation"), (1, "user"), (2, "claude-code:file-history-snapshot"),
                         (3, "assistant"), (4, "claude-code:attachment"), (5, "claude-code:system"), (6, "user"),
                         (7, "assistant")]
        assert U(2) not in sm
        assert sm[U(5)]["data"]["subtype"] == "local_command"
        assert texts(sm.build_session_context().messages) == ["user:Run the tests", "assistant:All tests pass.",
                                                               "user:Thanks", "assistant:Any time."]
    assert r.custom == {"queue-operation": 1, "file-history-snapshot": 1, "attachment": 1, "system local_command": 1}
    assert r.skipped == {"progress (children re-linked to its parent)": 1}


def test_damaged_source_is_reported_never_fatal(tmp_path: Path, backend: str) -> None:
    r, sm = one("damaged.jsonl", tmp_path, backend)
    with sm:
        roots = [i for d, i, _ in shape(sm) if d == 0]
        assert roots == [U(1), U(7), U(9)]  # the source's root, the broken cycle, the orphan
        assert sm[U(2)]["message"]["role"] == "assistant"  # the first definition of a duplicate uuid stands
        assert sm[U(3)]["customType"] == "claude-code:brand-new-record"
        assert sm[U(4)]["parentId"] == U(3) and sm[U(6)]["parentId"] == U(4)
    assert r.skipped == {"invalid JSON": 1, "not a JSON object": 1, "user (duplicate uuid)": 1, "user (no message)": 1}
    assert r.unmapped["parentUuid cycle (broken)"] == 1 and r.unmapped["parentUuid not in the file"] == 1
    assert any(p.startswith("line 2:") for p in r.problems)


def test_source_without_assistant_still_gives_a_file(tmp_path: Path, backend: str) -> None:
    r, sm = one("user-only.jsonl", tmp_path, backend)
    with sm:
        assert [k for _, _, k in shape(sm)] == ["user", "user"]
        assert sm[U(2)]["message"]["content"] == [{"type": "text", "text": "Hello?"},
                                                  {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
    assert r.created


@pytest.mark.parametrize("name", sorted(p.name for p in CLAUDE.glob("*.jsonl")))
def test_reimport_is_idempotent_and_source_untouched(name: str, tmp_path: Path, backend: str) -> None:
    src = CLAUDE / name
    before = src.read_bytes()
    first = import_claude(src, to=tmp_path, backend=backend)
    images = {r.path: Path(r.path).read_bytes() for r in first if r.path}
    second = import_claude(src, to=tmp_path, backend=backend)
    assert [r.path for r in second] == [r.path for r in first]
    assert all(r.entries_added == 0 and not r.created and not r.conflicts for r in second)
    assert {p: Path(p).read_bytes() for p in images} == images
    assert src.read_bytes() == before
    for r in first:
        if r.path:
            open_clean(r.path, backend).close()


def test_grown_source_is_brought_up_to_date_by_appending(tmp_path: Path, backend: str) -> None:
    lines = (CLAUDE / "multiblock.jsonl").read_bytes().splitlines(keepends=True)
    src = tmp_path / "src" / "grow.jsonl"
    src.parent.mkdir()
    out = tmp_path / "out"
    # import while the response is being written: only its first two block lines exist
    src.write_bytes(b"".join(lines[:3]))
    (r1,) = import_claude(src, to=out, backend=backend)
    first_image = Path(r1.path).read_bytes()  # type: ignore[arg-type]
    src.write_bytes(b"".join(lines))
    (r2,) = import_claude(src, to=out, backend=backend)
    assert r2.path == r1.path and not r2.created and not r2.conflicts
    assert Path(r2.path).read_bytes().startswith(first_image)  # type: ignore[arg-type]
    assert r2.continued == 1 and r2.entries_added == 3  # continuation + toolResult + final answer
    with open_clean(r2.path, backend) as sm:  # type: ignore[arg-type]
        assert texts(sm.build_session_context().messages) == [
            "user:List the files", "assistant:<think>I should run ls.|Running ls.", "assistant:<call Bash>",
            "toolResult:a.txt\nb.txt", "assistant:Two files: a.txt and b.txt."]
        # usage still counts once: the continuation carries the difference (output 42 - 1)
        assert usage_total(sm) == {"input": 7, "output": 51, "cacheRead": 10300, "cacheWrite": 200, "totalTokens": 10558}
    (r3,) = import_claude(src, to=out, backend=backend)
    assert r3.entries_added == 0 and r3.continued == 0 and not r3.conflicts


@pytest.mark.parametrize("name", sorted(p.name for p in CLAUDE.glob("*.jsonl")))
def test_every_source_message_appears_in_the_import(name: str, tmp_path: Path, backend: str) -> None:
    """Round trip: each user/assistant text, tool call and tool result of the source is in a file."""
    results = import_claude(CLAUDE / name, to=tmp_path, backend=backend)
    dumped = "".join(Path(r.path).read_text() for r in results if r.path)
    got = [json.loads(line) for line in dumped.splitlines()]
    blob = json.dumps(got, ensure_ascii=False)
    for line in (CLAUDE / name).read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("type") not in ("user", "assistant") or "message" not in rec:
            continue
        if rec.get("uuid") == U(2) and name == "damaged.jsonl" and rec["type"] == "user":
            continue  # the duplicate uuid (reported)
        content = rec["message"]["content"]
        for b in ([{"type": "text", "text": content}] if isinstance(content, str) else content):
            key = {"text": "text", "thinking": "thinking", "tool_use": "id", "tool_result": "tool_use_id"}.get(b["type"])
            if key:
                assert json.dumps(b[key], ensure_ascii=False) in blob, (name, b)


def test_home_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.importers import claude_sources

    proj = tmp_path / "projects" / "-home-dev-proj"
    shutil.copytree(CLAUDE, proj)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    found = claude_sources()
    assert str(proj / "linear.jsonl") in found
    assert str(proj / "5e551017-0000-4000-8000-0000000000ab" / "subagents" / "agent-planner1.jsonl") in found
