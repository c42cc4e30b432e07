"""Adversarial inputs: files built to break the loader, the two backends' agreement, the
writer and the command line.

Two groups:

* **Regressions** (``test_bug_*``): each failed when it was written; the docstring says
  what broke and what docs/CONTRACT.md / docs/ARCHITECTURE.md ask for instead.
* **Guards** (``test_guard_*``): nasty inputs that did not break; they keep it so.

Big inputs are generated in ``tmp_path``; every test stays well under 2 s once the bug
it pins is fixed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from sessiontree import InvalidSessionError, LoadReportWarning, SessionManager
from sessiontree.errors import SessionError, StaleSessionError

from _shared import native_available, open_quiet, report

needs_native = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

HDR = (
    b'{"type":"session","version":3,"id":"0197a0b0-0000-7000-8000-000000000000",'
    b'"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
)
TS = "2026-01-01T00:00:01.000Z"


# --------------------------------------------------------------------- helpers


def line(entry_id: Any, parent: Any, etype: Any = "message", ts: Any = TS, **extra: Any) -> bytes:
    d: dict[str, Any] = {"type": etype, "id": entry_id, "parentId": parent, "timestamp": ts}
    if etype == "message" and "message" not in extra:
        d["message"] = {"role": "user", "content": f"hi {entry_id}", "timestamp": 1}
    d.update(extra)
    return json.dumps(d, separators=(",", ":")).encode() + b"\n"


def assistant(entry_id: str, parent: str | None) -> bytes:
    msg = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p", "model": "m", "timestamp": 2}
    return line(entry_id, parent, message=msg)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()




def tree_shape(mgr: SessionManager) -> list[tuple[int, str, str | None]]:
    out: list[tuple[int, str, str | None]] = []
    stack = [(n, 0) for n in reversed(mgr.get_tree())]
    while stack:
        node, depth = stack.pop()
        out.append((depth, node.entry["id"], node.label))
        stack.extend((c, depth + 1) for c in reversed(node.children))
    return out


def snapshot(path: Path, backend: str) -> Any:
    """Everything a reader sees, or the exception (class, line, offset, message)."""
    try:
        mgr = open_quiet(path, backend)
    except InvalidSessionError as e:  # the message: test_bug_invalid_header_error_differs_between_backends
        return ("InvalidSessionError", e.line, e.offset)
    try:
        ctx = mgr.build_session_context()
        return {
            "report": report(mgr),
            "entries": mgr.get_entries(),
            "header": mgr.get_header(),
            "leaf": mgr.leaf_id,
            "tree": tree_shape(mgr),
            "branch": [e["id"] for e in mgr.get_branch()],
            "context": (ctx.messages, ctx.thinking_level, ctx.model),
            "name": mgr.get_session_name(),
        }
    finally:
        mgr.close()


def both(path: Path) -> Any:
    """Snapshot on both backends; assert they agree and the file is untouched."""
    before = sha(path)
    py = snapshot(path, "python")
    nat = snapshot(path, "native")
    assert py == nat
    assert sha(path) == before
    return py


def write(tmp_path: Path, data: bytes, name: str = "s.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def run_cli(args: list[str]) -> int:
    """Run the command line in-process; a Python exception escaping it is the bug."""
    from sessiontree.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            return main(args)
        except SystemExit as e:  # argparse
            return int(e.code or 0)


# ============================================================== regressions


def test_bug_python_backend_crashes_on_unhashable_type(backend: str, tmp_path: Path) -> None:
    """``{"type":[]...}`` / ``{"type":{}...}``: the python backend's loader does
    ``etype not in ENTRY_TYPES`` and raises ``TypeError: unhashable type`` out of
    ``SessionManager.open`` (and of every CLI command), while native keeps the entry as
    ``unknown_type``. Loader rule 12: any other type is kept and reported."""
    data = HDR + line("a", None) + line("b", "a", etype=[]) + line("c", "b", etype={"x": 1}) + line("d", "c")
    p = write(tmp_path, data)
    mgr = open_quiet(p, backend)
    assert [e["id"] for e in mgr.get_entries()] == ["a", "b", "c", "d"]
    assert [(k, ids) for k, _, _, ids in report(mgr)] == [("unknown_type", ("b",)), ("unknown_type", ("c",))]
    assert mgr.leaf_id == "d"
    mgr.close()


def test_bug_unhashable_type_in_a_v1_file(backend: str, tmp_path: Path) -> None:
    """Same crash through the migration path (v1 file: ``from_image`` of the migrated image)."""
    data = (
        b'{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        b'{"type":{},"timestamp":"2026-01-01T00:00:01.000Z"}\n'
    )
    p = write(tmp_path, data)
    mgr = open_quiet(p, backend)
    assert len(mgr) == 1
    assert [i.kind for i in mgr.load_report] == ["unknown_type"]
    mgr.close()


def test_bug_unhashable_type_arriving_by_refresh(backend: str, tmp_path: Path) -> None:
    """A foreign process appends an entry whose type is a list; ``refresh()`` must index it."""
    p = write(tmp_path, HDR + line("a", None))
    mgr = open_quiet(p, backend)
    with open(p, "ab") as f:
        f.write(line("b", "a", etype=["x"]))
    assert mgr.refresh() == 1
    assert mgr.leaf_id == "b"
    mgr.close()


_SIGBUS_READER = textwrap.dedent(
    """
    import sys, time, warnings
    warnings.simplefilter("ignore")
    from sessiontree import SessionManager
    from sessiontree.errors import SessionError
    mgr = SessionManager.open(sys.argv[1], backend=sys.argv[2])
    print("ready", flush=True)
    end = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < end:
        try:
            mgr.get_entry("b")
        except SessionError:
            pass
    """
)


@needs_native
def test_bug_sigbus_when_file_shrinks_during_a_read(tmp_path: Path) -> None:
    """Another process truncates the session file (and writes it back) while the native
    backend copies a line out of its memory map: the check-then-read race of
    ``Source::check`` lets the copy touch pages past the new end of file and the
    interpreter dies of SIGBUS (rc -7). CONTRACT §4: never a signal; ARCHITECTURE.md:
    "the native core checks again before touching its mapping (no SIGBUS)". Expected:
    ``StaleSessionError`` (or the old bytes), never a signal."""
    big = b'{"type":"message","id":"b","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"'
    big += b"x" * 20_000_000 + b'"}}\n'
    p = write(tmp_path, HDR + big)
    data = p.read_bytes()
    reader = subprocess.Popen(
        [sys.executable, "-c", _SIGBUS_READER, str(p), "native", "1.2"],
        stdout=subprocess.PIPE,
    )
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == b"ready"
        fd = os.open(p, os.O_WRONLY)
        try:
            while reader.poll() is None:
                os.ftruncate(fd, len(HDR))
                time.sleep(0.001)
                os.pwrite(fd, data, 0)
                time.sleep(0.002)
        finally:
            os.close(fd)
        rc = reader.wait(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert rc != -signal.SIGBUS, "reader killed by SIGBUS"
    assert rc == 0


def _compaction_chain(n: int, keep_root: bool) -> bytes:
    """n entries in one chain, every second one a compaction whose firstKeptEntryId is
    the root (``keep_root``) or its own parent (a short walk)."""
    parts = [HDR, b'{"type":"message","id":"e0","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}\n']
    for i in range(1, n):
        if i % 2 == 0:
            kept = "e0" if keep_root else f"e{i - 1}"
            parts.append(
                f'{{"type":"compaction","id":"e{i}","parentId":"e{i - 1}","timestamp":"2026-01-01T00:00:01.000Z",'
                f'"summary":"s","firstKeptEntryId":"{kept}","tokensBefore":1}}\n'.encode()
            )
        else:
            parts.append(
                f'{{"type":"message","id":"e{i}","parentId":"e{i - 1}","timestamp":"2026-01-01T00:00:01.000Z",'
                f'"message":{{"role":"user","content":"x"}}}}\n'.encode()
            )
    return b"".join(parts)


def _time_open(path: Path, backend: str) -> float:
    """CPU seconds of an open (a quadratic is work done; wall time also counts the
    machine's other jobs)."""
    t = time.process_time()
    open_quiet(path, backend).close()
    return time.process_time() - t


def test_bug_first_kept_check_is_quadratic(backend: str, tmp_path: Path) -> None:
    """Every compaction's ``firstKeptEntryId`` check walks its ancestors down to the kept
    entry; with many compactions that all keep the root of a long chain, open is
    O(n^2): 15 MB / 100,000 entries / 50,000 compactions take 99 s (python) and 4.2 s
    (native) to open, against 2.2 s / 0.2 s when each keeps its parent. A file's
    contents must not be able to make open hang. Measured as a ratio against the same
    file with short walks, so the machine's speed does not matter."""
    n = 20_000 if backend == "python" else 80_000
    slow = write(tmp_path, _compaction_chain(n, keep_root=True), "root.jsonl")
    fast = write(tmp_path, _compaction_chain(n, keep_root=False), "parent.jsonl")
    t_fast = min(_time_open(fast, backend) for _ in range(2))
    t_slow = _time_open(slow, backend)
    assert t_slow < 4 * t_fast + 0.2, f"open took {t_slow:.2f}s vs {t_fast:.2f}s with short walks"


@needs_native
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"garbage\n", id="not-json"),
        pytest.param(b"[1]\n", id="not-object"),
        pytest.param(b'{"id":"x"}\n', id="no-type"),
        pytest.param(b'{"type":"message","id":"x"}\n', id="type-message"),
        pytest.param(b'{"type":"session"}\n', id="no-id"),
        pytest.param(b'{"type":"session","id":null}\n', id="null-id"),
        pytest.param(b'{"type":"sess', id="torn-only"),
        pytest.param(b'{"type":[],"id":"x"}\n', id="type-list"),
        pytest.param(b'{"type":"sess\xffion","id":"x"}\n', id="invalid-utf8-in-type"),
        pytest.param(HDR.replace(b'"version":3', b'"version":NaN'), id="nan-header"),
        pytest.param(line("a", None)[:-1] + b"\r" + HDR, id="entry-CR-header"),
    ],
)
def test_bug_invalid_header_error_differs_between_backends(data: bytes, tmp_path: Path) -> None:
    """``InvalidSessionError`` for the same bytes carries a different message (and for
    ``{entry}\\r{header}`` a different reason: python reads the first object and says
    "type is 'message'", native says "header is not valid JSON") depending on the
    backend. CONTRACT §6: equal values for every method and every input; the
    differential tests require the same class and message."""
    p = write(tmp_path, data)
    errors = []
    for backend in ("python", "native"):
        with pytest.raises(InvalidSessionError) as info:
            SessionManager.open(str(p), backend=backend)
        e = info.value
        errors.append((e.line, e.offset, e.reason, str(e)))
    assert errors[0] == errors[1]


