"""Times shown to people say their zone (docs/CONTRACT.md §10 "Times"), as real
subprocesses: ``ls``, ``search`` and ``browse``'s picker in this machine's zone with
its offset, ``context``, ``info`` and the exports in UTC saying ``UTC``, ``usage``'s
table naming the zone of its days; a ``$TZ`` the C library cannot read is UTC, named
so and warned of once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from sessiontree._time import unread_tz
from sessiontree.generate import generate_session

ZONES = Path("/usr/share/zoneinfo")
needs_zones = pytest.mark.skipif(not (ZONES / "Asia" / "Kolkata").is_file(), reason="no tz database here")


def run(*args: str, tz: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TZ")}
    if tz is not None:
        env["TZ"] = tz
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env,
                          timeout=300, encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("times") / "history"
    for i in range(3):
        folder = base / f"--p{i}--"
        folder.mkdir(parents=True)
        generate_session(folder / f"s{i}.jsonl", size_bytes=20_000, seed=40 + i, cwd=f"/home/user/p{i}")
    return base


def _kolkata(iso: str, seconds: bool) -> str:
    from zoneinfo import ZoneInfo

    shown = datetime.fromisoformat(iso).astimezone(ZoneInfo("Asia/Kolkata"))
    return shown.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M") + " +05:30"


@needs_zones
def test_ls_and_search_show_local_times_with_their_offset(root: Path) -> None:
    listed = json.loads(run("ls", str(root), "--json", tz="Asia/Kolkata").stdout)["sessions"]
    p = run("ls", str(root), tz="Asia/Kolkata")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    rows = p.stdout.splitlines()[1:-1]
    assert [r[:26] for r in rows] == [_kolkata(s["modified"], True) for s in listed]
    hits = json.loads(run("search", "the", str(root), "--json", "--limit", "3", tz="Asia/Kolkata").stdout)["hits"]
    p = run("search", "the", str(root), "--limit", "3", tz="Asia/Kolkata")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    heads = [line for line in p.stdout.splitlines() if re.match(r"\d{4}-", line)]
    assert [h[:23] for h in heads] == [_kolkata(h["time"], False) for h in hits]


def _one_session(tmp_path: Path) -> Path:
    """A session whose entries' times were written at two offsets, and a message's at
    epoch milliseconds: each is shown in UTC."""
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-11-07T09:00:00.000Z", "cwd": "/w"},
        {"type": "model_change", "id": "a1", "parentId": None, "timestamp": "2025-11-07T11:14:10.306+02:00",
         "provider": "p", "modelId": "m"},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2025-11-07T09:15:00.000Z",
         "message": {"role": "user", "content": "hello", "timestamp": 1_762_506_960_000}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_context_info_and_exports_say_utc(tmp_path: Path, backend: str) -> None:
    path = _one_session(tmp_path)
    for tz in ("Asia/Kolkata", "UTC0"):  # whatever this machine's zone, the same text
        p = run("context", str(path), "--backend", backend, tz=tz)
        assert p.returncode == 0, p.stderr
        assert "[1] user  · 2025-11-07 09:16:00 UTC" in p.stdout, p.stdout
        p = run("info", str(path), "--backend", backend, tz=tz)
        assert "2025-11-07 09:00:00 UTC … 2025-11-07 09:15:00 UTC" in p.stdout, p.stdout
        md = run("export", str(path), "--format", "markdown", "--backend", backend, tz=tz).stdout
        assert "model\\_change · 2025-11-07 09:14:10 UTC ·" in md, md  # written at +02:00
        assert "user · 2025-11-07 09:16:00 UTC ·" in md, md
        page = run("export", str(path), "--format", "html", "--backend", backend, tz=tz).stdout
        assert "<span>2025-11-07 09:14:10 UTC</span>" in page
        assert "<span>2025-11-07 09:16:00 UTC</span>" in page


def _no_times(tmp_path: Path) -> Path:
    """A session whose times are not all times: an assistant message's ``timestamp``
    that is no number, a branch summary's that is no ISO time, one that is."""
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-11-07T09:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2025-11-07T09:15:00.000Z",
         "message": {"role": "user", "content": "hello", "timestamp": 1_762_506_960_000}},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2025-11-07T09:16:00.000Z",
         "message": {"role": "assistant", "content": "hi", "provider": "p", "model": "m", "stopReason": "stop",
                     "timestamp": "yesterday"}},
        {"type": "branch_summary", "id": "a3", "parentId": "a2", "timestamp": "not a time", "fromId": "a1",
         "summary": "elsewhere"},
        {"type": "branch_summary", "id": "a4", "parentId": "a3", "timestamp": "2025-11-07T11:17:00.000+02:00",
         "fromId": "a1", "summary": "back"},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_context_and_the_exports_show_the_same_times(tmp_path: Path, backend: str) -> None:
    """A time that is no time is shown by neither ``context`` nor the exports (trial 55:
    the exports showed an assistant message whose ``timestamp`` is no number at its
    entry's time, and a branch summary's ``"not a time"`` as written, where ``context``
    showed none), and a time that is one the same in each (CONTRACT §10 "Times")."""
    path = _no_times(tmp_path)
    utc = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
    context = run("context", str(path), "--backend", backend, tz="UTC0").stdout
    heads = [line for line in context.splitlines() if line.startswith("[")]
    in_context = [(m.group() if (m := utc.search(h)) else "") for h in heads]
    assert in_context == ["2025-11-07 09:16:00 UTC", "", "", "2025-11-07 09:17:00 UTC"], heads
    md = run("export", str(path), "--format", "markdown", "--backend", backend, tz="UTC0").stdout
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert [(m.group() if (m := utc.search(h)) else "") for h in sections] == in_context, sections
    assert "not a time" not in md and "yesterday" not in md, sections
    assert sections[2] == "## branch\\_summary · from a1 · a3", sections  # no empty time between separators
    page = run("export", str(path), "--format", "html", "--backend", backend, tz="UTC0").stdout
    assert [f"<span>{t}</span>" in page for t in in_context if t] == [True, True]
    assert "not a time" not in page and "yesterday" not in page


