"""``PiCheckpointSaver`` as a context manager, ``with`` and ``async with`` (as LangGraph's
async savers are used: ``async with AsyncSqliteSaver.from_conn_string(...) as saver``):
leaving the block releases every thread file's lock, which a real second process then
takes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402

from sessiontree.langgraph import PiCheckpointSaver  # noqa: E402

CFG = {"configurable": {"thread_id": "one", "checkpoint_ns": ""}}

# Another process writes the thread: "written" once the first saver's lock is gone.
OTHER = textwrap.dedent("""
    import sys
    from langgraph.checkpoint.base import empty_checkpoint
    from sessiontree.langgraph import PiCheckpointSaver
    cfg = {"configurable": {"thread_id": "one", "checkpoint_ns": ""}}
    try:
        with PiCheckpointSaver(sys.argv[1]) as saver:
            saver.put(cfg, empty_checkpoint(), {"step": 99}, {})
        print("written")
    except Exception as e:
        print(type(e).__name__)
""")


def _other(root: Path) -> str:
    p = subprocess.run([sys.executable, "-c", OTHER, str(root)], capture_output=True, text=True, timeout=120)
    return p.stdout.strip() or p.stderr


def test_with_releases_the_locks(tmp_path: Path, backend: str) -> None:
    with PiCheckpointSaver(tmp_path, backend=backend) as saver:
        assert isinstance(saver, PiCheckpointSaver)
        saver.put(CFG, empty_checkpoint(), {"step": 0}, {})
        assert _other(tmp_path) == "SessionLockedError"
    assert _other(tmp_path) == "written"


def test_async_with_releases_the_locks(tmp_path: Path, backend: str) -> None:
    async def main() -> list[int]:
        async with PiCheckpointSaver(tmp_path, backend=backend) as saver:
            assert isinstance(saver, PiCheckpointSaver)
            await saver.aput(CFG, empty_checkpoint(), {"step": 0}, {})
            assert await asyncio.to_thread(_other, tmp_path) == "SessionLockedError"
        assert await asyncio.to_thread(_other, tmp_path) == "written"
        async with PiCheckpointSaver(tmp_path, backend=backend) as again:
            return [t.metadata["step"] async for t in again.alist(CFG)]

    assert asyncio.run(main()) == [99, 0]
