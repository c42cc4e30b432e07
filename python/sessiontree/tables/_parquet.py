"""Sessions to a Hive-partitioned Parquet dataset, incrementally (docs/TABLES.md).

Layout under the output folder::

    sessions/project=P/date=D/sessions.parquet      every session of that partition
    entries/project=P/date=D/part-<hex>.parquet     several sessions' rows (a file pair)
    tool_calls/project=P/date=D/part-<hex>.parquet  the same sessions' calls (if any)
    _sessiontree_manifest.json                      what each file was made from

``P`` is the session's project (the name of Pi's folder for its ``cwd``, ``--home-u-p--``,
with any character other than ``A-Z a-z 0-9 . _ -`` as ``_``), ``D`` the UTC date of
its header's time. The sessions of a partition share files: a file pair is made from
sessions of up to :data:`CHUNK_BYTES` (a larger session fills one alone), in row groups
of up to :data:`ROW_GROUP_ROWS` rows. The file pair is the unit of change: the
manifest keeps each source file's identity (device, inode, size, mtime), its file pair
and its rows' ranges there; a run skips a session whose file has the same identity as
when it was exported, makes again the file pairs holding sessions that changed or whose
files are gone (their other sessions read again), and puts new sessions in a file pair
of their partition with room. Every file is written as every output is (``_output``:
under a temporary name, renamed into place; removed if the run is stopped); names
beginning with ``.`` or ``_`` are ignored by Spark, DuckDB's ``*.parquet`` globs and
Polars.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import secrets
import stat
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .._output import open_output
from .._places import session_dir_for_cwd
from .._time import parse_iso_ms
from ..errors import InvalidSessionError, LoadReportWarning, SessionError
from .. import _rows
from .._tables import SessionTables, Source, sessions_table
from .._table_schema import SCHEMAS

__all__ = ["ExportResult", "export_parquet", "session_paths", "ROW_GROUP_ROWS", "ROW_GROUP_BYTES", "CHUNK_BYTES",
           "MANIFEST"]

ROW_GROUP_ROWS = 122_880
"""Most rows of a row group (DuckDB's own row-group size: one unit of its parallel scan)."""
ROW_GROUP_BYTES = 128 << 20
"""Most bytes of Arrow data buffered for one row group."""
# A Parquet file's fixed cost (writer, 29 column chunks, footer, a file made and renamed)
# was ~0.9 ms of the ~1.5 ms a file per session took: the sessions of a partition share
# files. The bound is what a change costs: the other sessions of its file are read again.
CHUNK_BYTES = 32 << 20
"""Most bytes of session files one ``entries`` / ``tool_calls`` file is made from (a
session larger than this alone fills one)."""
MANIFEST = "_sessiontree_manifest.json"
_LOCK = ".sessiontree-export.lock"
# Changes whenever the tables would come out differently: a manifest written under
# another format is ignored, and every session is exported again.
_FORMAT = hashlib.sha256(
    repr(([str(s) for s in SCHEMAS.values()], _rows.MAX_TEXT, _rows.MAX_RESULT, _rows.MAX_ARGUMENTS,
          _rows.MAX_FIELD, 2)).encode()
).hexdigest()[:16]  # fmt: skip
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class ExportResult:
    """What one :func:`export_parquet` run did.

    Attributes:
        written: session files exported (new or changed), in the order given.
        skipped: sessions unchanged since the last run (their files kept).
        removed: sessions whose file no longer exists (their Parquet files deleted).
        failed: ``(path, reason)`` of files that could not be exported (not sessions,
            unreadable, changed while read); an earlier export of a file that still
            exists is kept (the reason says so), that of a file gone is deleted.
        bad_blocks: content blocks of the written sessions marked bad (an image whose
            data does not decode: ``entries.images.problem``; per session:
            ``sessions.bad_blocks``). Their entries and sessions are exported.
        bytes_read: bytes of session files read (the ``bytes`` of the written ones).
        seconds: wall time of the run.
    """

    written: list[str] = field(default_factory=list)
    skipped: int = 0
    removed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    bad_blocks: int = 0
    bytes_read: int = 0
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
# time fell by 46% and the files by 5%. With several sessions to a file the long text's
# zstd is most of what is left (one project's `entries`, 23,202 rows: 0.148 s, 0.013 s
# without `text`): zstd level 1 writes it in 0.115 s to the same 9.3 MB as level 3.
_ZSTD = {"text", "arguments", "result_text"}
_DICTIONARY = {"session_id", "type", "role", "provider", "model", "stop_reason", "custom_type", "tool_name"}


def _options(schema: pa.Schema) -> dict[str, Any]:
    names = schema.names
    return {
        "compression": {n: "zstd" if n in _ZSTD else "snappy" for n in names},
        "compression_level": {n: 1 for n in names if n in _ZSTD},
        "use_dictionary": [n for n in names if n in _DICTIONARY],
        "write_statistics": [n for n in names if n not in _ZSTD],
    }


def _workers() -> int:
    """Sessions exported at once: one per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _project(cwd: Any) -> str:
    if type(cwd) is not str or not cwd:
        return "unknown"
    return _UNSAFE.sub("_", os.path.basename(session_dir_for_cwd(cwd, root="")))[:200] or "unknown"


def _date(ms: int | None, st: os.stat_result) -> str:
    if ms is None or not -62135596800000 <= ms <= 253402300799999:  # years 1..9999
        ms = st.st_mtime_ns // 1_000_000
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d")


def _header_partition(path: str, st: os.stat_result) -> str | None:
    """The partition a session file's first line names, read without opening the
    session (where its rows go is decided before it is decoded); ``None`` if the line
    is not a JSON object. The export checks it against the loaded header and moves a
    session whose header says otherwise (``_Job``)."""
    try:
        with open(path, "rb") as f:
            line = f.readline(1 << 20)
        h = json.loads(line)
    except (OSError, ValueError, RecursionError):
        return None
    if type(h) is not dict:
        return None
    return _partition(h, st)


def _partition(header: dict[str, Any], st: os.stat_result) -> str:
    return f"project={_project(header.get('cwd'))}/date={_date(parse_iso_ms(header.get('timestamp')), st)}"


def _file_identity(path: str) -> list[int] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


class _Writer:
    """One Parquet file's row groups, buffered to :data:`ROW_GROUP_ROWS` rows /
    :data:`ROW_GROUP_BYTES` bytes; the file is opened at the first row (a file of no
    rows is not written)."""

    def __init__(self, path: str, schema: pa.Schema, stack: contextlib.ExitStack) -> None:
        self.path, self.schema, self.stack = path, schema, stack
        self.w: pq.ParquetWriter | None = None
        self.buf: list[pa.RecordBatch] = []
        self.rows = self.bytes = 0
        self.total = 0

    def write(self, batches: Iterable[pa.RecordBatch]) -> None:
        for b in batches:
            if not b.num_rows:
                continue
            if self.buf and (self.rows + b.num_rows > ROW_GROUP_ROWS or self.bytes + b.nbytes > ROW_GROUP_BYTES):
                self._flush()
            self.buf.append(b)
            self.rows += b.num_rows
            self.bytes += b.nbytes
            self.total += b.num_rows

    def _flush(self) -> None:
        if not self.buf:
            return
        if self.w is None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            out = self.stack.enter_context(open_output(self.path))
            self.w = self.stack.enter_context(pq.ParquetWriter(out.file, self.schema, **_options(self.schema)))
        self.w.write_table(pa.Table.from_batches(self.buf, self.schema), row_group_size=ROW_GROUP_ROWS)
        self.buf, self.rows, self.bytes = [], 0, 0

    def close(self) -> None:
        self._flush()


class _Redo(Exception):
    """A session failed after some of its rows were written: the file is made again
    without it."""


@dataclass
class _Member:
    """A session a file is (re)made from."""

    path: str
    identity: list[int]
    old: dict[str, Any] | None  # its manifest record, if any
    size: int


@dataclass
class _Job:
    """One file pair (``entries``, ``tool_calls``) of a partition made from its
    sessions, in order. Sessions that fail are left out: one that had rows in the old
    file keeps them (copied by its row ranges, if the old file is the one the manifest
    describes); one whose header names another partition is handed back (``moved``)."""

    name: str
    partition: str | None
    members: list[_Member]
    old_intact: bool  # the old files are the ones the manifest describes

    def run(self, out: str, backend: str | None) -> tuple[str, dict[str, Any], list[tuple[_Member, Any]]]:
        skip: dict[str, BaseException] = {}
        while True:
            try:
                return self._attempt(out, backend, skip)
            except _Redo:
                continue

    def _rel(self, table: str) -> str:
        return f"{table}/{self.partition}/{self.name}.parquet"

    def _attempt(self, out: str, backend: str | None, skip: dict[str, BaseException]) -> Any:
        from .. import SessionManager

        results: list[tuple[_Member, Any]] = []
        with contextlib.ExitStack() as stack:
            writers: dict[str, _Writer] = {}

            def writer(table: str) -> _Writer:
                if table not in writers:
                    writers[table] = _Writer(os.path.join(out, self._rel(table)), SCHEMAS[table], stack)
                return writers[table]

            def at(table: str) -> int:
                return writers[table].total if table in writers else 0

            for m in self.members:
                if m.path in skip:
                    results.append((m, self._keep(m, skip[m.path], out, writer, at)))
                    continue
                a = (at("entries"), at("tool_calls"))
                try:
                    st = os.stat(m.path)
                    sm = SessionManager.open(m.path, backend=backend)  # its LoadReportWarning: export_parquet
                except (InvalidSessionError, SessionError, OSError, ValueError) as e:
                    results.append((m, self._keep(m, e, out, writer, at)))
                    continue
                try:
                    with sm:
                        part = _partition(sm.get_header(), st)
                        if self.partition is None:
                            self.partition = part
                        if part != self.partition:
                            results.append((m, ("moved", part)))
                            continue
                        tables = SessionTables(Source.of(sm, sm._index))
                        writer("entries").write(tables.entries())
                        writer("tool_calls").write(tables.tool_calls().to_batches())
                        row = tables.session_row()
                except (InvalidSessionError, SessionError, OSError, ValueError, pa.ArrowException) as e:
                    if (at("entries"), at("tool_calls")) != a:
                        skip[m.path] = e
                        raise _Redo from e
                    results.append((m, self._keep(m, e, out, writer, at)))
                    continue
                rec = {"identity": _identity(st), "partition": part, "chunk": self.name,
                       "entries": [a[0], at("entries")], "tool_calls": [a[1], at("tool_calls")], "row": row}  # fmt: skip
                results.append((m, rec))
            for w in writers.values():
                w.close()
        files = {}
        for table in ("entries", "tool_calls"):
            path = os.path.join(out, self._rel(table))
            if at(table):
                files[table] = _file_identity(path)
            else:  # no rows: no file (an old one goes)
                _unlink(path)
                files[table] = None
        kept = [m.path for m, r in results if isinstance(r, dict) or (isinstance(r, tuple) and r[0] == "kept")]
        return self.name, {"partition": self.partition, "files": files, "sessions": kept}, results

    def _keep(self, m: _Member, e: BaseException, out: str, writer: Callable[[str], _Writer],
              at: Callable[[str], int]) -> Any:  # fmt: skip
        """A failed session: its old rows copied (its record kept, with the old
        identity: the next run tries again), else the error."""
        old = m.old
        if old is None or not self.old_intact or old.get("chunk") != self.name or old["partition"] != self.partition:
            return e
        ranges = {}
        for table in ("entries", "tool_calls"):
            a, b = old[table]
            start = at(table)
            if b > a:
                f = pq.ParquetFile(os.path.join(out, self._rel(table)))
                writer(table).write(_rows_between(f, a, b))
            ranges[table] = [start, at(table)]
        return ("kept", {**old, **ranges}, e)


def _rows_between(f: pq.ParquetFile, a: int, b: int) -> Iterator[pa.RecordBatch]:
    """Rows ``[a, b)`` of a Parquet file, batch by batch."""
    at = 0
    for batch in f.iter_batches(batch_size=16_384):
        n = batch.num_rows
        lo, hi = max(a - at, 0), min(b - at, n)
        if hi > lo:
            yield batch.slice(lo, hi - lo)
        at += n
        if at >= b:
            return
class _Manifest:
    """What each file of the dataset was made from: per session file its identity,
    partition, file pair (``chunk``), row ranges there and ``sessions`` row; per file
    pair its partition, sessions in order and the files' identities (inode, size,
    mtime: a file that is not the one recorded is made again); ``pending``: the file
    pairs a run is making (a run that dies leaves them: the next one removes them)."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.path = os.path.join(out, MANIFEST)
        self.sessions: dict[str, dict[str, Any]] = {}
        self.chunks: dict[str, dict[str, Any]] = {}
        self.pending: list[tuple[str | None, str]] = []
        try:
            with open(self.path, "rb") as f:
                d = json.load(f)
        except (OSError, ValueError):
            return
        if type(d) is not dict:
            return
        try:
            if d.get("format") == _FORMAT:
                self.sessions, self.chunks = d["sessions"], d["chunks"]
                for part, name in d.get("pending", []):
                    if name not in self.chunks:
                        for p in [part] if part is not None else _partitions_holding(out, name):
                            _unlink_pair(out, p, name)
            else:  # another version's tables (or layout): its files go, everything is made again
                for rec in (d.get("sessions") or {}).values():
                    _unlink_all(out, rec.get("files") or [])
                for name, c in (d.get("chunks") or {}).items():
                    _unlink_pair(out, c["partition"], name)
        except (KeyError, TypeError, AttributeError, ValueError):
            self.sessions, self.chunks = {}, {}

    def save(self) -> None:
        with open_output(self.path) as out:
            out.file.write(json.dumps({"format": _FORMAT, "sessions": self.sessions, "chunks": self.chunks,
                                       "pending": self.pending}).encode())  # fmt: skip

    def intact(self, name: str) -> bool:
        """The file pair's files are the ones recorded."""
        c = self.chunks[name]
        return all(_file_identity(os.path.join(self.out, f"{t}/{c['partition']}/{name}.parquet")) == c["files"].get(t)
                   for t in ("entries", "tool_calls"))  # fmt: skip


