"""The native writer of a search's hits as ``--json`` (``src/search/hits_json.rs``,
``_Search.json``) against the Python one it replaces (``cli/search.py``'s
``_hit_json`` and ``to_json_bytes``): the same bytes chunk by chunk, through the index and without it,
over sessions with odd ids, names, paths, texts and times; the same bytes for
generated strings, times, scores and current-path flags; and the command's whole
``--json`` output equal with the native writer and without it."""

from __future__ import annotations

import json
import shlex
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree import LoadReportWarning
from sessiontree import catalog as cat
from sessiontree._time import datetime_from_ms
from sessiontree.catalog import _search
from sessiontree.cli.search import _hit_json, items_json

from _shared import backends, native_available
from test_catalog import make_root

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")
# A search on the python backend has no native writer to hold against the Python one.
native_writer = pytest.mark.skipif("native" not in backends(),
                                   reason="SESSIONTREE_BACKEND=python: a search uses no native writer")

ODD_TEXTS = [
    'the "quoted" and \\backslashed\\ text',
    "the controls \x01\x1f\x7f and C1 \x85\x9f here",
    "the bidi \u202e reversed \u2066 isolate \u061c ALM \u200e LRM",
    "the line\u2028separator and\u2029paragraph",
    "the tabs\tand\r\nnewlines\x0b\x0c",
    "the emoji 👩‍💻 and «guillemets» and ÄÖÜ",
    "x" * 400 + " the far word " + "y" * 400,
]
ODD_IDS = ["plain01", "it's", "with space", "ü-id", "a\"b", "-dash", "semi;colon", "$(x)"]


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _odd_session(folder: Path, name: str, session_name: str | None, cwd: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [_line({"type": "session", "version": 3, "id": f"sid-{name}", "timestamp": "2025-11-02T10:00:00.000Z",
                    "cwd": cwd})]
    parent = None
    times = ["2025-11-02T10:00:01.000Z", "2025-11-02T10:00:02.500Z", "2025-11-02T10:00:03.123456Z",
             "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"]
    n = 0
    for i, text in enumerate(ODD_TEXTS):
        for role in ("user", "assistant"):
            eid = f"{ODD_IDS[n % len(ODD_IDS)]}{n}"
            content: Any = text if role == "user" else [{"type": "text", "text": text},
                                                       {"type": "toolCall", "id": f"c{n}", "name": "read",
                                                        "arguments": {"path": "the/file"}}]
            lines.append(_line({"type": "message", "id": eid, "parentId": parent,
                                "timestamp": times[n % len(times)],
                                "message": {"role": role, "content": content}}))
            parent = eid if n % 5 else parent  # a few branches: hits off the current path
            n += 1
    if session_name is not None:
        lines.append(_line({"type": "session_info", "id": "info1", "parentId": parent,
                            "timestamp": "2025-11-02T10:05:00.000Z", "name": session_name}))
    (folder / f"2025-11-02T10-00-00-000Z_{name}.jsonl").write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    base = tmp_path_factory.mktemp("json") / "sessions"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        folders = make_root(base, 40, seed=5)
    odd = base / "odd folder 'quoted' ü"
    _odd_session(odd, "a", "the \u202e name \"x\"", "/home/o'brien/the proj")
    _odd_session(odd, "b", None, "/tmp")
    _odd_session(odd, "c", "\x01the control name", "")
    return [*folders, str(odd)]


QUERIES = ["the", "session", '"the far"', "x", "name", "emoji", "re:th+e", "ÄÖÜ", "controls"]


def _chunks(s: Any, offset: int = 0, size: int = 7) -> list[list[Any]]:
    hits = list(s.ordered())[offset:]
    return [hits[i:i + size] for i in range(0, len(hits), size)]


@native_writer
@pytest.mark.parametrize("mode", ["index", "files"])
def test_native_chunks_equal_python_chunks(root: list[str], tmp_path: Path, mode: str) -> None:
    catalog = str(tmp_path / "cat.db")
    if mode == "index":
        cat.index(root, catalog=catalog)
    native = 0
    for query in QUERIES:
        for order in ("relevance", "recent"):
            q = _search.parse_query(query)
            s = _search._Search(q, root, catalog, mode == "files", order, None, None, None)
            try:
                quoted: dict[str, str] = {}
                for chunk in _chunks(s):
                    got = s.json(chunk, threads=2)
                    want = items_json(s.page(chunk), quoted)
                    json.loads(b"[" + want + b"]")
                    if got is not None:
                        native += 1
                        assert got == want, (query, order)
                if s.keys is not None and len(s.keys):  # the index's hits without tuples
                    for start in range(0, len(s.keys), 7):
                        got = s.json_keys(start, 7, threads=2)
                        want = items_json(s.page(s._index_hits(s.keys.take(start, 7))), quoted)
                        if got is not None:
                            native += 1
                            assert got == want, (query, order, start)
            finally:
                s.close()
    assert native > 20  # the writer answered, not only declined


def test_search_json_equals_search_stream(root: list[str], tmp_path: Path) -> None:
    catalog = str(tmp_path / "cat.db")
    cat.index(root, catalog=catalog)
    for query in QUERIES:
        for kw in ({"limit": None}, {"limit": 5, "offset": 3}, {"limit": None, "no_cache": True}):
            total, files, chunks = cat.search_json(query, root, catalog=catalog, **kw)
            body = b",\n".join(c if isinstance(c, bytes) else items_json(c) for c in chunks)
            t2, f2, hits = cat.search_stream(query, root, catalog=catalog, **kw)
            assert (total, files) == (t2, f2)
            assert json.loads(b"[" + body + b"]") == [json.loads(json.dumps(_hit_json(h))) for h in hits]


def _one_hit(root: list[str], catalog: str) -> tuple[Any, Any]:
    s = _search._Search(_search.parse_query("the"), root, catalog, False, "relevance", None, None, None)
    hit = next(h for h in s.ordered() if h[12] is not None)
    return s, hit


surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts = st.text(st.one_of(st.characters(), surrogates,
                          st.sampled_from("\x00\x1f\x7f\x80\x9f\u061c\u200e\u200f\u2028\u202e\u2066\u2069\"\\'")),
                max_size=30)
times = st.one_of(st.none(), st.integers(-63_000_000_000_000, 254_000_000_000_000).map(float),
                  st.floats(allow_nan=True, allow_infinity=True),
                  st.sampled_from([-62_135_596_800_000.0, 253_402_300_799_999.0, -62_135_596_800_001.0,
                                   253_402_300_800_000.0, -0.0, 1.5, 0.0005, -1.0]))


@pytest.fixture(scope="module")
def indexed(root: list[str], tmp_path_factory: pytest.TempPathFactory) -> str:
    catalog = str(tmp_path_factory.mktemp("jsoncat") / "cat.db")
    cat.index(root, catalog=catalog)
    return catalog


@native_writer
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=texts, sid=texts, name=st.one_of(st.none(), texts), cwd=texts, time=times,
       score=st.integers(0, 2**64 - 1), on_path=st.booleans())
