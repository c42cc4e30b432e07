"""Import Claude Code transcripts and Codex rollouts as Pi session trees.

Each source session becomes one Pi v3 session file written through
:class:`~sessiontree.SessionManager` (never touching the source), in Pi's folder for the
session's cwd or in ``to``. Re-importing is idempotent: the same source gives the same
ids and file, and a source that grew is brought up to date by appending. See
``docs/IMPORT.md`` for the mapping.

Example::

    from sessiontree.importers import import_claude, import_codex
    for r in import_claude("~/.claude/projects/-home-me-proj/3f2c....jsonl", to="/tmp/pi"):
        print(r.path, r.entries_added, r.unmapped)
"""

from __future__ import annotations

import os
from typing import Iterable

from . import claude, codex
from ._detect import NAMES, source_kind
from ._common import ImportResult, Report, SessionPlan, apply_plan, settle_parent_links, unique_paths

__all__ = [
    "ImportResult",
    "SessionPlan",
    "import_claude",
    "import_codex",
    "import_sources",
    "not_imported",
    "claude_sources",
    "codex_sources",
    "sources_folder",
    "plan_claude",
    "plan_codex",
]

plan_claude = claude.plan_claude
plan_codex = codex.plan_codex


def claude_sources(home: str | None = None) -> list[str]:
    """Claude Code transcripts under ``home`` (default ``$CLAUDE_CONFIG_DIR`` or
    ``~/.claude``): ``projects/*/*.jsonl`` and ``projects/*/*/subagents/*.jsonl``."""
    return claude.default_sources(home)


def codex_sources(home: str | None = None) -> list[str]:
    """Codex rollouts under ``home`` (default ``$CODEX_HOME`` or ``~/.codex``):
    ``sessions/YYYY/MM/DD/rollout-*.jsonl``."""
    return codex.default_sources(home)


def sources_folder(agent: str) -> str:
    """The folder :func:`claude_sources` (``agent`` ``"claude"``) or :func:`codex_sources`
    (``"codex"``) reads without a ``home``: ``<$CLAUDE_CONFIG_DIR or ~/.claude>/projects``,
    ``<$CODEX_HOME or ~/.codex>/sessions``, absolute.

    Raises:
        ValueError: another agent.
    """
    if agent == "claude":
        return os.path.abspath(claude.store_folder())
    if agent == "codex":
        return os.path.abspath(codex.store_folder())
    raise ValueError(f"unknown agent {agent!r}: claude or codex")


def not_imported(path: str, error: str) -> ImportResult:
    """The result of a source that was not imported (nothing written), saying why."""
    return ImportResult(source=os.path.abspath(path), session_id="", path=None, created=False, entries_added=0,
                        entries_total=0, parent_session=None, role="main", imported={}, custom={}, skipped={},
                        unmapped={}, conflicts={}, continued=0, problems=[], error=error)


def _other_format(path: str, kind: str) -> ImportResult | None:
    """A failed result when ``path`` is another agent's file (``_detect``), naming the
    importer that reads it; ``None`` otherwise (unreadable files fail in the planner)."""
    try:
        found = source_kind(path)
    except OSError:
        return None
    if found is None or found == kind:
        return None
    if found == "pi":
        why = "is already a Pi session file: nothing to import (open it as it is)"
    else:
        why = f"is {NAMES[found]}, not {NAMES[kind]}: import it with `sessiontree import {found}`"
    return not_imported(path, f"{path} {why}")


def import_claude(path: str | os.PathLike[str], *, to: str | os.PathLike[str] | None = None,
                  backend: str | None = None, subagents: bool = True) -> list[ImportResult]:
    """Import one Claude Code transcript (and, by default, its subagent transcripts).

    Args:
        path: a ``.jsonl`` transcript: a session (``<uuid>.jsonl``) or a subagent's
            (``agent-<id>.jsonl``).
        to: folder for the imported files; default Pi's folder for each session's cwd
            (``$PI_CODING_AGENT_DIR/sessions/--<cwd>--`` or ``~/.pi/agent/sessions/...``).
        backend: ``auto`` / ``python`` / ``native`` (the manager that writes).
        subagents: also import ``<stem>/subagents/*.jsonl`` beside a session file.

    Returns:
        One :class:`ImportResult` per Pi session: the main session first, then each
        sidechain / subagent (``role``), with ``parent_session`` naming the main one's
        file. A result with ``path=None`` says in ``error`` why nothing was written
        (another agent's file; a subagent transcript that cannot be read). Bad content
        never raises: it is skipped and counted.

    Raises:
        OSError: ``path`` itself cannot be read (``FileNotFoundError`` when it does not
            exist, ``IsADirectoryError`` for a folder); nothing is written.
    """
    src = os.path.abspath(os.path.expanduser(os.fspath(path)))
    wrong = _other_format(src, "claude")
    if wrong is not None:
        return [wrong]
    files = claude.session_files_for(src) if subagents else [src]
    planned: list[SessionPlan | ImportResult] = []
    for f in files:
        try:
            planned.extend(claude.plan_claude(f, to))
        except OSError as e:
            if f == src:
                raise  # the caller's own path: an error, not a result (nothing written yet)
            planned.append(not_imported(f, f"{f}: {e.strerror or e}"))
    settle_parent_links([p for p in planned if isinstance(p, SessionPlan)], to)
    return [apply_plan(p, to, backend=backend) if isinstance(p, SessionPlan) else p for p in planned]


def import_codex(path: str | os.PathLike[str], *, to: str | os.PathLike[str] | None = None,
                 backend: str | None = None, include_incomplete: bool = False) -> list[ImportResult]:
    """Import one Codex rollout.

    Args:
        path: a ``rollout-*.jsonl`` file.
        to: folder for the imported file; default Pi's folder for the session's cwd.
        backend: ``auto`` / ``python`` / ``native``.
        include_incomplete: import a model response the rollout ends in the middle of
            (default: held back and reported until it is complete).

    Returns:
        A list with one :class:`ImportResult` (``role`` ``main``, ``fork`` or
        ``subagent``; ``parent_session`` names the parent thread's imported file when
        its rollout is found).

    Raises:
        OSError: ``path`` cannot be read (``FileNotFoundError`` when it does not exist,
            ``IsADirectoryError`` for a folder); nothing is written.
    """
    src = os.path.abspath(os.path.expanduser(os.fspath(path)))
    wrong = _other_format(src, "codex")
    if wrong is not None:
        return [wrong]
    plans = codex.plan_codex(src, to, include_incomplete=include_incomplete)
    settle_parent_links(plans, to)
    return [apply_plan(p, to, backend=backend) for p in plans]


def import_sources(kind: str, paths: Iterable[str | os.PathLike[str]], *, to: str | os.PathLike[str] | None = None,
                   backend: str | None = None) -> list[ImportResult]:
    """Import many sources of one kind (``"claude"`` or ``"codex"``), each once.

    Raises:
        ValueError: ``kind`` is neither.
        OSError: a path cannot be read (those before it are imported).
    """
    if kind not in ("claude", "codex"):
        raise ValueError(f"kind must be 'claude' or 'codex', not {kind!r}")
    results: list[ImportResult] = []
    done: set[str] = set()
    for p in unique_paths([os.path.expanduser(os.fspath(x)) for x in paths]):
        if p in done:
            continue
        if kind == "claude":
            files = claude.session_files_for(p)
            done.update(os.path.abspath(f) for f in files)
            results.extend(import_claude(p, to=to, backend=backend))
        else:
            done.add(p)
            results.extend(import_codex(p, to=to, backend=backend))
    return results


# keep names used in docs importable
_ = (Report, SessionPlan)
