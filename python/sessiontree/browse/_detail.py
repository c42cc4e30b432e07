"""The detail pane's text: one entry's ``_render.Item`` as Rich text lines.

Item strings are already clean (controls and bidi characters escaped), so they are
terminal-safe; Markdown is shown as written (no markup parsing, no hyperlinks). A huge
part is cut at :data:`MAX_PART_LINES` lines with a note saying how much is left out.
"""

from __future__ import annotations

import re

from rich.text import Text

from ..view import Item, KIND_STYLES

__all__ = ["item_text", "MAX_PART_LINES"]

MAX_PART_LINES = 400
_MAX_LINE = 2000  # characters of one line shown (a minified megabyte stays one screen line)


def _body(text: str, style: str = "", limit: int = MAX_PART_LINES) -> Text:
    lines = text.split("\n")
    shown = [line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + "…" for line in lines[:limit]]
    out = Text("\n".join(shown), style=style)
    if len(lines) > limit:
        out.append(f"\n⋯ {len(lines) - limit:,} more lines (export the path to read them all)", style="dim italic")
    return out


def item_text(item: Item, *, facts: list[str] | None = None, query: str | None = None) -> Text:
    """The pane's text for ``item``.

    Args:
        item: from ``view.item_of``.
        facts: extra lines under the heading (parent, children, branch and path facts).
        query: a search text to highlight (case-insensitive).
    """
    out = Text()
    out.append(item.kind, style=KIND_STYLES.get(item.kind, "bold"))
    if item.when:
        out.append(f"  {item.when}", style="dim")
    out.append(f"  {item.id}", style="bright_black")
    if item.label is not None:
        out.append(f"  [{item.label}]", style="bold yellow")
    for meta in item.meta:
        if meta:
            out.append(f"\n{meta}", style="cyan")
    for fact in facts or []:
        out.append(f"\n{fact}", style="dim")
    for part in item.parts:
        out.append("\n\n")
        kind = part.kind
        if kind in ("text", "summary"):
            out.append_text(_body(part.text))
        elif kind == "thinking":
            out.append("thinking\n", style="italic bright_blue")
            out.append_text(_body(part.text, "italic dim"))
        elif kind == "tool_call":
            out.append(f"→ {part.title}\n", style="bold")
            out.append_text(_body(part.text, "dim", 60))
        elif kind == "tool_result":
            out.append(f"← {item.meta[0] if item.meta else 'result'}\n", style="bold red" if part.error else "bold yellow")
            out.append_text(_body(part.text, "dim"))
        elif kind == "output":
            out.append_text(_body(part.text, "red" if part.error else "dim"))
        elif kind == "image":
            out.append(f"[{part.title}]", style="dim")
        elif kind == "json":
            out.append(f"{part.title}\n", style="bold")
            out.append_text(_body(part.text, "dim", 60))
        else:
            out.append(part.text, style="italic")
    if query:
        out.highlight_regex(re.compile(re.escape(query), re.IGNORECASE), style="black on yellow")
    return out
