"""A second session generator for the benchmarks: real Pi entries, another model of a
session. It shares no code with ``sessiontree.generate`` (the project's generator,
which the code was tuned against) and uses none of the package.

Model: a long-lived agent's history is a sequence of *tasks*, each a replay of one
session Pi itself wrote (the conformance corpus, ``../shared/corpus/pi-golden``, v3
files that parse whole). A task keeps its session's entries, their order, their own
branches, labels, compactions and branch summaries, with fresh 8-hex ids (every id
they name remapped) and times moved forward. Its roots attach to the current leaf
(the agent continues, 80%), to a random earlier entry (the user went back and retried,
15%), or start a new root (``resetLeaf``, 5%). So the file is made of Pi's own line
shapes (short lines, ~1.1 KB on average, one 1.2 MB tool result per replay of
``hand-big-toolresult``) in a bushy tree with many branch points: many more, shorter
entries per byte than the project's generator, whose sessions hold ~14 KB lines.

``--scale X`` repeats each tool result's text X times (rounded per block): 1 gives
~800,000 entries per GiB, 2.5 ~420,000, the density of sessions measured in the field
(issue 27: 422,522 entries in a 1 GiB one).

``--sessions N`` writes a *history* instead: N sessions of about SIZE bytes in all,
under the folder OUT in Pi's layout (a folder per project, ``--home-user-NAME--``;
files named ``<time>_<uuid>.jsonl`` after their headers). Their sizes are drawn from a
log-normal law (many short sessions, a few large ones; sigma 1.6), their projects from
a Zipf-like law over ``--projects`` names, so the history is shaped unlike the project
generator's, whose sessions are all of one size.

Usage: ``python benches/corpus_gen.py OUT SIZE [--seed S] [--scale X] [--sessions N
[--projects P] [--plain]]`` (``SIZE`` like ``100MB``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

CORPUS = Path(os.environ.get("SESSIONTREE_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "corpus" / "pi-golden"

_REFS = ("targetId", "firstKeptEntryId", "fromId")  # fields that name another entry
_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3, "gib": 1024**3}


def size_bytes(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def load_tasks(corpus: Path = CORPUS, plain: bool = False) -> list[list[dict[str, Any]]]:
    """The corpus sessions usable as tasks: version 3, every line a JSON object with a
    string id, no duplicate ids (damaged and legacy files are left out). ``plain``: also
    leave out sessions holding a lone surrogate or a number beyond 2**53, which other
    readers refuse (DuckDB's ``read_json_auto``: "invalid high surrogate")."""
    tasks = []
    for path in sorted(corpus.glob("*.jsonl")):
        try:
            lines = [json.loads(x) for x in path.read_bytes().split(b"\n") if x.strip()]
        except ValueError:
            continue
        if not lines or lines[0].get("type") != "session" or lines[0].get("version") != 3:
            continue
        entries = lines[1:]
        ids = [e.get("id") for e in entries]
        if not entries or not all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in entries):
            continue
        if len(set(ids)) != len(ids) or any(e.get("type") == "session" for e in entries):
            continue
        if not _compactions_keep_their_path(entries):
            continue  # a hand-made file that tests that rule: its problems are not a shape
        if plain and any(_unusual(line) for line in lines):
            continue
        tasks.append(entries)
    if not tasks:
        raise FileNotFoundError(f"no usable corpus sessions in {corpus}")
    return tasks


