"""The session picker: a screen over a history's sessions (Pi's ``/resume`` selector;
its model, the rows and their order, is ``_sessions``).

The listing runs in a worker thread, a group of folders at a time (``_sessions.take``,
each group as large as the last one's pace reads in a quarter of a second), and each
group's rows are shown as they arrive, so the screen is up at once and the
newest sessions of the first folders show before the last folder is read. A query is
answered by the catalog's search in another worker, its sessions shown as the hits
stream in (best first); a newer query stops an older one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Input, Static

from ..schema import SessionInfo
from ..view import cells, fit, fit_start, human_seconds, one_line, safe, zoned_time
from ._sessions import FIRST_GROUP, SORTS, Found, Picker, Row, age, counts, next_want, rows, take

__all__ = ["PickerScreen", "SessionList"]

_CURSOR = Style(bgcolor="grey23", bold=True)
_SEARCH_DELAY = 0.25  # seconds of no typing before a query goes to the search
_SHOW_EVERY = 0.15  # seconds between two screen updates while hits stream in


class SessionList(ScrollView, can_focus=False):
    """The picker's rows, one line each, drawn lazily; the cursor is the picker's."""

    DEFAULT_CSS = """
    SessionList { background: $surface; overflow-x: hidden; }
    """

    class Chosen(Message):
        """A row was clicked twice (as enter)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.rows: list[Row] = []
        self.cursor = 0
        self.show_path = False
        self.show_cwd = False
        self.current: str | None = None  # the session open in the browser
        self._texts: OrderedDict[tuple[int, int], Text] = OrderedDict()
        self._now = datetime.now(timezone.utc)

    def show(self, new_rows: list[Row], keep: str | None) -> None:
        """Draw ``new_rows``, the cursor on the session ``keep`` if it is there."""
        self.rows = new_rows
        self._texts.clear()
        self._now = datetime.now(timezone.utc)
        self.virtual_size = Size(1, len(new_rows))
        at = next((i for i, r in enumerate(new_rows) if r.info.path == keep), None) if keep is not None else None
        self.move_to(at if at is not None else min(self.cursor, max(0, len(new_rows) - 1)))

    def selected(self) -> Row | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def move_to(self, i: int) -> None:
        self.cursor = max(0, min(i, len(self.rows) - 1)) if self.rows else 0
        self._keep_cursor_visible()
        self.call_after_refresh(self._keep_cursor_visible)
        self.refresh()

    def page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _keep_cursor_visible(self) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True, force=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=max(0, self.cursor - height + 1), animate=False, immediate=True, force=True)

    def on_click(self, event: Any) -> None:
        i = round(self.scroll_y) + event.y
        if i == self.cursor and getattr(event, "chain", 1) >= 2:
            self.post_message(self.Chosen())
        self.move_to(i)
        self.screen.post_message(PickerScreen.Moved())

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        i = round(self.scroll_y) + y
        if i >= len(self.rows):
            return Strip.blank(width)
        key = (i, width)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = row_text(self.rows[i], width, show_path=self.show_path,
                                               show_cwd=self.show_cwd, current=self.current, now=self._now)
            if len(self._texts) > 2048:
                self._texts.popitem(last=False)
        if i == self.cursor:  # Pi's cursor mark
            text = Text.assemble(("› ", "bold"), text[2:])
        strip = Strip(list(text.render(self.app.console)), text.cell_len).crop_extend(0, width, None)
        return strip.apply_style(_CURSOR) if i == self.cursor else strip


def row_text(row: Row, width: int, *, show_path: bool, show_cwd: bool, current: str | None,
             now: datetime) -> Text:
    """One row as Pi's picker draws it: the cursor's column, the threaded prefix, the name
    (yellow) or first message, and at the right ``[path] [cwd] messages age``."""
    s = row.info
    right = f"{s.message_count} {age(s.modified, now)}"
    if show_cwd and s.cwd:
        right = f"{one_line(_home(s.cwd), 200)} {right}"
    lead = 2 + cells(row.prefix)
    if show_path:
        # The title keeps 10 cells (Pi's floor); a path that does not fit loses its start
        # (its file name matters most), or goes when not even that fits.
        room = width - lead - 10 - 2 - cells(right) - 1
        path = safe(_home(s.path))
        if cells(path) > room:
            path = fit_start(path, room) if room >= 12 else ""
        right = f"{path} {right}" if path else right
    right_w = cells(right)
    room = width - lead - right_w - 2
    if room < 10:  # the right part gives way
        right = fit(right, max(0, width - lead - 10 - 1))
        right_w = cells(right)
        room = max(1, width - lead - right_w - 1)
    title = fit(one_line(s.name if s.name else s.first_message, 400), room)
    style = "cyan" if current is not None and s.path == current else "yellow" if s.name else ""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("  ")  # the cursor's column
    text.append(row.prefix, "bright_black")
    text.append(title, style)
    gap = max(1, width - lead - cells(title) - right_w)
    text.append(" " * gap)
    text.append(right, "dim")
    return text


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home not in ("", "/", "~") and path.startswith(home) else path


