"""One grammar for every command (issue 26 item 3), as real subprocesses on both
backends: each command that reads sessions (``ls``, ``search``, ``usage``, ``index``,
``check``, ``export --format parquet``) over each kind of scope (a FILE, a folder of
sessions, a folder of project folders, Pi's store, the current project) reads exactly
the session files a brute-force walk of the scope finds, with ``--catalog FILE`` or
``--no-cache`` as well; ``--out`` for every output
(``--to`` kept); paths ``ls`` prints that other commands take; ids ``tree`` shows that
``--leaf`` takes, an ambiguous prefix named with its candidates; ``check`` over a
folder with its total and ``--problems``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontree._places import session_dir_for_cwd
from sessiontree.generate import generate_session

from _shared import CASES, CORPUS

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "SESSIONTREE_BACKEND")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=full,
                          cwd=cwd, timeout=300, encoding="utf-8", errors="replace")


def _json(p: subprocess.CompletedProcess[str]) -> object:
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Pi's store (two projects, one of them the folder the commands run in), and a
    folder of project folders outside it."""
    base = tmp_path_factory.mktemp("grammar")
    here = base / "work" / "proj"
    here.mkdir(parents=True)
    store = base / "agent" / "sessions"
    cwds = [os.path.realpath(here), "/home/user/other"]
    for i in range(5):
        cwd = cwds[i % 2]
        folder = Path(session_dir_for_cwd(cwd, str(store)))
        folder.mkdir(parents=True, exist_ok=True)
        generate_session(folder / f"s{i}.jsonl", size_bytes=3_000 + 500 * i, seed=700 + i, cwd=cwd)
    root = base / "history"
    for i in range(4):
        folder = root / f"--p{i % 2}--"
        folder.mkdir(parents=True, exist_ok=True)
        generate_session(folder / f"h{i}.jsonl", size_bytes=3_000 + 400 * i, seed=800 + i, cwd=f"/p{i % 2}")
    env = {"HOME": str(base / "home"), "PI_CODING_AGENT_DIR": str(base / "agent"),
           "XDG_CACHE_HOME": str(base / "cache"), "SESSIONTREE_CATALOG": str(base / "cache" / "c.sqlite3")}
    return {"base": base, "here": here, "store": store, "root": root, "env": env}


