"""The one reader of lines and headers (``_reader``), and everything that uses it.

Loader rules 1–6 are applied by the loader, the listing, the migration,
``continue_recent`` and the command line; each must find the same header as the loader,
name the same line when there is none, and say the same thing about it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from sessiontree import InvalidSessionError, LoadReportWarning, SessionManager
from sessiontree._listing import read_session_info
from sessiontree._reader import scan_header

from _shared import open_quiet

V2 = b'{"type":"session","version":2,"id":"s2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
ENTRY = b'{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'

HEADERLESS = [
    pytest.param(b"", id="empty"),
    pytest.param(b"\n \n", id="blank"),
    pytest.param(b"junk\n" + ENTRY, id="junk-then-entry"),
    pytest.param(b"[1]\n" + ENTRY, id="array-then-entry"),
    pytest.param(b'{"type":"session"}\n' + ENTRY, id="header-without-id"),
    pytest.param(b'{"type":5,"id":"x"}\n', id="numeric-type"),
    pytest.param(b'{"type":"sess', id="torn-only"),
    pytest.param(b"\xef\xbb\xbf" + ENTRY, id="bom-then-entry"),
]


def write(tmp_path: Path, data: bytes, name: str = "s.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("prefix", [b"", b"junk line\n", b"\n\n", b"\xef\xbb\xbf", b"[]\n", b'{"type":"sess\n'])
def test_everyone_finds_the_same_header(prefix: bytes, backend: str, tmp_path: Path) -> None:
    p = write(tmp_path, prefix + V2 + ENTRY)
    scan = scan_header(p)
    assert scan.header["id"] == "s2" and scan.version == 2
    assert scan.line == prefix.count(b"\n") + 1
    with open_quiet(p, backend) as mgr:
        assert mgr.file_version == 2  # migrated in memory, the file says 2
        assert mgr.get_header()["version"] == 3 and mgr.session_id == "s2"
    assert read_session_info(str(p)).id == "s2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        with SessionManager.continue_recent("/p", str(tmp_path), backend=backend) as mgr2:
            assert mgr2.session_file == str(p)


@pytest.mark.parametrize("data", HEADERLESS)
def test_everyone_names_the_same_problem(data: bytes, backend: str, tmp_path: Path) -> None:
    p = write(tmp_path, data)
    errors = []
    with pytest.raises(InvalidSessionError) as e1:
        scan_header(p)
    errors.append(e1.value)
    with pytest.raises(InvalidSessionError) as e2:
        SessionManager.open(str(p), backend=backend)
    errors.append(e2.value)
    with pytest.raises(InvalidSessionError) as e3:
        read_session_info(str(p))
    errors.append(e3.value)
    assert len({(e.line, e.offset, e.reason) for e in errors}) == 1, [str(e) for e in errors]
    assert p.read_bytes() == data  # nothing was written


def test_scan_header_reads_no_further_than_the_header(tmp_path: Path) -> None:
    # A header behind a 3 MB junk line, then 50 MB of entries: only the first lines count.
    big = b"x" * 3_000_000 + b"\n" + V2 + ENTRY * 200_000
    p = write(tmp_path, big)
    assert scan_header(p).line == 2


def test_info_reports_the_version_on_disk(tmp_path: Path) -> None:
    p = write(tmp_path, b"garbage before the header\n" + V2 + ENTRY)
    out = subprocess.run([sys.executable, "-m", "sessiontree", "info", str(p), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["fileVersion"] == 2 and data["version"] == 3
    human = subprocess.run([sys.executable, "-m", "sessiontree", "info", str(p)], capture_output=True, text=True,
                           timeout=120)
    assert "version 2" in human.stdout.replace("  ", " ") or "2 on disk" in human.stdout, human.stdout
