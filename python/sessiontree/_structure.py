"""A session's structure for the viewers (``sessiontree browse``, ``sessiontree export``).

The viewers need the tree's *shape* (ids, types, roles, parent links, child order) for
every entry, and the decoded entry only for what they show. ``SessionManager`` is
gaining index-speed structure methods (``get_shape()`` returning a ``TreeShape``);
:func:`structure_of` uses them when the manager has them and otherwise computes the
same shape from ``get_tree()`` (which decodes every entry: the same answer, at the cost
of a full decode). Everything else here (paths, leaves, branch points, prefixes) is
computed from the shape, so both give equal results; ``tests/test_structure.py`` holds
the two equal once ``get_shape`` exists.

Entries are numbered by their position in the shape (``0 .. len - 1``). The
manager's ``TreeShape`` numbers them in file order; the computed one in ``get_tree``
preorder. Nothing here depends on which: order among siblings is ``children(i)``
(``get_tree`` order: oldest first) and among roots ``roots`` (file order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ._time import parse_iso_ms

__all__ = ["Shape", "ComputedShape", "Structure", "structure_of", "AmbiguousIdError"]


class Shape(Protocol):
    """What the viewers read of a ``TreeShape`` (the manager's or :class:`ComputedShape`).

    Attributes:
        ids: entry ids.
        types: entry ``type`` strings.
        roles: a message entry's ``message.role`` (``None`` for other entries).
        parents: the parent's number, ``-1`` for a root (after the loader's rules:
            missing parents and broken cycles are roots).
        roots: root numbers in file order.
        timestamps_ms: the entry's ``timestamp`` in epoch ms (``None`` if unparseable).
    """

    @property
    def ids(self) -> Sequence[str]: ...
    @property
    def types(self) -> Sequence[Any]: ...
    @property
    def roles(self) -> Sequence[Any]: ...
    @property
    def parents(self) -> Sequence[int]: ...
    @property
    def roots(self) -> Sequence[int]: ...
    @property
    def timestamps_ms(self) -> Sequence[Any]: ...

    def children(self, i: int) -> Sequence[int]: ...
    def index(self, entry_id: str) -> Any: ...
    def __len__(self) -> int: ...


class ComputedShape:
    """A :class:`Shape` built from ``get_tree()`` nodes (numbered in preorder)."""

    def __init__(self, roots: list[Any]) -> None:
        self.ids: list[str] = []
        self.types: list[Any] = []
        self.roles: list[Any] = []
        self.parents: list[int] = []
        self.timestamps_ms: list[int | None] = []
        self.labels: dict[int, str] = {}
        self._children: list[list[int]] = []
        self.roots: list[int] = []
        stack: list[tuple[Any, int]] = [(node, -1) for node in reversed(roots)]
        while stack:
            node, parent = stack.pop()
            i = len(self.ids)
            entry = node.entry
            self.ids.append(entry["id"])
            self.types.append(entry.get("type"))
            msg = entry.get("message")
            self.roles.append(msg.get("role") if entry.get("type") == "message" and isinstance(msg, dict) else None)
            self.parents.append(parent)
            self.timestamps_ms.append(parse_iso_ms(entry.get("timestamp")))
            self._children.append([])
            if node.label is not None:
                self.labels[i] = node.label
            if parent < 0:
                self.roots.append(i)
            else:
                self._children[parent].append(i)
            stack.extend((child, i) for child in reversed(node.children))
        self._numbers = {eid: i for i, eid in enumerate(self.ids)}

    def children(self, i: int) -> list[int]:
        return self._children[i]

    def index(self, entry_id: str) -> int | None:
        return self._numbers.get(entry_id)

    def __len__(self) -> int:
        return len(self.ids)


class AmbiguousIdError(LookupError):
    """An id prefix names more than one entry."""


class Structure:
    """The shape of one session plus what the viewers derive from it.

    Attributes:
        sm: the ``SessionManager``.
        shape: its :class:`Shape`.
        session_leaf: the manager's current leaf (``None``: no leaf).
        leaf: the leaf the viewer follows (``session_leaf`` unless :meth:`with_leaf`).
        path: numbers root → leaf; ``on_path`` the same as a set.
        labels: entry number → its current label.
    """

    def __init__(self, sm: Any, shape: Shape, labels: dict[int, str], leaf: int | None = None) -> None:
        self.sm = sm
        self.shape = shape
        self.labels = labels
        self.session_leaf = self.number(sm.leaf_id)
        self.leaf = self.session_leaf if leaf is None else leaf
        self.path = self.path_to(self.leaf) if self.leaf is not None else []
        self.on_path = frozenset(self.path)

    def with_leaf(self, leaf: int) -> Structure:
        """The same structure drawn around another leaf (``export --leaf``)."""
        return Structure(self.sm, self.shape, self.labels, leaf)

    def __len__(self) -> int:
        return len(self.shape)

    def number(self, entry_id: Any) -> int | None:
        """The number of ``entry_id``, ``None`` if there is no such entry."""
        if not isinstance(entry_id, str):
            return None
        try:
            i = self.shape.index(entry_id)
        except (KeyError, ValueError, IndexError):
            return None
        return i if isinstance(i, int) and i >= 0 else None

    def id(self, i: int) -> str:
        return self.shape.ids[i]

    def entry(self, i: int) -> dict[str, Any]:
        """The decoded entry ``i`` (the manager decodes it; nothing else is kept here)."""
        entry = self.sm.get_entry(self.shape.ids[i])
        return entry if entry is not None else {"id": self.shape.ids[i], "type": self.shape.types[i]}

    def children(self, i: int) -> Sequence[int]:
        return self.shape.children(i)

    def parent(self, i: int) -> int | None:
        p = self.shape.parents[i]
        return p if p >= 0 else None

    def path_to(self, i: int) -> list[int]:
        """Numbers root → ``i``."""
        parents = self.shape.parents
        out = [i]
        while parents[out[-1]] >= 0:
            out.append(parents[out[-1]])
        out.reverse()
        return out

    def kind(self, i: int) -> str:
        """The role of a message, else the entry type (as ``sessiontree tree`` folds them)."""
        etype = self.shape.types[i]
        if etype == "message":
            role = self.shape.roles[i]
            return role if isinstance(role, str) else "message"
        return etype if isinstance(etype, str) else str(etype)

    def is_tip(self, i: int) -> bool:
        """No children (a leaf of the tree)."""
        return len(self.shape.children(i)) == 0

    def resolve(self, text: str) -> str:
        """The id of the entry ``text`` names: its whole id, or a prefix of exactly one id.

        Raises:
            KeyError: no entry has that id or prefix.
            AmbiguousIdError: the prefix fits several ids.
        """
        if self.number(text) is not None:
            return text
        resolve = getattr(self.sm, "resolve_id", None)
        if resolve is not None:
            try:
                found = resolve(text)
            except (LookupError, ValueError) as e:
                raise AmbiguousIdError(str(e)) if "ambiguous" in str(e).lower() else KeyError(text) from None
            if found is None:
                raise KeyError(text)
            return str(found)
        matches = [eid for eid in self.shape.ids if eid.startswith(text)] if text else []
        if not matches:
            raise KeyError(text)
        if len(matches) > 1:
            raise AmbiguousIdError(f"{len(matches):,} entries start with {text!r}")
        return matches[0]


def structure_of(sm: Any) -> Structure:
    """The :class:`Structure` of an open ``SessionManager`` (call again after a write).

    Uses ``sm.get_shape()`` when the manager has it (the index: no entry decoded but
    the few ``label`` entries), else computes the shape from ``sm.get_tree()``.
    """
    get_shape = getattr(sm, "get_shape", None)
    if get_shape is None:
        shape = ComputedShape(sm.get_tree())
        return Structure(sm, shape, shape.labels)
    shape = get_shape()
    return Structure(sm, shape, _labels(sm, shape))


def _labels(sm: Any, shape: Shape) -> dict[int, str]:
    """Entry number → label, asking the manager (the label rules' home) about each
    entry a ``label`` entry targets."""
    targets: dict[str, None] = {}
    for i, etype in enumerate(shape.types):
        if etype == "label":
            entry = sm.get_entry(shape.ids[i])
            target = entry.get("targetId") if entry is not None else None
            if isinstance(target, str):
                targets[target] = None
    out: dict[int, str] = {}
    for target in targets:
        label = sm.get_label(target)
        if label is not None:
            try:
                n = shape.index(target)
            except (KeyError, ValueError, IndexError):
                continue
            if isinstance(n, int) and n >= 0:
                out[n] = label
    return out
