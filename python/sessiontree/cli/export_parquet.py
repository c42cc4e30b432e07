"""``sessiontree export --format parquet``: sessions as a Parquet dataset for DuckDB,
Polars and Spark.

The sessions are those of the command line's scope (``_scope``). The dataset in OUT has three tables (``sessions``, ``entries``, ``tool_calls``),
Hive-partitioned by project and date, zstd-compressed; run again, only the sessions
that changed are rewritten. Schema and queries: docs/TABLES.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ._common import CliError, Io, count_progress, skip_note
from ..view import human_bytes, safe


def run_parquet(sources: Sequence[str], *, where: str, out: str, backend: str, as_json: bool, io: Io) -> int:
    """Export the sessions of ``sources`` (files, and folders each without its
    subfolders: ``_scope.Scope.sources``) to the dataset in ``out``; print a summary
    (with the bad blocks marked: sessions holding them are exported, docs/TABLES.md),
    and a note on stderr for each file whose damaged lines were left out.
    Exit status 1 if a named path or a session could not be exported, else 0.

    Raises:
        CliError: no session in the scope (``where`` names it), or pyarrow is missing.
    """
    # numpy, which pyarrow imports, starts OpenBLAS's threads, which spin ~0.14 s of CPU
    # at the start of this process and of each worker (which inherits the variable);
    # nothing here uses BLAS. A value the user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from ..tables import export_parquet, session_paths
    except ImportError as e:
        raise CliError(str(e)) from None
    problems: list[tuple[str, str]] = []
    sessions = session_paths(sources, on_problem=lambda p, r: problems.append((p, r)))
    if not sessions and not problems:
        # An empty dataset and status 0 would read as "exported".
        raise CliError(f"no sessions found in {safe(where)}")
    with count_progress(io, "exporting") as update:
        # Worker processes: the command line's main module is guarded (`_parquet`'s spawn).
        result = export_parquet(sessions, out, backend=backend, on_progress=lambda d, t, _p: update(d, t),
                                processes=True, left_out=problems)
    failed = result.failed
    mb = result.bytes_read / 1e6
    if as_json:  # indented, by the writer every command's --json uses
        io.write_json({
            "out": out, "written": len(result.written), "skipped": result.skipped, "removed": result.removed,
            "failed": [{"path": p, "reason": r} for p, r in failed], "badBlocks": result.bad_blocks,
            "bytesRead": result.bytes_read,
            "linesSkipped": [{"path": p, "lines": n} for p, n in result.lines_skipped],
            "strays": result.strays,
            "seconds": round(result.seconds, 3),
        })
    else:
        rate = mb / result.seconds if result.seconds > 0 else 0.0
        speed = f", {rate:,.{0 if rate >= 10 else 1}f} MB/s" if rate >= 0.05 and result.written else ""
        io.out.print(f"{safe(out)}: {len(result.written):,} session(s) written ({human_bytes(result.bytes_read)} read{speed}), "
                     f"{result.skipped:,} unchanged, {result.removed:,} removed, {len(failed):,} file(s) failed "
                     f"({result.seconds:.2f} s)", markup=False, highlight=False)  # fmt: skip
        for p, r in failed:
            io.err.print(f"  skipped {safe(p)}: {safe(r)}", markup=False, highlight=False)
        if result.bad_blocks:
            io.err.print(f"  {result.bad_blocks} bad blocks marked (images whose data does not decode), their sessions "
                         "exported: sessions.bad_blocks, entries.images.problem", markup=False, highlight=False)  # fmt: skip
    if result.strays:  # on stderr, with --json too: the dataset's readers would take them for its own
        first = os.path.join(out, result.strays[0])
        io.note(f"warning: {len(result.strays):,} .parquet file(s) in {safe(out)} not written by this export, which "
                f"the tables' globs read too (e.g. {safe(first)}): left as they are; move them out of the folder")
    for p, n in result.lines_skipped:  # on stderr, with --json too: the note of every export
        io.note(skip_note(p, n))
    return 1 if failed else 0
