"""``PiSession``: an OpenAI Agents SDK session that is a Pi session file (docs/AGENTS.md)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from .._jsonl import MAX_DEPTH, copy_value, decode_line, depth_exceeds, encode_entry, values_equal
from .._keyed import key_file_name
from .._manager import SessionManager
from .._places import session_dir_for_cwd
from ..errors import SessionFileExistsError
from ._items import ITEM_TYPE, call_id_of, call_name, is_call, item_of_entry, pi_entry, zero_usage

__all__ = ["PiSession"]

USAGE_KIND = "openai-agents"
"""``kind`` of the Pi ``usage`` entry written for model usage of a batch without an
assistant item."""

# An item sits two levels down in its entry (``message.openaiItem``, ``data.item``).
_ITEM_DEPTH = MAX_DEPTH - 2


class PiSession:
    """An OpenAI Agents SDK session (the SDK's ``Session`` protocol) stored as a Pi
    session file: pass it as ``Runner.run(agent, input, session=PiSession(...))``.

    The file is ``<session_dir>/<session_id, file-safe>.jsonl``, by default in Pi's own
    folder for ``cwd`` (so Pi's ``/resume`` lists it). Each item is one entry on the
    current path (``sessiontree.agents._items`` says what it becomes); the items of the
    session are those on the path from the root to the leaf, in order.

    * ``add_items`` appends one entry per item, each one line written and fsynced
      before the call returns (a new file is created at the first call). Model usage
      the run reports (through the SDK's ``wrapper``) since the previous call goes on
      the batch's last assistant message, else in a Pi ``usage`` entry.
    * ``pop_item`` moves the leaf to the parent of the last item's entry and records
      the move as an empty ``branch_summary`` (Pi's persisted leaf move; an empty one
      adds nothing to Pi's context). Nothing is deleted: the popped item stays on its
      branch, and the next items start a new one.
    * ``clear_session`` starts a new root the same way (``fromId`` ``"root"``).

    One writer per file: the first write takes the file's lock (``SessionLockedError``
    for a second writer, in this or another process) until :meth:`close`. Readers of
    the same file elsewhere see each write on their next ``get_items``.

    Args:
        session_id: the SDK's session id (any non-empty string).
        session_dir: folder of the file; Pi's folder for ``cwd`` when ``None``.
        path: the file itself, instead of ``session_dir`` / the id's name.
        cwd: recorded in a new file's header (default: the process's).
        provider, model: what assistant messages record as Pi's ``provider`` /
            ``model`` (the items do not carry them).
        session_settings: the SDK's ``SessionSettings`` (its ``limit`` is the default
            of ``get_items``).
        backend: ``"auto"``, ``"python"`` or ``"native"`` (see ``SessionManager``).

    Raises:
        TypeError / ValueError: a bad ``session_id``.
        InvalidSessionError: the file exists and has no valid session header.
    """

    def __init__(
        self,
        session_id: str,
        session_dir: str | os.PathLike[str] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        cwd: str | None = None,
        provider: str = "openai",
        model: str = "unknown",
        session_settings: Any = None,
        backend: str | None = None,
    ) -> None:
        name = key_file_name(session_id, what="session_id")
        self.session_id = session_id
        self.session_settings = session_settings
        self.provider = provider
        self.model = model
        self._cwd = cwd if cwd is not None else os.getcwd()
        if path is None:
            folder = os.fspath(session_dir) if session_dir is not None else session_dir_for_cwd(self._cwd)
            path = os.path.join(folder, name)
        self.path = os.path.abspath(os.fspath(path))
        self._backend = backend
        self._lock = threading.Lock()
        # (wrapper, usage totals already recorded) per run, by id(wrapper).
        self._usage_seen: dict[int, tuple[weakref.ref[Any], tuple[int, int, int, int]]] = {}
        self._mgr = self._open()
        self._items: list[tuple[str, Any]] | None = None  # (entry id, item) on the path
        self._tool_names: dict[str, str] = {}

    # ----------------------------------------------------------------- files
    def _open(self) -> SessionManager:
        if os.path.lexists(self.path):
            return SessionManager.open(self.path, backend=self._backend)
        mgr = SessionManager.create(self._cwd, os.path.dirname(self.path), backend=self._backend)
        mgr.set_session_file(self.path)  # written there at the first add_items
        return mgr

    @property
    def session_file(self) -> str:
        """The Pi session file (it exists once something was written)."""
        return self.path

    @property
    def manager(self) -> SessionManager:
        """The open :class:`~sessiontree.SessionManager` (read it; write through this
        session only)."""
        return self._mgr

    def close(self) -> None:
        """Release the file's writer lock and its index (idempotent)."""
        with self._lock:
            self._mgr.close()

    def __enter__(self) -> PiSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------- the path's items
    def _current(self) -> list[tuple[str, Any]]:
        """The (entry id, item) pairs on the path, read again when another process
        added lines."""
        if self._mgr.refresh() or self._items is None:
            items: list[tuple[str, Any]] = []
            names: dict[str, str] = {}
            for entry in self._mgr.get_branch():
                item = item_of_entry(entry)
                if item is None:
                    continue
                items.append((entry["id"], item))
                if isinstance(item, dict) and is_call(item):
                    names[call_id_of(item)] = call_name(item)
            self._items, self._tool_names = items, names
        return self._items

    def _get_items(self, limit: int | None) -> list[Any]:
        with self._lock:
            items = self._current()
            if limit is None:
                limit = getattr(self.session_settings, "limit", None)
                if limit is None and isinstance(self.session_settings, Mapping):
                    limit = self.session_settings.get("limit")
            if limit is None or limit < 0:  # negative: all, as SQLite's LIMIT -1
                chosen = items
            else:
                chosen = items[max(len(items) - limit, 0) :] if limit else []
            return [copy_value(item) for _, item in chosen]

    def _usage_delta(self, wrapper: Any) -> dict[str, Any] | None:
        """Pi usage for what the run's usage grew by since this session last saw it."""
        usage = getattr(wrapper, "usage", None)
        if usage is None:
            return None
        inp = int(getattr(usage, "input_tokens", 0) or 0)
        out = int(getattr(usage, "output_tokens", 0) or 0)
        details = getattr(usage, "input_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        written = int(getattr(details, "cache_write_tokens", 0) or 0)
        now = (inp, out, cached, written)
        seen = self._usage_seen.get(id(wrapper))
        before = seen[1] if seen is not None and seen[0]() is wrapper else (0, 0, 0, 0)
        self._usage_seen = {k: v for k, v in self._usage_seen.items() if v[0]() is not None}
        self._usage_seen[id(wrapper)] = (weakref.ref(wrapper), now)
        d_in, d_out, d_cached, d_written = (max(a - b, 0) for a, b in zip(now, before))
        if not (d_in or d_out):
            return None
        d_cached = min(d_cached, d_in)
        d_written = min(d_written, d_in - d_cached)
        u = zero_usage()
        # OpenAI counts cached and cache-written tokens inside input_tokens; Pi apart.
        u["input"], u["output"], u["cacheRead"], u["cacheWrite"] = d_in - d_cached - d_written, d_out, d_cached, d_written
        u["totalTokens"] = d_in + d_out
        return u

    def _add_items(self, items: list[Any], wrapper: Any) -> None:
        if not isinstance(items, list):
            raise TypeError(f"items must be a list, not {type(items).__name__}")
        for item in items:
            if not isinstance(item, dict):
                raise TypeError(f"an item must be a dict, not {type(item).__name__}")
            # What cannot come back equal is refused first: NaN and infinities (written
            # as null), keys or containers JSON turns into others (an int key becomes a
            # string, a tuple a list), nesting past what a line holds. Iterative, as a
            # line may nest deeper than Python's `==` and `json` recurse.
            if depth_exceeds(item, _ITEM_DEPTH):
                raise ValueError(f"an item must nest at most {_ITEM_DEPTH} levels (its entry's line holds "
                                 f"{MAX_DEPTH})")
            if not values_equal(decode_line(encode_entry(item)), item):
                raise ValueError("an item must read back equal from JSON (string keys, lists, no tuples, no NaN "
                                 "or infinity)")
        if not items:
            return
        with self._lock:
            usage = self._usage_delta(wrapper) if wrapper is not None else None
            try:
                self._append_items(items, usage)
            except SessionFileExistsError:
                # Another process created the file first; none of ours reached it.
                self._mgr.close()
                self._mgr, self._items = self._open(), None
                self._append_items(items, usage)

    def _hold(self) -> None:
        """Take the file's lock before the path is read for a write: another process
        appending between the read and the write would otherwise be indexed at the lock
        and this write would fork beside it."""
        if os.path.lexists(self.path):
            try:
                self._mgr.flush()
            except SessionFileExistsError:
                # Another process created the file since this session looked: use it.
                self._mgr.close()
                self._mgr, self._items = self._open(), None
                self._mgr.flush()

    def _append_items(self, items: list[Any], usage: dict[str, Any] | None) -> None:
        self._hold()
        current = self._current()
        now_ms = int(time.time() * 1000)
        planned = []
        for item in items:
            kind, payload = pi_entry(item, self._tool_names, now_ms, self.provider, self.model)
            if is_call(item):
                self._tool_names[call_id_of(item)] = call_name(item)
            planned.append((kind, payload))
        if usage is not None:
            last = next((p for k, p in reversed(planned) if k == "message" and p.get("role") == "assistant"), None)
            if last is not None:
                last["usage"] = usage
        mgr = self._mgr
        if len(mgr) == 0:
            mgr.append_session_info(self.session_id)
        for kind, payload in planned:
            if kind == "message":
                eid = mgr.append_message(payload)
            else:
                eid = mgr.append_custom_entry(ITEM_TYPE, payload)
            # The item as a reader of the file gets it (JSON's own equality).
            current.append((eid, item_of_entry(mgr.get_entry(eid) or {})))
        if usage is not None and not any(k == "message" and p.get("role") == "assistant" for k, p in planned):
            mgr.append_usage(USAGE_KIND, self.provider, self.model, usage)
        mgr.flush()

    def _pop_item(self) -> Any:
        with self._lock:
            self._hold()
            items = self._current()
            if not items:
                return None
            entry_id, item = items[-1]
            self._mgr.branch_with_summary(self._mgr.parent_of(entry_id), "",
                                          details={"op": "pop_item", "popped": entry_id})
            self._mgr.flush()
            items.pop()
            return copy_value(item)

    def _clear_session(self) -> None:
        with self._lock:
            self._hold()
            if not self._current():
                return
            self._mgr.branch_with_summary(None, "", details={"op": "clear_session"})
            self._mgr.flush()
            self._items = []

    # ------------------------------------------------------ the SDK's protocol
    async def get_items(self, limit: int | None = None, wrapper: Any = None) -> list[Any]:
        """The items on the path, oldest first; the latest ``limit`` of them when
        ``limit`` (or the settings' ``limit``) is set (``0``: none; negative: all)."""
        return await asyncio.to_thread(self._get_items, limit)

    async def add_items(self, items: list[Any], wrapper: Any = None) -> None:
        """Append the items (one entry each, written before this returns).

        Raises:
            TypeError / ValueError: an item is not a dict of JSON values (nothing is
                written).
            SessionLockedError: another writer holds the file.
            OSError: a write failed; the items before it are in the file.
        """
        await asyncio.to_thread(self._add_items, items, wrapper)

    async def pop_item(self, wrapper: Any = None) -> Any:
        """The last item on the path, after moving the leaf above it (``None`` when the
        path holds none). The item's entry stays in the file, on its branch."""
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self, wrapper: Any = None) -> None:
        """Start a new, empty path (a new root); the old one stays in the file."""
        await asyncio.to_thread(self._clear_session)

    def __repr__(self) -> str:
        return f"PiSession({self.session_id!r}, path={self.path!r})"
