"""The session tree drawn as rows, from the shape alone (``browse`` and the HTML sidebar).

The rows are ``sessiontree tree``'s (``_tree_rows``; how to read them: ``tree --help``):
a run of entries with one child each is one column; at a branch point the other branches come
first, each one level deeper, and the branch holding the current leaf (else the newest)
continues in the parent's column; several roots are drawn as branches of an invisible
top node. With everything expanded the rows are exactly ``tree --full``'s, in the same
order at the same depths, and folded they fold the same runs
(``tests/test_view_structure.py`` compares them with ``tree --json`` and ``iter_rows``).
The guides are the viewers' own (``├─`` / ``└─`` per level); ``tree`` hangs a branch
point's abandoned branches from a spine of their own and caps the nesting it draws.

Folding, which a viewer can undo row by row:

* the middle of a long linear run (as ``tree`` folds it: the first and last two entries
  of the run, compactions, branch summaries, session names, labelled entries and the
  leaf stay);
* a long sibling list: at a branch point with more than :data:`MAX_SIBLINGS` other
  branches only the newest :data:`KEEP_SIBLINGS` are drawn, the rest behind one row;
* a whole branch, collapsed by the viewer (``collapsed``).

Nothing here decodes an entry: it reads the shape's types, roles and links, the labels
and the leaf. Everything is iterative, so depth does not matter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from ._entries import KEEP_TYPES
from ._structure import Structure

__all__ = ["BRANCH_MARK", "FOLD_MARK", "ENTRY", "FOLD", "MORE", "NOTE", "OPEN", "CLOSE", "Row", "Drawing", "MAX_SIBLINGS", "KEEP_SIBLINGS"]

ENTRY, FOLD, MORE, NOTE, OPEN, CLOSE = range(6)

# A branch point's mark, before its number of branches (``┬3``): Box Drawing, which the
# common monospace fonts carry; ``⑂`` (U+2442), the mark before issue 26, has no glyph in
# DejaVu Sans Mono (fontconfig says so; tests/test_cli_tree.py asks it). One cell wide.
BRANCH_MARK = "┬"

# A folded run's mark (``┆ 1,234 entries: …``): a dashed guide, Box Drawing too; ``⋮``
# (U+22EE), the mark before, has no glyph in DejaVu Sans Mono. One cell wide.
FOLD_MARK = "┆"

EDGE = 2  # entries kept at each end of a folded run (here and in `tree`: _tree_rows)
MIN_FOLD = 3  # a fold hides at least this many entries
MAX_SIBLINGS = 12  # other branches drawn at one branch point before the rest are folded
KEEP_SIBLINGS = 8  # ... and how many of the newest stay drawn then


@dataclass(frozen=True)
class Row:
    """One row of the drawing.

    Attributes:
        kind: :data:`ENTRY` (an entry), :data:`FOLD` (hidden middle of a run),
            :data:`MORE` (hidden older branches of a branch point), :data:`NOTE` (text),
            or, with ``markers=True``, :data:`OPEN` / :data:`CLOSE` around each other
            branch (``entry`` its first entry).
        entry: the entry (ENTRY, OPEN); the first hidden entry (FOLD); the branch
            point (MORE).
        prefix: the tree-drawing text before the row (``├─ ``, ``│  ``, …).
        depth: branches nested inside other branches (as ``tree --json``'s ``depth``).
        on_path: on the root → current leaf path.
        hidden: FOLD: the hidden entries; MORE: the first entries of the hidden branches.
        key: what :meth:`Drawing.expand` takes to unfold a FOLD or MORE row.
        head: first entry of the innermost other branch holding the row (-1: none).
        collapsed: an ENTRY row that heads a branch the viewer collapsed.
        note: NOTE's text.
    """

    kind: int
    entry: int = -1
    prefix: str = ""
    depth: int = 0
    on_path: bool = False
    hidden: tuple[int, ...] = ()
    key: Any = None
    head: int = -1
    collapsed: bool = False
    note: str = ""


class Drawing:
    """The rows of one :class:`Structure`, with the viewer's folding state.

    Args:
        st: the structure.
        full: fold nothing (``tree --full``); ``collapsed`` still applies.
    """

    def __init__(self, st: Structure, *, full: bool = False) -> None:
        self.st = st
        self.full = full
        self.expanded: set[Any] = set()  # keys of FOLD and MORE rows unfolded
        self.collapsed: set[int] = set()  # first entries of branches collapsed
        self._chains: dict[int, list[int]] = {}  # run head -> the run (cached: runs partition the tree)
        self._segments: dict[int, list[tuple[int, int, int]]] = {}
        self._sizes: list[int] | None = None
        self._order: list[int] | None = None
        self._folded: dict[int, frozenset[int]] = {}  # branch point -> its siblings behind a MORE row

    # ------------------------------------------------------------------ rows
    def rows(self, *, markers: bool = False) -> list[Row]:
        """The rows drawn now, top to bottom."""
        return list(self.iter_rows(markers=markers))

    def iter_rows(self, *, markers: bool = False, everything: bool = False) -> Iterator[Row]:
        """Yield the rows in drawing order.

        Args:
            markers: also yield OPEN / CLOSE rows around each other branch.
            everything: as if every fold were expanded and no branch collapsed.
        """
        st = self.st
        roots = list(st.shape.roots)
        if not roots:
            return
        on_path = st.on_path
        main_root = next((r for r in roots if r in on_path), roots[-1])
        ordered = [r for r in roots if r != main_root] + [main_root]
        stack: list[Any] = []  # items: (entry, first, rest, on, depth, head, other) or a CLOSE marker
        if len(ordered) > 1:
            yield Row(NOTE, note=f"{len(ordered):,} roots; the one holding the current leaf comes last")
            for root in reversed(ordered):
                if root == main_root:
                    stack.append((root, "└─ ", "", root in on_path, 0, -1, False))
                else:
                    stack.append((root, "├─ ", "│  ", False, 1, root, True))
        else:
            stack.append((main_root, "", "", main_root in on_path, 0, -1, False))
        children = st.shape.children
        while stack:
            item = stack.pop()
            if isinstance(item, Row):
                yield item
                continue
            node, first, rest, on, depth, head, other = item
            if other and markers:
                yield Row(OPEN, node, first, depth, on, head=head)
                stack.append(Row(CLOSE, node, rest, depth, on, head=head))
            if other and not everything and node in self.collapsed:
                yield Row(ENTRY, node, first, depth, on, head=head, collapsed=True)
                continue
            end = yield from self._chain_rows(node, first, rest, on, depth, head, everything)
            kids = children(end)
            if len(kids) < 2:
                continue
            main = next((c for c in kids if c in on_path), None) if on else None
            if main is None:
                main = kids[-1]
            others = [c for c in kids if c != main]
            stack.append((main, rest + "└─ ", rest, on and main in on_path, depth, head, False))
            folded: list[int] = []
            if (not everything and not self.full and len(others) > MAX_SIBLINGS
                    and ("more", end) not in self.expanded):
                folded, others = others[:-KEEP_SIBLINGS], others[-KEEP_SIBLINGS:]
            for child in reversed(others):
                stack.append((child, rest + "├─ ", rest + "│  ", False, depth + 1, child, True))
            if folded:
                stack.append(Row(MORE, end, rest + "├─ ", depth + 1, False, tuple(folded), ("more", end), head))

    def _chain_rows(self, node: int, first: str, rest: str, on: bool, depth: int, head: int,
                    everything: bool) -> Generator[Row, None, int]:
        """Rows of the linear run starting at ``node``; returns its last entry."""
        chain = self.chain(node)
        for n, (kind, start, stop) in enumerate(self.segments(node)):
            if kind == FOLD and not everything and ("run", chain[start]) not in self.expanded:
                yield Row(FOLD, chain[start], rest, depth, on, tuple(chain[start:stop]), ("run", chain[start]), head)
                continue
            for j in range(start, stop):
                yield Row(ENTRY, chain[j], first if j == 0 else rest, depth, on, head=head)
        return chain[-1]

    # ------------------------------------------------------------ chains
    def chain(self, node: int) -> list[int]:
        """The linear run from ``node`` down while each entry has one child."""
        chain = self._chains.get(node)
        if chain is not None:
            return chain
        children = self.st.shape.children
        chain = [node]
        kids = children(node)
        while len(kids) == 1:
            chain.append(kids[0])
            kids = children(kids[0])
        self._chains[node] = chain
        return chain

    def segments(self, node: int) -> list[tuple[int, int, int]]:
        """The run from ``node`` as ``(ENTRY | FOLD, start, stop)`` slices of :meth:`chain`."""
        seg = self._segments.get(node)
        if seg is not None:
            return seg
        chain = self.chain(node)
        n = len(chain)
        st = self.st
        types = st.shape.types
        labels = st.labels
        leaf = st.leaf
        if self.full or n <= 2 * EDGE + MIN_FOLD:
            seg = [(ENTRY, 0, n)]
        else:
            seg = []
            start = 0  # first index of the current segment
            hidden_from = -1
            for j, e in enumerate(chain):
                keep = j < EDGE or j >= n - EDGE or e in labels or types[e] in KEEP_TYPES or e == leaf
                if keep:
                    if hidden_from >= 0:
                        if j - hidden_from >= MIN_FOLD:
                            if hidden_from > start:
                                seg.append((ENTRY, start, hidden_from))
                            seg.append((FOLD, hidden_from, j))
                            start = j
                        hidden_from = -1
                elif hidden_from < 0:
                    hidden_from = j
            seg.append((ENTRY, start, n))
        self._segments[node] = seg
        return seg

    def run_head(self, i: int) -> int:
        """The first entry of the linear run holding ``i``."""
        shape = self.st.shape
        parents = shape.parents
        while True:
            p = parents[i]
            if p < 0 or len(shape.children(p)) != 1:
                return i
            i = p

    def sibling_folded(self, head: int) -> bool:
        """``head`` starts one of the older branches a :data:`MORE` row folds away."""
        st = self.st
        p = st.parent(head)
        if p is None:
            return False
        folded = self._folded.get(p)
        if folded is None:
            # Once per branch point (it was once per sibling: quadratic in the siblings
            # of one entry, 7 s for 10,000 of them in an HTML export).
            kids = st.children(p)
            if len(kids) <= MAX_SIBLINGS + 1:
                folded = frozenset()
            else:
                main = next((c for c in kids if c in st.on_path), kids[-1])
                folded = frozenset([c for c in kids if c != main][:-KEEP_SIBLINGS])
            self._folded[p] = folded
        return head in folded

    # ------------------------------------------------------------ folding
    def expand(self, key: Any) -> None:
        """Unfold a FOLD or MORE row (its ``key``)."""
        self.expanded.add(key)

    def reveal(self, i: int) -> None:
        """Unfold and uncollapse what hides entry ``i``."""
        st = self.st
        path = st.path_to(i)
        for n in path:
            p = st.parent(n)
            if p is None or len(st.children(p)) != 1:
                self.collapsed.discard(n)
                if p is not None:
                    self.expanded.add(("more", p))
        head = self.run_head(i)
        chain = self.chain(head)
        pos = chain.index(i)
        for kind, start, stop in self.segments(head):
            if kind == FOLD and start <= pos < stop:
                self.expanded.add(("run", chain[start]))

    # ------------------------------------------------------------ whole tree
    def order(self) -> list[int]:
        """Every entry in drawing order with everything expanded (``tree --full``'s order)."""
        if self._order is None:
            self._order = [r.entry for r in self.iter_rows(everything=True) if r.kind == ENTRY]
        return self._order

    def subtree_size(self, i: int) -> int:
        """Entries in the subtree of ``i`` (``i`` included)."""
        if self._sizes is None:
            shape = self.st.shape
            sizes = [1] * len(shape)
            parents = shape.parents
            # Reverse drawing order has every entry after all of its descendants.
            for e in reversed(self.order()):
                p = parents[e]
                if p >= 0:
                    sizes[p] += sizes[e]
            self._sizes = sizes
        return self._sizes[i]

    def kinds(self, entries: tuple[int, ...] | list[int]) -> Counter[str]:
        """How many of each kind (role, else type) ``entries`` hold."""
        kind = self.st.kind
        return Counter(kind(e) for e in entries)


def fold_text(kinds: Counter[str]) -> str:
    """``┆ 1,234 entries: 600 assistant, …`` (:data:`FOLD_MARK`; as ``tree`` words a fold)."""
    total = sum(kinds.values())
    parts = ", ".join(f"{n:,} {k}" for k, n in kinds.most_common(4))
    more = " …" if len(kinds) > 4 else ""
    return f"{FOLD_MARK} {total:,} entries: {parts}{more}"
