"""_listing: Pi's session places and list / list_all over good, bad, empty and BOM files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from sessiontree._js import trim as js_trim
from sessiontree._listing import ListingProblem, list_all_sessions, list_sessions, read_session_info
from sessiontree._places import default_session_root, session_dir_for_cwd, session_file_name
from sessiontree.errors import InvalidSessionError

HDR = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-12-01T10:00:00.000Z", "cwd": "/p"}


def _line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _msg(eid: str, parent: str | None, role: str, content: object, ts: object = None, ets: str = "2025-12-01T10:00:01.000Z") -> dict:
    m: dict = {"role": role, "content": content}
    if ts is not None:
        m["timestamp"] = ts
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ets, "message": m}


def _write(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_text("".join(x + end for x in lines), encoding="utf-8")
    return path


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


def test_places(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert session_dir_for_cwd("/home/u/my:proj", "/r") == "/r/--home-u-my-proj--"
    assert session_dir_for_cwd("C:\\Users\\x", "/r") == "/r/--C--Users-x--"
    assert session_dir_for_cwd("relative/dir", "/r") == "/r/--relative-dir--"
    assert session_file_name("2025-11-07T09:14:10.205Z", "abc") == "2025-11-07T09-14-10-205Z_abc.jsonl"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    assert default_session_root() == str(tmp_path / "sessions")
    assert session_dir_for_cwd("/a") == str(tmp_path / "sessions" / "--a--")
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_session_root() == str(tmp_path / "home" / ".pi" / "agent" / "sessions")
    assert not (tmp_path / "sessions").exists()  # nothing is created


def test_file_names_match_corpus_ops(corpus_dir: Path) -> None:
    for path in sorted(corpus_dir.glob("*.ops.json")):
        op0 = json.loads(path.read_text())["ops"][0]
        assert op0["op"] == "create"
        r = op0["result"]
        assert session_file_name(r["timestamp"], r["sessionId"]) == r["fileName"]


def test_js_trim() -> None:
    assert js_trim("\ufeff\u00a0 name\u2028\u3000") == "name"
    assert js_trim("\x85x\x1c") == "\x85x\x1c"  # not JS white space


def test_listing_good_bad_empty_bom(tmp_path: Path, cases_dir: Path) -> None:
    d = tmp_path / "--p--"
    d.mkdir()
    _write(d / "a.jsonl", [
        _line(HDR),
        _line(_msg("u1", None, "user", "first question", ts=1764583201000)),
        _line(_msg("a1", "u1", "assistant", [{"type": "thinking", "thinking": "t"}, {"type": "text", "text": "answer"},
                                             {"type": "text", "text": "more"}], ts=1764583202000)),
        _line({"type": "session_info", "id": "s1", "parentId": "a1", "timestamp": "2025-12-01T10:00:03.000Z",
               "name": "  Named  "}),
        _line(_msg("t1", "s1", "toolResult", [{"type": "text", "text": "not listed text"}])),
    ])
    _write(d / "b.jsonl", [_line({**HDR, "id": "sess-2", "timestamp": "2025-12-02T00:00:00.000Z"})])
    (d / "empty.jsonl").write_bytes(b"")
    (d / "blank.jsonl").write_bytes(b"\n \n\r\n")
    (d / "garbage.jsonl").write_bytes(b"not json\n{\"type\":\"message\",\"id\":\"x\"}\n")
    (d / "entry-first.jsonl").write_bytes(b'{"type":"message","id":"x","parentId":null}\n' + _line(HDR).encode() + b"\n")
    (d / "notes.txt").write_text("ignored")
    (d / "sub.jsonl").mkdir()
    shutil.copy(cases_dir / "F07-bom-crlf.jsonl", d / "bom.jsonl")
    shutil.copy(cases_dir / "F08-corrupt-header.jsonl", d / "corrupt.jsonl")
    before = _digest(d)

    problems: list[ListingProblem] = []
    progress: list[tuple[int, int]] = []
    infos = list_sessions(str(d), on_progress=lambda a, b: progress.append((a, b)), on_problem=problems.append)

    assert _digest(d) == before  # reading never writes
    assert [Path(i.path).name for i in infos] == ["bom.jsonl", "b.jsonl", "a.jsonl"]  # F07 is from 2026
    assert progress == [(i, 8) for i in range(1, 9)]  # 8 .jsonl files (not the folder)
    bad = {Path(p.path).name: p for p in problems}
    # The folder named sub.jsonl is not read, but said (as `ls` says it).
    assert set(bad) == {"empty.jsonl", "blank.jsonl", "garbage.jsonl", "entry-first.jsonl", "corrupt.jsonl",
                        "sub.jsonl"}
    assert "directory" in bad["sub.jsonl"].reason
    assert (bad["corrupt.jsonl"].line, bad["corrupt.jsonl"].offset) == (1, 0)
    assert "not valid JSON" in bad["corrupt.jsonl"].reason
    assert bad["entry-first.jsonl"].line == 1 and "message" in bad["entry-first.jsonl"].reason
    assert bad["garbage.jsonl"].line == 1

    a = infos[2]
    assert (a.id, a.cwd, a.name, a.parent_session_path) == ("sess-1", "/p", "Named", None)
    assert a.message_count == 3
    assert a.first_message == "first question"
    assert a.all_messages_text == "first question answer more"
    assert a.created == datetime(2025, 12, 1, 10, 0, tzinfo=timezone.utc)
    assert a.modified == datetime(2025, 12, 1, 10, 0, 2, tzinfo=timezone.utc)

    b = infos[1]
    assert (b.message_count, b.first_message, b.all_messages_text, b.name) == (0, "(no messages)", "", None)
    assert b.modified == datetime(2025, 12, 2, tzinfo=timezone.utc)  # header time

    bom = infos[0]
    assert bom.id == "0f1e2d3c-0007-4a5b-8c7d-000000000007"
    assert bom.name == "Readme summary"
    assert bom.message_count == 3
    assert not bom.first_message.endswith("\r")


def test_row_rules(tmp_path: Path) -> None:
    p = _write(tmp_path / "s.jsonl", [
        _line({**HDR, "parentSession": "/old.jsonl", "cwd": 5}),
        "{torn" + _line(_msg("u1", None, "user", "recovered", ts=10)),  # torn fragment + entry
        _line(_msg("u1", None, "user", "duplicate id: skipped", ts=99999999999999)),
        _line({"type": "message", "parentId": None, "message": {"role": "user", "content": "no id: skipped"}}),
        _line({**HDR, "id": "second header"}),
        _line(_msg("a1", "u1", "assistant", "", ts=5)),  # empty text: not in the text
        _line(_msg("c1", "a1", "custom", "custom role: counted, no text")),
        _line(_msg("u2", "c1", "user", [{"type": "text"}, {"type": "text", "text": 7}], ets="2025-12-01T11:00:00.000Z")),
        _line({"type": "session_info", "id": "s1", "parentId": "u2", "timestamp": "x", "name": "A"}),
        _line({"type": "session_info", "id": "s2", "parentId": "s1", "timestamp": "x", "name": " \u3000 "}),
        "",
        '{"partial": ',
    ], end="\n")
    info = read_session_info(str(p))
    assert info.cwd == "" and info.parent_session_path == "/old.jsonl"
    assert info.message_count == 4
    assert info.first_message == "recovered"
    assert info.all_messages_text == "recovered  7"  # Array#join prints a missing text as ""
    assert info.name is None  # a whitespace-only name clears it (Pi 0.73.1)
    # latest of numeric timestamps and entry times: u2 has no number, its entry time counts
    assert info.modified == datetime(2025, 12, 1, 11, 0, tzinfo=timezone.utc)


def test_modified_falls_back_to_mtime(tmp_path: Path) -> None:
    p = _write(tmp_path / "s.jsonl", [_line({**HDR, "timestamp": "garbage"}), _line(_msg("u", None, "user", "x", ts=-5))])
    os.utime(p, (1_700_000_000, 1_700_000_000))
    info = read_session_info(str(p))
    assert info.modified == datetime.fromtimestamp(1_700_000_000, timezone.utc)
    assert info.created == info.modified


def test_v1_file_counts_entries_without_ids(cases_dir: Path, tmp_path: Path) -> None:
    shutil.copy(cases_dir / "F22-v1-legacy.jsonl", tmp_path / "v1.jsonl")
    info = read_session_info(str(tmp_path / "v1.jsonl"))
    assert info.message_count > 0 and info.first_message != "(no messages)"


def test_v1_entry_times_count_for_modified(tmp_path: Path) -> None:
    """Pi's listing reads a version 1 file's entries as they are (buildSessionInfo,
    getLastActivityTime): a message without a numeric timestamp counts its entry's."""
    (tmp_path / "p").mkdir()
    p = _write(tmp_path / "p" / "v1.jsonl", [
        _line({"type": "session", "id": "v1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}),
        _line({"type": "message", "timestamp": "2025-06-01T00:00:00.000Z", "message": {"role": "user", "content": "hi"}}),
        _line({"type": "message", "timestamp": "2025-05-01T00:00:00.000Z", "message": {"role": "assistant"}}),
    ])
    june = datetime(2025, 6, 1, tzinfo=timezone.utc)
    assert read_session_info(str(p)).modified == june
    for kw in ({"no_cache": True}, {"catalog": str(tmp_path / "c.sqlite3")}):
        [info] = list_sessions(str(tmp_path / "p"), **kw)  # type: ignore[arg-type]
        assert (info.modified, info.all_messages_text) == (june, "hi")


def test_invalid_raises(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_bytes(b"")
    with pytest.raises(InvalidSessionError):
        read_session_info(str(tmp_path / "e.jsonl"))
    (tmp_path / "n.jsonl").write_bytes(b'{"type":"session","id":5}\n')
    with pytest.raises(InvalidSessionError, match="no string id"):
        read_session_info(str(tmp_path / "n.jsonl"))


def test_list_all_and_missing_root(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    for i, sub in enumerate(["--a--", "--b--"]):
        (root / sub).mkdir(parents=True)
        _write(root / sub / f"{i}.jsonl", [
            _line({**HDR, "id": f"id{i}"}),
            _line(_msg("u", None, "user", "q", ts=1764583201000 + i)),
        ])
    _write(root / "top-level.jsonl", [_line(HDR)])  # not inside a project folder: not listed
    progress: list[tuple[int, int]] = []
    infos = list_all_sessions(str(root), on_progress=lambda a, b: progress.append((a, b)))
    assert [i.id for i in infos] == ["id1", "id0"]
    assert progress == [(1, 2), (2, 2)]
    assert list_all_sessions(str(tmp_path / "nope")) == []
    assert list_sessions(str(tmp_path / "nope")) == []


def test_corpus_files_list_like_pi(corpus_dir: Path, tmp_path: Path) -> None:
    """Every corpus session lists; its id, message count and name are Pi's."""
    index = json.loads((corpus_dir / "index.json").read_text())
    for sc in index["scenarios"]:
        name = sc["name"]
        expected = json.loads((corpus_dir / f"{name}.expected.json").read_text())
        if expected["header"] is None:
            continue
        info = read_session_info(str(corpus_dir / f"{name}.jsonl"))
        assert info.id == expected["sessionId"], name
        if "duplicate" not in name:
            entries = expected["entryIds"]
            assert info.message_count <= len(entries), name
        assert info.name == expected["sessionName"], name


def test_manager_list_reports_files_it_leaves_out(tmp_path: Path) -> None:
    from sessiontree import ListingProblem, SessionManager

    good = tmp_path / "2026-01-01T00-00-00-000Z_good.jsonl"
    good.write_bytes(
        b'{"type":"session","version":3,"id":"good","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"type":"sess\n{"type":"message","id":"a1","parentId":null}\n')
    problems: list[ListingProblem] = []
    infos = SessionManager.list("/p", str(tmp_path), on_problem=problems.append)
    assert [i.id for i in infos] == ["good"]
    assert [(p.path, p.line, p.offset) for p in problems] == [(str(bad), 1, 0)]


def test_list_folders_reports_what_is_not_a_regular_file(tmp_path: Path) -> None:
    """A folder or a FIFO named *.jsonl is reported with why, never opened (an attack saw
    the session picker count 1 file not a session where ``ls`` listed 3)."""
    from sessiontree._listing import list_folders

    (tmp_path / "good.jsonl").write_bytes(
        b'{"type":"session","version":3,"id":"good","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
    )
    (tmp_path / "garbage.jsonl").write_bytes(b"garbage\n")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    os.mkfifo(tmp_path / "fifo.jsonl")  # opening it for reading would block: the test would hang
    (tmp_path / "dir.jsonl").mkdir()
    problems: list[ListingProblem] = []
    for no_cache in (True, False):
        problems.clear()
        infos = list_folders([str(tmp_path)], on_problem=problems.append, no_cache=no_cache,
                             catalog=tmp_path / "c.sqlite3")
        assert [i.id for i in infos] == ["good"]
        why = {Path(p.path).name: p.reason for p in problems}
        assert set(why) == {"garbage.jsonl", "empty.jsonl", "fifo.jsonl", "dir.jsonl"}, why
        assert "directory" in why["dir.jsonl"] and "not a regular file" in why["fifo.jsonl"], why
