"""One escaping rule for every viewer (``view/_escape.py``): the terminal line, the
terminal block, the browser's detail pane and the HTML and Markdown exports make the
same characters visible. Before, the exports and the browser's detail pane (documented
terminal-safe) passed seven invisible characters through that ``tree`` escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree import SessionManager
from sessiontree.view import clean, entry_preview, item_of, safe, safe_block, structure_of

# Zero-width space, soft hyphen, BOM, word joiner, Mongolian vowel separator, combining
# grapheme joiner, a tag character; a Hangul filler, a variation selector of the
# supplement (a run of them hides a text, one byte a character), a musical format
# control, Khmer's inherent vowel (adversary round 43, F3).
INVISIBLE = ["\u200b", "\u00ad", "\ufeff", "\u2060", "\u180e", "\u034f", "\U000e0041",
             "\u3164", "\U000e0100", "\U0001d173", "\u17b4"]
LINE_BREAKS = {"\n", "\r", "\u2028", "\u2029"}


def test_the_two_modes_escape_the_same_characters() -> None:
    """Every code point but the line breaks and TAB: escaped by one mode iff by the other
    and by the renderer's ``clean`` (which the exports and the detail pane use)."""
    differ = []
    for cp in range(0x110000):
        ch = chr(cp)
        if ch in LINE_BREAKS or ch == "\t":
            continue
        line, block, doc = safe(ch) != ch, safe_block(ch) != ch, clean(ch) != ch
        if not line == block == doc:
            differ.append((hex(cp), line, block, doc))
    assert differ == []


def test_line_breaks_by_mode() -> None:
    assert safe("a\r\nb\u2028c\td") == "a\\r\\nb\\u2028c\\td"
    assert safe_block("a\r\nb\u2028c\rd\u2029e\tf") == "a\nb\nc\nd\ne\tf"
    assert clean("a\r\nb") == "a\nb"


@pytest.mark.parametrize("ch", INVISIBLE)
def test_every_mode_shows_an_invisible_character(ch: str) -> None:
    escaped = f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"
    escaped = f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else escaped
    for mode in (safe, safe_block, clean):
        assert mode(f"a{ch}b") == f"a{escaped}b", mode


def _session(tmp_path: Path) -> Path:
    text = "x" + "".join(INVISIBLE) + "y"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "id": "u", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": text, "timestamp": 1735689601000}},
        {"type": "message", "id": "a", "parentId": "u", "timestamp": "2025-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": text},
                                                      {"type": "text", "text": text}],
                     "provider": "p", "model": "m" + text, "stopReason": "stop", "timestamp": 1735689602000}},
        {"type": "compaction", "id": "c", "parentId": "a", "timestamp": "2025-01-01T00:00:03.000Z",
         "summary": text, "firstKeptEntryId": "a", "tokensBefore": 1},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def _strings(item: object) -> list[str]:
    out = [item.kind, item.when, item.id, *(item.meta)]  # type: ignore[attr-defined]
    for part in item.parts:  # type: ignore[attr-defined]
        out.extend([part.text, part.title])
    return out


def test_no_viewer_passes_an_invisible_character_through(tmp_path: Path, backend: str) -> None:
    from sessiontree.export import write_html, write_markdown

    path = _session(tmp_path)
    with SessionManager.open(str(path), backend=backend) as sm:
        st = structure_of(sm)
        entries = [st.entry(i) for i in range(len(st))]
        shown: list[str] = []
        for e in entries:
            shown.extend(entry_preview(e))
            shown.extend(_strings(item_of(e)))
        page: list[str] = []
        write_html(st, page.append, branches="all")
        md: list[str] = []
        write_markdown(st, md.append)
    shown += ["".join(page), "".join(md)]
    try:  # the browser's detail pane: rich text, documented terminal-safe
        from sessiontree.browse._detail import item_text
    except ImportError:
        pass
    else:
        shown.extend(item_text(item_of(e)).plain for e in entries)
    leaks = {ch for text in shown for ch in INVISIBLE if ch in text}
    assert leaks == set()
    assert any("\\u200b" in text for text in shown)


