"""``sessiontree export``: the HTML page's content and safety (parsed with the standard
library's HTML parser; the real-browser tests are in ``test_export_browser.py``) and the
Markdown export's detail levels, held against ``get_branch``, ``sessiontree tree --json``
and ``sessiontree context --json``."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import html
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from _shared import open_quiet
from sessiontree import SessionManager
from sessiontree.view import structure_of
from sessiontree.export._page import CSS, JS
from sessiontree.export.html import write_html
from sessiontree.export.markdown import fence, write_markdown
from sessiontree.generate import generate_session


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, encoding="utf-8", errors="replace")


class Page(HTMLParser):
    """What a browser would build, as far as the tests need: elements with attributes,
    the text inside each article / tree row, scripts and their bodies."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.articles: dict[str, str] = {}  # id -> text
        self.article_classes: dict[str, str] = {}
        self.order: list[str] = []  # article ids in document order
        self.rows: list[tuple[str, str]] = []  # (data-n, text) of tree rows
        self._stack: list[tuple[str, str, list[str]]] = []  # (tag, key, text)
        self._script: tuple[dict[str, str], list[str]] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a))
        if tag == "script":
            self._script = (a, [])
        if tag == "article":
            self._stack.append(("article", a["id"], []))
            self.article_classes[a["id"]] = a.get("class", "")
            self.order.append(a["id"])
        elif tag == "a" and "r" in a.get("class", "").split():
            self._stack.append(("row", a["data-n"], []))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script[0], "".join(self._script[1])))
            self._script = None
        if self._stack and ((tag == "article" and self._stack[-1][0] == "article")
                            or (tag == "a" and self._stack[-1][0] == "row")):
            kind, key, text = self._stack.pop()
            if kind == "article":
                self.articles[key] = "".join(text)
            else:
                self.rows.append((key, "".join(text)))

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script[1].append(data)
        for _, _, text in self._stack:
            text.append(data)

    def data(self) -> dict[str, Any]:
        body = next(b for a, b in self.scripts if a.get("id") == "st-data")
        return json.loads(body)


def export_page(path: Path, backend: str, **kw: Any) -> tuple[str, Any]:
    with open_quiet(path, backend) as sm:
        st = structure_of(sm)
        out: list[str] = []
        stats = write_html(st, out.append, source=str(path), **kw)
    return "".join(out), stats


