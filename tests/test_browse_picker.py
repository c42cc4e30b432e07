"""``sessiontree browse`` without a session file: the session picker (Pi's ``/resume``).

The model (``browse._sessions``: threads, ages, sorts, the name filter) is checked
against Pi's rules written out by hand; the screen with Textual's pilot (the listing
as it arrives, a search narrowing the rows, open, back, scopes, sorts); and the whole
command as a real process on a pseudo-terminal, its screen read by a VT100 emulator
(pyte): type a search, choose a session, see its tree, go back.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("textual", reason="Textual is not installed: pip install textual")

from sessiontree import SessionManager  # noqa: E402
from sessiontree.browse import BrowseApp, Picker, Scope  # noqa: E402
from sessiontree.browse._sessions import MAX_PREFIX, Found, age, counts, next_want, rows, take, threaded  # noqa: E402
from sessiontree.catalog import search  # noqa: E402

from _shared import damage_pages, native_available  # noqa: E402
from sessiontree.schema import SessionInfo  # noqa: E402

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def write_session(folder: Path, n: int, *, first: str, reply: str, minutes: int, cwd: str = "/work/p",
                  name: str | None = None, parent: Path | None = None) -> Path:
    """A small Pi session: a user message, an assistant reply (and a name), its last
    activity ``minutes`` after ``BASE``."""
    folder.mkdir(parents=True, exist_ok=True)
    t = BASE + timedelta(minutes=minutes)
    sid = f"0195{n:04x}-0000-7000-8000-{n:012x}"
    path = folder / f"{_iso(t).replace(':', '-').replace('.', '-')}_{sid}.jsonl"
    header: dict[str, Any] = {"type": "session", "version": 3, "id": sid, "timestamp": _iso(t - timedelta(minutes=1)),
                              "cwd": cwd}
    if parent is not None:
        header["parentSession"] = str(parent)
    ms = int(t.timestamp() * 1000)
    lines = [header,
             {"type": "message", "id": f"{n:04x}0001", "parentId": None, "timestamp": _iso(t),
              "message": {"role": "user", "content": first, "timestamp": ms}},
             {"type": "message", "id": f"{n:04x}0002", "parentId": f"{n:04x}0001", "timestamp": _iso(t),
              "message": {"role": "assistant", "content": [{"type": "text", "text": reply}], "provider": "p",
                          "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                                  "totalTokens": 2, "cost": {"total": 0}},
                          "stopReason": "stop", "timestamp": ms}}]
    if name is not None:
        lines.append({"type": "session_info", "id": f"{n:04x}0003", "parentId": f"{n:04x}0002", "timestamp": _iso(t),
                      "name": name})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    os.utime(path, (t.timestamp(), t.timestamp()))
    return path


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """Two project folders: ``alpha`` (a thread: a session forked twice, one fork forked
    again; a named session; the only one mentioning zebras) and ``beta``."""
    root = tmp_path / "sessions"
    a, b = root / "--work-alpha--", root / "--work-beta--"
    base = write_session(a, 1, first="Refactor the parser", reply="Done with the parser.", minutes=10,
                         cwd="/work/alpha")
    fork1 = write_session(a, 2, first="Refactor the parser", reply="A fork of it.", minutes=20, cwd="/work/alpha",
                          parent=base)
    write_session(a, 3, first="Refactor the parser", reply="Another fork.", minutes=30, cwd="/work/alpha",
                  parent=base)
    write_session(a, 4, first="Refactor the parser", reply="A fork of the fork.", minutes=40, cwd="/work/alpha",
                  parent=fork1)
    write_session(a, 5, first="Count the animals", reply="I found a zebra crossing the field.", minutes=50,
                  cwd="/work/alpha", name="Zoo inventory")
    for k in range(6):
        write_session(b, 10 + k, first=f"Beta task {k}", reply="Nothing about animals here.", minutes=60 + k,
                      cwd="/work/beta")
    return root


def list_sessions(folder: str) -> list[SessionInfo]:
    return SessionManager.list("/", session_dir=folder)


def _info(path: str, minutes: int, parent: str | None = None, name: str | None = None) -> SessionInfo:
    t = BASE + timedelta(minutes=minutes)
    return SessionInfo(path=path, id=path, cwd="/w", name=name, parent_session_path=parent, created=t, modified=t,
                       message_count=2, first_message=f"first {path}", all_messages_text="")


# ---------------------------------------------------------------------------- the model


def test_threaded_rows_draw_forks_under_their_parent_as_pi_does() -> None:
    """Pi's ``buildSessionTree`` / ``flattenSessionTree``: roots and children newest first;
    a child's prefix is three spaces for the root, then ``│  `` under an ancestor with a
    later sibling, then ``├─ `` or ``└─ ``."""
    s = [_info("/h/a", 10), _info("/h/b", 20, "/h/a"), _info("/h/c", 30, "/h/a"), _info("/h/d", 40, "/h/b"),
         _info("/h/e", 5), _info("/h/f", 50, "/h/gone")]
    s.sort(key=lambda x: x.modified, reverse=True)
    got = [(r.prefix, r.info.path) for r in threaded(s)]
    assert got == [("", "/h/f"),  # its parent is not listed: a root
                   ("", "/h/a"),
                   ("   ├─ ", "/h/c"),
                   ("   └─ ", "/h/b"),
                   ("      └─ ", "/h/d"),
                   ("", "/h/e")]
    # Under a child that has a later sibling, a grandchild's line continues.
    s2 = [_info("/r", 1), _info("/x", 30, "/r"), _info("/y", 20, "/r"), _info("/x1", 40, "/x")]
    assert [(r.prefix, r.info.path) for r in threaded(s2)] == [
        ("", "/r"), ("   ├─ ", "/x"), ("   │  └─ ", "/x1"), ("   └─ ", "/y")]
    # A cycle of parents (no root above): every session still shows, once.
    loop = [_info("/p", 2, "/q"), _info("/q", 1, "/p")]
    assert sorted(r.info.path for r in threaded(loop)) == ["/p", "/q"]


def test_a_fork_of_a_session_in_a_cycle_of_parents_is_drawn_under_it() -> None:
    """An attack: a and b name each other as parent and child names a; child fell to the
    flat tail. The newest of the cycle stands as a root, the others under it."""
    s = [_info("/c", 30, "/a"), _info("/b", 20, "/a"), _info("/a", 10, "/b"), _info("/r", 5)]
    got = [(r.prefix, r.info.path) for r in threaded(s)]
    assert got == [("", "/r"), ("", "/b"), ("   └─ ", "/a"), ("      └─ ", "/c")], got


def test_a_deep_thread_keeps_its_rows_on_screen() -> None:
    """An attack: 200 forks each of the one before drew rows whose prefix filled the line.
    The prefix is capped (the last levels after a …); every session shows once."""
    s = [_info("/s0", 0)] + [_info(f"/s{i}", i, f"/s{i - 1}") for i in range(1, 200)]
    s.sort(key=lambda x: x.modified, reverse=True)
    rows_ = threaded(s)
    assert [r.info.path for r in rows_] == [f"/s{i}" for i in range(200)]
    assert max(len(r.prefix) for r in rows_) <= MAX_PREFIX
    assert rows_[-1].prefix.startswith("…") and rows_[-1].prefix.endswith("└─ ")
    assert rows_[5].prefix == "   " * 5 + "└─ "  # shallow rows as Pi draws them


def test_age_is_pis_format_session_date() -> None:
    now = BASE
    cases = {timedelta(seconds=59): "now", timedelta(minutes=1): "1m", timedelta(minutes=59): "59m",
             timedelta(hours=1): "1h", timedelta(hours=23, minutes=59): "23h", timedelta(days=1): "1d",
             timedelta(days=6): "6d", timedelta(days=7): "1w", timedelta(days=29): "4w", timedelta(days=30): "1mo",
             timedelta(days=364): "12mo", timedelta(days=365): "1y", timedelta(days=800): "2y"}
    for ago, want in cases.items():
        assert age(now - ago, now) == want, ago


def test_sorts_name_filter_and_a_search_s_order() -> None:
    s = [_info("/c", 30, name="Named"), _info("/b", 20), _info("/a", 10, "/b")]
    assert [r.info.path for r in rows(s, sort="recent", named=False, found=None)] == ["/c", "/b", "/a"]
    assert [r.info.path for r in rows(s, sort="relevance", named=False, found=None)] == ["/c", "/b", "/a"]
    assert [r.prefix for r in rows(s, sort="threaded", named=False, found=None)] == ["", "", "   └─ "]
    assert [r.info.path for r in rows(s, sort="threaded", named=True, found=None)] == ["/c"]

    class Hit:
        def __init__(self, path: str) -> None:
            self.path = path

    found = Found("q")
    for p in ("/a", "/c", "/a"):  # best first; a session's later hits change nothing
        found.add(Hit(p))
    assert [r.info.path for r in rows(s, sort="relevance", named=False, found=found)] == ["/a", "/c"]
    assert [r.info.path for r in rows(s, sort="threaded", named=False, found=found)] == ["/a", "/c"]  # Pi's
    assert [r.info.path for r in rows(s, sort="recent", named=False, found=found)] == ["/c", "/a"]
    assert [r.info.path for r in rows(s, sort="recent", named=True, found=found)] == ["/c"]
    assert rows(s, sort="relevance", named=False, found=found)[0].hit.path == "/a"


def test_listing_groups_keep_folders_whole_and_grow_with_the_pace(tmp_path: Path) -> None:
    folders = []
    for k, n in enumerate([30, 40, 100, 10, 500]):
        f = tmp_path / f"p{k}"
        f.mkdir()
        for i in range(n):
            (f / f"{i}.jsonl").touch()
        (f / "notes.txt").touch()
        folders.append(str(f))
    one = tmp_path / "one.jsonl"
    one.touch()
    left = counts((*folders, str(one), str(tmp_path / "missing")))
    assert [n for _, n in left] == [30, 40, 100, 10, 500, 1, 0]
    group, n, rest = take(left, 64)
    assert (group, n) == (folders[:2], 70)
    group, n, rest = take(rest, 1)  # at least one source
    assert (group, n) == (folders[2:3], 100)
    group, n, rest = take(rest, 10_000)
    assert n == 511 and rest == []
    assert next_want(100, 1.0, 64) == 128  # slow: twice the last
    assert next_want(200, 0.02, 64) == 2500  # fast (a warm catalog): a quarter second's worth


# ---------------------------------------------------------------------------- the screen


def screen(app: Any) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def until(pilot: Any, test: Any, what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if test():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen(pilot.app)}")


def picker_of(root: Path) -> Picker:
    folders = tuple(str(p) for p in sorted(root.iterdir()))
    return Picker((Scope("current folder", folders[0], folders[:1]),
                   Scope("all", str(root), folders, projects=True)))


def drive(picker: Picker, steps: Any, size: tuple[int, int] = (100, 30)) -> BrowseApp:
    app = BrowseApp(picker=picker)

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await steps(app, pilot)

    asyncio.run(main())
    return app


def listed_rows(app: Any) -> list[str]:
    from sessiontree.browse._picker import SessionList

    return [r.info.path for r in app.get_screen("picker").query_one(SessionList).rows]


async def ready(app: Any, pilot: Any, n: int) -> None:
    """Wait until the picker's scope is listed, all ``n`` sessions."""
    picker = app.get_screen("picker")
    await until(pilot, lambda: len(listed_rows(app)) == n and picker.scope not in picker.reading, "the listing")


