"""The search index: segment files beside the catalog, built from the listed files'
new bytes and merged as they pile up.

A segment (``src/search/segment.rs``) holds pieces of files, each a byte range of one
file as one row of the catalog knew it (the row's id and *epoch*, a number drawn anew
whenever the file is read from its start), with the entries of that range that have
searchable text and, per token, where each first starts. A file row's ``s_end`` says
how far its live pieces reach: a piece is the file's if its epoch is the row's and it
ends by ``s_end``. New pieces only start at ``s_end`` and are committed by moving
``s_end`` from their start to their end (in one transaction with the segment's row),
so a file's live pieces never overlap; a file read again from its start gets a new
epoch, which retires all of its pieces at once.

Building and merging hold ``<catalog>.idx/lock`` (one indexer at a time; readers never
wait): :func:`update` indexes every listed session's bytes past ``s_end`` (an append
costs its new bytes), then merges: segments are grouped by size in powers of four,
and four of one size become one (each entry is rewritten a logarithmic number of
times), dropping pieces that are no longer any file's. Segment files are written
aside and renamed into place; a merge's inputs are unlinked once the catalog no longer
names them (a reader that opened one keeps reading it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator, Sequence
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any

from ._store import Store, checked_all, flock_within

__all__ = ["MAX_POSTINGS", "drop_all", "live_scope", "locked", "update"]

_CANNOT_WRITE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}
"""A merge failing with one of these could not write its output: no input is damaged."""

MAX_POSTINGS = 4_000_000
"""Postings one reading thread holds before it writes a segment (~50 MB of memory)."""

_FANOUT = 4
_MIN_LEVEL_BYTES = 256 << 10


@contextlib.contextmanager
def locked(store: Store, wait: bool) -> Iterator[bool]:
    """Hold the index's lock (waiting for it up to the store's ``busy`` seconds if
    ``wait``: an indexer stopped with ctrl+z holds it for good); yields whether it is
    held."""
    os.makedirs(store.segments_dir, exist_ok=True)
    fd = os.open(os.path.join(store.segments_dir, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        yield flock_within(fd, store.busy if wait else 0.0)
    finally:
        os.close(fd)


def _level(size: int) -> int:
    level = 0
    while size >= _MIN_LEVEL_BYTES * _FANOUT ** (level + 1):
        level += 1
    return level


def update(store: Store, found: Sequence[Any], native: Any, threads: int = 2) -> tuple[int, int]:
    """Index the new bytes of the listed sessions in ``found`` (``_indexer.Found``
    after a refresh, their rows saved) and merge; ``(files, bytes)`` whose pieces this
    call added to the index. Holds the lock.

    Raises:
        sqlite3.OperationalError: the catalog stayed busy.
        OSError: a segment cannot be written, or another indexer held the lock for the
            store's ``busy`` seconds.
    """
    with locked(store, wait=True) as held:
        if not held:
            raise BlockingIOError(f"{store.segments_dir}: another process is building the search index "
                                  f"(it holds {store.segments_dir}/lock)")
        read = _index_new(store, found, native, threads)
        _merge(store, native)
        _sweep(store)
    return read


def _index_new(store: Store, found: Sequence[Any], native: Any, threads: int) -> tuple[int, int]:
    # The rows as they are now, read under the lock: another indexer may have moved
    # their s_end since this process listed them (then there is less, or nothing, to read).
    ids = [f.row.id for f in found if f.row is not None and f.row.id is not None and f.error is None]
    paths = {f.row.id: f.path for f in found if f.row is not None and f.row.id is not None}
    todo: list[tuple[bytes, int, int, int, int, bytes]] = []
    ends: list[tuple[int, int, int | None, int, int]] = []  # id, epoch, s_end, l_end, record length
    for k in range(0, len(ids), 500):
        part = ids[k:k + 500]
        rows = checked_all("file", ("id", "gen", "epoch", "s_end", "s_entries", "l_end"), store.conn.execute(
            "SELECT id, gen, epoch, s_end, s_entries, l_end FROM file WHERE problem IS NULL AND old = 0"
            f" AND id IN ({','.join('?' * len(part))})", part).fetchall())
        for fid, gen, epoch, s_end, s_entries, l_end in rows:
            start = s_end or 0
            if start >= l_end:
                continue
            entries = store.entries(fid, gen)
            if entries is None or len(entries) < s_entries:
                continue  # the row changed since it was read: the next update reads it
            todo.append((os.fsencode(paths[fid]), fid, epoch, start, l_end, entries[:s_entries]))
            ends.append((fid, epoch, s_end, l_end, len(entries)))
    if not todo:
        return 0, 0
    written, outcomes, failure = native.index_build(os.fsencode(store.segments_dir), todo, threads, MAX_POSTINGS)
    if failure is not None:
        for name, _size, _pieces in written:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(store.segments_dir, name))
        raise OSError(f"{store.segments_dir}: cannot write a search segment ({failure})")
    with store.write() as c:
        for name, size, pieces in written:
            c.execute("INSERT INTO segment (name, size, docs) VALUES (?, ?, ?)", (name, size, sum(p[4] for p in pieces)))
        # A piece is the file's once s_end moves from its start to its end, in this
        # transaction, and only if the row still stands where the piece was read (a
        # listing that read the file again from its start drew a new epoch).
        c.executemany("UPDATE file SET s_end = ?, s_entries = ?, gen = gen + 1"
                      " WHERE id = ? AND epoch = ? AND s_end IS ? AND l_end >= ?",
                      [(l_end, n, fid, epoch, s_end, l_end) for (fid, epoch, s_end, l_end, n), o
                       in zip(ends, outcomes) if o == "done"])
    added = [t[4] - t[3] for t, o in zip(todo, outcomes) if o == "done"]
    return len(added), sum(added)


def live_scope(store: Store) -> list[tuple[int, int, int]]:
    """``(file, epoch, s_end)`` of every row with indexed bytes: which pieces live."""
    return [(i, e, s) for i, e, s in checked_all("file", ("id", "epoch", "s_end"), store.conn.execute(
        "SELECT id, epoch, s_end FROM file WHERE s_end IS NOT NULL").fetchall())]


def _merge(store: Store, native: Any) -> None:
    while True:
        segs = store.segments()
        by_level: dict[int, list[tuple[str, int, int]]] = {}
        for s in segs:
            by_level.setdefault(_level(s[1]), []).append(s)
        group = next((v for _lvl, v in sorted(by_level.items()) if len(v) >= _FANOUT), None)
        if group is None:
            return
        group = sorted(group, key=lambda s: s[1])[:_FANOUT]
        inputs = [os.fsencode(os.path.join(store.segments_dir, s[0])) for s in group]
        try:
            name, size, pieces = native.index_merge(os.fsencode(store.segments_dir), inputs, live_scope(store))
        except OSError as e:
            if e.errno in _CANNOT_WRITE:
                raise  # a full disk: the segments stay as they are (the build failed)
            # An input damaged, or not a file (a FIFO in its place is never opened): the
            # index is dropped, as a search drops it, and the next `index` builds it
            # again; the files answer meanwhile.
            drop_all(store)
            return
        with store.write() as c:
            c.executemany("DELETE FROM segment WHERE name = ?", [(s[0],) for s in group])
            c.execute("INSERT INTO segment (name, size, docs) VALUES (?, ?, ?)", (name, size, sum(p[4] for p in pieces)))
        for s in group:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(store.segments_dir, s[0]))


def _sweep(store: Store, grace: float = 3600.0) -> None:
    """Remove segment files the catalog does not name (a crash between writing and
    committing one), once they are older than ``grace`` seconds."""
    named = {s[0] for s in store.segments()}
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(store.segments_dir) as it:
        for e in it:
            if e.name.startswith(("seg-", ".seg-")) and e.name not in named:
                with contextlib.suppress(OSError):
                    if now - e.stat().st_mtime > grace:
                        os.unlink(e.path)


def drop_all(store: Store) -> None:
    """Forget the whole index (a damaged segment): rows' ``s_end`` and the segments."""
    with store.write() as c:
        c.execute("DELETE FROM segment")
        c.execute("UPDATE file SET s_end = NULL, s_entries = 0, gen = gen + 1")
    _sweep(store, grace=0.0)
