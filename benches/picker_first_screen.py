"""``sessiontree browse ROOT``: the session picker's first screen, timed on a real
pseudo-terminal (80×24) whose output a VT100 emulator (pyte) reads, against
``sessiontree ls ROOT`` (what a user would run instead to see the sessions), in one run.

Each round starts with a new, empty cache folder (``XDG_CACHE_HOME``: the catalog is
cold), runs the picker, then runs it again (warm); then ``ls`` cold and warm in its own
new cache folder. For the picker it records, from the process's start, the seconds
until its frame is drawn (``Resume session``), until the first session row shows (the
cursor ``›``) and until the listing is complete (``listed in``, which the picker says
with its own measure from its first frame). The load average is printed before and
after: the machine may be shared.

    python benches/picker_first_screen.py ROOT [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_browse_picker import Terminal  # noqa: E402  (the tests' pseudo-terminal)


def _env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "COLUMNS", "LINES", "SESSIONTREE"))}
    home = os.path.join(cache, "home")
    os.makedirs(home, exist_ok=True)
    env.update(HOME=home, XDG_CACHE_HOME=cache, TERM="xterm-256color")
    return env


def picker(root: str, cache: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    term = Terminal([sys.executable, "-m", "sessiontree", "browse", root], _env(cache))
    marks: dict[str, Any] = {}
    try:
        def seen(text: str) -> bool:
            now = round(time.perf_counter() - t0, 3)
            if "Resume session" in text:
                marks.setdefault("frame", now)
            if "›" in text:
                marks.setdefault("first_row", now)
            if "listed in" in text:
                marks["listed"] = now
                marks["status"] = next(line.strip() for line in text.splitlines() if "listed in" in line)
                return True
            return False

        term.wait(seen, "the listing", 300)
        term.keys("\x1b")
        term.proc.wait(60)
    finally:
        term.close()
    return marks


def ls(root: str, cache: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sessiontree", "ls", root], env=_env(cache), check=True,
                   stdout=subprocess.DEVNULL)
    return round(time.perf_counter() - t0, 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print("load before", os.getloadavg())
    for _ in range(a.rounds):
        cache = tempfile.mkdtemp(prefix="picker-bench-")
        print("picker cold", picker(a.root, cache))
        print("picker warm", picker(a.root, cache))
        shutil.rmtree(cache)
        cache = tempfile.mkdtemp(prefix="picker-bench-")
        print("ls cold", ls(a.root, cache), "s; ls warm", ls(a.root, cache), "s")
        shutil.rmtree(cache)
    print("load after", os.getloadavg())


if __name__ == "__main__":
    main()