async def open_selected(app: Any, pilot: Any) -> None:
    """``enter`` in the picker, and wait until the session's tree is on screen."""
    await pilot.press("enter")
    await until(pilot, lambda: app.st is not None and "← leaf" in screen(app), "the session's tree")


def test_pick_search_open_and_go_back(history: Path) -> None:
    alpha = str(sorted(history.iterdir())[0])
    want = [s.path for s in list_sessions(alpha)]
    zoo = next(s.path for s in list_sessions(alpha) if s.name == "Zoo inventory")

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        text = screen(app)
        assert "Resume session  " in text and "◉ current folder | ○ all" in text
        assert "Resume session (" not in text  # the scope named once, in the radios
        assert "sort: threaded" in text and "Zoo inventory" in text
        # Threaded: the forks under the session they came from, the newest root first.
        assert listed_rows(app)[0] == zoo and sorted(listed_rows(app)) == sorted(want)
        assert "   └─ " in text and "   ├─ " in text
        # A search: the one session whose text holds the word, the hit's snippet below.
        await pilot.press(*"zebra")
        await until(pilot, lambda: listed_rows(app) == [zoo] and "1 of 5 sessions" in screen(app), "the search")
        assert "assistant: I found a zebra crossing" in screen(app)
        await open_selected(app, pilot)
        assert app.path == zoo and "Zoo inventory" in screen(app)
        assert "esc back" in screen(app)
        # It opens at the hit, the entry its snippet is from, not at the leaf.
        hit = [e["id"] for e in SessionManager.open(zoo).get_entries()
               if "I found a zebra crossing" in json.dumps(e.get("message", {}))]
        assert len(hit) == 1 and hit[0] != app.st.id(app.st.session_leaf)
        assert app.st.id(app._tree().current_row().entry) == hit[0]
        await pilot.press("escape")  # back to the picker, as it was
        await until(pilot, lambda: "Resume session" in screen(app), "the picker again")
        assert listed_rows(app) == [zoo] and "zebra" in screen(app)
        await pilot.press("escape")  # and back to the session open
        await until(pilot, lambda: "← leaf" in screen(app), "the session again")
        await pilot.press("home")
        assert app.st.id(app._tree().current_row().entry) != hit[0]
        await pilot.press("escape")  # the hit again, in the session already open
        await until(pilot, lambda: "Resume session" in screen(app), "the picker")
        await open_selected(app, pilot)
        assert app.path == zoo and app.st.id(app._tree().current_row().entry) == hit[0]
        await pilot.press("escape")
        await until(pilot, lambda: "Resume session" in screen(app), "the picker")
        for _ in "zebra":
            await pilot.press("backspace")
        await until(pilot, lambda: len(listed_rows(app)) == 5, "every session again")
        await pilot.press("down", "enter")  # another session: the first one closed
        await until(pilot, lambda: app.st is not None and app.path == listed_rows(app)[1], "the second session")
        await pilot.press("q")

    app = drive(picker_of(history), steps)
    assert app.return_code == 0 and app.failure is None


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab/é漢字😀\u0301-"), max_size=40), width=st.integers(0, 50))
def test_fit_start_cuts_by_cells_keeping_the_end(text: str, width: int) -> None:
    """``view.fit_start``: at most ``width`` cells (rich's measure), the text's end after
    one ``…``, and as much of it as fits."""
    from rich.cells import cell_len
    from sessiontree.view import fit_start

    out = fit_start(text, width)
    assert cell_len(out) <= width
    if cell_len(text) <= width:
        assert out == text
    elif out:
        assert out[0] == "…" and text.endswith(out[1:])
        more = text[len(text) - len(out):]  # one character more of the end
        assert cell_len("…" + more) > width


