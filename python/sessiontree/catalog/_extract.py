"""One pass over a session file from an offset: the catalog's reader (Python rules).

The one Python home of what a session file tells a picker, a search and a usage
report; ``src/listing.rs`` (``_sessiontree.scan_listing``) applies the same rules in
Rust and returns the same tuple (``tests/test_catalog_extract.py`` holds the two equal
on the corpus, the damaged cases and generated files). :func:`scan_file` picks the
native one when the extension is built and the backend allows it.

Lines are framed and judged by the loader's rules (``_jsonl.iter_lines``,
``_reader.read_line``, ``_reader.is_header``): ``\\n`` only, one CR stripped, BOM
before the header, blank and invalid lines skipped, on a line ended by ``\\n`` every
object of glued ones read and torn fragments skipped, the first JSON object must be
the header, later headers ignored, an entry needs a non-empty string id and the first
definition of an id stands.

What a file gives (Pi's ``buildSessionInfo``, session-manager.ts, for the listing):

* **listing facts** — ``message_count`` (``message`` entries, any role); for user and
  assistant messages that have ``content``: their text (``extractTextContent``: a
  string, or the text blocks' ``text`` joined by a space, JavaScript ``String()`` of a
  non-string, ``""`` for null/absent) joined by spaces when non-empty, the first user
  one as ``first_message``, and the activity time (the message's numeric
  ``timestamp``, else the entry's ISO time; the largest, at least 0); the last
  ``session_info`` entry's ``name`` (not trimmed here), oh-my-pi's title slot counting
  as one before the first entry (``_reader.is_title_slot``).
* **docs** — the searchable text of an entry: a user message's text; an assistant
  message's text, then each ``toolCall`` block's ``name`` and the strings inside its
  ``arguments`` (in ``json.loads`` order); a ``session_info`` name. Non-empty parts are
  joined by ``\\n``; an entry with no text has no doc. Thinking, tool results, bash
  output and summaries are not searched.
* **usage** — an assistant message's ``usage`` object (with the message's
  ``provider``/``model``), a ``usage`` entry's (its ``provider``/``model``), a
  compaction's or branch summary's (no model): ``input``, ``output``, ``cacheRead``,
  ``cacheWrite``, ``totalTokens`` and ``cost.total`` as floats (a JSON number's value,
  else 0).

An entry's *time* is a message's numeric ``timestamp``, else the entry's
``timestamp`` parsed as ``Date.parse`` does, in epoch ms (``None`` if neither).

The usage travels and is kept as a *usage log*: ``src/report.rs`` documents its layout
(pieces of records, each piece defining the ``(provider, model)`` pairs it names,
varints and the odd ``f64``); :func:`pack_log` writes the same bytes and
:func:`unpack_log` reads them.

The entries seen travel between calls as an *entries record*: per accepted entry,
a little-endian ``u32`` length and the id's UTF-8 bytes (lone surrogates as
``surrogatepass`` writes them), then the ``parentId`` likewise, or ``0xFFFFFFFF`` when
it is not a non-empty string.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Iterator, Sequence
from typing import Any

from .. import _js
from .._filestate import FINGERPRINT, open_regular
from .._jsonl import BOM, is_blank
from .._reader import header_version, is_header, is_title_slot, read_line
from .._time import parse_iso_ms

__all__ = ["ScanResult", "USAGE_KINDS", "entries_path", "native_scanner", "pack_log", "records", "scan_file", "scan_stream",
           "tail_text", "unpack_log"]

ScanResult = tuple[Any, ...]
"""The tuple ``_sessiontree.scan_listing`` returns (see its stub)."""

_BLOCK = 1 << 20
_NO_PARENT = 0xFFFFFFFF
_U32 = struct.Struct("<I")


# --------------------------------------------------------------------- values
def _text_of(message: dict[str, Any]) -> str:
    # session-manager.ts extractTextContent: string content, or the text blocks joined
    # by " " (Array#join prints undefined/null as "").
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""  # Pi would throw and drop the whole file; one odd message is not fatal
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            t = block.get("text")
            texts.append("" if t is None else _js.string(t))
    return " ".join(texts)


def _strings(value: Any) -> Iterator[str]:
    """The strings inside a JSON value, in ``json.loads`` order (no recursion)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))


