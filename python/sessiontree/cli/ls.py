"""``sessiontree ls``: the sessions a session picker shows, newest first.

Scope (as for ``search``, ``usage``, ``index``, ``check`` and ``export``): PATH, each a
session file or a folder with all its subfolders; without one, the current
directory's sessions in Pi's store (``--cwd DIR``: DIR's); ``--all``, every project in
Pi's store. Each session's path is printed as other commands take it. Files that are
not sessions are listed as problems at the end; they never stop the listing. The
listing goes through the catalog (``sessiontree index``): unchanged files are not read
again; ``--no-cache`` reads them all (the same answer).
"""

from __future__ import annotations

import argparse
from typing import Any

from . import _scope
from ._common import Io, count_progress, warn_unread_tz
from ..view import cells, fit, one_line, pad, padded, safe, shown_paths, zoned_times

_PREVIEW = 60
_WHEN = 26  # "2025-11-07 10:14:10 +01:00" (an offset of whole seconds, +00:09:21, is 3 more; UTC 3 fewer)
_CWD_MAX = 60  # cells of the cwd column (--all); a longer cwd is cut at its start with … (its end tells projects apart)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ls`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("ls", help="list sessions like Pi's session picker",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _scope.add_arguments(p)
    _scope.add_catalog_options(p)
    p.add_argument("--json", action="store_true", help="print sessions and problems as JSON")
    p.set_defaults(func=run)


def collect(args: argparse.Namespace, io: Io, scope: Any = None) -> tuple[list[Any], list[dict[str, Any]]]:
    """``(sessions, problems)`` of the scope (``_scope.resolve`` unless given)."""
    from .._listing import ListingProblem, list_folders

    if scope is None:
        scope = _scope.resolve(args, io)
    problems: list[dict[str, Any]] = []

    def on_problem(p: ListingProblem) -> None:
        problems.append({"path": p.path, "reason": p.reason, "line": p.line, "offset": p.offset})

    with count_progress(io, "reading sessions") as update:
        sessions = list_folders(list(scope.sources), update, on_problem, **_scope.catalog_options(args, io))
    return sessions, problems


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree ls``: the exit status (see the module docstring)."""
    scope = _scope.resolve(args, io)
    sessions, problems = collect(args, io, scope)
    empty = not sessions and not problems
    if empty:  # on stderr, with --json too (CONTRACT §10: an empty scope is said)
        io.note(f"no sessions found in {safe(scope.where)}{scope.empty_hint()}")
    if args.json:
        io.write_json({
            "sessions": [
                {"path": s.path, "id": s.id, "name": s.name, "cwd": s.cwd, "created": s.created.isoformat(),
                 "modified": s.modified.isoformat(), "messageCount": s.message_count,
                 "firstMessage": s.first_message, "parentSessionPath": s.parent_session_path}
                for s in sessions
            ],
            "problems": problems,
        })
        return 0
    if empty:
        return 0
    warn_unread_tz(io)  # the listing's times are local
    width = io.out_width()
    io.write("".join(line + "\n" for line in rows(sessions, io.styler(), width)))
    if problems:
        from rich.text import Text

        io.print(Text(f"\n{len(problems)} file(s) are not sessions:", style="bold red"))
        for p in problems:
            where = f":{p['line']}" if p.get("line") else ""
            io.print(Text.assemble("  ", (f"{safe(str(p['path']))}{where}", "bold"), ": ", one_line(p["reason"], 400)))
    return 0


def rows(sessions: list[Any], paint: Any, width: int | None) -> list[str]:
    """The listing's lines: a header, one line per session (two when the path does
    not fit beside its title: the path then on its own line), a count.

    Columns are padded by terminal cells (CJK and emoji are two wide), with no trailing
    spaces, and no line is wider than ``width`` cells (``None``: no limit, for a pipe)
    but for a path longer than the line, which is never cut (it is meant to be taken
    back as an argument). The cwd column shows when the sessions have several cwds.
    Styled segments are written as strings: a picker's thousands of rows through
    ``Console.print`` would cost more than the listing (``Io.styler``).
    """
    counts = [f"{s.message_count:,}" for s in sessions]
    count_w = max([4, *map(len, counts)])
    paths = shown_paths([s.path for s in sessions])
    path_w = max(map(cells, paths), default=4)
    cwds = [one_line(s.cwd, 400) for s in sessions]
    cwd_w = min(_CWD_MAX, max(map(cells, cwds), default=0)) if len(set(cwds)) > 1 else 0
    title_w = _PREVIEW
    fixed = _WHEN + 2 + count_w + 2
    two_lines = False
    if width is not None:
        # Room is taken from the cwd column first (down to 16 cells), then the titles
        # (down to 20); if the path still does not fit, it goes on a line of its own.
        def over() -> int:
            return fixed + title_w + (2 + cwd_w if cwd_w else 0) + 2 + path_w - width

        cwd_w = max(min(cwd_w, 16), cwd_w - max(over(), 0)) if cwd_w else 0
        title_w = max(20, title_w - max(over(), 0))
        if over() > 0:
            # The path on its own line: the title keeps at least 20 cells, the cwd what is left.
            two_lines = True
            room = width - fixed
            cwd_w = min(cwd_w, 16) if cwd_w and room - 2 - min(cwd_w, 16) >= 20 else 0
            title_w = max(1, min(_PREVIEW, room - (2 + cwd_w if cwd_w else 0)))
    head = f"{'modified':<{_WHEN}}  {'msgs':>{count_w}}  {pad(fit('name / first message', title_w), title_w)}"
    head += f"  {pad('cwd', cwd_w)}" if cwd_w else ""
    head += "" if two_lines else "  path"
    lines = [paint(head.rstrip() if two_lines else head, "bold")] if sessions else []
    # Column by column (a history of 20,000 sessions is as many lines).
    titles = padded([one_line(s.name) if s.name else one_line(s.first_message) for s in sessions], title_w)
    cwd_cells = padded(cwds, cwd_w, start=True) if cwd_w else []
    times = zoned_times([s.modified for s in sessions])
    for k, s in enumerate(sessions):
        first = "".join((
            f"{times[k]:<{_WHEN}}",  # a zone that is UTC in winter keeps the column
            f"  {counts[k]:>{count_w}}  ",
            paint(titles[k], "bold" if s.name else ""),
            paint("  " + cwd_cells[k], "cyan") if cwd_w else "",
        ))
        if two_lines:
            lines.append(first.rstrip())
            lines.append(paint("    " + paths[k], "dim"))
        else:
            lines.append(first + paint("  " + paths[k], "dim"))
    lines.append(paint(f"{len(sessions):,} session(s)", "dim"))
    return lines
