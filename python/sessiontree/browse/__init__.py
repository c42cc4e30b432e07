"""``sessiontree browse``: the session tree in a full-screen terminal app (Textual).

Textual is an optional dependency (``pip install textual``; the ``browse`` extra); importing
this package without it raises ``ImportError`` naming ``textual``. The keys are listed
in ``cli/browse.py`` (``sessiontree browse --help``).
"""

from __future__ import annotations

from ._app import BrowseApp

__all__ = ["BrowseApp"]
