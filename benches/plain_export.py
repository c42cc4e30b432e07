"""The peer of ``sessiontree export --format markdown|html``: what a user would write
instead — a plain-Python script that reads the session file with ``json.loads``, follows
``parentId`` from the leaf (the last entry, as Pi does, or ``--leaf ID``) to the root and
writes that path as Markdown or as an HTML page, one section per entry.

It writes the same sections in the same order as the export (the same headings, the
same parts: text, thinking, tool calls as JSON, tool results and command output in
fences or ``<pre>``, summaries, notes) and renders Markdown text to HTML with the library
a Python user would pick (markdown-it-py, CommonMark, raw HTML off; the export renders it
with pulldown-cmark in its extension, by the same rules, and falls back to markdown-it-py
without it: ``tests/test_export_markdown_html.py``). It does less than the export: no
escaping of control or bidi characters, no containment of a message's headings, fences
and raw HTML in the Markdown, no tree sidebar or script in the page, and it holds every
entry in memory (what a script would do). It uses nothing from sessiontree.

    python benches/plain_export.py FILE OUT {markdown,html} [--leaf ID]
    # prints {"seconds", "entries", "path", "bytes", "peak_rss_kb"}
"""

from __future__ import annotations

import argparse
import html
import json
import re
import resource
import sys
import time
from typing import Any, Callable

from markdown_it import MarkdownIt


def load(path: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]], str | None]:
    """Header, entries by id, and the last entry's id (lines that do not parse are skipped)."""
    by_id: dict[str, dict[str, Any]] = {}
    last = None
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and isinstance(e.get("id"), str):
                by_id[e["id"]] = e
                last = e["id"]
    return header, by_id, last


