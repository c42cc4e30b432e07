"""Every row of every table of the catalog is held to what the catalog writes (issue 24,
item 4; CONTRACT §7, "Never trusted when damaged").

Only the ``file`` rows were type-checked: a usage or doc row holding a text where a
number belongs, a NULL or a BLOB raised ``TypeError`` / ``ValueError`` out of ``usage``
and ``search``. Here each column of each table is given, in turn, each kind of value the
catalog never writes there, and every command that reads the table must answer as
reading the files does (the catalog rebuilt). ``_store.COLUMN_TYPES`` is the one table
of what a column may hold; it is held to the schema, so a new column cannot be left out.

A read-only catalog file (mode 444 in a writable folder) was replaced by a new one by
``search``; the files are read instead, and the file stays as it was.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree import catalog as cat
from sessiontree._listing import list_folders
from sessiontree.catalog._store import _SCHEMA, _TABLES, COLUMN_TYPES, KEYS

from test_catalog import make_root
from _shared import said_if_rebuilt


def _schema() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(_SCHEMA)
    return conn


def _copy(built: Path, catalog: Path) -> None:
    """The catalog and its search index's segments (``<catalog>.idx``)."""
    shutil.copyfile(built, catalog)
    shutil.copytree(f"{built}.idx", f"{catalog}.idx")


def test_every_column_of_every_table_has_its_types() -> None:
    conn = _schema()
    for table in _TABLES:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        assert sorted(cols) == sorted(COLUMN_TYPES[table]), table


# A value of each kind, as SQL, and the Python type it reads back as. A BLOB of plain
# UTF-8 is wrong in a text column too: the catalog stores a text as a BLOB only when it
# holds a lone surrogate (``_store.db_text``).
_VALUES = {"text": ("'x'", str), "int": ("7", int), "real": ("1.5", float), "null": ("NULL", type(None)),
           "blob": ("x'ff00'", bytes), "utf8-blob": ("x'41'", bytes)}
_TYPEOF = {"text": str, "integer": int, "real": float, "null": type(None), "blob": bytes}


def _stored(decl: str, notnull: bool, pk: bool, sql: str) -> type | None:
    """The type SQLite stores ``sql`` as in a column declared so; ``None``: it refuses it."""
    conn = sqlite3.connect(":memory:")
    key = " PRIMARY KEY" if pk and decl.upper() == "INTEGER" else ""
    conn.execute(f"CREATE TABLE p (c {decl}{' NOT NULL' if notnull else ''}{key})")
    try:
        conn.execute(f"INSERT INTO p VALUES ({sql})")
    except sqlite3.IntegrityError:
        return None
    return _TYPEOF[conn.execute("SELECT typeof(c) FROM p").fetchone()[0]]


def _cases() -> list[tuple[str, str, str]]:
    """Each (table, column, kind) where the value can be in the file and is of a type the
    column never holds: not a NULL SQLite refuses (NOT NULL), not a value its affinity
    stores as an allowed type (7 in a TEXT column is the text '7': a wrong value, which
    no type check sees)."""
    conn = _schema()
    out = []
    for table, cols in COLUMN_TYPES.items():
        if table == "meta":
            continue  # never read
        info = {r[1]: r for r in conn.execute(f"PRAGMA table_info({table})")}
        for col, allowed in cols.items():
            _, _, decl, notnull, _, pk = info[col]
            for kind, (sql, _) in _VALUES.items():
                if (table, col) in KEYS and kind == "real":
                    continue  # a key 1.5 sorts among the integers: no index seek finds it (Store.check_keys)
                stored = _stored(decl, bool(notnull), bool(pk), sql)
                if stored is not None and (stored not in allowed or (kind == "utf8-blob" and str in allowed)):
                    out.append((table, col, kind))
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, Any], Path]:
    """Sessions, the answers of reading them, and a full catalog of them (copied per case)."""
    base = tmp_path_factory.mktemp("rows")
    folders = make_root(base / "s", 6, seed=5)
    want = _answers(folders, None)
    built = base / "built.sqlite3"
    cat.index(folders, catalog=str(built))
    return folders, want, built


