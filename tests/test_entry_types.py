"""Every entry type is complete: for each name in ``schema.ENTRY_TYPES`` (and each
message role Pi writes) there is a ``TypedDict``, a row in the view's table, a
non-empty preview in ``tree``, text in the HTML and Markdown exports, and its fields in
the tables, or a reason here why a field is not there.

The entries are made from the ``TypedDict`` s themselves (every key, optional ones
too, each string a marker of its own), so a new type or a new field is checked as soon
as ``schema`` has it: ARCHITECTURE.md's "Adding an entry type" is what makes this pass.
"""

from __future__ import annotations

import itertools
import json
import re
import typing
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager, schema
from sessiontree.view import ENTRY_VIEWS, ROLE_VIEWS, as_is, entry_preview, item_of, structure_of

BASE_KEYS = {"type", "id", "parentId", "timestamp"}

# Fields an export does not show, and why. Everything else a type holds is shown.
NOT_SHOWN: dict[str, dict[str, str]] = {
    "custom_message": {"details": "extension data for the extension that wrote it, not for reading"},
    "compaction": {"details": "the extension's data (e.g. files read), not the summary",
                   "fromHook": "who wrote the summary, not what it says"},
    "branch_summary": {"details": "as for compaction", "fromHook": "as for compaction"},
}

# Fields no table column holds (docs/TABLES.md: the entry's line is at line/offset/length).
NOT_IN_TABLES: dict[str, dict[str, str]] = {
    "custom_message": {"display": "no column (TABLES.md)", "details": "no column (TABLES.md)"},
    "compaction": {"details": "no column (TABLES.md)", "fromHook": "no column (TABLES.md)"},
    "branch_summary": {"fromId": "no column (TABLES.md)", "details": "no column (TABLES.md)",
                       "fromHook": "no column (TABLES.md)"},
    "thinking_level_change": {"thinkingLevel": "no column (TABLES.md)"},
    "session_info": {"name": "the sessions table's name (the latest one), no entries column"},
    "custom": {"data": "no column (TABLES.md)"},
    "usage": {"kind": "no column (TABLES.md)", "note": "no column (TABLES.md)"},
    "context_edit": {"replacement": "no column (TABLES.md)"},
    "active_tools_change": {"activeToolNames": "no column (TABLES.md)"},
}


ID_FIELDS = {"targetId", "firstKeptEntryId"}  # written as a real entry's id in the session file
ROLES_WITHOUT_TYPED_DICT = ("system",)  # agent-core's; shaped as a user message


class _Maker:
    """Values for a TypedDict's annotations: each string a marker of its own."""

    def __init__(self) -> None:
        self.count = itertools.count(1)

    def marker(self) -> str:
        return f"Mk{next(self.count)}q"  # no Markdown or HTML punctuation: shown as it is

    def value(self, tp: Any) -> Any:
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if tp is str:
            return self.marker()
        if tp is bool:
            return True
        if tp is int:
            return 1000 + next(self.count)
        if tp is float:
            return 0.25
        if origin is typing.Literal:
            return args[0]
        if origin is typing.Union or type(tp).__name__ == "UnionType":
            alternatives = [a for a in args if a is not type(None)]
            return self.value(alternatives[0])
        if origin is list:
            (inner,) = args
            alternatives = [a for a in typing.get_args(inner) if a is not type(None)] or [inner]
            return [self.value(a) for a in alternatives]
        if origin is dict or tp is Any:
            return {"key": self.marker()}
        if typing.is_typeddict(tp):
            return self.typed(tp)
        raise AssertionError(f"no sample value for {tp!r}")

    def typed(self, td: Any) -> dict[str, Any]:
        return {k: self.value(t) for k, t in typing.get_type_hints(td).items()}


