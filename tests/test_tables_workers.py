"""The Parquet export in worker processes (``_parquet.PROCESS_BYTES``, docs/TABLES.md
"The Parquet dataset"): the same rows as the export in threads, incremental re-runs
(a changed session, a removed one, a file that is no session), and a run killed
outright that leaves nothing a re-run keeps (the rows of a session deleted after it)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from sessiontree import LoadReportWarning, SessionManager
from sessiontree.generate import generate_session

pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed: pip install pyarrow")
duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (the test-tables extra)")

from sessiontree.tables import _parquet, export_parquet  # noqa: E402


def store(root: Path, n: int, size: int = 30_000) -> list[str]:
    """``n`` generated sessions in two project folders, sorted."""
    for i in range(n):
        folder = root / f"--home-u-w{i % 2}--"
        folder.mkdir(parents=True, exist_ok=True)
        generate_session(folder / f"s{i:03}.jsonl", size_bytes=size + 7_000 * (i % 5), seed=40 + i,
                         cwd=f"/home/u/w{i % 2}")  # fmt: skip
    return sorted(str(p) for p in root.glob("*/*.jsonl"))


def sql(out: Path, table: str) -> str:
    return f"read_parquet('{out}/{table}/**/*.parquet', hive_partitioning = true)"


def rows(out: Path, table: str) -> list[tuple[object, ...]]:
    """Every row of a table, every column, sorted (``path`` aside: the stores differ)."""
    cols = "* exclude (path)" if table == "sessions" else "*"
    return sorted(duckdb.sql(f"select {cols} from {sql(out, table)}").fetchall(), key=repr)


def session_ids(out: Path) -> set[str]:
    return {r[0] for r in duckdb.sql(f"select distinct session_id from {sql(out, 'entries')}").fetchall()}


def sid(path: str) -> str:
    with quiet(path) as sm:
        return str(sm.session_id)


def quiet(path: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        return SessionManager.open(path)


@pytest.fixture
def processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run with two sessions or more to write uses worker processes."""
    monkeypatch.setattr(_parquet, "PROCESS_BYTES", 0)
    monkeypatch.setattr(_parquet, "_workers", lambda: 2)


def test_workers_write_what_threads_write_and_rerun_incrementally(tmp_path: Path, processes: None) -> None:
    files = store(tmp_path / "src", 6)
    procs, threads = tmp_path / "procs", tmp_path / "threads"
    first = export_parquet(files, str(procs), processes=True)
    assert first.written == files and not first.failed
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_parquet, "PROCESS_BYTES", 1 << 60)  # this one in threads
        export_parquet(files, str(threads), processes=True)
    for table in ("sessions", "entries", "tool_calls"):
        assert rows(procs, table) == rows(threads, table), table
    # Nothing changed: nothing written, no file touched.
    stamps = {p: p.stat().st_mtime_ns for p in procs.rglob("*.parquet")}
    again = export_parquet(files, str(procs), processes=True)
    assert (again.written, again.skipped, again.removed) == ([], 6, 0)
    assert {p: p.stat().st_mtime_ns for p in procs.rglob("*.parquet")} == stamps
    # One session grows, one is deleted, a file that is no session joins: the grown one
    # is written again (by a worker), the deleted one dropped, the other one reported.
    with quiet(files[2]) as sm:
        sm.append_message({"role": "user", "content": "one more", "timestamp": 5})
        n = len(sm)
    gone = sid(files[3])
    os.unlink(files[3])
    broken = tmp_path / "src" / "--home-u-w0--" / "broken.jsonl"
    broken.write_text("not a session\n")
    third = export_parquet([*files[:3], *files[4:], str(broken)], str(procs), processes=True)
    assert (third.written, third.skipped, third.removed) == ([files[2]], 4, 1)
    assert [p for p, _ in third.failed] == [str(broken)] and "header" in third.failed[0][1]
    assert gone not in session_ids(procs) and len(session_ids(procs)) == 5
    got = duckdb.sql(f"select count(*) from {sql(procs, 'entries')} where session_id = '{sid(files[2])}'").fetchall()
    assert got == [(n,)]
    assert duckdb.sql(f"select count(*) from {sql(procs, 'sessions')}").fetchall() == [(5,)]
    assert not [p for p in procs.rglob("*") if p.name.endswith(".tmp")]


