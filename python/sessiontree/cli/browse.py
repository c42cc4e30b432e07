"""``sessiontree browse``: the command that starts the terminal browser
(``sessiontree.browse``; its help text is ``browse.HELP``).

``browse FILE`` opens the session's tree. Any other scope (CONTRACT §10: a folder of
sessions, a folder of project folders, ``--all`` for Pi's store, nothing for the
current project) opens the session picker over it first (Pi's ``/resume``); ``tab``
there goes between the current project and Pi's whole store when the scope is one of
those two.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from ..browse import HELP
from ..view import safe
from . import _scope
from ._common import CliError, Io, open_session, require_file, say_catalog_note
from ._leaf import resolve_entry

INSTALL_HINT = "pip install textual (in a checkout: pip install '.[browse]')"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``browse`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("browse", help="pick a session (Pi's /resume) and walk its tree in a full-screen terminal "
                                      "app (fold, jump, search, context, label, fork)",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", default=None,
                   help="a session file (opens its tree), or folders (a picker over their sessions, subfolders "
                        "too); default: a picker over the current directory's sessions in Pi's store")
    _scope.add_arguments(p, paths=False)
    _scope.add_catalog_options(p)
    p.add_argument("--select", metavar="ID", help="start at this entry (an id or a unique prefix) "
                                                  "instead of the current leaf (with a session file)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree browse``: the exit status."""
    one_file = len(args.paths) == 1 and not os.path.isdir(args.paths[0])
    if one_file:
        if args.cwd is not None:
            raise CliError("give --cwd DIR alone: not with a PATH or --all", code=2)
        require_file(args.paths[0])
        if args.select is not None:  # a bad id is said as `context --leaf` says it, before the app
            args.select = _entry(io, args.paths[0], args.backend, args.select)
        scope = None
    else:
        if args.select is not None:
            raise CliError("--select needs one session file", code=2)
        scope = _scope.resolve(args, io)  # a scope that is not there is said first; the picker
        # is made once a terminal is known (its catalog options may say it is replaced)
    try:
        from ..browse import BrowseApp
    except ImportError as e:
        if "textual" not in str(e):
            raise
        raise CliError(f"sessiontree browse needs Textual, which is not installed: {INSTALL_HINT}") from None
    if not (_isatty(sys.stdin) and _isatty(sys.stdout)):
        raise CliError("sessiontree browse needs a terminal (stdin and stdout); "
                       "for a pipe use `sessiontree ls`, `sessiontree tree` or `sessiontree export`", code=2)
    if scope is not None:
        app = BrowseApp(backend=args.backend, picker=_picker(args, io, scope))
    else:
        app = BrowseApp(args.paths[0], backend=args.backend, select=args.select)
    with _said_after(io):
        app.run()
    return exit_status(app)


@contextlib.contextmanager
def _said_after(io: Io) -> Iterator[None]:
    """The catalog's notes (``CatalogRebuiltWarning``: the picker's listing rebuilt a
    damaged catalog) said on stderr once the app has left the screen: while it runs,
    Textual keeps what is written to stderr, and the note was never seen (adversary
    59b)."""
    from ..errors import CatalogRebuiltWarning

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", CatalogRebuiltWarning)
        try:
            yield
        finally:
            held = list(said)
    for w in held:
        if issubclass(w.category, CatalogRebuiltWarning):
            say_catalog_note(io, w.message)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


def _picker(args: argparse.Namespace, io: Io, scope: _scope.Scope) -> Any:
    """The picker's scopes: ``scope``, the one the command line names, and, when that is
    the current project or Pi's store, the other of the two (Pi's ``tab``)."""
    from ..browse import Picker, Scope

    options = _scope.catalog_options(args, io)

    def picked(s: _scope.Scope) -> Scope:
        if s.kind == "project":
            return Scope("current folder", s.where, s.sources)
        if s.kind == "store":
            return Scope("all", s.where, s.sources, projects=True)
        return Scope(safe(s.where), s.where, s.sources)

    scopes = [picked(scope)]
    if scope.kind in ("project", "store"):
        # --cwd names the project; with --all, tab goes to the current directory's.
        other = argparse.Namespace(paths=[], all=scope.kind == "project",
                                   cwd=None if scope.kind == "project" else args.cwd)
        scopes.append(picked(_scope.resolve(other)))
    start = 1 if scope.kind == "store" else 0  # the header keeps Pi's order: current folder | all
    return Picker(tuple(scopes[::-1] if start else scopes), start=start, **options)


def _entry(io: Io, path: str, backend: str, ident: str) -> str:
    """The entry id ``--select ident`` names in the session at ``path``.

    Raises:
        CliError: no entry has that id or prefix, or several have the prefix (exit 1).
    """
    sm, _ = open_session(io, path, backend)
    with sm:
        return resolve_entry(io, sm, path, ident, "--select")[0]


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
