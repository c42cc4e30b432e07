"""Which sessions a command reads: one rule for ``ls``, ``search``, ``usage``,
``index``, ``check`` and ``export`` (docs/CONTRACT.md §10).

* ``PATH ...``: each a session file, or a folder: its ``.jsonl`` files and those of
  every folder below it (folders linked in by symlinks too, each folder once). One
  folder of sessions, Pi's sessions root and any folder of project folders are
  named the same way.
* no PATH: the current directory's sessions in Pi's store (``--cwd DIR``: DIR's).
* ``--all``: every project in Pi's store (``$PI_CODING_AGENT_DIR/sessions``, else
  ``~/.pi/agent/sessions``).

Old spellings still work, with a note on stderr: ``--all`` beside a PATH (a folder
is read with its subfolders anyway) and ``--this`` (the default).
"""

from __future__ import annotations

import argparse
import os
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from .._tuples import NamedTuple

from ._common import CliError, Io
from ..view import safe

__all__ = ["Scope", "add_arguments", "add_catalog_options", "resolve", "walk", "catalog_options", "refuse_bad_catalog"]


def add_arguments(p: argparse.ArgumentParser, *, paths: bool = True, what: str = "sessions") -> None:
    """Add ``PATH ...`` (unless ``paths`` is false: the command names its own),
    ``--all`` and ``--cwd`` to a subcommand's parser, and ``--this`` hidden."""
    if paths:
        p.add_argument("paths", nargs="*", metavar="PATH", default=None,
                       help="session files or folders (a folder with all its subfolders); "
                            "default: the current directory's sessions in Pi's store")
    p.add_argument("--all", action="store_true", help=f"the {what} of every project in Pi's store")
    p.add_argument("--cwd", metavar="DIR", help="the sessions of this working directory (default: the current one)")
    p.add_argument("--this", action="store_true", help=argparse.SUPPRESS)  # the default now


def add_catalog_options(p: argparse.ArgumentParser) -> None:
    """``--catalog`` and ``--no-cache``: every command that takes a scope has them.
    ``ls``, ``search``, ``usage``, ``index`` and ``browse`` go through the catalog
    (:func:`catalog_options`); ``check`` and ``export`` read every file in full
    whatever it holds, so for them the flags change nothing but a ``--catalog`` path
    is refused as everywhere (:func:`refuse_bad_catalog`)."""
    p.add_argument("--catalog", metavar="FILE",
                   help="the catalog database (default: $SESSIONTREE_CATALOG, else $XDG_CACHE_HOME/sessiontree/"
                        "catalog.sqlite3, else ~/.cache/sessiontree/catalog.sqlite3)")
    p.add_argument("--no-cache", action="store_true",
                   help="read every file instead of the catalog (the same answer, slower)")


class Scope(NamedTuple):
    """What a command reads.

    Attributes:
        sources: folders (each read without its subfolders: those are listed too) and
            session files, in order, each once; the catalog's functions take them as
            they are.
        where: the scope in words, for a message (``"ROOT"``, ``"Pi's store (…)"``).
        kind: ``"paths"``, ``"store"`` or ``"project"``.
    """

    sources: tuple[str, ...]
    where: str
    kind: str

    def files(self) -> list[str]:
        """Every session file of the scope: a named file as it is, a folder's
        ``.jsonl`` entries (whatever they are: a FIFO is reported, never read) in
        name order."""
        from .._listing import jsonl_names

        out: list[str] = []

        def missing(s: str) -> None:
            if self.kind == "paths" and not os.path.isdir(s):
                out.append(s)  # named, and not there (``check`` says so)

        # The missing ones where they were named, as before: in the sources' order.
        for s in self.sources:
            out.extend(jsonl_names([s], missing))
        return out

    def empty_hint(self) -> str:
        """What to try when the scope holds no session (``""``: nothing to say)."""
        return "; --all for every project" if self.kind == "project" else ""


def resolve(args: argparse.Namespace, io: Io | None = None, *, missing_ok: bool = False) -> Scope:
    """The scope the command line names (module docstring).

    Args:
        io: where the notes on old spellings go (none without it).
        missing_ok: a PATH that does not exist is kept as a file (``check`` reports
            it with the others) instead of being an error.

    Raises:
        CliError: a PATH does not exist; ``--cwd`` with a PATH or ``--all`` (usage
            error, status 2).
    """
    from .._places import default_session_root, project_cwd, project_folders, session_dir_for_cwd

    paths = list(getattr(args, "paths", None) or [])
    cwd = getattr(args, "cwd", None)
    everything = bool(getattr(args, "all", False))
    if cwd is not None and (paths or everything):
        raise CliError("give --cwd DIR alone: not with a PATH or --all", code=2)
    if getattr(args, "this", False) and io is not None:
        io.note("note: --this is the default now (the current directory's sessions); it can be left out")
    if paths:
        if everything and io is not None:
            io.note("note: --all is not needed with a PATH (a folder is read with its subfolders); "
                    "it names Pi's whole store only without one")
        return Scope(tuple(_sources(paths, missing_ok)), ", ".join(paths), "paths")
    root = default_session_root()
    if everything:
        return Scope(tuple(project_folders(root)), f"Pi's store ({root})", "store")
    here = project_cwd(cwd if cwd is not None else os.getcwd())
    folder = session_dir_for_cwd(here, root)
    # Pi makes the folder with the first session: none yet is no session, not an error.
    return Scope((folder,) if os.path.isdir(folder) else (), f"{folder} (Pi's folder for {here})", "project")


