"""The session picker's model (``sessiontree browse`` with a folder or no file): which
sessions it shows, in what order, and how a row reads; no Textual here.

The picker follows Pi's ``/resume`` session selector (packages/coding-agent,
``session-selector.ts`` and ``session-selector-search.ts``), docs/CONTRACT.md §10:

* Rows are the listing's (``SessionInfo``: ``sessiontree._listing.list_folders``,
  through the catalog): the session's name, else its first message, on one line; at
  the right its cwd (when the scope spans projects), the message count and the age of
  its last activity (Pi's ``formatSessionDate``: ``now``, ``5m``, ``3h``, ``2d``,
  ``1w``, ``4mo``, ``1y``); with the path shown, the file's path before them.
* Sorts, in Pi's cycle: ``threaded`` (the default: sessions under the session they were
  forked from, by ``parentSession``, each level newest first), ``recent`` (newest
  first) and ``relevance``. Without a query ``recent`` and ``relevance`` are the
  listing's order; with one, ``threaded`` ranks as ``relevance`` does (Pi's).
* The name filter keeps the sessions with a name.
* A query (Pi's syntax: words, ``"a phrase"``, ``re:PATTERN``) is answered by the
  catalog's search (``sessiontree.catalog.search_stream``, CONTRACT §7): a session is
  shown when one of its entries matches, ranked by its best entry (``relevance``), or
  in the listing's order (``recent``). Pi instead matches the session's whole text
  (id, name, every message, cwd) fuzzily; here the rules are the search's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..schema import SessionInfo

__all__ = ["SORTS", "Picker", "Row", "Scope", "Found", "age", "counts", "next_want", "rows", "take", "threaded"]

SORTS = ("threaded", "recent", "relevance")
"""Pi's sort modes, in the order ``ctrl+s`` cycles them; the first is the default."""

FIRST_GROUP = 64
"""Files the listing's first group holds at least (the first rows' wait)."""
GROUP_SECONDS = 0.25
"""About how long each next group of the listing takes to read."""


@dataclass(frozen=True)
class Scope:
    """A set of sessions the picker lists.

    Attributes:
        label: the header's words (``"current folder"``, ``"all projects"``, a path).
        where: where it looks, for a message (as ``sessiontree ls`` says it).
        sources: folders (each without its subfolders) and session files, as the
            listing and the search take them.
        projects: the scope spans projects: each row shows its cwd (Pi: the "all" scope).
    """

    label: str
    where: str
    sources: tuple[str, ...]
    projects: bool = False


@dataclass(frozen=True)
class Picker:
    """What the picker lists: its scopes, in the header's order (``tab`` goes to the
    next: Pi's current folder, then all projects), the one shown first (``start``: an
    index into ``scopes``; ``--all`` starts on the second), and the catalog options of
    the listing and the search (``catalog``, ``no_cache``: as ``sessiontree.catalog``
    takes them)."""

    scopes: tuple[Scope, ...]
    catalog: Any = None
    no_cache: bool = False
    start: int = 0


@dataclass(frozen=True)
class Row:
    """One line of the picker: the session, its threaded prefix (``"├─ "``...), and the
    search hit that put it there (its best entry), if any."""

    info: SessionInfo
    prefix: str = ""
    hit: Any = None


@dataclass
class Found:
    """The sessions a search found so far, in the order of their best hits (the
    catalog's relevance: each session's first hit in the stream is its best), and how
    many of its entries match in each (``entries``: path -> count, so that a count
    follows the rows a filter keeps)."""

    query: str
    order: list[str] = field(default_factory=list)
    hits: dict[str, Any] = field(default_factory=dict)
    entries: dict[str, int] = field(default_factory=dict)
    total: int = 0
    done: bool = False
    error: str | None = None

    def add(self, hit: Any) -> None:
        self.entries[hit.path] = self.entries.get(hit.path, 0) + 1
        if hit.path not in self.hits:
            self.hits[hit.path] = hit
            self.order.append(hit.path)


def counts(sources: tuple[str, ...]) -> list[tuple[str, int]]:
    """Each source with the ``.jsonl`` names it holds (``_listing.jsonl_names``: a file,
    1; a folder that cannot be read, 0: the listing says why)."""
    from .._listing import jsonl_names  # imported on use, as the listing is: `browse FILE` needs neither

    return [(s, len(jsonl_names([s]))) for s in sources]


def take(sources: list[tuple[str, int]], want: int) -> tuple[list[str], int, list[tuple[str, int]]]:
    """The next group the picker lists: whole sources from the front until they hold
    ``want`` files (at least one source): ``(group, its files, the rest)``."""
    group: list[str] = []
    have = 0
    k = 0
    while k < len(sources) and (not group or have < want):
        group.append(sources[k][0])
        have += sources[k][1]
        k += 1
    return group, have, sources[k:]


