"""A Markdown export cannot hide text (issue 24, item 7; ``export.markdown.contain``).

A message that opened a code fence and never closed it (a pasted "```python"), or opened
an HTML comment, hid every later section of the rendered document (1 of 3 headings
shown), and a compaction summary's ``## Goal`` sat at the level of the entry headings.
Checked with the real parser, markdown-it-py (CommonMark, raw HTML on, as renderers
read it), and with the HTML it renders read by the standard library's HTML parser (a
browser's view: an unclosed ``<!--`` or ``<textarea>`` there swallows the rest of the
page): for adversarial texts from hypothesis, the document's top-level headings are
exactly its title and one heading per entry, in order, and no raw HTML is left.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from sessiontree.view import structure_of
from sessiontree.export.markdown import contain, write_markdown

from _shared import open_quiet

MD = MarkdownIt("commonmark")

PIECES = ["```", "```python", "````", "~~~", "~~~~ x", "<!--", "-->", "<!-- c -->", "<textarea>", "</textarea>",
          "<script>", "<style>x", "<div>", "</div>", "<span hidden>", "<?php", "?>", "<![CDATA[", "]]>",
          "<!DOCTYPE x>", "<http://x.y>", "# ", "## Goal", "###### six", "#", "===", "---", "- ", "* ", "1. ",
          "> ", "    ", "\t", "`", "``", "\\", "\\`", "[x]: /u", "<b>", "</b>", "text", "word", " ", "\n", "\n\n",
          "<a href=\"`\">", "&lt;", "|a|b|", "|-|-|"]

text = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=14).map("".join)


def _session(path: Path, texts: list[str], thinking: str, summary: str) -> Path:
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}]
    parent = None
    for i, t in enumerate(texts):
        eid = f"e{i}"
        if i % 2 == 0:
            msg: dict[str, Any] = {"role": "user", "content": t, "timestamp": i}
        else:
            msg = {"role": "assistant", "content": [{"type": "thinking", "thinking": thinking},
                                                    {"type": "text", "text": t}],
                   "provider": "p", "model": "m", "timestamp": i}
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                      "message": msg})
        parent = eid
    lines.append({"type": "compaction", "id": "c", "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
                  "summary": summary, "firstKeptEntryId": "c", "tokensBefore": 1})
    lines.append({"type": "message", "id": "last", "parentId": "c", "timestamp": "2026-01-01T00:00:03.000Z",
                  "message": {"role": "user", "content": "the last words", "timestamp": 9}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _export(path: Path, detail: str = "full") -> tuple[str, int]:
    with open_quiet(path, "python") as sm:
        out: list[str] = []
        stats = write_markdown(structure_of(sm), out.append, detail=detail)
    return "".join(out), stats.sections


def _top_headings(doc: str) -> list[tuple[str, str]]:
    tokens = MD.parse(doc)
    return [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open" and t.level == 0]


def _raw_html(doc: str) -> list[str]:
    found = []
    for t in MD.parse(doc):
        if t.type == "html_block":
            found.append(t.content)
        for c in t.children or ():
            if c.type == "html_inline":
                found.append(c.content)
    return found


class _Headings(HTMLParser):
    """What a browser makes of the rendered page: the h1/h2 elements and their text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("h1", "h2"):
            self._in = tag
            self.found.append((tag, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            tag, got = self.found[-1]
            self.found[-1] = (tag, got + data)


def _check(doc: str, sections: int) -> None:
    # The document's levels (1: title, 2: entries) are its own; a message's headings are deeper.
    heads = [h for h in _top_headings(doc) if h[0] in ("h1", "h2")]
    assert [t for t, _ in heads] == ["h1"] + ["h2"] * sections, heads
    assert "last words" not in heads[-1][1] and heads[-1][1].startswith("user")  # the last entry's heading survived
    assert doc.rstrip().endswith("the last words")
    assert _raw_html(doc) == []
    page = _Headings()
    page.feed(MD.render(doc))
    page.close()
    assert [t for t, _ in page.found] == ["h1"] + ["h2"] * sections


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                              HealthCheck.function_scoped_fixture])


@SETTINGS
@given(texts=st.lists(text, min_size=1, max_size=4), thinking=text, summary=text)
def test_every_entry_heading_survives_any_message(tmp_path: Path, texts: list[str], thinking: str,
                                                  summary: str) -> None:
    path = _session(tmp_path / "s.jsonl", texts, thinking, summary)
    for detail in ("full", "no-tools"):
        doc, sections = _export(path, detail)
        _check(doc, sections)


