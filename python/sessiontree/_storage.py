"""``SessionWriter``: the only code that writes session files (API.md section 3).

Rules it keeps:

* **Create** is one ``O_CREAT | O_EXCL`` open: an existing path raises
  :class:`SessionFileExistsError` and is left alone. The header and every pending line
  go out in one ``write`` loop, then the file and its folder are fsynced.
* **Append** is one ``os.write`` of one whole line on an ``O_APPEND`` descriptor
  (looping only on short writes), so a concurrent reader sees either nothing or a
  prefix of the line, never an interleaving. If the file does not end with LF (a torn
  last line), the first append writes ``\\n`` first, in the same ``write``.
* **Never truncate**: no ``O_TRUNC``, no ``ftruncate``, no write at an offset.
* **Lock**: ``fcntl.flock(LOCK_EX | LOCK_NB)`` on the file, taken before the first byte
  is written and held until :meth:`close`. A second writer (another process, or another
  descriptor in this one) gets :class:`SessionLockedError`. The kernel drops the lock
  when the process dies. Readers never lock. The lock is advisory: Pi itself does not
  take it.
* **Migration rewrite** (:meth:`replace`): the new image goes to a temporary file in
  the same folder (``O_EXCL``), which is locked, written and fsynced; the original is
  kept beside it as ``<name>.v<N>.bak`` (hard link, else a copy, fsynced), then the
  temporary file is renamed over the original and the folder is fsynced. A crash at any
  point leaves the complete original or the complete new file (plus the backup); a
  failure removes the temporary file.

fsync policy: create and migration always fsync (file and folder). Appends fsync the
file after each line when :data:`FSYNC_APPENDS` is true (the default; set the
environment variable ``SESSIONTREE_FSYNC=0`` to turn it off): an agent appends a few
lines per turn, and a lost turn after a power cut costs more than a millisecond per
line. Without fsync a line still survives a crash of the process (it is in the page
cache), just not of the machine.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
import shutil

from collections.abc import Callable

from ._filestate import FileId, file_id
from .errors import InvalidSessionError, SessionFileExistsError, SessionLockedError

Verify = Callable[[int], os.stat_result]
"""Checks an open descriptor before a write; returns its ``fstat`` or raises."""

__all__ = ["SessionWriter", "FSYNC_APPENDS"]

FSYNC_APPENDS = os.environ.get("SESSIONTREE_FSYNC", "1").strip().lower() not in ("0", "false", "no", "off")
"""Whether each append is followed by ``fsync`` (env ``SESSIONTREE_FSYNC``, default on)."""

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path or ".", os.O_RDONLY | _O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on folders; the data itself is synced
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _lock(fd: int, path: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLockedError(f"{path}: another writer holds the session lock") from None
        raise


class SessionWriter:
    """Appends whole lines to one session file under an advisory lock.

    Use :meth:`create` for a new file or :meth:`open` for an existing one; then
    :meth:`append` per entry, and :meth:`close` to release the lock.

    Attributes:
        path: the session file.
        size: bytes the file holds as far as this writer knows (it checks this against
            ``fstat`` so the caller can notice other writers, see :meth:`grew`).
    """

    def __init__(self, path: str, *, fsync: bool | None = None) -> None:
        self.path = os.fspath(path)
        self.size = 0
        self._fd: int | None = None
        self._ends_lf = True
        self._fsync = FSYNC_APPENDS if fsync is None else fsync

    # ------------------------------------------------------------------ opening
    @property
    def is_open(self) -> bool:
        """Whether the writer holds the file (and its lock)."""
        return self._fd is not None

    def identity(self) -> FileId:
        """The identity of the file this writer holds."""
        assert self._fd is not None
        return file_id(os.fstat(self._fd))

    def create(self, data: bytes) -> None:
        """Create the file with ``data`` (header + pending lines) in one exclusive create.

        Args:
            data: whole lines, each ended by LF.

        Raises:
            SessionFileExistsError: the path exists (it is not touched).
            SessionLockedError: another writer locked the new file first.
            OSError: the folder cannot be created or the file written.
        """
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _O_CLOEXEC, 0o644)
        except FileExistsError:
            raise SessionFileExistsError(f"{self.path}: refusing to overwrite an existing file") from None
        try:
            _lock(fd, self.path)
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.size = len(data)
        self._ends_lf = not data or data.endswith(b"\n")
        _fsync_dir(folder)

    def open(self, verify: Verify | None = None) -> None:
        """Open an existing file for appending and take its lock.

        Args:
            verify: called with the locked descriptor before anything is written; it
                returns the ``fstat`` result or raises (``_filestate.FileWatch.check_fd``:
                the file must still be the one the caller indexed).

        Raises:
            SessionLockedError: another writer holds the lock.
            StaleSessionError: from ``verify``.
            OSError: the file cannot be opened (``FileNotFoundError`` if gone).
        """
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | _O_CLOEXEC)
        try:
            _lock(fd, self.path)
            st = verify(fd) if verify is not None else os.fstat(fd)
            self.size = st.st_size
            self._ends_lf = self._last_byte_is_lf(st.st_size)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _last_byte_is_lf(self, size: int) -> bool:
        if size == 0:
            return True
        with open(self.path, "rb") as f:  # the write-only fd cannot pread
            f.seek(size - 1)
            return f.read(1) == b"\n"

    def grew(self) -> bool:
        """Whether the file is now longer than this writer wrote (another writer
        appended); re-reads whether it ends with LF."""
        assert self._fd is not None
        st = os.fstat(self._fd)
        if st.st_size == self.size:
            return False
        self.size = st.st_size
        self._ends_lf = self._last_byte_is_lf(st.st_size)
        return True

    # ----------------------------------------------------------------- writing
    def append(self, line: bytes) -> int:
        """Append one entry line (without LF) as one write of one whole line.

        Args:
            line: the entry's JSON text.

        Returns:
            Bytes written (``len(line) + 1``, plus 1 when a torn tail needed an LF).

        Raises:
            OSError: the write failed; the next append re-checks the file's last byte.
        """
        assert self._fd is not None, "writer is not open"
        data = line + b"\n" if self._ends_lf else b"\n" + line + b"\n"
        try:
            _write_all(self._fd, data)
            if self._fsync:
                os.fsync(self._fd)
        except BaseException:
            # Part of the line may be on disk: find out before the next append.
            st = os.fstat(self._fd)
            self.size = st.st_size
            self._ends_lf = self._last_byte_is_lf(st.st_size)
            raise
        self.size += len(data)
        self._ends_lf = True
        return len(data)

    def replace(self, data: bytes, backup_suffix: str, verify: Verify) -> str:
        """Atomically replace the file's content (a migration rewrite), keeping the original.

        The caller must not hold this writer open yet. On return the writer holds the
        new file, locked.

        Args:
            data: the new image (whole lines).
            backup_suffix: e.g. ``".v1.bak"``; the original is kept as path + suffix
                (``.1``, ``.2``... appended if that exists).
            verify: called with the original's locked descriptor; raises when the
                file changed since it was read (any change means someone wrote).

        Returns:
            The backup's path.

        Raises:
            SessionLockedError: another writer holds the original's lock.
            StaleSessionError: the file changed since it was read.
            OSError: on I/O failure (the original is then unchanged).
        """
        assert self._fd is None
        folder = os.path.dirname(self.path) or "."
        old_fd = os.open(self.path, os.O_RDONLY | _O_CLOEXEC)
        tmp = None
        new_fd = None
        try:
            _lock(old_fd, self.path)
            st = verify(old_fd)
            base = os.path.basename(self.path)
            tmp = os.path.join(folder, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            # Created private, then given the original's mode: the rewrite must not make
            # a 0600 session readable by others.
            new_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _O_CLOEXEC, 0o600)
            os.fchmod(new_fd, stat.S_IMODE(st.st_mode))
            _lock(new_fd, tmp)
            _write_all(new_fd, data)
            os.fsync(new_fd)
            backup = self._keep_original(backup_suffix)
            os.rename(tmp, self.path)
            tmp = None
            _fsync_dir(folder)
        except BaseException:
            if new_fd is not None:
                os.close(new_fd)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            raise
        finally:
            os.close(old_fd)  # releases the original's lock; it now lives only as the backup
        self._fd = new_fd
        self.size = len(data)
        self._ends_lf = not data or data.endswith(b"\n")
        return backup

    def _keep_original(self, suffix: str) -> str:
        backup = self.path + suffix
        n = 0
        while True:
            try:
                os.link(self.path, backup)
                return backup
            except FileExistsError:
                n += 1
                backup = f"{self.path}{suffix}.{n}"
            except OSError:
                break  # no hard links here: copy instead
        while os.path.exists(backup):
            n += 1
            backup = f"{self.path}{suffix}.{n}"
        with open(self.path, "rb") as src, open(backup, "xb") as dst:
            shutil.copyfileobj(src, dst)
            dst.flush()
            os.fsync(dst.fileno())
        return backup

    def close(self) -> None:
        """Release the lock and the descriptor (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def require_regular_file(path: str) -> None:
    """Refuse what is not a regular file before opening it.

    Opening a FIFO for reading blocks until a writer appears, and a device can be
    endless: a session path must be a plain file.

    Raises:
        InvalidSessionError: ``path`` exists and is not a regular file.
        OSError: it cannot be examined (``FileNotFoundError`` if absent).
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise InvalidSessionError(f"{kind}: not a session file", path)
