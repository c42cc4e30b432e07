"""The HTML export's Markdown renderer: the extension's (``src/markdown.rs``,
pulldown-cmark) against markdown-it-py with the page's rules (``export.html._markdown``,
used where the extension is not built), and both against the page's safety rules.

Where they agree is most text a session holds (``AGREE``); where CommonMark leaves
room, or markdown-it-py strays from it, they differ, each case written out in
``DIFFER`` with both outputs, so a change of either shows here.
"""

from __future__ import annotations

import re

import pytest

from sessiontree.export.html import _markdown, visible

native = pytest.importorskip("sessiontree._sessiontree")

AGREE = [
    "plain text",
    "two\nlines\n\nand a second paragraph",
    "say \"hi\" & <b>bold</b> 'quoted'",
    "*em* **strong** `code <x>` ~~gone~~",
    "# Heading\n\n## Second\n\ntext",
    "###### Six\n\n##### Five\n\n> # quoted\n\n- # in a list",
    "Setext\n======\n\nand\n---",
    "- a\n- b\n  - nested\n\n1. one\n2. two",
    "> quoted\n> more\n\n>> deeper",
    "```python\nif a < b:\n    print(\"x\")\n```",
    "    indented code\n    more\n",
    "line with hard break  \nnext\\\nlast",
    "***\n\n___",
    "[site](https://example.org/a?b=1&c=2 \"title\") and <https://example.org>",
    "[mail](mailto:a@b.c) and ä [x](https://example.org/ä%20b)",
    "![alt *text*](https://example.org/i.png)",
    "| a | b |\n|:--|--:|\n| 1 | 2 |\n| 3 |",
    "| h |\n|:-:|",
    "a <span onclick=\"x\">tag</span> and <!-- comment --> and <?php x ?>",
    "&amp; &copy; &#35; &nope;",
    "\\*not em\\* and \\<b\\>",
]

# (text, pulldown-cmark's HTML, markdown-it-py's HTML): what each does differently.
DIFFER = [
    # CommonMark strips spaces and tabs at a paragraph's edges; markdown-it-py strips
    # any Unicode space (Python's str.strip), a no-break space too.
    ("\xa0 text \xa0", "<p>\xa0 text \xa0</p>\n", "<p>text</p>\n"),
    # A backslash before a space at the end of a line: the line's final spaces go.
    ("a \\ \nb", "<p>a \\\nb</p>\n", "<p>a \\ \nb</p>\n"),
    # An HTML comment is one block up to its end, blank lines and all (shown as text);
    # markdown-it-py, not reading HTML, makes two paragraphs of it.
    ("<!-- a\n\nb -->", "<p>&lt;!-- a\n\nb --&gt;</p>\n", "<p>&lt;!-- a</p>\n<p>b --&gt;</p>\n"),
    # An HTML block is shown as the text it is; markdown-it-py, not reading HTML, reads
    # the Markdown inside it.
    ("<div>\n*x*\n</div>\n\nafter", "<p>&lt;div&gt;\n*x*\n&lt;/div&gt;</p>\n<p>after</p>\n",
     "<p>&lt;div&gt;\n<em>x</em>\n&lt;/div&gt;</p>\n<p>after</p>\n"),
    # An indented code block at the very end of the text, with no line ending.
    ("    code", "<pre><code>code</code></pre>\n", "<pre><code>code\n</code></pre>\n"),
    # pulldown-cmark's strikethrough takes one tilde too (as GFM does).
    ("~one~", "<p><s>one</s></p>\n", "<p>~one~</p>\n"),
]

