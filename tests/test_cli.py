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
    assert "⋮" in p.stdout and len(lines) < 5000
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
    data = json.loads(run("generate", str(a), "--entries", "100", "--json").stdout)
    assert data["entries"] == 100 and len(a.read_bytes().splitlines()) == 101
    assert_one_line_error(run("generate", str(a), "--size", "lots"), "not a size")
    assert run("generate", str(a)).returncode == 2  # --size or --entries is required


def test_bench(gen_file: Path) -> None:
    from conftest import native_available

    backends = "python,native" if native_available() else "python"
    p = run("bench", str(gen_file), "--backends", backends, "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    for b in backends.split(","):
        r = data["results"][b]
        assert r["backend"] == b and r["open"] > 0 and r["rssPeak"] > 0 and r["entries"] > 0
    text = run("bench", str(gen_file), "--backends", backends)
    assert "open (index the file)" in text.stdout and "peak RSS" in text.stdout


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
