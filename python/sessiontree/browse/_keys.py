"""The browser's help: what it shows and its keys, as ``sessiontree browse --help`` and
``?`` in the app show it (one text for both; its lines fit 74 cells, the help
box's width on an 80-column terminal)."""

from __future__ import annotations

__all__ = ["HELP"]

HELP = """``sessiontree browse``: pick a session, walk its tree in a full-screen
terminal app.

Left: the tree, siblings side by side under their branch point ┬n,
tips, the current leaf ← leaf, long linear runs and long sibling lists
folded into ┆ rows. Right: the selected entry (text, thinking, tool calls
and results, usage, label).

Keys (also in the footer, and `?` in the app):
  ↑ ↓ PgUp PgDn Home End   move
  enter / →  unfold the row, or expand it
  ←          fold this branch, or go to the row of the parent
  p          the parent entry          l      the current leaf
  b / B      next / previous branch point
  t / T      next / previous tip (the end of an abandoned branch)
  /          search the session's text
  n / N      next / previous match
  c          the context the model gets at the selected entry (Pi's rules)
  L          set or clear the selected entry's label (a label entry)
  f          fork: a new session file, root → the selected entry (asks)
  r          reload: read what another process appended since
  R          reopen the file (after it was replaced, truncated or removed)
  tab        the tree or the detail pane (the arrows scroll it)
  esc        back to the session picker (when it was picked there)
  q, ctrl+c  quit (q on the context or this help: back to the tree)

The session picker (Pi's /resume), opened by `browse` without a file:
  sessiontree browse           the current directory's sessions
  sessiontree browse DIR ...   the sessions of DIR and its subfolders
  sessiontree browse --all     every project in Pi's store
Type to search (words, "a phrase", re:PATTERN: the entries' text, as
`sessiontree search` finds it); ↑ ↓ PgUp PgDn move; enter opens it.
  tab        current folder / all projects
  ctrl+s     sort: threaded, recent, relevance (with a query, threaded
             rows are ranked by relevance, as in Pi)
  ctrl+n     named sessions only
  ctrl+p     show the files' paths
  esc        back to the session open, else quit
  ctrl+c     quit (from every screen)

The tree's shape comes from the session's index; only the entries on
screen are decoded. Needs Textual: pip install textual (in a checkout:
pip install '.[browse]').
"""
