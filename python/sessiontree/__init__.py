"""sessiontree: Pi coding-agent sessions (JSONL v3) as append-only trees.

Public API (docs/CONTRACT.md): :class:`SessionManager`, the pure functions
:func:`build_session_context` / :func:`convert_to_llm`, :class:`SessionContext`,
:class:`SessionTreeNode`, :class:`TreeShape`, :class:`UsageTotals`, :class:`SessionInfo`, the entry TypedDicts of
:mod:`sessiontree.schema`, :class:`LoadIssue` / :class:`IssueKind` (items of
``SessionManager.load_report``) and the exceptions of :mod:`sessiontree.errors`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)

if TYPE_CHECKING:
    from typing import Any

    from ._backend import IssueKind, LoadIssue
    from ._context import (
        ProjectedEntry,
        SessionContext,
        SessionProjection,
        build_session_context,
        build_session_projection,
        convert_to_llm,
    )
    from ._js import NULL
    from ._listing import ListingProblem
    from ._manager import UNSET, SessionManager
    from ._session_storage import InMemorySessionStorage, JsonlSessionStorage, SessionMetadata, SessionStorage
    from .errors import (
        EntryExistsError,
        EntryNotFoundError,
        ContextEditError,
        FirstKeptEntryError,
        InvalidSessionError,
        LoadReportWarning,
        SessionError,
        SessionFileExistsError,
        SessionLockedError,
        StaleSessionError,
    )
    from .schema import (
        AgentMessage,
        AssistantMessage,
        BashExecutionMessage,
        BranchSummaryEntry,
        BranchSummaryMessage,
        CompactionEntry,
        CompactionSummaryMessage,
        CustomEntry,
        CustomMessage,
        CustomMessageEntry,
        ActiveToolsChangeEntry,
        LabelEntry,
        LeafEntry,
        MessageEntry,
        ModelChangeEntry,
        SessionEntry,
        SessionHeader,
        SessionInfo,
        SessionInfoEntry,
        SessionTreeNode,
        ThinkingLevelChangeEntry,
        ToolResultMessage,
        TreeShape,
        UsageTotals,
        UserMessage,
    )

# Where each public name lives: the package imports a module when one of its names is
# first used (PEP 562), so that a command needing a few of them (``sessiontree
# search``) does not pay for them all.
_HOMES = {
    **dict.fromkeys(("IssueKind", "LoadIssue"), "_backend"),
    **dict.fromkeys(("ProjectedEntry", "SessionContext", "SessionProjection", "build_session_context",
                     "build_session_projection", "convert_to_llm"), "_context"),
    "NULL": "_js",
    "ListingProblem": "_listing",
    **dict.fromkeys(("SessionManager", "UNSET"), "_manager"),
    **dict.fromkeys(("InMemorySessionStorage", "JsonlSessionStorage", "SessionMetadata", "SessionStorage"),
                    "_session_storage"),
    **dict.fromkeys(("ContextEditError", "EntryExistsError", "EntryNotFoundError", "FirstKeptEntryError",
                     "InvalidSessionError", "LoadReportWarning", "SessionError", "SessionFileExistsError",
                     "SessionLockedError", "StaleSessionError"), "errors"),
    **dict.fromkeys(("ActiveToolsChangeEntry", "AgentMessage", "AssistantMessage", "BashExecutionMessage",
                     "BranchSummaryEntry", "BranchSummaryMessage", "CompactionEntry", "CompactionSummaryMessage",
                     "CustomEntry", "CustomMessage", "CustomMessageEntry", "LabelEntry", "LeafEntry",
                     "MessageEntry", "ModelChangeEntry", "SessionEntry", "SessionHeader", "SessionInfo",
                     "SessionInfoEntry", "SessionTreeNode", "ThinkingLevelChangeEntry", "ToolResultMessage",
                     "TreeShape", "UsageTotals", "UserMessage"), "schema"),
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _HOMES:
        value = getattr(_module(_HOMES[name]), name)
    else:
        try:  # a submodule, as `sessiontree.errors` was once imported here
            value = _module(name)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def _module(name: str) -> Any:
    import importlib

    return importlib.import_module(f"{__name__}.{name}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES, "__version__"})


def _version() -> str:
    try:
        from ._sessiontree import __version__ as v  # the single version source (Cargo.toml)

        return str(v)
    except ImportError:
        try:
            from importlib.metadata import version

            return version("sessiontree")
        except Exception:
            return "0+unknown"


__all__ = [
    "__version__",
    "SessionManager",
    "SessionStorage",
    "JsonlSessionStorage",
    "InMemorySessionStorage",
    "SessionMetadata",
    "SessionContext",
    "SessionProjection",
    "ProjectedEntry",
    "SessionInfo",
    "SessionTreeNode",
    "TreeShape",
    "UsageTotals",
    "build_session_context",
    "build_session_projection",
    "convert_to_llm",
    "LoadIssue",
    "IssueKind",
    "UNSET",
    "NULL",
    # errors
    "SessionError",
    "EntryNotFoundError",
    "EntryExistsError",
    "InvalidSessionError",
    "SessionLockedError",
    "SessionFileExistsError",
    "StaleSessionError",
    "LoadReportWarning",
    "FirstKeptEntryError",
    "ContextEditError",
    "ListingProblem",
    # schema
    "SessionHeader",
    "SessionEntry",
    "MessageEntry",
    "CustomMessageEntry",
    "CompactionEntry",
    "BranchSummaryEntry",
    "ModelChangeEntry",
    "ThinkingLevelChangeEntry",
    "LabelEntry",
    "SessionInfoEntry",
    "CustomEntry",
    "ActiveToolsChangeEntry",
    "LeafEntry",
    "AgentMessage",
    "UserMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "BashExecutionMessage",
    "CustomMessage",
    "CompactionSummaryMessage",
    "BranchSummaryMessage",
]
