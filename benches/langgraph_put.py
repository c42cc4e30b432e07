"""What one ``PiCheckpointSaver.put`` costs as a conversation grows: 300 checkpoints of a
messages channel gaining a user and an AI message each (~0.2 and ~1 KB), then 20 more
timed, with ``cProfile``'s top rows. Usage: ``python benches/langgraph_put.py``
(``SESSIONTREE_FSYNC=0``: the fsync is the disk's, not the saver's).
docs/BENCHMARKS.md, "A LangGraph thread".
"""

from __future__ import annotations

import cProfile
import os
import pstats
import tempfile
import time

os.environ["SESSIONTREE_FSYNC"] = "0"
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from sessiontree.langgraph import PiCheckpointSaver
saver = PiCheckpointSaver(tempfile.mkdtemp())
cfg = {"configurable": {"thread_id": "p", "checkpoint_ns": ""}}
msgs = []
v = None
def step(i):
    global cfg, v
    msgs.append(HumanMessage(f"q {i} " + "x"*200, id=f"h{i}")); msgs.append(AIMessage(f"a {i} " + "y"*1000, id=f"a{i}"))
    cp = empty_checkpoint(); cp["id"] = str(uuid6(clock_seq=i))
    v = saver.get_next_version(v, None)
    cp["channel_values"] = {"messages": list(msgs)}; cp["channel_versions"] = {"messages": v}
    cfg = saver.put(cfg, cp, {"step": i}, {"messages": v})
for i in range(300): step(i)
pr = cProfile.Profile(); pr.enable()
t = time.perf_counter()
for i in range(300, 320): step(i)
print("per put ms", (time.perf_counter()-t)/20*1000)
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(14)
