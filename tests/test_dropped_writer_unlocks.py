"""A manager that wrote and is then dropped without ``close()`` releases its descriptor
and its ``flock`` when collected (``SessionWriter.__del__``): reopening the file in the
same process can append.
"""
import gc
import os
import weakref
import warnings
import pytest
from sessiontree import SessionManager

H = '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
A = ('{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
     '"message":{"role":"assistant","content":[]}}')


@pytest.mark.parametrize("backend", ["native", "python"])
def test_collected_writer_releases_lock(tmp_path, backend):
    p = tmp_path / "s.jsonl"
    p.write_text(H + "\n" + A + "\n")
    sm = SessionManager.open(str(p), backend=backend)
    sm.append_message({"role": "user", "content": "x"})
    ref = weakref.ref(sm)
    del sm
    gc.collect()
    assert ref() is None
    fds = [fd for fd in os.listdir("/proc/self/fd")
           if os.path.realpath(f"/proc/self/fd/{fd}") == str(p)]
    assert fds == [], "descriptor of a collected manager is still open"
    again = SessionManager.open(str(p), backend=backend)
    again.append_message({"role": "user", "content": "y"})     # SessionLockedError today
    again.close()
