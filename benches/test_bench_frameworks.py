"""A LangGraph thread of many checkpoints opens at the speed of a Pi session of its size.

Group ``langgraph thread · N checkpoints`` (N = 100,000 when the bench size reaches
100MB, else 2,000): rows, all on the native backend and a warm page cache,

* ``read_once``: one read of the thread file (the physical reference);
* ``pi session, same bytes``: ``SessionManager.open`` of a generated Pi session as large
  as the thread file (``sessiontree.generate``: fewer, longer entries);
* ``pi session, same entries``: the same for a generated Pi session with as many entries
  (``payload_scale=0.005``: ~810 bytes per entry where the thread has ~840, so about the
  same bytes too), the comparison for an index whose work is per line;
* ``thread: open``: ``SessionManager.open`` of the thread file;
* ``thread: saver open+latest``: a new ``PiCheckpointSaver`` on the folder answering
  ``get_tuple`` for the thread's newest checkpoint (what a graph does first), i.e. the
  open, the checkpoint ids from the index's columns, and the one checkpoint decoded.

The thread is written once through the saver itself (cached beside the other benchmark
files, ``SESSIONTREE_FSYNC=0`` while it is made): each checkpoint holds two channels
(a counter and a ~160-byte note, both new each step) and one write.
"""

from __future__ import annotations

import gc
import hashlib
import inspect
import os
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.generate import generate_session, parse_size

from _benchlib import SEED, _Lock, _source_hash, cache_dir, max_size, read_once, set_info

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.base.id import uuid6  # noqa: E402

from sessiontree.langgraph import PiCheckpointSaver  # noqa: E402

THREAD = "bench-thread"
LAYOUT = "1"
"""Bump when the saver writes a thread differently: the cached thread is made again."""


def _checkpoints(config: Any) -> int:
    return 100_000 if max_size(config) >= parse_size("100MB") else 2_000


def _write_thread(folder: Path, n: int) -> None:
    old = os.environ.get("SESSIONTREE_FSYNC")
    os.environ["SESSIONTREE_FSYNC"] = "0"
    try:
        saver = PiCheckpointSaver(folder, backend="native")
        config: Any = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
        versions: dict[str, Any] = {}
        for step in range(n):
            cp = empty_checkpoint()
            cp["id"] = str(uuid6(clock_seq=step))
            values = {"counter": step, "note": f"step {step} " + "x" * 150}
            new = {k: saver.get_next_version(versions.get(k), None) for k in values}
            versions.update(new)
            cp["channel_values"] = values
            cp["channel_versions"] = dict(versions)
            config = saver.put(config, cp, {"source": "loop", "step": step, "parents": {}}, new)
            saver.put_writes(config, [("note", f"write {step}")], str(uuid.UUID(int=step)))
        saver.close()
    finally:
        if old is None:
            os.environ.pop("SESSIONTREE_FSYNC", None)
        else:
            os.environ["SESSIONTREE_FSYNC"] = old


def _thread_folder(n: int) -> Path:
    h = hashlib.sha256(LAYOUT.encode())
    h.update(inspect.getsource(_write_thread).encode())
    folder = cache_dir() / f"langgraph-{n}-{h.hexdigest()[:10]}"
    done = folder / ".complete"
    if done.exists():
        return folder
    with _Lock(folder):
        if not done.exists():
            folder.mkdir(exist_ok=True)
            for name in os.listdir(folder):
                os.unlink(folder / name)
            _write_thread(folder, n)
            done.touch()
    return folder


def _pi_session(nbytes: int | None, entries: int | None) -> Path:
    """A generated Pi session of ``nbytes`` bytes, or of ``entries`` small entries."""
    what = f"{nbytes}B" if nbytes is not None else f"{entries}e"
    target = cache_dir() / f"session-{what}-seed{SEED}-{_source_hash()}.jsonl"
    if target.exists():
        return target
    with _Lock(target):
        if not target.exists():
            tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
            if nbytes is not None:
                generate_session(tmp, size_bytes=nbytes, seed=SEED)
            else:
                generate_session(tmp, entries=entries, seed=SEED, payload_scale=0.005)
            os.replace(tmp, target)
    return target


@pytest.fixture(scope="module")
def thread(request: pytest.FixtureRequest) -> tuple[Path, int]:
    try:
        import sessiontree._sessiontree  # noqa: F401
    except ImportError:
        pytest.skip("the native extension is not built")
    n = _checkpoints(request.config)
    return _thread_folder(n), n


def _open(path: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SessionManager.open(path, backend="native")


def _close(opened: list[Any]) -> None:
    for o in opened:
        o.close()
    opened.clear()
    gc.collect()


ROWS = ["read_once", "pi session, same bytes", "pi session, same entries", "thread: open", "thread: saver open+latest"]


@pytest.mark.parametrize("row", ROWS)
def test_thread_open(benchmark: Any, thread: tuple[Path, int], row: str) -> None:
    folder, n = thread
    path = str(folder / f"{THREAD}.jsonl")
    nbytes = os.path.getsize(path)
    set_info(benchmark, f"langgraph thread · {n:,} checkpoints", backend="native", operation=row,
             bytes=nbytes, entries=2 * n + 1)
    if row == "read_once":
        buf = bytearray(8 << 20)
        assert benchmark(read_once, path, buf) == nbytes
        return
    opened: list[Any] = []
    other = (str(_pi_session(nbytes, None)) if row == "pi session, same bytes"
             else str(_pi_session(None, 2 * n + 1)) if row == "pi session, same entries" else path)

    def target() -> Any:
        if row == "thread: saver open+latest":
            saver = PiCheckpointSaver(folder, backend="native")
            opened.append(saver)
            return saver.get_tuple({"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}})
        opened.append(_open(other))
        return len(opened[-1])

    got = benchmark.pedantic(target, setup=lambda: _close(opened), teardown=lambda: _close(opened),
                             rounds=5 if n > 10_000 else 20, warmup_rounds=1)
    _close(opened)
    if row == "thread: open":
        assert got == 2 * n + 1  # the name, then a checkpoint and a write per step
    elif row.startswith("pi session"):
        assert got > 0 if row.endswith("bytes") else got == 2 * n + 1
        benchmark.extra_info["entries"] = got
        benchmark.extra_info["bytes"] = os.path.getsize(other)
    else:
        assert got.metadata["step"] == n - 1
        assert got.checkpoint["channel_values"]["counter"] == n - 1
        assert got.pending_writes == [(str(uuid.UUID(int=n - 1)), "note", f"write {n - 1}")]
