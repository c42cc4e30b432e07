"""``SessionManager.flush``: a new session's file written before its first assistant
message (what the framework stores need to acknowledge every write)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiontree import SessionFileExistsError, SessionManager


def test_flush_writes_the_file_now(tmp_path: Path, backend: str) -> None:
    sm = SessionManager.create("/p", session_dir=str(tmp_path), backend=backend)
    path = sm.session_file
    assert path is not None and not os.path.exists(path)
    first = sm.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert not os.path.exists(path)  # Pi's rule: not before an assistant message
    assert sm.flush() == path
    with SessionManager.open(path, backend=backend) as again:
        assert [e["id"] for e in again.get_entries()] == [first]
        assert again.get_header()["id"] == sm.session_id
    second = sm.append_custom_entry("x", {"n": 1})  # written at once from now on
    with SessionManager.open(path, backend=backend) as again:
        assert [e["id"] for e in again.get_entries()] == [first, second]
    size = os.path.getsize(path)
    assert sm.flush() == path  # on disk already: nothing to do
    assert os.path.getsize(path) == size
    sm.close()


def test_flush_of_a_header_alone(tmp_path: Path, backend: str) -> None:
    sm = SessionManager.create("/p", session_dir=str(tmp_path), backend=backend)
    path = sm.flush()
    assert path is not None
    with SessionManager.open(path, backend=backend) as again:
        assert len(again) == 0 and again.load_report == []
    sm.close()


def test_flush_in_memory_and_over_an_existing_file(tmp_path: Path, backend: str) -> None:
    mem = SessionManager.in_memory("/p", backend=backend)
    mem.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert mem.flush() is None
    sm = SessionManager.create("/p", session_dir=str(tmp_path), backend=backend)
    sm.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert sm.session_file is not None
    Path(sm.session_file).write_bytes(b"not ours\n")
    with pytest.raises(SessionFileExistsError):
        sm.flush()
    assert Path(sm.session_file).read_bytes() == b"not ours\n"
    assert len(sm) == 1  # the entry stays in memory
    sm.close()


def test_an_append_after_another_process_appended(tmp_path: Path, backend: str) -> None:
    """CONTRACT §4 (trial 59: said only for ``flush``): a manager that read the file
    before another writer appended indexes that writer's entries at its first append,
    and hangs its own on its leaf, a branch beside them (Pi's writer does the same);
    after ``flush()`` its leaf, at the file's end when it read it, follows them."""
    for flush_first in (False, True):
        sm = SessionManager.create("/p", str(tmp_path / str(flush_first)), backend=backend)
        sm.append_message({"role": "user", "content": "hi", "timestamp": 1})
        first = sm.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m",
                                   "timestamp": 2})
        path = sm.session_file
        assert path is not None
        late = SessionManager.open(path, backend=backend)
        theirs = sm.append_message({"role": "user", "content": "theirs", "timestamp": 3})
        sm.close()
        if flush_first:
            late.flush()
        ours = late.append_message({"role": "user", "content": "ours", "timestamp": 4})
        late.close()
        with SessionManager.open(path, backend=backend) as again:
            assert len(again) == 4 and again[theirs]["parentId"] == first
            assert again[ours]["parentId"] == (theirs if flush_first else first)
