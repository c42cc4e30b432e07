"""``sessiontree export --format markdown``: one path of a session as readable Markdown.

For reading, sharing, or feeding a past session to a model. The path is root → leaf
(the current leaf, or ``--leaf ID``), one section per entry, in order. ``detail``:

* ``full``: every entry of the path: messages with thinking, tool calls (arguments as
  JSON) and tool results, command runs, compactions and branch summaries, model and
  thinking-level changes, labels, extension state, usage and context edits.
* ``no-tools``: the conversation: user, assistant, system and custom messages' text,
  compaction and branch summaries; no thinking, tool calls, tool results, command runs
  or bookkeeping entries (an assistant turn that only called tools is left out).
* ``user-only``: what the user wrote.

Text is written as Markdown (it is Markdown already), contained (:func:`contain`), so
that no message can hide or take over what follows it: its headings sit below the
document's (an entry is ``##``, a message's ``# Goal`` becomes ``### Goal``), a code
fence it leaves open is closed at its end, and raw HTML in it (an HTML comment or a
``<textarea>`` that would swallow the rest of a rendered page) is escaped to show as
text, and so is a character reference (``&#x202E;``) outside code; control and bidi
characters become visible escapes. Verbatim parts (arguments,
tool output) go in fences longer than any backtick run inside them; ids, models and
names in headings have Markdown's punctuation escaped, so no value can become a link
or a heading. Images are named, not embedded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..view import CONVERSATION, Item, Part, Structure, doc_id, doc_line, item_of

__all__ = ["write_markdown", "contain", "fence", "DETAILS", "MarkdownStats"]

DETAILS = ("full", "no-tools", "user-only")

_PLAIN_PARTS = frozenset({"text", "summary", "image"})
_INLINE_RE = re.compile(r"([\\`*_\[\]<>#|~&])")  # & too: "&rlm;" would be U+200F (adversary 43)
_TICKS_RE = re.compile(r"`{3,}")  # shorter runs cannot close a fence of 3


@dataclass
class MarkdownStats:
    """What an export wrote: entries on the path, sections written."""

    path: int = 0
    sections: int = 0


def md_inline(text: str) -> str:
    """``text`` (already clean) as literal inline Markdown: punctuation escaped, one line."""
    line = " ".join(text.split())
    # Most headings' words hold no punctuation to escape; a search is 5x cheaper than a sub.
    return line if _INLINE_RE.search(line) is None else _INLINE_RE.sub(r"\\\1", line)


# --------------------------------------------------------------- containment
# What may let a message's Markdown reach past its own section: a line that may be a
# heading or a code fence (in a quote or a list item too), or a "<" (raw HTML). Text
# without any is written as it is.
_MAY_LEAK_RE = re.compile(r"<[A-Za-z/!?]|^(?:[ \t]*(?:>|(?:[-*+]|\d{1,9}[.)])(?=[ \t]|$)))*[ \t]*"
                          r"(?:#|=+[ \t]*$|-[ \t-]*$|`{3}|~{3})", re.M)
_SPECIAL_RE = re.compile(r"[\\`<]")
_ROUNDS = 32  # passes over one text before it is shown verbatim instead (never reached in tests)
_parser: Any = None


def _md() -> Any:
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt("commonmark")  # raw HTML on, as renderers read it
        # Inline content is parsed where a pass asks for it (_has_inline_html): the core's
        # inline rule parses every paragraph, and only inline HTML is read from it.
        _parser.disable("inline")
    return _parser


def _has_inline_html(token: Any, env: dict[str, Any]) -> bool:
    """Whether the ``inline`` token's content parses to raw HTML, as the core's inline
    rule would parse it (the same parser, the block parse's ``env`` with its link
    references); content without a ``<`` holds none."""
    if "<" not in token.content:
        return False
    md = _md()
    children: list[Any] = []
    md.inline.parse(token.content, md, env, children)
    return any(c.type == "html_inline" for c in children)


def contain(text: str) -> str:
    """Message text (Markdown) as it can sit in a section of the export.

    The rules, checked by parsing the text with markdown-it (CommonMark) after each
    pass and applied until none is broken:

    * a heading at the text's top level goes two levels down (``#`` -> ``###``, at most
      ``######``; a setext heading becomes an ATX one): the document's own levels (1,
      the title, 2, the entries) are never a message's;
    * a code fence left open at the end is closed (it would take every later section);
    * raw HTML (an HTML block, inline tags, comments) gets a backslash before its
      ``<``, which shows the text as written and is not HTML for any renderer; code
      spans and blocks are left alone;
    * a character reference (``&#x202E;``, ``&rlm;``) gets a backslash before its
      ``&`` (:func:`escape_references`).

    Text that needs none of this is returned unchanged. Text that still breaks a rule
    after :data:`_ROUNDS` passes (none known) is returned as a code block.
    """
    if _MAY_LEAK_RE.search(text):
        quick = _contain_plain(text)
        text = quick if quick is not None else contain_parsed(text)
    return escape_references(text)


def contain_parsed(text: str) -> str:
    """:func:`contain` by the parser alone (what :func:`_contain_plain`'s answers are
    checked against: ``tests/test_markdown_containment.py``)."""
    # The parser's line numbers count a CR or CRLF as one line end, as CommonMark does:
    # split as it does, or they name other lines ("```\r```" raised IndexError).
    lines = re.split(r"\r\n?|\n", text)
    for k in range(_ROUNDS):
        if not _contain_pass(lines, every_heading=k == 0):
            return "\n".join(lines)
    return fence(text).rstrip("\n")


_FENCE_OPEN_RE = re.compile(r"(`{3,}|~{3,})(.*)")
_ATX_RE = re.compile(r"#{1,6}(?=[ \t]|$)")
_TAG_START_RE = re.compile(r"<[A-Za-z/!?]")


def _contain_plain(text: str) -> str | None:
    """:func:`contain` of the commonest text that may leak, without the parser, or
    ``None`` where it cannot tell: text whose only lines that may leak (``_MAY_LEAK_RE``)
    are ATX headings and code fences at the left margin, outside any fence, the fences
    all closed. Such a line is a block of the document's top level whatever came before
    it (a heading or a fence ends a paragraph, a list item or a quote it does not
    continue; no ``<`` means no HTML block), so the parser's passes would move each
    heading two levels down and change nothing else. Anything else (a ``<`` outside a
    fence, an indented or nested fence, a setext underline, a fence left open, a
    closing fence with a tab after it, a CR or NUL, which the parser normalises) is the
    parser's."""
    if "\r" in text or "\x00" in text:
        return None
    lines = text.split("\n")
    fence = ""  # the open fence's marker run; "" outside one
    changed = False
    for i, line in enumerate(lines):
        if fence:
            # CommonMark's closing fence: up to 3 spaces, the opener's character at least
            # as many times, then only spaces (a tab before it reaches column 4).
            body = line.lstrip(" ")
            if len(line) - len(body) <= 3 and body.startswith(fence):
                rest = body.lstrip(fence[0])
                if not rest.strip(" "):
                    fence = ""
                elif not rest.strip(" \t"):
                    return None  # spaces and tabs after a closer: parsers differ
            continue
        if _MAY_LEAK_RE.search(line) is None:
            continue
        if _TAG_START_RE.search(line) is not None:
            return None
        m = _ATX_RE.match(line)
        if m is not None:
            deeper = min(m.end() + 2, 6)
            lines[i] = "#" * (deeper - m.end()) + line
            changed = True
            continue
        m = _FENCE_OPEN_RE.match(line)
        if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
            return None  # not a fence the left margin opens (a backtick fence's info holds no backtick)
        fence = m.group(1)
    if fence:
        return None
    return "\n".join(lines) if changed else text


def _contain_pass(lines: list[str], every_heading: bool) -> bool:
    """One pass of :func:`contain`'s rules over ``lines`` (changed in place, from the
    bottom up so that earlier line numbers stay right); whether anything changed. The
    first pass moves every top-level heading down (their levels keep their order);
    later ones only a heading that an escape made at the document's levels."""
    env: dict[str, Any] = {}
    tokens = _md().parse("\n".join(lines), env)
    # A fence open at the end ends, in the parser's map, before the blank lines that
    # trail the text ("```\n    " maps to line 0 only): it is open if nothing follows it.
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    changed = False
    for t in reversed(tokens):
        if t.map is None:
            continue
        a, b = t.map
        if t.type == "html_block":
            lines[a] = _escape_first_lt(lines[a])
            changed = True
        elif t.type == "heading_open" and (every_heading or int(t.tag[1]) <= 2):
            # Nested ones too (in a list item or a quote: "- # x" is an h1 all the same).
            level = int(t.tag[1])
            deeper = min(level + 2, 6)
            if t.markup.startswith("#"):
                i = lines[a].index("#")  # no container marker holds a "#"
                lines[a] = lines[a][:i] + "#" * (deeper - level) + lines[a][i:]
                changed = changed or deeper != level
            elif t.level == 0:  # setext: the content lines, then the underline
                content = " ".join(x.strip() for x in lines[a:b - 1])
                lines[a:b] = ["#" * deeper + " " + content + " " + "#" * deeper]
                changed = True
            else:  # a nested setext heading: its underline escaped, it reads as text
                u = lines[b - 1]
                i = _underline_at(u)
                lines[b - 1] = u[:i] + "\\" + u[i:]
                changed = True
        elif t.type == "fence" and t.level == 0 and b >= end and not _closes(lines, a, b, t.markup):
            lines.append(t.markup)
            changed = True
        elif t.type == "inline" and _has_inline_html(t, env):
            region = "\n".join(lines[a:b])
            escaped = _escape_inline_html(region)
            if escaped == region:  # the scan saw no tag where markdown-it does: every "<" then
                escaped = re.sub(r"(?<!\\)<", r"\\<", region)
            lines[a:b] = escaped.split("\n")
            changed = True
    return changed


# A character reference as CommonMark decodes it (a name of the HTML5 list, or a code
# point), wherever it is not literal: text, headings, link titles, image alt text. The
# name is not checked against the list: a backslash before a "&" that starts no
# reference shows the same "&".
_REF_RE = re.compile(r"&(?:#[0-9]{1,7};|#[xX][0-9A-Fa-f]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
_REF_SPECIAL_RE = re.compile(r"[\\`&]")
_LITERAL_BLOCKS = frozenset({"fence", "code_block", "html_block"})
_refs_parser: Any = None


def escape_references(text: str) -> str:
    """``text`` (contained Markdown) with a backslash before each ``&`` that starts a
    character reference a renderer would decode: ``&#x202E;`` or ``&#8203;`` would
    show as the very bidi control or invisible character the view's escaping shows
    (adversary round 43, F2). In code spans and code blocks a reference is literal
    text and stays. The scan (:func:`_escape_refs`) reads code spans as CommonMark does
    in most text; a parse then checks that no reference is decoded anywhere, and a
    paragraph where one still is (a backtick inside an autolink) has every reference
    escaped, code spans included. Text without a reference is returned unchanged."""
    if "&" not in text or _REF_RE.search(text) is None:
        return text
    lines = text.split("\n")
    leaf: list[tuple[int, int, bool]] = []  # (first line, end, inline text)
    for t in _md().parse(text, {}):
        if t.map is not None and (t.type == "inline" or t.type in _LITERAL_BLOCKS):
            leaf.append((t.map[0], t.map[1], t.type == "inline"))
        if t.type == "fence" and t.map is not None and "&" in lines[t.map[0]]:
            # A fence's info string is decoded too (a viewer may show it as the language).
            line = lines[t.map[0]]
            at = line.index(t.markup) + len(t.markup)  # no container marker holds a ` or ~
            lines[t.map[0]] = line[:at] + _escape_refs(line[at:], code=False)
    covered = [False] * len(lines)
    for a, b, _ in leaf:
        covered[a:b] = [True] * (b - a)
    # Lines no block holds are link reference definitions (a title is decoded) or markers.
    for i, line in enumerate(lines):
        if not covered[i]:
            lines[i] = _escape_refs(line, code=False)
    for a, b, inline in reversed(leaf):
        if inline:
            lines[a:b] = _escape_refs("\n".join(lines[a:b]), code=True).split("\n")
    for _ in range(_ROUNDS):
        decoded = _decoded_regions("\n".join(lines))
        if not decoded:
            return "\n".join(lines)
        for a, b in reversed(decoded):
            lines[a:b] = _escape_refs("\n".join(lines[a:b]), code=False).split("\n")
    return fence(text).rstrip("\n")


def _escape_refs(region: str, *, code: bool) -> str:
    """``region`` with ``\\`` before each ``&`` that starts a reference (:data:`_REF_RE`)
    and is not escaped already; with ``code``, none inside a code span (a backtick run
    up to the next run of the same length, as in :func:`_escape_inline_html`)."""

    def amp(text: str, j: int) -> tuple[str, int]:
        return ("\\&" if _REF_RE.match(text, j) else "&"), j + 1

    return _outside_code(region, _REF_SPECIAL_RE, amp, code=code)


def _decoded_regions(text: str) -> list[tuple[int, int]]:
    """The line ranges of the paragraphs and headings of ``text`` where a CommonMark
    parse still decodes a character reference."""
    global _refs_parser
    if _refs_parser is None:
        from markdown_it import MarkdownIt

        # text_join would merge the decoded references into the text around them.
        _refs_parser = MarkdownIt("commonmark").disable("text_join")

    def decodes(children: list[Any] | None) -> bool:
        return any((c.type == "text_special" and c.info == "entity") or decodes(c.children) for c in children or ())

    return [(t.map[0], t.map[1]) for t in _refs_parser.parse(text)
            if t.type == "inline" and t.map is not None and decodes(t.children)]


def _underline_at(line: str) -> int:
    """Where a setext underline (``===`` or ``---``) starts on ``line``, after any
    container markers before it."""
    for i in range(len(line) - 1, -1, -1):
        if line[i] not in "=-" and not line[i].isspace():
            return i + 1 + (len(line[i + 1:]) - len(line[i + 1:].lstrip()))
    return len(line) - len(line.lstrip())


def _closes(lines: list[str], a: int, b: int, markup: str) -> bool:
    """Whether the fence opened on line ``a`` (``markup``) is closed before line ``b``."""
    if b - 1 <= a:
        return False
    last = lines[b - 1].strip()
    return len(last) >= len(markup) and set(last) == {markup[0]} and _indent_columns(lines[b - 1]) < 4


def _indent_columns(line: str) -> int:
    """Columns of ``line``'s leading white space as CommonMark counts them: a tab goes
    to the next multiple of four (a tab then a fence is indented code, not a close)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _escape_first_lt(line: str) -> str:
    i = line.find("<")
    return line if i < 0 else line[:i] + "\\" + line[i:]


def _escape_inline_html(region: str) -> str:
    """``region`` (a paragraph's or heading's lines) with a backslash before each ``<``
    that starts raw HTML, as CommonMark reads inline text: left to right, a backslash
    escapes the next character, a backtick run opens a code span up to the next run of
    the same length (else it is literal), an HTML tag, comment, declaration or
    processing instruction that starts first wins over a code span."""
    from markdown_it.common.html_re import HTML_TAG_RE

    def tag(text: str, j: int) -> tuple[str, int]:
        found = HTML_TAG_RE.match(text, j)
        return ("<", j + 1) if found is None else ("\\" + found.group(), found.end())

    return _outside_code(region, _SPECIAL_RE, tag)


def _outside_code(region: str, special: re.Pattern[str], escape: Callable[[str, int], tuple[str, int]], *,
                  code: bool = True) -> str:
    """``region`` read as CommonMark reads inline text, left to right: a backslash
    escapes the next character, a backtick run opens a code span up to the next run of
    the same length (else it is literal; without ``code`` every run is literal), and
    each other character ``special`` finds (a pattern of ``\\``, a backtick and it) at
    ``j`` is replaced by ``escape(region, j)``: its text and where to go on."""
    out: list[str] = []
    i, n = 0, len(region)
    while i < n:
        m = special.search(region, i)
        if m is None:
            out.append(region[i:])
            break
        j = m.start()
        out.append(region[i:j])
        c = region[j]
        if c == "\\":
            out.append(region[j:j + 2])
            i = j + 2
        elif c == "`":
            k = j
            while k < n and region[k] == "`":
                k += 1
            close = _closing_run(region, k, k - j) if code else -1
            end = k if close < 0 else close
            out.append(region[j:end])
            i = end
        else:
            piece, i = escape(region, j)
            out.append(piece)
    return "".join(out)


def _closing_run(s: str, start: int, run: int) -> int:
    """The end of the first run of exactly ``run`` backticks at or after ``start``, or -1."""
    k = start
    ticks = "`" * run
    while True:
        k = s.find(ticks, k)
        if k < 0:
            return -1
        e = k
        while e < len(s) and s[e] == "`":
            e += 1
        if e - k == run:
            return e
        k = e


def _quoted(line: str) -> str:
    """``line`` (contained) in a block quote, read as it reads outside one: its tabs
    become spaces first, to CommonMark's tab stops of 4 (a tab after "> " reaches the
    next tab stop sooner, so an indented code line, "\\t<!--", would start raw HTML
    in the quote; so would a tab after a list marker, "-\\t~": adversary round 43)."""
    if not line:
        return ">"
    return "> " + line.expandtabs(4)


def fence(text: str, info: str = "") -> str:
    """``text`` in a code fence no backtick run inside it can close."""
    longest = max((len(m.group()) for m in _TICKS_RE.finditer(text)), default=0) if "```" in text else 0
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}\n"


def write_markdown(st: Structure, write: Callable[[str], Any], *, leaf: int | None = None,
                   detail: str = "full", source: str = "",
                   write_bytes: Callable[[bytes], Any] | None = None) -> MarkdownStats:
    """Write the path root → ``leaf`` (default the current leaf) as Markdown.

    Args:
        st: the session's structure.
        write: called with text chunks.
        leaf: the last entry of the path.
        detail: one of :data:`DETAILS` (module docstring).
        source: the session file as the user named it (in the heading).
        write_bytes: where the sections go as UTF-8 (the text ``write`` would be
            given, encoded with ``backslashreplace``), for a binary output: the
            extension makes them as UTF-8. ``None``: through ``write``.

    Raises:
        ValueError: ``detail`` is not one of :data:`DETAILS`.
    """
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {DETAILS}, not {detail!r}")
    sm = st.sm
    leaf = st.leaf if leaf is None else leaf
    path = st.path_to(leaf) if leaf is not None else []
    stats = MarkdownStats(path=len(path))
    name = sm.get_session_name()
    title = md_inline(doc_line(name, 200)) if name else f"Session {md_inline(doc_line(sm.session_id, 80))}"
    write(f"# {title}\n\n")
    facts = []
    if source:
        facts.append(f"- file: {md_inline(doc_line(source, 300))}")
    facts.append(f"- working directory: {md_inline(doc_line(sm.cwd, 300))}")
    if leaf is not None:
        facts.append(f"- path: {len(path):,} entries, root → {md_inline(doc_id(st.id(leaf)))}")
    facts.append(f"- detail: {detail}")
    write("\n".join(facts) + "\n")
    render = _native_sections()
    if render is None:
        for n, entry in st.entries(path):
            section = _entry_section(entry, st.labels.get(n), detail)
            if section:
                write(section)
                stats.sections += 1
        return stats
    labels = st.labels
    with st.uncached():  # the entries left to Python are read once
        for batch, ids, lines in st.lines(path):
            got = render([b"" if x is None else x for x in lines], ids, [labels.get(n) for n in batch], detail)
            # What the core leaves (module docstring of src/section.rs) goes the Python way.
            missing = [n for n, section in zip(batch, got) if section is None]
            if missing:
                decoded = dict(st.entries(missing))
                got = [_entry_section(decoded[n], labels.get(n), detail).encode("utf-8", "backslashreplace")
                       if section is None else section for n, section in zip(batch, got)]
            sections = [section for section in got if section]
            stats.sections += len(sections)
            chunk = b"".join(sections)  # type: ignore[arg-type]  # every None was filled in
            if write_bytes is not None:
                write_bytes(chunk)
            else:
                write(chunk.decode())
    return stats


def _native_sections() -> Callable[[list[bytes], list[str], list[str | None], str], list[bytes | None]] | None:
    """The extension's ``markdown_sections`` (``src/section.rs``: an entry's section
    made from its line, ``None`` for the entries it leaves to :func:`_entry_section`),
    or ``None`` without the extension; ``tests/test_export_native.py`` holds the two
    paths' outputs equal."""
    from .._select import extension

    native = extension()
    return getattr(native, "markdown_sections", None) if native is not None else None


