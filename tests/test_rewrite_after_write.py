"""A rewrite in place made right after this process wrote the file (adversary round 46,
F4): the staleness baseline is the bytes written, not the file as the next call finds
it (CONTRACT §4, §8).

Before the fix the watch dropped its baseline after a create or a migration rewrite and
took the file as the next check found it; an append's own line was left to that check
too. A same-size rewrite of both 4 KiB ends, with the mtime moved, made in that window
went unseen: the next append wrote onto the rewritten file and the session answered the
old bytes. The rewrite is made by another process, as another program would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _shared import open_quiet

from sessiontree import JsonlSessionStorage, SessionManager, StaleSessionError
from sessiontree._filestate import FileId, FileWatch, indexed_ends, stat_id

_REWRITE = """
import os, sys
p, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
data = open(p, "rb").read()
i = data.rindex(old)
with open(p, "r+b") as f:
    f.seek(i)
    f.write(new)
st = os.stat(p)
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
"""


def rewrite(path: str, old: str, new: str) -> bytes:
    """Another process replaces the last ``old`` in ``path`` by ``new`` (same length) in
    place and moves the mtime on; returns the file's bytes after it."""
    assert len(old) == len(new)
    subprocess.run([sys.executable, "-c", _REWRITE, path, old, new], check=True)
    return Path(path).read_bytes()


def first_write(tmp_path: Path, backend: str) -> SessionManager:
    sm = SessionManager.create("/proj", session_dir=str(tmp_path), backend=backend)
    sm.append_message({"role": "user", "content": "hi", "timestamp": 1})
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "xyz"}], "timestamp": 2,
                       "provider": "p", "model": "m"})
    assert sm.session_file is not None
    return sm


def assert_stale_and_untouched(sm: SessionManager, path: str, data: bytes) -> None:
    with pytest.raises(StaleSessionError, match="rewritten in place"):
        sm.append_message({"role": "user", "content": "after", "timestamp": 9})
    assert Path(path).read_bytes() == data  # nothing was written onto the rewritten file
    with pytest.raises(StaleSessionError):
        sm.get_entries()


def test_rewrite_after_the_first_write_is_stale(tmp_path: Path, backend: str) -> None:
    sm = first_write(tmp_path, backend)
    path = sm.session_file
    assert path is not None
    data = rewrite(path, '"xyz"', '"QQQ"')
    assert_stale_and_untouched(sm, path, data)
    sm.close()


def test_rewrite_of_the_line_just_appended_is_stale(tmp_path: Path, backend: str) -> None:
    sm = first_write(tmp_path, backend)
    path = sm.session_file
    assert path is not None
    sm.append_message({"role": "user", "content": "second", "timestamp": 3})
    data = rewrite(path, '"second"', '"SECOND"')
    assert_stale_and_untouched(sm, path, data)
    sm.close()


def test_rewrite_after_a_migration_rewrite_is_stale(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "v1.jsonl"
    path.write_bytes(
        b'{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
        b'{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one",'
        b'"timestamp":1}}\n'
    )
    sm = open_quiet(path, backend)
    sm.append_message({"role": "user", "content": "two", "timestamp": 2})  # migrates, then appends
    data = rewrite(str(path), '"one"', '"ONE"')
    assert_stale_and_untouched(sm, str(path), data)
    sm.close()


def test_storage_header_rewritten_before_the_first_append_is_stale(tmp_path: Path, backend: str) -> None:
    path = str(tmp_path / "s.jsonl")
    st = JsonlSessionStorage.create(path, cwd="/projA", first_write="now", backend=backend)
    data = rewrite(path, "/projA", "/projB")
    entry = {"type": "message", "id": st.create_entry_id(), "parentId": None,
             "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "x"}}
    with pytest.raises(StaleSessionError, match="rewritten in place"):
        st.append_entry(entry)
    assert Path(path).read_bytes() == data


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 20000])
@pytest.mark.parametrize("more", [1, 100, 4096, 9000])
def test_an_append_extends_the_baseline_to_the_ends_of_the_file(tmp_path: Path, size: int, more: int) -> None:
    """The baseline an append leaves is what the file's ends are (``indexed_ends``), at
    every size about the 4 KiB ends: no false alarm on the next check."""
    p = tmp_path / "f"
    old = bytes(i % 251 for i in range(size))
    new = bytes(i % 241 + 7 for i in range(more))
    p.write_bytes(old)
    watch = FileWatch(str(p), None)
    watch.wrote(stat_id(str(p)) or FileId(0, 0), old)
    with open(p, "ab") as f:
        f.write(new)
    watch.appended(size, new)
    watch.check(size + more)  # the ends match: no StaleSessionError
