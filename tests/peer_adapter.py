"""A pytest plugin that runs the session tests of ``pi-agent-harness-lc`` (a Python port
of Pi's agent-core session layer, from PyPI) over sessiontree's storages.

Loaded with ``-p peer_adapter`` before the peer's test modules are imported, it puts
three thin classes in place of the peer's storages (``MemorySessionStorage``,
``JsonlSessionStorage``, ``DeferredJsonlSessionStorage``) wherever the peer's code and
tests name them. Each forwards agent-core's operations to
:class:`sessiontree.InMemorySessionStorage` / :class:`sessiontree.JsonlSessionStorage`
(with agent-core's leaf entries) and translates between the peer's pydantic entries and
sessiontree's dicts, and between the two error types. The peer's ``Session``, its
context builder and its repositories are its own, unchanged: they run over
sessiontree's storages. ``tests/test_peer_harness.py`` runs it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pi_agent_harness
import pi_agent_harness.session as peer_session
from pi_agent_harness.session import jsonl_repo, jsonl_storage, memory_repo, memory_storage
from pi_agent_harness.types import JsonlSessionMetadata, SessionError, SessionMetadata

import sessiontree
from sessiontree import EntryExistsError, EntryNotFoundError, InvalidSessionError

_Peer = jsonl_storage.JsonlSessionStorage  # the peer's own class: its line parser


def _to_dict(entry: Any) -> dict[str, Any]:
    """A peer entry as the dict of its line (the peer's own serialiser: Pi's key order)."""
    return json.loads(jsonl_storage._entry_to_json(entry))  # type: ignore[no-any-return]


def _to_peer(entry: dict[str, Any] | None) -> Any:
    """A sessiontree entry as the peer's entry model (the peer's own parser)."""
    if entry is None:
        return None
    return _Peer.parse_entry_line(json.dumps(entry, ensure_ascii=False), "<sessiontree>", 0)


def _peer_error(e: Exception) -> Exception:
    if isinstance(e, EntryNotFoundError):
        return SessionError("not_found", str(e), e)
    if isinstance(e, EntryExistsError):
        return SessionError("invalid_entry", str(e), e)
    if isinstance(e, InvalidSessionError):
        return SessionError("invalid_session", str(e), e)
    return e


def _in_tmp(path: str) -> str:
    """``path``, if it lies in the temporary folder: the peer's tests that hand its own
    ``fs`` object a made-up path (``/virtual/...``) must not make sessiontree write there."""
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(tempfile.gettempdir()) + os.sep):
        raise SessionError("storage", f"refused: {path} is not in the temporary folder")
    return path


MADE = {"memory": 0, "jsonl": 0}  # sessiontree storages made for the peer's tests


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say that the storages were sessiontree's (``test_peer_harness`` reads it)."""
    terminalreporter.write_line(f"sessiontree storages made: memory={MADE['memory']} jsonl={MADE['jsonl']}")


class _Storage:
    """agent-core's operations, async, over a sessiontree storage ``self._s``."""

    _s: Any

    def _meta(self) -> Any:
        m = self._s.get_metadata()
        if m.path is None:
            return SessionMetadata(id=m.id, createdAt=m.created_at)
        return JsonlSessionMetadata(id=m.id, createdAt=m.created_at, cwd=m.cwd, path=m.path,
                                    parentSessionPath=m.parent_session_path)

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except (EntryNotFoundError, EntryExistsError, InvalidSessionError) as e:
            raise _peer_error(e) from e

    async def get_metadata(self) -> Any:
        return self._meta()

    async def get_leaf_id(self) -> str | None:
        return self._s.get_leaf_id()  # type: ignore[no-any-return]

    async def set_leaf_id(self, leaf_id: str | None) -> None:
        self._call(self._s.set_leaf_id, leaf_id)

    async def create_entry_id(self) -> str:
        return self._s.create_entry_id()  # type: ignore[no-any-return]

    async def append_entry(self, entry: Any) -> None:
        self._call(self._s.append_entry, _to_dict(entry))

    async def get_entry(self, id: str) -> Any:  # noqa: A002 - the peer's name
        return _to_peer(self._s.get_entry(id))

    async def find_entries(self, type_: str) -> list[Any]:
        return [_to_peer(e) for e in self._s.find_entries(type_)]

    async def get_label(self, id: str) -> str | None:  # noqa: A002
        return self._s.get_label(id)  # type: ignore[no-any-return]

    async def get_path_to_root(self, leaf_id: str | None) -> list[Any]:
        return [_to_peer(e) for e in self._call(self._s.get_path_to_root, leaf_id)]

    async def get_entries(self) -> list[Any]:
        return [_to_peer(e) for e in self._s.get_entries()]


