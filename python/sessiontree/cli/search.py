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

Scope: the current directory's sessions (``--cwd PATH``: PATH's), ``--all`` every
project, DIR a folder (``--all``: and its subfolders). The first search of a folder
builds its full-text index in the catalog (``sessiontree index`` does it ahead).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from rich.text import Text

from .._time import local_time
from . import _scope
from ._common import CliError, Io, byte_progress
from ..view import one_line, safe


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``search`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("search", help="full-text search over sessions (Pi's /resume syntax)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", help='words, "a phrase", or re:PATTERN')
    _scope.add_arguments(p)
    p.add_argument("--recent", action="store_true", help="newest first (default: Pi's relevance)")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="hits per page (default 20; 0: all)")
    p.add_argument("--page", type=int, default=1, metavar="N", help="which page (default 1)")
    p.add_argument("--json", action="store_true", help="print the hits as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree search``: 0 (hits or none), 2 for a bad query."""
    from ..catalog import search

    if args.limit < 0 or args.page < 1:
        raise CliError("--limit must be at least 0 and --page at least 1", code=2)
    limit = args.limit or None
    offset = (args.page - 1) * (args.limit or 0)
    with byte_progress(io, "indexing sessions", None) as update:
        try:
            result = search(args.query, _scope.folders(args), order="recent" if args.recent else "relevance",
                            limit=limit, offset=offset, on_bytes=update, **_scope.catalog_options(args, io))
        except ValueError as e:
            raise CliError(f"bad query: {e}", code=2) from None
    if args.json:
        io.write_json({
            "query": args.query,
            "total": result.total,
            "offset": result.offset,
            "files": result.files,
            "hits": [_hit_json(h) for h in result.hits],
        })
        return 0
    if not result.hits:
        msg = f"no hits in {result.files:,} session(s) of {safe(_scope.where(args))}{_scope.subfolder_hint(args)}"
        if result.total:
            msg = f"no hits on page {args.page} ({result.total:,} in all)"
        io.err.print(Text(msg))
        return 0
    for h in result.hits:
        when = local_time(h.time).strftime("%Y-%m-%d %H:%M") if h.time is not None else "-" * 16
        io.print(Text.assemble(
            (when, "dim"), "  ", (f"{h.role:<9}", "cyan"), ("*" if h.on_path else " ", "bold green"), " ",
            (safe(h.path), "bold"), "  ", (safe(h.entry_id), "yellow"),
            (f"  {one_line(h.session_name, 60)}" if h.session_name else "", "dim"),
        ), crop=False, no_wrap=True, overflow="ignore")
        io.print(_snippet(h), crop=False, no_wrap=True, overflow="ignore")
    first = result.offset + 1
    last = result.offset + len(result.hits)
    more = f"; --page {args.page + 1} for more" if last < result.total else ""
    io.print(Text(f"hits {first:,}–{last:,} of {result.total:,} in {result.files:,} session(s){more}"
                  "  (* on the current path; open one: sessiontree context FILE --leaf ENTRY)", style="dim"))
    return 0


def _snippet(h: Any) -> Text:
    t = Text("    ")
    pos = 0
    for s, e in h.marks:
        t.append(safe(h.snippet[pos:s]))
        t.append(safe(h.snippet[s:e]), style="bold reverse")
        pos = e
    t.append(safe(h.snippet[pos:]))
    return t


def _hit_json(h: Any) -> dict[str, Any]:
    return {
        "path": h.path, "sessionId": h.session_id, "sessionName": h.session_name, "cwd": h.cwd,
        "entryId": h.entry_id, "role": h.role, "time": h.time.isoformat() if h.time is not None else None,
        "onPath": h.on_path, "score": h.score, "snippet": h.snippet, "marks": [list(m) for m in h.marks],
        "open": f"sessiontree context {shlex.quote(h.path)} --leaf {shlex.quote(h.entry_id)}",
    }
