"""A usage report's numbers (``view/_figures.py``): the extension's column writer
(``src/figures.rs``) gives what the Python rules give, for every style, on ints and
floats of every size, ties at each rounding place, signed zeros, infinities and NaN."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.view import _figures
from sessiontree.view._figures import STYLES, number_column, short_number

native = pytest.importorskip("sessiontree._sessiontree")

# Ties and edges of each rounding place and unit: x.x5 at every scale, the units'
# bounds and a hair either side, 2**53 and i64's ends.
_EDGES = [0.0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.005, 0.015, 99.995, 99.994, 100.0, 150.5, 999.5, 999.95, 1e3, 1049.999,
          1050.0, 9999.995, 1e4, 999_950.0, 1e6, 1e9, 1e12, 999_949_999_999_999.9, 1e15, 2.5e19, 1e300, 5e-324,
          math.inf, -math.inf, math.nan, 2.0**53, 2.0**63]
_INT_EDGES = [0, 1, -1, 999, 1000, -1000, 1050, 1049, 999_950, 999_949, 10**6, 10**9, 10**12, 10**15 - 1, 10**15,
              2**53 + 1, 2**63 - 1, -(2**63)]


def _rule(values: list[float], style: str) -> list[str]:
    return [_figures._one(x, style) for x in values]


@pytest.mark.parametrize("style", STYLES)
def test_the_edges(style: str) -> None:
    values = [*_EDGES, *(-x for x in _EDGES), *_INT_EDGES]
    assert native.number_column(values, style) == _rule(values, style)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.floats(), st.integers(-(2**63), 2**63 - 1),
                          st.integers(0, 10**7).map(lambda n: n / 1000),
                          st.integers(0, 10**8).map(lambda n: n * 50)), max_size=20),
       st.sampled_from(STYLES))
def test_native_is_the_rule(values: list[float], style: str) -> None:
    assert native.number_column(values, style) == _rule(values, style)


def test_what_the_extension_leaves_to_the_rules() -> None:
    """An int past 64 bits, a bool, an int subclass: the column is the rules'."""
    for odd in (2**64, -(2**63) - 1, True):
        assert native.number_column([1, odd], "full") is None
        assert number_column([1, odd], "full") == ["1", f"{odd:,}"]
    with pytest.raises(ValueError):
        number_column([1], "wide")


def test_short_numbers() -> None:
    assert [short_number(x) for x in (61_500_000, 4567, 802, 2.5e19, math.inf, 0.125)] == [
        "61.5M", "4.6k", "802", "2.5e19", "inf", "0.12"]


def test_an_iterator_of_values() -> None:
    """An iterator the extension leaves to the rules part-way is read once (adversary
    56: the rules got what the extension had not used up)."""
    assert number_column(iter([1, 2, 2**70, 3]), "full") == ["1", "2", f"{2**70:,}", "3"]
