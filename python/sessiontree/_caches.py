"""Where sessiontree keeps what it learned about session files: one folder,
``$XDG_CACHE_HOME/sessiontree/`` (an absolute ``XDG_CACHE_HOME``, as the XDG spec
says), else ``~/.cache/sessiontree/``, never inside Pi's folders. The catalog
(``catalog/_location.py``) is ``catalog.sqlite3`` there; the native backend's persisted
indexes (``src/persist/``) are the folder ``index/`` there.

Both know a file by the same facts: its device, inode, size, mtime and ctime, and the
first and last ``_filestate.FINGERPRINT`` bytes of what was read (``indexed_ends``).

The persisted indexes (what an open of a session learned, so that the next open in any
process reads that and scans only the bytes the file gained since):

* ``SESSIONTREE_INDEX``: unset, the folder above; ``off`` (or ``0``, ``no``, ``none``,
  ``false``, empty) turns them off; any other value is the folder to use.
* ``SESSIONTREE_INDEX_BYTES``: the cache's size budget (default :data:`INDEX_BUDGET`),
  a size as ``SESSIONTREE_CACHE_BYTES`` takes one (``512MiB``, ``0``, bytes:
  ``_sizes.size_from_env``); past it the least recently used indexes are removed. In
  the default layout the budget is the whole folder's: its other files (the catalog,
  its search segments, the demo's session: :func:`other_bytes`) count first, and the
  indexes keep to what they leave. Those are not evicted: the catalog is what a warm
  search and usage read, ~6% of the sessions it describes (docs/BENCHMARKS.md).

A folder that cannot be created or written is not an error: sessions are scanned.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

from ._places import default_session_root
from ._sizes import size_from_env

__all__ = ["INDEX_BUDGET", "INDEX_ENV", "INDEX_MIN_BYTES", "INDEX_SETTLE", "OFF",
           "beside_session", "cache_folder", "held_index_cache", "index_cache", "index_cache_for", "inside_pi_folder", "other_bytes", "pi_folders"]

OFF = frozenset({"", "0", "off", "none", "no", "false"})
"""Values of a cache's variable that turn it off."""

INDEX_ENV = "SESSIONTREE_INDEX"
"""Moves the persisted indexes (a folder), or turns them off."""

INDEX_BYTES_ENV = "SESSIONTREE_INDEX_BYTES"

INDEX_BUDGET = 1 << 30
"""Bytes the persisted indexes may take by default (an index costs ~28 bytes per entry:
1 GiB holds those of ~35 million entries)."""

INDEX_MIN_BYTES = 1 << 20
"""Session files shorter than this are not persisted: their scan takes about as long as
reading an index (about a millisecond)."""

INDEX_SETTLE = 2.0
"""Seconds a file's mtime and ctime must be old before its index is written: a file
written within one tick of a coarse file-system clock may change again without either
time moving (``src/persist/mod.rs``)."""


