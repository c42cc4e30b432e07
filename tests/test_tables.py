"""One table per language, held equal: the Rust core's constants against Python's."""

from __future__ import annotations

import pytest

from sessiontree import _jsonl, _reader, schema
from sessiontree._backend import IssueKind

st = pytest.importorskip("sessiontree._sessiontree")


def test_entry_types() -> None:
    assert len(set(st.ENTRY_TYPES)) == len(st.ENTRY_TYPES)
    assert set(st.ENTRY_TYPES) == schema.ENTRY_TYPES


def test_message_roles() -> None:
    assert st.ROLES == schema.MESSAGE_ROLES


def test_usage_keys() -> None:
    from sessiontree._usage import TOKEN_KEYS

    assert st.TOKEN_KEYS == TOKEN_KEYS


def test_issue_kinds() -> None:
    python = [v for k, v in vars(IssueKind).items() if not k.startswith("_")]
    assert len(set(st.ISSUE_KINDS)) == len(st.ISSUE_KINDS)
    assert sorted(st.ISSUE_KINDS) == sorted(python)


def test_json_limits() -> None:
    assert st.MAX_DEPTH == _jsonl.MAX_DEPTH
    assert st.MAX_INT_DIGITS == _jsonl.MAX_INT_DIGITS
    assert st.MAX_TORN_CANDIDATES == _reader.MAX_TORN_CANDIDATES


def test_fingerprint_size() -> None:
    from sessiontree import _filestate

    assert st.FINGERPRINT == _filestate.FINGERPRINT


def test_clip_whole_keys() -> None:
    from sessiontree._clip import WHOLE_KEYS

    assert set(st.CLIP_WHOLE_KEYS) == WHOLE_KEYS


def test_table_limits() -> None:
    tables = pytest.importorskip("sessiontree._rows")
    assert st.TABLE_LIMITS == (tables.MAX_TEXT, tables.MAX_RESULT, tables.MAX_ARGUMENTS, tables.MAX_FIELD)
