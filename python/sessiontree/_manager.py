"""``SessionManager``: Pi's session API over a backend index and a writer.

The manager owns what Pi's ``SessionManager`` owns besides the entries: the leaf, the
session file and folder, the deferred first write, and the writer lock. Everything
about the entries (which lines count, links, labels, name, tree, context plan) comes
from a :class:`~sessiontree._backend.TreeIndex`, so both backends behave alike by
construction: the manager never looks inside one.

Design notes (where the contract leaves a choice):

* **Test hook.** New ids, timestamps and session ids come from the methods
  :meth:`SessionManager._new_id`, :meth:`SessionManager._now` and
  :meth:`SessionManager._new_session_id`. A subclass (or an instance attribute) may
  override them to replay Pi's recorded values: that is how the tests reproduce the
  corpus files byte for byte.
* **Unset vs null.** Optional arguments (``details``, ``from_hook``, ``data``) default
  to "unset" and are then left out of the entry; passing ``None`` writes ``null``, as
  Pi writes JavaScript ``null`` and omits ``undefined``. ``append_label_change(id)`` or
  ``(id, None)`` clears the label and writes no ``label`` key.
* **Staleness** is checked here, once per public call on a persisted session that is
  on disk: ``os.stat`` of the file must show the (dev, ino) the session was read from
  and at least ``image_len()`` bytes, else :class:`StaleSessionError`. (The python
  backend could not be harmed by a truncation, but the native one maps the file: one
  check in one place keeps both backends the same.)
* **refresh()** moves the leaf to the new last entry only if the leaf was the last
  entry before (a viewer at the end of the session follows it); otherwise the leaf
  stays where the caller put it.
* **Migration** (version 1/2) happens in memory on open; ``load_report`` then lists the
  problems of the original file (its line numbers). The file is rewritten as version 3
  (atomically, original kept as ``<name>.v<N>.bak``) just before the first append.
"""

from __future__ import annotations

import os
import secrets
import time
import uuid
import warnings
from collections.abc import Callable, Container, Iterator
from typing import Any

from ._backend import LoadIssue, TreeIndex
from ._context import SessionContext, assemble_context
from ._jsonl import decode_line, encode_entry
from ._listing import ListingProblem, js_trim, list_all_sessions, list_sessions, session_dir_for_cwd, session_file_name
from ._load import Loader
from ._migrate import migrate_image
from ._pure import PythonIndex
from ._storage import SessionWriter, require_regular_file
from ._time import now_iso
from .errors import (
    EntryNotFoundError,
    FirstKeptEntryError,
    InvalidSessionError,
    LoadReportWarning,
    SessionError,
    StaleSessionError,
)
from .schema import SessionInfo, SessionTreeNode

__all__ = ["SessionManager", "UNSET"]

CURRENT_SESSION_VERSION = 3


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
"""Default of optional entry fields: the key is left out (JavaScript ``undefined``)."""

_LEAF: Any = object()


def _abspath(path: str | os.PathLike[str]) -> str:
    # "~" is expanded: an unexpanded "~/x.jsonl" would silently open a new, empty session
    # in a folder literally named "~".
    return os.path.abspath(os.path.expanduser(os.fspath(path)))


def _native_available() -> bool:
    try:
        import sessiontree._sessiontree  # noqa: F401
        from . import _native  # noqa: F401
    except ImportError:
        return False
    return True


def _index_class(backend: str | None) -> type:
    from_env = not backend
    raw = os.environ.get("SESSIONTREE_BACKEND", "") if from_env else backend
    choice = raw.strip().lower() if isinstance(raw, str) else raw
    choice = choice or "auto"
    if choice == "python":
        return PythonIndex
    if choice == "native":
        from ._native import NativeIndex  # ImportError if the extension is not built

        return NativeIndex
    if choice == "auto":
        if _native_available():
            from ._native import NativeIndex

            return NativeIndex
        return PythonIndex
    if from_env:
        raise ValueError(f"SESSIONTREE_BACKEND must be 'auto', 'python' or 'native', not {raw!r}")
    raise ValueError(f"backend must be 'auto', 'python' or 'native', not {backend!r}")


