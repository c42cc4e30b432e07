"""Signals (issue 11, item 4): truncating a file while the native backend scans it must
give ``StaleSessionError`` (or a normal result, if the bytes are back in time), never a
SIGBUS. The scan of a long range reads a map under a guard (``src/guard.rs``) that turns
a fault past the new end of file into a flag; shorter ranges are copied with ``pread``.

The reader is a real child process (a SIGBUS shows as its signal); this process cuts
the file in a loop and writes it back, while the child opens it, or refreshes after a
large append, over and over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from _shared import native_available
from _writers import HDR, user

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

_READER = textwrap.dedent(
    r"""
    import sys, time
    from sessiontree import SessionError
    from sessiontree._sessiontree import Index, count_newlines, scan_listing
    path, seconds, what = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    print("ready", flush=True)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        try:
            if what == "open":
                Index.open(path).close()
                count_newlines(path)
            else:  # the catalog's pass over a file (src/listing.rs)
                scan_listing(path, 0, b"", True, 1 << 62, 4096, True)
        except (SessionError, OSError, ValueError):
            pass  # stale (or no header at that instant): fine, a signal is not
        n += 1
    print(n, flush=True)
    """
)


def _big(n_lines: int, size: int) -> bytes:
    body = b"".join(
        user(f"{i:08x}", None if i == 0 else f"{i - 1:08x}", "z" * size) + b"\n" for i in range(n_lines)
    )
    return HDR + body


def _race(path: Path, data: bytes, seconds: float = 3.0, what: str = "open") -> tuple[int, int]:
    proc = subprocess.Popen([sys.executable, "-c", _READER, str(path), str(seconds), what], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    fd = os.open(path, os.O_WRONLY)
    cuts = 0
    try:
        while proc.poll() is None:
            cut = len(data) // 4 if cuts % 2 else len(HDR)
            os.ftruncate(fd, cut)
            time.sleep(0.0005)
            os.pwrite(fd, data[cut:], cut)
            cuts += 1
            time.sleep(0.001)
    finally:
        os.close(fd)
    rc = proc.wait(timeout=60)
    assert rc != -signal.SIGBUS, "the reader was killed by SIGBUS"
    assert rc == 0, rc
    out = proc.stdout.read().split()
    return int(out[0]), cuts


def test_truncation_while_opening_never_kills(tmp_path: Path) -> None:
    """Before the fix: the child died of SIGBUS (rc -7) within a few opens."""
    data = _big(600, 60_000)  # 36 MB: scanned through the guarded map
    p = tmp_path / "big.jsonl"
    p.write_bytes(data)
    opens, cuts = _race(p, data)
    assert opens > 0 and cuts > 0


def test_truncation_while_listing_never_kills(tmp_path: Path) -> None:
    """The catalog's pass maps a file of 1 MiB or more under the same guard."""
    data = _big(400, 30_000)  # 12 MB
    p = tmp_path / "listed.jsonl"
    p.write_bytes(data)
    scans, cuts = _race(p, data, what="listing")
    assert scans > 0 and cuts > 0


_REFRESHER = textwrap.dedent(
    r"""
    import os, sys, time, warnings
    from sessiontree import SessionManager, LoadReportWarning, SessionError
    warnings.simplefilter("ignore", LoadReportWarning)
    path, head_len, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    print("ready", flush=True)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        try:
            mgr = SessionManager.open(path, backend="native")
        except (SessionError, OSError, ValueError):
            continue
        try:
            while time.monotonic() < end:
                mgr.refresh()
                n += 1
        except (SessionError, OSError, ValueError):
            pass
        finally:
            mgr.close()
    print(n, flush=True)
    """
)


def test_truncation_while_refreshing_after_a_large_append_never_kills(tmp_path: Path) -> None:
    """A refresh that scans a large growth (mapped again) while the file is cut."""
    head = _big(5, 100)
    grown = head + _big(400, 60_000)[len(HDR):].replace(b'"parentId":null', b'"parentId":"00000004"', 1)
    p = tmp_path / "grow.jsonl"
    p.write_bytes(head)
    proc = subprocess.Popen([sys.executable, "-c", _REFRESHER, str(p), str(len(head)), "3"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    fd = os.open(p, os.O_WRONLY)
    try:
        while proc.poll() is None:
            os.pwrite(fd, grown[len(head):], len(head))  # a large append
            time.sleep(0.002)
            os.ftruncate(fd, len(head) + (len(grown) - len(head)) // 3)
            time.sleep(0.0005)
            os.ftruncate(fd, len(head))
    finally:
        os.close(fd)
    rc = proc.wait(timeout=60)
    assert rc != -signal.SIGBUS, "the reader was killed by SIGBUS"
    assert rc == 0, rc