@needs_native
@pytest.mark.parametrize("limit,digits", [(640, 1000), (0, 5000)])
def test_bug_int_max_str_digits_splits_the_backends(limit: int, digits: int, tmp_path: Path) -> None:
    """Entries must equal ``json.loads`` of their line (CONTRACT §2). Python's limit on integer
    digits is a process setting (``sys.set_int_max_str_digits``,
    ``PYTHONINTMAXSTRDIGITS``); native hard-codes 4,300 digits. With the limit at 640
    native accepts the line and then ``get_entries()`` raises a bare ``ValueError``
    (``sessiontree check`` says "clean", ``tree`` prints a traceback); with the limit
    off (0) native drops a line python keeps."""
    big = line("b", "a", etype="custom", customType="x", data=0).replace(b'"data":0', b'"data":' + b"7" * digits)
    p = write(tmp_path, HDR + line("a", None) + big + line("c", "b"))
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        try:
            json.loads(big)
            expect_kept = True
        except ValueError:
            expect_kept = False
        results = []
        for backend in ("python", "native"):
            mgr = open_quiet(p, backend)
            try:
                results.append(([e["id"] for e in mgr.get_entries()], [i.kind for i in mgr.load_report]))
            except ValueError as e:  # the bug: a bare ValueError out of get_entries()
                results.append(("ValueError", str(e)[:60]))
            mgr.close()
    finally:
        sys.set_int_max_str_digits(old)
    assert results[0] == results[1]
    # The verdict is json.loads's under CPython's default limit (4,300 digits), fixed:
    # a process setting must not change which lines a session holds.
    del expect_kept
    assert ("b" in results[0][0]) == (digits <= 4300)