def test_json_output_finds_what_its_expression_rewrites() -> None:
    """``to_json_bytes``'s test for characters JSON output escapes (natively a ``memchr``
    scan, ``src/escape.rs``) says yes exactly where the rule's expression matches: every
    code point as UTF-8 inside a JSON string, and byte strings built of the lead and
    continuation bytes (torn sequences, sequences at the end)."""
    import itertools

    from _shared import native_available
    from sessiontree import _sessiontree
    from sessiontree.view._text import _JSON_UNSAFE_RE

    if not native_available():
        pytest.skip("the native extension is not built")
    differ = []
    for cp in itertools.chain(range(0x3000), range(0xE000, 0x110000, 97)):
        data = b'{"a":"x' + chr(cp).encode("utf-8", "surrogatepass") + b'y"}'
        if _sessiontree.json_unsafe(data) != (_JSON_UNSAFE_RE.search(data) is not None):
            differ.append(hex(cp))
    parts = [b"\x7f", b"\xc2", b"\xd8", b"\xe2", b"\x80", b"\x81", b"\x8e", b"\x8f", b"\x9c", b"\x9f", b"\xa0",
             b"\xa6", b"\xa8", b"\xa9", b"\xae", b"\xaf", b"a"]
    for n in (1, 2, 3):
        for combo in itertools.product(parts, repeat=n):
            data = b"".join(combo)
            if _sessiontree.json_unsafe(data) != (_JSON_UNSAFE_RE.search(data) is not None):
                differ.append(data.hex())
    assert not differ, differ[:20]


def _orjson_bytes(value: object, indent: bool) -> bytes:
    """What ``to_json_bytes`` wrote before its standard-library path: orjson's bytes,
    with the rule's characters escaped."""
    import orjson

    from sessiontree.view._text import _JSON_UNSAFE_RE, _json_escape

    data = orjson.dumps(value, option=(orjson.OPT_INDENT_2 if indent else 0) | orjson.OPT_NON_STR_KEYS)
    return _JSON_UNSAFE_RE.sub(_json_escape, data)


_EDGES = [0.0, -0.0, 1e-4, -1e-4, 0.00010000000000000002, 9.999999999999998e15, 1e15, 123456.789, 0.1 + 0.2,
          True, False, None, 0, -(1 << 63) + 1, (1 << 63) - 1, "", "\x00\x1f\"\\/\x7f\u0085\u061c\u200e\u2028\u202e"
          "\u2066\u2069 é 中 😀", ["x", ("y", 1)], {"a": {}, "b": [], "c": ()}]


def test_plain_values_are_written_as_orjson_writes_them() -> None:
    """The standard library's ``json`` writes what ``_plain`` accepts to orjson's bytes
    (indented and compact), at the edges of the float range where the two agree and of
    the integers orjson takes; what ``_plain`` refuses is orjson's (floats whose
    exponent forms differ, NaN, huge integers, named tuples, non-string keys)."""
    from typing import NamedTuple

    from sessiontree.view._text import _native, _plain, plain_json_bytes, to_json_bytes

    class Pair(NamedTuple):
        a: int
        b: int

    native = _native("plain_json")
    for value in [*_EDGES, _EDGES, {"all": _EDGES, "nested": [[[{"k": _EDGES}]]]}]:
        assert _plain(value), value
        for indent in (True, False):
            assert plain_json_bytes(value, indent=indent) == _orjson_bytes(value, indent), value
            assert to_json_bytes(value, indent=indent) == _orjson_bytes(value, indent), value
            if native is not None:
                assert native(value, indent, 10**9) == _orjson_bytes(value, indent), value
    for value in (1e-5, 1.5e-7, 1e16, float("nan"), float("inf"), 1 << 63, -(1 << 63), Pair(1, 2), {1: 2},
                  [0] * 3000):
        assert not _plain([value]), value
        if native is not None and value != [0] * 3000:
            assert native([value], True, 10**9) is None, value
    if native is not None:  # a node budget, not a refusal of the value: over it, orjson writes
        assert native([0] * 3000, True, 10**9) == _orjson_bytes([0] * 3000, True)
        assert native([0] * 3000, True, 3001) is not None
        assert native([0] * 3000, True, 3000) is None
        assert native(["\ud800"], True, 10**9) is None
        assert native([[[0]]], True, 10**9) is not None
        deep: list[object] = [0]
        for _ in range(101):
            deep = [deep]
        assert native(deep, True, 10**9) is None
    assert to_json_bytes(["\ud800"]) == b'[\n  "\\ud800"\n]'  # a lone surrogate: ASCII-escaped, as before


