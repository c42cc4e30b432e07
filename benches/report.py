"""Turn a pytest-benchmark JSON (``make bench``) into a Markdown table and a plot.

Usage::

    python benches/report.py bench-results/latest.json [--out bench-results] [--command "make bench ..."]

Writes ``RESULTS.md`` (tables: time per operation with the native/python ratio and the
multiple of the scan limit; write and listing throughput; memory per entry; the
targets of the Rust-core issue with the measured value) and ``time-vs-size.png`` (time
against file size for both backends and the physical limits, log-log). The Markdown is
also printed.

Timings are the **minimum over the rounds** (best of N): on a shared 2-core machine the
minimum is the figure least disturbed by other processes; the number of rounds is in
the JSON. The scan limit of a size is ``count_newlines`` (memchr over the mapped file)
on the same file in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

SIZES = ("1MB", "10MB", "100MB", "1GiB")
BACKENDS = ("python", "native")

# operation key -> label, in table order
TIME_OPS = (
    ("open", "open (index the file)"),
    ("open+context", "open + build_session_context"),
    ("open+context:uncompacted", "open + context, uncompacted session"),
    ("get_entry", "get_entry (one id)"),
    ("get_branch", "get_branch (root → leaf)"),
    ("get_tree", "get_tree (whole forest)"),
    ("context:compacted", "build_session_context (compacted)"),
    ("context:uncompacted", "build_session_context (uncompacted)"),
)


# ------------------------------------------------------------------ formatting
def fmt_time(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs" if s < 1e-5 else f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms" if s < 1e-2 else f"{s * 1e3:.0f} ms"
    return f"{s:.2f} s"


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:,.0f}×"
    if x >= 10:
        return f"{x:.1f}×"
    if x >= 0.01:
        return f"{x:.2f}×"
    return f"{x:.1e}×"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "–"
    n = float(n)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_int(n: float | None) -> str:
    return "–" if n is None else f"{n:,.0f}"


# ----------------------------------------------------------------- collecting
class Results:
    """The benchmarks of one JSON, indexed by (operation, size, backend)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        for b in data.get("benchmarks", []):
            info = b.get("extra_info", {})
            op, size, backend = info.get("operation"), info.get("size"), info.get("backend")
            if op is None:
                continue
            key = (op, size, backend)
            # the limits are timed in two groups: keep the better figure
            if key not in self.rows or b["stats"]["min"] < self.rows[key]["stats"]["min"]:
                self.rows[key] = b

    def sizes(self) -> list[str]:
        present = {k[1] for k in self.rows}
        return [s for s in SIZES if s in present]

    def get(self, op: str, size: str, backend: str) -> dict[str, Any] | None:
        return self.rows.get((op, size, backend))

    def t(self, op: str, size: str, backend: str) -> float | None:
        b = self.get(op, size, backend)
        return b["stats"]["min"] if b else None

    def best(self, op: str, size: str, backend: str) -> float | None:
        """A both-backend row's (``test_bench_calls.py``) best time of ``backend``."""
        b = self.get(op, size, "both")
        times = b["extra_info"].get("times", {}).get(backend) if b else None
        return min(times) if times else None

    def med(self, op: str, size: str, backend: str) -> float | None:
        b = self.get(op, size, backend)
        return b["stats"]["median"] if b else None

    def info(self, op: str, size: str, backend: str, key: str) -> Any:
        b = self.get(op, size, backend)
        return b["extra_info"].get(key) if b else None

    def limit(self, size: str) -> float | None:
        return self.t("limit:count_newlines", size, "count_newlines")

    def read_once(self, size: str) -> float | None:
        return self.t("limit:read_once", size, "read_once")

    def file_info(self, size: str) -> tuple[int | None, int | None]:
        for (op, s, _), b in self.rows.items():
            if s == size and op in ("open", "get_entry", "limit:count_newlines"):
                return b["extra_info"].get("bytes"), b["extra_info"].get("entries")
        return None, None


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# --------------------------------------------------------------------- tables
def time_table(r: Results) -> list[str]:
    out = [
        "| operation | size | items | python | native | python ÷ native | native ÷ limit | python ÷ limit "
        "| median python / native |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for size in r.sizes():
        lim, rd = r.limit(size), r.read_once(size)
        nbytes, entries = r.file_info(size)
        out.append(f"| **scan limit**: `count_newlines` (memchr) | {size} | {fmt_int(entries)} entries, "
                   f"{fmt_bytes(nbytes)} | | {fmt_time(lim)} | | 1× | | "
                   f"{fmt_time(r.med('limit:count_newlines', size, 'count_newlines'))} |")
        out.append(f"| read the file once | {size} | | | {fmt_time(rd)} | | {fmt_ratio(_div(rd, lim))} | | "
                   f"{fmt_time(r.med('limit:read_once', size, 'read_once'))} |")
        for op, label in TIME_OPS:
            tp, tn = r.t(op, size, "python"), r.t(op, size, "native")
            if tp is None and tn is None:
                continue
            items = r.info(op, size, "native", "items") or r.info(op, size, "python", "items")
            out.append(
                f"| {label} | {size} | {fmt_int(items) if items else ''} | {fmt_time(tp)} | {fmt_time(tn)} | "
                f"{fmt_ratio(_div(tp, tn))} | {fmt_ratio(_div(tn, lim))} | {fmt_ratio(_div(tp, lim))} | "
                f"{fmt_time(r.med(op, size, 'python'))} / {fmt_time(r.med(op, size, 'native'))} |"
            )
    return out


def write_table(r: Results) -> list[str]:
    out = [
        "| operation | size | python | native | python ÷ native |",
        "|---|---|--:|--:|--:|",
    ]
    for size in r.sizes():
        for op, label in (("append:nofsync", "append_message, no fsync"), ("append:fsync", "append_message + fsync")):
            tp, tn = r.t(op, size, "python"), r.t(op, size, "native")
            if tp is None and tn is None:
                continue
            eps = lambda t: "–" if not t else f"{1 / t:,.0f} entries/s ({fmt_time(t)})"  # noqa: E731
            out.append(f"| {label} | {size} | {eps(tp)} | {eps(tn)} | {fmt_ratio(_div(tp, tn))} |")
        for lines in (1, 100):
            op = f"refresh:{lines}"
            tp, tn = r.t(op, size, "python"), r.t(op, size, "native")
            if tp is None and tn is None:
                continue
            per = lambda t: "–" if not t else f"{fmt_time(t)} ({fmt_time(t / lines)}/line)"  # noqa: E731
            out.append(f"| refresh() after +{lines} line{'s' if lines > 1 else ''} | {size} | {per(tp)} | "
                       f"{per(tn)} | {fmt_ratio(_div(tp, tn))} |")
    lp, ln = r.t("list", _list_size(r), "python"), r.t("list", _list_size(r), "native")
    if lp or ln:
        b = r.get("list", _list_size(r), "native") or r.get("list", _list_size(r), "python")
        total = b["extra_info"].get("bytes") if b else None
        out.append(f"| `SessionManager.list` | {_list_size(r)}, {fmt_bytes(total)} | {fmt_time(lp)} | "
                   f"{fmt_time(ln)} | {fmt_ratio(_div(lp, ln))} |")
    return out


def _list_size(r: Results) -> str:
    for op, size, _ in r.rows:
        if op == "list":
            return size
    return ""


def calls_table(r: Results) -> list[str]:
    """``test_bench_calls.py``: one table per generator, a row per call and phase, for
    each size python / native / python ÷ native."""
    out: list[str] = []
    gens = sorted({k[0].split(":")[1] for k in r.rows if k[0].startswith("call:")},
                  key=lambda g: (g != "project", g))
    sizes = [s for s in r.sizes() if any(k[0].startswith("call:") and k[1] == s for k in r.rows)]
    if not gens or not sizes:
        return out
    worst: list[tuple[float, str]] = []
    for gen in gens:
        entries = {s: r.info(f"call:{gen}:open:first", s, "both", "entries") for s in sizes}
        out += [f"**{gen} generator** ("
                + ", ".join(f"{s}: {fmt_int(entries[s])} entries" for s in sizes if entries[s]) + ")", ""]
        head = "| call | " + " | ".join(f"{s} python | {s} native | {s} py ÷ nat" for s in sizes) + " |"
        out += [head, "|---|" + "--:|--:|--:|" * len(sizes)]
        calls = []
        for (op, _, _) in r.rows:
            if op.startswith(f"call:{gen}:"):
                _, _, call, phase = op.split(":")
                if (call, phase) not in calls:
                    calls.append((call, phase))
        order = {"first": 0, "again": 1}
        calls.sort(key=lambda cp: (order.get(cp[1], 2), _CALL_ORDER.index(cp[0]) if cp[0] in _CALL_ORDER else 99))
        for call, phase in calls:
            op = f"call:{gen}:{call}:{phase}"
            label = f"open + {call}" if phase == "first" and call != "open" else call if call == "open" else f"{call}, again"
            cells = []
            for size in sizes:
                tp, tn = r.best(op, size, "python"), r.best(op, size, "native")
                ratio = _div(tp, tn)
                if ratio is not None:
                    worst.append((ratio, f"{label} ({gen}, {size})"))
                cells.append(f"{fmt_time(tp)} | {fmt_time(tn)} | {fmt_ratio(ratio)}")
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
    if worst:
        worst.sort()
        out.append(f"Lowest python ÷ native: {fmt_ratio(worst[0][0])} ({worst[0][1]}); rows below 1: "
                   f"{sum(1 for x, _ in worst if x < 1)} of {len(worst)}.")
        out.append("")
    return out


_CALL_ORDER = ["open", "get_tree", "get_tree+walk", "get_entries", "iterate", "get_entry every id", "in every id",
               "[id] every id", "get_children every id", "get_branch", "contexts at leaves", "labels every id",
               "user script"]


def cli_table(r: Results) -> list[str]:
    """``test_bench_cli.py``: info and tree in a fresh process."""
    rows = [k for k in r.rows if k[0].startswith("cli:")]
    if not rows:
        return []
    out = ["| command | generator | size | backend | wall time | peak RSS (VmHWM) | peak private (RssAnon) |",
           "|---|---|---|---|--:|--:|--:|"]
    keys = sorted({(k[0], k[1]) for k in rows}, key=lambda k: (k[0].split(":")[2], k[0].split(":")[1] != "project",
                                                              SIZES.index(k[1]) if k[1] in SIZES else 9))
    for op, size in keys:
        _, gen, command = op.split(":")
        b = r.get(op, size, "both")
        runs = b["extra_info"].get("runs", {}) if b else {}
        for backend in BACKENDS:
            e = runs.get(backend)
            if not e:
                continue
            out.append(f"| `sessiontree {command}` | {gen} | {size} | {backend} | {fmt_time(e['seconds'])} | "
                       f"{fmt_bytes(e['peak_rss'])} | {fmt_bytes(e['peak_anon'])} |")
    return out


def memory_table(r: Results) -> list[str]:
    out = [
        "| size | entries | backend | index, private bytes/entry | context, private | peak private, bytes/entry "
        "| peak RSS − baseline | mapped file pages | cold open | cold context |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for size in r.sizes():
        for backend in BACKENDS:
            b = r.get("memory", size, backend)
            if not b:
                continue
            e = b["extra_info"]
            out.append(
                f"| {size} | {fmt_int(e['entries'])} | {backend} | {fmt_int(e['index_anon_per_entry'])} | "
                f"{fmt_bytes(e['context_anon'])} | {fmt_int(e['peak_anon_per_entry'])} | {fmt_bytes(e['peak_rss'])} | "
                f"{fmt_bytes(e['file_rss'])} | {fmt_time(e['cold_open_s'])} | {fmt_time(e['cold_context_s'])} |"
            )
    return out


def targets(r: Results) -> list[str]:
    sizes = r.sizes()
    if not sizes:
        return []
    big, small = sizes[-1], sizes[0]
    out = ["| target (Rust-core issue) | measured | met? |", "|---|---|---|"]

    def row(name: str, value: str, ok: bool | None) -> None:
        out.append(f"| {name} | {value} | {'–' if ok is None else ('yes' if ok else '**no**')} |")

    tp, tn, lim = r.t("open+context", big, "python"), r.t("open+context", big, "native"), r.limit(big)
    sp = _div(tp, tn)
    mp, mn = r.med("open+context", big, "python"), r.med("open+context", big, "native")
    row(f"open + context, {big}: native ≥ 30× faster than python",
        f"best {fmt_time(tp)} / {fmt_time(tn)} = {fmt_ratio(sp)}; median {fmt_time(mp)} / {fmt_time(mn)} = "
        f"{fmt_ratio(_div(mp, mn))}", None if sp is None else sp >= 30)
    m = _div(tn, lim)
    ml = r.med("limit:count_newlines", big, "count_newlines")
    row(f"open + context, {big}: native within 3× of memchr newline count",
        f"best {fmt_time(tn)} / {fmt_time(lim)} = {fmt_ratio(m)}; median {fmt_time(mn)} / {fmt_time(ml)} = "
        f"{fmt_ratio(_div(mn, ml))}", None if m is None else m <= 3)
    mem = r.get("memory", big, "native")
    if mem:
        per = mem["extra_info"]["index_anon_per_entry"]
        row(f"native resident memory < 100 bytes/entry + context ({big})",
            f"{per:,.0f} bytes/entry held after open (private); context {fmt_bytes(mem['extra_info']['context_anon'])}; "
            f"peak private {mem['extra_info']['peak_anon_per_entry']:,.0f} bytes/entry", per < 100)
    for op, name in (("get_entry", "get_entry"), ("get_branch", "get_branch")):
        a, b = r.t(op, small, "native"), r.t(op, big, "native")
        if a and b:
            items = r.info(op, big, "native", "items")
            row(f"{name}: microseconds, flat as the file grows (native)",
                f"{small} {fmt_time(a)} → {big} {fmt_time(b)} ({fmt_ratio(b / a)})"
                + (f"; returns {items:,} entries at {big}" if op == "get_branch" else ""),
                b < 1e-3 and b / a < 3)
    a, b = r.t("refresh:1", small, "native"), r.t("refresh:1", big, "native")
    c = r.t("refresh:100", big, "native")
    if a and b:
        row("refresh ∝ appended lines, not file size (native)",
            f"+1 line: {small} {fmt_time(a)} → {big} {fmt_time(b)}; +100 lines at {big}: {fmt_time(c)}",
            b / a < 3 and (c is None or c > b))
    return out


# ----------------------------------------------------------------------- plot
def plot(r: Results, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return False
    sizes = r.sizes()
    xs_all = {s: r.file_info(s)[0] for s in sizes}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.2))
    colors = {"python": "tab:blue", "native": "tab:orange"}

    def series(ax: Any, op: str, backend: str, style: str, label: str, color: str) -> None:
        pts = [(xs_all[s], r.t(op, s, backend)) for s in sizes]
        pts = [(x, y) for x, y in pts if x and y]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color, label=label, marker="o", ms=4)

    for backend in BACKENDS:
        series(ax1, "open+context", backend, "-", f"{backend}: open + context", colors[backend])
        series(ax1, "open", backend, "--", f"{backend}: open", colors[backend])
    series(ax1, "limit:count_newlines", "count_newlines", "-", "limit: memchr count_newlines", "black")
    series(ax1, "limit:read_once", "read_once", ":", "read the file once", "gray")
    ax1.set_title("Open a session (warm page cache)")
    for backend in BACKENDS:
        series(ax2, "get_entry", backend, "-", f"{backend}: get_entry", colors[backend])
        series(ax2, "get_branch", backend, "--", f"{backend}: get_branch (root → leaf)", colors[backend])
        series(ax2, "context:compacted", backend, ":", f"{backend}: build_session_context", colors[backend])
        series(ax2, "refresh:1", backend, "-.", f"{backend}: refresh (+1 line)", colors[backend])
    ax2.set_title("Calls on an opened session")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("session file size (bytes)")
        ax.set_ylabel("time (s), best of N rounds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7.5)
        ticks = [xs_all[s] for s in sizes if xs_all[s]]
        ax.set_xticks(ticks)
        ax.set_xticklabels([s for s in sizes if xs_all[s]])
        ax.minorticks_off()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------- main
def render(r: Results, command: str, plot_name: str | None) -> str:
    d = r.data
    mi, ci = d.get("machine_info", {}), d.get("commit_info", {})
    version = next((b["extra_info"].get("sessiontree") for b in d.get("benchmarks", [])
                    if b.get("extra_info", {}).get("sessiontree")), "?")
    cpu = mi.get("cpu", {}).get("brand_raw") or mi.get("processor") or "?"
    lines = [
        "# sessiontree benchmark results",
        "",
        f"- run: {d.get('datetime', '?')}, commit `{str(ci.get('id', '?'))[:10]}`"
        f"{' (dirty tree)' if ci.get('dirty') else ''}, sessiontree {version}",
        f"- machine: {cpu}, {os.cpu_count()} CPUs, Python {mi.get('python_version', '?')} "
        f"({mi.get('python_implementation', '?')}), {mi.get('system', '?')} {mi.get('release', '')}",
        f"- command: `{command}`",
        "- times: minimum over the rounds (best of N; medians in the last column), warm page cache; "
        "*limit* = `count_newlines` (memchr over the mapped file) on the same file in the same run",
        "",
        "## Targets",
        "",
        *targets(r),
        "",
        "## Time per operation",
        "",
        *time_table(r),
        "",
        "## Every read call, first and again (both generators)",
        "",
        "*first* = open + the call on a fresh session; *again* = the call repeated on a session "
        "that made it before (best of N).",
        "",
        *calls_table(r),
        "## Command line (fresh process per figure)",
        "",
        *cli_table(r),
        "",
        "## Writing, refresh and listing",
        "",
        *write_table(r),
        "",
        "## Memory (fresh process per figure; deltas over a baseline that imported the package)",
        "",
        *memory_table(r),
        "",
    ]
    if plot_name:
        lines += [f"![time against file size]({plot_name})", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", help="pytest-benchmark JSON (--benchmark-json)")
    p.add_argument("--out", default=None, help="output folder (default: the JSON's folder)")
    p.add_argument("--command", default=os.environ.get("BENCH_COMMAND", "make bench"),
                   help="the command that produced the JSON (shown in the table)")
    args = p.parse_args(argv)
    data = json.loads(Path(args.json).read_text())
    r = Results(data)
    if not r.rows:
        print(f"{args.json}: no benchmarks with sessiontree extra_info", file=sys.stderr)
        return 1
    out = Path(args.out) if args.out else Path(args.json).parent
    out.mkdir(parents=True, exist_ok=True)
    png = out / "time-vs-size.png"
    made = plot(r, png)
    text = render(r, args.command, png.name if made else None)
    (out / "RESULTS.md").write_text(text)
    print(text)
    print(f"wrote {out / 'RESULTS.md'}" + (f" and {png}" if made else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
