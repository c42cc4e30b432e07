"""The Rust extension and its adapter ``NativeIndex`` in isolation (no manager)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("sessiontree._sessiontree")

from sessiontree import _sessiontree as st  # noqa: E402
from sessiontree._native import NativeIndex  # noqa: E402
from sessiontree.errors import InvalidSessionError, SessionError, StaleSessionError  # noqa: E402

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'


def entry(eid: str, parent: str | None, ts: str = "2025-01-01T00:00:01.000Z", **extra: object) -> bytes:
    d = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts}
    d.update(extra or {"message": {"role": "user", "content": eid}})
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()


def image(*lines: bytes) -> bytes:
    return b"".join(line + b"\n" for line in (HEADER, *lines))


def test_version_and_count_newlines(tmp_path: Path) -> None:
    assert isinstance(st.__version__, str)
    p = tmp_path / "s.jsonl"
    p.write_bytes(image(entry("a", None)) + b"partial")
    assert st.count_newlines(p) == 2
    with pytest.raises(FileNotFoundError):
        st.count_newlines(tmp_path / "missing.jsonl")


def test_corpus_matches_pi(corpus_dir: Path) -> None:
    """Ids, leaf, children and branches equal Pi's (duplicates aside: CONTRACT §5 point 1)."""
    for f in sorted(corpus_dir.glob("*.jsonl")):
        exp = json.loads(f.with_name(f.name[: -len(".jsonl")] + ".expected.json").read_text())
        try:
            ix = NativeIndex.open(str(f))
        except InvalidSessionError:
            continue  # Pi overwrites headerless files; we refuse (CONTRACT §5 point 2)
        if ix.needs_migration:
            continue
        unique = list(dict.fromkeys(exp["entryIds"]))
        if len(unique) != len(exp["entryIds"]):
            continue  # Pi indexes the last duplicate; the contract keeps the first
        assert ix.ids() == unique, f.name
        assert ix.last_id() == exp["leafId"], f.name
        for eid, kids in exp["children"].items():
            assert [c["id"] for c in ix.children(eid)] == kids, (f.name, eid)
        for eid, branch in exp["branches"].items():
            assert ix.path_ids(eid) == branch, (f.name, eid)
        assert ix.session_name() == exp["sessionName"], f.name
        assert {k: v for k, v in ix.labels().items() if k in ix} == exp["labels"], f.name
        # Entries equal json.loads of their lines.
        for e, raw in zip(ix.entries(), (ix.raw_line(i) for i in ix.ids())):
            assert raw is not None and e == json.loads(raw.decode("utf-8", "replace"))


def test_tree_order_matches_pi(corpus_dir: Path) -> None:
    exp = json.loads((corpus_dir / "edge-timestamps.expected.json").read_text())
    ix = NativeIndex.open(str(corpus_dir / "edge-timestamps.jsonl"))
    roots = ix.tree()
    assert [r.entry["id"] for r in roots] == exp["treeRoots"]
    stack = list(roots)
    while stack:
        node = stack.pop()
        assert [c.entry["id"] for c in node.children] == exp["treeChildren"][node.entry["id"]]
        stack.extend(node.children)


def test_cases_load(cases_dir: Path) -> None:
    ix = NativeIndex.open(str(cases_dir / "F01-truncated-tail.jsonl"))
    assert ix.ids() == [f"a000000{i}" for i in range(1, 7)]
    [issue] = ix.load_report()
    assert (issue.kind, issue.line, issue.offset) == ("truncated", 8, 2293)
    assert ix.has_pending_tail()
    with pytest.raises(InvalidSessionError) as e:
        NativeIndex.open(str(cases_dir / "F08-corrupt-header.jsonl"))
    assert (e.value.line, e.value.offset) == (1, 0)
    ix = NativeIndex.open(str(cases_dir / "F07-bom-crlf.jsonl"))
    assert len(ix) == 4 and ix.session_name() == "Readme summary"
    assert all(not r.endswith(b"\r") for r in (ix.raw_line(i) for i in ix.ids()) if r)
    ix = NativeIndex.open(str(cases_dir / "F17-first-kept-off-path.jsonl"))
    plan = ix.context_plan(ix.last_id())
    assert plan.compaction_id == "c0000001" and plan.message_ids == ["a0000005", "a0000006"]
    assert [(i.kind, i.line, i.offset) for i in ix.load_report()] == [("first_kept_off_path", 6, 1465)]
    ix = NativeIndex.open(str(cases_dir / "F22-v1-legacy.jsonl"))
    assert ix.needs_migration and len(ix) == 0


