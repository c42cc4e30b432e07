"""Import Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

The format is not documented by its maker; ``docs/IMPORT.md`` lists what this module
relies on and where it was learnt. In short, every line is one record; chained records
(``user``, ``assistant``, ``system``, ``progress``, ``attachment``) carry ``uuid`` and
``parentUuid``, so a rewind is already a branch; the lines of one API response (one per
content block) share ``message.id`` and each repeats the usage; uuid-less records
(``summary``, ``custom-title``, ``ai-title``, ``file-history-snapshot``,
``queue-operation``) sit between them in file order.

Mapping (see docs/IMPORT.md for the full table): ``uuid`` -> entry ``id`` and
``parentUuid`` -> ``parentId``; one assistant message per ``message.id`` with its usage
once; ``tool_result`` blocks -> ``toolResult`` messages joined on the tool-use id;
``thinking`` keeps its signature; ``compact_boundary`` + its summary -> a ``custom``
entry and a ``compaction`` that keeps nothing before it; titles -> ``session_info``;
sidechains / subagent transcripts -> their own sessions with ``parentSession``; the
rest -> ``custom`` entries (``customType`` ``"claude-code:<record type>"``) placed in
the chain, or skipped (``progress``) with their children re-linked to their parent.
"""

from __future__ import annotations

import glob
import os
import uuid as uuidlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ._common import (
    PlannedEntry,
    Report,
    SessionPlan,
    SourceLine,
    as_int,
    compact_json,
    derive_id,
    derive_uuid,
    iso_of,
    make_usage,
    ms_of,
    read_source,
    session_id_of,
    target_path_or_none,
    zero_usage,
)

__all__ = ["SOURCE", "claude_home", "default_sources", "plan_claude", "session_files_for"]

SOURCE = "claude-code"
CUSTOM = "claude-code:"
EPOCH_ISO = "1970-01-01T00:00:00.000Z"

#: Keys every chained record repeats; left out of the ``data`` of custom entries.
COMMON_KEYS = frozenset({
    "parentUuid", "logicalParentUuid", "uuid", "sessionId", "timestamp", "type", "isSidechain",
    "userType", "cwd", "version", "gitBranch", "slug", "agentId",
})
#: Record types kept in the chain without an entry (children re-linked to the parent).
PASS_THROUGH = frozenset({"progress"})

# What a record whose uuid came before is replaced by: no key of a source record can
# look like it (a record may hold any key, so a marker key would drop real records).
_DUPLICATE: dict[str, Any] = {}
TITLE_TYPES = {"summary": "summary", "custom-title": "customTitle", "ai-title": "aiTitle"}
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "refusal": "stop",
                "max_tokens": "length", "model_context_window_exceeded": "length", "tool_use": "toolUse"}


