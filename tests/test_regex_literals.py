"""The runs of ASCII letters and digits every match of a ``re:`` pattern holds
(``catalog/_literals.py``), which the first search's prefilter looks for: held to the
``regex`` package itself, the engine that judges the texts."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.catalog._literals import FOLDS, may_match, required_runs

FLAGS = regex.IGNORECASE | regex.VERSION0  # as catalog._search compiles a re: pattern


def test_runs_of_patterns() -> None:
    table = {
        r"\bfoo\w+bar": ["foo", "bar"], "compil(e|ing)": ["compil"], "(ab)+cd": ["ab", "cd"], "(ab)*cd": ["cd"],
        "abc?": ["ab"], "(?i)Hello World": ["hello", "world"], "(?x) hel lo # c": ["hello"], r"a\.b": ["a", "b"],
        r"\x41\x42": ["ab"], "(?-i:ABC)d": ["abc", "d"], "(?>ab)c": ["ab", "c"], "x++yz": ["x", "yz"],
        "foo(?=bar)": ["foo"], "(?!no)yes": ["yes"], "x|y": [], "é": [], "[ab]c": ["c"], "(?P<n>ab)(?P=n)": ["ab"],
        # regex reads these otherwise than re, or re cannot: no runs.
        "(?:abc){e<=1}": [], r"\p{L}abc": [], "(?V1)abc": [], "(?f)strasse": [], r"a\{b": [], "a{2}b": ["a", "b"],
        "(?(DEFINE)(?<x>a))b": [], r"\mabc": [], "(": [], "[[:alpha:]abc]": [], "[[:digit:]]x": [],
        "a[[]bc": [], "foo bar(?x)": [], "[Z-a]bc": [], "(?>(?:abc){e<=1})": [], "(?>x[[:alpha:]abc])": [],
        "(?:(?>ab{e<=1}))+c": [], "(?=a{e<=1})b": [],
    }
    for pattern, runs in table.items():
        assert required_runs(pattern) == runs, pattern


def test_the_folds_of_ascii_letters_are_those_the_prefilter_knows() -> None:
    """Under the search's flags ``regex`` holds no character equal to an ASCII letter
    or digit but the letters themselves and ``İ``, ``ſ`` and the Kelvin sign, which the
    prefilter looks for too (``src/search/rules.rs`` ``ASCII_FOLDS``, which has ``ı``
    for Python's ``re`` as well)."""
    one = regex.compile("[a-z0-9]", FLAGS)
    equals = {c for c in map(chr, range(0x80, 0x110000)) if not 0xD800 <= ord(c) < 0xE000 and one.fullmatch(c)}
    assert equals <= set(FOLDS)


_ATOMS = st.sampled_from(["a", "b", "ab", "the", "K", "s", "\\w", "\\d", ".", "\\s", "[ab]", "[^a]", "\\b", "x",
                          "Z9", "(?:ab|c)", "(a)", "\u017f", "-", " ", "[[:alpha:]ab]", "(?:ab){e<=1}", "[[:digit:]]",
                          "[[]", "(?>ab)", "(?>[[:alpha:]ab])", "(?>(?:ab){e<=1})"])


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    parts = []
    for atom in draw(st.lists(_ATOMS, min_size=1, max_size=6)):
        q = draw(st.sampled_from(["", "", "*", "+", "?", "{1,2}", "{0,1}", "+?"]))
        parts.append(f"(?:{atom}){q}" if q else atom)
        if draw(st.booleans()) and len(parts) > 1:
            parts[-2:] = [f"(?:{parts[-2]}|{parts[-1]})"]
    return "".join(parts)


@settings(max_examples=400, deadline=None)
@given(_patterns(), st.text(alphabet="abABkKsSxzZ9 -\u017f\u212a\u0130the", max_size=24))
def test_every_match_holds_every_run(pattern: str, text: str) -> None:
    m = regex.search(pattern, text, FLAGS)
    if m is None:
        return
    runs = required_runs(pattern)
    for run in runs:
        assert regex.search(regex.escape(run), m.group(), FLAGS), (pattern, text, run)
    assert may_match(text, runs), (pattern, text)


def test_may_match() -> None:
    assert may_match("A ZEBRA cake", ["zebra", "cake"]) and not may_match("A ZEBRA", ["zebra", "cake"])
    assert may_match("anything", []) and may_match("\u017fee", ["see"]) and may_match("\u212aiwi", ["zzz"])
