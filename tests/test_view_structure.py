"""The viewers' structure (``_structure``) and drawing (``_drawing``), held against what
they did not compute: ``get_tree`` / ``get_branch`` / ``get_label`` and ``sessiontree
tree`` (``view.tree_rows`` and ``--json``), on the corpus, the damaged-file cases and
generated sessions, on both backends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _shared import open_quiet
from sessiontree import SessionManager
from sessiontree.view import ENTRY, FOLD, MORE, NOTE, Drawing
from sessiontree.view import AmbiguousIdError, structure_of
from sessiontree.view import Layout, tree_rows
from sessiontree.generate import generate_session
from sessiontree.schema import ENTRY_TYPES


def _sessions(corpus: Path, cases: Path) -> list[Path]:
    files = sorted(corpus.glob("*.jsonl")) + sorted(cases.glob("*.jsonl"))
    out = []
    for f in files:
        try:
            open_quiet(f, "python").close()
        except Exception:
            continue  # not a session (no header): nothing to view
        out.append(f)
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("structure") / "gen.jsonl"
    generate_session(path, entries=3000, seed=7, payload_scale=0.01)
    return path


def _walk(roots: list[Any]) -> list[tuple[str, str | None, int]]:
    """(id, parent id, number of children) of every get_tree node, preorder."""
    out = []
    stack = [(r, None) for r in reversed(roots)]
    while stack:
        node, parent = stack.pop()
        out.append((node.entry["id"], parent, len(node.children)))
        stack.extend((c, node.entry["id"]) for c in reversed(node.children))
    return out


def _shape_walk(st: Any) -> list[tuple[str, str | None, int]]:
    out = []
    shape = st.shape
    stack = [(r, None) for r in reversed(list(shape.roots))]
    while stack:
        i, parent = stack.pop()
        out.append((shape.ids[i], parent, len(shape.children(i))))
        stack.extend((c, shape.ids[i]) for c in reversed(list(shape.children(i))))
    return out


def test_structure_is_get_tree(corpus_dir: Path, cases_dir: Path, generated: Path, backend: str) -> None:
    for path in _sessions(corpus_dir, cases_dir) + [generated]:
        with open_quiet(path, backend) as sm:
            st = structure_of(sm)
            roots = sm.get_tree()
            assert _shape_walk(st) == _walk(roots), path.name
            assert len(st) == len(sm)
            # Types, roles, labels and paths agree with the decoded entries.
            for i, eid in enumerate(st.shape.ids):
                entry = sm.get_entry(eid)
                etype = entry["type"]
                assert st.shape.types[i] == (etype if isinstance(etype, str) and etype in ENTRY_TYPES else "?")
                role = entry["message"].get("role") if etype == "message" and isinstance(entry.get("message"), dict) else None
                assert st.shape.roles[i] == (role if isinstance(role, str) else None)
                assert st.labels.get(i) == sm.get_label(eid)
                assert [st.id(n) for n in st.path_to(i)] == [e["id"] for e in sm.get_branch(eid)], path.name
            leaf = sm.leaf_id
            assert (st.id(st.session_leaf) if st.session_leaf is not None else None) == leaf
            assert [st.id(n) for n in st.path] == [e["id"] for e in sm.get_branch()]


def test_resolve_prefix(corpus_dir: Path, backend: str) -> None:
    with open_quiet(corpus_dir / "hand-labels-names.jsonl", backend) as sm:
        st = structure_of(sm)
        ids = list(st.shape.ids)
        for eid in ids:
            assert st.resolve(eid) == eid
            unique = next(eid[:k] for k in range(1, len(eid) + 1) if sum(x.startswith(eid[:k]) for x in ids) == 1)
            assert st.resolve(unique) == eid
        with pytest.raises(KeyError):
            st.resolve("zzzz-no-such")
        shared = next(p for p in (x[:1] for x in ids) if sum(x.startswith(p) for x in ids) > 1)
        with pytest.raises(AmbiguousIdError):
            st.resolve(shared)


def _tree_json(path: Path) -> list[dict[str, Any]]:
    p = subprocess.run([sys.executable, "-m", "sessiontree", "tree", str(path), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_drawing_everything_is_tree_json(corpus_dir: Path, cases_dir: Path, generated: Path) -> None:
    """With everything unfolded the drawing is `sessiontree tree --json`, row for row."""
    for path in _sessions(corpus_dir, cases_dir) + [generated]:
        rows = _tree_json(path)
        with open_quiet(path, "native") as sm:
            st = structure_of(sm)
            drawing = Drawing(st)
            mine = [r for r in drawing.iter_rows(everything=True) if r.kind == ENTRY]
            assert [st.id(r.entry) for r in mine] == [r["id"] for r in rows], path.name
            assert [r.depth for r in mine] == [r["depth"] for r in rows], path.name
            assert [r.on_path for r in mine] == [r["onPath"] for r in rows], path.name
            assert drawing.order() == [r.entry for r in mine]


def test_folded_drawing_is_tree_folding(corpus_dir: Path, generated: Path, backend: str) -> None:
    """Folded runs are `tree`'s: the same entries, folds and nesting, in the same order
    (older siblings unfolded, no nesting limit). The guides differ: `tree` hangs each
    branch point's abandoned branches from their own spine; the viewers draw their own."""
    for path in [generated, *sorted(corpus_dir.glob("hand-*.jsonl"))]:
        with open_quiet(path, backend) as sm:
            st = structure_of(sm)
            lay = Layout(st.shape, st.session_leaf, set(st.labels), -1, st.entry)
            theirs = []
            for r in tree_rows(lay, list(st.shape.roots), full=False, branches=False, cap=10**6):
                if r.note is not None:
                    theirs.append(("note",))
                elif r.at is None:
                    theirs.append(("fold", sum((r.folded or {}).values()), r.depth))
                else:
                    theirs.append((st.id(r.at), r.depth, r.on_path))
            drawing = Drawing(st)
            for i in range(len(st)):
                drawing.expand(("more", i))
            mine = []
            for r in drawing.iter_rows():
                if r.kind == NOTE:
                    mine.append(("note",))
                elif r.kind == FOLD:
                    mine.append(("fold", len(r.hidden), r.depth))
                else:
                    mine.append((st.id(r.entry), r.depth, r.on_path))
            assert mine == theirs, path.name


