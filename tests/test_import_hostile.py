"""Importers on hostile sources (adversary round 59): a re-import of values nested near
the 1,024 levels a line may hold (F1), record values of a type the format never writes
there (F3), and an agent's store holding what is no readable transcript (F2).

Every source is written here from the formats' facts (docs/IMPORT.md), never copied.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sessiontree._jsonl import encode_entry, values_equal
from sessiontree.cli import main
from sessiontree.importers import import_claude, import_codex

from _import_helpers import open_clean

SID = "5e551059-0000-4000-8000-000000000001"
TID = "0199a059-0000-7000-8000-000000000001"
COMMON = {"isSidechain": False, "cwd": "/home/u/proj", "sessionId": SID, "timestamp": "2025-11-07T10:00:00.000Z"}


def dumps(obj: Any) -> str:
    return encode_entry(obj).decode()  # iterative: json.dumps recurses too deep for F1's values


def record(uuid: str, parent: str | None, kind: Any, message: Any) -> str:
    return dumps({"parentUuid": parent, **COMMON, "type": kind, "message": message, "uuid": uuid})


def answer(mid: str, text: str) -> dict[str, Any]:
    return {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 3, "output_tokens": 5}}


def claude_file(folder: Path, lines: list[str], sid: str = SID) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / f"{sid}.jsonl"
    src.write_text("\n".join(lines) + "\n")
    return src


def rollout_line(kind: Any, payload: dict[str, Any]) -> str:
    return dumps({"timestamp": "2025-11-07T10:00:00.000Z", "type": kind, "payload": payload})


def rollout_file(tmp_path: Path, lines: list[str]) -> Path:
    src = tmp_path / "sessions" / "2025" / "11" / "07" / f"rollout-2025-11-07T10-00-00-{TID}.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text("\n".join(lines) + "\n")
    return src


# ------------------------------------------------------------------ F1: deep values again


def test_values_equal_is_python_equality_at_any_depth() -> None:
    deep_a: Any = "x"
    deep_b: Any = "x"
    for _ in range(5000):
        deep_a, deep_b = [deep_a], [deep_b]
    assert values_equal(deep_a, deep_b)
    assert not values_equal(deep_a, [[["y"]]])
    cases = [({"a": 1, "b": [1.0, None]}, {"b": [1, None], "a": 1}), ({"a": 1}, {"a": 1, "b": 2}), ([1, 2], [2, 1]),
             ({"a": []}, {"a": {}}), ([{}], [[]]), (True, 1), ("1", 1), (None, {}), (float("nan"), float("nan"))]
    for a, b in cases:
        assert values_equal(a, b) is (a == b), (a, b)


def test_a_claude_reimport_of_a_tool_input_990_deep_changes_nothing(tmp_path: Path, backend: str) -> None:
    """The first import wrote it (test_import_damaged_lines F6); the second compared the
    stored entry with the planned one by ``==``, which raised ``RecursionError``."""
    deep: Any = {}
    for _ in range(990):
        deep = [deep]
    call = {"id": "m1", "role": "assistant", "model": "m", "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {"k": deep}}]}
    src = claude_file(tmp_path / "src", [record("u1", None, "user", {"role": "user", "content": "hi"}),
                                          record("a1", "u1", "assistant", call)])
    [first] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert first.path and first.entries_added == 2, first
    before = Path(first.path).read_bytes()
    [again] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert (again.entries_added, again.conflicts, again.continued) == (0, {}, 0), again
    assert Path(first.path).read_bytes() == before
    open_clean(first.path, backend)


def test_a_codex_reimport_of_arguments_1000_deep_changes_nothing(tmp_path: Path, backend: str) -> None:
    args = "[" * 1000 + "]" * 1000
    meta = rollout_line("session_meta", {"id": TID, "timestamp": "2025-11-07T10:00:00.000Z", "cwd": "/home/u/cx"})
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}
    call = {"type": "function_call", "name": "f", "call_id": "c1", "arguments": args}
    tokens = rollout_line("event_msg", {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1, "total_tokens": 11},
        "last_token_usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1, "total_tokens": 11}}})
    src = rollout_file(tmp_path, [meta, rollout_line("response_item", user), rollout_line("response_item", call), tokens])
    [first] = import_codex(src, to=tmp_path / "out", backend=backend)
    assert first.path and first.problems == [], first
    before = Path(first.path).read_bytes()
    [again] = import_codex(src, to=tmp_path / "out", backend=backend)
    assert (again.entries_added, again.conflicts, again.continued) == (0, {}, 0), again
    assert Path(first.path).read_bytes() == before


# ------------------------------------------------------- F3: values of the wrong type


@pytest.mark.parametrize("case", ["object type above a response", "list type", "list message of a first line"])
def test_a_claude_value_of_the_wrong_type_is_skipped_or_kept_never_a_traceback(
        tmp_path: Path, backend: str, case: str) -> None:
    """IMPORT.md: bad content never raises. A record whose ``type`` is an object or a
    list (a set lookup raised ``TypeError``), and a response's first line whose
    ``message`` is a list (``.get`` on it raised ``AttributeError``)."""
    prompt = record("u1", None, "user", {"role": "user", "content": "hi"})
    if case == "object type above a response":
        lines = [prompt, record("x1", "u1", {"a": 1}, {"role": "user", "content": "odd"}),
                 record("a1", "x1", "assistant", answer("m1", "THE ANSWER"))]
    elif case == "list type":
        lines = [prompt, record("a1", "u1", "assistant", answer("m1", "THE ANSWER")),
                 record("x1", "a1", ["progress"], {"role": "user", "content": "odd"})]
    else:
        lines = [prompt, record("a0", "u1", "assistant", [1]), record("a1", "a0", "assistant", answer("m1", "THE ANSWER"))]
    [r] = import_claude(claude_file(tmp_path / "src", lines), to=tmp_path / "out", backend=backend)
    assert r.path, r
    sm = open_clean(r.path, backend)
    assert "THE ANSWER" in json.dumps([e for e in sm.get_entries()])
    [again] = import_claude(claude_file(tmp_path / "src", lines), to=tmp_path / "out", backend=backend)
    assert again.entries_added == 0 and again.conflicts == {}, again


def test_a_first_record_whose_type_is_an_object_tells_no_format(tmp_path: Path, backend: str) -> None:
    """The format check (``_detect``) looked an object ``type`` up in a set."""
    meta = rollout_line("session_meta", {"id": TID, "timestamp": "2025-11-07T10:00:00.000Z", "cwd": "/home/u/cx"})
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "THE QUESTION"}]}
    src = rollout_file(tmp_path, [rollout_line({"a": 1}, {}), meta, rollout_line("response_item", user)])
    [r] = import_codex(src, to=tmp_path / "out", backend=backend, include_incomplete=True)
    assert r.path and "THE QUESTION" in Path(r.path).read_text(), r


# ------------------------------------------- F2: the store holds no readable transcript


def test_the_claude_store_passes_over_what_is_no_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a PATH every ``.jsonl`` of the store was imported as a file: a FIFO, a
    folder or a dangling link named so ended the whole command at that name (the
    sessions listed after it never imported, those before it never reported), and so
    did a transcript that could not be read. A FIFO, folder or dangling link is passed
    over as a folder PATH passes it over; a transcript that cannot be read is reported,
    and the others are imported (exit 1)."""
    project = tmp_path / "claude" / "projects" / "-home-u-proj"
    lines = [record("u1", None, "user", {"role": "user", "content": "hi"}), record("a1", "u1", "assistant", answer("m1", "yo"))]
    claude_file(project, lines, "5e551059-0000-4000-8000-00000000000a")
    os.mkfifo(project / "5e551059-0000-4000-8000-00000000000b.jsonl")
    (project / "5e551059-0000-4000-8000-00000000000c.jsonl").mkdir()
    (project / "5e551059-0000-4000-8000-00000000000d.jsonl").symlink_to(tmp_path / "nowhere")
    claude_file(project, lines, "5e551059-0000-4000-8000-00000000000e")
    unreadable = str(claude_file(project, lines, "5e551059-0000-4000-8000-00000000000f"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))

    import sessiontree.importers.claude as claude

    real = claude.read_source

    def read_source(path: str, report: Any) -> Any:
        if path == unreadable:  # what a transcript of another user, or one removed since, gives
            raise PermissionError(13, "Permission denied", path)
        return real(path, report)

    monkeypatch.setattr(claude, "read_source", read_source)
    code = main(["import", "claude", "--out", str(tmp_path / "out"), "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 1
    assert sorted(Path(r["source"]).stem[-1] for r in rows) == ["a", "e", "f"], rows
    assert [r["error"] for r in rows if r["path"] is None] == [f"{unreadable}: Permission denied"]
    assert len(list((tmp_path / "out").glob("*.jsonl"))) == 2


# ---------------------------------------------- F4: another writer holds the session


def _conversation(n: int) -> list[str]:
    lines, parent = [], None
    for i in range(n):
        uuid = f"00000000-0000-4000-8000-{i:012x}"
        if i % 2:
            lines.append(record(uuid, parent, "assistant", answer(f"m{i}", f"a{i}")))
        else:
            lines.append(record(uuid, parent, "user", {"role": "user", "content": f"q{i}"}))
        parent = uuid
    return lines


def test_an_import_that_meets_the_writer_lock_fails_and_says_so(tmp_path: Path, backend: str) -> None:
    """Each append that met another writer's lock was taken for an entry the writer
    refused: all of them skipped one by one ("parent … was not written; made a root"
    for each next one), and the result said the session was imported (no error, exit
    0) with nothing written."""
    src = claude_file(tmp_path / "src", _conversation(4))
    [first] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert first.path and first.entries_added == 4
    src.write_text("\n".join(_conversation(10)) + "\n")  # the transcript grew
    from sessiontree import SessionManager

    with SessionManager.open(first.path, backend=backend) as other:  # another writer, e.g. a second import
        other.flush()  # takes the file's lock
        before = Path(first.path).read_bytes()
        [r] = import_claude(src, to=tmp_path / "out", backend=backend)
        assert r.path is None and r.entries_added == 0 and "another writer" in (r.error or ""), r
        assert not any("refused by the writer" in k for k in r.skipped), r
        assert Path(first.path).read_bytes() == before
    [done] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert done.path and done.entries_added == 6 and done.problems == [], done
    assert len(open_clean(done.path, backend).get_tree()) == 1


def test_an_import_whose_file_another_made_first_writes_nothing_and_says_so(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two imports of one new transcript at once: the second's first write finds the
    file the first made. Every later entry was counted refused, and the result said
    ``created`` with the entries held before that write "added", no error."""
    from sessiontree.importers import _common

    src = claude_file(tmp_path / "src", _conversation(6))
    [made] = import_claude(src, to=tmp_path / "first", backend=backend)
    assert made.path
    real = _common._Writer.create

    def create(*args: Any, **kwargs: Any) -> Any:
        mgr = real(*args, **kwargs)
        target = tmp_path / "out" / Path(made.path).name  # the other import puts it there first
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(Path(made.path).read_bytes())
        return mgr

    monkeypatch.setattr(_common._Writer, "create", create)
    [r] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert r.path is None and (r.created, r.entries_added) == (False, 0) and "refusing" in (r.error or ""), r
    assert (tmp_path / "out" / Path(made.path).name).read_bytes() == Path(made.path).read_bytes()


# ------------------------------------------- F6: a parent id that is another's tail


def test_a_codex_fork_is_linked_only_to_the_thread_its_id_names(tmp_path: Path, backend: str) -> None:
    """The parent rollout was the first whose file name ended with ``forked_from_id``:
    a fork naming ``a`` (an id cut short) was linked to the thread ``…-00000000000a``,
    its ``parentSessionId`` replaced by that thread's id."""
    def rollout(tid: str, **meta: Any) -> Path:
        folder = tmp_path / "sessions" / "2025" / "11" / "07"
        folder.mkdir(parents=True, exist_ok=True)
        src = folder / f"rollout-2025-11-07T10-00-00-{tid}.jsonl"
        src.write_text("\n".join([
            rollout_line("session_meta", {"id": tid, "timestamp": "2025-11-07T10:00:00.000Z", "cwd": "/home/u/cx", **meta}),
            rollout_line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}),
            rollout_line("response_item", {"type": "message", "role": "assistant",
                                           "content": [{"type": "output_text", "text": "a"}]}),
            rollout_line("event_msg", {"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
                "last_token_usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})]) + "\n")
        return src

    [other] = import_codex(rollout("0199a059-0000-7000-8000-00000000000a"), to=tmp_path / "out", backend=backend)
    [right] = import_codex(rollout("0199a059-0000-7000-8000-00000000000c"), to=tmp_path / "out", backend=backend)
    [cut] = import_codex(rollout("0199a059-0000-7000-8000-00000000000b", forked_from_id="a"), to=tmp_path / "out",
                         backend=backend)
    assert cut.path and cut.role == "fork" and cut.parent_session is None, cut
    assert json.loads(Path(cut.path).read_text().splitlines()[0])["parentSessionId"] == "a"
    [fork] = import_codex(rollout("0199a059-0000-7000-8000-00000000000d",
                                  forked_from_id="0199a059-0000-7000-8000-00000000000c"), to=tmp_path / "out",
                          backend=backend)
    assert fork.parent_session == right.path != other.path, fork


# ------------------------------------- F7: a session id that ends another one's name


def test_a_session_whose_id_ends_another_ones_file_name_gets_its_own_file(tmp_path: Path, backend: str) -> None:
    """The imported file of a session was looked for as ``*_<id>.jsonl``: session ``b``
    found session ``x_b``'s file (``…_x_b.jsonl``) and was refused for good ("exists and
    holds another session")."""
    def transcript(name: str, sid: str) -> Path:
        src = tmp_path / "src" / name
        src.parent.mkdir(exist_ok=True)
        common = {**COMMON, "sessionId": sid}
        src.write_text("\n".join(dumps({**common, "parentUuid": p, "type": t, "message": m, "uuid": u}) for p, t, m, u in [
            (None, "user", {"role": "user", "content": f"hi {sid}"}, f"u-{sid}"),
            (f"u-{sid}", "assistant", answer("m1", "yo"), f"a-{sid}")]) + "\n")
        return src

    [first] = import_claude(transcript("first.jsonl", "x_b"), to=tmp_path / "out", backend=backend)
    [second] = import_claude(transcript("second.jsonl", "b"), to=tmp_path / "out", backend=backend)
    assert first.path and second.path and second.path != first.path and second.error is None, second
    assert open_clean(second.path, backend).get_header()["id"] == "b"
    [again] = import_claude(transcript("second.jsonl", "b"), to=tmp_path / "out", backend=backend)
    assert again.path == second.path and again.entries_added == 0, again


# ---------------------------------------------------- F10: a folder link that loops


def test_a_codex_folder_with_a_link_that_loops_is_read_once(tmp_path: Path) -> None:
    """``import codex DIR`` globbed ``DIR/**/*.jsonl``, which follows a folder link that
    loops (``loop -> .``, ``up -> ..``) into ever longer paths: the command never ended."""
    import subprocess
    import sys

    meta = rollout_line("session_meta", {"id": TID, "timestamp": "2025-11-07T10:00:00.000Z", "cwd": "/home/u/cx"})
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}
    src = rollout_file(tmp_path, [meta, rollout_line("response_item", user)])
    root = tmp_path / "sessions"
    (root / "loop").symlink_to(".")
    (src.parent / "up").symlink_to("..")
    p = subprocess.run([sys.executable, "-m", "sessiontree", "import", "codex", str(root), "--out", str(tmp_path / "out"),
                        "--include-incomplete", "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    [r] = json.loads(p.stdout)
    assert r["source"] == str(src) and r["path"], r


# ------------------------------------------------------------- an empty --out / OUT


def test_an_empty_out_is_a_usage_error(tmp_path: Path) -> None:
    """``import --out ''`` wrote into the working folder; ``generate ''`` said the name
    was "a symbolic link to nothing"."""
    import subprocess
    import sys

    src = claude_file(tmp_path / "src", [record("u1", None, "user", {"role": "user", "content": "hi"}),
                                          record("a1", "u1", "assistant", answer("m1", "yo"))])
    for args in (["import", "claude", str(src), "--out", ""], ["generate", "", "--entries", "3"],
                 ["generate", "--out", "", "--entries", "3"]):
        p = subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, timeout=60,
                           cwd=tmp_path)
        assert p.returncode == 2 and "empty" in p.stderr and "symbolic link" not in p.stderr, (args, p.stderr)
    assert sorted(os.listdir(tmp_path)) == ["src"]


@pytest.mark.parametrize("named", ["../outside/" + SID, "/ABS/" + SID])
def test_a_subagents_session_id_names_a_file_beside_it_only(tmp_path: Path, backend: str, named: str) -> None:
    """A subagent transcript's own ``sessionId`` finds its parent's transcript beside
    it by name only: a path in it (``../x``, an absolute one) was joined to the folder
    and a transcript anywhere was read and linked as the parent (adversary 59)."""
    outside = claude_file(tmp_path / "outside", [record("u1", None, "user", {"role": "user", "content": "hi"}),
                                                 record("a1", "u1", "assistant", answer("m1", "hello"))])
    named = named.replace("/ABS", str(tmp_path / "outside"))
    agents = tmp_path / "agents"
    agents.mkdir()
    side = {**COMMON, "isSidechain": True, "agentId": "x1", "sessionId": named}
    (agents / "agent-x1.jsonl").write_text(
        dumps({"parentUuid": None, **side, "type": "user", "message": {"role": "user", "content": "plan"},
               "uuid": "s1"}) + "\n"
        + dumps({"parentUuid": "s1", **side, "type": "assistant", "message": answer("m2", "done"), "uuid": "s2"})
        + "\n")
    (parent,) = import_claude(outside, to=tmp_path / "out", backend=backend)
    assert parent.path is not None, parent
    (result,) = import_claude(agents / "agent-x1.jsonl", to=tmp_path / "out", backend=backend)
    assert result.error is None and result.parent_session is None, result
    with open_clean(str(result.path), backend) as sm:
        assert "parentSession" not in sm.get_header()


def test_an_import_that_another_finished_first_reports_no_problem(
        tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two imports of a grown transcript at once, the other one finishing between this
    one's read of the file and its first append: that append finds its entry there
    (``EntryExistsError``), which was reported as an entry the writer refused (a false
    problem line, adversary 59). The same entry is left be, as every later one is."""
    import subprocess
    import sys

    from sessiontree.importers import _common

    src = claude_file(tmp_path / "src", _conversation(4))
    [first] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert first.path and first.entries_added == 4
    src.write_text("\n".join(_conversation(10)) + "\n")
    real = _common._append
    ran: list[int] = []

    def append(mgr: Any, p: Any) -> None:
        if not ran:
            ran.append(subprocess.run(
                [sys.executable, "-m", "sessiontree", "import", "claude", str(src), "--out", str(tmp_path / "out"),
                 "--backend", backend], capture_output=True, text=True, timeout=120).returncode)
        real(mgr, p)

    monkeypatch.setattr(_common, "_append", append)
    [r] = import_claude(src, to=tmp_path / "out", backend=backend)
    assert ran == [0]
    assert r.path == first.path and r.error is None and r.problems == [] and r.skipped == {}, r
    assert r.entries_added == 0 and r.conflicts == {}, r
    with open_clean(str(first.path), backend) as sm:
        assert len(sm) == 10 and len(sm.get_tree()) == 1
