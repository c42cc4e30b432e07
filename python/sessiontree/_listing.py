"""Listing sessions (``SessionManager.list`` / ``list_all``); places are in ``_places``.

Listing follows Pi's ``buildSessionInfo`` for what a row says, and sessiontree's loader
rules (ARCHITECTURE.md) for which lines count, so that a file lists exactly as it opens
(the rules: ``catalog._extract``; the row: :func:`session_info`). A file that is not a
session is left out and reported as a :class:`ListingProblem`; nothing a file holds
stops a listing. Files are read, never memory-mapped (a file truncated by its writer
during the listing cannot crash the process) and never written; no folder is created;
anything that is not a regular file is passed over without being opened (and one put
in a file's place after its ``stat`` is refused on the open file: ``_filestate.open_regular``).

A listing goes through the catalog (``sessiontree.catalog``): an unchanged file costs a
``stat``, a grown one its new bytes; the answer is the same as reading every file
(``no_cache=True``), which is what happens when the catalog is turned off or cannot be
used. ``all_messages_text`` (most of what a listing would otherwise read: every user
and assistant message's content) is read from the file when first used, of the bytes
the listing read (``catalog._indexer.listed_text``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

from . import _js
from ._filestate import inode_marks
from ._places import project_cwd, project_folders
from ._reader import header_error, header_problem, read_value
from ._storage import require_regular_file
from .errors import SessionError
from ._time import datetime_from_ms, parse_iso_ms
from .schema import SessionInfo

__all__ = [
    "ListingProblem",
    "read_session_info",
    "session_info",
    "list_sessions",
    "list_all_sessions",
    "list_folders",
    "project_cwd",
    "project_folders",
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


# ---------------------------------------------------------------------- one row
def session_info(path: str, row: Any, text: str | Callable[[], str]) -> SessionInfo:
    """The listing row of a session from its facts (Pi's ``buildSessionInfo``).

    Row rules (Pi's): ``message_count`` counts ``message`` entries of any role;
    ``all_messages_text`` joins the non-empty texts of user and assistant messages by
    spaces and the first user one is ``first_message`` (else ``"(no messages)"``);
    ``name`` is the last ``session_info`` entry's name, trimmed as JavaScript trims, and
    an empty / whitespace-only / absent name clears it (Pi 0.73.1 ``getSessionName``,
    corpus ``hand-session-name-clear``); ``modified`` is the latest user/assistant
    message time (``getLastActivityTime``) if > 0, else the header time, else the file
    mtime; ``created`` is the header time (the mtime if unparseable: Python has no
    Invalid Date). Times are aware UTC datetimes.

    Args:
        path: the file, as the listing names it.
        row: a ``catalog.FileRow`` (``sid``, ``cwd``, ``parent``, ``created_ms``,
            ``message_count``, ``first_message``, ``title``, ``activity``, ``mtime_ns``).
        text: ``all_messages_text``, or a function that reads it when first used.
    """
    header_dt = datetime_from_ms(row.created_ms) if row.created_ms is not None else None
    modified = None
    if row.activity is not None and row.activity > 0:
        modified = datetime_from_ms(row.activity)  # None for inf: JS Invalid Date
    if header_dt is None or modified is None:
        mtime = datetime_from_ms(row.mtime_ns // 1_000_000)
        assert mtime is not None
        header_dt = header_dt or mtime
        modified = modified or header_dt
    values = dict(
        path=path,
        id=row.sid,
        cwd=row.cwd,
        name=row.title,
        parent_session_path=row.parent,
        created=header_dt,
        modified=modified,
        message_count=row.message_count,
        first_message=row.first_message or "(no messages)",
    )
    if isinstance(text, str):
        return SessionInfo(**values, all_messages_text=text)
    return _LazyInfo.make(values, text)


class _LazyInfo(SessionInfo):
    """A :class:`SessionInfo` whose ``all_messages_text`` (the largest field, needed by
    a search but not by a picker) is read when first used. Equal to, hashed, printed
    and pickled as the plain :class:`SessionInfo` with the same fields."""

    @classmethod
    def make(cls, values: dict[str, Any], load: Callable[[], str]) -> _LazyInfo:
        obj = cls.__new__(cls)
        obj.__dict__.update(values)  # frozen: no __setattr__
        obj.__dict__["_load"] = load
        return obj

    def __getattr__(self, name: str) -> Any:
        if name != "all_messages_text":
            raise AttributeError(name)
        text = self.__dict__["_load"]()
        object.__setattr__(self, "all_messages_text", text)
        return text

    def _astuple(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(SessionInfo))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionInfo):
            return NotImplemented
        return self._astuple() == tuple(getattr(other, f.name) for f in fields(SessionInfo))

    def __hash__(self) -> int:
        return hash(self._astuple())

    def __repr__(self) -> str:
        shown = (f for f in fields(SessionInfo) if f.repr)  # as the dataclass prints (no text)
        return "SessionInfo(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in shown) + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SessionInfo, self._astuple())


def read_session_info(path: str) -> SessionInfo:
    """Build one listing row from a session file, reading all of it (no catalog;
    ``all_messages_text`` is read again when first used: ``catalog._indexer.listed_text``).

    See :func:`session_info` for the row rules.

    Args:
        path: the ``.jsonl`` file.

    Returns:
        The :class:`SessionInfo`.

    Raises:
        InvalidSessionError: the file is not a session (empty, or its first JSON object
            is not a header with a string ``id``).
        OSError: it cannot be read.
    """
    from .catalog import native_scanner, scan_file

    require_regular_file(path)
    st = os.stat(path)
    gen = inode_marks(path)
    r = scan_file(path, 0, b"", False, 1 << 62, native=native_scanner())
    row = _Row(st.st_mtime_ns)
    kind, value = r[1]
    if kind != "found":
        if value is None:
            raise header_error(path, None, None, ("empty", _js.UNDEFINED))
        line, offset, raw = value
        raise header_error(path, line, offset, header_problem(raw))
    row.header(read_value(value).value)
    row.facts(r[4])
    from .catalog import ends_digest, listed_text

    (end, _eof, tail, _read, ends) = r[0]
    return session_info(path, row, partial(listed_text, path, end, ends_digest(ends, gen), tail))


class _Row:
    """The facts :func:`session_info` reads, for a file read without a catalog."""

    sid: str | None = None
    cwd: str | None = None
    parent: str | None = None
    created_ms: int | None = None
    message_count = 0
    first_message: str | None = None
    title: str | None = None
    activity: float | None = None

    def __init__(self, mtime_ns: int) -> None:
        self.mtime_ns = mtime_ns

    def header(self, h: dict[str, Any]) -> None:
        cwd, parent = h.get("cwd"), h.get("parentSession")
        self.sid = h["id"]
        self.cwd = cwd if isinstance(cwd, str) else ""
        self.parent = parent if isinstance(parent, str) else None
        self.created_ms = parse_iso_ms(h.get("timestamp"))

    def facts(self, facts: tuple[Any, ...]) -> None:
        count, first, _texts, (seen, name), activity = facts
        self.message_count = count
        self.first_message = first
        self.title = (_js.trim(name) or None) if seen and isinstance(name, str) else None
        self.activity = activity


# ----------------------------------------------------------------------- listing
def list_folders(
    folders: Sequence[str],
    on_progress: ProgressCallback | None = None,
    on_problem: ProblemCallback | None = None,
    *,
    catalog: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
) -> list[SessionInfo]:
    """The sessions of several folders (their ``*.jsonl`` regular files), newest first.

    Args:
        folders: the folders, as given (each file's ``path`` is joined to it; not
            their subfolders), or session files (each its own ``path``).
        on_progress: called ``(loaded, total)`` after each file, over all folders.
        on_problem: called with a :class:`ListingProblem` for each ``.jsonl`` file left
            out (not a session, unreadable, or not a regular file: a folder or a FIFO so
            named is said, never opened).
        catalog: the catalog file (default: ``$SESSIONTREE_CATALOG``, else the cache
            folder; see ``sessiontree.catalog``).
        no_cache: read every file, without a catalog (the same answer).

    Returns:
        One :class:`SessionInfo` per session file, newest ``modified`` first (ties in
        folder, then file-name order).
    """
    from .catalog import listed_text, refresh_for, run

    def op(store: Any) -> list[SessionInfo]:
        sessions: list[SessionInfo] = []
        problems: list[ListingProblem] = []
        for f in refresh_for(store, folders, on_progress=on_progress):
            if f.error is not None or f.row is None:
                problems.append(ListingProblem(f.path, f.error or "cannot read"))
                continue
            row = f.row
            if row.problem is not None:
                problems.append(ListingProblem(f.path, row.problem, row.problem_line, row.problem_offset))
                continue
            sessions.append(session_info(f.path, row, partial(listed_text, f.path, row.l_end, row.ends, row.tail)))
        if on_problem is not None:
            seen = {s.path for s in sessions} | {p.path for p in problems}
            for p in problems + _left_out(folders, seen):
                on_problem(p)
        return sessions

    sessions = run(op, catalog=catalog, no_cache=no_cache)
    # Newest first; sort is stable, so ties keep file-name order.
    sessions.sort(key=lambda s: s.modified, reverse=True)
    return sessions


def jsonl_names(sources: Sequence[str], on_error: Callable[[str], None] | None = None) -> list[str]:
    """Every ``.jsonl`` name of ``sources`` (folders, each without its subfolders, or
    files named), whatever each is (a FIFO or a folder so named too), a folder's in name
    order; ``on_error(source)`` for a source that cannot be read as either."""
    names: list[str] = []
    for source in sources:
        try:
            with os.scandir(source) as it:
                names.extend(sorted(e.path for e in it if e.name.endswith(".jsonl")))
        except NotADirectoryError:
            names.append(source)
        except OSError:
            if on_error is not None:
                on_error(source)
    return names


def _left_out(folders: Sequence[str], seen: set[str]) -> list[ListingProblem]:
    """The ``.jsonl`` names of ``folders`` (or the files named) that the listing neither
    listed nor reported — a folder named so, a FIFO, a device — each with why: they are
    never opened (a FIFO may block, a device may not end)."""
    out: list[ListingProblem] = []
    for path in jsonl_names(folders):
        if path in seen:
            continue
        try:
            require_regular_file(path)
            reason = "empty file" if os.path.getsize(path) == 0 else "skipped by the listing"
        except SessionError as e:
            reason = getattr(e, "reason", None) or str(e)
        except OSError as e:
            reason = e.strerror or str(e)
        out.append(ListingProblem(path, reason))
    return out


def list_sessions(
    directory: str,
    on_progress: ProgressCallback | None = None,
    on_problem: ProblemCallback | None = None,
    *,
    catalog: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
) -> list[SessionInfo]:
    """List the sessions in one folder (Pi's ``SessionManager.list`` for a session dir).

    Args:
        directory: the folder; its ``*.jsonl`` regular files are read (not subfolders).
            A missing folder lists nothing.
        on_progress, on_problem, catalog, no_cache: as for :func:`list_folders`.

    Returns:
        One :class:`SessionInfo` per session file, newest ``modified`` first (ties in
        file-name order).
    """
    return list_folders([directory], on_progress, on_problem, catalog=catalog, no_cache=no_cache)


def list_all_sessions(
    root: str | None = None,
    on_progress: ProgressCallback | None = None,
    on_problem: ProblemCallback | None = None,
    *,
    catalog: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
) -> list[SessionInfo]:
    """List the sessions of every project folder under the root (Pi's ``listAll``).

    Args:
        root: the sessions root; ``_places.default_session_root()`` if ``None``. Its
            direct subfolders are read (files directly in the root are not, as in Pi).
        on_progress: called ``(loaded, total)`` after each file, ``total`` counting the
            ``.jsonl`` files of all folders.
        on_problem, catalog, no_cache: as for :func:`list_folders`.

    Returns:
        All sessions, newest ``modified`` first.
    """
    from ._places import default_session_root

    folders = project_folders(root if root is not None else default_session_root())
    return list_folders(folders, on_progress, on_problem, catalog=catalog, no_cache=no_cache)

