"""Time ``Index.open`` + ``close`` of one file, wall and CPU (user + system), best of N,
and the process's peak resident memory (``VmHWM``) before and after.

Usage: ``python benches/open_cpu.py FILE [N]``. CPU time moves far less than wall time
on a shared machine; to compare two builds, run their packages in turn
(``PYTHONPATH=<other checkout>/python``), alternating. ``count_newlines`` is the floor
(the same reading path, no scan). docs/BENCHMARKS.md, "Reading the file".
"""

from __future__ import annotations

import resource
import sys
import time

from sessiontree._sessiontree import Index, count_newlines


def peak_rss_mb() -> int:
    """``VmHWM`` of this process in MB (0 where ``/proc`` has none)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def main(argv: list[str]) -> int:
    path = argv[0]
    n = int(argv[1]) if len(argv) > 1 else 5
    best = best_cpu = best_sys = best_count = float("inf")
    entries = 0
    base = peak_rss_mb()
    for _ in range(n):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        ix = Index.open(path)
        entries = len(ix)
        ix.close()
        wall = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        system = r1.ru_stime - r0.ru_stime
        best, best_cpu, best_sys = min(best, wall), min(best_cpu, r1.ru_utime - r0.ru_utime + system), min(best_sys, system)
        if n == 1:
            break  # one open in a fresh process: the peak is the open's alone
        t = time.perf_counter()
        count_newlines(path)
        best_count = min(best_count, time.perf_counter() - t)
    print(
        f"{path}: open+close best of {n} {best * 1000:.1f} ms (cpu {best_cpu * 1000:.0f} ms, sys {best_sys * 1000:.0f}), "
        + (f"count_newlines {best_count * 1000:.1f} ms, " if n > 1 else "")
        + f"{entries} entries, peak RSS {base} -> {peak_rss_mb()} MB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