def test_bug_report_after_append_past_torn_tail(backend: str, tmp_path: Path) -> None:
    """After an append past a torn last line, the fragment is a complete invalid line
    (the writer put ``\\n`` after it): a fresh open reports it ``invalid_json``, but the
    open manager still reports ``truncated`` (``TreeIndex.append_line``: "the fragment
    then becomes an ordinary invalid line and is reported as such")."""
    p = write(tmp_path, HDR + line("a", None) + assistant("b", "a") + line("c", "b")[:40])
    mgr = open_quiet(p, backend)
    assert [i.kind for i in mgr.load_report] == ["truncated"]
    mgr.append_message({"role": "user", "content": "after", "timestamp": 5})
    in_memory = report(mgr)
    mgr.close()
    fresh = open_quiet(p, backend)
    assert in_memory == report(fresh)
    fresh.close()


@pytest.mark.parametrize(
    "chunk",
    [
        pytest.param(b"garbage\n", id="junk-line"),
        pytest.param(line("a", None), id="duplicate"),
        pytest.param(line("c", "b")[:30], id="partial-tail"),
    ],
)
def test_bug_refresh_that_adds_no_entry_keeps_stale_report(chunk: bytes, backend: str, tmp_path: Path) -> None:
    """``SessionManager.refresh()`` re-reads the index's report only when entries were
    added (``if added: self._report = ...``): a foreign junk line, duplicate or torn
    tail is indexed and reported by the index, yet ``load_report`` does not list it
    (a fresh open does). CONTRACT §2: every problem is an item of ``load_report``."""
    p = write(tmp_path, HDR + line("a", None) + assistant("b", "a"))
    mgr = open_quiet(p, backend)
    with open(p, "ab") as f:
        f.write(chunk)
    assert mgr.refresh() == 0
    fresh = open_quiet(p, backend)
    assert report(mgr) == report(fresh) != []
    fresh.close()
    mgr.close()


