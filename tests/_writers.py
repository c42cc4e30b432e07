"""Real second processes for the durability tests: a writer that appends bytes in pieces
on command, and Pi-shaped long lines whose prefixes end right after nested objects.

A nested object that starts with ``{"type":`` is what every Pi content block is
(``[{"type":"text",...}]``) and what a tool result holding parsed session lines holds:
a prefix of such a line that ends right after one looks like "a torn fragment, then a
complete entry" to loader rule 4 unless the rule is kept off unterminated pieces.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HDR = (
    b'{"type":"session","version":3,"id":"0197a0b0-0000-7000-8000-00000000d0a1",'
    b'"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
)


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def user(eid: str, parent: str | None, text: str = "hi") -> bytes:
    return dumps(
        {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": text, "timestamp": 1}}
    )


def assistant(eid: str, parent: str | None, blocks: int = 3, size: int = 300) -> bytes:
    """An assistant message with several text blocks (each ``{"type":"text",...}``)."""
    content = [{"type": "text", "text": f"block {k} " + "é中" * (size // 3)} for k in range(blocks)]
    return dumps(
        {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": content, "provider": "p", "model": "m", "timestamp": 2}}
    )


def tool_result(eid: str, parent: str | None, nested: int = 3) -> bytes:
    """A tool result whose ``details`` hold parsed session lines (objects with ``type``,
    ``id`` and ``parentId``): a prefix ending after one of them, read as "fragment +
    entry", would invent an entry with that id."""
    lines = [
        {"type": "message", "id": f"n{eid}{k}", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": "nested", "timestamp": 0}}
        for k in range(nested)
    ]
    return dumps(
        {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                     "content": [{"type": "text", "text": "read 3 lines"}], "details": {"entries": lines},
                     "isError": False, "timestamp": 3}}
    )


def cuts_after_objects(line: bytes) -> list[int]:
    """Positions just after every ``}`` inside ``line`` (where rule 4 would bite)."""
    return [i + 1 for i, b in enumerate(line[:-1]) if b == ord("}")]


WRITER = r"""
import os, sys
path, data_path = sys.argv[1], sys.argv[2]
data = open(data_path, "rb").read()
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
pos = 0
print("ready", flush=True)
for cmd in sys.stdin:
    end = int(cmd)
    view = memoryview(data)[pos:end]
    while view:
        n = os.write(fd, view)
        view = view[n:]
    pos = end
    print("ok", flush=True)
"""


class PieceWriter:
    """Another process that appends ``data`` to ``path`` up to each position it is told."""

    def __init__(self, path: Path, data: bytes, tmp: Path) -> None:
        src = tmp / "pieces.bin"
        src.write_bytes(data)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(src)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self._reply() == "ready"

    def _reply(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def write_to(self, end: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{end}\n")
        self.proc.stdin.flush()
        assert self._reply() == "ok"

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)
