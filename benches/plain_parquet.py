"""The peer of ``sessiontree export --format parquet``: what a user would write instead —
a plain-Python script that reads each session file with ``json.loads`` and writes the
same three tables (docs/TABLES.md's columns, one ``entries`` / ``tool_calls`` file per
session, zstd) with pyarrow. It uses nothing from sessiontree; it follows no loader rule
past skipping lines that do not parse (clean generated files need none).

    python benches/plain_parquet.py OUT FOLDER...     # prints {"seconds", "sessions", "entries", "calls"}
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import time
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def _ms(ts: Any) -> int | None:
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except (AttributeError, ValueError):
        return None


def _cut(s: str | None, n: int) -> str | None:
    return None if s is None else s.encode()[:n].decode("utf-8", "ignore")


def _content(c: Any) -> tuple[str | None, list[dict[str, Any]]]:
    if isinstance(c, str):
        return c, []
    texts, images = [], []
    for b in c if isinstance(c, list) else []:
        if b.get("type") == "text":
            texts.append(b.get("text", ""))
        elif b.get("type") == "image":
            raw = base64.b64decode(b.get("data", ""))
            images.append({"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw), "mime": b.get("mimeType"),
                           "problem": None})  # fmt: skip
    return ("\n".join(texts) if texts else None), images


def export(path: str, out: str) -> tuple[dict[str, Any], int, int]:
    with open(path, "rb") as f:
        lines = [json.loads(x) for x in f.read().split(b"\n") if x.strip()]
    header, entries = lines[0], lines[1:]
    by_id = {e["id"]: e for e in entries}
    on_path, x = set(), entries[-1]["id"] if entries else None
    while x is not None and x not in on_path:
        on_path.add(x)
        x = by_id.get(x, {}).get("parentId")
    rows, calls, results = [], [], {}
    depth: dict[str, int] = {}
    for n, e in enumerate(entries):
        m = e.get("message") or {}
        u = m.get("usage") or e.get("usage") or {}
        text, images = _content(m.get("content") if e["type"] == "message" else e.get("content"))
        if m.get("role") == "bashExecution":
            text = m.get("output")
        text = text if text is not None else e.get("summary")
        p = e.get("parentId")
        depth[e["id"]] = depth.get(p, -1) + 1 if p in by_id else 0
        rows.append({
            "session_id": header["id"], "entry_id": e["id"], "parent_id": p if p in by_id else None, "line": n + 2,
            "byte_offset": None, "byte_length": None, "type": e["type"], "timestamp": _ms(e.get("timestamp")),
            "depth": depth[e["id"]], "on_current_path": e["id"] in on_path, "role": m.get("role"),
            "provider": m.get("provider") or e.get("provider"), "model": m.get("model") or e.get("modelId"),
            "stop_reason": m.get("stopReason"), "text": _cut(text, 65536),
            "text_bytes": None if text is None else len(text.encode()), "images": images,
            "input_tokens": u.get("input"), "output_tokens": u.get("output"), "cache_read_tokens": u.get("cacheRead"),
            "cache_write_tokens": u.get("cacheWrite"), "total_tokens": u.get("totalTokens"),
            "cost": (u.get("cost") or {}).get("total"), "custom_type": e.get("customType"), "label": e.get("label"),
            "target_id": e.get("targetId"), "first_kept_entry_id": e.get("firstKeptEntryId"),
            "tokens_before": e.get("tokensBefore"), "is_error": m.get("isError"),
        })  # fmt: skip
        if m.get("role") == "assistant":
            for b in m.get("content") or []:
                if b.get("type") == "toolCall":
                    args = json.dumps(b.get("arguments"), ensure_ascii=False, separators=(",", ":"))
                    calls.append((b.get("id"), b.get("name"), args, e))
        elif m.get("role") == "toolResult":
            results.setdefault(m.get("toolCallId"), (e, text, images))
    call_rows = []
    for cid, name, args, e in calls:
        r, text, images = results.get(cid, (None, None, []))
        call_rows.append({
            "session_id": header["id"], "call_id": cid, "tool_name": name, "arguments": _cut(args, 16384),
            "arguments_bytes": len(args.encode()), "call_entry_id": e["id"], "call_timestamp": _ms(e.get("timestamp")),
            "on_current_path": e["id"] in on_path, "result_entry_id": r and r["id"],
            "is_error": r and r["message"].get("isError"), "result_text": _cut(text, 4096),
            "result_bytes": None if text is None else len(text.encode()), "result_images": images,
        })  # fmt: skip
    part = f"project={os.path.basename(os.path.dirname(path))}/date={header['timestamp'][:10]}"
    key = os.path.splitext(os.path.basename(path))[0]
    for table, data in (("entries", rows), ("tool_calls", call_rows)):
        if data:
            os.makedirs(f"{out}/{table}/{part}", exist_ok=True)
            pq.write_table(pa.Table.from_pylist(data), f"{out}/{table}/{part}/{key}.parquet", compression="zstd")
    session = {"session_id": header["id"], "path": path, "cwd": header.get("cwd"), "entry_count": len(entries),
               "bytes": os.path.getsize(path), "partition": part}  # fmt: skip
    return session, len(rows), len(call_rows)


def main(out: str, folders: list[str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    sessions, n_entries, n_calls = [], 0, 0
    for folder in folders:
        for name in sorted(os.listdir(folder)):
            if name.endswith(".jsonl"):
                s, e, c = export(os.path.join(folder, name), out)
                sessions.append(s)
                n_entries += e
                n_calls += c
    by_part: dict[str, list[dict[str, Any]]] = {}
    for s in sessions:
        by_part.setdefault(s.pop("partition"), []).append(s)
    for part, rows in by_part.items():
        os.makedirs(f"{out}/sessions/{part}", exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), f"{out}/sessions/{part}/sessions.parquet", compression="zstd")
    return {"seconds": time.perf_counter() - t0, "sessions": len(sessions), "entries": n_entries, "calls": n_calls}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2:])))
