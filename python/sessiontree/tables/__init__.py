"""Sessions as tables: Arrow streams and Parquet for DuckDB, Polars and Spark.

Three tables with fixed schemas (docs/TABLES.md): ``sessions`` (one row per session
file), ``entries`` (one row per entry) and ``tool_calls`` (each tool call joined with
its result). :meth:`SessionManager.to_arrow` gives one of them as an Arrow stream
(the PyCapsule interface, ``__arrow_c_stream__``: pyarrow, Polars and DuckDB import it
without a copy); :func:`export_parquet` writes a folder of sessions (or the whole Pi
history) as a Hive-partitioned Parquet dataset and, run again, rewrites only the
sessions that changed.

Needs pyarrow: ``pip install pyarrow`` (the ``arrow`` extra: ``pip install '.[arrow]'`` in a checkout; docs/TABLES.md says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import pyarrow as _pa
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        "sessiontree.tables needs pyarrow: pip install 'pyarrow>=15' (in a checkout: pip install '.[arrow]')"
    ) from e

from .._tables import SessionTables, Source, sessions_table
from .._rows import MAX_ARGUMENTS, MAX_FIELD, MAX_RESULT, MAX_TEXT
from ._parquet import ExportResult, export_parquet, session_paths
from .._table_schema import ENTRIES, SCHEMAS, SESSIONS, TOOL_CALLS

if TYPE_CHECKING:
    from .._backend import TreeIndex
    from .._manager import SessionManager

__all__ = [
    "TABLES",
    "SCHEMAS",
    "SESSIONS",
    "ENTRIES",
    "TOOL_CALLS",
    "MAX_TEXT",
    "MAX_RESULT",
    "MAX_ARGUMENTS",
    "MAX_FIELD",
    "ExportResult",
    "export_parquet",
    "session_paths",
    "session_reader",
]

TABLES = tuple(SCHEMAS)
"""The table names: ``sessions``, ``entries``, ``tool_calls``."""


def session_reader(sm: SessionManager, index: TreeIndex, table: str) -> _pa.RecordBatchReader:
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
    return _pa.RecordBatchReader.from_batches(SCHEMAS[table], batches)
