"""Shared pieces of the ``sessiontree`` commands: consoles, errors, opening, previews."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

from rich.cells import get_character_cell_size
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

BACKENDS = ("auto", "python", "native")


class CliError(Exception):
    """An expected failure: printed as one line on stderr, exit status ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Io:
    """Where a command writes: ``out`` (results) and ``err`` (progress, errors)."""

    out: Console
    err: Console

    @property
    def color(self) -> bool:
        return self.out.is_terminal and not self.out.no_color

    @property
    def interactive(self) -> bool:
        """Progress bars only when stderr really is a terminal (``--color always`` or not)."""
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
        self.out.file.write(text)

    def write_json(self, value: Any, *, indent: bool = True) -> None:
        """Write ``value`` as JSON (UTF-8, non-ASCII raw) followed by a newline."""
        self.out.file.flush()
        data = to_json_bytes(value, indent=indent)
        buf = getattr(self.out.file, "buffer", None)
        if buf is not None:
            buf.write(data + b"\n")
            buf.flush()
        else:
            self.out.file.write(data.decode("utf-8", "surrogateescape") + "\n")


def to_json_bytes(value: Any, *, indent: bool = True) -> bytes:
    """JSON text of ``value``; falls back to ASCII-escaped ``json`` for what orjson refuses.

    orjson refuses lone surrogates and integers beyond 64 bits, which real session files
    contain; ``json.dumps(ensure_ascii=True)`` writes both losslessly.
    """
    import orjson

    try:
        opts = orjson.OPT_INDENT_2 if indent else 0
        return orjson.dumps(value, option=opts | orjson.OPT_NON_STR_KEYS, default=_json_default)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, indent=2 if indent else None, ensure_ascii=True, default=_json_default).encode()


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def make_io(color: str = "auto") -> Io:
    """Consoles for stdout/stderr. ``color``: ``auto`` (terminal only), ``always``, ``never``."""
    force = {"always": True, "never": False}.get(color)
    kw: dict[str, Any] = {"highlight": False}
    if color == "never":
        kw["no_color"] = True
    out = Console(force_terminal=force, **kw)
    err = Console(stderr=True, force_terminal=force, **kw)
    for console in (out, err):
        if not console.is_terminal:
            # Piped output is for files and scripts: no wrapping at 80 columns.
            console.soft_wrap = True
            if "COLUMNS" not in os.environ:
                console.width = 160
    return Io(out=out, err=err)


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
    """A spinner with elapsed time on a terminal; nothing when stderr is not a terminal."""
    if not io.interactive:
        yield
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=io.err, transient=True) as progress:
        progress.add_task(text, total=None)
        yield


@contextlib.contextmanager
def byte_progress(io: Io, text: str, total: int | None) -> Iterator[Any]:
    """A bytes progress bar; yields ``update(done, total)`` (a no-op when not a terminal)."""
    if not io.interactive:
        yield lambda done, total=None: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=io.err, transient=True) as progress:
        task = progress.add_task(text, total=total or None)

        def update(done: int, new_total: int | None = None) -> None:
            progress.update(task, completed=done, total=new_total or total or None)

        yield update


@contextlib.contextmanager
def count_progress(io: Io, text: str) -> Iterator[Any]:
    """An ``n of m`` progress bar; yields ``update(done, total)``."""
    if not io.interactive:
        yield lambda done, total=None: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=io.err, transient=True) as progress:
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


def file_version(path: str) -> Any:
    """The ``version`` written in the file's first line (the manager reports the migrated one)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 20)
        return json.loads(first.decode("utf-8-sig", "replace")).get("version")
    except (OSError, ValueError, AttributeError):
        return None


def load_report(sm: Any) -> list[Any]:
    """The manager's ``load_report`` (a method in the API; tolerate a property too)."""
    report = sm.load_report
    return list(report() if callable(report) else report)


# --------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def human_seconds(s: float) -> str:
    """``0.0123`` -> ``"12.3 ms"``."""
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


_PREVIEW_CHARS = 600  # no terminal line shows more; never collapse megabytes of output


