"""agent-core's ``append_entry`` given entries a reopen reads differently (an outside
attack on issue 29): memory and the file must agree.

* A ``leaf`` entry whose ``targetId`` is no earlier entry (absent from the session, the
  entry itself, not a string) moves nothing (CONTRACT §2 rule 9); the storage used to
  take the target as its leaf, so the session went on from an entry that does not
  exist while a reopen resumed from the last real one.
* A ``session`` object is a later header (rule 5), no entry: it used to be written to
  the file and then refused (``ValueError`` after the write); now it is refused before.
* An id another process appended since the file was read is refused before anything
  is written (``EntryExistsError``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree import EntryExistsError, InMemorySessionStorage, JsonlSessionStorage, SessionError, StaleSessionError

from _shared import report, open_quiet

TS = "2026-01-01T00:00:00.000Z"


def _user(eid: str, parent: str | None) -> dict[str, Any]:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS,
            "message": {"role": "user", "content": "hi", "timestamp": 1}}


@pytest.mark.parametrize("target", ["nope", "L1", 5, ["a"], {"x": 1}])
def test_leaf_entry_to_no_entry_moves_nothing(backend: str, tmp_path: Path, target: Any) -> None:
    path = tmp_path / "s.jsonl"
    st = JsonlSessionStorage.create(path, cwd="/p", first_write="now", backend=backend)
    mem = InMemorySessionStorage.create("/p", backend=backend)
    for s in (st, mem):
        s.append_entry(_user("a", None))
        s.append_entry(_user("b", "a"))
        s.append_entry({"type": "leaf", "id": "L1", "parentId": "b", "timestamp": TS, "targetId": target})
        assert s.get_leaf_id() == "b"
        assert [e["id"] for e in s.get_path_to_root(s.get_leaf_id())] == ["a", "b"]
    st.close()
    again = open_quiet(path, backend)
    assert again.leaf_id == "b"
    assert [k for k, *_ in report(again)] == ["invalid_leaf_target"]
    again.close()


def test_leaf_entry_to_earlier_entry_moves_the_leaf(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    st = JsonlSessionStorage.create(path, cwd="/p", first_write="now", backend=backend)
    st.append_entry(_user("a", None))
    st.append_entry(_user("b", "a"))
    st.append_entry({"type": "leaf", "id": "L1", "parentId": "b", "timestamp": TS, "targetId": "a"})
    assert st.get_leaf_id() == "a"
    st.append_entry({"type": "leaf", "id": "L2", "parentId": "a", "timestamp": TS, "targetId": None})
    assert st.get_leaf_id() is None
    st.close()
    again = open_quiet(path, backend)
    assert again.leaf_id is None and report(again) == []
    again.close()


def test_a_header_is_refused_before_it_is_written(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    st = JsonlSessionStorage.create(path, cwd="/p", first_write="now", backend=backend)
    st.append_entry(_user("a", None))
    before = path.read_bytes()
    with pytest.raises(ValueError):
        st.append_entry({"type": "session", "id": "S1", "parentId": "a", "timestamp": TS, "version": 3})
    assert path.read_bytes() == before
    st.append_entry(_user("b", "a"))  # the storage goes on
    assert st.get_leaf_id() == "b"
    st.close()
    again = open_quiet(path, backend)
    assert [e["id"] for e in again.get_entries()] == ["a", "b"] and report(again) == []
    again.close()
    assert os.listdir(tmp_path) == ["s.jsonl"]


OTHER_APPENDS = """
import sys
from sessiontree import JsonlSessionStorage
st = JsonlSessionStorage.open(sys.argv[1])
st.append_entry({"type": "message", "id": "x", "parentId": "a", "timestamp": "2026-01-01T00:00:00.000Z",
                 "message": {"role": "user", "content": "theirs", "timestamp": 1}})
