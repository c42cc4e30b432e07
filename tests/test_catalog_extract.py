"""catalog._extract: the Rust reader (src/listing.rs) and the Python rules give the same
scan of every file; a scan cut into pieces and resumed gives what one scan gives; the
entries record's current path is the loader's; docs, usage and listing facts are what a
plain ``json.loads`` loop finds."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from _brute import _strings

from sessiontree._filestate import indexed_ends
from sessiontree.catalog._extract import scan_file
from sessiontree.catalog._records import entries_path, records, unpack_log
from sessiontree.generate import generate_session

from _shared import CASES, CORPUS, DATA, native_available, open_quiet

if native_available():
    from sessiontree import _sessiontree as NATIVE  # both readers, whatever $SESSIONTREE_BACKEND says
else:
    NATIVE = None
needs_native = pytest.mark.skipif(NATIVE is None, reason="the native extension is not built (make build)")
ALL = 1 << 62


def _files() -> list[Path]:
    out: list[Path] = []
    for d in (CORPUS, CASES, DATA / "pi099"):
        if d.is_dir():
            out.extend(sorted(d.glob("*.jsonl")))
    return out


def _comparable(r: Any) -> list[Any]:
    r = list(r)
    r[0] = (*r[0][:3], r[0][4])  # bytes_read depends on the reader's block size
    return r


def _full(path: str, content: bool, native: Any, texts: bool = True) -> Any:
    return scan_file(path, 0, b"", content, ALL, texts=texts, docs=content, native=native)


def _pieces(path: str, content: bool, native: Any, limit: int) -> dict[str, Any]:
    """Scan in pieces of ``limit`` bytes, resuming each from the last."""
    start, prior = 0, b""
    count, first, texts, name, activity = 0, None, [], (False, None), None
    docs: list[Any] = []
    usage: list[Any] = []
    log = b""
    header = None
    while True:
        r = scan_file(path, start, prior, content, limit, texts=True, docs=content, native=native)
        (end, eof, tail, _read, _ends), h, old, _fb, facts, entries, n, d, u, lg = r
        log += lg
        header = header or h
        c, f1, t, nm, act = facts
        count += c
        first = first or f1
        if t:
            texts.append(t)
        if nm[0]:
            name = nm
        if act is not None:
            activity = act if activity is None else max(activity, act)
        docs += d
        usage += u
        prior += entries
        if eof or h[0] == "missing" or old or end <= start:
            break
        start = end
    return {"header": header, "facts": (count, first, " ".join(texts), name, activity), "entries": prior,
            "count": n, "docs": docs, "usage": usage, "end": end, "log": log}


@needs_native
@pytest.mark.parametrize("content", [False, True])
@pytest.mark.parametrize("texts", [False, True])
def test_rust_equals_python_on_every_file(content: bool, texts: bool) -> None:
    files = _files()
    assert files, "no conformance data"
    for p in files:
        a = _full(str(p), content, NATIVE, texts)
        b = _full(str(p), content, None, texts)
        assert _comparable(a) == _comparable(b), p.name
        assert entries_path(a[5], native=NATIVE) == entries_path(a[5]), p.name
        assert a[0][4] == indexed_ends(str(p), a[0][0]), p.name  # _filestate's fingerprint


def _generated(tmp: Path, n: int = 12) -> list[Path]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        p = tmp / f"g{i}.jsonl"
        generate_session(p, size_bytes=rng.choice([3_000, 40_000, 400_000]), seed=100 + i,
                         payload_scale=rng.choice([0.02, 0.3, 1.0]))
        out.append(p)
    return out


@pytest.mark.parametrize("native", [False, True])
def test_pieces_equal_one_scan(tmp_path: Path, native: bool) -> None:
    if native and NATIVE is None:
        pytest.skip("the native extension is not built")
    nat = NATIVE if native else None
    for p in _generated(tmp_path, 6) + _files()[:40]:
        whole = _full(str(p), True, nat)
        for limit in (1, 777, 20_000):
            got = _pieces(str(p), True, nat, limit)
            assert got["facts"] == whole[4], (p.name, limit)
            assert got["entries"] == whole[5], (p.name, limit)
            assert got["docs"] == whole[7], (p.name, limit)
            assert got["usage"] == whole[8], (p.name, limit)
            assert unpack_log(got["log"]) == unpack_log(whole[9]), (p.name, limit)
            if whole[1][0] == "found" and not whole[2]:
                assert got["end"] == whole[0][0]


@needs_native
def test_usage_logs_from_spans_equal_the_python_rules(tmp_path: Path) -> None:
    """The native usage log, read from the validator's spans without a walk of the
    messages (``docs`` off), is the Python rules' byte for byte."""
    for p in _generated(tmp_path, 6) + _files():
        a = scan_file(str(p), 0, b"", True, ALL, native=NATIVE)
        b = scan_file(str(p), 0, b"", True, ALL, native=None)
        assert a[9] == b[9], p.name
        assert unpack_log(b[9]) == [(meta, tuple(nums)) for meta, nums in b[8]], p.name


