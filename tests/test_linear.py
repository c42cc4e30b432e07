"""Work linear in the input (issue 24, item 6): timed *ratios*, never wall-clock limits.

* The HTML export asked, for every sibling of a branch point, whether it is one of the
  older siblings folded behind a "more" row by building the list of all its siblings:
  quadratic in the siblings of one entry (10,000 siblings 7 s, 100,000 did not finish in
  300 s; a chain as long 0.8 s).
* The python backend's reader of the catalog (listing, search, usage, index) grew its
  buffer by concatenation while a line spanned blocks: quadratic in the length of one
  line (a 128 MB line 9.3 s, where an open takes 0.95 s).

Each test times the same work on an input and on one ``SCALE`` times larger (the best of
a few runs) and asserts the ratio stays well below what quadratic work gives: linear
work gives about ``SCALE``, quadratic ``SCALE**2``. Measured before the fixes (this
machine, 2 cores, shared): siblings 2,000 -> 16,000 took 41.2x the time, a line of 4 ->
32 MB 21.5x; after the fixes 8.1x and 6.0x.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sessiontree._structure import structure_of
from sessiontree.export.html import write_html

from _shared import open_quiet

SCALE = 8
LIMIT = 2 * SCALE  # between linear (SCALE) and quadratic (SCALE**2)


def _best(fn: Callable[[], object], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _header() -> str:
    return json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z",
                       "cwd": "/p"})


def _siblings(path: Path, n: int) -> Path:
    lines = [_header(), json.dumps({"type": "message", "id": "root", "parentId": None,
                                    "timestamp": "2026-01-01T00:00:00.000Z",
                                    "message": {"role": "user", "content": "root", "timestamp": 0}})]
    lines += [json.dumps({"type": "message", "id": f"e{i}", "parentId": "root", "timestamp": "2026-01-01T00:00:01.000Z",
                          "message": {"role": "user", "content": f"m{i}", "timestamp": 0}}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_html_export_is_linear_in_the_siblings_of_one_entry(tmp_path: Path) -> None:
    def export(path: Path) -> Callable[[], object]:
        sm = open_quiet(path, "native" if _native() else "python")
        st = structure_of(sm)
        return lambda: write_html(st, lambda s: None, branches="all")

    small = export(_siblings(tmp_path / "small.jsonl", 2_000))
    large = export(_siblings(tmp_path / "large.jsonl", 2_000 * SCALE))
    ratio = _best(large) / _best(small)
    print(f"siblings x{SCALE}: {ratio:.1f}x the time")
    assert ratio < LIMIT, f"{SCALE}x the siblings took {ratio:.1f}x the time"


def _long_line(path: Path, size: int) -> Path:
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
             "message": {"role": "user", "content": "x" * size, "timestamp": 0}}
    path.write_text(_header() + "\n" + json.dumps(entry) + "\n")
    return path


def test_python_catalog_reader_is_linear_in_one_lines_length(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What listing, search, usage and index read with the python backend (the reader
    of ``catalog/_extract.py``), through the listing that reads every text."""
    from sessiontree._listing import list_folders

    monkeypatch.setenv("SESSIONTREE_BACKEND", "python")
    folders = []
    for name, size in (("small", 4 << 20), ("large", (4 << 20) * SCALE)):
        d = tmp_path / name
        d.mkdir()
        _long_line(d / "s.jsonl", size)
        folders.append([str(d)])

    def listing(folder: list[str]) -> Callable[[], object]:
        return lambda: [s.all_messages_text for s in list_folders(folder, no_cache=True)]

    assert len(listing(folders[1])()[0]) == (4 << 20) * SCALE
    ratio = _best(listing(folders[1]), 2) / _best(listing(folders[0]), 2)
    print(f"line length x{SCALE}: {ratio:.1f}x the time")
    assert ratio < LIMIT, f"a line {SCALE}x as long took {ratio:.1f}x the time"


def _native() -> bool:
    from _shared import native_available

    return native_available()
