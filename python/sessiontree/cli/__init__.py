"""The ``sessiontree`` command: inspect, check, fork, migrate and generate Pi sessions.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and
``run(args, io) -> int``; the parser and the run are ``_main``'s. Expected failures
(missing file, not a session, locked file) print one line on stderr and exit non-zero,
without a traceback.

``sessiontree --version`` is answered here, before argparse, rich and the commands'
modules are imported (they cost it ~190 ms): it costs about an interpreter start.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    import argparse

from ._version import print_version

__all__ = ["main", "build_parser", "print_version"]


def main(argv: list[str] | None = None) -> int:
    """Run the ``sessiontree`` command line.

    Args:
        argv: arguments without the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The exit status: 0 success, 1 failure or problems found (``check``), 2 usage
        error, 130 interrupted.
    """
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        return print_version()
    from ._main import main as run

    return run(argv)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``sessiontree`` command: every subcommand, or only the
    one ``argv`` names."""
    from ._main import build_parser as build

    return build(argv)
