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


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_fifo_is_named_once_and_clearly(tmp_path, backend):
    """A FIFO named ``*.jsonl``: every command says what it is, and "not a session" at
    most once (``_storage.require_regular_file``'s reason; it was "not a session: PATH:
    not a regular file: not a session file"). Never opened: each run ends."""
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    for args in (["info", str(fifo)], ["tree", str(fifo)], ["check", str(fifo)], ["ls", str(tmp_path)],
                 ["export", str(fifo), "--format", "markdown"]):
        out = subprocess.run([CLI, "--backend", backend, *args], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, env={**os.environ, "HOME": str(tmp_path / "h")})
        said = out.stdout + out.stderr
        # check puts its label between ("PATH: cannot read: a FIFO, …"), as for any file it cannot read.
        assert str(fifo) in said and ": a FIFO, not a regular file" in said, (args, said)
        assert said.count("not a session") <= 1 and "not a session file" not in said, (args, said)
        assert (out.returncode == 0) == (args[0] == "ls"), (args, out.returncode, said)
