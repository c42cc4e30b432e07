"""The session files of a folder (or one named session file), as every catalog command
finds them."""

from __future__ import annotations

import os
import stat as _stat
from collections import namedtuple
from collections.abc import Callable, Iterable, Sequence

from .._sessiontree import folder_files as _listed, walk_folders as _walked

__all__ = ["FileStat", "folder_files", "folder_key", "made", "tell_unread", "unlisted", "walk_folders"]

# What the catalog keeps of a file's `stat` (symlinks followed), named as
# `os.stat_result` names it: the identity its rows are checked against. collections'
# namedtuple, not typing's: a warm usage report imports no `typing`.
FileStat = namedtuple("FileStat", ["st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"])


def folder_files(folder: str) -> list[tuple[str, str, FileStat | OSError]]:
    """The ``*.jsonl`` files of a folder that are regular files (or cannot be
    ``stat``-ed: reported later), in name order: ``(name, path, stat or error)``, the
    path the folder as given joined with the name, the ``stat`` with symlinks followed.
    ``folder`` may name one session file instead (any name): then that file alone, if
    it is a regular file. A folder that cannot be read has none.

    The listing and the ``stat`` of each file are ``src/stat.rs``' (``fstatat`` against
    the open folder: half the time of ``os.stat`` of each path, and the same rule as
    the warm usage scan's own listing); a file it could not ``stat`` is asked again
    here, for the error's words.
    """
    return made(sorted(_listed(os.fsencode(folder))))


def made(listed: list[tuple[str, str, tuple[int, int, int, int, int] | None]]) -> list[tuple[str, str, FileStat | OSError]]:
    """The native listing's ``(name, path, stat tuple or None)`` (``_sessiontree.folder_files``,
    ``SearchScan``), in the given order, as :func:`folder_files` gives files: a file the
    listing could not ``stat`` is asked again, for the error's words (a file missing
    since is that error; one there since is listed, if it is a regular file)."""
    out: list[tuple[str, str, FileStat | OSError]] = []
    for name, path, st in listed:
        if st is not None:
            out.append((name, path, FileStat._make(st)))
            continue
        try:
            again = os.stat(path)
        except OSError as e:
            out.append((name, path, e))
            continue
        if _stat.S_ISREG(again.st_mode):  # there since the listing's try
            out.append((name, path, FileStat(again.st_dev, again.st_ino, again.st_size, again.st_mtime_ns,
                                             again.st_ctime_ns)))
    return out


def unlisted(folders: Sequence[str]) -> list[tuple[str, str]]:
    """``(folder, why)`` of the folders of ``folders`` this user cannot list or whose
    files it cannot reach (no read or no search permission): :func:`folder_files` finds
    no file there, so a report or a search must say it leaves them out (adversary 61c).
    One ``access`` a folder; a session file named instead of a folder is never one."""
    out = []
    for folder in folders:
        if not os.access(folder, os.R_OK | os.X_OK) and os.path.isdir(folder):
            out.append((folder, "Permission denied (its files cannot be listed or read)"))
    return out


def tell_unread(on_unread: Callable[[str, str], None] | None, folders: Sequence[str],
                unread: Iterable[tuple[str, str]]) -> None:
    """Tell ``on_unread`` (``usage``'s and ``search``'s) what a run left out: the folders
    of ``folders`` that cannot be listed (:func:`unlisted`), then the files ``unread``
    (``_indexer.unread_of``, the native search's errors)."""
    if on_unread is not None:
        for path, why in [*unlisted(folders), *unread]:
            on_unread(path, why)


def folder_key(folder: str) -> tuple[str, bool]:
    """``(the catalog's key, whole)``: a folder's absolute path and ``True``; for one
    session file (:func:`folder_files`), its folder's and ``False`` (the rows of the
    folder's other files are neither read nor dropped)."""
    key = os.path.abspath(folder)
    if os.path.isdir(key):
        return key, True
    return os.path.dirname(key), False


def walk_folders(root: str, seen: set[tuple[int, int]]) -> list[str]:
    """``root`` and every folder under it, each once, the folders a PATH names
    (``cli._scope.walk``): the root, then each folder's subfolders (symlinks followed)
    sorted by name, from the root down; a folder whose ``(st_dev, st_ino)`` is in
    ``seen``, or that cannot be ``stat``-ed, is left out with its tree (a link that
    loops ends there); each listed one is added to ``seen``. Paths are joined as
    ``os.path.join`` joins them.

    The walk is ``src/stat.rs``': ``os.walk`` made a method call per entry, each session
    file too (10 ms of a 20,000-file history's 15 ms CPU walk, for every command).
    """
    return _walked(os.fsencode(root), seen)
