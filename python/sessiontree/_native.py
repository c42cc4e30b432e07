"""``NativeIndex``: the :class:`~sessiontree._backend.TreeIndex` over the Rust core.

The extension (``sessiontree._sessiontree.Index``) keeps integer columns and answers
with entry numbers (0.. in file order) and line bytes; this adapter maps ids to entry
numbers and turns only the lines it returns into dicts, through
``_jsonl.decode_line`` (the one decoder both backends share). Label and session-name
rules are decided by ``_labels`` as for ``_pure.py`` (the reference where Pi is
undefined): over the three fields of each ``label`` line the core extracts, and the
decoded ``session_info`` line.

What it keeps, and why:

* **Decoded entries**, in one slot per entry number, up to a budget of source-line
  bytes (:data:`~sessiontree._backend.DEFAULT_CACHE_BYTES`, ``$SESSIONTREE_CACHE_BYTES``, or
  :attr:`NativeIndex.cache_budget`). Decoding is the expensive step (orjson reads
  escape-heavy session text at ~0.2 GB/s), so a second ``get_branch``, context or
  pass over the entries must not pay it again. Past the budget the entries decoded
  longest ago are dropped first, one by one (never the whole cache at once); a call
  returns what it decoded even when the budget cannot hold it. Entries never change
  (the file is append-only), so callers share dicts exactly as with the python
  backend.
* **Tree nodes** whose ``entry`` is decoded when first read (:class:`LazyTreeNode`):
  ``get_tree`` builds small objects from the core's shape, not a decode of the file.
* **Labels and the session name**, folded incrementally over the entries added since
  the last look-up (a UI that appends labels and shows them stays linear).
"""

from __future__ import annotations

import os
from array import array
from itertools import repeat
from collections import deque
from collections.abc import Iterator
from typing import Any

from ._backend import ContextPlan, LoadIssue, default_cache_budget, describe_issue, gc_paused
from ._caches import index_cache_for
from ._clip import clip_entry
from ._filestate import FileId
from ._jsonl import decode_line
from ._labels import LabelFields, apply_labels, session_name_of
from ._js import UNDEFINED
from ._reader import V4_FILE, header_error, problem_from_code, scan_header
from ._sessiontree import ENTRY_TYPES, ROLES, Index, stat_unchanged
from ._usage import TOKEN_KEYS, merge_models, usage_totals
from .errors import InvalidSessionError, StaleSessionError
from .schema import CodeColumn, IdColumn, SessionTreeNode, TimeColumn, TreeShape, UsageTotals

__all__ = ["NativeIndex", "LazyTreeNode"]

_TYPE_NAMES = (*ENTRY_TYPES, "?")  # kind codes of the core's table; the last is "another type"
_ROLE_NAMES = (None, *ROLES, "?")  # role codes: 0 none, then ROLES, then "another string"

_BATCH = 256  # lines read and decoded per core call in bulk decodes (bounds the bytes held)


def _label_fields(rows: list[tuple[int, str | bytes | None, str | bytes | None, str | bytes | None]]) -> Iterator[LabelFields]:
    """The ``LabelFields`` of label entries from what ``Index.label_fields`` gives
    (strings decoded by the core, as it decodes ids; other values as JSON text, decoded
    here, except a ``targetId``'s: only a string one counts; absent: ``None``)."""
    for _, target, value, stamp in rows:
        yield (target if type(target) is str else None,
               decode_line(value) if type(value) is bytes else value,
               decode_line(stamp) if type(stamp) is bytes else stamp)


class LazyTreeNode(SessionTreeNode):
    """A ``get_tree`` node whose ``entry`` is decoded from the index when first read
    (then kept in the node). Equal to, and used like, any :class:`SessionTreeNode`."""

    __slots__ = ("_owner", "_n")

    def __init__(
        self, owner: _TreeEntries, n: int, children: list[SessionTreeNode], label: Any, label_timestamp: Any
    ) -> None:
        # Not the dataclass __init__: it would set ``entry``.
        self._owner = owner
        self._n = n
        self.children = children
        self.label = label
        self.label_timestamp = label_timestamp

    def __getattr__(self, name: str) -> Any:
        # Called only while ``entry`` is not in the instance dict yet.
        if name != "entry":
            raise AttributeError(name)
        entry = self._owner.entry(self._n)
        self.entry = entry
        return entry

    def __repr__(self) -> str:
        return f"SessionTreeNode(id={self._owner.id(self._n)!r}, label={self.label!r}, children={len(self.children)})"


