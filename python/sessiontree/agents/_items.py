"""OpenAI Agents SDK items as Pi messages, the way Pi stores the same things.

An SDK session item is a Responses API input item (``TResponseInputItem``: a dict).
Each becomes one Pi entry, so that the SDK's ``pop_item`` is one step of the leaf:

| item | Pi |
|---|---|
| message, role ``user`` | ``user`` message: text blocks (images of a ``data:`` URL as image blocks, other parts named in brackets) |
| message, role ``assistant`` | ``assistant`` message: a text block per ``output_text`` / ``refusal`` part |
| message, role ``system`` / ``developer`` | ``system`` message (its text) |
| ``reasoning`` | ``assistant`` message with one ``thinking`` block (the summary, else the reasoning text) |
| ``function_call``, ``custom_tool_call`` and every other ``*_call`` | ``assistant`` message with one ``toolCall`` block (``call_id``, name, arguments as an object) |
| ``*_call_output``, ``mcp_approval_response`` | ``toolResult`` message (its text; the tool's name from its call) |
| anything else (``item_reference``, ``compaction``, ``mcp_list_tools`` ...) | ``custom`` entry ``openai-agents.item`` (not in Pi's context) |

The item itself, exactly as given, is kept in the entry: as the Pi message's
``openaiItem`` field (a field Pi's readers and providers do not look at), or as the
custom entry's ``data.item``. The SDK gets that back, so nothing Pi has no place for is
lost; the rest of the Pi message is a rendering for Pi's tools (tree, context, search,
export, usage) and is never read back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ITEM_FIELD", "ITEM_TYPE", "call_id_of", "call_name", "is_call", "item_of_entry", "pi_entry", "zero_usage"]

ITEM_FIELD = "openaiItem"
"""The Pi message field that holds the SDK item."""

ITEM_TYPE = "openai-agents.item"
"""``customType`` of the custom entries that hold items Pi has no message for."""

API = "openai-responses"
"""The ``api`` Pi records on assistant messages of OpenAI's Responses API."""

_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+);base64,(.*)", re.DOTALL)


def zero_usage() -> dict[str, Any]:
    """Pi's usage object with every count and cost zero."""
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def is_call(item: Mapping[str, Any]) -> bool:
    """Whether the item is a tool call of the model (becomes a ``toolCall`` block)."""
    t = item.get("type")
    return isinstance(t, str) and (t.endswith("_call") or t == "mcp_approval_request")


def _is_output(item: Mapping[str, Any]) -> bool:
    t = item.get("type")
    return isinstance(t, str) and (t.endswith("_call_output") or t == "mcp_approval_response")


def call_id_of(item: Mapping[str, Any]) -> str:
    """The id that pairs a call with its output: ``call_id``, else the approval request's
    id, else the item's ``id``; ``""`` when it has none."""
    for key in ("call_id", "approval_request_id", "id"):
        v = item.get(key)
        if isinstance(v, str) and v:
            return v
    return ""


def call_name(item: Mapping[str, Any]) -> str:
    """The tool's name: ``name`` where the item has one (function, custom and MCP tools),
    else the item type without ``_call`` (``web_search``, ``shell``, ``computer`` ...)."""
    name = item.get("name")
    if isinstance(name, str) and name:
        return name
    t = str(item.get("type", ""))
    return t[: -len("_call")] if t.endswith("_call") else t


