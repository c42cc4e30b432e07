"""Usage totals and labels as the native core takes them from the index: usage summed
while the lines are indexed (``src/usage.rs``), labels from the three values the rule
reads (``Index.label_fields``). Held against a brute-force ``json.loads`` reading of
the file and against the python backend, on lines written to trip a field extractor:
duplicate and escaped keys, values of every JSON type, a number the core cannot sum
exactly, a torn fragment before an entry, and a file changed after it was indexed.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _shared import native_available, open_quiet

from sessiontree import LoadReportWarning, SessionManager, StaleSessionError
from sessiontree.schema import CodeColumn

HDR = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
TS = '"timestamp":"2026-01-01T00:00:01.000Z"'


def entry(eid: str, parent: str | None, body: str) -> str:
    p = "null" if parent is None else json.dumps(parent)
    return f'{{"type":"message","id":"{eid}","parentId":{p},{TS},{body}}}'


def label(eid: str, body: str) -> str:
    return f'{{"type":"label","id":"{eid}","parentId":"a1",{body}}}'


# Each line is raw JSON text: what the validator sees, keys escaped and repeated as written.
LINES = [
    HDR,
    entry("a1", None, '"message":{"role":"assistant","provider":"p","model":"m","usage":{"input":1,"output":2,'
          '"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"total":0.25}}}'),
    # The last `usage` wins, even when it is not an object; duplicates inside it too.
    entry("a2", "a1", '"message":{"role":"assistant","usage":{"input":100},"usage":{"input":5,"input":6,'
          '"output":true,"cacheRead":"7","cacheWrite":null,"totalTokens":[1],"cost":{"total":"x"}}}'),
    entry("a3", "a2", '"message":{"role":"assistant","usage":{"input":100},"usage":null,"provider":null}'),
    # The last top-level `message` wins: the assistant one before it counts for nothing.
    entry("a4", "a3", '"message":{"role":"assistant","usage":{"input":1000}},"message":{"role":"user"}'),
    entry("a5", "a4", '"message":{"role":"assistant","usage":{"input":1000}},"message":"not an object"'),
    entry("a6", "a5", '"message":{"role":"user","usage":{"input":1000}},'
          '"message":{"role":"assistant","usage":{"output":-0,"cost":{"total":1}}}'),
    # Escaped keys are the keys they spell.
    entry("a7", "a6", '"m\\u0065ssage":{"\\u0072ole":"assistant","us\\u0061ge":{"inp\\u0075t":1e0,'
          '"cost":{"tot\\u0061l":2}},"provid\\u0065r":"p","mod\\u0065l":"m"}'),
    # Nested look-alikes are not the fields.
    entry("a8", "a7", '"message":{"role":"assistant","content":[{"usage":{"input":1000},"model":"x"}],'
          '"details":{"provider":"y","usage":{"output":1000}},"usage":{"cacheRead":2.5,"cost":5}}'),
    # provider/model of every JSON type; equal values written differently are one model.
    entry("a9", "a8", '"message":{"role":"assistant","provider":{"a":"}"},"model":17,"usage":{}}'),
    entry("a10", "a9", '"message":{"role":"assistant","provider":"\\u0070","model":"m"}'),
    entry("a11", "a10", '"message":{"role":"assistant","provider":"p","model":"\\ud800","usage":'
          '{"totalTokens":1267650600228229401496703205376}}'),
    # A duplicate id is skipped: its spending is not counted.
    entry("a1", "a11", '"message":{"role":"assistant","usage":{"input":99999}}'),
    # A torn fragment, then a whole entry: the recovered entry counts.
    '{"type":"message","id":"torn",' + entry("a12", "a11", '"message":{"role":"assistant","usage":{"input":7}}'),
    entry("u1", "a12", '"message":{"role":"user","content":"hi"}'),
    # Labels: strings (escaped, lone surrogate), falsy and truthy values of other types,
    # non-string targets, escaped and repeated keys, odd timestamps.
    label("l1", '"targetId":"a1","label":"first",' + TS),
    label("l2", '"targetId":"a2","label":"sec\\u006fnd\\n","timestamp":17'),
    label("l3", '"targetId":"a3","label":{"k":[1,"\\ud800"]}'),
    label("l4", '"targetId":"a4","label":0,' + TS),
    label("l5", '"targetId":"a5","label":1.5,' + TS),
    label("l6", '"targetId":"a6","label":true,"timestamp":null'),
    label("l7", '"targetId":"a7","label":"",' + TS),
    label("l8", '"targetId":17,"label":"not a string target",' + TS),
    label("l9", '"t\\u0061rgetId":"a9","l\\u0061bel":"\\ud800x",' + TS),
    label("l10", '"targetId":"a10","label":"gone","label":null,' + TS),
    label("l11", '"targetId":"a11","label":null,"label":"kept",' + TS),
    label("l12", '"targetId":"a1","label":"moved to the end",' + TS),
    label("l13", '"targetId":"nowhere","label":[],' + TS),
    label("l14", '"targetId":"a4",' + TS),
    # Cleared, then set again: the label moves to the end (a JavaScript Map).
    label("l15", '"targetId":"a2",' + TS),
    label("l16", '"targetId":"a2","label":"back","timestamp":"later"'),
]


def write(path: Path, lines: list[str]) -> Path:
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
    return path


def brute(path: Path) -> tuple[dict[str, Any], Any, list[tuple[Any, Any]], dict[str, Any], dict[str, Any]]:
    """Usage and labels read with ``json.loads`` from the accepted entries (first id wins;
    a torn fragment's entry from where it starts)."""
    tokens: dict[str, Any] = dict.fromkeys(("input", "output", "cacheRead", "cacheWrite", "totalTokens"), 0)
    cost: Any = 0
    models: list[tuple[Any, Any]] = []
    labels: dict[str, Any] = {}
    stamps: dict[str, Any] = {}
    seen: set[str] = set()
    for raw in path.read_bytes().split(b"\n")[1:]:
        if not raw:
            continue
        text = raw.decode("utf-8", "surrogatepass")
        try:
            e = json.loads(text)
        except ValueError:
            e = json.loads(text[text.index('{"type"', 1):])
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        msg = e.get("message")
        if e["type"] == "message" and isinstance(msg, dict) and msg.get("role") == "assistant":
            models.append((msg.get("provider"), msg.get("model")))
            usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else {}
            for k in tokens:
                if type(usage.get(k)) in (int, float):
                    tokens[k] += usage[k]
            c = usage.get("cost")
            if isinstance(c, dict) and type(c.get("total")) in (int, float):
                cost += c["total"]
        if e["type"] == "label" and isinstance(e.get("targetId"), str):
            v = e.get("label")
            if not (v is None or v is False or v == "" or (type(v) in (int, float) and (v == 0 or v != v))):
                labels[e["targetId"]] = v
                stamps[e["targetId"]] = e.get("timestamp")
            else:
                labels.pop(e["targetId"], None)
                stamps.pop(e["targetId"], None)
    return tokens, cost, models, labels, stamps


def label_stamps(sm: SessionManager) -> dict[str, Any]:
    out = {}
    stack = list(sm.get_tree())
    while stack:
        node = stack.pop()
        if node.label is not None:
            out[node.entry["id"]] = node.label_timestamp
        stack.extend(node.children)
    return out


def check(path: Path, backend: str) -> None:
    with open_quiet(path, backend) as sm:
        check_open(sm, path)


def check_open(sm: SessionManager, path: Path) -> None:
    """``sm``'s usage totals and labels are the brute force's over ``path``."""
    tokens, cost, models, labels, stamps = brute(path)
    usage = sm.get_usage_totals()
    assert usage.tokens == tokens
    assert type(usage.cost) is type(cost) and usage.cost == cost
    assert all(type(usage.tokens[k]) is type(v) for k, v in tokens.items())
    assert usage.messages == len(models)
    want: list[tuple[Any, Any, int]] = []
    for p, m in models:  # rows in order of first use, equal values merged
        key = (type(p), p, type(m), m)
        k = next((i for i, (q, n, _) in enumerate(want) if (type(q), q, type(n), n) == key), None)
        if k is None:
            want.append((p, m, 1))
        else:
            want[k] = (p, m, want[k][2] + 1)
    assert usage.models == want
    assert sm.get_labels() == labels and list(sm.get_labels()) == list(labels)
    assert all(sm.get_label(t) == v for t, v in labels.items())
    ids = set(sm.get_shape().ids)
    assert label_stamps(sm) == {t: s for t, s in stamps.items() if t in ids}


def test_usage_and_labels_of_tricky_lines(tmp_path: Path, backend: str) -> None:
    path = write(tmp_path / "s.jsonl", LINES)
    tokens, cost, models, labels, _ = brute(path)
    # The file is what the cases say (so the brute force is not vacuous).
    assert tokens == {"input": 1 + 6 + 1.0 + 7, "output": 2 + 0, "cacheRead": 3 + 2.5, "cacheWrite": 4,
                      "totalTokens": 10 + 2**100}
    assert cost == 0.25 + 1 + 2 and len(models) == 10
    assert list(labels) == ["a1", "a3", "a5", "a6", "a9", "a11", "nowhere", "a2"]
    assert labels["a1"] == "moved to the end" and labels["a9"] == "\ud800x" and labels["a3"] == {"k": [1, "\ud800"]}
    check(path, backend)


def test_a_number_the_core_cannot_sum_exactly(tmp_path: Path, backend: str) -> None:
    """Integers beyond 128 bits are summed exactly by Python; the core hands the sum over."""
    big = 10**40
    lines = [*LINES[:3], entry("b1", "a2", f'"message":{{"role":"assistant","usage":{{"output":{big}}}}}'),
             entry("b2", "b1", f'"message":{{"role":"assistant","usage":{{"output":-{big},"input":1.5}}}}')]
    path = write(tmp_path / "s.jsonl", lines)
    check(path, backend)
    with open_quiet(path, backend) as sm:
        assert sm.get_usage_totals().tokens["output"] == 2  # exact: 2 + 10**40 - 10**40


def test_totals_and_labels_follow_appends(tmp_path: Path, backend: str) -> None:
    path = write(tmp_path / "s.jsonl", LINES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        sm = SessionManager.open(str(path), backend=backend)
    with sm:
        check_open(sm, path)  # folded once before the appends
        sm.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m",
                           "usage": {"input": 2, "output": 0.5, "cost": {"total": 0.5}}, "timestamp": 5})
        sm.append_label_change("a4", "now")
        sm.append_label_change("a1", None)
        check_open(sm, path)
        assert sm.get_labels()["a4"] == "now" and "a1" not in sm.get_labels()
        assert sm.get_usage_totals().tokens["output"] == 2.5
    check(path, backend)


