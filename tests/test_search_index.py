"""The search index (catalog/_segments.py, src/search/index.rs, segment.rs): searches
through it equal a catalog-free read and the brute-force scan, page by page and in
both orders; files that changed since they were indexed are read instead; appends
index only their bytes; segments merge; a damaged segment is dropped, never trusted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import _brute
from sessiontree import LoadReportWarning, SessionManager
from sessiontree import catalog as cat
from sessiontree.catalog import _search, _segments
from sessiontree.catalog._store import Store

from _shared import native_available
from test_catalog import EDGE_QUERIES, EDGE_TEXTS, QUERIES, make_root

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

MORE_QUERIES: list[tuple[str, Any]] = [
    ("the", [("word", "the")]),
    ("s", [("word", "s")]),
    ("src/main", [("word", "src/main")]),
    (".ts", [("word", ".ts")]),
    ("2025-11", [("word", "2025-11")]),
    ('"the parser" error', [("phrase", "the parser"), ("word", "error")]),
    ('"at the"', [("phrase", "at the")]),
    ("a" * 40, [("word", "a" * 40)]),
    ("«guillemets»", [("word", "«guillemets»")]),
    ("👩‍💻", [("word", "👩‍💻")]),
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    base = tmp_path_factory.mktemp("idx") / "sessions"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        folders = make_root(base, 300, seed=21)
        edge = Path(folders[0])
        with SessionManager.create("/home/user/proj0", str(edge)) as sm:
            for i, text in enumerate(EDGE_TEXTS + ["a" * 45 + " tail", "x «guillemets» 👩‍💻 y"]):
                sm.append_message({"role": "user", "content": text, "timestamp": 1_800_000_000_000 + i})
                sm.append_message({"role": "assistant", "content": [{"type": "text", "text": text.upper()}],
                                   "provider": "p", "model": "m", "timestamp": 1_800_000_000_500 + i})
    return folders


READ: list[int] = []


@pytest.fixture(autouse=True)
def count_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Note how many files each search reads as they are (not through the index)."""
    real = _search._native_hits

    def counted(native: Any, q: Any, matcher: Any, items: list[Any], *a: Any) -> Any:
        READ.append(len(items))
        return real(native, q, matcher, items, *a)

    monkeypatch.setattr(_search, "_native_hits", counted)


def _same(folders: list[str], catalog: str, query: str, brute_q: Any = None, **kw: Any) -> Any:
    READ.clear()
    got = cat.search(query, folders, catalog=catalog, **kw)
    _same.read = READ[0] if READ else 0  # type: ignore[attr-defined]
    want = cat.search(query, folders, no_cache=True, **kw)
    assert got == want, query
    if brute_q is not None and kw.get("limit", 20) is None:
        assert {(h.path, h.entry_id, h.role, h.on_path) for h in got.hits} == _brute.search(folders, brute_q), query
    return got


def test_index_answers_as_the_files_do(root: list[str], tmp_path: Path) -> None:
    catalog = str(tmp_path / "c.sqlite3")
    summary = cat.index(root, catalog=catalog)
    store = Store(catalog)
    assert store.segments()
    store.close()
    totals = 0
    for q, brute_q in QUERIES + EDGE_QUERIES + MORE_QUERIES:
        got = _same(root, catalog, q, brute_q, limit=None)
        totals += got.total
        terms = cat.parse_query(q).terms
        if terms and all(any(c.isascii() and c.isalnum() for c in t.text) for t in terms):
            assert _same.read == 0, q  # type: ignore[attr-defined]  # the index answered
        for order in ("relevance", "recent"):
            for limit, offset in ((20, 0), (7, 13), (1, 0)):
                _same(root, catalog, q, order=order, limit=limit, offset=offset)
    assert totals > 5000 and summary.sessions > 300


