"""``sessiontree ls``, ``search``, ``usage`` and ``index`` as real subprocesses: the same
answers with and without the catalog, ``--cwd`` normalised, hits that ``context``
opens, clear errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontree._places import session_dir_for_cwd
from sessiontree.generate import generate_session

from _shared import damage_pages


def run(*args: str, env: dict[str, str | None] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``sessiontree ARGS`` in a new process; ``env`` sets (``None``: unsets) variables."""
    full = dict(os.environ)
    full.pop("COLUMNS", None)
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=full,
                          cwd=cwd, timeout=300, encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A Pi agent folder with sessions of three projects, and a catalog of its own."""
    base = tmp_path_factory.mktemp("agent")
    for i in range(30):
        cwd = f"/home/user/p{i % 3}"
        folder = Path(session_dir_for_cwd(cwd, str(base / "agent" / "sessions")))
        folder.mkdir(parents=True, exist_ok=True)
        generate_session(folder / f"s{i:02d}.jsonl", size_bytes=4_000 + 700 * i, seed=40 + i, cwd=cwd)
    return {"PI_CODING_AGENT_DIR": str(base / "agent"), "SESSIONTREE_CATALOG": str(base / "cache" / "c.sqlite3")}


def _json(p: subprocess.CompletedProcess[str]) -> object:
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_same_answers_without_the_catalog(agent: dict[str, str]) -> None:
    for args in (["ls", "--all"], ["search", "refactor", "--all", "--limit", "0"],
                 ["search", '"the session" src', "--all", "--recent"], ["usage", "--all", "--utc"],
                 ["usage", "model", "--all"], ["usage", "project", "--all", "--active-path"],
                 ["usage", "weekly", "--all", "--utc"]):
        first = _json(run(*args, "--json", env=agent))
        again = _json(run(*args, "--json", env=agent))
        plain = _json(run(*args, "--json", "--no-cache", env=agent))
        assert first == again == plain, args
    index = _json(run("index", "--all", "--json", env=agent))
    assert index["sessions"] == 30 and index["read"] == 0  # everything was read already
    assert index["catalog"] == agent["SESSIONTREE_CATALOG"] and index["catalogBytes"] > 0


def test_ls_cwd_is_normalised(agent: dict[str, str], tmp_path: Path) -> None:
    want = _json(run("ls", "--cwd", "/home/user/p1", "--json", env=agent))
    assert len(want["sessions"]) == 10  # type: ignore[index]
    for spelling in ("/home/user/p1/", "/home/user/p1/.", "/home/user/p0/../p1", "/home/user//p1"):
        assert _json(run("ls", "--cwd", spelling, "--json", env=agent)) == want, spelling
    assert _json(run("search", "refactor", "--cwd", "/home/user/p1/", "--json", env=agent))["files"] == 10  # type: ignore[index]
    p = run("ls", "/tmp", "--cwd", "/x", env=agent)
    assert p.returncode == 2 and "--cwd DIR alone" in p.stderr


def test_search_output_and_hits_open(agent: dict[str, str]) -> None:
    data = _json(run("search", "the", "--all", "--json", "--limit", "5", env=agent))
    hits = data["hits"]  # type: ignore[index]
    assert 0 < len(hits) <= 5 and data["total"] >= len(hits)  # type: ignore[index]
    for h in hits:
        assert {"path", "entryId", "role", "time", "onPath", "snippet", "marks", "sessionId"} <= set(h)
        s, e = h["marks"][0]
        assert h["snippet"][s:e].lower() == "the"
        p = run("context", h["path"], "--leaf", h["entryId"], "--json")
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["leafId"] == h["entryId"]
    page2 = _json(run("search", "the", "--all", "--json", "--limit", "5", "--page", "2", env=agent))
    assert page2["offset"] == 5 and not {h["entryId"] for h in page2["hits"]} & {h["entryId"] for h in hits}  # type: ignore[index]
    text = run("search", "the", "--all", "--limit", "3", env=agent)
    assert text.returncode == 0 and "hits 1–3 of" in text.stdout and "--page 2" in text.stdout


def test_bad_input(agent: dict[str, str]) -> None:
    for args, needle in ((["search", "re:("], "bad query"), (["search", "  "], "bad query"),
                         (["usage", "yearly", "/tmp"], "unknown report"), (["usage", "--since", "2025-13-01"], "not a date"),
                         (["search", "x", "--limit", "-1"], "--limit")):
        p = run(*args, env=agent)
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    inside = str(Path(agent["PI_CODING_AGENT_DIR"]) / "catalog.sqlite3")
    p = run("ls", "--all", "--catalog", inside, env=agent)
    assert p.returncode == 2 and "inside Pi's folder" in p.stderr


@pytest.mark.parametrize("no_cache", [[], ["--no-cache"]])
def test_pages_and_limits_past_64_bits(agent: dict[str, str], no_cache: list[str]) -> None:
    """A page or a limit no int64 holds (an attack gave OverflowError tracebacks): a page
    past every hit is empty, a limit past every hit is all of them."""
    every = _json(run("search", "the", "--all", "--json", "--limit", "0", *no_cache, env=agent))
    big = str(2**70)
    for args, hits in ((["--page", big], 0), (["--page", str(2**62), "--limit", "4"], 0),
                       (["--limit", big], every["total"]), (["--limit", str(2**63)], every["total"])):  # type: ignore[index]
        p = run("search", "the", "--all", "--json", *args, *no_cache, env=agent)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p.stderr)
        got = json.loads(p.stdout)
        assert len(got["hits"]) == hits and got["total"] == every["total"], args  # type: ignore[index]
    p = run("search", "the", "--all", "--page", big, *no_cache, env=agent)
    assert p.returncode == 0 and "no hits on page" in p.stderr, p.stderr


def test_usage_text(agent: dict[str, str]) -> None:
    p = run("usage", "daily", "--all", "--utc", "--since", "20250101", env=agent)
    assert p.returncode == 0 and "total" in p.stdout and "cost ($)" in p.stdout
    data = _json(run("usage", "daily", "--all", "--utc", "--json", env=agent))
    day = data["lines"][0]["key"]  # type: ignore[index]
    one = _json(run("usage", "--all", "--utc", "--since", day, "--until", day, "--json", env=agent))
    assert [x["key"] for x in one["lines"]] == [day]  # type: ignore[index]
    folder = session_dir_for_cwd("/home/user/p2", str(Path(agent["PI_CODING_AGENT_DIR"]) / "sessions"))
    by_dir = _json(run("usage", "session", folder, "--json", env=agent))
    assert {Path(x["key"]).parent for x in by_dir["lines"]} == {Path(folder)}  # type: ignore[index]
    assert _json(run("usage", folder, "--json", env=agent))["report"] == "daily"  # type: ignore[index]


def test_usage_json_names_its_zone(agent: dict[str, str]) -> None:
    """``timeZone`` says which zone the days are of (a trial found ``local``, which a
    JSON reader cannot place): ``UTC`` with ``--utc``, else ``$TZ`` as set."""
    assert _json(run("usage", "--all", "--utc", "--json", env=agent))["timeZone"] == "UTC"  # type: ignore[index]
    for tz in ("Asia/Kathmandu", ":America/New_York", "XYZ-5:17"):
        got = _json(run("usage", "--all", "--json", env={**agent, "TZ": tz}))["timeZone"]  # type: ignore[index]
        assert got == tz.lstrip(":")


def test_usage_on_a_narrow_terminal_keeps_its_keys(agent: dict[str, str]) -> None:
    """Piped with ``COLUMNS=80``: numbers go short (``61.5M``) to leave the keys room;
    nothing is cut (rich cut numbers it could not fit, ``246.…``): a line the width
    cannot hold is longer."""
    data = _json(run("usage", "model", "--all", "--json", env=agent))
    keys = [x["key"] for x in data["lines"]]  # type: ignore[index]
    p = run("usage", "model", "--all", env={**agent, "COLUMNS": "80"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "…" not in p.stdout and lines[0].split()[-1] == "$", lines  # the short titles
    for key in keys:  # every row still says whose it is
        assert any(line.startswith(key + " ") for line in lines), (key, lines)


@pytest.mark.parametrize("columns", ["80", "60"])
def test_usage_on_a_terminal_never_cuts_a_number(agent: dict[str, str], columns: str) -> None:
    """On a terminal (``--color always``) rich lays the table out: the keys fold to make
    room, and no number is cut (rich cut costs to ``206.`` and dropped the ``$`` title
    at 80 columns); where no table fits (60 columns here) each line of the report is its
    key and its numbers under it, and no line is wider than the terminal (issue 26: the
    table was wider)."""
    import re

    from rich.cells import cell_len

    data = _json(run("usage", "model", "--all", "--json", env=agent))
    costs = [f"{x['cost']:.2f}" for x in data["lines"]]  # type: ignore[index]
    p = run("--color", "always", "usage", "model", "--all", env={**agent, "COLUMNS": columns})
    assert p.returncode == 0, p.stderr
    text = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout).replace("\u00a0", " ")
    assert "…" not in text and max(map(cell_len, text.splitlines())) <= int(columns), text
    if columns == "80":
        assert text.splitlines()[0].split()[-1] == "$", text
    for cost in costs:
        assert re.search(rf"(^|\s){re.escape(cost)}(\s|$)", text, re.M), (cost, text)


def test_index_text_and_off(agent: dict[str, str], tmp_path: Path) -> None:
    p = run("index", "--all", env={**agent, "SESSIONTREE_CATALOG": str(tmp_path / "new.sqlite3")})
    assert p.returncode == 0 and "30 session(s)" in p.stdout and "catalog" in p.stdout
    p = run("index", "--all", env={**agent, "SESSIONTREE_CATALOG": "off"})
    assert p.returncode == 1 and "turned off" in p.stderr
    p = run("ls", "--all", "--json", env={**agent, "SESSIONTREE_CATALOG": "off"})
    assert len(json.loads(p.stdout)["sessions"]) == 30


@pytest.mark.parametrize(("tz", "ms", "iso"), [("Asia/Tokyo", 253402300799999, "9999-12-31T23:59:59.999Z"),
                                               ("America/New_York", -62135596800000, "0001-01-01T00:00:00.000Z")])
def test_times_at_the_ends_of_the_calendar(tmp_path: Path, tz: str, ms: int, iso: str) -> None:
    """A message time whose local date is outside years 1..9999 is shown and grouped in
    UTC instead of stopping the command."""
    folder = tmp_path / "p"
    folder.mkdir()
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
             {"type": "message", "id": "a1", "parentId": None, "timestamp": iso,
              "message": {"role": "assistant", "content": [{"type": "text", "text": "edge answer"}],
                          "usage": {"input": 1, "output": 1, "cost": {"total": 1}}, "provider": "p", "model": "m",
                          "timestamp": ms}}]
    (folder / "s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    env = {"TZ": tz, "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3")}
    for args in (["ls", str(folder)], ["search", "edge", str(folder)], ["usage", "daily", str(folder)],
                 ["usage", "weekly", str(folder), "--json"], ["usage", "monthly", str(folder)]):
        p = run(*args, env=env)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p.stderr)
    if ms > 0:  # the last activity (Pi counts only times > 0), shown in UTC
        assert iso[:10] in run("ls", str(folder), env=env).stdout


def test_ls_columns_line_up_whatever_the_sessions_hold(tmp_path: Path) -> None:
    """Names with lone surrogates, invisible format characters and wide CJK, cwds of
    any length and 10,000+ messages: every row's file column starts at one cell."""
    from rich.cells import cell_len

    root = tmp_path / "root"
    specs = [("a", "/p", "\ud800 hidden\u200bword \U000e0041tag", 3), ("b", "/a/much/longer/working/dir", "漢字の名前", 3),
             ("c", "/q", "plain", 10_001)]
    for sub, cwd, name, n in specs:
        (root / sub).mkdir(parents=True)
        lines = [{"type": "session", "version": 3, "id": sub, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": cwd}]
        parent = None
        for i in range(n):
            lines.append({"type": "message", "id": f"{sub}{i}", "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
                          "message": {"role": "user", "content": "hi", "timestamp": 1000 + i}})
            parent = f"{sub}{i}"
        lines.append({"type": "session_info", "id": f"{sub}n", "parentId": parent, "timestamp": "2025-01-01T00:00:02.000Z",
                      "name": name})
        (root / sub / f"{sub}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    p = run("ls", str(root), "--all", "--no-cache", "--color", "never")
    assert p.returncode == 0, p.stderr
    rows = [line for line in p.stdout.splitlines() if line.endswith(".jsonl")]
    assert len(rows) == 3
    starts = {cell_len(r[: r.rindex(" ") + 1]) for r in rows}
    assert len(starts) == 1, p.stdout
    assert "\\ud800" in p.stdout and "\\u200b" in p.stdout and "\\U000e0041" in p.stdout
    assert "10,001" in p.stdout


def test_a_named_catalog_that_cannot_be_used_is_said_once(tmp_path: Path) -> None:
    """``--catalog`` (or ``$SESSIONTREE_CATALOG``) naming a file that is not a catalog:
    ``ls``, ``search`` and ``usage`` answer from the files and say so in one note."""
    folder = tmp_path / "p"
    folder.mkdir()
    run("generate", str(folder / "s.jsonl"), "--entries", "60", "--seed", "4")
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database at all")
    for args, extra, env in ((["ls", str(folder)], ["--catalog", str(bad)], {}),
                             (["search", "the", str(folder)], ["--catalog", str(bad)], {}),
                             (["usage", "daily", str(folder)], [], {"SESSIONTREE_CATALOG": str(bad)})):
        p = run(*args, *extra, env=env)
        plain = run(*args, "--no-cache")
        assert p.returncode == 0 and p.stdout == plain.stdout, (args, p.stderr)
        notes = [line for line in p.stderr.splitlines() if line.startswith("note: ")]
        assert len(notes) == 1 and "reading the files instead" in notes[0], p.stderr
    assert bad.read_bytes() == b"not a database at all"
    good = run("ls", str(folder), "--catalog", str(tmp_path / "good.sqlite3"))
    assert good.returncode == 0 and "note:" not in good.stderr


@pytest.mark.parametrize("damage", ["header", "pages"])
def test_a_damaged_catalog_is_said_once_as_it_is_rebuilt(tmp_path: Path, damage: str) -> None:
    """Trial 58: a damaged catalog was rebuilt without a word (the command then reads
    every file). Each command that replaces one says so in one note on stderr, naming
    it and what was wrong, and answers as ``--no-cache``; the next says nothing."""
    folder = tmp_path / "p"
    folder.mkdir()
    for i in range(3):
        run("generate", str(folder / f"s{i}.jsonl"), "--entries", "60", "--seed", str(i))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "SESSIONTREE_CATALOG": None}
    catalog = tmp_path / "cache" / "sessiontree" / "catalog.sqlite3"
    for args in (["ls", str(folder)], ["usage", "model", str(folder)], ["index", str(folder)],
                 ["search", "the", str(folder)]):
        assert run("index", str(folder), env=env).returncode == 0
        if damage == "header":
            with open(catalog, "r+b") as f:
                f.write(b"x" * 100)
        else:  # found damaged only when a read reaches them
            damage_pages(catalog)
        p = run(*args, env=env)
        plain = run(*args, "--no-cache", env=env)
        assert p.returncode == 0, (args, p.stderr)
        if args[0] != "index":
            assert p.stdout == plain.stdout, args
        notes = [line for line in p.stderr.splitlines() if line.startswith("note: ")]
        if args[0] == "search" and os.environ.get("SESSIONTREE_BACKEND") == "python":
            # Its search index is native: it reads the files, the catalog neither
            # opened nor rebuilt, and nothing is said.
            assert notes == [], p.stderr
            continue
        assert len(notes) == 1 and f"the catalog {catalog} was damaged" in notes[0] \
            and "a new one is made in its place" in notes[0], (args, p.stderr)
        again = run(*args, env=env)
        assert "note:" not in again.stderr and "Warning" not in again.stderr, (args, again.stderr)


@pytest.mark.parametrize("damage", ["gen = 'x'", "title = x'00ff'", "sid = 5", "sid = NULL"])
@pytest.mark.parametrize("json_out", [False, True])
def test_a_search_that_finds_its_rows_damaged_answers_from_the_files(tmp_path: Path, damage: str,
                                                                     json_out: bool) -> None:
    """Adversary 59b: a row found damaged while a search made its page (an entries
    record's generation, a name that is not UTF-8, an id that is a number) was rebuilt
    and said, then the next hit's row was looked for in the new, empty catalog: "dropped
    from the catalog while it was searched; search again" (exit 1; a traceback for the
    name, and for a session's row with no id), where the note said the command reads
    every session. The files answer."""
    import sqlite3

    folder = tmp_path / "p"
    folder.mkdir()
    for i in range(3):
        run("generate", str(folder / f"s{i}.jsonl"), "--entries", "60", "--seed", str(i))
    catalog = tmp_path / "c.sqlite3"
    args = ["search", *(["--json"] if json_out else []), "the", str(folder), "--limit", "1000"]
    assert run("index", str(folder), "--catalog", str(catalog)).returncode == 0
    with sqlite3.connect(catalog) as c:
        c.execute(f"UPDATE file SET {damage}")
    p = run(*args, "--catalog", str(catalog))
    plain = run(*args, "--no-cache")
    assert p.returncode == plain.returncode == 0, p.stderr
    assert p.stdout == plain.stdout
    notes = [line for line in p.stderr.splitlines() if line.startswith("note: ")]
    if os.environ.get("SESSIONTREE_BACKEND") != "python":  # the search index is native
        assert len(notes) == 1 and "was damaged" in notes[0], p.stderr
    assert len(notes) == len(p.stderr.splitlines()), p.stderr


def test_a_catalog_of_another_version_is_said_and_an_older_ones_replaced(tmp_path: Path) -> None:
    """A catalog an older sessiontree made is replaced by a new one; each command that
    does so says it in one note on stderr, named or at the default place, and answers
    as the files do; the next command, on the new catalog, says nothing. A newer
    version's is left as it is (two versions sharing it would rebuild it in turn): the
    files answer, with one note; ``index`` fails saying why."""
    import sqlite3

    folder = tmp_path / "p"
    folder.mkdir()
    run("generate", str(folder / "s.jsonl"), "--entries", "60", "--seed", "4")
    catalog = tmp_path / "cache" / "sessiontree" / "catalog.sqlite3"

    def age(version: int) -> None:
        with sqlite3.connect(catalog) as c:
            c.execute(f"PRAGMA user_version = {version}")
        c.close()

    cases: list[tuple[list[str], dict[str, str | None]]] = [
        (["usage", "model", str(folder), "--json"], {"SESSIONTREE_CATALOG": str(catalog)}),
        (["ls", str(folder), "--catalog", str(catalog)], {}),
        (["search", "the", str(folder), "--catalog", str(catalog)], {}),
        (["index", str(folder), "--catalog", str(catalog)], {}),
        (["ls", str(folder)], {"XDG_CACHE_HOME": str(tmp_path / "cache"), "SESSIONTREE_CATALOG": None})]
    for args, env in cases:
        first = run(*args, env=env)  # makes (or brings up to date) this version's catalog
        assert first.returncode == 0 and "sessiontree version" not in first.stderr, first.stderr
        age(9)
        p = run(*args, env=env)
        notes = [line for line in p.stderr.splitlines() if "sessiontree version" in line]
        assert p.returncode == 0 and len(notes) == 1 and "older" in notes[0] and "(schema 9)" in notes[0], \
            (args, p.stderr)
        if args[0] != "index":
            assert p.stdout == run(*args, "--no-cache", env=env).stdout, args
        again = run(*args, env=env)
        assert "sessiontree version" not in again.stderr, again.stderr
        age(9)  # --no-cache neither opens it nor says anything of it
        assert "sessiontree version" not in run(*args, "--no-cache", env=env).stderr
        assert run(*args, env=env).stderr.count("older sessiontree version") == 1
        age(99)
        before = catalog.read_bytes()
        p = run(*args, env=env)
        if args[0] == "index":
            assert p.returncode == 1 and "newer sessiontree version (schema 99)" in p.stderr, p.stderr
        else:
            notes = [line for line in p.stderr.splitlines() if "sessiontree version" in line]
            assert p.returncode == 0 and len(notes) == 1 and "newer" in notes[0] and "(schema 99)" in notes[0], \
                (args, p.stderr)
            assert p.stdout == run(*args, "--no-cache", env=env).stdout, args
        assert catalog.read_bytes() == before  # left as it is
        catalog.unlink()  # this version's again, for the next command (search makes none)
        assert run("ls", str(folder), "--catalog", str(catalog)).returncode == 0
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as c:  # another program's database: refused, not replaced
        c.execute("PRAGMA user_version = 9")
        c.execute("CREATE TABLE t (x)")
    c.close()
    p = run("ls", str(folder), "--catalog", str(foreign))
    assert "sessiontree version" not in p.stderr and "reading the files instead" in p.stderr, p.stderr


def test_a_root_named_is_read_with_its_subfolders(agent: dict[str, str]) -> None:
    """Pi's sessions root holds one folder per project: named as a PATH, each command
    reads every project (a folder is read with its subfolders), as ``--all`` does; the
    old spelling ``ROOT --all`` still works, with a note."""
    root = str(Path(agent["PI_CODING_AGENT_DIR"]) / "sessions")
    for args in (["ls"], ["search", "refactor", "--limit", "0"], ["usage", "session"], ["index"]):
        named = _json(run(*args, root, "--json", env=agent))
        everything = _json(run(*args, "--all", "--json", env=agent))
        for key in ("seconds", "catalogBytes", "read", "bytesRead", "indexed", "bytesIndexed", "indexesBuilt",
                    "indexesReused"):
            named.pop(key, None)  # type: ignore[union-attr]
            everything.pop(key, None)  # type: ignore[union-attr]
        assert named == everything, args
        old = run(*args, root, "--all", "--json", env=agent)
        assert old.returncode == 0 and "note: --all is not needed with a PATH" in old.stderr, (args, old.stderr)
    assert len(_json(run("ls", root, "--json", env=agent))["sessions"]) == 30  # type: ignore[index]


def test_search_text_is_what_rich_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A search writes its lines without rich (``Io.styler``, ``view.paint``): piped, at
    a terminal of any width, under ``$NO_COLOR``, on a dumb terminal and with ``--color
    never``, the bytes are those rich's console prints for the same pieces (controls,
    wide characters, a name), but for the space rich leaves where it wraps a footer."""
    import io
    import re

    from rich.console import Console
    from rich.text import Text

    from sessiontree import catalog
    from sessiontree.cli import main
    from sessiontree.cli.search import LATER, hit_lines

    folder = tmp_path / "p"
    folder.mkdir()
    generate_session(str(folder / "s.jsonl"), entries=80, seed=4)
    odd = folder / "odd.jsonl"
    head = {"type": "session", "version": 3, "id": "odd", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"}
    lines = [head,
             {"type": "session_info", "id": "n1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
              "name": "the \u202e name\x1b[31m 名前"},
             {"type": "message", "id": "m1", "parentId": "n1", "timestamp": "2025-01-01T00:00:02.000Z",
              "message": {"role": "user", "content": "the\ttab \x07bell 漢字 the\u2028end " + "x" * 300}}]
    odd.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    monkeypatch.setenv("SESSIONTREE_CATALOG", "off")
    for env in ("TTY_COMPATIBLE", "FORCE_COLOR", "NO_COLOR", "COLUMNS", "TERM", "COLORTERM"):
        monkeypatch.delenv(env, raising=False)

    def rich_text(env: dict[str, str], color: str, limit: int) -> str:
        """What the command printed with rich (before it wrote its lines itself)."""
        total, files, found = catalog.search_stream("the", [str(folder)], limit=limit, no_cache=True)
        hits = list(found)
        force = {"always": True, "never": False}.get(color)
        console = Console(file=io.StringIO(), force_terminal=force, highlight=False, _environ=env,
                          **({"no_color": True} if color == "never" else {}))
        if not console.is_terminal:
            console.soft_wrap = True
            if "COLUMNS" not in env:
                console.width = 160
        width = console.width if console.is_terminal else None
        role_w = max(len(h.role) for h in hits)
        for h in hits:
            for line in hit_lines(h, role_w, width):
                console.print(Text.assemble(*line), crop=False, no_wrap=True, overflow="ignore")
        more = f"; --page 2 for more" if limit < total else ""
        for words in (f"hits 1–{len(hits)} of {total:,} in {files:,} session(s) searched{more}",
                      "(* on the current path; open one: sessiontree context FILE --leaf ENTRY)"):
            console.print(Text(words, style="dim"))
        return console.file.getvalue()  # type: ignore[attr-defined]

    cases = [({}, "auto"), ({"TTY_COMPATIBLE": "1", "COLUMNS": "200"}, "auto"),
             ({"TTY_COMPATIBLE": "1", "COLUMNS": "52"}, "auto"),
             ({"FORCE_COLOR": "1", "COLUMNS": "90", "NO_COLOR": "1"}, "auto"),
             ({"TTY_COMPATIBLE": "1", "COLUMNS": "80", "TERM": "dumb"}, "auto"),
             ({"TTY_COMPATIBLE": "1", "COLUMNS": "120", "COLORTERM": "truecolor"}, "always"),
             ({"COLUMNS": "70"}, "always"), ({"TTY_COMPATIBLE": "1", "COLUMNS": "100"}, "never")]
    for env, color in cases:
        for limit in (50, 5):
            for k, v in env.items():
                monkeypatch.setenv(k, v)
            assert main(["--color", color, "search", "the", str(folder), "--limit", str(limit)]) == 0
            got = capsys.readouterr().out
            for k in env:
                monkeypatch.delenv(k)
            want = rich_text(env, color, limit)
            assert LATER not in got
            assert re.sub(" (\x1b\\[0m)?\n", "\\1\n", got) == re.sub(" (\x1b\\[0m)?\n", "\\1\n", want), (env, color)
            styled = "\x1b[" in got
            assert styled == (color != "never" and env.get("TERM") != "dumb" and
                              ("TTY_COMPATIBLE" in env or "FORCE_COLOR" in env or color == "always")), (env, color)


def test_search_makes_no_catalog(tmp_path: Path) -> None:
    """A search uses a catalog that is there (its search index), and makes none."""
    folder = tmp_path / "p"
    folder.mkdir()
    run("generate", str(folder / "s.jsonl"), "--entries", "60", "--seed", "4")
    cat = tmp_path / "c" / "catalog.sqlite3"
    p = run("search", "the", str(folder), env={"SESSIONTREE_CATALOG": str(cat)})
    assert p.returncode == 0 and "hits 1–" in p.stdout, p.stderr
    assert not cat.exists() and not cat.parent.exists()
    assert run("index", str(folder), env={"SESSIONTREE_CATALOG": str(cat)}).returncode == 0
    again = run("search", "the", str(folder), env={"SESSIONTREE_CATALOG": str(cat)})
    assert cat.exists() and again.stdout == p.stdout


def test_index_summary_says_what_it_did(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``index``'s summary counts what it did: after ``ls`` built the catalog it reads
    every file's usage log (files read, not only bytes); after ``usage`` built it, it
    reads no file for the catalog yet fills the search index and the sessions' persisted
    indexes (natively), and says so; a run with nothing left to do says it read nothing."""
    from sessiontree import _caches
    from sessiontree.cli import main

    folder = tmp_path / "p"
    folder.mkdir()
    for i in range(3):
        generate_session(str(folder / f"s{i}.jsonl"), size_bytes=_caches.INDEX_MIN_BYTES + 50_000, seed=70 + i)
    total = sum(f.stat().st_size for f in folder.iterdir())
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SESSIONTREE_INDEX", raising=False)
    monkeypatch.setattr(_caches, "INDEX_SETTLE", 0.0)  # kept at once, as the index tests do
    native = backend == "native"

    def index(catalog: Path, *extra: str) -> dict[str, object]:
        assert main(["index", str(folder), "--catalog", str(catalog), *extra]) == 0
        out = capsys.readouterr().out
        return json.loads(out) if extra else {"text": out}

    def did(read: int, bytes_read: int, indexed: int, built: int, reused: int) -> dict[str, int]:
        return {"read": read, "bytesRead": bytes_read, "indexed": indexed if native else 0,
                "bytesIndexed": total if native and indexed else 0, "indexesBuilt": built if native else 0,
                "indexesReused": reused if native else 0}

    def counts(s: dict[str, object]) -> dict[str, object]:
        return {k: s[k] for k in ("read", "bytesRead", "indexed", "bytesIndexed", "indexesBuilt", "indexesReused")}

    after_ls = tmp_path / "ls.sqlite3"
    assert main(["ls", str(folder), "--catalog", str(after_ls), "--json"]) == 0
    capsys.readouterr()
    assert counts(index(after_ls, "--json")) == did(3, total, 3, 3, 0)
    assert counts(index(after_ls, "--json")) == did(0, 0, 0, 0, 3)

    after_usage = tmp_path / "usage.sqlite3"
    assert main(["usage", "session", str(folder), "--catalog", str(after_usage), "--json"]) == 0
    capsys.readouterr()
    text = index(after_usage)["text"]
    assert "3 file(s), 3 session(s), 0 not session(s); read 0 file(s) (0 B)" in str(text), text
    if native:  # the search index is the catalog's own; the persisted indexes were kept above
        assert "added 3 file(s)" in str(text) and "0 session indexes built, 3 kept from before" in str(text), text
    else:
        assert "search index" not in str(text) and "session index" not in str(text), text


def test_piped_usage_by_session_never_folds_a_path(tmp_path: Path) -> None:
    """``usage session`` piped (no terminal, so no width to fit, as for ``ls``) writes
    each session's path whole on its row, however long (Pi's names: a project folder
    and a timestamp with a UUID), never folded into two lines."""
    folder = tmp_path / "sessions" / ("--home-user-work-a-rather-long-project-name-" + "x" * 40 + "--")
    folder.mkdir(parents=True)
    for i in range(2):
        generate_session(folder / f"2025-11-1{i}T09-12-33-415Z_019a7801-afbe-7d9f-b3c1-0e5d2f4a6b7{i}.jsonl",
                         entries=40, seed=90 + i)
    env = {"SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3")}
    keys = [x["key"] for x in _json(run("usage", "session", str(folder), "--json", env=env))["lines"]]  # type: ignore[index]
    assert len(keys) == 2 and min(map(len, keys)) > 160 - 70  # with the numbers, wider than a pipe's 160 cells
    lines = run("usage", "session", str(folder), env=env).stdout.splitlines()
    for key in keys:
        assert any(line.startswith(key + " ") for line in lines), (key, lines)


