"""A peer's test suite over sessiontree's storages (issue 29, item 4).

``pi-agent-harness-lc`` (PyPI) is a Python port of Pi's agent-core harness; its source
distribution ships the tests of its session storages and repositories. ``make test``
installs the package and downloads that distribution into ``.venv/peer/``; this test
copies the peer's tests into a temporary folder and runs them in a real ``pytest``
process with ``tests/peer_adapter.py``, which puts sessiontree's
``InMemorySessionStorage`` / ``JsonlSessionStorage`` in place of the peer's storages.
Every test of a behaviour the interface has must pass; the ones that do not apply are
listed here, with the reason, and in the README.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / ".venv" / "peer" / "pi_agent_harness_lc-0.6.0"

FILES = [
    "test_harness_session.py",
    "test_deferred_session_storage.py",
    "test_harness_session_page.py",
    "test_harness_head_lines.py",
]

# Tests that do not apply to sessiontree's storages, and why (README, "A peer's tests").
NOT_APPLICABLE = {
    "test_jsonl_repo_in_memory_fs_end_to_end":
        "runs a JSONL storage over a made-up in-memory file system object; sessiontree's "
        "JsonlSessionStorage writes real files through its own durable writer",
    "test_a_failed_write_records_nothing_and_the_next_message_writes_it_all":
        "injects the failure into the peer's file system object, which sessiontree's writer does not use; "
        "and a failed first write keeps the entry in the session (Pi's rule, CONTRACT.md section 4)",
}

# Tests of the peer's own helpers that no storage takes part in (they run, and pass).
NO_STORAGE = {
    "test_uuid7_is_time_ordered_canonical_uuid",
    "test_build_session_context_accepts_raw_entries_from_fixture",
    "test_local_execution_env_satisfies_runtime_protocols",
    "test_head_lines_are_what_reading_everything_gives",
    "test_head_lines_leave_the_rest_of_the_file_unread",
    "test_head_lines_of_a_missing_file_raise_like_a_read",
    "test_local_execution_env_reads_head_lines",
    "test_path_fs_reads_head_lines",
}


@pytest.mark.skipif(not PEER.is_dir(), reason="the peer's tests are not downloaded (make test does it)")
def test_the_peers_session_tests_pass_over_sessiontrees_storages(tmp_path: Path) -> None:
    pytest.importorskip("pi_agent_harness")
    pytest.importorskip("pytest_asyncio")
    suite = tmp_path / "peer"
    shutil.copytree(PEER / "tests", suite / "tests")
    (suite / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"), HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), SESSIONTREE_CATALOG="off", TMPDIR=str(tmp_path))
    skip = " and ".join(f"not {name}" for name in NOT_APPLICABLE)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "peer_adapter", "-q", "-rA",
         "-k", skip, *(f"tests/{f}" for f in FILES)],
        cwd=suite, env=env, capture_output=True, text=True, timeout=600,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    passed = {m.group(1) for m in re.finditer(r"^PASSED \S+::(\w+)", out, re.M)}
    made = re.search(r"sessiontree storages made: memory=(\d+) jsonl=(\d+)", out)
    assert made is not None and int(made.group(1)) > 0 and int(made.group(2)) > 0, out[-2000:]
    deselected = re.search(r"(\d+) deselected", out)
    assert deselected is not None and int(deselected.group(1)) == len(NOT_APPLICABLE), out[-2000:]
    defined = {m.group(1) for f in FILES
               for m in re.finditer(r"^(?:async )?def (test_\w+)", (suite / "tests" / f).read_text(), re.M)}
    assert set(NOT_APPLICABLE) | NO_STORAGE <= defined
    # Every test of the storages and repositories (open, create, deferred writes, leaf
    # moves, paging, find, fork at / before an entry, delete) passed: 47 in 0.6.0.
    storage_tests = defined - set(NOT_APPLICABLE) - NO_STORAGE
    assert storage_tests <= passed, sorted(storage_tests - passed)
    assert len(storage_tests) == 47
    assert not (set(NOT_APPLICABLE) & passed)
