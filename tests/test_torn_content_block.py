"""Rule 4 never recovers a content block: a line cut by a crash right after a block
(``{"type":"toolCall",...}``) and later ended by a bare ``\n`` (Pi 0.84.4+ ends an
unterminated last line when it loads the file) is one invalid line, not "a torn
fragment, then an entry". Before the rule asked for an entry type, both backends made
the block a root entry and the leaf.
"""
import warnings
import pytest
from sessiontree import SessionManager

H = '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
A = '{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}'
FULL = ('{"type":"message","id":"a2","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z",'
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash",'
        '"arguments":{"command":"ls"}},{"type":"text","text":"done"}],"provider":"x","model":"m"}}')
CUT = FULL[: FULL.index(',{"type":"text"')]   # the crash cut the line after the tool call block


@pytest.mark.parametrize("backend", ["native", "python"])
def test_cut_line_ended_by_newline_invents_no_entry(tmp_path, backend):
    p = tmp_path / "s.jsonl"
    p.write_text(H + "\n" + A + "\n" + CUT + "\n")      # Pi 0.84.4+ added the "\n" on load
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sm = SessionManager.open(str(p), backend=backend)
    ids = [e["id"] for e in sm.get_entries()]
    assert ids == ["a1"], f"invented entries: {sm.get_entries()}"
    assert sm.leaf_id == "a1"
    assert [m["role"] for m in sm.build_session_context().messages] == ["user"]


@pytest.mark.parametrize("backend", ["native", "python"])
def test_refresh_after_newline_added_invents_no_entry(tmp_path, backend):
    p = tmp_path / "s.jsonl"
    p.write_text(H + "\n" + A + "\n" + CUT)            # a reader opens while the line is torn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sm = SessionManager.open(str(p), backend=backend)
        with open(p, "a") as f:                        # then Pi loads the file and ends the line
            f.write("\n")
        sm.refresh()
    assert [e["id"] for e in sm.get_entries()] == ["a1"]
    assert sm.leaf_id == "a1"
