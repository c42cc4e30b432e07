"""Commands on a real pseudo-terminal, their output fed to a VT100 emulator (pyte):
what the screen shows, after progress displays have been drawn and cleared."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from sessiontree.generate import generate_session


def _screen(argv: list[str], cwd: Path, env: dict[str, str], cols: int, rows: int) -> tuple[int, list[str]]:
    """Run ``argv`` on a ``cols`` × ``rows`` pty; its exit status and the screen's lines
    when it has ended."""
    pyte = pytest.importorskip("pyte", reason="pyte is not installed: pip install pyte")
    screen = pyte.Screen(cols, rows)
    stream = pyte.ByteStream(screen)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    end = time.monotonic() + 120
    try:
        while time.monotonic() < end:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the pty
                break
            if not data:
                break
            stream.feed(data)
        status = proc.wait(timeout=max(1.0, end - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return status, [line.rstrip() for line in screen.display]


def _env(tmp_path: Path) -> dict[str, str]:
    """A fresh user's environment whose terminal size is the pty's alone."""
    env = {**os.environ, "HOME": str(tmp_path / "h"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


def test_check_prints_every_result_whole_under_its_progress(tmp_path: Path) -> None:
    """``check DIR`` on a terminal draws an n-of-m bar while it prints a line per file:
    every file's line is on the screen whole at the end, with the total, and no bar or
    spinner is left over (a trial saw the bar and the per-file spinner drawn over the
    results)."""
    folder = tmp_path / "d"
    folder.mkdir()
    names = [f"s{k:02d}.jsonl" for k in range(12)]
    for k, name in enumerate(names):
        generate_session(folder / name, size_bytes=40_000, seed=k)
    env = _env(tmp_path)
    status, lines = _screen([sys.executable, "-m", "sessiontree", "check", "d"], tmp_path, env, 80, 40)
    assert status == 0, lines
    for name in names:
        assert any(line.startswith(f"d/{name}: clean (") and line.endswith(" entries)") for line in lines), \
            (name, lines)
    assert any(line.startswith("12 file(s) checked: 12 clean") for line in lines), lines
    assert not any("checking" in line or "opening" in line for line in lines), lines


def test_usage_session_fits_the_terminal(tmp_path: Path) -> None:
    """``usage session`` on an 80-column terminal: a row wider than the terminal puts
    its path on a line of its own, whole, and its numbers under it (as ``ls`` and
    ``search`` show a path that does not fit): no line wraps (the screen is wide
    enough to tell: pyte wraps what is wider), every path is there whole."""
    folder = tmp_path / "proj"  # a path of 72 cells: it fits, its row does not
    folder.mkdir()
    names = [f"2025-01-0{k}T10-00-00-000Z_0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5{k}.jsonl" for k in range(3)]
    for k, name in enumerate(names):
        generate_session(folder / name, size_bytes=30_000, seed=k)
    env = _env(tmp_path)
    status, lines = _screen([sys.executable, "-m", "sessiontree", "usage", "session", folder.name], tmp_path, env,
                            200, 40)
    assert status == 0, lines
    wide = [line for line in lines if line]
    status, lines = _screen([sys.executable, "-m", "sessiontree", "usage", "session", folder.name], tmp_path, env,
                            80, 40)
    assert status == 0, lines
    assert max(map(len, wide)) > 80  # on 200 columns a row is one line
    for name in names:
        assert f"{folder.name}/{name}" in lines, lines
    totals = [k for k, line in enumerate(lines) if line == "total"]
    assert len(totals) == 1 and lines[totals[0] + 1].split()[0] == wide[-2].split()[1], (lines, wide)


def test_check_never_breaks_a_path(tmp_path: Path) -> None:
    """A result line wider than the terminal puts its path (``PATH:LINE`` for a
    problem) on a line of its own, whole, and the rest under it: a path is pasted back
    (a trial saw ``…hand-compaction.js`` / ``onl:23:`` split by a real line break)."""
    folder = tmp_path / ("a-folder-with-a-long-name-" * 2)
    folder.mkdir()
    generate_session(folder / "clean-session.jsonl", size_bytes=20_000, seed=1)
    broken = folder / "damaged-session.jsonl"
    generate_session(broken, size_bytes=20_000, seed=2)
    with broken.open("ab") as f:
        f.write(b'{"type":"message","id":"torn\n')  # a damaged line: a problem with a line number
    env = _env(tmp_path)
    status, lines = _screen([sys.executable, "-m", "sessiontree", "check", folder.name], tmp_path, env, 80, 40)
    assert status == 1, lines
    for name in ("clean-session.jsonl", "damaged-session.jsonl"):
        assert f"{folder.name}/{name}:" in lines, lines  # whole, on its own line (72 cells)
    assert any(line.startswith(f"  {folder.name}/damaged-session.jsonl:") and line.rstrip(":").split(":")[-1].isdigit()
               for line in lines), lines
    assert any(line.strip().startswith("clean (") for line in lines), lines


def test_info_never_breaks_its_files_path(tmp_path: Path) -> None:
    """``info`` on a terminal: a path too long to fit beside its label is on a line of
    its own, whole (a trial saw ``…project0--/20`` / ``25-11-19T…jso`` / ``nl``, the
    name broken by real line breaks)."""
    folder = tmp_path / ("a-folder-with-a-long-name-" * 2)
    folder.mkdir()
    name = "2025-11-19T17-12-06-629Z_0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
    generate_session(folder / name, size_bytes=20_000, seed=1)
    env = _env(tmp_path)
    shown = f"{folder.name}/{name}"  # 120 cells: wider than the terminal, wrapped by it alone
    status, lines = _screen([sys.executable, "-m", "sessiontree", "info", shown], tmp_path, env, 200, 40)
    assert status == 0, lines
    assert any(line.startswith("file") and shown in line for line in lines), lines
    status, lines = _screen([sys.executable, "-m", "sessiontree", "info", shown], tmp_path, env, 80, 40)
    assert status == 0, lines
    k = next(k for k, line in enumerate(lines) if line.startswith(shown[:80]))
    assert lines[k] + lines[k + 1] == shown, lines[k:k + 2]  # the terminal's own wrap, nothing between
    assert lines[k - 1].startswith("file") and "bytes)" in lines[k - 1], lines[k - 1]


def test_a_search_at_a_terminal_is_written_without_rich(tmp_path: Path) -> None:
    """A warm search at a terminal writes its styled, fitted lines itself (``Io.styler``):
    rich's console, text and progress modules are not imported (about 60 ms of its
    start; its table of character widths may be, to fit a wide character)."""
    folder = tmp_path / "p"
    folder.mkdir()
    generate_session(str(folder / "s.jsonl"), entries=120, seed=3)
    env = _env(tmp_path)
    code = ("import sys\nfrom sessiontree.cli import main\n"
            f"code = main(['search', 'the', {str(folder)!r}, '--limit', '8'])\n"
            "heavy = ('rich.console', 'rich.text', 'rich.progress', 'rich.style')\n"
            "print('rich imported' if any(m in sys.modules for m in heavy) else 'no rich')\n"
            "sys.exit(code)\n")
    status, lines = _screen([sys.executable, "-c", code], tmp_path, env, 64, 60)
    assert status == 0
    shown = [line for line in lines if line]
    assert shown[-1] == "no rich", shown
    assert any(line.startswith("hits 1–8 of ") for line in shown), shown


def test_a_progress_display_waits_until_the_work_takes_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    """A progress display starts only once the work has run ``PROGRESS_AFTER`` seconds
    (a warm answer never imports rich's progress), then shows the last progress said
    and follows it; none is drawn inside it."""
    import contextlib

    from sessiontree.cli import _common

    started: list[list[tuple[int, int | None]]] = []

    @contextlib.contextmanager
    def start(done: int, total: int | None) -> object:
        got: list[tuple[int, int | None]] = [(done, total)]  # its first frame
        started.append(got)
        yield lambda done, total=None: got.append((done, total))

    monkeypatch.setattr(_common, "PROGRESS_AFTER", 0.05)
    io = _common.Io()
    with _common._after_a_while(io, start) as update:
        update(1, 10)
    time.sleep(0.2)
    assert started == [] and not io.live
    with _common._after_a_while(io, start) as update:
        update(1, 10)
        assert io.live
        deadline = time.monotonic() + 10
        while not started and time.monotonic() < deadline:
            time.sleep(0.01)
        update(2, 10)
    assert started == [[(1, 10), (2, 10)]] and not io.live


def test_a_ctrl_c_while_a_progress_display_starts_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ctrl-c that lands while the timer's thread is starting the display waits for
    the start and then ends the display (adversary round 52: the display went on, and
    the terminal's cursor stayed hidden)."""
    import contextlib
    import signal
    import threading

    from sessiontree.cli import _common

    entered, ended = threading.Event(), threading.Event()
    main = threading.main_thread().ident
    assert main is not None and threading.current_thread().ident == main

    @contextlib.contextmanager
    def start(done: int, total: int | None) -> object:
        entered.set()
        time.sleep(0.1)  # rich's import and start, slowed: a second ctrl-c meanwhile
        signal.pthread_kill(main, signal.SIGINT)
        time.sleep(0.2)
        try:
            yield lambda done, total=None: None
        finally:
            ended.set()

    monkeypatch.setattr(_common, "PROGRESS_AFTER", 0.01)
    io = _common.Io()
    with pytest.raises(KeyboardInterrupt):
        with _common._after_a_while(io, start):
            assert entered.wait(10)
            raise KeyboardInterrupt  # the first ctrl-c, while the start holds the lock
    assert ended.is_set() and not io.live


def test_context_lines_expand_tabs_at_a_terminal() -> None:
    """A short line holding tabs is fitted as a long one is: its tabs expanded and its
    text within the width (adversary round 52: six tabs and an X went out raw, 53 cells
    on a 40-cell terminal, where rich had expanded and wrapped them)."""
    from sessiontree.view import cells, hang_lines

    for text in ("\t\t\t\t\t\tX", "    \t\t\t\t\t\tX", "a\tb", "\t"):
        for width in (40, 20, 9):
            out = list(hang_lines([(text, "dim")], width))
            assert out and all("\t" not in t and cells(t) <= width and s == "dim" for t, s in out), (text, width, out)
            assert "".join(t for t, _ in out).replace(" ", "") == text.replace("\t", "").replace(" ", "")


def test_a_note_at_a_terminal_is_wrapped_as_rich_wrapped_it(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A note on stderr at a terminal is broken at spaces to its width, as rich's
    console broke it, without making a console (rich's import is 60 ms of a warm
    command's start); piped, or with --color never, it is one line."""
    import io
    import re

    from rich.console import Console
    from rich.text import Text

    from sessiontree.cli import _common

    text = "note: --all is not needed with a PATH (a folder is read with its subfolders); it names Pi's store"
    for env in ("NO_COLOR", "FORCE_COLOR", "TERM", "LINES"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("COLUMNS", "30")
    for tty, mode, wrapped in (("1", "auto", True), ("0", "auto", False), ("1", "never", False)):
        monkeypatch.setenv("TTY_COMPATIBLE", tty)
        io_ = _common.Io(mode)
        io_.note(text)
        assert io_._consoles is None
        got = capsys.readouterr().err
        rich = Console(file=io.StringIO(), stderr=True, highlight=False, force_terminal={"never": False}.get(mode),
                       soft_wrap=not wrapped, width=30)
        rich.print(Text(text))
        want = rich.file.getvalue()  # type: ignore[attr-defined]
        assert re.sub(" +\n", "\n", got) == re.sub(" +\n", "\n", want), (tty, mode)
        assert (got.count("\n") > 1) == wrapped