@pytest.mark.parametrize("how", ["same-size-overwrite", "truncate-and-regrow"])
def test_bug_file_rewritten_in_place_while_open(how: str, backend: str, tmp_path: Path) -> None:
    """The file is rewritten in place (same inode, size not smaller) after it was read:
    the python backend keeps returning what it read, the native one returns the new
    bytes from its map (different values), or raises a bare ``ValueError`` from the
    decoder when the new bytes are not JSON where an entry was. Both backends must
    agree: the old values, or ``StaleSessionError`` (the truncation/replacement the
    manager's staleness check is there to catch)."""
    p = write(tmp_path, HDR + line("a", None) + assistant("b", "a") + line("c", "b"))
    mgr = open_quiet(p, backend)
    original = mgr.get_entries()
    data = p.read_bytes()
    if how == "same-size-overwrite":
        new = data.replace(b'"text":"ok"', b'"text":"KO"').replace(b'"role":"user","content":"hi c"', b'"role":"user"}}' + b"\n" * 15)
        assert len(new) == len(data)
        with open(p, "r+b") as f:
            f.write(new)
    else:
        with open(p, "r+b") as f:
            f.truncate(0)
            f.write(b"\n\n\n" + data)
    try:
        got = [mgr.get_entries(), mgr.get_entry("b"), mgr["c"], mgr.get_branch(), mgr.build_session_context().messages]
    except StaleSessionError:
        pass
    else:
        assert got[0] == original
        assert got[1] == original[1]
        assert got[2] == original[2]
        assert got[3] == original
    finally:
        mgr.close()


def test_bug_migration_widens_file_mode(backend: str, tmp_path: Path) -> None:
    """Migrating a v1 file (rewrite through a temporary file + rename) creates the new
    file with mode 0644 whatever the original's mode: a private (0600) session becomes
    world-readable. Pi rewrites in place and keeps the mode; the backup keeps it too."""
    v1 = (
        b'{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        b'{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}\n'
    )
    p = write(tmp_path, v1)
    os.chmod(p, 0o600)
    mgr = open_quiet(p, backend)
    mgr.append_message({"role": "user", "content": "b", "timestamp": 2})
    mgr.close()
    assert json.loads(p.read_bytes().split(b"\n")[0])["version"] == 3
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(line("l", "a", etype="label", targetId=["a"], label="x"), id="label-targetId-list"),
        pytest.param(line("l", "a", etype="label", targetId={"a": 1}, label="x"), id="label-targetId-dict"),
    ],
)
def test_bug_cli_info_crashes_on_unhashable_label_target(entry: bytes, backend: str, tmp_path: Path) -> None:
    """``sessiontree info``: ``label_targets.add(entry.get("targetId"))`` raises
    ``TypeError: unhashable type`` for a label whose targetId is a list/dict."""
    p = write(tmp_path, HDR + line("a", None) + entry)
    assert run_cli(["--backend", backend, "--color", "never", "info", str(p)]) in (0, 1)


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param({"input": None, "output": 1}, id="none"),
        pytest.param({"input": [1], "output": 1}, id="list"),
        pytest.param({"input": {}, "output": 1}, id="dict"),
        pytest.param({"input": "12", "output": 1}, id="str"),
    ],
)
def test_bug_cli_context_crashes_on_odd_usage(usage: dict[str, Any], backend: str, tmp_path: Path) -> None:
    """``sessiontree context``: ``f"{usage.get('input', 0):,}"`` raises TypeError /
    ValueError when an assistant message's usage numbers are not numbers."""
    msg = {"role": "assistant", "content": [{"type": "text", "text": "t"}], "provider": "p", "model": "m", "usage": usage, "timestamp": 2}
    p = write(tmp_path, HDR + line("a", None, message=msg))
    assert run_cli(["--backend", backend, "--color", "never", "context", str(p)]) in (0, 1)


