"""The exports' sections made in the core from the entries' lines (``src/section.rs``:
Markdown's ``markdown_sections``, the page's ``html_articles``) are the Python path's,
byte for byte (issue 26, item 5): every ``--detail`` and ``--branches`` of the corpus, the damaged cases, generated sessions and
hand-made entries at the edges of what the core covers (floats, lone surrogates, other
types, odd values), on the backend under test. The Python path (``_entry_section``, the
view's ``item_of``) is the reference; the core leaves what it does not cover to it, and
the tests check that it does cover the common entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.export import html, markdown
from sessiontree.export.html import write_html
from sessiontree.export.markdown import DETAILS, write_markdown
from sessiontree.generate import generate_session
from sessiontree.view import structure_of

from _shared import chain_of_ids, open_quiet

pytestmark = pytest.mark.skipif(markdown._native_sections() is None, reason="the extension is not built")


class _Out:
    """An export's output as the command line writes it: text encoded, bytes as they are
    (``binary``: the writer is also given ``write_bytes``)."""

    def __init__(self, binary: bool) -> None:
        self.data = bytearray()
        self.kw: dict[str, Any] = {"write_bytes": self.data.extend} if binary else {}

    def write(self, text: str) -> None:
        self.data += text.encode("utf-8", "backslashreplace")


def _export(path: Path, backend: str, detail: str, native: bool, monkeypatch: pytest.MonkeyPatch,
            binary: bool = False) -> bytes:
    with monkeypatch.context() as m:
        if not native:
            m.setattr(markdown, "_native_sections", lambda: None)
        out = _Out(binary)
        with open_quiet(path, backend) as sm:
            write_markdown(structure_of(sm), out.write, detail=detail, source=str(path), **out.kw)
    return bytes(out.data)


def _page(path: Path, backend: str, branches: str, native: bool, monkeypatch: pytest.MonkeyPatch,
          binary: bool = False) -> bytes:
    with monkeypatch.context() as m:
        if not native:
            m.setattr(html, "_native_articles", lambda: None)
        out = _Out(binary)
        with open_quiet(path, backend) as sm:
            write_html(structure_of(sm), out.write, branches=branches, source=str(path), **out.kw)
    return bytes(out.data)


def _same(path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both formats by the core and by the Python path, as text and as bytes."""
    for detail in DETAILS:
        ref = _export(path, backend, detail, False, monkeypatch)
        for binary in (False, True):
            assert _export(path, backend, detail, True, monkeypatch, binary) == ref, f"{path.name} --detail {detail}"
        assert _export(path, backend, detail, False, monkeypatch, True) == ref
    for branches in ("all", "path"):
        ref = _page(path, backend, branches, False, monkeypatch)
        for binary in (False, True):
            assert _page(path, backend, branches, True, monkeypatch, binary) == ref, f"{path.name} --branches {branches}"
        assert _page(path, backend, branches, False, monkeypatch, True) == ref


def _opens(path: Path, backend: str) -> bool:
    try:
        open_quiet(path, backend).close()
    except Exception:  # a file the loader refuses has no export
        return False
    return True


def _coverage(path: Path, backend: str) -> float:
    """The share of the path's entries the core renders itself (the lower of the two
    formats)."""
    with open_quiet(path, backend) as sm:
        s = structure_of(sm)
        sections, articles = markdown._native_sections(), html._native_articles()
        assert sections is not None and articles is not None
        md = page = total = 0
        for batch, ids, lines in s.lines(s.path):
            raw = [x or b"" for x in lines]
            labels = [s.labels.get(n) for n in batch]
            md += sum(g is not None for g in sections(raw, ids, labels, "full"))
            got = articles(raw, ids, labels, list(batch), True, [False] * len(batch), sorted(html.KINDS))
            page += sum(g is not None for g in got)
            total += len(batch)
    return min(md, page) / max(total, 1)


