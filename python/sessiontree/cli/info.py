"""``sessiontree info``: what a session file holds, in one screen: its id, name and cwd,
the time it spans (UTC: from the header's time, when Pi made the file, or its first
entry's when that is earlier, to its last entry's; ``--json``: the entries' own
``timeRange`` and the header's ``timestamp``), its entries and messages by kind, the tree's shape
(roots, leaves, branch points, the current leaf and its path), labels, the tokens
and cost its assistant messages recorded (every branch), the models used and the
problems the loader found (details: ``sessiontree check``).

The tokens' total is input + output + cache read + cache write, as Pi's ``/session``
counts it (``AgentSession.getSessionStats``), over every branch; where the records'
own ``totalTokens`` sum to another figure (a provider that leaves it out: 0), that is
shown beside it. ``--json``: ``tokensTotal`` is that total, ``tokens.totalTokens`` the
records' sum."""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from typing import Any

from rich.text import Text

from ..schema import CodeColumn

from ._common import Io, file_version, load_report, open_session, spinner
from ..view import ABSENT, cells, hang, human_bytes, human_seconds, iso_time, model_label, num, safe, show, value_text

_KEY = 17  # cells of the label column: the values start there


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``info`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("info", help="summary of a session file: counts, tree shape, tokens, cost",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def _in(shape: Any, entry_id: str) -> bool:
    try:
        shape.index(entry_id)
    except KeyError:
        return False
    return True


def collect(sm: Any, path: str, open_seconds: float) -> dict[str, Any]:
    """Everything ``info`` shows, as a JSON-ready dict, from the index: the tree's shape
    (``get_shape``), the usage sums (``get_usage_totals``: the native core reads only
    the assistant lines) and the few lines the summary names (label entries, the first
    and last entries with a timestamp, entries of types Pi does not define).

    Args:
        sm: an open ``SessionManager``.
        path: the file it was opened from.
        open_seconds: how long opening took.

    Returns:
        The summary (keys as printed by ``info --json``).
    """
    t0 = time.perf_counter()
    shape = sm.get_shape()
    ids = shape.ids
    n = len(shape)
    # Every value read from an entry may be any JSON type: text fields go through
    # value_text (never str(), which recurses on deep lists), sums take numbers only.
    by_type: Counter[str] = _counts_of(shape.types)
    unknown = by_type.pop("?", 0)
    if unknown:
        for e in sm.get_entries_by_id([ids[i] for i, t in enumerate(shape.types) if t == "?"]):
            by_type[value_text(e.get("type") if e is not None else None, 100, none=ABSENT)] += 1
    by_role: Counter[str] = _counts_of(shape.roles)  # None: not a message, or no string role
    by_role.pop(None, None)  # type: ignore[call-overload]
    no_role = by_type.get("message", 0) - sum(by_role.values())
    if no_role:
        by_role["?"] = no_role
    kids = shape.child_counts()
    leaves = kids.count(0)
    path_ids = sm.get_path_ids()
    on_path = []  # entry numbers root -> leaf, from the parent column
    x = shape.index(sm.leaf_id) if sm.leaf_id is not None else -1
    while x >= 0:
        on_path.append(x)
        x = shape.parents[x]
    labels = {t: v for t, v in sm.get_labels().items() if _in(shape, t)}  # entries that carry one
    usage = sm.get_usage_totals()
    models: Counter[str] = Counter()
    for provider, model, count in usage.models:
        models[model_label(provider, model)] += count
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
        "firstTimestamp": _timestamp(sm, shape, range(n)),
        "lastTimestamp": _timestamp(sm, shape, range(n - 1, -1, -1)),
        "timeRange": _time_range(shape.timestamps_ms),
        "entries": n,
        "byType": dict(by_type.most_common()),
        "byRole": dict(by_role.most_common()),
        "leaves": leaves,
        "branchPoints": n - leaves - kids.count(1),
        "roots": len(shape.roots),
        "leafId": sm.leaf_id,
        "pathLength": len(path_ids),
        "compactions": by_type.get("compaction", 0),
        "compactionsOnPath": sum(1 for i in on_path if shape.types[i] == "compaction"),
        "labels": labels,
        "tokens": dict(usage.tokens),
        "tokensTotal": usage.pi_total,
        "cost": round(float(_finite(usage.cost)), 6),
        "models": dict(models.most_common()),
        "problems": len(report),
        "problemKinds": dict(Counter(i.kind for i in report)),
    }


def _counts_of(column: Any) -> Counter[Any]:
    """``Counter(column)``; a shape's code column counts its codes (800k entries: 0.1 s
    less per column)."""
    return column.counts() if isinstance(column, CodeColumn) else Counter(column)


def _timestamp(sm: Any, shape: Any, order: range) -> str | None:
    """The ``timestamp`` string of the first entry in ``order`` that has one. Entries
    whose time parses have one; the few before the first of those are read to see
    whether theirs is a string that does not parse."""
    ids, times = shape.ids, shape.timestamps_ms
    for i in order:
        if times[i] is not None:
            ts = sm.get_entry(ids[i]).get("timestamp")
            return ts if isinstance(ts, str) else None
        ts = sm.get_entry(ids[i]).get("timestamp")
        if isinstance(ts, str):
            return ts
    return None


def _time_range(times: Any) -> list[str] | None:
    """``[earliest, latest]`` entry time (ISO 8601, UTC), whatever the file order (a
    fork's copied entries are older than its header), or ``None`` when no entry has one."""
    from .._time import iso_from_ms

    known = [t for t in times if t is not None]
    if not known:
        return None
    return [iso_from_ms(min(known)), iso_from_ms(max(known))]


def _finite(x: Any) -> Any:
    """``float(x)`` would raise for an integer beyond a float's range: make it ±inf."""
    try:
        float(x)
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")
    return x


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree info``: the exit status (see the module docstring)."""
    from ..v4 import is_v4

    if is_v4(args.file):
        return _run_v4(args, io)
    sm, seconds = open_session(io, args.file, args.backend)
    with sm, spinner(io, "summarizing"):
        data = collect(sm, args.file, seconds)
    if args.json:
        io.write_json(data)
        return 0
    render(io, data)
    return 0


def render(io: Io, d: dict[str, Any]) -> None:
    """Print ``collect``'s dict as a two-column table: on a terminal a value longer than
    its column continues under it (``view.hang``); piped, each field is one line."""
    rows: list[Text] = []
    width = io.out.width if io.out.is_terminal else None

    def add(key: str, value: str, style: str = "", *, glued: bool = False) -> None:
        # Text, not markup: names and labels may contain "[...]". Every value shown
        # has been through safe()/show(): session text never reaches the terminal raw.
        # On a terminal a long value continues under itself, not at column 0; glued:
        # the value's no-break spaces (a count's name and number, _counts) are spaces
        # once it is broken (piped, _counts glues nothing: a name's own are kept).
        first, *more = (x.replace("\u00a0", " ") if glued and width is not None else x
                        for x in hang(value, _KEY, width))
        rows.append(Text.assemble((f"{key:<{_KEY}}", "bold"), (first, style)))
        rows.extend(Text(line, style) for line in more)

    def add_path(key: str, path: str, after: str = "") -> None:
        # A path is pasted back: never broken. One that does not fit beside its label
        # goes on a line of its own, whole (as ls prints one), what follows it above.
        if width is None or _KEY + cells(path + after) <= width:
            add(key, path + after)
            return
        add(key, after.strip())
        rows.append(Text(path))

    def add_id(key: str, ident: str, after: str) -> None:
        # An id is pasted back too (trial 58: a session id broken at a hyphen): beside
        # its label when it fits there, what follows it broken as any value; else as a
        # path that does not fit.
        if width is None or " " in ident or _KEY + cells(ident) <= width:
            add(key, ident + after)
        else:
            add_path(key, ident, after)

    add_path("file", safe(d["file"]), f"  ({human_bytes(d['fileSize'])}, {d['fileSize']:,} bytes)")
    add("opened", f"{human_seconds(d['openSeconds'])} with the {d['backend']} backend"
        f" (+{human_seconds(d['scanSeconds'])} for this summary)")
    version = f"version {show(d['version'], 40, none=ABSENT)}"
    if d["fileVersion"] != d["version"]:
        version = (f"version {show(d['fileVersion'] or 1, 40)} on disk, migrated to {show(d['version'], 40)} "
                   "in memory (sessiontree migrate rewrites it)")
    add_id("session", show(d["sessionId"], 200), f"  {version}")
    if d["sessionName"]:
        add("name", show(d["sessionName"]))
    add("cwd", show(d["cwd"], none=ABSENT))
    if d["parentSession"]:
        add_path("forked from", show(d["parentSession"]))
    add("time", _time_row(d))
    glue = " " if width is None else "\u00a0"
    add("entries", f"{d['entries']:,}  " + _counts(d["byType"], glue), glued=True)
    add("messages", _counts(d["byRole"], glue) or "none", glued=True)
    add("tree", f"{d['roots']:,} root(s), {d['leaves']:,} leaves, {d['branchPoints']:,} branch points")
    if d["leafId"] is None:
        add("current leaf", "none (no entries)")
    else:
        add_id("current leaf", show(d["leafId"], 200), f"  (path of {d['pathLength']:,} entries, "
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
    # The total is Pi's (`UsageTotals.pi_total`: the four sums added); the records' own
    # `totalTokens`, summed, is named too where it differs (0 when a provider left it out).
    differs = tk["totalTokens"] != d["tokensTotal"]
    add("tokens", f"input {num(tk['input'])}  output {num(tk['output'])}  cache read {num(tk['cacheRead'])}  "
        f"cache write {num(tk['cacheWrite'])}  total {num(d['tokensTotal'])}"
        + (f"  (the four added, as Pi's /session; the records' totalTokens sum to {num(tk['totalTokens'])})"
           if differs else ""))
    add("cost", f"${d['cost']:,.4f}  (sum of assistant usage.cost.total, all branches)")
    if d["models"]:
        add("models", _counts(d["models"], glue), glued=True)
    if d["problems"]:
        add("problems", f"{d['problems']}  " + _counts(d["problemKinds"], glue)
            + "  (details: sessiontree check)", "red", glued=True)
    else:
        add("problems", "none")
    # Every row but a path's fits (hang); a path's is printed whole, never broken.
    io.print(Text("\n").join(rows), no_wrap=True, overflow="ignore", crop=False)


def _time_row(d: dict[str, Any]) -> str:
    """The entries' time range, earliest first, and the header's time when it lies
    outside (a fork is made after the entries it copies)."""
    from .._time import parse_iso_ms

    def shown(ts: Any) -> str:  # in UTC, saying so (CONTRACT §10 "Times"), or as written
        return iso_time(ts) or show(ts, 100, none="-")

    created = d["header"].get("timestamp")
    span = d.get("timeRange")
    if span is None:
        return f"{shown(created)} (no entry has a time)"
    at = parse_iso_ms(created)
    lo, hi = parse_iso_ms(span[0]), parse_iso_ms(span[1])
    if at is not None and lo is not None and at <= lo:
        return f"{shown(created)} … {shown(span[1])}"  # the file's start, as Pi made it
    row = f"{shown(span[0])} … {shown(span[1])}"
    if at is None or hi is None or at > hi:
        row += f"  ({'forked' if d.get('parentSession') else 'file created'} {shown(created)})"
    return row


def _counts(counts: dict[str, int], glue: str = " ") -> str:
    """``name count`` pairs, each joined by ``glue`` (at a terminal a no-break space:
    ``add(glued=True)`` breaks a row between pairs only; trial 58 saw ``session_info``
    apart from its 1)."""
    return "  ".join(f"{safe(str(k))}{glue}{v:,}" for k, v in counts.items())


def collect_v4(path: str) -> dict[str, Any]:
    """``info`` of a version 4 file (agent-core's harness, read-only, ``sessiontree.v4``):
    its lines by kind, its entries and records by type, its lanes and their leaves."""
    from ..v4 import read_v4

    t0 = time.perf_counter()
    s = read_v4(path)
    seconds = time.perf_counter() - t0
    return {
        "file": path, "fileSize": os.path.getsize(path), "version": 4, "sessionId": s.header.get("id"),
        "cwd": s.header.get("cwd"), "createdAt": s.header.get("createdAt"), "sessionName": s.name,
        "readSeconds": seconds, "linesByKind": dict(s.kinds),
        "entriesByType": dict(Counter(e.get("type") for e in s.entries)),
        "recordsByType": dict(s.records_by_type()), "lanes": dict(s.lanes), "labels": len(s.labels),
        "problems": [{"kind": i.kind, "line": i.line, "detail": i.detail} for i in s.report],
    }


def _run_v4(args: argparse.Namespace, io: Io) -> int:
    d = collect_v4(args.file)
    if args.json:
        io.write_json(d)
        return 0
    rows: list[Text] = []

    def add(key: str, value: str) -> None:
        rows.append(Text.assemble((f"{key:<17}", "bold"), value))

    def counts(c: dict[str, int]) -> str:
        return ", ".join(f"{show(k, 60)} {v:,}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])) or "none"

    add("file", f"{safe(d['file'])}  ({human_bytes(d['fileSize'])}, {d['fileSize']:,} bytes)")
    add("session", f"{show(d['sessionId'], 200)}  version 4 (agent-core's harness; read-only), "
                   f"read in {human_seconds(d['readSeconds'])}")
    add("cwd", show(d["cwd"], 300))
    if d["sessionName"] is not None:
        add("name", show(d["sessionName"]))
    add("lines", counts(d["linesByKind"]))
    add("entries", counts(d["entriesByType"]))
    add("records", counts(d["recordsByType"]))
    add("lanes", ", ".join(f"{show(k, 60)} → {show(v, 60, none='(before the first entry)')}"
                           for k, v in d["lanes"].items()))
    add("labels", f"{d['labels']:,}")
    add("problems", f"{len(d['problems']):,} lines skipped" + "".join(
        f"\n{'':<17}line {p['line']}: {show(p['detail'], 200)}" for p in d["problems"][:10]))
    io.print(Text("\n").join(rows))
    return 0
