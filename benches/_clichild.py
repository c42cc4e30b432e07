"""One ``sessiontree`` command in a fresh interpreter, for ``test_bench_cli.py``.

Usage: ``python _clichild.py ARGS...`` (the command line's arguments). Stdout goes to
``/dev/null`` (the output is not what is measured); when the command returns, one JSON
line on stderr gives its exit status, the wall time since interpreter start and the
kernel's exact peak resident memory of this process (``VmHWM``: all resident pages,
the session's mapped file pages included) and its private memory at the end
(``RssAnon``). The parent samples ``RssAnon`` while it runs (the kernel keeps no peak
of it).
"""

from __future__ import annotations

import json
import os
import sys
import time


def status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def main(argv: list[str]) -> int:
    t0 = time.perf_counter()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    from sessiontree.cli import main as cli

    rc = cli(argv)
    sys.stdout.flush()
    print(json.dumps({"rc": rc, "seconds": time.perf_counter() - t0, **status()}), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
