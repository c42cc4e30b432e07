"""Entry ids as the viewers show and take them: cut to the fewest characters at which
every id's shown cut names it again, and taken back by any unique prefix (as git takes
commits), as they are or as shown (docs/CONTRACT.md §10 "Ids")."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

from ._escape import safe

__all__ = ["SHORT_ID", "AmbiguousIdError", "id_width", "resolve_id"]

SHORT_ID = 8
"""The fewest characters an id is shown with (Pi's ids are 8 hex digits)."""

_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))  # what the escaping rule shows as it is, in ASCII


class AmbiguousIdError(LookupError):
    """An id prefix names more than one entry.

    Attributes:
        prefix: the text given.
        candidates: the first few ids that start with it (file order).
        count: how many do.
        alike: every one of them shows as the same text (``safe`` leaves a backslash as
            it is, so ``p`` + BEL and ``p\\x07`` both show as ``p\\x07``): no more
            characters tell them apart, so the message names them as JSON strings and
            says how one holding an escaped character is given.
    """

    def __init__(self, prefix: str, candidates: Sequence[str], count: int, alike: bool = False) -> None:
        if alike:
            message = f"{count:,} entries show alike as {safe(candidates[0])}: " + _alike_help(candidates)
        else:
            shown = ", ".join(candidates) + (", …" if count > len(candidates) else "")
            message = f"{count:,} entries start with {prefix}: {shown}"
        super().__init__(message)
        self.prefix = prefix
        self.candidates = list(candidates)
        self.count = count
        self.alike = alike


def _alike_help(ids: Sequence[str]) -> str:
    """Ids that show alike, each as a JSON string (``"p\\u0007"``, ``"p\\\\x07"``: two
    spellings that differ), and how to give one that holds an escaped character: its
    own characters, which no shown form is (an escape is printable), e.g. bash's
    ``$'…'``. The one whose own characters are its shown form has no text of its own."""
    named = ", ".join(json.dumps(i) for i in ids)
    typed = next((i for i in ids if safe(i) != i and not any("\ud800" <= c <= "\udfff" for c in i)), None)
    if typed is None:
        return f"their ids as JSON: {named}"
    spelled = safe(typed.replace("\\", "\\\\").replace("'", "\\'"))
    return (f"their ids as JSON: {named}; one holding an escaped character is taken by its own characters"
            f" (in bash: $'{spelled}')")


def id_width(ids: Iterable[str]) -> int:
    """The shortest length, at least :data:`SHORT_ID`, at which every id of ``ids``, cut
    to it (a shorter one shown whole) and shown (:func:`~sessiontree.view.safe`), is a
    text :func:`resolve_id` takes back to that id: what ``tree`` and ``browse`` show,
    so that every id shown is one ``--leaf`` takes (docs/CONTRACT.md §10 "Ids").

    An id that is a prefix of another (``abcdefgh``, ``abcdefgh/w1``: LangGraph's
    writes beside their checkpoint) is shown whole and the other one character past it
    (trial 59). The cut counts an id's own characters (an escape is never cut in two,
    adversary 44) but what has to differ is what is shown: ``abcdefg`` + BEL + ``xyz``
    cut to 8 shows as ``abcdefg\\x07``, the whole of the id ``abcdefg\\x07`` (a
    backslash, ``x07``), so it is shown one character further (adversary 60). Ids that
    show alike whole (``p`` + BEL, ``p\\x07``) are told apart by no width: they are cut
    where they part from every other id, and :func:`resolve_id` says they show alike.

    Pi's 8-character ids cost one pass; longer ones (UUIDv6/v7, time-ordered: their
    first 8 characters collide within a minute) a sort.
    """
    ids = [i for i in ids if isinstance(i, str)]
    if max(map(len, ids), default=0) <= SHORT_ID:
        return SHORT_ID  # every id shown whole: its shown form names it (or no text does)
    joined = "".join(ids)
    # Printable ASCII (deleting those bytes leaves none): twice as fast as isprintable.
    if joined.isascii() and not joined.encode("ascii").translate(None, _PRINTABLE_ASCII):
        # Every id is its own shown form (the rule escapes no printable ASCII): the
        # shown cut is the raw cut, one character shown per character cut.
        return _width(sorted(set(ids)), {}, {})
    unique = set(ids)
    # The rule escapes character by character: each character that changes is looked up
    # once, and every id is shown by str.translate (safe's expression calls Python per
    # escape: 200 of them an id made id_width 300 times slower, adversary 61b).
    table = {ord(c): e for c in set(joined) if (e := safe(c)) != c}
    forms: set[str] = set()
    odd: dict[str, list[str]] = {}  # a shown form that is not its id's own characters -> its ids
    for i in unique:
        shown = i.translate(table)
        forms.add(shown)
        if shown != i:
            odd.setdefault(shown, []).append(i)
    for shown, alike in odd.items():
        if shown in unique:  # an id whose own characters are another's shown form
            alike.append(shown)
    return _width(sorted(forms), odd, {chr(c): len(e) - 1 for c, e in table.items()})


