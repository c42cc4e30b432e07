"""Set-ups people have (issue 23, item 4): Pi's sessions folder a symlink to a folder
elsewhere (a dotfiles set-up), and folders of sessions linked in below a root. Every
history command works through them, the catalog guard compares Pi's folders as Pi
computes them, and a looping link never makes a walk run forever.

Real symlinks, real subprocesses, HOME / XDG_CACHE_HOME in a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree._places import session_dir_for_cwd
from sessiontree.catalog._location import resolve
from sessiontree.generate import generate_session


def run(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("SESSIONTREE_CATALOG", "PI_CODING_AGENT_DIR",
                                                             "XDG_CACHE_HOME", "COLUMNS")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=full,
                          cwd=cwd, timeout=300, encoding="utf-8", errors="replace")


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``~/.pi/agent/sessions`` -> ``~/pi-sessions`` holding two projects' sessions; the
    catalog in its default place (``~/.cache``)."""
    home = tmp_path / "home"
    target = home / "pi-sessions"
    for i, cwd in enumerate(["/home/me/a", "/home/me/a", "/home/me/b"]):
        folder = Path(session_dir_for_cwd(cwd, str(target)))
        folder.mkdir(parents=True, exist_ok=True)
        generate_session(folder / f"s{i}.jsonl", size_bytes=3_000, seed=230 + i, cwd=cwd)
    (home / ".pi" / "agent").mkdir(parents=True)
    (home / ".pi" / "agent" / "sessions").symlink_to(target)
    for k in ("SESSIONTREE_CATALOG", "PI_CODING_AGENT_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_every_history_command_reads_through_a_symlinked_sessions_folder(home: Path) -> None:
    env = {"HOME": str(home)}
    ls = run("ls", "--all", "--json", env=env)
    assert ls.returncode == 0, ls.stderr
    assert len(json.loads(ls.stdout)["sessions"]) == 3
    assert (home / ".cache" / "sessiontree" / "catalog.sqlite3").is_file()  # the default catalog was used
    for args in (["search", "the", "--all", "--json"], ["usage", "--all", "--json"], ["index", "--all", "--json"]):
        p = run(*args, env=env)
        assert p.returncode == 0, (args, p.stderr)
    out = home / "out.parquet"
    pytest.importorskip("pyarrow")
    p = run("export", "--format", "parquet", "--all", "--out", str(out), env=env)
    assert p.returncode == 0, p.stderr


def test_list_all_and_the_guard_in_the_library(home: Path) -> None:
    assert len(SessionManager.list_all()) == 3
    assert resolve(None) == str(home / ".cache" / "sessiontree" / "catalog.sqlite3")
    # Still refused: inside the link, inside its target, inside the agent folder.
    for inside in (home / ".pi" / "agent" / "sessions" / "c.sqlite3", home / "pi-sessions" / "c.sqlite3",
                   home / ".pi" / "agent" / "c.sqlite3"):
        with pytest.raises(ValueError, match="must not live inside Pi's folder"):
            resolve(inside)


def test_the_agent_folder_a_symlink_too(home: Path, tmp_path: Path) -> None:
    """``~/.pi`` itself a link into a dotfiles folder: Pi's agent folder is the link's
    target's ``agent``; the cache elsewhere is fine, a catalog in the dotfiles' agent
    folder is not."""
    dotfiles = tmp_path / "dotfiles"
    (home / ".pi").rename(dotfiles)
    (home / ".pi").symlink_to(dotfiles)
    assert resolve(None) == str(home / ".cache" / "sessiontree" / "catalog.sqlite3")
    with pytest.raises(ValueError):
        resolve(dotfiles / "agent" / "c.sqlite3")
    assert len(SessionManager.list_all()) == 3


def test_session_folders_linked_in_below_a_root_are_read_once(tmp_path: Path) -> None:
    """``ls DIR`` walks folders reached through symlinks, each once: a link to a
    folder already walked and a link that loops back up are left out, and the walk
    ends."""
    root = tmp_path / "root"
    elsewhere = tmp_path / "elsewhere" / "proj"
    elsewhere.mkdir(parents=True)
    generate_session(elsewhere / "x.jsonl", size_bytes=3_000, seed=1, cwd="/w/x")
    (root / "local").mkdir(parents=True)
    generate_session(root / "local" / "y.jsonl", size_bytes=3_000, seed=2, cwd="/w/y")
    (root / "linked").symlink_to(elsewhere)
    (root / "again").symlink_to(elsewhere)  # the same folder twice
    (root / "local" / "up").symlink_to(root)  # a loop
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3")}
    p = run("ls", str(root), "--json", env=env)
    assert p.returncode == 0, p.stderr
    paths = sorted(os.path.basename(s["path"]) for s in json.loads(p.stdout)["sessions"])
    assert paths == ["x.jsonl", "y.jsonl"]
