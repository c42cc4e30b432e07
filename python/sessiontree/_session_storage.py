"""Where a session's entries and its leaf are kept: agent-core's ``SessionStorage``.

Pi has two session layers. The coding agent's ``SessionManager`` (``_manager.py``) is
one; below it agent-core has its own (``packages/agent/src/harness/types.ts``
``SessionStorage``, implemented by ``session/jsonl-storage.ts`` ``JsonlSessionStorage``
and ``session/memory-storage.ts`` ``InMemorySessionStorage``). Here the two meet: a
storage holds the session's index, its leaf and (for a file) the lines not written yet
and the file; :class:`~sessiontree.SessionManager` runs over one of the two classes
(``self._st``), and each class also answers agent-core's operations
(:class:`SessionStorage`), synchronously.

The seam is where the manager used to hand lines to ``_persist.SessionFile``: an entry
line goes to :meth:`InMemorySessionStorage.append_line`, which indexes it and moves the
leaf (loader rule 13), and :class:`JsonlSessionStorage` also writes it: held until the
first write (``first_write``), then one whole line per entry through the durable writer
(lock, exclusive creation, a torn piece sealed, fsync).

Options of a storage (agent-core's semantics are an option; the coding agent's are the
default):

* ``leaf_entries``: every leaf move (``set_leaf_id``, ``SessionManager.branch``,
  ``reset_leaf``, ``branch_with_summary``) is written as a ``leaf`` entry, a child of the
  leaf before it with ``targetId`` the new leaf (agent-core's ``setLeafId``). Off: a
  move lives in memory only (the coding agent's ``branch``).
* ``first_write`` (files): when a new session's file is created: ``"assistant"`` at the
  first assistant message (the coding agent, default), ``"message"`` at the first
  ``message`` entry of any role, ``"now"`` with the header at once (agent-core's
  ``JsonlSessionStorage.create``).
"""

from __future__ import annotations

import builtins
import os
import secrets
import time
import uuid
import warnings
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from . import _shapes
from ._args import abspath, require, require_path
from ._backend import TreeIndex
from ._filestate import stat_id
from ._jsonl import decode_line, encode_entry
from ._labels import agent_core_label
from ._persist import Opened, SessionFile, open_session
from ._select import index_class
from ._time import now_iso
from .errors import EntryExistsError, EntryNotFoundError, LoadReportWarning, SessionError, SessionFileExistsError

__all__ = [
    "FirstWrite",
    "InMemorySessionStorage",
    "JsonlSessionStorage",
    "SessionMetadata",
    "SessionStorage",
]

S = TypeVar("S", bound="InMemorySessionStorage")

FirstWrite = Literal["assistant", "message", "now"]
_FIRST_WRITES = ("assistant", "message", "now")


@dataclass(frozen=True)
class SessionMetadata:
    """agent-core's ``SessionMetadata`` / ``JsonlSessionMetadata`` of a session.

    Attributes:
        id: the header's ``id``.
        created_at: the header's ``timestamp`` (agent-core's ``createdAt``).
        cwd: the header's ``cwd``.
        path: the session file (``None`` in memory).
        parent_session_path: the header's ``parentSession``, when a string.
        metadata: the header's ``metadata``, when an object.
    """

    id: Any
    created_at: Any
    cwd: Any = None
    path: str | None = None
    parent_session_path: str | None = None
    metadata: dict[str, Any] | None = field(default=None, compare=True)


@runtime_checkable
class SessionStorage(Protocol):
    """agent-core's ``SessionStorage`` (``packages/agent/src/harness/types.ts``), with
    Python names and synchronous calls. Entries are dicts equal to ``json.loads`` of
    their line. ``isinstance(x, SessionStorage)`` checks that ``x`` has the methods (not
    their signatures)."""

    def get_metadata(self) -> SessionMetadata: ...
    def get_leaf_id(self) -> str | None: ...
    def set_leaf_id(self, leaf_id: str | None) -> None: ...
    def create_entry_id(self) -> str: ...
    def append_entry(self, entry: dict[str, Any]) -> None: ...
    def get_entry(self, entry_id: str) -> dict[str, Any] | None: ...
    def find_entries(self, entry_type: str) -> builtins.list[dict[str, Any]]: ...
    def get_label(self, entry_id: str) -> str | None: ...
    def get_path_to_root(self, leaf_id: str | None) -> builtins.list[dict[str, Any]]: ...
    def get_entries(self) -> builtins.list[dict[str, Any]]: ...


