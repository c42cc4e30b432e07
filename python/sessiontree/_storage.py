"""``SessionWriter``: the only code that writes session files (CONTRACT §4).

Rules it keeps:

* **New files appear whole or not at all.** A create (the first write of a session, a
  fork, a branched session) writes header + pending lines to a temporary file in the
  same folder (``O_EXCL``, locked), fsyncs it, then puts it at its name *without
  replacing anything* (a hard link, else ``renameat2(RENAME_NOREPLACE)``, else an
  exclusive placeholder renamed over), removes the temporary name and fsyncs the
  folder. An existing path raises :class:`SessionFileExistsError` and is left alone; a
  failure (a full disk) or a crash leaves no file at the name, so the next attempt
  can create it.
* **Append** is one ``os.write`` of one whole line on an ``O_APPEND`` descriptor
  (looping only on short writes), so a concurrent reader sees either nothing or a
  prefix of the line, never an interleaving. If the file does not end with LF, the
  append writes ``_reader.line_prefix`` first, in the same ``write``: ``#`` + LF after
  a torn (pending) last piece, so no part of that piece can be read as an entry, LF
  after another unterminated one. A failed append may leave part of its line in the
  file: the writer re-reads the file's end, and the caller indexes those bytes as the
  loader reads them (``_persist.SessionFile.append``), so memory and file agree and
  the next append seals them.
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
* **Temporary files** (:func:`create_temp`, for session files and for every command
  output, ``_output``) are named ``.<name>.<pid>.<8 hex>.tmp`` and locked while
  written; SIGINT, SIGTERM and SIGHUP remove them before the process ends. One left by
  a process that died without a chance to (SIGKILL) is removed by the next writer in
  that folder (:func:`sweep_temps`): its process is gone and its lock is free.
* **Errors name the file**: an ``OSError`` from a write carries the session's path.

fsync policy: create and migration always fsync (file and folder). Appends fsync the
file after each line when :data:`FSYNC_APPENDS` is true (the default; set the
environment variable ``SESSIONTREE_FSYNC=0`` to turn it off): an agent appends a few
lines per turn, and a lost turn after a power cut costs more than a millisecond per
line. Without fsync a line still survives a crash of the process (it is in the page
cache), just not of the machine. Within :func:`synced_once` a file's appends are
fsynced once, when its writer closes: for a writer of many lines whose source can be
read again (an import).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import signal
import stat
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ._filestate import FileId, file_id, open_regular
from ._reader import line_prefix
from .errors import InvalidSessionError, SessionFileExistsError, SessionLockedError, StaleSessionError

Verify = Callable[[int], os.stat_result]
"""Checks an open descriptor before a write; returns its ``fstat`` or raises."""

__all__ = ["SessionWriter", "Interleaved", "FSYNC_APPENDS", "file_kind", "open_regular", "process_alive", "require_regular_file", "synced_once"]

FSYNC_APPENDS = os.environ.get("SESSIONTREE_FSYNC", "1").strip().lower() not in ("0", "false", "no", "off")
"""Whether each append is followed by ``fsync`` (env ``SESSIONTREE_FSYNC``, default on)."""

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

# This thread's writers whose appends wait for one fsync (synced_once), else no attribute.
_ONCE = threading.local()


@contextlib.contextmanager
def synced_once() -> Iterator[None]:
    """Within it, this thread's appends that would each be fsynced
    (:data:`FSYNC_APPENDS`) are fsynced once per file instead, when its writer closes
    or, for one still open, when the block ends: for many lines whose source can be
    read again (an import of 12,000 entries spent 7–14 s of 10–18 in one fsync each,
    trial 59; a crash loses only what the next run writes again). A file's lines are
    on disk when the block ends without an error.

    Raises:
        OSError: an fsync failed (naming the file), at the writer's close or at the end.
    """
    if getattr(_ONCE, "pending", None) is not None:
        yield  # nested: the outer block syncs
        return
    pending: dict[int, SessionWriter] = {}
    _ONCE.pending = pending
    try:
        yield
    finally:
        del _ONCE.pending
        failed: BaseException | None = None
        for writer in list(pending.values()):
            try:
                writer._sync_pending()
            except OSError as e:
                failed = failed or e
        if failed is not None:
            raise failed


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


def _named(e: OSError, path: str, what: str) -> OSError:
    """``e`` as an ``OSError`` (same errno, so the same subclass) naming ``path``."""
    if e.errno is None:
        return OSError(f"{path}: {what}: {e}")
    return OSError(e.errno, f"{what}: {e.strerror or e}", path)


_TEMP = re.compile(r"\.(?P<base>.+)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")

# A temporary file of a live process is left alone even if its lock looks free (it is
# taken right after the exclusive create); past this age its process is presumed gone.
_TEMP_GRACE_S = 600.0


_NAME_MAX = 255
"""Longest file name, in bytes, of the file systems sessions live on (ext4, xfs, btrfs,
tmpfs, overlayfs)."""


def _temp_path(path: str) -> str:
    folder, base = os.path.split(path)
    tail = f".{os.getpid()}.{os.urandom(4).hex()}.tmp"
    # A name that fits may not fit with the temporary's dot and tail (ENAMETOOLONG for
    # an output or session named with 235 bytes or more): the name part is cut to fit;
    # the sweep reads only the pid and the tail.
    while len(os.fsencode(base)) > _NAME_MAX - 1 - len(tail):
        base = base[:-1]
    return os.path.join(folder, f".{base}{tail}")


# ------------------------------------------------------------- temporaries and signals
#
# A temporary file is removed by whoever made it when its work fails, by the signal
# handlers below when the user stops the process (SIGINT, SIGTERM, SIGHUP), and by the
# next writer in its folder (sweep_temps) when the process died without a chance to
# (SIGKILL, a power cut). Together: at most one leftover per folder, and only until the
# next write there.

_CLEANUP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
_live_temps: dict[str, None] = {}  # insertion-ordered set of this process's temporaries
_previous: dict[int, Any] = {}  # signal -> the handler ours replaced, while ours is installed
_temps_lock = threading.Lock()
_holds = 0  # open `held_handlers` blocks: the handlers stay while there are any


def _on_signal(signum: int, frame: Any) -> None:
    """Remove this process's temporaries, then do what the signal did before.

    A Python handler (SIGINT's ``KeyboardInterrupt``) is called: the exception unwinds
    through the writer, whose own cleanup removes its file. The default action
    (termination) is taken again after the temporaries are gone, so the process still
    ends by the signal (exit status -signum) as the user asked.
    """
    prev = _previous.get(signum, signal.SIG_DFL)
    if callable(prev):
        prev(signum, frame)
        return
    for tmp in list(_live_temps):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers; sweep_temps still catches leftovers
    for sig in _CLEANUP_SIGNALS:
        try:
            prev = signal.getsignal(sig)
            if prev in (signal.SIG_IGN, None) or prev is _on_signal:
                continue  # an ignored signal stops nothing (nohup): the file is still being written
            signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # pragma: no cover - an embedding without signals
            continue
        _previous[sig] = prev


def _restore_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, prev in list(_previous.items()):
        with contextlib.suppress(ValueError, OSError, TypeError):
            if signal.getsignal(sig) is _on_signal:  # never undo a handler someone set since
                signal.signal(sig, prev)
        del _previous[sig]


@contextlib.contextmanager
def held_handlers() -> Iterator[None]:
    """Keep the handlers that remove this process's temporaries installed for the
    ``with`` block, between files as while one is written: for a process that writes
    many files in turn (a worker of the Parquet export), where installing and restoring
    them around each file (six ``signal`` calls) was ~0.1 ms a file. A signal between
    files finds no temporary and does what it did before (the handler then calls the
    handler it replaced, or takes the default action again). Only the main thread sets
    handlers (elsewhere this holds nothing); blocks may nest."""
    global _holds
    with _temps_lock:
        if not _holds and not _live_temps:
            _install_handlers()
        _holds += 1
    try:
        yield
    finally:
        with _temps_lock:
            _holds -= 1
            if not _holds and not _live_temps:
                _restore_handlers()


def create_temp(path: str, mode: int = 0o666) -> tuple[int, str]:
    """Create the temporary file for ``path`` in its folder and hold it.

    The name is ``.<name>.<pid>.<8 hex>.tmp`` (``sweep_temps`` knows it), created
    exclusively with ``mode`` (minus the umask) and locked; dead processes' leftovers
    in the folder are swept first; it is removed if this process gets SIGINT, SIGTERM
    or SIGHUP until :func:`release_temp`.

    Returns:
        ``(fd, tmp)``: a write-only descriptor (``O_APPEND``) and the temporary path.

    Raises:
        OSError: it cannot be created (the folder is missing or not writable).
    """
    folder = os.path.dirname(path)
    sweep_temps(folder)
    tmp = _temp_path(path)
    with _temps_lock:  # known to the handlers before it exists: no moment it could be left
        if not _live_temps and not _holds:
            _install_handlers()
        _live_temps[tmp] = None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _O_CLOEXEC, mode)
    except BaseException:
        release_temp(tmp, remove=False)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # pragma: no cover - nobody else can know the name yet
        pass
    return fd, tmp


def release_temp(tmp: str, *, remove: bool) -> None:
    """``tmp`` is no longer this process's to clean up: it was renamed or linked into
    place (``remove=False``), or it is to be deleted now (``remove=True``)."""
    if remove:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    with _temps_lock:
        _live_temps.pop(tmp, None)
        if not _live_temps and not _holds:
            _restore_handlers()


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a dead writer's leftovers may be removed): it
    exists and is no zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # exists, owned by another user
    # A zombie has exited and holds no file; one whose parent died too may wait long to
    # be reaped (a container whose first process reaps nobody): a killed export's
    # workers were taken for alive, their temporary files kept past the next run.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return True  # no /proc (not Linux), or gone since: the next sweep decides
    return state not in ([b"Z"], [b"X"])


def sweep_temps(folder: str) -> list[str]:
    """Remove temporary files this module left in ``folder`` when their writer died.

    A temporary file (``.<name>.<pid>.<8 hex>.tmp``) is removed when nobody holds its
    lock and its process is gone (or it is older than ten minutes: a process id may be
    reused). Anything else, and every error, is left alone: sweeping never fails a write.

    Returns:
        The paths removed.
    """
    removed: list[str] = []
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return removed
    me = os.getpid()
    for name in names:
        m = _TEMP.fullmatch(name)
        if m is None:
            continue
        pid = int(m["pid"])
        p = os.path.join(folder, name)
        try:
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode):
                continue
            if pid == me or (process_alive(pid) and time.time() - st.st_mtime < _TEMP_GRACE_S):
                continue
            fd = os.open(p, os.O_RDONLY | _O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if file_id(os.fstat(fd)) == file_id(os.lstat(p)):
                os.unlink(p)
                removed.append(p)
        except OSError:
            pass  # locked by a live writer, or already gone
        finally:
            os.close(fd)
    return removed


_RENAME_NOREPLACE = 1
_renameat2: Callable[..., int] | None | bool = False  # False: not looked up yet


def _rename_noreplace(src: str, dst: str) -> bool:
    """``renameat2(src, dst, RENAME_NOREPLACE)``; False when the system has no such call.

    Raises:
        FileExistsError: ``dst`` exists.
        OSError: another failure.
    """
    global _renameat2
    import ctypes  # here: every import of the package would pay for it

    if _renameat2 is False:
        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = None
    if not _renameat2 or not callable(_renameat2):
        return False
    at_fdcwd = -100
    if _renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)


def _place(tmp: str, path: str) -> None:
    """Give the complete file ``tmp`` the name ``path`` without replacing anything,
    and drop the name ``tmp``.

    Raises:
        FileExistsError: ``path`` exists (``tmp`` is left for the caller to remove).
    """
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        pass  # no hard links here (some FUSE / network filesystems)
    else:
        os.unlink(tmp)
        return
    if _rename_noreplace(tmp, path):
        return
    # Last resort: claim the name with an empty placeholder of our own, then rename
    # over it. A crash in between leaves an empty file, never a partial session.
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o600))
    os.rename(tmp, path)


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


class Interleaved(Exception):
    """An append's line reached the file after bytes another process appended at the same
    time (an unlocked writer such as Pi's, between this writer's last look at the end and
    its write): it is in the file, whole, but not where the caller's index expects it."""


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
        self._unsynced: dict[int, SessionWriter] | None = None  # synced_once's, while it waits for us

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
        """Create the file with ``data`` (header + pending lines): written aside in the
        same folder, fsynced, then put at its name without replacing anything.

        Args:
            data: whole lines, each ended by LF.

        Raises:
            SessionFileExistsError: the path exists (it is not touched).
            OSError: the folder cannot be created or the file written (naming the
                path); nothing is left at the path, so a later create can succeed.
        """
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if os.path.lexists(self.path):
            raise SessionFileExistsError(f"{self.path}: refusing to overwrite an existing file")
        try:
            fd, tmp = create_temp(self.path, 0o644)
        except OSError as e:
            raise _named(e, self.path, "cannot create the session file") from e
        placed = False
        try:
            _write_all(fd, data)
            os.fsync(fd)
            _place(tmp, self.path)
            placed = True
        except FileExistsError:
            raise SessionFileExistsError(f"{self.path}: refusing to overwrite an existing file") from None
        except OSError as e:
            raise _named(e, self.path, "cannot create the session file") from e
        finally:
            if not placed:
                os.close(fd)
            release_temp(tmp, remove=not placed)
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
        sweep_temps(os.path.dirname(self.path))
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
        return size == 0 or self._read_at(size - 1, 1) == b"\n"

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
    def append(self, line: bytes, *, after_torn: bool = False) -> int:
        """Append one entry line (without LF) as one write of one whole line.

        Args:
            line: the entry's JSON text.
            after_torn: the file ends with a pending (torn) piece, as the caller's
                index says: it is sealed first (``_reader.line_prefix``).

        Returns:
            Bytes written (``len(line) + 1``, plus the prefix when the file did not end
            with LF).

        Raises:
            OSError: the write failed (naming the file). Part of the bytes may be in
                the file: the writer has re-read where the file ends, and the caller
                must index what is there before the next append.
        """
        assert self._fd is not None, "writer is not open"
        data = line_prefix(after_torn and not self._ends_lf, not self._ends_lf) + line + b"\n"
        start = self.size
        try:
            _write_all(self._fd, data)
            if self._fsync:
                pending = getattr(_ONCE, "pending", None)
                if pending is None:
                    os.fsync(self._fd)
                else:
                    pending[id(self)] = self
                    self._unsynced = pending
        except OSError as e:
            self._reread_end()
            raise _named(e, self.path, "cannot append to the session file") from e
        except BaseException:
            self._reread_end()
            raise
        # O_APPEND puts the bytes at the file's end, which an unlocked writer (Pi) may
        # have moved since this writer last looked: then they are not at `start`.
        end = os.fstat(self._fd).st_size
        if end != start + len(data) and not self._holds(start, data):
            self.size = end
            self._ends_lf = self._last_byte_is_lf(end)
            raise Interleaved(f"{self.path}: another process appended at the same time")
        self.size = start + len(data)
        self._ends_lf = True
        return len(data)

    @property
    def ends_lf(self) -> bool:
        """Whether the file ends with LF (or is empty), as this writer last saw it."""
        return self._ends_lf

    def _holds(self, offset: int, data: bytes) -> bool:
        return self._read_at(offset, len(data)) == data

    def _read_at(self, offset: int, n: int) -> bytes:
        with open(self.path, "rb") as f:  # the write-only fd cannot pread
            f.seek(offset)
            return f.read(n)

    def _reread_end(self) -> None:
        """Part of a line may be on disk: find out before the next append."""
        assert self._fd is not None
        try:
            st = os.fstat(self._fd)
            self.size = st.st_size
            self._ends_lf = self._last_byte_is_lf(st.st_size)
        except OSError:
            self._ends_lf = False  # unknown: the next append starts a fresh line

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
        # A symbolic link's target is the session (an append writes there): it is
        # migrated, its backup beside it, and the link stays (adversary 60: the link was
        # replaced by the new file and kept as the "backup", the target left behind).
        target = os.path.realpath(self.path)
        folder = os.path.dirname(target) or "."
        old_fd = os.open(self.path, os.O_RDONLY | _O_CLOEXEC)
        tmp = None
        new_fd = None
        try:
            _lock(old_fd, self.path)
            st = verify(old_fd)
            # Created private, then given the original's mode: the rewrite must not make
            # a 0600 session readable by others.
            new_fd, tmp = create_temp(target, 0o600)
            os.fchmod(new_fd, stat.S_IMODE(st.st_mode))
            _write_all(new_fd, data)
            os.fsync(new_fd)
            was = file_id(st)
            _still(target, was, self.path)
            backup = _keep_original(target, backup_suffix)
            try:
                # Another file renamed over the session while the image was written (a
                # restore, another tool): it is not ours to replace, nor to keep as the
                # backup (adversary 60b: the new image replaced it, kept as the ".bak").
                _still(target, was, self.path)
            except StaleSessionError:
                os.unlink(backup)
                raise
            os.rename(tmp, target)
            release_temp(tmp, remove=False)
            tmp = None
            _fsync_dir(folder)
        except BaseException as e:
            if new_fd is not None:
                os.close(new_fd)
            if tmp is not None:
                release_temp(tmp, remove=True)
            # Named by the session, not by the temporary file (its creation fails in a
            # read-only folder): a write's error names the session file.
            if isinstance(e, OSError) and not isinstance(e, SessionFileExistsError):
                # Through a link, the folder written is the target's: say which.
                elsewhere = os.path.dirname(target) != os.path.dirname(os.path.abspath(self.path))
                what = "cannot write the migrated session file" + (f" {target}" if elsewhere else "")
                raise _named(e, self.path, what) from e
            raise
        finally:
            os.close(old_fd)  # releases the original's lock; it now lives only as the backup
        self._fd = new_fd
        self.size = len(data)
        self._ends_lf = not data or data.endswith(b"\n")
        return backup

    def _sync_pending(self) -> None:
        """The fsync :func:`synced_once` left for this writer's appends, if any.

        Raises:
            OSError: it failed (naming the file).
        """
        pending, self._unsynced = self._unsynced, None
        if pending is None:
            return
        pending.pop(id(self), None)
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise _named(e, self.path, "cannot write the session file to disk") from e

    def close(self) -> None:
        """Release the lock and the descriptor (idempotent), after the fsync its appends
        wait for within :func:`synced_once`.

        Raises:
            OSError: that fsync failed (the lock and the descriptor are released).
        """
        if self._fd is not None:
            try:
                self._sync_pending()
            finally:
                fd, self._fd = self._fd, None
                os.close(fd)

    def __del__(self) -> None:
        # A manager dropped without close(): its lock must not outlive it (nothing can
        # call close() on a collected object).
        if getattr(self, "_fd", None) is not None:
            self.close()


def require_regular_file(path: str) -> None:
    """Refuse what is not a regular file before opening it.

    Opening a FIFO for reading blocks until a writer appears, and a device can be
    endless: a session path must be a plain file.

    Raises:
        InvalidSessionError: ``path`` exists and is not a regular file; its reason names
            what it is (``a FIFO, not a regular file``). The CLI puts ``not a session:``
            before it, so the reason does not say that again (it said "not a regular
            file: not a session file" after it).
        OSError: it cannot be examined (``FileNotFoundError`` if absent).
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise InvalidSessionError(f"{file_kind(mode)}, not a regular file", path)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: ``a regular file``,
    ``a directory``, ``a FIFO``, ``a character device``, ``a block device``,
    ``a socket``, ``a symbolic link`` (from ``lstat``), else ``a special file``."""
    kinds = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def _keep_original(path: str, suffix: str) -> str:
    """Keep the file at ``path`` as ``path + suffix`` (``.1``, ``.2``… appended while one
    exists): a hard link, else a copy; the backup's path."""
    backup = path + suffix
    n = 0
    while True:
        try:
            os.link(path, backup)
            return backup
        except FileExistsError:
            n += 1
            backup = f"{path}{suffix}.{n}"
        except OSError:
            break  # no hard links here: copy instead
    while os.path.exists(backup):
        n += 1
        backup = f"{path}{suffix}.{n}"
    with open(path, "rb") as src, open(backup, "xb") as dst:
        shutil.copyfileobj(src, dst)
        dst.flush()
        os.fsync(dst.fileno())
    return backup


def _still(path: str, was: FileId, named: str) -> None:
    """Fail unless ``path`` is still the file ``was`` (device, inode) names.

    Raises:
        StaleSessionError: another file (or none) is at ``path``, named as ``named``.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StaleSessionError(f"{named}: session file was removed while it was migrated; reopen it") from None
    if file_id(st) != was:
        raise StaleSessionError(f"{named}: session file was replaced while it was migrated; reopen it")
