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


def test_ls_of_a_folder_with_no_session_reports_its_files(tmp_path, backend):
    """Only files that are not sessions: no table, the count and the problems (no
    crash on an empty table)."""
    (tmp_path / "x.jsonl").write_text("not json\n")
    for extra in ([], ["--no-cache"]):
        out = subprocess.run([CLI, "--backend", backend, "ls", str(tmp_path), *extra],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("0 session(s)\n") and "x.jsonl:1: no session header" in out.stdout
