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

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, tzinfo
from typing import Any, Literal

from .._time import datetime_from_ms, local_time
from ._extract import entries_path, native_scanner
from ._indexer import entries_of
from ._store import checked, py_text

__all__ = ["UsageLine", "UsageReport", "GROUPS", "usage_folders"]

Group = Literal["daily", "weekly", "monthly", "session", "model", "project"]
GROUPS: tuple[str, ...] = ("daily", "weekly", "monthly", "session", "model", "project")

FIELDS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")


@dataclass(frozen=True)
class UsageLine:
    """One line of a report.

    Attributes:
        key: the day (``2025-11-03``), ISO week (``2025-W45``), month (``2025-11``),
            session file, model (``provider/model``, ``(unknown)`` for summaries) or
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


@dataclass(frozen=True)
class UsageReport:
    """A report: its lines (in time order, or costliest first) and their total."""

    group: str
    lines: tuple[UsageLine, ...]
    total: UsageLine
    active_path: bool
    files: int


def _whole(x: float) -> float:
    return int(x) if math.isfinite(x) and x == int(x) else x


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
    vals = list(values)
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


def _line(key: str, rows: list[tuple[float, ...]]) -> UsageLine:
    col = [_whole(exact_sum(r[k] for r in rows)) for k in range(5)]
    return UsageLine(key, len(rows), col[0], col[1], col[2], col[3], col[4], exact_sum(r[5] for r in rows))


def _bucket(group: str, ms: float | None, tz: tzinfo | None) -> str | None:
    if ms is None:
        return None
    dt = datetime_from_ms(ms)
    if dt is None:
        return None
    local = local_time(dt, tz)
    if group == "daily":
        return local.strftime("%Y-%m-%d")
    if group == "weekly":
        y, w, _ = local.isocalendar()
        return f"{y:04d}-W{w:02d}"
    return local.strftime("%Y-%m")


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

    Returns:
        The :class:`UsageReport`.

    Raises:
        ValueError: an unknown ``group``.
    """
    from ._run import refresh_for, run

    if group not in GROUPS:
        raise ValueError(f"unknown report {group!r}: use one of {', '.join(GROUPS)}")

    def op(store: Any) -> UsageReport:
        # (found, seq, entry, stamp, time, kind, provider, model, numbers...)
        records: list[tuple[Any, ...]] = []

        def sink(f: Any, _docs: Any, usage: Sequence[tuple[Any, ...]]) -> None:
            records.extend((f, *u) for u in usage)

        found = refresh_for(store, folders, content=True, sink=sink, on_progress=on_progress, on_bytes=on_bytes)
        sessions = [f for f in found if f.row is not None and f.error is None and f.row.problem is None]
        if store is not None:
            records = _catalog_records(store.conn, {f.row.id: f for f in sessions if f.row and f.row.id is not None})
        return _report(store, records, sessions, group, since, until, active_path, tz)

    return run(op, catalog=catalog, no_cache=no_cache, wait=True)


def _report(store: Any, records: list[tuple[Any, ...]], sessions: list[Any], group: str, since: date | None,
            until: date | None, active_path: bool, tz: tzinfo | None) -> UsageReport:
    # One record per copy key, charged to the oldest holder; every holder noted.
    age = {id(f): _age(f) for f in sessions}
    merged: dict[Any, list[Any]] = {}
    for r in records:
        f, seq, entry, stamp = r[0], r[1], r[2], r[3]
        key = (entry, stamp) if stamp else (id(f), seq)
        holders = merged.get(key)
        if holders is None:
            merged[key] = [r, [(f, seq)]]
        else:
            holders[1].append((f, seq))
            if age[id(f)] < age[id(holders[0][0])]:
                holders[0] = r
    native = native_scanner()
    paths: dict[int, set[int]] = {}

    def on_path(f: Any, seq: int) -> bool:
        if id(f) not in paths:
            paths[id(f)] = set(entries_path(entries_of(store, f), native=native))
        return seq in paths[id(f)]

    groups: dict[str, list[tuple[float, ...]]] = {}
    name: str
    kept: list[tuple[float, ...]] = []
    for r, holders in merged.values():
        if active_path and not any(on_path(f, seq) for f, seq in holders):
            continue
        f, time = r[0], r[4]
        if since is not None or until is not None:
            day = _bucket("daily", time, tz)
            if day is None or (since is not None and day < since.isoformat()) or (
                    until is not None and day > until.isoformat()):
                continue
        nums = tuple(float(x) for x in r[8:14])
        kept.append(nums)
        if group in ("daily", "weekly", "monthly"):
            name = _bucket(group, time, tz) or "(no time)"
        elif group == "session":
            name = f.path
        elif group == "model":
            provider, model = r[6], r[7]
            name = f"{provider}/{model}" if provider or model else "(unknown)"
        else:
            name = f.row.cwd or ""
        groups.setdefault(name, []).append(nums)
    lines = [_line(k, v) for k, v in groups.items()]
    if group in ("daily", "weekly", "monthly"):
        lines.sort(key=lambda x: (x.key == "(no time)", x.key))
    else:
        # NaN (a cost of inf + -inf) sorts last, so the order never depends on the records' order.
        lines.sort(key=lambda x: (x.cost != x.cost, -x.cost if x.cost == x.cost else 0.0, x.key))
    return UsageReport(group, tuple(lines), _line("total", kept), active_path, len(sessions))


def _age(f: Any) -> tuple[bool, int, str]:
    """Which of two holders of a copied entry is the original: the older header."""
    created = f.row.created_ms
    return (created is None, created or 0, f.path)


def _catalog_records(conn: sqlite3.Connection, by_id: dict[int, Any]) -> list[tuple[Any, ...]]:
    cols = ("file", "seq", "entry", "stamp", "time", "kind", "provider", "model", "input", "output", "cache_read",
            "cache_write", "total_tokens", "cost")
    rows = checked("usage", cols, conn.execute(
        f"SELECT {', '.join(cols)} FROM usage WHERE file IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(by_id)),)))
    return [(by_id[r[0]], r[1], py_text(r[2]), py_text(r[3]), r[4], r[5], py_text(r[6]), py_text(r[7]), *r[8:])
            for r in rows]
