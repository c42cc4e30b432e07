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