def test_the_corpus_and_the_cases(corpus_dir: Path, cases_dir: Path, backend: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    files = [p for p in sorted(corpus_dir.glob("*.jsonl")) + sorted(cases_dir.glob("*.jsonl")) if _opens(p, backend)]
    assert len(files) > 50
    for path in files:
        _same(path, backend, monkeypatch)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_sessions(tmp_path: Path, backend: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    generate_session(path, size_bytes=600_000, seed=seed)
    _same(path, backend, monkeypatch)
    assert _coverage(path, backend) > 0.8  # the core does render the common entries


def _session(tmp_path: Path, entries: list[dict[str, Any]], raw: list[bytes] | None = None) -> Path:
    """A session of ``entries`` in one chain (ids and parents set here), then ``raw``
    lines as they are (``"LAST"`` naming the last of ``entries``)."""
    lines = [json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z",
                         "cwd": "/w"}).encode()]
    parent = None
    for k, e in enumerate(entries):
        eid = f"e{k:04d}"
        e = {"type": e.pop("type", "message"), "id": eid, "parentId": parent,
             "timestamp": "2025-01-01T00:00:01.000Z", **e}
        lines.append(json.dumps(e, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        parent = eid
    path = tmp_path / "edge.jsonl"
    tail = [x.replace(b'"LAST"', json.dumps(parent).encode()) for x in raw or []]
    path.write_bytes(b"\n".join(lines + tail) + b"\n")
    return path


def _msg(**m: Any) -> dict[str, Any]:
    return {"type": "message", "message": m}


# Adversary round 43, F2: character references in a message's own Markdown, which a
# viewer decodes into the characters the escaping rule shows (bidi controls, invisible
# ones), in every place CommonMark decodes one; in code they are text and stay.
_REFERENCES = [
    "ok &#x202E;txt.exe and &#8203;hidden &rlm; # &#X200B;",
    "# Heading &#x2066;\n\n- item &#8206;\n> quote &lrm;\n\n![&#x202e;](x) [a](/u \"&#x202E;\") [r]",
    "[r]: /v \"&rlm;\"\n\n`&#8203;` and ``&#x202E;`` stay, \\&#8203; was escaped, \\\\&#8203; was not",
    "```\n&#x202E; in a fence\n```\n\n    &#8203; indented code",
    "<http://a`> &#x202E; `",  # a backtick an autolink holds opens no code span
]

EDGES: list[dict[str, Any]] = [
    _msg(role="user", content="plain", timestamp=1762506850306),
    _msg(role="user", content=[{"type": "text", "text": "# Goal\n\n```\n# kept\n```\n## x"}], timestamp=0),
    _msg(role="user", content="a <b>tag</b>\n\nSetext\n---", timestamp=-5),
    _msg(role="user", content="\u0663. # digits of another script\n~~~\nopen", timestamp=1.5),
    _msg(role="user", content=None), _msg(role="user", content={"odd": [1, True, None]}),
    _msg(role="user", content=[1, "x", None, {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
                               {"type": "image", "mimeType": "image/tiff", "data": "AAAA"},
                               {"type": "image", "mimeType": "image/png", "data": "blob:sha256:" + "a" * 64},
                               {"type": "thinking", "redacted": True}, {"type": "weird", "n": 2}]),
    _msg(role="assistant", provider="p/", model="/m", stopReason="length", errorMessage="boom\x1b[31m",
         usage={"input": 12345678, "output": 0, "cacheRead": 0, "cacheWrite": 7, "cost": {"total": 0.00125}},
         content=[{"type": "thinking", "thinking": "\tindented\n  \t mixed\n"},
                  {"type": "toolCall", "name": "read", "arguments": {"path": "it's \"q\"", "n": 5, "deep": {"a": []},
                                                                     "x": "y"}},
                  {"type": "toolCall", "name": "w\u202ex", "arguments": {"t": "é" * 50}},
                  {"type": "toolCall", "name": "f", "arguments": {"v": 1.5}},
                  {"type": "toolCall", "name": "g"},
                  {"type": "toolCall", "name": None, "arguments": [1, 2]}]),
    _msg(role="assistant", provider=None, model=None, stopReason=False, usage={"input": 1.0, "cost": {"total": 3}},
         content=[]),
    _msg(role="assistant", usage={"cacheRead": 0.0, "cost": {"total": True}}, content="x"),
    _msg(role="toolResult", toolName="bash", isError=1, content=[{"type": "text", "text": "out ```` ticks"}]),
    _msg(role="toolResult", toolName=["odd"], content="x\r\ny\u2028z\x00"),
    _msg(role="bashExecution", command="ls\n-la", output="a\nb", exitCode=False, excludeFromContext=True),
    _msg(role="bashExecution", command="x", output=None, exitCode=2.0),
    _msg(role="bashExecution", command="x", output="o", exitCode=None),
    _msg(role="custom", customType="note", content="hi", display=False),
    _msg(role="hookMessage", customType=None, content=[{"type": "text", "text": "old"}]),
    _msg(role="compactionSummary", summary="sum # not a heading"),
    _msg(role="branchSummary", summary=None),
    _msg(role="system", content="sys"), _msg(role="madeUp", content="?"), _msg(content="no role"),
    _msg(role=None, content="null role"), _msg(role=5, content="int role"),
    {"type": "message", "message": "not an object"},
    {"type": "compaction", "summary": "## S", "firstKeptEntryId": "e0000", "tokensBefore": 123456},
    {"type": "compaction", "summary": "S", "firstKeptEntryId": None, "tokensBefore": 1.5},
    {"type": "branch_summary", "summary": "", "fromId": "e0001", "usage": {"input": 3}},
    {"type": "custom_message", "customType": "c", "content": "t", "display": True},
    {"type": "custom", "customType": "k", "data": {"a": [1, "\u2066x"], "b": None}},
    {"type": "custom", "customType": "k", "data": {"f": 0.5}}, {"type": "custom", "customType": "k"},
    # Floats at the edges of the core's spelling (`value::write_float`): the plain range's
    # ends, a whole number, and exact ties between two shortest spellings (the even one).
    {"type": "custom", "customType": "k", "data": {"f": [1e-4, 9.999999999999998e15, 1e15, -0.0, 0.1 + 0.2,
                                                         1871172633224776.25, 12490229889040.0625]}},
    {"type": "custom", "customType": "k", "data": {"f": [1e-5, 1e16]}},
    {"type": "model_change", "provider": "anthropic", "modelId": "claude"},
    {"type": "model_change", "model": "a/b", "role": "smol"}, {"type": "model_change", "provider": None},
    {"type": "thinking_level_change", "thinkingLevel": "high"},
    {"type": "label", "targetId": "e0001", "label": "it's \"both\""},
    {"type": "label", "targetId": "e0001", "label": "Ünïcode"}, {"type": "label", "targetId": "e0001", "label": ""},
    {"type": "session_info", "name": "  spaced   name  "},
    {"type": "usage", "kind": "k", "provider": "p", "model": "m", "usage": {"input": 1}},
    {"type": "context_edit", "targetId": "e0001", "replacement": None},
    {"type": "leaf", "targetId": None}, {"type": "what_is_this", "x": 1},
    _msg(role="user", content="x" * 5000 + " [a](b) `c` *d* _e_ <f> #g |h| ~i~"),
    _msg(role="user", content="   "), _msg(role="user", content="tab\there"),
    # cuts that say so (value_text's …): a tool call's long key, a doc_line read past
    # 4x its limit that white space shrinks below it, a long model name
    _msg(role="assistant", content=[{"type": "toolCall", "id": "c", "name": "n" * 300,
                                     "arguments": {"k" * 120: "v", "x": {"deep": "y" * 300}}}],
         provider="p", model="m" * 900, stopReason="stop"),
    _msg(role="bashExecution", command="a" + " " * 1000 + "b", output="o", exitCode=0),
    {"type": "usage", "kind": "k" * 150, "provider": {"p": "q" * 200}, "model": None,
     "usage": {"input": 1}, "note": "n" * 150},
    *(_msg(role="user", content=text) for text in _REFERENCES),
    _msg(role="assistant", content=[{"type": "thinking", "thinking": _REFERENCES[0]}]),
    # a model a session does not fully give (view.model_label), times that are no times
    _msg(role="assistant", provider="", model="x", content="t", timestamp="yesterday"),
    _msg(role="assistant", provider="p", model=5, content="t", timestamp=None),
    {"type": "model_change", "modelId": ""}, {"type": "model_change", "provider": "p", "modelId": None},
    {"type": "branch_summary", "summary": "s", "fromId": "e0001", "timestamp": "not a time"},
]

RAW = [
    b'{"type":"message","id":"r1","parentId":"LAST","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user",'
    b'"content":"lone \\ud800 surrogate","timestamp":1}}',
    b'{"type":"message","id":"r2","parentId":"r1","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user",'
    b'"content":"big 123456789012345678901234","n":123456789012345678901234}}',
    b'{"type":"message","id":"r3","parentId":"r2","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user",'
    b'"content":"dup","content":"second wins","timestamp":2}}',
    b'{"type":"message","id":"r4","parentId":"r3","timestamp":"T\\u0000","message":{"role":"user","content":"esc \\/ \\b"}}',
]


def test_edges(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path, [dict(e) for e in EDGES], RAW)
    _same(path, backend, monkeypatch)
    assert 0.5 < _coverage(path, backend) < 1  # some are the core's, some Python's


def test_character_references_are_not_decoded(tmp_path: Path, backend: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """F2: the export of the references above, rendered by two CommonMark renderers
    (markdown-it-py; pulldown-cmark, the crate's), holds none of the characters they
    name, and the code keeps them as written."""
    from markdown_it import MarkdownIt

    from sessiontree import _sessiontree

    path = _session(tmp_path, [_msg(role="user", content=t) for t in _REFERENCES]
                    + [_msg(role="assistant", content=[{"type": "thinking", "thinking": _REFERENCES[0]}])])
    for native in (True, False):
        text = _export(path, backend, "full", native, monkeypatch).decode()
        for page in (MarkdownIt("commonmark").render(text), _sessiontree.markdown_html(text)):
            hidden = [c for c in "\u202e\u202E\u200b\u200f\u200e\u2066" if c in page]
            assert not hidden, (native, hidden, page)
            assert "<code>&amp;#8203;</code>" in page and "<code>&amp;#x202E;</code>" in page  # the code spans
            assert "&amp;#x202E; in a fence" in page and "&amp;#8203; indented code" in page
            assert "\\&amp;#8203; was not" in page  # an escaped backslash, then the reference as text


_text = st.text(st.sampled_from(list("ab #<>`~-=*_[]|\\\n\t \u00e9\u202e\u2028\x1b'\"….1)&;x")), max_size=40)
_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), _text)
_value = st.recursive(_leaf, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                    st.dictionaries(_text, kids, max_size=3)), max_leaves=8)
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": _text}),
    st.fixed_dictionaries({"type": st.just("toolCall"), "name": _text, "arguments": _value}),
    _value,
)
_entry = st.one_of(
    st.builds(lambda role, content, ts: _msg(role=role, content=content, timestamp=ts),
              st.sampled_from(["user", "assistant", "toolResult", "custom", "system"]),
              st.one_of(_text, st.lists(_block, max_size=3), _value), _leaf),
    st.builds(lambda role, content, meta: _msg(role=role, content=content, **meta),
              st.sampled_from(["assistant", "toolResult", "bashExecution"]), st.lists(_block, max_size=2),
              st.dictionaries(st.sampled_from(["provider", "model", "stopReason", "usage", "toolName", "isError",
                                               "command", "output", "exitCode", "errorMessage"]), _value, max_size=4)),
    st.builds(lambda t, fields: {"type": t, **fields},
              st.sampled_from(["compaction", "branch_summary", "custom_message", "custom", "label", "session_info",
                               "thinking_level_change", "model_change"]),
              st.dictionaries(st.sampled_from(["summary", "content", "customType", "data", "label", "targetId", "name",
                                               "thinkingLevel", "provider", "modelId", "tokensBefore", "display",
                                               "fromId", "usage"]), _value, max_size=4)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_entry, min_size=1, max_size=8))
