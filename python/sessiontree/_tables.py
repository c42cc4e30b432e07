"""Record batches of one session's tables.

The index columns (ids, parents, lines, offsets, lengths, depths, the current path,
timestamps) come from the backend's ``table_columns`` as Arrow buffers and become
arrays without a copy; the other columns come from decoding the entries, batch by
batch (:func:`~sessiontree._rows.entry_fields`), so memory stays bounded by a
batch whatever the session's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

try:
    import pyarrow as pa
    import pyarrow.compute as pc
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        "sessiontree's tables need pyarrow: pip install 'pyarrow>=15' (in a checkout: pip install '.[arrow]')"
    ) from e

from ._time import parse_iso_ms
from . import _rows
from ._rows import Call, Result, calls_of, entry_fields, result_of
from ._table_schema import ENTRIES, SCHEMAS, SESSIONS, TIMESTAMP, TOOL_CALLS

if TYPE_CHECKING:
    from ._backend import TreeIndex
    from ._backend import LoadIssue

__all__ = ["Source", "SessionTables", "BATCH_ROWS", "BATCH_BYTES", "TABLES", "session_reader"]

TABLES = tuple(SCHEMAS)
"""The table names: ``sessions``, ``entries``, ``tool_calls``."""

BATCH_ROWS = 16_384
"""Most entries decoded per batch."""
BATCH_BYTES = 16 << 20
"""Most bytes of entry lines decoded per batch (a batch holds at least one entry)."""


class Session(Protocol):
    """What the tables read of an open ``SessionManager`` besides its index."""

    @property
    def file_version(self) -> Any: ...
    @property
    def leaf_id(self) -> str | None: ...
    @property
    def session_file(self) -> str | None: ...
    @property
    def load_report(self) -> list[LoadIssue]: ...
    def get_header(self) -> Any: ...
    def get_session_name(self) -> str | None: ...


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
    def of(cls, sm: Session, index: TreeIndex) -> Source:
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
    if n and pc.max(pc.binary_length(ids)).as_py() > _rows.MAX_FIELD:  # an adversarial id
        ids = pa.array([_rows.field(i) for i in ids.to_pylist()], pa.string())
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


_TYPES = [ENTRIES.field(name).type for name in _rows.ENTRY_FIELDS]
_IMAGES = ENTRIES.field("images").type
_CALLS = pa.schema([("entry", pa.int32()), ("call_id", pa.string()), ("tool_name", pa.string()),
                    ("arguments", pa.string()), ("arguments_bytes", pa.int64())])  # fmt: skip
_RESULTS = pa.schema([("entry", pa.int32()), ("call_id", pa.string()), ("is_error", pa.bool_()),
                      ("text", pa.string()), ("text_bytes", pa.int64()), ("images", _IMAGES)])  # fmt: skip


@dataclass
class _Decoded:
    """One batch's decoded columns: ``entries``'s (:data:`_rows.ENTRY_FIELDS` order),
    its tool calls and its results (entry numbers counted from the session's first)."""

    fields: list[pa.Array]
    calls: pa.Table
    results: pa.Table
    bad_blocks: int


def _stubs(stubs: list[dict[str, Any]]) -> tuple[pa.Array, int]:
    if not stubs:  # most batches hold no image: no conversion
        return _NO_STUBS, 0
    return pa.array(stubs, _IMAGES.value_type), sum(s["problem"] is not None for s in stubs)


_NO_STUBS = pa.array([], _IMAGES.value_type)
_NO_IMAGES = pa.scalar([], _IMAGES)


def _decode_python(index: TreeIndex, a: int, b: int) -> _Decoded:
    """The python backend's batch: ``_rows``'s rules over the decoded entries."""
    entries = index.entries_range(a, b)
    calls: list[Call] = []
    results: list[tuple[str, Result]] = []
    for i, e in enumerate(entries, a):
        calls.extend(calls_of(e, i, partial(index.raw_line, e["id"])))
        r = result_of(e, i)
        if r is not None:
            results.append(r)
    columns = list(zip(*map(entry_fields, entries)))
    flat = [stub for images in columns[_IMAGE_AT] for stub in images]
    _, bad = _stubs(flat)
    fields = [pa.array(values, t) for values, t in zip(columns, _TYPES)]
    return _Decoded(
        fields,
        pa.Table.from_pydict({"entry": [k.entry for k in calls], "call_id": [k.call_id for k in calls],
                              "tool_name": [k.tool_name for k in calls], "arguments": [k.arguments for k in calls],
                              "arguments_bytes": [k.arguments_bytes for k in calls]}, schema=_CALLS),
        pa.Table.from_pydict({"entry": [r.entry for _, r in results], "call_id": [c for c, _ in results],
                              "is_error": [r.is_error for _, r in results], "text": [r.text for _, r in results],
                              "text_bytes": [r.text_bytes for _, r in results],
                              "images": [r.images for _, r in results]}, schema=_RESULTS),
        bad,
    )  # fmt: skip


_IMAGE_AT = _rows.ENTRY_FIELDS.index("images")


def _decode_native(d: dict[str, bytes], a: int, n: int) -> _Decoded:
    """The native backend's batch: the core's columns (``Index.table_rows``), images'
    stubs made here (``_rows.image_stub``: one home for the base64 rule)."""

    def strs(name: str, k: int) -> pa.Array:
        offsets = d[f"{name}.offsets"]
        wide = len(offsets) > 4 * (k + 1)  # past 2 GiB: i64 offsets
        a = pa.Array.from_buffers(pa.large_string() if wide else pa.string(), k,
                                  [_buf(d[f"{name}.valid"]), _buf(offsets), _buf(d[f"{name}.data"])])  # fmt: skip
        return a.cast(pa.string()) if wide else a  # (past 2 GiB raises ArrowInvalid: the session fails, reported)

    def opt(name: str, t: pa.DataType, k: int, values: str = "values") -> pa.Array:
        return pa.Array.from_buffers(t, k, [_buf(d[f"{name}.valid"]), _buf(d[f"{name}.{values}"])])

    def entry_numbers(name: str) -> pa.Array:
        local = pa.Array.from_buffers(pa.int32(), len(d[name]) // 4, [None, _buf(d[name])])
        return (pc.add(local, pa.scalar(a, pa.int32())) if a else local), local  # a session's first batch: as they are

    image_offsets = d["images.offsets"]
    offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, _buf(image_offsets)])
    # The images in the batch: the last offset (little-endian i32), read without a scalar.
    m = int.from_bytes(image_offsets[-4:], "little", signed=True) if len(image_offsets) >= 4 else 0
    if m:
        offsets_data = d["image_data.offsets"]
        data = pa.Array.from_buffers(pa.large_binary() if len(offsets_data) > 4 * (m + 1) else pa.binary(), m,
                                     [_buf(d["image_data.valid"]), _buf(offsets_data), _buf(d["image_data.data"])]).to_pylist()  # fmt: skip
        mimes = strs("image_mime", m).to_pylist()
        stub_array, bad = _stubs([_rows.image_stub(x, y) for x, y in zip(data, mimes)])
    else:
        stub_array, bad = _NO_STUBS, 0
    images = pa.ListArray.from_arrays(offsets, stub_array, type=_IMAGES)
    by_name = {name: strs(name, n) for name in _STRING_FIELDS}
    by_name |= {name: opt(name, pa.int64(), n) for name in _INT_FIELDS}
    by_name["cost"] = opt("cost", pa.float64(), n)
    by_name["is_error"] = opt("is_error", pa.bool_(), n)
    by_name["images"] = images
    calls_at, _ = entry_numbers("call.entry")
    k = len(calls_at)
    calls = pa.Table.from_arrays([calls_at, strs("call_id", k), strs("tool_name", k), strs("arguments", k),
                                  opt("arguments_bytes", pa.int64(), k)], schema=_CALLS)  # fmt: skip
    results_at, local = entry_numbers("result.entry")
    k = len(results_at)
    results = pa.Table.from_arrays([results_at, strs("result_call", k), opt("result_is_error", pa.bool_(), k),
                                    strs("result_text", k), opt("result_text_bytes", pa.int64(), k),
                                    images.take(local)], schema=_RESULTS)  # fmt: skip
    return _Decoded([by_name[name] for name in _rows.ENTRY_FIELDS], calls, results, bad)


