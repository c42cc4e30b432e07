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
    """The shortest length, at least :data:`SHORT_ID`, at which the ids of ``ids``, each
    cut to it (a shorter one shown whole), are all different: what ``tree`` and
    ``browse`` show, so that every id shown is one ``--leaf`` takes. An id that is a
    prefix of another (``abcdefgh``, ``abcdefgh/w1``: LangGraph's writes beside their
    checkpoint) is shown whole and the other one character past it (trial 59: both
    showed as ``abcdefgh``). Pi's 8-character ids cost one pass; longer ones (UUIDv6/v7,
    time-ordered: their first 8 characters collide within a minute) a sort.
    """
    ids = [i for i in ids if isinstance(i, str)]
    if max(map(len, ids), default=0) <= SHORT_ID:
        return SHORT_ID
    width = SHORT_ID
    ordered = sorted(set(ids))
    for a, b in zip(ordered, ordered[1:]):
        # Sorted: two ids that look alike when cut are neighbours or have such
        # neighbours between them (all share the cut prefix), so neighbours suffice.
        # ``a < b``: their common prefix is shorter than ``b``, so ``b`` shown one
        # character past it differs from ``a`` (whole, or cut there too).
        if a[:width] == b[:width]:
            common = width
            while common < len(a) and a[common] == b[common]:
                common += 1
            width = common + 1
    return width


def resolve_id(sm: Any, text: str, ids: Sequence[str] | None = None) -> str:
    """The id of the entry ``text`` names in the open session ``sm``: its whole id, or
    a prefix of exactly one id (``SessionManager.resolve_id``). A ``text`` holding a
    backslash is also taken against the ids as the viewers show them
    (:func:`~sessiontree.view.safe`: an id holding a control or a bidi character is
    shown with escapes such as ``\\x07``, and what is shown can be typed back): one id
    whose own characters or shown form are ``text``, else one whose either starts with it.

    Args:
        ids: the session's ids (``get_shape().ids``), when the caller has them; read to
            name the candidates of an ambiguous prefix and for the shown forms.

    Raises:
        KeyError: no entry has that id or prefix (an empty ``text`` is a prefix of none).
        AmbiguousIdError: the prefix fits several ids (the first five named), or
            several ids are ``text`` as they are or as shown (``safe`` leaves a
            backslash as it is: ``a\\x07`` is also how an id holding a BEL shows).
    """
    if "\\" in text:
        return _escaped(sm, text, ids)
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


def _escaped(sm: Any, text: str, ids: Sequence[str] | None) -> str:
    """:func:`resolve_id` of a text holding a backslash: its own characters and the
    shown forms alike (an escape always holds a backslash)."""
    from ._escape import safe

    if ids is None:
        ids = sm.get_shape().ids
    exact: list[str] = []
    prefixed: list[str] = []
    for i in ids:
        if isinstance(i, str):
            shown = safe(i)
            if text in (i, shown):
                exact.append(i)
            elif i.startswith(text) or shown.startswith(text):
                prefixed.append(i)
    found = exact or prefixed
    if len(found) == 1:
        return found[0]
    if not found:
        raise KeyError(text)
    raise AmbiguousIdError(text, found[:5], len(found))
