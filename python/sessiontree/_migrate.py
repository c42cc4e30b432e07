"""Version 1 / 2 session files -> version 3, as Pi's ``migrateV1ToV2`` / ``migrateV2ToV3``.

Pi (session-manager.ts) parses every line of the file into ``fileEntries`` (header at
index 0; blank and unparseable lines dropped) and mutates those objects in place:

* v1 -> v2: every ``session`` record gets ``version = 2``; every other record gets
  ``id`` (new) and ``parentId`` (the previous record's id; ``null`` for the first), a
  linear chain in file order. A compaction whose ``firstKeptEntryIndex`` is a number
  gets ``firstKeptEntryId = fileEntries[index].id`` when that record exists and is not
  a ``session`` record (index 0 is the header; a record later in the file has no id
  yet, so the key stays unset; its own index gives its own id), then
  ``firstKeptEntryIndex`` is deleted. A non-number ``firstKeptEntryIndex`` is left
  alone.
* v2 -> v3: ``session`` records get ``version = 3``; a ``message`` whose
  ``message.role`` is ``"hookMessage"`` gets role ``"custom"``.

JavaScript property order follows from the mutation: a key that exists keeps its
place, a new key goes last (``..."tokensBefore":1000,"id":..,"parentId":..,
"firstKeptEntryId":..}``; a v1 header gets ``"version":3`` at its end). Python dicts
behave the same under assignment, so the records are mutated the same way and written
back with ``encode_entry``.

Differences from Pi, on purpose:

* Ids are deterministic: ``blake2b(header id, record position, attempt)`` as 8
  lowercase hex chars, collision-checked, so loading the same bytes twice gives the
  same ids (Pi uses random ids, and its v1 collision check never records the ids it
  hands out).
* Lines are read with the loader's rules 1-6 (LF framing, BOM, invalid UTF-8 replaced,
  torn-line recovery, NaN literals invalid); JSON values that are not objects are
  dropped and not counted as records (Pi would count them, then crash on them).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ._backend import LoadIssue
from ._js import UNDEFINED
from ._jsonl import encode_entry
from ._load import Loader
from ._reader import header_version, is_old_version

__all__ = ["Migration", "migrate_image", "migrate_records"]



@dataclass
class Migration:
    """The result of migrating an old image.

    Attributes:
        image: the version 3 image: header line + one line per record, each ended by LF.
        from_version: the version the input declared, as Pi compares it
            (``_reader.header_version``: 1 when absent, 1 for ``true``).
        issues: problems found reading the input (line numbers of the input).
        line_map: for each line of ``image`` (index 0 = line 1, the header), the
            ``(line, offset)`` of the input line it came from.
        source_digest: BLAKE2b of the input bytes (a pending migration checks that
            the file still starts with them before it migrates a grown file again).
        header: the input's header as it was read, before migration.
    """

    image: bytes
    from_version: float
    issues: list[LoadIssue]
    line_map: list[tuple[int, int]]
    source_digest: bytes = b""
    header: dict[str, Any] = field(default_factory=dict)


def _new_id(seed: str, position: int, used: set[str]) -> str:
    attempt = 0
    while True:
        digest = hashlib.blake2b(f"{seed}\x00{position}\x00{attempt}".encode("utf-8", "surrogatepass"), digest_size=4)
        candidate = digest.hexdigest()
        if candidate not in used:
            used.add(candidate)
            return candidate
        attempt += 1


def _record_at(records: list[Any], index: Any) -> Any:
    """``fileEntries[index]`` with JavaScript's array indexing on a number."""
    if isinstance(index, float):
        if not index.is_integer():
            return None
        index = int(index)
    if 0 <= index < len(records):
        return records[index]
    return None


def migrate_records(records: list[dict[str, Any]]) -> float:
    """Migrate parsed records (header first) to version 3 in place, as Pi does.

    Args:
        records: ``fileEntries``: the header, then every later object of the file in
            file order (extra ``session`` records included).

    Returns:
        The version the header declared as Pi compares it (``header_version``: 1
        when absent or ``null``). Nothing changes when it is not below 3 (NaN too).
    """
    header = records[0]
    version = header_version(header)
    if not is_old_version(header):  # NaN is not below 3 either
        return version
    if version < 2:
        seed = str(header.get("id"))
        used: set[str] = set()
        prev: str | None = None
        for position, rec in enumerate(records):
            if rec.get("type") == "session":
                rec["version"] = 2
                continue
            rec["id"] = _new_id(seed, position, used)
            rec["parentId"] = prev
            prev = rec["id"]
            if rec.get("type") == "compaction":
                index = rec.get("firstKeptEntryIndex")
                if isinstance(index, (int, float)) and not isinstance(index, bool):
                    target = _record_at(records, index)
                    if target is not None and target.get("type") != "session":
                        target_id = target.get("id", UNDEFINED)
                        if target_id is UNDEFINED:
                            # JavaScript assigns undefined: the key is not written.
                            rec.pop("firstKeptEntryId", None)
                        else:
                            rec["firstKeptEntryId"] = target_id
                    del rec["firstKeptEntryIndex"]
    for rec in records:
        if rec.get("type") == "session":
            rec["version"] = 3
        elif rec.get("type") == "message":
            message = rec.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
    return version


def migrate_image(data: bytes, path: str | None = None) -> Migration:
    """Read an old (version 1 or 2) image and produce its version 3 image.

    Args:
        data: the file's bytes.
        path: the file, for error messages.

    Returns:
        A :class:`Migration`. The image is what Pi's rewrite would write (same records,
        keys and order; ids deterministic instead of random).

    Raises:
        InvalidSessionError: no valid header (loader rule 6).
    """
    loader = Loader(path, records=True)
    loader.feed(bytes(data))
    loader.finish()
    assert loader.header is not None and loader.records is not None
    header = dict(loader.header)  # before migrate_records changes it in place
    records = [loader.header] + [obj for obj, _, _ in loader.records]
    line_map = [loader.header_pos] + [(line, offset) for _, line, offset in loader.records]
    version = migrate_records(records)
    image = b"".join(encode_entry(rec) + b"\n" for rec in records)
    return Migration(
        image=image,
        from_version=version,
        issues=loader.report(),
        line_map=line_map,
        source_digest=hashlib.blake2b(bytes(data)).digest(),
        header=header,
    )
