"""Loader rules 3–6 for one line, and the header: the one reader everything uses.

Framing (rules 1–2: ``\\n`` only, CR stripped, BOM, blank lines) is
:func:`sessiontree._jsonl.iter_lines`; this module says what a framed line *is*:

* :func:`read_line` — rules 3–4: the line's JSON value (``json.loads`` semantics,
  invalid UTF-8 replaced), or, for a complete line that is not one value, every
  object glued on it and the torn fragments around them; :func:`read_value` its first.
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

import functools
import os
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from ._js import UNDEFINED, to_number
from ._jsonl import BOM, decode_line, decode_line_ex, has_invalid_utf8, is_blank, iter_lines, object_end
from .errors import InvalidSessionError

__all__ = [
    "CURRENT_VERSION",
    "MAX_TORN_CANDIDATES",
    "Piece",
    "LineRead",
    "Value",
    "read_line",
    "read_value",
    "TORN_SEAL",
    "line_prefix",
    "is_header",
    "is_title_slot",
    "is_v4_header",
    "V4_FILE",
    "header_problem",
    "problem_from_code",
    "header_error",
    "header_version",
    "is_old_version",
    "HeaderScan",
    "scan_header",
]

CURRENT_VERSION = 3
"""The session format version Pi writes (``CURRENT_SESSION_VERSION``)."""

MAX_TORN_CANDIDATES = 16
"""How many ``{"type":`` positions rule 4 tries on an invalid line (all its fragments
together); one whose value cannot name an entry type (:func:`_may_name_line_type`)
costs no try."""

_TORN_MARK = b'{"type":'
_FOREIGN_MARK = b'{"'

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


class Piece(NamedTuple):
    """One JSON value of a line: ``content[start:end]`` (rule 3) or an object rule 4
    read from a line that is not one value.

    Attributes:
        value: the JSON value (any type for a whole line; an object for a piece of a
            split line).
        start: where its bytes start in the line.
        end: where they end.
        may_nest: read behind torn bytes only because it ends the line, so it may be
            a value nested in the torn record (:meth:`_Torn.may_nest`): an entry only
            if it continues the tree (rule 3, ``_load.Loader._continues_tree``;
            ``src/scan.rs`` ``Piece::may_nest``).
    """

    value: Any
    start: int
    end: int
    may_nest: bool = False


class LineRead(NamedTuple):
    """What rules 3–4 make of one line.

    Attributes:
        pieces: the line's value (one piece, the whole line), or the objects rule 4
            read from a complete line that is not one value, in line order.
        fragments: for a split line, the ``(start, end)`` of each non-blank run of
            bytes outside the pieces (reported ``torn_fragment``).
        replaced: the line has invalid UTF-8 (rule 3, reported once per line as
            ``invalid_utf8``).
        split: the line was read by rule 4.
    """

    pieces: tuple[Piece, ...]
    fragments: tuple[tuple[int, int], ...] = ()
    replaced: bool = False
    split: bool = False


class Value(NamedTuple):
    """A line's first value (:func:`read_value`).

    Attributes:
        value: the JSON value.
        replaced: the line has invalid UTF-8.
        recovered_at: 0, or where the value starts when rule 4 read it from the line.
    """

    value: Any
    replaced: bool = False
    recovered_at: int = 0


@functools.cache
def _type_names() -> tuple[frozenset[bytes], int]:
    """The line types' names as bytes, and the longest one's length (made when first
    needed: the schema's many TypedDicts cost a command's start)."""
    from .schema import ENTRY_TYPES

    names = frozenset(t.encode() for t in (*ENTRY_TYPES, "session"))
    return names, max(len(t) for t in names)


def _may_name_line_type(content: bytes, q: int) -> bool:
    """Whether the ``{"type":`` at ``q`` may begin an object whose ``type`` names an
    entry type or ``session``, from the bytes of its value alone: a string with no
    escape that is no such name cannot (a content block: ``text``, ``toolCall``,
    ``thinking``, ``image``; nor can a value that is no string), so it costs no try of
    the line's 16. Reads at most the longest name's length past the quote
    (``src/scan.rs`` ``may_name_line_type``)."""
    i = q + len(_TORN_MARK)
    while i < len(content) and content[i] in _BLANK:
        i += 1
    if i >= len(content) or content[i] != 0x22:
        return False
    names, longest = _type_names()
    window = content[i + 1 : i + 2 + longest]
    m = _QUOTE_OR_ESCAPE.search(window)
    if m is None:
        return False
    if window[m.start()] == 0x5C:
        return True  # an escape: only a full read says what the string is
    return window[: m.start()] in names


def _is_line_type(value: Any) -> bool:
    """Whether an object found behind a torn fragment has a ``type`` naming one of Pi's
    entry types (or ``session``, a header behind a torn fragment).

    A content block (``text``, ``toolCall``, ``thinking``, ``image``) cut at its end and
    then ended by a bare ``\n`` (Pi 0.84.4+ ends an unterminated last line when it
    loads the file) reads as "a fragment, then an object"; only an entry can have
    been appended behind a torn fragment. Pi itself recovers nothing (an invalid line
    is skipped). ``src/scan.rs`` ``is_line_type`` is the same rule.
    """
    from .schema import ENTRY_TYPES  # here: the schema's many TypedDicts cost a command's start

    return type(value) is str and (value in ENTRY_TYPES or value == "session")


_BLANK = b" \t\r"


_QUOTE_OR_ESCAPE = re.compile(rb'["\\]')


class _Torn:
    """How a JSON reader would stand in a fragment's bytes, read from its first byte up
    to ``at``: inside a string or not (``src/scan.rs`` ``Torn``). Only a fragment that
    starts as a record does (``{"``) starts outside a string; in one that starts
    otherwise (the rest of a record a raw LF split, or two writers interleaved) a
    byte's string state is not known, and :meth:`may_nest` takes it as outside."""

    __slots__ = ("at", "in_str", "esc", "known")

    def __init__(self, at: int, known: bool = True) -> None:
        self.at = at
        self.in_str = False
        self.esc = False  # the last byte read is a backslash inside a string
        self.known = known  # the fragment starts a record: string states are known

    def advance(self, content: bytes, to: int) -> None:
        i = self.at
        while i < to:
            if self.esc:
                self.esc = False
                i += 1
                continue
            if self.in_str:
                m = _QUOTE_OR_ESCAPE.search(content, i, to)
                if m is None:
                    break
                j = m.start()
                if content[j] == 0x5C:
                    self.esc = True
                else:
                    self.in_str = False
                i = j + 1
            else:
                j = content.find(b'"', i, to)
                if j < 0:
                    break
                self.in_str = True
                i = j + 1
        self.at = max(self.at, to)

    def may_nest(self, content: bytes, start: int, q: int) -> bool:
        """Whether an object at ``q`` could be a value nested in the record the fragment
        from ``start`` is a cut piece of: outside a string, right after ``[``, ``,`` or
        ``:`` (JSON allows a value nowhere else)."""
        if self.in_str and self.known:
            return False
        i = q
        while i > start and content[i - 1] in _BLANK:
            i -= 1
        return i > start and content[i - 1] in b"[,:"


def _object_at(content: bytes, text: str, pos: int) -> tuple[Any, int] | None:
    """The object that starts at ``content[pos]`` and its end, by ``json.loads`` rules
    (nesting past 1,024 levels included), or ``None``."""
    end = object_end(text, pos)
    if end is None:
        return None
    try:
        value = decode_line(content[pos:end])
    except (ValueError, RecursionError):
        return None
    return value, end


def _split(content: bytes, foreign: bool = False) -> LineRead | None:
    """Rule 4 over a complete line that is not one JSON value (``src/scan.rs``
    ``split_line`` is the same rule; its comment says why each step is so).

    From the first non-blank byte: an object that starts there is a piece, whatever its
    type, and reading goes on right after it; bytes where none starts are a fragment,
    up to the first ``{"type":`` (16 tried per line) that begins an object whose
    ``type`` is an entry type or ``session`` and that ends the line or cannot be a value
    nested in the torn record (:meth:`_Torn.may_nest`), else to the line's end; one
    that ends the line and may be nested is marked :attr:`Piece.may_nest`.
    ``foreign`` (another agent's transcript, :func:`read_line`): the first ``{"`` that
    cannot be a value nested in the torn record and begins an object, whatever its
    keys; one that may be nested costs no try and is never read.
    Linear: each piece is parsed once, a fragment's bytes are read once, a candidate
    costs at most the line.
    """
    text = content.decode("latin-1")
    n = len(content)
    pieces: list[Piece] = []
    fragments: list[tuple[int, int]] = []
    tries = 0

    def blank(i: int) -> int:
        while i < n and content[i] in _BLANK:
            i += 1
        return i

    pos = blank(0)
    while pos < n:
        got = _object_at(content, text, pos)
        if got is not None:
            pieces.append(Piece(got[0], pos, got[1]))
            pos = blank(got[1])
            continue
        found: tuple[int, Any, int, bool] | None = None
        torn = _Torn(pos, content.startswith(b'{"', pos))
        mark = _FOREIGN_MARK if foreign else _TORN_MARK
        q = content.find(mark, pos + 1)
        while q > 0 and tries < MAX_TORN_CANDIDATES:
            if foreign:
                torn.advance(content, q)
                if torn.may_nest(content, pos, q):
                    q = content.find(mark, q + 1)
                    continue
            elif not _may_name_line_type(content, q):
                q = content.find(mark, q + 1)
                continue
            tries += 1
            got = _object_at(content, text, q)
            if got is not None:
                torn.advance(content, q)
                if foreign:
                    found = (q, got[0], got[1], False)
                    break
                if type(got[0]) is dict and _is_line_type(got[0].get("type")):
                    nested = torn.may_nest(content, pos, q)
                    if not nested or blank(got[1]) == n:
                        found = (q, got[0], got[1], nested)
                        break
            q = content.find(mark, q + 1)
        if found is None:
            fragments.append((pos, n))
            break
        q, value, end, nested = found
        fragments.append((pos, q))
        pieces.append(Piece(value, q, end, nested))
        pos = blank(end)
    if not pieces:
        return None
    return LineRead(tuple(pieces), tuple(fragments), has_invalid_utf8(content), True)


def read_line(content: bytes, *, complete: bool = True, foreign: bool = False) -> LineRead:
    """Rules 3–4 for one non-blank line.

    Args:
        content: the line's bytes without LF (and without the CR before it).
        complete: the line was ended by LF. Rule 4 applies only then: a final piece
            without LF may be a line still being written (or cut by a crash), and a
            prefix of a Pi line that ends right after a nested ``{"type":...}`` object
            (a content block, a parsed session line inside a tool result) looks
            exactly like "a fragment, then a complete entry".
        foreign: the line is another agent's (the importers: Claude Code, Codex),
            whose records neither start with ``{"type":`` nor have Pi's types. Glued
            objects are read as for Pi's lines; behind torn bytes, only an object that
            cannot be a value nested in the torn record is read (its keys do not
            matter), even one that ends the line: such a record's last field is often
            an object (Claude Code's ``toolUseResult``), so a record cut before its
            final ``}`` ends with one, and a record appended right after a cut
            ``[``, ``,`` or ``:`` is lost (a reported fragment) rather than guessed.

    Returns:
        The :class:`LineRead`: the line's value as one piece; or, for a complete line
        that is not one JSON value, every object rule 4 reads from it (several
        objects glued with no LF between them, or torn bytes and the objects behind
        them) and the fragments around them.

    Raises:
        ValueError: neither the line nor (on a complete line) any part of it is a JSON
            value rule 4 reads (``NaN``/``Infinity`` literals and nesting past 1,024
            levels are not JSON).
    """
    try:
        value, replaced = decode_line_ex(content)
        return LineRead((Piece(value, 0, len(content)),), (), replaced)
    except (ValueError, RecursionError):
        pass
    got = _split(content, foreign) if complete else None
    if got is None:
        raise ValueError("not valid JSON")
    return got


def read_value(content: bytes, *, complete: bool = True) -> Value:
    """The first value :func:`read_line` reads from a line (a header, the line a
    missing header is reported on).

    Raises:
        ValueError: as :func:`read_line`.
    """
    r = read_line(content, complete=complete)
    first = r.pieces[0]
    return Value(first.value, r.replaced, first.start if r.split else 0)


def is_header(obj: Any) -> bool:
    """Rule 6: a ``session`` object with a string ``id`` (Pi's ``loadEntriesFromFile``)."""
    return type(obj) is dict and obj.get("type") == "session" and isinstance(obj.get("id"), str)


def is_title_slot(obj: Any) -> bool:
    """oh-my-pi's title slot: a ``title`` object before the header.

    oh-my-pi (``omp``) writes ``{"type":"title","v":1,"title":…,"source":…,"updatedAt":…,
    "pad":"   …"}`` as the file's first line, 256 bytes with its LF, and rewrites it in
    place when the title changes (its session-format documentation). The first object
    before the header whose ``type`` is ``"title"`` is that slot (``src/index/mod.rs``
    ``is_title_slot``): not an entry, not a problem; its ``title`` names the session
    when no ``session_info`` does.
    """
    return type(obj) is dict and obj.get("type") == "title"


def is_v4_header(obj: Any) -> bool:
    """Whether a first object is the header of agent-core's version 4 codec
    (``{"kind":"header","version":4,…}``, ``session/jsonl.ts``): such a file is read,
    read-only, by :mod:`sessiontree.v4`, never by the loader."""
    return type(obj) is dict and obj.get("kind") == "header" and obj.get("version") == 4


# What every reader but ``info`` says of a version 4 file (CONTRACT §8).
V4_FILE = "a version 4 agent-core harness file: read-only, read by `info` / `sessiontree.v4.read_v4`"

# A header problem is (code, type value): code "not_json", "not_object", "no_id",
# "v4" (:func:`is_v4_header`) or "type" (then the first object's ``type`` value,
# UNDEFINED when absent), or "empty".
HeaderProblem = tuple[str, Any]


def header_problem(content: bytes) -> HeaderProblem:
    """Why the first non-blank line ``content`` does not lead to a header (rule 6).

    Returns:
        ``("not_json", UNDEFINED)``, ``("not_object", UNDEFINED)``, ``("no_id",
        UNDEFINED)`` (a ``session`` object without a string ``id``), ``("v4",
        UNDEFINED)`` (a version 4 header, :func:`is_v4_header`) or ``("type", t)``
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
    if etype is UNDEFINED and is_v4_header(obj):
        return ("v4", UNDEFINED)
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
    if code == "v4":
        return InvalidSessionError(V4_FILE, path, line, offset)
    if code == "not_json":
        reason = "line is not valid JSON"
    elif code == "not_object":
        reason = "line is not a JSON object"
    else:
        why = "no string id" if code == "no_id" else _type_words(etype)
        reason = f"first object is not a session header ({why})"
    return InvalidSessionError(f"no session header: {reason}", path, line, offset)


def _type_words(etype: Any) -> str:
    """Why a first object's ``type`` value is not a header's: ``no type`` when absent,
    else ``type is``, the value in JSON (``null``, ``true``,
    ``"message"``: never Python's ``None`` or ``True``), and ``not "session"``."""
    if etype is UNDEFINED:
        return "no type"
    import json  # here: only a file without a header pays for the import

    try:
        spelt = json.dumps(etype, ensure_ascii=False)
    except (TypeError, ValueError):  # a value json cannot spell (a nested Undefined)
        spelt = repr(etype)
    return f'type is {spelt}, not "session"'


def header_version(header: dict[str, Any]) -> float:
    """The number Pi compares for a header's version (``migrateToCurrentVersion``:
    ``header.version ?? 1``, then ``<`` / ``>=``, JavaScript's ``ToNumber``): absent or
    ``null`` is 1, ``true`` 1, ``false`` 0, ``"2"`` 2, ``[]`` 0; ``{}`` or ``"v2"`` NaN,
    which is neither below nor at 3 (``src/jsnum.rs`` in the core)."""
    version = header.get("version")
    return 1.0 if version is None else to_number(version)


def is_old_version(header: dict[str, Any]) -> bool:
    """Whether a header asks for migration (Pi's ``version < 3``, :func:`header_version`)."""
    return header_version(header) < CURRENT_VERSION


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
    slot_seen = False
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
                    pieces = read_line(content, complete=not is_tail).pieces
                except ValueError:
                    continue
                for piece in pieces:
                    obj = piece.value
                    if type(obj) is not dict:
                        continue
                    if is_header(obj):
                        return HeaderScan(obj, number, at, obj.get("version"))
                    if not slot_seen and is_title_slot(obj):
                        slot_seen = True
                        continue
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
