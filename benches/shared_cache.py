"""The catalog and the persisted index as one cache (issue 27, item 6): what a listing
costs when the session was opened before, against the listing's scan of the file, each
in a fresh process with a warm page cache, beside ``wc -l`` of the same file.

For each file (copied into a folder of its own, made old enough for its index to be
kept at once: ``_caches.INDEX_SETTLE``), rounds of:

* ``wc -l``;
* ``ls, scan``: a listing with an empty catalog and no index kept (the file is read,
  as before);
* ``first open``: ``SessionManager.open`` (a scan; its index kept);
* ``ls after open``: a listing with an empty catalog, the index kept (the index reread,
  a few lines read);
* ``usage pass``, ``search pass``: the catalog's read of the file from its start for
  usage (``scan_file`` with the usage log) and for search (with docs too): what a kept
  index could spare them is the listing's framing (``ls, scan``); the rest is the text
  and usage of user and assistant lines, which no index holds.

Each figure is the call alone (``refresh_for`` of the folder, its modules imported
before, and the catalog's commit with it; or the open): wall
(``perf_counter``) and CPU (``process_time``), with the load average just before; min
and median over the rounds; and the bytes the listing read (its own count).

Usage: ``python benches/shared_cache.py FILE... [--rounds N] [--json OUT]``
(docs/BENCHMARKS.md, "One cache").
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

_LS = r"""
import json, os, sys, time
from sessiontree.catalog import open_store, refresh_for
import sessiontree.catalog._indexer  # what the first refresh imports, not timed
load = os.getloadavg()[0]
store = open_store()
t, c = time.perf_counter(), time.process_time()
found = refresh_for(store, [sys.argv[1]])
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps({"wall": t1 - t, "cpu": c1 - c, "load": load, "read": sum(f.bytes_read for f in found)}))
"""

_PASS = r"""
import json, os, sys, time
from sessiontree import _sessiontree
from sessiontree.catalog._extract import scan_file
load = os.getloadavg()[0]
docs = sys.argv[2] == "docs"
t, c = time.perf_counter(), time.process_time()
r = scan_file(sys.argv[1], 0, b"", True, 1 << 62, docs=docs, native=_sessiontree)
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps({"wall": t1 - t, "cpu": c1 - c, "load": load, "read": r[0][0]}))
"""

_OPEN = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
from sessiontree import SessionManager
load = os.getloadavg()[0]
t, c = time.perf_counter(), time.process_time()
m = SessionManager.open(sys.argv[1], backend="native")
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps({"wall": t1 - t, "cpu": c1 - c, "load": load, "read": 0}))
"""


def measure(path: str, rounds: int, work: Path) -> dict[str, object]:
    folder = work / "sessions"
    folder.mkdir()
    copy = folder / "s.jsonl"
    shutil.copyfile(path, copy)
    past = time.time() - 3600
    os.utime(copy, (past, past))
    time.sleep(2.1)  # its ctime is now; an index is kept once it is 2 s old
    cache = work / "cache"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), HOME=str(work))
    for k in ("SESSIONTREE_INDEX", "SESSIONTREE_CATALOG", "SESSIONTREE_BACKEND"):
        env.pop(k, None)
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in
                                               ("wc -l", "ls, scan", "first open", "ls after open",
                                                                "usage pass", "search pass")}
    for _ in range(rounds):
        wall, cpu, load = wc_l(str(copy))
        rows["wc -l"].append({"wall": wall, "cpu": cpu, "load": load, "read": os.path.getsize(copy)})
        shutil.rmtree(cache, ignore_errors=True)
        rows["ls, scan"].append(json_child(_LS, str(folder), env))
        shutil.rmtree(cache, ignore_errors=True)
        rows["first open"].append(json_child(_OPEN, str(copy), env))
        for p in cache.glob("sessiontree/catalog*"):
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
        rows["ls after open"].append(json_child(_LS, str(folder), env))
        rows["usage pass"].append(json_child(_PASS, str(copy), env, "usage"))
        rows["search pass"].append(json_child(_PASS, str(copy), env, "docs"))
    return {"file": path, "bytes": os.path.getsize(path), "rows": rows}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json")
    a = p.parse_args(argv)
    results = []
    for f in a.files:
        with tempfile.TemporaryDirectory(prefix="st-shared-") as d:
            r = measure(f, a.rounds, Path(d))
        results.append(r)
        print(f"{f} ({r['bytes']:,} bytes)")
        rows = r["rows"]
        assert isinstance(rows, dict)
        for k, v in rows.items():
            loads = [x["load"] for x in v]
            print(f"  {k:14} wall {summary(v, 'wall'):22} cpu {summary(v, 'cpu'):22} "
                  f"read {int(statistics.median(x['read'] for x in v)):>14,}  load {min(loads):.1f}-{max(loads):.1f}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
