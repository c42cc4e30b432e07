"""The commands' output fitted to a terminal (issue 26, item 3): run on a real
pseudo-terminal of 80 and 40 columns, no line is wider than it, a long value continues
under itself, and piped output is left whole."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from _terminal import on_terminal
from sessiontree import SessionManager

NAME = "一个非常长的会话名称 with emoji 🎉🎉🎉 and a tail that goes on well past the terminal's width"
ASKED = "请帮我修复这个问题：终端输出在八十列时溢出了 🙏 and then some english words to make it longer still"


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    """A session with a long CJK and emoji name, cwd, message and labels."""
    folder = tmp_path / "a-long-folder-name-for-the-layout" / "and-another-long-one-below-it"
    with SessionManager.create(str(tmp_path / "項目" / ("很长的目录名称" * 4) / "🚀🚀"), str(folder)) as sm:
        sm.append_session_info(NAME)
        user = sm.append_message({"role": "user", "content": ASKED, "timestamp": 1_700_000_000_000})
        reply = sm.append_message({
            "role": "assistant", "content": [{"type": "text", "text": "好的。第一行\n" + "第二行 with more words " * 8}],
            "provider": "anthropic", "model": "claude-a-very-long-model-name-20261206-preview-experimental",
            "api": "x", "stopReason": "stop", "timestamp": 1_700_000_001_000,
            "usage": {"input": 12345, "output": 678, "cacheRead": 100000, "cacheWrite": 5000, "totalTokens": 118023,
                      "cost": {"total": 0.1234}}})
        sm.append_label_change(user, "这是一个非常非常长的标签用于测试八十列终端的布局 🏷️🏷️ and more words")
        sm.append_label_change(reply, "a-very-long-ascii-label-" * 5)
        path = sm.session_file
    assert path is not None
    return Path(path)


def _fits(lines: list[str], cols: int) -> None:
    over = [line for line in lines if cell_len(line) > cols]
    assert not over, f"{len(over)} line(s) wider than {cols}: {over[:3]}"


@pytest.mark.parametrize("cols", [80, 40])
def test_info_continues_a_long_value_under_it(wide: Path, cols: int) -> None:
    """Issue 26: a value longer than the line went on at column 0, across the labels'
    column; it continues under itself (17 cells in), no line wider than the terminal."""
    status, lines, err = on_terminal(["info", str(wide)], cols)
    assert status == 0, err
    # The session's id is pasted back as a path is: whole, on its own line when it
    # does not fit beside its label (trial 58: broken at a hyphen at 40 columns).
    sid = json.loads(wide.read_text().splitlines()[0])["id"]
    assert any(line == sid or line.startswith(f"session          {sid}") for line in lines), lines
    lines = [line for line in lines if not _a_path(line) and line != sid]  # the file's path: whole, alone
    _fits(lines, cols)
    # A count's name and number stay on one line (trial 58: "session_info" apart from its 1).
    for pair in ("message 2", "session_info 1", "label 2", "assistant 1", "user 1"):
        assert any(pair in line for line in lines), (pair, lines)
    keys = ("file", "opened", "session", "name", "cwd", "time", "entries", "messages", "tree", "current leaf",
            "compactions", "labelled entries", "tokens", "cost", "models", "problems")
    assert all(line.startswith(keys) or line.startswith(" " * 17) for line in lines), lines
    name = next(k for k, line in enumerate(lines) if line.startswith("name "))
    more = [line for line in lines[name + 1:] if line.startswith(" " * 17)]
    assert more and more[0].strip() in NAME  # the name goes on under itself
    # Piped, a field is one line, whole.
    piped = subprocess.run([sys.executable, "-m", "sessiontree", "info", str(wide)], capture_output=True, text=True,
                           encoding="utf-8", timeout=300, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    assert f"name             {NAME}\n" in piped.stdout


@pytest.mark.parametrize("cols", [80, 40])
def test_context_continues_a_long_line_under_its_text(wide: Path, cols: int) -> None:
    """A message line longer than the terminal continues at its body's column (4), and a
    message's header line under its role, never at column 0."""
    status, lines, err = on_terminal(["context", str(wide)], cols)
    assert status == 0, err
    _fits(lines, cols)
    assert all(line == "" or line.startswith(("context at ", "[", "    ")) for line in lines), lines
    asked = next(k for k, line in enumerate(lines) if line.startswith("    请帮我"))
    assert lines[asked + 1].startswith("    ") and lines[asked + 1].strip() in ASKED
    piped = subprocess.run([sys.executable, "-m", "sessiontree", "context", str(wide)], capture_output=True, text=True,
                           encoding="utf-8", timeout=300, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    assert f"    {ASKED}\n" in piped.stdout  # piped: the line whole


def test_hang_fits_and_keeps_every_word() -> None:
    from sessiontree.view import cells, hang

    text = "一个非常长的会话名称 with emoji 🏷️🏷️ and a-word-longer-than-any-line-can-hold-" * 3 + "\tend"
    for width in (20, 40, 80):
        lines = hang(text, 17, width)
        assert cells(lines[0]) <= width - 17 and all(cells(line) <= width for line in lines), (width, lines)
        assert all(line.startswith(" " * min(17, width // 2)) for line in lines[1:])
        assert "".join(line.strip() for line in lines).replace(" ", "") == text.expandtabs(8).replace(" ", "")
    assert hang("one\ntwo", 4, None) == ["one", "    two"]  # piped: its own breaks only
    assert hang("x" * 100, 4, None) == ["x" * 100]


def _a_path(line: str) -> bool:
    """A session's path on a line of its own: never cut (CONTRACT §10, Paths); ``check``
    ends it with ``:`` (``PATH:`` or ``PATH:LINE:``, its result on the next line)."""
    text = re.sub(r"(:\d+)?:$", "", line.strip()).strip("'")
    return text.endswith(".jsonl") and " " not in text


@pytest.mark.parametrize("cols", [80, 40])
def test_every_command_fits_the_terminal(wide: Path, corpus_dir: Path, tmp_path: Path, cols: int) -> None:
    """Issue 26: every command on an 80- and a 40-column terminal, over the shared
    corpus and a session of long CJK and emoji names, labels, text and paths: no line
    wider than the terminal (a session's path, never cut, aside), and ``--help`` at 80
    (at 40, argparse's usage lines cannot break an option's choices)."""
    env = {"HOME": str(tmp_path / "home"), "SESSIONTREE_CATALOG": str(tmp_path / "catalog.sqlite3")}
    folder = str(wide.parent.parent)
    unicode = str(corpus_dir / "hand-unicode.jsonl")
    runs = [["info", str(wide)], ["tree", str(wide), "--full"], ["tree", str(wide), "--branches"],
            ["context", str(wide)], ["context", str(wide), "--full"], ["info", unicode], ["tree", unicode],
            ["context", unicode], ["ls", folder], ["ls", str(corpus_dir)], ["search", "words", folder],
            ["search", "message", str(corpus_dir)], ["usage", folder], ["usage", str(corpus_dir)],
            ["usage", "model", str(corpus_dir)], ["usage", "project", str(corpus_dir)], ["index", folder],
            ["check", folder], ["check", str(corpus_dir)]]
    if cols == 80:
        runs += [[command, "--help"] for command in ("tree", "ls", "search", "usage", "index", "check", "fork",
                                                     "migrate", "generate", "export", "bench", "info", "context")]
    for args in runs:
        status, lines, err = on_terminal(args, cols, env=env)
        assert status in (0, 1), (args, err)
        over = [line for line in lines if cell_len(line) > cols and not _a_path(line)]
        assert not over, (args, over[:3])


def test_usage_on_a_narrow_terminal_keeps_every_key_and_number(wide: Path, corpus_dir: Path, tmp_path: Path) -> None:
    """At 40 columns no table of seven numbers fits: rich folded the key column away
    (no day, no model shown); each line of the report is its key, then its numbers.
    Numbers past a thousand T are powers of ten (``2.5e19``, not ``24691357.8T``)."""
    env = {"HOME": str(tmp_path / "home"), "SESSIONTREE_CATALOG": str(tmp_path / "catalog.sqlite3")}
    status, lines, err = on_terminal(["usage", str(wide.parent)], 40, env=env)
    assert status == 0, err
    _fits(lines, 40)
    lines = [line.replace("\u00a0", " ") for line in lines]  # a title and its number do not part
    assert lines[0] == "2023-11-14" and lines[1].startswith("  records 1  input 12.3k"), lines
    assert "total" in lines and any("$ 0.12" in line for line in lines), lines
    status, lines, err = on_terminal(["usage", "model", str(corpus_dir)], 80, env=env)
    assert status == 0, err
    _fits(lines, 80)
    assert not any("T " in line or line.endswith("T") for line in lines[1:]), lines
    assert any("e19" in line for line in lines), lines


def test_usage_by_session_on_a_narrow_terminal_keeps_each_path_whole(wide: Path, tmp_path: Path) -> None:
    """At 40 columns a report by session is one block a session; its path, wider than
    the terminal, is written whole on one line (the terminal wraps it), never broken
    with an indent that a copy would take into the path (CONTRACT §10 "Paths"; trial 55)."""
    env = {"HOME": str(tmp_path / "home"), "SESSIONTREE_CATALOG": str(tmp_path / "catalog.sqlite3")}
    status, lines, err = on_terminal(["usage", "session", str(wide.parent)], 40, env=env)
    assert status == 0, err
    assert len(str(wide)) > 40 and str(wide) in lines, lines
    assert any(line.replace("\u00a0", " ").startswith("  records 1") for line in lines), lines


def test_info_piped_keeps_a_names_no_break_spaces(tmp_path: Path) -> None:
    """The no-break spaces that hold a count's name and number together at a terminal
    are not written piped, and a model's own are kept (adversary 58b)."""
    with SessionManager.create("/p", str(tmp_path)) as sm:
        sm.append_message({"role": "user", "content": "hi", "timestamp": 1_700_000_000_000})
        sm.append_message({
            "role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p\u00a0q",
            "model": "m\u00a0n", "api": "x", "stopReason": "stop", "timestamp": 1_700_000_001_000,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                      "cost": {"total": 0.5}}})
        path = sm.session_file
    assert path is not None
    piped = subprocess.run([sys.executable, "-m", "sessiontree", "info", path], capture_output=True, text=True,
                           encoding="utf-8", timeout=300, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    assert "models           p\u00a0q/m\u00a0n 1\n" in piped.stdout, piped.stdout
    assert "message 2" in piped.stdout and "\u00a02" not in piped.stdout
