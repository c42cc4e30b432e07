"""``sessiontree usage``'s table when stdout is not a terminal: written without rich
(``view.plain_table``), the bytes rich's table wrote whenever it fitted, every cell in
full where rich cut some, and keys shown as they are (rich read ``[b]`` as markup)."""

from __future__ import annotations

import io
import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontree._places import session_dir_for_cwd
from sessiontree.view import shown_path
from sessiontree.generate import generate_session
from sessiontree.view import plain_table

_CHARS = "abcxyz0189 ./-_,$()é—中文😀"


def _rich(rows: list[list[str]], right: list[bool], width: int) -> str:
    """The table as ``cli/usage.py`` printed it with rich before: no box, no outer
    padding, a bold title row, on a console that is not a terminal."""
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, width=width, soft_wrap=True, highlight=False)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for title, r in zip(rows[0], right):
        table.add_column(title, justify="right" if r else "left", no_wrap=True)
    for row in rows[1:]:
        table.add_row(*row)
    console.print(table, width=width)
    return out.getvalue()


def test_plain_table_is_riches_table_where_it_fits() -> None:
    rng = random.Random(7)
    for _ in range(300):
        ncols = rng.randint(1, 8)
        right = [rng.random() < 0.6 for _ in range(ncols)]
        rows = [["".join(rng.choice(_CHARS) for _ in range(rng.randint(0 if r else 1, 14))).strip() or "t"
                 for _c in range(ncols)] for r in range(rng.randint(1, 6))]
        text = plain_table(rows, right)
        assert text == _rich(rows, right, 400), (rows, right)


def test_a_table_of_no_columns_is_no_text() -> None:
    """Rows without cells (or cells no column pairs with) write nothing, not a blank line
    (adversary 56)."""
    assert plain_table([[]], []) == "" and plain_table([["a", "b"]], []) == "" and plain_table([], []) == ""


def test_the_extensions_table_is_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """``plain_columns`` written by the extension (``src/table.rs``) is the Python
    statement's text: wide, combining and control characters, lone surrogates, empty
    cells, more columns than ``right`` names, iterators for columns and for ``right``,
    any value's truth in ``right`` (adversary 57)."""
    from sessiontree.view import _cells, plain_columns

    if _cells._native("plain_columns") is None:
        pytest.skip("the extension is not built")
    rng = random.Random(11)
    chars = _CHARS + "\u0301\x01\t\udcff"
    for _ in range(600):
        nrows = rng.randint(0, 7)
        ncols = rng.randint(0, 6)
        columns = [["".join(rng.choice(chars) for _ in range(rng.randint(0, 12))) for _r in range(nrows)]
                   for _c in range(ncols)]
        right = [rng.choice([True, False, 1, 0, None, "yes"]) for _ in range(rng.randint(max(0, ncols - 1), ncols + 1))]
        got = plain_columns((iter(c) for c in columns), iter(right))  # type: ignore[arg-type]
        with monkeypatch.context() as m:
            m.setattr(_cells, "_native", lambda name: None)
            want = plain_columns(columns, right)  # type: ignore[arg-type]
        assert got == want, (columns, right)
    for bad in ([["a"], []], [["a", "b"], ["c"]]):
        for native in (True, False):
            with monkeypatch.context() as m:
                if not native:
                    m.setattr(_cells, "_native", lambda name: None)
                with pytest.raises(ValueError):
                    plain_columns(bad, [False, True])
    with pytest.raises(TypeError):
        plain_columns([["a", 1]], [False])  # type: ignore[list-item]
    # `right` is read as zip pairs it with the columns: an endless one too.
    assert plain_columns([["a", "bb"]], itertools.repeat(True)) == " a\nbb\n"  # type: ignore[arg-type]


def _root(base: Path, cwds: list[str]) -> Path:
    root = base / "sessions"
    for i, cwd in enumerate(cwds):
        folder = Path(session_dir_for_cwd(cwd, str(root)))
        folder.mkdir(parents=True, exist_ok=True)
        generate_session(folder / f"s{i:02d}.jsonl", size_bytes=3_000 + 500 * i, seed=70 + i, cwd=cwd)
    return root


def _run(args: list[str], env: dict[str, str]) -> str:
    p = subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True,
                       encoding="utf-8", env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("usage-text")
    root = _root(base, ["/home/u/plain", "/home/u/[b]bold[/b] :smile:", "/home/u/中文", "/home/u/plain"])
    env = {**os.environ, "HOME": str(base), "XDG_CACHE_HOME": str(base / "cache"),
           "SESSIONTREE_CATALOG": str(base / "catalog.sqlite3")}
    env.pop("COLUMNS", None)
    return root, env


