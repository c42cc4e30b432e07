"""``sessiontree.langgraph.PiCheckpointSaver``: LangGraph's own conformance suite
(``langgraph-checkpoint-conformance`` from PyPI), real graphs (tool calls, time travel,
removed messages) whose threads read as conversations in the real command line, exact
round trips through the serializer, and real second processes: a writer killed with
SIGKILL, a second writer, readers."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionFileExistsError, SessionLockedError, SessionManager

pytest.importorskip("langgraph.checkpoint.base")
pytest.importorskip("langgraph.checkpoint.conformance")

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402

from sessiontree.langgraph import CHECKPOINT_TYPE, WRITES_TYPE, PiCheckpointSaver  # noqa: E402
from sessiontree.langgraph._messages import fingerprint, pi_messages  # noqa: E402

BASE = {"put", "put_writes", "get_tuple", "list", "delete_thread"}
EXTENDED_IMPLEMENTED = {"copy_thread"}


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True,
                          env=env, timeout=120)


# ------------------------------------------------------- the conformance suite
def test_conformance_suite(tmp_path: Path, backend: str) -> None:
    """LangGraph's checkpointer conformance suite: every base capability, and the
    extended ones implemented (``copy_thread``; ``delete_for_runs`` and ``prune`` would
    delete checkpoints from a thread that only grows, docs/LANGGRAPH.md)."""
    folders = iter(range(100))

    @checkpointer_test(name=f"PiCheckpointSaver[{backend}]")
    async def factory() -> Any:
        saver = PiCheckpointSaver(tmp_path / f"run{next(folders)}", backend=backend)
        yield saver
        saver.close()

    report = asyncio.run(validate(factory))
    failures = {k: r.failures for k, r in report.results.items() if r.failures}
    assert report.passed_all_base(), failures
    assert report.passed_all(), failures
    detected = {k for k, r in report.results.items() if r.detected}
    assert detected == BASE | EXTENDED_IMPLEMENTED
    ran = sum(r.tests_passed for r in report.results.values())
    assert ran >= 60, ran  # 58 base tests and 8 of copy_thread in 0.0.2


# ------------------------------------------------------------ a real graph
@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


USAGE = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120, "input_token_details": {"cache_read": 40}}
META = {"model_name": "scripted-1", "model_provider": "scripted"}


def chat_graph(saver: PiCheckpointSaver, script: list[AIMessage]) -> Any:
    """Agent + tools, the agent answering from ``script``."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [script.pop(0)]}

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", ToolNode([weather]))
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", tools_condition)
    b.add_edge("tools", "agent")
    return b.compile(checkpointer=saver)


def said(text: str, **kw: Any) -> AIMessage:
    return AIMessage(content=text, usage_metadata=USAGE, response_metadata=META, **kw)


def shown(messages: list[dict[str, Any]]) -> list[bytes]:
    return [fingerprint(m) for m in messages]


