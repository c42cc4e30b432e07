"""Loader rules 3–6 for one line, and the header: the one reader everything uses.

Framing (rules 1–2: ``\\n`` only, CR stripped, BOM, blank lines) is
:func:`sessiontree._jsonl.iter_lines`; this module says what a framed line *is*:

* :func:`read_value` — rules 3–4: the line's JSON value (``json.loads`` semantics,
  invalid UTF-8 replaced), or the complete object recovered behind a torn fragment.
* :func:`header_problem` / :func:`header_error` — rule 6: the first JSON object must be
  the header (``type == "session"`` with a string ``id``, Pi's ``loadEntriesFromFile``);
  what is wrong otherwise, in the words both backends use.
* :func:`is_old_version` — whether a header asks for migration.
* :func:`scan_header` — rules 1–6 over a file until its header: the header dict, where
  it is, and its version, reading only as far as needed.

The loader (``_load.Loader``), the listing, the migration, ``continue_recent`` and the
command line all read lines and headers through these functions; the native core
applies the same rules in Rust and reports header problems with the codes of
:func:`problem_from_code`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ._js import UNDEFINED
from ._jsonl import BOM, decode_line, decode_line_ex, has_invalid_utf8, is_blank, iter_lines
from .errors import InvalidSessionError

__all__ = [
    "CURRENT_VERSION",
    "MAX_TORN_CANDIDATES",
    "Value",
    "read_value",
    "TORN_SEAL",
    "line_prefix",
    "is_header",
    "header_problem",
    "problem_from_code",
    "header_error",
    "is_old_version",
    "HeaderScan",
    "scan_header",
]

CURRENT_VERSION = 3
"""The session format version Pi writes (``CURRENT_SESSION_VERSION``)."""

MAX_TORN_CANDIDATES = 16
"""How many ``{"type":`` positions rule 4 tries on an invalid line."""

_TORN_MARK = b'{"type":'

TORN_SEAL = b"#"
"""What an append writes after a pending (torn) last piece, before its ``\n``.

A line cut by a crash (or by a full disk) stays pending until something ends it; ended
by a bare ``\n`` it would become a complete line, and rule 4 could then recover a
nested ``{"type":...}`` object of it (a content block, a parsed session line inside a
tool result) as an entry that was never a line of the file. ``#`` is not JSON outside
a string and cannot close one, so neither the line nor any suffix of it can parse:
the fragment is reported ``invalid_json`` and nothing more. (``src/lines.rs``
``TORN_SEAL`` is the same byte.)
"""


def line_prefix(pending: bool, ends_mid_line: bool) -> bytes:
    """The bytes an append writes before its line.

    Args:
        pending: the image ends with a pending (invalid, unterminated) piece.
        ends_mid_line: the image does not end with ``\n`` (a pending or blank last
            piece, or an accepted last line without ``\n``).

    Returns:
        ``TORN_SEAL + b"\n"`` after a pending piece, ``b"\n"`` after any other
        unterminated one, else ``b""``.
    """
    if pending:
        return TORN_SEAL + b"\n"
    return b"\n" if ends_mid_line else b""


@dataclass(frozen=True)
class Value:
    """What rules 3–4 make of one line.

    Attributes:
        value: the JSON value (any type; the caller checks it is an object).
        replaced: invalid UTF-8 was replaced by U+FFFD (rule 3, reported ``invalid_utf8``).
        recovered_at: 0, or the position of the complete object recovered behind a torn
            fragment (rule 4, reported ``torn_fragment``).
    """

    value: Any
    replaced: bool = False
    recovered_at: int = 0


def _is_line_type(value: Any) -> bool:
    """Whether a recovered suffix's ``type`` names one of Pi's entry types (or
    ``session``, a header behind a torn fragment).

    A content block (``text``, ``toolCall``, ``thinking``, ``image``) cut at its end and
    then ended by a bare ``\n`` (Pi 0.84.4+ ends an unterminated last line when it
    loads the file) parses as "a fragment, then an object"; only an entry can have
    been appended behind a torn fragment. Pi itself recovers nothing (an invalid line
    is skipped). ``src/scan.rs`` ``is_line_type`` is the same rule.
    """
    from .schema import ENTRY_TYPES  # here: the schema's many TypedDicts cost a command's start

    return type(value) is str and (value in ENTRY_TYPES or value == "session")


def _recover_torn(content: bytes) -> tuple[int, Any] | None:
    """Rule 4: the first ``{"type":`` at p > 0 (16 tries) whose suffix is an object
    whose ``type`` is an entry type or ``session``."""
    # A suffix can only be a complete object if the line ends with '}'.
    if not content.rstrip(b" \t\r\n").endswith(b"}"):
        return None
    find = content.find
    p = find(_TORN_MARK, 1)
    tries = 0
    while p > 0 and tries < MAX_TORN_CANDIDATES:
        tries += 1
        try:
            obj, _ = decode_line_ex(content[p:])
        except (ValueError, RecursionError):
            obj = None
        if type(obj) is dict and _is_line_type(obj.get("type")):
            return p, obj
        p = find(_TORN_MARK, p + 1)
    return None


def read_value(content: bytes, *, complete: bool = True) -> Value:
    """Rules 3–4 for one non-blank line.

    Args:
        content: the line's bytes without LF (and without the CR before it).
        complete: the line was ended by LF. Rule 4 applies only then: a final piece
            without LF may be a line still being written (or cut by a crash), and a
            prefix of a Pi line that ends right after a nested ``{"type":...}`` object
            (a content block, a parsed session line inside a tool result) looks
            exactly like "a fragment, then a complete entry".

    Returns:
        The :class:`Value`. A complete line that is not JSON but holds a complete
        object behind a torn fragment gives that object with ``recovered_at`` > 0;
        ``replaced`` then says whether the *whole* line had invalid UTF-8 (it is
        reported once per line).

    Raises:
        ValueError: neither the line nor (on a complete line) a recoverable suffix is
            valid JSON (``NaN``/``Infinity`` literals and nesting past 1,024 levels
            included).
    """
    try:
        value, replaced = decode_line_ex(content)
        return Value(value, replaced)
    except (ValueError, RecursionError):
        pass
    rec = _recover_torn(content) if complete else None
    if rec is None:
        raise ValueError("not valid JSON")
    return Value(rec[1], has_invalid_utf8(content), rec[0])


def is_header(obj: Any) -> bool:
    """Rule 6: a ``session`` object with a string ``id`` (Pi's ``loadEntriesFromFile``)."""
    return type(obj) is dict and obj.get("type") == "session" and isinstance(obj.get("id"), str)


# A header problem is (code, type value): code "not_json", "not_object", "no_id" or
# "type" (then the first object's ``type`` value, UNDEFINED when absent), or "empty".
HeaderProblem = tuple[str, Any]


def header_problem(content: bytes) -> HeaderProblem:
    """Why the first non-blank line ``content`` does not lead to a header (rule 6).

    Returns:
        ``("not_json", UNDEFINED)``, ``("not_object", UNDEFINED)``, ``("no_id",
        UNDEFINED)`` (a ``session`` object without a string ``id``) or ``("type", t)``
        with the object's ``type`` value ``t`` (``UNDEFINED`` when absent). Meaningless
        for a line that *is* a header.
    """
    try:
        obj = read_value(content).value
    except ValueError:
        return ("not_json", UNDEFINED)
    if type(obj) is not dict:
        return ("not_object", UNDEFINED)
    etype = obj.get("type", UNDEFINED)
    if etype == "session":
        return ("no_id", UNDEFINED)
    return ("type", etype)


def problem_from_code(code: str) -> HeaderProblem:
    """The problem the native core reports as a string code (``"type:" + JSON text``).

    Args:
        code: ``"empty"``, ``"not_json"``, ``"not_object"``, ``"no_id"``, ``"type"`` (no
            ``type`` key) or ``"type:<JSON text of the type value>"``.
    """
    if code.startswith("type:"):
        try:
            return ("type", decode_line(code[5:].encode("utf-8", "surrogatepass")))
        except ValueError:
            return ("type", UNDEFINED)
    return (code, UNDEFINED)


def header_error(path: str | None, line: int | None, offset: int | None, problem: HeaderProblem) -> InvalidSessionError:
    """The error for a file with no valid header, in the words both backends use.

    Args:
        path: the file (``None`` for in-memory data).
        line: 1-based number of the first non-blank line (``None`` for an empty file).
        offset: its byte offset.
        problem: from :func:`header_problem` or :func:`problem_from_code`.

    Returns:
        The :class:`InvalidSessionError` to raise.
    """
    code, etype = problem
    if code == "empty" or line is None:
        return InvalidSessionError("empty file: no session header", path)
    if code == "not_json":
        reason = "line is not valid JSON"
    elif code == "not_object":
        reason = "line is not a JSON object"
    else:
        why = "no string id" if code == "no_id" else f"type is {None if etype is UNDEFINED else etype!r}, not 'session'"
        reason = f"first object is not a session header ({why})"
    return InvalidSessionError(f"no session header: {reason}", path, line, offset)


def is_old_version(header: dict[str, Any]) -> bool:
    """Whether a header asks for migration (Pi's ``migrateToCurrentVersion``).

    Pi reads ``header.version ?? 1``; a numeric version below 3 migrates. Any other
    value (a string, a bool) is taken as current: Pi's coercions there are accidents.

    Returns:
        True when ``version`` is absent, ``null`` or a number below 3.
    """
    version = header.get("version")
    if version is None:
        return True
    if isinstance(version, bool) or not isinstance(version, (int, float)):
        return False
    return version < CURRENT_VERSION


@dataclass(frozen=True)
class HeaderScan:
    """Where a file's header is (from :func:`scan_header`).

    Attributes:
        header: the header dict.
        line: its 1-based line number.
        offset: byte offset of that line (0 for line 1, BOM or not).
        version: the header's ``version`` as written (``None`` when absent or null;
            a version 1 file has none).
    """

    header: dict[str, Any]
    line: int
    offset: int
    version: Any


_CHUNK = 1 << 16


def scan_header(path: str | os.PathLike[str]) -> HeaderScan:
    """Rules 1–6 over a file until its header, reading no further than its line.

    Args:
        path: the file.

    Returns:
        The :class:`HeaderScan`.

    Raises:
        InvalidSessionError: the file has no valid header (empty, or its first JSON
            object is not a header), named as the loader names it.
        OSError: it cannot be read.
    """
    path = os.fspath(path)
    first: tuple[int, int, bytes] | None = None
    with open(path, "rb") as f:
        data = b""
        base = 0  # file offset of data[0]
        line_no = 1
        eof = False
        while True:
            if not eof:
                chunk = f.read(_CHUNK if len(data) < _CHUNK else len(data))
                eof = not chunk
                data += chunk
            start = len(BOM) if base == 0 and data.startswith(BOM) else 0
            if base == 0 and not eof and len(data) < len(BOM) and BOM.startswith(data):
                continue  # too short to tell whether a BOM starts the file
            consumed = 0
            for number, offset, content, is_tail in iter_lines(data, start, line_no):
                if is_tail and not eof:
                    break  # the rest of this line is still to be read
                consumed = len(data) if is_tail else offset + len(content) + 1
                if is_tail and content.endswith(b"\r"):
                    content = content[:-1]
                elif not is_tail and data[offset + len(content) : offset + len(content) + 1] == b"\r":
                    consumed += 1  # iter_lines stripped a CR before the LF
                line_no = number + 1
                if is_blank(content):
                    continue
                at = 0 if number == 1 else base + offset
                if first is None:
                    first = (number, at, content)
                try:
                    obj = read_value(content, complete=not is_tail).value
                except ValueError:
                    continue
                if type(obj) is not dict:
                    continue
                if is_header(obj):
                    return HeaderScan(obj, number, at, obj.get("version"))
                raise header_error(path, first[0], first[1], header_problem(first[2]))
            if eof and consumed >= len(data):
                break
            data = data[consumed:]
            base += consumed
            if eof and not data:
                break
    if first is None:
        raise header_error(path, None, None, ("empty", UNDEFINED))
    raise header_error(path, first[0], first[1], header_problem(first[2]))