class _TreeEntries:
    """How the nodes of one ``get_tree`` read their entries. A walk reads a node's
    subtree next (depth first) or its children (breadth first), whichever child order
    it takes, so a miss decodes the node's subtree in preorder, as many entries as the
    last miss plus as many again (up to ``_BATCH``) while the walk descends (the node's
    parent is decoded), else the node alone: reading the roots, the leaves or nodes
    picked at random decodes what it reads, and a whole walk costs about one bulk
    decode (one entry per core call cost 2.5x that on a bushy 100 MB session).
    """

    __slots__ = ("_owner", "_start", "_kids", "_ahead")

    def __init__(self, owner: NativeIndex, start: list[int], kids: list[int]) -> None:
        self._owner = owner
        self._start = start
        self._kids = kids
        self._ahead = 1

    def id(self, n: int) -> str:
        return self._owner._ix.id(n)

    def entry(self, n: int) -> Any:
        owner = self._owner
        slots = owner._grow_slots()
        e = slots[n]
        if e is not None:
            return e
        p = owner._ix.parent(n)
        # Decoding ahead is only worth it where the cache keeps what it decoded.
        if p is None or slots[p] is None or owner._held >= owner._budget // 2:
            self._ahead = 1
            return owner._decode([n])[n]
        self._ahead = min(2 * self._ahead, _BATCH)
        return owner._decode(self._subtree(n, slots))[n]

    def _subtree(self, n: int, slots: list[Any]) -> list[int]:
        """Up to ``_ahead`` entries of ``n``'s subtree not decoded yet, ``n`` among them,
        from a preorder walk (children oldest first) of at most 4 x that many nodes."""
        start, kids, limit = self._start, self._kids, self._ahead
        out: list[int] = []
        stack, seen = [n], 0
        while stack and len(out) < limit and seen < 4 * limit:
            x = stack.pop()
            seen += 1
            if slots[x] is None:
                out.append(x)
            a, b = start[x], start[x + 1]
            if b > a:
                stack.extend(reversed(kids[a:b]))
        out.sort()  # file order: the core reads neighbouring lines together
        return out


