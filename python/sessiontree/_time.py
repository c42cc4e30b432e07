"""Timestamps as Pi handles them: JavaScript ``Date.parse`` on ISO-8601, ``toISOString``.

Pi stores entry times as ``new Date().toISOString()`` (``2025-11-07T09:14:10.205Z``) and
turns them back into epoch milliseconds with ``new Date(ts).getTime()`` (messages.ts
``createCompactionSummaryMessage`` etc., session-manager.ts ``getTree`` sorting).
"""

from __future__ import annotations

import os
import re
import sys
import time
from datetime import datetime, timedelta, timezone, tzinfo

from ._lazy import lazy_pattern

__all__ = ["parse_iso_ms", "now_iso", "iso_from_ms", "datetime_from_ms", "MAX_EPOCH_MS", "unread_tz", "day_long_rule", "zone_name"]

MAX_EPOCH_MS = 8_640_000_000_000_000
"""ECMAScript time values are limited to ±8.64e15 ms (±100,000,000 days)."""

# ECMA-262 "Date Time String Format" as V8 accepts it: 4-digit or signed 6-digit year,
# optional month/day, optional time (HH:mm[:ss[.fff...]]) with optional Z / ±HH:mm.
_ISO: re.Pattern[str] = lazy_pattern(
    r"([+-]\d{6}|\d{4})(?:-(\d{2})(?:-(\d{2}))?)?"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?",
    re.ASCII,  # V8 and the Rust core accept ASCII digits only ("２０２５" is not a year)
)


def _days_from_civil(y: int, m: int, d: int) -> int:
    # Howard Hinnant's algorithm; proleptic Gregorian, valid far beyond datetime's range.
    y -= m <= 2
    era = y // 400  # Python floors; the C version needs (y - 399) / 400 for y < 0
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_iso_ms(s: object) -> int | None:
    """JavaScript ``Date.parse(s)`` for the ISO-8601 forms, in epoch milliseconds.

    Accepted (ECMA-262 Date Time String Format, as V8 parses it):
    ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` (UTC midnight), ``±YYYYYY`` years, then
    optionally ``THH:mm``, ``THH:mm:ss``, ``THH:mm:ss.f...`` (fraction truncated to
    milliseconds: ``.9999`` -> 999) and ``Z`` or ``±HH:mm``. Like V8, a day up to 31 is
    accepted in any month and rolls over (``2025-02-30`` = March 2) and ``24:00`` is the
    next midnight.

    Deviation: a date-time without an offset is local time in JavaScript; here it is
    UTC, so the result does not depend on the machine's time zone. Other strings V8's
    legacy parser would accept (``"Dec 1 2025"``) give ``None``.

    Args:
        s: the timestamp; anything that is not a ``str`` gives ``None``
            (``new Date(undefined)`` is NaN).

    Returns:
        Milliseconds since 1970-01-01T00:00:00Z, or ``None`` where JavaScript gives NaN
        (invalid form, field out of range, beyond ±8.64e15 ms).
    """
    if not isinstance(s, str):
        return None
    m = _ISO.fullmatch(s)
    if m is None:
        return None
    ys, mos, ds, hs, mis, ss, frac, off = m.groups()
    if ys == "-000000":
        return None  # ECMA-262 forbids negative zero as a year
    year = int(ys)
    month = int(mos) if mos else 1
    day = int(ds) if ds else 1
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    hour = minute = sec = ms = 0
    if hs is not None:
        hour, minute = int(hs), int(mis)
        sec = int(ss) if ss else 0
        ms = int((frac + "00")[:3]) if frac else 0
        if minute > 59 or sec > 59 or hour > 24 or (hour == 24 and (minute or sec or ms)):
            return None
    total = (
        _days_from_civil(year, month, 1) + day - 1
    ) * 86_400_000 + hour * 3_600_000 + minute * 60_000 + sec * 1000 + ms
    if off and off != "Z":
        oh, om = int(off[1:3]), int(off[4:6])
        if oh > 23 or om > 59:
            return None
        delta = (oh * 60 + om) * 60_000
        total = total - delta if off[0] == "+" else total + delta
    if abs(total) > MAX_EPOCH_MS:
        return None
    return total


def iso_from_ms(ms: int) -> str:
    """Format epoch milliseconds as JavaScript's ``Date.prototype.toISOString``.

    Args:
        ms: milliseconds since the epoch, 0 <= year <= 9999 (``toISOString`` would use
            ``±YYYYYY`` beyond; not needed for session files).

    Returns:
        ``YYYY-MM-DDTHH:mm:ss.sssZ``.
    """
    secs, milli = divmod(ms, 1000)
    t = time.gmtime(secs)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (
        t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, milli
    )