# Text that tries to leave its place on the page: neither renderer may let it.
HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x]( javascript:alert(1))",
    "<javascript:alert(1)>",
    "![x](javascript:alert(1))",
    "![x](data:image/svg+xml;base64,PHN2Zz4=)",
    "[x](data:text/html,<script>alert(1)</script>)",
    "[x]: javascript:alert(1)\n\n[x]",
    "<iframe src=https://e.org></iframe>",
    "<textarea>\n\n# swallowed?",
    "<style>body{display:none}</style>",
    "[x](https://e.org\" onclick=\"alert(1))",
    "[x](<https://e.org\" onclick=\"alert(1)>)",
    "![\"><script>](https://e.org/\"><script>)",
    "```\n</pre><script>alert(1)</script>\n```",
    "`</code><script>`",
    "| <script> |\n|---|\n| <img src=x> |",
]

_TAG_RE = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)([^>]*)>")
_SAFE_TAGS = {"p", "em", "strong", "code", "pre", "a", "s", "h3", "h1", "h2", "ul", "ol", "li", "blockquote", "br",
              "hr", "table", "thead", "tbody", "tr", "th", "td"}


@pytest.mark.parametrize("text", AGREE)
def test_the_renderers_agree(text: str) -> None:
    assert native.markdown_html(text) == _markdown().render(text)


@pytest.mark.parametrize(("text", "pulldown", "markdown_it"), DIFFER)
def test_where_the_renderers_differ(text: str, pulldown: str, markdown_it: str) -> None:
    assert native.markdown_html(text) == pulldown
    assert _markdown().render(text) == markdown_it


@pytest.mark.parametrize("renderer", ["pulldown", "markdown_it"])
def test_message_headings_sit_below_the_page_title(renderer: str) -> None:
    """The page's title is its only ``<h1>``: a message's headings go one level down
    (ATX or setext, in a quote or a list too), ``<h6>`` staying ``<h6>``."""
    render = native.markdown_html if renderer == "pulldown" else _markdown().render
    got = render("# One\n\n## Two\n\nSetext\n======\n\n> ### Three\n\n- ##### Five\n\n###### Six")
    assert re.findall(r"<(h[1-6])>([^<]*)</\1>", got) == [
        ("h2", "One"), ("h3", "Two"), ("h2", "Setext"), ("h4", "Three"), ("h6", "Five"), ("h6", "Six")], got


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("renderer", ["pulldown", "markdown_it"])
def test_no_text_leaves_its_place(text: str, renderer: str) -> None:
    html = native.markdown_html(text) if renderer == "pulldown" else _markdown().render(text)
    for m in _TAG_RE.finditer(html):
        tag, attrs = m.group(1).lower(), m.group(2)
        assert tag in _SAFE_TAGS, (tag, html)
        hrefs = re.findall(r'href="([^"]*)"', attrs)
        assert all(re.match(r"(?i)(https?://|mailto:)", h) for h in hrefs), html
        names = re.findall(r'\s([a-z-]+)=', attrs)
        assert set(names) <= {"href", "title", "rel", "class", "style"}, html
        if tag == "a":
            assert 'rel="noopener noreferrer nofollow"' in attrs, html
    assert "<script" not in html and "<img" not in html and "<iframe" not in html


@pytest.mark.parametrize("renderer", ["pulldown", "markdown_it"])
def test_character_references_do_not_put_controls_on_the_page(renderer: str) -> None:
    """A character reference is decoded by the renderer after the text was cleaned: the
    page's rule applies to its output too, so a bidi override, an escape, a zero-width
    space or a C1 control written as ``&#x...;`` is shown escaped, as the character
    itself is (adversary round 36, F5); a no-break space stays one."""
    render = visible(native.markdown_html if renderer == "pulldown" else _markdown().render)
    got = render("ref: &#x202E;evil&#x202C; &#x1b;[31m &#x200B; &#x9b; &#xAD; &nbsp;x")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u00ad]", got), got
    # markdown-it-py decodes a control's reference as U+FFFD, as CommonMark allows.
    assert "\\u202e" in got and ("\\x1b" in got or "\ufffd" in got) and "\xa0x" in got
    assert render("# A\n\n*b* <c> &amp;") == (native.markdown_html if renderer == "pulldown"
                                                else _markdown().render)("# A\n\n*b* <c> &amp;")
