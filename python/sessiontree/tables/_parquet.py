"""Sessions to a Hive-partitioned Parquet dataset, incrementally (docs/TABLES.md).

Layout under the output folder::

    sessions/project=P/date=D/sessions.parquet      every session of that partition
    entries/project=P/date=D/<key>.parquet          one file per session
    tool_calls/project=P/date=D/<key>.parquet       one file per session (if it has calls)
    _sessiontree_manifest.json                      what each file was made from

``P`` is the session's project (the name of Pi's folder for its ``cwd``, ``--home-u-p--``,
with any character other than ``A-Z a-z 0-9 . _ -`` as ``_``), ``D`` the UTC date of
its header's time. Files are compressed (zstd for the long text, snappy for the rest),
in row groups of up to :data:`ROW_GROUP_ROWS` rows. Sessions are exported in worker
processes, one per CPU (in threads of this process below :data:`PROCESS_BYTES`). A
session is the unit of change: the manifest keeps each source file's identity (device, inode, size, mtime, ctime); a run skips a session whose file
has the same identity as when it was exported, rewrites those that changed, and drops
those whose file is gone; a session file no record names (one a killed run renamed
into place) is removed before the run starts. Every file is written as every output is
(``_output``: under
a temporary name, renamed into place; removed if the run is stopped); names beginning with ``.`` or ``_`` are ignored by Spark, DuckDB's
``*.parquet`` globs and Polars.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import itertools
import json
import multiprocessing
import os
import re
import signal
import stat
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .._caches import held_index_cache
from .._output import open_output
from .._storage import file_kind, held_handlers
from .._places import session_dir_for_cwd
from .._time import parse_iso_ms
from .._backend import skipped_lines
from ..errors import InvalidSessionError, LoadReportWarning, SessionError
from .. import _rows
from .._tables import SessionTables, Source, sessions_table
from .._table_schema import SCHEMAS

__all__ = ["ExportResult", "export_parquet", "session_paths", "ROW_GROUP_ROWS", "ROW_GROUP_BYTES", "MANIFEST",
           "PROCESS_BYTES"]

ROW_GROUP_ROWS = 122_880
"""Most rows of a row group (DuckDB's own row-group size: one unit of its parallel scan)."""
ROW_GROUP_BYTES = 128 << 20
"""Most bytes of Arrow data buffered for one row group."""
MANIFEST = "_sessiontree_manifest.json"
_LOCK = ".sessiontree-export.lock"
# Changes whenever the tables would come out differently: a manifest written under
# another format is ignored, and every session is exported again.
_FORMAT = hashlib.sha256(
    repr(([str(s) for s in SCHEMAS.values()], _rows.MAX_TEXT, _rows.MAX_RESULT, _rows.MAX_ARGUMENTS,
          _rows.MAX_FIELD, 2)).encode()
).hexdigest()[:16]  # fmt: skip
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
# A partition as `_export_one` names it (`_project`, `_date`): the only names a manifest's
# `pending` may hold, so that a hand-edited one (`..`, `./`, a link's name) makes a run
# remove no file but a partition's own `sessions.parquet` (adversary 60c).
_PARTITION = re.compile(r"project=(?!\.\.?/)[A-Za-z0-9._-]+/date=[0-9]+-[0-9]{2}-[0-9]{2}")
_KEPT = " (its previous export is kept)"


@dataclass
class ExportResult:
    """What one :func:`export_parquet` run did.

    Attributes:
        written: session files exported (new or changed), in the order given.
        skipped: sessions unchanged since the last run (their files kept).
        removed: sessions whose file no longer exists (their Parquet files deleted).
        failed: ``(path, reason)`` of files that could not be exported (not sessions,
            unreadable, changed while read); an earlier export of a file that still
            exists is kept (the reason says so), that of a file gone is deleted. Then
            the ``sessions/…/sessions.parquet`` of each partition whose file could not
            be written (a FIFO or a folder in its place: never opened, never removed),
            its path and why; the other partitions are written, and the next run
            tries that one again.
        bad_blocks: content blocks of the written sessions marked bad (an image whose
            data does not decode: ``entries.images.problem``; per session:
            ``sessions.bad_blocks``). Their entries and sessions are exported.
        bytes_read: bytes of session files read (the ``bytes`` of the written ones).
        lines_skipped: ``(path, lines)`` of the written sessions whose file has damaged
            lines (``_backend.skipped_lines``: not read as entries, so in no table), in
            the order given.
        strays: ``.parquet`` files under the tables' folders (``sessions``, ``entries``,
            ``tool_calls``) that no record of the dataset names (left there by hand or
            by another tool), relative to ``out`` with ``/``, sorted: kept, as they are
            not the export's to delete, but the tables' ``**/*.parquet`` globs read
            them too (names beginning with ``.`` or ``_`` are passed over, as the
            globs pass them over).
        seconds: wall time of the run.
    """

    written: list[str] = field(default_factory=list)
    skipped: int = 0
    removed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    bad_blocks: int = 0
    bytes_read: int = 0
    lines_skipped: list[tuple[str, int]] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)
    seconds: float = 0.0


