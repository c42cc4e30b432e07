"""``sessiontree import``: Claude Code transcripts and Codex rollouts as Pi session trees.

    sessiontree import claude [PATH ...] [--out DIR] [--json]
    sessiontree import codex  [PATH ...] [--out DIR] [--json]

A PATH may be a folder: a Claude Code project folder (its ``*.jsonl`` sessions, each
with its subagents), or for Codex any folder of rollouts (searched below). A file of
the other agent (or a Pi session) is refused with the importer that reads it.

Without a PATH, the agent's own store is read: every source under
``~/.claude/projects`` (``$CLAUDE_CONFIG_DIR``) or ``~/.codex/sessions``
(``$CODEX_HOME``). ``--all`` is not an option of ``import``: on every other command it
names Pi's store, never another agent's (it once meant the agent's store here: that
spelling is refused with a message saying so). Each session is written as a new Pi v3 file in
Pi's folder for its cwd (``--out DIR`` to choose one; ``--to DIR`` is its older
name); sources are only read. Running it again changes nothing, or appends what the sources gained since. One report line per
session, then counts of what could not be mapped, per record type. Exit status 0 when
every source was read (problems in a source are reported, not fatal), 1 otherwise.
"""

from __future__ import annotations

import argparse
import glob
import os
from typing import Any

from rich.text import Text