def _entry_section(entry: dict[str, Any], label: str | None, detail: str) -> str:
    """What :func:`write_markdown` writes for one decoded entry: ``"\n"`` and its
    section, or ``""`` when ``detail`` leaves it out."""
    section = _section(item_of(entry, label), detail)
    return "\n" + section if section else ""


def _keep(item: Item, part: Part, detail: str) -> bool:
    if detail == "full":
        return True
    if detail == "user-only":
        return item.kind == "user" and part.kind in _PLAIN_PARTS
    return item.kind in CONVERSATION and part.kind in _PLAIN_PARTS


def _section(item: Item, detail: str) -> str:
    if detail == "user-only" and item.kind != "user":
        return ""
    if detail == "no-tools" and item.kind not in CONVERSATION:
        return ""
    parts = [p for p in item.parts if _keep(item, p, detail)]
    if not parts and detail != "full":
        return ""
    out = [f"## {_heading(item, detail == 'full')}\n"]
    for part in parts:
        out.append(_part(part, item))
    return "\n".join(out)


def _heading(item: Item, full: bool) -> str:
    """A section's heading: kind, time, (``full``: meta, id), label, each through
    :func:`md_inline`, joined by `` · ``."""
    head = [item.kind, item.when] if item.when else [item.kind]
    if full:
        head.extend(m for m in item.meta if m)
        head.append(doc_id(item.id))
    label = doc_line(item.label, 200) if item.label is not None else None
    if all(x.strip() for x in head) and (label is None or label.strip()):
        # No piece is blank, so md_inline of the joined line is the join of each one's:
        # the separator's spaces absorb the pieces' outer white space, and the escapes
        # are per character (one search and one split for the heading, not one a piece).
        if label is not None:
            head.append(f"label: {label}")
        return md_inline(" · ".join(head))
    pieces = [md_inline(x) for x in head]
    if label is not None:
        pieces.append(f"label: {md_inline(label)}")
    return " · ".join(pieces)


def _part(part: Part, item: Item) -> str:
    kind = part.kind
    if kind in ("text", "summary"):
        return contain(part.text.rstrip("\n")) + "\n"
    if kind == "thinking":
        lines = contain(part.text.rstrip("\n")).split("\n")
        return "> *thinking*\n>\n" + "\n".join(_quoted(line) for line in lines) + "\n"
    if kind == "tool_call":
        return f"**→ {md_inline(part.title)}**\n\n" + fence(part.text, "json")
    if kind == "tool_result":
        tool = item.meta[0] if item.meta else "result"
        return f"**← {md_inline(tool)}**\n\n" + fence(part.text)
    if kind == "output":
        return fence(part.text)
    if kind == "image":
        return f"*[{md_inline(part.title)}]*\n"
    if kind == "json":
        return f"*{md_inline(part.title)}*\n\n" + fence(part.text, "json")
    return f"*{md_inline(part.text)}*\n"
