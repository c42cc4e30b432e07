"""The structure API (``get_shape``, ``parent_of``, ``get_children_ids``,
``get_path_ids``, ``get_leaf_ids``, ``get_entry_type``, ``resolve_id``,
``get_usage_totals``) and the bulk look-ups (``get_labels``, ``get_entries_by_id``) on
both backends, each held against a brute force over ``get_entries()`` written here
from the contract (not from either backend's code), and the two backends against each
other."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import EntryNotFoundError, LoadReportWarning, SessionManager, TreeShape
from sessiontree._time import parse_iso_ms
from sessiontree.generate import generate_session
from sessiontree.schema import ENTRY_TYPES

from _shared import native_available, open_quiet

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def write(path: Path, entries: list[Any]) -> Path:
    """A session of ``entries``: dicts, or raw line text."""
    lines = [e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in [HEADER, *entries]]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def m(eid: str, parent: Any, ts: Any = "2026-01-01T00:00:01.000Z", role: Any = "user", **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts,
            "message": {"role": role, "content": eid}, **extra}


def odd_tree(tmp: Path) -> Path:
    """Cycles (of three and of one), a forward link, an orphan, unknown and non-string
    types, odd roles and timestamps that do not parse, equal timestamps among siblings,
    and ids sharing prefixes."""
    return write(tmp / "odd.jsonl", [
        m("aa01", None),
        m("aa02", "aa01", "2026-01-01T00:00:05.000Z", role="assistant"),
        m("aa03", "aa01", "2026-01-01T00:00:03.000Z"),
        m("aa04", "aa01", "not a time"),
        m("aa05", "aa01", 17),
        m("ab01", "aa01", "2026-01-01T00:00:03.000Z", role="hookMessage"),
        m("ab02", "zz99", role=None),                     # orphan: a root
        m("c1", "c3"), m("c2", "c1"), m("c3", "c2"),      # a cycle, broken at c1
        m("self", "self"),                                # a cycle of one
        m("fwd", "later"),                                # a forward link
        {"type": "weird", "id": "w1", "parentId": "aa02", "timestamp": "2026-01-01T00:00:09.000Z"},
        {"type": 5, "id": "w2", "parentId": "w1"},
        {"type": "message", "id": "w3", "parentId": "w2", "message": "not an object"},
        {"type": "label", "id": "l1", "parentId": "w3", "targetId": "aa02", "label": "x"},
        {"type": "label", "id": "l2", "parentId": "l1", "targetId": "aa03", "label": "y"},
        {"type": "label", "id": "l3", "parentId": "l2", "targetId": "aa02", "label": "x again"},  # keeps its place
        {"type": "label", "id": "l4", "parentId": "l3", "targetId": "gone", "label": "z"},  # not an entry
        {"type": "label", "id": "l5", "parentId": "l4", "targetId": "aa04", "label": 0},  # clears nothing set
        {"type": "label", "id": "l6", "parentId": "l5", "targetId": "aa03", "label": ""},  # clears y
        {"type": "label", "id": "l7", "parentId": "l6", "targetId": 5, "label": "not a string target"},
        m("later", "aa03", role={"r": 1}),
        # Duplicate keys: the last one counts (json.loads).
        '{"type":"message","id":"dup","parentId":null,"message":{"role":"user"},"message":3}',
        '{"type":"label","type":"message","id":"dup2","parentId":"dup","message":{"role":"user","role":"assistant",'
        '"usage":{"input":2,"input":5,"cost":{"total":1.5}},"usage":{"output":7,"cost":{"total":0.25}}}}',
    ])


def sources(tmp: Path, corpus: Path | None) -> list[Path]:
    files = [odd_tree(tmp)]
    gen = tmp / "gen.jsonl"
    generate_session(gen, entries=600, seed=3, payload_scale=0.01)
    files.append(gen)
    if corpus is not None:
        files.extend(sorted(corpus.glob("*.jsonl")))
    return files


def brute_parents(entries: list[dict[str, Any]]) -> list[int]:
    """Parents by the contract: a string parentId naming an entry (not itself), then each
    cycle broken at its earliest member in file order."""
    at = {}
    for i, e in enumerate(entries):
        at.setdefault(e["id"], i)
    parent = [at.get(e.get("parentId"), -1) if isinstance(e.get("parentId"), str) else -1 for e in entries]
    parent = [-1 if p == i else p for i, p in enumerate(parent)]
    while True:
        broken = False
        for s in range(len(parent)):
            seen: list[int] = []
            x = s
            while x != -1 and x not in seen:
                seen.append(x)
                x = parent[x]
            if x != -1:  # walked into a cycle
                cycle = seen[seen.index(x):]
                parent[min(cycle)] = -1
                broken = True
                break
        if not broken:
            return parent


def brute_role(e: dict[str, Any]) -> str | None:
    msg = e.get("message")
    role = msg.get("role") if e.get("type") == "message" and isinstance(msg, dict) else None
    return role if isinstance(role, str) else None


def brute_usage(entries: list[dict[str, Any]]) -> tuple[dict[str, Any], Any, int]:
    keys = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
    tokens: dict[str, Any] = dict.fromkeys(keys, 0)
    cost: Any = 0
    count = 0
    for e in entries:
        msg = e.get("message")
        if e.get("type") != "message" or not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        count += 1
        usage = msg.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        for k in keys:
            v = usage.get(k)
            if type(v) in (int, float):
                tokens[k] += v
        c = usage.get("cost")
        total = c.get("total") if isinstance(c, dict) else None
        if type(total) in (int, float):
            cost += total
    return tokens, cost, count


def js_truthy(v: Any) -> bool:
    return not (v is None or v is False or v == "" or (type(v) in (int, float) and (v == 0 or v != v)))


def brute_labels(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Pi's labelsById: label entries in file order, on any branch; a truthy label sets
    it (a Map keeps the place of a key set again), anything else deletes it; only
    string targets."""
    labels: dict[str, Any] = {}
    for e in entries:
        target = e.get("targetId")
        if e.get("type") != "label" or not isinstance(target, str):
            continue
        if js_truthy(e.get("label")):
            labels[target] = e["label"]
        else:
            labels.pop(target, None)
    return labels


