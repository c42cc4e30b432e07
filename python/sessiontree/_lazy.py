"""A package's names imported from their modules when first used (PEP 562 module
``__getattr__``): a command pays only for the modules it uses."""

from __future__ import annotations

from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``homes`` maps a name to the submodule that
    holds it; a name, once imported, is kept in ``namespace`` (the package's globals).

    Raises (from the returned function):
        AttributeError: the name has no home.
    """

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__


class _Pattern:
    """A regular expression compiled when first used (:func:`lazy_pattern`)."""

    def __init__(self, pattern: Any, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        import re

        value = getattr(re.compile(*self._source), name)
        setattr(self, name, value)  # its methods bound once: later uses find them here
        return value


def lazy_pattern(pattern: Any, flags: int = 0) -> Any:
    """``re.compile(pattern, flags)``, compiled when a method of it is first used: a
    module's patterns cost nothing at import (a few large character classes took about
    4 ms of a warm ``usage``'s 50, docs/BENCHMARKS.md, issue 25). Typed as the pattern
    at its use (``_X: re.Pattern[str] = lazy_pattern(...)``)."""
    return _Pattern(pattern, flags)
