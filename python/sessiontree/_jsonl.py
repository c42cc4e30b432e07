"""JSONL framing, decoding and JavaScript-compatible encoding of session lines.

Three pure building blocks shared by both backends, the loader, the migration and the
writer (see ``docs/ARCHITECTURE.md``, "Decoding" and "Encoding"):

* :func:`iter_lines` — frame an image into physical lines (``\\n`` only).
* :func:`decode_line` / :func:`decode_line_ex` — exactly ``json.loads`` of one line, with
  ``NaN``/``Infinity``/``-Infinity`` literals rejected, fast where orjson is exact.
* :func:`encode_entry` — exactly the bytes JavaScript's ``JSON.stringify`` prints for the
  same value (Pi writes every line with ``JSON.stringify``, session-manager.ts
  ``_persist``/``_appendEntry``).

Limits:
    Nesting: :func:`decode_line` accepts at most :data:`MAX_DEPTH` (1024) nested
    arrays/objects, orjson's limit, on every path, so the result never depends on the
    Python stack depth of the caller. :func:`encode_entry` has no depth limit (its
    fallback encoder is iterative; tested at 100,000 levels).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from json.encoder import encode_basestring as _c_encode_basestring  # type: ignore[attr-defined]
from typing import Any

from ._orjson import orjson

from ._js import number_text, scalar_text

__all__ = [
    "BOM",
    "MAX_DEPTH",
    "iter_lines",
    "is_blank",
    "decode_line",
    "decode_line_ex",
    "depth_exceeds",
    "values_equal",
    "copy_value",
    "object_end",
    "has_invalid_utf8",
    "encode_entry",
    "encode_line",
    "js_string",
]

BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark; the loader skips it at byte 0 (ARCHITECTURE rule 1)."""

MAX_DEPTH = 1024
"""Deepest nesting of arrays/objects :func:`decode_line` accepts (orjson's limit)."""


# --------------------------------------------------------------------------- framing


def iter_lines(
    data: bytes | bytearray | Any, start: int = 0, first_line: int = 1
) -> Iterator[tuple[int, int, bytes, bool]]:
    """Split an image into physical lines on ``b"\\n"`` only.

    Pi splits on ``"\\n"`` only (session-manager.ts ``loadEntriesFromFile``); U+2028,
    U+0085, ``\\x0b`` etc. occur raw inside lines and must not break them.

    Args:
        data: the image. Anything with ``find`` and slicing that yields ``bytes``
            (``bytes``, ``bytearray``, ``mmap.mmap``).
        start: byte offset to start at (e.g. ``image_len`` for a refresh). Must be the
            first byte of a line.
        first_line: the 1-based line number of the line starting at ``start``.

    Yields:
        ``(line_no, offset, content, is_tail)``: ``line_no`` 1-based; ``offset`` the
        0-based byte offset of the line's first byte in ``data``; ``content`` the
        line's bytes without the ``\\n`` and without one ``\\r`` right before it;
        ``is_tail`` true only for a final piece that has no ``\\n`` (its ``\\r``, if
        any, is kept: it is not yet a line ending). A ``data`` ending in ``\\n`` has no
        tail; an empty piece after the last ``\\n`` is not yielded. The line after this
        one starts at ``offset + len(content) + 1 (+1 if a CR was stripped)``; for the
        tail nothing follows.
    """
    find = data.find
    end = len(data)
    pos = start
    line_no = first_line
    while pos < end:
        nl = find(b"\n", pos)
        if nl < 0:
            yield line_no, pos, bytes(data[pos:end]), True
            return
        stop = nl - 1 if nl > pos and data[nl - 1] == 13 else nl
        yield line_no, pos, bytes(data[pos:stop]), False
        pos = nl + 1
        line_no += 1


def is_blank(raw: bytes) -> bool:
    """True when a line holds only spaces, tabs and CRs (skipped silently, rule 2).

    Pi skips ``!line.trim()`` lines; JS ``trim`` removes more (e.g. U+FEFF, NBSP), but
    such lines are not valid JSON either, so they are reported as invalid instead.
    """
    return not raw.strip(b" \t\r")


# -------------------------------------------------------------------------- decoding

