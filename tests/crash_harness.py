"""Crash harness (issue 11): a writer process killed at random points, then open, append
and reopen checked, hundreds of times.

Each run starts a real writer process on a session: a new one (the kill may land in
its first write), an existing one, a version 1 file (the kill may land in the
migration rewrite) or an existing one that it then branches (``create_branched_session``).
The writer appends entries whose ids and contents are a function of the run and their
number (long content blocks, tool results holding parsed session lines, labels) and
prints each id and parent once the append has returned: that is the acknowledgement.
It is killed with SIGKILL after a random delay. Then, for every session file left in
the folder:

* nothing lost: every acknowledged entry is there, with its parent;
* nothing invented: every entry is one the setup wrote or one the writer was writing
  (its id in the run's sequence, its content the one for that number; at most one not
  acknowledged), and both backends agree on entries and report;
* no half-written file has a session's name, and the next writer leaves no temporary
  file behind;
* the next append works: it is a child of the leaf, and a reopen shows what that
  session showed (entries and ``load_report``).

Every fifth run stops a command that writes an output file instead (``export --out``,
``generate --force``) with SIGKILL, SIGTERM, SIGINT or SIGHUP: the target holds its old
bytes or the whole output, at most one temporary file is left (none but after SIGKILL),
and the next run removes it (``check_output_run``).

Run: ``python tests/crash_harness.py --runs 300 [--seed S]`` (``make fuzz``); a short
run is part of ``make test`` (``tests/test_fuzz_short.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from sessiontree import LoadReportWarning, SessionManager  # noqa: E402

MODES = ("new", "existing", "v1", "branch")


def entry_id(tag: int, k: int) -> str:
    return f"{tag % 4096:03x}{k:05x}"


def content(tag: int, k: int) -> Any:
    """The message content of entry ``k`` of run ``tag`` (long ones now and then, so
    that kills land in the middle of a write)."""
    rng = random.Random(tag * 7919 + k)
    size = rng.choice([10, 100, 2000, 30_000, 200_000])
    if k % 3 == 2:
        nested = [{"type": "message", "id": f"nest{tag}-{k}-{j}", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
                   "message": {"role": "user", "content": "inner", "timestamp": 0}} for j in range(2)]
        return {"toolResult": [{"type": "text", "text": "r" * size}], "details": {"entries": nested}}
    return [{"type": "text", "text": f"{k}:" + "c" * size}, {"type": "text", "text": "é中"}]


def message(tag: int, k: int) -> dict[str, Any]:
    c = content(tag, k)
    if isinstance(c, dict):
        return {"role": "toolResult", "toolCallId": f"t{k}", "toolName": "read", "content": c["toolResult"],
                "details": c["details"], "isError": False, "timestamp": k}
    role = "assistant" if k % 2 else "user"
    msg: dict[str, Any] = {"role": role, "content": c, "timestamp": k}
    if role == "assistant":
        msg.update(provider="p", model="m")
    return msg


WRITER = r"""
import os, sys, warnings
sys.path.insert(0, sys.argv[1])
from crash_harness import entry_id, message
from sessiontree import SessionManager, LoadReportWarning
warnings.simplefilter("ignore", LoadReportWarning)
folder, mode, tag, backend = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
counter = [0]

class Writer(SessionManager):
    def _new_id(self, taken):
        k = counter[0]
        counter[0] += 1
        return entry_id(tag, k)

def say(*parts):
    # One write(2) per line: a pipe write under PIPE_BUF is atomic, so a kill cannot cut
    # an acknowledgement in half (print may write a line in pieces).
    os.write(1, (" ".join(map(str, parts)) + "\n").encode())

if mode == "new":
    mgr = Writer.create("/p", folder, backend=backend)
else:
    mgr = Writer.open(os.path.join(folder, "s.jsonl"), backend=backend)
say("file", mgr.session_file)
say("ready")
for step in range(30):
    k = counter[0]
    if mode == "branch" and step == 6:
        path = mgr.create_branched_session(mgr.leaf_id)
        say("file", path)
        continue
    if step % 7 == 5 and mgr.leaf_id is not None:
        eid = mgr.append_label_change(mgr.leaf_id, f"L{step}")
    else:
        eid = mgr.append_message(message(tag, k))
    # Pi's rule: nothing is on disk before the first assistant message, so an append
    # is acknowledged as durable only once the file exists.
    say("ack", eid, mgr.get_entry(eid)["parentId"], mgr.session_file, int(os.path.exists(mgr.session_file)))