@needs_native
def test_rust_equals_python_on_generated(tmp_path: Path) -> None:
    for p in _generated(tmp_path):
        for content in (False, True):
            for texts in (False, True):
                a, b = _full(str(p), content, NATIVE, texts), _full(str(p), content, None, texts)
                assert _comparable(a) == _comparable(b), p.name


@pytest.mark.parametrize("native", [False, True])
def test_texts_change_nothing_else(tmp_path: Path, native: bool) -> None:
    """Without the listing text (the Rust scan then reads the activity time from the
    validator's fields and walks no message past the first user text) every other
    fact, entry, doc and usage row is the same."""
    if native and NATIVE is None:
        pytest.skip("the native extension is not built")
    nat = NATIVE if native else None
    for p in _generated(tmp_path, 6) + _files():
        for content in (False, True):
            with_texts = _comparable(_full(str(p), content, nat, True))
            without = _comparable(_full(str(p), content, nat, False))
            assert without[4][2] == ""
            with_texts[4] = (*with_texts[4][:2], "", *with_texts[4][3:])
            assert without == with_texts, (p.name, content)


@pytest.mark.parametrize("native", [False, True])
def test_current_path_is_the_loaders(backend: str, native: bool) -> None:
    if native and NATIVE is None:
        pytest.skip("the native extension is not built")
    for p in _files():
        r = _full(str(p), False, NATIVE if native else None)
        if r[1][0] != "found" or r[2]:
            continue  # not a session, or a version 1 file (no ids)
        ids = [eid for eid, _, _ in records(r[5])]
        with open_quiet(p, backend) as sm:
            if sm.get_header().get("version") != 3:
                continue
            assert ids == [e["id"] for e in sm.get_entries()], p.name
            want = [e["id"] for e in sm.get_branch()] if sm.leaf_id is not None else []
        assert [ids[i] for i in entries_path(r[5], native=NATIVE if native else None)] == want, p.name


# ------------------------------------------------------------------ brute force
def _text_of(msg: dict[str, Any]) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if not isinstance(c, list):
        return ""
    return " ".join((b.get("text") if isinstance(b.get("text"), str) else "")
                    for b in c if isinstance(b, dict) and b.get("type") == "text")




def brute(path: Path) -> dict[str, Any]:
    """What a plain json.loads loop finds in a clean v3 file (no damaged lines)."""
    lines = path.read_bytes().split(b"\n")
    seen: set[str] = set()
    docs, usage, texts = [], [], []
    count = 0
    seq = -1
    for raw in lines[1:]:
        if not raw.strip():
            continue
        e = json.loads(raw)
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        seq += 1
        if e["type"] == "message":
            count += 1
            m = e["message"]
            if m["role"] in ("user", "assistant"):
                text = _text_of(m)
                if text:
                    texts.append(text)
                parts = [text] if text else []
                if m["role"] == "assistant":
                    for b in m["content"]:
                        if b.get("type") == "toolCall":
                            parts += [s for s in [b["name"], *_strings(b["arguments"])] if s]
                    if isinstance(m.get("usage"), dict):
                        u = m["usage"]
                        usage.append((e["id"], float(u.get("input", 0)), float(u.get("cost", {}).get("total", 0))))
                if parts:
                    docs.append((seq, e["id"], m["role"], "\n".join(parts)))
        elif e["type"] == "session_info" and isinstance(e.get("name"), str):
            docs.append((seq, e["id"], "name", e["name"]))
    return {"count": count, "texts": " ".join(texts), "docs": docs, "usage": usage}


