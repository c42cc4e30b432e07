"""Exports never drop data (docs/TABLES.md, "Bad blocks"): for any generated history of
adversarial session files — wrong types in usage, huge strings, lone surrogates,
invalid UTF-8, non-object content blocks, unknown types, images whose base64 does not
decode, torn and glued lines — the Parquet dataset holds every entry of every session,
read back by DuckDB and Polars and held against a brute-force ``json.loads`` scan of the
files (written here, apart from the loader); and the two backends' tables are equal
(the native core's rows, ``src/rows.rs``, against ``_rows.py``)."""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.schema import ENTRY_TYPES

from _shared import native_available, open_quiet

pa = pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")
duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (the test-tables extra)")
pl = pytest.importorskip("polars", reason="polars is not installed (the test-tables extra)")

from sessiontree.tables import export_parquet  # noqa: E402

MAX_FIELD = 4096  # docs/TABLES.md, "Limits"

# ------------------------------------------------------------------- generation
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None)
texts = st.one_of(
    st.text(max_size=12),
    st.text(any_char, max_size=12),  # lone surrogates, controls, anything
    st.sampled_from(["x" * 70_000, "é" * 40_000, "\ud800" * 3000, "a\udc80b"]),  # past the limits
)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), texts,
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e300, -0.0, 2.0**63, 1.5]),
    st.just([]), st.just({}),
)  # fmt: skip
good_png = base64.b64encode(bytes(range(200))).decode()
image_data = st.one_of(st.just(good_png), st.sampled_from(["abc", "a", "YQ", "YQ=", "!!", "", "QUJD\udc80"]), scalars)
json_values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=3),
                                                          st.dictionaries(texts, c, max_size=3)), max_leaves=8)  # fmt: skip


def block() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.one_of(texts, scalars)}),
        st.fixed_dictionaries({"type": st.just("image"), "data": image_data},
                              optional={"mimeType": st.one_of(st.just("image/png"), scalars)}),  # fmt: skip
        st.fixed_dictionaries({"type": st.just("toolCall"), "id": st.one_of(st.sampled_from(["c1", "c2"]), scalars),
                               "name": st.one_of(st.just("read"), scalars)},
                              optional={"arguments": json_values}),  # fmt: skip
        st.fixed_dictionaries({"type": st.sampled_from(["thinking", "weird", "image"])}),
        scalars,  # a block that is not an object
    )


