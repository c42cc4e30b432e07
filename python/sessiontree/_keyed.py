"""One Pi session file per key, for the framework stores (``sessiontree.agents``,
``sessiontree.langgraph``): the file name a key gets and the key a name holds.

A framework names its conversations by a key it chooses (an Agents SDK ``session_id``,
a LangGraph ``thread_id`` and ``checkpoint_ns``). The file of a key is found by name,
without an index: the key's UTF-8 bytes with every byte outside ``[A-Za-z0-9_-]`` as
``%XX`` (so no ``/``, ``.`` or NUL reaches the file system and the name reads back
exactly), then ``.jsonl``; a second key part (a namespace) follows an ``@``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_FILE_NAME", "MAX_KEY_NAME", "key_file_name", "keys_of_file_name"]

MAX_KEY_NAME = 200
"""Longest encoded key part (bytes)."""

MAX_FILE_NAME = 255
"""Longest file name (bytes) of the usual file systems: two parts of :data:`MAX_KEY_NAME`
do not fit in one, so the whole name is held to this too."""

_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_NAME = re.compile(r"((?:[A-Za-z0-9_-]|%[0-9A-F]{2})+)(?:@((?:[A-Za-z0-9_-]|%[0-9A-F]{2})+))?\.jsonl")


def _encode(key: str, what: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{what} must be a str, not {type(key).__name__}")
    if not key:
        raise ValueError(f"{what} must not be empty")
    out = "".join(chr(b) if b in _PLAIN else f"%{b:02X}" for b in key.encode("utf-8", "surrogatepass"))
    if len(out) > MAX_KEY_NAME:
        raise ValueError(f"{what} is too long for a file name ({len(out)} bytes encoded, at most {MAX_KEY_NAME})")
    return out


def _decode(part: str) -> str:
    data = bytearray()
    i = 0
    while i < len(part):
        if part[i] == "%":
            data.append(int(part[i + 1 : i + 3], 16))
            i += 3
        else:
            data.append(ord(part[i]))
            i += 1
    return bytes(data).decode("utf-8", "surrogatepass")


def key_file_name(key: str, sub_key: str = "", *, what: str = "key") -> str:
    """The file name of ``key`` (and of ``sub_key`` under it, when not empty).

    Raises:
        TypeError: a key is not a str.
        ValueError: ``key`` is empty, a part encodes to more than :data:`MAX_KEY_NAME`
            bytes, or the name to more than :data:`MAX_FILE_NAME`.
    """
    name = _encode(key, what)
    if sub_key:
        name += "@" + _encode(sub_key, f"the sub-key of {what}")
        if len(name) + len(".jsonl") > MAX_FILE_NAME:
            raise ValueError(f"{what} and its sub-key are too long for a file name together ({len(name)} bytes "
                             f"encoded, at most {MAX_FILE_NAME - len('.jsonl')})")
    return name + ".jsonl"


def keys_of_file_name(name: str) -> tuple[str, str] | None:
    """``(key, sub_key)`` of a name made by :func:`key_file_name` (``sub_key`` ``""``
    when it has none), or ``None`` for any other name."""
    m = _NAME.fullmatch(name)
    if m is None:
        return None
    try:
        return _decode(m.group(1)), _decode(m.group(2)) if m.group(2) else ""
    except UnicodeDecodeError:
        return None
