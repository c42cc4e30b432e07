"""A graph's messages channel as Pi messages (what Pi's tools show of a thread).

The checkpoint itself is kept exactly by the saver's serializer; these messages are a
rendering, written once per message as the conversation grows, never read back into a
checkpoint.

| LangChain message | Pi message |
|---|---|
| ``human`` | ``user``: a string stays a string; text blocks, images with base64 data as image blocks, other blocks named in brackets |
| ``ai`` | ``assistant``: ``thinking`` / ``reasoning`` blocks as thinking, text as text, each of ``tool_calls`` as a ``toolCall``; ``usage_metadata`` as Pi's usage (cached tokens apart from input, as Pi counts them); provider and model from ``response_metadata`` |
| ``tool`` | ``toolResult`` (the tool's name from its call; ``status == "error"`` as ``isError``) |
| ``system`` | ``system`` |
| anything else | ``custom`` message (``customType`` ``langchain.<type>``, its text) |

Plain dicts with ``role`` / ``content`` (a state without ``add_messages``) map by role the
same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = ["as_list", "fingerprint", "pi_message", "pi_messages", "tool_names"]

API = "langchain"
_ROLES = {"user": "human", "assistant": "ai"}


def _get(m: Any, key: str, default: Any = None) -> Any:
    if isinstance(m, Mapping):
        return m.get(key, default)
    return getattr(m, key, default)


def _kind(m: Any) -> str:
    if isinstance(m, Mapping):
        role = m.get("role", m.get("type"))
        return _ROLES.get(role, role) if isinstance(role, str) else ""
    t = getattr(m, "type", None)
    if t == "chat":  # ChatMessage: its own role
        role = getattr(m, "role", "")
        return _ROLES.get(role, role) if isinstance(role, str) else ""
    return t if isinstance(t, str) else ""


def _block(part: Any) -> dict[str, Any] | None:
    """One LangChain content block as a Pi content block (``None``: not shown as content)."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        return {"type": "text", "text": json.dumps(part, ensure_ascii=False, default=str)}
    t = part.get("type")
    if t == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if t in ("thinking", "reasoning"):
        text = part.get("thinking", part.get("reasoning"))
        return {"type": "thinking", "thinking": text if isinstance(text, str) else ""}
    if t == "image":
        data = part.get("base64", part.get("data") if part.get("source_type") == "base64" else None)
        mime = part.get("mime_type")
        if isinstance(data, str) and isinstance(mime, str):
            return {"type": "image", "data": data, "mimeType": mime}
        return {"type": "text", "text": "[image]"}
    if t in ("tool_use", "tool_call", "server_tool_call", "function_call"):
        return None  # the message's tool_calls say it
    return {"type": "text", "text": f"[{t}]" if isinstance(t, str) else "[block]"}


def _blocks(content: Any) -> list[dict[str, Any]]:
    parts = content if isinstance(content, list) else [content] if content not in (None, "") else []
    return [b for b in (_block(p) for p in parts) if b is not None]


def _text(content: Any) -> str:
    return "\n".join(b["text"] for b in _blocks(content) if b["type"] == "text")


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _usage(meta: Any) -> dict[str, Any]:
    inp, out = _int(_get(meta, "input_tokens", 0)), _int(_get(meta, "output_tokens", 0))
    details = _get(meta, "input_token_details", None) or {}
    cached = min(_int(_get(details, "cache_read", 0)), inp)
    written = min(_int(_get(details, "cache_creation", 0)), inp - cached)
    return {"input": inp - cached - written, "output": out, "cacheRead": cached, "cacheWrite": written,
            "totalTokens": inp + out,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _assistant(m: Any, now_ms: int) -> dict[str, Any]:
    content = _blocks(_get(m, "content"))
    calls = _get(m, "tool_calls", None) or []
    for call in calls:
        args = _get(call, "args", None)
        content.append({"type": "toolCall", "id": str(_get(call, "id", "") or ""), "name": str(_get(call, "name", "")),
                        "arguments": args if isinstance(args, dict) else {"args": args}})
    meta = _get(m, "response_metadata", None) or {}
    provider = _get(meta, "model_provider", None)
    model = _get(meta, "model_name", _get(meta, "model", None))
    return {"role": "assistant", "content": content, "api": API,
            "provider": provider if isinstance(provider, str) and provider else "langchain",
            "model": model if isinstance(model, str) and model else "unknown",
            "usage": _usage(_get(m, "usage_metadata", None) or {}),
            "stopReason": "toolUse" if calls else "stop", "timestamp": now_ms}


def as_list(value: Any) -> list[Any]:
    """A messages channel's value as a list of messages (none when it is not a sequence)."""
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        return []
    return list(value)


def tool_names(messages: list[Any]) -> dict[str, str]:
    """Tool call id -> the tool's name, from the AI messages' ``tool_calls``."""
    names: dict[str, str] = {}
    for m in messages:
        for call in _get(m, "tool_calls", None) or []:
            names[str(_get(call, "id", "") or "")] = str(_get(call, "name", ""))
    return names


def pi_message(m: Any, now_ms: int, names: Any) -> dict[str, Any]:
    """The Pi message of one LangChain message (or role dict), JSON values only.

    Args:
        m: the message.
        now_ms: its ``timestamp`` (epoch milliseconds).
        names: tool call id -> tool name (a mapping, or a callable giving one), for a
            tool message without a name of its own.
    """
    kind = _kind(m)
    content = _get(m, "content")
    if kind == "human":
        out = {"role": "user", "content": content if isinstance(content, str) else _blocks(content), "timestamp": now_ms}
    elif kind == "ai":
        out = _assistant(m, now_ms)
    elif kind == "tool":
        call_id = str(_get(m, "tool_call_id", "") or "")
        name = _get(m, "name", None)
        if not (isinstance(name, str) and name):
            name = (names() if callable(names) else names).get(call_id, "")
        out = {"role": "toolResult", "toolCallId": call_id, "toolName": name,
               "content": [b for b in _blocks(content) if b["type"] != "thinking"],
               "isError": _get(m, "status", None) == "error", "timestamp": now_ms}
    elif kind == "system":
        out = {"role": "system", "content": _text(content), "timestamp": now_ms}
    else:
        out = {"role": "custom", "customType": f"langchain.{kind or 'message'}", "content": _text(content),
               "display": True, "timestamp": now_ms}
    return cast(dict[str, Any], _jsonable(out))


def pi_messages(messages: Any, now_ms: int) -> list[dict[str, Any]]:
    """The Pi messages of a messages channel's value (a list of LangChain messages or
    role dicts; anything else has none).

    Args:
        messages: the channel's value.
        now_ms: the messages' ``timestamp`` (epoch milliseconds).
    """
    listed = as_list(messages)
    names = tool_names(listed)
    return [pi_message(m, now_ms, names) for m in listed]


def _jsonable(value: Any) -> Any:
    """``value`` with only JSON values: other objects as their ``str``, non-finite
    numbers as ``None`` (a rendering may lose what the checkpoint keeps)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def _as_read(value: Any) -> Any:
    """``value`` as it reads back from the file: numbers as JavaScript spells them
    (``2.0`` is ``2``, NaN and infinities ``null``), tuples as lists."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): _as_read(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_read(v) for v in value]
    return value


def fingerprint(message: Mapping[str, Any]) -> bytes:
    """What makes two Pi messages the same message of a conversation: everything but
    the time they were written, as it reads back from the file (16 bytes)."""
    rest = _as_read({k: v for k, v in message.items() if k != "timestamp"})
    data = json.dumps(rest, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=16).digest()
