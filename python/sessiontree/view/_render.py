"""What one entry shows, for every viewer: an :class:`Item` of :class:`Part` s.

The HTML and Markdown exports and the browser's detail pane all show an entry through
``_entries.item_of`` (one function here per entry type and per message role, in its
table), so a message reads the same everywhere: its kind, time, model, usage,
label, then its parts (text, thinking, tool calls, tool results, images, command
output, summaries, notes). Every string in an item has been through :func:`clean`:
session text is untrusted, and control characters, bidi and invisible format
characters and lone surrogates become visible escapes (``\\u202e``) here, once, by the
one rule every viewer uses (``_escape``), before any format sees them. Each
format still escapes for its own syntax (HTML entities, Markdown fences).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._escape import safe, safe_block
from ._preview import model_change_text, tool_call_preview, usage_fields
from ._text import human_bytes, iso_time, json_text, model_label, ms_time, num, usage_text, value_text
from ..schema import blob_sha256

__all__ = ["Part", "Item", "new_item", "start_message", "clean", "doc_line", "doc_id", "usage_text", "IMAGE_TYPES"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def clean(value: Any) -> str:
    """Any JSON value as text fit for any viewer, on several lines (``_escape.safe_block``):
    controls, bidi and invisible format characters and lone surrogates escaped
    (``\\x1b``, ``\\u202e``, ``\\u200b``, ``\\udc80``), CR / CRLF / U+2028 / U+2029 as LF; LF
    and TAB stay."""
    if type(value) is str and value.isascii() and value.isprintable():  # most values: nothing to change
        return value
    return safe_block(value_text(value, None))


def doc_line(value: Any, limit: int = 200) -> str:
    """:func:`clean` text on one line (whitespace runs as one space), at most ``limit`` chars."""
    if (type(value) is str and len(value) <= limit and value.isascii() and value.isprintable()
            and "  " not in value and value[:1] != " " and value[-1:] != " "):
        return value  # already one clean line: most ids, times, names and models
    text = " ".join(clean(value_text(value, limit * 4)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def doc_id(value: Any, limit: int = 80) -> str:
    """An entry id as the exports show it: one line, every character the escaping rule
    shows escaped (:func:`_escape.safe`: a U+2028 in an id is ``\\u2028``, as ``tree``
    shows it, where :func:`doc_line` folds a text's line breaks into spaces and the id
    shown named no entry), at most ``limit`` characters before escaping, cut with ``…``.
    ``src/item.rs`` renders only ids of ASCII graphic characters, which this leaves."""
    text = value if type(value) is str else value_text(value, limit * 4)
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return safe(text)


@dataclass
class Part:
    """One piece of an entry's content.

    Attributes:
        kind: ``text`` (Markdown), ``thinking`` (Markdown), ``tool_call`` (``title`` the
            call, ``text`` its arguments as JSON), ``tool_result`` text (``title`` the
            tool, ``error``), ``image`` (``mime`` one of :data:`IMAGE_TYPES`, ``data``
            base64; an image that is neither is a ``note``), ``output`` (command output,
            verbatim), ``summary`` (Markdown), ``json`` (a value shown as JSON, ``title``
            what it is), ``note`` (one line).
    """

    kind: str
    text: str = ""
    title: str = ""
    mime: str = ""
    data: str = ""
    error: bool = False


@dataclass
class Item:
    """One entry as shown.

    Attributes:
        id: the entry's id (raw; formats escape it).
        kind: the role of a message, else the entry type (cleaned).
        when: its time, ``YYYY-MM-DD HH:MM:SS`` UTC, or ``""``.
        meta: short facts in order (model, stop reason, usage, cost).
        label: its current label (cleaned) or ``None``.
        parts: its content.
    """

    id: str
    kind: str
    when: str = ""
    meta: list[str] = field(default_factory=list)
    label: str | None = None
    parts: list[Part] = field(default_factory=list)


def _when(entry: dict[str, Any]) -> str:
    """An entry's ISO ``timestamp`` in UTC as :func:`iso_time` words it (one offset
    for every time of a page), ``""`` for one that is no time (``"not a time"``), which
    is not shown: ``context`` has only Pi's ``null`` for it (docs/CONTRACT.md §10
    "Times")."""
    ts = entry.get("timestamp")
    return iso_time(ts) if isinstance(ts, str) else ""


def _content_parts(content: Any, kind: str = "text", *, error: bool = False) -> list[Part]:
    """Parts of a message ``content`` (a string or content blocks)."""
    if isinstance(content, str):
        return [Part(kind, clean(content), error=error)]
    if not isinstance(content, list):
        return [] if content is None else [Part("json", clean(json_text(content, indent=True)), "content")]
    parts: list[Part] = []
    for block in content:
        if not isinstance(block, dict):
            parts.append(Part("json", clean(json_text(block, indent=True)), "content block"))
            continue
        btype = block.get("type")
        if btype == "text":
            parts.append(Part(kind, clean(block.get("text")), error=error))
        elif btype == "thinking":
            if block.get("redacted") and not block.get("thinking"):
                parts.append(Part("note", "(redacted thinking)"))
            else:
                parts.append(Part("thinking", clean(block.get("thinking"))))
        elif btype == "toolCall":
            parts.append(Part("tool_call", clean(json_text(block.get("arguments"), indent=True)),
                              tool_call_preview(block, 120, clean)))
        elif btype == "image":
            parts.append(_image(block))
        else:
            parts.append(Part("json", clean(json_text(block, indent=True)), doc_line(btype, 60) or "block"))
    return parts


def _image(block: dict[str, Any]) -> Part:
    mime, data = block.get("mimeType"), block.get("data")
    blob = blob_sha256(data)
    if blob is not None:  # oh-my-pi kept the bytes in its blob store, not in the file
        return Part("note", f"[image {doc_line(mime, 60)} kept outside the session file: blob sha256:{blob}]")
    size = len(data) * 3 // 4 if isinstance(data, str) else 0
    if mime in IMAGE_TYPES and isinstance(data, str) and _BASE64_RE.fullmatch(data):
        return Part("image", mime=str(mime), data=data, title=f"image {mime} {human_bytes(size)}")
    return Part("note", f"[image {doc_line(mime, 60)} {human_bytes(size)}, not shown: not a PNG, JPEG, GIF or "
                        "WebP in base64]")


def new_item(entry: dict[str, Any], label: str | None = None) -> Item:
    """The :class:`Item` of one decoded entry before its kind's function fills it in:
    its id, its type as its kind, its time and ``label``."""
    return Item(id=value_text(entry.get("id"), None), kind=doc_line(entry.get("type"), 60),
                when=_when(entry), label=clean(label) if label is not None else None)


def _short(value: Any) -> str:
    return doc_line(value, 120)


# ------------------------------------------------------------------ message roles
def start_message(item: Item, msg: dict[str, Any]) -> None:
    """A message's kind (its role) and time: its own ``timestamp`` as ``context``
    shows it (:func:`ms_time`: none for one that is no number of milliseconds), the
    entry's only where the message has none (docs/CONTRACT.md §10 "Times")."""
    role = msg.get("role")
    item.kind = doc_line(role, 60) if role is not None else "message"
    ts = msg.get("timestamp")
    if ts is not None:
        item.when = ms_time(ts)


