"""The exports' shortcuts write what the general code writes (issue 26, item 5): the
sidebar's plain rows (``export/html.py``, ``_plain_rows``) are ``_row``'s strings, and
a Markdown heading joined first and escaped once (``export/markdown.py``, ``_heading``)
is the join of each piece escaped alone."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.export.html import _plain_rows, _row
from sessiontree.export.markdown import _heading, md_inline
from sessiontree.generate import generate_session
from sessiontree.view import Item, Structure, clean, doc_id, doc_line, structure_of

from _shared import open_quiet


def _check_rows(s: Structure) -> None:
    nums = list(range(len(s)))
    for prefix in ("", "│ ", "  <&>"):
        assert list(_plain_rows(s, nums, prefix)) == [_row(s, n, prefix, preview=False) for n in nums]


def test_plain_rows_are_the_general_rows(tmp_path: Path, backend: str) -> None:
    """Every entry of a generated session (branches, labels, every entry type), and of
    each file of the corpus, as a fold's hidden row."""
    path = tmp_path / "s.jsonl"
    generate_session(path, size_bytes=400_000, seed=3)
    with open_quiet(path, backend) as sm:
        s = structure_of(sm)
        assert s.labels and any(len(s.children(n)) >= 2 for n in range(len(s)))
        _check_rows(s)


def test_plain_rows_of_the_corpus(corpus_dir: Path, backend: str) -> None:
    for path in sorted(corpus_dir.glob("*.jsonl")):
        try:
            sm = open_quiet(path, backend)
        except Exception:  # a file the loader refuses has no sidebar
            continue
        with sm:
            _check_rows(structure_of(sm))


def _per_piece(item: Item, full: bool) -> str:
    """The heading as it was written before ``_heading``: each piece escaped alone."""
    head = [md_inline(item.kind)]
    if item.when:
        head.append(md_inline(item.when))
    if full:
        head.extend(md_inline(m) for m in item.meta if m)
        head.append(md_inline(doc_id(item.id)))
    if item.label is not None:
        head.append(f"label: {md_inline(doc_line(item.label, 200))}")
    return " · ".join(head)


_TEXT = st.text(alphabet=st.sampled_from(" \t\n\u00a0\u3000·ab#*_[]<>|~`\\é中\u200b"), max_size=12)


@settings(max_examples=3000, deadline=None)
@given(kind=_TEXT, when=_TEXT, meta=st.lists(_TEXT, max_size=4), eid=_TEXT, label=st.none() | _TEXT,
       full=st.booleans())
def test_a_heading_is_its_pieces_escaped(kind: str, when: str, meta: list[str], eid: str, label: str | None,
                                         full: bool) -> None:
    item = Item(id=eid, kind=clean(kind), when=clean(when), meta=[clean(m) for m in meta],
                label=clean(label) if label is not None else None)
    assert _heading(item, full) == _per_piece(item, full)
