"""Import Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Every line is ``{"timestamp", "type", "payload"}`` with ``type`` one of
``session_meta``, ``response_item``, ``event_msg``, ``turn_context``, ``compacted``
(``RolloutLine`` / ``RolloutItem`` in ``codex-rs/protocol``). Lines carry no ids and
no parent: each entry's parent is the previous kept entry, and ``thread_rolled_back``
moves the leaf back past the last ``num_turns`` user turns, so what follows is a branch.

Mapping (full table in docs/IMPORT.md): one assistant message per model response
(``reasoning`` -> thinking with the reasoning item as its signature, as Pi's
openai-responses provider stores it; ``message`` -> text; ``function_call`` /
``custom_tool_call`` -> tool calls), closed by the ``token_count`` event whose usage it
gets; ``function_call_output`` -> ``toolResult`` joined on ``call_id``;
``turn_context`` model / effort changes -> ``model_change`` /
``thinking_level_change``; ``compacted`` -> a ``custom`` entry and a ``compaction``;
``thread_name_updated`` -> ``session_info``; ``user_message`` / ``agent_message`` /
``agent_reasoning`` events that repeat a response item are skipped.

Entry ids are derived from the thread id and the line's position after the session
meta line that starts its segment (a fork that replays its parent's lines after the
parent's own ``session_meta`` gives those entries the parent's ids); lines before the
first ``session_meta`` are a segment of their own, and an id the plan already holds is
derived again, so ids are unique by construction.
"""

from __future__ import annotations

import glob
import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .._jsonl import decode_line
from .._storage import open_regular
from ._common import (
    PlannedEntry,
    Report,
    SessionPlan,
    SourceLine,
    as_int,
    compact_json,
    derive_id,
    iso_of,
    make_usage,
    ms_of,
    read_source,
    session_id_of,
    target_path_or_none,
    zero_usage,
)

__all__ = ["SOURCE", "codex_home", "default_sources", "plan_codex"]

SOURCE = "codex"
CUSTOM = "codex:"
EPOCH_ISO = "1970-01-01T00:00:00.000Z"
_PRELUDE = "\x00before session_meta"  # the segment of lines before the first session_meta
_ROLLOUT_ID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")

#: User-role messages that are context Codex injects, not a user's turn (kept as
#: ``custom_message`` entries, display false, so the LLM context keeps them).
CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions for",
                    "<skill>", "<user_shell_command>", "<turn_aborted>", "<permissions instructions>",
                    "<collaboration_mode>", "<subagent_notification>", "<INSTRUCTIONS>")
EFFORT_LEVELS = {"none": "off", "minimal": "minimal", "low": "low", "medium": "medium", "high": "high",
                 "xhigh": "xhigh"}
#: Events that repeat what response items already hold (skipped, counted).
DUPLICATE_EVENTS = frozenset({"exec_command_end", "patch_apply_end", "mcp_tool_call_end", "web_search_end",
                              "view_image_tool_call", "context_compacted", "image_generation_end",
                              "collab_agent_spawn_end", "collab_agent_interaction_end", "collab_waiting_end",
                              "collab_close_end", "collab_resume_end", "dynamic_tool_call_request",
                              "dynamic_tool_call_response"})
LIFECYCLE_EVENTS = frozenset({"task_started", "task_complete", "turn_started", "turn_complete"})
TEXT_EVENTS = {"user_message": "message", "agent_message": "message", "agent_reasoning": "text",
               "agent_reasoning_raw_content": "text"}
RESPONSE_ITEM_TYPES = frozenset({"message", "reasoning", "function_call", "function_call_output",
                                 "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                                 "web_search_call", "image_generation_call", "tool_search_call",
                                 "tool_search_output", "compaction", "compaction_summary", "ghost_snapshot"})
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})


