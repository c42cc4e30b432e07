"""The catalog: listings, searches and usage reports through it equal a catalog-free
read and a brute-force scan, on thousands of generated sessions in Pi's layout, on the
corpus and the damaged cases, and after files change, grow and disappear; an append
costs only its bytes; damaged catalogs are rebuilt; two processes can use one catalog."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
import re
import shutil
import sqlite3
import stat
import string
import subprocess
import sys
import warnings
from datetime import date, timezone
from pathlib import Path
from typing import Any

import pytest

import _brute
from sessiontree import LoadReportWarning, SessionManager
from sessiontree.errors import CatalogRebuiltWarning
from sessiontree import catalog as cat
from sessiontree._listing import list_all_sessions, list_folders, list_sessions, read_session_info
from sessiontree._places import project_folders
from sessiontree._places import session_dir_for_cwd
from sessiontree.catalog._indexer import refresh
from sessiontree.catalog._store import Store
from sessiontree.generate import generate_session
from sessiontree.schema import SessionInfo

from _shared import CASES, CORPUS, DATA, damage_pages, said_if_rebuilt

N_SESSIONS = 2000
PROJECTS = 40


def make_root(root: Path, n: int, seed: int = 11) -> list[str]:
    """``n`` small generated sessions in Pi's layout, a few forked and branched; every
    third one written as agent-core's harness writes (``leaf`` entries on leaf moves)."""
    rng = random.Random(seed)
    for i in range(n):
        cwd = f"/home/user/proj{i % PROJECTS}"
        folder = Path(session_dir_for_cwd(cwd, str(root)))
        folder.mkdir(parents=True, exist_ok=True)
        generate_session(folder / f"2025-11-{1 + i % 28:02d}T00-00-00-000Z_s{i:05d}.jsonl",
                         size_bytes=rng.randint(1_500, 25_000), seed=1000 + i, cwd=cwd,
                         payload_scale=rng.choice([0.02, 0.1, 0.4]), harness=i % 3 == 1)
    folders = project_folders(str(root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        for k, folder in enumerate(folders[:5]):
            src = sorted(Path(folder).glob("*.jsonl"))[0]
            with SessionManager.open(str(src)) as sm:  # a branched copy of a path: same ids
                leaf = sm.get_branch()[len(sm.get_branch()) // 2]["id"]
                sm.create_branched_session(leaf)
            SessionManager.fork_from(str(src), f"/home/user/proj{k}", session_dir=folder)  # a whole copy
    return folders


@pytest.fixture(scope="module")
def pi_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pi") / "sessions"
    make_root(root, N_SESSIONS)
    return root


@pytest.fixture
def catalog_file(tmp_path: Path) -> str:
    return str(tmp_path / "cache" / "catalog.sqlite3")


def fields(s: SessionInfo) -> dict[str, Any]:
    return {f.name: getattr(s, f.name) for f in dataclasses.fields(SessionInfo)}


def check_listing(folders: list[str], catalog_file: str) -> list[SessionInfo]:
    """Catalog == no catalog == per-file reference == brute force, every field."""
    got = list_folders(folders, catalog=catalog_file)
    plain = list_folders(folders, no_cache=True)
    assert [fields(s) for s in got] == [fields(s) for s in plain]
    ref = [read_session_info(s.path) for s in plain]
    assert [fields(s) for s in got] == [fields(s) for s in ref]
    brute = _brute.listing(folders)
    assert [fields(s) for s in got] == brute
    return got


QUERIES: list[tuple[str, Any]] = [
    ("refactor", [("word", "refactor")]),
    ("Session parser", [("word", "Session"), ("word", "parser")]),
    ('"the session" src', [("phrase", "the session"), ("word", "src")]),
    ('"session pars"', [("phrase", "session pars")]),
    ('"ssion pars"', [("phrase", "ssion pars")]),  # not at a word start: no hit
    ("ts", [("word", "ts")]),
    ("テスト", [("word", "テスト")]),
    ("re:fix(ed)?\\s+the", re.compile(r"fix(ed)?\s+the", re.IGNORECASE)),
]


def check_search(folders: list[str], catalog_file: str) -> None:
    for q, brute_q in QUERIES:
        got = cat.search(q, folders, catalog=catalog_file, limit=None)
        plain = cat.search(q, folders, no_cache=True, limit=None)
        assert got == plain, q
        want = _brute.search(folders, brute_q)
        assert {(h.path, h.entry_id, h.role, h.on_path) for h in got.hits} == want, q
        assert got.total == len(want)
        scores = [(h.score, -(h.time.timestamp() if h.time else 0)) for h in got.hits]
        assert scores == sorted(scores), q


# Texts where word and case rules need Unicode tables: marks and recent characters
# inside words, Turkish i, long s, sharp s, Greek, the Kelvin sign.
EDGE_TEXTS = [
    "re\u0301sume\u0301 of the caf\u00e9 and cafe\u0301x",  # NFD: "sume", "x" start words
    "\u0130stanbul and D\u0130YARBAKIR, \u0131stanbul",
    "\u017fession parser, STRA\u1e9eE and stra\u00dfe",
    "\u039a\u0391\u039b\u0397\u039c\u0395\u03a1\u0391 \u03c3\u03bf\u03c6\u03af\u03b1\u03c2 \u00b5icro",
    "emoji\U0001fae8join and \ue000pua and x\u00b2y and a_b",
    "\u0432\u0435\u0440\u0445 \u1c80\u0435\u0440\u0445 and \u212aelvin",
]
EDGE_QUERIES: list[tuple[str, Any]] = [
    (q, [("word", q)]) for q in ("sume", "x", "istanbul", "diyarbakir", "session", "strasse", "straße",
                                 "καλημερα", "σοφιας", "μicro", "join", "pua", "y", "b", "верх", "kelvin")
] + [('"of the caf\u00e9"', [("phrase", "of the caf\u00e9")])]


def test_search_where_unicode_rules_matter(tmp_path: Path, catalog_file: str) -> None:
    folder = tmp_path / "edge"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        with SessionManager.create("/home/user/edge", str(folder)) as sm:
            for i, text in enumerate(EDGE_TEXTS):
                sm.append_message({"role": "user", "content": text, "timestamp": 1_800_000_000_000 + i})
                sm.append_message({"role": "assistant", "content": [{"type": "text", "text": text.upper()}],
                                   "provider": "p", "model": "m", "timestamp": 1_800_000_000_500 + i})
    folders = [str(folder)]
    hits = 0
    for q, brute_q in EDGE_QUERIES:
        got = cat.search(q, folders, catalog=catalog_file, limit=None)
        assert got == cat.search(q, folders, no_cache=True, limit=None), q
        assert {(h.path, h.entry_id, h.role, h.on_path) for h in got.hits} == _brute.search(folders, brute_q), q
        hits += got.total
    assert hits >= 12  # the texts are found, not only agreed on


def check_usage(folders: list[str], catalog_file: str) -> None:
    for active in (False, True):
        got = cat.usage("daily", folders, tz=timezone.utc, active_path=active, catalog=catalog_file)
        assert got == cat.usage("daily", folders, tz=timezone.utc, active_path=active, no_cache=True)
        want = _brute.usage(folders, active)
        assert {x.key: (x.records, x.input, x.output, x.cost) for x in got.lines} == want
        assert got.total.records == sum(v[0] for v in want.values())


# ------------------------------------------------------------------ the big folder
def test_thousands_of_sessions(pi_root: Path, catalog_file: str) -> None:
    folders = project_folders(str(pi_root))
    assert len(folders) == PROJECTS and sum(len(os.listdir(f)) for f in folders) >= N_SESSIONS
    first = check_listing(folders, catalog_file)
    assert len(first) >= N_SESSIONS
    assert list_all_sessions(str(pi_root), catalog=catalog_file) == first
    check_search(folders, catalog_file)
    check_usage(folders, catalog_file)
    # An unchanged folder is not read again: listing, search, usage.
    found = _refresh(folders, catalog_file, content=True)
    assert sum(f.bytes_read for f in found) == 0 and all(f.base is None for f in found)


def test_copies_count_once(pi_root: Path, catalog_file: str) -> None:
    folders = project_folders(str(pi_root))[:5]
    report = cat.usage("session", folders, catalog=catalog_file)
    per_file: dict[str, int] = {}
    for folder in folders:
        for p in Path(folder).glob("*.jsonl"):
            per_file[str(p)] = sum(1 for line in _brute.entries(p)[1] if _has_usage(line))
    # Counting every file's records would count the forks' copies again.
    assert report.total.records < sum(per_file.values())
    assert report.total.records == sum(v[0] for v in _brute.usage(folders).values())
    forks = [p for p in per_file if "_s" not in os.path.basename(p)]
    assert forks and all(next((x for x in report.lines if x.key == p), None) is None for p in forks)


def _has_usage(e: dict[str, Any]) -> bool:
    if e["type"] == "message":
        return e["message"]["role"] == "assistant" and isinstance(e["message"].get("usage"), dict)
    return e["type"] in ("usage", "compaction", "branch_summary") and isinstance(e.get("usage"), dict)


def _refresh(folders: list[str], catalog_file: str, content: bool = False) -> list[Any]:
    store = Store(catalog_file)
    try:
        return refresh(store, folders, content=content)
    finally:
        store.close()


# ----------------------------------------------------------------- changes
def _append(path: Path, text: str) -> int:
    before = path.stat().st_size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        with SessionManager.open(str(path)) as sm:
            sm.append_message({"role": "user", "content": text, "timestamp": 1_800_000_000_000})
            sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok " + text}],
                               "provider": "p", "model": "m", "timestamp": 1_800_000_001_000,
                               "usage": {"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0,
                                         "totalTokens": 12, "cost": {"total": 0.5}}})
    return path.stat().st_size - before


def test_files_change_grow_and_disappear(tmp_path: Path, catalog_file: str) -> None:
    root = tmp_path / "sessions"
    folders = make_root(root, 300, seed=5)
    check_listing(folders, catalog_file)
    check_search(folders, catalog_file)
    check_usage(folders, catalog_file)
    rng = random.Random(3)
    files = sorted(Path(f) / n for f in folders for n in os.listdir(f))
    for round_ in range(3):
        picks = rng.sample(files, 12)
        grown = picks[0:3]
        for p in grown:
            _append(p, f"refactor round {round_}")
        data = picks[3].read_bytes()  # truncated at a line end
        picks[3].write_bytes(data[: data.rfind(b"\n", 0, len(data) // 2) + 1])
        picks[4].unlink()  # gone
        files.remove(picks[4])
        tmp = picks[5].with_suffix(".tmp")  # replaced (another inode)
        generate_session(tmp, size_bytes=5_000, seed=9000 + round_, cwd="/home/user/replaced")
        os.replace(tmp, picks[5])
        b = bytearray(picks[6].read_bytes())  # rewritten in place, same size
        i = b.index(b'"text":"') + 8
        b[i:i + 1] = b"Z" if b[i:i + 1] != b"Z" else b"Y"
        picks[6].write_bytes(bytes(b))
        os.utime(picks[7], ns=(picks[7].stat().st_atime_ns, picks[7].stat().st_mtime_ns + 10**9))  # touched
        new = Path(folders[round_]) / f"new{round_}.jsonl"  # new
        generate_session(new, size_bytes=8_000, seed=7000 + round_, cwd="/home/user/new")
        files.append(new)
        with open(picks[8], "ab") as f:  # a torn last line, then completed
            f.write(b'{"type":"message","id":"torn0001","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z",')
        check_listing(folders, catalog_file)
        with open(picks[8], "ab") as f:
            f.write(b'"message":{"role":"user","content":"completed refactor"}}\n')
        check_listing(folders, catalog_file)
        check_search(folders, catalog_file)
        check_usage(folders, catalog_file)
        files = [p for p in files if p.exists()]


def test_growth_reads_only_new_bytes(tmp_path: Path, catalog_file: str) -> None:
    root = tmp_path / "sessions"
    folders = make_root(root, 60, seed=8)
    big = Path(folders[0]) / "big.jsonl"
    generate_session(big, size_bytes=3_000_000, seed=4, cwd="/home/user/proj0")
    for content in (False, True):
        _refresh(folders, catalog_file, content=content)  # everything read once
        added = _append(big, f"grown {content}")
        io_before = _rchar()
        found = _refresh(folders, catalog_file, content=content)
        io_after = _rchar()
        read = {f.path: f.bytes_read for f in found if f.bytes_read}
        assert read == {str(big): added}, read
        # Independent of the code's own count: all the bytes this process read (the
        # catalog's pages, the ends the growth check reads, the new lines) stay far
        # below the file (3 MB).
        assert io_after - io_before < added + 600_000
    check_listing(folders, catalog_file)


def _rchar() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_growth_reads_only_new_bytes_strace(tmp_path: Path, catalog_file: str) -> None:
    """The kernel's view: a new process lists a folder after one append; the only reads
    of the grown file are its new bytes and those of the growth check."""
    root = tmp_path / "sessions"
    folders = make_root(root, 20, seed=9)
    big = Path(folders[0]) / "big.jsonl"
    generate_session(big, size_bytes=2_000_000, seed=4, cwd="/home/user/proj0")
    list_folders(folders, catalog=catalog_file)
    added = _append(big, "traced")
    log = tmp_path / "strace.log"
    code = f"from sessiontree._listing import list_folders; list_folders({folders!r}, catalog={catalog_file!r})"
    subprocess.run(["strace", "-f", "-s", "400", "-e", "trace=openat,read,pread64", "-o", str(log),
                    sys.executable, "-c", code],
                   check=True, env={**os.environ})
    fds: dict[tuple[str, int], bool] = {}
    total = 0
    for line in log.read_text().splitlines():
        m = re.match(r"(\d+)\s+openat\(.*\"(.*?)\".*= (\d+)$", line)
        if m:
            fds[(m[1], int(m[3]))] = m[2] == str(big)
            continue
        m = re.match(r"(\d+)\s+(?:read|pread64)\((\d+),.*= (\d+)", line)
        if m and fds.get((m[1], int(m[2]))):
            total += int(m[3])
    # The growth check reads the first and last 4 KiB of what was read before, through
    # Python's buffered reader (up to 8 KiB per read).
    assert added <= total <= added + 4 * 4096, (added, total)


# ---------------------------------------------------------- corpus and cases
def test_corpus_and_cases_list_the_same(tmp_path: Path, catalog_file: str) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    for d in (CORPUS, CASES, DATA / "pi099"):
        if d.is_dir():
            for p in d.glob("*.jsonl"):
                shutil.copy(p, folder / f"{d.name}-{p.name}")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "dir.jsonl").mkdir()
    problems: list[Any] = []
    plain_problems: list[Any] = []
    for _ in range(2):  # a first listing, then one from the catalog
        problems.clear()
        got = list_sessions(str(folder), on_problem=problems.append, catalog=catalog_file)
    plain = list_sessions(str(folder), on_problem=plain_problems.append, no_cache=True)
    assert [fields(s) for s in got] == [fields(s) for s in plain]
    assert problems == plain_problems and problems
    for s in plain:
        assert fields(read_session_info(s.path)) == fields(s)
    for q in ("hello", '"the user"', "re:\\d{3}"):
        assert cat.search(q, [str(folder)], catalog=catalog_file, limit=None) == cat.search(
            q, [str(folder)], no_cache=True, limit=None)
    for g in ("daily", "model", "session"):
        assert cat.usage(g, [str(folder)], catalog=catalog_file) == cat.usage(g, [str(folder)], no_cache=True)


def test_pi099_usage_entries(tmp_path: Path, catalog_file: str) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    shutil.copy(DATA / "pi099" / "usage-entries.jsonl", folder)
    r = cat.usage("model", [str(folder)], catalog=catalog_file)
    by = {x.key: x for x in r.lines}
    assert by["anthropic/claude-sonnet-5-5"].cost == pytest.approx(0.01656)
    assert by["openai/gpt-6-sol"].input == 1200 and by["openrouter/jev-latest"].records == 1
    assert r.total.records == 3


def test_imported_sessions_list_search_and_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  catalog_file: str) -> None:
    """Sessions imported from Claude Code and Codex, in Pi's layout: listing, search and
    usage through the catalog equal a catalog-free read and the brute-force scan."""
    from sessiontree.importers import import_claude, import_codex

    from _import_helpers import CLAUDE, CODEX

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for src in sorted(CLAUDE.glob("*.jsonl")):
            import_claude(src)
        for src in sorted(CODEX.glob("*.jsonl")):
            import_codex(src)
    root = tmp_path / "agent" / "sessions"
    folders = project_folders(str(root))
    infos = check_listing(folders, catalog_file)
    assert len(infos) >= 10
    assert list_all_sessions(str(root), catalog=catalog_file) == list_all_sessions(str(root), no_cache=True)
    words: list[str] = []
    for info in infos:
        for _e, _role, text in _brute.docs(_brute.entries(Path(info.path))[1]):
            words += [w for w in re.findall(r"[A-Za-z]{5,}", text)[:1] if w not in words]
    assert len(words) >= 5
    hits = 0
    for w in words[:12]:
        got = cat.search(w, folders, catalog=catalog_file, limit=None)
        assert got == cat.search(w, folders, no_cache=True, limit=None), w
        assert {(h.path, h.entry_id, h.role, h.on_path) for h in got.hits} == _brute.search(folders, [("word", w)])
        hits += got.total
    assert hits >= len(words[:12])
    check_usage(folders, catalog_file)
    assert cat.usage("model", folders, catalog=catalog_file).total.records > 0


def test_unterminated_last_line_is_not_recovered(tmp_path: Path, catalog_file: str) -> None:
    """A last piece without LF that ends right after a nested object shaped like an
    entry (a line still being written: a tool call carrying a session line) gives no
    phantom entry, with a catalog, without, by brute force; once finished it counts."""
    folders = make_root(tmp_path / "s", 3, seed=9)
    path = Path(sorted(Path(folders[0]).glob("*.jsonl"))[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        with SessionManager.open(str(path)) as sm:
            leaf = sm.leaf_id
    ghost = ('{"type":"message","id":"ghost001","parentId":null,"timestamp":"2025-11-30T00:00:00.000Z",'
             '"message":{"role":"user","content":"phantom words","timestamp":1}}')
    line = ('{"type":"message","id":"feedbeef","parentId":"%s","timestamp":"2025-11-30T00:00:01.000Z",'
            '"message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"write",'
            '"arguments":{"entry":%s}}],"provider":"p","model":"m","timestamp":2}}' % (leaf, ghost))
    cut = line.index(ghost) + len(ghost)  # ends right after the nested entry-like object
    with open(path, "ab") as f:
        f.write(b"\n" if not path.read_bytes().endswith(b"\n") else b"")
        f.write(line[:cut].encode())
    before = check_listing(folders, catalog_file)
    assert cat.search("phantom", folders, catalog=catalog_file).total == 0
    assert cat.search("phantom", folders, no_cache=True).total == 0
    with open(path, "ab") as f:
        f.write(line[cut:].encode() + b"\n")
    after = check_listing(folders, catalog_file)
    assert sum(s.message_count for s in after) == sum(s.message_count for s in before) + 1
    got = cat.search("phantom", folders, catalog=catalog_file)
    assert got == cat.search("phantom", folders, no_cache=True) and got.total == 1  # the tool call's argument


# ---------------------------------------------------------------- the rows
def test_lazy_text_is_a_plain_session_info(tmp_path: Path, catalog_file: str) -> None:
    folder = tmp_path / "f"
    folders = make_root(folder, 5, seed=2)
    lazy = list_folders(folders, catalog=catalog_file)
    lazy = list_folders(folders, catalog=catalog_file)  # from the catalog
    plain = list_folders(folders, no_cache=True)
    a, b = lazy[0], plain[0]
    assert "all_messages_text" not in vars(a)  # not read yet
    assert a == b and b == a and hash(a) == hash(b) and repr(a) == repr(b)
    assert pickle.loads(pickle.dumps(a)) == b and type(pickle.loads(pickle.dumps(a))) is SessionInfo
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert dataclasses.replace(a, name="x").name == "x"
    assert isinstance(a, SessionInfo)


def test_lazy_text_is_the_listings(tmp_path: Path, catalog_file: str) -> None:
    """``all_messages_text`` is read from the file when first used: of the bytes the
    listing read when the file only grew since, of the file as it is when it was
    rewritten, an OSError when it is gone; each equal to the brute-force scan's."""
    for mode in ("first", "second", "no cache"):
        folder = tmp_path / mode
        folders = make_root(folder, 6, seed=3)
        if mode == "second":
            list_folders(folders, catalog=catalog_file)
        listing = list_folders(folders, catalog=catalog_file, no_cache=mode == "no cache")
        want = {b["path"]: b["all_messages_text"] for b in _brute.listing(folders)}
        by_path = {s.path: s for s in listing}
        grown, rewritten, gone, other, *rest = sorted(by_path)
        with open(grown, "a", encoding="utf-8") as f:
            f.write(json.dumps({"type": "message", "id": "late1", "parentId": None, "timestamp": "2025-12-01T00:00:00Z",
                                "message": {"role": "user", "content": "written after the listing"}}) + "\n")
        shutil.copyfile(other, rewritten)
        os.unlink(gone)
        assert by_path[grown].all_messages_text == want[grown]
        assert "written after the listing" not in want[grown]
        assert by_path[rewritten].all_messages_text == want[other]
        with pytest.raises(FileNotFoundError):
            by_path[gone].all_messages_text  # noqa: B018
        for p in [other, *rest]:
            assert by_path[p].all_messages_text == want[p]


def test_lazy_text_of_a_last_line_finished_later(tmp_path: Path, catalog_file: str) -> None:
    """A listing that found a half-written last line: its text is what the listing read
    (the piece as it was judged then), however the writer finished the line since."""
    folder = tmp_path / "p"
    folder.mkdir()
    path = folder / "s.jsonl"

    def line(i: int, text: str) -> str:
        return json.dumps({"type": "message", "id": f"m{i}", "parentId": None, "timestamp": "2025-01-02T00:00:00Z",
                           "message": {"role": "user", "content": text, "timestamp": 1_800_000_000_000 + i}})

    head = json.dumps({"type": "session", "version": 3, "id": "S", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/p"})
    for mode in ("catalog", "no cache", "whole piece"):
        second = line(2, "two")
        piece = second if mode == "whole piece" else second[:40]  # a valid last line without LF counts
        path.write_text(head + "\n" + line(1, "one") + "\n" + piece)
        [s] = list_sessions(str(folder), catalog=catalog_file, no_cache=mode == "no cache")
        want = "one two" if mode == "whole piece" else "one"
        assert s.message_count == len(want.split())
        with open(path, "a") as f:
            f.write(second[len(piece):] + "\n" + line(3, "three") + "\n")
        assert s.all_messages_text == want, mode
        [again] = list_sessions(str(folder), catalog=catalog_file, no_cache=mode == "no cache")
        assert again.all_messages_text == "one two three"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_what_replaces_a_listed_file_is_never_read_endlessly(tmp_path: Path, catalog_file: str) -> None:
    """A FIFO or a device put where a listed file was: reading its text raises OSError
    (no open that blocks, no endless read); one put there between a listing's stat and
    its read is reported as a file that cannot be read."""
    import threading

    sub = max(make_root(tmp_path / "p", 4, seed=5), key=lambda f: len(os.listdir(f)))
    assert len(os.listdir(sub)) >= 2
    for replace in ("fifo", "dev"):
        rows = list_folders([sub], catalog=catalog_file)
        victim = rows[0].path
        os.unlink(victim)
        os.mkfifo(victim) if replace == "fifo" else os.symlink("/dev/zero", victim)
        with pytest.raises(OSError, match="not a regular file"):
            rows[0].all_messages_text  # noqa: B018
        os.unlink(victim)
        shutil.copyfile(rows[1].path, victim)

    from sessiontree.catalog import _indexer

    listed = _indexer.folder_files(sub)
    victim = listed[0][1]

    def swapped(_folder: str) -> Any:
        os.unlink(victim)
        os.mkfifo(victim)
        return listed

    problems: list[Any] = []
    done: list[Any] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_indexer, "folder_files", swapped)
        t = threading.Thread(target=lambda: done.append(
            list_folders([sub], on_problem=problems.append, no_cache=True)), daemon=True)
        t.start()
        t.join(60)
    assert done, "the listing blocked on a FIFO"
    assert [p.path for p in problems] == [victim] and "not a regular file" in problems[0].reason


def test_a_row_saved_by_another_process_meanwhile_is_not_mixed(tmp_path: Path, catalog_file: str) -> None:
    """Another process saves a file's growth between this refresh's reading of the rows
    and of the entries record: this listing reads the file again (it never resumes from
    the old offset with the newer record, which would drop the new entries)."""
    folder = tmp_path / "p"
    folder.mkdir()
    path = folder / "s.jsonl"

    def line(k: int) -> str:
        return json.dumps({"type": "message", "id": f"e{k}", "parentId": None, "timestamp": "2025-01-02T00:00:00Z",
                           "message": {"role": "user", "content": f"m{k}", "timestamp": 1_800_000_000_000 + k}}) + "\n"

    head = json.dumps({"type": "session", "version": 3, "id": "S", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/p"})
    path.write_text(head + "\n" + line(1) + line(2) + line(3))
    list_sessions(str(folder), catalog=catalog_file)
    with open(path, "a") as f:
        f.write(line(4) + line(5))
    other = f"from sessiontree._listing import list_sessions; list_sessions({str(folder)!r}, catalog={catalog_file!r})"
    real = Store.entries

    def entries(self: Store, file: int, gen: int | None = None) -> Any:
        subprocess.run([sys.executable, "-c", other], check=True)  # the other process, now
        return real(self, file, gen)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Store, "entries", entries)
        [s] = list_sessions(str(folder), catalog=catalog_file)
    [plain] = list_sessions(str(folder), no_cache=True)
    assert (s.message_count, s.modified, s.all_messages_text) == (5, plain.modified, "m1 m2 m3 m4 m5")
    assert list_sessions(str(folder), catalog=catalog_file) == [plain]


def test_list_normalises_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog_file: str) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("SESSIONTREE_CATALOG", catalog_file)
    project = tmp_path / "work" / "proj"
    (project / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(project)
    real = os.path.realpath(project)
    folder = Path(session_dir_for_cwd(real))
    folder.mkdir(parents=True)
    generate_session(folder / "a.jsonl", size_bytes=3000, seed=1, cwd=real)
    monkeypatch.chdir(project / "sub")
    for cwd in (real, real + "/", real + "/.", real + "/sub/..", str(link), "..", str(link) + "/sub/../"):
        assert [s.cwd for s in SessionManager.list(cwd)] == [real], cwd
    assert SessionManager.list(real, no_cache=True) == SessionManager.list(real)


# ------------------------------------------------------------- damaged catalogs
def _valid_catalog(path: str) -> bool:
    c = sqlite3.connect(path)
    try:
        return c.execute("PRAGMA application_id").fetchone()[0] == 0x53547243
    finally:
        c.close()


def test_a_new_catalog_is_a_wal_file_before_anyone_opens_it(tmp_path: Path) -> None:
    """Two processes that open a catalog nobody has made yet must not both switch it to
    WAL: each would hold a read lock and want the other's, and SQLite fails one of
    them with "database is locked" without waiting (CI saw it once in
    test_search_index.py::test_two_indexers_at_once). The file renamed into place is
    already WAL (header bytes 18 and 19 are 2), so no opener changes its mode."""

    class Unconfigured(Store):
        @staticmethod
        def _configure(conn: sqlite3.Connection) -> sqlite3.Connection:
            return conn

    path = tmp_path / "c.sqlite3"
    Unconfigured(str(path)).close()
    header = path.read_bytes()[:20]
    assert (header[18], header[19]) == (2, 2)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "version", "foreign", "empty", "pages"])
def test_damaged_catalog_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    """At the catalog's own place anything that is not a valid catalog is replaced."""
    from sessiontree.catalog._location import cache_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    catalog_file = cache_path()
    folders = make_root(tmp_path / "s", 30, seed=6)
    want = list_folders(folders, no_cache=True)
    assert list_folders(folders, catalog=catalog_file) == want
    cat.search("refactor", folders, catalog=catalog_file)
    size = os.path.getsize(catalog_file)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(catalog_file + suffix):
            c = sqlite3.connect(catalog_file)
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            c.close()
    if damage == "garbage":
        Path(catalog_file).write_bytes(os.urandom(size))
    elif damage == "truncated":
        with open(catalog_file, "r+b") as f:
            f.truncate(size // 3)
    elif damage == "version":
        c = sqlite3.connect(catalog_file)
        c.execute("PRAGMA user_version=999")
        c.close()
    elif damage == "foreign":
        os.unlink(catalog_file)
        c = sqlite3.connect(catalog_file)
        c.execute("CREATE TABLE file (x)")
        c.execute("INSERT INTO file VALUES ('not ours')")
        c.commit()
        c.close()
    elif damage == "empty":
        Path(catalog_file).write_bytes(b"")
    else:  # pages in the middle overwritten: found only when read
        with open(catalog_file, "r+b") as f:
            f.seek(8 * 4096)
            f.write(os.urandom(size - 8 * 4096))
    inode = os.stat(catalog_file).st_ino
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert list_folders(folders, catalog=catalog_file) == want
        assert cat.search("refactor", folders, catalog=catalog_file) == cat.search("refactor", folders,
                                                                                   no_cache=True)
    # Damage is said, once, when it is replaced (trial 58: rebuilt without a word):
    # found at the open, or (pages) when a read reaches them, which only the native
    # search's reads of the catalog do here; an empty file or a newer version's (kept,
    # the files read) is not damage.
    rebuilt = [w for w in said if issubclass(w.category, CatalogRebuiltWarning)]
    replaced = os.stat(catalog_file).st_ino != inode
    if damage in ("empty", "version"):
        assert not rebuilt, [str(w.message) for w in said]
    else:
        assert len(rebuilt) == replaced and (replaced or damage == "pages"), [str(w.message) for w in said]
    assert all(catalog_file in str(w.message) for w in rebuilt)
    assert _valid_catalog(catalog_file)


@pytest.mark.parametrize("damage", ["truncated", "version", "pages", "empty"])
def test_damaged_catalog_elsewhere_is_rebuilt(tmp_path: Path, catalog_file: str, damage: str) -> None:
    """At a place given by the user, a file is replaced only if its header says it is a
    catalog (or it is empty)."""
    folders = make_root(tmp_path / "s", 10, seed=6)
    want = list_folders(folders, no_cache=True)
    assert list_folders(folders, catalog=catalog_file) == want
    c = sqlite3.connect(catalog_file)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    size = os.path.getsize(catalog_file)
    with open(catalog_file, "r+b") as f:
        if damage == "truncated":
            f.truncate(size // 3)
        elif damage == "pages":
            f.seek(2 * 4096)
            f.write(os.urandom(size - 2 * 4096))
        elif damage == "empty":
            f.truncate(0)
    if damage == "version":
        c = sqlite3.connect(catalog_file)
        c.execute("PRAGMA user_version=999")
        c.close()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert list_folders(folders, catalog=catalog_file) == want
    rebuilt = [w for w in said if issubclass(w.category, CatalogRebuiltWarning)]
    assert len(rebuilt) == (damage in ("truncated", "pages")), [str(w.message) for w in said]
    assert _valid_catalog(catalog_file)


@pytest.mark.parametrize("what", ["session", "garbage", "foreign"])
def test_a_file_that_is_not_a_catalog_is_never_replaced(tmp_path: Path, what: str) -> None:
    """``--catalog`` naming a session file (a slip of the keyboard), or another
    program's database, leaves it as it was: a listing reads the files, ``index``
    refuses with one message."""
    folders = make_root(tmp_path / "s", 5, seed=2)
    target = tmp_path / "target"
    if what == "session":
        target = Path(sorted(Path(folders[0]).glob("*.jsonl"))[0])
    elif what == "garbage":
        target.write_bytes(os.urandom(10_000))
    else:
        c = sqlite3.connect(target)
        c.execute("CREATE TABLE file (x)")
        c.commit()
        c.close()
    before = target.read_bytes()
    want = list_folders(folders, no_cache=True)
    assert list_folders(folders, catalog=str(target)) == want
    with pytest.raises(cat.CatalogError, match="not recognised as a sessiontree catalog"):
        cat.index(folders, catalog=str(target))
    assert target.read_bytes() == before
    assert not Path(str(target) + ".lock").exists()


def test_catalog_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.catalog._location import default_path, resolve

    monkeypatch.delenv("SESSIONTREE_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_path() == str(tmp_path / "xdg" / "sessiontree" / "catalog.sqlite3")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # not absolute: ignored (XDG spec)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path() == str(tmp_path / "home" / ".cache" / "sessiontree" / "catalog.sqlite3")
    monkeypatch.setenv("SESSIONTREE_CATALOG", "off")
    assert default_path() is None
    folders = make_root(tmp_path / "s", 3, seed=1)
    assert list_folders(folders) == list_folders(folders, no_cache=True)  # off: read the files
    assert not (tmp_path / "home" / ".cache" / "sessiontree" / "catalog.sqlite3").exists()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    with pytest.raises(ValueError, match="inside Pi's folder"):
        resolve(tmp_path / "agent" / "sessions" / "c.sqlite3")
    with pytest.raises(ValueError, match="inside Pi's folder"):
        resolve(tmp_path / "agent" / "x.sqlite3")
    assert resolve(tmp_path / "elsewhere.sqlite3") == str(tmp_path / "elsewhere.sqlite3")


def test_unwritable_catalog_falls_back(tmp_path: Path) -> None:
    folders = make_root(tmp_path / "s", 5, seed=1)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    got = list_folders(folders, catalog=str(blocked / "catalog.sqlite3"))
    assert got == list_folders(folders, no_cache=True)
    with pytest.raises(cat.CatalogError):
        cat.index(folders, catalog=str(blocked / "catalog.sqlite3"))


# ------------------------------------------------------------- two processes
_INDEXER = """
import sys
from sessiontree import catalog
for _ in range(int(sys.argv[3])):
    catalog.index([sys.argv[1]], catalog=sys.argv[2])
"""


def test_listing_while_another_process_indexes(tmp_path: Path, catalog_file: str) -> None:
    folder = tmp_path / "s" / "--p--"
    folder.mkdir(parents=True)
    for i in range(40):
        generate_session(folder / f"s{i}.jsonl", size_bytes=30_000 + 2_000 * i, seed=i, cwd="/p")
    generate_session(folder / "big.jsonl", size_bytes=20_000_000, seed=3, cwd="/p")
    want = list_sessions(str(folder), no_cache=True)
    proc = subprocess.Popen([sys.executable, "-c", _INDEXER, str(folder), catalog_file, "3"])
    try:
        seen = 0
        while proc.poll() is None or seen == 0:
            assert list_sessions(str(folder), catalog=catalog_file) == want
            seen += 1
    finally:
        assert proc.wait(timeout=600) == 0
    assert seen > 1
    assert cat.search("refactor", [str(folder)], catalog=catalog_file) == cat.search(
        "refactor", [str(folder)], no_cache=True)


def test_two_processes_index_at_once(tmp_path: Path, catalog_file: str) -> None:
    folders = make_root(tmp_path / "s", 200, seed=12)
    procs = [subprocess.Popen([sys.executable, "-c", _INDEXER, f, catalog_file, "1"])
             for f in folders[:8] for _ in range(2)]
    for f in folders[:8]:
        _append(next(Path(f).glob("*.jsonl")), "while indexing")  # a writer too
    assert all(p.wait(timeout=600) == 0 for p in procs)
    check_listing(folders, catalog_file)
    check_search(folders, catalog_file)
    check_usage(folders, catalog_file)


# ------------------------------------------------------------------ queries
def test_query_syntax() -> None:
    from sessiontree.catalog import parse_query

    q = parse_query('  foo "node  cve" bar ')
    assert [(t.kind, t.text) for t in q.terms] == [("word", "foo"), ("phrase", "node  cve"), ("word", "bar")]
    q = parse_query('foo "unclosed bar')  # Pi: an open quote splits on white space, quotes kept
    assert [(t.kind, t.text) for t in q.terms] == [("word", "foo"), ("word", '"unclosed'), ("word", "bar")]
    assert parse_query("re: a+b ").regex is not None and parse_query("re: a+b ").regex.pattern == "a+b"
    assert [t.text for t in parse_query('a"b c"d').terms] == ["a", "b c", "d"]
    for bad in ("", "   ", "re:", "re:  ", "re:(", '""'):
        with pytest.raises(ValueError):
            parse_query(bad)


def test_usage_dates_and_groups(pi_root: Path, catalog_file: str) -> None:
    folders = project_folders(str(pi_root))[:6]
    days = cat.usage("daily", folders, tz=timezone.utc, catalog=catalog_file)
    keys = [x.key for x in days.lines]
    mid = date.fromisoformat(keys[len(keys) // 2])
    part = cat.usage("daily", folders, tz=timezone.utc, since=mid, until=mid, catalog=catalog_file)
    assert [x.key for x in part.lines] == [mid.isoformat()]
    assert part.lines[0] == next(x for x in days.lines if x.key == mid.isoformat())
    for g in ("weekly", "monthly", "model", "project", "session"):
        r = cat.usage(g, folders, tz=timezone.utc, catalog=catalog_file)  # type: ignore[arg-type]
        assert r.total == days.total, g
        assert sum(x.records for x in r.lines) == days.total.records
    with pytest.raises(ValueError):
        cat.usage("yearly", folders)  # type: ignore[arg-type]


def test_first_read_of_a_file_larger_than_a_piece(tmp_path: Path, catalog_file: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A file read in several pieces on its first indexing (a new catalog row, queued
    in the batch of its first piece) is saved whole: the first answer is the full one.
    Pieces of 64 KiB stand for the real 16 MiB."""
    from sessiontree.catalog import _indexer

    monkeypatch.setattr(_indexer, "CHUNK", 64 << 10)
    folder = tmp_path / "p"
    folder.mkdir()
    generate_session(folder / "big.jsonl", size_bytes=1_000_000, seed=5, cwd="/p")
    generate_session(folder / "small.jsonl", size_bytes=20_000, seed=6, cwd="/p")
    folders = [str(folder)]
    progress: list[tuple[int, int]] = []
    cat.usage("model", folders, catalog=catalog_file, on_bytes=lambda done, total: progress.append((done, total)))
    size = sum(os.path.getsize(folder / n) for n in ("big.jsonl", "small.jsonl"))
    # The pieces' torn lines are read twice; the bytes shown never pass what there is.
    assert progress[-1] == (size, size) and all(d <= t == size for d, t in progress), progress
    os.unlink(catalog_file)
    check_usage(folders, catalog_file)  # the first call on the new catalog included
    for q in ("memory", "refactor parser", '"the session"'):
        assert cat.search(q, folders, catalog=catalog_file, limit=None) == cat.search(
            q, folders, no_cache=True, limit=None), q
    with sqlite3.connect(catalog_file) as c:
        assert {n: (size == end) for n, size, end in c.execute("SELECT name, size, c_end FROM file")} == {
            "big.jsonl": True, "small.jsonl": True}


def test_unchanged_listing_reads_rows_not_entries_records(tmp_path: Path, catalog_file: str) -> None:
    """A listing of unchanged files reads the small ``file`` rows, never the entries
    records that grow with each session (kept apart, ``_store``): all the bytes this
    process reads stay far below the records' size."""
    folder = tmp_path / "p"
    folder.mkdir()
    for i in range(3):
        generate_session(folder / f"s{i}.jsonl", size_bytes=4_000_000, seed=20 + i, cwd="/p", payload_scale=0.02)
    first = list_folders([str(folder)], catalog=catalog_file)
    with sqlite3.connect(catalog_file) as c:
        records = c.execute("SELECT sum(length(record)) FROM entries").fetchone()[0]
    assert records > 200_000
    before = _rchar()
    again = list_folders([str(folder)], catalog=catalog_file)
    read = _rchar() - before
    assert again == first
    assert read < records // 4, (read, records)


def test_file_name_that_is_not_utf8(tmp_path: Path, catalog_file: str) -> None:
    """Names are bytes on Linux: a session named with byte 0xff is listed, searched and
    counted through the catalog as without it."""
    folder = tmp_path / "p"
    folder.mkdir()
    generate_session(folder / "plain.jsonl", size_bytes=20_000, seed=3, cwd="/p")
    odd = os.path.join(os.fsencode(folder), b"bad\xffname.jsonl")
    generate_session(os.fsdecode(odd), size_bytes=20_000, seed=4, cwd="/p")
    folders = [str(folder)]
    for _ in range(2):  # a new catalog, then the saved one
        got = list_folders(folders, catalog=catalog_file)
        assert got == list_folders(folders, no_cache=True)
        assert os.fsdecode(odd) in {s.path for s in got}
        assert cat.search("the", folders, catalog=catalog_file, limit=None) == cat.search(
            "the", folders, no_cache=True, limit=None)


@pytest.mark.parametrize("then", ["grow", "search"])
def test_missing_entries_records_are_damage(tmp_path: Path, catalog_file: str, then: str) -> None:
    """Rows of the entries table deleted behind the catalog's back: found when needed
    (a growth, a search's current paths) and rebuilt, never read as empty."""
    folder = tmp_path / "p"
    folder.mkdir()
    for i in range(3):
        generate_session(folder / f"s{i}.jsonl", size_bytes=30_000, seed=30 + i, cwd="/p")
    folders = [str(folder)]
    cat.index(folders, catalog=catalog_file)
    with sqlite3.connect(catalog_file) as c:
        c.execute("DELETE FROM entries")
    if then == "grow":  # a line that reuses an id: a duplicate, to be skipped
        target = folder / "s0.jsonl"
        first = json.loads(target.read_bytes().splitlines()[1])
        with open(target, "ab") as f:
            f.write(json.dumps({**first, "message": {"role": "user", "content": "dup", "timestamp": 9}}).encode() + b"\n")
    with said_if_rebuilt(catalog_file):
        assert list_folders(folders, catalog=catalog_file) == list_folders(folders, no_cache=True)
        assert cat.search("the", folders, catalog=catalog_file, limit=None) == cat.search(
            "the", folders, no_cache=True, limit=None)
        assert cat.usage("session", folders, catalog=catalog_file, active_path=True) == cat.usage(
            "session", folders, no_cache=True, active_path=True)


_LISTER = """
import sys
from sessiontree._listing import list_folders
list_folders(sys.argv[2:], catalog=sys.argv[1])
"""


def test_a_report_whose_saves_another_process_won(tmp_path: Path, catalog_file: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing in another process saves the files' rows (listing facts only) between
    this report's reads and its first save: this process's saves lose, and it must not
    answer from rows that hold no usage log."""
    folders = make_root(tmp_path / "s", 12, seed=3)
    real = Store.batch
    ran: list[int] = []

    def batch(self: Store) -> Any:
        if not ran:
            ran.append(1)
            subprocess.run([sys.executable, "-c", _LISTER, catalog_file, *folders], check=True)
        return real(self)

    monkeypatch.setattr(Store, "batch", batch)
    got = cat.usage("session", folders, catalog=catalog_file)
    want = cat.usage("session", folders, no_cache=True)
    assert ran and got == want


def test_damage_two_processes_meet_is_rebuilt_once(tmp_path: Path, catalog_file: str) -> None:
    """Adversary 59b: two processes that met the same damage each rebuilt it: the
    second replaced the new catalog the first had just made (and filled) and said
    the damage again (3 of 10 pairs of searches). The second uses the first's."""
    folders = [str(tmp_path / "p")]
    os.makedirs(folders[0])
    for i in range(3):
        generate_session(os.path.join(folders[0], f"s{i}.jsonl"), entries=40, seed=i)
    cat.index(folders, catalog=catalog_file)
    first, second = Store(catalog_file), Store(catalog_file)
    with pytest.warns(CatalogRebuiltWarning, match="malformed"):
        first.rebuild("database disk image is malformed")
    made = os.stat(catalog_file).st_ino
    assert list_folders(folders, catalog=catalog_file) == list_folders(folders, no_cache=True)  # fills it
    with warnings.catch_warnings():
        warnings.simplefilter("error", CatalogRebuiltWarning)
        second.rebuild("database disk image is malformed")
    assert os.stat(catalog_file).st_ino == made
    assert second.conn.execute("SELECT count(*) FROM file").fetchone()[0] == 3
    # A store whose own file is damaged still replaces it, and says so.
    with pytest.warns(CatalogRebuiltWarning):
        second.rebuild("database disk image is malformed")
    assert os.stat(catalog_file).st_ino != made
    first.close()
    second.close()


def test_a_rebuild_is_said_at_the_callers_line(tmp_path: Path, catalog_file: str) -> None:
    """Adversary 59b: the warning named a line of the catalog's own (``_run.py``), so
    under Python's default filter a program was told of its first rebuild only; it
    names the line of the call that met the damage."""
    folders = [str(tmp_path / "p")]
    os.makedirs(folders[0])
    generate_session(os.path.join(folders[0], "s.jsonl"), entries=40, seed=1)

    def damaged() -> None:
        cat.index(folders, catalog=catalog_file)
        damage_pages(catalog_file)

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("default")
        damaged()
        list_folders(folders, catalog=catalog_file)
        damaged()
        list_folders(folders, catalog=catalog_file)
    rebuilt = [w for w in said if issubclass(w.category, CatalogRebuiltWarning)]
    assert [w.filename for w in rebuilt] == [__file__, __file__], [(w.filename, w.lineno) for w in said]


def test_damaged_again_after_its_rebuild_the_files_answer(catalog_file: str) -> None:
    """Another process keeps breaking the catalog: the rebuilt one fails too, and the
    answer comes from the files (a command that needs the catalog gets one error)."""
    calls: list[bool] = []

    def op(store: Any) -> str:
        calls.append(store is not None)
        if store is not None:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return "from the files"

    with pytest.warns(CatalogRebuiltWarning, match="malformed"):
        assert cat.run(op, catalog=catalog_file) == "from the files"
    assert calls == [True, True, False]
    with pytest.raises(cat.CatalogError, match="malformed"), pytest.warns(CatalogRebuiltWarning):
        cat.run(op, catalog=catalog_file, required=True)


def test_a_rewrite_with_its_mtime_put_back_is_read_again(tmp_path: Path, catalog_file: str) -> None:
    """Same size, same mtime (``touch -r``, ``cp -p``), other bytes at the ends or only
    in the middle: the ctime changed, so the file is read again."""
    folder = tmp_path / "p"
    folder.mkdir()
    path = folder / "s.jsonl"
    generate_session(path, entries=30, seed=5, cwd="/p")
    with SessionManager.open(str(path)) as sm:
        sm.append_session_info("name-AAAA")
    folders = [str(folder)]
    assert list_folders(folders, catalog=catalog_file)[0].name == "name-AAAA"
    st = path.stat()
    data = path.read_bytes()
    path.write_bytes(data.replace(b"name-AAAA", b"name-BBBB"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert list_folders(folders, catalog=catalog_file) == list_folders(folders, no_cache=True)
    assert list_folders(folders, catalog=catalog_file)[0].name == "name-BBBB"
    cat.index(folders, catalog=catalog_file)
    st = path.stat()
    data = path.read_bytes()
    # A word of a user text in the middle, away from both fingerprinted ends.
    at = next(m.start(1) for m in re.finditer(rb'"role":"user","content":"([A-Za-z]{3}) ', data)
              if 4096 < m.start() < len(data) - 4096)
    path.write_bytes(data[:at] + b"Zqx" + data[at + 3:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    got = cat.search("zqx", folders, catalog=catalog_file)
    assert got == cat.search("zqx", folders, no_cache=True) and got.total == 1


def test_a_lone_surrogate_is_searched_as_one_replacement_character(tmp_path: Path, catalog_file: str) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}',
             '{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
             '"message":{"role":"user","content":"nm \\ud800 x","timestamp":1}}']
    (folder / "s.jsonl").write_text("\n".join(lines) + "\n")
    for kw in ({"catalog": catalog_file}, {"no_cache": True}):
        hits = cat.search("re:nm \ufffd x", [str(folder)], **kw).hits  # type: ignore[arg-type]
        assert [h.entry_id for h in hits] == ["u1"], kw


@pytest.mark.parametrize("what", ["fifo", "device", "symlink-to-device", "symlink-to-session"])
def test_a_catalog_path_that_is_not_a_regular_file(tmp_path: Path, what: str) -> None:
    """A FIFO is never opened (a read would wait for a writer forever), a device or a
    symlink never replaced (``--catalog /dev/null`` must not replace /dev/null): the
    listing reads the files, ``index`` refuses in one line. In a child process, so a
    hang fails the test instead of stopping the suite."""
    folders = make_root(tmp_path / "s", 4, seed=2)
    target = tmp_path / "target"
    if what == "fifo":
        os.mkfifo(target)
    elif what == "device":
        try:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null
        except PermissionError:
            pytest.skip("mknod needs root")
    elif what == "symlink-to-device":
        target.symlink_to("/dev/null")
    else:
        target.symlink_to(sorted(Path(folders[0]).glob("*.jsonl"))[0])
    before = os.lstat(target)
    code = ("import sys\nfrom sessiontree._listing import list_folders\nfrom sessiontree import catalog\n"
            "n = len(list_folders(sys.argv[2:], catalog=sys.argv[1]))\n"
            "try:\n    catalog.index(sys.argv[2:], catalog=sys.argv[1])\nexcept catalog.CatalogError as e:\n"
            "    print(n, 'refused:', e)\n")
    p = subprocess.run([sys.executable, "-c", code, str(target), *folders], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"{len(list_folders(folders, no_cache=True))} refused:"), p.stdout
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)


@pytest.mark.parametrize("damage", ["UPDATE file SET name = x'ff'", "UPDATE file SET cwd = x'c3'",
                                    "UPDATE file SET l_end = 'x'", "UPDATE file SET c_end = 'zz'",
                                    "UPDATE file SET activity = 'abc'", "UPDATE file SET activity = x'00'",
                                    "UPDATE file SET l_end = -5", "UPDATE file SET tail = -1",
                                    "UPDATE file SET first_message = 5", "UPDATE file SET sid = 5",
                                    "UPDATE file SET title = 1.5", "UPDATE file SET ends = 'x'",
                                    "UPDATE file SET tail = 9223372036854775807",
                                    "UPDATE file SET c_end = l_end + 5"])
def test_damaged_values_in_rows_are_rebuilt(tmp_path: Path, catalog_file: str, damage: str) -> None:
    folders = make_root(tmp_path / "s", 6, seed=4)
    cat.index(folders, catalog=catalog_file)
    with sqlite3.connect(catalog_file) as c:
        c.execute(damage + " WHERE id = (SELECT min(id) FROM file)")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert list_folders(folders, catalog=catalog_file) == list_folders(folders, no_cache=True)
        assert cat.search("the", folders, catalog=catalog_file, limit=None) == cat.search(
            "the", folders, no_cache=True, limit=None)
    # Said once; a tail past any file's end is not read as damage: the file is read again.
    rebuilt = [w for w in said if issubclass(w.category, CatalogRebuiltWarning)]
    assert len(rebuilt) == ("tail = 9223372036854775807" not in damage), [str(w.message) for w in said]


_FULL_DISK_LS = r"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
from sessiontree.cli import main
sys.exit(main(["ls", sys.argv[1], "--catalog", sys.argv[2]]))
"""


def test_a_catalog_that_cannot_be_made_leaves_no_file_behind(tmp_path: Path) -> None:
    """Adversary round 41, F4: on a full disk every command that tried to make the
    catalog left ``catalog.sqlite3.<pid>.new`` behind, counted against the cache
    folder's budget and never swept. The answer still comes (read from the files);
    a later run that makes the catalog sweeps a killed run's leftovers, and only those."""
    folder = tmp_path / "s"
    folder.mkdir()
    generate_session(str(folder / "a.jsonl"), size_bytes=20_000, seed=1)
    cache = tmp_path / "cache"
    cache.mkdir()
    catalog = cache / "catalog.sqlite3"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(cache), "SESSIONTREE_INDEX": "off"}
    r = subprocess.run([sys.executable, "-c", _FULL_DISK_LS, str(folder), str(catalog)], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "a.jsonl" in r.stdout
    assert not [p.name for p in cache.iterdir() if ".new" in p.name]
    # A run killed while making it leaves one; the next run that makes one sweeps it.
    (cache / "catalog.sqlite3.4242.new").write_bytes(b"x")
    (cache / "catalog.sqlite3.4242.new-wal").write_bytes(b"x")
    (cache / "other.sqlite3.4242.new").write_bytes(b"x")  # not the catalog's: kept
    (cache / "catalog.sqlite3.x.new").write_bytes(b"x")  # not a name the catalog makes: kept
    r = subprocess.run([sys.executable, "-m", "sessiontree", "ls", str(folder), "--catalog", str(catalog)], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in cache.iterdir() if ".new" in p.name) == ["catalog.sqlite3.x.new",
                                                                        "other.sqlite3.4242.new"]
    assert catalog.is_file()


def test_a_newer_versions_catalog_is_left_as_it_is(tmp_path: Path, catalog_file: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog of a newer schema is never replaced, named or at the catalog's own
    place (two versions sharing a cache would rebuild it in turn, trial 58), also while
    the change is still in its WAL (the header says this version's: adversary 58):
    listings and reports read the files, ``index`` raises ``CatalogError``. An older
    one is replaced, as before."""
    from sessiontree.catalog import SCHEMA_VERSION, other_schema, replaced

    folder = tmp_path / "p"
    folder.mkdir()
    generate_session(folder / "a.jsonl", size_bytes=20_000, seed=3, cwd="/p")
    folders = [str(folder)]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    own = str(tmp_path / "xdg" / "sessiontree" / "catalog.sqlite3")

    def set_schema(path: str, version: int, *, checkpoint: bool = True) -> None:
        c = sqlite3.connect(path)
        c.execute(f"PRAGMA user_version = {version}")
        c.commit()
        if checkpoint:  # into the file's header (a reader left open elsewhere keeps the WAL)
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.close()

    for path in (catalog_file, own):
        list_folders(folders, catalog=path)
        assert other_schema(path) is None and not replaced(path)  # this version's
        keeper = sqlite3.connect(path)  # another reader: the change stays in the WAL
        keeper.execute("SELECT count(*) FROM file").fetchone()
        set_schema(path, SCHEMA_VERSION + 1, checkpoint=False)
        assert other_schema(path) == SCHEMA_VERSION + 1  # the header is behind; SQLite's reading is not
        for kept_in_wal in (True, False):
            before = Path(path).read_bytes()
            with pytest.raises(cat.CatalogError, match="newer sessiontree version"):
                Store(path)
            assert list_folders(folders, catalog=path) == list_folders(folders, no_cache=True)
            assert cat.usage("model", folders, catalog=path) == cat.usage("model", folders, no_cache=True)
            with pytest.raises(cat.CatalogError, match="newer sessiontree version"):
                cat.index(folders, catalog=path)
            assert Path(path).read_bytes() == before
            if kept_in_wal:
                keeper.close()
                sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").connection.close()
                assert other_schema(path) == SCHEMA_VERSION + 1 and not replaced(path)
        set_schema(path, -1)  # SQLite's user_version is signed
        assert other_schema(path) == -1 and replaced(path)
        Store(path).close()  # an older one: replaced
        assert other_schema(path) is None


def _catalog_of_schema(path: Path, version: int) -> None:
    """A catalog at ``path`` whose ``user_version`` is ``version`` (in its header)."""
    Store(str(path)).close()
    c = sqlite3.connect(path)
    c.execute(f"PRAGMA user_version = {version}")
    c.commit()
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


def test_a_newer_catalog_put_in_place_while_a_store_waits_is_kept(tmp_path: Path) -> None:
    """An older catalog a store would replace, swapped for a newer version's while the
    store waits for the lock (that version replacing it): judged again under the lock,
    it is kept (adversary 58b: replaced back)."""
    import fcntl
    import threading
    import time

    from sessiontree.catalog import SCHEMA_VERSION, other_schema

    path, newer = tmp_path / "c.sqlite3", tmp_path / "n.sqlite3"
    _catalog_of_schema(path, SCHEMA_VERSION - 1)
    _catalog_of_schema(newer, SCHEMA_VERSION + 1)
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    got: list[BaseException | None] = []

    def open_it() -> None:
        try:
            Store(str(path), busy=20).close()
            got.append(None)
        except BaseException as e:  # noqa: BLE001 - the test's answer
            got.append(e)

    opener = threading.Thread(target=open_it)
    opener.start()
    time.sleep(0.5)  # it waits for the lock
    os.replace(newer, path)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    opener.join(20)
    assert got and isinstance(got[0], cat.CatalogError) and "newer sessiontree version" in str(got[0]), got
    assert other_schema(str(path)) == SCHEMA_VERSION + 1


def test_a_catalog_migrated_by_a_newer_version_is_not_rebuilt(tmp_path: Path) -> None:
    """A store opened on this version's catalog, which a newer version then migrates:
    a rebuild (damage found) judges the file as it is now and leaves it (adversary 58b:
    it used the schema read when it opened)."""
    from sessiontree.catalog import SCHEMA_VERSION, other_schema

    path = tmp_path / "c.sqlite3"
    store = Store(str(path))
    c = sqlite3.connect(path)
    c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    c.commit()
    c.close()
    with pytest.raises(cat.CatalogError, match="newer sessiontree version"):
        store.rebuild()
    assert other_schema(str(path)) == SCHEMA_VERSION + 1


def test_a_newer_catalogs_wal_is_never_checkpointed_into_it(tmp_path: Path) -> None:
    """A newer version's change still in its WAL (its writer killed): opening the
    catalog refuses it without writing anything: a connection of ours closing would
    have checkpointed the WAL into the file and deleted it (adversary 58b)."""
    from sessiontree.catalog import SCHEMA_VERSION, other_schema

    path = tmp_path / "c.sqlite3"
    Store(str(path)).close()
    code = ("import os, sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n"
            f"c.execute('PRAGMA user_version = {SCHEMA_VERSION + 1}')\nc.commit()\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
    wal = Path(f"{path}-wal")
    before = (path.read_bytes(), wal.read_bytes())
    assert other_schema(str(path)) == SCHEMA_VERSION + 1  # the header says this version's
    with pytest.raises(cat.CatalogError, match="newer sessiontree version"):
        Store(str(path))
    folder = tmp_path / "p"
    folder.mkdir()
    generate_session(folder / "a.jsonl", size_bytes=20_000, seed=3, cwd="/p")
    assert list_folders([str(folder)], catalog=str(path)) == list_folders([str(folder)], no_cache=True)
    assert (path.read_bytes(), wal.read_bytes()) == before


def test_a_catalog_another_process_holds_is_judged_without_crash_or_replacement(tmp_path: Path) -> None:
    """What is in a catalog's WAL is read through a read-only connection (adversary
    58c): a path that is not UTF-8 reads (it raised UnicodeEncodeError); a newer
    version's new file, its application id and schema still in its WAL only (the file's
    header says it is no catalog at all), is refused, not replaced; so is one held in
    exclusive locking mode, whose schema cannot be read now."""
    from sessiontree.catalog import SCHEMA_VERSION, other_schema

    odd = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"nu\xff.sqlite3"))
    Store(odd).close()
    holder = sqlite3.connect(odd)  # a writer alive: its WAL stays beside the file
    holder.execute("CREATE TABLE IF NOT EXISTS x (y)")
    holder.commit()
    assert os.path.exists(odd + "-wal") and other_schema(odd) is None  # this version's, read
    Store(odd).close()
    holder.close()

    code = ("import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1])\n"
            "c.execute('PRAGMA journal_mode=WAL')\n{lock}"
            "c.execute('PRAGMA application_id = 1398043203')\n"
            f"c.execute('PRAGMA user_version = {SCHEMA_VERSION + 1}')\n"
            "c.execute('CREATE TABLE t (x)')\nc.commit()\n{hold}print('ready', flush=True)\ntime.sleep(60)\n")
    for name, lock, hold in (("wal-only", "", ""),
                             ("exclusive", "c.execute('PRAGMA locking_mode=EXCLUSIVE')\n",
                              "c.execute('SELECT * FROM t').fetchall()\n")):
        path = tmp_path / f"{name}.sqlite3"
        p = subprocess.Popen([sys.executable, "-c", code.format(lock=lock, hold=hold), str(path)],
                             stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            ino = os.stat(path).st_ino
            with pytest.raises(cat.CatalogError, match="newer sessiontree version|held by another process"):
                Store(str(path), busy=1)
            assert os.stat(path).st_ino == ino and os.path.exists(f"{path}-wal"), name
        finally:
            p.kill()
            p.wait()