def _entries() -> list[tuple[str, dict[str, Any]]]:
    """``(name, entry)``: one entry of each type, one message of each role's TypedDict."""
    make = _Maker()
    out = []
    for etype in sorted(schema.ENTRY_TYPES):
        td = schema.ENTRY_DICTS[etype]
        if etype == "message":
            for msg_td in typing.get_args(schema.AgentMessage):
                msg = make.typed(msg_td)
                out.append((f"message:{msg['role']}", {"type": "message", "message": msg}))
            # Roles Pi writes with no TypedDict of their own: a user message's shape.
            for role in ROLES_WITHOUT_TYPED_DICT:
                msg = make.typed(schema.UserMessage)
                msg["role"] = role
                out.append((f"message:{role}", {"type": "message", "message": msg}))
            continue
        entry = make.typed(td)
        entry["type"] = etype
        out.append((etype, entry))
    return out


ENTRIES = _entries()


def _markers(value: Any) -> set[str]:
    found: set[str] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str) and re.fullmatch(r"Mk\d+q", v):
            found.add(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return found


def _field_markers(entry: dict[str, Any], skip: dict[str, str]) -> dict[str, set[str]]:
    return {k: _markers(v) for k, v in entry.items() if k not in BASE_KEYS and k not in skip and _markers(v)}


# --------------------------------------------------------------------- tables of types
def test_every_type_has_a_typed_dict_and_a_view_row() -> None:
    assert set(schema.ENTRY_DICTS) == schema.ENTRY_TYPES
    union = set(typing.get_args(schema.SessionEntry))
    assert union == set(schema.ENTRY_DICTS.values())
    for etype, td in schema.ENTRY_DICTS.items():
        hints = typing.get_type_hints(td)
        assert BASE_KEYS <= set(hints), etype
        if typing.get_origin(hints["type"]) is typing.Literal:
            assert typing.get_args(hints["type"]) == (etype,)
    assert set(ENTRY_VIEWS) == schema.ENTRY_TYPES
    assert set(schema.MESSAGE_ROLES) <= set(ROLE_VIEWS)
    roles = {n.split(":", 1)[1] for n, _ in ENTRIES if n.startswith("message:")}
    assert set(schema.MESSAGE_ROLES) <= roles <= set(ROLE_VIEWS)
    for table in (NOT_SHOWN, NOT_IN_TABLES):
        for etype, fields in table.items():
            assert etype in schema.ENTRY_TYPES
            assert set(fields) <= set(typing.get_type_hints(schema.ENTRY_DICTS[etype])), (etype, fields)


# --------------------------------------------------------------------- tree
@pytest.mark.parametrize("name,entry", ENTRIES, ids=[n for n, _ in ENTRIES])
def test_tree_preview_is_not_empty(name: str, entry: dict[str, Any]) -> None:
    for clean in (as_is, None):
        kind, text = entry_preview(entry, clean) if clean else entry_preview(entry)
        assert kind and text.strip(), (name, kind, text)
        assert _markers(entry) & set(re.findall(r"Mk\d+q", text)), (name, text)


# --------------------------------------------------------------------- exports
@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("types") / "all.jsonl"
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}]
    parent = None
    for k, (_, entry) in enumerate(ENTRIES):
        e = {"type": entry["type"], "id": f"e{k:02d}", "parentId": parent,
             "timestamp": f"2025-01-01T00:00:{k + 1:02d}.000Z"}
        e.update({key: v for key, v in entry.items() if key not in BASE_KEYS})
        for key in ID_FIELDS & set(e):
            e[key] = "e00"  # a real entry: the file loads with no problem
        lines.append(e)
        parent = e["id"]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _sections(session: Path, backend: str) -> tuple[dict[str, str], dict[str, str]]:
    """Each entry's HTML article and Markdown section, by id."""
    from sessiontree.export import write_html, write_markdown

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the file is clean: every entry loads
        sm = SessionManager.open(str(session), backend=backend)
    with sm:
        sm.branch(f"e{len(ENTRIES) - 1:02d}")
        st = structure_of(sm)
        page: list[str] = []
        write_html(st, page.append, branches="all")
        md: list[str] = []
        write_markdown(st, md.append)
        ids = {n: st.id(n) for n in range(len(st))}
    html = {ids[int(n)]: body for n, body in re.findall(r'<article id="a(\d+)"(.*?)</article>', "".join(page), re.S)}
    doc = "".join(md)
    markdown = {}
    for section in doc.split("\n## ")[1:]:
        heading = section.split("\n", 1)[0]
        markdown[re.findall(r"· (e\d\d)(?= ·|$)", heading)[-1]] = section
    return html, markdown


