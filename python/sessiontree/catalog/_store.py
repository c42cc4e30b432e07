"""The catalog's database: schema, opening (a damaged or foreign file is rebuilt, never
trusted), rows in and out.

SQLite through the standard library, WAL journal (readers never wait for a writer),
``synchronous=NORMAL`` (a cache may lose its last transactions in a power cut, never
its consistency), a busy timeout for writers. Every change to one file's rows is one
transaction that first checks the row is still the one the change was computed from
(``gen``), so two processes refreshing the same file cannot both apply their growth.

Tables:

* ``folder(id, path, gen)`` — absolute folder paths; ``gen`` counts the changes to its
  files' rows and totals that a warm report reads (kept by triggers, in the changes'
  own transactions, whoever makes them).
* ``file`` — one row per ``.jsonl`` file: its identity when read (dev, inode, size,
  mtime, ctime) and the digest of the ends of the bytes read with the inode's marks
  (``_indexer.ends_digest``: ``_filestate``'s rule), the
  listing facts of ``[0, l_end)`` and how far its usage log goes (``c_end``); or why it
  is not a session (``problem``). Small, so a listing reads few pages. ``warm``
  (generated, kept only in the index ``file_warm`` with the folder and name) is its
  identity and whether its usage log is read to its end (but for an unterminated last
  piece that is no entry: ``tail``; the file cannot change without its identity), as
  one text: a warm report reads the index, not the rows (``_usage._warm``). A search reads what its freshness
  check needs from the index ``file_search`` in the same way (``_search._from_index``).
* ``entries(file, record)`` — the entries record of a file (``_records``), which grows
  with the session: apart, so that reading a ``file`` row never walks its overflow
  pages.
* ``usage_log(file, log)`` — the file's recorded usage up to ``c_end`` (``_records``'s
  usage log), apart from the ``file`` row for the same reason.
* ``usage_sum(file, sums)`` — the same usage summed by the keys reports group on
  (``src/totals.rs``: by model and 15-minute slice of UTC, all records and those on
  the current path, with the records' copy key hashes), written with the log it sums
  (no row: none kept, the log answers): a warm report reads these, not the logs.
* ``usage_folder(folder, stamp, record)`` — a folder's file rows as a warm report
  reads them (name, ``warm``, totals), in one value (``src/warm_rows.rs``), made from
  the rows by a warm report or ``index`` at the folder's ``gen`` then (``stamp``):
  current while the two are equal, so that a report of an unchanged folder reads one
  value, not a row and a lookup per file (``_usage._read_folders``).
* ``segment(name, size, docs)`` — the search index's segments (``_segments``), files
  in the folder beside the database (:attr:`Store.segments_dir`). A file row's
  ``epoch`` (a random number drawn whenever the file is read from its start) and
  ``s_end`` say which of their pieces are its: those of its epoch that end by
  ``s_end``; ``s_entries`` is the length of its entries record up to ``s_end``.
"""

from __future__ import annotations

import contextlib
import fcntl
import operator
import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any

from .._lazy import lazy_pattern

__all__ = ["SCHEMA_VERSION", "COLUMN_TYPES", "FileRow", "Store", "CatalogError", "checked", "checked_all"]

SCHEMA_VERSION = 16
"""Bumped whenever the schema or what a row means changes: an older catalog is rebuilt."""

APPLICATION_ID = 0x53547243  # "STrC"
_SQLITE_MAGIC = b"SQLite format 3\x00"  # the file header; the application id is at offset 68
# After the catalog's own name: a half-made catalog (``Store._create``).
_LEFTOVER: re.Pattern[str] = lazy_pattern(r"\.[0-9]+\.new(?:-wal|-shm)?")

_TABLES = ("meta", "folder", "file", "entries", "usage_log", "usage_sum", "usage_folder", "segment")
_INDEXES = ("file_warm", "file_search")  # queries name them (``_usage._warm``, ``_search``): a catalog without one is rebuilt
# What keeps ``folder.gen`` moving with every change a folder's usage record was made
# from: a catalog without one of them is rebuilt (a record could be taken as current).
_TRIGGERS = ("file_added", "file_changed", "file_gone", "sums_added", "sums_changed", "sums_gone")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE folder (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, gen INTEGER NOT NULL DEFAULT 0);
CREATE TABLE file (
    id INTEGER PRIMARY KEY,
    folder INTEGER NOT NULL,
    name TEXT NOT NULL,
    dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL DEFAULT 0,
    ends BLOB,
    gen INTEGER NOT NULL DEFAULT 0,
    l_end INTEGER NOT NULL,
    tail INTEGER NOT NULL DEFAULT 0,
    resumable INTEGER NOT NULL,
    old INTEGER NOT NULL DEFAULT 0,
    problem TEXT, problem_line INTEGER, problem_offset INTEGER,
    sid, cwd, parent, created_ms INTEGER,
    message_count INTEGER NOT NULL DEFAULT 0,
    first_message, title, activity REAL,
    entry_count INTEGER NOT NULL DEFAULT 0,
    c_end INTEGER, c_entries INTEGER NOT NULL DEFAULT 0, c_count INTEGER NOT NULL DEFAULT 0,
    epoch INTEGER NOT NULL DEFAULT 0, s_end INTEGER, s_entries INTEGER NOT NULL DEFAULT 0,
    warm TEXT GENERATED ALWAYS AS (dev || ' ' || ino || ' ' || size || ' ' || mtime_ns || ' ' || ctime_ns || ' ' ||
        CASE WHEN problem IS NOT NULL THEN 0 WHEN c_end = l_end AND l_end + tail = size THEN 1 ELSE 2 END) VIRTUAL,
    UNIQUE (folder, name)
);
CREATE INDEX file_warm ON file (folder, name, warm);
CREATE INDEX file_search ON file (folder, name, dev, ino, size, mtime_ns, ctime_ns, l_end, tail, problem, old, epoch,
                                  s_end);
