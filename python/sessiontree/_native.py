"""``NativeIndex``: the :class:`~sessiontree._backend.TreeIndex` over the Rust core.

The extension (``sessiontree._sessiontree.Index``) keeps integer columns and answers
with entry numbers (0.. in file order) and line bytes; this adapter maps ids to entry
numbers and turns only the lines it returns into dicts, through
``_jsonl.decode_line`` (the one decoder both backends share). Label and session-name
rules are decided here from the few decoded ``label`` / ``session_info`` lines, the
same way ``_pure.py`` does (the reference where Pi is undefined).
"""

from __future__ import annotations

import os
from typing import Any

from ._backend import ContextPlan, LoadIssue, describe_issue
from ._jsonl import decode_line
from ._reader import header_error, problem_from_code
from ._labels import apply_labels, session_name_of
from ._sessiontree import Index
from .errors import InvalidSessionError, StaleSessionError
from .schema import SessionTreeNode

__all__ = ["NativeIndex"]

# Decoded entries are kept for lookups, paths and contexts, up to this many bytes of
# source lines (the dicts take roughly 2-3x that). Decoding is the expensive step
# (orjson reads escape-heavy session text at ~0.2 GB/s), so a second get_branch or
# context at the same leaf should not pay it again; past the budget the cache starts
# over, so memory stays bounded on sessions of any size. Whole-file reads (entries(),
# tree()) bypass it.
_CACHE_BYTES = 128 << 20


