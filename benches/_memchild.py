"""One memory measurement, run in a fresh interpreter by ``test_bench_memory.py``.

Usage: ``python _memchild.py FILE BACKEND``. Protocol on stdout/stdin:

1. imports the package (and the extension, orjson), collects garbage, prints one JSON
   line ``{"stage": "base", ...}`` with its baseline memory, then waits for a line on
   stdin, so that the parent can start sampling ``/proc/<pid>/status`` first;
2. opens the session, records memory; builds the context at the leaf, records memory;
3. prints ``{"stage": "done", ...}``: times, entry and message counts, memory after
   each step and ``VmHWM``, the kernel-exact peak RSS since the baseline (the baseline
   resets it by writing ``5`` to ``/proc/self/clear_refs``). Not ``ru_maxrss``: after
   fork + exec it still holds the parent's peak.

Memory is read from ``/proc/self/status``: ``RssAnon`` (heap and other private memory:
what the index and the dicts cost), ``RssFile`` (file pages mapped into the process,
for the native backend the session file's page-cache pages: shared and reclaimable),
``VmRSS`` (their sum plus shared memory).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
import warnings


def status() -> dict[str, int]:
    """RssAnon, RssFile and VmRSS of this process, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def main(argv: list[str]) -> int:
    path, backend = argv[0], argv[1]
    warnings.simplefilter("ignore")
    import orjson  # noqa: F401

    import sessiontree
    from sessiontree import SessionManager

    if backend == "native":
        import sessiontree._native  # noqa: F401
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        hwm_reset = True
    except OSError:
        hwm_reset = False
    base = status()
    print(json.dumps({"stage": "base", "status": base, "version": sessiontree.__version__}), flush=True)
    sys.stdin.readline()

    t0 = time.perf_counter()
    sm = SessionManager.open(path, backend=backend)
    t_open = time.perf_counter() - t0
    gc.collect()
    after_open = status()
    t0 = time.perf_counter()
    ctx = sm.build_session_context()
    t_ctx = time.perf_counter() - t0
    gc.collect()
    after_ctx = status()
    entries = len(sm)
    messages = len(ctx.messages)
    del ctx
    gc.collect()
    after_drop_ctx = status()
    peak = after_drop_ctx["VmHWM"] if hwm_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = {
        "stage": "done",
        "backend": sm.backend,
        "entries": entries,
        "context_messages": messages,
        "open_s": t_open,
        "context_s": t_ctx,
        "base": base,
        "after_open": after_open,
        "after_context": after_ctx,
        "after_drop_context": after_drop_ctx,
        "peak_rss": peak,
        "peak_rss_exact": hwm_reset,
    }
    sm.close()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
