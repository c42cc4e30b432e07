"""``sessiontree migrate``: rewrite a version 1/2 session as version 3, keeping the original.

The library does the rewrite (``SessionManager.migrate()``): the v3 image goes to a
temporary file in the same folder and is renamed over the original, which is kept beside
it as ``<name>.v<N>.bak``. A file already at version 3 is left byte-identical.
"""

from __future__ import annotations

import argparse
import os

from rich.text import Text

from ._common import Io, open_session
from ..view import safe


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``migrate`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("migrate", help="rewrite a v1/v2 session file as v3 (the original is kept)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--json", action="store_true", help="print {file, migrated, backup} as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree migrate``: the exit status (see the module docstring)."""
    sm, _ = open_session(io, args.file, args.backend)
    with sm:
        backup = sm.migrate()
        entries = len(sm)
    if args.json:
        io.write_json({"file": args.file, "migrated": backup is not None, "backup": backup, "entries": entries})
        return 0
    if backup is None:
        io.print(Text.assemble((safe(args.file), "bold"), ": already version 3, left as it was"))
    else:
        io.print(Text.assemble((safe(args.file), "bold"), f": migrated to version 3 ({entries:,} entries); "
                               "original kept as ", (safe(os.fspath(backup)), "bold")))
    return 0
