"""Which agent wrote a JSONL file: the first records that only one format has.

An importer given the other agent's file would find nothing it maps and say "nothing to
import"; it says which importer reads the file instead (``import_claude`` /
``import_codex``), and the command exits non-zero.

* **Pi** (and oh-my-pi): the first object is ``{"type":"session","id":…}`` (after
  oh-my-pi's title slot, ``{"type":"title"}``).
* **Codex** rollouts: ``{"type": "session_meta" | "response_item" | "event_msg" |
  "turn_context" | "compacted", "payload": …}`` (``RolloutLine``); a legacy rollout's
  first line is ``{"id", "timestamp", …}`` with no ``type``.
* **Claude Code** transcripts: records typed ``user``, ``assistant``, ``system``,
  ``summary``, … that carry ``uuid``, ``sessionId`` or ``leafUuid``.
"""

from __future__ import annotations

from typing import Any

from .._jsonl import decode_line, iter_lines
from .._storage import open_regular

__all__ = ["NAMES", "source_kind"]

NAMES = {"claude": "a Claude Code transcript", "codex": "a Codex rollout", "pi": "a Pi session file"}
"""How a message names each kind of file."""

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "progress", "attachment", "file-history-snapshot",
                          "queue-operation", "custom-title", "ai-title", "last-prompt", "agent-name"})
CLAUDE_KEYS = ("uuid", "sessionId", "leafUuid")
_HEAD = 1 << 20  # bytes read: the first records decide
_RECORDS = 50


def _kind(obj: dict[str, Any], first: bool) -> str | None:
    t = obj.get("type")
    if t is not None and not isinstance(t, str):
        return None  # no format's record: a value of the wrong type tells nothing
    if first and t == "session" and isinstance(obj.get("id"), str):
        return "pi"
    if t in CODEX_TYPES and "payload" in obj:
        return "codex"
    if first and t is None and isinstance(obj.get("id"), str) and "timestamp" in obj:
        return "codex"  # a legacy rollout's first line
    if t in CLAUDE_TYPES and any(k in obj for k in CLAUDE_KEYS):
        return "claude"
    return None


def source_kind(path: str) -> str | None:
    """``"claude"``, ``"codex"`` or ``"pi"`` for the format of the file's first
    records, ``None`` when none of them tells (an empty or foreign file).

    Raises:
        OSError: the file cannot be read.
    """
    with open_regular(path) as f:
        data = f.read(_HEAD)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    seen = 0
    first = True
    for _n, _off, raw, tail in iter_lines(data):
        if tail and len(data) == _HEAD:
            break  # cut by the read
        if not raw.strip():
            continue
        try:
            obj = decode_line(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if first and obj.get("type") == "title":
            continue  # oh-my-pi's title slot before a Pi header
        kind = _kind(obj, first)
        first = False
        if kind is not None:
            return kind
        seen += 1
        if seen >= _RECORDS:
            break
    return None
