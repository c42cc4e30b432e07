"""A command run with its standard output on a pseudo-terminal of a given width (as a
person runs it: rich sees a terminal and its size), the lines it wrote read back."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07")


# The console script's start: its own folder first on sys.path, never the working folder.
SCRIPT = ["-c", "import sys; del sys.path[0]; from sessiontree.cli import main; sys.exit(main())"]


def on_terminal(args: list[str], cols: int, *, env: dict[str, str] | None = None,
                cwd: Path | None = None, start: list[str] | None = None) -> tuple[int, list[str], str]:
    """``sessiontree ARGS`` with stdout on a ``cols``-wide pseudo-terminal (``$COLUMNS``
    unset: the terminal's size is what counts) and stderr piped: ``(status, stdout's
    lines without colour escapes, stderr)``. ``start``: how Python starts it (default
    ``-m sessiontree``; :data:`SCRIPT` as the installed command does)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    full.update(env or {})
    proc = subprocess.Popen([sys.executable, *(start or ["-m", "sessiontree"]), *args], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE, env=full, cwd=cwd, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.stderr is not None
    err = proc.stderr.read().decode("utf-8", "replace")
    status = proc.wait(timeout=300)
    os.close(master)
    text = _ESCAPES.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return status, lines, err
