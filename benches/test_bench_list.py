"""``SessionManager.list`` over a folder of 500 sessions (2 KB to 256 KB each).

``list`` takes no ``backend`` argument: the listing reads each file itself. The suite
still runs once per ``SESSIONTREE_BACKEND`` value (the environment switch that selects
the default backend for a whole process), so that a backend-specific listing shows up
here as soon as the library gets one.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from sessiontree import SessionManager

from _benchlib import LISTING_SESSIONS, listing_folder, set_info


def test_list(benchmark: Any, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = listing_folder()
    monkeypatch.setenv("SESSIONTREE_BACKEND", backend)
    total = sum(p.stat().st_size for p in folder.glob("*.jsonl"))
    infos = benchmark.pedantic(SessionManager.list, args=("/home/user/project", str(folder)), rounds=5,
                               warmup_rounds=1)
    assert len(infos) == LISTING_SESSIONS
    assert all(i.message_count > 0 and i.first_message for i in infos)
    assert [i.modified for i in infos] == sorted((i.modified for i in infos), reverse=True)
    set_info(benchmark, f"list · {LISTING_SESSIONS} sessions", backend=backend, operation="list",
             items=LISTING_SESSIONS, bytes=total, size=f"{LISTING_SESSIONS} files",
             folder=os.path.basename(folder))
