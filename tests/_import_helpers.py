"""Helpers shared by the importer tests: open every imported file on a backend, walk it."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from sessiontree import SessionManager

DATA = Path(__file__).resolve().parent / "data" / "import"
CLAUDE = DATA / "claude"
CODEX = DATA / "codex" / "sessions" / "2025" / "10" / "02"


def open_clean(path: str | Path, backend: str) -> SessionManager:
    """Open an imported file; it must load without any problem (no warning, empty report)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sm = SessionManager.open(str(path), backend=backend)
    assert sm.load_report == [], sm.load_report
    return sm


def shape(sm: SessionManager) -> list[tuple[int, str, str]]:
    """The tree as ``(depth, id, kind)`` rows in display order; kind is the role or type."""
    rows: list[tuple[int, str, str]] = []
    stack = [(n, 0) for n in reversed(sm.get_tree())]
    while stack:
        node, depth = stack.pop()
        e = node.entry
        kind = e["message"]["role"] if e["type"] == "message" else (e.get("customType") or e["type"])
        rows.append((depth, e["id"], kind))
        stack.extend((c, depth + 1) for c in reversed(node.children))
    return rows


def usage_total(sm: SessionManager) -> dict[str, int]:
    """Sum of every assistant message's usage in the file (what a usage report counts)."""
    total = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    for e in sm.get_entries():
        m = e.get("message")
        if e["type"] == "message" and m.get("role") == "assistant":
            for k in total:
                total[k] += m["usage"][k]
            assert m["usage"]["cost"] == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return total


def texts(messages: list[dict[str, Any]]) -> list[str]:
    """A compact view of context messages: ``role:text`` (blocks joined by ``|``)."""
    out = []
    for m in messages:
        c = m.get("content", m.get("summary"))
        if isinstance(c, list):
            parts = []
            for b in c:
                if b["type"] == "text":
                    parts.append(b["text"])
                elif b["type"] == "thinking":
                    parts.append("<think>" + b["thinking"])
                elif b["type"] == "toolCall":
                    parts.append(f"<call {b['name']}>")
                else:
                    parts.append(f"<{b['type']}>")
            c = "|".join(parts)
        out.append(f"{m['role']}:{c}")
    return out
