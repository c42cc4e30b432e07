"""A search reads a header line's session id and cwd with the stdlib's ``json`` where
it reads the line whole (``catalog._search._header_ctx``): for every such line the
object is the one the loader's reader gives (``_reader.read_value``), so the hits' ids
and cwds are those the catalog and ``--no-cache`` give; other lines go to the reader."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree._reader import read_value
from sessiontree.catalog._search import _header_ctx

# Strings with what JSON text may spell oddly: escapes, controls, lone surrogates
# (written as \\u escapes), astral characters, quotes and backslashes.
TEXT = st.text(st.sampled_from(["a", "é", "\\", '"', "\x07", "\u2028", "\ud800", "\udc00", "😀", "/", " "]),
               max_size=8)


@st.composite
def header_lines(draw: st.DrawFn) -> bytes:
    obj = {"type": "session", "version": 3, "id": draw(TEXT), "timestamp": "2025-11-03T00:00:00.000Z",
           "cwd": draw(TEXT)}
    if draw(st.booleans()):
        obj["cwd"] = draw(st.one_of(st.none(), st.integers(), st.lists(TEXT, max_size=2)))
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):  # a key given twice: the last stands, in both
        text = text[:-1] + ', "id": ' + json.dumps(draw(TEXT)) + "}"
    if draw(st.booleans()):
        text = " \t" + text + " \r"
    raw = text.encode("utf-8", "surrogatepass")
    tail = draw(st.sampled_from([b"", b'{"type":"message"}', b"\xff", b"x"]))
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw  # a BOM
    return raw + tail


@settings(max_examples=600, deadline=None)
@given(header_lines(), st.booleans(), TEXT)
def test_a_header_read_by_json_is_the_readers(line: bytes, seen: bool, name: str) -> None:
    try:
        want_obj = read_value(line).value
    except ValueError:
        return  # not a line the reader takes: no file with hits has it as its header
    try:
        want = (want_obj["id"], name.strip() or None if seen else None,
                want_obj["cwd"] if isinstance(want_obj.get("cwd"), str) else "")
    except (KeyError, TypeError):
        return
    assert _header_ctx(line, (seen, name)) == want
