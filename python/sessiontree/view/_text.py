"""Shared pieces of the ``sessiontree`` commands: consoles, errors, opening, previews."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

from rich.cells import cell_len, get_character_cell_size
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

from .._select import BACKENDS


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

    orjson refuses lone surrogates, integers beyond 64 bits and nesting deeper than 255,
    which real session files contain; ``json.dumps(ensure_ascii=True)`` writes all of
    them losslessly (with room on the stack for the loader's 1,024 levels).

    The values stay exact, but DEL, C1 controls, bidi controls and U+2028/U+2029 (which
    JSON allows raw inside strings) are written as ``\\uXXXX`` escapes, so that
    ``--json`` on a terminal cannot be abused either.
    """
    import orjson

    try:
        opts = orjson.OPT_INDENT_2 if indent else 0
        data = orjson.dumps(value, option=opts | orjson.OPT_NON_STR_KEYS, default=_json_default)
    except (TypeError, orjson.JSONEncodeError):
        old_limit = sys.getrecursionlimit()
        need = old_limit + 10_000
        sys.setrecursionlimit(need)
        try:
            try:
                text = json.dumps(value, indent=2 if indent else None, ensure_ascii=True, default=_json_default,
                                  allow_nan=False)
            except ValueError:  # NaN or an infinity: null, as orjson writes them (never `Infinity`)
                text = json.dumps(_finite(value), indent=2 if indent else None, ensure_ascii=True,
                                  default=_json_default)
        finally:
            sys.setrecursionlimit(old_limit)
        return text.encode()
    if _JSON_UNSAFE_RE.search(data):
        data = _JSON_UNSAFE_RE.sub(_json_escape, data)
    return data


# Raw UTF-8 of DEL, C1 (U+0080-U+009F), ALM, LRM/RLM, U+2028/U+2029, U+202A-U+202E,
# U+2066-U+2069. Outside strings JSON holds only ASCII, so a byte-level rewrite is exact.
_JSON_UNSAFE_RE = re.compile(
    b"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def _json_escape(m: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(m.group().decode("utf-8"))


def _finite(value: Any) -> Any:
    """A copy of ``value`` with every NaN and infinity as ``None`` (no recursion: values
    nest as deep as a session line's JSON)."""
    root = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, key = stack.pop()
        v = container[key]
        if isinstance(v, float) and not math.isfinite(v):
            container[key] = None
        elif isinstance(v, dict):
            obj = container[key] = dict(v)
            stack.extend((obj, k) for k in obj)
        elif isinstance(v, (list, tuple)):
            seq = container[key] = list(v)
            stack.extend((seq, i) for i in range(len(seq)))
    return root[0]


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


class _Console(Console):
    """rich's console, but a reader that stops reading (``| head``) ends the command
    as every other output path does (:func:`exit_for_broken_pipe`, status 0); rich's
    own handler exits with 1."""

    def on_broken_pipe(self) -> None:
        exit_for_broken_pipe()
        raise SystemExit(0)


def make_io(color: str = "auto") -> Io:
    """Consoles for stdout/stderr. ``color``: ``auto`` (terminal only), ``always``, ``never``."""
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
def count_progress(io: Io, text: str, *, enabled: bool = True) -> Iterator[Any]:
    """An ``n of m`` progress bar; yields ``update(done, total)`` (a no-op when not a
    terminal or not ``enabled``)."""
    if not io.interactive or not enabled:
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
PREVIEW_CLIP = _PREVIEW_CHARS
"""The previews here read no more than this many characters of any string of an
entry, so an entry fetched with ``get_entries_by_id(..., clip=PREVIEW_CLIP)`` previews
as the whole entry does (``tests/test_clip.py``)."""


# C0 and C1 controls (ESC, NUL, BEL, BS, CR, ...), DEL, the bidi controls (embeddings,
# overrides, isolates, marks) and the Unicode line/paragraph separators: session text
# is untrusted, and any of these would let it move the cursor, recolour or clear the
# terminal, or reorder what is shown. Also the invisible format characters a terminal
# draws as nothing or as a box (soft hyphen, zero-width space, word joiner, BOM, the
# deprecated format controls, interlinear annotation, tags), which would hide text or
# shift columns, and lone surrogates (the stream would print them as six characters
# the width count did not see); ZWJ/ZWNJ and variation selectors stay, as emoji and
# scripts need them. ``safe_block`` keeps LF and TAB (rendered on purpose as lines and
# indentation); ``safe`` escapes them too.
_UNSAFE_OTHER = ("\x7f-\x9f\xad\u034f\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e"
                 "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f")
_UNSAFE_RE = re.compile(f"[\x00-\x1f{_UNSAFE_OTHER}]")
_UNSAFE_BLOCK_RE = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE_OTHER}]")  # LF (0a) and TAB (09) kept


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def plain_doc(doc: str | None) -> str:
    """A module docstring as a terminal shows it: without its RST literal quotes."""
    return (doc or "").strip().replace("``", "")


