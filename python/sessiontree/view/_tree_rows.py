"""``sessiontree tree``'s drawing: the tree as text rows, from the shape alone.

How to read the drawing is ``sessiontree tree --help`` (``cli/tree.py``'s docstring).
A :class:`Layout` holds what the drawing needs (the shape, the leaf, the labelled
entries, the limits); :func:`tree_rows` yields the rows in order and :func:`format_row`
lays one out within a width in terminal cells (``browse``'s tree pane draws its rows
with it too). Only the rows shown are decoded (``Layout.entry``). Everything is
iterative, so depth does not matter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ..schema import CodeColumn
from ._cells import cells, fit
from ._drawing import BRANCH_MARK, EDGE, MIN_FOLD, fold_text
from ._entries import KEEP_TYPES, KIND_STYLES, entry_preview
from ._ids import SHORT_ID
from ._preview import content_text
from ._text import ABSENT, one_line, show

__all__ = ["TreeRow", "Layout", "tree_rows", "format_row"]

_SPINE, _FORK, _LAST, _PIPE, _GAP, _MORE = "│ ", "├─ ", "└─ ", "│  ", "   ", "└┄ "


class TreeRow(NamedTuple):
    """One output line: an entry (``at`` set: its number), a fold (``folded``) or a note."""

    guides: tuple[str, ...]
    at: int | None
    on_path: bool
    depth: int = 0  # abandoned branches this row is nested in
    folded: Counter[str] | None = None
    note: str | None = None
    hidden: int = 0  # --branches: entries of this stretch not shown before this row
    summary: str | None = None  # --branches, a tip: the first user text of its branch
    size: int = 0  # --branches, a tip: entries of its branch (after the branch point)


class Layout:
    """What the drawing needs to know about the tree: the shape (no entry decoded), the
    leaf, the labelled entries, ``--depth`` and ``--nested`` (-1: no limit),
    ``entry(i)``, which decodes entry ``i`` (only for rows shown), and how many
    characters of each id are shown (``_ids.id_width``)."""

    def __init__(self, shape: Any, leaf: int | None, labelled: set[int], max_depth: int,
                 entry: Callable[[int], dict[str, Any]], nest: int = -1, id_width: int = SHORT_ID) -> None:
        self.shape = shape
        self.id_width = id_width
        self.leaf = leaf
        self.max_depth = max_depth
        self.nest = nest
        self.entry = entry
        self.first, self.child = shape.children_table()
        parents = shape.parents
        self.on_path: set[int] = set()
        x = leaf
        while x is not None and x >= 0 and x not in self.on_path:
            self.on_path.add(x)
            x = parents[x]
        # The entries a fold never hides, and every entry's kind as a code
        # (_kind_names[code]): found in C over the shape's code columns, not by Python
        # code per entry (0.3 s per 800k entries).
        self._kind_codes, self._kind_names, self._keep, self._odd = _kind_table(shape)
        self._prefixes: dict[tuple[tuple[str, ...], int], tuple[str, int]] = {}
        self._keep.update(labelled)
        if leaf is not None:
            self._keep.add(leaf)

    def prefix(self, guides: tuple[str, ...], width: int) -> tuple[str, int]:
        """A row's guides cut to leave 8 cells of ``width``, and the cells they take (the
        rows of a column share their guides: worked out once per column)."""
        got = self._prefixes.get((guides, width))
        if got is None:
            text = fit("".join(guides), max(0, width - 8))
            got = self._prefixes[(guides, width)] = (text, cells(text))
        return got

    def kids(self, i: int) -> Any:
        """Children of ``i`` in ``get_tree`` order."""
        a, b = self.first[i], self.first[i + 1]
        if b - a == 1:
            return (self.child[a],)
        return self.child[a:b] if b > a else ()

    def main_child(self, kids: Any) -> int:
        """The child that continues in the column: the one on the leaf's path, else the newest."""
        for c in kids:
            if c in self.on_path:
                return c  # type: ignore[no-any-return]
        return kids[-1]  # type: ignore[no-any-return]

    def keep(self, i: int) -> bool:
        """Shown even inside a folded run: the leaf, a labelled entry, a compaction, a
        branch summary, a session name."""
        return i in self._keep

    def kept_in(self, numbers: list[int]) -> list[int]:
        """The positions in ``numbers`` of the entries :meth:`keep` keeps, ascending."""
        keep = self._keep
        if keep.isdisjoint(numbers):
            return []
        return [k for k, i in enumerate(numbers) if i in keep]

    def kind(self, i: int) -> str:
        """Kind shown in fold lines: a message's role, else the entry type."""
        odd = self._odd.get(i)
        return odd if odd is not None else self._kind_names[self._kind_codes[i]]

    def kinds(self, numbers: list[int]) -> Counter[str]:
        """``Counter(kind(i) for i in numbers)``, in the same order (first occurrence),
        counted over the codes in C."""
        if self._odd and not self._odd.keys().isdisjoint(numbers):
            return Counter(map(self.kind, numbers))
        out: Counter[str] = Counter()
        for code, k in Counter(map(self._kind_codes.__getitem__, numbers)).items():
            out[self._kind_names[code]] += k  # two codes may have one name
        return out


