"""``sessiontree tree`` read as people read it (issue 10 item 4): parent and sibling
unmistakable, every leaf marked in the text, the width never exceeded however deep the
abandoned branches nest, and ``--from``, ``--depth``, ``--branches``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env,
                          timeout=120, encoding="utf-8")


def write(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in [HEADER, *entries]), encoding="utf-8")
    return path


_clock = [0]


def msg(eid: str, parent: str | None, text: str, role: str = "user") -> dict[str, Any]:
    _clock[0] += 1
    t = _clock[0]
    return {"type": "message", "id": eid, "parentId": parent,
            "timestamp": f"2026-01-01T{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000Z",
            "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": t}}


def nested(path: Path, levels: int) -> Path:
    """A main branch r -> m1 -> m2 (the leaf), and at r an abandoned branch s1 whose
    branch point s1 holds an abandoned branch s2 ... down to ``levels`` nested ones;
    each s_k also continues to its own tip t_k."""
    entries = [msg("r", None, "root")]
    parent = "r"
    for k in range(1, levels + 1):
        entries.append(msg(f"s{k:02d}", parent, f"abandoned {k}"))  # older: an abandoned branch of parent
        parent = f"s{k:02d}"
    for k in range(1, levels + 1):
        entries.append(msg(f"t{k:02d}", f"s{k:02d}", f"tip {k}", role="assistant"))  # newer: continues s_k
    entries += [msg("m1", "r", "main"), msg("m2", "m1", "leaf", role="assistant")]
    return write(path, entries)


def widths(text: str) -> list[int]:
    return [cell_len(line) for line in text.splitlines()]


def test_out_of_range_numbers_are_refused_in_one_line(tmp_path: Path) -> None:
    path = nested(tmp_path / "deep.jsonl", 2)
    for args, words in ((["--width", "19"], "--width must be at least 20 and at most 1,000,000, not 19"),
                        (["--width", "0"], "--width must be at least 20 and at most 1,000,000, not 0"),
                        # Issue 24: past a C size, an OverflowError with a traceback.
                        (["--width", "99999999999999999999999"], "not 99,999,999,999,999,999,999,999"),
                        (["--width", "1000001"], "at most 1,000,000, not 1,000,001"),
                        (["--width", "9" * 4000], "not a number of 4000 digits"),
                        (["--nested", "-1"], "--nested must be 0 or more"),
                        (["--depth", "-1"], "--depth must be 0 or more")):
        p = run("tree", str(path), *args)
        assert p.returncode == 1 and p.stdout == "" and p.stderr.strip().endswith(words), (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1
    p = run("tree", str(path), "--width", "20", "--full")
    assert p.returncode == 0 and max(widths(p.stdout)) <= 20
    p = run("tree", str(path), "--width", "1000000", "--full")
    assert p.returncode == 0 and max(widths(p.stdout)) <= 1_000_000


@pytest.mark.parametrize("width", [60, 100, 160])
def test_sixty_nested_branches_keep_the_width(tmp_path: Path, width: int, backend: str) -> None:
    path = nested(tmp_path / "deep.jsonl", 60)
    p = run("tree", str(path), "--full", "--width", str(width), "--backend", backend)
    assert p.returncode == 0, p.stderr
    assert max(widths(p.stdout)) <= width
    assert "‹60›" in p.stdout  # past the cap, the depth is a number
    lines = p.stdout.splitlines()
    assert len(lines) == 2 * 60 + 3  # one line per entry, nothing else
    # Every leaf is marked in the text: 60 tips and the current leaf.
    assert sum(line.split("s1 ")[0].count("◇ ") for line in lines) == 60
    assert sum("* " in line and "← leaf" in line for line in lines) == 1


def test_parent_and_sibling_are_unmistakable(tmp_path: Path, backend: str) -> None:
    """Two branch points on the main branch, one after the other: each one's abandoned
    branch hangs from its own spine, and the main branch continues in column 0."""
    path = write(tmp_path / "two.jsonl", [
        msg("a1", None, "first"), msg("b1", "a1", "tried"), msg("a2", "a1", "second", "assistant"),
        msg("c1", "a2", "tried again"), msg("a3", "a2", "third"), msg("a4", "a3", "done", "assistant"),
    ])
    out = run("tree", str(path), "--full", "--color", "never", "--backend", backend).stdout.splitlines()
    col = {eid: next(line for line in out if f" {eid} " in line) for eid in ("a1", "a2", "a3", "b1", "c1")}
    assert [line[:2] for line in out] == ["  ", "│ ", "  ", "│ ", "  ", "* "]
    assert col["b1"].startswith("│ └─ ◇ b1") and col["c1"].startswith("│ └─ ◇ c1")
    assert col["a2"].startswith("  a2") and col["a3"].startswith("  a3")  # continuations in column 0
    assert "┬2" in col["a1"] and "┬2" in col["a2"]



def _in_font(family: str, ch: str) -> bool:
    """``family`` (as fontconfig knows it) has a glyph for ``ch``."""
    out = subprocess.run(["fc-list", f":family={family}:charset={ord(ch):x}", "family"],
                         capture_output=True, text=True, timeout=60).stdout
    return family in out


def test_the_marks_are_in_a_common_monospace_font(tmp_path: Path) -> None:
    """Every character ``tree`` draws around ASCII entries (guides, tip, leaf and branch
    point marks) has a glyph in DejaVu Sans Mono, as fontconfig reads the font file (issue
    26: ``⑂``, U+2442, the old branch point mark, has none and showed as a box)."""
    import shutil

    family = "DejaVu Sans Mono"
    if shutil.which("fc-list") is None or not _in_font(family, "a"):
        pytest.skip(f"fontconfig or {family} is not installed (apt-get install fontconfig fonts-dejavu-core)")
    from sessiontree.view import BRANCH_MARK, FOLD_MARK, cells

    path = write(tmp_path / "two.jsonl", [
        msg("a1", None, "first"), msg("b1", "a1", "tried"), msg("a2", "a1", "second", "assistant"),
        msg("c1", "a2", "tried again"), msg("a3", "a2", "third"), msg("a4", "a3", "done", "assistant"),
    ])
    out = run("tree", str(path), "--full", "--color", "never").stdout
    assert f"{BRANCH_MARK}2" in out and cells(BRANCH_MARK) == 1
    # and a long run, folded
    run_of = [msg("r0", None, "start")] + [msg(f"r{i}", f"r{i - 1}", f"step {i}") for i in range(1, 40)]
    out += run("tree", str(write(tmp_path / "run.jsonl", run_of)), "--color", "never").stdout
    assert FOLD_MARK in out and cells(FOLD_MARK) == 1
    drawn = sorted({ch for ch in out if not ch.isascii()})
    assert BRANCH_MARK in drawn
    assert [ch for ch in drawn if not _in_font(family, ch)] == []

def test_a_header_only_session_says_so(tmp_path: Path, backend: str) -> None:
    """``tree`` of a session with no entries says so on stderr (it printed nothing);
    ``--json`` is an empty list."""
    path = write(tmp_path / "empty.jsonl", [])
    p = run("tree", str(path), "--backend", backend)
    assert p.returncode == 0 and p.stdout == "" and "no entries" in p.stderr, (p.stdout, p.stderr)
    assert json.loads(run("tree", str(path), "--json", "--backend", backend).stdout) == []


def test_from_depth_and_branches(tmp_path: Path, backend: str) -> None:
    path = nested(tmp_path / "deep.jsonl", 5)
    p = run("tree", str(path), "--from", "s03", "--full", "--backend", backend)
    assert p.returncode == 0, p.stderr
    ids = [w for line in p.stdout.splitlines() for w in line.split() if w[:1] in "rstm" and w[1:3].isdigit()]
    assert ids[0] == "s03" and "s02" not in ids and "r" not in ids and set(ids) == {"s03", "s04", "s05", "t03",
                                                                                    "t04", "t05"}
    p = run("tree", str(path), "--from", "s0", "--backend", backend)
    assert p.returncode != 0 and "ambiguous" in p.stderr and "Traceback" not in p.stderr
    p = run("tree", str(path), "--from", "zz", "--backend", backend)
    assert p.returncode != 0 and "zz" in p.stderr and "Traceback" not in p.stderr
    p = run("tree", str(path), "--depth", "1", "--full", "--backend", backend)
    assert p.returncode == 0, p.stderr
    assert "s02" not in p.stdout and "m2" not in p.stdout
    assert "⋯ 9 more entries below (tree --from s01)" in p.stdout and "⋯ 1 more entry below (tree --from m1)" in p.stdout
    p = run("tree", str(path), "--branches", "--backend", backend)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    tips = {line.split("◇ ")[1].split()[0]: line for line in lines if "◇ " in line}
    assert sorted(tips) == ["t01", "t02", "t03", "t04", "t05"]
    assert all("  1 entry" in tips[t] for t in ("t01", "t02", "t03", "t04"))
    assert "(+1) 2 entries" in tips["t05"] and "“abandoned 5”" in tips["t05"]  # s05 then t05
    assert "s05" not in p.stdout  # inside a branch: counted, not drawn
    assert any("* m2" in line and "← leaf" in line and "(+1) 2 entries" in line for line in lines)


def test_branches_view_summarizes_each_tip(tmp_path: Path, backend: str) -> None:
    path = write(tmp_path / "b.jsonl", [
        msg("a1", None, "start"), msg("a2", "a1", "ok", "assistant"),
        msg("b1", "a2", "try the other way"), msg("b2", "b1", "did it", "assistant"), msg("b3", "b2", "more", "assistant"),
        msg("a3", "a2", "go on"), msg("a4", "a3", "fine", "assistant"),
    ])
    p = run("tree", str(path), "--branches", "--color", "never", "--backend", backend)
    assert p.returncode == 0, p.stderr
    tip = next(line for line in p.stdout.splitlines() if "b3" in line)
    assert "◇ b3" in tip and "(+2)" in tip and "3 entries" in tip and "try the other way" in tip
    assert "b2" not in p.stdout  # inside a branch: counted, not drawn


def test_deeply_nested_branches_fold_to_one_line(tmp_path: Path, backend: str) -> None:
    """By default abandoned branches are drawn two deep; below that each branch point's
    branches are one line saying how many and the --from that opens them."""
    path = nested(tmp_path / "deep.jsonl", 6)
    p = run("tree", str(path), "--color", "never", "--backend", backend)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "s02" in out and "s03" not in out and "t03" not in out
    assert "┬ 1 more branch here (tree --from s02)" in out
    assert "* m2" in out and "◇ t01" in out and "◇ t02" in out
    p = run("tree", str(path), "--color", "never", "--nested", "1", "--backend", backend)
    assert "s02" not in p.stdout and "┬ 1 more branch here (tree --from s01)" in p.stdout
    p = run("tree", str(path), "--color", "never", "--from", "s02", "--backend", backend)
    assert "s03" in p.stdout and "◇ t03" in p.stdout  # opened where the line said
    for args in (["--nested", "100"], ["--full"], ["--branches"]):
        p = run("tree", str(path), "--color", "never", *args, "--backend", backend)
        assert all(f"◇ t{k:02d}" in p.stdout for k in range(1, 7)), args


def test_one_cell_characters_agree_with_rich() -> None:
    """``cells`` measures texts of the characters it counts as one cell by ``len``."""
    from sessiontree.view._cells import _ONE_CELL_RE, cells, fit

    one = [chr(c) for c in range(0x3000) if _ONE_CELL_RE.fullmatch(chr(c))]
    assert len(one) > 1000 and all(cell_len(ch) == 1 for ch in one)
    text = "".join(one)
    assert cells(text) == cell_len(text) == len(text)
    assert cell_len(fit(text, 50)) <= 50 and cell_len(fit("日本語" * 30 + "abc", 50)) <= 50


def test_emoji_sequences_are_cut_as_cells_counts_them() -> None:
    """``fit`` and ``fit_start`` measure an emoji made of several code points (U+FE0F's
    emoji presentation, a U+200D family) as ``cells`` does: per code point, ``🏷️`` was
    one cell where ``cells`` and the terminal take two, so a cut label overflowed."""
    from sessiontree.view import cells, fit, fit_start

    for text in ("🚀🏷️" * 40, "ab👨‍👩‍👧" * 30, "x❤️y" * 40, "日本🏳️‍🌈" * 30):
        for width in (5, 10, 11, 50, 79):
            for cut in (fit(text, width), fit_start(text, width)):
                assert cells(cut) == cell_len(cut) <= width and "…" in cut, (text, width, cut)
                assert cells(cut) >= width - 2, (text, width, cut)  # and not cut short either


def test_a_text_already_cut_is_marked_once() -> None:
    from sessiontree.view import fit

    for text in ("content='✓ packag…', path='a'", "content='日本語…', path='a'", "abcdef…ghij"):
        for width in range(2, len(text)):
            got = fit(text, width)
            assert "……" not in got and got.endswith("…") and cell_len(got) <= width, (text, width, got)


def test_fold_kinds_and_kept_entries_match_naming_each_entry(tmp_path: Path, backend: str) -> None:
    # Layout names kinds and finds the entries a fold keeps over the shape's code
    # columns; naming every entry one by one must give the same counts in the same
    # order (the fold line's ties keep first occurrence), whatever the roles and types.
    import random
    from collections import Counter

    from sessiontree import SessionManager
    from sessiontree.view import one_line
    from sessiontree.view import Layout

    entries: list[dict[str, Any]] = []
    parent = None
    odd = ["user", "assistant", "toolResult", "bashExecution", "custom", "system", "lead\nrole", "ünï", "", None, 7]
    for k in range(300):
        eid = f"e{k:03d}"
        kind = k % 9
        if kind < 6:
            e = msg(eid, parent, f"text {k}", role="user")
            e["message"]["role"] = odd[(k * 7) % len(odd)]
            if k % 50 == 3:
                del e["message"]["role"]
        elif kind == 6:
            e = {"type": ["compaction", "branch_summary", "session_info"][k % 3], "id": eid, "parentId": parent,
                 "timestamp": "2026-01-01T00:00:00.000Z", "summary": "s", "fromId": parent, "name": "n",
                 "firstKeptEntryId": parent, "tokensBefore": 1}
        elif kind == 7:
            e = {"type": "zap" if k % 2 else "custom", "id": eid, "parentId": parent, "customType": "x",
                 "timestamp": "2026-01-01T00:00:00.000Z"}
        else:
            e = {"type": "model_change", "id": eid, "parentId": parent, "provider": "p", "modelId": "m",
                 "timestamp": "2026-01-01T00:00:00.000Z"}
        entries.append(e)
        parent = eid
    path = write(tmp_path / "kinds.jsonl", entries)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sm = SessionManager.open(str(path), backend=backend)
    with sm:
        shape = sm.get_shape()
        leaf = shape.index(sm.leaf_id)
        labelled = {5, 77}
        lay = Layout(shape, leaf, labelled, -1, lambda i: {})
        types, roles = list(shape.types), list(shape.roles)

    def named(i: int) -> str:
        if types[i] == "message":
            return "message" if roles[i] is None else one_line(roles[i], 100)
        return types[i]

    every = list(range(len(types)))
    assert {named(i) for i in every} >= {"lead role", "ünï", "", "?", "message", "custom", "model_change", "compaction"}
    rng = random.Random(1)
    for numbers in [every, every[::-1], rng.sample(every, 40), [i for i in every if roles[i] is None], []]:
        want = Counter(named(i) for i in numbers)
        assert list(lay.kinds(numbers).items()) == list(want.items())
        assert [lay.kind(i) for i in numbers] == [named(i) for i in numbers]
    keep = {i for i in every if types[i] in ("compaction", "branch_summary", "session_info")} | labelled | {leaf}
    assert {i for i in every if lay.keep(i)} == keep
    assert lay.kept_in(every) == sorted(keep) and lay.kept_in([1, 2, 3]) == []


_LABELS = {"u1": "a-very-long-ascii-label-" * 6, "u2": "这是一个非常非常长的标签用于测试宽字符的布局" * 3,
           "u3": "🚀🏷️" * 40}


def labelled(path: Path) -> Path:
    """Three user messages, each with a long label (ASCII, CJK, emoji), the last the leaf."""
    entries = [msg("u1", None, "first message text here"), msg("u2", "u1", "second message text here"),
               msg("u3", "u2", "third message text here")]
    for k, (target, label) in enumerate(_LABELS.items()):
        entries.insert(k + 3, {"type": "label", "id": f"l{k}", "parentId": "u3" if k == 0 else f"l{k - 1}",
                               "timestamp": "2026-01-01T01:00:00.000Z", "targetId": target, "label": label})
    entries.append(msg("u4", "l2", "the end", "assistant"))
    return write(path, entries)


@pytest.mark.parametrize("width", [80, 60])
def test_a_long_label_leaves_the_row_its_text(tmp_path: Path, width: int, backend: str) -> None:
    """Issue 26: a long label took a row's whole width and cut its own text away; the
    label is cut (with ``…``, in display cells: CJK and emoji too) so the text keeps
    its share."""
    path = labelled(tmp_path / "labels.jsonl")
    p = run("tree", str(path), "--full", "--width", str(width), "--color", "never", "--backend", backend)
    assert p.returncode == 0, p.stderr
    assert max(widths(p.stdout)) <= width
    rows = {line.split()[0]: line for line in p.stdout.splitlines() if " user " in line}
    for eid, words in (("u1", "first messa"), ("u2", "second mess"), ("u3", "third messa")):
        row = rows[eid]
        assert words in row, row  # the row's own text, its first words at least
        label = row[row.index("  [") + 3:]
        assert label.endswith("…]") and _LABELS[eid].startswith(label[:-2]), row  # cut, and said to be
        assert cell_len(label) >= 8, row  # not cut to nothing either


def test_ids_are_cut_before_they_are_escaped(tmp_path: Path) -> None:
    """Adversary round 44, F3: an id holding U+200B showed ``\\u200b\\u`` (its escape cut).
    Now the id is cut, then escaped, and padded by cells."""
    import subprocess
    import sys

    from rich.cells import cell_len

    from _shared import chain_of_ids

    ids = ["\u200bab\u200bcdefgh", "日本語日本語日本xx", "abcdefghij"]
    path = chain_of_ids(tmp_path / "ids.jsonl", ids)
    p = subprocess.run([sys.executable, "-m", "sessiontree", "tree", str(path)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    rows = [line for line in p.stdout.splitlines() if " user " in line]
    assert len(rows) == 3, p.stdout
    assert "\\u200bab\\u200bcdefgh" in rows[0] or "\\u200bab\\u200bcdef" in rows[0], rows[0]
    assert not rows[0].split(" user")[0].rstrip().endswith("\\u"), rows[0]
    assert cell_len(rows[1].split(" user")[0]) == 2 + 16, rows[1]  # eight wide characters, whole
