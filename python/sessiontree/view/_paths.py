"""A session's path as every command prints it: one a shell takes back as it is, so a
path one command prints can be pasted into another (issue 26)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable

from ._escape import safe

__all__ = ["shown_path", "shown_paths"]

# What a shell reads as more than a word's letters (shlex.quote would also quote every
# non-ASCII letter, which a shell takes as it is).
_SHELL_SPECIAL = re.compile(r"[\s'\"\\$`!*?\[\]{}()<>|&;#~=%^]")
# The ASCII characters neither rule changes: printable and not special.
_PLAIN = bytes(c for c in range(0x20, 0x7F) if not _SHELL_SPECIAL.match(chr(c)))


def shown_path(path: str) -> str:
    """``path`` quoted for a POSIX shell where it must be (``shlex.quote``), printable
    on a terminal and still a path the shell takes back: a name holding a character the
    escaping rule shows escaped (a control such as a newline, a bidi or invisible
    character, a byte that is not UTF-8, held as ``os.fsdecode``'s lone surrogate) is
    ANSI-C quoted, ``$'…'``, each such character as its bytes (``$'new\\nline'``,
    ``$'bad\\xff'``), where :func:`safe` alone printed a form no shell reads back."""
    if safe(path) != path:
        return _ansi_c(path)
    return shlex.quote(path) if not path or _SHELL_SPECIAL.search(path) else path


def shown_paths(paths: Iterable[str]) -> list[str]:
    """Each of ``paths`` as :func:`shown_path` shows it (a new list of the same length).

    A report by session or a listing holds thousands of paths, nearly all of which need
    nothing: they are checked together, joined by ``/`` (a character neither rule
    changes, and each rule looks at one character at a time), and only when the joined
    text needs something is each path shown alone."""
    listed = list(paths)  # read more than once
    if not all(listed):  # "" is quoted ('')
        return [shown_path(p) for p in listed]
    joined = "/".join(listed)
    if joined.isascii():
        # Every character plain is one pass of bytes.translate (the expression steps
        # through every character: 17 ms for 20,000 paths; str.isprintable and a search
        # for each special character, 6 ms).
        needs = bool(joined.encode("ascii").translate(None, _PLAIN))
    else:
        needs = safe(joined) != joined or _SHELL_SPECIAL.search(joined) is not None
    return [shown_path(p) for p in listed] if needs else listed


def _ansi_c(path: str) -> str:
    """``path`` as bash's ``$'…'`` quoting writes it: ``\\`` and ``'`` escaped, every
    character :func:`safe` would escape written as its bytes in the file system's
    encoding (``\\xHH``; a surrogate of ``os.fsdecode`` is the byte it stands for)."""
    out = ["$'"]
    for ch in path:
        if ch in "\\'":
            out.append("\\" + ch)
        elif safe(ch) == ch:
            out.append(ch)
        else:
            raw = os.fsencode(ch) if "\udc80" <= ch <= "\udcff" else ch.encode("utf-8", "surrogatepass")
            out.append("".join(f"\\x{b:02x}" for b in raw))
    out.append("'")
    return "".join(out)