def _kind(etype: Any, role: Any) -> str:
    """A message's role, else its entry type (as ``sessiontree tree`` folds them)."""
    if etype == "message":
        return "message" if role is None else one_line(role, 100)
    return etype if isinstance(etype, str) else str(etype)


def _kind_table(shape: Any) -> tuple[Any, list[str], set[int], dict[int, str]]:
    """``(codes, names, keep, odd)``: every entry's kind is ``names[codes[i]]`` unless
    ``odd`` names it (a role Pi does not write, spelled by the entry); ``keep`` holds
    the entries of the types a fold never hides."""
    types, roles = shape.types, shape.roles
    if not (isinstance(types, CodeColumn) and isinstance(roles, CodeColumn)
            and len(types.names) <= 16 and len(roles.names) <= 16 and types.others is None):
        kinds = list(map(_kind, types, roles))
        names = list(dict.fromkeys(kinds))
        code_of = {k: c for c, k in enumerate(names)}
        return [code_of[k] for k in kinds], names, {i for i, t in enumerate(types) if t in KEEP_TYPES}, {}
    t, r = types.codes, roles.codes
    # Code = role code << 4 | type code, byte by byte: one OR of the two columns read
    # as integers (the nibbles do not overlap, so nothing carries).
    high = r.translate(bytes(b << 4 & 0xFF for b in range(256)))
    codes = (int.from_bytes(t, "little") | int.from_bytes(high, "little")).to_bytes(len(t), "little")
    names = [""] * 256
    for rc, role in enumerate(roles.names):
        for tc, etype in enumerate(types.names):
            names[rc << 4 | tc] = _kind(etype, role)
    odd = {i: _kind("message", role) for i, role in (roles.others or {}).items()}
    keep: set[int] = set()
    for tc, etype in enumerate(types.names):
        if etype in KEEP_TYPES:
            code = bytes((tc,))
            at = t.find(code)
            while at >= 0:
                keep.add(at)
                at = t.find(code, at + 1)
    return codes, names, keep, odd


def _guides(depth_cells: tuple[str, ...], cap: int, depth: int) -> tuple[str, ...]:
    """The guide cells of a row, at most ``cap`` nesting levels drawn: deeper ones are
    replaced by the depth as a number."""
    if depth <= cap:
        return depth_cells
    # Each nesting level is two cells (spine + connector); keep the outer levels and
    # the row's own connector.
    keep = 2 * (cap - 1)
    return (*depth_cells[:keep], f"‹{depth}›".ljust(6), depth_cells[-1])


def tree_rows(lay: Layout, roots: list[int], *, full: bool, branches: bool, cap: int,
              start_depth: int = 0) -> Iterator[TreeRow]:
    """Yield the rows of the drawing in order (iteratively; any depth).

    Args:
        lay: the tree.
        roots: where to start (the shape's roots, or the ``--from`` entry).
        full: no folding of linear runs.
        branches: only roots, branch points and tips.
        cap: nesting levels drawn before the depth is shown as a number.
        start_depth: ``shape.depth`` of the start (``--depth`` counts from it).

    Yields:
        One :class:`TreeRow` per output line.
    """
    # A task draws one column: (first entry, guides of its first row, guides of the
    # rows after it, nesting depth, is it the start of an abandoned branch).
    stack: list[tuple[int, tuple[str, ...], tuple[str, ...], int, bool]] = []
    main_root = lay.main_child(roots) if roots else None
    others = [r for r in roots if r != main_root]
    if others:
        # Several roots (resetLeaf, orphans) hang from an invisible top like abandoned
        # branches; the one holding the current leaf continues in the first column.
        yield TreeRow((), None, False, note=f"{len(roots):,} roots; the one holding the current leaf is drawn last, "
                                         "in the first column")
    if main_root is not None:
        stack.append((main_root, (), (), 0, False))
    if others and lay.nest == 0:
        yield TreeRow((_SPINE, _MORE), None, False, 1, note=_more(len(others), "root", None))
        others = []
    for k in range(len(others) - 1, -1, -1):
        last = k == len(others) - 1
        stack.append((others[k], (_SPINE, _LAST if last else _FORK), (_SPINE, _GAP if last else _PIPE), 1, True))
    while stack:
        first, first_guides, guides, depth, side = stack.pop()
        yield from _column(lay, first, first_guides, guides, depth, side, stack, full=full, branches=branches,
                           cap=cap, start_depth=start_depth)


