"""``sessiontree import`` as a real subprocess, then ``check`` / ``tree`` / ``context`` on the result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import shutil
from pathlib import Path

from _import_helpers import CLAUDE, CODEX
from test_cli import run


def test_import_claude_paths_json_and_idempotent(tmp_path: Path) -> None:
    out = tmp_path / "pi"
    src = CLAUDE / "multiblock.jsonl"
    p = run("import", "claude", str(src), str(CLAUDE / "damaged.jsonl"), "--to", str(out), "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["created"] for r in rows] == [True, True]
    damaged = rows[1]
    assert damaged["skipped"]["invalid JSON"] == 1 and damaged["unmapped"]["parentUuid cycle (broken)"] == 1
    files = sorted(out.glob("*.jsonl"))
    assert len(files) == 2
    c = run("check", *map(str, files))
    assert c.returncode == 0, c.stdout
    t = run("tree", rows[0]["path"])
    assert t.returncode == 0 and "Bash" in t.stdout and "leaf" in t.stdout
    ctx = run("context", rows[0]["path"], "--json")
    assert ctx.returncode == 0 and "Two files" in ctx.stdout
    again = run("import", "claude", str(src), "--to", str(out), "--json")
    assert json.loads(again.stdout)[0]["entriesAdded"] == 0


def test_import_codex_all_from_codex_home(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    shutil.copytree(CODEX, home / "sessions" / "2025" / "10" / "02")
    out = tmp_path / "pi"
    p = run("import", "codex", "--to", str(out), env={"CODEX_HOME": str(home)})
    assert p.returncode == 0, p.stderr
    assert "9 session(s) imported" in p.stdout
    assert "not mapped, per record type:" in p.stdout and "kept as custom" in p.stdout
    assert "parentSession:" in p.stdout  # the fork and the subagent
    c = run("check", *map(str, sorted(out.glob("*.jsonl"))))
    assert c.returncode == 0, c.stdout


def test_import_claude_all_writes_into_pi_layout(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    shutil.copytree(CLAUDE, claude / "projects" / "-home-dev-proj")
    pi = tmp_path / "pi-agent"
    p = run("import", "claude", env={"CLAUDE_CONFIG_DIR": str(claude), "PI_CODING_AGENT_DIR": str(pi)})
    assert p.returncode == 0, p.stderr
    folder = pi / "sessions" / "--home-dev-proj--"
    files = sorted(folder.glob("*.jsonl"))
    assert len(files) == 12  # 10 session files, the inline sidechain of one, the subagent of another
    ls = run("ls", str(folder), "--json")
    assert ls.returncode == 0 and len(json.loads(ls.stdout)["sessions"]) == len(files)


def test_import_errors_are_one_line(tmp_path: Path) -> None:
    p = run("import", "claude", str(tmp_path / "missing.jsonl"))
    assert p.returncode == 1 and "no such file" in p.stderr and "Traceback" not in p.stderr


def test_all_has_one_meaning_and_import_refuses_it(tmp_path: Path) -> None:
    """``--all`` names Pi's store on every command; ``import`` once took it for the
    agent's own store (issue 26, one grammar). That is now the default without a PATH,
    and the old spelling is a usage error saying so, with nothing imported."""
    home = tmp_path / "codex"
    shutil.copytree(CODEX, home / "sessions" / "2025" / "10" / "02")
    for source in ("claude", "codex"):
        p = run("import", source, "--all", "--to", str(tmp_path / "out"),
                env={"CODEX_HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})
        assert p.returncode == 2 and "import takes no --all" in p.stderr, p.stderr
        assert f"`sessiontree import {source}` imports every {source} session" in p.stderr
    assert not (tmp_path / "out").exists()
    assert "[--all]" not in run("import", "--help").stdout  # not offered, only refused


def test_a_path_that_cannot_be_read_raises_in_python(tmp_path: Path, backend: str) -> None:
    """The Python API raises for its caller's own path (a result with only ``error`` set
    read as ``None 0 None {}`` in the README's loop); nothing is written. The command
    keeps its one line and status 1."""
    import pytest

    from sessiontree.importers import import_claude, import_codex, import_sources

    out = tmp_path / "pi"
    for call in (lambda p: import_claude(p, to=out, backend=backend),
                 lambda p: import_codex(p, to=out, backend=backend),
                 lambda p: import_sources("codex", [p], to=out, backend=backend)):
        with pytest.raises(FileNotFoundError) as e:
            call(tmp_path / "missing.jsonl")
        assert e.value.filename == str(tmp_path / "missing.jsonl")
        with pytest.raises(IsADirectoryError):
            call(tmp_path)
    assert not out.exists()
    # Another agent's file is still a result naming the importer that reads it.
    (r,) = import_claude(next(CODEX.glob("*.jsonl")), to=out, backend=backend)
    assert r.path is None and r.error is not None and "sessiontree import codex" in r.error
    for source in ("claude", "codex"):
        p = run("import", source, str(tmp_path / "missing.jsonl"))
        assert p.returncode == 1 and p.stderr.strip() == f"sessiontree: error: {tmp_path / 'missing.jsonl'}: no such file"


def test_import_all_with_nothing_to_import_says_where_it_looked(tmp_path: Path) -> None:
    """It names the folder it read, whether the variable is set or not (trial 60: it
    named "$CLAUDE_CONFIG_DIR/projects", unset), and says a PATH imports from elsewhere."""
    for source, var, store, home in (("claude", "CLAUDE_CONFIG_DIR", "projects", ".claude"),
                                     ("codex", "CODEX_HOME", "sessions", ".codex")):
        p = run("import", source, "--to", str(tmp_path / "out"), env={var: str(tmp_path / "none")})
        assert p.returncode == 1 and f"no {source} transcripts found under {tmp_path / 'none' / store} " in p.stderr
        assert "PATH" in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
        p = run("import", source, "--to", str(tmp_path / "out"), env={var: "", "HOME": str(tmp_path / "h")})
        assert p.returncode == 1 and f"found under {tmp_path / 'h' / home / store} " in p.stderr, p.stderr


def test_a_fifo_given_to_the_python_api_is_refused_not_waited_on(tmp_path: Path, backend: str) -> None:
    """A FIFO (or a device) named as a source is refused at once: opening it for reading
    would wait for a writer that never comes. The child is killed after 20 s if it hangs."""
    fifo = tmp_path / "rollout.jsonl"
    os.mkfifo(fifo)
    code = ("import sys\nfrom sessiontree.importers import import_claude, import_codex\n"
            "for call in (import_claude, import_codex):\n"
            "    try:\n        call(sys.argv[1], to=sys.argv[2], backend=sys.argv[3])\n"
            "    except OSError as e:\n        print('refused', e)\n")
    p = subprocess.run([sys.executable, "-c", code, str(fifo), str(tmp_path / "out"), backend],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0 and p.stdout.count("refused") == 2 and "not a regular file" in p.stdout, p
    assert not (tmp_path / "out").exists()


def test_a_fifo_or_folder_among_subagents_is_passed_over(tmp_path: Path) -> None:
    """A FIFO or a folder named ``agent-*.jsonl`` in a session's ``subagents/`` is no
    transcript: passed over, as a folder PATH's and the store's are (trial 59b: every
    import of the session said "not imported" twice and exited 1)."""
    sid = "5e551017-0000-4000-8000-0000000000ab"
    proj = tmp_path / "proj"
    shutil.copytree(CLAUDE / sid, proj / sid)
    shutil.copy(CLAUDE / f"{sid}.jsonl", proj)
    os.mkfifo(proj / sid / "subagents" / "agent-x.jsonl")
    (proj / sid / "subagents" / "agent-y.jsonl").mkdir()
    for args in ([str(proj)], [str(proj / f"{sid}.jsonl")]):
        p = run("import", "claude", *args, "--out", str(tmp_path / "out"), "--json")
        assert p.returncode == 0, p.stderr
        results = json.loads(p.stdout)
        assert [r["role"] for r in results] == ["main", "subagent"] and all(r["path"] for r in results), results


def test_an_import_error_names_its_paths_once(tmp_path: Path) -> None:
    """An import that meets another writer's lock is one line naming the source and
    the file once each (adversary 59: three times; trial 59b: the file twice)."""
    from sessiontree import SessionManager

    lines = (CLAUDE / "linear.jsonl").read_text().splitlines(keepends=True)
    src = tmp_path / "src" / "linear.jsonl"
    src.parent.mkdir()
    src.write_text("".join(lines[:2]))
    first = json.loads(run("import", "claude", str(src), "--out", str(tmp_path / "out"), "--json").stdout)[0]
    src.write_text("".join(lines))  # the transcript grew: the next import appends
    with SessionManager.open(first["path"]) as other:
        other.flush()  # holds the file's lock
        p = run("import", "claude", str(src), "--out", str(tmp_path / "out"))
    line = next(x for x in p.stdout.splitlines() if ": not imported:" in x)
    assert line.count(str(src)) == 1 and line.count(first["path"]) == 1 and "another writer" in line, line