def _uuid7() -> str:
    ms = int(time.time() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def _is_session_file(path: str) -> bool:
    """Whether ``path`` has a valid header by the loader's rules (read-only)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
            rest = b"" if len(head) < (1 << 20) else None
            loader = Loader(path, records=True)
            loader.feed(head)
            if loader.header is None and rest is None:
                loader = Loader(path, records=True)
                f.seek(0)
                loader.feed(f.read())
        return loader.header is not None
    except (OSError, InvalidSessionError, ValueError):
        return False


def _stat_ident(path: str) -> tuple[tuple[int, int], int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino), st.st_size, st.st_mtime_ns


# Bytes at each end of the indexed image that must stay as read: a file rewritten in
# place (same inode, not shorter) is caught by comparing them when its size or mtime
# changes. Appends change both, and leave these bytes alone.
_FINGERPRINT = 4096


def _read_fingerprint(path: str, length: int) -> bytes:
    with open(path, "rb") as f:
        head = f.read(min(_FINGERPRINT, length))
        f.seek(max(0, length - _FINGERPRINT))
        return head + f.read(min(_FINGERPRINT, length))


class SessionManager:
    """A Pi session: an append-only tree of entries in one JSONL file (or in memory).

    Build one with :meth:`create`, :meth:`open`, :meth:`continue_recent`,
    :meth:`in_memory` or :meth:`fork_from`. Appends make the new entry a child of the
    leaf and move the leaf to it; :meth:`branch` / :meth:`reset_leaf` move the leaf.
    Nothing is written until the session holds an assistant message (Pi's rule); then
    the whole file is created at once, and each later entry is appended as one line
    under an advisory lock held until :meth:`close`.

    Entries are dicts equal to ``json.loads`` of their line, with the file's camelCase
    keys; do not mutate them. Usable as a context manager (closes on exit).
    """

    # ----------------------------------------------------------------- set-up
    def __init__(self, cwd: str, session_dir: str, persist: bool, backend: str | None = None) -> None:
        """Low-level constructor; use the class methods instead."""
        self._index_cls = _index_class(backend)
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._session_file: str | None = None
        self._session_id = ""
        self._index: TreeIndex = None  # type: ignore[assignment]
        self._leaf: str | None = None
        self._flushed = False  # the file on disk holds the image
        self._has_assistant = False
        self._image: list[bytes] = []  # lines of an image not written yet
        self._writer: SessionWriter | None = None
        self._ident: tuple[int, int] | None = None
        self._seen: tuple[int, int] | None = None  # (size, mtime_ns) last verified
        self._fingerprint: tuple[int, bytes] | None = None  # (image length, its ends)
        self._migration: tuple[Any, tuple[int, int] | None, int] | None = None
        self._report: list[LoadIssue] = []
        self._backup: str | None = None
        self._closed = False

    @classmethod
    def create(cls, cwd: str, session_dir: str | None = None, *, backend: str | None = None) -> SessionManager:
        """A new session for ``cwd`` (Pi's ``SessionManager.create``); nothing is written yet.

        Args:
            cwd: working directory recorded in the header.
            session_dir: folder of the file; Pi's default folder for ``cwd`` if ``None``.
            backend: ``"auto"``, ``"python"`` or ``"native"`` (default: env
                ``SESSIONTREE_BACKEND``, else ``auto``).
        """
        mgr = cls(cwd, _abspath(session_dir) if session_dir is not None else session_dir_for_cwd(cwd), True, backend)
        mgr.new_session()
        return mgr

    @classmethod
    def open(cls, path: str, session_dir: str | None = None, *, backend: str | None = None) -> SessionManager:
        """Open a session file (Pi's ``SessionManager.open``); reading never writes.

        A missing file gives a new session that will be written to ``path``. A version
        1/2 file is migrated in memory. A non-empty ``load_report`` issues a
        :class:`LoadReportWarning`.

        Args:
            path: the ``.jsonl`` file.
            session_dir: folder for later new/branched sessions; the file's folder if
                ``None``.
            backend: see :meth:`create`.

        Raises:
            InvalidSessionError: the file has no valid session header (it is left as is).
            OSError: it cannot be read.
        """
        path = _abspath(path)
        cwd = None
        index = None
        if os.path.exists(path):
            require_regular_file(path)
            index_cls = _index_class(backend)
            index = index_cls.open(path)
            cwd = index.header().get("cwd")
        mgr = cls(
            cwd if isinstance(cwd, str) else os.getcwd(),
            _abspath(session_dir) if session_dir is not None else os.path.dirname(path),
            True,
            backend,
        )
        mgr._load_file(path, index)
        return mgr

    @classmethod
    def continue_recent(cls, cwd: str, session_dir: str | None = None, *, backend: str | None = None) -> SessionManager:
        """Open the most recently modified session in the folder, or create one.

        Like Pi's ``continueRecent``: newest file mtime first among ``*.jsonl`` files
        with a valid header (here by the loader's rules, so a BOM does not hide one).

        Args:
            cwd: working directory (selects Pi's default folder).
            session_dir: the folder, if not the default.
            backend: see :meth:`create`.
        """
        folder = _abspath(session_dir) if session_dir is not None else session_dir_for_cwd(cwd)
        candidates = []
        try:
            names = os.listdir(folder)
        except OSError:
            names = []
        for name in names:
            if not name.endswith(".jsonl"):
                continue
            p = os.path.join(folder, name)
            try:
                st = os.stat(p)
            except OSError:
                continue
            if os.path.isfile(p):
                candidates.append((st.st_mtime_ns, p))
        candidates.sort(reverse=True)
        for _, p in candidates:
            if _is_session_file(p):
                mgr = cls(cwd, folder, True, backend)
                mgr._load_file(os.path.abspath(p), None)
                return mgr
        return cls.create(cwd, folder, backend=backend)

    @classmethod
    def in_memory(cls, cwd: str | None = None, *, backend: str | None = None) -> SessionManager:
        """A session that is never written (Pi's ``SessionManager.inMemory``).

        Args:
            cwd: working directory for the header; the process's if ``None``.
            backend: see :meth:`create`.
        """
        mgr = cls(cwd if cwd is not None else os.getcwd(), "", False, backend)
        mgr.new_session()
        return mgr

    @classmethod
    def fork_from(
        cls, source_path: str, target_cwd: str, session_dir: str | None = None, *, backend: str | None = None
    ) -> SessionManager:
        """Copy a session into a new file for another project (Pi's ``forkFrom``).

        The new file gets a new header (``cwd`` = ``target_cwd``, ``parentSession`` =
        ``source_path`` as given) and every entry of the source, each with its original
        line bytes (migrated first if the source is version 1/2). It is written at once,
        as Pi does.

        Raises:
            InvalidSessionError: the source has no valid header.
            OSError: the source cannot be read.
        """
        index_cls = _index_class(backend)
        require_regular_file(os.fspath(source_path))
        source = index_cls.open(os.fspath(source_path))
        if source.needs_migration:
            with open(source_path, "rb") as f:
                source = index_cls.from_image(migrate_image(f.read(), os.fspath(source_path)).image)
        folder = _abspath(session_dir) if session_dir is not None else session_dir_for_cwd(target_cwd)
        mgr = cls(target_cwd, folder, True, backend)
        session_id = mgr._new_session_id()
        timestamp = mgr._now()
        header = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": target_cwd,
            "parentSession": os.fspath(source_path),
        }
        lines = [encode_entry(header) + b"\n"]
        lines.extend(source.raw_line(eid) + b"\n" for eid in source.ids())  # type: ignore[operator]
        source.close()
        path = os.path.join(folder, session_file_name(timestamp, session_id))
        writer = SessionWriter(path)
        writer.create(b"".join(lines))
        writer.close()
        mgr._load_file(os.path.abspath(path), None)
        return mgr

    @staticmethod
    def list(
        cwd: str,
        session_dir: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        *,
        on_problem: Callable[[ListingProblem], None] | None = None,
    ) -> list[SessionInfo]:
        """Sessions of one project folder, newest ``modified`` first (Pi's ``list``).

        Files that are not sessions are left out; a bad file never stops a listing.

        Args:
            cwd: working directory (selects Pi's default folder).
            session_dir: the folder, if not the default.
            on_progress: called ``(loaded, total)`` after each file.
            on_problem: called with a ``ListingProblem(path, reason, line, offset)`` for
                each ``.jsonl`` file left out.
        """
        folder = _abspath(session_dir) if session_dir is not None else session_dir_for_cwd(cwd)
        return list_sessions(folder, on_progress, on_problem)

    @staticmethod
    def list_all(
        on_progress: Callable[[int, int], None] | None = None,
        *,
        on_problem: Callable[[ListingProblem], None] | None = None,
    ) -> list[SessionInfo]:
        """Sessions of every project folder under Pi's sessions root, newest first.

        Args:
            on_progress: called ``(loaded, total)`` after each file.
            on_problem: as for :meth:`list`.
        """
        return list_all_sessions(None, on_progress, on_problem)

    # --------------------------------------------------------------- test hook
    def _new_id(self, taken: Container[str]) -> str:
        """A new entry id: 8 lowercase hex chars not in ``taken`` (Pi's ``generateId``).

        Override (subclass or instance attribute) to inject ids.
        """
        for _ in range(100):
            candidate = uuid.uuid4().hex[:8]
            if candidate not in taken:
                return candidate
        return str(uuid.uuid4())

    def _now(self) -> str:
        """The current time as Pi writes it (``toISOString``). Override to inject times."""
        return now_iso()

    def _new_session_id(self) -> str:
        """A new session id (UUID v7, as Pi 0.73 uses). Override to inject ids."""
        return _uuid7()

    # --------------------------------------------------------------- loading
    def _load_file(self, path: str, index: TreeIndex | None) -> None:
        """Make ``path`` the current session: load it, or start a new one there.

        Nothing changes if loading raises (e.g. ``InvalidSessionError``).
        """
        before = _stat_ident(path)
        if before is None:
            if index is not None:
                index.close()
            self._drop_writer()
            self._new_header(None, None)
            self._session_file = path
            return
        if index is None:
            require_regular_file(path)
            index = self._index_cls.open(path)
        migration = None
        try:
            if index.needs_migration:
                index.close()
                with open(path, "rb") as f:
                    data = f.read()
                m = migrate_image(data, path)
                index = self._index_cls.from_image(m.image)
                report = list(m.issues) + [self._map_issue(i, m.line_map) for i in index.load_report()]
                report.sort(key=lambda i: (i.line is None, i.line or 0))
                migration = (m, before[0], len(data))
            else:
                report = index.load_report()
        except BaseException:
            index.close()
            raise
        self._drop_writer()
        if self._index is not None:
            self._index.close()
        self._index = index
        self._session_file = path
        self._migration = migration
        self._ident = before[0]
        self._seen = self._fingerprint = None
        self._session_id = index.header().get("id")
        self._leaf = index.last_id()
        self._flushed = True
        self._has_assistant = True  # an existing file: every append goes straight to disk (Pi)
        self._image = []
        self._report = report
        self._check()  # remember the file's ends now, so a rewrite from here on is seen
        if report:
            warnings.warn(
                f"{path}: {len(report)} problem(s) found while loading; see SessionManager.load_report",
                LoadReportWarning,
                stacklevel=3,
            )

    @staticmethod
    def _map_issue(issue: LoadIssue, line_map: list[tuple[int, int]]) -> LoadIssue:
        if issue.line is not None and 1 <= issue.line <= len(line_map):
            line, offset = line_map[issue.line - 1]
            return LoadIssue(issue.kind, line, offset, issue.ids, issue.detail)
        return issue

    def _new_header(self, session_id: str | None, parent_session: str | None) -> None:
        self._session_id = session_id if session_id is not None else self._new_session_id()
        timestamp = self._now()
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": self._session_id,
            "timestamp": timestamp,
            "cwd": self._cwd,
        }
        if parent_session is not None:
            header["parentSession"] = parent_session
        line = encode_entry(header) + b"\n"
        self._set_image([line], has_assistant=False)
        if self._persist:
            self._session_file = os.path.join(self._session_dir, session_file_name(timestamp, self._session_id))
        else:
            self._session_file = None

    def _set_image(self, lines: list[bytes], has_assistant: bool) -> None:
        if self._index is not None:
            self._index.close()
        self._index = self._index_cls.from_image(b"".join(lines))
        self._image = lines
        self._leaf = self._index.last_id()
        self._flushed = False
        self._has_assistant = has_assistant
        self._ident = None
        self._seen = self._fingerprint = None
        self._migration = None
        self._report = []

    def new_session(self, id: str | None = None, parent_session: str | None = None) -> str | None:  # noqa: A002
        """Start a new, empty session (Pi's ``newSession``); nothing is written yet.

        Args:
            id: the session id; a new UUID v7 if ``None``.
            parent_session: recorded as the header's ``parentSession``.

        Returns:
            The new session file's path, or ``None`` in memory.
        """
        self._drop_writer()
        self._new_header(id, parent_session)
        return self._session_file

    def set_session_file(self, path: str) -> None:
        """Switch to another session file (Pi's ``setSessionFile``): load it if it
        exists, else start a new session that will be written there.

        Raises:
            InvalidSessionError: the file exists but has no valid header (untouched).
        """
        self._load_file(_abspath(path), None)

    # ------------------------------------------------------------- staleness
    def _check(self) -> None:
        if self._closed:
            raise SessionError("session manager is closed")
        if not (self._persist and self._flushed and self._session_file):
            return
        st = _stat_ident(self._session_file)
        if st is None:
            raise StaleSessionError(f"{self._session_file}: session file is gone; reopen it")
        ident, size, mtime = st
        if self._ident is not None and ident != self._ident:
            raise StaleSessionError(f"{self._session_file}: session file was replaced; reopen it")
        if self._migration is not None:
            return
        if size < self._index.image_len():
            raise StaleSessionError(f"{self._session_file}: session file was truncated; reopen it")
        if (size, mtime) != self._seen:
            if self._seen is not None and size == self._seen[0]:
                # Written to without growing: not an append (appends only add bytes).
                raise StaleSessionError(f"{self._session_file}: session file was rewritten in place; reopen it")
            try:
                if self._fingerprint is not None and _read_fingerprint(self._session_file, self._fingerprint[0]) != self._fingerprint[1]:
                    raise StaleSessionError(f"{self._session_file}: session file was rewritten in place; reopen it")
                length = self._index.image_len()
                if self._fingerprint is None or self._fingerprint[0] != length:
                    self._fingerprint = (length, _read_fingerprint(self._session_file, length))
            except OSError as e:
                raise StaleSessionError(f"{self._session_file}: {e.strerror or e}; reopen it") from None
            self._seen = (size, mtime)

    # --------------------------------------------------------------- writing
    def _drop_writer(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _append(self, entry: dict[str, Any]) -> str:
        """Index and persist one new entry (Pi's ``_appendEntry`` + ``_persist``)."""
        self._check()
        if entry["id"] in self._index:
            raise ValueError(f"entry id {entry['id']} is already in the session")  # a bad _new_id override
        line = encode_entry(entry)
        # Refuse what the loader would skip (e.g. nesting past MAX_DEPTH) before a byte is
        # written: an appended line must reload as the entry it claims to be.
        decode_line(line)
        message = entry.get("message")
        if entry["type"] == "message" and isinstance(message, dict) and message.get("role") == "assistant":
            self._has_assistant = True
        if self._persist and self._session_file and self._flushed:
            writer = self._ensure_writer()
            torn = self._index.has_pending_tail()
            writer.append(line)
            entry_id = self._index.append_line(line)
            if torn:  # the fragment is now a whole invalid line: reported as such
                self._report = self._index.load_report()
        else:
            entry_id = self._index.append_line(line)
            self._image.append(line + b"\n")
            # As Pi: the entry is in the session even if writing it fails below.
            self._leaf = entry_id
            if self._persist and self._session_file and self._has_assistant:
                self._flush()
        self._leaf = entry_id
        return entry_id

    def _flush(self) -> None:
        """First write of a new session: header + every pending line, one exclusive create."""
        assert self._session_file is not None
        writer = SessionWriter(self._session_file)
        writer.create(b"".join(self._image))
        self._writer = writer
        self._ident = writer.identity()
        self._seen = self._fingerprint = None
        self._image = []
        self._flushed = True

    def _ensure_writer(self) -> SessionWriter:
        assert self._session_file is not None
        if self._writer is None:
            writer = SessionWriter(self._session_file)
            if self._migration is not None:
                m, ident, size = self._migration
                self._backup = writer.replace(m.image, f".v{int(m.from_version)}.bak", ident, size)
                self._migration = None
            else:
                writer.open(self._ident, self._index.image_len())
                # Lines another process appended since we read the file must be indexed
                # before ours, or our offsets and ids would be wrong.
                self._catch_up()
            self._writer = writer
            self._ident = writer.identity()
            self._seen = self._fingerprint = None
        elif self._writer.grew():
            self._catch_up()
        return self._writer

    def migrate(self) -> str | None:
        """Write a version 1/2 session's migration to disk now (else it happens just
        before the first append): the version 3 image replaces the file atomically and
        the original is kept as ``<name>.v<N>.bak``. Takes the writer lock.

        Returns:
            The backup's path, or ``None`` when there was nothing to migrate.

        Raises:
            SessionLockedError: another writer holds the file.
            StaleSessionError: the file changed since it was read.
        """
        self._check()
        if self._migration is None or not self._persist:
            return None
        self._ensure_writer()
        return self._backup

    def _catch_up(self) -> None:
        if self._index.refresh(self._session_file):  # type: ignore[arg-type]
            self._report = self._index.load_report()

    def _entry_base(self, etype: str) -> dict[str, Any]:
        return {"type": etype, "id": self._new_id(self._index), "parentId": self._leaf, "timestamp": self._now()}

    # ---------------------------------------------------------------- appends
    def append_message(self, message: dict[str, Any]) -> str:
        """Append a ``message`` entry (Pi's ``appendMessage``).

        Args:
            message: the agent message (``role`` user / assistant / toolResult /
                bashExecution / custom ...), stored as given.

        Returns:
            The new entry's id (the new leaf).
        """
        entry = self._entry_base("message")
        entry["message"] = message
        return self._append(entry)

    def append_thinking_level_change(self, level: str) -> str:
        """Append a ``thinking_level_change`` entry; returns its id."""
        entry = self._entry_base("thinking_level_change")
        entry["thinkingLevel"] = level
        return self._append(entry)

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Append a ``model_change`` entry (``provider``, ``modelId``); returns its id."""
        entry = self._entry_base("model_change")
        entry["provider"] = provider
        entry["modelId"] = model_id
        return self._append(entry)

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = UNSET,
        from_hook: Any = UNSET,
    ) -> str:
        """Append a ``compaction`` entry (Pi's ``appendCompaction``).

        Args:
            summary: the summary text.
            first_kept_entry_id: the first entry kept after the summary; it must be on
                the current path (root -> leaf).
            tokens_before: context size before compaction.
            details: extension data (left out when not given).
            from_hook: whether an extension produced it (left out when not given).

        Returns:
            The new entry's id.

        Raises:
            FirstKeptEntryError: ``first_kept_entry_id`` is not on the current path
                (Pi accepts it and then keeps no messages; API.md section 5).
        """
        self._check()
        if first_kept_entry_id not in self._index.path_ids(self._leaf):
            raise FirstKeptEntryError(
                f"firstKeptEntryId {first_kept_entry_id} is not on the current path (leaf {self._leaf})"
            )
        entry = self._entry_base("compaction")
        entry["summary"] = summary
        entry["firstKeptEntryId"] = first_kept_entry_id
        entry["tokensBefore"] = tokens_before
        if details is not UNSET:
            entry["details"] = details
        if from_hook is not UNSET:
            entry["fromHook"] = from_hook
        return self._append(entry)

    def append_custom_entry(self, custom_type: str, data: Any = UNSET) -> str:
        """Append a ``custom`` entry (extension state; not in the context).

        Key order is Pi's: ``type, customType, data?, id, parentId, timestamp``.
        """
        entry: dict[str, Any] = {"type": "custom", "customType": custom_type}
        if data is not UNSET:
            entry["data"] = data
        base = self._entry_base("custom")
        del base["type"]
        entry.update(base)
        return self._append(entry)

    def append_session_info(self, name: str) -> str:
        """Append a ``session_info`` entry; ``name`` is trimmed with JavaScript's
        ``String.prototype.trim`` (an empty result clears the session name)."""
        entry = self._entry_base("session_info")
        entry["name"] = js_trim(name)
        return self._append(entry)

    def append_custom_message_entry(self, custom_type: str, content: Any, display: bool, details: Any = UNSET) -> str:
        """Append a ``custom_message`` entry (becomes a ``custom`` message in the context).

        Key order is Pi's: ``type, customType, content, display, details?, id,
        parentId, timestamp``.
        """
        entry: dict[str, Any] = {"type": "custom_message", "customType": custom_type, "content": content, "display": display}
        if details is not UNSET:
            entry["details"] = details
        base = self._entry_base("custom_message")
        del base["type"]
        entry.update(base)
        return self._append(entry)

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (truthy ``label``) or clear (``None`` / ``""``) the label of an entry.

        ``None`` writes no ``label`` key; ``""`` is written as is (both clear).

        Raises:
            EntryNotFoundError: ``target_id`` is not in the session.
        """
        self._check()
        if target_id not in self._index:
            raise EntryNotFoundError(target_id)
        entry = self._entry_base("label")
        entry["targetId"] = target_id
        if label is not None and label is not UNSET:
            entry["label"] = label
        return self._append(entry)

    # ------------------------------------------------------------------- tree
    @property
    def leaf_id(self) -> str | None:
        """The current leaf's id (``None`` before the first entry / after ``reset_leaf``)."""
        return self._leaf

    def get_leaf_entry(self) -> dict[str, Any] | None:
        """The current leaf entry, or ``None``."""
        self._check()
        return self._index.get(self._leaf) if self._leaf is not None else None

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        """The entry with this id, or ``None``."""
        self._check()
        return self._index.get(entry_id)

    def get_children(self, entry_id: str) -> list[dict[str, Any]]:
        """Direct children of an entry, in file order (Pi's ``getChildren``)."""
        self._check()
        return self._index.children(entry_id)

    def get_label(self, entry_id: str) -> str | None:
        """The entry's current label, or ``None``."""
        self._check()
        return self._index.label(entry_id)

    def get_branch(self, from_id: str | None = None) -> list[dict[str, Any]]:
        """Entries from the root down to ``from_id`` (default: the leaf); empty if unknown."""
        self._check()
        return self._index.path(from_id if from_id is not None else self._leaf)

    def get_tree(self) -> list[SessionTreeNode]:
        """The whole session as a forest (Pi's ``getTree``): roots in file order,
        children oldest first; orphans, cycle breaks and self-parented entries are roots."""
        self._check()
        return self._index.tree()

    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry; the next append starts a new branch.

        Raises:
            EntryNotFoundError: no such entry.
        """
        self._check()
        if entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        self._leaf = entry_id

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next append is a new root."""
        self._leaf = None

    def branch_with_summary(
        self, entry_id: str | None, summary: str, details: Any = UNSET, from_hook: Any = UNSET
    ) -> str:
        """Move the leaf to ``entry_id`` (``None``: before the first entry) and append a
        ``branch_summary`` there (``fromId`` = ``entry_id`` or ``"root"``).

        Raises:
            EntryNotFoundError: ``entry_id`` is not ``None`` and not in the session.
        """
        self._check()
        if entry_id is not None and entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        self._leaf = entry_id
        entry = self._entry_base("branch_summary")
        entry["fromId"] = entry_id if entry_id is not None else "root"
        entry["summary"] = summary
        if details is not UNSET:
            entry["details"] = details
        if from_hook is not UNSET:
            entry["fromHook"] = from_hook
        return self._append(entry)

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Continue in a new session holding only the path root -> ``leaf_id``.

        As Pi 0.73 does: label entries are left out of the copied path; then one new
        ``label`` entry per current label of a copied entry (in label-map order, with the
        timestamp of the label entry that set it) is appended after the path. Copied
        entries keep their original line bytes. The new header has ``parentSession`` =
        this session's file (when persisted). The new file is written at once if the
        path holds an assistant message, else at the first assistant message. This
        manager then continues in the new session.

        Returns:
            The new session file, or ``None`` in memory.

        Raises:
            EntryNotFoundError: no such entry.
        """
        self._check()
        path_ids = self._index.path_ids(leaf_id)
        if not path_ids:
            raise EntryNotFoundError(leaf_id)
        index = self._index
        kept = [eid for eid in path_ids if index.get(eid).get("type") != "label"]  # type: ignore[union-attr]
        kept_set = set(kept)
        has_assistant = False
        for eid in kept:
            e = index.get(eid)
            m = e.get("message") if e is not None else None
            if e is not None and e.get("type") == "message" and isinstance(m, dict) and m.get("role") == "assistant":
                has_assistant = True
                break
        session_id = self._new_session_id()
        timestamp = self._now()
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": self._cwd,
        }
        if self._persist and self._session_file:
            header["parentSession"] = self._session_file
        lines = [encode_entry(header) + b"\n"]
        lines.extend(index.raw_line(eid) + b"\n" for eid in kept)  # type: ignore[operator]
        taken = set(kept_set)
        parent = kept[-1] if kept else None
        for target, label in index.labels().items():
            if target not in kept_set:
                continue
            label_id = self._new_id(taken)
            taken.add(label_id)
            label_entry = {
                "type": "label",
                "id": label_id,
                "parentId": parent,
                "timestamp": index.label_timestamp(target),
                "targetId": target,
                "label": label,
            }
            lines.append(encode_entry(label_entry) + b"\n")
            parent = label_id
        self._drop_writer()
        self._session_id = session_id
        self._set_image(lines, has_assistant)
        if self._persist:
            self._session_file = os.path.join(self._session_dir, session_file_name(timestamp, session_id))
            if has_assistant:
                self._flush()
            return self._session_file
        self._session_file = None
        return None

    def build_session_context(self, leaf_id: Any = _LEAF) -> SessionContext:
        """What is sent to the LLM at a leaf (Pi's ``buildSessionContext``).

        Args:
            leaf_id: default the current leaf; ``None`` gives an empty context; an id
                not in the session means the last entry (Pi's fallback).
        """
        self._check()
        if leaf_id is _LEAF:
            leaf_id = self._leaf
        if leaf_id is None:
            return SessionContext()
        if leaf_id not in self._index:
            leaf_id = self._index.last_id()
            if leaf_id is None:
                return SessionContext()
        return assemble_context(self._index.context_plan(leaf_id), self._index.get)

    # ---------------------------------------------------------------- session
    def get_entries(self) -> list[dict[str, Any]]:
        """Every entry in file order (header excluded)."""
        self._check()
        return self._index.entries()

    def get_header(self) -> dict[str, Any]:
        """The session header dict."""
        self._check()
        return self._index.header()

    def get_session_name(self) -> str | None:
        """The name set by the latest ``session_info`` entry (``None`` if unset/cleared)."""
        self._check()
        return self._index.session_name()

    @property
    def cwd(self) -> str:
        """Working directory of the session."""
        return self._cwd

    @property
    def session_dir(self) -> str:
        """Folder for this session's file (``""`` in memory)."""
        return self._session_dir

    @property
    def session_id(self) -> str:
        """The header's ``id``."""
        return self._session_id

    @property
    def session_file(self) -> str | None:
        """The session file's path (``None`` in memory); it may not exist yet."""
        return self._session_file

    @property
    def is_persisted(self) -> bool:
        """Whether this session is written to a file at all (False for ``in_memory``)."""
        return self._persist

    @property
    def backend(self) -> str:
        """``"python"`` or ``"native"``."""
        return self._index_cls.backend

    @property
    def load_report(self) -> list[LoadIssue]:
        """Problems found when the file was loaded (and by later ``refresh`` calls)."""
        return list(self._report)

    def refresh(self) -> int:
        """Index complete lines another process appended to the file.

        Returns:
            How many entries were added (0 for a session not on disk).

        Raises:
            StaleSessionError: the file was truncated or replaced.
        """
        self._check()
        if not (self._persist and self._flushed and self._session_file) or self._migration is not None:
            return 0
        last = self._index.last_id()
        added = self._index.refresh(self._session_file)
        if added and self._leaf == last:
            self._leaf = self._index.last_id()
        # Junk lines, duplicates or a torn tail change the report without adding entries.
        self._report = self._index.load_report()
        return added

    def close(self) -> None:
        """Release the writer lock and the index (idempotent)."""
        self._drop_writer()
        if self._index is not None and not self._closed:
            self._index.close()
        self._closed = True

    # -------------------------------------------------------------- protocols
    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        self._check()
        return len(self._index)

    def __contains__(self, entry_id: object) -> bool:
        self._check()
        return entry_id in self._index

    def __getitem__(self, entry_id: str) -> dict[str, Any]:
        self._check()
        entry = self._index.get(entry_id) if isinstance(entry_id, str) else None
        if entry is None:
            raise EntryNotFoundError(entry_id)
        return entry

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._check()
        return iter(self._index.entries())

    def __repr__(self) -> str:
        where = self._session_file or "<memory>"
        return f"<SessionManager {self._session_id} {where} backend={self.backend} entries={len(self._index)}>"