@pytest.fixture(scope="module")
def demo_like(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session from the demo's generator and seed (make demo: seed 7), small."""
    path = tmp_path_factory.mktemp("export") / "demo.jsonl"
    generate_session(path, size_bytes=3_000_000, seed=7)
    return path


# --------------------------------------------------------------------------- HTML


def test_html_tree_and_path_are_tree_and_context(demo_like: Path) -> None:
    """The page's sidebar is `sessiontree tree --json`'s rows in order, the shown path is
    `get_branch()`, and the entries marked as in the context give `context --json`."""
    page_text, stats = export_page(demo_like, "native", branches="all")
    page = Page(page_text)
    data = page.data()
    tree = json.loads(cli("tree", str(demo_like), "--json").stdout)
    assert [data["ids"][int(n)] for n, _ in page.rows] == [r["id"] for r in tree]
    on = {data["ids"][int(n)] for n, _ in page.rows}
    assert on == {r["id"] for r in tree}
    with open_quiet(demo_like, "native") as sm:
        branch = [e["id"] for e in sm.get_branch()]
        shown = [data["ids"][int(a[1:])] for a in page.order if "shown" in page.article_classes[a].split()]
        assert shown == branch
        assert stats.rendered == len(sm)  # branches="all": every entry readable
        context = json.loads(cli("context", str(demo_like), "--json").stdout)
        in_context = [data["ids"][int(a[1:])] for a in page.order
                      if "shown" in page.article_classes[a].split() and "out" not in page.article_classes[a].split()]
        projection = sm.build_session_projection()
        # The projection leads with the compaction; on the page it sits where it is on the path.
        where = {eid: k for k, eid in enumerate(branch)}
        assert in_context == sorted((p.source["id"] for p in projection.entries), key=where.__getitem__)
        assert len(in_context) < len(branch)  # the demo's compactions summarize part of the path
        assert [m for p in projection.entries for m in p.messages] == context["messages"]
        # Every text a context message carries is on the page, in the article of its entry.
        for p in projection.entries:
            for msg in p.messages:
                for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
                    if block.get("type") == "text" and block["text"].strip():
                        snippet = block["text"].strip().split("\n")[0][:40]
                        if snippet.isascii() and not re.search(r"[`*_\[\]<>&#\\|~]", snippet):
                            assert snippet in page.articles[f"a{data['ids'].index(p.source['id'])}"]
    # The leaf row says so; branch points show their branch count.
    leaf_rows = [text for n, text in page.rows if "← leaf" in text]
    assert len(leaf_rows) == 1 and data["ids"][data["leaf"]] in [r["id"] for r in tree if r["leaf"]]



def _header_facts(page_text: str) -> dict[str, str]:
    head = re.search(r"<header><h1>.*?</h1><p>(.*?)</p></header>", page_text, re.S)
    assert head is not None
    return {k: html.unescape(v) for k, v in re.findall(r'<span id="(h-\w+)">(.*?)</span>', head.group(1))}


@pytest.mark.parametrize("branches", ["all", "path"])
def test_html_header_describes_the_branch_shown(demo_like: Path, backend: str, branches: str) -> None:
    """``--leaf`` on an abandoned tip: the header counts that branch's path and names its
    tip as a branch beside the session's current leaf (issue 26: it named the tip as if it
    were the leaf); the page's data carries both leaves for the script that rewrites the
    header when the reader picks another branch (tests/test_export_browser.py)."""
    with open_quiet(demo_like, backend) as sm:
        leaf = sm.leaf_id
        tip = next(e["id"] for e in sm.get_entries() if not sm.get_children(e["id"]) and e["id"] != leaf)
        n_tip = len(sm.get_branch(tip))
        n_leaf = len(sm.get_branch())
        st = structure_of(sm)
        out: list[str] = []
        write_html(st, out.append, leaf=st.number(tip), branches=branches)
        default: list[str] = []
        write_html(st, default.append, branches=branches)
    assert n_tip != n_leaf
    page_text = "".join(out)
    assert _header_facts(page_text) == {
        "h-path": f"{n_tip:,} on the path shown",
        "h-leaf": f"to {tip}, a branch (the session's current leaf is {leaf})",
    }
    data = Page(page_text).data()
    assert data["ids"][data["leaf"]] == tip and data["ids"][data["sessionLeaf"]] == leaf
    assert _header_facts("".join(default)) == {
        "h-path": f"{n_leaf:,} on the path shown",
        "h-leaf": f"to {leaf} (the session's current leaf)",
    }

def test_html_path_only_decodes_the_path(demo_like: Path) -> None:
    """branches="path" renders exactly the path, and reads only it (decoded, or its
    lines for the extension to render) and the rows a reader sees without unfolding."""
    with open_quiet(demo_like, "native") as sm:
        decoded: list[str] = []
        real, real_many, real_lines = sm.get_entry, sm.get_entries_by_id, sm.get_lines_by_id

        def counting(entry_id: str) -> Any:
            decoded.append(entry_id)
            return real(entry_id)

        def counting_many(entry_ids: Any, **kw: Any) -> Any:
            ids = list(entry_ids)
            decoded.extend(ids)
            return real_many(ids, **kw)

        def counting_lines(entry_ids: Any) -> Any:
            ids = list(entry_ids)
            decoded.extend(ids)
            return real_lines(ids)

        sm.get_entry = counting  # type: ignore[method-assign]
        sm.get_entries_by_id = counting_many  # type: ignore[method-assign]
        sm.get_lines_by_id = counting_lines  # type: ignore[method-assign]
        st = structure_of(sm)
        decoded.clear()
        out: list[str] = []
        stats = write_html(st, out.append, branches="path")
        page = Page("".join(out))
        path_ids = [e["id"] for e in sm.get_branch()]
        assert stats.rendered == len(path_ids) < len(sm)
        assert [page.data()["ids"][int(a[1:])] for a in page.order] == path_ids
        assert set(path_ids) <= set(decoded)
        assert len(set(decoded)) < len(sm)
        # Folded rows carry no preview: they were not decoded.
        assert len(page.rows) == len(sm)


EVIL_ID = 'x</script><script>alert(1)</script>'


def _evil_session(path: Path) -> Path:
    header = {"type": "session", "version": 3, "id": "evil", "timestamp": "2025-01-01T00:00:00.000Z",
              "cwd": "/p<script>alert('cwd')</script>"}
    entries = [
        {"type": "message", "id": EVIL_ID, "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
         "message": {"role": "user", "timestamp": 1, "content":
                     "hi <script>alert('user')</script> <img src=x onerror=alert(1)> "
                     "[click](javascript:alert('link')) [ok](https://example.com/a) "
                     "<a href=\"javascript:alert(2)\">raw</a> ![img](https://tracker.example/p.png) "
                     "[data](data:text/html,<script>alert(3)</script>) [v](vbscript:msgbox) "
                     "[spaced]( javascript:alert(4)) [ent](&#106;avascript:alert(5)) <javascript:alert(6)> "
                     "bidi \u202eevil\u202c \u2066iso\u2069 esc \x1b[31m nul \x00 cr\rlf"}},
        {"type": "message", "id": "a1", "parentId": EVIL_ID, "timestamp": "2025-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "provider": "p\"><script>alert('p')</script>", "model": "m",
                     "timestamp": 2, "stopReason": "stop",
                     "usage": {"input": 1, "output": 2, "cost": {"total": 0.5}},
                     "content": [
                         {"type": "text", "text": "```\n</pre></code><script>alert('code')</script>\n```"},
                         {"type": "thinking", "thinking": "<b onmouseover=alert(7)>think</b>"},
                         {"type": "toolCall", "id": "t1", "name": "bash<script>",
                          "arguments": {"command": "echo '</script><script>alert(8)</script>'"}},
                         {"type": "image", "mimeType": "image/svg+xml",
                          "data": base64.b64encode(b"<svg onload=alert(9)></svg>").decode()},
                         {"type": "image", "mimeType": "image/png", "data": "AAAA\" onerror=\"alert(10)"},
                         {"type": "image", "mimeType": "image/png", "data": base64.b64encode(b"\x89PNG").decode()},
                     ]}},
        {"type": "label", "id": "l1", "parentId": "a1", "timestamp": "2025-01-01T00:00:03.000Z",
         "targetId": "a1", "label": "<script>alert('label')</script>\u202e"},
        {"type": "session_info", "id": "s1", "parentId": "l1", "timestamp": "2025-01-01T00:00:04.000Z",
         "name": "</title><script>alert('name')</script>"},
    ]
    with open(path, "w", encoding="utf-8") as f:
        for obj in [header, *entries]:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return path


