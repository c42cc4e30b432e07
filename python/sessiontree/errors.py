"""Exceptions raised by sessiontree (both backends raise exactly these classes).

The Rust core raises them too (it imports this module), so ``except`` clauses work the
same whichever backend is in use.
"""

from __future__ import annotations

__all__ = [
    "SessionError",
    "EntryNotFoundError",
    "EntryExistsError",
    "InvalidSessionError",
    "SessionLockedError",
    "SessionFileExistsError",
    "StaleSessionError",
    "FirstKeptEntryError",
    "ContextEditError",
    "LoadReportWarning",
    "CatalogRebuiltWarning",
]


class SessionError(Exception):
    """Base class of every error sessiontree raises on purpose."""


class EntryNotFoundError(SessionError, KeyError):
    """An entry id is not in the session. ``str(e)`` is ``"Entry <id> not found"`` (Pi's wording)."""

    def __init__(self, entry_id: object) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class EntryExistsError(SessionError, ValueError):
    """An entry to append has an id that is already in the session
    (``SessionStorage.append_entry``; agent-core's ``invalid_entry``)."""


class InvalidSessionError(SessionError, ValueError):
    """A file is not a session: no valid header, or another fatal format problem.

    Attributes:
        path: the file, or ``None`` for in-memory data.
        line: 1-based physical line (counting ``\\n`` only), or ``None``.
        offset: 0-based byte offset of that line, or ``None``.
        reason: what is wrong, in words.
    """

    def __init__(
        self,
        reason: str,
        path: str | None = None,
        line: int | None = None,
        offset: int | None = None,
    ) -> None:
        where = path or "<memory>"
        if line is not None:
            where += f":{line}"
            if offset is not None:
                where += f" (byte {offset})"
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.offset = offset
        self.reason = reason


class SessionLockedError(SessionError):
    """Another process (or another manager in this one) holds the session's writer lock."""


class SessionFileExistsError(SessionError, FileExistsError):
    """Refusing to create a session file that already exists (nothing is ever overwritten)."""


class StaleSessionError(SessionError):
    """The file was truncated or replaced under an open session; reopen it."""


class FirstKeptEntryError(SessionError, ValueError):
    """``append_compaction`` was given a ``first_kept_entry_id`` that is not on the
    current path (CONTRACT §5 point 4: Pi accepts it, sessiontree refuses)."""


class ContextEditError(SessionError, ValueError):
    """``append_context_edit`` refused its target (Pi's checks): it is not on the current
    branch, or it contributes no editable model content (only user, assistant and
    toolResult messages and ``custom_message`` entries do)."""


class LoadReportWarning(UserWarning):
    """Issued when a file loaded with problems; ``SessionManager.load_report`` lists them."""


class CatalogRebuiltWarning(UserWarning):
    """A catalog found damaged (CONTRACT §7: garbage, truncated, "malformed", a table or
    row missing, a value of a type it never holds) was replaced by a new, empty one:
    the call that met it read the session files, and its results are kept in the new
    one. Not given for an empty file, one not there, nor an older version's (the
    command line says that one itself: ``other_schema``). The command line shows it as
    one note on stderr (trial 58: a damaged catalog was rebuilt without a word, and the
    command read every file)."""