CREATE TABLE entries (file INTEGER PRIMARY KEY, record BLOB NOT NULL);
CREATE TABLE usage_log (file INTEGER PRIMARY KEY, log BLOB NOT NULL);
CREATE TABLE usage_sum (file INTEGER PRIMARY KEY, sums BLOB NOT NULL);
CREATE TABLE usage_folder (folder INTEGER PRIMARY KEY, stamp INTEGER NOT NULL, record BLOB NOT NULL);
CREATE TRIGGER file_added AFTER INSERT ON file BEGIN
    UPDATE folder SET gen = gen + 1 WHERE id = NEW.folder; END;
CREATE TRIGGER file_changed AFTER UPDATE OF folder, name, dev, ino, size, mtime_ns, ctime_ns, problem, l_end, tail, c_end
    ON file BEGIN UPDATE folder SET gen = gen + 1 WHERE id IN (OLD.folder, NEW.folder); END;
CREATE TRIGGER file_gone AFTER DELETE ON file BEGIN
    UPDATE folder SET gen = gen + 1 WHERE id = OLD.folder; END;
CREATE TRIGGER sums_added AFTER INSERT ON usage_sum BEGIN
    UPDATE folder SET gen = gen + 1 WHERE id = (SELECT folder FROM file WHERE id = NEW.file); END;
CREATE TRIGGER sums_changed AFTER UPDATE ON usage_sum BEGIN
    UPDATE folder SET gen = gen + 1 WHERE id IN (SELECT folder FROM file WHERE id IN (OLD.file, NEW.file)); END;
CREATE TRIGGER sums_gone AFTER DELETE ON usage_sum BEGIN
    UPDATE folder SET gen = gen + 1 WHERE id = (SELECT folder FROM file WHERE id = OLD.file); END;
CREATE TABLE segment (name TEXT PRIMARY KEY, size INTEGER NOT NULL, docs INTEGER NOT NULL) WITHOUT ROWID;
"""


def flock_within(fd: int, seconds: float) -> bool:
    """Take an exclusive ``flock`` on ``fd``, waiting ``seconds`` at most (a holder
    stopped with ctrl+z keeps it for good); whether it was taken."""
    end = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= end:
                return False
            time.sleep(0.05)


class CatalogError(Exception):
    """The catalog cannot be used (it cannot be created or written here)."""


def _say_rebuilt(path: str, why: str) -> None:
    """A :class:`~sessiontree.errors.CatalogRebuiltWarning` for the catalog at ``path``,
    given at the caller's line: the first frame outside this package. A fixed level
    named one of ours (``catalog/_run.py``), and Python's default filter says a warning
    once per line: every later rebuild, from any call of the program, went unsaid
    (adversary 59b), and a filter by the caller's module never matched."""
    import sys
    import warnings

    from ..errors import CatalogRebuiltWarning

    level, frame = 1, sys._getframe()
    package = __name__.partition(".")[0]
    while frame.f_back is not None and frame.f_globals.get("__name__", "").partition(".")[0] == package:
        frame, level = frame.f_back, level + 1
    why = why.removeprefix("catalog damaged: ")
    warnings.warn(CatalogRebuiltWarning(f"the catalog {path} was damaged ({why}); a new one is made in its place, "
                                        "so this command reads every session once"), stacklevel=level)


# ---------------------------------------------------------------- text values
_LONE_SURROGATE: re.Pattern[str] = lazy_pattern("[\ud800-\udfff]")  # a pair is one code point in a str


def db_text(s: str | None) -> str | bytes | None:
    """A ``str`` as SQLite can store it: as is, or (lone surrogates) the UTF-8 bytes
    ``surrogatepass`` gives, stored as a BLOB and turned back by :func:`py_text`."""
    if s is None or s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")
    return s


def py_text(v: Any) -> Any:
    """Undo :func:`db_text`.

    Raises:
        sqlite3.DatabaseError: a BLOB :func:`db_text` never writes (bytes that are not
            UTF-8, or UTF-8 without a lone surrogate, which it stores as a text).
    """
    if isinstance(v, bytes):
        try:
            s = v.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as e:  # db_text never writes such bytes: damage (run() rebuilds)
            raise sqlite3.DatabaseError(f"catalog damaged: a text that is not UTF-8 ({e})") from e
        if _LONE_SURROGATE.search(s) is None:
            raise sqlite3.DatabaseError("catalog damaged: a BLOB where a text belongs")
        return s
    return v