def test_html_session_text_cannot_inject(tmp_path: Path, backend: str) -> None:
    path = _evil_session(tmp_path / "evil.jsonl")
    text, _ = export_page(path, backend, branches="all")
    page = Page(text)
    # Exactly two scripts: the data block (not executable) and the page's own script.
    assert [(a.get("type"), a.get("id")) for a, _ in page.scripts] == [("application/json", "st-data"), (None, None)]
    assert page.scripts[1][1] == JS
    # The data block parses back to the true ids and cannot end its element early.
    data = page.data()
    assert EVIL_ID in data["ids"]
    body = page.scripts[0][1]
    assert "<" not in body and ">" not in body
    # No element carries an event handler, a javascript:/data:/vbscript: link or a remote source.
    for tag, attrs in page.elements:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        if tag in ("a",) and "href" in attrs:
            href = attrs["href"]
            assert href.startswith("#") or re.match(r"https?://|mailto:", href), href
            if tag == "a" and href.startswith("http") and "mdimg" not in attrs.get("class", ""):
                assert "noopener" in attrs.get("rel", "")
        if tag == "img":
            assert re.fullmatch(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]*={0,2}", attrs["src"]), attrs
        assert tag not in ("iframe", "object", "embed", "form", "base", "link", "svg")
    assert "https://tracker.example/p.png" not in [a.get("src") for t, a in page.elements if t == "img"]
    # Bidi and other controls are shown as escapes, never raw.
    for ch in "\u202e\u202c\u2066\u2069\x1b\x00\r":
        assert ch not in text
    assert "\\u202e" in text and "\\x1b" in text
    # The visible text keeps the hostile strings as text.
    user = page.articles["a0"]
    assert "<script>alert('user')</script>" in user  # shown, as text
    assert "[click](javascript:alert('link'))" in user  # not a link: the Markdown stays as written
    assert "<a href=\"javascript:alert(2)\">raw</a>" in user
    # One CSP meta tag, first in <head>, allowing only this page's style and script by hash.
    metas = [a for t, a in page.elements if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(metas) == 1
    csp = metas[0]["content"]
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    for code in (CSS, JS):
        digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert text.index("Content-Security-Policy") < text.index("<title>")


@pytest.mark.parametrize("renderer", ["extension", "markdown_it"])
def test_html_message_headings_sit_below_the_title(tmp_path: Path, backend: str, renderer: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's title is its only ``<h1>``: a message's ``# Goal`` is an ``<h2>``
    (each level one down, at most ``<h6>``), by either renderer (docs/VIEWERS.md)."""
    import sessiontree.export.html as html_mod

    if renderer == "markdown_it":
        monkeypatch.setattr(html_mod, "markdown_renderer", lambda: html_mod._markdown().render)
    path = tmp_path / "h.jsonl"
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"}
    user = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "# Goal\n\ntext\n\n###### Six"}}
    reply = {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2025-01-01T00:00:02.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "Plan\n====\n\n## Steps"}]}}
    path.write_text("".join(json.dumps(x) + "\n" for x in (head, user, reply)), encoding="utf-8")
    text, _ = export_page(path, backend, branches="all")
    assert len(re.findall(r"<h1[ >]", text)) == 1 and "<header><h1>" in text
    found = re.findall(r"<(h[1-6])>([^<]*)</\1>", text)
    assert found[1:] == [("h2", "Goal"), ("h6", "Six"), ("h2", "Plan"), ("h3", "Steps")], found


def test_html_big_session_path_mode_on_auto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sessiontree.export.html as html_mod

    path = tmp_path / "s.jsonl"
    generate_session(path, entries=400, seed=3)
    monkeypatch.setattr(html_mod, "AUTO_ALL_BYTES", 1000)
    _, stats = export_page(path, "native")
    assert stats.branches == "path"
    monkeypatch.setattr(html_mod, "AUTO_ALL_BYTES", 10**12)
    _, stats = export_page(path, "native")
    assert stats.branches == "all" and stats.rendered == 400


# ----------------------------------------------------------------------- Markdown


def _md(path: Path, backend: str, **kw: Any) -> str:
    with open_quiet(path, backend) as sm:
        st = structure_of(sm)
        out: list[str] = []
        write_markdown(st, out.append, **kw)
    return "".join(out)


def test_a_missing_field_leaves_no_empty_place_between_separators(tmp_path: Path, backend: str) -> None:
    """A ``usage`` entry without a ``kind`` (or a blank one) and with no model, and an
    assistant message whose usage lacks values, show the fields they have, each once
    between two separators: never ``· ·`` (trial 55), in Markdown, HTML and ``tree``."""
    entries = [
        {"type": "usage", "provider": "p", "model": "m", "usage": {"input": 1, "output": None}},
        {"type": "usage", "kind": " ", "usage": {"input": 2}},
        {"type": "usage", "kind": "compaction", "provider": "p", "usage": {"output": 3, "cost": {"total": None}}},
        {"type": "message", "message": {"role": "assistant", "provider": "p", "model": "m", "content": "t",
                                        "usage": {"input": None, "output": 4, "cacheRead": None}}},
    ]
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}]
    for k, e in enumerate(entries):
        lines.append({**e, "id": f"e{k}", "parentId": f"e{k - 1}" if k else None,
                      "timestamp": "2025-01-01T00:00:01.000Z"})
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    empty = re.compile(r"·\s*·|·\s*$|^\s*·")
    md = [x for x in _md(path, backend).splitlines() if x.startswith("## ")]
    assert md == ["## usage · 2025-01-01 00:00:01 UTC · p/m · in 1 · e0",
                  "## usage · 2025-01-01 00:00:01 UTC · (unknown) · in 2 · e1",
                  "## usage · 2025-01-01 00:00:01 UTC · compaction · p/(unknown) · out 3 · e2",
                  "## assistant · 2025-01-01 00:00:01 UTC · p/m · out 4 · e3"], md
    page, _ = export_page(path, backend)
    metas = re.findall(r"<span>([^<]*)</span>", page)
    assert "p/m · in 1" in metas and "(unknown) · in 2" in metas and "p/m · out 4" in metas, metas
    assert not [m for m in metas if empty.search(m)], metas
    out = cli("tree", str(path), "--backend", backend).stdout
    rows = [x.split(" usage ", 1)[1].split("←")[0].strip() for x in out.splitlines() if " usage " in x]
    assert rows == ["p/m · in 1", "(unknown) · in 2", "compaction · p/(unknown) · out 3"], out


def test_markdown_detail_levels(demo_like: Path, backend: str) -> None:
    full = _md(demo_like, backend)
    no_tools = _md(demo_like, backend, detail="no-tools")
    user_only = _md(demo_like, backend, detail="user-only")
    with open_quiet(demo_like, backend) as sm:
        branch = sm.get_branch()
    users = [e for e in branch if e["type"] == "message" and e["message"].get("role") == "user"]
    calls = [b for e in branch if e["type"] == "message" and isinstance(e["message"].get("content"), list)
             for b in e["message"]["content"] if isinstance(b, dict) and b.get("type") == "toolCall"]
    assert users and calls
    assert user_only.count("\n## user") == len(users)
    assert "\n## assistant" not in user_only and "**→" not in user_only
    assert "**→" not in no_tools and "**←" not in no_tools and "> *thinking*" not in no_tools
    assert "\n## toolResult" not in no_tools
    assert full.count("**→ ") == len(calls)
    # One section per path entry, in order (its heading ends with the id; message text
    # may hold headings of its own).
    heads = re.findall(r"^## .* · ([0-9a-f]{8})(?: · label: .*)?$", full, re.MULTILINE)
    assert heads == [e["id"] for e in branch]
    assert len(user_only) < len(no_tools) < len(full)
    for u in users:
        first = u["message"]["content"] if isinstance(u["message"]["content"], str) else \
            next(b["text"] for b in u["message"]["content"] if b.get("type") == "text")
        line = first.strip().split("\n")[0]
        if line.isascii():
            assert line in user_only


def test_markdown_leaf_and_fences(corpus_dir: Path, backend: str) -> None:
    path = corpus_dir / "hand-labels-names.jsonl"
    with open_quiet(path, backend) as sm:
        other = next(e["id"] for e in sm.get_entries() if e["id"] not in {x["id"] for x in sm.get_branch()}
                     and e["type"] == "message")
        expected = [e["id"] for e in sm.get_branch(other)]
        st = structure_of(sm)
        out: list[str] = []
        write_markdown(st, out.append, leaf=st.number(other))
    text = "".join(out)
    assert [m for m in re.findall(r"· ([0-9a-f]{8})(?: ·|\n)", text)] == expected
    assert fence("a ``` b ```` c") == "`````\na ``` b ```` c\n`````\n"


def test_markdown_is_terminal_and_markup_safe(tmp_path: Path) -> None:
    text = _md(_evil_session(tmp_path / "evil.jsonl"), "native")
    for ch in "\u202e\u2066\x1b\x00\r":
        assert ch not in text
    # The session name and the model are literal text in headings (no link, no HTML).
    assert "\\<script\\>" in text
    assert "# \\</title\\>\\<script\\>" in text


# ----------------------------------------------------------------------- command line


def test_cli_export_html_and_markdown(tmp_path: Path, corpus_dir: Path) -> None:
    src = corpus_dir / "hand-labels-names.jsonl"
    out = tmp_path / "page.html"
    p = cli("export", str(src), "--format", "html", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "wrote" in p.stdout and out.stat().st_size > 1000
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".export-")]
    page = Page(out.read_text(encoding="utf-8"))
    assert len(page.rows) == 22
    md = cli("export", str(src), "--format", "markdown", "--detail", "user-only")
    assert md.returncode == 0 and md.stdout.startswith("# ") and "u5 back on second branch" in md.stdout
    # --leaf takes a unique prefix.
    p = cli("export", str(src), "--format", "markdown", "--leaf", "9fd0")
    assert p.returncode == 0, p.stderr
    assert "a4 on first branch" in p.stdout and "u5 back" not in p.stdout


@pytest.mark.parametrize("args, needle", [
    (["--format", "html", "--detail", "full"], "--detail is an option of --format markdown"),
    (["--format", "markdown", "--branches", "all"], "--branches is an option of --format html"),
    (["--format", "markdown", "--leaf", "nope"], "--leaf nope not found"),
    (["--format", "markdown", "--leaf", "9"], "ambiguous"),
    (["--format", "html", "--out", "/no/such/folder/x.html"], "no such folder"),
])
def test_cli_export_errors(corpus_dir: Path, args: list[str], needle: str) -> None:
    p = cli("export", str(corpus_dir / "hand-labels-names.jsonl"), *args)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr


def test_cli_export_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "keep.html"
    target.write_text("old")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a session\n")
    p = cli("export", str(bad), "--format", "html", "--out", str(target))
    assert p.returncode == 1 and target.read_text() == "old"
    assert os.listdir(tmp_path) == sorted(os.listdir(tmp_path)) and not [
        f for f in os.listdir(tmp_path) if f.startswith(".export-")]


def test_export_writes_nothing_to_the_session(tmp_path: Path, corpus_dir: Path) -> None:
    src = tmp_path / "s.jsonl"
    src.write_bytes((corpus_dir / "hand-labels-names.jsonl").read_bytes())
    before = src.read_bytes()
    assert cli("export", str(src), "--format", "html", "--out", str(tmp_path / "o.html")).returncode == 0
    assert cli("export", str(src), "--format", "markdown").returncode == 0
    assert src.read_bytes() == before
    with SessionManager.open(str(src)) as sm:
        assert len(sm) == 22


def test_every_corpus_and_case_file_exports(corpus_dir: Path, cases_dir: Path) -> None:
    """Damaged and odd files (cycles, orphans, unknown types, any JSON in any field) export
    to a page whose rows are `tree --json`'s and to Markdown with one section per entry."""
    for path in sorted(corpus_dir.glob("*.jsonl")) + sorted(cases_dir.glob("*.jsonl")):
        try:
            sm = open_quiet(path, "native")
        except Exception:
            continue
        with sm:
            st = structure_of(sm)
            out: list[str] = []
            write_html(st, out.append, branches="all")
            page = Page("".join(out))
            assert len(page.rows) == len(sm) == len(page.articles), path.name
            md: list[str] = []
            stats = write_markdown(st, md.append)
            assert stats.sections == stats.path == len(sm.get_branch()), path.name


def test_fence_outlasts_every_backtick_run() -> None:
    for text in ("", "a", "`", "``", "a `` b", "```", "x````y", "``` ` ``````"):
        f = fence(text)
        ticks = f.split("\n", 1)[0]
        assert set(ticks) == {"`"} and len(ticks) >= 3
        assert all(len(r) < len(ticks) for r in re.findall("`+", text)), (text, f)