def check_against_brute_force(sm: SessionManager) -> TreeShape:
    entries = sm.get_entries()
    ids = [e["id"] for e in entries]
    n = len(ids)
    shape = sm.get_shape()
    assert len(shape) == n and list(shape.ids) == ids
    assert list(shape.types) == [e["type"] if isinstance(e.get("type"), str) and e["type"] in ENTRY_TYPES else "?"
                                 for e in entries]
    assert list(shape.roles) == [brute_role(e) for e in entries]
    parents = brute_parents(entries)
    assert list(shape.parents) == parents
    assert list(shape.roots) == [i for i, p in enumerate(parents) if p == -1]
    assert list(shape.timestamps_ms) == [parse_iso_ms(e.get("timestamp")) for e in entries]
    kids: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(parents):
        if p >= 0:
            kids[p].append(i)
    times = list(shape.timestamps_ms)
    # get_tree order: oldest first, stable; times that do not parse after the rest.
    tree_order = [sorted(k, key=lambda c: (times[c] is None, times[c] or 0)) for k in kids]
    stack = [(node, -1) for node in sm.get_tree()]
    seen = 0
    while stack:
        node, _ = stack.pop()
        i = shape.index(node.entry["id"])
        assert [c.entry["id"] for c in node.children] == [ids[c] for c in shape.children(i)]
        stack.extend((c, i) for c in node.children)
        seen += 1
    assert seen == n
    for i, eid in enumerate(ids):
        assert list(shape.children(i)) == tree_order[i]
        assert shape.index(eid) == i
        path = [e["id"] for e in sm.get_branch(eid)]
        assert shape.depth(i) == len(path) - 1
        assert sm.get_path_ids(eid) == path
        assert sm.parent_of(eid) == (ids[parents[i]] if parents[i] >= 0 else None)
        assert sm.get_children_ids(eid) == [c["id"] for c in sm.get_children(eid)] == [ids[c] for c in kids[i]]
        assert sm.get_entry_type(eid) == shape.types[i]
        assert sm.resolve_id(eid) == eid
    assert sm.get_leaf_ids() == [ids[i] for i in range(n) if not kids[i]]
    assert sm.get_path_ids() == [e["id"] for e in sm.get_branch()]
    with pytest.raises(EntryNotFoundError):
        shape.index("no such id")
    with pytest.raises(EntryNotFoundError):
        sm.parent_of("no such id")
    with pytest.raises(IndexError):
        shape.children(n)
    assert sm.get_entry_type("no such id") is None
    assert sm.get_children_ids("no such id") == [] and sm.get_path_ids("no such id") == []
    asked = ids[::-1] + ["no such id", ids[0] if ids else "x"]
    assert sm.get_entries_by_id(asked) == [sm.get_entry(i) for i in asked]
    labels = brute_labels(entries)
    assert sm.get_labels() == labels and list(sm.get_labels()) == list(labels)
    assert all(sm.get_label(t) == v for t, v in labels.items())
    tokens, cost, count = brute_usage(entries)
    usage = sm.get_usage_totals()
    assert usage.tokens == tokens and usage.cost == cost and usage.messages == count
    assert sum(k for _, _, k in usage.models) == count
    return shape


