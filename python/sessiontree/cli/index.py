"""``sessiontree index``: build or bring up to date the catalog of a folder of sessions:
the listing facts (``ls``), the usage logs (``usage``) and the search index
(``search``), so that later commands read only what changed; and each session's own
index (a "session index": what makes a later open of a large session instant), kept in
a folder of their own (``$SESSIONTREE_INDEX``, else
``$XDG_CACHE_HOME/sessiontree/index``, else ``~/.cache/sessiontree/index``: beside the
default catalog, whatever ``--catalog`` names). A ``search`` at a terminal starts this
behind its answer.

The catalog is a cache (``$SESSIONTREE_CATALOG``, else
``$XDG_CACHE_HOME/sessiontree/catalog.sqlite3``, else
``~/.cache/sessiontree/catalog.sqlite3``; ``--catalog FILE`` for another): deleting it
loses nothing. Unchanged files cost a ``stat``, grown files their new bytes; replaced,
truncated or rewritten files are read again, vanished ones dropped. ``--no-cache``
reads every file and keeps nothing.

Scope (as for ``ls``, ``search``, ``usage``, ``check`` and ``export``): PATH, each a
session file or a folder with all its subfolders; without one, the current
directory's sessions in Pi's store (``--cwd DIR``: DIR's); ``--all``, every project in
Pi's store.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from . import _scope
from ._common import CliError, Io, byte_progress
from ..view import human_bytes, human_seconds, safe

if TYPE_CHECKING:
    from ..catalog import IndexSummary


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``index`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("index", help="build or update the catalog (listing, usage, search index)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _scope.add_arguments(p)
    _scope.add_catalog_options(p)
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(func=run)


def summary_line(s: IndexSummary, seconds: float) -> str:
    """What ``index`` did, in one line: the files read for the catalog's rows, the files
    added to the search index and the sessions' persisted indexes built or kept from
    before (each said only when the run did any; only sessions of
    ``_caches.INDEX_MIN_BYTES`` or more get one), the time taken and the catalog's size."""
    did = [f"read {s.read:,} file(s) ({human_bytes(s.bytes_read)})"]
    if s.indexed:
        did.append(f"added {s.indexed:,} file(s) ({human_bytes(s.bytes_indexed)}) to the search index")
    if s.indexes_built or s.indexes_reused:
        from .._caches import INDEX_MIN_BYTES

        # Which sessions get one is said: trial 58 read "473 built, 19 reused" of 2,000
        # sessions as sessions left out.
        built = f"{s.indexes_built:,} session index{'' if s.indexes_built == 1 else 'es'}"
        did.append(f"{built} built, {s.indexes_reused:,} kept from before "
                   f"(sessions of {human_bytes(INDEX_MIN_BYTES)} or more)")
    where = f"; catalog {s.catalog} ({human_bytes(s.catalog_bytes)})" if s.catalog else " (no catalog)"
    return (f"{s.files:,} file(s), {s.sessions:,} session(s), {s.problems:,} not session(s); {'; '.join(did)}"
            f" in {human_seconds(seconds)}{where}")


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree index``: 0, or 1 when the catalog cannot be used."""
    from ..catalog import CatalogError, index, resolve

    scope = _scope.resolve(args, io)
    options = _scope.catalog_options(args)
    _scope.note_other_schema(io, resolve(options["catalog"]), options["no_cache"])
    t0 = time.perf_counter()
    with byte_progress(io, "indexing sessions", None) as update:
        try:
            s = index(list(scope.sources), on_bytes=update, **options)
        except CatalogError as e:
            raise CliError(str(e)) from None
    seconds = time.perf_counter() - t0
    if not s.files:  # on stderr, with --json too (CONTRACT §10: an empty scope is said)
        io.note(f"no sessions found in {safe(scope.where)}{scope.empty_hint()}")
    if args.json:
        io.write_json({"files": s.files, "sessions": s.sessions, "problems": s.problems, "read": s.read,
                       "bytesRead": s.bytes_read, "indexed": s.indexed, "bytesIndexed": s.bytes_indexed,
                       "indexesBuilt": s.indexes_built, "indexesReused": s.indexes_reused,
                       "seconds": round(seconds, 3), "catalog": s.catalog, "catalogBytes": s.catalog_bytes})
        return 0
    io.print(summary_line(s, seconds), markup=False, highlight=False)
    return 0