class MemorySessionStorage(_Storage):
    """The peer's ``MemorySessionStorage`` constructors over
    :class:`sessiontree.InMemorySessionStorage`."""

    def __init__(self, metadata: Any, entries: list[Any] | None = None, leaf_id: str | None = None) -> None:
        self._s = sessiontree.InMemorySessionStorage.create(
            session_id=metadata.id, created_at=metadata.createdAt, leaf_entries=True
        )
        MADE["memory"] += 1
        for entry in entries or []:
            self._call(self._s.append_entry, _to_dict(entry))
        if entries and self._s.get_leaf_id() != leaf_id:
            self._s.leaf = leaf_id  # the peer's from_entries names the leaf outright

    @classmethod
    async def create(cls, session_id: str | None = None) -> MemorySessionStorage:
        return cls(memory_storage.session_metadata_from_options({"id": session_id}))

    @classmethod
    def from_entries(cls, metadata: Any, entries: list[Any], leaf_id: str | None = None) -> MemorySessionStorage:
        if leaf_id is None and entries:
            leaf_id = memory_storage._leaf_id_after_entry(entries[-1])
        return cls(metadata, entries, leaf_id)


class JsonlSessionStorage(_Storage):
    """The peer's ``JsonlSessionStorage`` constructors over
    :class:`sessiontree.JsonlSessionStorage` (real files; the peer's ``fs`` object is not
    used: sessiontree writes through its own durable writer)."""

    parse_header_line = staticmethod(_Peer.parse_header_line)
    parse_entry_line = staticmethod(_Peer.parse_entry_line)

    def __init__(self, storage: Any) -> None:
        self._s = storage
        MADE["jsonl"] += 1

    @classmethod
    async def open(cls, fs: Any, file_path: str) -> JsonlSessionStorage:
        return cls(sessiontree.JsonlSessionStorage.open(_in_tmp(file_path), leaf_entries=True))

    @classmethod
    async def open_path(cls, file_path: str | Path) -> JsonlSessionStorage:
        return await cls.open(None, os.fspath(file_path))

    @classmethod
    async def create(cls, fs: Any, file_path: str, *, cwd: str, session_id: str,
                     parent_session_path: str | None = None) -> JsonlSessionStorage:
        # agent-core's create writes the header at once.
        return cls(sessiontree.JsonlSessionStorage.create(
            _in_tmp(file_path), cwd=cwd, session_id=session_id, parent_session_path=parent_session_path,
            leaf_entries=True, first_write="now"))

    @classmethod
    async def create_path(cls, file_path: str | Path, *, cwd: str, session_id: str,
                          parent_session_path: str | None = None) -> JsonlSessionStorage:
        return await cls.create(None, os.fspath(file_path), cwd=cwd, session_id=session_id,
                                parent_session_path=parent_session_path)


class DeferredJsonlSessionStorage(JsonlSessionStorage):
    """The peer's deferred storage: no file until the first ``message`` entry
    (sessiontree's ``first_write="message"``)."""

    def __init__(self, fs: Any, file_path: str, header: dict[str, Any]) -> None:
        super().__init__(sessiontree.JsonlSessionStorage.create(
            _in_tmp(file_path), cwd=header["cwd"], session_id=header["id"], parent_session_path=header.get("parentSession"),
            created_at=header["timestamp"], leaf_entries=True, first_write="message"))

    @property
    def written(self) -> bool:
        return bool(self._s.file.on_disk)


_CLASSES = {
    "MemorySessionStorage": MemorySessionStorage,
    "JsonlSessionStorage": JsonlSessionStorage,
    "DeferredJsonlSessionStorage": DeferredJsonlSessionStorage,
}
for _module in (pi_agent_harness, peer_session, jsonl_repo, jsonl_storage, memory_repo, memory_storage):
    for _name, _cls in _CLASSES.items():
        if hasattr(_module, _name):
            setattr(_module, _name, _cls)