def _calls_text(content: Any) -> str:
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                name = block.get("name")
                if isinstance(name, str):
                    parts.append(name)
                if "arguments" in block:
                    parts.extend(_strings(block["arguments"]))
    return "\n".join(p for p in parts if p)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:  # an integer beyond the float range, as Rust reads it
        return float("inf") if v > 0 else float("-inf")


_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def _usage_numbers(usage: dict[str, Any]) -> tuple[float, ...]:
    nums = [_number(usage.get(k)) or 0.0 for k in _USAGE_KEYS]
    cost = usage.get("cost")
    nums.append((_number(cost.get("total")) or 0.0) if isinstance(cost, dict) else 0.0)
    return tuple(nums)


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


# ------------------------------------------------------------------ usage log
USAGE_KINDS = ("message", "usage", "compaction", "branch_summary")
_F64 = struct.Struct("<d")
_SMALL = float(1 << 52)


def _varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _bytes(out: bytearray, text: str) -> None:
    b = _enc(text)
    _varint(out, len(b))
    out += b


def pack_log(usage: Sequence[tuple[tuple[Any, ...], tuple[float, ...]]]) -> bytes:
    """One piece of usage log for usage rows ``((seq, id, stamp, time, kind, provider,
    model), numbers)`` (``b""`` for none)."""
    if not usage:
        return b""
    out = bytearray(b"\x00")
    models: dict[tuple[str, str], int] = {}
    for (seq, eid, stamp, time, kind, provider, model), nums in usage:
        m = models.get((provider, model))
        if m is None:
            m = models[(provider, model)] = len(models)
            out.append(1)
            _bytes(out, provider)
            _bytes(out, model)
        out.append(2)
        _bytes(out, eid)
        _bytes(out, stamp)
        _varint(out, seq)
        out.append(USAGE_KINDS.index(kind))
        if time is None:
            out.append(0)
        elif math.isfinite(time) and time == int(time) and abs(time) < _SMALL:
            out.append(1)
            t = int(time)
            _varint(out, -2 * t - 1 if t < 0 else 2 * t)  # zigzag
        else:
            out.append(2)
            out += _F64.pack(time)
        _varint(out, m)
        for n in nums:
            if n == 0:
                out.append(0)
            elif 0 < n < _SMALL and n == int(n):
                _varint(out, 2 * int(n))
            else:
                out.append(1)
                out += _F64.pack(n)
    return bytes(out)