def assistant(item: Item, msg: dict[str, Any]) -> None:
    model = model_label(msg.get("provider"), msg.get("model"), unknown="")
    if model:
        item.meta.append(doc_line(model, 300))
    stop = msg.get("stopReason")
    if stop not in (None, "stop", "toolUse"):
        item.meta.append(f"stop: {doc_line(stop, 60)}")
    item.meta.extend(usage_text(msg.get("usage")))
    if msg.get("errorMessage"):
        item.parts.append(Part("note", f"error: {doc_line(msg.get('errorMessage'), 500)}"))
    item.parts.extend(_content_parts(msg.get("content")))


def tool_result(item: Item, msg: dict[str, Any]) -> None:
    error = bool(msg.get("isError"))
    item.meta.append(doc_line(msg.get("toolName"), 80) + (" ✗ error" if error else ""))
    item.parts.extend(_content_parts(msg.get("content"), "tool_result", error=error))


def bash_execution(item: Item, msg: dict[str, Any]) -> None:
    code = msg.get("exitCode")
    item.meta.append(f"exit {doc_line(code, 20)}" if code is not None else "no exit code")
    if msg.get("excludeFromContext"):
        item.meta.append("excluded from the context")
    item.parts.append(Part("note", f"$ {doc_line(msg.get('command'), 2000)}"))
    item.parts.append(Part("output", clean(msg.get("output")), error=code not in (0, None)))