def test_a_real_graph_is_a_conversation_tree(tmp_path: Path, backend: str) -> None:
    """Turns with a tool call, a removed message, and time travel from an old checkpoint:
    at every checkpoint of the thread, Pi's context is the graph's messages there, the
    checkpoint tree is the file's tree, and the command line reads the thread."""
    folder = tmp_path / "threads"
    saver = PiCheckpointSaver(folder, backend=backend)
    script = [
        AIMessage(content="", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}],
                  usage_metadata=USAGE, response_metadata=META),
        said("It is sunny in Paris."),
        said("Goodbye!"),
        said("Bonjour !"),
    ]
    graph = chat_graph(saver, script)
    cfg = {"configurable": {"thread_id": "user/7"}}
    graph.invoke({"messages": [HumanMessage("What is the weather in Paris?")]}, cfg)
    graph.invoke({"messages": [HumanMessage("bye")]}, cfg)
    first_id = graph.get_state(cfg).values["messages"][0].id
    graph.update_state(cfg, {"messages": [RemoveMessage(id=first_id)]})  # a trimmed history
    history = list(graph.get_state_history(cfg))
    fork_at = next(h for h in history if len(h.values.get("messages", [])) == 4 and not h.next)
    graph.invoke({"messages": [HumanMessage("Say hello in French")]}, fork_at.config)
    assert [m.content for m in graph.get_state(cfg).values["messages"]][-2:] == ["Say hello in French", "Bonjour !"]
    history = list(graph.get_state_history(cfg))
    every = list(saver.list(None))
    saver.close()

    path = str(folder / "user%2F7.jsonl")
    assert sorted(os.listdir(folder)) == ["user%2F7.jsonl"]
    with SessionManager.open(path, backend=backend) as sm:
        assert sm.load_report == []
        # Every checkpoint is the entry with its id; its parent checkpoint is its nearest
        # checkpoint ancestor in the tree.
        for tup in every:
            cid = tup.config["configurable"]["checkpoint_id"]
            assert sm.get_entry_type(cid) == "custom" and sm[cid]["customType"] == CHECKPOINT_TYPE
            ancestors = [i for i in sm.get_path_ids(cid)[:-1] if sm.get_entry_type(i) == "custom" and "/" not in i
                         and sm[i]["customType"] == CHECKPOINT_TYPE]
            parent = tup.parent_config["configurable"]["checkpoint_id"] if tup.parent_config else None
            assert (ancestors[-1] if ancestors else None) == parent
        # Pi's context at each checkpoint is the graph's conversation there.
        for state in list(graph.get_state_history(cfg)):
            cid = state.config["configurable"]["checkpoint_id"]
            ctx = sm.build_session_context(cid)
            assert shown(ctx.messages) == shown(pi_messages(state.values.get("messages", []), 0)), cid
        # The fork is a branch of the tree; the removal a context_edit.
        assert len(sm.get_leaf_ids()) >= 2
        assert sum(1 for e in sm.get_entries() if e["type"] == "context_edit") == 1
        assert sm.get_session_name() == "user/7"
        leaf_ctx = sm.build_session_context(history[0].config["configurable"]["checkpoint_id"])
    assert [m["role"] for m in leaf_ctx.messages] == ["user", "assistant", "toolResult", "assistant", "user",
                                                      "assistant"]
    assert leaf_ctx.messages[1]["content"] == [{"type": "toolCall", "id": "c1", "name": "weather",
                                                "arguments": {"city": "Paris"}}]
    assert leaf_ctx.messages[2]["toolName"] == "weather"
    assert (leaf_ctx.messages[3]["provider"], leaf_ctx.messages[3]["model"]) == ("scripted", "scripted-1")
    assert leaf_ctx.messages[3]["usage"]["input"] == 60 and leaf_ctx.messages[3]["usage"]["cacheRead"] == 40

    home = tmp_path / "home"
    home.mkdir()
    check = cli("check", path, home=home)
    assert check.returncode == 0 and "clean" in check.stdout, check.stdout + check.stderr
    tree = cli("tree", path, home=home)
    assert tree.returncode == 0 and "┬2" in tree.stdout and "langgraph.checkpoint" in tree.stdout, tree.stderr
    found = cli("search", "sunny", str(folder), "--json", home=home)
    assert [h["role"] for h in json.loads(found.stdout)["hits"]] == ["assistant"], found.stderr
    out = tmp_path / "thread.md"
    md = cli("export", path, "--format", "markdown", "--out", str(out), home=home)
    assert md.returncode == 0, md.stderr
    assert "Bonjour !" in out.read_text() and "Goodbye!" not in out.read_text()  # the fork's path
    html = cli("export", path, "--format", "html", "--out", str(tmp_path / "t.html"), home=home)
    assert html.returncode == 0 and "Goodbye!" in (tmp_path / "t.html").read_text()  # every branch
    report = cli("usage", "session", str(folder), "--json", home=home)
    total = json.loads(report.stdout)["total"]
    assert (total["records"], total["input"], total["cacheRead"], total["output"]) == (4, 4 * 60, 4 * 40, 4 * 20)


