"""``SessionManager``: Pi's session API over a backend index and the session's file.

The manager holds what Pi's ``SessionManager`` holds besides the entries: the leaf and
the lines not written yet (nothing is written before the first assistant message).
Everything about the entries (which lines count, links, labels, name, tree, context
plan) comes from a :class:`~sessiontree._backend.TreeIndex`, so both backends behave
alike by construction; everything about the file (when and how it is written, whether
it is still the one read) is :class:`~sessiontree._persist.SessionFile`'s; line shapes
are :mod:`sessiontree._shapes`'.

Design notes (where the contract leaves a choice):

* **Test hook.** New ids, timestamps and session ids come from the methods
  :meth:`SessionManager._new_id`, :meth:`SessionManager._now` and
  :meth:`SessionManager._new_session_id`. A subclass (or an instance attribute) may
  override them to replay Pi's recorded values: that is how the tests reproduce the
  corpus files byte for byte.
* **Unset vs null.** ``None`` for an optional argument (``details``, ``from_hook``,
  ``data``, ``usage``, ``note``, ``label``) means "not given": the key is left out, as Pi
  leaves out ``undefined``. :data:`~sessiontree.NULL` writes an explicit ``null``.
  ``append_label_change(id)`` or ``(id, None)`` clears the label and writes no
  ``label`` key.
* **Staleness** is checked once per public call on a session that is on disk, the same
  way for both backends (:mod:`sessiontree._filestate`).
* **refresh()** moves the leaf to the file's new leaf (the last entry, or where a
  ``leaf`` entry moved it: loader rule 13) only if the leaf was the file's leaf before (a viewer at the end of the session follows it); otherwise the leaf
  stays where the caller put it.
* **Migration** (version 1/2) happens in memory on open; ``load_report`` then lists the
  problems of the original file (its line numbers). The file is rewritten as version 3
  (atomically, original kept as ``<name>.v<N>.bak``) just before the first append.
"""

from __future__ import annotations

import builtins
import os
import sys
import warnings
import weakref
from collections.abc import Callable, Container, Iterable, Iterator
from typing import Any

from . import _shapes
from ._args import abspath as _abspath
from ._args import require as _require
from ._args import require_number as _require_number
from ._args import require_path as _require_path
from ._backend import LoadIssue, TreeIndex
from ._context import SessionContext, SessionProjection, assemble_context, assemble_projection, current_system_message
from ._filestate import stat_id
from ._js import NULL, UNDEFINED
from ._jsonl import decode_line, encode_entry
from ._listing import ListingProblem, list_all_sessions, list_sessions, project_cwd
from ._persist import SessionFile, migrated_index, open_session
from ._places import session_dir_for_cwd, session_file_name
from ._reader import CURRENT_VERSION, scan_header
from ._select import index_class
from ._session_storage import InMemorySessionStorage, JsonlSessionStorage, new_entry_id, new_session_id
from ._time import now_iso, parse_iso_ms
from .errors import (
    ContextEditError,
    EntryNotFoundError,
    FirstKeptEntryError,
    InvalidSessionError,
    LoadReportWarning,
    SessionError,
)
from .schema import SessionInfo, SessionTreeNode, TreeShape, UsageTotals

__all__ = ["SessionManager", "UNSET"]

UNSET: Any = UNDEFINED
"""Default of optional entry fields: the key is left out (JavaScript ``undefined``)."""

_Entries = builtins.list[dict[str, Any]]  # `list` is a method name inside the class


_EDITABLE = frozenset({"user", "assistant", "toolResult"})


def _optional(value: Any) -> Any:
    """An optional argument as it is written: ``None`` / ``UNSET`` leave the key out,
    ``NULL`` writes ``null``."""
    if value is None or value is UNDEFINED:
        return UNDEFINED
    return None if value is NULL else value


def _is_session_file(path: str) -> bool:
    """Whether ``path`` has a valid header by the loader's rules (read-only)."""
    try:
        scan_header(path)
    except (OSError, InvalidSessionError, ValueError):
        return False
    return True


def _is_assistant(entry: dict[str, Any] | None) -> bool:
    message = entry.get("message") if entry is not None else None
    return entry is not None and entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"


