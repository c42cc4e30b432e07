"""``sessiontree export --format html``: one self-contained HTML page of a session.

The page works offline and alone: a tree sidebar (drawn as ``sessiontree tree`` draws
it, from the shape: branch points ``┬n``, tips, the leaf, folded runs and older
siblings behind ``<details>``, each other branch foldable, the chosen path in bold) and
the conversation of the chosen path (Markdown text, code blocks, collapsible thinking,
tool calls and results, images inline as ``data:`` URIs, model and usage per message,
compactions and branch summaries where they sit; entries a compaction summarized are
dimmed and marked as outside the model's context). Clicking any row shows the branch
through it (root → that entry, then down its newest line to a tip).

How much it holds (``branches``): ``all`` renders every entry, so every branch can be
read; ``path`` renders only the chosen path (the sidebar still shows the whole tree; a
click on another branch says how to export it); ``auto`` is ``all`` for session files
up to :data:`AUTO_ALL_BYTES`, else ``path``. The page is written as it is made: the
sidebar comes from the shape, and each rendered entry is decoded, written and dropped,
so a 1 GiB session exports without being held in memory.

Session text is untrusted. Every string is escaped (:func:`html.escape` after
``_render.clean``, which makes control and bidi characters visible); Markdown is
rendered as CommonMark with GFM tables and strikethrough (by the extension's
pulldown-cmark, ``src/markdown.rs``, whichever backend reads the session; by
markdown-it-py with the same rules where the extension is not built), raw HTML shown
as text, links only to ``http``, ``https`` and ``mailto`` (anything else stays text)
and Markdown images shown as links, never loaded, and a message's headings one level
down (``# A`` is an ``<h2>``, at most ``<h6>``: the page's title is its only ``<h1>``);
the data the script reads is JSON with ``<``, ``>`` and ``&`` escaped; and a
Content-Security-Policy allows only the page's own style and script (by hash) and
``data:`` images, so even a missed escape could not run a script or reach the network.
"""

from __future__ import annotations

import html
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from dataclasses import dataclass
from typing import Any

from ..view import (
    BRANCH_MARK,
    CLOSE,
    Drawing,
    ENTRY,
    FOLD,
    FOLD_MARK,
    KINDS,
    Item,
    MAX_SIBLINGS,
    NOTE,
    OPEN,
    PREVIEW_CLIP,
    Part,
    Structure,
    clean,
    doc_id,
    doc_line,
    entry_preview,
    fold_text,
    human_bytes,
    item_of,
    safe_block,
    shown_path,
    to_json_bytes,
)
from .._select import extension
from ._page import CSS, JS, csp

__all__ = ["write_html", "HtmlStats", "AUTO_ALL_BYTES", "BRANCHES"]

AUTO_ALL_BYTES = 32 * 1024 * 1024
BRANCHES = ("auto", "all", "path")

_LINK_RE = re.compile(r"(?i)(?:https?://|mailto:)")
_HTML_SPECIAL_RE = re.compile("[&<>\"']")  # what html.escape(quote=True) replaces
_THINKING_OPEN = 600  # thinking shorter than this many characters is shown open
_OUTPUT_OPEN = 20  # command output of at most this many lines is shown open


def h(text: str) -> str:
    """``text`` escaped for HTML text and attribute values (already :func:`clean`):
    ``html.escape(text, quote=True)``, by the extension's one pass when it is built
    (``src/escape.rs``; the standard library's copies the text once per character it
    replaces, five times over a tool's output; ``tests/test_view_escape.py`` holds the
    two equal)."""
    if len(text) < 64:  # most values: short, nothing to escape, and no copy
        return text if _HTML_SPECIAL_RE.search(text) is None else html.escape(text, quote=True)
    return _html_escape(text)


def _escape_once(text: str) -> str:
    """:func:`h` of a long text: the extension's ``html_escape``, else ``html.escape``
    (looked up on the first call; :data:`_html_escape` is then that function)."""
    global _html_escape
    native = extension()
    _html_escape = native.html_escape if native is not None else _stdlib_escape
    return _html_escape(text)