def _append(path: str, text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        with SessionManager.open(path) as sm:
            sm.append_message({"role": "user", "content": text, "timestamp": 1_900_000_000_000})


def test_changed_files_are_read_and_appends_index_their_bytes(root: list[str], tmp_path: Path) -> None:
    work = tmp_path / "w"
    shutil.copytree(Path(root[0]).parent, work)
    folders = [str(work / Path(f).name) for f in root]
    catalog = str(tmp_path / "c.sqlite3")
    cat.index(folders, catalog=catalog)
    files = sorted(str(p) for f in folders for p in Path(f).glob("*.jsonl"))
    _append(files[0], "zanzibar appended after the index")
    os.unlink(files[1])
    data = Path(files[2]).read_bytes().replace(b"the", b"zanzibar", 3)
    Path(files[2]).write_bytes(data)  # rewritten in place
    for q in ("zanzibar", "the", '"the session"'):
        # The index's hits (held natively, made a thousand at a time) merged with the
        # files read: every order, page and chunk boundary as the files alone give it.
        for order in ("relevance", "recent"):
            got = _same(folders, catalog, q, order=order, limit=None)
            assert _same.read == 2, q  # type: ignore[attr-defined]  # the grown and the rewritten file
            for limit, offset in ((20, 0), (7, 13), (5, 998)):
                _same(folders, catalog, q, order=order, limit=limit, offset=offset)
        if q == "the":
            assert got.total > _search._CHUNK
    summary = cat.index(folders, catalog=catalog)
    assert summary.bytes_read < 3 * os.path.getsize(files[2]) + 100_000
    got = _same(folders, catalog, "zanzibar", limit=None)
    assert _same.read == 0  # type: ignore[attr-defined]
    assert {h.path for h in got.hits} >= {files[0], files[2]}


def test_many_small_segments_merge(root: list[str], tmp_path: Path) -> None:
    work = tmp_path / "w"
    shutil.copytree(Path(root[0]), work)
    catalog = str(tmp_path / "c.sqlite3")
    files = sorted(str(p) for p in work.glob("*.jsonl"))
    cat.index([str(work)], catalog=catalog)
    for k in range(12):
        _append(files[k % len(files)], f"appended number {k} quokka")
        cat.index([str(work)], catalog=catalog)
    store = Store(catalog)
    segs = store.segments()
    on_disk = sorted(n for n in os.listdir(store.segments_dir) if n.startswith("seg-"))
    store.close()
    assert len(segs) < 8 and on_disk == sorted(s[0] for s in segs)
    got = _same([str(work)], catalog, "quokka", limit=None)
    assert got.total == 12


def test_a_damaged_segment_is_never_trusted(root: list[str], tmp_path: Path) -> None:
    catalog = str(tmp_path / "c.sqlite3")
    cat.index(root[:3], catalog=catalog)
    store = Store(catalog)
    seg = os.path.join(store.segments_dir, store.segments()[0][0])
    store.close()
    data = bytearray(Path(seg).read_bytes())
    data[len(data) // 2] ^= 0xFF
    Path(seg).write_bytes(bytes(data))
    _same(root[:3], catalog, "the", limit=None)
    store = Store(catalog)
    assert not store.segments()  # dropped: the next index builds it again
    store.close()
    cat.index(root[:3], catalog=catalog)
    _same(root[:3], catalog, "the", limit=None)


_SEARCH_AND_INDEX = """
import json, sys
from sessiontree import catalog
catalog.index([sys.argv[2]], catalog=sys.argv[1])
r = catalog.search(sys.argv[3], [sys.argv[2]], catalog=sys.argv[1], limit=None)
print(json.dumps([r.total, sorted((h.path, h.entry_id) for h in r.hits)]))
"""


def _in_child(catalog: str, folder: str, query: str) -> Any:
    """An ``index`` then a ``search`` in a real process, which must end (a FIFO read
    would block it for ever: the timeout fails the test instead of hanging the suite)."""
    out = subprocess.run([sys.executable, "-c", _SEARCH_AND_INDEX, catalog, folder, query], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_segment_or_its_folder_that_is_no_file_is_never_opened(root: list[str], tmp_path: Path) -> None:
    """CONTRACT §7: a FIFO in a segment's place is never opened — not by a search, not
    by the merge of ``index`` (both blocked on it for ever) — and a segment folder that
    cannot be used (a file in its place, its lock a folder) leaves a search reading the
    files, not failing."""
    work = tmp_path / "w"
    shutil.copytree(Path(root[0]), work)
    files = sorted(str(p) for p in work.glob("*.jsonl"))
    catalog = str(tmp_path / "c.sqlite3")
    want = lambda q: (lambda r: [r.total, sorted([h.path, h.entry_id] for h in r.hits)])(  # noqa: E731
        cat.search(q, [str(work)], no_cache=True, limit=None))
    cat.index([str(work)], catalog=catalog)
    for k in range(_segments._FANOUT - 2):  # segments that the next ones merge with
        _append(files[k % len(files)], f"appended number {k} wombat")
        cat.index([str(work)], catalog=catalog)
    store = Store(catalog)
    seg = os.path.join(store.segments_dir, store.segments()[0][0])
    store.close()
    os.unlink(seg)
    os.mkfifo(seg)
    for k in range(2 * _segments._FANOUT):  # `index` runs whose merges take the FIFO
        _append(files[k % len(files)], f"appended number {k} wombat")
        out = subprocess.run([sys.executable, "-c", _INDEXER, catalog, str(work)], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
    assert _in_child(catalog, str(work), "wombat") == want("wombat")
    assert _in_child(catalog, str(work), "the") == want("the")
    store = Store(catalog)
    seg_dir, first = store.segments_dir, store.segments()
    store.close()
    assert first, "the index was built again"
    shutil.rmtree(seg_dir)
    Path(seg_dir).write_text("not a folder")
    assert _same([str(work)], catalog, "the", limit=None).total == want("the")[0]
    os.unlink(seg_dir)
    _same([str(work)], catalog, "the", limit=None)  # its segments are gone: dropped
    cat.index([str(work)], catalog=catalog)  # and built again
    store = Store(catalog)
    seg = next(p for s in store.segments() if os.path.isfile(p := os.path.join(store.segments_dir, s[0])))
    store.close()
    data = bytearray(Path(seg).read_bytes())
    data[len(data) // 2] ^= 0xFF
    Path(seg).write_bytes(bytes(data))
    lock = os.path.join(seg_dir, "lock")
    os.unlink(lock)
    os.mkdir(lock)
    assert _same([str(work)], catalog, "the", limit=None).total == want("the")[0]


_INDEXER = """
import sys
from sessiontree import catalog
catalog.index(sys.argv[2:], catalog=sys.argv[1])
"""


def test_two_indexers_at_once(root: list[str], tmp_path: Path) -> None:
    catalog = str(tmp_path / "c.sqlite3")
    procs = [subprocess.Popen([sys.executable, "-c", _INDEXER, catalog, *root]) for _ in range(2)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    got = _same(root, catalog, "session", limit=None)
    assert got.total > 0
    store = Store(catalog)
    pieces = [json.dumps(p) for s in store.segments()
              for p in __import__("sessiontree._sessiontree", fromlist=["x"]).segment_pieces(
                  os.fsencode(os.path.join(store.segments_dir, s[0])))]
    live = {(f, e, s) for f, e, s in _segments.live_scope(store)}
    store.close()
    # No file's live pieces overlap: each indexed byte is in one live piece.
    spans: dict[int, list[tuple[int, int]]] = {}
    for p in map(json.loads, pieces):
        f, e, start, end, _docs = p
        if any(x == f and y == e and end <= z for x, y, z in live):
            spans.setdefault(f, []).append((start, end))
    for f, s in spans.items():
        s.sort()
        assert all(a[1] <= b[0] for a, b in zip(s, s[1:])), f


def test_all_hits_stream_out_as_one_json_document(root: list[str], tmp_path: Path) -> None:
    """``--limit 0 --json`` writes its hits as they are made (a thousand at a time), the
    same bytes as one JSON document of them all, and the same hits as ``--no-cache``."""
    from sessiontree.cli._common import to_json_bytes

    catalog = str(tmp_path / "c.sqlite3")
    cat.index(root, catalog=catalog)
    folder = str(Path(root[0]).parent)
    outs = [subprocess.run([sys.executable, "-m", "sessiontree", "search", "the", folder, "--all", *extra,
                            "--json", "--limit", "0"], capture_output=True, check=True).stdout
            for extra in (["--catalog", catalog], ["--no-cache"])]
    doc = json.loads(outs[0])
    assert doc["total"] == len(doc["hits"]) > 1000
    assert outs[0] == to_json_bytes(doc) + b"\n" == outs[1]


def test_a_row_dropped_before_the_page_is_made_is_a_stale_search(root: list[str], tmp_path: Path) -> None:
    """The page reads a shown file's session id, name and cwd after the freshness check
    (from the index ``file_search``): a row gone in between (another ``index`` dropped
    it) is said, never shown as some other file's."""
    from sessiontree.errors import StaleSessionError

    catalog = str(tmp_path / "c.sqlite3")
    cat.index(root, catalog=catalog)
    s, total, page, _o, _e = _search._start("the", root, catalog, False, "relevance", 5, 0, None, None)
    try:
        assert total > 5 and s.keys is not None  # the index answered
        gone = s._file(s.keys.take(0, 1)[0][0])[1]
        s.store.conn.execute("DELETE FROM file WHERE id = ?", (gone,))
        with pytest.raises(StaleSessionError, match="dropped from the catalog"):
            s.page(list(page))
    finally:
        s.close()


def test_rows_the_index_cannot_take_are_files_read(root: list[str], tmp_path: Path) -> None:
    """A row whose id or epoch no segment could hold (past 32 bits, negative: values of
    the right type, so no damage) sends its file to be read, with the same hits; the
    freshness check passed them to the index's query, which failed with OverflowError."""
    work = tmp_path / "w"
    shutil.copytree(Path(root[0]).parent, work)
    folders = [str(work / Path(f).name) for f in root]
    catalog = str(tmp_path / "c.sqlite3")
    cat.index(folders, catalog=catalog)
    store = Store(catalog)
    with store.conn:
        first, second = (r[0] for r in store.conn.execute("SELECT id FROM file ORDER BY id LIMIT 2"))
        store.conn.execute("UPDATE file SET epoch = -5 WHERE id = ?", (first,))
        store.conn.execute("UPDATE file SET id = ? WHERE id = ?", (1 << 40, second))
    store.close()
    for q in ("the", '"the session"'):
        _same(folders, catalog, q, limit=None)
        assert _same.read == 2, q  # type: ignore[attr-defined]


def test_a_name_that_is_not_utf8_is_answered_by_the_index(root: list[str], tmp_path: Path) -> None:
    """A session whose file name is not UTF-8 (the catalog keeps it as a BLOB) is held
    by the index as any other: the freshness check looks its row up by the name as the
    catalog stores it (Python's check looked a BLOB up by a ``str`` and read the file)."""
    folder = tmp_path / "s"
    folder.mkdir()
    src = sorted(Path(root[0]).glob("*.jsonl"))[:2]
    shutil.copyfile(src[0], folder / "a.jsonl")
    shutil.copyfile(src[1], os.path.join(os.fsencode(folder), b"b\xff.jsonl"))
    catalog = str(tmp_path / "c.sqlite3")
    cat.index([str(folder)], catalog=catalog)
    for q in ("the", '"the session"'):
        got = _same([str(folder)], catalog, q, limit=None)
        assert _same.read == 0, q  # type: ignore[attr-defined]
        assert any("\udcff" in h.path for h in got.hits), q