def test_checkpoints_round_trip_exactly(tmp_path: Path, backend: str) -> None:
    """Checkpoints, metadata, values and writes come back as LangGraph's own
    ``InMemorySaver`` gives them back (what the serializer keeps: it turns a tuple into
    a list and a lone surrogate into ``?``), from the saver that wrote them and from a
    new one on the same folder, on both backends."""
    values = {
        "bytes": b"\x00\xff", "set": {1, 2}, "when": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "big": 2 ** 63 - 1, "tuple": (1, "a"), "text": "lone \ud800 中", "float": 2.0,
        "messages": [HumanMessage("hi", id="h1"), AIMessage("yo", id="a1", tool_calls=[
            {"name": "t", "args": {"x": 1.5}, "id": "t1"}]), ToolMessage("r", tool_call_id="t1", id="m3")],
    }
    ours = PiCheckpointSaver(tmp_path, backend=backend)
    reference = InMemorySaver()
    got: dict[str, list[Any]] = {"ours": [], "reference": []}
    cp = empty_checkpoint()
    cp["id"] = "1f000000-0000-6000-8000-000000000001"
    cp["channel_values"] = values
    cp["channel_versions"] = {k: f"{i:032}.0" for i, k in enumerate(values)}
    cp2 = empty_checkpoint()
    cp2["id"] = "1f000000-0000-6000-8000-000000000002"
    cp2["channel_values"] = {**values, "text": "changed"}
    cp2["channel_versions"] = {**cp["channel_versions"], "text": "99.0"}
    for name, saver in (("ours", ours), ("reference", reference)):
        cfg: Any = {"configurable": {"thread_id": "rt", "checkpoint_ns": ""}}
        cfg = saver.put(cfg, cp, {"source": "input", "step": -1, "writes": {"n": (1, 2)}}, cp["channel_versions"])
        saver.put_writes(cfg, [("when", values["when"]), ("bytes", b"\x01"), ("__error__", "e1")], "task-1", "a:b")
        saver.put_writes(cfg, [("__error__", "e2"), ("text", "again")], "task-1", "a:b")  # error replaced; idx 1 kept
        saver.put(cfg, cp2, {"source": "loop", "step": 0}, {"text": "99.0"})
        got[name] = [saver.get_tuple({"configurable": {"thread_id": "rt", "checkpoint_ns": "", "checkpoint_id": i}})
                     for i in (cp["id"], cp2["id"])]
    ours.close()
    again = PiCheckpointSaver(tmp_path, backend=backend)
    got["reopened"] = [again.get_tuple(t.config) for t in got["ours"]]
    again.close()
    for name in ("ours", "reopened"):
        for mine, theirs in zip(got[name], got["reference"]):
            assert mine is not None and theirs is not None
            assert mine.checkpoint == theirs.checkpoint
            assert mine.metadata == theirs.metadata
            assert mine.pending_writes == theirs.pending_writes
            assert mine.parent_config == theirs.parent_config
            assert mine.config == theirs.config
    assert got["ours"][0].pending_writes == [("task-1", "__error__", "e2"), ("task-1", "when", values["when"]),
                                             ("task-1", "bytes", b"\x01")]  # writes_sort_key order
    assert got["ours"][1].checkpoint["channel_values"]["text"] == "changed"
    assert got["ours"][1].checkpoint["channel_values"]["bytes"] == values["bytes"]  # from its parent's entry


