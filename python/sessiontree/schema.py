"""The typed surface of a Pi session file (format version 3).

Entries stay plain ``dict``\\ s equal to ``json.loads`` of their line (CONTRACT §2);
the ``TypedDict``\\ s here only describe them for type checkers and readers. Key names are
the file's camelCase keys. Types and field rules follow Pi's
``packages/coding-agent/src/core/session-manager.ts`` (``SessionHeader``,
``SessionEntry``...) and ``messages.ts`` (``BashExecutionMessage``, ``CustomMessage``,
``BranchSummaryMessage``, ``CompactionSummaryMessage``); agent messages come from
``@mariozechner/pi-ai``. ``NotRequired`` marks keys Pi omits when unset (it never writes
``null`` for them). Real files may hold anything: code must not trust these types.

Also here: :class:`SessionTreeNode` (``getTree()`` nodes), :class:`TreeShape` (the
tree by ids, types and links, without entries), :class:`UsageTotals` and
:class:`SessionInfo` (listing rows).
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypedDict, Union, overload

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # Python 3.10 (a dependency there, as for rich)
    from typing_extensions import NotRequired

from .errors import EntryNotFoundError


__all__ = [
    # header and entries
    "SessionHeader",
    "EntryBase",
    "MessageEntry",
    "CustomMessageEntry",
    "CompactionEntry",
    "BranchSummaryEntry",
    "ModelChangeEntry",
    "ThinkingLevelChangeEntry",
    "LabelEntry",
    "SessionInfoEntry",
    "CustomEntry",
    "UsageEntry",
    "ContextEditEntry",
    "ActiveToolsChangeEntry",
    "LeafEntry",
    "SessionEntry",
    "ENTRY_TYPES",
    "ENTRY_DICTS",
    "MESSAGE_ROLES",
    # content blocks
    "TextContent",
    "ImageContent",
    "blob_sha256",
    "ThinkingContent",
    "ToolCall",
    "Usage",
    "UsageCost",
    # agent messages
    "UserMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "BashExecutionMessage",
    "CustomMessage",
    "AgentMessage",
    # synthesised messages
    "CompactionSummaryMessage",
    "BranchSummaryMessage",
    "ContextModel",
    # dataclasses
    "SessionTreeNode",
    "TreeShape",
    "UsageTotals",
    "SessionInfo",
]

CURRENT_SESSION_VERSION = 3


# ------------------------------------------------------------------------ header


class SessionHeader(TypedDict):
    """Line 1: ``{"type":"session","version":3,"id","timestamp","cwd","parentSession"?}``.

    ``version`` is absent in v1 files. ``id`` is a UUID (v7 in recent Pi); ``timestamp``
    is ISO-8601 UTC with milliseconds; ``parentSession`` is the path of the file this
    one was forked / branched from (session-manager.ts ``SessionHeader``). ``metadata``
    is agent-core's (``packages/agent/src/harness/session/jsonl-storage.ts``
    ``SessionHeader``): an object the host keeps with the session.
    """

    type: Literal["session"]
    version: NotRequired[int]
    id: str
    timestamp: str
    cwd: str
    parentSession: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]


# ----------------------------------------------------------------- content blocks


class TextContent(TypedDict):
    """``{"type":"text","text", "textSignature"?}``."""

    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]


class ImageContent(TypedDict):
    """``{"type":"image","data": <base64>,"mimeType"}``. oh-my-pi moves a large image's
    bytes to its blob store and writes ``data: "blob:sha256:<64 hex>"`` instead
    (:func:`blob_sha256`)."""

    type: Literal["image"]
    data: str
    mimeType: str


_BLOB_PREFIX = "blob:sha256:"
_HEX = frozenset("0123456789abcdef")


def blob_sha256(data: object) -> str | None:
    """The SHA-256 an image's ``data`` names when it is oh-my-pi's blob reference.

    oh-my-pi (its session-format documentation) externalises large ``image.data`` as
    ``blob:sha256:<64 lowercase hex>``, the hash of the raw bytes kept in its blob store
    (``~/.omp/agent/blobs/<hash>``); a reference of any other form is malformed and is
    not one (never read as a path).

    Returns:
        The 64 hex digits, or ``None`` when ``data`` is no such reference.
    """
    if type(data) is not str or len(data) != len(_BLOB_PREFIX) + 64 or not data.startswith(_BLOB_PREFIX):
        return None
    digest = data[len(_BLOB_PREFIX):]
    return digest if _HEX.issuperset(digest) else None


class ThinkingContent(TypedDict):
    """``{"type":"thinking","thinking","thinkingSignature"?}`` (assistant only)."""

    type: Literal["thinking"]
    thinking: str
    thinkingSignature: NotRequired[str]


class ToolCall(TypedDict):
    """``{"type":"toolCall","id","name","arguments": {...}}`` (assistant only)."""

    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any]


class UsageCost(TypedDict):
    """Dollar costs: ``input``, ``output``, ``cacheRead``, ``cacheWrite``, ``total``."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float