@pytest.mark.parametrize("seed", range(3))
def test_random_plain_values_are_written_as_orjson_writes_them(seed: int) -> None:
    """Random nests of plain values (strings from every plane, floats across the plain
    range, 62-bit integers): the same bytes as orjson, or refused by ``_plain``."""
    import random

    from sessiontree.view._text import _native, _plain, plain_json_bytes, to_json_bytes

    native = _native("plain_json")
    rnd = random.Random(seed)

    def text() -> str:
        return "".join(chr(rnd.choice((rnd.randrange(0x80), rnd.randrange(0x80, 0x3000), rnd.randrange(0x10000, 0x10400))))
                       for _ in range(rnd.randrange(6)))

    def value(depth: int = 0) -> object:
        k = rnd.randrange(8 if depth < 4 else 5)
        if k == 0:
            return text()
        if k == 1:
            return rnd.choice((True, False, None))
        if k == 2:
            return rnd.randrange(-(1 << 62), 1 << 62)
        if k == 3:
            return rnd.uniform(-1, 1) * 10 ** rnd.uniform(-4, 15.99)
        if k == 4:
            return rnd.random()
        if k == 5:
            return {text(): value(depth + 1) for _ in range(rnd.randrange(4))}
        if k == 6:
            return tuple(value(depth + 1) for _ in range(rnd.randrange(3)))
        return [value(depth + 1) for _ in range(rnd.randrange(4))]

    checked = 0
    for _ in range(3000):
        v = value()
        if _plain(v):
            checked += 1
            for indent in (True, False):
                assert plain_json_bytes(v, indent=indent) == _orjson_bytes(v, indent), repr(v)[:300]
                assert to_json_bytes(v, indent=indent) == _orjson_bytes(v, indent), repr(v)[:300]
                if native is not None:
                    assert native(v, indent, 10**9) == _orjson_bytes(v, indent), repr(v)[:300]
        elif native is not None:
            assert native(v, True, 10**9) is None, repr(v)[:300]
    assert checked > 2000


def test_the_quick_answers_are_the_rules() -> None:
    """``safe_block`` and ``clean`` return printable text without looking at it with the
    rule's expression, and ``doc_line`` returns a short clean line as it is: for every
    code point, alone and between a LF and a TAB (the second quick test), the answer is
    the expression's, and ``doc_line``'s is the spelled-out rule's."""
    from sessiontree.view._escape import _BREAK_RE, _UNSAFE_BLOCK_RE, _escape_char
    from sessiontree.view._render import doc_line

    def by_rule(text: str) -> str:
        return _UNSAFE_BLOCK_RE.sub(_escape_char, _BREAK_RE.sub("\n", text))

    differ = []
    for cp in range(0x110000):
        ch = chr(cp)
        for text in (ch, f"a\n{ch}\tb", f"{ch}{ch} x"):
            if safe_block(text) != by_rule(text) or clean(text) != by_rule(text):
                differ.append(hex(cp))
        line = " ".join(by_rule(f"a {ch} b").split())
        if doc_line(f"a {ch} b", 200) != line:
            differ.append(("doc_line", hex(cp)))
    assert differ == []
    for text, limit in (("a  b", 10), (" a", 10), ("a ", 10), ("abcdef", 3), ("abc", 3), ("", 5)):
        want = " ".join(text.split())
        assert doc_line(text, limit) == (want if len(want) <= limit else want[:limit - 1] + "…"), text


# ------------------------------------------------ the extension's pass against the rule
_BLOCK_EDGES = "".join(chr(c) for c in (0x00, 0x08, 0x09, 0x0a, 0x0b, 0x0d, 0x1f, 0x20, 0x7e, 0x7f, 0x85, 0x9f, 0xa0,
                                        0xad, 0x34f, 0x61c, 0x180e, 0x200b, 0x200d, 0x200e, 0x2028, 0x2029, 0x202e,
                                        0x2060, 0x2065, 0x2066, 0x206f, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xfeff, 0xfff9,
                                        0xfffc, 0x1f600, 0xe0000, 0xe007f, 0xe0080, 0x10ffff))