def test_writes_before_their_checkpoint(tmp_path: Path, backend: str) -> None:
    """LangGraph may store a task's writes before the checkpoint (its puts run in the
    background): they are kept, found, and the tree stays one conversation."""
    saver = PiCheckpointSaver(tmp_path, backend=backend)
    cfg = {"configurable": {"thread_id": "early", "checkpoint_ns": ""}}
    c0 = empty_checkpoint()
    s0 = saver.put(cfg, c0, {"step": 0}, {})
    c1 = empty_checkpoint()
    c1["id"] = str(uuid.UUID(int=uuid.UUID(c0["id"]).int + 1))
    s1 = {"configurable": {**cfg["configurable"], "checkpoint_id": c1["id"]}}
    saver.put_writes(s1, [("ch", "early")], "t1")
    saver.put(s0, c1, {"step": 1}, {})
    saver.put_writes(s1, [("ch", "late")], "t2")
    got = saver.get_tuple(s1)
    assert got is not None and got.pending_writes == [("t1", "ch", "early"), ("t2", "ch", "late")]
    assert got.parent_config is not None and got.parent_config["configurable"]["checkpoint_id"] == c0["id"]
    saver.close()
    with SessionManager.open(saver.path_of("early"), backend=backend) as sm:
        assert len(sm.get_leaf_ids()) == 1 and c0["id"] in sm.get_path_ids(c1["id"])
        assert [sm[i]["customType"] for i in sm.get_path_ids()[1:]] == [CHECKPOINT_TYPE, WRITES_TYPE, CHECKPOINT_TYPE,
                                                                       WRITES_TYPE]


def test_copy_thread_is_a_pi_fork(tmp_path: Path, backend: str) -> None:
    """``copy_thread`` copies every entry unchanged into the target's file, whose header
    names the source (``parentSession``) and whose name entry names the target; a target
    that exists is refused."""
    saver = PiCheckpointSaver(tmp_path, backend=backend)
    config: Any = {"configurable": {"thread_id": "src", "checkpoint_ns": ""}}
    for step in range(3):
        config = saver.put(config, empty_checkpoint(), {"step": step}, {})
        saver.put_writes(config, [("ch", step)], f"task-{step}")
    saver.copy_thread("src", "dst")
    with pytest.raises(SessionFileExistsError):
        saver.copy_thread("src", "dst")
    copied = [(t.checkpoint["id"], t.metadata, t.pending_writes) for t in saver.list({"configurable": {"thread_id": "dst"}})]
    source = [(t.checkpoint["id"], t.metadata, t.pending_writes) for t in saver.list({"configurable": {"thread_id": "src"}})]
    assert copied == source and len(copied) == 3
    saver.close()
    assert sorted(os.listdir(tmp_path)) == ["dst.jsonl", "src.jsonl"]
    with SessionManager.open(saver.path_of("src"), backend=backend) as src, \
            SessionManager.open(saver.path_of("dst"), backend=backend) as dst:
        assert dst.get_header()["parentSession"] == saver.path_of("src")
        assert [e["id"] for e in dst.get_entries()][:-1] == [e["id"] for e in src.get_entries()]
        assert (src.get_session_name(), dst.get_session_name()) == ("src", "dst")
        assert dst.load_report == []