def _stdlib_escape(text: str) -> str:
    return text if _HTML_SPECIAL_RE.search(text) is None else html.escape(text, quote=True)


_html_escape: Callable[[str], str] = _escape_once


@dataclass
class HtmlStats:
    """What an export wrote: entries drawn and rendered, the path's length, seconds."""

    entries: int = 0
    rendered: int = 0
    path: int = 0
    branches: str = "path"
    seconds: float = 0.0


def _markdown() -> Any:
    """markdown-it-py with the page's rules (without the extension)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = lambda url: _LINK_RE.match(url) is not None  # type: ignore[method-assign]

    def link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return str(self.renderToken(tokens, idx, options, env))

    def image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        # Never load what a message points at: show the image as a link to it.
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env)
        src = token.attrGet("src") or ""
        return (f'<a class="mdimg" href="{h(str(src))}" rel="noopener noreferrer nofollow">'
                f"[image: {h(alt)}]</a>")

    def heading(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        # One level down, at most h6 (src/markdown.rs does the same).
        tokens[idx].tag = f"h{min(6, int(tokens[idx].tag[1:]) + 1)}"
        return str(self.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    md.add_render_rule("image", image)
    md.add_render_rule("heading_open", heading)
    md.add_render_rule("heading_close", heading)
    return md


def markdown_renderer() -> Callable[[str], str]:
    """The function that renders message text (Markdown, already clean) as HTML: the
    extension's ``markdown_html`` (pulldown-cmark, ~50x markdown-it-py on a session's
    messages), else markdown-it-py with the same rules. The two agree on CommonMark's
    spec and on the page's rules (raw HTML as text, which links, images as links,
    tables and strikethrough written alike); where CommonMark leaves room they may
    differ (``tests/test_export_markdown_html.py`` lists where)."""
    native = extension()
    return visible(native.markdown_html if native is not None else _markdown().render)


def visible(render: Callable[[str], str]) -> Callable[[str], str]:
    """``render`` with the page's rule (``safe_block``) applied to its output too: a
    character reference in the text (``&#x202E;``, ``&#x1b;``) is decoded by the
    renderer after the text was cleaned, and would put a bidi override or a control
    character on the page raw. The rest of its output is left as it is (markup is
    ASCII; what the text held was cleaned before)."""
    def md(text: str) -> str:
        return safe_block(render(text))

    return md


def write_html(st: Structure, write: Callable[[str], Any], *, leaf: int | None = None,
               branches: str = "auto", source: str = "",
               write_bytes: Callable[[bytes], Any] | None = None) -> HtmlStats:
    """Write the page of ``st``'s session through ``write`` (called with text chunks).

    Args:
        st: the session's structure (``view.structure_of``).
        write: where the page goes, chunk by chunk.
        leaf: the entry whose path is shown (default the current leaf).
        branches: ``auto``, ``all`` or ``path`` (module docstring).
        source: the session file as the user named it (shown, and in the hint for
            exporting another branch).
        write_bytes: where the articles go as UTF-8 (the text ``write`` would be
            given, encoded with ``backslashreplace``), for a binary output: the
            extension makes them as UTF-8. ``None``: through ``write``.

    Raises:
        ValueError: ``branches`` is not one of :data:`BRANCHES`.
    """
    if branches not in BRANCHES:
        raise ValueError(f"branches must be one of {BRANCHES}, not {branches!r}")
    t0 = time.perf_counter()
    if leaf is not None and leaf != st.leaf:
        st = st.with_leaf(leaf)
    sm = st.sm
    if branches == "auto":
        size = os.path.getsize(sm.session_file) if sm.session_file and os.path.exists(sm.session_file) else 0
        branches = "all" if size <= AUTO_ALL_BYTES else "path"
    drawing = Drawing(st)
    shape = st.shape
    path = st.path
    every = branches == "all"
    stats = HtmlStats(entries=len(st), path=len(path), branches=branches)
    outside = _Outside(st)

    name = sm.get_session_name()
    title = doc_line(name, 200) if name else f"Session {doc_line(sm.session_id, 80)}"
    facts = [f"{len(st):,} entries", f'<span id="h-path">{len(path):,} on the path shown</span>']
    if st.leaf is not None:
        # The page's script rewrites these two spans when another branch is shown (_page.JS).
        facts.append(f'<span id="h-leaf">{h(_leaf_fact(st, st.leaf))}</span>')
    if source:
        facts.append(h(doc_line(os.path.basename(source), 200)))
    facts.append(h(f"cwd {doc_line(sm.cwd, 200)}"))
    if not every:
        facts.append("only this path's entries are in this file (export another with --leaf ID)")
    write("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          f'<meta http-equiv="Content-Security-Policy" content="{h(csp())}">\n'
          '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
          '<meta name="referrer" content="no-referrer">\n'
          f"<title>{h(title)}</title>\n<style>{CSS}</style></head>\n<body class=\"dp\">\n"
          f"<header><h1>{h(title)}</h1><p>{' · '.join(facts)}</p></header>\n")

    with st.uncached():  # the sidebar decodes each entry once, for its preview
        _write_tree(drawing, write, every)
    write('<main id="conv">\n')
    md = markdown_renderer()
    chunks = write_bytes if write_bytes is not None else lambda b: write(b.decode())
    stats.rendered += _write_articles(st, path, md, chunks, shown=True, outside=outside)
    if every:
        on = st.on_path
        stats.rendered += _write_articles(st, [n for n in drawing.order() if n not in on], md, chunks,
                                          shown=False, outside=())
    if not path:
        write('<p class="note">The session has no entries.</p>\n')
    write("</main>\n")

    write('<script type="application/json" id="st-data">')
    # The page's hint to export another branch is pasted into a shell, anywhere: the
    # path absolute and quoted as every command prints it (view.shown_path).
    file = source or sm.session_file
    _write_data(st, write, shown_path(os.path.abspath(file)) if file else "FILE")
    write(f"</script>\n<script>{JS}</script>\n</body></html>\n")
    stats.seconds = time.perf_counter() - t0
    return stats


def _leaf_fact(st: Structure, leaf: int) -> str:
    """The header's word on ``leaf``, the tip of the branch shown (the page's script words
    it the same way when the reader picks another branch)."""
    shown = doc_id(st.id(leaf))
    if leaf == st.session_leaf or st.session_leaf is None:
        return f"to {shown} (the session's current leaf)"
    return f"to {shown}, a branch (the session's current leaf is {doc_id(st.id(st.session_leaf))})"


_DATA_CHUNK = 4096  # array items per piece of the page's data
_GROUP = 256  # sidebar rows drawn, and their entries fetched, at a time


def _write_data(st: Structure, write: Callable[[str], Any], file: str) -> None:
    """The data the page's script reads (one JSON object: ``ids``, ``parents``, ``down``,
    ``leaf``, ``sessionLeaf``, ``file``), written in pieces of :data:`_DATA_CHUNK`
    items: its arrays hold one item per entry of the session, and the whole text at once
    was the export's largest allocation."""
    shape = st.shape
    start, kids = shape.children_table()
    on_path = st.on_path
    leaf = st.leaf

    def down() -> Iterator[int]:
        # Where the page goes down from each entry: the path's child, else the newest.
        for i in range(len(shape)):
            a, b = start[i], start[i + 1]
            if a == b or i == leaf:
                yield -1
            elif b - a == 1:
                yield kids[a]
            else:
                yield next((c for c in kids[a:b] if c in on_path), kids[b - 1])

    for k, (name, items) in enumerate((("ids", (doc_id(eid, len(eid)) for eid in shape.ids)),
                                       ("parents", iter(shape.parents)), ("down", down()))):
        write(("{" if k == 0 else ",") + f'"{name}":[')
        sep = ""
        while chunk := list(islice(items, _DATA_CHUNK)):
            write(sep + _script_json(chunk)[1:-1])
            sep = ","
        write("]")
    tail = {"leaf": leaf if leaf is not None else -1,
            "sessionLeaf": st.session_leaf if st.session_leaf is not None else -1, "file": file}
    write("," + _script_json(tail)[1:])


