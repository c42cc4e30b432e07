"""Rule 3 (CONTRACT §2): behind torn bytes, an object read only because it ends the line
may be a value nested in the torn record (a parsed session line in a tool result's
``details``, cut right after it by a crash, the line then ended by a bare LF as Pi
0.84.4+ ends an unterminated last line). It is the entry a writer appended behind the
torn record only if it continues the tree as that writer's does: its ``parentId`` is an
entry's id read before on the file, or ``null`` while no entry is the leaf (a parsed
first line of another session has ``null``). Else it is reported as a ``torn_fragment`` of its own bytes and no
entry: not the leaf, not in the context, not in the listing, search or usage
(adversary round 47, R6). Checked on both backends, a fresh open and a refresh, and the
catalog's readers with and without a catalog.

Expectations are written by hand from the rule, not taken from the loader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager

from _shared import open_quiet, report

HDR = {"type": "session", "version": 3, "id": "0197a0b0-0000-7000-8000-0000000nest", "timestamp": "2026-01-01T00:00:00.000Z",
       "cwd": "/p"}
UNSET = object()


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def msg(eid: str, parent: Any, role: str = "user", text: str = "", **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text or f"text of {eid}"}], "timestamp": 1}
    if role == "assistant":
        m.update(provider="p", model="m", usage={"input": 3, "output": 4, "cacheRead": 0, "cacheWrite": 0,
                                                 "totalTokens": 7, "cost": {"total": 0.5}})
    e: dict[str, Any] = {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                         "message": m, **extra}
    if parent is UNSET:
        del e["parentId"]
    return e


def torn_with(nested: dict[str, Any]) -> tuple[str, str]:
    """A tool result record cut right after ``nested`` (its ``details``), and ``nested``'s
    bytes."""
    inner = dumps(nested)
    record = dumps(msg("t", "a", "toolResult", details=nested))
    return record[: record.index(inner) + len(inner)], inner


# (parentId of the nested object, whether it is read as an entry)
PARENTS = [
    ("1f2e3d4c", False),  # an id of another session
    ("b", False),  # an id defined later on the file: not read before
    (UNSET, False),
    ("", False),
    (7, False),
    (None, False),  # another session's first line: the leaf ("a") is not null
    ("a", True),  # continues the tree: indistinguishable from Pi's append (the price)
]


@pytest.mark.parametrize("before", ["", "leaf-null"])
def test_a_root_behind_torn_bytes_is_an_entry_only_while_no_entry_is_the_leaf(
        backend: str, tmp_path: Path, before: str) -> None:
    """A writer appends a root (``parentId`` null) only when its leaf is null: before
    the first entry, or after agent-core's ``leaf`` entry moved it to null."""
    cut, _ = torn_with(msg("r", None, text="a root"))
    lines = [dumps(HDR)]
    if before:
        lines += [dumps(msg("a", None)), dumps({"type": "leaf", "id": "l1", "parentId": "a",
                                                "timestamp": "2026-01-01T00:00:02.000Z", "targetId": None})]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join([*lines, cut, dumps(msg("b", "r"))]) + "\n")
    mgr = open_quiet(p, backend)
    assert [e["id"] for e in mgr.get_entries()][-2:] == ["r", "b"]
    assert mgr.get_path_ids() == ["r", "b"]


@pytest.mark.parametrize(("parent", "entry"), PARENTS)
def test_an_object_that_may_be_nested_is_an_entry_only_if_it_continues_the_tree(
        backend: str, tmp_path: Path, parent: Any, entry: bool) -> None:
    nested = msg("ph", parent, "assistant", text="phantom okapi")
    cut, inner = torn_with(nested)
    head = dumps(HDR) + "\n" + dumps(msg("a", None, text="zebra")) + "\n"
    body = head + cut + "\n" + dumps(msg("b", "a")) + "\n"
    p = tmp_path / "s.jsonl"
    p.write_text(body)
    mgr = open_quiet(p, backend)
    ids = [e["id"] for e in mgr.get_entries()]
    assert ids == (["a", "ph", "b"] if entry else ["a", "b"])
    assert mgr.leaf_id == "b"
    torn = [(k, line) for k, line, *_ in report(mgr) if k == "torn_fragment"]
    assert torn == [("torn_fragment", 3)] * (1 if entry else 2)
    if not entry:
        # The object's own bytes, at its own offset.
        item = [i for i in mgr.load_report if i.kind == "torn_fragment"][1]
        assert item.offset == len(head.encode()) + len(cut) - len(inner)
        assert item.detail.startswith(f"{len(inner)} bytes")