@needs_native
def test_bug_cli_tree_crashes_on_unhashable_type(tmp_path: Path) -> None:
    """``sessiontree tree`` (native backend, which loads the file): ``entry.get("type") in
    _KEEP_TYPES`` raises ``TypeError: unhashable type: 'list'`` in ``_chain_rows``."""
    data = HDR + line("r", None)
    prev = "r"
    for i in range(6):
        data += line(f"e{i}", prev, etype=[] if i == 3 else "message")
        prev = f"e{i}"
    p = write(tmp_path, data)
    assert run_cli(["--backend", "native", "--color", "never", "tree", str(p)]) in (0, 1)


def test_bug_cli_info_crashes_on_deeply_nested_header(backend: str, tmp_path: Path) -> None:
    """A header nested 1,000 levels deep is valid (limit 1,024; the library opens it), but
    ``sessiontree info``'s ``file_version`` re-parses the first line with a bare
    ``json.loads`` and dies of ``RecursionError``."""
    hdr = HDR[:-2] + b',"x":' + b"[" * 1000 + b"1" + b"]" * 1000 + b"}\n"
    p = write(tmp_path, hdr + line("a", None))
    open_quiet(p, backend).close()  # the library itself is fine
    assert run_cli(["--backend", backend, "--color", "never", "info", str(p)]) in (0, 1)


# ================================================================== guards

REAL = (
    b'{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2026-01-01T00:00:02.000Z",'
    b'"message":{"role":"assistant","content":[{"type":"text","text":"h\\u00e9 \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 '
    b'\\ud83d\\ude00 \\"q\\" \\\\ \xe2\x80\xa8"}],"n":-0,"f":1e400,"big":123456789012345678901234567890,'
    b'"provider":"p","model":"m","timestamp":2}}'
)


@needs_native
def test_guard_torn_line_at_every_byte(tmp_path: Path) -> None:
    """A real line cut at every byte (mid UTF-8, mid escape ``\\u12``), at the end of the
    file, followed by a new line, or fused with a complete entry: both backends agree,
    the file stays byte-identical, and the fused entry is recovered."""
    head = HDR + line("aaaaaaaa", None)
    tail = line("cccccccc", "aaaaaaaa")
    p = tmp_path / "s.jsonl"
    for cut in range(0, len(REAL) + 1, 3):
        for suffix in (b"", b"\n" + tail, tail):
            p.write_bytes(head + REAL[:cut] + suffix)
            snap = both(p)
            if suffix and cut < len(REAL):
                assert "cccccccc" in [e["id"] for e in snap["entries"]]


@needs_native
@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xa0\xbd\xed\xb8\x80", b"\xf4\x90\x80\x80", b"\xc3", b"\xf0\x9f\x98", b"\x00", b"\r", b"\xef\xbb\xbf"],
    ids=lambda b: b.hex(),
)
def test_guard_bad_bytes_everywhere(bad: bytes, tmp_path: Path) -> None:
    """Invalid UTF-8 (overlong, CESU surrogates, beyond U+10FFFF, truncated sequences),
    NUL, a lone CR and a BOM inserted at every position of a label line: both backends
    agree on every query and leave the file untouched."""
    body = line("bbbbbbbb", "aaaaaaaa", etype="label", targetId="aaaaaaaa", label="lab")[:-1]
    head = HDR + line("aaaaaaaa", None)
    p = tmp_path / "s.jsonl"
    for pos in range(len(body) + 1):
        p.write_bytes(head + body[:pos] + bad + body[pos:] + b"\n" + line("cccccccc", "bbbbbbbb"))
        both(p)