def _script_json(value: Any) -> str:
    """JSON that cannot end its ``<script>`` element or open a comment in it."""
    text = to_json_bytes(value, indent=False).decode("utf-8", "surrogatepass")
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class _Outside:
    """Which path entries the model does not see at the leaf (before a compaction's kept
    part), held as the entries it does see: a long path's context is its last part, so
    this is small where the path is long (a set of the outside ones held most of a 1 GiB
    path: 35 MB)."""

    def __init__(self, st: Structure) -> None:
        self.inside: set[int] = set()
        self.path = st.on_path
        if st.leaf is None:
            return
        projection = st.sm.build_session_projection(st.id(st.leaf))
        for p in projection.entries:
            n = st.number(p.source.get("id"))
            if n is not None:
                self.inside.add(n)

    def __contains__(self, n: object) -> bool:
        return n in self.path and n not in self.inside


# ----------------------------------------------------------------------- sidebar


def _write_tree(drawing: Drawing, write: Callable[[str], Any], every: bool) -> None:
    st = drawing.st
    for i in range(len(st)):
        if len(st.children(i)) > MAX_SIBLINGS + 1:
            drawing.expand(("more", i))  # all siblings drawn; the older ones closed below
    write('<nav id="tree" aria-label="session tree">\n<p class="hint">Click an entry to read its branch. '
          f"▾ folds a branch; {FOLD_MARK} rows open folded runs. {BRANCH_MARK}n: a branch point with n branches; "
          "tip: the end of a branch; ← leaf: the session's current leaf.</p>\n")
    in_summary = False
    out: list[str] = []
    rows = drawing.iter_rows(markers=True)
    while group := list(islice(rows, _GROUP)):
        # The entries a group's rows preview are fetched in one call, cut to what a preview
        # reads (PREVIEW_CLIP): a row read alone cost a staleness check and a whole line.
        previews = dict(st.entries([r.entry for r in group if r.kind == ENTRY], clip=PREVIEW_CLIP))
        for row in group:
            kind = row.kind
            if kind == OPEN:
                opened = "" if drawing.sibling_folded(row.entry) else " open"
                out.append(f'<details class="br"{opened}><summary>')
                in_summary = True
            elif kind == CLOSE:
                out.append("</details>\n")
            elif kind == ENTRY:
                out.append(_row(st, row.entry, row.prefix, preview=True, toggle=in_summary,
                                entry=previews[row.entry]))
                if in_summary:
                    out.append("</summary>")
                    in_summary = False
            elif kind == FOLD:
                text = fold_text(drawing.kinds(row.hidden))
                out.append(f'<details class="fold"><summary>{h(row.prefix)}  {h(clean(text))}</summary>')
                # A fold may hide the whole path: its rows are written as they go.
                _write_hidden(st, row.hidden, row.prefix, every, out, write)
                out.append("</details>\n")
            elif kind == NOTE:
                out.append(f'<p class="hint">{h(row.note)}</p>\n')
            if len(out) >= 512:
                write("".join(out))
                out.clear()
    write("".join(out) + "</nav>\n")