def _unusual(value: Any) -> bool:
    """A lone surrogate in a string or key, or a number beyond 2**53, anywhere in ``value``."""
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return not abs(value) <= 2**53
    if isinstance(value, dict):
        return any(_unusual(k) or _unusual(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_unusual(v) for v in value)
    return False


def _compactions_keep_their_path(entries: list[dict[str, Any]]) -> bool:
    parent = {e["id"]: e.get("parentId") for e in entries}
    for e in entries:
        if e.get("type") != "compaction":
            continue
        kept = e.get("firstKeptEntryId")
        x: Any = e["id"]
        seen = set()
        while isinstance(x, str) and x not in seen and x != kept:
            seen.add(x)
            x = parent.get(x)
        if not isinstance(kept, str) or x != kept:
            return False
    return True


class _Clock:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.t = datetime(2025, 9, 1, 8, 0, tzinfo=timezone.utc)

    def tick(self) -> tuple[str, int]:
        self.t += timedelta(milliseconds=self.rng.randint(200, 40_000))
        ms = int(self.t.timestamp() * 1000)
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z", ms


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # lone surrogates, integers beyond 64 bits: json writes both
        return json.dumps(value, separators=(",", ":")).encode()


def _scaled(msg: dict[str, Any], scale: float, rng: random.Random) -> dict[str, Any]:
    """A tool result with each text block's text repeated ``scale`` times (rounded
    at random, so the mean is ``scale``)."""
    content = msg.get("content")
    if msg.get("role") != "toolResult" or not isinstance(content, list):
        return msg
    out = []
    for block in content:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            k = int(scale) + (rng.random() < scale - int(scale))
            block = {**block, "text": block["text"] * max(k, 1)}
        out.append(block)
    return {**msg, "content": out}


def generate(out: str | os.PathLike[str], size: int, seed: int = 1, corpus: Path = CORPUS,
             scale: float = 1.0, tasks: list[list[dict[str, Any]]] | None = None,
             clock: _Clock | None = None, cwd: str = "/home/user/history",
             session_id: str | None = None, whole_tasks: bool = True) -> dict[str, int]:
    """Write a session of about ``size`` bytes to ``out``; returns counts (and the
    header's ``timestamp`` as ``start``, an ISO string). ``whole_tasks``: the last task
    is written whole (else the session ends where it reaches ``size``, as a session
    left mid-task does)."""
    rng = random.Random(seed)
    tasks = tasks if tasks is not None else load_tasks(corpus)
    clock = clock if clock is not None else _Clock(rng)
    used: set[str] = set()
    all_ids: list[str] = []
    leaf: str | None = None

    def new_id() -> str:
        while True:
            eid = f"{rng.getrandbits(32):08x}"
            if eid not in used:
                used.add(eid)
                return eid

    ts, _ = clock.tick()
    header = {"type": "session", "version": 3,
              "id": session_id or f"0199{rng.getrandbits(28):07x}-0000-7000-8000-{seed:012x}",
              "timestamp": ts, "cwd": cwd}
    written = 0
    counts = {"entries": 0, "tasks": 0, "branch_roots": 0, "new_roots": 0}
    tmp = Path(f"{os.fspath(out)}.{os.getpid()}.part")
    with open(tmp, "wb") as f:
        line = _dumps(header) + b"\n"
        f.write(line)
        written += len(line)
        while written < size:
            task = tasks[rng.randrange(len(tasks))]
            counts["tasks"] += 1
            u = rng.random()
            if u < 0.80 or not all_ids:
                attach = leaf
            elif u < 0.95:
                attach = all_ids[rng.randrange(len(all_ids))]
                counts["branch_roots"] += 1
            else:
                attach = None
                counts["new_roots"] += 1
            mapping = {e["id"]: new_id() for e in task}
            for e in task:
                if not whole_tasks and written >= size:
                    break
                e2 = dict(e)
                e2["id"] = mapping[e["id"]]
                parent = e.get("parentId")
                e2["parentId"] = mapping.get(parent, attach) if isinstance(parent, str) or parent is None else parent
                for key in _REFS:
                    if isinstance(e2.get(key), str) and e2[key] in mapping:
                        e2[key] = mapping[e2[key]]
                ts, ms = clock.tick()
                e2["timestamp"] = ts
                msg = e2.get("message")
                if isinstance(msg, dict) and "timestamp" in msg:
                    e2["message"] = msg = {**msg, "timestamp": ms}
                if isinstance(msg, dict) and scale != 1.0:
                    e2["message"] = _scaled(msg, scale, rng)
                line = _dumps(e2) + b"\n"
                f.write(line)
                written += len(line)
                all_ids.append(e2["id"])
                counts["entries"] += 1
            leaf = all_ids[-1]
    os.replace(tmp, out)
    counts["bytes"] = written
    counts["start"] = header["timestamp"]
    return counts


def history(root: str | os.PathLike[str], size: int, sessions: int, seed: int = 1, corpus: Path = CORPUS,
            scale: float = 1.0, projects: int = 12, plain: bool = False) -> dict[str, int]:
    """Write ``sessions`` sessions of about ``size`` bytes in all under ``root`` in
    Pi's layout; returns counts. Sizes are log-normal (sigma 1.6) scaled to ``size``,
    at least 2 KB each; a session's project is drawn with weight 1/rank. ``plain``: see
    :func:`load_tasks`."""
    rng = random.Random(seed)
    tasks = load_tasks(corpus, plain)
    clock = _Clock(rng)
    raw = [rng.lognormvariate(0.0, 1.6) for _ in range(sessions)]
    sizes = [max(2000, int(size * r / sum(raw))) for r in raw]
    names = [f"{w}{i}" for i, w in enumerate(rng.sample(["api", "web", "infra", "ml", "docs", "cli", "app", "lib",
                                                         "data", "ops", "sdk", "site", "tool", "kit"], k=min(14, projects)))]
    names += [f"proj{i}" for i in range(len(names), projects)]
    weights = [1 / (k + 1) for k in range(projects)]
    total = {"sessions": 0, "entries": 0, "bytes": 0}
    for n, want in enumerate(sizes):
        cwd = f"/home/user/{rng.choices(names, weights)[0]}"
        folder = Path(root) / ("--" + cwd.strip("/").replace("/", "-") + "--")
        folder.mkdir(parents=True, exist_ok=True)
        sid = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-7{rng.getrandbits(12):03x}-8{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
        clock.t += timedelta(minutes=rng.randint(1, 600))
        tmp = folder / f".{n}.jsonl.part"
        got = generate(tmp, want, seed=rng.getrandbits(32), scale=scale, tasks=tasks, clock=clock, cwd=cwd,
                       session_id=sid, whole_tasks=False)
        stamp = str(got["start"]).replace(":", "-").replace(".", "-")
        os.replace(tmp, folder / f"{stamp}_{sid}.jsonl")
        total["sessions"] += 1
        total["entries"] += int(got["entries"])
        total["bytes"] += int(got["bytes"])
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("size")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--sessions", type=int, default=0, help="write a history of N sessions under OUT")
    p.add_argument("--projects", type=int, default=12)
    p.add_argument("--plain", action="store_true", help="only sessions every JSON reader takes (for DuckDB)")
    a = p.parse_args()
    if a.sessions:
        print(history(a.out, size_bytes(a.size), a.sessions, a.seed, scale=a.scale, projects=a.projects,
                      plain=a.plain))
    else:
        print(generate(a.out, size_bytes(a.size), a.seed, scale=a.scale))


if __name__ == "__main__":
    main()