@needs_native
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"  \n\t\n\r\n", id="whitespace"),
        pytest.param(HDR, id="header-only"),
        pytest.param(HDR[:-1], id="header-no-newline"),
        pytest.param(b"\xef\xbb\xbf" + HDR + line("a", None), id="bom"),
        pytest.param(b"\xef\xbb\xbf\xef\xbb\xbf" + HDR, id="double-bom"),
        pytest.param((HDR + line("a", None) + line("b", "a")).replace(b"\n", b"\r\n"), id="crlf"),
        pytest.param((HDR + line("a", None) + line("b", "a")).replace(b"\n", b"\r"), id="lone-cr"),
        pytest.param(HDR + line("a", None) + b"\x00\n" + line("b", "a"), id="nul-line"),
        pytest.param(HDR + line("a", None) + line("b", "a")[:30] + line("c", "a"), id="fused"),
        pytest.param(b'{"type":"sess' + HDR + line("a", None), id="torn-before-header"),
        pytest.param(b"garbage\n[1]\n" + HDR + line("a", None), id="junk-before-header"),
    ],
)
def test_guard_framing(data: bytes, tmp_path: Path) -> None:
    both(write(tmp_path, data))


@needs_native
def test_guard_duplicate_keys_and_escaped_ids(tmp_path: Path) -> None:
    """Duplicate keys behave as ``json.loads`` (the last wins, for id, parentId, type,
    firstKeptEntryId, targetId, label); ``"\\u0061bc"`` is the id ``"abc"``."""
    m = '"message":{"role":"user","content":"x"}'
    t = f'"timestamp":"{TS}"'
    lines = [
        f'{{"type":"message","id":"abc","parentId":null,{t},{m}}}',
        f'{{"type":"message","id":"a1","id":"a2","parentId":"\\u0061bc",{t},{m}}}',
        f'{{"type":"message","id":"b","parentId":"zz","parentId":"a2",{t},{m}}}',
        f'{{"type":"message","id":"\\u0061bc","parentId":null,{t},{m}}}',
        f'{{"type":"message","type":"compaction","id":"c","parentId":"b",{t},"summary":"S","firstKeptEntryId":"zz","firstKeptEntryId":"a2","tokensBefore":1}}',
        f'{{"type":"label","id":"l","parentId":"c",{t},"targetId":"zz","targetId":"abc","label":"","label":"yes"}}',
    ]
    snap = both(write(tmp_path, HDR + "\n".join(lines).encode() + b"\n"))
    assert [e["id"] for e in snap["entries"]] == ["abc", "a2", "b", "c", "l"]
    assert ("duplicate_id", 5, ("abc",)) in [(k, ln, ids) for k, ln, _, ids in snap["report"]]
    assert snap["branch"] == ["abc", "a2", "b", "c", "l"]
    assert snap["context"][0][0]["role"] == "compactionSummary"
    assert len(snap["context"][0]) == 3  # summary, a2, b
    assert snap["tree"][0] == (0, "abc", "yes")


@needs_native
def test_guard_lone_surrogate_ids(tmp_path: Path) -> None:
    data = (
        HDR
        + line("\ud800", None)
        + line("\udc00x", "\ud800")
        + line("l", "\udc00x", etype="label", targetId="\ud800", label="\udfff")
        + line("c", "l", etype="compaction", summary="S", firstKeptEntryId="\udc00x", tokensBefore=1)
        + line("\ud800\udc00", "c")
        + line("\U00010000", "c")
    )
    snap = both(write(tmp_path, data))
    assert snap["tree"][0] == (0, "\ud800", "\udfff")
    assert [k for k, *_ in snap["report"]] == ["duplicate_id"]


@needs_native
@pytest.mark.parametrize(
    "entries,cycles",
    [
        pytest.param([("a", "a"), ("b", "a")], [("a",)], id="self"),  # a cycle of one (Pi 0.99 rules)
        pytest.param([("a", "b"), ("b", "a"), ("c", "a")], [("a", "b")], id="two-cycle"),
        pytest.param([(f"n{i}", f"n{(i + 1) % 50}") for i in range(50)] + [("t", "n10")], [tuple(f"n{i}" for i in range(50))], id="long"),
        pytest.param([("t0", "n3")] + [(f"n{i}", f"n{(i + 1) % 5}") for i in range(5)] + [("t1", "n0"), ("t2", "t1")], [tuple(f"n{i}" for i in range(5))], id="tails"),
        pytest.param([("a", "b"), ("b", "a"), ("c", "d"), ("d", "c"), ("e", "d")], [("a", "b"), ("c", "d")], id="two-cycles"),
        pytest.param([("c", "b"), ("b", "a"), ("a", None)], [], id="forward"),
    ],
)
def test_guard_cycles(entries: list[tuple[str, str | None]], cycles: list[tuple[str, ...]], tmp_path: Path) -> None:
    data = HDR + b"".join(line(i, p) for i, p in entries)
    snap = both(write(tmp_path, data))
    assert [ids for k, _, _, ids in snap["report"] if k == "cycle"] == cycles
    assert sorted(i for _, i, _ in snap["tree"]) == sorted(i for i, _ in entries)  # every entry once


