"""Where a command's output goes (issue 24, items 1 and 2; ``_output.open_output``).

Every command that writes a file (``export`` html / markdown / parquet, ``generate``)
follows one rule: ``-`` is stdout; a FIFO, a device or a stream that is this process's
stdout is written as a stream and never replaced; a symbolic link is followed; only a
regular file (or nothing) is replaced, through a temporary file renamed over it.
Temporary files are named so that a later run removes a dead process's leftover,
removed when the process gets SIGINT, SIGTERM or SIGHUP, and never more than one.

Before the fix, ``export --out`` renamed its temporary file over whatever was at the
path (a FIFO, a device, a symlink became a regular file; as root, ``--out /dev/null``
deleted the device), and a killed export or generate left its whole temporary file
forever. Nothing here touches a real device: FIFOs and the device node are made in
``tmp_path`` (the device, a copy of ``/dev/null``'s numbers, only as root).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sessiontree import SessionManager
from sessiontree.generate import generate_session

from _import_helpers import CLAUDE
from _shared import default_signals
from test_export import cli


def _env(tmp_path: Path) -> dict[str, str]:
    """The child's home, cache and catalog beside ``tmp_path``, not in it: the tests
    list ``tmp_path`` for leftovers, and an open may keep its index in the cache."""
    aside = tmp_path.with_name(tmp_path.name + "-aside")
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    env.update(HOME=str(aside / "home"), XDG_CACHE_HOME=str(aside / "cache"),
               SESSIONTREE_CATALOG=str(aside / "catalog.sqlite3"))
    return env


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("outputs") / "s.jsonl"
    generate_session(path, entries=60, seed=4)
    return path


class FifoReader:
    """Reads a FIFO to its end in a thread (what a `cat fifo` on the other side does)."""

    def __init__(self, path: Path) -> None:
        self.data = b""
        self._t = threading.Thread(target=self._read, args=(path,), daemon=True)
        self._t.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as f:
            self.data = f.read()

    def join(self) -> bytes:
        self._t.join(60)
        assert not self._t.is_alive()
        return self.data


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _expected(session: Path, fmt: str, tmp_path: Path) -> bytes:
    ref = tmp_path / f"ref.{fmt}"
    assert cli("export", str(session), "--format", fmt, "--out", str(ref)).returncode == 0
    return ref.read_bytes()


@pytest.mark.parametrize("fmt", ["html", "markdown"])
def test_export_into_a_fifo_streams_and_keeps_the_fifo(tmp_path: Path, session: Path, fmt: str) -> None:
    want = _expected(session, fmt, tmp_path)
    fifo = _fifo(tmp_path / "out.fifo")
    reader = FifoReader(fifo)
    p = cli("export", str(session), "--format", fmt, "--out", str(fifo))
    assert p.returncode == 0, p.stderr
    assert reader.join() == want
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["out.fifo", f"ref.{fmt}"]


def test_export_through_a_symlink_to_a_fifo(tmp_path: Path, session: Path) -> None:
    want = _expected(session, "markdown", tmp_path)
    fifo = _fifo(tmp_path / "real.fifo")
    link = tmp_path / "link.md"
    link.symlink_to("real.fifo")
    reader = FifoReader(fifo)
    p = cli("export", str(session), "--format", "markdown", "--out", str(link))
    assert p.returncode == 0, p.stderr
    assert reader.join() == want
    assert link.is_symlink() and os.readlink(link) == "real.fifo"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_export_through_a_symlink_replaces_what_it_leads_to(tmp_path: Path, session: Path) -> None:
    want = _expected(session, "html", tmp_path)
    (tmp_path / "sub").mkdir()
    target = tmp_path / "sub" / "page.html"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "page.html"
    link.symlink_to(target)
    p = cli("export", str(session), "--format", "html", "--out", str(link))
    assert p.returncode == 0, p.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == want
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640  # a replaced file keeps its mode
    assert os.listdir(tmp_path / "sub") == ["page.html"]


def test_export_dangling_symlink_creates_its_target(tmp_path: Path, session: Path) -> None:
    link = tmp_path / "page.md"
    link.symlink_to("made.md")
    assert cli("export", str(session), "--format", "markdown", "--out", str(link)).returncode == 0
    assert link.is_symlink() and (tmp_path / "made.md").read_bytes().startswith(b"# ")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize("args", [["export", "{s}", "--format", "html", "--out", "{o}"],
                                  ["export", "{s}", "--format", "markdown", "--out", "{o}"],
                                  ["generate", "{o}", "--force", "--entries", "30"]])
def test_a_device_is_written_as_a_stream_never_replaced(tmp_path: Path, session: Path, args: list[str]) -> None:
    """As root, `export --out /dev/null` deleted the machine's /dev/null. Here a node
    with /dev/null's numbers, made in tmp_path, stays the device it is."""
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    p = cli(*[a.format(s=session, o=dev) for a in args])
    assert p.returncode == 0, p.stderr
    st = os.lstat(dev)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert os.listdir(tmp_path) == ["null"]


