"""Durability rules (CONTRACT §4) on both backends: deferred first write, exclusive
create, whole-line appends, torn-tail appends, never truncate, atomic migration rewrite,
and the advisory writer lock between two real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import sessiontree._storage as storage
from sessiontree import (
    LoadReportWarning,
    SessionFileExistsError,
    SessionLockedError,
    SessionManager,
    StaleSessionError,
)

from _shared import ROOT, open_quiet

USER = {"role": "user", "content": "hello", "timestamp": 1}
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "provider": "p", "model": "m", "timestamp": 2}



@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bytes]]:
    """Every os.write the writer makes, and a check that nothing truncates."""
    log: list[tuple[int, bytes]] = []
    real_write, real_open = os.write, os.open

    def write(fd: int, data: Any) -> int:
        log.append((fd, bytes(data)))
        return real_write(fd, data)

    def opener(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        assert not flags & os.O_TRUNC, "sessiontree must never truncate"
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(storage.os, "write", write)
    monkeypatch.setattr(storage.os, "open", opener)
    return log


def test_nothing_written_before_first_assistant(backend: str, tmp_path: Path, writes: list) -> None:
    with SessionManager.create("/p", str(tmp_path / "d"), backend=backend) as mgr:
        path = Path(mgr.session_file)  # type: ignore[arg-type]
        mgr.append_model_change("p", "m")
        mgr.append_message(USER)
        mgr.append_label_change(mgr.leaf_id, "x")
        assert not path.exists() and not (tmp_path / "d").exists() and writes == []
        mgr.append_message(ASSISTANT)
        assert path.exists()
        assert len(writes) == 1  # header + 4 lines in one exclusive create
        assert writes[0][1].count(b"\n") == 5 and writes[0][1] == path.read_bytes()
        mgr.append_message(USER)
        assert len(writes) == 2 and writes[1][1].count(b"\n") == 1 and writes[1][1].endswith(b"\n")
        assert path.read_bytes().endswith(writes[1][1])
    with open_quiet(path, backend) as again:
        assert len(again) == 5 and again.load_report == []


def test_in_memory_never_writes(backend: str, tmp_path: Path, writes: list, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with SessionManager.in_memory(backend=backend) as mgr:
        mgr.append_message(USER)
        mgr.append_message(ASSISTANT)
        assert mgr.session_file is None and not mgr.is_persisted
        assert mgr.create_branched_session(mgr.leaf_id) is None
    assert writes == [] and os.listdir(tmp_path) == []


def test_exclusive_create_refuses_existing_file(backend: str, tmp_path: Path) -> None:
    with SessionManager.create("/p", str(tmp_path), backend=backend) as mgr:
        path = Path(mgr.session_file)  # type: ignore[arg-type]
        path.write_bytes(b"someone else's data\n")
        mgr.append_message(USER)
        with pytest.raises(SessionFileExistsError):
            mgr.append_message(ASSISTANT)
    assert path.read_bytes() == b"someone else's data\n"


def test_open_missing_path_creates_there_exclusively(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "chosen.jsonl"
    with SessionManager.open(str(path), backend=backend) as mgr:
        assert len(mgr) == 0 and not path.exists()
        mgr.append_message(USER)
        mgr.append_message(ASSISTANT)
    with open_quiet(path, backend) as again:
        assert [e["message"]["role"] for e in again] == ["user", "assistant"]


def test_each_append_is_one_whole_line(backend: str, tmp_path: Path, writes: list, monkeypatch: pytest.MonkeyPatch) -> None:
    with SessionManager.create("/p", str(tmp_path), backend=backend) as mgr:
        mgr.append_message(USER)
        mgr.append_message(ASSISTANT)
        path = Path(mgr.session_file)  # type: ignore[arg-type]
        writes.clear()
        mgr.append_thinking_level_change("high")
        mgr.append_custom_entry("t", {"x": "\u2028"})
        mgr.append_session_info("  name  ")
        assert len(writes) == 3 and all(d.endswith(b"\n") and d.count(b"\n") == 1 for _, d in writes)
        # A short write is continued, never restarted or split into a second line.
        real = storage._write_all.__globals__["os"].write

        def short(fd: int, data: Any) -> int:
            return real(fd, bytes(data)[: max(1, len(data) // 2)])

        monkeypatch.setattr(storage.os, "write", short)
        mgr.append_message(USER)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])
    with open_quiet(path, backend) as again:
        assert len(again) == 6 and again.get_session_name() == "name" and again.load_report == []


@pytest.mark.parametrize(
    "tail",
    [
        b'{"type":"message","id":"zz","parentId":"a1","timest',  # torn write
        b"   ",  # blank, unterminated
        b'{"type":"message","id":"a9","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}',
    ],
)
def test_torn_tail_append_starts_a_new_line(tail: bytes, backend: str, tmp_path: Path) -> None:
    with SessionManager.create("/p", str(tmp_path), backend=backend) as mgr:
        mgr.append_message(USER)
        mgr.append_message(ASSISTANT)
        path = Path(mgr.session_file)  # type: ignore[arg-type]
    with open(path, "ab") as f:
        f.write(tail)
    before = path.read_bytes()
    with open_quiet(path, backend) as mgr:
        n = len(mgr)
        new = mgr.append_message(USER)
        assert mgr.leaf_id == new
    data = path.read_bytes()
    torn = tail.startswith(b'{"type":"message","id":"zz"')
    # A torn piece is sealed (`#`) before the new line starts (issue 11).
    start = b"#\n" if torn else b"\n"
    assert data.startswith(before) and data[len(before) : len(before) + len(start)] == start
    with open_quiet(path, backend) as again:
        assert len(again) == n + 1 and again.leaf_id == new
        kinds = [i.kind for i in again.load_report]
        assert kinds == (["invalid_json"] if torn else [])


def test_never_truncates_or_rewrites_existing_lines(backend: str, tmp_path: Path, writes: list) -> None:
    with SessionManager.create("/p", str(tmp_path), backend=backend) as mgr:
        mgr.append_message(USER)
        mgr.append_message(ASSISTANT)
        path = Path(mgr.session_file)  # type: ignore[arg-type]
    sizes = [path.stat().st_size]
    prefix = path.read_bytes()
    for _ in range(3):
        with open_quiet(path, backend) as mgr:
            mgr.branch(mgr.get_entries()[0]["id"])
            mgr.append_message(USER)
            mgr.create_branched_session(mgr.leaf_id)  # new file; the old one only grew
        sizes.append(path.stat().st_size)
        assert path.read_bytes().startswith(prefix)
        prefix = path.read_bytes()
    assert sizes == sorted(sizes) and len(set(sizes)) == 4


def test_second_writer_in_process_is_refused(backend: str, tmp_path: Path) -> None:
    with SessionManager.create("/p", str(tmp_path), backend=backend) as a:
        a.append_message(USER)
        a.append_message(ASSISTANT)
        with open_quiet(a.session_file, backend) as b:  # type: ignore[arg-type]
            assert len(b) == 2  # readers never block
            with pytest.raises(SessionLockedError):
                b.append_message(USER)
        a.append_message(USER)


_HOLDER = textwrap.dedent(
    """
    import sys, time, warnings
    warnings.simplefilter("ignore")
    from sessiontree import SessionManager
    mgr = SessionManager.open(sys.argv[1], backend=sys.argv[2])
    mgr.append_message({"role": "user", "content": "holder", "timestamp": 1})
    print("locked", flush=True)
    time.sleep(120)
    """
)


def test_lock_between_processes_released_when_holder_dies(backend: str, tmp_path: Path) -> None:
    with SessionManager.create("/p", str(tmp_path), backend=backend) as mgr:
        mgr.append_message(USER)
        mgr.append_message(ASSISTANT)
        path = mgr.session_file
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, path, backend], stdout=subprocess.PIPE, env=env)  # type: ignore[list-item]
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        with open_quiet(path, backend) as other:  # type: ignore[arg-type]
            other.refresh()
            assert len(other) == 3  # the holder's line is readable
            with pytest.raises(SessionLockedError):
                other.append_message(USER)
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=30)
            other.append_message({"role": "user", "content": "after", "timestamp": 3})
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with open_quiet(path, backend) as again:  # type: ignore[arg-type]
        assert [e["message"]["content"] for e in again][-2:] == ["holder", "after"]
        assert again.load_report == []


def _v1(tmp_path: Path) -> Path:
    lines = [
        {"type": "session", "id": "v1-session", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": USER},
        {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": ASSISTANT},
    ]
    p = tmp_path / "old.jsonl"
    p.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    return p


def test_migration_through_a_symbolic_link_migrates_its_target(backend: str, tmp_path: Path) -> None:
    """Adversary 60: a version 1 session opened through a link was migrated by renaming
    the new file over the link: the link became a regular file, its "backup" was the old
    link, and the target stayed version 1, later appends no longer reaching it. The
    target is migrated (its backup beside it) and the link stays; so with ``migrate``."""
    store = tmp_path / "store"
    store.mkdir()
    target = _v1(store)
    original = target.read_bytes()
    for how in ("append", "migrate"):
        link = tmp_path / f"link-{how}.jsonl"
        target.write_bytes(original)
        for old in store.glob("*.bak"):
            old.unlink()
        link.symlink_to(target)
        with open_quiet(link, backend) as mgr:
            ids = [e["id"] for e in mgr]
            if how == "append":
                ids.append(mgr.append_message(USER))
                backup = str(target) + ".v1.bak"
            else:
                backup = mgr.migrate()
        assert link.is_symlink() and link.resolve() == target
        assert backup == str(target) + ".v1.bak" and Path(backup).read_bytes() == original
        assert not Path(backup).is_symlink()
        assert not list(tmp_path.glob("*.bak*"))  # nothing beside the link
        with open_quiet(target, backend) as again:
            assert again.get_header()["version"] == 3 and [e["id"] for e in again] == ids


def test_migration_rewrite_is_atomic_and_keeps_original(backend: str, tmp_path: Path) -> None:
    path = _v1(tmp_path)
    original = path.read_bytes()
    ino = path.stat().st_ino
    with open_quiet(path, backend) as mgr:
        ids = [e["id"] for e in mgr]
        assert path.read_bytes() == original  # only in memory so far
        new = mgr.append_message(USER)
    assert (tmp_path / "old.jsonl.v1.bak").read_bytes() == original
    assert path.stat().st_ino != ino  # renamed over, not written in place
    assert sorted(os.listdir(tmp_path)) == ["old.jsonl", "old.jsonl.v1.bak"]
    with open_quiet(path, backend) as again:
        assert [e["id"] for e in again] == ids + [new]
        assert again.get_header()["version"] == 3


def test_failed_migration_rewrite_leaves_original(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _v1(tmp_path)
    original = path.read_bytes()

    def boom(src: Any, dst: Any) -> None:
        raise OSError("disk on fire")

    with open_quiet(path, backend) as mgr:
        monkeypatch.setattr(storage.os, "rename", boom)
        with pytest.raises(OSError, match="disk on fire"):
            mgr.append_message(USER)
    assert path.read_bytes() == original
    assert not any(n.endswith(".tmp") for n in os.listdir(tmp_path))


def test_a_migration_that_cannot_make_its_temporary_file_names_the_session(
        backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a read-only folder the rewrite's temporary file cannot be made: the error
    named that file (``.old.jsonl.<pid>.<hex>.tmp: Permission denied``), a name the
    caller never gave, where every failed write names the session file."""
    path = _v1(tmp_path)
    original = path.read_bytes()

    def refused(target: str, mode: int = 0o666) -> Any:
        raise PermissionError(13, "Permission denied", os.path.join(os.path.dirname(target), ".x.1.00000000.tmp"))

    with open_quiet(path, backend) as mgr:
        monkeypatch.setattr(storage, "create_temp", refused)
        with pytest.raises(PermissionError) as caught:
            mgr.append_message(USER)
        assert caught.value.filename == str(path) and "Permission denied" in str(caught.value)
        assert len(mgr) == 2  # the file's two records; the refused append is not in the session
    assert path.read_bytes() == original


