"""The viewers (``sessiontree browse``, ``sessiontree export``) on an opened session.

* ``structure``: the shape of the whole tree (``view.structure_of``): the index's
  ``get_shape`` and the labels, no entry decoded but the label lines.
* ``browse first screen``: from a shape to the first screen's rows: the drawing around
  the leaf and the text of 50 rows (their entries decoded), as the tree pane makes them.
* ``export html (path)`` / ``export markdown``: the page or the text of the leaf's path
  written to a byte counter, the shape given (``extra_info["bytes_out"]``).
"""

from __future__ import annotations

from typing import Any

from _benchlib import BenchFile, opened, set_info
from sessiontree.view import ENTRY, Drawing
from sessiontree.view import structure_of
from sessiontree.view import Layout, TreeRow, format_row
from sessiontree.export.html import write_html
from sessiontree.export.markdown import write_markdown


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def write(self, text: str) -> None:
        self.n += len(text.encode("utf-8", "backslashreplace"))


def test_structure(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    sm = opened(session_file, backend)
    st = benchmark.pedantic(structure_of, args=(sm,), rounds=1 if session_file.size_label == "1GiB" else 3)
    assert len(st) == session_file.entries and st.id(st.session_leaf) == session_file.leaf_id
    set_info(benchmark, f"structure · {session_file.size_label}", file=session_file, backend=backend,
             operation="structure")


def test_browse_first_screen(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    sm = opened(session_file, backend)
    st = structure_of(sm)

    def first_screen() -> int:
        drawing = Drawing(st)
        lay = Layout(st.shape, st.session_leaf, set(st.labels), -1, st.entry)  # the tree pane's, once
        drawing.reveal(st.session_leaf)
        rows = drawing.rows()
        at = next(i for i, r in enumerate(rows) if r.kind == ENTRY and r.entry == st.session_leaf)
        shown = 0
        for r in rows[max(0, at - 49): at + 1]:
            if r.kind == ENTRY:
                format_row(TreeRow((r.prefix,), r.entry, r.on_path, r.depth), lay, st.labels.get(r.entry), 100)
                shown += 1
        return shown

    shown = benchmark(first_screen)
    assert shown > 0
    set_info(benchmark, f"browse first screen · {session_file.size_label}", file=session_file, backend=backend,
             operation="browse_first_screen", items=shown)


def test_export_html_path(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    sm = opened(session_file, backend)
    st = structure_of(sm)

    def export() -> tuple[Any, int]:
        out = _Counter()
        stats = write_html(st, out.write, branches="path")
        return stats, out.n

    stats, n = benchmark.pedantic(export, rounds=1 if session_file.size_label == "1GiB" else 3)
    assert stats.rendered == len(st.path) and n > 0
    set_info(benchmark, f"export html (path) · {session_file.size_label}", file=session_file, backend=backend,
             operation="export_html_path", items=stats.rendered, bytes_out=n)


def test_export_markdown(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    sm = opened(session_file, backend)
    st = structure_of(sm)

    def export() -> tuple[Any, int]:
        out = _Counter()
        stats = write_markdown(st, out.write)
        return stats, out.n

    stats, n = benchmark.pedantic(export, rounds=1 if session_file.size_label == "1GiB" else 3)
    assert stats.path == len(st.path) and n > 0
    set_info(benchmark, f"export markdown · {session_file.size_label}", file=session_file, backend=backend,
             operation="export_markdown", items=stats.path, bytes_out=n)
