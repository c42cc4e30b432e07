"""Where one session's Parquet export spends its CPU: ``tables._parquet._export_one``'s
steps timed with ``time.thread_time`` on one thread, as a worker process runs them
(``_worker_start``: its holds), over every ``--every``-th session of a history.

    python benches/parquet_phases.py ROOT OUT [--every 4]
    # seconds per step, summed over the sessions (OUT: a new folder; the datasets' files)

Steps: ``open`` (``SessionManager.open``), ``tables_init`` (the index columns),
``entries_batches`` (the core's row decoding and the batches' Arrow glue, of which
``decode_glue``), ``write_entries`` / ``write_calls`` (each file whole: folder, temporary
file, writer, rename; of which ``writer_open``, ``write_table``, ``writer_close``),
``tool_calls_glue`` (the join), ``row`` (the sessions row). Run it against another
checkout with ``PYTHONPATH=DIR/python`` for an A/B; a folder whose files were deleted
in the last ~35 s makes ext4's creates cost more (``recently_deleted``): use new folders.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import os
import time
import warnings
from typing import Any

from sessiontree import SessionManager
from sessiontree import _tables as T
from sessiontree._backend import skipped_lines
from sessiontree._table_schema import SCHEMAS
from sessiontree._tables import SessionTables, Source
from sessiontree._time import parse_iso_ms
from sessiontree.errors import LoadReportWarning
from sessiontree.tables import _parquet as P


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("out")
    p.add_argument("--every", type=int, default=4)
    a = p.parse_args()
    warnings.simplefilter("ignore", LoadReportWarning)
    paths = sorted(glob.glob(os.path.join(a.root, "*", "*.jsonl")))[:: a.every]
    acc: collections.Counter[str] = collections.Counter()
    clk = time.thread_time

    def timed(name: str, f: Any) -> Any:
        def g(*args: Any, **kw: Any) -> Any:
            t = clk()
            try:
                return f(*args, **kw)
            finally:
                acc[name] += clk() - t

        return g

    T._decode_native = timed("decode_glue", T._decode_native)  # type: ignore[assignment]
    P._Writer._flush = timed("write_table", P._Writer._flush)  # type: ignore[method-assign]
    P._Writer.__init__ = timed("writer_open", P._Writer.__init__)  # type: ignore[method-assign]

    def close(self: Any) -> None:
        self._flush()
        t = clk()
        self.w.close()
        acc["writer_close"] += clk() - t

    P._Writer.close = close  # type: ignore[method-assign]
    try:
        from sessiontree._caches import held_index_cache as held  # type: ignore[attr-defined]
    except ImportError:  # a checkout before it
        held = contextlib.nullcontext
    P._worker_start()
    t0 = clk()
    with held():
        for path in paths:
            t = clk()
            st = os.stat(path)
            sm = SessionManager.open(path)
            acc["open"] += clk() - t
            with sm:
                t = clk()
                tables = SessionTables(Source.of(sm, sm._index))
                acc["tables_init"] += clk() - t
                h = sm.get_header()
                part = f"project={P._project(h.get('cwd'))}/date={P._date(parse_iso_ms(h.get('timestamp')), st)}"
                key = P._key(path)
                t = clk()
                batches = list(tables.entries())
                acc["entries_batches"] += clk() - t
                if len(sm):
                    t = clk()
                    P._write(os.path.join(a.out, f"entries/{part}/{key}.parquet"), SCHEMAS["entries"], batches)
                    acc["write_entries"] += clk() - t
                t = clk()
                calls = tables.tool_calls()
                acc["tool_calls_glue"] += clk() - t
                if calls.num_rows:
                    t = clk()
                    P._write(os.path.join(a.out, f"tool_calls/{part}/{key}.parquet"), SCHEMAS["tool_calls"],
                             calls.to_batches())  # fmt: skip
                    acc["write_calls"] += clk() - t
                t = clk()
                tables.session_row()
                skipped_lines(sm.load_report)
                acc["row"] += clk() - t
    total = clk() - t0
    for k, v in sorted(acc.items(), key=lambda x: -x[1]):
        print(f"{k:18s} {v:7.3f} s  {v / len(paths) * 1e3:6.3f} ms a session")
    print(f"{'total':18s} {total:7.3f} s  {total / len(paths) * 1e3:6.3f} ms a session ({len(paths)} sessions)")


if __name__ == "__main__":
    main()
