"""The HTML export in a real headless Chromium (Playwright for Python, driving Debian's
Chromium or Playwright's own).

Skipped, with the reason, when Playwright or a Chromium is not installed: ``make
browser-test`` installs both and runs these. ``SESSIONTREE_CHROMIUM`` names the browser
binary. Screenshots are kept under the test's ``tmp_path`` (the path is printed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from _shared import open_quiet
from sessiontree.view import structure_of
from sessiontree.export.html import write_html
from sessiontree.generate import generate_session
from test_export import _evil_session

playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: make browser-test")


def _chromium() -> str | None:
    for candidate in (os.environ.get("SESSIONTREE_CHROMIUM"), "/usr/lib/chromium/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


@pytest.fixture(scope="module")
def browser() -> Any:
    exe = _chromium()
    with playwright_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"]) if exe else p.chromium.launch()
        except Exception as e:  # no browser at all
            pytest.skip(f"no Chromium to run (install Debian's chromium: make browser-test): {e}".splitlines()[0])
        yield b
        b.close()


class Loaded:
    """A page opened from a file, with what it said while loading."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.console: list[tuple[str, str]] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready='1']", timeout=20_000)

    def shown(self) -> list[int]:
        return [int(x) for x in self.page.eval_on_selector_all("#conv article.shown", "els => els.map(e => e.dataset.n)")]

    def errors(self) -> list[tuple[str, str]]:
        return [(t, m) for t, m in self.console if t in ("error", "warning", "pageerror")]


def _export(src: Path, out: Path, **kw: Any) -> Any:
    with open_quiet(src, "native") as sm:
        st = structure_of(sm)
        with open(out, "w", encoding="utf-8") as f:
            write_html(st, f.write, source=str(src), **kw)
        return st


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("browser") / "demo.jsonl"
    generate_session(path, size_bytes=3_000_000, seed=7)
    return path


@pytest.mark.parametrize("branches", ["all", "path"])
def test_page_loads_and_clicking_a_branch_shows_it(browser: Any, demo: Path, tmp_path: Path, branches: str) -> None:
    out = tmp_path / "demo.html"
    st = _export(demo, out, branches=branches)
    page = Loaded(browser, out)
    assert page.errors() == [] and page.dialogs == []
    assert page.requests == [out.as_uri()]  # nothing but the file itself: no network, no CDN
    # The DOM holds every entry as a tree row and the path as the shown articles.
    rows = page.page.eval_on_selector_all("#tree a.r", "els => els.map(e => Number(e.dataset.n))")
    assert sorted(rows) == list(range(len(st)))
    assert page.shown() == st.path
    shots = tmp_path / f"demo-{branches}-leaf.png"
    page.page.screenshot(path=str(shots))
    # Click the row of an abandoned tip: the conversation becomes root → that tip.
    tip = next(n for n in page.page.eval_on_selector_all(
        "#tree a.r", "els => els.filter(e => e.textContent.includes('tip')).map(e => Number(e.dataset.n))"))
    page.page.click(f"#t{tip}")
    if branches == "all":
        assert page.shown() == st.path_to(tip)
    else:  # the entries the file holds, then one note standing for the rest
        held = [n for n in st.path_to(tip) if n in st.on_path]
        assert page.shown() == held + [st.path_to(tip)[len(held)]]
    tip_shown = page.shown()
    # The header follows the branch shown (issue 26): that branch's length and its tip.
    assert page.page.inner_text("#h-path") == f"{len(st.path_to(tip)):,} on the path shown"
    assert page.page.inner_text("#h-leaf") == f"to {st.id(tip)}, a branch (the session's current leaf is {st.id(st.leaf)})"
    assert "cur" in page.page.get_attribute(f"#t{tip}", "class").split()
    if branches == "all":
        assert "cur" in page.page.get_attribute(f"#a{tip}", "class").split()
    assert page.page.evaluate("location.hash") == f"#a{tip}"
    if branches == "all":
        # The branch's own articles are real ones, with their text.
        text = page.page.inner_text(f"#a{tip}")
        assert st.id(tip) in text
    else:
        # Off the exported path: one note for the entries the file lacks, saying how to
        # export this branch.
        lacking = [n for n in st.path_to(tip) if n not in st.on_path]
        notes = page.page.eval_on_selector_all("#conv article.shown.missing", "els => els.map(e => e.innerText)")
        assert len(notes) == 1 and f"{len(lacking)} entr" in notes[0]
        assert f"--format html --leaf {st.id(tip)}" in notes[0]
    shot = tmp_path / f"demo-{branches}-tip.png"
    page.page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    print(f"screenshots: {shots} {shot}")
    # Clicking an entry on the path shows the path again (down to the leaf).
    page.page.click(f"#t{st.path[1]}")
    assert page.shown() == st.path
    assert page.page.inner_text("#h-path") == f"{len(st.path):,} on the path shown"
    assert page.page.inner_text("#h-leaf") == f"to {st.id(st.leaf)} (the session's current leaf)"
    # A link to an entry opens the page on that entry's branch.
    again = Loaded(browser, out)
    again.page.goto(out.as_uri() + f"#a{tip}")
    again.page.reload()
    again.page.wait_for_selector("body[data-ready='1']")
    assert again.shown() == tip_shown
    assert again.page.get_attribute(f"#t{tip}", "class").split().count("cur") == 1
    assert page.errors() == [] and again.errors() == []
    page.page.close()
    again.page.close()


def test_hostile_session_runs_no_script(browser: Any, tmp_path: Path) -> None:
    src = _evil_session(tmp_path / "evil.jsonl")
    out = tmp_path / "evil.html"
    st = _export(src, out, branches="all")
    page = Loaded(browser, out)
    # Nothing the session holds ran: no alert, no error, no request, no extra element.
    assert page.dialogs == [] and page.errors() == [], page.console
    assert page.requests == [out.as_uri()]
    assert page.page.eval_on_selector_all("script", "els => els.length") == 2
    assert page.page.eval_on_selector_all("[onerror],[onload],[onmouseover],iframe,object,embed", "e => e.length") == 0
    hrefs = page.page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    assert all(h.startswith(("file:", "https:", "http:", "mailto:")) for h in hrefs), hrefs
    # The hostile text is on the page, as text.
    text = page.page.inner_text("#conv")
    assert "<script>alert('user')</script>" in text and "\\u202e" in text
    page.page.hover(f"#a{st.path[1]}")
    page.page.click(f"#t{st.path[0]}")
    assert page.dialogs == []
    page.page.screenshot(path=str(tmp_path / "evil.png"))
    page.page.close()
