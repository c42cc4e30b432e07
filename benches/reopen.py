"""Reopening a session through its persisted index (issue 27), each figure in a fresh
process with a warm page cache, beside ``wc -l`` of the same file in the same run.

For each file: ``first`` = ``SessionManager.open`` with an empty index folder (a scan,
and the index written); ``reopen`` = the same open again (the index read); ``+1 entry``
= an open after another process appended one entry (a child of the leaf) to a copy
of the file (the index read, one line scanned). Each open is followed by ``build_session_context()``. The three
alternate round by round; every figure is the open call alone, wall (``perf_counter``)
and CPU (``process_time``: steadier on a shared machine), with the load average
(``os.getloadavg``) taken just before; min and median over the rounds. Also: the
persisted index's size per entry and the private memory (``RssAnon``) the open added,
per entry.

Usage: ``python benches/reopen.py FILE... [--rounds N] [--json OUT]``
(docs/BENCHMARKS.md, "Reopening").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _fresh import json_child, summary, wc_l

_CHILD = r"""
import gc, json, os, sys, time, warnings
warnings.simplefilter("ignore")
from sessiontree import SessionManager
import sessiontree._native
def anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon"):
                return int(line.split()[1]) * 1024
gc.collect()
base = anon()
load = os.getloadavg()[0]
t, c = time.perf_counter(), time.process_time()
m = SessionManager.open(sys.argv[1], backend="native")
t1, c1 = time.perf_counter(), time.process_time()
gc.collect()
mem = anon() - base
t2, c2 = time.perf_counter(), time.process_time()
ctx = m.build_session_context()
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({"open": t1 - t, "open_cpu": c1 - c, "ctx": t3 - t2, "ctx_cpu": c3 - c2, "entries": len(m),
                  "messages": len(ctx.messages), "anon": mem, "load": load}))
"""

_ENTRY = ('{{"type":"message","id":"{}","parentId":"{}","timestamp":"2026-01-01T00:00:00.000Z",'
          '"message":{{"role":"user","content":"one more","timestamp":1}}}}\n')


def last_id(path: str) -> str:
    """The id of the file's last line (the leaf the next entry continues)."""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (4 << 20)))
        last = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return str(json.loads(last)["id"])


def child(path: str, folder: str) -> dict[str, float]:
    return json_child(_CHILD, path, dict(os.environ, SESSIONTREE_INDEX=folder))


def measure(path: str, rounds: int, work: Path) -> dict[str, object]:
    folder = str(work / "index")
    copy = str(work / "copy.jsonl")
    shutil.copyfile(path, copy)
    past = time.time() - 3600  # old enough to be persisted (INDEX_SETTLE) at once
    os.utime(copy, (past, past))
    time.sleep(2.1)  # the copy's ctime is now; the index is written once it is 2 s old
    child(copy, folder + "-copy")  # the copy's index, read by every "+1 entry" open
    rows: dict[str, list[dict[str, float]]] = {"wc -l": [], "first": [], "reopen": [], "+1 entry": []}
    for k in range(rounds):
        wall, cpu, load = wc_l(path)
        rows["wc -l"].append({"open": wall, "open_cpu": cpu, "load": load})
        shutil.rmtree(folder, ignore_errors=True)
        rows["first"].append(child(path, folder))
        rows["reopen"].append(child(path, folder))
        entry = _ENTRY.format(f"{0xF0000000 + k:08x}", last_id(copy))
        with open(copy, "ab") as f:
            f.write(entry.encode())
        rows["+1 entry"].append(child(copy, folder + "-copy"))
    (idx,) = Path(folder).glob("*.idx")
    entries = rows["reopen"][0]["entries"]
    return {
        "file": path,
        "bytes": os.path.getsize(path),
        "entries": entries,
        "index_bytes_per_entry": idx.stat().st_size / entries,
        "rows": rows,
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json")
    a = p.parse_args(argv)
    results = []
    for path in a.files:
        with tempfile.TemporaryDirectory() as tmp:
            r = measure(path, a.rounds, Path(tmp))
        results.append(r)
        rows = r["rows"]
        assert isinstance(rows, dict)
        print(f"{path}: {r['bytes'] / 2**20:.0f} MiB, {r['entries']:,} entries, "
              f"index {r['index_bytes_per_entry']:.1f} B/entry")
        for name, rs in rows.items():
            line = f"  {name:9} open {summary(rs, 'open')} (cpu {summary(rs, 'open_cpu')})"
            if "ctx" in rs[0]:
                line += f", context {summary(rs, 'ctx')} (cpu {summary(rs, 'ctx_cpu')})"
                line += f", private {statistics.median(x['anon'] for x in rs) / rs[0]['entries']:.0f} B/entry"
            line += f", load {min(x['load'] for x in rs):.1f}-{max(x['load'] for x in rs):.1f}"
            print(line)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