def cache_folder() -> str:
    """``$XDG_CACHE_HOME/sessiontree`` (absolute only), else ``~/.cache/sessiontree``."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "sessiontree")


def other_bytes(folder: str, index_dir: str) -> int:
    """Bytes the files in ``folder`` other than the persisted indexes take: every
    regular file directly in it (the catalog, its journal, the demo's session) and in
    its folders one level down (the catalog's search segments), but ``index_dir``'s.
    A symlink counts nothing (its target lives elsewhere); a file counts the smaller of
    its length and the blocks it holds (a sparse file's length is not disk used); one
    that cannot be read counts 0."""

    def used(e: os.DirEntry[str]) -> int:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            return 0
        return min(st.st_size, st.st_blocks * 512) if stat.S_ISREG(st.st_mode) else 0

    total = 0
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if e.name != index_dir:
                        try:
                            with os.scandir(e.path) as inner:
                                total += sum(used(f) for f in inner)
                        except OSError:
                            pass
                else:
                    total += used(e)
    except OSError:
        pass
    return total


def pi_folders() -> tuple[str, str]:
    """Pi's sessions root and agent folder as Pi computes them (config.ts
    ``getAgentDir``, ``join(agentDir, "sessions")``): absolute, symlinks not resolved.

    Each is compared with a cache path both as it is and resolved on its own: a
    sessions root that is a symlink (``~/.pi/agent/sessions`` -> ``~/pi-sessions``, a
    dotfiles set-up) is resolved to its target, but its target's parent is not Pi's
    folder; the agent folder is the root's parent *before* resolving.
    """
    root = os.path.abspath(default_session_root())
    return root, os.path.dirname(root)


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives
        return False


def inside_pi_folder(path: str) -> str | None:
    """The Pi folder (:func:`pi_folders`) that holds ``path`` (absolute), or ``None``."""
    real = os.path.realpath(path)
    for pi in pi_folders():
        if _inside(real, os.path.realpath(pi)) or _inside(path, pi):
            return pi
    return None


def index_cache() -> tuple[str, int, int, float] | None:
    """The persisted indexes' settings for ``_sessiontree.Index.open``: ``(folder,
    budget bytes, min file bytes, settle seconds)``, or ``None`` when turned off. With
    the default folder (``SESSIONTREE_INDEX`` unset) the budget is what the folder's
    other files leave of ``SESSIONTREE_INDEX_BYTES`` (:func:`other_bytes`, at least 0):
    one budget for the one cache folder.

    Raises:
        ValueError: the folder is inside Pi's agent folder or sessions root, as it is
            or through a symlink (a cache must never write there): the message names
            what put it there, ``SESSIONTREE_INDEX`` or the default folder; or
            ``SESSIONTREE_INDEX_BYTES`` is not a size such as ``512MiB``
            (``_sizes.size_from_env``, the rule of ``SESSIONTREE_CACHE_BYTES``).
    """
    if _held:
        return _held[0]
    env = os.environ.get(INDEX_ENV)
    if env is not None and env.strip().lower() in OFF:
        return None
    folder = os.path.abspath(os.path.expanduser(env)) if env is not None else os.path.join(cache_folder(), "index")
    pi = inside_pi_folder(folder)
    if pi is not None:
        real = os.path.realpath(folder)
        where = folder if real == folder else f"{folder} (a link to {real})"
        if env is not None:
            raise ValueError(f"{INDEX_ENV}={env!r}: {where} is inside Pi's folder {pi}, where sessiontree "
                             f"never writes; set {INDEX_ENV} to another folder, or to off")
        raise ValueError(f"the persisted indexes' default folder {where} is inside Pi's folder {pi}, "
                         f"where sessiontree never writes; set {INDEX_ENV} to another folder, or to off")
    budget = size_from_env(INDEX_BYTES_ENV, INDEX_BUDGET)
    if env is None:
        budget = max(0, budget - other_bytes(cache_folder(), "index"))
    return folder, budget, INDEX_MIN_BYTES, INDEX_SETTLE


# The settings :func:`held_index_cache` fixed for a run of many opens (one element), or
# none (empty): each call computes them.
_held: list[tuple[str, int, int, float] | None] = []


@contextlib.contextmanager
def held_index_cache() -> Iterator[None]:
    """Within the ``with`` block, :func:`index_cache` answers what it answered on
    entering, without computing it again, in every thread of the process. For a run
    that opens many sessions (the Parquet export, a listing pass): each computation
    resolves the folder's path and sums the other files of the cache folder
    (:func:`other_bytes`), ~0.17 ms, ~1.5% of a session's export. The budget then
    does not follow what the catalog gains during the run; the next run's does. Blocks
    may nest (the outermost holds). Settings that are not usable (:func:`index_cache`
    raises) are not held: each call then raises as without the block.
    """
    if _held:
        yield
        return
    try:
        settings = index_cache()
    except ValueError:
        yield
        return
    _held.append(settings)
    try:
        yield
    finally:
        _held.clear()


def beside_session(session: str, folder: str) -> bool:
    """Whether an index folder ``folder`` is the session file ``session``'s own folder
    (``SESSIONTREE_INDEX`` set to it), where an index would be written beside the
    session: CONTRACT §6, reading a session writes nothing in its folder. A folder that
    does not exist yet is not it."""
    try:
        return os.path.samefile(os.path.dirname(os.path.abspath(session)), folder)
    except OSError:
        return False


def index_cache_for(session: str) -> tuple[str, int, int, float] | None:
    """:func:`index_cache` for opening the session file ``session``: ``None`` also when
    its index would be written beside it (:func:`beside_session`).

    Raises:
        ValueError: as :func:`index_cache`.
    """
    cache = index_cache()
    return None if cache is None or beside_session(session, cache[0]) else cache
