"""Labels and the session name: Pi's rules over decoded entries, shared by both backends.

The backends differ only in how they find the ``label`` / ``session_info`` entries (a
scan of dicts, or the Rust index's type column); what those entries mean is decided
here, once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._js import trim, truthy

__all__ = ["LabelFields", "agent_core_label", "apply_labels", "label_fields", "session_name_of"]


LabelFields = tuple[Any, Any, Any]
"""A ``label`` entry's ``(targetId, label, timestamp)``, each its decoded value, ``None``
when absent (the rule reads nothing else, so no backend builds the entry for it)."""


def label_fields(entry: dict[str, Any]) -> LabelFields:
    """The :data:`LabelFields` of a decoded ``label`` entry."""
    return entry.get("targetId"), entry.get("label"), entry.get("timestamp")


def apply_labels(label_entries: Iterable[LabelFields], labels: dict[str, Any], label_ts: dict[str, Any]) -> None:
    """Fold ``label`` entries, in file order, into the label maps (in place).

    Pi's ``_buildIndex``: a JavaScript-truthy ``label`` sets the target's label (and
    the timestamp of the entry that set it), anything else clears it. Only string
    ``targetId``s count. Dict order is JavaScript ``Map`` order: first time set.

    Args:
        label_entries: the :data:`LabelFields` of the ``label`` entries, in file order.
        labels: target id -> label, updated.
        label_ts: target id -> the setting entry's ``timestamp``, updated.
    """
    for target, value, stamp in label_entries:
        if not isinstance(target, str):
            continue
        if truthy(value):
            labels[target] = value
            label_ts[target] = stamp
        else:
            labels.pop(target, None)
            label_ts.pop(target, None)


def session_name_of(latest_session_info: dict[str, Any] | None, title_slot: Any = None) -> str | None:
    """The session name given the latest ``session_info`` entry in file order.

    Pi 0.99's ``getSessionName`` (``entry.name?.trim() || undefined``; corpus
    ``hand-session-name-clear``): the latest entry decides, its name trimmed as
    JavaScript trims, and an empty name clears the title. A file with no such entry
    takes the ``title`` of oh-my-pi's title slot (``_reader.is_title_slot``), trimmed
    likewise: the slot counts as a name set before the first entry.

    Args:
        latest_session_info: the latest ``session_info`` entry, or ``None``.
        title_slot: the title slot object, or ``None``.

    Returns:
        The trimmed name if it is a non-empty string, else ``None``.
    """
    if latest_session_info is None:
        name = title_slot.get("title") if isinstance(title_slot, dict) else None
    else:
        name = latest_session_info.get("name")
    return (trim(name) or None) if isinstance(name, str) else None


def agent_core_label(label: Any) -> str | None:
    """A target's label as agent-core's storages give it (``packages/agent/src/harness/
    session/jsonl-storage.ts`` ``updateLabelCache``: the latest ``label`` entry's
    ``label?.trim()`` sets it when not empty, else clears it).

    Args:
        label: the target's label by :func:`apply_labels` (the latest truthy one, or
            ``None``). Trimming after that gives agent-core's answer: a later label that
            trims to empty is truthy there, so it is the one seen here.

    Returns:
        The label trimmed as JavaScript trims, ``None`` if that is empty or it is not a
        string.
    """
    return (trim(label) or None) if isinstance(label, str) else None