def test_a_killed_run_leaves_no_rows_a_rerun_keeps(tmp_path: Path) -> None:
    """A run killed (SIGKILL) after it renamed some sessions' files into place, before its
    manifest named them; one of those sessions is deleted before the next run. That run
    drops the deleted session's rows (they stayed for good before) and leaves the
    dataset the export of the sessions there are, its workers gone with the killed run."""
    files = store(tmp_path / "src", 40, size=60_000)
    out = tmp_path / "out"
    code = ("import sys; from sessiontree.tables import _parquet; _parquet.PROCESS_BYTES = 0; "
            "_parquet._workers = lambda: 2; _parquet.export_parquet(sys.argv[2:], sys.argv[1], processes=True)")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", code, str(out), *files], start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("entries/*/*/*.parquet")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    # The manifest is saved before the first file and again as sessions are done: still
    # naming none, the run was killed before it recorded any.
    assert not json.loads((out / _parquet.MANIFEST).read_bytes())["sessions"], "the run recorded files"
    # Its workers died with it (the parent-death signal): nothing moves in the folder.
    time.sleep(0.5)
    before = sorted(out.rglob("*"))
    time.sleep(1.0)
    assert sorted(out.rglob("*")) == before
    written = sorted(out.glob("entries/*/*/*.parquet"))
    assert written
    # The first session whose file the killed run put in place is deleted.
    victim = next(f for f in files if any(p.name.startswith(Path(f).stem + "-") for p in written))
    gone = sid(victim)
    os.unlink(victim)
    rest = [f for f in files if f != victim]
    r = export_parquet(rest, str(out))
    assert not r.failed and len(r.written) == len(rest)
    assert gone not in session_ids(out)
    fresh = tmp_path / "fresh"
    export_parquet(rest, str(fresh))
    for table in ("sessions", "entries", "tool_calls"):
        assert rows(out, table) == rows(fresh, table), table
    # The killed workers' temporary files are swept once their processes are gone.
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp") and _dead_writer(p)]


def _dead_writer(tmp: Path) -> bool:
    """A temporary file's writer (the pid in its name) is gone."""
    pid = int(tmp.name.split(".")[-3])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_files_read_back_as_the_schemas(tmp_path: Path) -> None:
    """The files keep no Arrow schema of their own (``store_schema=False``): Parquet's
    types read back as the tables' schemas, the time zone and the nested images
    included."""
    import pyarrow.parquet as pq

    from sessiontree.tables import SCHEMAS

    files = store(tmp_path / "src", 2)
    export_parquet(files, str(tmp_path / "out"))
    for table, schema in SCHEMAS.items():
        found = sorted((tmp_path / "out" / table).rglob("*.parquet"))
        assert found
        for f in found:
            assert pq.read_schema(f).metadata in (None, {})
            assert pq.read_table(f, partitioning=None).schema.equals(schema), (table, f)


def test_an_unreadable_manifest_removes_no_file(tmp_path: Path) -> None:
    """Files no record names are a killed run's only when the manifest is the dataset's
    record: one there but unreadable leaves every file, so the sessions of another
    folder exported into the same dataset keep their rows."""
    files = store(tmp_path / "src", 4)
    a = [f for f in files if "-w0-" in f]
    b = [f for f in files if "-w1-" in f]
    out = tmp_path / "out"
    export_parquet(files, str(out))
    (out / _parquet.MANIFEST).write_text("{not json")
    assert export_parquet(a, str(out)).written == a
    assert session_ids(out) == {sid(f) for f in files}


def test_files_in_a_folder_no_run_has_written_are_never_removed(tmp_path: Path) -> None:
    """An output folder with no manifest is no dataset of ours: a file there named as the
    export names its own is someone else's, kept by this run and by the next (the first
    run records its dataset before it writes a file of it)."""
    files = store(tmp_path / "src", 2)
    out = tmp_path / "out"
    theirs = out / "entries" / "p" / "d" / "notes-0123456789ab.parquet"
    theirs.parent.mkdir(parents=True)
    theirs.write_bytes(b"their own bytes")
    export_parquet(files, str(out))
    export_parquet(files[:1], str(out))
    assert theirs.read_bytes() == b"their own bytes"
    theirs.unlink()  # not Parquet: the dataset's readers would refuse it
    assert session_ids(out) == {sid(f) for f in files}