def one_line(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """Collapse all whitespace (newlines, U+2028, tabs) into single spaces, looking at
    no more than ``limit`` characters."""
    return " ".join(text[:limit].split())


def fit(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` terminal cells (wide CJK/emoji count 2), ending in ``…``."""
    if width <= 0:
        return ""
    if text.isascii():
        return text if len(text) <= width else text[: width - 1].rstrip() + "…"
    if len(text) <= width // 2:
        return text  # even if every character is two cells wide
    cells = 0
    cut = None
    for i, ch in enumerate(text):
        # get_character_cell_size is cached per character; rich's whole-string
        # functions segment graphemes first and cost ~0.2 ms per preview.
        cells += get_character_cell_size(ch)
        if cut is None and cells > width - 1:
            cut = i  # text[:i] fits in width - 1 cells, leaving one for "…"
        if cells > width:
            return text[:cut].rstrip() + "…"
    return text


def content_text(content: Any, *, images: bool = True) -> str:
    """Text of a message ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", ""))[:_PREVIEW_CHARS])
        elif kind == "image" and images:
            parts.append(f"[image {block.get('mimeType', '')}]".replace(" ]", "]"))
    return " ".join(p for p in parts if p)


def tool_call_preview(block: dict[str, Any], width: int = 60) -> str:
    """``read(path='src/a.ts')``: a tool call's name and its first arguments, shortened."""
    args = block.get("arguments")
    shown = []
    if isinstance(args, dict):
        for key, value in list(args.items())[:3]:
            if isinstance(value, str):
                value = one_line(value, 80)
                value = repr(value if len(value) <= 40 else value[:39] + "…")
            else:
                value = one_line(json.dumps(value, ensure_ascii=False)[:80])[:40]
            shown.append(f"{key}={value}")
    return fit(f"{block.get('name', '?')}({', '.join(shown)})", width)


def message_preview(msg: Any) -> tuple[str, str]:
    """``(kind, text)`` for an agent message: kind is its role, text its gist on one line."""
    if not isinstance(msg, dict):
        return "message", ""
    role = str(msg.get("role", "?"))
    content = msg.get("content")
    if role == "assistant":
        texts, calls, thinking = [], [], ""
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                texts.append(str(block["text"])[:_PREVIEW_CHARS])
            elif block.get("type") == "toolCall":
                calls.append("→ " + tool_call_preview(block, 50))
            elif block.get("type") == "thinking" and not thinking:
                thinking = str(block.get("thinking") or "")[:_PREVIEW_CHARS]
        text = " ".join(texts + calls)
        if not text and thinking:
            text = f"(thinking) {thinking}"
        stop = msg.get("stopReason")
        if stop in ("error", "aborted"):
            text = f"[{stop}] {msg.get('errorMessage') or ''} {text}"
        return role, one_line(text)
    if role == "toolResult":
        name = msg.get("toolName", "?")
        err = " ✗" if msg.get("isError") else ""
        return role, one_line(f"{name}{err}: {content_text(content)}")
    if role == "bashExecution":
        code = msg.get("exitCode")
        tail = f" (exit {code})" if code not in (0, None) else ""
        return role, one_line(f"$ {msg.get('command', '')}{tail}")
    if role in ("custom", "hookMessage"):
        return role, one_line(f"{msg.get('customType', '')}: {content_text(content)}")
    if role == "compactionSummary":
        return role, one_line(str(msg.get("summary", "")))
    if role == "branchSummary":
        return role, one_line(str(msg.get("summary", "")))
    return role, one_line(content_text(content))


def entry_preview(entry: dict[str, Any]) -> tuple[str, str]:
    """``(kind, text)`` for one entry: kind is the role for messages, else the entry type."""
    etype = entry.get("type")
    if etype == "message":
        return message_preview(entry.get("message"))
    if etype == "custom_message":
        return "custom_message", one_line(f"{entry.get('customType', '')}: {content_text(entry.get('content'))}")
    if etype == "compaction":
        summary = one_line(str(entry.get("summary", "")))
        return "compaction", f"{summary} (tokensBefore {entry.get('tokensBefore')})"
    if etype == "branch_summary":
        return "branch_summary", one_line(str(entry.get("summary", ""))) or "(empty summary)"
    if etype == "model_change":
        return "model", f"{entry.get('provider')}/{entry.get('modelId')}"
    if etype == "thinking_level_change":
        return "thinking", str(entry.get("thinkingLevel"))
    if etype == "label":
        label = entry.get("label")
        return "label", f"{entry.get('targetId')} = {label!r}" if label is not None else f"{entry.get('targetId')} cleared"
    if etype == "session_info":
        return "session_info", one_line(str(entry.get("name", "")))
    if etype == "custom":
        return "custom", str(entry.get("customType", ""))
    return str(etype), ""


KIND_STYLES = {
    "user": "bold green",
    "assistant": "bold cyan",
    "toolResult": "yellow",
    "bashExecution": "magenta",
    "custom": "blue",
    "custom_message": "blue",
    "compaction": "bold red",
    "compactionSummary": "bold red",
    "branch_summary": "bold magenta",
    "branchSummary": "bold magenta",
    "model": "bright_blue",
    "thinking": "bright_blue",
    "label": "bright_black",
    "session_info": "bright_black",
}


def exit_for_broken_pipe() -> None:
    """After EPIPE (``sessiontree tree big.jsonl | head``), exit quietly like other CLIs."""
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
