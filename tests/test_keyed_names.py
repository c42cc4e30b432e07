"""The framework stores' file names (``sessiontree._keyed``) and their layering: the core
never imports a framework."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree._keyed import MAX_KEY_NAME, key_file_name, keys_of_file_name


@given(st.text(min_size=1, max_size=10), st.text(max_size=10))  # 2 x 10 x 4 bytes x 3 + "@" + ".jsonl" <= 255
def test_a_name_gives_back_its_keys(key: str, sub_key: str) -> None:
    name = key_file_name(key, sub_key)
    assert keys_of_file_name(name) == (key, sub_key)
    assert "/" not in name and "\0" not in name and not name.startswith(".")
    assert name.endswith(".jsonl") and name.isascii()


def test_names_that_are_not_keys() -> None:
    for name in ("x.json", "a@.jsonl", "%zz.jsonl", "a b.jsonl", ".jsonl", "a.b.jsonl", "%FF.jsonl"):
        assert keys_of_file_name(name) is None, name
    assert keys_of_file_name("2025-11-07T09-14-10-205Z_0197a0b0.jsonl") == ("2025-11-07T09-14-10-205Z_0197a0b0", "")


def test_refused_keys() -> None:
    with pytest.raises(ValueError):
        key_file_name("")
    with pytest.raises(TypeError):
        key_file_name(7)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        key_file_name("é" * (MAX_KEY_NAME // 6 + 1))
    assert len(key_file_name("a" * MAX_KEY_NAME)) == MAX_KEY_NAME + len(".jsonl")


def test_a_name_of_two_long_parts_is_refused_before_any_file(tmp_path: Path) -> None:
    """Each part held to 200 bytes, the name of two was not held to 255: a LangGraph
    thread and namespace of 150 bytes each failed at the first write ("File name too
    long", an OSError) where path_of promises a ValueError."""
    assert key_file_name("t" * 124, "n" * 124) == "t" * 124 + "@" + "n" * 124 + ".jsonl"  # 255 bytes
    with pytest.raises(ValueError, match="together"):
        key_file_name("t" * 124, "n" * 125)
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.base import empty_checkpoint

    from sessiontree.langgraph import PiCheckpointSaver

    with PiCheckpointSaver(tmp_path) as saver:
        with pytest.raises(ValueError, match="too long"):
            saver.put({"configurable": {"thread_id": "t" * 150, "checkpoint_ns": "n" * 150}}, empty_checkpoint(), {}, {})
    assert list(tmp_path.iterdir()) == []


def test_the_core_never_imports_a_framework() -> None:
    """``import sessiontree`` (and the command line's modules) load neither the Agents
    SDK nor LangGraph; ``sessiontree.agents`` itself does not need the SDK."""
    code = (
        "import sys, sessiontree, sessiontree.cli, sessiontree.agents\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('agents', 'langgraph', 'langchain_core', 'openai'))\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