def session_paths(paths: Sequence[str] = (), *, all_projects: bool = False,
                  on_problem: Callable[[str, str], None] | None = None) -> list[str]:  # fmt: skip
    """The session files to export: each file in ``paths`` as it is, the sessions of
    each folder in ``paths`` (``SessionManager.list``), and with ``all_projects`` every
    project's sessions (``SessionManager.list_all``: ``$PI_CODING_AGENT_DIR/sessions``,
    else ``~/.pi/agent/sessions``). Absolute paths, each once, in that order.

    Args:
        on_problem: called ``(path, reason)`` for each ``.jsonl`` file a listing left
            out, and for each path that does not exist.
    """
    from .. import SessionManager

    def problem(p: Any) -> None:
        if on_problem is not None:
            on_problem(p.path, p.reason)

    out: dict[str, None] = {}
    for p in paths:
        full = os.path.abspath(os.path.expanduser(p))
        if os.path.isdir(full):
            out.update((i.path, None) for i in SessionManager.list("", full, on_problem=problem))
        elif os.path.exists(full):
            out[full] = None
        elif on_problem is not None:
            on_problem(full, "no such file or folder")
    if all_projects:
        out.update((i.path, None) for i in SessionManager.list_all(on_problem=problem))
    return list(out)


# What each column costs to write (measured on 2,000 generated sessions, docs/TABLES.md
# "Figures"): a file per session makes the writer's fixed costs per column chunk the
# larger part, and zstd's is the largest (a compression context per page, ~23 us): only
# the long text columns are zstd-compressed, the others snappy. Columns of few distinct
# values are dictionary-encoded (DuckDB, Polars and Spark read them as such), the
# others written plain (a dictionary built over `text` is thrown away once it outgrows
# its page); min/max statistics of long text help no query. Together: the write's CPU
# time fell by 46% and the files by 5%.
_ZSTD = {"text", "arguments", "result_text"}
_DICTIONARY = {"session_id", "type", "role", "provider", "model", "stop_reason", "custom_type", "tool_name"}


def _options(schema: pa.Schema) -> dict[str, Any]:
    names = schema.names
    return {
        "compression": {n: "zstd" if n in _ZSTD else "snappy" for n in names},
        "use_dictionary": [n for n in names if n in _DICTIONARY],
        "write_statistics": [n for n in names if n not in _ZSTD],
        # The Arrow schema pyarrow keeps in each file's footer by default: Parquet's own
        # types already read back as these schemas (tests/test_tables_workers.py), and
        # building it was ~15% of the writer's time on a session's two small files.
        "store_schema": False,
    }