def test_a_utc_time_says_utc_in_every_command(tmp_path: Path) -> None:
    """A local time whose offset is zero ends with ``UTC``, as the exports' times do
    (trial 55: ``TZ=UTC`` printed ``+00:00`` in ``ls`` and ``UTC`` in the exports), and
    ``ls``'s and ``search``'s columns stay put in a zone that is UTC in winter only."""
    folder = tmp_path / "p"
    folder.mkdir()
    for name, when in (("winter", "2025-01-15T12:00:00.000Z"), ("summer", "2025-07-15T12:00:00.000Z")):
        ms = int(datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp() * 1000)
        lines = [{"type": "session", "version": 3, "id": name, "timestamp": when, "cwd": "/w"},
                 {"type": "message", "id": "m1", "parentId": None, "timestamp": when,
                  "message": {"role": "user", "content": f"zebra {name}", "timestamp": ms}}]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    for tz in ("UTC", "UTC0", ""):
        listed = run("ls", str(folder), tz=tz).stdout
        assert "+00:00" not in listed and "2025-07-15 12:00:00 UTC" in listed, listed
        hits = run("search", "zebra", str(folder), tz=tz).stdout
        assert "+00:00" not in hits and "2025-07-15 12:00 UTC" in hits, hits
    if not (ZONES / "Europe" / "London").is_file():
        return
    rows = run("ls", str(folder), tz="Europe/London").stdout.splitlines()[1:3]
    assert rows[0].startswith("2025-07-15 13:00:00 +01:00") and rows[1].startswith("2025-01-15 12:00:00 UTC"), rows
    assert len({r.index("zebra") for r in rows}) == 1, rows  # one column whatever the zone's word
    heads = [x for x in run("search", "zebra", str(folder), tz="Europe/London").stdout.splitlines() if " user " in x]
    assert len(heads) == 2 and len({h.index(" user ") for h in heads}) == 1, heads


