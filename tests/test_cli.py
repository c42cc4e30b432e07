"""The ``sessiontree`` command, run as a real subprocess (``python -m sessiontree``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontree import SessionManager, convert_to_llm
from sessiontree.generate import generate_session
from sessiontree.view import FOLD_MARK

from _shared import default_signals

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.pop("COLUMNS", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, encoding="utf-8", errors="replace")


def assert_one_line_error(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0]


@pytest.fixture(scope="module")
def gen_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "gen.jsonl"
    generate_session(path, size_bytes=2_000_000, seed=21)
    return path


@pytest.fixture(scope="module")
def deep_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "deep.jsonl"
    generate_session(path, entries=20_000, seed=5, payload_scale=0.005)
    return path


def test_help_and_module_entry() -> None:
    p = run("--help")
    assert p.returncode == 0 and "generate" in p.stdout and "context" in p.stdout


def test_info(corpus_dir: Path, backend: str) -> None:
    path = corpus_dir / "hand-labels-names.jsonl"
    p = run("info", str(path), "--backend", backend)
    assert p.returncode == 0, p.stderr
    assert "Third name (written on the first branch, last in file)" in p.stdout
    assert f"with the {backend} backend" in p.stdout
    assert "\x1b[" not in p.stdout  # no colour in a pipe
    data = json.loads(run("info", str(path), "--json", "--backend", backend).stdout)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()[1:]]
    assert data["entries"] == len(lines)
    assert data["byType"]["label"] == sum(1 for e in lines if e["type"] == "label")
    assert data["leafId"] == lines[-1]["id"]
    assert data["branchPoints"] >= 1 and data["leaves"] >= 2
    assert data["labels"]["f61dfb66"] == '🏷️ emoji label with "quotes"'
    assert data["backend"] == backend and data["problems"] == 0


def test_info_tokens_and_cost(corpus_dir: Path) -> None:
    path = corpus_dir / "hand-linear-tools.jsonl"
    data = json.loads(run("info", str(path), "--json").stdout)
    usages = [json.loads(x)["message"]["usage"] for x in path.read_text(encoding="utf-8").splitlines()[1:]
              if '"role":"assistant"' in x]
    assert data["tokens"]["output"] == sum(u["output"] for u in usages)
    assert data["cost"] == pytest.approx(sum(u["cost"]["total"] for u in usages), abs=1e-6)


def test_tree_corpus(corpus_dir: Path) -> None:
    path = corpus_dir / "hand-branches.jsonl"
    p = run("tree", str(path), "--full", "--width", "70")
    assert p.returncode == 0, p.stderr
    ids = [json.loads(x)["id"] for x in path.read_text(encoding="utf-8").splitlines()[1:]]
    out = p.stdout
    for i in ids:
        assert i in out
    assert len(out.splitlines()) == len(ids)
    assert f"* {ids[-1]}" in out and "← leaf" in out
    assert "├─" in out and "└─" in out
    assert max(len(line) for line in out.splitlines()) <= 70
    rows = json.loads(run("tree", str(path), "--json").stdout)
    assert sorted(r["id"] for r in rows) == sorted(ids)
    assert [r["id"] for r in rows if r["leaf"]] == [ids[-1]]


def test_tree_deep_session_folds(deep_file: Path) -> None:
    p = run("tree", str(deep_file))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert FOLD_MARK in p.stdout and len(lines) < 5000
    assert sum("← leaf" in line for line in lines) == 1
    full = run("tree", str(deep_file), "--full")
    assert full.returncode == 0, full.stderr
    assert len([x for x in full.stdout.splitlines() if "roots; the one holding" not in x]) == 20_000


def test_tree_into_closed_pipe(deep_file: Path) -> None:
    p = subprocess.run(f"{sys.executable} -m sessiontree tree --full {deep_file} | head -n 2",
                       shell=True, capture_output=True, text=True, timeout=120)
    assert len(p.stdout.splitlines()) == 2
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr


@pytest.mark.filterwarnings("ignore::sessiontree.LoadReportWarning")
def test_context(corpus_dir: Path) -> None:
    path = corpus_dir / "hand-compaction.jsonl"
    p = run("context", str(path))
    assert p.returncode == 0, p.stderr
    assert "compactionSummary" in p.stdout
    with SessionManager.open(str(path)) as sm:
        ctx = sm.build_session_context()
        leaf = sm.leaf_id
        ctx_m1 = sm.build_session_context(leaf_id="4aa74d4e")
    data = json.loads(run("context", str(path), "--json").stdout)
    assert data["leafId"] == leaf and data["messages"] == ctx.messages
    assert data["thinkingLevel"] == ctx.thinking_level and data["model"] == ctx.model
    llm = json.loads(run("context", str(path), "--json", "--llm").stdout)
    assert llm["messages"] == convert_to_llm(ctx.messages)
    at = json.loads(run("context", str(path), "--json", "--leaf", "4aa74d4e").stdout)
    assert at["messages"] == ctx_m1.messages
    assert_one_line_error(run("context", str(path), "--leaf", "deadbeef"), "deadbeef")


def test_leaf_takes_a_unique_prefix(corpus_dir: Path, tmp_path: Path) -> None:
    """``tree`` shows ids cut to 8 characters; ``context``/``fork --leaf`` take a prefix."""
    from _shared import open_quiet

    path = corpus_dir / "hand-compaction.jsonl"  # its load report is not this test's
    with open_quiet(path, "auto") as sm:
        ids = [e["id"] for e in sm.get_entries()]
        want = sm.build_session_context(leaf_id="4aa74d4e").messages
        assert sm.leaf_id == ids[-1]
    prefix = next(k for k in range(1, 9) if sum(i.startswith("4aa74d4e"[:k]) for i in ids) == 1)
    at = json.loads(run("context", str(path), "--json", "--leaf", "4aa74d4e"[:prefix]).stdout)
    assert at["leafId"] == "4aa74d4e" and at["messages"] == want
    leaf = ids[-1]
    cut = next(k for k in range(1, len(leaf) + 1) if sum(i.startswith(leaf[:k]) for i in ids) == 1)
    forked = json.loads(run("fork", str(path), "--leaf", leaf[:cut], "--to", str(tmp_path), "--json").stdout)
    assert forked["leafId"] == leaf
    shared = next((a[:1] for a in ids for b in ids if a != b and a[:1] == b[:1]), None)
    if shared is not None:
        assert_one_line_error(run("context", str(path), "--leaf", shared), "ambiguous")


def test_context_tools_folded(corpus_dir: Path) -> None:
    p = run("context", str(corpus_dir / "hand-big-toolresult.jsonl"))
    assert p.returncode == 0, p.stderr
    assert "more lines" in p.stdout and "→ bash(" in p.stdout
    assert len(p.stdout) < 20_000


def test_generated_file_commands(gen_file: Path) -> None:
    info = json.loads(run("info", str(gen_file), "--json").stdout)
    assert info["compactions"] >= 1 and info["branchPoints"] >= 1 and info["problems"] == 0
    ctx = run("context", str(gen_file))
    assert ctx.returncode == 0 and "compactionSummary" in ctx.stdout
    p = run("check", str(gen_file))
    assert p.returncode == 0 and "clean" in p.stdout


def test_check_damaged(tmp_path: Path, corpus_dir: Path) -> None:
    src = corpus_dir / "hand-branches.jsonl"
    lines = src.read_bytes().split(b"\n")
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"\n".join(lines[:3] + [b'{"type":"message","id":"torn'] + lines[3:]))
    p = run("check", str(src), str(damaged))
    assert p.returncode == 1
    assert f"{damaged}:4: invalid_json" in p.stdout
    assert f"{src}: clean" in p.stdout
    data = json.loads(run("check", "--json", str(damaged)).stdout)
    assert data[0]["ok"] is False and data[0]["issues"][0]["line"] == 4
    assert data[0]["issues"][0]["offset"] == sum(len(x) + 1 for x in lines[:3])
    assert run("check", str(src)).returncode == 0


@pytest.mark.parametrize("backend", ["python", "native"])
def test_check_names_a_long_cycles_first_ids(tmp_path: Path, backend: str) -> None:
    """A parent cycle of 3,000 entries: ``check``'s line names the first five ids and
    how many more (``cli.check.ids_text``: one of 300,000 was a 3 MB line); ``--json``
    keeps every id."""
    n = 3_000
    path = tmp_path / "cycle.jsonl"
    rows = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}]
    rows += [{"type": "message", "id": f"e{i:05d}", "parentId": f"e{(i - 1) % n:05d}",
              "timestamp": "2025-01-01T00:00:00.000Z", "message": {"role": "user", "content": "hi", "timestamp": 1}}
             for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = run("check", "--backend", backend, str(path))
    assert p.returncode == 1, p.stderr
    line = next(x for x in p.stdout.splitlines() if ": cycle" in x)
    assert "cycle [e00000, e00001, e00002, e00003, e00004, … and 2,995 more]: parent links form a cycle of 3000" in line
    assert len(line) < 300, len(line)
    data = json.loads(run("check", "--backend", backend, "--json", str(path)).stdout)
    assert data[0]["issues"][0]["ids"] == [f"e{i:05d}" for i in range(n)]


def test_check_not_a_session(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    p = run("check", str(bad))
    assert p.returncode == 1 and "not a session" in p.stdout and ":1" in p.stdout


@pytest.mark.parametrize("command", ["info", "tree", "context", "check", "bench"])
def test_missing_file(tmp_path: Path, command: str) -> None:
    missing = str(tmp_path / "missing.jsonl")
    p = run(command, missing)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    if command != "check":  # check reports on stdout, like its other findings
        assert_one_line_error(p, missing, "no such file")
    assert not os.path.exists(missing)


def test_invalid_header_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"type":"message","id":"x"}\n')
    p = run("info", str(bad))
    assert_one_line_error(p, str(bad), ":1")
    assert bad.read_bytes() == b'{"type":"message","id":"x"}\n'


def test_ls(tmp_path: Path, corpus_dir: Path) -> None:
    for name in ("hand-labels-names.jsonl", "hand-linear-tools.jsonl", "hand-bash.jsonl"):
        shutil.copy(corpus_dir / name, tmp_path / name)
    (tmp_path / "junk.jsonl").write_text("not json\n")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    p = run("ls", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "Third name (written on the first branch, last in file)" in p.stdout
    assert "Please read package.json and then run the tests." in p.stdout
    assert "junk.jsonl" in p.stdout and "empty.jsonl" in p.stdout and "not sessions" in p.stdout
    data = json.loads(run("ls", str(tmp_path), "--json").stdout)
    assert len(data["sessions"]) == 3
    assert {Path(x["path"]).name for x in data["problems"]} == {"junk.jsonl", "empty.jsonl"}
    mods = [s["modified"] for s in data["sessions"]]
    assert mods == sorted(mods, reverse=True)


def test_ls_default_store(tmp_path: Path, corpus_dir: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    folder = tmp_path / "agent" / "sessions" / ("--" + str(project)[1:].replace("/", "-") + "--")
    folder.mkdir(parents=True)
    shutil.copy(corpus_dir / "hand-bash.jsonl", folder / "a.jsonl")
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    p = subprocess.run([sys.executable, "-m", "sessiontree", "ls", "--json"], cwd=project, env={**os.environ, **env},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [Path(s["path"]).name for s in json.loads(p.stdout)["sessions"]] == ["a.jsonl"]
    p = subprocess.run([sys.executable, "-m", "sessiontree", "ls", "--all", "--json"], cwd=project,
                       env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert len(json.loads(p.stdout)["sessions"]) == 1


def test_fork(tmp_path: Path, corpus_dir: Path) -> None:
    src = corpus_dir / "hand-branches.jsonl"
    raw = src.read_bytes().split(b"\n")
    entries = {json.loads(x)["id"]: (x, json.loads(x)) for x in raw[1:] if x}
    leaf = list(entries)[len(entries) // 2]
    while entries[leaf][1]["type"] != "message" or entries[leaf][1]["message"]["role"] != "assistant":
        leaf = list(entries)[list(entries).index(leaf) + 1]
    out = tmp_path / "out"
    out.mkdir()
    p = run("fork", str(src), "--leaf", leaf, "--to", str(out), "--json")
    assert p.returncode == 0, p.stderr
    new = Path(json.loads(p.stdout)["path"])
    assert new.parent == out and new.exists()
    lines = new.read_bytes().rstrip(b"\n").split(b"\n")
    header = json.loads(lines[0])
    assert header["parentSession"] and header["version"] == 3
    path_ids, cur = [], leaf
    while cur is not None:
        path_ids.append(cur)
        cur = entries[cur][1]["parentId"]
    assert [json.loads(x)["id"] for x in lines[1:] if json.loads(x)["type"] != "label"] == path_ids[::-1]
    for x in lines[1:]:
        e = json.loads(x)
        if e["id"] in entries:
            assert x == entries[e["id"]][0]  # copied byte for byte
    assert_one_line_error(run("fork", str(src), "--leaf", "nothere1", "--to", str(out)), "nothere1")


def test_migrate(tmp_path: Path, corpus_dir: Path) -> None:
    v1 = tmp_path / "old.jsonl"
    shutil.copy(corpus_dir / "raw-v1" / "handmade-v1-edge.jsonl", v1)
    original = v1.read_bytes()
    p = run("migrate", str(v1))
    assert p.returncode == 0, p.stderr
    assert json.loads(v1.read_bytes().split(b"\n", 1)[0])["version"] == 3
    backups = [f for f in tmp_path.iterdir() if f.name != "old.jsonl"]
    assert any(b.read_bytes() == original for b in backups)
    again = run("migrate", str(v1))
    assert again.returncode == 0 and "already" in again.stdout
    data = json.loads(run("migrate", str(v1), "--json").stdout)
    assert data["migrated"] is False and data["backup"] is None


def test_generate_cli(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    p = run("generate", str(a), "--size", "1MB", "--seed", "9")
    assert p.returncode == 0, p.stderr and "wrote" in p.stdout
    run("generate", str(b), "--size", "1MB", "--seed", "9")
    assert a.read_bytes() == b.read_bytes() and a.stat().st_size >= 1_000_000
    data = json.loads(run("generate", str(a), "--entries", "100", "--json", "--force").stdout)
    assert data["entries"] == 100 and len(a.read_bytes().splitlines()) == 101
    assert_one_line_error(run("generate", str(a), "--size", "lots"), "not a size")
    assert run("generate", str(a)).returncode == 2  # --size or --entries is required


def test_bench(gen_file: Path) -> None:
    from _shared import native_available

    backends = "python,native" if native_available() else "python"
    p = run("bench", str(gen_file), "--backends", backends, "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    for b in backends.split(","):
        r = data["results"][b]
        assert r["backend"] == b and r["open"] > 0 and r["rssPeak"] > 0 and r["entries"] > 0
        # Each time row counts from the start of the open (a call's own time would
        # compare a python call on decoded dicts with a native first decode).
        steps = ("open", "context", "branch", "tree")
        assert list(r["elapsed"]) == list(steps)
        assert [r["elapsed"][k] for k in steps] == pytest.approx([sum(r[x] for x in steps[: i + 1])
                                                                  for i in range(4)])
    text = run("bench", str(gen_file), "--backends", backends)
    assert "open (index the file)" in text.stdout and "+ get_tree" in text.stdout and "peak RSS" in text.stdout


def test_demo_as_make_runs_it(tmp_path: Path) -> None:
    """What ``make demo`` runs (``python -m sessiontree.demo``), shrunk to 3 MB."""
    env = {**os.environ, "SESSIONTREE_DEMO_SIZE": "3MB", "SESSIONTREE_DEMO_CACHE": str(tmp_path)}
    env.pop("COLUMNS", None)
    p = subprocess.run([sys.executable, "-m", "sessiontree.demo"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for cmd in ("generate", "info", "tree", "context", "check", "bench"):
        assert f"$ sessiontree {cmd}" in p.stdout
    assert "Traceback" not in p.stderr
    assert "demo finished" in p.stdout
    assert len(list(tmp_path.glob("demo-*.jsonl"))) == 1
    second = subprocess.run([sys.executable, "-m", "sessiontree.demo"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert second.returncode == 0 and "using the cached session" in second.stdout


# ----------------------------------------------------------------- hostile session files

_HDR = {"type": "session", "version": 3, "id": "0197a0b0-0000-7000-8000-000000000000",
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
# Every kind of text that must never reach a terminal raw.
EVIL = "E\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x00NUL\x08BS\rCR\x9bCSI\x85NEL\u202eRLO\u2066LRI\u2028LS\u2029PS\x7fDEL"
_FORBIDDEN = set(map(chr, [*range(0x00, 0x20), *range(0x7f, 0xa0)])) - {"\n"}
_FORBIDDEN |= set("\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _write_session(path: Path, entries: list[dict], header: dict | None = None) -> Path:
    lines = [header or _HDR]
    prev = None
    for i, e in enumerate(entries):
        e = {"id": e.pop("id", f"e{i:07d}"), "parentId": e.pop("parentId", prev),
             "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z", **e}
        prev = e["id"]
        lines.append(e)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(("tokens", "want"), [
    ({"input": 10**400, "output": -0.5}, float("inf")), ({"input": -10**400, "output": 1.5}, float("-inf")),
    ({"input": 1.5, "output": 10**400}, float("inf")), ({"input": -10**400, "output": float("inf")}, float("inf")),
    ({"input": 3, "output": 4, "cacheRead": 5, "cacheWrite": 6}, 18),
    ({"input": 10**400, "output": 0.5, "cacheRead": -10**400}, 0.5), ({"input": 10**400, "output": -10**400,
                                                                      "cacheRead": 0.5}, 0.5),
    ({"input": 0.5, "output": 10**400, "cacheRead": -10**400}, 0.5), ({"input": 1.5, "output": 2}, 3.5),
    ({"input": True, "output": True}, 2)])
def test_pis_total_past_the_floats_keeps_the_sign_of_what_is_largest(tokens: dict[str, object], want: float) -> None:
    """``UsageTotals.pi_total`` where an integer too large for a float meets a float:
    the exact sum rounded once, whatever the order, unless a float is infinite
    (adversaries 61b, 61c: 10**400 + -0.5 was -inf; 10**400 + 0.5 - 10**400 depended
    on the order)."""
    from sessiontree.schema import UsageTotals

    assert UsageTotals(tokens=tokens, cost=0, models=[], messages=0).pi_total == want


def test_info_totals_tokens_as_pi_does(tmp_path: Path, backend: str) -> None:
    """Usage records without ``totalTokens`` (453 of the corpus's assistant messages):
    ``info``'s total is input + output + cache read + cache write, as Pi's ``/session``
    (``UsageTotals.pi_total``: ``AgentSession.getSessionStats``), and the records' own sum
    is named beside it where it differs; it said ``total 0`` (fix61, item 5)."""
    path = tmp_path / "s.jsonl"
    head = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}
    rows = [head, {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
                   "message": {"role": "user", "content": "hi", "timestamp": 1}}]
    for i, extra in enumerate(({}, {}, {"totalTokens": 128})):  # the last one records it
        rows.append({"type": "message", "id": f"a{i}", "parentId": rows[-1]["id"],
                     "timestamp": "2025-01-01T00:00:02.000Z",
                     "message": {"role": "assistant", "content": [], "provider": "p", "model": "m",
                                 "stopReason": "stop", "timestamp": 2,
                                 "usage": {"input": 100, "output": 20, "cacheRead": 5, "cacheWrite": 3,
                                           "cost": {"total": 0.01}, **extra}}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = run("info", "--backend", backend, str(path))
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("tokens"))
    assert line.endswith("cache write 9  total 384  (the four added, as Pi's /session; "
                         "the records' totalTokens sum to 128)"), line
    d = json.loads(run("info", "--backend", backend, "--json", str(path)).stdout)
    assert d["tokensTotal"] == 384 and d["tokens"]["totalTokens"] == 128
    # Records whose totalTokens is the four added: one figure, no note.
    path.write_text(path.read_text().replace('"cacheWrite": 3,', '"cacheWrite": 3, "totalTokens": 128,')
                    .replace(', "totalTokens": 128}', "}"))
    line = next(x for x in run("info", "--backend", backend, str(path)).stdout.splitlines() if x.startswith("tokens"))
    assert line.endswith("cache write 9  total 384"), line


def _evil_session(path: Path) -> Path:
    usage = {"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
             "cost": {"total": 0.5}}
    entries = [
        {"type": "message", "message": {"role": "user", "content": EVIL + "\n" + EVIL, "timestamp": 1}},
        {"type": "message", "message": {
            "role": "assistant", "provider": EVIL, "model": EVIL, "stopReason": "error", "errorMessage": EVIL,
            "usage": usage, "timestamp": 2,
            "content": [{"type": "text", "text": EVIL}, {"type": "thinking", "thinking": EVIL},
                        {"type": "toolCall", "id": EVIL, "name": EVIL, "arguments": {EVIL: EVIL, "n": [EVIL]}},
                        {"type": EVIL}]}},
        {"type": "message", "message": {"role": "toolResult", "toolName": EVIL, "toolCallId": EVIL,
                                        "content": [{"type": "text", "text": EVIL}], "isError": True,
                                        "timestamp": 3}},
        {"type": "message", "message": {"role": "bashExecution", "command": EVIL, "output": EVIL,
                                        "exitCode": EVIL, "timestamp": 4}},
        {"type": "model_change", "provider": EVIL, "modelId": EVIL},
        {"type": "thinking_level_change", "thinkingLevel": EVIL},
        {"type": "custom_message", "customType": EVIL, "content": EVIL, "display": True},
        {"type": "custom", "customType": EVIL},
        {"type": "session_info", "name": EVIL},
        {"type": EVIL},
        {"type": "compaction", "summary": EVIL, "firstKeptEntryId": "e0000000", "tokensBefore": EVIL},
        {"type": "branch_summary", "summary": EVIL, "fromId": EVIL},
        {"type": "message", "message": {"role": EVIL, "content": EVIL, "timestamp": 5}},
        {"type": "label", "targetId": "e0000001", "label": EVIL},
        {"type": "label", "targetId": "e0000002", "label": [EVIL]},
        {"type": "message", "message": {"role": "user", "content": "last", "timestamp": 6}},
    ]
    return _write_session(path, entries, {**_HDR, "cwd": EVIL, "parentSession": EVIL})


def _assert_terminal_safe(text: str, color: bool) -> None:
    if color:
        import re

        assert "\x1b[" in text  # really coloured
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # our own SGR styling, nothing else
    bad = sorted({f"U+{ord(c):04X}" for c in text if c in _FORBIDDEN})
    assert not bad, bad


@pytest.mark.parametrize("color", ["never", "always"])
def test_no_terminal_injection_from_session_content(tmp_path: Path, backend: str, color: str) -> None:
    path = _evil_session(tmp_path / "evil.jsonl")
    (tmp_path / "junk.jsonl").write_text("{\"type\":\"session\"" + EVIL + "\n", encoding="utf-8")
    for args in (["tree"], ["tree", "--full"], ["context"], ["context", "--full"], ["context", "--llm"],
                 ["info"], ["check"]):
        p = run(*args, str(path), "--backend", backend, "--color", color)
        assert p.returncode in (0, 1) and "Traceback" not in p.stderr, (args, p.stderr)
        if args != ["check"]:  # check echoes no content (the python backend repr()s the type)
            assert "\\x1b" in p.stdout, args  # shown, as a visible escape
        _assert_terminal_safe(p.stdout, color == "always")
        _assert_terminal_safe(p.stderr, False)
    p = run("ls", str(tmp_path), "--all", "--color", color)
    assert p.returncode == 0 and "\\x1b" in p.stdout
    _assert_terminal_safe(p.stdout, color == "always")
    p = run("context", str(path), "--leaf", EVIL.replace("\x00", ""))  # errors that echo input
    assert_one_line_error(p, "\\x1b")
    _assert_terminal_safe(p.stderr, False)


@pytest.mark.filterwarnings("ignore::sessiontree.LoadReportWarning")
def test_json_output_stays_exact(tmp_path: Path, backend: str) -> None:
    path = _evil_session(tmp_path / "evil.jsonl")
    with SessionManager.open(str(path), backend=backend) as sm:
        ctx = sm.build_session_context()
        labels = {e["id"]: sm.get_label(e["id"]) for e in sm.get_entries() if sm.get_label(e["id"]) is not None}
    p = run("context", str(path), "--json", "--backend", backend)
    assert p.returncode == 0, p.stderr
    _assert_terminal_safe(p.stdout, False)  # JSON escapes, \u202e and all
    assert json.loads(p.stdout)["messages"] == ctx.messages
    info = json.loads(run("info", str(path), "--json", "--backend", backend).stdout)
    assert info["cwd"] == EVIL and info["sessionName"] == EVIL and info["labels"] == labels
    rows = json.loads(run("tree", str(path), "--json", "--backend", backend).stdout)
    assert EVIL in [r["type"] for r in rows]


_DEEP = json.loads("[" * 900 + "1" + "]" * 900)


@pytest.mark.parametrize("odd", [None, 1e300, 10**4000, True, [1, "x"], {"a": {"b": []}}, _DEEP],
                         ids=["null", "float", "bigint", "bool", "list", "dict", "deep"])
def test_any_json_type_in_any_field(tmp_path: Path, backend: str, odd: object) -> None:
    """Every value read from an entry may be any JSON type: no command may crash on it."""
    usage = {k: odd for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")}
    usage["cost"] = {"total": odd}
    entries = [
        {"type": "message", "message": {"role": "user", "content": odd, "timestamp": odd}},
        {"type": "message", "message": {
            "role": "assistant", "provider": odd, "model": odd, "stopReason": "error", "errorMessage": odd,
            "usage": usage, "timestamp": 2,
            "content": [{"type": "text", "text": odd}, {"type": "thinking", "thinking": odd},
                        {"type": "toolCall", "id": odd, "name": odd, "arguments": {"a": odd}},
                        {"type": "image", "data": odd, "mimeType": odd}, {"type": odd}]}},
        {"type": "message", "message": {"role": "toolResult", "toolName": odd, "toolCallId": odd,
                                        "content": [{"type": "text", "text": odd}], "timestamp": 3}},
        {"type": "message", "message": {"role": "bashExecution", "command": odd, "output": odd,
                                        "exitCode": odd, "timestamp": 4}},
        {"type": "message", "message": {"role": odd, "content": odd}},
        {"type": "model_change", "provider": odd, "modelId": odd},
        {"type": "thinking_level_change", "thinkingLevel": odd},
        {"type": "custom_message", "customType": odd, "content": odd, "display": odd},
        {"type": "session_info", "name": odd},
        {"type": odd},
        {"type": "compaction", "summary": odd, "firstKeptEntryId": odd, "tokensBefore": odd},
        {"type": "branch_summary", "summary": odd, "fromId": odd},
        {"type": "label", "targetId": "e0000001", "label": odd},
        {"type": "label", "targetId": odd, "label": "x"},
        {"type": "message", "message": {"role": "assistant", "content": "ok", "usage": usage, "timestamp": 9}},
    ]
    path = _write_session(tmp_path / "odd.jsonl", entries, {**_HDR, "cwd": odd, "parentSession": odd, "x": odd})
    for args in (["info"], ["info", "--json"], ["tree"], ["tree", "--full"], ["tree", "--json"], ["context"],
                 ["context", "--full"], ["context", "--json"], ["context", "--llm"], ["check"], ["ls", str(tmp_path)]):
        where = [] if args[0] == "ls" else [str(path)]
        p = run(*args, *where, "--backend", backend)
        assert p.returncode in (0, 1) and "Traceback" not in p.stderr, (args, p.stderr[-2000:])
        assert p.stdout.strip(), args


# ----------------------------------------------------------------------- generate

def test_generate_never_overwrites_without_force(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    out.write_bytes(b"precious\n")
    p = run("generate", str(out), "--entries", "50")
    assert_one_line_error(p, str(out), "--force")
    assert out.read_bytes() == b"precious\n"
    p = run("generate", str(out), "--entries", "50", "--force")
    assert p.returncode == 0, p.stderr
    assert len(out.read_bytes().splitlines()) == 51
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.jsonl"]  # no temporary left
    assert_one_line_error(run("generate", str(tmp_path / "z.jsonl"), "--size", "0"), "--size")
    assert not (tmp_path / "z.jsonl").exists()


def test_generate_interrupted_leaves_no_partial_file(tmp_path: Path) -> None:
    import signal
    import time

    out = tmp_path / "big.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "sessiontree", "generate", str(out), "--size", "3GB"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            files = list(tmp_path.iterdir())
            if files and sum(f.stat().st_size for f in files) > 1_000_000:
                break
            time.sleep(0.05)
        assert not out.exists() or out.stat().st_size == 0 or proc.poll() is None
        partial_at_out = out.exists()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert not partial_at_out and not out.exists()
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- fork

def _fork_leaf(src: Path) -> str:
    raw = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()[1:]]
    return next(e["id"] for e in raw if e["type"] == "message" and e["message"]["role"] == "assistant")


def test_fork_creates_to_dir_and_shows_the_new_path(tmp_path: Path, corpus_dir: Path) -> None:
    src = tmp_path / "data" / "s.jsonl"
    src.parent.mkdir()
    shutil.copy(corpus_dir / "hand-branches.jsonl", src)
    leaf = _fork_leaf(src)
    to = tmp_path / "new" / "nested" / "dir"
    p = run("fork", str(src), "--leaf", leaf, "--to", str(to))
    assert p.returncode == 0, p.stderr
    made = list(to.iterdir())
    assert len(made) == 1
    assert p.stdout.splitlines() == [str(made[0])]  # the path alone: NEW=$(sessiontree fork ...)
    assert f"into {to};" in p.stderr  # the folder, not the option's name
    # Without --to: the session's folder (Pi's createBranchedSession), said plainly.
    p = run("fork", str(src), "--leaf", leaf)
    assert p.returncode == 0, p.stderr
    new = [f for f in src.parent.iterdir() if f != src]
    assert len(new) == 1 and p.stdout.splitlines() == [str(new[0])]
    assert "source file's folder" in p.stderr
    # A missing leaf creates nothing.
    p = run("fork", str(src), "--leaf", "nothere1", "--to", str(tmp_path / "never"))
    assert_one_line_error(p, "nothere1")
    assert not (tmp_path / "never").exists()


# ------------------------------------------------------------------ backend selection

def test_bogus_backend_variable_is_an_error(corpus_dir: Path) -> None:
    path = corpus_dir / "hand-bash.jsonl"
    p = run("info", str(path), env={"SESSIONTREE_BACKEND": "bogus"})
    assert_one_line_error(p, "SESSIONTREE_BACKEND", "bogus")
    p = run("info", str(path), "--json", env={"SESSIONTREE_BACKEND": "python"})
    assert json.loads(p.stdout)["backend"] == "python"
    p = run("info", str(path), "--json", "--backend", "python", env={"SESSIONTREE_BACKEND": "bogus"})
    assert p.returncode == 0 and json.loads(p.stdout)["backend"] == "python"  # the flag wins


@pytest.mark.filterwarnings("ignore::sessiontree.LoadReportWarning")
def test_library_names_the_bad_backend_variable(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONTREE_BACKEND", "bogus")
    with pytest.raises(ValueError, match="SESSIONTREE_BACKEND.*bogus"):
        SessionManager.open(str(corpus_dir / "hand-bash.jsonl"))
    with pytest.raises(ValueError, match="'nope'"):
        SessionManager.open(str(corpus_dir / "hand-bash.jsonl"), backend="nope")


# ------------------------------------------------------------------------- details

def test_check_names_the_file_once(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    p = subprocess.run([sys.executable, "-m", "sessiontree", "check", "bad.jsonl", "missing.jsonl"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines[0].startswith("bad.jsonl:1: not a session") and str(bad) not in p.stdout
    assert lines[1].startswith("missing.jsonl: cannot read") and lines[1].count("missing.jsonl") == 1


def test_ls_empty_names_the_folder(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    p = subprocess.run([sys.executable, "-m", "sessiontree", "ls"], cwd=project, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    assert str(tmp_path / "agent" / "sessions" / ("--" + str(project)[1:].replace("/", "-") + "--")) in p.stderr
    p = run("ls", str(project))
    assert str(project) in p.stderr


def test_help_and_labels_wording(corpus_dir: Path) -> None:
    p = run("context", "--help")
    for key in ("leafId", "thinkingLevel", "model", "llm", "messages"):
        assert key in p.stdout
    out = run("info", str(corpus_dir / "hand-labels-names.jsonl")).stdout
    assert "labelled entries 5" in out and "set by 11 label entries" in out


def test_bad_flag_shows_the_subcommand_usage(tmp_path: Path) -> None:
    p = run("tree", str(tmp_path / "x.jsonl"), "--bogus")
    assert p.returncode == 2
    assert "usage: sessiontree tree" in p.stderr and "--bogus" in p.stderr


def test_a_missing_argument_names_only_what_is_required() -> None:
    # PATH ... is optional (the current project's sessions): argparse called it required
    # beside the query until it had a default.
    for words, missing in ((["search"], "query"), (["import"], "source")):
        p = run(*words)
        assert p.returncode == 2, p.stderr
        assert f"the following arguments are required: {missing}\n" in p.stderr, p.stderr
        assert "PATH" not in p.stderr.splitlines()[-1]


def test_version() -> None:
    from importlib.metadata import version

    p = run("--version")
    assert p.returncode == 0 and p.stdout == f"sessiontree {version('sessiontree')}\n", p


def test_generate_json_keys_are_camel_case(tmp_path: Path) -> None:
    data = json.loads(run("generate", str(tmp_path / "g.jsonl"), "--entries", "30", "--json").stdout)
    assert {"byType", "byRole", "branchPoints", "leafId", "sessionId", "mbPerSecond"} <= set(data)
    assert not [k for k in data if "_" in k]


def test_help_has_no_rst_literals() -> None:
    for command in ("info", "tree", "context", "ls", "search", "usage", "index", "check", "fork", "migrate",
                    "generate", "bench", "import", "browse", "export"):
        p = run(command, "--help")
        assert p.returncode == 0 and "``" not in p.stdout, command


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_version_to_a_full_disk() -> None:
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "sessiontree", "--version"], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert p.returncode == 1 and p.stderr.strip().splitlines() == ["sessiontree: error: No space left on device"], p


def test_usage_report_names_and_folders() -> None:
    p = run("usage", "yearly")
    assert p.returncode == 2 and "unknown report 'yearly'" in p.stderr, p.stderr
    p = run("usage", "/no/such/folder")
    assert p.returncode == 1 and "/no/such/folder: no such file or folder" in p.stderr, p.stderr


def test_a_reader_that_stops_early_ends_every_command_with_0(tmp_path: Path) -> None:
    """``sessiontree … | head``: rich's console (search) and plain writes (ls, tree) end
    the same way, quietly and with status 0, so ``set -o pipefail`` scripts work."""
    path = tmp_path / "s.jsonl"
    run("generate", str(path), "--entries", "400", "--seed", "3")
    for args in (["search", "the", str(tmp_path), "--no-cache", "--limit", "200"], ["ls", str(tmp_path), "--no-cache"],
                 ["tree", str(path)]):
        proc = subprocess.Popen([sys.executable, "-m", "sessiontree", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read(10)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0 and "Traceback" not in err, (args, err)


def _one_message(folder: Path, text: str) -> Path:
    """``folder/s.jsonl``: a session of one user message holding ``text``."""
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2025-11-07T09:00:00.000Z", "cwd": "/w"},
             {"type": "message", "id": "m1", "parentId": None, "timestamp": "2025-11-07T09:00:01.000Z",
              "message": {"role": "user", "content": text, "timestamp": 1_762_506_001_000}}]
    path = folder / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_a_query_beginning_with_a_dash_is_hinted_after_two_dashes(tmp_path: Path) -> None:
    """``search --foo ROOT``: argparse reads the query as an option it does not know;
    the error says where such a query goes, and that way finds it."""
    path = _one_message(tmp_path, "pass --foo to it")
    p = run("search", "--foo", str(tmp_path), "--no-cache")
    assert p.returncode == 2 and "usage: sessiontree search" in p.stderr, p.stderr
    assert p.stderr.splitlines()[-2:] == [
        "sessiontree search: error: unrecognized arguments: --foo",
        "hint: a query that begins with '-' goes after '--': sessiontree search -- --foo [PATH ...]"], p.stderr
    p = run("search", "--no-cache", "--", "--foo", str(tmp_path))
    assert p.returncode == 0 and "--foo to it" in p.stdout, p.stderr
    assert "hint" not in run("tree", str(path), "--bogus").stderr  # only search's query is meant
    # A misspelt option after a query is that option, not a query (adversary round 54).
    p = run("search", "pass", str(tmp_path), "--limt", "5")
    assert p.returncode == 2 and p.stderr.splitlines()[-1] == "hint: did you mean --limit?", p.stderr


def test_an_unclosed_quote_is_said(tmp_path: Path) -> None:
    """An unclosed quote searches every piece as a word (Pi's rule), and says so."""
    _one_message(tmp_path, 'say "foo and later bar')
    note = ("note: the query's quote is not closed, so each piece was searched as a word (quotes included); "
            'close it to search a phrase: "foo bar"\n')
    for extra in ([], ["--json"]):
        p = run("search", '"foo bar', str(tmp_path), "--no-cache", *extra)
        assert p.returncode == 0 and p.stderr == note, p.stderr
        assert "foo and later bar" in p.stdout
    for query in ('"foo and"', "foo bar", 're:"foo'):
        assert run("search", query, str(tmp_path), "--no-cache").stderr == "", query
    # A lone quote: closed, it would be no query, so none is proposed (adversary round 54);
    # nor for a quote with nothing after it (`foo"`: closed, an empty phrase; trial 55).
    for query in ('"', 'foo"', 'foo "  '):
        p = run("search", query, str(tmp_path), "--no-cache")
        assert p.stderr.splitlines()[0] == ("note: the query's quote is not closed, so each piece was searched as a "
                                            "word (quotes included)"), (query, p.stderr)


def test_a_bad_number_gives_the_subcommand_usage() -> None:
    for words, said in ((["search", "x", "--limit", "-1"], "argument --limit: must be at least 0, not -1"),
                        (["search", "x", "--page", "0"], "argument --page: must be at least 1, not 0"),
                        (["search", "x", "--limit", "ten"], "argument --limit: not a whole number: 'ten'"),
                        (["context", "f.jsonl", "--lines", "-2"], "argument --lines: must be at least 0, not -2")):
        p = run(*words)
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith(f"usage: sessiontree {words[0]} ") and p.stderr.endswith(f": error: {said}\n"), p.stderr


def test_help_paragraphs_and_descriptions() -> None:
    """Every command's help has a description, and a description's line starts a
    bullet only after a blank line or another bullet's lines (generate's "OUT may be
    / - (stdout)" broke a sentence into a bullet of its own)."""
    for command in ("info", "tree", "context", "ls", "search", "usage", "index", "check", "fork", "migrate",
                    "generate", "bench", "import", "browse", "export"):
        lines = run(command, "--help", env={"COLUMNS": "80"}).stdout.splitlines()
        options = lines.index("options:") if "options:" in lines else len(lines)
        described = [x for x in lines[:options] if x.startswith(f"sessiontree {command}: ")]
        assert described, command
        start = lines.index(described[0])
        for before, line in zip(lines[start:options], lines[start + 1:options]):
            if line.startswith(("- ", "* ")):
                assert not before or before.startswith(("- ", "* ", "  ")), (command, before, line)


def test_index_summary_says_indexes_plainly() -> None:
    from sessiontree import _caches
    from sessiontree.catalog import IndexSummary
    from sessiontree.cli.index import summary_line
    from sessiontree.view import human_bytes

    which = f"(sessions of {human_bytes(_caches.INDEX_MIN_BYTES)} or more)"  # the tests lower it
    for built, said in ((1, f"1 session index built, 2 kept from before {which}"),
                        (492, f"492 session indexes built, 2 kept from before {which}")):
        line = summary_line(IndexSummary(3, 3, 0, 0, 0, None, 0, indexes_built=built, indexes_reused=2), 0.1)
        assert said in line and "(es)" not in line, line


def test_readme_and_pyproject_name_the_python_versions_tested() -> None:
    """The versions the wheel is tested on (tests/test_wheel.py: this interpreter and
    pyenv's oldest and newest from 3.10), said alike in the README and pyproject.toml."""
    import re

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    project = " ".join(re.sub(r"\n#", " ", (ROOT / "pyproject.toml").read_text(encoding="utf-8")).split())
    said = re.search(r"the tests install it on ([0-9., and]+?)\.? Building", readme)
    tested = re.search(r"tested installed on ([0-9., and]+?) \(", project)
    assert said is not None and tested is not None
    assert said.group(1) == tested.group(1), (said.group(1), tested.group(1))
