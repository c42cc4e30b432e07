"""``sessiontree search``: entries whose text matches a query, across sessions.

The query syntax is Pi's ``/resume``: words, "quoted phrases", or ``re:PATTERN`` (a
case-insensitive regular expression, Python syntax, matched anywhere). Every term must
match one entry, ignoring case, at the start of a word of its text: a word where it
occurs, a phrase's words in order (white space matching any white space; the last
word may continue). Searched: user and assistant text, tool call names and arguments,
session names. Hits are ranked by where the terms first match (Pi's
relevance; ``--recent``: newest first) and paged (``--limit``, ``--page``); ``*`` marks
an entry on the session's current path. Open a hit with
``sessiontree context FILE --leaf ENTRY``.

Scope (as for ``ls``, ``usage``, ``index``, ``check`` and ``export``): PATH, each a
session file or a folder with all its subfolders; without one, the current
directory's sessions in Pi's store (``--cwd DIR``: DIR's); ``--all``, every project in
Pi's store. The files are read as they are: no index is built first. At a
terminal, a search that read files the catalog's search index does not hold starts
building it after the answer, in a process of its own at a lower priority (what
``sessiontree index`` does), so that the next search reads the index.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any, NoReturn

from . import _scope
from ._common import CliError, Io, at_least, byte_progress, unread_note, warn_unread_tz
from ..view import hang, one_line, safe, shown_path, zoned_time


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``search`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("search", help="full-text search over sessions (Pi's /resume syntax)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", help='words, "a phrase", or re:PATTERN; one that begins with - goes after '
                                 "the options and --: search --limit 5 -- --force")
    _scope.add_arguments(p)
    _scope.add_catalog_options(p)
    p.add_argument("--recent", action="store_true", help="newest first (default: Pi's relevance)")
    p.add_argument("--limit", type=at_least(0), default=20, metavar="N", help="hits per page (default 20; 0: all)")
    p.add_argument("--page", type=at_least(1), default=1, metavar="N", help="which page (default 1)")
    p.add_argument("--json", action="store_true", help="print the hits as JSON")
    p.set_defaults(func=run)
    p.error = functools.partial(_error, p)  # type: ignore[method-assign]


def _error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """argparse's error for ``search``, with a hint when it refused a word beginning
    with ``-``: the option it is close to (``--limt``: ``--limit``), else that a query
    beginning so goes after ``--`` (``search --foo ROOT``)."""
    unknown = [w for w in message.partition("unrecognized arguments: ")[2].split() if w.startswith("-")]
    if unknown:
        import difflib

        options = [o for a in parser._actions for o in a.option_strings]
        near = difflib.get_close_matches(unknown[0].partition("=")[0], options, n=1, cutoff=0.75)
        message += (f"\nhint: did you mean {near[0]}?" if near else
                    f"\nhint: a query that begins with '-' goes after '--': "
                    f"sessiontree search -- {shlex.quote(unknown[0])} [PATH ...]")
    argparse.ArgumentParser.error(parser, message)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree search``: 0 (hits or none), 2 for a bad query."""
    from ..catalog import SearchResult, parse_query, search_json, search_stream

    _open_quote_note(io, args.query)
    try:
        parse_query(args.query)  # a bad query is said before the catalog's notes (adversary 58)
    except ValueError as e:
        raise CliError(f"bad query: {e}", code=2) from None
    limit = args.limit or None
    offset = (args.page - 1) * (args.limit or 0)
    scope = _scope.resolve(args, io)
    options = _scope.catalog_options(args, io, create=False)
    unindexed: list[int] = []
    unread: list[tuple[str, str]] = []
    with byte_progress(io, "reading sessions", None) as update:
        try:
            total, files, hits = (search_json if args.json else search_stream)(
                args.query, list(scope.sources), order="recent" if args.recent else "relevance", limit=limit,
                offset=offset, on_bytes=update, on_unindexed=unindexed.append,
                on_unread=lambda path, why: unread.append((path, why)), **options)
        except ValueError as e:
            raise CliError(f"bad query: {e}", code=2) from None
    unread_note(io, unread)
    later = _index_later(scope.sources, options, sum(unindexed))
    if args.json:
        _write_json({"query": args.query, "total": total, "offset": offset, "files": files}, hits)
        if not files:  # on stderr, with --json too (CONTRACT §10: an empty scope is said)
            io.note(f"no hits in 0 session(s) of {safe(scope.where)}{scope.empty_hint()}")
        if later:  # said where the JSON is not
            io.note(LATER)
        return 0
    result = SearchResult(tuple(hits), total, offset, files)
    if not result.hits:
        msg = f"no hits in {result.files:,} session(s) of {safe(scope.where)}{scope.empty_hint()}"
        if result.total:
            msg = f"no hits on page {args.page} ({result.total:,} in all)"
        io.note(msg + (f"; {LATER}" if later else ""))
        return 0
    first = result.offset + 1
    last = result.offset + len(result.hits)
    more = f"; --page {args.page + 1} for more" if last < result.total else ""
    # "searched": the sessions read, not those with hits (trial 59b read "of 260 in 200
    # session(s)" as hits spread over 200).
    foot = [f"hits {first:,}–{last:,} of {result.total:,} in {result.files:,} session(s) searched{more}",
            "(* on the current path; open one: sessiontree context FILE --leaf ENTRY)"]
    if later:
        foot.append(f"({LATER})")
    warn_unread_tz(io)  # the hits' times are local
    role_w = max(len(h.role) for h in result.hits)
    # Written as rich would, without importing it (about 60 ms of a search at a
    # terminal): styles by `Io.styler`, lines cut to the terminal's width, none piped
    # (CONTRACT §10).
    paint = io.styler()
    width = io.out_width()
    out: list[str] = []
    for h in result.hits:
        for line in hit_lines(h, role_w, width):
            out.append("".join(p if isinstance(p, str) else paint(*p) for p in line))
    for words in foot:  # broken at spaces to the width, as rich wrapped them
        out.extend(paint(piece, "dim") for piece in hang(words, 0, width))
    io.write("\n".join(out) + "\n")
    sys.stdout.flush()
    return 0


