"""``sessiontree browse``: Textual's headless pilot (keys pressed, the screen's text
asserted) and a real terminal run under tmux.

The "done when" of the issue is walked as a person would: open a session, find an
abandoned branch, read it, see its context, fork it, using the keys the help lists.
Skipped with the reason when Textual (``pip install textual``) or tmux is
not installed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from _shared import open_quiet
from sessiontree import InvalidSessionError, SessionManager
from sessiontree.generate import generate_session

pytest.importorskip("textual", reason="Textual is not installed: pip install textual")

from sessiontree.browse import BrowseApp  # noqa: E402

SIZE = (160, 45)


def screen(app: Any) -> str:
    """The text on the app's screen now, line by line (what the terminal shows)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def _ready(app: Any, pilot: Any) -> None:
    for _ in range(400):
        await pilot.pause(0.02)
        if app.st is not None or app.failure is not None:
            break
    await pilot.pause()


async def _until(pilot: Any, test: Any, what: str) -> None:
    for _ in range(500):
        if test():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen(pilot.app)}")


def run_app(path: Path, keys_and_checks: Any, backend: str = "auto", **kw: Any) -> BrowseApp:
    """Run the app headless on ``path`` and drive it with ``await keys_and_checks(app, pilot)``."""
    app = BrowseApp(str(path), backend=backend, **kw)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await _ready(app, pilot)
            assert app.failure is None, app.failure
            await keys_and_checks(app, pilot)

    asyncio.run(main())
    return app


def detail(app: Any) -> str:
    return str(app.query_one("#detail-text").render())


def selected(app: Any) -> str | None:
    row = app.query_one("#tree").current_row()
    return app.st.id(row.entry) if row is not None and row.entry >= 0 else None


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """A copy of a generated session with branches, compactions and labels (writable)."""
    path = tmp_path / "s.jsonl"
    generate_session(path, size_bytes=1_500_000, seed=7)
    return path


def test_walk_to_an_abandoned_branch_read_it_see_its_context_and_fork_it(session: Path, backend: str) -> None:
    with open_quiet(session, backend) as sm:
        leaf = sm.leaf_id
        on_path = {e["id"] for e in sm.get_branch()}
        tips = [e["id"] for e in sm.get_entries() if not sm.get_children(e["id"]) and e["id"] != leaf]
        n_entries = len(sm)
    assert tips, "the generated session has abandoned branches"
    seen: dict[str, Any] = {}

    async def walk(app: Any, pilot: Any) -> None:
        await _until(pilot, lambda: "← leaf" in screen(app), "the first screen")
        text = screen(app)
        assert f"{n_entries:,} entries" in text and "← leaf" in text and "┬" in text
        assert selected(app) == leaf  # starts on the current leaf
        assert "the session's current leaf" in detail(app)
        # `t`: the next tip of an abandoned branch (from the leaf, wrapping back: `T`).
        await pilot.press("T")
        tip = selected(app)
        assert tip in tips and tip not in on_path
        assert "tip of an abandoned branch" in detail(app)
        assert "tip" in screen(app)
        seen["tip"] = tip
        # Read it: the detail pane shows the entry; `p` walks up the branch.
        with open_quiet(session, backend) as sm:
            parent = sm.get_entry(tip)["parentId"]
        await pilot.press("p")
        assert selected(app) == parent
        await pilot.press("T", "T")
        await pilot.press("t")
        # `c`: the context the model would get at the tip.
        tip = selected(app)
        seen["tip"] = tip
        await pilot.press("c")
        await _until(pilot, lambda: "The context the model gets at" in screen(app), "the context screen")
        with open_quiet(session, backend) as sm:
            n_messages = len(sm.build_session_context(leaf_id=tip).messages)
        assert f"{n_messages:,} messages" in screen(app)
        assert "[1] " in screen(app)
        await pilot.press("l")  # convert_to_llm
        await _until(pilot, lambda: "after convert_to_llm" in screen(app), "convert_to_llm")
        await pilot.press("escape")
        await _until(pilot, lambda: "The context the model gets" not in screen(app), "back to the tree")
        # `f`: fork it, after saying yes.
        await pilot.press("f")
        await _until(pilot, lambda: "Fork: write a new session file" in screen(app), "the fork question")
        await pilot.press("n")
        await _until(pilot, lambda: "fork cancelled" in screen(app), "cancel")
        assert app.forked is None
        await pilot.press("f")
        await _until(pilot, lambda: "Fork: write a new session file" in screen(app), "the fork question")
        await pilot.press("y")
        await _until(pilot, lambda: app.forked is not None, "the fork")

    app = run_app(session, walk, backend)
    new = Path(app.forked or "")
    assert new.exists() and new.parent == session.parent
    with open_quiet(new, backend) as forked, open_quiet(session, backend) as src:
        assert [e["id"] for e in forked.get_branch() if e["type"] != "label"] == \
            [e["id"] for e in src.get_branch(seen["tip"]) if e["type"] != "label"]
        assert forked.get_header()["parentSession"] == str(session)


