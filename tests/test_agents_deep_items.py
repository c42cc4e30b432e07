"""``PiSession`` with items nested deep, and entries holding what is no item (adversary
round 59): a line holds 1,024 levels, Python's ``copy.deepcopy``, ``json.dumps`` and
``==`` recurse against a limit of 1,000 frames (``deepcopy`` two a level). No SDK
needed: items are dicts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionManager
from sessiontree._jsonl import values_equal
from sessiontree.agents import PiSession


def nested(depth: int) -> dict[str, Any]:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return {"role": "user", "content": "hi", "extra": value}


@pytest.mark.parametrize("depth", [600, 1000, 1021])
def test_an_item_a_line_holds_comes_back_equal(tmp_path: Path, backend: str, depth: int) -> None:
    """``get_items`` copied the path's items with ``copy.deepcopy``: an item 600 deep was
    written, then every read of the session raised ``RecursionError``, and ``pop_item``
    wrote its leaf move and then raised; 1,000 deep, ``add_items`` raised it before
    writing, though a line holds it."""
    item = nested(depth)
    with PiSession("deep", tmp_path, backend=backend) as s:
        asyncio.run(s.add_items([{"role": "user", "content": "first"}, item]))
        [first, got] = asyncio.run(s.get_items())
        assert first == {"role": "user", "content": "first"} and values_equal(got, item)
        assert got is not s._current()[-1][1]  # a copy: the caller may change it
    with PiSession("deep", tmp_path, backend=backend) as s:
        assert values_equal(asyncio.run(s.get_items())[-1], item)
        assert values_equal(asyncio.run(s.pop_item()), item)
        assert asyncio.run(s.get_items()) == [{"role": "user", "content": "first"}]


@pytest.mark.parametrize("depth", [1022, 1100])
def test_an_item_no_line_holds_is_refused_before_anything_is_written(tmp_path: Path, backend: str, depth: int) -> None:
    """1,022 lists in the item are 1,025 levels in its entry: that item was refused by
    the writer after the batch's first item was written."""
    with PiSession("deep", tmp_path, backend=backend) as s:
        with pytest.raises(ValueError):
            asyncio.run(s.add_items([{"role": "user", "content": "first"}, nested(depth)]))
        assert not Path(s.session_file).exists()
        asyncio.run(s.add_items([{"role": "user", "content": "first"}]))
    with SessionManager.open(s.session_file, backend=backend) as sm:
        assert len(sm) == 2 and sm.load_report == []  # the session's name, the item


@pytest.mark.parametrize("held", [[1, 2], "text", 7])
def test_an_entry_holding_no_dict_is_no_item(tmp_path: Path, backend: str, held: Any) -> None:
    """A message whose ``openaiItem`` (or a custom entry whose ``data.item``) is not a
    dict, as no ``add_items`` writes it (a file edited by hand): ``get_items`` handed
    the SDK that value as an item (``[1, 2]``)."""
    import json

    with PiSession("s", tmp_path, backend=backend) as s:
        asyncio.run(s.add_items([{"role": "user", "content": "q1"}]))
    path = Path(s.session_file)
    last = json.loads(path.read_text().splitlines()[-1])["id"]
    lines = [{"type": "message", "id": "h1", "parentId": last, "timestamp": "2025-01-01T00:00:00.000Z",
              "message": {"role": "user", "content": "x", "openaiItem": held}},
             {"type": "custom", "customType": "openai-agents.item", "id": "h2", "parentId": "h1",
              "timestamp": "2025-01-01T00:00:00.000Z", "data": {"item": held}}]
    with open(path, "a") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    with PiSession("s", tmp_path, backend=backend) as s:
        assert asyncio.run(s.get_items()) == [{"role": "user", "content": "q1"}]
        asyncio.run(s.add_items([{"role": "user", "content": "q2"}]))
        assert asyncio.run(s.pop_item()) == {"role": "user", "content": "q2"}
        assert asyncio.run(s.pop_item()) == {"role": "user", "content": "q1"}