@pytest.mark.parametrize("native", [False, True])
def test_against_brute_force(tmp_path: Path, native: bool) -> None:
    if native and NATIVE is None:
        pytest.skip("the native extension is not built")
    for p in _generated(tmp_path):
        r = _full(str(p), True, NATIVE if native else None)
        b = brute(p)
        assert r[4][0] == b["count"]
        assert r[4][2] == b["texts"]
        assert [(d[0], d[1], d[2], d[4]) for d in r[7]] == b["docs"]
        assert [(u[0][1], u[1][0], u[1][5]) for u in r[8]] == b["usage"]


# ------------------------------------------------------------------- odd lines
HDR = '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'


def _msg(i: str, body: str, parent: str | None = None) -> str:
    p = "null" if parent is None else json.dumps(parent)
    return f'{{"type":"message","id":"{i}","parentId":{p},"timestamp":"2025-01-01T00:00:01.000Z","message":{body}}}'


ODD = [
    # escaped keys and values, duplicate keys (the last wins), leading white space
    _msg("a", '{"r\\u006fle":"user","content":"first","content":"second \\"q\\" \\\\ \\ud83d\\ude00"}'),
    "   " + _msg("b", '{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"text"},'
                      '{"type":"text","text":null},{"type":"text","text":true}],"timestamp":1e3}'),
    # tool calls: keys first-seen order with last values, nested strings, empty strings skipped
    _msg("c", '{"role":"assistant","content":[{"type":"toolCall","name":"edit","arguments":'
              '{"path":"p","n":{"deep":["a",["b",{"c":"d"}],1,null]},"path":"q","e":""}}],'
              '"usage":{"input":12345678901234567890123,"output":1.5e3,"cost":{"total":1e400}},'
              '"provider":"x","model":"y"}'),
    # lone surrogate in an id and a text; invalid UTF-8 in a text
    _msg("\\ud800", '{"role":"user","content":"lone \\udc00 here"}'),
    _msg("e", '{"role":"user","content":"bad \udcff utf8"}'),  # a raw 0xff byte
    # torn fragment with an entry behind it; a CRLF line; a later header
    '{"type":"mess' + _msg("f", '{"role":"user","content":"recovered"}'),
    _msg("g", '{"role":"user","content":"crlf"}') + "\r",
    HDR,
    '{"type":"session_info","id":"h","parentId":"g","timestamp":"x","name":"  N  "}',
    '{"type":"usage","id":"i","parentId":"h","timestamp":"2025-01-01T00:00:02.000Z","kind":"k","provider":"p",'
    '"model":"m","usage":{"input":true,"output":"7","totalTokens":3}}',
    '{"type":"compaction","id":"j","parentId":"i","timestamp":"2025-01-01T00:00:03.000Z","summary":"s",'
    '"firstKeptEntryId":"j","tokensBefore":1,"usage":{"input":4,"cost":{"total":0.25}}}',
    '{"type":"message","id":"k","parentId":"j","message":{"role":"user","content":"no time"}}',
    '[1,2]',
    "",
    '{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"a duplicate"}}',
]


