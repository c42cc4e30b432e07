"""``sessiontree check``: every problem the loader found, with line numbers and offsets.

Scope (as for ``ls``, ``search``, ``usage``, ``index`` and ``export``): PATH, each a
session file or a folder with all its subfolders (their ``.jsonl`` files); without
one, the current directory's sessions in Pi's store (``--cwd DIR``: DIR's); ``--all``,
every project in Pi's store. One line per file, then a total when more than one file
was checked; ``--problems`` shows only the files that have one. A problem's line names
its first five ids and how many more; ``--json`` names them all. ``--catalog`` and
``--no-cache`` are taken as by the other commands; check reads every file in full
whatever the catalog holds.

Exit status 0 when every file is clean, 1 when any file has a problem or cannot be read.
A UTF-8 BOM is reported but does not make a file unclean (Pi ignores it too).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.text import Text

from ..errors import InvalidSessionError, SessionError
from . import _scope
from ._common import CliError, Io, count_progress, load_report, open_session
from ..view import one_line, safe, show, shown_path

_INFORMATIONAL = frozenset({"bom"})
SHOWN_IDS = 5
"""The most ids a problem's line names (the first ones, then how many more): a parent
cycle names every entry in it, and one of 300,000 entries was a 3 MB line. ``--json``
keeps them all (its ``ids``)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``check`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("check", help="report damaged lines and broken links; exit 1 if any",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _scope.add_arguments(p)
    _scope.add_catalog_options(p)  # accepted as everywhere; check reads every file in full
    p.add_argument("--problems", action="store_true", help="show only the files that have a problem (and the total)")
    p.add_argument("--json", action="store_true", help="print one JSON object per file in a list")
    p.set_defaults(func=run)


def check_file(io: Io, path: str, backend: str) -> dict[str, Any]:
    """Open one file and collect its load report (never raises for bad files).

    Args:
        io: where a spinner may show.
        path: the session file.
        backend: ``auto``, ``python`` or ``native``.

    Returns:
        ``{file, ok, entries, issues, error}``; ``ok`` is false when the file cannot be
        opened or has a problem other than a BOM.
    """
    result: dict[str, Any] = {"file": path, "ok": False, "entries": None, "issues": [], "error": None}
    try:
        sm, _ = open_session(io, path, backend)
    except InvalidSessionError as e:
        result["error"] = {"reason": e.reason, "line": e.line, "offset": e.offset, "message": str(e)}
        return result
    except CliError as e:
        result["error"] = {"reason": str(e), "line": None, "offset": None, "message": str(e)}
        return result
    except (OSError, SessionError) as e:
        result["error"] = {"reason": str(e), "line": None, "offset": None, "message": f"{path}: {e}"}
        return result
    with sm:
        result["entries"] = len(sm)
        issues = load_report(sm)
    result["issues"] = [
        {"kind": i.kind, "line": i.line, "offset": i.offset, "ids": list(i.ids), "detail": i.detail}
        for i in issues
    ]
    result["ok"] = all(i.kind in _INFORMATIONAL for i in issues)
    return result


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree check``: the exit status (see the module docstring)."""
    _scope.refuse_bad_catalog(args)
    scope = _scope.resolve(args, io, missing_ok=True)
    files = scope.files()
    if not files:
        # Nothing to check is not "all clean": a typo in a folder name must not pass.
        raise CliError(f"no session files in {safe(scope.where)}{scope.empty_hint()}")
    results = []
    with count_progress(io, "checking", enabled=len(files) > 1) as update:
        for k, f in enumerate(files):
            r = check_file(io, f, args.backend)
            results.append(r)
            if not args.json and not (args.problems and r["ok"]):
                render(io, r)
            update(k + 1, len(files))
    bad = [r for r in results if not r["ok"]]
    if args.json:
        io.write_json(bad if args.problems else results)
    elif len(results) > 1 or args.problems:
        unreadable = sum(1 for r in bad if r["error"] is not None)
        io.print(Text.assemble((f"{len(results):,} file(s) checked: ", "bold"),
                               (f"{len(results) - len(bad):,} clean", "green"), ", ",
                               (f"{len(bad) - unreadable:,} with problems", "red" if len(bad) > unreadable else ""),
                               ", ", (f"{unreadable:,} not readable as sessions", "red" if unreadable else "")))
    return 1 if bad else 0


def _without_path(message: str, path: str) -> str:
    """``message`` without a leading ``PATH: `` (relative or absolute): the path is shown once."""
    for p in (path, os.path.abspath(path)):
        if message.startswith(p + ": "):
            return message[len(p) + 2:]
    return message


def render(io: Io, r: dict[str, Any]) -> None:
    """Print one file's result: a status line, then one line per problem.

    The path is printed once per line, as given; messages from the file are escaped.
    """
    path = shown_path(r["file"])
    err = r["error"]
    if err is not None:
        label = "not a session" if err["line"] is not None or "header" in err["reason"] else "cannot read"
        if err["line"] is not None:
            where = f"{path}:{err['line']}"
            why = str(err["reason"]) + (f"  (byte {err['offset']})" if err["offset"] is not None else "")
        else:
            where = path
            why = _without_path(str(err["message"]), r["file"])
        _say(io, where, Text.assemble((label, "bold red"), ": ", one_line(why, 2000)))
        return
    issues = r["issues"]
    serious = [i for i in issues if i["kind"] not in _INFORMATIONAL]
    if not serious:
        note = f", {len(issues)} note(s)" if issues else ""
        _say(io, path, Text.assemble(("clean", "bold green"), f" ({r['entries']:,} entries{note})"))
    else:
        _say(io, path, Text.assemble((f"{len(serious)} problem(s)", "bold red"), f" ({r['entries']:,} entries kept)"))
    for i in issues:
        line = i["line"] if i["line"] is not None else "-"
        ids = f" [{ids_text(i['ids'])}]" if i["ids"] else ""
        detail = f": {one_line(i['detail'], 2000)}" if i["detail"] else ""
        offset = f"  (byte {i['offset']})" if i["offset"] is not None else ""
        style = "yellow" if i["kind"] in _INFORMATIONAL else "red"
        _say(io, f"{path}:{line}", Text.assemble((i["kind"], style), f"{ids}{detail}", (offset, "dim")), indent="  ")


def ids_text(ids: list[str]) -> str:
    """A problem's ids as its line shows them: the first :data:`SHOWN_IDS`, escaped and
    each cut at 200 characters, then ``… and N more`` when there are more
    (``a, b, c, d, e, … and 299,995 more``)."""
    shown = ", ".join(show(x, 200) for x in ids[:SHOWN_IDS])
    more = len(ids) - SHOWN_IDS
    return shown + (f", … and {more:,} more" if more > 0 else "")


def _say(io: Io, where: str, rest: Text, indent: str = "") -> None:
    """One result line: ``indent``, ``where`` (a path, or ``PATH:LINE``), ``: `` and
    ``rest``. On a terminal narrower than that line, ``where`` goes on a line of its own,
    never cut nor broken (it is pasted back, as ``ls`` prints a path that does not fit),
    and ``rest`` under it, indented, wrapped at its words; piped, one line as before."""
    line = Text.assemble(indent, (where, "bold"), ": ", rest)
    if not io.out.is_terminal or line.cell_len <= io.out.width:
        io.print(line)
        return
    from rich.padding import Padding

    io.print(Text.assemble(indent, (where + ":", "bold")), no_wrap=True, overflow="ignore", crop=False)
    io.print(Padding(rest, (0, 0, 0, len(indent) + 4)))
