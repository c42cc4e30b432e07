"""Importers on real input (issue 23, item 5): a project folder as PATH, another agent's
file refused with the importer that reads it, Codex's JSON shell output, an image with
no URL, Claude Code's ``<synthetic>`` model, and a subagent's ``parentSession`` only to
a file that exists or is written by the same import.

The sources are written here from the formats' facts (docs/IMPORT.md), never copied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sessiontree.importers import import_claude, import_codex

from _import_helpers import open_clean

SID = "5e551025-0000-4000-8000-000000000001"


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(dumps(r) + "\n" for r in records))
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, timeout=300)


def claude_session(sid: str = SID, model: str = "claude-sonnet-4-5", first_synthetic: bool = False,
                   agent: str | None = None) -> list[dict[str, Any]]:
    def rec(n: int, parent: int | None, kind: str, **more: Any) -> dict[str, Any]:
        d = {"parentUuid": None if parent is None else f"c1a0de25-0000-4000-8000-{parent:012d}",
             "isSidechain": agent is not None, "userType": "external", "cwd": "/home/dev/app", "sessionId": sid,
             "version": "2.1.90", "type": kind, "uuid": f"c1a0de25-0000-4000-8000-{n:012d}",
             "timestamp": f"2026-04-01T09:00:{n:02d}.000Z"}
        if agent:
            d["agentId"] = agent
        d.update(more)
        return d

    usage = {"input_tokens": 4, "output_tokens": 6, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    out = [rec(1, None, "user", message={"role": "user", "content": "hello"})]
    n = 2
    if first_synthetic:  # Claude Code's placeholder for an API error, before any real response
        out.append(rec(2, 1, "assistant", isApiErrorMessage=True, message={
            "id": "msg_syn", "role": "assistant", "model": "<synthetic>", "usage": {"input_tokens": 0, "output_tokens": 0},
            "content": [{"type": "text", "text": "API Error: 529 overloaded"}], "stop_reason": "stop_sequence"}))
        out.append(rec(3, 2, "user", message={"role": "user", "content": "try again"}))
        n = 4
    out.append(rec(n, n - 1, "assistant", message={"id": f"msg_{n}", "role": "assistant", "model": model, "usage": usage,
                                                    "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}))
    return out


def codex_rollout(tid: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    meta = {"id": tid, "timestamp": "2026-04-01T09:00:00.000Z", "cwd": "/home/dev/app", "originator": "codex_cli_rs",
            "cli_version": "0.50.0", "source": "cli", "model_provider": "openai"}
    lines = [{"timestamp": "2026-04-01T09:00:00.000Z", "type": "session_meta", "payload": meta},
             {"timestamp": "2026-04-01T09:00:00.100Z", "type": "turn_context",
              "payload": {"cwd": "/home/dev/app", "model": "gpt-5-codex", "effort": "medium"}}]
    for k, item in enumerate(items):
        kind = "event_msg" if item.get("type") in ("token_count", "user_message") else "response_item"
        lines.append({"timestamp": f"2026-04-01T09:00:{k + 1:02d}.000Z", "type": kind, "payload": item})
    return lines


def rollout_path(folder: Path, tid: str) -> Path:
    return folder / "sessions" / "2026" / "04" / "01" / f"rollout-2026-04-01T09-00-00-{tid}.jsonl"


def test_a_project_folder_imports_its_sessions(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-dev-app"
    write(project / f"{SID}.jsonl", claude_session())
    other = "5e551025-0000-4000-8000-000000000002"
    write(project / f"{other}.jsonl", claude_session(other))
    write(project / SID / "subagents" / "agent-x1.jsonl", claude_session(SID, agent="x1"))
    out = tmp_path / "out"
    p = run("import", "claude", str(project), "--to", str(out), "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert sorted((r["role"], r["sessionId"] == SID) for r in rows) == [("main", False), ("main", True),
                                                                        ("subagent", False)]
    assert all(r["path"] for r in rows)
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run("import", "claude", str(empty))
    assert p.returncode != 0 and "no .jsonl file" in p.stderr


def test_the_wrong_importer_names_the_right_one(tmp_path: Path) -> None:
    claude_file = write(tmp_path / "c" / f"{SID}.jsonl", claude_session())
    codex_file = write(rollout_path(tmp_path / "x", "0199b000-0000-7000-8000-000000000001"), codex_rollout(
        "0199b000-0000-7000-8000-000000000001", [{"type": "message", "role": "user",
                                                  "content": [{"type": "input_text", "text": "hi"}]}]))
    pi_file = tmp_path / "pi.jsonl"
    pi_file.write_text(dumps({"type": "session", "version": 3, "id": "p", "timestamp": "2026-04-01T09:00:00.000Z",
                              "cwd": "/"}) + "\n")
    for kind, path, right in (("codex", claude_file, "sessiontree import claude"),
                              ("claude", codex_file, "sessiontree import codex"),
                              ("claude", pi_file, "already a Pi session")):
        p = run("import", kind, str(path), "--to", str(tmp_path / "out"))
        assert p.returncode == 1, (kind, p.stdout)
        assert right in p.stdout, p.stdout
    [r] = import_codex(claude_file, to=tmp_path / "out")
    assert r.path is None and "import it with `sessiontree import claude`" in (r.error or "")
    assert not (tmp_path / "out").exists()


def test_codex_shell_output_json_becomes_its_text_and_exit_code(tmp_path: Path, backend: str) -> None:
    tid = "0199b000-0000-7000-8000-000000000003"

    def call(cid: str) -> dict[str, Any]:
        return {"type": "function_call", "name": "shell", "call_id": cid,
                "arguments": dumps({"command": ["bash", "-lc", "make"]})}

    def result(cid: str, text: str, code: int) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": cid,
                "output": dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.4}})}

    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "build it"},
                                                              {"type": "input_image", "image_url": None}]},
             call("c1"), result("c1", "make: *** [all] Error 2", 2),
             call("c2"), result("c2", "ok", 0),
             call("c3"), {"type": "function_call_output", "call_id": "c3", "output": "plain text"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Built."}]},
             {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10, "output_tokens": 3},
                                              "last_token_usage": {"input_tokens": 10, "output_tokens": 3}}}]
    src = write(rollout_path(tmp_path, tid), codex_rollout(tid, items))
    [r] = import_codex(src, to=tmp_path / "out", backend=backend)
    with open_clean(r.path, backend) as sm:  # type: ignore[arg-type]
        results = [e["message"] for e in sm.get_entries() if e["type"] == "message"
                   and e["message"]["role"] == "toolResult"]
        assert [(m["toolCallId"], m["content"], m["isError"]) for m in results] == [
            ("c1", [{"type": "text", "text": "make: *** [all] Error 2"}], True),
            ("c2", [{"type": "text", "text": "ok"}], False),
            ("c3", [{"type": "text", "text": "plain text"}], False),
        ]
        first_user = next(e["message"] for e in sm.get_entries() if e["type"] == "message"
                          and e["message"]["role"] == "user")
        assert first_user["content"] == [{"type": "text", "text": "build it"}, {"type": "text", "text": "[image]"}]


def test_claude_synthetic_model_is_no_model_in_usage(tmp_path: Path, backend: str,
                                                     monkeypatch: Any) -> None:
    src = write(tmp_path / "c" / f"{SID}.jsonl", claude_session(first_synthetic=True))
    out = tmp_path / "out"
    [r] = import_claude(src, to=out, backend=backend)
    with open_clean(r.path, backend) as sm:  # type: ignore[arg-type]
        models = sm.get_usage_totals().models
        assert [(p, m) for p, m, _n in models] == [("anthropic", "claude-sonnet-4-5")]
        err = next(e["message"] for e in sm.get_entries() if e["type"] == "message"
                   and e["message"].get("stopReason") == "error")
        assert err["model"] == "claude-sonnet-4-5" and err["usage"]["totalTokens"] == 0
    monkeypatch.setenv("SESSIONTREE_CATALOG", str(tmp_path / "cat.sqlite3"))
    p = run("usage", "model", str(out), "--json")
    assert p.returncode == 0, p.stderr
    assert "<synthetic>" not in p.stdout and "claude-sonnet-4-5" in p.stdout


def test_a_subagent_alone_links_only_to_a_file_that_exists(tmp_path: Path, backend: str) -> None:
    project = tmp_path / "projects" / "-home-dev-app"
    write(project / f"{SID}.jsonl", claude_session())
    agent = write(project / SID / "subagents" / "agent-z9.jsonl", claude_session(SID, agent="z9"))
    out = tmp_path / "out"
    [alone] = import_claude(agent, to=out, backend=backend)
    assert alone.parent_session is None
    with open_clean(alone.path, backend) as sm:  # type: ignore[arg-type]
        header = sm.get_header()
        assert "parentSession" not in header and header["parentSessionId"] == SID
    # With its session (imported first, by the same call): the link is the file written.
    out2 = tmp_path / "out2"
    main, sub = import_claude(project / f"{SID}.jsonl", to=out2, backend=backend)
    assert sub.parent_session == main.path and os.path.isfile(main.path or "")
    # A session with no message is never written: its subagent names its id, not a
    # path with a 1970 time.
    empty_sid = "5e551025-0000-4000-8000-000000000009"
    write(project / f"{empty_sid}.jsonl", [{"type": "summary", "summary": "nothing", "leafUuid": "x"}])
    write(project / empty_sid / "subagents" / "agent-e1.jsonl", claude_session(empty_sid, agent="e1"))
    results = import_claude(project / f"{empty_sid}.jsonl", to=tmp_path / "out3", backend=backend)
    sub3 = next(r for r in results if r.role == "subagent")
    assert sub3.path is not None and sub3.parent_session is None
    assert "1970" not in json.dumps([r.to_json() for r in results])
    with open_clean(sub3.path, backend) as sm:
        assert sm.get_header()["parentSessionId"] == empty_sid
