"""Leftovers and messages (issue 11, item 9): a writer killed while it writes a file
aside leaves a hidden temporary file that the next writer in that folder removes; a
wrong argument type is a ``TypeError`` naming the argument, and nothing is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager

from _shared import open_quiet

USER = {"role": "user", "content": "hello", "timestamp": 1}
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "provider": "p", "model": "m", "timestamp": 2}

# A writer that stops half-way through writing a file aside (a temporary file in the
# session folder), says so, and waits to be killed.
_STALLED = textwrap.dedent(
    r"""
    import os, sys, time, warnings
    import sessiontree._storage as storage
    from sessiontree import SessionManager, LoadReportWarning
    warnings.simplefilter("ignore", LoadReportWarning)
    real = storage._write_all
    def stall(fd, data):
        real(fd, data[: len(data) // 2])
        print("stalled", flush=True)
        time.sleep(60)
    storage._write_all = stall
    what, path = sys.argv[1], sys.argv[2]
    if what == "migrate":
        mgr = SessionManager.open(path)
        mgr.append_message({"role": "user", "content": "x", "timestamp": 1})
    else:
        mgr = SessionManager.create("/p", path)
        mgr.append_message({"role": "user", "content": "x", "timestamp": 1})
        mgr.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2})
    """
)


def _killed_mid_write(what: str, path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _STALLED, what, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "stalled"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


def _v1(folder: Path) -> Path:
    lines = [
        {"type": "session", "id": "v1-session", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": USER},
        {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": ASSISTANT},
    ]
    p = folder / "old.jsonl"
    p.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    return p


def test_a_migration_killed_mid_write_leaves_a_temp_file_the_next_writer_removes(backend: str, tmp_path: Path) -> None:
    """Before the fix the hidden temporary file of a killed migration stayed in the
    session folder for good (14 of 60 kills in the field)."""
    p = _v1(tmp_path)
    original = p.read_bytes()
    _killed_mid_write("migrate", p)
    left = sorted(os.listdir(tmp_path))
    assert len(left) == 2 and left[0].startswith(".old.jsonl.") and left[0].endswith(".tmp")  # the crash's leftover
    assert p.read_bytes() == original  # the original is whole
    with open_quiet(p, backend) as mgr:
        mgr.append_message(USER)
    assert sorted(os.listdir(tmp_path)) == ["old.jsonl", "old.jsonl.v1.bak"]


def test_a_first_write_killed_mid_write_leaves_no_session_and_no_temp_file(backend: str, tmp_path: Path) -> None:
    """A session's first write goes aside first: killed half-way, nothing has the
    session's name (Pi's picker would list it), and the next writer removes the rest."""
    _killed_mid_write("create", tmp_path)
    left = os.listdir(tmp_path)
    assert len(left) == 1 and left[0].startswith(".") and left[0].endswith(".tmp")
    with SessionManager.create("/p", str(tmp_path), backend=backend) as mgr:
        mgr.append_message(USER)
        mgr.append_message(ASSISTANT)
        name = os.path.basename(mgr.session_file)  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == [name]


def test_a_live_writers_temp_file_is_left_alone(tmp_path: Path) -> None:
    from sessiontree._storage import sweep_temps

    mine = tmp_path / f".s.jsonl.{os.getpid()}.0123abcd.tmp"
    mine.write_bytes(b"x")
    other = tmp_path / ".s.jsonl.notapid.0123abcd.tmp"
    other.write_bytes(b"x")
    assert sweep_temps(str(tmp_path)) == []
    assert sorted(os.listdir(tmp_path)) == sorted([mine.name, other.name])


def _session(tmp_path: Path, backend: str) -> tuple[SessionManager, str]:
    mgr = SessionManager.create("/p", str(tmp_path), backend=backend)
    mgr.append_message(USER)
    mgr.append_message(ASSISTANT)
    return mgr, mgr.leaf_id  # type: ignore[return-value]


# (method, arguments, the argument the message must name); "LEAF" is the leaf's id.
WRONG = [
    ("append_message", (123,), "message"),
    ("append_thinking_level_change", (123,), "level"),
    ("append_model_change", (1, "m"), "provider"),
    ("append_model_change", ("p", 2), "model_id"),
    ("append_usage", ("k", "p", "m", 5), "usage"),
    ("append_usage", ("k", "p", "m", {}, 5), "note"),
    ("append_context_edit", (123, None), "target_id"),
    ("append_compaction", (1, "LEAF", 5), "summary"),
    ("append_compaction", ("s", 5, 5), "first_kept_entry_id"),
    ("append_compaction", ("s", "LEAF", "x"), "tokens_before"),
    ("append_compaction", ("s", "LEAF", 5, None, "yes"), "from_hook"),
    ("append_compaction", ("s", "LEAF", 5, None, None, 7), "usage"),
    ("append_custom_entry", (1,), "custom_type"),
    ("append_session_info", (123,), "name"),
    ("append_custom_message_entry", (1, "c", True), "custom_type"),
    ("append_custom_message_entry", ("t", 5, True), "content"),
    ("append_custom_message_entry", ("t", "c", 1), "display"),
    ("append_label_change", (123, "x"), "target_id"),
    ("append_label_change", ("LEAF", 5), "label"),
    ("branch_with_summary", (5, "s"), "entry_id"),
    ("branch_with_summary", ("LEAF", 5), "summary"),
    ("branch_with_summary", ("LEAF", "s", None, "x"), "from_hook"),
    ("branch_with_summary", ("LEAF", "s", None, None, 5), "usage"),
    ("branch", ([1],), "entry_id"),
    ("create_branched_session", (5,), "leaf_id"),
    ("new_session", (5,), "id"),
    ("set_session_file", (5,), "path"),
]


@pytest.mark.parametrize("method,args,name", WRONG, ids=[f"{m}-{n}" for m, _, n in WRONG])
def test_a_wrong_argument_type_is_a_type_error_naming_it(method: str, args: tuple[Any, ...], name: str, backend: str, tmp_path: Path) -> None:
    mgr, leaf = _session(tmp_path, backend)
    path = mgr.session_file
    assert path is not None
    before = Path(path).read_bytes()
    files = sorted(os.listdir(tmp_path))
    try:
        with pytest.raises(TypeError, match=rf"\b{name}\b"):
            getattr(mgr, method)(*(leaf if a == "LEAF" else a for a in args))
        assert mgr.leaf_id == leaf and mgr.session_file == path
    finally:
        mgr.close()
    assert Path(path).read_bytes() == before and sorted(os.listdir(tmp_path)) == files


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda d: SessionManager.open(123), "path"),
        (lambda d: SessionManager.create(5), "cwd"),
        (lambda d: SessionManager.create("/p", 5), "session_dir"),
        (lambda d: SessionManager.in_memory(5), "cwd"),
        (lambda d: SessionManager.continue_recent(5), "cwd"),
        (lambda d: SessionManager.fork_from(123, "/p", d), "source_path"),
        (lambda d: SessionManager.fork_from("x", 5, d), "target_cwd"),
    ],
    ids=["open", "create-cwd", "create-dir", "in_memory", "continue_recent", "fork_from-source", "fork_from-cwd"],
)
def test_constructors_name_the_wrong_argument(call: Any, name: str, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        call(str(tmp_path))
    assert os.listdir(tmp_path) == []
