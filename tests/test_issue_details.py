"""Whole load reports, ``detail`` included, are equal on both backends.

The native core reports facts (``Index.issues()``: kind, line, offset, ids, n, text);
``_backend.describe_issue`` words them. The python loader (``_load.py``) still writes
its own words; where they use a value the core does not have, the comparison is an
expected failure until ``_load.py`` calls ``describe_issue`` too:

- ``not_an_object``: python names the JSON type (``JSON list, not an object``);
  the shared wording is ``valid JSON but not an object``.
- ``invalid_parent``: python shows the parentId's repr; shared: ``parentId is not an id
  or null``.
- ``unknown_type`` of a non-string ``type``, ``first_kept_off_path`` of a non-string
  ``firstKeptEntryId``: python shows the repr; shared: ``entry type is absent or not a
  string`` / ``firstKeptEntryId is not a string: only the summary is kept``.
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

# Kinds whose python-backend wording may still differ (see the module docstring).
PENDING = {IssueKind.NOT_AN_OBJECT, IssueKind.INVALID_PARENT, IssueKind.UNKNOWN_TYPE, IssueKind.FIRST_KEPT_OFF_PATH}

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'


def _e(eid: str, parent: Any, etype: str = "message", **extra: Any) -> bytes:
    d = {"type": etype, "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", **extra}
    return json.dumps(d, separators=(",", ":")).encode()


# Every kind, in forms whose words both backends can give today.
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
        b'{"type":"message","id":"t"',
    ]
)

# The forms whose python wording is pending.
PENDING_FORMS = b"\n".join(
    [HEADER, b"[1]", _e("a", 7), _e("b", None, etype=5), _e("c", None, "compaction", firstKeptEntryId=3), b""]
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
    differ = [(p, n) for p, n in zip(py, nat) if p[4] != n[4]]
    assert [d for d in differ if d[0][0] not in PENDING] == []
    if differ:
        pytest.xfail(f"_load.py words {sorted({p[0] for p, _ in differ})} itself (not describe_issue yet)")


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


@pytest.mark.parametrize("path", _files(CASES) + _files(CORPUS), ids=lambda p: p.name)
def test_reports_with_details_agree_on_shared_files(path: Path) -> None:
    _compare(path)


def test_reports_with_details_agree_on_every_kind(tmp_path: Path) -> None:
    p = tmp_path / "every.jsonl"
    p.write_bytes(EVERY_KIND)
    kinds = {i[0] for i in _report(NativeIndex, p)}
    assert kinds == {v for k, v in vars(IssueKind).items() if not k.startswith("_")} - PENDING | {
        IssueKind.UNKNOWN_TYPE,
        IssueKind.FIRST_KEPT_OFF_PATH,
    }
    _compare(p)


def test_reports_with_details_on_pending_forms(tmp_path: Path) -> None:
    p = tmp_path / "pending.jsonl"
    p.write_bytes(PENDING_FORMS)
    _compare(p)


def test_describe_issue_words_every_kind() -> None:
    for kind in (v for k, v in vars(IssueKind).items() if not k.startswith("_")):
        detail = describe_issue(kind, ("x", "y"), 3, "t")
        assert detail and detail != kind
    assert describe_issue(IssueKind.UNKNOWN_TYPE, ("x",), None, None) == "entry type is absent or not a string"
    assert describe_issue(IssueKind.UNKNOWN_TYPE, ("x",), None, "w") == "unknown entry type 'w'"
