"""``sessiontree browse``: the session tree in a full-screen terminal app (Textual).

Textual is an optional dependency (``pip install textual``; the ``browse`` extra):
:data:`HELP` (what the app shows, its keys) and the picker's scopes
(:class:`Picker`, :class:`Scope`) need nothing, :class:`BrowseApp` raises
``ImportError`` naming ``textual`` without it. The keys are listed in ``_keys.py``
(``sessiontree browse --help``, ``?`` in the app).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._keys import HELP
from ._sessions import Picker, Scope

if TYPE_CHECKING:
    from ._app import BrowseApp

__all__ = ["BrowseApp", "HELP", "Picker", "Scope"]


def __getattr__(name: str) -> Any:
    # The app is imported when asked for: the command line reads HELP at every start.
    if name == "BrowseApp":
        from ._app import BrowseApp

        return BrowseApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
