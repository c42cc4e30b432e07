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
NOT_IN_USAGE = {"typing", "shutil", "bz2", "lzma"}
"""Nor by a warm ``usage --json``: ``typing`` (the package's modules import it only for
type checkers; ``_tuples.NamedTuple`` stands in for ``typing.NamedTuple``), ``shutil``
with ``bz2`` and ``lzma`` (argparse's help formatter imports it for every argument added;
``cli._columns`` gives it the width). About 4 ms of 60 (docs/BENCHMARKS.md, issue 25)."""
NOT_IN_SEARCH = {"shutil", "bz2", "lzma"}
"""Nor by a warm ``search`` (``typing`` is: ``catalog._search``'s named tuples)."""
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
        for json_flag in ([], ["--json"]):  # the table too: piped, it is written without rich
            usage = _imported(["usage", report, root, "--all", *json_flag], env)
            assert "sessiontree.catalog._usage" in usage  # the run did report
            assert not usage & set(HEAVY_VIEW), sorted(usage & set(HEAVY_VIEW))
            assert not usage & NOT_AT_START, sorted(usage & NOT_AT_START)
            assert not usage & NOT_IN_USAGE, sorted(usage & NOT_IN_USAGE)
    for json_flag in ([], ["--json"]):
        search = _imported(["search", "the", root, "--all", *json_flag], env)
        assert "sessiontree.catalog._segments" in search  # answered from the index
        assert "sessiontree.catalog._extract" not in search
        assert not search & set(HEAVY_VIEW), sorted(search & set(HEAVY_VIEW))
        assert not search & NOT_AT_START, sorted(search & NOT_AT_START)
        assert not search & NOT_IN_SEARCH, sorted(search & NOT_IN_SEARCH)
    # The first report after an append brings the catalog up to date natively: not with
    # the Python loader's line rules (``catalog._pyscan``, ``_reader``, orjson) either.
    from test_catalog import _append

    for report in ("model", "session"):
        grown = sorted(Path(root).rglob("*.jsonl"))[3]
        _append(grown, "one more")
        usage = _imported(["usage", report, root, "--all"], env)
        assert not usage & NOT_AT_START, sorted(usage & NOT_AT_START)
        assert not usage & NOT_IN_USAGE, sorted(usage & NOT_IN_USAGE)
        assert not usage & {"sessiontree.catalog._pyscan", "sessiontree._reader", "sessiontree._jsonl"}, sorted(usage)
    # A search that meets a file the index does not hold whole reads its header line with
    # the stdlib's json (``catalog._search._header_ctx``), not the Python loader.
    _append(sorted(Path(root).rglob("*.jsonl"))[5], "one more")
    search = _imported(["search", "the", root, "--all"], env)
    assert "sessiontree.catalog._segments" in search
    assert not search & NOT_AT_START, sorted(search & NOT_AT_START)
    assert not search & {"sessiontree.catalog._pyscan", "sessiontree._reader", "sessiontree._jsonl"}, sorted(search)


def test_the_stand_in_named_tuple_makes_typings_class() -> None:
    """``_tuples.NamedTuple`` builds what ``typing.NamedTuple`` builds: fields in order,
    defaults, methods, docstring, repr, equality, ``_asdict``, pickling (its annotations
    stay the strings ``from __future__ import annotations`` leaves, not ``ForwardRef``s)."""
    import pickle
    import typing

    from sessiontree._tuples import NamedTuple as Stand

    made = []
    for base in (typing.NamedTuple, Stand):
        class Point(base):  # type: ignore[misc, valid-type]
            """A point."""

            x: int
            y: str = "b"

            def twice(self) -> int:
                return 2 * self.x

        made.append(Point)
    a, b = (cls(3) for cls in made)
    assert a == b and a._fields == b._fields == ("x", "y") and a._asdict() == b._asdict()
    assert repr(a) == repr(b) == "Point(x=3, y='b')" and a.twice() == b.twice() == 6
    assert made[1].__doc__ == "A point." and list(made[1].__annotations__) == list(made[0].__annotations__)
    assert made[1]._field_defaults == {"y": "b"} and isinstance(b, tuple)
    from sessiontree.catalog import UsageLine

    line = UsageLine("k", 1, 2, 3, 4, 5, 6, 0.5)
    assert pickle.loads(pickle.dumps(line)) == line and line.as_dict()["cacheRead"] == 4


