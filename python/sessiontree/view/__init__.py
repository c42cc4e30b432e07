"""How sessions are shown: the layer between the core and the viewers.

The command line (``sessiontree tree``, ``context``, ``info``...), the terminal browser
and the HTML and Markdown exports show sessions through this package and nothing else,
so that an entry reads the same in each:

* ``_escape``: the one escaping rule for session text (controls, bidi and invisible
  format characters made visible);
* ``_text``: any JSON value as text (numbers, sizes, JSON); ``_cells``: fitting text to
  a width in terminal cells;
* ``_preview``: one entry on one line (``tree``, the HTML sidebar, the browser's tree);
* ``_render``: one entry as an :class:`Item` of :class:`Part` s (the exports and the
  browser's detail pane);
* ``_structure`` and ``_drawing``: the viewers' model of the tree (the shape, paths,
  labels, and the rows drawn from it, with folding).

It stands on the core's public API only; the viewers import it through this module.
"""

from __future__ import annotations

from ._cells import cells, fit
from ._drawing import CLOSE, ENTRY, FOLD, MAX_SIBLINGS, MORE, NOTE, OPEN, Drawing, Row, fold_text
from ._escape import safe, safe_block
from ._preview import KIND_STYLES, content_text, entry_preview, message_preview, tool_call_preview
from ._render import IMAGE_TYPES, Item, Part, clean, item_of, usage_text
from ._render import doc_line
from ._structure import AmbiguousIdError, Structure, structure_of
from ._text import (
    PREVIEW_CLIP,
    as_is,
    collapse,
    human_bytes,
    human_seconds,
    int_text,
    json_text,
    num,
    number,
    one_line,
    plain_doc,
    show,
    to_json_bytes,
    value_text,
)

__all__ = [
    "AmbiguousIdError", "CLOSE", "Drawing", "ENTRY", "FOLD", "IMAGE_TYPES", "Item", "KIND_STYLES", "MAX_SIBLINGS",
    "MORE", "NOTE", "OPEN", "PREVIEW_CLIP", "Part", "Row", "Structure", "as_is", "cells", "clean", "collapse",
    "content_text", "doc_line", "entry_preview", "fit", "fold_text", "human_bytes", "human_seconds", "int_text",
    "item_of", "json_text", "message_preview", "num", "number", "one_line", "plain_doc", "safe", "safe_block",
    "show", "structure_of", "to_json_bytes", "tool_call_preview", "usage_text", "value_text",
]
