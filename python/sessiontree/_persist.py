"""The session's file on disk: when it is written, by whom, and whether it is still ours.

:class:`SessionFile` is the manager's link to its file (API.md section 3). It holds the
path, the :class:`~sessiontree._filestate.FileWatch` (identity and staleness), the
:class:`~sessiontree._storage.SessionWriter` (taken lazily, with its lock, at the first
write) and a pending migration rewrite. The manager decides *what* is written (Pi's
rules); this module decides *how*:

* ``create``: the first write of a new session (header + pending lines, one exclusive
  create).
* ``append``: one whole line, after taking the writer (migrating a version 1/2 file
  first, or catching up with lines another process appended, so offsets stay right).
* ``check``: once per public call, the file must still be the one indexed.

:func:`open_index` opens a file's index so that it is the file's as it then is: the
path still names the file read, and the file's ends still hold what was read (a file
replaced or rewritten while it was read is read again).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import TypeVar

from ._backend import TreeIndex
from ._filestate import FileId, FileWatch, file_id, open_regular
from ._migrate import Migration
from ._storage import SessionWriter, require_regular_file
from .errors import SessionError, StaleSessionError

__all__ = ["OPEN_TRIES", "SessionFile", "check_read", "open_file", "open_index", "read_file", "retried"]

T = TypeVar("T")

OPEN_TRIES = 3
"""Opens of one file that met a replacement or a rewrite before :func:`open_index`
gives up."""


def open_index(index_cls: type[TreeIndex], path: str) -> TreeIndex:
    """``index_cls.open(path)``, checked after the read (:func:`check_read`); an open
    that met another file renamed over the path, or a rewrite of an end, is done again,
    up to :data:`OPEN_TRIES` times.

    Raises:
        InvalidSessionError: not a regular file, or no valid header.
        OSError: it cannot be read.
        StaleSessionError: it changed under every one of the tries.
    """
    def attempt() -> TreeIndex:
        index = open_file(index_cls, path)
        try:
            check_read(path, index)
        except BaseException:
            index.close()
            raise
        return index

    return retried(path, attempt)


def open_file(index_cls: type[TreeIndex], path: str) -> TreeIndex:
    """``index_cls.open(path)`` of a regular file, not checked (the caller holds it to
    the file with :func:`check_read` or a :class:`SessionFile`).

    Raises:
        InvalidSessionError: not a regular file, or no valid header.
        OSError: it cannot be read.
    """
    require_regular_file(path)
    return index_cls.open(path)


def check_read(path: str, index: TreeIndex) -> None:
    """The staleness check (:class:`FileWatch`) against what ``index`` read: the path
    still names that file (``file_id``, taken from the open file) and the file's ends
    are still what the read saw (``read_ends``).

    Raises:
        StaleSessionError: another file is at the path, or it was truncated or rewritten.
    """
    FileWatch(path, index.file_id(), index.read_ends()).check(index.image_len())


def retried(path: str, attempt: Callable[[], T]) -> T:
    """``attempt()``, made again when it raises ``StaleSessionError`` (the file changed
    while it was read), :data:`OPEN_TRIES` times at most.

    Raises:
        StaleSessionError: every try met a change.
    """
    for k in range(1, OPEN_TRIES + 1):
        try:
            return attempt()
        except StaleSessionError as e:
            if k == OPEN_TRIES:
                raise StaleSessionError(f"{path}: replaced or rewritten while it was read, {OPEN_TRIES} times "
                                        "in a row; try again when it stops changing") from e
    raise AssertionError("unreachable")  # pragma: no cover


def read_file(path: str, ident: FileId | None) -> bytes:
    """The whole file at ``path``, which must still be the file ``ident`` names (a
    version 1/2 file read again to be migrated).

    Raises:
        StaleSessionError: the path names another file now.
        OSError: it cannot be read, or is not a regular file.
    """
    with open_regular(path) as f:
        if ident is not None and file_id(os.fstat(f.fileno())) != ident:
            raise StaleSessionError(f"{path}: replaced while it was read; reopen it")
        return f.read()


class SessionFile:
    """A session file and this process's hold on it.

    Args:
        path: the file.
        ident: its identity when it was read, or ``None`` for a file not written yet.
        migration: the pending rewrite of a version 1/2 file, with the size the
            original had when read; ``None`` otherwise.
        ends: the index's ``read_ends()``: what the first check holds the file to.

    Attributes:
        path: the file.
        on_disk: the file holds the session's image (it was read, or created here).
        backup: the original's path after a migration rewrite.
    """

    def __init__(self, path: str, ident: FileId | None = None, migration: tuple[Migration, int] | None = None,
                 ends: tuple[int, bytes] | None = None) -> None:
        self.path = path
        self.on_disk = ident is not None
        self.backup: str | None = None
        self._watch = FileWatch(path, ident, ends)
        self._writer: SessionWriter | None = None
        self._migration = migration

    @property
    def migration_pending(self) -> bool:
        """A version 1/2 file is migrated in memory and not yet rewritten."""
        return self._migration is not None

    def check(self, index: TreeIndex) -> None:
        """Fail unless the file still holds the indexed image (nothing to check before
        the first write). While a migration is pending only the identity is checked:
        the image is the migrated one, not the file's bytes.

        Raises:
            StaleSessionError: the file is gone, replaced, truncated or rewritten.
        """
        if not self.on_disk:
            return
        if self._migration is not None:
            self._watch.check_identity()
        else:
            self._watch.check(index.image_len(), index.stat_unchanged)

    def create(self, data: bytes) -> None:
        """The first write: ``data`` (header + pending lines) in one exclusive create.

        Raises:
            SessionFileExistsError: the path exists (nothing is written).
            OSError: the write failed.
        """
        writer = SessionWriter(self.path)
        writer.create(data)
        self._writer = writer
        self._watch.forget(writer.identity())
        self.on_disk = True

    def append(self, index: TreeIndex, line: bytes) -> tuple[str, bool]:
        """Write one entry line (no LF) and index it.

        Takes the writer first if this process does not hold it yet: a pending
        migration is written (atomically, original kept), or lines another process
        appended since the file was read are indexed before ours.

        Returns:
            ``(entry id, changed)``: ``changed`` says the load report may have changed
            apart from the new entry (lines of another process were indexed, or a torn
            last line became a whole one).

        Raises:
            SessionLockedError: another writer holds the file.
            StaleSessionError: the file changed under us.
            OSError: the write failed (naming the file). Whatever part of the line
                reached the file is indexed as the loader reads it (a pending torn
                piece), so the index and the file agree, ``load_report`` equals a
                reopen's and the next append seals the piece and starts a new line.
        """
        changed = self._take_writer(index)
        assert self._writer is not None
        torn = index.has_pending_tail()
        try:
            self._writer.append(line, after_torn=torn)
        except OSError:
            try:
                self._catch_up(index)
            except (OSError, SessionError):
                pass  # the file changed in another way too: the next check says so
            raise
        return index.append_line(line), changed or torn

    def hold(self, index: TreeIndex) -> bool:
        """Take the writer (its lock) now if this process does not hold it yet, and index
        the lines another process appended before it (see :meth:`append`).

        Returns:
            Whether the load report may have changed (lines were indexed).

        Raises:
            SessionLockedError: another writer holds the file.
            StaleSessionError: the file changed under us.
        """
        return self._take_writer(index)

    def migrate(self, index: TreeIndex) -> str | None:
        """Write a pending migration now (taking the writer).

        Returns:
            The backup's path, or ``None`` when no migration was pending.
        """
        if self._migration is None:
            return None
        self._take_writer(index)
        return self.backup

    def _take_writer(self, index: TreeIndex) -> bool:
        if self._writer is not None:
            return self._writer.grew() and self._catch_up(index)
        writer = SessionWriter(self.path)
        changed = False
        if self._migration is not None:
            m, size = self._migration
            self.backup = writer.replace(
                m.image, f".v{int(m.from_version)}.bak", lambda fd: self._watch.check_fd(fd, size, exact=True)
            )
            self._migration = None
        else:
            writer.open(lambda fd: self._watch.check_fd(fd, index.image_len()))
            # Lines another process appended since we read the file must be indexed
            # before ours, or our offsets and ids would be wrong.
            changed = self._catch_up(index)
        self._writer = writer
        self._watch.forget(writer.identity())
        return changed

    def _catch_up(self, index: TreeIndex) -> bool:
        return index.refresh(self.path) > 0

    def migrated_growth(self) -> bytes | None:
        """While a migration is pending: the file's bytes if another process appended
        to it since it was read (``None`` if it did not grow).

        Raises:
            StaleSessionError: the bytes that were migrated are no longer the file's
                first bytes (it was rewritten, e.g. migrated in place by Pi).
        """
        assert self._migration is not None
        m, size = self._migration
        try:
            if os.stat(self.path).st_size == size:
                return None
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise StaleSessionError(f"{self.path}: session file cannot be read ({e.strerror or e}); reopen it") from None
        if len(data) < size or hashlib.blake2b(data[:size]).digest() != m.source_digest:
            raise StaleSessionError(f"{self.path}: session file was rewritten while its migration was pending; reopen it")
        return data

    def remigrated(self, migration: Migration, size: int) -> None:
        """The pending migration is now ``migration`` of the file's first ``size`` bytes."""
        self._migration = (migration, size)

    def refresh(self, index: TreeIndex) -> int:
        """Index complete lines another process appended; how many entries were added
        (0 while a migration is pending: the image is not the file's)."""
        if not self.on_disk or self._migration is not None:
            return 0
        return index.refresh(self.path)

    def release(self) -> None:
        """Drop the writer and its lock (idempotent)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
