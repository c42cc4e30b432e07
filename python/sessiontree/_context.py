"""The LLM context of a session: Pi 0.99's ``buildSessionProjection`` and ``convertToLlm``.

Two halves so both backends share the rules (ARCHITECTURE.md):

* :func:`plan_context` — over the root→leaf path, decide which entries are context
  entries, which of them may contribute messages and which ``context_edit`` applies to
  each (a :class:`~sessiontree._backend.ContextPlan` of ids). The native backend
  computes the same plan in Rust over integer arrays, without decoding a line.
* :func:`assemble_context` / :func:`assemble_projection` — fetch the planned entries and
  build the messages (edits applied), the thinking level and the model exactly as Pi
  serialises them.

The rules (Pi 0.99 session-manager.ts ``buildContextEntries``,
``sessionEntryToContextMessages``, ``projectContextEntry``, ``buildSessionProjection``;
``docs/CONTRACT.md`` states them for this project):

* Context entries: the path; or, with a compaction on it, the latest one, then the path
  entries from its ``firstKeptEntryId`` up to it **except messages whose role is
  ``system``**, then every entry after it.
* Each contributes messages: a ``message`` as it is (null or absent content becomes
  ``""`` for ``system``, ``[]`` for user/assistant/toolResult); a ``custom_message`` a
  ``custom`` message (content ``[]`` if null or absent); a ``branch_summary`` with a
  truthy summary a ``branchSummary``; the leading compaction ``[systemMessage,
  compactionSummary]`` (``systemMessage`` only when it is an object); a compaction inside
  the kept range and every other type nothing.
* ``context_edit`` entries among the context entries apply to their target, the later
  one winning: ``replacement: null`` removes the target's messages; ``{"content": c}``
  gives the target's user/assistant/toolResult/custom messages the content ``c`` (a
  string becomes one text block for assistant and toolResult); other roles stay. An
  edit of an entry that is not a context entry does nothing. An edit whose replacement
  is neither ``null`` nor an object with string or list ``content`` (Pi's writer never
  writes one; Pi's reader would throw) leaves its target as it is.
* Thinking level and model come from the whole path; so do the active tool names
  (agent-core's harness ``buildSessionContext``: the last ``active_tools_change``'s
  ``activeToolNames``, ``None`` without one).

JavaScript semantics that matter here (checked against the corpus,
``edge-unknown-types-roles``): a property whose JS value would be ``undefined`` is left
out of the dict (never ``None``), ``null`` stays ``None``; truthiness is JavaScript's; text
built from non-string values uses JavaScript's ``String()`` (``undefined``, ``null``,
``NaN``...); dates that JavaScript cannot parse (NaN, printed ``null``) are ``None``.

Nothing here recurses: paths of millions of entries are fine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._backend import ContextPlan
from ._js import UNDEFINED, string, truthy
from ._time import MAX_EPOCH_MS, parse_iso_ms

__all__ = [
    "SessionContext",
    "ProjectedEntry",
    "SessionProjection",
    "build_session_context",
    "build_session_projection",
    "assemble_projection",
    "current_system_message",
    "convert_to_llm",
    "plan_context",
    "assemble_context",
    "walk_path",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
]

# messages.ts
COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"





@dataclass(frozen=True)
class SessionContext:
    """What is sent to the LLM at a leaf (Pi's ``SessionContext``).

    Attributes:
        messages: agent messages in order: message entries' ``message`` dicts as stored
            (the same objects the backend handed out), plus synthesised
            ``compactionSummary`` / ``branchSummary`` / ``custom`` messages.
        thinking_level: the last ``thinking_level_change``'s ``thinkingLevel`` on the
            path, ``"off"`` if none. ``None`` when that entry has no ``thinkingLevel``
            (Pi's ``undefined``, omitted from its JSON) or ``null``.
        model: ``{"provider", "modelId"}`` from the last ``model_change`` (its
            ``provider``/``modelId``) or assistant message (its ``provider``/``model``)
            on the path; a key is absent where the source has none (Pi's
            ``undefined``); ``None`` if neither kind is on the path.
        active_tool_names: a copy of the last ``active_tools_change``'s
            ``activeToolNames`` on the path (agent-core's ``SessionContext``); ``None``
            without one, or when that value is not a list.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: str | None = "off"
    model: dict[str, Any] | None = None
    active_tool_names: list[Any] | None = None


@dataclass(frozen=True)
class ProjectedEntry:
    """One context entry and what it contributes (Pi's ``ProjectedSessionEntry``).

    Attributes:
        source: the entry dict (Pi's ``sourceEntry``).
        messages: the messages it contributes after edits (often none: a model change,
            a label, a compaction inside the kept range, an entry an edit removed).
    """

    source: dict[str, Any]
    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class SessionProjection:
    """The context at a leaf entry by entry (Pi's ``SessionProjection``).

    Attributes:
        entries: the context entries in order, each with its messages.
        messages: every entry's messages, flattened: what :class:`SessionContext` holds.
        thinking_level: as :attr:`SessionContext.thinking_level`.
        model: as :attr:`SessionContext.model`.
        active_tool_names: as :attr:`SessionContext.active_tool_names`.
    """

    entries: list[ProjectedEntry] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: str | None = "off"
    model: dict[str, Any] | None = None
    active_tool_names: list[Any] | None = None

    def context(self) -> SessionContext:
        """The flattened :class:`SessionContext` (Pi's ``buildSessionContext``)."""
        return SessionContext(messages=self.messages, thinking_level=self.thinking_level, model=self.model,
                              active_tool_names=self.active_tool_names)


# ------------------------------------------------------------------- helpers


def _date_ms(v: Any) -> int | None:
    """``new Date(v).getTime()`` for a JSON value; ``None`` where JavaScript gets NaN."""
    if isinstance(v, str):
        return parse_iso_ms(v)
    if v is None:
        return 0  # new Date(null) is the epoch
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        if v != v or abs(v) > MAX_EPOCH_MS:
            return None
        return int(v)  # TimeClip truncates toward zero
    return None  # undefined, objects, arrays: NaN


def _put(dst: dict[str, Any], key: str, src: Mapping[str, Any], src_key: str) -> None:
    # JS object literals keep `key: undefined`, JSON.stringify then drops it.
    v = src.get(src_key, UNDEFINED)
    if v is not UNDEFINED:
        dst[key] = v


# ---------------------------------------------------------------- synthesised


def _compaction_message(e: Mapping[str, Any]) -> dict[str, Any]:
    # messages.ts createCompactionSummaryMessage
    m: dict[str, Any] = {"role": "compactionSummary"}
    _put(m, "summary", e, "summary")
    _put(m, "tokensBefore", e, "tokensBefore")
    m["timestamp"] = _date_ms(e.get("timestamp", UNDEFINED))
    return m


def _branch_summary_message(e: Mapping[str, Any]) -> dict[str, Any]:
    # messages.ts createBranchSummaryMessage
    m: dict[str, Any] = {"role": "branchSummary"}
    _put(m, "summary", e, "summary")
    _put(m, "fromId", e, "fromId")
    m["timestamp"] = _date_ms(e.get("timestamp", UNDEFINED))
    return m


def _custom_message(e: Mapping[str, Any]) -> dict[str, Any]:
    # messages.ts createCustomMessage(customType, content ?? [], display, details, timestamp)
    m: dict[str, Any] = {"role": "custom"}
    _put(m, "customType", e, "customType")
    content = e.get("content")
    m["content"] = [] if content is None else content
    _put(m, "display", e, "display")
    _put(m, "details", e, "details")
    m["timestamp"] = _date_ms(e.get("timestamp", UNDEFINED))
    return m


# ------------------------------------------------------------------------ plan


def walk_path(
    leaf: Mapping[str, Any] | None, by_id: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The entries from the root down to ``leaf`` (Pi's ``getBranch`` walk).

    A ``parentId`` that is not a non-empty string, or names no entry, ends the walk (the
    entry is a root). Unlike Pi, a parent cycle cannot hang: the walk stops before an
    entry it has already visited.

    Args:
        leaf: the last entry of the path, or ``None`` (empty path).
        by_id: id -> entry.

    Returns:
        The path, root first.
    """
    path: list[Any] = []
    seen: set[int] = set()
    cur = leaf
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        path.append(cur)
        pid = cur.get("parentId")
        cur = by_id.get(pid) if isinstance(pid, str) and pid else None
    path.reverse()
    return path


_CONTRIBUTING = frozenset({"message", "custom_message", "branch_summary"})
_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
_NULL_CONTENT = {"system": "", "user": [], "assistant": [], "toolResult": []}


def _is_system_message(e: Mapping[str, Any]) -> bool:
    msg = e.get("message")
    return e.get("type") == "message" and isinstance(msg, dict) and msg.get("role") == "system"


def plan_context(path: Sequence[Mapping[str, Any]]) -> ContextPlan:
    """Decide which entries of a root→leaf path form the context (Pi 0.99's rules).

    Args:
        path: entries from the root to the leaf (dicts; ids unique on a path).

    Returns:
        The :class:`ContextPlan`: every context entry in order (``entry_ids``), those of
        them that may contribute messages after the leading compaction
        (``message_ids``: types message / custom_message / branch_summary; branch
        summaries with a falsy summary included, :func:`assemble_context` drops them),
        the leading compaction, the edit that applies to each edited context entry, and
        the ids of the thinking-level, model and active-tools entries (or ``None``).
    """
    thinking_id = model_id = tools_id = None
    comp_idx = -1
    for i, e in enumerate(path):
        t = e.get("type")
        if t == "thinking_level_change":
            thinking_id = e.get("id")
        elif t == "active_tools_change":
            tools_id = e.get("id")
        elif t == "model_change":
            model_id = e.get("id")
        elif t == "message":
            msg = e.get("message")
            # Pi reads entry.message.role; a null message would throw there, we skip it.
            if isinstance(msg, dict) and msg.get("role") == "assistant":
                model_id = e.get("id")
        elif t == "compaction":
            comp_idx = i
    if comp_idx < 0:
        context: list[Mapping[str, Any]] = list(path)
        compaction_id = None
    else:
        compaction = path[comp_idx]
        compaction_id = compaction["id"]
        first_kept = compaction.get("firstKeptEntryId", UNDEFINED)
        context = [compaction]
        found = False
        for e in path[:comp_idx]:
            if not found and isinstance(first_kept, str) and e.get("id") == first_kept:
                found = True
            if found and not _is_system_message(e):
                context.append(e)
        context.extend(path[comp_idx + 1 :])
    edits: dict[str, str] = {}
    members = {e["id"] for e in context}
    for e in context:
        if e.get("type") == "context_edit":
            target = e.get("targetId")
            # A Map keyed by targetId, read for context entries only.
            if isinstance(target, str) and target in members:
                edits[target] = e["id"]
    start = 0 if compaction_id is None else 1
    return ContextPlan(
        message_ids=[e["id"] for e in context[start:] if e.get("type") in _CONTRIBUTING],
        compaction_id=compaction_id,
        thinking_id=thinking_id,
        model_id=model_id,
        entry_ids=[e["id"] for e in context],
        edits=edits,
        active_tools_id=tools_id,
    )


def _entry_messages(e: Mapping[str, Any], leading: bool) -> list[dict[str, Any]]:
    """What one context entry contributes before edits (``sessionEntryToContextMessages``)."""
    t = e.get("type")
    if t == "message":
        msg = e.get("message", UNDEFINED)
        # Pi pushes whatever is there; undefined / null would crash its later steps, so
        # only objects enter the context here.
        if not isinstance(msg, dict):
            return []
        role = msg.get("role")
        fallback = _NULL_CONTENT.get(role, UNDEFINED) if isinstance(role, str) else UNDEFINED
        if fallback is not UNDEFINED and msg.get("content") is None:
            fixed = dict(msg)  # {...message, content}: a null key keeps its place, an absent one goes last
            fixed["content"] = "" if fallback == "" else []
            return [fixed]
        return [msg]
    if t == "custom_message":
        return [_custom_message(e)]
    if t == "branch_summary":
        return [_branch_summary_message(e)] if truthy(e.get("summary", UNDEFINED)) else []
    if t == "compaction" and leading:
        system = e.get("systemMessage")
        summary = _compaction_message(e)
        return [system, summary] if isinstance(system, dict) else [summary]
    return []


def _apply_edit(messages: list[dict[str, Any]], edit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``projectContextEntry``: the target's messages after its edit."""
    replacement = edit.get("replacement", UNDEFINED)
    if replacement is None:
        return []
    content = replacement.get("content", UNDEFINED) if isinstance(replacement, dict) else UNDEFINED
    if not isinstance(content, (str, list)):
        return messages  # not an edit Pi could have written: the target stays as it is
    out = []
    for m in messages:
        role = m.get("role")
        if role not in _EDITABLE_ROLES:
            out.append(m)
            continue
        new = dict(m)
        new["content"] = (
            [{"type": "text", "text": content}] if isinstance(content, str) and role in ("assistant", "toolResult") else content
        )
        out.append(new)
    return out


def _contribution(
    e: Mapping[str, Any], leading: bool, plan: ContextPlan, get: Callable[[str], Mapping[str, Any] | None]
) -> list[dict[str, Any]]:
    messages = _entry_messages(e, leading)
    edit_id = plan.edits.get(e["id"])
    if edit_id is not None and messages:
        edit = get(edit_id)
        if edit is not None:
            return _apply_edit(messages, edit)
    return messages


def _settings(
    plan: ContextPlan, get: Callable[[str], Mapping[str, Any] | None]
) -> tuple[Any, dict[str, Any] | None, list[Any] | None]:
    thinking: Any = "off"
    if plan.thinking_id is not None:
        te = get(plan.thinking_id)
        if te is not None:
            thinking = te.get("thinkingLevel")
    model: dict[str, Any] | None = None
    if plan.model_id is not None:
        me = get(plan.model_id)
        if me is not None:
            model = {}
            if me.get("type") == "model_change":
                _put(model, "provider", me, "provider")
                _put(model, "modelId", me, "modelId")
            else:
                msg = me.get("message")
                if isinstance(msg, dict):
                    _put(model, "provider", msg, "provider")
                    _put(model, "modelId", msg, "model")
    tools: list[Any] | None = None
    if plan.active_tools_id is not None:
        ae = get(plan.active_tools_id)
        names = ae.get("activeToolNames") if ae is not None else None
        # agent-core copies it (`[...entry.activeToolNames]`); a value that is not a
        # list (no writer produces one) would throw there: no tool names here.
        tools = list(names) if isinstance(names, list) else None
    return thinking, model, tools


def assemble_context(plan: ContextPlan, get: Callable[[str], Mapping[str, Any] | None]) -> SessionContext:
    """Build the :class:`SessionContext` a plan describes (Pi's ``buildSessionContext``).

    Only the entries that may contribute are fetched (the leading compaction,
    ``message_ids``, and the edits that apply to them).

    Args:
        plan: from :func:`plan_context` (or the native backend).
        get: id -> entry dict (``None`` for an unknown id, which is skipped).

    Returns:
        The context.
    """
    messages: list[dict[str, Any]] = []
    if plan.compaction_id is not None:
        c = get(plan.compaction_id)
        if c is not None:
            messages.extend(_contribution(c, True, plan, get))
    for mid in plan.message_ids:
        e = get(mid)
        if e is not None:
            messages.extend(_contribution(e, False, plan, get))
    thinking, model, tools = _settings(plan, get)
    return SessionContext(messages=messages, thinking_level=thinking, model=model, active_tool_names=tools)


def assemble_projection(plan: ContextPlan, get: Callable[[str], Mapping[str, Any] | None]) -> SessionProjection:
    """Build the :class:`SessionProjection` a plan describes (Pi's ``buildSessionProjection``).

    Every context entry is fetched (each is part of the result).

    Args:
        plan: from :func:`plan_context` (or the native backend).
        get: id -> entry dict (``None`` for an unknown id, which is skipped).
    """
    entries: list[ProjectedEntry] = []
    messages: list[dict[str, Any]] = []
    for i, eid in enumerate(plan.entry_ids):
        e = get(eid)
        if e is None:
            continue
        contributed = _contribution(e, i == 0 and eid == plan.compaction_id, plan, get)
        entries.append(ProjectedEntry(source=e, messages=contributed))  # type: ignore[arg-type]
        messages.extend(contributed)
    thinking, model, tools = _settings(plan, get)
    return SessionProjection(entries=entries, messages=messages, thinking_level=thinking, model=model,
                             active_tool_names=tools)


def _path_of(
    entries: Sequence[Mapping[str, Any]], leaf_id: Any, by_id: Mapping[str, Mapping[str, Any]] | None
) -> list[dict[str, Any]] | None:
    """Pi's ``buildSessionPath``; ``None`` for an empty context.

    Raises:
        TypeError: ``entries`` is not a sequence of mappings, or ``by_id`` not a mapping.
    """
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise TypeError(f"entries must be a sequence of entry dicts, not {type(entries).__name__}")
    bad = next((e for e in entries if not isinstance(e, Mapping)), None)
    if bad is not None:
        raise TypeError(f"entries must hold entry dicts, not {type(bad).__name__}")
    if by_id is not None and not isinstance(by_id, Mapping):
        raise TypeError(f"by_id must be a mapping of id to entry, not {type(by_id).__name__}")
    if leaf_id is None:
        return None
    if by_id is None:
        built: dict[str, Mapping[str, Any]] = {}
        for e in entries:
            eid = e.get("id")
            if isinstance(eid, str) and eid not in built:
                built[eid] = e
        by_id = built
    leaf = by_id.get(leaf_id) if isinstance(leaf_id, str) and leaf_id else None
    if leaf is None:
        if not entries:
            return None
        leaf = entries[-1]
    return walk_path(leaf, by_id)


def build_session_projection(
    entries: Sequence[Mapping[str, Any]],
    leaf_id: Any = UNDEFINED,
    by_id: Mapping[str, Mapping[str, Any]] | None = None,
) -> SessionProjection:
    """Pi 0.99's ``buildSessionProjection(entries, leafId, byId)`` over entry dicts.

    Args:
        entries: entries in file order (no header).
        leaf_id: the leaf. Omitted, ``""`` or an id not in ``by_id``: the last entry of
            ``entries``. ``None``: "before the first entry", an empty projection.
        by_id: id -> entry; built from ``entries`` if omitted, keeping the *first*
            definition of a duplicated id (sessiontree's rule; Pi keeps the last).

    Returns:
        The projection at the leaf.
    """
    path = _path_of(entries, leaf_id, by_id)
    if path is None:
        return SessionProjection()
    on_path = {e.get("id"): e for e in path}
    return assemble_projection(plan_context(path), on_path.get)


def build_session_context(
    entries: Sequence[Mapping[str, Any]],
    leaf_id: Any = UNDEFINED,
    by_id: Mapping[str, Mapping[str, Any]] | None = None,
) -> SessionContext:
    """Pi's ``buildSessionContext(entries, leafId, byId)`` over entry dicts: the
    flattening of :func:`build_session_projection`.

    Args:
        entries: entries in file order (no header).
        leaf_id: the leaf. Omitted, ``""`` or an id not in ``by_id``: the last entry of
            ``entries``. ``None``: "before the first entry", an empty context.
        by_id: id -> entry; built from ``entries`` if omitted, keeping the *first*
            definition of a duplicated id (sessiontree's rule; Pi keeps the last).

    Returns:
        ``assemble_context(plan_context(path), ...)`` for the root→leaf path.
    """
    path = _path_of(entries, leaf_id, by_id)
    if path is None:
        return SessionContext()
    on_path = {e.get("id"): e for e in path}
    return assemble_context(plan_context(path), on_path.get)


# ---------------------------------------------------------------- convertToLlm


def _bash_text(m: Mapping[str, Any]) -> str:
    # messages.ts bashExecutionToText, with JavaScript's String() and truthiness.
    text = "Ran `" + string(m.get("command", UNDEFINED)) + "`\n"
    output = m.get("output", UNDEFINED)
    if truthy(output):
        text += "```\n" + string(output) + "\n```"
    else:
        text += "(no output)"
    exit_code = m.get("exitCode", UNDEFINED)
    if truthy(m.get("cancelled", UNDEFINED)):
        text += "\n\n(command cancelled)"
    elif (
        exit_code is not UNDEFINED
        and exit_code is not None
        and not (isinstance(exit_code, (int, float)) and not isinstance(exit_code, bool) and exit_code == 0)
    ):
        text += "\n\nCommand exited with code " + string(exit_code)
    if truthy(m.get("truncated", UNDEFINED)) and truthy(m.get("fullOutputPath", UNDEFINED)):
        text += "\n\n[Output truncated. Full output: " + string(m.get("fullOutputPath")) + "]"
    return text


def _user(content: Any, src: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "user"}
    if content is not UNDEFINED:
        out["content"] = content
    _put(out, "timestamp", src, "timestamp")
    return out


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _convert_one(m: Any) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        return None  # Pi would throw on null; other non-objects have no role
    role = m.get("role")
    if role in ("user", "assistant", "toolResult", "system"):
        return m
    if role == "bashExecution":
        if truthy(m.get("excludeFromContext", UNDEFINED)):
            return None
        return _user([_text_block(_bash_text(m))], m)
    if role == "custom":
        content = m.get("content", UNDEFINED)
        return _user([_text_block(content)] if isinstance(content, str) else content, m)
    if role == "branchSummary":
        text = BRANCH_SUMMARY_PREFIX + string(m.get("summary", UNDEFINED)) + BRANCH_SUMMARY_SUFFIX
        return _user([_text_block(text)], m)
    if role == "compactionSummary":
        text = COMPACTION_SUMMARY_PREFIX + string(m.get("summary", UNDEFINED)) + COMPACTION_SUMMARY_SUFFIX
        return _user([_text_block(text)], m)
    return None  # unknown roles (e.g. v2 "hookMessage" in a v3 file)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [_text_block(content)]
    if isinstance(content, list):
        return list(content)
    return []


def convert_to_llm(messages: Iterable[Any], *, merge_consecutive_user: bool = True) -> list[dict[str, Any]]:
    """Pi's ``convertToLlm``: agent messages -> LLM messages (user / assistant / toolResult).

    * ``user``, ``assistant``, ``toolResult`` and (Pi 0.87+) ``system``: passed through
      (the same dicts).
    * ``bashExecution``: dropped if ``excludeFromContext`` is truthy (JavaScript
      truthiness: ``"yes"`` drops, ``0``/``""`` keep), else
      ``{"role":"user","content":[{"type":"text","text": bashExecutionToText}],"timestamp"}``.
    * ``custom``: ``{"role":"user","content","timestamp"}``; string content becomes one
      text block.
    * ``branchSummary`` / ``compactionSummary``: one text block with the summary wrapped
      in Pi's prefix/suffix (``<summary>`` ...).
    * anything else (unknown roles, non-objects): dropped.
      ``timestamp``/``content`` keys are omitted where the source has none.

    With ``merge_consecutive_user`` (sessiontree's addition, CONTRACT §5 point 5),
    each run of two or more adjacent user messages (after the conversion) becomes one new
    dict: the first message's keys in its order (``role``, ``timestamp`` and any extra
    fields of the first message), with ``content`` = the concatenation of every
    message's content blocks (a string content is one text block; absent or non-list
    content contributes nothing). Fields of the later messages other than content are
    dropped. Single user messages stay the same objects.

    Args:
        messages: agent messages (e.g. ``SessionContext.messages``).
        merge_consecutive_user: merge adjacent user messages (default ``True``);
            ``False`` gives exactly Pi's output.

    Returns:
        The LLM messages.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        c = _convert_one(m)
        if c is not None:
            out.append(c)
    if not merge_consecutive_user:
        return out
    merged: list[dict[str, Any]] = []
    i, n = 0, len(out)
    while i < n:
        m = out[i]
        j = i + 1
        if m.get("role") == "user":
            while j < n and out[j].get("role") == "user":
                j += 1
        if j - i == 1:
            merged.append(m)
        else:
            content: list[Any] = []
            for k in range(i, j):
                content.extend(_blocks(out[k].get("content")))
            new = dict(m)
            new["content"] = content
            merged.append(new)
        i = j
    return merged


# ------------------------------------------------------------ system messages


def _content_text(content: Any) -> str:
    # pi-ai contentText: a string as is; the text blocks' text joined by "\n".
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        "" if b.get("text") is None else string(b.get("text", UNDEFINED))
        for b in content
        if isinstance(b, dict) and b.get("type") == "text"
    )


def _tool_key(tool: dict[str, Any]) -> Any:
    # A Map keyed by tool.name (SameValueZero): scalars by value, anything else by identity.
    name = tool.get("name", UNDEFINED)
    return (type(name).__name__, name) if isinstance(name, (str, int, float, bool)) or name is None else id(name)


def current_system_message(messages: Iterable[Any]) -> dict[str, Any] | None:
    """The system state after replaying every ``system`` message (pi-ai's
    ``getCurrentSystemMessage``, which Pi 0.99's ``appendCompaction`` records).

    Replays, in order: ``content`` text (a string, or the text blocks joined by a line
    break) appended when not empty; ``sections`` patched by name (``null`` deletes);
    tools removed (``toolsRemoved``, by name) then added (``toolsAdded``); the timestamp
    of the first system message that has one.

    Args:
        messages: agent messages (e.g. a context's messages); others are ignored.

    Returns:
        ``{"role": "system", "content", "sections"?, "toolsAdded"?, "timestamp"}``
        (parts joined by a blank line; ``sections`` / ``toolsAdded`` only when
        non-empty; ``timestamp`` 0 when none was given), or ``None`` when there was no
        timestamp and no tool remains.
    """
    parts: list[str] = []
    sections: dict[str, Any] = {}
    tools: dict[Any, dict[str, Any]] = {}
    timestamp: Any = UNDEFINED
    for m in messages:
        if not (isinstance(m, dict) and m.get("role") == "system"):
            continue
        if timestamp is UNDEFINED or timestamp is None:
            timestamp = m.get("timestamp", UNDEFINED)
        text = _content_text(m.get("content"))
        if text:
            parts.append(text)
        patch = m.get("sections")
        if isinstance(patch, dict):
            for name, value in patch.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
        for key, change in (("toolsRemoved", False), ("toolsAdded", True)):
            listed = m.get(key)
            for tool in listed if isinstance(listed, list) else ():
                if not isinstance(tool, dict):
                    continue
                if change:
                    tools[_tool_key(tool)] = tool
                else:
                    tools.pop(_tool_key(tool), None)
    if timestamp is UNDEFINED and not tools:
        return None
    out: dict[str, Any] = {"role": "system", "content": "\n\n".join(parts)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = list(tools.values())
    out["timestamp"] = 0 if timestamp is UNDEFINED or timestamp is None else timestamp
    return out
