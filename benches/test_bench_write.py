"""Appending (entries per second, with and without fsync) and refresh() after
another process appended.

Both work on a private copy of the cached session (in pytest's ``tmp_path``), opened
once per test; the cached file is never written.

fsync: ``sessiontree._storage.SessionWriter`` fsyncs after each appended line when
``sessiontree._storage.FSYNC_APPENDS`` is true (env ``SESSIONTREE_FSYNC``, default on).
The manager has no per-call switch, so the benchmark sets that module constant before
the first append (the writer reads it when it is created).
"""

from __future__ import annotations

import itertools
import os
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest

import sessiontree._storage as storage
from sessiontree import SessionManager

from _benchlib import BenchFile, copy_to, drop_opened, set_info

_TEXT = ("The index keeps byte offsets of every line; 日本語 and emoji 🚀 stay unescaped. " * 12)[:800]


def _assistant_message(i: int) -> dict[str, Any]:
    """A typical ~1 KB assistant turn (text + usage), as Pi stores it."""
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": f"{i}: {_TEXT}"}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"input": 1200 + i % 50, "output": 300, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500,
                  "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0, "cacheWrite": 0, "total": 0.0081}},
        "stopReason": "stop",
        "timestamp": 1_762_160_000_000 + i,
    }


def _open(path: str, backend: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SessionManager.open(path, backend=backend)


@pytest.mark.parametrize("fsync", [False, True], ids=["nofsync", "fsync"])
def test_append(benchmark: Any, session_file: BenchFile, backend: str, fsync: bool, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> None:
    """``append_message`` of a ~1 KB assistant message onto the session's leaf."""
    drop_opened()
    monkeypatch.setattr(storage, "FSYNC_APPENDS", fsync)
    path = copy_to(session_file, tmp_path)
    counter = itertools.count()
    with _open(path, backend) as sm:
        first = sm.append_message(_assistant_message(next(counter)))  # opens the writer (lock, catch-up)
        writer = sm._file._writer  # noqa: SLF001 (the switch took effect)
        assert writer is not None and writer._fsync is fsync
        before = len(sm)
        size_before = os.path.getsize(path)

        def target() -> str:
            return sm.append_message(_assistant_message(next(counter)))

        new_id = benchmark(target)
        added = len(sm) - before
        assert added >= 1 and sm.leaf_id == new_id and sm.get_entry(new_id)["parentId"] is not None
        line_bytes = (os.path.getsize(path) - size_before) / added
        assert sm.get_branch()[-1]["id"] == new_id and first in sm
    # what was written is a valid session with every appended entry
    with _open(path, backend) as again:
        assert len(again) == session_file.entries + 1 + added and again.leaf_id == new_id
    set_info(benchmark, f"append ({'fsync' if fsync else 'no fsync'}) · {session_file.size_label}",
             file=session_file, backend=backend, operation="append:fsync" if fsync else "append:nofsync",
             items=1, line_bytes=round(line_bytes))


class _ExternalWriter:
    """Another process's appends: whole lines written with O_APPEND, no lock taken."""

    def __init__(self, path: str, parent: str) -> None:
        self.path = path
        self.parent = parent
        self.n = 0

    def lines(self, k: int) -> bytes:
        out = []
        for _ in range(k):
            self.n += 1
            eid = f"e{self.n:09x}"  # 10 chars: cannot collide with the generator's 8-char ids
            entry = {"type": "message", "id": eid, "parentId": self.parent,
                     "timestamp": "2025-11-04T10:00:00.000Z", "message": _assistant_message(self.n)}
            out.append(orjson.dumps(entry) + b"\n")
            self.parent = eid
        return b"".join(out)

    def append(self, k: int) -> None:
        data = self.lines(k)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


@pytest.mark.parametrize("lines", [1, 100])
def test_refresh(benchmark: Any, session_file: BenchFile, backend: str, lines: int, tmp_path: Path) -> None:
    """``refresh()`` after another writer appended ``lines`` complete lines."""
    drop_opened()
    path = copy_to(session_file, tmp_path)
    writer = _ExternalWriter(path, session_file.leaf_id)
    rounds = 100 if lines == 1 else 30
    with _open(path, backend) as sm:
        assert sm.refresh() == 0

        added = benchmark.pedantic(sm.refresh, setup=lambda: writer.append(lines), rounds=rounds, warmup_rounds=2)
        assert added == lines
        assert sm.leaf_id == f"e{writer.n:09x}"  # the viewer at the end follows the new lines
        assert len(sm) == session_file.entries + writer.n
        assert sm.refresh() == 0
    set_info(benchmark, f"refresh (+{lines} lines) · {session_file.size_label}", file=session_file,
             backend=backend, operation=f"refresh:{lines}", items=lines)
