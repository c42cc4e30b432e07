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


APPENDER = r"""
import json, os, sys, time
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
print("ready", flush=True)
sys.stdin.readline()
parent = "u1"
for i in range(n):
    eid = f"w{i:07d}"
    line = json.dumps({"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                       "message": {"role": "user", "content": "z" * size, "timestamp": 1}}, separators=(",", ":"))
    os.write(fd, line.encode() + b"\n")
    parent = eid
    time.sleep(0.002)
print("done", flush=True)
"""


def test_appends_never_look_like_rewrites(backend: str, tmp_path: Path) -> None:
    """Issue 11 item 2. A reader refreshing in a loop while another process only
    appends got ``StaleSessionError("... rewritten in place")``: a write updates the
    mtime before the new size is visible, and "mtime changed, size did not" was taken
    for a rewrite. Appends must never look like rewrites, whatever order size and
    mtime become visible in."""
    p = tmp_path / "appended.jsonl"
    p.write_bytes(HDR + user("u1", None) + b"\n")
    n = 400
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(p), str(n), "60000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    reader = open_quiet(p, backend)
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            reader.refresh()  # StaleSessionError here is the bug
        assert proc.wait(timeout=30) == 0
        reader.refresh()
        assert len(reader) == n + 1 and reader.leaf_id == f"w{n - 1:07d}"
        assert facts(reader) == fresh(p, backend)
    finally:
        reader.close()
        if proc.poll() is None:
            proc.kill()


def _chain(n: int) -> bytes:
    out = [HDR]
    for i in range(n):
        out.append(user(f"{i:08x}", None if i == 0 else f"{i - 1:08x}", "x" * 100) + b"\n")
    return b"".join(out)


def test_middle_rewrite_then_append_never_splits_the_backends(tmp_path: Path) -> None:
    """Issue 11 item 6. A same-length rewrite of a line in the middle, then an append:
    the file grew, both 4 KiB ends are intact, so nothing at the file level notices.
    Before the fix the native backend returned the rewritten entry's new bytes and the
    python backend the old ones. Now every line the native backend reads must hash to
    what it indexed: it raises ``StaleSessionError`` or agrees."""
    data = _chain(200)
    old = user("00000064", "00000063", "x" * 100)
    off = data.index(old)
    p = tmp_path / "s.jsonl"
    seen: dict[str, Any] = {}
    for backend in ("python", "native"):
        p.write_bytes(data)
        mgr = open_quiet(p, backend)
        try:
            with open(p, "r+b") as f:
                f.seek(off)
                f.write(old.replace(b"x" * 100, b"y" * 100))
            with open(p, "ab") as f:
                f.write(user("new", "000000c7") + b"\n")
            try:
                mgr.refresh()
                seen[backend] = (mgr.get_entry("00000064"), [e["id"] for e in mgr.get_branch("00000064")])
            except StaleSessionError:
                seen[backend] = "stale"
        finally:
            mgr.close()
    assert seen["python"] != "stale" and seen["python"][0]["message"]["content"] == "x" * 100
    assert seen["native"] in ("stale", seen["python"])


V1 = b'{"type":"session","id":"v1-sess","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'


def _v1_line(text: str, role: str = "user") -> bytes:
    return (
        b'{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"'
        + role.encode() + b'","content":"' + text.encode() + b'","timestamp":1}}\n'
    )


def test_refresh_of_a_pending_migration_sees_appended_lines(backend: str, tmp_path: Path) -> None:
    """Issue 11 item 6. A version 1 session is migrated in memory and not rewritten
    yet; another process (an old writer) appends to the file. Before the fix
    ``refresh()`` returned 0 forever while a fresh open showed the lines."""
    p = tmp_path / "old.jsonl"
    p.write_bytes(V1 + _v1_line("one") + _v1_line("two", "assistant"))
    original_ids = None
    reader = open_quiet(p, backend)
    try:
        original_ids = [e["id"] for e in reader.get_entries()]
        leaf = reader.leaf_id
        for k in range(3):
            with open(p, "ab") as f:
                f.write(_v1_line(f"more {k}"))
            assert reader.refresh() == 1
            assert facts(reader) == fresh(p, backend)
        assert [e["id"] for e in reader.get_entries()][:2] == original_ids
        assert reader.leaf_id != leaf and len(reader) == 5
        assert reader.refresh() == 0
        # A file rewritten while the migration was pending is stale, not re-read.
        p.write_bytes(p.read_bytes().replace(b"one", b"uno"))
        with open(p, "ab") as f:
            f.write(_v1_line("later"))
        with pytest.raises(StaleSessionError):
            reader.refresh()
    finally:
        reader.close()


