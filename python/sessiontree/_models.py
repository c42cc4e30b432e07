"""How a model is named for people: ``provider/model``, one rule for every viewer and
for ``usage``'s lines by model (``view.model_label`` over any JSON value, the catalog
over the strings its usage logs hold; ``src/usage.rs`` ``model_name`` natively)."""

from __future__ import annotations

__all__ = ["UNKNOWN", "model_name"]

UNKNOWN = "(unknown)"
"""How a model, or a model's provider or name, that a session does not give is named."""


def model_name(provider: str, model: str, unknown: str = UNKNOWN) -> str:
    """``provider/model`` from a model's two sides as strings (``""``: the session gives
    none): an empty side :data:`UNKNOWN` (``anthropic/(unknown)``), ``unknown`` when both
    are (``tests/test_view_model.py`` holds this, the view's label and the core's
    spelling equal)."""
    if not provider and not model:
        return unknown
    return f"{provider or UNKNOWN}/{model or UNKNOWN}"
