"""``sessiontree export --format markdown|html`` against the plain-Python writer of the
same path (``plain_export.py``), in one run on one session: each round runs both, in
fresh processes, alternated, and records wall seconds and peak resident memory (the
child's ``ru_maxrss``). The load average is printed before and after: the machine may
be shared.

A generated session's path to its leaf is a few thousand entries (it branches and
rewinds); ``--linear`` first writes a copy of FILE whose entries form one chain (each
entry's parent is the line before it), so the path is the whole file: the export's
memory must not grow with it.

    python benches/export_vs_plain.py FILE [--linear COPY] [--rounds 3]
    # one JSON line per run, then a summary line per format
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

PEER = Path(__file__).with_name("plain_export.py")
FORMATS = ("markdown", "html")

_PARENT_RE = re.compile(rb'"parentId":(?:null|"[^"]*")')
_ID_RE = re.compile(rb'"id":"([^"]*)"')


def linear_copy(src: str, dst: str) -> None:
    """``src`` with every entry's ``parentId`` set to the entry on the line before (the
    first entry a root): one path through the whole file. The header is kept; a line
    without an id or a parentId is copied as it is."""
    prev: bytes | None = None
    with open(src, "rb") as f, open(dst, "wb") as out:
        out.write(f.readline())
        for line in f:
            m, i = _PARENT_RE.search(line), _ID_RE.search(line)
            if m is not None and i is not None:
                new = b'"parentId":null' if prev is None else b'"parentId":"' + prev + b'"'
                line = line[:m.start()] + new + line[m.end():]
                prev = i.group(1)
            out.write(line)


def _child(argv: list[str]) -> str:
    """The stdout of one child process.

    Raises:
        RuntimeError: it failed.
    """
    proc = subprocess.run(argv, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[3:6]} failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    return proc.stdout.decode(errors="replace")


def _rss_of(argv: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB) and stdout of ``argv``, run from a fresh wrapper
    process (whose ``RUSAGE_CHILDREN`` then holds this child's peak alone)."""
    wrapper = [sys.executable, "-c",
               "import resource,subprocess,sys,time,json;t=time.perf_counter();"
               "p=subprocess.run(sys.argv[1:],capture_output=True);"
               "s=time.perf_counter()-t;"
               "sys.stderr.buffer.write(p.stderr);sys.stdout.buffer.write(p.stdout);"
               "print(json.dumps({'seconds':s,'rss':resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}));"
               "sys.exit(p.returncode)", *argv]
    out = _child(wrapper)
    last = json.loads(out.strip().splitlines()[-1])
    return float(last["seconds"]), int(last["rss"]), out


def ours(file: str, out: str, fmt: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "sessiontree", "export", file, "--format", fmt, "--out", out]
    if fmt == "html":
        argv += ["--branches", "path"]
    seconds, rss, _ = _rss_of(argv)
    return {"who": "sessiontree", "format": fmt, "seconds": round(seconds, 3), "peak_rss_kb": rss,
            "bytes": os.path.getsize(out)}


def peer(file: str, out: str, fmt: str) -> dict[str, Any]:
    seconds, rss, stdout = _rss_of([sys.executable, str(PEER), file, out, fmt])
    r = json.loads(stdout.strip().splitlines()[-2])
    return {"who": "plain", "format": fmt, "seconds": round(seconds, 3), "peak_rss_kb": rss, "bytes": r["bytes"],
            "path": r["path"]}


def run(file: str, scratch: str, rounds: int) -> dict[str, dict[str, Any]]:
    """Best-of-``rounds`` of both writers per format; prints each run as a JSON line."""
    best: dict[str, dict[str, Any]] = {}
    for fmt in FORMATS:
        runs: dict[str, list[dict[str, Any]]] = {"sessiontree": [], "plain": []}
        for k in range(rounds):
            pair = (ours, peer) if k % 2 == 0 else (peer, ours)
            for fn in pair:
                r = fn(file, os.path.join(scratch, f"{fn.__name__}.{fmt}"), fmt)
                print(json.dumps(r), flush=True)
                runs[r["who"]].append(r)
        a = min(runs["sessiontree"], key=lambda r: r["seconds"])
        b = min(runs["plain"], key=lambda r: r["seconds"])
        best[fmt] = {"format": fmt, "sessiontree_s": a["seconds"], "plain_s": b["seconds"],
                     "ratio": round(b["seconds"] / a["seconds"], 2),
                     "sessiontree_rss_mb": round(max(r["peak_rss_kb"] for r in runs["sessiontree"]) / 1024),
                     "plain_rss_mb": round(max(r["peak_rss_kb"] for r in runs["plain"]) / 1024),
                     "sessiontree_out_mb": round(a["bytes"] / 2**20, 1), "plain_out_mb": round(b["bytes"] / 2**20, 1),
                     "path": b["path"]}
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--linear", metavar="COPY", help="write FILE as one chain to COPY first, and measure COPY")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scratch", default=None, help="folder for the outputs (default: beside the session)")
    a = p.parse_args()
    file = a.file
    if a.linear:
        linear_copy(file, a.linear)
        file = a.linear
    scratch = a.scratch or os.path.dirname(os.path.abspath(file))
    print(json.dumps({"file": file, "bytes": os.path.getsize(file), "load_before": os.getloadavg()}), flush=True)
    best = run(file, scratch, a.rounds)
    for row in best.values():
        print(json.dumps(row), flush=True)
    print(json.dumps({"load_after": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
