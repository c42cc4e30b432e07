"""Record batches of one session's tables.

The index columns (ids, parents, lines, offsets, lengths, depths, the current path,
timestamps) come from the backend's ``table_columns`` as Arrow buffers and become
arrays without a copy; the other columns come from decoding the entries, batch by
batch (:func:`~sessiontree.tables._fields.entry_fields`), so memory stays bounded by a
batch whatever the session's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .._time import parse_iso_ms
from . import _fields
from ._fields import Call, Result, calls_of, entry_fields, result_of
from ._schema import ENTRIES, SESSIONS, TIMESTAMP, TOOL_CALLS

if TYPE_CHECKING:
    from .._backend import TreeIndex
    from .._manager import SessionManager

__all__ = ["Source", "SessionTables", "BATCH_ROWS", "BATCH_BYTES"]

BATCH_ROWS = 16_384
"""Most entries decoded per batch."""
BATCH_BYTES = 16 << 20
"""Most bytes of entry lines decoded per batch (a batch holds at least one entry)."""


@dataclass(frozen=True)
class Source:
    """What the tables of one session are built from: its index and the facts the
    manager holds (the leaf, the header, the name, the load report)."""

    index: TreeIndex
    leaf_id: str | None
    header: dict[str, Any]
    path: str | None
    name: str | None
    version: Any
    load_issues: int
    # Migrated (version 1/2) sessions are indexed from their v3 image: line numbers
    # and byte offsets would not lead back to the file, so they are left null.
    migrated: bool

    @classmethod
    def of(cls, sm: SessionManager, index: TreeIndex) -> Source:
        """The source of an open session (``index`` is its backend index)."""
        version = sm.file_version
        return cls(index, sm.leaf_id, sm.get_header(), sm.session_file, sm.get_session_name(), version,
                   len(sm.load_report), version != 3)  # fmt: skip


def _buf(b: bytes) -> pa.Buffer:
    return pa.py_buffer(b)


@dataclass
class _Columns:
    n: int
    ids: pa.Array
    parent_ids: pa.Array
    line: pa.Array
    offset: pa.Array
    length: pa.Array
    depth: pa.Array
    on_path: pa.Array
    timestamp: pa.Array
    lengths: memoryview = field(repr=False)


def _columns(src: Source) -> _Columns:
    cols = src.index.table_columns(src.leaf_id)
    n = len(cols["id_offsets"]) // 4 - 1
    ids = pa.Array.from_buffers(pa.string(), n, [None, _buf(cols["id_offsets"]), _buf(cols["id_data"])])
    if n and pc.max(pc.binary_length(ids)).as_py() > _fields.MAX_FIELD:  # an adversarial id
        ids = pa.array([_fields.field(i) for i in ids.to_pylist()], pa.string())
    parent = pa.Array.from_buffers(pa.int32(), n, [_buf(cols["parent_valid"]), _buf(cols["parent"])])
    i64 = pa.int64()

    def ints(name: str) -> pa.Array:
        if src.migrated:
            return pa.nulls(n, i64)
        return pa.Array.from_buffers(i64, n, [None, _buf(cols[name])])

    return _Columns(
        n=n,
        ids=ids,
        parent_ids=ids.take(parent),
        line=ints("line"),
        offset=ints("offset"),
        length=ints("length"),
        depth=pa.Array.from_buffers(pa.int32(), n, [None, _buf(cols["depth"])]),
        on_path=pa.Array.from_buffers(pa.bool_(), n, [None, _buf(cols["on_path"])]),
        timestamp=pa.Array.from_buffers(TIMESTAMP, n, [_buf(cols["timestamp_valid"]), _buf(cols["timestamp"])]),
        lengths=memoryview(cols["length"]).cast("q"),
    )


_TYPES = [ENTRIES.field(name).type for name in _fields.ENTRY_FIELDS]


class SessionTables:
    """The ``sessions``, ``entries`` and ``tool_calls`` tables of one session.

    :meth:`entries` decodes the session once, batch by batch, and gathers the tool
    calls and results on the way, so that :meth:`tool_calls` after it costs no second
    pass (alone, it makes its own pass, extracting only calls and results).
    """

    def __init__(self, src: Source) -> None:
        self.src = src
        self._c = _columns(src)
        self.session_id = _fields.field(src.header.get("id"))
        self._calls: list[Call] | None = None
        self._results: dict[str, Result] = {}

    # -------------------------------------------------------------------- pass
    def _ranges(self) -> Iterator[tuple[int, int]]:
        lengths, n = self._c.lengths, self._c.n
        a = 0
        while a < n:
            b, size = a, 0
            while b < n and b - a < BATCH_ROWS and (size < BATCH_BYTES or b == a):
                size += lengths[b]
                b += 1
            yield a, b
            a = b

    def _gather(self, entries: list[Any], start: int, calls: list[Call]) -> None:
        results = self._results
        for i, e in enumerate(entries, start):
            calls.extend(calls_of(e, i))
            r = result_of(e, i)
            if r is not None and r[0] not in results:  # the first result of a call stands
                results[r[0]] = r[1]

    def entries(self) -> Iterator[pa.RecordBatch]:
        """The ``entries`` table in batches of at most :data:`BATCH_ROWS` entries or
        :data:`BATCH_BYTES` bytes of lines, in file order.

        Raises:
            StaleSessionError: the file changed under the session while it was read.
        """
        c = self._c
        calls: list[Call] = []
        index = self.src.index
        sid = pa.scalar(self.session_id, pa.string())
        for a, b in self._ranges():
            entries = index.entries_range(a, b)
            self._gather(entries, a, calls)
            fields = list(zip(*map(entry_fields, entries)))
            k = b - a
            arrays = [pa.repeat(sid, k), c.ids.slice(a, k), c.parent_ids.slice(a, k), c.line.slice(a, k),
                      c.offset.slice(a, k), c.length.slice(a, k)]  # fmt: skip
            decoded = [pa.array(values, t) for values, t in zip(fields, _TYPES)]
            arrays.append(decoded[0])  # type
            arrays += [c.timestamp.slice(a, k), c.depth.slice(a, k), c.on_path.slice(a, k)]
            arrays += decoded[1:]
            yield pa.RecordBatch.from_arrays(arrays, schema=ENTRIES)
        self._calls = calls

    def _only_calls(self) -> None:
        calls: list[Call] = []
        for a, b in self._ranges():
            self._gather(self.src.index.entries_range(a, b), a, calls)
        self._calls = calls

    def tool_calls(self) -> pa.Table:
        """The ``tool_calls`` table: every tool call in file order, joined with the
        first ``toolResult`` in file order whose ``toolCallId`` is the call's id."""
        if self._calls is None:
            self._only_calls()
        assert self._calls is not None
        calls, results, c = self._calls, self._results, self._c
        found = [results.get(k.call_id) if k.call_id is not None else None for k in calls]
        at = pa.array([k.entry for k in calls], pa.int32())
        res_at = pa.array([r.entry if r is not None else None for r in found], pa.int32())
        return pa.Table.from_arrays(
            [
                pa.repeat(pa.scalar(self.session_id, pa.string()), len(calls)),
                pa.array([k.call_id for k in calls], pa.string()),
                pa.array([k.tool_name for k in calls], pa.string()),
                pa.array([k.arguments for k in calls], pa.string()),
                pa.array([k.arguments_bytes for k in calls], pa.int64()),
                c.ids.take(at),
                c.timestamp.take(at),
                c.on_path.take(at),
                c.ids.take(res_at),
                pa.array([r.is_error if r is not None else None for r in found], pa.bool_()),
                pa.array([r.text if r is not None else None for r in found], pa.string()),
                pa.array([r.text_bytes if r is not None else None for r in found], pa.int64()),
                pa.array([r.images if r is not None else [] for r in found], TOOL_CALLS.field("result_images").type),
            ],
            schema=TOOL_CALLS,
        )

    # ---------------------------------------------------------------- sessions
    def session_row(self) -> dict[str, Any]:
        """The session's row of the ``sessions`` table, as plain values (times in epoch
        ms): what the export's manifest keeps to rebuild the table."""
        src, c = self.src, self._c
        h = src.header
        created = parse_iso_ms(h.get("timestamp"))
        latest = pc.max(c.timestamp).value if c.n else None
        return {
            "session_id": self.session_id,
            "path": _fields.field(src.path),
            "cwd": _fields.field(h.get("cwd")),
            "name": _fields.field(src.name),
            "parent_session": _fields.field(h.get("parentSession")),
            "created": created,
            "modified": latest if latest is not None else created,
            "entry_count": c.n,
            "leaf_id": _fields.field(src.leaf_id),
            "bytes": src.index.image_len(),
            "version": _fields.integer(src.version),
            "load_issues": src.load_issues,
        }


def sessions_table(rows: list[dict[str, Any]]) -> pa.Table:
    """The ``sessions`` table of rows from :meth:`SessionTables.session_row`."""
    return pa.Table.from_pylist(rows, schema=SESSIONS)
