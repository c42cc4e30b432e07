"""The runs of ASCII letters and digits every match of a ``re:`` pattern holds: the
first search's byte prefilter (``src/search/needle.rs``) looks for one of them, so that
only the lines that may match go to the ``regex`` package, as it does for a word.

The pattern is read by Python's own parser of ``re`` syntax (``re._parser``;
``sre_parse`` before 3.11). The search compiles it with the ``regex`` package
(``VERSION0``, ``re``'s syntax and more), so a run is taken only where the two read
the pattern alike: a pattern ``re`` cannot parse gives none (``\\p{L}``, ``(?V1)``,
``(?f)``, ``(?(DEFINE)…)``), and so does one with a literal ``{`` (``regex`` reads
``(?:abc){e<=1}`` as a fuzzy match, which need not hold ``abc``; ``re`` as the text
``{e<=1}``), a set holding ``[`` (``regex`` reads ``[[:alpha:]abc]`` as one set) or
one ``re`` warns about (a global flag after the start: Python 3.10 reads ``foo
bar(?x)`` as ``foobar``).
A run is required when it stands in the pattern's top level, in a group, or in a
repeat of at least one; never inside an alternative, a set, a look-around or a
conditional. ASCII letters match only themselves in either case and the non-ASCII
characters the prefilter knows (``İ``, ``ſ``, the Kelvin sign) under ``regex``'s
``IGNORECASE``; digits only themselves.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["required_runs", "may_match", "FOLDS"]

_BRACE, _BRACKET = ord("{"), ord("[")

FOLDS = "\u0130\u0131\u017f\u212a"
"""The non-ASCII characters the search takes as equal to ASCII letters (``İ``, ``ı``,
``ſ``, the Kelvin sign: ``src/search/rules.rs`` ``ASCII_FOLDS``); ``regex``'s
``IGNORECASE`` holds no others equal to one."""


def required_runs(pattern: str) -> list[str]:
    """The runs of ASCII letters and digits (lowercase) every match of ``pattern``
    holds, as the search compiles it (``IGNORECASE``, ``regex`` ``VERSION0``); ``[]``
    when none is known (never an error)."""
    try:
        try:
            from re import _constants as c, _parser as p  # type: ignore[attr-defined]
        except ImportError:  # Python 3.10
            import sre_constants as c  # type: ignore[no-redef]
            import sre_parse as p  # type: ignore[no-redef]
        import re
        import warnings

        with warnings.catch_warnings():
            # A pattern re warns about is one it may read otherwise than regex: `[[` (a
            # set that will nest), a global flag after the start (Python 3.10 applies
            # it to the whole pattern, regex from there on).
            warnings.simplefilter("error")
            tree = p.parse(pattern, re.IGNORECASE)
        if _unsure(tree, c):
            return []
        return [r for r in _runs(tree, c) if r]
    except Exception:  # noqa: BLE001 - re's parser rejects what regex may take: no runs
        return []


def _unsure(seq: Any, c: Any) -> bool:
    """Whether ``seq`` (a parsed pattern) holds, anywhere, a literal ``{`` or a set
    holding ``[`` (``regex`` reads ``[[:alpha:]abc]`` as one set of letters, ``re`` as
    a set, then the text ``abc]``)."""
    for op, av in seq:
        if op is c.LITERAL and av == _BRACE:
            return True
        if op is c.IN and any((o is c.LITERAL and v == _BRACKET) or (o is c.RANGE and v[0] <= _BRACKET <= v[1])
                              for o, v in av):
            return True
        # A node's operand is a sequence (an atomic group's), or holds them: a repeat's
        # (min, max, seq), a group's (..., seq), a branch's (None, [seq, ...]).
        for x in (av,) if hasattr(av, "data") else av if isinstance(av, (tuple, list)) else ():
            if hasattr(x, "data") and _unsure(x, c):
                return True
            if isinstance(x, list) and any(hasattr(y, "data") and _unsure(y, c) for y in x):
                return True
    return False


def _runs(seq: Any, c: Any) -> list[str]:
    """The required runs of one parsed sequence (see the module docstring)."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append("".join(run).lower())
            run.clear()

    for op, av in seq:
        if op is c.LITERAL and av < 0x80 and chr(av).isalnum():
            run.append(chr(av))
            continue
        flush()
        if op is c.SUBPATTERN:
            out.extend(_runs(av[-1], c))
        elif op is getattr(c, "ATOMIC_GROUP", None):
            out.extend(_runs(av, c))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) and av[0] >= 1:
            out.extend(_runs(av[2], c))
    flush()
    return out


def may_match(text: str, runs: list[str]) -> bool:
    """Whether a pattern whose matches hold ``runs`` (:func:`required_runs`) may match
    ``text``: it holds every run, ignoring case, or one of :data:`FOLDS`, where a run
    may be spelled otherwise. The native reader hands back only such texts too
    (``src/search.rs`` ``Query::may_match``)."""
    if not runs or any(c in text for c in FOLDS):
        return True
    low = text.lower()  # an ASCII letter's case only; other characters never become a run's
    return all(r in low for r in runs)
