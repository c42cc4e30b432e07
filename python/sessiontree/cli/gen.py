"""``sessiontree generate``: write a realistic synthetic session (deterministic per seed).

An existing OUT is never written unless ``--force`` is given (a FIFO or device is then
written into as a stream, never replaced; the refusal says which). With ``--sessions N``,
OUT is a sessions root and N sessions of about ``--size`` bytes together are written
into it in Pi's layout (one folder per project, Pi's file names; nothing replaced),
for trying ``ls``, ``search`` and ``usage`` on a history. The session is written to
a temporary file beside OUT and renamed at the end, so an interrupted run leaves no
partial file at OUT (and no temporary file: it is removed on SIGINT, SIGTERM and SIGHUP,
and one left by a killed run is removed by the next run in that folder). OUT may be ``-``
(stdout); a symbolic link is followed.
"""

from __future__ import annotations

import argparse
import os
import stat
from dataclasses import asdict

from rich.text import Text

from ._common import CliError, Io, byte_progress, count_progress
from ..view import human_bytes, safe


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``generate`` to the ``sessiontree`` subcommands."""
    p = sub.add_parser("generate", help="write a synthetic Pi session of a given size (deterministic per seed)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", metavar="OUT",
                   help="file to write (.jsonl; - for stdout), or with --sessions the sessions root to fill")
    p.add_argument("--out", dest="out_flag", metavar="OUT", help="the same as OUT (every command's output flag)")
    p.add_argument("--force", action="store_true",
                   help="replace OUT if it exists (a FIFO or device is written as a stream, never replaced)")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--size", help="target size, e.g. 300MB, 1GiB (the file ends after the entry that reaches it)")
    size.add_argument("--entries", type=int, metavar="N", help="number of entries (header not counted)")
    p.add_argument("--seed", type=int, default=0, help="selects the session; same seed, same bytes (default 0)")
    p.add_argument("--cwd", default="/home/user/project", help="working directory written in the header")
    p.add_argument("--sessions", type=int, metavar="N",
                   help="write N sessions of about --size bytes together into the root OUT, in Pi's layout")
    p.add_argument("--projects", type=int, default=10, metavar="K",
                   help="with --sessions: spread them over K project folders (default 10)")
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, io: Io) -> int:
    """``sessiontree generate``: the exit status (see the module docstring)."""
    from ..generate import generate_session, parse_size  # here: every command imports this module

    if (args.out is None) == (args.out_flag is None):
        raise CliError("give OUT, as an argument or as --out OUT (once)", code=2)
    args.out = args.out if args.out is not None else args.out_flag
    if args.out == "":  # no name: it was taken for a link to nothing, or the working folder
        raise CliError("OUT is empty: name a file (or a folder with --sessions), or - for standard output", code=2)
    try:
        size = parse_size(args.size) if args.size is not None else None
    except ValueError as e:
        raise CliError(str(e), code=2) from None
    if size == 0:
        raise CliError(f"--size {safe(args.size)}: a session needs at least its header; give a size above 0 "
                       "(or --entries 0 for a header-only file)", code=2)
    if args.entries is not None and args.entries < 0:
        raise CliError("--entries must not be negative", code=2)
    if args.sessions is not None:
        return _root(args, io, size)
    out = safe(args.out)
    streamed = args.out == "-"
    if not streamed:
        parent = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(parent):
            raise CliError(f"{out}: folder {safe(parent)} does not exist")
        if os.path.isdir(args.out):
            raise CliError(f"{out}: is a directory")
        if os.path.lexists(args.out) and not args.force:
            raise _exists(args.out)
        streamed = os.path.exists(args.out) and not os.path.isfile(args.out)  # a FIFO, a device
    if streamed:
        io = io.on_err()  # the session goes to stdout or a stream: what is said, to stderr
    try:
        if size is not None:
            with byte_progress(io, f"generating {os.path.basename(out)}", size) as update:
                stats = generate_session(args.out, size_bytes=size, seed=args.seed, cwd=args.cwd,
                                         on_progress=update, overwrite=args.force)
        else:
            with count_progress(io, f"generating {os.path.basename(out)}"):
                stats = generate_session(args.out, entries=args.entries, seed=args.seed, cwd=args.cwd,
                                         overwrite=args.force)
    except FileExistsError:  # created by someone else while we were writing
        raise _exists(args.out) from None
    if args.json:
        # camelCase keys, as every --json of the command line and the file's dicts.
        data = {_camel(k): v for k, v in asdict(stats).items()}
        data["mbPerSecond"] = stats.mb_per_s
        io.write_json(data)
        return 0
    io.print(Text.assemble(
        ("wrote ", ""), ("standard output" if args.out == "-" else out, "bold"),
        f": {human_bytes(stats.bytes)} ({stats.bytes:,} bytes), {stats.entries:,} entries in "
        f"{stats.seconds:.2f} s ({stats.mb_per_s:,.{0 if stats.mb_per_s >= 10 else 1}f} MB/s)"))
    roles = ", ".join(f"{k} {v:,}" for k, v in sorted(stats.by_role.items(), key=lambda kv: -kv[1]))
    io.print(f"  messages: {roles or 'none'}")
    if stats.entries == 0:
        io.print("  header only" + (f": the header line alone reaches --size {safe(args.size)}" if size else ""))
    io.print(f"  {stats.branch_points:,} branch points, {stats.branch_summaries:,} branch summaries, "
             f"{stats.compactions:,} compactions, {stats.labels:,} labels; leaf {stats.leaf_id}; seed {args.seed}")
    return 0


def _root(args: argparse.Namespace, io: Io, size: int | None) -> int:
    """``generate --sessions N ROOT``: a history in Pi's layout."""
    from ..generate import generate_root

    if size is None or args.force:
        raise CliError("--sessions takes --size (their size together), not --entries or --force", code=2)
    if args.sessions < 1 or args.projects < 1:
        raise CliError("--sessions and --projects must be at least 1", code=2)
    if size < 1000 * args.sessions:
        raise CliError(f"--size {safe(args.size)} is too small for {args.sessions:,} sessions (1 KB each at least)",
                       code=2)
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise CliError(f"{safe(args.out)}: exists and is not a folder")
    try:
        with count_progress(io, "generating sessions") as update:
            written = generate_root(args.out, sessions=args.sessions, total_bytes=size, projects=args.projects,
                                    seed=args.seed, on_progress=update)
    except FileExistsError as e:
        # The same seed names the same files: a second run into one root meets the first's.
        raise CliError(f"{safe(str(e.filename))}: already exists; not overwritten (generate into an empty "
                       "folder, or with another --seed)") from None
    total = sum(s.bytes for s in written)
    if args.json:
        io.write_json({"root": args.out, "sessions": len(written), "bytes": total,
                       "files": [s.path for s in written]})
        return 0
    io.print(Text.assemble(("wrote ", ""), (f"{len(written):,} sessions", "bold"),
                           f" ({human_bytes(total)}) in {min(args.projects, len(written))} project folder(s) under ",
                           (safe(args.out), "bold")))
    return 0


def _exists(path: str) -> CliError:
    """The refusal of an existing OUT without ``--force``, saying what ``--force`` would
    do to what is there (``_output.open_output``'s rules, CONTRACT §4 "Command
    outputs"): a regular file is replaced, a FIFO or device written into as a stream."""
    out = safe(path)
    try:
        mode = os.stat(path).st_mode  # follows a symbolic link, as the output does
    except FileNotFoundError:
        return CliError(f"{out}: already exists (a symbolic link to nothing); not written "
                        "(use --force to create the file it points to)")
    except OSError:
        mode = stat.S_IFREG
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else None if stat.S_ISREG(mode) else "not a regular file")
    if kind == "not a regular file":
        return CliError(f"{out}: already exists and is not a regular file, a FIFO or a device; not written")
    if kind is not None:
        return CliError(f"{out}: already exists ({kind}); not written (use --force to write the session into it "
                        f"as a stream: {kind} is never replaced)")
    if os.path.islink(path):
        return CliError(f"{out}: already exists (a symbolic link); not overwritten "
                        "(use --force to replace the file it points to)")
    return CliError(f"{out}: already exists; not overwritten (use --force to replace it)")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)
