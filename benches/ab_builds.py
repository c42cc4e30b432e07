"""Two builds of the package, A and B, on the same sessions in one run: CPU time per step.

Usage: ``python benches/ab_builds.py DIR_A DIR_B FILE... [--rounds N]``. DIR_A and DIR_B
each hold a ``sessiontree`` package with its built extension (a copy of ``python/`` after
``make build`` of each build: ``cp -r python/sessiontree DIR``). Each round runs, for
each file, one fresh process per build (the order alternating round by round) that times
the steps a reader takes on the native backend: open (a scan: the persisted index off),
``build_session_context()``, ``get_entries()`` (every entry a dict), and a core call per
entry (``parent_of`` for every id). Each figure is the best of the rounds, in CPU time
(user + system: it moves far less than wall time on a shared machine), then wall time.
docs/BENCHMARKS.md, "One wheel for every Python: the stable ABI".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

from _fresh import json_child

_CHILD = r"""
import json, resource, sys, time
import sessiontree
from sessiontree import SessionManager

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

out = {"module": sessiontree._sessiontree.__file__}
def step(name, fn):
    c, t = cpu(), time.perf_counter()
    value = fn()
    out[name] = (cpu() - c, time.perf_counter() - t)
    return value

sm = step("open", lambda: SessionManager.open(sys.argv[1], backend="native"))
step("context", sm.build_session_context)
ids = [e["id"] for e in step("get_entries", sm.get_entries)]
step("parent_of every id", lambda: [sm.parent_of(i) for i in ids])
sm.close()
print(json.dumps(out))
"""

STEPS = ("open", "context", "get_entries", "parent_of every id")


def run(pkg: str, path: str, home: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=pkg, HOME=home, XDG_CACHE_HOME=home, SESSIONTREE_INDEX="off",
               SESSIONTREE_CATALOG="off")
    return json_child(_CHILD, path, env)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    builds = {"A": args.a, "B": args.b}
    best: dict[tuple[str, str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as home:
        for r in range(args.rounds):
            for path in args.files:
                for name in ("AB" if r % 2 == 0 else "BA"):
                    res = run(builds[name], path, home)
                    if r == 0:
                        print(f"{name}: {res['module']}", file=sys.stderr)
                    for s in STEPS:
                        c, w = res[s]
                        key = (path, s, name)
                        old = best.get(key, (float("inf"), float("inf")))
                        best[key] = (min(old[0], c), min(old[1], w))
    print(f"best of {args.rounds} rounds; CPU ms (wall ms); B / A on CPU")
    for path in args.files:
        print(os.path.basename(path))
        for s in STEPS:
            a, b = best[(path, s, "A")], best[(path, s, "B")]
            print(f"  {s:20} A {a[0] * 1e3:8.1f} ({a[1] * 1e3:8.1f})   B {b[0] * 1e3:8.1f} ({b[1] * 1e3:8.1f})"
                  f"   {b[0] / a[0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
