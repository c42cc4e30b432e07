"""How each kind of entry is shown: one row per entry type (``schema.ENTRY_TYPES``) and
one per message role, and the two functions every viewer calls, :func:`entry_preview`
(one line: ``tree``, the HTML sidebar, the browser's tree pane) and :func:`item_of`
(the whole entry: the exports, the browser's detail pane).

A row says what ``tree`` calls the kind and its colour, whether a folded run keeps it
in sight, whether it belongs to the conversation (Markdown's ``--detail no-tools``), and
which functions of ``_preview`` and ``_render`` show it. A new entry type is one row
here (``tests/test_entry_types.py`` fails until it has one, and until its preview and
its rendering show its fields). An entry whose ``type`` has no row is shown by its type
and as JSON; a message whose role has no row by its content.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..schema import ENTRY_TYPES, MESSAGE_ROLES
from . import _preview as p
from . import _render as r
from ._escape import safe
from ._render import Item
from ._text import collapse

__all__ = [
    "EntryView", "RoleView", "ENTRY_VIEWS", "ROLE_VIEWS", "KIND_STYLES", "KINDS", "KEEP_TYPES", "CONVERSATION",
    "entry_preview", "message_preview", "item_of",
]

Preview = Callable[[dict[str, Any], p.Clean], str]
Render = Callable[[Item, dict[str, Any]], None]


class EntryView(NamedTuple):
    """How entries of one type are shown (``message``: by their role, :data:`ROLE_VIEWS`)."""

    word: str  # what `tree` and the context call it
    style: str  # its colour (a rich style), "" for none
    preview: Preview | None  # its gist on one line (cleaned), None for `message`
    item: Render | None  # fills in its Item, None for `message`
    keep: bool = False  # a folded run of `tree` and the viewers never hides it
    conversation: bool = False  # shown by Markdown's `--detail no-tools`


class RoleView(NamedTuple):
    """How messages of one role are shown."""

    style: str
    preview: Preview  # its raw gist (message_preview collapses and cleans it)
    item: Render
    conversation: bool = False


ENTRY_VIEWS: dict[str, EntryView] = {
    "message": EntryView("message", "", None, None),
    "custom_message": EntryView("custom_message", "blue", p.custom_message_entry, r.custom_message_entry,
                                conversation=True),
    "compaction": EntryView("compaction", "bold red", p.compaction, r.compaction, keep=True, conversation=True),
    "branch_summary": EntryView("branch_summary", "bold magenta", p.branch_summary, r.branch_summary, keep=True,
                                conversation=True),
    "model_change": EntryView("model", "bright_blue", p.model_change, r.model_change),
    "thinking_level_change": EntryView("thinking", "bright_blue", p.thinking_level_change, r.thinking_level_change),
    "label": EntryView("label", "bright_black", p.label, r.label),
    "session_info": EntryView("session_info", "bright_black", p.session_info, r.session_info, keep=True),
    "custom": EntryView("custom", "blue", p.custom, r.custom),
    "usage": EntryView("usage", "", p.usage, r.usage),
    "context_edit": EntryView("context_edit", "", p.context_edit, r.context_edit),
    "active_tools_change": EntryView("tools", "bright_blue", p.active_tools_change, r.active_tools_change),
    "leaf": EntryView("leaf", "bright_black", p.leaf, r.leaf),
}

_PLAIN = RoleView("", p.plain_message, r.plain_message)
ROLE_VIEWS: dict[str, RoleView] = {
    "user": RoleView("bold green", p.plain_message, r.plain_message, conversation=True),
    "assistant": RoleView("bold cyan", p.assistant, r.assistant, conversation=True),
    "toolResult": RoleView("yellow", p.tool_result, r.tool_result),
    "bashExecution": RoleView("magenta", p.bash_execution, r.bash_execution),
    "custom": RoleView("blue", p.custom_message, r.custom_message, conversation=True),
    "system": RoleView("", p.plain_message, r.plain_message, conversation=True),
    # Pi 0.4x's name of `custom` (migrated v2 files hold it).
    "hookMessage": RoleView("", p.custom_message, r.custom_message, conversation=True),
    # The roles of the summaries the context puts in place of a compaction or a branch.
    "compactionSummary": RoleView("bold red", p.summary_message, r.summary_message, conversation=True),
    "branchSummary": RoleView("bold magenta", p.summary_message, r.summary_message, conversation=True),
}

if set(ENTRY_VIEWS) != ENTRY_TYPES or not set(MESSAGE_ROLES) <= set(ROLE_VIEWS):  # pragma: no cover
    raise AssertionError("view/_entries.py: a row per schema.ENTRY_TYPES and per schema.MESSAGE_ROLES")

KIND_STYLES: dict[str, str] = {
    **{v.word: v.style for v in ENTRY_VIEWS.values() if v.style},
    **{role: v.style for role, v in ROLE_VIEWS.items() if v.style},
}
"""The colour of a kind as the viewers name it (``tree``'s word, a role, an entry type)."""

KINDS = frozenset(ENTRY_TYPES - {"message"}) | frozenset(MESSAGE_ROLES) | {"compactionSummary", "branchSummary"}
"""The kinds an :class:`Item` may have that the file did not make up: the entry types,
the roles Pi writes and the two the context synthesises (the HTML page's classes)."""

KEEP_TYPES = frozenset(t for t, v in ENTRY_VIEWS.items() if v.keep)
"""Entry types a folded run never hides."""

CONVERSATION = frozenset({t for t, v in ENTRY_VIEWS.items() if v.conversation}
                         | {role for role, v in ROLE_VIEWS.items() if v.conversation})
"""Item kinds Markdown's ``--detail no-tools`` keeps."""


def message_preview(msg: Any, clean: p.Clean = safe) -> tuple[str, str]:
    """``(kind, text)`` for an agent message: kind is its role, text its gist on one line.

    Any JSON types are shown; ``clean`` (default ``safe``) makes both fit for a terminal.
    """
    if not isinstance(msg, dict):
        return "message", ""
    role = clean(collapse(msg.get("role", "?"), 100))
    text = ROLE_VIEWS.get(role, _PLAIN).preview(msg, clean)
    return role, clean(collapse(text))


def entry_preview(entry: dict[str, Any], clean: p.Clean = safe) -> tuple[str, str]:
    """``(kind, text)`` for one entry: kind is the role for messages, else the entry
    type's word (:data:`ENTRY_VIEWS`).

    Any JSON types are shown; ``clean`` (default ``safe``) makes both fit for a terminal.
    """
    etype = entry.get("type")
    if etype == "message":
        return message_preview(entry.get("message"), clean)
    view = ENTRY_VIEWS.get(etype) if isinstance(etype, str) else None
    if view is None:
        return p.unknown_type(etype, clean), ""
    return view.word, view.preview(entry, clean) if view.preview is not None else ""


def item_of(entry: dict[str, Any], label: str | None = None) -> Item:
    """The :class:`Item` of one decoded entry (any JSON: nothing here raises)."""
    item = r.new_item(entry, label)
    etype = entry.get("type")
    if etype == "message":
        msg = entry.get("message")
        if not isinstance(msg, dict):
            r.not_a_message(item, msg)
            return item
        r.start_message(item, msg)
        role = msg.get("role")
        (ROLE_VIEWS.get(role, _PLAIN) if isinstance(role, str) else _PLAIN).item(item, msg)
        return item
    view = ENTRY_VIEWS.get(etype) if isinstance(etype, str) else None
    (view.item if view is not None and view.item is not None else r.unknown_type)(item, entry)
    return item