mgr.close()
say("done")
"""


def _quiet_open(path: str, backend: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        return SessionManager.open(path, backend=backend)


def _setup(folder: Path, mode: str, rng: random.Random) -> set[str]:
    """Prepare the session the writer opens; returns the ids written here."""
    if mode == "new":
        return set()
    p = folder / "s.jsonl"
    if mode == "v1":
        lines = [{"type": "session", "id": f"v1-{rng.randrange(1 << 30)}", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}]
        lines += [{"type": "message", "timestamp": "2025-01-01T00:00:01.000Z",
                   "message": {"role": "user" if i % 2 == 0 else "assistant", "content": f"old {i}", "timestamp": i}}
                  for i in range(rng.randrange(1, 6))]
        p.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        mgr = _quiet_open(str(p), "python")
        ids = {e["id"] for e in mgr.get_entries()}  # deterministic migration ids
        mgr.close()
        return ids
    mgr = SessionManager.create("/p", str(folder), backend="python")
    mgr.append_message({"role": "user", "content": "setup", "timestamp": 0})
    mgr.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 0})
    ids = {e["id"] for e in mgr.get_entries()}
    src = mgr.session_file
    mgr.close()
    assert src is not None
    os.rename(src, p)
    return ids


def _facts(path: str, backend: str) -> tuple[list[Any], list[Any], str | None]:
    mgr = _quiet_open(path, backend)
    try:
        return mgr.get_entries(), [(i.kind, i.line, i.offset, i.ids) for i in mgr.load_report], mgr.leaf_id
    finally:
        mgr.close()


def check_run(tag: int, mode: str, backend: str, delay: float, folder: Path) -> dict[str, int]:
    rng = random.Random(tag)
    before = _setup(folder, mode, rng)
    errors = folder.parent / f"{folder.name}.stderr"
    with open(errors, "w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(HERE), str(folder), mode, str(tag), backend],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )
        assert proc.stdout is not None
        lines: list[str] = []
        line = proc.stdout.readline()
        while line and line.strip() != "ready":
            lines.append(line.strip())
            line = proc.stdout.readline()
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        rest = proc.stdout.read()
        lines += [x.strip() for x in rest.split("\n")[:-1]]  # every whole ack it printed
        proc.wait(timeout=60)
        err.seek(0)
        why = err.read()[-2000:]
    errors.unlink()
    killed = proc.returncode == -signal.SIGKILL
    assert killed or proc.returncode == 0, f"writer failed ({proc.returncode}): {why}"
    acked: dict[str, tuple[str, str]] = {}  # id -> (parent, file): durable acknowledgements
    said: list[list[str]] = [x.split() for x in lines if x.startswith("ack ")]
    durable = max((i for i, parts in enumerate(said) if parts[4] == "1"), default=-1)
    for parts in said[: durable + 1]:
        acked[parts[1]] = (parts[2], parts[3])
    written = {parts[1] for parts in said}
    # Every session file left: valid, nothing lost, nothing invented, backends agree.
    files = sorted(str(folder / n) for n in os.listdir(folder) if n.endswith(".jsonl"))
    seen: set[str] = set()
    for path in files:
        py, nat = _facts(path, "python"), _facts(path, "native")
        assert py[:2] == nat[:2], f"{path}: the backends disagree"
        entries = py[0]
        for e in entries:
            eid = e["id"]
            seen.add(eid)
            if eid in before:
                continue
            assert len(eid) == 8 and int(eid[:3], 16) == tag % 4096, f"{path}: invented entry {eid}"
            k = int(eid[3:], 16)
            if e["type"] == "message":
                assert e["message"] == message(tag, k), f"{path}: entry {eid} is not what was written"
            if eid in acked and acked[eid][1] == path:
                assert e.get("parentId", "None") == (None if acked[eid][0] == "None" else acked[eid][0]), f"{eid}: parent"
        unacked = [e["id"] for e in entries if e["id"] not in before and e["id"] not in written]
        # One entry may be written and not acknowledged (killed before it said so); a
        # branched session repeats the path it was cut from.
        if mode != "branch":
            assert len(unacked) <= 1, f"{path}: unacknowledged entries {unacked}"
    lost = [eid for eid, (_, f) in acked.items() if eid not in seen]
    assert not lost, f"lost acknowledged entries {lost}"
    # The next writer: an append to each file, a reopen equal to that session.
    for path in files:
        n = int(tag) % 2
        mgr = _quiet_open(path, ("python", "native")[n])
        leaf = mgr.leaf_id
        new = mgr.append_message({"role": "user", "content": "after the crash", "timestamp": 99})
        assert mgr.get_entry(new)["parentId"] == leaf
        mine = ([e["id"] for e in mgr.get_entries()], [(i.kind, i.line, i.offset, i.ids) for i in mgr.load_report])
        mgr.close()
        again = _facts(path, ("native", "python")[n])
        assert ([e["id"] for e in again[0]], again[1]) == mine, f"{path}: reopen after the append differs"
    left = [n for n in os.listdir(folder) if n.endswith(".tmp")]
    assert not (files and left), f"temporary files left after the next writer: {left}"
    return {"acked": len(acked), "killed": int(killed), "files": len(files)}


OUTPUTS = ("html", "markdown", "generate")
_STOP_SIGNALS = (signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def check_output_run(tag: int, what: str, sig: int, delay: float, folder: Path) -> dict[str, int]:
    """A command writing a file (issue 24) stopped by ``sig`` after ``delay``: the
    target holds its old bytes or the whole new output, never a part; at most one
    temporary file is left (none unless the signal was SIGKILL); the next run removes
    it and writes what an uninterrupted run writes."""
    from sessiontree.generate import generate_session

    src = folder / "src.jsonl"
    generate_session(src, size_bytes=random.Random(tag).choice([2_000_000, 8_000_000, 16_000_000]), seed=tag)
    out_dir = folder / "out"
    out_dir.mkdir()
    target = out_dir / ("page.html" if what == "html" else "page.md" if what == "markdown" else "gen.jsonl")
    target.write_bytes(b"old")
    if what == "generate":
        cmd = ["generate", str(target), "--force", "--size", "24MB", "--seed", str(tag)]
    else:
        cmd = ["export", str(src), "--format", what, "--out", str(target)]
    env = dict(os.environ, SESSIONTREE_CATALOG="off")
    proc = subprocess.Popen([sys.executable, "-m", "sessiontree", *cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    killed = proc.returncode != 0
    assert proc.returncode in (0, -sig, 130 if sig == signal.SIGINT else -sig), (proc.returncode, err[-2000:])
    left = [n for n in os.listdir(out_dir) if n.endswith(".tmp")]
    assert sorted(os.listdir(out_dir)) == sorted([target.name, *left]), os.listdir(out_dir)
    assert len(left) <= (1 if sig == signal.SIGKILL else 0), f"temporary files left: {left}"
    before = target.read_bytes()
    again = subprocess.run([sys.executable, "-m", "sessiontree", *cmd], capture_output=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert os.listdir(out_dir) == [target.name], f"the next run left {os.listdir(out_dir)}"
    assert before in (b"old", target.read_bytes()), "the target held a partial output"
    return {"acked": 0, "killed": int(killed), "files": 1}


def run(runs: int, seed: int, verbose: bool = False) -> tuple[int, dict[str, int]]:
    """``runs`` kills from ``seed``; returns (failures, totals). Every fifth run stops a
    command that writes an output file (``export``, ``generate``) instead of a writer."""
    failed = 0
    totals = {"acked": 0, "killed": 0, "files": 0}
    rng = random.Random(seed)
    for k in range(runs):
        tag = seed * 10_007 + k
        mode = MODES[k % len(MODES)]
        backend = rng.choice(["python", "native"])
        delay = rng.choice([0.0, 0.002, 0.01, 0.03, 0.08, 0.2]) * rng.random()
        if k % 5 == 4:
            what, sig = rng.choice(OUTPUTS), rng.choice(_STOP_SIGNALS)
            mode, delay = f"{what} stopped by {signal.Signals(sig).name}", 0.1 + rng.random() * 0.4
        with tempfile.TemporaryDirectory(prefix="sessiontree-crash-") as tmp:
            try:
                if k % 5 == 4:
                    got = check_output_run(tag, what, sig, delay, Path(tmp))
                else:
                    got = check_run(tag, mode, backend, delay, Path(tmp))
                for key in totals:
                    totals[key] += got[key]
            except Exception as e:  # noqa: BLE001 - every failure is a finding
                failed += 1
                print(f"run {tag} ({mode}, {backend}, {delay * 1000:.1f} ms): {type(e).__name__}: {str(e)[:400]}", file=sys.stderr)
        if verbose and (k + 1) % 50 == 0:
            print(f"{k + 1} runs, {failed} failed", file=sys.stderr)
    return failed, totals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(2), "big"))
    args = ap.parse_args(argv)
    failed, totals = run(args.runs, args.seed, verbose=True)
    print(
        f"crash harness: seed {args.seed}, {args.runs} runs, {totals['killed']} killed mid-run, "
        f"{totals['acked']} acknowledged appends, {totals['files']} session files checked, {failed} failed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
