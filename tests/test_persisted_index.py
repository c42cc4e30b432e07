"""The persisted index (``src/persist/``) gives every answer a scan gives.

A state machine drives one session file through what happens to files in the field:
another *process* appends entries (every type, glued objects, garbage, a torn last line
and its completion), the file is rewritten in place at the same size, its end is
rewritten, it is cut short, replaced by another file; the persisted index is damaged
(a flipped byte, cut, garbage, another session's index, another build's), and several
processes open the session at once (each writes the index). After every step the
native backend's answers through the persisted index equal its answers with
``SESSIONTREE_INDEX=off`` and the python backend's (``test_differential.snapshot``:
every public call of ``SessionManager``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sessiontree import SessionManager, StaleSessionError
from sessiontree import _caches
from sessiontree import catalog as cat
from sessiontree.errors import LoadReportWarning

from _shared import native_available
from test_differential import snapshot

pytestmark = pytest.mark.skipif(not native_available(), reason="the native extension is not built")

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}

# A child process that opens the session through the persisted index (no size floor,
# no settling time, as in this process) and prints what it saw.
_OPEN_SCRIPT = r"""
import hashlib, sys, warnings
warnings.simplefilter("ignore")
from sessiontree import SessionManager, _caches
_caches.INDEX_MIN_BYTES, _caches.INDEX_SETTLE = 0, 0.0
for _ in range(int(sys.argv[2])):
    try:
        m = SessionManager.open(sys.argv[1], backend="native")
    except Exception as e:
        print(type(e).__name__, flush=True)
        continue
    print(len(m), m.leaf_id, len(m.load_report), flush=True)
    m.close()
"""

_APPEND_SCRIPT = r"""
import sys
with open(sys.argv[1], "ab") as f:
    f.write(bytes.fromhex(sys.argv[2]))
