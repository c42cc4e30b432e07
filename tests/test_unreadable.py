"""A session file the user cannot read (permission denied), or a folder it cannot list,
is left out of ``usage`` and ``search`` as a file that is not a session is, and each
says so in one note on stderr (adversaries 61, 61c: a report undercounted without a
word); the answer is the same with the catalog and without (CONTRACT §7).

Run as another user (``setpriv``: root reads any file), so skipped where that cannot
be done."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree import LoadReportWarning

from test_catalog import make_root

NOBODY = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder another user may enter (pytest's are the owner's alone)."""
    d = Path(tempfile.mkdtemp(prefix="st-unreadable-"))
    d.chmod(0o777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _as_nobody(argv: list[str], home: Path, backend: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "SESSIONTREE_CATALOG")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), SESSIONTREE_BACKEND=backend,
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable,
                           "-m", "sessiontree", *argv], capture_output=True, text=True, env=env, timeout=300)


def _history(shared_dir: Path, n: int, seed: int, backend: str = "auto") -> tuple[Path, list[str], Path]:
    """``(root, folders, home)`` of ``n`` sessions another user may read, or a skip
    where the commands cannot run as another user."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run as another user")
    root = shared_dir / "s"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        folders = make_root(root, n, seed=seed)
    home = shared_dir / "home"
    home.mkdir()
    for p in [shared_dir, *shared_dir.rglob("*")]:
        p.chmod(0o777 if p.is_dir() else 0o666)
    probe = _as_nobody(["--version"], home, backend)
    if probe.returncode != 0:
        pytest.skip(f"cannot run sessiontree as another user here ({probe.stderr.strip()[-200:]})")
    return root, folders, home


@pytest.mark.parametrize("backend", ["native", "python"])
def test_an_unreadable_session_is_left_out_and_said(shared_dir: Path, backend: str) -> None:
    if backend == "native":
        pytest.importorskip("sessiontree._sessiontree")
    root, _folders, home = _history(shared_dir, 12, 9, backend)
    hidden = sorted(root.rglob("*.jsonl"))[4]
    hidden.chmod(0)
    for argv in (["usage", "model", str(root), "--json"], ["search", "the", str(root), "--json", "--limit", "0"]):
        runs = [_as_nobody(argv + extra, home, backend) for extra in ([], [], ["--no-cache"])]  # cold, warm, files
        for r in runs:
            assert r.returncode == 0, r.stderr
            assert f"1 session file(s) or folder(s) could not be read and are left out: {hidden} (Permission denied)" \
                in r.stderr, r.stderr
        assert runs[0].stdout == runs[1].stdout == runs[2].stdout
        files = json.loads(runs[0].stdout)["files"]
        hidden.chmod(0o666)
        whole = _as_nobody(argv + ["--no-cache"], home, backend)
        hidden.chmod(0)
        assert json.loads(whole.stdout)["files"] == files + 1 and "could not be read" not in whole.stderr


@pytest.mark.parametrize("mode", [0o000, 0o644])
def test_a_folder_that_cannot_be_listed_is_said(shared_dir: Path, mode: int) -> None:
    """A project folder the user cannot list (000) or whose files it cannot reach (644:
    no search permission): its sessions are left out, in one note naming it."""
    root, folders, home = _history(shared_dir, 12, 10)
    closed = Path(folders[1])
    closed.chmod(mode)
    try:
        for argv in (["usage", "session", str(root), "--json"], ["search", "the", str(root), "--json"]):
            r = _as_nobody(argv, home, "auto")
            assert r.returncode == 0, r.stderr
            assert f"could not be read and are left out: {closed} (Permission denied" in r.stderr, r.stderr
    finally:
        closed.chmod(0o777)


def test_a_file_behind_a_folder_that_cannot_be_searched_says_so(shared_dir: Path) -> None:
    """A session file named inside a folder this user cannot search is "cannot be
    reached (permission denied)", not "no such file or folder" (adversary 61d)."""
    _root, folders, home = _history(shared_dir, 6, 11)
    inside = sorted(Path(folders[0]).glob("*.jsonl"))[0]
    Path(folders[0]).chmod(0)
    try:
        r = _as_nobody(["usage", "session", str(inside)], home, "auto")
        assert r.returncode == 1 and f"{inside}: cannot be reached (permission denied)" in r.stderr, r.stderr
    finally:
        Path(folders[0]).chmod(0o777)