@needs_native
@pytest.mark.parametrize("kept", ["zz", "c", "d", "s", 1, None, ["a"], {"a": 1}])
def test_guard_first_kept_off_path(kept: Any, tmp_path: Path) -> None:
    data = HDR + line("a", None) + line("s", "a") + line("c", "a", etype="compaction", summary="S", firstKeptEntryId=kept, tokensBefore=1) + line("d", "c")
    snap = both(write(tmp_path, data))
    # Keeping itself is a self-retaining compaction (Pi 0.87+): valid, keeps nothing either.
    assert [k for k, *_ in snap["report"]] == ([] if kept == "c" else ["first_kept_off_path"])
    assert [m.get("role") for m in snap["context"][0]] == ["compactionSummary", "user"]


@needs_native
def test_guard_deep_chain_no_recursion_limit(tmp_path: Path) -> None:
    """20,000-deep chain (20 x Python's recursion limit): tree, branch, context."""
    n = 20_000
    parts = [HDR, line("e0", None)]
    parts += [line(f"e{i}", f"e{i - 1}") for i in range(1, n)]
    p = write(tmp_path, b"".join(parts))
    for backend in ("python", "native"):
        mgr = open_quiet(p, backend)
        tree = mgr.get_tree()
        depth, node = 0, tree[0]
        while node.children:
            node, depth = node.children[0], depth + 1
        assert depth == n - 1
        assert len(mgr.get_branch()) == n
        assert len(mgr.build_session_context().messages) == n
        mgr.close()


