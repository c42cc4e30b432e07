"""Open a LangGraph thread of 100,000 checkpoints and Pi sessions of its size, wall and
CPU time (user + system), best of N rounds taken in turn, in one process.

Usage: ``python benches/langgraph_open.py [N]`` (after ``pytest benches/test_bench_frameworks.py
--bench-size=100MB`` made the cached files). CPU time moves far less than wall time on a
shared machine. Rows: ``thread: open`` (``SessionManager.open``), ``thread: saver
open+latest`` (a new ``PiCheckpointSaver`` answering ``get_tuple`` for the newest
checkpoint), and ``SessionManager.open`` of generated Pi sessions with the same entries
and with the same bytes. docs/BENCHMARKS.md, "A LangGraph thread".
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _benchlib import cache_dir  # noqa: E402
from test_bench_frameworks import THREAD, _pi_session, _thread_folder  # noqa: E402

from sessiontree import SessionManager  # noqa: E402
from sessiontree.langgraph import PiCheckpointSaver  # noqa: E402


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 7
    n = 100_000
    folder = _thread_folder(n)
    thread = str(folder / f"{THREAD}.jsonl")
    nbytes = os.path.getsize(thread)
    same_entries = str(_pi_session(None, 2 * n + 1))
    same_bytes = str(_pi_session(nbytes, None))

    def saver_latest() -> Any:
        saver = PiCheckpointSaver(folder, backend="native")
        got = saver.get_tuple({"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}})
        assert got is not None and got.metadata["step"] == n - 1
        return saver

    rows: dict[str, Callable[[], Any]] = {
        "thread: open": lambda: SessionManager.open(thread, backend="native"),
        "thread: saver open+latest": saver_latest,
        "pi session, same entries: open": lambda: SessionManager.open(same_entries, backend="native"),
        "pi session, same bytes: open": lambda: SessionManager.open(same_bytes, backend="native"),
    }
    best: dict[str, tuple[float, float]] = {k: (float("inf"), float("inf")) for k in rows}
    for _ in range(rounds):
        for name, run in rows.items():
            gc.collect()
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t = time.perf_counter()
            opened = run()
            wall = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            opened.close()
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    print(f"cache {cache_dir()}; best of {rounds}, rows in turn")
    for name, (wall, cpu) in best.items():
        path = thread if name.startswith("thread") else same_entries if "entries" in name else same_bytes
        with SessionManager.open(path, backend="native") as sm:
            entries = len(sm)
        print(f"{name:32} {wall * 1000:7.1f} ms wall  {cpu * 1000:7.1f} ms cpu  "
              f"{entries:>8,} entries  {os.path.getsize(path) / 1e6:6.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
