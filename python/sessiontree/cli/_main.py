"""The ``sessiontree`` command's parser and its run: every command line but
``--version`` alone (``cli/__init__.py``) is read here."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any

from .._select import backend_name
from ._common import BACKENDS, CliError, exit_for_broken_pipe, make_io, quiet_load_warnings
from ..view import plain_doc, safe

__all__ = ["main", "build_parser"]

# Each command's module, in the order `--help` lists them. A command line naming one
# imports that module only: the others' imports (Textual, the exporters, the
# benchmark tools) are no part of `sessiontree search`'s time.
_COMMANDS = {"info": "info", "tree": "tree", "context": "context", "ls": "ls", "search": "search", "usage": "usage",
             "index": "index", "check": "check", "fork": "fork", "migrate": "migrate", "generate": "gen",
             "bench": "bench", "import": "import_", "browse": "browse", "export": "export"}
_VALUED = ("--backend", "--color")  # the top-level options that take a value


def _named_command(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option), if a known one."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return None
        if a in _VALUED:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return a if a in _COMMANDS else None
    return None


def _columns() -> int:
    """``shutil.get_terminal_size().columns`` (``$COLUMNS``, else the terminal on
    stdout, else 80), without importing ``shutil``: argparse's help formatter imports it
    (with ``bz2``, ``lzma`` and ``fnmatch``) for every argument added, about 2 ms of
    every command's start (docs/BENCHMARKS.md, issue 25)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Help(argparse.HelpFormatter):
    """argparse's formatter, as wide as the terminal (:func:`_columns`)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _RawHelp(_Help, argparse.RawDescriptionHelpFormatter):
    """``RawDescriptionHelpFormatter``, as wide as the terminal: a paragraph of the
    description (a bullet, a definition, its lines up to one that starts another)
    wider than the terminal is refilled to it, continuing under its text
    (``view.hang``), where the terminal wrapped its lines to column 0."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        from ..view import cells, hang

        room = max(20, self._width - len(indent))
        out: list[str] = []
        for lead, under, lines in _paragraphs(text.splitlines()):
            if all(cells(line) <= room for line in lines):
                out.extend(indent + line if line else "" for line in lines)
                continue
            words = " ".join([lines[0][lead:], *(line.strip() for line in lines[1:])])
            first, *more = hang(words, under, room, lead=lead)
            out.append(indent + lines[0][:lead] + first)
            out.extend(indent + x for x in more)
        return "\n".join(out)


def _paragraphs(lines: list[str]) -> list[tuple[int, int, list[str]]]:
    """``(lead, under, lines)`` of each paragraph of a raw description: its first
    line's indent, the column its text continues at (after a ``* `` bullet or a
    definition's term, ``html      one self-contained page``), and its lines (the
    first, then those indented to ``under``; a blank line is one of its own)."""
    out: list[tuple[int, int, list[str]]] = []
    for line in lines:
        m = _HANGING_RE.match(line)
        assert m is not None  # every part of it is optional
        lead = len(m.group(1))
        if out and line.strip() and out[-1][2][-1].strip() and not m.group(2) and lead == out[-1][1] \
                and lead > out[-1][0]:
            out[-1][2].append(line)
        elif out and line.strip() and out[-1][2][-1].strip() and lead == out[-1][0] == out[-1][1] and not m.group(2):
            out[-1][2].append(line)  # a plain paragraph's next line
        else:
            out.append((lead, m.end() if line.strip() else 0, [line]))
    return out


_HANGING_RE = re.compile(r"( *)([*-] |\S+ {2,})?")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``sessiontree`` command: every subcommand, or only the
    one ``argv`` names."""
    common = argparse.ArgumentParser(add_help=False, formatter_class=_Help)
    common.add_argument("--backend", choices=BACKENDS, default=argparse.SUPPRESS,
                        help="index with the pure-Python or the native (Rust) backend; "
                             "auto = native when built (the default, which $SESSIONTREE_BACKEND sets; this flag wins)")
    common.add_argument("--color", choices=("auto", "always", "never"), default=argparse.SUPPRESS,
                        help="colour output: auto (on a terminal), always, never")
    parser = argparse.ArgumentParser(
        prog="sessiontree", parents=[common], formatter_class=_Help,
        description="Inspect and manipulate Pi coding-agent session files (JSONL v3 trees).",
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # Every subcommand also accepts --backend/--color after its name.
    real_add = sub.add_parser
    commands: dict[str, argparse.ArgumentParser] = {}

    def add_parser(name: str, **kw):  # type: ignore[no-untyped-def]
        kw.setdefault("parents", [common])
        kw["formatter_class"] = _RawHelp if kw.get("formatter_class") is argparse.RawDescriptionHelpFormatter else _Help
        if kw.get("description"):
            kw["description"] = plain_doc(kw["description"])
        p = commands[name] = real_add(name, **kw)
        return p

    parser.set_defaults(_commands=commands)

    sub.add_parser = add_parser  # type: ignore[method-assign]
    named = _named_command(argv) if argv is not None else None
    for name, module in _COMMANDS.items():
        if named is None or name == named:
            importlib.import_module(f"{__package__}.{module}").add_parser(sub)
    return parser


class _Version(argparse.Action):
    """``--version`` after another option (``--color never --version``); ``--version``
    alone is answered before this parser is built (``cli.main``)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from ._version import print_version

        parser.exit(print_version())


def main(argv: list[str] | None = None) -> int:
    """Run the ``sessiontree`` command line (``cli.main``'s, which see).

    Args:
        argv: arguments without the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The exit status: 0 success, 1 failure or problems found (``check``), 2 usage
        error, 130 interrupted.
    """
    from ..errors import InvalidSessionError, SessionError

    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
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
        args.backend = _backend(args)
        _cache_settings()
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
    flag = getattr(args, "backend", None)
    if flag is not None:
        return str(flag)
    try:
        return backend_name(None)
    except ValueError:
        raw = os.environ.get("SESSIONTREE_BACKEND", "")
        raise CliError(f"SESSIONTREE_BACKEND={raw!r} is not a backend: use {', '.join(BACKENDS)} "
                       "(or unset it)", code=2) from None


def _cache_settings() -> None:
    """A bad ``$SESSIONTREE_CACHE_BYTES``, or persisted indexes the library refuses
    (``$SESSIONTREE_INDEX`` or the default folder inside Pi's folders, a bad
    ``$SESSIONTREE_INDEX_BYTES``: ``_caches.index_cache``), is a usage error before
    anything is opened, for every command: an open would raise it, and a listing would
    keep no indexes without a word."""
    from .._caches import index_cache

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
    # Messages may echo file content or paths: escape controls (one line, always).
    try:
        io.err.print(f"sessiontree: error: {safe(message)}", markup=False, highlight=False, soft_wrap=True)
    except BrokenPipeError:  # pragma: no cover
        pass
