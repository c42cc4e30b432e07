"""The native backend's early return of the staleness check (``stat_unchanged``,
``src/stat.rs``) decides as the Python rule does (``_filestate.FileWatch.check`` with
``os.stat``): two watches of one real file, one with it and one without, after every
step of random sequences of what other processes do to a session file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree._filestate import FileWatch, stat_id
from sessiontree.errors import StaleSessionError

native = pytest.importorskip("sessiontree._sessiontree", reason="the native extension is not built")

LINE = b'{"type":"message","id":"%08d","parentId":null}\n'


def _line(i: int) -> bytes:
    return LINE % i


def _append(p: Path, n: int) -> None:
    with open(p, "ab") as f:
        f.write(b"".join(_line(1000 + k) for k in range(n)))


def _truncate(p: Path, n: int) -> None:
    os.truncate(p, max(0, p.stat().st_size - n))


def _rewrite_head(p: Path, n: int) -> None:
    with open(p, "r+b") as f:
        f.write(b"x" * n)


def _rewrite_keeping_mtime(p: Path, n: int) -> None:
    st_ = p.stat()
    with open(p, "r+b") as f:
        f.seek(st_.st_size // 2)
        f.write(b"y" * n)
    os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns))


def _touch(p: Path, n: int) -> None:
    os.utime(p, ns=(n * 1_000_000_007, n * 1_000_000_007))


def _replace(p: Path, n: int) -> None:
    other = p.with_suffix(".new")
    other.write_bytes(p.read_bytes()[: max(1, n * 40)])
    os.replace(other, p)


def _replace_same_bytes(p: Path, n: int) -> None:
    other = p.with_suffix(".new")
    other.write_bytes(p.read_bytes())
    os.replace(other, p)


def _remove(p: Path, n: int) -> None:
    p.unlink(missing_ok=True)


def _recreate(p: Path, n: int) -> None:
    if not p.exists():
        p.write_bytes(b"".join(_line(k) for k in range(n + 1)))


STEPS = [_append, _truncate, _rewrite_head, _rewrite_keeping_mtime, _touch, _replace, _replace_same_bytes, _remove, _recreate]


def _verdict(watch: FileWatch, image_len: int, **kw: object) -> str:
    try:
        watch.check(image_len, **kw)  # type: ignore[arg-type]
    except StaleSessionError as e:
        return str(e)
    return "ok"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(STEPS), st.integers(1, 60), st.booleans()), max_size=12))
def test_the_native_early_return_decides_as_the_python_rule(tmp_path: Path, steps: list) -> None:
    p = tmp_path / "s.jsonl"
    p.unlink(missing_ok=True)
    p.write_bytes(b"".join(_line(k) for k in range(30)))
    ident = stat_id(str(p))
    image_len = p.stat().st_size
    python, rust = FileWatch(str(p), ident), FileWatch(str(p), ident)
    for step, n, grow in [(None, 0, False), *steps]:
        if step is _recreate or (step is not None and p.exists()):
            step(p, n)
        if grow and p.exists():
            image_len = max(image_len, p.stat().st_size)  # what a refresh() indexes
        # Each watch twice: the second check of each is the early return.
        for _ in range(2):
            assert _verdict(rust, image_len, unchanged=native.stat_unchanged) == _verdict(python, image_len)


def test_it_answers_for_names_that_are_not_utf8_and_refuses_what_stat_cannot_take(tmp_path: Path) -> None:
    name = os.fsencode(str(tmp_path)) + b"/s\xff\xfe.jsonl"
    with open(name, "wb") as f:
        f.write(_line(0))
    s = os.stat(name)
    assert native.stat_unchanged(name, s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns)
    assert not native.stat_unchanged(name, s.st_dev, s.st_ino, s.st_size + 1, s.st_mtime_ns)
    assert not native.stat_unchanged(name + b"\0", s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns)
    assert not native.stat_unchanged(b"/" + b"a" * 5000, s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns)
    assert not native.stat_unchanged(b"", s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns)
    with pytest.raises(OverflowError):
        native.stat_unchanged(name, -1, s.st_ino, s.st_size, s.st_mtime_ns)