@pytest.fixture
def files(tmp_path: Path, request: pytest.FixtureRequest) -> list[Path]:
    from _shared import CORPUS

    return sources(tmp_path, CORPUS if CORPUS.is_dir() else None)


def test_structure_matches_brute_force(files: list[Path], backend: str) -> None:
    for f in files:
        try:
            sm = open_quiet(f, backend)
        except Exception:  # noqa: BLE001 - headerless corpus files are refused (CONTRACT.md §5.2)
            continue
        with sm:
            check_against_brute_force(sm)


@pytest.mark.skipif(not native_available(), reason="the native extension is not built")
def test_backends_agree(files: list[Path]) -> None:
    for f in files:
        try:
            py, nat = open_quiet(f, "python"), open_quiet(f, "native")
        except Exception:  # noqa: BLE001
            continue
        with py, nat:
            assert py.get_shape() == nat.get_shape(), f.name
            assert py.get_leaf_ids() == nat.get_leaf_ids()
            assert py.get_usage_totals() == nat.get_usage_totals(), f.name


def test_odd_tree_facts(tmp_path: Path, backend: str) -> None:
    """A few facts of ``odd_tree`` spelled out, so a shared mistake cannot hide."""
    with open_quiet(odd_tree(tmp_path), backend) as sm:
        shape = sm.get_shape()
        at = shape.index
        assert shape.roles[at("ab01")] == "hookMessage" and shape.roles[at("ab02")] is None
        assert shape.roles[at("later")] is None and shape.roles[at("dup")] is None
        assert shape.types[at("dup2")] == "message" and shape.roles[at("dup2")] == "assistant"
        usage = sm.get_usage_totals()
        assert usage.tokens["input"] == 0 and usage.tokens["output"] == 7 and usage.cost == 0.25 + 0
        assert shape.types[at("w1")] == "?" and shape.types[at("w2")] == "?" and shape.types[at("l1")] == "label"
        assert shape.parents[at("c1")] == -1 and sm.parent_of("c2") == "c1" and sm.parent_of("self") is None
        assert sm.parent_of("fwd") == "later"
        # Equal times keep file order; "not a time" and 17 come last, in file order.
        assert [shape.ids[c] for c in shape.children(at("aa01"))] == ["aa03", "ab01", "aa02", "aa04", "aa05"]
        assert shape.timestamps_ms[at("aa04")] is None and shape.timestamps_ms[at("aa05")] is None
        assert sm.get_entry_type("w2") == "?" and sm.get_entry_type("nope") is None
        assert shape.depth(at("fwd")) == 3  # aa01 → aa03 → later → fwd
        assert list(sm.get_labels().items()) == [("aa02", "x again"), ("gone", "z")]


