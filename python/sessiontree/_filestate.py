"""File identity and staleness: is the session file still the one we indexed?

One home for the rule, used by the manager once per public call (both backends alike;
the native one answers the early return, "nothing changed since the last check", in one
call to the core: :class:`StatUnchanged`) and by the writer before it appends:

* **Identity** — ``(st_dev, st_ino)``. Another inode at the path means the file was
  replaced (``StaleSessionError``); a missing path means it is gone.
* **Truncation** — a file shorter than the indexed image was cut short.
* **Rewrite in place** — same inode, not shorter: caught by the ends of the indexed
  bytes (the first and last :data:`FINGERPRINT` bytes must be what was read), checked
  whenever size or mtime changed since the last check. oh-my-pi's title slot, which it
  rewrites in place by design, is left out of that comparison (:func:`same_ends`).

Size and mtime alone never decide that a file was rewritten: a ``write`` updates the
mtime before the new size is visible (and the size grows page by page), so a reader
can see "mtime changed, size did not" in the middle of a plain append. Whatever order
the two become visible in, an append leaves the indexed bytes as they were, and that
is what is checked. A rewrite in the middle that keeps both ends is caught, for the
native backend, line by line: every line it reads must hash to what it indexed
(``src/index/read.rs``, ``read_line``); the python backend answers from what it read.

The first baseline is what the index read, not the file when first checked
(``FileWatch(ends=...)``, from ``TreeIndex.read_ends``): a rewrite between the read and
the first check is caught like any later one. After this process wrote the file (a
create, a migration rewrite, an append) the baseline is likewise what it wrote
(:meth:`FileWatch.wrote`, :meth:`FileWatch.appended`), never the file as the next check
finds it.

Not caught at the file level: a rewrite that keeps the bytes at both ends.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys
import stat

from .errors import StaleSessionError

# Not ``typing`` at run time: ~3 ms of the first report after an append, whose refresh
# reads its files' marks through here (docs/BENCHMARKS.md, issue 25). The protocol
# below is one for type checkers and a plain class to the interpreter.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Callable, NamedTuple, Protocol
else:
    from ._tuples import NamedTuple

    Protocol = object

__all__ = ["FileId", "FileWatch", "FINGERPRINT", "InodeMarks", "StatUnchanged", "ends_and_marks", "file_id", "indexed_ends",
           "inode_marks", "same_ends", "stat_id"]

FINGERPRINT = 4096
"""Bytes at each end of the indexed image that must stay as they were read."""


class FileId(NamedTuple):
    """A file's identity: device and inode (a tuple: made and compared in C on every
    public call, where a frozen dataclass cost a microsecond)."""

    dev: int
    ino: int


def file_id(st: os.stat_result) -> FileId:
    """The :class:`FileId` of a ``stat`` result."""
    return FileId(st.st_dev, st.st_ino)


def stat_id(path: str) -> FileId | None:
    """The :class:`FileId` of ``path``, or ``None`` if it cannot be stat'ed."""
    try:
        return file_id(os.stat(path))
    except OSError:
        return None