class PickerScreen(Screen[None]):
    """Pick a session: type to search, ↑ ↓ to move, enter to open it in the browser.

    The app (``BrowseApp``) installs it once and shows it again with the browser's
    ``escape``; its rows, query and cursor stay as they were.
    """

    BINDINGS = [
        Binding("enter", "choose", "open", priority=True),
        Binding("tab", "scope", "scope", priority=True),
        Binding("ctrl+s", "sort", "sort", priority=True),
        Binding("ctrl+n", "named", "named", priority=True),
        Binding("ctrl+p", "path", "path", priority=True),
        # One key, two meanings: the footer shows the one that holds now (check_action).
        Binding("escape", "back", "back", priority=True),
        Binding("escape", "cancel", "quit", priority=True),
        Binding("up", "move(-1)", "up", show=False, priority=True),
        Binding("down", "move(1)", "down", show=False, priority=True),
        Binding("pageup", "page(-1)", "page up", show=False, priority=True),
        Binding("pagedown", "page(1)", "page down", show=False, priority=True),
        Binding("ctrl+home", "edge(False)", "first", show=False, priority=True),
        Binding("ctrl+end", "edge(True)", "last", show=False, priority=True),
    ]
    DEFAULT_CSS = """
    PickerScreen #picker-head { height: 1; background: $boost; padding: 0 1; }
    PickerScreen #picker-query { border: none; height: 1; padding: 0 1; }
    PickerScreen SessionList { height: 1fr; }
    PickerScreen #picker-detail { height: 2; padding: 0 1; background: $boost; }
    PickerScreen #picker-status { height: 1; background: $panel; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    class Moved(Message):
        """The cursor moved (the detail lines follow it)."""

    def __init__(self, picker: Picker, on_choose: Callable[[str, str | None], None],
                 on_cancel: Callable[[], None]) -> None:
        super().__init__()
        self.picker = picker
        self.on_choose = on_choose
        self.on_cancel = on_cancel
        self.scope = picker.start
        self.sort = SORTS[0]
        self.named = False
        self.listed: dict[int, list[SessionInfo]] = {}
        self.reading: dict[int, tuple[int, int]] = {}  # scope -> (files read, files) shown
        self._counts: dict[int, tuple[int, int]] = {}  # the same, as the worker knows it
        self.problems: dict[int, int] = {}
        self.found: Found | None = None
        self.timings: dict[str, float] = {}
        self._search_seq = 0
        self.moved = False  # the user moved the cursor (since the last query)
        self.note = ""
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(id="picker-head")
        yield Input(placeholder='search: words, "a phrase", re:PATTERN', id="picker-query")
        yield SessionList(id="picker-list")
        yield Static(id="picker-detail")
        yield Static(id="picker-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        self._load(self.scope)
        self._draw()
        self.set_interval(0.1, self._tick)

    def on_resize(self, _event: Any) -> None:
        # The head and the detail are text made for a width: made again once the new
        # one is laid out (the list's rows draw themselves at any width).
        self.call_after_refresh(self._head)
        self.call_after_refresh(self._detail)

    def on_screen_resume(self) -> None:
        self.query_one(Input).focus()
        self.refresh_bindings()  # escape: back to a session opened since, or quit
        if self.timings.get("listed") is not None and self.scope not in self.reading:
            self._load(self.scope, again=True)  # the browser may have changed a session

    def _list(self) -> SessionList:
        return self.query_one(SessionList)

    # ------------------------------------------------------------------ the listing
    @work(thread=True, group="picker-list")
    def _load(self, scope: int, again: bool = False) -> None:
        from .._listing import list_folders

        sc = self.picker.scopes[scope]
        left = counts(sc.sources)
        files = sum(n for _, n in left)
        if not again:  # a listing again (back from the browser) keeps its rows and header
            self.app.call_from_thread(self._progress, scope, files)
        got: list[SessionInfo] = []
        problems = 0
        done = 0
        want = FIRST_GROUP

        def problem(_p: Any) -> None:
            nonlocal problems
            problems += 1

        while left:
            group, n, left = take(left, want)

            def progress(loaded: int, _total: int, base: int = done) -> None:
                # Not call_from_thread, which waits for the screen: a timer shows it.
                if not again:
                    self._counts[scope] = (base + loaded, files)

            t0 = time.perf_counter()
            try:
                part = list_folders(group, progress, problem, catalog=self.picker.catalog,
                                    no_cache=self.picker.no_cache)
            except Exception as e:  # noqa: BLE001 - said; the other folders are listed
                self.app.call_from_thread(self.say, f"cannot list {safe(', '.join(group))}: {safe(str(e))}")
                part = []
            want = next_want(n, time.perf_counter() - t0, want)
            done += n
            # Newest first, ties in folder then file-name order: the order of one listing
            # of all the folders (the groups keep the folders' order; the sort is stable).
            got = sorted(got + part, key=lambda s: s.modified, reverse=True) if got else part
            if not again and left:
                self.app.call_from_thread(self._arrived, scope, list(got), done, files, problems, False)
        self.app.call_from_thread(self._arrived, scope, got, files, files, problems, True)

    def _progress(self, scope: int, files: int) -> None:
        self.reading[scope] = self._counts[scope] = (0, files)
        self._head()

    def _tick(self) -> None:
        """The listing's count while it runs (the worker writes ``_counts``)."""
        if self.scope in self.reading and self._counts.get(self.scope, (0, 0)) > self.reading[self.scope]:
            self.reading[self.scope] = self._counts[self.scope]
            self._head()

    def _arrived(self, scope: int, sessions: list[SessionInfo], done: int, files: int, problems: int,
                 last: bool) -> None:
        self.listed[scope] = sessions
        self.problems[scope] = problems
        if last:
            self.reading.pop(scope, None)
            if scope == self.scope and "listed" not in self.timings:
                self.timings["listed"] = time.perf_counter() - self._t0
        else:
            self.reading[scope] = (done, files)
        if scope == self.scope:
            if sessions and "first_rows" not in self.timings:
                self.timings["first_rows"] = time.perf_counter() - self._t0
            self._draw()

    # ------------------------------------------------------------------ drawing
    def _draw(self) -> None:
        sessions = self.listed.get(self.scope, [])
        lst = self._list()
        # The cursor stays on its session while rows arrive, once the user has moved it;
        # until then it stays on the first row (the newest, or the best match).
        row = lst.selected()
        keep = row.info.path if row is not None and self.moved else None
        if not self.moved:
            lst.cursor = 0
        lst.show_cwd = self.picker.scopes[self.scope].projects or len({s.cwd for s in sessions[:2000]}) > 1
        with self._lock:  # the search's worker adds to ``found``
            shown = rows(sessions, sort=self.sort, named=self.named, found=self.found)
        lst.show(shown, keep)
        self._head()
        self._detail()
        self._status()

    def _head(self) -> None:
        sc = self.picker.scopes[self.scope]
        parts: list[str] = []
        radios = self.scope not in self.reading and len(self.picker.scopes) > 1
        # The scope is named once: in the radios when they show (the title cut its own
        # words at 80 columns repeating it), else in the title.
        left = Text("Resume session" if radios else f"Resume session ({sc.label})", style="bold")
        if self.scope in self.reading:
            done, files = self.reading[self.scope]
            parts.append(f"loading {done:,}/{files:,}")
        elif radios:  # always in one order (Pi's), the current marked
            parts.append(" | ".join(("◉ " if i == self.scope else "○ ") + s.label
                                    for i, s in enumerate(self.picker.scopes)))
        parts.append(f"name: {'named' if self.named else 'all'}")
        # With a query, threaded ranks as relevance does (Pi's filterAndSortSessions):
        # the header says the order the rows are in.
        searching = self.found is not None and self.sort == "threaded"
        parts.append("sort: relevance (with a query)" if searching else f"sort: {self.sort}")
        right = "  ".join(parts)
        width = max(20, self.size.width - 2)
        left_w = max(0, width - cells(right) - 1)
        left.truncate(left_w, overflow="ellipsis")
        left.append(" " * max(1, width - left.cell_len - cells(right)))
        left.append(fit(right, width - left.cell_len), "dim")
        self.query_one("#picker-head", Static).update(left)

    def _detail(self) -> None:
        row = self._list().selected()
        box = self.query_one("#picker-detail", Static)
        if row is None:
            box.update("")
            return
        s = row.info
        width = max(10, box.size.width - 2)  # its padding
        shown = safe(_home(s.path))
        shown = fit_start(shown, width)  # the file's name matters most: cut at the start
        first = Text(shown, style="bold")
        if row.hit is not None:
            h = row.hit
            second = Text.assemble((f"{h.role}: ", "cyan"), *_marked(h.snippet, h.marks))
        else:
            # ``modified`` is the last message's time (Pi's), ``created`` the header's: a
            # fork copies its messages, so its last message is older than the fork.
            started = (f"forked {zoned_time(s.created, seconds=False)} from "
                       f"{safe(os.path.basename(s.parent_session_path))}" if s.parent_session_path
                       else f"started {zoned_time(s.created, seconds=False)}")
            second = Text(f"last message {zoned_time(s.modified, seconds=False)} · {started} · "
                          f"{_many(s.message_count, 'message')} · {one_line(s.cwd, 200)}", style="dim")
        for t in (first, second):  # one line each, cut to the width
            t.truncate(width, overflow="ellipsis")
        box.update(Text("\n").join([first, second]))

    def _status(self) -> None:
        sessions = self.listed.get(self.scope)
        shown = len(self._list().rows)
        sc = self.picker.scopes[self.scope]
        if sessions is None:
            msg = f"listing {safe(sc.where)} …"
        elif not sessions and self.scope not in self.reading:
            scopes = self.picker.scopes
            hint = f" (tab: {safe(scopes[(self.scope + 1) % len(scopes)].label)})" if len(scopes) > 1 else ""
            msg = f"no sessions{hint} in {safe(sc.where)}"
        else:
            msg = (f"{shown:,} of " if shown != len(sessions) else "") + _many(len(sessions), "session")
            if "listed" in self.timings and self.scope not in self.reading:
                msg += f" · listed in {human_seconds(self.timings['listed'])}"
        f = self.found
        if f is not None:
            if f.error:
                msg = f"bad query: {safe(f.error)}"
            else:
                with self._lock:  # the entries of the sessions shown (the name filter's too)
                    matching = sum(f.entries.get(r.info.path, 0) for r in self._list().rows)
                msg += f" · {_many(matching, 'matching entry', 'matching entries')}" + (
                    "" if f.done else " · searching …")
        if self.problems.get(self.scope):
            n = self.problems[self.scope]
            msg += (f" · {_many(n, 'file is not a session', 'files are not sessions')}"
                    f" (sessiontree ls lists {'it' if n == 1 else 'them'})")
        if self.note:
            msg = f"{msg}  │  {self.note}"
        self.query_one("#picker-status", Static).update(Text(msg))  # one line, cut with "…" (CSS)

    def say(self, note: str) -> None:
        """A note on the status line, after the counts, until the next key."""
        self.note = note
        self._status()

    def on_key(self, _event: Any) -> None:
        if self.note:
            self.note = ""
            self._status()

    def on_picker_screen_moved(self, _event: PickerScreen.Moved) -> None:
        self.moved = True
        self._detail()

    # ------------------------------------------------------------------ keys
    def action_move(self, step: int) -> None:
        self.moved = True
        lst = self._list()
        lst.move_to(lst.cursor + step)
        self._detail()

    def action_page(self, step: int) -> None:
        self.moved = True
        lst = self._list()
        lst.move_to(lst.cursor + step * lst.page())
        self._detail()

    def action_edge(self, end: bool) -> None:
        self.moved = True
        lst = self._list()
        lst.move_to(len(lst.rows) - 1 if end else 0)
        self._detail()

    def action_choose(self) -> None:
        row = self._list().selected()
        if row is None:
            self.say("no session here to open")
            return
        # A search's row opens at its hit (the entry its snippet is from), as a hit of
        # `sessiontree search` opens with `context FILE --leaf ENTRY`.
        self.on_choose(row.info.path, row.hit.entry_id if row.hit is not None else None)

    def on_session_list_chosen(self, _event: SessionList.Chosen) -> None:
        self.action_choose()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # escape goes back to the session open in the browser, if any, else quits.
        if action in ("back", "cancel"):
            return (self._list().current is not None) == (action == "back")
        return True

    def action_back(self) -> None:
        self.on_cancel()

    def action_cancel(self) -> None:
        self.on_cancel()

    def action_scope(self) -> None:
        if len(self.picker.scopes) < 2:
            self.say("one scope: the sessions of " + safe(self.picker.scopes[0].where))
            return
        self.scope = (self.scope + 1) % len(self.picker.scopes)
        if self.scope not in self.listed and self.scope not in self.reading:
            self._load(self.scope)
        if self.found is not None:
            self._search(self.found.query)
        self._draw()

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._draw()

    def action_named(self) -> None:
        self.named = not self.named
        self._draw()

    def action_path(self) -> None:
        lst = self._list()
        lst.show_path = not lst.show_path
        lst.show(lst.rows, None)

    # ------------------------------------------------------------------ search
    def on_input_changed(self, event: Input.Changed) -> None:
        self._search_seq += 1
        text = event.value
        if not text.strip():
            self.found = None
            self.moved = False
            self._draw()
            return
        seq = self._search_seq
        self.set_timer(_SEARCH_DELAY, lambda: self._search(text) if seq == self._search_seq else None)

    def _search(self, query: str) -> None:
        self._search_seq += 1
        found = Found(query)
        self.found = found
        self.moved = False
        self._head()
        self._status()
        # A thread of its own, not a Textual worker: a worker runs in the event loop's
        # executor, which the app's end waits for, so quitting during a long search (a
        # re: pattern over a large history takes minutes) left a blank terminal until
        # it finished. A search only reads; a daemon thread ends with the process.
        # The app is handed over: a thread of its own has none of Textual's context, and
        # a screen that has ended no longer finds its app.
        threading.Thread(target=self._run_search,
                         args=(self.app, found, self._search_seq, self.picker.scopes[self.scope].sources),
                         name="picker-search", daemon=True).start()

    def _run_search(self, app: Any, found: Found, seq: int, sources: tuple[str, ...]) -> None:
        from ..catalog import search_stream

        unindexed: list[int] = []
        try:
            total, _files, hits = search_stream(found.query, list(sources), order="relevance", limit=None,
                                                catalog=self.picker.catalog, no_cache=self.picker.no_cache,
                                                on_unindexed=unindexed.append)
        except ValueError as e:
            found.error = str(e)
            found.done = True
            self._show(app, found)
            return
        except Exception as e:  # noqa: BLE001 - said on the status line, the picker stays up
            found.error = f"the search failed: {e}"
            found.done = True
            self._show(app, found)
            return
        found.total = total
        shown = time.perf_counter()
        try:
            for h in hits:
                if seq != self._search_seq or not app.is_running:
                    return  # a newer query, or the app has ended
                with self._lock:
                    found.add(h)
                if time.perf_counter() - shown > _SHOW_EVERY:
                    shown = time.perf_counter()
                    self._show(app, found)
        finally:
            close = getattr(hits, "close", None)
            if close is not None:
                close()
        found.done = True
        self._show(app, found)
        if sum(unindexed) and not app.is_headless:
            self._index_later(sources, sum(unindexed))

    def _index_later(self, sources: tuple[str, ...], unindexed: int) -> None:
        """The catalog and search index of the scope built behind the search, as
        ``sessiontree search`` at a terminal starts it (CONTRACT §7), so that the next
        query reads the index; a build already going on is left to finish."""
        from ..catalog import index_later

        index_later(list(sources), catalog=self.picker.catalog, unindexed=unindexed)

    def _show(self, app: Any, found: Found) -> None:
        """``found`` drawn, from the search's thread; nothing once the app has ended
        (the thread outlives it)."""
        if app.is_running:
            with contextlib.suppress(RuntimeError):  # ended meanwhile
                app.call_from_thread(self._searched, found)

    def _searched(self, found: Found) -> None:
        if found is self.found:
            self._draw()


def _many(n: int, one: str, many: str | None = None) -> str:
    """``1 session``, ``2 sessions``: ``n`` (with thousands commas) and the word it takes."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _marked(snippet: str, marks: tuple[tuple[int, int], ...]) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    pos = 0
    for s, e in marks:
        parts.append((safe(snippet[pos:s]), ""))
        parts.append((safe(snippet[s:e]), "bold reverse"))
        pos = e
    parts.append((safe(snippet[pos:]), ""))
    return parts
