"""``sessiontree usage``: tokens and cost from what Pi recorded, by day, week, month,
session, model or project.

Counted: the ``usage`` of assistant messages, of ``usage`` entries (Pi 0.87+) and of
compaction and branch summaries, with the cost Pi wrote (no price table); "total
tokens" sums each record's own ``totalTokens`` as Pi wrote it, which need not be the sum
of the other columns (in Pi's own sessions it often is not). Each entry
counts once, however many branches share it; a forked or branched session's copies of
its source's entries count once too, charged to the oldest session holding them.
``--active-path`` counts only records on some session's current path (a copy still
charged to its oldest holder, so a session's line can grow when a fork's path takes
in its entries): the difference is what abandoned branches cost. Days, weeks (ISO) and months are in this machine's
time zone (``--utc``: UTC); ``--since``/``--until`` are inclusive dates.

Scope (as for ``ls``, ``search``, ``index``, ``check`` and ``export``): PATH, each a
session file or a folder with all its subfolders; without one, the current
directory's sessions in Pi's store (``--cwd DIR``: DIR's); ``--all``, every project in
Pi's store.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import date, timezone

from . import _scope
from ._common import CliError, Io, byte_progress, unread_note, warn_unread_tz
from .._time import zone_name
from ..view import cells, fold_name, hang, number_column, plain_columns, plain_table, safe, shown_paths

_GROUPS = ("daily", "weekly", "monthly", "session", "model", "project")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``usage`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("usage", help="token and cost report (by day, week, month, session, model, project)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", nargs="?", metavar="REPORT", help=f"{' | '.join(_GROUPS)} (default daily)")
    _scope.add_arguments(p)
    _scope.add_catalog_options(p)
    p.add_argument("--since", type=_date, metavar="DATE", help="from this day on (YYYY-MM-DD or YYYYMMDD)")
    p.add_argument("--until", type=_date, metavar="DATE", help="up to and including this day")
    p.add_argument("--active-path", action="store_true", help="only records on some session's current path (each still charged to its oldest holder)")
    p.add_argument("--utc", action="store_true", help="days, weeks and months in UTC (default: local time)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def _date(text: str) -> date:
    m = re.fullmatch(r"(\d{4})-?(\d{2})-?(\d{2})", text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} (use YYYY-MM-DD)")
    try:
        return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} ({e})") from None


def _days(since: date | None, until: date | None) -> str:
    """The days ``--since``/``--until`` kept, as a report says them: ``""`` (all),
    ``from 2025-11-05 on``, ``up to 2025-11-06``, ``2025-11-05 to 2025-11-06``."""
    if since is not None and until is not None:
        return f"{since.isoformat()} to {until.isoformat()}"
    if since is not None:
        return f"from {since.isoformat()} on"
    return f"up to {until.isoformat()}" if until is not None else ""


_SHORT_TITLES = {"cache read": "cache r", "cache write": "cache w", "total tokens": "total", "cost ($)": "$"}


def _paths_above(heads: list[str], rows: list[tuple[str, ...]]) -> str:
    """A session report wider than the terminal, as ``ls`` and ``search`` show a path
    that does not fit: each row's path (or ``total``) on a line of its own, never cut,
    and its numbers under it, indented, in columns under the titles."""
    numbers = plain_table([heads[1:], *(r[1:] for r in rows)], [True] * (len(heads) - 1)).splitlines()
    out = ["    " + numbers[0]]
    for row, line in zip(rows, numbers[1:]):
        out += [row[0], "    " + line]
    return "\n".join(out) + "\n"


def _blocks(io: Io, heads: list[str], rows: list[tuple[str, ...]], width: int, *, paths: bool) -> None:
    """The report on a terminal too narrow for its table (rich folded the key column
    away): each line's key, then its numbers as ``title value`` pairs hanging under it.
    With ``paths`` (a report by session), a key is a path and stays whole on its line,
    never broken (CONTRACT §10 "Paths": it is pasted back; the terminal wraps it)."""
    from rich.text import Text

    out: list[Text] = []
    for k, row in enumerate(rows):
        # A title and its number are joined by no-break spaces: hang breaks between pairs.
        pairs = "  ".join(f"{t} {v}".replace(" ", "\u00a0") for t, v in zip(heads[1:], row[1:]))
        numbers = hang(pairs, 2, width, lead=2)
        keys = [row[0]] if paths else fold_name(row[0], width)
        style = "bold" if k == len(rows) - 1 else ""  # the total
        out.extend(Text(line, style=style) for line in [*keys, "  " + numbers[0], *numbers[1:]])
    # Every line but a path fits already; a path wider than the terminal is written
    # whole, for the terminal to wrap (soft_wrap: rich breaks no line).
    io.print(Text("\n").join(out), crop=False, soft_wrap=True)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree usage``: 0, or 2 for a bad report name."""
    from ..catalog import usage

    if args.report is None and args.paths and args.paths[0] in _GROUPS:
        args.report = args.paths.pop(0)  # `usage --utc daily`: the report after an option
    if args.report is not None and args.report not in _GROUPS:
        if os.sep in args.report or os.path.exists(args.report):
            args.report, args.paths = None, [args.report, *args.paths]  # `usage PATH`: the default report
        else:
            raise CliError(f"unknown report {args.report!r}: use one of {', '.join(_GROUPS)}", code=2)
    group = args.report or "daily"
    if args.since is not None and args.until is not None and args.since > args.until:
        raise CliError(f"--since {args.since.isoformat()} is after --until {args.until.isoformat()}: no day is both",
                       code=2)
    if not args.utc:
        warn_unread_tz(io)
    scope = _scope.resolve(args, io)
    unread: list[tuple[str, str]] = []
    with byte_progress(io, "indexing sessions", None) as update:
        report = usage(group, list(scope.sources), since=args.since, until=args.until,  # type: ignore[arg-type]
                       active_path=args.active_path, tz=timezone.utc if args.utc else None, on_bytes=update,
                       on_unread=lambda path, why: unread.append((path, why)), **_scope.catalog_options(args, io))
    unread_note(io, unread)
    if args.json and not report.files:  # on stderr, with --json too (CONTRACT §10)
        io.note(f"no recorded usage in 0 session(s) of {safe(scope.where)}{scope.empty_hint()}")
    if args.json:
        io.write_json({
            "report": group, "activePath": args.active_path,
            "since": args.since.isoformat() if args.since else None,
            "until": args.until.isoformat() if args.until else None,
            "timeZone": "UTC" if args.utc else zone_name(), "files": report.files,
            "lines": [x.as_dict() for x in report.lines], "total": report.total.as_dict(),
        })
        return 0
    days = _days(args.since, args.until)
    if not report.lines:
        io.note(f"no recorded usage{' ' + days if days else ''} in {report.files:,} session(s) of {safe(scope.where)}"
                f"{scope.empty_hint()}")
        return 0
    names = {"daily": "day", "weekly": "week", "monthly": "month"}
    keys = shown_paths([x.key for x in report.lines]) if group == "session" else [safe(x.key) for x in report.lines]
    # Piped (as ``ls``): no width to fit, so a key (a session's path) is never folded.
    plain_width = io.plain_width()
    term_width = io.out_width()  # None: not a terminal (rich's rule, without importing it)
    piped = term_width is None
    width = term_width if term_width is not None else plain_width if plain_width is not None else io.out.width
    key_width = max(map(cells, keys)) if piped else min(max(len(k) for k in keys), 40)
    titles = ("records", "input", "output", "cache read", "cache write", "total tokens", "cost ($)")
    # Column by column (a session report has 100,000 numbers): each line's records,
    # five token counts and cost, the total last.
    values = list(zip(*report.lines, report.total))[1:]  # UsageLine's fields after its key, in this order

    def figures(short: bool) -> list[list[str]]:
        out = [number_column(values[0], "full")]
        out += (number_column(c, "short" if short else "full") for c in values[1:6])
        out.append(number_column(values[6], "cost_short" if short else "cost"))
        return out

    # The key column must stay readable: on a narrow terminal numbers go short (61.5M).
    # A pipe has no width to fit but one $COLUMNS gives: there every number is written
    # in full, as scripts read them (trial 57: "2.5M" and a cost of "0.00").
    fitted = not io.plain(sys.stdout) or "COLUMNS" in os.environ
    needed = key_width + sum(map(len, titles)) + 2 * len(titles)  # at least: the titles alone
    cols = figures(False) if needed <= width or not fitted else []
    needed += sum(max(0, *map(len, c), len(t)) - len(t) for t, c in zip(titles, cols))
    short = fitted and needed > width
    if short:
        cols = figures(True)
    heads = [names.get(group, group), *(_SHORT_TITLES.get(t, t) if short else t for t in titles)]
    # The table by columns, each its title first (a report by session has 20,000 lines).
    columns = [[heads[0], *keys, "total"], *([h, *c] for h, c in zip(heads[1:], cols))]
    right = [False] + [True] * len(titles)
    counted = "current paths only" if args.active_path else "every branch"
    foot = f"{report.files:,} session(s); {days + '; ' if days else ''}{counted}; each entry counted once"
    if days or group in names:
        foot += f"; days in {'UTC' if args.utc else safe(zone_name())}"
    number_widths = [max(map(len, c)) for c in columns[1:]]  # numbers are ASCII

    def rows() -> list[tuple[str, ...]]:
        """The report's lines, each its key then its numbers."""
        return list(zip(*(c[1:] for c in columns)))

    if plain_width is not None or group == "session":
        # Written as rich's table would be, without importing rich (about 20 ms of a
        # warm report, and 0.5 ms a line: docs/BENCHMARKS.md, issue 25). The session
        # report's keys are paths, never folded (they are pasted back, as ls prints
        # them): on a terminal too its lines are as long as they must be.
        text = plain_columns(columns, right)
        if plain_width is None and max(map(cells, text.splitlines())) > width:
            if 4 + sum(number_widths) + 2 * (len(number_widths) - 1) > width:
                _blocks(io, heads, rows(), width, paths=group == "session")  # not even the numbers fit on a line
                io.print(foot, style="dim", markup=False, highlight=False)
                return 0
            text = _paths_above(heads, rows())
        io.write(text + foot + "\n")
        return 0
    if not piped and 12 + sum(number_widths) + 2 * len(number_widths) > width:
        _blocks(io, heads, rows(), width, paths=group == "session")  # no table fits: one block per line of the report
        io.print(foot, style="dim", markup=False, highlight=False)
        return 0
    if not piped and max(map(cells, columns[0])) + sum(number_widths) + 2 * len(number_widths) <= width:
        # The table fits as it is: written as rich's table writes it (its titles and
        # total bold, the foot dim and broken at spaces), without importing rich
        # (about 50 ms at a terminal).
        paint = io.styler()
        lines = plain_columns(columns, right).splitlines()
        lines[0], lines[-1] = paint(lines[0], "bold"), paint(lines[-1], "bold")
        lines += (paint(piece, "dim") for piece in hang(foot, 0, width))
        io.write("\n".join(lines) + "\n")
        return 0
    from rich.table import Table  # here: every command starts by importing this module
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    # A number is never cut: each number column is as wide as its widest cell (rich
    # shrank them to "206." on 80 columns); the key column folds to make room (to 12
    # cells at least: a narrower terminal has the blocks above).
    room = width - sum(number_widths) - 2 * len(number_widths)
    key_min = key_width if piped else min(key_width, 24, max(room, 12))
    # At a terminal a key is folded between its parts (view.fold_name), to the width
    # the column gets, where rich would fold it anywhere.
    key_cells = None if piped else max(room, key_min)
    table.add_column(heads[0], overflow="fold", no_wrap=piped, min_width=key_min, width=key_cells)
    for title, w in zip(heads[1:], number_widths):
        table.add_column(title, justify="right", no_wrap=True, min_width=w)
    *body, total = rows()
    for key, *numbers in body:
        # A Text: a name is never read as markup (a project's "[/]" raised MarkupError,
        # "[draft]" vanished, ":smile:" became an emoji: adversary 58).
        table.add_row(Text("\n".join(fold_name(key, key_cells)) if key_cells is not None else key), *numbers)
    table.add_section()
    table.add_row(*total, style="bold")
    fits = key_min + sum(number_widths) + 2 * len(number_widths)
    io.print(table, width=max(needed, width) if piped else None if fits <= width else fits, crop=False)
    io.print(foot, style="dim", markup=False, highlight=False)
    return 0
