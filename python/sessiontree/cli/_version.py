"""``sessiontree --version``'s line (``cli.main`` answers ``--version`` alone with it,
the parser's action the option after others)."""

from __future__ import annotations

import sys

__all__ = ["print_version"]


def print_version() -> int:
    """Write ``sessiontree VERSION`` on stdout (the version the native module was built
    with, Cargo's package version, else the installed distribution's:
    ``sessiontree.__version__``); the exit status: 0, or 1 when stdout cannot be written."""
    from .. import __version__

    try:
        sys.stdout.write(f"sessiontree {__version__}\n")  # stdout, as argparse's own version action
        sys.stdout.flush()
    except BrokenPipeError:
        from ._common import exit_for_broken_pipe

        exit_for_broken_pipe()
    except OSError as e:  # a full disk, /dev/full: one line, as every command says it
        sys.stderr.write(f"sessiontree: error: {e.strerror or e}\n")
        return 1
    return 0