def unpack_log(log: bytes) -> list[tuple[tuple[Any, ...], tuple[float, ...]]]:
    """The usage rows of a usage log (:func:`pack_log`'s inverse, pieces concatenated).

    Raises:
        ValueError: the log is malformed.
    """
    rows: list[tuple[tuple[Any, ...], tuple[float, ...]]] = []
    pos, end = 0, len(log)

    def byte() -> int:
        nonlocal pos
        if pos >= end:
            raise ValueError("a usage log cut short")
        pos += 1
        return log[pos - 1]

    def varint() -> int:
        v, shift = 0, 0
        while True:
            b = byte()
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7
            if shift > 63:
                raise ValueError("a malformed usage log (varint)")

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > end:
            raise ValueError("a usage log cut short")
        pos += n
        return log[pos - n:pos]

    def text() -> str:
        return take(varint()).decode("utf-8", "surrogatepass")

    def f64() -> float:
        return float(_F64.unpack(take(8))[0])

    models: list[tuple[str, str]] = []
    started = False
    try:
        while pos < end:
            tag = byte()
            if tag == 0:
                models, started = [], True
                continue
            if tag == 1:
                models.append((text(), text()))
                continue
            if tag != 2 or not started:
                raise ValueError(f"a malformed usage log (tag {tag})")
            eid, stamp, seq, kind = text(), text(), varint(), USAGE_KINDS[byte()]
            how = byte()
            if how == 0:
                time = None
            elif how == 1:
                z = varint()
                time = float(-(z + 1) // 2 if z & 1 else z // 2)
            elif how == 2:
                time = f64()
            else:
                raise ValueError("a malformed usage log (time)")
            provider, model = models[varint()]
            nums = []
            for _ in range(6):
                v = varint()
                if v == 1:
                    nums.append(f64())
                elif v % 2 == 0:
                    nums.append(float(v // 2))
                else:
                    raise ValueError("a malformed usage log (number)")
            rows.append(((seq, eid, stamp, time, kind, provider, model), tuple(nums)))
    except (IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"a malformed usage log ({e})") from e
    return rows


# ------------------------------------------------------------ entries record
def _enc(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


# An entry's leaf move after its parent (loader rule 13; `src/listing.rs`'s `Move`):
# not a `leaf` entry, a move to null, a `leaf` entry whose targetId is not a string
# (it moves nothing), else the target's length and bytes.
_NOT_A_MOVE = 0xFFFFFFFF
_MOVE_TO_NULL = 0xFFFFFFFE
_MOVES_NOTHING = 0xFFFFFFFD

_NOT: Any = object()  # records(): not a leaf move
_NOTHING: Any = object()  # records(): a leaf move that moves nothing


def _record(eid: str, parent: str | None, move: Any = _NOT) -> bytes:
    """One entry of an entries record; ``move`` is :func:`leaf_move`'s."""
    b = _enc(eid)
    out = _U32.pack(len(b)) + b
    if parent is None:
        out += _U32.pack(_NO_PARENT)
    else:
        p = _enc(parent)
        out += _U32.pack(len(p)) + p
    if move is _NOT:
        return out + _U32.pack(_NOT_A_MOVE)
    if move is None:
        return out + _U32.pack(_MOVE_TO_NULL)
    if move is _NOTHING:
        return out + _U32.pack(_MOVES_NOTHING)
    t = _enc(move)
    return out + _U32.pack(len(t)) + t


def leaf_move(obj: dict[str, Any]) -> Any:
    """What an entry does to the leaf (rule 13): ``_NOT`` (any entry but ``leaf``: it is
    the leaf), ``None`` (to before the first entry), a target id, or ``_NOTHING``."""
    if obj.get("type") != "leaf":
        return _NOT
    target = obj.get("targetId", _js.UNDEFINED)
    return target if target is None or isinstance(target, str) else _NOTHING


def records(entries: bytes) -> Iterator[tuple[str, str | None, Any]]:
    """``(id, parentId, move)`` of each record (a malformed end stops the walk)."""
    pos, end = 0, len(entries)

    def take() -> tuple[str | int | None, int]:
        # (the decoded bytes, or the marker; new position); None past the end.
        if pos + 4 > end:
            return None, pos
        (n,) = _U32.unpack_from(entries, pos)
        at = pos + 4
        if n >= _MOVES_NOTHING:
            return n, at
        if at + n > end:
            return None, at
        return entries[at:at + n].decode("utf-8", "surrogatepass"), at + n

    while True:
        eid, pos = take()
        if not isinstance(eid, str):
            return
        parent, pos = take()
        if parent is None:
            return
        move, pos = take()
        if move is None:
            return
        yield (eid, None if parent == _NO_PARENT else parent,  # type: ignore[misc]
               _NOT if move == _NOT_A_MOVE else None if move == _MOVE_TO_NULL else _NOTHING if move == _MOVES_NOTHING else move)


def leaf_after(leaf: int, e: int, move: Any, number: dict[str, int]) -> int:
    """Rule 13: the leaf (-1: none) after entry ``e``, whose :func:`leaf_move` is
    ``move``, when it was ``leaf`` before; ``number`` maps the ids of entries ``0..e``
    to their numbers. A move to an entry not read before ``e``, or to ``e`` itself,
    moves nothing (``src/listing.rs`` ``leaf_after``)."""
    if move is _NOT:
        return e
    if move is None:
        return -1
    if move is not _NOTHING and number.get(move, e) != e:
        return number[move]
    return leaf


def _entries_path_py(entries: bytes) -> list[int]:
    number: dict[str, int] = {}
    parents: list[str | None] = []
    leaf = -1
    for eid, parent, move in records(entries):
        if eid not in number:
            e = number[eid] = len(parents)
            parents.append(parent)
            leaf = leaf_after(leaf, e, move, number)
    n = len(parents)
    column = [-1] * n
    for e, p in enumerate(parents):
        q = number.get(p, -1) if p is not None else -1
        column[e] = q if q != e else -1
    # Rule 10: break each cycle at its earliest entry (tree.rs break_cycles).
    mark = [0] * n
    for s in range(n):
        if mark[s]:
            continue
        walk = s + 1
        x = s
        while x != -1 and not mark[x]:
            mark[x] = walk
            x = column[x]
        if x == -1 or mark[x] != walk:
            continue
        members = [x]
        y = column[x]
        while y != x:
            members.append(y)
            y = column[y]
        column[min(members)] = -1
    if leaf < 0:
        return []
    path: list[int] = []
    x = leaf
    while x != -1 and len(path) <= n:
        path.append(x)
        x = column[x]
    path.reverse()
    return path


# ------------------------------------------------------------------ the scan
def _lines(f: Any, start: int, counter: list[int]) -> Iterator[tuple[int, bytes, int]]:
    """``(offset, content, next)`` from ``start``: content without LF and without the
    CR before it (a tail keeps its CR), as ``iter_lines`` frames them; ``next`` is the
    offset of the following line, -1 for a tail."""
    f.seek(start)
    # The start of a line longer than a block, in pieces: joined once, when its end is
    # read (``data + chunk`` per block copied it again each time, quadratic in the
    # line's length: 9.3 s for one 128 MB line).
    pending: list[bytes] = []
    base = start
    while True:
        chunk = f.read(_BLOCK)
        counter[0] += len(chunk)
        if not chunk:
            if pending:
                yield base, b"".join(pending), -1
            return
        if pending and chunk.find(b"\n") < 0:
            pending.append(chunk)
            continue
        data = b"".join((*pending, chunk)) if pending else chunk
        pending = []
        pos = 0
        find = data.find
        while True:
            nl = find(b"\n", pos)
            if nl < 0:
                break
            stop = nl - 1 if nl > pos and data[nl - 1] == 13 else nl
            yield base + pos, data[pos:stop], base + nl + 1
            pos = nl + 1
        if pos < len(data):
            pending.append(data[pos:])
        base += pos


class _Scan:
    """One call's state, line by line (``src/listing.rs``'s ``State``)."""

    def __init__(self, prior: bytes, start: int, content: bool, texts: bool) -> None:
        self.seen: dict[str, int] = {}  # id: entry number
        self.leaf = -1  # the leaf so far (-1: none), by :func:`leaf_after`
        for eid, _, move in records(prior):
            if eid not in self.seen:
                self.seen[eid] = e = len(self.seen)
                self.leaf = leaf_after(self.leaf, e, move, self.seen)
        self.count = len(self.seen)
        self.content = content
        self.want_texts = texts
        self.header_found = start > 0
        self.header: tuple[str, Any] = ("before", None)
        self.first: tuple[int, int, bytes] | None = None
        self.old_version = False
        self.message_count = 0
        self.first_message: str | None = None
        self.texts: list[str] = []
        self.name: tuple[bool, str | None] = (False, None)
        self.title_seen = False
        self.activity: float | None = None
        self.entries: list[bytes] = []
        self.docs: list[tuple[Any, ...]] = []
        self.usage: list[tuple[Any, ...]] = []

    def line(self, line_no: int, offset: int, raw: bytes, complete: bool = True) -> bool:
        """One framed line (``complete``: ended by LF, so rule 4 may recover a torn
        fragment's object); false stops the scan."""
        if offset == 0 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        if is_blank(raw):
            return True
        if not self.header_found and self.first is None:
            self.first = (line_no, offset, raw)
        try:
            r = read_line(raw, complete=complete)
        except ValueError:
            return True
        for p in r.pieces:
            if not self.object(p.value, raw[p.start : p.end] if r.split else raw, p.may_nest):
                return False
        return True

    def object(self, obj: Any, raw: bytes, may_nest: bool = False) -> bool:
        """One value of a line (``raw``: its bytes; ``may_nest``: ``Piece.may_nest``);
        false stops the scan."""
        if type(obj) is not dict:
            return True
        if not self.header_found:
            if not is_header(obj) and not self.title_seen and is_title_slot(obj):
                # oh-my-pi's title slot: the name until a session_info says otherwise.
                self.title_seen = True
                title = obj.get("title")
                if isinstance(title, str):
                    self.name = (True, title)
                return True
            if not is_header(obj):
                self.header = ("missing", self.first)
                return False
            self.header_found = True
            self.header = ("found", raw)
            self.old_version = header_version(obj) < 2  # Pi's `version < 2`: version 1
            return True
        if obj.get("type") == "session":
            return True  # a later header
        stamp = obj.get("timestamp")
        ms = parse_iso_ms(stamp) if isinstance(stamp, str) else None
        entry_ms = float(ms) if ms is not None else None
        if self.old_version:
            # Version 1 entries have no ids: every one counts (migration gives each an
            # id), as in Pi's listing, which reads them unmigrated (their times count
            # too); no docs or usage (the catalog reads those from the migrated image).
            self.facts(obj, -1, "", stamp, entry_ms)
            return True
        eid = obj.get("id")
        if not (isinstance(eid, str) and eid):
            return True
        parent = obj.get("parentId", _js.UNDEFINED)
        if may_nest and not (self.leaf < 0 if parent is None else isinstance(parent, str) and parent in self.seen):
            return True  # torn bytes (rule 3; ``_load.Loader._continues_tree``)
        if eid in self.seen:
            return True
        seq = self.seen[eid] = self.count
        self.count += 1
        move = leaf_move(obj)
        self.leaf = leaf_after(self.leaf, seq, move, self.seen)
        self.entries.append(_record(eid, parent if isinstance(parent, str) and parent else None, move))
        self.facts(obj, seq, eid, stamp, entry_ms)
        return True

    def facts(self, obj: dict[str, Any], seq: int, eid: str, stamp: Any, entry_ms: float | None) -> None:
        content = self.content and seq >= 0
        etype = obj.get("type")
        if etype == "message":
            self.message_count += 1
            msg = obj.get("message")
            role = msg.get("role") if isinstance(msg, dict) else None
            if not isinstance(msg, dict) or (role != "user" and role != "assistant"):
                return
            t = _number(msg.get("timestamp"))
            time = t if t is not None else entry_ms
            u = msg.get("usage")
            if content and role == "assistant" and isinstance(u, dict):
                row = (seq, eid, _str(stamp), time, "message", _str(msg.get("provider")), _str(msg.get("model")))
                self.usage.append((row, _usage_numbers(u)))
            if "content" not in msg:
                return
            if time is not None:
                self.activity = max(0.0 if self.activity is None else self.activity, time)
            text = _text_of(msg)
            if text:
                if self.want_texts:
                    self.texts.append(text)
                if role == "user" and self.first_message is None:
                    self.first_message = text
            if content:
                calls = _calls_text(msg["content"]) if role == "assistant" else ""
                doc = "\n".join(x for x in (text, calls) if x)
                if doc:
                    self.docs.append((seq, eid, role, time, doc))
        elif etype == "session_info":
            n = obj.get("name")
            self.name = (True, n if isinstance(n, str) else None)
            if content and isinstance(n, str):
                self.docs.append((seq, eid, "name", entry_ms, n))
        elif content and etype in ("usage", "compaction", "branch_summary"):
            u = obj.get("usage")
            if isinstance(u, dict):
                mine = etype == "usage"
                row = (seq, eid, _str(stamp), entry_ms, etype, _str(obj.get("provider")) if mine else "",
                       _str(obj.get("model")) if mine else "")
                self.usage.append((row, _usage_numbers(u)))


def tail_text(piece: bytes, offset: int, prior: bytes) -> str:
    """The listing text of ``piece`` as an unterminated last piece at ``offset`` (a CR
    kept, no torn fragment recovered), after the entries of ``prior``: what a scan
    that found the file ending there took of it."""
    st = _Scan(prior, offset, False, True)
    st.line(0, offset, piece, complete=False)
    return " ".join(st.texts)


def scan_stream(f: Any, start: int, prior: bytes, content: bool, limit: int, texts: bool = False) -> ScanResult:
    """:func:`scan_file` with the Python rules over an open binary file (or
    ``io.BytesIO``, e.g. a migrated image); a version 1 file is read to its end with
    version 1 rules."""
    st = _Scan(prior, start, content, texts)
    end, tail, read = start, 0, [0]
    eof = True
    stop_at = start + limit
    for line_no, (offset, raw, after) in enumerate(_lines(f, start, read), 1):
        if after < 0:
            tail = len(raw)
        else:
            end = after
        if not st.line(line_no, offset, raw, after >= 0):
            eof = False
            break
        if after >= 0 and st.header_found and end >= stop_at and not st.old_version:
            eof = False
            break
    if not st.header_found:
        st.header = ("missing", st.first)
    n = min(FINGERPRINT, end)
    f.seek(0)
    ends = f.read(n)
    f.seek(end - n)
    ends += f.read(n)
    framing = (end, eof, tail, read[0], ends)
    facts = (st.message_count, st.first_message, " ".join(st.texts), st.name, st.activity)
    return (framing, st.header, st.old_version, None, facts, b"".join(st.entries), st.count, st.docs, st.usage,
            pack_log(st.usage))


# ------------------------------------------------------------------- choice
def native_scanner() -> Any:
    """``_sessiontree`` when the native reader is to be used, else ``None``
    (``$SESSIONTREE_BACKEND=python`` or no extension): ``_select.native_module``."""
    from .._select import native_module

    return native_module()


def scan_file(path: str | os.PathLike[str], start: int, prior: bytes, content: bool, limit: int,
              *, texts: bool = False, docs: bool = False, native: Any = None) -> ScanResult:
    """One call's scan of ``path`` from ``start`` (a line start: 0 or an earlier call's
    ``end``), with the rules above.

    Args:
        path: the session file.
        start: where to start.
        prior: the entries record of everything before ``start``.
        content: collect the usage log.
        docs: collect docs and usage rows too (and the usage log).
        texts: collect the listing text (``all_messages_text``, else ``""``): the one
            part of the listing facts that needs every user and assistant message's
            content read, which is most of a listing's work.
        limit: return at the first line end at or past ``start + limit`` (after the
            header).
        native: ``_sessiontree`` to read in Rust (see :func:`native_scanner`), else the
            Python rules read.

    Returns:
        The tuple ``_sessiontree.scan_listing`` documents (``ends`` with
        ``_filestate.FINGERPRINT`` bytes at each end). The Rust reader stops at a
        version 1 header and reports a ``fallback`` for a text whose ``String()`` it does
        not compute; then this reads the file with the Python rules (the same call). A
        version 1 file is read to its end (``old_version`` true, no entries record).

    Raises:
        OSError: the file cannot be read.
    """
    path = os.fspath(path)
    if native is not None:
        r = native.scan_listing(path, start, prior, docs, limit, FINGERPRINT, texts, content or docs)
        if r[3] is None and not r[2]:
            return r  # type: ignore[no-any-return]
    with open_regular(path) as f:
        return scan_stream(f, start, prior, content or docs, limit, texts)


def entries_path(entries: bytes, *, native: Any = None) -> list[int]:
    """Entry numbers from the root to the leaf of an entries record: the session's
    current path (loader rules 9–10: parents anywhere in the file, unknown or own id a
    root, cycles broken at their earliest entry; rule 13: the leaf is the last entry,
    or where a ``leaf`` entry moved it)."""
    if native is not None:
        return native.entries_path(entries)  # type: ignore[no-any-return]
    return _entries_path_py(entries)
