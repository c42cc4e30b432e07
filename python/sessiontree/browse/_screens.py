"""The browser's other screens: the context at an entry, a one-line question, a yes/no
question, and the key help."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, RichLog, Static

from ..view import ABSENT, hang_lines, model_text, plain_doc, render_message, show
from ._keys import HELP
from ..errors import SessionError

__all__ = ["ContextScreen", "AskScreen", "ConfirmScreen", "HelpScreen"]


class ContextScreen(Screen[None]):
    """The messages the model receives at an entry (``build_session_context``, Pi's rules),
    as ``sessiontree context`` prints them; ``l`` applies ``convert_to_llm``."""

    BINDINGS = [
        Binding("escape,q,c", "close", "back"),
        Binding("l", "toggle_llm", "convert_to_llm"),
        Binding("f", "toggle_full", "unfold texts"),
        Binding("home", "top", "top", show=False),
        Binding("end", "bottom", "bottom", show=False),
    ]
    DEFAULT_CSS = """
    ContextScreen #ctx-head { height: auto; padding: 0 1; background: $boost; }
    ContextScreen RichLog { height: 1fr; }
    """

    def __init__(self, sm: Any, entry_id: str, on_error: Any = None) -> None:
        super().__init__()
        self.sm = sm
        self.entry_id = entry_id
        self.on_error = on_error  # called with a read's error (the file changed): the screen closes
        self.llm = False
        self.full = False

    def compose(self) -> ComposeResult:
        yield Static(id="ctx-head")
        yield RichLog(wrap=True, markup=False, highlight=False, auto_scroll=False, id="ctx-log")
        yield Footer()

    def on_mount(self) -> None:
        # After the first layout, so that the log wraps at its real width.
        self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        from .. import convert_to_llm

        t0 = time.perf_counter()
        try:
            ctx = self.sm.build_session_context(leaf_id=self.entry_id)
        except (SessionError, OSError) as e:
            self.dismiss()
            if self.on_error is not None:
                self.on_error(e)
            return
        seconds = time.perf_counter() - t0
        messages = convert_to_llm(ctx.messages) if self.llm else ctx.messages
        model = model_text(ctx.model)
        head = (f"The context the model gets at {show(self.entry_id, 100)} (Pi's rules): {len(messages):,} messages"
                f"{' after convert_to_llm' if self.llm else ''}, model {model}, "
                f"thinking {show(ctx.thinking_level, 100, none=ABSENT)}; built in {seconds * 1e3:.1f} ms")
        self.query_one("#ctx-head", Static).update(Text(head, style="bold"))
        log = self.query_one("#ctx-log", RichLog)
        log.clear()
        width = max(20, log.scrollable_content_region.width)
        if not messages:
            log.write(Text("(no messages: nothing is sent at this entry)", style="dim italic"), width=width)
        for i, msg in enumerate(messages, 1):
            # Wrapped here, under its text: the log wrapped a long line to column 0.
            lines = list(hang_lines(render_message(i, msg, full=self.full, max_lines=12), width))
            text = Text()
            for n, (line, style) in enumerate(lines):
                if n:
                    text.append("\n")
                text.append(line, style=style or None)
            log.write(text, width=width)
            log.write(Text(""), width=width)
        log.scroll_home(animate=False)

    def action_close(self) -> None:
        self.dismiss()

    def action_toggle_llm(self) -> None:
        self.llm = not self.llm
        self._draw()

    def action_toggle_full(self) -> None:
        self.full = not self.full
        self._draw()

    def action_top(self) -> None:
        self.query_one(RichLog).scroll_home(animate=False)

    def action_bottom(self) -> None:
        self.query_one(RichLog).scroll_end(animate=False)


class AskScreen(ModalScreen[str | None]):
    """One line of input; dismissed with the text (enter) or ``None`` (escape)."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    AskScreen > Vertical { width: 80%; max-width: 100; height: auto; border: thick $primary; padding: 1 2;
                           background: $surface; }
    AskScreen Label { width: 100%; }
    """

    def __init__(self, question: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.question))
            yield Input(value=self.value, placeholder=self.placeholder, id="ask")
            yield Label(Text("enter: OK · escape: cancel", style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question: ``y`` / enter yes, ``n`` / escape no."""

    BINDINGS = [Binding("y,enter", "answer(True)", "yes"), Binding("n,escape", "answer(False)", "no")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 80%; max-width: 110; height: auto; border: thick $warning; padding: 1 2;
                               background: $surface; }
    ConfirmScreen Label { width: 100%; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.question))
            yield Label(Text("y: yes · n: no", style="bold"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class HelpScreen(ModalScreen[None]):
    """The keys, as ``sessiontree browse --help`` lists them."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "back")]
    # HELP's lines fit 74 cells: at 80 columns the box takes the whole width (less its
    # border, padding and scroll bar) and no line wraps; on a short terminal it scrolls.
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100%; max-width: 84; height: auto; max-height: 100%;
                                  border: thick $primary; padding: 0 1; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(plain_doc(HELP), no_wrap=True))  # as `browse --help` shows it

    def action_close(self) -> None:
        self.dismiss()