def test_out_dash_and_stdout_itself(tmp_path: Path, session: Path) -> None:
    """`--out -` is stdout; a target that is this process's stdout (what /dev/stdout is
    when stdout is redirected to a file) is written through it, not replaced."""
    want = _expected(session, "markdown", tmp_path)
    p = cli("export", str(session), "--format", "markdown", "--out", "-")
    assert p.returncode == 0 and p.stdout.encode() == want
    out = tmp_path / "redirected.md"
    with open(out, "wb") as f:
        ino = os.fstat(f.fileno()).st_ino
        r = subprocess.run([sys.executable, "-m", "sessiontree", "export", str(session), "--format", "markdown",
                            "--out", str(out)], stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_ino == ino  # the same file: nothing renamed over the shell's redirection
    assert out.read_bytes() == want  # and the note went to stderr, not into the output
    assert b"wrote" in r.stderr


def test_export_errors_leave_everything(tmp_path: Path, session: Path) -> None:
    (tmp_path / "d").mkdir()
    p = cli("export", str(session), "--format", "html", "--out", str(tmp_path / "d"))
    assert p.returncode == 1 and "is a directory" in p.stderr and "Traceback" not in p.stderr
    p = cli("export", str(session), "--format", "html", "--out", str(tmp_path / "none" / "x.html"))
    assert p.returncode == 1 and "no such folder" in p.stderr
    assert os.listdir(tmp_path) == ["d"] and os.listdir(tmp_path / "d") == []


def test_generate_into_a_fifo_and_stdout(tmp_path: Path) -> None:
    ref = tmp_path / "ref.jsonl"
    assert cli("generate", str(ref), "--entries", "25", "--seed", "3").returncode == 0
    want = ref.read_bytes()
    fifo = _fifo(tmp_path / "g.fifo")
    p = cli("generate", str(fifo), "--entries", "25", "--seed", "3")
    assert p.returncode == 1 and "already exists" in p.stderr  # not without --force
    reader = FifoReader(fifo)
    p = cli("generate", str(fifo), "--entries", "25", "--seed", "3", "--force")
    assert p.returncode == 0, p.stderr
    assert reader.join() == want and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    p = cli("generate", "-", "--entries", "25", "--seed", "3")
    assert p.returncode == 0 and p.stdout.encode() == want and "wrote" in p.stderr


def test_generate_refusing_an_existing_target_says_what_force_does_to_it(tmp_path: Path) -> None:
    """Without --force, generate refuses any existing OUT; the message says what --force
    would do to what is there: replace a regular file (a link's target), create a
    dangling link's target, write into a FIFO as a stream (never replacing it)."""
    regular = tmp_path / "s.jsonl"
    regular.write_text("old")
    link = tmp_path / "link.jsonl"
    link.symlink_to(regular.name)
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to("made.jsonl")
    fifo = _fifo(tmp_path / "g.fifo")
    link_fifo = tmp_path / "to-fifo"
    link_fifo.symlink_to(fifo.name)
    want = {
        regular: "already exists; not overwritten (use --force to replace it)",
        link: "already exists (a symbolic link); not overwritten (use --force to replace the file it points to)",
        dangling: "already exists (a symbolic link to nothing); not written (use --force to create the file it "
                  "points to)",
        fifo: "already exists (a FIFO); not written (use --force to write the session into it as a stream: a FIFO "
              "is never replaced)",
        link_fifo: "already exists (a FIFO); not written (use --force to write the session into it as a stream: "
                   "a FIFO is never replaced)",
    }
    for target, words in want.items():
        p = cli("generate", str(target), "--entries", "3")
        assert p.returncode == 1 and p.stderr.strip() == f"sessiontree: error: {target}: {words}", p.stderr
    assert regular.read_text() == "old" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["dangling.jsonl", "g.fifo", "link.jsonl", "s.jsonl", "to-fifo"]
    assert cli("generate", str(dangling), "--entries", "3", "--force").returncode == 0
    assert dangling.is_symlink() and (tmp_path / "made.jsonl").read_bytes().startswith(b'{"type":"session"')


def test_parquet_dataset_files_follow_the_rule(tmp_path: Path, session: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "ds"
    out.mkdir()
    elsewhere = tmp_path / "manifest.json"
    elsewhere.write_text("{}")
    (out / "_sessiontree_manifest.json").symlink_to(elsewhere)
    p = cli("export", str(session), "--format", "parquet", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert (out / "_sessiontree_manifest.json").is_symlink()
    assert b'"sessions"' in elsewhere.read_bytes()
    assert not [n for _, _, names in os.walk(out) for n in names if n.endswith(".tmp")]


def test_fork_and_import_never_replace_what_is_at_their_name(tmp_path: Path) -> None:
    """fork and import make session files through the session writer, which links a
    new file into place and refuses any name that exists (a FIFO is not opened)."""
    src = CLAUDE / "linear.jsonl"
    to = tmp_path / "to"
    to.mkdir()
    env = _env(tmp_path)
    first = subprocess.run([sys.executable, "-m", "sessiontree", "import", "claude", str(src), "--to", str(to),
                            "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    import json

    made = Path(json.loads(first.stdout)[0]["path"])
    made.unlink()
    _fifo(made)
    again = subprocess.run([sys.executable, "-m", "sessiontree", "import", "claude", str(src), "--to", str(to)],
                           capture_output=True, text=True, env=env, timeout=60)
    assert again.returncode == 1 and "Traceback" not in again.stderr
    assert stat.S_ISFIFO(os.lstat(made).st_mode) and os.listdir(to) == [made.name]


# ----------------------------------------------------------------- temporary files


def _temps(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def _kill_when_writing(cmd: list[str], folder: Path, sig: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``cmd``, wait until its temporary file exists in ``folder`` and holds
    bytes, send ``sig``; returns the finished process."""
    before = set(_temps(folder))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            preexec_fn=default_signals)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        new = [n for n in _temps(folder) if n not in before]
        with contextlib.suppress(FileNotFoundError):
            if new and os.path.getsize(folder / new[0]) > 0:
                break
        time.sleep(0.002)
    assert proc.poll() is None, "the command finished before it could be stopped"
    proc.send_signal(sig)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # it went on after the signal: never leave it writing
        proc.wait()
        raise AssertionError(f"the command went on after signal {sig}") from None
    return proc


@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    generate_session(path, size_bytes=60_000_000, seed=2)
    return path


_STOPS = [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP), (signal.SIGINT, 130)]


@pytest.mark.parametrize("sig, rc", _STOPS, ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stopped_generate_leaves_no_temporary_file(tmp_path: Path, sig: int, rc: int) -> None:
    out = tmp_path / "gen.jsonl"
    proc = _kill_when_writing([sys.executable, "-m", "sessiontree", "generate", str(out), "--size", "5GB"],
                              tmp_path, sig, _env(tmp_path))
    assert proc.returncode == rc, proc.stderr
    assert os.listdir(tmp_path) == [], "the temporary file (or a partial session) was left"


@pytest.mark.parametrize("sig, rc", _STOPS, ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_the_test_run_ignores_still_stops_the_child(tmp_path: Path, sig: int, rc: int) -> None:
    """A test run started under ``nohup`` (SIGHUP ignored) or as a background job of a
    shell without job control (SIGINT ignored) passes what it ignores on to its
    children, which then rightly keep running: the tests start them with the default
    disposition (``_shared.default_signals``)."""
    before = signal.signal(sig, signal.SIG_IGN)
    try:
        test_a_stopped_generate_leaves_no_temporary_file(tmp_path, sig, rc)
    finally:
        signal.signal(sig, before)


@pytest.mark.parametrize("fmt", ["html", "markdown"])
@pytest.mark.parametrize("sig, rc", _STOPS, ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stopped_export_leaves_no_temporary_file(tmp_path: Path, big_session: Path, fmt: str, sig: int,
                                                    rc: int) -> None:
    out = tmp_path / f"page.{fmt}"
    out.write_text("old")
    proc = _kill_when_writing([sys.executable, "-m", "sessiontree", "export", str(big_session), "--format", fmt,
                               "--out", str(out)], tmp_path, sig, _env(tmp_path))
    assert proc.returncode == rc, proc.stderr
    assert os.listdir(tmp_path) == [out.name] and out.read_text() == "old"


def test_a_killed_runs_leftover_is_removed_by_the_next_run(tmp_path: Path, big_session: Path) -> None:
    """SIGKILL cannot be caught: the leftover is named `.<name>.<pid>.<8 hex>.tmp`, and
    the next run in that folder removes it (its process is gone and its lock free).
    However often a run is killed, at most one leftover exists."""
    out = tmp_path / "page.html"
    cmd = [sys.executable, "-m", "sessiontree", "export", str(big_session), "--format", "html", "--out", str(out)]
    for _ in range(3):
        proc = _kill_when_writing(cmd, tmp_path, signal.SIGKILL, _env(tmp_path))
        assert proc.returncode == -signal.SIGKILL
        assert len(_temps(tmp_path)) == 1  # the last one's; the one before was swept
    gen = [sys.executable, "-m", "sessiontree", "generate", str(tmp_path / "g.jsonl"), "--size", "5GB"]
    proc = _kill_when_writing(gen, tmp_path, signal.SIGKILL, _env(tmp_path))
    assert len(_temps(tmp_path)) == 1 and ".g.jsonl." in _temps(tmp_path)[0]
    p = subprocess.run([sys.executable, "-m", "sessiontree", "export", str(big_session), "--format", "markdown",
                        "--out", str(tmp_path / "page.md")], capture_output=True, text=True, env=_env(tmp_path),
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["page.md"]


def test_a_live_writers_temporary_file_is_never_swept(tmp_path: Path) -> None:
    """A temporary file being written (its process alive, its lock held) survives
    another run's sweep in the same folder, however old it is."""
    from sessiontree._storage import create_temp, release_temp

    fd, tmp = create_temp(str(tmp_path / "x.html"))
    try:
        os.utime(tmp, (0, 0))  # older than the grace period
        assert cli("generate", str(tmp_path / "y.jsonl"), "--entries", "3").returncode == 0
        assert os.path.exists(tmp)
    finally:
        os.close(fd)
        release_temp(tmp, remove=True)
    assert sorted(os.listdir(tmp_path)) == ["y.jsonl"]


def test_handlers_are_put_back(tmp_path: Path) -> None:
    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
    generate_session(tmp_path / "a.jsonl", entries=5)
    with SessionManager.create("/p", str(tmp_path)) as sm:
        sm.append_message({"role": "user", "content": "hi", "timestamp": 0})
        sm.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 0})
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)] == before


def test_held_handlers_stay_between_files_and_are_put_back(tmp_path: Path) -> None:
    """Within ``held_handlers`` the temporaries' handlers are installed once and stay
    between files (a worker of the Parquet export writes file after file); they are put
    back when the last block ends, and a SIGTERM between files still ends the process by
    that signal, with no file left behind."""
    from sessiontree import _storage
    from sessiontree._output import open_output

    # A signal this process inherited ignored (SIGHUP under nohup or a background job)
    # stays ignored (`_install_handlers`): only the others are the temporaries'.
    sigs = tuple(s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) not in (signal.SIG_IGN, None))
    before = [signal.getsignal(s) for s in sigs]
    with _storage.held_handlers():
        assert all(signal.getsignal(s) is _storage._on_signal for s in sigs)
        with _storage.held_handlers():
            with open_output(str(tmp_path / "a.bin")) as out:
                out.file.write(b"a")
            assert all(signal.getsignal(s) is _storage._on_signal for s in sigs)
        with open_output(str(tmp_path / "b.bin")) as out:
            out.file.write(b"b")
        assert all(signal.getsignal(s) is _storage._on_signal for s in sigs)
    assert [signal.getsignal(s) for s in sigs] == before
    code = ("import os,signal,sys; from sessiontree import _storage; from sessiontree._output import open_output\n"
            "with _storage.held_handlers():\n"
            "    with open_output(sys.argv[1]) as out: out.file.write(b'x')\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    print('survived')")  # fmt: skip
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "c.bin")], capture_output=True, text=True,
                       timeout=60, preexec_fn=default_signals, check=False)  # fmt: skip
    assert p.returncode == -signal.SIGTERM and "survived" not in p.stdout
    assert sorted(os.listdir(tmp_path)) == ["a.bin", "b.bin", "c.bin"]