def path_to(by_id: dict[str, dict[str, Any]], leaf: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    while leaf is not None and leaf in by_id and leaf not in seen:
        seen.add(leaf)
        out.append(by_id[leaf])
        leaf = by_id[leaf].get("parentId")
    out.reverse()
    return out


def _when(e: dict[str, Any]) -> str:
    ts = e.get("timestamp")
    return ts.replace("T", " ")[:19] if isinstance(ts, str) else ""


def _usage(u: Any) -> list[str]:
    if not isinstance(u, dict):
        return []
    out = [f"{u.get('input', 0):,} in / {u.get('output', 0):,} out"]
    cost = u.get("cost")
    if isinstance(cost, dict) and cost.get("total"):
        out.append(f"${cost['total']:.4f}")
    return out


def parts_of(e: dict[str, Any]) -> tuple[str, list[str], list[tuple[str, str, str]]]:
    """``(kind, meta, parts)``: each part ``(kind, title, text)``."""
    etype = e.get("type")
    meta: list[str] = []
    parts: list[tuple[str, str, str]] = []

    def content(c: Any, kind: str = "text") -> None:
        if isinstance(c, str):
            parts.append((kind, "", c))
            return
        for b in c if isinstance(c, list) else []:
            t = b.get("type")
            if t == "text":
                parts.append((kind, "", b.get("text", "")))
            elif t == "thinking":
                parts.append(("thinking", "", b.get("thinking", "")))
            elif t == "toolCall":
                parts.append(("tool_call", str(b.get("name")), json.dumps(b.get("arguments"), indent=2, ensure_ascii=False)))
            elif t == "image":
                parts.append(("image", f"image {b.get('mimeType')}", b.get("data", "")))

    if etype == "message":
        m = e.get("message", {})
        role = m.get("role", "message")
        if role == "assistant":
            meta.append(f"{m.get('provider')}/{m.get('model')}")
            meta.extend(_usage(m.get("usage")))
            content(m.get("content"))
        elif role == "toolResult":
            meta.append(str(m.get("toolName")) + (" ✗ error" if m.get("isError") else ""))
            content(m.get("content"), "tool_result")
        elif role == "bashExecution":
            meta.append(f"exit {m.get('exitCode')}")
            parts.append(("note", "", f"$ {m.get('command')}"))
            parts.append(("output", "", m.get("output", "")))
        else:
            content(m.get("content"))
        return role, meta, parts
    if etype in ("compaction", "branch_summary"):
        meta.append(f"{e.get('tokensBefore')} tokens before" if etype == "compaction" else f"from {e.get('fromId')}")
        parts.append(("summary", "", e.get("summary", "")))
    elif etype == "custom_message":
        meta.append(str(e.get("customType")))
        content(e.get("content"))
    elif etype == "custom":
        meta.append(str(e.get("customType")))
        parts.append(("json", "extension state", json.dumps(e.get("data"), indent=2, ensure_ascii=False)))
    elif etype == "model_change":
        parts.append(("note", "", f"model → {e.get('provider')}/{e.get('modelId')}"))
    elif etype == "thinking_level_change":
        parts.append(("note", "", f"thinking level → {e.get('thinkingLevel')}"))
    elif etype == "label":
        parts.append(("note", "", f"label {e.get('label')!r} on {e.get('targetId')}"))
    elif etype == "session_info":
        parts.append(("note", "", f"session name: {e.get('name')}"))
    else:
        parts.append(("json", "entry", json.dumps(e, indent=2, ensure_ascii=False)))
    return str(etype), meta, parts


def fence(text: str, info: str = "") -> str:
    longest = max(map(len, re.findall("`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}\n"


def markdown(header: dict[str, Any], path: list[dict[str, Any]], write: Callable[[str], Any]) -> None:
    write(f"# Session {header.get('id')}\n\n- working directory: {header.get('cwd')}\n"
          f"- path: {len(path):,} entries\n")
    for e in path:
        kind, meta, parts = parts_of(e)
        head = " · ".join([kind, _when(e), *meta, str(e.get("id"))])
        out = [f"## {head}\n"]
        for pk, title, text in parts:
            if pk in ("text", "summary"):
                out.append(text.rstrip("\n") + "\n")
            elif pk == "thinking":
                out.append("> *thinking*\n>\n" + "\n".join("> " + x if x else ">" for x in text.split("\n")) + "\n")
            elif pk == "tool_call":
                out.append(f"**→ {title}**\n\n" + fence(text, "json"))
            elif pk == "tool_result":
                out.append(f"**← {meta[0] if meta else 'result'}**\n\n" + fence(text))
            elif pk == "output":
                out.append(fence(text))
            elif pk == "json":
                out.append(f"*{title}*\n\n" + fence(text, "json"))
            elif pk == "image":
                out.append(f"*[{title}]*\n")
            else:
                out.append(f"*{text}*\n")
        write("\n" + "\n".join(out))


def page(header: dict[str, Any], path: list[dict[str, Any]], write: Callable[[str], Any]) -> None:
    md = MarkdownIt("commonmark", {"html": False})
    md.enable(["table", "strikethrough"])
    h = html.escape
    write(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Session {h(str(header.get('id')))}</title>"
          f"</head><body>\n<main>\n")
    for n, e in enumerate(path):
        kind, meta, parts = parts_of(e)
        out = [f'<article id="a{n}"><header><span>{h(kind)}</span><span>{h(_when(e))}</span>'
               f"<span>{h(' · '.join(meta))}</span><a href=\"#a{n}\">{h(str(e.get('id')))}</a></header>"]
        for pk, title, text in parts:
            if pk in ("text", "summary"):
                out.append(f'<div class="md">{md.render(text)}</div>')
            elif pk == "thinking":
                out.append(f'<details><summary>thinking</summary><div class="md">{md.render(text)}</div></details>')
            elif pk == "tool_call":
                out.append(f"<details><summary>→ {h(title)}</summary><pre><code>{h(text)}</code></pre></details>")
            elif pk in ("tool_result", "output"):
                out.append(f"<details><summary>{h(title or pk)}</summary><pre>{h(text)}</pre></details>")
            elif pk == "image":
                out.append(f'<img alt="{h(title)}" src="data:image/png;base64,{text}">')
            elif pk == "json":
                out.append(f"<details><summary>{h(title)}</summary><pre>{h(text)}</pre></details>")
            else:
                out.append(f'<p class="note">{h(text)}</p>')
        out.append("</article>\n")
        write("".join(out))
    write("</main>\n</body></html>\n")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("out")
    p.add_argument("format", choices=("markdown", "html"))
    p.add_argument("--leaf")
    a = p.parse_args()
    t0 = time.perf_counter()
    header, by_id, last = load(a.file)
    path = path_to(by_id, a.leaf or last)
    with open(a.out, "w", encoding="utf-8", errors="backslashreplace") as f:
        (markdown if a.format == "markdown" else page)(header, path, f.write)
        size = f.tell()
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": round(seconds, 3), "entries": len(by_id), "path": len(path), "bytes": size,
                      "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


if __name__ == "__main__":
    sys.exit(main())
