"""``view.id_width``: the ids ``tree`` and ``browse`` show, each cut to one width, are
all different, and the width is the least that does it (held to a brute force)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
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
