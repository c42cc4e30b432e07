"""The context as a person reads it: each message the model gets as terminal lines
(``sessiontree context`` and the browser's context screen).

A message is a header line (its position, role, model, usage, tool, time) and indented
body lines; long texts, tool calls and tool results are folded unless ``full``. Every
line is terminal-safe (``_escape``).
"""

from __future__ import annotations

from typing import Any, Iterator

from ._cells import fit, hang
from ._escape import safe_block
from ._entries import KIND_STYLES
from ._preview import tool_call_preview
from ._text import ABSENT, UNKNOWN, human_bytes, json_text, model_label, ms_time, num, one_line, show, value_text
from ..schema import blob_sha256

__all__ = ["render_message", "model_text", "hang_lines"]


def model_text(model: Any) -> str:
    """A context's ``model`` (``{"provider", "modelId"}``, or any value) in one word:
    :func:`model_label`, :data:`UNKNOWN` for a context with no model information (Pi's
    ``{}``), not its JSON."""
    if isinstance(model, dict):
        return show(model_label(model.get("provider"), model.get("modelId")), 200)
    if model is None or model == [] or model == "":
        return UNKNOWN
    return show(model, 100)


def _body(value: Any, max_lines: int, full: bool, style: str = "") -> Iterator[tuple[str, str]]:
    # Any JSON value; lines are split where the one escaping rule breaks lines (LF, CR,
    # CRLF, U+2028, U+2029: safe_block) and nowhere else: str.splitlines also split at
    # VT, FF, FS..US and NEL, which the rule shows escaped (the header shows them so).
    text = value_text(value, None)
    rows = safe_block(text).split("\n")
    if len(rows) > 1 and not rows[-1]:
        rows.pop()  # a text's last line break ends its last line: no empty line after it
    if not full and len(rows) > max_lines:
        hidden = len(rows) - max_lines
        for r in rows[:max_lines]:
            yield "    " + r, style
        yield f"    ⋯ {hidden:,} more line{'' if hidden == 1 else 's'} ({human_bytes(len(text.encode('utf-8', 'surrogatepass')))} in all)", "dim italic"
    else:
        for r in rows:
            yield "    " + r, style


def _short(value: Any) -> str:
    """Any JSON value as a short, terminal-safe word (:data:`ABSENT` for null/absent)."""
    return show(value, 120, none=ABSENT)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def render_message(i: int, msg: Any, *, full: bool, max_lines: int) -> list[tuple[str, str]]:
    """Readable lines for one message (header line, then indented body).

    Args:
        i: its 1-based position in the context.
        msg: an agent message (or an LLM message after ``convert_to_llm``).
        full: show long texts, tool calls and tool results whole.
        max_lines: lines of user/assistant text before folding.

    Returns:
        ``(text, style)`` pairs, one per output line.
    """
    if not isinstance(msg, dict):
        return [(f"[{i}] ?", "red")]
    role = one_line(msg.get("role", "?"), 100)
    style = KIND_STYLES.get(role, "bold")
    when = ms_time(msg.get("timestamp"))
    out: list[tuple[str, str]] = []
    head = f"[{i}] {role}"
    if role == "assistant":
        usage = msg.get("usage")
        model = model_label(msg.get("provider"), msg.get("model"), unknown="")
        if model:
            head += f"  {show(model, 200)}"
        if msg.get("stopReason") is not None:  # a message cut off before it ended has none
            head += f"  {_short(msg.get('stopReason'))}"
        if isinstance(usage, dict) and usage:
            # Usage numbers may be any JSON value: anything but a number shows as "-".
            head += f"  in {num(usage.get('input', 0))} out {num(usage.get('output', 0))}"
        if msg.get("errorMessage"):
            head += f"  error: {fit(one_line(msg['errorMessage'], 200), 80)}"
    elif role == "toolResult":
        head += f"  {_short(msg.get('toolName'))} {_short(msg.get('toolCallId'))}" + ("  ✗ error" if msg.get("isError") else "")
    elif role == "bashExecution":
        code = msg.get("exitCode")  # worded as the exports word it (_render.bash_execution)
        head += f"  $ {one_line(msg.get('command'), 200)}  " + ("no exit code" if code is None else f"exit {_short(code)}")
        if msg.get("excludeFromContext"):
            head += "  (excluded from context)"
    elif role == "compactionSummary":
        head += f"  tokensBefore {_short(msg.get('tokensBefore'))}"
    elif role == "branchSummary":
        head += f"  from {_short(msg.get('fromId'))}"
    elif role in ("custom", "hookMessage"):
        head += f"  {_short(msg.get('customType'))}" + ("" if msg.get("display") else "  (hidden)")
    if when:
        head += f"  · {when}"
    out.append((head, style))

    tool_lines = 3 if not full else 10**9
    if role in ("compactionSummary", "branchSummary"):
        out.extend(_body(msg.get("summary"), max_lines, full))
        return out
    if role == "bashExecution":
        out.extend(_body(msg.get("output"), tool_lines, full, "dim"))
        return out
    for block in _blocks(msg.get("content")):
        kind = block.get("type")
        if kind == "text":
            limit = tool_lines if role == "toolResult" else max_lines
            out.extend(_body(block.get("text"), limit, full, "dim" if role == "toolResult" else ""))
        elif kind == "thinking":
            thought = value_text(block.get("thinking"), None)
            if full:
                out.extend(_body(thought, max_lines, True, "italic dim"))
            else:
                out.append((f"    (thinking) {one_line(thought, 200)[:100]}" + ("…" if len(thought) > 100 else ""),
                            "italic dim"))
        elif kind == "toolCall":
            if full:
                args = json_text(block.get("arguments"), indent=True)
                out.append((f"    → {_short(block.get('name'))} {_short(block.get('id'))}", "bold"))
                out.extend(_body(args, 10**9, True, "dim"))
            else:
                out.append((f"    → {tool_call_preview(block, 100)}", "bold"))
        elif kind == "image":
            data = block.get("data")
            blob = blob_sha256(data)
            if blob is not None:  # oh-my-pi kept the bytes in its blob store: the text is a name
                out.append((f"    [image {_short(block.get('mimeType'))} kept outside the session file: "
                            f"blob sha256:{blob}]", "dim"))
                continue
            size = len(data) * 3 // 4 if isinstance(data, str) else 0
            out.append((f"    [image {_short(block.get('mimeType'))} {human_bytes(size)}]", "dim"))
        else:
            out.append((f"    [{_short(kind)}]", "dim"))
    return out


_HANG = 4  # a message's body column: a line continues there


def hang_lines(lines: list[tuple[str, str]], width: int) -> Iterator[tuple[str, str]]:
    """:func:`render_message`'s ``(text, style)`` lines within ``width`` cells: a line
    wider continues under its text (a body line at its own indent, a header line under
    the role, 4 cells in), broken at spaces (``_cells.hang``), never at column 0."""
    for text, style in lines:
        if "\t" not in text and (len(text) <= width // 2 or (text.isascii() and len(text) <= width)):
            yield text, style  # fits: most lines (a tab is as wide as where it stands: `hang` expands it)
            continue
        lead = len(text) - len(text.lstrip(" "))
        first, *more = hang(text[lead:], max(lead, _HANG), width, lead=lead)
        yield text[:lead] + first, style
        for line in more:
            yield line, style
