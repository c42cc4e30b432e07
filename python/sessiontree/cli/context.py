"""``sessiontree context``: the messages the model would receive at a leaf."""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from typing import Any, Iterator

from rich.text import Text

from ._common import KIND_STYLES, CliError, Io, human_bytes, one_line, open_session, tool_call_preview


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register this subcommand.

    Args:
        sub: the ``sessiontree`` parser's subparsers.
    """
    p = sub.add_parser("context", help="the LLM context at the current leaf (or --leaf ID)")
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--leaf", metavar="ID", help="build the context at this entry instead of the current leaf")
    p.add_argument("--llm", action="store_true",
                   help="apply convert_to_llm: what is sent to the provider (summaries and bash runs become user turns)")
    p.add_argument("--json", action="store_true", help="print {leafId, thinkingLevel, model, messages} as JSON")
    p.add_argument("--full", action="store_true", help="do not fold long texts, tool calls and tool results")
    p.add_argument("--lines", type=int, default=12, metavar="N",
                   help="lines of user/assistant text shown per block before folding (default 12)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """Run the subcommand.

    Args:
        args: parsed arguments (``file``, ``backend``, the subcommand's flags).
        io: where to write.

    Returns:
        The exit status.
    """
    from .. import convert_to_llm

    sm, _ = open_session(io, args.file, args.backend)
    with sm:
        leaf = args.leaf if args.leaf is not None else sm.leaf_id
        if args.leaf is not None and args.leaf not in sm:
            raise CliError(f"{args.file}: entry {args.leaf} not found")
        t0 = time.perf_counter()
        ctx = sm.build_session_context(leaf_id=leaf)
        seconds = time.perf_counter() - t0
    messages = convert_to_llm(ctx.messages) if args.llm else ctx.messages
    if args.json:
        io.write_json({"leafId": leaf, "thinkingLevel": ctx.thinking_level, "model": ctx.model,
                       "llm": bool(args.llm), "messages": messages})
        return 0
    model = f"{ctx.model.get('provider')}/{ctx.model.get('modelId')}" if ctx.model else "none"
    head = (f"context at {leaf}: {len(messages)} messages{' (convert_to_llm)' if args.llm else ''}, "
            f"model {model}, thinking {ctx.thinking_level}, built in {seconds * 1e3:.1f} ms")
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


def _body(text: str, max_lines: int, full: bool, style: str = "") -> Iterator[tuple[str, str]]:
    rows = text.splitlines() or [""]
    if not full and len(rows) > max_lines:
        hidden = len(rows) - max_lines
        for r in rows[:max_lines]:
            yield "    " + r, style
        yield f"    ⋯ {hidden:,} more line{'' if hidden == 1 else 's'} ({human_bytes(len(text.encode('utf-8', 'surrogatepass')))} in all)", "dim italic"
    else:
        for r in rows:
            yield "    " + r, style


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
    role = str(msg.get("role", "?"))
    style = KIND_STYLES.get(role, "bold")
    when = _when(msg.get("timestamp"))
    out: list[tuple[str, str]] = []
    head = f"[{i}] {role}"
    if role == "assistant":
        usage = msg.get("usage") or {}
        head += f"  {msg.get('provider')}/{msg.get('model')}  {msg.get('stopReason')}"
        if isinstance(usage, dict) and usage:
            head += f"  in {usage.get('input', 0):,} out {usage.get('output', 0):,}"
        if msg.get("errorMessage"):
            head += f"  error: {one_line(str(msg['errorMessage']))[:80]}"
    elif role == "toolResult":
        head += f"  {msg.get('toolName')} {msg.get('toolCallId')}" + ("  ✗ error" if msg.get("isError") else "")
    elif role == "bashExecution":
        head += f"  $ {msg.get('command')}  exit {msg.get('exitCode')}"
        if msg.get("excludeFromContext"):
            head += "  (excluded from context)"
    elif role == "compactionSummary":
        head += f"  tokensBefore {msg.get('tokensBefore')}"
    elif role == "branchSummary":
        head += f"  from {msg.get('fromId')}"
    elif role in ("custom", "hookMessage"):
        head += f"  {msg.get('customType')}" + ("" if msg.get("display") else "  (hidden)")
    if when:
        head += f"  · {when}"
    out.append((head, style))

    tool_lines = 3 if not full else 10**9
    if role in ("compactionSummary", "branchSummary"):
        out.extend(_body(str(msg.get("summary", "")), max_lines, full))
        return out
    if role == "bashExecution":
        out.extend(_body(str(msg.get("output", "")), tool_lines, full, "dim"))
        return out
    for block in _blocks(msg.get("content")):
        kind = block.get("type")
        if kind == "text":
            limit = tool_lines if role == "toolResult" else max_lines
            out.extend(_body(str(block.get("text", "")), limit, full, "dim" if role == "toolResult" else ""))
        elif kind == "thinking":
            thought = str(block.get("thinking", ""))
            if full:
                out.extend(_body(thought, max_lines, True, "italic dim"))
            else:
                out.append((f"    (thinking) {one_line(thought)[:100]}" + ("…" if len(thought) > 100 else ""),
                            "italic dim"))
        elif kind == "toolCall":
            if full:
                args = json.dumps(block.get("arguments"), ensure_ascii=False, indent=2)
                out.append((f"    → {block.get('name')} {block.get('id')}", "bold"))
                out.extend(_body(args, 10**9, True, "dim"))
            else:
                out.append((f"    → {tool_call_preview(block, 100)}", "bold"))
        elif kind == "image":
            size = len(str(block.get("data", ""))) * 3 // 4
            out.append((f"    [image {block.get('mimeType')} {human_bytes(size)}]", "dim"))
        else:
            out.append((f"    [{kind}]", "dim"))
    return out
