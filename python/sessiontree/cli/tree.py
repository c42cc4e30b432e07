"""``sessiontree tree``: the session tree drawn like a file tree.

Layout rules, chosen so that a 100,000-entry linear session stays readable and a deep
tree never walks off the right edge:

* A run of entries with one child each is one column (no indentation per entry).
* At a branch point the other branches are drawn first, each behind ``├─`` and indented
  by one level; the branch holding the current leaf (else the newest) comes last behind
  ``└─`` and continues in the parent's column. Indentation therefore grows only with
  branches nested inside abandoned branches.
* Long linear runs are folded to one ``⋮`` line, except entries worth seeing
  (compactions, branch summaries, session names, labelled entries, the leaf) and the
  first and last two entries of each run. ``--full`` shows every entry.

Everything is iterative (explicit stacks), so depth does not matter.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from typing import Any, Iterator, NamedTuple

from ._common import KIND_STYLES, Io, as_is, entry_preview, fit, one_line, open_session, show

_KEEP_TYPES = frozenset({"compaction", "branch_summary", "session_info"})
_EDGE = 2  # entries kept at each end of a folded run
_MIN_FOLD = 3  # a fold line must hide at least this many entries


class Row(NamedTuple):
    """One output line: an entry (``node`` set) or a fold (``folded`` set)."""

    prefix: str
    node: Any | None
    on_path: bool
    branches: int = 0
    folded: Counter[str] | None = None
    depth: int = 0
    note: str | None = None


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``tree`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("tree", help="draw the session tree", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--full", action="store_true", help="show every entry (no folding of linear runs)")
    p.add_argument("--width", type=int, default=None,
                   help="line width (default: the terminal's, else $COLUMNS, else 120)")
    p.add_argument("--json", action="store_true",
                   help="flat JSON list of nodes in drawing order (id, parentId, kind, preview, label, depth, ...)")
    p.set_defaults(func=run)


def iter_rows(roots: list[Any], leaf_id: str | None, path_ids: set[str], *, full: bool) -> Iterator[Row]:
    """Yield the rows of the drawing in order (iteratively; any depth).

    Args:
        roots: ``SessionManager.get_tree()``.
        leaf_id: the current leaf (its branch is kept in the first column).
        path_ids: ids on the root-to-leaf path.
        full: no folding of linear runs.

    Yields:
        One :class:`Row` per output line.
    """
    main_root: Any = next((r for r in roots if r.entry.get("id") in path_ids), roots[-1] if roots else None)
    stack: list[tuple[Any, str, str, bool, int]] = []
    ordered = [r for r in roots if r is not main_root] + ([main_root] if main_root is not None else [])
    if len(ordered) > 1:
        # Several roots (resetLeaf, orphans) are drawn like branches of an invisible
        # top node, so a root never looks like the continuation of the tree above it.
        yield Row("", None, False, 0, None, 0, f"{len(ordered):,} roots; the one holding the current leaf comes last")
        for root in reversed(ordered):
            if root is main_root:
                stack.append((root, "└─ ", "", root.entry.get("id") in path_ids, 0))
            else:
                stack.append((root, "├─ ", "│  ", False, 1))
    for root in reversed(ordered if len(ordered) == 1 else []):
        on = root is main_root and root.entry.get("id") in path_ids
        stack.append((root, "", "", on, 0))
    while stack:
        node, first_prefix, rest_prefix, on_path, depth = stack.pop()
        chain = [node]
        while len(chain[-1].children) == 1:
            chain.append(chain[-1].children[0])
        yield from _chain_rows(chain, first_prefix, rest_prefix, on_path, depth, leaf_id, full)
        end = chain[-1]
        if len(end.children) >= 2:
            kids = end.children
            main = None
            if on_path:
                main = next((c for c in kids if c.entry.get("id") in path_ids), None)
            if main is None:
                main = kids[-1]
            stack.append((main, rest_prefix + "└─ ", rest_prefix, on_path and main.entry.get("id") in path_ids, depth))
            for child in reversed([c for c in kids if c is not main]):
                stack.append((child, rest_prefix + "├─ ", rest_prefix + "│  ", False, depth + 1))


def _chain_rows(chain: list[Any], first_prefix: str, rest_prefix: str, on_path: bool, depth: int,
                leaf_id: str | None, full: bool) -> Iterator[Row]:
    n = len(chain)

    def row(i: int) -> Row:
        node = chain[i]
        return Row(first_prefix if i == 0 else rest_prefix, node, on_path, len(node.children), None, depth)

    if full or n <= 2 * _EDGE + _MIN_FOLD:
        for i in range(n):
            yield row(i)
        return
    hidden: list[Any] = []
    for i, node in enumerate(chain):
        entry = node.entry
        keep = (i < _EDGE or i >= n - _EDGE or node.label is not None
                or _type(entry) in _KEEP_TYPES or entry.get("id") == leaf_id)
        if not keep:
            hidden.append(node)
            continue
        if hidden:
            yield from _flush(hidden, rest_prefix, on_path, depth)
            hidden = []
        yield row(i)


def _flush(hidden: list[Any], prefix: str, on_path: bool, depth: int) -> Iterator[Row]:
    if len(hidden) < _MIN_FOLD:
        for node in hidden:
            yield Row(prefix, node, on_path, len(node.children), None, depth)
        return
    kinds: Counter[str] = Counter(_kind(n.entry) for n in hidden)
    yield Row(prefix, None, on_path, 0, kinds, depth)


def _type(entry: dict[str, Any]) -> str | None:
    """The entry's ``type`` if it is a string (it may be any JSON value)."""
    etype = entry.get("type")
    return etype if isinstance(etype, str) else None