def _answers(folders: list[str], catalog: str | None) -> dict[str, Any]:
    kw: dict[str, Any] = {"catalog": catalog} if catalog else {"no_cache": True}
    return {
        "ls": list_folders(folders, **kw),
        "search": cat.search("the", folders, limit=None, **kw),
        "search-re": cat.search("re:file", folders, limit=None, **kw),
        "usage": cat.usage("daily", folders, tz=None, **kw),
        "usage-active": cat.usage("session", folders, active_path=True, tz=None, **kw),
        "usage-model": cat.usage("model", folders, tz=None, **kw),
    }


@pytest.mark.parametrize("table, column, kind", _cases())
def test_a_wrong_value_in_any_column_is_rebuilt(tmp_path: Path, history: Any, table: str, column: str,
                                                 kind: str) -> None:
    folders, want, built = history
    catalog = tmp_path / "catalog.sqlite3"
    _copy(built, catalog)
    with sqlite3.connect(catalog) as c:
        # A table WITHOUT ROWID (segment) is keyed by its primary key.
        key = next((r[1] for r in c.execute(f"PRAGMA table_info({table})") if r[5] == 1), "rowid")
        key = "rowid" if key in ("id", "file") else key
        n = c.execute(f"UPDATE {table} SET {column} = {_VALUES[kind][0]} WHERE {key} IN "
                      f"(SELECT {key} FROM {table} LIMIT 1)").rowcount
        stored = {_TYPEOF[t] for (t,) in c.execute(f"SELECT typeof({column}) FROM {table}")}
    assert n == 1 and (kind == "utf8-blob" or not stored <= set(COLUMN_TYPES[table][column])), stored
    with said_if_rebuilt(catalog):
        got = _answers(folders, str(catalog))
    for key in want:
        assert got[key] == want[key], key


@pytest.mark.parametrize("kind", ["text", "blob"])
def test_wrong_values_by_the_command_line(tmp_path: Path, history: Any, kind: str) -> None:
    """The commands the attack ran: one line of output each, no traceback. (A NULL
    cannot be stored where the catalog never writes one: those columns are NOT NULL.)"""
    folders, _, built = history
    catalog = tmp_path / "catalog.sqlite3"
    _copy(built, catalog)
    with sqlite3.connect(catalog) as c:
        c.execute(f"UPDATE usage_log SET log = {_VALUES[kind][0]}")
        c.execute(f"UPDATE file SET created_ms = {_VALUES[kind][0]}, cwd = {_VALUES[kind][0]}")
    env = dict(os.environ, SESSIONTREE_CATALOG=str(catalog), HOME=str(tmp_path))
    root = str(Path(folders[0]).parent)
    for args in (["usage", root, "--json"], ["search", "the", root, "--json"], ["usage", "model", root]):
        p = subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env,
                           timeout=120)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


def _without_dac_override() -> list[str]:
    """A command prefix under which root is held to file modes (as any user is)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("as root a mode-444 file is writable; setpriv (util-linux) drops that power")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_a_read_only_catalog_is_read_never_replaced(tmp_path: Path, history: Any) -> None:
    folders, want, built = history
    catalog = tmp_path / "ro" / "catalog.sqlite3"
    catalog.parent.mkdir()
    shutil.copyfile(built, catalog)
    catalog.chmod(0o444)
    before = os.stat(catalog)
    data = catalog.read_bytes()
    more = tmp_path / "more"  # a folder the catalog does not know: its rows would have to be written
    shutil.copytree(folders[0], more)
    env = dict(os.environ, SESSIONTREE_CATALOG=str(catalog), HOME=str(tmp_path))
    code = ("import sys, json; from sessiontree import catalog as cat\n"
            "r = cat.search('the', sys.argv[1:], limit=None)\n"
            "u = cat.usage('daily', sys.argv[1:])\n"
            "print(json.dumps([r.total, len(u.lines)]))\n")
    p = subprocess.run([*_without_dac_override(), sys.executable, "-c", code, *folders, str(more)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    plain = cat.search("the", [*folders, str(more)], no_cache=True, limit=None)
    assert p.stdout.strip() == f"[{plain.total}, {len(cat.usage('daily', [*folders, str(more)], no_cache=True).lines)}]"
    after = os.stat(catalog)
    assert (after.st_ino, stat.S_IMODE(after.st_mode)) == (before.st_ino, 0o444)
    assert catalog.read_bytes() == data
    p = subprocess.run([*_without_dac_override(), sys.executable, "-m", "sessiontree", "index", str(more)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert os.stat(catalog).st_ino == before.st_ino
