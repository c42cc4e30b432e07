"""Shared pieces of the ``sessiontree`` commands: consoles, errors, progress, opening a
session. How anything is *shown* (escaping, previews, fitting to the width) is the view
layer's (``sessiontree.view``)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)

from .._select import BACKENDS
from ..view import human_bytes, number, safe, to_json_bytes, value_text

__all__ = [
    "BACKENDS", "CliError", "Io", "make_io", "quiet_load_warnings", "spinner", "byte_progress", "count_progress",
    "require_file", "open_session", "file_version", "load_report", "skip_note", "exit_for_broken_pipe",
]

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from rich.console import Console


class CliError(Exception):
    """An expected failure: printed as one line on stderr, exit status ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Io:
    """Where a command writes: ``out`` (results) and ``err`` (progress, errors), rich
    consoles made when first used (a command that writes JSON, or nothing on stderr,
    does not import rich)."""

    def __init__(self, color: str = "auto") -> None:
        self._mode = color
        self._consoles: tuple[Console, Console] | None = None
        self.live = False  # a progress display is drawn: no second one inside it

    @property
    def out(self) -> Console:
        return self._made()[0]

    @property
    def err(self) -> Console:
        return self._made()[1]

    def _made(self) -> tuple[Console, Console]:
        if self._consoles is None:
            self._consoles = _consoles(self._mode)
        return self._consoles

    def on_err(self) -> Io:
        """An ``Io`` whose results go to this one's ``err`` too (a command whose output
        is the data itself, on stdout or a stream)."""
        io = Io(self._mode)
        io._consoles = (self.err, self.err)
        return io

    @property
    def color(self) -> bool:
        return self.out.is_terminal and not self.out.no_color

    def plain(self, stream: Any) -> bool:
        """``stream`` (stdout or stderr) is not a terminal by rich's own test (so rich
        would write text as it is: no styles, no wrapping), decided without importing
        rich: a command whose output is piped can skip it (its import is about 20 ms of a
        warm search's 90, benches/history.py)."""
        if self._mode == "always":
            return False
        tty = os.environ.get("TTY_COMPATIBLE", "")
        if tty in ("0", "1"):
            return tty == "0"
        force = os.environ.get("FORCE_COLOR")
        if force is not None:
            return force == ""
        try:
            return not stream.isatty()
        except (AttributeError, ValueError):
            return False

    def plain_width(self) -> int | None:
        """The width of stdout's console when stdout is plain (:meth:`plain`) and the
        consoles are not made yet, decided without importing rich: ``$COLUMNS`` when it
        is a number, else :data:`PIPED_WIDTH`. ``None`` otherwise (or ``$COLUMNS`` rich
        would read otherwise), when rich's console says."""
        if self._consoles is not None or not self.plain(sys.stdout):
            return None
        columns = os.environ.get("COLUMNS")
        if columns is None:
            return PIPED_WIDTH
        return int(columns) if columns.isascii() and columns.isdigit() and int(columns) > 0 else None

    def note(self, text: str) -> None:
        """One line of plain text (no markup) on stderr."""
        if self._consoles is None and self.plain(sys.stderr):
            sys.stderr.write(text + "\n")
            return
        from rich.text import Text

        self.err.print(Text(text))

    @property
    def interactive(self) -> bool:
        """Progress bars only when stderr really is a terminal (``--color always`` or not)."""
        try:
            if not os.isatty(sys.stderr.fileno()):
                return False
        except (AttributeError, OSError, ValueError):
            return False
        try:
            return self.err.is_terminal and os.isatty(self.err.file.fileno())
        except (AttributeError, OSError, ValueError):
            return False

    def styler(self) -> Any:
        """``paint(text, style_name) -> str``: ANSI-styled text, or the text itself without colour.

        Thousands of rows through ``Console.print`` cost about half a millisecond each;
        rendering each styled segment with ``Style.render`` and writing plain strings
        is two orders of magnitude cheaper, with the same escapes.
        """
        if not self.color:
            return lambda text, style: text
        from rich.console import COLOR_SYSTEMS
        from rich.style import Style

        system = COLOR_SYSTEMS.get(self.out.color_system or "standard")
        cache: dict[str, Any] = {}

        def paint(text: str, style: str) -> str:
            if not style or not text:
                return text
            st = cache.get(style)
            if st is None:
                st = cache[style] = Style.parse(style)
            return st.render(text, color_system=system)

        return paint

    def print(self, *args: Any, **kwargs: Any) -> None:
        self.out.print(*args, **kwargs)

    def write(self, text: str) -> None:
        """Plain text straight to stdout (no markup, no wrapping): fast for big outputs."""
        (self._consoles[0].file if self._consoles is not None else sys.stdout).write(text)

    def write_json(self, value: Any, *, indent: bool = True) -> None:
        """Write ``value`` as JSON (UTF-8, non-ASCII raw) followed by a newline."""
        # stdout as the console would write it (rich is not needed for JSON).
        out = self._consoles[0].file if self._consoles is not None else sys.stdout
        out.flush()
        data = to_json_bytes(value, indent=indent)
        buf = getattr(out, "buffer", None)
        if buf is not None:
            buf.write(data + b"\n")
            buf.flush()
        else:
            out.write(data.decode("utf-8", "surrogateescape") + "\n")


PIPED_WIDTH = 160
"""The width of a console that is not a terminal, when ``$COLUMNS`` is not set."""