_STRING_FIELDS = ("type", "role", "provider", "model", "stop_reason", "text", "custom_type", "label", "target_id",
                  "first_kept_entry_id")  # fmt: skip
_INT_FIELDS = ("text_bytes", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
               "total_tokens", "tokens_before")  # fmt: skip


class SessionTables:
    """The ``sessions``, ``entries`` and ``tool_calls`` tables of one session.

    :meth:`entries` decodes the session once, batch by batch, and gathers the tool
    calls, the results and the bad blocks on the way, so that :meth:`tool_calls` and
    :meth:`session_row` after it cost no second pass (alone, each makes that pass).
    The native backend decodes in the core (``Index.table_rows``, GIL released), the
    python backend with ``_rows``'s rules: the same columns (``tests/test_tables_rows.py``).
    """

    def __init__(self, src: Source) -> None:
        self.src = src
        self._c = _columns(src)
        self.session_id = _rows.field(src.header.get("id"))
        self._calls: list[pa.Table] | None = None
        self._results: list[pa.Table] = []
        self.bad_blocks = 0

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

    def _decoded(self) -> Iterator[tuple[int, int, _Decoded]]:
        index = self.src.index
        rows = index.table_rows
        calls: list[pa.Table] = []
        self._results, self.bad_blocks = [], 0
        for a, b in self._ranges():
            d = rows(a, b)
            dec = _decode_python(index, a, b) if d is None else _decode_native(d, a, b - a)
            calls.append(dec.calls)
            self._results.append(dec.results)
            self.bad_blocks += dec.bad_blocks
            yield a, b, dec
        self._calls = calls

    def entries(self) -> Iterator[pa.RecordBatch]:
        """The ``entries`` table in batches of at most :data:`BATCH_ROWS` entries or
        :data:`BATCH_BYTES` bytes of lines, in file order.

        Raises:
            StaleSessionError: the file changed under the session while it was read.
        """
        c = self._c
        sid = pa.scalar(self.session_id, pa.string())
        for a, b, dec in self._decoded():
            k = b - a
            arrays = [pa.repeat(sid, k), c.ids.slice(a, k), c.parent_ids.slice(a, k), c.line.slice(a, k),
                      c.offset.slice(a, k), c.length.slice(a, k), dec.fields[0],
                      c.timestamp.slice(a, k), c.depth.slice(a, k), c.on_path.slice(a, k), *dec.fields[1:]]  # fmt: skip
            yield pa.RecordBatch.from_arrays(arrays, schema=ENTRIES)

    def _pass(self) -> None:
        if self._calls is None:
            for _ in self._decoded():
                pass

    def tool_calls(self) -> pa.Table:
        """The ``tool_calls`` table: every tool call in file order, joined with the
        first ``toolResult`` in file order whose ``toolCallId`` is the call's id."""
        self._pass()
        assert self._calls is not None
        c = self._c
        # One batch's tables as they are (most sessions are one batch); no call: no join.
        calls = self._calls[0] if len(self._calls) == 1 else pa.concat_tables([_CALLS.empty_table(), *self._calls])
        n = calls.num_rows
        if not n:
            return TOOL_CALLS.empty_table()
        results = (self._results[0] if len(self._results) == 1
                   else pa.concat_tables([_RESULTS.empty_table(), *self._results]))  # fmt: skip
        found = pc.index_in(calls.column("call_id"), value_set=results.column("call_id"))
        res = results.take(found)
        # The calling entry's id, time and place on the path: one take of the three.
        of_call = pa.Table.from_arrays([c.ids, c.timestamp, c.on_path], ["id", "timestamp", "on_path"]).take(
            calls.column("entry"))
        missing = found.null_count
        return pa.Table.from_arrays(
            [
                pa.repeat(pa.scalar(self.session_id, pa.string()), n),
                calls.column("call_id"),
                calls.column("tool_name"),
                calls.column("arguments"),
                calls.column("arguments_bytes"),
                of_call.column(0),
                of_call.column(1),
                of_call.column(2),
                c.ids.take(res.column("entry")),
                res.column("is_error"),
                res.column("text"),
                res.column("text_bytes"),
                # A call without a result has no images (an empty list), not a null one.
                pc.if_else(pc.is_null(found), _NO_IMAGES, res.column("images")) if missing else res.column("images"),
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
            "path": _rows.field(src.path),
            "cwd": _rows.field(h.get("cwd")),
            "name": _rows.field(src.name),
            "parent_session": _rows.field(h.get("parentSession")),
            "created": created,
            "modified": latest if latest is not None else created,
            "entry_count": c.n,
            "leaf_id": _rows.field(src.leaf_id),
            "bytes": src.index.image_len(),
            "version": _rows.integer(src.version),
            "load_issues": src.load_issues,
            "bad_blocks": self._bad_blocks(),
        }

    def _bad_blocks(self) -> int:
        self._pass()
        return self.bad_blocks


def sessions_table(rows: list[dict[str, Any]]) -> pa.Table:
    """The ``sessions`` table of rows from :meth:`SessionTables.session_row`."""
    return pa.Table.from_pylist(rows, schema=SESSIONS)


def session_reader(sm: Session, index: TreeIndex, table: str) -> pa.RecordBatchReader:
    """One table of an open session as a lazy ``pyarrow.RecordBatchReader``
    (``SessionManager.to_arrow``'s body).

    Raises:
        ValueError: ``table`` is not one of :data:`TABLES`.
    """
    if table not in SCHEMAS:
        raise ValueError(f"no table {table!r}: use one of {', '.join(TABLES)}")
    tables = SessionTables(Source.of(sm, index))
    batches: Any
    if table == "entries":
        batches = tables.entries()
    elif table == "tool_calls":
        batches = tables.tool_calls().to_batches()
    else:
        batches = sessions_table([tables.session_row()]).to_batches()
    return pa.RecordBatchReader.from_batches(SCHEMAS[table], batches)