@pytest.mark.skipif(not native_available(), reason="the native extension is not built")
def test_a_rewrite_after_indexing(tmp_path: Path) -> None:
    """A line rewritten in place in the middle of the file (same size, both 4 KiB ends
    kept) after the session was opened. The usage totals were taken while indexing, so
    the native backend answers with what it read, as the python backend does; a label
    line is read again, and the native backend refuses the changed one."""
    def filler(tag: str) -> list[str]:
        return [entry(f"{tag}{i}", None, '"message":{"role":"user","content":"' + "x" * 200 + '"}') for i in range(40)]

    path = write(tmp_path / "s.jsonl", [HDR, *filler("f"), *LINES[1:], *filler("g")])
    data = path.read_bytes()
    old_usage = '"usage":{"input":7}'
    old_label = '"label":"first"'
    assert data.count(old_usage.encode()) == 1 and data.count(old_label.encode()) == 1
    assert 4096 < data.index(old_usage.encode()) < len(data) - 4096
    assert 4096 < data.index(old_label.encode()) < len(data) - 4096
    seen = {}
    for backend in ("python", "native"):
        path.write_bytes(data)
        sm = open_quiet(path, backend)
        with sm:
            path.write_bytes(data.replace(old_usage.encode(), b'"usage":{"input":8}'))
            seen[backend] = sm.get_usage_totals()
            path.write_bytes(data.replace(old_label.encode(), b'"label":"FIRST"'))
            if backend == "native":
                with pytest.raises(StaleSessionError, match="changed"):
                    sm.get_labels()
            else:
                assert sm.get_labels()["a1"] == "moved to the end"
    assert seen["native"] == seen["python"]
    assert seen["native"].tokens["input"] == 1 + 6 + 1.0 + 7


