"""Shared machinery of the benchmark suites (issue 5).

Sizes
    1MB, 10MB, 100MB and 1GiB sessions from :func:`sessiontree.generate.generate_session`
    with fixed seeds. Only sizes up to the *maximum* run: ``--bench-size=SIZE`` or the
    environment variable ``SESSIONTREE_BENCH_MAX`` (default ``1MB``, the CI size; ``make
    bench`` passes ``100MB`` unless told ``BENCH_MAX=1GiB``).

Cache
    Generated files are kept between runs in ``$SESSIONTREE_BENCH_CACHE``, else
    ``$XDG_CACHE_HOME/sessiontree-bench/`` (``~/.cache/`` without it). A file's name
    carries a hash of the generator's source and of this file's derivation code, so a
    changed generator regenerates.
    Benchmarks never write to a cached file: append and refresh work on copies in
    pytest's ``tmp_path``.

Backends
    Each suite is parametrised over ``python`` and ``native`` (``SESSIONTREE_BACKEND``
    narrows a run to one). Benchmarks set ``benchmark.group`` to ``"<operation> <size>"``
    so that one run prints the backends (and the physical references) side by side.

Persisted indexes
    Off (``SESSIONTREE_INDEX=off``) for the suites, whose opens measure the scan;
    ``benches/reopen.py`` measures reopening through them. Nothing here writes the
    user's index folder.

Smoke mode
    Under ``--benchmark-disable`` (``make test``, CI) every body still runs once and
    asserts its result, so a broken benchmark fails the test run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from _benchlib import (
    BACKENDS,
    DEFAULT_MAX,
    GENERATORS,
    SIZES,
    BenchFile,
    active_backends,
    active_sizes,
    bench_file,
    drop_opened,
)

HERE = Path(__file__).resolve().parent

@pytest.fixture(scope="session", autouse=True)
def _scans_not_persisted_indexes() -> Iterator[None]:
    """Opens in the suites scan the file (see the module notes)."""
    import os

    old = os.environ.get("SESSIONTREE_INDEX")
    os.environ["SESSIONTREE_INDEX"] = "off"
    yield
    if old is None:
        os.environ.pop("SESSIONTREE_INDEX", None)
    else:
        os.environ["SESSIONTREE_INDEX"] = old


# ---------------------------------------------------------------------- options
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sessiontree benchmarks")
    group.addoption(
        "--bench-size",
        default=None,
        metavar="SIZE",
        help="largest session size to benchmark (1MB, 10MB, 100MB or 1GiB; default env "
        f"SESSIONTREE_BENCH_MAX, else {DEFAULT_MAX})",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # ``size`` and ``backend`` are parametrised here (not with marks) so that the
    # active sizes follow --bench-size.
    if "size" in metafunc.fixturenames:
        metafunc.parametrize("size", active_sizes(metafunc.config))
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", active_backends())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the benches size by size, smallest first, then by generator and backend, the
    repeated-call rows of one session before the first-call rows (stable otherwise).

    Small results are then complete before the long 1 GiB part starts, and the opened
    session cache (:func:`opened`) can reuse one large session for consecutive tests.
    """

    def key(item: pytest.Item) -> tuple[int, int, int, int]:
        params = getattr(item, "callspec", None)
        p = params.params if params is not None else {}
        size = p.get("size")
        rank = SIZES.index(size) if size in SIZES else -1
        gen = p.get("gen")
        g = GENERATORS.index(gen) if gen in GENERATORS else -1
        backend = p.get("backend")
        b = BACKENDS.index(backend) if backend in BACKENDS else -1
        return (rank, g, b, 1 if p.get("phase") == "first" else 0)

    def here(item: pytest.Item) -> bool:
        return Path(str(item.fspath)).resolve().parent == HERE

    bench_items = [it for it in items if here(it)]
    if not bench_items:
        return
    order = {id(it): i for i, it in enumerate(items)}
    bench_items.sort(key=lambda it: (key(it), order[id(it)]))
    it_bench = iter(bench_items)
    items[:] = [next(it_bench) if here(x) else x for x in items]


@pytest.fixture
def session_file(size: str) -> BenchFile:
    """The generated (compacted) session of this size."""
    return bench_file(size, True)


@pytest.fixture
def uncompacted_file(size: str) -> BenchFile:
    """The same session with every compaction turned into a ``custom`` entry."""
    return bench_file(size, False)


@pytest.fixture(scope="session", autouse=True)
def _close_opened() -> Iterator[None]:
    yield
    drop_opened()