def test_a_wide_path_is_cut_to_the_row_in_cells() -> None:
    """A path of wide characters (CJK folders) shown with ctrl+p fits its row: it was cut
    by characters, two cells each, and pushed the row past the terminal's width."""
    from rich.cells import cell_len
    from sessiontree.browse._picker import row_text
    from sessiontree.browse._sessions import Row

    path = "/w/" + "項目" * 30 + "/2025-12-03T07-22-23-176Z_019ae317.jsonl"
    for width in (60, 80, 120):
        text = row_text(Row(_info(path, 5)), width, show_path=True, show_cwd=False, current=None,
                        now=BASE + timedelta(hours=1))
        assert cell_len(text.plain) <= width, (width, text.plain)
        assert "019ae317.jsonl" in text.plain


def test_ctrl_c_quits_from_the_picker_and_from_the_tree(history: Path) -> None:
    """ctrl+c quits, as it leaves Pi's /resume (Textual would take it for "copy" in the
    search box and only say how to quit), with the search box focused and from a
    session opened from the picker."""
    async def from_picker(app: Any, pilot: Any) -> None:
        await until(pilot, lambda: len(listed_rows(app)) >= 1, "the listing")
        await pilot.press("z")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, "the app to quit")

    app = drive(picker_of(history), from_picker)
    assert app.return_code == 0 and app.failure is None

    async def from_tree(app: Any, pilot: Any) -> None:
        await until(pilot, lambda: len(listed_rows(app)) >= 1, "the listing")
        await pilot.press("enter")
        await until(pilot, lambda: app.st is not None and "← leaf" in screen(app), "the session")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, "the app to quit")

    app = drive(picker_of(history), from_tree)
    assert app.return_code == 0 and app.failure is None


