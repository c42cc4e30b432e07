"""An import that runs out of room part-way says how many entries it added as the file
holds them, never more: a result must not count entries that did not reach the disk."""

from __future__ import annotations

import errno
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

import sessiontree._storage as storage
from sessiontree import LoadReportWarning, SessionManager
from sessiontree.importers import import_claude


def _transcript(path: Path, turns: int) -> None:
    recs: list[dict[str, Any]] = []
    parent = None
    for i in range(turns):
        for role in ("user", "assistant"):
            uid = f"{role[0]}{i}"
            msg: dict[str, Any] = {"role": role, "content": f"{role} turn {i} " + "x" * 200}
            if role == "assistant":
                msg = {"id": f"msg{i}", "role": "assistant", "model": "claude",
                       "content": [{"type": "text", "text": f"answer {i}"}],
                       "usage": {"input_tokens": 1, "output_tokens": 2}}
            recs.append({"type": role, "uuid": uid, "parentUuid": parent, "sessionId": "s1", "cwd": "/p",
                         "timestamp": f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z", "message": msg})
            parent = uid
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _entries_in(path: str, backend: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        with SessionManager.open(path, backend=backend) as sm:
            return len(sm)


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("fail_after", [0, 1, 2, 3, 10, 25])
def test_entries_added_counts_only_what_was_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    backend: str, fail_after: int) -> None:
    src = tmp_path / "t.jsonl"
    _transcript(src, 20)
    out = tmp_path / "out"
    writes = 0
    real = os.write

    def write(fd: int, data: Any) -> int:
        nonlocal writes
        writes += 1
        if writes > fail_after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(storage.os, "write", write)
    (result,) = import_claude(str(src), to=str(out), backend=backend)
    monkeypatch.setattr(storage.os, "write", real)
    assert result.error is not None, result
    files = sorted(out.glob("*.jsonl")) if out.exists() else []
    on_disk = sum(_entries_in(str(f), backend) for f in files)
    assert result.entries_added == on_disk, (result.entries_added, on_disk)