class Usage(TypedDict):
    """Token counts of one assistant turn plus its :class:`UsageCost`."""

    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int
    cost: UsageCost


# ------------------------------------------------------------------ agent messages


class UserMessage(TypedDict):
    """``{"role":"user","content": str | [text|image blocks],"timestamp": ms}``."""

    role: Literal["user"]
    content: str | list[TextContent | ImageContent]
    timestamp: int


class AssistantMessage(TypedDict):
    """An LLM reply. ``provider``/``model`` feed the context's model (buildSessionContext).

    ``stopReason`` is one of ``stop``, ``length``, ``toolUse``, ``error``, ``aborted``;
    ``errorMessage`` accompanies ``error``/``aborted``.
    """

    role: Literal["assistant"]
    content: list[TextContent | ThinkingContent | ToolCall]
    api: str
    provider: str
    model: str
    usage: Usage
    stopReason: str
    errorMessage: NotRequired[str]
    timestamp: int


class ToolResultMessage(TypedDict):
    """``{"role":"toolResult","toolCallId","toolName","content","details"?,"isError","timestamp"}``."""

    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[TextContent | ImageContent]
    details: NotRequired[Any]
    isError: bool
    timestamp: int


class BashExecutionMessage(TypedDict):
    """A ``!`` shell command run by the user (messages.ts ``BashExecutionMessage``).

    ``convert_to_llm`` turns it into a user text message unless ``excludeFromContext``
    is truthy (``!!`` prefix). ``exitCode`` may be absent/null (killed).
    """

    role: Literal["bashExecution"]
    command: str
    output: str
    exitCode: NotRequired[int | None]
    cancelled: bool
    truncated: bool
    fullOutputPath: NotRequired[str]
    timestamp: int
    excludeFromContext: NotRequired[bool]


class CustomMessage(TypedDict):
    """Extension-injected message (messages.ts ``CustomMessage``); also what a
    ``custom_message`` entry becomes in the context (``createCustomMessage``):
    ``{"role":"custom","customType","content","display","details"?,"timestamp": ms}``.
    ``role`` was ``hookMessage`` in version 2 files.
    """

    role: Literal["custom"]
    customType: str
    content: str | list[TextContent | ImageContent]
    display: bool
    details: NotRequired[Any]
    timestamp: int | None


class CompactionSummaryMessage(TypedDict):
    """Synthesised for the latest compaction on the path (``createCompactionSummaryMessage``):
    ``{"role":"compactionSummary","summary","tokensBefore","timestamp": ms}``.

    ``timestamp`` is the entry's ISO time in epoch ms (``None`` where JavaScript gets NaN).
    """

    role: Literal["compactionSummary"]
    summary: str
    tokensBefore: int
    timestamp: int | None


class BranchSummaryMessage(TypedDict):
    """Synthesised for a ``branch_summary`` entry with a truthy summary
    (``createBranchSummaryMessage``): ``{"role":"branchSummary","summary","fromId","timestamp"}``.
    """

    role: Literal["branchSummary"]
    summary: str
    fromId: str
    timestamp: int | None


AgentMessage = Union[
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    BashExecutionMessage,
    CustomMessage,
    CompactionSummaryMessage,
    BranchSummaryMessage,
]
"""What ``SessionContext.messages`` holds (message entries' ``message`` as stored, plus the
synthesised kinds). Unknown roles pass through the context and are dropped by
``convert_to_llm``."""


