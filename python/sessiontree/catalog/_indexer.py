"""Bringing the catalog up to date with the ``.jsonl`` files of some folders.

Each file is keyed by its identity when it was read (device, inode, size, mtime,
ctime) and the ends of the bytes read (``_filestate``'s rule: first and last
``FINGERPRINT`` bytes). On a refresh a file is

* **unchanged** (same identity): it costs a ``stat``;
* **grown** (same device and inode, longer, the ends of what was read unchanged, a
  header read and no unterminated last line): read from where the catalog stopped;
* **new, replaced, truncated or rewritten** (anything else, including a change of
  mtime or ctime without growth: an open session may take that for a moment of an
  append, ``_filestate``, but a cache cannot check the middle of a file; a rewrite
  whose mtime was put back with ``utime`` cannot put its ctime back, and a chmod that
  costs one read is rare): read again from its start;
* **gone**: its rows are dropped.

Two tracks per file: the listing facts (``l_end``, always brought up to date) and the
usage log (``c_end``, brought up to date only when asked). When both stand at the same
offset, one pass advances both. Reads run in a thread pool (the native reader releases the GIL) and are
cut into pieces of at most :data:`CHUNK` bytes when they collect docs, so memory does
not grow with the largest file; each piece is saved in one transaction.

With no store (``--no-cache``) the same passes run from offset 0 and their results
stay in memory (:func:`read_paths` hands docs to a callback).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence

from .. import _js
from .._caches import held_index_cache
from .._filestate import InodeMarks, ends_and_marks, inode_marks, open_regular
from .._time import parse_iso_ms
from ..errors import InvalidSessionError
from ._files import FileStat, folder_files, folder_key
from ._extract import ScanResult, native_scanner, scan_file
from ._shared import listing_from_index
from ._store import Batch, FileRow, Store

__all__ = ["CHUNK", "Found", "ContentSink", "IndexSummary", "entries_of", "ends_digest", "listed_text", "read_paths",
           "unread_of",
           "refresh", "folder_files"]

CHUNK = 16 << 20
"""Most bytes one scan that collects docs reads before its results are saved."""

# Not ``typing`` and ``dataclasses`` at run time: with ``inspect`` (``ast``, ``dis``,
# ``tokenize``) they were ~8 ms of the first report after an append, which brings the
# catalog up to date through here (docs/BENCHMARKS.md, issue 25).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from .._tuples import NamedTuple

ContentSink = Callable[["Found", Sequence[tuple["Any", ...]], Sequence[tuple["Any", ...]]], None]
"""``sink(found, docs, usage)``: content of a file read without a store."""


class IndexSummary(NamedTuple):
    """What :func:`index` did.

    Attributes:
        files: ``.jsonl`` files seen.
        sessions: of which sessions.
        problems: of which not sessions or unreadable.
        read: files read for the catalog's rows (their listing facts or usage logs;
            the others were up to date).
        bytes_read: bytes read for them.
        catalog: the catalog file (``None`` without one).
        catalog_bytes: its size with its write-ahead log and search segments.
        indexed: files whose new bytes went into the search index (``_segments``;
            natively only).
        bytes_indexed: those bytes.
        indexes_built: sessions scanned to build their persisted index (``_shared``;
            natively, sessions of at least ``_caches.INDEX_MIN_BYTES``).
        indexes_reused: sessions whose persisted index was already kept.
    """

    files: int
    sessions: int
    problems: int
    read: int
    bytes_read: int
    catalog: str | None
    catalog_bytes: int
    indexed: int = 0
    bytes_indexed: int = 0
    indexes_built: int = 0
    indexes_reused: int = 0


class Found:
    """One ``.jsonl`` file of a listed folder and what is known of it.

    Attributes:
        path: the file, as the folder was given joined with its name.
        name: the file name.
        folder: the folder's catalog id (``None`` without a store).
        st: its ``stat`` (``None`` if it could not be taken).
        row: the catalog row after the refresh (``None``: could not be read).
        error: why it could not be read (an ``OSError``'s words), else ``None``.
        saved: the row in the catalog is this one (else it lives in this process only).
        bytes_read: bytes this refresh read of it.
        base: where this refresh started reading it (its ``l_end`` before; 0 when read
            from its start; ``None`` when not read).
    """

    __slots__ = ("path", "name", "folder", "st", "row", "error", "saved", "bytes_read", "base", "_reset")

    def __init__(self, path: str, name: str, folder: int | None, st: FileStat | None, row: FileRow | None = None,
                 error: str | None = None, saved: bool = True, bytes_read: int = 0, base: int | None = None) -> None:
        self.path, self.name, self.folder, self.st, self.row = path, name, folder, st, row
        self.error, self.saved, self.bytes_read, self.base = error, saved, bytes_read, base
        self._reset = False  # read again from its start: its earlier rows are replaced

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__[:-1])
        return f"Found({shown})"


_CANNOT_READ = "cannot read: "


def unread_of(found: Sequence[Found]) -> list[tuple[str, str]]:
    """``(path, why)`` of the files of ``found`` that could be ``stat``-ed but not read
    (a file no one can ``stat``, a dangling link, is no session, with no word): what a
    report's or a search's ``on_unread`` is told, the reason without its prefix."""
    return [(f.path, f.error.removeprefix(_CANNOT_READ)) for f in found if f.error is not None and f.st is not None]


def entries_of(store: Store | None, f: Found) -> bytes:
    """The entries record of a listed session (read from the catalog when not in hand)."""
    row = f.row
    assert row is not None
    if row.entries is None:
        row.entries = (store.entries(row.id) or b"") if store is not None and row.id is not None else b""
    return row.entries


def ends_digest(ends: bytes, marks: InodeMarks) -> bytes:
    """What the catalog keeps of the ends of the bytes read (``indexed_ends``) and of
    the inode's marks (``_filestate.inode_marks``: generation and birth time): a file
    replaced by rename onto a freed inode number, grown, with both ends as they were,
    is not the one read."""
    generation, birth = marks
    return hashlib.blake2b(generation.to_bytes(8, "little") + birth.to_bytes(16, "little", signed=True) + ends,
                           digest_size=16).digest()


# ------------------------------------------------------------------ planning
class _Plan:
    """What to read of one file."""

    __slots__ = ("found", "row", "start", "main_content", "catchup", "v1_content", "docs", "marks")

    def __init__(self, found: Found, row: FileRow, start: int | None, main_content: bool = False,
                 catchup: tuple[int, int] | None = None, v1_content: bool = False, docs: bool = False,
                 marks: InodeMarks | None = None) -> None:
        self.found, self.row = found, row
        self.start = start  # main pass from here (0: from scratch), None: no main pass
        self.main_content = main_content
        self.catchup = catchup  # content-only pass [from, to)
        self.v1_content = v1_content
        self.docs = docs  # read docs too (for a search's sink), not kept
        self.marks = marks  # the inode's, checked when planned; None: read with the file


def _fresh(found: Found, folder: int) -> FileRow:
    st = found.st
    assert st is not None
    return FileRow(folder=folder, name=found.name, dev=st.st_dev, ino=st.st_ino, size=st.st_size,
                   mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns, entries=b"")


def _plan(found: Found, row: FileRow | None, want_content: bool, store: bool) -> _Plan | None:
    st = found.st
    assert st is not None
    if row is None or not store:
        new = _fresh(found, found.folder or 0)
        if row is not None:
            new.id, new.gen = row.id, row.gen
        found._reset = row is not None
        return _Plan(found, new, 0, want_content)
    ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    same = ident == (row.dev, row.ino, row.size, row.mtime_ns, row.ctime_ns)
    wants_catchup = want_content and row.problem is None and (row.c_end is None or row.c_end < row.l_end)
    if row.problem is not None or row.old or not row.resumable:
        if same:
            if not want_content or row.problem is not None or row.c_end is not None:
                return None
            if row.old:
                return _Plan(found, row, None, v1_content=True)
            # An unterminated last line: no resuming, read it all with its content.
            fresh = _fresh(found, row.folder)
            fresh.id, fresh.gen = row.id, row.gen
            found._reset = True
            return _Plan(found, fresh, 0, True)
    elif same and row.l_end >= st.st_size:
        if wants_catchup:
            return _Plan(found, row, None, catchup=(row.c_end or 0, row.l_end))
        return None
    elif ((st.st_dev, st.st_ino) == (row.dev, row.ino) and st.st_size >= row.l_end
          and not (st.st_size == row.size and (st.st_mtime_ns, st.st_ctime_ns) != (row.mtime_ns, row.ctime_ns))
          and (marks := _same_ends(found.path, row.l_end, row.ends)) is not None):
        # It grew (or a read was cut short): go on from where the catalog stopped.
        content_now = row.c_end == row.l_end
        row.dev, row.ino, row.size, row.mtime_ns, row.ctime_ns = ident
        catchup = (row.c_end or 0, row.l_end) if wants_catchup else None
        return _Plan(found, row, row.l_end, want_content or content_now, catchup, marks=marks)
    # New content under an old name: read it all again.
    fresh = _fresh(found, row.folder)
    fresh.id, fresh.gen = row.id, row.gen
    found._reset = True
    return _Plan(found, fresh, 0, want_content)


def _same_ends(path: str, end: int, ends: bytes | None) -> InodeMarks | None:
    """The inode's marks if the file's first ``end`` bytes may be those read when
    their ends' digest (:func:`ends_digest`) was ``ends`` (it only grew since;
    ``_filestate``'s rule), else ``None``."""
    if ends is None:
        return None
    try:
        now, marks = ends_and_marks(path, end)
    except OSError:
        return None
    return marks if ends_digest(now, marks) == ends else None


def listed_text(path: str, end: int, ends: bytes | None, tail: int = 0) -> str:
    """The ``all_messages_text`` of a listed file, read from it now.

    Args:
        path: the file.
        end: where the listing's last whole line ended.
        ends: the digest of the ends of the first ``end`` bytes when they were read
            (:func:`ends_digest`).
        tail: bytes of an unterminated last piece the listing read after ``end``.

    Returns:
        If the file only grew since (the ends unchanged), the text of what the listing
        read: ``end`` bytes of whole lines, then the ``tail`` bytes after them judged as
        a last piece, however that line was finished since (those bytes are not
        fingerprinted: rewritten in place, they are read as they now are). Else, and
        for a version 1 file, the text of all of the file as it now is.

    Raises:
        OSError: the file cannot be read, or is not a regular file.
    """
    native = native_scanner()

    def text_upto(limit: int) -> tuple[str, ScanResult]:
        r = scan_file(path, 0, b"", False, limit, texts=True, native=native)
        return str(r[4][2]), r

    if _same_ends(path, end, ends) is None:
        return text_upto(1 << 62)[0]
    text, r = text_upto(end)
    if not tail or r[2]:  # a version 1 file is read to its end whatever the limit
        return text
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size < end + tail:  # cut back since: as it now is
            return text_upto(1 << 62)[0]
        f.seek(end)
        piece = f.read(tail)
    from ._pyscan import tail_text

    more = tail_text(piece, end, r[5])
    return " ".join(t for t in (text, more) if t)


# ------------------------------------------------------------------ reading
_DONE = object()


def _v1_content(path: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], bytes, int, bytes]:
    """Docs, usage rows, the entries record, the entry count and the usage log of a
    version 1 file, read from its migrated image (the ids a reader sees are those the
    migration gives)."""
    from .._migrate import migrate_image
    from ._pyscan import scan_stream

    with open_regular(path) as f:
        data = f.read()
    image = migrate_image(data, path).image
    r = scan_stream(io.BytesIO(image), 0, b"", True, 1 << 62)
    return r[7], r[8], r[5], r[6], r[9]