def test_a_zombie_writer_is_no_live_writer() -> None:
    """A process that has exited but is not yet reaped holds no file: its temporary
    files may be swept (a killed export's workers, whose parent is gone, can stay
    zombies for a while; the next run kept their files)."""
    from sessiontree._storage import process_alive

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # exited, not reaped: a zombie
            with open(f"/proc/{p.pid}/stat", "rb") as f:
                if f.read().rpartition(b")")[2].split()[0] == b"Z":
                    break
            time.sleep(0.01)
        assert not process_alive(p.pid)
    finally:
        p.wait()
    assert process_alive(os.getpid())


@pytest.mark.parametrize("name", ["n" * 246 + ".md", "é" * 125 + ".md"])
def test_a_long_name_that_fits_is_written(tmp_path: Path, session: Path, name: str, backend: str) -> None:
    """The temporary file is the name with a dot and a 20-byte tail: a name of 235 bytes
    or more (255 fit) could not be written at all, export, generate or a session's
    first write ("File name too long", naming the temporary file)."""
    assert len(os.fsencode(name)) <= 255
    out = tmp_path / name
    (tmp_path / "ref").mkdir()
    p = cli("export", str(session), "--format", "markdown", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == _expected(session, "markdown", tmp_path / "ref")
    out.unlink()
    generate_session(out, entries=5, seed=1)
    assert out.stat().st_size > 0
    out.unlink()
    sm = SessionManager.create("/p", session_dir=str(tmp_path), backend=backend)
    sm.set_session_file(str(out))
    sm.append_message({"role": "user", "content": "hi", "timestamp": 1})
    sm.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 2})
    sm.close()
    with SessionManager.open(str(out), backend=backend) as again:
        assert len(again) == 2
    assert sorted(os.listdir(tmp_path)) == sorted([name, "ref"])


def test_an_output_in_a_folder_that_cannot_be_written_is_named_as_given(tmp_path: Path, session: Path) -> None:
    """The error named the temporary file (``.x.md.<pid>.<hex>.tmp: Permission denied``),
    a name the user never gave."""
    import shutil

    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    prefix: list[str] = []
    if os.geteuid() == 0:  # root writes anywhere: drop the capabilities that let it
        if shutil.which("setpriv") is None:
            pytest.skip("root without setpriv: a read-only folder is writable")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    out = folder / "x.md"
    p = subprocess.run([*prefix, sys.executable, "-m", "sessiontree", "export", str(session), "--format", "markdown",
                        "--out", str(out)], capture_output=True, text=True, timeout=120)
    folder.chmod(0o755)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"{out}: Permission denied" in p.stderr and ".tmp" not in p.stderr, p.stderr
    assert os.listdir(folder) == []