def test_a_program_with_no_main_guard_runs_once(tmp_path: Path) -> None:
    """The library exports in threads unless asked for processes: their ``spawn`` runs
    the calling program's main module again in each worker, and a script with no
    ``if __name__ == "__main__":`` ran its own top level three times (adversary round 45,
    F1: its ``rmtree`` of the output under the parent's export)."""
    files = store(tmp_path / "src", 4)
    runs = tmp_path / "runs"
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\n"
        "from sessiontree.tables import _parquet\n"
        f"open({str(runs)!r}, 'a').write('x')\n"
        "_parquet.PROCESS_BYTES = 0\n"
        "_parquet._workers = lambda: 2\n"
        "r = _parquet.export_parquet(sys.argv[2:], sys.argv[1])\n"
        "assert not r.failed and len(r.written) == len(sys.argv[2:]), r\n")
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "out"), *files], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert runs.read_text() == "x"
    assert session_ids(tmp_path / "out") == {sid(f) for f in files}


def test_the_sweep_follows_a_linked_table_folder(tmp_path: Path) -> None:
    """A table folder that is a symbolic link (the writer writes through it) is swept
    too: a killed run's file in it left a deleted session's rows for good (adversary
    round 45, F2)."""
    files = store(tmp_path / "src", 3)
    out = tmp_path / "out"
    export_parquet(files, str(out))
    elsewhere = tmp_path / "elsewhere"
    (out / "entries").rename(elsewhere)
    (out / "entries").symlink_to(elsewhere)
    kept = next(elsewhere.glob("*/*/*.parquet"))
    killed = kept.with_name("gone-0123456789ab.parquet")  # named as the export names its files
    killed.write_bytes(kept.read_bytes())  # as a killed run leaves one: renamed in, never recorded
    export_parquet(files, str(out))
    assert not killed.exists() and kept.exists()
    assert session_ids(out) == {sid(f) for f in files}


def test_a_fifo_in_an_unchanged_sessions_place_is_an_error(tmp_path: Path) -> None:
    """A dataset file of an unchanged session replaced by a FIFO is found (the session is
    written again, which refuses the FIFO), never passed over as unchanged (adversary
    round 45, N2: DuckDB's glob then dropped the session's rows with no word)."""
    files = store(tmp_path / "src", 2)
    out = tmp_path / "out"
    export_parquet(files, str(out))
    victim = next(out.glob("entries/*/*/*.parquet"))
    victim.unlink()
    os.mkfifo(victim)
    r = export_parquet(files, str(out))
    assert r.failed
    assert stat.S_ISFIFO(os.lstat(victim).st_mode)  # refused, never written into or removed


def test_an_export_computes_the_index_settings_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sessions' opens in one run share one computation of the persisted indexes'
    settings (``_caches.held_index_cache``): each summed the cache folder's other files
    (``other_bytes``), ~1.5% of a session's export. A run after it computes them again."""
    from sessiontree import _caches

    monkeypatch.delenv("SESSIONTREE_INDEX", raising=False)
    files = store(tmp_path / "src", 4)
    calls = []
    real = _caches.other_bytes
    monkeypatch.setattr(_caches, "other_bytes", lambda *a: calls.append(a) or real(*a))
    export_parquet(files, str(tmp_path / "out"))
    assert len(calls) == 1
    export_parquet(files, str(tmp_path / "out2"))
    assert len(calls) == 2