def _write_hidden(st: Structure, hidden: Sequence[int], prefix: str, every: bool, out: list[str],
                  write: Callable[[str], Any]) -> None:
    """The rows of a fold (``every``: with previews), :data:`_GROUP` at a time
    through ``out`` (written and emptied after each)."""
    for at in range(0, len(hidden), _GROUP):
        nums = hidden[at:at + _GROUP]
        if every:
            out.extend(_row(st, n, prefix, preview=True, entry=e) for n, e in st.entries(nums, clip=PREVIEW_CLIP))
        else:
            out.extend(_plain_rows(st, nums, prefix))
        write("".join(out))
        out.clear()


def _plain_rows(st: Structure, nums: Sequence[int], prefix: str) -> Iterator[str]:
    """``_row(st, n, prefix, preview=False)`` for each of ``nums`` (a fold's hidden rows,
    most of a long path's sidebar), with what is the same for every row worked out once:
    the same strings (``tests/test_export_html.py``)."""
    shape = st.shape
    start, kids = shape.children_table()
    types, roles, labels, on_path, tip = shape.types, shape.roles, st.labels, st.on_path, st.session_leaf
    px = f'<span class="px">{h(prefix)}</span>'
    kind_html: dict[str, str] = {}
    for n in nums:
        branches = start[n + 1] - start[n]
        if n in labels or branches >= 2 or n == tip:
            yield _row(st, n, prefix, preview=False)  # marks: the general row
            continue
        etype = types[n]
        kind = (roles[n] if isinstance(roles[n], str) else "message") if etype == "message" else \
            etype if isinstance(etype, str) else str(etype)
        k = kind_html.get(kind)
        if k is None:
            d = doc_line(kind, 40)
            k = kind_html[kind] = f' <span class="k{f" k-{d}" if d in KINDS else ""}">{h(d)}</span> <span class="pv"></span>'
        eid = shape.ids[n]
        shown = eid if len(eid) <= 8 and eid.isascii() and eid.isalnum() else h(doc_id(eid, 8))
        mark = "" if branches else ' <span class="mk">tip</span>'
        yield (f'<a class="{"r on" if n in on_path else "r"}" id="t{n}" href="#a{n}" data-n="{n}">{px}{shown}'
               f'{k}{mark}</a>\n')


