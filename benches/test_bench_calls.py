"""Every read call a user makes, python against native, first and repeated (issue 10,
items 1 and 5), on sessions of both generators (``_benchlib.GENERATORS``).

Two rows per (call, generator, size), each timing both backends:

* ``first``: open the session and make the call once, in a session nothing else has
  touched (the python backend pays its whole decode at open, the native backend the
  decode of what the call returns): what a user waits for after starting a script.
* ``again``: the same call on a session that has made it before (best of N): each row
  opens its own sessions, which make only this call before they are timed.

The calls are the ones the issue lists: ``get_tree`` alone and with a walk that reads
every node's entry, ``get_entries``, iteration, ``get_entry`` / ``in`` / ``[id]`` and
``get_children`` for every id, ``get_branch``, contexts at up to 32 leaves, labels of
every id, and a user's script (walk the tree, find the longest branch, build its
context, take its last 5 messages); plus ``open`` alone. ``extra_info["items"]`` is
what the call returned (ids asked, nodes walked, messages).
"""

from __future__ import annotations

import gc
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager

from _benchlib import (
    GENERATORS,
    BenchFile,
    active_backends,
    bench_file,
    drop_opened,
    scan_ids,
    set_info,
)


def _walk(roots: list[Any]) -> int:
    n, stack = 0, list(roots)
    while stack:
        node = stack.pop()
        node.entry["id"]
        n += 1
        stack.extend(node.children)
    return n


def _user_script(sm: SessionManager) -> int:
    """Walk the tree, find the longest branch, build its context, take the last 5."""
    best, best_depth = None, -1
    stack = [(node, 0) for node in sm.get_tree()]
    while stack:
        node, depth = stack.pop()
        if not node.children and depth > best_depth:
            best, best_depth = node.entry["id"], depth
        stack.extend((c, depth + 1) for c in node.children)
    last = sm.build_session_context(best).messages[-5:]
    assert last
    return best_depth + 1


_LEAVES: dict[str, list[str]] = {}


def _leaves(file: BenchFile) -> list[str]:
    """Up to 32 leaf ids spread over the file, found with the structure API once."""
    if file.path not in _LEAVES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with SessionManager.open(file.path) as sm:
                leaves = sm.get_leaf_ids()
        step = max(1, len(leaves) // 32)
        _LEAVES[file.path] = leaves[::step][:32]
    return _LEAVES[file.path]


# name -> (call(sm, ids, leaves) -> items returned)
CALLS: dict[str, Callable[[SessionManager, list[str], list[str]], int]] = {
    "open": lambda sm, ids, leaves: len(sm),
    "get_tree": lambda sm, ids, leaves: len(sm.get_tree()),
    "get_tree+walk": lambda sm, ids, leaves: _walk(sm.get_tree()),
    "get_entries": lambda sm, ids, leaves: len(sm.get_entries()),
    "iterate": lambda sm, ids, leaves: sum(1 for _ in sm),
    "get_entry every id": lambda sm, ids, leaves: sum(sm.get_entry(i) is not None for i in ids),
    "in every id": lambda sm, ids, leaves: sum(i in sm for i in ids),
    "[id] every id": lambda sm, ids, leaves: sum(1 for i in ids if sm[i]),
    "get_children every id": lambda sm, ids, leaves: sum(len(sm.get_children(i)) for i in ids),
    "get_branch": lambda sm, ids, leaves: len(sm.get_branch()),
    "contexts at leaves": lambda sm, ids, leaves: sum(len(sm.build_session_context(x).messages) for x in leaves),
    "labels every id": lambda sm, ids, leaves: sum(sm.get_label(i) is not None for i in ids),
    "user script": lambda sm, ids, leaves: _user_script(sm),
}

_IDS: dict[str, list[str]] = {}


def _ids(file: BenchFile) -> list[str]:
    if file.path not in _IDS:
        _IDS[file.path] = scan_ids(Path(file.path))
    return _IDS[file.path]


def _rounds(size: str, phase: str) -> int:
    if phase == "first":
        return {"1GiB": 1, "100MB": 3}.get(size, 5)
    return {"1GiB": 5, "100MB": 9}.get(size, 15)


def _open(path: str, backend: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SessionManager.open(path, backend=backend)


@pytest.mark.parametrize("gen", GENERATORS)
@pytest.mark.parametrize(("call", "phase"), [(c, p) for c in CALLS for p in ("first", "again") if c != "open" or p == "first"])
def test_call(benchmark: Any, size: str, gen: str, phase: str, call: str) -> None:
    """Both backends in one test, alternating round by round and taking turns at going
    first (what one leaves in the CPU's caches is what the other meets), so that the
    load of a shared machine moves both figures of a row alike: the ratio is the robust
    figure. A repeated call under 20 ms is made several times a round and timed per
    call. Each round's times go to ``extra_info["times"]`` (pytest-benchmark's own
    figure is a whole round of both backends)."""
    file = bench_file(size, True, gen)
    ids, leaves = _ids(file), _leaves(file)
    fn = CALLS[call]
    backends = active_backends()
    times: dict[str, list[float]] = {b: [] for b in backends}
    results: dict[str, int] = {}
    held: list[SessionManager] = []
    reps = 1

    def release() -> None:
        for sm in held:
            sm.close()
        held.clear()
        gc.collect()

    if phase == "first":
        drop_opened()

        def timed(backend: str) -> int:
            release()
            t0 = time.perf_counter()
            sm = _open(file.path, backend)
            held.append(sm)
            n = fn(sm, ids, leaves)
            times[backend].append(time.perf_counter() - t0)
            return n
    else:
        # Each row opens its own sessions and makes only its own call before it is
        # timed: a session's entries lie in memory where they were decoded (natively, in
        # the order they were first read: after a tree walk a copy of the list in file
        # order ran 6% slower), so a row shared with earlier rows would time their
        # side effects too.
        drop_opened()
        sessions = {b: _open(file.path, b) for b in backends}
        held.extend(sessions.values())
        took = 0.0
        for backend, sm in sessions.items():
            results[backend] = fn(sm, ids, leaves)  # the call has been made before
            t0 = time.perf_counter()
            fn(sm, ids, leaves)
            took = max(took, time.perf_counter() - t0)
        reps = max(1, min(1000, int(0.02 / max(took, 1e-6))))

        def timed(backend: str) -> int:
            sm = sessions[backend]
            t0 = time.perf_counter()
            for _ in range(reps):
                n = fn(sm, ids, leaves)
            times[backend].append((time.perf_counter() - t0) / reps)
            return n

    turn = [0]

    def round_of_both() -> int:
        order = backends if turn[0] % 2 == 0 else backends[::-1]
        turn[0] += 1
        for b in order:
            results[b] = timed(b)
        return results[order[-1]]

    items = benchmark.pedantic(round_of_both, rounds=_rounds(size, phase), warmup_rounds=0)
    release()
    assert items > 0 and len(set(results.values())) == 1, results
    set_info(benchmark, f"{call} ({phase}, {gen}) · {size}", file=file, backend="both",
             operation=f"call:{gen}:{call}:{phase}", generator=gen, call=call, phase=phase, items=items,
             times=times, calls_per_round=reps)
