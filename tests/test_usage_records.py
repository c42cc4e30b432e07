"""A folder's usage record (``_store``: ``usage_folder``; ``src/warm_rows.rs``): a warm
report of an unchanged folder reads one value, not a row per file, and answers as the
rows and the files do. The record is current only while its ``stamp`` is the folder's
``gen``, which the catalog's triggers move with every change the record was made from,
whoever writes it (issue 25: warm usage at 20,000 sessions)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sessiontree import catalog as cat
from sessiontree.generate import generate_session

from test_catalog import _append, make_root
from _shared import said_if_rebuilt

native = pytest.importorskip("sessiontree._sessiontree")
pytestmark = pytest.mark.skipif(os.environ.get("SESSIONTREE_BACKEND") == "python",
                                reason="warm reports from totals are made natively")

GROUPS = ("session", "model", "daily", "monthly", "project")


def _reports(folders: list[str], **kw: Any) -> dict[str, Any]:
    out = {g: cat.usage(g, folders, tz=None, **kw) for g in GROUPS}
    out["active"] = cat.usage("session", folders, active_path=True, tz=None, **kw)
    return out


def _records(catalog: Path) -> dict[str, tuple[int, int | None]]:
    """Each folder's ``(gen, stamp)`` (stamp ``None``: no record)."""
    with sqlite3.connect(catalog) as c:
        return {p: (g, s) for p, g, s in c.execute(
            "SELECT folder.path, folder.gen, usage_folder.stamp FROM folder"
            " LEFT JOIN usage_folder ON usage_folder.folder = folder.id")}


class _Count:
    """``UsageScan`` counting how each folder was read."""

    calls: dict[str, int] = {}

    def __init__(self, scan: Any) -> None:
        self._scan = scan

    def __getattr__(self, name: str) -> Any:
        got = getattr(self._scan, name)
        if name in ("folder", "folder_record"):
            def counted(*args: Any) -> Any:
                _Count.calls[name] = _Count.calls.get(name, 0) + 1
                return got(*args)
            return counted
        return got


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    real = native.UsageScan
    _Count.calls = {}
    monkeypatch.setattr(native, "UsageScan", lambda *a: _Count(real(*a)))
    return _Count.calls


def test_a_warm_report_reads_each_folders_record(tmp_path: Path, counted: dict[str, int]) -> None:
    folders = make_root(tmp_path / "s", 40, seed=3)
    catalog = tmp_path / "c.sqlite3"
    want = _reports(folders, no_cache=True)
    cat.index(folders, catalog=str(catalog))
    records = _records(catalog)
    assert len(records) == len(folders) and all(g == s for g, s in records.values()), records
    counted.clear()
    got = _reports(folders, catalog=str(catalog))
    assert got == want
    # By project the rows are read (they hold the cwds); every other report, the records.
    assert counted == {"folder_record": (len(GROUPS)) * len(folders), "folder": len(folders)}, counted


def test_a_report_makes_the_records_it_did_not_find(tmp_path: Path, counted: dict[str, int]) -> None:
    folders = make_root(tmp_path / "s", 30, seed=4)
    catalog = tmp_path / "c.sqlite3"
    want = _reports(folders, no_cache=True)
    cat.usage("model", folders, catalog=str(catalog))  # the catalog made: the files read
    with sqlite3.connect(catalog) as c:
        c.execute("DELETE FROM usage_folder")
    counted.clear()
    assert cat.usage("daily", folders, tz=None, catalog=str(catalog)) == want["daily"]
    assert counted == {"folder": len(folders)}
    assert all(g == s for g, s in _records(catalog).values())
    counted.clear()
    assert _reports(folders, catalog=str(catalog)) == want
    assert counted.get("folder_record") == (len(GROUPS)) * len(folders)


def test_a_change_makes_its_folders_record_old(tmp_path: Path) -> None:
    folders = make_root(tmp_path / "s", 40, seed=5)
    catalog = tmp_path / "c.sqlite3"
    cat.index(folders, catalog=str(catalog))
    before = _records(catalog)
    grown = sorted(Path(folders[1]).glob("*.jsonl"))[0]
    _append(grown, "one more question")
    generate_session(Path(folders[2]) / "2025-12-01T00-00-00-000Z_new.jsonl", size_bytes=4_000, seed=77,
                     cwd="/home/user/new")
    sorted(Path(folders[3]).glob("*.jsonl"))[-1].unlink()
    assert _reports(folders, catalog=str(catalog)) == _reports(folders, no_cache=True)
    after = _records(catalog)
    # A file gone leaves its folder's record current: a report sums the files listed
    # (the row goes at the folder's next refresh: a listing, an index, a change there).
    changed = {folders[1], folders[2]}
    for folder, (gen, stamp) in after.items():
        assert stamp == gen, folder  # made again by the report that found it old
        if folder in changed:
            assert gen > before[folder][0], folder
        else:
            assert (gen, stamp) == before[folder], folder
    cat.index(folders, catalog=str(catalog))
    assert _records(catalog)[folders[3]][0] > before[folders[3]][0]
    assert _reports(folders, catalog=str(catalog)) == _reports(folders, no_cache=True)