"""


def _open(path: str, backend: str = "native") -> SessionManager:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadReportWarning)
        return SessionManager.open(path, backend=backend)


def answers(path: str, backend: str = "native", index: bool = True) -> dict[str, Any]:
    """Every answer of a fresh open of ``path`` (an error is an answer too)."""
    old = os.environ.get(_caches.INDEX_ENV)
    if not index:
        os.environ[_caches.INDEX_ENV] = "off"
    try:
        try:
            m = _open(path, backend)
        except Exception as e:  # noqa: BLE001 - compared
            return {"open": (type(e).__name__, str(e))}
        try:
            return snapshot(m)
        finally:
            m.close()
    finally:
        if old is None:
            os.environ.pop(_caches.INDEX_ENV, None)
        else:
            os.environ[_caches.INDEX_ENV] = old


def index_files() -> list[Path]:
    cache = _caches.index_cache()
    assert cache is not None
    return sorted(Path(cache[0]).glob("*.idx"))


def line(kind: str, n: int, parent: str | None, **extra: Any) -> bytes:
    entry = {"type": kind, "id": f"{n:08x}", "parentId": parent, "timestamp": f"2026-01-01T00:{n % 60:02d}:00.000Z"}
    entry.update(extra)
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode()


class PersistedIndex(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self._tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self._tmp.name)
        self.path = self.dir / "s.jsonl"
        self.path.write_bytes(json.dumps(HEADER).encode() + b"\n")
        self.n = 0
        self.ids: list[str] = []
        self.other = self.dir / "other.jsonl"
        self.other.write_bytes(json.dumps(HEADER).encode() + b"\n" + line("custom", 999, None) + b"\n")
        # A folder of indexes of its own (draws must not depend on other examples').
        self._old_env = os.environ.get(_caches.INDEX_ENV)
        os.environ[_caches.INDEX_ENV] = str(self.dir / "index")

    def teardown(self) -> None:
        if self._old_env is None:
            os.environ.pop(_caches.INDEX_ENV, None)
        else:
            os.environ[_caches.INDEX_ENV] = self._old_env
        self._tmp.cleanup()

    def _append(self, data: bytes) -> None:
        subprocess.run([sys.executable, "-c", _APPEND_SCRIPT, str(self.path), data.hex()], check=True)

    def _entry(self, data: st.DataObject) -> bytes:
        self.n += 1
        some = data.draw(st.sampled_from([*self.ids[-5:], None, "nowhere"]))
        last = self.ids[-1] if self.ids else None
        parent = data.draw(st.sampled_from([last, last, some, f"{self.n + 1:08x}"]))
        kind = data.draw(st.sampled_from(["message", "message", "compaction", "label", "leaf", "custom",
                                          "session_info", "context_edit", "weird"]))
        extra: dict[str, Any] = {}
        if kind == "message":
            role = data.draw(st.sampled_from(["user", "assistant", "toolResult"]))
            extra["message"] = {"role": role, "content": "é" * data.draw(st.integers(0, 200)),
                                "usage": {"input": data.draw(st.integers(0, 10**20)), "output": 1.5}}
        elif kind == "compaction":
            extra.update(summary="s", firstKeptEntryId=some, tokensBefore=1)
        elif kind in ("label", "context_edit", "leaf"):
            extra["targetId"] = some
        elif kind == "session_info":
            extra["name"] = "n"
        self.ids.append(f"{self.n:08x}")
        return line(kind, self.n, parent, **extra)

    @rule(data=st.data(), k=st.integers(1, 4), shape=st.sampled_from(["lines", "glued", "garbage", "torn"]))
    def append(self, data: st.DataObject, k: int, shape: str) -> None:
        """Another process appends entries."""
        chunk = b"".join(self._entry(data) + b"\n" for _ in range(k))
        if shape == "glued":
            chunk = self._entry(data) + chunk
        elif shape == "garbage":
            chunk = b"not json\n" + chunk
        elif shape == "torn":
            chunk += self._entry(data)[:20]
        self._append(chunk)

    @rule()
    def complete_torn_line(self) -> None:
        self._append(b'"}\n')

    @rule(at=st.floats(0.25, 1.0))
    def rewrite_in_place(self, at: float) -> None:
        """One byte in the middle of the file changes; the size does not."""
        b = bytearray(self.path.read_bytes())
        if len(b) < 10:
            return
        k = min(int(len(b) * at), len(b) - 2)
        b[k] = ord("x") if b[k] != ord("x") else ord("y")
        with open(self.path, "r+b") as f:
            f.write(bytes(b))

    @rule(cut=st.integers(1, 300))
    def truncate(self, cut: int) -> None:
        size = self.path.stat().st_size
        os.truncate(self.path, max(size - cut, 1))

    @rule()
    def replace(self) -> None:
        """Another file renamed over the session (another inode)."""
        tmp = self.dir / "new.jsonl"
        tmp.write_bytes(self.path.read_bytes() + line("custom", 10**6 + self.n, None) + b"\n")
        os.replace(tmp, self.path)

    @rule(at=st.floats(0.0, 1.0), how=st.sampled_from(["flip", "cut", "garbage", "empty", "foreign", "other build"]))
    def damage_index(self, at: float, how: str) -> None:
        files = [f for f in index_files() if f.stat().st_size > 0]
        if not files:
            return
        f = files[0]
        b = bytearray(f.read_bytes())
        k = min(int(len(b) * at), len(b) - 1)
        if how == "flip":
            b[k] ^= 0x10
        elif how == "cut":
            b = b[:k]
        elif how == "garbage":
            b = bytearray(b"{}\n" * 10)
        elif how == "empty":
            b = bytearray()
        elif how == "foreign":
            answers(str(self.other))  # writes the other session's index
            others = [g for g in index_files() if g != f]
            if not others:
                return
            b = bytearray(others[0].read_bytes())
        else:
            if len(b) <= 16:  # an earlier damage left no build stamp to change
                return
            b[16] ^= 1  # the build stamp
        f.write_bytes(bytes(b))

    @rule(procs=st.integers(2, 3))
    def open_in_several_processes(self, procs: int) -> None:
        """Processes open the session at once: each may write its index."""
        ps = [subprocess.Popen([sys.executable, "-c", _OPEN_SCRIPT, str(self.path), "3"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(procs)]
        outs = [p.communicate() for p in ps]
        assert all(p.returncode == 0 for p in ps), [o[1][-500:] for o in outs]
        # Every open saw the same session (the file did not change meanwhile).
        assert len({o[0] for o in outs}) == 1

    @invariant()
    def agree(self) -> None:
        want = answers(str(self.path), index=False)
        assert answers(str(self.path)) == want  # written now, or read and grown
        assert answers(str(self.path)) == want  # read back
        assert answers(str(self.path), backend="python") == want


PersistedIndex.TestCase.settings = settings(
    max_examples=int(os.environ.get("SESSIONTREE_DIFF_EXAMPLES", "25")) // 2,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_persisted_index = PersistedIndex.TestCase


def _session(path: Path, n: int, pad: int = 100) -> None:
    lines = [json.dumps(HEADER).encode()]
    for i in range(n):
        parent = None if i % 50 == 0 else f"{i - 1:08x}"  # a root every 50: shallow trees compare
        lines.append(line("message", i, parent, message={"role": "user", "content": "x" * pad}))
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_it_lives_in_the_cache_folder_and_never_beside_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(_caches.INDEX_ENV, raising=False)
    folder = tmp_path / "sessions"
    folder.mkdir()
    p = folder / "s.jsonl"
    _session(p, 50)
    before = {q.name: q.read_bytes() for q in folder.iterdir()}
    m = _open(str(p))
    m.get_entries()
    m.close()
    assert {q.name: q.read_bytes() for q in folder.iterdir()} == before  # reading never writes there
    assert len(list((tmp_path / "xdg" / "sessiontree" / "index").glob("*.idx"))) == 1
    monkeypatch.setenv(_caches.INDEX_ENV, str(tmp_path / "elsewhere"))
    _open(str(p)).close()
    assert len(list((tmp_path / "elsewhere").glob("*.idx"))) == 1
    # Pointed at the session's own folder, by its name or a link to it: the session is
    # read, and its folder is still not written.
    (tmp_path / "link").symlink_to(folder)
    for named in (folder, tmp_path / "link"):
        monkeypatch.setenv(_caches.INDEX_ENV, str(named))
        m = _open(str(p))
        m.get_entries()
        m.close()
        cat.index([str(folder)], catalog=str(tmp_path / "c.sqlite3"))
        assert {q.name: q.read_bytes() for q in folder.iterdir()} == before
    monkeypatch.setenv(_caches.INDEX_ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg2"))
    _open(str(p)).close()
    assert not (tmp_path / "xdg2").exists()
    # Never inside Pi's folders; a budget that is no number is refused too.
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv(_caches.INDEX_ENV, str(tmp_path / "agent" / "sessions" / "idx"))
    with pytest.raises(ValueError, match="inside Pi's folder"):
        _open(str(p))
    monkeypatch.setenv(_caches.INDEX_ENV, str(tmp_path / "idx"))
    monkeypatch.setenv("SESSIONTREE_INDEX_BYTES", "lots")
    with pytest.raises(ValueError, match="SESSIONTREE_INDEX_BYTES"):
        _open(str(p))


def test_the_folder_keeps_to_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_caches.INDEX_ENV, str(tmp_path / "idx"))
    paths = []
    for i in range(4):
        p = tmp_path / f"{i}.jsonl"
        _session(p, 200)
        paths.append(p)
    _open(str(paths[0])).close()
    size = next((tmp_path / "idx").glob("*.idx")).stat().st_size
    monkeypatch.setenv("SESSIONTREE_INDEX_BYTES", str(2 * size + size // 2))
    for p in paths[1:]:
        os.utime(next(iter(sorted((tmp_path / "idx").glob("*.idx"), key=lambda f: f.stat().st_mtime))))
        _open(str(p)).close()
    assert len(list((tmp_path / "idx").glob("*.idx"))) == 2
    total = sum(f.stat().st_size for f in (tmp_path / "idx").glob("*.idx"))
    assert total <= 2 * size + size // 2


def test_the_catalog_counts_first_in_the_one_cache_folders_budget(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """CONTRACT §6 "Bounded": in the default layout ``SESSIONTREE_INDEX_BYTES`` is the
    budget of the whole cache folder; a real catalog's files (built by ``ls`` in a real
    process) count first, the indexes keep to what is left, and the catalog is never
    evicted. A folder named by ``SESSIONTREE_INDEX`` keeps its own budget."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for env in (_caches.INDEX_ENV, "SESSIONTREE_CATALOG", "SESSIONTREE_INDEX_BYTES"):
        monkeypatch.delenv(env, raising=False)
    folder = tmp_path / "sessions"
    folder.mkdir()
    paths = [folder / f"{i}.jsonl" for i in range(4)]
    for p in paths:
        _session(p, 200)
    cache = tmp_path / "xdg" / "sessiontree"
    _open(str(paths[0])).close()
    size = next((cache / "index").glob("*.idx")).stat().st_size
    subprocess.run([sys.executable, "-m", "sessiontree", "ls", str(folder)], check=True, capture_output=True,
                   env={**os.environ, "HOME": str(tmp_path)})
    catalog = _caches.other_bytes(str(cache), "index")
    assert (cache / "catalog.sqlite3").is_file() and catalog > 2 * size  # else the test proves nothing
    budget = catalog + 2 * size + size // 2
    monkeypatch.setenv("SESSIONTREE_INDEX_BYTES", str(budget))
    assert _caches.index_cache()[1] == 2 * size + size // 2  # type: ignore[index]
    for p in paths[1:]:
        os.utime(next(iter(sorted((cache / "index").glob("*.idx"), key=lambda f: f.stat().st_mtime))))
        _open(str(p)).close()
    kept = list((cache / "index").glob("*.idx"))
    assert len(kept) == 2
    assert sum(f.stat().st_size for f in kept) + _caches.other_bytes(str(cache), "index") <= budget
    assert (cache / "catalog.sqlite3").is_file()
    # A sparse file counts the disk it holds, a symlink nothing (its target is elsewhere).
    (cache / "catalog.sqlite3.idx").mkdir(exist_ok=True)
    with open(cache / "catalog.sqlite3.idx" / "junk", "wb") as f:
        f.truncate(1 << 40)
    if not os.path.lexists(cache / "catalog.sqlite3-shm"):
        os.symlink(paths[0], cache / "catalog.sqlite3-shm")
    assert _caches.other_bytes(str(cache), "index") == catalog
    # Any other file there counts too (the demo keeps its session in the folder).
    (cache / "demo-s7.jsonl").write_bytes(b"x" * 20_000)
    assert _caches.other_bytes(str(cache), "index") == catalog + 20_000
    monkeypatch.setenv(_caches.INDEX_ENV, str(cache / "index"))
    assert _caches.index_cache()[1] == budget  # type: ignore[index]


