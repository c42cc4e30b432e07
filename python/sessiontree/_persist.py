"""The session's file on disk: when it is written, by whom, and whether it is still ours.

:class:`SessionFile` is the manager's link to its file (CONTRACT §4). It holds the
path, the :class:`~sessiontree._filestate.FileWatch` (identity and staleness), the
:class:`~sessiontree._storage.SessionWriter` (taken lazily, with its lock, at the first
write) and a pending migration rewrite. The manager decides *what* is written (Pi's
rules); this module decides *how*:

* ``create``: the first write of a new session (header + pending lines, one exclusive
  create).
* ``append``: one whole line, after taking the writer (migrating a version 1/2 file
  first, or catching up with lines another process appended, so offsets stay right).
* ``check``: once per public call, the file must still be the one indexed.

:func:`open_session` is the one open of a session file ("open, check, retry", and the
migration of a version 1/2 file in memory): the index it gives is the file's as it then
is (the path still names the file read, and the file's ends still hold what was read;
a file replaced or rewritten while it was read is read again).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ._backend import LoadIssue, TreeIndex, issue_order
from ._filestate import FileId, FileWatch, file_id, open_regular
from ._migrate import Migration, migrate_image
from ._storage import Interleaved, SessionWriter, require_regular_file
from .errors import SessionError, StaleSessionError

__all__ = ["OPEN_TRIES", "Opened", "SessionFile", "migrated_index", "open_session", "read_file"]

T = TypeVar("T")

OPEN_TRIES = 3
"""Opens of one file that met a replacement or a rewrite before :func:`open_session`
gives up."""


@dataclass
class Opened:
    """A session file as one open read it (:func:`open_session`).

    Attributes:
        index: its index (of the migrated image for a version 1/2 file).
        file: the file and this process's hold on it (a pending migration with it).
        version: the ``version`` its header holds (a migrated file's original one).
        report: the load report (a migrated file's: of the original lines).
    """

    index: TreeIndex
    file: SessionFile
    version: Any
    report: list[LoadIssue]


def open_session(index_cls: type[TreeIndex], path: str) -> Opened:
    """Open the session file at ``path``: the one open every reader goes through.

    The file is read (a regular file, opened once: ``open_file``), then held to the file
    as it is now: the staleness check of :class:`SessionFile` against what the read saw
    (the identity of the file read, its first and last 4 KiB). A version 1/2 file is
    read again whole, must hold the header the first read saw, and is migrated in
    memory (:func:`migrated_index`). An open that met another file renamed over the
    path, or a rewrite, is done again, up to :data:`OPEN_TRIES` times.

    Raises:
        InvalidSessionError: not a regular file, or no valid header.
        OSError: it cannot be read.
        StaleSessionError: it changed under every one of the tries.
    """

    def attempt() -> Opened:
        index = open_file(index_cls, path)
        try:
            return _held(index_cls, path, index)
        except BaseException:
            index.close()
            raise

    return retried(path, attempt)


def _held(index_cls: type[TreeIndex], path: str, index: TreeIndex) -> Opened:
    """``index`` (just read from ``path``) held to the file as it is now; a version 1/2
    file's index replaced (closed) by its migrated image's.

    Raises:
        StaleSessionError: the file changed since ``index`` read it.
    """
    ident = index.file_id()
    header = index.header()  # native: checked against the scan's hash
    if not index.needs_migration:
        file = SessionFile(path, ident, None, index.read_ends())
        file.check(index)
        return Opened(index, file, header.get("version"), index.load_report())
    index.close()
    data = read_file(path, ident)
    migrated, report, m = migrated_index(index_cls, data, path)
    try:
        if m.header != header:  # the bytes migrated are not the file whose header was read
            raise StaleSessionError(f"{path}: rewritten while it was read")
        file = SessionFile(path, ident, (m, len(data)))
        file.check(migrated)
    except BaseException:
        migrated.close()
        raise
    return Opened(migrated, file, header.get("version"), report)


def migrated_index(index_cls: type[TreeIndex], data: bytes,
                   path: str) -> tuple[TreeIndex, list[LoadIssue], Migration]:
    """The index and load report of a version 1/2 file's bytes, migrated in memory (the
    report's lines are the original file's)."""
    m = migrate_image(data, path)
    index = index_cls.from_image(m.image)
    report = list(m.issues) + [_original_line(i, m.line_map) for i in index.load_report()]
    report.sort(key=issue_order)
    return index, report, m


def _original_line(issue: LoadIssue, line_map: list[tuple[int, int]]) -> LoadIssue:
    if issue.line is not None and 1 <= issue.line <= len(line_map):
        line, offset = line_map[issue.line - 1]
        return LoadIssue(issue.kind, line, offset, issue.ids, issue.detail)
    return issue


def open_file(index_cls: type[TreeIndex], path: str) -> TreeIndex:
    """``index_cls.open(path)`` of a regular file, not checked (:func:`open_session`
    holds it to the file).

    Raises:
        InvalidSessionError: not a regular file, or no valid header.
        OSError: it cannot be read.
    """
    require_regular_file(path)
    return index_cls.open(path)


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


SETTLE_STEP = 0.001
"""Seconds between two looks at a file that ends mid-line."""
SETTLE_QUIET = 0.2
"""Seconds a file that ends mid-line must stay the same size before an append seals its
last piece: a writer paused within a line for less is waited for."""
SETTLE_MAX = 1.0
"""Most seconds an append waits for a file that keeps growing without ending its line."""


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
        # Set when a refresh found the read bytes changed beyond repair (another writer
        # continued a line read without its line feed): every later call fails the same
        # way, whatever either backend still holds in memory.
        self._failed: StaleSessionError | None = None

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
        if self._failed is not None:
            raise StaleSessionError(*self._failed.args)
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
        self._watch.wrote(writer.identity(), data)
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
        if not self._writer.ends_lf:
            changed |= self._settle(index)
        torn = index.has_pending_tail()
        try:
            n = self._writer.append(line, after_torn=torn)
        except Interleaved:
            # Our line is whole in the file, after the other writer's bytes: indexed as
            # the file holds it, with theirs (a reopen's view), not where we meant it.
            self._catch_up(index)
            entry_id = json.loads(line)["id"]
            if entry_id not in index:
                raise StaleSessionError(f"{self.path}: an append met another writer's and could not be "
                                        "indexed; reopen it") from None
            return str(entry_id), True
        except OSError:
            try:
                self._catch_up(index)
            except (OSError, SessionError):
                pass  # the file changed in another way too: the next check says so
            raise
        if n == len(line) + 1:  # no seal before it: the line is what follows the image
            self._watch.appended(self._writer.size - n, line + b"\n")
        return index.append_line(line), changed or torn

    def _settle(self, index: TreeIndex) -> bool:
        """The file ends mid-line: a torn piece for good, or a line another process's
        write() is still putting there (a reader sees a long write land in steps, and a
        write may stall in the kernel; Pi writes each line in one). Wait until its line
        ends, or it has not grown for :data:`SETTLE_QUIET`, or :data:`SETTLE_MAX` has
        passed, indexing what completes: sealing a line in flight left a line of ``#``
        (or an empty one) after it once it ended, or cut the other writer's entry
        (adversaries 60, 60b). A torn piece for good costs the first append after it
        :data:`SETTLE_QUIET`. Whether lines were indexed."""
        assert self._writer is not None
        changed = False
        now = time.monotonic()
        deadline, quiet = now + SETTLE_MAX, now + SETTLE_QUIET
        while not self._writer.ends_lf and time.monotonic() < min(deadline, quiet):
            time.sleep(SETTLE_STEP)
            if self._writer.grew():
                changed |= self._catch_up(index)
                quiet = time.monotonic() + SETTLE_QUIET
        return changed

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
            v = int(m.from_version) if math.isfinite(m.from_version) else 1  # "-Infinity" migrates too
            self.backup = writer.replace(m.image, f".v{v}.bak", lambda fd: self._watch.check_fd(fd, size, exact=True))
            self._migration = None
            self._watch.wrote(writer.identity(), m.image)
        else:
            # The same file as read (check_fd): the baseline stays what was read.
            writer.open(lambda fd: self._watch.check_fd(fd, index.image_len()))
            # Lines another process appended since we read the file must be indexed
            # before ours, or our offsets and ids would be wrong.
            changed = self._catch_up(index)
        self._writer = writer
        return changed

    def _catch_up(self, index: TreeIndex) -> bool:
        return self._refresh(index) > 0

    def _refresh(self, index: TreeIndex) -> int:
        try:
            return index.refresh(self.path)
        except StaleSessionError as e:
            self._failed = e
            raise

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
        return self._refresh(index)

    def release(self) -> None:
        """Drop the writer and its lock (idempotent)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