def _unlink(path: str) -> None:
    """Drop a file of the dataset: a regular file or a symbolic link (its name only);
    never a FIFO or device put in its place."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISREG(os.lstat(path).st_mode) or os.path.islink(path):
            os.unlink(path)


def _unlink_all(out: str, files: Iterable[str]) -> None:
    for rel in files:
        _unlink(os.path.join(out, rel))


def _partitions_holding(out: str, name: str) -> list[str]:
    """The partitions with a file of the pair ``name`` (one made for a session whose
    partition was known only once it was opened)."""
    found = set()
    for table in ("entries", "tool_calls"):
        for f in glob.glob(os.path.join(glob.escape(os.path.join(out, table)), "*", "*", glob.escape(name) + ".parquet")):
            found.add(os.path.relpath(os.path.dirname(f), os.path.join(out, table)))
    return sorted(found)


def _unlink_pair(out: str, partition: str, name: str) -> None:
    _unlink_all(out, (f"{t}/{partition}/{name}.parquet" for t in ("entries", "tool_calls")))


def _write_sessions(out: str, manifest: _Manifest, partitions: Iterable[str]) -> None:
    by_part: dict[str, list[dict[str, Any]]] = {}
    for rec in manifest.sessions.values():
        by_part.setdefault(rec["partition"], []).append(rec["row"])
    for part in sorted(set(partitions)):
        target = os.path.join(out, "sessions", part, "sessions.parquet")
        rows = sorted(by_part.get(part, []), key=lambda r: (r["created"] or 0, r["path"] or ""))
        if rows:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open_output(target) as o, pq.ParquetWriter(o.file, SCHEMAS["sessions"],
                                                            **_options(SCHEMAS["sessions"])) as w:  # fmt: skip
                w.write_table(sessions_table(rows))
        else:
            _unlink(target)


def _new_name(taken: set[str]) -> str:
    while True:
        name = f"part-{secrets.token_hex(8)}"
        if name not in taken:
            taken.add(name)
            return name


def _plan(manifest: _Manifest, dirty: dict[str, list[_Member]], fresh: list[tuple[_Member, str | None]],
          intact: dict[str, bool]) -> list[_Job]:  # fmt: skip
    """The file pairs to make: each dirty one with its sessions (split when they pass
    :data:`CHUNK_BYTES`), and the new sessions put in a pair of their partition with
    room — a dirty one, else the smallest clean one (made again with them), else a new
    one."""
    taken = set(manifest.chunks)
    jobs: list[_Job] = []
    by_part: dict[str | None, list[_Job]] = {}
    for name, members in dirty.items():
        part = manifest.chunks[name]["partition"] if name in manifest.chunks else None
        groups: list[list[_Member]] = [[]]
        size = 0
        for m in members:
            if groups[-1] and size + m.size > CHUNK_BYTES:
                groups.append([])
                size = 0
            groups[-1].append(m)
            size += m.size
        for k, g in enumerate(groups):
            job = _Job(name if k == 0 else _new_name(taken), part, g, intact.get(name, False) and k == 0)
            jobs.append(job)
            by_part.setdefault(part, []).append(job)
    clean: dict[str, list[str]] = {}
    for name, c in manifest.chunks.items():
        if name not in dirty:
            clean.setdefault(c["partition"], []).append(name)
    sizes = {id(j): sum(m.size for m in j.members) for j in jobs}
    for m, part in fresh:
        room = [j for j in by_part.get(part, []) if sizes[id(j)] + m.size <= CHUNK_BYTES] if part is not None else []
        if not room and part is not None and clean.get(part):
            best = min(clean[part], key=lambda n: len(manifest.chunks[n]["sessions"]))
            clean[part].remove(best)
            kept = [x for x in (_member(p, manifest) for p in manifest.chunks[best]["sessions"]) if x is not None]
            job = _Job(best, part, kept, intact.get(best, False))
            jobs.append(job)
            by_part.setdefault(part, []).append(job)
            sizes[id(job)] = sum(x.size for x in job.members)
            if sizes[id(job)] + m.size <= CHUNK_BYTES:
                room = [job]
        if not room:
            job = _Job(_new_name(taken), part, [], False)
            jobs.append(job)
            sizes[id(job)] = 0
            if part is not None:  # an unknown partition: a pair of its own
                by_part.setdefault(part, []).append(job)
            room = [job]
        room[0].members.append(m)
        sizes[id(room[0])] += m.size
    return jobs


def _member(path: str, manifest: _Manifest) -> _Member | None:
    """A session of an existing file pair, ``None`` if its file is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _Member(path, _identity(st), manifest.sessions.get(path), st.st_size)
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
) -> ExportResult:
    """Export session files to the Parquet dataset in ``out`` (created if needed).

    Args:
        sessions: session files (see :func:`session_paths` for folders and ``--all``).
        out: the dataset's folder; earlier exports there are updated in place.
        backend: index backend (default: ``$SESSIONTREE_BACKEND``, else ``auto``).
        on_progress: called ``(done, total, path)`` after each session.

    Returns:
        What was written, skipped, removed and failed.

    Raises:
        SessionError: another export into ``out`` is running.
        OSError: ``out`` cannot be written.
    """
    t0 = time.perf_counter()
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    result = ExportResult()
    paths = list(dict.fromkeys(os.path.abspath(p) for p in sessions))
    named = set(paths)
    reported: set[str] = set()

    def progress(path: str) -> None:
        if path in named and path not in reported:
            reported.add(path)
            if on_progress is not None:
                on_progress(len(reported), len(paths), path)

    with _locked(out):
        manifest = _Manifest(out)
        intact = {name: manifest.intact(name) for name in manifest.chunks}
        dirty = {name for name, ok in intact.items() if not ok}
        changed: dict[str, _Member] = {}  # stay in their file pair
        fresh: list[tuple[_Member, str | None]] = []  # placed anew
        touched: set[str] = set()
        for path in [p for p in manifest.sessions if not os.path.exists(p)]:
            rec = manifest.sessions.pop(path)
            dirty.add(rec["chunk"])
            touched.add(rec["partition"])
            result.removed += 1
        for path in paths:
            old = manifest.sessions.get(path)
            try:
                st = os.stat(path)
            except OSError as e:
                result.failed.append((path, str(e)))
                progress(path)
                continue
            m = _Member(path, _identity(st), old, st.st_size)
            if old is not None and old["identity"] == m.identity and intact.get(old["chunk"], False):
                result.skipped += 1
                progress(path)
                continue
            part = _header_partition(path, st)
            if old is not None and old["chunk"] in manifest.chunks:
                dirty.add(old["chunk"])
                if part is None or part == old["partition"]:  # (None: the job finds out)
                    changed[path] = m
                    continue
            fresh.append((m, part))
        moving = {m.path for m, _ in fresh}
        members: dict[str, list[_Member]] = {}
        for name in dirty:
            if name not in manifest.chunks:
                continue
            members[name] = []
            for p in manifest.chunks[name]["sessions"]:
                if p in changed:
                    members[name].append(changed[p])
                elif p not in moving and p in manifest.sessions:
                    m2 = _member(p, manifest)
                    if m2 is not None:
                        members[name].append(m2)
        last_save = time.monotonic()
        # File pairs are made side by side (the core's decoding and the Parquet writer
        # release the GIL), recorded by this thread as they finish.
        pool = ThreadPoolExecutor(_workers())
        # The load report is `sessions.load_issues`: no warning per session. The filter is
        # set here, for the whole run (`catch_warnings` in each worker thread would undo
        # another's: the filters are the process's).
        quiet = warnings.catch_warnings()
        quiet.__enter__()
        warnings.simplefilter("ignore", LoadReportWarning)
        try:
            for round_ in range(3):
                jobs = _plan(manifest, members, fresh, intact)
                members, fresh = {}, []
                new = [(j.partition, j.name) for j in jobs if j.name not in manifest.chunks]
                if new:  # a run that dies leaves them: the next one removes them
                    manifest.pending = [*manifest.pending, *new]
                    manifest.save()
                jobs.sort(key=lambda j: -sum(m.size for m in j.members))  # the largest first: the pool ends evenly
                futures = [pool.submit(j.run, out, backend) for j in jobs]
                for fut in as_completed(futures):
                    name, chunk, results = fut.result()
                    for m, r in results:
                        old = m.old
                        if isinstance(r, dict):
                            manifest.sessions[m.path] = r
                            touched.add(r["partition"])
                            if old is None or old["identity"] != r["identity"]:
                                result.written.append(m.path)
                                result.bytes_read += r["row"]["bytes"]
                                result.bad_blocks += r["row"]["bad_blocks"]
                            elif m.path in named and m.path not in reported:  # its pair's files were not as recorded
                                result.skipped += 1
                        elif isinstance(r, tuple) and r[0] == "moved":
                            # Its header names another partition than its first line
                            # seemed to: placed again, in that one (the last round: alone).
                            fresh.append((m, r[1] if round_ < 1 else None))
                            continue
                        elif isinstance(r, tuple):  # "kept": its old rows, its old identity
                            manifest.sessions[m.path] = r[1]
                            result.failed.append((m.path, f"{r[2]} (its previous export is kept)"))
                        else:
                            manifest.sessions.pop(m.path, None)  # its old rows are gone with its file pair
                            result.failed.append((m.path, str(r)))
                        if old is not None:
                            touched.add(old["partition"])
                        progress(m.path)
                    if chunk["sessions"]:
                        manifest.chunks[name] = chunk
                        intact[name] = True
                    else:
                        manifest.chunks.pop(name, None)
                    if chunk["partition"] is not None:
                        touched.add(chunk["partition"])
                    if time.monotonic() - last_save > 30:  # a long run that dies keeps most of its work
                        manifest.save()
                        last_save = time.monotonic()
                if not fresh:
                    break
        finally:  # an interrupted run waits for the file pairs being made, no others
            pool.shutdown(wait=True, cancel_futures=True)
            quiet.__exit__(None, None, None)
        _write_sessions(out, manifest, touched)
        manifest.pending = []
        manifest.save()
    at = {p: i for i, p in enumerate(paths)}
    result.written.sort(key=lambda p: at.get(p, len(paths)))
    result.seconds = time.perf_counter() - t0
    return result
