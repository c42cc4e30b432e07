"""``sessiontree export --format markdown|html`` against the plain-Python writer of the
same path (``plain_export.py``), in one run on one session: each round runs each
writer in a fresh process, in turn (the order rotates), and records wall seconds, CPU
seconds (user + system: what a shared machine steals shows in the wall time, not here)
and peak resident memory (the child's ``ru_maxrss``). The load average is printed
before and after: the machine may be shared. ``--baseline DIR`` adds a third writer:
the export run from another checkout's ``python/`` folder (``PYTHONPATH=DIR``), for an
A/B of a change in the same run.

Each run's output is checked to hold the same entries in the same order as the plain
writer's (the entry ids of its sections): the writers differ in what they add around
them (module docstring of ``plain_export.py``), not in what they export.

A generated session's path to its leaf is a few thousand entries (it branches and
rewinds); ``--linear`` first writes a copy of FILE whose entries form one chain (each
entry's parent is the line before it), so the path is the whole file: the export's
memory must not grow with it.

    python benches/export_vs_plain.py FILE [--linear COPY] [--rounds 3] [--baseline DIR]
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


def linear_copy(src: str, dst: str) -> None:
    """``src`` with every entry's ``parentId`` set to the entry on the line before (the
    first entry a root): one path through the whole file. The header is kept; a line
    without an id or a parentId is copied as it is."""
    prev: str | None = None
    with open(src, "rb") as f, open(dst, "wb") as out:
        out.write(f.readline())
        for line in f:
            m = _PARENT_RE.search(line)
            try:  # the entry's own id: a regex would take a tool call's "id" written before it
                e = json.loads(line)
            except ValueError:
                e = None
            eid = e.get("id") if isinstance(e, dict) else None
            if m is not None and isinstance(eid, str):
                new = b'"parentId":' + json.dumps(prev, ensure_ascii=False).encode("utf-8", "surrogatepass")
                line = line[:m.start()] + new + line[m.end():]
                prev = eid
            out.write(line)


def _child(argv: list[str], env: dict[str, str] | None = None) -> str:
    """The stdout of one child process.

    Raises:
        RuntimeError: it failed.
    """
    proc = subprocess.run(argv, capture_output=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[3:6]} failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    return proc.stdout.decode(errors="replace")


def _measure(argv: list[str], env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """Wall seconds, CPU seconds, peak RSS (KiB) and the stdout of ``argv``, run from a
    fresh wrapper process (whose ``RUSAGE_CHILDREN`` then holds this child's alone)."""
    wrapper = [sys.executable, "-c",
               "import resource,subprocess,sys,time,json;t=time.perf_counter();"
               "p=subprocess.run(sys.argv[1:],capture_output=True);"
               "s=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN);"
               "sys.stderr.buffer.write(p.stderr);sys.stdout.buffer.write(p.stdout);"
               "print(json.dumps({'seconds':s,'cpu':r.ru_utime+r.ru_stime,'rss':r.ru_maxrss}));"
               "sys.exit(p.returncode)", *argv]
    out = _child(wrapper, env)
    last = json.loads(out.strip().splitlines()[-1])
    return {"seconds": round(float(last["seconds"]), 3), "cpu_s": round(float(last["cpu"]), 3),
            "peak_rss_kb": int(last["rss"])}, out


# The entry id that ends each section's header: HTML (both writers) and Markdown (ours
# may escape punctuation and add a label after it; the plain writer does neither).
_HTML_ID_RE = re.compile(rb'href="#a\d+">([^<]*)</a></header>')
_MD_ID_RE = re.compile(rb"^## .* \xc2\xb7 ((?:[^ \n]|\\.)+?)(?: \xc2\xb7 label: .*)?$")


def section_ids(path: str, fmt: str) -> list[bytes]:
    """The entry ids of the sections of an export, in order (read line by line)."""
    out: list[bytes] = []
    with open(path, "rb") as f:
        for line in f:
            if fmt == "html":
                out.extend(_HTML_ID_RE.findall(line))
            elif line.startswith(b"## "):
                m = _MD_ID_RE.match(line.rstrip(b"\n"))
                if m is not None:
                    out.append(m.group(1).replace(b"\\", b""))
    return out


def ours(file: str, out: str, fmt: str, pythonpath: str | None = None) -> dict[str, Any]:
    argv = [sys.executable, "-m", "sessiontree", "export", file, "--format", fmt, "--out", out]
    if fmt == "html":
        argv += ["--branches", "path"]
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    r, _ = _measure(argv, env)
    return {"who": "baseline" if pythonpath else "sessiontree", "format": fmt, **r, "bytes": os.path.getsize(out)}


def peer(file: str, out: str, fmt: str) -> dict[str, Any]:
    r, stdout = _measure([sys.executable, str(PEER), file, out, fmt])
    p = json.loads(stdout.strip().splitlines()[-2])
    return {"who": "plain", "format": fmt, **r, "bytes": p["bytes"], "path": p["path"]}


def run(file: str, scratch: str, rounds: int, baseline: str | None = None) -> dict[str, dict[str, Any]]:
    """Best-of-``rounds`` of each writer per format; prints each run as a JSON line.

    Raises:
        AssertionError: an export's sections are not the plain writer's entries.
    """
    writers = [("sessiontree", lambda o, f: ours(file, o, f)), ("plain", lambda o, f: peer(file, o, f))]
    if baseline:
        writers.append(("baseline", lambda o, f: ours(file, o, f, baseline)))
    best: dict[str, dict[str, Any]] = {}
    for fmt in FORMATS:
        runs: dict[str, list[dict[str, Any]]] = {who: [] for who, _ in writers}
        for k in range(rounds):
            for who, fn in writers[k % len(writers):] + writers[:k % len(writers)]:
                target = os.path.join(scratch, f"{who}.{fmt}")
                r = fn(target, fmt)
                print(json.dumps(r), flush=True)
                runs[who].append(r)
        plain_ids = section_ids(os.path.join(scratch, f"plain.{fmt}"), fmt)
        for who, _ in writers:
            if who != "plain":
                ids = section_ids(os.path.join(scratch, f"{who}.{fmt}"), fmt)
                assert ids == plain_ids, f"{who} {fmt}: {len(ids)} sections, the plain writer {len(plain_ids)}"
        row: dict[str, Any] = {"format": fmt, "path": runs["plain"][0]["path"], "sections_checked": len(plain_ids)}
        b = min(runs["plain"], key=lambda r: r["seconds"])
        b_cpu = min(r["cpu_s"] for r in runs["plain"])
        for who, _ in writers:
            a = min(runs[who], key=lambda r: r["seconds"])
            a_cpu = min(r["cpu_s"] for r in runs[who])
            row[f"{who}_s"] = a["seconds"]
            row[f"{who}_cpu_s"] = a_cpu
            row[f"{who}_rss_mb"] = round(max(r["peak_rss_kb"] for r in runs[who]) / 1024)
            row[f"{who}_out_mb"] = round(a["bytes"] / 2**20, 1)
            if who != "plain":
                row[f"{who}_ratio"] = round(b["seconds"] / a["seconds"], 2)
                row[f"{who}_cpu_ratio"] = round(b_cpu / a_cpu, 2)
        best[fmt] = row
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--linear", metavar="COPY", help="write FILE as one chain to COPY first, and measure COPY")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scratch", default=None, help="folder for the outputs (default: beside the session)")
    p.add_argument("--baseline", metavar="DIR", help="also run the export with PYTHONPATH=DIR (another checkout)")
    a = p.parse_args()
    file = a.file
    if a.linear:
        linear_copy(file, a.linear)
        file = a.linear
    scratch = a.scratch or os.path.dirname(os.path.abspath(file))
    print(json.dumps({"file": file, "bytes": os.path.getsize(file), "load_before": os.getloadavg()}), flush=True)
    best = run(file, scratch, a.rounds, a.baseline)
    for row in best.values():
        print(json.dumps(row), flush=True)
    print(json.dumps({"load_after": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
