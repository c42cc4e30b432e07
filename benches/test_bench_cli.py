"""``sessiontree info`` and ``sessiontree tree`` in a fresh process: wall time
(interpreter start included) and memory, both backends, both generators (issue 10
items 3 and 5).

Figures (``extra_info``): ``seconds`` (the child's own wall time, from interpreter
start to the command's return), ``peak_rss`` (``VmHWM``: every resident page, the
native backend's mapped session file included: page cache, shared and reclaimable),
``peak_anon`` (highest sampled private memory: what the command allocated) and
``file_rss`` at the end. The benchmark's own time is the child's wall time as the
parent sees it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from _benchlib import GENERATORS, active_backends, bench_file, drop_opened, read_once, set_info

CHILD = Path(__file__).with_name("_clichild.py")


def _anon(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def run_command(args: list[str]) -> dict[str, Any]:
    """Run ``sessiontree ARGS`` in a fresh interpreter; its report plus the sampled
    peak of private memory."""
    proc = subprocess.Popen([sys.executable, str(CHILD), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            a = _anon(proc.pid)
            if a:
                peak = max(peak, a)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate(timeout=3600)
    done.set()
    sampler.join()
    assert proc.returncode == 0, err[-2000:]
    report = json.loads(err.strip().splitlines()[-1])
    assert report["rc"] == 0, err[-2000:]
    report["peak_anon"] = max(peak, report["RssAnon"])
    return report


@pytest.mark.parametrize("gen", GENERATORS)
@pytest.mark.parametrize("command", ["info", "tree"])
def test_cli(benchmark: Any, size: str, gen: str, command: str) -> None:
    """Both backends in one test, each child after a read of the file: the python child
    once (a minute at 1 GiB), then the native one three times (pytest-benchmark times
    those rounds). A backend's figures are its fastest run's time and the highest peaks
    of its runs."""
    drop_opened()  # free this process's sessions for the children
    file = bench_file(size, True, gen)
    runs: dict[str, dict[str, Any]] = {}
    backends = active_backends()

    def child(backend: str) -> dict[str, Any]:
        read_once(file.path)  # each child meets the file in the page cache (this guest reclaims idle pages)
        report = run_command([command, file.path, "--backend", backend])
        got = {"seconds": report["seconds"], "peak_rss": report["VmHWM"], "peak_anon": report["peak_anon"],
               "file_rss": report["RssFile"]}
        old = runs.get(backend)
        if old is not None:
            got = {"seconds": min(old["seconds"], got["seconds"]),
                   **{k: max(old[k], got[k]) for k in ("peak_rss", "peak_anon", "file_rss")}}
        runs[backend] = got
        return report

    def setup() -> None:
        for b in backends:
            if b != "native" and b not in runs:
                child(b)

    benchmark.pedantic(lambda: child("native") if "native" in backends else None, setup=setup,
                       rounds=3 if "native" in backends else 1, warmup_rounds=0)
    set_info(benchmark, f"sessiontree {command} ({gen}, fresh process) · {size}", file=file, backend="both",
             operation=f"cli:{gen}:{command}", generator=gen, runs=runs)
    assert set(runs) == set(backends) and all(r["seconds"] > 0 for r in runs.values())
