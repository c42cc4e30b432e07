"""What each table row says about one decoded entry: the rules of the text, usage,
image and tool-call columns (docs/TABLES.md), in plain Python (no Arrow here).

Every value read from an entry may be any JSON type: strings are taken only where
they are strings, numbers only where they are numbers (never ``bool``), and every
string is cut to its column's limit at a UTF-8 character boundary, the full length
kept beside the long ones (``text_bytes``, ``arguments_bytes``, ``result_bytes``).
Lone surrogates (which ``json.loads`` keeps) become U+FFFD, one per byte of their
``surrogatepass`` form, as the core does for ids.
"""

from __future__ import annotations

import binascii
import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from .schema import blob_sha256

__all__ = [
    "MAX_TEXT",
    "MAX_RESULT",
    "MAX_ARGUMENTS",
    "MAX_FIELD",
    "ENTRY_FIELDS",
    "NOT_BASE64",
    "NO_DATA",
    "Call",
    "Result",
    "cut",
    "entry_fields",
    "calls_of",
    "result_of",
    "image_stub",
    "arguments_texts",
]

MAX_TEXT = 64 << 10
"""Most UTF-8 bytes of ``entries.text``."""
MAX_RESULT = 4 << 10
"""Most UTF-8 bytes of ``tool_calls.result_text``."""
MAX_ARGUMENTS = 16 << 10
"""Most UTF-8 bytes of ``tool_calls.arguments`` (JSON text; cut JSON does not parse:
``arguments_bytes`` says whether it was cut)."""
MAX_FIELD = 4 << 10
"""Most UTF-8 bytes of every other string column (ids, names, paths, models, labels...)."""

_INT64 = 1 << 63


