"""Listing sessions (``SessionManager.list`` / ``list_all``); places are in ``_places``.

Listing follows Pi's ``buildSessionInfo`` for what a row says, and sessiontree's loader
rules (ARCHITECTURE.md) for which lines count, so that a file lists exactly as it opens:
BOM skipped, CR of CRLF stripped, blank/invalid lines skipped, a torn fragment's
trailing entry recovered, the header must be the first JSON object (``type ==
"session"``, string ``id``), later headers ignored, entries need a non-empty string id
and the first definition of an id stands (version 1 files have no ids: every entry
counts there, as in Pi). A file that is not a session is left out and reported as a
:class:`ListingProblem`; nothing a file holds stops a listing. Each file is read once
(one ``read``, then walked line by line; not memory-mapped, so a file truncated by its
writer during the listing cannot crash the process) and never written; no folder is
created; anything that is not a regular file is passed over without being opened.
"""

from __future__ import annotations

import os
import stat as _stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import _js
from ._jsonl import BOM, is_blank, iter_lines
from ._places import default_session_root
from ._reader import header_error, header_problem, is_header, read_value
from ._time import datetime_from_ms, parse_iso_ms
from ._storage import require_regular_file
from .errors import InvalidSessionError
from .schema import SessionInfo

__all__ = [
    "ListingProblem",
    "read_session_info",
    "list_sessions",
    "list_all_sessions",
]

ProgressCallback = Callable[[int, int], None]
"""``on_progress(loaded, total)``: called after each file (Pi's ``SessionListProgress``)."""


@dataclass(frozen=True)
class ListingProblem:
    """A ``.jsonl`` file a listing left out, and why.

    Attributes:
        path: the file.
        reason: in words (e.g. ``"no session header: line is not valid JSON"``).
        line: 1-based line the reason is about, or ``None``.
        offset: 0-based byte offset of that line, or ``None``.
    """

    path: str
    reason: str
    line: int | None = None
    offset: int | None = None


ProblemCallback = Callable[[ListingProblem], None]


def _text_of(message: dict[str, Any]) -> str:
    # session-manager.ts extractTextContent: string content, or the text blocks joined
    # by " " (Array#join prints undefined/null as "").
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""  # Pi would throw and drop the whole file; one odd message is not fatal
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            t = block.get("text")
            texts.append("" if t is None else _js.string(t))
    return " ".join(texts)


# ---------------------------------------------------------------------- one file

