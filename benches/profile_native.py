"""Record where the native path spends its time on a large session (``make profile``).

Usage::

    python benches/profile_native.py [--size 1GiB] [--repeat 3] [--out bench-results/profile]

The workload (``--workload``, run in a child process under the profilers) opens the
cached generated session with ``backend="native"``, builds the context at the leaf,
takes ``get_branch()`` and closes, ``--repeat`` times.

Profilers, each if available:

* ``perf record --call-graph dwarf`` (the Rust frames; the release build has no frame
  pointers, so DWARF unwinding is used). With no hardware counters (a VM: ``perf stat
  -e instructions`` says ``<not supported>``) it samples the ``cpu-clock`` software
  event instead of ``cycles``. The raw ``perf.data`` goes to the cache folder (it is
  large); ``perf-report.txt`` (flat, self time) and ``perf-callers.txt`` (children
  included) go to ``--out``.
* ``py-spy record --native`` (Python and Rust frames in one stack, which shows the
  adapter and the dict conversion next to the core): ``pyspy.svg`` (flame graph) and
  ``pyspy-top.txt`` (self time per function, from the raw collapsed stacks).

See docs/PROFILING.md for how to read them. (Not named ``profile.py``: pytest puts
``benches/`` on ``sys.path``, where that name would shadow the standard library's
``profile`` module, which ``cProfile`` imports.)
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def workload(path: str, repeat: int) -> None:
    warnings.simplefilter("ignore")
    from sessiontree import SessionManager

    for i in range(repeat):
        t0 = time.perf_counter()
        sm = SessionManager.open(path, backend="native")
        t1 = time.perf_counter()
        ctx = sm.build_session_context()
        t2 = time.perf_counter()
        branch = sm.get_branch()
        t3 = time.perf_counter()
        print(f"round {i + 1}: open {t1 - t0:.3f}s, context {t2 - t1:.3f}s ({len(ctx.messages)} messages), "
              f"get_branch {t3 - t2:.3f}s ({len(branch)} entries), {len(sm)} entries", flush=True)
        sm.close()
        del ctx, branch, sm


def perf_usable() -> tuple[bool, str]:
    """Whether ``perf record`` works here, and which event to sample."""
    if not shutil.which("perf"):
        return False, ""
    stat = subprocess.run(["perf", "stat", "-e", "instructions", "true"], capture_output=True, text=True)
    hw = stat.returncode == 0 and "<not supported>" not in stat.stderr and "instructions" in stat.stderr
    probe = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", os.devnull, "--", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return False, ""
    return True, "cycles" if hw else "cpu-clock"


def run_perf(cmd: list[str], raw: Path, out: Path, event: str) -> None:
    data = raw / "perf.data"
    print(f"perf record -e {event} --call-graph dwarf ...", flush=True)
    subprocess.run(["perf", "record", "-e", event, "-F", "499", "--call-graph", "dwarf,16384", "-o", str(data),
                    "--", *cmd], check=True)
    with open(out / "perf-report.txt", "w") as f:
        subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "--percent-limit", "0.5",
                        "--sort", "dso,symbol", "-g", "none"], stdout=f, stderr=subprocess.DEVNULL, check=False)
    with open(out / "perf-callers.txt", "w") as f:
        subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--children", "--percent-limit", "2",
                        "--sort", "symbol", "-g", "caller,0.5,callee,function,percent", "--max-stack", "40"],
                       stdout=f, stderr=subprocess.DEVNULL, check=False)


def pyspy_bin() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return found if found and os.path.exists(found) else None


def run_pyspy(cmd: list[str], raw: Path, out: Path) -> None:
    exe = pyspy_bin()
    if exe is None:
        print("py-spy not found (make profile installs it): skipped", file=sys.stderr)
        return
    print("py-spy record --native ...", flush=True)
    subprocess.run([exe, "record", "--native", "--rate", "200", "--format", "flamegraph", "-o",
                    str(out / "pyspy.svg"), "--", *cmd], check=True)
    raw_file = raw / "pyspy.txt"
    subprocess.run([exe, "record", "--native", "--rate", "200", "--format", "raw", "-o", str(raw_file), "--", *cmd],
                   check=True)
    # self time per frame from the collapsed stacks ("a;b;c count")
    self_time: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw_file.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        self_time[stack.split(";")[-1]] += n
    with open(out / "pyspy-top.txt", "w") as f:
        f.write(f"# py-spy --native, {total} samples; self time per frame\n")
        for frame, n in self_time.most_common(40):
            f.write(f"{100 * n / max(total, 1):6.2f}%  {frame}\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="1GiB", help="session size (default 1GiB)")
    p.add_argument("--repeat", type=int, default=3, help="workload rounds (default 3)")
    p.add_argument("--out", default=str(HERE.parent / "bench-results" / "profile"))
    p.add_argument("--tools", default="perf,py-spy", help="profilers to run (default perf,py-spy)")
    p.add_argument("--workload", nargs=2, metavar=("FILE", "REPEAT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.workload:
        workload(args.workload[0], int(args.workload[1]))
        return 0

    sys.path.insert(0, str(HERE))
    from _benchlib import bench_file, cache_dir

    file = bench_file(args.size, True)
    print(f"session: {file.path} ({file.bytes:,} bytes, {file.entries:,} entries)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw = cache_dir() / "profile"
    raw.mkdir(exist_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--workload", file.path, str(args.repeat)]
    tools = {t.strip() for t in args.tools.split(",")}
    subprocess.run(cmd, check=True)  # warm the page cache; its timings are printed
    if "perf" in tools:
        ok, event = perf_usable()
        if ok:
            run_perf(cmd, raw, out, event)
        else:
            print("perf record is not usable here: skipped (py-spy --native only)", file=sys.stderr)
    if "py-spy" in tools:
        run_pyspy(cmd, raw, out)
    print(f"profiles in {out} (raw data in {raw})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