def test_held_index_settings_are_those_on_entering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within ``held_index_cache`` the settings are not computed again (a change of the
    environment shows after it); unusable settings are not held: each call in the block
    raises as without it."""
    from sessiontree import _caches

    monkeypatch.setenv("SESSIONTREE_INDEX", str(tmp_path / "a"))
    with _caches.held_index_cache():
        monkeypatch.setenv("SESSIONTREE_INDEX", str(tmp_path / "b"))
        with _caches.held_index_cache():  # nested: the outer holds
            assert _caches.index_cache()[0] == str(tmp_path / "a")  # type: ignore[index]
        assert _caches.index_cache()[0] == str(tmp_path / "a")  # type: ignore[index]
    assert _caches.index_cache()[0] == str(tmp_path / "b")  # type: ignore[index]
    monkeypatch.setenv("SESSIONTREE_INDEX_BYTES", "lots")
    with _caches.held_index_cache():
        with pytest.raises(ValueError):
            _caches.index_cache()
        monkeypatch.setenv("SESSIONTREE_INDEX_BYTES", "1MiB")
        assert _caches.index_cache()[1] == 1 << 20  # type: ignore[index]  # nothing was held
    monkeypatch.setenv("SESSIONTREE_INDEX_BYTES", "lots")
    monkeypatch.setenv("SESSIONTREE_INDEX", "off")
    monkeypatch.delenv("SESSIONTREE_INDEX_BYTES")
    assert _caches.index_cache() is None


def test_workers_write_the_partitions_sessions_files(tmp_path: Path, processes: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The touched partitions' ``sessions`` files are written by the pool's workers, a
    task per few partitions (``_PARTS_PER_TASK``: one here, so each partition is a task):
    the same rows as the export in threads, first and after a change and a removal; a
    FIFO in one's place fails that partition (said, not hung, never written into), not
    the run."""
    monkeypatch.setattr(_parquet, "_PARTS_PER_TASK", 1)
    files = store(tmp_path / "src", 6)
    procs, threads = tmp_path / "procs", tmp_path / "threads"

    def both() -> None:
        export_parquet(files, str(procs), processes=True)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(_parquet, "PROCESS_BYTES", 1 << 60)
            export_parquet(files, str(threads), processes=True)
        for table in ("sessions", "entries", "tool_calls"):
            assert rows(procs, table) == rows(threads, table), table

    both()
    assert len(list(procs.glob("sessions/*/*/sessions.parquet"))) >= 2
    with open(files[0], "a") as f:  # a change: the session and its partition written again
        f.write(json.dumps({"type": "session_info", "id": "zz000001", "parentId": None,
                            "timestamp": "2025-01-01T00:00:00.000Z", "name": "renamed"}) + "\n")
    os.unlink(files[-1])
    files = files[:-1]
    both()
    places = sorted(procs.glob("sessions/*/*/sessions.parquet"))
    victim = places[0]
    victim.unlink()
    os.mkfifo(victim)
    for f in files:
        os.utime(f)  # every session changed: every partition touched
    r = export_parquet(files, str(procs), processes=True)
    assert [(p, "a FIFO, not a regular file" in why) for p, why in r.failed] == [(str(victim), True)], r.failed
    assert len(r.written) == len(files) and stat.S_ISFIFO(os.lstat(victim).st_mode)
    assert all(p.is_file() for p in places[1:])