def _workers() -> int:
    """Sessions exported at once: one per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


PROCESS_BYTES = 32 << 20
"""Bytes of sessions to export from which they are exported in worker processes (one
per CPU), below it in threads of this one. A worker costs a fresh interpreter (~0.4 s
of CPU to import pyarrow and the package); threads share one GIL, which about half of
a session's CPU time holds (the open, the Python around the core's decoding and the
Parquet writer: docs/TABLES.md "The Parquet dataset")."""


@dataclass(frozen=True)
class _Failed:
    """Why a session could not be exported (a plain string: it crosses processes)."""

    reason: str


def _export_safe(path: str, out: str, backend: str | None) -> dict[str, Any] | _Failed:
    """:func:`_export_one`, or why the session failed."""
    try:
        return _export_one(path, out, backend)
    except (InvalidSessionError, SessionError, OSError, ValueError) as e:
        return _Failed(str(e))


def _worker_start() -> None:
    """A worker process's set-up: the load report is `sessions.load_issues` (no
    warning per session), and an interrupt is the parent's to handle: it stops handing
    out sessions and waits for those being written (each renamed into place whole, or
    its temporary file removed)."""
    warnings.simplefilter("ignore", LoadReportWarning)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The worker lives for this one export: its opens share one computation of the
    # persisted indexes' settings (held until it exits).
    _WORKER_HOLDS.enter_context(held_index_cache())
    # ... and it writes file after file in its main thread: the handlers that remove a
    # temporary file on SIGTERM or SIGHUP stay installed between them.
    _WORKER_HOLDS.enter_context(held_handlers())
    # A run killed outright takes its workers with it (Linux's parent-death signal):
    # none goes on renaming files into a dataset that a next run may already own.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # pragma: no cover - the parent died before the line above
        os._exit(1)


_PR_SET_PDEATHSIG = 1
_WORKER_HOLDS = contextlib.ExitStack()


def _pool(todo: dict[str, int], processes: bool) -> Executor:
    """Where the sessions of ``todo`` (path -> bytes) are exported: worker processes
    (if ``processes``) for :data:`PROCESS_BYTES` or more on more than one CPU, else
    threads."""
    workers = min(_workers(), len(todo)) or 1
    if processes and workers > 1 and sum(todo.values()) >= PROCESS_BYTES:
        # `spawn`: a fresh interpreter, never a fork of a process that runs threads.
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_start)  # fmt: skip
    return ThreadPoolExecutor(workers)


def _identity(st: os.stat_result) -> list[int]:
    # The ctime too: a rewrite at the same size with its mtime put back moves it.
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _project(cwd: Any) -> str:
    if type(cwd) is not str or not cwd:
        return "unknown"
    return _UNSAFE.sub("_", os.path.basename(session_dir_for_cwd(cwd, root="")))[:200] or "unknown"


def _date(ms: int | None, st: os.stat_result) -> str:
    if ms is None or not -62135596800000 <= ms <= 253402300799999:  # years 1..9999
        ms = st.st_mtime_ns // 1_000_000
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d")


def _key(path: str) -> str:
    stem = _UNSAFE.sub("_", os.path.splitext(os.path.basename(path))[0])[:120]
    return f"{stem}-{hashlib.sha256(path.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


class _Writer:
    """One Parquet file's row groups, buffered to :data:`ROW_GROUP_ROWS` rows /
    :data:`ROW_GROUP_BYTES` bytes."""

    def __init__(self, f: Any, schema: pa.Schema) -> None:
        self.schema = schema
        self.w = pq.ParquetWriter(f, schema, **_options(schema))
        self.buf: list[pa.RecordBatch] = []
        self.rows = self.bytes = 0

    def write(self, batches: Iterable[pa.RecordBatch]) -> None:
        for b in batches:
            if self.buf and (self.rows + b.num_rows > ROW_GROUP_ROWS or self.bytes + b.nbytes > ROW_GROUP_BYTES):
                self._flush()
            self.buf.append(b)
            self.rows += b.num_rows
            self.bytes += b.nbytes

    def _flush(self) -> None:
        if self.buf:
            self.w.write_table(pa.Table.from_batches(self.buf, self.schema), row_group_size=ROW_GROUP_ROWS)
        self.buf, self.rows, self.bytes = [], 0, 0

    def close(self) -> None:
        self._flush()
        self.w.close()


def _write(path: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> None:
    """Write one file of the dataset as every output is written (``_output``: a
    temporary file renamed into place, never a FIFO or device replaced).

    Raises:
        OSError: a FIFO, socket or device holds the file's place (``open_output``'s
            ``streams=False``: never opened, as writing into one with no reader would
            block), or a folder does: the session fails, its previous export kept.
    """
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open_output(path, streams=False) as out:
        w = _Writer(out.file, schema)
        w.write(batches)
        w.close()


def _export_one(path: str, out: str, backend: str | None) -> dict[str, Any]:
    """Write one session's entries and tool_calls files; its manifest record."""
    from .. import SessionManager

    st = os.stat(path)
    sm = SessionManager.open(path, backend=backend)  # its LoadReportWarning: see export_parquet
    with sm:
        tables = SessionTables(Source.of(sm, sm._index))
        part = f"project={_project(sm.get_header().get('cwd'))}/date={_date(parse_iso_ms(sm.get_header().get('timestamp')), st)}"
        key = _key(path)
        files = []
        if len(sm):
            rel = f"entries/{part}/{key}.parquet"
            _write(os.path.join(out, rel), SCHEMAS["entries"], tables.entries())
            files.append(rel)
        calls = tables.tool_calls()
        if calls.num_rows:
            rel = f"tool_calls/{part}/{key}.parquet"
            _write(os.path.join(out, rel), SCHEMAS["tool_calls"], calls.to_batches())
            files.append(rel)
        row = tables.session_row()
        skipped = skipped_lines(sm.load_report)
    # "skipped" is this run's to report, not the manifest's to keep.
    return {"identity": _identity(st), "partition": part, "files": files, "row": row, "skipped": skipped}


