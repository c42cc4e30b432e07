"""``typing.NamedTuple``'s class syntax without importing ``typing``.

``typing`` costs a warm ``usage`` about 2 ms of its start (docs/BENCHMARKS.md,
issue 25). ``class X(NamedTuple):`` with this ``NamedTuple`` makes the class
``typing.NamedTuple`` makes (a ``collections.namedtuple`` of the annotated fields, in
order, defaults for those given one, the body's methods and docstring set on it);
type checkers read ``typing.NamedTuple`` itself (``if TYPE_CHECKING``, where it is
used)."""

from __future__ import annotations

from collections import namedtuple

__all__ = ["NamedTuple"]

_KEPT = frozenset({"__module__", "__qualname__", "__annotations__", "__doc__"})


class _Make(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, object]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(mcls, name, bases, ns)
        annotations = dict(ns.get("__annotations__", {}))  # type: ignore[call-overload]
        fields = list(annotations)
        defaults = [ns[f] for f in fields if f in ns]
        cls: type = namedtuple(name, fields, defaults=defaults, module=str(ns["__module__"]))  # type: ignore[misc]
        cls.__annotations__ = annotations
        cls.__qualname__ = str(ns.get("__qualname__", name))
        if ns.get("__doc__") is not None:
            cls.__doc__ = ns["__doc__"]  # type: ignore[assignment]
        for key, value in ns.items():
            if key not in _KEPT and key not in annotations:
                setattr(cls, key, value)
        return cls


class NamedTuple(metaclass=_Make):
    """Subclass it as ``typing.NamedTuple`` (see the module docstring)."""
