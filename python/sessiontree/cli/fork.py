"""``sessiontree fork``: a new session file holding one root-to-entry path."""

from __future__ import annotations

import argparse
import os

from rich.text import Text

from ._common import CliError, Io, open_session


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register this subcommand.

    Args:
        sub: the ``sessiontree`` parser's subparsers.
    """
    p = sub.add_parser("fork", help="write a new session holding only the path to --leaf ID")
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--leaf", required=True, metavar="ID", help="the entry whose root-to-entry path is copied")
    p.add_argument("--to", metavar="DIR", help="folder for the new file (default: the source file's folder)")
    p.add_argument("--json", action="store_true", help="print {source, leafId, path, entries} as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """Run the subcommand.

    Args:
        args: parsed arguments (``file``, ``backend``, the subcommand's flags).
        io: where to write.

    Returns:
        The exit status.
    """
    to = args.to if args.to is not None else os.path.dirname(os.path.abspath(args.file))
    if not os.path.isdir(to):
        raise CliError(f"{to}: no such directory")
    sm, _ = open_session(io, args.file, args.backend, session_dir=to)
    with sm:
        if args.leaf not in sm:
            raise CliError(f"{args.file}: entry {args.leaf} not found")
        new_path = sm.create_branched_session(args.leaf)
        entries = len(sm)
    if not new_path or not os.path.exists(new_path):
        # Pi writes a session only once it holds an assistant message; so does sessiontree.
        raise CliError(f"{args.file}: the path to {args.leaf} has no assistant message, "
                       "so no session file is written (Pi's rule)")
    if args.json:
        io.write_json({"source": args.file, "leafId": args.leaf, "path": new_path, "entries": entries})
        return 0
    io.print(Text.assemble("wrote ", (str(new_path), "bold"), f" ({entries:,} entries, path to {args.leaf})"))
    return 0
