"""What a warm `usage` or `search` imports before it answers (issue 25: most of a warm
command's time is the interpreter and its imports, docs/BENCHMARKS.md).

``sessiontree.view`` hands out its names lazily (each from its module when first
used): a command that shows no entry does not import the viewers' tables. A page of
hits answered from the search index does not import the Python scanner
(``catalog._extract``, with the reader and orjson behind it). Nor do they import
``dataclasses`` (with ``inspect``, ``ast``, ``dis`` and ``tokenize`` behind it) or
orjson (which imports ``dataclasses``, ``uuid`` and ``platform``): together about 14 ms
of a warm run's 86 (docs/BENCHMARKS.md, issue 25); their JSON is small and plain, and
the standard library writes it to the same bytes. These tests hold the imports, not
timings: each fails if an eager import comes back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from sessiontree import LoadReportWarning, view
from sessiontree.view import _HOMES

from _shared import native_available
from test_catalog import make_root

NOT_AT_START = {"dataclasses", "inspect", "orjson", "rich"}
"""Imported by no warm ``usage`` or ``search`` page, with or without ``--json``."""
HEAVY_VIEW = ("sessiontree.view._entries", "sessiontree.view._drawing", "sessiontree.view._render",
              "sessiontree.view._context_lines", "sessiontree.schema")


def test_every_view_name_comes_from_its_module() -> None:
    """``__all__`` and the lazy table name the same names; each resolves to the object its
    module defines; an unknown name is an AttributeError."""
    import importlib

    assert sorted(_HOMES) == sorted(view.__all__)
    for name, module in _HOMES.items():
        assert getattr(view, name) is getattr(importlib.import_module(f"sessiontree.view.{module}"), name)
    with pytest.raises(AttributeError):
        view.no_such_name  # noqa: B018


def _imported(argv: list[str], env: dict[str, str]) -> set[str]:
    """The modules a ``python -m sessiontree`` run imported (``-X importtime``)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "sessiontree", *argv], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.skipif(not native_available(), reason="the native extension is not built")
def test_warm_usage_and_search_leave_the_viewers_and_the_scanner_alone(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        make_root(tmp_path / "sessions", 12, seed=5)
    root = str(tmp_path / "sessions")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "SESSIONTREE_CATALOG": str(tmp_path / "catalog.sqlite3"), "SESSIONTREE_BACKEND": "native"}
    subprocess.run([sys.executable, "-m", "sessiontree", "index", root, "--all"], check=True, env=env,
                   capture_output=True, timeout=120)
    for report in ("model", "daily", "session"):
        usage = _imported(["usage", report, root, "--all", "--json"], env)
        assert "sessiontree.catalog._usage" in usage  # the run did report
        assert not usage & set(HEAVY_VIEW), sorted(usage & set(HEAVY_VIEW))
        assert not usage & NOT_AT_START, sorted(usage & NOT_AT_START)
    for json_flag in ([], ["--json"]):
        search = _imported(["search", "the", root, "--all", *json_flag], env)
        assert "sessiontree.catalog._segments" in search  # answered from the index
        assert "sessiontree.catalog._extract" not in search
        assert not search & set(HEAVY_VIEW), sorted(search & set(HEAVY_VIEW))
        assert not search & NOT_AT_START, sorted(search & NOT_AT_START)