def test_branch_points_parent_leaf_and_folding(session: Path, backend: str) -> None:
    async def keys(app: Any, pilot: Any) -> None:
        st = app.st
        await pilot.press("home")
        first = selected(app)
        assert first == st.id(st.shape.roots[0]) or first is None
        # b: next branch point, each one has >= 2 children, in drawing order.
        order = app.drawing.order()
        points = [n for n in order if len(st.children(n)) >= 2]
        for n in points[:3]:
            await pilot.press("b")
            assert selected(app) == st.id(n)
            assert "branch point" in detail(app)
        await pilot.press("B")
        assert selected(app) == st.id(points[1])
        # l: back to the leaf.
        await pilot.press("l")
        assert selected(app) == st.id(st.session_leaf)
        # Folded runs: enter on a ┆ row unfolds it; the rows grow by what it hid.
        tree = app.query_one("#tree")
        fold = next(i for i, r in enumerate(tree.rows) if r.kind == 1)
        hidden = len(tree.rows[fold].hidden)
        before = len(tree.rows)
        tree.move_to(fold)
        await pilot.pause()
        assert "folded" in detail(app)
        await pilot.press("enter")
        assert len(tree.rows) == before - 1 + hidden
        # Left on a row of another branch folds that branch; enter opens it again.
        other = next(i for i, r in enumerate(tree.rows) if r.kind == 0 and r.head >= 0 and r.entry != r.head)
        tree.move_to(other)
        await pilot.pause()
        await pilot.press("left")
        row = tree.current_row()
        assert row.collapsed and "more entr" in screen(app)
        await pilot.press("enter")
        assert not tree.current_row().collapsed

    run_app(session, keys, backend)


def test_search_label_and_help(session: Path, backend: str) -> None:
    with open_quiet(session, backend) as sm:
        target = next(e for e in sm.get_entries() if e["type"] == "message" and e["message"]["role"] == "user"
                      and isinstance(e["message"]["content"], str) and len(e["message"]["content"]) > 30)
        words = target["message"]["content"][:24]
        before = len(sm)
    results: dict[str, Any] = {}

    async def keys(app: Any, pilot: Any) -> None:
        await pilot.press("slash")
        await pilot.press(*list(words))
        await pilot.press("enter")
        await _until(pilot, lambda: "match for" in screen(app) or "no entry contains" in screen(app), "search")
        hit = selected(app)
        entry = app.sm.get_entry(hit)
        assert words.casefold() in str(entry).casefold()
        await pilot.press("n")
        await _until(pilot, lambda: app.searching is False, "next match")
        # L: label the selected entry; the row shows it and the file holds a label entry.
        await pilot.press("L")
        await _until(pilot, lambda: "Label of" in screen(app), "the label question")
        await pilot.press(*list("found it"), "enter")
        await _until(pilot, lambda: "label of" in screen(app), "the label written")
        results["labelled"] = selected(app)
        assert "[found it]" in screen(app)
        assert f"{before + 1:,} entries" in str(app.query_one("#status").render()), "the status counts the label"
        await pilot.press("L")
        await _until(pilot, lambda: "Label of" in screen(app), "the label question")
        await pilot.press("escape")
        await pilot.press("question_mark")
        await _until(pilot, lambda: "next / previous branch point" in screen(app), "the help")
        assert "sessiontree browse:" in str(app.screen.query_one(Static).render())  # not ``sessiontree browse``
        await pilot.press("escape")

    run_app(session, keys, backend)
    with open_quiet(session, backend) as sm:
        assert len(sm) == before + 1
        assert sm.get_label(results["labelled"]) == "found it"


