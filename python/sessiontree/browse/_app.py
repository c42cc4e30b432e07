"""``BrowseApp``: the ``sessiontree browse`` Textual app (keys: ``cli/browse.py``).

The session opens in a worker thread (the screen is up at once) and the shape comes
from ``view.structure_of``; then every key works on the shape and the drawing,
and only the entries on screen, the selected one, a search's candidates and a
context are decoded. Writes (a label, a fork) go through ``SessionManager``: a label
is appended to this session (as Pi appends it, at the leaf), a fork is written by a
second manager so this one stays on the file being browsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from ..view import (
    AmbiguousIdError,
    Drawing,
    ENTRY,
    FOLD,
    MORE,
    Row,
    Structure,
    cells,
    fit,
    human_bytes,
    human_seconds,
    item_of,
    safe,
    structure_of,
)
from ..errors import SessionError
from ._detail import item_text
from ._picker import PickerScreen, SessionList
from ._sessions import Picker
from ._screens import AskScreen, ConfirmScreen, ContextScreen, HelpScreen
from ._tree_view import APP_KEYS, TreeView

__all__ = ["BrowseApp"]

_SEARCH_CHUNK = 400  # entries decoded between two screen updates while searching


class _TreeScreen(Screen[Any]):
    """The app's default screen (:meth:`BrowseApp.get_default_screen`)."""

    AUTO_FOCUS = "#tree"