def search_text(s: str) -> str:
    """A doc's text as it is searched: each lone surrogate replaced by one U+FFFD,
    everything else as it is."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", s)
    return s


# ------------------------------------------------------------------ file rows
class FileRow:
    """One ``file`` row (see the module docstring); ``id`` is ``None`` until saved.

    ``FileRow(name=value, ...)`` takes fields by name; a field not given keeps its
    default (its class attribute). A catalog row is built by ``_rows``. A plain class, not
    a dataclass: ``dataclasses`` imports ``inspect`` (``ast``, ``dis``, ``tokenize``),
    about 7 ms of every warm ``usage`` and ``search`` (docs/BENCHMARKS.md, issue 25).
    """

    folder: int
    name: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int = 0  # utime() restores an mtime, never a ctime
    l_end: int = 0
    tail: int = 0  # bytes of an unterminated last piece read after l_end
    resumable: bool = False
    id: int | None = None
    ends: bytes | None = None
    gen: int = 0
    old: bool = False
    problem: str | None = None
    problem_line: int | None = None
    problem_offset: int | None = None
    sid: str | None = None
    cwd: str | None = None
    parent: str | None = None
    created_ms: int | None = None
    message_count: int = 0
    first_message: str | None = None
    title: str | None = None
    activity: float | None = None
    entry_count: int = 0
    c_end: int | None = None
    c_entries: int = 0
    c_count: int = 0
    epoch: int = 0  # drawn anew at each read from the start (search segments' pieces name it)
    s_end: int | None = None  # the search index holds [0, s_end)
    s_entries: int = 0
    sums: bytes | None = None  # the usage totals of ``log`` (src/totals.rs); None: not kept or not read
    log: bytes | None = None  # the usage log to [0, c_end); None: not read (Store.logs)
    entries: bytes | None = None  # None: not read from the catalog (Store.entries)

    def __init__(self, **named: Any) -> None:
        unknown = named.keys() - _FIELD_SET
        missing = [f for f in _REQUIRED if f not in named]
        if unknown or missing:
            raise TypeError(f"FileRow: unknown fields {sorted(unknown)}, missing {missing}")
        self.__dict__.update(named)

    def __eq__(self, other: object) -> bool:
        if type(other) is not FileRow:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"FileRow({', '.join(f'{f}={getattr(self, f)!r}' for f in _FIELDS)})"


# The fields in order, with their annotations (strings: ``from __future__ import annotations``).
_FIELD_TYPES: dict[str, str] = dict(FileRow.__annotations__)
_FIELDS = tuple(_FIELD_TYPES)
_FIELD_SET = frozenset(_FIELDS)
_REQUIRED = tuple(f for f in _FIELDS if f not in vars(FileRow))


_TEXT_COLUMNS = frozenset({"name", "sid", "cwd", "parent", "first_message", "title", "problem"})
# The ``file`` table's columns: every field but the usage totals, the usage log and the
# entries record (their own tables, read only when needed), which are last, so a row
# read (``_rows``) leaves them unread (their class defaults).
_ROW_COLUMNS = _FIELDS[:-3]
_TEXT_AT = tuple(i for i, c in enumerate(_ROW_COLUMNS) if c in _TEXT_COLUMNS)
_SAVED_COLUMNS = tuple(c for c in _ROW_COLUMNS if c not in ("id", "gen"))
# A row's saved values in one call (a dict built per file was a sixth of a first
# listing's saving), its texts at these places, and the statements that write them.
_SAVED_VALUES = operator.attrgetter(*_SAVED_COLUMNS)
_SAVED_TEXT_AT = tuple(i for i, c in enumerate(_SAVED_COLUMNS) if c in _TEXT_COLUMNS)
_INSERT_FILE = (f"INSERT INTO file (id, {', '.join(_SAVED_COLUMNS)}, gen)"
                f" VALUES (?, {', '.join('?' * len(_SAVED_COLUMNS))}, 1)")
_UPDATE_FILE = (f"UPDATE file SET {', '.join(f'{k} = ?' for k in _SAVED_COLUMNS)}, gen = gen + 1"
                " WHERE id = ? AND gen = ?")

assert list(_FIELDS[-3:]) == ["sums", "log", "entries"]


# The types each column's values may have, from FileRow's annotations (a bool is
# stored as 0/1, a text with a lone surrogate as a BLOB, a float that is whole may come
# back as an int).
_STORED: dict[str, tuple[type, ...]] = {
    "int": (int,), "bool": (int,), "int | None": (int, type(None)), "str": (str, bytes),
    "str | None": (str, bytes, type(None)), "float | None": (float, int, type(None)),
    "bytes | None": (bytes, type(None)),
}
# Offsets and counts, never negative; the usage log and the search index never pass the
# listing (c_end, s_end <= l_end).
_COUNTS_AT = tuple(i for i, c in enumerate(_ROW_COLUMNS) if c in (
    "size", "l_end", "tail", "gen", "message_count", "entry_count", "c_end", "c_entries", "c_count", "problem_line",
    "problem_offset", "s_end", "s_entries"))
_L_END_AT, _C_END_AT, _S_END_AT = (_ROW_COLUMNS.index("l_end"), _ROW_COLUMNS.index("c_end"),
                                   _ROW_COLUMNS.index("s_end"))


_INT: tuple[type, ...] = (int,)
_TEXT: tuple[type, ...] = (str, bytes)  # bytes: a text with a lone surrogate (db_text), py_text checks it

COLUMN_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "meta": {"key": (str,), "value": (str, float, int)},
    "folder": {"id": _INT, "path": _TEXT, "gen": _INT},
    "file": {f: _STORED[_FIELD_TYPES[f]] for f in _ROW_COLUMNS},
    "entries": {"file": _INT, "record": (bytes,)},
    "usage_log": {"file": _INT, "log": (bytes,)},  # its bytes are checked as they are unpacked
    "usage_sum": {"file": _INT, "sums": (bytes,)},  # its bytes are checked as they are read (src/totals.rs)
    "usage_folder": {"folder": _INT, "stamp": _INT, "record": (bytes,)},  # its bytes too (src/warm_rows.rs)
    "segment": {"name": (str,), "size": _INT, "docs": _INT},
}
"""The types each column of each table may hold when it is read: everything the catalog
writes, nothing else. A value of another type, a NULL where none is written, a BLOB where a
text belongs is damage (:func:`checked`; :func:`~sessiontree.catalog.run` rebuilds).
Every reader of a table goes through :func:`checked` (``file`` rows through ``_rows``, which
also checks what a row's numbers mean); ``tests/test_catalog_rows.py`` holds this table to
the schema and corrupts every column."""


_TYPES_AT = tuple((i, COLUMN_TYPES["file"][c]) for i, c in enumerate(_ROW_COLUMNS))

KEYS = (("file", "folder"),)
"""The integer columns rows are looked up by, each the first column of an index: a row
whose key is not an integer is never returned, so reading cannot see it (a file would
be silently missing; ``entries`` and ``usage_log`` are keyed by their rowid, which is
always an integer). :meth:`Store.check_keys` looks for a TEXT or
BLOB there through the index before a command reads."""


def checked(table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[Sequence[Any]]:
    """``rows`` of ``table`` (``columns``, in order), each held to :data:`COLUMN_TYPES`.

    Raises:
        sqlite3.DatabaseError: a value the catalog never writes (damage).
    """
    spec = COLUMN_TYPES[table]
    types = [spec[c] for c in columns]
    for r in rows:
        for v, t, c in zip(r, types, columns):
            if type(v) not in t:
                raise sqlite3.DatabaseError(f"catalog damaged: {table}.{c} holds a {type(v).__name__}")
        yield r


def checked_all(table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[Sequence[Any]]:
    """:func:`checked` over all ``rows`` at once, column by column (the types of a
    column's values gathered in one pass each: a warm report's 2,000 file rows in well
    under a millisecond, where a value-by-value check took several).

    Raises:
        sqlite3.DatabaseError: a value the catalog never writes (damage).
    """
    out = rows if isinstance(rows, list) else list(rows)
    if out:
        spec = COLUMN_TYPES[table]
        for c, values in zip(columns, zip(*out)):
            bad = set(map(type, values)).difference(spec[c])
            if bad:
                raise sqlite3.DatabaseError(f"catalog damaged: {table}.{c} holds a {bad.pop().__name__}")
    return out


def _rows(rows: list[Sequence[Any]]) -> list[FileRow]:
    """``file`` rows (every column of ``_ROW_COLUMNS``, in order) as :class:`FileRow` objects,
    checked a column at a time (checked a row at a time, value by value, they were
    0.39 of the 0.99 s cProfile gave a warm listing of 20,000 files).

    Raises:
        sqlite3.DatabaseError: a value the catalog never writes (damage): a type the
            column does not hold, a negative offset or count, a usage log or search index
            past the listing's end.
    """
    if not rows:
        return []
    columns = list(zip(*rows))
    for i, types in _TYPES_AT:
        if not set(map(type, columns[i])).issubset(types):
            raise _damaged()
    for i in _COUNTS_AT:
        col: Sequence[Any] = columns[i]
        if None in col:
            col = [v for v in col if v is not None]
        if col and min(col) < 0:
            raise _damaged()
    l_ends = columns[_L_END_AT]
    for at in (_C_END_AT, _S_END_AT):
        if any(e is not None and e > last for e, last in zip(columns[at], l_ends)):
            raise _damaged()
    # A text with a lone surrogate is stored as a BLOB (db_text): those columns are
    # converted where one holds one.
    texts = [i for i in _TEXT_AT if bytes in set(map(type, columns[i]))]
    out = []
    for values in rows:
        row = FileRow.__new__(FileRow)  # every column is there (checked above): no need to check names
        row.__dict__ = dict(zip(_ROW_COLUMNS, values))
        for i in texts:
            if isinstance(values[i], bytes):
                setattr(row, _ROW_COLUMNS[i], py_text(values[i]))
        row.resumable = bool(row.resumable)
        row.old = bool(row.old)
        out.append(row)
    return out


def _damaged() -> sqlite3.DatabaseError:
    # Every value was written by Batch.save: any other is damage (run() rebuilds).
    return sqlite3.DatabaseError("catalog damaged: a file row holds a value the catalog never writes")


def busy(e: sqlite3.Error) -> bool:
    """Another process holds the catalog (SQLITE_BUSY / SQLITE_LOCKED), not damage."""
    code = getattr(e, "sqlite_errorcode", None)  # Python 3.11+; 3.10 has the message only
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (sqlite3 names them from 3.11)
    return "locked" in str(e) or "busy" in str(e)


def other_schema(path: str) -> int | None:
    """The schema version of the catalog at ``path`` when another version of sessiontree
    made it (:func:`_schema_now`: its application id is this catalog's, its
    ``user_version`` another): an older one is replaced when opened (:func:`replaced`),
    a newer one is left as it is. ``None`` when nothing is there, it is this version's,
    it is not a sessiontree catalog, or it cannot be read now."""
    version = _schema_now(path)
    return None if version in (_UNREAD, SCHEMA_VERSION) else version


# What _schema_now answers for a catalog another process holds so that it cannot be read
# now (an exclusive lock, a WAL index held): not replaced, not opened for writing.
_UNREAD = -(1 << 63)
# Its last answers where it had to open the file (a WAL beside it): a stopped process
# holding the WAL index made each such read wait ~10 s (adversary 58c), and a command
# asks several times.
_SEEN: dict[tuple[str, tuple[int, ...]], int | None] = {}


def _schema_now(path: str) -> int | None:
    """The ``user_version`` of the catalog at ``path`` if its application id is this
    catalog's, ``None`` if it is not one of ours (or not there), :data:`_UNREAD` if it
    cannot be read now (another process holds it; or SQLite fails to read one whose
    header is ours: a full disk). From its header (the first 100 bytes of a regular file only: a
    FIFO or a device is never opened) when no WAL is beside it; with one, as SQLite reads
    it through a read-only connection, which sees what is still in the WAL (a newer
    version's migration or new file, or one whose writer was killed) and never
    checkpoints it into the file (adversary 58b, 58c)."""
    # As _filestate.open_regular opens, without importing it (and typing): a warm
    # command asks this at its start.
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        head = os.pread(fd, 100, 0) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        wal = os.lstat(path + "-wal")
    except OSError:
        if len(head) < 72 or head[:16] != _SQLITE_MAGIC or int.from_bytes(head[68:72], "big") != APPLICATION_ID:
            return None
        return int.from_bytes(head[60:64], "big", signed=True)  # SQLite's user_version
    key = (path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, wal.st_ino, wal.st_size, wal.st_mtime_ns))
    if key in _SEEN:
        return _SEEN[key]
    from urllib.parse import quote_from_bytes

    # The file itself may still be empty (a new one whose pages are all in its WAL).
    got: int | None = _UNREAD
    try:
        conn = sqlite3.connect(f"file:{quote_from_bytes(os.fsencode(path))}?mode=ro", uri=True, timeout=1.0)
        try:
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            read = conn.execute("PRAGMA user_version").fetchone()[0]
        finally:
            conn.close()
        got = read if app == APPLICATION_ID and type(read) is int else None
    except sqlite3.Error as e:
        # Not a database SQLite reads: not ours to judge by its schema, unless its
        # header says it is ours (SQLite could not read it now: its shared memory cannot
        # grow on a full disk, an I/O error; adversary 61): never replaced then.
        ours = len(head) >= 72 and head[:16] == _SQLITE_MAGIC and int.from_bytes(head[68:72], "big") == APPLICATION_ID
        if not busy(e) and not ours:
            got = None
    _SEEN.clear()
    _SEEN[key] = got
    return got


def replaced(path: str) -> bool:
    """Whether opening the catalog at ``path`` makes a new one in place of another
    version's (:func:`other_schema`): this version may replace it (:func:`_kept`:
    not a newer version's, not read-only, ...) and may write its folder (the new file
    is made there and renamed over it)."""
    schema = _schema_now(path)
    return (schema is not None and schema != SCHEMA_VERSION and _kept(path, schema) is None
            and os.access(os.path.dirname(path) or ".", os.W_OK))


def _kept(path: str, schema: int | None) -> str | None:
    """Why the file at ``path``, not a valid catalog, must not be replaced by a new
    one, or ``None`` when it may be (``schema``: its version, :func:`_schema_now`, or
    ``None`` when it is not ours): nothing is there, or a regular file (not a symlink)
    that is empty, at the catalog's own place (``_location.cache_path``), or one of
    ours (of an older schema, or damaged past its header).
    Anything else, a session file or another program's database named by mistake, a
    device, a FIFO, a newer version's catalog (wherever it is), is not this version's
    to replace."""
    from ._location import cache_path

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if not os.access(path, os.W_OK):
        return "read-only"  # made so on purpose: the files are read instead (CONTRACT §7)
    if schema == _UNREAD:
        return "cannot be read now (held by another process, or its disk is full)"
    if schema is not None and schema > SCHEMA_VERSION:
        # Two versions sharing one cache would each rebuild the other's (trial 58):
        # the older reads the files instead.
        return f"made by a newer sessiontree version (schema {schema})"
    if st.st_size == 0 or os.path.abspath(path) == cache_path() or schema is not None:
        return None
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return "not recognised as a sessiontree catalog"


# ---------------------------------------------------------------------- store
class Store:
    """An open catalog database.

    Args:
        path: the database file (created, with its folder, if missing).
        busy: seconds a write waits for another process's write to finish.

    Raises:
        CatalogError: it cannot be opened or created.
    """

    def __init__(self, path: str, busy: float = 30.0) -> None:
        self.path = path
        self.busy = busy
        # (st_dev, st_ino) of the file the connection opened (:meth:`_try`).
        self._file: tuple[int, int] | None = None
        try:
            self.conn = self._open()
        except (OSError, sqlite3.Error) as e:
            raise CatalogError(f"{path}: cannot use the catalog ({e})") from e

    # -- opening -----------------------------------------------------------------
    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """The exclusive lock under which a catalog file is created or replaced, waited
        for ``busy`` seconds at most (a creator stopped with ctrl+z holds it for good).

        Raises:
            CatalogError: the lock stayed taken.
        """
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if not flock_within(fd, self.busy):
                raise CatalogError(f"{self.path}: another process is creating the catalog "
                                   f"(it holds {self.path}.lock)")
            yield
        finally:
            os.close(fd)

    def _connect(self, path: str) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=self.busy, isolation_level=None, check_same_thread=False)
        return conn

    @staticmethod
    def _configure(conn: sqlite3.Connection) -> sqlite3.Connection:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _valid(self, conn: sqlite3.Connection) -> bool:
        # Only reads: a damaged or foreign file is judged before anything is written
        # to it (setting the journal mode of an empty file would wait for other
        # connections to the file it replaced).
        try:
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as e:
            if busy(e):
                conn.close()
                raise  # held by another process (a lock past the wait): not damage to replace
            return False
        return app == APPLICATION_ID and version == SCHEMA_VERSION and all(
            t in names for t in _TABLES + _INDEXES + _TRIGGERS)

    def _try(self) -> sqlite3.Connection | None:
        """A connection to ``path`` if it holds a valid catalog (a regular file: SQLite
        is never pointed at a FIFO or a device, whose reads may block or never end)."""
        try:
            st = os.stat(self.path)
            if not stat.S_ISREG(st.st_mode):
                return None
        except OSError:
            return None
        schema = _schema_now(self.path)
        if schema is not None and (schema > SCHEMA_VERSION or schema == _UNREAD):
            # A newer version's (or one held so that it cannot be read) is not even read
            # here: closing a connection would checkpoint its WAL into it.
            return None
        try:
            conn = self._connect(self.path)
        except sqlite3.DatabaseError:
            return None
        if self._valid(conn):
            self._file = (st.st_dev, st.st_ino)
            return self._configure(conn)
        conn.close()
        return None

    def _refuse(self) -> None:
        """Raise when the file at ``path``, not a valid catalog, must not be replaced
        (:func:`_kept`), its schema read now (another version may have migrated it
        since this store opened it: adversary 58b).

        Raises:
            CatalogError: why, and what to do: another catalog file (the likeliest file
                here is a session named by mistake: not "delete it"), or wait for one of
                ours that cannot be read now.
        """
        schema = _schema_now(self.path)
        why = _kept(self.path, schema)
        if why is not None:
            then = ("try again once it can be read" if schema == _UNREAD
                    else "choose another catalog file: --catalog, $SESSIONTREE_CATALOG")
            raise CatalogError(f"{self.path}: {why}; not replaced ({then})")

    def _open(self) -> sqlite3.Connection:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        conn = self._try()
        if conn is not None:
            return conn
        self._refuse()
        with self._lock():
            conn = self._try()  # another process may have made it meanwhile
            if conn is not None:
                return conn
            self._refuse()  # ... or put a newer version's in its place (adversary 58b)
            damage = self._damage()
            self._create()
        if damage is not None:
            _say_rebuilt(self.path, damage)
        conn = self._try()
        if conn is None:
            raise CatalogError(f"{self.path}: the new catalog does not read back")
        return conn

    def _create(self) -> None:
        """A new empty catalog at ``path``, replacing whatever is there (under the lock).

        Built beside it and renamed into place, so no process opens a half-made one.
        """
        tmp = f"{self.path}.{os.getpid()}.new"
        # Under the lock no other process is making one: any such file is a leftover
        # (a run killed mid-way), swept so it never counts against the folder's budget.
        folder, base = os.path.split(self.path)
        with contextlib.suppress(OSError), os.scandir(folder or ".") as it:
            for e in it:
                if _LEFTOVER.fullmatch(e.name[len(base):]) and e.name.startswith(base):
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)
        conn = None
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            # One transaction, no syncs: the file is not in use until it is renamed.
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("PRAGMA journal_mode=MEMORY")
            conn.executescript("BEGIN;" + _SCHEMA + f"PRAGMA application_id={APPLICATION_ID};"
                               f"PRAGMA user_version={SCHEMA_VERSION};"
                               f"INSERT INTO meta VALUES ('created', {time.time()!r}); COMMIT;")
            # Made a WAL file before anyone sees it: two processes that each switched a
            # new catalog to WAL at once would each hold a read lock and want the
            # other's, and SQLite answers one of them "database is locked" at once,
            # without waiting (its deadlock rule).
            conn.execute("PRAGMA journal_mode=WAL")
        except BaseException:
            if conn is not None:
                conn.close()
            for p in (tmp, tmp + "-wal", tmp + "-shm"):  # a full disk: leave nothing behind
                with contextlib.suppress(OSError):
                    os.unlink(p)
            raise
        conn.close()
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path + suffix)
        os.replace(tmp, self.path)
        # The old catalog's search segments go with it (readers holding one keep it).
        with contextlib.suppress(OSError), os.scandir(self.segments_dir) as it:
            for e in it:
                if e.name.startswith(("seg-", ".seg-")):
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)

    def _damage(self) -> str | None:
        """What is wrong with the file at ``path`` that :meth:`_open` is about to replace
        (under the lock, :meth:`_refuse` passed), or ``None`` when its replacing is no
        damage: nothing or an empty file there, or an older version's catalog."""
        try:
            if os.stat(self.path).st_size == 0:
                return None
        except OSError:
            return None
        schema = _schema_now(self.path)
        if schema is None:
            return "not a catalog's header"
        if schema < SCHEMA_VERSION:
            return None
        return "tables missing or unreadable"

    def rebuild(self, why: str | None = None) -> None:
        """Throw the catalog away and start an empty one (a damaged database; ``why``:
        what SQLite or a check said, given as a :class:`CatalogRebuiltWarning`)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()
        with self._lock():
            self._refuse()  # judged now, under the lock: a newer version may have migrated it
            if self._replaced_since():
                # Another process met the same damage first and made a new one: that
                # one is used, not replaced in turn (its work lost) nor said again.
                conn = self._try()
                if conn is not None:
                    self.conn = conn
                    return
            self._create()
        if why is not None:
            _say_rebuilt(self.path, why)
        conn = self._try()
        if conn is None:
            raise CatalogError(f"{self.path}: the new catalog does not read back")
        self.conn = conn

    def _replaced_since(self) -> bool:
        """Whether the file at ``path`` is no longer the one this store opened."""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) != self._file

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def check_keys(self) -> None:
        """Raise ``sqlite3.DatabaseError`` if a :data:`KEYS` column holds a TEXT or a BLOB
        (both sort after every number: one seek of its index each).

        Not seen: a key that is a REAL with a fraction (it sorts among the integers).
        """
        for table, key in KEYS:
            r = self.conn.execute(f"SELECT typeof({key}) FROM {table} WHERE {key} >= '' LIMIT 1").fetchone()
            if r is not None:
                raise sqlite3.DatabaseError(f"catalog damaged: {table}.{key} holds a {r[0]}")

    # -- reading -----------------------------------------------------------------
    def folder_id(self, path: str, create: bool) -> int | None:
        """The id of folder ``path`` (absolute), made if ``create`` and missing."""
        sql = "SELECT id FROM folder WHERE path = ?"
        r = next(checked("folder", ("id",), self.conn.execute(sql, (db_text(path),))), None)
        if r is not None or not create:
            return None if r is None else int(r[0])
        with self.write():
            self.conn.execute("INSERT OR IGNORE INTO folder (path) VALUES (?)", (db_text(path),))
        r = next(checked("folder", ("id",), self.conn.execute(sql, (db_text(path),))), None)
        if r is None:
            raise sqlite3.DatabaseError("catalog damaged: a folder row does not read back")
        return int(r[0])

    def folders(self) -> dict[str, int]:
        rows = checked("folder", ("id", "path"), self.conn.execute("SELECT id, path FROM folder"))
        return {py_text(p): i for i, p in rows}

    def files(self, folder: int) -> dict[str, FileRow]:
        """The rows of a folder's files, by name (``entries`` not read: ``None``)."""
        cols = ", ".join(_ROW_COLUMNS)
        rows = self.conn.execute(f"SELECT {cols} FROM file WHERE folder = ?", (folder,))
        return {r.name: r for r in _rows(rows.fetchall())}

    def entries(self, file: int, gen: int | None = None) -> bytes | None:
        """The entries record of a file (``_records``); with ``gen``, ``None`` if the row
        is no longer that generation (another process saved it since it was read: the
        record goes with the newer row). One statement, so row and record agree."""
        r = self.conn.execute(
            "SELECT file.gen, file.entry_count, entries.record FROM file LEFT JOIN entries"
            " ON entries.file = file.id WHERE file.id = ?", (file,)).fetchone()
        if r is not None and (type(r[0]) is not int or type(r[1]) is not int or type(r[2]) not in (bytes, type(None))):
            raise sqlite3.DatabaseError("catalog damaged: an entries record or its file row holds a wrong type")
        if r is None:
            return None if gen is not None else b""  # dropped since
        if gen is not None and r[0] != gen:
            return None
        if r[2] is not None:
            return bytes(r[2])
        if r[1]:
            # Every saved file has its record: one missing is damage (run() rebuilds).
            raise sqlite3.DatabaseError(f"catalog damaged: file {file} has no entries record")
        return b""

    @property
    def segments_dir(self) -> str:
        """The folder of the search index's segment files (beside the database)."""
        return self.path + ".idx"

    def segments(self) -> list[tuple[str, int, int]]:
        """The search index's segments: ``(name, size, docs)``."""
        cols = ("name", "size", "docs")
        rows = [tuple(r) for r in checked("segment", cols, self.conn.execute(
            "SELECT name, size, docs FROM segment ORDER BY name"))]
        for name, _size, _docs in rows:
            if not name.startswith("seg-") or "/" in name:
                raise sqlite3.DatabaseError("catalog damaged: a segment row the catalog never writes")
        return rows

    def logs(self, files: Sequence[int]) -> dict[int, bytes]:
        """The usage logs of files (those that have one)."""
        return self._blobs("usage_log", "log", files)

    def sums(self, files: Sequence[int]) -> dict[int, bytes]:
        """The usage totals of files (those that have them)."""
        return self._blobs("usage_sum", "sums", files)

    def _blobs(self, table: str, column: str, files: Sequence[int]) -> dict[int, bytes]:
        """``file -> column`` of the rows of ``table`` (one of this module's) for ``files``,
        500 to a query (SQLite's bound-parameter limit)."""
        out: dict[int, bytes] = {}
        for k in range(0, len(files), 500):
            part = files[k:k + 500]
            rows = self.conn.execute(
                f"SELECT file, {column} FROM {table} WHERE file IN ({','.join('?' * len(part))})", part)
            for f, blob in checked_all(table, ("file", column), rows.fetchall()):
                out[f] = blob
        return out

    # -- writing -----------------------------------------------------------------
    def keep_records(self, made: Sequence[tuple[int, int, bytes | None]]) -> None:
        """Save folders' usage records, each ``(folder, gen, record)`` made from the
        folder's rows at that ``gen`` (one no longer current is not written; ``record``
        ``None``: drop the folder's record of that ``gen``). A cache filled in passing:
        nothing is waited for (another writer holds the catalog) and nothing is said
        when the catalog cannot be written (read-only, a full disk)."""
        if not made:
            return
        c = self.conn
        c.execute("PRAGMA busy_timeout = 0")
        try:
            c.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return
        finally:
            c.execute(f"PRAGMA busy_timeout = {int(self.busy * 1000)}")
        try:
            c.executemany("INSERT OR REPLACE INTO usage_folder (folder, stamp, record) SELECT ?1, ?2, ?3"
                          " WHERE (SELECT gen FROM folder WHERE id = ?1) = ?2", [m for m in made if m[2] is not None])
            c.executemany("DELETE FROM usage_folder WHERE folder = ? AND stamp = ?",
                          [(f, g) for f, g, r in made if r is None])
            c.execute("COMMIT")
        except sqlite3.OperationalError:
            with contextlib.suppress(sqlite3.Error):
                c.execute("ROLLBACK")

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: it waits up to ``busy`` seconds
        for another writer), committed on success, rolled back on any error."""
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")

    def save(self, row: FileRow, *, reset: bool) -> bool:
        """Write one file's row in a transaction of its own (see :meth:`Batch.save`)."""
        b = self.batch()
        try:
            ok = b.save(row, reset=reset, found=row)
        except BaseException:
            b.abandon()
            raise
        return ok and not b.commit()

    def batch(self) -> Batch:
        """A write transaction for the changes of several files (``BEGIN IMMEDIATE``:
        it waits up to ``busy`` seconds for another writer).

        Raises:
            sqlite3.OperationalError: the catalog stayed busy.
        """
        return Batch(self)


    def drop(self, ids: Sequence[int]) -> None:
        """Forget files (they are gone): their rows and everything derived from them."""
        if not ids:
            return
        with self.write() as c:
            for table, key in (("entries", "file"), ("usage_log", "file"), ("usage_sum", "file"), ("file", "id")):
                c.executemany(f"DELETE FROM {table} WHERE {key} = ?", [(i,) for i in ids])


