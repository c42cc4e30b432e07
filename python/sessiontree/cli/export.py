"""``sessiontree export``: a session in another format.

Formats (--format):
  html      one self-contained page that works offline: the tree in a sidebar (click
            any entry to read its branch) and the conversation of one path (Markdown
            text, code, tool calls and results folded, images inline, model and usage
            per message, compactions and branch summaries where they sit)
  markdown  one path as Markdown, to read, share or feed to a model (--detail)
  parquet   sessions as a Parquet dataset for DuckDB, Polars and Spark: the sessions
            of the scope below; --out DIR is the dataset's folder, updated in place
            (only changed sessions rewritten; docs/TABLES.md); needs the `arrow` extra
            (pyarrow)

Scope of parquet (as for ls, search, usage, index and check): FILE, each a session
file or a folder with all its subfolders; without one, the current directory's
sessions in Pi's store (--cwd DIR: DIR's); --all, every project in Pi's store.
--catalog and --no-cache are taken as by the other commands (every format): an
export reads every session file in full whatever the catalog holds.

For html and markdown, the path is root → the current leaf, or root → --leaf ID (a unique
prefix of an id is enough). Output goes to --out FILE, else to stdout (also --out -). A
regular FILE is replaced whole or not at all (written beside it, then renamed); a
symbolic link is followed; a FIFO or a device (/dev/stdout) is written as a stream,
never replaced.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .._output import open_output
from . import _scope
from .._backend import skipped_lines
from ._common import CliError, Io, load_report, open_session, skip_note, spinner
from ..view import human_bytes, human_seconds, safe
from ._leaf import resolve_entry

__all__ = ["add_parser", "run", "FORMATS", "Format", "Job"]


@dataclass
class Job:
    """One export: what a format's writer gets.

    Attributes:
        sm: the open ``SessionManager``.
        args: the parsed command line (the format's own options included).
        leaf_id: the last entry of the path to export (``None``: the session has none).
        out: where the bytes go (binary, buffered).
        source: the session file as the user named it.
    """

    sm: Any
    args: argparse.Namespace
    leaf_id: str | None
    out: BinaryIO
    source: str
    _structure: Any = field(default=None, repr=False)

    @property
    def structure(self) -> Any:
        """The session's ``_structure.Structure`` (made on first use)."""
        if self._structure is None:
            from ..view import structure_of

            self._structure = structure_of(self.sm)
        return self._structure

    @property
    def leaf(self) -> int | None:
        """The leaf's entry number in :attr:`structure` (``None``: no leaf)."""
        return self.structure.number(self.leaf_id) if self.leaf_id is not None else None

    def write_text(self, text: str) -> None:
        self.out.write(text.encode("utf-8", "backslashreplace"))


@dataclass(frozen=True)
class Format:
    """One ``--format``: its help, its own options and its writer.

    Attributes:
        help: one line for ``--help``.
        add_options: adds the format's options to its argument group; each option's
            default must be ``None`` (so that giving it with another format is caught).
        options: the ``dest`` names of those options.
        write: writes the export of one session; returns a short summary
            (``"3,871 entries"``).
        binary: the output is not text (never written to a terminal).
        run_many: instead of ``write``, a format that takes many sessions (files,
            folders) runs the whole command itself and returns the exit status.
    """

    help: str
    add_options: Callable[[Any], None]
    options: tuple[str, ...]
    write: Callable[[Job], str] | None = None
    binary: bool = False
    run_many: Callable[[argparse.Namespace, Io], int] | None = None


def _html_options(group: Any) -> None:
    group.add_argument("--branches", choices=("auto", "all", "path"), default=None,
                       help="which entries the page holds: all (every branch readable), path (only the chosen "
                            "path; for big sessions), auto = all for session files up to 32 MiB (default)")


def _write_html(job: Job) -> str:
    from ..export.html import write_html

    stats = write_html(job.structure, job.write_text, leaf=job.leaf, branches=job.args.branches or "auto",
                       source=job.source, write_bytes=job.out.write)
    return (f"{stats.entries:,} entries in the tree, {stats.rendered:,} rendered "
            f"({'every branch' if stats.branches == 'all' else 'the path'}), {stats.path:,} on the path")


def _markdown_options(group: Any) -> None:
    group.add_argument("--detail", choices=("full", "no-tools", "user-only"), default=None,
                       help="full: everything on the path (default); no-tools: the conversation's text "
                            "without thinking, tool calls and results; user-only: what the user wrote")


def _write_markdown(job: Job) -> str:
    from ..export.markdown import write_markdown

    stats = write_markdown(job.structure, job.write_text, leaf=job.leaf, detail=job.args.detail or "full",
                           source=job.source, write_bytes=job.out.write)
    return f"{stats.sections:,} sections from {stats.path:,} entries on the path"


def _parquet_options(group: Any) -> None:
    group.add_argument("--json", dest="as_json", action="store_const", const=True, default=None,
                       help="print what was done as JSON")


def _run_parquet(args: argparse.Namespace, io: Io) -> int:
    from .export_parquet import run_parquet

    if args.out in (None, "-"):
        raise CliError("--format parquet writes a folder: give --out DIR", code=2)
    scope = _scope.resolve(args, io)
    return run_parquet(scope.sources, where=scope.where + scope.empty_hint(), out=args.out, backend=args.backend,
                       as_json=bool(args.as_json), io=io)


FORMATS: dict[str, Format] = {
    "html": Format("one offline page: tree sidebar and the conversation of a path",
                   _html_options, ("branches",), _write_html),
    "markdown": Format("one path as Markdown (--detail full | no-tools | user-only)",
                       _markdown_options, ("detail",), _write_markdown),
    "parquet": Format("sessions as a Parquet dataset (files, folders, --all, --cwd) into --out DIR",
                      _parquet_options, ("as_json",), binary=True, run_many=_run_parquet),
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``export`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("export", help="write a session as HTML (tree + conversation) or Markdown (one path), "
                                      "or sessions as Parquet",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", default=None,
                   help="session file (.jsonl); parquet takes several files and folders (default: the current "
                        "directory's sessions in Pi's store)")
    p.add_argument("--format", required=True, choices=tuple(FORMATS), help="the output format (see above)")
    p.add_argument("--leaf", metavar="ID", help="export the path to this entry (an id or a unique prefix) "
                                                "instead of the path to the current leaf")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout (a regular file is replaced whole, atomically; "
                                                "a FIFO or device is written as a stream); parquet: the dataset's folder")
    scope = p.add_argument_group("parquet scope")
    _scope.add_arguments(scope, paths=False)  # type: ignore[arg-type]
    _scope.add_catalog_options(scope)  # type: ignore[arg-type]  # accepted as everywhere; export reads every file
    for name, fmt in FORMATS.items():
        fmt.add_options(p.add_argument_group(f"{name} options"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree export``: the exit status."""
    fmt = FORMATS[args.format]
    for other, ofmt in FORMATS.items():
        if other == args.format:
            continue
        for dest in ofmt.options:
            if getattr(args, dest, None) is not None and dest not in fmt.options:
                flag = {"as_json": "json"}.get(dest, dest)
                raise CliError(f"--{flag.replace('_', '-')} is an option of --format {other}, not {args.format}",
                               code=2)
    _scope.refuse_bad_catalog(args)
    if fmt.run_many is not None:
        return fmt.run_many(args, io)
    for flag in ("all", "cwd", "this"):
        if getattr(args, flag, None) not in (None, False):
            raise CliError(f"--{flag} chooses sessions for --format parquet; --format {args.format} exports one "
                           "session file: name it", code=2)
    if len(args.paths) != 1:
        raise CliError(f"--format {args.format} exports one session file: name exactly one", code=2)
    args.file = args.paths[0]
    write = fmt.write
    assert write is not None  # a format has a writer or runs the command itself
    to_stdout = args.out in (None, "-")
    if to_stdout and (fmt.binary or args.format == "html") and _stdout_is_terminal():
        raise CliError(f"not writing {args.format} to a terminal: give --out FILE or redirect stdout", code=2)
    sm, _ = open_session(io, args.file, args.backend)
    with sm:
        leaf_id, st = sm.leaf_id, None
        if args.leaf is not None:
            leaf_id, st = resolve_entry(io, sm, args.file, args.leaf)
        job_args = dict(sm=sm, args=args, source=args.file, _structure=st)
        t0 = time.perf_counter()
        if not to_stdout:
            try:
                if os.path.samefile(args.out, args.file):
                    # --out replaces its file: never the session being exported (a typo away).
                    raise CliError(f"{safe(args.out)}: is the session being exported; give another --out", code=2)
            except OSError:
                pass  # nothing there yet (or it cannot be looked at): open_output decides
        with contextlib.ExitStack() as stack:
            try:
                target = stack.enter_context(open_output(args.out or "-"))
            except IsADirectoryError:
                raise CliError(f"{safe(args.out)}: is a directory") from None
            except FileNotFoundError as e:
                raise CliError(f"{safe(e.filename or args.out)}: no such folder") from None
            job = Job(leaf_id=leaf_id, out=target.file, **job_args)  # type: ignore[arg-type]
            _with_structure(io, job)
            if target.path == "-":
                write(job)
                _note_skipped(io, args.file, sm)
                return 0
            with spinner(io, f"writing {os.path.basename(target.path)}"):
                summary = write(job)
        # A stream (a FIFO, /dev/stdout) may be stdout itself: the note goes to stderr then.
        note = io.err if target.streamed else io
        note.print(f"wrote {safe(args.out)}{' (a stream)' if target.streamed else ''} ({args.format}, "
                   f"{human_bytes(target.bytes_written)}, {summary}) in {human_seconds(time.perf_counter() - t0)}",
                   markup=False, highlight=False)
        _note_skipped(io, args.file, sm)
    return 0


def _note_skipped(io: Io, path: str, sm: Any) -> None:
    """The damaged lines the export left out, said on stderr (``check`` lists them)."""
    skipped = skipped_lines(load_report(sm))
    if skipped:
        io.note(skip_note(path, skipped))


def _with_structure(io: Io, job: Job) -> None:
    with spinner(io, "reading the tree"):
        job.structure  # noqa: B018 - computed here, under the spinner


def _stdout_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        return False
