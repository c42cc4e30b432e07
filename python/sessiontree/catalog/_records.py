"""The byte layouts a scan's results travel and are kept in (``_extract``'s rules make
them; the catalog stores them; the native reader, ``src/report.rs`` and
``src/listing.rs``, writes the same bytes).

The usage travels and is kept as a *usage log*: ``src/report.rs`` documents its layout
(pieces of records, each piece defining the ``(provider, model)`` pairs it names,
varints and the odd ``f64``); :func:`pack_log` writes the same bytes and
:func:`unpack_log` reads them.

The entries seen travel between calls as an *entries record*: per accepted entry,
a little-endian ``u32`` length and the id's UTF-8 bytes (lone surrogates as
``surrogatepass`` writes them), then the ``parentId`` likewise, or ``0xFFFFFFFF`` when
it is not a non-empty string; a ``leaf`` entry's move after it (:func:`pack_entry`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Sequence

from .. import _js

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a report's start)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["USAGE_KINDS", "entries_path", "leaf_after", "leaf_move", "pack_entry", "pack_log", "records",
           "unpack_log"]

_NO_PARENT = 0xFFFFFFFF
_U32 = struct.Struct("<I")


# ------------------------------------------------------------------ usage log
USAGE_KINDS = ("message", "usage", "compaction", "branch_summary")
_F64 = struct.Struct("<d")
_SMALL = float(1 << 52)


def _varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _bytes(out: bytearray, text: str) -> None:
    b = _enc(text)
    _varint(out, len(b))
    out += b


def pack_log(usage: Sequence[tuple[tuple[Any, ...], tuple[float, ...]]]) -> bytes:
    """One piece of usage log for usage rows ``((seq, id, stamp, time, kind, provider,
    model), numbers)`` (``b""`` for none)."""
    if not usage:
        return b""
    out = bytearray(b"\x00")
    models: dict[tuple[str, str], int] = {}
    for (seq, eid, stamp, time, kind, provider, model), nums in usage:
        m = models.get((provider, model))
        if m is None:
            m = models[(provider, model)] = len(models)
            out.append(1)
            _bytes(out, provider)
            _bytes(out, model)
        out.append(2)
        _bytes(out, eid)
        _bytes(out, stamp)
        _varint(out, seq)
        out.append(USAGE_KINDS.index(kind))
        if time is None:
            out.append(0)
        elif math.isfinite(time) and time == int(time) and abs(time) < _SMALL:
            out.append(1)
            t = int(time)
            _varint(out, -2 * t - 1 if t < 0 else 2 * t)  # zigzag
        else:
            out.append(2)
            out += _F64.pack(time)
        _varint(out, m)
        for n in nums:
            if n == 0:
                out.append(0)
            elif 0 < n < _SMALL and n == int(n):
                _varint(out, 2 * int(n))
            else:
                out.append(1)
                out += _F64.pack(n)
    return bytes(out)


def unpack_log(log: bytes) -> list[tuple[tuple[Any, ...], tuple[float, ...]]]:
    """The usage rows of a usage log (:func:`pack_log`'s inverse, pieces concatenated).

    Raises:
        ValueError: the log is malformed.
    """
    rows: list[tuple[tuple[Any, ...], tuple[float, ...]]] = []
    pos, end = 0, len(log)

    def byte() -> int:
        nonlocal pos
        if pos >= end:
            raise ValueError("a usage log cut short")
        pos += 1
        return log[pos - 1]

    def varint() -> int:
        v, shift = 0, 0
        while True:
            b = byte()
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7
            if shift > 63:
                raise ValueError("a malformed usage log (varint)")

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > end:
            raise ValueError("a usage log cut short")
        pos += n
        return log[pos - n:pos]

    def text() -> str:
        return take(varint()).decode("utf-8", "surrogatepass")

    def f64() -> float:
        return float(_F64.unpack(take(8))[0])

    models: list[tuple[str, str]] = []
    started = False
    try:
        while pos < end:
            tag = byte()
            if tag == 0:
                models, started = [], True
                continue
            if tag == 1:
                models.append((text(), text()))
                continue
            if tag != 2 or not started:
                raise ValueError(f"a malformed usage log (tag {tag})")
            eid, stamp, seq, kind = text(), text(), varint(), USAGE_KINDS[byte()]
            how = byte()
            if how == 0:
                time = None
            elif how == 1:
                z = varint()
                time = float(-(z + 1) // 2 if z & 1 else z // 2)
            elif how == 2:
                time = f64()
            else:
                raise ValueError("a malformed usage log (time)")
            provider, model = models[varint()]
            nums = []
            for _ in range(6):
                v = varint()
                if v == 1:
                    nums.append(f64())
                elif v % 2 == 0:
                    nums.append(float(v // 2))
                else:
                    raise ValueError("a malformed usage log (number)")
            rows.append(((seq, eid, stamp, time, kind, provider, model), tuple(nums)))
    except (IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"a malformed usage log ({e})") from e
    return rows


# ------------------------------------------------------------ entries record
def _enc(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


# An entry's leaf move after its parent (loader rule 13; `src/listing.rs`'s `Move`):
# not a `leaf` entry, a move to null, a `leaf` entry whose targetId is not a string
# (it moves nothing), else the target's length and bytes.
_NOT_A_MOVE = 0xFFFFFFFF
_MOVE_TO_NULL = 0xFFFFFFFE
_MOVES_NOTHING = 0xFFFFFFFD

_NOT: Any = object()  # records(): not a leaf move
_NOTHING: Any = object()  # records(): a leaf move that moves nothing


def pack_entry(eid: str, parent: str | None, move: Any = _NOT) -> bytes:
    """One entry of an entries record; ``move`` is :func:`leaf_move`'s."""
    b = _enc(eid)
    out = _U32.pack(len(b)) + b
    if parent is None:
        out += _U32.pack(_NO_PARENT)
    else:
        p = _enc(parent)
        out += _U32.pack(len(p)) + p
    if move is _NOT:
        return out + _U32.pack(_NOT_A_MOVE)
    if move is None:
        return out + _U32.pack(_MOVE_TO_NULL)
    if move is _NOTHING:
        return out + _U32.pack(_MOVES_NOTHING)
    t = _enc(move)
    return out + _U32.pack(len(t)) + t


def leaf_move(obj: dict[str, Any]) -> Any:
    """What an entry does to the leaf (rule 13): ``_NOT`` (any entry but ``leaf``: it is
    the leaf), ``None`` (to before the first entry), a target id, or ``_NOTHING``."""
    if obj.get("type") != "leaf":
        return _NOT
    target = obj.get("targetId", _js.UNDEFINED)
    return target if target is None or isinstance(target, str) else _NOTHING


def records(entries: bytes) -> Iterator[tuple[str, str | None, Any]]:
    """``(id, parentId, move)`` of each record (a malformed end stops the walk)."""
    pos, end = 0, len(entries)

    def take() -> tuple[str | int | None, int]:
        # (the decoded bytes, or the marker; new position); None past the end.
        if pos + 4 > end:
            return None, pos
        (n,) = _U32.unpack_from(entries, pos)
        at = pos + 4
        if n >= _MOVES_NOTHING:
            return n, at
        if at + n > end:
            return None, at
        return entries[at:at + n].decode("utf-8", "surrogatepass"), at + n

    while True:
        eid, pos = take()
        if not isinstance(eid, str):
            return
        parent, pos = take()
        if parent is None:
            return
        move, pos = take()
        if move is None:
            return
        yield (eid, None if parent == _NO_PARENT else parent,  # type: ignore[misc]
               _NOT if move == _NOT_A_MOVE else None if move == _MOVE_TO_NULL else _NOTHING if move == _MOVES_NOTHING else move)


def leaf_after(leaf: int, e: int, move: Any, number: dict[str, int]) -> int:
    """Rule 13: the leaf (-1: none) after entry ``e``, whose :func:`leaf_move` is
    ``move``, when it was ``leaf`` before; ``number`` maps the ids of entries ``0..e``
    to their numbers. A move to an entry not read before ``e``, or to ``e`` itself,
    moves nothing (``src/listing.rs`` ``leaf_after``)."""
    if move is _NOT:
        return e
    if move is None:
        return -1
    if move is not _NOTHING and number.get(move, e) != e:
        return number[move]
    return leaf


def _entries_path_py(entries: bytes) -> list[int]:
    number: dict[str, int] = {}
    parents: list[str | None] = []
    leaf = -1
    for eid, parent, move in records(entries):
        if eid not in number:
            e = number[eid] = len(parents)
            parents.append(parent)
            leaf = leaf_after(leaf, e, move, number)
    n = len(parents)
    column = [-1] * n
    for e, p in enumerate(parents):
        q = number.get(p, -1) if p is not None else -1
        column[e] = q if q != e else -1
    # Rule 10: break each cycle at its earliest entry (tree.rs break_cycles).
    mark = [0] * n
    for s in range(n):
        if mark[s]:
            continue
        walk = s + 1
        x = s
        while x != -1 and not mark[x]:
            mark[x] = walk
            x = column[x]
        if x == -1 or mark[x] != walk:
            continue
        members = [x]
        y = column[x]
        while y != x:
            members.append(y)
            y = column[y]
        column[min(members)] = -1
    if leaf < 0:
        return []
    path: list[int] = []
    x = leaf
    while x != -1 and len(path) <= n:
        path.append(x)
        x = column[x]
    path.reverse()
    return path


def entries_path(entries: bytes, *, native: Any = None) -> list[int]:
    """Entry numbers from the root to the leaf of an entries record: the session's
    current path (loader rules 9–10: parents anywhere in the file, unknown or own id a
    root, cycles broken at their earliest entry; rule 13: the leaf is the last entry,
    or where a ``leaf`` entry moved it)."""
    if native is not None:
        return native.entries_path(entries)  # type: ignore[no-any-return]
    return _entries_path_py(entries)
