"""Two copies of the package, A and B, running the same ``sessiontree`` commands as fresh
processes in one run: the CPU time of each whole process (start-up included).

Usage: ``python benches/start_ab.py DIR_A DIR_B ROOT [--rounds N] [--rare WORD]``. DIR_A and DIR_B each
hold a ``sessiontree`` package with its built extension (``git archive COMMIT python |
tar -x -C DIR``, then the built ``_sessiontree*.so`` copied in); each is put first on
``PYTHONPATH`` of the installed ``sessiontree`` script. ROOT is a history with a warm
catalog: set ``SESSIONTREE_CATALOG`` (and ``XDG_CACHE_HOME``) to a temporary folder and
run ``sessiontree index ROOT --all`` once before. Each round runs every command once per
copy and ``rg -l -i the ROOT`` (with ``--rare WORD``: ``search WORD ROOT --no-cache`` per copy
and ``rg -l -i WORD ROOT`` too; the order alternating); each figure is the best (median)
of the rounds in CPU time (user + system, ``wait4``: it moves far less than wall time on
a shared machine), then wall time. Each command's stdout, stderr and status must be the
same from both copies (``--differ COMMAND``: but for this one, which B changes on
purpose). docs/BENCHMARKS.md, "A fifth round: a smaller start".
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes, bytes, int]:
    """CPU and wall milliseconds, stdout, stderr and status of one process (its output
    goes to files: reading pipes would reap it before ``wait4`` could)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = status  # reaped here: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        return (ru.ru_utime + ru.ru_stime) * 1000, wall * 1000, out.read(), err.read(), status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("root")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--differ", action="append", default=[], metavar="COMMAND",
                    help="a command whose output B changes on purpose (said, not failed): e.g. 'usage session (table)'")
    ap.add_argument("--rare", metavar="WORD",
                    help="also a first search of WORD (`search WORD ROOT --no-cache`) against `rg -l -i WORD`")
    args = ap.parse_args()
    script = shutil.which("sessiontree", path=os.path.dirname(sys.executable))
    if script is None:
        raise SystemExit("no sessiontree script beside this python")
    commands = {
        "usage model --json": ["usage", "model", args.root, "--all", "--json"],
        "usage model (table)": ["usage", "model", args.root, "--all"],
        "usage session --json": ["usage", "session", args.root, "--all", "--json"],
        "usage session (table)": ["usage", "session", args.root, "--all"],
        "search the (page)": ["search", "the", args.root, "--all"],
        "search the --json": ["search", "the", args.root, "--all", "--json"],
        "search the --limit 0 --json": ["search", "the", args.root, "--all", "--limit", "0", "--json"],
        "ls": ["ls", args.root, "--all"],
        "--version": ["--version"],
    }
    if args.rare:
        commands[f"search {args.rare} --no-cache"] = ["search", args.rare, args.root, "--all", "--no-cache"]
    runs: list[tuple[str, list[str], dict[str, str]]] = [("python -c pass", [sys.executable, "-c", "pass"], dict(os.environ))]
    for name, argv in commands.items():
        for label, folder in (("A", args.a), ("B", args.b)):
            env = {**os.environ, "PYTHONPATH": os.path.abspath(folder)}
            runs.append((f"{name} {label}", [sys.executable, script, *argv], env))
    if shutil.which("rg"):
        runs.append(("rg -l -i the", ["rg", "-l", "-i", "the", args.root], dict(os.environ)))
        if args.rare:
            runs.append((f"rg -l -i {args.rare}", ["rg", "-l", "-i", args.rare, args.root], dict(os.environ)))
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    wall: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    outputs: dict[str, tuple[bytes, bytes, int]] = {}
    print(f"load before: {os.getloadavg()[0]:.2f}")
    for i in range(args.rounds):
        for name, argv, env in (runs if i % 2 == 0 else runs[::-1]):
            c, w, out, err, status = _run(argv, env)
            cpu[name].append(c)
            wall[name].append(w)
            outputs[name] = (out, err, status)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    for name in commands:
        if outputs[f"{name} A"] != outputs[f"{name} B"]:
            print(f"different output (as asked): {name}" if name in args.differ else f"DIFFERENT OUTPUT: {name}")
            if name not in args.differ:
                return 1
    for name in cpu:
        print(f"{name:28s} CPU {min(cpu[name]):7.1f} ms ({statistics.median(cpu[name]):7.1f})   "
              f"wall {min(wall[name]):7.1f} ms ({statistics.median(wall[name]):7.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
