"""``sessiontree ls``: the sessions a session picker shows, newest first.

Without DIR: the sessions of the current directory (``--cwd PATH``: of PATH), in Pi's
session folder (``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``). With
DIR: the ``.jsonl`` files in DIR. ``--all``: every project (with DIR: DIR and its
subfolders). Files that are not sessions are listed as problems at the end; they never
stop the listing. The listing goes through the catalog (``sessiontree index``):
unchanged files are not read again; ``--no-cache`` reads them all (the same answer).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.cells import set_cell_size
from rich.text import Text

from .._time import local_time
from ..errors import SessionError
from . import _scope
from ._common import Io, count_progress
from ..view import cells, fit, one_line, safe

_PREVIEW = 60
_CWD_MAX = 60  # cells of the cwd column (--all); a longer cwd is cut with …


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ls`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("ls", help="list sessions like Pi's session picker",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _scope.add_arguments(p)
    p.add_argument("--json", action="store_true", help="print sessions and problems as JSON")
    p.set_defaults(func=run)


def _jsonl_files(folders: list[str]) -> list[str]:
    files: list[str] = []
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        files.extend(os.path.join(folder, n) for n in names if n.endswith(".jsonl"))
    return files


def _why_not(path: str, backend: str) -> str:
    """One line saying why ``list`` left a file out."""
    from .. import SessionManager
    from .._storage import require_regular_file

    try:
        require_regular_file(path)  # a FIFO or device is not read (it may block or not end)
        if os.path.getsize(path) == 0:
            return "empty file"
        with SessionManager.open(path, backend=backend):
            return "skipped by the listing"
    except SessionError as e:
        return getattr(e, "reason", None) or str(e)
    except OSError as e:
        return e.strerror or str(e)


def searched_folder(args: argparse.Namespace) -> str:
    """The folder ``ls`` looks in (with ``--all``: the root it walks)."""
    return _scope.where(args)


def collect(args: argparse.Namespace, io: Io) -> tuple[list[Any], list[dict[str, Any]]]:
    """``(sessions, problems)`` for the chosen folder(s)."""
    from .._listing import ListingProblem, list_folders

    folders = _scope.folders(args)
    problems: list[dict[str, Any]] = []

    def on_problem(p: ListingProblem) -> None:
        problems.append({"path": p.path, "reason": p.reason, "line": p.line, "offset": p.offset})

    with count_progress(io, "reading sessions") as update:
        sessions = list_folders(folders, update, on_problem, **_scope.catalog_options(args, io))
    # Whatever the listing neither listed nor reported (a folder named *.jsonl, a FIFO)
    # is a problem too. Both name a file as its folder (as given) joined with its name.
    seen = {s.path for s in sessions} | {p["path"] for p in problems}
    for f in sorted(_jsonl_files(folders)):
        if f not in seen:
            problems.append({"path": f, "reason": _why_not(f, args.backend), "line": None, "offset": None})
    return sessions, problems


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree ls``: the exit status (see the module docstring)."""
    sessions, problems = collect(args, io)
    if args.json:
        io.write_json({
            "sessions": [
                {"path": s.path, "id": s.id, "name": s.name, "cwd": s.cwd, "created": s.created.isoformat(),
                 "modified": s.modified.isoformat(), "messageCount": s.message_count,
                 "firstMessage": s.first_message, "parentSessionPath": s.parent_session_path}
                for s in sessions
            ],
            "problems": problems,
        })
        return 0
    if not sessions and not problems:
        where = searched_folder(args)
        scope = " (and its subfolders)" if args.all else ""
        io.err.print(Text(f"no sessions found in {safe(where)}{scope}{_scope.subfolder_hint(args)}"))
        return 0
    # Fixed columns, padded by terminal cells (CJK and emoji are two wide), no
    # trailing spaces: the same lines read well on a terminal and in a pipe.
    # Styled segments written as strings: a picker's thousands of rows through
    # Console.print would cost more than the listing (Io.styler).
    paint = io.styler()
    counts = [f"{s.message_count:,}" for s in sessions]
    count_w = max([4, *map(len, counts)])
    cwds = [one_line(s.cwd, 400) for s in sessions] if args.all else []
    cwd_w = min(_CWD_MAX, max(map(cells, cwds))) if cwds else 0
    lines = [paint(f"{'modified':<19}  {'msgs':>{count_w}}  {set_cell_size('name / first message', _PREVIEW)}"
                   f"{'  ' + set_cell_size('cwd', cwd_w) if args.all else ''}  file", "bold")] if sessions else []
    for k, s in enumerate(sessions):
        title = one_line(s.name) if s.name else one_line(s.first_message)
        lines.append("".join((
            local_time(s.modified).strftime("%Y-%m-%d %H:%M:%S"),
            f"  {counts[k]:>{count_w}}  ",
            paint(set_cell_size(fit(title, _PREVIEW), _PREVIEW), "bold" if s.name else ""),
            paint("  " + set_cell_size(fit(cwds[k], cwd_w), cwd_w), "cyan") if args.all else "",
            paint("  " + safe(os.path.basename(s.path)), "dim"),
        )))
    lines.append(paint(f"{len(sessions):,} session(s)", "dim"))
    io.write("\n".join(lines) + "\n")
    if problems:
        io.print(Text(f"\n{len(problems)} file(s) are not sessions:", style="bold red"))
        for p in problems:
            where = f":{p['line']}" if p.get("line") else ""
            io.print(Text.assemble("  ", (f"{safe(str(p['path']))}{where}", "bold"), ": ", one_line(p["reason"], 400)))
    return 0