def _kind(entry: dict[str, Any]) -> str:
    """Kind shown in fold lines: the role of a message, else the entry type (terminal-safe)."""
    if entry.get("type") == "message":
        msg = entry.get("message")
        return one_line(msg.get("role", "?"), 100) if isinstance(msg, dict) else "message"
    return show(entry.get("type"), 100, none="None")


def _fold_text(kinds: Counter[str]) -> str:
    total = sum(kinds.values())
    parts = ", ".join(f"{n:,} {k}" for k, n in kinds.most_common(4))
    more = " …" if len(kinds) > 4 else ""
    return f"  ⋮ {total:,} entries: {parts}{more}"


def _width(io: Io, requested: int | None) -> int:
    if requested:
        return max(20, requested)
    if io.out.is_terminal:
        return io.out.width
    try:
        return max(20, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return 120


def format_row(row: Row, leaf_id: str | None, width: int) -> tuple[str, list[tuple[str, str]]]:
    """Lay out one row within ``width`` cells.

    Args:
        row: from :func:`iter_rows`.
        leaf_id: the current leaf (marked ``*`` and ``← leaf``).
        width: total line width in terminal cells.

    Returns:
        ``(plain_text, [(segment, style), ...])``; the segments join to the plain text.
    """
    segs: list[tuple[str, str]] = [(row.prefix, "bright_black")]
    used = len(row.prefix)
    if row.note is not None:
        text = fit(row.note, width - used)
        segs.append((text, "dim italic"))
        return row.prefix + text, segs
    if row.node is None:
        text = fit(_fold_text(row.folded or Counter()), width - used)
        segs.append((text, "dim italic"))
        return row.prefix + text, segs
    entry = row.node.entry
    raw_id = entry.get("id")
    eid = show(raw_id, 100, none="None")
    is_leaf = raw_id == leaf_id
    kind, preview = entry_preview(entry)
    kind = fit(kind, 40)  # an entry type is whatever the file says; keep the columns
    mark = "* " if is_leaf else "  "
    head = f"{mark}{eid[:8]:<8} {kind:<14} "
    tail_parts = []
    if row.node.label is not None:
        tail_parts.append(f"[{one_line(row.node.label, 200)}]")
    if row.branches >= 2:
        tail_parts.append(f"⑂{row.branches}")
    if is_leaf:
        tail_parts.append("← leaf")
    tail = ("  " + " ".join(tail_parts)) if tail_parts else ""
    room = width - used - len(head) - len(tail)
    # Labels and markers matter more than the preview: shrink the preview first.
    preview = fit(preview, max(room, 0))
    if room < 0:
        tail = fit(tail, max(0, width - used - len(head)))
    dim = "" if row.on_path else " dim"
    segs.append((mark, "bold reverse green" if is_leaf else ""))
    segs.append((f"{eid[:8]:<8} ", "bright_black"))
    segs.append((f"{kind:<14} ", (KIND_STYLES.get(kind, "") + dim).strip()))
    segs.append((preview, "dim" if not row.on_path else ""))
    if tail:
        segs.append((tail, "bold yellow"))
    return row.prefix + head + preview + tail, segs


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree tree``: the exit status (see the module docstring)."""
    sm, _ = open_session(io, args.file, args.backend)
    with sm:
        roots = sm.get_tree()
        leaf_id = sm.leaf_id
        path_ids = {e["id"] for e in sm.get_branch()} if leaf_id is not None else set()
        if args.json:
            io.write_json(_json_rows(iter_rows(roots, leaf_id, path_ids, full=True), leaf_id))
            return 0
        width = _width(io, args.width)
        rows = iter_rows(roots, leaf_id, path_ids, full=args.full)
        color = io.color
        paint = io.styler()
        out: list[str] = []
        for row in rows:
            plain, segs = format_row(row, leaf_id, width)
            out.append("".join(paint(t, st) for t, st in segs) if color else plain)
            if len(out) >= 4096:
                io.write("\n".join(out) + "\n")
                out.clear()
        if out:
            io.write("\n".join(out) + "\n")
    return 0


def _json_rows(rows: Iterator[Row], leaf_id: str | None) -> list[dict[str, Any]]:
    result = []
    for row in rows:
        node = row.node
        if node is None:
            continue
        entry = node.entry
        kind, preview = entry_preview(entry, as_is)
        result.append({
            "id": entry.get("id"), "parentId": entry.get("parentId"), "type": entry.get("type"),
            "kind": kind, "preview": preview[:200], "label": node.label,
            "children": len(node.children), "depth": row.depth, "onPath": row.on_path, "leaf": entry.get("id") == leaf_id,
        })
    return result