def _consoles(color: str) -> tuple[Console, Console]:
    """rich consoles for stdout and stderr; a reader that stops reading (``| head``)
    ends the command as every other output path does (:func:`exit_for_broken_pipe`,
    status 0), where rich's own handler exits with 1."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            exit_for_broken_pipe()
            raise SystemExit(0)

    force = {"always": True, "never": False}.get(color)
    kw: dict[str, Any] = {"highlight": False}
    if color == "never":
        kw["no_color"] = True
    out = _Console(force_terminal=force, **kw)
    err = _Console(stderr=True, force_terminal=force, **kw)
    for console in (out, err):
        if not console.is_terminal:
            # Piped output is for files and scripts: no wrapping at 80 columns.
            console.soft_wrap = True
            if "COLUMNS" not in os.environ:
                console.width = PIPED_WIDTH
    return out, err


def make_io(color: str = "auto") -> Io:
    """Consoles for stdout/stderr. ``color``: ``auto`` (terminal only), ``always``, ``never``."""
    return Io(color)


def quiet_load_warnings() -> None:
    """The CLI shows load reports itself (``check``, ``info``); the library's warning is noise here."""
    try:
        from ..errors import LoadReportWarning
    except ImportError:  # pragma: no cover
        return
    warnings.simplefilter("ignore", LoadReportWarning)


# --------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def spinner(io: Io, text: str) -> Iterator[None]:
    """A spinner with elapsed time on a terminal; nothing when stderr is not a terminal
    or another progress display is drawn (``check``'s bar over many files)."""
    if not io.interactive or io.live:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=io.err, transient=True) as progress, _drawn(io):
        progress.add_task(text, total=None)
        yield


@contextlib.contextmanager
def _drawn(io: Io) -> Iterator[None]:
    """``io.live`` while a progress display is drawn."""
    io.live = True
    try:
        yield
    finally:
        io.live = False


@contextlib.contextmanager
def byte_progress(io: Io, text: str, total: int | None) -> Iterator[Any]:
    """A bytes progress bar; yields ``update(done, total)`` (a no-op when not a terminal
    or another progress display is drawn)."""
    if not io.interactive or io.live:
        yield lambda done, total=None: None
        return
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                               TransferSpeedColumn)

    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=io.err, transient=True) as progress, _drawn(io):
        task = progress.add_task(text, total=total or None)

        def update(done: int, new_total: int | None = None) -> None:
            progress.update(task, completed=done, total=new_total or total or None)

        yield update


@contextlib.contextmanager
def count_progress(io: Io, text: str, *, enabled: bool = True) -> Iterator[Any]:
    """An ``n of m`` progress bar; yields ``update(done, total)`` (a no-op when not a
    terminal, not ``enabled`` or inside another progress display).

    Drawn on ``io.out`` when stdout is that terminal: what the command prints to
    ``io.out`` meanwhile (``check``'s result per file) then goes above the bar, where a
    bar on stderr was drawn over it. No spinner is drawn inside it (:func:`spinner`)."""
    if not io.interactive or not enabled or io.live:
        yield lambda done, total=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = io.out if io.out.is_terminal else io.err
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress, _drawn(io):
        task = progress.add_task(text, total=None)

        def update(done: int, total: int | None = None) -> None:
            progress.update(task, completed=done, total=total)

        yield update


# --------------------------------------------------------------------------------------
# Opening sessions
# --------------------------------------------------------------------------------------


def require_file(path: str) -> None:
    """Raise CliError with a one-line reason unless ``path`` is a readable regular file."""
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory, not a session file")
    if not os.access(path, os.R_OK):
        raise CliError(f"{path}: permission denied")


def open_session(io: Io, path: str, backend: str, *, session_dir: str | None = None) -> tuple[Any, float]:
    """Open ``path`` read-only with a spinner; returns ``(manager, seconds)``.

    Raises:
        CliError: the file is missing or unreadable.
        InvalidSessionError: the file is not a session (reported by ``main``).
    """
    from .. import SessionManager

    require_file(path)
    size = os.path.getsize(path)
    with spinner(io, f"opening {os.path.basename(path)} ({human_bytes(size)}, backend {backend})"):
        t0 = time.perf_counter()
        kw: dict[str, Any] = {"backend": backend}
        if session_dir is not None:
            kw["session_dir"] = session_dir
        try:
            sm = SessionManager.open(path, **kw)
        except ImportError as e:
            raise CliError(f"the {backend} backend is not available ({e}); build it with `make build`") from None
        return sm, time.perf_counter() - t0


def file_version(sm: Any) -> Any:
    """The ``version`` the session's file holds (``SessionManager.file_version``: the
    header found by the loader's rules; a migrated file's original version), shown as
    a number, or as escaped text when it is not one."""
    version = sm.file_version
    if version is None:
        return None
    return version if number(version) is not None else safe(value_text(version, 40))


def load_report(sm: Any) -> list[Any]:
    """The manager's ``load_report`` (a method in the API; tolerate a property too)."""
    report = sm.load_report
    return list(report() if callable(report) else report)


def skip_note(path: str, skipped: int) -> str:
    """The one wording of a command's reported skip: ``skipped`` damaged lines of the
    session file ``path`` (``_backend.skipped_lines``) left out of what it wrote, and
    where to read them."""
    from ..view import shown_path

    shown = shown_path(path)
    return f"note: {shown}: {skipped:,} damaged line(s) skipped; `sessiontree check {shown}` lists them"


def exit_for_broken_pipe() -> None:
    """After EPIPE (``sessiontree tree big.jsonl | head``), exit quietly like other CLIs."""
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