def test_quitting_during_a_long_search_does_not_wait_for_it(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new user's trial: ctrl+c in the picker while a search ran (a re: pattern over
    a large history, minutes) blanked the terminal and kept the process until the search
    ended (a Textual worker runs in the event loop's executor, which the app's end waits
    for). Here the search blocks until released: the app must end before a watchdog
    releases it a minute later."""
    import sessiontree.catalog as catalog

    release = threading.Event()
    by_watchdog = threading.Event()
    entered = threading.Event()

    def blocked(*_a: Any, **_k: Any) -> Any:
        entered.set()
        release.wait()
        return 0, 0, iter(())

    monkeypatch.setattr(catalog, "search_stream", blocked)
    watchdog = threading.Timer(60.0, lambda: (by_watchdog.set(), release.set()))
    watchdog.start()

    async def steps(app: Any, pilot: Any) -> None:
        await until(pilot, lambda: len(listed_rows(app)) >= 1, "the listing")
        await pilot.press("z")
        await until(pilot, entered.is_set, "the search to start")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, "the app to quit")

    try:
        app = drive(picker_of(history), steps)
        assert not by_watchdog.is_set(), "the app's end waited for the search"
        assert app.return_code == 0 and app.failure is None
    finally:
        watchdog.cancel()
        release.set()


def test_the_detail_line_is_made_again_for_a_new_width(history: Path) -> None:
    """The picker's head and detail (the selected file's path, cut by its start) are
    text made for a width: after a resize they are made again, so the file's name stays
    on one line at the new width (the trial saw the old width's text wrap)."""
    from rich.cells import cell_len

    async def steps(app: Any, pilot: Any) -> None:
        await until(pilot, lambda: len(listed_rows(app)) >= 1, "the listing")
        name = Path(listed_rows(app)[0]).name
        await until(pilot, lambda: name in screen(app), "the detail line")
        await pilot.resize_terminal(40, 24)
        await until(pilot, lambda: any(name[-20:] in line and cell_len(line.rstrip()) <= 40
                                       for line in screen(app).splitlines()), "the detail made again at 40 columns")
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: any(name in line for line in screen(app).splitlines()), "and at 100")

    app = drive(picker_of(history), steps)
    assert app.failure is None


def test_scope_sort_named_and_path_keys(history: Path) -> None:
    every = {s.path for f in history.iterdir() for s in list_sessions(str(f))}

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await pilot.press("tab")  # Pi's scope toggle: all projects
        await until(pilot, lambda: set(listed_rows(app)) == every and "◉ all" in screen(app), "all projects")
        assert "/work/beta" in screen(app)  # each row's cwd in the all scope
        newest = [s.path for s in sorted((s for f in history.iterdir() for s in list_sessions(str(f))),
                                         key=lambda s: s.modified, reverse=True)]
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "sort: recent" in screen(app), "recent")
        assert listed_rows(app) == newest
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "sort: relevance" in screen(app), "relevance")
        assert listed_rows(app) == newest  # no query: the listing's order (Pi's)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: "name: named" in screen(app), "named only")
        assert [p for p in listed_rows(app)] == [s for s in newest if "Zoo" in _name(s)]
        await pilot.press("ctrl+n", "ctrl+p")
        await until(pilot, lambda: "name: all" in screen(app), "all names")
        await until(pilot, lambda: ".jsonl /work/beta 2 " in screen(app), "the paths on the rows")
        await pilot.press("ctrl+s", "tab")
        await until(pilot, lambda: "sort: threaded" in screen(app) and "◉ current folder" in screen(app), "back")
        await pilot.press("escape")  # nothing open: quits

    app = drive(picker_of(history), steps, size=(160, 30))
    assert app.return_code == 0


def _name(path: str) -> str:
    return next((s.name or "" for s in list_sessions(os.path.dirname(path)) if s.path == path), "")


def test_a_bad_query_and_no_hits_are_said(history: Path) -> None:
    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await pilot.press(*"re:(")
        await until(pilot, lambda: "bad query" in screen(app), "the bad query")
        assert listed_rows(app) == []
        for _ in range(4):
            await pilot.press("backspace")
        await pilot.press(*"nosuchwordanywhere")
        await until(pilot, lambda: "0 of 5 sessions" in screen(app) and "0 matching entries" in screen(app),
                    "no hits")
        await pilot.press("escape")

    drive(picker_of(history), steps)


def test_the_search_finds_the_sessions_a_brute_force_scan_finds(history: Path) -> None:
    """The picker's sessions for a word are those with an entry holding it at a word
    start, found by reading every file with json (and the catalog's search agrees)."""
    every = {str(p) for p in history.rglob("*.jsonl")}

    def brute(word: str) -> set[str]:
        import re

        rx = re.compile(r"(?<![^\W_])" + re.escape(word), re.IGNORECASE)
        out = set()
        for p in every:
            for line in Path(p).read_text(encoding="utf-8").splitlines():
                e = json.loads(line)
                texts = [e.get("name", "")] if e["type"] == "session_info" else []
                m = e.get("message") or {}
                c = m.get("content")
                texts += [c] if isinstance(c, str) else [b.get("text", "") for b in c or []]
                if any(rx.search(t or "") for t in texts):
                    out.add(p)
        return out

    for word in ("parser", "fork", "animals", "zoo", "task"):
        want = brute(word)
        assert {h.path for h in search(word, [str(f) for f in sorted(history.iterdir())], limit=None).hits} == want

        async def steps(app: Any, pilot: Any, word: str = word, want: set[str] = want) -> None:
            await ready(app, pilot, 5)
            await pilot.press("tab")
            await until(pilot, lambda: len(listed_rows(app)) == len(every), "all")
            await pilot.press(*word)
            picker = app.get_screen("picker")
            await until(pilot, lambda: picker.found is not None and picker.found.done
                        and set(listed_rows(app)) == want, f"the sessions of {word!r}")
            await pilot.press("escape")

        drive(picker_of(history), steps)