def test_writer_equals_hit_json(root: list[str], indexed: str, path: str, sid: str, name: str | None, cwd: str,
                                time: float | None, score: int, on_path: bool) -> None:
    s, hit = _one_hit(root, indexed)
    try:
        terms, uncased = _search._terms(s.q)
        w = s.native.HitsJson(s.ref_paths, terms, uncased)
        key = hit[12][1]
        try:
            w.head(key[0], path, sid, name, cwd, f"sessiontree context {shlex.quote(path)} --leaf ", None)
        except UnicodeEncodeError:  # a lone surrogate: Python writes the chunk
            assert any(0xD800 <= ord(c) <= 0xDFFF for c in path + sid + (name or "") + cwd)
            return
        got = w.write([(*key, hit[1], time, score, on_path)], 1)
        made = s.page([hit])[0]
        dt = datetime_from_ms(time) if time is not None else None
        want = items_json([made._replace(path=path, session_id=sid, session_name=name, cwd=cwd, time=dt,
                                                 score=score, on_path=on_path)])
        if got is None:  # only a time that is not a whole millisecond is left to Python here
            assert time is not None and time == time and abs(time) != float("inf") and time != int(time)
        else:
            assert got == want
    finally:
        s.close()


def test_cli_json_output_same_with_and_without_native_writer(root: list[str], indexed: str,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    from sessiontree.cli import main

    outs = []
    for native in (True, False):
        if not native:
            monkeypatch.setattr(_search._Search, "json", lambda self, hits, threads=2: None)
            monkeypatch.setattr(_search._Search, "json_keys", lambda self, start, n, threads=2: None)
        got = []
        for args in (["the", "--limit", "0"], ["the", "--limit", "3", "--page", "2"], ["zebrafish"],
                     ["name", "--recent", "--limit", "0"], ["the", "--limit", "1000", "--page", "2"],
                     ["the", "--limit", "7", "--page", "1000"], ["ÄÖÜ", "--limit", "0"], ["re:th+e", "--limit", "0"]):
            assert main(["search", *args, *root, "--catalog", indexed, "--json"]) == 0
            got.append(capsysbinary.readouterr().out)
        outs.append(got)
    assert outs[0] == outs[1]
    assert json.loads(outs[0][0])["total"] > 100
