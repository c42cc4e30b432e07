"""``sessiontree info``: what a session file holds, in one screen."""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from typing import Any

from rich.text import Text

from ._common import Io, file_version, human_bytes, human_seconds, load_report, open_session


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register this subcommand.

    Args:
        sub: the ``sessiontree`` parser's subparsers.
    """
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
    label_targets: set[str] = set()
    tokens = Counter({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0})
    cost = 0.0
    models: Counter[str] = Counter()
    first_ts = last_ts = None
    for entry in sm:
        etype = str(entry.get("type"))
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
            label_targets.add(entry.get("targetId"))
        elif etype == "message":
            msg = entry.get("message")
            role = msg.get("role", "?") if isinstance(msg, dict) else "?"
            by_role[str(role)] += 1
            if role == "assistant":
                usage = msg.get("usage")
                if isinstance(usage, dict):
                    for key in tokens:
                        value = usage.get(key)
                        if isinstance(value, (int, float)) and not isinstance(value, bool):
                            tokens[key] += value
                    c = usage.get("cost")
                    if isinstance(c, dict) and isinstance(c.get("total"), (int, float)):
                        cost += c["total"]
                models[f"{msg.get('provider')}/{msg.get('model')}"] += 1
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
        "fileVersion": file_version(path),
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
        "cost": round(cost, 6),
        "models": dict(models.most_common()),
        "problems": len(report),
        "problemKinds": dict(Counter(i.kind for i in report)),
    }


def run(args: argparse.Namespace, io: Io) -> int:
    """Run the subcommand.

    Args:
        args: parsed arguments (``file``, ``backend``, the subcommand's flags).
        io: where to write.

    Returns:
        The exit status.
    """
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
        # Text, not markup: names and labels may contain "[...]".
        rows.append(Text.assemble((f"{key:<13}", "bold"), (value, style)))

    add("file", f"{d['file']}  ({human_bytes(d['fileSize'])}, {d['fileSize']:,} bytes)")
    add("opened", f"{human_seconds(d['openSeconds'])} with the {d['backend']} backend"
        f" (+{human_seconds(d['scanSeconds'])} to read every entry for this summary)")
    version = f"version {d['version']}"
    if d["fileVersion"] != d["version"]:
        version = f"version {d['fileVersion'] or 1} on disk, migrated to {d['version']} in memory (sessiontree migrate rewrites it)"
    add("session", f"{d['sessionId']}  {version}")
    if d["sessionName"]:
        add("name", d["sessionName"])
    add("cwd", str(d["cwd"]))
    if d["parentSession"]:
        add("forked from", str(d["parentSession"]))
    add("time", f"{d['header'].get('timestamp')} … {d['lastTimestamp'] or '-'}")
    add("entries", f"{d['entries']:,}  " + _counts(d["byType"]))
    add("messages", _counts(d["byRole"]) or "none")
    add("tree", f"{d['roots']:,} root(s), {d['leaves']:,} leaves, {d['branchPoints']:,} branch points")
    add("current leaf", f"{d['leafId']}  (path of {d['pathLength']:,} entries, "
        f"{d['compactionsOnPath']} compaction(s) on it)")
    add("compactions", f"{d['compactions']:,}")
    labels = d["labels"]
    shown = ", ".join(f"{k}={v!r}" for k, v in list(labels.items())[:6])
    add("labels", f"{len(labels)}" + (f"  {shown}{' …' if len(labels) > 6 else ''}" if labels else ""))
    tk = d["tokens"]
    add("tokens", f"input {tk['input']:,}  output {tk['output']:,}  cache read {tk['cacheRead']:,}  "
        f"cache write {tk['cacheWrite']:,}  total {tk['totalTokens']:,}")
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
    return "  ".join(f"{k} {v:,}" for k, v in counts.items())
