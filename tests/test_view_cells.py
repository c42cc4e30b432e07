"""A listing's column cut and padded at once (``view.padded``) is each text as
``pad(fit(t, w), w)`` (``start``: ``pad(fit_start(t, w), w)``) makes it alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.view import fit, fit_start, pad, padded

_CHARS = "ab …/-xyz中文😀é\u0301\u200d\t\n\x00\x1b\x7f"  # controls take no cell (adversary 56b)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(_CHARS), max_size=14), max_size=6), st.integers(-1, 16),
       st.booleans())
def test_a_column_as_each_alone(texts: list[str], width: int, start: bool) -> None:
    cut = fit_start if start else fit
    assert padded(texts, width, start=start) == [pad(cut(t, width), width) for t in texts]
