"""The first search's read of a file larger than its step (``src/search.rs``
``prefilter``: a step at a time into the same bytes until a line is picked, then the
bytes before read again and the rest kept for the full read): its hits equal the Python
rules' wherever the first pick lies (the first step, a later one, the last, none), in
lines longer than a step and with a word across a step's end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree.catalog import _search

from _shared import native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

STEP = 256 << 10  # src/search.rs STEP


def _session(path: Path, texts: list[str]) -> None:
    lines = [json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "2025-11-02T10:00:00.000Z",
                         "cwd": "/p"})]
    parent = None
    for i, text in enumerate(texts):
        eid = f"e{i:05d}"
        lines.append(json.dumps({"type": "message", "id": eid, "parentId": parent,
                                 "timestamp": f"2025-11-02T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                                 "message": {"role": "user" if i % 2 else "assistant",
                                             "content": text if i % 2 else [{"type": "text", "text": text}]}}))
        parent = eid
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _filler(i: int) -> str:
    return f"entry {i} " + "lorem ipsum dolor sit amet, " * 70


CASES: dict[str, Any] = {
    "none": lambda: [_filler(i) for i in range(600)],
    "first step": lambda: [_filler(i) + (" zebrafish" if i == 3 else "") for i in range(600)],
    "middle": lambda: [_filler(i) + (" Zebrafish" if i in (300, 301, 450) else "") for i in range(600)],
    "last entry": lambda: [_filler(i) + (" zebrafish" if i == 599 else "") for i in range(600)],
    "first and last": lambda: [_filler(i) + (" zebrafish" if i in (0, 599) else "") for i in range(600)],
    "a line longer than a step": lambda: [_filler(0), "x " * (STEP // 2 + 100) + "zebrafish", _filler(2)],
    "across a step's end": lambda: [_filler(0) * 0 + "y" * (STEP - 300) + " zebrafish tail", _filler(1)]
    + [_filler(i) for i in range(2, 400)],
    "escaped in a late line": lambda: [_filler(i) for i in range(500)] + ["\u0000 zebr\u0061fish \"q\""],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_first_search_of_large_files_equals_python_rules(tmp_path: Path, case: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    _session(folder / "2025-11-02T10-00-00-000Z_a.jsonl", CASES[case]())
    assert (folder / "2025-11-02T10-00-00-000Z_a.jsonl").stat().st_size > STEP
    got = {q: _search.search_folders(q, [str(folder)], no_cache=True, limit=None)
           for q in ("zebrafish", '"ipsum dolor"', "tail")}
    monkeypatch.setattr(_search, "native_scanner", lambda: None)
    for q, result in got.items():
        want = _search.search_folders(q, [str(folder)], no_cache=True, limit=None)
        assert result == want, (case, q)
    if case != "none":
        assert got["zebrafish"].total > 0