def _below(folder: Path) -> set[str]:
    """The brute-force answer: every .jsonl file under ``folder``."""
    return {os.path.realpath(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs if f.endswith(".jsonl")}


def _scopes(w: dict[str, object]) -> list[tuple[str, list[str], set[str]]]:
    store, root, here = Path(str(w["store"])), Path(str(w["root"])), Path(str(w["here"]))
    mine = Path(session_dir_for_cwd(os.path.realpath(here), str(store)))
    one = root / "--p1--" / "h1.jsonl"
    return [
        ("file", [str(one)], {os.path.realpath(one)}),
        ("folder of sessions", [str(root / "--p0--")], _below(root / "--p0--")),
        ("folder of project folders", [str(root)], _below(root)),
        ("file and folder", [str(one), str(root / "--p0--")], _below(root / "--p0--") | {os.path.realpath(one)}),
        ("Pi's store", ["--all"], _below(store)),
        ("the current project", [], _below(mine)),
    ]


def _read(command: str, scope: list[str], w: dict[str, object], backend: str) -> set[str]:
    """The session files ``command`` read over ``scope`` (its catalog flags among them),
    from its JSON."""
    env = dict(w["env"])  # type: ignore[call-overload]
    here = Path(str(w["here"]))
    base = ["--backend", backend]
    if command == "ls":
        got = _json(run(*base, "ls", *scope, "--json", env=env, cwd=here))
        return {os.path.realpath(s["path"]) for s in got["sessions"]}  # type: ignore[index]
    if command == "search":
        got = _json(run(*base, "search", "re:.", *scope, "--limit", "0", "--json", env=env, cwd=here))
        paths = {os.path.realpath(h["path"]) for h in got["hits"]}  # type: ignore[index]
        assert got["files"] == len(paths)  # type: ignore[index]
        return paths
    if command == "usage":
        got = _json(run(*base, "usage", "session", *scope, "--json", env=env, cwd=here))
        return {os.path.realpath(x["key"]) for x in got["lines"]}  # type: ignore[index]
    if command == "index":
        got = _json(run(*base, "index", *scope, "--json", env=env, cwd=here))
        return {str(got["files"])}  # type: ignore[index]  (index names no file: their count)
    if command == "check":
        got = _json(run(*base, "check", *scope, "--json", env=env, cwd=here))
        return {os.path.realpath(r["file"]) for r in got}  # type: ignore[union-attr]
    assert command == "export"
    out = Path(str(w["base"])) / f"pq-{backend}-{abs(hash(tuple(scope)))}"
    got = _json(run(*base, "export", *scope, "--format", "parquet", "--out", str(out), "--json", env=env, cwd=here))
    assert not got["failed"]  # type: ignore[index]
    import pyarrow.parquet as pq

    table = pq.read_table(out / "sessions", columns=["path"])
    return {os.path.realpath(p) for p in table.column("path").to_pylist()}


@pytest.mark.parametrize("command", ["ls", "search", "usage", "index", "check", "export"])
def test_every_command_reads_every_kind_of_scope(world: dict[str, object], backend: str, command: str) -> None:
    if command == "export":
        pytest.importorskip("pyarrow")
    catalog = str(Path(str(world["base"])) / "cache" / f"named-{command}-{backend}.sqlite3")
    flags = ([], ["--catalog", catalog], ["--no-cache"])  # the catalog flags, the same on every command
    for k, (name, scope, want) in enumerate(_scopes(world)):
        got = _read(command, [*scope, *flags[k % len(flags)]], world, backend)
        expected = want
        if command == "index":
            expected = {str(len(want))}
        elif command == "usage":  # the sessions that recorded some usage (a short one may hold no reply)
            expected = {f for f in want if '"usage":{' in Path(f).read_text()}
            assert expected
        assert got == expected, (command, name)


def test_a_catalog_in_pis_folder_is_refused_by_every_command(world: dict[str, object], tmp_path: Path) -> None:
    """``--catalog`` means the same on every command that takes a scope: a path inside
    Pi's folders is a usage error (status 2) everywhere, ``check`` and ``export`` too
    (which read every file in full and take the flags as the others do)."""
    env = dict(world["env"])  # type: ignore[call-overload]
    bad = ["--catalog", str(Path(str(world["store"])) / "c.sqlite3")]
    root = str(world["root"])
    for args in (["ls", root], ["search", "x", root], ["usage", root], ["index", root], ["check", root],
                 ["export", root, "--format", "parquet", "--out", str(tmp_path / "pq")],
                 ["export", str(next(Path(root).rglob("*.jsonl"))), "--format", "markdown"]):
        p = run(*args, *bad, env=env)
        assert p.returncode == 2 and "must not live inside Pi's folder" in p.stderr, (args, p.stderr)
    assert not (Path(str(world["store"])) / "c.sqlite3").exists()


def test_an_empty_scope_says_so(world: dict[str, object], tmp_path: Path) -> None:
    """A folder with no Pi sessions for it: nothing found, said with where it looked and
    what to try; ``export`` and ``check`` fail (an empty dataset or "all clean" would
    read as done), the listings answer 0."""
    env = dict(world["env"])  # type: ignore[call-overload]
    for args in (["ls"], ["search", "x"], ["usage"], ["index"]):
        p = run(*args, env=env, cwd=tmp_path)
        assert p.returncode == 0 and "--all for every project" in p.stderr, (args, p.stderr)
    for args in (["check"], ["export", "--format", "parquet", "--out", str(tmp_path / "pq")]):
        p = run(*args, env=env, cwd=tmp_path)
        assert p.returncode == 1 and "no session" in p.stderr and "--all" in p.stderr, (args, p.stderr)
    missing = run("ls", str(tmp_path / "nope"), env=env)
    assert missing.returncode == 1 and "no such file or folder" in missing.stderr


def test_export_of_a_history_root_writes_every_session(world: dict[str, object], tmp_path: Path) -> None:
    """The seam of issue 26: ``export ROOT --format parquet`` wrote 0 sessions and exited 0."""
    pytest.importorskip("pyarrow")
    got = _json(run("export", str(world["root"]), "--format", "parquet", "--out", str(tmp_path / "pq"), "--json",
                    env=dict(world["env"])))  # type: ignore[call-overload]
    assert got["written"] == 4 and not got["failed"]  # type: ignore[index]


def test_old_spellings_still_work_with_a_note(world: dict[str, object]) -> None:
    env = dict(world["env"])  # type: ignore[call-overload]
    root = str(world["root"])
    new = _json(run("ls", root, "--json", env=env))
    old = run("ls", root, "--all", "--json", env=env)
    assert json.loads(old.stdout) == new and "note: --all is not needed" in old.stderr
    this = run("usage", "--this", "--json", env=env, cwd=Path(str(world["here"])))
    assert this.returncode == 0 and "note: --this is the default" in this.stderr
    p = run("ls", root, "--cwd", "/x", env=env)
    assert p.returncode == 2 and "--cwd DIR alone" in p.stderr
    # An option before the paths: argparse would have refused them.
    late = _json(run("search", "re:.", "--limit", "0", root, "--json", env=env))
    assert late["files"] == 4  # type: ignore[index]
    after = _json(run("usage", "--utc", "session", root, "--json", env=env))
    assert after["report"] == "session"  # type: ignore[index]


def test_out_everywhere_and_to_kept(world: dict[str, object], tmp_path: Path, backend: str) -> None:
    """``--out DIR`` is the output flag of ``fork`` and ``import`` too; ``--to`` still
    works; ``-`` (standard output) is refused where a command writes files."""
    from sessiontree.cli import build_parser

    env = dict(world["env"])  # type: ignore[call-overload]
    src = next(f for f in sorted(Path(str(world["root"])).rglob("*.jsonl")) if '"role":"assistant"' in f.read_text())
    leaf = _json(run("context", str(src), "--json", env=env))["leafId"]  # type: ignore[index]
    for flag in ("--out", "--to"):
        p = run("--backend", backend, "fork", str(src), "--leaf", str(leaf), flag, str(tmp_path / flag), "--json",
                env=env)
        forked = _json(p)
        assert Path(forked["path"]).parent == tmp_path / flag  # type: ignore[index]
    p = run("fork", str(src), "--leaf", str(leaf), "--out", "-", env=env)
    assert p.returncode == 2 and "--out DIR" in p.stderr
    for flag in ("--out", "--to"):
        args = build_parser(["import"]).parse_args(["import", "claude", "x.jsonl", flag, "D"])
        assert args.out == "D"
    md = run("export", str(src), "--format", "markdown", "--out", "-", env=env)
    assert md.returncode == 0 and md.stdout.startswith("#")
    # generate: OUT or --out OUT, the same bytes; both or neither is a usage error
    made = [tmp_path / "g1.jsonl", tmp_path / "g2.jsonl"]
    assert run("generate", str(made[0]), "--size", "20KB", env=env).returncode == 0
    assert run("generate", "--out", str(made[1]), "--size", "20KB", env=env).returncode == 0
    assert made[0].read_bytes() == made[1].read_bytes()
    streamed = run("generate", "--out", "-", "--size", "20KB", env=env)
    assert streamed.returncode == 0 and streamed.stdout.encode() == made[0].read_bytes()
    for args in ([], [str(tmp_path / "g3.jsonl"), "--out", str(tmp_path / "g4.jsonl")]):
        p = run("generate", *args, "--size", "20KB", env=env)
        assert p.returncode == 2 and "--out OUT" in p.stderr, p.stderr


def test_ls_prints_paths_other_commands_take(world: dict[str, object], tmp_path: Path) -> None:
    """Every path ``ls`` prints (last column, piped) opens with ``info``; a folder with
    a space in its name is quoted as a shell takes it."""
    env = dict(world["env"])  # type: ignore[call-overload]
    spaced = tmp_path / "my sessions"
    spaced.mkdir()
    generate_session(spaced / "a.jsonl", size_bytes=3_000, seed=5, cwd="/w")
    for folder in (str(world["root"]), str(spaced)):
        p = run("ls", folder, env=env)
        assert p.returncode == 0, p.stderr
        rows = p.stdout.splitlines()[1:-1]
        assert rows
        import shlex

        for row in rows:
            path = shlex.split(row.split("  ")[-1])[0]
            info = run("info", path, "--json", env=env)
            assert info.returncode == 0, (row, info.stderr)


def test_search_and_check_print_paths_other_commands_take(tmp_path: Path) -> None:
    """A path ``search`` and ``check`` print (a folder with a space and a quote in its
    name) is the one ``ls`` prints: quoted as a shell takes it back."""
    import shlex

    folder = tmp_path / "sp ace" / "d'x"
    folder.mkdir(parents=True)
    _session_with_title(folder / "my session.jsonl", "find the wombat")
    reply = {"type": "message", "id": "a1", "parentId": "m1", "timestamp": "2025-01-01T00:00:02.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p",
                         "model": "m", "usage": {"input": 1, "output": 2, "totalTokens": 3}, "timestamp": 2}}
    with (folder / "my session.jsonl").open("a") as f:
        f.write(json.dumps(reply) + "\n")  # usage, for `usage session`
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    want = shlex.quote(str(folder / "my session.jsonl"))
    shown = {}
    for command in (["ls"], ["search", "wombat"], ["check"], ["usage", "session"]):
        p = run(*command, str(tmp_path), env=env)
        assert p.returncode == 0, p.stderr
        shown[command[0]] = [line for line in p.stdout.splitlines() if "my session" in line]
        assert any(want in line for line in shown[command[0]]), (command, p.stdout)
    assert run("info", shlex.split(want)[0], env=env).returncode == 0


