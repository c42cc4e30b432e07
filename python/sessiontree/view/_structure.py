"""A session's structure for the viewers (``sessiontree browse``, ``sessiontree export``).

The viewers need the tree's *shape* (ids, types, roles, parent links, child order) for
every entry, and the decoded entry only for what they show: :func:`structure_of` takes
it from ``SessionManager.get_shape()`` (the index: no entry decoded) and the labels
from ``get_labels()``; everything else here (paths, leaves, branch points, prefixes) is
computed from the shape. ``tests/test_view_structure.py`` holds it against
``get_tree``, ``get_branch`` and ``get_label``.

Entries are numbered as the shape numbers them (file order, ``0 .. len - 1``); order
among siblings is ``children(i)`` (``get_tree`` order: oldest first) and among roots
``roots`` (file order).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from ._ids import AmbiguousIdError, resolve_id

__all__ = ["Shape", "Structure", "structure_of", "AmbiguousIdError", "STREAM_BATCH"]

STREAM_BATCH = 256
"""Entries :meth:`Structure.entries` decodes at a time (a few MB of lines at Pi's sizes)."""


class Shape(Protocol):
    """What the viewers read of the manager's ``TreeShape``.

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
    def children_table(self) -> tuple[Sequence[int], Sequence[int]]: ...
    def index(self, entry_id: str) -> Any: ...
    def __len__(self) -> int: ...


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

    def entries(self, nums: Sequence[int], *, clip: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(number, decoded entry)`` for each of ``nums``, in order, for a viewer that
        reads each entry once (an export): decoded :data:`STREAM_BATCH` at a time and
        not kept, so memory holds one batch whatever the path's length (the manager's
        cache held off, :meth:`uncached`). ``clip``: each entry's long strings cut to
        that many characters (``SessionManager.get_entries_by_id``), for previews."""
        sm = self.sm
        with self.uncached():
            ids = self.shape.ids
            for at in range(0, len(nums), STREAM_BATCH):
                batch = nums[at:at + STREAM_BATCH]
                for n, entry in zip(batch, sm.get_entries_by_id([ids[n] for n in batch], clip=clip)):
                    yield n, entry if entry is not None else {"id": ids[n], "type": self.shape.types[n]}

    def lines(self, nums: Sequence[int]) -> Iterator[tuple[Sequence[int], list[str], list[bytes | None]]]:
        """``(numbers, their ids, their JSON texts)`` for ``nums``, :data:`STREAM_BATCH`
        at a time (``SessionManager.get_lines_by_id``; ``None`` for an entry the manager
        no longer has), for a viewer that renders the text itself (the exports)."""
        ids = self.shape.ids
        for at in range(0, len(nums), STREAM_BATCH):
            batch = nums[at:at + STREAM_BATCH]
            batch_ids = [ids[n] for n in batch]
            yield batch, batch_ids, self.sm.get_lines_by_id(batch_ids)

    @contextmanager
    def uncached(self) -> Iterator[None]:
        """While it is open the manager's decoded-entry cache holds nothing
        (``cache_budget`` 0; the python backend keeps every entry anyway), for a viewer
        that reads every entry once (an export's page and sidebar); its budget is given
        back after."""
        sm = self.sm
        budget = getattr(sm, "cache_budget", None)
        if budget:
            sm.cache_budget = 0
        try:
            yield
        finally:
            if budget:
                sm.cache_budget = budget

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
        return resolve_id(self.sm, text, self.shape.ids)


def structure_of(sm: Any) -> Structure:
    """The :class:`Structure` of an open ``SessionManager`` (call again after a write):
    the shape from ``get_shape()``, the labels from ``get_labels()``; no entry is
    decoded but the ``label`` lines."""
    shape = sm.get_shape()
    return Structure(sm, shape, _labels(sm, shape))


def _labels(sm: Any, shape: Shape) -> dict[int, str]:
    """Entry number → its current label (the manager holds the label rules; a label of
    an id that is not an entry is left out)."""
    out: dict[int, str] = {}
    for target, label in sm.get_labels().items():
        try:
            out[shape.index(target)] = label
        except KeyError:
            continue
    return out
