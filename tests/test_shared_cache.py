"""The catalog and the persisted indexes share one cache (issue 27, item 6;
``catalog/_shared.py``, ``src/listing/indexed.rs``).

Each step runs in its own process, as users run them: an open in one, a listing in the
next. A listing of a session an open indexed reads the bytes the file gained since and
a few lines (its header, its first user message, its last name), not the file (the
refresh's own count of bytes read); a listing or ``index`` of a session leaves its index,
so the next open is a reopen (the index read in place: ``Index.check_persisted``).
Every answer (``ls``, ``search``, ``usage``) equals ``--no-cache``'s, which reads the
files, and ``SESSIONTREE_INDEX=off``'s; a damaged index or another process writing the
file at once leaves the answers those of a scan.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from _shared import native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

# A child that opens the session natively through the persisted indexes (settled at
# once, as the other tests of the index do) and says whether the index was read in place.
_OPEN = r"""
import json, sys
from sessiontree import _caches, _sessiontree
_caches.INDEX_SETTLE = 0.0
ix = _sessiontree.Index.open(sys.argv[1], _caches.index_cache())
print(json.dumps({"reopen": ix.check_persisted(), "entries": len(ix)}))
"""

# A child that brings the catalog up to date with a folder (a listing) and prints each
# file's bytes read by that refresh.
_LIST = r"""
import json, sys
from sessiontree import _caches
from sessiontree.catalog import open_store, refresh_for
_caches.INDEX_SETTLE = 0.0
found = refresh_for(open_store(), [sys.argv[1]])
print(json.dumps({f.name: f.bytes_read for f in found}))
"""


def _words(k: int) -> str:
    return " ".join(f"w{(k * 7 + j) % 97}" for j in range(30))


def session_lines(n: int, start: int = 0, parent: str | None = None) -> list[str]:
    """``n`` entries of a Pi session (a chain with a branch now and then): user and
    assistant messages with text, tool calls and usage, bulky tool results, names, a
    label, a leaf move, a parent that names no entry and one that is the entry's own."""
    out = []
    last = parent
    for k in range(start, start + n):
        eid = f"{k:08x}"
        ts = f"2026-01-{1 + k % 28:02d}T00:{k % 60:02d}:00.000Z"
        kind = k % 9
        if kind in (0, 5):
            msg: dict[str, Any] = {"role": "user", "content": "" if k == 0 else f"ask {k} {_words(k)}",
                                   "timestamp": 1767225600000 + k * 1000}
        elif kind in (1, 6):
            msg = {"role": "assistant", "content": [{"type": "text", "text": f"answer {k} {_words(k)}"},
                                                    {"type": "toolCall", "id": f"c{k}", "name": "bash",
                                                     "arguments": {"command": f"ls {k}"}}],
                   "provider": "p", "model": f"m{k % 3}", "usage": {"input": k, "output": 2, "cacheRead": 0,
                                                                    "cacheWrite": 0, "totalTokens": k + 2,
                                                                    "cost": {"total": 0.001}}}
        elif kind in (2, 3, 7):
            msg = {"role": "toolResult", "toolCallId": f"c{k}", "toolName": "bash",
                   "content": [{"type": "text", "text": "x" * 1200 + _words(k)}], "isError": False}
        else:
            msg = {}
        if msg:
            entry: dict[str, Any] = {"type": "message", "message": msg}
        elif k % 27 == 4:
            entry = {"type": "session_info", "name": f"name {k}"}
        elif k % 27 == 13:
            entry = {"type": "label", "targetId": f"{max(0, k - 3):08x}", "label": "here"}
        elif k % 27 == 22:
            entry = {"type": "leaf", "targetId": f"{max(0, k - 5):08x}"}
        else:
            entry = {"type": "custom", "customType": "x", "data": {"k": k}}
        p = last
        if k % 50 == 17:
            p = "missing-parent"
        elif k % 50 == 33:
            p = eid
        elif k % 40 == 39 and k > 10:
            p = f"{k - 10:08x}"  # a branch
        entry.update({"id": eid, "parentId": p, "timestamp": ts})
        out.append(json.dumps(entry))
        last = eid
    return out


HEADER = json.dumps({"type": "session", "version": 3, "id": "s-shared", "timestamp": "2026-01-01T00:00:00.000Z",
                     "cwd": "/p"})


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    for k in ("SESSIONTREE_INDEX", "SESSIONTREE_CATALOG", "SESSIONTREE_BACKEND", "SESSIONTREE_INDEX_BYTES"):
        e.pop(k, None)
    e.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"), PI_CODING_AGENT_DIR=str(tmp_path / "pi"))
    (tmp_path / "home").mkdir()
    return e


def make(folder: Path, name: str = "a.jsonl", n: int = 1500) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(HEADER + "\n" + "\n".join(session_lines(n)) + "\n")
    assert path.stat().st_size > 1 << 20  # persisted (_caches.INDEX_MIN_BYTES)
    return path


