"""``PythonIndex``: the pure-Python backend (``backend="python"``).

Keeps the accepted entries as dicts in memory (the :class:`~sessiontree._load.Loader`'s
lists: id, dict, raw line bytes, line number, parent index) and answers every
:class:`~sessiontree._backend.TreeIndex` query from them. The native backend
(``_native.NativeIndex``) must return equal values for every call; where Pi's behaviour
is undefined this module is the reference, and the choices are written down here:

* ``tree()``: children sorted by ``parse_iso_ms(timestamp)`` ascending, stable (ties
  keep file order), as Pi's ``getTree`` sorts with ``Date.parse``. Pi's comparator
  returns NaN for an unparseable timestamp, which makes V8's sort order depend on the
  algorithm's internals; here an entry whose timestamp does not parse (or is not a
  string) sorts **after** every parseable sibling, and such entries keep file order
  among themselves. Roots are listed in file order (Pi does not sort roots).
* Labels: label entries are applied in file order, whatever branch they are on; a
  JavaScript-truthy ``label`` sets it (value kept as is), anything else (absent,
  ``null``, ``""``, ``0``, ``false``) clears it; only string ``targetId``\\ s count.
  ``labels()`` keeps JavaScript ``Map`` order (re-setting keeps the position, clearing
  then setting moves the target to the end), as ``createBranchedSession`` iterates it.
  ``label_timestamp`` is the ``timestamp`` of the label entry that set the current label.
* Session name (Pi 0.73.1): the latest ``session_info`` entry in file order decides;
  its ``name`` if that is a non-empty string, else ``None`` (an empty name clears).
* ``context_plan(None)`` and ``context_plan(<unknown id>)`` plan an empty path.
* Growth: ``append_line`` / ``refresh`` feed the loader the new bytes; when the image
  does not end with LF the appended line is taken to follow what the writer writes
  first (``_reader.line_prefix``: ``#`` + LF after a pending piece, LF after another
  unterminated one), so a pending fragment becomes an ordinary ``invalid_json`` line.
* Staleness is the manager's (``_filestate``): ``refresh`` reads what follows
  ``image_len()`` in a file the caller has checked.
"""

from __future__ import annotations

import os
import sys
from array import array
from collections.abc import Iterable
from typing import Any

from ._backend import ContextPlan, LoadIssue, gc_paused
from ._clip import clip_entry
from ._filestate import FINGERPRINT, FileId, file_id, open_regular
from ._labels import apply_labels, label_fields, session_name_of
from ._load import Loader
from ._reader import line_prefix
from ._time import parse_iso_ms
from ._usage import usage_totals
from .schema import ENTRY_TYPES, MESSAGE_ROLES, CodeColumn, SessionTreeNode, TimeColumn, TreeShape, UsageTotals

__all__ = ["PythonIndex"]

_NO_TIME = -(1 << 63)  # timestamps_ms item for a timestamp that does not parse
_TYPE_NAMES = (*sorted(ENTRY_TYPES), "?")
_TYPE_CODE = {t: i for i, t in enumerate(_TYPE_NAMES[:-1])}
_ROLE_NAMES = (None, *MESSAGE_ROLES, "?")
_ROLE_CODE = {r: i for i, r in enumerate(_ROLE_NAMES) if isinstance(r, str)}


