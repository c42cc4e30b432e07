"""Token and cost reports from the usage Pi recorded (no price table).

What counts (``_extract``): the ``usage`` of assistant messages, of ``usage`` entries
(Pi 0.87+) and of compactions and branch summaries, with the cost Pi wrote
(``usage.cost.total``).

**Each entry once.** Inside a file an entry is one line however many branches share
it. A forked or branched session (``parentSession``) starts with copies of its
source's entries: the same id and timestamp, written again. Spending happened once, so
a copy is counted once: records with the same entry id and ``timestamp`` string are one
record, charged to the oldest session holding it (header time, then path), wherever
else it was copied. (An entry without a ``timestamp`` string is never taken for a copy.)

**Active path** (``active_path=True``): only records on some holder's current path
(root to the last entry) count, so the difference from the full report is what
abandoned branches cost.

Times are an entry's time (``_extract``), put in days, ISO weeks and months of the
given time zone; ``since``/``until`` are inclusive dates there and leave out records
without a time. Sums are exact, rounded once (:func:`exact_sum`: the same whatever the
order, defined for every input, ``inf`` beyond the double range).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from time import localtime
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta, tzinfo
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any, Literal, NamedTuple

    Group = Literal["daily", "weekly", "monthly", "session", "model", "project"]
else:
    from .._tuples import NamedTuple

from .._select import native_module as native_scanner
from .._models import model_name as _model_name
from .._time import datetime_from_ms, local_time, zone_from_rule

__all__ = ["UsageLine", "UsageReport", "GROUPS", "usage_folders"]

GROUPS: tuple[str, ...] = ("daily", "weekly", "monthly", "session", "model", "project")

FIELDS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
SLICE_MS = 15 * 60 * 1000
"""The slices of UTC the native sums keep apart (``src/report.rs``): every day, week
and month of a zone whose offsets are whole quarter hours is a union of them."""
DAY_MS = 24 * 60 * 60 * 1000
DAY_S = DAY_MS // 1000
_SLICE_S = SLICE_MS // 1000
_SLICE_STARTS = range(0, DAY_S, _SLICE_S)
_SHOWN_S = (-62104060800, 253370678400)  # 0002-01-01 and 9998-12-31 UTC: shown in any zone
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


# Named tuples, not dataclasses: ``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``,
# ``tokenize``), about 7 ms of a warm report's start (docs/BENCHMARKS.md, issue 25).
class UsageLine(NamedTuple):
    """One line of a report.

    Attributes:
        key: the day (``2025-11-03``), ISO week (``2025-W45``), month (``2025-11``),
            session file, model (``provider/model``, ``(unknown)`` for what a session does not
            give: ``anthropic/(unknown)``, summaries' ``(unknown)``) or
            project (cwd); ``(no time)`` for records without a time.
        records: usage records counted.
        input, output, cache_read, cache_write, total_tokens: token counts (``int``
            when whole).
        cost: dollars, as Pi recorded.
    """

    key: str
    records: int
    input: float
    output: float
    cache_read: float
    cache_write: float
    total_tokens: float
    cost: float

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "records": self.records, "input": self.input, "output": self.output,
                "cacheRead": self.cache_read, "cacheWrite": self.cache_write,
                "totalTokens": self.total_tokens, "cost": self.cost}


class UsageReport(NamedTuple):
    """A report: its lines (in time order, or costliest first) and their total."""

    group: str
    lines: tuple[UsageLine, ...]
    total: UsageLine
    active_path: bool
    files: int


def _whole(x: float) -> float:
    return int(x) if x.is_integer() else x  # (a float: never for inf or NaN)


_SCALE = 1074  # every finite double is a whole multiple of 2**-1074


def exact_sum(values: Iterable[float]) -> float:
    """The sum of ``values`` as one rounding of their exact sum: the same float
    whatever their order (CONTRACT §7, "Usage").

    Finite terms are summed exactly (``math.fsum``; where its partial sums leave the
    double range, as integer multiples of 2**-1074) and rounded once, to nearest; a
    sum beyond the largest double is ``inf`` or ``-inf`` by its sign. Infinite terms
    (JSON numbers such as ``1e400``) win: ``inf`` if some term is ``inf`` and none
    ``-inf``, the reverse likewise, NaN if both occur (IEEE's ``inf + -inf``) or a term
    is NaN. ``math.fsum`` alone raised ``OverflowError`` (``1e308 + 1e308``) or
    ``ValueError`` (``inf + -inf``), depending on the order for the former.
    """
    vals = values if type(values) is list else list(values)
    try:
        # The common case at C speed: ``fsum`` gives this rounding, ``inf`` for infinite
        # terms of one sign and NaN for a NaN; it raises for the rest, sorted out below.
        return math.fsum(vals)
    except (OverflowError, ValueError):
        pass
    pos = neg = False
    for v in vals:
        if not math.isfinite(v):
            if v != v:
                return math.nan
            pos, neg = pos or v > 0, neg or v < 0
    if pos or neg:
        return math.nan if pos and neg else (math.inf if pos else -math.inf)
    try:
        return math.fsum(vals)
    except OverflowError:
        total = 0
        for v in vals:
            n, d = v.as_integer_ratio()
            total += n << (_SCALE - d.bit_length() + 1)
        try:
            return total / (1 << _SCALE)  # int / int: correctly rounded
        except OverflowError:
            return math.inf if total > 0 else -math.inf


def _bucket(group: str, ms: float | None, tz: tzinfo | None) -> str | None:
    if ms is None:
        return None
    dt = datetime_from_ms(ms)
    if dt is None:
        return None
    return _key(group, local_time(dt, tz))


def _day_offsets(utc_days: Sequence[int], tz: tzinfo | None) -> list[int | list[int | None] | None]:
    """The offsets of ``tz`` (ms east of UTC) through each UTC day of ``utc_days`` (days
    since 1970-01-01), for the native sums to put the day's slices in local days: the
    offset when it is one all day; else, for a day the offset changes in, the offset
    of each of its 96 slices whose start and end have one (``None`` for a slice that
    does not: the record-by-record rules place its records); ``None`` for a day
    outside datetime's years. A zone of the tz database keeps one offset all day when
    its first and last milliseconds have the same; another zone
    (``_time.zone_from_rule``: a POSIX rule may keep summer time for an hour) is asked
    at every slice's start too, so a day it leaves and takes back an offset in is
    summed slice by slice (adversary round 51)."""
    rule = zone_from_rule(tz)
    out: list[int | list[int | None] | None] = []
    for day in utc_days:
        start = day * DAY_S
        first = _offset_at(start, tz)
        offsets = {first, _offset_at(start + DAY_S - 1, tz)}
        if rule:
            offsets.update(_offset_at(start + step, tz) for step in _SLICE_STARTS)
        if len(offsets) == 1:
            out.append(first)
        elif None in offsets:
            out.append(None)
        else:
            # As `_pieces` places a slice: one offset at its two ends.
            ends = [(_offset_at(start + step, tz), _offset_at(start + step + _SLICE_S - 1, tz))
                    for step in _SLICE_STARTS]
            out.append([a if a == z else None for a, z in ends])
    return out


def _offset_at(s: int, tz: tzinfo | None) -> int | None:
    """:func:`_offset` at whole second ``s``, read without building a UTC ``datetime``
    first (a daily report asks two a day: ~3 ms of a warm report over 500 days): the
    machine's zone from ``time.localtime`` (the ``tm_gmtoff`` that ``astimezone`` also
    reads), another from ``datetime.fromtimestamp`` (its ``fromutc``, as
    ``astimezone``'s). A time either cannot show is asked as :func:`_offset` asks it."""
    if not _SHOWN_S[0] <= s < _SHOWN_S[1]:  # a shifted time may leave datetime's years
        return _offset(s * 1000, tz)
    try:
        if tz is None:
            gmtoff = localtime(s).tm_gmtoff
            if -DAY_S < gmtoff < DAY_S:  # datetime holds no offset of a day or more
                return gmtoff * 1000
            # glibc keeps a rule's ±24:00 (`TZ=AAA-24`); datetime cannot hold it, and
            # `local_time` shows such a time in UTC: so do the days (adversary round 54).
            return _offset(s * 1000, tz)
        off = datetime.fromtimestamp(s, tz).utcoffset()
        return None if off is None else off // timedelta(milliseconds=1)
    except (OverflowError, ValueError, OSError):
        return _offset(s * 1000, tz)


def _offset(ms: int, tz: tzinfo | None) -> int | None:
    """``tz``'s offset (ms east of UTC) at ``ms``; ``None`` outside datetime's years."""
    dt = datetime_from_ms(ms)
    if dt is None:
        return None
    off = local_time(dt, tz).utcoffset()
    return None if off is None else off // timedelta(milliseconds=1)


def _key(group: str, local: date) -> str:
    # Years of four digits, as ISO writes them: strftime's "%Y" gives "999", which sorts
    # after "2026" and compares wrongly with --since and --until (adversary round 51).
    if group == "daily":
        return f"{local.year:04d}-{local.month:02d}-{local.day:02d}"
    if group == "weekly":
        y, w, _ = local.isocalendar()
        return f"{y:04d}-W{w:02d}"
    return f"{local.year:04d}-{local.month:02d}"


def usage_folders(
    folders: Sequence[str],
    group: Group = "daily",
    *,
    since: date | None = None,
    until: date | None = None,
    active_path: bool = False,
    tz: tzinfo | None = None,
    catalog: Any = None,
    no_cache: bool = False,
    on_progress: Any = None,
    on_bytes: Any = None,
    on_unread: Any = None,
) -> UsageReport:
    """The usage of the sessions of ``folders`` (rules: module docstring).

    Args:
        folders: session folders.
        group: ``daily``, ``weekly``, ``monthly``, ``session``, ``model`` or ``project``.
        since, until: inclusive dates (in ``tz``).
        active_path: count only records on a current path.
        tz: the time zone of days, weeks and months (``None``: this machine's).
        catalog, no_cache: as for listing.
        on_progress, on_bytes: progress while the catalog is brought up to date.
        on_unread: called with ``(path, why)`` for each folder of the scope that cannot
            be listed, then each ``.jsonl`` that could be ``stat``-ed but not read
            (permission denied, an I/O error), once the report is made: they count as
            no session (CONTRACT §7).

    Returns:
        The :class:`UsageReport`.

    Raises:
        ValueError: an unknown ``group``.
    """
    from ._run import refresh_for, run

    if group not in GROUPS:
        raise ValueError(f"unknown report {group!r}: use one of {', '.join(GROUPS)}")

    unread: dict[str, str] = {}

    def refreshed(store: Any, scope: Sequence[str]) -> list[Any]:
        from ._indexer import unread_of

        found = refresh_for(store, scope, content=True, on_progress=on_progress, on_bytes=on_bytes)
        unread.update(unread_of(found))
        return found

    def op(store: Any) -> UsageReport:
        unread.clear()  # the last run's (a damaged catalog is rebuilt and run again)
        native = native_scanner()
        if store is not None and native is not None:
            got = _warm(native, store, folders, group, since, until, active_path, tz)
            if isinstance(got, _Stale):
                refreshed(store, got.folders)
                got = _warm(native, store, folders, group, since, until, active_path, tz)
            if got is not None and not isinstance(got, _Stale):
                return got  # type: ignore[return-value]
        # The files one by one: no native module, a catalog that could not answer from
        # its totals, or one still changing under us.
        current = _current(store, folders) if store is not None else None
        found = None
        if current is None:
            found = refreshed(store, folders)
            if store is not None:  # every file saved: the catalog's logs answer
                current = _current(store, folders)
        if current is not None:  # every file as the catalog holds it
            sessions = current
        else:
            assert found is not None
            sessions = [f for f in found if f.row is not None and f.error is None and f.row.problem is None]
        sessions.sort(key=_age)  # a copy is charged to its first holder
        rows = [f.row for f in sessions if f.row is not None]
        need = [r.id for r in rows if r.log is None and r.id is not None]
        kept = _logs_read_to_the_end(store, need) if store is not None else {}
        logs = [r.log if r.log is not None else kept.get(r.id or -1, b"") for r in rows]
        entries = None
        if active_path:
            from ._indexer import entries_of

            entries = [entries_of(store, f) for f in sessions]
        return _report(sessions, logs, entries, group, since, until, active_path, tz)

    report = run(op, catalog=catalog, no_cache=no_cache, wait=True)
    from ._files import tell_unread

    tell_unread(on_unread, folders, unread.items())
    return report


def _logs_read_to_the_end(store: Any, ids: Sequence[int]) -> dict[int, bytes]:
    """The usage logs of catalog files whose rows say their logs are read to their
    ends: every such file keeps one, empty or not.

    Raises:
        sqlite3.DatabaseError: one is missing (damage: the catalog is rebuilt).
    """
    logs = store.logs(ids) if ids else {}
    if len(logs) != len(set(ids)):
        raise sqlite3.DatabaseError("catalog damaged: a file read to its end has no usage log")
    return logs  # type: ignore[no-any-return]


class _Held:
    """A session file the catalog holds as it is: its path and row facts (what
    ``_indexer.Found`` gives a report)."""

    __slots__ = ("path", "row")

    def __init__(self, path: str, row: Any) -> None:
        self.path = path
        self.row = row


class _Row:
    __slots__ = ("id", "created_ms", "cwd", "log", "entries")

    def __init__(self, fid: int, created_ms: Any, cwd: Any) -> None:
        self.id, self.created_ms, self.cwd, self.log, self.entries = fid, created_ms, cwd, None, None


_CURRENT_COLUMNS = ("name", "id", "dev", "ino", "size", "mtime_ns", "ctime_ns", "l_end", "tail", "c_end", "problem",
                    "created_ms", "cwd")
_CURRENT = f"SELECT {', '.join(_CURRENT_COLUMNS)} FROM file WHERE folder = ?"


def _current(store: Any, folders: Sequence[str]) -> list[Any] | None:
    """The sessions of ``folders`` when the catalog holds every file as it is (the same
    identity, listed and its usage log read to its end): a warm report makes no
    refresh. ``None`` when some file is new or changed."""
    import os

    from ._files import folder_files, folder_key
    from ._store import checked_all, py_text

    out: list[Any] = []
    try:
        for folder in folders:
            items = folder_files(folder)
            if not items:
                continue
            fid = store.folder_id(folder_key(folder)[0], create=False)
            if fid is None:
                return None
            got = checked_all("file", _CURRENT_COLUMNS, store.conn.execute(_CURRENT, (fid,)).fetchall())
            rows = {r[0]: r for r in got}
            for name, path, st in items:
                if isinstance(st, OSError):
                    continue  # no one can read it (a dangling link): no session, as the files say
                r = rows.get(name)
                if r is None or r[2:7] != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns):
                    return None
                if r[10] is not None:
                    continue  # not a session
                # Read to its end, but for an unterminated last piece that is no entry
                # (a torn line a crash left): the same bytes read again give the same.
                if r[9] != r[7] or r[7] + r[8] != st.st_size:
                    return None
                out.append(_Held(path, _Row(r[1], r[11], py_text(r[12]))))
    except sqlite3.OperationalError:
        return None  # busy: the refresh waits for it
    return out


def _age(f: Any) -> tuple[bool, int, str]:
    """Which of two holders of a copied entry is the original: the older header."""
    created = f.row.created_ms
    return (created is None, created or 0, f.path)


# A piece of a report: (line name, day for since/until or None, records, six lists of
# floats whose exact sums are the piece's sums).
_Piece = tuple[str, "str | None", int, list[list[float]]]


def _keys(sessions: list[Any], group: str) -> tuple[list[int], list[str]]:
    """Each file's key (``session``: its place; ``project``: its cwd's number) and the
    keys' names."""
    cwds: dict[str, int] = {}
    keys = [i if group == "session" else cwds.setdefault(f.row.cwd or "", len(cwds)) if group == "project" else 0
            for i, f in enumerate(sessions)]
    names = ([f.path for f in sessions] if group == "session" else list(cwds) if group == "project" else [])
    return keys, names


# A file as the warm report reads it: its name, ``file.warm`` (``_store``: its
# identity, then 0 not a session, 1 its usage log read to its end, 2 not) and its usage
# totals (1: none kept; -1: a value the catalog never writes), through the index that
# holds the first two (a row is ten times the size).
_WARM = ("SELECT file.name, file.warm,"
         " CASE typeof(usage_sum.sums) WHEN 'blob' THEN usage_sum.sums WHEN 'null' THEN 1 ELSE -1 END, {cwd}"
         " FROM file INDEXED BY file_warm LEFT JOIN usage_sum ON usage_sum.file = file.id WHERE file.folder = ?")
_WARM_PROJECT = _WARM.format(cwd="file.cwd")
_WARM_OTHER = _WARM.format(cwd="NULL")
# A folder's id and change count, and its rows as one value (``_store``:
# ``usage_folder``; NULL for a report by project, which reads the rows), current while
# its ``stamp`` is the folder's ``gen``: one query a folder.
_FOLDER = ("SELECT folder.id, folder.gen, usage_folder.stamp, {record} FROM folder"
           " LEFT JOIN usage_folder ON usage_folder.folder = folder.id WHERE folder.path = ?")
_FOLDER_RECORD = _FOLDER.format(record="usage_folder.record")
_FOLDER_ONLY = _FOLDER.format(record="NULL")


class _Stale:
    """:func:`_warm`'s answer when a refresh is due: the folders to refresh."""

    __slots__ = ("folders",)

    def __init__(self, folders: Sequence[str]) -> None:
        self.folders = folders


def _read_folders(scan: Any, store: Any, folders: Sequence[str], project: bool,
                  made: list[tuple[int, int, bytes | None]]) -> tuple[list[int | None], list[str]]:
    """Each folder's files added to ``scan`` (``UsageScan.folder``) from the catalog, in
    the caller's read transaction: from the folder's record when it is current (and
    reads), else from its rows (their record then added to ``made`` as ``(folder, gen,
    record)``, for :meth:`Store.keep_records`; ``record`` ``None``: drop the folder's).
    A report by project reads the rows (they hold the cwds). Returns ``(ids,
    stale)``: the folders' ids (``None``: not in the catalog), and the folders holding
    a file that is new, changed or not read to its end, in the order given (when there
    is one, ``scan`` holds no report: every folder is still looked at, so that one
    refresh of those folders alone brings the catalog up to date: an append costs its
    folder, not the history).

    Raises:
        sqlite3.DatabaseError: a row or record holds a value the catalog never writes.
    """
    from ._files import folder_key
    from ._store import db_text

    conn = store.conn
    sql, sql_folder = (_WARM_PROJECT, _FOLDER_ONLY) if project else (_WARM_OTHER, _FOLDER_RECORD)
    fids: list[int | None] = []
    stale: list[str] = []
    for folder in folders:
        got = conn.execute(sql_folder, (db_text(folder_key(folder)[0]),)).fetchone()
        if got is None:
            fids.append(None)
            state = scan.folder(())
        else:
            fid, gen, stamp, record = got
            if type(fid) is not int or type(gen) is not int or type(stamp) not in (int, type(None)) \
                    or type(record) not in (bytes, type(None)):
                raise sqlite3.DatabaseError("catalog damaged: a folder's row or usage record holds a value the "
                                            "catalog never writes")
            fids.append(fid)
            # A record that does not read (2) is made again from the rows, as totals
            # that do not read are summed from the logs; one that finds a file changed
            # (1) is dropped with the report (the files' rows are brought up to date and
            # its record made again: a record that is not the rows' is never taken twice).
            state = scan.folder_record(record) if stamp == gen and record is not None else 2
            if state == 1:
                made.append((fid, gen, None))
            if state == 2:
                state = scan.folder(conn.execute(sql, (fid,)))  # rows read as they come
                rows = scan.record()
                if rows is not None:
                    made.append((fid, gen, rows))
        if state == 1:
            stale.append(folder)
        elif state == 2:
            raise sqlite3.DatabaseError("catalog damaged: a file row holds a value the catalog never writes")
    return fids, stale


def make_records(native: Any, store: Any, folders: Sequence[str]) -> None:
    """Make the records of those of ``folders`` whose files the catalog holds as they
    are and whose record is not current (``sessiontree index``: the first warm report
    then reads them)."""
    import os

    made: list[tuple[int, int, bytes | None]] = []
    scan = native.UsageScan([os.fsencode(f) for f in folders], "none", False, False)
    conn = store.conn
    conn.execute("BEGIN")
    try:
        _read_folders(scan, store, folders, False, made)
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("COMMIT")
    store.keep_records(made)


def _logged_files(scan: Any, store: Any, fids: list[int | None], active: bool) -> list[tuple[Any, ...]]:
    """The files ``scan`` sums from their usage logs under the copy rule, in order, each
    ``(file, totals, log, entries)`` as ``UsageScan.report`` takes them: those without
    totals and those holding a copy key hash another file holds (``UsageScan.involved``),
    a copy charged to its first holder (the older header, then the path). In the
    caller's read transaction.

    Raises:
        sqlite3.DatabaseError: a row holds a value the catalog never writes.
    """
    import os

    from ._store import db_text

    conn = store.conn
    rows_of: dict[int, tuple[int, int | None]] = {}  # scan file -> (catalog id, created_ms)

    def row_of(file: int, at: int, name: bytes) -> tuple[int, int | None]:
        got = rows_of.get(file)
        if got is None:
            got = conn.execute("SELECT id, created_ms FROM file WHERE folder = ? AND name = ?",
                               (fids[at], db_text(os.fsdecode(name)))).fetchone()
            if got is None or type(got[0]) is not int or type(got[1]) not in (int, type(None)):
                raise sqlite3.DatabaseError("catalog damaged: a file row does not read back")
            got = rows_of[file] = (got[0], got[1])
        return got

    # A file without totals holds its copy key hashes in its log only: they are read
    # before the files that share one with another are chosen (it is one of those: its
    # log is read once).
    untotalled = [(file, row_of(file, at, name)[0]) for file, at, name, _path in scan.untotalled()]
    logs = _logs_read_to_the_end(store, [i for _f, i in untotalled])
    for file, i in untotalled:
        scan.log_hashes(file, logs[i])
    need = []
    for file, at, name, path in scan.involved():
        fid, created = row_of(file, at, name)
        need.append((created is None, created or 0, os.fsdecode(path), file, fid))
    need.sort()  # a copy is charged to its first holder: the older header, then the path
    ids = [n[4] for n in need]
    logs.update(_logs_read_to_the_end(store, [i for i in ids if i not in logs]))
    sums = store.sums(ids) if ids else {}
    return [(n[3], sums.get(n[4]), logs[n[4]], (store.entries(n[4]) or b"") if active else None) for n in need]


def _warm(native: Any, store: Any, folders: Sequence[str], group: str, since: date | None, until: date | None,
          active: bool, tz: tzinfo | None) -> Any:
    """The report from the catalog's usage totals (``src/totals.rs``) when the catalog
    holds every file as it is, in one read transaction: each folder listed, ``stat``-ed
    and checked against its rows natively, each file's totals summed as they are read
    (``_sessiontree.UsageScan``; nothing kept per file but its copy key hashes and
    place), then the files whose records may be copies of another's (or without
    totals) summed from their logs under the copy rule. A :class:`_Stale` naming the
    folders to refresh when some file is new, changed or not read to its end (every
    folder when another process holds the catalog: the refresh waits for it); ``None``
    when the totals cannot answer (a sum not finite, totals that do not read): the logs answer.

    Raises:
        sqlite3.DatabaseError: a row or record holds a value the catalog never writes.
    """
    import os

    from ._store import py_text

    time_group = group in ("daily", "weekly", "monthly")
    dated = since is not None or until is not None
    key = "model" if group == "model" else "file" if group == "session" else group if group == "project" else "none"
    scan = native.UsageScan([os.fsencode(f) for f in folders], key, time_group or dated, active)
    conn = store.conn
    made: list[tuple[int, int, bytes | None]] = []
    try:
        conn.execute("BEGIN")  # one snapshot: the rows, the totals and the logs read below agree
        try:
            fids, stale = _read_folders(scan, store, folders, group == "project", made)
            files = _logged_files(scan, store, fids, active) if not stale else None
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")
    except sqlite3.OperationalError as e:
        from ._store import busy

        if busy(e):
            return _Stale(folders)  # the refresh waits for it
        raise  # not busy ("could not decode", a full disk): the caller's rules
    store.keep_records(made)
    if files is None:
        return _Stale(stale)
    # A report whose groups are its lines, made natively: by session or project, each
    # key's name its own (a file's path; a project's cwd, unless two read alike), by
    # model or by day, week or month where every group is a local day (named
    # natively); with `since` or `until`, the local days between kept.
    names = (scan.paths() if group == "session"
             else [py_text(c) or "" for c in scan.cwds()] if group == "project" else [])
    keyed = group in ("session", "model") or (group == "project" and len(set(names)) == len(names))
    span = None
    if dated:
        span = (since.toordinal() - _EPOCH_ORDINAL if since is not None else -(1 << 62),
                until.toordinal() - _EPOCH_ORDINAL if until is not None else 1 << 62)
    try:
        got = scan.report(files, lambda utc: _day_offsets(utc, tz), UsageLine if keyed or time_group else None,
                          group if time_group else None, span, names or None)
    except UnicodeDecodeError:
        # A name no session spells (each is a JSON string's): damage (adversary 57b).
        raise sqlite3.DatabaseError("catalog damaged: a usage total's model name does not decode") from None
    if got is None:
        return None
    if len(got) == 2:  # its lines, each sum rounded once natively (exact_sum's value)
        return _from_lines(group, got, active, scan.files)
    pieces = _pieces(got, names, group, since, until, tz)
    if pieces is None:
        return None
    return _summary(pieces, group, since, until, active, scan.files)


def _costliest(x: UsageLine) -> tuple[bool, float, str]:
    """The order of a report's lines but by time: costliest first (NaN last), then by key."""
    return (math.isnan(x.cost), 0.0 if math.isnan(x.cost) else -x.cost, x.key)


def _from_lines(group: str, got: Any, active: bool, files: int) -> UsageReport:
    """A report from ``UsageScan.report(..., line=UsageLine)``: its lines made and
    ordered natively (by session or project, each key its name; by model,
    its name; costliest first, as :func:`_costliest` orders them; by day, week or
    month, its name, in time order), no sum left to round."""
    lines, total = got
    return UsageReport(group, tuple(lines), total, active, files)


def _report(sessions: list[Any], logs: list[bytes], entries: list[bytes] | None, group: str, since: date | None,
            until: date | None, active: bool, tz: tzinfo | None) -> UsageReport:
    keys, names = _keys(sessions, group)
    native = native_scanner()
    pieces = None
    if native is not None:
        pieces = _native_pieces(native, logs, keys, names, entries, group, since, until, active, tz)
    if pieces is None:
        pieces = _python_pieces(sessions, logs, keys, names, entries, group, since, until, active, tz)
    return _summary(pieces, group, since, until, active, len(sessions))


def _summary(pieces: list[_Piece], group: str, since: date | None, until: date | None, active: bool,
             files: int) -> UsageReport:
    """The report's lines and total from its pieces (each piece's lists are its own:
    kept, never changed)."""
    lo = since.isoformat() if since is not None else None
    hi = until.isoformat() if until is not None else None
    dated = lo is not None or hi is not None
    lines: dict[str, list[Any]] = {}  # name -> [records, six lists of floats]
    for name, day, records, sums in pieces:
        if dated and (day is None or (lo is not None and day < lo) or (hi is not None and day > hi)):
            continue
        acc = lines.get(name)
        if acc is None:
            lines[name] = [records, sums]
        else:
            acc[0] += records
            acc[1] = [a + b for a, b in zip(acc[1], sums)]

    def line(key: str, records: int, cols: list[list[float]]) -> UsageLine:
        s = [exact_sum(v) for v in cols]
        return UsageLine(key, records, _whole(s[0]), _whole(s[1]), _whole(s[2]), _whole(s[3]), _whole(s[4]), s[5])

    out = [line(k, v[0], v[1]) for k, v in lines.items()]
    if group in ("daily", "weekly", "monthly"):
        out.sort(key=lambda x: (x.key == "(no time)", x.key))
    else:
        out.sort(key=_costliest)
    accs = list(lines.values())
    total = line("total", sum(a[0] for a in accs), [[x for a in accs for x in a[1][k]] for k in range(len(FIELDS))])
    return UsageReport(group, tuple(out), total, active, files)


def _python_pieces(sessions: list[Any], logs: list[bytes], keys: list[int], names: list[str],
                   entries: list[bytes] | None, group: str, since: date | None, until: date | None, active: bool,
                   tz: tzinfo | None) -> list[_Piece]:
    """The rules of the module docstring record by record (the reference)."""
    from ._records import entries_path, unpack_log

    native = native_scanner()
    owned: dict[Any, list[Any]] = {}  # copy key -> [file index, row, on some holder's path]
    for i, log in enumerate(logs):
        try:
            rows = unpack_log(log)
        except ValueError as e:
            raise sqlite3.DatabaseError(f"catalog damaged: {e}") from e
        on: set[int] = set(entries_path(entries[i], native=native)) if entries is not None else set()
        for r in rows:
            meta = r[0]
            key = (meta[1], meta[2]) if meta[2] else (i, meta[0])
            held = owned.get(key)
            if held is None:
                owned[key] = [i, r, meta[0] in on]
            else:
                held[2] = held[2] or meta[0] in on
    time_group = group in ("daily", "weekly", "monthly")
    pieces: list[_Piece] = []
    for i, r, on in owned.values():
        if active and not on:
            continue
        (_seq, _eid, _stamp, time, _kind, provider, model), nums = r
        if time_group:
            name = _bucket(group, time, tz) or "(no time)"
        elif group == "model":
            name = _model_name(provider, model)
        else:
            name = names[keys[i]]
        day = _bucket("daily", time, tz) if since is not None or until is not None else None
        pieces.append((name, day, 1, [[x if x != 0 else 0.0] for x in nums]))
    return pieces


def _native_pieces(native: Any, logs: list[bytes], keys: list[int], names: list[str], entries: list[bytes] | None,
                   group: str, since: date | None, until: date | None, active: bool,
                   tz: tzinfo | None) -> list[_Piece] | None:
    """The same pieces from ``src/report.rs``'s sums by group and local day of ``tz``
    (or, in a UTC day whose offset changes, 15-minute slice of UTC); ``None`` when a
    slice is not all one day, week or month of ``tz`` (a zone whose offset changes
    inside one), which the record-by-record reference answers."""
    time_group = group in ("daily", "weekly", "monthly")
    dated = since is not None or until is not None
    key = "model" if group == "model" else "file" if group in ("session", "project") else "none"
    got = native.usage_report(logs, keys, entries, key, time_group or dated, active,
                              lambda utc: _day_offsets(utc, tz))
    return _pieces(got, names, group, since, until, tz)


def _pieces(got: Any, names: list[str], group: str, since: date | None, until: date | None,
            tz: tzinfo | None) -> list[_Piece] | None:
    """The pieces of a native report's ``(groups, loose, models, bad)`` (see
    :func:`_native_pieces`)."""
    groups, loose, models, bad = got
    time_group = group in ("daily", "weekly", "monthly")
    dated = since is not None or until is not None
    if bad:
        raise sqlite3.DatabaseError("catalog damaged: a malformed usage log")
    slices: dict[int, tuple[str, str] | None] = {}
    days: dict[date, tuple[str, str]] = {}

    def day_keys(d: date) -> tuple[str, str]:
        # (the local day's key for a time group, its day)
        if d not in days:
            days[d] = (_key(group, d) if time_group else "", _key("daily", d))
        return days[d]

    def slice_keys(b: int) -> tuple[str, str] | None:
        # (the slice's key for a time group, its day), if its two ends are one local day
        # at one offset (then so is every instant between: a zone's offset does not
        # change twice in 15 minutes).
        if b not in slices:
            first, last = datetime_from_ms(b * SLICE_MS), datetime_from_ms(b * SLICE_MS + SLICE_MS - 1)
            got = None
            if first is not None and last is not None:
                a, z = local_time(first, tz), local_time(last, tz)
                if a.date() == z.date() and a.utcoffset() == z.utcoffset():
                    got = day_keys(a.date())
            slices[b] = got
        return slices[b]

    def name_of(k: int) -> str:
        if group == "model":
            return _model_name(*models[k])
        return names[k] if names else ""

    pieces: list[_Piece] = []
    for k, bucket, records, sums in groups:
        floats = [v for _exact, v in sums]  # fresh lists, only read from here
        if bucket is True or bucket is None:
            name = "(no time)" if time_group else name_of(k)
            pieces.append((name, None, records, floats))
            continue
        # A tuple: the native sums' own local day (days since 1970-01-01); else a slice.
        got = day_keys(date.fromordinal(bucket[1] + _EPOCH_ORDINAL)) if type(bucket) is tuple else slice_keys(bucket)
        if got is None:
            return None
        pieces.append((got[0] if time_group else name_of(k), got[1], records, floats))
    for k, time, nums in loose:
        name = (_bucket(group, time, tz) or "(no time)") if time_group else name_of(k)
        pieces.append((name, _bucket("daily", time, tz) if dated else None, 1,
                       [[x if x != 0 else 0.0] for x in nums]))
    return pieces
