"""Fitting text to a width in terminal cells (wide CJK and emoji take two)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import repeat

from .._lazy import lazy_pattern
from ._text import _native

__all__ = ["cells", "fit", "fit_start", "hang", "pad", "padded", "plain_columns", "plain_table"]


# Characters that take one terminal cell each, so that a text made only of them is
# measured by len(): Latin, Greek and Cyrillic, punctuation, arrows, box drawing and the
# geometric shapes the tree draws with (combining marks and the few emoji among them
# left out; tests/test_cli_tree.py holds the set against rich's cell_len).
_ONE_CELL_RE: re.Pattern[str] = lazy_pattern("[ -~\u00a0-\u02ff\u0370-\u0482\u048a-\u052f\u2010-\u2027\u2030-\u205e\u2190-\u21ff"
                          "\u2440-\u244a\u2500-\u257f\u25a0-\u25fc]*")


def cells(text: str) -> int:
    """Terminal cells ``text`` takes (wide CJK/emoji count 2)."""
    if text.isascii() or _ONE_CELL_RE.fullmatch(text):
        return len(text)
    from rich.cells import cell_len  # imported when first needed: a piped search never is

    return cell_len(text)


def fit(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` terminal cells (wide CJK/emoji count 2), ending in ``…``."""
    if width <= 0:
        return ""
    if text.isascii() or _ONE_CELL_RE.fullmatch(text, 0, width + 1):
        return text if len(text) <= width else _cut(text[: width - 1])
    if len(text) <= width // 2:
        return text  # even if every character is two cells wide
    used = 0
    cut = None
    for start, size in _clusters(text):
        used += size
        if cut is None and used > width - 1:
            cut = start  # text[:start] fits in width - 1 cells, leaving one for "…"
        if used > width:
            return _cut(text[:cut])
    return text