LATER = "the search index is being built in the background for the next search"
"""The footer's words when :func:`_index_later` started a build."""


def _index_later(sources: tuple[str, ...], options: dict[str, Any], unindexed: int) -> bool:
    """Start building the catalog and search index of ``sources`` behind the answer
    (``catalog.index_later``) when the search read ``unindexed`` files the index does
    not hold, at a terminal only: a script or pipe asked one question, and a command
    that leaves a process behind would surprise it. Whether one was started."""
    if not unindexed or options["no_cache"] or not sys.stdout.isatty():
        return False
    from ..catalog import index_later

    return bool(index_later(list(sources), catalog=options["catalog"], unindexed=unindexed))


def hit_lines(h: Any, role_w: int, width: int | None) -> list[list[str | tuple[str, str]]]:
    """A hit's lines (each a list of pieces, styled ``(text, style)`` or not): its head
    and its snippet, within ``width`` terminal cells (``None``: no limit, for a pipe).
    A head that does not fit puts the path on a line of its own, never cut (it is
    meant to be pasted back, as ``ls`` prints it); the session's name and the snippet
    are cut to the width, ending in ``…``."""
    head, snippet = _head(h, role_w), _snippet_parts(h)
    if width is None:
        return [head, snippet]
    if _cells(head) <= width:
        return [head, _fit_pieces(snippet, width)]
    return [_fit_pieces(_head(h, role_w, path=False), width), ["    ", (shown_path(h.path), "bold")],
            _fit_pieces(snippet, width)]


def _cells(pieces: list[str | tuple[str, str]]) -> int:
    from ..view import cells

    return cells("".join(p if isinstance(p, str) else p[0] for p in pieces))


def _fit_pieces(pieces: list[str | tuple[str, str]], width: int) -> list[str | tuple[str, str]]:
    """``pieces`` cut to ``width`` cells as :func:`view.fit` cuts their text, styles kept."""
    from ..view import fit

    text = "".join(p if isinstance(p, str) else p[0] for p in pieces)
    fitted = fit(text, width)
    if fitted == text:
        return pieces
    left = len(fitted) - 1  # fit keeps a prefix of the text and adds one "…"
    out: list[str | tuple[str, str]] = []
    for p in pieces:
        t = p if isinstance(p, str) else p[0]
        if left <= 0:
            break
        out.append(p if len(t) <= left else (t[:left] if isinstance(p, str) else (t[:left], p[1])))
        left -= len(t)
    out.append("…")
    return out


def _open_quote_note(io: Io, query: str) -> None:
    """Say on stderr that a quote of ``query`` is not closed: Pi's rule then searches
    every piece as a word, quotes and all, where a phrase was likely meant."""
    if '"' not in query:
        return
    from ..catalog import parse_query

    try:
        if not parse_query(query).open_quote:
            return
    except ValueError:
        return  # a bad query: its error is said by the search
    closed = query.strip() + '"'
    if not closed[closed.rfind('"', 0, -1) + 1:-1].strip():
        closed = ""  # nothing after the open quote (`x"`): closing it makes no phrase
    try:
        parse_query(closed)
    except ValueError:
        closed = ""  # closed, it would be no query (a lone `"`): nothing to propose
    io.note("note: the query's quote is not closed, so each piece was searched as a word (quotes included)"
            + (f"; close it to search a phrase: {safe(closed)}" if closed else ""))