def _stat_mtime(st: os.stat_result) -> datetime:
    dt = datetime_from_ms(st.st_mtime_ns // 1_000_000)
    assert dt is not None
    return dt


def read_session_info(path: str) -> SessionInfo:
    """Build one listing row from a session file (Pi's ``buildSessionInfo``).

    Row rules (Pi's): ``message_count`` counts ``message`` entries of any role; user and
    assistant messages with ``content`` give their text (string content, or their text
    blocks joined by a space) to ``all_messages_text`` (joined by spaces; empty texts
    skipped) and the first user one is ``first_message`` (else ``"(no messages)"``);
    ``name`` is the last ``session_info`` entry's name, trimmed as JavaScript trims, and
    an empty / whitespace-only / absent name clears it (Pi 0.73.1 ``getSessionName``,
    corpus ``hand-session-name-clear``); ``modified`` is the latest user/assistant
    message time (its numeric ``timestamp``, else its entry's ISO time; Pi's
    ``Math.max`` so one NaN poisons it) if > 0, else the header time, else the file
    mtime; ``created`` is the header time (the mtime if unparseable: Python has no
    Invalid Date). Times are aware UTC datetimes.

    Args:
        path: the ``.jsonl`` file.

    Returns:
        The :class:`SessionInfo`.

    Raises:
        InvalidSessionError: the file is not a session (empty, or its first JSON object
            is not a header with a string ``id``).
        OSError: it cannot be read.
    """
    require_regular_file(path)
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_size == 0:
            raise header_error(path, None, None, ("empty", _js.UNDEFINED))
        # Read, not mmap: a session another process truncates while we list it must not
        # kill the process with SIGBUS (Python's mmap has no guard against that).
        data = f.read()
    return _build_info(path, data, st)


def _build_info(path: str, data: Any, st: os.stat_result) -> SessionInfo:
    header: dict[str, Any] | None = None
    old_version = False
    seen: set[str] = set()
    message_count = 0
    first_message = ""
    texts: list[str] = []
    name: str | None = None
    last_activity: float | None = None
    first_line: tuple[int, int, bytes] | None = None  # named if no header is found
    start = 3 if data[:3] == BOM else 0
    for line_no, offset, raw, is_tail in iter_lines(data, start):
        if line_no == 1:
            offset = 0  # the BOM belongs to line 1
        if is_blank(raw):
            continue
        if header is None and first_line is None:
            first_line = (line_no, offset, raw)
        try:
            obj = read_value(raw, complete=not is_tail).value
        except ValueError:
            continue
        if type(obj) is not dict:
            continue
        etype = obj.get("type")
        if header is None:
            if not is_header(obj):
                assert first_line is not None
                raise header_error(path, first_line[0], first_line[1], header_problem(first_line[2]))
            header = obj
            version = obj.get("version")
            old_version = version is None or (
                isinstance(version, (int, float)) and not isinstance(version, bool) and version < 2
            )
            continue
        if etype == "session":
            continue  # extra_header
        if not old_version:  # v1 records all count: migration gives each a fresh id
            eid = obj.get("id")
            if not (isinstance(eid, str) and eid):
                continue  # missing_id
            if eid in seen:
                continue  # duplicate_id: the first definition stands
            seen.add(eid)

        if etype == "session_info":
            n = obj.get("name")
            name = (_js.trim(n) or None) if isinstance(n, str) else None
            continue
        if etype != "message":
            continue
        message_count += 1
        msg = obj.get("message")
        if not (isinstance(msg, dict) and isinstance(msg.get("role"), str) and "content" in msg):
            continue
        role = msg["role"]
        if role != "user" and role != "assistant":
            continue
        # getLastActivityTime
        ts = msg.get("timestamp")
        if isinstance(ts, (int, float)) and not isinstance(ts, bool):
            last_activity = _js.math_max(0 if last_activity is None else last_activity, ts)
        else:
            ets = obj.get("timestamp")
            ms = parse_iso_ms(ets) if isinstance(ets, str) else None
            if ms is not None:
                last_activity = _js.math_max(0 if last_activity is None else last_activity, ms)
        text = _text_of(msg)
        if not text:
            continue
        texts.append(text)
        if not first_message and role == "user":
            first_message = text

    if header is None:
        if first_line is not None:
            raise header_error(path, first_line[0], first_line[1], header_problem(first_line[2]))
        raise header_error(path, None, None, ("empty", _js.UNDEFINED))

    mtime = _stat_mtime(st)
    header_ms = parse_iso_ms(header.get("timestamp"))
    header_dt = datetime_from_ms(header_ms) if header_ms is not None else None
    modified = None
    if last_activity is not None and last_activity > 0:
        modified = datetime_from_ms(last_activity)  # None for inf: JS Invalid Date
    if modified is None:
        modified = header_dt or mtime
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    return SessionInfo(
        path=path,
        id=header["id"],
        cwd=cwd if isinstance(cwd, str) else "",
        name=name,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=header_dt or mtime,
        modified=modified,
        message_count=message_count,
        first_message=first_message or "(no messages)",
        all_messages_text=" ".join(texts),
    )


# ----------------------------------------------------------------------- listing


def _jsonl_files(folder: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        return []
    out = []
    for n in names:
        p = os.path.join(folder, n)
        try:
            if _stat.S_ISREG(os.stat(p).st_mode):
                out.append(p)
        except OSError:
            out.append(p)  # reported when it cannot be read
    return out


def _collect(
    files: list[str], on_progress: ProgressCallback | None, on_problem: ProblemCallback | None
) -> list[SessionInfo]:
    sessions: list[SessionInfo] = []
    total = len(files)
    for i, p in enumerate(files, 1):
        try:
            sessions.append(read_session_info(p))
        except InvalidSessionError as e:
            if on_problem is not None:
                on_problem(ListingProblem(p, e.reason, e.line, e.offset))
        except (OSError, ValueError) as e:
            if on_problem is not None:
                on_problem(ListingProblem(p, f"cannot read: {e}"))
        if on_progress is not None:
            on_progress(i, total)
    # Newest first; sort is stable, so ties keep file-name order.
    sessions.sort(key=lambda s: s.modified, reverse=True)
    return sessions


def list_sessions(
    directory: str,
    on_progress: ProgressCallback | None = None,
    on_problem: ProblemCallback | None = None,
) -> list[SessionInfo]:
    """List the sessions in one folder (Pi's ``SessionManager.list`` for a session dir).

    Args:
        directory: the folder; its ``*.jsonl`` regular files are read (not subfolders).
            A missing folder lists nothing.
        on_progress: called ``(loaded, total)`` after each file.
        on_problem: called with a :class:`ListingProblem` for each ``.jsonl`` file left
            out (not a session, unreadable).

    Returns:
        One :class:`SessionInfo` per session file, newest ``modified`` first (ties in
        file-name order).
    """
    return _collect(_jsonl_files(directory), on_progress, on_problem)


def list_all_sessions(
    root: str | None = None,
    on_progress: ProgressCallback | None = None,
    on_problem: ProblemCallback | None = None,
) -> list[SessionInfo]:
    """List the sessions of every project folder under the root (Pi's ``listAll``).

    Args:
        root: the sessions root; :func:`default_session_root` if ``None``. Its direct
            subfolders are read (files directly in the root are not, as in Pi).
        on_progress: called ``(loaded, total)`` after each file, ``total`` counting the
            ``.jsonl`` files of all folders.
        on_problem: see :func:`list_sessions`.

    Returns:
        All sessions, newest ``modified`` first.
    """
    root = root if root is not None else default_session_root()
    try:
        subdirs = sorted(
            e.path for e in os.scandir(root) if e.is_dir(follow_symlinks=True)
        )
    except OSError:
        return []
    files: list[str] = []
    for d in subdirs:
        files.extend(_jsonl_files(d))
    return _collect(files, on_progress, on_problem)
