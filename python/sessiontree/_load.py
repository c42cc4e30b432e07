"""The loader rules (ARCHITECTURE.md rules 1-14) over a session image, incrementally.

:class:`Loader` turns the bytes of a session image into *accepted entries* (dict, id,
line number, line offset, byte span, resolved parent) and :class:`LoadIssue`\\ s. It is
the python backend's open path and its growth path: ``feed`` the whole file once, then
``feed`` whatever was appended (``refresh``) or written (``append_line``). After every
``feed`` the state equals what one ``feed`` of the whole image would give, with one
documented exception (see *Unterminated last line* below).

Rules, in the order they are applied to a line (the rank used to order ``load_report``):

1. BOM at byte 0 skipped (``bom``, informational; header stays line 1, offset 0).
2. Blank lines (only space, tab, CR) skipped silently.
3. Decode (``_reader.read_value``: ``json.loads`` values, NaN/Infinity literals
   invalid); invalid UTF-8 replaced and reported once per line (``invalid_utf8``).
4. Invalid JSON: on a line ended by LF, every object glued on it (and those behind
   torn bytes) is read, each going through the rules below with the line's number and
   offset, and the bytes that are no object are reported (``_reader.read_line``,
   ``torn_fragment``); a line with no object is ``invalid_json``. A final piece without
   LF is never read that way (it may be a line still being written): it is
   ``truncated`` and stays *pending*: ``consumed`` stops before it and the next
   ``feed`` starts there again.
5. Not an object: ``not_an_object``.
6. The first object must be the header (``_reader.is_header``), else
   :class:`InvalidSessionError` naming the first non-blank line and why
   (``_reader.header_error``); oh-my-pi's title slot (``_reader.is_title_slot``) may
   come before it: kept as ``title_slot``, not an entry.
7. Later ``session`` objects: ``extra_header``.
8. Entry id must be a non-empty str (``missing_id``); first definition wins
   (``duplicate_id``).
9. ``parentId``: ``null`` -> root, silently; the entry's own id -> root, ``cycle``
   (a cycle of one, ids = (entry,)); an id defined
   anywhere in the image -> parent (forward references included); an undefined id ->
   root, ``missing_parent`` (ids = (entry, parent)); anything else (absent, ``""``,
   non-str) -> root, ``invalid_parent`` (ids = (entry,)).
10. Parent cycles are broken at their earliest entry in file order, which becomes a
    root (``cycle``, ids = the cycle in file order, line of that earliest entry).
11. A compaction whose ``firstKeptEntryId`` is neither a strict ancestor nor its own id
    (self-retaining, Pi 0.87+): ``first_kept_off_path``; ids = (compaction,
    firstKeptEntryId) when that is a str, else (compaction,).
12. ``type`` not one of ``schema.ENTRY_TYPES`` (including absent / non-str): kept,
    ``unknown_type``.
13. The leaf (agent-core's ``leafIdAfterEntry``): after a ``leaf`` entry its
    ``targetId`` when that is ``null`` (before the first entry) or names an entry
    accepted before it; any other ``targetId`` is ``invalid_leaf_target`` (ids =
    (entry, targetId) when that is a str, else (entry,)) and moves nothing. After any
    other entry, that entry.

``load_report`` order: by line, then by rule (``_backend.issue_order``, stable); the
words of each item are ``_backend.describe_issue``'s.

Unterminated last line: a final piece without LF that *is* a complete object (a writer
that omits the last LF) is accepted like any line and consumed; the image then ends
mid-line. If a later ``feed`` continues that same physical line with more than blanks
(another writer glued its line onto it), the fused line is pending until its LF comes
(``truncated``, and an append seals it), then read as a fresh load reads it (rule 4:
the object that starts it is kept, whatever follows): the objects and torn bytes
past the accepted one are new. A value that was not an object (no entry) is read again
with the whole line, its issues withdrawn (``src/lines.rs`` ``continued``). Our own
writer never produces this: it writes ``\\n`` first when the file does not end with one.
"""