# Maps ASCII digits to b"0", "." to itself and everything else to b" ": a run of 19
# digits that does not follow a "." is then a substring search, ~15x faster than a regex
# over multi-megabyte lines. Fraction digits are excluded because costs such as
# 0.0009390000000000001 are common and orjson reads every float exactly; only an integer
# token (never preceded by ".") can exceed 64 bits.
_DIGIT_TABLE = bytes(0x30 if 0x30 <= i <= 0x39 else 0x2E if i == 0x2E else 0x20 for i in range(256))
_DIGITS19 = b" " + b"0" * 19


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def depth_exceeds(obj: Any, limit: int) -> bool:
    """Whether ``obj`` nests arrays/objects more than ``limit`` deep (``obj`` itself is
    level 1). Iterative: a value may be deeper than the C stack allows recursing over."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return False


def values_equal(a: Any, b: Any) -> bool:
    """``a == b`` for decoded JSON values (dicts, lists, scalars), at any depth.

    Python's ``==`` recurses once per level against the interpreter's recursion limit
    (1,000 by default), below the :data:`MAX_DEPTH` levels a line may nest: equal
    values 990 levels deep raised ``RecursionError``. This walks both values with a
    stack instead; scalars, and containers of other types, compare with ``==``.
    """
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((v, y[k]) for k, v in x.items())
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, (dict, list)) or isinstance(y, (dict, list)):
            return False
        elif x != y:
            return False
    return True


def copy_value(value: Any) -> Any:
    """A deep copy of a decoded JSON value (dicts and lists copied, everything else
    shared), at any depth: ``copy.deepcopy`` recurses twice per level against the
    interpreter's limit, so it failed on values of ~500 levels that a line holds."""
    if not isinstance(value, (dict, list)):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        src, dst = stack.pop()
        if isinstance(src, dict):
            for k, v in src.items():
                if isinstance(v, (dict, list)):
                    dst[k] = {} if isinstance(v, dict) else []
                    stack.append((v, dst[k]))
                else:
                    dst[k] = v
        else:
            for v in src:
                if isinstance(v, (dict, list)):
                    dst.append({} if isinstance(v, dict) else [])
                    stack.append((v, dst[-1]))
                else:
                    dst.append(v)
    return root


# CPython's default limit on integer digits (PEP 651's int_max_str_digits). Applied as a
# fixed rule, whatever sys.set_int_max_str_digits says in this process, so that which
# lines are valid does not depend on a process setting (the Rust core uses it too).
MAX_INT_DIGITS = 4300
_SAFE_DIGITS = 640  # the lowest limit a process may set: int() below it never refuses


def _parse_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) <= _SAFE_DIGITS:
        return int(text)
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(digits)} digits (more than {MAX_INT_DIGITS})")
    value = 0
    for i in range(0, len(digits), _SAFE_DIGITS):
        chunk = digits[i : i + _SAFE_DIGITS]
        value = value * 10 ** len(chunk) + int(chunk)
    return -value if text.startswith("-") else value


@contextmanager
def _stack_for_depth() -> Iterator[None]:
    # json's C scanner recurses once per nesting level against the interpreter's
    # recursion limit; leave room for MAX_DEPTH whatever our caller's depth is (the
    # callers enforce MAX_DEPTH themselves so that every path agrees).
    old_limit = sys.getrecursionlimit()
    need = MAX_DEPTH + 200 + _stack_depth()
    if old_limit < need:
        sys.setrecursionlimit(need)
    try:
        yield
    finally:
        if old_limit < need:
            sys.setrecursionlimit(old_limit)


def _slow_decode(raw: bytes) -> tuple[Any, bool]:
    try:
        text = raw.decode("utf-8")
        replaced = False
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        replaced = True
    try:
        with _stack_for_depth():
            obj = json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)
    except RecursionError:
        raise ValueError(f"nesting deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # JSONDecodeError is a ValueError
        raise ValueError(str(e)) from None
    if (raw.count(b"[") + raw.count(b"{")) > MAX_DEPTH and depth_exceeds(obj, MAX_DEPTH):
        raise ValueError(f"nesting deeper than {MAX_DEPTH} levels")
    return obj, replaced


_SCANNER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int)


def object_end(text: str, pos: int) -> int | None:
    """Where the JSON object that starts at ``text[pos]`` ends, whatever follows it.

    Args:
        text: a line's bytes decoded as Latin-1 (one character per byte, so positions
            are byte offsets; a non-ASCII byte is never JSON syntax, and inside a
            string it is a character the scanner accepts as it accepts any UTF-8).
        pos: where the object's ``{`` is.

    Returns:
        The position after its closing ``}``, or ``None`` when no object that
        ``json.loads`` would accept starts there (``NaN`` / ``Infinity`` literals and
        integers of more than 4,300 digits rejected). Nesting deeper than
        :data:`MAX_DEPTH` is the caller's to reject (:func:`decode_line_ex` of the
        object's bytes does). ``src/scan.rs`` ``validate_prefix`` is the same rule.
    """
    if not text.startswith("{", pos):
        return None
    try:
        with _stack_for_depth():
            end: int = _SCANNER.raw_decode(text, pos)[1]
    except (ValueError, RecursionError):
        return None
    return end


def _stack_depth() -> int:
    f: FrameType | None = sys._getframe()
    n = 0
    while f is not None:
        n += 1
        f = f.f_back
    return n