def safe(text: str) -> str:
    """``text`` fit for a terminal line: controls, bidi controls, U+2028/U+2029 and line
    breaks become visible escapes (``\\x1b``, ``\\u202e``, ``\\x0a``).

    Every piece of session content (and every path or message that may echo it) goes
    through this, or :func:`safe_block`, before human output.
    """
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE_RE.sub(_escape_char, text)


def safe_block(text: str) -> str:
    """Like :func:`safe` but keeps LF and TAB, for text deliberately shown on several lines."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE_BLOCK_RE.sub(_escape_char, text)


def number(value: Any) -> int | float | None:
    """``value`` if it is a JSON number (not a bool), else ``None``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def int_text(n: int) -> str:
    """``str(n)``, or a short description for integers past Python's digit limit."""
    try:
        return str(n)
    except ValueError:
        return f"<{n.bit_length():,}-bit integer>"


def num(value: Any, default: str = "-") -> str:
    """A number with thousands separators (``1,234``); ``default`` for anything else."""
    n = number(value)
    if n is None:
        return default
    try:
        return f"{n:,}"
    except ValueError:  # beyond the integer digit limit
        return int_text(n) if isinstance(n, int) else repr(n)


def json_text(value: Any, *, indent: bool = False) -> str:
    """Compact (or indented) JSON text of any decoded value, whatever its depth or size."""
    return to_json_bytes(value, indent=indent).decode("utf-8", "surrogatepass")


def value_text(value: Any, limit: int | None = _PREVIEW_CHARS, *, none: str = "") -> str:
    """Text of any JSON value read from a session, never raising.

    Strings are themselves, ``None`` is ``none``, numbers and booleans are spelled as in
    JSON, lists and objects become (compact) JSON. At most ``limit`` characters
    (``None``: all). The result is *not* sanitized: pass it through :func:`safe`.
    """
    if isinstance(value, str):
        text = value
    elif value is None:
        text = none
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = int_text(value)
    elif isinstance(value, float):
        text = repr(value)
    else:
        try:
            text = json_text(value)
        except (TypeError, ValueError, RecursionError):
            text = f"<{type(value).__name__}>"
    return text if limit is None else text[:limit]


def show(value: Any, limit: int | None = _PREVIEW_CHARS, *, none: str = "") -> str:
    """``safe(value_text(value, limit, none=none))``: any value, ready for a terminal line."""
    return safe(value_text(value, limit, none=none))


def _collapse(text: Any, limit: int = _PREVIEW_CHARS) -> str:
    return " ".join(value_text(text, limit).split())


def one_line(text: Any, limit: int = _PREVIEW_CHARS) -> str:
    """Collapse all whitespace (newlines, U+2028, tabs) into single spaces, looking at
    no more than ``limit`` characters, and escape what is left of controls (:func:`safe`).

    ``text`` may be any JSON value (non-strings are shown as by :func:`value_text`).
    """
    return safe(_collapse(text, limit))


def as_is(text: str) -> str:
    return text


# Characters that take one terminal cell each, so that a text made only of them is
# measured by len(): Latin, Greek and Cyrillic, punctuation, arrows, box drawing and the
# geometric shapes the tree draws with (combining marks and the few emoji among them
# left out; tests/test_cli_tree.py holds the set against rich's cell_len).
_ONE_CELL_RE = re.compile("[ -~\u00a0-\u02ff\u0370-\u0482\u048a-\u052f\u2010-\u2027\u2030-\u205e\u2190-\u21ff"
                          "\u2440-\u244a\u2500-\u257f\u25a0-\u25fc]*")


def cells(text: str) -> int:
    """Terminal cells ``text`` takes (wide CJK/emoji count 2)."""
    return len(text) if text.isascii() or _ONE_CELL_RE.fullmatch(text) else cell_len(text)


