"""Entries with their long string values cut, for viewers that show only the start of
each entry (``SessionManager.get_entries_by_id(..., clip=N)``).

The rule, which ``src/clip.rs`` applies to a line before it is decoded (and
``tests/test_clip.py`` holds the two equal): every string *value* of more than ``keep``
characters becomes its first ``keep``; object keys stay whole, and so do the values of
the top-level :data:`WHOLE_KEYS` (the entry's identity and kind). Characters are
Python's (code points: a surrogate pair of the file is one).
"""

from __future__ import annotations

from typing import Any

__all__ = ["WHOLE_KEYS", "clip_entry"]

WHOLE_KEYS = frozenset({"id", "parentId", "type"})
"""Top-level keys whose values are never cut."""


def clip_entry(entry: dict[str, Any], keep: int) -> dict[str, Any]:
    """A copy of ``entry`` cut by the rule (``entry`` itself is not changed; containers
    are new, strings and other values shared).

    Args:
        entry: a decoded entry (dicts, lists, str, numbers, bools, ``None``), of any depth
            (the walk keeps its own stack).
        keep: characters kept of each long string value (``>= 0``).
    """
    out: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = []
    for k, v in entry.items():
        if k not in WHOLE_KEYS:
            v = _cut(v, keep, stack)
        out[k] = v
    while stack:
        src, dst = stack.pop()
        if type(dst) is dict:
            for k, v in src.items():
                dst[k] = _cut(v, keep, stack)
        else:
            dst.extend([_cut(v, keep, stack) for v in src])
    return out


def _cut(value: Any, keep: int, stack: list[tuple[Any, Any]]) -> Any:
    """``value`` cut if it is a long string; a container becomes an empty copy that the
    walk fills later (pushed on ``stack``)."""
    t = type(value)
    if t is str:
        return value if len(value) <= keep else value[:keep]
    if t is dict or t is list:
        new: Any = t()
        stack.append((value, new))
        return new
    return value
