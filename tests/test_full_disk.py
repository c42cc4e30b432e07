"""A full disk (issue 11, item 3): new files appear whole or not at all; a failed append
leaves memory and file agreeing, the next append works, and errors name the file.

Three ways to run out of room, all real writes: an ``os.write`` that writes part of its
bytes and then fails (in-process, any filesystem), a process whose file-size limit
(``RLIMIT_FSIZE``) stops the write part-way (``EFBIG``), and a small tmpfs mounted for
the test (``ENOSPC``; needs root, else skipped).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sessiontree._storage as storage
from sessiontree import SessionManager

from _shared import open_quiet, report

USER = {"role": "user", "content": "hello", "timestamp": 1}
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "provider": "p", "model": "m", "timestamp": 2}


def big_user(n: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": "x" * n}], "timestamp": 3}


class HalfWrites:
    """``os.write`` in the writer writes half of what it is given, then fails (ENOSPC)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.failed = 0
        real = os.write

        def write(fd: int, data: Any) -> int:
            if not self.on:
                return real(fd, data)
            view = memoryview(data)
            if len(view) > 1:
                self.failed += 1
                self.on = False
                real(fd, view[: len(view) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(storage.os, "write", write)


@pytest.fixture
def half(monkeypatch: pytest.MonkeyPatch) -> HalfWrites:
    return HalfWrites(monkeypatch)


def agrees_with_a_reopen(mgr: SessionManager) -> None:
    """Memory and file agree: the session's own refresh sees nothing new and raises
    nothing, and a reopen has the same entries and the same report."""
    assert mgr.refresh() == 0
    path = mgr.session_file
    assert path is not None
    again = open_quiet(path, mgr.backend)
    try:
        assert [e["id"] for e in again.get_entries()] == [e["id"] for e in mgr.get_entries()]
        assert report(again) == report(mgr)
    finally:
        again.close()


def session_files(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_failed_first_write_leaves_nothing_and_the_next_append_creates_the_file(
    backend: str, tmp_path: Path, half: HalfWrites
) -> None:
    """Before the fix the half-written file stayed at its name and every later append
    of the session raised ``SessionFileExistsError`` for its own file."""
    mgr = SessionManager.create("/p", str(tmp_path), backend=backend)
    try:
        mgr.append_message(USER)
        path = mgr.session_file
        half.on = True
        with pytest.raises(OSError) as err:
            mgr.append_message(ASSISTANT)
        assert err.value.errno == errno.ENOSPC and err.value.filename == path
        assert half.failed == 1
        assert session_files(tmp_path) == []  # no partial file, no temporary file
        mgr.append_message(USER)  # room again: the whole session is written now
        assert session_files(tmp_path) == [os.path.basename(path)]
        agrees_with_a_reopen(mgr)
        assert len(mgr) == 3
    finally:
        mgr.close()


def test_failed_append_keeps_memory_and_file_agreeing(backend: str, tmp_path: Path, half: HalfWrites) -> None:
    """Before the fix the next append succeeded, then the session's own ``refresh()``
    raised "rewritten in place", and ``load_report`` lacked the torn line a reopen
    reported."""
    mgr = SessionManager.create("/p", str(tmp_path), backend=backend)
    try:
        mgr.append_message(USER)
        a = mgr.append_message(ASSISTANT)
        half.on = True
        with pytest.raises(OSError) as err:
            mgr.append_message(big_user(5000))
        assert err.value.filename == mgr.session_file
        assert mgr.leaf_id == a
        agrees_with_a_reopen(mgr)
        assert [i.kind for i in mgr.load_report] == ["truncated"]
        b = mgr.append_message(USER)
        assert mgr.get_entry(b)["parentId"] == a
        agrees_with_a_reopen(mgr)
        assert [i.kind for i in mgr.load_report] == ["invalid_json"]
        mgr.append_message(ASSISTANT)
        agrees_with_a_reopen(mgr)
    finally:
        mgr.close()


def test_failed_fork_from_and_branched_session_leave_nothing(backend: str, tmp_path: Path, half: HalfWrites) -> None:
    """Before the fix a failed fork left a half-written session at its final name,
    one Pi's picker would list."""
    src = SessionManager.create("/p", str(tmp_path / "src"), backend=backend)
    src.append_message(USER)
    src.append_message(ASSISTANT)
    path = src.session_file
    assert path is not None
    out = tmp_path / "out"
    half.on = True
    with pytest.raises(OSError) as err:
        SessionManager.fork_from(path, "/q", str(out), backend=backend)
    assert str(out) in str(err.value.filename)
    assert session_files(out) == []
    half.on = True
    with pytest.raises(OSError):
        src.create_branched_session(src.leaf_id)  # type: ignore[arg-type]
    assert session_files(tmp_path / "src") == [os.path.basename(path)]
    # The branched session lives on in memory and is written by the next append.
    src.append_message(USER)
    assert len(session_files(tmp_path / "src")) == 2
    agrees_with_a_reopen(src)
    src.close()
    forked = SessionManager.fork_from(path, "/q", str(out), backend=backend)
    assert len(session_files(out)) == 1
    forked.close()


# ------------------------------------------------------------ a real limit: EFBIG

_LIMITED = textwrap.dedent(
    r"""
    import json, os, resource, sys, warnings
    from sessiontree import SessionManager, LoadReportWarning
    warnings.simplefilter("ignore", LoadReportWarning)
    folder, backend = sys.argv[1], sys.argv[2]
    out = {}
    mgr = SessionManager.create("/p", folder, backend=backend)
    mgr.append_message({"role": "user", "content": "hi", "timestamp": 1})
    mgr.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2})
    size = os.path.getsize(mgr.session_file)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 3000, hard))
    try:
        mgr.append_message({"role": "user", "content": "x" * 20000, "timestamp": 3})
    except OSError as e:
        out["errno"], out["filename"] = e.errno, e.filename
    out["size"] = os.path.getsize(mgr.session_file) - size
    out["report_after_failure"] = [i.kind for i in mgr.load_report]
    out["refresh"] = mgr.refresh()
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    out["next"] = mgr.append_message({"role": "user", "content": "again", "timestamp": 4})
    out["ids"] = [e["id"] for e in mgr.get_entries()]
    out["report"] = [(i.kind, i.line) for i in mgr.load_report]
    out["path"] = mgr.session_file
    mgr.close()
    print(json.dumps(out))
    """
)


def test_file_size_limit_stops_an_append_part_way(backend: str, tmp_path: Path) -> None:
    """A real short write: the kernel stops the append at the process's file-size limit
    (EFBIG); the process goes on, and memory, file and a reopen agree."""
    proc = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(tmp_path), backend],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["errno"] == errno.EFBIG and out["filename"] == out["path"]
    assert 0 < out["size"] <= 3000  # part of the line is in the file
    assert out["report_after_failure"] == ["truncated"] and out["refresh"] == 0
    again = open_quiet(out["path"], backend)
    try:
        assert [e["id"] for e in again.get_entries()] == out["ids"]
        assert [(i.kind, i.line) for i in again.load_report] == [tuple(x) for x in out["report"]]
        assert [i.kind for i in again.load_report] == ["invalid_json"]
        assert out["ids"][-1] == out["next"]
    finally:
        again.close()


# ----------------------------------------------------------- a real full disk: tmpfs


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted for this test (root only)."""
    mnt = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs ({r.stderr.strip() or 'not root'})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(folder: Path) -> Path:
    """Fill the disk; the returned file frees the room when removed."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def test_real_full_disk(backend: str, small_disk: Path) -> None:
    folder = small_disk / "sessions"
    mgr = SessionManager.create("/p", str(folder), backend=backend)
    try:
        mgr.append_message(USER)
        filler = fill(small_disk)
        with pytest.raises(OSError) as err:
            mgr.append_message({**ASSISTANT, "content": [{"type": "text", "text": "y" * 8000}]})
        assert err.value.errno == errno.ENOSPC and err.value.filename == mgr.session_file
        assert session_files(folder) == []
        filler.unlink()
        a = mgr.append_message(ASSISTANT)
        agrees_with_a_reopen(mgr)
        filler = fill(small_disk)
        sizes = os.path.getsize(mgr.session_file)  # type: ignore[arg-type]
        with pytest.raises(OSError) as err:
            mgr.append_message(big_user(20000))
        assert err.value.errno == errno.ENOSPC and err.value.filename == mgr.session_file
        torn = os.path.getsize(mgr.session_file) > sizes  # type: ignore[arg-type]
        agrees_with_a_reopen(mgr)
        filler.unlink()
        b = mgr.append_message(USER)
        assert mgr.get_entry(b)["parentId"] == a
        agrees_with_a_reopen(mgr)
        assert [i.kind for i in mgr.load_report] == (["invalid_json"] if torn else [])
    finally:
        mgr.close()


def test_a_catalog_on_a_full_disk_is_ours_and_kept(tmp_path: Path) -> None:
    """A catalog whose disk is full (SQLite cannot grow its shared memory beside the
    WAL) is not "not recognised as a sessiontree catalog" (adversary 61): the commands
    answer from the files with a note that says it cannot be read now, leave it as it
    is, and use it again once there is room."""
    from sessiontree.generate import generate_session

    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs ({r.stderr.strip() or 'not root'})")
    try:
        sessions = tmp_path / "s"
        sessions.mkdir()
        for i in range(4):
            generate_session(sessions / f"2025-11-0{i + 1}T00-00-00-000Z_s{i}.jsonl", size_bytes=20_000, seed=i)
        catalog = mnt / "c.sqlite3"
        env = {**os.environ, "HOME": str(tmp_path), "SESSIONTREE_CATALOG": str(catalog)}

        def usage() -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "sessiontree", "usage", "model", str(sessions)],
                                  capture_output=True, text=True, env=env, timeout=120)

        want = usage()
        assert want.returncode == 0 and want.stderr == "", want.stderr
        kept = catalog.read_bytes()
        filler = fill(mnt)
        full = usage()
        assert full.returncode == 0 and full.stdout == want.stdout
        assert "cannot be read now" in full.stderr and "not recognised" not in full.stderr, full.stderr
        assert catalog.read_bytes() == kept
        filler.unlink()
        again = usage()
        assert again.returncode == 0 and again.stdout == want.stdout and again.stderr == "", again.stderr
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