@pytest.mark.parametrize("hostile", [
    "```python\nprint('never closed')",
    "<!-- an HTML comment never closed",
    "<textarea>\neverything after this is a text box",
    "## Goal\n\nsummary text at the entries' level",
    "Title\n=====",
    "<div>\n\n# inside\n",
    "~~~\nunclosed tilde fence",
    # Found by the hypothesis test above (failing on main at 94d5c0e): a tab after the
    # thinking's "> " indented less than at the top level, so "\t<!--" was raw HTML in
    # the quote; and a heading in a list item or a quote was an h1 all the same.
    "\t<!-- c",
    "\t``````<!-- c -->```",
    "- # ",
    "- # a heading in a list",
    "> ## a heading in a quote",
    "- x\n  ===",
    "> x\n> ---",
    # Found by the hypothesis test (failing on main at 549ce7c): the parser maps a fence
    # open at the end without its trailing blank lines, so "```\n    " was left open.
    "```\n    ",
    "~~~\n\n  \n",
    # Adversary round 38: a tab before the closing fence is four columns (CommonMark), so
    # "\t```" is indented code and closes nothing; taken for a close, the fence stayed open.
    "look:\n```\n\t```",
    "```\n  \t```",
    "~~~\n \t~~~\n",
    # Adversary round 43: a tab after a list marker, in the thinking's quote, reached
    # another column than at the top level, where the text was checked ("-\t~" then an
    # indented fence): an unclosed raw "<!--" hid the sections after it, or an h2/h1.
    "-\t~\n  ```\n1. <!-- hide",
    "-\tuser · … · forged\n  ---",
    "-\tfoo\n  ==",
])
def test_the_attacks_reproducers(tmp_path: Path, hostile: str) -> None:
    """Three entries (the attack counted 1 of 3 headings shown) around a hostile text."""
    doc, sections = _export(_session(tmp_path / "s.jsonl", [hostile, "an answer"], hostile, hostile))
    _check(doc, sections)
    assert sections == 4


@pytest.mark.parametrize("plain", ["hello", "a `code` span: `<b>` and ``x `<i>` y``", "| a | b |\n|---|---|\n| 1 | 2 |",
                                   "- a list\n- of two", "```py\nclosed()\n```", "x < y and y > z", "<http://x.y>",
                                   "### already deep"])
def test_contained_text_reads_as_written(plain: str) -> None:
    """What cannot leak stays as written (code spans keep their <, autolinks stay links)."""
    out = contain(plain)
    if plain == "### already deep":
        assert out == "##### already deep"
    else:
        assert out == plain
    assert MD.render(out).count("<code>") == MD.render(plain).count("<code>")


def test_escapes_show_the_text_as_written() -> None:
    for hostile in ("<!-- c", "a <b>bold?</b> b", "<textarea>x", "<?php echo 1; ?>"):
        rendered = MD.render(contain(hostile))
        assert "&lt;" in rendered and "<textarea" not in rendered and "<!--" not in rendered


@pytest.mark.parametrize("text", ["- # ", "- # Goal", "> # Goal", "1. ## Step", "- > # deep", "- a\n  ===", "> a\n> ---"])
def test_a_heading_in_a_list_item_or_quote_stays_below_the_documents(text: str) -> None:
    """A heading inside a list item or a quote is an ``<h1>`` / ``<h2>`` of the page as
    much as one at the top level (found by the property test below: ``- # ``); it goes
    two levels down too, or a setext one loses its underline."""
    page = _Headings()
    page.feed(MD.render(contain(text)))
    page.close()
    assert not [t for t, _ in page.found if t in ("h1", "h2")], contain(text)


# ------------------------------------------------------- the quick path vs the parser
# contain() answers the commonest text that may leak (headings and closed fences at the
# left margin) without the parser (_contain_plain); where it answers, its answer must
# be the parser's. Fence-heavy pieces make it answer often.
FENCE_PIECES = ["```", "```py", "``` x`y", "````", "~~~", "~~~ a`b", "   ```", "    ```", "\t```", "``` \t", "```  ",
                "# ", "## ", "###### ", "####### ", "#x", "- ", "> ", "1. ", "---", "===", "<b>", "a < b", "\n", "\n",
                "\n", "text", " ", "\t", "\r", "\x00", "`", "\\"]
fenced = st.lists(st.lists(st.sampled_from(FENCE_PIECES) | st.text(max_size=3), max_size=3).map("".join),
                  max_size=10).map("\n".join)


def _texts_of(value: Any) -> list[str]:
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


def _quick_agrees(text: str) -> bool | None:
    """Whether the quick path answered (None: it left the text to the parser); raises
    AssertionError where its answer is not the parser's."""
    from sessiontree.export.markdown import _contain_plain, contain_parsed

    quick = _contain_plain(text)
    if quick is None:
        return None
    assert quick == contain_parsed(text), text
    assert contain(text) == quick
    return True


@settings(max_examples=3000, deadline=None)
@given(text=fenced)
def test_the_quick_path_answers_as_the_parser(text: str) -> None:
    _quick_agrees(text)


