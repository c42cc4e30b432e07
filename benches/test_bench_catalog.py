"""The catalog (issue 12): a folder of generated sessions in Pi's layout, side by side
with ``cat`` of every file in the same run.

Folder by ``--bench-size``: ``1GiB`` gives 2,000 sessions (~1 GB, sizes log-uniform from
5 KB to 3 MB) in 40 project folders, plus, for the memory figure only, one 320 MB
session; smaller maxima give smaller folders (the CI smoke run: 100 sessions). Cached
beside the other bench data (``_benchlib.cache_dir``).

* ``cat``: ``cat`` of every file to /dev/null (a subprocess), the reference.
* ``first listing``: ``list_all`` with no catalog (a new one each round), in process.
* ``second listing``: ``list_all`` in a new process on the catalog the first left; the
  time is the child's own measure of the call (``extra_info`` has the whole process).
* ``append``: after one entry is appended to one file, the bytes the next listing reads
  (counted: the reader's count and the process's ``rchar``), not timed.
* ``search``: warm searches over the whole folder (catalog built), page of 20.
* ``index memory``: peak RSS (``VmHWM``) of ``sessiontree index`` in a new process with
  a new catalog, on the folder and on the folder plus the 320 MB session.
* ``catalog size``: bytes of catalog per GB of sessions, listing only and full.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import LoadReportWarning, SessionManager
from sessiontree import catalog as cat
from sessiontree._listing import list_all_sessions
from sessiontree._places import project_folders
from sessiontree._places import session_dir_for_cwd
from sessiontree.generate import generate_session, parse_size

from _benchlib import SEED, _Lock, _source_hash, cache_dir, max_size, set_info

SPECS = {  # largest bench size -> (sessions, smallest, largest, big file)
    "1MB": (100, 2_000, 200_000, 5_000_000),
    "10MB": (200, 2_000, 400_000, 20_000_000),
    "100MB": (500, 5_000, 1_000_000, 60_000_000),
    "1GiB": (2000, 5_000, 3_000_000, 320_000_000),
}
PROJECTS = 40
QUERIES = ("refactor parser", '"the session"', "tsconfig", "streaming buffer")


def _spec(config: Any) -> tuple[str, tuple[int, int, int, int]]:
    limit = max_size(config)
    label = max((s for s in SPECS if parse_size(s) <= limit), key=parse_size, default="1MB")
    return label, SPECS[label]


def _root(config: Any) -> tuple[Path, Path, str]:
    """(sessions root, the big session, label), generated once and cached."""
    label, (n, lo, hi, big) = _spec(config)
    recipe = hashlib.sha256((inspect.getsource(_root) + repr(SPECS[label])).encode()).hexdigest()[:8]
    base = cache_dir() / f"catalog-{label}-seed{SEED}-{_source_hash()}-{recipe}"
    done = base / ".complete"
    if not done.exists():
        with _Lock(base):
            if not done.exists():
                shutil.rmtree(base, ignore_errors=True)
                root = base / "sessions"
                rng = random.Random(SEED)
                for i in range(n):
                    cwd = f"/home/user/project{i % PROJECTS}"
                    folder = Path(session_dir_for_cwd(cwd, str(root)))
                    folder.mkdir(parents=True, exist_ok=True)
                    size = int(lo * (hi / lo) ** rng.random())
                    name = f"2025-11-{1 + i % 28:02d}T10-{i // 60 % 60:02d}-{i % 60:02d}-000Z_b{i:05d}.jsonl"
                    generate_session(folder / name, size_bytes=size, seed=SEED + 10 + i, cwd=cwd)
                generate_session(base / "big.jsonl", size_bytes=big, seed=SEED, cwd="/home/user/big")
                done.touch()
    return base / "sessions", base / "big.jsonl", label


def _files(root: Path) -> list[str]:
    return sorted(str(p) for f in project_folders(str(root)) for p in Path(f).glob("*.jsonl"))


def _fresh(tmp: Path, name: str) -> str:
    path = tmp / name
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return str(path)


def _cat_seconds(files: list[str]) -> float:
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run(["cat", *files], stdout=null, check=True)
    return time.perf_counter() - t


@pytest.fixture(scope="module")
def folder(request: pytest.FixtureRequest) -> tuple[Path, Path, str, list[str], int]:
    root, big, label = _root(request.config)
    files = _files(root)
    total = sum(os.path.getsize(f) for f in files)
    for f in files:  # warm the page cache, as for cat
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass
    return root, big, label, files, total


def test_cat(benchmark: Any, folder: Any) -> None:
    root, _big, label, files, total = folder
    seconds = benchmark.pedantic(_cat_seconds, args=(files,), rounds=5, warmup_rounds=1)
    assert seconds > 0
    set_info(benchmark, f"catalog · {len(files)} sessions", operation="cat", items=len(files), bytes=total,
             size=label)


def test_first_listing(benchmark: Any, folder: Any, tmp_path: Path) -> None:
    root, _big, label, files, total = folder
    rounds = iter(range(10**6))

    def setup() -> tuple[tuple[str], dict[str, Any]]:
        return (str(root),), {"catalog": _fresh(tmp_path, f"first{next(rounds)}.sqlite3")}

    infos = benchmark.pedantic(list_all_sessions, setup=setup, rounds=3, warmup_rounds=0)
    assert len(infos) == len(files)
    plain = list_all_sessions(str(root), no_cache=True)
    assert infos == plain
    cat_s = min(_cat_seconds(files) for _ in range(3))
    set_info(benchmark, f"catalog · {len(files)} sessions", operation="first listing (no catalog)",
             items=len(files), bytes=total, size=label, cat_seconds=cat_s)


_CHILD = """
import sys, time
t0 = time.perf_counter()
from sessiontree._listing import list_all_sessions
t1 = time.perf_counter()
infos = list_all_sessions(sys.argv[1], catalog=sys.argv[2])
t2 = time.perf_counter()
print(len(infos), t1 - t0, t2 - t1)
"""


def test_second_listing_new_process(benchmark: Any, folder: Any, tmp_path: Path) -> None:
    root, _big, label, files, total = folder
    catalog = _fresh(tmp_path, "second.sqlite3")
    list_all_sessions(str(root), catalog=catalog)
    runs: list[tuple[float, float, float]] = []

    # As an installed package runs: with its bytecode cached (pip compiles it on
    # install; the warm-up round writes it here), whatever this shell says.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def child() -> float:
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _CHILD, str(root), catalog], check=True, capture_output=True,
                             text=True, env=env).stdout.split()
        wall = time.perf_counter() - t
        assert int(out[0]) == len(files)
        runs.append((float(out[2]), float(out[1]), wall))
        return float(out[2])

    benchmark.pedantic(child, rounds=5, warmup_rounds=1)
    call, imports, wall = min(runs)
    set_info(benchmark, f"catalog · {len(files)} sessions", operation="second listing (new process)",
             items=len(files), bytes=total, size=label, call_seconds=call, import_seconds=imports,
             process_seconds=wall)
    benchmark.extra_info["note"] = "time = the child's list_all call; process_seconds = the whole child"


def test_append_reads_only_new_bytes(benchmark: Any, folder: Any, tmp_path: Path) -> None:
    root, _big, label, files, total = folder
    work = tmp_path / "sessions"
    shutil.copytree(root, work)
    catalog = _fresh(tmp_path, "append.sqlite3")
    list_all_sessions(str(work), catalog=catalog)
    target = max(_files(work), key=os.path.getsize)
    results: list[dict[str, int]] = []

    def append_then_list() -> None:
        before = os.path.getsize(target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadReportWarning)
            with SessionManager.open(target) as sm:
                sm.append_message({"role": "user", "content": "one more question", "timestamp": 1_800_000_000_000})
                sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "one more answer"}],
                                   "provider": "p", "model": "m", "timestamp": 1_800_000_001_000})
        added = os.path.getsize(target) - before
        io0 = _rchar()
        store = cat.Store(catalog)
        try:
            found = cat.refresh_for(store, project_folders(str(work)))
        finally:
            store.close()
        io1 = _rchar()
        read = {f.path: f.bytes_read for f in found if f.bytes_read}
        assert read == {target: added}, read
        results.append({"appended": added, "read": read[target], "rchar": io1 - io0})

    benchmark.pedantic(append_then_list, rounds=3, warmup_rounds=0)
    last = results[-1]
    set_info(benchmark, f"catalog · {len(files)} sessions", operation="listing after one append", items=len(files),
             bytes=total, size=label, appended_bytes=last["appended"], read_bytes=last["read"],
             process_read_bytes=last["rchar"], target_bytes=os.path.getsize(target))


def _rchar() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


@pytest.mark.parametrize("query", QUERIES)
def test_search_warm(benchmark: Any, folder: Any, tmp_path_factory: pytest.TempPathFactory, query: str) -> None:
    root, _big, label, files, total = folder
    catalog = str(tmp_path_factory.getbasetemp() / "search.sqlite3")
    if not os.path.exists(catalog):
        cat.index(None, root=str(root), catalog=catalog)
    result = benchmark.pedantic(cat.search, args=(query,), kwargs={"root": str(root), "catalog": catalog},
                                rounds=5, warmup_rounds=1)
    assert result.files == len(files)
    assert result == cat.search(query, root=str(root), no_cache=True)
    set_info(benchmark, f"catalog · {len(files)} sessions", operation=f"search {query}", items=len(files),
             bytes=total, size=label, hits=result.total)


def _peak_rss(argv: list[str]) -> int:
    """Peak resident memory (VmHWM) of a child process, sampled from /proc until it ends."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
        except OSError:
            pass
        time.sleep(0.005)
    assert proc.returncode == 0
    return peak


