"""An open meets another process: a file renamed over the path, a rewrite in place, a
FIFO put at the path. The index is the file's as it then is, or ``StaleSessionError``;
never a mix of two files, a session bound to a file the path no longer names, or a hang
(``_persist.open_session``, every open's one path: the identity of the file read and
its ends as the read saw them are what the first staleness check holds the file to;
``open_regular`` on the open file in both backends).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, StaleSessionError
from sessiontree._persist import OPEN_TRIES
from sessiontree._select import index_class
from sessiontree.errors import SessionError


def write_session(path: Path, tag: str, n: int, pad: int = 60) -> list[str]:
    """A chain of ``n`` entries whose ids start with ``tag`` (same line lengths for any
    one-letter tag); returns the ids."""
    ids = [f"{tag}{i:07d}" for i in range(n)]
    lines = [json.dumps({"type": "session", "version": 3, "id": f"{tag}-session",
                         "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"})]
    for i, eid in enumerate(ids):
        lines.append(json.dumps({"type": "message", "id": eid, "parentId": ids[i - 1] if i else None,
                                 "timestamp": "2025-01-01T00:00:01.000Z",
                                 "message": {"role": "user", "content": tag * pad}}, separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n")
    return ids


def open_quiet(path: Path, backend: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SessionManager.open(str(path), backend=backend)


def after_each_read(monkeypatch: pytest.MonkeyPatch, backend: str, act: Callable[[int], None]) -> None:
    """Run ``act(k)`` right after the ``k``-th read of the file by the backend's
    ``open`` (k = 1, 2, ...), before the manager's checks."""
    cls = index_class(backend)
    real = cls.open.__func__  # type: ignore[attr-defined]
    calls = [0]

    def open_then_act(klass: Any, path: str) -> Any:
        index = real(klass, path)
        calls[0] += 1
        act(calls[0])
        return index

    monkeypatch.setattr(cls, "open", classmethod(open_then_act))


