"""A whole history against the tools a user would pick instead, in one run (issue 25).

Usage: ``python benches/history.py ROOT [--rounds N] [--out FILE.json]``, ROOT a
sessions root in Pi's layout (``sessiontree generate ROOT --sessions 2000 --size
930MB``). Every figure is the wall time of a fresh process (the command as a user runs
it: the ``sessiontree`` script installed beside this interpreter; its CPU time, user + system from ``wait4``, beside it), page cache warm, the
package's byte code compiled first (as an installed wheel's is), best and median of
``--rounds`` rounds that alternate the tools; the load average is noted before and
after. docs/BENCHMARKS.md, "A history against rg, grep, DuckDB
and cat", says how to read it.

* search: ``sessiontree search WORD ROOT --all`` (page of 20) against ``rg -l -i WORD``
  and ``grep -rli WORD`` on the same files; *first* with a new catalog (nothing
  indexed: the files are read), *warm* after ``sessiontree index``; a rare word, a word
  in nearly every file, a phrase; all hits of the common word (``--limit 0 --json``)
  with the process's peak memory. Checked: the files of sessiontree's hits are among
  rg's (rg matches bytes anywhere: its files are a superset), first = warm =
  ``--no-cache``.
* usage: ``sessiontree usage REPORT ROOT --all --json`` against DuckDB
  (``read_json_auto`` + SQL over the JSONL, in a fresh process); first (new catalog) and
  warm, by model, day, week, month, project and session. Checked: by model, the
  records and token sums equal DuckDB's, the cost to 1e-9 (DuckDB sums floats in its
  own order; sessiontree's sum is exact).
  The warm report's call alone is timed too (``catalog.usage`` in a fresh process,
  the interpreter's start and imports left out; wall and ``process_time``).
* listing: ``sessiontree ls ROOT --all --json`` first and warm against ``cat`` of every
  file.
* index: ``sessiontree index ROOT --all`` once (time, catalog and segments on disk),
  and after one entry is appended to one session (the bytes it reads).

``--only usage``: DuckDB, the index, warm usage (with each process's peak RSS) and the
append, nothing else (a 20,000-session history's search and first answers take hours).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The command as a user runs it: the installed `sessiontree` script beside this
# interpreter (`python -m sessiontree` adds runpy's imports, ~3 ms of CPU a process).
_SCRIPT = os.path.join(os.path.dirname(sys.executable), "sessiontree")
ST = [_SCRIPT] if os.access(_SCRIPT, os.X_OK) else [sys.executable, "-m", "sessiontree"]
DUCK = """
import duckdb, json, sys
con = duckdb.connect()
con.sql("set enable_progress_bar = false")
rows = con.sql('''
select coalesce(message.provider, '') || '/' || coalesce(message.model, '') as model, count(*),
       sum(message.usage.input), sum(message.usage.output), sum(message.usage.cacheRead),
       sum(message.usage.cacheWrite), sum(message.usage.totalTokens), sum(message.usage.cost.total)
from read_json_auto('%s/*/*.jsonl', format = 'newline_delimited', union_by_name = true,
                    maximum_object_size = 1073741824)
where type = 'message' and message.role = 'assistant' and message.usage is not null
group by 1 order by 1''').fetchall()
json.dump([list(r) for r in rows], sys.stdout)
"""


def cat_argv(root: str, files: list[str]) -> list[str]:
    """``cat`` of every file (through ``xargs`` past what one command line holds)."""
    if len(files) < 5000:
        return ["cat", *files]
    return ["sh", "-c", f"find {shlex.quote(root)} -name '*.jsonl' -print0 | sort -z | xargs -0 cat"]


CALL = """
import json, os, sys, time
from sessiontree import catalog
from sessiontree.catalog import _files, _store, _usage  # what the call imports lazily
root, group, cat = sys.argv[1:]
folders = [os.path.join(root, d) for d in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, d))]
t, c = time.perf_counter(), time.process_time()
catalog.usage(group, folders, catalog=cat)
print(time.perf_counter() - t, time.process_time() - c)
"""
"""One warm report's call in a fresh process (the interpreter's start and imports left out)."""


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def files_of(root: str) -> list[str]:
    return sorted(str(p) for d in sorted(Path(root).iterdir()) if d.is_dir() for p in d.glob("*.jsonl"))


class Secs(float):
    """Wall seconds of one process, with its CPU seconds (user + system, ``wait4``) as
    ``cpu``: on a shared machine CPU time moves less with the load than wall time."""

    cpu: float = math.nan


def timed(argv: list[str], env: dict[str, str] | None = None, peak: bool = False) -> tuple[Secs, bytes, int]:
    """Wall seconds (with the CPU seconds: :class:`Secs`), stdout and (``peak``) peak RSS
    in bytes of one process: its ``VmHWM``, read from /proc while it runs (``wait4``'s
    ``ru_maxrss`` counts the parent's pages the child had at fork)."""
    import threading

    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    hwm = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm[0] = max(hwm[0], int(line.split()[1]) * 1024)
            except OSError:
                pass
            stop.wait(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    if peak:
        watcher.start()
    out = p.stdout.read() if p.stdout else b""
    _pid, status, usage = os.wait4(p.pid, 0)
    wall = Secs(time.perf_counter() - t)
    wall.cpu = usage.ru_utime + usage.ru_stime
    code = p.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    if peak:
        watcher.join()
    if code not in (0, 1):  # rg and grep exit 1 when nothing matches
        raise RuntimeError(f"{' '.join(argv)}: exit {code}")
    return wall, out, hwm[0]


class Table:
    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}
        self.info: dict[str, Any] = {}

    def add(self, name: str, seconds: float) -> None:
        self.rows.setdefault(name, []).append(seconds)
        cpu = getattr(seconds, "cpu", None)
        if cpu is not None:
            self.cpu.setdefault(name, []).append(cpu)

    def best(self, name: str) -> float:
        return min(self.rows[name])

    def median(self, name: str) -> float:
        return statistics.median(self.rows[name])


def fresh_catalog(tmp: str) -> str:
    """A new catalog, and no session index kept (a first run on a new machine has
    neither; ``ls`` and ``index`` would reuse kept indexes)."""
    path = os.path.join(tmp, f"c{time.monotonic_ns()}.sqlite3")
    shutil.rmtree(os.environ["SESSIONTREE_INDEX"], ignore_errors=True)
    return path


def drop_catalog(path: str) -> None:
    for suffix in ("", "-wal", "-shm", ".lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)
    shutil.rmtree(path + ".idx", ignore_errors=True)


def hit_files(out: bytes) -> set[str]:
    return {h["path"] for h in json.loads(out)["hits"]}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rare", default="zebrafish")
    ap.add_argument("--common", default="the")
    ap.add_argument("--phrase", default="the session")
    ap.add_argument("--out")
    ap.add_argument("--only", choices=("usage",),
                    help="usage only: DuckDB, index, warm usage (each report, the call alone, peak RSS), the "
                         "append; no search, ls or first report (a 20,000-session history in minutes, not hours)")
    args = ap.parse_args(argv)
    only_usage = args.only == "usage"
    root = os.path.abspath(args.root)
    files = files_of(root)
    total = sum(os.path.getsize(f) for f in files)
    rg = shutil.which("rg")
    grep = shutil.which("grep")
    t = Table()
    t.info.update(root=root, files=len(files), bytes=total, rounds=args.rounds, load_before=load(),
                  python=sys.version.split()[0], rg=rg is not None)
    import sessiontree

    # Byte code as an installed package has it (a checkout run with
    # PYTHONDONTWRITEBYTECODE would compile the modules it imports in every process).
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(sessiontree.__file__)],
                   check=True, stdout=subprocess.DEVNULL)
    tmp = tempfile.mkdtemp(prefix="st-history-")
    # The sessions' kept indexes in the run's own folder, never the user's cache.
    os.environ["SESSIONTREE_INDEX"] = os.path.join(tmp, "index")
    checks: dict[str, Any] = {}
    try:
        for f in files:  # page cache warm
            with open(f, "rb") as fh:
                while fh.read(1 << 20):
                    pass
        words = {"rare": args.rare, "common": args.common, "phrase": f'"{args.phrase}"'}
        # ------------------------------------------------------------ first answers
        for _ in range(args.rounds if only_usage else 0):
            w, out, _ = timed([sys.executable, "-c", DUCK % root])
            t.add("duckdb model", w)
            checks["duckdb"] = out
        for _ in range(0 if only_usage else args.rounds):
            w, _out, _ = timed(cat_argv(root, files))
            t.add("cat", w)
            for kind, word in words.items():
                raw = word.strip('"')
                if rg:
                    w, out, _ = timed([rg, "-l", "-i", "--", raw, root] if kind != "phrase"
                                      else [rg, "-l", "-i", "-F", "--", raw, root])
                    t.add(f"rg {kind}", w)
                    checks[f"rg files {kind}"] = set(out.decode().split())
                if grep and kind == "rare":
                    w, _out, _ = timed([grep, "-rli", "--", raw, root])
                    t.add(f"grep {kind}", w)
                c = fresh_catalog(tmp)
                w, out, _ = timed([*ST, "search", word, root, "--all", "--catalog", c, "--json"])
                drop_catalog(c)
                t.add(f"search first {kind}", w)
                checks[f"first {kind}"] = out
            c = fresh_catalog(tmp)
            w, out, _ = timed([*ST, "usage", "model", root, "--all", "--catalog", c, "--json"])
            t.add("usage first model", w)
            checks["usage first"] = out
            drop_catalog(c)
            w, out, _ = timed([sys.executable, "-c", DUCK % root])
            t.add("duckdb model", w)
            checks["duckdb"] = out
            c = fresh_catalog(tmp)
            w, out, _ = timed([*ST, "ls", root, "--all", "--catalog", c, "--json"])
            t.add("ls first", w)
            drop_catalog(c)
        # ------------------------------------------------------------------ index
        c = fresh_catalog(tmp)
        w, out, _ = timed([*ST, "index", root, "--all", "--catalog", c, "--json"])
        t.add("index first", w)
        t.info["index"] = json.loads(out)
        seg = sum(p.stat().st_size for p in Path(c + ".idx").glob("seg-*"))
        t.info.update(catalog_bytes=os.path.getsize(c), segment_bytes=seg)
        # ------------------------------------------------------------------- warm
        for _ in range(args.rounds):
            timed(cat_argv(root, files))
            for kind, word in ({} if only_usage else words).items():
                w, out, _ = timed([*ST, "search", word, root, "--all", "--catalog", c, "--json"])
                t.add(f"search warm {kind}", w)
                checks[f"warm {kind}"] = out
                w, _out, _ = timed([*ST, "search", word, root, "--all", "--catalog", c])
                t.add(f"search warm {kind} (text)", w)
            if not only_usage:
                w, out, rss = timed([*ST, "search", args.common, root, "--all", "--catalog", c, "--limit", "0",
                                     "--json"], peak=True)
                t.add("search warm common all", w)
                t.info["all hits peak rss"] = max(rss, t.info.get("all hits peak rss", 0))
                checks["all hits"] = out
            for group in ("model", "daily", "weekly", "monthly", "project", "session"):
                w, out, rss = timed([*ST, "usage", group, root, "--all", "--catalog", c, "--json"], peak=True)
                t.add(f"usage warm {group}", w)
                t.info[f"usage warm {group} peak rss"] = max(rss, t.info.get(f"usage warm {group} peak rss", 0))
                checks[f"usage warm {group}"] = out
                # The table as a user sees it (piped here: no terminal to fit).
                w, out, _ = timed([*ST, "usage", group, root, "--all", "--catalog", c])
                t.add(f"usage warm {group} (table)", w)
                checks[f"usage warm {group} (table)"] = out
            for group in ("model", "daily", "session"):
                _w, out, _ = timed([sys.executable, "-c", CALL, root, group, c])
                wall, cpu = map(float, out.split())
                call = Secs(wall)
                call.cpu = cpu
                t.add(f"usage warm {group} (call)", call)
            if not only_usage:
                w, _out, _ = timed([*ST, "ls", root, "--all", "--catalog", c, "--json"])
                t.add("ls warm", w)
        # --------------------------------------------------------- one append
        work = os.path.join(tmp, "append")
        target = files[len(files) // 2]
        shutil.copytree(os.path.dirname(target), os.path.join(work, "p"))
        mine = os.path.join(work, "p", os.path.basename(target))
        c2 = fresh_catalog(tmp)
        timed([*ST, "index", work, "--all", "--catalog", c2, "--json"])
        before = os.path.getsize(mine)
        with open(mine, "ab") as f:
            last = json.loads(Path(mine).read_bytes().splitlines()[-1])
            f.write(json.dumps({"type": "message", "id": "appended1", "parentId": last.get("id"),
                                "timestamp": "2026-01-01T00:00:00.000Z",
                                "message": {"role": "user", "content": "one more question", "timestamp": 1767225600000}},
                               separators=(",", ":")).encode() + b"\n")
        appended = os.path.getsize(mine) - before
        w, out, _ = timed([*ST, "index", work, "--all", "--catalog", c2, "--json"])
        t.info["append"] = {"appended_bytes": appended, "index_read_bytes": json.loads(out)["bytesRead"], "seconds": w}
        # ------------------------------------------------------------------ checks
        no_cache = {k: timed([*ST, "search", w_, root, "--all", "--no-cache", "--json"])[1]
                    for k, w_ in ({} if only_usage else words).items()}
        for kind in ({} if only_usage else words):
            first, warm = json.loads(checks[f"first {kind}"]), json.loads(checks[f"warm {kind}"])
            assert first == warm == json.loads(no_cache[kind]), kind
            if rg:
                extra = hit_files(checks[f"warm {kind}"]) - checks[f"rg files {kind}"]
                t.info[f"hits of {kind} outside rg's files"] = len(extra)
            t.info[f"hits {kind}"] = warm["total"]
        if not only_usage:
            assert json.loads(checks["all hits"])["total"] == json.loads(checks["warm common"])["total"]
        duck = {r[0]: r for r in json.loads(checks["duckdb"])}
        mine_usage = json.loads(checks["usage warm model"])
        if not only_usage:
            assert mine_usage == json.loads(checks["usage first"])
        for line in mine_usage["lines"]:
            d = duck.pop(line["key"])
            assert [line["records"], line["input"], line["output"], line["cacheRead"], line["cacheWrite"],
                    line["totalTokens"]] == d[1:7], line
            assert abs(line["cost"] - d[7]) <= 1e-9 * max(1.0, abs(d[7])), line
        assert not duck, duck
        for group in ("model", "daily", "weekly", "monthly", "project", "session"):
            no_cache_usage = timed([*ST, "usage", group, root, "--all", "--no-cache", "--json"])[1]
            assert json.loads(no_cache_usage) == json.loads(checks[f"usage warm {group}"]), group
            table = checks[f"usage warm {group} (table)"].decode().splitlines()
            keys = [x["key"] for x in json.loads(no_cache_usage)["lines"]]
            assert [row.split("  ")[0].rstrip() for row in table[1:1 + len(keys)]] == keys, group
        t.info["checks"] = ("usage by model = DuckDB; warm usage = --no-cache, every report (its table's keys too)"
                            if only_usage else
                            "first = warm = --no-cache; hits within rg's files; usage by model = DuckDB; "
                            "warm usage = --no-cache, every report (its table's keys too)")
    finally:
        t.info["load_after"] = load()
        shutil.rmtree(tmp, ignore_errors=True)
        if args.out:
            Path(args.out).write_text(json.dumps({"info": t.info, "rows": t.rows, "cpu": t.cpu}, indent=1,
                                                 default=str))
    report(t)
    return 0


def report(t: Table) -> None:
    i = t.info
    gb = i["bytes"] / 1e9
    print(f"\n{i['files']:,} sessions, {gb:.2f} GB; rounds {i['rounds']}; load {i['load_before']} -> {i['load_after']}")
    print(f"index: {i['index']}; catalog {i['catalog_bytes'] / 1e6:.1f} MB + segments "
          f"{i['segment_bytes'] / 1e6:.1f} MB = {(i['catalog_bytes'] + i['segment_bytes']) / i['bytes']:.1%} "
          f"of the sessions; append {i['append']}")
    if "all hits peak rss" in i:
        print(f"all hits of the common word: peak RSS {i['all hits peak rss'] / 1e6:.0f} MB")
    print(f"checks: {i.get('checks')}")
    peaks = {k: v for k, v in i.items() if k.startswith("usage warm") and k.endswith("peak rss")}
    if peaks:
        print("usage warm peak RSS: " + ", ".join(f"{k.split()[2]} {v / 1e6:.0f} MB" for k, v in peaks.items()))
    print("\n| question | sessiontree best (median); CPU best | peer best (median); CPU best | ratio |"
          "\n|---|--:|--:|--:|")

    def ms(name: str) -> str:
        if name not in t.rows:
            return "-"
        cpu = f"; {min(t.cpu[name]) * 1000:,.0f}" if t.cpu.get(name) else ""
        return f"{t.best(name) * 1000:,.0f} ms ({t.median(name) * 1000:,.0f}){cpu}"

    pairs = [
        ("search, first, rare word", "search first rare", "rg rare"),
        ("search, first, common word", "search first common", "rg common"),
        ("search, first, phrase", "search first phrase", "rg phrase"),
        ("search, warm, rare word", "search warm rare", "rg rare"),
        ("search, warm, common word (page of 20)", "search warm common", "rg common"),
        ("search, warm, common word, text output", "search warm common (text)", "rg common"),
        ("search, warm, phrase", "search warm phrase", "rg phrase"),
        ("search, warm, common word, all hits (--limit 0 --json)", "search warm common all", "rg common"),
        ("search, first, rare word, vs grep -rli", "search first rare", "grep rare"),
        ("usage by model, first", "usage first model", "duckdb model"),
        *[(f"usage by {r}, warm", f"usage warm {r}", "duckdb model")
          for r in ("model", "daily", "weekly", "monthly", "project", "session")],
        *[(f"usage by {r}, warm, the table", f"usage warm {r} (table)", "duckdb model")
          for r in ("model", "daily", "weekly", "monthly", "project", "session")],
        *[(f"usage by {r}, warm, the call alone (one fresh process)", f"usage warm {r} (call)", "duckdb model")
          for r in ("model", "daily", "session")],
        ("ls, first", "ls first", "cat"),
        ("ls, warm", "ls warm", "cat"),
    ]
    for label, mine, peer in pairs:
        if mine not in t.rows:
            continue
        ratio = f"{t.best(mine) / t.best(peer):.2f}×" if peer in t.rows else "-"
        print(f"| {label} | {ms(mine)} | {peer}: {ms(peer)} | {ratio} |")
    print(f"| index, first | {ms('index first')} | | |")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