def test_loader_rules_on_an_image() -> None:
    data = image(
        entry("a", None),
        b"garbage",
        entry("b", "a"),
        entry("b", "a"),  # duplicate: first stands
        entry("c", "zz"),  # missing parent
        b'{"type":"message","parentId":null}',  # no id
        entry("d", None, type="weird"),
        b"[1]",
        b'junk{"type":"message","id":"e","parentId":"b"}',  # torn fragment
        entry("f", "g"),  # cycle f -> g -> f
        entry("g", "f"),
    )
    ix = NativeIndex.from_image(data)
    assert ix.ids() == ["a", "b", "c", "d", "e", "f", "g"]
    kinds = [(i.kind, i.line, i.ids) for i in ix.load_report()]
    assert kinds == [
        ("invalid_json", 3, ()),
        ("duplicate_id", 5, ("b",)),
        ("missing_parent", 6, ("c", "zz")),
        ("missing_id", 7, ()),
        ("unknown_type", 8, ("d",)),
        ("not_an_object", 9, ()),
        ("torn_fragment", 10, ()),
        ("cycle", 11, ("f", "g")),
    ]
    assert ix.path_ids("e") == ["a", "b", "e"]
    assert ix.path_ids("g") == ["f", "g"]
    assert ix.raw_line("e") == b'{"type":"message","id":"e","parentId":"b"}'


def test_lone_surrogate_and_escaped_ids() -> None:
    data = image(
        b'{"type":"message","id":"\\ud800x","parentId":null,"message":{"role":"user"}}',
        b'{"type":"message","id":"\\u0062","parentId":"\\ud800x","message":{"role":"assistant"}}',
    )
    ix = NativeIndex.from_image(data)
    assert ix.ids() == ["\ud800x", "b"]
    assert "\ud800x" in ix and 7 not in ix
    assert ix.path_ids("b") == ["\ud800x", "b"]
    assert ix.context_plan("b").model_id == "b"


def test_deep_tree_without_recursion() -> None:
    n = 100_000
    lines = [entry(f"e{i}", f"e{i - 1}" if i else None, message={"role": "user"}) for i in range(n)]
    ix = NativeIndex.from_image(image(*lines))
    node = ix.tree()[0]
    depth = 1
    while node.children:
        node = node.children[0]
        depth += 1
    assert depth == n
    assert len(ix.path_ids(f"e{n - 1}")) == n


def test_append_line_without_rescan() -> None:
    ix = NativeIndex.from_image(image(entry("a", None)))
    before = ix.image_len()
    assert ix.append_line(entry("b", "a")) == "b"
    assert ix.image_len() == before + len(entry("b", "a")) + 1
    assert ix.path_ids("b") == ["a", "b"]
    assert [c["id"] for c in ix.children("a")] == ["b"]
    with pytest.raises(ValueError):
        ix.append_line(entry("b", "a"))  # duplicate id: reported, not accepted
    assert ix.load_report()[-1].kind == "duplicate_id"


def test_append_after_pending_tail() -> None:
    ix = NativeIndex.from_image(image(entry("a", None)) + b'{"type":"mess')
    assert ix.has_pending_tail()
    assert [i.kind for i in ix.load_report()] == ["truncated"]
    assert ix.append_line(entry("b", "a")) == "b"
    assert not ix.has_pending_tail()
    assert [(i.kind, i.line) for i in ix.load_report()] == [("invalid_json", 3)]
    assert ix.path_ids("b") == ["a", "b"]


