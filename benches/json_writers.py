"""The writers of a command's ``--json`` value: the extension's ``plain_json`` against
orjson (its import in a fresh process that has imported what a warm ``usage`` has, then
its ``dumps``), on usage reports of N lines.

    python benches/json_writers.py [--lines 500 2000 20000] [--rounds 30]

Prints, per size, the values written, the ms of each writer (best of the rounds) and
orjson's import (best of five fresh processes); checks the two writers' bytes equal.
Where the extension's time stays below orjson's import plus its ``dumps``, a command
that has not imported orjson is quicker without it (``view/_text.py`` ``_NATIVE_NODES``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time


def _report(n: int) -> dict[str, object]:
    lines = [{"key": f"/home/u/.pi/agent/sessions/--p--/2026-01-{i % 28 + 1:02d}_{i}.jsonl", "records": i * 3,
              "input": i * 1000, "output": i * 33, "cacheRead": i * 7, "cacheWrite": i, "totalTokens": i * 1041,
              "cost": i * 0.013 + 0.001} for i in range(n)]
    return {"group": "session", "lines": lines, "total": dict(lines[-1], key="total"), "active": False, "files": n}


def _best(fn: object, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t)
    return best * 1000


def _orjson_import_ms() -> float:
    # After the modules a warm `usage` has imported (some of orjson's own imports among them).
    code = ("import time, sessiontree.cli._common, sessiontree.catalog; t = time.perf_counter(); import orjson; "
            "print((time.perf_counter() - t) * 1000)")
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(5)]
    return min(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[500, 2000, 20000])
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    import orjson

    from sessiontree import _sessiontree as native
    from sessiontree.view._text import _JSON_UNSAFE_RE, _json_escape

    imp = _orjson_import_ms()
    print(f"orjson import (a fresh process after a command's modules, best of 5): {imp:.2f} ms")
    print("lines  values  plain_json ms  orjson dumps ms  import + dumps ms")
    for n in a.lines:
        value = _report(n)
        values = 6 + 9 * n + 9
        mine = native.plain_json(value, True, 10**9)
        theirs = _JSON_UNSAFE_RE.sub(_json_escape, orjson.dumps(value, option=orjson.OPT_INDENT_2))
        if mine != theirs:
            print(f"{n}: the bytes differ", file=sys.stderr)
            return 1
        ours = _best(lambda: native.plain_json(value, True, 10**9), a.rounds)
        dumps = _best(lambda: orjson.dumps(value, option=orjson.OPT_INDENT_2), a.rounds)
        print(f"{n:>5}  {values:>6}  {ours:>13.2f}  {dumps:>15.2f}  {imp + dumps:>17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