def test_migration_refuses_a_file_changed_meanwhile(backend: str, tmp_path: Path) -> None:
    path = _v1(tmp_path)
    with open_quiet(path, backend) as mgr:
        with open(path, "ab") as f:
            f.write(json.dumps({"type": "message", "timestamp": "t", "message": USER}).encode() + b"\n")
        changed = path.read_bytes()
        with pytest.raises(StaleSessionError):
            mgr.append_message(USER)
    assert path.read_bytes() == changed
    assert sorted(os.listdir(tmp_path)) == ["old.jsonl"]


def test_appends_after_foreign_append_are_indexed_in_order(backend: str, tmp_path: Path) -> None:
    with SessionManager.create("/p", str(tmp_path), backend=backend) as mgr:
        mgr.append_message(USER)
        a = mgr.append_message(ASSISTANT)
        path = Path(mgr.session_file)  # type: ignore[arg-type]
        # Another program (Pi does not lock) appends a line meanwhile.
        with open(path, "ab") as f:
            f.write(json.dumps({"type": "message", "id": "f0reign1", "parentId": a, "timestamp": "2026-01-01T00:00:00.000Z", "message": USER}).encode() + b"\n")
        time.sleep(0.01)
        ours = mgr.append_message(USER)
        assert "f0reign1" in mgr and mgr[ours]["parentId"] == a
    with open_quiet(path, backend) as again:
        assert [e["id"] for e in again][-2:] == ["f0reign1", ours]


