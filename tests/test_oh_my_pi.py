"""oh-my-pi's session files (issue 23, item 3): a fixed-size title slot before the v3
header, rewritten in place as the title changes; its own entry types; large images as
``blob:sha256:<hex>`` references. Read on both backends and in the listing and
catalog (the title names the session), appended to without moving the slot, and a
title rewritten in place is not a rewrite of the session.

The files are written here from oh-my-pi's documented format (session-format page:
the slot is the first line, 256 bytes with its LF, ``{"type":"title","v":1,"title",
"source","updatedAt","pad"}``), never copied from a real one.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import InvalidSessionError, SessionManager, StaleSessionError
from sessiontree.schema import blob_sha256

from _shared import open_quiet, report

SID = "019700f1-1a2b-7c3d-8e4f-aabbccdd0023"
BLOB = "blob:sha256:" + "ab" * 32


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def slot(title: str, source: str = "auto") -> bytes:
    """The 256-byte title line (LF included), padded inside the JSON string."""
    rec = {"type": "title", "v": 1, "title": title, "source": source, "updatedAt": "2026-05-14T10:14:22.000Z",
           "pad": ""}
    pad = 255 - len(dumps(rec).encode())
    assert pad >= 0
    rec["pad"] = " " * pad
    line = dumps(rec).encode() + b"\n"
    assert len(line) == 256
    return line


def entry(eid: str, parent: str | None, etype: str = "message", **fields: Any) -> dict[str, Any]:
    return {"type": etype, "id": eid, "parentId": parent, "timestamp": "2026-05-14T10:12:05.000Z", **fields}


def user(eid: str, parent: str | None, text: str) -> dict[str, Any]:
    return entry(eid, parent, message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})


HEADER = {"type": "session", "version": 3, "id": SID, "timestamp": "2026-05-14T10:12:03.000Z", "cwd": "/work/api",
          "additionalDirectories": ["/work/shared"], "title": "first idea", "titleSource": "auto"}
BODY = [
    entry("t1", None, "thinking_level_change", thinkingLevel="high", configured=None),
    entry("m1", "t1", "model_change", model="anthropic/claude-opus-4-6"),
    user("u1", "m1", "refactor the importer to stream"),
    entry("a1", "u1", message={
        "role": "assistant", "content": [{"type": "text", "text": "Looking at the diagram."}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-6",
        "usage": {"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.25}},
        "stopReason": "stop", "timestamp": 2}),
    entry("i1", "a1", message={"role": "user", "content": [{"type": "image", "data": BLOB, "mimeType": "image/png"}],
                               "timestamp": 3}),
    entry("c1", "i1", "title_change", title="refactor importer", previousTitle="first idea", source="auto"),
]
UNKNOWN = [("unknown_type", "c1")]


def write(path: Path, title: str = "refactor importer", body: list[dict[str, Any]] = BODY) -> Path:
    path.write_bytes(slot(title) + b"".join(dumps(x).encode() + b"\n" for x in [HEADER, *body]))
    return path


def test_the_title_slot_is_read_not_an_entry(backend: str, tmp_path: Path) -> None:
    p = write(tmp_path / "s.jsonl")
    before = p.read_bytes()
    sm = open_quiet(p, backend)
    with sm:
        assert sm.get_header() == HEADER
        assert [e["id"] for e in sm.get_entries()] == ["t1", "m1", "u1", "a1", "i1", "c1"]
        assert [(k, ids[0]) for k, _l, _o, ids in report(sm)] == UNKNOWN  # oh-my-pi's own type, kept
        assert sm.get_session_name() == "refactor importer"
        assert [m["role"] for m in sm.build_session_context().messages] == ["user", "assistant", "user"]
        assert sm.get_usage_totals().cost == 0.25
    assert p.read_bytes() == before


def test_a_session_info_names_the_session_after_the_slot(backend: str, tmp_path: Path) -> None:
    p = write(tmp_path / "s.jsonl", body=[*BODY, entry("n1", "c1", "session_info", name="  mine  ")])
    assert open_quiet(p, backend).get_session_name() == "mine"
    p = write(tmp_path / "t.jsonl", title="   ")
    assert open_quiet(p, backend).get_session_name() is None


def test_appends_leave_the_slot_and_the_header_where_they_are(backend: str, tmp_path: Path) -> None:
    p = write(tmp_path / "s.jsonl")
    before = p.read_bytes()
    with open_quiet(p, backend) as sm:
        new = sm.append_message({"role": "user", "content": "and now?", "timestamp": 9})
    data = p.read_bytes()
    assert data.startswith(before)  # nothing written before the header, nothing moved
    again = open_quiet(p, backend)
    assert again.leaf_id == new and again.parent_of(new) == "c1"
    assert again.get_session_name() == "refactor importer"


def test_a_title_rewritten_in_place_is_not_a_rewrite_of_the_session(backend: str, tmp_path: Path) -> None:
    """oh-my-pi rewrites its slot while the session is open (the automatic title after
    the first exchange, a rename): a reader and a writer go on; any other rewrite of
    the first bytes is still caught."""
    p = write(tmp_path / "s.jsonl")
    sm = open_quiet(p, backend)
    with open(p, "r+b") as f:
        f.write(slot("renamed by the user", "user"))
    with open(p, "ab") as f:
        f.write(dumps(user("u2", "c1", "more")).encode() + b"\n")
    assert sm.refresh() == 1
    new = sm.append_message({"role": "user", "content": "still here", "timestamp": 9})
    assert sm.parent_of(new) == "u2"
    sm.close()
    assert open_quiet(p, backend).get_session_name() == "renamed by the user"
    # A slot of another length is a rewrite; so is any other byte of the first 4 KiB.
    for change in (b'{"type":"title","v":1,"title":"short"}\n', None):
        q = write(tmp_path / f"r{change is None}.jsonl")
        sm = open_quiet(q, backend)
        data = q.read_bytes()
        if change is None:
            at = data.index(b"first idea")
            data = data[:at] + b"FIRST" + data[at + 5:]
        else:
            data = change.ljust(256, b"\n") + data[256:]
        q.write_bytes(data)
        os.utime(q, ns=(0, 1))
        with pytest.raises(StaleSessionError):
            sm.get_entries()


def test_the_listing_and_the_catalog_name_the_session_by_its_title(backend: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    from sessiontree import catalog

    folder = tmp_path / "sessions"
    folder.mkdir()
    p = write(folder / "2026-05-14T10-12-03-000Z_x.jsonl")
    cat = tmp_path / "cat.sqlite3"
    for no_cache in (False, True):
        [row] = SessionManager.list("/work/api", str(folder), catalog=cat, no_cache=no_cache)
        assert (row.id, row.name, row.message_count, row.first_message) == (
            SID, "refactor importer", 3, "refactor the importer to stream")
        hits = catalog.search("importer", [str(folder)], catalog=cat, no_cache=no_cache).hits
        assert [(h.entry_id, h.session_name) for h in hits] == [("u1", "refactor importer")]
    # A new title written in place (same size) reaches the catalog: the file is read again.
    with open(p, "r+b") as f:
        f.write(slot("streaming importer"))
    os.utime(p, ns=(0, 10**18))
    [row] = SessionManager.list("/work/api", str(folder), catalog=cat)
    assert row.name == "streaming importer"


def test_a_slot_with_no_header_is_named_as_the_first_line(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(slot("only a title"))
    errors = []
    for backend in ("python", "native"):
        with pytest.raises(InvalidSessionError) as info:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                SessionManager.open(str(p), backend=backend)
        errors.append((info.value.line, info.value.offset, str(info.value)))
    assert errors[0] == errors[1] and errors[0][:2] == (1, 0)


def test_blob_references_are_named_never_decoded(tmp_path: Path) -> None:
    assert blob_sha256(BLOB) == "ab" * 32
    for bad in ("blob:sha256:" + "AB" * 32, "blob:sha256:../x", BLOB + "0", "aGVsbG8=", None):
        assert blob_sha256(bad) is None
    from sessiontree.view import item_of
    from sessiontree._rows import image_stub

    block = {"type": "image", "data": BLOB, "mimeType": "image/png"}
    stub = {"sha256": "ab" * 32, "bytes": None, "mime": "image/png", "problem": None}
    assert image_stub(BLOB.encode(), "image/png") == stub
    [part] = item_of(entry("i1", None, message={"role": "user", "content": [block], "timestamp": 1})).parts
    assert part.kind == "note" and ("sha256:" + "ab" * 32) in part.text


def test_viewers_read_omps_model_change_and_blob_images(backend: str, tmp_path: Path) -> None:
    """oh-my-pi's ``model_change`` holds ``model: "provider/modelId"`` (and ``role``,
    ``resolvedModelIsFallback``), not Pi's ``provider`` / ``modelId``: ``tree`` showed
    ``None/None`` and the Markdown export ``*model → /*``. A ``blob:sha256:`` image is a
    name of bytes kept elsewhere: ``context`` showed ``[image image/png 57 B]``, the
    reference's own length."""
    import subprocess
    import sys

    body = [*BODY, entry("m2", "c1", "model_change", model="openai/gpt-5", role="smol", resolvedModelIsFallback=True),
            entry("m3", "m2", "model_change", provider="anthropic", modelId="claude-haiku-4-5")]  # Pi's shape
    p = write(tmp_path / "s.jsonl", body=body)
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "c"), SESSIONTREE_CATALOG="off")

    def cli(*args: str) -> str:
        r = subprocess.run([sys.executable, "-m", "sessiontree", *args, "--backend", backend], capture_output=True,
                           text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    tree = cli("tree", str(p))
    assert "anthropic/claude-opus-4-6" in tree and "openai/gpt-5 (role smol) (fallback)" in tree, tree
    assert "anthropic/claude-haiku-4-5" in tree and "None/None" not in tree, tree
    md = cli("export", str(p), "--format", "markdown", "--out", "-")
    assert "*model → anthropic/claude-opus-4-6*" in md and "*model → openai/gpt-5 (role smol) (fallback)*" in md
    assert "*model → anthropic/claude-haiku-4-5*" in md and "model → /" not in md
    ctx = cli("context", str(p), "--leaf", "i1")
    assert f"[image image/png kept outside the session file: blob sha256:{'ab' * 32}]" in ctx, ctx
    assert " 57 B]" not in ctx