@needs_zones
def test_usage_table_names_the_zone_of_its_days(root: Path) -> None:
    p = run("usage", str(root), tz="Asia/Kolkata")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout.splitlines()[-1].endswith("; days in Asia/Kolkata"), p.stdout
    assert run("usage", str(root), "--utc", tz="Asia/Kolkata").stdout.splitlines()[-1].endswith("; days in UTC")
    # A report by model has no days, unless --since/--until kept some.
    assert "days in" not in run("usage", "model", str(root), tz="Asia/Kolkata").stdout
    assert "days in Asia/Kolkata" in run("usage", "model", str(root), "--since", "2000-01-01",
                                         tz="Asia/Kolkata").stdout


def test_an_unreadable_tz_is_named_utc_and_warned_once(root: Path) -> None:
    warning = "warning: $TZ 'Europe/Pariss' names no zone file and is no POSIX rule: local times are in UTC\n"
    p = run("usage", str(root), "--json", tz="Europe/Pariss")
    assert p.returncode == 0 and p.stderr == warning, p.stderr
    assert json.loads(p.stdout)["timeZone"] == "UTC"
    p = run("usage", str(root), tz="Europe/Pariss")
    assert p.stderr == warning and p.stdout.splitlines()[-1].endswith("; days in UTC")
    for words in (["ls", str(root)], ["search", "the", str(root)]):
        p = run(*words, tz="Europe/Pariss")
        assert p.returncode == 0 and p.stderr == warning, p.stderr
        assert " UTC " in p.stdout and "+00:00" not in p.stdout
    # A byte that is not UTF-8 is shown as that byte (trial 55).
    p = run("usage", str(root), "--json", tz="Europe/Par\udcffis")
    assert p.stderr == warning.replace("Pariss", "Par\\xffis"), p.stderr
    # glibc's own rules: an empty $TZ is UTC, and a POSIX rule is read (no warning).
    p = run("usage", str(root), "--json", tz="")
    assert p.stderr == "" and json.loads(p.stdout)["timeZone"] == "UTC"
    p = run("usage", str(root), "--json", tz="IST-5:30")
    assert p.stderr == "" and json.loads(p.stdout)["timeZone"] == "IST-5:30"
    assert "+05:30" in run("ls", str(root), tz="IST-5:30").stdout
    # An offset of a day or more: glibc keeps it, times are shown in UTC, and it is said.
    p = run("usage", str(root), "--json", tz="AAA-24:59")
    assert p.stderr == ("warning: $TZ 'AAA-24:59' gives an offset of 24 hours or more, which no time here can show: "
                        "local times are in UTC\n"), p.stderr
    assert json.loads(p.stdout)["timeZone"] == "UTC"


def test_unread_tz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    zones = tmp_path / "zones"
    (zones / "Here").mkdir(parents=True)
    (zones / "Here" / "Zone").write_bytes(b"TZif2" + bytes(40))
    (zones / "Here" / "Text").write_text("not a zone\n")
    monkeypatch.setenv("TZDIR", str(zones))
    for tz, unread in (("Here/Zone", False), (":Here/Zone", False), (str(zones / "Here" / "Zone"), False),
                       ("CET-1CEST,M3.5.0,M10.5.0/3", False), ("<+0330>-3:30", False), ("", False), (":", False),
                       ("Here/Text", True), ("Here", True), ("Here/Zonee", True), ("Foo", True), ("A1", True),
                       ("Europe/Paris", True),  # under this $TZDIR, no such file
                       # offsets glibc keeps and datetime cannot hold (adversary round 54)
                       ("AAA-24", True), ("AAA+24:59", True), ("AAA-25", True), ("AAA0BBB-24,J1/0,J365/24", True),
                       ("AAA-23:59", False), ("AAA0BBB-23,J1/0,J365/24", False), ("<+2359>-23:59", False)):
        monkeypatch.setenv("TZ", tz)
        assert (unread_tz() == tz) is unread and (unread_tz() is None) is not unread, tz
    monkeypatch.delenv("TZ")
    assert unread_tz() is None
