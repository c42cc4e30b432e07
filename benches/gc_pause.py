"""What pausing Python's cyclic GC during bulk decodes buys, on both backends.

Usage: ``.venv/bin/python benches/gc_pause.py [--size 100MB] [--rounds 3]``. For each
generator's cached benchmark session of that size: the python backend's open (its
loader decodes every line) and the native backend's open + ``get_entries()`` (one bulk
decode), each with the pause (``_backend.GC_PAUSE_MIN`` as shipped) and without it
(the threshold raised out of reach), alternating, best of N rounds of wall time and
process CPU time. Prints one Markdown table (docs/BENCHMARKS.md keeps the figures).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sessiontree._backend as backend_mod  # noqa: E402
import sessiontree._native as native_mod  # noqa: E402
from sessiontree import SessionManager  # noqa: E402

from _benchlib import GENERATORS, bench_file  # noqa: E402


def measure(path: str, backend: str, pause: bool) -> tuple[float, float]:
    limit = backend_mod.GC_PAUSE_MIN if pause else 1 << 62
    saved = backend_mod.GC_PAUSE_MIN, native_mod._GC_PAUSE_MIN
    backend_mod.GC_PAUSE_MIN = native_mod._GC_PAUSE_MIN = limit
    gc.collect()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if backend == "python":
                sm = SessionManager.open(path, backend="python")
            else:
                sm = SessionManager.open(path, backend="native")
                sm.get_entries()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        sm.close()
    finally:
        backend_mod.GC_PAUSE_MIN, native_mod._GC_PAUSE_MIN = saved
    del sm
    gc.collect()
    return wall, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="100MB")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    print("| generator | entries | what | GC paused: wall / CPU | GC on: wall / CPU | saved (CPU) |")
    print("|---|--:|---|--:|--:|--:|")
    for gen in GENERATORS:
        f = bench_file(a.size, True, gen)
        for backend, what in (("python", "python open (decodes every line)"),
                              ("native", "native open + get_entries()")):
            best = {True: [9e9, 9e9], False: [9e9, 9e9]}
            for _ in range(a.rounds):
                for pause in (True, False):
                    w, c = measure(f.path, backend, pause)
                    best[pause] = [min(best[pause][0], w), min(best[pause][1], c)]
            on, off = best[False], best[True]
            print(f"| {gen} | {f.entries:,} | {what} | {off[0]:.2f} s / {off[1]:.2f} s | {on[0]:.2f} s / "
                  f"{on[1]:.2f} s | {1 - off[1] / on[1]:.0%} |", flush=True)


if __name__ == "__main__":
    main()