def test_rows_show_as_the_listing_arrives(tmp_path: Path) -> None:
    """A history of several folders is listed a group at a time: the first rows are on
    screen before the last folder is read, and the whole listing is the listing's."""
    root = tmp_path / "sessions"
    n = 0
    for k in range(4):
        for i in range(70):
            n += 1
            write_session(root / f"--p{k}--", n, first=f"task {n}", reply="ok", minutes=n, cwd=f"/p{k}")
    seen: list[int] = []
    from sessiontree.browse._picker import PickerScreen

    arrived = PickerScreen._arrived

    def spy(self: Any, scope: int, sessions: list[Any], *a: Any) -> None:
        seen.append(len(sessions))
        arrived(self, scope, sessions, *a)

    folders = tuple(str(p) for p in sorted(root.iterdir()))
    PickerScreen._arrived = spy  # type: ignore[method-assign]
    try:
        async def steps(app: Any, pilot: Any) -> None:
            await until(pilot, lambda: len(listed_rows(app)) == n and "listed in" in screen(app), "the listing")
            picker = app.get_screen("picker")
            assert picker.timings["first_rows"] <= picker.timings["listed"]
            await pilot.press("escape")

        drive(Picker((Scope("all", str(root), folders, projects=True),)), steps)
    finally:
        PickerScreen._arrived = arrived  # type: ignore[method-assign]
    assert seen[0] < n and seen[-1] == n and seen == sorted(seen), seen
    assert [s.path for s in list_sessions(folders[0])][:1]  # the folders list alone too


def test_a_session_gone_before_it_is_opened_is_said_in_the_picker(history: Path) -> None:
    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        first = listed_rows(app)[0]
        os.unlink(first)
        await pilot.press("enter")
        await until(pilot, lambda: "cannot open" in screen(app) and "Resume session" in screen(app),
                    "the failure said in the picker")
        assert app.failure is None and app.sm is None
        await pilot.press("escape")

    app = drive(picker_of(history), steps)
    assert app.return_code == 0


def test_picker_status_is_one_line_cut_with_an_ellipsis(history: Path) -> None:
    """A status line longer than the terminal (the files that are no sessions, at 80
    columns) ends in "…", never mid-word (new-user trial, issue 26)."""
    (sorted(history.iterdir())[0] / "not-a-session.jsonl").write_text("garbage\n")

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await until(pilot, lambda: "not a session" in screen(app), "the status")
        line = next(x for x in screen(app).splitlines() if "not a session" in x)
        assert "1 file is not a session" in line and line.rstrip().endswith("…"), line
        await pilot.press("escape")

    drive(picker_of(history), steps, size=(80, 24))


def test_picker_key_hints_fit_an_80_by_24_terminal(history: Path) -> None:
    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await until(pilot, lambda: "esc quit" in screen(app).splitlines()[-1], "the footer")
        lines = screen(app).splitlines()
        assert len(lines) == 24
        for hint in ("open", "tab scope", "sort", "named", "path", "esc quit"):
            assert hint in lines[-1], lines[-1]
        await pilot.press("enter")
        await until(pilot, lambda: "← leaf" in screen(app) and "q quit" in screen(app).splitlines()[-1], "the tree")
        footer = screen(app).splitlines()[-1]
        assert "? keys" in footer and "q quit" in footer and "esc back" in footer, footer
        assert all(k in footer for k in ("⏎ fold", "/ search", "c context", "f fork")), footer  # whole
        await pilot.press("q")

    drive(picker_of(history), steps, size=(80, 24))


# ---------------------------------------------------------------------------- the command


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "COLUMNS", "LINES"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"), PI_CODING_AGENT_DIR=str(home / "pi"),
               SESSIONTREE_CATALOG=str(tmp_path / "cache" / "catalog.sqlite3"), TERM="xterm-256color")
    return env


