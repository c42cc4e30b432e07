"""Codex import: one hand-made rollout per mapping rule, expected values by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessiontree.importers import import_codex
from sessiontree.importers._common import derive_id

from _import_helpers import CODEX, open_clean, shape, texts, usage_total


def rollout(n: int) -> Path:
    (hit,) = CODEX.glob(f"rollout-*-0199a000-0000-7000-8000-00000000000{n}.jsonl")
    return hit


def tid(n: int) -> str:
    return f"0199a000-0000-7000-8000-00000000000{n}"


def one(n: int, tmp_path: Path, backend: str, **kw):  # type: ignore[no-untyped-def]
    (r,) = import_codex(rollout(n), to=tmp_path, backend=backend, **kw)
    assert r.path is not None, r.error
    return r, open_clean(r.path, backend)


def kinds(sm) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    return [(d, k) for d, _, k in shape(sm)]


def test_linear_reasoning_usage_and_duplicate_events(tmp_path: Path, backend: str) -> None:
    r, sm = one(1, tmp_path, backend)
    with sm:
        assert sm.session_id == tid(1) and sm.get_header()["cwd"] == "/home/dev/app"
        assert kinds(sm) == [(0, "codex:session_meta"), (1, "codex:context"), (2, "model_change"),
                             (3, "thinking_level_change"), (4, "user"), (5, "assistant")]
        ids = [e["id"] for e in sm.get_entries()]
        # ids: thread id + line position after session_meta (line 2 -> 1, ... line 8 -> 5)
        assert ids[0] == derive_id("codex", tid(1), 0) and ids[4] == derive_id("codex", tid(1), 3)
        a = sm.get_entries()[-1]["message"]
        assert a["content"][0]["type"] == "thinking" and a["content"][0]["thinking"] == "**Greeting**"
        sig = json.loads(a["content"][0]["thinkingSignature"])  # the reasoning item, as Pi's provider keeps it
        assert sig["encrypted_content"] == "gAAAAenc1"
        assert a["content"][1] == {"type": "text", "text": "Hi!"}
        # Codex counts the 1000 cached tokens inside input_tokens (1200); Pi does not
        assert a["usage"] == {"input": 200, "output": 30, "cacheRead": 1000, "cacheWrite": 0, "totalTokens": 1230,
                              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
        assert (a["api"], a["provider"], a["model"], a["stopReason"]) == ("openai-responses", "openai", "gpt-5-codex", "stop")
        ctx = sm.build_session_context()
        assert texts(ctx.messages)[1:] == ["user:Say hi", "assistant:<think>**Greeting**|Hi!"]
        assert ctx.messages[0]["role"] == "custom" and ctx.messages[0]["customType"] == "codex:context"
        assert ctx.model == {"provider": "openai", "modelId": "gpt-5-codex"} and ctx.thinking_level == "medium"
    assert r.skipped == {"event_msg user_message (repeats a response_item)": 1,
                         "event_msg agent_reasoning (repeats a response_item)": 1,
                         "event_msg agent_message (repeats a response_item)": 1,
                         "event_msg token_count (re-emitted: total unchanged)": 1,
                         "event_msg task_complete (turn lifecycle)": 1}


def test_tool_calls_join_outputs_on_call_id(tmp_path: Path, backend: str) -> None:
    _, sm = one(2, tmp_path, backend)
    with sm:
        assert [k for _, k in kinds(sm)][4:] == ["assistant", "toolResult", "assistant", "toolResult", "assistant"]
        es = sm.get_entries()
        call = es[4]["message"]
        assert call["content"] == [{"type": "toolCall", "id": "call_A", "name": "shell", "arguments": {"command": ["ls"]}}]
        assert call["stopReason"] == "toolUse"
        assert es[5]["message"]["toolCallId"] == "call_A" and es[5]["message"]["toolName"] == "shell"
        assert es[6]["message"]["content"][0]["arguments"] == {"input": "*** Begin Patch\n*** End Patch"}
        assert es[7]["message"]["toolName"] == "apply_patch" and es[7]["message"]["content"] == [{"type": "text", "text": "Done!"}]
        # three responses: (500-0)+20, (600-500)+15 +500 cached, (700-600)+5 +600 cached
        assert usage_total(sm) == {"input": 700, "output": 40, "cacheRead": 1100, "cacheWrite": 0, "totalTokens": 1840}


def test_rollback_moves_the_leaf_back_and_makes_a_branch(tmp_path: Path, backend: str) -> None:
    _, sm = one(3, tmp_path, backend)
    with sm:
        assert kinds(sm)[3:] == [(3, "user"), (4, "assistant"), (5, "user"), (6, "assistant"), (5, "user"), (6, "assistant")]
        assert texts(sm.build_session_context().messages) == [
            "user:First question", "assistant:First answer", "user:Second question, rephrased", "assistant:Better second answer"]
        # the rolled-back turn stays in the tree, on its own branch, with its usage
        assert usage_total(sm) == {"input": 310, "output": 32, "cacheRead": 200, "cacheWrite": 0, "totalTokens": 542}


def test_turn_context_model_and_effort_changes(tmp_path: Path, backend: str) -> None:
    _, sm = one(4, tmp_path, backend)
    with sm:
        changes = [(e["type"], e.get("modelId") or e.get("thinkingLevel")) for e in sm.get_entries()
                   if e["type"] in ("model_change", "thinking_level_change")]
        # the second turn_context repeats the first: nothing; the third changes both
        assert changes == [("model_change", "gpt-5-codex"), ("thinking_level_change", "medium"),
                           ("model_change", "gpt-5"), ("thinking_level_change", "high")]
        last = sm.get_entries()[-1]["message"]
        assert last["model"] == "gpt-5"
        ctx = sm.build_session_context()
        assert ctx.model == {"provider": "openai", "modelId": "gpt-5"} and ctx.thinking_level == "high"


def test_compacted_becomes_a_compaction(tmp_path: Path, backend: str) -> None:
    r, sm = one(5, tmp_path, backend)
    with sm:
        es = sm.get_entries()
        comp = next(e for e in es if e["type"] == "compaction")
        boundary = sm[comp["firstKeptEntryId"]]
        assert boundary["customType"] == "codex:compacted" and comp["parentId"] == boundary["id"]
        assert comp["summary"] == "Summary: the user started a long task." and comp["tokensBefore"] == 9100
        assert boundary["data"]["replacement_history"][0]["role"] == "user"
        assert texts(sm.build_session_context().messages) == [
            "compactionSummary:Summary: the user started a long task.", "user:Continue", "assistant:Continuing."]
    assert r.skipped == {"event_msg context_compacted (repeats a response_item)": 1}


def test_fork_and_subagent_get_parent_session(tmp_path: Path, backend: str) -> None:
    (parent1,) = import_codex(rollout(1), to=tmp_path, backend=backend)
    (parent2,) = import_codex(rollout(2), to=tmp_path, backend=backend)
    (fork,) = import_codex(rollout(6), to=tmp_path, backend=backend)
    (sub,) = import_codex(rollout(7), to=tmp_path, backend=backend)
    assert fork.role == "fork" and fork.parent_session == parent1.path
    assert sub.role == "subagent" and sub.parent_session == parent2.path
    with open_clean(fork.path, backend) as sm:  # type: ignore[arg-type]
        assert sm.get_header()["parentSession"] == parent1.path


def test_parent_not_found_is_reported(tmp_path: Path, backend: str) -> None:
    lone = tmp_path / "lone" / rollout(6).name
    lone.parent.mkdir()
    shutil.copy(rollout(6), lone)
    (r,) = import_codex(lone, to=tmp_path / "out", backend=backend)
    assert r.parent_session is None and r.unmapped["parentSession (parent thread's rollout not found)"] == 1


def test_response_in_progress_is_held_back_then_imported_whole(tmp_path: Path, backend: str) -> None:
    src = tmp_path / "sessions" / "2025" / "10" / "02" / rollout(8).name
    src.parent.mkdir(parents=True)
    shutil.copy(rollout(8), src)
    out = tmp_path / "out"
    (r1,) = import_codex(src, to=out, backend=backend)
    assert r1.skipped == {"response still being written at the end of the file (held back)": 1}
    with open_clean(r1.path, backend) as sm:  # type: ignore[arg-type]
        assert texts(sm.build_session_context().messages)[-1] == "user:And now?"
    with open(src, "a") as f:
        f.write(json.dumps({"timestamp": "2025-10-02T08:12:05.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Now this."}]}}) + "\n")
        f.write(json.dumps({"timestamp": "2025-10-02T08:12:05.100Z", "type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage": {"input_tokens": 250, "cached_input_tokens": 100,
            "output_tokens": 10, "reasoning_output_tokens": 4, "total_tokens": 260},
            "last_token_usage": {"input_tokens": 150, "cached_input_tokens": 100, "output_tokens": 7,
            "reasoning_output_tokens": 4, "total_tokens": 157}}}}) + "\n")
    (r2,) = import_codex(src, to=out, backend=backend)
    assert r2.path == r1.path and r2.entries_added == 1 and not r2.conflicts
    with open_clean(r2.path, backend) as sm:  # type: ignore[arg-type]
        last = sm.get_entries()[-1]["message"]
        assert texts([last]) == ["assistant:<think>**Thinking**|Now this."]
        assert last["usage"]["input"] == 50 and last["usage"]["cacheRead"] == 100 and last["usage"]["output"] == 7


def test_include_incomplete_imports_it_now(tmp_path: Path, backend: str) -> None:
    _, sm = one(8, tmp_path, backend, include_incomplete=True)
    with sm:
        assert texts(sm.build_session_context().messages)[-1] == "assistant:<think>**Thinking**"


def test_damaged_rollout_is_reported_never_fatal(tmp_path: Path, backend: str) -> None:
    r, sm = one(9, tmp_path, backend)
    with sm:
        types = [e.get("customType") or e["type"] for e in sm.get_entries()]
        assert types == ["codex:session_meta", "message", "codex:brand_new_line_type", "codex:response_item.brand_new_item",
                         "codex:event_msg.brand_new_event", "message", "message"]
        orphan = sm.get_entries()[-1]["message"]
        assert orphan["role"] == "toolResult" and orphan["toolName"] == ""
    assert r.skipped["invalid JSON"] == 1 and r.skipped["not a JSON object"] == 1
    assert r.skipped["response_item (payload is not an object)"] == 1
    assert r.unmapped["function_call_output without its call (toolName empty)"] == 1


@pytest.mark.parametrize("n", range(1, 10))
def test_reimport_is_idempotent_and_source_untouched(n: int, tmp_path: Path, backend: str) -> None:
    before = rollout(n).read_bytes()
    (a,) = import_codex(rollout(n), to=tmp_path, backend=backend)
    image = Path(a.path).read_bytes()  # type: ignore[arg-type]
    (b,) = import_codex(rollout(n), to=tmp_path, backend=backend)
    assert b.path == a.path and b.entries_added == 0 and not b.created and not b.conflicts
    assert Path(b.path).read_bytes() == image  # type: ignore[arg-type]
    assert rollout(n).read_bytes() == before


@pytest.mark.parametrize("n", range(1, 10))
def test_every_source_message_appears_in_the_import(n: int, tmp_path: Path, backend: str) -> None:
    (r,) = import_codex(rollout(n), to=tmp_path, backend=backend, include_incomplete=True)
    blob = Path(r.path).read_text()  # type: ignore[arg-type]
    for line in rollout(n).read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        p = rec.get("payload") if isinstance(rec, dict) else None
        if not isinstance(p, dict) or rec.get("type") != "response_item":
            continue
        if p.get("type") == "message":
            for b in p["content"]:
                assert json.dumps(b["text"], ensure_ascii=False) in blob
        elif p.get("type") in ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"):
            assert json.dumps(p["call_id"]) in blob


def test_home_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.importers import codex_sources

    dest = tmp_path / "sessions" / "2025" / "10" / "02"
    shutil.copytree(CODEX, dest)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    assert len(codex_sources()) == 9


# --------------------------------------------------------------- issue 24, item 5
# Records before the first session_meta were keyed like those after it: the same ids,
# a cycle of parents the rollback walk followed forever (memory growing ~65 MB/s), and
# on a first import messages dropped as "conflicts". The fork parent search globbed
# `**` through looping folder links. Each case runs in a child process with a timeout:
# a hang fails, it does not stop the suite.

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from sessiontree import SessionManager  # noqa: E402


def _rec(ts: int, kind: str, payload: dict) -> dict:  # type: ignore[type-arg]
    return {"timestamp": f"2025-01-01T00:00:{ts:02d}.000Z", "type": kind, "payload": payload}


def _user(ts: int, text: str) -> dict:  # type: ignore[type-arg]
    return _rec(ts, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def _answer(ts: int, text: str) -> list[dict]:  # type: ignore[type-arg]
    return [_rec(ts, "response_item", {"type": "message", "role": "assistant",
                                       "content": [{"type": "output_text", "text": text}]}),
            _rec(ts, "event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 1,
                                                                                     "output_tokens": 1}}})]


def _meta(ts: int, tid_: str, **kw: str) -> dict:  # type: ignore[type-arg]
    return _rec(ts, "session_meta", {"id": tid_, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p", **kw})


def _import_in_child(src: Path, to: Path, backend: str, env: dict[str, str] | None = None) -> list[dict]:  # type: ignore[type-arg]
    code = ("import json, sys; from sessiontree.importers import import_codex; "
            "print(json.dumps([r.to_json() for r in import_codex(sys.argv[1], to=sys.argv[2], backend=sys.argv[3])]))")
    p = subprocess.run([sys.executable, "-c", code, str(src), str(to), backend], capture_output=True, text=True,
                       timeout=60, env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)  # type: ignore[no-any-return]


def _user_texts(path: str, backend: str) -> list[str]:
    with open_clean(path, backend) as sm:
        return [b["text"] for e in sm.get_entries() if e["type"] == "message" and e["message"]["role"] in ("user", "assistant")
                for b in e["message"]["content"] if b["type"] == "text"]


@pytest.mark.parametrize("records, texts_", [
    # The attack's four records: a message before session_meta, then a rollback.
    ([_user(0, "before"), _meta(1, "t1"), _user(2, "after"), _rec(3, "event_msg", {"type": "thread_rolled_back",
                                                                                   "num_turns": 1})],
     ["before", "after"]),
    ([_user(0, "b"), *_answer(0, "b-answer"), _meta(1, "t2"), _user(2, "a"), *_answer(2, "a-answer")],
     ["b", "b-answer", "a", "a-answer"]),
    # A segment's id met again, and a meta id crafted to repeat the thread's.
    ([_meta(0, "t3"), _user(1, "one"), _meta(2, "other"), _user(3, "two"), _meta(4, "t3"), _user(5, "three"),
      _rec(6, "event_msg", {"type": "thread_rolled_back", "num_turns": 5}), _user(7, "four")],
     ["one", "two", "three", "four"]),
], ids=["attack", "prelude-with-answer", "segments-met-again"])
def test_ids_are_unique_and_every_walk_ends(tmp_path: Path, backend: str, records: list[dict],  # type: ignore[type-arg]
                                            texts_: list[str]) -> None:
    src = tmp_path / "rollout-2025-01-01T00-00-00-x.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    (r,) = _import_in_child(src, tmp_path / "out", backend)
    assert r["path"] and not r["conflicts"], r
    assert _user_texts(r["path"], backend) == texts_  # nothing dropped
    size = os.path.getsize(r["path"])
    (again,) = _import_in_child(src, tmp_path / "out", backend)
    assert again["entriesAdded"] == 0 and not again["conflicts"] and os.path.getsize(r["path"]) == size


def test_fork_parent_search_ends_with_looping_folder_links(tmp_path: Path, backend: str) -> None:
    home = tmp_path / "codex"
    day = home / "sessions" / "2025" / "01" / "01"
    day.mkdir(parents=True)
    (home / "sessions" / "a").symlink_to(".")
    (home / "sessions" / "b").symlink_to(".")
    (home / "sessions" / "2025" / "up").symlink_to("..")
    parent = day / f"rollout-2025-01-01T00-00-00-{tid(5)}aa.jsonl"
    parent.write_text("".join(json.dumps(r) + "\n" for r in [_meta(0, tid(5) + "aa"), _user(1, "p"), *_answer(1, "q")]))
    fork = day / "rollout-2025-01-01T00-00-01-fork.jsonl"
    fork.write_text("".join(json.dumps(r) + "\n" for r in [_meta(0, "f1", forked_from_id=tid(5) + "aa"), _user(1, "x"),
                                                           *_answer(1, "y")]))
    orphan = day / "rollout-2025-01-01T00-00-02-orphan.jsonl"
    orphan.write_text("".join(json.dumps(r) + "\n" for r in [_meta(0, "f2", forked_from_id="nowhere"), _user(1, "x"),
                                                             *_answer(1, "y")]))
    env = {"CODEX_HOME": str(home), "HOME": str(tmp_path)}
    (r,) = _import_in_child(fork, tmp_path / "out", backend, env)
    # Found through the real folder; its file is not imported by this import, so the
    # link is the parent's id in the header (docs/IMPORT.md), not a path.
    assert r["parentSession"] is None and not any("not found" in k for k in r["unmapped"])
    assert any("was not imported" in k for k in r["unmapped"])
    (r,) = _import_in_child(orphan, tmp_path / "out", backend, env)
    assert r["path"] and r["parentSession"] is None
    assert any("rollout not found" in k for k in r["unmapped"])
    # With the parent imported first, the fork links to its file.
    (rp,) = _import_in_child(parent, tmp_path / "out", backend, env)
    (r,) = _import_in_child(fork, tmp_path / "out", backend, env)
    assert r["parentSession"] == rp["path"]
