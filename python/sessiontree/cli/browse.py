"""``sessiontree browse``: the command that starts the terminal browser
(``sessiontree.browse``; its help text is ``browse.HELP``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..browse import HELP
from ._common import CliError, Io, require_file

INSTALL_HINT = "pip install textual (in a checkout: pip install '.[browse]')"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``browse`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("browse", help="walk the tree in a full-screen terminal app (fold, jump, search, "
                                      "context, label, fork)",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--select", metavar="ID", help="start at this entry (an id or a unique prefix) "
                                                  "instead of the current leaf")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree browse``: the exit status."""
    require_file(args.file)
    try:
        from ..browse import BrowseApp
    except ImportError as e:
        if "textual" not in str(e):
            raise
        raise CliError(f"sessiontree browse needs Textual, which is not installed: {INSTALL_HINT}") from None
    if not (_isatty(sys.stdin) and _isatty(sys.stdout)):
        raise CliError("sessiontree browse needs a terminal (stdin and stdout); "
                       "for a pipe use `sessiontree tree` or `sessiontree export`", code=2)
    app = BrowseApp(args.file, backend=args.backend, select=args.select)
    app.run()
    return exit_status(app)


def exit_status(app: Any) -> int:
    """The command's exit status after ``app`` ran: the open's failure is raised (the
    command says it in one line); a crash (Textual printed its traceback) is 1."""
    if app.failure is not None:
        raise app.failure
    return int(app.return_code or 0)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
