"""The exports' peer (``plain_export.py``) and the harness that runs both
(``export_vs_plain.py``, issue 26 item 5) on a small session, so that neither rots: the
linear copy is one path through the whole file, both writers export that path (the
same entries, in order) and the figures come back. The measurement itself is
``python benches/export_vs_plain.py FILE --linear COPY`` (docs/BENCHMARKS.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import export_vs_plain  # noqa: E402
from sessiontree import SessionManager  # noqa: E402
from sessiontree.generate import generate_session  # noqa: E402


def test_both_writers_export_the_whole_chain(tmp_path: Path) -> None:
    src, chain = tmp_path / "s.jsonl", tmp_path / "chain.jsonl"
    generate_session(str(src), size_bytes=400_000, seed=3)
    export_vs_plain.linear_copy(str(src), str(chain))
    with SessionManager.open(str(chain)) as sm:
        ids = [e["id"] for e in sm.get_branch()]
        assert len(ids) == len(sm) and sm.load_report == []
    best = export_vs_plain.run(str(chain), str(tmp_path), rounds=1)  # checks the sections' entries
    assert set(best) == {"markdown", "html"}
    for row in best.values():
        assert row["path"] == row["sections_checked"] == len(ids)
        assert row["sessiontree_s"] > 0 and row["plain_s"] > 0 and row["sessiontree_cpu_s"] > 0
    ours = (tmp_path / "sessiontree.markdown").read_text()
    plain = (tmp_path / "plain.markdown").read_text()
    assert re.findall(r"^## .*? · (\w{8})(?: · label: .*)?$", ours, re.M) == ids
    assert re.findall(r"^## .* · (\w{8})$", plain, re.M) == ids


def test_linear_copy_takes_the_entry_id_not_a_tool_call_id(tmp_path: Path) -> None:
    """An assistant line may spell a tool call's ``"id"`` before the entry's own (the
    benchdata sessions do): the chain must still run through every entry."""
    src, chain = tmp_path / "s.jsonl", tmp_path / "chain.jsonl"
    src.write_text(
        '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":'
        '[{"type":"toolCall","id":"call_1","name":"read","arguments":{}}],"timestamp":2},'
        '"id":"b2","parentId":"zz"}\n'
        '{"type":"message","id":"c3","parentId":"nope","timestamp":"2025-01-01T00:00:03.000Z",'
        '"message":{"role":"user","content":"again","timestamp":3}}\n')
    export_vs_plain.linear_copy(str(src), str(chain))
    with SessionManager.open(str(chain)) as sm:
        assert [e["id"] for e in sm.get_branch()] == ["a1", "b2", "c3"] and sm.load_report == []
