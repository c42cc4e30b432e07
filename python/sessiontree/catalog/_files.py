"""The session files of a folder (or one named session file), as every catalog command
finds them."""

from __future__ import annotations

import os
import stat as _stat

__all__ = ["folder_files", "folder_key"]


def folder_files(folder: str) -> list[tuple[str, str, os.stat_result | OSError]]:
    """The ``*.jsonl`` files of a folder that are regular files (or cannot be
    ``stat``-ed: reported later), in name order: ``(name, path, stat or error)``, the
    path the folder as given joined with the name, the ``stat`` with symlinks followed.
    ``folder`` may name one session file instead (any name): then that file alone, if
    it is a regular file.
    """
    try:
        # scandir joins the paths in C: a second listing of thousands of files is
        # mostly this loop.
        with os.scandir(folder) as it:
            names = sorted((e.name, e.path) for e in it if e.name.endswith(".jsonl"))
    except NotADirectoryError:
        names = [(os.path.basename(folder), folder)]
    except OSError:
        return []
    out: list[tuple[str, str, os.stat_result | OSError]] = []
    for n, path in names:
        try:
            st = os.stat(path)
        except OSError as e:
            out.append((n, path, e))
            continue
        if _stat.S_ISREG(st.st_mode):
            out.append((n, path, st))
    return out


def folder_key(folder: str) -> tuple[str, bool]:
    """``(the catalog's key, whole)``: a folder's absolute path and ``True``; for one
    session file (:func:`folder_files`), its folder's and ``False`` (the rows of the
    folder's other files are neither read nor dropped)."""
    key = os.path.abspath(folder)
    if os.path.isdir(key):
        return key, True
    return os.path.dirname(key), False
