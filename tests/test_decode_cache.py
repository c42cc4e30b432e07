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
        kept = set(index._kept)
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


def write_bushy(path: Path, branches: int, length: int) -> None:
    """A root with ``branches`` chains of ``length`` messages each, one after another."""
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
    lines: list[dict[str, Any]] = [head, {"type": "message", "id": "root", "parentId": None,
                                          "timestamp": "2025-01-01T00:00:01.000Z",
                                          "message": {"role": "user", "content": "r"}}]
    for b in range(branches):
        parent = "root"
        for k in range(length):
            eid = f"b{b:03d}-{k:04d}"
            lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:02.000Z",
                          "message": {"role": "assistant" if k % 2 else "user", "content": f"{b} {k}"}})
            parent = eid
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))


def test_a_tree_walk_reads_ahead_only_while_it_descends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A node read after its parent decodes ahead in its subtree, so a whole walk (depth
    # or breadth first, either child order) takes few core reads; reading only the tips
    # or a node whose parent was not read decodes just what it reads.
    write_bushy(tmp_path / "s.jsonl", 20, 300)
    with open_quiet(tmp_path / "s.jsonl", "python") as py:
        want = py.get_tree()
        every = sorted(e["id"] for e in py.get_entries())
    for order in ("dfs", "dfs-reversed", "bfs"):
        with open_quiet(tmp_path / "s.jsonl", "native") as sm:
            index: Any = sm._index
            reads: list[int] = []
            real = index._decode
            monkeypatch.setattr(index, "_decode", lambda nums: (reads.append(len(nums)), real(nums))[1])
            roots = sm.get_tree()
            queue, seen = list(roots), []
            while queue:
                node = queue.pop(0) if order == "bfs" else queue.pop()
                seen.append(node.entry["id"])
                kids = node.children if order != "dfs" else node.children[::-1]
                queue.extend(kids)
            assert len(seen) == 6001 and sorted(seen) == every
            assert roots == want
            assert len(reads) < 6001 // 20, (order, len(reads))  # one read per entry was 6001
    with open_quiet(tmp_path / "s.jsonl", "native") as sm:
        index = sm._index
        roots = sm.get_tree()
        tips = []
        stack = list(roots)
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if not node.children:
                tips.append(node)
        assert [t.entry["id"] for t in tips][:2] == ["b019-0299", "b018-0299"]
        assert index.cache_held()[0] == 20  # the tips alone
        assert roots[0].children[5].entry["id"] == "b005-0000"
        assert index.cache_held()[0] == 21  # its parent (the root) was never read
        assert roots[0].entry["id"] == "root" and roots[0].children[7].entry["id"] == "b007-0000"
        assert index.cache_held()[0] == 24  # the root, then a descent: the child and one ahead


def test_paths_and_children_picked_from_the_cache_equal_a_decode(tmp_path: Path) -> None:
    """``path_in`` / ``children_in`` hand back the cached entries themselves when every
    one on the path (or every child) is decoded, else ``None`` (the adapter decodes):
    with random parts of the file decoded, the answers equal the python backend's."""
    import random

    p = tmp_path / "s.jsonl"
    ids = write_chain(p, 300, 50)
    with p.open("a") as f:  # a fork at every 10th entry: children lists of two
        for i in range(0, 300, 10):
            f.write(json.dumps({"type": "label", "id": f"l{i}", "parentId": ids[i], "timestamp": "2025-01-01T00:00:02.000Z",
                                "targetId": ids[i], "label": "x"}, separators=(",", ":")) + "\n")
    rng = random.Random(7)
    with open_quiet(p, "python") as py:
        every = [e["id"] for e in py.get_entries()]
        for _ in range(20):
            with open_quiet(p, "native") as sm:
                sm.get_entries_by_id(rng.sample(every, rng.randrange(len(every))))
                ix = sm._index
                slots = ix._grow_slots()
                for eid in rng.sample(every, 40):
                    n = ix._ix.find(eid)
                    picked = ix._ix.path_in(n, slots)
                    on_path = ix._ix.path(n)
                    assert (picked is None) == any(slots[k] is None for k in on_path)
                    if picked is not None:
                        assert all(a is slots[k] for a, k in zip(picked, on_path, strict=True))
                    assert sm.get_branch(eid) == py.get_branch(eid)
                    assert sm.get_children(eid) == py.get_children(eid)
                assert ix._ix.path_in(0, []) is None
                with pytest.raises(IndexError):
                    ix._ix.children_in(len(every), slots)


def test_iteration_is_a_snapshot_whatever_is_cached(tmp_path: Path) -> None:
    """An iterator taken before an append, an eviction or a refresh still yields what
    was there, and a new one sees the change, on both backends."""
    import shutil

    ids = write_chain(tmp_path / "s.jsonl", 50, 100)
    shutil.copy(tmp_path / "s.jsonl", tmp_path / "p.jsonl")
    with open_quiet(tmp_path / "s.jsonl", "native") as sm, open_quiet(tmp_path / "p.jsonl", "python") as py:
        assert list(sm) == list(py) == py.get_entries()
        again = list(sm)
        before, py_before = iter(sm), iter(py)
        sm.append_label_change(ids[3], "x")
        py.append_label_change(ids[3], "x")
        assert list(before) == list(py_before) == again  # taken before the append
        now = list(sm)
        assert len(now) == 51 and now[:50] == again and now[50]["type"] == "label"
        kept = iter(sm)
        sm.cache_budget = 500  # most entries leave the cache
        assert list(kept) == now
        assert list(sm) == now and sm.get_entries() == now
        sm.cache_budget = 10**9
        sm.get_entries()
        with (tmp_path / "s.jsonl").open("a") as f:  # another process appends
            f.write(json.dumps({"type": "custom", "id": "zz", "parentId": ids[-1],
                                "timestamp": "2025-01-01T00:00:03.000Z", "customType": "t"}) + "\n")
        kept = iter(sm)
        assert sm.refresh() == 1
        assert list(kept) == now
        assert [e["id"] for e in sm][-1] == "zz" and len(list(sm)) == 52


def test_exports_stream_the_path(tmp_path: Path) -> None:
    """An export reads each entry of the path once: it keeps none of them decoded (its
    memory does not grow with the path, issue 26 item 5), gives the manager its budget
    back, and writes what it wrote when every entry was cached."""
    from sessiontree.export import write_html, write_markdown
    from sessiontree.view import structure_of

    write_chain(tmp_path / "s.jsonl", 300, 2000)
    pages = []
    for budget in (1 << 30, 0):
        with open_quiet(tmp_path / "s.jsonl", "native") as sm:
            index: Any = sm._index
            sm.cache_budget = budget
            st = structure_of(sm)
            md: list[str] = []
            page: list[str] = []
            write_markdown(st, md.append)
            assert index.cache_held()[0] <= 1  # the leaf the structure looked up
            write_html(st, page.append, branches="path")
            assert index.cache_held()[0] < 50  # the sidebar's rows in sight, not the path
            assert sm.cache_budget == budget
            pages.append(("".join(md), "".join(page)))
    assert pages[0] == pages[1]
    assert pages[0][0].count("\n## ") == 300
