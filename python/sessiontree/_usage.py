"""What assistant messages spent (``SessionManager.get_usage_totals``), over decoded
entries: the reference rule. The native core sums the same numbers from the line bytes
(``src/usage.rs``) and falls back to this when it cannot sum exactly; the differential
tests hold the two equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .schema import UsageTotals

__all__ = ["TOKEN_KEYS", "usage_totals", "merge_models"]

TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
"""The ``message.usage`` fields summed, in this order (``src/usage.rs``: ``TOKEN_KEYS``)."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _add(total: Any, value: Any) -> Any:
    """``total + value``; an integer too large for a float makes the sum infinite."""
    try:
        return total + value
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


class _Models:
    """Counts of distinct ``(provider, model)`` values in order of first use. Values
    are any JSON value; equal values of different types (``1``, ``1.0``, ``true``) stay
    apart, as their JSON texts differ."""

    def __init__(self) -> None:
        self._at: dict[Any, int] = {}
        self.rows: list[tuple[Any, Any, int]] = []

    def add(self, provider: Any, model: Any, n: int = 1) -> None:
        key = (type(provider), provider, type(model), model)
        try:
            k = self._at.get(key)
        except TypeError:  # a list or object: compare with the few unhashable rows
            k = next((i for i, (p, m, _) in enumerate(self.rows)
                      if (type(p), p, type(m), m) == key), None)
        if k is None:
            if not isinstance(provider, (list, dict)) and not isinstance(model, (list, dict)):
                self._at[key] = len(self.rows)
            self.rows.append((provider, model, n))
        else:
            p, m, count = self.rows[k]
            self.rows[k] = (p, m, count + n)


def merge_models(pairs: Iterable[tuple[Any, Any, int]]) -> list[tuple[Any, Any, int]]:
    """``(provider, model, count)`` rows with equal pairs merged (see :class:`_Models`)."""
    models = _Models()
    for provider, model, n in pairs:
        models.add(provider, model, n)
    return models.rows


def usage_totals(entries: Iterable[dict[str, Any]]) -> UsageTotals:
    """The totals over ``entries`` (any entries, in file order; only assistant messages
    count). The rule is :class:`~sessiontree.schema.UsageTotals`'."""
    tokens: dict[str, Any] = dict.fromkeys(TOKEN_KEYS, 0)
    cost: Any = 0
    models = _Models()
    messages = 0
    for e in entries:
        if e.get("type") != "message":
            continue
        msg = e.get("message")
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        messages += 1
        models.add(msg.get("provider"), msg.get("model"))
        usage = msg.get("usage")
        if not isinstance(usage, dict):
            continue
        for key in TOKEN_KEYS:
            value = usage.get(key)
            if _number(value):
                tokens[key] = _add(tokens[key], value)
        c = usage.get("cost")
        total = c.get("total") if isinstance(c, dict) else None
        if _number(total):
            cost = _add(cost, total)
    return UsageTotals(tokens=tokens, cost=cost, models=models.rows, messages=messages)
