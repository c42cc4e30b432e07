"""The HTML page is written in pieces whatever the path's length (issue 26, item 5): the
sidebar's rows of a fold that hides the whole path, and the data the page's script
reads (one item per entry), go out a bounded piece at a time, and the sidebar's
previews do not fill the manager's decoded-entry cache (which held every entry of a
1 GiB path: 240 MB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.export.html import write_html
from sessiontree.view import structure_of

from _shared import open_quiet

N = 20_000


def _chain(path: Path) -> Path:
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}]
    parent = None
    for i in range(N):
        eid = f"e{i:07d}"
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                      "message": {"role": "user", "content": f"message {i} " + "words " * 20, "timestamp": i}})
        parent = eid
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_the_page_goes_out_in_pieces(tmp_path: Path, backend: str) -> None:
    with open_quiet(_chain(tmp_path / "s.jsonl"), backend) as sm:
        budget = getattr(sm, "cache_budget", None)
        st = structure_of(sm)
        pieces: list[str] = []
        budgets: list[int | None] = []

        def write(text: str) -> None:
            pieces.append(text)
            budgets.append(getattr(sm, "cache_budget", None))

        stats = write_html(st, write, branches="path")
        assert getattr(sm, "cache_budget", None) == budget  # given back
    page = "".join(pieces)
    assert stats.rendered == N and page.count('class="r on"') == N
    assert page.index('"ids":["e0000000",') < page.index('"parents":[-1,0,') < page.index('"down":[1,2,')
    data = json.loads(page[page.index('id="st-data">') + 13:page.index("</script>", page.index('id="st-data">'))])
    assert data["ids"] == [f"e{i:07d}" for i in range(N)] and data["parents"] == [-1, *range(N - 1)]
    assert data["down"] == [*range(1, N), -1] and data["leaf"] == N - 1
    assert max(map(len, pieces)) < 200_000, max(map(len, pieces))  # the page is ~15 MB
    if budget:  # the native backend's cache: held off while the sidebar and the articles are read
        reading = [b for p, b in zip(pieces, budgets) if '<a class="r' in p or "<article" in p]
        assert len(reading) > 2 and set(reading) == {0}


def test_the_pages_hint_names_the_file_as_a_shell_takes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's "to read this branch" hint is pasted into a shell anywhere: the
    file's path absolute and quoted (a trial pasted ``sp ace/my session.jsonl``, given
    relative, from the page)."""
    import shlex

    from sessiontree.cli import main
    from sessiontree.generate import generate_session

    folder = tmp_path / "sp ace"
    folder.mkdir()
    generate_session(folder / "my session.jsonl", size_bytes=20_000, seed=3)
    monkeypatch.chdir(tmp_path)
    assert main(["export", "sp ace/my session.jsonl", "--format", "html", "--out", "page.html"]) == 0
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    data = json.loads(page[page.index('id="st-data">') + 13:page.index("</script>", page.index('id="st-data">'))])
    assert shlex.split(data["file"]) == [str(folder / "my session.jsonl")]
