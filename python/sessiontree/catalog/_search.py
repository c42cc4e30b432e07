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
character before it is not a letter or digit, ``str.isalnum``):

* a **word** matches where it occurs: ``Session`` finds ``SessionManager``,
  ``Manager`` does not;
* a **phrase** matches where its words occur in order, any run of white space in it
  standing for any run in the text (Pi's normalisation), the last word possibly
  continuing (``"session pars"`` finds ``session parser``);
* ``re:`` — Python's ``re`` syntax (Pi uses JavaScript's; common patterns agree), found
  anywhere, matched by the ``regex`` package (``re``'s syntax and more; it does not
  backtrack without end where ``re`` does, on ``(\\w+\\s?)+;``, and gives up on one
  text after :data:`REGEX_SECONDS`: an error, never a search that does not end).

Hits are ranked as Pi ranks relevance: by the sum over the terms of the position of
their first match in the entry's text (earlier is better), then newest first; or
newest first (``order="recent"``). Each hit says whether its entry is on the session's
current path (root to the last entry).

The files are read as they are, no index first: natively (``src/search.rs``) a byte
prefilter that never misses a match picks the lines to read (for ``re:``, by a run of
letters and digits every match holds, ``_literals``), the files with such lines are
read by the catalog's rules (``_extract``), and each picked entry's text is judged by
the rules above, natively where no Unicode table of Python's is needed (then by
:class:`_Matcher`). Without the extension, and for files the native reader hands back
(version 1, a text whose ``String()`` it does not compute), the Python rules read
every entry. Both give the same hits (``tests/test_search_rules.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any, Literal, NamedTuple

    from regex import Pattern as RegexPattern

    Order = Literal["relevance", "recent"]
    _Hit = tuple[Any, ...]
else:
    from .._tuples import NamedTuple

from .. import _js
from .._select import native_module as native_scanner
from .._time import datetime_from_ms
from ._files import folder_files, folder_key
from ._literals import may_match, required_runs
from ._store import busy, checked_all, py_text, search_text

__all__ = ["Query", "SearchHit", "SearchResult", "parse_query", "search_folders", "search_json", "search_stream"]

_SPACE_CLASS = "[" + re.escape(_js.WHITESPACE) + "]"
_SPACE_RUN = re.compile(_SPACE_CLASS + "+")
SNIPPET = 160
"""Characters of text a snippet shows around the first match."""


# ---------------------------------------------------------------------- query
# Named tuples, not dataclasses: ``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``,
# ``tokenize``), about 7 ms of a warm report's start (docs/BENCHMARKS.md, issue 25).
class Term(NamedTuple):
    """One query term: ``kind`` ``"word"`` or ``"phrase"``, and its text."""

    kind: Literal["word", "phrase"]
    text: str


class Query(NamedTuple):
    """A parsed query: terms (all must match), or a regular expression;
    ``open_quote``: a quote was left open, so every piece is a word (a command says so)."""

    source: str
    terms: tuple[Term, ...] = ()
    regex: RegexPattern[str] | None = None
    open_quote: bool = False


def _split_ws(s: str) -> list[str]:
    return [t for t in _SPACE_RUN.split(s) if t]


def parse_query(query: str) -> Query:
    """Parse a query with Pi's ``/resume`` rules (module docstring).

    Raises:
        ValueError: the query is empty or has no terms (``""``), holds a lone
            surrogate (a command line's bytes that are not UTF-8), or ``re:`` has an
            empty or invalid pattern, or one of over :data:`REGEX_MAX` characters.
    """
    trimmed = _js.trim(query)
    if not trimmed:
        raise ValueError("empty query")
    if not trimmed.isascii():
        try:
            trimmed.encode("utf-8")
        except UnicodeEncodeError:
            # No backend could say what it matches the same way (the native one reads
            # UTF-8): one answer for both.
            raise ValueError("not UTF-8 text: a byte that is not UTF-8, or a lone surrogate") from None
    if trimmed.startswith("re:"):
        pattern = _js.trim(trimmed[3:])
        if not pattern:
            raise ValueError("empty regular expression")
        if len(pattern) > REGEX_MAX:
            raise ValueError(f"a regular expression of {len(pattern):,} characters: at most {REGEX_MAX:,}")
        import regex  # here: a word's or a phrase's search imports none of it

        try:
            return Query(query, regex=regex.compile(pattern, regex.IGNORECASE | regex.VERSION0))
        except regex.error as e:
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
        return Query(query, tuple(Term("word", t) for t in _split_ws(trimmed)), open_quote=True)
    flush("word")
    if not terms:
        raise ValueError("the query has no terms")  # e.g. '""' (Pi would match everything)
    return Query(query, tuple(terms))


# -------------------------------------------------------------------- matching
_WORD_START = r"(?<![^\W_])"  # not after a letter or digit (``str.isalnum``)


REGEX_MAX = 1000
"""Most characters of a ``re:`` pattern. The ``regex`` package's first search with a
long literal grows with its cube and heeds no time-out (1,000 letters 0.2 s, 3,000
5.7 s, 8,000 over two minutes: adversary round 53): a longer pattern is a bad query."""

REGEX_SECONDS = 2.0
"""Most seconds a ``re:`` pattern may take over one entry's text: past them the search
ends with an error (a pattern that backtracks without end would never return, and
``browse``'s picker runs the same queries as the user types). A text of megabytes
takes a pattern that does not backtrack well under it."""


def _timed(call: Any) -> Any:
    """``call()``, its ``TimeoutError`` (the ``regex`` package's, past
    :data:`REGEX_SECONDS`) as the ``ValueError`` of a bad query."""
    try:
        return call()
    except TimeoutError:
        raise ValueError(f"the regular expression took over {REGEX_SECONDS:g} s on one entry's text "
                         "(it backtracks too much: make it simpler)") from None


class _Matcher:
    """The rules of the module docstring over one text (the reference the native
    rules, ``src/search/rules.rs``, are held to)."""

    def __init__(self, q: Query) -> None:
        self.regex = q.regex
        # The runs every match of a `re:` pattern holds: a text without one is no hit,
        # whoever reads it (the native reader hands back no such text).
        self.runs = required_runs(q.regex.pattern) if q.regex is not None else []
        # A word has no white space; a phrase's runs of it match any run. The word start
        # is a look-behind, so a candidate that is not at one does not hide one that
        # starts inside it ("a.a" in "xa.a.a").
        self.terms: list[re.Pattern[str]] = [
            re.compile(_WORD_START + (_SPACE_CLASS + "+").join(re.escape(p) for p in _split_ws(t.text)),
                       re.IGNORECASE)
            for t in q.terms]

    def match(self, text: str) -> tuple[int, int] | None:
        """``(score, anchor)``: the sum of the terms' first-match positions and the
        earliest of them; ``None`` if some term does not match."""
        if self.regex is not None:
            if not may_match(text, self.runs):
                return None
            m = _timed(lambda: self.regex.search(text, timeout=REGEX_SECONDS))  # type: ignore[union-attr]
            return None if m is None else (m.start(), m.start())
        score, anchor = 0, -1
        for rx in self.terms:
            m = rx.search(text)
            if m is None:
                return None
            score += m.start()
            anchor = m.start() if anchor < 0 else min(anchor, m.start())
        return score, max(anchor, 0)

    def spans(self, text: str, lo: int, hi: int) -> list[tuple[int, int]]:
        """Matches of any term inside ``text[lo:hi]``, merged, in order (each term's
        matches one after another from ``lo - 200``, none past ``hi + 200``)."""
        found: list[tuple[int, int]] = []
        pats = [self.regex] if self.regex is not None else self.terms
        for rx in pats:
            assert rx is not None
            a, b = max(0, lo - 200), min(len(text), hi + 200)
            ms = (_timed(lambda: list(rx.finditer(text, a, b, timeout=REGEX_SECONDS)))  # type: ignore[union-attr]
                  if rx is self.regex else rx.finditer(text, a, b))
            for m in ms:
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
class SearchHit(NamedTuple):
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


class SearchResult(NamedTuple):
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


# ---------------------------------------------------------------------- search
_THREADS = max(1, min(4, os.cpu_count() or 1))
_BATCH = 256 << 20
"""Bytes of files one native call reads: what it hands back (texts Python must judge)
stays bounded whatever the history's size."""
_CHUNK = 1000
"""Hits whose snippets one call reads (a stream of all hits holds this many)."""


def _terms(q: Query) -> tuple[list[list[str]] | None, str]:
    """The query as the native rules take it: each term's words (``None`` for ``re:``),
    and the query's non-ASCII characters Python holds uncased (``_sre.unicode_iscased``
    false: they match only themselves)."""
    import _sre  # type: ignore[import-not-found]

    if q.regex is not None:
        return None, ""
    terms = [_split_ws(t.text) for t in q.terms]
    chars = {c for t in terms for w in t for c in w if ord(c) > 0x7F}
    return terms, "".join(sorted(c for c in chars if not _sre.unicode_iscased(ord(c))))


# A hit before its page is made: (path, seq, time, score, ctx, entry, role, body,
# anchor, snippet, marks, on_path, ref). ctx is (sid, title, cwd); body is the text
# when Python builds the snippet; a hit decided natively has no snippet yet (an index
# hit no entry or on_path either) but a ref: (its catalog file id, or None when its
# on_path is known; (rank in _Search.ref_paths, offset, length, role, anchor)) to read
# them by (``_Hit``).


def _header_ctx(header: bytes, name: tuple[bool, Any]) -> tuple[str, str | None, str]:
    """``(session id, title, cwd)`` of a file's header line (``search_files`` gives it)
    and its name (``(seen, name)``).

    A line the stdlib's ``json`` reads whole to an object (one object, valid UTF-8) is
    read by it: for such a line it gives the object the loader's reader gives
    (``tests/test_search_header.py`` holds the two equal), without importing the Python
    loader (``_reader``, orjson, ``dataclasses``: ~13 ms of a warm search that meets a
    file the index does not hold whole, as after an append). Any other line (glued
    objects, invalid UTF-8) is read by ``_reader.read_value``."""
    import json

    try:
        # Decoded strictly first: json.loads of bytes lets encoded surrogates through
        # ("surrogatepass"), where the reader replaces them (U+FFFD each byte).
        h = json.loads(header.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        h = None
    if type(h) is not dict:
        from .._reader import read_value

        h = read_value(header).value
    cwd = h.get("cwd")
    seen, n = name
    title = (_js.trim(n) or None) if seen and isinstance(n, str) else None
    return h["id"], title, cwd if isinstance(cwd, str) else ""


def _native_hits(native: Any, q: Query, matcher: _Matcher, items: list[tuple[str, str, Any]], hits: list[_Hit],
                 order: Order, k: int | None, on_bytes: Any, ref_paths: list[bytes],
                 unread: list[tuple[str, str]]) -> tuple[int, int, list[tuple[str, str, Any]]]:
    """Search ``items`` (``(path, name, stat)``, in path order) as they are, natively:
    the best ``k`` decided hits of each batch and every hit Python judged go to
    ``hits`` (their paths to ``ref_paths``, which refs index), the files that could not
    be read to ``unread`` (``(path, why)``). Returns the sessions searched, the decided
    hits left out, and the files the Python rules must read."""
    terms, uncased = _terms(q)
    sessions = unseen = 0
    python: list[tuple[str, str, Any]] = []
    total = sum(st.st_size for _p, _n, st in items)
    done = 0
    j = 0
    while j < len(items):
        batch: list[tuple[str, str, Any]] = []
        size = 0
        while j < len(items) and (not batch or size < _BATCH):
            batch.append(items[j])
            size += items[j][2].st_size
            j += 1
        paths = [os.fsencode(p) for p, _n, _st in batch]
        files, decided, top, undecided = native.search_files(paths, terms, uncased, _THREADS, k, order == "recent",
                                                             matcher.runs)
        base = len(ref_paths)
        ref_paths.extend(paths)
        for i, r in enumerate(files):
            if r[0] == "python":
                python.append(batch[i])
            elif r[0] == "session":
                sessions += 1
            elif r[0] == "error":  # Rust's io::Error text, without its errno (as Python says it)
                unread.append((batch[i][0], re.sub(r" \(os error \d+\)$", "", str(r[1]))))
        # The header of a file that has hits is read for the hits kept only (a common
        # word's 2,000 headers parsed here cost ~30 ms, for a page of 20).
        ctx: dict[int, tuple[str, str | None, str]] = {}

        def ctx_of(i: int) -> tuple[str, str | None, str]:
            c = ctx.get(i)
            if c is None:
                c = ctx[i] = _header_ctx(files[i][1], files[i][2])
            return c

        unseen += decided - len(top)
        for i, seq, off, length, entry, role, time, on_path, score, anchor, _text in top:
            hits.append((batch[i][0], seq, time, score, ctx_of(i), entry, role, None, anchor, None, None, on_path,
                         (None, (base + i, off, length, role, anchor))))
        for i, seq, _off, _len, entry, role, time, on_path, _s, _a, text in undecided:
            body = search_text(text)  # Python's re decides
            m = matcher.match(body)
            if m is not None:
                hits.append((batch[i][0], seq, time, m[0], ctx_of(i), entry, role, body, m[1], None, None, on_path,
                             None))
        done += size
        if on_bytes is not None:
            on_bytes(done, total)
    return sessions, unseen, python


def _python_hits(native: Any, matcher: _Matcher, items: list[tuple[str, str, Any]], hits: list[_Hit],
                 unread: list[tuple[str, str]]) -> int:
    """Search ``items`` with the Python rules (``_extract``); hits go to ``hits``, the
    files that could not be read to ``unread``. Returns the sessions searched."""
    from ._records import entries_path
    from ._indexer import read_paths, unread_of

    found_docs: list[tuple[Any, Sequence[tuple[Any, ...]]]] = []

    def sink(f: Any, docs: Sequence[tuple[Any, ...]], _usage: Any) -> None:
        found_docs.append((f, docs))

    found = read_paths(items, sink=sink, native=native)
    paths: dict[int, set[int]] = {}
    for f, docs in found_docs:
        row = f.row
        if row is None or f.error is not None or row.problem is not None:
            continue
        for seq, entry, role, time, body in docs:
            body = search_text(body)
            m = matcher.match(body)
            if m is None:
                continue
            if id(f) not in paths:
                paths[id(f)] = set(entries_path(row.entries or b"", native=native))
            hits.append((f.path, seq, time, m[0], (row.sid, row.title, row.cwd or ""), entry, role, body, m[1],
                         None, None, seq in paths[id(f)], None))
    unread.extend(unread_of(found))
    return sum(1 for f in found if f.row is not None and f.error is None and f.row.problem is None)


class _Search:
    """One search's hits before its page is made (``search_folders``, ``search_stream``)."""

    def __init__(self, q: Query, folders: Sequence[str], catalog: Any, no_cache: bool, order: Order,
                 k: int | None, on_progress: Any, on_bytes: Any) -> None:
        self.q = q
        self.matcher = _Matcher(q)
        self.native = native_scanner()
        self.store: Any = None
        self.damaged = False
        self.ref_paths: list[bytes] = []
        self.entries: dict[int, bytes] = {}
        self.key = _order_key(order)
        # The index's decided hits, best first, held natively (``HitKeys``), and the
        # files they index by rank (``SearchScan``; ``_file``).
        self.keys: Any = None
        self.scan: Any = None
        self.files: dict[int, tuple[str, int, Any, int, int]] = {}
        self.ctxs: dict[int, tuple[str, str | None, str]] = {}
        # The native JSON writer (``json``) and, by rank, whether it holds the file's head.
        self.writer: Any = None
        self.heads: dict[int, bool] = {}
        self.hits: list[_Hit] = []
        self.sessions = self.unseen = 0
        self.unread: list[tuple[str, str]] = []  # (path, why): files of the scope not read
        # Files of the scope the catalog's search index does not hold as they are (set
        # by ``_from_index`` when it lists them; ``search_stream``'s ``on_unindexed``).
        self.unindexed: int | None = None
        # Every file of the scope (path, name, stat), when listed: by the freshness
        # check (``_from_index``) or, without one, here.
        self.items: list[tuple[str, str, Any]] | None = None
        if self.native is not None and q.regex is None and not no_cache:
            from ._run import open_store
            from ._store import CatalogError

            # Only a catalog that is there: what it can add is a search index, which
            # only `index` builds.
            self.store = open_store(catalog, busy=5.0, create=False)
            if self.store is not None:
                try:
                    got = self._from_index(folders, order, k)
                except sqlite3.DatabaseError as e:
                    got = None
                    if not busy(e):  # damage: rebuilt, never trusted (the files answer now)
                        with contextlib.suppress(CatalogError, sqlite3.Error, OSError):
                            self.store.rebuild(str(e))
                if got is None:
                    self.close()
                else:
                    self.sessions, self.unseen = got
        items = self.items
        if items is None:
            items = _readable([f for folder in folders for f in folder_files(folder)])
        python: list[tuple[str, str, Any]] = []
        if self.unindexed is None:
            self.unindexed = len(items) if self.native is not None and q.regex is None and not no_cache else 0
        if self.native is not None:
            items.sort(key=lambda x: x[0])
            more, unseen, python = _native_hits(self.native, q, self.matcher, items, self.hits, order, k, on_bytes,
                                                self.ref_paths, self.unread)
            self.sessions += more
            self.unseen += unseen
        else:
            python = items
        if python:
            self.sessions += _python_hits(self.native, self.matcher, python, self.hits, self.unread)
        if on_progress is not None:
            n = len(items) + (len(self.scan) if self.scan is not None else 0)
            on_progress(n, n)
        self.hits.sort(key=self.key)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    @property
    def total(self) -> int:
        return len(self.hits) + self.unseen + (len(self.keys) if self.keys is not None else 0)

    def ordered(self) -> Iterator[_Hit]:
        """Every hit, best first: the index's (made into tuples a chunk at a time)
        merged with the others."""
        if self.keys is None or not len(self.keys):
            return iter(self.hits)
        keys = self.keys

        def indexed() -> Iterator[_Hit]:
            for start in range(0, len(keys), _CHUNK):
                yield from self._index_hits(keys.take(start, _CHUNK))

        if not self.hits:
            return indexed()
        import heapq

        return heapq.merge(indexed(), self.hits, key=self.key)

    def _index_hits(self, top: list[tuple[Any, ...]]) -> list[_Hit]:
        """The index's hits ``top`` (``HitKeys.take``) as hits before their page."""
        out = []
        for rank, seq, off, length, role, time, score, anchor in top:
            path, fid = self._file(rank)[:2]
            out.append((path, seq, time, score, self._ctx(rank), None, role, None, anchor, None, None, None,
                        (fid, (rank, off, length, role, anchor))))
        return out

    def _file(self, rank: int) -> tuple[str, int, Any, int, int]:
        """Indexed file ``rank``: ``(path, catalog id, name as stored, dev, ino)``."""
        got = self.files.get(rank)
        if got is None:
            got = self.files[rank] = self.scan.file(rank)
        return got

    _CTX_COLUMNS = ("sid", "title", "cwd")
    _CTX = f"SELECT {', '.join(_CTX_COLUMNS)} FROM file WHERE id = ? AND name = ? AND dev = ? AND ino = ?"

    def _ctx(self, rank: int) -> tuple[str, str | None, str]:
        """The session id, name and cwd of indexed file ``rank``: read for the files a
        page shows only (the freshness check reads the index ``file_search``, which does
        not hold them). A row that no longer names that file (a concurrent ``index``
        dropped it) makes the page stale, as a rewritten file does.

        Once the catalog was found damaged during this search (and rebuilt: the new
        one holds no rows), read from the file instead.

        Raises:
            StaleSessionError: the file's row is gone since the search read it, the
                catalog is busy, or the file cannot be read as a session any more.
        """
        got = self.ctxs.get(rank)
        if got is None:
            from ..errors import StaleSessionError

            path, fid, name, dev, ino = self._file(rank)
            read: tuple[str, str | None, str] | None = None
            if not self.damaged:
                try:
                    row = self.store.conn.execute(self._CTX, (fid, name, dev, ino)).fetchone()
                    if row is not None:
                        # py_text raises on bytes that are not UTF-8 (damage too).
                        sid, title, cwd = checked_all("file", self._CTX_COLUMNS, [row])[0]
                        if sid is None:  # a file the index holds is a session: it has an id
                            raise sqlite3.DatabaseError("catalog damaged: a session's row holds no id")
                        read = (py_text(sid), py_text(title), py_text(cwd) or "")
                except sqlite3.DatabaseError as e:
                    if busy(e):
                        raise StaleSessionError(f"{path}: the catalog could not be read while it was searched "
                                                f"({e}); search again") from None
                    self._rebuild(e)
            if self.damaged:
                # The rebuilt catalog holds no row: an error here would end the search
                # that the note said reads every session (adversary 59b).
                got = self.ctxs[rank] = self._file_ctx(path)
                return got
            if read is None:
                raise StaleSessionError(f"{path}: dropped from the catalog while it was searched; search again")
            got = self.ctxs[rank] = read
        return got

    def _rebuild(self, e: sqlite3.DatabaseError) -> None:
        """The catalog found damaged (``e``) while the index's hits are made: rebuilt
        (and said), never read again by this search; the files answer from now on."""
        from ._store import CatalogError

        self.damaged = True
        with contextlib.suppress(CatalogError, sqlite3.Error, OSError):
            self.store.rebuild(str(e))

    def _file_ctx(self, path: str) -> tuple[str, str | None, str]:
        """The session id, name and cwd of the file at ``path`` as its listing reads
        them (what the catalog's row holds), read from the file.

        Raises:
            StaleSessionError: it cannot be read as a session now.
        """
        from ..errors import StaleSessionError
        from ._files import FileStat
        from ._indexer import read_paths

        try:
            st = os.stat(path)
            (f,) = read_paths([(path, os.path.basename(path), FileStat(st.st_dev, st.st_ino, st.st_size,
                                                                       st.st_mtime_ns, st.st_ctime_ns))],
                              sink=lambda *_a: None, native=self.native)
        except OSError as e:
            raise StaleSessionError(f"{path}: cannot be read while it was searched ({e}); search again") from None
        row = f.row
        if row is None or f.error is not None or row.problem is not None or row.sid is None:
            raise StaleSessionError(f"{path}: changed while it was searched; search again")
        return row.sid, row.title, row.cwd or ""

    def snippets(self, hits: list[_Hit], threads: int = _THREADS) -> list[Any]:
        """The index hits' snippets, read from their files (releases the GIL)."""
        refs = [h[12][1] for h in hits if h[12] is not None]
        if not refs:
            return []
        terms, uncased = _terms(self.q)
        return self.native.index_snippets(self.ref_paths, refs, terms, uncased, threads)  # type: ignore[no-any-return]

    def page(self, hits: list[_Hit], got: list[Any] | None = None) -> list[SearchHit]:
        """The hits, made: snippets (``got``: :meth:`snippets` of them, read now if
        ``None``), current paths known."""
        import gc

        if got is None:
            got = self.snippets(hits)
        paused = gc.isenabled() and len(hits) > 100
        if paused:  # many small objects, no cycle among them
            gc.disable()
        try:
            return self._page(hits, got)
        finally:
            if paused:
                gc.enable()

    def json(self, hits: list[_Hit], threads: int = _THREADS) -> bytes | None:
        """The hits as the items of ``--json``'s ``hits`` list (:func:`search_json`), made
        natively with their snippets (``HitsJson``: no Python object per hit); ``None``
        where a hit is one only Python writes (judged by Python, a file's text or an id
        that is not UTF-8, a snippet only Python builds, a changed line, a time that is
        not a whole millisecond): then :meth:`page` makes them."""
        w = self._writer()
        if w is None:
            return None
        items = []
        heads = self.heads
        for path, seq, time, score, ctx, _e, _r, _b, _a, _s, _m, on_path, ref in hits:
            if ref is None:
                return None
            key = ref[1]
            ok = heads.get(key[0])
            if ok is None:
                ok = self._head(key[0], path, ctx, ref[0])
            if not ok:
                return None
            items.append((*key, seq, time, score, on_path))
        return w.write(items, threads)  # type: ignore[no-any-return]

    def json_keys(self, start: int, n: int, threads: int = _THREADS) -> bytes | None:
        """:meth:`json` of the index's hits ``[start, start + n)`` (``HitKeys``) when no
        other hit is merged with them: no tuple per hit either."""
        w = self._writer()
        if w is None or self.keys is None:
            return None
        for rank in self.keys.ranks(start, n):
            ok = self.heads.get(rank)
            if ok is None:
                path, fid = self._file(rank)[:2]
                ok = self._head(rank, path, self._ctx(rank), fid)
            if not ok:
                return None
        return w.write_keys(self.keys, start, n, threads)  # type: ignore[no-any-return]

    def _writer(self) -> Any:
        """The native writer of this search's hits (``HitsJson``), or ``None``."""
        if self.writer is None and self.native is not None and self.q.regex is None:
            terms, uncased = _terms(self.q)
            self.writer = self.native.HitsJson(self.ref_paths, terms, uncased)
        return self.writer

    def _head(self, rank: int, path: str, ctx: tuple[str, str | None, str], file: int | None) -> bool:
        """Give the writer what the hits of file ``rank`` share (``file``: its catalog
        id, whose current path the hits' ``on_path`` is read from); ``False`` when
        Python must write them."""
        bits = self._path(file, path) if file is not None else None
        try:
            self.writer.head(rank, path, ctx[0], ctx[1], ctx[2], f"sessiontree context {shlex.quote(path)} --leaf ",
                             bits)
            ok = True
        except UnicodeEncodeError:  # a lone surrogate: JSON output escapes it in Python
            ok = False
        self.heads[rank] = ok
        return ok

    def _page(self, hits: list[_Hit], got: list[Any]) -> list[SearchHit]:
        it = iter(got)
        out = []
        for path, seq, time, score, ctx, entry, role, body, anchor, snip, marks, on_path, ref in hits:
            if ref is not None:
                kind, entry, *rest = next(it)
                if kind == "done":
                    snip, marks = rest[0], tuple(tuple(x) for x in rest[1])
                elif kind == "text":
                    body = search_text(rest[0])
                else:  # rewritten since the search read it (an append keeps its lines)
                    from ..errors import StaleSessionError

                    raise StaleSessionError(f"{path}: rewritten while it was searched; search again")
                if ref[0] is not None:
                    on_path = _on(self._path(ref[0], path), seq)
            if snip is None:
                snip, marks = snippet(body, anchor, self.matcher)
            out.append(SearchHit(path, ctx[0], ctx[1], ctx[2], entry, seq, role,
                                 datetime_from_ms(time) if time is not None else None, on_path, score, snip, marks))
        return out

    def _path(self, file: int, path: str) -> bytes:
        """The entry numbers on the current path of catalog file ``file`` (at ``path``),
        as a bitmap (:func:`_on`: thousands of files' sets would not be small)."""
        if file not in self.entries:
            record = None
            if not self.damaged:
                try:
                    record = self.store.entries(file)
                except sqlite3.DatabaseError as e:
                    if not busy(e):  # damage: rebuilt, never trusted
                        self._rebuild(e)
            if not record:  # no record (or a row gone since): read from the file instead
                from ._extract import scan_file

                record = scan_file(path, 0, b"", False, 1 << 62, native=self.native)[5]
            if self.native is not None:
                # Natively: `_extract` (and the Python reader, orjson) stay unimported by
                # a page of hits from the index: about 15 ms of a warm search's start.
                seqs = self.native.entries_path(record)
            else:
                from ._records import entries_path

                seqs = entries_path(record)
            bits = bytearray((max(seqs) >> 3) + 1 if seqs else 0)
            for q in seqs:
                bits[q >> 3] |= 1 << (q & 7)
            self.entries[file] = bytes(bits)
        return self.entries[file]

    # What the freshness check needs, all in the index ``file_search``: reading the rows
    # walked to their ends (past ``first_message``), 3x the time at 20,000 files.
    _ROW_COLUMNS = ("name", "id", "dev", "ino", "size", "mtime_ns", "ctime_ns", "l_end", "tail", "problem", "old",
                    "epoch", "s_end")
    _ROW = f"SELECT {', '.join(_ROW_COLUMNS)} FROM file INDEXED BY file_search WHERE folder = ?"

    def _from_index(self, folders: Sequence[str], order: Order, k: int | None) -> tuple[int, int] | None:
        """The hits the search index gives for the files it holds as they are
        (unchanged since they were indexed), into ``self.hits``: the best ``k`` of its
        decided ones and every one only Python decides; ``(sessions, decided hits left
        out)``, or ``None`` when the index cannot answer (no segments,
        a term without ASCII letters or digits, a damaged or vanished segment: the
        files are read instead). ``self.items`` gets the files listed that the index
        does not hold (every file listed, when it cannot answer).

        The check is native (``SearchScan``, the rule ``search::index::Row::held``): the
        folders are listed and ``stat``-ed on a thread of their own while the rows are
        read, and nothing is made per file in Python (at 20,000 files, about 100 ms of
        CPU where the rows, the stats and the paths were Python objects).

        Raises:
            sqlite3.DatabaseError: the catalog is damaged (or busy).
        """
        from . import _segments
        from ._files import made

        store = self.store
        conn = store.conn
        try:
            # One snapshot: the segment list and the rows that say how far each file's
            # pieces reach agree (an indexer committing a new segment and the s_end it
            # moves between the two reads hid that file's new hits: round 50, N1).
            conn.execute("BEGIN")
            try:
                segs = store.segments()
                if not segs:
                    return None
                scan = self.native.SearchScan([os.fsencode(f) for f in folders])
                for folder in folders:
                    fid = store.folder_id(folder_key(folder)[0], create=False)
                    if not scan.folder(conn.execute(self._ROW, (fid,)) if fid is not None else ()):
                        raise sqlite3.DatabaseError("catalog damaged: a file row holds a value the catalog never "
                                                    "writes")
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except sqlite3.OperationalError:
            return None  # busy
        self.items = _readable(made(scan.others()))
        self.unindexed = len(self.items)
        held = len(scan)
        if not held:
            return None

        def unanswered() -> None:
            self.items = _readable(made(scan.listed()))

        terms, uncased = _terms(self.q)
        seg_paths = [os.fsencode(os.path.join(store.segments_dir, s[0])) for s in segs]
        try:
            total, top, unsure, stale = scan.query(seg_paths, terms, uncased, k, order == "recent", _THREADS)
        except ValueError:
            unanswered()
            return None  # a term the index cannot narrow
        except OSError:
            # Damaged: dropped, built again by the next `index`. A segment folder that
            # cannot be used (a file or FIFO in its place, its lock a folder) is no error
            # for a search either (CONTRACT §7): the files are read. A segment an indexer
            # merged away since the list was read is no damage: the list changed.
            dropped = False
            with contextlib.suppress(OSError), _segments.locked(store, wait=False) as held_lock:
                if held_lock:
                    with contextlib.suppress(sqlite3.Error):
                        if store.segments() == segs:
                            _segments.drop_all(store)
                            dropped = True
            unanswered()
            if dropped:
                self.unindexed = len(self.items or ())  # the index holds nothing now
            return None
        if stale:
            unanswered()
            return None

        self.scan = scan
        self.ref_paths = scan.paths()
        for rank, seq, _off, entry, role, time, text in unsure:
            body = search_text(text)
            m = self.matcher.match(body)
            if m is not None:
                path, fid = self._file(rank)[:2]
                self.hits.append((path, seq, time, m[0], self._ctx(rank), entry, role, body, m[1], None,
                                  None, _on(self._path(fid, path), seq), None))
        self.keys = top
        return held, total - len(top)


def _readable(listed: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """``(path, name, stat)`` of the files of a listing (``(name, path, stat or
    OSError)``) that could be ``stat``-ed: the files a search reads."""
    return [(path, name, st) for name, path, st in listed if not isinstance(st, OSError)]


def _on(bits: bytes, seq: int) -> bool:
    """Entry ``seq`` is in the bitmap ``bits`` (``_Search._path``)."""
    return (seq >> 3) < len(bits) and bool(bits[seq >> 3] >> (seq & 7) & 1)


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
        catalog: the catalog file (default place when ``None``): its search index
            answers for the files it holds as they are.
        no_cache: read every file (the same hits).
        order: ``"relevance"`` (Pi's) or ``"recent"`` (newest first).
        limit: hits per page (``None``: all).
        offset: hits to skip.
        on_progress: ``(files done, files)`` once the files are read.
        on_bytes: ``(bytes read, bytes to read)`` while the files are read.

    Returns:
        The :class:`SearchResult`.

    Raises:
        ValueError: the query is empty or its ``re:`` pattern is empty or invalid.
    """
    total, files, hits = search_stream(query, folders, catalog=catalog, no_cache=no_cache, order=order, limit=limit,
                                       offset=offset, on_progress=on_progress, on_bytes=on_bytes)
    return SearchResult(tuple(hits), total, offset, files)


def _start(query: str | Query, folders: Sequence[str], catalog: Any, no_cache: bool, order: Order,
           limit: int | None, offset: int, on_progress: Any, on_bytes: Any,
           on_unindexed: Any = None, on_unread: Any = None) -> tuple[_Search, int, Iterator[_Hit], int, int | None]:
    """A search run (:class:`_Search`), its total, the hits of its page, best first, and
    the page's bounds (``offset``, ``end``)."""
    import itertools
    import sys

    if offset < 0 or (limit is not None and limit < 0):
        raise ValueError(f"limit and offset must be at least 0 (limit {limit}, offset {offset})")
    # No history holds sys.maxsize hits: a page past it is empty, an end past it is "all"
    # (the native side counts in 64 bits).
    offset = min(offset, sys.maxsize)
    end = None if limit is None or offset + limit > sys.maxsize else offset + limit
    q = query if isinstance(query, Query) else parse_query(query)
    s = _Search(q, folders, catalog, no_cache, order, end, on_progress, on_bytes)
    if on_unindexed is not None:
        on_unindexed(s.unindexed)
    from ._files import tell_unread

    tell_unread(on_unread, folders, s.unread)
    return s, s.total, itertools.islice(s.ordered(), offset, end), offset, end


def search_stream(
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
    on_unindexed: Callable[[int], None] | None = None,
    on_unread: Callable[[str, str], None] | None = None,
) -> tuple[int, int, Iterator[SearchHit]]:
    """:func:`search_folders` with its page as an iterator: ``(total, sessions searched,
    hits)``, the hits made (their snippets read) a thousand at a time, so that all the
    hits of a common word go out with no more than that many in memory.

    ``on_unindexed``: called once the hits are found with the number of files a search
    index could have answered for (a word or phrase query, natively, ``no_cache``
    false) that were read from their bytes: none is in the catalog's search index as
    it now is. ``index_later`` builds it behind the answer.

    ``on_unread``: called with ``(path, why)`` for each folder of the scope that cannot
    be listed, then each ``.jsonl`` that could be ``stat``-ed but not read (permission
    denied, an I/O error, gone since it was listed), once the hits are found: they are
    searched as no session (CONTRACT §7).

    Raises:
        ValueError: the query is empty or its ``re:`` pattern is empty or invalid; a
            negative ``limit`` or ``offset``.
    """
    import itertools

    s, total, page, _o, _e = _start(query, folders, catalog, no_cache, order, limit, offset, on_progress, on_bytes,
                                    on_unindexed, on_unread)
    first = list(itertools.islice(page, _CHUNK))

    def chunks() -> Iterator[list[_Hit]]:
        chunk = first
        while chunk:
            yield chunk
            chunk = list(itertools.islice(page, _CHUNK))

    def made() -> Iterator[SearchHit]:
        # The next chunk's snippets are read (natively, on one thread) while this one's
        # hits are made and written (in Python, on the other).
        from concurrent.futures import ThreadPoolExecutor

        try:
            with ThreadPoolExecutor(1) as ahead:
                it = chunks()
                chunk = next(it, None)
                nxt = ahead.submit(s.snippets, chunk, 1) if chunk else None
                while chunk:
                    assert nxt is not None
                    got = nxt.result()
                    following = next(it, None)
                    nxt = ahead.submit(s.snippets, following, 1) if following else None
                    yield from s.page(chunk, got)
                    chunk = following
        finally:
            s.close()

    if len(first) < _CHUNK:  # one page: made now (and the catalog closed)
        try:
            hits = s.page(first)
        finally:
            s.close()
        return total, s.sessions, iter(hits)
    return total, s.sessions, made()


def search_json(
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
    on_unindexed: Callable[[int], None] | None = None,
    on_unread: Callable[[str, str], None] | None = None,
) -> tuple[int, int, Iterator[bytes | list[SearchHit]]]:
    """:func:`search_stream` with its hits as ``sessiontree search --json`` writes them
    (the shape's home: ``cli/search.py``): ``(total, sessions searched, chunks)``, each
    chunk of up to a thousand hits either the items of the ``hits`` list as bytes, made
    natively (``_Search.json``: for 72,546 hits of a common word about 0.4 s of CPU
    less than a Python object, a dict and a serializer per hit, docs/BENCHMARKS.md), or
    where a hit is one only Python writes, the chunk's :class:`SearchHit` list.

    Raises:
        ValueError: as :func:`search_stream`.
    """
    import itertools

    s, total, page, offset, end = _start(query, folders, catalog, no_cache, order, limit, offset, on_progress,
                                         on_bytes, on_unindexed, on_unread)

    def chunks() -> Iterator[bytes | list[SearchHit]]:
        try:
            keys = s.keys
            if keys is not None and not s.hits and s.native is not None:  # the index's hits alone
                stop = len(keys) if end is None else min(end, len(keys))
                for start in range(min(offset, stop), stop, _CHUNK):
                    n = min(_CHUNK, stop - start)
                    got = s.json_keys(start, n)
                    yield s.page(s._index_hits(keys.take(start, n))) if got is None else got
                return
            while True:
                chunk = list(itertools.islice(page, _CHUNK))
                if not chunk:
                    return
                got = s.json(chunk)
                yield s.page(chunk) if got is None else got
        finally:
            s.close()

    return total, s.sessions, chunks()