def test_select_and_errors(tmp_path: Path, corpus_dir: Path) -> None:
    src = corpus_dir / "hand-labels-names.jsonl"

    async def keys(app: Any, pilot: Any) -> None:
        assert selected(app) == "9fd008c2"
        assert "a4 on first branch" in detail(app)

    run_app(src, keys, select="9fd0")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    app = BrowseApp(str(bad))

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await _ready(app, pilot)

    asyncio.run(main())
    assert isinstance(app.failure, InvalidSessionError), app.failure


def test_browse_needs_a_terminal(corpus_dir: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "sessiontree", "browse", str(corpus_dir / "hand-labels-names.jsonl")],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "needs a terminal" in p.stderr and "Traceback" not in p.stderr
    h = subprocess.run([sys.executable, "-m", "sessiontree", "browse", "--help"], capture_output=True, text=True,
                       timeout=120)
    for key in ("next / previous branch point", "the context the model gets", "fork", "search", "label"):
        assert key in h.stdout


# ------------------------------------------------------------------ a real terminal


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install -y tmux)")
def test_real_terminal_under_tmux(session: Path, tmp_path: Path) -> None:
    """The command in a real terminal (tmux): it draws, answers keys, quits cleanly."""
    name = f"st-browse-{os.getpid()}"
    sock = str(tmp_path / "tmux.sock")
    cmd = f"{sys.executable} -m sessiontree browse {session}; echo EXIT=$? ; sleep 30"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    env["TERM"] = "xterm-256color"

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True, env=env,
                              timeout=30).stdout

    def wait(needle: str, timeout: float = 60) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = tmux("capture-pane", "-p", "-t", name)
            if needle in text:
                return text
            time.sleep(0.2)
        raise AssertionError(f"{needle!r} not on the screen:\n{text}")

    subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-s", name, "-x", "150", "-y", "40", cmd],
                   check=True, env=env, timeout=30)
    try:
        text = wait("← leaf")
        assert "? lists the keys" in wait("? lists the keys")
        with open_quiet(session, "native") as sm:
            leaf = sm.leaf_id
            assert f"{len(sm):,} entries" in text
        assert leaf[:8] in text
        tmux("send-keys", "-t", name, "T")
        wait("tip of an abandoned branch")
        tmux("send-keys", "-t", name, "c")
        wait("The context the model gets at")
        tmux("send-keys", "-t", name, "Escape")
        wait("tip of an abandoned branch")
        tmux("send-keys", "-t", name, "q")
        assert "EXIT=0" in wait("EXIT=")
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True, timeout=30)


def test_textual_missing_is_one_line(tmp_path: Path, corpus_dir: Path) -> None:
    """Without Textual, `browse` says how to install it (Textual hidden from a child process)."""
    blocker = tmp_path / "textual"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('No module named textual (hidden by the test)')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "sessiontree", "browse", str(corpus_dir / "hand-labels-names.jsonl")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "pip install textual" in p.stderr
    # The rest of the command line works without it.
    e = subprocess.run([sys.executable, "-m", "sessiontree", "export", str(corpus_dir / "hand-labels-names.jsonl"),
                        "--format", "markdown"], capture_output=True, text=True, timeout=120, env=env)
    assert e.returncode == 0 and e.stdout.startswith("# ")


def test_session_manager_untouched_by_browsing(session: Path) -> None:
    before = session.read_bytes()

    async def keys(app: Any, pilot: Any) -> None:
        await pilot.press("b", "b", "t", "p", "l", "down", "up", "enter", "left")

    run_app(session, keys)
    assert session.read_bytes() == before
    assert SessionManager.open(str(session)).leaf_id is not None