class ContextModel(TypedDict):
    """``SessionContext.model``: ``{"provider","modelId"}``; a key is absent where Pi's
    value is ``undefined`` (e.g. an assistant message without ``provider``)."""

    provider: NotRequired[str]
    modelId: NotRequired[str]


# ------------------------------------------------------------------------- entries


class EntryBase(TypedDict):
    """Keys of every entry, first in this order: ``type``, ``id`` (8 lowercase hex from
    Pi; any non-empty string accepted), ``parentId`` (``None`` = root), ``timestamp``
    (ISO-8601 UTC, ms, ``Z``). An entry never names its children."""

    type: str
    id: str
    parentId: str | None
    timestamp: str


class MessageEntry(EntryBase):
    """``type: "message"``: one agent message, sent to the LLM as is."""

    message: AgentMessage


class CustomMessageEntry(TypedDict):
    """``type: "custom_message"``: extension content that *does* enter the context (as a
    ``custom`` message). Pi writes ``customType``, ``content``, ``display``, ``details``?
    before ``id``/``parentId``/``timestamp`` (``appendCustomMessageEntry``)."""

    type: Literal["custom_message"]
    customType: str
    content: str | list[TextContent | ImageContent]
    display: bool
    details: NotRequired[Any]
    id: str
    parentId: str | None
    timestamp: str


class CompactionEntry(EntryBase):
    """``type: "compaction"``: the path before ``firstKeptEntryId`` is replaced by
    ``summary`` in the context; the latest compaction on the path wins."""

    summary: str
    firstKeptEntryId: str
    tokensBefore: int
    details: NotRequired[Any]
    fromHook: NotRequired[bool]


class BranchSummaryEntry(EntryBase):
    """``type: "branch_summary"``: summary of an abandoned branch (``branchWithSummary``);
    ``fromId`` is the entry branched from, or ``"root"``."""

    fromId: str
    summary: str
    details: NotRequired[Any]
    fromHook: NotRequired[bool]


class ModelChangeEntry(EntryBase):
    """``type: "model_change"``: sets the model for later calls."""

    provider: str
    modelId: str


class ThinkingLevelChangeEntry(EntryBase):
    """``type: "thinking_level_change"``: ``off``, ``minimal``, ``low``, ``medium``, ``high``..."""

    thinkingLevel: str


class LabelEntry(EntryBase):
    """``type: "label"``: bookmark ``label`` on ``targetId``; absent/empty clears it."""

    targetId: str
    label: NotRequired[str]


class SessionInfoEntry(EntryBase):
    """``type: "session_info"``: display name (trimmed by Pi when appended)."""

    name: NotRequired[str]


class CustomEntry(TypedDict):
    """``type: "custom"``: extension state, never in the context. Pi writes
    ``customType``/``data``? before ``id``/``parentId``/``timestamp``."""

    type: Literal["custom"]
    customType: str
    data: NotRequired[Any]
    id: str
    parentId: str | None
    timestamp: str


class UsageEntry(EntryBase):
    """``type: "usage"`` (Pi 0.87+ ``appendUsage``): usage not tied to a message."""

    kind: str
    provider: str
    model: str
    usage: Usage
    note: NotRequired[str]


class ContextEditEntry(EntryBase):
    """``type: "context_edit"`` (Pi 0.87+ ``appendContextEdit``): from here on, the
    target contributes ``replacement["content"]`` to the context, or (``None``) nothing."""

    targetId: str
    replacement: dict[str, Any] | None


class ActiveToolsChangeEntry(EntryBase):
    """``type: "active_tools_change"`` (agent-core's harness, ``packages/agent/src/
    harness/types.ts`` ``ActiveToolsChangeEntry``): the tools the model may call from
    here on; the last one on the path is the context's ``active_tool_names``."""

    activeToolNames: list[str]


class LeafEntry(EntryBase):
    """``type: "leaf"`` (agent-core's harness, ``LeafEntry``): a persisted leaf move,
    written by ``setLeafId`` with ``parentId`` = the leaf before the move. After it the
    leaf is ``targetId`` (``None``: before the first entry); it is a tree node like any
    entry, with no children of its own (the next entry's parent is the target)."""

    targetId: str | None