def claude_home() -> str:
    """``$CLAUDE_CONFIG_DIR`` if set, else ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return os.path.abspath(os.path.expanduser(env)) if env else os.path.expanduser("~/.claude")


def store_folder(home: str | None = None) -> str:
    """``<home>/projects`` (``home``: :func:`claude_home`), where the transcripts are."""
    return os.path.join(home or claude_home(), "projects")


def default_sources(home: str | None = None) -> list[str]:
    """Every transcript under :func:`store_folder`: ``*/*.jsonl`` (sessions and old
    ``agent-*.jsonl`` files) and ``*/*/subagents/*.jsonl`` (newer subagent files)."""
    root = store_folder(home)
    esc = glob.escape(root)
    found = glob.glob(os.path.join(esc, "*", "*.jsonl")) + glob.glob(os.path.join(esc, "*", "*", "subagents", "*.jsonl"))
    return sorted(found)


def session_files_for(path: str) -> list[str]:
    """``path`` and, for a session file, the subagent transcripts in ``<stem>/subagents/``:
    its regular files, as a folder PATH's and the store's are taken (a FIFO or a folder
    named ``*.jsonl`` there failed every import of the session: trial 59b)."""
    stem = os.path.splitext(path)[0]
    extra = sorted(f for f in glob.glob(os.path.join(glob.escape(stem), "subagents", "*.jsonl")) if os.path.isfile(f))
    return [path, *extra]


def _is_uuid(s: object) -> bool:
    if not isinstance(s, str):
        return False
    try:
        uuidlib.UUID(s)
    except ValueError:
        return False
    return len(s) == 36


def _str(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def _passes_through(t: object) -> bool:
    """Whether a record's ``type`` is one kept in the chain without an entry; any value
    (a transcript may hold an object there, which no set lookup takes)."""
    return isinstance(t, str) and t in PASS_THROUGH


# ------------------------------------------------------------------------ splitting


@dataclass
class _Bucket:
    key: str
    role: str
    lines: list[SourceLine] = field(default_factory=list)
    agent_id: str | None = None
    root_uuid: str | None = None


def _split(lines: list[SourceLine]) -> list[_Bucket]:
    """Main session first, then one bucket per subagent (``agentId``) or sidechain root."""
    main = _Bucket("main", "main")
    agents: dict[str, _Bucket] = {}
    loose_sidechain: list[SourceLine] = []
    for sl in lines:
        r = sl.record
        if r.get("isSidechain") is True:
            agent = _str(r.get("agentId"))
            if agent is not None:
                b = agents.get(agent)
                if b is None:
                    b = agents[agent] = _Bucket("agent:" + agent, "subagent", agent_id=agent)
                b.lines.append(sl)
            else:
                loose_sidechain.append(sl)
        else:
            main.lines.append(sl)
    if loose_sidechain:
        parent = {r.record.get("uuid"): r.record.get("parentUuid") for r in loose_sidechain if _str(r.record.get("uuid"))}
        by_root: dict[str, _Bucket] = {}
        for sl in loose_sidechain:
            u = _str(sl.record.get("uuid"))
            root = u
            seen: set[str] = set()
            while root is not None and root not in seen:
                seen.add(root)
                p = parent.get(root)
                if not isinstance(p, str) or p not in parent:
                    break
                root = p
            key = root or f"line{sl.line}"
            b = by_root.get(key)
            if b is None:
                b = by_root[key] = _Bucket("sidechain:" + key, "sidechain", root_uuid=key)
            b.lines.append(sl)
        agents.update({b.key: b for b in by_root.values()})
    has_main_messages = any(sl.record.get("type") in ("user", "assistant") for sl in main.lines)
    if not has_main_messages and len(agents) == 1:
        only = next(iter(agents.values()))
        merged = sorted(main.lines + only.lines, key=lambda s: s.line)
        only.lines = merged
        return [only]
    return [main, *agents.values()]


# ------------------------------------------------------------------------ headers


def _first_ts(lines: list[SourceLine]) -> str | None:
    for sl in lines:
        ts = iso_of(sl.record.get("timestamp"))
        if ts is not None:
            return ts
    return None


def _cwd(lines: list[SourceLine]) -> str | None:
    for sl in lines:
        c = _str(sl.record.get("cwd"))
        if c is not None:
            return c
    return None


def _source_session_id(lines: list[SourceLine]) -> str | None:
    counts = Counter(s for s in (_str(sl.record.get("sessionId")) for sl in lines) if s is not None)
    return counts.most_common(1)[0][0] if counts else None


def _main_session_id(path: str, lines: list[SourceLine]) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    if _is_uuid(stem):
        return stem
    return session_id_of(SOURCE, _source_session_id(lines), os.path.abspath(path))


def _main_header(path: str) -> tuple[str, str, str] | None:
    """(session id, header timestamp, cwd) of the main session of a transcript, if any."""
    rep = Report()
    try:
        lines = read_source(path, rep)
    except OSError:
        return None
    main = _split(lines)[0]
    if main.role != "main":
        return None
    ts = _first_ts(main.lines)
    return _main_session_id(path, main.lines), ts or EPOCH_ISO, _cwd(main.lines) or os.sep


def _parent_file_for_agent(path: str, parent_sid: str | None) -> str | None:
    folder = os.path.dirname(os.path.abspath(path))
    cands = []
    if os.path.basename(folder) == "subagents":
        session_dir = os.path.dirname(folder)
        cands.append(session_dir + ".jsonl")
    # The transcript's own sessionId names a file beside it, only as a plain name: an
    # absolute path or one with a folder in it (`../x`) would read a file anywhere
    # (adversary 59).
    if parent_sid and os.path.basename(parent_sid) == parent_sid and parent_sid not in (".", ".."):
        cands.append(os.path.join(folder, parent_sid + ".jsonl"))
    for c in cands:
        if os.path.isfile(c) and os.path.abspath(c) != os.path.abspath(path):
            return c
    return None


# ------------------------------------------------------------------------ planning


def plan_claude(path: str, to: str | os.PathLike[str] | None = None) -> list[SessionPlan]:
    """Plan the Pi sessions one Claude Code transcript holds (reads, never writes).

    Args:
        path: the ``.jsonl`` transcript (a session, or a subagent's ``agent-*.jsonl``).
        to: the folder imported files go to (only used to name ``parentSession`` paths).

    Returns:
        The main session first (if the file has one), then one plan per subagent /
        sidechain. Plans with no message are returned too (``apply_plan`` writes nothing
        for them and says so).

    Raises:
        OSError: the file cannot be read.
    """
    file_report = Report()
    lines = read_source(path, file_report)
    buckets = _split(lines)
    plans: list[SessionPlan] = []
    main_plan: SessionPlan | None = None
    for b in buckets:
        if b.role == "main":
            sid = _main_session_id(path, b.lines)
            plan = _plan_bucket(path, b, sid, None)
            main_plan = plan
        else:
            parent_sid = _source_session_id(b.lines)
            if main_plan is not None:
                base = main_plan.session_id
            else:
                base = parent_sid or derive_uuid(SOURCE, os.path.abspath(path))
            tail = ("agent", b.agent_id) if b.agent_id is not None else ("sidechain", b.root_uuid)
            sid = derive_uuid(SOURCE, base, *tail)
            parent_path: str | None = None
            parent_id = parent_sid
            if main_plan is not None:
                parent_id = main_plan.session_id
                if main_plan.message_count:
                    parent_path = target_path_or_none(main_plan, to)
            else:
                pfile = _parent_file_for_agent(path, parent_sid)
                head = _main_header(pfile) if pfile else None
                if head is not None:
                    hp = SessionPlan(SOURCE, pfile or "", head[0], head[2], head[1])
                    parent_id = head[0]
                    parent_path = target_path_or_none(hp, to)
            plan = _plan_bucket(path, b, sid, parent_path)
            plan.parent_source_id = parent_id
            if parent_path is None and main_plan is not None:
                plan.report.unmapped["parentSession (the parent session holds no message: not imported; its id kept)"] += 1
            elif parent_path is None:
                plan.report.unmapped["parentSession (parent session's transcript not found)"] += 1
        plans.append(plan)
    if plans:
        file_report.records = 0
        file_report.merged_into(plans[0].report)
    return plans


class _Planner:
    """Turns the records of one session into planned entries (see the module docstring)."""

    def __init__(self, path: str, bucket: _Bucket, session_id: str, parent_session: str | None) -> None:
        self.path = path
        self.lines = bucket.lines
        self.session_id = session_id
        self.report = Report()
        self.report.records = len(bucket.lines)
        header_ts = _first_ts(bucket.lines) or EPOCH_ISO
        cwd = _cwd(bucket.lines)
        if cwd is None:
            self.report.unmapped["cwd (no record names one; '/' used)"] += 1
        self.plan = SessionPlan(SOURCE, os.path.abspath(path), session_id, cwd or os.sep, header_ts,
                                parent_session=parent_session, role=bucket.role, report=self.report)
        self.entries = self.plan.entries
        self.by_uuid: dict[str, SourceLine] = {}
        self.parent: dict[str, str | None] = {}
        self.tail: dict[str, str | None] = {}       # record uuid -> entry id its children attach to
        self.redirect: dict[str, str] = {}          # entry id ("" = root) -> entry inserted after it
        self.last_emitted: str | None = None
        self.last_ts = header_ts
        self.tool_names: dict[str, str] = {}
        self.group_of: dict[str, int] = {}
        self.groups: list[list[SourceLine]] = []
        self.group_entry: dict[int, str] = {}
        self.usage_owner: dict[str, int] = {}        # message.id -> group that carries its usage
        self.compact_summary_of: dict[str, str] = {}  # boundary uuid -> summary record uuid
        self.summary_boundary: dict[str, str] = {}
        self.custom_title_seen = False
        self.loose_seen: Counter[str] = Counter()
        self.last_model: str | None = None

    # ----------------------------------------------------------------- helpers
    def resolve(self, entry_id: str | None) -> str | None:
        key = entry_id if entry_id is not None else ""
        seen = 0
        while key in self.redirect and seen < 1_000_000:
            key = self.redirect[key]
            seen += 1
        return key or None

    def ts(self, record: dict[str, Any]) -> str:
        t = iso_of(record.get("timestamp"))
        if t is not None:
            self.last_ts = t
            return t
        return self.last_ts

    def add(self, kind: str, entry_id: str, parent: str | None, ts: str, fields: dict[str, Any], line: int | None) -> str:
        self.entries.append(PlannedEntry(kind, entry_id, parent, ts, fields, line))
        self.last_emitted = entry_id
        return entry_id

    def custom_data(self, record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if k not in COMMON_KEYS}

    # ----------------------------------------------------------------- passes
    def index(self) -> None:
        rep = self.report
        for sl in self.lines:
            u = _str(sl.record.get("uuid"))
            if u is None:
                continue
            if u in self.by_uuid:
                rep.skip(f"{sl.record.get('type')} (duplicate uuid)", sl.line)
                sl.record = _DUPLICATE
                continue
            self.by_uuid[u] = sl
        for u, sl in self.by_uuid.items():
            r = sl.record
            p = r.get("parentUuid")
            if p is None and r.get("type") == "system" and r.get("subtype") == "compact_boundary":
                p = r.get("logicalParentUuid")
            if not isinstance(p, str) or not p:
                self.parent[u] = None
            elif p == u:
                rep.problem(f"record {u} is its own parent (made a root)", sl.line)
                self.parent[u] = None
            elif p not in self.by_uuid:
                if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
                    self.parent[u] = None
                else:
                    rep.problem(f"record {u}: parent {p} is not in the file (made a root)", sl.line)
                    rep.unmapped["parentUuid not in the file"] += 1
                    self.parent[u] = None
            else:
                self.parent[u] = p
        self._break_cycles()
        for sl in self.lines:
            r = sl.record
            if r.get("type") != "assistant":
                continue
            content = (r.get("message") or {}).get("content") if isinstance(r.get("message"), dict) else None
            if isinstance(content, list):
                for b in content:
                    if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                        tid, name = _str(b.get("id")), _str(b.get("name"))
                        if tid and name and tid not in self.tool_names:
                            self.tool_names[tid] = name
        self._group()
        self._chain_turns()
        for u, sl in self.by_uuid.items():
            r = sl.record
            if r.get("type") == "user" and r.get("isCompactSummary") is True:
                p = self.parent.get(u)
                pr = self.by_uuid[p].record if p is not None else None
                if pr is not None and pr.get("type") == "system" and pr.get("subtype") == "compact_boundary" \
                        and p not in self.compact_summary_of:
                    self.compact_summary_of[p] = u  # type: ignore[index]
                    self.summary_boundary[u] = p  # type: ignore[assignment]

    def _break_cycles(self) -> None:
        state: dict[str, int] = {}
        for u in self.by_uuid:
            if state.get(u):
                continue
            stack: list[str] = []
            cur: str | None = u
            while cur is not None and not state.get(cur):
                state[cur] = 1
                stack.append(cur)
                cur = self.parent.get(cur)
            if cur is not None and state.get(cur) == 1:
                cycle = stack[stack.index(cur):]
                first = min(cycle, key=lambda x: self.by_uuid[x].line)
                self.parent[first] = None
                self.report.problem(f"parent cycle through {len(cycle)} record(s), broken at {first} (made a root)",
                                    self.by_uuid[first].line)
                self.report.unmapped["parentUuid cycle (broken)"] += 1
            for s in stack:
                state[s] = 2

    def _group(self) -> None:
        for sl in self.lines:
            r = sl.record
            u = _str(r.get("uuid"))
            if u is None or r.get("type") != "assistant" or u not in self.by_uuid or self.by_uuid[u] is not sl:
                continue
            msg = r.get("message")
            mid = _str(msg.get("id")) if isinstance(msg, dict) else None
            joined = None
            if mid is not None:
                anc = self.parent.get(u)
                hops = 0
                while anc is not None and hops < 10_000:
                    ar = self.by_uuid[anc].record
                    if _passes_through(ar.get("type")):
                        anc = self.parent.get(anc)
                        hops += 1
                        continue
                    break
                if anc is not None and anc in self.group_of:
                    g = self.group_of[anc]
                    gm = self.groups[g][0].record.get("message")
                    if isinstance(gm, dict) and gm.get("id") == mid:
                        joined = g
            if joined is None:
                self.groups.append([sl])
                self.group_of[u] = len(self.groups) - 1
                if mid is not None and mid not in self.usage_owner:
                    self.usage_owner[mid] = len(self.groups) - 1
            else:
                self.groups[joined].append(sl)
                self.group_of[u] = joined

    def _chain_turns(self) -> None:
        """Put a response's tool results on one path, in file order, as Pi writes them.

        Claude Code 2.1.x writes a response with several ``tool_use`` blocks as several
        assistant lines (one block each, one ``message.id``), and each ``tool_result``
        line's ``parentUuid`` names the line holding *its own* call (Claude Code sets it
        from ``sourceToolAssistantUUID``; its own reader splices the other results back
        when it resumes: ``recoverOrphanedParallelToolResults``). The lines merge into
        one assistant message, so those results would all hang off it as siblings and
        only one branch would hold the conversation. Each record of a turn (the
        response's first line, and every record that descends from the response
        without being a user prompt or another response) is a step of one chain: a
        tool result whose parent is a line of the response, and any record whose parent
        is a line of the response other than its first (a line merged away), is
        re-hung under the turn's record written just before it. Other parents stay:
        a rewind (a prompt or response with two children) is still a branch, and one
        line per response (older versions) changes nothing.
        """
        turn_of: dict[str, int | None] = {}
        latest: dict[int, str] = {}  # turn -> its record written last (merged lines aside)
        changed = False

        def turn(u: str | None) -> int | None:
            # The response a record belongs to, following parents (memoised).
            walk: list[str] = []
            t: int | None = None
            while u is not None and u not in turn_of:
                r = self.by_uuid[u].record
                if r.get("type") == "assistant" and u in self.group_of:
                    t = self.group_of[u]
                    break
                if r.get("type") == "user" and not _carries_tool_result(r):
                    break  # a prompt: no turn
                walk.append(u)
                u = self.parent.get(u)
                if len(walk) > 100_000:
                    break
            else:
                t = turn_of.get(u) if u is not None else None
            if u is not None and u not in turn_of:
                turn_of[u] = t
            for w in walk:
                turn_of[w] = t
            return t

        for sl in self.lines:
            r = sl.record
            u = _str(r.get("uuid"))
            if u is None or self.by_uuid.get(u) is not sl or _passes_through(r.get("type")):
                continue
            p = self.parent.get(u)
            while p is not None and _passes_through(self.by_uuid[p].record.get("type")):
                p = self.parent.get(p)
            g = self.group_of.get(u) if r.get("type") == "assistant" else None
            if g is not None:
                if self.groups[g][0] is sl:
                    latest[g] = u
                continue  # a line of a response: merged (or its first line)
            pr = self.by_uuid[p].record if p is not None else None
            pg = self.group_of.get(p) if p is not None and pr is not None and pr.get("type") == "assistant" else None
            if pg is not None and p is not None:
                merged = self.groups[pg][0] is not self.by_uuid[p]
                last = latest.get(pg)
                if (merged or _carries_tool_result(r)) and last is not None and last != p:
                    self.parent[u] = last
                    changed = True
            t = turn(u)
            if t is not None:
                latest[t] = u
        if changed:
            self._break_cycles()

    # ----------------------------------------------------------------- emit
    def run(self) -> SessionPlan:
        self.index()
        waiting: dict[str, list[SourceLine]] = {}
        done: set[str] = set()
        for sl in self.lines:
            r = sl.record
            if r is _DUPLICATE:
                continue
            u = _str(r.get("uuid"))
            if u is None:
                self.loose(sl)
                continue
            if self.by_uuid.get(u) is not sl:
                continue
            p = self.parent.get(u)
            if p is not None and p not in done:
                waiting.setdefault(p, []).append(sl)
                continue
            queue = [sl]
            while queue:
                cur = queue.pop(0)
                cu = cur.record["uuid"]
                self.chained(cur)
                done.add(cu)
                queue.extend(waiting.pop(cu, []))
        for left in waiting.values():  # pragma: no cover - cycles are broken, missing parents rooted
            for sl in left:
                self.report.skip(f"{sl.record.get('type')} (unreachable)", sl.line)
        return self.plan

    def parent_entry(self, u: str) -> str | None:
        p = self.parent.get(u)
        base = self.tail.get(p) if p is not None else None
        return self.resolve(base)

    def chained(self, sl: SourceLine) -> None:
        r = sl.record
        u: str = r["uuid"]
        t = r.get("type")
        rep = self.report
        parent = self.parent_entry(u)
        if _passes_through(t):
            rep.skip(f"{t} (children re-linked to its parent)", None, problem=False)
            self.tail[u] = parent
            return
        ts = self.ts(r)
        if t == "assistant":
            g = self.group_of.get(u)
            if g is not None and self.groups[g][0] is not sl:
                self.tail[u] = self.group_entry.get(g, parent)
                rep.imported["assistant (merged into its response)"] += 1
                return
            if not isinstance(r.get("message"), dict):
                rep.skip("assistant (no message)", sl.line)
                self.tail[u] = parent
                return
            eid = self.assistant(sl, g, u, parent, ts)
            if g is not None:
                self.group_entry[g] = eid
            self.tail[u] = self.last_emitted
            return
        if t == "user":
            if not isinstance(r.get("message"), dict):
                rep.skip("user (no message)", sl.line)
                self.tail[u] = parent
                return
            if u in self.summary_boundary:
                boundary = self.summary_boundary[u]
                first_kept = self.tail.get(boundary)
                summary = _text_of(r["message"].get("content"))
                meta = self.by_uuid[boundary].record.get("compactMetadata")
                tokens = as_int(meta.get("preTokens")) if isinstance(meta, dict) else 0
                self.add("compaction", u, parent, ts,
                         {"summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": tokens}, sl.line)
                rep.imported["user (compact summary -> compaction)"] += 1
                self.tail[u] = u
                return
            self.user(sl, u, parent, ts)
            self.tail[u] = self.last_emitted
            return
        if t == "system":
            sub = r.get("subtype")
            if sub == "compact_boundary":
                self.add("custom", u, parent, ts, {"customType": CUSTOM + "compact_boundary", "data": self.custom_data(r)}, sl.line)
                if u in self.compact_summary_of:
                    rep.imported["system compact_boundary (-> compaction)"] += 1
                else:
                    rep.custom["system compact_boundary (no summary follows)"] += 1
                self.tail[u] = u
                return
            self.add("custom", u, parent, ts, {"customType": CUSTOM + "system", "data": self.custom_data(r)}, sl.line)
            rep.custom[f"system {sub}" if isinstance(sub, str) else "system"] += 1
            self.tail[u] = u
            return
        name = t if isinstance(t, str) and t else "(no type)"
        self.add("custom", u, parent, ts, {"customType": CUSTOM + name, "data": self.custom_data(r)}, sl.line)
        rep.custom[name] += 1
        if name not in ("attachment",):
            rep.unmapped[f"record type {name} (kept as custom)"] += 1
        self.tail[u] = u

    def loose(self, sl: SourceLine) -> None:
        """A record without uuid: placed after the entry written last (in file order)."""
        r = sl.record
        t = r.get("type")
        name = t if isinstance(t, str) and t else "(no type)"
        occurrence_key = name + "\x1f" + compact_json(r)
        self.loose_seen[occurrence_key] += 1
        eid = derive_id(SOURCE, self.session_id, "record", occurrence_key, self.loose_seen[occurrence_key])
        parent = self.resolve(self.last_emitted)
        ts = self.ts(r)
        rep = self.report
        if name in TITLE_TYPES:
            title = r.get(TITLE_TYPES[name])
            if not isinstance(title, str) or not title.strip():
                rep.skip(f"{name} (no title text)", sl.line)
                return
            if name == "custom-title":
                self.custom_title_seen = True
            elif self.custom_title_seen:
                rep.skip(f"{name} (after a custom-title, which wins)", None, problem=False)
                return
            self.add("session_info", eid, parent, ts, {"name": title}, sl.line)
            rep.imported[f"{name} (-> session_info)"] += 1
        else:
            self.add("custom", eid, parent, ts, {"customType": CUSTOM + name, "data": self.custom_data(r)}, sl.line)
            rep.custom[name] += 1
            if name not in ("file-history-snapshot", "queue-operation", "last-prompt"):
                rep.unmapped[f"record type {name} (kept as custom)"] += 1
        self.redirect[parent if parent is not None else ""] = eid

    def first_model(self) -> str | None:
        """The first model of a real response in this session (``None`` if none)."""
        for sl in self.lines:
            msg = sl.record.get("message")
            m = _str(msg.get("model")) if sl.record.get("type") == "assistant" and isinstance(msg, dict) else None
            if m is not None and m != "<synthetic>":
                return m
        return None

    # ----------------------------------------------------------------- messages
    def assistant(self, first: SourceLine, g: int | None, u: str, parent: str | None, ts: str) -> str:
        rep = self.report
        members = self.groups[g] if g is not None else [first]
        content: list[dict[str, Any]] = []
        seen_blocks: set[str] = set()
        seen_tools: set[str] = set()
        extra: list[Any] = []
        best: dict[str, Any] | None = None
        best_out = -1
        stop: str | None = None
        cost: float | None = None
        model = None
        error_text = None
        for m in members:
            rec = m.record
            msg: dict[str, Any] = rec["message"] if isinstance(rec.get("message"), dict) else {}
            model = _str(msg.get("model")) or model
            usage = msg.get("usage")
            if isinstance(usage, dict):
                out = as_int(usage.get("output_tokens"))
                if out >= best_out:
                    best, best_out = usage, out
            sr = msg.get("stop_reason")
            if isinstance(sr, str):
                stop = sr
            c = rec.get("costUSD")
            if isinstance(c, (int, float)) and not isinstance(c, bool) and c > 0:
                cost = max(cost or 0.0, float(c))
            if rec.get("isApiErrorMessage") is True:
                error_text = _text_of(msg.get("content")) or "API error"
            blocks = msg.get("content")
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            if not isinstance(blocks, list):
                continue
            for b in blocks:
                key = compact_json(b)
                if key in seen_blocks:
                    continue
                seen_blocks.add(key)
                mapped = _assistant_block(b)
                if mapped is None:
                    bt = b.get("type") if isinstance(b, dict) else type(b).__name__
                    rep.unmapped[f"assistant content block {bt} (kept as custom)"] += 1
                    extra.append(b)
                    continue
                if mapped["type"] == "toolCall":
                    if mapped["id"] in seen_tools:
                        continue
                    seen_tools.add(mapped["id"])
                content.append(mapped)
        synthetic = model == "<synthetic>"
        if synthetic:
            # Claude Code's placeholder for an API error (or an interrupted turn) names
            # no model that ran: the previous real response's, else the next one's.
            model = self.last_model or self.first_model()
        elif model is not None:
            self.last_model = model
        mid = _str((first.record.get("message") or {}).get("id"))
        if synthetic or best is None:
            usage_out = zero_usage()
            if best is None and not synthetic:
                rep.unmapped["assistant usage (absent; zeros written)"] += 1
        elif mid is not None and g is not None and self.usage_owner.get(mid) != g:
            usage_out = zero_usage()
            rep.unmapped["assistant usage (response split across the chain; counted on its first part)"] += 1
        else:
            usage_out = make_usage(as_int(best.get("input_tokens")), as_int(best.get("output_tokens")),
                                   as_int(best.get("cache_read_input_tokens")),
                                   as_int(best.get("cache_creation_input_tokens")), cost)
        if error_text is not None:
            stop_reason = "error"
        elif stop in STOP_REASONS:
            stop_reason = STOP_REASONS[stop]
        else:
            stop_reason = "toolUse" if any(c["type"] == "toolCall" for c in content) else "stop"
        message: dict[str, Any] = {"role": "assistant", "content": content, "api": "anthropic-messages",
                                   "provider": "anthropic", "model": model or "unknown", "usage": usage_out,
                                   "stopReason": stop_reason}
        if error_text is not None:
            message["errorMessage"] = error_text
        message["timestamp"] = ms_of(ts)
        self.add("message", u, parent, ts, {"message": message}, first.line)
        rep.imported["assistant"] += 1
        if extra:
            self.add("custom", derive_id(SOURCE, u, "blocks"), u, ts,
                     {"customType": CUSTOM + "content", "data": {"role": "assistant", "blocks": extra}}, first.line)
        return u

    def user(self, sl: SourceLine, u: str, parent: str | None, ts: str) -> None:
        rep = self.report
        r = sl.record
        msg = r["message"]
        content = msg.get("content")
        ms = ms_of(ts)
        n = 0

        def next_id() -> str:
            nonlocal n
            n += 1
            return u if n == 1 else derive_id(SOURCE, u, n)

        cur = parent
        if isinstance(content, list):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            rest = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
            for b in results:
                tid = _str(b.get("tool_use_id")) or ""
                name = self.tool_names.get(tid)
                if name is None:
                    rep.unmapped["tool_result without its tool_use (toolName empty)"] += 1
                tr: dict[str, Any] = {"role": "toolResult", "toolCallId": tid, "toolName": name or "",
                                      "content": self._result_content(b.get("content"))}
                if len(results) == 1 and "toolUseResult" in r:
                    tr["details"] = r["toolUseResult"]
                tr["isError"] = b.get("is_error") is True
                tr["timestamp"] = ms
                cur = self.add("message", next_id(), cur, ts, {"message": tr}, sl.line)
                rep.imported["user tool_result (-> toolResult)"] += 1
            if not rest and results:
                return
            blocks, extra = self._user_blocks(rest)
            if extra:
                for b in extra:
                    bt = b.get("type") if isinstance(b, dict) else type(b).__name__
                    rep.unmapped[f"user content block {bt} (kept as custom)"] += 1
            body: Any = blocks
        elif isinstance(content, str):
            body, extra = content, []
        else:
            body, extra = [], []
            rep.unmapped["user message without content"] += 1
        if r.get("isMeta") is True:
            cur = self.add("custom_message", next_id(), cur, ts,
                           {"customType": CUSTOM + "meta", "content": body, "display": False}, sl.line)
            rep.imported["user isMeta (-> custom_message)"] += 1
        else:
            cur = self.add("message", next_id(), cur, ts,
                           {"message": {"role": "user", "content": body, "timestamp": ms}}, sl.line)
            rep.imported["user"] += 1
        if extra:
            self.add("custom", next_id(), cur, ts,
                     {"customType": CUSTOM + "content", "data": {"role": "user", "blocks": extra}}, sl.line)

    def _user_blocks(self, blocks: list[Any]) -> tuple[list[dict[str, Any]], list[Any]]:
        out: list[dict[str, Any]] = []
        extra: list[Any] = []
        for b in blocks:
            m = _media_block(b)
            if m is None:
                extra.append(b)
            else:
                out.append(m)
        return out, extra

    def _result_content(self, c: Any) -> list[dict[str, Any]]:
        if isinstance(c, str):
            return [{"type": "text", "text": c}]
        if c is None:
            return []
        if not isinstance(c, list):
            self.report.unmapped["tool_result content (not text; kept as JSON text)"] += 1
            return [{"type": "text", "text": compact_json(c)}]
        out: list[dict[str, Any]] = []
        for b in c:
            m = _media_block(b)
            if m is None:
                bt = b.get("type") if isinstance(b, dict) else type(b).__name__
                self.report.unmapped[f"tool_result block {bt} (kept as JSON text)"] += 1
                out.append({"type": "text", "text": compact_json(b)})
            else:
                out.append(m)
        return out


def _plan_bucket(path: str, bucket: _Bucket, session_id: str, parent_session: str | None) -> SessionPlan:
    return _Planner(path, bucket, session_id, parent_session).run()


def _carries_tool_result(record: dict[str, Any]) -> bool:
    """A ``user`` record whose content holds a ``tool_result`` block."""
    msg = record.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return record.get("type") == "user" and isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _media_block(b: Any) -> dict[str, Any] | None:
    if not isinstance(b, dict):
        return None
    t = b.get("type")
    if t == "text" and isinstance(b.get("text"), str):
        return {"type": "text", "text": b["text"]}
    if t == "image":
        src = b.get("source")
        if isinstance(src, dict) and src.get("type") == "base64" and isinstance(src.get("data"), str):
            return {"type": "image", "data": src["data"], "mimeType": _str(src.get("media_type")) or "image/png"}
    return None


def _assistant_block(b: Any) -> dict[str, Any] | None:
    if not isinstance(b, dict):
        return None
    t = b.get("type")
    if t == "text" and isinstance(b.get("text"), str):
        return {"type": "text", "text": b["text"]}
    if t == "thinking" and isinstance(b.get("thinking"), str):
        out: dict[str, Any] = {"type": "thinking", "thinking": b["thinking"]}
        if isinstance(b.get("signature"), str):
            out["thinkingSignature"] = b["signature"]
        return out
    if t == "redacted_thinking" and isinstance(b.get("data"), str):
        return {"type": "thinking", "thinking": "", "thinkingSignature": b["data"], "redacted": True}
    if t == "tool_use" and _str(b.get("id")) and isinstance(b.get("name"), str):
        args = b.get("input")
        return {"type": "toolCall", "id": b["id"], "name": b["name"],
                "arguments": args if isinstance(args, dict) else {"input": args}}
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""