def new_session_id() -> str:
    """A new session id (UUID v7, as Pi 0.73 uses)."""
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    return _shapes.uuid7(int(time.time() * 1000), rand >> 68, rand)


def _made(storage: S, cwd: str | None, path: str | os.PathLike[str] | None, session_id: str | None,
          parent_session: str | None, metadata: dict[str, Any] | None, backend: str | None,
          created_at: str | None = None) -> S:
    """``storage`` holding the session at ``path`` (read if it exists, else a new one to
    be written there) or a new one in memory (``path`` ``None``), with this header's
    fields: the storages' own constructors (agent-core's ``create`` and ``open``).

    Raises:
        TypeError: an argument of the wrong type.
        InvalidSessionError: ``path`` holds no valid session.
        SessionFileExistsError: a new session written at once found ``path`` taken.
    """
    require("cwd", cwd, (str, type(None)))
    require_path("path", path, optional=True)
    require("session_id", session_id, (str, type(None)))
    require("parent_session_path", parent_session, (str, type(None)))
    require("metadata", metadata, (dict, type(None)))
    require("created_at", created_at, (str, type(None)))
    index_cls = index_class(backend)
    full = abspath(path) if path is not None else None
    if full is not None and stat_id(full) is not None:
        storage.read(index_cls, full)
        return storage
    header = _shapes.header(session_id if session_id is not None else new_session_id(),
                            created_at if created_at is not None else now_iso(),
                            cwd if cwd is not None else os.getcwd(), parent_session, metadata)
    line = encode_entry(header) + b"\n"
    storage.start(index_cls.from_image(line), [line], False)
    storage.file = SessionFile(full) if full is not None else None
    storage.write_if_due()
    return storage


def new_entry_id(taken: Container[str]) -> str:
    """A new entry id: 8 lowercase hex chars not in ``taken`` (Pi's ``generateId``)."""
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