def test_command_line_errors(history: Path, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sessiontree", "browse", *args], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, env=_env(tmp_path))

    p = run(str(history), "--select", "abc")
    assert p.returncode == 2 and "--select needs one session file" in p.stderr
    p = run(str(history / "nope"))
    assert p.returncode == 1 and "no such file" in p.stderr and "Traceback" not in p.stderr
    p = run(str(history))  # a folder: the picker, which needs a terminal
    assert p.returncode == 2 and "needs a terminal" in p.stderr
    p = run("--cwd", str(tmp_path), str(history))
    assert p.returncode == 2 and "--cwd" in p.stderr


def test_the_command_line_s_scopes_become_the_picker_s(history: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """No PATH: the current directory's folder in Pi's store, then (tab) the whole store;
    --all: the other way round; DIR: that folder and its subfolders alone."""
    from sessiontree.cli import build_parser
    from sessiontree.cli._common import Io
    from sessiontree.cli._scope import resolve
    from sessiontree.cli.browse import _picker

    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "sessions").symlink_to(history)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    work = tmp_path / "work" / "alpha"
    work.mkdir(parents=True)

    def scopes(*argv: str) -> list[tuple[str, tuple[str, ...], bool]]:
        args = build_parser().parse_args(["browse", *argv])
        picker = _picker(args, Io(), resolve(args))
        return [(s.label, s.sources, s.projects) for s in picker.scopes[picker.start:] + picker.scopes[:picker.start]]

    def order(*argv: str) -> list[str]:  # the header's order, whichever scope is shown first
        args = build_parser().parse_args(["browse", *argv])
        return [s.label for s in _picker(args, Io(), resolve(args)).scopes]

    store = str(agent / "sessions")
    folders = tuple(os.path.join(store, d) for d in sorted(os.listdir(history)))
    monkeypatch.chdir(work)
    mine = scopes()
    assert [m[0] for m in mine] == ["current folder", "all"] and mine[1] == ("all", folders, True)
    assert mine[0][1] == () and not mine[0][2]  # Pi has no folder for this cwd yet: no session
    assert [m[0] for m in scopes("--all")] == ["all", "current folder"]  # --all starts on all
    assert order("--all") == order() == ["current folder", "all"]  # one order in the header (Pi's)
    other = scopes("--cwd", str(work))
    assert [m[0] for m in other] == ["current folder", "all"]
    there = scopes(str(history))
    assert len(there) == 1 and there[0][1] == (str(history), *(str(f) for f in sorted(history.iterdir())))


def test_an_empty_scope_says_where_it_looked(tmp_path: Path) -> None:
    async def steps(app: Any, pilot: Any) -> None:
        await until(pilot, lambda: "no sessions (tab: all) in " in screen(app), "the empty listing")
        await pilot.press("tab")
        await until(pilot, lambda: "2 sessions" in screen(app), "the other scope")
        await pilot.press("escape")

    root = tmp_path / "s"
    write_session(root / "--a--", 1, first="one", reply="ok", minutes=1)
    write_session(root / "--a--", 2, first="two", reply="ok", minutes=2)
    empty = tmp_path / "empty"
    empty.mkdir()
    drive(Picker((Scope("current folder", str(empty), (str(empty),)),
                  Scope("all", str(root), (str(root / "--a--"),), projects=True))), steps)


class Terminal:
    """A real process on a pseudo-terminal of ``cols`` × ``rows``, its output fed to a
    VT100 emulator (pyte) by a reader thread."""

    def __init__(self, argv: list[str], env: dict[str, str], cols: int = 80, rows: int = 24) -> None:
        import fcntl
        import pty
        import struct
        import termios

        import pyte

        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                                     close_fds=True)
        os.close(slave)
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.stream.feed(data)

    def text(self) -> str:
        with self.lock:
            return "\n".join(self.screen.display)

    def wait(self, test: Any, what: str, timeout: float = 90.0) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.text()
            if test(text):
                return text
            if self.proc.poll() is not None:
                time.sleep(0.2)
                text = self.text()
                if test(text):
                    return text
                raise AssertionError(f"the process ended ({self.proc.returncode}) before {what}:\n{text}")
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; the screen:\n{text}")

    def keys(self, data: str) -> None:
        os.write(self.master, data.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        os.close(self.master)


def test_the_picker_in_a_real_terminal(history: Path, tmp_path: Path) -> None:
    """`sessiontree browse DIR` on an 80×24 pseudo-terminal: the picker lists the folder's
    sessions with its key hints, a typed search narrows it to the one session holding
    the word, enter shows that session's tree, escape goes back to the picker, q quits."""
    pytest.importorskip("pyte", reason="pyte is not installed: pip install pyte")
    alpha = sorted(history.iterdir())[0]
    term = Terminal([sys.executable, "-m", "sessiontree", "browse", str(alpha)], _env(tmp_path))
    try:
        text = term.wait(lambda t: "Resume session" in t and "5 sessions" in t, "the picker")
        rows = text.splitlines()
        assert len(rows) == 24 and "Zoo inventory" in text
        assert "esc quit" in rows[-1] and "tab scope" in rows[-1], rows[-1]
        term.keys("zebra")
        text = term.wait(lambda t: "1 of 5 sessions" in t and "searching" not in t and "zebra crossing" in t,
                         "the search's one session")
        assert "Refactor the parser" not in text
        term.keys("\r")
        text = term.wait(lambda t: "← leaf" in t, "the session's tree")
        assert "Zoo inventory" in text and "esc back" in text.splitlines()[-1]
        term.keys("\x1b")
        # A session is open: escape goes back to it, and the footer says so.
        text = term.wait(lambda t: "Resume session" in t and "1 of 5 sessions" in t
                         and "esc back" in t.splitlines()[-1], "the picker again")
        assert "zebra" in text and "esc quit" not in text
        term.keys("\x1b")  # back to the session
        term.wait(lambda t: "← leaf" in t, "the session again")
        term.keys("q")
        assert term.proc.wait(timeout=60) == 0
    finally:
        term.close()


def test_a_catalog_the_picker_rebuilt_is_said_after_the_app(history: Path, tmp_path: Path) -> None:
    """Adversary 59b: the picker's listing met a damaged catalog (pages found damaged as
    they are read) and rebuilt it without a word: the note went to stderr while the app
    held the screen, where Textual keeps it. It is said once the app has left it."""
    pytest.importorskip("pyte", reason="pyte is not installed: pip install pyte")
    alpha = sorted(history.iterdir())[0]
    env = _env(tmp_path)
    catalog = env["SESSIONTREE_CATALOG"]
    assert subprocess.run([sys.executable, "-m", "sessiontree", "index", str(alpha)], env=env, timeout=120,
                          capture_output=True).returncode == 0
    damage_pages(catalog)
    made = os.stat(catalog).st_ino
    term = Terminal([sys.executable, "-m", "sessiontree", "browse", str(alpha)], env, cols=200)
    try:
        term.wait(lambda t: "Resume session" in t and "5 sessions" in t, "the picker")
        term.keys("\x1b")
        assert term.proc.wait(timeout=60) == 0
        text = term.wait(lambda t: "note: the catalog" in t, "the note")
    finally:
        term.close()
    assert os.stat(catalog).st_ino != made  # rebuilt
    assert text.count("note: the catalog") == 1 and "was damaged" in text, text


def test_without_the_catalog_the_picker_answers_the_same(history: Path) -> None:
    """``--no-cache``: the listing and the search read the files; the same rows."""
    with_catalog = picker_of(history)
    plain = Picker(with_catalog.scopes, no_cache=True)
    got: dict[bool, list[list[str]]] = {}
    for p in (with_catalog, plain):
        async def steps(app: Any, pilot: Any, p: Picker = p) -> None:
            seen = got.setdefault(p.no_cache, [])
            await ready(app, pilot, 5)
            seen.append(listed_rows(app))
            await pilot.press(*"parser")
            picker = app.get_screen("picker")
            await until(pilot, lambda: picker.found is not None and picker.found.done and len(listed_rows(app)) == 4,
                        "the search")
            seen.append(listed_rows(app))
            await pilot.press("escape")

        drive(p, steps)
    assert got[True] == got[False] and len(got[True][1]) == 4


# ---------------------------------------------------------------------------- what a first user met


def _head(app: Any) -> str:
    return str(app.get_screen("picker").query_one("#picker-head").render())


def _status(app: Any) -> str:
    return str(app.get_screen("picker").query_one("#picker-status").render())


def test_the_footer_says_what_escape_does_now(history: Path) -> None:
    """Before a session is opened escape quits; after, it goes back to that session
    (``browse --help``): the footer names the one that holds."""
    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await until(pilot, lambda: "esc quit" in screen(app).splitlines()[-1], "the footer")
        assert "esc back" not in screen(app)
        await open_selected(app, pilot)
        await pilot.press("escape")
        await until(pilot, lambda: "Resume session" in screen(app), "the picker again")
        await until(pilot, lambda: "esc back" in screen(app).splitlines()[-1], "the footer's back")
        assert "esc quit" not in screen(app)
        await pilot.press("escape")  # what it says: back to the session
        await until(pilot, lambda: "← leaf" in screen(app), "the session again")
        await pilot.press("q")

    app = drive(picker_of(history), steps, size=(80, 24))
    assert app.return_code == 0


def test_the_header_names_the_order_a_search_shows(history: Path) -> None:
    """Pi's ``filterAndSortSessions`` ranks a query's sessions by relevance when the sort
    is threaded (it only threads the whole listing): the rows lose their threads, and
    the header says relevance while the query stands."""
    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        assert "sort: threaded" in _head(app)
        await pilot.press(*"parser")
        picker = app.get_screen("picker")
        await until(pilot, lambda: picker.found is not None and picker.found.done and len(listed_rows(app)) == 4,
                    "the search")
        assert "sort: relevance (with a query)" in _head(app) and "threaded" not in _head(app)
        assert [r.prefix for r in picker.query_one("#picker-list").rows] == [""] * 4  # no threads
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "sort: recent" in _head(app), "recent")
        await pilot.press("ctrl+s", "ctrl+s")
        await until(pilot, lambda: "sort: relevance (with a query)" in _head(app), "threaded again")
        for _ in "parser":
            await pilot.press("backspace")
        await until(pilot, lambda: "sort: threaded" in _head(app) and len(listed_rows(app)) == 5, "no query")
        await pilot.press("escape")

    drive(picker_of(history), steps, size=(160, 30))


