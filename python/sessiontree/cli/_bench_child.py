"""One measurement for ``sessiontree bench``, run in a fresh interpreter per backend.

Usage: ``python -m sessiontree.cli._bench_child FILE BACKEND``. Prints one JSON object:
times in seconds, memory in bytes. A fresh process per backend keeps one backend's
allocations (and the page cache warm-up of the first run) out of the other's figures
as far as a process can: peak RSS is per process.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings


def rss_now() -> int:
    """Current resident set size in bytes (Linux /proc; else the peak so far)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return rss_peak()


def rss_anon() -> int | None:
    """Anonymous resident memory in bytes (heap; excludes mapped file pages), Linux only."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def rss_peak() -> int:
    """Peak resident set size of this process in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def main(argv: list[str]) -> int:
    path, backend = argv[0], argv[1]
    warnings.simplefilter("ignore")
    from sessiontree import SessionManager

    base = rss_now()
    anon_base = rss_anon()
    t0 = time.perf_counter()
    sm = SessionManager.open(path, backend=backend)
    t_open = time.perf_counter() - t0
    rss_open = rss_now()
    anon_open = rss_anon()
    t0 = time.perf_counter()
    ctx = sm.build_session_context()
    t_ctx = time.perf_counter() - t0
    t0 = time.perf_counter()
    branch = sm.get_branch()
    t_branch = time.perf_counter() - t0
    t0 = time.perf_counter()
    tree = sm.get_tree()
    t_tree = time.perf_counter() - t0
    result = {
        "backend": sm.backend,
        "entries": len(sm),
        "open": t_open,
        "context": t_ctx,
        "branch": t_branch,
        "tree": t_tree,
        "contextMessages": len(ctx.messages),
        "pathLength": len(branch),
        "roots": len(tree),
        "rssBase": base,
        "rssOpen": rss_open,
        "heldAfterOpen": max(0, rss_open - base),
        "anonAfterOpen": None if anon_open is None or anon_base is None else max(0, anon_open - anon_base),
        "rssPeak": rss_peak(),
    }
    sm.close()
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