def _column(lay: Layout, v: int, first_guides: tuple[str, ...], guides: tuple[str, ...], depth: int, side: bool,
            stack: list[Any], *, full: bool, branches: bool, cap: int, start_depth: int) -> Iterator[TreeRow]:
    """The rows of one column, up to its first branch point (whose branches and
    continuation are pushed on ``stack``) or its tip."""
    shape = lay.shape
    run = [v]
    first, child, limit = lay.first, lay.child, lay.max_depth
    if limit < 0:
        cut, at = False, first[v]
        while first[v + 1] - at == 1:  # the walk of every entry: kept lean
            v = child[at]
            run.append(v)
            at = first[v]
    else:
        cut = shape.depth(v) - start_depth >= limit
        while first[v + 1] - first[v] == 1 and not cut:
            v = child[first[v]]
            run.append(v)
            cut = shape.depth(v) - start_depth >= limit
    kids = lay.kids(v)
    g_first = _guides(first_guides, cap, depth)
    g_rest = _guides(guides, cap, depth)
    if branches:
        yield from _branch_rows(lay, run, g_first, g_rest, depth, len(kids))
    else:
        yield from _run_rows(lay, run, g_first, g_rest, depth, full)
    end = run[-1]
    if cut and len(kids):
        below = _subtree_size(lay, end) - 1
        yield TreeRow(g_rest, None, end in lay.on_path, depth,
                  note=f"⋯ {below:,} more entr{'y' if below == 1 else 'ies'} below (tree --from {shape.ids[end][:12]})")
        return
    if len(kids) < 2:
        return
    main = lay.main_child(kids)
    stack.append((main, guides, guides, depth, False))
    sides = [c for c in kids if c != main]
    if lay.nest >= 0 and depth + 1 > lay.nest:
        # Deeper than --nested: one line says what is there and how to open it.
        yield TreeRow(_guides((*guides, _SPINE, _MORE), cap, depth + 1), None, end in lay.on_path, depth + 1,
                  note=_more(len(sides), "branch", shape.ids[end]))
        return
    for k in range(len(sides) - 1, -1, -1):
        last = k == len(sides) - 1
        stack.append((sides[k], (*guides, _SPINE, _LAST if last else _FORK),
                      (*guides, _SPINE, _GAP if last else _PIPE), depth + 1, True))


def _more(n: int, what: str, at: str | None) -> str:
    plural = f"{n:,} more {what}{'es' if what == 'branch' else 's'}" if n != 1 else f"1 more {what}"
    where = f" here (tree --from {at[:12]})" if at is not None else " (tree --nested 1)"
    return f"{BRANCH_MARK} {plural}{where}"


def _run_rows(lay: Layout, run: list[int], g_first: tuple[str, ...], g_rest: tuple[str, ...], depth: int,
              full: bool) -> Iterator[TreeRow]:
    n = len(run)
    path = lay.on_path
    if full or n <= 2 * EDGE + MIN_FOLD:
        for k, i in enumerate(run):
            yield TreeRow(g_first if k == 0 else g_rest, i, i in path, depth)
        return
    for k in range(EDGE):
        yield TreeRow(g_first if k == 0 else g_rest, run[k], run[k] in path, depth)
    inner = run[EDGE : n - EDGE]
    start = 0
    for k in lay.kept_in(inner):
        if k > start:
            yield from _flush(lay, inner[start:k], g_rest, depth)
        yield TreeRow(g_rest, inner[k], inner[k] in path, depth)
        start = k + 1
    if start < len(inner):
        yield from _flush(lay, inner[start:], g_rest, depth)
    for i in run[n - EDGE :]:
        yield TreeRow(g_rest, i, i in path, depth)


def _flush(lay: Layout, hidden: list[int], guides: tuple[str, ...], depth: int) -> Iterator[TreeRow]:
    if len(hidden) < MIN_FOLD:
        for i in hidden:
            yield TreeRow(guides, i, i in lay.on_path, depth)
        return
    yield TreeRow(guides, None, hidden[0] in lay.on_path, depth, folded=lay.kinds(hidden))


def _branch_rows(lay: Layout, run: list[int], g_first: tuple[str, ...], g_rest: tuple[str, ...], depth: int,
                 n_kids: int) -> Iterator[TreeRow]:
    """``--branches``: of a column's stretch up to its end (a branch point or a tip),
    a root, the current leaf and the end. A stretch starts after a branch point (or at
    a root), so a tip's branch is exactly its stretch."""
    hidden = 0
    guides = g_first
    for k, i in enumerate(run):
        last = k == len(run) - 1
        if last or i == lay.leaf or (k == 0 and lay.shape.parents[i] < 0):
            tip = last and n_kids == 0
            yield TreeRow(guides, i, i in lay.on_path, depth, hidden=hidden,
                      summary=_first_user_text(lay, run) if tip else None, size=len(run) if tip else 0)
            hidden = 0
            guides = g_rest
        else:
            hidden += 1


