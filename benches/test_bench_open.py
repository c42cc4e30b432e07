"""Open (index the file) and open + build_session_context, against the physical limit.

Groups ``open · SIZE`` and ``open+context · SIZE`` each hold four rows: the two
backends, ``count_newlines`` (memchr over the mapped file: the scan limit) and
``read_once`` (reading the file's bytes into one reused buffer). Everything runs on a
warm page cache (the file was just generated or read by the previous round).
"""

from __future__ import annotations

import gc
import os
import warnings
from typing import Any

import pytest

from sessiontree import SessionManager

from _benchlib import BenchFile, assert_context, bench_file, read_once, rounds_for, set_info

REFERENCE_GROUPS = ("open", "open+context")


def _native_count_newlines() -> Any:
    try:
        from sessiontree._sessiontree import count_newlines
    except ImportError:
        return None
    return count_newlines


def _open(path: str, backend: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SessionManager.open(path, backend=backend)


def _teardown(holder: list[Any]) -> None:
    for sm in holder:
        if isinstance(sm, SessionManager):
            sm.close()
    holder.clear()
    gc.collect()


@pytest.mark.parametrize("group", REFERENCE_GROUPS)
@pytest.mark.parametrize("reference", ["count_newlines", "read_once"])
def test_scan_limit(benchmark: Any, session_file: BenchFile, reference: str, group: str) -> None:
    """The physical references: memchr newline count and one read of the file."""
    set_info(benchmark, f"{group} · {session_file.size_label}", file=session_file,
             operation=f"limit:{reference}", backend=reference)
    if reference == "count_newlines":
        count = _native_count_newlines()
        if count is None:
            pytest.skip("the native extension is not built (no count_newlines)")
        n = benchmark(count, session_file.path)
        # header + one line per entry, each ended by LF
        assert n == session_file.entries + 1
    else:
        buf = bytearray(8 << 20)
        n = benchmark(read_once, session_file.path, buf)
        assert n == os.path.getsize(session_file.path)


def test_open(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    """``SessionManager.open``: read and index the whole file (no context yet)."""
    set_info(benchmark, f"open · {session_file.size_label}", file=session_file, backend=backend,
             operation="open")
    holder: list[Any] = []
    seen: list[tuple[Any, ...]] = []

    def target() -> SessionManager:
        sm = _open(session_file.path, backend)
        holder.append(sm)
        return sm

    def check_and_close() -> None:
        # the asserts run on every opened session, before the teardown closes it
        for sm in holder:
            seen.append((sm.backend, len(sm), sm.leaf_id, len(sm.load_report)))
        _teardown(holder)

    benchmark.pedantic(target, setup=lambda: _teardown(holder), teardown=check_and_close,
                       rounds=rounds_for(session_file.size_label), warmup_rounds=1)
    check_and_close()  # under --benchmark-disable there is no teardown
    assert seen
    assert set(seen) == {(backend, session_file.entries, session_file.leaf_id, 0)}, set(seen)


@pytest.mark.parametrize("compacted", [True, False], ids=["compacted", "uncompacted"])
def test_open_and_context(benchmark: Any, size: str, backend: str, compacted: bool) -> None:
    """Open + ``build_session_context`` at the leaf: what an agent does on resume."""
    file = bench_file(size, compacted)
    kind = "" if compacted else " (uncompacted)"
    set_info(benchmark, f"open+context{kind} · {size}", file=file, backend=backend,
             operation="open+context" if compacted else "open+context:uncompacted")
    holder: list[Any] = []

    def target() -> Any:
        sm = _open(file.path, backend)
        holder.append(sm)
        return sm.build_session_context()

    ctx = benchmark.pedantic(target, setup=lambda: _teardown(holder), teardown=lambda: _teardown(holder),
                             rounds=rounds_for(size), warmup_rounds=1)
    _teardown(holder)
    assert_context(ctx, compacted)
    benchmark.extra_info["context_messages"] = len(ctx.messages)