@pytest.mark.parametrize("report", ["model", "daily", "weekly", "monthly", "project", "session"])
def test_the_table_holds_the_reports_lines(history: tuple[Path, dict[str, str]], report: str) -> None:
    """Every line of the JSON report is one row: its key as it is (markup too; a path
    quoted as a shell takes it back), each
    number in full (or short, never cut), the total, then the footnote; with and
    without the catalog."""
    root, env = history
    for cache in ([], ["--no-cache"]):
        data = json.loads(_run(["usage", report, str(root), "--json", *cache], env))
        for columns in (None, "80", "400"):
            run_env = env if columns is None else {**env, "COLUMNS": columns}
            text = _run(["usage", report, str(root), *cache], run_env)
            lines = text.splitlines()
            days = f"; days in {data['timeZone']}" if report in ("daily", "weekly", "monthly") else ""  # its zone named
            assert lines[-1] == f"{data['files']:,} session(s); every branch; each entry counted once{days}"
            body = lines[1:-2]
            assert len(body) == len(data["lines"]) and lines[-2].startswith("total ")
            assert "…" not in text
            for line, row in zip(body, data["lines"]):
                # a session's key is its path as every command prints it (view.shown_path)
                key = shown_path(row["key"]) if report == "session" else row["key"]
                assert line.startswith(key + " "), (line, key)
                assert line.split()[-7] == f"{row['records']:,}"
                if columns in ("400", None):
                    # Piped without $COLUMNS there is no width to fit: every number in
                    # full, however wide the table (trial 57).
                    assert line.endswith(f"{row['cost']:,.4f}") and f"{row['output']:,}" in line


@pytest.mark.parametrize("report", ["model", "daily", "project", "session"])
def test_the_table_is_the_one_rich_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str], report: str) -> None:
    """Keys without markup, the table fitting the width: the bytes of the table rich
    wrote (``Io.plain_width`` saying ``None`` takes that path)."""
    from sessiontree.cli import _common, main

    root = _root(tmp_path, ["/home/u/one", "/home/u/two", "/home/u/中文"])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("SESSIONTREE_CATALOG", str(tmp_path / "catalog.sqlite3"))
    for columns in ("400", "250"):
        monkeypatch.setenv("COLUMNS", columns)
        outs = []
        for plain in (True, False):
            with monkeypatch.context() as m:
                if not plain:
                    m.setattr(_common.Io, "plain_width", lambda self: None)
                assert main(["usage", report, str(root)]) == 0
            outs.append(capsys.readouterr().out)
        assert outs[0] == outs[1] and outs[0].count("\n") > 3


