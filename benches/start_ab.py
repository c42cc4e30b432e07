"""Two copies of the package, A and B, running the same ``sessiontree`` commands as fresh
processes in one run: the CPU time of each whole process (start-up included).

Usage: ``python benches/start_ab.py DIR_A DIR_B ROOT [--rounds N] [--rare WORD ...]``. DIR_A and DIR_B each
hold a ``sessiontree`` package with its built extension (``git archive COMMIT python |
tar -x -C DIR``, then the built ``_sessiontree*.so`` copied in); each is put first on
``PYTHONPATH`` of the installed ``sessiontree`` script. ROOT is a history with a warm
catalog: set ``SESSIONTREE_CATALOG`` (and ``XDG_CACHE_HOME``) to a temporary folder and
run ``sessiontree index ROOT --all`` once before. Each round runs every command once per
copy and ``rg -l -i the ROOT`` (with ``--rare WORD``, each: ``search WORD ROOT --no-cache`` per
copy and ``rg -l -i WORD ROOT`` too, ``re:`` taken off for ``rg``; the order alternating); each figure is the best (median)
of the rounds in CPU time (user + system, ``wait4``: it moves far less than wall time on
a shared machine), then wall time. Each command's stdout, stderr and status must be the
same from both copies (``--differ COMMAND``: but for this one, which B changes on
purpose). ``--terminal``: each command on a pseudo-terminal instead of into files (the outputs
are then not compared: progress displays are drawn as timing has them).
docs/BENCHMARKS.md, "A fifth round: a smaller start".
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


def _run_on_terminal(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes, bytes, int]:
    """:func:`_run` with stdout and stderr a pseudo-terminal of 160 × 50 (what a person
    at a terminal waits for: styles, progress displays); its output is what the
    terminal received, stderr's included."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    os.set_blocking(master, False)
    got = bytearray()
    status = ru = None
    while True:  # until the child has ended and the terminal is drained (a process it
        try:     # left behind may hold the terminal open)
            chunk = os.read(master, 65536)
            got += chunk
            if chunk:
                continue
        except BlockingIOError:
            pass
        except OSError:  # the terminal is closed
            pass
        if status is not None:
            break
        pid, st, r = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status, ru = st, r
            continue
        time.sleep(0.0005)
    wall = time.perf_counter() - t
    p.returncode = status
    os.close(master)
    assert ru is not None
    return (ru.ru_utime + ru.ru_stime) * 1000, wall * 1000, bytes(got), b"", status


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
    ap.add_argument("--catalogs", nargs=2, metavar=("CAT_A", "CAT_B"),
                    help="a catalog per copy ($SESSIONTREE_CATALOG), when their schemas differ")
    ap.add_argument("--terminal", action="store_true",
                    help="run every command on a pseudo-terminal (160 columns), as a person at one waits for it")
    ap.add_argument("--rare", metavar="WORD", action="append", default=[],
                    help="also a first search of WORD (`search WORD ROOT --no-cache`) against `rg -l -i WORD`; "
                         "again for more; `re:PATTERN` against `rg -l -i PATTERN`")
    args = ap.parse_args()
    script = shutil.which("sessiontree", path=os.path.dirname(sys.executable))
    if script is None:
        raise SystemExit("no sessiontree script beside this python")
    commands = {
        "usage model --json": ["usage", "model", args.root, "--all", "--json"],
        "usage model (table)": ["usage", "model", args.root, "--all"],
        "usage daily --json": ["usage", "daily", args.root, "--all", "--json"],
        "usage session --json": ["usage", "session", args.root, "--all", "--json"],
        "usage session (table)": ["usage", "session", args.root, "--all"],
        "search the (page)": ["search", "the", args.root, "--all"],
        "search the --json": ["search", "the", args.root, "--all", "--json"],
        "search the --limit 0 --json": ["search", "the", args.root, "--all", "--limit", "0", "--json"],
        "ls": ["ls", args.root, "--all"],
        "--version": ["--version"],
    }
    for word in args.rare:
        commands[f"search {word} --no-cache"] = ["search", word, args.root, "--all", "--no-cache"]
    runs: list[tuple[str, list[str], dict[str, str]]] = [("python -c pass", [sys.executable, "-c", "pass"], dict(os.environ))]
    for name, argv in commands.items():
        for label, folder in (("A", args.a), ("B", args.b)):
            env = {**os.environ, "PYTHONPATH": os.path.abspath(folder)}
            if args.catalogs:
                env["SESSIONTREE_CATALOG"] = args.catalogs[0 if label == "A" else 1]
            if args.terminal:  # the terminal's own size
                env.pop("COLUMNS", None)
                env.pop("LINES", None)
            runs.append((f"{name} {label}", [sys.executable, script, *argv], env))
    if shutil.which("rg"):
        runs.append(("rg -l -i the", ["rg", "-l", "-i", "the", args.root], dict(os.environ)))
        for word in args.rare:
            pattern = word.removeprefix("re:")
            runs.append((f"rg -l -i {pattern}", ["rg", "-l", "-i", pattern, args.root], dict(os.environ)))
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    wall: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    outputs: dict[str, tuple[bytes, bytes, int]] = {}
    print(f"load before: {os.getloadavg()[0]:.2f}")
    for i in range(args.rounds):
        for name, argv, env in (runs if i % 2 == 0 else runs[::-1]):
            c, w, out, err, status = (_run_on_terminal if args.terminal else _run)(argv, env)
            cpu[name].append(c)
            wall[name].append(w)
            outputs[name] = (out, err, status)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    for name in commands:
        if args.terminal:
            break  # a terminal receives progress displays as timing draws them: not compared
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