def _row(st: Structure, n: int, prefix: str, *, preview: bool, toggle: bool = False,
         entry: dict[str, Any] | None = None) -> str:
    """One row of the sidebar; ``entry`` the entry ``n`` (whole, or cut to
    ``PREVIEW_CLIP``), else it is read here when ``preview`` asks for it."""
    kind = st.kind(n)
    css = "r on" if n in st.on_path else "r"
    text = ""
    if preview:
        _, text = entry_preview(entry if entry is not None else st.entry(n), clean)
        text = doc_line(text, 110)
    marks = []
    label = st.labels.get(n)
    if label is not None:
        marks.append(f'<span class="lb">[{h(doc_line(label, 80))}]</span>')
    branches = len(st.children(n))
    if branches >= 2:
        marks.append(f'<span class="mk">{BRANCH_MARK}{branches}</span>')
    elif branches == 0 and n != st.session_leaf:
        marks.append('<span class="mk">tip</span>')
    if n == st.session_leaf:
        marks.append('<span class="mk">← leaf</span>')
    k = doc_line(kind, 40)
    kcls = f" k-{k}" if k in KINDS else ""
    tg = '<span class="tg"></span>' if toggle else ""
    return (f'<a class="{css}" id="t{n}" href="#a{n}" data-n="{n}"><span class="px">{h(prefix)}</span>{tg}'
            f'{h(doc_id(st.id(n), 8))} <span class="k{kcls}">{h(k)}</span> <span class="pv">{h(text)}</span>'
            f'{" " + " ".join(marks) if marks else ""}</a>\n')


# ----------------------------------------------------------------------- articles


def _native_articles() -> Callable[..., list[bytes | None]] | None:
    """The extension's ``html_articles``, or ``None`` without the extension."""
    native = extension()
    return getattr(native, "html_articles", None) if native is not None else None


