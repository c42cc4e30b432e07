"""``sessiontree tree``: the session tree drawn like a file tree.

How to read it:

* Entries in one column follow each other: each is the child of the row above it in
  that column. The branch holding the current leaf (else the newest) stays in the
  first column, whatever its length.
* A branch point (``┬N``: N children) keeps its continuing child in its own column;
  its other children start abandoned branches, drawn first, behind ``├─`` / ``└─``
  and hanging from a ``│`` spine that joins the branch point to its continuation.
  Siblings share one connector column; a branch point further down draws its own
  spine, so its branches never read as siblings of earlier ones.
* Every leaf is marked: ``*`` the current leaf (also ``← leaf``), ``◇`` the tip of
  another branch (marks, not only colour: they show in a pipe and with
  ``--color never``).
* An entry's label follows its text in brackets; a long one is cut with ``…`` so
  the text keeps at least half of the row's room (in display cells).
* Branches nested deeper than the width allows show their depth as a number
  (``‹12›``) instead of more guides, so no line is wider than the width.
* Long runs of entries with one child each are folded to one ``┆`` line, except
  entries worth seeing (compactions, branch summaries, session names, labelled
  entries, the leaf) and the first and last two of each run; abandoned branches are
  drawn nested two deep, deeper ones as one ``┬ N more branches here`` line each.
  ``--full`` shows every entry; ``--from ID`` draws only the part below one entry
  (an id or a unique prefix, as git takes commits), ``--depth N`` stops N entries
  below the start, ``--nested N`` draws branches nested N deep, and ``--branches``
  shows only roots, branch points and tips, each tip with the size of its branch and
  its first user message.

Only the rows shown are decoded: the structure comes from the index
(``SessionManager.get_shape``). Everything is iterative, so depth does not matter.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from itertools import islice
from typing import Any

from ..view import (PREVIEW_CLIP, AmbiguousIdError, Layout, TreeRow, as_is, entry_preview, format_row, id_width,
                    resolve_id, show, tree_rows, value_text)
from ._common import CliError, Io, count_progress, open_session, spinner
from ._leaf import id_error

_NESTED = 2  # abandoned branches drawn nested this deep unless --nested / --full say otherwise
_MIN_TEXT = 44  # columns left for mark, id, kind and some preview at the deepest guide
_PROGRESS_ROWS = 2000  # decoding this many rows for a pipe shows a progress bar


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``tree`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("tree", help="draw the session tree", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--full", action="store_true", help="show every entry (no folding of linear runs)")
    p.add_argument("--from", dest="start", metavar="ID", default=None,
                   help="draw only the entry ID (or a unique prefix of it) and what lies below it")
    p.add_argument("--depth", type=int, default=None, metavar="N",
                   help="show at most N entries below the start (the roots, or --from); deeper parts are counted")
    p.add_argument("--nested", type=int, default=None, metavar="N",
                   help=f"draw abandoned branches nested up to N deep, deeper ones as one line each "
                        f"(default {_NESTED}; all with --full and --branches)")
    p.add_argument("--branches", action="store_true",
                   help="only roots, branch points and tips, with each tip's branch size and first user message")
    p.add_argument("--width", type=int, default=None,
                   help="line width, 20 to 1,000,000 (default: the terminal's, else $COLUMNS, else 120); never exceeded")
    p.add_argument("--json", action="store_true",
                   help="flat JSON list of nodes in drawing order (id, parentId, kind, preview, label, depth, ...)")
    p.set_defaults(func=run)


MAX_WIDTH = 1_000_000
"""The widest line ``--width`` may ask for (cells)."""


def _width(io: Io, requested: int | None) -> int:
    if requested is not None:
        return requested
    width = io.out_width()
    if width is not None:
        return width
    try:
        return max(20, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return 120


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree tree``: the exit status (see the module docstring)."""
    if args.depth is not None and args.depth < 0:
        raise CliError("--depth must be 0 or more")
    if args.nested is not None and args.nested < 0:
        raise CliError("--nested must be 0 or more")
    if args.width is not None and not 20 <= args.width <= MAX_WIDTH:
        # Past a C size (10**23 raised OverflowError in the regex that measures text).
        shown = f"{args.width:,}" if len(str(args.width)) < 40 else f"a number of {len(str(args.width))} digits"
        raise CliError(f"--width must be at least 20 and at most {MAX_WIDTH:,}, not {shown}")
    sm, _ = open_session(io, args.file, args.backend)
    with sm:
        # Each row's entry is decoded once, a chunk at a time (_Entries): keeping them
        # in the native cache would only grow the memory with the rows drawn.
        sm.cache_budget = 0
        with spinner(io, "reading the tree"):
            shape = sm.get_shape()
            leaf = shape.index(sm.leaf_id) if sm.leaf_id is not None else None
            labels = sm.get_labels()
            labelled = set()
            for t in labels:
                try:
                    labelled.add(shape.index(t))
                except KeyError:
                    pass  # Pi labels any id, one not in the session too
        entries = _Entries(sm, shape.ids)
        full = args.full or args.json
        # --branches lists every tip: nesting there is what the view is for.
        nest = args.nested if args.nested is not None else -1 if full or args.branches else _NESTED
        lay = Layout(shape, leaf, labelled, -1 if args.depth is None else args.depth, entries, nest,
                     id_width(shape.ids))
        roots = list(shape.roots)
        start_depth = 0
        if args.start is not None:
            try:
                start = shape.index(resolve_id(sm, args.start, shape.ids))
            except (AmbiguousIdError, KeyError) as e:
                raise id_error(args.file, "--from", args.start, e) from None
            roots, start_depth = [start], shape.depth(start)
        width = _width(io, args.width)
        cap = max(1, (width - _MIN_TEXT) // 5)
        rows = tree_rows(lay, roots, full=full, branches=args.branches and not args.json, cap=cap,
                         start_depth=start_depth)
        if args.json:
            io.write_json(_json_rows(rows, lay, labels, io))
            return 0
        if not len(shape):
            io.note(f"{show(args.file, 300)}: no entries (a header only)")
            return 0
        color = io.color
        paint = io.styler()
        out: list[str] = []
        # Drawing into a pipe or file: say how far it got on the terminal, when it is long.
        long = io.out_width() is None and (full or args.branches) and len(shape) > _PROGRESS_ROWS
        with count_progress(io, "drawing the tree", enabled=long) as update:
            for k, row in enumerate(entries.prefetching(rows)):
                label = labels.get(shape.ids[row.at]) if row.at is not None and row.at in labelled else None
                plain, segs = format_row(row, lay, label, width)
                out.append("".join(paint(t, st) for t, st in segs) if color else plain)
                if len(out) >= 4096:
                    io.write("\n".join(out) + "\n")
                    out.clear()
                if k % 1024 == 0:
                    update(k, len(shape))
        if out:
            io.write("\n".join(out) + "\n")
    return 0


class _Entries:
    """``Layout.entry``: the decoded entries of the rows about to be drawn, fetched from
    the manager a chunk of rows at a time (one call, one bulk decode per chunk)."""

    CHUNK = 512

    def __init__(self, sm: Any, ids: Any) -> None:
        self.sm = sm
        self.ids = ids
        self.got: dict[int, Any] = {}

    def prefetching(self, rows: Iterator[TreeRow]) -> Iterator[TreeRow]:
        """``rows`` again, fetching the entries of each chunk before yielding it."""
        while True:
            chunk = list(islice(rows, self.CHUNK))
            if not chunk:
                return
            want = [r.at for r in chunk if r.at is not None]
            # Cut to what a preview reads: the lines drawn are mostly tool output.
            got = self.sm.get_entries_by_id([self.ids[i] for i in want], clip=PREVIEW_CLIP)
            self.got = dict(zip(want, got))
            yield from chunk

    def __call__(self, i: int) -> dict[str, Any]:
        e = self.got.get(i)
        if e is None:
            e = self.sm.get_entry(self.ids[i])
        return e if isinstance(e, dict) else {}


def _json_rows(rows: Iterator[TreeRow], lay: Layout, labels: dict[str, str], io: Io) -> list[dict[str, Any]]:
    result = []
    shape = lay.shape
    assert isinstance(lay.entry, _Entries)
    with count_progress(io, "reading the entries", enabled=len(shape) > _PROGRESS_ROWS) as update:
        for row in lay.entry.prefetching(rows):
            i = row.at
            if i is None:
                continue
            entry = lay.entry(i)
            kind, preview = entry_preview(entry, as_is)
            result.append({
                "id": entry.get("id"), "parentId": entry.get("parentId"), "type": entry.get("type"),
                "kind": kind, "preview": value_text(preview, 200), "label": labels.get(shape.ids[i]),
                "children": len(lay.kids(i)), "depth": row.depth, "onPath": row.on_path, "leaf": i == lay.leaf,
            })
            if len(result) % 1024 == 0:
                update(len(result), len(shape))
    return result
