"""The seam between ``SessionManager`` and its two backends.

``SessionManager`` (``_manager.py``) owns the leaf, the writer and the public API. A
backend owns the *index*: which lines of the session image are accepted entries, how they
link, and the queries over that structure. ``_pure.PythonIndex`` keeps dicts;
``_native.NativeIndex`` keeps integer arrays in Rust. Both implement :class:`TreeIndex`
and must return equal values for every call (``tests/`` run everything on both).

The *image* is the session file's bytes: header line, entry lines, each ended by ``\\n``.
For a file on disk it is the file; for a new, in-memory or migrated session it is built in
memory. Appends through the API extend the image by exactly the bytes written to disk.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ._sizes import size_from_env

if TYPE_CHECKING:
    from typing_extensions import Self

    from ._filestate import FileId, StatUnchanged
    from .schema import SessionTreeNode, TreeShape, UsageTotals

__all__ = [
    "LoadIssue",
    "IssueKind",
    "TreeIndex",
    "ContextPlan",
    "describe_issue",
    "make_issue",
    "issue_order",
    "skipped_lines",
    "gc_paused",
    "CACHE_ENV",
    "DEFAULT_CACHE_BYTES",
    "default_cache_budget",
]

GC_PAUSE_MIN = 64
"""Decodes of at least this many lines pause the cyclic GC (:func:`gc_paused`): enough
allocations that a young collection would run during them."""


@contextmanager
def gc_paused(lines: int = GC_PAUSE_MIN) -> Iterator[None]:
    """Pause Python's cyclic garbage collector while ``lines`` lines become dicts.

    Decoded entries form no reference cycles, so the young-generation collections that
    millions of new dicts trigger find nothing to free and only cost time; both
    backends' bulk decodes run under this (measured in docs/BENCHMARKS.md, "Pausing
    the cyclic GC"). Fewer than :data:`GC_PAUSE_MIN` lines, or a GC already disabled
    by the caller: nothing changes.
    """
    if lines < GC_PAUSE_MIN or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


DEFAULT_CACHE_BYTES = 2 << 30
"""Default budget of the decoded-entry cache, in bytes of the entries' lines (the dicts
take about 2-3x that in memory). Large enough that every entry of a 1 GiB session stays
decoded after a first pass, as the python backend keeps them all."""

CACHE_ENV = "SESSIONTREE_CACHE_BYTES"
"""Environment variable that sets the default budget (``"512MiB"``, ``"0"``, bytes)."""

def default_cache_budget() -> int:
    """The budget from ``$SESSIONTREE_CACHE_BYTES`` (a size such as ``512MiB``), else
    :data:`DEFAULT_CACHE_BYTES`.

    Raises:
        ValueError: the variable is set to something that is not a size
            (``_sizes.size_from_env``).
    """
    return size_from_env(CACHE_ENV, DEFAULT_CACHE_BYTES)


class IssueKind:
    """Reasons a line or entry is reported in ``load_report`` (stable strings)."""

    INVALID_JSON = "invalid_json"  # line is not valid JSON (skipped)
    TRUNCATED = "truncated"  # last line, no final LF, invalid JSON: a write cut short (skipped, pending)
    TORN_FRAGMENT = "torn_fragment"  # bytes that are no object on a line whose objects were read (rule 4)
    NOT_AN_OBJECT = "not_an_object"  # valid JSON but not an object (skipped)
    INVALID_UTF8 = "invalid_utf8"  # bytes replaced by U+FFFD (line kept)
    BOM = "bom"  # UTF-8 BOM before the header, ignored (informational)
    EXTRA_HEADER = "extra_header"  # a second ``session`` line (ignored)
    MISSING_ID = "missing_id"  # entry without a non-empty string id (skipped)
    DUPLICATE_ID = "duplicate_id"  # id already defined by an earlier line (skipped)
    INVALID_PARENT = "invalid_parent"  # parentId absent, empty or not a string/null (entry is a root)
    MISSING_PARENT = "missing_parent"  # parentId names no entry in the file (entry is a root)
    CYCLE = "cycle"  # parent links form a cycle; broken at its earliest entry, which becomes a root
    FIRST_KEPT_OFF_PATH = "first_kept_off_path"  # compaction's firstKeptEntryId not on its own path
    UNKNOWN_TYPE = "unknown_type"  # entry type Pi does not define (kept)
    INVALID_LEAF_TARGET = "invalid_leaf_target"  # a ``leaf`` entry's targetId: not null nor an earlier entry (moves nothing)


@dataclass(frozen=True)
class LoadIssue:
    """One problem found while loading (an item of ``load_report``).

    Attributes:
        kind: one of :class:`IssueKind`'s strings.
        line: 1-based physical line (counting ``\\n`` only), or ``None`` if not about one line.
        offset: 0-based byte offset of the first byte of that line, or ``None``; for a
            ``torn_fragment`` that does not start the line, of the fragment's first byte.
        ids: entry ids involved (e.g. ``(entry, missing_parent)``), possibly empty.
        detail: human-readable explanation; not compared by the differential tests.
    """

    kind: str
    line: int | None
    offset: int | None
    ids: tuple[str, ...] = ()
    detail: str = field(default="", compare=False)


# Rule number of each kind (docs/ARCHITECTURE.md): issues of one line are reported in
# rule order.
_RULE = {
    IssueKind.BOM: 1,
    IssueKind.INVALID_UTF8: 3,
    IssueKind.TORN_FRAGMENT: 4,
    IssueKind.INVALID_JSON: 4,
    IssueKind.TRUNCATED: 4,
    IssueKind.NOT_AN_OBJECT: 5,
    IssueKind.EXTRA_HEADER: 7,
    IssueKind.MISSING_ID: 8,
    IssueKind.DUPLICATE_ID: 8,
    IssueKind.INVALID_PARENT: 9,
    IssueKind.MISSING_PARENT: 9,
    IssueKind.CYCLE: 10,
    IssueKind.FIRST_KEPT_OFF_PATH: 11,
    IssueKind.UNKNOWN_TYPE: 12,
    IssueKind.INVALID_LEAF_TARGET: 13,
}


# The kinds whose line (or, for a torn fragment, bytes of it) is not read as an entry:
# what a command that shows the entries leaves out of its output.
_SKIPPING = frozenset({
    IssueKind.INVALID_JSON, IssueKind.TRUNCATED, IssueKind.TORN_FRAGMENT, IssueKind.NOT_AN_OBJECT,
    IssueKind.EXTRA_HEADER, IssueKind.MISSING_ID, IssueKind.DUPLICATE_ID,
})


def skipped_lines(report: Iterable[LoadIssue]) -> int:
    """How many lines of the file a ``load_report`` says were skipped, in whole or in
    part (a torn write's bytes), each line once; the issues that keep their entry (a
    parent made a root, an unknown type, replaced UTF-8, a BOM) are not skips."""
    return len({(i.line, i.offset if i.line is None else 0) for i in report if i.kind in _SKIPPING})


def issue_order(issue: LoadIssue) -> tuple[int, int, int, bool]:
    """The sort key of ``load_report``: by line (issues without one last), then rule, a
    line's ``missing_parent`` items after its other rule-9 ones (``src/issue.rs``
    ``sort``)."""
    last = issue.kind == IssueKind.MISSING_PARENT
    if issue.line is None:
        return (1, 0, _RULE.get(issue.kind, 99), last)
    return (0, issue.line, _RULE.get(issue.kind, 99), last)


def describe_issue(kind: str, ids: tuple[str, ...] = (), n: int | None = None, text: str | None = None) -> str:
    """The words of a ``load_report`` item, the same for both backends.

    Args:
        kind: an :class:`IssueKind` string.
        ids: the issue's ids.
        n: the number the wording needs: ``duplicate_id`` the line of the first
            definition, ``torn_fragment`` the fragment's bytes,
            ``truncated`` the length of the piece, ``cycle`` its number of entries.
        text: ``unknown_type``: the ``type`` value when it is a string.

    Returns:
        One sentence.
    """
    if kind == IssueKind.BOM:
        return "UTF-8 byte order mark ignored"
    if kind == IssueKind.INVALID_UTF8:
        return "invalid UTF-8 replaced by U+FFFD"
    if kind == IssueKind.TORN_FRAGMENT:
        return f"{n} bytes of a torn write skipped (the line's other objects are read)"
    if kind == IssueKind.INVALID_JSON:
        return "not valid JSON"
    if kind == IssueKind.TRUNCATED:
        return f"incomplete last line ({n} bytes, no LF)"
    if kind == IssueKind.NOT_AN_OBJECT:
        return "valid JSON but not an object"
    if kind == IssueKind.EXTRA_HEADER:
        return "second session header ignored"
    if kind == IssueKind.MISSING_ID:
        return "entry has no non-empty string id"
    if kind == IssueKind.DUPLICATE_ID:
        return f"id {ids[0] if ids else '?'} already defined on line {n}"
    if kind == IssueKind.INVALID_PARENT:
        return "parentId is absent, empty or not a string (entry is a root)"
    if kind == IssueKind.MISSING_PARENT:
        return f"parent {ids[1] if len(ids) > 1 else '?'} is not in the file (entry is a root)"
    if kind == IssueKind.CYCLE:
        return f"parent links form a cycle of {n}; broken at {ids[0] if ids else '?'}"
    if kind == IssueKind.FIRST_KEPT_OFF_PATH:
        if len(ids) > 1:
            return f"firstKeptEntryId {ids[1]!r} is not before the compaction on its path: only the summary is kept"
        return "firstKeptEntryId is absent or not a string: only the summary is kept"
    if kind == IssueKind.UNKNOWN_TYPE:
        return f"unknown entry type {text!r}" if text is not None else "entry type is absent or not a string"
    if kind == IssueKind.INVALID_LEAF_TARGET:
        if len(ids) > 1:
            return f"leaf move to {ids[1]!r}, which is not an earlier entry: the leaf stays"
        return "leaf move whose targetId is absent or not a string: the leaf stays"
    return kind


def make_issue(
    kind: str, line: int | None, offset: int | None, ids: tuple[str, ...] = (), n: int | None = None, text: str | None = None
) -> LoadIssue:
    """A :class:`LoadIssue` worded by :func:`describe_issue`."""
    return LoadIssue(kind, line, offset, ids, describe_issue(kind, ids, n, text))


@dataclass(frozen=True)
class ContextPlan:
    """Which entries make up the LLM context at a leaf, in Pi's order.

    ``build_session_context`` is ``assemble_context(plan, get)``: the plan is computed on
    integer arrays (native) or dicts (python) and only the named entries are decoded.

    Attributes:
        message_ids: context entries after the leading compaction that may contribute
            messages (types message / custom_message / branch_summary), in order;
            ``assemble_context`` drops branch summaries with an empty summary.
        compaction_id: the latest compaction on the path (it leads the context), or
            ``None``.
        thinking_id: the last ``thinking_level_change`` on the path, or ``None``.
        model_id: the last ``model_change`` or assistant ``message`` on the path, or ``None``.
        entry_ids: every context entry in order, whatever it contributes (Pi's
            ``buildContextEntries``; the projection lists them all).
        edits: target id -> the id of the ``context_edit`` (among the context entries)
            that applies to it: the last one in context order.
        active_tools_id: the last ``active_tools_change`` on the path (agent-core's
            harness), or ``None``.
    """

    message_ids: list[str]
    compaction_id: str | None
    thinking_id: str | None
    model_id: str | None
    entry_ids: list[str] = field(default_factory=list)
    edits: dict[str, str] = field(default_factory=dict)
    active_tools_id: str | None = None


class TreeIndex(Protocol):
    """What a backend provides. Ids are ``str``; entries are dicts equal to ``json.loads`` of
    their line (after migration). Unknown ids return ``None`` / empty results, never raise,
    unless stated."""

    backend: str  # "python" or "native"

    @property
    def stat_unchanged(self) -> StatUnchanged | None:
        """The staleness check's early return in one call (``FileWatch.check``), or
        ``None``: the check stats the path with ``os.stat``."""
        ...

    # -- construction --------------------------------------------------------------
    @classmethod
    def open(cls, path: str) -> Self:
        """Index the session file at ``path`` (read-only; never writes).

        Raises ``FileNotFoundError``/``OSError``, or ``InvalidSessionError`` when the file
        has no valid header (loader rule 6). If the header's ``version`` is absent or < 3,
        only the header is indexed and ``needs_migration`` is true: the manager then
        migrates the parsed lines in Python and indexes the v3 image with ``from_image``.
        """
        ...

    @classmethod
    def from_image(cls, data: bytes) -> Self:
        """Index an in-memory image (a new, in-memory or migrated session). Same rules."""
        ...

    @property
    def needs_migration(self) -> bool:
        """The header's version is below 3: only the header is indexed."""
        ...

    # -- the file it read --------------------------------------------------------------
    def file_id(self) -> FileId | None:
        """The identity of the file :meth:`open` read, taken from the open file (not the
        path); ``None`` for an image in memory."""
        ...

    def read_ends(self) -> tuple[int, bytes] | None:
        """``(n, ends)``: the length of the image :meth:`open` indexed and its first and
        last ``_filestate.FINGERPRINT`` bytes as they were read (``indexed_ends`` of a
        file holding them gives the same), the staleness check's first baseline;
        ``None`` for an image in memory or when the read did not keep them."""
        ...

    # -- whole-image facts ---------------------------------------------------------
    def header(self) -> dict[str, Any]: ...
    def load_report(self) -> list[LoadIssue]: ...
    def __len__(self) -> int: ...  # accepted entries
    def ids(self) -> list[str]: ...  # file order
    def entries(self) -> list[dict[str, Any]]: ...  # file order
    def last_id(self) -> str | None: ...  # last accepted entry
    def file_leaf(self) -> str | None: ...  # the leaf on open (rule 13; None: before the first entry)
    def image_len(self) -> int: ...  # bytes of the image consumed (complete lines only)
    def has_pending_tail(self) -> bool: ...  # a partial last line (no LF) is waiting

    # -- lookups ---------------------------------------------------------------------
    def __contains__(self, entry_id: object) -> bool: ...
    def get(self, entry_id: str) -> dict[str, Any] | None: ...
    def get_many(self, entry_ids: list[str], clip: int | None = None) -> list[dict[str, Any] | None]: ...  # None: unknown; clip: _clip.py
    def raw_line(self, entry_id: str) -> bytes | None: ...  # the line's bytes, no CR/LF
    def raw_lines(self, entry_ids: list[str]) -> list[bytes | None]: ...  # raw_line of each, in one read
    def children(self, entry_id: str) -> list[dict[str, Any]]: ...  # file order
    def path(self, entry_id: str | None) -> list[dict[str, Any]]: ...  # root -> entry
    def path_ids(self, entry_id: str | None) -> list[str]: ...
    def tree(self) -> list[SessionTreeNode]: ...
    def label(self, entry_id: str) -> str | None: ...
    def labels(self) -> dict[str, str]: ...  # target id -> label, in order labels were set
    def label_timestamp(self, entry_id: str) -> str | None: ...  # of the label entry that set it
    def session_name(self) -> str | None: ...
    def context_plan(self, leaf_id: str | None) -> ContextPlan: ...

    # -- structure (answered from the index, no entry decoded) ----------------------
    def shape(self) -> TreeShape: ...
    def parent_id(self, entry_id: str) -> str | None: ...  # None: a root or unknown
    def children_ids(self, entry_id: str) -> list[str]: ...  # file order
    def leaf_ids(self) -> list[str]: ...  # entries without children, file order
    def entry_type(self, entry_id: str) -> str | None: ...  # "?" another type, None unknown id
    def ids_with_prefix(self, prefix: str, limit: int) -> tuple[list[str], int]: ...
    def usage_totals(self) -> UsageTotals: ...

    # -- growth ------------------------------------------------------------------------
    def append_line(self, line: bytes) -> str:
        """Index one entry line (no LF) appended to the image; return its id.

        The caller has written ``line + b"\\n"`` to the file (or will, on first flush),
        preceded by one ``b"\\n"`` if ``has_pending_tail()`` (the fragment then becomes an
        ordinary invalid line and is reported as such).
        """
        ...

    def refresh(self, path: str) -> int:
        """Index complete lines appended to ``path`` since ``image_len()``; return how many
        entries were added. A partial last line stays pending. Raises
        ``StaleSessionError`` if the file shrank below ``image_len()`` or was replaced."""
        ...

    def close(self) -> None: ...

    # -- tables (``sessiontree.tables``) -----------------------------------------------
    def entries_range(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Entries numbered ``start`` to ``stop - 1`` in file order (a whole-file pass
        reads them batch by batch; native decodes them on each call)."""
        ...

    def table_rows(self, start: int, stop: int) -> dict[str, bytes] | None:
        """The decoded columns of the ``entries`` and ``tool_calls`` tables for entries
        ``start`` to ``stop - 1`` in Arrow layouts (the native core's ``Index.table_rows``,
        whose docstring names the buffers), or ``None`` where the backend has none (the
        python backend: ``_rows`` decodes its entries; tests hold the two equal).

        Raises:
            StaleSessionError: a line changed in the file since it was indexed.
        """
        ...

    def table_columns(self, leaf_id: str | None) -> dict[str, bytes]:
        """The index's per-entry columns of the ``entries`` table, in Arrow layouts
        (little-endian values; validity and boolean bitmaps LSB first, 1 = valid/true),
        entries in file order: ``id_offsets`` (i32, n + 1) and ``id_data`` (UTF-8; a
        lone surrogate's bytes become U+FFFD each, as ``decode("utf-8", "replace")`` of
        its ``surrogatepass`` form); ``line``, ``offset``, ``length`` (i64: 1-based line,
        byte offset and length of the entry's JSON text in the image); ``parent`` (i32
        entry number, 0 where null) and ``parent_valid``; ``depth`` (i32, roots 0);
        ``on_path`` (on root -> ``leaf_id``; none for ``None`` / unknown); ``timestamp``
        (i64 ms, ``parse_iso_ms``, 0 where null) and ``timestamp_valid``."""
        ...
