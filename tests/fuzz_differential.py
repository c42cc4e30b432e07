"""Differential fuzzer over damaged session files (issue 11).

Each case is a Pi-shaped session (content blocks, tool results holding parsed session
lines, labels, compactions, branches, names) from this file's own small generator,
damaged at random: cut short, a torn fragment glued in front of or behind a line, two
or three lines glued into one (blanks or junk between), invalid UTF-8, NUL and CR bytes, a BOM, blank and junk lines, NaN, duplicate
ids, a huge line (past the native scanner's block and map sizes), usage numbers at the
edges of a double (1e308, 1e400, integers beyond 64 bits). For every case:

* both backends open it and agree on everything a reader sees (entries, report, leaf
  by loader rule 13 (agent-core's `leaf` entries among the types), the storage view,
  tree, branch, context, name, usage totals), or both raise ``InvalidSessionError`` at
  the same line, and both catalog readers give the same usage report;
* the file is byte-identical afterwards (reading never writes);
* grown in random pieces, a reader that refreshes after each piece equals a fresh open
  of the same bytes, on each backend;
* no entry is invented: every entry is a whole line of the file, or an object that
  starts at a ``{`` of a *complete* line (rule 4: glued objects, objects behind a torn
  fragment), by a brute-force reading that shares no code with the loader.

Run: ``python tests/fuzz_differential.py --runs 3000 [--seed S]`` (``make fuzz``); a
short run is part of ``make test`` (``tests/test_fuzz_short.py``). A failing case is
written to ``fuzz-failures/`` with its seed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from sessiontree import InvalidSessionError, LoadReportWarning, SessionManager  # noqa: E402

HDR = '{{"type":"session","version":3,"id":"fz-{n}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}}'


def _d(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def session(rng: random.Random, n: int) -> list[bytes]:
    """Lines (without LF) of a session."""
    lines = [HDR.format(n=rng.randrange(1 << 30)).encode()]
    ids: list[str] = []
    for k in range(n):
        eid = f"{rng.randrange(1 << 32):08x}" if rng.random() > 0.05 or not ids else rng.choice(ids)
        parent = None if not ids else (ids[-1] if rng.random() > 0.15 else rng.choice(ids))
        ts = f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}.000Z"
        kind = rng.choice(["user", "assistant", "assistant", "tool", "label", "compaction", "custom", "info", "model",
                           "leaf", "tools"])
        base: dict[str, Any] = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts}
        if kind == "user":
            base["message"] = {"role": "user", "content": rng.choice(["hi", "é中\u2028x", "a" * rng.randrange(300)]), "timestamp": k}
        elif kind == "assistant":
            blocks = [{"type": "text", "text": "t" * rng.randrange(200)} for _ in range(rng.randrange(1, 4))]
            base["message"] = {"role": "assistant", "content": blocks, "provider": "p", "model": "m", "timestamp": k}
            if rng.random() < 0.5:  # usage at the edges of a double (issue 24): spelt as JSON numbers below
                base["message"]["usage"] = {"input": "N0", "output": rng.randrange(100), "cost": {"total": "N1"}}
                edges = ["1e308", "-1e308", "1e400", "-1e400", "1.7976931348623157e308", "0.1", "3",
                         "99999999999999999999999999999", "-0.0"]
                lines.append(_d(base).replace(b'"N0"', rng.choice(edges).encode())
                             .replace(b'"N1"', rng.choice(edges).encode()))
                ids.append(eid)
                continue
        elif kind == "tool":
            nested = [
                {"type": "message", "id": f"n{rng.randrange(1 << 20):05x}", "parentId": None, "timestamp": ts,
                 "message": {"role": "user", "content": "inner", "timestamp": 0}}
                for _ in range(rng.randrange(1, 3))
            ]
            base["message"] = {"role": "toolResult", "toolCallId": "c", "toolName": "read",
                               "content": [{"type": "text", "text": "r"}], "details": {"entries": nested},
                               "isError": False, "timestamp": k}
        elif kind == "label" and ids:
            base = {"type": "label", "id": eid, "parentId": parent, "timestamp": ts, "targetId": rng.choice(ids),
                    "label": rng.choice(["L", "", None])}
        elif kind == "compaction" and ids:
            base = {"type": "compaction", "id": eid, "parentId": parent, "timestamp": ts, "summary": "s",
                    "firstKeptEntryId": rng.choice(ids + [eid]), "tokensBefore": 5}
        elif kind == "custom":
            base = {"type": "custom", "customType": "x", "data": {"k": [1, 2]}, "id": eid, "parentId": parent, "timestamp": ts}
        elif kind == "leaf":  # agent-core's leaf move: to an entry, null, or nothing earlier
            target = rng.choice(ids + [None, eid, "nowhere", 3]) if ids else rng.choice([None, eid])
            base = {"type": "leaf", "id": eid, "parentId": parent, "timestamp": ts, "targetId": target}
            if rng.random() < 0.05:
                del base["targetId"]
        elif kind == "tools":
            base = {"type": "active_tools_change", "id": eid, "parentId": parent, "timestamp": ts,
                    "activeToolNames": rng.choice([["read"], [], ["bash", "edit"], "not a list"])}
        elif kind == "info":
            base = {"type": "session_info", "id": eid, "parentId": parent, "timestamp": ts, "name": rng.choice(["n", " x ", ""])}
        else:
            base = {"type": "model_change", "id": eid, "parentId": parent, "timestamp": ts, "provider": "p", "modelId": "m"}
        ids.append(eid)
        lines.append(_d(base))
    return lines


def _cut_point(rng: random.Random, data: bytes) -> int:
    """A random position, half the time right after a ``}`` (where a prefix ends after
    a nested object: the shape rule 4 must not read as fragment + entry)."""
    if rng.random() < 0.5:
        closes = [i + 1 for i, b in enumerate(data) if b == 0x7D]
        if closes:
            return rng.choice(closes)
    return rng.randrange(len(data) + 1)


def damage(rng: random.Random, lines: list[bytes]) -> bytes:
    """The lines joined by LF, then damaged in a few random ways."""
    lines = list(lines)
    for _ in range(rng.randrange(0, 5)):
        i = rng.randrange(len(lines))
        op = rng.randrange(12)
        line = lines[i]
        other = rng.choice(lines)
        if op == 0 and len(line) > 2 and len(other) > 1:  # a torn fragment of another line glued in front
            lines[i] = other[: rng.randrange(1, len(other))] + line
        elif op == 1 and i + 1 < len(lines):  # two lines glued into one
            lines[i : i + 2] = [line + lines[i + 1]]
        elif op == 2:  # invalid UTF-8 / NUL / CR inside
            p = rng.randrange(len(line) + 1)
            lines[i] = line[:p] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\r", b"\xef\xbb\xbf"]) + line[p:]
        elif op == 3:
            lines.insert(i, rng.choice([b"", b"  ", b"\r", b"junk {", b"[1,2]", b'{"type":"x","id":NaN}', b"null"]))
        elif op == 4:  # a duplicate of another line
            lines.insert(i, rng.choice(lines))
        elif op == 5 and len(line) > 2:  # bytes lost in the middle
            p = rng.randrange(len(line))
            lines[i] = line[:p] + line[p + rng.randrange(1, 40) :]
        elif op == 6:  # a huge line: past the native block (256 KiB) and map (4 MiB) sizes
            size = rng.choice([300_000, 5_000_000])
            lines.insert(i, _d({"type": "custom", "customType": "big", "data": "h" * size, "id": f"big{rng.randrange(999)}",
                                "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z"}))
        elif op == 7:
            lines[i] = line + b"\r"
        elif op == 8 and i == 0:
            lines[0] = b"\xef\xbb\xbf" + line
        elif op == 9:  # a nested object of the line standing as a line of its own
            p = line.find(b'{"type":', 1)
            if p > 0:
                lines.insert(i + 1, line[p:])
        elif op == 10 and i + 2 < len(lines):  # three lines glued, blanks or junk between
            sep = rng.choice([b"", b" ", b"\r", b"junk", b"[1,", b'{"a":'])
            lines[i : i + 3] = [line + sep + lines[i + 1] + rng.choice([b"", b"\t"]) + lines[i + 2]]
        elif op == 11 and len(other) > 1:  # a line, then a torn piece of another (later ended)
            lines[i] = line + other[: rng.randrange(1, len(other))]
    data = b"\n".join(lines) + b"\n"
    r = rng.random()
    if r < 0.35:
        data = data[: _cut_point(rng, data)]  # cut short (a crash)
    elif r < 0.5:
        data = data[:-1]  # no final LF
    return data


def _tree(mgr: SessionManager) -> list[tuple[int, str, str | None]]:
    out: list[tuple[int, str, str | None]] = []
    stack = [(n, 0) for n in reversed(mgr.get_tree())]
    while stack:
        node, depth = stack.pop()
        out.append((depth, node.entry["id"], node.label))
        stack.extend((c, depth + 1) for c in reversed(node.children))
    return out


def facts(mgr: SessionManager) -> dict[str, Any]:
    ctx = mgr.build_session_context()
    return {
        "entries": mgr.get_entries(),
        "report": [(i.kind, i.line, i.offset, i.ids, i.detail) for i in mgr.load_report],
        "leaf": mgr.leaf_id,
        "header": mgr.get_header(),
        "tree": _tree(mgr),
        "branch": [e["id"] for e in mgr.get_branch()],
        "context": (ctx.messages, ctx.thinking_level, ctx.model, ctx.active_tool_names),
        "name": mgr.get_session_name(),
        "labels": {e["id"]: mgr.get_label(e["id"]) for e in mgr.get_entries()},
        # agent-core's storage view of the same session (`_session_storage`).
        "storage": (mgr.storage.get_leaf_id(), [e["id"] for e in mgr.storage.get_path_to_root(mgr.storage.get_leaf_id())],
                    {e["id"]: mgr.storage.get_label(e["id"]) for e in mgr.get_entries()}),
        "usage": repr(mgr.get_usage_totals()),  # repr: NaN (inf + -inf) equals itself
    }


def snapshot(path: Path, backend: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        try:
            mgr = SessionManager.open(str(path), backend=backend)
        except InvalidSessionError as e:
            return ("InvalidSessionError", e.line, e.offset)
    try:
        return facts(mgr)
    finally:
        mgr.close()


def usage_report(path: Path, backend: str) -> str:
    """``sessiontree usage session`` of the one file, read by ``backend``'s catalog reader
    (the record order differs between the two readers; the sums must not: issue 24)."""
    from datetime import timezone

    from sessiontree import catalog

    folder = path.parent / "usage"
    folder.mkdir(exist_ok=True)
    (folder / "u.jsonl").write_bytes(path.read_bytes())
    old = os.environ.get("SESSIONTREE_BACKEND")
    os.environ["SESSIONTREE_BACKEND"] = backend
    try:
        return repr(catalog.usage("session", [str(folder)], no_cache=True, tz=timezone.utc))
    finally:
        if old is None:
            del os.environ["SESSIONTREE_BACKEND"]
        else:
            os.environ["SESSIONTREE_BACKEND"] = old


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def _loads(raw: bytes) -> Any:
    def no_constants(name: str) -> Any:
        raise ValueError(name)

    return json.loads(raw.decode("utf-8", "replace"), parse_constant=no_constants)


_BRUTE = json.JSONDecoder(parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))


def possible_entries(data: bytes) -> set[str]:
    """Brute force, independent of the loader: every object an entry may be, i.e. a
    whole physical line (LF-ended, or the unterminated last piece), or an object that
    starts at any ``{`` of a *complete* line, wherever it ends (rule 4: glued objects,
    and those behind a torn fragment)."""
    out: set[str] = set()
    pieces = data.split(b"\n")
    for k, raw in enumerate(pieces):
        complete = k + 1 < len(pieces)
        if k == 0 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if complete and raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            obj = _loads(raw)
            if isinstance(obj, dict):
                out.add(_canon(obj))
        except (ValueError, RecursionError):
            pass
        if not complete:
            continue
        text = raw.decode("utf-8", "replace")
        p = text.find("{")
        while p >= 0:
            try:
                obj, end = _BRUTE.raw_decode(text, p)
            except (ValueError, RecursionError):
                obj = None
            if isinstance(obj, dict):
                out.add(_canon(obj))
            p = text.find("{", p + 1)
    return out


def _migrates(data: bytes) -> bool:
    """The first header-shaped object asks for migration (no version, or one below 3):
    then entries get ids the migration makes, and are not lines of the file as such.
    The header may be a line or glued behind torn bytes (rule 3), with a key that
    invalid UTF-8 made another (``"ver\\xc3sion"``: no version, so version 1)."""
    for raw in data.split(b"\n"):
        raw = raw.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r")
        try:
            objs = [_loads(raw)]
        except (ValueError, RecursionError):
            text, objs = raw.decode("utf-8", "replace"), []
            p = text.find("{")
            while p >= 0:
                try:
                    objs.append(_BRUTE.raw_decode(text, p)[0])
                except (ValueError, RecursionError):
                    pass
                p = text.find("{", p + 1)
        for obj in objs:
            if isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str):
                v = obj.get("version")
                return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v < 3)
    return False


def check_case(data: bytes, rng: random.Random, folder: Path) -> None:
    p = folder / "case.jsonl"
    p.write_bytes(data)
    digest = hashlib.sha256(data).digest()
    py = snapshot(p, "python")
    nat = snapshot(p, "native")
    assert py == nat, "the backends disagree"
    assert usage_report(p, "python") == usage_report(p, "native"), "the usage reports disagree"
    assert hashlib.sha256(p.read_bytes()).digest() == digest, "reading wrote to the file"
    if isinstance(py, dict) and not _migrates(data):
        possible = possible_entries(data)
        invented = [e["id"] for e in py["entries"] if _canon(e) not in possible]
        assert not invented, f"invented entries {invented}"
    # Grown in pieces, refreshed after each: equal to a fresh open at every step.
    # Pieces end after a LF or inside a line that is not (yet) a whole JSON value: a
    # reader may accept a complete object on a last line without LF, and if a writer
    # then continues that line, a fresh open reads it differently (ARCHITECTURE.md,
    # "A complete object on a last line without \n is accepted"; our writer never
    # continues a line).
    def boundary(p: int) -> bool:
        if p == 0 or data[p - 1] == 0x0A:
            return True
        start = data.rfind(b"\n", 0, p) + 1
        try:  # as the loader decodes it: invalid UTF-8 replaced, not a reason to refuse
            _loads(data[start:p].strip(b" \t\r").removeprefix(b"\xef\xbb\xbf") or b"x")
        except (ValueError, RecursionError):
            return True
        return False

    ends = sorted({p for p in (_cut_point(rng, data) for _ in range(8)) if boundary(p)})
    cut, pieces = (ends[0], ends[1:]) if ends else (len(data), [])
    for backend in ("python", "native"):
        g = folder / f"grow-{backend}.jsonl"
        g.write_bytes(data[:cut])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadReportWarning)
            try:
                reader = SessionManager.open(str(g), backend=backend)
            except InvalidSessionError:
                continue
        try:
            at = cut
            for end in pieces + [len(data)]:
                with open(g, "ab") as f:
                    f.write(data[at:end])
                at = end
                reader.refresh()
                got = facts(reader)
                want = snapshot(g, backend)
                if isinstance(want, tuple):
                    break  # a header only complete now: a fresh open still refuses it
                assert got == want, f"{backend}: refreshed at {end} != fresh open"
        finally:
            reader.close()


def run(runs: int, seed: int, out: Path | None = None, verbose: bool = False) -> int:
    """``runs`` cases from ``seed``; returns how many failed (each saved to ``out``)."""
    failed = 0
    with tempfile.TemporaryDirectory(prefix="sessiontree-fuzz-") as tmp:
        folder = Path(tmp)
        for k in range(runs):
            case_seed = seed * 1_000_003 + k
            rng = random.Random(case_seed)
            data = b""
            try:
                data = damage(rng, session(rng, rng.randrange(1, 40)))
                check_case(data, rng, folder)
            except Exception as e:  # noqa: BLE001 - every failure is a finding
                failed += 1
                if out is not None:
                    out.mkdir(parents=True, exist_ok=True)
                    (out / f"case-{case_seed}.jsonl").write_bytes(data)
                print(f"case {case_seed}: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
            if verbose and (k + 1) % 200 == 0:
                print(f"{k + 1} cases, {failed} failed", file=sys.stderr)
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(3), "big"))
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    args = ap.parse_args(argv)
    failed = run(args.runs, args.seed, args.out, verbose=True)
    print(f"differential fuzzer: seed {args.seed}, {args.runs} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
