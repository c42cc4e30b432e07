"""Is a Python reader fast enough for version 4 files? (``sessiontree/v4.py``'s choice.)

Writes a generated harness session (``generate_session(harness=True)``) of ``--size``
bytes, the same session as a v4 file (entries on lane ``main`` with one shared ``seq``,
leaf moves as ``lane`` lines, labels and names as facts, compactions with an empty
``retainedTail``), then times, best of ``--repeat`` in this process: ``read_v4`` + the
context of ``main``, against ``SessionManager.open`` + ``build_session_context`` of the
v3 file on each backend.

Run: ``.venv/bin/python benches/v4_read.py --size 10MB``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sessiontree import SessionManager
from sessiontree.generate import generate_session, parse_size
from sessiontree.v4 import read_v4


def to_v4(v3: Path, out: Path) -> None:
    lines = [x for x in v3.read_text("utf-8").split("\n") if x]
    head = json.loads(lines[0])
    rows: list[dict[str, Any]] = [{"kind": "header", "version": 4, "id": head["id"], "createdAt": 1, "cwd": head["cwd"]}]
    seq = 0
    up: dict[str, Any] = {}  # a v3 entry that is no v4 entry -> the entry its children hang on
    for raw in lines[1:]:
        e = json.loads(raw)
        seq += 1
        t = e["type"]
        e["parentId"] = up.get(e["parentId"], e["parentId"])
        if t in ("leaf", "label", "session_info"):
            up[e["id"]] = e["parentId"]
        if t == "leaf":
            rows.append({"kind": "lane", "seq": seq, "lane": "main", "leafId": e["targetId"]})
        elif t == "label":
            rows.append({"kind": "fact", "seq": seq, "fact": "label", "targetId": e["targetId"],
                         **({"label": e["label"]} if "label" in e else {})})
        elif t == "session_info":
            rows.append({"kind": "fact", "seq": seq, "fact": "name", "name": e.get("name", "")})
        else:
            if t == "custom_message":
                e = {"type": "custom", "id": e["id"], "parentId": e["parentId"], "customType": e["customType"]}
            elif t == "compaction":
                e.pop("firstKeptEntryId", None)
                e["retainedTail"] = []
            e.pop("timestamp", None)
            rows.append({"kind": "entry", "lane": "main", **e, "seq": seq, "timestamp": seq})
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", default="10MB")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        v3, v4 = Path(tmp) / "v3.jsonl", Path(tmp) / "v4.jsonl"
        generate_session(v3, size_bytes=parse_size(args.size), seed=4, harness=True)
        to_v4(v3, v4)
        s = read_v4(v4)
        assert not s.report, s.report[:3]

        def v4_read() -> None:
            read_v4(v4).context()

        def v3_open(backend: str) -> Any:
            def run() -> None:
                with SessionManager.open(str(v3), backend=backend) as sm:
                    sm.build_session_context()
            return run

        print(f"v4 file {v4.stat().st_size / 1e6:.1f} MB ({len(s.entries):,} entries), "
              f"v3 file {v3.stat().st_size / 1e6:.1f} MB; best of {args.repeat}")
        print(f"read_v4 + context (Python):          {best(v4_read, args.repeat) * 1e3:8.1f} ms")
        for backend in ("python", "native"):
            print(f"v3 open + context ({backend:6}):          {best(v3_open(backend), args.repeat) * 1e3:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
