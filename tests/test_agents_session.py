"""``sessiontree.agents.PiSession``: the OpenAI Agents SDK's session protocol over a Pi
session file, with the real SDK (``openai-agents`` from PyPI) driven by a scripted model
(no network), and the file then read by the real command line in another process."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionLockedError, SessionManager

agents = pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_reasoning_item import ResponseReasoningItem, Summary  # noqa: E402

from sessiontree.agents import ITEM_FIELD, ITEM_TYPE, PiSession  # noqa: E402

set_tracing_disabled(True)

# Every kind of item the Responses API takes as input, plus ones it may add later; the
# values include what JSON makes hard: a lone surrogate, an integer past 64 bits, floats.
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "héllo \ud800 中文"},
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
        {"type": "input_image", "image_url": "https://example.invalid/cat.png", "detail": "low"},
        {"type": "input_file", "file_id": "file-1"}]},
    {"role": "developer", "content": "be brief"},
    {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "sys"}]},
    {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}],
     "encrypted_content": "gAAAA==", "content": [{"type": "reasoning_text", "text": "raw"}]},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [
        {"type": "output_text", "text": "answer", "annotations": [],
         "logprobs": [{"token": "a", "logprob": -0.25, "bytes": [97], "top_logprobs": []}]},
        {"type": "refusal", "refusal": "no"}]},
    {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Paris", "n": 2}',
     "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "function_call", "call_id": "call_2", "name": "broken", "arguments": "not json"},
    {"type": "function_call_output", "call_id": "call_2",
     "output": [{"type": "input_text", "text": "part"}, {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"}]},
    {"type": "custom_tool_call", "call_id": "ct_1", "name": "apply_patch", "input": "*** Begin Patch"},
    {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "done"},
    {"id": "ws_1", "type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}},
    {"id": "cu_1", "type": "computer_call", "call_id": "cc_1", "status": "completed",
     "action": {"type": "click", "x": 1, "y": 2, "button": "left"}, "pending_safety_checks": []},
    {"type": "computer_call_output", "call_id": "cc_1",
     "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="}},
    {"id": "mcp_1", "type": "mcp_call", "server_label": "s", "name": "t", "arguments": "{}", "output": "o"},
    {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "s", "tools": []},
    {"id": "mar_1", "type": "mcp_approval_request", "server_label": "s", "name": "t", "arguments": "{}"},
    {"type": "mcp_approval_response", "approval_request_id": "mar_1", "approve": True},
    {"type": "item_reference", "id": "msg_0"},
    {"type": "compaction", "encrypted_content": "opaque"},
    {"type": "a_future_item", "deep": {"n": 2 ** 70, "f": 1.5, "list": [None, True, "x"]}},
]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True,
                          env=env, timeout=120)


# ------------------------------------------------------------------ the items
def test_items_round_trip_exactly(tmp_path: Path, backend: str) -> None:
    """What the SDK gets back equals what it stored, in this session and after a reopen."""
    s = PiSession("round/trip", tmp_path, backend=backend)
    run(s.add_items(copy.deepcopy(ITEMS[:5])))
    run(s.add_items(copy.deepcopy(ITEMS[5:])))
    assert run(s.get_items()) == ITEMS
    s.close()
    again = PiSession("round/trip", tmp_path, backend=backend)
    assert run(again.get_items()) == ITEMS
    assert run(again.get_items(3)) == ITEMS[-3:]
    again.close()
    assert os.path.basename(again.path) == "round%2Ftrip.jsonl"


def test_items_become_pi_messages(tmp_path: Path, backend: str) -> None:
    """Each item is one entry; Pi's context at the leaf holds a message for every item Pi
    has a message for, each carrying the item."""
    s = PiSession("pi", tmp_path, model="m-1", backend=backend)
    run(s.add_items(copy.deepcopy(ITEMS)))
    s.close()
    with SessionManager.open(s.path, backend=backend) as sm:
        assert sm.load_report == []
        path = sm.get_branch()
        assert [e["type"] for e in path][0] == "session_info"
        assert len(path) == 1 + len(ITEMS)
        ctx = sm.build_session_context()
        customs = [e for e in path if e["type"] == "custom"]
    assert [e["customType"] for e in customs] == [ITEM_TYPE] * 4  # mcp_list_tools, item_reference, compaction, future
    assert [m[ITEM_FIELD] for m in ctx.messages] + [e["data"]["item"] for e in customs] != []
    by_item = {json.dumps(m[ITEM_FIELD], sort_keys=True): m for m in ctx.messages}
    assert len(ctx.messages) == len(ITEMS) - 4

    def pi(i: int) -> dict[str, Any]:
        return by_item[json.dumps(ITEMS[i], sort_keys=True)]

    assert pi(0)["role"] == "user" and pi(0)["content"] == ITEMS[0]["content"]
    assert pi(1)["content"][0] == {"type": "text", "text": "look"}
    assert pi(1)["content"][1] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    assert pi(2) | {ITEM_FIELD: None} == {"role": "system", "content": "be brief", "timestamp": pi(2)["timestamp"],
                                           ITEM_FIELD: None}
    assert pi(4)["content"] == [{"type": "thinking", "thinking": "plan"}]
    assert pi(5)["content"] == [{"type": "text", "text": "answer"}, {"type": "text", "text": "no"}]
    assert (pi(5)["provider"], pi(5)["model"], pi(5)["api"]) == ("openai", "m-1", "openai-responses")
    assert pi(6)["content"] == [{"type": "toolCall", "id": "call_1", "name": "weather",
                                 "arguments": {"city": "Paris", "n": 2}}]
    assert pi(6)["stopReason"] == "toolUse"
    assert (pi(7)["role"], pi(7)["toolCallId"], pi(7)["toolName"], pi(7)["content"]) == (
        "toolResult", "call_1", "weather", [{"type": "text", "text": "sunny"}])
    assert pi(8)["content"][0]["arguments"] == {"arguments": "not json"}
    assert pi(9)["toolName"] == "broken"
    assert pi(10)["content"][0]["arguments"] == {"input": "*** Begin Patch"}
    assert pi(11)["toolName"] == "apply_patch"
    assert pi(12)["content"][0]["name"] == "web_search"
    assert pi(14)["toolName"] == "computer"


def test_refused_items_write_nothing(tmp_path: Path) -> None:
    s = PiSession("bad", tmp_path)
    with pytest.raises(TypeError):
        run(s.add_items([{"role": "user", "content": "ok"}, "not a dict"]))  # type: ignore[list-item]
    with pytest.raises(ValueError):
        run(s.add_items([{"role": "user", "content": "ok"}, {"role": "user", "content": float("nan")}]))
    with pytest.raises(TypeError):
        run(s.add_items([{"role": "user", "content": object()}]))
    # JSON would give these back as other values: a string key, a list (CONTRACT §9).
    for item in ({"role": "user", "content": "ok", 1: 2}, {"role": "user", "content": "ok", True: 1},
                 {"role": "user", "content": ("a", "b")}, {"role": "user", "content": [{None: "x"}]}):
        with pytest.raises(ValueError):
            run(s.add_items([{"role": "user", "content": "ok"}, item]))
    assert run(s.get_items()) == []
    assert not os.path.exists(s.path)
    run(s.add_items([]))
    assert not os.path.exists(s.path)
    s.close()


def test_limit_as_sqlite_session(tmp_path: Path) -> None:
    items = [{"role": "user", "content": f"Message {i}"} for i in range(6)]
    s = PiSession("limits", tmp_path, session_settings=agents.SessionSettings(limit=4))
    run(s.add_items(items))
    assert run(s.get_items()) == items[-4:]  # the settings' limit
    assert run(s.get_items(2)) == items[-2:]
    assert run(s.get_items(10)) == items
    assert run(s.get_items(0)) == []
    assert run(s.get_items(-1)) == items  # SQLite's LIMIT -1: all
    s.session_settings = None
    assert run(s.get_items()) == items
    s.close()


# ------------------------------------------------------- pop and clear
def test_pop_moves_the_leaf_and_deletes_nothing(tmp_path: Path, backend: str) -> None:
    items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"},
             {"role": "user", "content": "How are you?"}]
    s = PiSession("pop", tmp_path, backend=backend)
    assert run(s.pop_item()) is None
    run(s.add_items(copy.deepcopy(items)))
    size = os.path.getsize(s.path)
    assert run(s.pop_item()) == items[2]
    assert run(s.get_items()) == items[:2]
    assert os.path.getsize(s.path) > size  # the move is one more line, nothing is cut
    s.close()
    s = PiSession("pop", tmp_path, backend=backend)  # the leaf move is in the file
    assert run(s.get_items()) == items[:2]
    assert run(s.pop_item()) == items[1]
    assert run(s.pop_item()) == items[0]
    assert run(s.pop_item()) is None
    assert run(s.get_items()) == []
    run(s.add_items([{"role": "user", "content": "again"}]))
    s.close()
    with SessionManager.open(s.path, backend=backend) as sm:
        assert sm.load_report == []
        kept = [e["message"][ITEM_FIELD] for e in sm.get_entries() if e["type"] == "message"]
        assert kept == items + [{"role": "user", "content": "again"}]  # every item stays in the file
        moves = [e for e in sm.get_entries() if e["type"] == "branch_summary"]
        assert [(e["summary"], e["details"]["op"]) for e in moves] == [("", "pop_item")] * 3
        assert sm.build_session_context().messages[0]["content"] == "again"
        assert len(sm.build_session_context().messages) == 1
        # The three popped items and the new one end the four branches.
        assert len(sm.get_leaf_ids()) == 4


def test_clear_starts_a_new_root(tmp_path: Path, backend: str) -> None:
    s = PiSession("clear", tmp_path, backend=backend)
    run(s.clear_session())  # nothing to clear: nothing written
    assert not os.path.exists(s.path)
    run(s.add_items([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]))
    run(s.clear_session())
    assert run(s.get_items()) == []
    run(s.clear_session())  # already empty: no second root
    s.close()
    s = PiSession("clear", tmp_path, backend=backend)
    assert run(s.get_items()) == []
    run(s.add_items([{"role": "user", "content": "three"}]))
    assert run(s.get_items()) == [{"role": "user", "content": "three"}]
    s.close()
    with SessionManager.open(s.path, backend=backend) as sm:
        roots = [sm.get_shape().ids[i] for i in sm.get_shape().roots]
        assert len(roots) == 2
        new_root = sm[roots[1]]
        assert (new_root["type"], new_root["fromId"], new_root["summary"]) == ("branch_summary", "root", "")
        assert len([e for e in sm.get_entries() if e["type"] == "message"]) == 3


# ------------------------------------------------------------ the real SDK
class ScriptedModel(Model):
    """The SDK's ``Model`` answering from a script (no network); records its inputs."""

    def __init__(self, turns: list[list[Any]], usage: Usage) -> None:
        self.turns = list(turns)
        self.usage = usage
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, *, previous_response_id: Any,
                           conversation_id: Any, prompt: Any) -> ModelResponse:
        self.inputs.append(copy.deepcopy(input))
        return ModelResponse(output=self.turns.pop(0), usage=self.usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _said(text: str, n: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_real_runner_turns_tool_call_and_rewind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """Several ``Runner.run`` turns with a tool call and a rewind; the model sees the
    session's history; the file is then clean and readable by ``check``, ``tree``,
    ``search``, ``usage`` and ``export`` in another process."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-never-sent")
    usage = Usage(requests=1, input_tokens=120, output_tokens=30, total_tokens=150)
    model = ScriptedModel([
        [ResponseReasoningItem(id="rs_1", type="reasoning", summary=[Summary(type="summary_text", text="call the tool")]),
         ResponseFunctionToolCall(id="fc_1", type="function_call", call_id="call_1", name="weather",
                                  arguments='{"city":"Paris"}')],
        [_said("It is sunny in Paris.", 2)],
        [_said("Goodbye!", 3)],
        [_said("You are welcome.", 4)],
    ], usage)
    agent = Agent(name="assistant", instructions="Answer briefly.", model=model, tools=[weather])
    folder = tmp_path / "sessions"
    session = PiSession("user-42", folder, model="scripted-model", backend=backend)

    first = run(Runner.run(agent, "What is the weather in Paris?", session=session))
    assert first.final_output == "It is sunny in Paris."
    second = run(Runner.run(agent, "bye", session=session))
    assert second.final_output == "Goodbye!"
    # Rewind the last exchange: the SDK's pop_item, twice (answer, then question).
    assert run(session.pop_item())["content"][0]["text"] == "Goodbye!"
    assert run(session.pop_item()) == {"content": "bye", "role": "user"}
    third = run(Runner.run(agent, "thanks", session=session))
    assert third.final_output == "You are welcome."
    # The model's last input is the rewound history plus the new question.
    last_input = model.inputs[-1]
    assert [i.get("content") for i in last_input if i.get("role") == "user"] == ["What is the weather in Paris?", "thanks"]
    assert any(i.get("type") == "function_call_output" and i["output"] == "sunny in Paris" for i in last_input)
    items = run(session.get_items())
    assert items == [i for i in last_input] + [third.new_items[-1].to_input_item()]
    session.close()

    path = session.path
    home = tmp_path / "home"
    home.mkdir()
    check = cli("check", path, home=home)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "clean" in check.stdout
    tree = cli("tree", path, home=home)
    assert tree.returncode == 0, tree.stderr
    assert "┬2" in tree.stdout and "← leaf" in tree.stdout and "weather(city='Paris')" in tree.stdout
    found = cli("search", "sunny", str(folder), "--json", home=home)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert {h["role"] for h in hits} == {"assistant"}  # the answer (tool results are not searched)
    gone = cli("search", "Goodbye", str(folder), "--json", home=home)
    assert [h["onPath"] for h in json.loads(gone.stdout)["hits"]] == [False]  # the rewound branch
    report = cli("usage", "session", str(folder), "--json", home=home)
    assert report.returncode == 0, report.stderr
    total = json.loads(report.stdout)["total"]
    # Four model requests, each counted once (the rewound answer too: it was paid for),
    # on five assistant messages (the first request's reasoning and tool call are two).
    assert (total["input"], total["output"], total["totalTokens"], total["records"]) == (4 * 120, 4 * 30, 4 * 150, 5)
    html = cli("export", path, "--format", "html", "--out", str(tmp_path / "t.html"), home=home)
    assert html.returncode == 0, html.stderr
    assert "You are welcome." in (tmp_path / "t.html").read_text()


# ------------------------------------------------------ one writer, readers
def test_threads_of_one_session_share_it(tmp_path: Path) -> None:
    s = PiSession("threads", tmp_path)
    items = [{"role": "user", "content": f"Message {i}"} for i in range(10)]

    def add(item: dict[str, Any]) -> None:
        asyncio.run(s.add_items([item]))

    workers = [threading.Thread(target=add, args=(i,)) for i in items]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(i["content"] for i in run(s.get_items())) == sorted(i["content"] for i in items)
    s.close()


OTHER = textwrap.dedent("""
    import asyncio, json, sys
    from sessiontree.agents import PiSession
    s = PiSession("shared", sys.argv[1])
    if sys.argv[2] == "read":
        print(json.dumps(asyncio.run(s.get_items())))
    else:
        try:
            asyncio.run(s.add_items([{"role": "user", "content": "from the other process"}]))
            print("written")
        except Exception as e:
            print(type(e).__name__)
    s.close()
""")


def test_one_writer_and_readers_in_other_processes(tmp_path: Path) -> None:
    s = PiSession("shared", tmp_path)
    run(s.add_items([{"role": "user", "content": "first"}]))
    other = subprocess.run([sys.executable, "-c", OTHER, str(tmp_path), "write"], capture_output=True, text=True)
    assert other.stdout.strip() == SessionLockedError.__name__, other.stderr
    run(s.add_items([{"role": "assistant", "content": "second"}]))
    reader = subprocess.run([sys.executable, "-c", OTHER, str(tmp_path), "read"], capture_output=True, text=True)
    assert json.loads(reader.stdout) == [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}]
    s.close()
    other = subprocess.run([sys.executable, "-c", OTHER, str(tmp_path), "write"], capture_output=True, text=True)
    assert other.stdout.strip() == "written", other.stderr
    s = PiSession("shared", tmp_path)
    assert run(s.get_items())[-1] == {"role": "user", "content": "from the other process"}
    s.close()


def test_a_session_made_per_request_and_dropped(tmp_path: Path) -> None:
    """A ``PiSession`` made for each request and dropped without ``close()`` releases the
    file's lock when collected: the next one writes."""
    for i in range(3):
        s = PiSession("per-request", tmp_path)
        run(s.add_items([{"role": "user", "content": f"m{i}"}]))
        del s
    s = PiSession("per-request", tmp_path)
    assert [i["content"] for i in run(s.get_items())] == ["m0", "m1", "m2"]
    s.close()


def test_a_write_between_read_and_lock_is_not_forked_off(tmp_path: Path) -> None:
    """Sessions made per request in several processes: another process's items written
    after this session read the file and before it took the file's lock were indexed at
    the lock, and this session's item went below the path it had read, beside them: the
    conversation forked and one side's acknowledged items left ``get_items`` (4 processes
    of 40 requests each: 2 to 12 of 160 items lost, 3 to 9 leaves). The lock is taken
    before the path is read; the other process then either writes first or is refused."""
    first = PiSession("shared", tmp_path)
    run(first.add_items([{"role": "user", "content": "first"}]))
    first.close()
    s = PiSession("shared", tmp_path)
    run(s.get_items())
    real_refresh = s.manager.refresh
    outcome: list[str] = []

    def refresh_then_other_writes() -> int:
        added = real_refresh()
        if not outcome:  # the other request runs between this read and the write
            other = subprocess.run([sys.executable, "-c", OTHER, str(tmp_path), "write"], capture_output=True,
                                   text=True)
            outcome.append(other.stdout.strip() or other.stderr)
        return added

    s.manager.refresh = refresh_then_other_writes  # type: ignore[method-assign]
    run(s.add_items([{"role": "assistant", "content": "mine"}]))
    s.close()
    assert outcome[0] in ("written", SessionLockedError.__name__), outcome
    acknowledged = ["first", "mine"] + (["from the other process"] if outcome[0] == "written" else [])
    again = PiSession("shared", tmp_path)
    assert sorted(i["content"] for i in run(again.get_items())) == sorted(acknowledged)
    assert len(again.manager.get_leaf_ids()) == 1
    again.close()