@pytest.mark.parametrize("columns", [60, 80])
def test_search_fits_the_terminal_in_cells(tmp_path: Path, columns: int) -> None:
    """On a terminal no line of ``search`` is wider than it, but a path (on its own
    line, never cut); a cut name or snippet ends in ``…``."""
    from rich.cells import cell_len

    folder = tmp_path / ("深い" * 3)
    folder.mkdir()
    _session_with_title(folder / "a.jsonl", "find the wombat " + "型エラーを直して 🐛🐛🐛 " * 12)
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": str(columns)}
    p = run("--color", "always", "search", "wombat", str(folder), env=env)
    assert p.returncode == 0, p.stderr
    lines = [_ANSI.sub("", x) for x in p.stdout.splitlines()]
    path = str(folder / "a.jsonl")
    assert any(line.strip() == path for line in lines), lines
    for line in lines:
        assert cell_len(line) <= columns or line.strip() == path, (columns, line)
    assert any(line.endswith("…") for line in lines), lines


def _session_with_title(path: Path, title: str) -> None:
    head = {"type": "session", "version": 3, "id": path.stem, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    msg = {"type": "message", "id": "m1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
           "message": {"role": "user", "content": title, "timestamp": 1}}
    path.write_text(json.dumps(head) + "\n" + json.dumps(msg, ensure_ascii=False) + "\n", encoding="utf-8")


@pytest.mark.parametrize("columns", [40, 60, 80, 120, 200])
def test_ls_fits_the_terminal_in_cells(tmp_path: Path, columns: int) -> None:
    """Wide characters (CJK, emoji) count two cells; no line is wider than the terminal
    but a path longer than the line itself, which goes on its own line uncut."""
    from rich.cells import cell_len

    folder = tmp_path / ("深い" * 3)
    folder.mkdir()
    _session_with_title(folder / "a.jsonl", "型エラーを直して 🐛🐛🐛 " * 6)
    _session_with_title(folder / "b.jsonl", "short")
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3"), "COLUMNS": str(columns)}
    p = run("--color", "always", "ls", str(folder), env=env)
    assert p.returncode == 0, p.stderr
    lines = [_ANSI.sub("", x) for x in p.stdout.splitlines()]
    paths = [str(folder / "a.jsonl"), str(folder / "b.jsonl")]
    for line in lines:
        if cell_len(line) > columns:
            assert line.strip() in paths, (columns, line)
    assert sum(1 for x in lines for path in paths if x.endswith(path)) == 2


def _uuid_session(path: Path) -> list[str]:
    """A session whose ids are time-ordered UUIDs (LangGraph's checkpoint ids): their
    first 8 characters are all the same."""
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}]
    ids, parent = [], None
    for k in range(6):
        eid = f"1f1f0cdd-{k:04x}-6abc-8def-0123456789ab"
        msg: dict[str, object] = {"role": "user" if k % 2 == 0 else "assistant",
                                  "content": [{"type": "text", "text": f"m{k}"}], "timestamp": 1}
        if k % 2:
            msg.update(provider="p", model="m", api="x", usage={"input": 1, "output": 1})  # no stopReason
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": f"2025-01-01T00:00:0{k}.000Z",
                      "message": msg})
        ids.append(eid)
        parent = eid
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ids


