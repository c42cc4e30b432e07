"""The catalog's reader with the Python rules: one pass over a session file from an
offset, line by line (``src/listing.rs``'s ``State`` in Python).

The rules it applies, and the tuple it returns, are ``_extract``'s (its module
docstring is their one home); ``_extract.scan_file`` calls :func:`scan_stream` when
there is no native reader, or when it hands a file back (a version 1 header, a text
whose ``String()`` it does not compute). A module of its own so that a native
refresh (the first report after an append) does not import the Python loader's line
rules (``_jsonl``, ``_reader``, orjson behind them): ~9 ms of that report's start
(docs/BENCHMARKS.md, issue 25).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import _js
from .._filestate import FINGERPRINT
from .._jsonl import BOM, is_blank
from .._reader import header_version, is_header, is_title_slot, read_line
from .._time import parse_iso_ms
from ._records import leaf_after, leaf_move, pack_entry, pack_log, records

__all__ = ["scan_stream", "tail_text"]

_BLOCK = 1 << 20


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
        self.entries.append(pack_entry(eid, parent if isinstance(parent, str) and parent else None, move))
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


def scan_stream(f: Any, start: int, prior: bytes, content: bool, limit: int, texts: bool = False) -> tuple[Any, ...]:
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
