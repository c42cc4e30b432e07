"""Every ``StaleSessionError`` of the native backend names the file, as the python
backend's do (core messages get the path in ``src/python.rs``; the adapter's own in
``NativeIndex._line_changed``).
"""
import json
import os
import subprocess
import sys
import warnings

import pytest

from sessiontree import SessionManager, StaleSessionError

H = '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'


def _make(p):
    lines = [H]
    prev = None
    for i in range(100):
        lines.append(json.dumps({"type": "message", "id": f"m{i}", "parentId": prev,
                                 "timestamp": "2025-01-01T00:00:01.000Z",
                                 "message": {"role": "user", "content": "x" * 200}},
                                separators=(",", ":")))
        prev = f"m{i}"
    p.write_text("\n".join(lines) + "\n")


def _rewrite_middle(p):
    st = os.stat(p)
    data = bytearray(p.read_bytes())
    i = data.index(b'"id":"m50"')
    j = data.index(b"xxxx", i)
    data[j] = ord("y")                     # same size, both 4 KiB ends untouched
    with open(p, "r+b") as f:
        f.write(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("read", [lambda sm: sm.get_entry("m50"), lambda sm: sm.build_session_context("m50")],
                         ids=["get_entry", "context"])
def test_native_stale_error_names_the_file(tmp_path, read):
    p = tmp_path / "s.jsonl"
    _make(p)
    sm = SessionManager.open(str(p), backend="native")
    _rewrite_middle(p)
    try:
        read(sm)
    except StaleSessionError as e:
        assert str(p) in str(e), f"no file named in: {e}"
    else:
        raise AssertionError("rewrite not detected")