def test_exports_show_every_type(session: Path, backend: str) -> None:
    html, markdown = _sections(session, backend)
    for k, (name, entry) in enumerate(ENTRIES):
        eid = f"e{k:02d}"
        etype = entry["type"]
        wanted = _field_markers(entry, {**NOT_SHOWN.get(etype, {}), **dict.fromkeys(ID_FIELDS, "checked below")})
        if etype == "message":  # a message shows its text; the rest of it is its role's business
            wanted = {"content": _markers(entry["message"].get("content") or entry["message"].get("output")
                                          or entry["message"].get("summary"))}
        for fmt, sections in (("html", html), ("markdown", markdown)):
            body = sections.get(eid, "")
            assert re.search(r"Mk\d+q|e00", body), (fmt, name, "shows no text")
            for field, markers in wanted.items():
                assert markers & set(re.findall(r"Mk\d+q", body)), (fmt, name, field, body[:300])
            if ID_FIELDS & set(entry):  # written as a real entry's id (the session fixture)
                assert "e00" in body, (fmt, name)


def test_item_of_shows_every_field_of_every_type() -> None:
    for name, entry in ENTRIES:
        if entry["type"] == "message":
            continue
        item = item_of(entry)
        text = " ".join([item.kind, *item.meta, *(p.text + " " + p.title for p in item.parts)])
        for field, markers in _field_markers(entry, NOT_SHOWN.get(entry["type"], {})).items():
            assert markers & set(re.findall(r"Mk\d+q", text)), (name, field, text)


# --------------------------------------------------------------------- tables
def test_tables_hold_every_field() -> None:
    fields = pytest.importorskip("sessiontree._rows")
    for name, entry in ENTRIES:
        etype = entry["type"]
        values = fields.entry_fields(entry)
        row = dict(zip(fields.ENTRY_FIELDS, values))
        assert row["type"] == etype
        shown = _markers([v for v in values if isinstance(v, str)])
        if etype == "message":
            msg = entry["message"]
            assert row["role"] == msg["role"], name
            wanted = {k: _markers(v) for k, v in msg.items()
                      if k in ("provider", "model", "stopReason", "customType", "command", "output", "summary")
                      and _markers(v)}
            if msg["role"] not in ("bashExecution", "compactionSummary", "branchSummary"):
                wanted["content"] = _markers([b.get("text") for b in msg["content"]] if isinstance(msg["content"], list)
                                             else msg["content"])
            wanted.pop("command", None)  # bashExecution: its output is the text; the command is in the line
            wanted.pop("summary", None)  # not a role Pi writes in a file
        else:
            wanted = _field_markers(entry, NOT_IN_TABLES.get(etype, {}))
        for field, markers in wanted.items():
            assert markers & shown, (name, field, row)


def test_an_error_whose_text_is_its_message_is_said_once() -> None:
    """Trial 59: an imported Claude Code API error (its text is also its
    ``errorMessage``) showed the text twice in the tree; another error keeps both."""
    msg: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": "API Error: 529"}],
                           "stopReason": "error", "errorMessage": "API Error: 529"}
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": msg}
    assert entry_preview(entry) == ("assistant", "[error] API Error: 529")
    msg["errorMessage"] = "overloaded"
    assert entry_preview(entry) == ("assistant", "[error] overloaded API Error: 529")
