"""Repeated whole-list calls, both backends in one process (docs/BENCHMARKS.md, "Repeated
whole-list calls").

Usage: ``python benches/whole_list.py FILE [--rounds N]``. Opens FILE with the python
backend and twice with the native one: one native session decodes every entry with
``get_entries()`` (file order), the other by walking every ``get_tree()`` node
(preorder). Prints the whole decode's time and the private memory (``RssAnon``) it
added, then, for N alternated rounds, the best of 7 timings (each the mean of enough
calls to take about 20 ms) of a repeated ``get_entries()`` and of a repeated iteration.
"""

from __future__ import annotations

import argparse
import gc
import time
import warnings
from collections.abc import Callable
from typing import Any

from sessiontree import SessionManager


def rss_anon_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) // 1024
    return 0


def best(call: Callable[[], Any]) -> float:
    """Best of 7 of the mean time of a call, in ms."""
    t0 = time.perf_counter()
    call()
    reps = max(1, int(0.02 / max(time.perf_counter() - t0, 1e-6)))
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        times.append((time.perf_counter() - t0) / reps)
    return min(times) * 1e3


def walk(sm: SessionManager) -> None:
    stack = list(sm.get_tree())
    while stack:
        node = stack.pop()
        node.entry
        stack.extend(node.children)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    sessions: dict[str, SessionManager] = {}
    for name, backend, decode in (("native, file order", "native", lambda sm: sm.get_entries()),
                                  ("native, tree walk", "native", walk),
                                  ("python", "python", lambda sm: None)):
        gc.collect()
        before = rss_anon_mb()
        t0 = time.perf_counter()
        sm = SessionManager.open(args.file, backend=backend)
        opened = time.perf_counter() - t0
        t0 = time.perf_counter()
        decode(sm)
        took = time.perf_counter() - t0
        gc.collect()
        print(f"{name:20} open {opened:.2f} s, whole decode {took:.2f} s, RssAnon +{rss_anon_mb() - before:,} MB",
              flush=True)
        sessions[name] = sm
    for _ in range(args.rounds):
        cells = []
        for name, sm in sessions.items():
            cells.append(f"{name}: get_entries {best(sm.get_entries):.3f} ms, "
                         f"iterate {best(lambda sm=sm: sum(1 for _ in sm)):.2f} ms")
        print(" | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
