"""The Parquet dataset after a sequence of incremental runs (appends, rewrites, deletions,
new sessions, a bad image, a file that is not a session, a run killed midway) holds exactly
the rows a fresh export of the final files holds, read back by DuckDB; and the rows the
plain-Python script (``benches/plain_parquet.py``) writes where the two overlap.

Sessions are put several to a file (``CHUNK_BYTES``, made small here so that a partition
holds several files and a growing session splits its file)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree.generate import generate_session

from _shared import open_quiet

pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")
duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (the test-tables extra)")

from sessiontree.tables import _parquet, export_parquet, session_paths  # noqa: E402

TABLES = ("sessions", "entries", "tool_calls")
PLAIN = Path(__file__).parent.parent / "benches" / "plain_parquet.py"


def dataset(out: Path) -> dict[str, Counter[str]]:
    """Every row of every table (the partition columns included), as DuckDB reads them."""
    con = duckdb.connect()
    rows = {}
    for t in TABLES:
        files = list((out / t).rglob("*.parquet"))
        rows[t] = Counter(repr(r) for r in con.sql(
            f"select * from read_parquet('{out}/{t}/**/*.parquet', hive_partitioning = true)").fetchall()) if files else Counter()  # fmt: skip
    return rows


def fresh(root: Path, tmp: Path, backend: str) -> dict[str, Counter[str]]:
    out = tmp / "fresh"
    shutil.rmtree(out, ignore_errors=True)
    export_parquet(session_paths(folders(root)), str(out), backend=backend)
    return dataset(out)


def gen(path: Path, size: int, seed: int, cwd: str) -> None:
    """A generated session whose header is of one day (one partition per project)."""
    generate_session(path, size_bytes=size, seed=seed, cwd=cwd)
    head, rest = path.read_bytes().split(b"\n", 1)
    h = json.loads(head)
    h["timestamp"] = "2025-11-05T10:00:00.000Z"
    path.write_bytes(json.dumps(h).encode() + b"\n" + rest)


def folders(root: Path) -> list[str]:
    return sorted(str(p) for p in root.iterdir() if p.is_dir())


def agrees(out: Path, root: Path, tmp: Path, backend: str) -> None:
    got, want = dataset(out), fresh(root, tmp, backend)
    for t in TABLES:
        assert got[t] == want[t], t
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def bad_image_session(folder: Path, backend: str) -> str:
    sm = SessionManager.create("/home/u/p0", str(folder), backend=backend)
    sm.append_message({"role": "user", "content": [{"type": "text", "text": "look"}, {
        "type": "image", "data": base64.b64encode(bytes(range(200))).decode()[:-1], "mimeType": "image/png"}],
        "timestamp": 1})  # fmt: skip
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2,
                       "usage": {"totalTokens": 7, "cost": {"total": 0.25}}})  # fmt: skip
    path = sm.session_file
    sm.close()
    assert path is not None
    return path


def test_incremental_runs_equal_a_fresh_export(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parquet, "CHUNK_BYTES", 120_000)
    root = tmp_path / "sessions"
    for i in range(10):
        folder = root / f"--home-u-p{i % 2}--"
        folder.mkdir(parents=True, exist_ok=True)
        # Same names' dates: several sessions to a partition, several files to a partition.
        gen(folder / f"s{i}.jsonl", 10_000 + 9_000 * i, 40 + i, f"/home/u/p{i % 2}")
    files = sorted(str(p) for p in root.glob("*/*.jsonl"))
    out = tmp_path / "out"

    def run() -> Any:
        r = export_parquet(session_paths(folders(root)), str(out), backend=backend)
        agrees(out, root, tmp_path, backend)
        return r

    first = run()
    assert len(first.written) == 10 and not first.failed
    parts = list((out / "entries").rglob("*.parquet"))
    assert 2 < len(parts) < 10  # several sessions to a file, several files to a partition
    again = run()
    assert (again.written, again.skipped, again.removed) == ([], 10, 0)

    # An append that grows a session past the file's bound (its file splits).
    with open_quiet(files[0], backend) as sm:
        for k in range(40):
            sm.append_message({"role": "user", "content": "more " * 400 + str(k), "timestamp": 5})
    third = run()
    assert third.written == [files[0]] and third.skipped == 9

    # A session rewritten whole (another session in the same file), one deleted, new ones,
    # one with an image whose data does not decode, one file that is not a session.
    gen(Path(files[3] + ".new"), 30_000, 99, "/home/u/p1")
    os.replace(files[3] + ".new", files[3])
    os.unlink(files[4])
    gen(root / "--home-u-p0--" / "s10.jsonl", 50_000, 77, "/home/u/p0")
    (root / "--home-u-p2--").mkdir()
    generate_session(root / "--home-u-p2--" / "s11.jsonl", size_bytes=20_000, seed=78, cwd="/home/u/p2")
    bad = bad_image_session(root / "--home-u-p0--", backend)
    broken = root / "--home-u-p1--" / "broken.jsonl"
    broken.write_text("not a session\n")
    fourth = export_parquet(session_paths(folders(root)) + [str(broken)], str(out), backend=backend)
    assert sorted(fourth.written) == sorted([files[3], str(root / "--home-u-p0--" / "s10.jsonl"),
                                             str(root / "--home-u-p2--" / "s11.jsonl"), bad])  # fmt: skip
    assert fourth.removed == 1 and [p for p, _ in fourth.failed] == [str(broken)] and fourth.bad_blocks == 1
    broken.unlink()
    agrees(out, root, tmp_path, backend)

    # A session that cannot be read keeps its previous rows.
    os.chmod(files[5], 0)
    if os.access(files[5], os.R_OK):  # root reads anything: make it no session instead
        os.chmod(files[5], 0o644)
        saved = Path(files[5]).read_bytes()
        Path(files[5]).write_bytes(b"not a session\n")
    else:
        saved = None
    before = dataset(out)
    fifth = export_parquet(session_paths(folders(root)) + [files[5]], str(out), backend=backend)
    assert [p for p, _ in fifth.failed] == [files[5]] and "previous export is kept" in fifth.failed[0][1]
    assert dataset(out) == before
    if saved is None:
        os.chmod(files[5], 0o644)
    else:
        Path(files[5]).write_bytes(saved)
    sixth = run()
    assert sixth.written == [files[5]]

    # The last state, against the plain-Python script where they overlap (clean files:
    # the bad image is a decode error there).
    os.unlink(bad)
    run()
    plain = tmp_path / "plain"
    proc = subprocess.run([sys.executable, str(PLAIN), str(plain), *folders(root)], capture_output=True, text=True,
                          check=False, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    cols = "session_id, entry_id, type, role, provider, model, text, text_bytes, total_tokens, cost"
    con = duckdb.connect()
    ours = Counter(con.sql(f"select {cols}, epoch_ms(timestamp) from read_parquet('{out}/entries/**/*.parquet')").fetchall())
    theirs = Counter(con.sql(f"select {cols}, timestamp from read_parquet('{plain}/entries/**/*.parquet', union_by_name = true)").fetchall())
    assert ours == theirs and sum(ours.values()) > 200
    calls = "session_id, call_id, tool_name, call_entry_id, result_entry_id, is_error"
    assert Counter(con.sql(f"select {calls} from read_parquet('{out}/tool_calls/**/*.parquet')").fetchall()) == \
        Counter(con.sql(f"select {calls} from read_parquet('{plain}/tool_calls/**/*.parquet', union_by_name = true)").fetchall())


KILL = r"""
import os, sys, warnings
warnings.simplefilter("ignore")
from sessiontree.tables import _parquet, export_parquet, session_paths
_parquet.CHUNK_BYTES = 60_000
run, done = _parquet._Job.run, []
def dies(self, *a):
    if len(done) == int(sys.argv[3]):
        os._exit(9)   # killed between two files
    done.append(1)
    return run(self, *a)
