"""``sessiontree export --format markdown``: one path of a session as readable Markdown.

For reading, sharing, or feeding a past session to a model. The path is root → leaf
(the current leaf, or ``--leaf ID``), one section per entry, in order. ``detail``:

* ``full``: every entry of the path: messages with thinking, tool calls (arguments as
  JSON) and tool results, command runs, compactions and branch summaries, model and
  thinking-level changes, labels, extension state, usage and context edits.
* ``no-tools``: the conversation: user, assistant, system and custom messages' text,
  compaction and branch summaries; no thinking, tool calls, tool results, command runs
  or bookkeeping entries (an assistant turn that only called tools is left out).
* ``user-only``: what the user wrote.

Text is written as it is (it is Markdown already), except that control and bidi
characters become visible escapes; verbatim parts (arguments, tool output) go in
fences longer than any backtick run inside them; ids, models and names in headings
have Markdown's punctuation escaped, so no value can become a link or a heading.
Images are named, not embedded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._structure import Structure
from ._render import Item, Part, item_of, one_line

__all__ = ["write_markdown", "DETAILS", "MarkdownStats"]

DETAILS = ("full", "no-tools", "user-only")

_CONVERSATION = frozenset({"user", "assistant", "system", "custom", "hookMessage", "custom_message",
                           "compaction", "branch_summary", "compactionSummary", "branchSummary"})
_PLAIN_PARTS = frozenset({"text", "summary", "image"})
_INLINE_RE = re.compile(r"([\\`*_\[\]<>#|~])")
_TICKS_RE = re.compile(r"`+")


@dataclass
class MarkdownStats:
    """What an export wrote: entries on the path, sections written."""

    path: int = 0
    sections: int = 0


def md_inline(text: str) -> str:
    """``text`` (already clean) as literal inline Markdown: punctuation escaped, one line."""
    return _INLINE_RE.sub(r"\\\1", " ".join(text.split()))


def fence(text: str, info: str = "") -> str:
    """``text`` in a code fence no backtick run inside it can close."""
    longest = max((len(m.group()) for m in _TICKS_RE.finditer(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}\n"


def write_markdown(st: Structure, write: Callable[[str], Any], *, leaf: int | None = None,
                   detail: str = "full", source: str = "") -> MarkdownStats:
    """Write the path root → ``leaf`` (default the current leaf) as Markdown.

    Args:
        st: the session's structure.
        write: called with text chunks.
        leaf: the last entry of the path.
        detail: one of :data:`DETAILS` (module docstring).
        source: the session file as the user named it (in the heading).

    Raises:
        ValueError: ``detail`` is not one of :data:`DETAILS`.
    """
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {DETAILS}, not {detail!r}")
    sm = st.sm
    leaf = st.leaf if leaf is None else leaf
    path = st.path_to(leaf) if leaf is not None else []
    stats = MarkdownStats(path=len(path))
    name = sm.get_session_name()
    title = md_inline(one_line(name, 200)) if name else f"Session {md_inline(one_line(sm.session_id, 80))}"
    write(f"# {title}\n\n")
    facts = []
    if source:
        facts.append(f"- file: {md_inline(one_line(source, 300))}")
    facts.append(f"- working directory: {md_inline(one_line(sm.cwd, 300))}")
    if leaf is not None:
        facts.append(f"- path: {len(path):,} entries, root → {md_inline(one_line(st.id(leaf), 80))}")
    facts.append(f"- detail: {detail}")
    write("\n".join(facts) + "\n")
    for n in path:
        item = item_of(st.entry(n), st.labels.get(n))
        section = _section(item, detail)
        if section:
            write("\n" + section)
            stats.sections += 1
    return stats


def _keep(item: Item, part: Part, detail: str) -> bool:
    if detail == "full":
        return True
    if detail == "user-only":
        return item.kind == "user" and part.kind in _PLAIN_PARTS
    return item.kind in _CONVERSATION and part.kind in _PLAIN_PARTS


def _section(item: Item, detail: str) -> str:
    if detail == "user-only" and item.kind != "user":
        return ""
    if detail == "no-tools" and item.kind not in _CONVERSATION:
        return ""
    parts = [p for p in item.parts if _keep(item, p, detail)]
    if not parts and detail != "full":
        return ""
    head = [md_inline(item.kind)]
    if item.when:
        head.append(md_inline(item.when))
    if detail == "full":
        head.extend(md_inline(m) for m in item.meta if m)
        head.append(md_inline(one_line(item.id, 80)))
    if item.label is not None:
        head.append(f"label: {md_inline(one_line(item.label, 200))}")
    out = [f"## {' · '.join(head)}\n"]
    for part in parts:
        out.append(_part(part, item))
    return "\n".join(out)


def _part(part: Part, item: Item) -> str:
    kind = part.kind
    if kind in ("text", "summary"):
        return part.text.rstrip("\n") + "\n"
    if kind == "thinking":
        lines = part.text.rstrip("\n").split("\n")
        return "> *thinking*\n>\n" + "\n".join(f"> {line}" if line else ">" for line in lines) + "\n"
    if kind == "tool_call":
        return f"**→ {md_inline(part.title)}**\n\n" + fence(part.text, "json")
    if kind == "tool_result":
        tool = item.meta[0] if item.meta else "result"
        return f"**← {md_inline(tool)}**\n\n" + fence(part.text)
    if kind == "output":
        return fence(part.text)
    if kind == "image":
        return f"*[{md_inline(part.title)}]*\n"
    if kind == "json":
        return f"*{md_inline(part.title)}*\n\n" + fence(part.text, "json")
    return f"*{md_inline(part.text)}*\n"
