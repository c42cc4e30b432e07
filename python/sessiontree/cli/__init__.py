"""The ``sessiontree`` command: inspect, check, fork, migrate and generate Pi sessions.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and
``run(args, io) -> int``. Expected failures (missing file, not a session, locked file)
print one line on stderr and exit non-zero, without a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

from ._version import asks_version, print_version

__all__ = ["main", "build_parser"]


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``sessiontree`` command: every subcommand, or only the
    one ``argv`` names (``_parser.build_parser``)."""
    from ._parser import build_parser as build

    return build(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the ``sessiontree`` command line.

    Args:
        argv: arguments without the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The exit status: 0 success, 1 failure or problems found (``check``), 2 usage
        error, 130 interrupted.
    """
    words = sys.argv[1:] if argv is None else argv
    if asks_version(words):
        return print_version()
    from ..errors import InvalidSessionError, SessionError
    from ._common import CliError, catalog_notes, exit_for_broken_pipe, make_io, quiet_load_warnings

    import gc

    # The start (the command's parser and the modules it imports) makes tens of
    # thousands of objects that all live on: the collector's passes over them found
    # nothing to free (about 4 ms of a warm usage's 65 CPU, docs/BENCHMARKS.md). Held
    # off until the command runs, then those objects frozen out of later passes. Only
    # in a process of its own (the script, `python -m`): a caller's objects are not
    # ours to freeze. Then the collector runs every 100,000 new objects, not 700: a
    # listing or a report of 20,000 sessions makes hundreds of thousands that all live
    # to the end, and the passes over them found nothing to free (103 ms of a warm `ls`
    # of 20,000 sessions, 18 ms of a report by session; 15 and 1 ms after: timed by
    # `gc.callbacks`, docs/BENCHMARKS.md), as mypy does for the same reason. Cycles are
    # still collected, a hundred thousand objects later.
    own = argv is None and gc.isenabled()
    if own:
        gc.disable()
    try:
        parser = build_parser(words)
        args, extra = parser.parse_known_args(argv)
    finally:
        if own:
            gc.freeze()
            gc.set_threshold(100_000, 10, 10)
            gc.enable()
    if extra and isinstance(getattr(args, "paths", None), list) and not any(x.startswith("-") for x in extra):
        # `search QUERY --limit 5 ROOT`: argparse has used up PATH ... before the option.
        args.paths.extend(extra)
        extra = []
    if extra:
        # "sessiontree info f --bogus": the error and usage of `info`, not of the whole command.
        command = parser.get_default("_commands").get(getattr(args, "command", None), parser)
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    args.color = getattr(args, "color", "auto")
    for stream in (sys.stdout, sys.stderr):
        # Session text may hold lone surrogates; show them escaped rather than crash.
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    quiet_load_warnings()
    io = make_io(args.color)
    try:
        flag = getattr(args, "backend", None)
        args.backend = _backend(args)
        _cache_settings()
        with _backend_for_readers(flag), catalog_notes(io):
            return int(args.func(args, io) or 0)
    except CliError as e:
        _fail(io, str(e))
        return e.code
    except InvalidSessionError as e:
        _fail(io, f"not a session: {e}")
        return 1
    except SessionError as e:  # locked, exists, stale, entry not found
        _fail(io, str(e))
        return 1
    except BrokenPipeError:
        exit_for_broken_pipe()
        return 0
    except FileNotFoundError as e:
        _fail(io, f"{e.filename or ''}: no such file" if e.filename else str(e))
        return 1
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        _fail(io, f"{where}{e.strerror or e}")
        return 1
    except KeyboardInterrupt:
        _fail(io, "interrupted")
        return 130


def _backend(args: argparse.Namespace) -> str:
    """``--backend``, else ``$SESSIONTREE_BACKEND``, else ``auto``; a bad variable is an error."""
    from .._select import BACKENDS, backend_name
    from ._common import CliError

    flag = getattr(args, "backend", None)
    if flag is not None:
        return str(flag)
    try:
        return backend_name(None)
    except ValueError:
        raw = os.environ.get("SESSIONTREE_BACKEND", "")
        raise CliError(f"SESSIONTREE_BACKEND={raw!r} is not a backend: use {', '.join(BACKENDS)} "
                       "(or unset it)", code=2) from None


@contextlib.contextmanager
def _backend_for_readers(flag: str | None) -> Iterator[None]:
    """``--backend``, when given, also picks the catalog's and the search's readers
    (and those of the processes the command starts), which follow
    ``$SESSIONTREE_BACKEND`` (``_select.native_module``): the variable is set for the
    command and restored after it (``main`` may run in-process, as the tests run it)."""
    from .._select import ENV

    if flag is None:
        yield
        return
    old = os.environ.get(ENV)
    os.environ[ENV] = flag
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


def _cache_settings() -> None:
    """A bad ``$SESSIONTREE_CACHE_BYTES``, or persisted indexes the library refuses
    (``$SESSIONTREE_INDEX`` or the default folder inside Pi's folders, a bad
    ``$SESSIONTREE_INDEX_BYTES``: ``_caches.index_cache``), is a usage error before
    anything is opened, for every command: an open would raise it, and a listing would
    keep no indexes without a word."""
    from .._caches import index_cache
    from ._common import CliError

    try:
        index_cache()
    except ValueError as e:
        raise CliError(str(e), code=2) from None
    if "SESSIONTREE_CACHE_BYTES" not in os.environ:
        return  # nothing to check (and `_backend` need not be imported)
    from .._backend import default_cache_budget

    try:
        default_cache_budget()
    except ValueError as e:
        raise CliError(f"{e} (or unset it)", code=2) from None


def _fail(io, message: str) -> None:  # type: ignore[no-untyped-def]
    from ..view import safe

    # Messages may echo file content or paths: escape controls (one line, always).
    try:
        io.err.print(f"sessiontree: error: {safe(message)}", markup=False, highlight=False, soft_wrap=True)
    except BrokenPipeError:  # pragma: no cover
        pass
