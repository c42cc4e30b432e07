"""Entry ids as the viewers show and take them: cut to the fewest characters that still
tell every id of the file apart, and taken back by any unique prefix (as git takes
commits)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["SHORT_ID", "AmbiguousIdError", "id_width", "resolve_id"]

SHORT_ID = 8
"""The fewest characters an id is shown with (Pi's ids are 8 hex digits)."""


class AmbiguousIdError(LookupError):
    """An id prefix names more than one entry.

    Attributes:
        prefix: the text given.
        candidates: the first few ids that start with it (file order).
        count: how many do.
    """

    def __init__(self, prefix: str, candidates: Sequence[str], count: int) -> None:
        shown = ", ".join(candidates) + (", …" if count > len(candidates) else "")
        super().__init__(f"{count:,} entries start with {prefix}: {shown}")
        self.prefix = prefix
        self.candidates = list(candidates)
        self.count = count


def id_width(ids: Iterable[str]) -> int:
    """The shortest length, at least :data:`SHORT_ID`, at which no two ids of ``ids``
    share a prefix (a shorter id counts whole): what ``tree`` shows, so that every id
    it shows is one ``--leaf`` takes. Pi's 8-character ids cost one pass; longer ones
    (UUIDv6/v7, time-ordered: their first 8 characters collide within a minute) a sort.
    """
    ids = [i for i in ids if isinstance(i, str)]
    longest = max(map(len, ids), default=0)
    if longest <= SHORT_ID:
        return SHORT_ID
    width = SHORT_ID
    ordered = sorted(set(ids))
    for a, b in zip(ordered, ordered[1:]):
        # Sorted: a prefix shared by any two ids is shared by two neighbours.
        while width < longest and a[:width] == b[:width] and len(a) > width:
            width += 1
    return width


def resolve_id(sm: Any, text: str, ids: Sequence[str] | None = None) -> str:
    """The id of the entry ``text`` names in the open session ``sm``: its whole id, or
    a prefix of exactly one id (``SessionManager.resolve_id``).

    Args:
        ids: the session's ids (``get_shape().ids``), when the caller has them; only
            read to name the candidates of an ambiguous prefix.

    Raises:
        KeyError: no entry has that id or prefix (an empty ``text`` is a prefix of none).
        AmbiguousIdError: the prefix fits several ids (the first five named).
    """
    try:
        return str(sm.resolve_id(text))
    except ValueError as e:
        if "ambiguous" not in str(e).lower():
            raise KeyError(text) from None
    except LookupError:
        raise KeyError(text) from None
    if not text:  # no entry's whole id: an empty prefix names no entry, not every one
        raise KeyError(text)
    if ids is None:
        ids = sm.get_shape().ids
    found = [i for i in ids if isinstance(i, str) and i.startswith(text)]
    raise AmbiguousIdError(text, found[:5], len(found))
