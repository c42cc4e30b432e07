"""Where the catalog meets the sessions' persisted indexes: one cache for a session.

An open of a session keeps what its scan learned in ``$XDG_CACHE_HOME/sessiontree/index/``
(``src/persist/``); the catalog keeps what a listing, a search and a usage report need in
``catalog.sqlite3`` beside it. Both know a file by the same identity and the same ends
(``_filestate.indexed_ends``), and each reads only what the other has not:

* A listing pass that must read a session from its start (new to the catalog, or
  rewritten) and would read it natively first looks for the session's persisted index
  (:func:`listing_from_index`): one an earlier open kept is reread, only the bytes the
  file gained since are scanned, and the listing facts come from the index and a few
  lines (``src/listing/indexed.rs``); the listing then goes on from the index's end as
  a resumed pass, so every answer is the one a scan gives
  (``tests/test_shared_cache.py`` compares them). A session no open indexed is read
  by the listing's own scan, as before: building its index there cost the first
  listing of a 100 MB session ~1.6x its scan (``benches/shared_cache.py``), for a
  session that may never be opened.
* ``index``, the command that builds every cache (:func:`keep_indexes`), leaves each
  session's persisted index in place, so that an open after it is a reopen.

Files shorter than ``_caches.INDEX_MIN_BYTES`` are read as before: their scan costs
about what an index costs to read. ``SESSIONTREE_INDEX=off`` (or a folder that cannot be
used, or the python backend) leaves the catalog reading files, as before.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a report's start)
if TYPE_CHECKING:
    from typing import Any

from .. import _caches
from .._filestate import FINGERPRINT
from ..errors import SessionError

__all__ = ["keep_indexes", "listing_from_index"]


def _cache() -> tuple[str, int, int, float] | None:
    try:
        return _caches.index_cache()
    except ValueError:  # a folder inside Pi's, or a bad budget: the open says so
        return None


def listing_from_index(path: str, size: int, native: Any) -> tuple[Any, ...] | None:
    """The listing pass of ``path`` from its start up to the end of the last line its
    persisted index covers (``_sessiontree.Index.listing``: the tuple
    ``scan_listing`` returns, ``eof`` false), from the index an open kept; ``None``
    when the file is read as before (no native reader, a short file, indexes turned off,
    no index kept, a file the index cannot list so, or any error: the scan then decides).
    """
    if native is None or size < _caches.INDEX_MIN_BYTES:
        return None
    cache = _cache()
    if cache is None:
        return None
    try:
        ix = native.Index.open_kept(path, cache)
        return None if ix is None else ix.listing(FINGERPRINT)  # type: ignore[no-any-return]
    except (OSError, SessionError):
        return None


def keep_indexes(paths: Sequence[str], native: Any) -> tuple[int, int]:
    """Open each session of ``paths`` through the persisted indexes (a reopen for one
    already kept, else a scan whose index is kept once the file has settled), so that the
    next open is a reopen; ``(built, reused)``: sessions scanned to build their index,
    and sessions whose kept index was reread (with the bytes the file gained since).
    Sessions shorter than ``_caches.INDEX_MIN_BYTES`` count in neither; errors are the
    open's to report later."""
    cache = _cache()
    built = reused = 0
    if native is None or cache is None:
        return built, reused
    for path in paths:
        try:
            if os.stat(path).st_size < _caches.INDEX_MIN_BYTES or _caches.beside_session(path, cache[0]):
                continue
            if native.Index.open_kept(path, cache) is not None:
                reused += 1
            else:
                native.Index.open(path, cache)
                built += 1
        except (OSError, SessionError):
            continue
    return built, reused