def custom_message(item: Item, msg: dict[str, Any]) -> None:
    """Roles ``custom`` and ``hookMessage``."""
    item.meta.append(doc_line(msg.get("customType"), 120))
    item.parts.extend(_content_parts(msg.get("content")))


def summary_message(item: Item, msg: dict[str, Any]) -> None:
    """Roles ``compactionSummary`` and ``branchSummary``."""
    item.parts.append(Part("summary", clean(msg.get("summary"))))


def plain_message(item: Item, msg: dict[str, Any]) -> None:
    """``user``, ``system``, and roles Pi does not define."""
    item.parts.extend(_content_parts(msg.get("content")))


def not_a_message(item: Item, msg: Any) -> None:
    """A ``message`` entry whose ``message`` is not an object: shown as JSON."""
    item.kind = "message"
    item.parts.append(Part("json", clean(json_text(msg, indent=True)), "message"))


# ------------------------------------------------------------------ entry types
def custom_message_entry(item: Item, entry: dict[str, Any]) -> None:
    item.meta.append(_short(entry.get("customType")) + ("" if entry.get("display") else " (hidden from the user)"))
    item.parts.extend(_content_parts(entry.get("content")))


def compaction(item: Item, entry: dict[str, Any]) -> None:
    item.meta.append(f"{num(entry.get('tokensBefore'))} tokens before")
    item.meta.append(f"keeps from {_short(entry.get('firstKeptEntryId'))}")
    item.meta.extend(usage_text(entry.get("usage")))
    item.parts.append(Part("summary", clean(entry.get("summary"))))


def branch_summary(item: Item, entry: dict[str, Any]) -> None:
    item.meta.append(f"from {_short(entry.get('fromId'))}")
    item.meta.extend(usage_text(entry.get("usage")))
    item.parts.append(Part("summary", clean(entry.get("summary")) or "(empty summary)"))


def model_change(item: Item, entry: dict[str, Any]) -> None:
    item.parts.append(Part("note", f"model → {doc_line(model_change_text(entry), 300)}"))


def thinking_level_change(item: Item, entry: dict[str, Any]) -> None:
    item.parts.append(Part("note", f"thinking level → {_short(entry.get('thinkingLevel'))}"))


def label(item: Item, entry: dict[str, Any]) -> None:
    lab = entry.get("label")
    what = f"label {_short(lab)!r}" if isinstance(lab, str) and lab else "label cleared"
    item.parts.append(Part("note", f"{what} on {_short(entry.get('targetId'))}"))


def session_info(item: Item, entry: dict[str, Any]) -> None:
    item.parts.append(Part("note", f"session name: {_short(entry.get('name'))}"))


def custom(item: Item, entry: dict[str, Any]) -> None:
    item.meta.append(_short(entry.get("customType")))
    if "data" in entry:
        item.parts.append(Part("json", clean(json_text(entry.get("data"), indent=True)), "extension state"))


def usage(item: Item, entry: dict[str, Any]) -> None:
    item.meta.extend(doc_line(text, 300) for text in usage_fields(entry))
    if entry.get("note"):
        item.parts.append(Part("note", _short(entry.get("note"))))


def context_edit(item: Item, entry: dict[str, Any]) -> None:
    replacement = entry.get("replacement")
    verb = "removes" if replacement is None else "replaces the content of"
    item.parts.append(Part("note", f"{verb} {_short(entry.get('targetId'))} in the context"))
    if replacement is not None:
        item.parts.append(Part("json", clean(json_text(replacement, indent=True)), "replacement"))


def active_tools_change(item: Item, entry: dict[str, Any]) -> None:
    names = entry.get("activeToolNames")
    text = ", ".join(_short(n) for n in names) if isinstance(names, list) else _short(names)
    item.parts.append(Part("note", f"active tools → {text or '(none)'}"))


def leaf(item: Item, entry: dict[str, Any]) -> None:
    target = entry.get("targetId")
    where = "before the first entry" if target is None else _short(target)
    item.parts.append(Part("note", f"leaf moved → {where}"))


def unknown_type(item: Item, entry: dict[str, Any]) -> None:
    """An entry whose ``type`` no row of the table names: the whole entry as JSON."""
    item.parts.append(Part("json", clean(json_text(entry, indent=True)), "entry"))
