"""Usage sums at the edge of a double (issue 24, item 3; CONTRACT §7, "Usage").

``math.fsum`` raised ``OverflowError`` on 1e308 + 1e308 (or not, depending on the order
of the terms, which differs between the backends' readers) and ``ValueError`` on
1e400 + -1e400 (valid JSON, read as ±inf), so ``sessiontree usage`` died with a
traceback. The rule now: one rounding of the exact sum, ±inf beyond the double range,
infinite terms as IEEE adds them; the same whatever the order.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sessiontree.catalog._usage import exact_sum

from _shared import backends

EDGE = [1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -5e-324, 0.0, -0.0, 1.0,
        0.1, 1e16, 2.0**53 + 2]


def reference(values: list[float]) -> float:
    """Brute force: Fractions, one rounding, IEEE's infinities."""
    if any(v != v for v in values):
        return math.nan
    pos = any(v == math.inf for v in values)
    neg = any(v == -math.inf for v in values)
    if pos or neg:
        return math.nan if pos and neg else (math.inf if pos else -math.inf)
    total = sum((Fraction(v) for v in values), Fraction(0))
    try:
        return float(total)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


def same(a: float, b: float) -> bool:
    return (a != a and b != b) or (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a == b == 0)


floats = st.one_of(st.floats(allow_nan=False), st.sampled_from(EDGE + [math.inf, -math.inf]))


@settings(max_examples=400, deadline=None)
@given(st.lists(floats, max_size=12), st.randoms())
def test_exact_sum_is_defined_and_independent_of_order(values: list[float], rnd) -> None:  # type: ignore[no-untyped-def]
    want = reference(values)
    got = exact_sum(values)
    assert same(got, want), (values, got, want)
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert same(exact_sum(shuffled), got)


def test_exact_sum_edges() -> None:
    assert exact_sum([1e308, 1e308]) == math.inf
    assert exact_sum([-1e308, -1e308]) == -math.inf
    assert exact_sum([1e308, 1e308, -1e308]) == 1e308  # fsum's partials overflow; the sum does not
    assert exact_sum([math.inf, -math.inf]) != exact_sum([math.inf, -math.inf])  # NaN
    assert exact_sum([math.inf, 1e308, 1e308]) == math.inf
    assert exact_sum([0.1] * 10) == 1.0 and exact_sum([]) == 0.0