def test_resolve_id(tmp_path: Path, backend: str) -> None:
    with open_quiet(odd_tree(tmp_path), backend) as sm:
        assert sm.resolve_id("sel") == "self"
        assert sm.resolve_id("aa01") == "aa01"
        with pytest.raises(ValueError, match="ambiguous: 5 entries"):
            sm.resolve_id("aa0")
        with pytest.raises(ValueError, match="ambiguous: 2 entries"):
            sm.resolve_id("ab")
        with pytest.raises(EntryNotFoundError):
            sm.resolve_id("zz")
        with pytest.raises(TypeError):
            sm.resolve_id(5)  # type: ignore[arg-type]
    # An exact id wins over longer ids it is a prefix of.
    path = write(tmp_path / "exact.jsonl", [m("ab", None), m("abc", "ab"), m("abd", "ab")])
    with open_quiet(path, backend) as sm:
        assert sm.resolve_id("ab") == "ab"
        assert sm.resolve_id("abc") == "abc"


def test_shape_is_a_snapshot(tmp_path: Path, backend: str) -> None:
    path = write(tmp_path / "s.jsonl", [m("a", None), m("b", "a", role="assistant")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        sm = SessionManager.open(str(path), backend=backend)
    with sm:
        before = sm.get_shape()
        sm.append_message({"role": "user", "content": "c", "timestamp": 3})
        after = sm.get_shape()
        assert len(before) == 2 and len(after) == 3 and before != after
        assert list(after.children(1)) == [2] and list(before.children(1)) == []
        assert sm.get_leaf_ids() == [after.ids[2]]
        assert repr(before) == "TreeShape(2 entries, 1 roots)"
        new = after.ids[2]
        with pytest.raises(EntryNotFoundError):
            before.index(new)  # appended after the snapshot
        assert after.index(new) == 2 and before.index("b") == 1
        with pytest.raises(EntryNotFoundError):
            before.index(5)  # type: ignore[arg-type]
    # A shape outlives its session.
    assert [before.index(i) for i in ("b", "a")] == [1, 0] and after.index(new) == 2
    with pytest.raises(EntryNotFoundError):
        after.index("zz")


def test_shape_ids_read_like_a_list(tmp_path: Path, backend: str) -> None:
    # The native shape reads its ids from the core when asked (schema.IdColumn): every
    # way of reading them gives what a list of the ids gives, before and after close,
    # and ids appended after the snapshot are not part of it.
    path = write(tmp_path / "s.jsonl", [m("a", None), m("b", "a", role="assistant"), m("c", "b")])
    with open_quiet(path, backend) as sm:
        shape = sm.get_shape()
        sm.append_message({"role": "user", "content": "d", "timestamp": 4})
        fresh = sm.get_shape()
    want, ids = ["a", "b", "c"], shape.ids
    # One at a time first (before anything reads them all), after the session closed.
    assert len(ids) == 3
    assert [ids[0], ids[2], ids[-1], ids[-3]] == ["a", "c", "c", "a"]
    for bad in (3, -4, 10**20):
        with pytest.raises(IndexError):
            ids[bad]
    with pytest.raises(TypeError):
        ids["0"]  # type: ignore[call-overload]
    assert shape.ids[1:] == ["b", "c"] and shape.ids[::-1] == want[::-1]
    assert list(shape.ids) == want and shape.ids == want and want == list(shape.ids)
    assert "b" in shape.ids and "d" not in shape.ids and shape.ids.index("c") == 2
    assert shape.ids != ["a", "b"] and shape.ids != fresh.ids and len(fresh.ids) == 4
    assert fresh.ids[3] not in want and fresh.ids[:3] == want