def codex_home() -> str:
    """``$CODEX_HOME`` if set, else ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    return os.path.abspath(os.path.expanduser(env)) if env else os.path.expanduser("~/.codex")


def store_folder(home: str | None = None) -> str:
    """``<home>/sessions`` (``home``: :func:`codex_home`), where the rollouts are."""
    return os.path.join(home or codex_home(), "sessions")


def default_sources(home: str | None = None) -> list[str]:
    """Every rollout under :func:`store_folder`: ``YYYY/MM/DD/rollout-*.jsonl``."""
    root = glob.escape(store_folder(home))
    return sorted(glob.glob(os.path.join(root, "*", "*", "*", "rollout-*.jsonl")))


# ------------------------------------------------------------------------ lines


@dataclass
class _Line:
    line: int
    ts: str | None
    kind: str
    payload: Any
    raw: dict[str, Any]


def _normalize(lines: list[SourceLine], report: Report) -> tuple[list[_Line], bool]:
    """The rollout's lines as ``RolloutLine`` objects, and whether any line is one already
    (``{timestamp, type, payload}``): a rollout without one is legacy."""
    out: list[_Line] = []
    enveloped = False
    for i, sl in enumerate(lines):
        r = sl.record
        ts = iso_of(r.get("timestamp"))
        t = r.get("type")
        if "payload" in r and isinstance(t, str):
            enveloped = True
            out.append(_Line(sl.line, ts, t, r["payload"], r))
        elif i == 0 and "id" in r and "type" not in r:
            out.append(_Line(sl.line, ts, "session_meta", r, r))  # legacy rollout header
        elif r.get("record_type") == "state":
            report.skip("legacy state line", None, problem=False)
        elif isinstance(t, str) and t in RESPONSE_ITEM_TYPES:
            out.append(_Line(sl.line, ts, "response_item", r, r))  # legacy bare response item
        else:
            out.append(_Line(sl.line, ts, t if isinstance(t, str) and t else "(no type)", r, r))
    return out, enveloped


def _str(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def _texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)]


def _is_context(content: Any) -> bool:
    texts = _texts(content, ("input_text", "output_text", "text"))
    return bool(texts) and all(t.lstrip().startswith(CONTEXT_PREFIXES) for t in texts)


def _parent_thread(meta: dict[str, Any]) -> tuple[str | None, str]:
    fork = _str(meta.get("forked_from_id"))
    if fork:
        return fork, "fork"
    src = meta.get("source")
    if isinstance(src, dict):
        sub = src.get("subagent")
        if isinstance(sub, dict):
            spawn = sub.get("thread_spawn")
            if isinstance(spawn, dict) and _str(spawn.get("parent_thread_id")):
                return spawn["parent_thread_id"], "subagent"
    if _str(meta.get("parent_thread_id")):
        return meta["parent_thread_id"], "subagent"
    return None, "main"


def _header_of(path: str) -> tuple[str, str, str] | None:
    """(thread id, header timestamp, cwd) from a rollout's first ``session_meta`` line."""
    try:
        with open_regular(path) as f:
            for _ in range(20):
                raw = f.readline()
                if not raw:
                    break
                try:
                    r = decode_line(raw)
                except ValueError:
                    continue
                if not isinstance(r, dict):
                    continue
                meta = r.get("payload") if r.get("type") == "session_meta" else (r if "id" in r and "type" not in r else None)
                if isinstance(meta, dict) and _str(meta.get("id")):
                    ts = iso_of(meta.get("timestamp")) or iso_of(r.get("timestamp")) or EPOCH_ISO
                    return meta["id"], ts, _str(meta.get("cwd")) or os.sep
    except OSError:
        return None
    return None


def _find_rollout(thread_id: str, near: str) -> str | None:
    roots: list[str] = []
    cur = os.path.dirname(os.path.abspath(near))
    for _ in range(6):
        if os.path.basename(cur) in ("sessions", "archived_sessions"):
            roots.append(os.path.dirname(cur))
            break
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    roots.append(codex_home())
    suffix = f"{thread_id}.jsonl"
    for home in roots:
        for sub in ("sessions", "archived_sessions"):
            hits = [p for p in _walk_files(os.path.join(home, sub))
                    if os.path.basename(p).startswith("rollout-") and os.path.basename(p).endswith(suffix)]
            for hit in sorted(hits):
                # The name ends with the id, which may be the tail of another thread's id
                # (a forked_from_id cut short): the thread is the one its header names.
                if os.path.abspath(hit) != os.path.abspath(near) and (_header_of(hit) or ("",))[0] == thread_id:
                    return hit
    return None