SessionEntry = Union[
    MessageEntry,
    CustomMessageEntry,
    CompactionEntry,
    BranchSummaryEntry,
    ModelChangeEntry,
    ThinkingLevelChangeEntry,
    LabelEntry,
    SessionInfoEntry,
    CustomEntry,
    UsageEntry,
    ContextEditEntry,
    ActiveToolsChangeEntry,
    LeafEntry,
]

ENTRY_DICTS: dict[str, Any] = {
    "message": MessageEntry,
    "custom_message": CustomMessageEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "model_change": ModelChangeEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
    "custom": CustomEntry,
    "usage": UsageEntry,
    "context_edit": ContextEditEntry,
    "active_tools_change": ActiveToolsChangeEntry,
    "leaf": LeafEntry,
}
"""The ``TypedDict`` of each entry type (one row per type; :data:`SessionEntry` lists the
same classes, ``tests/test_entry_types.py`` holds the two equal)."""

ENTRY_TYPES = frozenset(ENTRY_DICTS)
"""The entry types Pi 0.99's coding agent and agent-core's harness define (the
harness's ``SessionTreeEntry`` adds ``active_tools_change`` and ``leaf``); others are
kept and reported ``unknown_type``."""

MESSAGE_ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom", "system")
"""The ``message.role`` values Pi writes (``src/kind.rs``'s ``Role``; ``tests/test_tables.py``
holds the two equal); :attr:`TreeShape.roles` shows any other string as it is."""


# --------------------------------------------------------------------- dataclasses


@dataclass(eq=True)
class SessionTreeNode:
    """One node of ``get_tree()`` (session-manager.ts ``getTree``).

    Attributes:
        entry: the entry dict.
        children: child nodes, oldest first (by parsed timestamp, stable; ties and
            unparseable times keep file order).
        label: the entry's current label, or ``None``.
        label_timestamp: timestamp of the label entry that set that label, or ``None``.

    Fields are meant to be read, not reassigned; ``children`` is a list so trees can be
    built iteratively (``frozen`` would forbid that). Comparison is structural; ``repr``
    shows only the id and child count (trees can be deep).
    """

    entry: dict[str, Any]
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None

    def __repr__(self) -> str:
        return (
            f"SessionTreeNode(id={self.entry.get('id')!r}, type={self.entry.get('type')!r}, "
            f"label={self.label!r}, children={len(self.children)})"
        )

    def __eq__(self, other: object) -> bool:
        # Iterative: the dataclass default recurses and would overflow on deep trees.
        if not isinstance(other, SessionTreeNode):
            return NotImplemented
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if (
                a.entry != b.entry
                or a.label != b.label
                or a.label_timestamp != b.label_timestamp
                or len(a.children) != len(b.children)
            ):
                return False
            stack.extend(zip(a.children, b.children))
        return True

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class SessionInfo:
    """One row of ``SessionManager.list`` / ``list_all`` (session-manager.ts ``SessionInfo``,
    ``buildSessionInfo``).

    Attributes:
        path: the session file.
        id: the header's ``id``.
        cwd: the header's ``cwd`` (``""`` if absent or not a string).
        name: display name from the last ``session_info`` entry (trimmed), or ``None``.
        parent_session_path: the header's ``parentSession``, or ``None``.
        created: the header's time (aware, UTC); the file's mtime if unparseable.
        modified: the last user/assistant message time, else the header time, else the
            file's mtime (aware, UTC).
        message_count: number of ``message`` entries (any role).
        first_message: text of the first user message with text, or ``"(no messages)"``.
        all_messages_text: texts of all user/assistant messages, joined by spaces. A
            listing reads it from the file when it is first used (of the bytes the
            listing read; ``OSError`` if the file can no longer be read).
    """

    path: str
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str = field(repr=False)  # may be megabytes: not in a printout


# ---------------------------------------------------------------------- tree shape


_NO_TIME = -(1 << 63)
"""``timestamps_ms`` item for an entry whose timestamp does not parse (stored as i64)."""