@needs_native
def test_odd_lines_agree(tmp_path: Path) -> None:
    p = tmp_path / "odd.jsonl"
    p.write_bytes(("\ufeff" + HDR + "\n" + "\n".join(ODD) + "\n").encode("utf-8", "surrogateescape"))
    for content in (False, True):
        a, b = _full(str(p), content, NATIVE), _full(str(p), content, None)
        assert _comparable(a) == _comparable(b)
    r = _full(str(p), True, NATIVE)
    docs = {d[1]: d[4] for d in r[7]}
    assert docs["a"] == 'second "q" \\ 😀'
    assert r[4][2].startswith('second "q" \\ 😀 x   true')  # null/absent texts join as ""
    assert docs["c"] == "edit\nq\na\nb\nd"
    assert docs["\ud800"] == "lone \udc00 here"
    assert docs["e"] == "bad \ufffd utf8"
    assert docs["f"] == "recovered" and docs["g"] == "crlf"
    assert r[4][3] == (True, "  N  ")
    usage = {u[0][1]: u for u in r[8]}
    assert usage["c"][1][:2] == (float(12345678901234567890123), 1500.0) and usage["c"][1][5] == float("inf")
    assert usage["i"][1] == (0.0, 0.0, 0.0, 0.0, 3.0, 0.0) and usage["i"][0][5:] == ("p", "m")
    assert usage["j"][1][0] == 4.0 and usage["j"][0][4] == "compaction" and usage["j"][0][5:] == ("", "")
    assert "k" in docs and [d for d in r[7] if d[1] == "k"][0][3] is None
    assert r[6] == 11  # a..k (the duplicate "a" and the later header are not entries)


def test_text_that_is_not_a_string_falls_back(tmp_path: Path) -> None:
    p = tmp_path / "n.jsonl"
    p.write_text(HDR + "\n" + _msg("a", '{"role":"user","content":[{"type":"text","text":[1,[2,null],{}]},'
                                        '{"type":"text","text":7.50}]}') + "\n")
    r = _full(str(p), False, NATIVE)
    assert r[4][2] == "1,2,,[object Object] 7.5"  # JavaScript String()
    if NATIVE is not None:
        assert NATIVE.scan_listing(str(p), 0, b"", False, ALL, 4096, True, False)[3] is not None  # Rust hands it over


def test_headers_and_tails(tmp_path: Path) -> None:
    cases = {
        b"": ("missing", None),
        b"\n \n": ("missing", None),
        b"x\n" + HDR.encode() + b"\n": ("found", HDR.encode()),
        b'{"type":"message","id":"a"}\n' + HDR.encode(): ("missing", (1, 0, b'{"type":"message","id":"a"}')),
        b"\xef\xbb\xbfnot json\r\n": ("missing", (1, 0, b"not json")),
    }
    for i, (data, header) in enumerate(cases.items()):
        p = tmp_path / f"h{i}.jsonl"
        p.write_bytes(data)
        for nat in {None, NATIVE}:
            assert _full(str(p), False, nat)[1] == header, (data, nat)
    p = tmp_path / "tail.jsonl"
    p.write_bytes(HDR.encode() + b"\n" + _msg("a", '{"role":"user","content":"done"}').encode())
    for nat in {None, NATIVE}:
        (end, eof, tail, _, _ends), *_rest = _full(str(p), False, nat)
        assert eof and tail > 0 and end == len(HDR) + 1
        assert _full(str(p), False, nat)[4][0] == 1  # a complete last line without LF counts
    p.write_bytes(b'{"type":"session","id":"v1"}\n{"type":"message","message":{"role":"user","content":"hi"}}\n')
    for nat in {None, NATIVE}:
        r = _full(str(p), False, nat)
        assert r[2] and r[4][0] == 1 and r[4][1] == "hi"  # version 1: entries without ids count


def test_memory_reads_are_bounded(tmp_path: Path) -> None:
    """The reader never holds more than a block and the longest line: a 40 MB file
    with 1 MB lines is read in pieces (checked on the bytes each piece reports)."""
    if NATIVE is None:
        pytest.skip("the native extension is not built")
    p = tmp_path / "big.jsonl"
    line = _msg("x", json.dumps({"role": "user", "content": "y" * 1_000_000}))
    with open(p, "w") as f:
        f.write(HDR + "\n")
        for i in range(40):
            f.write(line.replace('"id":"x"', f'"id":"x{i}"') + "\n")
    r = NATIVE.scan_listing(str(p), 0, b"", True, 4 << 20, 4096, True, True)
    assert r[0][3] < 8 << 20 and not r[0][1]
    assert os.path.getsize(p) > 40_000_000