def _arguments(item: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments as the object Pi's ``toolCall.arguments`` holds."""
    t = item.get("type")
    if t == "function_call":
        raw = item.get("arguments")
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        return {"arguments": raw}
    if t == "custom_tool_call":
        return {"input": item.get("input")}
    skip = {"type", "id", "call_id", "name", "status", "output", "error"}
    return {k: v for k, v in item.items() if k not in skip}


def _part_text(part: Any) -> dict[str, Any]:
    """One content part of a message as a Pi content block."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        return {"type": "text", "text": json.dumps(part, ensure_ascii=False, default=str)}
    t = part.get("type")
    if isinstance(part.get("text"), str):  # input_text, output_text, text, summary_text
        return {"type": "text", "text": part["text"]}
    if t == "refusal" and isinstance(part.get("refusal"), str):
        return {"type": "text", "text": part["refusal"]}
    if t == "input_image":
        url = part.get("image_url")
        m = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
        if m is not None:
            return {"type": "image", "data": m.group(2), "mimeType": m.group(1)}
        return {"type": "text", "text": f"[image: {url}]" if isinstance(url, str) else "[image]"}
    if t == "input_file":
        name = part.get("filename") or part.get("file_id") or part.get("file_url")
        return {"type": "text", "text": f"[file: {name}]" if name else "[file]"}
    return {"type": "text", "text": f"[{t}]" if isinstance(t, str) else "[part]"}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [_part_text(p) for p in content]
    if content is None:
        return []
    return [_part_text(content)]


def _plain_text(content: Any) -> str:
    return "\n".join(b["text"] for b in _blocks(content) if b["type"] == "text")


def _output_text(output: Any) -> list[dict[str, Any]]:
    """A tool output (a string, content parts, or any JSON value) as text/image blocks."""
    if isinstance(output, str):
        return [{"type": "text", "text": output}]
    if isinstance(output, list):
        return [_part_text(p) for p in output]
    return [{"type": "text", "text": json.dumps(output, ensure_ascii=False, default=str)}]


def _assistant(content: list[dict[str, Any]], stop: str, now_ms: int, provider: str, model: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "api": API, "provider": provider, "model": model,
            "usage": zero_usage(), "stopReason": stop, "timestamp": now_ms}


def pi_entry(
    item: Mapping[str, Any], tool_names: Mapping[str, str], now_ms: int, provider: str, model: str
) -> tuple[str, dict[str, Any]]:
    """The Pi entry of one SDK item.

    Args:
        item: the item (a JSON object).
        tool_names: call id -> tool name of the calls before it (for ``toolName``).
        now_ms: the message's ``timestamp`` (epoch milliseconds).
        provider, model: what assistant messages record (the items do not say).

    Returns:
        ``("message", pi_message)`` with the item in its ``openaiItem`` field, or
        ``("custom", data)`` for a ``custom`` entry of type :data:`ITEM_TYPE`.
    """
    t = item.get("type")
    role = item.get("role")
    message: dict[str, Any] | None = None
    if t in (None, "message") and role == "user":
        content = item.get("content")
        message = {"role": "user", "content": content if isinstance(content, str) else _blocks(content),
                   "timestamp": now_ms}
    elif t in (None, "message") and role == "assistant":
        message = _assistant(_blocks(item.get("content")), "stop", now_ms, provider, model)
    elif t in (None, "message") and role in ("system", "developer"):
        message = {"role": "system", "content": _plain_text(item.get("content")), "timestamp": now_ms}
    elif t == "reasoning":
        text = "\n\n".join(b["text"] for b in _blocks(item.get("summary")) if b["type"] == "text")
        if not text:
            text = "\n\n".join(b["text"] for b in _blocks(item.get("content")) if b["type"] == "text")
        message = _assistant([{"type": "thinking", "thinking": text}], "stop", now_ms, provider, model)
    elif is_call(item):
        block = {"type": "toolCall", "id": call_id_of(item), "name": call_name(item), "arguments": _arguments(item)}
        message = _assistant([block], "toolUse", now_ms, provider, model)
    elif _is_output(item):
        cid = call_id_of(item)
        t_str = str(t)
        fallback = t_str[: -len("_call_output")] if t_str.endswith("_call_output") else t_str
        if t == "mcp_approval_response":
            content = [{"type": "text", "text": "approved" if item.get("approve") else "denied"}]
        else:
            content = _output_text(item.get("output"))
        message = {"role": "toolResult", "toolCallId": cid, "toolName": tool_names.get(cid, fallback),
                   "content": content, "isError": item.get("status") in ("failed", "incomplete"),
                   "timestamp": now_ms}
    if message is None:
        return "custom", {"item": item}
    message[ITEM_FIELD] = item
    return "message", message


def item_of_entry(entry: Mapping[str, Any]) -> Any:
    """The SDK item an entry holds, or ``None`` for an entry that holds none. An item is
    a dict (``add_items`` stores no other): any other value there (a file edited or
    damaged by hand) is no item, never handed to the SDK as one."""
    t = entry.get("type")
    item: Any = None
    if t == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            item = message.get(ITEM_FIELD)
    elif t == "custom" and entry.get("customType") == ITEM_TYPE:
        data = entry.get("data")
        if isinstance(data, dict):
            item = data.get("item")
    return item if isinstance(item, dict) else None