def test_the_entry_count_follows_the_name_filter_and_counts_in_the_singular(history: Path) -> None:
    """"N of M sessions · K matching entries": K counts the matching entries of the
    sessions shown, so ctrl+n (named only) narrows it too; one is said in the singular.
    The counts are held against the catalog's search, hit by hit."""
    folders = [str(f) for f in sorted(history.iterdir())]
    hits = search("animals", folders, limit=None).hits
    named = {s.path for f in folders for s in list_sessions(f) if s.name}
    assert len(hits) == 7 and len({h.path for h in hits}) == 7
    assert len([h for h in hits if h.path in named]) == 1

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await pilot.press("tab")
        await until(pilot, lambda: len(listed_rows(app)) == 11 and "11 sessions" in _status(app), "all")
        await pilot.press(*"animals")
        picker = app.get_screen("picker")
        await until(pilot, lambda: picker.found is not None and picker.found.done
                    and "7 of 11 sessions" in _status(app) and "· 7 matching entries" in _status(app), "the search")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: "1 of 11 sessions" in _status(app) and _status(app).endswith("· 1 matching entry"),
                    "named only")
        assert "entries" not in _status(app)
        await pilot.press("escape")

    drive(picker_of(history), steps, size=(160, 30))

    async def one(app: Any, pilot: Any) -> None:
        await until(pilot, lambda: "1 session" in _status(app) and "listed in" in _status(app), "one session")
        assert "1 sessions" not in _status(app)
        await pilot.press("escape")

    lone = history.parent / "lone"
    write_session(lone, 99, first="alone", reply="ok", minutes=1)
    drive(Picker((Scope(str(lone), str(lone), (str(lone),)),)), one)


def test_the_scope_toggle_keeps_one_order(history: Path) -> None:
    """Started on all (``--all``) or on the current folder, the toggle reads
    ``current folder | all`` (Pi's order), the shown scope marked."""
    base = picker_of(history)

    async def steps(app: Any, pilot: Any) -> None:
        await until(pilot, lambda: len(listed_rows(app)) == 11 and "○ current folder | ◉ all" in _head(app), "all")
        await pilot.press("tab")
        await until(pilot, lambda: "◉ current folder | ○ all" in _head(app), "the current folder")
        await pilot.press("tab")
        await until(pilot, lambda: "○ current folder | ◉ all" in _head(app), "all again")
        await pilot.press("escape")

    drive(Picker(base.scopes, start=1), steps, size=(160, 30))


