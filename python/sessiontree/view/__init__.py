"""How sessions are shown: the layer between the core and the viewers.

The command line (``sessiontree tree``, ``context``, ``info``...), the terminal browser
and the HTML and Markdown exports show sessions through this package and nothing else,
so that an entry reads the same in each:

* ``_escape``: the one escaping rule for session text (controls, bidi and invisible
  format characters made visible), in two modes: one line (``safe``) and several
  lines (``safe_block``; ``_render.clean`` for the exports and the detail pane);
* ``_ansi``: a style name as the escape rich writes on a terminal, without rich;
* ``_text``: any JSON value as text (numbers, sizes, JSON, times, a model's label:
  ``model_label``, the one spelling of ``provider/model``); ``_cells``: fitting text to
  a width in terminal cells;
* ``_entries``: the table of how each entry type and message role is shown (its word,
  colour, folding, and its functions in ``_preview``, one line: ``tree``, the HTML
  sidebar, the browser's tree, and ``_render``, an :class:`Item` of :class:`Part` s:
  the exports and the browser's detail pane);
* ``_context_lines``: the context's messages as terminal lines (``context``, the
  browser's context screen);
* ``_ids``: ids shown as short as the file allows and taken back by a unique prefix;
* ``_structure`` and ``_drawing``: the viewers' model of the tree (the shape, paths,
  labels, and the rows drawn from it, with folding); ``_tree_rows``: ``tree``'s drawing
  as text rows within a width.

It stands on the core's public API only; the viewers import it through this module.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._ansi import paint, sgr
    from ._cells import cells, fit, fit_start, hang, pad, padded, plain_columns, plain_table
    from ._context_lines import hang_lines, model_text, render_message
    from ._drawing import BRANCH_MARK, CLOSE, FOLD_MARK, ENTRY, FOLD, MAX_SIBLINGS, MORE, NOTE, OPEN, Drawing, Row, fold_text
    from ._entries import (
        CONVERSATION,
        ENTRY_VIEWS,
        KEEP_TYPES,
        KIND_STYLES,
        KINDS,
        ROLE_VIEWS,
        EntryView,
        RoleView,
        entry_preview,
        item_of,
        message_preview,
    )
    from ._escape import safe, safe_block
    from ._preview import content_text, tool_call_preview
    from ._render import IMAGE_TYPES, Item, Part, clean, doc_id, doc_line
    from ._ids import SHORT_ID, AmbiguousIdError, id_width, resolve_id
    from ._figures import number_column, short_number
    from ._paths import shown_path, shown_paths
    from ._structure import Structure, structure_of
    from ._text import (
        ABSENT,
        PREVIEW_CLIP,
        as_is,
        collapse,
        human_bytes,
        human_seconds,
        int_text,
        iso_time,
        json_text,
        ms_time,
        num,
        number,
        one_line,
        plain_doc,
        show,
        to_json_bytes,
        UNKNOWN,
        model_label,
        usage_text,
        value_text,
        zoned_time,
        zoned_times,
    )
    from ._tree_rows import Layout, TreeRow, format_row, tree_rows

# Each name is imported from its module when first used: `sessiontree usage` needs
# `safe` only, and importing every viewer's table (the entry types, the drawing) cost
# it about 20 ms of its start.
_HOMES: dict[str, str] = {
    **dict.fromkeys(('paint', 'sgr'), "_ansi"),
    **dict.fromkeys(('cells', 'fit', 'fit_start', 'fold_name', 'hang', 'pad', 'padded', 'plain_columns', 'plain_table'), "_cells"),
    **dict.fromkeys(('hang_lines', 'model_text', 'render_message'), "_context_lines"),
    **dict.fromkeys((
        'BRANCH_MARK', 'CLOSE', 'ENTRY', 'FOLD', 'FOLD_MARK', 'MAX_SIBLINGS', 'MORE', 'NOTE', 'OPEN', 'Drawing', 'Row', 'fold_text',
    ), "_drawing"),
    **dict.fromkeys((
        'CONVERSATION', 'ENTRY_VIEWS', 'KEEP_TYPES', 'KIND_STYLES', 'KINDS', 'ROLE_VIEWS', 'EntryView',
        'RoleView', 'entry_preview', 'item_of', 'message_preview',
    ), "_entries"),
    **dict.fromkeys(('safe', 'safe_block'), "_escape"),
    **dict.fromkeys(('content_text', 'tool_call_preview'), "_preview"),
    **dict.fromkeys(('IMAGE_TYPES', 'Item', 'Part', 'clean', 'doc_id', 'doc_line'), "_render"),
    **dict.fromkeys(('SHORT_ID', 'AmbiguousIdError', 'id_width', 'resolve_id'), "_ids"),
    **dict.fromkeys(('number_column', 'short_number'), "_figures"),
    **dict.fromkeys(('shown_path', 'shown_paths'), "_paths"),
    **dict.fromkeys(('Structure', 'structure_of'), "_structure"),
    **dict.fromkeys((
        'ABSENT', 'PREVIEW_CLIP', 'as_is', 'collapse', 'human_bytes', 'human_seconds', 'int_text', 'iso_time', 'json_text',
        'ms_time', 'num', 'number', 'one_line', 'plain_doc', 'show', 'to_json_bytes', 'usage_text',
        'value_text', 'zoned_time', 'zoned_times', 'UNKNOWN', 'model_label',
    ), "_text"),
    **dict.fromkeys(('Layout', 'TreeRow', 'format_row', 'tree_rows'), "_tree_rows"),
}


__getattr__ = lazy_names(__name__, _HOMES, globals())


__all__ = [
    "ABSENT", "BRANCH_MARK", "CLOSE", "CONVERSATION", "ENTRY", "ENTRY_VIEWS", "FOLD", "FOLD_MARK", "IMAGE_TYPES", "KEEP_TYPES", "KIND_STYLES", "KINDS",
    "MAX_SIBLINGS", "MORE", "NOTE", "OPEN", "PREVIEW_CLIP", "ROLE_VIEWS", "SHORT_ID", "UNKNOWN", "AmbiguousIdError", "Drawing",
    "EntryView", "Item", "Layout", "Part", "RoleView", "Row", "Structure", "TreeRow", "as_is", "cells", "clean",
    "collapse", "content_text", "doc_id", "doc_line", "entry_preview", "fit", "fit_start", "fold_name", "fold_text", "hang", "hang_lines", "format_row", "human_bytes",
    "human_seconds", "id_width", "int_text", "iso_time", "item_of", "json_text", "message_preview", "model_label", "model_text", "ms_time", "num",
    "number", "number_column", "one_line", "pad", "padded", "paint", "plain_columns", "plain_doc", "plain_table", "render_message", "resolve_id", "safe", "safe_block", "show",
    "sgr", "short_number", "shown_path", "shown_paths", "structure_of",
    "to_json_bytes", "tool_call_preview", "tree_rows", "usage_text", "value_text", "zoned_time", "zoned_times",
]