def test_a_run_stopped_before_its_sessions_files_leaves_them_to_the_next(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary 60b: a run saves its manifest as it goes (every 30 s) but writes the
    partitions' ``sessions`` files at its end; stopped between the two, the next run
    found its sessions unchanged and never wrote those files (the sessions table lacked
    their rows for good). The manifest names them (``pending``) until they are written.
    And a partition whose ``sessions`` file is gone (its folder removed) is written
    again; a FIFO in its place is refused, never passed over."""
    files = store(tmp_path / "src", 6)
    clean, out = tmp_path / "clean", tmp_path / "out"
    export_parquet(files, str(clean))
    with pytest.MonkeyPatch.context() as m:
        clock = iter(range(0, 10**6, 31))
        m.setattr(_parquet.time, "monotonic", lambda: next(clock))  # a save after every session

        def stopped(*_a: object) -> None:
            raise KeyboardInterrupt

        m.setattr(_parquet, "_write_sessions", stopped)
        with pytest.raises(KeyboardInterrupt):
            export_parquet(files, str(out))
    assert not list(out.glob("sessions/*/*/sessions.parquet"))
    again = export_parquet(files, str(out))
    assert again.skipped == len(files) and not again.written  # recorded by the stopped run
    for table in ("sessions", "entries", "tool_calls"):
        assert rows(out, table) == rows(clean, table), table
    assert json.loads((out / _parquet.MANIFEST).read_text())["pending"] == []
    # A hand-edited `pending` names partitions only as the export names them (adversary
    # 60c: a link's name or a `..` spelling removed files outside the folder).
    outside = tmp_path / "outside"
    (outside / "p").mkdir(parents=True)
    for f in (outside / "sessions.parquet", outside / "p" / "sessions.parquet"):
        f.write_bytes(b"not the dataset's")
    (out / "sessions" / "lnk").symlink_to(outside)
    manifest = json.loads((out / _parquet.MANIFEST).read_text())
    manifest["pending"] = ["lnk", "lnk/p", "../outside", "project=x/../../outside/p/date=2025-01-01"]
    (out / _parquet.MANIFEST).write_text(json.dumps(manifest))
    export_parquet(files, str(out))
    assert (outside / "sessions.parquet").exists() and (outside / "p" / "sessions.parquet").exists()
    (out / "sessions" / "lnk").unlink()
    # A partition's folder removed: its file is written again, nothing else.
    victim = next(out.glob("sessions/*/*/sessions.parquet"))
    victim.unlink()
    victim.parent.rmdir()
    export_parquet(files, str(out))
    assert rows(out, "sessions") == rows(clean, "sessions")
    victim.unlink()
    os.mkfifo(victim)
    r = export_parquet(files, str(out))
    assert [p for p, why in r.failed if "a FIFO, not a regular file" in why] == [str(victim)], r.failed
    assert stat.S_ISFIFO(os.lstat(victim).st_mode)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_partition_that_cannot_be_written_fails_alone(tmp_path: Path, kind: str) -> None:
    """A FIFO (or a folder) where one partition's ``sessions.parquet`` goes: the other
    partitions are written, that one is reported by its path and kind, the command
    exits 1 (``export_parquet``'s ``failed``), and the next run tries it again. The
    FIFO is never opened (the run ends: a FIFO opened for writing with no reader
    blocks), and nothing the export did not write is removed. It failed the whole run
    (fix61, item 4): no partition after it written, the manifest not saved."""
    files = store(tmp_path / "src", 4, size=5_000)
    out = tmp_path / "out"
    export_parquet(files, str(out))
    places = sorted(out.glob("sessions/*/*/sessions.parquet"))
    assert len(places) >= 2
    victim, others = places[0], places[1:]
    victim.unlink()
    if kind == "fifo":
        os.mkfifo(victim)
    else:
        victim.mkdir()
        (victim / "keep").write_text("not the export's")
    for p in others:
        p.unlink()  # gone: written again by the run
    for f in files:
        os.utime(f)
    p = subprocess.run([sys.executable, "-m", "sessiontree", "export", "--format", "parquet", "--out", str(out),
                        "--json", *files], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "HOME": str(tmp_path / "h")})
    assert p.returncode == 1, p.stderr
    d = json.loads(p.stdout)
    what = "a FIFO" if kind == "fifo" else "a directory"
    assert [f["path"] for f in d["failed"]] == [str(victim)], d
    assert d["failed"][0]["reason"].startswith(f"{what}, not a regular file, is where this partition's sessions"), d
    assert d["written"] == len(files) and all(o.is_file() for o in others)
    assert (stat.S_ISFIFO(os.lstat(victim).st_mode) if kind == "fifo"
            else (victim / "keep").read_text() == "not the export's")
    assert json.loads((out / _parquet.MANIFEST).read_text())["pending"] == [str(victim.parent.relative_to(out / "sessions"))]
    # Moved away: the next run writes it, though no session changed.
    if kind == "fifo":
        victim.unlink()
    else:
        (victim / "keep").unlink()
        victim.rmdir()
    again = export_parquet(files, str(out))
    assert not again.failed and not again.written and victim.is_file()
    assert json.loads((out / _parquet.MANIFEST).read_text())["pending"] == []
