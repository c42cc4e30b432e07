"""``sessiontree export ROOT/* --format parquet`` against the plain-Python script that
writes the same tables (``plain_parquet.py``), in one run on one history: each round
runs each exporter in a fresh process into an empty folder, in turn (the order
rotates), and records wall seconds, CPU seconds (user + system of the whole process,
its threads included: what a shared machine steals shows in the wall time, not here)
and peak resident memory (``ru_maxrss``). The load average is printed with every run:
the machine may be shared. ``--baseline DIR`` adds a third exporter: the export run
from another checkout's ``python/`` folder (``PYTHONPATH=DIR``, its own built
extension in it), for an A/B of a change in the same run.

The datasets are checked: sessiontree's and the baseline's hold exactly the same rows
(every column of the three tables, the partition columns included, compared by DuckDB
both ways with ``except all``); the plain script's hold the same entries and tool calls
(``session_id`` and ``entry_id``, ``session_id`` and ``call_id``; its other columns
follow no loader rule: its docstring).

    python benches/parquet_vs_plain.py ROOT [--rounds 2] [--baseline DIR] [--scratch DIR]
    # one JSON line per run, then the best of each exporter and the checks
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PEER = Path(__file__).with_name("plain_parquet.py")

_WRAPPER = ("import resource,subprocess,sys,time,json;t=time.perf_counter();"
            "p=subprocess.run(sys.argv[1:],capture_output=True);"
            "s=time.perf_counter()-t;r=resource.getrusage(resource.RUSAGE_CHILDREN);"
            "sys.stderr.buffer.write(p.stderr);sys.stdout.buffer.write(p.stdout);"
            "print(json.dumps({'seconds':s,'cpu':r.ru_utime+r.ru_stime,'rss':r.ru_maxrss}));"
            "sys.exit(p.returncode)")  # fmt: skip


def _measure(argv: list[str], env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """Wall seconds, CPU seconds, peak RSS (MiB) and the stdout of ``argv``, run from a
    fresh wrapper process (whose ``RUSAGE_CHILDREN`` then holds this child's alone).

    Raises:
        RuntimeError: it failed.
    """
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:4]} failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    out = proc.stdout.decode(errors="replace")
    last = json.loads(out.strip().splitlines()[-1])
    return {"seconds": round(float(last["seconds"]), 2), "cpu_s": round(float(last["cpu"]), 2),
            "peak_rss_mb": round(int(last["rss"]) / 1024), "load": [round(x, 2) for x in os.getloadavg()]}, out  # fmt: skip


def ours(folders: list[str], out: str, pythonpath: str | None = None) -> dict[str, Any]:
    argv = [sys.executable, "-m", "sessiontree", "export", *folders, "--format", "parquet", "--out", out]
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    r, _ = _measure(argv, env)
    return {"who": "baseline" if pythonpath else "sessiontree", **r}


def peer(folders: list[str], out: str) -> dict[str, Any]:
    r, stdout = _measure([sys.executable, str(PEER), out, *folders])
    p = json.loads(stdout.strip().splitlines()[-2])
    return {"who": "plain", **r, "plain_seconds": round(p["seconds"], 2)}


def _sql(out: str, table: str) -> str:
    return f"read_parquet('{out}/{table}/**/*.parquet', hive_partitioning = true)"


def same_rows(a: str, b: str) -> dict[str, int]:
    """Rows per table, the same in both datasets (every column).

    Raises:
        AssertionError: a row of one is not in the other.
    """
    import duckdb

    con = duckdb.connect()
    counts = {}
    for table in ("sessions", "entries", "tool_calls"):
        for x, y in ((a, b), (b, a)):
            extra = con.sql(f"select count(*) from (select * from {_sql(x, table)} except all "
                            f"select * from {_sql(y, table)})").fetchall()[0][0]  # fmt: skip
            assert extra == 0, f"{table}: {extra} rows of {x} are not in {y}"
        counts[table] = con.sql(f"select count(*) from {_sql(a, table)}").fetchall()[0][0]
    return counts


def same_as_plain(ours_out: str, plain_out: str) -> dict[str, int]:
    """Entries and tool calls, the same in both datasets (by their ids).

    Raises:
        AssertionError: they differ.
    """
    import duckdb

    con = duckdb.connect()
    counts = {}
    for table, key in (("entries", "session_id, entry_id"), ("tool_calls", "session_id, call_id")):
        for x, y in ((ours_out, plain_out), (plain_out, ours_out)):
            extra = con.sql(f"select count(*) from (select {key} from {_sql(x, table)} except all "
                            f"select {key} from {_sql(y, table)})").fetchall()[0][0]  # fmt: skip
            assert extra == 0, f"{table}: {extra} rows of {x} are not in {y}"
        counts[table] = con.sql(f"select count(*) from {_sql(plain_out, table)}").fetchall()[0][0]
    return counts


def run(folders: list[str], scratch: str, rounds: int, baseline: str | None = None) -> dict[str, Any]:
    """Best-of-``rounds`` of each exporter; prints each run as a JSON line.

    Raises:
        AssertionError: the datasets differ.
    """
    writers: list[tuple[str, Any]] = [("sessiontree", lambda o: ours(folders, o)), ("plain", lambda o: peer(folders, o))]
    if baseline:
        writers.append(("baseline", lambda o: ours(folders, o, baseline)))
    runs: dict[str, list[dict[str, Any]]] = {who: [] for who, _ in writers}
    for k in range(rounds):
        for who, fn in writers[k % len(writers):] + writers[:k % len(writers)]:
            target = os.path.join(scratch, who)
            shutil.rmtree(target, ignore_errors=True)  # into an empty folder
            r = fn(target)
            print(json.dumps(r), flush=True)
            runs[who].append(r)
    out: dict[str, Any] = {"rounds": rounds}
    plain_cpu = min(r["cpu_s"] for r in runs["plain"])
    plain_s = min(r["seconds"] for r in runs["plain"])
    for who, _ in writers:
        out[f"{who}_s"] = min(r["seconds"] for r in runs[who])
        out[f"{who}_cpu_s"] = min(r["cpu_s"] for r in runs[who])
        out[f"{who}_rss_mb"] = max(r["peak_rss_mb"] for r in runs[who])
        if who != "plain":
            out[f"{who}_ratio"] = round(plain_s / out[f"{who}_s"], 2)
            out[f"{who}_cpu_ratio"] = round(plain_cpu / out[f"{who}_cpu_s"], 2)
    out["checked_against_plain"] = same_as_plain(os.path.join(scratch, "sessiontree"), os.path.join(scratch, "plain"))
    if baseline:
        out["checked_against_baseline"] = same_rows(os.path.join(scratch, "sessiontree"),
                                                    os.path.join(scratch, "baseline"))  # fmt: skip
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="a history in Pi's layout (its project folders are exported)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--scratch", default=None, help="folder for the datasets (default: a temporary one, removed)")
    p.add_argument("--baseline", metavar="DIR", help="also run the export with PYTHONPATH=DIR (another checkout)")
    a = p.parse_args()
    folders = sorted(str(f) for f in Path(a.root).iterdir() if f.is_dir())
    size = sum(f.stat().st_size for f in Path(a.root).glob("*/*.jsonl"))
    scratch = a.scratch or tempfile.mkdtemp(prefix="parquet-vs-plain-")
    print(json.dumps({"root": a.root, "folders": len(folders), "bytes": size, "load_before": os.getloadavg()}), flush=True)
    try:
        print(json.dumps(run(folders, scratch, a.rounds, a.baseline)), flush=True)
    finally:
        if a.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps({"load_after": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