def _work(plan: _Plan, native: Any, out: queue.Queue[Any], limit_content: int, shared: bool = False) -> None:
    """Run a plan's reads in a worker thread; each result goes to ``out``. ``shared``: a
    listing from the start may be read through the session's persisted index
    (``_shared``; never without a catalog: ``--no-cache`` reads the files)."""
    path = plan.found.path
    row = plan.row
    try:
        if plan.v1_content:
            out.put((plan, "v1", _v1_content(path)))
        if plan.catchup is not None:
            start, stop = plan.catchup
            prior = (row.entries or b"")[:row.c_entries]
            while start < stop:
                r = scan_file(path, start, prior, True, min(limit_content, stop - start), docs=plan.docs,
                              native=native)
                out.put((plan, "catchup", (start, r, None)))
                if r[0][0] <= start:
                    break
                prior += r[5]
                start = r[0][0]
        if plan.start is not None:
            # Only a main pass records the ends its digest holds the inode's marks with.
            marks = inode_marks(path) if plan.marks is None else plan.marks
            start = plan.start
            prior = (row.entries or b"") if start else b""
            limit = limit_content if plan.main_content else 1 << 62
            if shared and start == 0 and not (plan.main_content or plan.docs):
                # One cache (_shared): the listing up to the end of the session's index.
                kept = listing_from_index(path, row.size, native)
                if kept is not None:
                    out.put((plan, "main", (0, kept, ends_digest(kept[0][4], marks))))
                    prior, start = kept[5], kept[0][0]
            while True:
                r = scan_file(path, start, prior, plan.main_content, limit, docs=plan.docs, native=native)
                out.put((plan, "main", (start, r, ends_digest(r[0][4], marks))))
                if r[2] and plan.main_content:  # a version 1 file: its content comes migrated
                    out.put((plan, "v1", _v1_content(path)))
                end, eof = r[0][0], r[0][1]
                if eof or r[1][0] == "missing" or r[2] or end <= start:
                    break
                prior += r[5]
                start = end
    except OSError as e:
        out.put((plan, "error", e))
    except BaseException as e:  # a bug: the main thread raises it (never waits forever)
        out.put((plan, "crash", e))
    finally:
        out.put((plan, "done", _DONE))


