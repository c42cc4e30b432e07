"""Shared fixtures: every test that takes ``backend`` runs once per backend.

``SESSIONTREE_BACKEND=python`` (or ``native``) narrows a whole run to one backend.
The conformance data is read from ``../shared`` beside the checkout (never copied in);
``SESSIONTREE_SHARED`` points elsewhere. Paths live in ``_shared.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from _shared import CASES, CORPUS, backends, native_available


@pytest.fixture(scope="session", autouse=True)
def _private_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Listings in tests use a catalog of their own, never the user's cache."""
    old = os.environ.get("SESSIONTREE_CATALOG")
    os.environ["SESSIONTREE_CATALOG"] = str(tmp_path_factory.mktemp("catalog") / "catalog.sqlite3")
    yield
    if old is None:
        os.environ.pop("SESSIONTREE_CATALOG", None)
    else:
        os.environ["SESSIONTREE_CATALOG"] = old


@pytest.fixture(scope="session", autouse=True)
def _private_caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Nothing a test runs writes the user's cache folder: ``XDG_CACHE_HOME`` is a
    temporary folder (the persisted indexes' default home; processes the tests start
    inherit it). In this process every session file is persisted at its first open
    (no size floor, no settling time), so every test also runs the native backend
    through its persisted indexes; ``SESSIONTREE_INDEX=off`` runs them without."""
    from sessiontree import _caches

    old = os.environ.get("XDG_CACHE_HOME")
    saved = _caches.INDEX_MIN_BYTES, _caches.INDEX_SETTLE
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    _caches.INDEX_MIN_BYTES, _caches.INDEX_SETTLE = 0, 0.0
    yield
    _caches.INDEX_MIN_BYTES, _caches.INDEX_SETTLE = saved
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session", autouse=True)
def _private_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reads or writes the user's agent stores: Pi's (``PI_CODING_AGENT_DIR``),
    Codex's (``CODEX_HOME``) and Claude Code's (``CLAUDE_CONFIG_DIR``) are empty
    temporary folders unless a test sets its own (a new user's trial failed ``make
    test``: its ``~/.codex`` held a rollout a test takes for missing)."""
    names = ("PI_CODING_AGENT_DIR", "CODEX_HOME", "CLAUDE_CONFIG_DIR")
    old = {n: os.environ.get(n) for n in names}
    for n in names:
        os.environ[n] = str(tmp_path_factory.mktemp(n.lower()))
    yield
    for n, v in old.items():
        if v is None:
            os.environ.pop(n, None)
        else:
            os.environ[n] = v


@pytest.fixture(params=backends())
def backend(request: pytest.FixtureRequest) -> str:
    """The backend name under test: ``"python"`` or ``"native"``."""
    if request.param == "native" and not native_available():
        pytest.fail("the native extension is not built: run `make build` (maturin develop --release)")
    return request.param


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"conformance corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def cases_dir() -> Path:
    if not CASES.is_dir():
        pytest.skip(f"damaged-file cases not found at {CASES}")
    return CASES
