"""A list of paths shown at once (``view.shown_paths``, as a report by session and
``ls`` show thousands) is each path as ``view.shown_path`` shows it alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.view import shown_path, shown_paths

# Characters each rule treats apart: a shell's specials, a space, controls, a bidi
# override, an invisible one, a lone surrogate (a byte os.fsdecode could not decode),
# the separator the check joins with, and letters that need nothing.
_CHARS = "ab/.-_é中😀 '$\\!*\n\x1b\x7f\u202e\u200b\udcff~=%"


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(_CHARS), max_size=12), max_size=8))
def test_shown_together_as_alone(paths: list[str]) -> None:
    assert shown_paths(paths) == [shown_path(p) for p in paths]


def test_paths_that_need_nothing_are_kept_and_one_that_needs_quotes_is_quoted() -> None:
    plain = [f"/home/u/--home-u-p--/2026-01-0{i}T00-00-00-000Z_x.jsonl" for i in range(1, 4)]
    assert shown_paths(plain) == plain
    assert shown_paths([*plain, "/tmp/a b.jsonl", "", "/tmp/\udcff.jsonl"]) == [
        *plain, "'/tmp/a b.jsonl'", "''", "$'/tmp/\\xff.jsonl'"]


def test_any_iterable_of_paths() -> None:
    """An iterator is read once (adversary 56: ``all`` used it up, giving ``[]``)."""
    assert shown_paths(iter(["a b", "c"])) == ["'a b'", "c"]
