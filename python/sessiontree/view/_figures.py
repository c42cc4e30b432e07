"""A usage report's numbers as its table shows them: in full (``1,234``, a cost to
four places) or short, to fit a narrow table (``61.5M``).

These are the rules. The extension writes a whole column of them in one call where it
is built (``src/figures.rs``: a report by session of 20,000 files has 140,000 numbers,
~0.7 µs each in Python); ``tests/test_view_figures.py`` holds the two equal."""

from __future__ import annotations

from collections.abc import Iterable

from ._text import _native

__all__ = ["STYLES", "number_column", "short_number"]

STYLES = ("full", "short", "cost", "cost_short")
"""``full``: ``f"{x:,}"`` for an int, ``f"{x:,.1f}"`` for a float; ``short``:
:func:`short_number`; ``cost``: ``f"{x:,.4f}"``; ``cost_short``: ``f"{x:.2f}"`` below
10,000 in size, else :func:`short_number`."""

_INF = float("inf")


def short_number(x: float) -> str:
    """A number in at most 7 characters: ``61.5M``, ``4.6k``, ``802``, past a thousand
    T as a power of ten (``2.5e19``; ``inf``, ``nan``)."""
    a = abs(x)
    if a >= 1e3:
        if a >= 1e15:  # "24691357.8T" took a narrow table's room
            return str(x) if a == _INF else f"{x:.1e}".replace("e+", "e")
        unit, scale = (("T", 1e12) if a >= 1e12 else ("G", 1e9) if a >= 1e9 else ("M", 1e6) if a >= 1e6
                       else ("k", 1e3))
        return f"{x / scale:.1f}{unit}"
    if a != a:
        return str(x)
    return f"{x:.0f}" if isinstance(x, int) or a >= 100 else f"{x:.2f}"


def _one(x: float, style: str) -> str:
    if style == "full":
        return f"{x:,}" if isinstance(x, int) else f"{x:,.1f}"
    if style == "cost":
        return f"{x:,.4f}"
    if style == "cost_short" and abs(x) < 1e4:
        return f"{x:.2f}"
    return short_number(x)


def number_column(values: Iterable[float], style: str) -> list[str]:
    """Each of ``values`` (ints and floats; any iterable) written in ``style`` (one of
    :data:`STYLES`).

    Raises:
        ValueError: an unknown style.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    if not isinstance(values, (list, tuple)):
        values = list(values)  # read twice when the extension leaves a value to the rules
    native = _native("number_column")
    got = native(values, style) if native is not None else None
    # None: a value the extension leaves to these rules (an int past 64 bits, a bool, …).
    return got if got is not None else [_one(x, style) for x in values]
