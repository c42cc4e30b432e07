"""Styled text for a terminal without rich: a style name made into the escape that rich's
``Style.parse(name).render(text)`` writes, for the names the viewers use (attributes
and the sixteen standard colours, whose codes are the same in every colour system).

rich's console and style modules take 30-50 ms to import; a warm command at a terminal
(``search``, ``ls``, ``tree``) answers in less than that, so its styles are written
here. A name this module does not know (a 256-colour or RGB colour, ``not bold``, a
link) is ``None`` and the caller asks rich.
"""

from __future__ import annotations

__all__ = ["sgr", "paint"]

# rich.style.Style's attribute bits in the order its `_make_ansi_codes` writes them.
_ATTRIBUTES = {"bold": 1, "b": 1, "dim": 2, "d": 2, "italic": 3, "i": 3, "underline": 4, "u": 4, "blink": 5,
               "blink2": 6, "reverse": 7, "r": 7, "conceal": 8, "strike": 9, "s": 9, "underline2": 21, "uu": 21,
               "frame": 51, "encircle": 52, "overline": 53, "o": 53}
_ORDER = (1, 2, 3, 4, 5, 6, 7, 8, 9, 21, 51, 52, 53)
_COLOURS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
_NUMBER = {**{c: n for n, c in enumerate(_COLOURS)}, **{f"bright_{c}": n + 8 for n, c in enumerate(_COLOURS)}}

_cache: dict[tuple[str, bool], str | None] = {}


def _colour(name: str, background: bool) -> str | None:
    if name == "default":
        return "49" if background else "39"
    n = _NUMBER.get(name)
    if n is None:
        return None
    return str((40 if background else 30) + n if n < 8 else (100 if background else 90) + n - 8)


def _codes(style: str, colour: bool) -> str | None:
    words = style.lower().split()
    attrs: set[int] = set()
    fg = bg = None
    i = 0
    while i < len(words):
        w = words[i]
        if w == "on":
            if i + 1 >= len(words) or bg is not None:
                return None
            bg = _colour(words[i + 1], True)
            if bg is None:
                return None
            i += 2
            continue
        if w in _ATTRIBUTES:
            attrs.add(_ATTRIBUTES[w])
        else:
            c = _colour(w, False)
            if c is None:
                return None
            fg = c  # rich: the last colour named wins
        i += 1
    codes = [str(a) for a in _ORDER if a in attrs]
    if colour:
        codes += [c for c in (fg, bg) if c is not None]
    return ";".join(codes)


def sgr(style: str, colour: bool = True) -> str | None:
    """The SGR parameters rich writes for ``style`` (``"1;32"`` for ``bold green``;
    ``""`` for an empty style), or ``None`` for a style name this module does not know.
    ``colour`` false: its attributes only, as a console with ``no_color`` (``$NO_COLOR``)
    writes them."""
    got = _cache.get((style, colour), "?")
    if got == "?":
        got = _cache[(style, colour)] = _codes(style, colour)
    return got


def paint(text: str, style: str, colour: bool = True) -> str | None:
    """``text`` in ``style`` as rich renders it on a terminal (``ESC[codes m text ESC[0m``;
    the text itself when it or the style is empty; ``colour`` as for :func:`sgr`), or
    ``None`` for a style this module does not know."""
    codes = sgr(style, colour)
    if codes is None:
        return None
    return f"\x1b[{codes}m{text}\x1b[0m" if codes and text else text