def fit(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` terminal cells (wide CJK/emoji count 2), ending in ``…``."""
    if width <= 0:
        return ""
    if text.isascii() or _ONE_CELL_RE.fullmatch(text, 0, width + 1):
        return text if len(text) <= width else _cut(text[: width - 1])
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
            return _cut(text[:cut])
    return text


def _cut(kept: str) -> str:
    """``kept`` ending in one ``…`` (a text already cut, such as an argument preview,
    is not marked twice)."""
    return kept.rstrip().rstrip("…") + "…"


def content_text(content: Any, *, images: bool = True) -> str:
    """Text of a message ``content`` (a string or a list of blocks); not sanitized."""
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
            parts.append(value_text(block.get("text")))
        elif kind == "image" and images:
            parts.append(f"[image {value_text(block.get('mimeType'), 100)}]".replace(" ]", "]"))
    return " ".join(p for p in parts if p)


def tool_call_preview(block: dict[str, Any], width: int = 60, clean: Any = safe) -> str:
    """``read(path='src/a.ts')``: a tool call's name and its first arguments, shortened.

    ``clean`` makes it fit for a terminal (:func:`safe`, the default); ``--json`` output
    passes ``as_is`` and keeps the text as it is.
    """
    args = block.get("arguments")
    shown = []
    if isinstance(args, dict):
        for key, value in list(args.items())[:3]:
            if isinstance(value, str):
                value = _collapse(value, 80)
                value = repr(value if len(value) <= 40 else value[:39] + "…")
            else:
                value = _collapse(value, 80)[:40]
            shown.append(f"{_collapse(key, 80)}={value}")
    return fit(clean(f"{_collapse(block.get('name', '?'), 200)}({', '.join(shown)})"), width)


def message_preview(msg: Any, clean: Any = safe) -> tuple[str, str]:
    """``(kind, text)`` for an agent message: kind is its role, text its gist on one line.

    Any JSON types are shown; ``clean`` (default :func:`safe`) makes both fit for a terminal.
    """
    if not isinstance(msg, dict):
        return "message", ""
    role = clean(_collapse(msg.get("role", "?"), 100))
    content = msg.get("content")
    if role == "assistant":
        texts, calls, thinking = [], [], ""
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                texts.append(value_text(block["text"]))
            elif block.get("type") == "toolCall":
                calls.append("→ " + tool_call_preview(block, 50, clean))
            elif block.get("type") == "thinking" and not thinking:
                thinking = value_text(block.get("thinking"))
        text = " ".join(texts + calls)
        if not text and thinking:
            text = f"(thinking) {thinking}"
        stop = msg.get("stopReason")
        if stop in ("error", "aborted"):
            text = f"[{stop}] {value_text(msg.get('errorMessage'))} {text}"
    elif role == "toolResult":
        err = " ✗" if msg.get("isError") else ""
        text = f"{value_text(msg.get('toolName', '?'), 200)}{err}: {content_text(content)}"
    elif role == "bashExecution":
        code = msg.get("exitCode")
        tail = f" (exit {value_text(code, 40)})" if code not in (0, None) else ""
        text = f"$ {value_text(msg.get('command'))}{tail}"
    elif role in ("custom", "hookMessage"):
        text = f"{value_text(msg.get('customType'), 200)}: {content_text(content)}"
    elif role in ("compactionSummary", "branchSummary"):
        text = value_text(msg.get("summary"))
    else:
        text = content_text(content)
    return role, clean(_collapse(text))


def entry_preview(entry: dict[str, Any], clean: Any = safe) -> tuple[str, str]:
    """``(kind, text)`` for one entry: kind is the role for messages, else the entry type.

    Any JSON types are shown; ``clean`` (default :func:`safe`) makes both fit for a terminal.
    """
    etype = entry.get("type")
    if etype == "message":
        return message_preview(entry.get("message"), clean)

    def line(text: Any, limit: int = _PREVIEW_CHARS) -> str:
        return clean(_collapse(text, limit))

    def short(value: Any) -> str:
        return value_text(value, 100, none="None")

    if etype == "custom_message":
        return "custom_message", line(f"{value_text(entry.get('customType'), 200)}: "
                                      f"{content_text(entry.get('content'))}")
    if etype == "compaction":
        return "compaction", f"{line(entry.get('summary'))} (tokensBefore {line(short(entry.get('tokensBefore')))})"
    if etype == "branch_summary":
        return "branch_summary", line(entry.get("summary")) or "(empty summary)"
    if etype == "model_change":
        return "model", line(f"{short(entry.get('provider'))}/{short(entry.get('modelId'))}")
    if etype == "thinking_level_change":
        return "thinking", line(short(entry.get("thinkingLevel")))
    if etype == "label":
        label = entry.get("label")
        target = short(entry.get("targetId"))
        if label is None:
            return "label", line(f"{target} cleared")
        # repr of the label's start: its quotes must not depend on text past the clip.
        shown = repr(label[:_PREVIEW_CHARS]) if isinstance(label, str) else short(label)
        return "label", line(f"{target} = {shown}")
    if etype == "session_info":
        return "session_info", line(entry.get("name"))
    if etype == "custom":
        return "custom", line(entry.get("customType"), 200)
    if etype == "active_tools_change":
        names = entry.get("activeToolNames")
        return "tools", line(", ".join(map(short, names)) if isinstance(names, list) else short(names))
    if etype == "leaf":
        moved_to = entry.get("targetId")
        return "leaf", line("→ " + ("(before the first entry)" if moved_to is None else short(moved_to)))
    return line(short(etype)), ""


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
    "tools": "bright_blue",
    "leaf": "bright_black",
    "label": "bright_black",
    "session_info": "bright_black",
}


def exit_for_broken_pipe() -> None:
    """After EPIPE (``sessiontree tree big.jsonl | head``), exit quietly like other CLIs."""
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
