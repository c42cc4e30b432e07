"""Full-text search over sessions with the query syntax of Pi's ``/resume``.

The syntax is Pi's (``session-selector-search.ts`` ``parseSearchQuery``): the query is
trimmed; ``re:PATTERN`` makes the rest one case-insensitive regular expression;
otherwise it is split into terms at white space, except inside ``"double quotes"``,
which make a phrase; if a quote is left open, every white-space-separated piece is a
word (quotes included). An empty query, or an empty or invalid ``re:`` pattern, is an
error.

What matches differs from Pi on purpose. Pi filters *sessions*: every term must occur
somewhere in the session's whole text, words fuzzily (their letters in order, gaps
allowed) and phrases anywhere, which over thousands of long sessions matches nearly
everything. Here a hit is an *entry* (see ``_extract``: user and assistant text, tool
call names and arguments, session names), and every term must match that entry's
text, case-insensitively (Python ``re.IGNORECASE``) and at the start of a word (the
character before it is not a letter or digit, ``_words.word_char``):

* a **word** matches where it occurs: ``Session`` finds ``SessionManager``,
  ``Manager`` does not;
* a **phrase** matches where its words occur in order, any run of white space in it
  standing for any run in the text (Pi's normalisation), the last word possibly
  continuing (``"session pars"`` finds ``session parser``);
* ``re:`` — Python's ``re`` syntax (Pi uses JavaScript's; common patterns agree), found
  anywhere.

Hits are ranked as Pi ranks relevance: by the sum over the terms of the position of
their first match in the entry's text (earlier is better), then newest first; or
newest first (``order="recent"``). Each hit says whether its entry is on the session's
current path (root to the last entry).

With a catalog, FTS5 narrows the entries to read: each term's tokens as an FTS5 phrase
whose last token is a prefix, over ``_words.fts_text`` of the entries, which every
match of the rules above satisfies (it starts at a word start, where a token of that
text starts); every candidate is then checked by the rules, so the hits are exactly
those a scan of every entry gives (``no_cache=True``; one exception, a lone U+0345
found by ``ι``, in ``_words``). A query FTS5 cannot narrow (``re:``, terms without
letters or digits) reads every entry of the scope.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .. import _js
from .._time import datetime_from_ms
from ._extract import entries_path, native_scanner
from ._indexer import entries_of
from ._store import checked, py_text, search_text
from ._words import fts_text, word_char

__all__ = ["Query", "SearchHit", "SearchResult", "parse_query", "search_folders"]

Order = Literal["relevance", "recent"]

_SPACE_CLASS = "[" + re.escape(_js.WHITESPACE) + "]"
_SPACE_RUN = re.compile(_SPACE_CLASS + "+")
SNIPPET = 160
"""Characters of text a snippet shows around the first match."""


# ---------------------------------------------------------------------- query
@dataclass(frozen=True)
class Term:
    """One query term: ``kind`` ``"word"`` or ``"phrase"``, and its text."""

    kind: Literal["word", "phrase"]
    text: str


@dataclass(frozen=True)
class Query:
    """A parsed query: terms (all must match), or a regular expression."""

    source: str
    terms: tuple[Term, ...] = ()
    regex: re.Pattern[str] | None = None


def _split_ws(s: str) -> list[str]:
    return [t for t in _SPACE_RUN.split(s) if t]


def parse_query(query: str) -> Query:
    """Parse a query with Pi's ``/resume`` rules (module docstring).

    Raises:
        ValueError: the query is empty or has no terms (``""``), or ``re:`` has an
            empty or invalid pattern.
    """
    trimmed = _js.trim(query)
    if not trimmed:
        raise ValueError("empty query")
    if trimmed.startswith("re:"):
        pattern = _js.trim(trimmed[3:])
        if not pattern:
            raise ValueError("empty regular expression")
        try:
            return Query(query, regex=re.compile(pattern, re.IGNORECASE))
        except re.error as e:
            raise ValueError(f"invalid regular expression: {e}") from None
    terms: list[Term] = []
    buf: list[str] = []
    in_quote = False

    def flush(kind: Literal["word", "phrase"]) -> None:
        v = _js.trim("".join(buf))
        buf.clear()
        if v:
            terms.append(Term(kind, v))

    for ch in trimmed:
        if ch == '"':
            if in_quote:
                flush("phrase")
            else:
                flush("word")
            in_quote = not in_quote
            continue
        if not in_quote and ch in _js.WHITESPACE:
            flush("word")
            continue
        buf.append(ch)
    if in_quote:  # an open quote: plain white-space split, quotes and all
        return Query(query, tuple(Term("word", t) for t in _split_ws(trimmed)))
    flush("word")
    if not terms:
        raise ValueError("the query has no terms")  # e.g. '""' (Pi would match everything)
    return Query(query, tuple(terms))


# -------------------------------------------------------------------- matching
class _Matcher:
    """The rules of the module docstring over one text."""

    def __init__(self, q: Query) -> None:
        self.regex = q.regex
        self.terms: list[tuple[re.Pattern[str], bool]] = []
        for t in q.terms:
            # A word has no white space; a phrase's runs of it match any run.
            body = (_SPACE_CLASS + "+").join(re.escape(p) for p in _split_ws(t.text))
            self.terms.append((re.compile(body, re.IGNORECASE), True))

    @staticmethod
    def _finds(rx: re.Pattern[str], word: bool, text: str, pos: int = 0, end: int | None = None) -> Any:
        for m in rx.finditer(text, pos, len(text) if end is None else end):
            if word and m.start() > 0 and word_char(text[m.start() - 1]):
                continue
            yield m

    def match(self, text: str) -> tuple[int, int] | None:
        """``(score, anchor)``: the sum of the terms' first-match positions and the
        earliest of them; ``None`` if some term does not match."""
        if self.regex is not None:
            m = self.regex.search(text)
            return None if m is None else (m.start(), m.start())
        score, anchor = 0, -1
        for rx, word in self.terms:
            m = next(self._finds(rx, word, text), None)
            if m is None:
                return None
            score += m.start()
            anchor = m.start() if anchor < 0 else min(anchor, m.start())
        return score, max(anchor, 0)

    def spans(self, text: str, lo: int, hi: int) -> list[tuple[int, int]]:
        """Matches of any term inside ``text[lo:hi]``, merged, in order."""
        found: list[tuple[int, int]] = []
        pats = [(self.regex, False)] if self.regex is not None else self.terms
        for rx, word in pats:
            assert rx is not None
            for m in self._finds(rx, word, text, max(0, lo - 200), min(len(text), hi + 200)):
                s, e = max(m.start(), lo), min(m.end(), hi)
                if e > s:
                    found.append((s, e))
        found.sort()
        merged: list[tuple[int, int]] = []
        for s, e in found:
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        return merged


def snippet(text: str, anchor: int, matcher: _Matcher, width: int = SNIPPET) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The text around ``anchor`` on one line (white-space runs as one space, ``…`` where
    cut) and the spans of the matches in it."""
    lo = max(0, anchor - width // 3)
    hi = min(len(text), lo + width)
    lo = max(0, min(lo, hi - width))
    spans = matcher.spans(text, lo, hi)
    out: list[str] = ["…"] if lo > 0 else []
    pos = len(out)
    marks: list[tuple[int, int]] = []
    k = 0
    open_at = -1
    prev_space = False
    for i in range(lo, hi):
        while k < len(spans) and spans[k][1] <= i:
            k += 1
        inside = k < len(spans) and spans[k][0] <= i < spans[k][1]
        if inside and open_at < 0:
            open_at = pos
        if not inside and open_at >= 0:
            marks.append((open_at, pos))
            open_at = -1
        c = text[i]
        if c in _js.WHITESPACE:
            if prev_space:
                continue
            c = " "
            prev_space = True
        else:
            prev_space = False
        out.append(c)
        pos += 1
    if open_at >= 0:
        marks.append((open_at, pos))
    if hi < len(text):
        out.append("…")
    return "".join(out), tuple(marks)


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class SearchHit:
    """One entry that matches.

    Attributes:
        path: the session file (open it with ``sessiontree context PATH --leaf ENTRY``).
        session_id: the header's id.
        session_name: the session's display name, or ``None``.
        cwd: the header's cwd.
        entry_id: the matching entry's id.
        seq: its number among the file's entries (file order, from 0).
        role: ``"user"``, ``"assistant"`` or ``"name"`` (a ``session_info`` entry).
        time: the entry's time (aware UTC), or ``None``.
        on_path: the entry is on the session's current path.
        score: the relevance (lower is better).
        snippet: the text around the first match, on one line.
        marks: ``(start, end)`` of each match in ``snippet``.
    """

    path: str
    session_id: str
    session_name: str | None
    cwd: str
    entry_id: str
    seq: int
    role: str
    time: datetime | None
    on_path: bool
    score: int
    snippet: str
    marks: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SearchResult:
    """A page of hits.

    Attributes:
        hits: the page, best first.
        total: hits in all.
        offset: hits skipped before the page.
        files: session files searched.
    """

    hits: tuple[SearchHit, ...]
    total: int
    offset: int
    files: int


def _order_key(order: Order) -> Any:
    def recent(h: tuple[Any, ...]) -> tuple[Any, ...]:
        t = h[2]
        return (t is None, -(t or 0.0), h[0], h[1])

    def relevance(h: tuple[Any, ...]) -> tuple[Any, ...]:
        return (h[3], *recent(h))

    return recent if order == "recent" else relevance


# ---------------------------------------------------------------------- FTS5
_TOKENIZER = "unicode61 remove_diacritics 0"


def _tokens(conn: sqlite3.Connection, text: str) -> list[str]:
    """FTS5's tokens of ``fts_text(text)``, from a scratch table of this connection."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_tok USING fts5(t, tokenize='{_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_tok_v USING fts5vocab(temp, q_tok, instance)")
    conn.execute("DELETE FROM temp.q_tok")
    conn.execute("INSERT INTO temp.q_tok (t) VALUES (?)", (fts_text(search_text(text)),))
    return [t for (t,) in conn.execute("SELECT term FROM temp.q_tok_v ORDER BY offset")]


def fts_expression(conn: sqlite3.Connection, q: Query) -> str | None:
    """An FTS5 query whose matches include every entry the query matches, or ``None``
    when FTS5 cannot narrow it (module docstring)."""
    if q.regex is not None:
        return None
    parts = []
    for t in q.terms:
        toks = _tokens(conn, t.text)
        if toks:
            parts.append('"' + " ".join(x.replace('"', '""') for x in toks) + '"*')
    return " AND ".join(parts) if parts else None


# ---------------------------------------------------------------------- search
def search_folders(
    query: str | Query,
    folders: Sequence[str],
    *,
    catalog: Any = None,
    no_cache: bool = False,
    order: Order = "relevance",
    limit: int | None = 20,
    offset: int = 0,
    on_progress: Any = None,
    on_bytes: Any = None,
) -> SearchResult:
    """Search the sessions of ``folders`` (see the module docstring for the rules).

    Args:
        query: the query text (Pi's ``/resume`` syntax) or a parsed :class:`Query`.
        folders: the session folders (their ``*.jsonl`` files).
        catalog: the catalog file (default place when ``None``).
        no_cache: read every file instead of the catalog (the same hits).
        order: ``"relevance"`` (Pi's) or ``"recent"`` (newest first).
        limit: hits per page (``None``: all).
        offset: hits to skip.
        on_progress: ``(files done, files)`` while the catalog is brought up to date.
        on_bytes: ``(bytes read, bytes to read)`` likewise.

    Returns:
        The :class:`SearchResult`.

    Raises:
        ValueError: the query is empty or its ``re:`` pattern is empty or invalid.
    """
    from ._run import refresh_for, run

    q = query if isinstance(query, Query) else parse_query(query)
    matcher = _Matcher(q)

    def op(store: Any) -> SearchResult:
        # (path, seq, time, score, found, entry, role, body, anchor)
        hits: list[tuple[Any, ...]] = []

        def sink(f: Any, docs: Sequence[tuple[Any, ...]], _usage: Any) -> None:
            for seq, entry, role, time, body in docs:
                body = search_text(body)
                m = matcher.match(body)
                if m is not None:
                    hits.append((f.path, seq, time, m[0], f, entry, role, body, m[1]))

        found = refresh_for(store, folders, content=True, sink=sink, on_progress=on_progress, on_bytes=on_bytes)
        sessions = [f for f in found if f.row is not None and f.error is None and f.row.problem is None]
        if store is not None:
            by_id = {f.row.id: f for f in sessions if f.row and f.row.id is not None}
            hits = list(_catalog_hits(store.conn, q, matcher, by_id))
        hits.sort(key=_order_key(order))
        page = hits[offset:] if limit is None else hits[offset:offset + limit]
        native = native_scanner()
        paths: dict[int, set[int]] = {}
        out = []
        for path, seq, time, score, f, entry, role, body, anchor in page:
            key = id(f)
            if key not in paths:
                paths[key] = set(entries_path(entries_of(store, f), native=native))
            text, marks = snippet(body, anchor, matcher)
            row = f.row
            out.append(SearchHit(path, row.sid, row.title, row.cwd or "", entry, seq, role,
                                 datetime_from_ms(time) if time is not None else None,
                                 seq in paths[key], score, text, marks))
        return SearchResult(tuple(out), len(hits), offset, len(sessions))

    return run(op, catalog=catalog, no_cache=no_cache, wait=True)


def _catalog_hits(conn: sqlite3.Connection, q: Query, matcher: _Matcher, by_id: dict[int, Any]) -> Any:
    ids = json.dumps(sorted(by_id))
    expr = fts_expression(conn, q)
    cols = "d.file, d.seq, d.entry, d.role, d.time, d.body"
    if expr is None:
        rows = conn.execute(f"SELECT {cols} FROM doc d WHERE d.file IN (SELECT value FROM json_each(?))", (ids,))
    else:
        rows = conn.execute(
            f"SELECT {cols} FROM doc_fts JOIN doc d ON d.id = doc_fts.rowid"
            " WHERE doc_fts MATCH ? AND d.file IN (SELECT value FROM json_each(?))", (expr, ids))
    for file, seq, entry, role, time, body in checked("doc", ("file", "seq", "entry", "role", "time", "body"), rows):
        m = matcher.match(body)
        if m is not None:
            f = by_id[file]
            yield (f.path, seq, time, m[0], f, py_text(entry), role, body, m[1])
