"""A session's path as every command prints it: one a shell takes back as it is, so a
path one command prints can be pasted into another (issue 26)."""

from __future__ import annotations

import re
import shlex

from ._escape import safe

__all__ = ["shown_path"]

# What a shell reads as more than a word's letters (shlex.quote would also quote every
# non-ASCII letter, which a shell takes as it is).
_SHELL_SPECIAL = re.compile(r"[\s'\"\\$`!*?\[\]{}()<>|&;#~=%^]")


def shown_path(path: str) -> str:
    """``path`` quoted for a POSIX shell where it must be (``shlex.quote``), then made
    terminal-safe (:func:`safe`: a control character in a name is shown escaped)."""
    return safe(shlex.quote(path) if not path or _SHELL_SPECIAL.search(path) else path)
