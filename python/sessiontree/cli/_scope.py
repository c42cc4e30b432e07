"""The folders a catalog command reads and the catalog options, shared by ``ls``,
``search``, ``usage`` and ``index``.

Without DIR: the current directory's folder in Pi's store (``--cwd PATH`` names another
directory), or with ``--all`` every project folder of the store
(``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``). With DIR: the
``.jsonl`` files in DIR, or with ``--all`` DIR and all its subfolders (folders linked in
by symlinks too, each folder once). ``usage`` and
``index`` read every project when given neither DIR nor ``--cwd`` (``--this``: the
current directory's).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

from ._common import CliError, Io
from ..view import safe


def add_arguments(p: argparse.ArgumentParser, *, dir_arg: bool = True, default_all: bool = False) -> None:
    """Add DIR (unless ``dir_arg`` is false), ``--all``, ``--cwd``, ``--catalog`` and
    ``--no-cache`` to a subcommand's parser."""
    if dir_arg:
        p.add_argument("dir", nargs="?", help="a session folder (default: this directory's folder in Pi's store)")
    p.add_argument("--all", action="store_true",
                   help="every project (with DIR: DIR and its subfolders)" + ("" if default_all else
                        ", not only the current directory's"))
    if default_all:
        p.add_argument("--this", action="store_true",
                       help="only the current directory's sessions (default without DIR: every project)")
    p.set_defaults(_default_all=default_all)
    p.add_argument("--cwd", metavar="PATH", help="the sessions of this working directory (default: the current one)")
    p.add_argument("--catalog", metavar="FILE",
                   help="the catalog database (default: $SESSIONTREE_CATALOG, else $XDG_CACHE_HOME/sessiontree/"
                        "catalog.sqlite3, else ~/.cache/sessiontree/catalog.sqlite3)")
    p.add_argument("--no-cache", action="store_true",
                   help="read every file instead of the catalog (the same answer, slower)")


def walk(root: str) -> list[str]:
    """``root`` and every folder under it, sorted at each level, folders reached through
    a symlink included (a sessions folder kept elsewhere and linked in), each folder
    once: one reached again (a link to a folder already walked, a link that loops) is
    left out, so a walk always ends."""
    return list(_walk(root))


def _walk(root: str) -> Iterator[str]:
    # Folders are known by (device, inode): a path can name one already seen.
    seen: set[tuple[int, int]] = set()

    def first_time(path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    if not first_time(root):
        yield root
        return
    yield root
    for dirpath, dirnames, _ in os.walk(root, followlinks=True):
        dirnames.sort()
        dirnames[:] = [d for d in dirnames if first_time(os.path.join(dirpath, d))]
        for d in dirnames:
            yield os.path.join(dirpath, d)


def _all(args: argparse.Namespace) -> bool:
    if args.all:
        return True
    return bool(getattr(args, "_default_all", False)) and getattr(args, "dir", None) is None and not (
        getattr(args, "this", False) or getattr(args, "cwd", None) is not None)


def folders(args: argparse.Namespace) -> list[str]:
    """The folders the command reads (module docstring).

    Raises:
        CliError: DIR is not a folder, or ``--cwd`` is given with DIR.
    """
    from .._places import default_session_root, project_cwd, project_folders, session_dir_for_cwd

    directory = getattr(args, "dir", None)
    if directory is not None:
        if getattr(args, "cwd", None) is not None:
            raise CliError("give DIR or --cwd, not both", code=2)
        if not os.path.isdir(directory):
            raise CliError(f"{safe(directory)}: no such directory")
        return walk(directory) if _all(args) else [directory]
    root = default_session_root()
    if _all(args):
        return project_folders(root)
    return [session_dir_for_cwd(project_cwd(args.cwd if args.cwd is not None else os.getcwd()), root)]


def where(args: argparse.Namespace) -> str:
    """The folder (or root) the command reads, in words."""
    from .._places import project_cwd
    from .._places import default_session_root, session_dir_for_cwd

    directory = getattr(args, "dir", None)
    if directory is not None:
        return directory
    root = default_session_root()
    if _all(args):
        return root
    return session_dir_for_cwd(project_cwd(args.cwd if args.cwd is not None else os.getcwd()), root)


def subfolder_hint(args: argparse.Namespace) -> str:
    """``"; its subfolders hold session files: add --all"`` when the command was given a
    DIR without ``--all`` that holds no ``.jsonl`` file while a folder below it does
    (Pi's sessions root, one folder per project); else ``""``."""
    directory = getattr(args, "dir", None)
    if directory is None or _all(args):
        return ""

    def holds_sessions(folder: str) -> bool:
        try:
            with os.scandir(folder) as it:
                return any(e.name.endswith(".jsonl") for e in it)
        except OSError:
            return False

    if holds_sessions(directory):
        return ""
    below = _walk(directory)  # stops at the first
    next(below, None)  # the directory itself
    return "; its subfolders hold session files: add --all" if any(map(holds_sessions, below)) else ""


def catalog_options(args: argparse.Namespace, io: Io | None = None, *, create: bool = True) -> dict[str, Any]:
    """``catalog`` and ``no_cache`` for the library calls.

    With ``io``: a catalog the user named (``--catalog``, ``$SESSIONTREE_CATALOG``) that
    cannot be used (not a catalog, unwritable) is said in one note on stderr, and the
    files are read; the library would read them silently. ``create=False``: a command
    that only reads a catalog that is there (``search``) checks only such a one.

    Raises:
        CliError: the catalog path is inside Pi's folders.
    """
    from ..catalog import ENV, resolve

    try:
        path = resolve(args.catalog)
    except ValueError as e:
        raise CliError(str(e), code=2) from None
    named = args.catalog is not None or os.environ.get(ENV) is not None
    if io is not None and named and path is not None and not args.no_cache:
        from ..catalog import CatalogError, open_store

        try:
            store = open_store(path, required=True, busy=5.0, create=create)
        except CatalogError as e:
            from rich.text import Text

            io.err.print(Text(f"note: {safe(str(e))}; reading the files instead"))
            return {"catalog": args.catalog, "no_cache": True}
        if store is not None:
            store.close()
    return {"catalog": args.catalog, "no_cache": args.no_cache}
