"""What the scripts that time a call in a fresh process share (``reopen.py``,
``shared_cache.py``, ``ab_builds.py``; run from ``benches/``, which puts this folder on
the path): the child that prints its figures as JSON, ``wc -l`` timed the same way
beside it, and the min / median line of a figure."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any


def json_child(script: str, arg: str, env: dict[str, str], *more: str) -> dict[str, Any]:
    """Run ``python -c script arg *more`` with ``env``: the JSON object it prints."""
    out = subprocess.run([sys.executable, "-c", script, arg, *more], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def wc_l(path: str) -> tuple[float, float, float]:
    """``wc -l path``: its wall and CPU seconds (the child's user + system), and the
    1-minute load average just before."""
    load = os.getloadavg()[0]
    r0 = os.times()
    t = time.perf_counter()
    subprocess.run(["wc", "-l", path], capture_output=True, check=True)
    wall = time.perf_counter() - t
    r1 = os.times()
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    return wall, cpu, load


def summary(rows: list[dict[str, float]], key: str) -> str:
    """``min / median ms`` of ``key`` (seconds) over ``rows``."""
    v = [r[key] * 1000 for r in rows]
    return f"{min(v):.1f} / {statistics.median(v):.1f} ms"
