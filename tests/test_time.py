"""_time: Date.parse on ISO forms and toISOString, checked against Pi's corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sessiontree._time import datetime_from_ms, iso_from_ms, now_iso, parse_iso_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2025-12-01T10:00:01.000Z", 1764583201000),
        ("2025-12-01T11:00:04.000+02:00", 1764579604000),
        ("2025-12-01T05:00:05.000-05:00", 1764583205000),
        ("2025-12-01T10:00:05Z", 1764583205000),
        ("2025-12-01T10:00:04.9999Z", 1764583204999),  # truncated, not rounded
        ("2025-12-01T10:00:23.123456Z", 1764583223123),
        ("2025-12-01T10:00:23.1Z", 1764583223100),
        ("2025-12-01", 1764547200000),  # date-only is UTC
        ("2025-12", 1764547200000),
        ("2025", 1735689600000),
        ("2025-12-01T10:00Z", 1764583200000),
        ("2025-12-01T10:00:00", 1764583200000),  # no offset: UTC here (JS: local)
        ("1970-01-01T00:00:00.000Z", 0),
        ("1969-12-31T23:59:59.999Z", -1),
        ("2025-12-01T24:00:00Z", 1764633600000),
        ("+275760-09-13T00:00:00.000Z", 8_640_000_000_000_000),
        ("-271821-04-20T00:00:00.000Z", -8_640_000_000_000_000),
    ],
)
def test_parse_iso_ms(text: str, ms: int) -> None:
    assert parse_iso_ms(text) == ms


@pytest.mark.parametrize(
    "text",
    ["not a date", "", "2025-13-01", "2025-12-32", "2025-12-01T25:00Z", "2025-12-01T10:60Z",
     "2025-12-01T24:00:01Z", "2025-12-01T10:00:00+24:00", "-000000-01-01T00:00:00Z",
     "+275760-09-13T00:00:00.001Z", "2025-12-01 10:00:00Z", " 2025-12-01", None, 1764583201000, ["x"]],
)
def test_parse_iso_ms_invalid(text: object) -> None:
    assert parse_iso_ms(text) is None


def test_now_iso_shape_and_roundtrip() -> None:
    s = now_iso()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", s)
    assert iso_from_ms(parse_iso_ms(s)) == s


def test_iso_from_ms_and_datetime() -> None:
    assert iso_from_ms(1764583223123) == "2025-12-01T10:00:23.123Z"
    assert iso_from_ms(-1) == "1969-12-31T23:59:59.999Z"
    dt = datetime_from_ms(1764583223123)
    assert dt is not None and dt.isoformat() == "2025-12-01T10:00:23.123000+00:00"
    assert datetime_from_ms(float("nan")) is None
    assert datetime_from_ms(float("inf")) is None
    assert datetime_from_ms(8_640_000_000_000_000) is None  # beyond datetime's year 9999


def _entries(path: Path) -> list[dict]:
    out = []
    for line in path.read_bytes().split(b"\n"):
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and v.get("type") != "session":
            out.append(v)
    return out


def test_tree_child_order_of_edge_timestamps(corpus_dir: Path) -> None:
    """getTree sorts children by Date.parse (stable): our parse gives Pi's order."""
    for name in ("edge-timestamps", "edge-unknown-types-roles", "hand-branches"):
        expected = json.loads((corpus_dir / f"{name}.expected.json").read_text())
        entries = _entries(corpus_dir / f"{name}.jsonl")
        by_id = {e["id"]: e for e in entries}
        for parent, children in expected["treeChildren"].items():
            file_order = expected["children"][parent]

            def key(i: str) -> float:
                ms = parse_iso_ms(by_id[i]["timestamp"])
                return float("nan") if ms is None else ms

            if any(parse_iso_ms(by_id[i]["timestamp"]) is None for i in file_order):
                continue  # JS sorts NaN comparisons as ties; not a Date.parse question
            assert sorted(file_order, key=key) == children, (name, parent)


def test_synthesised_timestamps_match_corpus(corpus_dir: Path) -> None:
    """Synthesised messages carry new Date(entry.timestamp).getTime() (null for NaN)."""
    expected = json.loads((corpus_dir / "edge-unknown-types-roles.expected.json").read_text())
    entries = {e["id"]: e for e in _entries(corpus_dir / "edge-unknown-types-roles.jsonl")}
    msgs = expected["contexts"]["ee000025"]["messages"]
    synth = [m for m in msgs if m["role"] in ("compactionSummary", "custom", "branchSummary")]
    # compaction ee000020, custom_message ee000021, branch_summary ee000022, custom_message ee000023
    for m, eid in zip(synth, ["ee000020", "ee000021", "ee000022", "ee000023"]):
        assert parse_iso_ms(entries[eid]["timestamp"]) == m["timestamp"], eid