from ._common import CliError, Io
from ._scope import walk
from ..view import safe


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``import`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("import", help="import Claude Code / Codex sessions as Pi session trees",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", choices=("claude", "codex"), help="which agent's history to import")
    p.add_argument("paths", nargs="*", metavar="PATH", default=None,
                   help="source .jsonl files or folders of them (default: every session of that agent on "
                        "this machine)")
    # The old spelling of the default; --all names Pi's store on every other command.
    p.add_argument("--all", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", "--to", dest="out", metavar="DIR",
                   help="folder for the imported files (default: Pi's folder for each cwd)")
    p.add_argument("--include-incomplete", action="store_true",
                   help="codex: also import a model response a rollout ends in the middle of")
    p.add_argument("--json", action="store_true", help="print one JSON object per imported session, in a list")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree import``: the exit status (see the module docstring)."""
    from ..importers import claude_sources, codex_sources, import_claude, import_codex, not_imported, sources_folder

    if args.all:
        raise CliError(f"import takes no --all (it names Pi's store on the other commands): without a PATH, "
                       f"`sessiontree import {args.source}` imports every {args.source} session on this machine",
                       code=2)
    paths = [f for p in args.paths for f in _files(args.source, p)]
    if not args.paths:
        # What a folder PATH gives (`_files`): a FIFO, a folder or a dangling link named
        # `.jsonl` in the agent's store is no transcript.
        paths = [f for f in (claude_sources() if args.source == "claude" else codex_sources()) if os.path.isfile(f)]
        if not paths:
            home = ("Claude Code's folder: $CLAUDE_CONFIG_DIR, else ~/.claude" if args.source == "claude"
                    else "Codex's folder: $CODEX_HOME, else ~/.codex")
            raise CliError(f"no {args.source} transcripts found under {sources_folder(args.source)} ({home}); "
                           "give the files or folders to import as PATH")
    if args.out in ("-", ""):  # "" was the working folder, written into unasked
        raise CliError("import writes session files into a folder: give --out DIR, not "
                       + ("-" if args.out else "an empty name"), code=2)
    backend = None if args.backend == "auto" else args.backend
    results = []
    seen: set[str] = set()
    for p in paths:
        ap = os.path.abspath(os.path.expanduser(p))
        if ap in seen:
            continue
        seen.add(ap)
        try:
            if args.source == "claude":
                rs = import_claude(ap, to=args.out, backend=backend)
                seen.update(r.source for r in rs)
            else:
                rs = import_codex(ap, to=args.out, backend=backend, include_incomplete=args.include_incomplete)
        except OSError as e:
            # One source that cannot be read (removed since it was listed, no permission)
            # is that source's failure: the others are imported and every one reported.
            rs = [not_imported(ap, f"{ap}: {e.strerror or e}")]
        results.extend(rs)
    if args.json:
        io.write_json([r.to_json() for r in results])
    else:
        for r in results:
            _render(io, r.to_json())
        _summary(io, [r.to_json() for r in results])
    failed = [r for r in results if r.path is None and r.error and "holds no message" not in r.error]
    return 1 if failed else 0


def _files(source: str, path: str) -> list[str]:
    """The source files PATH names: itself, or for a folder the ``.jsonl`` files in it
    (a Claude Code project folder: its sessions, each with its subagents; for Codex,
    every rollout below it, as ``sessions/YYYY/MM/DD/`` holds them).

    Raises:
        CliError: PATH does not exist, is not a regular file (a FIFO: reading it would
            block) nor a folder, or the folder holds no ``.jsonl``.
    """
    p = os.path.expanduser(path)
    if os.path.isdir(p):
        # Codex: every folder below, each once (glob's "**" follows a link that loops,
        # `loop -> .`, into paths without end: the command never ended).
        folders = [p] if source == "claude" else [
            d for d in walk(p) if not any(part.startswith(".") for part in os.path.relpath(d, p).split(os.sep)
                                          if part != ".")]  # glob's rule: hidden folders are not read
        found = sorted(f for d in folders for f in glob.glob(os.path.join(glob.escape(d), "*.jsonl"))
                       if os.path.isfile(f))
        if not found:
            raise CliError(f"{safe(path)}: no .jsonl file in this folder")
        return found
    if not os.path.isfile(p):
        if os.path.exists(p):
            raise CliError(f"{safe(path)}: not a regular file (a FIFO, device or socket is not read)")
        raise CliError(f"{safe(path)}: no such file")
    return [p]


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(d.items()))


def _render(io: Io, r: dict[str, Any]) -> None:
    src = safe(r["source"])
    if r["path"] is None:
        # The error names the source (it stands alone in --json); the line has named it.
        error = (r["error"] or "").removeprefix(f"{r['source']}: ").removesuffix(f": {r['source']}")
        io.print(Text.assemble((src, "bold"), ": ", ("not imported", "yellow"), f": {safe(error)}"))
        return
    state = "new" if r["created"] else ("updated" if r["entriesAdded"] else "unchanged")
    role = f" [{r['role']}]" if r["role"] != "main" else ""
    io.print(Text.assemble((src, "bold"), role, " -> ", safe(r["path"]), "  ",
                           (state, "green" if state != "unchanged" else "dim"),
                           f" (+{r['entriesAdded']} entries, {r['entriesTotal']} in file)"))
    if r["parentSession"]:
        io.print(Text(f"  parentSession: {safe(r['parentSession'])}"))
    for label, key in (("kept as custom", "custom"), ("skipped", "skipped"), ("not mapped", "unmapped"),
                       ("conflicts (left as they are)", "conflicts")):
        if r[key]:
            io.print(Text(f"  {label}: {safe(_counts(r[key]))}"))
    if r["continued"]:
        io.print(Text(f"  continued: {r['continued']} response(s) that grew since the last import"))
    for prob in r["problems"][:10]:
        io.print(Text(f"  problem: {safe(prob)}", style="yellow"))


def _summary(io: Io, rs: list[dict[str, Any]]) -> None:
    written = [r for r in rs if r["path"]]
    added = sum(r["entriesAdded"] for r in rs)
    unmapped: dict[str, int] = {}
    for r in rs:
        for k, v in r["unmapped"].items():
            unmapped[k] = unmapped.get(k, 0) + v
    io.print(Text(f"{len(written)} session(s) imported, {added} entries added, "
                  f"{len(rs) - len(written)} not imported"))
    if unmapped:
        io.print(Text("not mapped, per record type: " + safe(_counts(unmapped))))
