"""``sessiontree bench``: open a file with both backends and compare time and memory.

Each backend runs in its own fresh ``python`` process (so peak RSS is that backend's
alone). Measured: open (index the file), then the context at the leaf, the root-to-leaf
path and the whole tree, each time row counted from the start of the open (the python
backend decodes every entry at open, the native one an entry when it is first read,
so a call's own time would compare unlike things); memory held after open, and the
process's peak RSS. Both scan the file: the native backend's kept index (CONTRACT §6)
is not used (``SESSIONTREE_INDEX=off`` in the child), as the python backend has none;
``benches/reopen.py`` times a reopen through it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

from rich.text import Text

from ._common import CliError, Io, require_file, spinner
from ..view import human_bytes, human_seconds, safe

# Time rows are cumulative: a row is the time from the start of the open to the end of
# its call (the child reports each call's own time under the same key).
_ROWS = (
    ("open", "open (index the file)", "time"),
    ("context", "open + context at the leaf", "time"),
    ("branch", "  + path root → leaf", "time"),
    ("tree", "  + get_tree", "time"),
    ("heldAfterOpen", "RSS added by open", "bytes"),
    ("anonAfterOpen", "  of which heap (not file pages)", "bytes"),
    ("rssPeak", "peak RSS of the process", "bytes"),
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``bench`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("bench", help="time and memory of both backends on one file",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run each backend N times (fresh process each) and keep the best time (default 1)")
    p.add_argument("--backends", default="python,native",
                   help="comma-separated backends to compare (default python,native)")
    p.add_argument("--json", action="store_true", help="print the measurements as JSON")
    p.set_defaults(func=run)


def measure(path: str, backend: str) -> dict[str, Any]:
    """Run one fresh interpreter that opens ``path`` with ``backend``.

    Args:
        path: the session file.
        backend: ``python`` or ``native``.

    Returns:
        The child's measurements (seconds and bytes; see ``_bench_child``).

    Raises:
        CliError: the child failed (e.g. the backend is not built).
    """
    env = dict(os.environ)
    env.pop("SESSIONTREE_BACKEND", None)  # the child is told its backend explicitly
    env["SESSIONTREE_INDEX"] = "off"  # a scan against a scan, never a reopen through a kept index
    proc = subprocess.run([sys.executable, "-m", "sessiontree.cli._bench_child", path, backend],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise CliError(f"{path}: {backend} backend failed: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _elapsed(r: dict[str, Any]) -> dict[str, float]:
    """Seconds from the start of the open to the end of each call of ``_ROWS``."""
    out, t = {}, 0.0
    for key, _, kind in _ROWS:
        if kind == "time":
            t += r[key]
            out[key] = t
    return out


def _ratio(a: float, b: float) -> str:
    if not b:
        return "–"
    r = a / b
    return f"{r:.1f}×" if r >= 10 else f"{r:.2g}×"


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree bench``: the exit status (see the module docstring)."""
    require_file(args.file)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for backend in backends:
        best: dict[str, Any] | None = None
        try:
            for i in range(max(1, args.repeat)):
                with spinner(io, f"{backend} backend, run {i + 1}/{max(1, args.repeat)}"):
                    r = measure(args.file, backend)
                r["elapsed"] = _elapsed(r)
                if best is None:
                    best = r
                else:
                    for key, _, kind in _ROWS:
                        if kind == "time":
                            best[key] = min(best[key], r[key])
                            best["elapsed"][key] = min(best["elapsed"][key], r["elapsed"][key])
        except CliError as e:
            failed[backend] = str(e)
            continue
        assert best is not None
        results[backend] = best
    if not results:
        raise CliError("; ".join(failed.values()))
    if args.json:
        io.write_json({"file": args.file, "size": os.path.getsize(args.file), "results": results,
                       "failed": failed})
        return 0
    size = os.path.getsize(args.file)
    first = next(iter(results.values()))
    io.print(Text(f"{safe(args.file)}: {human_bytes(size)}, {first['entries']:,} entries, "
                  f"path {first['pathLength']:,}, context {first['contextMessages']:,} messages", style="bold"))
    from rich.table import Table  # here: every command starts by importing this module

    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("")
    backends = [b for b in backends if b in results]
    for b in backends:
        table.add_column(safe(b), justify="right")
    ratio = len(backends) == 2 and backends[0] != backends[1]
    if ratio:
        table.add_column(safe(f"{backends[0]} / {backends[1]}"), justify="right")
    for key, title, kind in _ROWS:
        got = [results[b]["elapsed"][key] if kind == "time" else results[b].get(key) for b in backends]
        vals = [v for v in got if v is not None]
        if len(vals) != len(got):
            continue
        cells = [human_seconds(v) if kind == "time" else human_bytes(v) for v in vals]
        if ratio:
            cells.append(_ratio(vals[0], vals[1]))
        table.add_row(title, *cells)
    io.print(table)
    for b, why in failed.items():
        io.print(Text(safe(f"{b}: not measured: {why}"), style="yellow"))
    io.print(Text("time rows count from the start of the open: python decodes every entry at open, "
                  "native an entry when it is first read", style="dim"))
    if size:
        io.print(Text("open throughput: " + ", ".join(
            f"{b} {size / 1e6 / max(results[b]['open'], 1e-9):,.0f} MB/s" for b in backends), style="dim"))
    return 0