# ------------------------------------------------------------------ applying
def _sum(row: FileRow, piece: bytes, fresh: bool, native: Any) -> None:
    """The row's usage totals after its log grew by ``piece`` (``fresh``: the log is
    ``piece`` alone): the old totals with the piece's records added, natively
    (``src/totals.rs``); none without the native module (a report then reads the log)."""
    if native is None or row.log is None:
        row.sums = None
        return
    row.sums = native.usage_sums(None if fresh else row.sums, piece, row.log, row.entries or b"", row.entry_count)


def _apply_main(plan: _Plan, start: int, r: ScanResult, native: Any = None) -> bool:
    """Fold one main-pass result into the plan's row; whether the row's old derived
    rows must go."""
    row = plan.row
    found = plan.found
    (end, eof, tail, _read, _ends), header, old, _fb, facts, entries, count, _docs, _usage, log = r
    reset = False
    if start == 0:
        # Here alone: a file read from its start (with its orjson and regular
        # expressions, ~7 ms of a report's start that an append does not need).
        from .._reader import header_error, header_problem, read_value

        reset = found._reset
        row.log = b"" if plan.main_content else None
        row.sums = None
        row.l_end = 0
        row.problem = row.problem_line = row.problem_offset = None
        row.message_count, row.first_message, row.title, row.activity = 0, None, None, None
        row.entries, row.entry_count = b"", 0
        row.c_end, row.c_entries, row.c_count = None, 0, 0
        # A random epoch, as secrets.randbits(62) + 1 draws it (that module: ~2 ms of a
        # first report after an append, for one call).
        row.epoch, row.s_end, row.s_entries = (int.from_bytes(os.urandom(8), "little") >> 2) + 1, None, 0
        row.old = False
        kind, value = header
        if kind == "found":
            h = read_value(value).value
            cwd, parent = h.get("cwd"), h.get("parentSession")
            row.sid = h["id"]
            row.cwd = cwd if isinstance(cwd, str) else ""
            row.parent = parent if isinstance(parent, str) else None
            row.created_ms = parse_iso_ms(h.get("timestamp"))
        else:
            if value is None:
                err = header_error(found.path, None, None, ("empty", _js.UNDEFINED))
            else:
                line, offset, raw = value
                err = header_error(found.path, line, offset, header_problem(raw))
            row.problem, row.problem_line, row.problem_offset = _problem(err)
            row.sid = row.cwd = row.parent = None
            row.created_ms = None
    count_messages, first_message, _texts, (name_seen, name), activity = facts
    row.old = row.old or bool(old)
    row.message_count += count_messages
    if row.first_message is None:
        row.first_message = first_message
    if name_seen:
        row.title = (_js.trim(name) or None) if isinstance(name, str) else None
    if activity is not None:
        row.activity = activity if row.activity is None else _js.math_max(row.activity, activity)
    row.entries = (row.entries or b"") + entries
    row.entry_count = count
    row.l_end, row.tail = end, tail
    row.resumable = row.problem is None and not row.old and tail == 0
    if plan.main_content and row.problem is None and not row.old:
        row.c_end, row.c_entries, row.c_count = end, len(row.entries), count
        row.log = (row.log or b"") + log
        _sum(row, log, start == 0, native)
    return reset