class Batch:
    """One write transaction holding the changes of several files (a file another
    process changed first is left out, the others stay). Small files are saved many to
    a transaction and their rows inserted together (``executemany``), which is most of
    a first listing's writing cost; :meth:`full` says when to commit. Rows of new files
    get their ids here (the transaction holds the write lock)."""

    MAX_FILES = 512
    MAX_ROWS = 20_000
    MAX_SECONDS = 0.25

    def __init__(self, store: Store) -> None:
        self.conn = store.conn
        self.conn.execute("BEGIN IMMEDIATE")
        self.next_id = int(self.conn.execute("SELECT coalesce(max(id), 0) FROM file").fetchone()[0]) + 1
        self._first_new = self.next_id  # ids from here on are this batch's new files
        self.started = time.monotonic()
        self.files = 0
        self.rows = 0
        self._undo: list[tuple[FileRow, int | None, int]] = []
        self._found: dict[int, Any] = {}
        self._inserts: list[tuple[FileRow, int, tuple[Any, ...]]] = []
        self._entries: list[tuple[int, bytes]] = []
        self._logs: list[tuple[int, bytes]] = []
        self._sums: list[tuple[int, bytes | None]] = []
        self._lost: list[Any] = []  # noted files an early flush found taken by another process

    def save(self, row: FileRow, *, reset: bool, found: Any = None) -> bool:
        """Write one file's row, entries record and usage log.

        Args:
            row: the row as it is now (``row.gen`` is the generation it was read at;
                ``row.id`` ``None`` for a new file; ``row.entries`` / ``row.log``
                ``None``: unchanged).
            reset: the file was read again from its start: its old usage log goes.
            found: the caller's note of the file: :meth:`commit` and :meth:`abandon`
                return those whose saves did not happen.

        Returns:
            False if another process changed the row since it was read (nothing of this
            file written; ``row`` as it was).
        """
        values = list(_SAVED_VALUES(row))
        for i in _SAVED_TEXT_AT:
            values[i] = db_text(values[i])
        c = self.conn
        if row.id is None:
            file = self.next_id
            self.next_id += 1
            self._inserts.append((row, file, tuple(values)))
        else:
            # The row is written first and is where a conflict shows (an UPDATE of
            # another generation): then nothing was written.
            file = row.id
            if self._inserts and file >= self._first_new:
                # A new file's later piece in the batch of its first: its row is still
                # queued, and the UPDATE must find it.
                self._lost.extend(self._flush_inserts())
                if row.id is None:
                    return False  # another process added the file first
            cur = c.execute(_UPDATE_FILE, (*values, file, row.gen))
            if cur.rowcount != 1:
                return False
            if reset and row.log is None:
                c.execute("DELETE FROM usage_log WHERE file = ?", (file,))
                c.execute("DELETE FROM usage_sum WHERE file = ?", (file,))
        if row.entries is not None:
            self._entries.append((file, row.entries))
        if row.log is not None:
            self._logs.append((file, row.log))
            self._sums.append((file, row.sums))  # the totals go with the log they sum
        self._undo.append((row, row.id, row.gen))
        row.id = file
        row.gen += 1
        if found is not None:
            self._found[file] = found
        self.files += 1
        self.rows += 1 + len(row.log or b"") // 256
        return True

    def full(self) -> bool:
        return (self.files >= self.MAX_FILES or self.rows >= self.MAX_ROWS
                or time.monotonic() - self.started >= self.MAX_SECONDS)

    def _flush_inserts(self) -> list[Any]:
        """Insert the new files' rows; those another process added first (a name taken
        between our read and our write lock) are dropped with their derived rows."""
        if not self._inserts:
            return []
        sql = _INSERT_FILE
        lost: set[int] = set()
        # Under a savepoint: a conflict part-way through leaves the rows before it
        # inserted, and the retry one by one would take each of those for another
        # process's and drop its usage log and totals (adversary round 51: the row
        # stayed "read to its end" with nothing to read, and counted 0 for good).
        self.conn.execute("SAVEPOINT inserts")
        try:
            self.conn.executemany(sql, [(file, *vals) for _row, file, vals in self._inserts])
        except sqlite3.IntegrityError:
            self.conn.execute("ROLLBACK TO inserts")
            for row, file, vals in self._inserts:
                try:
                    self.conn.execute(sql, (file, *vals))
                except sqlite3.IntegrityError:
                    lost.add(file)
                    row.id, row.gen = None, 0
        self.conn.execute("RELEASE inserts")
        self._inserts.clear()
        if not lost:
            return []
        self._entries = [x for x in self._entries if x[0] not in lost]
        self._logs = [x for x in self._logs if x[0] not in lost]
        self._sums = [x for x in self._sums if x[0] not in lost]
        return [self._found.pop(f) for f in lost if f in self._found]

    def commit(self) -> list[Any]:
        """Write what is queued and commit; the files (as noted) whose saves were lost
        to another process's."""
        c = self.conn
        try:
            lost = self._lost + self._flush_inserts()
            self._lost = []
            if self._entries:
                c.executemany("INSERT OR REPLACE INTO entries (file, record) VALUES (?, ?)", self._entries)
            if self._logs:
                c.executemany("INSERT OR REPLACE INTO usage_log (file, log) VALUES (?, ?)", self._logs)
            if self._sums:
                c.executemany("DELETE FROM usage_sum WHERE file = ?", [(f,) for f, s in self._sums if s is None])
                c.executemany("INSERT OR REPLACE INTO usage_sum (file, sums) VALUES (?, ?)",
                              [(f, s) for f, s in self._sums if s is not None])
            c.execute("COMMIT")
        except BaseException:
            self.abandon()
            raise
        self._undo.clear()
        self._found.clear()
        self._entries, self._logs, self._sums = [], [], []
        return lost

    def abandon(self) -> list[Any]:
        """Roll back; the rows get their ids and generations back; returns the files
        noted (their saves did not happen)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("ROLLBACK")
        for row, rid, gen in reversed(self._undo):
            row.id, row.gen = rid, gen
        self._undo.clear()
        self._inserts.clear()
        self._entries, self._logs, self._sums = [], [], []
        found, self._found = [*self._lost, *self._found.values()], {}
        self._lost = []
        return found