def test_a_fork_s_times_read_forwards(history: Path) -> None:
    """A fork's messages are copied from its parent, so its last message (Pi's
    ``modified``) is older than its header (``created``, when it was forked): the
    detail line names each time, and never says "modified" before "created"."""
    alpha = sorted(history.iterdir())[0]
    parent = next(s.path for s in list_sessions(str(alpha)) if s.name)
    fork = write_session(alpha, 77, first="Count the animals", reply="Forked copy.", minutes=-30,
                         cwd="/work/alpha", parent=Path(parent))
    lines = fork.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["timestamp"] = _iso(BASE + timedelta(days=3))  # forked three days after its last message
    fork.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    info = next(s for s in list_sessions(str(alpha)) if s.path == str(fork))
    assert info.modified < info.created

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 6)
        picker = app.get_screen("picker")
        at = listed_rows(app).index(str(fork))
        await pilot.press(*["down"] * at)
        await until(pilot, lambda: picker.query_one("#picker-list").cursor == at, "the fork's row")
        detail = str(picker.query_one("#picker-detail").render())
        line = detail.splitlines()[1]
        def shown(dt: datetime) -> str:  # local, with its offset, UTC for none (CONTRACT §10 "Times")
            local = dt.astimezone()
            z = local.strftime("%z")
            return f"{local:%Y-%m-%d %H:%M} " + (f"{z[:3]}:{z[3:]}" if z != "+0000" else "UTC")

        assert f"last message {shown(info.modified)}" in line, line
        assert f"forked {shown(info.created)} from {os.path.basename(parent)}" in line, line
        assert "modified" not in line and "created" not in line
        await pilot.press("escape")

    drive(picker_of(history), steps, size=(200, 30))


def test_the_help_fits_80_by_24(history: Path) -> None:
    """``?`` at 80×24: no line of the help wraps (each shows whole on one screen row),
    and the box scrolls to its last line."""
    from sessiontree.browse import HELP
    from sessiontree.view import plain_doc

    want = [line.rstrip() for line in plain_doc(HELP).splitlines() if line.strip()]

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await open_selected(app, pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: "Keys (also in the footer" in screen(app), "the help")
        seen: set[str] = set()
        for _ in range(10):
            rows = screen(app).splitlines()
            assert len(rows) == 24
            seen |= {w for w in want if any(w.strip() in r for r in rows)}
            await pilot.press("pagedown")
            await pilot.pause(0.05)
        assert seen == set(want), sorted(set(want) - seen)
        await pilot.press("escape", "q")

    drive(picker_of(history), steps, size=(80, 24))


def test_the_fork_notice_shows_the_new_file_s_name(history: Path) -> None:
    """At 80 columns the status line keeps the fork's file name whole (the facts give
    way), not a path cut after its folder."""
    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await open_selected(app, pilot)
        await pilot.press("f")
        await until(pilot, lambda: "Fork:" in screen(app), "the question")
        await pilot.press("y")
        await until(pilot, lambda: app.forked is not None, "the fork")
        name = os.path.basename(app.forked or "")
        await until(pilot, lambda: name in str(app.query_one("#status").render()), "the notice")
        assert len(name) > 60 and name in screen(app).splitlines()[-2], screen(app).splitlines()[-2]
        await pilot.press("q")

    drive(picker_of(history), steps, size=(80, 24))


def test_a_bad_select_exits_1_as_context_does(history: Path, tmp_path: Path) -> None:
    """``browse FILE --select ID`` with no such entry: exit 1 and the one line
    ``context --leaf ID`` prints, before the app (no terminal needed to be told)."""
    session = next(iter(sorted(history.rglob("*.jsonl"))))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, env=_env(tmp_path))

    ctx = run("context", str(session), "--leaf", "zzzz")
    got = run("browse", str(session), "--select", "zzzz")
    assert ctx.returncode == 1 and "--leaf zzzz not found" in ctx.stderr
    # The same wording, naming the option each took the id from.
    assert got.returncode == 1 and got.stderr == ctx.stderr.replace("--leaf", "--select") and "Traceback" not in got.stderr
    # A good id goes on to the app (which here is told it has no terminal).
    first = json.loads(session.read_text(encoding="utf-8").splitlines()[1])["id"]
    good = run("browse", str(session), "--select", first)
    assert good.returncode == 2 and "needs a terminal" in good.stderr, good.stderr


def test_the_header_fits_80_columns(history: Path) -> None:
    """At 80 columns the picker's header is whole: the scope is named once, in the
    radios (a trial saw "Resume session (current f… ◉ current folder | ○ all")."""

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        head = next(r for r in screen(app).splitlines() if "Resume session" in r)
        assert "…" not in head and "◉ current folder | ○ all" in head and "sort: threaded" in head, head

    drive(picker_of(history), steps, size=(80, 24))


def test_a_search_builds_the_index_behind_it_when_a_person_is_there(history: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A query that read files the catalog's search index does not hold asks for the
    build behind it (``catalog.index_later``, as ``sessiontree search`` does at a
    terminal: CONTRACT §7) with the scope searched; a headless app (nobody waiting for
    the next query) asks for nothing."""
    import sessiontree.catalog as catalog
    from textual.app import App

    if not native_available():
        pytest.skip("the search index is built natively only")
    calls: list[tuple[list[str], Any, int | None]] = []
    monkeypatch.setattr(catalog, "index_later", lambda sources, catalog=None, unindexed=None:
                        calls.append((list(sources), catalog, unindexed)))
    picker = picker_of(history)

    async def steps(app: Any, pilot: Any) -> None:
        await ready(app, pilot, 5)
        await pilot.press(*"zebra")
        await until(pilot, lambda: "1 of 5 sessions" in screen(app), "the hit")
        await pilot.press("escape")

    drive(picker, steps)
    assert calls == []  # headless
    monkeypatch.setattr(App, "is_headless", property(lambda self: False))
    drive(picker_of(history), steps)
    assert calls and calls[0][0] == list(picker.scopes[0].sources)  # the current folder, where it starts
    assert calls[0][2] == 5  # what it read without the index: a build that found nothing pauses only that