@pytest.mark.parametrize(("parent", "entry"), PARENTS[:1] + PARENTS[-1:])
def test_a_refresh_reads_it_as_a_fresh_open(backend: str, tmp_path: Path, parent: Any, entry: bool) -> None:
    """The torn record glued onto a last line read without its LF, then a bare LF (the
    repro of R6): the refresh and a fresh open agree, entry by entry and item by item."""
    cut, _ = torn_with(msg("ph", parent, text="phantom"))
    p = tmp_path / "s.jsonl"
    p.write_text(dumps(HDR) + "\n" + dumps(msg("a", None)))
    mgr = open_quiet(p, backend)
    with open(p, "a") as f:
        f.write(cut)
    mgr.refresh()
    with open(p, "a") as f:
        f.write("\n")
    mgr.refresh()
    fresh = open_quiet(p, backend)
    for m in (mgr, fresh):
        assert [e["id"] for e in m.get_entries()] == (["a", "ph"] if entry else ["a"])
        assert m.leaf_id == ("ph" if entry else "a")
        assert [x["content"][0]["text"] for x in m.build_session_context().messages][-1] == (
            "phantom" if entry else "text of a")
    assert [(*r, i.detail) for r, i in zip(report(mgr), mgr.load_report)] == [
        (*r, i.detail) for r, i in zip(report(fresh), fresh.load_report)]


def test_an_entry_appended_behind_a_torn_record_is_still_read(backend: str, tmp_path: Path) -> None:
    """Pi before 0.84.4 appended with no LF first behind a crashed writer's torn record:
    that entry's parent is the leaf Pi resumed from, so it is read, and the entries
    after it hang from it."""
    torn = dumps(msg("t", "a", "assistant"))[:90]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join([dumps(HDR), dumps(msg("a", None)), torn + dumps(msg("b", "a")), dumps(msg("c", "b"))]) + "\n")
    mgr = open_quiet(p, backend)
    assert mgr.get_path_ids() == ["a", "b", "c"]
    assert [k for k, *_ in report(mgr)] == ["torn_fragment"]


def test_the_catalog_readers_skip_it_too(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing, search and usage (each with and without a catalog) count what an
    open reads: the phantom assistant message is no message, no hit and no spending."""
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    from sessiontree import catalog

    folder = tmp_path / "sessions"
    folder.mkdir()
    cut, _ = torn_with(msg("ph", "1f2e3d4c", "assistant", text="phantom okapi"))
    # After the torn line, entries whose parent is no entry read before (a missing one,
    # one defined later, none): each a root, as on any other line (adversary round 48).
    later = [dumps(msg("b", "a", "assistant", text="okapi")), dumps(msg("c", "gone", "assistant", text="okapi c")),
             dumps(msg("d", "e", "assistant", text="okapi d")), dumps(msg("e", UNSET, "assistant", text="okapi e"))]
    (folder / "2026-01-01T00-00-00-000Z_s.jsonl").write_text(
        "\n".join([dumps(HDR), dumps(msg("a", None, text="zebra")), cut, *later]) + "\n")
    cat = tmp_path / "cat.sqlite3"
    for no_cache in (True, False, False):
        [row] = SessionManager.list("/p", str(folder), catalog=cat, no_cache=no_cache)
        assert (row.message_count, row.all_messages_text) == (5, "zebra okapi okapi c okapi d okapi e")
        hits = catalog.search("okapi", [str(folder)], catalog=cat, no_cache=no_cache)
        assert sorted(h.entry_id for h in hits.hits) == ["b", "c", "d", "e"]
        assert [h.on_path for h in hits.hits if h.entry_id == "e"] == [True]  # the leaf
        rep = catalog.usage("session", [str(folder)], catalog=cat, no_cache=no_cache)
        assert [(r.records, r.output) for r in rep.lines] == [(4, 16)]


def test_a_version_2_file_is_read_by_the_same_rule(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version 2 file is migrated from its records: the rule checks the ids of the
    records read before, so the open and the listing (which reads the file unmigrated)
    agree."""
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    folder = tmp_path / "sessions"
    folder.mkdir()
    p = folder / "2026-01-01T00-00-00-000Z_s.jsonl"
    lines = [dumps({**HDR, "version": 2}), dumps(msg("a", None)), dumps({**HDR, "version": 2, "id": "h2"})]
    for parent in ("1f2e3d4c", "h2", None, "a"):  # unknown, a later header's id, a root: none continues
        lines.append(torn_with(msg(f"ph-{parent}", parent, text="phantom"))[0])
    p.write_text("\n".join(lines) + "\n")
    mgr = open_quiet(p, backend)
    assert [e["id"] for e in mgr.get_entries()] == ["a", "ph-a"]
    [row] = SessionManager.list("/p", str(folder), catalog=tmp_path / "cat.sqlite3")
    assert row.message_count == 2