def test_reload_reads_what_another_process_appended(session: Path) -> None:
    code = ("import sys; from sessiontree import SessionManager\n"
            "with SessionManager.open(sys.argv[1]) as sm:\n"
            "    sm.append_message({'role': 'user', 'content': 'written by another process', 'timestamp': 5})\n")

    async def keys(app: Any, pilot: Any) -> None:
        before = len(app.st)
        await pilot.press("r")
        await _until(pilot, lambda: "no new entries" in screen(app), "nothing new")
        subprocess.run([sys.executable, "-c", code, str(session)], check=True, timeout=120)
        await pilot.press("r")
        await _until(pilot, lambda: "1 new entry" in screen(app), "the reload")
        assert len(app.st) == before + 1
        await pilot.press("/", *list("another process"), "enter")
        await _until(pilot, lambda: "match for" in screen(app), "the new entry found")
        assert "written by another process" in detail(app)

    run_app(session, keys)


def test_damaged_and_odd_sessions_browse(corpus_dir: Path, cases_dir: Path) -> None:
    """Cycles, orphans, several roots, unknown types, torn lines: every key still works."""
    files = sorted(cases_dir.glob("*.jsonl")) + [corpus_dir / "edge-orphans.jsonl",
                                                 corpus_dir / "edge-unknown-types-roles.jsonl"]
    tried = 0
    for path in files:
        try:
            open_quiet(path, "native").close()
        except Exception:
            continue  # no header: `browse` reports it (test_select_and_errors)
        tried += 1

        async def keys(app: Any, pilot: Any) -> None:
            await pilot.press("b", "t", "T", "p", "l", "enter", "left", "right", "end", "home", "c")
            if len(app.st) == 0:
                assert "0 entries" in screen(app) and "no entry on this row" in screen(app)
                return
            if "no entry on this row" in screen(app):  # the note row above several roots
                await pilot.press("down", "c")
            await _until(pilot, lambda: "The context the model gets" in screen(app), "the context")
            await pilot.press("escape")
            await pilot.press("slash", "x", "enter")
            await _until(pilot, lambda: not app.searching, "the search")
            assert app.failure is None

        run_app(path, keys)
    assert tried >= 8


def test_fork_question_wraps_in_a_small_terminal(session: Path) -> None:
    """At 120×35 the fork question (with its long destination folder) wraps inside its
    box instead of being cut."""
    from textual.widgets import Label

    app = BrowseApp(str(session))

    async def main() -> None:
        async with app.run_test(size=(120, 35)) as pilot:
            await _ready(app, pilot)
            await pilot.press("f")
            await _until(pilot, lambda: "Fork: write a new session file" in screen(app), "the fork question")
            question = app.screen.query(Label).first()
            text = str(question.render())
            assert "This session stays as it is." in text
            box = question.parent
            assert question.region.right <= box.content_region.right, (question.region, box.content_region)
            assert question.region.height >= 2, question.region  # wrapped, all of it shown
            await pilot.press("n")

    asyncio.run(main())


def test_key_hints_fit_an_80_by_24_terminal(session: Path) -> None:
    """At 80×24 (a terminal's default) the footer's last line shows the help and quit keys
    (issue 26: the focused tree's keys came first and pushed the app's off the edge)."""
    app = BrowseApp(str(session))

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await _ready(app, pilot)
            await _until(pilot, lambda: "← leaf" in screen(app), "the first screen")
            lines = screen(app).splitlines()
            assert len(lines) == 24
            footer = lines[-1]
            assert "? keys" in footer and "q quit" in footer, footer
            # and every key it shows, whole (the last ones were cut: "/ searc")
            assert all(k in footer for k in ("⏎ fold", "/ search", "c context", "f fork")), footer
            await pilot.press("question_mark")  # the key the footer names opens the help
            await _until(pilot, lambda: "Keys (also in the footer" in screen(app), "the help")
            await pilot.press("escape")
            await pilot.press("q")
        assert app.return_code == 0

    asyncio.run(main())


# ------------------------------------------------ issue 24: the file changes under the app


def status(app: Any) -> str:
    return str(app.query_one("#status").render())


