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

try:
    import pyarrow  # noqa: F401  (else the message below)
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError(
        "sessiontree.tables needs pyarrow: pip install 'pyarrow>=15' (in a checkout: pip install '.[arrow]')"
    ) from e

from .._rows import MAX_ARGUMENTS, MAX_FIELD, MAX_RESULT, MAX_TEXT
from .._table_schema import ENTRIES, SCHEMAS, SESSIONS, TOOL_CALLS
from .._tables import TABLES, session_reader
from ._parquet import ExportResult, export_parquet, session_paths

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
