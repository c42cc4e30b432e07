"""What search calls a word, and the text FTS5 indexes so that it can narrow soundly.

A term matches at the start of a word: where the character before it is not a letter
or digit in Python's sense (``str.isalnum``, the ``[^\\W_]`` of ``re``), matched with
``re.IGNORECASE``. FTS5 may only narrow the entries to read if every such match is
also an FTS5 match, but its ``unicode61`` tokenizer disagrees with Python on both
counts, and by SQLite version: it treats combining marks, characters newer than its
Unicode tables and some symbols as parts of tokens (``e\\u0301x`` is one token, so
``x`` would be missed), and it does not fold every case pair Python's ``re`` treats
as equal (``İ``/``i``, ``ı``/``i``, ``ſ``/``s``).

So FTS5 never sees the text itself but :func:`fts_text` of it, the query's terms
likewise: every character that is not a letter or digit becomes a space (before
folding, as the word rule judges the text's own characters), then the text is
case-folded (``str.casefold``, with the dotted and dotless ``i`` made ``i`` first),
which gives one spelling to the characters ``re.IGNORECASE`` holds equal. FTS5's own
folding and the letters it still treats as separators can then only widen what it
finds; the matcher decides. The one character ``re.IGNORECASE`` equates with a
letter while not being one itself, U+0345 (combining ypogegrammeni, equal to ``ι``),
is a space here: a query ``ι`` does not find it with a catalog (tests hold this set).
"""

from __future__ import annotations

import re

__all__ = ["fts_text", "word_char"]

_NOT_WORD = re.compile(r"[^\w\x00-\x7f]+")  # non-ASCII, not a letter or digit ('_' is ASCII)


def word_char(c: str) -> bool:
    """Whether ``c`` (one character) continues a word: a letter or digit."""
    return c.isalnum()


def fts_text(s: str) -> str:
    """The text FTS5 indexes for ``s`` (the module docstring); ASCII as it is (FTS5
    splits ASCII at every non-alphanumeric character and folds its case itself)."""
    if s.isascii():
        return s
    return _NOT_WORD.sub(" ", s).replace("\u0130", "i").replace("\u0131", "i").casefold()