def test_code_column_counts_are_counter() -> None:
    names = ("a", "b", None, "?")
    for codes in (b"", b"\x01\x01\x00\x02\x01", b"\x02\x00\x00", bytes(range(3)) * 5 + b"\x01"):
        col = CodeColumn(codes, names)
        want = Counter(col)
        assert col.counts() == want and list(col.counts()) == list(want)
    others = {1: "x", 3: "y", 4: "x", 6: "?"}
    col = CodeColumn(b"\x00\x03\x01\x03\x03\x02\x03", names, others)
    assert list(col) == [col[i] for i in range(len(col))] == ["a", "x", "b", "y", "x", None, "?"]
    want = Counter(col)
    assert want == {"a": 1, "x": 2, "b": 1, "y": 1, None: 1, "?": 1}
    assert col.counts() == want and list(col.counts()) == list(want)


def test_child_counts(tmp_path: Path, backend: str) -> None:
    path = write(tmp_path / "s.jsonl", LINES)
    with open_quiet(path, backend) as sm:
        shape = sm.get_shape()
        assert list(shape.child_counts()) == [len(shape.children(i)) for i in range(len(shape))]
        start, kids = shape.children_table()
        assert all(list(kids[start[i]:start[i + 1]]) == list(shape.children(i)) for i in range(len(shape)))
        assert list(shape.child_counts()).count(0) == len(sm.get_leaf_ids())