usage = st.one_of(
    scalars,
    st.fixed_dictionaries({}, optional={k: scalars for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")}
                          | {"cost": st.one_of(scalars, st.fixed_dictionaries({"total": scalars}))}),  # fmt: skip
)
message = st.fixed_dictionaries(
    {"role": st.one_of(st.sampled_from(["user", "assistant", "toolResult", "bashExecution", "custom"]), scalars)},
    optional={"content": st.one_of(texts, scalars, st.lists(block(), max_size=4)), "usage": usage,
              "provider": scalars, "model": st.one_of(st.just("m"), scalars), "stopReason": scalars,
              "toolCallId": st.one_of(st.sampled_from(["c1", "c2"]), scalars), "isError": scalars,
              "output": st.one_of(texts, scalars), "customType": scalars},
)  # fmt: skip
entry_type = st.one_of(st.just("message"), st.sampled_from(sorted(ENTRY_TYPES)), st.just("unknown_kind"),
                       st.just("session"), scalars)  # fmt: skip


@st.composite
def entry(draw: Any, k: int) -> dict[str, Any]:
    if draw(st.booleans()):  # a message as Pi writes it, odd blocks and usage inside
        m = {"role": draw(st.sampled_from(["user", "assistant", "toolResult"])),
             "content": draw(st.lists(block(), max_size=4)), "usage": draw(usage), "toolCallId": "c1"}  # fmt: skip
        return {"type": "message", "id": f"e{k}", "parentId": f"e{k - 1}", "timestamp": "2025-11-07T10:00:00.000Z",
                "message": m}  # fmt: skip
    e: dict[str, Any] = {"type": draw(entry_type)}
    e["id"] = draw(st.one_of(st.just(f"e{k}"), st.just(f"e{k}"), st.just("e0"), scalars,
                             st.just("i\udcff" + "d" * 5000)))  # fmt: skip
    e["parentId"] = draw(st.one_of(st.just(f"e{k - 1}"), st.none(), scalars))
    e["timestamp"] = draw(st.one_of(st.just("2025-11-07T10:00:00.000Z"), scalars))
    e |= draw(st.fixed_dictionaries({}, optional={
        "message": st.one_of(message, scalars), "content": st.one_of(texts, st.lists(block(), max_size=3)),
        "summary": st.one_of(texts, scalars), "usage": usage, "customType": scalars, "label": scalars,
        "targetId": st.one_of(st.sampled_from(["e0", "e1"]), scalars), "firstKeptEntryId": scalars, "tokensBefore": scalars, "provider": scalars,
        "modelId": scalars}))  # fmt: skip
    return e


def encode(e: Any, ascii_only: bool) -> bytes:
    # ensure_ascii=False writes a lone surrogate as the bytes of its surrogatepass form:
    # invalid UTF-8 in the file.
    return json.dumps(e, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def session_file(draw: Any, n: int) -> bytes:
    header = {"type": "session", "version": 3, "id": f"session-{n}", "timestamp": "2025-11-07T10:00:00.000Z",
              "cwd": draw(st.one_of(st.just("/home/u/p"), texts))}  # fmt: skip
    lines = [encode(header, True)]
    for k in range(1, draw(st.integers(0, 8)) + 1):
        raw = encode(draw(entry(k)), draw(st.booleans()))
        how = draw(st.sampled_from(["plain"] * 6 + ["torn", "glued", "crlf", "blank", "junk"]))
        if how == "torn":  # a line cut short, then ended by a bare \n
            raw = raw[: draw(st.integers(1, max(1, len(raw) - 1)))]
        elif how == "glued":  # a torn piece and a whole line on one line
            raw = raw[: draw(st.integers(1, max(1, len(raw) - 1)))] + encode(draw(entry(k)), True)
        elif how == "crlf":
            raw += b"\r"
        elif how == "blank":
            lines.append(b"  \t")
        elif how == "junk":
            lines.append(draw(st.sampled_from([b"[1, 2]", b"3", b'"s"', b"\xff\xfe", b"{", b"null"])))
        lines.append(raw)
    data = b"\n".join(lines)
    return data if draw(st.booleans()) else data + b"\n"


# ------------------------------------------------------------------ brute force
def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8", "replace"), parse_constant=_no_constant)
    except ValueError:
        return None


def scan(data: bytes) -> list[dict[str, Any]]:
    """The entries a file holds, by the loader's documented rules 1-8 (docs/CONTRACT.md §2)."""
    pieces = data.split(b"\n")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    header = False
    leaf_null = True  # no entry is the leaf (rule 3's root check)
    for i, raw in enumerate(pieces):
        complete = i < len(pieces) - 1
        if complete and raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip(b" \t\r"):
            continue
        obj = _parse(raw)
        nested = False
        if obj is None and complete:  # rule 4: a whole entry behind a torn fragment
            at = [p for p in range(1, len(raw)) if raw.startswith(b'{"type":', p)][:16]
            for p in at:
                o = _parse(raw[p:])
                if type(o) is dict and type(o.get("type")) is str and (o["type"] in ENTRY_TYPES or o["type"] == "session"):
                    obj, nested = o, _may_nest(raw, p)
                    break
        if type(obj) is not dict:
            continue
        if not header:
            header = True
            continue
        eid = obj.get("id")
        if obj.get("type") == "session" or type(eid) is not str or not eid:
            continue
        parent = obj.get("parentId", _MISSING)
        if nested and not (leaf_null if parent is None else type(parent) is str and parent in seen):
            continue  # rule 3: it may be a value of the torn record, and does not continue the tree
        if eid in seen:
            continue
        seen.add(eid)
        out.append(obj)
        target = obj.get("targetId", _MISSING)
        if obj.get("type") != "leaf":
            leaf_null = False
        elif target is None:
            leaf_null = True
        elif type(target) is str and target != eid and target in seen:
            leaf_null = False
    return out


_MISSING = object()


def _may_nest(raw: bytes, p: int) -> bool:
    """Whether the object at ``p`` behind the torn bytes from the line's start could be
    a value nested in that torn record (rule 3): outside a string (known when the bytes
    start as a record does, ``{"``), right after ``[``, ``,`` or ``:``."""
    if raw.startswith(b'{"'):
        in_str = esc = False
        for c in raw[:p]:
            if esc:
                esc = False
            elif in_str and c == 0x5C:
                esc = True
            elif c == 0x22:
                in_str = not in_str
        if in_str:
            return False
    i = p
    while i > 0 and raw[i - 1] in b" \t\r":
        i -= 1
    return i > 0 and raw[i - 1 : i] in (b"[", b",", b":")


def clean_cut(s: Any, limit: int = MAX_FIELD) -> str | None:
    if type(s) is not str:
        return None
    b = s.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
    return b[:limit].decode("utf-8", "ignore")


def image_problems(e: dict[str, Any]) -> list[str | None]:
    """Each image block's problem by the documented rule (binascii, non-strict)."""
    if e.get("type") == "message":
        m = e.get("message")
        content = m.get("content") if type(m) is dict and m.get("role") != "bashExecution" else None
    elif e.get("type") == "custom_message":
        content = e.get("content")
    else:
        content = None
    out: list[str | None] = []
    for b in content if type(content) is list else []:
        if type(b) is dict and b.get("type") == "image":
            data = b.get("data")
            if type(data) is not str:
                out.append("no_data")
                continue
            try:
                binascii.a2b_base64(data.encode("utf-8", "surrogatepass"), strict_mode=False)
                out.append(None)
            except binascii.Error:
                out.append("not_base64")
    return out


def assistant_cost(e: dict[str, Any]) -> float:
    m = e.get("message")
    if e.get("type") != "message" or type(m) is not dict or m.get("role") != "assistant":
        return 0.0
    u = m.get("usage")
    c = u.get("cost") if type(u) is dict else None
    c = c.get("total") if type(c) is dict else c
    if type(c) not in (int, float):
        return 0.0
    try:
        f = float(c)
    except OverflowError:
        return 0.0
    return f if math.isfinite(f) else 0.0


def tool_calls(e: dict[str, Any]) -> int:
    m = e.get("message")
    if e.get("type") != "message" or type(m) is not dict or m.get("role") != "assistant":
        return 0
    content = m.get("content")
    return sum(type(b) is dict and b.get("type") == "toolCall" for b in content) if type(content) is list else 0


# ----------------------------------------------------------------------- tests
def _history(files: list[bytes]) -> tuple[str, list[str]]:
    root = tempfile.mkdtemp(prefix="sessiontree-rows-")
    folder = os.path.join(root, "--home-u-p--")
    os.mkdir(folder)
    paths = []
    for n, data in enumerate(files):
        p = os.path.join(folder, f"s{n}.jsonl")
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    return root, paths


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=4).flatmap(
    lambda ns: st.tuples(*[session_file(n) for n in range(len(ns))])))  # fmt: skip