def _walk_files(root: str) -> list[str]:
    """Every file under ``root``, each folder visited once: a symbolic link to a folder
    is followed unless that folder was seen (``a -> .`` twice made ``glob("**")`` walk
    forever), and errors are passed over."""
    seen: set[tuple[int, int]] = set()
    out: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=True):
        try:
            st = os.stat(folder)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        out.extend(os.path.join(folder, f) for f in files)
    return out


# ------------------------------------------------------------------------ planning


def plan_codex(path: str, to: str | os.PathLike[str] | None = None, *, include_incomplete: bool = False) -> list[SessionPlan]:
    """Plan the Pi session one Codex rollout holds (reads, never writes).

    Args:
        path: the rollout ``.jsonl``.
        to: the folder imported files go to (names the ``parentSession`` path).
        include_incomplete: also import a model response the file ends in the middle
            of (no ``token_count`` and no later record yet). By default it is held back
            and reported, so that a later import, once the response is complete, writes
            it whole with its usage. A legacy rollout (no ``{timestamp, type,
            payload}`` line) is imported whole: Codex wrote no ``token_count`` then.

    Returns:
        A list with the one plan (a list, like :func:`~.claude.plan_claude`).

    Raises:
        OSError: the file cannot be read.
    """
    report = Report()
    lines, enveloped = _normalize(read_source(path, report), report)
    # A legacy rollout (bare response items: Codex's recorder then wrote no events) has
    # no token_count to close its last response, and no Codex writes one any more: it
    # is finished, so nothing of it is held back.
    return [_CodexPlanner(path, lines, report, to, include_incomplete or not enveloped).run()]


class _Group:
    def __init__(self, entry: PlannedEntry, index: int, first_line: int) -> None:
        self.entry = entry
        self.index = index
        self.first_line = first_line
        self.open = True
        self.has_usage = False

    @property
    def message(self) -> dict[str, Any]:
        m: dict[str, Any] = self.entry.fields["message"]
        return m