def test_index_memory(benchmark: Any, folder: Any, tmp_path: Path) -> None:
    root, big, label, files, total = folder
    with_big = tmp_path / "with-big"
    shutil.copytree(root, with_big)
    shutil.copy(big, Path(project_folders(str(with_big))[0]) / "big.jsonl")
    exe = [sys.executable, "-m", "sessiontree", "index"]
    peaks: dict[str, int] = {}
    sizes: dict[str, int] = {}

    def run() -> None:
        for name, where in (("folder", root), ("folder+big", with_big)):
            catalog = _fresh(tmp_path, f"mem-{name}.sqlite3")
            peaks[name] = _peak_rss([*exe, str(where), "--all", "--catalog", catalog])
            sizes[name] = os.path.getsize(catalog)

    benchmark.pedantic(run, rounds=1, warmup_rounds=0)
    listing_only = _fresh(tmp_path, "size-listing.sqlite3")
    list_all_sessions(str(root), catalog=listing_only)
    c = cat.Store(listing_only)
    c.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    gb = total / 1e9
    set_info(benchmark, f"catalog · {len(files)} sessions", operation="first index: peak memory", items=len(files),
             bytes=total, size=label, peak_rss=peaks["folder"], peak_rss_with_big=peaks["folder+big"],
             big_bytes=os.path.getsize(big), catalog_bytes=sizes["folder"],
             catalog_bytes_per_gb=sizes["folder"] / gb, listing_catalog_bytes_per_gb=os.path.getsize(listing_only) / gb)
    assert math.isfinite(peaks["folder+big"])
    json.dumps(benchmark.extra_info)
