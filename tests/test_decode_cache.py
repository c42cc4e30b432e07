"""The native adapter's decoded-entry cache, lazy tree nodes and incremental labels
(issue 11 item 8, issue 10 item 1): results never depend on what is cached, the budget
holds, and label look-ups after appends decode only the new label lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager

from _shared import native_available, open_quiet

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")


def write_chain(path: Path, n: int, pad: int) -> list[str]:
    """A linear session of ``n`` messages of about ``pad`` bytes each; returns the ids."""
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
    ]
    ids, parent = [], None
    for i in range(n):
        eid = f"e{i:07d}"
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
                      "message": {"role": "assistant" if i % 2 else "user", "content": "x" * pad}})
        ids.append(eid)
        parent = eid
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    return ids


def test_get_branch_when_the_rest_overflows_the_budget(tmp_path: Path) -> None:
    """Item 8: half a long path cached, the other half pushes the cache over its budget
    (the old adapter cleared it between decoding and returning: a bare KeyError)."""
    ids = write_chain(tmp_path / "s.jsonl", 100, 1000)
    with open_quiet(tmp_path / "s.jsonl", "native") as sm, open_quiet(tmp_path / "s.jsonl", "python") as py:
        sm.cache_budget = 60_000
        assert sm.get_branch(ids[49]) == py.get_branch(ids[49])
        assert sm.get_branch() == py.get_branch()
        assert sm.get_branch() == py.get_branch()  # and again, from what is left cached


def test_label_lookups_decode_each_label_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 8: a UI that appends labels and shows them decodes each label line a bounded
    number of times (the old adapter decoded every label line after each append)."""
    from sessiontree import _native

    ids = write_chain(tmp_path / "s.jsonl", 4, 10)
    calls = []
    real = _native.decode_line
    monkeypatch.setattr(_native, "decode_line", lambda raw: calls.append(1) or real(raw))
    with SessionManager.open(str(tmp_path / "s.jsonl"), backend="native") as sm:
        for i in range(300):
            sm.append_label_change(ids[i % 4], f"label {i}")
            assert sm.get_label(ids[i % 4]) == f"label {i}"
            assert len(sm.get_tree()) == 1
    assert len(calls) <= 3 * 300, len(calls)


def test_budget_holds_and_never_empties_at_once(tmp_path: Path) -> None:
    ids = write_chain(tmp_path / "s.jsonl", 200, 500)
    with open_quiet(tmp_path / "s.jsonl", "native") as sm, open_quiet(tmp_path / "s.jsonl", "python") as py:
        index: Any = sm._index
        sm.cache_budget = 30_000
        for eid in ids:
            assert sm.get_entry(eid) == py.get_entry(eid)
            count, held = index.cache_held()
            assert held <= 30_000
        # The most recent entries are still there: the cache dropped the oldest first.
        assert count >= 30_000 // 700
        kept = {n for n, _ in index._kept}
        assert kept == set(range(200 - count, 200))
        assert sm.get_entries() == py.get_entries()
        assert index.cache_held()[1] <= 30_000
        sm.cache_budget = 0
        assert index.cache_held() == (0, 0)
        assert sm.get_entries() == py.get_entries() and list(sm) == list(py)
        assert sm.get_tree() == py.get_tree()
        assert index.cache_held() == (0, 0)
        with pytest.raises(ValueError):
            sm.cache_budget = -1
    assert py.cache_budget is None


def test_budget_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_chain(tmp_path / "s.jsonl", 3, 10)
    monkeypatch.setenv("SESSIONTREE_CACHE_BYTES", "64KiB")
    with open_quiet(tmp_path / "s.jsonl", "native") as sm:
        assert sm.cache_budget == 64 * 1024
    monkeypatch.setenv("SESSIONTREE_CACHE_BYTES", "lots")
    with pytest.raises(ValueError, match="SESSIONTREE_CACHE_BYTES"):
        open_quiet(tmp_path / "s.jsonl", "native")


def test_tree_nodes_decode_when_read(tmp_path: Path) -> None:
    ids = write_chain(tmp_path / "s.jsonl", 50, 100)
    with open_quiet(tmp_path / "s.jsonl", "native") as sm, open_quiet(tmp_path / "s.jsonl", "python") as py:
        index: Any = sm._index
        roots = sm.get_tree()
        assert index.cache_held() == (0, 0)  # the shape came from the index
        node = roots[0]
        while node.children:
            node = node.children[0]
        assert index.cache_held()[0] == 0
        assert node.entry["id"] == ids[-1]
        assert index.cache_held()[0] == 1
        assert "e0000049" in repr(node) and "children=0" in repr(node)
        assert roots == py.get_tree()  # every entry read and compared
        assert node.entry is sm.get_entry(ids[-1])  # shared, as the python backend's are


def test_entries_equal_whatever_is_cached(tmp_path: Path) -> None:
    ids = write_chain(tmp_path / "s.jsonl", 60, 50)
    with open_quiet(tmp_path / "s.jsonl", "native") as sm, open_quiet(tmp_path / "s.jsonl", "python") as py:
        for eid in ids[::7]:
            sm.get_entry(eid)
        assert sm.get_entries() == py.get_entries()
        assert sm.get_children(ids[10]) == py.get_children(ids[10])
        sm.append_message({"role": "user", "content": "new", "timestamp": 1})
        py_new = py.get_entries()
        assert len(sm.get_entries()) == len(py_new) + 1
