"""One entry on one line: the previews ``sessiontree tree``, the HTML sidebar and the
browser's tree pane show (its kind, and the gist of its text)."""

from __future__ import annotations

from typing import Any

from ._cells import fit
from ._escape import safe
from ._text import PREVIEW_CLIP as _PREVIEW_CHARS
from ._text import collapse as _collapse
from ._text import value_text

__all__ = ["content_text", "tool_call_preview", "message_preview", "entry_preview", "KIND_STYLES"]


def content_text(content: Any, *, images: bool = True) -> str:
    """Text of a message ``content`` (a string or a list of blocks); not sanitized."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(value_text(block.get("text")))
        elif kind == "image" and images:
            parts.append(f"[image {value_text(block.get('mimeType'), 100)}]".replace(" ]", "]"))
    return " ".join(p for p in parts if p)


def tool_call_preview(block: dict[str, Any], width: int = 60, clean: Any = safe) -> str:
    """``read(path='src/a.ts')``: a tool call's name and its first arguments, shortened.

    ``clean`` makes it fit for a terminal (:func:`safe`, the default); ``--json`` output
    passes ``as_is`` and keeps the text as it is.
    """
    args = block.get("arguments")
    shown = []
    if isinstance(args, dict):
        for key, value in list(args.items())[:3]:
            if isinstance(value, str):
                value = _collapse(value, 80)
                value = repr(value if len(value) <= 40 else value[:39] + "…")
            else:
                value = _collapse(value, 80)[:40]
            shown.append(f"{_collapse(key, 80)}={value}")
    return fit(clean(f"{_collapse(block.get('name', '?'), 200)}({', '.join(shown)})"), width)


def message_preview(msg: Any, clean: Any = safe) -> tuple[str, str]:
    """``(kind, text)`` for an agent message: kind is its role, text its gist on one line.

    Any JSON types are shown; ``clean`` (default :func:`safe`) makes both fit for a terminal.
    """
    if not isinstance(msg, dict):
        return "message", ""
    role = clean(_collapse(msg.get("role", "?"), 100))
    content = msg.get("content")
    if role == "assistant":
        texts, calls, thinking = [], [], ""
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                texts.append(value_text(block["text"]))
            elif block.get("type") == "toolCall":
                calls.append("→ " + tool_call_preview(block, 50, clean))
            elif block.get("type") == "thinking" and not thinking:
                thinking = value_text(block.get("thinking"))
        text = " ".join(texts + calls)
        if not text and thinking:
            text = f"(thinking) {thinking}"
        stop = msg.get("stopReason")
        if stop in ("error", "aborted"):
            text = f"[{stop}] {value_text(msg.get('errorMessage'))} {text}"
    elif role == "toolResult":
        err = " ✗" if msg.get("isError") else ""
        text = f"{value_text(msg.get('toolName', '?'), 200)}{err}: {content_text(content)}"
    elif role == "bashExecution":
        code = msg.get("exitCode")
        tail = f" (exit {value_text(code, 40)})" if code not in (0, None) else ""
        text = f"$ {value_text(msg.get('command'))}{tail}"
    elif role in ("custom", "hookMessage"):
        text = f"{value_text(msg.get('customType'), 200)}: {content_text(content)}"
    elif role in ("compactionSummary", "branchSummary"):
        text = value_text(msg.get("summary"))
    else:
        text = content_text(content)
    return role, clean(_collapse(text))


def entry_preview(entry: dict[str, Any], clean: Any = safe) -> tuple[str, str]:
    """``(kind, text)`` for one entry: kind is the role for messages, else the entry type.

    Any JSON types are shown; ``clean`` (default :func:`safe`) makes both fit for a terminal.
    """
    etype = entry.get("type")
    if etype == "message":
        return message_preview(entry.get("message"), clean)

    def line(text: Any, limit: int = _PREVIEW_CHARS) -> str:
        return clean(_collapse(text, limit))

    def short(value: Any) -> str:
        return value_text(value, 100, none="None")

    if etype == "custom_message":
        return "custom_message", line(f"{value_text(entry.get('customType'), 200)}: "
                                      f"{content_text(entry.get('content'))}")
    if etype == "compaction":
        return "compaction", f"{line(entry.get('summary'))} (tokensBefore {line(short(entry.get('tokensBefore')))})"
    if etype == "branch_summary":
        return "branch_summary", line(entry.get("summary")) or "(empty summary)"
    if etype == "model_change":
        return "model", line(f"{short(entry.get('provider'))}/{short(entry.get('modelId'))}")
    if etype == "thinking_level_change":
        return "thinking", line(short(entry.get("thinkingLevel")))
    if etype == "label":
        label = entry.get("label")
        target = short(entry.get("targetId"))
        if label is None:
            return "label", line(f"{target} cleared")
        # repr of the label's start: its quotes must not depend on text past the clip.
        shown = repr(label[:_PREVIEW_CHARS]) if isinstance(label, str) else short(label)
        return "label", line(f"{target} = {shown}")
    if etype == "session_info":
        return "session_info", line(entry.get("name"))
    if etype == "custom":
        return "custom", line(entry.get("customType"), 200)
    if etype == "active_tools_change":
        names = entry.get("activeToolNames")
        return "tools", line(", ".join(map(short, names)) if isinstance(names, list) else short(names))
    if etype == "leaf":
        moved_to = entry.get("targetId")
        return "leaf", line("→ " + ("(before the first entry)" if moved_to is None else short(moved_to)))
    return line(short(etype)), ""


KIND_STYLES = {
    "user": "bold green",
    "assistant": "bold cyan",
    "toolResult": "yellow",
    "bashExecution": "magenta",
    "custom": "blue",
    "custom_message": "blue",
    "compaction": "bold red",
    "compactionSummary": "bold red",
    "branch_summary": "bold magenta",
    "branchSummary": "bold magenta",
    "model": "bright_blue",
    "thinking": "bright_blue",
    "tools": "bright_blue",
    "leaf": "bright_black",
    "label": "bright_black",
    "session_info": "bright_black",
}