def test_unfold_collapse_and_reveal(generated: Path) -> None:
    with open_quiet(generated, "native") as sm:
        st = structure_of(sm)
        d = Drawing(st)
        rows = d.rows()
        folds = [r for r in rows if r.kind == FOLD]
        assert folds, "a 3,000-entry session has folded runs"
        d.expand(folds[0].key)
        after = d.rows()
        assert len(after) == len(rows) - 1 + len(folds[0].hidden)
        shown = [r.entry for r in after if r.kind == ENTRY]
        assert all(n in shown for n in folds[0].hidden)
        # Collapse the first other branch: its subtree goes, its head stays.
        head = next(r for r in after if r.kind == ENTRY and r.head == r.entry)
        d.collapsed.add(head.entry)
        collapsed = d.rows()
        hidden = d.subtree_size(head.entry) - 1
        assert hidden > 0
        assert any(r.collapsed and r.entry == head.entry for r in collapsed)
        # Reveal every entry in turn from a fresh drawing: it is then a row.
        fresh = Drawing(st)
        fresh.collapsed.add(head.entry)
        for n in range(0, len(st), 37):
            fresh.reveal(n)
            assert n in {r.entry for r in fresh.rows() if r.kind == ENTRY}, n


def test_long_sibling_lists_fold(tmp_path: Path, backend: str) -> None:
    """A branch point with 40 branches draws the newest 8 and one row for the rest."""
    sm = SessionManager.create("/p", session_dir=str(tmp_path), backend=backend)
    root = sm.append_message({"role": "user", "content": "q", "timestamp": 1})
    for k in range(40):
        sm.branch(root)
        sm.append_message({"role": "assistant", "content": [{"type": "text", "text": f"answer {k}"}],
                           "provider": "p", "model": "m", "timestamp": 2 + k})
    path = sm.session_file
    sm.close()
    with open_quiet(path, backend) as sm2:
        st = structure_of(sm2)
        d = Drawing(st)
        rows = d.rows()
        more = [r for r in rows if r.kind == MORE]
        assert len(more) == 1 and len(more[0].hidden) == 40 - 1 - 8
        assert sum(1 for r in rows if r.kind == ENTRY) == 1 + 8 + 1
        d.expand(more[0].key)
        assert sum(1 for r in d.rows() if r.kind == ENTRY) == 41
        assert d.sibling_folded(more[0].hidden[0]) and not d.sibling_folded(st.session_leaf)
