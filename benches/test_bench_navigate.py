"""Reading an opened session: get_entry, get_branch, get_tree, build_session_context.

The session is opened once per (file, backend) and reused (see ``_benchlib.opened``),
so these time only the call itself. ``get_entry`` cycles through 64 ids spread evenly
over the file, so its mean is over entries of every kind and size. ``get_branch``,
``get_tree`` and the context return work proportional to what they return; their
``extra_info["items"]`` (entries or messages returned) lets the report show a cost per
returned item.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from _benchlib import BenchFile, assert_context, bench_file, opened, set_info


def test_get_entry(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    sm = opened(session_file, backend)
    ids = session_file.sample_ids
    assert ids
    cycle = itertools.cycle(ids)
    set_info(benchmark, f"get_entry · {session_file.size_label}", file=session_file, backend=backend,
             operation="get_entry", items=1, sample_ids=len(ids))

    def target() -> Any:
        return sm.get_entry(next(cycle))

    entry = benchmark(target)
    assert isinstance(entry, dict) and entry["id"] in ids
    for eid in ids:  # every sampled id resolves, in both backends
        assert sm.get_entry(eid)["id"] == eid


def test_get_branch(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    sm = opened(session_file, backend)
    assert sm.leaf_id == session_file.leaf_id
    branch = benchmark(sm.get_branch)
    assert branch and branch[-1]["id"] == session_file.leaf_id
    assert branch[0]["parentId"] is None
    set_info(benchmark, f"get_branch · {session_file.size_label}", file=session_file, backend=backend,
             operation="get_branch", items=len(branch))


def _count_nodes(roots: list[Any]) -> int:
    n, stack = 0, list(roots)
    while stack:
        node = stack.pop()
        n += 1
        stack.extend(node.children)
    return n


def test_get_tree(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    sm = opened(session_file, backend)
    tree = benchmark(sm.get_tree)
    assert tree
    assert _count_nodes(tree) == session_file.entries
    set_info(benchmark, f"get_tree · {session_file.size_label}", file=session_file, backend=backend,
             operation="get_tree", items=session_file.entries, roots=len(tree))


@pytest.mark.parametrize("compacted", [True, False], ids=["compacted", "uncompacted"])
def test_build_session_context(benchmark: Any, size: str, backend: str, compacted: bool) -> None:
    file = bench_file(size, compacted)
    sm = opened(file, backend)
    ctx = benchmark(sm.build_session_context)
    assert_context(ctx, compacted)
    kind = "compacted" if compacted else "uncompacted"
    set_info(benchmark, f"context ({kind}) · {size}", file=file, backend=backend,
             operation=f"context:{kind}", items=len(ctx.messages))
