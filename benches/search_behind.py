"""The search index built behind a first search (CONTRACT §7), timed against ``rg``.

    python benches/search_behind.py ROOT [--word the] [--rounds 3]

A fresh catalog and cache folder in a temporary folder; then, with the page cache as it
is: the first ``sessiontree search WORD ROOT`` on a pseudo-terminal (its own process's
time: the build it starts is detached, not its child), the time until the build's lock
is free, the next searches on the terminal, the same search piped with the index built
and with ``--no-cache``, and ``rg -l -i WORD ROOT``. Each line: wall and CPU (user +
sys) in seconds, and the load average.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import shutil
import subprocess
import sys
import tempfile
import time


def timed(args: list[str], env: dict[str, str], terminal: bool) -> tuple[float, float, str]:
    """``args`` run once: wall seconds, CPU seconds, its last line of output."""
    master = slave = -1
    if terminal:
        master, slave = pty.openpty()
    t = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                            stdout=slave if terminal else subprocess.PIPE, stderr=subprocess.STDOUT)
    out = b""
    if terminal:
        os.close(slave)
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        os.close(master)
    else:
        assert proc.stdout is not None
        out = proc.stdout.read()
    _pid, _status, usage = os.wait4(proc.pid, 0)
    lines = out.decode("utf-8", "replace").strip().splitlines()
    return time.perf_counter() - t, usage.ru_utime + usage.ru_stime, lines[-1] if lines else ""


def wait_unlocked(path: str) -> float:
    """Seconds until no process holds ``path``'s flock."""
    t = time.perf_counter()
    fd = os.open(path, os.O_RDWR)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return time.perf_counter() - t
            except OSError:
                time.sleep(0.05)
    finally:
        os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--word", default="the")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="search-behind-")
    try:
        cat = os.path.join(tmp, "catalog.sqlite3")
        env = {**os.environ, "XDG_CACHE_HOME": os.path.join(tmp, "cache"), "COLUMNS": "200"}
        st = [sys.executable, "-m", "sessiontree", "search", a.word, a.root]

        def say(what: str, wall: float, cpu: float, last: str = "") -> None:
            load = os.getloadavg()[0]
            print(f"{what:<44} wall {wall:7.3f} s  cpu {cpu:7.3f} s  load {load:4.2f}  {last[:70]}")

        say("first search, terminal", *timed([*st, "--catalog", cat], env, True))
        say("the build behind it (until its lock is free)", wait_unlocked(cat + ".later"), float("nan"))
        for _ in range(a.rounds):
            say("next search, terminal", *timed([*st, "--catalog", cat], env, True))
        for _ in range(a.rounds):
            say("search, piped, index built", *timed([*st, "--catalog", cat], env, False))
        for _ in range(a.rounds):
            say("search, piped, --no-cache", *timed([*st, "--no-cache"], env, False))
        if shutil.which("rg"):
            for _ in range(a.rounds):
                say("rg -l -i", *timed(["rg", "-l", "-i", a.word, a.root], env, False))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