class InMemorySessionStorage:
    """A session kept in memory only (agent-core's ``InMemorySessionStorage``).

    Build one with :meth:`create`; a :class:`~sessiontree.SessionManager` made with
    ``in_memory`` runs over one (``SessionManager.storage``).

    Attributes:
        index: the backend index of the session image (header and entry lines).
        leaf: the current leaf (``None``: before the first entry).
        leaf_entries: write every leaf move as a ``leaf`` entry (agent-core's semantics).
        new_id: ``new_id(taken)`` gives a new entry id (the manager's hook).
        now: the current time as written (the manager's hook).
    """

    file: SessionFile | None = None

    def __init__(self, *, leaf_entries: bool = False) -> None:
        if not isinstance(leaf_entries, bool):
            raise TypeError(f"leaf_entries must be a bool, not {type(leaf_entries).__name__}")
        self.index: TreeIndex = None  # type: ignore[assignment]  # set by the manager
        self.leaf: str | None = None
        self.leaf_entries = leaf_entries
        self.new_id: Callable[[Container[str]], str] = new_entry_id
        self.now: Callable[[], str] = now_iso
        # Lines of an image not written yet (header first) and whether the first write
        # is due (files only; kept here so that a manager treats both alike).
        self.pending: builtins.list[bytes] = []
        self.ready = False
        # An append took in lines of another process too: the load report changed.
        self.report_changed = False
        self.closed = False

    # ------------------------------------------------------------ construction
    @classmethod
    def create(
        cls,
        cwd: str | None = None,
        *,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        created_at: str | None = None,
        leaf_entries: bool = False,
        backend: str | None = None,
    ) -> InMemorySessionStorage:
        """A new, empty session in memory.

        Args:
            cwd: the header's ``cwd`` (the process's if ``None``).
            session_id: the header's ``id`` (a new UUID v7 if ``None``).
            metadata: the header's ``metadata`` (agent-core), left out if ``None``.
            created_at: the header's ``timestamp`` (now if ``None``).
            leaf_entries: agent-core's leaf moves (see the module).
            backend: ``"auto"``, ``"python"`` or ``"native"``.

        Raises:
            TypeError: an argument of the wrong type.
        """
        return _made(cls(leaf_entries=leaf_entries), cwd, None, session_id, None, metadata, backend, created_at)

    # ----------------------------------------------------------- the manager's
    def read(self, index_cls: type[TreeIndex], path: str) -> Opened:
        """Hold the session in the file at ``path``, read by the one open
        (``_persist.open_session``: checked, read again after a replacement, migrated in
        memory); what was held before is let go. Nothing changes if the open raises. A
        non-empty load report issues a :class:`LoadReportWarning`.

        Raises:
            InvalidSessionError: no valid header.
            OSError: it cannot be read.
            StaleSessionError: it kept changing while it was read.
        """
        opened = open_session(index_cls, path)
        if self.file is not None:
            self.file.release()
        if self.index is not None:
            self.index.close()
        self.loaded(opened.index, opened.file)  # an existing file: every append goes straight to it (Pi)
        if opened.report:
            warnings.warn(
                f"{path}: {len(opened.report)} problem(s) found while loading; see SessionManager.load_report",
                LoadReportWarning,
                stacklevel=4,  # the caller of SessionManager.open / JsonlSessionStorage.open
            )
        return opened

    def start(self, index: TreeIndex, lines: builtins.list[bytes], ready: bool) -> None:
        """Hold a new image: ``index`` of ``lines`` (not written yet); ``ready`` says the
        first write is due (the image holds an assistant message)."""
        self.index = index
        self.pending = lines
        self.leaf = index.file_leaf()
        self.ready = ready

    def loaded(self, index: TreeIndex, file: SessionFile | None) -> None:
        """Hold an image read from ``file``: every later entry goes straight to it."""
        self.index = index
        self.file = file
        self.pending = []
        self.ready = True
        self.leaf = index.file_leaf()

    def append_line(self, line: bytes, entry: dict[str, Any]) -> tuple[str, bool]:
        """Index one entry line (no LF) of ``entry`` and move the leaf after it.

        Returns:
            ``(entry id, changed)``: ``changed`` says the load report may have changed
            apart from the new entry.
        """
        entry_id = self.index.append_line(line)
        self.pending.append(line + b"\n")
        # The index applies rule 9 (a `leaf` entry whose target is no earlier entry
        # moves nothing), so memory and a reopen agree.
        self.leaf = self.index.file_leaf()
        return entry_id, False

    def write_if_due(self) -> None:
        """Nothing to write in memory."""

    def check(self) -> None:
        """Fail once the storage is closed (a file's is checked too:
        :meth:`JsonlSessionStorage.check`).

        Raises:
            SessionError: the storage (or the manager over it) was closed.
        """
        if self.closed:
            raise SessionError("session storage is closed")

    def close(self) -> None:
        """Drop the writer and its lock (files) and the index (idempotent); later calls
        raise ``SessionError``."""
        self.closed = True
        if self.index is not None:
            self.index.close()

    # ---------------------------------------------------- agent-core's interface
    def get_metadata(self) -> SessionMetadata:
        """The header as agent-core's metadata (``headerToSessionMetadata``)."""
        h = self.index.header()
        parent = h.get("parentSession")
        meta = h.get("metadata")
        return SessionMetadata(
            id=h.get("id"),
            created_at=h.get("timestamp"),
            cwd=h.get("cwd"),
            path=self.file.path if self.file is not None else None,
            parent_session_path=parent if isinstance(parent, str) else None,
            metadata=meta if isinstance(meta, dict) else None,
        )

    def get_leaf_id(self) -> str | None:
        """The current leaf (``None``: before the first entry)."""
        return self.leaf

    def set_leaf_id(self, leaf_id: str | None) -> None:
        """Move the leaf to ``leaf_id`` (``None``: before the first entry); with
        ``leaf_entries`` the move is written as a ``leaf`` entry (agent-core's
        ``setLeafId``: ``parentId`` the leaf before the move).

        Raises:
            TypeError: ``leaf_id`` is not a str or ``None``.
            EntryNotFoundError: no such entry.
        """
        if leaf_id is not None and not isinstance(leaf_id, str):
            raise TypeError(f"leaf_id must be a str or None, not {type(leaf_id).__name__}")
        self.check()
        if leaf_id is not None and leaf_id not in self.index:
            raise EntryNotFoundError(leaf_id)
        if self.leaf_entries:
            self.append_entry(
                _shapes.entry("leaf", self.create_entry_id(), self.leaf, self.now(), targetId=leaf_id)
            )
        self.leaf = leaf_id

    def create_entry_id(self) -> str:
        """A new entry id not in the session (8 hex characters, as Pi's)."""
        return self.new_id(self.index)

    def append_entry(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` as it is (its ``id``, ``parentId`` and ``timestamp`` given)
        and move the leaf after it by rule 9 (a ``leaf`` entry's target, nowhere when
        that is no earlier entry; else the entry), as a reopen finds it.

        Raises:
            TypeError: ``entry`` is not a dict with a non-empty string ``id``.
            EntryExistsError: its id is already in the session.
            ValueError: it cannot be written as a line that reads back as itself, or
                it is a header (``type`` ``"session"``, which rule 5 skips).
            OSError: the file cannot be written (files).
        """
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
            raise TypeError("entry must be a dict with a non-empty string id")
        self.check()
        if entry["id"] in self.index:
            raise EntryExistsError(f"Duplicate entry id {entry['id']}")
        if entry.get("type") == "session":  # rule 5: a later header is no entry
            raise ValueError("a session header cannot be appended as an entry")
        line = encode_entry(entry)
        decode_line(line)  # refuse what the loader would skip before a byte is written
        self.append_line(line, entry)

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        """The entry, or ``None``."""
        self.check()
        return self.index.get(entry_id) if isinstance(entry_id, str) else None

    def find_entries(self, entry_type: str) -> builtins.list[dict[str, Any]]:
        """Every entry of one ``type``, in file order."""
        self.check()
        return [e for e in self.index.entries() if e.get("type") == entry_type]

    def get_label(self, entry_id: str) -> str | None:
        """The entry's label, trimmed (agent-core's rule, ``_labels.agent_core_label``)."""
        self.check()
        return agent_core_label(self.index.label(entry_id)) if isinstance(entry_id, str) else None

    def get_path_to_root(self, leaf_id: str | None) -> builtins.list[dict[str, Any]]:
        """The entries from the root down to ``leaf_id`` (empty for ``None``).

        Raises:
            EntryNotFoundError: no such entry.
        """
        if leaf_id is None:
            return []
        self.check()
        if not isinstance(leaf_id, str) or leaf_id not in self.index:
            raise EntryNotFoundError(leaf_id)
        return self.index.path(leaf_id)

    def get_entries(self) -> builtins.list[dict[str, Any]]:
        """Every entry in file order."""
        self.check()
        return self.index.entries()


class JsonlSessionStorage(InMemorySessionStorage):
    """A session kept in a JSONL file (agent-core's ``JsonlSessionStorage``) through
    sessiontree's durable writer: the lock, the first write as one exclusive creation,
    whole-line appends, the native index.

    Build one with :meth:`create` or :meth:`open`; a :class:`~sessiontree.SessionManager`
    on a file runs over one (``SessionManager.storage``).

    Attributes:
        file: the session file and this process's hold on it.
        first_write: when a new session's file is created (see the module).
    """

    def __init__(self, *, leaf_entries: bool = False, first_write: FirstWrite = "assistant") -> None:
        super().__init__(leaf_entries=leaf_entries)
        if first_write not in _FIRST_WRITES:
            raise ValueError(f"first_write must be one of {', '.join(_FIRST_WRITES)}, not {first_write!r}")
        self.first_write = first_write

    @classmethod
    def create(  # type: ignore[override]
        cls,
        path: str | os.PathLike[str],
        *,
        cwd: str,
        session_id: str | None = None,
        parent_session_path: str | None = None,
        metadata: dict[str, Any] | None = None,
        created_at: str | None = None,
        leaf_entries: bool = False,
        first_write: FirstWrite = "assistant",
        backend: str | None = None,
    ) -> JsonlSessionStorage:
        """A new session to be written at ``path`` (agent-core's
        ``JsonlSessionStorage.create``): with ``first_write="now"`` the header is written
        at once, else with the first (assistant) message. The other arguments are the
        header's fields and the options (module docstring; ``created_at``: the
        header's ``timestamp``, now if ``None``).

        Raises:
            TypeError: an argument of the wrong type.
            ValueError: an unknown ``first_write``.
            SessionFileExistsError: ``path`` exists (``first_write="now"``; else at the
                first write).
            OSError: the file cannot be written.
        """
        if isinstance(path, (str, os.PathLike)) and os.path.lexists(path):
            raise SessionFileExistsError(f"{os.fspath(path)}: a file is already there (nothing is overwritten)")
        storage = cls(leaf_entries=leaf_entries, first_write=first_write)
        return _made(storage, cwd, path, session_id, parent_session_path, metadata, backend, created_at)

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, leaf_entries: bool = False, backend: str | None = None
    ) -> JsonlSessionStorage:
        """The session in the file at ``path`` (agent-core's ``JsonlSessionStorage.open``),
        read by sessiontree's loader: the leaf is the file's (rule 13), damaged lines are
        skipped and reported (``SessionManager.load_report``).

        Raises:
            FileNotFoundError: no file at ``path``.
            InvalidSessionError: no valid header.
            OSError: it cannot be read.
        """
        if not os.path.lexists(path):
            raise FileNotFoundError(2, "No such session file", os.fspath(path))
        return _made(cls(leaf_entries=leaf_entries), None, path, None, None, None, backend)

    def start(self, index: TreeIndex, lines: builtins.list[bytes], ready: bool) -> None:
        """As :meth:`InMemorySessionStorage.start`, ``ready`` by ``first_write``."""
        super().start(index, lines, ready)
        if self.first_write == "now":
            self.ready = True
        elif self.first_write == "message" and not ready:
            self.ready = any(index.entry_type(i) == "message" for i in index.ids())

    def append_line(self, line: bytes, entry: dict[str, Any]) -> tuple[str, bool]:
        """Index one entry line and write it: appended to the file once it exists, else
        held with the image and the whole file created once the first write is due.

        Raises:
            SessionLockedError: another writer holds the file.
            StaleSessionError: the file changed under us.
            SessionFileExistsError: the first write found the path taken.
            EntryExistsError: another process appended an entry with this id since the
                file was read (nothing written).
            OSError: the write failed (naming the file); see ``SessionFile.append``.
        """
        if self.file is None:
            return super().append_line(line, entry)
        if not self.ready and entry.get("type") == "message":
            message = entry.get("message")
            role = message.get("role") if isinstance(message, dict) else None
            self.ready = self.first_write == "message" or role == "assistant"
        if self.file.on_disk:
            # The lock first: lines another process appended since the file was read are
            # indexed now, and an id one of them took is refused before a byte is written.
            self.report_changed |= self.file.hold(self.index)
            if entry.get("id") in self.index:
                raise EntryExistsError(f"Duplicate entry id {entry['id']} (written by another process)")
            try:
                entry_id, changed = self.file.append(self.index, line)
            except OSError:
                self.report_changed = True  # part of the line may be indexed as a torn piece
                raise
            self.leaf = self.index.file_leaf()
            self.report_changed |= changed
            return entry_id, changed
        entry_id, _ = super().append_line(line, entry)
        # As Pi: the entry is in the session even if writing it fails below.
        self.write_if_due()
        return entry_id, False

    def write_if_due(self) -> None:
        """Create the file with the image held so far if the first write is due.

        Raises:
            SessionFileExistsError: the path exists (nothing is written).
            OSError: the write failed (the image stays held; the next append tries again).
        """
        if self.file is not None and not self.file.on_disk and self.ready:
            self.file.create(b"".join(self.pending))
            self.pending = []

    def check(self) -> None:
        """Fail unless the file still holds what was read (the manager's check before
        every call, CONTRACT §4).

        Raises:
            StaleSessionError: the file was removed, replaced, truncated or rewritten.
        """
        super().check()
        if self.file is not None:
            self.file.check(self.index)

    def close(self) -> None:
        """Drop the writer and its lock and the index (idempotent)."""
        if self.file is not None:
            self.file.release()
        super().close()

