"""The synthetic session generator: determinism, Pi's line format, tree shape, size."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from sessiontree._jsonl import encode_entry
from sessiontree.generate import GenerateStats, generate_session, parse_size

SIZE = 3_000_000
_FIRST_KEYS = ["type", "id", "parentId", "timestamp"]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GenerateStats]:
    path = tmp_path_factory.mktemp("gen") / "small.jsonl"
    return path, generate_session(path, size_bytes=SIZE, seed=11)


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


def test_same_seed_same_bytes(tmp_path: Path, small: tuple[Path, GenerateStats]) -> None:
    path, _ = small
    again = tmp_path / "again.jsonl"
    generate_session(again, size_bytes=SIZE, seed=11)
    assert again.read_bytes() == path.read_bytes()
    other = tmp_path / "other.jsonl"
    generate_session(other, size_bytes=SIZE, seed=12)
    assert other.read_bytes() != path.read_bytes()


def test_lines_are_what_pi_writes(small: tuple[Path, GenerateStats]) -> None:
    """Every line parses, and re-encoding it with JSON.stringify's rules gives the same bytes."""
    path, stats = small
    lines = _lines(path)
    assert len(lines) == stats.entries + 1
    header = json.loads(lines[0])
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == 3 and header["id"][14] == "7"  # a UUID v7
    for raw in lines:
        entry = json.loads(raw)
        assert encode_entry(entry) == raw
        if entry["type"] in ("custom", "custom_message"):
            keys = list(entry)
            assert keys[:2] == ["type", "customType"] and keys[-3:] == ["id", "parentId", "timestamp"]
        elif entry["type"] != "session":
            assert list(entry)[:4] == _FIRST_KEYS
            assert len(entry["id"]) == 8 and entry["timestamp"].endswith("Z")


def test_tree_shape(small: tuple[Path, GenerateStats]) -> None:
    path, stats = small
    entries = [json.loads(raw) for raw in _lines(path)[1:]]
    by_id = {e["id"]: e for e in entries}
    assert len(by_id) == len(entries), "ids are unique"
    children: Counter[str] = Counter()
    seen: set[str] = set()
    for e in entries:
        parent = e["parentId"]
        assert parent is None or parent in seen, "a parent comes before its children"
        if parent is not None:
            children[parent] += 1
        seen.add(e["id"])
    assert sum(1 for n in children.values() if n > 1) == stats.branch_points >= 2
    types = Counter(e["type"] for e in entries)
    for t in ("message", "compaction", "branch_summary", "model_change", "thinking_level_change",
              "label", "session_info", "custom", "custom_message"):
        assert types[t] >= 1, t
    roles = Counter(e["message"]["role"] for e in entries if e["type"] == "message")
    for r in ("user", "assistant", "toolResult", "bashExecution"):
        assert roles[r] >= 1, r
    for e in entries:
        if e["type"] == "compaction":
            ancestors, cur = set(), e["parentId"]
            while cur is not None:
                ancestors.add(cur)
                cur = by_id[cur]["parentId"]
            assert e["firstKeptEntryId"] in ancestors, "firstKeptEntryId lies on the compaction's path"
        if e["type"] == "label":
            assert e["targetId"] in by_id
    assert any(e.get("message", {}).get("usage") for e in entries)


def test_non_ascii_present(tmp_path: Path) -> None:
    path = tmp_path / "u.jsonl"
    generate_session(path, size_bytes=SIZE, seed=3)
    data = path.read_bytes()
    text = data.decode("utf-8")
    assert "\u2028" in text  # raw, as JSON.stringify leaves it
    assert any("\u4e00" <= ch <= "\u9fff" for ch in text)  # CJK
    assert any(ord(ch) > 0xFFFF for ch in text)  # astral (emoji)


