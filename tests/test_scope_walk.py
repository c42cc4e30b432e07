"""A PATH's folders (``cli._scope.walk``) are the extension's walk (``src/stat.rs``):
the same folders, in the same order, as the rule written with ``os.walk``, which the
scope used until issue 25, links and loops included."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from sessiontree.cli import _scope


def _by_os_walk(root: str, seen: set[tuple[int, int]]) -> Iterator[str]:
    def first_time(path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    if not first_time(root):
        return
    yield root
    for dirpath, dirnames, _ in os.walk(root, followlinks=True):
        dirnames.sort()
        dirnames[:] = [d for d in dirnames if first_time(os.path.join(dirpath, d))]
        for d in dirnames:
            yield os.path.join(dirpath, d)


def _tree(root: Path) -> Path:
    top = root / "top"
    for d in ("b/y/deep", "b/x", "a/z", "c", "\u00e9t\u00e9", "Z", "d.jsonl"):
        (top / d).mkdir(parents=True)
    (top / os.fsdecode(b"n\xff")).mkdir()
    (top / "a" / "s.jsonl").write_text("{}\n")
    (top / "file").write_text("x")
    os.symlink(top / "b", top / "c" / "to-b")  # b again: left out
    os.symlink(top, top / "a" / "z" / "up")  # a loop: left out
    os.symlink(top / "missing", top / "a" / "gone")
    os.symlink(top / "file", top / "c" / "to-file")
    outside = root / "outside"
    (outside / "inner").mkdir(parents=True)
    os.symlink(outside, top / "linked")  # a folder kept elsewhere, linked in
    return top


def test_the_walk_is_the_os_walk_rule(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    top = _tree(tmp_path)
    for root in (str(top), str(top) + "/", str(top / "c"), str(top / "a" / "s.jsonl"), str(top / "nowhere")):
        assert _scope.walk(root) == list(_by_os_walk(root, set())), root
    got = _scope.walk(str(top))
    assert [os.path.relpath(p, top) for p in got] == [
        ".", "Z", "a", "b", "c", "d.jsonl", "linked", os.fsdecode(b"n\xff"), "\u00e9t\u00e9",
        "a/z", "b/x", "b/y", "b/y/deep", "linked/inner"]
    monkeypatch.chdir(tmp_path)
    assert _scope.walk("top") == list(_by_os_walk("top", set()))


def test_paths_share_what_was_walked(tmp_path: Path) -> None:
    """Two PATHs, one inside the other: each folder once, as before."""
    top = _tree(tmp_path)
    paths = [str(top / "b"), str(top), str(top / "a" / "s.jsonl"), str(top / "c" / "to-b")]
    seen: set[tuple[int, int]] = set()
    want = [list(_by_os_walk(p, seen)) if os.path.isdir(p) else p for p in paths]
    flat = [x for w in want for x in (w if isinstance(w, list) else [w])]
    assert _scope._sources(paths, False) == [x for x in flat if not x.endswith("s.jsonl")]
