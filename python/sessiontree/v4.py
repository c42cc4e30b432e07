"""Version 4 session files of agent-core's harness, read-only.

Upstream has moved agent-core's JSONL storage to a "v4" line format (earendil-works/pi,
``packages/agent/src/harness/session/jsonl.ts``, the ``JsonlSessionStorage`` codec;
``session/types.ts`` the shapes; ``session/context.ts`` the context). Every line has a
``kind``:

* ``{"kind":"header","version":4,"id","createdAt": ms,"cwd","parentSessionId"?}``
  (line 1);
* ``{"kind":"entry","lane","counted"?: false, "type","id",…,"parentId","seq","timestamp": ms}``:
  a tree entry (``message``, ``model_change``, ``thinking_level_change``,
  ``active_tools_change``, ``compaction`` with ``retainedTail`` instead of
  ``firstKeptEntryId``, ``branch_summary``, ``custom``); it moves its lane's leaf to
  itself;
* ``{"kind":"record","id","lane","type",…,"seq","timestamp"}``: an operation record of a
  lane (``operation_started``, ``usage``, …), not in the tree;
* ``{"kind":"lane","seq","lane","leafId"}``: a lane created or moved (``main`` exists
  from the start, its leaf ``null``);
* ``{"kind":"fact","seq","fact":"name","name"}`` / ``{"kind":"fact","seq","fact":"label",
  "targetId","label"?}``: the session name, a label (absent: cleared).

``seq`` is shared by every line after the header and counts up by one (a refused line
with the next ``seq`` still takes it). Replaying a file
(``applyMutation``): an entry's or record's id must be new, an entry's ``parentId``
``null`` or an earlier entry, a record's lane an existing one, a lane's ``leafId`` and a
label's ``targetId`` earlier entries. Upstream throws on a line that breaks one of these
(and truncates a torn last line); this reader skips it and reports it, and never writes.

Why a Python reader and not the native index: the format is read-only here until
upstream settles; its lines have another shape (``kind``, lanes, facts, ``seq``,
millisecond timestamps) that the index's columns and the catalog do not hold; and a
harness file is a session's operations, not years of history. ``benches/v4_read.py``
measured it at about 4x the native open of the same session as v3, and faster than the
python backend's open (docs/BENCHMARKS.md, "Version 4 files").
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ._backend import LoadIssue
from ._context import SessionContext
from ._filestate import open_regular
from ._jsonl import decode_line, iter_lines
from .errors import InvalidSessionError

__all__ = ["ENTRY_TYPES", "RECORD_TYPES", "V4Session", "is_v4", "read_v4"]

ENTRY_TYPES = frozenset({"message", "model_change", "thinking_level_change", "active_tools_change", "compaction",
                         "branch_summary", "custom"})
RECORD_TYPES = frozenset({"operation_started", "abort_requested", "operation_finished", "step_attempt",
                          "tool_started", "queue_enqueued", "queue_cancelled", "write_deferred", "usage"})
_NOT_ENTRY_FIELDS = ("kind", "lane", "counted")


def _is_seq(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**53 - 1


def _is_ms(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 2**53 - 1


@dataclass
class V4Session:
    """A v4 file as agent-core's storage replays it.

    Attributes:
        path: the file.
        header: the header line's object.
        entries: the tree entries in ``seq`` order, each the line without ``kind``,
            ``lane`` and ``counted`` (agent-core's ``Entry``).
        lane_of: entry id -> the lane it was appended to.
        records: the lane records in order, each the line without ``kind``.
        lanes: lane -> its leaf (``None``: before the first entry), in creation order.
        name: the latest ``name`` fact, or ``None``.
        labels: entry id -> label (the latest ``label`` fact; an absent label clears).
        kinds: lines by ``kind`` (``header``, ``entry``, ``record``, ``lane``, ``fact``).
        report: lines skipped, each a :class:`~sessiontree.LoadIssue` (``invalid_json``,
            ``truncated``, ``not_an_object``, or ``invalid_line`` with the codec's reason).
    """

    path: str
    header: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    lane_of: dict[str, str] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    lanes: dict[str, str | None] = field(default_factory=lambda: {"main": None})
    name: str | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    kinds: Counter[str] = field(default_factory=Counter)
    report: list[LoadIssue] = field(default_factory=list)
    _by_id: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ queries
    def leaf_id(self, lane: str = "main") -> str | None:
        """The lane's leaf (``None``: before the first entry).

        Raises:
            KeyError: no such lane.
        """
        return self.lanes[lane]

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        """The entry, or ``None``."""
        return self._by_id.get(entry_id)

    def path_to(self, leaf_id: str | None) -> list[dict[str, Any]]:
        """The entries from the root down to ``leaf_id`` (empty for ``None`` or an
        unknown id). Parents are earlier entries, so the walk ends."""
        out: list[dict[str, Any]] = []
        cur = self._by_id.get(leaf_id) if leaf_id is not None else None
        while cur is not None:
            out.append(cur)
            cur = self._by_id.get(cur["parentId"]) if cur["parentId"] is not None else None
        out.reverse()
        return out

    def children(self, entry_id: str | None, lane: str | None = None) -> list[dict[str, Any]]:
        """The entries whose parent is ``entry_id`` (``None``: the roots), in order; only
        those appended to ``lane`` when it is given (the tree of one lane)."""
        return [e for e in self.entries
                if e["parentId"] == entry_id and (lane is None or self.lane_of[e["id"]] == lane)]

    def records_by_type(self) -> Counter[str]:
        """Lane records by ``type``."""
        return Counter(str(r.get("type")) for r in self.records)

    def context(self, lane: str = "main") -> SessionContext:
        """The context at the lane's leaf (``session/context.ts`` ``buildSessionContext``).

        The thinking level, model and active tools come from the whole path; the context
        entries are the path, or the latest compaction on it and the entries after it;
        a compaction contributes its summary and then its ``retainedTail`` messages, a
        message itself (an assistant message whose ``stopReason`` is ``"deferred"``
        nothing), a branch summary with a summary a ``branchSummary`` message, anything
        else nothing. Tool results are then moved right after the assistant message
        that called them, and dropped when it is not in the context
        (``normalizeToolResults``).

        Raises:
            KeyError: no such lane.
        """
        path = self.path_to(self.lanes[lane])
        thinking: Any = "off"
        model: dict[str, Any] | None = None
        tools: list[Any] | None = None
        start = 0
        for i, e in enumerate(path):
            t = e.get("type")
            msg = e.get("message")
            if t == "thinking_level_change":
                thinking = e.get("thinkingLevel")
            elif t == "model_change":
                model = {"provider": e.get("provider"), "modelId": e.get("modelId")}
            elif t == "message" and isinstance(msg, dict) and msg.get("role") == "assistant":
                model = {"provider": msg.get("provider"), "modelId": msg.get("model")}
            elif t == "active_tools_change":
                names = e.get("activeToolNames")
                tools = list(names) if isinstance(names, list) else None
            if t == "compaction":
                start = i
        messages: list[dict[str, Any]] = []
        for e in path[start:]:
            messages.extend(_contribution(e))
        return SessionContext(messages=_normalize_tool_results(messages), thinking_level=thinking, model=model,
                              active_tool_names=tools)


def _contribution(e: dict[str, Any]) -> list[dict[str, Any]]:
    t = e.get("type")
    if t == "message":
        msg = e.get("message")
        if not isinstance(msg, dict) or (msg.get("role") == "assistant" and msg.get("stopReason") == "deferred"):
            return []
        return [msg]
    if t == "compaction":
        tail = e.get("retainedTail")
        summary = {"role": "compactionSummary", "summary": e.get("summary"), "tokensBefore": e.get("tokensBefore"),
                   "timestamp": e.get("timestamp")}
        return [summary, *(m for m in (tail if isinstance(tail, list) else []) if isinstance(m, dict))]
    if t == "branch_summary" and e.get("summary"):
        return [{"role": "branchSummary", "summary": e.get("summary"), "fromId": e.get("fromId"),
                 "timestamp": e.get("timestamp")}]
    return []


def _normalize_tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``normalizeToolResults``: each tool result right after the assistant message
    whose tool call it answers, in order; results whose call is not there are dropped."""
    owner: dict[Any, int] = {}
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for part in m["content"]:
                if isinstance(part, dict) and part.get("type") == "toolCall":
                    owner[part.get("id")] = i
    results: dict[int, list[dict[str, Any]]] = {}
    rest: list[tuple[int, dict[str, Any]]] = []
    for i, m in enumerate(messages):
        if m.get("role") == "toolResult":
            o = owner.get(m.get("toolCallId"))
            if o is not None:
                results.setdefault(o, []).append(m)
            continue
        rest.append((i, m))
    out: list[dict[str, Any]] = []
    for i, m in rest:
        out.append(m)
        out.extend(results.get(i, ()))
    return out


def is_v4(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first line is a v4 header (``kind`` ``"header"``, ``version`` 4);
    reads the first line only. ``False`` for a file that cannot be read."""
    try:
        with open_regular(os.fspath(path)) as f:
            first = f.readline(1 << 20)
        v = decode_line(first.rstrip(b"\r\n"))
    except (OSError, ValueError):
        return False
    return isinstance(v, dict) and v.get("kind") == "header" and v.get("version") == 4


def read_v4(path: str | os.PathLike[str]) -> V4Session:
    """Read a v4 file (never writes).

    Raises:
        InvalidSessionError: line 1 is not a v4 header.
        OSError: the file cannot be read.
    """
    p = os.fspath(path)
    with open_regular(p) as f:
        data = f.read()
    lines = iter(_lines(data))
    first = next(lines, None)
    header = _obj(first[2]) if first is not None else None
    if (first is None or not isinstance(header, dict) or header.get("kind") != "header" or header.get("version") != 4
            or not isinstance(header.get("id"), str) or not isinstance(header.get("cwd"), str)
            or not _is_ms(header.get("createdAt"))):
        raise InvalidSessionError("not a version 4 session header", p, 1 if first is not None else None,
                                  0 if first is not None else None)
    s = V4Session(path=p, header=header)
    s.kinds["header"] += 1
    used: set[str] = set()
    seq = 0
    for line_no, offset, raw, complete in lines:
        problem = _apply(s, raw, seq, used)
        if problem is None or problem[0] == "invalid_line" and not problem[1].startswith("seq "):
            # A line with the next seq takes it even when the codec would refuse the
            # rest: one bad line does not make every later one bad.
            seq += 1
        if problem is None:
            continue
        kind, why = problem
        if kind == "invalid_json" and not complete:
            kind, why = "truncated", f"incomplete last line ({len(raw)} bytes, no LF)"
        s.report.append(LoadIssue(kind, line_no, offset, (), why))
    return s


def _lines(data: bytes) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line, offset, content without CR/LF, ended by LF) of each non-blank line."""
    for line_no, offset, content, is_tail in iter_lines(data):
        if content.strip(b" \t\r"):
            yield line_no, offset, content, not is_tail


def _obj(raw: bytes) -> Any:
    try:
        return decode_line(raw)
    except ValueError:
        return None


def _apply(s: V4Session, raw: bytes, seq: int, used: set[str]) -> tuple[str, str] | None:
    """Replay one line onto ``s`` (``applyMutation``); the problem if it is skipped."""
    try:
        v = decode_line(raw)
    except ValueError:
        return "invalid_json", "not valid JSON"
    if not isinstance(v, dict):
        return "not_an_object", "valid JSON but not an object"
    kind = v.get("kind")
    if not _is_seq(v.get("seq")):
        return "invalid_line", "seq is not a positive integer"
    if v["seq"] != seq + 1:
        return "invalid_line", f"seq {v['seq']} after {seq}"
    if kind == "entry":
        eid, lane, parent, etype = v.get("id"), v.get("lane"), v.get("parentId", ...), v.get("type")
        if not isinstance(eid, str) or not isinstance(lane, str) or not isinstance(etype, str):
            return "invalid_line", "entry without a string id, lane or type"
        if etype not in ENTRY_TYPES:
            return "invalid_line", f"unknown entry type {etype!r}"
        if not _is_ms(v.get("timestamp")) or ("counted" in v and not isinstance(v["counted"], bool)):
            return "invalid_line", "entry with an invalid timestamp or counted flag"
        if eid in used:
            return "invalid_line", f"duplicate id {eid}"
        if parent is not None and parent not in s._by_id:
            return "invalid_line", f"parent {parent!r} is no earlier entry"
        entry = {k: x for k, x in v.items() if k not in _NOT_ENTRY_FIELDS}
        used.add(eid)
        s.entries.append(entry)
        s._by_id[eid] = entry
        s.lane_of[eid] = lane
        s.lanes[lane] = eid
    elif kind == "record":
        rid, lane, rtype = v.get("id"), v.get("lane"), v.get("type")
        if not isinstance(rid, str) or not isinstance(lane, str) or rtype not in RECORD_TYPES:
            return "invalid_line", "record without a string id and lane, or of an unknown type"
        if not _is_ms(v.get("timestamp")):
            return "invalid_line", "record with an invalid timestamp"
        if lane not in s.lanes:
            return "invalid_line", f"record of a lane that does not exist: {lane!r}"
        if rid in used:
            return "invalid_line", f"duplicate id {rid}"
        used.add(rid)
        s.records.append({k: x for k, x in v.items() if k != "kind"})
    elif kind == "lane":
        lane, leaf = v.get("lane"), v.get("leafId", ...)
        if not isinstance(lane, str) or (leaf is not None and leaf not in s._by_id):
            return "invalid_line", "lane without a string name, or whose leafId is no earlier entry"
        s.lanes[lane] = leaf
    elif kind == "fact" and v.get("fact") == "name":
        if not isinstance(v.get("name"), str):
            return "invalid_line", "name fact without a string name"
        s.name = v["name"]
    elif kind == "fact" and v.get("fact") == "label":
        target, label = v.get("targetId"), v.get("label", ...)
        if not isinstance(target, str) or target not in s._by_id or not (label is ... or isinstance(label, str)):
            return "invalid_line", "label fact whose targetId is no earlier entry, or whose label is not a string"
        if label is ...:
            s.labels.pop(target, None)
        else:
            s.labels[target] = label
    else:
        return "invalid_line", f"unknown kind {kind!r}" if kind != "fact" else "unknown fact"
    s.kinds[kind] += 1
    return None
