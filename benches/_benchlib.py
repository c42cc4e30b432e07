"""Helpers shared by the benchmark suites: sizes, cached files, opened sessions.

See ``conftest.py`` for the options and the cache layout.
"""

from __future__ import annotations

import fcntl
import functools
import gc
import hashlib
import inspect
import json
import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

import sessiontree
import sessiontree.generate as _generate
from sessiontree import SessionManager
from sessiontree.generate import generate_session, parse_size

SIZES: tuple[str, ...] = ("1MB", "10MB", "100MB", "1GiB")
"""Every size a suite knows, smallest first."""

SEED = 2
"""Seed of the generated sessions (the same for every size). Chosen so that at every
size the path to the leaf holds a compaction (the compacted-context case; with seed 1
the 1 GiB session's leaf sits 22 entries below a reset leaf, with no compaction)."""

BACKENDS: tuple[str, ...] = ("python", "native")

GENERATORS: tuple[str, ...] = ("project", "corpus")
"""Where a benchmark session comes from: ``project`` = ``sessiontree.generate`` (the
generator the code was tuned against), ``corpus`` = ``benches/corpus_gen.py`` (Pi's own
entries from the conformance corpus in another model of a session; needs
``../shared``)."""

LISTING_SESSIONS = 500
"""Sessions in the folder that ``list`` runs over."""

DEFAULT_MAX = "1MB"


def max_size(config: Any) -> int:
    text = config.getoption("--bench-size", default=None) or os.environ.get("SESSIONTREE_BENCH_MAX") or DEFAULT_MAX
    return parse_size(text)


def active_sizes(config: Any) -> list[str]:
    limit = max_size(config)
    return [s for s in SIZES if parse_size(s) <= limit]


def active_backends() -> list[str]:
    chosen = os.environ.get("SESSIONTREE_BACKEND", "").strip().lower()
    return [chosen] if chosen in BACKENDS else list(BACKENDS)