def test_export_holds_every_entry_of_every_session(files: tuple[bytes, ...]) -> None:
    for backend in ["python", "native"] if native_available() else ["python"]:
        root, paths = _history(list(files))
        try:
            out = os.path.join(root, "out")
            result = export_parquet(paths, out, backend=backend)
            assert not result.failed and sorted(result.written) == sorted(paths)
            e = f"read_parquet('{out}/entries/**/*.parquet', hive_partitioning = true)"
            s = f"read_parquet('{out}/sessions/**/*.parquet', hive_partitioning = true)"
            c = f"read_parquet('{out}/tool_calls/**/*.parquet', hive_partitioning = true)"
            con = duckdb.connect()
            sessions = {r[0]: r[1:] for r in con.sql(f"select path, session_id, bad_blocks, entry_count from {s}").fetchall()}
            assert sorted(sessions) == sorted(paths)
            has = {d: bool(list(Path(out, d).rglob("*.parquet"))) for d in ("entries", "tool_calls")}
            rows = con.sql(f"select session_id, entry_id, type, list_transform(images, lambda x: x.problem), cost, role "
                           f"from {e} order by session_id, line").fetchall() if has["entries"] else []  # fmt: skip
            calls = dict(con.sql(f"select session_id, count(*) from {c} group by 1").fetchall()) if has["tool_calls"] else {}
            lf = pl.scan_parquet(f"{out}/entries/**/*.parquet", hive_partitioning=True) if has["entries"] else None
            counts = dict(lf.group_by("session_id").len().collect().iter_rows()) if lf is not None else {}
            total_bad = 0
            for p, data in zip(paths, files):
                want = scan(data)
                sid, bad, n = sessions[p]
                got = [r for r in rows if r[0] == sid]
                assert n == len(want) == len(got) == counts.get(sid, 0), p
                assert [r[1] for r in got] == [clean_cut(x["id"]) for x in want]
                assert [r[2] for r in got] == [clean_cut(x.get("type")) for x in want]
                problems = [image_problems(x) for x in want]
                assert [r[3] for r in got] == problems
                assert bad == sum(q is not None for ps in problems for q in ps)
                total_bad += bad
                cost = sum(r[4] or 0.0 for r in got if r[5] == "assistant")
                assert cost == pytest.approx(sum(assistant_cost(x) for x in want), rel=1e-9, abs=1e-9)
                assert calls.get(sid, 0) == sum(tool_calls(x) for x in want)
            assert result.bad_blocks == total_bad
        finally:
            shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(session_file(0))
