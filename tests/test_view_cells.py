"""A listing's column cut and padded at once (``view.padded``) is each text as
``pad(fit(t, w), w)`` (``start``: ``pad(fit_start(t, w), w)``) makes it alone; a name
folded between its parts (``view.fold_name``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.view import cells, fit, fit_start, fold_name, pad, padded

_CHARS = "ab …/-xyz中文😀é\u0301\u200d\t\n\x00\x1b\x7f"  # controls take no cell (adversary 56b)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(_CHARS), max_size=14), max_size=6), st.integers(-1, 16),
       st.booleans())
def test_a_column_as_each_alone(texts: list[str], width: int, start: bool) -> None:
    cut = fit_start if start else fit
    assert padded(texts, width, start=start) == [pad(cut(t, width), width) for t in texts]


_MARKS = "/-_.:@ "


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab/-_.:@ 中😀é\u0301"), max_size=40), st.integers(-1, 16))
def test_a_name_folds_between_its_parts(text: str, width: int) -> None:
    """The lines give the name back; each fits (a character wider than the line alone
    on it); a line ends after a mark unless the next part is longer than a line."""
    lines = fold_name(text, width)
    assert "".join(lines) == text
    if width < 1 or cells(text) <= width:
        assert lines == [text]
        return
    for k, line in enumerate(lines):
        assert line and (cells(line) <= width or len(line.rstrip("\u0301")) == 1), (lines, width)
        if k + 1 < len(lines) and line[-1] not in _MARKS:
            # Cut inside a part: a line of that part alone, the part wider than a line.
            rest = "".join(lines[k:])
            part = rest[:min([i + 1 for i, c in enumerate(rest) if c in _MARKS] or [len(rest)])]
            assert not any(c in _MARKS for c in line) and cells(part) > width, (lines, width)


def test_a_model_name_folds_at_its_marks() -> None:
    assert fold_name("anthropic/claude-opus-4-5", 15) == ["anthropic/", "claude-opus-4-5"]
    assert fold_name("amazon-bedrock/us.anthropic.claude-opus-4-20250514-v1:0", 16) == [
        "amazon-bedrock/", "us.anthropic.", "claude-opus-4-", "20250514-v1:0"]
    assert fold_name("abcdefghijklmnopqrstuvwxyz", 10) == ["abcdefghij", "klmnopqrst", "uvwxyz"]