@needs_native
@pytest.mark.parametrize("depth,valid", [(1022, True), (1023, True), (1024, False), (1025, False)])
@pytest.mark.parametrize("inner", ["1", '"\\ud800"', "12345678901234567890123"], ids=["plain", "surrogate", "bigint"])
def test_guard_nesting_limit(depth: int, valid: bool, inner: str, tmp_path: Path) -> None:
    """Arrays nested ``depth`` deep inside the entry object: deeper than 1,024 levels in
    all is invalid on both backends, also where decoding falls back to ``json.loads``."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))  # for == on the nested values
    entry = f'{{"type":"custom","id":"a","parentId":null,"timestamp":"{TS}","customType":"x","data":{"[" * depth}{inner}{"]" * depth}}}\n'
    snap = both(write(tmp_path, HDR + entry.encode() + line("b", "a")))
    assert ("a" in [e["id"] for e in snap["entries"]]) == valid


@needs_native
@pytest.mark.parametrize(
    "value,valid",
    [("1e400", True), ("-1e400", True), ("-0", True), ("1" * 4300, True), ("1" * 4301, False), ("NaN", False), ("Infinity", False), ("-Infinity", False), ("[1,NaN]", False), ("18446744073709551616", True), ("1e-400", True)],
    ids=lambda v: str(v)[:12],
)
def test_guard_numbers(value: str, valid: bool, tmp_path: Path) -> None:
    entry = f'{{"type":"custom","id":"a","parentId":null,"timestamp":"{TS}","customType":"x","data":{value}}}\n'
    snap = both(write(tmp_path, HDR + entry.encode() + line("b", "a")))
    got = [e for e in snap["entries"] if e["id"] == "a"]
    assert bool(got) == valid
    if valid:
        assert got[0] == json.loads(entry)


@needs_native
def test_guard_odd_field_types(tmp_path: Path) -> None:
    """Non-string ids / parentIds / types / names / levels / labels: both backends agree."""
    weird: list[Any] = [None, 1, 1.5, True, [], [1], {}, {"a": 1}, "", "\ud800"]
    data = HDR + line("r", None)
    n = 0
    for w in weird:
        for extra in (
            {"etype": "label", "targetId": w, "label": w},
            {"etype": "session_info", "name": w},
            {"etype": "thinking_level_change", "thinkingLevel": w},
            {"etype": "model_change", "provider": w, "modelId": w},
            {"etype": "branch_summary", "summary": w, "fromId": w},
            {"etype": "custom_message", "customType": w, "content": w, "display": w},
            {"etype": "compaction", "summary": w, "firstKeptEntryId": "r", "tokensBefore": w},
            {"message": {"role": w, "content": w}},
            {"ts": w},
        ):
            n += 1
            data += line(f"e{n}", "r", **extra)
        data += line(w, "r") + line(f"p{n}", w)
    both(write(tmp_path, data))


@needs_native
def test_guard_refresh_after_foreign_growth(tmp_path: Path) -> None:
    """Complete lines, a partial line, junk, duplicates and a cycle appended by another
    writer: ``refresh()`` equals a fresh open on both backends."""
    base = HDR + line("a", None) + assistant("b", "a")
    growth = [
        line("c", "b"),
        line("d", "c")[:20],
        line("d", "c")[20:],
        b"\xff\xfe junk\n" + line("aaa", "zz"),
        line("a", "d"),
        line("x1", "x2") + line("x2", "x1"),
        b"\xef\xbb\xbf" + line("e", "d").replace(b"\n", b"\r\n"),
    ]
    for backend in ("python", "native"):
        p = write(tmp_path, base, f"{backend}.jsonl")
        mgr = open_quiet(p, backend)
        for chunk in growth:
            with open(p, "ab") as f:
                f.write(chunk)
            mgr.refresh()
            fresh = open_quiet(p, backend)
            assert mgr.get_entries() == fresh.get_entries()
            assert mgr.leaf_id == fresh.leaf_id
            assert tree_shape(mgr) == tree_shape(fresh)
            fresh.close()
        mgr.close()


def test_guard_stale_file_is_refused(backend: str, tmp_path: Path) -> None:
    """Truncated, replaced (rename over) or deleted while open: ``StaleSessionError``
    on reads and appends, and the file is not written."""
    for how in ("truncate", "rename", "delete"):
        p = write(tmp_path, HDR + line("a", None) + assistant("b", "a"), f"{how}.jsonl")
        mgr = open_quiet(p, backend)
        if how == "truncate":
            os.truncate(p, 50)
        elif how == "rename":
            q = tmp_path / "new.jsonl"
            q.write_bytes(p.read_bytes() + line("c", "b"))
            os.replace(q, p)
        else:
            p.unlink()
        after = p.read_bytes() if p.exists() else None
        with pytest.raises(StaleSessionError):
            mgr.get_entries()
        with pytest.raises(StaleSessionError):
            mgr.append_message({"role": "user", "content": "x", "timestamp": 1})
        assert (p.read_bytes() if p.exists() else None) == after
        mgr.close()


def test_guard_second_writer_refused_then_catches_up(backend: str, tmp_path: Path) -> None:
    p = write(tmp_path, HDR + line("a", None) + assistant("b", "a"))
    a = open_quiet(p, backend)
    b = open_quiet(p, backend)
    a.append_message({"role": "user", "content": "from a", "timestamp": 3})
    with pytest.raises(SessionError):
        b.append_message({"role": "user", "content": "from b", "timestamp": 4})
    a.close()
    new = b.append_message({"role": "user", "content": "from b", "timestamp": 4})
    b.close()
    fresh = open_quiet(p, backend)
    assert len(fresh) == 4 and fresh.leaf_id == new and fresh.load_report == []
    fresh.close()


@pytest.mark.parametrize("index", [3, 0, -1, 10**30, 2.5, "2", None, True, 4, 5])
def test_guard_v1_migration_odd_first_kept_index(index: Any, backend: str, tmp_path: Path) -> None:
    """v1 files with odd ``firstKeptEntryIndex`` values: open leaves the file
    byte-identical; the first append rewrites it as v3, keeps the original byte for byte
    as ``.v1.bak``, and a reopen sees the same ids as before the append."""
    v1 = b'{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
    for role in ("user", "assistant", "user"):
        v1 += json.dumps({"type": "message", "timestamp": TS, "message": {"role": role, "content": "x"}}).encode() + b"\n"
    v1 += json.dumps({"type": "compaction", "timestamp": TS, "summary": "S", "firstKeptEntryIndex": index, "tokensBefore": 5}).encode() + b"\n"
    v1 += json.dumps({"type": "message", "timestamp": TS, "message": {"role": "hookMessage", "content": "h"}}).encode() + b"\n"
    p = write(tmp_path, v1)
    mgr = open_quiet(p, backend)
    assert p.read_bytes() == v1
    before = mgr.get_entries()
    assert "firstKeptEntryIndex" not in before[3] or not isinstance(index, (int, float)) or isinstance(index, bool)
    mgr.append_message({"role": "user", "content": "new", "timestamp": 9})
    mgr.close()
    assert (tmp_path / "s.jsonl.v1.bak").read_bytes() == v1
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    again = open_quiet(p, backend)
    assert again.get_header()["version"] == 3
    assert again.get_entries()[: len(before)] == before
    again.close()
