"""``make demo`` / ``python -m sessiontree.demo``: the command line on a big session.

Generates (once; cached outside the repository) a synthetic Pi session of a few hundred
megabytes with branches and compactions, then runs ``info``, ``tree``, ``context``,
``check`` and ``bench`` on it, and ``info`` and ``context`` on a real Pi session from
the conformance corpus. Each command line is printed before its output, like a
terminal transcript.

Settings (flag, else environment variable, else default):

* ``--size`` / ``SESSIONTREE_DEMO_SIZE``: size of the synthetic session (``300MB``).
* ``--seed`` / ``SESSIONTREE_DEMO_SEED``: its seed (``7``).
* ``--cache-dir`` / ``SESSIONTREE_DEMO_CACHE``: where it is kept
  (``$XDG_CACHE_HOME/sessiontree``, else ``~/.cache/sessiontree``).
* ``SESSIONTREE_SHARED``: the folder holding ``corpus/pi-golden`` (default ``../shared``
  beside the repository).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import shlex
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from . import generate as _generate
from .cli import main as cli_main
from .generate import parse_size

DEFAULT_SIZE = "300MB"
DEFAULT_SEED = 7
HEAD_LINES = 60  # tree and context of the big session are cut like `| head -n 60`
CORPUS_FILE = "hand-linear-tools.jsonl"


def _cache_dir(flag: str | None) -> Path:
    if flag:
        return Path(flag)
    env = os.environ.get("SESSIONTREE_DEMO_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sessiontree"


def _corpus_dir() -> Path:
    shared = os.environ.get("SESSIONTREE_SHARED")
    if shared:
        return Path(shared) / "corpus" / "pi-golden"
    repo = Path(__file__).resolve().parents[2]
    return repo.parent / "shared" / "corpus" / "pi-golden"


def _generator_tag() -> str:
    # The cache key includes the generator's source, so a changed generator never
    # serves a stale file.
    src = Path(_generate.__file__).read_bytes()
    return hashlib.sha256(src).hexdigest()[:10]


def demo_file(size_text: str, seed: int, cache: Path, console: Console) -> tuple[Path, bool]:
    """The cached synthetic session for ``(size, seed)``, generating it if needed.

    Args:
        size_text: target size as given (``"300MB"``).
        seed: generator seed.
        cache: folder for the file (created).
        console: where to say what happens.

    Returns:
        ``(path, ok)``: the session file, and whether it exists now.
    """
    size = parse_size(size_text)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"demo-{size}-s{seed}-{_generator_tag()}.jsonl"
    # A complete file is at least `size` bytes; anything shorter is an interrupted run.
    if path.exists() and path.stat().st_size >= size:
        console.print(Text(f"# using the cached session {path} (delete it to regenerate)", style="dim"))
        return path, True
    for old in cache.glob(f"demo-{size}-s{seed}-*.jsonl"):
        old.unlink(missing_ok=True)  # a previous generator's output
    try:
        status = _run(console, ["generate", str(path), "--size", size_text, "--seed", str(seed)])
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    if status != 0:
        path.unlink(missing_ok=True)
    return path, status == 0


def _run(console: Console, argv: list[str], *, head: int | None = None) -> int:
    """Print ``$ sessiontree ARGV`` then run it in this process; return its exit status."""
    line = "$ sessiontree " + " ".join(shlex.quote(a) for a in argv)
    if head:
        line += f" | head -n {head}"
    console.print()
    console.print(Text(line, style="bold"))
    sys.stdout.flush()
    if not head:
        return _call(argv)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = _call(argv + (["--width", str(console.width)] if argv[0] == "tree" else []))
    lines = buf.getvalue().splitlines()
    sys.stdout.write("\n".join(lines[:head]) + "\n")
    if len(lines) > head:
        console.print(Text(f"# … {len(lines) - head:,} more lines", style="dim"))
    return status


def _call(argv: list[str]) -> int:
    try:
        return cli_main(argv)
    except SystemExit as e:  # argparse
        return int(e.code or 0)


def main(argv: list[str] | None = None) -> int:
    """Run the demo.

    Args:
        argv: ``[--size SIZE] [--seed N] [--cache-dir DIR]``; ``sys.argv[1:]`` if ``None``.

    Returns:
        0 when every step succeeded, else 1.
    """
    p = argparse.ArgumentParser(prog="python -m sessiontree.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default=os.environ.get("SESSIONTREE_DEMO_SIZE", DEFAULT_SIZE))
    p.add_argument("--seed", type=int, default=int(os.environ.get("SESSIONTREE_DEMO_SEED", DEFAULT_SEED)))
    p.add_argument("--cache-dir", default=None)
    args = p.parse_args(argv)
    try:
        parse_size(args.size)
    except ValueError as e:
        p.error(str(e))
    console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())
    t0 = time.perf_counter()
    failures: list[str] = []

    def step(cmd: list[str], head: int | None = None, expect: int = 0) -> None:
        if _run(console, cmd, head=head) != expect:
            failures.append(" ".join(cmd))

    console.print(Rule(f"sessiontree demo: a synthetic {args.size} Pi session (seed {args.seed})"))
    made, ok = demo_file(args.size, args.seed, _cache_dir(args.cache_dir), console)
    if not ok:
        console.print(Text("demo stopped: the session could not be generated", style="bold red"))
        return 1
    path = str(made)
    step(["info", path])
    step(["tree", path], head=HEAD_LINES)
    step(["context", path], head=HEAD_LINES)
    step(["check", path])
    step(["bench", path])

    corpus = _corpus_dir()
    real = corpus / CORPUS_FILE
    console.print()
    console.print(Rule("a real Pi session (written by Pi itself)"))
    if real.is_file():
        step(["info", str(real)])
        step(["context", str(real)])
    else:
        console.print(Text(f"# skipped: the corpus is not at {corpus} (set SESSIONTREE_SHARED)", style="yellow"))

    console.print()
    took = time.perf_counter() - t0
    if failures:
        console.print(Text(f"demo finished in {took:.1f} s with {len(failures)} failing step(s): "
                           + "; ".join(failures), style="bold red"))
        return 1
    console.print(Text(f"demo finished in {took:.1f} s", style="bold green"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
