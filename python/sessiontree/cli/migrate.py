"""``sessiontree migrate``: rewrite a version 1/2 session as version 3, keeping the original."""

from __future__ import annotations

import argparse

from ._common import CliError, Io


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("migrate", help="rewrite a v1/v2 session file as v3 (the original is kept)")
    p.add_argument("file", help="session file (.jsonl)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    raise CliError("migrate: waiting for the library's migration entry point")
