"""Paths that are not UTF-8 (issue 11, item 7): Linux names are bytes, and Python hands
them over as ``str`` with surrogate escapes. The native backend converted them lossily
(U+FFFD), so it opened a different path: ``FileNotFoundError``, or another file that
happens to have the replaced name. Every layer must pass the OS bytes on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiontree import SessionManager

from _shared import open_quiet
from _writers import HDR, assistant, user

NAME = b"sess-\xff\xfe-caf\xe9.jsonl"  # not UTF-8


def _write(folder: Path, name: bytes, data: bytes) -> str:
    path = os.path.join(os.fsencode(folder), name)
    with open(path, "wb") as f:
        f.write(data)
    return os.fsdecode(path)


def test_a_non_utf8_file_name_opens_that_file(backend: str, tmp_path: Path) -> None:
    real = _write(tmp_path, NAME, HDR + user("u1", None) + b"\n" + assistant("a1", "u1") + b"\n")
    # The name a lossy conversion produces: a decoy that must not be read.
    _write(tmp_path, NAME.decode("utf-8", "replace").encode(), HDR + user("decoy", None) + b"\n")
    mgr = open_quiet(real, backend)
    try:
        assert [e["id"] for e in mgr.get_entries()] == ["u1", "a1"]
        with open(os.fsencode(real), "ab") as f:
            f.write(user("u2", "a1") + b"\n")
        assert mgr.refresh() == 1
        new = mgr.append_message({"role": "user", "content": "more", "timestamp": 3})
        assert mgr.session_file == real
    finally:
        mgr.close()
    again = open_quiet(real, backend)
    try:
        assert [e["id"] for e in again.get_entries()] == ["u1", "a1", "u2", new]
    finally:
        again.close()


def test_a_non_utf8_folder_for_new_and_forked_sessions(backend: str, tmp_path: Path) -> None:
    folder = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"d\xff"))
    mgr = SessionManager.create("/p", folder, backend=backend)
    try:
        mgr.append_message({"role": "user", "content": "hi", "timestamp": 1})
        mgr.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2})
        path = mgr.session_file
        assert path is not None and os.path.exists(os.fsencode(path))
        with open(os.fsencode(path), "ab") as f:
            f.write(user("zz", mgr.leaf_id) + b"\n")
        assert mgr.refresh() == 1  # the index built from the image now reads the file
        forked = SessionManager.fork_from(path, "/q", folder, backend=backend)
        try:
            assert [e["id"] for e in forked.get_entries()] == [e["id"] for e in mgr.get_entries()]
        finally:
            forked.close()
    finally:
        mgr.close()


@pytest.mark.parametrize("as_bytes", [False, True])
def test_count_newlines_takes_os_paths(as_bytes: bool, tmp_path: Path) -> None:
    pytest.importorskip("sessiontree._sessiontree")
    from sessiontree._sessiontree import count_newlines

    real = _write(tmp_path, NAME, b"a\nb\nc\n")
    assert count_newlines(os.fsencode(real) if as_bytes else real) == 3