class _CodexPlanner:
    def __init__(self, path: str, lines: list[_Line], report: Report, to: Any, include_incomplete: bool) -> None:
        self.path = path
        self.lines = lines
        self.report = report
        self.to = to
        self.include_incomplete = include_incomplete
        meta_line = next((ln for ln in lines if ln.kind == "session_meta" and isinstance(ln.payload, dict)), None)
        meta: dict[str, Any] = meta_line.payload if meta_line is not None else {}
        m = _ROLLOUT_ID.search(os.path.basename(path))
        sid = session_id_of(SOURCE, _str(meta.get("id")) or (m.group(1) if m else None), os.path.abspath(path))
        if meta_line is None:
            report.unmapped["session_meta (absent; id from the file name)"] += 1
        ts = iso_of(meta.get("timestamp")) or next((ln.ts for ln in lines if ln.ts), None) or EPOCH_ISO
        cwd = _str(meta.get("cwd"))
        if cwd is None:
            report.unmapped["cwd (session_meta names none; '/' used)"] += 1
        self.provider = _str(meta.get("model_provider")) or "openai"
        parent_thread, role = _parent_thread(meta)
        self.plan = SessionPlan(SOURCE, os.path.abspath(path), sid, cwd or os.sep, ts, role=role, report=report)
        if parent_thread is not None:
            pfile = _find_rollout(parent_thread, path)
            head = _header_of(pfile) if pfile else None
            self.plan.parent_source_id = parent_thread if head is None else head[0]
            if head is not None:
                self.plan.parent_session = target_path_or_none(SessionPlan(SOURCE, pfile or "", head[0], head[2], head[1]), to)
            else:
                report.unmapped["parentSession (parent thread's rollout not found)"] += 1
        self.meta_line = meta_line
        self.entries = self.plan.entries
        self.parent_of: dict[str, str | None] = {}
        self.turn: set[str] = set()
        self.model_at: dict[str, str | None] = {}
        self.level_at: dict[str, str | None] = {}
        self.leaf: str | None = None
        self.last_ts = ts
        # Lines before the first session_meta are a segment of their own: keyed like the
        # lines after it, their ids were those of the lines after it (a cycle of parents
        # that the rollback walk followed forever, and messages dropped as "conflicts").
        # A rollout without one keeps the thread id as its only segment.
        self.segment = _PRELUDE if meta_line is not None else sid
        self.seg_index = 0
        self.used: set[str] = set()
        self.line_n = 0
        self.cur_line_key: tuple[str, int] = (sid, 0)
        self.group: _Group | None = None
        self.pending_usage: _Group | None = None
        self.call_names: dict[str, str] = {}
        self.last_total: Any = None
        self.context_tokens = 0
        self.dupes: dict[str, Counter[str]] = {"user": Counter(), "assistant": Counter(), "reasoning": Counter()}

    # ----------------------------------------------------------------- helpers
    def new_id(self) -> str:
        """The id of the next entry of the current line: from its segment and place in
        it (module docstring), and never one this plan gave already (a segment's id met
        again, or ids crafted to meet: derived again from the id and a count)."""
        self.line_n += 1
        seg, k = self.cur_line_key
        eid = derive_id(SOURCE, seg, k) if self.line_n == 1 else derive_id(SOURCE, seg, k, self.line_n)
        again = 0
        while eid in self.used:
            again += 1
            eid = derive_id(SOURCE, "again", seg, k, self.line_n, again)
        self.used.add(eid)
        return eid

    def add(self, kind: str, fields: dict[str, Any], ln: _Line) -> PlannedEntry:
        eid = self.new_id()
        ts = ln.ts or self.last_ts
        e = PlannedEntry(kind, eid, self.leaf, ts, fields, ln.line)
        self.entries.append(e)
        self.parent_of[eid] = self.leaf
        model = self.model_at.get(self.leaf) if self.leaf is not None else None
        level = self.level_at.get(self.leaf) if self.leaf is not None else None
        if kind == "model_change":
            model = fields["modelId"]
        if kind == "thinking_level_change":
            level = fields["thinkingLevel"]
        self.model_at[eid] = model
        self.level_at[eid] = level
        self.leaf = eid
        return e

    def custom(self, name: str, data: Any, ln: _Line) -> PlannedEntry:
        return self.add("custom", {"customType": CUSTOM + name, "data": data}, ln)

    def close(self) -> None:
        if self.group is not None:
            self.group.open = False
            self.group = None

    def current_model(self) -> str | None:
        return self.model_at.get(self.leaf) if self.leaf is not None else None

    def group_for(self, ln: _Line) -> _Group:
        if self.group is not None and self.group.open:
            return self.group
        msg: dict[str, Any] = {"role": "assistant", "content": [], "api": "openai-responses",
                               "provider": self.provider, "model": self.current_model() or "unknown",
                               "usage": zero_usage(), "stopReason": "stop", "timestamp": ms_of(ln.ts or self.last_ts)}
        e = self.add("message", {"message": msg}, ln)
        g = _Group(e, len(self.entries) - 1, ln.line)
        self.group = g
        self.pending_usage = g
        return g

    def block(self, ln: _Line, block: dict[str, Any]) -> None:
        g = self.group_for(ln)
        g.message["content"].append(block)
        if block["type"] == "toolCall":
            g.message["stopReason"] = "toolUse"

    # ----------------------------------------------------------------- passes
    def prescan(self) -> None:
        for ln in self.lines:
            if ln.kind != "response_item" or not isinstance(ln.payload, dict):
                continue
            p = ln.payload
            t = p.get("type")
            if t == "message":
                role = p.get("role")
                if role == "user":
                    for s in _texts(p.get("content"), ("input_text",)):
                        self.dupes["user"][s.strip()] += 1
                    self.dupes["user"]["\n".join(_texts(p.get("content"), ("input_text",))).strip()] += 1
                elif role == "assistant":
                    text = "".join(_texts(p.get("content"), ("output_text",))).strip()
                    self.dupes["assistant"][text] += 1
            elif t == "reasoning":
                for s in _texts(p.get("summary"), ("summary_text",)) + _texts(p.get("content"), ("reasoning_text", "text")):
                    self.dupes["reasoning"][s.strip()] += 1

    def run(self) -> SessionPlan:
        self.prescan()
        rep = self.report
        for ln in self.lines:
            if ln.ts:
                self.last_ts = ln.ts
            if self.meta_line is not None and ln is self.meta_line:
                self.segment, self.seg_index = self.plan.session_id, 0
            else:
                if ln.kind == "session_meta" and isinstance(ln.payload, dict) and _str(ln.payload.get("id")) \
                        and ln.payload["id"] != self.segment:
                    self.segment, self.seg_index = ln.payload["id"], 0
                else:
                    self.seg_index += 1
            self.cur_line_key = (self.segment, self.seg_index)
            self.line_n = 0
            try:
                self.line(ln)
            except (KeyError, TypeError, ValueError, AttributeError) as e:  # malformed payload: never a crash
                rep.skip(f"{ln.kind} (malformed: {type(e).__name__})", ln.line)
        g = self.group
        if g is not None and g.open and not self.include_incomplete:
            held = [e for e in self.entries[g.index:]]
            del self.entries[g.index:]
            lines_held = sum(1 for ln in self.lines if ln.line >= g.first_line)
            rep.skipped["response still being written at the end of the file (held back)"] += lines_held
            rep.problem(f"the last model response (from line {g.first_line}) has no token_count yet: held back, "
                        "re-import once it is complete", g.first_line)
            for dropped in held:
                self.parent_of.pop(dropped.id, None)
        return self.plan

    def line(self, ln: _Line) -> None:
        rep = self.report
        k = ln.kind
        p = ln.payload
        if k == "session_meta":
            self.close()
            data = dict(p) if isinstance(p, dict) else {"payload": p}
            for big in ("base_instructions", "instructions", "dynamic_tools"):
                if big in data:
                    data.pop(big)
                    rep.unmapped[f"session_meta.{big} (not imported)"] += 1
            self.custom("session_meta", data, ln)
            rep.custom["session_meta"] += 1
            return
        if not isinstance(p, dict):
            rep.skip(f"{k} (payload is not an object)", ln.line)
            return
        if k == "turn_context":
            self.close()
            self.turn_context(p, ln)
            return
        if k == "compacted":
            self.close()
            message = p.get("message") if isinstance(p.get("message"), str) else ""
            rest = {kk: v for kk, v in p.items() if kk != "message"}
            summary = message
            if not summary and isinstance(p.get("replacement_history"), list):
                parts: list[str] = []
                for item in p["replacement_history"]:
                    if isinstance(item, dict) and item.get("type") == "message":
                        parts.extend(_texts(item.get("content"), ("input_text", "output_text")))
                summary = "\n\n".join(parts)
            boundary = self.custom("compacted", rest, ln)
            self.add("compaction", {"summary": summary, "firstKeptEntryId": boundary.id,
                                    "tokensBefore": self.context_tokens}, ln)
            rep.imported["compacted (-> compaction)"] += 1
            return
        if k == "response_item":
            self.response_item(p, ln)
            return
        if k == "event_msg":
            self.event(p, ln)
            return
        self.close()
        self.custom(k, p, ln)
        rep.custom[k] += 1
        rep.unmapped[f"record type {k} (kept as custom)"] += 1

    def turn_context(self, p: dict[str, Any], ln: _Line) -> None:
        rep = self.report
        changed = False
        model = _str(p.get("model"))
        if model is not None and model != self.current_model():
            self.add("model_change", {"provider": self.provider, "modelId": model}, ln)
            changed = True
        effort = p.get("effort")
        if effort is None and isinstance(p.get("collaboration_mode"), dict):
            settings = p["collaboration_mode"].get("settings")
            if isinstance(settings, dict):
                effort = settings.get("reasoning_effort")
        level = EFFORT_LEVELS.get(effort) if isinstance(effort, str) else None
        cur_level = self.level_at.get(self.leaf) if self.leaf is not None else None
        if level is not None and level != cur_level:
            self.add("thinking_level_change", {"thinkingLevel": level}, ln)
            changed = True
        elif isinstance(effort, str) and level is None:
            rep.unmapped[f"turn_context.effort {effort!r} (no Pi thinking level)"] += 1
        rep.imported["turn_context (-> model_change / thinking_level_change)" if changed else "turn_context (no change)"] += 1

    def response_item(self, p: dict[str, Any], ln: _Line) -> None:
        rep = self.report
        t = p.get("type")
        ts_ms = ms_of(ln.ts or self.last_ts)
        if t == "message":
            role = p.get("role")
            content = p.get("content")
            if role == "assistant":
                texts = _texts(content, ("output_text", "text", "refusal"))
                if not texts:
                    rep.unmapped["assistant message without text"] += 1
                for s in texts:
                    self.block(ln, {"type": "text", "text": s})
                rep.imported["response_item message (assistant)"] += 1
                return
            self.close()
            if role == "user" and not _is_context(content):
                blocks = self.user_blocks(content)
                e = self.add("message", {"message": {"role": "user", "content": blocks, "timestamp": ts_ms}}, ln)
                self.turn.add(e.id)
                self.pending_usage = None
                rep.imported["response_item message (user)"] += 1
                return
            name = "context" if role == "user" else str(role or "unknown-role")
            self.add("custom_message", {"customType": CUSTOM + name, "content": self.user_blocks(content),
                                        "display": False}, ln)
            rep.imported[f"response_item message ({role}) (-> custom_message)"] += 1
            return
        if t == "reasoning":
            summary = _texts(p.get("summary"), ("summary_text",))
            text = "\n\n".join(summary) or "\n\n".join(_texts(p.get("content"), ("reasoning_text", "text")))
            self.block(ln, {"type": "thinking", "thinking": text, "thinkingSignature": compact_json(p)})
            rep.imported["response_item reasoning (-> thinking)"] += 1
            return
        if t in CALL_TYPES:
            call_id = _str(p.get("call_id")) or _str(p.get("id")) or self.new_id()
            name = _str(p.get("name")) or {"local_shell_call": "local_shell", "tool_search_call": "tool_search"}.get(str(t), str(t))
            if t == "function_call":
                raw = p.get("arguments")
                try:
                    args = decode_line(raw) if isinstance(raw, str) else raw
                except ValueError:
                    args = {"input": raw}
                    rep.unmapped["function_call arguments (not JSON; kept as input)"] += 1
            elif t == "custom_tool_call":
                args = {"input": p.get("input")}
            elif t == "local_shell_call":
                args = p.get("action")
            else:
                args = p.get("arguments")
            if not isinstance(args, dict):
                args = {"input": args}
            self.call_names[call_id] = name
            self.block(ln, {"type": "toolCall", "id": call_id, "name": name, "arguments": args})
            rep.imported[f"response_item {t} (-> toolCall)"] += 1
            return
        if t in OUTPUT_TYPES:
            self.close()
            call_id = _str(p.get("call_id")) or ""
            tool_name = self.call_names.get(call_id)
            if tool_name is None:
                rep.unmapped[f"{t} without its call (toolName empty)"] += 1
            content, is_error = self.output(p.get("output") if t != "tool_search_output" else p.get("tools"))
            if p.get("status") in ("failed", "error"):
                is_error = True
            msg = {"role": "toolResult", "toolCallId": call_id, "toolName": tool_name or "", "content": content,
                   "isError": is_error, "timestamp": ts_ms}
            self.add("message", {"message": msg}, ln)
            rep.imported[f"response_item {t} (-> toolResult)"] += 1
            return
        if t == "ghost_snapshot":
            rep.skip("response_item ghost_snapshot (legacy)", None, problem=False)
            return
        name = f"response_item.{t}" if isinstance(t, str) else "response_item"
        self.custom(name, p, ln)  # inline: a response's later items still join its message
        rep.custom[name] += 1
        rep.unmapped[f"{name} (kept as custom)"] += 1

    def user_blocks(self, content: Any) -> list[dict[str, Any]]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        out: list[dict[str, Any]] = []
        if not isinstance(content, list):
            return out
        for b in content:
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt in ("input_text", "output_text", "text") and isinstance(b.get("text"), str):
                out.append({"type": "text", "text": b["text"]})
            elif bt == "input_image":
                out.append(self.image(b.get("image_url")))
            else:
                self.report.unmapped[f"message content {bt} (kept as JSON text)"] += 1
                out.append({"type": "text", "text": compact_json(b)})
        return out

    def image(self, url: Any) -> dict[str, Any]:
        """An image by its URL: a ``data:`` URL's bytes; another URL as a text naming it;
        none (``null``, not a string) as ``[image]``."""
        img = _data_url(url)
        if img is not None:
            return img
        if not isinstance(url, str) or not url:
            self.report.unmapped["image without a URL (kept as [image])"] += 1
            return {"type": "text", "text": "[image]"}
        self.report.unmapped["input_image by URL (kept as text)"] += 1
        return {"type": "text", "text": f"[image: {url}]"}

    def output(self, out: Any) -> tuple[list[dict[str, Any]], bool]:
        is_error = False
        if isinstance(out, str) and out.startswith("{"):
            # Codex's shell tools return their result as JSON text: {"output": "...",
            # "metadata": {"exit_code": N, "duration_seconds": ...}}. The output is the
            # result; a non-zero exit code makes it an error, as Pi marks its own tool
            # failures (isError).
            try:
                parsed = decode_line(out)
            except ValueError:
                parsed = None
            meta = parsed.get("metadata") if isinstance(parsed, dict) else None
            if isinstance(parsed, dict) and isinstance(parsed.get("output"), str) and isinstance(meta, dict):
                code = meta.get("exit_code")
                is_error = isinstance(code, int) and not isinstance(code, bool) and code != 0
                return [{"type": "text", "text": parsed["output"]}], is_error
        if isinstance(out, dict):
            if out.get("success") is False:
                is_error = True
            body = out.get("content", out.get("content_items"))
            if body is None:
                body = compact_json(out)
            out = body
        if isinstance(out, str):
            return [{"type": "text", "text": out}], is_error
        if isinstance(out, list):
            return self.user_blocks(out), is_error
        if out is None:
            return [], is_error
        return [{"type": "text", "text": compact_json(out)}], is_error

    def event(self, p: dict[str, Any], ln: _Line) -> None:
        rep = self.report
        t = p.get("type")
        name = str(t) if isinstance(t, str) else "(no type)"
        if t == "token_count":
            self.token_count(p, ln)
            return
        if t in TEXT_EVENTS:
            text = p.get(TEXT_EVENTS[str(t)])
            if not isinstance(text, str):
                rep.skip(f"event_msg {t} (no text)", ln.line)
                return
            pool = {"user_message": "user", "agent_message": "assistant"}.get(str(t), "reasoning")
            key = text.strip()
            if self.dupes[pool][key] > 0:
                self.dupes[pool][key] -= 1
                rep.skip(f"event_msg {t} (repeats a response_item)", None, problem=False)
                return
            if t == "user_message":
                self.close()
                blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
                for url in p.get("images") or []:
                    blocks.append(self.image(url))
                e = self.add("message", {"message": {"role": "user", "content": blocks,
                                                     "timestamp": ms_of(ln.ts or self.last_ts)}}, ln)
                self.turn.add(e.id)
                self.pending_usage = None
            elif t == "agent_message":
                self.block(ln, {"type": "text", "text": text})
            else:
                self.block(ln, {"type": "thinking", "thinking": text})
            rep.imported[f"event_msg {t} (no matching response_item)"] += 1
            return
        if t == "thread_rolled_back":
            self.close()
            self.rollback(as_int(p.get("num_turns")), ln)
            return
        if t == "thread_name_updated":
            title = p.get("thread_name")
            if isinstance(title, str) and title.strip():
                self.close()
                self.add("session_info", {"name": title}, ln)
                rep.imported["event_msg thread_name_updated (-> session_info)"] += 1
            else:
                rep.skip("event_msg thread_name_updated (no name)", ln.line)
            return
        if t in LIFECYCLE_EVENTS:
            if t in ("task_complete", "turn_complete"):
                self.close()
            rep.skip(f"event_msg {t} (turn lifecycle)", None, problem=False)
            return
        if t in DUPLICATE_EVENTS:
            rep.skip(f"event_msg {t} (repeats a response_item)", None, problem=False)
            return
        self.close()
        self.custom(f"event_msg.{name}", p, ln)
        rep.custom[f"event_msg {name}"] += 1
        if t not in ("turn_aborted", "error", "item_completed", "entered_review_mode", "exited_review_mode"):
            rep.unmapped[f"event_msg {name} (kept as custom)"] += 1

    def token_count(self, p: dict[str, Any], ln: _Line) -> None:
        rep = self.report
        info = p.get("info")
        if not isinstance(info, dict):
            rep.skip("event_msg token_count (no usage info)", None, problem=False)
            return
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        if isinstance(total, dict) and total == self.last_total:
            rep.skip("event_msg token_count (re-emitted: total unchanged)", None, problem=False)
            return
        src: Any = last if isinstance(last, dict) else None
        if src is None and isinstance(total, dict):
            prev = self.last_total if isinstance(self.last_total, dict) else {}
            src = {k: as_int(total.get(k)) - as_int(prev.get(k)) for k in
                   ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")}
        if isinstance(total, dict):
            self.last_total = total
        if not isinstance(src, dict):
            rep.skip("event_msg token_count (no usage)", ln.line)
            return
        inp = as_int(src.get("input_tokens"))
        cached = min(as_int(src.get("cached_input_tokens")), inp)
        out = as_int(src.get("output_tokens"))
        usage = make_usage(inp - cached, out, cached, 0)
        self.context_tokens = as_int(src.get("total_tokens")) or inp + out
        g = self.pending_usage
        if g is not None and not g.has_usage:
            g.message["usage"] = usage
            g.has_usage = True
            g.open = False
            if self.group is g:
                self.group = None
            self.pending_usage = None
            rep.imported["event_msg token_count (-> assistant usage)"] += 1
            return
        self.close()
        self.custom("event_msg.token_count", info, ln)
        rep.custom["event_msg token_count (no response to attach to)"] += 1
        rep.unmapped["token_count with no model response before it (kept as custom)"] += 1

    def rollback(self, n: int, ln: _Line) -> None:
        rep = self.report
        path: list[str] = []
        cur = self.leaf
        seen: set[str] = set()
        while cur is not None and cur not in seen:  # parents come first: a cycle would be a bug, never a hang
            seen.add(cur)
            path.append(cur)
            cur = self.parent_of.get(cur)
        turns = [e for e in reversed(path) if e in self.turn]
        if n <= 0 or not turns:
            rep.skip("event_msg thread_rolled_back (nothing to roll back)", ln.line)
            return
        cut = turns[0] if n >= len(turns) else turns[-n]
        self.leaf = self.parent_of.get(cut)
        self.pending_usage = None
        rep.imported["event_msg thread_rolled_back (-> branch)"] += 1


def _data_url(url: Any) -> dict[str, Any] | None:
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return {"type": "image", "data": data, "mimeType": head or "image/png"}
    return None