def _clean(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")


def cut(s: str, limit: int) -> tuple[str, int]:
    """``s`` cut to at most ``limit`` UTF-8 bytes at a character boundary, and the
    length in bytes of the whole (after lone surrogates became U+FFFD)."""
    if s.isascii():
        n = len(s)
        return (s if n <= limit else s[:limit]), n
    try:
        b = s.encode("utf-8")
        clean = True
    except UnicodeEncodeError:
        b, clean = _clean(s), False
    n = len(b)
    if n > limit:
        return b[:limit].decode("utf-8", "ignore"), n
    return (s if clean else b.decode("utf-8")), n


def field(value: Any) -> str | None:
    """A short string column's value: ``value`` if it is a string (cut to
    :data:`MAX_FIELD`), else ``None``."""
    if type(value) is not str:
        return None
    if len(value) <= MAX_FIELD // 4 and value.isascii():
        return value
    return cut(value, MAX_FIELD)[0]


def integer(value: Any) -> int | None:
    """A token count: an int (or an integral float) within int64, else ``None``."""
    if type(value) is int:
        return value if -_INT64 <= value < _INT64 else None
    if type(value) is float and value.is_integer() and -_INT64 <= value < _INT64:
        return int(value)
    return None


def number(value: Any) -> float | None:
    """A cost: an int or float whose float is finite, else ``None``."""
    if type(value) is int or type(value) is float:
        try:
            f = float(value)
        except OverflowError:  # an int past the largest float
            return None
        return f if math.isfinite(f) else None
    return None


def _blocks(content: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """The texts of the text blocks of ``content`` (a string is one) and its images."""
    if type(content) is str:
        return [content], []
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    if type(content) is list:
        for block in content:
            if type(block) is not dict:
                continue
            kind = block.get("type")
            if kind == "text":
                t = block.get("text")
                if type(t) is str:
                    texts.append(t)
            elif kind == "image":
                data = block.get("data")
                images.append(image_stub(_clean(data) if type(data) is str else None, field(block.get("mimeType"))))
    return texts, images


NOT_BASE64 = "not_base64"
"""``images.problem`` of an image block whose ``data`` does not decode as base64
(``binascii.a2b_base64``, non-strict: a wrong length or padding)."""
NO_DATA = "no_data"
"""``images.problem`` of an image block whose ``data`` is absent or not a string."""


def image_stub(data: bytes | None, mime: str | None) -> dict[str, Any]:
    """``{sha256, bytes, mime, problem}`` of an image block whose ``data`` is ``data``
    (its UTF-8 bytes; ``None``: absent or not a string) and ``mimeType`` ``mime``: the
    hash and length of the bytes the base64 decodes to (``binascii.a2b_base64``,
    non-strict: characters outside the alphabet are skipped), and ``problem`` null. A
    block whose data does not decode (:data:`NOT_BASE64`) or is not a string
    (:data:`NO_DATA`) keeps its place with ``sha256`` and ``bytes`` null and the problem
    named: its entry and session are exported all the same (docs/TABLES.md, "Bad
    blocks"). Both backends' images come here (the native core gives ``data`` as
    bytes). oh-my-pi's blob reference (``blob:sha256:<hex>``, :func:`~sessiontree.schema.blob_sha256`)
    gives the hash it names, no length (the bytes are not in the file) and no problem."""
    digest = size = None
    problem: str | None = NO_DATA
    blob = blob_sha256(data.decode("ascii")) if data is not None and data.isascii() else None
    if blob is not None:
        digest, problem = blob, None
    elif data is not None:
        try:
            raw = binascii.a2b_base64(data)  # not strict (the default; no strict_mode before 3.11)
        except binascii.Error:
            problem = NOT_BASE64
        else:
            digest, size, problem = hashlib.sha256(raw).hexdigest(), len(raw), None
    return {"sha256": digest, "bytes": size, "mime": mime, "problem": problem}


def _joined(texts: list[str], limit: int) -> tuple[str | None, int | None]:
    if not texts:
        return None, None
    return cut(texts[0] if len(texts) == 1 else "\n".join(texts), limit)


ENTRY_FIELDS = (
    "type", "role", "provider", "model", "stop_reason", "text", "text_bytes", "images",
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens", "cost",
    "custom_type", "label", "target_id", "first_kept_entry_id", "tokens_before", "is_error",
)  # fmt: skip
"""The ``entries`` columns :func:`entry_fields` gives, in its tuple's order."""

_NO_USAGE = (None, None, None, None, None, None)


def _usage(u: Any) -> tuple[Any, ...]:
    if type(u) is not dict:
        return _NO_USAGE
    c = u.get("cost")
    cost = number(c.get("total")) if type(c) is dict else number(c)
    return (integer(u.get("input")), integer(u.get("output")), integer(u.get("cacheRead")),
            integer(u.get("cacheWrite")), integer(u.get("totalTokens")), cost)  # fmt: skip


def entry_fields(e: Any) -> tuple[Any, ...]:
    """The values of :data:`ENTRY_FIELDS` for one decoded entry.

    Rules (docs/TABLES.md): a ``message``'s role, provider, model, stopReason, usage,
    customType (role ``custom``) and isError (role ``toolResult``) come from its
    ``message``; its text is the text blocks of ``content`` joined by ``\\n`` (string
    content is one block; ``bashExecution``: its ``output``); images become stubs. A
    ``custom_message`` gives customType, text and images of its content; ``compaction``
    and ``branch_summary`` their summary as text, their usage, and firstKeptEntryId /
    tokensBefore; ``model_change`` provider and modelId; ``usage`` provider, model and
    usage; ``label`` targetId and label; ``context_edit`` and ``leaf`` targetId;
    ``custom`` customType.
    """
    if type(e) is not dict:
        e = {}
    etype = e.get("type")
    role = provider = model = stop = custom = label = target = first_kept = None
    tokens_before = is_error = None
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    usage = _NO_USAGE
    if etype == "message":
        m = e.get("message")
        if type(m) is dict:
            role = m.get("role")
            provider, model, stop = m.get("provider"), m.get("model"), m.get("stopReason")
            usage = _usage(m.get("usage"))
            if role == "bashExecution":
                out = m.get("output")
                texts = [out] if type(out) is str else []
            else:
                texts, images = _blocks(m.get("content"))
            if role == "custom":
                custom = m.get("customType")
            elif role == "toolResult":
                flag = m.get("isError")
                is_error = flag if type(flag) is bool else None
    elif etype == "custom_message":
        custom = e.get("customType")
        texts, images = _blocks(e.get("content"))
    elif etype == "compaction" or etype == "branch_summary":
        summary = e.get("summary")
        texts = [summary] if type(summary) is str else []
        usage = _usage(e.get("usage"))
        if etype == "compaction":
            first_kept = e.get("firstKeptEntryId")
            tokens_before = integer(e.get("tokensBefore"))
    elif etype == "model_change":
        provider, model = e.get("provider"), e.get("modelId")
    elif etype == "usage":
        provider, model = e.get("provider"), e.get("model")
        usage = _usage(e.get("usage"))
    elif etype == "label":
        target, label = e.get("targetId"), e.get("label")
    elif etype == "context_edit" or etype == "leaf":
        target = e.get("targetId")
    elif etype == "custom":
        custom = e.get("customType")
    text, text_bytes = _joined(texts, MAX_TEXT)
    return (field(etype), field(role), field(provider), field(model), field(stop), text, text_bytes,
            images, *usage, field(custom), field(label), field(target), field(first_kept),
            tokens_before, is_error)  # fmt: skip


@dataclass
class Call:
    """One tool call of an assistant message (a ``toolCall`` content block)."""

    entry: int  # entry number of the assistant message
    call_id: str | None
    tool_name: str | None
    arguments: str | None
    arguments_bytes: int | None


@dataclass
class Result:
    """A ``toolResult`` message: what its tool call is joined with."""

    entry: int
    is_error: bool | None
    text: str | None
    text_bytes: int | None
    images: list[dict[str, Any]]


def _ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in " \t\n\r":
        i += 1
    return i


_SPECIAL = re.compile(r'["\[\]{}]')
_SCALAR_END = re.compile(r"[,}\] \t\n\r]")


def _skip(s: str, i: int) -> int:
    """One past the JSON value that starts at ``s[i]`` (``s`` valid JSON)."""
    c = s[i : i + 1]
    if c == '"':
        return scanstring(s, i + 1, False)[1]  # type: ignore[no-any-return]
    if c == "{" or c == "[":
        depth = 0
        while (m := _SPECIAL.search(s, i)) is not None:
            i = m.start()
            if s[i] == '"':
                i = scanstring(s, i + 1, False)[1]
                continue
            depth += 1 if s[i] in "{[" else -1
            i += 1
            if depth == 0:
                return i
        return len(s)
    m = _SCALAR_END.search(s, i)
    return m.start() if m else len(s)


def _member(s: str, span: tuple[int, int] | None, key: str) -> tuple[int, int] | None:
    """The span of the last ``key`` member's value of the object at ``span``."""
    if span is None or s[span[0] : span[0] + 1] != "{":
        return None
    found = None
    i = _ws(s, span[0] + 1)
    while s[i : i + 1] == '"':
        k, j = scanstring(s, i + 1, False)
        v = _ws(s, _ws(s, j) + 1)
        end = _skip(s, v)
        if k == key:
            found = (v, end)
        i = _ws(s, end)
        if s[i : i + 1] != ",":
            break
        i = _ws(s, i + 1)
    return found


def _elements(s: str, span: tuple[int, int] | None) -> list[tuple[int, int]]:
    if span is None or s[span[0] : span[0] + 1] != "[":
        return []
    out: list[tuple[int, int]] = []
    i = _ws(s, span[0] + 1)
    if s[i : i + 1] == "]":
        return out
    while i < len(s):
        end = _skip(s, i)
        out.append((i, end))
        i = _ws(s, end)
        if s[i : i + 1] != ",":
            break
        i = _ws(s, i + 1)
    return out


def arguments_texts(line: str) -> list[str | None]:
    """Per element of ``message.content`` of the entry whose JSON text is ``line``: the
    JSON text of its ``arguments`` as the line holds it (``None``: not an object, or no
    such key). The last duplicate of a key counts, as ``json.loads`` keeps it."""
    content = _member(line, _member(line, (_ws(line, 0), len(line)), "message"), "content")
    out: list[str | None] = []
    for a, _ in _elements(line, content):
        span = _member(line, (a, 0), "arguments")
        out.append(None if span is None else line[span[0] : span[1]])
    return out


def calls_of(e: Any, entry: int, raw_line: Callable[[], bytes | None]) -> list[Call]:
    """The tool calls of an assistant ``message`` entry (none for any other entry).
    ``raw_line`` gives the entry's JSON text: ``arguments`` is taken as it stands there."""
    m = e.get("message") if type(e) is dict and e.get("type") == "message" else None
    if type(m) is not dict or m.get("role") != "assistant" or type(m.get("content")) is not list:
        return []
    out = []
    texts: list[str | None] | None = None
    for k, block in enumerate(m["content"]):
        if type(block) is dict and block.get("type") == "toolCall":
            args: tuple[str | None, int | None] = (None, None)
            if "arguments" in block:
                if texts is None:
                    raw = raw_line() or b""
                    texts = arguments_texts(raw.decode("utf-8", "replace"))
                text = texts[k] if k < len(texts) else None
                if text is not None:
                    args = cut(text, MAX_ARGUMENTS)
            out.append(Call(entry, field(block.get("id")), field(block.get("name")), *args))
    return out


def result_of(e: Any, entry: int) -> tuple[str, Result] | None:
    """``(toolCallId, result)`` of a ``toolResult`` message entry, else ``None``."""
    m = e.get("message") if type(e) is dict and e.get("type") == "message" else None
    if type(m) is not dict or m.get("role") != "toolResult" or type(m.get("toolCallId")) is not str:
        return None
    texts, images = _blocks(m.get("content"))
    flag = m.get("isError")
    text, n = _joined(texts, MAX_RESULT)
    return field(m["toolCallId"]) or "", Result(entry, flag if type(flag) is bool else None, text, n, images)
