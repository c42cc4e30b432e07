"""A query in the session picker (Textual's headless pilot), timed from its last key:
until the first matching sessions are on screen and until the search's stream ends.
The picker waits 0.25 s after the last key before it searches (a pause in typing).

    python benches/picker_search.py ROOT QUERY [QUERY ...]
    # XDG_CACHE_HOME names the cache folder; run `sessiontree index ROOT` first for
    # the search index's figures
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from sessiontree.browse import BrowseApp, Picker, Scope


def main() -> None:
    root, queries = sys.argv[1], sys.argv[2:]
    folders = tuple(sorted(os.path.join(root, d) for d in os.listdir(root)))
    app = BrowseApp(picker=Picker((Scope("all", root, folders, projects=True),)))

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            ps: object = app.get_screen("picker")
            while "listed" not in getattr(ps, "timings"):
                await pilot.pause(0.02)
            for q in queries:
                ps.query_one("Input").value = ""  # type: ignore[attr-defined]
                await pilot.pause(0.3)
                await pilot.press(*q)
                t = time.perf_counter()
                first = None
                while True:
                    await pilot.pause(0.01)
                    f = getattr(ps, "found")
                    mine = f is not None and f.query == q
                    if mine and f.order and first is None and ps._list().rows:  # type: ignore[attr-defined]
                        first = round(time.perf_counter() - t, 3)
                    if mine and f.done:
                        break
                print(f"{q!r}: first rows {first} s, all {time.perf_counter() - t:.3f} s, {len(f.order):,} sessions, "
                      f"{f.total:,} entries")

    print("load before", os.getloadavg())
    asyncio.run(run())
    print("load after", os.getloadavg())


if __name__ == "__main__":
    main()
