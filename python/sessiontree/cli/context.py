"""``sessiontree context``: the messages the model would receive at a leaf."""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from typing import Any, Iterator

from rich.text import Text

from ._common import CliError, Io, open_session
from ..view import (
    KIND_STYLES,
    human_bytes,
    json_text,
    num,
    one_line,
    safe,
    safe_block,
    show,
    tool_call_preview,
    value_text,
)
from ._leaf import resolve_entry


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``context`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("context", help="the LLM context at the current leaf (or --leaf ID)")
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--leaf", metavar="ID", help="build the context at this entry (an id or a unique prefix) instead of the current leaf")
    p.add_argument("--llm", action="store_true",
                   help="apply convert_to_llm: what is sent to the provider (summaries and bash runs become user turns)")
    p.add_argument("--json", action="store_true", help="print {leafId, thinkingLevel, model, activeToolNames?, llm, messages} "
                        "as JSON (messages exactly as built; activeToolNames when an agent-core "
                        "active_tools_change is on the path; llm: whether --llm was given)")
    p.add_argument("--full", action="store_true", help="do not fold long texts, tool calls and tool results")
    p.add_argument("--lines", type=_count, default=12, metavar="N",
                   help="lines of user/assistant text shown per block before folding (default 12)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree context``: the exit status (see the module docstring)."""
    from .. import convert_to_llm

    sm, _ = open_session(io, args.file, args.backend)
    with sm:
        leaf = resolve_entry(io, sm, args.file, args.leaf)[0] if args.leaf is not None else sm.leaf_id
        t0 = time.perf_counter()
        ctx = sm.build_session_context(leaf_id=leaf)
        seconds = time.perf_counter() - t0
    messages = convert_to_llm(ctx.messages) if args.llm else ctx.messages
    if args.json:
        out = {"leafId": leaf, "thinkingLevel": ctx.thinking_level, "model": ctx.model,
               "llm": bool(args.llm), "messages": messages}
        if ctx.active_tool_names is not None:
            out["activeToolNames"] = ctx.active_tool_names
        io.write_json(out)
        return 0
    model = ctx.model
    if isinstance(model, dict) and model:
        model = f"{show(model.get('provider'), 100, none='None')}/{show(model.get('modelId'), 100, none='None')}"
    else:
        model = show(model, 100, none="none") or "none"
    head = (f"context at {show(leaf, 100, none='None')}: {len(messages)} messages"
            f"{' (convert_to_llm)' if args.llm else ''}, model {model}, "
            f"thinking {show(ctx.thinking_level, 100, none='None')}"
            + (f", tools {show(', '.join(map(show, ctx.active_tool_names)), 200)}"
               if ctx.active_tool_names is not None else "")
            + f", built in {seconds * 1e3:.1f} ms")
    lines = [(head, "bold")]
    for i, msg in enumerate(messages, 1):
        lines.append(("", ""))
        lines.extend(render_message(i, msg, full=args.full, max_lines=args.lines))
    emit(io, lines)
    return 0


def emit(io: Io, lines: list[tuple[str, str]]) -> None:
    """Write ``(text, style)`` lines: styled on a terminal, plain otherwise."""
    if io.color:
        for start in range(0, len(lines), 1000):
            chunk = lines[start:start + 1000]
            io.out.print(Text("\n").join(Text(t, style=s) for t, s in chunk))
    else:
        io.write("\n".join(t for t, _ in lines) + "\n")


def _when(ms: Any) -> str:
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        try:
            return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            return ""
    return ""


def _count(text: str) -> int:
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {n}")
    return n


def _body(value: Any, max_lines: int, full: bool, style: str = "") -> Iterator[tuple[str, str]]:
    # Any JSON value; lines are split where the text breaks lines (LF, CR, U+2028, ...)
    # and every other control is escaped (safe_block keeps only TAB).
    text = value_text(value, None)
    rows = text.splitlines() or [""]
    if not full and len(rows) > max_lines:
        hidden = len(rows) - max_lines
        for r in rows[:max_lines]:
            yield "    " + safe_block(r), style
        yield f"    ⋯ {hidden:,} more line{'' if hidden == 1 else 's'} ({human_bytes(len(text.encode('utf-8', 'surrogatepass')))} in all)", "dim italic"
    else:
        for r in rows:
            yield "    " + safe_block(r), style


def _short(value: Any) -> str:
    """Any JSON value as a short, terminal-safe word (``None`` for null/absent)."""
    return show(value, 120, none="None")


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
    when = _when(msg.get("timestamp"))
    out: list[tuple[str, str]] = []
    head = f"[{i}] {role}"
    if role == "assistant":
        usage = msg.get("usage")
        head += f"  {_short(msg.get('provider'))}/{_short(msg.get('model'))}  {_short(msg.get('stopReason'))}"
        if isinstance(usage, dict) and usage:
            # Usage numbers may be any JSON value: anything but a number shows as "-".
            head += f"  in {num(usage.get('input', 0))} out {num(usage.get('output', 0))}"
        if msg.get("errorMessage"):
            head += f"  error: {one_line(msg['errorMessage'], 200)[:80]}"
    elif role == "toolResult":
        head += f"  {_short(msg.get('toolName'))} {_short(msg.get('toolCallId'))}" + ("  ✗ error" if msg.get("isError") else "")
    elif role == "bashExecution":
        head += f"  $ {one_line(msg.get('command'), 200)}  exit {_short(msg.get('exitCode'))}"
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
            size = len(data) * 3 // 4 if isinstance(data, str) else 0
            out.append((f"    [image {_short(block.get('mimeType'))} {human_bytes(size)}]", "dim"))
        else:
            out.append((f"    [{_short(kind)}]", "dim"))
    return out
