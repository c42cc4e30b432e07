"""The catalog: a persistent cache of what the sessions under a root say, for instant
listing and usage reports over thousands of sessions, and the search over them.

An SQLite database (standard library) outside Pi's folders
(``$SESSIONTREE_CATALOG``, else ``$XDG_CACHE_HOME/sessiontree/catalog.sqlite3``, else
``~/.cache/sessiontree/catalog.sqlite3``; ``SESSIONTREE_CATALOG=off`` turns it off).
It is a cache: deleting it loses nothing, a damaged, foreign or older-version file is
rebuilt, never trusted, and every answer is the one reading the files gives
(``no_cache=True``). See docs/CONTRACT.md §7 for its promises, ``_indexer`` for how a
file is kept current, ``_search`` and ``_usage`` for the two reports.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from datetime import date, tzinfo
from collections.abc import Callable, Sequence
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)

from .._lazy import lazy_names
from ._location import ENV, default_path, resolve
from ._run import CONTENT_ROUNDS, open_store, refresh_for, run
from ..errors import CatalogRebuiltWarning
from ._store import SCHEMA_VERSION, CatalogError, Store, other_schema, replaced

if TYPE_CHECKING:
    from typing import Any

    from ._indexer import ContentSink, Found, IndexSummary
    from ._search import Order, Query, SearchHit, SearchResult, parse_query
    from ._usage import Group, UsageLine, UsageReport
    from ._files import walk_folders

# Search, usage and the refresh machinery are imported when first used: a command
# pays only for what it does (a search through the index reads no file's rows).
_LAZY = {"Query": "_search", "SearchHit": "_search", "SearchResult": "_search", "parse_query": "_search",
         "UsageLine": "_usage", "UsageReport": "_usage", "Found": "_indexer", "ContentSink": "_indexer", "IndexSummary": "_indexer",
         "search_stream": "_search", "search_json": "_search", "ends_digest": "_indexer", "listed_text": "_indexer",
         "native_scanner": "_extract", "scan_file": "_extract", "walk_folders": "_files",
         "index_later": "_later"}


__getattr__ = lazy_names(__name__, _LAZY, globals())

__all__ = [
    "ENV",
    "SCHEMA_VERSION",
    "CatalogError",
    "CatalogRebuiltWarning",
    "Found",
    "IndexSummary",
    "Query",
    "SearchHit",
    "SearchResult",
    "Store",
    "UsageLine",
    "UsageReport",
    "default_path",
    "index",
    "index_later",
    "open_store",
    "other_schema",
    "parse_query",
    "refresh_for",
    "replaced",
    "run",
    "search",
    "usage",
    "walk_folders",
]


def _folders(folders: Sequence[str] | None, root: str | None) -> list[str]:
    from .._places import default_session_root, project_folders

    if folders is not None:
        return list(folders)
    return project_folders(root if root is not None else default_session_root())


def search(
    query: str | Query,
    folders: Sequence[str] | None = None,
    *,
    root: str | None = None,
    order: Order = "relevance",
    limit: int | None = 20,
    offset: int = 0,
    catalog: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
) -> SearchResult:
    """Search sessions with Pi's ``/resume`` query syntax (rules: ``_search``).

    Args:
        query: words, ``"quoted phrases"``, or ``re:PATTERN``.
        folders: session folders (each without its subfolders) or session files;
            ``None``: every project folder of ``root``.
        root: the sessions root (default Pi's: ``$PI_CODING_AGENT_DIR/sessions``, else
            ``~/.pi/agent/sessions``).
        order: ``"relevance"`` (Pi's: earliest matches first) or ``"recent"``.
        limit: hits per page (``None``: all); offset: hits to skip.
        catalog: the catalog file (default place when ``None``).
        no_cache: read every file (the same hits).
        on_progress, on_bytes: progress while the catalog is brought up to date.

    Returns:
        A :class:`SearchResult` (``hits``, ``total``, ``offset``, ``files``).

    Raises:
        ValueError: an empty query, or an empty or invalid ``re:`` pattern; a negative
            ``limit`` or ``offset``.
    """
    from ._search import search_folders

    return search_folders(query, _folders(folders, root), catalog=catalog, no_cache=no_cache, order=order,
                          limit=limit, offset=offset, on_progress=on_progress, on_bytes=on_bytes)


def usage(
    group: Group = "daily",
    folders: Sequence[str] | None = None,
    *,
    root: str | None = None,
    since: date | None = None,
    until: date | None = None,
    active_path: bool = False,
    tz: tzinfo | None = None,
    catalog: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
    on_unread: Callable[[str, str], None] | None = None,
) -> UsageReport:
    """Tokens and cost by day, ISO week, month, session, model or project (rules:
    ``_usage``: each entry once, copies in forked sessions too).

    Args:
        group: ``daily``, ``weekly``, ``monthly``, ``session``, ``model`` or ``project``.
        folders, root: as for :func:`search`.
        since, until: inclusive dates in ``tz``.
        active_path: count only what the sessions' current paths hold.
        tz: time zone of days, weeks and months (``None``: this machine's).
        catalog, no_cache, on_progress, on_bytes: as for :func:`search`.
        on_unread: called with ``(path, why)`` for each folder of the scope that cannot
            be listed, then each ``.jsonl`` that could be ``stat``-ed but not read, once
            the report is made (they count as no session).

    Returns:
        A :class:`UsageReport`.

    Raises:
        ValueError: an unknown ``group``.
    """
    from ._usage import usage_folders

    return usage_folders(_folders(folders, root), group, since=since, until=until, active_path=active_path, tz=tz,
                         catalog=catalog, no_cache=no_cache, on_progress=on_progress, on_bytes=on_bytes,
                         on_unread=on_unread)


def index(
    folders: Sequence[str] | None = None,
    *,
    root: str | None = None,
    catalog: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
) -> IndexSummary:
    """Build or bring up to date the catalog of ``folders``: listing facts, usage logs
    and the search index (``_segments``; natively only).

    Raises:
        CatalogError: the catalog cannot be used here (unless ``no_cache``: then the
            files are read and nothing is kept).
    """
    chosen = _folders(folders, root)

    def op(store: Store | None) -> IndexSummary:
        from ._extract import native_scanner
        from ._indexer import IndexSummary

        found = refresh_for(store, chosen, content=True, on_progress=on_progress, on_bytes=on_bytes)
        size = 0
        native = native_scanner()
        indexed = bytes_indexed = built = reused = 0
        if store is not None and native is not None:
            from . import _segments

            indexed, bytes_indexed = _segments.update(store, found, native)
            from ._usage import make_records

            make_records(native, store, chosen)  # the first warm report reads one value a folder
        if not no_cache:
            from ._shared import keep_indexes

            built, reused = keep_indexes([f.path for f in found if f.row is not None and f.error is None], native)
        if store is not None:
            with contextlib.suppress(sqlite3.Error):
                store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            for suffix in ("", "-wal"):
                with contextlib.suppress(OSError):
                    size += os.path.getsize(store.path + suffix)
            with contextlib.suppress(OSError), os.scandir(store.segments_dir) as it:
                size += sum(e.stat().st_size for e in it if e.name.startswith("seg-"))
        sessions = sum(1 for f in found if f.row is not None and f.error is None and f.row.problem is None)
        # A file counts as read whether its listing or only its usage log was read.
        read = sum(1 for f in found if f.base is not None or f.bytes_read)
        return IndexSummary(len(found), sessions, len(found) - sessions, read, sum(f.bytes_read for f in found),
                            store.path if store is not None else None, size, indexed, bytes_indexed, built, reused)

    return run(op, catalog=catalog, no_cache=no_cache, required=not no_cache)
