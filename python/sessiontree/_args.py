"""Arguments of the public API checked before anything is built or written: a wrong
type is a ``TypeError`` naming the argument (the manager's and the storages' calls)."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["require", "require_path", "require_number", "abspath"]


def require(name: str, value: Any, types: type | tuple[type, ...]) -> None:
    """Refuse an argument of the wrong type before anything is built or written."""
    if not isinstance(value, types):
        want = " or ".join(
            "None" if t is type(None) else t.__name__ for t in (types if isinstance(types, tuple) else (types,))
        )
        raise TypeError(f"{name} must be {want}, not {type(value).__name__}")


def require_path(name: str, value: Any, optional: bool = False) -> None:
    """A path argument: ``str`` or ``os.PathLike`` (``None`` too when ``optional``)."""
    if optional and value is None:
        return
    if not isinstance(value, (str, os.PathLike)):
        want = "a str or os.PathLike" + (" or None" if optional else "")
        raise TypeError(f"{name} must be {want}, not {type(value).__name__}")


def require_number(name: str, value: Any) -> None:
    """A number argument (``bool`` is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")


def abspath(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute, ``~`` expanded: an unexpanded ``~/x.jsonl`` would silently
    open a new, empty session in a folder literally named ``~``."""
    return os.path.abspath(os.path.expanduser(os.fspath(path)))