class CodeColumn(Sequence[Any]):
    """One small code per entry shown as a name: ``names[code]``, or for code
    ``len(names) - 1`` when ``others`` is given, the entry's own string in ``others``.

    Backs :attr:`TreeShape.types` and :attr:`TreeShape.roles` with one byte per entry.
    Equal to any sequence holding the same names in the same order.
    """

    __slots__ = ("_codes", "_names", "_others")

    def __init__(self, codes: bytes, names: tuple[Any, ...], others: dict[int, str] | None = None) -> None:
        self._codes = codes
        self._names = names
        self._others = others

    def __len__(self) -> int:
        return len(self._codes)

    @property
    def codes(self) -> bytes:
        """One code per entry: ``names[code]`` is its name, except the ``others`` code."""
        return self._codes

    @property
    def names(self) -> tuple[Any, ...]:
        """The name of each code; with ``others``, the last code's name is a placeholder."""
        return self._names

    @property
    def others(self) -> dict[int, str] | None:
        """Entry number -> its own string, for the entries with the last code (``None``:
        that code is a name like the others)."""
        return self._others

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        c = self._codes[i]
        if self._others is not None and c == len(self._names) - 1:
            return self._others[i if i >= 0 else i + len(self._codes)]
        return self._names[c]

    def __iter__(self) -> Iterator[Any]:
        codes, names, others = self._codes, self._names, self._others
        if not others:
            return map(names.__getitem__, codes)
        if len(others) != codes.count(len(names) - 1):
            return (self[i] for i in range(len(codes)))  # fails where indexing fails
        # The names of every code, then each other entry's own string over its slot:
        # a generator of __getitem__ calls cost 0.25 s per 800k entries.
        out = list(map(names.__getitem__, codes))
        for i, name in others.items():
            out[i] = name
        return iter(out)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def counts(self) -> Counter[Any]:
        """``Counter(self)`` (same counts, same order: first occurrence), counted over
        the codes (``bytes.count``) rather than by iterating every entry's name."""
        codes, names = self._codes, self._names
        other = len(names) - 1 if self._others is not None else -1
        firsts: list[tuple[int, Any, int]] = []
        for c in set(codes):
            if c != other:
                firsts.append((codes.find(c), names[c], codes.count(c)))
        if other >= 0 and other in codes:
            assert self._others is not None
            if len(self._others) != codes.count(other):
                return Counter(iter(self))  # as iterating would (or fail as it would)
            seen: dict[str, list[int]] = {}
            for i, name in sorted(self._others.items()):
                seen.setdefault(name, [i, 0])[1] += 1
            firsts.extend((i, name, k) for name, (i, k) in seen.items())
        out: Counter[Any] = Counter()
        for _, name, k in sorted(firsts, key=lambda f: f[0]):
            out[name] += k  # two codes may show as one name ("?" and an other role "?")
        return out

    def __repr__(self) -> str:
        return f"CodeColumn({len(self)} entries)"


class TimeColumn(Sequence["int | None"]):
    """``Date.parse(timestamp)`` per entry in ms (``None``: it does not parse), over an
    ``array('q')``. Equal to any sequence holding the same values."""

    __slots__ = ("_ms",)

    def __init__(self, ms: array[int]) -> None:
        self._ms = ms

    def __len__(self) -> int:
        return len(self._ms)

    @overload
    def __getitem__(self, i: int) -> int | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[int | None]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [None if t == _NO_TIME else t for t in self._ms[i]]
        t = self._ms[i]
        return None if t == _NO_TIME else t

    def __iter__(self) -> Iterator[int | None]:
        return (None if t == _NO_TIME else t for t in self._ms)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TimeColumn):
            return self._ms == other._ms
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TimeColumn({len(self)} entries)"


class IdColumn(Sequence[str]):
    """Entry ids ``0 .. n - 1`` read from a backend's index when asked: one id at a time
    by ``one(i)``, or all of them by ``many()`` on the first iteration or slice (then
    kept). Backs :attr:`TreeShape.ids` for the native backend, whose 800k-entry shape
    cost 0.1 s in building every id string that ``info`` and ``tree`` never read.
    Equal to any sequence holding the same ids in the same order.

    Args:
        n: how many entries (the snapshot: later entries are not part of it).
        one: the id of entry ``i`` (``0 <= i < n``).
        many: the ids of at least the first ``n`` entries, in file order.
    """

    __slots__ = ("_n", "_one", "_many", "_all")

    def __init__(self, n: int, one: Callable[[int], str], many: Callable[[], Sequence[str]]) -> None:
        self._n = n
        self._one = one
        self._many = many
        self._all: list[str] | None = None

    def __len__(self) -> int:
        return self._n

    def _list(self) -> list[str]:
        if self._all is None:
            self._all = list(self._many())
            del self._all[self._n :]  # entries appended after the snapshot
        return self._all

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if self._all is not None or isinstance(i, slice):
            return self._list()[i]
        n = self._n
        if not -n <= i < n:  # also raises TypeError for a non-int, as a list does
            raise IndexError("entry number out of range")
        return self._one(i + n if i < 0 else i)

    def __iter__(self) -> Iterator[str]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and self._list() == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IdColumn({self._n} entries)"