def _copy_lines(source: TreeIndex) -> builtins.list[bytes]:
    """Every entry line of ``source`` with its original bytes, each ended by LF."""
    return [source.raw_line(eid) + b"\n" for eid in source.ids()]  # type: ignore[operator]


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
    def __init__(self, cwd: str, session_dir: str, persist: bool, backend: str | None = None,
                 storage: InMemorySessionStorage | None = None) -> None:
        """Low-level constructor; use the class methods instead."""
        self._index_cls = index_class(backend)
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._session_id = ""
        # The session's index, leaf, file and lines not written yet live in the storage
        # (`_session_storage`): a file's, or memory's for a session never written.
        if storage is None:
            storage = JsonlSessionStorage() if persist else InMemorySessionStorage()
        self._st = storage
        # The storage asks the manager for ids and times (overridable hooks) through a
        # weak reference: no cycle, so a manager dropped without close() is collected at
        # once and its lock released; a storage that outlives its manager (the
        # standalone constructors) falls back to the defaults.
        me = weakref.ref(self)
        storage.new_id = lambda taken: (m._new_id(taken) if (m := me()) is not None else new_entry_id(taken))
        storage.now = lambda: (m._now() if (m := me()) is not None else now_iso())
        self._report: builtins.list[LoadIssue] = []
        self._file_version: Any = CURRENT_VERSION
        self._closed = False

    # The manager's view of its storage's state (the seam: `_session_storage`).
    @property
    def _index(self) -> TreeIndex:
        return self._st.index

    @_index.setter
    def _index(self, index: TreeIndex) -> None:
        self._st.index = index

    @property
    def _leaf(self) -> str | None:
        return self._st.leaf

    @_leaf.setter
    def _leaf(self, leaf: str | None) -> None:
        self._st.leaf = leaf

    @property
    def _file(self) -> SessionFile | None:  # None: in memory, or not set yet
        return self._st.file

    @_file.setter
    def _file(self, file: SessionFile | None) -> None:
        self._st.file = file

    @property
    def storage(self) -> InMemorySessionStorage:
        """The storage this manager runs over: a
        :class:`~sessiontree.JsonlSessionStorage` for a session on disk, an
        :class:`~sessiontree.InMemorySessionStorage` for one never written. It answers
        agent-core's ``SessionStorage`` operations on the same session, and holds the
        session the manager moves to (``new_session``, ``set_session_file``,
        ``create_branched_session``)."""
        return self._st

    @classmethod
    def create(
        cls, cwd: str, session_dir: str | None = None, *, backend: str | None = None, leaf_entries: bool = False
    ) -> SessionManager:
        """A new session for ``cwd`` (Pi's ``SessionManager.create``); nothing is written yet.

        Args:
            cwd: working directory recorded in the header.
            session_dir: folder of the file; Pi's default folder for ``cwd`` if ``None``.
            backend: ``"auto"``, ``"python"`` or ``"native"`` (default: env
                ``SESSIONTREE_BACKEND``, else ``auto``).
            leaf_entries: agent-core's harness semantics: every leaf move (``branch``,
                ``reset_leaf``, ``branch_with_summary``) is written as a ``leaf`` entry
                (``_session_storage``); off (the coding agent's default), moves stay in
                memory.

        Raises:
            TypeError: ``cwd`` is not a str or ``session_dir`` not a path or ``None``.
            ValueError: an unknown backend name.
        """
        _require("cwd", cwd, str)
        _require_path("session_dir", session_dir, optional=True)
        mgr = cls(cwd, _abspath(session_dir) if session_dir is not None else session_dir_for_cwd(cwd), True, backend,
                  JsonlSessionStorage(leaf_entries=leaf_entries))
        mgr.new_session()
        return mgr

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], session_dir: str | None = None, *, backend: str | None = None,
        leaf_entries: bool = False,
    ) -> SessionManager:
        """Open a session file (Pi's ``SessionManager.open``); reading never writes.

        A missing file gives a new session that will be written to ``path``. A version
        1/2 file is migrated in memory. A non-empty ``load_report`` issues a
        :class:`LoadReportWarning`.

        Args:
            path: the ``.jsonl`` file.
            session_dir: folder for later new/branched sessions; the file's folder if
                ``None``.
            backend: see :meth:`create`.
            leaf_entries: see :meth:`create`.

        Raises:
            TypeError: ``path`` is not a path or ``session_dir`` not a path or ``None``.
            InvalidSessionError: the file has no valid session header (it is left as is).
            OSError: it cannot be read.
        """
        _require_path("path", path)
        _require_path("session_dir", session_dir, optional=True)
        path = _abspath(path)
        mgr = cls(os.getcwd(), _abspath(session_dir) if session_dir is not None else os.path.dirname(path), True,
                  backend, JsonlSessionStorage(leaf_entries=leaf_entries))
        mgr._load_file(path)
        if mgr._file is not None and mgr._file.on_disk:
            cwd = mgr._index.header().get("cwd")  # the cwd of the file read (a new one: this one)
            if isinstance(cwd, str):
                mgr._cwd = cwd
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

        Raises:
            TypeError: ``cwd`` is not a str or ``session_dir`` not a path or ``None``.
        """
        _require("cwd", cwd, str)
        _require_path("session_dir", session_dir, optional=True)
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
                mgr._load_file(os.path.abspath(p))
                return mgr
        return cls.create(cwd, folder, backend=backend)

    @classmethod
    def in_memory(
        cls, cwd: str | None = None, *, backend: str | None = None, leaf_entries: bool = False
    ) -> SessionManager:
        """A session that is never written (Pi's ``SessionManager.inMemory``).

        Args:
            cwd: working directory for the header; the process's if ``None``.
            backend: see :meth:`create`.
            leaf_entries: see :meth:`create` (the moves are entries of the session).

        Raises:
            TypeError: ``cwd`` is not a str or ``None``.
        """
        _require("cwd", cwd, (str, type(None)))
        mgr = cls(cwd if cwd is not None else os.getcwd(), "", False, backend,
                  InMemorySessionStorage(leaf_entries=leaf_entries))
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
            TypeError: an argument of the wrong type (nothing is written).
            InvalidSessionError: the source has no valid header.
            OSError: the source cannot be read, or the new file written (naming it;
                nothing is left at its name).
        """
        _require_path("source_path", source_path)
        _require("target_cwd", target_cwd, str)
        _require_path("session_dir", session_dir, optional=True)
        index_cls = index_class(backend)
        source_path = os.fspath(source_path)
        source = open_session(index_cls, source_path).index
        try:
            lines = _copy_lines(source)
        finally:
            source.close()
        folder = _abspath(session_dir) if session_dir is not None else session_dir_for_cwd(target_cwd)
        mgr = cls(target_cwd, folder, True, backend)
        session_id = mgr._new_session_id()
        timestamp = mgr._now()
        header = _shapes.header(session_id, timestamp, target_cwd, source_path)
        path = os.path.join(folder, session_file_name(timestamp, session_id))
        written = SessionFile(path)
        written.create(encode_entry(header) + b"\n" + b"".join(lines))
        written.release()
        mgr._load_file(os.path.abspath(path))
        return mgr

    @staticmethod
    def list(
        cwd: str,
        session_dir: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        *,
        on_problem: Callable[[ListingProblem], None] | None = None,
        catalog: str | os.PathLike[str] | None = None,
        no_cache: bool = False,
    ) -> builtins.list[SessionInfo]:
        """Sessions of one project folder, newest ``modified`` first (Pi's ``list``).

        Files that are not sessions are left out; a bad file never stops a listing.
        The listing goes through the catalog (``sessiontree.catalog``): unchanged files
        cost a ``stat``; the answer is the one reading every file gives.

        Args:
            cwd: working directory (selects Pi's default folder). Normalised as the
                directory Pi would have recorded (``_listing.project_cwd``: ``~``
                expanded, made absolute, ``.``/``..``/trailing ``/`` and symlinks
                resolved).
            session_dir: the folder, if not the default.
            on_progress: called ``(loaded, total)`` after each file.
            on_problem: called with a ``ListingProblem(path, reason, line, offset)`` for
                each ``.jsonl`` file left out.
            catalog: the catalog file (default ``$SESSIONTREE_CATALOG``, else the cache
                folder).
            no_cache: read every file instead (the same answer).

        Raises:
            TypeError: ``cwd`` is not a path.
        """
        if not isinstance(cwd, (str, os.PathLike)):
            raise TypeError(f"cwd must be a path (str), not {type(cwd).__name__}")
        folder = _abspath(session_dir) if session_dir is not None else session_dir_for_cwd(project_cwd(cwd))
        return list_sessions(folder, on_progress, on_problem, catalog=catalog, no_cache=no_cache)

    @staticmethod
    def list_all(
        on_progress: Callable[[int, int], None] | None = None,
        *,
        on_problem: Callable[[ListingProblem], None] | None = None,
        catalog: str | os.PathLike[str] | None = None,
        no_cache: bool = False,
    ) -> builtins.list[SessionInfo]:
        """Sessions of every project folder under Pi's sessions root, newest first.

        Args:
            on_progress: called ``(loaded, total)`` after each file.
            on_problem, catalog, no_cache: as for :meth:`list`.
        """
        return list_all_sessions(None, on_progress, on_problem, catalog=catalog, no_cache=no_cache)

    # --------------------------------------------------------------- test hook
    def _new_id(self, taken: Container[str]) -> str:
        """A new entry id: 8 lowercase hex chars not in ``taken`` (Pi's ``generateId``).

        Override (subclass or instance attribute) to inject ids.
        """
        return new_entry_id(taken)

    def _now(self) -> str:
        """The current time as Pi writes it (``toISOString``). Override to inject times."""
        return now_iso()

    def _new_session_id(self) -> str:
        """A new session id (UUID v7, as Pi 0.73 uses). Override to inject ids."""
        return new_session_id()

    # --------------------------------------------------------------- loading
    def _load_file(self, path: str) -> None:
        """Make ``path`` the current session: load it, or start a new one there.

        Nothing changes if loading raises (e.g. ``InvalidSessionError``).
        """
        if stat_id(path) is None:
            self._release()
            self._new_header(None, None, None, path)
            return
        opened = self._st.read(self._index_cls, path)  # the one open (_persist.open_session)
        self._file_version = opened.version
        self._session_id = opened.index.header().get("id")  # type: ignore[assignment]
        self._report = opened.report

    def _refresh_migrated(self) -> int:
        """``refresh`` of a version 1/2 session not rewritten yet: another process
        appended to the old file, so the grown file is migrated again (record ids
        depend only on the header and the record's position: the entries read before
        keep theirs) and its index replaces this one."""
        assert self._file is not None
        data = self._file.migrated_growth()
        if data is None:
            return 0
        index, report, m = migrated_index(self._index_cls, data, self._file.path)
        last, before = self._index.file_leaf(), len(self._index)
        self._index.close()
        self._index = index
        self._file.remigrated(m, len(data))
        self._report = report
        if self._leaf == last:
            self._leaf = index.file_leaf()
        return len(index) - before

    def _new_header(self, session_id: str | None, parent_session: str | None, metadata: dict[str, Any] | None = None,
                    path: str | None = None, timestamp: str | None = None) -> None:
        """A new session's image (header only, its ``timestamp`` now unless given), to
        be written at ``path`` (default: Pi's name in the session folder; nowhere in
        memory) when the storage's first write is due."""
        self._session_id = session_id if session_id is not None else self._new_session_id()
        if timestamp is None:
            timestamp = self._now()
        header = _shapes.header(self._session_id, timestamp, self._cwd, parent_session, metadata)
        self._set_image([encode_entry(header) + b"\n"], has_assistant=False)
        if not self._persist:
            self._file = None
            return
        if path is None:
            path = os.path.join(self._session_dir, session_file_name(timestamp, self._session_id))
        self._file = SessionFile(path)
        self._st.write_if_due()

    def _set_image(self, lines: builtins.list[bytes], has_assistant: bool) -> None:
        if self._index is not None:
            self._index.close()
        self._st.start(self._index_cls.from_image(b"".join(lines)), lines, has_assistant)
        self._file_version = CURRENT_VERSION
        self._report = self._index.load_report()

    def new_session(self, id: str | None = None, parent_session: str | None = None) -> str | None:  # noqa: A002
        """Start a new, empty session (Pi's ``newSession``); nothing is written yet.

        Args:
            id: the session id; a new UUID v7 if ``None``.
            parent_session: recorded as the header's ``parentSession``.

        Returns:
            The new session file's path, or ``None`` in memory.

        Raises:
            TypeError: ``id`` or ``parent_session`` is not a str or ``None``.
        """
        _require("id", id, (str, type(None)))
        _require("parent_session", parent_session, (str, type(None)))
        self._release()
        self._new_header(id, parent_session)
        return self.session_file

    def set_session_file(self, path: str) -> None:
        """Switch to another session file (Pi's ``setSessionFile``): load it if it
        exists, else start a new session that will be written there.

        Raises:
            TypeError: ``path`` is not a path.
            InvalidSessionError: the file exists but has no valid header (untouched).
        """
        _require_path("path", path)
        self._load_file(_abspath(path))

    # ------------------------------------------------------------- staleness
    def _check(self) -> None:
        if self._closed or self._st.closed:
            raise SessionError("session manager is closed")
        if self._file is not None:
            self._file.check(self._index)

    # --------------------------------------------------------------- writing
    def _release(self) -> None:
        if self._file is not None:
            self._file.release()

    def _append(self, entry: dict[str, Any]) -> str:
        """Index and persist one new entry (Pi's ``_appendEntry`` + ``_persist``)."""
        self._check()
        if entry["id"] in self._index:
            raise ValueError(f"entry id {entry['id']} is already in the session")  # a bad _new_id override
        line = encode_entry(entry)
        # Refuse what the loader would skip (e.g. nesting past MAX_DEPTH) before a byte is
        # written: an appended line must reload as the entry it claims to be.
        decode_line(line)
        try:
            entry_id, _ = self._st.append_line(line, entry)
        finally:
            # Lines of another process taken in, or part of a failed line indexed as a
            # torn piece: the report changed.
            if self._st.report_changed:
                self._st.report_changed = False
                self._report = self._index.load_report()
        return entry_id

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
        if self._file is None:
            return None
        return self._file.migrate(self._index)

    def flush(self) -> str | None:
        """Write a new session's file now, before its first assistant message (Pi's
        coding agent waits for one; Pi 0.99 writes at the first user message). The
        header and every entry appended so far go to disk in the one exclusive create
        of the first write (docs/CONTRACT.md §4); from then on each append is written
        at once. For stores that must keep what they acknowledge (the framework
        sessions of ``sessiontree.agents`` and ``sessiontree.langgraph``). For a session
        already on disk it takes the writer's lock now, if this process does not hold it,
        and indexes what other processes appended before it (the leaf follows them as
        :meth:`refresh` moves it): a store that reads the path and then appends to it
        does so after the file's last entry, never beside one another process wrote in
        between. Does nothing in memory or while a migration is pending.

        Returns:
            The session file's path, or ``None`` in memory.

        Raises:
            SessionFileExistsError: a file appeared at the path (nothing is written;
                the entries stay in memory).
            SessionLockedError: another writer holds the file.
            StaleSessionError: the file was truncated or replaced.
            OSError: the write failed (nothing is left at the path).
        """
        self._check()
        if self._file is not None and not self._file.on_disk:
            self._st.ready = True  # the first write is due now, whatever comes next
            self._st.write_if_due()
        elif self._file is not None and not self._file.migration_pending:
            last = self._index.file_leaf()
            if self._file.hold(self._index):
                if self._leaf == last:
                    self._leaf = self._index.file_leaf()
                self._report = self._index.load_report()
        return self.session_file

    def _entry(self, etype: str, **fields: Any) -> dict[str, Any]:
        return _shapes.entry(etype, self._new_id(self._index), self._leaf, self._now(), **fields)

    # ---------------------------------------------------------------- appends
    def append_message(self, message: dict[str, Any]) -> str:
        """Append a ``message`` entry (Pi's ``appendMessage``).

        Args:
            message: the agent message (``role`` user / assistant / toolResult / system /
                bashExecution / custom ...), stored as given.

        Returns:
            The new entry's id (the new leaf).

        Raises:
            TypeError: ``message`` is not a dict (nothing is written).
        """
        _require("message", message, dict)
        return self._append(self._entry("message", message=message))

    def append_thinking_level_change(self, level: str) -> str:
        """Append a ``thinking_level_change`` entry; returns its id.

        Raises:
            TypeError: ``level`` is not a str.
        """
        _require("level", level, str)
        return self._append(self._entry("thinking_level_change", thinkingLevel=level))

    def append_active_tools_change(self, active_tool_names: builtins.list[str]) -> str:
        """Append an ``active_tools_change`` entry (agent-core's harness,
        ``ActiveToolsChangeEntry``): the tools the model may call from here on; the last
        one on the path is the context's ``active_tool_names``. Returns its id.

        Key order: ``type, id, parentId, timestamp, activeToolNames``.

        Raises:
            TypeError: ``active_tool_names`` is not a list of str (nothing is written).
        """
        _require("active_tool_names", active_tool_names, builtins.list)
        for name in active_tool_names:
            _require("active_tool_names[]", name, str)
        return self._append(self._entry("active_tools_change", activeToolNames=builtins.list(active_tool_names)))

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Append a ``model_change`` entry (``provider``, ``modelId``); returns its id.

        Raises:
            TypeError: an argument is not a str.
        """
        _require("provider", provider, str)
        _require("model_id", model_id, str)
        return self._append(self._entry("model_change", provider=provider, modelId=model_id))

    def append_usage(
        self, kind: str, provider: str, model: str, usage: dict[str, Any], note: str | None = None
    ) -> str:
        """Append a ``usage`` entry (Pi 0.87+ ``appendUsage``): usage not tied to a
        message, e.g. cache warming. Not part of the context.

        Key order is Pi's: ``type, id, parentId, timestamp, kind, provider, model, usage,
        note?``; ``note`` is written only when it is a non-empty string (Pi: when truthy).

        Args:
            kind: what the usage was for, e.g. ``"cache_warm"``.
            provider: the provider, e.g. ``"anthropic"``.
            model: the model id.
            usage: Pi's usage object (``input``, ``output``, ``cacheRead``,
                ``cacheWrite``, ``totalTokens``, ``cost`` in dollars), stored as given.
            note: free text, or ``None``.

        Returns:
            The new entry's id.

        Raises:
            TypeError: an argument of the wrong type (nothing is written).
        """
        for name, value in (("kind", kind), ("provider", provider), ("model", model)):
            _require(name, value, str)
        _require("usage", usage, dict)
        _require("note", note, (str, type(None)))
        return self._append(
            self._entry("usage", kind=kind, provider=provider, model=model, usage=usage, note=note or UNDEFINED)
        )

    def append_context_edit(self, target_id: str, replacement: dict[str, Any] | None) -> str:
        """Append a ``context_edit`` entry (Pi 0.87+ ``appendContextEdit``): from here on,
        the target contributes other content to the context, or (``None``) nothing.

        Pi's checks, in Pi's order: the replacement is ``None`` or a dict whose
        ``content`` is a str or a list; the target exists; it is on the current branch
        (root -> leaf); it is a user, assistant or toolResult message or a
        ``custom_message``. A string replacement for an assistant or toolResult target is
        stored as one text block (``{"content": [{"type": "text", "text": ...}]}``); any
        other replacement is stored as given.

        Args:
            target_id: the entry to edit.
            replacement: ``{"content": str | list}``, or ``None`` to leave the target out.

        Returns:
            The new entry's id.

        Raises:
            TypeError: the replacement is not ``None`` or ``{"content": str | list}``.
            EntryNotFoundError: no such entry.
            ContextEditError: the target is not on the current branch, or contributes no
                editable content.
        """
        self._check()
        if replacement is not None and not (
            isinstance(replacement, dict) and isinstance(replacement.get("content"), (str, list))
        ):
            raise TypeError("Context edit replacement must be null or contain string/array content")
        _require("target_id", target_id, str)
        target = self._index.get(target_id)
        if target is None:
            raise EntryNotFoundError(target_id)
        if target_id not in self._index.path_ids(self._leaf):
            raise ContextEditError(f"Entry {target_id} is not on the active branch")
        message = target.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        if not (target.get("type") == "custom_message" or (target.get("type") == "message" and role in _EDITABLE)):
            raise ContextEditError(f"Entry {target_id} does not contribute editable model content")
        if replacement is not None and role in ("assistant", "toolResult") and isinstance(replacement["content"], str):
            replacement = {"content": [{"type": "text", "text": replacement["content"]}]}
        return self._append(self._entry("context_edit", targetId=target_id, replacement=replacement))

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int | float,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
    ) -> str:
        """Append a ``compaction`` entry (Pi 0.99's ``appendCompaction``).

        Key order is Pi's: ``type, id, parentId, timestamp, summary, firstKeptEntryId,
        tokensBefore, details?, usage?, fromHook?, systemMessage?``. ``systemMessage`` is
        the system state of the current context (Pi's ``getCurrentSystemMessage``, see
        :func:`sessiontree.current_system_message`) with the compaction's time as its
        ``timestamp``, written when the context holds one.

        Args:
            summary: the summary text.
            first_kept_entry_id: the first entry kept after the summary; it must be on
                the current path (root -> leaf). ``None``: keep nothing before the
                compaction (a self-retaining compaction: ``firstKeptEntryId`` is its own id).
            tokens_before: context size before compaction.
            details: extension data; ``None`` leaves it out (``NULL`` writes ``null``).
            from_hook: whether an extension produced it; ``None`` leaves it out.
            usage: the usage of the summarisation call; ``None`` leaves it out.

        Returns:
            The new entry's id.

        Raises:
            TypeError: an argument of the wrong type (nothing is written).
            FirstKeptEntryError: ``first_kept_entry_id`` is not on the current path
                (Pi accepts it and then keeps no messages; CONTRACT §5 point 4).
        """
        _require("summary", summary, str)
        _require("first_kept_entry_id", first_kept_entry_id, (str, type(None)))
        _require_number("tokens_before", tokens_before)
        _require("usage", usage, (dict, type(None), type(NULL)))
        _require("from_hook", from_hook, (bool, type(None), type(NULL)))
        self._check()
        if first_kept_entry_id is not None and first_kept_entry_id not in self._index.path_ids(self._leaf):
            raise FirstKeptEntryError(
                f"firstKeptEntryId {first_kept_entry_id} is not on the current path (leaf {self._leaf})"
            )
        entry_id = self._new_id(self._index)
        timestamp = self._now()
        system = current_system_message(self.build_session_projection().messages)
        return self._append(
            _shapes.entry(
                "compaction",
                entry_id,
                self._leaf,
                timestamp,
                summary=summary,
                firstKeptEntryId=entry_id if first_kept_entry_id is None else first_kept_entry_id,
                tokensBefore=tokens_before,
                details=_optional(details),
                usage=_optional(usage),
                fromHook=_optional(from_hook),
                systemMessage=UNDEFINED if system is None else {**system, "timestamp": parse_iso_ms(timestamp)},
            )
        )

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Append a ``custom`` entry (extension state; not in the context).

        Key order is Pi's: ``type, customType, data?, id, parentId, timestamp``.

        Args:
            custom_type: the extension's name for its entries.
            data: any JSON value; ``None`` leaves it out (``NULL`` writes ``null``).

        Raises:
            TypeError: ``custom_type`` is not a str.
        """
        _require("custom_type", custom_type, str)
        return self._append(self._entry("custom", customType=custom_type, data=_optional(data)))

    def append_session_info(self, name: str) -> str:
        """Append a ``session_info`` entry (the display name), stored as Pi 0.99 stores
        it: runs of CR/LF become one space, then JavaScript's ``trim`` (an empty result
        clears the session name).

        Raises:
            TypeError: ``name`` is not a str (nothing is written).
        """
        _require("name", name, str)
        return self._append(self._entry("session_info", name=_shapes.session_name(name)))

    def append_custom_message_entry(self, custom_type: str, content: Any, display: bool, details: Any = None) -> str:
        """Append a ``custom_message`` entry (becomes a ``custom`` message in the context).

        Key order is Pi's: ``type, customType, content, display, details?, id,
        parentId, timestamp``.

        Args:
            custom_type: the extension's name for its messages.
            content: a str or a list of content blocks.
            display: whether Pi's interface shows it.
            details: extension data; ``None`` leaves it out (``NULL`` writes ``null``).

        Raises:
            TypeError: ``custom_type`` is not a str, ``content`` not a str or list, or
                ``display`` not a bool (nothing is written).
        """
        _require("custom_type", custom_type, str)
        _require("content", content, (str, list))
        _require("display", display, bool)
        return self._append(
            self._entry(
                "custom_message", customType=custom_type, content=content, display=display, details=_optional(details)
            )
        )

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (truthy ``label``) or clear (``None`` / ``""``) the label of an entry.

        ``None`` writes no ``label`` key; ``""`` is written as is (both clear).

        Raises:
            TypeError: ``target_id`` is not a str or ``label`` not a str or ``None``.
            EntryNotFoundError: ``target_id`` is not in the session.
        """
        _require("target_id", target_id, str)
        _require("label", label, (str, type(None), type(UNSET)))
        self._check()
        if target_id not in self._index:
            raise EntryNotFoundError(target_id)
        return self._append(self._entry("label", targetId=target_id, label=_optional(label)))

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

    def get_entries_by_id(self, entry_ids: Iterable[str], *, clip: int | None = None) -> builtins.list[dict[str, Any] | None]:
        """The entries with these ids, in the order given (``None`` for an id not in the
        session): what :meth:`get_entry` gives for each, in one call (one staleness
        check; the native backend decodes the lines not decoded yet in one batch).

        Args:
            entry_ids: ids (any iterable of them).
            clip: for viewers that show only the start of each entry: every string
                value of more than ``clip`` characters (code points) is cut to its first
                ``clip``; object keys and the top-level ``id``, ``parentId`` and ``type``
                stay whole. The entries are then copies, and the native backend cuts
                the lines before it decodes them (a fraction of the decode on long tool
                output). ``None``: the entries as they are.

        Raises:
            TypeError: ``entry_ids`` is a single ``str``/``bytes``, or ``clip`` is not an int.
            ValueError: ``clip`` is negative.
        """
        if isinstance(entry_ids, (str, bytes)):
            raise TypeError("entry_ids must be an iterable of ids, not one id")
        if clip is not None:
            if isinstance(clip, bool) or not isinstance(clip, int):
                raise TypeError(f"clip must be an int or None, not {type(clip).__name__}")
            if clip < 0:
                raise ValueError(f"clip must be 0 or more, not {clip}")
            clip = min(clip, sys.maxsize)  # no string is longer; the core takes a machine word
        self._check()
        ids = builtins.list(entry_ids)
        return self._index.get_many(ids, clip)

    def get_lines_by_id(self, entry_ids: Iterable[str]) -> builtins.list[bytes | None]:
        """The JSON text of the entries with these ids as the session holds it (no line
        end; an entry of a glued line is its own bytes), in the order given (``None``
        for an id not in the session), with one staleness check: for a reader that
        renders the text itself (the exports). The native backend reads the lines from
        the file and checks each against the hash it indexed (a rewritten line raises
        ``StaleSessionError``); the python backend gives the bytes it read.

        Raises:
            TypeError: ``entry_ids`` is a single ``str``/``bytes``.
            StaleSessionError: the file changed under the session (native: a line's bytes).
        """
        if isinstance(entry_ids, (str, bytes)):
            raise TypeError("entry_ids must be an iterable of ids, not one id")
        self._check()
        return self._index.raw_lines(builtins.list(entry_ids))

    def get_children(self, entry_id: str) -> _Entries:
        """Direct children of an entry, in file order (Pi's ``getChildren``)."""
        self._check()
        return self._index.children(entry_id)

    def get_label(self, entry_id: str) -> str | None:
        """The entry's current label, or ``None``."""
        self._check()
        return self._index.label(entry_id)

    def get_labels(self) -> dict[str, str]:
        """Every current label: target id -> label, in the order Pi's ``labelsById`` map
        holds them (setting a label again keeps its place; clearing removes it). A
        target need not be an entry of the session (Pi labels any id)."""
        self._check()
        return self._index.labels()

    def get_branch(self, from_id: str | None = None) -> _Entries:
        """Entries from the root down to ``from_id`` (default: the leaf); empty if unknown."""
        self._check()
        return self._index.path(from_id if from_id is not None else self._leaf)

    def get_tree(self) -> builtins.list[SessionTreeNode]:
        """The whole session as a forest (Pi's ``getTree``): roots in file order,
        children oldest first; orphans, cycle breaks and self-parented entries are roots.

        On the native backend a node's ``entry`` is decoded when first read; read after
        :meth:`close`, one not read before raises ``SessionError``."""
        self._check()
        return self._index.tree()

    # -------------------------------------------------------------- structure
    # Answered from the index without decoding entries (the native backend reads its
    # columns; the python backend its loader's lists): tree questions at index speed.

    def get_shape(self) -> TreeShape:
        """The whole tree by ids, types, roles, links and times, decoding no entry.

        Returns:
            A :class:`~sessiontree.TreeShape` snapshot: entries numbered in file order,
            ``parents`` after cycle breaking (-1 for a root), ``roots`` in file order,
            ``children(i)`` in :meth:`get_tree` order (oldest first). Later appends do
            not change it.
        """
        self._check()
        return self._index.shape()

    def parent_of(self, entry_id: str) -> str | None:
        """The id of the entry's parent in the tree (after cycle breaking, so an orphan
        or the entry that breaks a cycle has none).

        Returns:
            The parent's id, ``None`` for a root.

        Raises:
            EntryNotFoundError: no such entry.
        """
        self._check()
        if entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        return self._index.parent_id(entry_id)

    def get_children_ids(self, entry_id: str) -> builtins.list[str]:
        """Ids of the entry's direct children in file order (:meth:`get_children`'s
        order); empty for a leaf or an unknown id."""
        self._check()
        return self._index.children_ids(entry_id)

    def get_path_ids(self, from_id: str | None = None) -> builtins.list[str]:
        """Ids from the root down to ``from_id`` (default: the leaf), as
        :meth:`get_branch` lists the entries; empty if unknown (or no leaf)."""
        self._check()
        return self._index.path_ids(from_id if from_id is not None else self._leaf)

    def get_leaf_ids(self) -> builtins.list[str]:
        """Ids of every entry without children (the tips of all branches, the current
        leaf among them when it has none), in file order."""
        self._check()
        return self._index.leaf_ids()

    def get_entry_type(self, entry_id: str) -> str | None:
        """The entry's ``type``: the string as written when it is one of Pi's entry
        types (``schema.ENTRY_TYPES``), ``"?"`` for any other value; ``None`` when there
        is no such entry."""
        self._check()
        return self._index.entry_type(entry_id)

    def resolve_id(self, prefix: str) -> str:
        """The id of the one entry whose id starts with ``prefix`` (as git resolves an
        abbreviated commit); an exact id always wins.

        Raises:
            TypeError: ``prefix`` is not a str.
            EntryNotFoundError: no id starts with it.
            ValueError: several do (the message says how many).
        """
        _require("prefix", prefix, str)
        self._check()
        if prefix in self._index:
            return prefix
        found, count = self._index.ids_with_prefix(prefix, 1)
        if count == 0:
            raise EntryNotFoundError(prefix)
        if count > 1:
            raise ValueError(f"id prefix {prefix!r} is ambiguous: {count:,} entries start with it")
        return found[0]

    def get_usage_totals(self) -> UsageTotals:
        """Tokens and cost of every assistant message on every branch, summed as
        :class:`~sessiontree.UsageTotals` says (the native backend reads only the
        assistant lines and builds no dicts)."""
        self._check()
        return self._index.usage_totals()

    @property
    def cache_budget(self) -> int | None:
        """Native backend: bytes of source lines whose decoded entries it keeps
        (default 2 GiB or ``$SESSIONTREE_CACHE_BYTES``; the dicts take 2-3x that).
        Settable; lowering it drops the oldest entries. It belongs to the current
        index: a migrated or branched session starts with the default again. ``None``
        for the python backend, which keeps every entry."""
        return getattr(self._index, "cache_budget", None)

    @cache_budget.setter
    def cache_budget(self, value: int) -> None:
        """Raises ``TypeError`` (not an int) or ``ValueError`` (negative), on both backends."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"cache_budget must be an int, not {type(value).__name__}")
        if value < 0:
            raise ValueError(f"cache_budget must be 0 or more, not {value}")
        if hasattr(self._index, "cache_budget"):
            self._index.cache_budget = value  # type: ignore[attr-defined]

    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry; the next append starts a new branch.

        Raises:
            TypeError: ``entry_id`` is not a str.
            EntryNotFoundError: no such entry.
        """
        _require("entry_id", entry_id, str)
        self._check()
        if entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        self._move_leaf(entry_id)

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next append is a new root.

        With agent-core's leaf entries (``leaf_entries``) the move is written as a
        ``leaf`` entry; then this raises what an append raises.
        """
        if self._st.leaf_entries:
            self._check()
        self._move_leaf(None)

    def _move_leaf(self, leaf_id: str | None) -> None:
        """The leaf moves; with ``leaf_entries`` as a ``leaf`` entry (agent-core's
        ``setLeafId``: a child of the leaf before the move)."""
        if self._st.leaf_entries:
            self._append(self._entry("leaf", targetId=leaf_id))
        else:
            self._leaf = leaf_id

    def branch_with_summary(
        self,
        entry_id: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
    ) -> str:
        """Move the leaf to ``entry_id`` (``None``: before the first entry) and append a
        ``branch_summary`` there (``fromId`` = ``entry_id`` or ``"root"``, as Pi 0.73
        writes it; docs/CONTRACT.md).

        Key order is Pi's: ``type, id, parentId, timestamp, fromId, summary, details?,
        usage?, fromHook?``; ``None`` leaves an optional field out.

        Raises:
            TypeError: an argument of the wrong type (nothing is written).
            EntryNotFoundError: ``entry_id`` is not ``None`` and not in the session.
        """
        _require("entry_id", entry_id, (str, type(None)))
        _require("summary", summary, str)
        _require("usage", usage, (dict, type(None), type(NULL)))
        _require("from_hook", from_hook, (bool, type(None), type(NULL)))
        self._check()
        if entry_id is not None and entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        self._move_leaf(entry_id)
        return self._append(
            self._entry(
                "branch_summary",
                fromId=entry_id if entry_id is not None else "root",
                summary=summary,
                details=_optional(details),
                usage=_optional(usage),
                fromHook=_optional(from_hook),
            )
        )

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Continue in a new session holding only the path root -> ``leaf_id``.

        As Pi 0.99 writes it (``createBranchedSession``): label entries are left out of
        the copied path and each copied entry's ``parentId`` becomes the previous copied
        entry (the first one's ``null``); a compaction's ``firstKeptEntryId`` that named
        a dropped label entry moves to the next copied entry; then one new ``label`` entry
        per current label of a copied entry (in label-map order, with the timestamp of
        the label entry that set it) is appended after the path. So the new file loads
        with no missing parents. Entries copied unchanged keep their original line bytes;
        a re-linked one is written again with its keys in their order. The new header has
        ``parentSession`` = this session's file (when persisted). The new file is written
        at once if the path holds an assistant message, else at the first assistant
        message. This manager then continues in the new session; if the new session still
        has problems (e.g. a compaction whose kept entry is off its path), a
        :class:`LoadReportWarning` says so and ``load_report`` lists them.

        Returns:
            The new session file, or ``None`` in memory.

        Raises:
            TypeError: ``leaf_id`` is not a str.
            EntryNotFoundError: no such entry.
            OSError: the new file cannot be written (naming it; nothing is left at its
                name, and the next append writes it).
        """
        _require("leaf_id", leaf_id, str)
        self._check()
        path = self._index.path(leaf_id)
        if not path:
            raise EntryNotFoundError(leaf_id)
        index = self._index
        lines: builtins.list[bytes] = []
        kept: builtins.list[str] = []
        moved_to: dict[str, str] = {}  # dropped label entry -> the next copied entry
        dropped: builtins.list[str] = []
        parent: str | None = None
        for e in path:
            eid = e["id"]
            if e.get("type") == "label":
                dropped.append(eid)
                continue
            for label_id in dropped:
                moved_to[label_id] = eid
            dropped.clear()
            first_kept = e.get("firstKeptEntryId") if e.get("type") == "compaction" else None
            new_first_kept = moved_to.get(first_kept, first_kept) if isinstance(first_kept, str) and first_kept != eid else first_kept
            if e.get("parentId", UNDEFINED) == parent and new_first_kept == first_kept:
                lines.append(index.raw_line(eid) + b"\n")  # type: ignore[operator]
            else:
                copy = dict(e)  # {...entry, parentId}: keys keep their order
                copy["parentId"] = parent
                if new_first_kept != first_kept:
                    copy["firstKeptEntryId"] = new_first_kept
                lines.append(encode_entry(copy) + b"\n")
            kept.append(eid)
            parent = eid
        kept_set = set(kept)
        has_assistant = any(_is_assistant(index.get(eid)) for eid in kept)
        session_id = self._new_session_id()
        timestamp = self._now()
        parent_session = self.session_file if self._persist else None
        lines.insert(0, encode_entry(_shapes.header(session_id, timestamp, self._cwd, parent_session)) + b"\n")
        taken = set(kept_set)
        for target, label in index.labels().items():
            if target not in kept_set:
                continue
            label_id = self._new_id(taken)
            taken.add(label_id)
            label_entry = _shapes.entry(
                "label", label_id, parent, index.label_timestamp(target), targetId=target, label=label  # type: ignore[arg-type]
            )
            lines.append(encode_entry(label_entry) + b"\n")
            parent = label_id
        self._release()
        self._session_id = session_id
        self._set_image(lines, has_assistant)
        if self._report:
            warnings.warn(
                f"the branched session has {len(self._report)} problem(s); see SessionManager.load_report",
                LoadReportWarning,
                stacklevel=2,
            )
        if not self._persist:
            self._file = None
            return None
        self._file = SessionFile(os.path.join(self._session_dir, session_file_name(timestamp, session_id)))
        self._st.write_if_due()
        return self._file.path

    def _context_leaf(self, leaf_id: Any) -> str | None:
        # Pi's buildSessionPath: null is "before the first entry"; undefined the current
        # leaf; an id not in the session the last entry.
        if leaf_id is UNDEFINED:
            leaf_id = self._leaf
        if leaf_id is None:
            return None
        return leaf_id if leaf_id in self._index else self._index.last_id()

    def build_session_context(self, leaf_id: Any = UNDEFINED) -> SessionContext:
        """What is sent to the LLM at a leaf (Pi's ``buildSessionContext``): the
        flattening of :meth:`build_session_projection`.

        Args:
            leaf_id: default the current leaf; ``None`` gives an empty context; an id
                not in the session means the last entry (Pi's fallback).
        """
        self._check()
        leaf = self._context_leaf(leaf_id)
        if leaf is None:
            return SessionContext()
        return assemble_context(self._index.context_plan(leaf), self._index.get)

    def build_session_projection(self, leaf_id: Any = UNDEFINED) -> SessionProjection:
        """The context at a leaf entry by entry (Pi 0.99's ``buildSessionProjection``):
        each context entry with the messages it contributes after the ``context_edit``
        entries,
        plus the flattened messages, thinking level and model.

        Args:
            leaf_id: as for :meth:`build_session_context`.
        """
        self._check()
        leaf = self._context_leaf(leaf_id)
        if leaf is None:
            return SessionProjection()
        return assemble_projection(self._index.context_plan(leaf), self._index.get)

    # ---------------------------------------------------------------- session
    def get_entries(self) -> _Entries:
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
        return self._file.path if self._file is not None else None

    @property
    def is_persisted(self) -> bool:
        """Whether this session is written to a file at all (False for ``in_memory``)."""
        return self._persist

    @property
    def file_version(self) -> Any:
        """The header's ``version`` as the file holds it (``None`` when absent, as in
        version 1 files); a migrated session reports the version it was migrated from.
        A new session reports 3."""
        return self._file_version

    @property
    def backend(self) -> str:
        """``"python"`` or ``"native"``."""
        return self._index_cls.backend

    @property
    def load_report(self) -> builtins.list[LoadIssue]:
        """Problems found when the file was loaded (and by later ``refresh`` calls)."""
        if self._st.report_changed:  # an append through ``storage`` took in other lines
            self._st.report_changed = False
            self._report = self._index.load_report()
        return builtins.list(self._report)

    def refresh(self) -> int:
        """Index complete lines another process appended to the file.

        Returns:
            How many entries were added (0 for a session not on disk).

        Raises:
            StaleSessionError: the file was truncated or replaced.
        """
        self._check()
        if self._file is None:
            return 0
        if self._file.migration_pending:
            return self._refresh_migrated()
        last = self._index.file_leaf()
        added = self._file.refresh(self._index)
        if not self._file.on_disk:
            return 0
        if added and self._leaf == last:
            self._leaf = self._index.file_leaf()
        # Junk lines, duplicates or a torn tail change the report without adding entries.
        self._report = self._index.load_report()
        return added

    def to_arrow(self, table: str = "entries") -> Any:
        """One table of this session as an Arrow stream (docs/TABLES.md).

        The result is a lazy ``pyarrow.RecordBatchReader``: it speaks the Arrow
        PyCapsule stream interface (``__arrow_c_stream__``), so ``pyarrow.table(r)``,
        ``polars.DataFrame(r)`` and DuckDB (``duckdb.sql("select * from r")``) read it
        without a copy. The index columns come from the backend's index; the others
        from decoding the entries, batch by batch, as the stream is read. Read it
        before the session is closed; entries appended after the call are not in it.

        Args:
            table: ``"entries"`` (one row per entry, the current path at the leaf
                marked), ``"tool_calls"`` (each tool call joined with its result) or
                ``"sessions"`` (this session's one row).

        Raises:
            ValueError: an unknown table.
            ImportError: pyarrow is not installed (``pip install pyarrow``).
        """
        self._check()
        from ._tables import session_reader  # pyarrow is imported with it (the `arrow` extra)

        return session_reader(self, self._index, table)

    def close(self) -> None:
        """Release the writer lock and the index, with the entries it decoded
        (idempotent)."""
        self._release()
        if self._index is not None and not self._closed:
            self._index.close()
        self._closed = True
        self._st.closed = True  # its storage too: a later call through it must not write

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
        where = self.session_file or "<memory>"
        return f"<SessionManager {self._session_id} {where} backend={self.backend} entries={len(self._index)}>"