_PI_LIKE = r"""
import json, os, sys
# Pi's way: no lock, O_APPEND, each line in one write() (appendFileSync); long lines,
# which a reader sees land in steps.
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
for i in range(n):
    line = {"type": "message", "id": "pi%05d" % i, "parentId": "a1", "timestamp": "2026-01-01T00:00:03.000Z",
            "message": {"role": "user", "content": "p" * 70000, "timestamp": 3}}
    os.write(fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())
"""


def test_appends_beside_an_unlocked_writer_lose_and_add_nothing(backend: str, tmp_path: Path) -> None:
    """Adversary 60: while a Pi-like writer (no lock, O_APPEND, one write() per 70 KB
    line) appends, a manager appends too. Its line could land after one of the other's
    that came first: taken for a rewrite in place (StaleSessionError, 6 runs of 6
    natively); and a line still being written, sealed as a torn piece, left a line of
    ``#`` (or an empty one) after it once it ended. Now every line of both is in the
    file once, whole, nothing else is, and a reopen reports nothing."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(HDR + user("a1", None) + b"\n")
    n = 300
    env = {**os.environ, "SESSIONTREE_FSYNC": "0"}
    other = subprocess.Popen([sys.executable, "-c", _PI_LIKE, str(path), str(n)], env=env)
    try:
        mgr = open_quiet(path, backend)
        try:
            ours = [mgr.append_message({"role": "user", "content": f"s{i}", "timestamp": i}) for i in range(n)]
        finally:
            mgr.close()
    finally:
        assert other.wait(timeout=120) == 0
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(line.startswith(b'{"type":') for line in lines[:-1]), \
        [line[:20] for line in lines if not line.startswith(b'{"type":')]
    for b in ("python", "native"):
        got = fresh(path, b)
        assert got["report"] == [], got["report"][:3]
        assert sorted(got["ids"]) == sorted(["a1", *ours, *("pi%05d" % i for i in range(n))])


def test_a_sealed_line_of_glued_objects_keeps_them(backend: str, tmp_path: Path) -> None:
    """Adversary 60 (CONTRACT §4): a torn last line that begins with whole glued objects
    is pending (``truncated``) until an append seals it; the sealed line ends with LF,
    so rule 3 reads the objects as entries and the torn rest as a ``torn_fragment``.
    The writer's view equals a reopen on both backends; the append (made before they
    were entries) is a root."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(HDR + user("a1", None) + user("a2", "a1") + b'{"type":"message","')
    with open_quiet(path, backend) as mgr:
        assert [e["id"] for e in mgr.get_entries()] == [] and [i.kind for i in mgr.load_report] == ["truncated"]
        new = mgr.append_message({"role": "user", "content": "after", "timestamp": 3})
        seen = facts(mgr)
        assert mgr.get_entry(new)["parentId"] is None
    assert seen["ids"] == ["a1", "a2", new] and [r[0] for r in seen["report"]] == ["torn_fragment"]
    for b in ("python", "native"):
        assert fresh(path, b) == seen


_PAUSED = r"""
import os, sys, time
# A line written in two write()s with a pause between: what a long write that stalls in
# the kernel looks like to a reader.
path, pause = sys.argv[1], float(sys.argv[2])
line = sys.stdin.buffer.read()
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
os.write(fd, line[:40])
print("go", flush=True)
time.sleep(pause)
os.write(fd, line[40:])
"""


def test_an_append_waits_for_a_line_whose_writer_paused(backend: str, tmp_path: Path) -> None:
    """Adversary 60b: an append to a file ending mid-line sealed the piece after one
    5 ms look without growth, so another writer that paused 8 ms within its line had its
    entry cut in two (``#`` after its first part, our line, then its rest). A pause of
    50 ms is waited for (``_persist.SETTLE_QUIET``): its entry is read whole, ours after
    it, and a reopen reports nothing."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(HDR + user("a1", None) + b"\n")
    with open_quiet(path, backend) as mgr:
        mgr.append_message({"role": "user", "content": "first", "timestamp": 1})  # the writer taken
        other = subprocess.Popen([sys.executable, "-c", _PAUSED, str(path), "0.05"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE)
        assert other.stdin is not None and other.stdout is not None
        other.stdin.write(user("pi1", "a1") + b"\n")
        other.stdin.close()
        assert other.stdout.readline() == b"go\n"
        ours = mgr.append_message({"role": "user", "content": "ours", "timestamp": 2})
        assert other.wait(timeout=60) == 0
        seen = facts(mgr)
    assert seen["ids"][-2:] == ["pi1", ours] and seen["report"] == []
    for b in ("python", "native"):
        assert fresh(path, b) == seen