def test_refresh_complete_and_partial_lines(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(image(entry("a", None)))
    ix = NativeIndex.open(str(p))
    with open(p, "ab") as f:
        f.write(entry("b", "a") + b"\n" + entry("c", "b")[:10])
    assert ix.refresh(str(p)) == 1
    assert ix.has_pending_tail() and ix.ids() == ["a", "b"]
    with open(p, "ab") as f:
        f.write(entry("c", "b")[10:] + b"\n")
    assert ix.refresh(str(p)) == 1
    assert ix.ids() == ["a", "b", "c"] and not ix.load_report()
    assert ix.image_len() == p.stat().st_size
    assert ix.refresh(str(p)) == 0


def test_refresh_resolves_forward_parent(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(image(entry("a", "later")))
    ix = NativeIndex.open(str(p))
    assert [i.kind for i in ix.load_report()] == ["missing_parent"]
    with open(p, "ab") as f:
        f.write(entry("later", None) + b"\n")
    assert ix.refresh(str(p)) == 1
    assert ix.load_report() == [] and ix.path_ids("a") == ["later", "a"]


def test_truncate_while_open_raises_stale(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(image(*(entry(f"e{i}", None, message={"text": "x" * 5000}) for i in range(50))))
    ix = NativeIndex.open(str(p))
    assert ix.get("e3") is not None
    os.truncate(p, 100)
    # "e3" is decoded and cached: served without touching the map. Anything that must
    # read the map raises instead of faulting (no SIGBUS).
    with pytest.raises(StaleSessionError):
        ix.get("e4")
    with pytest.raises(StaleSessionError):
        ix.path("e40")
    with pytest.raises(StaleSessionError):
        ix.refresh(str(p))


def test_refresh_reads_the_file_the_index_holds(tmp_path: Path) -> None:
    """The core reads growth from the file descriptor it holds: a path replaced or
    removed is the manager's staleness check (``test_guard_stale_file_is_refused``),
    not the index's. An index built from bytes follows the file named on its first
    refresh."""
    p = tmp_path / "s.jsonl"
    p.write_bytes(image(entry("a", None)))
    ix = NativeIndex.open(str(p))
    q = tmp_path / "t.jsonl"
    q.write_bytes(image(entry("a", None), entry("b", "a")))
    os.replace(q, p)
    assert ix.refresh(str(p)) == 0 and ix.ids() == ["a"]
    os.remove(p)
    assert ix.refresh(str(p)) == 0 and ix.get("a") is not None
    p.write_bytes(image(entry("a", None)))
    mem = NativeIndex.from_image(p.read_bytes())
    with open(p, "ab") as f:
        f.write(entry("b", "a") + b"\n")
    assert mem.refresh(str(p)) == 1 and mem.path_ids("b") == ["a", "b"]
    assert st.Index.from_image(image()).refresh() == 0


def test_errors_and_close(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        NativeIndex.open(str(tmp_path / "nope.jsonl"))
    with pytest.raises(InvalidSessionError):
        NativeIndex.from_image(b"")
    with pytest.raises(InvalidSessionError) as e:
        NativeIndex.from_image(entry("a", None) + b"\n" + HEADER + b"\n")
    assert (e.value.line, e.value.offset) == (1, 0)
    ix = NativeIndex.from_image(image(entry("a", None)))
    ix.close()
    with pytest.raises(SessionError):
        ix.get("a")
    with pytest.raises(IndexError):
        st.Index.from_image(image()).line(0)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b" \n\r\n",
        b"\xef\xbb\xbf[1]\r\n",
        b'{"type":{"a":[1,"]}\\""]},"id":"x"}\n',
        b'{"type":12345678901234567890123,"id":"x"}\n',
        b'{"type":1e400}\n',
        b'{"type":true}\n',
        b'{"type":null,"id":"x"}\n',
        b'{"type":"\\ud800"}\n',
        b'{"type":"caf\\u00e9"}\n',
        b'\n\n{"type":"session","id":7}\n',
        b'torn{"type":"message","id":"a"}\n' + HEADER + b"\n",
    ],
)
def test_header_error_from_the_core_code_matches_the_python_backend(data: bytes, tmp_path: Path) -> None:
    """The core returns where and why (a code); the message is the python backend's,
    without reading the file again (``_load.header_error_from_code``)."""
    from sessiontree._pure import PythonIndex

    p = tmp_path / "s.jsonl"
    p.write_bytes(data)
    got = []
    for opener in (PythonIndex.open, NativeIndex.open):
        with pytest.raises(InvalidSessionError) as e:
            opener(str(p))
        got.append((e.value.line, e.value.offset, e.value.reason, str(e.value)))
    assert got[0] == got[1]
    for build in (PythonIndex.from_image, NativeIndex.from_image):
        with pytest.raises(InvalidSessionError) as e:
            build(data)
        got.append((e.value.line, e.value.offset, e.value.reason, str(e.value)))
    assert got[2] == got[3]
