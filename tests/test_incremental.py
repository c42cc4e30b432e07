"""Growing a file piece by piece and ``refresh``-ing gives what one fresh open gives.

The loader is incremental (``refresh`` reads only new bytes, a partial last line stays
pending, a parent defined later links the entries that named it). Hypothesis builds
files from every kind of line the rules distinguish (entries, forward references,
cycles, duplicates, blanks, CRLF, garbage, non-objects, extra headers, unknown types,
compactions on and off their path) and cuts them at arbitrary byte positions; after each
piece is appended, ``refresh`` must agree with a fresh open of the same bytes on every
fact the index reports. Both backends, and each against the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree._pure import PythonIndex

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
IDS = ["a1", "a2", "a3", "a4", "a5", "a6"]


def _entry(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["msg", "msg", "msg", "compaction", "label", "info", "future", "noid", "dup"]))
    eid = draw(st.sampled_from(IDS))
    parent = draw(st.sampled_from([None, None, "zz", "", 5, *IDS]))
    ts = draw(st.sampled_from(["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:00.500Z", "bad", "2026-01-01"]))
    e: dict[str, Any] = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts}
    if kind == "msg":
        e["message"] = {"role": draw(st.sampled_from(["user", "assistant"])), "content": "x\u2028y", "timestamp": 1}
    elif kind == "compaction":
        e.update(type="compaction", summary="s", firstKeptEntryId=draw(st.sampled_from(IDS)), tokensBefore=1)
    elif kind == "label":
        e.update(type="label", targetId=draw(st.sampled_from(IDS)), label=draw(st.sampled_from(["L", "", None])))
    elif kind == "info":
        e.update(type="session_info", name=draw(st.sampled_from(["n", ""])))
    elif kind == "future":
        e["type"] = "future"
    elif kind == "noid":
        del e["id"]
    if parent == 5:
        del e["parentId"]
    return json.dumps(e, ensure_ascii=False).encode()


@st.composite
def images(draw: Any) -> bytes:
    parts = [HEADER]
    for _ in range(draw(st.integers(0, 14))):
        shape = draw(st.sampled_from(["entry"] * 6 + ["crlf", "blank", "garbage", "array", "header", "nan", "torn"]))
        if shape == "entry":
            parts.append(_entry(draw) + b"\n")
        elif shape == "crlf":
            parts.append(_entry(draw) + b"\r\n")
        elif shape == "blank":
            parts.append(b" \t\r\n")
        elif shape == "garbage":
            parts.append(b"not json {\n")
        elif shape == "array":
            parts.append(b"[1,2]\n")
        elif shape == "header":
            parts.append(HEADER)
        elif shape == "nan":
            parts.append(b'{"type":"message","id":"n1","parentId":null,"x":NaN}\n')
        else:  # a torn fragment, then an entry on the same line
            parts.append(b'{"type":"message","id":"t' + _entry(draw) + b"\n")
    data = b"".join(parts)
    if draw(st.booleans()):
        data += _entry(draw)[: draw(st.integers(1, 30))]  # a torn last line
    return data


def facts(ix: Any) -> dict[str, Any]:
    ids = ix.ids()
    return {
        "ids": ids,
        "entries": ix.entries(),
        "paths": {i: ix.path_ids(i) for i in ids},
        "children": {i: [c["id"] for c in ix.children(i)] for i in ids},
        "report": [(r.kind, r.line, r.offset, r.ids) for r in ix.load_report()],
        "last": ix.last_id(),
        "image_len": ix.image_len(),
        "pending": ix.has_pending_tail(),
        "labels": ix.labels(),
        "name": ix.session_name(),
        "tree": [n.entry["id"] for n in ix.tree()],
        "raw": [ix.raw_line(i) for i in ids],
    }


def _cls(backend: str) -> Any:
    if backend == "python":
        return PythonIndex
    from sessiontree._native import NativeIndex

    return NativeIndex


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=images(), cuts=st.lists(st.integers(0, 4000), max_size=6))
def test_refresh_equals_fresh_open(backend: str, tmp_path: Path, data: bytes, cuts: list[int]) -> None:
    cls = _cls(backend)
    path = tmp_path / "grow.jsonl"
    points = sorted({len(HEADER), *(c for c in cuts if len(HEADER) < c < len(data)), len(data)})
    path.write_bytes(data[: points[0]])
    ix = cls.open(str(path))
    for a, b in zip(points, points[1:]):
        with open(path, "ab") as f:
            f.write(data[a:b])
        ix.refresh(str(path))
        fresh = cls.open(str(path))
        assert facts(ix) == facts(fresh), (a, b)
    # And the two backends agree on the whole file.
    if backend == "native":
        assert facts(PythonIndex.open(str(path))) == facts(ix)


@settings(max_examples=100, deadline=None)
@given(data=images())
def test_from_image_equals_open(data: bytes) -> None:
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        f.write(data)
        f.flush()
        assert facts(PythonIndex.from_image(data)) == facts(PythonIndex.open(f.name))