def _problem(err: InvalidSessionError) -> tuple[str, int | None, int | None]:
    return (getattr(err, "reason", None) or str(err), getattr(err, "line", None), getattr(err, "offset", None))


def _usage_rows(rows: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [(*meta, *nums) for meta, nums in rows]


def refresh(
    store: Store | None,
    folders: Sequence[str],
    *,
    content: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
    sink: ContentSink | None = None,
    workers: int | None = None,
    must_save: bool = False,
) -> list[Found]:
    """Bring the catalog up to date with the ``.jsonl`` files of ``folders``.

    Args:
        store: the catalog, or ``None`` to read every file from its start and keep
            the results in memory.
        folders: folders as given (their files' paths are joined to them as given).
        content: also bring the usage logs up to date.
        on_progress: ``(files done, files)`` after each file.
        on_bytes: ``(bytes read so far, bytes to read at most)`` after each read.
        sink: receives the docs and usage rows of files read with ``docs`` (:func:`read_paths`).
        workers: reader threads (default: the CPU count, at most 4; 1 for the Python
            rules, which gain nothing from threads).
        must_save: a catalog that stays busy (another process writing) raises
            ``sqlite3.OperationalError``; otherwise the rest of the results stay in
            memory (a listing never waits long).

    Returns:
        Every file, folder by folder in the order given, files in name order.
    """
    native = native_scanner()
    found: list[Found] = []
    plans: list[_Plan] = []
    gone: list[int] = []
    for folder in folders:
        key, whole = folder_key(folder)
        listing = folder_files(folder)
        fid = None
        if store is not None:
            try:
                fid = store.folder_id(key, create=bool(listing))
            except sqlite3.OperationalError:
                if must_save:
                    raise  # busy: a listing goes on without saving this folder
        rows = store.files(fid) if store is not None and fid is not None else {}
        keep = store is not None and (fid is not None or not listing)
        present = set()
        for name, path, st in listing:
            f = Found(path, name, fid, None if isinstance(st, OSError) else st, saved=keep)
            found.append(f)
            present.add(name)
            if isinstance(st, OSError):
                f.error = f"{_CANNOT_READ}{st}"
                continue
            row = rows.get(name)
            p = _plan(f, row, content, keep)
            f.row = p.row if p is not None else row
            if p is not None:
                plans.append(p)
        if whole:
            gone.extend(r.id for n, r in rows.items() if n not in present and r.id is not None)
    if store is not None and gone:
        try:
            store.drop(gone)
        except sqlite3.OperationalError:
            if must_save:
                raise  # a listing lists what is there; the rows of gone files go next time
    return _run(store, found, plans, content=content, on_progress=on_progress, on_bytes=on_bytes, sink=sink,
                workers=workers, must_save=must_save, native=native)


def read_paths(items: Sequence[tuple[str, str, FileStat]], *, sink: ContentSink,
               native: Any = None) -> list[Found]:
    """Read files from their start with no store, docs and usage going to ``sink``
    (what :func:`refresh` with no store does for a folder's files).

    Args:
        items: ``(path, name, stat)`` of each file.
        sink: receives each file's docs and usage as they are read.
        native: ``_sessiontree`` to read in Rust where it can, else the Python rules.

    Returns:
        One :class:`Found` per file, in order.
    """
    found = [Found(path, name, None, st, saved=False) for path, name, st in items]
    plans = []
    for f in found:
        p = _plan(f, None, True, False)
        assert p is not None
        p.docs = True
        f.row = p.row
        plans.append(p)
    return _run(None, found, plans, content=True, on_progress=None, on_bytes=None, sink=sink, workers=None,
                must_save=False, native=native)


def _run(store: Store | None, found: list[Found], plans: list[_Plan], *, content: bool,
         on_progress: Callable[[int, int], None] | None, on_bytes: Callable[[int, int], None] | None,
         sink: ContentSink | None, workers: int | None, must_save: bool, native: Any) -> list[Found]:
    """Carry out ``plans`` (see :func:`refresh`)."""
    if workers is None:
        workers = min(4, os.cpu_count() or 1) if native is not None else 1
    total = len(found)
    done = 0
    for _ in range(total - len(plans)):
        done += 1
        if on_progress is not None:
            on_progress(done, total)  # Pi's progress: one call per file, in order
    if not plans:
        return found
    if store is not None:
        for k, p in enumerate(plans):  # the entries before where a read starts
            if (p.catchup is not None or p.start) and p.row.entries is None and p.row.id is not None:
                p.row.entries = store.entries(p.row.id, p.row.gen)
                appends = p.catchup is not None or p.main_content
                if appends and p.row.entries is not None and p.row.c_end is not None and p.row.log is None:
                    p.row.log = store.logs([p.row.id]).get(p.row.id, b"")
                    p.row.sums = store.sums([p.row.id]).get(p.row.id)
                if p.row.entries is None:  # saved by another process since its row was read
                    again = _plan(p.found, p.row, content, False)  # from its start, kept here
                    assert again is not None
                    plans[k], p.found.row = again, again.row
    budget = sum(max(0, (p.found.st.st_size if p.found.st else 0) - (p.start or 0)) for p in plans)
    read_so_far = 0
    saving = store is not None
    batch: Batch | None = None
    out: queue.Queue[Any] = queue.Queue(maxsize=4 * workers)
    todo: Iterator[_Plan] = iter(plans)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                p = next(todo, None)
            if p is None:
                return
            _work(p, native, out, CHUNK, shared=store is not None)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(workers, len(plans)))]
    # The workers' look-ups of a session's persisted index (_shared.listing_from_index)
    # share one computation of its settings: each resolved the cache folder and summed
    # its files (a fifth of a first listing's worker time, 2,000 sessions).
    holds = contextlib.ExitStack()
    holds.enter_context(held_index_cache())
    for t in threads:
        t.start()
    running = len(plans)
    try:
        while running:
            plan, kind, value = out.get()
            f = plan.found
            if kind == "done":
                running -= 1
                done += 1
                if on_progress is not None:
                    on_progress(done, total)
                continue
            if kind == "crash":
                raise value
            if kind == "error":
                # The reason alone (the path is the file's: named by whoever says it).
                f.error = _CANNOT_READ + str(value.strerror if isinstance(value, OSError) and value.strerror else value)
                f.row = None
                continue
            if f.row is None:
                continue  # an earlier read of this file failed
            row = plan.row
            docs: Sequence[tuple[Any, ...]] = ()
            usage: list[tuple[Any, ...]] = []
            reset = False
            if kind == "v1":
                docs, usage = value[0], _usage_rows(value[1])
                row.c_end = row.l_end
                row.entries, row.entry_count = value[2], value[3]  # the ids readers see
                row.log = value[4]
                _sum(row, row.log, True, native)
            else:
                start, r, ends = value
                read = r[0][3]
                f.bytes_read += read
                read_so_far += read
                if on_bytes is not None:
                    # A piece's torn last line is read again by the next piece: the
                    # bytes read pass the budget by as much (a bar at 981.5/981.4 MB).
                    on_bytes(min(read_so_far, budget), budget)
                if kind == "main":
                    if f.base is None:
                        f.base = start
                    reset = _apply_main(plan, start, r, native)
                    row.ends = ends
                    f._reset = False
                    if plan.main_content:
                        docs, usage = r[7], _usage_rows(r[8])
                else:  # catchup: the usage log only
                    docs, usage = r[7], _usage_rows(r[8])
                    row.log = (row.log or b"") + r[9]
                    row.c_end = r[0][0]
                    row.c_entries += len(r[5])
                    row.c_count = r[6]
                    _sum(row, r[9], False, native)
            if sink is not None and plan.docs and (docs or usage):
                sink(f, docs, usage)
            if store is None:
                f.saved = False
                continue
            if not (f.saved and saving):
                f.saved = False
                continue
            try:
                if batch is None:
                    batch = store.batch()
                if not batch.save(row, reset=reset, found=f):
                    f.saved = False  # another process got there first: this result stays here
                if batch.full():
                    for lost in batch.commit():
                        lost.saved = False
                    batch = None
            except sqlite3.OperationalError:
                if batch is not None:
                    for undone in batch.abandon():
                        undone.saved = False
                    batch = None
                if must_save:
                    raise
                saving = f.saved = False  # the catalog stayed busy: the rest stays here
        if batch is not None:
            for lost in batch.commit():
                lost.saved = False
            batch = None
    finally:
        if batch is not None:
            batch.abandon()
        holds.close()
    return found