def _sources(paths: list[str], missing_ok: bool) -> list[str]:
    """The sources of ``paths``, in the order given: each folder walked, each folder
    and file once (a file in a folder already read is read as the folder's)."""
    import stat

    from ..catalog import walk_folders

    seen: set[tuple[int, int]] = set()
    walked: list[list[str] | os.stat_result | None] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError as e:
            if not missing_ok:
                # Not "no such file" for one behind a folder this user cannot search
                # (adversary 61d).
                why = "no such file or folder" if isinstance(e, FileNotFoundError) else (
                    f"cannot be reached ({(e.strerror or str(e)).lower()})")
                raise CliError(f"{safe(p)}: {why}") from None
            walked.append(None)
            continue
        walked.append(walk_folders(p, seen) if stat.S_ISDIR(st.st_mode) else st)
    out: list[str] = []
    named: set[tuple[int, int]] = set()
    for p, got in zip(paths, walked):
        if isinstance(got, list):
            out.extend(got)
            continue
        if isinstance(got, os.stat_result):
            try:
                parent = os.stat(os.path.dirname(os.path.abspath(p)))
            except OSError:
                parent = None
            if parent is not None and (parent.st_dev, parent.st_ino) in seen and p.endswith(".jsonl"):
                continue
            if (got.st_dev, got.st_ino) in named:
                continue
            named.add((got.st_dev, got.st_ino))
        out.append(p)
    return out


def walk(root: str) -> list[str]:
    """``root`` and every folder under it, sorted at each level, folders reached through
    a symlink included (a sessions folder kept elsewhere and linked in), each folder
    once: one reached again (a link to a folder already walked, a link that loops) is
    left out, so a walk always ends."""
    from ..catalog import walk_folders

    return walk_folders(root, set())


def refuse_bad_catalog(args: argparse.Namespace) -> None:
    """For a command that reads every file in full (``check``, ``export``): a
    ``--catalog`` given is checked as :func:`catalog_options` checks it, and the
    catalog is neither read nor written.

    Raises:
        CliError: the catalog path is inside Pi's folders (usage error, status 2).
    """
    if args.catalog is not None:
        catalog_options(args)


def note_other_schema(io: Io, path: str | None, no_cache: bool) -> int | None:
    """Say on stderr that the catalog at ``path`` is an older version's, which this
    command replaces with a new one (trial 57: a report then read every file, seconds
    to minutes, without a word). The other version's schema, or ``None`` (this
    version's, none there, not a catalog, or ``no_cache``); an older one this version
    cannot replace (read-only) is not said here, a newer one is left as it is
    (``catalog_options`` says so)."""
    from ..catalog import SCHEMA_VERSION, other_schema, replaced

    other = None if path is None or no_cache else other_schema(path)
    if other is not None and other < SCHEMA_VERSION and path is not None and replaced(path):
        io.note(f"note: {safe(path)} is a catalog of an older sessiontree version (schema {other}); "
                "a new one is made in its place, so this command reads every session once")
    return other


def catalog_options(args: argparse.Namespace, io: Io | None = None, *, create: bool = True) -> dict[str, Any]:
    """``catalog`` and ``no_cache`` for the library calls.

    With ``io``: a catalog of an older version is said (:func:`note_other_schema`);
    one of a newer version is said and left alone (the files are read); a catalog the
    user named (``--catalog``, ``$SESSIONTREE_CATALOG``) that cannot be used
    (not a catalog, unwritable) is said in one note on stderr, and the files are read;
    the library would read them silently. ``create=False``: a command
    that only reads a catalog that is there (``search``) checks only such a one.

    Raises:
        CliError: the catalog path is inside Pi's folders.
    """
    from ..catalog import ENV, SCHEMA_VERSION, resolve as resolve_catalog

    try:
        path = resolve_catalog(args.catalog)
    except ValueError as e:
        raise CliError(str(e), code=2) from None
    named = args.catalog is not None or os.environ.get(ENV) is not None
    other = note_other_schema(io, path, args.no_cache) if io is not None else None
    if io is not None and other is not None and other > SCHEMA_VERSION:
        # Not replaced (catalog._store: two versions sharing it would rebuild it in turn).
        io.note(f"note: {safe(path or '')} is a catalog of a newer sessiontree version (schema {other}); it is "
                "left as it is and the files are read (another catalog file: --catalog, $SESSIONTREE_CATALOG)")
        return {"catalog": args.catalog, "no_cache": True}
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
