"""Sizes written as text (``300MB``, ``1GiB``, ``512k``): ``$SESSIONTREE_CACHE_BYTES``,
``sessiontree generate --size``, the benchmarks' sizes."""

from __future__ import annotations

__all__ = ["parse_size"]


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