def test_size_and_entries(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    stats = generate_session(path, size_bytes=1_500_000, seed=5)
    # It stops after the entry that reaches the size; one entry is at most ~1.6 MB.
    assert 1_500_000 <= stats.bytes == path.stat().st_size < 1_500_000 + 2_000_000
    stats = generate_session(path, entries=250, seed=5)
    assert stats.entries == 250 and len(_lines(path)) == 251
    stats = generate_session(path, entries=0, seed=5)
    assert len(_lines(path)) == 1


def test_payload_scale_makes_small_entries(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    stats = generate_session(path, entries=3000, seed=2, payload_scale=0.01)
    assert stats.entries == 3000 and stats.bytes < 5_000_000


def test_parse_size() -> None:
    assert parse_size("300MB") == 300_000_000
    assert parse_size("1GiB") == 1 << 30
    assert parse_size("1.5 kib") == 1536
    assert parse_size("42") == 42
    assert parse_size("99999999999999999999999") == 99999999999999999999999  # exact, not through a float
    assert parse_size("2KiB") == 2048
    for bad in ("", "MB", "12XB", "-1MB", "inf", "1e999", "nan", "١٢", "0x10"):
        with pytest.raises(ValueError):
            parse_size(bad)
    with pytest.raises(ValueError):
        generate_session("/dev/null")


def test_opens_and_builds_context(small: tuple[Path, GenerateStats], backend: str) -> None:
    from sessiontree import SessionManager

    path, stats = small
    with SessionManager.open(str(path), backend=backend) as sm:
        assert len(sm) == stats.entries
        assert sm.leaf_id == stats.leaf_id
        assert not sm.load_report
        ctx = sm.build_session_context()
        roles = {m["role"] for m in ctx.messages}
        on_path = any(e["type"] == "compaction" for e in sm.get_branch())
        assert ("compactionSummary" in roles) == on_path
        assert {"user", "assistant"} <= roles
        assert ctx.model is not None
        compactions = [e for e in sm.get_entries() if e["type"] == "compaction"]
        assert compactions
        for c in compactions:
            at = sm.build_session_context(leaf_id=c["id"]).messages
            assert at[0]["role"] == "compactionSummary" and at[0]["summary"] == c["summary"]
            kept = sm.get_entry(c["firstKeptEntryId"])
            assert kept["type"] == "message" and at[1] == kept["message"]


def test_generate_root_writes_a_history_in_pis_layout(tmp_path: Path) -> None:
    """N sessions spread over project folders named as Pi names them, each file named
    after its own header (Pi's session_file_name), about the total size, the same bytes
    for the same seed, nothing ever replaced; listed and checked like any session."""
    import json as _json

    from sessiontree._listing import list_all_sessions
    from sessiontree._places import session_dir_for_cwd, session_file_name
    from sessiontree.generate import generate_root

    a, b = tmp_path / "a", tmp_path / "b"
    written = generate_root(a, sessions=12, total_bytes=600_000, projects=3, seed=4)
    generate_root(b, sessions=12, total_bytes=600_000, projects=3, seed=4)
    assert len(written) == 12 and 0.9 * 600_000 < sum(s.bytes for s in written) < 1.3 * 600_000
    for i, s in enumerate(written):
        header = _json.loads(Path(s.path).read_text().split("\n", 1)[0])
        assert header["cwd"] == f"/home/user/project{i % 3}"
        assert s.path == os.path.join(session_dir_for_cwd(header["cwd"], str(a)),
                                      session_file_name(header["timestamp"], header["id"]))
        assert Path(s.path).read_bytes() == (b / Path(s.path).relative_to(a)).read_bytes()
    infos = list_all_sessions(str(a), no_cache=True)
    assert sorted(i.path for i in infos) == sorted(s.path for s in written)
    assert sorted(os.listdir(a)) == ["--home-user-project0--", "--home-user-project1--", "--home-user-project2--"]
    before = {p: p.stat().st_mtime_ns for p in a.rglob("*.jsonl")}
    with pytest.raises(FileExistsError):
        generate_root(a, sessions=12, total_bytes=600_000, projects=3, seed=4)
    assert {p: p.stat().st_mtime_ns for p in a.rglob("*.jsonl")} == before
    assert not [p for p in a.rglob("*") if p.name.startswith(".generating")]
    with pytest.raises(ValueError):
        generate_root(a, sessions=0, total_bytes=10_000)


def test_generate_sessions_command(tmp_path: Path) -> None:
    import subprocess
    import sys

    cli = os.path.join(os.path.dirname(sys.executable), "sessiontree")
    root = tmp_path / "root"
    run = [cli, "generate", str(root), "--sessions", "5", "--size", "50KB", "--projects", "2"]
    out = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("wrote 5 sessions") and "in 2 project folder(s)" in out.stdout
    ls = subprocess.run([cli, "ls", str(root), "--all", "--json", "--no-cache"], capture_output=True, text=True,
                        timeout=120)
    assert len(json.loads(ls.stdout)["sessions"]) == 5
    again = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "already exists; not overwritten" in again.stderr
    assert "another --seed" in again.stderr  # and it works:
    other = subprocess.run([*run, "--seed", "7"], capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    for bad in (["--entries", "3"], ["--size", "2KB"], ["--size", "50KB", "--projects", "0"]):
        r = subprocess.run([cli, "generate", str(tmp_path / "x"), "--sessions", "5", *bad], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith("sessiontree: error:"), (bad, r.stderr)


def test_generate_to_standard_output_says_so(tmp_path: Path) -> None:
    """``generate --out -``: the note on stderr names standard output, not ``-``, and a
    small session's speed is not rounded to 0 MB/s."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "sessiontree", "generate", "--out", "-", "--entries", "5"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith('{"type":"session"')
    assert p.stderr.startswith("wrote standard output: ") and "(0 MB/s)" not in p.stderr, p.stderr
