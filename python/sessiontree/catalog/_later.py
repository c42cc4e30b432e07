"""The catalog and search index of a scope, built after a search's answer in a process of
its own (CONTRACT §7): the first search reads the files and answers; what the next one
reads is built behind it, never before it.

`index_later` hands the scope to a new process, in a session of its own (a closed
terminal does not stop it) and at a lower priority, which runs :func:`catalog.index`
over it, as ``sessiontree index`` would, and exits. One such process at a time per
catalog: the caller takes an exclusive ``flock`` on ``<catalog>.later`` and the child
inherits it (the lock belongs to the open file, which the child holds until it
exits); a start while one runs does nothing. Nothing the child meets is said
anywhere: a catalog that cannot be used leaves the next search reading the files, as
it does now.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    import subprocess

__all__ = ["LOCK_SUFFIX", "index_later"]

LOCK_SUFFIX = ".later"
"""Added to the catalog's path: the file whose lock says an index is being built."""

_started: list[subprocess.Popen[bytes]] = []
"""The children this process started that may still run: polled at each start (so a
long-lived caller, such as the picker, leaves no zombie), and never dropped while
running (which Python reports as a ResourceWarning)."""


def index_later(folders: Sequence[str], catalog: str | os.PathLike[str] | None = None) -> bool:
    """Start building the catalog and search index of ``folders`` in a process of its own.

    Args:
        folders: session folders (each without its subfolders) or session files, as
            :func:`sessiontree.catalog.index` takes them.
        catalog: the catalog file (``None``: the default place).

    Returns:
        Whether a process was started: false when the catalog is turned off, its
        folder or lock file cannot be made, or another such process holds the lock.

    Raises:
        ValueError: the catalog path is inside Pi's folders.
    """
    import fcntl
    import stat
    import subprocess

    from ._location import resolve

    path = resolve(catalog)
    if path is None or not folders:
        return False
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # No symlink followed, no FIFO waited on: the lock file is ours or not used.
        fd = os.open(path + LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # one is being built
        _started[:] = [p for p in _started if p.poll() is None]
        _started.append(subprocess.Popen(
            [sys.executable, "-m", __name__, path, *(os.path.abspath(f) for f in folders)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, pass_fds=(fd,)))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # the child's copy keeps the lock


def _main(argv: list[str]) -> None:
    """The child: ``CATALOG FOLDER...``."""
    import contextlib

    with contextlib.suppress(OSError):
        os.nice(10)
    from . import index

    index(argv[1:], catalog=argv[0])


if __name__ == "__main__":
    _main(sys.argv[1:])
