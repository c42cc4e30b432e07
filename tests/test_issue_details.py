"""Whole load reports, ``detail`` included, are equal on both backends.

The native core reports facts (``Index.issues()``: kind, line, offset, ids, n, text);
the python loader knows the same facts; ``_backend.describe_issue`` words both, so the
same bytes give the same report, word for word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _shared import CASES, CORPUS
from sessiontree._backend import IssueKind, describe_issue
from sessiontree._pure import PythonIndex
from sessiontree.errors import InvalidSessionError

pytest.importorskip("sessiontree._sessiontree")

from sessiontree._native import NativeIndex  # noqa: E402


HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'


def _e(eid: str, parent: Any, etype: str = "message", **extra: Any) -> bytes:
    d = {"type": etype, "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", **extra}
    return json.dumps(d, separators=(",", ":")).encode()


# Every kind.
EVERY_KIND = b"\n".join(
    [
        b"\xef\xbb\xbf" + HEADER,
        _e("a", None, message={"role": "user", "content": "\xff"}).replace(b"\\u00ff", b"\xff"),
        b"garbage",
        _e("b", "a"),
        _e("b", "a"),
        _e("c", "zz"),
        b'{"type":"message","parentId":null}',
        _e("d", None, "weird"),
        b'junk{"type":"message","id":"e","parentId":"b"}',
        _e("f", "g"),
        _e("g", "f"),
        HEADER,
        _e("h", "a", "compaction", firstKeptEntryId="nope"),
        _e("l", "h", "leaf", targetId="nope"),
        b'{"type":"message","id":"t"',
    ]
)

# Forms whose words need a value the core does not keep (both backends word them alike).
VALUE_FORMS = b"\n".join(
    [HEADER, b"[1]", _e("a", 7), _e("b", None, etype=5), _e("c", None, "compaction", firstKeptEntryId=3),
     _e("l1", "c", "leaf", targetId=3), _e("l2", "c", "leaf"), _e("l3", "c", "leaf", targetId="l3"), b""]
)


def _report(cls: Any, path: Path) -> Any:
    try:
        ix = cls.open(str(path))
    except InvalidSessionError as e:
        return ("InvalidSessionError", e.line, e.offset, str(e))
    try:
        return [(i.kind, i.line, i.offset, i.ids, i.detail) for i in ix.load_report()]
    finally:
        ix.close()


def _compare(path: Path) -> None:
    py, nat = _report(PythonIndex, path), _report(NativeIndex, path)
    if isinstance(py, tuple) or isinstance(nat, tuple):
        assert py == nat
        return
    assert [i[:4] for i in py] == [i[:4] for i in nat]
    assert py == nat


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


@pytest.mark.parametrize("path", _files(CASES) + _files(CORPUS), ids=lambda p: p.name)
def test_reports_with_details_agree_on_shared_files(path: Path) -> None:
    _compare(path)


def test_reports_with_details_agree_on_every_kind(tmp_path: Path) -> None:
    p = tmp_path / "every.jsonl"
    p.write_bytes(EVERY_KIND)
    kinds = {i[0] for i in _report(NativeIndex, p)}
    assert kinds == {v for k, v in vars(IssueKind).items() if not k.startswith("_")} - {
        IssueKind.NOT_AN_OBJECT,
        IssueKind.INVALID_PARENT,
    }
    _compare(p)


def test_reports_with_details_on_value_forms(tmp_path: Path) -> None:
    p = tmp_path / "values.jsonl"
    p.write_bytes(VALUE_FORMS)
    _compare(p)


def test_describe_issue_words_every_kind() -> None:
    for kind in (v for k, v in vars(IssueKind).items() if not k.startswith("_")):
        detail = describe_issue(kind, ("x", "y"), 3, "t")
        assert detail and detail != kind
    assert describe_issue(IssueKind.UNKNOWN_TYPE, ("x",), None, None) == "entry type is absent or not a string"
    assert describe_issue(IssueKind.UNKNOWN_TYPE, ("x",), None, "w") == "unknown entry type 'w'"
