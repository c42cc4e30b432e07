"""``sessiontree context``: the messages the model would receive at a leaf (the current
one, or ``--leaf ID``): the path from the root to it as Pi's ``buildSessionContext``
builds it, a compaction's summary standing for what it replaced, then each message
with its role, time (UTC) and, for an assistant's, its model, stop reason and tokens.
Long texts, tool calls and tool results are folded (``--full``: whole); ``--llm``
shows the messages in a provider's roles (``convert_to_llm``, which merges adjacent user turns); ``--json`` the messages
as built."""

from __future__ import annotations

import argparse
import time
from typing import Any


from ..view import ABSENT, AmbiguousIdError, hang_lines, model_text, render_message, show
from ._common import Io, at_least, open_session
from ._leaf import id_error, resolve_entry


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``context`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("context", help="the LLM context at the current leaf (or --leaf ID)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--leaf", metavar="ID", help="build the context at this entry (an id or a unique prefix) instead of the current leaf")
    p.add_argument("--llm", action="store_true",
                   help="apply convert_to_llm: the messages in a provider's roles (summaries and bash runs "
                        "become user turns; adjacent user turns are merged into one, which Pi does not do)")
    p.add_argument("--json", action="store_true", help="print {leafId, thinkingLevel, model, activeToolNames?, llm, messages} "
                        "as JSON (messages exactly as built; activeToolNames when an agent-core "
                        "active_tools_change is on the path; llm: whether --llm was given)")
    p.add_argument("--full", action="store_true", help="do not fold long texts, tool calls and tool results")
    p.add_argument("--lines", type=at_least(0), default=12, metavar="N",
                   help="lines of user/assistant text shown per block before folding (default 12)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree context``: the exit status (see the module docstring)."""
    from .. import convert_to_llm
    from ..v4 import is_v4

    if is_v4(args.file):
        leaf, ctx, seconds = _context_v4(args)
    else:
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
    model = model_text(ctx.model)
    head = (f"context at {show(leaf, 100, none='no entry')}: {len(messages)} message{'' if len(messages) == 1 else 's'}"
            f"{' (convert_to_llm)' if args.llm else ''}, model {model}, "
            f"thinking {show(ctx.thinking_level, 100, none=ABSENT)}"
            + (f", tools {show(', '.join(map(show, ctx.active_tool_names)), 200)}"
               if ctx.active_tool_names is not None else "")
            + f", built in {seconds * 1e3:.1f} ms")
    lines = [(head, "bold")]
    for i, msg in enumerate(messages, 1):
        lines.append(("", ""))
        lines.extend(render_message(i, msg, full=args.full, max_lines=args.lines))
    emit(io, lines)
    return 0


def _context_v4(args: argparse.Namespace) -> tuple[str | None, Any, float]:
    """A version 4 file's context (``sessiontree.v4``, CONTRACT §8): at the ``main``
    lane's leaf, or at ``--leaf`` (an entry id or a unique prefix); seconds to read and
    build it."""
    from ..v4 import read_v4

    t0 = time.perf_counter()
    s = read_v4(args.file)
    leaf = s.leaf_id()
    if args.leaf is not None:
        found = [e["id"] for e in s.entries if e["id"] == args.leaf] or [
            e["id"] for e in s.entries if isinstance(e["id"], str) and e["id"].startswith(args.leaf)]
        if len(found) != 1 or not args.leaf:
            many = len(found) > 1 and args.leaf  # an empty prefix names no entry, not every one
            why = AmbiguousIdError(args.leaf, found[:5], len(found)) if many else KeyError(args.leaf)
            raise id_error(args.file, "--leaf", args.leaf, why)
        leaf = found[0]
    ctx = s.context_at(leaf)
    return leaf, ctx, time.perf_counter() - t0


def emit(io: Io, lines: list[tuple[str, str]]) -> None:
    """Write ``(text, style)`` lines: styled on a terminal, plain otherwise. On a
    terminal a line wider than it continues under its text (a body line at its own
    indent, a message's header line under the role), never at column 0; piped, lines
    are written whole."""
    width = io.out_width()
    if width is not None:
        lines = list(hang_lines(lines, width))
    paint = io.styler()  # rich's styles without rich (`Io.styler`)
    for start in range(0, len(lines), 1000):
        io.write("".join(paint(t, s) + "\n" for t, s in lines[start:start + 1000]))

