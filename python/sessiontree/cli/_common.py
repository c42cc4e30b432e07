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
    "require_file", "open_session", "file_version", "load_report", "skip_note", "warn_unread_tz",
    "exit_for_broken_pipe", "at_least",
]

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from rich.console import Console


def at_least(least: int) -> Any:
    """An argparse ``type`` for a whole number of at least ``least``: anything else is
    a usage error argparse words with the subcommand's usage line (status 2)."""
    import argparse

    def whole(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {n}")
        return n

    return whole


class CliError(Exception):
    """An expected failure: printed as one line on stderr, exit status ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _given_columns(columns: str) -> int | None:
    """``$COLUMNS`` as rich's console reads it: a positive number of ASCII digits, else
    ``None``."""
    return int(columns) if columns.isascii() and columns.isdigit() and int(columns) > 0 else None


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
        """stdout takes styles, as rich's console decides: a terminal by its rule
        (:meth:`plain`; ``--color never`` is none) that is not a dumb one; decided
        without importing rich until a console is made. ``$NO_COLOR`` keeps the
        attributes (bold, dim) and drops the colours (:meth:`styler`)."""
        return self._styles() > 0

    def _styles(self) -> int:
        """0: no styles; 1: attributes only (``$NO_COLOR``); 2: all (rich's console:
        ``is_terminal``, ``color_system``, ``no_color``)."""
        if self._consoles is not None:
            out = self.out
            return 0 if not out.is_terminal or out.color_system is None else 1 if out.no_color else 2
        if self._mode == "never" or self.plain(sys.stdout):
            return 0
        if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
            return 0
        return 1 if os.environ.get("NO_COLOR", "") != "" else 2

    def out_width(self) -> int | None:
        """stdout's width in terminal cells when it is a terminal by rich's rule
        (``None``: it is not; its lines are not cut), as rich's console measures it:
        ``$COLUMNS`` when ``$LINES`` is set too, else 80 for a dumb terminal, else
        ``$COLUMNS``, else the size of the first of stdin, stdout and stderr that is a
        terminal, else 80. Without importing rich."""
        if self._consoles is not None:
            return self.out.width if self.out.is_terminal else None
        if self._mode == "never" or self.plain(sys.stdout):
            return None
        return self._terminal_width()

    @staticmethod
    def _terminal_width() -> int:
        """A terminal's width as rich's console measures it (:meth:`out_width`)."""
        given = _given_columns(os.environ.get("COLUMNS", ""))
        lines = os.environ.get("LINES", "")
        if given is not None and lines.isascii() and lines.isdigit():
            return given
        if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
            return 80  # rich's size of a dumb terminal, $COLUMNS or not (unless $LINES too)
        if given is not None:
            return given
        for fd in (0, 1, 2):
            try:
                return os.get_terminal_size(fd).columns or 80
            except (AttributeError, ValueError, OSError):
                pass
        return 80

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
        return PIPED_WIDTH if columns is None else _given_columns(columns)

    def note(self, text: str) -> None:
        """One line of plain text (no markup) on stderr: at a terminal broken at spaces
        to its width, as rich's console wraps it, without importing rich."""
        if self._consoles is None:
            if self.plain(sys.stderr) or self._mode == "never":
                sys.stderr.write(text + "\n")
            else:
                from ..view import hang

                sys.stderr.write("\n".join(hang(text, 0, self._terminal_width())) + "\n")
            return
        from rich.text import Text

        self.err.print(Text(text))

    @property
    def interactive(self) -> bool:
        """Progress displays only when stderr really is a terminal (``--color always`` or
        not) and rich would draw on it (:meth:`plain`; ``--color never`` draws none),
        decided without importing rich: a warm command at a terminal never needs it."""
        try:
            if not os.isatty(sys.stderr.fileno()):
                return False
        except (AttributeError, OSError, ValueError):
            return False
        if self._consoles is None:
            return self._mode != "never" and not self.plain(sys.stderr)
        try:
            return self.err.is_terminal and os.isatty(self.err.file.fileno())
        except (AttributeError, OSError, ValueError):
            return False

    def styler(self) -> Any:
        """``paint(text, style_name) -> str``: text as rich's console would style it on
        stdout (:attr:`color`; colours dropped under ``$NO_COLOR``), or the text itself.

        Thousands of rows through ``Console.print`` cost about half a millisecond each;
        each styled segment written as rich's ``Style.render`` writes it
        (``view.paint``, without importing rich; rich's own for a style that module does
        not know) is two orders of magnitude cheaper, with the same escapes.
        """
        level = self._styles()
        if not level:
            return lambda text, style: text
        from ..view import paint as known

        colour = level == 2
        cache: dict[str, Any] = {}

        def paint(text: str, style: str) -> str:
            if not style or not text:
                return text
            got = known(text, style, colour)
            if got is not None:
                return got
            st = cache.get(style)
            if st is None:
                from rich.console import COLOR_SYSTEMS
                from rich.style import Style

                parsed = Style.parse(style)
                st = cache[style] = (parsed if colour else parsed.without_color,
                                     COLOR_SYSTEMS.get(self.out.color_system or "standard"))
            return st[0].render(text, color_system=st[1])  # type: ignore[no-any-return]

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


def unread_note(io: Io, unread: list[tuple[str, str]]) -> None:
    """The folders of a scope that cannot be listed and the files that could be
    ``stat``-ed but not read (``search``'s and ``usage``'s ``on_unread``), said as one
    note on stderr: they count as no session, so an answer without them must say so
    (adversaries 61, 61c)."""
    if not unread:
        return
    path, why = unread[0]
    more = f"; and {len(unread) - 1:,} more" if len(unread) > 1 else ""
    io.note(f"note: {len(unread):,} session file(s) or folder(s) could not be read and are left out: {safe(path)} "
            f"({safe(why)}){more}")


def say_catalog_note(io: Io, message: Warning | str) -> None:
    """A :class:`~sessiontree.errors.CatalogRebuiltWarning` as the commands say it: one
    note on stderr, in its own words."""
    io.note(f"note: {safe(str(message))}")


@contextlib.contextmanager
def catalog_notes(io: Io) -> Iterator[None]:
    """Within it, a :class:`~sessiontree.errors.CatalogRebuiltWarning` is said as one
    note on stderr in its own words, each time (not as Python prints a warning, with a
    file and a line, once); other warnings as before."""
    from ..errors import CatalogRebuiltWarning

    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
            if issubclass(category, CatalogRebuiltWarning):
                say_catalog_note(io, message)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        warnings.simplefilter("always", CatalogRebuiltWarning)
        yield


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


PROGRESS_AFTER = 0.3
"""Seconds a command works before its progress display is drawn: a warm answer is given
before then, without importing rich's progress (about 70 ms at a terminal) or
flashing a bar."""


@contextlib.contextmanager
def _after_a_while(io: Io, start: Any) -> Iterator[Any]:
    """Run the body; once it has run :data:`PROGRESS_AFTER` seconds, ``start(done,
    total)`` (a context manager whose value is ``update(done, total)``, drawn from the
    last progress said) is entered on a timer's thread. Yields ``update(done, total)``.
    The display ends with the body, a ctrl-c while it is being started included (the
    end waits for the start, then stops it: a display left running hides the cursor
    for good); ``io.live`` is set all through (no display inside)."""
    import threading

    lock = threading.Lock()
    shown: list[Any] = []  # [context manager, its update] once started
    last: list[tuple[int, int | None]] = [(0, None)]
    over = False

    def begin() -> None:
        with lock:
            if over:
                return
            try:
                cm = start(*last[-1])
                update = cm.__enter__()
            except Exception:  # noqa: BLE001 - a display that cannot start is no display, not a failure
                return
            shown[:] = [cm, update]

    def update(done: int, total: int | None = None) -> None:
        last[:] = [(done, total)]
        if shown:
            shown[1](done, total)

    timer = threading.Timer(PROGRESS_AFTER, begin)
    timer.daemon = True
    io.live = True
    timer.start()
    try:
        yield update
    finally:
        timer.cancel()
        interrupted = False
        while True:  # a second ctrl-c while a display is being started waits for it too
            try:
                with lock:
                    over = True
                if shown:
                    shown[0].__exit__(*sys.exc_info())
                break
            except KeyboardInterrupt:
                interrupted = True
        io.live = False
        if interrupted:
            raise KeyboardInterrupt


@contextlib.contextmanager
def _rich_progress(console: Any, text: str, total: int | None, done: int, *columns: Any) -> Iterator[Any]:
    """A transient rich progress display of ``columns`` on ``console`` with one task,
    ``done`` of ``total`` from its first frame; yields ``update(done, total)``."""
    from rich.progress import Progress

    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(text, total=total, completed=done)

        def update(done: int, new_total: int | None = None) -> None:
            progress.update(task, completed=done, total=new_total or total)

        yield update


@contextlib.contextmanager
def spinner(io: Io, text: str) -> Iterator[None]:
    """A spinner with elapsed time on a terminal once the work takes a while
    (:data:`PROGRESS_AFTER`); nothing when stderr is not a terminal or another progress
    display is drawn (``check``'s bar over many files)."""
    if not io.interactive or io.live:
        yield
        return

    def start(done: int, _total: int | None) -> Any:
        from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

        return _rich_progress(io.err, text, None, done, SpinnerColumn(), TextColumn("{task.description}"),
                              TimeElapsedColumn())

    with _after_a_while(io, start):
        yield


@contextlib.contextmanager
def byte_progress(io: Io, text: str, total: int | None) -> Iterator[Any]:
    """A bytes progress bar once the work takes a while (:data:`PROGRESS_AFTER`); yields
    ``update(done, total)`` (a no-op when not a terminal or another progress display
    is drawn)."""
    if not io.interactive or io.live:
        yield lambda done, total=None: None
        return

    def start(done: int, new_total: int | None) -> Any:
        from rich.progress import (BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        return _rich_progress(io.err, text, new_total or total or None, done, TextColumn("{task.description}"),
                              BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())

    with _after_a_while(io, start) as update:
        yield update


@contextlib.contextmanager
def count_progress(io: Io, text: str, *, enabled: bool = True) -> Iterator[Any]:
    """An ``n of m`` progress bar once the work takes a while (:data:`PROGRESS_AFTER`);
    yields ``update(done, total)`` (a no-op when not a terminal, not ``enabled`` or
    inside another progress display).

    Drawn on ``io.out`` when stdout is that terminal: what the command prints to
    ``io.out`` meanwhile (``check``'s result per file) then goes above the bar, where a
    bar on stderr was drawn over it. No spinner is drawn inside it (:func:`spinner`)."""
    if not io.interactive or not enabled or io.live:
        yield lambda done, total=None: None
        return

    def start(done: int, total: int | None) -> Any:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        console = io.out if io.out.is_terminal else io.err
        return _rich_progress(console, text, total, done, TextColumn("{task.description}"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn())

    with _after_a_while(io, start) as update:
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


def warn_unread_tz(io: Io) -> None:
    """Say once, on stderr, that ``$TZ`` could not be read and so local times are in
    UTC (``_time.unread_tz``), for a command that shows or groups them."""
    from .._time import day_long_rule, unread_tz
    from ..view import safe

    tz = unread_tz()
    if tz is not None:
        why = ("gives an offset of 24 hours or more, which no time here can show" if day_long_rule(tz)
               else "names no zone file and is no POSIX rule")
        # A byte that is not UTF-8 as the byte it is (\xff), not as os.fsdecode holds it.
        shown = safe(os.fsencode(tz).decode("utf-8", "backslashreplace"))
        io.note(f"warning: $TZ '{shown}' {why}: local times are in UTC")


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
