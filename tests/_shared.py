"""Paths and facts the tests share (a module of its own: ``benches/`` has a conftest too,
and two modules named ``conftest`` cannot both be imported by name)."""

from __future__ import annotations

import contextlib
import os
import signal
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessiontree import LoadReportWarning, SessionManager

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SESSIONTREE_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "pi-golden"
CASES = SHARED / "cases"
DATA = Path(__file__).resolve().parent / "data"


# The signals tests send to a child to stop it (SIGKILL cannot be ignored).
STOP_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def default_signals() -> None:
    """``preexec_fn`` for a child a test stops with a signal: the child starts with the
    default disposition of :data:`STOP_SIGNALS`, whatever the test run inherited. A
    run under ``nohup`` ignores SIGHUP, a background job of a shell without job control
    SIGINT, and a child inherits what is ignored: it would (rightly) keep running."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def backends() -> list[str]:
    chosen = os.environ.get("SESSIONTREE_BACKEND", "").strip()
    if chosen in ("python", "native"):
        return [chosen]
    return ["python", "native"]


def native_available() -> bool:
    try:
        import sessiontree._sessiontree  # noqa: F401
    except ImportError:
        return False
    return True


def open_quiet(path: Path | str, backend: str) -> SessionManager:
    """``SessionManager.open`` without the ``LoadReportWarning`` (tests read the report)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        return SessionManager.open(str(path), backend=backend)


def report(mgr: SessionManager) -> list[tuple[str, int | None, int | None, tuple[str, ...]]]:
    """The load report as comparable tuples (kind, line, offset, ids)."""
    return [(i.kind, i.line, i.offset, i.ids) for i in mgr.load_report]


def as_pi_099(context: dict[str, Any]) -> dict[str, Any]:
    """A context Pi 0.73.1 recorded, as Pi 0.99 builds it from the same file: the one
    difference on files without 0.87+ entries is that a ``custom_message`` with no
    ``content`` contributes ``content: []`` (``createCustomMessage(…, content ?? [], …)``)."""
    messages = [
        {**m, "content": []} if m.get("role") == "custom" and "content" not in m else m for m in context["messages"]
    ]
    return {**context, "messages": messages}


def chain_of_ids(path: Path, ids: list[str]) -> Path:
    """A session at ``path`` of one chain of user messages ("hi"), one per id of ``ids``
    in order (each the parent of the next), for ids no generator writes."""
    import json

    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z",
                         "cwd": "/w"})]
    parent = None
    for eid in ids:
        lines.append(json.dumps({"type": "message", "id": eid, "parentId": parent,
                                 "timestamp": "2025-01-01T00:00:01.000Z",
                                 "message": {"role": "user", "content": "hi", "timestamp": 1}}))
        parent = eid
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def said_if_rebuilt(catalog: Path | str) -> Iterator[None]:
    """The calls within it say a rebuild of the catalog at ``catalog`` exactly when they
    make one: one ``CatalogRebuiltWarning`` naming it if the file was replaced (its inode
    changed; a rebuild renames a new file into place), none otherwise."""
    from sessiontree.errors import CatalogRebuiltWarning

    before = os.stat(catalog).st_ino
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        yield
    rebuilt = [w for w in said if issubclass(w.category, CatalogRebuiltWarning)]
    replaced = os.stat(catalog).st_ino != before
    assert len(rebuilt) == replaced, (replaced, [str(w.message) for w in said])
    assert all(str(catalog) in str(w.message) for w in rebuilt)


def damage_pages(catalog: Path | str, start: int = 4096) -> None:
    """Overwrite the catalog's pages from byte ``start`` on with ``0xff`` (its WAL
    checkpointed into it first): damage SQLite finds only when a read reaches them."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(catalog)) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(catalog)
    with open(catalog, "r+b") as f:
        f.seek(start)
        f.write(b"\xff" * (size - start))


def chain_session(path: Path, ids: list[str]) -> None:
    """A version 3 session at ``path`` whose entries are user messages with ``ids``, each
    the child of the one before (``m0``, ``m1``, … their texts)."""
    import json

    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}]
    parent = None
    for k, eid in enumerate(ids):
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": f"2025-01-01T00:00:{k % 60:02}.000Z",
                      "message": {"role": "user", "content": [{"type": "text", "text": f"m{k}"}], "timestamp": 1}})
        parent = eid
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