def _change(path: Path, how: str) -> None:
    if how == "truncated":
        os.truncate(path, 20_000)
    elif how == "removed":
        path.unlink()
    else:
        other = path.with_name("other.jsonl")
        generate_session(other, size_bytes=60_000, seed=3)
        os.replace(other, path)


@pytest.mark.parametrize("how", ["truncated", "replaced", "removed"])
def test_a_file_changed_while_browsed_is_said_with_an_offer_to_reopen(session: Path, backend: str, how: str) -> None:
    """Before: moving to an entry not shown before raised StaleSessionError out of a
    handler; Textual printed its traceback and the command exited 0."""

    async def keys(app: Any, pilot: Any) -> None:
        before = len(app.st)
        _change(session, how)
        await pilot.press("home", *["down"] * 40, "c")  # rows, details and a context not read yet
        await _until(pilot, lambda: "changed under the browser" in screen(app), "the offer to reopen")
        assert f"was {how}" in screen(app) or (how == "removed" and "is gone" in screen(app))
        await pilot.press("y")
        if how == "removed":
            await _until(pilot, lambda: "cannot reopen it" in screen(app), "the reopen's failure")
            await pilot.press("/", *"hunt", "enter")  # a search meets an entry it cannot read: asked again
            await _until(pilot, lambda: "changed under the browser" in screen(app), "the offer, again")
            await pilot.press("n")
            await _until(pilot, lambda: "what was read stays on screen" in status(app), "the answer no")
            await pilot.press("R")
            await _until(pilot, lambda: "cannot reopen it" in status(app) and "R tries again" in status(app),
                         "the second try")
        else:
            await _until(pilot, lambda: "reopened" in screen(app), "the reopen")
            assert len(app.st) < before and app.changed is None
            with open_quiet(session, backend) as sm:
                assert len(app.st) == len(sm) and f"{len(sm):,} entries" in screen(app)
            await pilot.press("home", *["down"] * 10, "c")
            await _until(pilot, lambda: "The context the model gets" in screen(app), "a context of the new file")
        await pilot.press("q")

    app = run_app(session, keys, backend=backend)
    assert app.failure is None and not app.return_code


def test_a_crash_exits_non_zero(corpus_dir: Path) -> None:
    """A crash inside the app (Textual prints the traceback) is exit status 1, not 0."""
    from sessiontree.cli.browse import exit_status

    class Crashing(BrowseApp):
        def action_help(self) -> None:
            raise RuntimeError("boom")

    app = Crashing(str(corpus_dir / "hand-labels-names.jsonl"))

    async def keys(pilot: Any) -> None:
        await _ready(app, pilot)
        await pilot.press("question_mark")

    app.run(headless=True, size=SIZE, auto_pilot=keys)  # as the command runs it
    assert exit_status(app) == 1


def test_a_long_label_leaves_the_tree_row_its_text(tmp_path: Path) -> None:
    """At 80×24 a labelled entry's row in the tree pane shows its own text and the label
    cut with ``…`` (issue 26: a long label pushed the text out of the row)."""
    path = tmp_path / "labels.jsonl"
    label = "这是一个非常长的标签 " * 6 + "🏷️" * 10
    with SessionManager.create("/p", str(tmp_path)) as sm:
        sm.set_session_file(str(path))
        first = sm.append_message({"role": "user", "content": "Which row shows this question?", "timestamp": 1})
        sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "That one."}], "timestamp": 2,
                           "provider": "p", "model": "m", "api": "x", "stopReason": "stop"})
        sm.append_label_change(first, label)
    app = BrowseApp(str(path))

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await _ready(app, pilot)
            await _until(pilot, lambda: "← leaf" in screen(app), "the first screen")
            row = next(line for line in screen(app).splitlines() if "[这是" in line)
            assert "Which r" in row, row  # the text keeps half the room the label would take
            assert "…]" in row, row

    asyncio.run(main())