@dataclass(frozen=True, repr=False)
class TreeShape:
    """The session tree by ids, types and links, without decoding any entry
    (``SessionManager.get_shape``). Entries are numbered ``0 .. len - 1`` in file order;
    every sequence has one item per entry unless said.

    Attributes:
        ids: entry ids in file order.
        types: each entry's ``type`` when it is one of :data:`ENTRY_TYPES`, else ``"?"``.
        roles: ``message.role`` of a ``message`` entry whose role is a string, else
            ``None``.
        parents: the number of each entry's parent after cycle breaking (loader rule
            10), ``-1`` for a root.
        roots: the roots' numbers in file order (as ``get_tree`` lists them).
        timestamps_ms: ``Date.parse(timestamp)`` in epoch milliseconds, ``None`` when the
            timestamp is absent or does not parse.

    Compact arrays back it (one byte per entry for ``types`` and ``roles``); it is a
    snapshot, unchanged by later appends. Two shapes are equal when every column and
    every child order is.
    """

    ids: Sequence[str]
    types: Sequence[str]
    roles: Sequence[str | None]
    parents: Sequence[int]
    roots: Sequence[int]
    timestamps_ms: Sequence[int | None]
    # Children in get_tree order as CSR: those of i are _kids[_start[i]:_start[i + 1]].
    _start: Sequence[int] = field(default_factory=lambda: array("I", [0]))
    _kids: Sequence[int] = field(default_factory=lambda: array("I"))
    _memo: dict[str, Any] = field(default_factory=dict, compare=False)
    # The backend's own id look-up (entry number or None; numbers past the snapshot are
    # later appends), so that index() builds no dict of every id; may fail once the
    # session is closed, and then the dict is built.
    _find: Callable[[str], int | None] | None = field(default=None, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"TreeShape({len(self.ids)} entries, {len(self.roots)} roots)"

    def _entry(self, i: int) -> int:
        n = len(self.ids)
        if not isinstance(i, int) or not -n <= i < n:
            raise IndexError(f"entry number {i!r} out of range for {n} entries")
        return i + n if i < 0 else i

    def children(self, i: int) -> Sequence[int]:
        """The children of entry ``i``, in ``get_tree`` order: oldest first by
        ``timestamps_ms`` (stable; unparseable times after the rest, in file order).

        Raises:
            IndexError: ``i`` is not an entry number.
        """
        i = self._entry(i)
        return self._kids[self._start[i] : self._start[i + 1]]

    def children_table(self) -> tuple[Sequence[int], Sequence[int]]:
        """``(start, kids)``: the children of entry ``i`` in ``get_tree`` order are
        ``kids[start[i]:start[i + 1]]`` (``start`` has ``len + 1`` items). For walks
        over every entry, which :meth:`children` would slice once each."""
        return self._start, self._kids

    def child_counts(self) -> array[int]:
        """How many children each entry has (one item per entry, file order)."""
        start = self._start if isinstance(self._start, array) else array("I", self._start)
        out = array(start.typecode)
        if len(start) > 1:
            # ``start`` never decreases, so read as integers, start[1:] - start[:-1]
            # subtracts lane by lane without a borrow: one subtraction instead of a
            # Python step per entry (0.08 s per 800k entries).
            hi, lo = (int.from_bytes(a.tobytes(), sys.byteorder) for a in (start[1:], start[:-1]))
            out.frombytes((hi - lo).to_bytes(start.itemsize * (len(start) - 1), sys.byteorder))
        return out

    def index(self, entry_id: str) -> int:
        """The number of the entry with this id.

        Raises:
            EntryNotFoundError: no such id (a ``KeyError``).
        """
        by_id = self._memo.get("by_id")
        if by_id is None and self._find is not None and isinstance(entry_id, str):
            try:
                n = self._find(entry_id)
            except Exception:  # noqa: BLE001 - the index is gone: answer from the ids
                object.__setattr__(self, "_find", None)
            else:
                if n is None or n >= len(self.ids):
                    raise EntryNotFoundError(entry_id)
                return n
        if by_id is None:
            by_id = self._memo["by_id"] = dict(zip(self.ids, range(len(self.ids))))
        try:
            return by_id[entry_id]  # type: ignore[no-any-return]
        except (KeyError, TypeError):
            raise EntryNotFoundError(entry_id) from None

    def depth(self, i: int) -> int:
        """How many ancestors entry ``i`` has (0 for a root).

        Raises:
            IndexError: ``i`` is not an entry number.
        """
        i = self._entry(i)
        depths = self._memo.get("depth")
        if depths is None:
            depths = self._memo["depth"] = self._depths()
        return depths[i]  # type: ignore[no-any-return]

    def _depths(self) -> array[int]:
        depths = array("i", bytes(4 * len(self.ids)))
        start, kids = self._start, self._kids
        order = list(self.roots)
        for v in order:  # breadth first; grows while it runs
            a, b = start[v], start[v + 1]
            if b > a:
                d = depths[v] + 1
                for c in kids[a:b]:
                    depths[c] = d
                order.extend(kids[a:b])
        return depths


@dataclass(frozen=True)
class UsageTotals:
    """What the assistant messages of a session spent, on every branch
    (``SessionManager.get_usage_totals``).

    For each ``message`` entry whose ``message.role`` is ``"assistant"``, in file order:
    the JSON numbers (not booleans) among ``message.usage``'s ``input``, ``output``,
    ``cacheRead``, ``cacheWrite`` and ``totalTokens`` and ``message.usage.cost.total``
    are summed as Python sums them (integers exactly; once a float joins, in floating
    point; an integer too large for a float makes a float sum infinite).

    Attributes:
        tokens: ``{"input", "output", "cacheRead", "cacheWrite", "totalTokens"}`` sums.
        cost: the ``cost.total`` sum (dollars, as Pi records it).
        models: ``(provider, model, count)`` per distinct pair of ``message.provider`` and
            ``message.model`` values (``None`` when absent), in order of first use.
        messages: assistant messages counted.
    """

    tokens: dict[str, int | float]
    cost: int | float
    models: list[tuple[Any, Any, int]]
    messages: int

    @property
    def pi_total(self) -> int | float:
        """The total tokens as Pi counts them: ``input + output + cacheRead +
        cacheWrite`` of :attr:`tokens`, not the recorded ``totalTokens`` summed, which a
        provider may leave out (0 then) or fill otherwise (what ``info`` shows).

        Pi's rule: ``AgentSession.getSessionStats`` in Pi's coding agent
        (``packages/coding-agent/src/core/agent-session.ts``: ``tokens.total =
        totalInput + totalOutput + totalCacheRead + totalCacheWrite``; ``/session``
        shows it). Pi sums the messages of the context it holds; these sums are every
        branch's.

        Returns:
            An ``int`` when the four are; else their exact sum rounded once to a
            ``float`` (``inf``/``-inf`` past the doubles), whatever their order: a NaN,
            or both infinities, give NaN; one infinity wins (adversaries 61b, 61c:
            added in turn, ``10**400 + 0.5 - 10**400`` was ``inf`` one way round and
            ``0.5`` the other).
        """
        values = [self.tokens.get(key, 0) for key in ("input", "output", "cacheRead", "cacheWrite")]
        if all(isinstance(v, int) for v in values):  # bools too, as Python adds them
            return int(sum(values))
        floats = [float(v) for v in values if not isinstance(v, int)]
        if any(v != v for v in floats):
            return float("nan")
        infinite = {v for v in floats if v in (float("inf"), float("-inf"))}
        if infinite:
            return infinite.pop() if len(infinite) == 1 else float("nan")
        from fractions import Fraction

        exact = sum(Fraction(v) for v in values)
        try:
            return float(exact)
        except OverflowError:
            return float("inf") if exact > 0 else float("-inf")