def test_generated_entries(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch,
                           entries: list[dict[str, Any]]) -> None:
    _same(_session(tmp_path, [dict(e) for e in entries]), backend, monkeypatch)


def test_get_lines_by_id(corpus_dir: Path, backend: str) -> None:
    """``SessionManager.get_lines_by_id``: each entry's JSON text, which ``json.loads``
    reads as the entry itself; ``None`` for an unknown id; one id alone is refused."""
    from sessiontree._jsonl import decode_line

    checked = 0
    for path in sorted(corpus_dir.glob("*.jsonl")):
        if not _opens(path, backend):
            continue
        with open_quiet(path, backend) as sm:
            ids = [e["id"] for e in sm.get_entries()]
            lines = sm.get_lines_by_id([*ids, "no such id"])
            assert lines[-1] is None
            for eid, line in zip(ids, lines):
                assert line is not None and decode_line(line) == sm.get_entry(eid)
                checked += 1
            with pytest.raises(TypeError):
                sm.get_lines_by_id("an id")
    assert checked > 100


def test_an_id_is_shown_escaped_as_tree_shows_it(tmp_path: Path, backend: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary round 44, F5: an id holding U+2028 (or a space, or a control) is shown
    escaped in both exports, as ``tree`` shows it (``\\u2028x``), where the exports
    folded it into a space and showed ``x``, an id no entry has; both paths equal."""
    ids = ["\u2028x", "\u202ey", "a  b", "t\tab", "plain"]
    path = chain_of_ids(tmp_path / "ids.jsonl", ids)
    _same(path, backend, monkeypatch)
    md = _export(path, backend, "full", True, monkeypatch).decode()
    page = _page(path, backend, "all", True, monkeypatch).decode()
    for shown in ("\\\\u2028x", "\\\\u202ey", "t\\\\tab", "plain"):  # md_inline escapes the backslash
        assert shown in md, (shown, md)
    for shown in ("\\u2028x", "\\u202ey", "t\\tab"):
        assert f'class="eid" href="#a' in page and f">{shown}</a></header>" in page, shown
    assert "\u2028" not in md and "\u2028" not in page