def _head(h: Any, role_w: int, path: bool = True) -> list[str | tuple[str, str]]:
    """A hit's first line: pieces of text, styled ``(text, style)`` or not; its path
    (:func:`view.shown_path`) unless ``path`` is false. The on-path marker has a column
    of its own before the role (padded to ``role_w``, the page's longest), so that it
    never runs into a role."""
    # As wide as a time with its offset ("2025-11-07 10:14 +01:00"), UTC's too: the
    # columns after it stay put in a zone that is UTC in winter.
    when = f"{zoned_time(h.time, seconds=False):<23}" if h.time is not None else "-" * 23
    head: list[str | tuple[str, str]] = [
        (when, "dim"), "  ", ("*" if h.on_path else " ", "bold green"), " ", (f"{h.role:<{role_w}}", "cyan"), "  "]
    if path:
        head += [(shown_path(h.path), "bold"), "  "]
    name = f"  {one_line(h.session_name, 60)}" if h.session_name and not _snippet_is_name(h) else ""
    return [*head, (safe(h.entry_id), "yellow"), (name, "dim")]


def _snippet_is_name(h: Any) -> bool:
    """Whether the hit is on its session's name as the session has it now (its snippet
    line shows the name, so the head leaves it out: the name once). A hit on an
    earlier name keeps the session's name in its head."""
    if h.role != "name" or not isinstance(h.session_name, str):
        return False
    name = " ".join(h.session_name.split())  # the snippet's white space is one space
    text = " ".join(h.snippet.split())
    core = text.strip("…").strip()
    return text == name or (bool(core) and core != text and core in name)


def _snippet_parts(h: Any) -> list[str | tuple[str, str]]:
    """A hit's snippet line, indented, its matches styled."""
    parts: list[str | tuple[str, str]] = ["    "]
    pos = 0
    for s, e in h.marks:
        parts.append(safe(h.snippet[pos:s]))
        parts.append((safe(h.snippet[s:e]), "bold reverse"))
        pos = e
    parts.append(safe(h.snippet[pos:]))
    return parts


def _write_json(head: dict[str, Any], chunks: Any) -> None:
    """The result as one JSON object, its hits written a chunk at a time as they are made
    (``catalog.search_json``: natively made bytes, or hits written here by
    :func:`items_json`; all the hits of a common word never stand in memory at once)."""
    import gc

    from ._common import to_json_bytes

    out = sys.stdout.buffer
    first = True
    quoted: dict[str, str] = {}
    for chunk in chunks:
        if isinstance(chunk, bytes):
            body = chunk
        else:
            paused = gc.isenabled() and len(chunk) > 100
            if paused:  # many small dicts, no cycle among them
                gc.disable()
            try:
                body = items_json(chunk, quoted)
            finally:
                if paused:
                    gc.enable()
        if first:
            out.write(to_json_bytes({**head, "hits": [0]})[:-len(b"0\n  ]\n}")].rstrip(b" ") + body)
            first = False
        else:
            out.write(b",\n" + body)
    out.write(b"\n  ]\n}\n" if not first else to_json_bytes({**head, "hits": []}) + b"\n")
    out.flush()


def items_json(hits: Any, quoted: dict[str, str] | None = None) -> bytes:
    """``hits`` as the items of ``--json``'s ``hits`` list: each object indented by four
    spaces, joined by ``,\\n``, no newline at the end (``src/search/hits_json.rs``
    writes the same bytes natively: ``tests/test_search_json.py``)."""
    from ._common import to_json_bytes

    # A list's items at the depth of the hits: two more spaces on every line.
    return b"  " + to_json_bytes([_hit_json(h, quoted) for h in hits])[2:-2].replace(b"\n", b"\n  ")


def _quote(s: str) -> str:
    """``shlex.quote``, its common case (letters and digits: nothing to quote) first."""
    return s if s.isascii() and s.isalnum() else shlex.quote(s)


def _hit_json(h: Any, quoted: dict[str, str] | None = None) -> dict[str, Any]:
    """A hit as ``--json`` writes it (the shape's home; ``quoted``: paths already quoted
    for the shell, by path)."""
    if quoted is None:
        quoted = {}
    path = quoted.get(h.path)
    if path is None:
        path = quoted[h.path] = shlex.quote(h.path)
    return {
        "path": h.path, "sessionId": h.session_id, "sessionName": h.session_name, "cwd": h.cwd,
        "entryId": h.entry_id, "role": h.role, "time": h.time.isoformat() if h.time is not None else None,
        "onPath": h.on_path, "score": h.score, "snippet": h.snippet, "marks": h.marks,
        "open": f"sessiontree context {path} --leaf {_quote(h.entry_id)}",
    }