def now_iso() -> str:
    """The current UTC time as ``new Date().toISOString()`` prints it.

    Returns:
        e.g. ``"2025-11-07T09:14:10.205Z"`` (milliseconds, truncated, ``Z``).
    """
    return iso_from_ms(time.time_ns() // 1_000_000)


def datetime_from_ms(ms: float | int) -> datetime | None:
    """An aware UTC ``datetime`` for epoch milliseconds, or ``None`` if not representable.

    Args:
        ms: milliseconds since the epoch (int or float; fractions are kept to the
            microsecond).

    Returns:
        ``datetime`` in UTC, or ``None`` for NaN/inf or years outside 1..9999.
    """
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except (OverflowError, ValueError, TypeError):
        return None


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def local_time(dt: datetime, tz: tzinfo | None = None) -> datetime:
    """``dt`` (aware) in ``tz`` (``None``: this machine's zone), for showing or grouping.

    Returns:
        The shifted time, or ``dt`` as it is when that falls outside years 1..9999
        (9999-12-31T23:00Z east of UTC, 0001-01-01T00:00Z west of it): a session may
        hold any representable time, and one of them must not stop a listing.
    """
    try:
        return dt.astimezone(tz)
    except (OverflowError, ValueError):
        return dt


def zone_from_rule(tz: tzinfo | None) -> bool:
    """Whether ``tz``'s offsets may change twice in one day: they come from a POSIX
    rule or from code, not from the tz database (whose closest two changes are four
    days apart, Africa/Freetown's in 1939). That is the local zone (``None``) when
    ``$TZ`` is set and names no zone file (glibc reads a name, with or without a
    leading ``:``, under ``$TZDIR`` or ``/usr/share/zoneinfo``, else as a rule:
    ``XXX0YYY-12,J60/12,J61/1`` keeps summer time for one hour), and a ``tzinfo`` that
    is neither ``datetime.timezone`` nor ``zoneinfo.ZoneInfo``. A zone file is taken as
    the tz database's are, whoever compiled it: a file made to change its offset twice
    in a day is not told apart (docs/CONTRACT.md §7)."""
    if tz is None:
        named = _tz_named()
        return named is not None and not os.path.isfile(named[1])  # unset: /etc/localtime; empty: UTC
    if isinstance(tz, timezone):
        return False
    zoneinfo = sys.modules.get("zoneinfo")  # a ZoneInfo exists only once it is imported
    return zoneinfo is None or not isinstance(tz, zoneinfo.ZoneInfo)


def _rule_name(tz: str) -> str:
    """``$TZ`` as glibc reads it: without one leading ``:``."""
    return tz[1:] if tz.startswith(":") else tz


def _tz_named() -> tuple[str, str] | None:
    """``$TZ``'s name (without one leading ``:``) and the zone file glibc would read for
    it (the name itself if absolute, else under ``$TZDIR`` or ``/usr/share/zoneinfo``),
    or ``None`` when ``$TZ`` is unset or empty (or only ``:``)."""
    name = _rule_name(os.environ.get("TZ") or "")
    if not name:
        return None
    return name, name if os.path.isabs(name) else os.path.join(os.environ.get("TZDIR") or "/usr/share/zoneinfo", name)


# A POSIX TZ rule as glibc reads one: a zone name (three letters or more, or <...>) and
# an offset; what follows (a summer name and rules) is read as far as it can be. The
# groups: the hours of the offset and of the summer's, if one is given.
_POSIX_RULE: re.Pattern[str] = lazy_pattern(
    r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]{3,}>)[+-]?([0-9]+)(?::[0-9]+){0,2}"
    r"(?:(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]{3,}>)(?:[+-]?([0-9]+))?)?", re.ASCII)


def day_long_rule(tz: str) -> bool:
    """Whether the POSIX rule ``tz`` (``$TZ`` as set; one leading ``:`` is not the
    rule's: :func:`_rule_name`) gives an offset of 24 hours or more, which
    glibc keeps (``AAA-24:59``; past 24 hours it takes 24) and ``datetime`` cannot
    hold: such times are shown and grouped in UTC (``local_time``), as a ``$TZ`` the C
    library cannot read is."""
    m = _POSIX_RULE.match(_rule_name(tz))
    return m is not None and any(h is not None and int(h) >= 24 for h in m.groups())


def unread_tz() -> str | None:
    """``$TZ`` as set when this machine's C library cannot read it and so keeps UTC
    (glibc's rule), or gives an offset of a day or more (:func:`day_long_rule`), else
    ``None``. Read: a name (with or without a leading ``:``) of
    a zone file under ``$TZDIR`` or ``/usr/share/zoneinfo`` (or an absolute path) that
    starts as a compiled zone does (``TZif``), else a POSIX rule (``CET-1CEST``,
    ``<+03>-3``: a name, then an offset). Unset or empty (``TZ=`` or ``TZ=:``) is
    ``None``: UTC is then the C library's rule, not a fallback (docs/CONTRACT.md §10
    "Times")."""
    named = _tz_named()
    if named is None:
        return None
    name, path = named
    rule = os.environ["TZ"]
    try:
        with open(path, "rb") as f:
            return None if f.read(4) == b"TZif" else rule
    except OSError:
        pass  # no such file (or a folder): a rule, maybe
    return None if _POSIX_RULE.match(name) and not day_long_rule(rule) else rule


def zone_name() -> str:
    """The name of the zone local times are in: ``$TZ`` as set (a name or a POSIX rule,
    without a leading ``:``); ``UTC`` when it is empty or cannot be read
    (:func:`unread_tz`: the C library then keeps UTC); unset, the IANA name
    ``/etc/localtime`` links to, else ``local``."""
    if "TZ" in os.environ:
        named = _tz_named()
        return named[0] if named is not None and unread_tz() is None else "UTC"
    real = os.path.realpath("/etc/localtime")
    i = real.find("/zoneinfo/")
    return real[i + len("/zoneinfo/"):] if i >= 0 else "local"