from __future__ import annotations

from typing import Any

from ._backend import IssueKind, LoadIssue, issue_order, make_issue
from ._js import UNDEFINED
from ._jsonl import BOM, decode_line_ex, has_invalid_utf8, is_blank, iter_lines
from ._reader import (
    LineRead,
    header_error,
    header_problem,
    header_version,
    is_header,
    is_old_version,
    is_title_slot,
    read_line,
)
from .errors import StaleSessionError
from .schema import ENTRY_TYPES

__all__ = ["Loader"]

_WS = b" \t\r"

# Past this many new compactions in one feed, one O(n) interval pass is cheaper than
# walking each compaction's ancestors.
_WALK_LIMIT = 8

_NOT_JSON: Any = object()  # the value of a line that is not JSON


class Loader:
    """Incremental state of the loader rules over one session image.

    Attributes (read by the python backend; treat as read-only):
        path: the file, for error messages (``None`` for in-memory images).
        header: the header dict, ``None`` until found.
        needs_migration: the header's version is below 3; nothing after it is indexed
            (the manager migrates the whole image and indexes the result).
        ids, entries, raws: per accepted entry, in file order: id, dict, and the bytes
            of its JSON text (no CR/LF; on a line read by rule 4, its own object).
        lines, offsets: 1-based line number and 0-based offset of the line's first byte.
        spans: ``(start, end)`` byte range of ``raws[i]`` in the image.
        parent: index of the parent entry, ``-1`` for a root (after cycle breaking).
        by_id: id -> index.
        leaf: index of the leaf after the entries so far (rule 13), ``-1`` before the
            first entry.
        consumed: bytes of the image consumed (``image_len``): stops before a pending
            invalid last piece.
        generation: bumped whenever existing parent links change (forward reference
            resolved, cycle broken), so derived structures (children) must be rebuilt.
    """

    def __init__(self, path: str | None = None, *, stop_if_old: bool = True, records: bool = False) -> None:
        self.path = path
        self.stop_if_old = stop_if_old and not records
        # Records mode (migration input): rules 1-6 only; every later object is kept
        # in ``records`` as ``(obj, line, offset)``, extra headers included (as Pi's
        # migration sees them), and no entry rule applies.
        self.records: list[tuple[dict[str, Any], int, int]] | None = [] if records else None
        self._record_ids: set[str] = set()  # the entries' ids in ``records``
        self.header: dict[str, Any] | None = None
        self.header_raw: bytes | None = None
        self.header_pos: tuple[int, int] = (1, 0)
        # oh-my-pi's title slot: a ``title`` object before the header, and its bytes.
        self.title_slot: dict[str, Any] | None = None
        self.title_raw: bytes | None = None
        self.needs_migration = False
        self.ids: list[str] = []
        self.entries: list[dict[str, Any]] = []
        self.raws: list[bytes] = []
        self.lines: list[int] = []
        self.offsets: list[int] = []
        self.spans: list[tuple[int, int]] = []
        self.parent: list[int] = []
        self.by_id: dict[str, int] = {}
        self.leaf = -1
        self.consumed = 0
        self.generation = 0
        # Parent links as the file states them (before cycle breaking).
        self._natural: list[int] = []
        self._waiting: dict[str, list[int]] = {}  # undefined parent id -> entries naming it
        self._line_issues: list[LoadIssue] = []
        self._missing: dict[int, LoadIssue] = {}  # entry index -> missing_parent issue
        self._post_issues: list[LoadIssue] = []  # cycle / first_kept_off_path
        self._kept_issues: dict[int, LoadIssue] = {}  # compaction index -> first_kept issue
        self._tail_issue: LoadIssue | None = None
        self._cycle_issues: list[LoadIssue] = []
        self._tail: bytes = b""  # bytes of a pending invalid last piece
        self._report: list[LoadIssue] | None = None
        self._line_no = 1  # number of the line starting at ``consumed``
        self._mid_line: tuple[int, int] | None = None  # (line, offset) of an accepted unterminated line
        self._mid_raw = b""  # that line's bytes, from its first
        # (line, offset, bytes) of the first non-blank line: named if no header is found.
        self._first_nonblank: tuple[int, int, bytes] | None = None
        self._relinked = False
        self._forward = False  # some parent link points forward in file order
        self._bom_seen = False
        self._compactions: list[int] = []

    # ------------------------------------------------------------------ public
    @property
    def pending(self) -> bool:
        """An invalid last piece without LF waits for more bytes (rule 4)."""
        return self._tail_issue is not None

    @property
    def ends_mid_line(self) -> bool:
        """The image does not end with LF (an unconsumed last piece, or an accepted
        unterminated line): whoever appends must write ``\\n`` first."""
        return bool(self._tail) or self._mid_line is not None

    @property
    def tail(self) -> bytes:
        """Bytes after ``consumed`` not consumed yet (a pending or blank last piece)."""
        return self._tail

    def report(self) -> list[LoadIssue]:
        """Every issue so far, by line then rule rank (a new list each call)."""
        if self._report is None:
            issues = self._line_issues + list(self._missing.values()) + self._post_issues
            if self._tail_issue is not None:
                issues.append(self._tail_issue)
            issues.sort(key=issue_order)
            self._report = issues
        return list(self._report)

    def finish(self) -> None:
        """Check that a header was found (call after the first ``feed`` of a file).

        Raises:
            InvalidSessionError: no valid header (rule 6), naming the first non-blank
                line and why, or no line at all for an empty / blank file.
        """
        if self.header is not None:
            return
        if self._first_nonblank is None:
            raise header_error(self.path, None, None, ("empty", UNDEFINED))
        raise self._header_error()

    def _header_error(self) -> Exception:
        assert self._first_nonblank is not None
        line, offset, content = self._first_nonblank
        return header_error(self.path, line, offset, header_problem(content))

    def feed(self, data: bytes) -> int:
        """Load the bytes that follow ``consumed`` in the image.

        Args:
            data: the image from byte ``consumed`` on (the pending piece, if any, is
                part of it again: ``consumed`` stops before it).

        Returns:
            How many entries were accepted.

        Raises:
            InvalidSessionError: the first object is not a valid header (rule 6).
        """
        if self.needs_migration:
            return 0
        n_before = len(self.ids)
        base = self.consumed
        self._tail_issue = None
        self._tail = b""
        self._report = None
        pos = 0
        end = len(data)
        line_no = self._line_no
        line_start = 0
        if base == 0 and data.startswith(BOM):
            if not self._bom_seen:
                self._bom_seen = True
                self._line_issues.append(make_issue(IssueKind.BOM, 1, 0))
            pos = 3
        if self._mid_line is not None and end:
            # Bytes continuing a line whose value was read without its LF.
            m_line, m_off = self._mid_line
            nl = data.find(b"\n")
            if (data if nl < 0 else data[:nl]).strip(_WS):
                if nl < 0:
                    # Another writer is gluing its line onto that one: the fused line is
                    # pending (rule 4) until its LF comes.
                    self._tail = data
                    fused = self._mid_raw + data  # counted as any last line: no BOM, no final CR
                    n = len(fused) - (len(BOM) if m_off == 0 and fused.startswith(BOM) else 0) - fused.endswith(b"\r")
                    self._tail_issue = make_issue(IssueKind.TRUNCATED, m_line, m_off, n=n)
                    self._finish_batch(n_before)
                    return 0
                self._continued(self._mid_raw + data[:nl], m_line, m_off)
            elif nl < 0:
                # Blank so far: read these bytes again next time.
                self._tail = data
                self._finish_batch(n_before)
                return len(self.ids) - n_before
            self._mid_line = None
            self._mid_raw = b""
            pos = line_start = nl + 1
            line_no = m_line + 1
        for number, off, content, is_tail in iter_lines(data, pos, line_no):
            line_start = 0 if base == 0 and number == 1 else off  # a BOM belongs to line 1
            if is_tail:
                # The tail: a final piece without LF.
                if not is_blank(content):
                    stripped = content[:-1] if content.endswith(b"\r") else content
                    if self._line(stripped, number, base + line_start, base + off, True, base + off + len(stripped)):
                        # Accepted (or skipped for good) although unterminated.
                        self._mid_line = (number, base + line_start)
                        self._mid_raw = data[line_start:end]
                        self.consumed = base + end
                        self._line_no = number
                        self._finish_batch(n_before)
                        return len(self.ids) - n_before
                # Pending (invalid) or blank: stays unconsumed, read again next feed.
                self._tail = data[line_start:end]
                self.consumed = base + line_start
                self._line_no = number
                self._finish_batch(n_before)
                return len(self.ids) - n_before
            if not is_blank(content):
                self._line(content, number, base + line_start, base + off, False, base + off + len(content))
            line_no = number + 1
        self.consumed = base + end
        self._line_no = line_no
        self._finish_batch(n_before)
        return len(self.ids) - n_before

    # ----------------------------------------------------------------- one line
    def _continued(self, line: bytes, line_no: int, offset: int) -> None:
        """Read a line whose value was read without its LF and onto which another
        writer glued more, now complete (``line``, without its LF, from its first byte
        at ``offset``). A fresh open reads the fused line by rule 4, which keeps the
        object that starts it whatever follows, so when that value was an object what
        the line holds past it is new; a value that was not (which gave no entry, only
        its issues, withdrawn here) is read again with the whole line, as a fresh open
        reads it (``src/lines.rs`` ``continued``).

        Raises:
            StaleSessionError: the fused line no longer reads as the object read before
                followed by others.
        """
        if line.endswith(b"\r"):
            line = line[:-1]
        cs = len(BOM) if offset == 0 and line.startswith(BOM) else 0
        content, start = line[cs:], offset + cs
        issues = self._line_issues
        if any(i.kind == IssueKind.NOT_AN_OBJECT and i.line == line_no for i in issues):
            issues[:] = [i for i in issues if i.line != line_no
                         or i.kind not in (IssueKind.NOT_AN_OBJECT, IssueKind.INVALID_UTF8)]
            self._line(content, line_no, offset, start, False, start + len(content))
            return
        acc = min(len(self._mid_raw) - cs, len(content))
        try:
            r = read_line(content)
        except ValueError:
            r = None
        if r is None or not r.split or sum(p.start < acc for p in r.pieces) != 1 or r.pieces[0].end > acc or any(
                a < acc for a, _ in r.fragments):
            raise StaleSessionError(
                f"{self.path}: another writer continued line {line_no}, which had no line feed and was "
                "already read, into a line a fresh open reads otherwise; reopen the session")
        if r.replaced and not has_invalid_utf8(content[:acc]):  # reported once per line
            issues.append(make_issue(IssueKind.INVALID_UTF8, line_no, offset))
        self._split(r, content, line_no, offset, start, since=acc)

    def _line(self, content: bytes, line_no: int, offset: int, start: int, is_tail: bool, stop: int) -> bool:
        """Apply rules 3-12 to one non-blank line. Returns True if the line was handled
        (accepted or skipped for good), False if it is a pending tail. ``start`` is the
        offset of ``content[0]`` (past a BOM), ``stop`` that of its end."""
        if self.needs_migration:
            return True
        issues = self._line_issues
        try:
            # One JSON value, nearly every line: rule 3 alone, without the objects
            # read_line builds around it (an open of 200,000 short lines: 1.16 s of CPU
            # here, 1.29 s through read_line).
            value, replaced = decode_line_ex(content)
        except (ValueError, RecursionError):
            pass
        else:
            if replaced:
                issues.append(make_issue(IssueKind.INVALID_UTF8, line_no, offset))
            self._object(value, content, line_no, offset, start, stop)
            return True
        try:
            r = read_line(content, complete=not is_tail)
        except ValueError:
            if self._first_nonblank is None:
                self._first_nonblank = (line_no, offset, content)
            if is_tail:
                # Pending: reported as truncated now, and judged in full (UTF-8 included)
                # once the line is complete, so nothing is reported twice.
                self._tail_issue = make_issue(IssueKind.TRUNCATED, line_no, offset, n=len(content))
                return False
            if has_invalid_utf8(content):
                issues.append(make_issue(IssueKind.INVALID_UTF8, line_no, offset))
            issues.append(make_issue(IssueKind.INVALID_JSON, line_no, offset))
            return True
        if r.replaced:
            issues.append(make_issue(IssueKind.INVALID_UTF8, line_no, offset))
        self._split(r, content, line_no, offset, start)  # the line is not one value: rule 4 split it
        return True

    def _split(self, r: LineRead, content: bytes, line_no: int, offset: int, start: int, since: int = 0) -> None:
        """Rule 4's reading ``r`` of the line ``content`` (at ``offset``, its first
        byte at ``start``): its fragments reported, its objects taken, those that start
        at ``since`` or later (``_continued``: what the line holds past a value read
        before)."""
        for a, b in r.fragments:
            if a < since:
                continue
            # A fragment that starts the line is counted from the line's first byte
            # (a BOM included), as the native core counts.
            at = offset if a == 0 else start + a
            self._line_issues.append(make_issue(IssueKind.TORN_FRAGMENT, line_no, at, n=start + b - at))
        for p in r.pieces:
            if self.needs_migration:
                break
            if p.start >= since:
                self._object(p.value, content[p.start : p.end], line_no, offset, start + p.start, start + p.end,
                             content, p.may_nest)

    def _object(
        self, obj: Any, raw: bytes, line_no: int, offset: int, start: int, stop: int, line: bytes | None = None,
        may_nest: bool = False,
    ) -> None:
        """Rules 5-12 for one value of a line: ``raw`` its bytes at ``start``..``stop``
        (``line``: the whole line, when it holds more than this value; ``may_nest``:
        :attr:`Piece.may_nest`)."""
        issues = self._line_issues
        if type(obj) is not dict:
            if self._first_nonblank is None:
                self._first_nonblank = (line_no, offset, raw if line is None else line)
            issues.append(make_issue(IssueKind.NOT_AN_OBJECT, line_no, offset))
            return
        etype = obj.get("type")
        if self.header is None:
            if self.title_slot is None and is_title_slot(obj):
                self.title_slot = obj
                self.title_raw = raw
                if self._first_nonblank is None:
                    self._first_nonblank = (line_no, offset, raw if line is None else line)
                return
            if is_header(obj):
                self.header = obj
                self.header_raw = raw
                self.header_pos = (line_no, offset)
                if self.stop_if_old and is_old_version(obj):
                    self.needs_migration = True
                return
            if self._first_nonblank is None:
                self._first_nonblank = (line_no, offset, raw if line is None else line)
            raise self._header_error()
        if may_nest and etype != "session" and not self._continues_tree(obj):
            # Rule 3: an object behind torn bytes that may be nested in the torn record
            # is the entry a writer appended there only if it continues the tree.
            issues.append(make_issue(IssueKind.TORN_FRAGMENT, line_no, start, n=stop - start))
            return
        if self.records is not None:
            self.records.append((obj, line_no, offset))
            eid = obj.get("id")
            if etype != "session" and isinstance(eid, str) and eid:
                self._record_ids.add(eid)
            return
        if etype == "session":
            issues.append(make_issue(IssueKind.EXTRA_HEADER, line_no, offset))
            return
        eid = obj.get("id")
        if not isinstance(eid, str) or not eid:
            issues.append(make_issue(IssueKind.MISSING_ID, line_no, offset))
            return
        if eid in self.by_id:
            issues.append(make_issue(IssueKind.DUPLICATE_ID, line_no, offset, (eid,), n=self.lines[self.by_id[eid]]))
            return
        idx = len(self.ids)
        self.by_id[eid] = idx
        self.ids.append(eid)
        self.entries.append(obj)
        self.raws.append(raw)
        self.lines.append(line_no)
        self.offsets.append(offset)
        self.spans.append((start, stop))
        pref = obj.get("parentId", UNDEFINED)
        parent = -1
        if pref is None:
            pass
        elif pref == eid:
            # A cycle of one: a root, reported like any other cycle (Pi makes it a root).
            issues.append(make_issue(IssueKind.CYCLE, line_no, offset, (eid,), n=1))
        elif isinstance(pref, str) and pref:
            parent = self.by_id.get(pref, -1)
            if parent < 0:
                self._waiting.setdefault(pref, []).append(idx)
                self._missing[idx] = make_issue(IssueKind.MISSING_PARENT, line_no, offset, (eid, pref))
        else:
            issues.append(make_issue(IssueKind.INVALID_PARENT, line_no, offset, (eid,)))
        self._natural.append(parent)
        self.parent.append(parent)
        waiting = self._waiting.pop(eid, None)
        if waiting is not None:
            # Entries seen earlier named this id as parent: link them now (rule 9).
            for child in waiting:
                self._natural[child] = idx
                self.parent[child] = idx
                del self._missing[child]
            self._relinked = True
            self._forward = True
        if etype == "compaction":
            self._compactions.append(idx)
        if not isinstance(etype, str) or etype not in ENTRY_TYPES:
            text = etype if isinstance(etype, str) else None
            issues.append(make_issue(IssueKind.UNKNOWN_TYPE, line_no, offset, (eid,), text=text))
        if etype != "leaf":
            self.leaf = idx
        else:
            target = obj.get("targetId", UNDEFINED)
            if target is None:
                self.leaf = -1
            elif isinstance(target, str) and self.by_id.get(target, idx) != idx:
                self.leaf = self.by_id[target]
            else:
                ids = (eid, target) if isinstance(target, str) else (eid,)
                issues.append(make_issue(IssueKind.INVALID_LEAF_TARGET, line_no, offset, ids))

    def _continues_tree(self, obj: dict[str, Any]) -> bool:
        """Whether ``obj`` continues the tree as an entry a writer appended behind a torn
        record does: its ``parentId`` an entry's id read before (the leaf it resumed
        from, or where it went back to), or ``null`` while no entry is the leaf (a
        parsed first line of another session has ``null`` too; ``src/index``
        ``continues_tree``). Migration input (versions 1 and 2, whose entries have no
        ``leaf`` moves): an entry's id read before, or ``null`` before any entry; a
        version 1 file's entries have no ids, and every one continues it."""
        parent = obj.get("parentId", UNDEFINED)
        if self.records is not None:
            if header_version(self.header or {}) < 2:
                return True
            return not self._record_ids if parent is None else isinstance(parent, str) and parent in self._record_ids
        if parent is None:
            return self.leaf < 0
        return isinstance(parent, str) and parent in self.by_id

    # -------------------------------------------------------- whole-graph rules
    def _finish_batch(self, first_new: int) -> None:
        if self._relinked:
            self._relinked = False
            self.generation += 1
            self._analyse()
            return
        new = [c for c in self._compactions if c >= first_new]
        if not new:
            return
        if len(new) > _WALK_LIMIT:
            # One O(n) pass over intervals instead of a walk per compaction: walks are
            # O(depth) each, quadratic when many compactions keep a distant entry.
            self._analyse()
            return
        for c in new:
            self._check_kept_walk(c)
        self._rebuild_post()

    def _analyse(self) -> None:
        """Rules 10 and 11 over the whole graph (after forward references resolved)."""
        parent = list(self._natural)
        n = len(parent)
        cycles: list[list[int]] = []
        state = bytearray(n)  # 0 new, 1 on the current walk, 2 done
        for i in range(n):
            if state[i]:
                continue
            walk: list[int] = []
            j = i
            while j >= 0 and state[j] == 0:
                state[j] = 1
                walk.append(j)
                j = parent[j]
            if j >= 0 and state[j] == 1:
                cycle = sorted(walk[walk.index(j):])
                parent[cycle[0]] = -1
                cycles.append(cycle)
            for w in walk:
                state[w] = 2
        # By earliest entry, as the native backend (``tree::break_cycles``): discovery
        # order differs when two cycles share a line of glued objects.
        cycles.sort()
        cycle_issues = [
            make_issue(IssueKind.CYCLE, self.lines[c[0]], self.offsets[c[0]], tuple(self.ids[e] for e in c), n=len(c))
            for c in cycles
        ]
        if parent != self.parent:
            self.generation += 1
        self.parent = parent
        self._cycle_issues = cycle_issues
        self._kept_issues = {}
        if self._compactions:
            tin, tout = self._intervals()
            by_id = self.by_id
            for c in self._compactions:
                fk = self.entries[c].get("firstKeptEntryId")
                f = by_id.get(fk, -1) if isinstance(fk, str) else -1
                if not (f == c or (f >= 0 and tin[f] <= tin[c] and tout[c] <= tout[f])):
                    self._kept_issues[c] = self._kept_issue(c, fk)
        self._rebuild_post()

    def _rebuild_post(self) -> None:
        self._post_issues = self._cycle_issues + list(self._kept_issues.values())
        self._report = None

    def _kept_issue(self, c: int, fk: Any) -> LoadIssue:
        ids = (self.ids[c], fk) if isinstance(fk, str) else (self.ids[c],)
        return make_issue(IssueKind.FIRST_KEPT_OFF_PATH, self.lines[c], self.offsets[c], ids)

    def _check_kept_walk(self, c: int) -> None:
        """Rule 11 for one compaction by walking its ancestors. Without forward links
        every ancestor precedes its child in file order, so the walk stops as soon as it
        passes below the firstKept entry's position: usually a few steps."""
        fk = self.entries[c].get("firstKeptEntryId")
        f = self.by_id.get(fk, -1) if isinstance(fk, str) else -1
        if f == c:  # self-retaining (Pi 0.87+): keeps nothing before it, valid
            self._kept_issues.pop(c, None)
            return
        if f >= 0:
            parent = self.parent
            j = parent[c]
            if self._forward:
                while j >= 0 and j != f:
                    j = parent[j]
            else:
                while j > f:
                    j = parent[j]
            if j == f:
                self._kept_issues.pop(c, None)
                return
        self._kept_issues[c] = self._kept_issue(c, fk)

    def _intervals(self) -> tuple[list[int], list[int]]:
        """Pre/post DFS numbers over the (acyclic) forest: f is an ancestor of c iff
        ``tin[f] <= tin[c] and tout[c] <= tout[f]``. Iterative: depth is unbounded."""
        n = len(self.parent)
        children: list[list[int]] = [[] for _ in range(n)]
        roots = []
        for i, p in enumerate(self.parent):
            if p < 0:
                roots.append(i)
            else:
                children[p].append(i)
        tin = [0] * n
        tout = [0] * n
        clock = 0
        for r in roots:
            stack = [(r, False)]
            while stack:
                node, done = stack.pop()
                if done:
                    tout[node] = clock
                    clock += 1
                    continue
                tin[node] = clock
                clock += 1
                stack.append((node, True))
                stack.extend((ch, False) for ch in children[node])
        return tin, tout
