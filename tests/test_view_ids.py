"""``view.id_width``: the ids ``tree`` and ``browse`` show, each cut to one width and
escaped, are all different and each names its id again (``view.resolve_id``), and the
width is the least that does it (held to a brute force)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.view import SHORT_ID, id_width

from _shared import chain_session, open_quiet


def _apart(ids: list[str], width: int) -> bool:
    return len({i[:width] for i in set(ids)}) == len(set(ids))


def _least(ids: list[str]) -> int:
    """The brute force: the first width from SHORT_ID at which the cut ids differ."""
    width = SHORT_ID
    while not _apart(ids, width):
        width += 1
    return width


# Few letters and lengths around SHORT_ID: prefixes of one another and long shared
# starts are common, as LangGraph's and UUIDv7 ids make them.
_IDS = st.lists(st.text(alphabet="ab/", min_size=1, max_size=4).map(lambda s: "abababa" + s)
                | st.text(alphabet="ab/-", min_size=1, max_size=14), max_size=12)


@settings(max_examples=3000, deadline=None)
@given(_IDS)
def test_the_width_is_the_least_that_tells_every_id_apart(ids: list[str]) -> None:
    assert id_width(ids) == _least(ids)


def test_an_id_that_is_a_prefix_of_another() -> None:
    """Trial 59: ``abcdefgh`` and ``abcdefgh/w1`` (a LangGraph checkpoint and its
    writes) both showed as ``abcdefgh``."""
    ids = ["abcdefgh", "abcdefgh/w1", "abcdefgh/w2", "00000000"]
    width = id_width(ids)
    assert width == 11 and _apart(ids, width)
    assert id_width(["abcdefgh", "abcdefgh/w1"]) == 9


def _env(tmp_path: Path) -> dict[str, str]:
    """A bare environment whose ``sessiontree`` is the one under test (the package this
    process imported: the installed one may be another checkout)."""
    import sessiontree

    return {"HOME": str(tmp_path / "h"), "XDG_CACHE_HOME": str(tmp_path / "c"), "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(Path(sessiontree.__file__).resolve().parents[1])}


def _tree_ids_open_their_entries(tmp_path: Path, ids: list[str]) -> None:
    """``tree --full`` of a chain of ``ids``: every row's id differs, and ``--leaf`` with
    it opens that entry."""
    f = tmp_path / "p.jsonl"
    chain_session(f, ids)
    env = _env(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env,
                              timeout=120)

    tree = run("tree", str(f), "--full", "--width", "1000")  # rows wider than the width are cut
    assert tree.returncode == 0, tree.stderr
    shown = [line.lstrip("* ").split()[0] for line in tree.stdout.splitlines() if line.strip()]
    assert len(shown) == len(ids) and len(set(shown)) == len(ids), tree.stdout
    for short, full in zip(shown, ids):
        got = run("context", str(f), "--leaf", short, "--json")
        assert got.returncode == 0 and json.loads(got.stdout)["leafId"] == full, (short, got.stderr)


def test_tree_shows_each_entry_by_an_id_it_takes(tmp_path: Path) -> None:
    _tree_ids_open_their_entries(tmp_path, ["abcdefgh", "abcdefgh/w1", "00000000"])


# An id holding a control, a bidi or an invisible character is shown escaped
# (``view.safe``); a backslash of its own is shown as it is.
_ODD_IDS = ["aa\x07bell", "bb\u202ertl", "cc\\back", "dd\ttab", "ee\u200bzw-long-id-0001", "ee\u200bzw-long-id-0002"]


def test_an_id_is_taken_back_as_it_is_shown(tmp_path: Path, backend: str) -> None:
    """Trial 59's leftover: ``tree`` showed ``aa\\x07bell`` and ``--leaf`` with it found
    no entry. The shown form, or a prefix of one shown form alone, names the entry; an
    id's own characters are taken first."""
    from sessiontree.view import AmbiguousIdError, resolve_id, safe

    f = tmp_path / "odd.jsonl"
    chain_session(f, _ODD_IDS)
    with open_quiet(f, backend) as sm:
        for eid in _ODD_IDS:
            assert resolve_id(sm, safe(eid)) == eid
        assert resolve_id(sm, "aa\\x07") == "aa\x07bell"
        assert resolve_id(sm, "bb\\u") == "bb\u202ertl"
        assert resolve_id(sm, "cc\\back") == "cc\\back"  # its own characters
        with pytest.raises(AmbiguousIdError):
            resolve_id(sm, "ee\\u200bzw")
        for missing in ("\\x", "aa\\x08", "zz\\n"):
            with pytest.raises(KeyError):
                resolve_id(sm, missing)


def test_tree_shows_odd_ids_that_leaf_takes(tmp_path: Path) -> None:
    _tree_ids_open_their_entries(tmp_path, _ODD_IDS)


