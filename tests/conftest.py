"""Shared fixtures: every test that takes ``backend`` runs once per backend.

``SESSIONTREE_BACKEND=python`` (or ``native``) narrows a whole run to one backend.
The conformance data is read from ``../shared`` beside the checkout (never copied in);
``SESSIONTREE_SHARED`` points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SESSIONTREE_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "pi-golden"
CASES = SHARED / "cases"
DATA = Path(__file__).resolve().parent / "data"


def _backends() -> list[str]:
    chosen = os.environ.get("SESSIONTREE_BACKEND", "").strip()
    if chosen in ("python", "native"):
        return [chosen]
    return ["python", "native"]


def native_available() -> bool:
    try:
        import sessiontree._sessiontree  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(params=_backends())
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