def test_entries_with_long_numbers_decode_exactly(tmp_path: Path, backend: str) -> None:
    """The native index tells ``decode_line`` which lines have a number with 19+ digits
    in a run (orjson would round such an integer to a float); every other line skips the
    digit scan. Each line here must still decode to ``json.loads`` of it."""
    def custom(eid: str, data: str) -> str:
        return f'{{"type":"custom","customType":"x","data":{data},"id":"{eid}","parentId":null,{TS}}}'

    lines = [
        HDR,
        custom("c1", "18446744073709551616"),
        custom("c2", '{"deep":[[-123456789012345678901234567890]]}'),
        custom("c3", "[1e0000000000000000001, 0.12345678901234567890123, 123456789012345678]"),
        custom("c4", '"12345678901234567890 in a string"'),
        # behind torn bytes, an entry that continues the tree (rule 3: its parent read before)
        '{"type":"custom","id":"torn",' + custom("c5", '{"n":99999999999999999999}').replace('"parentId":null',
                                                                                          '"parentId":"c4"'),
        custom("c6", f"{2**64 + 1}"),
    ]
    path = write(tmp_path / "s.jsonl", lines)
    want = {e["id"]: e for e in (json.loads(text[text.index('{"type"', 1):] if text.startswith('{"type":"custom","id":"torn"') else text)
                                 for text in lines[1:])}
    with open_quiet(path, backend) as sm:
        sm.append_custom_entry("x", {"n": 2**70, "m": -(2**65)})
        got = sm.get_entries()
        assert [e["id"] for e in got][:-1] == list(want)
        for e in got[:-1]:
            assert e == want[e["id"]] and type(e["data"]) is type(want[e["id"]]["data"])
        assert got[-1]["data"] == {"n": 2**70, "m": -(2**65)} and type(got[-1]["data"]["n"]) is int
        assert sm.get_entry("c6")["data"] == 2**64 + 1
    with open_quiet(path, backend) as sm:  # appended line, read back
        assert sm.get_entries()[-1]["data"] == {"n": 2**70, "m": -(2**65)}