def next_want(files: int, seconds: float, previous: int) -> int:
    """How many files the next group holds: what the last group's pace reads in about a
    quarter of a second (a warm catalog: the rest at once), and never fewer than twice
    the last group's count."""
    pace = files / max(seconds, 1e-3)
    return max(2 * max(previous, 1), int(pace * GROUP_SECONDS))


def age(modified: datetime, now: datetime | None = None) -> str:
    """How long ago, as Pi's picker says it (``formatSessionDate``: whole minutes,
    hours, days, weeks, 30-day months, 365-day years)."""
    now = now or datetime.now(timezone.utc)
    ms = (now - modified).total_seconds() * 1000
    mins, hours, days = ms // 60_000, ms // 3_600_000, ms // 86_400_000
    if mins < 1:
        return "now"
    if mins < 60:
        return f"{int(mins)}m"
    if hours < 24:
        return f"{int(hours)}h"
    if days < 7:
        return f"{int(days)}d"
    if days < 30:
        return f"{int(days // 7)}w"
    if days < 365:
        return f"{int(days // 30)}mo"
    return f"{int(days // 365)}y"


def threaded(sessions: list[SessionInfo]) -> list[Row]:
    """Pi's threaded order: a session whose ``parent_session_path`` names another listed
    session goes under it; roots and each session's children newest first. Paths are
    compared as absolute paths (Pi compares them as written; a folder given as a
    relative path would otherwise hide every thread)."""
    by_path = {os.path.abspath(s.path): i for i, s in enumerate(sessions)}
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    parent_of: dict[int, int] = {}
    for i, s in enumerate(sessions):
        parent = by_path.get(os.path.abspath(s.parent_session_path)) if s.parent_session_path else None
        if parent is None or parent == i:
            roots.append(i)
        else:
            children.setdefault(parent, []).append(i)
            parent_of[i] = parent

    def newest(ids: list[int]) -> list[int]:
        return sorted(ids, key=lambda i: sessions[i].modified, reverse=True)

    out: list[Row] = []
    seen: set[int] = set()

    def walk(starts: list[int]) -> None:
        # Iterative depth-first walk: a history can thread thousands deep.
        stack: list[tuple[int, str, str]] = [(i, "", "   ") for i in reversed(starts)]
        while stack:
            i, prefix, indent = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            out.append(Row(sessions[i], _fitted(prefix)))
            kids = newest([k for k in children.get(i, []) if k not in seen])  # a cycle's root is seen
            # The children's prefixes: "├─ " / "└─ " after three spaces for the root, then
            # a continuing line "│  " for each ancestor below it that has later siblings (Pi's).
            for k in reversed(range(len(kids))):
                last = k == len(kids) - 1
                stack.append((kids[k], indent + ("└─ " if last else "├─ "),
                              indent + ("   " if last else "│  ")))

    walk(newest(roots))
    # What is left hangs from a cycle of parents (no root above it): the newest session
    # of each cycle stands as a root, the rest of the cycle and their forks under it.
    for i in newest([i for i in range(len(sessions)) if i not in seen]):
        if i in seen:
            continue
        climbed: set[int] = set()
        while i not in climbed:  # up to the first session met twice: one on the cycle
            climbed.add(i)
            i = parent_of[i]
        cycle = [i]
        while parent_of[cycle[-1]] != i:
            cycle.append(parent_of[cycle[-1]])
        walk(newest(cycle)[:1])
    return out


MAX_PREFIX = 30
"""Cells of thread drawing a row may take (ten levels); deeper rows show the last ones
after a ``…``, so that the session's text stays on screen at any depth."""


def _fitted(prefix: str) -> str:
    return prefix if len(prefix) <= MAX_PREFIX else "…" + prefix[len(prefix) - MAX_PREFIX + 1:]


def rows(sessions: list[SessionInfo], *, sort: str, named: bool, found: Found | None) -> list[Row]:
    """The picker's rows.

    Args:
        sessions: the scope's listing (newest ``modified`` first).
        sort: one of :data:`SORTS`.
        named: keep only the sessions with a name (Pi's name filter).
        found: a search's sessions (``None``: no query).
    """
    base = [s for s in sessions if s.name] if named else sessions
    if found is None:
        return threaded(base) if sort == "threaded" else [Row(s) for s in base]
    if sort == "recent":
        return [Row(s, "", found.hits[s.path]) for s in base if s.path in found.hits]
    by_path = {s.path: s for s in base}
    return [Row(by_path[p], "", found.hits[p]) for p in found.order if p in by_path]