# ------------------------------------------------------------------ the files
def cache_dir() -> Path:
    env = os.environ.get("SESSIONTREE_BENCH_CACHE")
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(env) if env else (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "sessiontree-bench"
    root.mkdir(parents=True, exist_ok=True)
    return root


@functools.cache
def _source_hash() -> str:
    h = hashlib.sha256()
    h.update(inspect.getsource(_generate).encode())
    h.update(inspect.getsource(_uncompact_line).encode())
    h.update(repr((SEED, LISTING_SESSIONS)).encode())
    return h.hexdigest()[:10]


class _Lock:
    """An exclusive ``flock`` on ``<path>.lock`` while a cached file is produced."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + ".lock")

    def __enter__(self) -> _Lock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _uncompact_line(line: bytes) -> bytes:
    """A compaction line turned into a ``custom`` entry with the same id, parent and
    time (so the tree keeps its shape and size, and the context is the whole path)."""
    if b'"type":"compaction"' not in line[:40]:
        return line
    e = orjson.loads(line)
    out = {
        "type": "custom",
        "customType": "bench/compaction-removed",
        "data": {"summary": e.get("summary"), "tokensBefore": e.get("tokensBefore")},
        "id": e["id"],
        "parentId": e["parentId"],
        "timestamp": e["timestamp"],
    }
    return orjson.dumps(out)


@dataclass(frozen=True)
class BenchFile:
    """One cached session file and what a benchmark needs to know about it.

    ``sample_ids`` are :data:`SAMPLE_IDS` entry ids spread evenly over the file (for
    ``get_entry``), found by a plain scan of the lines (no backend involved).
    """

    path: str
    size_label: str
    bytes: int
    entries: int
    leaf_id: str
    compacted: bool
    sample_ids: tuple[str, ...]


SAMPLE_IDS = 64


def scan_ids(path: Path) -> list[str]:
    """Every entry id of a generated file, in file order (header skipped), by a plain
    decode of each line (no backend involved: the corpus generator's lines may hold
    nested ``id`` keys before the entry's own)."""
    ids = []
    with open(path, "rb") as f:
        f.readline()
        for line in f:
            try:
                ids.append(orjson.loads(line)["id"])
            except orjson.JSONDecodeError:  # lone surrogates: json.loads keeps them
                ids.append(json.loads(line)["id"])
    return ids


def _generate_cached(size_label: str) -> Path:
    target = cache_dir() / f"session-{size_label}-seed{SEED}-{_source_hash()}.jsonl"
    if target.exists():
        return target
    with _Lock(target):
        if not target.exists():
            tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
            generate_session(tmp, size_bytes=parse_size(size_label), seed=SEED)
            os.replace(tmp, target)
    return target


def _uncompacted_cached(size_label: str) -> Path:
    source = _generate_cached(size_label)
    target = source.with_name(source.stem + "-nocompact.jsonl")
    if target.exists():
        return target
    with _Lock(target):
        if not target.exists():
            tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
            with open(source, "rb") as src, open(tmp, "wb") as dst:
                for line in src:
                    body = line[:-1] if line.endswith(b"\n") else line
                    dst.write(_uncompact_line(body) + b"\n")
            os.replace(tmp, target)
    return target


def _corpus_cached(size_label: str) -> Path:
    import corpus_gen

    if not corpus_gen.CORPUS.is_dir():
        import pytest

        pytest.skip(f"the conformance corpus is not at {corpus_gen.CORPUS} (the corpus generator needs it)")
    h = hashlib.sha256(inspect.getsource(corpus_gen).encode())
    for f in sorted(corpus_gen.CORPUS.glob("*.jsonl")):
        h.update(f"{f.name}:{f.stat().st_size}".encode())
    target = cache_dir() / f"corpus-{size_label}-seed{SEED}-{h.hexdigest()[:10]}.jsonl"
    if target.exists():
        return target
    with _Lock(target):
        if not target.exists():
            corpus_gen.generate(target, parse_size(size_label), seed=SEED)
    return target


def _describe(path: Path, size_label: str, compacted: bool) -> BenchFile:
    meta = path.with_name(path.name + ".meta.json")
    if meta.exists():
        d = orjson.loads(meta.read_bytes())
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with SessionManager.open(str(path), backend=_fast_backend()) as sm:
                d = {"entries": len(sm), "leaf_id": sm.leaf_id}
        ids = scan_ids(path)
        assert len(ids) == d["entries"], (path, len(ids), d["entries"])
        step = max(1, len(ids) // SAMPLE_IDS)
        d["sample_ids"] = ids[step // 2::step][:SAMPLE_IDS]
        meta.write_bytes(orjson.dumps(d))
    return BenchFile(str(path), size_label, path.stat().st_size, d["entries"], d["leaf_id"], compacted,
                     tuple(d["sample_ids"]))


def _fast_backend() -> str:
    try:
        import sessiontree._sessiontree  # noqa: F401
    except ImportError:
        return "python"
    return "native"


_FILES: dict[tuple[str, bool, str], BenchFile] = {}


def bench_file(size_label: str, compacted: bool = True, gen: str = "project") -> BenchFile:
    """The cached session of ``size_label`` from generator ``gen`` (:data:`GENERATORS`;
    generated on first use). ``compacted=False``: the project's session with every
    compaction turned into a ``custom`` entry."""
    key = (size_label, compacted, gen)
    if key not in _FILES:
        if gen == "corpus":
            path = _corpus_cached(size_label)
        else:
            path = _generate_cached(size_label) if compacted else _uncompacted_cached(size_label)
        _FILES[key] = _describe(path, size_label, compacted)
    return _FILES[key]


def listing_folder() -> Path:
    """A folder of :data:`LISTING_SESSIONS` small sessions (2 KB to 256 KB, log-uniform)."""
    folder = cache_dir() / f"listing-{LISTING_SESSIONS}-seed{SEED}-{_source_hash()}"
    done = folder / ".complete"
    if done.exists():
        return folder
    with _Lock(folder):
        if not done.exists():
            import random

            folder.mkdir(exist_ok=True)
            rng = random.Random(SEED)
            for i in range(LISTING_SESSIONS):
                size = int(2000 * (128 ** rng.random()))
                name = f"2025-11-{1 + i % 28:02d}T10-{i // 60 % 60:02d}-{i % 60:02d}-000Z_bench{i:04d}.jsonl"
                tmp = folder / (name + ".tmp")
                generate_session(tmp, size_bytes=size, seed=SEED + 1 + i, cwd="/home/user/project")
                os.replace(tmp, folder / name)
            done.touch()
    return folder


# --------------------------------------------------------- opened sessions
_OPEN: dict[tuple[str, str], SessionManager] = {}


def opened(file: BenchFile, backend: str) -> SessionManager:
    """A session opened read-only and kept for the next test that wants the same one.

    Only one is kept at a time (a 1 GiB session in the python backend holds gigabytes).
    Callers must not append to it or move its leaf.
    """
    key = (file.path, backend)
    if key not in _OPEN:
        drop_opened()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _OPEN[key] = SessionManager.open(file.path, backend=backend)
    sm = _OPEN[key]
    assert sm.backend == backend
    return sm


def drop_opened() -> None:
    for sm in _OPEN.values():
        sm.close()
    _OPEN.clear()
    gc.collect()


# ------------------------------------------------------------------ helpers
def set_info(benchmark: Any, group: str, *, file: BenchFile | None = None, backend: str | None = None,
             operation: str, **extra: Any) -> None:
    """Set the group and the ``extra_info`` that ``benches/report.py`` reads."""
    benchmark.group = group
    info = benchmark.extra_info
    info["operation"] = operation
    if backend is not None:
        info["backend"] = backend
    if file is not None:
        info["size"] = file.size_label
        info["bytes"] = file.bytes
        info["entries"] = file.entries
    info["sessiontree"] = sessiontree.__version__
    info.update(extra)


def read_once(path: str, buf: bytearray | None = None) -> int:
    """Read the whole file into one reused buffer (8 MiB unless given); the bytes read.
    The physical reference of an open, and what puts a file in the page cache."""
    total = 0
    view = memoryview(buf if buf is not None else bytearray(8 << 20))
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            total += n
    return total


def rounds_for(size_label: str) -> int:
    """Timed rounds of one whole-file operation (open, context...) at this size."""
    return {"1MB": 50, "10MB": 15, "100MB": 5, "1GiB": 3}.get(size_label, 3)


def copy_to(file: BenchFile, folder: Path) -> str:
    """A private copy of a cached file (for benchmarks that append)."""
    dst = folder / Path(file.path).name
    shutil.copyfile(file.path, dst)
    return str(dst)


def assert_context(ctx: Any, compacted: bool) -> None:
    """A benchmark's context must be real: non-empty, and led by the compaction summary
    exactly when the session is the compacted variant."""
    assert ctx.messages, "empty context"
    roles = [m["role"] for m in ctx.messages]
    if compacted:
        assert roles[0] == "compactionSummary", roles[:3]
    else:
        assert "compactionSummary" not in roles