def test_ids_alike_as_shown_are_ambiguous(tmp_path: Path, backend: str) -> None:
    """Adversary 60b: ``safe`` leaves a backslash as it is, so ``p\\x07`` (a
    backslash, ``x07``) and ``p`` + BEL show alike; the text named the first one met, or
    always the one whose own characters it is. Either way it is ambiguous, as is any
    text two ids are as they are or as shown; the CLI says so."""
    from sessiontree.view import AmbiguousIdError, resolve_id

    f = tmp_path / "alike.jsonl"
    chain_session(f, ["p\x07\x08", "p\\x07\x08", "abcdefgh\x07", "abcdefgh\\x07", "zz\x07only"])
    with open_quiet(f, backend) as sm:
        for text in ("p\\x07\\x08", "abcdefgh\\x07", "p\\x07"):
            with pytest.raises(AmbiguousIdError) as e:
                resolve_id(sm, text)
            assert e.value.count == 2
        assert resolve_id(sm, "zz\\x07") == "zz\x07only"
    env = _env(tmp_path)
    got = subprocess.run([sys.executable, "-m", "sessiontree", "context", str(f), "--leaf", "abcdefgh\\x07"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert got.returncode == 1 and "is ambiguous" in got.stderr, got.stderr


# Adversary round 60: ``safe`` shows a control as an escape and a backslash as it is, so
# one id's shown cut could be another id's whole shown form (``abcdefg`` + BEL + ``xyz``
# cut to 8 showed as ``abcdefg\x07``, the id ``abcdefg\x07``: a backslash, ``x07``) or
# a prefix of it. Ids drawn from the characters that make such clashes.
# Lone surrogates are two high ones: a high one before a low one is a pair, which JSON
# reads back as one character.
_CLASH = ["a", "\\", "x", "0", "7", "\x07", "\u200b", "\ud800", "\udbff"]
_CLASH_IDS = st.lists(st.text(alphabet=_CLASH, min_size=0, max_size=8).map(lambda s: "abcdefg" + s)
                      | st.text(alphabet=_CLASH, min_size=1, max_size=14), min_size=1, max_size=7, unique=True)


def _named(sm: Any, ids: list[str], width: int) -> dict[str, object]:
    """What each id's shown cut at ``width`` names: the id, or the error raised."""
    from sessiontree.view import AmbiguousIdError, resolve_id, safe

    got: dict[str, object] = {}
    for i in ids:
        try:
            got[i] = resolve_id(sm, safe(i[:width]))
        except (KeyError, AmbiguousIdError) as e:
            got[i] = e
    return got


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=_CLASH_IDS)
def test_every_shown_cut_names_its_id(tmp_path: Path, backend: str, ids: list[str]) -> None:
    """The brute force: the least width at which every id's shown cut, given back to
    ``resolve_id``, names that id is ``id_width``'s (ids that show alike whole are
    named by no width: their cuts are ambiguous, said to show alike, never another id)."""
    from sessiontree.view import AmbiguousIdError, safe

    f = Path(tempfile.mkdtemp(dir=tmp_path)) / "s.jsonl"
    chain_session(f, ids)
    alike = {i for i in ids if sum(safe(j) == safe(i) for j in ids) > 1}
    with open_quiet(f, backend) as sm:
        least = next(w for w in range(SHORT_ID, max(SHORT_ID, *map(len, ids)) + 1)
                     if all(got == i for i, got in _named(sm, ids, w).items() if i not in alike))
        width = id_width(ids)
        assert width == least, (ids, width, least)
        for i, got in _named(sm, ids, width).items():
            if i in alike:
                assert isinstance(got, AmbiguousIdError) and got.alike, (i, got)
            else:
                assert got == i, (i, got)


def test_a_cut_is_never_another_ids_shown_form(tmp_path: Path, backend: str) -> None:
    """Adversary round 60's two cases: at the width ``tree`` used, ``abcdefg`` + BEL +
    ``xyz`` showed as the whole of the id ``abcdefg\\x07`` (and named it), and
    ``abcdefgh`` + BEL and ``abcdefgh\\x07QQ`` showed alike at width 12."""
    for ids, width in ((["abcdefg\x07xyz", "abcdefg\\x07"], 11), (["abcdefgh\x07", "abcdefgh\\x07QQ"], 13)):
        assert id_width(ids) == width
        f = Path(tempfile.mkdtemp(dir=tmp_path)) / "s.jsonl"
        chain_session(f, ids)
        with open_quiet(f, backend) as sm:
            assert _named(sm, ids, width) == {i: i for i in ids}
    _tree_ids_open_their_entries(tmp_path, ["abcdefg\x07xyz", "abcdefg\\x07", "00000000"])


def test_ids_that_show_alike_are_named_apart(tmp_path: Path) -> None:
    """Ids that show alike (``p`` + BEL, ``p\\x07``) are told apart by no more
    characters: the message does not ask for them, names the ids as JSON strings (which
    differ) and says how the one holding a control is given, which then names it."""
    f = tmp_path / "alike.jsonl"
    ids = ["abcdefgh\x07", "abcdefgh\\x07", "0000000000"]
    chain_session(f, ids)
    env = _env(tmp_path)

    def leaf(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sessiontree", "context", str(f), "--leaf", text, "--json"],
                              capture_output=True, text=True, env=env, timeout=120)

    for text in ("abcdefgh\\x07", "abcdefgh\\x0"):
        got = leaf(text)
        assert got.returncode == 1 and "is ambiguous" in got.stderr and "show alike" in got.stderr, got.stderr
        assert "give more characters" not in got.stderr, got.stderr
        assert '"abcdefgh\\u0007", "abcdefgh\\\\x07"' in got.stderr, got.stderr
        assert "$'abcdefgh\\x07'" in got.stderr, got.stderr
    got = leaf("abcdefgh\x07")  # its own characters, as bash's $'abcdefgh\x07' gives them
    assert got.returncode == 0 and json.loads(got.stdout)["leafId"] == "abcdefgh\x07", got.stderr
    got = leaf("abcdefgh\\")  # a prefix of both that more characters do not help either
    assert "show alike" in got.stderr and "give more characters" not in got.stderr, got.stderr


def test_long_ids_are_shown_uncut(tmp_path: Path) -> None:
    """Two ids sharing their first 120 characters: ``tree`` cut both at 100 characters
    to the same ``…`` text, which names neither."""
    _tree_ids_open_their_entries(tmp_path, ["a" * 120 + "x", "a" * 120 + "y"])
