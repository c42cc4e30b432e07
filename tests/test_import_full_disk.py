"""An import that runs out of room part-way says how many entries it added as the file
holds them, never more: a result must not count entries that did not reach the disk."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

import sessiontree._storage as storage
from sessiontree import LoadReportWarning, SessionManager
from sessiontree.importers import import_claude


def _transcript(path: Path, turns: int) -> None:
    recs: list[dict[str, Any]] = []
    parent = None
    for i in range(turns):
        for role in ("user", "assistant"):
            uid = f"{role[0]}{i}"
            msg: dict[str, Any] = {"role": role, "content": f"{role} turn {i} " + "x" * 200}
            if role == "assistant":
                msg = {"id": f"msg{i}", "role": "assistant", "model": "claude",
                       "content": [{"type": "text", "text": f"answer {i}"}],
                       "usage": {"input_tokens": 1, "output_tokens": 2}}
            recs.append({"type": role, "uuid": uid, "parentUuid": parent, "sessionId": "s1", "cwd": "/p",
                         "timestamp": f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z", "message": msg})
            parent = uid
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _entries_in(path: str, backend: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        with SessionManager.open(path, backend=backend) as sm:
            return len(sm)


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("fail_after", [0, 1, 2, 3, 10, 25])
def test_entries_added_counts_only_what_was_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    backend: str, fail_after: int) -> None:
    src = tmp_path / "t.jsonl"
    _transcript(src, 20)
    out = tmp_path / "out"
    writes = 0
    real = os.write

    def write(fd: int, data: Any) -> int:
        nonlocal writes
        writes += 1
        if writes > fail_after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(storage.os, "write", write)
    (result,) = import_claude(str(src), to=str(out), backend=backend)
    monkeypatch.setattr(storage.os, "write", real)
    assert result.error is not None, result
    files = sorted(out.glob("*.jsonl")) if out.exists() else []
    on_disk = sum(_entries_in(str(f), backend) for f in files)
    assert result.entries_added == on_disk, (result.entries_added, on_disk)
    assert result.created == bool(files), result  # no file made is none created (adversary 59b)


@pytest.mark.parametrize("backend", ["python", "native"])
def test_an_import_syncs_its_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """Trial 59: an import fsynced after each of its entries (12,000 entries: 10–18 s
    wall, 2.5 s of CPU). Its appends are synced once, at the file's close
    (``_storage.synced_once``); the file is byte for byte what per-entry syncing wrote,
    and a writer outside an import still syncs each append."""
    src = tmp_path / "t.jsonl"
    _transcript(src, 40)
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(storage, "FSYNC_APPENDS", True)
    monkeypatch.setattr(storage.os, "fsync", fsync)
    (once,) = import_claude(str(src), to=str(tmp_path / "once"), backend=backend)
    assert once.error is None and once.entries_added == 80, once
    assert len(synced) <= 3, synced  # the create (file, folder) and the appends' one
    written = Path(str(once.path)).read_bytes()
    with storage.synced_once():
        pass  # nothing pending: nothing synced, and the next writer syncs each line again
    synced.clear()
    with SessionManager.open(once.path, backend=backend) as sm:
        sm.append_message({"role": "user", "content": "one more", "timestamp": 1})
        sm.append_message({"role": "user", "content": "and one more", "timestamp": 2})
    assert len(synced) == 2, synced
    monkeypatch.setattr(storage.os, "fsync", real)
    # Synced line by line, the same bytes (the import is deterministic).
    pending = storage.synced_once
    monkeypatch.setattr("sessiontree.importers._common.synced_once", lambda: contextlib.nullcontext())
    (each,) = import_claude(str(src), to=str(tmp_path / "each"), backend=backend)
    monkeypatch.setattr("sessiontree.importers._common.synced_once", pending)
    assert Path(str(each.path)).name == Path(str(once.path)).name
    assert Path(str(each.path)).read_bytes() == written


@pytest.mark.parametrize("backend", ["python", "native"])
def test_an_import_whose_sync_fails_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """The one fsync failing (EIO: the lines may not be on disk) is the import's error,
    naming the file, not a success."""
    src = tmp_path / "t.jsonl"
    _transcript(src, 10)
    real = os.fsync
    calls = 0

    def fsync(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls > 2:  # the create's two succeed; the appends' one fails
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(storage, "FSYNC_APPENDS", True)
    monkeypatch.setattr(storage.os, "fsync", fsync)
    (result,) = import_claude(str(src), to=str(tmp_path / "out"), backend=backend)
    assert result.path is None and result.error is not None and "Input/output error" in result.error, result
    assert str(tmp_path / "out") in result.error