class NativeIndex:
    """The native :class:`~sessiontree._backend.TreeIndex` (``backend = "native"``).

    Build it with :meth:`open` (a memory-mapped file) or :meth:`from_image` (bytes).
    Entries are decoded from the line bytes when first asked for and kept in a bounded
    cache (entries never change: the file is append-only), so callers share dicts
    exactly as with the python backend; do not mutate them.
    """

    backend = "native"

    def __init__(self, ix: Index, *, file: str | None = None) -> None:
        self._ix = ix
        # An index built from bytes holds no file until its first refresh names one.
        self._file = file
        # Label / session-name state, rebuilt when the entry count changes.
        self._labels_n = -1
        self._labels: dict[str, Any] = {}
        self._label_ts: dict[str, Any] = {}
        self._name_n = -1
        self._name: str | None = None
        self._cache: dict[int, Any] = {}
        self._cache_bytes = 0

    def _decoded(self, nums: list[int]) -> list[Any]:
        """The entries numbered ``nums``, decoding (and caching) only the missing ones."""
        cache = self._cache
        missing = [n for n in nums if n not in cache]
        if missing:
            raws = self._ix.lines(missing)
            size = sum(map(len, raws))
            if self._cache_bytes + size > _CACHE_BYTES:
                cache.clear()
                self._cache_bytes = 0
            ident = self._ix.id
            for n, raw in zip(missing, raws):
                # The bytes come from the file now, not from when it was indexed: a line
                # that no longer parses, or names another id, was rewritten in place.
                try:
                    entry = decode_line(raw)
                except ValueError:
                    entry = None
                if type(entry) is not dict or entry.get("id") != ident(n):
                    raise self._line_changed(ident(n))
                cache[n] = entry
            self._cache_bytes += size
        return [cache[n] for n in nums]

    # ------------------------------------------------------------ construction
    def _line_changed(self, entry_id: str) -> StaleSessionError:
        """The error for a line that no longer decodes to the entry indexed there."""
        where = f"{self._file}: " if self._file is not None else ""
        return StaleSessionError(f"{where}entry {entry_id}: its line changed in the file since it was read; reopen it")

    @classmethod
    def open(cls, path: str) -> NativeIndex:
        """Map and index the session file at ``path`` (read-only; never writes).

        Args:
            path: the ``.jsonl`` file.

        Returns:
            The index; ``needs_migration`` is true for a version 1/2 header.

        Raises:
            OSError: the file cannot be read (``FileNotFoundError`` if absent).
            InvalidSessionError: no valid header (loader rule 6).
        """
        path = os.fspath(path)
        try:
            return cls(Index.open(path), file=path)
        except InvalidSessionError as e:
            # The core says where and why (a code); the words are the python backend's.
            raise header_error(path, e.line, e.offset, problem_from_code(e.reason)) from None

    @classmethod
    def from_image(cls, data: bytes) -> NativeIndex:
        """Index an in-memory image (new, in-memory or migrated session).

        Args:
            data: header line + entry lines, each ended by ``\\n``.

        Raises:
            InvalidSessionError: no valid header.
        """
        try:
            return cls(Index.from_image(bytes(data)))
        except InvalidSessionError as e:
            raise header_error(None, e.line, e.offset, problem_from_code(e.reason)) from None

    @property
    def needs_migration(self) -> bool:
        """The header's version is absent or below 3 (only the header is indexed)."""
        return self._ix.needs_migration

    # ------------------------------------------------------- whole-image facts
    def header(self) -> dict[str, Any]:
        """The header dict (first valid ``session`` line)."""
        return decode_line(self._ix.header())  # type: ignore[no-any-return]

    def load_report(self) -> list[LoadIssue]:
        """Every loader issue, by line then rule (ARCHITECTURE.md)."""
        return [
            LoadIssue(kind, line, off, ids, describe_issue(kind, ids, n, text)) for kind, line, off, ids, n, text in self._ix.issues()
        ]

    def __len__(self) -> int:
        return len(self._ix)

    def ids(self) -> list[str]:
        """Accepted entry ids in file order."""
        return self._ix.ids()

    def entries(self) -> list[dict[str, Any]]:
        """Accepted entries in file order."""
        return [decode_line(b) for b in self._ix.lines()]

    def last_id(self) -> str | None:
        """The last accepted entry's id (the leaf on open), ``None`` if there is none."""
        n = self._ix.last()
        return None if n is None else self._ix.id(n)

    def image_len(self) -> int:
        """Bytes of the image consumed (stops before a pending last piece)."""
        return self._ix.image_len()

    def has_pending_tail(self) -> bool:
        """An invalid last piece without LF waits for the rest of its line."""
        return self._ix.has_pending_tail()

    # ----------------------------------------------------------------- lookups
    def __contains__(self, entry_id: object) -> bool:
        return self._ix.find(entry_id) is not None

    def get(self, entry_id: str) -> dict[str, Any] | None:
        """The entry with this id, or ``None``."""
        n = self._ix.find(entry_id)
        return None if n is None else self._decoded([n])[0]  # type: ignore[no-any-return]

    def raw_line(self, entry_id: str) -> bytes | None:
        """The bytes of the entry's JSON text (no CR/LF), or ``None``."""
        n = self._ix.find(entry_id)
        return None if n is None else self._ix.line(n)

    def children(self, entry_id: str) -> list[dict[str, Any]]:
        """Entries whose parent is ``entry_id``, in file order (Pi's ``getChildren``)."""
        n = self._ix.find(entry_id)
        if n is None:
            return []
        return self._decoded(self._ix.children(n))

    def path(self, entry_id: str | None) -> list[dict[str, Any]]:
        """Entries from the root down to ``entry_id`` (empty for ``None`` / unknown)."""
        n = None if entry_id is None else self._ix.find(entry_id)
        return [] if n is None else self._decoded(self._ix.path(n))

    def path_ids(self, entry_id: str | None) -> list[str]:
        """Ids from the root down to ``entry_id`` (empty for ``None`` / unknown)."""
        n = None if entry_id is None else self._ix.find(entry_id)
        return [] if n is None else self._ix.path_ids(n)

    def tree(self) -> list[SessionTreeNode]:
        """The whole forest (Pi's ``getTree``), built without recursion.

        Returns:
            Root nodes in file order; each node's children oldest first (unparseable
            timestamps after the rest, in file order; see ``_pure.py``).
        """
        ix = self._ix
        roots, start, kids = ix.tree()
        labels, label_ts = self._label_maps()
        ids = ix.ids()
        nodes = [
            SessionTreeNode(entry=decode_line(b), children=[], label=labels.get(eid), label_timestamp=label_ts.get(eid))
            for eid, b in zip(ids, ix.lines())
        ]
        for e, node in enumerate(nodes):
            a, b = start[e], start[e + 1]
            if b > a:
                node.children.extend(nodes[c] for c in kids[a:b])
        return [nodes[r] for r in roots]

    def _label_maps(self) -> tuple[dict[str, Any], dict[str, Any]]:
        # Labels apply in file order; a JS-truthy label sets, anything else clears.
        n = len(self._ix)
        if self._labels_n != n:
            labels: dict[str, Any] = {}
            label_ts: dict[str, Any] = {}
            nums = self._ix.entries_of_type("label")
            apply_labels((decode_line(b) for b in (self._ix.lines(nums) if nums else [])), labels, label_ts)
            self._labels, self._label_ts, self._labels_n = labels, label_ts, n
        return self._labels, self._label_ts

    def label(self, entry_id: str) -> str | None:
        """The current label of ``entry_id``, or ``None``."""
        if not isinstance(entry_id, str):
            return None
        return self._label_maps()[0].get(entry_id)

    def labels(self) -> dict[str, str]:
        """Target id -> label, in the order Pi's ``labelsById`` map holds them."""
        return dict(self._label_maps()[0])

    def label_timestamp(self, entry_id: str) -> str | None:
        """Timestamp of the label entry that set the current label, or ``None``."""
        if not isinstance(entry_id, str):
            return None
        return self._label_maps()[1].get(entry_id)

    def session_name(self) -> str | None:
        """The latest ``session_info`` entry's non-empty ``name``, else ``None``."""
        n = len(self._ix)
        if self._name_n != n:
            infos = self._ix.entries_of_type("session_info")
            self._name = session_name_of(decode_line(self._ix.line(infos[-1])) if infos else None)
            self._name_n = n
        return self._name

    def context_plan(self, leaf_id: str | None) -> ContextPlan:
        """Pi's context plan along root -> ``leaf_id`` (empty for ``None`` / unknown)."""
        ix = self._ix
        n = None if leaf_id is None else ix.find(leaf_id)
        msgs, comp, thinking, model, entries, edits = ix.context_plan(n)
        ident = ix.id
        return ContextPlan(
            message_ids=[ident(m) for m in msgs],
            compaction_id=None if comp is None else ident(comp),
            thinking_id=None if thinking is None else ident(thinking),
            model_id=None if model is None else ident(model),
            entry_ids=[ident(e) for e in entries],
            edits={ident(t): ident(x) for t, x in edits},
        )

    # ------------------------------------------------------------------ growth
    def append_line(self, line: bytes) -> str:
        """Index one entry line the caller wrote (or will write) after the image.

        Args:
            line: the entry's JSON text without LF (follows one ``b"\\n"`` when the
                image does not end with LF).

        Returns:
            The new entry's id.

        Raises:
            ValueError: the line was not accepted as a new entry (it is still part of
                the image and reported).
        """
        n = self._ix.append_line(bytes(line))
        if n is None:
            raise ValueError("appended line was not accepted as a new entry")
        return self._ix.id(n)

    def refresh(self, path: str) -> int:
        """Index the complete lines appended to the file since ``image_len()``.

        The core reads them from the file it holds (opened by :meth:`open`); an index
        built by :meth:`from_image` starts holding ``path`` here, the file its image has
        been written to. Whether that is still the same file with the same bytes is the
        manager's staleness check.

        Args:
            path: the session file.

        Returns:
            How many entries were added.

        Raises:
            StaleSessionError: the file shrank below ``image_len()``.
        """
        if self._file is None:
            self._ix.attach(os.fspath(path))
            self._file = os.fspath(path)
        return self._ix.refresh()

    def close(self) -> None:
        """Release the memory map; later reads raise ``SessionError``."""
        self._ix.close()

    def entries_range(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Entries numbered ``start`` to ``stop - 1``, decoded on each call (not cached:
        whole-file passes stay bounded by their batch).

        Raises:
            StaleSessionError: a line no longer decodes to the entry indexed there.
        """
        ix = self._ix
        out = []
        for n, raw in zip(range(start, stop), ix.lines(list(range(start, stop)))):
            try:
                entry = decode_line(raw)
            except ValueError:
                entry = None
            if type(entry) is not dict or entry.get("id") != ix.id(n):
                raise self._line_changed(ix.id(n))
            out.append(entry)
        return out

    def table_columns(self, leaf_id: str | None) -> dict[str, bytes]:
        """The ``entries`` table's index columns in Arrow layouts, computed by the core
        (``Index.table_columns``; see ``_backend.TreeIndex.table_columns``)."""
        n = None if leaf_id is None else self._ix.find(leaf_id)
        return self._ix.table_columns(n)
