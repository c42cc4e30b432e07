"""A header's ``version`` as Pi compares it (adversary round 46, N3): Pi's
``migrateToCurrentVersion`` reads ``header.version ?? 1`` and compares with ``< 2`` /
``< 3``, JavaScript's ``ToNumber``: ``true`` is 1 and ``"2"`` 2, so such a file is
migrated; ``{}`` or ``"v1"`` is NaN, below nothing, so it is not. Before the fix only
numbers migrated: a ``"version": true`` file's every entry was ``missing_id``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _shared import open_quiet

from sessiontree import SessionManager

V1_LINES = (
    b'{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one",'
    b'"timestamp":1}}\n'
    b'{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":'
    b'[{"type":"text","text":"two"}],"timestamp":2}}\n'
)

# version -> migrated (Pi's `version < 3` on ToNumber(version)).
VERSIONS: list[tuple[Any, bool]] = [
    (True, True), (False, True), ("1", True), ("\u3000 1\n", True), ("", True), ("0x1", True), (1.5, True),
    ([], True), ([1], True), (None, True),
    ("v1", False), ({}, False), ([1, 2], False), ("inf", False), ("Infinity", False), (3, False), ("3", False),
]


@pytest.mark.parametrize(("version", "migrated"), VERSIONS, ids=[json.dumps(v) for v, _ in VERSIONS])
def test_a_version_is_compared_as_pi_compares_it(tmp_path: Path, backend: str, version: Any, migrated: bool) -> None:
    header = {"type": "session", "version": version, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
    p = tmp_path / "s.jsonl"
    p.write_bytes(json.dumps(header).encode() + b"\n" + V1_LINES)
    sm = open_quiet(p, backend)
    kinds = [i.kind for i in sm.load_report]
    if migrated:
        assert kinds == []
        texts = [m["content"] for m in sm.build_session_context().messages]
        assert texts[0] == "one" and len(texts) == 2
        assert sm.get_header()["version"] == 3
    else:
        assert kinds == ["missing_id", "missing_id"]
    sm.close()


@pytest.mark.parametrize(("version", "count"), [(True, 2), ("1", 2), ({}, 0)], ids=["true", "string", "object"])
def test_the_listing_counts_a_version_1_file_as_pi_compares_its_version(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch, version: Any, count: int
) -> None:
    """The listing reads a version 1 file's entries without ids (``version < 2``), the
    same comparison: ``true`` is such a file, ``{}`` is not."""
    header = {"type": "session", "version": version, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
    (tmp_path / "2025-01-01T00-00-00-000Z_s.jsonl").write_bytes(json.dumps(header).encode() + b"\n" + V1_LINES)
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    infos = SessionManager.list("/p", session_dir=str(tmp_path), no_cache=True)
    assert [(i.id, i.message_count) for i in infos] == [("s", count)]