st.close()
"""


def test_an_id_another_process_took_is_refused_before_writing(backend: str, tmp_path: Path) -> None:
    """Ids are checked after the lock is taken and the other process's lines indexed:
    an id another process appended since this storage read the file used to be written
    again and then refused (``ValueError`` after the write; a ``duplicate_id`` line in
    the file for good)."""
    path = tmp_path / "s.jsonl"
    st = JsonlSessionStorage.create(path, cwd="/p", first_write="now", backend=backend)
    st.append_entry(_user("a", None))
    st.close()
    mine = JsonlSessionStorage.open(path, backend=backend)
    assert "x" not in [e["id"] for e in mine.get_entries()]
    subprocess.run([sys.executable, "-c", OTHER_APPENDS, str(path)], check=True)
    written = path.read_bytes()
    with pytest.raises(EntryExistsError):
        mine.append_entry({**_user("x", "a"), "message": {"role": "user", "content": "mine", "timestamp": 1}})
    assert path.read_bytes() == written
    assert mine.get_entry("x")["message"]["content"] == "theirs"
    mine.append_entry(_user("b", "x"))
    mine.close()
    again = open_quiet(path, backend)
    assert [e["id"] for e in again.get_entries()] == ["a", "x", "b"] and report(again) == []
    again.close()


@pytest.mark.parametrize("how", ["truncated", "replaced", "removed", "rewritten"])
def test_a_file_changed_under_the_storage_is_stale(backend: str, tmp_path: Path, how: str) -> None:
    """The storage's own calls check the file as the manager's do (CONTRACT §4): an
    ``append_entry`` after the file was replaced or removed went to the old inode the
    writer held (acknowledged, and in no file anyone reads), after a truncation (python
    backend) below entries the file no longer held, and reads answered from memory."""
    path = tmp_path / "s.jsonl"
    st = JsonlSessionStorage.create(path, cwd="/p", first_write="now", backend=backend)
    for k in range(5):
        st.append_entry(_user(f"e{k}", f"e{k - 1}" if k else None))
    if how == "truncated":
        os.truncate(path, path.stat().st_size - 150)
    elif how == "replaced":
        (tmp_path / "new").write_bytes(path.read_bytes())
        os.rename(tmp_path / "new", path)
    elif how == "removed":
        path.unlink()
    else:
        data = path.read_bytes()
        path.write_bytes(data.replace(b'"e2"', b'"q2"'))
    before = path.read_bytes() if path.exists() else None
    for call in (lambda: st.append_entry(_user("new", "e4")), lambda: st.set_leaf_id("e1"), st.get_entries,
                 lambda: st.get_entry("e1"), lambda: st.get_path_to_root("e4"), lambda: st.find_entries("message"),
                 lambda: st.get_label("e1")):
        with pytest.raises(StaleSessionError):
            call()
    assert (path.read_bytes() if path.exists() else None) == before
    st.close()


def test_a_closed_storage_writes_nothing(backend: str, tmp_path: Path) -> None:
    """After ``close()`` (its own, or its manager's) a storage's calls raise
    ``SessionError`` on both backends: on the python backend an ``append_entry`` wrote
    and took the file's lock again, which then no one released (a later writer got
    ``SessionLockedError``), where the native backend refused."""
    path = tmp_path / "s.jsonl"
    st = JsonlSessionStorage.create(path, cwd="/p", first_write="now", backend=backend)
    st.append_entry(_user("a", None))
    st.close()
    via_manager = open_quiet(path, backend)
    other = via_manager.storage
    via_manager.close()
    written = path.read_bytes()
    for s in (st, other):
        for call in (lambda: s.append_entry(_user("b", "a")), lambda: s.set_leaf_id("a"), s.get_entries):
            with pytest.raises(SessionError):
                call()
    assert path.read_bytes() == written
    later = JsonlSessionStorage.open(path, backend=backend)
    later.append_entry(_user("c", "a"))  # nobody holds the lock
    later.close()
