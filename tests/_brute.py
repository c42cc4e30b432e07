"""Brute force: what a plain Python loop over the files with ``json.loads`` says a
listing, a search and a usage report should be (no catalog, no sessiontree reader).

Written from the documented rules, not from the code under test, for clean version 3
files (every line valid JSON), which is what the generator writes. Times are UTC.
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
JS_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def iso_ms(s: Any) -> int | None:
    if not isinstance(s, str):
        return None
    try:
        dt = datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return int((dt - EPOCH) / timedelta(milliseconds=1))


_PARSED: dict[tuple[str, int, int], tuple[dict[str, Any], list[dict[str, Any]]]] = {}


def entries(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the entries (first definition of each id) of a clean v3 file."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _PARSED:
        _PARSED[key] = _entries(path)
    return _PARSED[key]


def _loads(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:  # a torn last line: skipped until it is complete
        return None


def _entries(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [v for v in (_loads(x) for x in path.read_bytes().split(b"\n") if x.strip()) if v is not None]
    header, seen, out = lines[0], set(), []
    for e in lines[1:]:
        if e.get("type") == "session" or e["id"] in seen:
            continue
        seen.add(e["id"])
        out.append(e)
    return header, out


def text_of(m: dict[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, str):
        return c
    return " ".join(b.get("text") or "" for b in c if b.get("type") == "text") if isinstance(c, list) else ""


def entry_time(e: dict[str, Any]) -> float | None:
    m = e.get("message")
    if isinstance(m, dict) and isinstance(m.get("timestamp"), (int, float)):
        return float(m["timestamp"])
    ms = iso_ms(e.get("timestamp"))
    return None if ms is None else float(ms)


def current_path(es: list[dict[str, Any]]) -> set[str]:
    by_id = {e["id"]: e for e in es}
    out: set[str] = set()
    # The leaf: the last entry, or where agent-core's last `leaf` entry moved it.
    x = es[-1] if es else None
    if x is not None and x.get("type") == "leaf":
        x = by_id.get(x["targetId"]) if x["targetId"] is not None else None
    while x is not None and x["id"] not in out:
        out.add(x["id"])
        x = by_id.get(x.get("parentId"))
    return out


# ----------------------------------------------------------------------- listing
def listing(folders: list[str]) -> list[dict[str, Any]]:
    rows = []
    for folder in folders:
        for name in sorted(n for n in os.listdir(folder) if n.endswith(".jsonl")):
            p = Path(folder) / name
            h, es = entries(p)
            texts, first, name_, last = [], None, None, None
            count = 0
            for e in es:
                if e["type"] == "session_info":
                    n = e.get("name")
                    name_ = n.strip() or None if isinstance(n, str) else None
                if e["type"] != "message":
                    continue
                count += 1
                m = e["message"]
                if m["role"] not in ("user", "assistant") or "content" not in m:
                    continue
                t = entry_time(e)
                if t is not None:
                    last = max(last or 0, t)
                text = text_of(m)
                if text:
                    texts.append(text)
                    if first is None and m["role"] == "user":
                        first = text
            created = EPOCH + timedelta(milliseconds=iso_ms(h["timestamp"]) or 0)
            rows.append({
                "path": str(p), "id": h["id"], "cwd": h["cwd"], "name": name_,
                "parent_session_path": h.get("parentSession"), "created": created,
                "modified": EPOCH + timedelta(milliseconds=last) if last else created,
                "message_count": count, "first_message": first or "(no messages)",
                "all_messages_text": " ".join(texts),
            })
    rows.sort(key=lambda r: r["modified"], reverse=True)
    return rows


# ----------------------------------------------------------------------- search
def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [s for x in v.values() for s in _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    return []


def docs(es: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str]]:
    out = []
    for e in es:
        if e["type"] == "session_info" and isinstance(e.get("name"), str) and e["name"]:
            out.append((e, "name", e["name"]))
        if e["type"] != "message":
            continue
        m = e["message"]
        if m["role"] not in ("user", "assistant") or "content" not in m:
            continue
        parts = [text_of(m)]
        if m["role"] == "assistant":
            for b in m["content"]:
                if b.get("type") == "toolCall":
                    parts += [b["name"], *_strings(b["arguments"])]
        text = "\n".join(p for p in parts if p)
        if text:
            out.append((e, m["role"], text))
    return out


def matches(query: list[tuple[str, str]] | re.Pattern[str], text: str) -> bool:
    """``[("word"|"phrase", text)]`` all match, or the regex matches."""
    if isinstance(query, re.Pattern):
        return query.search(text) is not None
    for _kind, t in query:
        # A word, or a phrase's words with any white space between: not after a letter
        # or digit.
        words = [w for w in re.split(f"[{re.escape(JS_SPACE)}]+", t) if w]
        pat = r"(?<![^\W_])" + f"[{re.escape(JS_SPACE)}]+".join(re.escape(w) for w in words)
        if not re.search(pat, text, re.IGNORECASE):
            return False
    return True


def search(folders: list[str], query: Any) -> set[tuple[str, str, str, bool]]:
    """``(path, entry id, role, on current path)`` of every hit."""
    hits = set()
    for folder in folders:
        for name in sorted(n for n in os.listdir(folder) if n.endswith(".jsonl")):
            p = Path(folder) / name
            _, es = entries(p)
            on = current_path(es)
            for e, role, text in docs(es):
                text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
                if matches(query, text):
                    hits.add((str(p), e["id"], role, e["id"] in on))
    assert not any(unicodedata.category(c) == "Co" for h in hits for c in h[1])
    return hits


# ----------------------------------------------------------------------- usage
def usage(folders: list[str], active: bool = False) -> dict[str, tuple[int, float, float, float]]:
    """Per UTC day: (records, input tokens, output tokens, cost), each (id, timestamp)
    counted once, charged to the session with the oldest header."""
    seen: dict[tuple[str, str], tuple[Any, ...]] = {}
    for folder in folders:
        for name in sorted(n for n in os.listdir(folder) if n.endswith(".jsonl")):
            p = Path(folder) / name
            h, es = entries(p)
            on = current_path(es)
            for e in es:
                u = None
                if e["type"] == "message" and e["message"]["role"] == "assistant":
                    u = e["message"].get("usage")
                elif e["type"] in ("usage", "compaction", "branch_summary"):
                    u = e.get("usage")
                if not isinstance(u, dict):
                    continue
                key = (e["id"], e["timestamp"])
                rec = (h["timestamp"], str(p), entry_time(e), u, e["id"] in on)
                old = seen.get(key)
                if old is None:
                    seen[key] = rec
                else:
                    first = min(old, rec, key=lambda r: (r[0], r[1]))
                    seen[key] = (*first[:4], old[4] or rec[4])
    days: dict[str, list[Any]] = defaultdict(list)
    for _h, _p, t, u, on in seen.values():
        if active and not on:
            continue
        day = (EPOCH + timedelta(milliseconds=t)).strftime("%Y-%m-%d") if t is not None else "(no time)"
        days[day].append(u)
    return {d: (len(us), math.fsum(float(u.get("input", 0)) for u in us), math.fsum(float(u.get("output", 0)) for u in us),
                math.fsum(float(u.get("cost", {}).get("total", 0)) for u in us)) for d, us in days.items()}
