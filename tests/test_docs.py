"""The contract is cited by its own section numbers, and every cited section exists.

Code, tests and docs cite docs/CONTRACT.md as ``CONTRACT §N`` (or ``CONTRACT.md §N``,
``docs/CONTRACT.md §N``, a Markdown link to it then ``§N``), a numbered point of a
section as ``§N point M`` / ``§N.M`` / ``§N rule M``; CONTRACT itself says ``§N``. A
section is a ``## N.`` heading; a point is a line ``M.`` in that section's numbered list.
A file outside the repository, numbered otherwise, was once cited instead: no file here
may name it. Run by ``make lint``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "docs" / "CONTRACT.md"
# The old contract's file name, spelled so that this file does not cite it.
OLD_NAME = "API" + ".md"

_HEADING = re.compile(r"^## (\d+)\. ", re.M)
_POINT = re.compile(r"^(\d+)\. ", re.M)
# A citation's section and, when given, its point: "§4", "§5 point 2", "§5.2", "§2 rule 9",
# "§2, rule 3".
_REF = r"§\s*(\d+)(?:\.(\d+)|,? (?:point|rule) (\d+))?"
# "CONTRACT §N", "CONTRACT.md §N", "docs/CONTRACT.md` §N", "[`docs/CONTRACT.md`](docs/CONTRACT.md) §N".
_CITED = re.compile(r"CONTRACT(?:\.md)?`?(?:\]\([^)\s]*\))?,?\s+" + _REF)
_BARE = re.compile(_REF)


def _files() -> list[Path]:
    """Every text file of the package, its tests, benchmarks, Rust core and docs."""
    out = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml", ROOT / "Cargo.toml"]
    for folder, pattern in (("python", "*.py"), ("python", "*.pyi"), ("src", "*.rs"), ("tests", "*.py"),
                            ("tests", "*.rs"), ("benches", "*.py"), ("docs", "*.md")):
        out.extend(sorted((ROOT / folder).rglob(pattern)))
    return [p for p in out if p.is_file() and p != Path(__file__).resolve()]  # this file cites wrongly on purpose


def _sections() -> dict[int, set[int]]:
    """CONTRACT's sections, each with the numbers of its numbered points."""
    text = CONTRACT.read_text(encoding="utf-8")
    heads = list(_HEADING.finditer(text))
    out: dict[int, set[int]] = {}
    for i, h in enumerate(heads):
        body = text[h.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        out[int(h.group(1))] = {int(m.group(1)) for m in _POINT.finditer(body)}
    return out


def _problem(section: str, point: str | None, sections: dict[int, set[int]]) -> str | None:
    n = int(section)
    if n not in sections:
        return f"no section {n}"
    if point is not None and int(point) not in sections[n]:
        return f"section {n} has no point {point}"
    return None


def test_sections_are_numbered() -> None:
    sections = _sections()
    assert sorted(sections) == list(range(1, len(sections) + 1)), sorted(sections)
    assert 5 in sections and len(sections[5]) >= 10  # the differences from Pi are a numbered list


def test_no_file_cites_the_old_contract() -> None:
    hits = [f"{p.relative_to(ROOT)}:{n}"
            for p in _files()
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if OLD_NAME in line]
    assert not hits, f"cite docs/CONTRACT.md by its own sections instead of {OLD_NAME}: {hits}"


def test_every_cited_section_exists() -> None:
    sections = _sections()
    bad, seen = [], 0
    for p in _files():
        text = p.read_text(encoding="utf-8", errors="replace")
        # CONTRACT's own "§N" are its sections; elsewhere only a citation naming CONTRACT is.
        found = _BARE.finditer(text) if p == CONTRACT else _CITED.finditer(text)
        for m in found:
            seen += 1
            why = _problem(m.group(1), m.group(2) or m.group(3), sections)
            if why:
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{p.relative_to(ROOT)}:{line}: {m.group(0)!r}: {why}")
    assert seen > 20, seen  # the pattern still finds the citations
    assert not bad, "\n".join(bad)


def test_the_check_catches_a_wrong_citation() -> None:
    sections = _sections()
    m = _CITED.search("as the contract says (CONTRACT §5 point 99)")
    assert m and _problem(m.group(1), m.group(3), sections) == "section 5 has no point 99"
    m = _CITED.search("[`docs/CONTRACT.md`](docs/CONTRACT.md) §42")
    assert m and _problem(m.group(1), m.group(2), sections) == "no section 42"
    m = _CITED.search("CONTRACT.md §5.2")
    assert m and _problem(m.group(1), m.group(2), sections) is None


# A duration or a rate: "1.8 µs", "40 ms", "4.1 s", "7 GB/s".
_TIMING = re.compile(r"\d(?:[\d.,]*\d)?\s?(?:ns|µs|us|ms|s|[KMG]i?B/s)\b")


def test_architecture_holds_no_timings() -> None:
    """ARCHITECTURE says where things live; figures go to BENCHMARKS.md with how they
    were measured."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    hits = [f"ARCHITECTURE.md:{n}: {m.group(0)!r}" for n, line in enumerate(text.splitlines(), 1)
            for m in _TIMING.finditer(line)]
    assert not hits, "move these to docs/BENCHMARKS.md and link there:\n" + "\n".join(hits)
    assert _TIMING.search("opened in 4.1 s, now ~40 ms") and not _TIMING.search("the first and last 4 KiB")


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces
    as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_between_the_docs_resolve() -> None:
    """Every relative link of the README and docs/ names a file that exists, and its
    ``#anchor`` a heading of that file (the README's performance table links into
    BENCHMARKS.md by section)."""
    bad = []
    for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for m in _LINK.finditer(p.read_text(encoding="utf-8")):
            target = m.group(1)
            if "://" in target or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            f = (p.parent / path).resolve() if path else p
            if not f.exists():
                bad.append(f"{p.relative_to(ROOT)}: {target}: no such file")
            elif anchor and f.suffix == ".md":
                heads = {_slug(h) for h in re.findall(r"^#+ (.*)$", f.read_text(encoding="utf-8"), re.M)}
                if anchor not in heads:
                    bad.append(f"{p.relative_to(ROOT)}: {target}: no such heading")
    assert not bad, "\n".join(bad)
    assert _slug("Exports against a plain-Python writer (issue 26, 2026-12-05)") == \
        "exports-against-a-plain-python-writer-issue-26-2026-12-05"
