"""Resident memory of open + build_session_context, one fresh process per measurement.

The child (``_memchild.py``) imports the package first and reports that baseline; the
parent then samples the child's ``/proc/<pid>/status`` every millisecond or so until it
exits. Figures are deltas over the baseline:

* ``index_anon``: private memory held after open (the index, or the python dicts);
* ``context_anon``: what the returned context adds on top;
* ``peak_anon``: the highest sampled private memory during open + context;
* ``peak_rss``: the kernel's ``VmHWM`` (exact peak of all resident memory, file pages
  of the mapping included; reset at the baseline) minus the baseline RSS;
* ``file_rss``: file pages resident in the process after open (native: the mapped
  session, shared with the page cache and reclaimable, not allocated memory).

The benchmark's timing is the child's wall time (interpreter start included): it is
there so that the figures land in the same JSON; read the ``extra_info``, not the time.
The cold ``open_s`` / ``context_s`` (first call in a fresh process) are in it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _benchlib import BenchFile, drop_opened, set_info
from sessiontree.generate import parse_size

CHILD = Path(__file__).with_name("_memchild.py")


def _read_status(pid: int) -> dict[str, int] | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(rest.split()[0]) * 1024
    return out or None


def measure(path: str, backend: str) -> dict[str, Any]:
    """Run one child and return its report plus the sampled peaks."""
    proc = subprocess.Popen([sys.executable, str(CHILD), path, backend], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    first = json.loads(proc.stdout.readline() or "{}")
    if first.get("stage") != "base":
        proc.kill()
        raise AssertionError(f"memory child failed: {proc.stderr.read() if proc.stderr else ''}")
    peaks = {"RssAnon": 0, "RssFile": 0, "VmRSS": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            st = _read_status(proc.pid)
            if st:
                for k, v in st.items():
                    peaks[k] = max(peaks[k], v)
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    time.sleep(0.01)  # the first sample is taken before the child starts working
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=3600)
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise AssertionError(f"memory child exited {proc.returncode}: {err[-2000:]}")
    report = json.loads(out.strip().splitlines()[-1])
    report["sampled_peak"] = peaks
    return report


def test_memory(benchmark: Any, session_file: BenchFile, backend: str) -> None:
    drop_opened()  # this process's own sessions do not matter, but free memory for the child
    report = benchmark.pedantic(measure, args=(session_file.path, backend), rounds=1, warmup_rounds=0)
    assert report["backend"] == backend
    assert report["entries"] == session_file.entries
    assert report["context_messages"] > 0
    base, after_open, after_ctx = report["base"], report["after_open"], report["after_context"]
    n = report["entries"]
    index_anon = after_open["RssAnon"] - base["RssAnon"]
    context_anon = after_ctx["RssAnon"] - after_open["RssAnon"]
    peak_anon = max(report["sampled_peak"]["RssAnon"], after_ctx["RssAnon"]) - base["RssAnon"]
    peak_rss = report["peak_rss"] - base["VmRSS"]
    file_rss = after_open["RssFile"] - base["RssFile"]
    assert peak_rss > 0
    set_info(benchmark, f"memory (fresh process; time = child wall time) · {session_file.size_label}",
             file=session_file, backend=backend, operation="memory",
             index_anon=index_anon, context_anon=context_anon, peak_anon=peak_anon, peak_rss=peak_rss,
             file_rss=file_rss, index_anon_per_entry=index_anon / n, peak_anon_per_entry=peak_anon / n,
             peak_rss_per_entry=peak_rss / n, context_messages=report["context_messages"],
             cold_open_s=report["open_s"], cold_context_s=report["context_s"], raw=report)


def _short_lines(size_label: str) -> tuple[str, int]:
    """A session of many short entries (~55 B each: ``custom`` entries in one chain)
    about ``size_label`` bytes long, cached beside the generated sessions. The shape
    where the scan's per-line records, not the file, set the peak (issue 11, item 5:
    10 million such lines used to peak at 5.8x the file)."""
    from _benchlib import cache_dir

    target = parse_size(size_label)
    header = b'{"type":"session","version":3,"id":"short-lines","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
    per = len(b'{"type":"custom","id":"00000000","parentId":"00000000"}\n')
    n = max(1, (target - len(header)) // per)
    path = cache_dir() / f"short-lines-{size_label}-v1.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(header)
            f.write(b'{"type":"custom","id":"00000000","parentId":null}\n')
            step = 1 << 16
            for lo in range(1, n, step):
                f.write(b"".join(b'{"type":"custom","id":"%08x","parentId":"%08x"}\n' % (i, i - 1) for i in range(lo, min(n, lo + step))))
        tmp.rename(path)
    return str(path), n


def test_memory_short_lines(benchmark: Any, size: str) -> None:
    """Peak memory of a native open of a file of short lines: it stays near the settled
    index plus the file. ``peak_rss`` is the kernel's exact peak (``VmHWM``) when the
    open returned, over the baseline: the index plus the map's file pages while the
    scan read them (the map is gone after the scan). The context step that follows in
    the child is not part of it (its plan is a list of every id on the path)."""
    drop_opened()
    path, n = _short_lines(size)
    report = benchmark.pedantic(measure, args=(path, "native"), rounds=1, warmup_rounds=0)
    assert report["entries"] == n
    base, after_open = report["base"], report["after_open"]
    index_anon = after_open["RssAnon"] - base["RssAnon"]
    peak_rss = after_open["VmHWM"] - base["VmRSS"]
    file_bytes = os.path.getsize(path)
    # The scan holds a few blocks' records, not one per line of the file.
    assert peak_rss < index_anon + file_bytes + (64 << 20), (peak_rss, index_anon, file_bytes)
    set_info(benchmark, f"memory, short lines (fresh process) · {size}", backend="native", operation="memory-short-lines",
             entries=n, file_bytes=file_bytes, index_anon=index_anon, peak_rss=peak_rss,
             index_anon_per_entry=index_anon / n, peak_rss_per_file_byte=peak_rss / file_bytes,
             cold_open_s=report["open_s"], raw=report)