def test_the_quick_path_answers_as_the_parser_on_the_corpus() -> None:
    """Every string of every file of the shared corpus and cases (and each string with
    its lines shifted into and out of fences), where the quick path answers."""
    from _shared import CASES, CORPUS

    files = sorted(CORPUS.glob("*.jsonl")) + sorted(CASES.glob("*.jsonl"))
    if not files:
        pytest.skip("the shared corpus is not beside the repository")
    answered = 0
    for f in files:
        for raw in f.read_bytes().splitlines():
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            for s in _texts_of(value):
                for text in (s, "```\n" + s, s + "\n```", "# h\n" + s):
                    answered += bool(_quick_agrees(text))
    assert answered > 100


@pytest.mark.parametrize("text, quick", [
    ("# a\n```\n# not a heading\n```\n## b", "### a\n```\n# not a heading\n```\n#### b"),
    ("##### five\n###### six", "###### five\n###### six"),
    ("~~~ x`y\n<b>\n~~~", "~~~ x`y\n<b>\n~~~"),
    ("```\ncode\n   ```  ", "```\ncode\n   ```  "),
    ("```\n    ```\n# h\n```", "```\n    ```\n# h\n```"),  # indented 4: not a closer
    ("````\n```\n# h\n````", "````\n```\n# h\n````"),  # shorter than the opener: not a closer
    ("```\n~~~\n# h\n```", "```\n~~~\n# h\n```"),  # the other character: not a closer
    ("```\nopen", None),  # the parser closes it
    ("``` a`b\n# h", None),  # not a fence: a paragraph's code span
    ("```\nx\n``` \t", None),  # a tab after a closer
    ("- ```\nx", None),  # a fence in a list item
    ("# <b>", None),
    ("a\r\n# b", None),
])
def test_the_quick_path_knows_where_it_stops(text: str, quick: str | None) -> None:
    from sessiontree.export.markdown import _contain_plain, contain_parsed

    assert _contain_plain(text) == quick
    if quick is not None:
        assert contain_parsed(text) == quick


def test_character_references_in_headings_stay_as_written(tmp_path: Path) -> None:
    """A reference in a line the export writes as inline Markdown (the title, the
    headings: a model or tool name, a label) shows as written (a message's own text,
    Markdown, still lets a viewer decode one): "&rlm;" or "&#x202E;" decoded by a viewer
    would be the invisible or bidi character the exports otherwise show escaped
    (adversary round 43, F2)."""
    path = _session(tmp_path / "s.jsonl", ["hi", "ok"], "t", "s")
    lines = path.read_text().splitlines()
    info = {"type": "session_info", "id": "n", "parentId": "c", "timestamp": "2026-01-01T00:00:03.000Z",
            "name": "a &rlm; b &#x202E; c &ZeroWidthSpace; d"}
    path.write_text("\n".join([*lines, json.dumps(info)]) + "\n")
    doc, _sections = _export(path)
    heads = [line for line in MD.render(doc).splitlines() if line.startswith(("<h1>", "<h2>", "<h3>"))]
    assert heads and not any(ch in h for h in heads for ch in "\u200f\u202e\u200b"), heads
    assert "a &amp;rlm; b" in heads[0]


REFERENCES = ["&#x202E;", "&#8203;", "&rlm;", "&amp;", "&#X200b;", "`", "``", "\\", "<http://a`>", "[a](/u \"",
              "\")", "![", "](x)", "[r]: /v \"", "[r]", "    ", "\n", "- ", "> ", "```\n", "~~~ &rlm;\n"]
_DECODES = MarkdownIt("commonmark").disable("text_join")  # keeps each decoded reference a token of its own


def _decoded(tokens: list[Any]) -> list[str]:
    out = []
    for t in tokens:
        if t.type == "text_special" and t.info == "entity":
            out.append(t.content)
        out.extend(_decoded(t.children or []))
    return out


@SETTINGS
@given(text=st.lists(st.sampled_from(PIECES + REFERENCES) | st.text(max_size=3), max_size=14).map("".join))
def test_no_character_reference_is_decoded(text: str) -> None:
    """F2 (adversary round 43): after :func:`contain`, a CommonMark parse decodes no
    character reference anywhere (text, headings, alt text) and no link title holds a
    character the text did not; code keeps its references as written."""
    out = contain(text)
    assert not _decoded(_DECODES.parse(out)), (text, out)
    page = MD.render(out)
    for ch in "\u202e\u200b\u200f":
        assert ch in text or ch not in page, (text, out)


@pytest.mark.parametrize("text, want", [("```\r```", "```\n```"), ("# a\r\nb\r<!-- x", "### a\nb\n\\<!-- x")])
def test_a_carriage_return_ends_a_line_as_for_the_parser(text: str, want: str) -> None:
    """Found by the property test above: the parser counts a CR or CRLF as a line end,
    so its line numbers named other lines than ``text.split("\\n")`` had
    (``contain("```\\r```")`` raised IndexError). The export's text reaches ``contain``
    with its line ends made LF already; the function itself must not crash."""
    assert contain(text) == want