class NativeIndex:
    """The native :class:`~sessiontree._backend.TreeIndex` (``backend = "native"``).

    Build it with :meth:`open` (a memory-mapped file) or :meth:`from_image` (bytes).
    Entries are decoded from the line bytes when first asked for and kept within
    :attr:`cache_budget` (see the module notes); do not mutate them.
    """

    backend = "native"
    # The per-call staleness check's early return as one stat in Rust (src/stat.rs):
    # 1.8 µs where os.stat and the comparisons in Python took about 3.
    stat_unchanged = staticmethod(stat_unchanged)

    def __init__(self, ix: Index, *, file: str | None = None) -> None:
        self._ix = ix
        # An index built from bytes holds no file until its first refresh names one.
        self._file = file
        # What the core says after each change (open, append_line, refresh), kept here
        # because the manager asks on every call (its staleness check).
        self._image_len = ix.image_len()
        self._n = len(ix)
        self._views_persisted = ix.check_persisted()
        # Decoded entries: one slot per entry number (None: not decoded), the same by id
        # (a hit costs one dict look-up, no call into the core), the order in which
        # they were kept, each one's line size, and the bytes held. No object is made
        # per entry beside the entry (the key is the entry's own id, the sizes an
        # array): 100 MB less for the 800k entries of a 1 GiB session.
        self._slots: list[Any] = []
        self._by_id: dict[str, Any] = {}
        self._kept: deque[int] = deque()
        self._sizes = array("Q")
        self._held = 0
        self._count = 0
        self._budget = default_cache_budget()
        self._next_miss = -1  # read-ahead of one-entry look-ups (_read_ahead)
        self._ahead = 1
        # Label / session-name state, folded over the entries added since.
        self._labels_n = 0
        self._labels: dict[str, Any] = {}
        self._label_ts: dict[str, Any] = {}
        self._name_n = 0
        self._name_entry: int | None = None
        # oh-my-pi's title slot, as the file held it when the index was built.
        slot = ix.title_slot()
        try:
            self._title_slot: Any = None if slot is None else decode_line(slot)
        except ValueError:  # rewritten into something else since the scan
            self._title_slot = None
        self._name: str | None = session_name_of(None, self._title_slot)

    # ------------------------------------------------------------ the cache
    @property
    def cache_budget(self) -> int:
        """Bytes of source lines whose decoded entries are kept (settable; ``0`` keeps
        none). Lowering it drops the oldest entries at once."""
        return self._budget

    @cache_budget.setter
    def cache_budget(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"cache_budget must be an int >= 0, not {value!r}")
        self._budget = value
        self._evict()

    def cache_held(self) -> tuple[int, int]:
        """``(entries, bytes of their lines)`` held in the decoded-entry cache."""
        return self._count, self._held

    def _grow_slots(self) -> list[Any]:
        slots = self._slots
        n = self._n
        if len(slots) < n:
            # From an iterator and by repetition, with no temporary list or bytes: 1 ms
            # against 3.8 ms for 422,072 entries alone (timeit), 0.4-0.9 ms less CPU of a
            # reopened session's first context (min and median of six, load 2.4).
            slots.extend(repeat(None, n - len(slots)))
            self._sizes.extend(array("Q", (0,)) * (n - len(self._sizes)))
        return slots

    def _evict(self) -> None:
        slots, kept, by_id, sizes = self._slots, self._kept, self._by_id, self._sizes
        while self._held > self._budget and kept:
            n = kept.popleft()
            del by_id[slots[n]["id"]]
            slots[n] = None
            self._held -= sizes[n]
            self._count -= 1

    def _decode(self, nums: list[int]) -> dict[int, Any]:
        """Decode the lines of ``nums`` (numbers not cached, no repeats) and keep them
        within the budget; returns number -> entry for every one of them."""
        slots = self._grow_slots()
        kept, by_id, sizes = self._kept, self._by_id, self._sizes
        budget = self._budget
        out: dict[int, Any] = {}
        # Bulk decodes pause the cyclic GC (``_backend.gc_paused``): each full pass
        # would scan every entry decoded so far, and entries hold no cycles.
        with gc_paused(len(nums)):
            for n, _, size, entry in self._read(nums, None):
                out[n] = entry
                if size <= budget:
                    slots[n] = entry
                    by_id[entry["id"]] = entry  # equal to the core's id (_read checked it)
                    kept.append(n)
                    sizes[n] = size
                    self._held += size
                    self._count += 1
                    if self._held > budget:
                        self._evict()
        return out

    def _read(self, nums: list[int], clip: int | None) -> Iterator[tuple[int, str, int, dict[str, Any]]]:
        """``(number, id, bytes of the line, entry)`` for the lines of ``nums``, read from
        the file a batch at a time, each cut by the clip rule first when ``clip`` is set.

        Raises:
            StaleSessionError: a line no longer decodes to the entry indexed there.
        """
        ix = self._ix
        for i in range(0, len(nums), _BATCH):
            batch = nums[i : i + _BATCH]
            raws = ix.lines(batch) if clip is None else ix.lines_clipped(batch, clip)
            ids = ix.ids(batch)
            # The scanner saw every number: only these lines need decode_line's exact
            # path for long integers (the others skip its digit scan).
            long = ix.long_numbers(batch)
            exact = set(long) if long else ()
            for n, raw, eid in zip(batch, raws, ids):
                # The bytes come from the file now, not from when it was indexed: a line
                # that no longer parses, or names another id, was rewritten.
                try:
                    entry = decode_line(raw, long_numbers=n in exact)
                except ValueError:
                    entry = None
                if type(entry) is not dict or entry.get("id") != eid:
                    raise self._line_changed(eid)
                yield n, eid, len(raw), entry

    def _decoded(self, nums: list[int]) -> list[Any]:
        """The entries numbered ``nums``, decoding only the missing ones. The result is
        built from what was decoded, never read back from the cache (which may have
        dropped some of them meanwhile)."""
        slots = self._grow_slots()
        out = [slots[n] for n in nums]
        if None not in out:
            return out
        missing = list(dict.fromkeys(n for n, e in zip(nums, out) if e is None))
        got = self._decode(self._read_ahead(missing) if len(missing) == 1 else missing)
        return [e if e is not None else got[n] for n, e in zip(nums, out)]

    def _entry_at(self, n: int) -> Any:
        slots = self._grow_slots()
        e = slots[n]
        return e if e is not None else self._decode(self._read_ahead([n]))[n]

    def _read_ahead(self, one: list[int]) -> list[int]:
        """What to decode for a one-entry miss. Look-ups that walk the file in order (a
        tree walk, ``get_entry`` or ``get_children`` for every id) read ahead: each miss
        right where the last read-ahead ended decodes twice as many of the following
        entries, up to :data:`_BATCH`, so they cost one core call per batch and a bulk
        decode's GC pause; a miss elsewhere decodes only its own line."""
        n = one[0]
        self._ahead = min(2 * self._ahead, _BATCH) if n == self._next_miss else 1
        end = min(n + self._ahead, self._n)
        self._next_miss = end
        if end == n + 1:
            return one
        slots = self._slots
        return [k for k in range(n, end) if slots[k] is None]

    # ------------------------------------------------------------ the file
    def file_id(self) -> FileId | None:
        """The identity of the file the core holds open (``None``: an image in memory)."""
        got = self._ix.file_id()
        return None if got is None else FileId(*got)

    def read_ends(self) -> tuple[int, bytes] | None:
        """The indexed length at open and its first and last ``FINGERPRINT`` bytes, as the
        core's scan read them."""
        return self._ix.fingerprint()

    # ------------------------------------------------------------ construction
    def _line_changed(self, entry_id: str) -> StaleSessionError:
        """The error for a line that no longer decodes to the entry indexed there."""
        where = f"{self._file}: " if self._file is not None else ""
        return StaleSessionError(f"{where}entry {entry_id}: its line changed in the file since it was read; reopen it")

    @classmethod
    def open(cls, path: str) -> NativeIndex:
        """Index the session file at ``path`` (never writes it): through its persisted
        index when one is kept (``_caches.index_cache_for``, ``src/persist/``: read, and only
        the bytes the file gained since scanned; the answers are a scan's), else by a
        scan, after which the index is persisted when that is due.

        Args:
            path: the ``.jsonl`` file.

        Returns:
            The index; ``needs_migration`` is true for a version 1/2 header.

        Raises:
            OSError: the file cannot be read (``FileNotFoundError`` if absent).
            InvalidSessionError: no valid header (loader rule 6).
            ValueError: ``SESSIONTREE_INDEX`` or ``SESSIONTREE_INDEX_BYTES`` is not usable
                (``_caches.index_cache_for``).
        """
        path = os.fspath(path)
        cache = index_cache_for(path)
        try:
            return cls(Index.open(path, cache), file=path)
        except InvalidSessionError as e:
            # The core says where and why (a code); the words are the python backend's.
            problem = problem_from_code(e.reason)
            if problem[0] == "type" and problem[1] is UNDEFINED:
                # The core reads no `kind`: whether a first object without `type` is a
                # version 4 header is judged by the python reader, on the file's line.
                try:
                    scan_header(path)
                except InvalidSessionError as again:
                    if again.reason == V4_FILE:
                        raise again from None
                except OSError:
                    pass
            raise header_error(path, e.line, e.offset, problem) from None

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
        return self._n

    def ids(self) -> list[str]:
        """Accepted entry ids in file order."""
        return self._ix.ids()

    def entries(self) -> list[dict[str, Any]]:
        """Accepted entries in file order (decoding those not cached, in bulk)."""
        if self._count == self._n:
            return self._slots[:]
        out = self._grow_slots()[:]  # what is cached now: decoding may drop some of it
        if self._count < len(out):
            got = self._decode([n for n, e in enumerate(out) if e is None])
            for n, e in got.items():
                out[n] = e
        return out

    def last_id(self) -> str | None:
        """The last accepted entry's id, ``None`` if there is none."""
        n = self._ix.last()
        return None if n is None else self._ix.id(n)

    def file_leaf(self) -> str | None:
        """The leaf on open (loader rule 13), ``None`` before the first entry."""
        n = self._ix.file_leaf()
        return None if n is None else self._ix.id(n)

    def image_len(self) -> int:
        """Bytes of the image consumed (stops before a pending last piece).

        Raises:
            StaleSessionError: the persisted index this one reads in place was cut short
                or written over under it (another program's doing; asked here, on every
                call of the manager's staleness check, as the file's own staleness is).
        """
        if self._views_persisted:
            self._views_persisted = self._ix.check_persisted()
        return self._image_len

    def has_pending_tail(self) -> bool:
        """An invalid last piece without LF waits for the rest of its line."""
        return self._ix.has_pending_tail()

    # ----------------------------------------------------------------- lookups
    def __contains__(self, entry_id: object) -> bool:
        try:
            if entry_id in self._by_id:  # decoded: no call into the core
                return True
        except TypeError:  # unhashable: no entry has it as id
            return False
        return self._ix.find(entry_id) is not None

    def get(self, entry_id: str) -> dict[str, Any] | None:
        """The entry with this id, or ``None``."""
        try:
            e = self._by_id.get(entry_id)
        except TypeError:  # unhashable: no entry has it as id
            return None
        if e is not None:
            return e  # type: ignore[no-any-return]
        n = self._ix.find(entry_id)
        if n is None:
            return None
        self._grow_slots()
        return self._decode(self._read_ahead([n]))[n]

    def get_many(self, entry_ids: list[str], clip: int | None = None) -> list[dict[str, Any] | None]:
        """The entries with these ids in order (``None`` for an unknown id), the ones not
        decoded yet in one bulk decode. With ``clip``, cut by the clip rule
        (``_clip.py``): cached entries are cut here, the others read cut by the core
        (``src/clip.rs``) and decoded without being cached."""
        by_id, find = self._by_id, self._ix.find
        out: list[Any] = []
        at: list[tuple[int, int]] = []  # (position in out, entry number) still to decode
        for k, eid in enumerate(entry_ids):
            try:
                e = by_id.get(eid)
            except TypeError:
                e = None
            if e is None:
                n = find(eid)
                if n is not None:
                    at.append((k, n))
            elif clip is not None:
                e = clip_entry(e, clip)
            out.append(e)
        if at:
            nums = list(dict.fromkeys(n for _, n in at))
            if clip is None:
                self._grow_slots()
                got = self._decode(nums)
            else:
                with gc_paused(len(nums)):
                    got = {n: entry for n, _, _, entry in self._read(nums, clip)}
            for k, n in at:
                out[k] = got[n]
        return out

    def raw_line(self, entry_id: str) -> bytes | None:
        """The bytes of the entry's JSON text (no CR/LF), or ``None``."""
        n = self._ix.find(entry_id)
        return None if n is None else self._ix.line(n)

    def raw_lines(self, entry_ids: list[str]) -> list[bytes | None]:
        """:meth:`raw_line` of each id, the known ones read in one core call (adjacent
        lines in one ``pread``, each line's hash checked)."""
        find = self._ix.find
        nums = [find(eid) for eid in entry_ids]
        got = iter(self._ix.lines([n for n in nums if n is not None]))
        return [None if n is None else next(got) for n in nums]

    def children(self, entry_id: str) -> list[dict[str, Any]]:
        """Entries whose parent is ``entry_id``, in file order (Pi's ``getChildren``)."""
        n = self._ix.find(entry_id)
        if n is None:
            return []
        out = self._ix.children_in(n, self._grow_slots())
        return out if out is not None else self._decoded(self._ix.children(n))

    def path(self, entry_id: str | None) -> list[dict[str, Any]]:
        """Entries from the root down to ``entry_id`` (empty for ``None`` / unknown)."""
        n = None if entry_id is None else self._ix.find(entry_id)
        if n is None:
            return []
        out = self._ix.path_in(n, self._grow_slots())
        return out if out is not None else self._decoded(self._ix.path(n))

    def path_ids(self, entry_id: str | None) -> list[str]:
        """Ids from the root down to ``entry_id`` (empty for ``None`` / unknown)."""
        n = None if entry_id is None else self._ix.find(entry_id)
        return [] if n is None else self._ix.path_ids(n)

    def tree(self) -> list[SessionTreeNode]:
        """The whole forest (Pi's ``getTree``), built without recursion; each node's
        ``entry`` is decoded when first read.

        Returns:
            Root nodes in file order; each node's children oldest first (unparseable
            timestamps after the rest, in file order; see ``_pure.py``).
        """
        ix = self._ix
        roots, start, kids = ix.tree()
        labels, label_ts = self._label_maps()
        n = len(start) - 1
        reader = _TreeEntries(self, start, kids)
        with gc_paused(n):  # many small objects, no cycles among them
            # Entries already decoded go straight into plain nodes; the rest wait.
            nodes: list[SessionTreeNode] = [
                LazyTreeNode(reader, k, [], None, None) if e is None else SessionTreeNode(e, [], None, None)
                for k, e in enumerate(self._grow_slots()[:n])
            ]
            for eid, label in labels.items():
                e = ix.find(eid)
                if e is not None and e < n:
                    nodes[e].label = label
                    nodes[e].label_timestamp = label_ts.get(eid)
            for e, node in enumerate(nodes):
                a, b = start[e], start[e + 1]
                if b > a:
                    node.children.extend([nodes[c] for c in kids[a:b]])
            return [nodes[r] for r in roots]

    def _label_maps(self) -> tuple[dict[str, Any], dict[str, Any]]:
        # Labels apply in file order and entries are only ever added at the end, so
        # folding the new label lines into the maps gives what a fold of all would.
        # Only the three values the rule reads leave the core (a session may hold tens
        # of thousands of label lines: decoding them whole cost 0.4 s on a 1 GiB one).
        n = self._n
        if self._labels_n < n:
            apply_labels(_label_fields(self._ix.label_fields(self._labels_n)), self._labels, self._label_ts)
            self._labels_n = n
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
        """The latest ``session_info`` entry's non-empty ``name`` (without one, the
        title slot's ``title``), else ``None``."""
        n = self._n
        if self._name_n < n:
            infos = self._ix.entries_of_type("session_info", self._name_n)
            if infos and infos[-1] != self._name_entry:
                self._name_entry = infos[-1]
                self._name = session_name_of(self._entry_at(infos[-1]), self._title_slot)
            self._name_n = n
        return self._name

    def context_plan(self, leaf_id: str | None) -> ContextPlan:
        """Pi's context plan along root -> ``leaf_id`` (empty for ``None`` / unknown)."""
        ix = self._ix
        n = None if leaf_id is None else ix.find(leaf_id)
        msgs, comp, thinking, model, entries, edits, tools = ix.context_plan(n)
        ident = ix.id
        return ContextPlan(
            message_ids=ix.ids(msgs),
            compaction_id=None if comp is None else ident(comp),
            thinking_id=None if thinking is None else ident(thinking),
            model_id=None if model is None else ident(model),
            entry_ids=ix.ids(entries),
            edits={ident(t): ident(x) for t, x in edits},
            active_tools_id=None if tools is None else ident(tools),
        )

    # --------------------------------------------------------------- structure
    def shape(self) -> TreeShape:
        """The tree's shape from the core's columns (one copy of each per call; the ids
        are read from the core when first asked for)."""
        ix = self._ix
        parents, kinds, roles, ts, roots, start, kids, others = ix.shape()
        return TreeShape(
            ids=IdColumn(len(kinds), ix.id, ix.ids),
            types=CodeColumn(kinds, _TYPE_NAMES),
            roles=CodeColumn(roles, _ROLE_NAMES, dict(others)),
            parents=array("i", parents),
            roots=array("I", roots),
            timestamps_ms=TimeColumn(array("q", ts)),
            _start=array("I", start),
            _kids=array("I", kids),
            _find=ix.find,
        )

    def parent_id(self, entry_id: str) -> str | None:
        """The parent's id after cycle breaking (``None`` for a root or unknown id)."""
        n = self._ix.find(entry_id)
        p = None if n is None else self._ix.parent(n)
        return None if p is None else self._ix.id(p)

    def children_ids(self, entry_id: str) -> list[str]:
        """Ids of the children of ``entry_id`` in file order (empty if unknown)."""
        n = self._ix.find(entry_id)
        if n is None:
            return []
        return self._ix.ids(self._ix.children(n))

    def leaf_ids(self) -> list[str]:
        """Ids of the entries without children, in file order."""
        return self._ix.ids(self._ix.leaves())

    def entry_type(self, entry_id: str) -> str | None:
        """The entry's ``type`` if one of ``ENTRY_TYPES``, ``"?"`` for another, ``None``
        for an unknown id."""
        n = self._ix.find(entry_id)
        if n is None:
            return None
        kind = self._ix.kind(n)
        return "?" if kind is None else kind

    def ids_with_prefix(self, prefix: str, limit: int) -> tuple[list[str], int]:
        """The first ``limit`` ids (file order) starting with ``prefix``, and how many do."""
        nums, count = self._ix.with_prefix(prefix, limit)
        return self._ix.ids(nums), count

    def usage_totals(self) -> UsageTotals:
        """Assistant usage as the core summed it while indexing (``src/usage.rs``: nothing
        is read); where it cannot sum exactly, by ``_usage.usage_totals`` over decoded
        messages."""
        got = self._ix.usage_totals()
        if got is None:
            return usage_totals(self._decoded(self._ix.entries_of_type("message")))
        tokens, cost, models, messages = got
        rows = [(None if p is None else decode_line(p), None if m is None else decode_line(m), k) for p, m, k in models]
        return UsageTotals(tokens=dict(zip(TOKEN_KEYS, tokens)), cost=cost, models=merge_models(rows), messages=messages)

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
        try:
            n = self._ix.append_line(bytes(line))
        finally:
            self._image_len = self._ix.image_len()
            self._n = len(self._ix)
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
        try:
            return self._ix.refresh()
        finally:
            self._image_len = self._ix.image_len()
            self._n = len(self._ix)

    def close(self) -> None:
        """Release the file and the decoded entries; later reads raise ``SessionError``
        (``get_tree`` nodes included, whatever was cached: only a node whose ``entry``
        was read before answers)."""
        self._ix.close()
        self._slots, self._by_id, self._sizes = [], {}, array("Q")
        self._kept.clear()
        self._held = self._count = 0

    def entries_range(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Entries numbered ``start`` to ``stop - 1``, decoded on each call (not cached:
        whole-file passes stay bounded by their batch).

        Raises:
            StaleSessionError: a line no longer decodes to the entry indexed there.
        """
        ix = self._ix
        out = []
        nums = list(range(start, stop))
        exact = set(ix.long_numbers(nums))
        for n, raw in zip(nums, ix.lines(nums)):
            try:
                entry = decode_line(raw, long_numbers=n in exact)
            except ValueError:
                entry = None
            if type(entry) is not dict or entry.get("id") != ix.id(n):
                raise self._line_changed(ix.id(n))
            out.append(entry)
        return out

    def table_rows(self, start: int, stop: int) -> dict[str, bytes]:
        """The decoded columns of entries ``start`` to ``stop - 1``, computed by the core
        from their lines as read now (``Index.table_rows``; see
        ``_backend.TreeIndex.table_rows``).

        Raises:
            StaleSessionError: a line changed in the file since it was indexed.
        """
        return self._ix.table_rows(start, stop)

    def table_columns(self, leaf_id: str | None) -> dict[str, bytes]:
        """The ``entries`` table's index columns in Arrow layouts, computed by the core
        (``Index.table_columns``; see ``_backend.TreeIndex.table_columns``)."""
        n = None if leaf_id is None else self._ix.find(leaf_id)
        return self._ix.table_columns(n)
