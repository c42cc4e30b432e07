"""``sessiontree info``: what a session file holds, in one screen."""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from typing import Any

from rich.text import Text

from ._common import (
    Io,
    file_version,
    human_bytes,
    human_seconds,
    load_report,
    num,
    number,
    open_session,
    safe,
    show,
    value_text,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``info`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("info", help="summary of a session file: counts, tree shape, tokens, cost")
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def collect(sm: Any, path: str, open_seconds: float) -> dict[str, Any]:
    """Everything ``info`` shows, as a JSON-ready dict (one pass over the entries).

    Args:
        sm: an open ``SessionManager``.
        path: the file it was opened from.
        open_seconds: how long opening took.

    Returns:
        The summary (keys as printed by ``info --json``).
    """
    t0 = time.perf_counter()
    by_type: Counter[str] = Counter()
    by_role: Counter[str] = Counter()
    child_count: Counter[str] = Counter()
    ids: list[str] = []
    label_targets: dict[str, None] = {}  # in file order
    tokens = Counter({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0})
    cost = 0.0
    models: Counter[str] = Counter()
    first_ts = last_ts = None
    # Every value read from an entry may be any JSON type: text fields go through
    # value_text (never str(), which recurses on deep lists), sums take numbers only.
    for entry in sm:
        etype = value_text(entry.get("type"), 100, none="None")
        by_type[etype] += 1
        eid = entry.get("id")
        ids.append(eid)
        parent = entry.get("parentId")
        if isinstance(parent, str) and parent != eid:
            child_count[parent] += 1
        ts = entry.get("timestamp")
        if isinstance(ts, str):
            first_ts = first_ts or ts
            last_ts = ts
        if etype == "label":
            target = entry.get("targetId")
            if isinstance(target, str):  # Pi's rule: only string targets label anything
                label_targets[target] = None
        elif etype == "message":
            msg = entry.get("message")
            role = msg.get("role", "?") if isinstance(msg, dict) else "?"
            by_role[value_text(role, 100, none="None")] += 1
            if role == "assistant":
                usage = msg.get("usage")
                if isinstance(usage, dict):
                    for key in tokens:
                        value = number(usage.get(key))
                        if value is not None:
                            tokens[key] = _add(tokens[key], value)
                    c = usage.get("cost")
                    total = number(c.get("total")) if isinstance(c, dict) else None
                    if total is not None:
                        cost = _add(cost, total)
                models[f"{value_text(msg.get('provider'), 100, none='None')}/"
                       f"{value_text(msg.get('model'), 100, none='None')}"] += 1
    known = set(ids)
    # Children counted only for parents that exist (orphans are roots).
    kids = {p: n for p, n in child_count.items() if p in known}
    leaves = sum(1 for i in ids if i not in kids)
    branch_points = sum(1 for n in kids.values() if n >= 2)
    branch = sm.get_branch() if sm.leaf_id is not None else []
    labels = {t: sm.get_label(t) for t in label_targets if t in known}
    labels = {t: v for t, v in labels.items() if v is not None}
    report = load_report(sm)
    header = sm.get_header() or {}
    return {
        "file": path,
        "fileSize": os.path.getsize(path),
        "backend": sm.backend,
        "openSeconds": open_seconds,
        "scanSeconds": time.perf_counter() - t0,
        "header": header,
        "version": header.get("version"),
        "fileVersion": file_version(sm),
        "sessionId": sm.session_id,
        "sessionName": sm.get_session_name(),
        "cwd": header.get("cwd"),
        "parentSession": header.get("parentSession"),
        "firstTimestamp": first_ts,
        "lastTimestamp": last_ts,
        "entries": len(ids),
        "byType": dict(by_type.most_common()),
        "byRole": dict(by_role.most_common()),
        "leaves": leaves,
        "branchPoints": branch_points,
        "roots": len(ids) - sum(kids.values()),
        "leafId": sm.leaf_id,
        "pathLength": len(branch),
        "compactions": by_type.get("compaction", 0),
        "compactionsOnPath": sum(1 for e in branch if e.get("type") == "compaction"),
        "labels": labels,
        "tokens": dict(tokens),
        "cost": round(float(cost), 6),
        "models": dict(models.most_common()),
        "problems": len(report),
        "problemKinds": dict(Counter(i.kind for i in report)),
    }


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree info``: the exit status (see the module docstring)."""
    sm, seconds = open_session(io, args.file, args.backend)
    with sm:
        data = collect(sm, args.file, seconds)
    if args.json:
        io.write_json(data)
        return 0
    render(io, data)
    return 0


def render(io: Io, d: dict[str, Any]) -> None:
    """Print ``collect``'s dict as a two-column table."""
    rows: list[Text] = []

    def add(key: str, value: str, style: str = "") -> None:
        # Text, not markup: names and labels may contain "[...]". Every value shown
        # has been through safe()/show(): session text never reaches the terminal raw.
        rows.append(Text.assemble((f"{key:<17}", "bold"), (value, style)))

    add("file", f"{safe(d['file'])}  ({human_bytes(d['fileSize'])}, {d['fileSize']:,} bytes)")
    add("opened", f"{human_seconds(d['openSeconds'])} with the {d['backend']} backend"
        f" (+{human_seconds(d['scanSeconds'])} to read every entry for this summary)")
    version = f"version {show(d['version'], 40, none='None')}"
    if d["fileVersion"] != d["version"]:
        version = (f"version {show(d['fileVersion'] or 1, 40)} on disk, migrated to {show(d['version'], 40)} "
                   "in memory (sessiontree migrate rewrites it)")
    add("session", f"{show(d['sessionId'], 200)}  {version}")
    if d["sessionName"]:
        add("name", show(d["sessionName"]))
    add("cwd", show(d["cwd"], none="None"))
    if d["parentSession"]:
        add("forked from", show(d["parentSession"]))
    add("time", f"{show(d['header'].get('timestamp'), 100, none='None')} … {show(d['lastTimestamp'], 100) or '-'}")
    add("entries", f"{d['entries']:,}  " + _counts(d["byType"]))
    add("messages", _counts(d["byRole"]) or "none")
    add("tree", f"{d['roots']:,} root(s), {d['leaves']:,} leaves, {d['branchPoints']:,} branch points")
    add("current leaf", f"{show(d['leafId'], 200, none='None')}  (path of {d['pathLength']:,} entries, "
        f"{d['compactionsOnPath']} compaction(s) on it)")
    add("compactions", f"{d['compactions']:,}")
    labels = d["labels"]
    shown = ", ".join(f"{show(k, 100)}={safe(repr(v)) if isinstance(v, str) else show(v, 100)}"
                      for k, v in list(labels.items())[:6])
    # "entries" above counts label *entries* (each sets or clears one label); this row
    # counts the entries that carry a label now.
    set_by = d["byType"].get("label", 0)
    add("labelled entries", f"{len(labels):,}  (set by {set_by:,} label entr{'y' if set_by == 1 else 'ies'})"
        + (f"  {shown}{' …' if len(labels) > 6 else ''}" if labels else ""))
    tk = d["tokens"]
    add("tokens", f"input {num(tk['input'])}  output {num(tk['output'])}  cache read {num(tk['cacheRead'])}  "
        f"cache write {num(tk['cacheWrite'])}  total {num(tk['totalTokens'])}")
    add("cost", f"${d['cost']:,.4f}  (sum of assistant usage.cost.total, all branches)")
    if d["models"]:
        add("models", _counts(d["models"]))
    if d["problems"]:
        add("problems", f"{d['problems']}  " + _counts(d["problemKinds"])
            + "  (details: sessiontree check)", "red")
    else:
        add("problems", "none")
    io.print(Text("\n").join(rows))


def _counts(counts: dict[str, int]) -> str:
    return "  ".join(f"{safe(str(k))} {v:,}" for k, v in counts.items())


def _add(total: Any, value: int | float) -> Any:
    """``total + value``; an integer too large for a float makes the sum infinite."""
    try:
        return total + value
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")
