"""A search builds what the next one reads behind its answer, never before it (issue 25,
item 1; CONTRACT §7): ``search_stream``'s ``on_unindexed`` says how many files of the
scope the catalog's search index does not hold as they are, and at a terminal
``sessiontree search`` then starts ``catalog.index_later``: a process of its own that
runs ``index`` over the scope, one per catalog at a time. Real processes, a real
pseudo-terminal and a real catalog; the oracle for the hits is ``no_cache``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sessiontree import catalog
from sessiontree.catalog._later import LOCK_SUFFIX, RETRY_SECONDS as RETRY

from _shared import native_available
from _terminal import SCRIPT, on_terminal

LATER = "the search index is being built in the background for the next search"
needs_native = pytest.mark.skipif(not native_available(), reason="the search index is built natively only")


def session(folder: Path, name: str, texts: list[str]) -> Path:
    """A session file whose user messages are ``texts``."""
    lines = [{"type": "session", "version": 3, "id": name, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}]
    parent = None
    for i, text in enumerate(texts):
        eid = f"{name[:4]}{i:04d}"
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z",
                      "message": {"role": "user", "content": text, "timestamp": 1_767_225_600_000 + i}})
        parent = eid
    p = folder / f"2026-01-01T00-00-00-000Z_{name}.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


@pytest.fixture
def history(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions" / "--p--"
    folder.mkdir(parents=True)
    for k in range(6):
        session(folder, f"s{k}aaaaaaa", [f"the okapi {k} grazes", "nothing here", f"okapi number {k}"])
    return folder


def lock_of(cat: Path) -> str:
    return os.path.realpath(cat) + LOCK_SUFFIX


def wait_until_built(cat: Path, timeout: float = 120.0) -> None:
    """Until no process holds the catalog's build lock (it was taken before the start
    returned, so a build that was started is waited for)."""
    fd = os.open(lock_of(cat), os.O_RDWR)
    try:
        end = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError:
                assert time.monotonic() < end, "the build did not end"
                time.sleep(0.05)
    finally:
        os.close(fd)


def build_now(cat: Path, folder: Path) -> None:
    """What ``index`` does to the catalog and its search index (new segments, merges,
    the s_end they move), without its closing checkpoint, which would wait for a reader
    of this very thread."""
    from sessiontree.catalog import _extract, _segments

    store = catalog.open_store(cat, busy=1.0)
    assert store is not None
    try:
        found = catalog.refresh_for(store, [str(folder)], content=True)
        _segments.update(store, found, _extract.native_scanner())
    finally:
        store.close()


def unindexed(query: str, folder: Path, **kw: Any) -> tuple[int | None, list[tuple[str, str]]]:
    got: list[int] = []
    _t, _f, hits = catalog.search_stream(query, [str(folder)], limit=None, on_unindexed=got.append, **kw)
    return (got[0] if got else None), sorted((h.entry_id, h.snippet) for h in hits)


def test_on_unindexed_counts_the_files_the_index_does_not_hold(history: Path, tmp_path: Path) -> None:
    cat = tmp_path / "cat.sqlite3"
    want = unindexed("okapi", history, no_cache=True)[1]
    assert len(want) == 12
    assert unindexed("okapi", history, no_cache=True)[0] == 0  # nothing an index could answer
    assert unindexed("re:okapi", history, catalog=cat)[0] == 0  # no index answers re:
    native = native_available() and os.environ.get("SESSIONTREE_BACKEND") != "python"
    assert unindexed("okapi", history, catalog=cat) == (6 if native else 0, want)  # no catalog yet
    catalog.index([str(history)], catalog=cat)
    assert unindexed("okapi", history, catalog=cat) == (0, want)
    with open(next(history.iterdir()), "a") as f:  # one file grew
        f.write(json.dumps({"type": "session_info", "id": "n1", "parentId": None,
                            "timestamp": "2026-01-01T00:01:00.000Z", "name": "okapi"}) + "\n")
    got = unindexed("okapi", history, catalog=cat)
    assert got == (1 if native else 0, unindexed("okapi", history, no_cache=True)[1])


@needs_native
def test_a_search_at_a_terminal_builds_the_index_behind_its_answer(history: Path, tmp_path: Path) -> None:
    cat = tmp_path / "cat.sqlite3"
    env = {"SESSIONTREE_BACKEND": "native"}
    args = ["search", "okapi", str(history), "--catalog", str(cat), "--color", "never", "--limit", "0"]
    status, lines, err = on_terminal(args, 200, env=env)
    assert status == 0, err
    assert lines[-1] == f"({LATER})"
    first = [line for line in lines if line.startswith("    ")]
    wait_until_built(cat)
    assert unindexed("okapi", history, catalog=cat)[0] == 0
    status, lines, err = on_terminal(args, 200, env=env)
    assert status == 0, err
    assert LATER not in "\n".join(lines)  # the index answered: nothing to build
    assert [line for line in lines if line.startswith("    ")] == first


def test_a_piped_search_leaves_nothing_behind(history: Path, tmp_path: Path) -> None:
    cat = tmp_path / "cat.sqlite3"
    out = subprocess.run([sys.executable, "-m", "sessiontree", "search", "okapi", str(history), "--catalog", str(cat)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert LATER not in out.stdout + out.stderr
    assert not os.path.exists(lock_of(cat)) and not cat.exists()


@needs_native
def test_one_build_at_a_time(history: Path, tmp_path: Path) -> None:
    cat = tmp_path / "cat.sqlite3"
    fd = os.open(lock_of(cat), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a build is going on
        assert catalog.index_later([str(history)], catalog=cat) is False
        assert not cat.exists()
    finally:
        os.close(fd)
    assert catalog.index_later([str(history)], catalog=cat) is True
    assert catalog.index_later([str(history)], catalog=cat) is False  # the first holds the lock
    wait_until_built(cat)
    assert unindexed("okapi", history, catalog=cat)[0] == 0


def test_a_lock_path_that_is_no_file_starts_nothing(history: Path, tmp_path: Path) -> None:
    """A FIFO, a folder or a symlink where the lock file goes: no start, no wait."""
    for k, make in enumerate((os.mkfifo, os.mkdir, lambda p: os.symlink(tmp_path / "elsewhere", p))):
        cat = tmp_path / f"c{k}.sqlite3"
        make(lock_of(cat))
        assert catalog.index_later([str(history)], catalog=cat) is False
    assert not (tmp_path / "elsewhere").exists()


@needs_native
def test_the_backend_flag_picks_the_catalog_readers_too(history: Path, tmp_path: Path) -> None:
    """``--backend python`` reads the catalog and searches with the Python rules, as
    ``$SESSIONTREE_BACKEND=python`` does (adversary round 48, R4: the flag changed only
    the opens): no search index can answer, so none is built behind the answer; the
    flag wins over the variable both ways."""
    cat = tmp_path / "cat.sqlite3"
    args = ["search", "okapi", str(history), "--catalog", str(cat), "--color", "never"]
    _s, lines, _e = on_terminal(["--backend", "python", *args], 200, env={"SESSIONTREE_BACKEND": "native"})
    assert LATER not in "\n".join(lines) and not os.path.exists(lock_of(cat))
    _s, lines, _e = on_terminal(["--backend", "native", *args], 200, env={"SESSIONTREE_BACKEND": "python"})
    assert lines[-1] == f"({LATER})"
    wait_until_built(cat)


@needs_native
def test_the_build_runs_no_module_of_the_working_folder(history: Path, tmp_path: Path) -> None:
    """A ``sqlite3.py`` (or a ``sessiontree`` folder) in the folder a search starts from
    is never imported by the build (adversary round 49, F2: ``python -m`` put the
    working folder first on ``sys.path``)."""
    work = tmp_path / "project"
    (work / "sessiontree").mkdir(parents=True)
    marker = tmp_path / "imported"
    trap = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    (work / "sqlite3.py").write_text(trap)
    (work / "sessiontree" / "__init__.py").write_text(trap)
    cat = tmp_path / "cat.sqlite3"
    _s, lines, _e = on_terminal(["search", "okapi", str(history), "--catalog", str(cat), "--color", "never"], 200,
                                env={"SESSIONTREE_BACKEND": "native"}, cwd=work, start=SCRIPT)
    assert lines[-1] == f"({LATER})"
    wait_until_built(cat)
    assert not marker.exists(), marker.read_text()
    assert unindexed("okapi", history, catalog=cat)[0] == 0


@needs_native
def test_a_failed_build_leaves_its_reason_and_is_not_retried_soon(history: Path, tmp_path: Path) -> None:
    """A build that fails (here: a file where the search index's folder goes) says why in
    the lock file, and no build starts for RETRY_SECONDS: a full disk is not filled
    again by every search (adversary round 49, F3)."""
    from sessiontree.catalog._later import RETRY_SECONDS

    cat = tmp_path / "cat.sqlite3"
    (tmp_path / "cat.sqlite3.idx").write_text("not a folder")
    assert catalog.index_later([str(history)], catalog=cat) is True
    wait_until_built(cat)
    assert Path(lock_of(cat)).read_text().startswith("failed: ")
    assert catalog.index_later([str(history)], catalog=cat) is False
    old = time.time() - RETRY_SECONDS - 1
    os.utime(lock_of(cat), (old, old))
    assert catalog.index_later([str(history)], catalog=cat) is True  # time to try again
    wait_until_built(cat)


@needs_native
def test_the_child_is_reaped_and_takes_any_number_of_folders(tmp_path: Path, history: Path) -> None:
    """Twenty thousand folders with long names (more than a command line holds: they go
    on the child's standard input), and the child reaped once it ends (a long-lived
    caller such as the picker keeps no zombie: adversary round 49, F6)."""
    import threading

    many = tmp_path / ("m" * 100)
    many.mkdir()
    folders = [str(history)]
    for k in range(20_000):
        d = many / f"{k:05d}{'x' * 60}"
        d.mkdir()
        folders.append(str(d))
    assert sum(len(f) + 1 for f in folders) > 2 << 20
    cat = tmp_path / "cat.sqlite3"
    assert catalog.index_later(folders, catalog=cat) is True
    wait_until_built(cat, timeout=300)
    assert unindexed("okapi", history, catalog=cat)[0] == 0
    end = time.monotonic() + 30
    while any(t.name == "index-later-reaper" for t in threading.enumerate()):
        assert time.monotonic() < end, "the child was not reaped"
        time.sleep(0.05)


@needs_native
def test_a_search_racing_a_merge_keeps_the_index(history: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A build merges segments between a search's reading of the segment list and its
    opening of them: the merged-away segment is no damage, the search reads the files
    (the same hits) and the index stays (adversary round 49, F5: it was dropped whole)."""
    import sqlite3

    from sessiontree.catalog import _store

    cat = tmp_path / "cat.sqlite3"
    files = sorted(history.iterdir())

    def grow(k: int) -> None:
        with open(files[k % len(files)], "a") as f:
            f.write(json.dumps({"type": "message", "id": f"g{k:07d}", "parentId": None,
                                "timestamp": "2026-01-01T00:02:00.000Z",
                                "message": {"role": "user", "content": f"okapi grown {k}"}}) + "\n")

    def segments() -> int:
        with contextlib.closing(sqlite3.connect(cat)) as c:
            return int(c.execute("SELECT count(*) FROM segment").fetchone()[0])

    catalog.index([str(history)], catalog=cat)
    k = 0
    while segments() != 3:
        grow(k)
        catalog.index([str(history)], catalog=cat)
        k += 1
    grow(k)  # the next build indexes it and merges four segments into one
    real = _store.Store.segments

    def racing(self: Any) -> Any:
        rows = real(self)
        monkeypatch.setattr(_store.Store, "segments", real)
        build_now(cat, history)  # the build runs and merges now
        return rows

    monkeypatch.setattr(_store.Store, "segments", racing)
    got = unindexed("okapi", history, catalog=cat)
    assert got[1] == unindexed("okapi", history, no_cache=True)[1]
    assert segments() >= 1 and unindexed("okapi", history, catalog=cat)[0] == 0


@needs_native
def test_a_session_gone_during_a_build_costs_only_its_own_hits(history: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A session deleted (or a FIFO put in its place) between the listing and the
    build: the others' pieces are all kept, so a search through the index gives what
    ``--no-cache`` gives (adversary round 49, F1: the piece before it on the same
    thread was dropped and its file marked indexed to its end, its hits lost for good)."""
    from sessiontree.catalog import _extract, _segments

    cat = tmp_path / "cat.sqlite3"
    files = sorted(history.iterdir())
    native = _extract.native_scanner()

    class Vanishing:
        def __getattr__(self, name: str) -> Any:
            return getattr(native, name)

        def index_build(self, *a: Any) -> Any:
            os.unlink(files[3])
            if kind == "fifo":
                os.mkfifo(files[3])
            return native.index_build(*a)

    for kind in ("gone", "fifo"):
        monkeypatch.setattr(_segments, "update", lambda store, found, _n, threads=1, _u=_segments.update:
                            _u(store, found, Vanishing(), threads))
        catalog.index([str(history)], catalog=cat)
        monkeypatch.undo()
        if kind == "fifo":
            os.unlink(files[3])
        assert unindexed("okapi", history, catalog=cat)[1] == unindexed("okapi", history, no_cache=True)[1]
        session(history, files[3].stem.split("_", 1)[1], ["okapi again"])  # back, for the next round


def test_a_catalog_being_created_by_a_stopped_process_is_waited_for_busy_seconds(tmp_path: Path,
                                                                               history: Path) -> None:
    """Its creation lock held for good (a creator stopped with ctrl+z): opening waits
    ``busy`` seconds, then the catalog cannot be used and the files answer (a build
    behind a search waited for ever, and no other started: adversary round 49, F4)."""
    cat = tmp_path / "cat.sqlite3"
    fd = os.open(str(cat) + ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        t = time.monotonic()
        with pytest.raises(catalog.CatalogError, match="another process is creating the catalog"):
            catalog.open_store(cat, busy=0.3, required=True)
        assert time.monotonic() - t < 10
        assert catalog.open_store(cat, busy=0.3) is None
    finally:
        os.close(fd)
    assert catalog.open_store(cat, busy=0.3) is not None


@needs_native
def test_files_that_are_no_sessions_start_a_build_once_in_a_while(history: Path, tmp_path: Path) -> None:
    """A ``.jsonl`` file that is no session is never in the search index, so every
    search reads it: the build it starts finds nothing to do and says so, and no
    other starts for RETRY_SECONDS (adversary round 49: one started behind every
    search, and each footer said so)."""
    cat = tmp_path / "cat.sqlite3"
    (history / "notes.jsonl").write_text("not a session\n")
    catalog.index([str(history)], catalog=cat)
    assert unindexed("okapi", history, catalog=cat)[0] == 1
    assert catalog.index_later([str(history)], catalog=cat) is True
    wait_until_built(cat)
    assert Path(lock_of(cat)).read_text() == "nothing to build\n"
    assert catalog.index_later([str(history)], catalog=cat) is False


@needs_native
def test_nothing_to_build_holds_back_only_the_same_question(history: Path, tmp_path: Path) -> None:
    """A build that found nothing to do pauses the starts that would ask it again (the
    same folders, as many files unread by the index), not a build for a new session or
    for another scope (which waited ten minutes behind one stray ``.jsonl`` before)."""
    cat = tmp_path / "cat.sqlite3"
    other = tmp_path / "sessions" / "--q--"
    other.mkdir()
    session(other, "q0aaaaaaa", ["the okapi elsewhere"])
    (history / "notes.jsonl").write_text("not a session\n")
    catalog.index([str(history)], catalog=cat)
    assert unindexed("okapi", history, catalog=cat)[0] == 1
    assert catalog.index_later([str(history)], catalog=cat, unindexed=1) is True
    wait_until_built(cat)
    assert Path(lock_of(cat)).read_text().startswith("nothing to build (1 ")
    assert catalog.index_later([str(history)], catalog=cat, unindexed=1) is False  # the same question
    assert catalog.index_later([str(history)], catalog=cat) is False  # one not said: held back too
    # Another scope on the same catalog is not held back by this one's stray file.
    assert catalog.index_later([str(other)], catalog=cat, unindexed=1) is True
    wait_until_built(cat)
    assert unindexed("okapi", other, catalog=cat)[0] == 0
    # A new session in the first scope: two files unread, a build starts and indexes it.
    assert catalog.index_later([str(history)], catalog=cat, unindexed=1) is True  # that build said nothing
    wait_until_built(cat)
    assert catalog.index_later([str(history)], catalog=cat, unindexed=1) is False  # paused again
    session(history, "s9aaaaaaa", ["a new okapi"])
    assert unindexed("okapi", history, catalog=cat)[0] == 2
    assert catalog.index_later([str(history)], catalog=cat, unindexed=2) is True
    wait_until_built(cat)
    assert unindexed("okapi", history, catalog=cat)[0] == 1
    got, want = unindexed("okapi", history, catalog=cat)[1], unindexed("okapi", history, no_cache=True)[1]
    assert got == want


@needs_native
def test_a_search_racing_a_build_that_adds_a_segment_finds_the_new_hits(history: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An indexer commits a new segment and the s_end it moves between a search's read of
    the segment list and its read of the rows: the search reads both from one snapshot,
    so the grown file is read, never taken as held by a segment it does not open
    (adversary round 50, N1: a word just appended was not found)."""
    from sessiontree.catalog import _store

    cat = tmp_path / "cat.sqlite3"
    catalog.index([str(history)], catalog=cat)
    with open(sorted(history.iterdir())[2], "a") as f:
        f.write(json.dumps({"type": "message", "id": "new00001", "parentId": None,
                            "timestamp": "2026-01-01T00:03:00.000Z",
                            "message": {"role": "user", "content": "a zebu appears"}}) + "\n")
    real = _store.Store.segments

    def racing(self: Any) -> Any:
        rows = real(self)
        monkeypatch.setattr(_store.Store, "segments", real)
        build_now(cat, history)  # a new segment, s_end moved: committed now
        return rows

    monkeypatch.setattr(_store.Store, "segments", racing)
    assert [h[0] for h in unindexed("zebu", history, catalog=cat)[1]] == ["new00001"]
    assert unindexed("zebu", history, catalog=cat) == (0, unindexed("zebu", history, no_cache=True)[1])


@needs_native
def test_round_50_lows(history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary round 50: N2, an indexer holding the search index's lock for good is
    waited for ``busy`` seconds, then the build fails and says so; N3, a merge that
    cannot write its output (a full disk) keeps the segments; N4, one catalog reached
    by two names has one segment folder; N6, a lock file dated in the future pauses
    nothing."""
    import errno

    from sessiontree.catalog import _extract, _location, _segments

    cat = tmp_path / "cat.sqlite3"
    catalog.index([str(history)], catalog=cat)
    # N4
    link = tmp_path / "link.sqlite3"
    link.symlink_to(cat)
    assert _location.resolve(link) == _location.resolve(cat) == str(cat)
    # N2
    store = catalog.open_store(cat, busy=0.3)
    assert store is not None
    fd = os.open(os.path.join(store.segments_dir, "lock"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        t = time.monotonic()
        with pytest.raises(BlockingIOError, match="another process is building the search index"):
            _segments.update(store, [], _extract.native_scanner())
        assert time.monotonic() - t < 10
    finally:
        os.close(fd)
    # N3
    native = _extract.native_scanner()

    class Full:
        def __getattr__(self, name: str) -> Any:
            return getattr(native, name)

        def index_merge(self, *a: Any) -> Any:
            raise OSError(errno.ENOSPC, "No space left on device")

    before = store.segments()
    for k in range(6):  # enough new segments for a merge
        with open(sorted(history.iterdir())[k % 6], "a") as f:
            f.write(json.dumps({"type": "message", "id": f"full{k:04d}", "parentId": None,
                                "timestamp": "2026-01-01T00:04:00.000Z",
                                "message": {"role": "user", "content": "okapi full"}}) + "\n")
        found = catalog.refresh_for(store, [str(history)], content=True)
        try:
            _segments.update(store, found, Full())
        except OSError as e:
            assert e.errno == errno.ENOSPC
            break
    else:
        pytest.fail("no merge was tried")
    assert len(store.segments()) > len(before)  # kept, not dropped
    store.close()
    assert unindexed("okapi", history, catalog=cat)[1] == unindexed("okapi", history, no_cache=True)[1]
    # N6
    Path(lock_of(cat)).write_text("nothing to build\n")
    future = time.time() + 10 * RETRY
    os.utime(lock_of(cat), (future, future))
    assert catalog.index_later([str(history)], catalog=cat) is True
    wait_until_built(cat)