def test_the_extension_escapes_every_code_point_as_the_rule() -> None:
    """``src/escape.rs``'s ``safe_block`` against ``safe_block_rule`` (the expressions):
    each code point alone, between letters, and after a CR (which it must not join)."""
    from sessiontree.view._escape import safe_block_rule

    _native = pytest.importorskip("sessiontree._sessiontree")
    differ = []
    for cp in range(0x110000):
        ch = chr(cp)
        for text in (ch, f"a{ch}b", f"\r{ch}\r\n"):
            if _native.safe_block(text) != safe_block_rule(text):
                differ.append(hex(cp))
    assert differ == []


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.one_of(st.sampled_from(_BLOCK_EDGES), st.characters(codec=None)), max_size=60))
def test_the_extension_escapes_generated_text_as_the_rule(text: str) -> None:
    from sessiontree.view._escape import safe_block_rule

    _native = pytest.importorskip("sessiontree._sessiontree")
    assert _native.safe_block(text) == safe_block_rule(text)
    assert safe_block(text) == safe_block_rule(text)


def test_the_extension_escapes_html_as_the_standard_library() -> None:
    """``src/escape.rs``'s ``html_escape`` (``export/html.py``'s ``h`` of long text)
    against ``html.escape(quote=True)``: each code point among the five it replaces."""
    import html

    _native = pytest.importorskip("sessiontree._sessiontree")
    differ = []
    for cp in range(0x110000):
        text = f"<{chr(cp)}&\"'>{chr(cp)}"
        if _native.html_escape(text) != html.escape(text, quote=True):
            differ.append(hex(cp))
    assert differ == []
    plain = "no specials here, é 中 \udc80"
    assert _native.html_escape(plain) is plain


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.one_of(st.sampled_from("&<>\"'a\udc80é"), st.characters(codec=None)), max_size=200))
def test_the_page_escapes_generated_text_as_the_standard_library(text: str) -> None:
    import html

    from sessiontree.export.html import h

    assert h(text) == html.escape(text, quote=True)
    assert h(text * 10) == html.escape(text * 10, quote=True)


def test_a_large_plain_value_is_written_without_importing_orjson() -> None:
    """A report of 2,000 lines (18,000 values, past ``_plain``'s 2,000) is written by the
    extension in a process that never imports orjson, to orjson's bytes; past
    ``_NATIVE_NODES`` values orjson is imported and writes it."""
    import subprocess
    import sys

    pytest.importorskip("sessiontree._sessiontree")
    from sessiontree.view._text import _NATIVE_NODES

    script = """
import sys
from sessiontree.view._text import to_json_bytes
n = int(sys.argv[1])
lines = [{"key": "2026-01-%02d" % (i % 28), "records": i, "input": i * 1000, "cost": i * 0.013 + 0.001,
          "note": "é\\u2028\\x7f\\"q\\\\"} for i in range(n)]
sys.stdout.buffer.write(to_json_bytes({"group": "daily", "lines": lines}))
sys.stderr.write("orjson" if "orjson" in sys.modules else "no orjson")
"""
    for n, imported in ((2000, False), (_NATIVE_NODES // 5, True)):
        run = subprocess.run([sys.executable, "-c", script, str(n)], capture_output=True, check=True)
        assert run.stderr.decode() == ("orjson" if imported else "no orjson"), n
        lines = [{"key": "2026-01-%02d" % (i % 28), "records": i, "input": i * 1000, "cost": i * 0.013 + 0.001,
                  "note": "é\u2028\x7f\"q\\"} for i in range(n)]
        assert run.stdout == _orjson_bytes({"group": "daily", "lines": lines}, True), n


def test_a_list_whose_first_item_is_large_is_written_whole() -> None:
    """``plain_json`` makes room for a list's items from its first; a first item much
    larger than the rest (a 10 MB text, then 100,000 numbers) still gives orjson's
    bytes, the room made ahead capped (``PLAIN_RESERVE``) rather than 100,000 times
    the first item's size."""
    native = pytest.importorskip("sessiontree._sessiontree")
    import resource

    value = ["x" * 10_000_000, *range(100_000)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    got = native.plain_json(value, True, 10**6)
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert got == _orjson_bytes(value, True)
    assert grew_mb < 200, grew_mb
