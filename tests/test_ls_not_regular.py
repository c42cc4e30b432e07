"""``ls`` names a FIFO or a device called ``*.jsonl`` "not a regular file", as ``check``
and ``open`` do, and never reads it (a FIFO would block, a device need not end).
"""
import json
import os
import subprocess
import sys
import pytest

CLI = os.path.join(os.path.dirname(sys.executable), "sessiontree")


@pytest.mark.parametrize("backend", ["native", "python"])
def test_ls_names_fifo_as_not_regular(tmp_path, backend):
    os.mkfifo(tmp_path / "f.jsonl")
    os.symlink("/dev/zero", tmp_path / "z.jsonl")
    out = subprocess.run([CLI, "--backend", backend, "ls", str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=60)
    probs = {os.path.basename(p["path"]): p["reason"] for p in json.loads(out.stdout)["problems"]}
    assert set(probs) == {"f.jsonl", "z.jsonl"}
    for name, reason in probs.items():
        assert "regular" in reason, f"{name}: {reason!r}"
