"""Exports of a session: ``html`` (one self-contained page: tree and conversation) and
``markdown`` (one path as text). ``sessiontree export`` is the command line
(``cli/export.py``); each writer takes a ``_structure.Structure`` and a ``write``
callable, so the output is streamed, never built whole.

``_render`` says what one entry shows (shared by both and by ``sessiontree browse``);
``_page`` holds the HTML page's style and script.
"""

from __future__ import annotations

from .html import write_html
from .markdown import write_markdown

__all__ = ["write_html", "write_markdown"]