def test_a_file_renamed_over_the_path_during_the_open_is_read_again(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path, other = tmp_path / "s.jsonl", tmp_path / "other.jsonl"
    write_session(path, "a", 50)
    new_ids = write_session(other, "b", 80)  # longer: growth alone would not show it

    def replace_once(k: int) -> None:
        if k == 1:
            os.replace(other, path)

    after_each_read(monkeypatch, backend, replace_once)
    with open_quiet(path, backend) as sm:
        assert sm.session_id == "b-session" and [e["id"] for e in sm.get_entries()] == new_ids
        with path.open("a") as f:  # another writer appends: the new file grows
            f.write(json.dumps({"type": "custom", "id": "zz", "parentId": new_ids[-1],
                                "timestamp": "2025-01-01T00:00:02.000Z", "customType": "t"}) + "\n")
        assert sm.refresh() == 1 and sm.leaf_id == "zz"


def test_an_end_rewritten_in_place_during_the_open_is_read_again(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path, other = tmp_path / "s.jsonl", tmp_path / "other.jsonl"
    write_session(path, "a", 300)
    new_ids = write_session(other, "b", 300)  # the same length, every byte of each line's id differs
    ino = path.stat().st_ino

    def rewrite_once(k: int) -> None:
        if k == 1:
            with path.open("r+b") as f:  # in place: the same inode
                f.write(other.read_bytes())

    after_each_read(monkeypatch, backend, rewrite_once)
    with open_quiet(path, backend) as sm:
        assert path.stat().st_ino == ino
        assert [e["id"] for e in sm.get_entries()] == new_ids and sm.session_id == "b-session"


def test_a_file_that_changes_under_every_try_is_stale(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, "a", 20)
    tries = []

    def replace_always(k: int) -> None:
        tries.append(k)
        write_session(tmp_path / "next.jsonl", "bcdefgh"[k % 7], 20 + k)
        os.replace(tmp_path / "next.jsonl", path)

    after_each_read(monkeypatch, backend, replace_always)
    with pytest.raises(StaleSessionError, match="while it was read"):
        open_quiet(path, backend)
    assert tries == list(range(1, OPEN_TRIES + 1))


def _swap(path: str, a: str, b: str, stop: Any) -> None:
    """Rename copies of ``a`` and ``b`` over ``path`` in turn until ``stop`` is set."""
    k = 0
    while not stop.is_set():
        src = a if k % 2 else b
        tmp = f"{path}.{k % 2}.tmp"
        with open(src, "rb") as f, open(tmp, "wb") as g:
            g.write(f.read())
        os.replace(tmp, path)
        k += 1
        # Swaps back to back on an idle core can leave no open whole (every one stale,
        # as a clean CI run saw): pauses of 0-15 ms let some opens fall between swaps.
        stop.wait((k % 4) * 0.005)


def test_opens_racing_a_real_renamer_see_one_whole_file(tmp_path: Path, backend: str) -> None:
    """Another process renames two different sessions over the path in a loop: every
    open that returns holds all of one of them (ids, header, leaf), and a change after
    the open is caught by the next call or not at all, never answered from a mix."""
    path, a, b = tmp_path / "s.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    ids_a, ids_b = write_session(a, "a", 2000), write_session(b, "b", 3000)
    path.write_bytes(a.read_bytes())
    stop = multiprocessing.Event()
    proc = multiprocessing.Process(target=_swap, args=(str(path), str(a), str(b), stop))
    proc.start()
    seen = {"a": 0, "b": 0, "stale": 0}
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                with open_quiet(path, backend) as sm:
                    ids = sm.get_path_ids()
                    got = (sm.session_id, ids)
            except StaleSessionError:
                seen["stale"] += 1
                continue
            assert got in (("a-session", ids_a), ("b-session", ids_b)), got[0]
            seen[got[0][0]] += 1
    finally:
        stop.set()
        proc.join(10)
    assert seen["a"] + seen["b"] > 0, seen


def test_a_fifo_at_the_path_never_blocks_the_open(tmp_path: Path, backend: str) -> None:
    """Put in place after the manager's own check (here: skipped), a FIFO is refused by
    the backend's open on the open file, at once."""
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    code = (
        "import sys\n"
        "from sessiontree._select import index_class\n"
        "try:\n"
        f"    index_class({backend!r}).open(sys.argv[1])\n"
        "except OSError as e:\n"
        "    print('refused:', e)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("refused:") and "not a regular file" in p.stdout, p


def test_tree_nodes_after_close_do_not_depend_on_the_cache(tmp_path: Path, backend: str) -> None:
    """A ``get_tree`` node whose ``entry`` was read before ``close()`` keeps it; one not
    read raises ``SessionError`` natively, whatever else was decoded before the close
    (the python backend's nodes hold their entries from the start)."""
    path = tmp_path / "s.jsonl"
    ids = write_session(path, "a", 5)
    sm = open_quiet(path, backend)
    tree = sm.get_tree()
    read_before = tree[0].entry
    assert sm.get_entry(ids[1]) is not None  # decoded, and in the native cache
    sm.close()
    assert tree[0].entry is read_before
    child = tree[0].children[0]
    if backend == "native":
        with pytest.raises(SessionError):
            child.entry
    else:
        assert child.entry["id"] == ids[1]


@pytest.mark.parametrize("value", ["bogus", "1e999", "inf", "nan", "0x10", "-5"])
def test_a_bad_cache_budget_variable_is_one_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, "a", 3)
    env = {**os.environ, "SESSIONTREE_CACHE_BYTES": value}
    p = subprocess.run([sys.executable, "-m", "sessiontree", "info", str(path)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr.strip().splitlines() == [
        f"sessiontree: error: SESSIONTREE_CACHE_BYTES must be a size such as 512MiB or 0, not {value!r} (or unset it)"]


def _pwrite(path: Path, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


@pytest.mark.parametrize("where", ["header", "second entry", "last bytes"])
def test_bytes_at_an_end_rewritten_right_after_the_read_are_read_again(
        tmp_path: Path, backend: str, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any byte of the first or last 4 KiB (not only the first and last entries' lines),
    rewritten in place between the backend's read and the manager's check: the check
    holds the file to the ends as the read saw them, so the open reads it again."""
    path = tmp_path / "s.jsonl"
    ids = write_session(path, "a", 1000)
    data = path.read_bytes()
    at = {"header": data.index(b'"a-session"') + 1,
          "second entry": data.index(ids[1].encode()),
          "last bytes": len(data) - 20}[where]
    assert at < 4096 or at > len(data) - 4096

    def rewrite_once(k: int) -> None:
        if k == 1:
            _pwrite(path, at, b"Z")

    after_each_read(monkeypatch, backend, rewrite_once)
    with open_quiet(path, backend) as sm:
        fresh = open_quiet(path, "python")
        assert sm.session_id == fresh.session_id and sm.get_entries() == fresh.get_entries()
        assert sm.get_header() == fresh.get_header()
        sm.refresh()  # no further change: nothing stale
        fresh.close()


def test_a_header_turned_to_garbage_after_every_read_is_stale_not_a_decode_error(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, "a", 10)
    good = path.read_bytes()[:8]
    cls = index_class(backend)
    real = cls.open.__func__  # type: ignore[attr-defined]

    def open_then_break(klass: Any, p: str) -> Any:
        _pwrite(path, 0, good)  # this read sees a header...
        index = real(klass, p)
        _pwrite(path, 0, b"XXXXXXXX")  # ...that is garbage right after it
        return index

    monkeypatch.setattr(cls, "open", classmethod(open_then_break))
    with pytest.raises(StaleSessionError, match="while it was read"):
        open_quiet(path, backend)


def test_an_old_file_rewritten_while_it_is_read_for_migration_is_read_again(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version 1 file is read twice (its header, then all of it to migrate): rewritten
    as a version 3 file in between, it is read again and opened as what it now is."""
    path, v3 = tmp_path / "s.jsonl", tmp_path / "v3.jsonl"
    path.write_text(json.dumps({"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z",
                                "cwd": "/p"}) + "\n"
                    + json.dumps({"type": "message", "timestamp": "2025-01-01T00:00:01.000Z",
                                  "message": {"role": "user", "content": "hi"}}) + "\n")
    new_ids = write_session(v3, "b", 5)

    def rewrite_once(k: int) -> None:
        if k == 1:
            with path.open("r+b") as f:
                f.write(v3.read_bytes())
                f.truncate()

    after_each_read(monkeypatch, backend, rewrite_once)
    with open_quiet(path, backend) as sm:
        assert sm.session_id == "b-session" and sm.file_version == 3
        assert [e["id"] for e in sm.get_entries()] == new_ids