def test_migrate_on_request(backend: str, tmp_path: Path) -> None:
    path = _v1(tmp_path)
    original = path.read_bytes()
    with open_quiet(path, backend) as mgr:
        ids = [e["id"] for e in mgr]
        backup = mgr.migrate()
        assert backup == str(path) + ".v1.bak" and Path(backup).read_bytes() == original
        assert mgr.migrate() is None
        assert mgr.append_message(USER) in mgr
    with open_quiet(path, backend) as again:
        assert [e["id"] for e in again][:2] == ids and again.migrate() is None


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, backend: str) -> None:
    """Opening a FIFO for reading would block until a writer appears: a session path
    must be a regular file, for open, set_session_file, fork_from and listing alike."""
    import threading

    from sessiontree import InvalidSessionError, SessionManager

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    done: list[object] = []

    def attempt() -> None:
        for call in (
            lambda: SessionManager.open(str(fifo), backend=backend),
            lambda: SessionManager.fork_from(str(fifo), "/p", str(tmp_path / "out"), backend=backend),
        ):
            try:
                call()
            except InvalidSessionError as e:
                done.append(e)
        done.append(SessionManager.list("/p", str(tmp_path)))

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader so the test process can exit
        with open(fifo, "wb"):
            pass
        pytest.fail("opening a FIFO blocked")
    assert [type(d).__name__ for d in done] == ["InvalidSessionError", "InvalidSessionError", "list"]
    assert done[2] == []  # the listing passed over it without opening it


def test_a_file_renamed_over_the_session_during_its_migration_is_kept(backend: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary 60b: another file renamed over a version 1 session while its migrated
    image was being written was replaced by that image and kept only as the ".bak".
    The migration stops with ``StaleSessionError``: the other file stays in place,
    untouched, with no backup or temporary file beside it."""
    path = _v1(tmp_path)
    other = tmp_path / "other.tmp"
    other.write_bytes(b"someone else's file\n")
    real = storage._write_all

    def write_meanwhile(fd: int, data: bytes) -> None:
        if other.exists():
            os.rename(other, path)
        real(fd, data)

    monkeypatch.setattr(storage, "_write_all", write_meanwhile)
    with open_quiet(path, backend) as mgr:
        with pytest.raises(StaleSessionError, match="replaced while it was migrated"):
            mgr.migrate()
    assert path.read_bytes() == b"someone else's file\n"
    assert sorted(os.listdir(tmp_path)) == ["old.jsonl"]
