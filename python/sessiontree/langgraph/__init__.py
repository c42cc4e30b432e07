"""LangGraph checkpoints as Pi session trees (docs/LANGGRAPH.md).

``PiCheckpointSaver`` is a LangGraph ``BaseCheckpointSaver`` whose threads are Pi session
files: the checkpoint tree is the file's tree (forks and time travel are branches) and
the graph's messages channel is written as Pi messages beside it. Needs the
``langgraph`` extra (``pip install sessiontree[langgraph]``).
"""

from __future__ import annotations

from ._saver import PiCheckpointSaver
from ._thread import CHECKPOINT_TYPE, WRITES_TYPE

__all__ = ["CHECKPOINT_TYPE", "WRITES_TYPE", "PiCheckpointSaver"]