def test_the_context_screen_continues_a_long_line_under_its_text(tmp_path: Path) -> None:
    """At 80×24 a message line longer than the context screen continues at the body's
    column, as ``sessiontree context`` prints it (it was wrapped to column 0)."""
    path = tmp_path / "long.jsonl"
    words = "请帮我修复这个问题：终端输出在八十列时溢出了 and then some english words to make it longer still " * 2
    with SessionManager.create("/p", str(tmp_path)) as sm:
        sm.set_session_file(str(path))
        sm.append_message({"role": "user", "content": words.strip(), "timestamp": 1})
        sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2,
                           "provider": "p", "model": "m", "api": "x", "stopReason": "stop"})
    app = BrowseApp(str(path))

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await _ready(app, pilot)
            await _until(pilot, lambda: "← leaf" in screen(app), "the first screen")
            await pilot.press("c")
            await _until(pilot, lambda: "[1] user" in screen(app), "the context screen")
            lines = screen(app).splitlines()
            at = next(k for k, line in enumerate(lines) if line.startswith("    请帮我"))
            assert lines[at + 1].startswith("    ") and lines[at + 1].strip(), lines[at:at + 4]
            assert lines[at + 2].startswith("    ") and lines[at + 2].strip(), lines[at:at + 4]

    asyncio.run(main())


def test_ids_that_look_alike_cut_are_shown_apart(tmp_path: Path) -> None:
    """The tree pane shows ids as ``tree`` does (``view.id_width``): time-ordered UUIDs
    whose first 8 characters are the same, and an id that is a prefix of another (a
    LangGraph checkpoint and its writes), each differ on screen (trial 59: the pane cut
    every id to 8 characters)."""
    from _shared import chain_session

    path = tmp_path / "ids.jsonl"
    chain_session(path, ["1f1f0cdd-0000-6abc", "1f1f0cdd-0001-6abc", "1f1f0cdd-0001-6abc/w1"])

    async def check(app: Any, pilot: Any) -> None:
        await _until(pilot, lambda: "← leaf" in screen(app), "the first screen")
        text = screen(app)
        for shown in ("1f1f0cdd-0000", "1f1f0cdd-0001-6abc ", "1f1f0cdd-0001-6abc/"):
            assert shown in text, (shown, text)

    run_app(path, check)


def test_keys_in_one_burst_after_slash_go_to_the_search(session: Path) -> None:
    """Trial 59: `/refactor⏎` sent in one write (a paste, a fast typist) left the search
    box empty, and its letters ran as the tree's commands (`r` reload, `f` fork, the
    `⏎` confirming the fork: a new session file). They go to the box, in order; a
    second burst replaces the last query."""
    from textual import events
    from textual.widgets import Input

    before = sorted(session.parent.iterdir())

    def burst(app: Any, text: str) -> None:
        for ch in text:
            app.post_message(events.Key("slash" if ch == "/" else ch, ch))
        app.post_message(events.Key("enter", "\r"))

    async def check(app: Any, pilot: Any) -> None:
        burst(app, "/refactor")
        await _until(pilot, lambda: app.query_text == "refactor", "the first search")
        assert app.focused is app.query_one("#tree")
        burst(app, "/parser")
        await _until(pilot, lambda: app.query_text == "parser", "the second search")
        assert app.query_one("#search", Input).value == "parser"
        await _until(pilot, lambda: "'parser'" in screen(app) and not app.searching, "the second search's end")

    run_app(session, check)
    assert sorted(session.parent.iterdir()) == before  # nothing forked


def test_keys_typed_while_the_session_opens(tmp_path: Path) -> None:
    """Trial 59b: `/fix⏎` typed before the tree was up forked the session (the open took
    the focus back from the search box, and the letters ran as the tree's commands).
    The search box keeps the focus, the search submitted meanwhile runs once the
    session is open, and no file is written."""
    from textual import events

    path = tmp_path / "big.jsonl"
    generate_session(path, size_bytes=3_000_000, seed=8)
    before = sorted(tmp_path.iterdir())
    app = BrowseApp(str(path))

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            for ch in "/refactor":
                app.post_message(events.Key("slash" if ch == "/" else ch, ch))
            app.post_message(events.Key("enter", "\r"))
            await _ready(app, pilot)
            await _until(pilot, lambda: "match for 'refactor'" in screen(app), "the search's match")
            assert app.query_text == "refactor" and app.focused is app.query_one("#tree")

    asyncio.run(main())
    assert sorted(tmp_path.iterdir()) == before  # nothing forked
