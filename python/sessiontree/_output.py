"""Where a command's output goes: the one rule for every command that writes a file
(``export`` HTML / Markdown / Parquet, ``generate``; session files themselves are made
by ``_storage.SessionWriter``, which never replaces anything).

* ``-`` is standard output.
* An existing target that is not a regular file (a FIFO, a character device such as
  ``/dev/null``, a socket's path, ``/dev/stdout`` whatever it leads to) is written as a
  stream: opened for writing, without ``O_CREAT`` or ``O_TRUNC``, never unlinked or
  renamed over. So is a regular file that is this process's standard output or error
  (``--out /dev/stdout`` with stdout redirected to a file). A caller that writes no
  stream (the Parquet dataset's files) asks for such a target to be refused instead
  (``streams=False``), never opened.
* A symbolic link is followed: what it leads to is the target (the link stays).
* A regular file, or nothing, is replaced whole: the bytes go to a temporary file in
  the target's folder (``_storage.create_temp``: ``.<name>.<pid>.<8 hex>.tmp``, locked,
  removed on SIGINT / SIGTERM / SIGHUP, swept by the next run after a SIGKILL), which is
  renamed over the target once complete; a failure leaves the target as it was. A
  replaced file keeps its permission bits; a new one gets ``0666`` minus the umask.
  With ``replace=False`` an existing target of any kind is refused and the finished
  file is linked into place without replacing anything made meanwhile.

A directory is refused (``IsADirectoryError``), as is a target whose folder is missing
(``FileNotFoundError``).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

from ._storage import _place, create_temp, file_kind, release_temp

__all__ = ["Output", "open_output"]

_BUFFER = 1 << 20
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class _Fd(io.RawIOBase):
    """A write-only descriptor that counts what went through it (``tell`` is that count:
    a FIFO cannot seek, and pyarrow's writer asks)."""

    def __init__(self, fd: int, *, close: bool) -> None:
        super().__init__()
        self.fd = fd
        self.count = 0
        self._close = close

    def writable(self) -> bool:
        return True

    def write(self, b: ReadableBuffer, /) -> int:
        n = os.write(self.fd, b)
        self.count += n
        return n

    def tell(self) -> int:
        return self.count

    def close(self) -> None:
        if not self.closed and self._close:
            os.close(self.fd)
        super().close()


class Output:
    """An open output (from :func:`open_output`).

    Attributes:
        file: where to write (binary, buffered; ``tell()`` is the bytes written so far).
        path: the file the bytes end up in (after symbolic links), or ``"-"``.
        streamed: the bytes go straight to the target (standard output, a FIFO, a
            device), not through a temporary file.
    """

    def __init__(self, file: BinaryIO, path: str, streamed: bool, raw: _Fd) -> None:
        self.file = file
        self.path = path
        self.streamed = streamed
        self._raw = raw

    @property
    def bytes_written(self) -> int:
        """Bytes handed to the target so far, counting what is still buffered."""
        try:
            return self.file.tell()
        except ValueError:  # closed: all of it went through
            return self._raw.count


def _is_std_stream(st: os.stat_result) -> int | None:
    for fd in (1, 2):
        try:
            o = os.fstat(fd)
        except OSError:
            continue
        if (o.st_dev, o.st_ino) == (st.st_dev, st.st_ino):
            return fd
    return None


def _stream(fd: int, path: str, *, close: bool) -> Iterator[Output]:
    raw = _Fd(fd, close=close)
    f = io.BufferedWriter(raw, _BUFFER)
    try:
        yield Output(f, path, True, raw)  # type: ignore[arg-type]
        f.flush()
    finally:
        if close:
            with contextlib.suppress(OSError):
                f.close()
        else:
            raw._close = False
            with contextlib.suppress(OSError, ValueError):
                f.flush()


@contextlib.contextmanager
def open_output(target: str | os.PathLike[str], *, replace: bool = True, streams: bool = True) -> Iterator[Output]:
    """Open ``target`` for a command's output (the rules: module docstring).

    Leaving the ``with`` block normally puts the bytes in place; an exception (a
    ``KeyboardInterrupt`` included) leaves the target as it was and no temporary file.

    Args:
        target: a path, or ``"-"`` for standard output.
        replace: replace an existing regular file (default); when false any existing
            target raises ``FileExistsError``.
        streams: write an existing FIFO, device or socket as a stream (default); when
            false one is refused, never opened (a Parquet dataset's file is no stream:
            opened for writing, a FIFO with no reader blocks). Judged on the same
            ``stat`` that picks the way of writing, so nothing put there before it is
            opened.

    Yields:
        The :class:`Output`.

    Raises:
        FileExistsError: ``replace`` is false and the target exists (also when it
            appears while the output is written).
        IsADirectoryError: the target is a folder.
        OSError: ``EINVAL``, ``streams`` is false and the target is neither a regular
            file nor a folder (its kind named: ``_storage.file_kind``).
        FileNotFoundError: the target's folder does not exist.
        OSError: it cannot be written.
    """
    path = os.fspath(target)
    if path == "-":
        sys.stdout.flush()
        yield from _stream(sys.stdout.fileno(), "-", close=False)  # type: ignore[misc]
        return
    if not replace and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "already exists", path)
    try:
        st: os.stat_result | None = os.stat(path)  # follows symbolic links
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    if st is not None and not streams and not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"{file_kind(st.st_mode)}, not a regular file, in the output's place", path)
    if st is not None and (not stat.S_ISREG(st.st_mode) or _is_std_stream(st) is not None):
        std = _is_std_stream(st)
        if std is not None:
            (sys.stdout if std == 1 else sys.stderr).flush()
            yield from _stream(std, path, close=False)  # type: ignore[misc]
            return
        # No O_CREAT: if the FIFO or device is gone by now, nothing is made in its place.
        fd = os.open(path, os.O_WRONLY | _O_CLOEXEC)
        yield from _stream(fd, path, close=True)  # type: ignore[misc]
        return
    real = os.path.realpath(path) if os.path.islink(path) or st is not None else os.path.abspath(path)
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, "no such folder", folder)
    try:
        fd, tmp = create_temp(real)
    except OSError as e:
        # The temporary file is ours, not a name the caller gave: say which output failed.
        raise OSError(e.errno, e.strerror or str(e), path) from e
    raw = _Fd(fd, close=True)
    f = io.BufferedWriter(raw, _BUFFER)
    done = False
    try:
        if st is not None:
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
        yield Output(f, real, False, raw)  # type: ignore[arg-type]
        f.close()
        if replace:
            now = _lstat(real)
            if now is not None and not stat.S_ISREG(now.st_mode):
                # Something else was put there while we wrote: it is not ours to replace.
                raise FileExistsError(errno.EEXIST, "is no longer a regular file", path)
            os.rename(tmp, real)
        else:
            _place(tmp, real)  # a hard link: refuses anything made there meanwhile
        done = True
    finally:
        if not f.closed:
            with contextlib.suppress(OSError):
                f.close()
        release_temp(tmp, remove=not done)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
