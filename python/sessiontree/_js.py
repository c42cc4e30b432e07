"""The JavaScript semantics Pi's rules rely on, in one place.

Pi is written in TypeScript: where its rules look at a value they use JavaScript's
meaning of it. Everything here takes ``json.loads`` values (``dict``, ``list``, ``str``,
``int``, ``float``, ``bool``, ``None``) plus :data:`UNDEFINED` for a property that is
not there, and answers as V8 would:

* :data:`UNDEFINED` — the one sentinel for ``undefined`` (an absent key, an unset
  optional argument). ``JSON.stringify`` drops such keys; code here never writes them.
* :func:`truthy` — ``Boolean(v)`` (``if (v)``).
* :func:`string` — ``String(v)`` (template literals, ``+`` with a string).
* :func:`number_text` — ``Number.prototype.toString`` (and ``JSON.stringify``'s
  spelling of finite numbers).
* :func:`trim` — ``String.prototype.trim``.
* :func:`math_max` — ``Math.max`` of two numbers (NaN wins).

Timestamps (``Date.parse``, ``toISOString``) live in :mod:`sessiontree._time`; the
byte-exact ``JSON.stringify`` in :mod:`sessiontree._jsonl`.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["UNDEFINED", "NULL", "WHITESPACE", "truthy", "string", "scalar_text", "number_text", "trim", "math_max", "to_number"]


class _Undefined:
    """JavaScript ``undefined``: falsy, a singleton, never serialised."""

    __slots__ = ()
    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Any = _Undefined()
"""JavaScript ``undefined``: an absent property, an unset optional argument."""


class _Null:
    """An explicit JSON ``null`` where ``None`` would mean "not given"."""

    __slots__ = ()
    _instance: _Null | None = None

    def __new__(cls) -> _Null:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NULL"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NULL"


NULL: Any = _Null()
"""An optional argument given as JavaScript ``null``: written as ``null`` (``None``
leaves the key out)."""


def truthy(v: Any) -> bool:
    """JavaScript truthiness of a JSON value.

    Args:
        v: a ``json.loads`` value or :data:`UNDEFINED`.

    Returns:
        False for ``undefined``, ``null``, ``false``, ``0``, ``-0``, ``NaN`` and ``""``;
        True for everything else, empty objects and arrays included.
    """
    if v is UNDEFINED or v is None or v is False:
        return False
    if isinstance(v, (int, float)):
        return v == v and v != 0
    if isinstance(v, str):
        return v != ""
    return True


def number_text(value: float | int) -> str:
    """Spell a number as JavaScript's ``Number.prototype.toString`` / ``JSON.stringify``.

    Ints (not bools) are printed as exact digits (JavaScript would round beyond 2^53;
    sessiontree keeps Python's exact value, CONTRACT §5 point 6). Floats follow
    ECMA-262 Number::toString: shortest round-trip digits (Python's ``repr`` gives the
    same digits), plain notation for 1e-7 <= |x| < 1e21, else ``d.ddde±n``; ``-0`` ->
    ``0``; NaN and ±inf -> ``null`` (the ``JSON.stringify`` rule; :func:`string` spells
    them ``NaN`` / ``Infinity``).

    Args:
        value: an int or float.

    Returns:
        The JSON text of the number.
    """
    if not isinstance(value, float):
        return int.__repr__(value)
    if value != value or value in (math.inf, -math.inf):
        return "null"
    if value == 0.0:
        return "0"
    r = float.__repr__(value)
    if "e" not in r:
        # Python's fixed range (1e-4 <= |x| < 1e16) lies inside JS's, same digits.
        return r[:-2] if r.endswith(".0") else r
    mant, _, exp = r.partition("e")
    neg = mant.startswith("-")
    if neg:
        mant = mant[1:]
    digits = mant.replace(".", "")
    k = len(digits)
    n = int(exp) + 1  # value = 0.digits * 10**n
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        sign = "+" if e >= 0 else "-"
        s = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + sign + str(abs(e))
    return "-" + s if neg else s


def scalar_text(v: Any) -> str | None:
    """``String(v)`` of a JSON scalar, or ``None`` for objects, arrays and ``undefined``.

    ``null``/``true``/``false``, numbers as ``Number#toString`` (``NaN``, ``Infinity``
    where JSON would write ``null``), strings unchanged.
    """
    if isinstance(v, str):
        return v
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, (int, float)):
        return number_text(v)
    return None


def string(v: Any) -> str:
    """JavaScript ``String(v)`` of a JSON value.

    Args:
        v: a ``json.loads`` value or :data:`UNDEFINED` (``"undefined"``).

    Returns:
        Scalars as :func:`scalar_text`; objects ``"[object Object]"``; arrays as
        ``Array#join(",")`` (``null``/``undefined`` elements empty, nested arrays
        joined recursively, by an explicit stack so no depth overflows).
    """
    if v is UNDEFINED:
        return "undefined"
    text = scalar_text(v)
    if text is not None:
        return text
    if isinstance(v, dict):
        return "[object Object]"
    if isinstance(v, (list, tuple)):
        parts: list[str] = []
        stack: list[Any] = [iter(v)]
        while stack:
            item = next(stack[-1], UNDEFINED)
            if item is UNDEFINED:
                stack.pop()
            elif isinstance(item, (list, tuple)):
                if item:
                    stack.append(iter(item))
                else:
                    parts.append("")
            else:
                parts.append("" if item is None else string(item))
        return ",".join(parts)
    return str(v)


# ECMAScript WhiteSpace + LineTerminator (String.prototype.trim): not U+0085, not
# U+001C..U+001F, which Python's str.strip() would also remove.
_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
WHITESPACE = _WHITESPACE
"""The same characters: what a JavaScript ``RegExp`` ``\\s`` matches."""


def trim(s: str) -> str:
    """JavaScript ``String.prototype.trim``.

    Args:
        s: the string.

    Returns:
        ``s`` without leading/trailing ECMAScript white space and line terminators.
    """
    return s.strip(_WHITESPACE)


def math_max(a: float, b: float) -> float:
    """``Math.max(a, b)``: NaN if either is NaN, else the larger."""
    if a != a or b != b:
        return float("nan")
    return a if a >= b else b


def to_number(v: Any) -> float:
    """JavaScript ``ToNumber`` of a JSON value (``src/jsnum.rs`` in the core).

    Args:
        v: a ``json.loads`` value.

    Returns:
        ``null`` 0, booleans 0 / 1, numbers as floats (an integer too large for one is
        infinite), strings by :func:`string_to_number`, arrays by that of their
        ``String``, objects NaN (``"[object Object]"``).
    """
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    if isinstance(v, str):
        return string_to_number(v)
    if isinstance(v, (list, tuple)):
        return string_to_number(string(v))
    return math.nan


_RADIX = {"x": 16, "o": 8, "b": 2}


def string_to_number(s: str) -> float:
    """JavaScript ``StringToNumber``: white space trimmed (:func:`trim`), empty is 0; a
    decimal literal (optional sign, ``Infinity``, digits with an optional fraction and
    exponent) or an unsigned ``0x`` / ``0o`` / ``0b`` integer; anything else NaN (where
    ``float`` would take ``"inf"``, ``"nan"`` or ``"1_0"``)."""
    t = trim(s)
    if not t:
        return 0.0
    radix = _RADIX.get(t[1:2].lower()) if len(t) > 2 and t[0] == "0" else None
    if radix is not None:
        try:
            return float(int(t[2:], radix)) if t[2:].isascii() and t[2:].isalnum() else math.nan
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf
    sign, body = (-1.0, t[1:]) if t[0] == "-" else (1.0, t[1:]) if t[0] == "+" else (1.0, t)
    if body == "Infinity":
        return sign * math.inf
    return sign * float(body) if _decimal_literal(body) else math.nan


def _decimal_literal(b: str) -> bool:
    """``StrUnsignedDecimalLiteral`` without ``Infinity``: ``1``, ``1.``, ``.5``, ``1.5e-3``."""
    import re  # here: a header's version is nearly always a number, and re costs a start ~5 ms

    # ASCII digits only (``[0-9]``, not ``\d``, which matches other scripts' digits too).
    return re.fullmatch(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", b) is not None
