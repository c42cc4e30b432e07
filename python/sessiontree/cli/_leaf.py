"""The entry an ``--leaf ID`` (``--from ID``, ``--select ID``) argument names: a whole
id, or a prefix of exactly one (``tree`` shows ids cut to the fewest characters that
tell them apart: ``view.id_width``)."""

from __future__ import annotations

from typing import Any

from ._common import CliError, Io, spinner
from ..view import safe


def resolve_entry(io: Io, sm: Any, file: str, ident: str, option: str = "--leaf") -> tuple[str, Any]:
    """``(entry id, None)`` for ``ident`` in the open session ``sm`` (``view.resolve_id``:
    no tree is built; the ``None`` is the structure a caller then builds if it needs one).

    Raises:
        CliError: no entry has that id or prefix, or several have the prefix.
    """
    from ..view import AmbiguousIdError, resolve_id

    with spinner(io, "reading the tree"):
        try:
            return resolve_id(sm, ident), None
        except (AmbiguousIdError, KeyError) as e:
            raise id_error(file, option, ident, e) from None


def id_error(file: str, option: str, ident: str, e: Exception) -> CliError:
    """The one wording of an ``option`` id that names no entry (``KeyError``) or a
    prefix several ids have (``view.AmbiguousIdError``, naming the first five; ids that
    show alike, which no more characters tell apart, as JSON strings). Both name the
    option (``--leaf``, ``--from``, ``--select``) the id came from: a command can take
    more than one id, and the user should see which one to fix."""
    from ..view import AmbiguousIdError

    if isinstance(e, AmbiguousIdError):
        more = "" if e.alike else "; give more characters"
        return CliError(f"{safe(file)}: {option} {safe(ident)} is ambiguous ({safe(str(e))}){more}")
    if not ident:
        return CliError(f"{safe(file)}: {option} '' (an empty id) names no entry")
    return CliError(f"{safe(file)}: {option} {safe(ident)} not found (no entry's id is or starts with it)")
