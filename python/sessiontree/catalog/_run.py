"""Running an operation on the catalog (:func:`run`: damage rebuilt, an unusable catalog
answered by reading the files) and bringing it up to date for one (:func:`refresh_for`).
The catalog's public names (``sessiontree.catalog``) include both; the reports
(``_search``, ``_usage``) use them from here, so that no module of the package imports
its ``__init__`` back."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)

from ._location import ENV, resolve
from ._store import CatalogError, Store, busy

if TYPE_CHECKING:
    from ._indexer import ContentSink, Found

__all__ = ["CONTENT_ROUNDS", "open_store", "refresh_for", "run"]

if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")


def open_store(catalog: str | os.PathLike[str] | None = None, *, required: bool = False,
               busy: float = 30.0, create: bool = True) -> Store | None:
    """Open (or create) the catalog.

    Args:
        catalog: the database file; ``None`` for the default place (:func:`default_path`).
        required: raise instead of returning ``None`` when it cannot be used.
        busy: seconds a write waits for another process's.
        create: make the file when there is none (else: ``None``, for a reader that
            only uses what is there, like ``search``).

    Returns:
        The :class:`Store`, or ``None`` when the catalog is turned off
        (``$SESSIONTREE_CATALOG=off``), is not there and not to be created, or,
        unless ``required``, cannot be used here.

    Raises:
        ValueError: the path is inside Pi's folders.
        CatalogError: ``required`` and it cannot be opened or created.
    """
    path = resolve(catalog)
    if path is None:
        if required:
            raise CatalogError(f"the catalog is turned off (${ENV})")
        return None
    if not create and not os.path.exists(path):
        return None
    try:
        return Store(path, busy=busy)
    except CatalogError:
        if required:
            raise
        return None


# The catalog cannot be written here (a read-only file or folder, a full disk, no
# permission): not damage. Rebuilding would replace a file the user made read-only.
_UNUSABLE = tuple(getattr(sqlite3, n) for n in ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_FULL",
                                                "SQLITE_IOERR", "SQLITE_AUTH") if hasattr(sqlite3, n))


def _unusable(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _UNUSABLE
    return "readonly" in str(e) or "unable to open" in str(e)


def run(
    op: Callable[[Store | None], T],
    *,
    catalog: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
    required: bool = False,
    wait: bool = False,
) -> T:
    """Run ``op(store)`` on the catalog: a damaged database found on the way (any
    ``sqlite3.DatabaseError`` that is not "busy") is rebuilt, never trusted, and ``op``
    run again; a catalog that cannot be used (turned off, unwritable, busy for longer
    than the wait) gives ``op(None)``: the answer of reading the files. ``op`` must
    give the same answer either way.

    Args:
        op: the work, given the store or ``None``.
        catalog: the catalog file (``None``: the default place).
        no_cache: run ``op(None)`` only.
        required: raise instead of answering without the catalog.
        wait: wait up to 30 s for another process's write (else 5 s).

    Raises:
        CatalogError: ``required`` and the catalog cannot be used (busy, or damaged
            again after its rebuild).
    """
    store = None if no_cache else open_store(catalog, required=required, busy=30.0 if wait or required else 5.0)
    if store is None:
        return op(None)
    try:
        store.check_keys()
        return op(store)
    except sqlite3.DatabaseError as e:
        if busy(e) or _unusable(e):
            if required:
                why = "stayed busy" if busy(e) else "cannot be written"
                raise CatalogError(f"{store.path}: the catalog {why} ({e})") from e
            return op(None)
        # "database disk image is malformed", "file is not a database", a vanished
        # table: rebuilt and read again.
        try:
            store.rebuild(str(e))
            store.check_keys()
            return op(store)
        except (CatalogError, sqlite3.DatabaseError) as again:
            # Damaged again at once (another process is breaking or replacing it):
            # the files answer.
            if required:
                raise CatalogError(f"{store.path}: cannot use the catalog ({again})") from again
            return op(None)


CONTENT_ROUNDS = 5
"""Refreshes a search, a report or ``index`` makes before it reads the files instead."""


def refresh_for(store: Store | None, folders: Sequence[str], *, content: bool = False,
                on_progress: Callable[[int, int], None] | None = None,
                on_bytes: Callable[[int, int], None] | None = None,
                sink: ContentSink | None = None) -> list[Found]:
    """``_indexer.refresh`` as the commands use it. A listing answers from what it read
    and does not wait for a busy catalog. Usage logs must be in the catalog to be
    summed, so a content refresh waits for a busy catalog (and raises if it
    stays busy, which :func:`run` answers by reading the files), and a file whose save
    another process's won (that process may have saved a listing only) is refreshed
    again from what the catalog now holds, until every file's rows are current.

    Raises:
        sqlite3.OperationalError: (content) the catalog stayed busy, or other processes
            kept changing the same files for :data:`CONTENT_ROUNDS` rounds.
    """
    from ._indexer import refresh

    for _ in range(CONTENT_ROUNDS if content and store is not None else 1):
        found = refresh(store, folders, content=content, on_progress=on_progress, on_bytes=on_bytes, sink=sink,
                        must_save=content)
        if not content or store is None or all(f.saved or f.row is None for f in found):
            return found
    raise sqlite3.OperationalError("database is locked: other processes kept changing the files' rows")