def _replace_by_rename(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _renamed_back(tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch, index: str | None = None) -> None:
    """Put ``folder/s.jsonl`` back on its first inode after two rewrites by rename with an
    append between (larger, both ends as they were, a middle line's text changed and
    another line re-parented so that the current path takes in an assistant message
    with usage), its index kept (unless ``index`` sets ``SESSIONTREE_INDEX``) and its
    catalog rows made; then every answer must equal a fresh scan and the catalog's
    search and usage (on the current path: the entries record, which only a read from
    the start gets right) the files'."""
    from sessiontree import catalog

    def usage() -> tuple[int, int]:
        got = catalog.usage("session", [str(folder)], active_path=True).total.records
        return got, catalog.usage("session", [str(folder)], active_path=True, no_cache=True).total.records

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for env in (_caches.INDEX_ENV, "SESSIONTREE_CATALOG"):
        monkeypatch.delenv(env, raising=False)
    if index is not None:
        monkeypatch.setenv(_caches.INDEX_ENV, index)
    p = folder / "s.jsonl"
    for _ in range(20):
        shutil.rmtree(tmp_path / "xdg", ignore_errors=True)
        _session(p, 400, pad=60)
        lines = p.read_bytes().split(b"\n")
        lines[211] = line("message", 210, f"{209:08x}", message={  # off the current path
            "role": "assistant", "content": [{"type": "text", "text": "a"}], "provider": "p", "model": "m",
            "usage": {"input": 1, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1, "cost": {"total": 0}}})
        p.write_bytes(b"\n".join(lines))
        first = p.stat().st_ino
        want_before = answers(str(p), index=False)
        assert answers(str(p)) == want_before  # its index kept
        assert catalog.search("quokka", [str(folder)]).total == 0  # the catalog's rows made
        assert usage() == (0, 0)
        data = bytearray(p.read_bytes())
        k = data.index(b'"xxxxxxxx', len(data) // 2)
        data[k + 1:k + 7] = b"quokka"  # a middle line's text changed, its length kept
        k = data.index(b'"parentId":"%08x"' % 350)
        data[k + 12:k + 20] = b"%08x" % 210  # entry 351 re-parented onto the assistant message
        _replace_by_rename(p, bytes(data))
        with open(p, "ab") as f:
            f.write(line("message", 5000, "0000018f", message={"role": "user", "content": "appended"}) + b"\n")
        _replace_by_rename(p, p.read_bytes())
        if p.stat().st_ino == first:
            break
        p.unlink()
    else:
        pytest.skip("the file system did not hand the inode number out again")
    assert answers(str(p)) == answers(str(p), index=False)
    got = catalog.search("quokka", [str(folder)])
    assert got == catalog.search("quokka", [str(folder)], no_cache=True) and got.total == 1
    assert usage() == (1, 1)


def test_a_file_renamed_back_onto_its_old_inode_is_not_taken_for_grown(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """ext4 hands a freed inode number out again at once: two rewrites by rename
    (``sed -i``) with an append between put the session back on its first inode, larger,
    both ends as they were, a middle line changed. The inode's generation differs, so
    the persisted index, the listing through it and the catalog read it again
    (adversary round 36, F1); every answer equals a fresh scan."""
    import fcntl

    with open(tmp_path / "probe", "wb") as f:  # FS_IOC_GETVERSION, as _filestate asks it
        try:
            fcntl.ioctl(f.fileno(), 0x80087601, bytes(8))
        except OSError:
            pytest.skip("this file system keeps no inode generation (tmpfs)")
    folder = tmp_path / "s"
    folder.mkdir()
    _renamed_back(tmp_path, folder, monkeypatch)


@pytest.mark.parametrize("index", [None, "off"])
def test_on_overlayfs_a_file_renamed_back_onto_its_old_inode_is_not_taken_for_grown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: str | None) -> None:
    """overlayfs (Docker's root file system) gives a file replaced by rename the inode
    number of the one before and keeps no inode generation (``FS_IOC_GETVERSION`` is
    ENOTTY), so only the birth time, which it passes through from its upper layer,
    tells the replacement from the file grown: the persisted index and the catalog
    (with and without kept indexes) read it again (adversary round 41, F1). A real
    overlay mounted under ``tmp_path``; skipped where mounting is not permitted."""
    if os.geteuid() != 0:
        pytest.skip("mounting an overlay needs root")
    ov = tmp_path / "ov"
    for sub in ("lower", "upper", "work", "merged"):
        (ov / sub).mkdir(parents=True)
    mount = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            f"lowerdir={ov}/lower,upperdir={ov}/upper,workdir={ov}/work", str(ov / "merged")],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        pytest.skip(f"an overlay cannot be mounted here: {mount.stderr.strip()}")
    try:
        folder = ov / "merged" / "s"
        folder.mkdir()
        _renamed_back(tmp_path, folder, monkeypatch, index)
    finally:
        subprocess.run(["umount", str(ov / "merged")], check=True)


def test_the_catalog_holds_a_file_to_its_inode_marks(tmp_path: Path) -> None:
    """The catalog's identity rule without a file system that reuses inode numbers: the
    ends it recorded count as the file's only with the inode's generation and birth
    time it recorded them with (``_indexer.ends_digest``, ``_filestate.inode_marks``);
    a file born again on the same inode (overlayfs: no generation, a new btime) is read
    again from its start (adversary round 41, F1)."""
    from sessiontree._filestate import InodeMarks, ends_and_marks
    from sessiontree.catalog._indexer import _same_ends, ends_digest

    p = tmp_path / "s.jsonl"
    _session(p, 200)
    end = p.stat().st_size
    ends, marks = ends_and_marks(str(p), end)
    assert _same_ends(str(p), end, ends_digest(ends, marks)) == marks
    for other in (InodeMarks(marks.generation ^ 1, marks.birth_ns), InodeMarks(marks.generation, marks.birth_ns + 1)):
        assert _same_ends(str(p), end, ends_digest(ends, other)) is None, other


def test_a_rewrite_that_keeps_both_ends_and_grows_is_caught_when_its_line_is_read(tmp_path: Path) -> None:
    """Not seen at open (as for an open session, CONTRACT.md §4), but the changed line
    is refused when read, its persisted index removed, and the next open is a scan."""
    p = tmp_path / "s.jsonl"
    _session(p, 400, pad=60)
    _open(str(p)).close()
    data = bytearray(p.read_bytes())
    k = data.index(b'"00000064"')  # an id in the middle
    data[k + 1 : k + 9] = b"0000ffff"
    p.write_bytes(bytes(data) + line("custom", 5000, "0000018f") + b"\n")
    m = _open(str(p))
    with pytest.raises(StaleSessionError):
        m.get_entries()
    m.close()
    assert answers(str(p)) == answers(str(p), index=False)


_CUT_SCRIPT = r"""
import os, sys, warnings
warnings.simplefilter("ignore")
from pathlib import Path
from sessiontree import SessionManager, StaleSessionError, _caches
_caches.INDEX_MIN_BYTES, _caches.INDEX_SETTLE = 0, 0.0
m = SessionManager.open(sys.argv[1], backend="native")
m.close()
m = SessionManager.open(sys.argv[1], backend="native")  # reads the index in place
(f,) = Path(os.environ["SESSIONTREE_INDEX"]).glob("*.idx")
os.truncate(f, 100)
try:
    m.get_entries()  # reads zeros past the cut (flagged, never a signal): raises
except StaleSessionError:
    pass
else:
    print("the first call answered")
try:
    m.get_leaf_entry()
except StaleSessionError as e:
    print("stale", e)
else:
    print("answered")
"""


def test_an_index_cut_while_in_use_is_stale_never_a_signal(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    _session(p, 3000)
    env = dict(os.environ, SESSIONTREE_INDEX=str(tmp_path / "idx"))
    out = subprocess.run([sys.executable, "-c", _CUT_SCRIPT, str(p)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("stale") and "index of this session kept in" in out.stdout
    assert answers(str(p)) == answers(str(p), index=False)


# Each call on a session reopened through its kept index, made first after that index
# file is cut (to 0, to half, or inside its last page, where the kernel zeroes the rest
# of the page and no read faults): what it gave, or the StaleSessionError it raised.
_FIRST_CALL_SCRIPT = r"""
import json, os, sys, warnings
from pathlib import Path
warnings.simplefilter("ignore")
from sessiontree import SessionManager, StaleSessionError, _caches
_caches.INDEX_MIN_BYTES, _caches.INDEX_SETTLE = 0, 0.0
path, leaf, root, label_target = sys.argv[1:5]
calls = {
    "ids": lambda m: list(m.get_shape().ids),
    "leaves": lambda m: m.get_leaf_ids(),
    "parent": lambda m: m.parent_of(leaf),
    "children": lambda m: m.get_children_ids(root),
    "resolve": lambda m: m.resolve_id(leaf[:6]),
    "labels": lambda m: m.get_labels(),
    "branch": lambda m: [e["id"] for e in m.get_branch()],
    "context": lambda m: len(m.build_session_context().messages),
}
folder = Path(os.environ["SESSIONTREE_INDEX"])
out = {}
for cut in ("0", "half", "last page"):
    for name, call in calls.items():
        for f in folder.glob("*.idx"):
            f.unlink()
        SessionManager.open(path, backend="native").close()  # keeps the index
        m = SessionManager.open(path, backend="native")  # reads it in place
        (f,) = folder.glob("*.idx")
        size = f.stat().st_size
        os.truncate(f, {"0": 0, "half": size // 2, "last page": size - 1}[cut])
        try:
            got = ["answer", call(m)]
        except StaleSessionError as e:
            got = ["stale", str(e)]
        except Exception as e:
            got = ["error", f"{type(e).__name__}: {e}"]
        try:
            m.close()
        except Exception:
            pass
        out[f"{cut} {name}"] = got
print(json.dumps(out))
"""


def test_the_first_call_after_its_index_is_cut_is_stale_never_a_wrong_answer(tmp_path: Path) -> None:
    """CONTRACT §6, "Bounded": a kept index cut short under a reopened session makes the
    next call raise StaleSessionError naming the kept index (the session file did not
    change), never a wrong answer: not NUL ids, not an entry "not found", not a line
    "changed in the file". Every call asks (``PyIndex::checked``), after it has read."""
    p = tmp_path / "s.jsonl"
    _session(p, 3000)
    with p.open("ab") as f:  # a label, so that get_labels reads lines
        f.write(line("label", 3000, f"{2999:08x}", targetId=f"{1:08x}", label="here") + b"\n")
    ref = _open(str(p), backend="python")
    expected = {
        "ids": list(ref.get_shape().ids), "leaves": ref.get_leaf_ids(), "parent": ref.parent_of(ref.leaf_id),
        "children": ref.get_children_ids(f"{0:08x}"), "resolve": ref.leaf_id, "labels": ref.get_labels(),
        "branch": [e["id"] for e in ref.get_branch()], "context": len(ref.build_session_context().messages),
    }
    assert ref.leaf_id is not None and expected["labels"]
    env = dict(os.environ, SESSIONTREE_INDEX=str(tmp_path / "idx"))
    run = subprocess.run([sys.executable, "-c", _FIRST_CALL_SCRIPT, str(p), ref.leaf_id, f"{0:08x}", f"{1:08x}"],
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    assert len(got) == 3 * len(expected)
    for key, (how, what) in got.items():
        cut, name = key.rsplit(" ", 1)
        if how == "stale":
            assert "index of this session kept in" in what and "by another program" in what, key
            assert str(tmp_path / "idx") in what, key
        else:
            assert how == "answer" and what == expected[name], (key, how, str(what)[:200])
        if cut == "0":  # nothing of the index is left: every call meets the cut
            assert how == "stale", (key, str(what)[:200])
    assert answers(str(p)) == answers(str(p), index=False)


def test_its_settings_name_what_was_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder in Pi's store is refused naming the variable, or the default folder (a
    symlink into the store) when the variable is unset; the budget takes sizes as
    SESSIONTREE_CACHE_BYTES does, and one past 64 bits is a ValueError naming it, for
    both variables (``_sizes.size_from_env``), never an OverflowError from the core."""
    from sessiontree._backend import default_cache_budget

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = tmp_path / "home" / ".pi" / "agent" / "sessions"
    store.mkdir(parents=True)
    p = tmp_path / "s.jsonl"
    _session(p, 50)
    monkeypatch.setenv(_caches.INDEX_ENV, str(store / "idx"))
    with pytest.raises(ValueError, match=f"^SESSIONTREE_INDEX='{store}/idx': .* inside Pi's folder {store},"):
        _open(str(p))
    monkeypatch.delenv(_caches.INDEX_ENV)
    (tmp_path / "cache" / "sessiontree").mkdir(parents=True)
    (tmp_path / "cache" / "sessiontree" / "index").symlink_to(store)
    with pytest.raises(ValueError, match=f"^the persisted indexes' default folder .*index \\(a link to {store}\\)"):
        _open(str(p))
    (tmp_path / "cache" / "sessiontree" / "index").unlink()
    for text, size in (("1GiB", 1 << 30), ("64 MiB", 64 << 20), ("1.5k", 1500), ("0", 0), ("", _caches.INDEX_BUDGET)):
        monkeypatch.setenv("SESSIONTREE_INDEX_BYTES", text)
        cache = _caches.index_cache()
        assert cache is not None and cache[1] == size, text
    _open(str(p)).close()
    for env in ("SESSIONTREE_INDEX_BYTES", "SESSIONTREE_CACHE_BYTES"):
        for text in ("99999999999999999999999", "1e30", "-1", "abc"):
            monkeypatch.setenv(env, text)
            with pytest.raises(ValueError, match=f"^{env} must be a size such as 512MiB or 0, not '{text}'"):
                _caches.index_cache() if env == "SESSIONTREE_INDEX_BYTES" else default_cache_budget()
        monkeypatch.delenv(env)


# Each call on a session reopened through its kept index, made first after another
# program wrote that index file in place (what `cp other.idx kept.idx` does: truncate,
# then write; one byte of an id changed; the same bytes written again; a touch): what it
# gave, or the StaleSessionError it raised, and whether the kept index is still there.
_WRITTEN_OVER_SCRIPT = r"""
import json, os, sys, warnings
from pathlib import Path
warnings.simplefilter("ignore")
from sessiontree import SessionManager, StaleSessionError, _caches
_caches.INDEX_MIN_BYTES, _caches.INDEX_SETTLE = 0, 0.0
path, other, leaf, root, label_target = sys.argv[1:6]
calls = {
    "ids": lambda m: list(m.get_shape().ids),
    "leaves": lambda m: m.get_leaf_ids(),
    "parent": lambda m: m.parent_of(leaf),
    "children": lambda m: m.get_children_ids(root),
    "resolve": lambda m: m.resolve_id(leaf),
    "labels": lambda m: m.get_labels(),
    "branch": lambda m: [e["id"] for e in m.get_branch()],
    "context": lambda m: len(m.build_session_context().messages),
}
folder = Path(os.environ["SESSIONTREE_INDEX"])
SessionManager.open(other, backend="native").close()
(f,) = folder.glob("*.idx")
theirs = f.read_bytes()
f.unlink()

def write_over(f, how):
    data = f.read_bytes()
    if how == "another index":
        assert len(theirs) == len(data)
        with open(f, "wb") as out:
            out.write(theirs)
    elif how == "one byte":
        k = data.find(b"%08x%08x" % (41, 42)) + 15
        with open(f, "r+b") as out:
            out.seek(k)
            out.write(b"Z")
    elif how == "same bytes":
        with open(f, "wb") as out:
            out.write(data)
    else:
        os.utime(f)

out = {}
for how in ("another index", "one byte", "same bytes", "touched"):
    for name, call in calls.items():
        for f in folder.glob("*.idx"):
            f.unlink()
        SessionManager.open(path, backend="native").close()  # keeps the index
        m = SessionManager.open(path, backend="native")  # reads it in place
        (f,) = folder.glob("*.idx")
        write_over(f, how)
        try:
            got = ["answer", call(m)]
        except StaleSessionError as e:
            got = ["stale", str(e)]
        except Exception as e:
            got = ["error", f"{type(e).__name__}: {e}"]
        m.close()
        out[f"{how}|{name}"] = got + [f.exists()]
print(json.dumps(out))
"""


def test_an_index_written_over_in_use_is_stale_never_a_wrong_answer(tmp_path: Path) -> None:
    """CONTRACT §6, "Bounded": a kept index written in place by another program while a
    reopened session reads it (another session's index copied onto it at the same size,
    one byte of an id changed) is seen before the next call (its size, mtime or ctime
    moved and its bytes are not those mapped): the call raises StaleSessionError naming
    the kept index, never an answer from the bytes written, and the kept index goes
    (adversary round 41, F2). The same bytes written again, or a touch (another
    process's open marks it used), moves the times but not the bytes: it is still read
    in place."""
    p, q = tmp_path / "s.jsonl", tmp_path / "other.jsonl"
    _session(p, 3000)
    with p.open("ab") as f:  # a label, so that get_labels reads lines
        f.write(line("label", 3000, f"{2999:08x}", targetId=f"{1:08x}", label="here") + b"\n")
    # Another session of the same shape (ids 0x100000 on): an index of the same size.
    q.write_bytes(p.read_bytes().replace(b'"id":"0', b'"id":"1').replace(b'"parentId":"0', b'"parentId":"1')
                  .replace(b'"targetId":"0', b'"targetId":"1'))
    ref = _open(str(p), backend="python")
    expected = {
        "ids": list(ref.get_shape().ids), "leaves": ref.get_leaf_ids(), "parent": ref.parent_of(ref.leaf_id),
        "children": ref.get_children_ids(f"{0:08x}"), "resolve": ref.leaf_id, "labels": ref.get_labels(),
        "branch": [e["id"] for e in ref.get_branch()], "context": len(ref.build_session_context().messages),
    }
    assert ref.leaf_id is not None and expected["labels"]
    env = dict(os.environ, SESSIONTREE_INDEX=str(tmp_path / "idx"))
    run = subprocess.run([sys.executable, "-c", _WRITTEN_OVER_SCRIPT, str(p), str(q), ref.leaf_id, f"{0:08x}",
                          f"{1:08x}"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    assert len(got) == 4 * len(expected)
    for key, (how, what, kept) in got.items():
        written, name = key.split("|")
        if written in ("same bytes", "touched"):
            assert how == "answer" and what == expected[name], (key, how, str(what)[:200])
            assert kept, key
        else:
            assert how == "stale" and "was written over while in use" in what, (key, how, str(what)[:200])
            assert not kept, key
    assert answers(str(p)) == answers(str(p), index=False)
