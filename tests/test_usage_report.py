"""Usage reports: the native sums by group and 15-minute slice (src/report.rs) equal
the record-by-record reference (``catalog._usage._python_pieces``) and a brute-force
scan, in every group, time zone (quarter-hour offsets, one of 7 minutes), date range
and with ``active_path``; odd numbers and times never stop a report."""

from __future__ import annotations

import json
import math
import warnings
from datetime import date, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import _brute
from sessiontree import LoadReportWarning
from sessiontree import catalog as cat
from sessiontree._listing import project_folders
from sessiontree.catalog import _indexer, _usage

from _shared import native_available, said_if_rebuilt
from test_catalog import make_root

needs_native = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

ZONES: list[Any] = [timezone.utc, ZoneInfo("Asia/Kathmandu"), ZoneInfo("Pacific/Chatham"),
                    ZoneInfo("America/St_Johns"), timezone(timedelta(minutes=7)), None]


def _reference(monkeypatch: pytest.MonkeyPatch, *args: Any, **kw: Any) -> Any:
    """The report with the Python rules only (reading and summing), no catalog."""
    with monkeypatch.context() as m:
        m.setattr(_usage, "native_scanner", lambda: None)
        m.setattr(_indexer, "native_scanner", lambda: None)
        return cat.usage(*args, no_cache=True, **kw)