def test_copy_thread_removes_a_dead_copiers_folder(tmp_path: Path) -> None:
    """A copy killed outright (SIGKILL; SIGTERM ends the process without unwinding)
    left its folder beside the threads for good; the next copy removes one whose
    process is gone, and keeps one of a live process."""
    make = ("import os, sys, tempfile; d = tempfile.mkdtemp(prefix=f'.copy-{os.getpid()}-', dir=sys.argv[1]); "
            "open(os.path.join(d, 'fork.jsonl'), 'w').write('{}'); print(d, flush=True); sys.stdin.read()")
    dead = subprocess.Popen([sys.executable, "-c", make, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    live = subprocess.Popen([sys.executable, "-c", make, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    dead_dir, live_dir = dead.stdout.readline().strip(), live.stdout.readline().strip()  # type: ignore[union-attr]
    dead.kill()
    dead.wait()
    saver = PiCheckpointSaver(tmp_path)
    saver.put({"configurable": {"thread_id": "src", "checkpoint_ns": ""}}, empty_checkpoint(), {"step": 0}, {})
    saver.copy_thread("src", "dst")
    saver.close()
    live.communicate("")
    assert not os.path.exists(dead_dir) and os.path.isdir(live_dir)
    assert sorted(n for n in os.listdir(tmp_path) if not n.startswith(".")) == ["dst.jsonl", "src.jsonl"]


OTHER_WRITES = textwrap.dedent("""
    import sys
    from sessiontree.langgraph import PiCheckpointSaver
    with PiCheckpointSaver(sys.argv[1]) as s:
        s.put_writes({"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": sys.argv[2]}},
                     [("c", "theirs")], "task-theirs")
""")


def test_a_write_between_read_and_lock(tmp_path: Path, backend: str) -> None:
    """Savers made per request in several processes: another process's writes stored
    after this saver read the thread and before it took the file's lock used to take
    the id this saver then chose for its own writes entry: the line was written, read
    as a ``duplicate_id`` (``check`` unclean for good) and ``put_writes`` raised. The
    lock is taken before the thread is read for a write."""
    first = PiCheckpointSaver(tmp_path, backend=backend)
    cp = empty_checkpoint()
    cfg = first.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {"step": 0}, {})
    first.close()
    saver = PiCheckpointSaver(tmp_path, backend=backend)
    assert saver.get_tuple(cfg) is not None  # the thread is read
    mgr = saver._file("t", "").mgr
    assert mgr is not None
    real_refresh = mgr.refresh
    ran: list[int] = []

    def refresh_then_other_writes() -> int:
        added = real_refresh()
        if not ran:
            ran.append(subprocess.run([sys.executable, "-c", OTHER_WRITES, str(tmp_path), cp["id"]]).returncode)
        return added

    mgr.refresh = refresh_then_other_writes  # type: ignore[method-assign]
    saver.put_writes(cfg, [("c", "mine")], "task-mine")
    saver.close()
    assert ran == [0]
    again = PiCheckpointSaver(tmp_path, backend=backend)
    got = again.get_tuple(cfg)
    assert got is not None and sorted(got.pending_writes) == [("task-mine", "c", "mine"), ("task-theirs", "c", "theirs")]
    again.close()
    with SessionManager.open(str(tmp_path / "t.jsonl"), backend=backend) as sm:
        assert sm.load_report == [] and len(sm.get_leaf_ids()) == 1


def test_writes_after_the_next_checkpoint(tmp_path: Path, backend: str) -> None:
    """Writes of a checkpoint stored after its child checkpoint (the background puts in
    the other order) go on at the end of the run: the file's last entry is still the end
    of the conversation, and no branch is made."""
    saver = PiCheckpointSaver(tmp_path, backend=backend)
    cfg = {"configurable": {"thread_id": "late", "checkpoint_ns": ""}}
    c0, c1 = empty_checkpoint(), empty_checkpoint()
    c1["id"] = str(uuid.UUID(int=uuid.UUID(c0["id"]).int + 1))
    c1["channel_values"] = {"messages": [HumanMessage("hi", id="h"), AIMessage("hello", id="a")]}
    c1["channel_versions"] = {"messages": saver.get_next_version(None, None)}
    s0 = saver.put(cfg, c0, {"step": 0}, {})
    s1 = saver.put(s0, c1, {"step": 1}, c1["channel_versions"])
    saver.put_writes(s0, [("messages", [AIMessage("hello", id="a")])], "agent")
    got = saver.get_tuple(s0)
    assert got is not None and [w[0] for w in got.pending_writes] == ["agent"]
    saver.close()
    with SessionManager.open(saver.path_of("late"), backend=backend) as sm:
        assert len(sm.get_leaf_ids()) == 1
        assert [m["role"] for m in sm.build_session_context().messages] == ["user", "assistant"]
        assert sm.get_path_ids()[-1] == s0["configurable"]["checkpoint_id"] + "/w1"
        assert s1["configurable"]["checkpoint_id"] in sm.get_path_ids()


def test_refused_checkpoints_write_nothing(tmp_path: Path) -> None:
    saver = PiCheckpointSaver(tmp_path)
    cfg = {"configurable": {"thread_id": "bad", "checkpoint_ns": ""}}
    cp = empty_checkpoint()
    cp["id"] = "a/b"
    with pytest.raises(ValueError):
        saver.put(cfg, cp, {}, {})
    assert not os.path.exists(saver.path_of("bad"))
    cp["id"] = str(uuid.uuid4())
    saver.put(cfg, cp, {}, {})
    size = os.path.getsize(saver.path_of("bad"))
    with pytest.raises(ValueError):
        saver.put(cfg, cp, {}, {})  # stored once: a thread only grows
    assert os.path.getsize(saver.path_of("bad")) == size
    with pytest.raises(ValueError):
        saver.put({"configurable": {"thread_id": "", "checkpoint_ns": ""}}, cp, {}, {})
    saver.close()


def test_entries_that_are_not_the_savers_are_skipped(tmp_path: Path, backend: str) -> None:
    """Lines written by hand or by another program into a thread's file: custom entries
    that are not checkpoints (whatever their ids), checkpoints and writes not in the
    saver's shape are skipped; a checkpoint whose payload the serializer cannot read
    raises a ValueError naming the file and the entry, never anything else."""
    saver = PiCheckpointSaver(tmp_path, backend=backend)
    cfg: Any = {"configurable": {"thread_id": "hand", "checkpoint_ns": ""}}
    good = saver.put(cfg, empty_checkpoint(), {"step": 0}, {})
    saver.put_writes(good, [("ch", "kept")], "task")
    saver.close()
    cid = good["configurable"]["checkpoint_id"]
    later = "ffffffff-0000-6000-8000-00000000000"  # sorts after every real id

    def line(eid: str, ctype: str, data: Any) -> str:
        return json.dumps({"type": "custom", "customType": ctype, "data": data, "id": eid, "parentId": None,
                           "timestamp": "2026-01-01T00:00:00.000Z"}) + "\n"

    with open(saver.path_of("hand"), "a") as f:
        f.write(line(later + "1", "someone.else", {"x": 1}))
        f.write(line(later + "2", CHECKPOINT_TYPE, {"checkpoint": "not a pair", "metadata": [1, 2]}))
        f.write(line(later + "3", CHECKPOINT_TYPE, "not a dict"))
        f.write(line(cid + "/w2", WRITES_TYPE, {"taskId": "t", "writes": [[0, "ch"], "junk", [True, "c", "s", "s"]]}))
        f.write(line(cid + "/w3", WRITES_TYPE, {"taskId": 5, "writes": []}))
        f.write(line(later + "4", CHECKPOINT_TYPE, {"checkpoint": ["msgpack", "!!not base64!!"],
                                                    "metadata": ["msgpack", "gA=="], "blobs": {}, "refs": {}}))
    saver = PiCheckpointSaver(tmp_path, backend=backend)
    with pytest.raises(ValueError, match=f"hand.jsonl: entry {later}4"):
        saver.get_tuple(cfg)  # the newest by id is the unreadable one
    got = saver.get_tuple(good)
    assert got is not None and got.pending_writes == [("task", "ch", "kept")]
    assert saver.get_tuple({"configurable": {**cfg["configurable"], "checkpoint_id": later + "2"}}) is None
    assert saver.get_tuple({"configurable": {**cfg["configurable"], "checkpoint_id": later + "1"}}) is None
    saver.close()


def test_thread_ids_become_file_names_and_back(tmp_path: Path) -> None:
    saver = PiCheckpointSaver(tmp_path)
    keys = [("a/b", ""), ("..", ""), ("ü x@y", ""), ("t", "child:1|grand:2"), ("%41", "")]
    for thread_id, ns in keys:
        saver.put({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}, empty_checkpoint(), {}, {})
    assert all("/" not in n and not n.startswith(".") for n in os.listdir(tmp_path))
    listed = {(t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"])
              for t in saver.list(None)}
    assert listed == set(keys)
    saver.close()


# ------------------------------------------------------- other processes
CHILD = textwrap.dedent("""
    import sys, uuid
    from langgraph.checkpoint.base import empty_checkpoint
    from sessiontree.langgraph import PiCheckpointSaver
    root, seed = sys.argv[1], int(sys.argv[2])
    import random
    rng = random.Random(seed)
    saver = PiCheckpointSaver(root)
    cfg = {"configurable": {"thread_id": "crash", "checkpoint_ns": ""}}
    parent = saver.get_tuple(cfg)
    config = parent.config if parent else cfg
    step = 0
    while True:
        cp = empty_checkpoint()
        cp["channel_values"] = {"blob": "x" * rng.randrange(10, 20000)}
        cp["channel_versions"] = {"blob": saver.get_next_version(None, None)}
        config = saver.put(config, cp, {"step": step, "seed": seed}, cp["channel_versions"])
        print("put", cp["id"], flush=True)
        for k in range(rng.randrange(0, 3)):
            task = str(uuid.uuid4())
            saver.put_writes(config, [("ch", "w" * rng.randrange(1, 5000))], task)
            print("writes", cp["id"], task, flush=True)
        step += 1
""")


# A kill in the middle of a line leaves it torn: the next open reports it (and skips it).
@pytest.mark.filterwarnings("ignore::sessiontree.LoadReportWarning")
def test_a_killed_writer_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """A writer killed (SIGKILL) at random moments, between checkpoints and their writes:
    everything a call acknowledged (returned) is read back, and a new writer continues
    the thread."""
    rng = random.Random(28)
    acked_puts: list[str] = []
    acked_writes: list[tuple[str, str]] = []
    for seed in range(5):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), str(seed)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        first = proc.stdout.readline()  # writing has begun (whatever the machine's load)
        time.sleep(rng.random() * 0.5)
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err
        assert first.startswith("put "), err
        for line in (first + out).splitlines(keepends=True):
            kind, *rest = line.split()
            if not line.endswith("\n") or len(rest) != (1 if kind == "put" else 2):
                continue  # killed while printing: not acknowledged
            if kind == "put":
                acked_puts.append(rest[0])
            else:
                acked_writes.append((rest[0], rest[1]))
    assert len(acked_puts) > 5 and acked_writes
    saver = PiCheckpointSaver(tmp_path)
    for cid in acked_puts:
        got = saver.get_tuple({"configurable": {"thread_id": "crash", "checkpoint_ns": "", "checkpoint_id": cid}})
        assert got is not None, cid
    for cid, task in acked_writes:
        got = saver.get_tuple({"configurable": {"thread_id": "crash", "checkpoint_ns": "", "checkpoint_id": cid}})
        assert got is not None and any(w[0] == task for w in got.pending_writes), (cid, task)
    listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list({"configurable": {"thread_id": "crash"}})]
    assert set(acked_puts) <= set(listed)
    saver.close()
    # CONTRACT §4: a write torn by a kill is sealed with `#` by the next writer and stays an
    # `invalid_json` line; only the last kill can leave a `truncated` tail.
    lines = Path(saver.path_of("crash")).read_bytes().split(b"\n")
    with SessionManager.open(saver.path_of("crash")) as sm:
        kinds = [i.kind for i in sm.load_report]
        assert set(kinds) <= {"invalid_json", "truncated"} and kinds.count("truncated") <= 1, kinds
        assert len(kinds) <= 5, kinds
        for issue in sm.load_report:
            if issue.kind == "invalid_json":
                assert issue.line is not None and lines[issue.line - 1].endswith(b"#"), issue


PARALLEL = textwrap.dedent("""
    import os, signal, sys, time, operator
    from typing import Annotated, TypedDict
    from langgraph.graph import StateGraph, START, END
    from sessiontree.langgraph import PiCheckpointSaver
    root = sys.argv[1]

    class State(TypedDict, total=False):
        a: int
        b: int

    def fast(state):
        with open(os.path.join(root, "fast.ran"), "a") as f:
            f.write("x")
        return {"a": 1}

    def slow(state):
        with open(os.path.join(root, "slow.ran"), "a") as f:
            f.write("x")
        if not os.path.exists(os.path.join(root, "killed")):
            # Wait until fast's writes are acknowledged on disk (another reader sees them), then die.
            reader = PiCheckpointSaver(root)
            deadline = time.time() + 30
            while time.time() < deadline:
                got = reader.get_tuple({"configurable": {"thread_id": "par", "checkpoint_ns": ""}})
                if got and any(w[1] == "a" for w in got.pending_writes):
                    break
                reader.close()
                time.sleep(0.02)
            open(os.path.join(root, "killed"), "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return {"b": 2}

    b = StateGraph(State)
    b.add_node("fast", fast)
    b.add_node("slow", slow)
    b.add_edge(START, "fast")
    b.add_edge(START, "slow")
    b.add_edge("fast", END)
    b.add_edge("slow", END)
    graph = b.compile(checkpointer=PiCheckpointSaver(os.path.join(root, "threads")))
    cfg = {"configurable": {"thread_id": "par"}}
    out = graph.invoke({} if sys.argv[2] == "start" else None, cfg)
    print(sorted(out.items()))
""")


def test_a_crash_between_a_checkpoint_and_its_writes(tmp_path: Path) -> None:
    """A real graph killed while one of two parallel nodes runs, after the other's writes
    were stored: resuming runs only the killed node (the stored writes are used)."""
    threads = tmp_path / "threads"
    (tmp_path / "threads").mkdir()
    script = PARALLEL.replace("reader = PiCheckpointSaver(root)", "reader = PiCheckpointSaver(os.path.join(root, 'threads'))")
    first = subprocess.run([sys.executable, "-c", script, str(tmp_path), "start"], capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == -signal.SIGKILL, first.stderr
    resumed = subprocess.run([sys.executable, "-c", script, str(tmp_path), "resume"], capture_output=True, text=True,
                             timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "[('a', 1), ('b', 2)]"
    assert (tmp_path / "fast.ran").read_text() == "x"  # not run again
    assert (tmp_path / "slow.ran").read_text() == "xx"
    assert os.listdir(threads) == ["par.jsonl"]


OTHER = textwrap.dedent("""
    import json, sys
    from langgraph.checkpoint.base import empty_checkpoint
    from sessiontree.langgraph import PiCheckpointSaver
    saver = PiCheckpointSaver(sys.argv[1])
    cfg = {"configurable": {"thread_id": "one", "checkpoint_ns": ""}}
    try:
        if sys.argv[2] == "read":
            print(json.dumps([t.metadata["step"] for t in saver.list(cfg)]))
        elif sys.argv[2] == "write":
            saver.put(cfg, empty_checkpoint(), {"step": 99}, {})
            print("written")
        else:
            saver.delete_thread("one")
            print("deleted")
    except Exception as e:
        print(type(e).__name__)
""")


def test_one_writer_per_thread_and_readers(tmp_path: Path) -> None:
    saver = PiCheckpointSaver(tmp_path)
    cfg = {"configurable": {"thread_id": "one", "checkpoint_ns": ""}}
    config = cfg
    for step in range(3):
        config = saver.put(config, empty_checkpoint(), {"step": step}, {})
        reader = subprocess.run([sys.executable, "-c", OTHER, str(tmp_path), "read"], capture_output=True, text=True)
        assert json.loads(reader.stdout) == list(range(step, -1, -1)), reader.stderr
    for op in ("write", "delete"):
        other = subprocess.run([sys.executable, "-c", OTHER, str(tmp_path), op], capture_output=True, text=True)
        assert other.stdout.strip() == SessionLockedError.__name__, other.stderr
    assert [t.metadata["step"] for t in saver.list(cfg)] == [2, 1, 0]
    saver.close()  # the lock goes with it
    other = subprocess.run([sys.executable, "-c", OTHER, str(tmp_path), "delete"], capture_output=True, text=True)
    assert other.stdout.strip() == "deleted", other.stderr
    assert os.listdir(tmp_path) == []


def test_a_saver_made_per_request_and_dropped(tmp_path: Path) -> None:
    """A saver dropped without ``close()`` releases its threads' locks when collected."""
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for step in range(3):
        saver = PiCheckpointSaver(tmp_path)
        config = saver.put(config, empty_checkpoint(), {"step": step}, {})
        del saver
    saver = PiCheckpointSaver(tmp_path)
    assert [t.metadata["step"] for t in saver.list(config | {"configurable": {"thread_id": "t"}})] == [2, 1, 0]
    saver.close()
