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
