"""The OpenAI Agents SDK's session memory as Pi session files (docs/AGENTS.md).

``PiSession`` implements the SDK's ``Session`` protocol (``get_items``, ``add_items``,
``pop_item``, ``clear_session``) over a Pi session file, so that an agent's history can
be browsed, searched, branched, exported and costed with sessiontree and Pi. Install
the SDK with the ``agents`` extra (``pip install sessiontree[agents]``); this module
itself imports nothing of it.
"""

from __future__ import annotations

from ._items import ITEM_FIELD, ITEM_TYPE
from ._session import USAGE_KIND, PiSession

__all__ = ["ITEM_FIELD", "ITEM_TYPE", "USAGE_KIND", "PiSession"]