class PythonIndex:
    """The pure-Python :class:`~sessiontree._backend.TreeIndex` (dicts in memory).

    Build it with :meth:`open` (a file) or :meth:`from_image` (bytes). Ids are ``str``;
    entries returned are the stored dicts (equal to ``json.loads`` of their line): do
    not mutate them.
    """

    backend = "python"
    stat_unchanged = None  # FileWatch.check stats the path with os.stat

    def __init__(self, loader: Loader) -> None:
        self._l = loader
        self._children: list[list[int]] | None = None
        self._children_gen = -1
        self._children_n = 0
        self._labels: dict[str, Any] = {}
        self._label_ts: dict[str, Any] = {}
        self._labels_n = 0
        self._name_idx = -1
        self._name_n = 0
        # Per entry, filled as entries are added: parse_iso_ms(timestamp) (_NO_TIME:
        # none), the type and role codes of the shape, roles outside MESSAGE_ROLES.
        self._ms = array("q")
        self._types = bytearray()
        self._roles = bytearray()
        self._other_roles: dict[int, str] = {}
        # The identity of the file open() read and the ends of what it indexed, as
        # read (None: an image in memory).
        self._file_id: FileId | None = None
        self._ends: tuple[int, bytes] | None = None

    # ------------------------------------------------------------ construction
    @classmethod
    def open(cls, path: str) -> PythonIndex:
        """Index the session file at ``path`` (reads it once; never writes).

        Args:
            path: the ``.jsonl`` file.

        Returns:
            The index; ``needs_migration`` is true for a version 1/2 header (then only
            the header is indexed).

        Raises:
            OSError: the file cannot be read (``FileNotFoundError`` if absent).
            InvalidSessionError: no valid header (loader rule 6).
        """
        path = os.fspath(path)
        with open_regular(path) as f:
            ident = file_id(os.fstat(f.fileno()))
            data = f.read()
        loader = Loader(path)
        with gc_paused():  # many new dicts and no cycles among them
            loader.feed(data)
        loader.finish()
        index = cls(loader)
        n = loader.consumed
        index._file_id = ident
        index._ends = (n, data[: min(FINGERPRINT, n)] + data[max(0, n - FINGERPRINT) : n])
        return index

    @classmethod
    def from_image(cls, data: bytes) -> PythonIndex:
        """Index an in-memory image (new, in-memory or migrated session).

        Args:
            data: header line + entry lines, each ended by ``\\n``.

        Raises:
            InvalidSessionError: no valid header.
        """
        loader = Loader(None)
        with gc_paused():
            loader.feed(bytes(data))
        loader.finish()
        return cls(loader)

    @property
    def needs_migration(self) -> bool:
        """The header's version is below 3 (only the header is indexed)."""
        return self._l.needs_migration

    # ------------------------------------------------------- whole-image facts
    def file_id(self) -> FileId | None:
        """The identity of the file :meth:`open` read (from the open file)."""
        return self._file_id

    def read_ends(self) -> tuple[int, bytes] | None:
        """The indexed length at open and its first and last ``FINGERPRINT`` bytes, as read."""
        return self._ends

    def header(self) -> dict[str, Any]:
        """The header dict (first valid ``session`` line)."""
        assert self._l.header is not None
        return self._l.header

    def load_report(self) -> list[LoadIssue]:
        """Every loader issue so far, by line then rule (ARCHITECTURE.md)."""
        return self._l.report()

    def __len__(self) -> int:
        return len(self._l.ids)

    def ids(self) -> list[str]:
        """Accepted entry ids in file order."""
        return list(self._l.ids)

    def entries(self) -> list[dict[str, Any]]:
        """Accepted entries in file order."""
        return list(self._l.entries)

    def last_id(self) -> str | None:
        """The last accepted entry's id, ``None`` if there is none."""
        ids = self._l.ids
        return ids[-1] if ids else None

    def file_leaf(self) -> str | None:
        """The leaf on open (loader rule 13), ``None`` before the first entry."""
        n = self._l.leaf
        return None if n < 0 else self._l.ids[n]

    def image_len(self) -> int:
        """Bytes of the image consumed (stops before a pending last piece)."""
        return self._l.consumed

    def has_pending_tail(self) -> bool:
        """An invalid last piece without LF waits for the rest of its line."""
        return self._l.pending

    # ----------------------------------------------------------------- lookups
    def __contains__(self, entry_id: object) -> bool:
        try:
            return entry_id in self._l.by_id
        except TypeError:  # unhashable
            return False

    def _idx(self, entry_id: object) -> int:
        try:
            return self._l.by_id.get(entry_id, -1)  # type: ignore[call-overload, no-any-return]
        except TypeError:
            return -1

    def get(self, entry_id: str) -> dict[str, Any] | None:
        """The entry with this id, or ``None``."""
        i = self._idx(entry_id)
        return self._l.entries[i] if i >= 0 else None

    def get_many(self, entry_ids: list[str], clip: int | None = None) -> list[dict[str, Any] | None]:
        """The entries with these ids in order (``None`` for an unknown id); with
        ``clip``, copies cut by the clip rule (``_clip.py``)."""
        get = self.get
        if clip is None:
            return [get(eid) for eid in entry_ids]
        return [None if e is None else clip_entry(e, clip) for e in map(get, entry_ids)]

    def raw_line(self, entry_id: str) -> bytes | None:
        """The bytes of the entry's JSON text (no CR/LF), or ``None``."""
        i = self._idx(entry_id)
        return self._l.raws[i] if i >= 0 else None

    def raw_lines(self, entry_ids: list[str]) -> list[bytes | None]:
        """:meth:`raw_line` of each id."""
        return [self.raw_line(eid) for eid in entry_ids]

    def _child_lists(self) -> list[list[int]]:
        l = self._l
        n = len(l.ids)
        if self._children is None or self._children_gen != l.generation:
            self._children = [[] for _ in range(n)]
            start = 0
        else:
            start = self._children_n
            self._children.extend([] for _ in range(n - start))
        children = self._children
        parent = l.parent
        for i in range(start, n):
            p = parent[i]
            if p >= 0:
                children[p].append(i)
        self._children_gen = l.generation
        self._children_n = n
        return children

    def children(self, entry_id: str) -> list[dict[str, Any]]:
        """Entries whose parent is ``entry_id``, in file order (Pi's ``getChildren``)."""
        i = self._idx(entry_id)
        if i < 0:
            return []
        entries = self._l.entries
        return [entries[c] for c in self._child_lists()[i]]

    def _path_idx(self, entry_id: object) -> list[int]:
        i = self._idx(entry_id) if entry_id is not None else -1
        parent = self._l.parent
        out = []
        while i >= 0:  # parent links are acyclic (loader rule 10)
            out.append(i)
            i = parent[i]
        out.reverse()
        return out

    def path(self, entry_id: str | None) -> list[dict[str, Any]]:
        """Entries from the root down to ``entry_id`` (empty for ``None`` / unknown)."""
        entries = self._l.entries
        return [entries[i] for i in self._path_idx(entry_id)]

    def path_ids(self, entry_id: str | None) -> list[str]:
        """Ids from the root down to ``entry_id`` (empty for ``None`` / unknown)."""
        ids = self._l.ids
        return [ids[i] for i in self._path_idx(entry_id)]

    def _columns(self) -> array[int]:
        """Bring the per-entry columns up to date; returns the timestamp column."""
        ms, types, roles = self._ms, self._types, self._roles
        entries = self._l.entries
        other_type = len(_TYPE_NAMES) - 1
        other_role = len(_ROLE_NAMES) - 1
        for i in range(len(ms), len(entries)):
            e = entries[i]
            t = parse_iso_ms(e.get("timestamp"))
            ms.append(_NO_TIME if t is None else t)
            etype = e.get("type")
            types.append(_TYPE_CODE.get(etype, other_type) if isinstance(etype, str) else other_type)
            msg = e.get("message") if etype == "message" else None
            role = msg.get("role") if isinstance(msg, dict) else None
            if isinstance(role, str):
                code = _ROLE_CODE.get(role, other_role)
                if code == other_role:
                    self._other_roles[i] = role
                roles.append(code)
            else:
                roles.append(0)
        return ms

    def _tree_order(self) -> tuple[list[int], list[list[int]]]:
        """Roots in file order and each entry's children in ``getTree`` order."""
        ms = self._columns()
        parent = self._l.parent

        def key(c: int) -> tuple[bool, int]:
            # Unparseable times sort after every parseable sibling, in file order.
            t = ms[c]
            return (t == _NO_TIME, t)

        roots = [i for i, p in enumerate(parent) if p < 0]
        return roots, [sorted(kids, key=key) if len(kids) > 1 else kids for kids in self._child_lists()]

    def tree(self) -> list[SessionTreeNode]:
        """The whole forest (Pi's ``getTree``), built iteratively; see module notes.

        Returns:
            Root nodes in file order; each node's children oldest first.
        """
        l = self._l
        labels, label_ts = self._label_maps()
        with gc_paused(len(l.ids)):  # many small objects, no cycles among them
            nodes = [
                SessionTreeNode(entry=e, children=[], label=labels.get(eid), label_timestamp=label_ts.get(eid))
                for eid, e in zip(l.ids, l.entries)
            ]
            roots, order = self._tree_order()
            for node, kids in zip(nodes, order):
                if kids:
                    node.children.extend([nodes[c] for c in kids])
            return [nodes[r] for r in roots]

    def _label_maps(self) -> tuple[dict[str, Any], dict[str, Any]]:
        l = self._l
        labels, label_ts = self._labels, self._label_ts
        entries = l.entries
        apply_labels(
            (label_fields(e) for e in entries[self._labels_n :] if e.get("type") == "label"), labels, label_ts
        )
        self._labels_n = len(entries)
        return labels, label_ts

    def label(self, entry_id: str) -> str | None:
        """The current label of ``entry_id``, or ``None``."""
        try:
            return self._label_maps()[0].get(entry_id)
        except TypeError:
            return None

    def labels(self) -> dict[str, str]:
        """Target id -> label, in the order Pi's ``labelsById`` map holds them."""
        return dict(self._label_maps()[0])

    def label_timestamp(self, entry_id: str) -> str | None:
        """Timestamp of the label entry that set the current label, or ``None``."""
        try:
            return self._label_maps()[1].get(entry_id)
        except TypeError:
            return None

    def session_name(self) -> str | None:
        """The latest ``session_info`` entry's non-empty ``name`` (without one, the
        title slot's ``title``), else ``None``."""
        entries = self._l.entries
        for i in range(self._name_n, len(entries)):
            if entries[i].get("type") == "session_info":
                self._name_idx = i
        self._name_n = len(entries)
        return session_name_of(entries[self._name_idx] if self._name_idx >= 0 else None, self._l.title_slot)

    def context_plan(self, leaf_id: str | None) -> ContextPlan:
        """Pi's context plan along root -> ``leaf_id`` (``_context.plan_context``)."""
        from ._context import plan_context

        return plan_context(self.path(leaf_id))

    # --------------------------------------------------------------- structure
    def shape(self) -> TreeShape:
        """The tree's shape, from the loader's columns (no entry is read again but for
        columns not built yet)."""
        l = self._l
        ms = self._columns()
        roots, order = self._tree_order()
        start = array("I", [0])
        kids = array("I")
        for ch in order:
            kids.extend(ch)
            start.append(len(kids))
        return TreeShape(
            ids=list(l.ids),
            types=CodeColumn(bytes(self._types), _TYPE_NAMES),
            roles=CodeColumn(bytes(self._roles), _ROLE_NAMES, dict(self._other_roles)),
            parents=array("i", l.parent),
            roots=array("I", roots),
            timestamps_ms=TimeColumn(array("q", ms)),
            _start=start,
            _kids=kids,
        )

    def parent_id(self, entry_id: str) -> str | None:
        """The parent's id after cycle breaking (``None`` for a root or unknown id)."""
        i = self._idx(entry_id)
        p = self._l.parent[i] if i >= 0 else -1
        return self._l.ids[p] if p >= 0 else None

    def children_ids(self, entry_id: str) -> list[str]:
        """Ids of the children of ``entry_id`` in file order (empty if unknown)."""
        i = self._idx(entry_id)
        if i < 0:
            return []
        ids = self._l.ids
        return [ids[c] for c in self._child_lists()[i]]

    def leaf_ids(self) -> list[str]:
        """Ids of the entries without children, in file order."""
        ids = self._l.ids
        return [ids[i] for i, kids in enumerate(self._child_lists()) if not kids]

    def entry_type(self, entry_id: str) -> str | None:
        """The entry's ``type`` if one of ``ENTRY_TYPES``, ``"?"`` for another, ``None``
        for an unknown id."""
        i = self._idx(entry_id)
        if i < 0:
            return None
        etype = self._l.entries[i].get("type")
        return etype if isinstance(etype, str) and etype in ENTRY_TYPES else "?"

    def ids_with_prefix(self, prefix: str, limit: int) -> tuple[list[str], int]:
        """The first ``limit`` ids (file order) starting with ``prefix``, and how many do."""
        if not isinstance(prefix, str):
            return [], 0
        found = [eid for eid in self._l.ids if eid.startswith(prefix)]
        return found[:limit], len(found)

    def usage_totals(self) -> UsageTotals:
        """Assistant usage summed over the entries (``_usage.usage_totals``)."""
        return usage_totals(self._l.entries)

    # ------------------------------------------------------------------ growth
    def append_line(self, line: bytes) -> str:
        """Index one entry line the caller wrote (or will write) after the image.

        Args:
            line: the entry's JSON text without LF.

        Returns:
            The new entry's id.

        Raises:
            ValueError: the line was not accepted as a new entry (the caller built a
                bad line: it is still part of the image and reported).
        """
        l = self._l
        head = l.tail + line_prefix(l.pending, l.ends_mid_line)
        at = l.consumed + len(head)
        # Entries another writer glued onto a line read without its LF may come first.
        if l.feed(head + line + b"\n") < 1 or l.spans[-1][0] < at:
            raise ValueError("appended line was not accepted as a new entry")
        return l.ids[-1]

    def refresh(self, path: str) -> int:
        """Index the complete lines appended to ``path`` since ``image_len()``.

        The caller has checked that ``path`` is still the file that was indexed
        (``_filestate``); this only reads the bytes past ``image_len()``.

        Args:
            path: the session file.

        Returns:
            How many entries were added.
        """
        with open(os.fspath(path), "rb") as f:
            f.seek(self._l.consumed)
            data = f.read()
        return self._l.feed(data) if data else 0

    def close(self) -> None:
        """Nothing to release (the file is not held open)."""

    def entries_range(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Entries numbered ``start`` to ``stop - 1`` (file order)."""
        return self._l.entries[start:stop]

    def table_rows(self, start: int, stop: int) -> None:
        """``None``: this backend has no core; the tables decode its entries with
        ``_rows``'s rules (see ``_backend.TreeIndex.table_rows``)."""
        return None

    def table_columns(self, leaf_id: str | None) -> dict[str, bytes]:
        """The ``entries`` table's index columns in Arrow layouts (the native core's
        ``Index.table_columns``, which ``tests/test_tables_arrow.py`` holds equal).

        Args:
            leaf_id: marks the path root -> leaf (``None`` / unknown: no path).

        Returns:
            Buffers by name; see ``_backend.TreeIndex.table_columns``.
        """
        l = self._l
        n = len(l.ids)
        id_offsets = array("i", [0])
        id_data = bytearray()
        for eid in l.ids:
            try:
                id_data += eid.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: each byte of their form is U+FFFD
                id_data += eid.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
            id_offsets.append(len(id_data))
        parent = l.parent
        depth = [-1] * n
        walk: list[int] = []
        for s in range(n):
            x = s
            while x >= 0 and depth[x] < 0:
                walk.append(x)
                x = parent[x]
            d = 0 if x < 0 else depth[x] + 1
            while walk:
                depth[walk.pop()] = d
                d += 1
        on_path = [False] * n
        for i in self._path_idx(leaf_id):
            on_path[i] = True
        ms = [parse_iso_ms(e.get("timestamp")) for e in l.entries]
        return {
            "id_offsets": _le("i", id_offsets),
            "id_data": bytes(id_data),
            "line": _le("q", l.lines),
            "offset": _le("q", (a for a, _ in l.spans)),
            "length": _le("q", (b - a for a, b in l.spans)),
            "parent": _le("i", (max(p, 0) for p in parent)),
            "parent_valid": _bitmap(p >= 0 for p in parent),
            "depth": _le("i", depth),
            "on_path": _bitmap(on_path),
            "timestamp": _le("q", (0 if t is None else t for t in ms)),
            "timestamp_valid": _bitmap(t is not None for t in ms),
        }


def _le(code: str, values: Iterable[int]) -> bytes:
    """Values as a little-endian array of C type ``code``."""
    a = array(code, values)
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def _bitmap(flags: Iterable[bool]) -> bytes:
    """An Arrow bitmap (LSB first) of ``flags``."""
    out = bytearray()
    byte = bit = 0
    for f in flags:
        if f:
            byte |= 1 << bit
        bit += 1
        if bit == 8:
            out.append(byte)
            byte = bit = 0
    if bit:
        out.append(byte)
    return bytes(out)