class _Manifest:
    def __init__(self, out: str) -> None:
        self.path = os.path.join(out, MANIFEST)
        self.sessions: dict[str, dict[str, Any]] = {}
        # Whether it holds the dataset's record (read whole): an unreadable one, or one of
        # another format, does not; an absent one (a folder no run has written) neither:
        # the files already there are not this dataset's (`export_parquet` saves a
        # manifest before any of its own).
        self.whole = False
        self.absent = False
        # Files named as this dataset's own that were in the folder before its first run.
        self.foreign: set[str] = set()
        # Partitions whose `sessions` file does not yet hold the rows recorded here: a
        # run saves its records as it goes and writes those files at its end, so a run
        # stopped between the two leaves them for the next (adversary 60b: rows missing
        # for good, their sessions recorded as unchanged).
        self.pending: set[str] = set()
        try:
            # Non-blocking and checked on the open file: a FIFO in its place is never read.
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return
                d = json.load(f)
            if type(d) is dict and d.get("format") == _FORMAT and type(d.get("sessions")) is dict:
                self.sessions = {p: r for p, r in d["sessions"].items() if _record_ok(r)}
                foreign = d.get("foreign", [])
                self.foreign = {f for f in foreign if type(f) is str} if type(foreign) is list else set()
                pending = d.get("pending", [])
                self.pending = ({p for p in pending if type(p) is str and _PARTITION.fullmatch(p)}
                                if type(pending) is list else set())
                self.whole = True
        except FileNotFoundError:
            self.absent = True
        except (OSError, ValueError):
            pass

    def save(self) -> None:
        with open_output(self.path, streams=False) as out:
            out.file.write(json.dumps({"format": _FORMAT, "sessions": self.sessions,
                                       "foreign": sorted(self.foreign), "pending": sorted(self.pending)}).encode())


