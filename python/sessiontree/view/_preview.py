"""One entry on one line: the gist of its text that ``sessiontree tree``, the HTML sidebar
and the browser's tree pane show beside its kind, one function per entry type and per
message role (``_entries`` holds them in its table and dispatches).

Every function takes any JSON (nothing raises) and a ``clean`` function that makes text
fit for where it goes (``_escape.safe`` for a terminal, ``_render.clean`` for a page,
``as_is`` for ``--json``); an entry function returns its text cleaned, a role function
its raw text (``message_preview`` collapses and cleans it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._cells import fit
from ._escape import safe
from ._text import _PREVIEW_CHARS  # what a preview shows; PREVIEW_CLIP reads one more
from ._text import collapse as _collapse
from ._text import ABSENT, model_label, usage_text, value_text

__all__ = ["Clean", "content_text", "tool_call_preview", "usage_fields"]

Clean = Callable[[str], str]
"""What makes a text fit for its viewer (``safe``, ``clean``, ``as_is``)."""


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
            else:  # JSON text: a cut one says so, as a cut string does
                value = _collapse(value, 80)
                value = value if len(value) <= 40 else value[:39] + "…"
            shown.append(f"{_collapse(key, 80)}={value}")
    return fit(clean(f"{_collapse(block.get('name', '?'), 200)}({', '.join(shown)})"), width)


def _line(clean: Clean, text: Any, limit: int = _PREVIEW_CHARS) -> str:
    return clean(_collapse(text, limit))


def _short(value: Any) -> str:
    return value_text(value, 100, none=ABSENT)


# ------------------------------------------------------------------ message roles
def assistant(msg: dict[str, Any], clean: Clean) -> str:
    """Its text blocks, then its tool calls (``→ read(path='a')``); else the start of its
    thinking; an error or abort first."""
    content = msg.get("content")
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
        error = value_text(msg.get("errorMessage"))
        # Claude Code's API errors are imported with their text as the message's text
        # too: said once (trial 59).
        text = f"[{stop}] {text}" if error == text else f"[{stop}] {error} {text}"
    return text


def tool_result(msg: dict[str, Any], clean: Clean) -> str:
    """``read ✗: <its text>`` (``✗`` when ``isError``)."""
    err = " ✗" if msg.get("isError") else ""
    return f"{value_text(msg.get('toolName', '?'), 200)}{err}: {content_text(msg.get('content'))}"


def bash_execution(msg: dict[str, Any], clean: Clean) -> str:
    """``$ <command> (exit 1)`` (the exit code when not 0)."""
    code = msg.get("exitCode")
    tail = f" (exit {value_text(code, 40)})" if code not in (0, None) else ""
    return f"$ {value_text(msg.get('command'))}{tail}"


def custom_message(msg: dict[str, Any], clean: Clean) -> str:
    """``<customType>: <its text>`` (roles ``custom`` and ``hookMessage``)."""
    return f"{value_text(msg.get('customType'), 200)}: {content_text(msg.get('content'))}"


def summary_message(msg: dict[str, Any], clean: Clean) -> str:
    """Its ``summary`` (``compactionSummary``, ``branchSummary``)."""
    return value_text(msg.get("summary"))


def plain_message(msg: dict[str, Any], clean: Clean) -> str:
    """Its content's text (``user``, ``system``, and roles Pi does not define)."""
    return content_text(msg.get("content"))


# ------------------------------------------------------------------ entry types
def custom_message_entry(entry: dict[str, Any], clean: Clean) -> str:
    return _line(clean, f"{value_text(entry.get('customType'), 200)}: {content_text(entry.get('content'))}")


def compaction(entry: dict[str, Any], clean: Clean) -> str:
    return f"{_line(clean, entry.get('summary'))} (tokensBefore {_line(clean, _short(entry.get('tokensBefore')))})"


def branch_summary(entry: dict[str, Any], clean: Clean) -> str:
    return _line(clean, entry.get("summary")) or "(empty summary)"


