"""Where a search of a history spends its time, part by part, in one process (issue 25).

Usage: ``python benches/search_parts.py ROOT [--catalog FILE] [--rounds N]``, ROOT a
sessions root in Pi's layout. Page cache warm; times are ``perf_counter`` (wall) and
``process_time`` (CPU of every thread), best of ``--rounds``, rounds alternating:

* the first search's native pass alone (``_sessiontree.search_files`` over every file,
  two threads) for a rare word, against ``rg -l -i`` of the same word in a fresh process;
* with ``--catalog`` (a catalog built by ``sessiontree index ROOT --all``), all the hits
  of a common word: the index query (``_Search``), reading their snippets
  (``_Search.snippets``, a thousand at a time, one thread), making the hits
  (``_Search.page``), and their JSON as the Python writer makes it (``items_json``);
  against the native writer ``--json`` uses (``_Search.json``: snippets and JSON in
  the extension), on one thread and on ``_THREADS``.

docs/BENCHMARKS.md, "A history against rg, grep, DuckDB and cat", cites it.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import subprocess
import sys
import time
from typing import Any

from sessiontree._select import native_module
from sessiontree.catalog import _search
from sessiontree.catalog._files import folder_files
from sessiontree.cli.search import items_json


def timed(fn: Any) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--catalog")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rare", default="zebrafish")
    ap.add_argument("--common", default="the")
    args = ap.parse_args(argv)
    native = native_module()
    if native is None:
        print("the native extension is not built")
        return 1
    with open("/proc/loadavg") as f:
        print("load", " ".join(f.read().split()[:3]))
    root = os.path.abspath(args.root)
    folders = [os.path.join(root, d) for d in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, d))]
    paths = sorted(os.fsencode(p) for d in folders for _n, p, _st in folder_files(d))
    for p in paths:  # page cache warm
        with open(p, "rb") as fh:
            while fh.read(1 << 20):
                pass
    terms, uncased = _search._terms(_search.parse_query(args.rare))
    rg = shutil.which("rg")
    rows: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        w, c, _r = timed(lambda: native.search_files(paths, terms, uncased, 2, 20, False))
        rows.setdefault("first search, native pass alone", []).append((w, c))
        if rg:
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            w, _c, _r = timed(lambda: subprocess.run([rg, "-l", "-i", "--", args.rare, root],
                                                     stdout=subprocess.DEVNULL))
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            c = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            rows.setdefault("rg -l -i, fresh process", []).append((w, c))
    if args.catalog:
        q = _search.parse_query(args.common)
        for _ in range(args.rounds):
            w, c, s = timed(lambda: _search._Search(q, folders, args.catalog, False, "relevance", None, None, None))
            rows.setdefault("all hits: index query", []).append((w, c))
            hits = list(s.ordered())
            chunks = [hits[k:k + _search._CHUNK] for k in range(0, len(hits), _search._CHUNK)]
            paused = gc.isenabled()
            gc.disable()  # as the command does
            try:
                w, c, got = timed(lambda: [s.snippets(ch, 1) for ch in chunks])
                rows.setdefault(f"all hits: snippets ({len(hits):,} hits)", []).append((w, c))
                w, c, made = timed(lambda: [s.page(ch, g) for ch, g in zip(chunks, got)])
                rows.setdefault("all hits: made", []).append((w, c))
                quoted: dict[str, str] = {}
                w, c, _r = timed(lambda: [items_json(m, quoted) for m in made])
                rows.setdefault("all hits: JSON of the made hits (Python)", []).append((w, c))
                w, c, _r = timed(lambda: [s.json(ch, 1) for ch in chunks])
                rows.setdefault("all hits: snippets and JSON natively, one thread", []).append((w, c))
                w, c, _r = timed(lambda: [s.json(ch) for ch in chunks])
                rows.setdefault(f"all hits: the same, {_search._THREADS} threads", []).append((w, c))
            finally:
                if paused:
                    gc.enable()
            s.close()
    for name, xs in rows.items():
        print(f"{name:45} wall {min(x[0] for x in xs) * 1000:8,.0f} ms   cpu {min(x[1] for x in xs) * 1000:8,.0f} ms"
              f"   (rounds {len(xs)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
