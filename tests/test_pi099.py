"""Pi 0.87–0.99: the hand-made scenarios of ``tests/data/pi099`` on both backends.

Readers: each ``NAME.jsonl`` opens with no problems, and at every recorded leaf the
context, the projection (entry by entry) and Pi's ``convertToLlm`` of the context are
what Pi 0.99's code gives (derived by hand from its source; ``tests/data/pi099/README.md``).

Writers: each ``writers/NAME.ops.json`` is replayed through the API with the ids and
timestamps Pi would assign; refused calls raise with Pi's message; the file holds
exactly the lines Pi 0.99 writes. Two points of the fixtures are not this project's
contract and are not checked (docs/CONTRACT.md, "Where sessiontree differs from Pi"):
when the first write happens (Pi 0.99: at the first user message; here, as CONTRACT
§5 point 9 says: at the first assistant message), and ``branchWithSummary``'s ``fromId``
(Pi 0.84.3+: the leaf before the call; here, as in the 0.73.1 corpus: the entry branched
from).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sessiontree import (
    ContextEditError,
    EntryNotFoundError,
    SessionManager,
    convert_to_llm,
)
from sessiontree._jsonl import encode_entry

from _shared import open_quiet

DATA = Path(__file__).resolve().parent / "data" / "pi099"
READERS = sorted(p.name[: -len(".jsonl")] for p in DATA.glob("*.jsonl"))
WRITERS = sorted(p.name[: -len(".ops.json")] for p in (DATA / "writers").glob("*.ops.json"))


def js(value: Any) -> Any:
    """A value as ``JSON.stringify`` prints it, read back (the fixtures' form)."""
    return json.loads(encode_entry(value))


# ---------------------------------------------------------------------- readers


@pytest.mark.parametrize("name", READERS)
def test_reader_scenario(name: str, backend: str) -> None:
    exp = json.loads((DATA / f"{name}.expected.json").read_text())
    with open_quiet(DATA / f"{name}.jsonl", backend) as mgr:
        assert mgr.load_report == [], mgr.load_report
        for leaf, want in exp["contexts"].items():
            ctx = mgr.build_session_context(leaf)
            assert js(ctx.messages) == want["messages"], leaf
            assert ctx.thinking_level == want["thinkingLevel"], leaf
            assert js(ctx.model) == want["model"], leaf
            proj = mgr.build_session_projection(leaf)
            got = [{"sourceId": p.source["id"], "messages": js(p.messages)} for p in proj.entries]
            assert got == want["projection"], leaf
            assert proj.messages == ctx.messages and proj.context() == ctx
            assert js(convert_to_llm(ctx.messages, merge_consecutive_user=False)) == want["llm"], leaf


# ---------------------------------------------------------------------- writers


class _Injected(SessionManager):
    """Ids, times and session ids from queues (what Pi assigned in the scenario)."""

    ids: list[str]
    times: list[str]
    sessions: list[str]

    def _new_id(self, taken: Any) -> str:
        return self.ids.pop(0)

    def _now(self) -> str:
        return self.times.pop(0)

    def _new_session_id(self) -> str:
        return self.sessions.pop(0)


def _arg(args: dict[str, Any], key: str) -> Any:
    return args.get(key)


def _call(mgr: SessionManager, op: str, a: dict[str, Any]) -> Any:
    if op == "appendMessage":
        return mgr.append_message(a["message"])
    if op == "appendModelChange":
        return mgr.append_model_change(a["provider"], a["modelId"])
    if op == "appendThinkingLevelChange":
        return mgr.append_thinking_level_change(a["thinkingLevel"])
    if op == "appendUsage":
        return mgr.append_usage(a["kind"], a["provider"], a["model"], a["usage"], a.get("note"))
    if op == "appendContextEdit":
        return mgr.append_context_edit(a["targetId"], a.get("replacement"))
    if op == "appendCompaction":
        return mgr.append_compaction(
            a["summary"], a["firstKeptEntryId"], a["tokensBefore"], a.get("details"), a.get("fromHook"), a.get("usage")
        )
    if op == "branchWithSummary":
        return mgr.branch_with_summary(a["branchFromId"], a["summary"], a.get("details"), a.get("fromHook"), a.get("usage"))
    if op == "appendSessionInfo":
        return mgr.append_session_info(a["name"])
    if op == "appendCustomEntry":
        return mgr.append_custom_entry(a["customType"], a.get("data"))
    if op == "appendCustomMessageEntry":
        return mgr.append_custom_message_entry(a["customType"], a["content"], a["display"], a.get("details"))
    if op == "appendLabelChange":
        return mgr.append_label_change(a["targetId"], a.get("label"))
    if op == "branch":
        return mgr.branch(a["branchFromId"])
    if op == "resetLeaf":
        return mgr.reset_leaf()
    if op == "createBranchedSession":
        return mgr.create_branched_session(a["leafId"])
    raise AssertionError(f"unknown op {op}")


_ERRORS = {
    "Context edit replacement must be null or contain string/array content": TypeError,
    "not found": EntryNotFoundError,
    "is not on the active branch": ContextEditError,
    "does not contribute editable model content": ContextEditError,
}


def _expected_error(message: str) -> type[Exception]:
    for needle, cls in _ERRORS.items():
        if needle in message:
            return cls
    raise AssertionError(f"no error class for Pi's message {message!r}")


def _from_id_as_073(lines: list[str], ops: list[dict[str, Any]]) -> list[str]:
    """Pi 0.84.3+ writes ``fromId`` = the leaf before ``branchWithSummary``; this
    project keeps 0.73.1's ``fromId`` = the entry branched from (docs/CONTRACT.md)."""
    wanted = {op["id"]: op["args"]["branchFromId"] for op in ops if op["op"] == "branchWithSummary" and "id" in op}
    out = []
    for raw in lines:
        e = json.loads(raw)
        if e.get("id") in wanted and e.get("type") == "branch_summary":
            e["fromId"] = wanted[e["id"]] if wanted[e["id"]] is not None else "root"
            raw = encode_entry(e).decode()
        out.append(raw)
    return out


def _image(mgr: SessionManager) -> list[str]:
    """The session's lines: what its file holds, or will hold once it is written."""
    return [encode_entry(mgr.get_header()).decode()] + [encode_entry(e).decode() for e in mgr.get_entries()]


def _is_assistant(e: dict[str, Any]) -> bool:
    m = e.get("message")
    return e.get("type") == "message" and isinstance(m, dict) and m.get("role") == "assistant"


@pytest.mark.parametrize("name", WRITERS)
def test_writer_scenario(name: str, backend: str, tmp_path: Path) -> None:
    spec = json.loads((DATA / "writers" / f"{name}.ops.json").read_text())
    ops = spec["ops"]
    create = ops[0]
    assert create["op"] == "create"
    cls = type("Injected", (_Injected,), {"ids": [], "times": [create["timestamp"]], "sessions": [create["sessionId"]]})
    folder = tmp_path / "sessions"
    mgr = cls.create(create["args"]["cwd"], str(folder), backend=backend)
    assert os.path.basename(mgr.session_file or "") == create["fileName"]
    source_file = mgr.session_file
    source_image: list[str] = []
    for op in ops[1:]:
        name_, args = op["op"], op.get("args", {})
        if "id" in op:
            cls.ids.append(op["id"])
            cls.times.append(op["timestamp"])
        if name_ == "createBranchedSession":
            cls.sessions.append(op["result"]["sessionId"])
            cls.times.append(op["result"]["timestamp"])
            cls.ids.extend(e["id"] for e in op["newEntries"])
            source_file = mgr.session_file
            source_image = _image(mgr)
        if "error" in op:
            with pytest.raises(_expected_error(op["error"])) as info:
                _call(mgr, name_, args)
            assert str(info.value) == op["error"], name_
        else:
            result = _call(mgr, name_, args)
            if "id" in op:
                assert result == op["id"], name_
            if name_ == "createBranchedSession":
                assert os.path.basename(result) == op["result"]["fileName"]
        assert mgr.leaf_id == op["leafAfter"], name_
    assert not cls.ids and not cls.sessions
    path = mgr.session_file
    # The lines of the session: its file, or, before the first assistant message (when
    # this project writes first, CONTRACT §4), what it will write then.
    image = _image(mgr)
    mgr.close()
    want = _from_id_as_073(spec["lines"], ops)
    if os.path.exists(path):  # type: ignore[arg-type]
        assert Path(path).read_text(encoding="utf-8").splitlines() == image  # type: ignore[arg-type]
    else:
        assert not any(_is_assistant(e) for e in map(json.loads, image[1:]))
    if "sourceLines" in spec:
        # A branched header names the source by its absolute path (compared by value).
        header, want_header = json.loads(image[0]), json.loads(want[0])
        assert header.pop("parentSession") == source_file
        want_header.pop("parentSession")
        assert header == want_header
        image, want = image[1:], want[1:]
        if os.path.exists(source_file):  # type: ignore[arg-type]
            assert Path(source_file).read_text(encoding="utf-8").splitlines() == source_image  # type: ignore[arg-type]
        assert source_image == _from_id_as_073(spec["sourceLines"], ops)
    assert image == want
    if not os.path.exists(path):  # type: ignore[arg-type]
        return
    with open_quiet(path, backend) as again:  # type: ignore[arg-type]
        assert again.load_report == []


# --------------------------------------------------------- loader rules, forks


def test_self_parent_is_a_reported_cycle_of_one(backend: str, tmp_path: Path) -> None:
    p = tmp_path / "self.jsonl"
    p.write_text(
        '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"1"}}\n'
        '{"type":"message","id":"b","parentId":"b","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"2"}}\n'
        '{"type":"compaction","id":"c","parentId":"a","timestamp":"2026-01-01T00:00:03.000Z","summary":"s","firstKeptEntryId":"c","tokensBefore":1}\n'
    )
    with open_quiet(p, backend) as mgr:
        assert [(i.kind, i.line, i.ids) for i in mgr.load_report] == [("cycle", 3, ("b",))]
        assert [n.entry["id"] for n in mgr.get_tree()] == ["a", "b"]  # b stays a root
        assert [m["role"] for m in mgr.build_session_context("c").messages] == ["compactionSummary"]


def _abandoned_tips(mgr: SessionManager) -> list[str]:
    """Leaves other than the current one (ends of abandoned branches)."""
    parents = {e.get("parentId") for e in mgr.get_entries()}
    return [e["id"] for e in mgr.get_entries() if e["id"] not in parents and e["id"] != mgr.leaf_id]


@pytest.mark.parametrize("seed", [3, 11])
def test_forks_of_labelled_paths_load_clean_and_keep_the_context(backend: str, tmp_path: Path, seed: int) -> None:
    from sessiontree.generate import generate_session

    src = tmp_path / "src.jsonl"
    generate_session(src, entries=3_000, seed=seed, payload_scale=0.02)
    with open_quiet(src, backend) as mgr:
        tips = [mgr.leaf_id] + _abandoned_tips(mgr)[:6]
        labelled = [e for e in mgr.get_entries() if e.get("type") == "label"]
        assert labelled, "the generator writes labels"
        expected = {tip: mgr.build_session_context(tip) for tip in tips}
    crossed = 0
    for tip in tips:
        with open_quiet(src, backend) as mgr:
            crossed += any(e.get("type") == "label" for e in mgr.get_branch(tip))
            new = mgr.create_branched_session(tip)
            assert mgr.load_report == []
        assert new is not None
        with open_quiet(new, backend) as fork:
            assert fork.load_report == [], tip
            # Labels contribute nothing: the fork's context at the copied tip is the source's.
            assert fork.build_session_context(tip) == expected[tip], tip
    assert crossed, "some forked path runs through a label entry"