def _session(folder: Path, name: str, costs: list[str], tokens: list[str]) -> None:
    lines = [json.dumps({"type": "session", "version": 3, "id": name, "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": f"/p/{name}"})]
    parent = None
    for i, (cost, tok) in enumerate(zip(costs, tokens)):
        eid = f"{name}-{i}"
        e = {"type": "message", "id": eid, "parentId": parent, "timestamp": f"2026-01-0{1 + i % 3}T00:00:00.000Z",
             "message": {"role": "assistant", "content": [], "provider": "p", "model": f"m{i % 2}",
                         "usage": {"input": "TOK", "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1,
                                   "cost": {"total": "COST"}}, "timestamp": 1767225600000 + i}}
        lines.append(json.dumps(e).replace('"COST"', cost).replace('"TOK"', tok))
        parent = eid
    (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("group", ["daily", "session", "model", "project"])
def test_usage_command_on_edge_numbers(tmp_path: Path, group: str) -> None:
    """Every backend, with and without the catalog: exit 0, one answer."""
    root = tmp_path / "s"
    root.mkdir()
    _session(root, "a", ["1e308", "1e308", "1"], ["1e308", "1e308", "3"])
    _session(root, "b", ["1e400", "-1e400"], ["5", "1e400"])
    _session(root, "c", ["-1e400", "2", "1.7976931348623157e308"], ["99999999999999999999999999999", "1", "2"])
    _session(root, "d", ["0.1", "0.2", "0.3"], ["1", "2", "3"])
    answers = []
    for backend in backends():
        for catalog in (str(tmp_path / f"cat-{backend}.sqlite3"), "off"):
            for _ in range(2):  # a second run answers from the catalog
                env = dict(os.environ, SESSIONTREE_BACKEND=backend, SESSIONTREE_CATALOG=catalog,
                           HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
                p = subprocess.run([sys.executable, "-m", "sessiontree", "usage", group, str(root), "--utc", "--json"],
                                   capture_output=True, text=True, env=env, timeout=120)
                assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
                answers.append(json.loads(p.stdout))
                plain = subprocess.run([sys.executable, "-m", "sessiontree", "usage", group, str(root), "--utc"],
                                       capture_output=True, text=True, env=env, timeout=120)
                assert plain.returncode == 0 and "Traceback" not in plain.stderr, plain.stderr
    assert all(a == answers[0] for a in answers)
    total = answers[0]["total"]
    # JSON has no infinities: they are written as null (orjson's spelling).
    assert total["records"] == 11 and total["cost"] is None and total["input"] is None
    if group == "session":
        by = {Path(x["key"]).stem: x for x in answers[0]["lines"]}
        assert by["a"]["cost"] is None and by["c"]["cost"] is None and by["d"]["cost"] == 0.6
        assert by["a"]["input"] is None and by["c"]["input"] == 99999999999999991433150857216  # + 3, rounded once


def test_json_output_never_spells_infinity() -> None:
    """The fallback encoder (taken for integers beyond 64 bits) wrote `Infinity` and
    `NaN`, which are not JSON; orjson writes null. Now both do."""
    from sessiontree.view import to_json_bytes

    for indent in (True, False):
        data = to_json_bytes({"big": 1 << 70, "x": [math.inf, {"y": -math.inf, "z": (math.nan, 1.5)}]}, indent=indent)
        assert json.loads(data, parse_constant=lambda c: pytest.fail(c)) == {
            "big": 1 << 70, "x": [None, {"y": None, "z": [None, 1.5]}]}


finite = st.one_of(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
                   st.sampled_from([0.1, 0.2, 0.3, 1e16, 1.0, 2.0**53, 1e-30, 5e-324, -0.0, 1e300]))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(finite, min_size=1, max_size=5), min_size=1, max_size=4))
@example([[1e16, 1.0, 1e-10], [0.1, 0.2, 0.3], [-1e16, -1.0, -1e-10]])  # half-way, broken by a third partial
def test_a_warm_session_report_rounds_each_line_once(tmp_path_factory: pytest.TempPathFactory,
                                                     costs: list[list[float]]) -> None:
    """A warm report by session takes its lines from the extension, each sum rounded
    there once (``UsageScan.report(..., lines=True)``): each line and the total equal
    one rounding of the exact sum (Fractions) and the report without the catalog."""
    from sessiontree import catalog
    from sessiontree.catalog import _usage

    from _shared import native_available

    if not native_available():
        pytest.skip("the native extension is not built")
    tmp = tmp_path_factory.mktemp("lines")
    root = tmp / "s"
    root.mkdir()
    for i, c in enumerate(costs):
        _session(root, f"s{i}", [repr(x) for x in c], [repr(float(int(abs(x)) % 1000)) for x in c])
    taken = []
    real = _usage._from_lines

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        taken.append(1)
        return real(*a, **k)

    _usage._from_lines = spy  # type: ignore[assignment]
    try:
        file = str(tmp / "c.sqlite3")
        catalog.usage("session", [str(root)], catalog=file)
        taken.clear()
        warm = catalog.usage("session", [str(root)], catalog=file)
    finally:
        _usage._from_lines = real  # type: ignore[assignment]
    assert taken == [1]  # the second, warm report
    assert warm == catalog.usage("session", [str(root)], no_cache=True)
    by = {Path(x.key).stem: x for x in warm.lines}
    for i, c in enumerate(costs):
        assert same(by[f"s{i}"].cost, reference(c)), (c, by[f"s{i}"])
    assert same(warm.total.cost, reference([x for c in costs for x in c]))
