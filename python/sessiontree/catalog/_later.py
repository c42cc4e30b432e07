"""The catalog and search index of a scope, built after a search's answer in a process of
its own (CONTRACT §7): the first search reads the files and answers; what the next one
reads is built behind it, never before it.

:func:`index_later` hands the scope to a new process, in a session of its own (a closed
terminal does not stop it) and at a lower priority, which runs :func:`catalog.index`
over it, as ``sessiontree index`` would, and exits. One such process at a time per
catalog: the caller takes an exclusive ``flock`` on ``<catalog>.later`` (by the
catalog's real path, as ``_location.resolve`` gives it) and the child inherits it (the lock
belongs to the open file, which the child holds until it exits); a start while one
runs does nothing. The child runs only sessiontree's code (not the caller's working
folder's: it leaves the ``''`` entry off ``sys.path``), takes its folders from its
standard input (any number of them), waits for another indexer as ``index`` does (30
s at most), and writes into the lock file why it failed, or that it found
nothing to build (the files the search read without the index are no sessions, or
changed back): then no build starts for :data:`RETRY_SECONDS` (a full disk is not
filled again by every search, nor a process started by every search for nothing). A
build that found nothing to do pauses only searches that would ask it again: the same
scope with as many files unread by the index; a new session, or another scope, starts
one. Nothing else the child meets is said anywhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["LOCK_SUFFIX", "RETRY_SECONDS", "index_later"]

LOCK_SUFFIX = ".later"
"""Added to the catalog's real path: the file whose lock says an index is being built."""

RETRY_SECONDS = 600.0
"""How long after a failed build, or one that found nothing to build, no other starts."""

# The child's program: its priority lowered and the working folder off sys.path before
# anything is imported (``-c`` puts ``''`` first; ``-P``/``-I`` are not in every Python
# this package supports, and ``-I`` would drop a user's site-packages too).
_CHILD = (
    "import os, sys\n"
    "try:\n    os.nice(10)\nexcept OSError:\n    pass\n"
    "if sys.path[:1] == ['']:\n    del sys.path[0]\n"
    "from sessiontree.catalog._later import _main\n"
    "_main()\n"
)


def index_later(folders: Sequence[str], catalog: str | os.PathLike[str] | None = None, *,
                unindexed: int | None = None) -> bool:
    """Start building the catalog and search index of ``folders`` in a process of its own.

    Args:
        folders: session folders (each without its subfolders) or session files, as
            :func:`sessiontree.catalog.index` takes them.
        catalog: the catalog file (``None``: the default place).
        unindexed: how many of their files the search index does not hold as they are
            (``search_stream``'s ``on_unindexed``): a build that found nothing to do
            holds back only a start with the same folders and number (``None``: any).

    Returns:
        Whether a process was started: false when the catalog is turned off, its path
        is inside Pi's folders (no catalog may live there) or its place holds no
        regular file, the lock file cannot be made or is no regular
        file, another such process holds the lock, or one failed or found nothing to
        build for the same question less than :data:`RETRY_SECONDS` ago.
    """
    import fcntl
    import stat
    import subprocess
    import threading
    import time

    from ._location import resolve

    try:
        path = resolve(catalog)
    except ValueError:
        return False  # the command that asked said so already, or reads the files
    if path is None or not folders:
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a FIFO or folder in the catalog's place: no build can use it
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # No symlink followed, no FIFO waited on: the lock file is ours or not used.
        fd = os.open(path + LOCK_SUFFIX,
                     os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # one is being built
        ask = _question(folders, unindexed)
        if st.st_size and 0.0 <= time.time() - st.st_mtime < RETRY_SECONDS:
            said = os.pread(fd, 4096, 0)
            if not (said.startswith(_NOTHING) and ask and said != _nothing(ask)):
                return False  # the last one failed or had nothing to do: not again so soon
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, path, ask], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                pass_fds=(fd,), env={**os.environ, "SESSIONTREE_LATER_FD": str(fd)})
        # Reaped when it ends (a long-lived caller such as the picker keeps no zombie).
        threading.Thread(target=proc.wait, name="index-later-reaper", daemon=True).start()
        assert proc.stdin is not None
        try:
            proc.stdin.write(b"\0".join(os.fsencode(os.path.abspath(f)) for f in folders))
            proc.stdin.close()
        except OSError:
            pass  # it died at its start: nothing was built, as after any failure
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # the child's copy keeps the lock


_NOTHING = b"nothing to build"


def _question(folders: Sequence[str], unindexed: int | None) -> str:
    """What a start asks, as a build that found nothing to do writes it after
    :data:`_NOTHING`: the number of files unread by the index and a digest of the
    folders (``""``: not known, any start is the same)."""
    if unindexed is None:
        return ""
    import hashlib

    folders_key = b"\0".join(sorted(os.fsencode(os.path.abspath(f)) for f in folders))
    return f"{unindexed} {hashlib.blake2b(folders_key, digest_size=8).hexdigest()}"


def _nothing(question: str) -> bytes:
    return _NOTHING + (f" ({question})" if question else "").encode() + b"\n"


def _main() -> None:
    """The child: the catalog's path in ``argv[1]``, what it was asked (:func:`_question`)
    in ``argv[2]``, the folders NUL-separated on standard input, the lock file's
    descriptor in ``$SESSIONTREE_LATER_FD``."""
    from . import index

    fd = int(os.environ.pop("SESSIONTREE_LATER_FD"))
    catalog, question = sys.argv[1], sys.argv[2]
    folders = [os.fsdecode(f) for f in sys.stdin.buffer.read().split(b"\0") if f]
    try:
        # Another indexer holding the search index's lock is waited for as `index`
        # waits (30 s), then this build fails and says so.
        done = index(folders, catalog=catalog)
        os.ftruncate(fd, 0)
        if not done.read and not done.indexed:
            os.write(fd, _nothing(question))
    except BaseException as e:  # noqa: BLE001 - said in the lock file, read by the next start
        with open(fd, "w", closefd=False) as f:
            f.truncate(0)
            f.write(f"failed: {type(e).__name__}: {e}\n")
        raise
