"""The catalog's per-file usage totals (``src/totals.rs``, ``usage_sum``): a warm report
reads them, not the usage logs, and still equals ``--no-cache`` and the record-by-record
reference (``catalog._usage._python_pieces``) through appends on the current path, new
branches, records copied into another session or repeated inside one, in zones whose
offsets are half and quarter hours or change, with ``active_path`` (issue 25)."""

from __future__ import annotations

import json
import os
import sqlite3
import warnings
from datetime import date, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from sessiontree import catalog as cat
from sessiontree.catalog import _indexer, _store, _usage
from sessiontree.errors import CatalogRebuiltWarning

from _shared import native_available, said_if_rebuilt

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

ZONES: list[Any] = [timezone.utc, ZoneInfo("Asia/Kolkata"), ZoneInfo("Asia/Kathmandu"),
                    ZoneInfo("America/New_York")]
DAY0 = 1762128000000  # 2025-11-03T00:00Z (New York leaves summer time on 2025-11-02)


def _reference(monkeypatch: pytest.MonkeyPatch, *args: Any, **kw: Any) -> Any:
    """The report with the Python rules only (reading and summing), no catalog."""
    with monkeypatch.context() as m:
        m.setattr(_usage, "native_scanner", lambda: None)
        m.setattr(_indexer, "native_scanner", lambda: None)
        return cat.usage(*args, no_cache=True, **kw)


def _header(sid: str, when: str, parent: str | None = None) -> str:
    h: dict[str, Any] = {"type": "session", "version": 3, "id": sid, "timestamp": when, "cwd": f"/work/{sid}"}
    if parent is not None:
        h["parentSession"] = parent
    return json.dumps(h)


def _record(eid: str, parent: str | None, n: int, model: str = "m", stamp: str | None = None) -> str:
    """An assistant message with usage, ``n`` its number (time: every 20 minutes from
    DAY0 minus 6 hours, across local midnights of every zone above)."""
    ms = DAY0 - 6 * 3600_000 + n * 20 * 60_000
    return json.dumps({
        "type": "message", "id": eid, "parentId": parent, "timestamp": stamp or f"2025-11-03T00:00:{n:02d}.000Z",
        "message": {"role": "assistant", "content": [], "provider": "p", "model": model, "timestamp": ms,
                    "usage": {"input": 10 + n, "output": n, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 10 + 2 * n,
                              "cost": {"total": 0.1 * n + 0.01}}}})


def _write(path: Path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))


def _sessions(folder: Path, count: int, records: int) -> None:
    """``count`` sessions in ``folder``, one a day from 2025-11-01, each a branch of
    ``records`` records."""
    folder.mkdir(exist_ok=True)
    for s in range(count):
        _write(folder / f"2025-11-0{s + 1}_s{s}.jsonl", [_header(f"s{s}", f"2025-11-0{s + 1}T00:00:00.000Z")]
               + [_record(f"s{s}e{n}", f"s{s}e{n - 1}" if n else None, n) for n in range(records)])


