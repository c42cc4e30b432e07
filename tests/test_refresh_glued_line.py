"""A last line that is complete JSON but lacks its ``\\n`` is accepted on open and by
``refresh()``. If another writer then glues its own line onto it (no ``\\n`` between), a
fresh open reads one fused line (rule 3: its objects, glued), and so does ``refresh()``
once that line is complete (while unterminated, the fused line is pending), on both
backends (CONTRACT §4). A writer that starts with ``\\n`` (as sessiontree's and Pi
0.84.4+'s do) is read on too.
"""

import json
import warnings

import pytest

from sessiontree import SessionManager

H = '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'


def E(i: str, p: str | None, role: str = "user") -> str:
    return json.dumps({"type": "message", "id": i, "parentId": p, "timestamp": "2025-01-01T00:00:01.000Z",
                       "message": {"role": role, "content": "t"}}, separators=(",", ":"))


def snap(sm: SessionManager) -> tuple[object, ...]:
    return ([e["id"] for e in sm.get_entries()], sm.leaf_id,
            [(i.kind, i.line, i.offset, tuple(i.ids)) for i in sm.load_report])


def _open(path: str, backend: str) -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SessionManager.open(path, backend=backend)


@pytest.mark.parametrize("glue", ["", " ", "\r"])
@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_glued_line_is_read_as_a_fresh_open_reads_it(tmp_path, backend, glue):
    p = tmp_path / "s.jsonl"
    p.write_text(H + "\n" + E("a1", None) + "\n" + E("a2", "a1", "assistant"))  # cut before "\n"
    reader = _open(str(p), backend)
    assert reader.leaf_id == "a2"
    with open(p, "a") as f:  # a writer that does not check how the file ends
        f.write(glue + E("a3", "a2") + "\n" + E("a4", "a3", "assistant") + "\n")
    assert reader.refresh() == 2
    fresh = _open(str(p), backend)
    assert [e["id"] for e in fresh.get_entries()] == ["a1", "a2", "a3", "a4"]  # both objects of the fused line
    assert [i.line for i in fresh.load_report] == []
    assert snap(reader) == snap(fresh)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_writer_that_starts_a_new_line_is_read_on(tmp_path, backend):
    p = tmp_path / "s.jsonl"
    p.write_text(H + "\n" + E("a1", None) + "\n" + E("a2", "a1", "assistant"))
    reader = _open(str(p), backend)
    with open(p, "a") as f:
        f.write("  \r")
    assert reader.refresh() == 0  # blanks so far: nothing to read yet
    with open(p, "a") as f:
        f.write("\n" + E("a3", "a2") + "\n")
    assert reader.refresh() == 1
    assert snap(reader) == snap(_open(str(p), backend))