def test_ids_tree_shows_are_taken_everywhere(tmp_path: Path, backend: str) -> None:
    """``tree`` shows ids as long as the file needs to tell them apart (not 8
    characters, which all six share); each shown id is taken by ``context --leaf``,
    ``fork --leaf``, ``export --leaf`` and ``tree --from``; an ambiguous prefix is an
    error naming its candidates."""
    f = tmp_path / "v7.jsonl"
    ids = _uuid_session(f)
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    b = ["--backend", backend]
    tree = run(*b, "tree", str(f), "--full", env=env)
    assert tree.returncode == 0, tree.stderr
    shown = [line.split()[1] if line.startswith("* ") else line.split()[0] for line in tree.stdout.splitlines()]
    assert len(set(shown)) == 6 and all(any(i.startswith(s) for i in ids) for s in shown), shown
    for short, full in zip(shown, ids):
        got = _json(run(*b, "context", str(f), "--leaf", short, "--json", env=env))
        assert got["leafId"] == full  # type: ignore[index]
        assert run(*b, "tree", str(f), "--from", short, env=env).returncode == 0
        assert run(*b, "export", str(f), "--format", "markdown", "--leaf", short, env=env).returncode == 0
    forked = run(*b, "fork", str(f), "--leaf", shown[3], "--out", str(tmp_path / "f"), env=env)
    assert forked.returncode == 0, forked.stderr
    for args in (["context", str(f), "--leaf", "1f1f0cdd"], ["tree", str(f), "--from", "1f1f0cdd"],
                 ["fork", str(f), "--leaf", "1f1f0cdd"]):
        p = run(*b, *args, env=env)
        assert p.returncode == 1 and "ambiguous" in p.stderr and ids[0] in p.stderr and "6 entries" in p.stderr, \
            (args, p.stderr)
    text = run(*b, "context", str(f), env=env)
    assert text.returncode == 0 and "None" not in text.stdout, text.stdout


