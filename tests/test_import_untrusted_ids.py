"""An imported session's file name is built from its source session id, which comes from an
untrusted transcript: an id with ``/``, ``..`` or NUL becomes a derived UUID
(``importers._common.session_id_of``), so the file lands directly in ``--to DIR`` (or Pi's
folder), never beside or above it.
"""
import json
import os
import subprocess
import sys
import pytest

from sessiontree.importers import import_claude


def _transcript(path, sid):
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": sid, "cwd": "/p",
         "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": sid, "cwd": "/p",
         "timestamp": "2025-01-01T00:00:01.000Z",
         "message": {"id": "msg1", "role": "assistant", "model": "claude",
                     "content": [{"type": "text", "text": "yo"}],
                     "usage": {"input_tokens": 1, "output_tokens": 2}}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _all_written_in(results, out):
    written = [r.path for r in results if r.path]
    assert written, results
    for p in written:
        assert os.path.dirname(os.path.realpath(p)) == os.path.realpath(out), \
            f"import wrote {p}, outside --to {out}"


@pytest.mark.parametrize("sid", ["../../../escaped", "a/b"])
@pytest.mark.parametrize("backend", ["native", "python"])
def test_import_stays_in_target_dir(tmp_path, monkeypatch, sid, backend):
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    deep = tmp_path / "x" / "y"
    deep.mkdir(parents=True)
    src = deep / "transcript.jsonl"          # stem is not a UUID: sessionId is used
    _transcript(src, sid)
    out = deep / "out"
    results = import_claude(str(src), to=str(out))
    _all_written_in(results, out)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_codex_import_stays_in_target_dir(tmp_path, monkeypatch, backend):
    """Same for Codex: the header id (the session_meta thread id) names the file."""
    from sessiontree.importers import import_codex
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    lines = [
        {"timestamp": "2025-01-01T00:00:00.000Z", "type": "session_meta",
         "payload": {"id": "../../../CODEXESC", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}},
        {"timestamp": "2025-01-01T00:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
        {"timestamp": "2025-01-01T00:00:02.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]}},
    ]
    src = tmp_path / "rollout-x.jsonl"
    src.write_text("".join(json.dumps(l) + "\n" for l in lines))
    out = tmp_path / "a" / "b" / "out"
    out.mkdir(parents=True)
    results = import_codex(str(src), to=str(out))
    _all_written_in(results, out)


# ------------------------------------------------------------------ issue 24, item 3
# A lone surrogate in a session id, an agent id, a root uuid or a cwd (a \udxxx escape
# in the transcript's JSON), and a file or folder name that is not UTF-8, raised
# UnicodeEncodeError out of the import (uuid.uuid5 encodes its name strictly; a cwd
# with a lone surrogate cannot be a folder name as it is).


def _claude_records(sid, *, cwd="/p", root="u1", agent=None, sidechain=False):
    extra = {"isSidechain": sidechain, **({"agentId": agent} if agent is not None else {})}
    if sid is not None:
        extra["sessionId"] = sid
    return [
        {"type": "user", "uuid": root, "parentUuid": None, "cwd": cwd, **extra,
         "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "u2", "parentUuid": root, "cwd": cwd, **extra,
         "timestamp": "2025-01-01T00:00:01.000Z",
         "message": {"id": "msg1", "role": "assistant", "model": "claude", "content": [{"type": "text", "text": "yo"}],
                     "usage": {"input_tokens": 1, "output_tokens": 2}}},
    ]


def _codex_records(sid, *, cwd="/p"):
    return [
        {"timestamp": "2025-01-01T00:00:00.000Z", "type": "session_meta",
         "payload": {"id": sid, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": cwd}},
        {"timestamp": "2025-01-01T00:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
        {"timestamp": "2025-01-01T00:00:02.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]}},
        {"timestamp": "2025-01-01T00:00:03.000Z", "type": "event_msg",
         "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 1, "output_tokens": 1}}}},
    ]


def _write(path: bytes, records) -> bytes:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    return path


_HOSTILE = {
    "claude session id": ("claude", b"s.jsonl", lambda: _claude_records("\ud800x")),
    "claude agent id": ("claude", b"s.jsonl", lambda: _claude_records("s1", agent="\udc00", sidechain=True)),
    "claude root uuid": ("claude", b"s.jsonl", lambda: _claude_records("s2", root="\ud834", sidechain=True)),
    "claude cwd": ("claude", b"s.jsonl", lambda: _claude_records("s3", cwd="/p/\ud800/\udcff")),
    "claude file name": ("claude", b"bad\xff.jsonl", lambda: _claude_records(None)),
    "claude sidechain file name": ("claude", b"bad\xfe.jsonl", lambda: _claude_records(None, sidechain=True)),
    "claude folder name": ("claude", b"d\xfe/s.jsonl", lambda: _claude_records(None)),
    "codex thread id": ("codex", b"rollout-2025-01-01T00-00-00-a.jsonl", lambda: _codex_records("\ud800")),
    "codex cwd": ("codex", b"rollout-2025-01-01T00-00-00-b.jsonl", lambda: _codex_records("t1", cwd="/q/\udfff")),
    "codex file name": ("codex", b"rollout-2025-01-01T00-00-00-\xff.jsonl", lambda: _codex_records("")),
    "codex folder name": ("codex", b"d\xfe/rollout-2025-01-01T00-00-00-c.jsonl", lambda: _codex_records("\udcfe")),
}


@pytest.mark.parametrize("case", sorted(_HOSTILE))
@pytest.mark.parametrize("backend", ["native", "python"])
@pytest.mark.parametrize("to", [True, False], ids=["to", "pi-folder"])
def test_import_hostile_names_and_ids(tmp_path, monkeypatch, case, backend, to):
    from sessiontree import SessionManager
    from sessiontree.importers import import_codex

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    source, name, records = _HOSTILE[case]
    src = os.fsdecode(_write(os.fsencode(tmp_path / "src") + b"/" + name, records()))
    importer = import_claude if source == "claude" else import_codex
    out = str(tmp_path / "out") if to else None
    results = importer(src, to=out, backend=backend)
    written = [r for r in results if r.path]
    assert written and not [r for r in results if r.error], results
    for r in written:
        with SessionManager.open(r.path, backend=backend) as sm:
            assert len(sm) >= 2 and sm.load_report == []
        if to:
            assert os.path.dirname(r.path) == out
    again = importer(src, to=out, backend=backend)  # the same ids: nothing added
    assert [(r.path, r.entries_added) for r in again] == [(r.path, 0) for r in written]


def test_import_command_with_hostile_names(tmp_path):
    src = _write(os.fsencode(tmp_path) + b"/d\xfe/bad\xff.jsonl", _claude_records("\ud800", cwd="/\udc80"))
    env = dict(os.environ, HOME=str(tmp_path / "home"), SESSIONTREE_CATALOG="off")
    for extra in ([], ["--json"]):
        p = subprocess.run([sys.executable, "-m", "sessiontree", "import", "claude", os.fsdecode(src), *extra],
                           capture_output=True, env=env, timeout=120)
        assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