def test_a_change_brings_its_folders_alone_up_to_date(tmp_path: Path) -> None:
    """An append costs its folder, not the history (issue 25: "an append to one session
    costs its new bytes"): the report that finds files changed in two of the folders
    refreshes those two (its progress counts their files alone) and answers as the
    files do; the next report finds every folder current."""
    folders = make_root(tmp_path / "s", 40, seed=6)
    catalog = tmp_path / "c.sqlite3"
    cat.index(folders, catalog=str(catalog))
    _append(sorted(Path(folders[1]).glob("*.jsonl"))[0], "one more question")
    generate_session(Path(folders[3]) / "2025-12-01T00-00-00-000Z_new.jsonl", size_bytes=4_000, seed=78,
                     cwd="/home/user/new")
    totals: set[int] = set()
    for group in ("model", "project"):  # from the records, and from the rows
        got = cat.usage(group, folders, tz=None, catalog=str(catalog), on_progress=lambda _d, t: totals.add(t))
        assert got == cat.usage(group, folders, tz=None, no_cache=True)
    assert totals == {len(list(Path(folders[1]).glob("*.jsonl"))) + len(list(Path(folders[3]).glob("*.jsonl")))}
    assert all(g == s for g, s in _records(catalog).values())


def test_every_change_a_record_holds_moves_the_gen(tmp_path: Path) -> None:
    """Through SQL, as another program would write: the triggers, not the library's
    writers, keep ``gen``; a search's own columns leave the record current."""
    folders = make_root(tmp_path / "s", 6, seed=6)
    catalog = tmp_path / "c.sqlite3"
    cat.index(folders, catalog=str(catalog))
    with sqlite3.connect(catalog) as c:
        fid, folder = c.execute("SELECT id, folder FROM file ORDER BY id LIMIT 1").fetchone()

        def gen() -> int:
            return int(c.execute("SELECT gen FROM folder WHERE id = ?", (folder,)).fetchone()[0])

        for sql in ("UPDATE file SET size = size + 1 WHERE id = ?", "UPDATE file SET c_end = c_end WHERE id = ?",
                    "UPDATE usage_sum SET sums = sums WHERE file = ?", "DELETE FROM usage_sum WHERE file = ?",
                    "INSERT INTO usage_sum VALUES (?, x'00')", "DELETE FROM file WHERE id = ?"):
            g = gen()
            c.execute(sql, (fid,))
            assert gen() == g + 1, sql
        other = c.execute("SELECT id FROM file WHERE folder = ? LIMIT 1", (folder,)).fetchone()[0]
        g = gen()
        c.execute("UPDATE file SET s_end = s_end, epoch = epoch + 1 WHERE id = ?", (other,))
        assert gen() == g


@pytest.mark.parametrize("damage", ["x'00'", "x''", "substr(record, 1, length(record) - 1)",
                                    "CAST(record || x'00' AS BLOB)", "'text'", "CAST(x'01ff' AS TEXT)", "stamp"])
def test_a_damaged_record_is_made_again(tmp_path: Path, damage: str) -> None:
    """A record that does not read is made again from the rows (as totals that do not
    read are summed from the logs); one of a type the catalog never writes (a text, one
    that is not UTF-8 too: adversary 57) is damage: the catalog is rebuilt. Either way
    the answer is the files'."""
    folders = make_root(tmp_path / "s", 20, seed=7)
    catalog = tmp_path / "c.sqlite3"
    cat.index(folders, catalog=str(catalog))
    with sqlite3.connect(catalog) as c:
        if damage == "stamp":
            c.execute("UPDATE usage_folder SET stamp = 'x'")
        else:
            c.execute(f"UPDATE usage_folder SET record = {damage}")
    with said_if_rebuilt(catalog):
        assert _reports(folders, catalog=str(catalog)) == _reports(folders, no_cache=True)
    assert all(g == s for g, s in _records(catalog).values())
    with sqlite3.connect(catalog) as c:  # made again: no report takes the slow way for good
        assert {t for (t,) in c.execute("SELECT typeof(record) FROM usage_folder")} == {"blob"}