def _write_articles(st: Structure, nums: Sequence[int], md: Callable[[str], str], write: Callable[[bytes], Any], *,
                    shown: bool, outside: Any) -> int:
    """Write the articles of ``nums`` as UTF-8 (``outside``: the entries outside the
    model's context); how many. The extension makes each article from the entry's line
    (``html_articles``, ``src/section.rs``) where it covers it, :func:`_article` the
    others, in their places (``tests/test_export_native.py`` holds the two equal)."""
    render = _native_articles()
    if render is None:
        for n, entry in st.entries(nums):
            write(_article(st, n, entry, md, shown=shown, out=n in outside).encode("utf-8", "backslashreplace"))
        return len(nums)
    labels, kinds = st.labels, sorted(KINDS)
    with st.uncached():  # the entries left to Python are read once
        for batch, ids, lines in st.lines(nums):
            outs = [n in outside for n in batch]
            got = render([b"" if x is None else x for x in lines], ids, [labels.get(n) for n in batch], list(batch),
                         shown, outs, kinds)
            missing = [n for n, text in zip(batch, got) if text is None]
            if missing:
                decoded = dict(st.entries(missing))
                got = [_article(st, n, decoded[n], md, shown=shown, out=out).encode("utf-8", "backslashreplace")
                       if text is None else text for n, text, out in zip(batch, got, outs)]
            write(b"".join(got))  # type: ignore[arg-type]  # every None was filled in
    return len(nums)



def _article(st: Structure, n: int, entry: dict[str, Any], md: Callable[[str], str], *, shown: bool,
             out: bool) -> str:
    item = item_of(entry, st.labels.get(n))
    kcls = f" k-{item.kind}" if item.kind in KINDS else ""
    classes = "m" + (f" m-{item.kind}" if kcls else "") + (" shown" if shown else "") + (" out" if out else "")
    parts = [f'<article id="a{n}" class="{classes}" data-n="{n}"><header><span class="k{kcls}">{h(item.kind)}</span>']
    if item.when:
        parts.append(f"<span>{h(item.when)}</span>")
    if item.meta:
        parts.append(f"<span>{h(' · '.join(m for m in item.meta if m))}</span>")
    if item.label is not None:
        parts.append(f'<span class="lb">[{h(doc_line(item.label, 200))}]</span>')
    parts.append(f'<a class="eid" href="#a{n}">{h(doc_id(item.id))}</a></header>')
    if out:
        parts.append('<p class="outnote">summarized by a later compaction: not in the model\'s context at this leaf</p>')
    role = item.kind
    for part in item.parts:
        parts.append(_part(part, md, role, item))
    parts.append("</article>\n")
    return "".join(parts)


def _lines(text: str) -> str:
    n = text.count("\n") + 1 if text else 0
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))  # no copy when ASCII
    return f"{n:,} line{'' if n == 1 else 's'}, {human_bytes(size)}"


def _part(part: Part, md: Callable[[str], str], role: str, item: Item) -> str:
    kind = part.kind
    if kind in ("text", "summary"):
        return f'<div class="md">{md(part.text)}</div>'
    if kind == "thinking":
        opened = " open" if len(part.text) < _THINKING_OPEN else ""
        return (f'<details class="js"{opened}><summary>thinking</summary>'
                f'<div class="thinking md">{md(part.text)}</div></details>')
    if kind == "tool_call":
        return f'<details class="tc"><summary>→ {h(part.title)}</summary><pre><code>{h(part.text)}</code></pre></details>'
    if kind == "tool_result":
        tool = item.meta[0] if item.meta else "result"
        err = " err" if part.error else ""
        return (f'<details class="tr{err}"><summary>← {h(tool)} · {_lines(part.text)}</summary>'
                f"<pre>{h(part.text)}</pre></details>")
    if kind == "image":
        return f'<img class="im" alt="{h(part.title)}" src="data:{part.mime};base64,{part.data}">'
    if kind == "output":
        err = " err" if part.error else ""
        opened = " open" if part.text.count("\n") < _OUTPUT_OPEN else ""
        return (f'<details class="tr{err}"{opened}><summary>output · {_lines(part.text)}</summary>'
                f"<pre>{h(part.text)}</pre></details>")
    if kind == "json":
        return f'<details class="js"><summary>{h(part.title)}</summary><pre>{h(part.text)}</pre></details>'
    return f'<p class="note">{h(part.text)}</p>'