def test_version() -> None:
    from importlib.metadata import version

    p = run("--version", env={})
    assert p.returncode == 0 and p.stdout == f"sessiontree {version('sessiontree')}\n"
    p = run("--color", "never", "--version", env={})  # after another option: argparse's action, the same line
    assert p.returncode == 0 and p.stdout == f"sessiontree {version('sessiontree')}\n"


def test_version_costs_an_interpreter_start() -> None:
    """``--version`` imports none of what a command needs (argparse, rich, the schema,
    ``importlib.metadata``, the commands' modules: ~190 ms of CPU where an interpreter
    starts in ~15 ms), as the console script runs it; the native module gives the
    version (Cargo's package version, the distribution's: ``test_version``)."""
    code = ("import sys\nfrom sessiontree.cli import main\nstatus = main(['--version'])\n"
            "heavy = ('argparse', 'rich', 'sessiontree.schema', 'importlib.metadata', 'sessiontree.cli._parser', "
            "'sessiontree.cli._common', 'sessiontree.view')\n"
            "print(status, sorted(m for m in heavy if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "0 []", p.stdout


def test_check_a_folder(tmp_path: Path, backend: str) -> None:
    """Every session of a folder (and below), a total line, exit 1 on any problem;
    ``--problems`` shows only the files with one (and the total)."""
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3")}
    folder = tmp_path / "s"
    (folder / "sub").mkdir(parents=True)
    generate_session(folder / "a.jsonl", size_bytes=3_000, seed=1)
    generate_session(folder / "sub" / "b.jsonl", size_bytes=3_000, seed=2)
    clean = run("--backend", backend, "check", str(folder), env=env)
    assert clean.returncode == 0 and clean.stdout.splitlines()[-1].startswith("2 file(s) checked: 2 clean"), \
        clean.stdout
    bad = folder / "sub" / "c.jsonl"
    text = (folder / "a.jsonl").read_text().splitlines()
    bad.write_text("\n".join([text[0], text[1], '{"type":"message","id":"zz","parentId":"nowhere",'
                              '"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x"}}']) + "\n")
    (folder / "not.jsonl").write_text("not json\n")
    p = run("--backend", backend, "check", str(folder), env=env)
    assert p.returncode == 1
    assert p.stdout.splitlines()[-1] == "4 file(s) checked: 2 clean, 1 with problems, 1 not readable as sessions"
    only = run("--backend", backend, "check", str(folder), "--problems", env=env)
    assert only.returncode == 1 and "a.jsonl" not in only.stdout and "c.jsonl" in only.stdout
    assert "not.jsonl" in only.stdout
    listed = run("--backend", backend, "check", str(folder), "--problems", "--json", env=env)
    assert listed.returncode == 1
    data = json.loads(listed.stdout)
    assert sorted(Path(r["file"]).name for r in data) == ["c.jsonl", "not.jsonl"]  # type: ignore[union-attr]


def test_previews_cut_json_say_so(tmp_path: Path) -> None:
    """A tool call's argument that is JSON (an object, a list) and longer than the
    preview ends with ``…`` when cut, as a cut string does."""
    from sessiontree.view import tool_call_preview

    block = {"type": "toolCall", "name": "edit",
             "arguments": {"edits": [{"oldText": "a" * 50, "newText": "b" * 50}]}}
    text = tool_call_preview(block, 200)
    value = text.split("edits=", 1)[1]
    assert value.endswith("…)") and len(value) == 41, text


def test_info_on_a_fork_runs_forwards(tmp_path: Path, backend: str) -> None:
    """A fork's header is newer than the entries it copied: ``info`` shows the entries'
    range earliest first and the fork's time beside it."""
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3")}
    src = tmp_path / "src.jsonl"
    generate_session(src, size_bytes=4_000, seed=9)
    leaf = _json(run("context", str(src), "--json", env=env))["leafId"]  # type: ignore[index]
    forked = _json(run("--backend", backend, "fork", str(src), "--leaf", str(leaf), "--out", str(tmp_path / "f"),
                       "--json", env=env))["path"]  # type: ignore[index]
    p = run("--backend", backend, "info", str(forked), env=env)
    row = next(x for x in p.stdout.splitlines() if x.startswith("time"))
    stamps = re.findall(r"\d{4}-\d\d-\d\d [\d:]+ UTC", row)  # in UTC, saying so (CONTRACT §10)
    assert len(stamps) == 3 and stamps[0] <= stamps[1] < stamps[2] and "forked" in row, row


def _cli(args: list[str]) -> tuple[int, str]:
    from sessiontree.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(args)
        except SystemExit as e:  # argparse
            code = int(e.code or 0)
    return code, out.getvalue()


def test_no_viewer_prints_python_none(backend: str) -> None:
    """A missing or null value (a model, a thinking level, an exit code, the leaf of an
    empty session) is worded (``view.ABSENT``, ``view.UNKNOWN``, "no exit code"), never
    Python's ``None``: over every corpus and case file, ``context``, ``tree --full`` and
    ``info``."""
    word = re.compile(r"\bNone\b")
    files = sorted(CORPUS.glob("*.jsonl")) + sorted(CASES.glob("*.jsonl"))
    seen = 0
    for f in files:
        for command in (["context"], ["tree", "--full"], ["info"]):
            code, out = _cli(["--backend", backend, *command, str(f)])
            if code != 0:
                continue  # a file no backend opens: its error is checked elsewhere
            seen += 1
            if word.search(f.read_text("utf-8", "replace")):
                continue  # the session's own text says None (one file)
            bad = [line for line in out.splitlines() if word.search(line)]
            assert not bad, (command, f.name, bad)
    assert seen > 100


def test_every_cut_preview_says_so(tmp_path: Path) -> None:
    """A preview cut anywhere ends in ``…``: ``tree --json``'s 200 characters, and the
    600 characters a preview reads of a tool result, as ``tree`` shows them on a line
    wide enough for all of them (new-user trial, issue 26)."""
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    user = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "word " * 100, "timestamp": 1}}
    result = {"type": "message", "id": "r1", "parentId": "u1", "timestamp": "2025-01-01T00:00:02.000Z",
              "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                          "content": [{"type": "text", "text": "x" * 5000 + "END"}], "isError": False,
                          "timestamp": 2}}
    f = tmp_path / "long.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in (head, user, result)))
    env = {"HOME": str(tmp_path / "h"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    nodes = _json(run("tree", str(f), "--json", env=env))
    previews = {n["id"]: n["preview"] for n in nodes}  # type: ignore[union-attr, index]
    assert len(previews["u1"]) == 200 and previews["u1"].endswith("…"), previews["u1"]
    assert previews["r1"].endswith("…") and "END" not in previews["r1"], previews["r1"]
    wide = run("tree", str(f), "--full", "--width", "100000", env=env)
    line = next(x for x in wide.stdout.splitlines() if "r1" in x)
    assert line.split("  ←")[0].rstrip().endswith("…") and "END" not in line, line[-80:]


def test_context_without_model_information_says_unknown(tmp_path: Path) -> None:
    """A context with no model (Pi's ``{}``) is worded ``(unknown)`` (``view.model_label``,
    as ``usage`` words it), not shown as JSON."""
    f = tmp_path / "s.jsonl"
    _session_with_title(f, "hello")
    reply = {"type": "message", "id": "a1", "parentId": "m1", "timestamp": "2025-01-01T00:00:02.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 2}}
    with f.open("a") as out_file:
        out_file.write(json.dumps(reply) + "\n")  # an assistant message with no provider or model
    code, out = _cli(["context", str(f)])
    assert code == 0 and "model (unknown)," in out and "{}" not in out, out


@pytest.mark.parametrize("columns", [80, None])
def test_ls_keeps_the_end_of_a_cut_cwd(tmp_path: Path, columns: int | None) -> None:
    """Two projects under one long parent differ at the end of their cwds: a cut cwd
    keeps its end (``…t/alpha``), where cutting its end showed both as the same prefix."""
    parent = "/home/user/" + "a-long-shared-parent-folder/" * 3
    for k, name in enumerate(("alpha", "beta")):
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        head = {"type": "session", "version": 3, "id": name, "timestamp": "2025-01-01T00:00:00.000Z",
                "cwd": parent + name}
        (folder / "s.jsonl").write_text(json.dumps(head) + "\n")
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3"),
           **({"COLUMNS": str(columns)} if columns else {})}
    p = run(*(["--color", "always"] if columns else []), "ls", str(tmp_path), env=env)
    assert p.returncode == 0, p.stderr
    text = _ANSI.sub("", p.stdout)
    assert "…" in text and "alpha" in text and "beta" in text, text


def test_export_says_how_many_damaged_lines_it_skipped(world: dict[str, object], tmp_path: Path,
                                                       backend: str) -> None:
    """F4 (adversary round 43): every export format left a file's damaged lines out in
    silence where ``check`` reports them; now each says on stderr how many, per file,
    in the one wording of a reported skip (``_common.skip_note``), and the parquet JSON
    report counts them. A line whose entry is kept (a parent made a root) is no skip."""
    env = dict(world["env"])  # type: ignore[call-overload]
    case = (CASES / "F13-dangling-parent.jsonl").read_bytes().split(b"\n")
    folder = tmp_path / "damaged"
    folder.mkdir()
    bad = folder / "bad.jsonl"
    # two damaged lines (not JSON; an id again), a torn write before an object on a third
    dup = case[1]
    bad.write_bytes(b"\n".join([*case[:3], b"{not json", dup, b'{"torn' + case[3], *case[4:]]))
    (folder / "clean.jsonl").write_bytes(b"\n".join(case))  # a missing parent only: nothing skipped
    checked = run("check", str(bad), "--json", env=env)
    assert checked.returncode == 1
    kinds = {i["kind"] for i in json.loads(checked.stdout)[0]["issues"]}
    assert kinds == {"invalid_json", "duplicate_id", "torn_fragment", "missing_parent"}, kinds
    note = f"note: {bad}: 3 damaged line(s) skipped; `sessiontree check {bad}` lists them"
    for fmt in ("markdown", "html"):
        for out in ([], ["--out", str(tmp_path / f"x.{fmt}")]):
            p = run("--backend", backend, "export", str(bad), "--format", fmt, *out, env=env)
            assert p.returncode == 0 and p.stderr.strip().splitlines()[-1] == note, (fmt, out, p.stderr)
        clean = run("--backend", backend, "export", str(folder / "clean.jsonl"), "--format", fmt,
                    "--out", str(tmp_path / f"c.{fmt}"), env=env)
        assert clean.returncode == 0 and "skipped" not in clean.stderr, clean.stderr
    pytest.importorskip("pyarrow")
    p = run("--backend", backend, "export", str(folder), "--format", "parquet", "--out", str(tmp_path / "pq"),
            "--json", env=env)
    got = _json(p)
    assert got["linesSkipped"] == [{"path": str(bad), "lines": 3}]  # type: ignore[index]
    assert p.stderr.strip() == note
    p = run("--backend", backend, "export", str(folder), "--format", "parquet", "--out", str(tmp_path / "pq2"),
            env=env)
    assert p.returncode == 0 and p.stderr.strip().splitlines()[-1] == note, p.stderr


def test_a_path_no_terminal_shows_as_is_pastes_back(tmp_path: Path) -> None:
    """A folder named with a newline, a byte that is not UTF-8 or a bidi control: ``ls``,
    ``search`` and ``check`` print its sessions' paths ANSI-C quoted, printable,
    and a shell reads each back as the path (adversary round 44: ``'./new\\nline/…'``
    and ``./bad\\udcff/…`` named no file)."""
    import os

    names = [b"new\nline", b"bad\xff", "rlo\u202eq".encode()]
    for k, raw in enumerate(names):
        folder = os.path.join(os.fsencode(tmp_path), raw)
        os.mkdir(folder)
        _session_with_title(Path(os.fsdecode(os.path.join(folder, b"s.jsonl"))), f"find the wombat {k}")
    env = {"HOME": str(tmp_path / "h"), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3")}
    for command in (["ls"], ["search", "wombat"], ["check"]):
        p = run(*command, str(tmp_path), env=env)
        assert p.returncode == 0, p.stderr
        shown = [w.rstrip(":") for line in p.stdout.splitlines() for w in line.split() if w.startswith("$'")]
        assert len(shown) == len(names), (command, p.stdout)
        for word in shown:
            assert word.isprintable(), word
            back = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, timeout=30).stdout
            assert os.path.isfile(back), (command, word, back)


def test_an_id_error_names_the_option_it_came_from(tmp_path: Path) -> None:
    """An id no entry has names the option it was given to, as an ambiguous one does
    (``cli._leaf.id_error``, the one wording): "entry zz not found" did not say whether
    ``--leaf`` or ``--from`` was wrong (fix61, item 1)."""
    path = tmp_path / "s.jsonl"
    generate_session(path, size_bytes=5_000, seed=4)
    ids = [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    prefix = next(i[0] for i in ids if sum(j.startswith(i[0]) for j in ids) > 1)
    env = {"HOME": str(tmp_path / "h")}
    takes = [(["context", str(path)], "--leaf"), (["tree", str(path)], "--from"),
             (["export", str(path), "--format", "markdown", "--out", "-"], "--leaf"),
             (["fork", str(path), "--out", str(tmp_path / "forks")], "--leaf"),
             (["browse", str(path)], "--select")]
    for args, option in takes:
        p = run(*args, option, "zz", env=env)
        assert p.returncode == 1 and p.stderr.strip().endswith(
            f"{path}: {option} zz not found (no entry's id is or starts with it)"), (args, p.stderr)
        p = run(*args, option, prefix, env=env)
        assert p.returncode == 1 and f"{path}: {option} {prefix} is ambiguous" in p.stderr, (args, p.stderr)
    assert not (tmp_path / "forks").exists() or not os.listdir(tmp_path / "forks")


def test_an_empty_id_names_no_entry(tmp_path: Path) -> None:
    """``--leaf ''`` (and ``--from ''``) names no entry, in the one wording of an id no
    entry has: an empty prefix was "ambiguous (4 entries start with : …)" (adversary
    round 44, F3)."""
    path = tmp_path / "s.jsonl"
    generate_session(path, size_bytes=5_000, seed=4)
    for args in (["context", str(path), "--leaf", ""], ["tree", str(path), "--from", ""],
                 ["export", str(path), "--format", "markdown", "--leaf", "", "--out", "-"]):
        p = run(*args, env={"HOME": str(tmp_path / "h")})
        option = args[args.index("") - 1]
        assert p.returncode == 1 and f"{option} '' (an empty id) names no entry" in p.stderr, (args, p.stderr)
        assert "ambiguous" not in p.stderr


def test_an_empty_scope_is_said_with_json_too(tmp_path: Path) -> None:
    """With ``--json`` an empty scope is said on stderr as without it, the JSON on stdout
    unchanged (adversary round 44, F2: stderr was empty)."""
    (tmp_path / "e").mkdir()
    env = {"HOME": str(tmp_path / "h"), "XDG_CACHE_HOME": str(tmp_path / "c")}
    for args, said in ((["ls"], "no sessions found in"), (["search", "foo"], "no hits in 0 session(s) of"),
                       (["usage"], "no recorded usage in 0 session(s) of"), (["index"], "no sessions found in")):
        plain = run(*args, str(tmp_path / "e"), env=env)
        p = run(*args, str(tmp_path / "e"), "--json", env=env)
        assert p.returncode == plain.returncode == 0, p.stderr
        json.loads(p.stdout)
        assert said in p.stderr and said in plain.stderr, (args, p.stderr, plain.stderr)


def test_a_query_that_is_not_utf8_is_refused_by_both_backends(tmp_path: Path) -> None:
    """A query whose bytes are not UTF-8 (a lone surrogate once decoded) is one clear
    error on both backends: the native one said "'utf-8' codec can't encode…" and the
    python one answered 0 hits (adversary round 45, F3)."""
    path = tmp_path / "s.jsonl"
    generate_session(path, size_bytes=5_000, seed=4)
    for backend in ("native", "python"):
        env = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_BACKEND"}
        env.update(HOME=str(tmp_path / "h"), SESSIONTREE_BACKEND=backend)
        p = subprocess.run([sys.executable, "-m", "sessiontree", "search", b"zebra\xff", str(path), "--no-cache"],
                           capture_output=True, env=env, timeout=120)
        err = p.stderr.decode("utf-8", "replace")
        assert p.returncode == 2 and "bad query: not UTF-8 text" in err and "codec" not in err, (backend, err)