_parquet._Job.run = dies
_parquet._workers = lambda: 1
export_parquet(session_paths(sys.argv[1].split(",")), sys.argv[2])
"""


@pytest.mark.parametrize("after", [0, 2])
def test_a_killed_run_leaves_whole_files_and_the_next_run_mends_them(tmp_path: Path, after: int) -> None:
    root = tmp_path / "sessions"
    for i in range(8):
        folder = root / f"--home-u-p{i % 2}--"
        folder.mkdir(parents=True, exist_ok=True)
        gen(folder / f"s{i}.jsonl", 15_000 + 5_000 * i, 60 + i, f"/home/u/p{i % 2}")
    out = tmp_path / "out"
    export_parquet(session_paths(folders(root)), str(out))
    files = sorted(root.glob("*/*.jsonl"))
    with open_quiet(files[1], "python") as sm:
        sm.append_message({"role": "user", "content": "grown " * 3000, "timestamp": 5})
    files[2].unlink()
    gen(root / "--home-u-p0--" / "s8.jsonl", 40_000, 70, "/home/u/p0")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-c", KILL, ",".join(folders(root)), str(out), str(after)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 9, proc.stderr[-2000:]
    dataset(out)  # whole files only: DuckDB reads every one
    json.loads((out / _parquet.MANIFEST).read_text())
    r = export_parquet(session_paths(folders(root)), str(out))
    assert len(r.written) + r.skipped == len(session_paths(folders(root))) and not r.failed
    agrees(out, root, tmp_path, "python")


def test_a_dataset_of_another_layout_is_replaced(tmp_path: Path) -> None:
    """A manifest of the file-per-session layout (or other tables): its files go, the
    sessions are exported again; nothing is read twice."""
    root = tmp_path / "sessions"
    folder = root / "--home-u-p0--"
    folder.mkdir(parents=True)
    for i in range(3):
        gen(folder / f"s{i}.jsonl", 12_000, 80 + i, "/home/u/p0")
    out = tmp_path / "out"
    old = out / "entries" / "project=--home-u-p0--" / "date=2025-11-05" / "s0-0123456789ab.parquet"
    old.parent.mkdir(parents=True)
    shutil.copy(next(Path(__file__).parent.glob("*.py")), old)  # not even Parquet: it must go unread
    (out / _parquet.MANIFEST).write_text(json.dumps({"format": "0", "sessions": {
        str(folder / "s0.jsonl"): {"identity": [0, 0, 0, 0], "partition": "x", "files": [str(old.relative_to(out))]}}}))
    r = export_parquet(session_paths([str(folder)]), str(out))
    assert len(r.written) == 3 and not old.exists()
    agrees(out, root, tmp_path, "python")


@pytest.mark.parametrize("guess", ["none", "wrong"])
def test_a_first_line_that_misleads_is_checked_against_the_header(tmp_path: Path, guess: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Where a session's rows go is read from its first line before it is opened; the
    loaded header decides (a session the first line misplaced is moved)."""
    root = tmp_path / "sessions"
    for i in range(4):
        folder = root / f"--home-u-p{i % 2}--"
        folder.mkdir(parents=True, exist_ok=True)
        gen(folder / f"s{i}.jsonl", 12_000, 90 + i, f"/home/u/p{i % 2}")
    real = _parquet._header_partition
    monkeypatch.setattr(_parquet, "_header_partition", lambda path, st: (
        None if guess == "none" else "project=elsewhere/date=1999-01-01") if path.endswith("s1.jsonl") else real(path, st))
    out = tmp_path / "out"
    r = export_parquet(session_paths(folders(root)), str(out))
    assert len(r.written) == 4 and not r.failed
    agrees(out, root, tmp_path, "python")
    assert not (out / "entries" / "project=elsewhere").exists()