def model_change_text(entry: dict[str, Any]) -> str:
    """The model a ``model_change`` selects, as ``provider/modelId`` (:func:`model_label`;
    not sanitized).

    Pi writes ``provider`` and ``modelId``. oh-my-pi writes ``model``, already
    ``"provider/modelId"``, with ``role`` (``"default"`` when absent: ``"smol"``,
    ``"slow"``, …) and ``resolvedModelIsFallback`` (its ``session-entries.ts``,
    ``ModelChangeEntry``): shown as ``model (role smol)`` / ``model (fallback)``.
    """
    model = entry.get("model")
    if "provider" in entry or "modelId" in entry or not isinstance(model, str):
        return model_label(entry.get("provider"), entry.get("modelId"))
    text = value_text(model, 200)
    role = entry.get("role")
    if isinstance(role, str) and role and role != "default":
        text += f" (role {value_text(role, 60)})"
    if entry.get("resolvedModelIsFallback") is True:
        text += " (fallback)"
    return text


def model_change(entry: dict[str, Any], clean: Clean) -> str:
    return _line(clean, model_change_text(entry))


def thinking_level_change(entry: dict[str, Any], clean: Clean) -> str:
    return _line(clean, _short(entry.get("thinkingLevel")))


def label(entry: dict[str, Any], clean: Clean) -> str:
    text = entry.get("label")
    target = _short(entry.get("targetId"))
    if text is None:
        return _line(clean, f"{target} cleared")
    # repr of the label's start: its quotes must not depend on text past the clip.
    shown = repr(text[:_PREVIEW_CHARS]) if isinstance(text, str) else _short(text)
    return _line(clean, f"{target} = {shown}")


def session_info(entry: dict[str, Any], clean: Clean) -> str:
    return _line(clean, entry.get("name"))


def custom(entry: dict[str, Any], clean: Clean) -> str:
    return _line(clean, entry.get("customType"), 200)


def usage_fields(entry: dict[str, Any]) -> list[str]:
    """A ``usage`` entry's fields, as ``tree`` and the exports show them (joined by
    `` · ``; not sanitized): its ``kind`` (left out when it has none: no empty field
    between two separators), its model (:func:`model_label`), its numbers
    (:func:`usage_text`). ``["compaction", "anthropic/claude-x", "in 1,234 · out 56",
    "$0.0100"]``."""
    kind = value_text(entry.get("kind"), 100)
    return [*([kind] if kind.strip() else []), model_label(entry.get("provider"), entry.get("model")),
            *usage_text(entry.get("usage"))]


def usage(entry: dict[str, Any], clean: Clean) -> str:
    """``compaction · anthropic/claude-x · in 1,234 · out 56 · $0.0100``: what a call
    not tied to a message spent (:func:`usage_fields`)."""
    return _line(clean, " · ".join(usage_fields(entry)))


def context_edit(entry: dict[str, Any], clean: Clean) -> str:
    """``a1b2c3d4 removed`` or ``a1b2c3d4 ← <the replacement's text>``: what the context
    holds of the target from here on."""
    target = _short(entry.get("targetId"))
    replacement = entry.get("replacement")
    if replacement is None:
        return _line(clean, f"{target} removed")
    content = replacement.get("content") if isinstance(replacement, dict) else replacement
    return _line(clean, f"{target} ← {content_text(content) if isinstance(content, (str, list)) else _short(content)}")


def active_tools_change(entry: dict[str, Any], clean: Clean) -> str:
    names = entry.get("activeToolNames")
    return _line(clean, ", ".join(map(_short, names)) if isinstance(names, list) else _short(names))


def leaf(entry: dict[str, Any], clean: Clean) -> str:
    moved_to = entry.get("targetId")
    return _line(clean, "→ " + ("(before the first entry)" if moved_to is None else _short(moved_to)))


def unknown_type(etype: Any, clean: Clean) -> str:
    """The kind of an entry whose ``type`` no row of the table names: the type as written."""
    return _line(clean, _short(etype))