def _width(shown: list[str], odd: dict[str, list[str]], extra: dict[str, int]) -> int:
    """:func:`id_width` of the sorted distinct shown forms ``shown``, each the id of its
    own characters but those ``odd`` gives the ids of (``extra``: the characters shown
    as escapes, each with the characters its escape adds).

    A shown cut names its id when it is the whole shown form, or when no other shown
    form starts with it (:func:`resolve_id`: a whole id, as it is or as shown, wins,
    else a unique prefix). The cut grows with the width, so each id needs the width at
    which its cut first passes the longest start its shown form shares with another,
    which a neighbour in sorted order has; the answer is the greatest."""
    width = SHORT_ID
    for a, b in zip(shown, shown[1:]):
        # A cut of ``width`` characters shows at least ``width`` (an escape is longer
        # than its character): forms that differ within them are apart already.
        if a[:width] == b[:width]:
            common = _common(a, b, width)
            for form in (a, b):
                alike = odd.get(form)
                if alike is None:
                    width = max(width, min(common + 1, len(form)))
                else:
                    for i in alike:  # most already pass it at this width: one look
                        if _shown_len(i[:width], extra) <= common:
                            width = max(width, _past(i, common, extra))
    return width


def _common(a: str, b: str, known: int) -> int:
    """The length of the longest start ``a`` and ``b`` share, their first ``known``
    characters being alike: halved by slices compared in C, not a character at a time
    (shown forms of escaped ids share thousands)."""
    lo, hi = known, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _shown_len(text: str, extra: dict[str, int]) -> int:
    """The length of ``text`` shown, never the text translated (~12 µs an id): a count
    per escaped character when they are few, else each character's extra looked up as
    ``map`` calls ``dict.get`` (in C; thousands of distinct escaped characters made the
    counts ids × escapes, adversary 61c)."""
    if len(extra) <= _COUNTED:
        return len(text) + sum(text.count(c) * n for c, n in extra.items())
    return len(text) + sum(map(extra.get, text, repeat(0)))


_COUNTED = 16
"""Up to this many distinct escaped characters a shown length is counted one character
at a time with ``str.count`` (memchr speed), past it looked up per character."""


def _past(eid: str, common: int, extra: dict[str, int]) -> int:
    """The fewest characters of ``eid`` whose shown form is longer than ``common``
    characters; all of them (shown whole) when its whole shown form is not. The shown
    length grows with the characters: halved."""
    lo, hi = 1, len(eid)
    while lo < hi:
        mid = (lo + hi) // 2
        if _shown_len(eid[:mid], extra) > common:
            hi = mid
        else:
            lo = mid + 1
    return lo


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
            backslash as it is: ``a\\x07`` is also how an id holding a BEL shows);
            ``alike`` when they all show as one text (no more characters help).
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
    raise _ambiguous(text, [i for i in ids if isinstance(i, str) and i.startswith(text)])


def _escaped(sm: Any, text: str, ids: Sequence[str] | None) -> str:
    """:func:`resolve_id` of a text holding a backslash: its own characters and the
    shown forms alike (an escape always holds a backslash)."""
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
    raise _ambiguous(text, found)


def _ambiguous(text: str, found: list[str]) -> AmbiguousIdError:
    """The error for ``text`` that several ids ``found`` (file order) fit; ``alike``
    when they show as one text (a session's ids are distinct, so they differ only in
    what the escaping rule makes alike)."""
    alike = len({safe(i) for i in found}) == 1
    return AmbiguousIdError(text, found[:5], len(found), alike)