def test_a_lazy_pattern_is_its_pattern() -> None:
    """``_lazy.lazy_pattern`` answers as ``re.compile`` of its arguments (the view's and
    the catalog's patterns are compiled when first used, not at a command's start)."""
    import re

    from sessiontree._lazy import lazy_pattern

    for pattern, flags, texts in (("[\u2028\u2029]|\r\n?", 0, ["a\r\nb\u2028", "plain", ""]),
                                  (r"(\d{2})-(\w+)", re.ASCII, ["12-ab 34-٣", "--"]),
                                  (b"\x7f|\xc2[\x80-\x9f]", 0, [b"a\x7f\xc2\x85", b""])):
        lazy, real = lazy_pattern(pattern, flags), re.compile(pattern, flags)
        for text in texts:
            assert lazy.sub("_" if isinstance(text, str) else b"_", text) == real.sub(
                "_" if isinstance(text, str) else b"_", text)
            assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
            assert (lazy.fullmatch(text) is None) == (real.fullmatch(text) is None)
        assert lazy.pattern == real.pattern and lazy.flags == real.flags


def test_version_is_answered_before_argparse(tmp_path: Path) -> None:
    """``--version`` (alone, or after top-level options with accepted values) prints
    the version without argparse, the subcommands or ``importlib.metadata`` (130 of
    its 150 ms CPU, docs/BENCHMARKS.md); the line is the installed distribution's."""
    from importlib.metadata import version

    env = {**os.environ, "HOME": str(tmp_path)}
    for argv in (["--version"], ["--color", "never", "--backend=python", "--version"]):
        imported = _imported(argv, env)
        assert not imported & {"argparse", "importlib.metadata", "rich", "sessiontree.cli._parser",
                               "sessiontree.cli._common", "sessiontree.cli.info"}, sorted(imported)
        out = subprocess.run([sys.executable, "-m", "sessiontree", *argv], capture_output=True, text=True, env=env,
                             timeout=60)
        assert out.returncode == 0 and out.stdout == f"sessiontree {version('sessiontree')}\n", out


@pytest.mark.parametrize("argv", [["--color", "never", "--version"], ["--backend=native", "--version", "info"],
                                  ["--version", "--bogus"]])
def test_asks_version_agrees_with_argparse(argv: list[str]) -> None:
    """Where the early answer says "version", argparse would have printed it too."""
    from sessiontree.cli._parser import build_parser
    from sessiontree.cli._version import asks_version

    assert asks_version(argv)
    with pytest.raises(SystemExit) as e:
        build_parser(argv).parse_known_args(argv)
    assert e.value.code == 0


@pytest.mark.parametrize("argv", [[], ["info", "--version"], ["--color", "bogus", "--version"], ["--color"],
                                  ["--color", "--version"], ["--vers"], ["-h", "--version"], ["x", "--version"]])
def test_other_spellings_are_left_to_argparse(argv: list[str]) -> None:
    from sessiontree.cli._version import asks_version

    assert not asks_version(argv)


def test_the_start_is_frozen_out_of_the_collectors_passes(tmp_path: Path) -> None:
    """A command run as its own process leaves the objects of its start (parser,
    imports) to the permanent generation, the collector on, its first generation
    collected every 100,000 objects; called as a library function, ``main`` freezes
    nothing of its caller's and leaves its thresholds."""
    code = ("import gc, sys; from sessiontree.cli import main; sys.argv = ['sessiontree', 'ls', sys.argv[1]]; "
            "main(); print(gc.get_freeze_count() > 10000, gc.isenabled(), gc.get_threshold()[0])")
    env = {**os.environ, "HOME": str(tmp_path), "SESSIONTREE_CATALOG": "off"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.split()[-3:] == ["True", "True", "100000"], out
    code = ("import gc, sys; from sessiontree.cli import main; main(['ls', sys.argv[1]]); "
            "print(gc.get_freeze_count(), gc.isenabled(), gc.get_threshold()[0])")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.split()[-3:] == ["0", "True", "700"], out
