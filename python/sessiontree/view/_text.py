"""Any JSON value read from a session as text: strings, numbers, sizes, times, JSON.

Nothing here escapes except where a name says so (:func:`show`, :func:`one_line`, through
``_escape.safe``); the values may be any JSON type and nothing raises.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from datetime import date, datetime, timezone
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import timedelta
    from typing import Any

from .._lazy import lazy_pattern
from .._select import extension
from .._time import local_time, parse_iso_ms
from .._models import UNKNOWN, model_name
from ._escape import safe

__all__ = [
    "PREVIEW_CLIP", "to_json_bytes", "json_text", "value_text", "show", "one_line", "collapse", "as_is",
    "plain_doc", "number", "int_text", "num", "human_bytes", "human_seconds", "ms_time", "iso_time", "zoned_time",
    "zoned_times", "usage_text", "UNKNOWN", "model_label",
]


def to_json_bytes(value: Any, *, indent: bool = True) -> bytes:
    """JSON text of ``value``; falls back to ASCII-escaped ``json`` for what orjson refuses.

    orjson refuses lone surrogates, integers beyond 64 bits and nesting deeper than 255,
    which real session files contain; ``json.dumps(ensure_ascii=True)`` writes all of
    them losslessly (with room on the stack for the loader's 1,024 levels).

    The values stay exact, but DEL, C1 controls, bidi controls and U+2028/U+2029 (which
    JSON allows raw inside strings) are written as ``\\uXXXX`` escapes, so that
    ``--json`` on a terminal cannot be abused either.

    A value of plain types (a usage report, a page of hits) is written natively when
    the extension is built (``_sessiontree.plain_json``, at most :data:`_NATIVE_NODES`
    values), else by the standard library's ``json`` when small (:func:`_plain`), to
    the same bytes: importing orjson costs a command about 11 ms (it imports
    ``dataclasses``, ``uuid`` and ``platform``, docs/BENCHMARKS.md, issue 25), more than
    either takes to write such a value. Once orjson is imported (a command that decoded
    entries has it), orjson writes every value: it is the fastest writer per value.
    """
    if "orjson" not in sys.modules:  # once orjson is loaded, it is the cheaper writer
        native = _native("plain_json")
        if native is not None:
            data = native(value, indent, _NATIVE_NODES)
            if data is not None:
                return data
        elif _plain(value):
            plain = plain_json_bytes(value, indent=indent)
            if plain is not None:
                return plain
    from .._orjson import orjson

    try:
        opts = orjson.OPT_INDENT_2 if indent else 0
        data = orjson.dumps(value, option=opts | orjson.OPT_NON_STR_KEYS, default=_json_default)
    except (TypeError, orjson.JSONEncodeError):
        import json

        old_limit = sys.getrecursionlimit()
        need = old_limit + 10_000
        sys.setrecursionlimit(need)
        try:
            try:
                text = json.dumps(value, indent=2 if indent else None, ensure_ascii=True, default=_json_default,
                                  allow_nan=False)
            except ValueError:  # NaN or an infinity: null, as orjson writes them (never `Infinity`)
                text = json.dumps(_finite(value), indent=2 if indent else None, ensure_ascii=True,
                                  default=_json_default)
        finally:
            sys.setrecursionlimit(old_limit)
        return text.encode()
    if _json_unsafe(data):
        data = _JSON_UNSAFE_RE.sub(_json_escape, data)
    return data


def plain_json_bytes(value: Any, *, indent: bool = True) -> bytes | None:
    """:func:`to_json_bytes` of a value :func:`_plain` accepts, by the standard library's
    ``json`` (orjson's bytes: ``tests/test_view_escape.py``); ``None`` for a lone
    surrogate, which orjson refuses too."""
    import json  # not at the top: a warm command that writes a table never needs it

    try:
        text = json.dumps(value, indent=2 if indent else None, separators=None if indent else (",", ":"),
                          ensure_ascii=False, allow_nan=False)
        data = text.encode()
    except UnicodeEncodeError:
        return None
    return _JSON_UNSAFE_RE.sub(_json_escape, data) if _json_unsafe(data) else data


_NATIVE_NODES = 250_000
"""Most values ``_sessiontree.plain_json`` writes: it takes ~0.06 us a value, orjson
~0.017 us after its ~11.5 ms import (``benches/json_writers.py``: 15.9 ms against 16.1
at 270,000 values), so past some 250,000 values the import pays for itself."""

_PLAIN_NODES = 2000
"""Most values :func:`_plain` accepts: ``json`` writes indented JSON in Python, about a
microsecond a value, where orjson's import costs about 11 ms."""
_PLAIN_DEPTH = 100


def _plain(value: Any) -> bool:
    """``value`` is small and ``json`` writes it as orjson does, byte for byte: dicts
    with ``str`` keys, lists, tuples, ``str``, ``bool``, ``None``, integers within 63 bits, and
    floats that both write in plain decimal (zero, or 1e-4 <= |x| < 1e16: outside it
    the two choose different exponent forms, ``1e-05`` and ``0.00001``), at most
    :data:`_PLAIN_NODES` of them, nested at most :data:`_PLAIN_DEPTH` deep. Anything
    else (times, NaN, a subclass such as a named tuple) is orjson's."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    n = 0
    while stack:
        v, depth = stack.pop()
        n += 1
        if n > _PLAIN_NODES or depth > _PLAIN_DEPTH:
            return False
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if -(1 << 63) < v < (1 << 63):
                continue
            return False
        if t is float:
            if v == 0.0 or 1e-4 <= abs(v) < 1e16:
                continue
            return False
        if t is dict:
            for k, x in v.items():
                if type(k) is not str:
                    return False
                stack.append((x, depth + 1))
            continue
        if t is list or t is tuple:
            stack.extend((x, depth + 1) for x in v)
            continue
        return False
    return True


def _json_unsafe(data: bytes) -> bool:
    """``data`` holds something :data:`_JSON_UNSAFE_RE` rewrites: by the extension's
    ``memchr`` test when it is built (the expression tries every byte: 0.27 s for the 60
    MB of all the hits of a common word, the native test 0.02 s), else the expression
    itself. The two give the same answer (``tests/test_view_escape.py``)."""
    test = _native("json_unsafe")
    return test(data) if test is not None else _JSON_UNSAFE_RE.search(data) is not None


def _native(name: str) -> Any:
    """The extension's function ``name``, or ``None`` when it is not built: used
    whichever backend reads the session (the two give the same bytes)."""
    return getattr(extension(), name, None)


# Raw UTF-8 of DEL, C1 (U+0080-U+009F), ALM, LRM/RLM, U+2028/U+2029, U+202A-U+202E,
# U+2066-U+2069. Outside strings JSON holds only ASCII, so a byte-level rewrite is exact.
_JSON_UNSAFE_RE: re.Pattern[bytes] = lazy_pattern(
    b"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def _json_escape(m: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(m.group().decode("utf-8"))


def _finite(value: Any) -> Any:
    """A copy of ``value`` with every NaN and infinity as ``None`` (no recursion: values
    nest as deep as a session line's JSON)."""
    root = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, key = stack.pop()
        v = container[key]
        if isinstance(v, float) and not math.isfinite(v):
            container[key] = None
        elif isinstance(v, dict):
            obj = container[key] = dict(v)
            stack.extend((obj, k) for k in obj)
        elif isinstance(v, (list, tuple)):
            seq = container[key] = list(v)
            stack.extend((seq, i) for i in range(len(seq)))
    return root[0]


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")



def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def human_seconds(s: float) -> str:
    """``0.0123`` -> ``"12.3 ms"``."""
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


_PREVIEW_CHARS = 600  # no terminal line shows more; never collapse megabytes of output
PREVIEW_CLIP = _PREVIEW_CHARS + 1
"""The previews here read no more than this many characters of any string of an
entry (one past what they show, so that a cut string is seen to be one and marked
``…``), so an entry fetched with ``get_entries_by_id(..., clip=PREVIEW_CLIP)`` previews
as the whole entry does (``tests/test_clip.py``)."""


def plain_doc(doc: str | None) -> str:
    """A module docstring as a terminal shows it: without its RST literal quotes."""
    return (doc or "").strip().replace("``", "")



def number(value: Any) -> int | float | None:
    """``value`` if it is a JSON number (not a bool), else ``None``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def int_text(n: int) -> str:
    """``str(n)``, or a short description for integers past Python's digit limit."""
    try:
        return str(n)
    except ValueError:
        return f"<{n.bit_length():,}-bit integer>"


def num(value: Any, default: str = "-") -> str:
    """A number with thousands separators (``1,234``); ``default`` for anything else."""
    n = number(value)
    if n is None:
        return default
    try:
        return f"{n:,}"
    except ValueError:  # beyond the integer digit limit
        return int_text(n) if isinstance(n, int) else repr(n)


def json_text(value: Any, *, indent: bool = False) -> str:
    """Compact (or indented) JSON text of any decoded value, whatever its depth or size."""
    return to_json_bytes(value, indent=indent).decode("utf-8", "surrogatepass")


def value_text(value: Any, limit: int | None = _PREVIEW_CHARS, *, none: str = "") -> str:
    """Text of any JSON value read from a session, never raising.

    Strings are themselves, ``None`` is ``none``, numbers and booleans are spelled as in
    JSON, lists and objects become (compact) JSON. At most ``limit`` characters
    (``None``: all), the last an ``…`` when the text was cut. The result is *not*
    sanitized: pass it through :func:`safe`.
    """
    if isinstance(value, str):
        text = value
    elif value is None:
        text = none
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = int_text(value)
    elif isinstance(value, float):
        text = repr(value)
    else:
        try:
            text = json_text(value)
        except (TypeError, ValueError, RecursionError):
            text = f"<{type(value).__name__}>"
    if limit is None or len(text) <= limit:
        return text
    return text[:limit - 1] + "…" if limit > 0 else ""


ABSENT = "none"
"""How a viewer words a value that is missing or null where one is expected (a thinking
level, a leaf): never Python's ``None``. A model it does not know is :data:`UNKNOWN`."""


def model_label(provider: Any, model: Any, *, unknown: str = UNKNOWN) -> str:
    """A model as people read it, ``provider/model`` (``anthropic/claude-sonnet-4-5``):
    the one spelling of ``context``, ``info``, ``tree``, ``browse``, the exports and
    ``usage``'s lines by model (the rule: ``_usage.model_name``).

    ``provider`` and ``model`` may be any JSON value (or ``None`` for absent). A side
    that is not a non-empty string is :data:`UNKNOWN` (``anthropic/(unknown)``: the
    catalog records such a value as ``""``); with neither side known the label is
    ``unknown`` (:data:`UNKNOWN`; a message's header passes ``""`` and shows none).
    Not escaped, not cut.
    """
    return model_name(provider if isinstance(provider, str) else "", model if isinstance(model, str) else "",
                      unknown)


def show(value: Any, limit: int | None = _PREVIEW_CHARS, *, none: str = "") -> str:
    """``safe(value_text(value, limit, none=none))``: any value, ready for a terminal line."""
    return safe(value_text(value, limit, none=none))


def collapse(text: Any, limit: int = _PREVIEW_CHARS) -> str:
    """:func:`value_text` of ``text`` (at most ``limit`` characters) with every run of
    whitespace as one space; not escaped."""
    return " ".join(value_text(text, limit).split())


def one_line(text: Any, limit: int = _PREVIEW_CHARS) -> str:
    """Collapse all whitespace (newlines, U+2028, tabs) into single spaces, looking at
    no more than ``limit`` characters, and escape what is left of controls (:func:`safe`).

    ``text`` may be any JSON value (non-strings are shown as by :func:`value_text`).
    """
    return safe(collapse(text, limit))


def as_is(text: str) -> str:
    return text


_MS_YEAR_10000 = 253_402_300_800_000  # 10000-01-01T00:00:00Z in ms: datetime's end


@functools.lru_cache(maxsize=64)
def _day_text(day: int) -> str:
    """``YYYY-MM-DD`` of the ``day``-th day after 1970-01-01."""
    return date.fromordinal(_EPOCH_ORDINAL + day).isoformat()


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_minute_text: dict[int, str] = {}  # minutes since the epoch -> "YYYY-MM-DD HH:MM:"
_SECONDS_UTC = tuple(f"{s:02d} UTC" for s in range(60))


def ms_time(ms: Any) -> str:
    """A time in milliseconds since the epoch (a message's ``timestamp``) as
    ``YYYY-MM-DD HH:MM:SS UTC`` (the zone said, docs/CONTRACT.md §10 "Times"); ``""``
    for anything that is not a number or not a date."""
    if type(ms) is int and 0 <= ms < _MS_YEAR_10000:
        # An integer time from 1970 on (every message's): its minute's text from a cache
        # (a session's messages come minutes apart) and its second from a table, the
        # datetime's text without making one per message.
        minute, sec = divmod(ms // 1000, 60)
        head = _minute_text.get(minute)
        if head is None:
            if len(_minute_text) >= 4096:
                _minute_text.clear()
            day, m = divmod(minute, 1440)
            head = _minute_text[minute] = f"{_day_text(day)} {m // 60:02d}:{m % 60:02d}:"
        return head + _SECONDS_UTC[sec]
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        try:
            when = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return ""
        if when.year >= 1000:  # isoformat pads the year to 4 digits, strftime's %Y does not
            return when.isoformat(" ", "seconds")[:19] + " UTC"  # a third cheaper than strftime
        try:
            return when.strftime("%Y-%m-%d %H:%M:%S UTC")
        except (OverflowError, OSError, ValueError):
            return ""
    return ""


def iso_time(ts: Any) -> str:
    """An ISO-8601 ``timestamp`` (an entry's, a header's) in UTC as :func:`ms_time`
    words it, whatever offset it was written with; ``""`` for anything that is no
    time (``_time.parse_iso_ms``)."""
    ms = parse_iso_ms(ts)
    return ms_time(ms) if ms is not None else ""


def zoned_time(dt: datetime, *, seconds: bool = True) -> str:
    """An aware ``dt`` in this machine's zone, as people read it with its offset from
    UTC: ``2025-11-07 10:14:10 +01:00`` (``seconds`` false: ``2025-11-07 10:14 +01:00``;
    an offset of whole seconds, as old local mean times have, ``+00:09:21``). An
    offset of zero is written ``UTC``, as :func:`ms_time` ends a time in UTC: one
    spelling of a UTC time for people, whichever command shows it (``TZ=UTC``: ``ls``
    as the exports). A time the zone cannot show (years past 9999) stays in UTC and
    says so: the zone is always that of the time written (docs/CONTRACT.md §10
    "Times"). A column of them is as wide as the widest (``UTC`` is three characters
    fewer than an offset)."""
    return zoned_times([dt], seconds=seconds)[0]


def zoned_times(dts: Iterable[datetime], *, seconds: bool = True) -> list[str]:
    """:func:`zoned_time` of each of ``dts`` (a listing's thousands: each offset's
    spelling made once)."""
    zones: dict[timedelta | None, str] = {}
    # isoformat pads the year to four digits (strftime's %Y does not before 1000); the
    # offset it appends is cut off, the zone written as below.
    end, spec = (19, "seconds") if seconds else (16, "minutes")
    out = []
    for dt in dts:
        shown = local_time(dt)
        off = shown.utcoffset()
        zone = zones.get(off)
        if zone is None:
            total = int(off.total_seconds()) if off is not None else 0
            sign = "-" if total < 0 else "+"
            h, rest = divmod(abs(total), 3600)
            m, s = divmod(rest, 60)
            zone = zones[off] = f"{sign}{h:02d}:{m:02d}" + (f":{s:02d}" if s else "") if total else "UTC"
        out.append(f"{shown.isoformat(' ', spec)[:end]} {zone}")
    return out


def usage_text(usage: Any) -> list[str]:
    """``["in 1,234 · out 567 · cache 12,000 read, 0 written", "$0.0123"]`` from a
    ``usage`` dict (any JSON value: what is not a number is left out)."""
    if not isinstance(usage, dict):
        return []
    parts = []
    for key, word in (("input", "in"), ("output", "out")):
        if number(usage.get(key)) is not None:
            parts.append(f"{word} {num(usage[key])}")
    cr, cw = number(usage.get("cacheRead")), number(usage.get("cacheWrite"))
    if cr or cw:
        parts.append(f"cache {num(cr or 0)} read, {num(cw or 0)} written")
    out = [" · ".join(parts)] if parts else []
    cost = usage.get("cost")
    total = number(cost.get("total")) if isinstance(cost, dict) else None
    if total is not None:
        out.append(f"${total:.4f}")
    return out