def test_search_marker_has_a_column_of_its_own(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """In ``search``'s text, the on-path ``*`` stands in its own column before the role,
    spaced from it, whether the role is ``user`` or ``assistant`` (the longest role
    once ran into it: ``assistant*``); the roles and paths start at one column."""
    from sessiontree.cli import main

    folder = tmp_path / "p"
    folder.mkdir()
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"}

    def msg(eid: str, parent: str | None, role: str, text: str) -> dict[str, object]:
        body: dict[str, object] = {"role": role, "content": [{"type": "text", "text": text}]}
        return {"type": "message", "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
                "message": body}

    lines = [head, msg("u1", None, "user", "zebra one"), msg("a1", "u1", "assistant", "zebra two"),
             msg("a2", "u1", "assistant", "zebra three"), msg("u2", "a2", "user", "zebra four")]
    (folder / "s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    monkeypatch.setenv("SESSIONTREE_CATALOG", "off")
    assert main(["search", "zebra", str(folder)]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if "s.jsonl" in line]
    got = {line.split()[-1]: line for line in heads}
    assert set(got) == {"u1", "a1", "a2", "u2"}, heads
    at = {1 + (line.index(" user ") if " user " in line else line.index(" assistant ")) for line in heads}
    assert len(at) == 1, heads  # every role starts in one column
    (role_at,) = at
    marks = {eid: line[role_at - 2:role_at] for eid, line in got.items()}
    assert marks == {"u1": "* ", "a1": "  ", "a2": "* ", "u2": "* "}, heads
    assert len({line.index(str(folder)) for line in heads}) == 1, heads


def test_a_hit_on_the_session_s_name_shows_the_name_once(tmp_path: Path, backend: str,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A hit on a ``session_info`` name prints that name once, on its snippet line, not
    also at the end of its head (trial 55); a hit on an earlier name, and any other hit,
    keep the session's name in the head."""
    from sessiontree.cli import main

    folder = tmp_path / "p"
    folder.mkdir()
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"},
        {"type": "session_info", "id": "n1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
         "name": "zebra  draft"},
        {"type": "message", "id": "u1", "parentId": "n1", "timestamp": "2025-01-01T00:00:02.000Z",
         "message": {"role": "user", "content": "a zebra crossing"}},
        {"type": "session_info", "id": "n2", "parentId": "u1", "timestamp": "2025-01-01T00:00:03.000Z",
         "name": "zebra project " + "x" * 300},
    ]
    (folder / "s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    monkeypatch.setenv("SESSIONTREE_CATALOG", "off")
    assert main(["search", "zebra", str(folder)]) == 0
    out = capsys.readouterr().out.splitlines()
    current = "zebra project " + "x" * 45 + "…"  # the name as a head shows it (60 characters)
    at = {eid: next(k for k, line in enumerate(out) if f"s.jsonl  {eid}" in line) for eid in ("n1", "n2", "u1")}
    assert out[at["n2"]].endswith("s.jsonl  n2"), out  # the name is on its snippet line only
    assert out[at["n2"] + 1].startswith("    zebra project xxx"), out
    assert sum("zebra project" in line for line in out) == 3, out  # n2's snippet, n1's and u1's heads
    assert out[at["n1"]].endswith(f"n1  {current}") and out[at["n1"] + 1] == "    zebra draft", out
    assert out[at["u1"]].endswith(f"u1  {current}"), out


def test_persisted_index_settings_that_cannot_be_used_are_one_line_errors(tmp_path: Path) -> None:
    """CONTRACT §6: the persisted indexes are never inside Pi's folders, and
    SESSIONTREE_INDEX_BYTES is a size as SESSIONTREE_CACHE_BYTES is. A setting that
    breaks either is one ``sessiontree: error:`` line and exit 2 from every command (not
    a traceback from those that open a session, not silence from those that list),
    naming what was set: the variable, or the default folder when it is unset."""
    home, cache = tmp_path / "home", tmp_path / "cache"
    store = home / ".pi" / "agent" / "sessions"
    (store / "--p--").mkdir(parents=True)
    cache.mkdir()
    s = tmp_path / "s" / "a.jsonl"
    s.parent.mkdir()
    generate_session(s, size_bytes=3_000, seed=7, cwd="/p")
    base = {"HOME": str(home), "XDG_CACHE_HOME": str(cache), "SESSIONTREE_CATALOG": str(tmp_path / "c.sqlite3")}
    base_env = {k: v for k, v in os.environ.items() if k not in ("PI_CODING_AGENT_DIR", "SESSIONTREE_INDEX")}
    leaf = json.loads(run("info", str(s), "--json", env=base).stdout)["leafId"]
    commands = [["info", str(s)], ["tree", str(s)], ["context", str(s)], ["check", str(s)],
                ["export", str(s), "--format", "markdown", "--out", str(tmp_path / "o.md")],
                ["fork", str(s), "--leaf", leaf, "--out", str(tmp_path / "f")], ["browse", str(s)],
                ["ls", str(s.parent)], ["search", "the", str(s.parent)], ["usage", str(s.parent)],
                ["index", str(s.parent)]]

    def fails(env: dict[str, str], needles: list[str], cmds: list[list[str]]) -> None:
        for args in cmds:
            p = subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True,
                               env={**base_env, **base, **env}, timeout=120, stdin=subprocess.DEVNULL)
            lines = p.stderr.strip().splitlines()
            assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("sessiontree: error: "), (args, p.stderr)
            assert all(n in lines[0] for n in needles), (args, lines[0])
        assert not (tmp_path / "f").exists() and not (tmp_path / "o.md").exists()
        assert sorted(q.name for q in store.rglob("*")) == ["--p--"]  # nothing written in Pi's store

    inside = str(store / "idx")
    fails({"SESSIONTREE_INDEX": inside}, [f"SESSIONTREE_INDEX={inside!r}", f"inside Pi's folder {store}"], commands)
    (cache / "sessiontree").mkdir()
    (cache / "sessiontree" / "index").symlink_to(store / "--p--")
    fails({}, ["default folder", str(cache / "sessiontree" / "index"), f"a link to {store / '--p--'}",
               "set SESSIONTREE_INDEX"], commands)
    (cache / "sessiontree" / "index").unlink()
    for value in ("abc", "-1", "1e30", "99999999999999999999999"):
        fails({"SESSIONTREE_INDEX_BYTES": value}, [f"SESSIONTREE_INDEX_BYTES must be a size such as 512MiB or 0, "
                                                   f"not {value!r}"], [["info", str(s)], ["ls", str(s.parent)]])
    for value in ("1GiB", "64 MiB", "0", "1048576"):  # the syntax of SESSIONTREE_CACHE_BYTES
        p = run("info", str(s), env={**base, "SESSIONTREE_INDEX_BYTES": value})
        assert p.returncode == 0 and not p.stderr, (value, p.stderr)


def test_names_under_a_locale_without_utf8_are_os_fsdecode_names(tmp_path: Path) -> None:
    """Under a C locale without UTF-8 mode (the file system's encoding ASCII), a file
    named ``é.jsonl`` is named as ``os.fsdecode`` names it (``\\udcc3\\udca9.jsonl``) by
    ``usage`` warm, cold and ``--no-cache`` and by ``ls`` (shown ``$'...\\xc3\\xa9...'``),
    and is read: the extension's names came back as ``é``, which that Python cannot
    encode to open the file (``--no-cache`` failed; adversary round 55)."""
    folder = tmp_path / "h"
    folder.mkdir()
    for seed, name in enumerate(("é", "f")):
        generate_session(folder / f"{name}.jsonl", size_bytes=3_000, seed=7 + seed, cwd="/w")
    env = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": "utf-8"}
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.getfilesystemencoding())"],
                           capture_output=True, text=True, env={**os.environ, **env}, check=True)
    if probe.stdout.strip() != "ascii":
        pytest.skip(f"this Python keeps {probe.stdout.strip()} under a C locale")
    expected = str(folder) + "/" + "é.jsonl".encode().decode("ascii", "surrogateescape")
    catalog = str(tmp_path / "c.sqlite3")
    for extra in (["--catalog", catalog], ["--catalog", catalog], ["--no-cache"]):
        report = _json(run("usage", "session", str(folder), "--json", *extra, env=env))
        assert isinstance(report, dict)
        keys = sorted(line["key"] for line in report["lines"])
        assert keys == sorted([expected, str(folder / "f.jsonl")]), (extra, keys)
    listed = run("ls", str(folder), "--no-cache", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "$'" + str(folder) + "/\\xc3\\xa9.jsonl'" in listed.stdout, listed.stdout


def test_an_older_catalog_that_stays_is_not_said_to_be_replaced(tmp_path: Path) -> None:
    """The note that a catalog is made again is given only where it is (adversary 58):
    not for one this version cannot replace (a read-only file or folder: root held to
    file modes), nor by a command that stops before it opens the catalog (a bad query,
    ``browse`` without a terminal); a FIFO in its place is never opened."""
    import sqlite3
    import threading

    from test_catalog_rows import _without_dac_override

    from sessiontree.catalog import other_schema, replaced

    folder = tmp_path / "p"
    folder.mkdir()
    run("generate", str(folder / "s.jsonl"), "--entries", "60", "--seed", "4")
    cache = tmp_path / "cache"
    catalog = cache / "sessiontree" / "catalog.sqlite3"
    default = {"XDG_CACHE_HOME": str(cache), "SESSIONTREE_CATALOG": None}
    assert run("ls", str(folder), env=default).returncode == 0
    c = sqlite3.connect(catalog)
    c.execute("PRAGMA user_version = 9")
    c.commit()
    c.close()
    before = catalog.read_bytes()
    for args in (["search", "  ", str(folder)], ["browse", str(folder)]):
        p = run(*args, env=default)
        assert p.returncode == 2 and "sessiontree version" not in p.stderr, p.stderr
    prefix = _without_dac_override()
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "SESSIONTREE_CATALOG")}
    for mode_of, named in ((catalog.parent, []), (catalog, ["--catalog", str(catalog)])):
        mode_of.chmod(0o555 if mode_of.is_dir() else 0o444)
        try:
            p = subprocess.run([*prefix, sys.executable, "-m", "sessiontree", "usage", "model", str(folder),
                                "--json", *named], capture_output=True, text=True, timeout=300,
                               env={**full, "XDG_CACHE_HOME": str(cache)})
        finally:
            mode_of.chmod(0o755 if mode_of.is_dir() else 0o644)
        assert p.returncode == 0 and "sessiontree version" not in p.stderr, p.stderr
        assert p.stdout == run("usage", "model", str(folder), "--json", "--no-cache").stdout
    assert catalog.read_bytes() == before and other_schema(str(catalog)) == 9 and replaced(str(catalog))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    writer.join(0.3)  # blocked in its open, waiting for a reader
    assert other_schema(str(fifo)) is None and not replaced(str(fifo))
    writer.join(0.3)
    assert writer.is_alive()  # its open still waits: no one opened the FIFO to read
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(5)
