"""``sessiontree fork``: a new session file holding one root-to-entry path.

Like Pi's ``createBranchedSession``, the new file goes into the session's folder (the
source file's folder) unless ``--out DIR`` names another one (``--to DIR``, its older
name, still works); DIR is created if missing.
The new file's path is printed on its own line.
"""

from __future__ import annotations

import argparse
import os

from rich.text import Text

from ._common import CliError, Io, open_session
from ..view import safe, shown_path
from ._leaf import resolve_entry


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``fork`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("fork", help="write a new session holding only the path to --leaf ID",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--leaf", required=True, metavar="ID", help="the entry (an id or a unique prefix) whose root-to-entry path is copied")
    p.add_argument("--out", "--to", dest="out", metavar="DIR",
                   help="folder for the new file, created if missing (default: the source file's folder, "
                        "as Pi's createBranchedSession does)")
    p.add_argument("--json", action="store_true", help="print {source, leafId, path, entries} as JSON")
    p.set_defaults(func=run)


def _make_dirs(folder: str) -> list[str]:
    """Create ``folder`` and its missing parents; return the ones created, outermost first."""
    missing = []
    cur = os.path.abspath(folder)
    while not os.path.exists(cur):
        missing.append(cur)
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError:
        raise CliError(f"{safe(folder)}: exists and is not a directory") from None
    except OSError as e:
        raise CliError(f"{safe(folder)}: cannot create the folder: {e.strerror or e}") from None
    return missing[::-1]


def _remove_empty(created: list[str]) -> None:
    for folder in reversed(created):
        try:
            os.rmdir(folder)
        except OSError:
            return


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree fork``: the exit status (see the module docstring)."""
    default = args.out is None
    if args.out == "-":
        raise CliError("fork writes a session file into a folder (named as Pi names it): give --out DIR, not -",
                       code=2)
    to = os.path.dirname(os.path.abspath(args.file)) if default else args.out
    if os.path.exists(to) and not os.path.isdir(to):
        raise CliError(f"{safe(to)}: exists and is not a directory")
    sm, _ = open_session(io, args.file, args.backend, session_dir=to)
    created: list[str] = []
    ok = False
    try:
        with sm:
            args.leaf = resolve_entry(io, sm, args.file, args.leaf)[0]
            created = _make_dirs(to)
            try:
                new_path = sm.create_branched_session(args.leaf)
            except PermissionError as e:
                hint = " (choose another folder with --out DIR)" if default else ""
                raise CliError(f"{safe(e.filename or to)}: permission denied, no session written{hint}") from None
            entries = len(sm)
            problems = sm.load_report
        if not new_path or not os.path.exists(new_path):
            # Pi writes a session only once it holds an assistant message; so does sessiontree.
            raise CliError(f"{safe(args.file)}: the path to {safe(args.leaf)} has no assistant message, "
                           "so no session file is written (Pi's rule)")
        ok = True
    finally:
        if not ok:
            _remove_empty(created)
    if args.json:
        io.write_json({"source": args.file, "leafId": args.leaf, "path": new_path, "entries": entries,
                       "problems": [{"kind": p.kind, "line": p.line, "ids": list(p.ids), "detail": p.detail}
                                    for p in problems]})
        return 0
    if problems:
        kinds = ", ".join(sorted({p.kind for p in problems}))
        io.err.print(Text(f"note: the new session still has {len(problems)} problem(s) from its source path "
                          f"({safe(kinds)}); `sessiontree check {safe(os.fspath(new_path))}` lists them"))
    where = "the source file's folder" if default else safe(os.path.dirname(os.path.abspath(new_path)))
    # The new file's path alone on stdout (NEW=$(sessiontree fork ...) takes it); what
    # was done on stderr.
    io.err.print(Text.assemble(f"forked {entries:,} entries (the path to {safe(args.leaf)}) "
                               f"from {safe(args.file)} into {where}; new session file:"))
    io.print(Text(shown_path(os.fspath(new_path)), style="bold"))
    return 0
