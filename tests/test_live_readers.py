"""Live readers and crashed writers (issue 11, items 1, 2 and 6): what a reader that
calls ``refresh()`` while another process writes sees must equal what a fresh open of
the same bytes sees, after every piece; a line cut by a crash never becomes an entry.

Real second processes write (``_writers.PieceWriter``), in small pieces and right
after nested ``{"type":...}`` objects, where loader rule 4 (torn-fragment recovery)
used to take a prefix for "a fragment, then a complete entry".
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, StaleSessionError

from _shared import open_quiet, report
from _writers import HDR, PieceWriter, assistant, cuts_after_objects, tool_result, user


def facts(mgr: SessionManager) -> dict[str, Any]:
    return {
        "ids": [e["id"] for e in mgr.get_entries()],
        "report": report(mgr),
        "leaf": mgr.leaf_id,
        "branch": [e["id"] for e in mgr.get_branch()],
    }


def fresh(path: Path, backend: str) -> dict[str, Any]:
    mgr = open_quiet(path, backend)
    try:
        return facts(mgr)
    finally:
        mgr.close()


def test_live_reader_equals_a_fresh_open_after_every_piece(backend: str, tmp_path: Path) -> None:
    """Issue 11 item 1a. Another process writes long lines (content blocks, a tool
    result holding session lines) in small pieces, stopping right after every nested
    object; the reader refreshes after each piece. Before the fix the reader consumed
    a prefix ending after ``{"type":"text",...}`` as ``torn_fragment`` + ``missing_id``
    and never showed the real entry (a fresh open had it)."""
    p = tmp_path / "live.jsonl"
    p.write_bytes(HDR + user("u1", None) + b"\n")
    lines = [assistant("a1", "u1"), tool_result("t1", "a1"), assistant("a2", "t1", blocks=5, size=60)]
    data = b"".join(line + b"\n" for line in lines)
    rng = random.Random(11)
    cuts: set[int] = set()
    at = 0
    for line in lines:
        cuts.update(at + c for c in cuts_after_objects(line))
        cuts.update(at + rng.randrange(1, len(line)) for _ in range(6))
        at += len(line) + 1
    cuts.add(len(data))
    writer = PieceWriter(p, data, tmp_path)
    reader = open_quiet(p, backend)
    try:
        for end in sorted(cuts):
            writer.write_to(end)
            reader.refresh()
            assert facts(reader) == fresh(p, backend), f"after {end} of {len(data)} bytes"
        assert facts(reader)["ids"] == ["u1", "a1", "t1", "a2"]
        assert reader.load_report == []
    finally:
        reader.close()
        writer.close()


CRASHING_WRITER = r"""
import os, sys
path, data = sys.argv[1], bytes.fromhex(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
os.write(fd, data)
print("written", flush=True)
sys.stdin.read()  # killed here, mid-line
"""


def _crash_mid_line(path: Path, prefix: bytes) -> None:
    """A real process writes ``prefix`` (part of a line) and is killed with SIGKILL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING_WRITER, str(path), prefix.hex()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "written"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


@pytest.mark.parametrize("which", ["content-block", "nested-session-line"])
def test_crash_mid_line_invents_no_entry(which: str, backend: str, tmp_path: Path) -> None:
    """Issue 11 item 1b. A writer is killed right after a nested object of a long
    line. Before the fix the next open showed the nested object as an entry (one that
    was never a line of the file), made it the leaf, and the next append became its
    child; after an append that starts a fresh line, a reopen recovered it again."""
    p = tmp_path / "crash.jsonl"
    p.write_bytes(HDR + user("u1", None) + b"\n" + assistant("a1", "u1") + b"\n")
    line = tool_result("t1", "a1") if which == "nested-session-line" else assistant("a2", "a1")
    for cut in cuts_after_objects(line):
        p.write_bytes(HDR + user("u1", None) + b"\n" + assistant("a1", "u1") + b"\n")
        _crash_mid_line(p, line[:cut])
        mgr = open_quiet(p, backend)
        try:
            assert facts(mgr)["ids"] == ["u1", "a1"], cut
            assert mgr.leaf_id == "a1"
            assert [i.kind for i in mgr.load_report] == ["truncated"]
            new = mgr.append_message({"role": "user", "content": "after the crash", "timestamp": 5})
            assert mgr.get_entry(new)["parentId"] == "a1"
            mine = facts(mgr)
        finally:
            mgr.close()
        again = fresh(p, backend)
        assert again == mine, cut
        assert again["ids"] == ["u1", "a1", new]
        assert [k for k, *_ in again["report"]] == ["invalid_json"]
