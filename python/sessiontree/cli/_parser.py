"""The argument parser of the ``sessiontree`` command (:func:`build_parser`): its
options, and each subcommand's from the subcommand's module, imported only when the
command line names it or asks for help.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm command's start)
if TYPE_CHECKING:
    from typing import Any

from .._select import BACKENDS
from ._version import CHOICES, COLORS, print_version
from ..view import plain_doc

__all__ = ["build_parser"]

# Each command's module, in the order `--help` lists them. A command line naming one
# imports that module only: the others' imports (Textual, the exporters, the
# benchmark tools) are no part of `sessiontree search`'s time.
_COMMANDS = {"info": "info", "tree": "tree", "context": "context", "ls": "ls", "search": "search", "usage": "usage",
             "index": "index", "check": "check", "fork": "fork", "migrate": "migrate", "generate": "gen",
             "bench": "bench", "import": "import_", "browse": "browse", "export": "export"}
_VALUED = tuple(CHOICES)  # the top-level options that take a value


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
    common.add_argument("--color", choices=COLORS, default=argparse.SUPPRESS,
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
            importlib.import_module(f".{module}", __package__).add_parser(sub)
    return parser


class _Version(argparse.Action):
    """``--version`` where :func:`._version.asks_version` left it to argparse (``--vers``,
    or after words that check does not read): the same line."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.exit(print_version())