def child(script: str, env: dict[str, str], *args: str) -> Any:
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def cli(env: dict[str, str], *args: str) -> Any:
    out = subprocess.run([sys.executable, "-m", "sessiontree", *args, "--json"], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def answers(env: dict[str, str], folder: Path, *flags: str) -> dict[str, Any]:
    return {
        "ls": cli(env, "ls", str(folder), *flags),
        "search": cli(env, "search", "answer w3", str(folder), *flags),
        "usage": cli(env, "usage", str(folder), *flags),
    }


def reference(env: dict[str, str], folder: Path) -> dict[str, Any]:
    """The answers of reading the files: no catalog, no persisted index."""
    return answers(dict(env, SESSIONTREE_INDEX="off"), folder, "--no-cache")


def append(path: Path, lines: list[str]) -> int:
    data = ("\n".join(lines) + "\n").encode()
    subprocess.run([sys.executable, "-c", "import sys; open(sys.argv[1], 'ab').write(sys.stdin.buffer.read())",
                    str(path)], input=data, check=True)
    return len(data)


def test_a_listing_after_an_open_reads_only_what_the_index_lacks(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "s"
    path = make(folder)
    size = path.stat().st_size
    assert child(_OPEN, env, str(path)) == {"reopen": False, "entries": 1500}
    assert child(_OPEN, env, str(path))["reopen"]
    # A first listing (no catalog yet) reads the index and a few lines.
    read = child(_LIST, env, str(folder))["a.jsonl"]
    assert 0 < read < 16 << 10, (read, size)
    assert answers(env, folder) == reference(env, folder)
    # Grown by another process: the catalog reads the new bytes (its own cache).
    added = append(path, session_lines(40, start=1500, parent=f"{1499:08x}"))
    assert child(_LIST, env, str(folder))["a.jsonl"] == added
    assert answers(env, folder) == reference(env, folder)
    # The catalog is deleted; the index (of the shorter file) is reread and only the
    # bytes the file gained since are scanned, with a few lines.
    for p in (tmp_path / "cache" / "sessiontree").glob("catalog*"):
        p.unlink()
    read = child(_LIST, env, str(folder))["a.jsonl"]
    assert added <= read < added + (16 << 10), (read, added)
    assert answers(env, folder) == reference(env, folder)


def test_a_scan_costs_what_it_did_without_an_index(tmp_path: Path, env: dict[str, str]) -> None:
    """The counter counts: with the indexes off, or no index kept, the file is read."""
    folder = tmp_path / "s"
    path = make(folder)
    off = dict(env, SESSIONTREE_INDEX="off")
    assert child(_LIST, off, str(folder))["a.jsonl"] == path.stat().st_size
    for p in (tmp_path / "cache" / "sessiontree").glob("catalog*"):
        p.unlink()
    # Index on, none kept: the listing reads the file, and makes no index (a session
    # listed is not always opened: `index` makes them).
    assert child(_LIST, env, str(folder))["a.jsonl"] == path.stat().st_size
    assert not (tmp_path / "cache" / "sessiontree" / "index").exists()
    assert child(_OPEN, env, str(path))["reopen"] is False


def test_index_leaves_an_index_the_next_open_rereads(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "s"
    a = make(folder, "a.jsonl")
    b = make(folder, "b.jsonl", 1600)
    small = folder / "c.jsonl"
    small.write_text(HEADER + "\n" + "\n".join(session_lines(20)) + "\n")
    time.sleep(2.1)  # the CLI's children settle files as users' do (_caches.INDEX_SETTLE)
    want = reference(env, folder)
    subprocess.run([sys.executable, "-m", "sessiontree", "index", str(folder)], env=env, check=True,
                   capture_output=True)
    assert child(_OPEN, env, str(b))["reopen"]
    assert child(_OPEN, env, str(a))["reopen"]
    assert answers(env, folder) == want
    assert answers(dict(env, SESSIONTREE_INDEX="off"), folder) == want


def test_a_damaged_index_or_a_writer_at_once_gives_a_scans_answers(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "s"
    path = make(folder)
    child(_OPEN, env, str(path))
    (idx,) = (tmp_path / "cache" / "sessiontree" / "index").glob("*.idx")
    data = bytearray(idx.read_bytes())
    data[len(data) // 2] ^= 0xFF
    idx.write_bytes(bytes(data))
    assert answers(env, folder) == reference(env, folder)
    # A listing while another process appends: every answer after it is a scan's.
    for p in (tmp_path / "cache" / "sessiontree").glob("catalog*"):
        p.unlink()
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, json\nf = open(sys.argv[1], 'ab')\n"
         "for line in json.loads(sys.stdin.read()):\n    f.write(line.encode() + b'\\n'); f.flush()\n",
         str(path)], stdin=subprocess.PIPE, text=True)
    assert writer.stdin is not None
    writer.stdin.write(json.dumps(session_lines(300, start=1500, parent=f"{1499:08x}")))
    writer.stdin.close()
    child(_LIST, env, str(folder))
    writer.wait()
    assert answers(env, folder) == reference(env, folder)


# A child that lists a folder anew and prints how many times the persisted indexes'
# settings were computed (each sums the cache folder's files: _caches.other_bytes).
_COUNT = r"""
import json, sys
from sessiontree import _caches
from sessiontree.catalog import open_store, refresh_for
sums = []
real = _caches.other_bytes
_caches.other_bytes = lambda *a: sums.append(1) or real(*a)
found = refresh_for(open_store(), [sys.argv[1]])
print(json.dumps({"files": len(found), "sums": len(sums)}))
"""


def test_a_listing_pass_computes_the_index_settings_once(tmp_path: Path, env: dict[str, str]) -> None:
    """The look-ups of each session's kept index in a listing pass share one computation
    of the settings: one per file summed the cache folder's files (a fifth of a first
    listing's worker time over 2,000 sessions with a cache of 4,000 indexes)."""
    folder = tmp_path / "s"
    for k in range(4):
        make(folder, f"{k}.jsonl")
    assert child(_COUNT, env, str(folder)) == {"files": 4, "sums": 1}
