"""Parquet export (docs/TABLES.md): throughput in MB of session per second and peak
memory, for one session of each size (1 GiB with ``--bench-size=1GiB``) and for a
folder of 2,000 sessions.

Each measurement runs ``export_parquet`` in a fresh interpreter (the child below), into
an empty output folder, and reports its wall time and ``VmHWM`` (the kernel's exact
peak resident memory, reset after the imports: the figure is what the export adds; the
native backend's mapped session pages count, as they are resident while it reads).
``extra_info`` holds ``mb_per_s``, ``peak_rss`` and the sizes. Under
``--benchmark-disable`` (``make test``) the folder has 40 sessions, so the smoke run
stays short; the 2,000-session folder is generated once and cached beside the others.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree.generate import generate_session

from _benchlib import SEED, _Lock, _source_hash, bench_file, cache_dir, drop_opened, set_info

pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")

FOLDER_SESSIONS = 2000
SMOKE_SESSIONS = 40

CHILD = r"""
import gc, json, sys, time, warnings
warnings.simplefilter("ignore")
from sessiontree.tables import export_parquet, session_paths
paths, out, backend = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
def status():
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, _, v in (l.partition(":") for l in f) if k in ("VmRSS", "VmHWM")}
gc.collect()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = status()
t0 = time.perf_counter()
files = session_paths(paths)
r = export_parquet(files, out, backend=backend)
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "bytes": r.bytes_read, "written": len(r.written), "failed": len(r.failed),
                  "peak_rss": status()["VmHWM"] - base["VmRSS"]}))
"""


def folder_of(n: int) -> Path:
    """``n`` generated sessions (2 KB to 256 KB, log-uniform) in one Pi project folder."""
    folder = cache_dir() / f"tables-{n}-seed{SEED}-{_source_hash()}" / "--home-user-project--"
    done = folder / ".complete"
    if done.exists():
        return folder
    with _Lock(folder.parent):
        if not done.exists():
            folder.mkdir(parents=True, exist_ok=True)
            rng = random.Random(SEED)
            for i in range(n):
                size = int(2000 * (128 ** rng.random()))
                name = f"2025-11-{1 + i % 28:02d}T10-{i // 60 % 60:02d}-{i % 60:02d}-000Z_tables{i:04d}.jsonl"
                if not (folder / name).exists():
                    generate_session(folder / (name + ".tmp"), size_bytes=size, seed=SEED + 7 + i,
                                     cwd="/home/user/project")  # fmt: skip
                    os.replace(folder / (name + ".tmp"), folder / name)
            done.touch()
    return folder


def _export(paths: list[str], out: Path, backend: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(paths), str(out), backend],
                          capture_output=True, text=True, check=False, timeout=3600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _run(benchmark: Any, paths: list[str], tmp_path: Path, backend: str,
         between: Any = None) -> dict[str, Any]:  # fmt: skip
    results: list[dict[str, Any]] = []
    rounds = iter(range(1000))

    def once() -> None:
        out = tmp_path / f"out{next(rounds)}"
        results.append(_export(paths, out, backend))
        if between is not None:  # the peer, alternated with each round
            between()

    benchmark.pedantic(once, rounds=1 if benchmark.disabled else 2, iterations=1)
    best = min(results, key=lambda r: r["seconds"])
    assert best["written"] > 0 and best["failed"] == 0
    best["mb_per_s"] = best["bytes"] / 1e6 / best["seconds"]
    return best


def test_export_session(benchmark: Any, size: str, backend: str, tmp_path: Path) -> None:
    drop_opened()
    file = bench_file(size)
    best = _run(benchmark, [file.path], tmp_path, backend)
    assert best["bytes"] == file.bytes and best["written"] == 1
    set_info(benchmark, f"export parquet {size}", file=file, backend=backend, operation="export_parquet",
             items=file.entries, mb_per_s=round(best["mb_per_s"], 1), peak_rss=best["peak_rss"],
             seconds=best["seconds"])  # fmt: skip


def test_export_folder(benchmark: Any, backend: str, tmp_path: Path) -> None:
    n = SMOKE_SESSIONS if benchmark.disabled else FOLDER_SESSIONS
    folder = folder_of(n)
    total = sum(p.stat().st_size for p in folder.glob("*.jsonl"))
    best = _run(benchmark, [str(folder)], tmp_path, backend)
    assert best["written"] == n and best["bytes"] == total
    set_info(benchmark, f"export parquet · {n} sessions", backend=backend, operation="export_parquet_folder",
             items=n, bytes=total, size=f"{n} files", mb_per_s=round(best["mb_per_s"], 1),
             peak_rss=best["peak_rss"], seconds=best["seconds"])  # fmt: skip


HISTORY_SESSIONS, HISTORY_BYTES = 2000, 930_000_000  # `sessiontree generate ROOT --sessions 2000 --size 930MB`
SMOKE_HISTORY_BYTES = 4_000_000


def history_of(n: int, total: int) -> Path:
    """A generated history in Pi's layout (``generate_root``: ten project folders)."""
    from sessiontree.generate import generate_root

    root = cache_dir() / f"tables-history-{n}-{total}-seed{SEED}-{_source_hash()}"
    done = root / ".complete"
    if not done.exists():
        with _Lock(root.parent):
            if not done.exists():
                shutil.rmtree(root, ignore_errors=True)
                generate_root(root, sessions=n, total_bytes=total, seed=SEED)
                done.touch()
    return root


def _plain(folders: list[str], out: Path) -> dict[str, Any]:
    script = Path(__file__).with_name("plain_parquet.py")
    proc = subprocess.run([sys.executable, str(script), str(out), *folders], capture_output=True, text=True,
                          check=False, timeout=3600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_export_history_against_plain_python(benchmark: Any, backend: str, tmp_path: Path) -> None:
    """The issue's history (2,000 sessions, 0.93 GB) exported by sessiontree and by the
    plain-Python script a user would write (``plain_parquet.py``: ``json.loads`` +
    pyarrow), alternated in fresh processes, best of 2 each; the datasets hold the same
    rows."""
    import pyarrow.dataset as ds

    root = history_of(HISTORY_SESSIONS, SMOKE_HISTORY_BYTES if benchmark.disabled else HISTORY_BYTES)
    folders = sorted(str(p) for p in root.iterdir() if p.is_dir())
    total = sum(p.stat().st_size for p in root.glob("*/*.jsonl"))
    plain: list[dict[str, Any]] = []
    rounds = iter(range(1000))

    def once() -> None:
        k = next(rounds)
        plain.append(_plain(folders, tmp_path / f"plain{k}"))

    best = _run(benchmark, folders, tmp_path, backend, between=once)
    peer = min(plain, key=lambda r: r["seconds"])
    assert best["written"] == HISTORY_SESSIONS == peer["sessions"] and best["bytes"] == total
    for table, n in (("entries", peer["entries"]), ("tool_calls", peer["calls"])):
        assert ds.dataset(tmp_path / "out0" / table, format="parquet").count_rows() == n
    set_info(benchmark, f"export parquet · history of {HISTORY_SESSIONS} sessions", backend=backend,
             operation="export_parquet_history", items=HISTORY_SESSIONS, bytes=total, size=f"{total / 1e6:.0f} MB",
             mb_per_s=round(best["mb_per_s"], 1), seconds=best["seconds"], plain_seconds=peer["seconds"],
             ratio=round(peer["seconds"] / best["seconds"], 2))  # fmt: skip
