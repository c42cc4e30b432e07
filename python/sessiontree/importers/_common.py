"""What both importers share: reading a source, the plan, and writing it as a Pi session.

An importer never writes while it reads. It turns one source file into one or more
:class:`SessionPlan`\\ s (a header and a list of :class:`PlannedEntry`, each with the id,
parent and timestamp it will have), and :func:`apply_plan` writes a plan through
:class:`~sessiontree.SessionManager` with those ids and timestamps injected through the
manager's test hook (``_new_id`` / ``_now`` / ``_new_session_id``). Because the plan is a
pure function of the source, re-importing the same source plans the same entries: those
already in the imported file are skipped, and a source that grew adds only its new
entries at the end of the file.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import uuid
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

from .._jsonl import BOM, MAX_DEPTH, depth_exceeds, encode_entry, has_invalid_utf8, iter_lines, values_equal
from .._reader import read_line
from .._places import session_dir_for_cwd, session_file_name
from .._shapes import session_name
from .._manager import SessionManager
from .._storage import SessionWriter, open_regular, synced_once
from .._time import iso_from_ms, parse_iso_ms
from ..errors import (EntryExistsError, LoadReportWarning, SessionError, SessionFileExistsError, SessionLockedError,
                      StaleSessionError)

__all__ = [
    "ImportResult",
    "PlannedEntry",
    "Report",
    "SessionPlan",
    "SourceLine",
    "apply_plan",
    "settle_parent_links",
    "derive_id",
    "derive_uuid",
    "session_id_of",
    "target_path",
    "target_path_or_none",
    "read_source",
    "zero_usage",
]

EPOCH_ISO = "1970-01-01T00:00:00.000Z"
_UUID_NS = uuid.UUID("6f1c7a52-3b0e-5d4c-9a8e-2f5b1d0c7e43")
MAX_PROBLEMS = 50
"""How many problem descriptions (with line numbers) a report keeps; counts are exact."""


# ---------------------------------------------------------------------------- ids, times


def derive_id(*parts: object) -> str:
    """A stable entry id: the first 16 hex chars of SHA-256 over ``parts`` joined by ``\\x1f``.

    Sixteen hex chars (64 bits) rather than Pi's eight, so ids derived for thousands of
    sessions do not collide; CONTRACT §1 accepts any non-empty string as an id.
    """
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


def derive_uuid(*parts: object) -> str:
    """A stable UUID (version 5, in a namespace of this project) for a derived session id.

    ``uuid.uuid5`` of the parts joined by ``\x1f``, except that the name is encoded with
    ``surrogatepass``: a lone surrogate in an untrusted id, or a file name that is not
    UTF-8 (``os.fsdecode``'s escapes), names a UUID instead of raising
    ``UnicodeEncodeError``; every other name gives ``uuid5``'s UUID, as before.
    """
    name = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return str(uuid.UUID(bytes=hashlib.sha1(_UUID_NS.bytes + name).digest()[:16], version=5))


_FILE_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def session_id_of(source: str, value: str | None, fallback: str) -> str:
    """The Pi session id for a source session: ``value`` when it is a plain token
    (letters, digits, ``.``, ``_``, ``-``; at most 128; not starting with ``.`` or
    ``-``), else a UUID derived from it (or from ``fallback`` when ``value`` is
    ``None``). The id becomes part of a file name (``_places.session_file_name``), so
    a ``/``, ``..`` or NUL from an untrusted transcript must never reach it."""
    if value is not None and _FILE_SAFE_ID.fullmatch(value):
        return value
    return derive_uuid(source, "session-id", fallback if value is None else value)


def iso_of(value: object) -> str | None:
    """A source timestamp as Pi writes one (``YYYY-MM-DDTHH:mm:ss.sssZ``), or ``None``.

    Accepts ISO-8601 strings (any fraction, ``Z`` or an offset) and epoch numbers
    (seconds below 10^11, else milliseconds).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        ms = int(value * 1000) if abs(value) < 1e11 else int(value)
        if not 0 <= ms <= 253402300799999:
            return None
        return iso_from_ms(ms)
    parsed = parse_iso_ms(value)
    if parsed is None or not 0 <= parsed <= 253402300799999:
        return None
    return iso_from_ms(parsed)


def ms_of(iso: str) -> int:
    """Epoch milliseconds of an ISO string made by :func:`iso_of`."""
    ms = parse_iso_ms(iso)
    return int(ms) if ms is not None else 0


def compact_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact separators, non-ASCII raw; nested to any
    depth (a source value nested deeper than ``json.dumps`` recurses is spelt by the
    writer's iterative encoder, lone surrogates escaped as JavaScript does)."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        return encode_entry(value).decode("utf-8")


def zero_usage() -> dict[str, Any]:
    """Pi's usage object with every count and cost zero."""
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def make_usage(input_: int, output: int, cache_read: int, cache_write: int, cost_total: float | None = None) -> dict[str, Any]:
    """Pi's usage object (``totalTokens`` = the sum of the four counts).

    Neither source records a per-component dollar cost, so every ``cost`` field is 0,
    except ``cost.total`` when the source states a total (Claude Code's ``costUSD``).
    """
    u = zero_usage()
    u["input"], u["output"], u["cacheRead"], u["cacheWrite"] = input_, output, cache_read, cache_write
    u["totalTokens"] = input_ + output + cache_read + cache_write
    if cost_total:
        u["cost"]["total"] = cost_total
    return u


def as_int(value: object) -> int:
    """A token count from the source: non-negative ints (and integral floats), else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return max(int(value), 0)
    return 0


# ---------------------------------------------------------------------------- reading


@dataclass
class SourceLine:
    """One decoded JSON object of a source file (1-based ``line`` number)."""

    line: int
    record: dict[str, Any]


def read_source(path: str, report: Report) -> list[SourceLine]:
    """Read a JSONL source file; never writes to it and never raises for bad content.

    Lines are read by the loader's rule (CONTRACT §2 rule 3, ``_reader.read_line`` with
    ``foreign``): a line that is one JSON object is a record; a complete line that is
    not is read as objects glued with no ``\n`` between them, every complete one a
    record in order (same line number), and torn bytes among them, each run skipped
    and reported (``torn fragment``); behind torn bytes only an object that cannot be
    a value nested in the torn record counts, so a content block or a
    ``toolUseResult`` of a cut record never becomes a record. A last line without
    ``\n`` is read only if it is one JSON value (else ``truncated last line``: the
    agent may still be writing it; a later import reads it once complete). Lines with
    no object are skipped and counted (``invalid JSON``); invalid UTF-8 is replaced by
    U+FFFD and counted.

    Raises:
        OSError: the file cannot be read.
    """
    with open_regular(path) as f:
        data = f.read()
    if data.startswith(BOM):
        data = data[len(BOM):]
    out: list[SourceLine] = []
    for line_no, _offset, raw, tail in iter_lines(data):
        if not raw.strip():
            continue
        if has_invalid_utf8(raw):
            report.problem("invalid UTF-8 (replaced)", line_no)
        try:
            read = read_line(raw, complete=not tail, foreign=True)
        except ValueError:
            if tail:
                report.skip("truncated last line (not complete yet)", line_no)
            else:
                report.skip("invalid JSON", line_no)
            continue
        for start, end in read.fragments:
            report.skip("torn fragment", None, problem=False)
            report.problem(f"torn fragment (bytes {start}-{end}, {end - start} bytes) skipped", line_no)
        for piece in read.pieces:
            if not isinstance(piece.value, dict):
                report.skip("not a JSON object", line_no)
                continue
            out.append(SourceLine(line_no, piece.value))
    report.records += len(out)
    return out


# ---------------------------------------------------------------------------- the plan


@dataclass
class Report:
    """What an import did with the source's records, by kind, with counts.

    Attributes:
        records: JSON objects read from the source.
        imported: source record types mapped to a Pi equivalent (counts of records).
        custom: source record types with no Pi equivalent, kept as ``custom`` entries
            (``customType`` ``"<source>:<record type>"``).
        skipped: records not imported, keyed by record type and reason.
        unmapped: parts of records that could not be mapped (content block types,
            fields), each kept in a ``custom`` entry or dropped as the key says.
        problems: the first :data:`MAX_PROBLEMS` problems in the source, each with its
            line number (the counts in ``skipped`` are complete).
    """

    records: int = 0
    imported: Counter[str] = field(default_factory=Counter)
    custom: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    unmapped: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0

    def problem(self, what: str, line: int | None) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"line {line}: {what}" if line is not None else what)

    def skip(self, key: str, line: int | None = None, *, problem: bool = True) -> None:
        self.skipped[key] += 1
        if problem and line is not None:
            self.problem(key, line)

    def merged_into(self, other: Report) -> None:
        other.records += self.records
        other.imported.update(self.imported)
        other.custom.update(self.custom)
        other.skipped.update(self.skipped)
        other.unmapped.update(self.unmapped)
        for p in self.problems:
            if len(other.problems) < MAX_PROBLEMS:
                other.problems.append(p)
        other.problem_count += self.problem_count


@dataclass
class PlannedEntry:
    """One entry to write: its kind, id, parent, timestamp and kind-specific fields.

    ``kind`` is a Pi entry type (``message``, ``custom_message``, ``compaction``,
    ``model_change``, ``thinking_level_change``, ``session_info``, ``custom``); ``fields``
    holds the entry's own keys as the file spells them (``message``; ``customType``,
    ``content``, ``display``, ``details``; ``summary``, ``firstKeptEntryId``,
    ``tokensBefore``; ``provider``, ``modelId``; ``thinkingLevel``; ``name``; ``data``).
    """

    kind: str
    id: str
    parent: str | None
    timestamp: str
    fields: dict[str, Any]
    line: int | None = None

    @property
    def is_assistant(self) -> bool:
        m = self.fields.get("message")
        return self.kind == "message" and isinstance(m, dict) and m.get("role") == "assistant"


@dataclass
class SessionPlan:
    """A Pi session to write: header values and entries in the order they are written.

    Attributes:
        source: ``"claude-code"`` or ``"codex"``.
        source_path: the file read.
        session_id: the header ``id`` (the source's session / thread id, or derived).
        cwd: the header ``cwd``.
        timestamp: the header ``timestamp`` (the source session's first time).
        parent_session: header ``parentSession`` (path of the parent's imported file).
        entries: planned entries; a parent always comes before its children.
        report: counts of what was mapped, kept, skipped, unmapped.
        role: ``"main"`` or ``"subagent"`` / ``"sidechain"`` / ``"fork"``.
        parent_source_id: the parent's session id; written to the header as
            ``parentSessionId`` when ``parent_session`` names no file (reported).
    """

    source: str
    source_path: str
    session_id: str
    cwd: str
    timestamp: str
    parent_session: str | None = None
    entries: list[PlannedEntry] = field(default_factory=list)
    report: Report = field(default_factory=Report)
    role: str = "main"
    parent_source_id: str | None = None

    @property
    def message_count(self) -> int:
        return sum(1 for e in self.entries if e.kind == "message")


@dataclass(frozen=True)
class ImportResult:
    """What importing one source session did.

    Attributes:
        source: the source file.
        session_id: the imported session's header id.
        path: the Pi session file written or brought up to date; ``None`` when nothing
            was written (the source holds no message, or it failed: see ``error``).
        created: the file is new (``False``: it existed and was appended to or left).
        entries_added: entries appended by this run (0 on an unchanged re-import).
        entries_total: entries the imported file holds now.
        parent_session: the header's ``parentSession`` (``None`` if none or unresolved).
        role: ``"main"``, ``"subagent"``, ``"sidechain"`` (Claude Code) or ``"fork"``.
        imported / custom / skipped / unmapped: per record type (or reason) counts, as
            in :class:`Report`.
        conflicts: entries whose id the imported file already holds with other content
            that could not be brought up to date by appending (left as they are).
        continued: assistant messages that grew in the source since the last import;
            their new blocks were appended as a continuation message (usage: the
            difference).
        problems: the first problems found in the source, with line numbers.
        error: why nothing was written, if so.
    """

    source: str
    session_id: str
    path: str | None
    created: bool
    entries_added: int
    entries_total: int
    parent_session: str | None
    role: str
    imported: dict[str, int]
    custom: dict[str, int]
    skipped: dict[str, int]
    unmapped: dict[str, int]
    conflicts: dict[str, int]
    continued: int
    problems: list[str]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the result (camelCase keys, as the CLI prints it)."""
        return {
            "source": self.source, "sessionId": self.session_id, "path": self.path,
            "created": self.created, "entriesAdded": self.entries_added,
            "entriesTotal": self.entries_total, "parentSession": self.parent_session,
            "role": self.role, "imported": self.imported, "custom": self.custom,
            "skipped": self.skipped, "unmapped": self.unmapped, "conflicts": self.conflicts,
            "continued": self.continued, "problems": self.problems, "error": self.error,
        }


# ---------------------------------------------------------------------------- writing


class _Writer(SessionManager):
    """SessionManager whose new ids, times and session id are the plan's (the test hook)."""

    _next_id = ""
    _next_ts = EPOCH_ISO
    _next_session = ""

    def _new_id(self, taken: Any) -> str:
        return self._next_id

    def _now(self) -> str:
        return self._next_ts

    def _new_session_id(self) -> str:
        return self._next_session or derive_uuid("unused", self._next_ts)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def target_folder(plan: SessionPlan, to: str | os.PathLike[str] | None) -> str:
    """The folder the plan's file goes to: ``to``, else Pi's folder for the session's cwd.

    The cwd is a transcript's JSON string: a lone surrogate in it (a ``\\udxxx``
    escape) is U+FFFD in the folder's name, as Node (Pi) encodes a path; it cannot be
    a file name as it is.

    Raises:
        ValueError: the folder would hold a NUL (a cwd with one, without ``to``): no
            file system names it, and Pi's own ``mkdirSync`` refuses it too.
    """
    if to is not None:
        folder = os.path.abspath(os.path.expanduser(os.fspath(to)))
    elif "\x00" in plan.cwd:
        raise ValueError("the session's cwd holds a NUL character: Pi has no folder for it (give --out DIR)")
    else:
        folder = session_dir_for_cwd(_LONE_SURROGATE.sub("\ufffd", plan.cwd))
    if "\x00" in folder:
        raise ValueError(f"{folder!r}: a folder name cannot hold a NUL character")
    return folder


def target_path(plan: SessionPlan, to: str | os.PathLike[str] | None) -> str:
    """Where the plan's session file is (or will be): an existing file of this session
    id in the folder, else ``<folder>/<timestamp>_<id>.jsonl`` (Pi's file name).

    Raises:
        ValueError: as :func:`target_folder`.
    """
    folder = target_folder(plan, to)
    exact = os.path.join(folder, session_file_name(plan.timestamp, plan.session_id))
    if os.path.exists(exact):
        return exact
    tail = "_" + plan.session_id + ".jsonl"
    for cand in sorted(glob.glob(os.path.join(glob.escape(folder), "*" + glob.escape(tail)))):
        # Pi's name is <time>_<id>.jsonl and its time holds no "_": the file of session
        # "x_b" also ends with "_b.jsonl", and is not session "b"'s.
        if "_" not in os.path.basename(cand)[: -len(tail)]:
            return cand
    return exact


def target_path_or_none(plan: SessionPlan, to: str | os.PathLike[str] | None) -> str | None:
    """:func:`target_path`, or ``None`` where the plan's session has no folder (a link
    to it is then left out; :func:`apply_plan` says why for the session itself)."""
    try:
        return target_path(plan, to)
    except ValueError:
        return None


def settle_parent_links(plans: list[SessionPlan], to: str | os.PathLike[str] | None) -> None:
    """Keep each plan's ``parentSession`` only when it names a file: one that exists, or
    one these plans write (a plan with a message). A link to a file no import wrote (a
    subagent imported alone, its session never imported, or a session with nothing to
    import, whose file name would carry a 1970 time) is dropped; the parent's session
    id stays in ``parent_source_id`` and the header's ``parentSessionId``."""
    written = {target_path_or_none(p, to) for p in plans if p.message_count}
    for plan in plans:
        parent = plan.parent_session
        if parent is None or parent in written or os.path.isfile(parent):
            continue
        plan.parent_session = None
        plan.report.unmapped["parentSession (the parent's file was not imported; its id kept)"] += 1


def _file_fields(p: PlannedEntry) -> dict[str, Any]:
    f = dict(p.fields)
    if p.kind == "session_info":
        f["name"] = session_name(str(f.get("name", "")))
    return f


def _same(existing: dict[str, Any], p: PlannedEntry, parent: str | None) -> bool:
    if existing.get("type") != p.kind or existing.get("parentId") != parent:
        return False
    # Values nest up to the 1,024 levels a line may: compared without recursion.
    return all(values_equal(existing.get(k), v) for k, v in _file_fields(p).items())


def _append(mgr: _Writer, p: PlannedEntry) -> None:
    f = p.fields
    k = p.kind
    if k == "message":
        mgr.append_message(f["message"])
    elif k == "custom_message":
        if "details" in f:
            mgr.append_custom_message_entry(f["customType"], f["content"], f["display"], f["details"])
        else:
            mgr.append_custom_message_entry(f["customType"], f["content"], f["display"])
    elif k == "compaction":
        if "details" in f:
            mgr.append_compaction(f["summary"], f["firstKeptEntryId"], f["tokensBefore"], f["details"])
        else:
            mgr.append_compaction(f["summary"], f["firstKeptEntryId"], f["tokensBefore"])
    elif k == "model_change":
        mgr.append_model_change(f["provider"], f["modelId"])
    elif k == "thinking_level_change":
        mgr.append_thinking_level_change(f["thinkingLevel"])
    elif k == "session_info":
        mgr.append_session_info(f["name"])
    elif k == "custom":
        if "data" in f:
            mgr.append_custom_entry(f["customType"], f["data"])
        else:
            mgr.append_custom_entry(f["customType"])
    else:  # pragma: no cover - planners only make the kinds above
        raise ValueError(f"unknown planned entry kind {k!r}")


def _sub_usage(a: Any, b: Any) -> dict[str, Any]:
    out = zero_usage()
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
        out[key] = max(as_int(a.get(key)) - as_int(b.get(key)), 0)
    ca, cb = a.get("cost") or {}, b.get("cost") or {}
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        va, vb = ca.get(key, 0), cb.get(key, 0)
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and va > vb:
            out["cost"][key] = va - vb
    return out


def _add_usage(a: Any, b: Any) -> dict[str, Any]:
    out = zero_usage()
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
        out[key] = as_int(a.get(key)) + as_int(b.get(key))
    ca, cb = a.get("cost") or {}, b.get("cost") or {}
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        va, vb = ca.get(key, 0), cb.get(key, 0)
        out["cost"][key] = (va if isinstance(va, (int, float)) else 0) + (vb if isinstance(vb, (int, float)) else 0)
    return out


def _problem_line(problem: str) -> int:
    """Sort key of a problem text: its line number (``line N: ...``), else 0."""
    head = problem.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 0


def continuation_id(entry_id: str, blocks_before: int) -> str:
    """Id of the continuation message of ``entry_id`` that starts after ``blocks_before`` blocks."""
    return derive_id("continuation", entry_id, blocks_before)


def _header_extra(plan: SessionPlan) -> dict[str, Any]:
    """Header keys beyond Pi's: the parent's id when no file of it is linked."""
    if plan.parent_session is None and plan.parent_source_id is not None:
        return {"parentSessionId": plan.parent_source_id}
    return {}


def apply_plan(plan: SessionPlan, to: str | os.PathLike[str] | None = None, *, backend: str | None = None) -> ImportResult:
    """Write a plan as a Pi session file, or bring the existing imported file up to date.

    A new file is made through ``SessionManager.create`` + ``new_session`` (Pi's rule:
    written at the first assistant message). A plan without any assistant message
    would never be written that way (nor one whose header carries ``parentSessionId``,
    which Pi's header has no place for), so its header is written first, alone, with the
    project's own encoder and writer (one exclusive create), and every entry is then
    appended through ``SessionManager.open``: the file holds exactly what Pi would
    have written had it persisted the session. An existing file (same session id in
    the folder) is opened and only the planned entries whose ids it lacks are
    appended; reading it never changes it, so an unchanged source leaves it byte for
    byte as it was.

    An assistant message whose id the file holds with fewer content blocks (the source
    grew while the response was being written) gets a continuation: a new assistant
    message holding the new blocks and the usage difference, so that usage still
    counts once. Any other difference is counted in ``conflicts`` and left alone.

    Args:
        plan: from an importer.
        to: folder for the file (default: Pi's folder for the session's cwd).
        backend: ``auto`` / ``python`` / ``native`` for the manager.

    Returns:
        The :class:`ImportResult`; ``path`` is ``None`` (and ``error`` set) when the plan
        has no message entry or the file could not be written.
    """
    rep = plan.report
    conflicts: Counter[str] = Counter()
    added = 0
    continued = 0
    created = False

    def result(path: str | None, total: int, error: str | None = None) -> ImportResult:
        return ImportResult(
            source=plan.source_path, session_id=plan.session_id, path=path, created=created,
            entries_added=added, entries_total=total, parent_session=plan.parent_session,
            role=plan.role, imported=dict(rep.imported), custom=dict(rep.custom),
            skipped=dict(rep.skipped), unmapped=dict(rep.unmapped), conflicts=dict(conflicts),
            continued=continued, problems=sorted(rep.problems, key=_problem_line), error=error,
        )

    _drop_too_deep(plan)
    if plan.message_count == 0:
        return result(None, 0, "the source session holds no message: nothing to import")

    try:
        path = target_path(plan, to)
    except ValueError as e:
        return result(None, 0, str(e))
    mgr: _Writer
    try:
        if os.path.exists(path):
            mgr = _Writer.open(path, backend=backend)  # type: ignore[assignment]
            if mgr.session_id != plan.session_id:
                mgr.close()
                return result(None, 0, f"{path} exists and holds another session ({mgr.session_id})")
        elif any(p.is_assistant for p in plan.entries) and not _header_extra(plan):
            created = True
            mgr = _Writer.create(plan.cwd, session_dir=os.path.dirname(path), backend=backend)  # type: ignore[assignment]
            mgr._next_ts = plan.timestamp
            mgr.new_session(id=plan.session_id, parent_session=plan.parent_session)
            if mgr.session_file != path:  # pragma: no cover - same name rule
                mgr.set_session_file(path)
        else:
            created = True
            header: dict[str, Any] = {"type": "session", "version": 3, "id": plan.session_id,
                                      "timestamp": plan.timestamp, "cwd": plan.cwd}
            if plan.parent_session is not None:
                header["parentSession"] = plan.parent_session
            header.update(_header_extra(plan))
            writer = SessionWriter(path)
            writer.create(encode_entry(header) + b"\n")
            writer.close()
            mgr = _Writer.open(path, backend=backend)  # type: ignore[assignment]
    except (OSError, SessionError) as e:
        return result(None, 0, f"{path}: {e}")

    remap: dict[str, str] = {}
    before = len(mgr)  # entries the file held (a new file: none yet)
    try:
        # One fsync for the file, at its close, not one per entry: the source can be
        # read again, and a run cut short is finished by the next (only the entries
        # the file lacks are appended).
        with synced_once(), mgr:
            for p in plan.entries:
                parent = remap.get(p.parent, p.parent) if p.parent is not None else None
                if p.kind == "compaction":
                    fk = p.fields.get("firstKeptEntryId")
                    if isinstance(fk, str) and fk in remap:
                        p = PlannedEntry(p.kind, p.id, p.parent, p.timestamp,
                                         {**p.fields, "firstKeptEntryId": remap[fk]}, p.line)
                if p.id in mgr:
                    existing = mgr[p.id]
                    if _same(existing, p, parent):
                        continue
                    if p.is_assistant and existing.get("type") == "message":
                        outcome = _continue(mgr, p, existing, remap)
                        if outcome == "continued":
                            continued += 1
                            added += 1
                        elif outcome == "conflict":
                            conflicts[p.kind] += 1
                        continue
                    conflicts[p.kind] += 1
                    continue
                if parent is not None and parent not in mgr:
                    rep.problem(f"entry {p.id}: parent {parent} was not written; made a root", p.line)
                    parent = None
                if parent is None:
                    mgr.reset_leaf()
                else:
                    mgr.branch(parent)
                mgr._next_id = p.id
                mgr._next_ts = p.timestamp
                try:
                    _append(mgr, p)
                except _WHOLE_FILE:
                    raise  # the file's, not the entry's: no later entry can be written either
                except EntryExistsError:
                    # Another import of this source appended it since this one read the
                    # file (its lines were indexed at this first append): as for the
                    # entries found before, the same one is left be, another is a conflict.
                    if not _same(mgr[p.id], p, parent):
                        conflicts[p.kind] += 1
                    continue
                except (ValueError, SessionError) as e:
                    rep.problem(f"entry {p.id} not written: {e}", p.line)
                    rep.skip(f"{p.kind} (refused by the writer)")
                    continue
                added += 1
            total = len(mgr)
            written = mgr.session_file
    except (OSError, SessionError) as e:
        if isinstance(e, (SessionLockedError, SessionFileExistsError)):
            # Met at this run's first write (the lock is held from then on, and a new
            # file is made whole or not at all): nothing of it reached the file; what
            # is there is another writer's.
            added, created = 0, False
        else:
            # What this run added is what the file holds now: appends before the failure
            # are on disk, entries Pi's writer still held in memory (before the first
            # assistant message) are not.
            added = max(0, _entries_on_disk(path, backend) - before)
            created = created and os.path.exists(path)  # a first write that failed made no file
        said = str(e)  # the writer's errors name the file already (trial 59b: twice)
        return result(None, 0, said if said.startswith(path) else f"{path}: {said}")
    if written is None or not os.path.exists(written):  # pragma: no cover - guarded above
        return result(None, 0, "nothing was written")
    return result(written, total)


# Errors of the session file as a whole (another writer holds it, made it first, or
# changed it): the import of that session stops and says so. Any other error of an
# append refuses that entry alone.
_WHOLE_FILE = (SessionLockedError, SessionFileExistsError, StaleSessionError)


def _drop_too_deep(plan: SessionPlan) -> None:
    """Leave out (reported) each planned entry nested deeper than :data:`MAX_DEPTH`:
    a source value may sit deeper in its Pi entry than in its record (Claude Code's
    ``toolUseResult`` becomes ``message.details``; a Codex call's ``arguments`` text is
    parsed), and such a line is one no reader accepts (CONTRACT §2 rule 3). Its
    children hang from its parent instead. Done before writing, so that whether a
    file is made (at its first assistant message) is decided on what is written."""
    if not any(depth_exceeds(p.fields, MAX_DEPTH) for p in plan.entries):
        return
    rep = plan.report
    up: dict[str, str | None] = {}
    kept: list[PlannedEntry] = []
    for p in plan.entries:
        parent = p.parent
        while parent is not None and parent in up:
            parent = up[parent]
        if depth_exceeds(p.fields, MAX_DEPTH):
            up[p.id] = parent
            rep.problem(f"entry {p.id} not written: nested deeper than {MAX_DEPTH} levels", p.line)
            rep.skip(f"{p.kind} (nested deeper than {MAX_DEPTH} levels)")
            continue
        kept.append(p if parent == p.parent else PlannedEntry(p.kind, p.id, parent, p.timestamp, p.fields, p.line))
    plan.entries[:] = kept


def _entries_on_disk(path: str, backend: str | None) -> int:
    """Entries the file at ``path`` holds (0 if it cannot be read)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoadReportWarning)
            with SessionManager.open(path, backend=backend) as sm:
                return len(sm)
    except (OSError, SessionError):
        return 0


def _continue(mgr: _Writer, p: PlannedEntry, existing: dict[str, Any], remap: dict[str, str]) -> str:
    """Bring an assistant message the source has grown up to date (see :func:`apply_plan`)."""
    planned = p.fields["message"]
    old = existing.get("message")
    if not isinstance(old, dict) or not isinstance(old.get("content"), list):
        return "conflict"
    content = list(old["content"])
    usage: Any = old.get("usage")
    last = p.id
    while True:
        cid = continuation_id(p.id, len(content))
        cont = mgr.get_entry(cid)
        if cont is None:
            break
        m = cont.get("message")
        if not isinstance(m, dict) or not isinstance(m.get("content"), list) or not m["content"]:
            break
        content.extend(m["content"])
        usage = _add_usage(usage, m.get("usage"))
        last = cid
    remap[p.id] = last
    want = planned.get("content")
    if not isinstance(want, list):
        return "conflict"
    if values_equal(content, want):
        return "same" if _add_usage(usage, None) == _add_usage(planned.get("usage"), None) else "conflict"
    if len(want) <= len(content) or not values_equal(want[: len(content)], content):
        return "conflict"
    message = dict(planned)
    message["content"] = want[len(content):]
    message["usage"] = _sub_usage(planned.get("usage"), usage)
    mgr.branch(last)
    mgr._next_id = continuation_id(p.id, len(content))
    mgr._next_ts = p.timestamp
    new_id = mgr.append_message(message)
    remap[p.id] = new_id
    return "continued"


def unique_paths(paths: Iterator[str] | list[str]) -> list[str]:
    """Absolute paths without repeats, in the order given."""
    seen: set[str] = set()
    out = []
    for p in paths:
        a = os.path.abspath(p)
        if a not in seen:
            seen.add(a)
            out.append(a)
    return out
