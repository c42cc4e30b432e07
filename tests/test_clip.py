"""``get_entries_by_id(..., clip=N)``: the native core's cut of a line before it is
decoded (``src/clip.rs``) equals the rule applied to the decoded entry (``_clip.py``,
the python backend's), and what ``tree`` shows of a clipped entry is what it shows of
the whole one (``view.PREVIEW_CLIP``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree._clip import WHOLE_KEYS, clip_entry
from sessiontree.errors import InvalidSessionError
from sessiontree.view import PREVIEW_CLIP, content_text, entry_preview, one_line, as_is

from _shared import CASES, CORPUS, backends, native_available, open_quiet

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}

# Text that exercises the character count: escapes, pairs, lone surrogates, wide and
# combining characters, quotes.
_CHARS = st.sampled_from(["a", " ", "\n", "\t", '"', "\\", "/", "é", "日", "😀", "\u0301", "\u2028", "\ud83d", "\ude00", "\x00", "'"])
_TEXT = st.lists(_CHARS, max_size=30).map("".join)
_LEAF = st.one_of(_TEXT, st.integers(-(10**30), 10**30), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none())
_JSON = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
                     max_leaves=12)


@st.composite
def _entry(draw: Any, n: int) -> dict[str, Any]:
    e: dict[str, Any] = {"type": draw(st.sampled_from(["message", "custom", "label", "x" * 40])), "id": f"e{n}-{draw(_TEXT)}",
                         "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"}
    for k in draw(st.lists(st.sampled_from(["message", "summary", "label", "content", "details", "idx"]), max_size=4)):
        e[k] = draw(_JSON)
    return e


def _write(path: Path, entries: list[dict[str, Any]], ascii_only: bool) -> None:
    lines = [HEADER, *entries]
    path.write_text("".join(json.dumps(x, ensure_ascii=ascii_only) + "\n" for x in lines), encoding="utf-8",
                    errors="surrogatepass")


def test_the_rule_cuts_values_only() -> None:
    e = {"type": "a" * 9, "id": "b" * 9, "parentId": "c" * 9, "message": {"id": "d" * 9, "content": ["e" * 9, {"f" * 9: 1}]}}
    assert clip_entry(e, 3) == {"type": "a" * 9, "id": "b" * 9, "parentId": "c" * 9,
                                "message": {"id": "ddd", "content": ["eee", {"f" * 9: 1}]}}
    assert e["message"]["content"][0] == "e" * 9  # not changed
    deep: Any = "x" * 10
    for _ in range(5000):
        deep = [deep]
    got = clip_entry({"id": "i", "d": deep}, 2)["d"]
    for _ in range(5000):
        got = got[0]
    assert got == "xx"
    assert WHOLE_KEYS == {"id", "parentId", "type"}


@pytest.mark.skipif(not native_available(), reason="the native extension is not built")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=6).flatmap(
    lambda ns: st.tuples(*[_entry(i) for i in range(len(ns))])), st.integers(0, 12), st.booleans())
def test_native_cut_lines_decode_to_the_rule(tmp_path: Path, entries: tuple[dict[str, Any], ...], keep: int,
                                             ascii_only: bool) -> None:
    p = tmp_path / "s.jsonl"
    _write(p, list(entries), ascii_only)
    with open_quiet(p, "native") as native, open_quiet(p, "python") as python:
        ids = [e["id"] for e in python.get_entries()]
        want = python.get_entries_by_id(ids, clip=keep)
        assert want == [clip_entry(e, keep) for e in python.get_entries()]
        assert native.get_entries_by_id(ids, clip=keep) == want  # cut by the core
        native.get_entries()  # now every entry is cached: cut in Python
        assert native.get_entries_by_id([*ids, "nope", *ids], clip=keep) == [*want, None, *want]
        assert native.get_entries() == python.get_entries()  # the cache holds whole entries


def _session_files() -> list[Path]:
    return sorted([*CORPUS.glob("*.jsonl"), *CASES.glob("*.jsonl")])


@pytest.mark.parametrize("path", _session_files(), ids=lambda p: p.name)
def test_shared_files_clip_alike_and_preview_as_the_whole_entry(path: Path) -> None:
    sessions: dict[str, Any] = {}
    try:
        for b in backends():
            sessions[b] = open_quiet(path, b)
    except InvalidSessionError as e:  # a case whose header is refused (F08): nothing to clip
        for sm in sessions.values():
            sm.close()
        assert not sessions, f"{path.name}: {', '.join(sessions)} opens it, {b} refuses it: {e}"
        pytest.skip(f"{path.name} is no session to clip: every backend refuses to open it, as "
                    f"`sessiontree info {path.name}` refuses a user ({e})")
    try:
        whole = sessions["python" if "python" in sessions else "native"].get_entries()
        ids = [e["id"] for e in whole]
        for keep in (0, 7, PREVIEW_CLIP):
            want = [clip_entry(e, keep) for e in whole]
            for sm in sessions.values():
                assert sm.get_entries_by_id(ids, clip=keep) == want, sm.backend
        for e, cut in zip(whole, sessions[next(iter(sessions))].get_entries_by_id(ids, clip=PREVIEW_CLIP)):
            assert_previews_alike(e, cut)
    finally:
        for sm in sessions.values():
            sm.close()


def assert_previews_alike(whole: dict[str, Any], cut: dict[str, Any]) -> None:
    """What ``tree`` reads of an entry (its row, ``--json`` row, a branch's first user
    text) is the same for the clipped entry."""
    assert entry_preview(cut) == entry_preview(whole)
    assert entry_preview(cut, as_is) == entry_preview(whole, as_is)
    msg, msg_cut = whole.get("message"), cut.get("message")
    if isinstance(msg, dict) and isinstance(msg_cut, dict):
        assert one_line(content_text(msg_cut.get("content"), images=False), 200) == \
            one_line(content_text(msg.get("content"), images=False), 200)


_LONG = st.lists(_CHARS, min_size=550, max_size=700).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["user", "assistant", "toolResult", "bashExecution", "custom", "compactionSummary", "x"]),
       st.lists(st.one_of(_LONG, _TEXT), min_size=1, max_size=4), st.sampled_from(["message", "label", "custom_message",
                                                                                   "compaction", "branch_summary", "custom",
                                                                                   "session_info", "model_change"]))
def test_previews_read_no_more_than_the_clip(role: str, texts: list[str], etype: str) -> None:
    """Long strings at every place a preview reads one (the shared files rarely have them)."""
    content = [{"type": "text", "text": texts[0]}, {"type": "toolCall", "name": texts[-1], "arguments": {t: t for t in texts}},
               {"type": "thinking", "thinking": texts[-1]}, {"type": "image", "mimeType": texts[0]}]
    entry = {"type": etype, "id": "i", "parentId": None, "label": texts[0], "targetId": texts[-1], "summary": texts[0],
             "customType": texts[-1], "content": content, "name": texts[0], "provider": texts[-1], "modelId": texts[0],
             "tokensBefore": texts[-1],
             "message": {"role": role, "content": content if len(texts) > 1 else texts[0], "toolName": texts[0],
                         "command": texts[-1], "exitCode": texts[0], "summary": texts[-1], "customType": texts[0],
                         "stopReason": "error", "errorMessage": texts[-1]}}
    assert_previews_alike(entry, clip_entry(entry, PREVIEW_CLIP))


@pytest.mark.parametrize("backend", backends())
def test_a_wrong_clip_is_refused(tmp_path: Path, backend: str) -> None:
    p = tmp_path / "s.jsonl"
    _write(p, [{"type": "custom", "id": "a", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"}], True)
    with open_quiet(p, backend) as sm:
        for bad in (True, 1.5, "3"):
            with pytest.raises(TypeError, match="clip"):
                sm.get_entries_by_id(["a"], clip=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="clip"):
            sm.get_entries_by_id(["a"], clip=-1)
        with pytest.raises(TypeError, match="entry_ids"):
            sm.get_entries_by_id("a", clip=3)
        assert sm.get_entries_by_id(["a"], clip=100) == sm.get_entries_by_id(["a"])
        assert sm.get_entries_by_id(["a"], clip=2**70) == sm.get_entries_by_id(["a"])  # not cached yet
        for bad_budget in ("1", 1.5, None, True):
            with pytest.raises(TypeError, match="cache_budget"):
                sm.cache_budget = bad_budget  # type: ignore[assignment]
        with pytest.raises(ValueError, match="cache_budget"):
            sm.cache_budget = -1
        assert sm.get_entries_by_id(["a"], clip=0)[0]["timestamp"] == ""