def _first_user_text(lay: Layout, run: list[int]) -> str:
    """What the user asked first on this stretch of branch (decoding user lines only)."""
    for i in run:
        if lay.shape.roles[i] == "user":
            msg = lay.entry(i).get("message")
            text = one_line(content_text(msg.get("content"), images=False), 200) if isinstance(msg, dict) else ""
            if text:
                return text
    return ""


def _subtree_size(lay: Layout, v: int) -> int:
    n, stack = 0, [v]
    while stack:
        x = stack.pop()
        n += 1
        stack.extend(lay.kids(x))
    return n



def format_row(row: TreeRow, lay: Layout, label: Any, width: int) -> tuple[str, list[tuple[str, str]]]:
    """Lay out one row within ``width`` cells.

    Args:
        row: from :func:`tree_rows`.
        lay: the tree (the entry's shape facts; ``lay.entry`` decodes it).
        label: the entry's label, or ``None``.
        width: total line width in terminal cells.

    Returns:
        ``(plain_text, [(segment, style), ...])``; the segments join to the plain text.
    """
    prefix, used = lay.prefix(row.guides, width)
    segs: list[tuple[str, str]] = [(prefix, "bright_black")]
    if row.at is None:
        text = fit(row.note if row.note is not None else "  " + fold_text(row.folded or Counter()), width - used)
        segs.append((text, "dim italic"))
        return prefix + text, segs
    i = row.at
    entry = lay.entry(i)
    raw_id = entry.get("id")
    is_leaf = i == lay.leaf
    n_kids = lay.first[i + 1] - lay.first[i]
    kind, preview = entry_preview(entry)
    if row.summary:
        preview = f"“{row.summary}”"
    kind = fit(kind, 40)  # an entry type is whatever the file says; keep the columns
    mark = "* " if is_leaf else "◇ " if n_kids == 0 else "  "
    w = lay.id_width
    # Cut before it is escaped (a cut escape, `\\u200b\\u`, is no prefix of any id),
    # padded by cells (a CJK id is twice as wide as its characters). The cut is the
    # whole limit: a text limit would end two ids sharing their first 100 characters
    # in the same `…`, which names neither (view.id_width).
    eid = show(raw_id[:w] if isinstance(raw_id, str) else raw_id, w if not isinstance(raw_id, str) else None,
               none=ABSENT)
    head = f"{mark}{eid}{' ' * max(0, w - cells(eid))} {kind:<14} "
    before, after = [], []
    if row.hidden:
        before.append(f"(+{row.hidden:,})")
    if row.summary is not None:
        before.append(f"{row.size:,} entr{'y' if row.size == 1 else 'ies'}")
    if n_kids >= 2:
        after.append(f"{BRANCH_MARK}{n_kids}")
    if is_leaf:
        after.append("← leaf")
    # The label is cut before it takes the text's share: the markers around it are
    # short and always whole.
    fixed = ("  " + " ".join(before + after)) if before or after else ""
    room = width - used - cells(head) - cells(fixed)
    shown_label = None
    if label is not None:
        label_text = one_line(label, 200)
        room -= 2 if fixed else 4  # its brackets and, alone, the tail's two spaces
        if fixed:
            room -= 1  # the space between it and the markers
        shown_label = fit(label_text, max(_label_share(cells(label_text), cells(preview), room), 1))
        room -= cells(shown_label)
    parts = [*before, f"[{shown_label}]", *after] if shown_label is not None else [*before, *after]
    tail = ("  " + " ".join(parts)) if parts else ""
    # Labels and markers matter more than the preview: shrink the preview first.
    preview = fit(preview, max(room, 0))
    if room < 0:
        tail = fit(tail, max(0, width - used - cells(head)))
        head = fit(head, max(0, width - used - cells(tail)))
    dim = "" if row.on_path else " dim"
    segs.append((head[:2], "bold reverse green" if is_leaf else "bold" if n_kids == 0 else ""))
    segs.append((head[2:w + 3], "bright_black"))
    segs.append((head[w + 3:], (KIND_STYLES.get(kind, "") + dim).strip()))
    segs.append((preview, "dim" if not row.on_path else ""))
    if tail:
        segs.append((tail, "bold yellow"))
    return prefix + head + preview + tail, segs


def _label_share(label: int, text: int, room: int) -> int:
    """The cells a label of ``label`` cells may take beside a row text of ``text`` cells
    when both share ``room``: all of it when both fit, else what the text leaves but
    at least half the room (the text keeps the other half)."""
    if label + text <= room:
        return label
    return max(room - text, (room + 1) // 2)