def _unlink(path: str) -> None:
    """Drop a file of the dataset: a regular file or a symbolic link (its name only);
    never a FIFO or device put in its place."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISREG(os.lstat(path).st_mode) or os.path.islink(path):
            os.unlink(path)


def _inside(rel: Any) -> bool:
    """Whether ``rel`` (from the manifest) names a file of the dataset: a relative path
    that stays inside the output folder (a hand-edited manifest never makes a run
    touch anything else)."""
    return (type(rel) is str and bool(rel) and not os.path.isabs(rel)
            and not os.path.normpath(rel).startswith(("..", os.sep)) and "\0" not in rel)


def _record_ok(rec: Any) -> bool:
    """Whether a manifest's session record has the shape this module writes: others are
    dropped as unknown (the session is exported again; its files' names are its own)."""
    return (type(rec) is dict and type(rec.get("identity")) is list
            and all(type(v) is int for v in rec["identity"]) and type(rec.get("partition")) is str
            and _inside(rec["partition"]) and type(rec.get("files")) is list
            and all(_inside(f) for f in rec["files"]) and type(rec.get("row")) is dict)


_OWN = re.compile(r"[^/]*-[0-9a-f]{12}\.parquet")


def _sweep_unrecorded(out: str, manifest: _Manifest) -> int:
    """Remove the session files (``entries`` / ``tool_calls``, named as :func:`_key`
    names them) that no manifest record names: those a killed run renamed into place
    before its manifest said so. Left there, a session deleted before the next run would
    keep its rows for good; one still there is exported again by that run (its record
    is missing too). Nothing is removed when the manifest is absent (a folder no run
    has written: its files are someone else's) or there but unreadable or of another
    format: it is no record of what the files are (the sessions of other runs' folders
    keep their files until those are exported again).

    Returns:
        How many were removed.
    """
    if not manifest.whole:
        return 0
    keep = {f for rec in manifest.sessions.values() for f in rec["files"]} | manifest.foreign
    removed = 0
    for rel in _own_files(out):
        if rel not in keep:
            _unlink(os.path.join(out, rel))
            removed += 1
    return removed


def _own_files(out: str) -> Iterator[str]:
    """The files under ``out`` named as the sessions' files of a dataset are named
    (:func:`_key`), relative to ``out``."""
    for table in ("entries", "tool_calls"):
        for project in _listdir(os.path.join(out, table)):
            for date in _listdir(os.path.join(out, table, project)):
                for name in _listdir(os.path.join(out, table, project, date)):
                    if _OWN.fullmatch(name) and not name.startswith("."):
                        yield f"{table}/{project}/{date}/{name}"


def _strays(out: str, manifest: _Manifest) -> list[str]:
    """``ExportResult.strays``: the ``.parquet`` files of the tables' folders that no
    record of ``manifest`` names (its sessions' files and their partitions'
    ``sessions.parquet``), found as a ``**/*.parquet`` glob finds them."""
    ours = {f for rec in manifest.sessions.values() for f in rec["files"]}
    ours |= {f"sessions/{rec['partition']}/sessions.parquet" for rec in manifest.sessions.values()}
    found: list[str] = []
    for table in ("sessions", "entries", "tool_calls"):
        # Folders below a table's that are links are not followed (a link to a folder
        # above would never end); the table's own is, as the writer follows it.
        top = os.path.join(out, table)
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            # os.walk joins the names below `top` to it: the path relative to `out` is
            # the table and what follows `top` (os.path.relpath normalised each path
            # again: ~50 µs a file, 0.3 s of a 2,000-session export).
            below = table + folder[len(top):].replace(os.sep, "/") + "/"
            for name in sorted(names):
                if name.endswith(".parquet") and not name.startswith((".", "_")):
                    rel = below + name
                    if rel not in ours:
                        found.append(rel)
    return found


def _listdir(folder: str) -> list[str]:
    # Symbolic links followed, as the writer follows them (`_output`): a table folder
    # that is a link holds this dataset's files too.
    try:
        return os.listdir(folder) if stat.S_ISDIR(os.stat(folder).st_mode) else []
    except OSError:
        return []


def _unlink_all(out: str, files: Iterable[str]) -> None:
    for rel in files:
        if _inside(rel):
            _unlink(os.path.join(out, rel))


_PARTS_PER_TASK = 32
"""``sessions`` files one task of the pool writes (a history's partitions are many:
1,563 for 2,000 sessions over 12 projects, ~1 ms each)."""


def _write_partitions(out: str, parts: list[tuple[str, list[dict[str, Any]]]]) -> list[tuple[str, str, str]]:
    """The ``sessions`` file of each of ``parts`` (a partition and its rows, in order),
    or none where it has no rows.

    Returns:
        ``(partition, path, reason)`` of each file that could not be written (the
        others are: one partition's failure is its own, not the run's).
    """
    failed = []
    for part, rows in parts:
        target = os.path.join(out, "sessions", part, "sessions.parquet")
        try:
            if rows:
                _write(target, SCHEMAS["sessions"], sessions_table(rows).to_batches())
            else:
                _unlink(target)  # a FIFO or a folder there is not the export's: left alone
        except OSError as e:
            failed.append((part, target, _unwritten(target, e)))
    return failed


def _unwritten(target: str, e: OSError) -> str:
    """Why a partition's ``sessions`` file was not written, in words: what holds its
    place when that is not a regular file (``_storage.file_kind``), else the error's."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        what = f"{file_kind(mode)}, not a regular file, is where this partition's sessions table goes"
    else:
        what = e.strerror or str(e)
    return f"{what}: not written (its sessions' entries and tool_calls are; move it away and run again)"


def _write_sessions(out: str, manifest: _Manifest, partitions: Iterable[str],
                    pool: Executor) -> list[tuple[str, str, str]]:
    """The ``sessions`` files of ``partitions`` from the manifest's rows, written by
    ``pool`` (the workers that wrote the sessions' files: a parent writing them alone
    left the other CPUs idle for ~1.5 s of c2000's export).

    Returns:
        ``(partition, path, reason)`` of each that could not be written
        (:func:`_write_partitions`), in partition order.
    """
    by_part: dict[str, list[dict[str, Any]]] = {}
    for rec in manifest.sessions.values():
        by_part.setdefault(rec["partition"], []).append(rec["row"])
    work = [(part, sorted(by_part.get(part, []), key=lambda r: (r["created"] or 0, r["path"] or "")))
            for part in sorted(set(partitions))]
    tasks = [work[i:i + _PARTS_PER_TASK] for i in range(0, len(work), _PARTS_PER_TASK)]
    return [f for failed in pool.map(_write_partitions, itertools.repeat(out), tasks) for f in failed]


@contextlib.contextmanager
def _locked(out: str) -> Iterator[None]:
    fd = os.open(os.path.join(out, _LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionError(f"{out}: another export into this folder is running") from None
        yield
    finally:
        os.close(fd)


def export_parquet(
    sessions: Iterable[str],
    out: str,
    *,
    backend: str | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    processes: bool = False,
    left_out: Iterable[tuple[str, str]] = (),
) -> ExportResult:
    """Export session files to the Parquet dataset in ``out`` (created if needed).

    Args:
        sessions: session files (see :func:`session_paths` for folders and ``--all``).
        out: the dataset's folder; earlier exports there are updated in place.
        backend: index backend (default: ``$SESSIONTREE_BACKEND``, else ``auto``).
        on_progress: called ``(done, total, path)`` after each session.
        processes: export in worker processes (one per CPU, from
            :data:`PROCESS_BYTES` of sessions), else in threads of this one. They are
            started with ``spawn``, which runs the calling program's main module again
            in each worker: only a program whose main module is guarded (``if __name__
            == "__main__":``, as the command line's is) may ask for them.
        left_out: ``(path, reason)`` of files a listing left out (:func:`session_paths`'
            problems): reported first in ``failed``, each as it is, with "its previous
            export is kept" where the dataset holds one of an existing file (an emptied
            or damaged session is not exported, and its rows stay until it reads again
            or is gone).

    Returns:
        What was written, skipped, removed and failed, and the ``.parquet`` files in
        ``out`` it did not write (``strays``: kept).

    Raises:
        SessionError: another export into ``out`` is running.
        OSError: ``out`` cannot be written.
    """
    t0 = time.perf_counter()
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    result = ExportResult()
    paths = list(dict.fromkeys(os.path.abspath(p) for p in sessions))
    with _locked(out):
        manifest = _Manifest(out)
        if manifest.absent:
            # Saved before any session file is renamed into place, so that the files of a
            # run killed before its first save are known for this dataset's by the next;
            # with the files named as its own that were there before it, which are not.
            manifest.foreign = set(_own_files(out))
            manifest.save()
        _sweep_unrecorded(out, manifest)
        for path, reason in left_out:
            full = os.path.abspath(path)
            kept = full in manifest.sessions and os.path.exists(full)
            result.failed.append((path, reason + (_KEPT if kept else "")))
        olds = {p: manifest.sessions.get(p) for p in paths}

        todo: dict[str, int] = {}  # path -> its size: the sessions to export
        unchanged: set[str] = set()
        # Partitions whose `sessions` file is to be written: those a stopped run left
        # behind, and those whose file is not there as a regular file (removed, or a
        # FIFO put there: refused when written, never passed over).
        touched: set[str] = set(manifest.pending)
        looked: set[str] = set()  # partitions whose sessions file was looked for
        for path in paths:
            try:
                st = os.stat(path)
            except OSError:
                todo[path] = 0  # its export fails below and says why
                continue
            old = olds[path]
            # Its files still regular files: a FIFO or folder in one's place is found by
            # the rewrite (an error, the previous export kept), never passed over.
            if old is not None and old["identity"] == _identity(st) and all(
                os.path.isfile(os.path.join(out, f)) for f in old["files"]
            ):
                unchanged.add(path)
                part = old["partition"]
                if part not in looked:
                    looked.add(part)
                    if not os.path.isfile(os.path.join(out, "sessions", part, "sessions.parquet")):
                        touched.add(part)
            else:
                todo[path] = st.st_size

        last_save = time.monotonic()
        # The load report is `sessions.load_issues`: no warning per session. The filter is
        # set here, for the whole run (`catch_warnings` in each worker thread would undo
        # another's: the filters are the process's).
        quiet = warnings.catch_warnings()
        quiet.__enter__()
        warnings.simplefilter("ignore", LoadReportWarning)
        holds = contextlib.ExitStack()
        holds.enter_context(held_index_cache())  # for the opens in threads of this process
        # Sessions are exported side by side (`_pool`: worker processes, or threads for
        # a small run) and recorded in order, by this thread.
        pool = _pool(todo, processes)
        done_of = pool.map(_export_safe, todo, itertools.repeat(out), itertools.repeat(backend))
        try:
            for done, path in enumerate(paths, 1):
                old = olds[path]
                rec = None if path in unchanged else next(done_of)
                if rec is None:
                    result.skipped += 1
                elif isinstance(rec, _Failed):
                    # A session that fails keeps its previous export (its record's
                    # identity is the old one: the next run tries again); one whose
                    # file is gone is dropped below.
                    kept = old is not None and os.path.exists(path)
                    result.failed.append((path, rec.reason + (_KEPT if kept else "")))
                else:
                    if old is not None:
                        _unlink_all(out, set(old["files"]) - set(rec["files"]))
                        touched.add(old["partition"])
                    skipped = rec.pop("skipped")
                    if skipped:
                        result.lines_skipped.append((path, skipped))
                    manifest.sessions[path] = rec
                    touched.add(rec["partition"])
                    result.written.append(path)
                    result.bytes_read += rec["row"]["bytes"]
                    result.bad_blocks += rec["row"]["bad_blocks"]
                if on_progress is not None:
                    on_progress(done, len(paths), path)
                if time.monotonic() - last_save > 30:  # a long run that dies keeps most of its work
                    manifest.pending = set(touched)
                    manifest.save()
                    last_save = time.monotonic()
            for path in [p for p in manifest.sessions if not os.path.exists(p)]:
                rec = manifest.sessions.pop(path)
                _unlink_all(out, rec["files"])
                touched.add(rec["partition"])
                result.removed += 1
            unwritten = _write_sessions(out, manifest, touched, pool)
        finally:  # an interrupted run waits for the files being written, no others
            pool.shutdown(wait=True, cancel_futures=True)
            holds.close()
            quiet.__exit__(None, None, None)
        result.failed.extend((path, reason) for _part, path, reason in unwritten)
        # A partition whose file could not be written stays pending: the next run writes
        # it whether or not its sessions changed.
        manifest.pending = {part for part, _path, _reason in unwritten}
        manifest.save()
        result.strays = _strays(out, manifest)
    result.seconds = time.perf_counter() - t0
    return result
