"""Adversarial inputs, second round: a file rewritten in its middle while open, an
append the loader could not read back, a v1 file whose records repeat an id.

Each test failed before the fix it names (commit message). A same-size rewrite that
keeps the ids and restores the file's mtime is not detected (documented limit).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from _shared import open_quiet

from sessiontree import LoadReportWarning, SessionManager, StaleSessionError

HDR = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'


def ent(i: int, parent: int | None, text: str = "x" * 100) -> bytes:
    d = {
        "type": "message",
        "id": f"{i:08x}",
        "parentId": None if parent is None else f"{parent:08x}",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }
    return json.dumps(d, separators=(",", ":")).encode() + b"\n"


def chain(n: int, text: str = "x" * 100) -> bytes:
    return HDR + b"".join(ent(i, i - 1 if i else None, text) for i in range(n))


def observe(mgr: SessionManager, entry_id: str) -> Any:
    """What a reader gets after the file changed: values, or StaleSessionError."""
    try:
        e = mgr.get_entry(entry_id)
        branch = [x["id"] for x in mgr.get_branch()]
        ctx = [m["content"] for m in mgr.build_session_context().messages]
        return (e, branch, ctx)
    except StaleSessionError:
        return "stale"


# A 200-entry file (~46 KB): entry 100 lies far from both 4 KiB fingerprint ends.
MIDDLE_EDITS = {
    # same length, different content: native shows the new text, python the old
    "content": lambda old: old.replace(b"x" * 100, b"y" * 100),
    # same length, different id: native's get_entry("00000064") returns id "deadbeef"
    "id": lambda old: old.replace(b'"id":"00000064"', b'"id":"deadbeef"'),
    # same length, garbage: native raises json's ValueError (not a SessionError)
    "garbage": lambda old: b"z" * (len(old) - 1) + b"\n",
    # same length, line boundary moved: native raises ValueError
    "shift": lambda old: b"\n" + old[:-2] + b"\n",
}


@pytest.mark.parametrize("edit", sorted(MIDDLE_EDITS))
def test_native_reads_a_middle_rewrite_in_place(edit: str, tmp_path: Path) -> None:
    """Another program rewrites one line in the middle of the file in place (same
    inode, same size; mtime changes). The staleness fingerprint covers only the first
    and last 4 KiB, so the native backend preads the new bytes: wrong data (an entry
    whose id is not the one asked for), or a bare ``ValueError`` from json. The python
    backend keeps returning the old data. Expected: both backends agree, or the native
    one raises ``StaleSessionError`` -- never wrong data or a non-Session exception."""
    data = chain(200)
    old = ent(100, 99)
    off = data.index(old)
    new = MIDDLE_EDITS[edit](old)
    assert len(new) == len(old)
    p = tmp_path / "s.jsonl"
    seen = {}
    for backend in ("python", "native"):
        p.write_bytes(data)
        mgr = open_quiet(p, backend)
        with open(p, "r+b") as f:
            f.seek(off)
            f.write(new)
        try:
            seen[backend] = observe(mgr, "00000064")
        except Exception as e:  # noqa: BLE001 - the bug: json's ValueError escapes
            seen[backend] = f"{type(e).__name__}: {e}"
        finally:
            mgr.close()
    assert seen["native"] == "stale" or seen["native"] == seen["python"], seen["native"]


def _deep(n: int) -> Any:
    x: Any = 1
    for _ in range(n):
        x = [x]
    return x


def test_append_of_too_deep_data_is_refused_before_writing(backend: str, tmp_path: Path) -> None:
    """``append_custom_entry("x", data)`` with ``data`` nested 1,024 deep (1,025 with the
    entry object: over the loader's limit) raises ``ValueError("appended line was not
    accepted as a new entry")`` -- but only after the line was written. The file now
    holds a line every reader skips as ``invalid_json``, while the caller was told the
    append failed. Expected: refuse before writing; the file stays byte-identical."""
    mgr = SessionManager.create("/p", session_dir=str(tmp_path), backend=backend)
    mgr.append_message({"role": "user", "content": "hi", "timestamp": 1})
    mgr.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2})
    path = Path(mgr.session_file)
    before = path.read_bytes()
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 10_000))
    try:
        with pytest.raises(ValueError):
            mgr.append_custom_entry("x", _deep(1024))
    finally:
        sys.setrecursionlimit(old_limit)
        mgr.close()
    assert path.read_bytes() == before
    again = open_quiet(path, backend)
    try:
        assert again.load_report == []
    finally:
        again.close()


def test_listing_of_v1_file_with_repeated_ids_differs_from_open(tmp_path: Path) -> None:
    """A version 1 file whose entries carry (repeated) ``id`` keys: migration gives every
    record a fresh id, so ``open`` has two messages; the listing deduplicates by the
    old ids and counts one, dropping the second text from ``all_messages_text``. The
    listing's stated aim is that "a file lists exactly as it opens"."""
    h = b'{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'

    def m(text: str) -> bytes:
        return json.dumps({
            "type": "message", "id": "a", "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1},
        }).encode() + b"\n"

    p = tmp_path / "s.jsonl"
    p.write_bytes(h + m("first") + m("second"))
    infos = SessionManager.list("/x", session_dir=str(tmp_path))
    for backend in ("python", "native"):
        mgr = open_quiet(p, backend)
        try:
            texts = [e["message"]["content"] for e in mgr.get_entries() if e.get("type") == "message"]
        finally:
            mgr.close()
        assert texts == ["first", "second"]
        assert infos[0].message_count == len(texts)
        assert infos[0].all_messages_text == "first second"