def test_backends_give_equal_tables(data: bytes) -> None:
    if not native_available():
        pytest.skip("the native extension is not built")
    root, (path,) = _history([data])
    try:
        tables = {}
        for backend in ("python", "native"):
            with open_quiet(path, backend) as sm:
                tables[backend] = {t: pa.table(sm.to_arrow(t)) for t in ("entries", "tool_calls", "sessions")}
        for t in ("entries", "tool_calls", "sessions"):
            py, nat = tables["python"][t], tables["native"][t]
            assert py.schema == nat.schema
            for name in py.column_names:
                assert py.column(name).to_pylist() == nat.column(name).to_pylist(), (t, name)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_every_entry_that_targets_one_has_its_target_id(tmp_path: Path, backend: str) -> None:
    """docs/TABLES.md: ``target_id`` for ``label``, ``context_edit`` and ``leaf``
    entries. The native rows left a ``leaf`` entry's empty (adversary round 41, F5)."""
    h = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-11-07T10:00:00.000Z", "cwd": "/p"}
    lines = [h, {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-11-07T10:00:01.000Z",
                 "message": {"role": "user", "content": "hi"}}]
    for k, kind in enumerate(("leaf", "label", "context_edit")):
        lines.append({"type": kind, "id": f"t{k}", "parentId": "a", "timestamp": "2025-11-07T10:00:02.000Z",
                      "targetId": "a", **({"label": "x"} if kind == "label" else {})})
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in lines))
    with open_quiet(path, backend) as sm:
        rows = pa.table(sm.to_arrow("entries")).to_pylist()
    assert [(r["type"], r["target_id"]) for r in rows] == [("message", None), ("leaf", "a"), ("label", "a"),
                                                           ("context_edit", "a")]


def test_a_session_with_an_image_that_does_not_decode_is_exported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history's 62 lost sessions: one image whose base64 does not decode dropped
    the whole session (and its cost) from the dataset, with nothing in it saying so."""
    from sessiontree import SessionManager
    from sessiontree.cli import main

    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    folder = tmp_path / "--home-u-img--"
    sm = SessionManager.create("/home/u/img", str(folder), backend=backend)
    sm.append_message({"role": "user", "content": [{"type": "text", "text": "look"},
                       {"type": "image", "data": good_png[:-1], "mimeType": "image/png"}], "timestamp": 1})  # fmt: skip
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2,
                       "usage": {"totalTokens": 7, "cost": {"total": 0.25}}})  # fmt: skip
    path = sm.session_file
    sm.close()
    out = tmp_path / "out"
    assert main(["export", "--format", "parquet", str(folder), "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["written"], d["failed"], d["badBlocks"]) == (1, [], 1)
    e = f"read_parquet('{out}/entries/**/*.parquet', hive_partitioning = true)"
    s = f"read_parquet('{out}/sessions/**/*.parquet', hive_partitioning = true)"
    assert duckdb.sql(f"select sum(cost) from {e} where role = 'assistant'").fetchall() == [(0.25,)]
    assert duckdb.sql(f"select i.problem, i.mime, i.sha256 from {e}, unnest(images) as t(i)").fetchall() == [
        ("not_base64", "image/png", None)
    ]
    assert duckdb.sql(f"select path, bad_blocks from {s}").fetchall() == [(path, 1)]
    assert main(["export", "--format", "parquet", str(folder), "--out", str(out)]) == 0
    assert "0 session(s) written" in capsys.readouterr().out
