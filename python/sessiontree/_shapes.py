"""Pi's header and entry shapes, key order included: the one place lines are built.

Pi writes each line with ``JSON.stringify`` of an object literal (session-manager.ts
``newSession``, ``append*``, ``createBranchedSession``, ``forkFrom``), so the key order
of a line is the order of that literal, and keys whose value is ``undefined`` are left
out. The builders here return dicts in that order; a field given as
:data:`~sessiontree._js.UNDEFINED` is left out. Every writer — the manager, forks and
branched sessions, the generator, the importers — builds its lines here, and
:func:`sessiontree._jsonl.encode_entry` turns them into bytes.

Order: ``type, id, parentId, timestamp`` then the type's fields, except ``custom`` and
``custom_message``, where Pi's literal puts ``customType`` and the payload first and
``id, parentId, timestamp`` last.
"""

from __future__ import annotations

from typing import Any

import re

from ._js import UNDEFINED, trim
from ._reader import CURRENT_VERSION

__all__ = ["header", "entry", "session_name", "uuid7"]

# Types whose literal starts with the payload (appendCustomEntry, appendCustomMessageEntry).
_PAYLOAD_FIRST = frozenset({"custom", "custom_message"})


def header(session_id: str, timestamp: str, cwd: str, parent_session: Any = UNDEFINED,
           metadata: Any = UNDEFINED) -> dict[str, Any]:
    """A session header: ``{"type":"session","version":3,"id","timestamp","cwd","parentSession"?,
    "metadata"?}``.

    Args:
        session_id: the session id (a UUID v7 from Pi).
        timestamp: ISO-8601 UTC with milliseconds.
        cwd: the working directory.
        parent_session: path of the session this one was forked from; left out when
            ``UNDEFINED`` or ``None``.
        metadata: agent-core's header ``metadata`` (an object the host keeps with the
            session, ``jsonl-storage.ts``); left out when ``UNDEFINED`` or ``None``.
    """
    h: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id,
        "timestamp": timestamp,
        "cwd": cwd,
    }
    if parent_session is not UNDEFINED and parent_session is not None:
        h["parentSession"] = parent_session
    if metadata is not UNDEFINED and metadata is not None:
        h["metadata"] = metadata
    return h


def entry(etype: str, entry_id: str, parent_id: str | None, timestamp: str, **fields: Any) -> dict[str, Any]:
    """An entry in Pi's key order.

    Args:
        etype: the entry type.
        entry_id: its id.
        parent_id: its parent's id, ``None`` for a root.
        timestamp: ISO-8601 UTC with milliseconds.
        **fields: the type's fields, in Pi's order (keyword order is kept); a value of
            ``UNDEFINED`` is left out, as ``JSON.stringify`` drops ``undefined``.

    Returns:
        The entry dict.
    """
    payload = {k: v for k, v in fields.items() if v is not UNDEFINED}
    if etype in _PAYLOAD_FIRST:
        e: dict[str, Any] = {"type": etype}
        e.update(payload)
        e["id"] = entry_id
        e["parentId"] = parent_id
        e["timestamp"] = timestamp
        return e
    e = {"type": etype, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
    e.update(payload)
    return e



_CRLF_RUNS = re.compile(r"[\r\n]+")


def session_name(name: str) -> str:
    """A session name as Pi 0.99's ``appendSessionInfo`` stores it: runs of CR/LF become
    one space, then JavaScript's ``trim``."""
    return trim(_CRLF_RUNS.sub(" ", name))


def uuid7(ms: int, rand_a: int, rand_b: int) -> str:
    """A UUID version 7 string (RFC 9562), as Pi's session ids are.

    Args:
        ms: Unix time in milliseconds (48 bits are used).
        rand_a: 12 random bits.
        rand_b: 62 random bits.
    """
    value = ((ms & ((1 << 48) - 1)) << 80) | (0x7 << 76) | ((rand_a & 0xFFF) << 64) | (0b10 << 62) | (rand_b & ((1 << 62) - 1))
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