def _odd_session(folder: Path) -> None:
    """Numbers past the float range and their sums' overflow, zeros of both signs, and
    times that are fractional, out of range or absent."""
    head = {"type": "session", "version": 3, "id": "odd", "timestamp": "2020-01-01T00:00:00.000Z", "cwd": "/odd"}
    lines = [json.dumps(head)]
    values = ["1e308", "1e308", "-1e308", "1e400", "-1e400", "-0", "-0.0", "0.1", "170141183460469231731687303715884105727"]
    times = ["1600000000000.25", "1e20", "-5", "1577836800000", "1577836799999", "null", "\"x\""]
    parent = None
    for i, v in enumerate(values * 2):
        t = times[i % len(times)]
        line = (f'{{"type":"message","id":"o{i}","parentId":{json.dumps(parent)},'
                f'"timestamp":"2020-01-0{1 + i % 3}T23:5{i % 10}:00.000Z","message":{{"role":"assistant",'
                f'"content":[],"provider":"p","model":"m{i % 2}","timestamp":{t},'
                f'"usage":{{"input":{v},"output":{i},"cacheRead":{v},"cost":{{"total":{v}}}}}}}}}')
        json.loads(line)
        lines.append(line)
        parent = f"o{i}"
    (folder / "2020-01-01T00-00-00-000Z_odd.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    base = tmp_path_factory.mktemp("usage") / "sessions"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        folders = make_root(base, 150, seed=5)
    return folders


@needs_native
@pytest.mark.parametrize("tz", ZONES, ids=lambda z: str(z))
def test_native_sums_equal_the_reference(root: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         tz: Any) -> None:
    catalog_file = str(tmp_path / "c.sqlite3")
    for group in _usage.GROUPS:
        for active in (False, True):
            for since, until in ((None, None), (date(2025, 11, 3), date(2025, 11, 20))):
                kw = dict(tz=tz, active_path=active, since=since, until=until)
                got = cat.usage(group, root, catalog=catalog_file, **kw)  # type: ignore[arg-type]
                assert got == cat.usage(group, root, no_cache=True, **kw), (group, kw)  # type: ignore[arg-type]
                assert got == _reference(monkeypatch, group, root, **kw), (group, kw)
                assert got.total.records > 0


@needs_native
def test_brute_force_days_in_utc(root: list[str], tmp_path: Path) -> None:
    catalog_file = str(tmp_path / "c.sqlite3")
    for active in (False, True):
        got = cat.usage("daily", root, tz=timezone.utc, active_path=active, catalog=catalog_file)
        want = _brute.usage(root, active)
        assert {x.key: (x.records, x.input, x.output, x.cost) for x in got.lines} == want


def test_odd_numbers_and_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    _odd_session(folder)
    for group in _usage.GROUPS:
        for tz in (timezone.utc, ZoneInfo("Asia/Kathmandu")):
            got = cat.usage(group, [str(folder)], tz=tz, catalog=str(tmp_path / "c.sqlite3"))
            want = _reference(monkeypatch, group, [str(folder)], tz=tz)
            assert repr(got) == repr(want), group  # NaN sums compare by their text
            assert got.total.records == 18
    total = cat.usage("model", [str(folder)], no_cache=True).total
    assert math.isnan(total.cost)  # 1e400 and -1e400: inf - inf
    # 1e308 + 1e308 - 1e308 overflows on the way; the exact sum does not.
    first = cat.usage("session", [str(folder)], since=date(2020, 9, 13), until=date(2020, 9, 13), tz=timezone.utc,
                      no_cache=True)
    assert first.total.records == 3


def test_a_damaged_usage_log_is_rebuilt(root: list[str], tmp_path: Path) -> None:
    import sqlite3

    catalog_file = str(tmp_path / "c.sqlite3")
    first = cat.usage("model", project_folders(str(Path(root[0]).parent))[:3], catalog=catalog_file)
    conn = sqlite3.connect(catalog_file)
    conn.execute("UPDATE usage_log SET log = x'0500000061'")
    conn.commit()
    conn.close()
    with said_if_rebuilt(catalog_file):
        again = cat.usage("model", project_folders(str(Path(root[0]).parent))[:3], catalog=catalog_file)
    assert again == first


def _dst_session(folder: Path) -> None:
    """Assistant records every 20 minutes through New York's two offset changes of 2025
    (2025-03-09 07:00Z, 2025-11-02 06:00Z) and the UTC days around them."""
    head = {"type": "session", "version": 3, "id": "dst", "timestamp": "2025-03-07T00:00:00.000Z", "cwd": "/dst"}
    lines = [json.dumps(head)]
    parent = None
    n = 0
    for start in (1741305600000, 1761868800000):  # 2025-03-07T00:00Z, 2025-10-31T00:00Z
        for k in range(4 * 72):
            ms = start + k * 20 * 60 * 1000
            line = {"type": "message", "id": f"d{n}", "parentId": parent, "timestamp": f"t{n}",
                    "message": {"role": "assistant", "content": [], "provider": "p", "model": f"m{n % 3}",
                                "timestamp": ms, "usage": {"input": n, "output": 1, "cost": {"total": 0.1 * n}}}}
            lines.append(json.dumps(line))
            parent = f"d{n}"
            n += 1
    (folder / "2025-03-07T00-00-00-000Z_dst.jsonl").write_text("\n".join(lines) + "\n")


@needs_native
def test_local_days_across_offset_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The native sums put slices in local days where a UTC day has one offset, and
    those of a day whose offset changes by each slice's own (summer time starts at
    07:00 UTC in New York, slice 28): both give the reference's report."""
    new_york = ZoneInfo("America/New_York")
    day = 1741478400000 // _usage.DAY_MS  # 2025-03-09, UTC
    hour = 3600 * 1000
    assert _usage._day_offsets([day - 1, day, day + 1], new_york) == [-5 * hour, [-5 * hour] * 28 + [-4 * hour] * 68,
                                                                      -4 * hour]
    assert _usage._day_offsets([day], timezone(timedelta(minutes=7))) == [7 * 60 * 1000]
    folder = tmp_path / "dst"
    folder.mkdir()
    _dst_session(folder)
    catalog_file = str(tmp_path / "c.sqlite3")
    for tz in (new_york, ZoneInfo("Europe/Berlin"), ZoneInfo("Australia/Lord_Howe"), timezone(timedelta(minutes=7))):
        for group in ("daily", "weekly", "monthly", "model"):
            for since, until in ((None, None), (date(2025, 3, 8), date(2025, 3, 9)), (date(2025, 11, 2), None)):
                kw = dict(tz=tz, since=since, until=until)
                got = cat.usage(group, [str(folder)], catalog=catalog_file, **kw)  # type: ignore[arg-type]
                assert got == _reference(monkeypatch, group, [str(folder)], **kw), (group, tz, since)
                assert got.total.records > 0
    days = cat.usage("daily", [str(folder)], tz=new_york, catalog=catalog_file)
    # Three records an hour: the local days of 23 and 25 hours.
    assert [x.records for x in days.lines if x.key in ("2025-03-09", "2025-11-02")] == [69, 75]


@needs_native
def test_the_days_callback_errors_reach_the_caller(tmp_path: Path) -> None:
    """``usage_report``'s ``days``: an exception it raises, or a list of the wrong
    length, is the call's error (never a report with days silently left out)."""
    from sessiontree import _sessiontree as native  # the extension itself, whatever the backend
    from sessiontree.catalog._records import pack_log

    log = pack_log([((0, "e1", "t1", 1767225600000.0, "message", "p", "m"), (1.0, 2.0, 0.0, 0.0, 3.0, 0.5))])

    def fails(days: list[int]) -> list[int | None]:
        raise ZeroDivisionError("no offset")

    with pytest.raises(ZeroDivisionError):
        native.usage_report([log], [0], None, "none", True, False, fails)
    with pytest.raises(ValueError):
        native.usage_report([log], [0], None, "none", True, False, lambda days: [])
    groups = native.usage_report([log], [0], None, "none", True, False, lambda days: [3_600_000] * len(days))[0]
    assert [g[1] for g in groups] == [("day", 1767225600000 // _usage.DAY_MS)]