def open_regular(path: str) -> BinaryIO:
    """Open ``path`` for reading if it is a regular file, checked on the open file: a
    FIFO put in its place after a ``stat`` cannot block the open (``O_NONBLOCK``) and a
    device is not read without end.

    Raises:
        OSError: it cannot be opened, or is not a regular file (``IsADirectoryError``
            for a folder, as ``open`` raises).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise OSError(f"not a regular file: {path}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_FS_IOC_GETVERSION = 0x80087601  # _IOR('v', 1, long); the kernel writes an int


class InodeMarks(NamedTuple):
    """What tells a file from another that got its inode number when it was freed: the
    inode's generation (``FS_IOC_GETVERSION``: ext4, XFS, Btrfs) and the file's birth
    time in ns (``statx``'s btime: ext4, XFS, Btrfs, tmpfs, and overlayfs from its
    upper layer), each 0 where the file system keeps none.

    ext4 hands a freed inode number out again at once, and overlayfs (Docker's root
    file system) gives a file replaced by rename the number of the one before, with
    no generation: a file replaced twice (``sed -i``) can be back on its old inode,
    grown, with both ends as they were. Its marks are new. ``src/source.rs``
    (``generation``, ``birth_ns``) reads the same numbers; the birth time comes from
    the extension (``_sessiontree.birth_ns``: Python's ``os.stat`` has no btime on
    Linux), and is 0 without it. Where both are 0 (NFS, 9p without btime; or no
    extension on overlayfs) only the ends tell a replacement (CONTRACT.md §6)."""

    generation: int
    birth_ns: int


def inode_marks(path: str) -> InodeMarks:
    """The :class:`InodeMarks` of the file at ``path``, 0s when it cannot be read."""
    try:
        with open_regular(path) as f:
            return _marks_of(f)
    except OSError:
        return InodeMarks(0, 0)


_birth_ns: Callable[[int], int] | None = None


def _marks_of(f: BinaryIO) -> InodeMarks:
    global _birth_ns
    try:
        got = fcntl.ioctl(f.fileno(), _FS_IOC_GETVERSION, bytes(8))
        gen = int.from_bytes(got[:4], sys.byteorder)
    except OSError:
        gen = 0
    if _birth_ns is None:
        # Whichever backend is chosen: a fact of the file, not an answer
        # (_select.extension, which imports what imports this module).
        try:
            from ._sessiontree import birth_ns
        except ImportError:
            birth_ns = lambda fd: 0  # noqa: E731
        _birth_ns = birth_ns
    return InodeMarks(gen, _birth_ns(f.fileno()))


def indexed_ends(path: str, length: int) -> bytes:
    """The first and last :data:`FINGERPRINT` bytes of the file's first ``length``
    bytes (the indexed image): what must not change while the file only grows.

    Raises:
        OSError: it cannot be read, or is not a regular file.
    """
    with open_regular(path) as f:
        return _ends_of(f, length)


def ends_and_marks(path: str, length: int) -> tuple[bytes, InodeMarks]:
    """:func:`indexed_ends` and :func:`inode_marks` of the one file opened once.

    Raises:
        OSError: it cannot be read, or is not a regular file.
    """
    with open_regular(path) as f:
        return _ends_of(f, length), _marks_of(f)


def _ends_of_image(image: bytes) -> bytes:
    """:func:`indexed_ends` of a file holding ``image``, from the bytes in memory."""
    return image[:FINGERPRINT] + image[max(0, len(image) - FINGERPRINT) :]


def _ends_of(f: BinaryIO, length: int) -> bytes:
    head = f.read(min(FINGERPRINT, length))
    f.seek(max(0, length - FINGERPRINT))
    return head + f.read(min(FINGERPRINT, length))


_TITLE_SLOT = b'{"type":"title"'


def _without_title_slot(n: int, ends: bytes) -> bytes:
    """``ends`` (:func:`indexed_ends` of ``n`` bytes) with the bytes of oh-my-pi's title
    slot, at either end, zeroed; its line feed stays where it is."""
    head_len = min(FINGERPRINT, n)
    nl = ends.find(b"\n", 0, head_len) if ends.startswith(_TITLE_SLOT) else -1
    if nl < 0:
        return ends
    buf = bytearray(ends)
    buf[:nl] = bytes(nl)
    t0 = max(0, n - FINGERPRINT)  # where the last FINGERPRINT bytes start
    if t0 < nl:
        buf[head_len : head_len + nl - t0] = bytes(nl - t0)
    return bytes(buf)


def same_ends(n: int, now: bytes, then: bytes) -> bool:
    """Whether two readings of the ends of the first ``n`` bytes (:func:`indexed_ends`)
    show the same file, oh-my-pi's title slot aside.

    oh-my-pi rewrites the fixed-size title slot that starts its files (the line before
    the header, ``_reader.is_title_slot``) in place whenever the title changes, while
    the session is open and appended to (its session-format documentation): a new
    title of the same slot length is not a rewrite of the session. A slot of another
    length, or a first line that stops or starts being a slot, still is.
    """
    return now == then or _without_title_slot(n, now) == _without_title_slot(n, then)


class StatUnchanged(Protocol):
    """A backend's early return for :meth:`FileWatch.check`, in one call: ``True`` iff
    ``stat`` of ``path`` (``os.fsencode`` bytes) shows exactly this device, inode, size
    and ``st_mtime_ns``; anything else (a change, an error) is ``False``. The native
    backend's is ``_sessiontree.stat_unchanged`` (``src/stat.rs``)."""

    def __call__(self, path: bytes, dev: int, ino: int, size: int, mtime_ns: int, /) -> bool: ...