class BrowseApp(App[None]):
    """Browse one session file, or pick one of a history's sessions first.

    Args:
        path: the session file (``None`` with a ``picker``).
        backend: ``auto``, ``python`` or ``native``.
        select: an entry id (or unique prefix) to start at; default the current leaf.
        picker: the sessions to pick from (``_picker.Picker``): the app opens on the
            picker, enter opens the chosen session, ``escape`` in the tree goes back.

    After :meth:`run`, ``failure`` holds the exception that stopped the app (the file
    could not be opened), else ``None``; ``return_code`` is Textual's (1 after a crash).

    A file truncated, replaced or removed while it is browsed is said in the app, with
    an offer to reopen it (``R`` too), whatever read met it: a row, the detail, a
    search, a context (:meth:`reading`).
    """

    TITLE = "sessiontree browse"
    CSS = """
    #main { height: 1fr; }
    TreeView { width: 3fr; border-right: tall $panel; }
    #detail { width: 2fr; padding: 0 1; }
    #status { height: 1; background: $panel; padding: 0 1; }
    #search { dock: bottom; display: none; }
    #search.open { display: block; }
    """
    # ctrl+c quits from every screen, the search box's too, as it leaves Pi's /resume:
    # Textual would take it for "copy" there and only say how to quit.
    BINDINGS = [*APP_KEYS, Binding("ctrl+c", "quit", "quit", show=False, priority=True)]
    ENABLE_COMMAND_PALETTE = False  # its ctrl+p is the picker's (Pi's path key)

    def __init__(self, path: str | None = None, *, backend: str = "auto", select: str | None = None,
                 picker: Picker | None = None) -> None:
        super().__init__()
        if path is None and picker is None:
            raise ValueError("BrowseApp needs a session file or a picker")
        self.path = path or ""
        self.picker = picker
        self.backend = backend
        self.select = select
        self.failure: BaseException | None = None
        self.sm: Any = None
        self.st: Structure | None = None
        self.drawing: Drawing | None = None
        self.query_text: str | None = None
        self.searching = False
        self.pending_search = False  # a search submitted before the session was open (_opened runs it)
        self.facts = ""
        self.timings: dict[str, float] = {}
        self.forked: str | None = None
        self.changed: str | None = None  # why the file can no longer be read (None: it can)
        self._offering = False

    # ------------------------------------------------------------------ layout
    def get_default_screen(self) -> Screen[Any]:
        """The tree's screen, where the tree has the keys from the start: Textual's
        default gave them to the hidden search box while the session opened, so
        `/fix⏎` typed then searched "/fix", and once the open took the focus back, its
        letters ran as the tree's commands (`f` forked, `⏎` confirmed: trial 59b). Set on
        this screen alone: the app's ``AUTO_FOCUS`` is every screen's default, the
        picker's and the questions' too."""
        return _TreeScreen(id="_default")

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield TreeView(id="tree")
            with VerticalScroll(id="detail"):
                yield Static(id="detail-text")
        yield Input(placeholder="search the session's text (enter: find, escape: cancel)", id="search")
        yield Static(id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        if self.picker is not None:
            self.install_screen(PickerScreen(self.picker, self.open_session, self._picker_cancelled), name="picker")
            self.say("enter in the picker opens a session")
            self.push_screen("picker")
            return
        self._start()

    def _start(self) -> None:
        try:
            size = f" ({human_bytes(os.path.getsize(self.path))})"
        except OSError:
            size = ""  # the open says why
        self.say(f"opening {os.path.basename(self.path)}{size} …")
        self._open()

    def on_unmount(self) -> None:
        if self.sm is not None:
            self.sm.close()

    @work(thread=True, exclusive=True, group="open")
    def _open(self, again: bool = False) -> None:
        from .. import LoadReportWarning, SessionManager

        try:
            t0 = time.perf_counter()
            if not os.path.exists(self.path):  # SessionManager.open would start a new, empty session
                raise FileNotFoundError(errno.ENOENT, "no such file", self.path)
            with warnings.catch_warnings():  # the status line counts the load report instead
                warnings.simplefilter("ignore", LoadReportWarning)
                sm = SessionManager.open(self.path, backend=self.backend)
            t1 = time.perf_counter()
            self.call_from_thread(self.say, f"reading the tree of {len(sm):,} entries …")
            try:
                st = structure_of(sm)
            except BaseException:
                sm.close()
                raise
            t2 = time.perf_counter()
        except BaseException as e:  # at the start: reported by the command after the app exits
            self.call_from_thread(self._reopen_failed if again else self._fail, e)
            return
        self.call_from_thread(self._opened, sm, st, t1 - t0, t2 - t1)

    def _fail(self, error: BaseException) -> None:
        if self.picker is not None:  # back to the picker, which says why
            name = os.path.basename(self.path)
            why = safe(str(error).replace(self.path, name)) if self.path else safe(str(error))
            self.path = ""
            self.say("")
            self.action_sessions()
            self._picker_screen().say(f"cannot open {safe(name)}: {why}")
            return
        self.failure = error
        self.exit()

    # ------------------------------------------------------------------ the picker
    def open_session(self, path: str, select: str | None = None) -> None:
        """Open ``path`` in the browser (the picker's enter), at the entry ``select``
        (a search hit's) if given, else at its leaf; the session open now, if another,
        is closed once the new one is read."""
        if isinstance(self.screen, PickerScreen):
            self.pop_screen()
        if path == self.path and self.sm is not None and self.changed is None and self.st is not None:
            at = self.st.number(select)
            if at is not None and self.drawing is not None:
                self.drawing.reveal(at)
                self._tree().show(self.drawing, at)
            self._tree().focus()
            return
        self.path, self.select, self.query_text = path, select, None
        self.pending_search = False
        self.facts, self.changed = "", None
        if self.sm is not None:
            self.sm.close()
        self.sm = self.st = self.drawing = None
        self._tree().clear()
        self.query_one("#detail-text", Static).update("")
        self._start()

    def action_sessions(self) -> None:
        """Back to the picker (``escape`` in the tree); a running search stops first."""
        if self.picker is None:
            return
        if self.searching:
            self.searching = False
            return
        if not isinstance(self.screen, PickerScreen):
            # (the footer's escape: "back" to an open session, else "quit")
            self._picker_screen().query_one(SessionList).current = self.path if self.sm is not None else None
            self.push_screen("picker")

    def _picker_screen(self) -> PickerScreen:
        """The picker (installed by ``on_mount`` when there is one)."""
        picker = self.get_screen("picker")
        assert isinstance(picker, PickerScreen)
        return picker

    def _picker_cancelled(self) -> None:
        """``escape`` in the picker: back to the session open, else quit."""
        if self.sm is not None:
            self.pop_screen()
            self._tree().focus()
        else:
            self.exit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The tree's "sessions" key is shown (and works) only when there is a picker.
        return self.picker is not None if action == "sessions" else True

    def _reopen_failed(self, error: BaseException) -> None:
        self.say(f"cannot reopen it: {safe(str(error).replace(self.path, os.path.basename(self.path)))} "
                 "(R tries again, q quits)")

    # ------------------------------------------------------------------ a file changed under the app
    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Around a read of the session: a file truncated, replaced or removed since it
        was opened (``StaleSessionError``, an ``OSError``) is said, never a crash."""
        try:
            yield
        except (SessionError, OSError) as e:
            self.file_changed(e)

    def file_changed(self, error: BaseException) -> None:
        """Say that the file can no longer be read as it was opened; offer to reopen it."""
        self.changed = safe(str(error).replace(self.path, os.path.basename(self.path)))
        self.say(f"{self.changed} · R reopens it")
        if self._offering:
            return
        self._offering = True

        def done(yes: bool | None) -> None:
            self._offering = False
            if yes:
                self.action_reopen()
            else:
                self.say(f"{self.changed} · what was read stays on screen; R reopens the file")

        self.push_screen(ConfirmScreen(
            f"The session file changed under the browser: {self.changed}.\n\nEntries not shown yet cannot be "
            "read from what was opened. Reopen the file now (its tree as it is now)?"), done)

    def action_reopen(self) -> None:
        """Open the file again (after it was replaced, truncated or removed), keeping the
        selected entry if the new file holds it."""
        row = self._tree().current_row() if self.st is not None else None
        if row is not None and row.entry >= 0 and self.st is not None:
            self.select = self.st.id(row.entry)
        self.say(f"reopening {os.path.basename(self.path)} …")
        self._open(again=True)

    def _opened(self, sm: Any, st: Structure, open_s: float, shape_s: float) -> None:
        old, again = self.sm, self.sm is not None
        self.sm, self.st = sm, st
        self.changed = None
        if old is not None:
            old.close()
        self.timings = {"open": open_s, "shape": shape_s}
        self.drawing = Drawing(st)
        start = st.session_leaf
        note = ""
        if self.select is not None:
            try:
                start = st.number(st.resolve(self.select))
            except (KeyError, AmbiguousIdError) as e:
                start = st.session_leaf
                if not again:
                    note = f"  --select {safe(self.select)}: " + (
                        "no such entry" if isinstance(e, KeyError) else safe(str(e)))
        self.facts = self._facts_line()
        self.sub_title = safe(os.path.basename(self.path))
        if self.picker is not None:
            self._picker_screen().query_one(SessionList).current = self.path
        tree = self.query_one(TreeView)
        if start is not None:
            self.drawing.reveal(start)
        tree.show(self.drawing, start)
        # Keys typed while the session opened (trial 59b: `/fix⏎` before the tree was up
        # forked the session): a search box opened meanwhile keeps the focus, and a
        # search submitted meanwhile runs now.
        if not self.query_one("#search", Input).has_class("open"):
            tree.focus()
        self.say(note.strip() or ("reopened: the tree as the file is now" if again else "? lists the keys"))
        self.timings["first_screen"] = time.perf_counter()
        if self.pending_search:
            self.pending_search = False
            self._search(1)

    # ------------------------------------------------------------------ status and detail
    def _facts_line(self) -> str:
        """The status line's facts: name, entries, backend, timings, load problems."""
        sm, st = self.sm, self.st
        assert sm is not None and st is not None
        name = sm.get_session_name()
        problems = len(sm.load_report)
        return (f"{safe(name) + ' · ' if name else ''}{len(st):,} entries · {sm.backend} · "
                f"opened in {human_seconds(self.timings['open'])}, tree in {human_seconds(self.timings['shape'])}"
                + (f" · {problems:,} load problem{'s' if problems != 1 else ''} "
                   "(sessiontree check lists them)" if problems else ""))

    def say(self, message: str) -> None:
        """``message`` on the status line after the session's facts; on a narrow
        terminal the facts give way (cut, then left out), never the message."""
        box = self.query_one("#status", Static)
        facts = self.facts
        width = box.size.width - 2  # its padding; 0 or less before the first layout
        if facts and width > 0:
            room = width - cells(message) - 5
            facts = fit(facts, room) if room >= 12 else ""
        line = Text(f"{facts}  │  {message}" if facts else message, no_wrap=True, overflow="ellipsis")
        box.update(line)

    def on_tree_view_moved(self, event: TreeView.Moved) -> None:
        self._show_detail(event.row)

    def _show_detail(self, row: Row | None) -> None:
        try:
            # The tree's screen, wherever it is in the stack (``query_one`` asks the
            # active one), and none once the app is closing: a move a search made then
            # raised NoMatches and failed the app (CI at e6dd31b).
            pane = self.screen_stack[0].query_one("#detail-text", Static)
        except (NoMatches, IndexError):
            return
        st = self.st
        if row is None or st is None:
            pane.update("")
            return
        if row.kind == FOLD:
            kinds = self.drawing.kinds(row.hidden) if self.drawing else {}
            pane.update(Text(f"{len(row.hidden):,} entries of a linear run, folded: "
                             + ", ".join(f"{n:,} {safe(k)}" for k, n in kinds.items()) + "\n\nenter unfolds them."))
            return
        if row.kind == MORE:
            pane.update(Text(f"{len(row.hidden):,} older branches of this branch point, folded.\n\nenter shows them."))
            return
        if row.kind != ENTRY:
            pane.update(Text(row.note))
            return
        n = row.entry
        with self.reading():
            item = item_of(st.entry(n), st.labels.get(n))
            pane.update(item_text(item, facts=self._facts(n), query=self.query_text))
            self.query_one("#detail", VerticalScroll).scroll_home(animate=False)
            return
        pane.update(Text(f"{st.id(n)}: cannot be read: {self.changed}\n\nR reopens the file.", style="yellow"))

    def _facts(self, n: int) -> list[str]:
        st = self.st
        assert st is not None
        kids = len(st.children(n))
        parent = st.parent(n)
        facts = [f"parent {safe(st.id(parent)) if parent is not None else '(a root)'} · "
                 f"depth {len(st.path_to(n)) - 1:,} · {kids:,} child{'ren' if kids != 1 else ''}"]
        if kids >= 2:
            facts.append(f"branch point: {kids} branches")
        if n == st.session_leaf:
            facts.append("the session's current leaf")
        elif kids == 0:
            facts.append("tip of an abandoned branch (c: its context · f: fork it)")
        elif n not in st.on_path:
            facts.append("on an abandoned branch")
        return facts

    # ------------------------------------------------------------------ tree keys
    def _tree(self) -> TreeView:
        return self.query_one(TreeView)

    def _goto(self, n: int | None, why: str = "") -> None:
        if n is None or self.drawing is None:
            return
        self.drawing.reveal(n)
        self._tree().show(self.drawing, n)
        if why:
            self.say(why)

    def action_activate(self) -> None:
        row = self._tree().current_row()
        if row is None or self.drawing is None:
            return
        if row.kind in (FOLD, MORE):
            self.drawing.expand(row.key)
            self._tree().show(self.drawing, row.entry if row.kind == FOLD else None)
        elif row.kind == ENTRY and row.collapsed:
            self.drawing.collapsed.discard(row.entry)
            self._tree().show(self.drawing, row.entry)
        elif row.kind == ENTRY and row.head == row.entry:
            self.drawing.collapsed.add(row.entry)
            self._tree().show(self.drawing, row.entry)

    def action_unfold(self) -> None:
        row = self._tree().current_row()
        if row is not None and (row.kind in (FOLD, MORE) or row.collapsed):
            self.action_activate()

    def action_fold_or_parent(self) -> None:
        row = self._tree().current_row()
        if row is None or self.drawing is None:
            return
        if row.kind == ENTRY and row.head >= 0 and not row.collapsed:
            self.drawing.collapsed.add(row.head)
            self._tree().show(self.drawing, row.head)
        else:
            self.action_parent()

    def _selected(self) -> int | None:
        """The entry under the cursor (a fold: its first entry; a row of older branches:
        their branch point); ``None`` on a note row, said on the status line."""
        row = self._tree().current_row()
        if row is None or row.kind not in (ENTRY, FOLD, MORE):
            self.say("no entry on this row: move to one first")
            return None
        return row.entry

    def action_parent(self) -> None:
        n = self._selected()
        if n is not None and self.st is not None:
            p = self.st.parent(n)
            self._goto(p, "" if p is not None else "a root: no parent")

    def action_leaf(self) -> None:
        if self.st is not None:
            self._goto(self.st.session_leaf, "the current leaf")

    def action_jump(self, what: str, step: int) -> None:
        st, drawing, n = self.st, self.drawing, self._selected()
        if st is None or drawing is None or n is None:
            return
        order = drawing.order()
        pos = self._position(n)
        want = (lambda e: len(st.children(e)) >= 2) if what == "branch" else \
            (lambda e: st.is_tip(e) and e != st.session_leaf)
        i = pos + step
        while 0 <= i < len(order):
            if want(order[i]):
                e = order[i]
                count = sum(1 for x in order if want(x)) if len(order) <= 200_000 else 0
                self._goto(e, f"{'branch point' if what == 'branch' else 'tip'} "
                              f"{self._rank(order, i, want):,} of {count:,}")
                return
            i += step
        self.say(f"no {'branch point' if what == 'branch' else 'tip'} {'after' if step > 0 else 'before'} this one")

    def _position(self, n: int) -> int:
        drawing = self.drawing
        assert drawing is not None
        positions = getattr(drawing, "_positions", None)
        if positions is None:
            positions = {e: i for i, e in enumerate(drawing.order())}
            drawing._positions = positions  # type: ignore[attr-defined]
        return int(positions.get(n, 0))

    @staticmethod
    def _rank(order: list[int], i: int, want: Any) -> int:
        return sum(1 for x in order[: i + 1] if want(x))

    # ------------------------------------------------------------------ search
    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.add_class("open")
        box.value = self.query_text or ""
        # Focused now, not after the next refresh (``focus()``): keys that come in one
        # burst after `/` (a paste, a fast typist) went to the tree, where they are
        # commands: `/refactor⏎` reloaded, forked and confirmed the fork (trial 59).
        self.screen.set_focus(box)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        event.input.remove_class("open")
        self._tree().focus()
        text = event.value.strip()
        if not text:
            self.query_text = None
            self.say("search cleared")
            return
        self.query_text = text
        self._search(1)

    def on_key(self, event: Any) -> None:
        box = self.query_one("#search", Input)
        if event.key == "escape":
            if box.has_class("open"):
                box.remove_class("open")
                self._tree().focus()
                event.stop()
            elif self.searching:
                self.searching = False
                event.stop()

    def action_next_match(self, step: int) -> None:
        if self.query_text:
            self._search(step)
        else:
            self.say("/ to search first")

    @work(exclusive=True, group="search")
    async def _search(self, step: int) -> None:
        st, drawing, n = self.st, self.drawing, self._selected()
        needle = (self.query_text or "").casefold()
        if st is None or drawing is None or not needle:
            self.pending_search = bool(needle)  # submitted while the session opens: run once it is open
            return
        order = drawing.order()
        start = self._position(n) if n is not None else -1
        total = len(order)
        self.searching = True
        t0 = time.perf_counter()
        try:
            for k in range(1, total + 1):
                if not self.searching:
                    self.say("search stopped")
                    return
                e = order[(start + k * step) % total]
                try:
                    hay = _haystack(st, e)
                except (SessionError, OSError) as err:
                    self.file_changed(err)
                    return
                if needle in hay:
                    wrapped = not 0 <= start + k * step < total
                    self._goto(e, f"match for {safe(self.query_text or '')!r}"
                                  f"{' (wrapped around)' if wrapped else ''}; n / N: next / previous")
                    return
                if k % _SEARCH_CHUNK == 0:
                    self.say(f"searching {safe(self.query_text or '')!r}: {k:,} of {total:,} entries "
                             f"({human_seconds(time.perf_counter() - t0)}; escape stops)")
                    await asyncio.sleep(0)
            self.say(f"no entry contains {safe(self.query_text or '')!r}")
        finally:
            self.searching = False

    # ------------------------------------------------------------------ context, label, fork
    def action_context(self) -> None:
        n = self._selected()
        if n is not None and self.st is not None:
            self.push_screen(ContextScreen(self.sm, self.st.id(n), on_error=self.file_changed))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_label(self) -> None:
        st, n = self.st, self._selected()
        if st is None or n is None:
            return
        eid = st.id(n)
        current = st.labels.get(n) or ""

        def done(value: str | None) -> None:
            if value is None:
                return
            try:
                self.sm.append_label_change(eid, value.strip() or None)
            except Exception as e:  # locked, stale, read-only: say so, keep browsing
                self.say(f"label not written: {safe(str(e))}")
                return
            self._restructure(eid, f"label of {safe(eid)} {'set' if value.strip() else 'cleared'} "
                                   f"(a label entry appended at the leaf)")

        self.push_screen(AskScreen(f"Label of {safe(eid)} (empty clears it; written to the session as a label "
                                   "entry):", current, "label"), done)

    def _restructure(self, keep: str, message: str) -> None:
        """Read the shape again after a write, keeping the folding and the selection."""
        old = self.drawing
        try:
            st = structure_of(self.sm)
        except (SessionError, OSError) as e:
            self.file_changed(e)
            return
        drawing = Drawing(st)
        if old is not None:
            ids = old.st.shape.ids
            for kind, n in old.expanded:
                m = st.number(ids[n])
                if m is not None:
                    drawing.expanded.add((kind, m))
            for n in old.collapsed:
                m = st.number(ids[n])
                if m is not None:
                    drawing.collapsed.add(m)
        self.st, self.drawing = st, drawing
        keep_n = st.number(keep)
        if keep_n is not None:
            drawing.reveal(keep_n)
        self._tree().show(drawing, keep_n)
        self.facts = self._facts_line()  # the entry count (and a new name) changed
        self.say(message)

    def action_reload(self) -> None:
        """Index what another process (Pi, still running) appended since the file was read."""
        if self.sm is None:
            return
        row = self._tree().current_row()
        keep = self.st.id(row.entry) if row is not None and row.kind == ENTRY and self.st is not None else None
        try:
            added = self.sm.refresh()
        except (SessionError, OSError) as e:  # replaced or truncated under us
            self.file_changed(e)
            return
        if not added:
            self.say("no new entries")
            return
        self._restructure(keep or "", f"{added:,} new entr{'ies' if added != 1 else 'y'}")

    def action_fork(self) -> None:
        st, n = self.st, self._selected()
        if st is None or n is None:
            return
        eid = st.id(n)
        folder = os.path.dirname(os.path.abspath(self.path))
        count = len(st.path_to(n))

        def done(yes: bool | None) -> None:
            if not yes:
                self.say("fork cancelled")
                return
            from .. import SessionManager

            try:
                with SessionManager.open(self.path, backend=self.backend, session_dir=folder) as other:
                    new = other.create_branched_session(eid)
            except Exception as e:
                self.say(f"fork failed: {safe(str(e))}")
                return
            if not new or not os.path.exists(new):
                self.say(f"no file written: the path to {safe(eid)} has no assistant message (Pi's rule)")
                return
            self.forked = new
            self.say(f"forked: {safe(os.path.basename(new))}")  # the folder is this session's
            self.notify(f"new session: {safe(new)}", markup=False, timeout=15)

        self.push_screen(ConfirmScreen(
            f"Fork: write a new session file holding the path root → {safe(eid)} ({count:,} entries) "
            f"into {safe(folder)}? This session stays as it is."), done)


def _haystack(st: Structure, n: int) -> str:
    """The searchable text of entry ``n``: every text its item shows, case-folded."""
    item = item_of(st.entry(n), st.labels.get(n))
    pieces = [item.kind, item.id, *item.meta]
    if item.label:
        pieces.append(item.label)
    for part in item.parts:
        pieces.append(part.title)
        pieces.append(part.text)
    return "\n".join(pieces).casefold()
