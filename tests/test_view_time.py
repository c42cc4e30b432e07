"""``view._text.ms_time``: an integer time from 1970 on is spelled from a cached day and
arithmetic, not a datetime per message; its text is the datetime's, checked here
against the datetime itself at the edges and at random. And ``zoned_time``'s zone."""

from __future__ import annotations

import random
import time
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree.view._text import _MS_YEAR_10000, ms_time, zoned_time


def by_datetime(ms: int | float) -> str:
    try:
        when = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return ""
    return when.strftime("%Y-%m-%d %H:%M:%S UTC") if when.year >= 1000 else ""


EDGES = [0, 1, 999, 1000, 59_999, 60_000, 86_399_999, 86_400_000, 951_782_400_000,  # 2000-02-29
         1_767_225_599_999, 1_767_225_600_000, _MS_YEAR_10000 - 1]


def test_edges() -> None:
    for ms in EDGES:
        assert ms_time(ms) == by_datetime(ms), ms
    assert ms_time(_MS_YEAR_10000) == ""  # past datetime's range: the general path
    assert ms_time(-1) == by_datetime(-1)  # before 1970: the general path
    assert ms_time(True) == "" and ms_time("1") == "" and ms_time(None) == ""


@given(ms=st.integers(min_value=0, max_value=_MS_YEAR_10000 - 1))
def test_any_integer_time_reads_as_the_datetime(ms: int) -> None:
    assert ms_time(ms) == by_datetime(ms)


def test_session_like_times() -> None:
    rnd = random.Random(7)
    t = 1_700_000_000_000
    for _ in range(20_000):
        t += rnd.randrange(0, 4 * 3_600_000)
        assert ms_time(t) == by_datetime(t), t


def test_a_zoned_time_at_offset_zero_says_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """``view.zoned_time``: a local time ends with its offset, ``UTC`` where that is
    zero, as ``ms_time`` ends a UTC time (CONTRACT §10 "Times"); so does a time the zone
    cannot show, kept in UTC."""
    dt = datetime(2025, 11, 7, 9, 14, 10, tzinfo=timezone.utc)
    try:
        for tz, want in (("UTC0", "2025-11-07 09:14:10 UTC"), ("IST-5:30", "2025-11-07 14:44:10 +05:30"),
                         ("XXX+1", "2025-11-07 08:14:10 -01:00")):
            monkeypatch.setenv("TZ", tz)
            time.tzset()
            assert zoned_time(dt) == want, tz
            assert zoned_time(dt, seconds=False) == want[:16] + want[19:], tz
        monkeypatch.setenv("TZ", "IST-5:30")  # east of UTC: past 9999-12-31 in the zone
        time.tzset()
        assert zoned_time(datetime(9999, 12, 31, 23, 30, tzinfo=timezone.utc)) == "9999-12-31 23:30:00 UTC"
    finally:
        monkeypatch.undo()  # this process's zone as it was
        time.tzset()


def _by_fields(dt: datetime, seconds: bool) -> str:
    """A zoned time spelled field by field (the rule before ``zoned_times``)."""
    from sessiontree._time import local_time

    shown = local_time(dt)
    off = shown.utcoffset()
    total = int(off.total_seconds()) if off is not None else 0
    h, rest = divmod(abs(total), 3600)
    m, s = divmod(rest, 60)
    zone = (("-" if total < 0 else "+") + f"{h:02d}:{m:02d}" + (f":{s:02d}" if s else "")) if total else "UTC"
    clock = f"{shown.hour:02d}:{shown.minute:02d}" + (f":{shown.second:02d}" if seconds else "")
    return f"{shown.year:04d}-{shown.month:02d}-{shown.day:02d} {clock} {zone}"


@pytest.mark.parametrize("tz", ["UTC0", "IST-5:30", "XXX+1", "Europe/Amsterdam", "America/St_Johns",
                                "Africa/Monrovia"])  # Monrovia: -00:44:30 until 1972
def test_a_column_of_zoned_times_reads_as_each_alone(monkeypatch: pytest.MonkeyPatch, tz: str) -> None:
    """``view.zoned_times``: each offset's spelling made once, the clock by isoformat
    (years before 1000 padded, a time the zone cannot show kept in UTC)."""
    from sessiontree.view import zoned_times

    rnd = random.Random(tz)
    dts = [datetime(1, 1, 1, tzinfo=timezone.utc), datetime(9999, 12, 31, 23, 30, tzinfo=timezone.utc),
           datetime(999, 3, 4, 5, 6, 7, 891_000, tzinfo=timezone.utc)]
    dts += [datetime.fromtimestamp(rnd.uniform(-2e9, 4e9), tz=timezone.utc) for _ in range(2_000)]
    try:
        monkeypatch.setenv("TZ", tz)
        time.tzset()
        for seconds in (True, False):
            assert zoned_times(dts, seconds=seconds) == [_by_fields(d, seconds) for d in dts]
            assert [zoned_time(d, seconds=seconds) for d in dts[:50]] == zoned_times(dts[:50], seconds=seconds)
    finally:
        monkeypatch.undo()
        time.tzset()
