"""Shared fixtures: every test that takes ``backend`` runs once per backend.

``SESSIONTREE_BACKEND=python`` (or ``native``) narrows a whole run to one backend.
The conformance data is read from ``../shared`` beside the checkout (never copied in);
``SESSIONTREE_SHARED`` points elsewhere. Paths live in ``_shared.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _shared import CASES, CORPUS, backends, native_available


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
