"""The tree pane: the rows of a ``_drawing.Drawing``, one line each, drawn lazily.

A Line-API widget: only the rows on screen are turned into text, and only their
entries are decoded (``Structure.entry`` → ``SessionManager.get_entry``). Row texts are
``sessiontree tree``'s (``view.format_row`` over a ``view.Layout`` of the same
shape: marks ``*`` for the leaf and ``◇`` for other tips), plus the browser's own
marks: ``tip`` (the end of a branch other than the leaf) and ``▸ n entries`` on a
collapsed branch.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..view import ENTRY, FOLD, MORE, NOTE, Drawing, Layout, Row, TreeRow, format_row, id_width, safe
from ..errors import SessionError

__all__ = ["APP_KEYS", "TreeView"]

_CACHE_ROWS = 4096  # row texts kept (entries decoded once while they stay on screen)
_CURSOR = Style(bgcolor="grey23", bold=True)
_STYLES: dict[str, Style] = {}


def _style(name: str) -> Style:
    st = _STYLES.get(name)
    if st is None:
        st = _STYLES[name] = Style.parse(name) if name else Style()
    return st


# Textual's footer lists the focused widget's keys first and the app's last; with the tree
# focused at 80 columns the help and quit keys fell off the edge (issue 26). The tree leads
# with them; the app binds the same two for when the detail pane has the focus.
APP_KEYS: list[BindingType] = [Binding("question_mark", "app.help", "keys"), Binding("q", "app.quit", "quit")]


class TreeView(ScrollView, can_focus=True):
    """The drawing's rows with a cursor. Posts :class:`TreeView.Moved` when it moves."""

    DEFAULT_CSS = """
    TreeView { background: $surface; overflow-x: hidden; }
    """
    # The browser's keys live here, so that they act only while the tree has the focus
    # (not in the search box, not on the context screen); most are the app's actions.
    BINDINGS = [
        *APP_KEYS,
        Binding("escape", "app.sessions", "back"),  # to the picker (shown when there is one)
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "edge(False)", "top", show=False),
        Binding("end", "edge(True)", "bottom", show=False),
        Binding("enter", "app.activate", "fold"),
        Binding("right", "app.unfold", "unfold", show=False),
        Binding("left", "app.fold_or_parent", "fold", show=False),
        Binding("p", "app.parent", "parent", show=False),  # ? lists it: the footer fits 80 columns
        Binding("l", "app.leaf", "leaf"),
        Binding("b", "app.jump('branch', 1)", "branch"),
        Binding("B", "app.jump('branch', -1)", "prev branch pt", show=False),
        Binding("t", "app.jump('tip', 1)", "tip"),
        Binding("T", "app.jump('tip', -1)", "prev tip", show=False),
        Binding("slash", "app.search", "search"),
        Binding("n", "app.next_match(1)", "next match", show=False),
        Binding("N", "app.next_match(-1)", "prev match", show=False),
        Binding("c", "app.context", "context"),
        Binding("L", "app.label", "label", show=False),
        Binding("f", "app.fork", "fork"),
        Binding("r", "app.reload", "reload", show=False),
        Binding("R", "app.reopen", "reopen", show=False),
    ]

    class Moved(Message):
        """The cursor is on another row."""

        def __init__(self, row: Row | None) -> None:
            super().__init__()
            self.row = row

    def on_key(self, event: events.Key) -> None:
        """Keys that come in one burst (`/refactor⏎` pasted or typed fast) are all
        handed to the tree before its bindings run: the search box is opened here, at
        once, and the keys behind it go to the box, in order. Through the binding they
        were lost, or ran as the tree's commands (`r` reload, `f` fork, the `⏎`
        confirming the fork: trial 59)."""
        focused = self.screen.focused
        if focused is self and event.key == "slash":
            event.stop()
            event.prevent_default()
            self.app.action_search()  # type: ignore[attr-defined]
        elif focused is not None and focused is not self:
            event.stop()
            event.prevent_default()
            focused.post_message(events.Key(event.key, event.character))

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.drawing: Drawing | None = None
        self.rows: list[Row] = []
        self.cursor = 0
        self._texts: OrderedDict[tuple[int, int], Text] = OrderedDict()
        self._index: dict[int, int] = {}
        self._layout: tuple[Any, Layout] | None = None  # (structure, its layout for format_row)

    # ------------------------------------------------------------------ model
    def show(self, drawing: Drawing, entry: int | None = None) -> None:
        """Draw ``drawing`` now (after a change of folding), the cursor on ``entry`` if given."""
        current = self.current_row()
        self.drawing = drawing
        self.rows = drawing.rows()
        self._index = {r.entry: i for i, r in enumerate(self.rows) if r.kind == ENTRY}
        self._texts.clear()
        self.virtual_size = Size(1, len(self.rows))  # rows are cut to the width: no horizontal scroll
        if entry is not None and entry in self._index:
            self.move_to(self._index[entry])
        elif current is not None and current.kind == ENTRY and current.entry in self._index:
            self.move_to(self._index[current.entry])
        else:
            self.move_to(min(self.cursor, max(0, len(self.rows) - 1)))
        self.refresh()

    def clear(self) -> None:
        """Show no rows (another session is being opened)."""
        self.drawing, self.rows, self.cursor = None, [], 0
        self._index = {}
        self._texts.clear()
        self.virtual_size = Size(1, 0)
        self.refresh()

    def forget(self) -> None:
        """Drop cached row texts (labels or the leaf changed)."""
        self._texts.clear()
        self.refresh()

    def row_of(self, entry: int) -> int | None:
        return self._index.get(entry)

    def current_row(self) -> Row | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def move_to(self, i: int) -> None:
        if not self.rows:
            self.cursor = 0
            self.post_message(self.Moved(None))
            return
        i = max(0, min(i, len(self.rows) - 1))
        self.cursor = i
        self._keep_cursor_visible()
        # Once more after the next layout: a new virtual size is known only then.
        self.call_after_refresh(self._keep_cursor_visible)
        self.refresh()
        self.post_message(self.Moved(self.rows[i]))

    def _keep_cursor_visible(self) -> None:
        i = self.cursor
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if i < top:
            self.scroll_to(y=i, animate=False, immediate=True, force=True)
        elif i >= top + height:
            self.scroll_to(y=max(0, i - height // 2), animate=False, immediate=True, force=True)

    # ------------------------------------------------------------------ keys
    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, pages: int) -> None:
        self.move_to(self.cursor + pages * max(1, self.scrollable_content_region.height - 1))

    def action_edge(self, end: bool) -> None:
        self.move_to(len(self.rows) - 1 if end else 0)

    def on_click(self, event: Any) -> None:
        self.move_to(round(self.scroll_y) + event.y)

    # ------------------------------------------------------------------ drawing
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        i = round(self.scroll_y) + y
        if i >= len(self.rows) or self.drawing is None:
            return Strip.blank(width)
        key = (i, width)
        text = self._texts.get(key)
        if text is None:
            try:
                text = self._row_text(self.rows[i], width)
            except (SessionError, OSError) as e:  # the file changed under the app: said there, row left blank
                self.app.call_later(getattr(self.app, "file_changed"), e)  # BrowseApp's
                return Strip.blank(width)
            self._texts[key] = text
            if len(self._texts) > _CACHE_ROWS:
                self._texts.popitem(last=False)
        strip = Strip(list(text.render(self.app.console)), text.cell_len).crop_extend(0, width, None)
        if i == self.cursor:
            strip = strip.apply_style(_CURSOR)
        return strip

    def _row_text(self, row: Row, width: int) -> Text:
        drawing = self.drawing
        assert drawing is not None
        st = drawing.st
        if self._layout is None or self._layout[0] is not st:
            self._layout = (st, Layout(st.shape, st.session_leaf, set(st.labels), -1, st.entry,
                                          id_width=id_width(st.shape.ids)))
        lay = self._layout[1]
        if row.kind == NOTE:
            _, segs = format_row(TreeRow((row.prefix,), None, False, row.depth, note=row.note), lay, None, width)
            return _text(segs)
        if row.kind == FOLD:
            kinds: Counter[str] = Counter({safe(k): n for k, n in drawing.kinds(row.hidden).items()})
            _, segs = format_row(TreeRow((row.prefix,), None, row.on_path, row.depth, folded=kinds), lay, None, width)
            return _text(segs + [("  (enter: unfold)", "dim")])
        if row.kind == MORE:
            n = len(row.hidden)
            return _text([(row.prefix, "bright_black"),
                          (f"⋯ {n:,} older branch{'es' if n != 1 else ''} (enter: show them)", "dim italic")])
        n = row.entry
        extra: list[tuple[str, str]] = []
        if row.collapsed:
            hidden = drawing.subtree_size(n) - 1
            extra.append((f"  ▸ {hidden:,} more entr{'ies' if hidden != 1 else 'y'} folded", "bold magenta"))
        elif st.is_tip(n) and n != st.session_leaf:
            extra.append(("  tip", "bold magenta"))
        room = width - sum(len(t) for t, _ in extra)
        tree_row = TreeRow((row.prefix,), n, row.on_path, row.depth)
        _, segs = format_row(tree_row, lay, st.labels.get(n), max(20, room))
        return _text(segs + extra)


def _text(segs: list[tuple[str, str]]) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for part, style in segs:
        text.append(part, _style(style))
    return text