@pytest.mark.parametrize("report", ["model", "daily", "project"])
def test_a_table_that_fits_the_terminal_is_written_without_rich(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str],
                                                               report: str) -> None:
    """At a terminal, a table that fits is the piped table (held to rich's above) with
    its titles and total bold and its foot dim, as rich's table printed them, and
    rich's console, table and text are not imported for it (about 50 ms at a terminal;
    its table of character widths may be, to measure a wide key)."""
    import re

    from sessiontree.cli import main

    root = _root(tmp_path, ["/home/u/one", "/home/u/two", "/home/u/中文"])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("SESSIONTREE_CATALOG", str(tmp_path / "catalog.sqlite3"))
    for env in ("NO_COLOR", "FORCE_COLOR", "TERM", "LINES"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["usage", report, str(root)]) == 0
    piped = capsys.readouterr().out
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main(["usage", report, str(root)]) == 0
    styled = capsys.readouterr().out
    assert re.sub("\x1b\\[[0-9;]*m", "", styled) == piped
    lines = styled.splitlines()
    assert lines[0].startswith("\x1b[1m") and lines[-2].startswith("\x1b[1mtotal ")
    assert lines[-1].startswith("\x1b[2m") and not any("\x1b" in x for x in lines[1:-2])
    code = ("import sys\nfrom sessiontree.cli import main\n"
            f"main(['usage', {report!r}, {str(root)!r}])\n"
            "heavy = ('rich.console', 'rich.table', 'rich.text', 'rich.progress', 'rich.style')\n"
            "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n")
    env = {**os.environ, "TTY_COMPATIBLE": "1", "COLUMNS": "250"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.stdout == styled and p.stderr.strip().splitlines()[-1] == "[]", p.stderr


@pytest.mark.parametrize(("dates", "said"), [
    (["--since", "2000-01-02", "--until", "2999-12-30"], "2000-01-02 to 2999-12-30; "),
    (["--since", "20000102"], "from 2000-01-02 on; "),
    (["--until", "2999-12-30"], "up to 2999-12-30; "),
])
def test_a_report_of_some_days_says_which(history: tuple[Path, dict[str, str]], dates: list[str], said: str) -> None:
    """The footer of a report kept to some days says which (it read as a report of
    every day); so does the note when those days hold no usage."""
    root, env = history
    data = json.loads(_run(["usage", "model", str(root), "--json", *dates], env))
    assert data["lines"]
    lines = _run(["usage", "model", str(root), *dates], env).splitlines()
    assert lines[-1] == (f"{data['files']:,} session(s); {said}every branch; each entry counted once; "
                         f"days in {data['timeZone']}")
    p = subprocess.run([sys.executable, "-m", "sessiontree", "usage", "model", str(root), "--since", "2999-12-31"],
                       capture_output=True, text=True, encoding="utf-8", env=env, timeout=300)
    assert p.returncode == 0 and p.stdout == ""
    assert p.stderr.startswith(f"no recorded usage from 2999-12-31 on in {data['files']:,} session(s) of ")


def test_days_since_after_until_are_a_usage_error(history: tuple[Path, dict[str, str]]) -> None:
    """``--since`` after ``--until`` keeps no day: said as an error (status 2), not an
    empty report that reads as "no usage" (a new user's trial)."""
    root, env = history
    p = subprocess.run([sys.executable, "-m", "sessiontree", "usage", "daily", str(root), "--since", "2026-02-01",
                        "--until", "2026-01-01"], capture_output=True, text=True, encoding="utf-8", env=env,
                       timeout=300)
    assert p.returncode == 2 and p.stdout == ""
    assert "--since 2026-02-01 is after --until 2026-01-01" in p.stderr


def test_a_narrow_terminal_folds_model_names_between_their_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """At a terminal too narrow for the names beside the numbers, a model's name is
    folded after a ``/``, ``-``, ``.`` or ``:`` (rich folded ``anthropic/claud`` +
    ``e-opus-4-5``: trial 57); every line fits and the names read back whole, as they
    are."""
    import re

    from sessiontree.cli import main

    # A name is never read as markup either ("[/]" raised MarkupError, "[draft]" went
    # missing, ":smile:" became an emoji: adversary 58).
    models = [("amazon-bedrock", "us.anthropic.claude-opus-4-20250514-v1:0"), ("anthropic", "claude-opus-4-5"),
              ("openrouter", "qwen/qwen3-coder[/]:smile:[draft]")]
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}]
    for i, (provider, model) in enumerate(models * 2):
        usage = {"input": 1234567 * (i + 1), "output": 7654321, "cacheRead": 99999999, "cacheWrite": 5555555,
                 "totalTokens": 123456789, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                                    "total": 123.4567}}
        lines.append({"type": "message", "id": f"a{i}", "parentId": f"a{i - 1}" if i else None,
                      "timestamp": f"2026-01-01T00:00:{i:02d}.000Z",
                      "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "x",
                                  "provider": provider, "model": model, "usage": usage, "stopReason": "stop",
                                  "timestamp": 1767225600000 + i}})
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    monkeypatch.setenv("SESSIONTREE_CATALOG", str(tmp_path / "catalog.sqlite3"))
    for env in ("NO_COLOR", "FORCE_COLOR", "TERM", "LINES"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    names = [f"{p}/{m}" for p, m in models]
    for width in (75, 90, 24, 40):  # a table (names beside their numbers); too narrow: blocks
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(["usage", "model", str(tmp_path)]) == 0
        out = re.sub("\x1b\\[[0-9;]*m", "", capsys.readouterr().out).splitlines()
        assert all(len(x) <= width for x in out), out
        groups: list[list[str]] = []
        if width >= 75:
            title = out[0]
            key = len(title) - len(title[len("model"):].lstrip(" ")) - 2  # the key column's cells
            for line in out[1:-2]:  # the total and the foot after the body
                piece, numbers = line[:key].rstrip(" "), line[key:].strip()
                if numbers:
                    groups.append([])
                groups[-1].append(piece)
        else:
            for line in out[:out.index("total")]:  # then the total's numbers and the foot
                if not line.startswith("  "):
                    if not groups or groups[-1][-1] == "":
                        groups.append([])
                    groups[-1].append(line)
                elif groups and groups[-1][-1] != "":
                    groups[-1].append("")  # the name's numbers: it is whole
            groups = [[p for p in g if p] for g in groups]
        assert sorted("".join(g) for g in groups) == sorted(names), (width, out)
        assert all(p[-1] in "/-.:" for g in groups for p in g[:-1]), (width, groups)
        assert any(len(g) > 1 for g in groups), (width, groups)  # some name was folded, at its marks
