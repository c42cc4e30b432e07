"""Paths and facts the tests share (a module of its own: ``benches/`` has a conftest too,
and two modules named ``conftest`` cannot both be imported by name)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SESSIONTREE_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "pi-golden"
CASES = SHARED / "cases"
DATA = Path(__file__).resolve().parent / "data"


def backends() -> list[str]:
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