@pytest.mark.parametrize("table, column", [("usage_folder", "record"), ("usage_sum", "sums")])
def test_a_model_name_that_does_not_decode_is_damage(tmp_path: Path, table: str, column: str) -> None:
    """A byte of a model name in the totals flipped past UTF-8 (no session spells such a
    name: each is a JSON string) is damage: the catalog is rebuilt and the report is the
    files', where a report by model raised UnicodeDecodeError (adversary 57b)."""
    folders = make_root(tmp_path / "s", 12, seed=10)
    catalog = tmp_path / "c.sqlite3"
    cat.index(folders, catalog=str(catalog))
    with sqlite3.connect(catalog) as c:
        # A folder without forks (make_root forks in its first five): its files' totals
        # are summed as they are, not taken out for their logs.
        owner = "folder" if table == "usage_folder" else "(SELECT folder FROM file WHERE file.id = file)"
        key, blob = c.execute(f"SELECT rowid, {column} FROM {table} WHERE instr({column}, CAST('anthropic' AS BLOB))"
                              f" AND {owner} = (SELECT id FROM folder WHERE path = ?) LIMIT 1",
                              (folders[-1],)).fetchone()
        flipped = bytearray(blob)
        flipped[bytes(blob).index(b"anthropic") + 2] |= 0x80
        c.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (bytes(flipped), key))
        if table == "usage_sum":
            c.execute("DELETE FROM usage_folder")  # the totals, not the records, are read
        created = c.execute("SELECT value FROM meta WHERE key = 'created'").fetchone()
    with said_if_rebuilt(catalog):
        assert _reports(folders, catalog=str(catalog)) == _reports(folders, no_cache=True)
    with sqlite3.connect(catalog) as c:
        assert c.execute("SELECT value FROM meta WHERE key = 'created'").fetchone() != created  # rebuilt


def test_a_record_that_is_not_its_folders_is_made_again(tmp_path: Path, counted: dict[str, int]) -> None:
    """A record that reads but is another folder's (current by its stamp) finds the
    folder's files changed: it is dropped with the report, and the next report reads
    the rows and makes it again, instead of finding it wrong at every report
    (adversary 57)."""
    folders = make_root(tmp_path / "s", 30, seed=9)
    catalog = tmp_path / "c.sqlite3"
    cat.index(folders, catalog=str(catalog))
    with sqlite3.connect(catalog) as c:
        (a, ra), (b, gb) = c.execute("SELECT folder, record FROM usage_folder ORDER BY folder LIMIT 1").fetchone(), \
            c.execute("SELECT id, gen FROM folder ORDER BY id DESC LIMIT 1").fetchone()
        right = c.execute("SELECT record FROM usage_folder WHERE folder = ?", (b,)).fetchone()[0]
        c.execute("UPDATE usage_folder SET record = ? WHERE folder = ?", (ra, b))
    want = cat.usage("model", folders, tz=None, no_cache=True)
    assert cat.usage("model", folders, tz=None, catalog=str(catalog)) == want
    with sqlite3.connect(catalog) as c:
        assert c.execute("SELECT stamp, record FROM usage_folder WHERE folder = ?", (b,)).fetchone() == (gb, right)
    counted.clear()
    assert cat.usage("model", folders, tz=None, catalog=str(catalog)) == want
    assert counted == {"folder_record": len(folders)}, counted


def test_a_busy_catalog_is_not_waited_for(tmp_path: Path) -> None:
    """Another process holds the catalog's write lock: the report answers from the rows
    and leaves the records unmade, without waiting for it."""
    folders = make_root(tmp_path / "s", 20, seed=8)
    catalog = tmp_path / "c.sqlite3"
    cat.index(folders, catalog=str(catalog))
    with sqlite3.connect(catalog) as c:
        c.execute("DELETE FROM usage_folder")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(60)", str(catalog)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        got = cat.usage("model", folders, tz=None, catalog=str(catalog))
        waited = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert got == cat.usage("model", folders, tz=None, no_cache=True)
    assert all(s is None for _g, s in _records(catalog).values())
    assert waited < 30  # the catalog's busy wait is 60 s: it was not waited for
