"""The examples of docs/AGENTS.md and docs/LANGGRAPH.md run as written (the Agents SDK's
model swapped for a scripted one: no network), and their files read as the pages say."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager

DOCS = Path(__file__).resolve().parent.parent / "docs"


def example(page: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.DOTALL)
    assert len(blocks) == 1, page
    return blocks[0]


def test_the_agents_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("agents")
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    def said(text: str) -> Any:
        return ResponseOutputMessage(id=f"msg_{abs(hash(text))}", type="message", role="assistant",
                                     status="completed",
                                     content=[ResponseOutputText(type="output_text", text=text, annotations=[])])

    def call(city: str) -> Any:
        return ResponseFunctionToolCall(id=f"fc_{city}", type="function_call", call_id=f"call_{city}",
                                        name="weather", arguments=f'{{"city":"{city}"}}')

    class Scripted(Model):
        turns = [[call("Paris")], [said("Sunny in Paris.")], [call("Rome")], [said("Sunny in Rome.")],
                 [call("Madrid")], [said("Sunny in Madrid.")]]

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return ModelResponse(output=self.turns.pop(0), usage=Usage(requests=1, input_tokens=50, output_tokens=5,
                                                                       total_tokens=55), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-never-sent")
    monkeypatch.chdir(tmp_path)
    code = example("AGENTS.md").replace("tools=[weather])", "tools=[weather], model=SCRIPTED)")
    assert "model=SCRIPTED" in code
    import agents

    agents.set_tracing_disabled(True)
    exec(compile(code, "docs/AGENTS.md", "exec"), {"SCRIPTED": Scripted(), "__name__": "__doc__"})
    with SessionManager.open(tmp_path / "sessions" / "user-42.jsonl") as sm:
        assert sm.load_report == []
        texts = [m["content"][0].get("text") for m in sm.build_session_context().messages
                 if m["role"] == "assistant" and m["content"][0]["type"] == "text"]
        assert texts == ["Sunny in Paris.", "Sunny in Madrid."]
        # Rome's turn (question, call, result, answer) was rewound: four pops, each a leaf
        # move written as an empty branch summary, and the old branch kept.
        moves = [e for e in sm.get_entries() if e["type"] == "branch_summary"]
        assert [e["details"]["op"] for e in moves] == ["pop_item"] * 4
        assert any("Rome" in str(e.get("message")) for e in sm.get_entries())
        assert len(sm.get_leaf_ids()) == 5


def test_the_langgraph_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langgraph.graph")
    monkeypatch.chdir(tmp_path)
    exec(compile(example("LANGGRAPH.md"), "docs/LANGGRAPH.md", "exec"), {"__name__": "__doc__"})
    with SessionManager.open(tmp_path / "threads" / "chat-1.jsonl") as sm:
        assert sm.load_report == []
        said = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
                for m in sm.build_session_context().messages]
        assert said == ["hello", "You said: hello", "tell me a joke", "You said: tell me a joke"]
        assert any(len(sm.get_children_ids(i)) == 2 for i in sm.get_path_ids())  # the fork