def fit_start(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` terminal cells by its start, beginning with ``…`` (a
    path whose file name matters most); ``""`` when not even ``…`` and one cell fit."""
    if cells(text) <= width:
        return text
    if width < 2:
        return ""
    if text.isascii():
        return "…" + text[len(text) - (width - 1):]
    used = 0
    i = len(text)
    for start, size in reversed(list(_clusters(text))):
        if used + size > width - 1:
            break
        used += size
        i = start
    return "…" + text[i:]


def pad(text: str, width: int) -> str:
    """``text`` made exactly ``width`` terminal cells: spaces added, or cut as :func:`fit`
    cuts it first (a text already fitted is only padded, as rich's ``set_cell_size``
    pads it)."""
    fitted = fit(text, width) if cells(text) > width else text
    return fitted + " " * max(0, width - cells(fitted))


def padded(texts: Sequence[str], width: int, *, start: bool = False) -> list[str]:
    """Each of ``texts`` cut to ``width`` cells as :func:`fit` cuts it (``start``: as
    :func:`fit_start`, by its start) and padded to exactly ``width`` (:func:`pad`): a
    listing's column. Printable ASCII text (nearly all of it: one cell a character) is
    cut and padded by ``str``'s own methods, the rest one text at a time by those
    functions (a control character takes no cell there)."""
    cut = fit_start if start else fit
    out = []
    for t in texts:
        if t.isascii() and t.isprintable():  # its cells are its characters, so is the cut's
            out.append((cut(t, width) if len(t) > width else t).ljust(width))
        else:
            out.append(pad(cut(t, width), width))
    return out


def _clusters(text: str) -> Iterator[tuple[int, int]]:
    """``(start, cells)`` of each piece of ``text`` a terminal draws as one, as
    :func:`cells` counts them: a character, or by rich's grapheme rules (rich 14 and
    later) an emoji sequence that a joiner (U+200D) or the emoji presentation selector
    (U+FE0F) makes one two-cell picture (``🏷️`` is two cells where ``🏷`` is one)."""
    from rich import cells as rich_cells

    split = getattr(rich_cells, "split_graphemes", None)
    if split is not None and ("\u200d" in text or "\ufe0f" in text):
        for start, _end, size in split(text)[0]:
            yield start, size
        return
    size_of = rich_cells.get_character_cell_size
    for i, ch in enumerate(text):
        # get_character_cell_size is cached per character; rich's whole-string
        # functions segment graphemes first and cost ~0.2 ms per preview.
        yield i, size_of(ch)


def hang(text: str, indent: int, width: int | None, *, lead: int | None = None) -> list[str]:
    """``text``, a value shown after a label, as lines whose continuations hang under it.

    Args:
        text: the value (terminal-safe already; it may hold line breaks and tabs).
        indent: cells of spaces each line after the first starts with (the label's
            width: the column the value starts at); at most half of ``width``.
        width: the terminal's width in cells: every line fits, the value is broken
            at spaces (a word longer than a line, by cells). ``None`` (piped output):
            lines break only where ``text`` does, and nothing is cut.
        lead: cells the label takes before the first line (default ``indent``).

    Returns:
        The lines: the first without the label, the others with ``indent`` spaces.
    """
    rows = text.splitlines() or [""]
    if width is None:
        return [rows[0], *(" " * indent + r for r in rows[1:])]
    first = max(1, width - (indent if lead is None else lead))
    indent = max(0, min(indent, width // 2))
    rest = max(1, width - indent)
    out: list[str] = []
    for k, row in enumerate(rows):
        pieces = _wrap(row.expandtabs(8) if "\t" in row else row, first if k == 0 else rest, rest)
        out.extend(p if k == 0 and i == 0 else " " * indent + p for i, p in enumerate(pieces))
    return out


def _wrap(row: str, first: int, rest: int) -> list[str]:
    """``row`` in pieces of at most ``first`` cells (the first piece), then ``rest``:
    broken at runs of spaces (dropped there), a word longer than a piece by cells."""
    if cells(row) <= first:
        return [row]
    pieces: list[str] = []
    cur, used, budget = "", 0, first
    for tok in _SPACES_RE.split(row):
        if not tok:
            continue
        n = cells(tok)
        if tok[0] == " ":
            if used + n > budget:  # break the line here: the spaces go with it
                pieces.append(cur)
                cur, used, budget = "", 0, rest
            else:
                cur, used = cur + tok, used + n
            continue
        if used + n > budget and cur.strip():  # the word starts the next line
            pieces.append(cur.rstrip())
            cur, used, budget = "", 0, rest
        while used + n > budget:  # longer than a line: cut by cells
            head, tok = _take(tok, budget - used, whole=not cur)
            pieces.append(cur + head)
            cur, used, budget = "", 0, rest
            n = cells(tok)
        cur, used = cur + tok, used + n
    if cur or not pieces:
        pieces.append(cur)
    return pieces


_SPACES_RE: re.Pattern[str] = lazy_pattern("( +)")


def fold_name(text: str, width: int) -> list[str]:
    """``text``, a name made of parts (``provider/model-4-5``, a folder's path), as lines
    of at most ``width`` cells, each broken after a ``/ - _ . : @`` or a space where one
    falls within the line (a part stays whole: rich folded ``anthropic/claud`` +
    ``e-opus-4-5``, trial 57), a part longer than a line by cells. The lines joined are
    ``text``."""
    if width < 1 or cells(text) <= width:
        return [text]
    lines: list[str] = []
    cur, used = "", 0
    for part in _PARTS_RE.findall(text):
        n = cells(part)
        if used + n > width and cur:  # the part starts the next line
            lines.append(cur)
            cur, used = "", 0
        while used + n > width:  # longer than a line: cut by cells
            head, part = _take(part, width - used, whole=not cur)
            lines.append(cur + head)
            cur, used = "", 0
            n = cells(part)
        cur, used = cur + part, used + n
    if cur or not lines:
        lines.append(cur)
    return lines


# A part: what runs to the next mark, the mark included (the last part may have none).
_PARTS_RE: re.Pattern[str] = lazy_pattern(r"[^/\-_.:@ ]+[/\-_.:@ ]?|[/\-_.:@ ]")


def _take(text: str, width: int, *, whole: bool) -> tuple[str, str]:
    """``(head, rest)``: the longest start of ``text`` within ``width`` cells (whole
    characters and emoji sequences); with ``whole`` at least one, so a line always
    gets something even where a wide character is wider than the room."""
    used = 0
    for start, size in _clusters(text):
        if used + size > width:
            if start == 0 and whole:
                nxt = next(iter(s for s, _ in _clusters(text) if s > 0), len(text))
                return text[:nxt], text[nxt:]
            return text[:start], text[start:]
        used += size
    return text, ""


def _cut(kept: str) -> str:
    """``kept`` ending in one ``…`` (a text already cut, such as an argument preview,
    is not marked twice)."""
    return kept.rstrip().rstrip("…") + "…"


def plain_table(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """``rows`` (the first the titles) as rich's ``Table(box=None, pad_edge=False)``
    writes them without styles when they fit its width: each column as wide as its
    widest cell in terminal cells, cells two spaces apart, left-justified or (``right``)
    right-justified, one line each ending in ``\\n`` (:func:`plain_columns`, by rows).

    Cells are shown as given (rich would take ``[b]`` for markup and ``:smile:`` for an
    emoji); where the table is wider than rich's width, no cell is cut (rich cuts the
    cells it cannot fit with ``…``). ``tests/test_usage_text.py`` holds it to rich."""
    return plain_columns(list(zip(*rows)), right) if rows else ""


def plain_columns(columns: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """:func:`plain_table` of the table given by columns (each the same length; the
    first ``len(right)`` of them written): a report of 20,000 lines is made a column at
    a time, and was turned into rows only to be turned back. ``""`` for no cells.

    The extension writes the text in one pass where it is built (``src/table.rs``:
    160,000 cells padded one by one took ~30 ms); this states the rule, and
    ``tests/test_usage_text.py`` holds the two equal.

    Raises:
        ValueError: columns of unequal lengths.
    """
    pairs = list(zip(columns, right))  # each read once, as zip pairs them
    columns = [list(c) for c, _ in pairs]
    right = [bool(r) for _, r in pairs]  # each as its truth
    if any(len(c) != len(columns[0]) for c in columns):
        raise ValueError("columns of unequal lengths")
    if not columns or not columns[0]:
        return ""
    # Terminal cells: a column of ASCII cells is as wide as its characters.
    sizes = [None if "".join(col).isascii() else [cells(c) for c in col] for col in columns]
    native = _native("plain_columns")
    got = native(columns, right, sizes) if native is not None else None
    if got is not None:  # None: a cell holds a lone surrogate, which the rule writes as it is
        return str(got)
    padded_columns = []
    for col, r, size in zip(columns, right, sizes):
        if size is None:  # str's own padding
            width = max(map(len, col))
            padded_columns.append(list(map(str.rjust if r else str.ljust, col, repeat(width))))
            continue
        width = max(size)
        padded_columns.append([" " * (width - n) + c if r else c + " " * (width - n) for c, n in zip(col, size)])
    return "\n".join(map("  ".join, zip(*padded_columns))) + "\n"