def _check(folders: list[str], catalog: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for group in _usage.GROUPS:
        for tz in ZONES:
            for active in (False, True):
                for since, until in ((None, None), (date(2025, 11, 3), date(2025, 11, 3))):
                    kw = dict(tz=tz, active_path=active, since=since, until=until)
                    got = cat.usage(group, folders, catalog=catalog, **kw)  # type: ignore[arg-type]
                    assert got == cat.usage(group, folders, no_cache=True, **kw), (group, kw)  # type: ignore[arg-type]
                    assert got == _reference(monkeypatch, group, folders, **kw), (group, kw)


def _logs_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the files whose usage logs the catalog reads from now on."""
    read: list[int] = []
    real = _store.Store.logs

    def logs(self: _store.Store, files: Any) -> Any:
        read.extend(files)
        return real(self, files)

    monkeypatch.setattr(_store.Store, "logs", logs)
    return read


def test_appends_forks_and_branches_keep_the_totals_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    a, b, c = folder / "2025-11-01_a.jsonl", folder / "2025-11-02_b.jsonl", folder / "2025-11-03_c.jsonl"
    _write(a, [_header("a", "2025-11-01T00:00:00.000Z")] + [_record(f"a{n}", f"a{n - 1}" if n else None, n)
                                                            for n in range(30)])
    # b: a fork of a's first ten records (the same ids and timestamps, other numbers), then its own.
    _write(b, [_header("b", "2025-11-02T00:00:00.000Z", str(a))]
           + [_record(f"a{n}", f"a{n - 1}" if n else None, n + 7, model="copy", stamp=f"2025-11-03T00:00:{n:02d}.000Z")
              for n in range(10)]
           + [_record(f"b{n}", "a9" if n == 0 else f"b{n - 1}", n) for n in range(20)])
    _write(c, [_header("c", "2025-11-03T00:00:00.000Z")] + [_record(f"c{n}", f"c{n - 1}" if n else None, n, model="n")
                                                            for n in range(40)])
    folders = [str(folder)]
    catalog = str(tmp_path / "catalog.sqlite3")
    summary = cat.index(folders, catalog=catalog)
    with sqlite3.connect(catalog) as conn:
        assert conn.execute("SELECT count(*) FROM usage_sum").fetchone()[0] == 3
        ids = dict(conn.execute("SELECT name, id FROM file"))
    read = _logs_read(monkeypatch)
    cat.usage("model", folders, catalog=catalog)
    assert sorted(read) == sorted([ids[a.name], ids[b.name]])  # the fork and its source: c from its totals
    _check(folders, catalog, monkeypatch)

    sums: list[tuple[bool, bool]] = []  # (old totals given, fresh) of each update
    real_sum = _indexer._sum

    def spy(row: Any, piece: bytes, fresh: bool, native: Any) -> None:
        sums.append((row.sums is not None, fresh))
        real_sum(row, piece, fresh, native)

    monkeypatch.setattr(_indexer, "_sum", spy)
    steps = [
        (c, [_record(f"c{n}", f"c{n - 1}", n, model="n") for n in range(40, 45)]),  # on the path
        # Two children of the leaf: the first is off the path the second ends.
        (c, [_record("c45", "c44", 45, model="n"), _record("c46", "c44", 46, model="n")]),
        (c, [_record("c-branch", "c10", 50, model="n2")]),  # a new branch: the path moves
        (a, [_record("c3", "a29", 3, model="n", stamp="2025-11-03T00:00:03.000Z")]),  # a copy of c's record
        (c, [_record("c5", "c-branch", 51, stamp="2025-11-03T00:00:05.000Z")]),  # an id again (the first counts)
        (c, ['{"type":"message","id":"torn"']),  # half a line: not read until finished
    ]
    for path, lines in steps:
        before = path.stat().st_size
        _write(path, lines)
        got = cat.index(folders, catalog=catalog)
        assert got.bytes_read <= path.stat().st_size - before + 1, got  # an append costs its new bytes
        _check(folders, catalog, monkeypatch)
    assert (True, False) in sums  # some totals grew by their new records
    with sqlite3.connect(catalog) as conn:
        assert conn.execute("SELECT count(*) FROM usage_sum").fetchone()[0] == 3
    assert summary.sessions == 3


def test_a_history_without_copies_reads_no_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = []
    for k in range(3):
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        folders.append(str(folder))
        for s in range(4):
            sid = f"s{k}{s}"
            _write(folder / f"2025-11-0{s + 1}_{sid}.jsonl",
                   [_header(sid, f"2025-11-0{s + 1}T00:00:00.000Z")]
                   + [_record(f"{sid}e{n}", f"{sid}e{n - 1}" if n else None, n + s, model=f"m{n % 3}")
                      for n in range(25)])
    catalog = str(tmp_path / "catalog.sqlite3")
    cat.index(folders, catalog=catalog)
    read = _logs_read(monkeypatch)
    for group in _usage.GROUPS:
        for active in (False, True):
            got = cat.usage(group, folders, catalog=catalog, tz=ZoneInfo("Asia/Kathmandu"), active_path=active)
            assert got == _reference(monkeypatch, group, folders, tz=ZoneInfo("Asia/Kathmandu"), active_path=active)
    assert read == []


def test_damaged_totals_are_read_from_the_logs_or_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "p"
    _sessions(folder, 3, 12)
    catalog = str(tmp_path / "catalog.sqlite3")
    want = cat.usage("daily", [str(folder)], catalog=catalog, tz=ZoneInfo("Asia/Kolkata"))
    for damage in ("x'0500000061'", "x''", "'text'", "7"):
        with sqlite3.connect(catalog) as conn:
            blob = conn.execute("SELECT sums FROM usage_sum LIMIT 1").fetchone()[0]
            conn.execute(f"UPDATE usage_sum SET sums = {damage} WHERE rowid = (SELECT min(rowid) FROM usage_sum)")
        with said_if_rebuilt(catalog):
            assert cat.usage("daily", [str(folder)], catalog=catalog, tz=ZoneInfo("Asia/Kolkata")) == want, damage
        with sqlite3.connect(catalog) as conn:  # put back (a rebuilt catalog has none to put back)
            conn.execute("UPDATE usage_sum SET sums = ? WHERE rowid = (SELECT min(rowid) FROM usage_sum)", (blob,))


def test_an_older_catalog_is_rebuilt_not_misread(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    _write(folder / "2025-11-01_s.jsonl", [_header("s", "2025-11-01T00:00:00.000Z")]
           + [_record(f"e{n}", f"e{n - 1}" if n else None, n) for n in range(5)])
    catalog = str(tmp_path / "catalog.sqlite3")
    want = cat.usage("model", [str(folder)], catalog=catalog)
    with sqlite3.connect(catalog) as conn:
        conn.execute("DROP TABLE usage_sum")
        conn.execute(f"PRAGMA user_version = {_store.SCHEMA_VERSION - 1}")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CatalogRebuiltWarning)  # an older version's is no damage
        assert cat.usage("model", [str(folder)], catalog=catalog) == want
    with sqlite3.connect(catalog) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == _store.SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM usage_sum").fetchone()[0] == 1


def test_sums_past_the_doubles_fall_back_to_the_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    lines = [_header("s", "2025-11-01T00:00:00.000Z")]
    for n, cost in enumerate(["1e308", "1e308", "-1e308", "0.5"]):
        lines.append(_record(f"e{n}", f"e{n - 1}" if n else None, n).replace('"total": ' + repr(0.1 * n + 0.01),
                                                                            f'"total": {cost}'))
    _write(folder / "2025-11-01_s.jsonl", lines)
    catalog = str(tmp_path / "catalog.sqlite3")
    for group in ("model", "daily", "session"):
        got = cat.usage(group, [str(folder)], catalog=catalog, tz=timezone(timedelta(hours=5, minutes=45)))
        assert got == _reference(monkeypatch, group, [str(folder)], tz=timezone(timedelta(hours=5, minutes=45)))
        assert got.total.cost == 1e308 + 0.5


def _refreshes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item per refresh a report makes from now on (and per fall back to the
    record-by-record path: ``_current``)."""
    calls: list[int] = []
    real_current = _usage._current
    from sessiontree.catalog import _run

    real = _run.refresh_for

    def refresh(*a: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*a, **kw)

    def current(*a: Any, **kw: Any) -> Any:
        calls.append(2)
        return real_current(*a, **kw)

    monkeypatch.setattr(_run, "refresh_for", refresh)
    monkeypatch.setattr(_usage, "_current", current)
    return calls


def test_a_warm_report_lists_the_folders_as_the_files_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm report lists and ``stat``s the folders natively (``UsageScan``): names that
    are not UTF-8, a scope naming one session file, a symlinked session, a file that is not
    a session, a folder that is not there; then a new file, an append, a removal, a
    ``touch`` are each seen (issue 25)."""
    folder = tmp_path / "p"
    folder.mkdir()
    other = tmp_path / "q"
    other.mkdir()

    def session(path: Path, sid: str, n: int, model: str = "m") -> None:
        _write(path, [_header(sid, f"2025-11-0{n}T00:00:00.000Z")]
               + [_record(f"{sid}e{k}", f"{sid}e{k - 1}" if k else None, k + n, model=model) for k in range(6)])

    session(folder / "2025-11-01_a.jsonl", "a", 1)
    raw = os.fsencode(str(folder)) + b"/2025-11-02_b\xff\xfe.jsonl"  # not UTF-8: a lone surrogate pair in Python
    session(Path(os.fsdecode(raw)), "b", 2, model="n")
    (folder / "notes.jsonl").write_text("not json\n")
    session(other / "2025-11-03_c.jsonl", "c", 3)
    os.symlink(other / "2025-11-03_c.jsonl", folder / "2025-11-03_link.jsonl")
    one = other / "2025-11-04_d.jsonl"
    session(one, "d", 4, model="o")
    scope = [str(folder), str(one), str(tmp_path / "gone")]
    catalog = str(tmp_path / "catalog.sqlite3")
    cat.index(scope, catalog=catalog)
    calls = _refreshes(monkeypatch)

    def check(refreshes: int, files: int = 4) -> None:
        for group in _usage.GROUPS:
            del calls[:]
            got = cat.usage(group, scope, catalog=catalog, tz=timezone.utc)
            assert calls == [1] * refreshes, group  # warm: neither a refresh nor the slow path
            assert got == cat.usage(group, scope, no_cache=True, tz=timezone.utc), group
            assert got == _reference(monkeypatch, group, scope, tz=timezone.utc), group
            refreshes = 0
            assert got.files == files

    check(0)
    session(folder / "2025-11-05_e.jsonl", "e", 5)  # a new file
    check(1, files=5)
    os.unlink(folder / "2025-11-05_e.jsonl")  # gone: its row is left, not counted
    check(0)
    _write(one, [_record("d9", "d5", 9, model="o")])  # an append to the one file named
    check(1)
    os.utime(folder / "2025-11-01_a.jsonl")  # the same bytes, a new mtime
    check(1)


def test_a_catalog_without_its_warm_index_is_rebuilt(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    _write(folder / "2025-11-01_s.jsonl", [_header("s", "2025-11-01T00:00:00.000Z")]
           + [_record(f"e{n}", f"e{n - 1}" if n else None, n) for n in range(5)])
    catalog = str(tmp_path / "catalog.sqlite3")
    want = cat.usage("model", [str(folder)], catalog=catalog)
    with sqlite3.connect(catalog) as conn:
        conn.execute("DROP INDEX file_warm")
    with said_if_rebuilt(catalog):
        assert cat.usage("model", [str(folder)], catalog=catalog) == want
    with sqlite3.connect(catalog) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'file_warm'").fetchone()[0] == 1


def test_a_scope_naming_a_folder_twice_saves_every_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch whose inserts conflict part-way through (the same file twice in a scope,
    or another process adding the same new files at once) keeps the rows it inserted
    with their usage logs and totals (adversary round 51: they were dropped, and the
    rows, "read to their end", counted 0 in every later report)."""
    folder = tmp_path / "p"
    _sessions(folder, 4, 3)
    catalog = str(tmp_path / "catalog.sqlite3")
    one = str(folder / "2025-11-02_s1.jsonl")
    for scope in ([str(folder), str(folder)], [one, str(folder)], [str(folder), str(folder) + "/"]):
        want = cat.usage("model", scope, no_cache=True)
        assert want.total.records == 12 or scope[0] == one
        assert cat.usage("model", scope, catalog=catalog) == want, scope
        assert cat.usage("model", [str(folder)], catalog=catalog) == cat.usage("model", [str(folder)], no_cache=True)
        os.remove(catalog)
    cat.index([str(folder), str(folder)], catalog=catalog)  # raised "catalog damaged: ... no entries record"
    _check([str(folder)], catalog, monkeypatch)


def test_a_file_read_to_its_end_without_its_usage_log_is_damage(tmp_path: Path) -> None:
    """A file row that says its usage log is read to its end, with no usage log (nor
    totals), is damage: rebuilt, never counted as empty."""
    folder = tmp_path / "p"
    _sessions(folder, 3, 4)
    catalog = str(tmp_path / "catalog.sqlite3")
    want = cat.usage("session", [str(folder)], no_cache=True)
    assert cat.usage("session", [str(folder)], catalog=catalog) == want
    with sqlite3.connect(catalog) as conn:
        fid = conn.execute("SELECT min(file) FROM usage_log").fetchone()[0]
        conn.execute("DELETE FROM usage_log WHERE file = ?", (fid,))
        conn.execute("DELETE FROM usage_sum WHERE file = ?", (fid,))
    with said_if_rebuilt(catalog):
        assert cat.usage("session", [str(folder)], catalog=catalog) == want


def test_a_file_without_totals_sends_its_copies_to_their_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork whose totals are not kept (saved by the pure-Python backend, or its row
    deleted) holds a copy of another file's record: the copy still counts once
    (adversary round 51: the other file's totals were added whole, and the copy twice)."""
    folder = tmp_path / "p"
    folder.mkdir()
    a = [_header("a", "2025-11-01T00:00:00.000Z"), _record("a1", None, 1), _record("a2", "a1", 2)]
    _write(folder / "2025-11-01_a.jsonl", a)
    catalog = str(tmp_path / "catalog.sqlite3")
    cat.usage("model", [str(folder)], catalog=catalog)  # a's totals kept
    _write(folder / "2025-11-02_b.jsonl", [_header("b", "2025-11-02T00:00:00.000Z", parent="2025-11-01_a.jsonl"),
                                           a[1], _record("b3", "a1", 3)])
    with monkeypatch.context() as m:  # b saved as the pure-Python backend saves it: no totals
        m.setattr(_indexer, "native_scanner", lambda: None)
        m.setattr(_usage, "native_scanner", lambda: None)
        cat.usage("model", [str(folder)], catalog=catalog)
    with sqlite3.connect(catalog) as conn:
        assert conn.execute("SELECT count(*) FROM usage_sum").fetchone()[0] == 1
    want = cat.usage("model", [str(folder)], no_cache=True)
    assert want.total.records == 3
    _check([str(folder)], catalog, monkeypatch)


def test_days_before_year_1000_are_keyed_and_kept_as_iso_dates(tmp_path: Path) -> None:
    """A record dated in year 999 is on day ``0999-06-01`` (four digits, as ISO writes
    it): it sorts before 2025 and --since/--until keep it or not as its date says
    (adversary round 51: ``999-06-01`` sorted after every later year)."""
    from datetime import datetime

    folder = tmp_path / "p"
    folder.mkdir()
    old = int((datetime(999, 6, 1, tzinfo=timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc))
              .total_seconds() * 1000)
    first = json.loads(_record("e0", None, 0))
    first["message"]["timestamp"] = old
    _write(folder / "2025-11-01_s.jsonl", [_header("s", "2025-11-01T00:00:00.000Z"), json.dumps(first),
                                           _record("e1", "e0", 1)])
    catalog = str(tmp_path / "catalog.sqlite3")
    for kw, keys in (({}, ["0999-06-01", "2025-11-02"]), ({"since": date(2000, 1, 1)}, ["2025-11-02"]),
                     ({"until": date(2000, 1, 1)}, ["0999-06-01"])):
        for where in ({"no_cache": True}, {"catalog": catalog}):
            got = cat.usage("daily", [str(folder)], tz=timezone.utc, **where, **kw)  # type: ignore[arg-type]
            assert sorted(x.key for x in got.lines) == keys, (kw, where)
    monthly = cat.usage("monthly", [str(folder)], tz=timezone.utc, catalog=catalog)
    assert sorted(x.key for x in monthly.lines) == ["0999-06", "2025-11"]


def test_a_torn_last_line_or_a_dangling_link_keeps_a_report_warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose last line a crash left unterminated (torn, or a whole object without
    its line feed) and a ``.jsonl`` link to nothing are what they were: a warm report
    trusts the catalog, reads no usage log, and equals the files' answer; an append
    that ends the line is read (adversary round 51: each made every warm report read
    every file's log, 1.4 s at 20,000 sessions)."""
    folder = tmp_path / "p"
    _sessions(folder, 3, 4)
    torn = folder / "2025-11-01_s0.jsonl"
    whole = folder / "2025-11-02_s1.jsonl"
    with open(torn, "a") as f:
        f.write(_record("s0e4", "s0e3", 4)[:70])
    with open(whole, "a") as f:
        f.write(_record("s1e4", "s1e3", 4))
    (folder / "2025-11-09_gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    catalog = str(tmp_path / "catalog.sqlite3")
    for group in ("model", "daily", "session"):
        assert cat.usage(group, [str(folder)], catalog=catalog) == cat.usage(group, [str(folder)], no_cache=True)
    read = _logs_read(monkeypatch)
    for group in ("model", "daily", "session"):
        assert cat.usage(group, [str(folder)], catalog=catalog) == cat.usage(group, [str(folder)], no_cache=True)
    assert read == []
    with open(torn, "a") as f:
        f.write(_record("s0e4", "s0e3", 4)[70:] + "\n")
    with open(whole, "a") as f:
        f.write("\n")
    _check([str(folder)], catalog, monkeypatch)


def test_a_rule_in_tz_that_changes_the_offset_twice_in_a_day(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``$TZ`` a POSIX rule that keeps summer time (+12:00) one hour of a UTC day:
    that hour's records are on the next local day. Warm, ``--no-cache`` and the
    record-by-record reference give datetime's local dates (adversary round 51)."""
    import time
    from collections import Counter

    folder = tmp_path / "p"
    folder.mkdir()
    start = 1772323200000  # 2026-03-01T00:00Z; the rule's summer time is 12:00-13:00 UTC that day
    times = [start + n * 10 * 60_000 for n in range(2 * 24 * 6)]
    lines = [_header("s", "2026-03-01T00:00:00.000Z")]
    for n, ms in enumerate(times):
        rec = json.loads(_record(f"e{n}", f"e{n - 1}" if n else None, n % 50))
        rec["message"]["timestamp"] = ms
        lines.append(json.dumps(rec))
    _write(folder / "s.jsonl", lines)
    catalog = str(tmp_path / "catalog.sqlite3")
    try:
        monkeypatch.setenv("TZ", "XXX0YYY-12,J60/12,J61/1")
        time.tzset()
        from datetime import datetime

        want = Counter(datetime.fromtimestamp(ms / 1000, timezone.utc).astimezone().date().isoformat() for ms in times)
        assert want["2026-03-02"] == 6 + 6 * 24  # the summer hour's six records, then the next day's
        for since in (None, date(2026, 3, 2)):
            reports = [cat.usage("daily", [str(folder)], catalog=catalog, since=since) for _ in range(2)]  # cold, warm
            reports.append(cat.usage("daily", [str(folder)], no_cache=True, since=since))
            reports.append(_reference(monkeypatch, "daily", [str(folder)], since=since))
            for got in reports:
                assert {x.key: x.records for x in got.lines} == {k: v for k, v in want.items()
                                                                if since is None or k >= since.isoformat()}
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(("tz", "rule"), [(None, False), ("UTC", False), (":America/New_York", False),
                                          ("Asia/Kathmandu", False), ("XXX0YYY-12,J60/12,J61/1", True),
                                          ("EST5EDT,M3.2.0,M11.1.0", True), ("", False)])
def test_zones_from_a_rule_are_told_from_zone_files(monkeypatch: pytest.MonkeyPatch, tz: str | None,
                                                    rule: bool) -> None:
    from sessiontree._time import zone_from_rule

    if tz and not rule and not os.path.isfile(os.path.join("/usr/share/zoneinfo", tz.lstrip(":"))):
        pytest.skip(f"no zone file {tz} on this machine")
    if tz is None:
        monkeypatch.delenv("TZ", raising=False)
    else:
        monkeypatch.setenv("TZ", tz)
    monkeypatch.delenv("TZDIR", raising=False)
    assert zone_from_rule(None) is rule
    assert zone_from_rule(timezone.utc) is False and zone_from_rule(ZoneInfo("Asia/Kathmandu")) is False

    class Odd(timezone.__base__):  # type: ignore[name-defined,misc]
        def utcoffset(self, dt: Any) -> timedelta:
            return timedelta(0)

    assert zone_from_rule(Odd()) is True


def _warm_natively(group: str, folders: list[str], catalog: str, **kw: Any) -> Any:
    """``cat.usage`` warm from ``catalog``, checked to have had its lines made natively
    (``UsageScan.report``'s lines, not Python's pieces)."""
    made: list[str] = []
    real = _usage._from_lines

    def spy(group: str, *args: Any) -> Any:
        made.append(group)
        return real(group, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_usage, "_from_lines", spy)
        got = cat.usage(group, folders, catalog=catalog, **kw)  # type: ignore[arg-type]
    assert made == [group], f"the lines of {group} {kw} were not made natively"
    return got


_ZONES = [None, timezone.utc, timezone(timedelta(hours=23, minutes=59)), timezone(timedelta(hours=-12)),
          ZoneInfo("Europe/Berlin"), ZoneInfo("America/St_Johns"), ZoneInfo("Australia/Lord_Howe"),
          ZoneInfo("Pacific/Kiritimati"), ZoneInfo("Africa/Casablanca")]


@pytest.mark.parametrize("tz_env", [None, "Europe/Berlin", "Asia/Kolkata", "<+14>-14", "XXX0YYY-12,J60/12,J61/1",
                                    "AAA-24", "AAA+24", "AAA0BBB-24,J1/0,J365/24"])
def test_day_offsets_equal_those_of_datetime(monkeypatch: pytest.MonkeyPatch, tz_env: str | None) -> None:
    """The offsets a report's native sums put days in (read from `time.localtime` and
    `fromtimestamp`) equal those of a UTC `datetime` shifted by `astimezone`, each
    millisecond asked as the day's rule says (a day of two offsets slice by slice), over
    datetime's first and last days too (where a shifted time leaves its years) and days
    of every age."""
    import random
    import time

    from sessiontree._time import zone_from_rule
    from sessiontree.catalog._usage import DAY_MS, SLICE_MS, _day_offsets, _offset

    if tz_env is None:
        monkeypatch.delenv("TZ", raising=False)
    else:
        monkeypatch.setenv("TZ", tz_env)
    time.tzset()
    try:
        rng = random.Random(5)
        first, last = -719162, 2932896  # 0001-01-01 and 9999-12-31
        days = sorted({*range(first - 2, first + 40), *range(last - 40, last + 3), *range(19_000, 20_500),
                       *(rng.randint(first, last) for _ in range(400))})

        def one(day: int, tz: Any) -> Any:
            steps = range(0, DAY_MS, SLICE_MS) if zone_from_rule(tz) else (0,)
            got = {_offset(day * DAY_MS + s, tz) for s in steps} | {_offset(day * DAY_MS + DAY_MS - 1, tz)}
            if len(got) == 1 or None in got:
                return got.pop() if len(got) == 1 else None
            ends = [(_offset(day * DAY_MS + s, tz), _offset(day * DAY_MS + s + SLICE_MS - 1, tz))
                    for s in range(0, DAY_MS, SLICE_MS)]
            return [a if a == z else None for a, z in ends]

        for tz in _ZONES if tz_env is None else [None]:
            assert _day_offsets(days, tz) == [one(d, tz) for d in days], tz
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.skipif(not native_available(), reason="the native module is not built")
@pytest.mark.parametrize("tz", [timezone.utc, timezone(timedelta(hours=-9, minutes=-30)), ZoneInfo("Asia/Kathmandu")])
def test_days_weeks_and_months_named_natively_as_python_names_them(tmp_path: Path, tz: Any) -> None:
    """A warm report by day, week or month whose groups are all local days has its
    lines named by the core (``Report::period_lines``); each name is the one Python's
    ``date`` gives (``isoformat``, ``isocalendar``: ISO years at the turn of a year,
    week 53, years of fewer than four digits), the lines in time order and ``(no
    time)`` last, and the report equals the one made from the logs."""
    import random
    from datetime import datetime

    rng = random.Random(11)
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    turns = [datetime(y, 12, d, h, tzinfo=timezone.utc) for y in (2020, 2024, 2025, 2026, 1999)
             for d in (28, 29, 30, 31) for h in (1, 13, 23)]
    turns += [datetime(y, 1, d, h, tzinfo=timezone.utc) for y in (2021, 2025, 2027, 2000) for d in (1, 2, 3, 4)
              for h in (1, 23)]
    times = [int((t - epoch).total_seconds() * 1000) for t in turns]
    # Any year for a fixed offset; a zone of the tz database since its offsets are whole
    # quarter hours (Kathmandu's local mean time was not: those days stay slices).
    low = -60_000_000_000_000 if isinstance(tz, timezone) else 631_152_000_000  # year 68; 1990
    times += [rng.randint(low, 250_000_000_000_000) // 60_000 * 60_000 for _ in range(300)]
    folder = tmp_path / "p"
    folder.mkdir()
    lines = [_header("s", "2025-11-01T00:00:00.000Z")]
    for n, ms in enumerate(times + [None]):  # and one record without a time
        r = json.loads(_record(f"e{n}", f"e{n - 1}" if n else None, n % 50))
        if ms is None:
            del r["message"]["timestamp"]
            r["timestamp"] = "not a time"
        else:
            r["message"]["timestamp"] = ms
        lines.append(json.dumps(r))
    _write(folder / "2025-11-01_s.jsonl", lines)
    catalog = str(tmp_path / "catalog.sqlite3")
    spans = [(None, None), (date(2020, 12, 30), date(2021, 1, 4)), (date(2025, 1, 1), None), (None, date(1999, 12, 31))]
    for group in ("daily", "weekly", "monthly"):
        for since, until in spans:
            cold = cat.usage(group, [str(folder)], no_cache=True, tz=tz, since=since, until=until)
            warm = _warm_natively(group, [str(folder)], catalog, tz=tz, since=since, until=until)
            assert warm == cold, (group, since, until)
            local = [d for d in ((epoch + timedelta(milliseconds=ms)).astimezone(tz).date() for ms in times)
                     if (since is None or d >= since) and (until is None or d <= until)]
            want = {d.isoformat() if group == "daily" else d.isoformat()[:7] if group == "monthly"
                    else "%04d-W%02d" % d.isocalendar()[:2] for d in local}
            keys = [x.key for x in warm.lines]
            assert keys == sorted(want) + (["(no time)"] if since is until is None else [])
            assert local


@pytest.mark.skipif(not native_available(), reason="the native module is not built")
def test_sessions_and_projects_between_dates_summed_natively(tmp_path: Path) -> None:
    """A warm report by session or project, with or without ``--since``/``--until``,
    has its lines made natively (the groups of the span's local days merged into one
    line a key), equal to the report made from the logs."""
    for p in range(3):
        _sessions(tmp_path / f"p{p}", 3, 30)
    folders = [str(tmp_path / f"p{p}") for p in range(3)]
    catalog = str(tmp_path / "catalog.sqlite3")
    counted: list[int] = []
    for group in ("session", "project"):
        for tz in ZONES:
            for since, until in ((None, None), (date(2025, 11, 3), date(2025, 11, 3)), (None, date(2025, 11, 2)),
                                 (date(2025, 11, 4), None)):
                kw: dict[str, Any] = dict(tz=tz, since=since, until=until)
                warm = _warm_natively(group, folders, catalog, **kw)
                assert warm == cat.usage(group, folders, no_cache=True, **kw), (group, kw)
                counted.append(warm.total.records)
    assert min(counted) == 0 and max(counted) == 90  # the folders hold copies of one another: counted once


@pytest.mark.skipif(not native_available(), reason="the native module is not built")
def test_models_that_read_alike_are_one_line(tmp_path: Path) -> None:
    """A warm report by model, with or without dates, has its lines made natively, one
    a name as Python names a pair: ``a/b`` + ``c`` and ``a`` + ``b/c`` are one line
    ``a/b/c``, neither provider nor model ``(unknown)``, one of them ``x/(unknown)``
    (``view.model_label``); equal to the report made from
    the logs."""
    folder = tmp_path / "p"
    folder.mkdir()
    lines = [_header("s", "2025-11-01T00:00:00.000Z")]
    pairs = [("a/b", "c"), ("a", "b/c"), ("", ""), ("x", ""), ("", "x"), ("a/b", "c")]
    for n, (provider, model) in enumerate(pairs * 3):
        r = json.loads(_record(f"e{n}", f"e{n - 1}" if n else None, n))
        r["message"]["provider"], r["message"]["model"] = provider, model
        lines.append(json.dumps(r))
    _write(folder / "2025-11-01_s.jsonl", lines)
    catalog = str(tmp_path / "catalog.sqlite3")
    for since, until in ((None, None), (date(2025, 11, 2), None), (None, date(2025, 11, 2))):
        warm = _warm_natively("model", [str(folder)], catalog, tz=timezone.utc, since=since, until=until)
        assert warm == cat.usage("model", [str(folder)], no_cache=True, tz=timezone.utc, since=since, until=until)
        if since is None and until is None:
            assert sorted(x.key for x in warm.lines) == ["(unknown)", "(unknown)/x", "a/b/c", "x/(unknown)"]
            assert warm.total.records == 18


@pytest.mark.skipif(not native_available(), reason="the native module is not built")
def test_lines_of_equal_cost_are_ordered_by_key_as_python_orders_them(tmp_path: Path) -> None:
    """A warm report by session or project orders its lines natively: costliest first,
    then by key as Python compares the names (not their bytes: a file name whose byte
    0xf0 is not UTF-8 is named ``\\udcf0``, before ``\\ue000``, whose UTF-8 starts at
    0xee); equal to the report made from the logs."""
    folder = tmp_path / "p"
    folder.mkdir()
    names = [b"b", b"a", "é".encode(), "\ue000".encode(), b"\xf0", b"Z", b"costly"]
    for i, name in enumerate(names):
        r = json.loads(_record(f"e{i}", None, i))
        r["message"]["usage"]["cost"]["total"] = 2.5 if name == b"costly" else 0.25
        r["message"]["usage"]["input"] = r["message"]["usage"]["totalTokens"] = 7
        with open(os.path.join(os.fsencode(folder), name + b".jsonl"), "w") as f:
            f.write(_header(f"s{i}", "2025-11-01T00:00:00.000Z") + "\n" + json.dumps(r) + "\n")
    catalog = str(tmp_path / "catalog.sqlite3")
    for group in ("session", "project"):
        warm = _warm_natively(group, [str(folder)], catalog, tz=timezone.utc)
        assert warm == cat.usage(group, [str(folder)], no_cache=True, tz=timezone.utc), group
        keys = [x.key for x in warm.lines]
        assert keys[0].endswith("costly.jsonl" if group == "session" else "/work/s6")
        assert keys[1:] == sorted(keys[1:]) and len(keys) == len(names), keys
    tail = [os.path.basename(x.key) for x in _warm_natively("session", [str(folder)], catalog).lines[1:]]
    assert tail.index("\udcf0.jsonl") < tail.index("\ue000.jsonl")


@pytest.mark.skipif(not native_available(), reason="the native module is not built")
def test_whole_sums_past_64_bits_are_ints_in_native_lines(tmp_path: Path) -> None:
    """A token sum that is a whole number past 2**63 (``1e19`` twice) is an ``int`` in a
    line made natively, as ``_usage._whole`` makes it; a sum that is not whole stays a
    float; equal to the report made from the logs."""
    folder = tmp_path / "p"
    folder.mkdir()
    lines = [_header("s", "2025-11-01T00:00:00.000Z")]
    for n in range(2):
        r = json.loads(_record(f"e{n}", f"e{n - 1}" if n else None, n))
        r["message"]["usage"].update(input=1e19, cacheRead=0.25 * (n + 1), totalTokens=3e20 if n else 1)
        lines.append(json.dumps(r))
    _write(folder / "2025-11-01_s.jsonl", lines)
    catalog = str(tmp_path / "catalog.sqlite3")
    for group in ("session", "model", "daily"):
        warm = _warm_natively(group, [str(folder)], catalog, tz=timezone.utc)
        assert warm == cat.usage(group, [str(folder)], no_cache=True, tz=timezone.utc), group
        line = warm.lines[0]
        assert type(line.input) is int and line.input == 2 * 10**19, line
        assert type(line.total_tokens) is int and line.total_tokens == 3 * 10**20, line  # 3e20 + 1 rounded once
        assert type(line.cache_read) is float and line.cache_read == 0.75, line
