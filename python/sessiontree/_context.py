"""The LLM context of a session: Pi's ``buildSessionContext`` and ``convertToLlm``.

Two halves so both backends share the rules (ARCHITECTURE.md):

* :func:`plan_context` — over the root→leaf path, decide which entries make the context
  (a :class:`~sessiontree._backend.ContextPlan` of ids). The native backend computes the
  same plan in Rust over integer arrays.
* :func:`assemble_context` — fetch the planned entries and build the messages, the
  thinking level and the model exactly as Pi serialises them.

:func:`build_session_context` is ``assemble_context(plan_context(path), get)``.

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
    "build_session_context",
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
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: str | None = "off"
    model: dict[str, Any] | None = None


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
    # messages.ts createCustomMessage
    m: dict[str, Any] = {"role": "custom"}
    _put(m, "customType", e, "customType")
    _put(m, "content", e, "content")
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


def plan_context(path: Sequence[Mapping[str, Any]]) -> ContextPlan:
    """Decide which entries of a root→leaf path form the context (Pi's rules).

    Pi's ``buildSessionContext``: state comes from the whole path (last
    ``thinking_level_change``; last ``model_change`` or assistant message; latest
    ``compaction``). With a compaction, the output is its summary, then the path entries
    from the first one whose id equals ``firstKeptEntryId`` up to (excluding) the
    compaction — nothing if that id is not before it on the path — then everything
    after the compaction. Only ``message``, ``custom_message`` and ``branch_summary``
    entries become messages.

    Args:
        path: entries from the root to the leaf (dicts; ids unique on a path).

    Returns:
        The :class:`ContextPlan`: ``message_ids`` in output order (branch summaries with
        a falsy summary included; :func:`assemble_context` drops them), and the ids of
        the compaction, thinking-level and model entries (or ``None``).
    """
    thinking_id = model_id = compaction_id = None
    comp_idx = -1
    for i, e in enumerate(path):
        t = e.get("type")
        if t == "thinking_level_change":
            thinking_id = e.get("id")
        elif t == "model_change":
            model_id = e.get("id")
        elif t == "message":
            msg = e.get("message")
            # Pi reads entry.message.role; a null message would throw there, we skip it.
            if isinstance(msg, dict) and msg.get("role") == "assistant":
                model_id = e.get("id")
        elif t == "compaction":
            compaction_id = e.get("id")
            comp_idx = i

    def wanted(items: Iterable[Mapping[str, Any]]) -> list[str]:
        return [
            e["id"] for e in items if e.get("type") in ("message", "custom_message", "branch_summary")
        ]

    if comp_idx < 0:
        message_ids = wanted(path)
    else:
        first_kept = path[comp_idx].get("firstKeptEntryId", UNDEFINED)
        start = comp_idx
        for i in range(comp_idx):
            if path[i].get("id") == first_kept and isinstance(first_kept, str):
                start = i
                break
        message_ids = wanted(path[start:comp_idx]) + wanted(path[comp_idx + 1 :])
    return ContextPlan(
        message_ids=message_ids,
        compaction_id=compaction_id,
        thinking_id=thinking_id,
        model_id=model_id,
    )


def assemble_context(plan: ContextPlan, get: Callable[[str], Mapping[str, Any] | None]) -> SessionContext:
    """Build the :class:`SessionContext` a plan describes (Pi's ``buildSessionContext``).

    Messages: the compaction's ``compactionSummary`` first (if any), then per planned
    entry: a ``message`` entry's ``message`` as is; a ``custom_message`` as
    ``{"role":"custom","customType","content","display","details"?,"timestamp"}``; a
    ``branch_summary`` with a truthy ``summary`` as
    ``{"role":"branchSummary","summary","fromId","timestamp"}``. A key is omitted where
    the entry lacks it (JavaScript ``undefined``); ``timestamp`` is the entry's time in
    integer epoch ms (``new Date(ts).getTime()``; ``None`` where that is NaN).

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
            messages.append(_compaction_message(c))
    for mid in plan.message_ids:
        e = get(mid)
        if e is None:
            continue
        t = e.get("type")
        if t == "message":
            msg = e.get("message", UNDEFINED)
            # Pi pushes whatever is there; undefined / null would crash its later
            # steps, so only objects enter the context here.
            if isinstance(msg, dict):
                messages.append(msg)
        elif t == "custom_message":
            messages.append(_custom_message(e))
        elif t == "branch_summary" and truthy(e.get("summary", UNDEFINED)):
            messages.append(_branch_summary_message(e))

    thinking: str | None = "off"
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
    return SessionContext(messages=messages, thinking_level=thinking, model=model)


def build_session_context(
    entries: Sequence[Mapping[str, Any]],
    leaf_id: Any = UNDEFINED,
    by_id: Mapping[str, Mapping[str, Any]] | None = None,
) -> SessionContext:
    """Pi's ``buildSessionContext(entries, leafId, byId)`` over entry dicts.

    Args:
        entries: entries in file order (no header).
        leaf_id: the leaf. Omitted, ``""`` or an id not in ``by_id``: the last entry of
            ``entries``. ``None``: "before the first entry", an empty context.
        by_id: id -> entry; built from ``entries`` if omitted, keeping the *first*
            definition of a duplicated id (sessiontree's rule; Pi keeps the last).

    Returns:
        ``assemble_context(plan_context(path), ...)`` for the root→leaf path.
    """
    if leaf_id is None:
        return SessionContext()
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
            return SessionContext()
        leaf = entries[-1]
    path = walk_path(leaf, by_id)
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
    if role in ("user", "assistant", "toolResult"):
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
    return None  # unknown roles (e.g. v2 "hookMessage" in a v3 file, "system")


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [_text_block(content)]
    if isinstance(content, list):
        return list(content)
    return []


def convert_to_llm(messages: Iterable[Any], *, merge_consecutive_user: bool = True) -> list[dict[str, Any]]:
    """Pi's ``convertToLlm``: agent messages -> LLM messages (user / assistant / toolResult).

    * ``user``, ``assistant``, ``toolResult``: passed through (the same dicts).
    * ``bashExecution``: dropped if ``excludeFromContext`` is truthy (JavaScript
      truthiness: ``"yes"`` drops, ``0``/``""`` keep), else
      ``{"role":"user","content":[{"type":"text","text": bashExecutionToText}],"timestamp"}``.
    * ``custom``: ``{"role":"user","content","timestamp"}``; string content becomes one
      text block.
    * ``branchSummary`` / ``compactionSummary``: one text block with the summary wrapped
      in Pi's prefix/suffix (``<summary>`` ...).
    * anything else (unknown roles, non-objects): dropped.
      ``timestamp``/``content`` keys are omitted where the source has none.

    With ``merge_consecutive_user`` (sessiontree's addition, API.md section 5 point 5),
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
