"""Sizes written as text (``300MB``, ``1GiB``, ``512k``): the budgets set in the
environment (``$SESSIONTREE_CACHE_BYTES``, ``$SESSIONTREE_INDEX_BYTES``: one rule,
:func:`size_from_env`), ``sessiontree generate --size``, the benchmarks' sizes."""

from __future__ import annotations

import os

__all__ = ["MAX_SIZE", "parse_size", "size_from_env"]

MAX_SIZE = (1 << 63) - 1
"""The largest size a variable may hold: the core counts bytes in 64 bits (a larger
number was an ``OverflowError`` from deep inside an open)."""


_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 1024,
    "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1000**3, "gb": 1000**3, "gib": 1024**3,
}


def parse_size(text: str) -> int:
    """Parse a size such as ``"300MB"``, ``"1GiB"``, ``"512k"`` or ``"1048576"``.

    Args:
        text: a number, optionally fractional, followed by an optional unit
            (B, k/KB, KiB, M/MB, MiB, G/GB, GiB; case-insensitive).

    Returns:
        The size in bytes.

    Raises:
        ValueError: when the text is not a size.
    """
    s = text.strip().lower().replace(" ", "").replace("_", "")
    i = len(s)
    while i and s[i - 1].isalpha():
        i -= 1
    number, unit = s[:i], s[i:]
    if unit not in _UNITS or not number or not number.isascii():
        raise ValueError(f"not a size: {text!r} (try 300MB, 1GiB, 512KiB)")
    if number.isdigit():  # exact, however large
        return int(number) * _UNITS[unit]
    value = float(number)
    if not 0 <= value < float("inf"):  # also NaN
        raise ValueError(f"not a size: {text!r}")
    return int(value * _UNITS[unit])


def size_from_env(name: str, default: int) -> int:
    """The size the environment variable ``name`` holds (:func:`parse_size`'s syntax:
    ``512MiB``, ``1GiB``, ``0``, bytes), else ``default`` when it is unset or blank.

    Raises:
        ValueError: it is set to something that is not a size, or to more than
            :data:`MAX_SIZE` bytes (naming the variable and its value).
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        size = parse_size(text)
    except ValueError:
        raise ValueError(f"{name} must be a size such as 512MiB or 0, not {text!r}") from None
    if size > MAX_SIZE:
        raise ValueError(f"{name} must be a size such as 512MiB or 0, not {text!r} "
                         f"(more than {MAX_SIZE} bytes)")
    return size
