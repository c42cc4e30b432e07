"""``sessiontree --version``, answered before argparse is imported: about the
interpreter's start (19.5 ms CPU where ``python -c pass`` takes 13.8; it took 150 ms
with every subcommand's parser and ``importlib.metadata``: docs/BENCHMARKS.md, "Fixed
costs of a history's answers")."""

from __future__ import annotations

import sys

from .._select import BACKENDS

__all__ = ["CHOICES", "COLORS", "asks_version", "print_version"]

COLORS = ("auto", "always", "never")
"""The choices of ``--color``."""

CHOICES = {"--backend": BACKENDS, "--color": COLORS}
"""The top-level options that take a value, and the values they accept."""


def asks_version(argv: list[str]) -> bool:
    """Whether argparse would print the version for ``argv`` (arguments without the
    program's name): ``--version`` spelt out, before the command, after nothing but
    top-level options with accepted values. argparse acts on each option as it reads
    it, so what follows ``--version`` never changes the answer. Any other spelling
    (an abbreviation, a bad value) is left to argparse, which answers it the same way
    or with its error."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--version":
            return True
        name, eq, value = word.partition("=")
        choices = CHOICES.get(name)
        if choices is None:
            return False
        if not eq:
            if i + 1 == len(argv):
                return False
            i += 1
            value = argv[i]
        if value not in choices:
            return False
        i += 1
    return False


def print_version() -> int:
    """Write ``sessiontree VERSION`` on stdout (as argparse's own version action does);
    the exit status: 0, or 1 after one line on stderr when stdout cannot be written (a
    full disk, ``/dev/full``). A closed pipe exits quietly.

    The version is the extension's (Cargo.toml, which the wheel's metadata is made
    from): ``importlib.metadata`` would cost about 20 ms."""
    from .. import __version__

    try:
        sys.stdout.write(f"sessiontree {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:
        from ._common import exit_for_broken_pipe

        exit_for_broken_pipe()
    except OSError as e:
        sys.stderr.write(f"sessiontree: error: {e.strerror or e}\n")
        return 1
    return 0