class FileWatch:
    """The session file as it was indexed: its identity and the bytes that must not change.

    Args:
        path: the session file.
        ident: its identity when it was read (``None``: take it at the first check).
        ends: ``(n, the first and last FINGERPRINT bytes of n)`` as the index read them
            (``TreeIndex.read_ends``): the first check holds the file to them, so a
            rewrite between the read and that check is seen. ``None``: the first check
            takes them from the file.
    """

    def __init__(self, path: str, ident: FileId | None, ends: tuple[int, bytes] | None = None) -> None:
        self.path = path
        self.ident = ident
        self._seen: tuple[int, int] | None = None  # (size, mtime_ns) last verified
        # The arguments of a StatUnchanged for what was last verified.
        self._verified: tuple[bytes, int, int, int, int] | None = None
        self._fingerprint: tuple[int, bytes] | None = ends  # (image length, its ends)

    def _stale(self, why: str) -> StaleSessionError:
        return StaleSessionError(f"{self.path}: session file {why}; reopen it")

    def wrote(self, ident: FileId, image: bytes) -> None:
        """Start over after this process wrote the whole file (a create, a migration
        rewrite): the baseline is ``image``, the bytes written, not the file as the next
        :meth:`check` finds it, so a rewrite made before that check is seen."""
        self.ident = ident
        self._seen = self._verified = None
        self._fingerprint = (len(image), _ends_of_image(image))

    def appended(self, offset: int, data: bytes) -> None:
        """This process wrote ``data`` at ``offset`` (one append): where that is the end
        of the baseline, the baseline takes it in, so a rewrite of those bytes made
        before the next :meth:`check` is seen; else that check reads them from the file."""
        fp = self._fingerprint
        if fp is None or fp[0] != offset:
            return
        n, ends = fp
        head, tail = ends[: min(FINGERPRINT, n)], ends[min(FINGERPRINT, n) :]  # tail: the last bytes
        self._fingerprint = (n + len(data), (head + data)[:FINGERPRINT] + (tail + data)[-FINGERPRINT:])

    def check_identity(self) -> os.stat_result:
        """Fail unless ``path`` is still the file that was read.

        Raises:
            StaleSessionError: the file is gone or another file is at the path.
        """
        try:
            st = os.stat(self.path)
        except OSError:
            raise self._stale("is gone") from None
        if self.ident is None:
            self.ident = file_id(st)
        elif (st.st_dev, st.st_ino) != self.ident:
            raise self._stale("was replaced")
        return st

    def check(self, image_len: int, unchanged: StatUnchanged | None = None) -> None:
        """Fail unless the file still holds the indexed image unchanged.

        Args:
            image_len: bytes of the file that are indexed (complete lines).
            unchanged: the backend's one-call form of the early return below (the same
                decision: identity, size and mtime as last verified, and that size
                holds the image), or ``None`` to take it here from ``os.stat``.

        Raises:
            StaleSessionError: gone, replaced, truncated or rewritten in place.
        """
        verified = self._verified
        if unchanged is not None and verified is not None and image_len <= verified[3] and unchanged(*verified):
            return
        st = self.check_identity()
        size, mtime = st.st_size, st.st_mtime_ns
        if size < image_len:
            raise self._stale("was truncated")
        if (size, mtime) == self._seen:
            return
        try:
            fp = self._fingerprint
            if fp is not None and not same_ends(fp[0], indexed_ends(self.path, fp[0]), fp[1]):
                raise self._stale("was rewritten in place")
            if self._fingerprint is None or self._fingerprint[0] != image_len:
                self._fingerprint = (image_len, indexed_ends(self.path, image_len))
        except OSError as e:
            raise self._stale(f"cannot be read ({e.strerror or e})") from None
        self._seen = (size, mtime)
        self._verified = (os.fsencode(self.path), st.st_dev, st.st_ino, size, mtime)

    def check_fd(self, fd: int, image_len: int, *, exact: bool = False) -> os.stat_result:
        """Fail unless the open descriptor ``fd`` (the writer's) is the indexed file and
        holds at least ``image_len`` bytes (exactly that many with ``exact``: a file about
        to be replaced by its migration must not have changed at all).

        Raises:
            StaleSessionError: another file, a shorter one, or (``exact``) one that changed.
        """
        st = os.fstat(fd)
        if self.ident is not None and file_id(st) != self.ident:
            raise self._stale("was replaced")
        if exact and st.st_size != image_len:
            raise self._stale("changed before its migration was written")
        if st.st_size < image_len:
            raise self._stale("was truncated")
        return st