def decode_line_ex(raw: bytes | bytearray | memoryview | str, *, long_numbers: bool | None = None) -> tuple[Any, bool]:
    """Decode one line as ``json.loads`` does, and say whether UTF-8 was repaired.

    orjson is used where it is exact. A line with a run of 19 or more ASCII digits not
    after a ``.`` (a possible integer beyond 64 bits, which orjson turns into a float) or that orjson
    rejects (lone surrogate escapes, ``1e400``, invalid UTF-8, BOM, ...) is decoded
    with ``raw.decode("utf-8", "replace")`` + ``json.loads`` instead.

    Args:
        raw: the line's bytes (no line ending needed; surrounding JSON whitespace is
            allowed), or an already decoded ``str``.
        long_numbers: whether a *number* of the line has such a run, when the caller
            knows (the native index's scanner sees every number:
            ``Index.long_numbers``); ``None`` looks for runs anywhere in the line, a
            pass over its bytes (~20% of a decode of Pi lines).

    Returns:
        ``(value, replaced)``: ``value`` equals ``json.loads`` of the line (big ints
        exact, lone surrogates kept, ``1e400`` -> ``inf``, ``-0`` -> ``0``, last of
        duplicate keys wins at the first key's position); ``replaced`` is true when
        invalid UTF-8 was replaced by U+FFFD (WHATWG / ``from_utf8_lossy`` rules).

    Raises:
        ValueError: not valid JSON, including the ``NaN``, ``Infinity`` and
            ``-Infinity`` literals (Pi's ``JSON.parse`` rejects them too) and nesting
            deeper than :data:`MAX_DEPTH`.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    elif not isinstance(raw, bytes):
        raw = bytes(raw)
    if long_numbers is None:
        digits = raw.translate(_DIGIT_TABLE)
        long_numbers = _DIGITS19 in digits or digits.startswith(_DIGITS19[1:])
    if not long_numbers:
        try:
            return orjson.loads(raw), False
        except orjson.JSONDecodeError as e:
            if "depth limit" in str(e):
                raise ValueError(f"nesting deeper than {MAX_DEPTH} levels") from None
    return _slow_decode(raw)


def decode_line(raw: bytes | bytearray | memoryview | str, *, long_numbers: bool | None = None) -> Any:
    """Decode one line: equal to ``json.loads`` of it, ``NaN``/``Infinity`` rejected.

    See :func:`decode_line_ex` for the rules; this variant drops the UTF-8 flag.

    Args:
        raw: the line's bytes (or ``str``).
        long_numbers: as for :func:`decode_line_ex`.

    Returns:
        The decoded value (any JSON type; the loader checks it is an object).

    Raises:
        ValueError: the line is not valid JSON.
    """
    return decode_line_ex(raw, long_numbers=long_numbers)[0]


def has_invalid_utf8(raw: bytes) -> bool:
    """True when ``raw`` is not valid UTF-8 (the loader reports ``invalid_utf8``).

    Args:
        raw: a line's bytes.

    Returns:
        Whether ``raw.decode("utf-8")`` would fail.
    """
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# -------------------------------------------------------------------------- encoding


_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _join_pair(m: re.Match[str]) -> str:
    hi, lo = m.group()[0], m.group()[1]
    return chr(0x10000 + ((ord(hi) - 0xD800) << 10) + (ord(lo) - 0xDC00))


def _escape_lone(m: re.Match[str]) -> str:
    return "\\u%04x" % ord(m.group())


def js_string(s: str) -> str:
    """Quote a string as ``JSON.stringify`` does (well-formed JSON.stringify, ES2019).

    Escapes only ``"``, ``\\`` and U+0000-U+001F (``\\b \\f \\n \\r \\t``, else
    lowercase ``\\u00xx``); everything else raw, U+2028/U+2029 included. A lone UTF-16
    surrogate becomes lowercase ``\\udxxx``; a high+low surrogate pair held as two
    Python characters is what JavaScript sees as one character, so it is written raw.

    Args:
        s: the string.

    Returns:
        The quoted JSON string (a ``str``; encodable as strict UTF-8).
    """
    out = _c_encode_basestring(s)  # same escape set, lowercase hex
    if _SURROGATE.search(out):
        out = _SURROGATE.sub(_escape_lone, _PAIR.sub(_join_pair, out))
    return out


def _key(k: Any) -> str:
    # JavaScript property keys are strings: String(key).
    text = scalar_text(k)
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")
    return text


def _scalar(v: Any) -> str | None:
    # JSON text of a scalar: strings quoted, non-finite numbers null (JSON.stringify).
    if isinstance(v, str):
        return js_string(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "null"
    return scalar_text(v)


def _encode_slow(obj: Any) -> str:
    """Iterative JSON.stringify (no recursion: any depth, limited by memory)."""
    parts: list[str] = []
    append = parts.append
    # Each frame: [iterator, is_dict, first, id]
    stack: list[list[Any]] = []
    active: set[int] = set()
    value = obj
    while True:
        s = _scalar(value)
        if s is not None:
            append(s)
        elif isinstance(value, dict):
            if not value:
                append("{}")
            else:
                if id(value) in active:
                    raise ValueError("circular reference")
                active.add(id(value))
                append("{")
                stack.append([iter(value.items()), True, True, id(value)])
        elif isinstance(value, (list, tuple)):
            if not value:
                append("[]")
            else:
                if id(value) in active:
                    raise ValueError("circular reference")
                active.add(id(value))
                append("[")
                stack.append([iter(value), False, True, id(value)])
        else:
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        # Find the next value to write.
        while stack:
            frame = stack[-1]
            item = next(frame[0], _END)
            if item is _END:
                append("}" if frame[1] else "]")
                active.discard(frame[3])
                stack.pop()
                continue
            if frame[2]:
                frame[2] = False
            else:
                append(",")
            if frame[1]:
                key: Any = item[0]  # type: ignore[index]  # a (key, value) pair of dict.items()
                value = item[1]  # type: ignore[index]
                append(js_string(_key(key)))
                append(":")
            else:
                value = item
            break
        else:
            return "".join(parts)


_END = object()

# orjson handles the common case in C. Its string escaping equals JSON.stringify's
# (tested over every code point); it refuses lone surrogates, ints beyond 64 bits,
# non-str keys and depth > 255, which the slow path handles. Only its float spelling
# differs (5.0, -0.0, 1e+16, 1e-5...), so float tokens are respelt below.
_ORJSON_OPTS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def _may_differ(out: bytes) -> bool:
    """Could orjson's text hold a float JavaScript spells differently?

    orjson prints shortest round-trip digits like JavaScript, in fixed notation for
    1e-5 <= |x| < 1e16 and exponent notation (``1e-7``, ``1e+21``) elsewhere. The only
    differences (checked over 500,000 random doubles and every power of ten) are an
    integral ``X.0`` (JS ``X``), ``-0.0`` (JS ``0``), ``e-6`` (JS ``0.00000X``) and
    ``e+16``..``e+20`` (JS plain digits). A byte search for those shapes is cheap; a
    hit inside a string only costs the exact scan below.
    """
    return (
        b".0," in out
        or b".0}" in out
        or b".0]" in out
        or out.endswith(b".0")
        or b"e-6" in out
        or b"e+1" in out
        or b"e+2" in out
    )

# One match per float token: group 1 swallows everything before it (whole strings,
# punctuation, ints) without giving any of it back, group 2 is the float, or the end of
# the text. Work is linear in the output and Python runs once per float, not once per
# string. "Without giving back" is a lookahead's capture then matched again by reference
# (a possessive `*+` would do it from Python 3.11 only).
_FLOAT_SCAN = re.compile(
    rb'(?=((?:"[^"\\]*(?:\\.[^"\\]*)*"|[^"0-9-]+|-?[0-9]+(?![0-9.eE]))*))\1'
    rb"(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|\Z)"
)


def _respell(m: re.Match[bytes]) -> bytes:
    head, tok = m.group(1, 2)
    if not tok:
        return head
    return head + number_text(float(tok)).encode("ascii")


def encode_entry(obj: Any) -> bytes:
    """Serialise a value exactly as JavaScript's ``JSON.stringify(obj)`` would.

    Pi writes each line with ``JSON.stringify(entry)`` (session-manager.ts). Rules:
    dict insertion order, ``,``/``:`` separators, strings as :func:`js_string`,
    numbers as :func:`js_number` (ints as exact digits, floats as JavaScript spells
    them, NaN/±inf -> ``null``), ``None`` -> ``null``, tuples as arrays. Non-str keys
    become ``String(key)``. Unset optional keys must simply not be in the dict (there
    is no ``undefined``).

    Args:
        obj: a JSON-like value (dict / list / tuple / str / int / float / bool / None),
            nested to any depth.

    Returns:
        UTF-8 bytes without a trailing newline.

    Raises:
        TypeError: a value of another type.
        ValueError: a circular reference (JavaScript throws a TypeError).
    """
    try:
        out = orjson.dumps(obj, option=_ORJSON_OPTS)
    except (TypeError, orjson.JSONEncodeError):
        return _encode_slow(obj).encode("utf-8")
    if _may_differ(out):
        out = _FLOAT_SCAN.sub(_respell, out)
    return out


def encode_line(obj: Any) -> bytes:
    """``encode_entry(obj) + b"\\n"``: one whole line ready to append."""
    return encode_entry(obj) + b"\n"
