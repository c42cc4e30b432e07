"""The catalog's listing rule (``catalog._files.folder_files``) has one home,
``src/stat.rs``: the same files, names, paths and identities as the rule written with
``os.scandir`` and ``os.stat``, which the Python listing was until issue 25."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sessiontree import _sessiontree
from sessiontree.catalog import _files


def _by_python(folder: str) -> list[tuple[str, str, tuple[int, ...] | type[OSError]]]:
    """The rule as the Python listing wrote it: ``*.jsonl`` regular files (symlinks
    followed) or ``stat`` errors, in name order; one named file alone."""
    try:
        with os.scandir(folder) as it:
            names = sorted((e.name, e.path) for e in it if e.name.endswith(".jsonl"))
    except NotADirectoryError:
        names = [(os.path.basename(folder), folder)]
    except OSError:
        return []
    out: list[tuple[str, str, tuple[int, ...] | type[OSError]]] = []
    for name, path in names:
        try:
            st = os.stat(path)
        except OSError as e:
            out.append((name, path, type(e)))
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((name, path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)))
    return out


def _listed(folder: str) -> list[tuple[str, str, tuple[int, ...] | type[OSError]]]:
    return [(n, p, type(st) if isinstance(st, OSError) else tuple(st)) for n, p, st in _files.folder_files(folder)]


def _mixed(root: Path) -> Path:
    d = root / "d"
    d.mkdir()
    (d / "b.jsonl").write_bytes(b"{}\n")
    (d / "a.jsonl").write_bytes(b"{}\n{}\n")
    (d / "notes.txt").write_bytes(b"{}\n")
    (d / "sub.jsonl").mkdir()
    os.mkfifo(d / "pipe.jsonl")
    os.symlink(d / "a.jsonl", d / "link.jsonl")
    os.symlink(d / "missing", d / "dangling.jsonl")
    os.symlink(d, d / "loop.jsonl")
    (d / os.fsdecode(b"c\xff\xc3\xa9.jsonl")).write_bytes(b"{}\n")
    (d / "\u00e9t\u00e9.jsonl").write_bytes(b"{}\n")
    return d


def test_the_native_listing_is_the_python_rule(tmp_path: Path) -> None:
    d = _mixed(tmp_path)
    for folder in (str(d), str(d) + "/", str(d / "a.jsonl"), str(d / "notes.txt"), str(d / "link.jsonl"),
                   str(d / "pipe.jsonl"), str(d / "nowhere"), str(d / "sub.jsonl")):
        assert _listed(folder) == _by_python(folder), folder
    got = _listed(str(d))
    assert [n for n, _p, _s in got] == ["a.jsonl", "b.jsonl", os.fsdecode(b"c\xff\xc3\xa9.jsonl"), "dangling.jsonl",
                                        "link.jsonl", "\u00e9t\u00e9.jsonl"]
    assert got[3][2] is FileNotFoundError  # listed, its error reported later
    assert got[4][2] == got[0][2]  # a symlink is followed


def test_a_relative_folder_keeps_its_spelling(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    d = _mixed(tmp_path)
    monkeypatch.chdir(tmp_path)
    for folder in ("d", "./d", "d/", "d/a.jsonl"):
        assert _listed(folder) == _by_python(folder), folder
    assert _files.folder_files("d")[0][1] == os.path.join("d", "a.jsonl")


def test_the_listing_is_the_extensions(tmp_path: Path) -> None:
    """One listing: the catalog's and the warm usage scan's (``UsageScan``) are the
    extension's ``folder_files``."""
    d = _mixed(tmp_path)
    raw = sorted(_sessiontree.folder_files(os.fsencode(d)))
    assert [(n, p) for n, p, _s in _files.folder_files(str(d))] == [(n, p) for n, p, _s in raw]
    assert [s for _n, _p, s in raw if s is not None] == [
        tuple(s) for _n, _p, s in _files.folder_files(str(d)) if not isinstance(s, OSError)]
