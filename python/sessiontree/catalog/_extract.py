"""One pass over a session file from an offset: the catalog's reader (Python rules).

The one Python home of what a session file tells a picker, a search and a usage
report; ``src/listing.rs`` (``_sessiontree.scan_listing``) applies the same rules in
Rust and returns the same tuple (``tests/test_catalog_extract.py`` holds the two equal
on the corpus, the damaged cases and generated files). :func:`scan_file` picks the
native one when the extension is built and the backend allows it, else the Python one
(``_pyscan``).

Lines are framed and judged by the loader's rules (``_jsonl.iter_lines``,
``_reader.read_line``, ``_reader.is_header``): ``\\n`` only, one CR stripped, BOM
before the header, blank and invalid lines skipped, on a line ended by ``\\n`` every
object of glued ones read and torn fragments skipped, the first JSON object must be
the header, later headers ignored, an entry needs a non-empty string id and the first
definition of an id stands.

What a file gives (Pi's ``buildSessionInfo``, session-manager.ts, for the listing):

* **listing facts** — ``message_count`` (``message`` entries, any role); for user and
  assistant messages that have ``content``: their text (``extractTextContent``: a
  string, or the text blocks' ``text`` joined by a space, JavaScript ``String()`` of a
  non-string, ``""`` for null/absent) joined by spaces when non-empty, the first user
  one as ``first_message``, and the activity time (the message's numeric
  ``timestamp``, else the entry's ISO time; the largest, at least 0); the last
  ``session_info`` entry's ``name`` (not trimmed here), oh-my-pi's title slot counting
  as one before the first entry (``_reader.is_title_slot``).
* **docs** — the searchable text of an entry: a user message's text; an assistant
  message's text, then each ``toolCall`` block's ``name`` and the strings inside its
  ``arguments`` (in ``json.loads`` order); a ``session_info`` name. Non-empty parts are
  joined by ``\\n``; an entry with no text has no doc. Thinking, tool results, bash
  output and summaries are not searched.
* **usage** — an assistant message's ``usage`` object (with the message's
  ``provider``/``model``), a ``usage`` entry's (its ``provider``/``model``), a
  compaction's or branch summary's (no model): ``input``, ``output``, ``cacheRead``,
  ``cacheWrite``, ``totalTokens`` and ``cost.total`` as floats (a JSON number's value,
  else 0).

An entry's *time* is a message's numeric ``timestamp``, else the entry's
``timestamp`` parsed as ``Date.parse`` does, in epoch ms (``None`` if neither).

A scan's usage and entries travel as a *usage log* and an *entries record*
(``_records``: their layouts).
"""

from __future__ import annotations

import os

from .._filestate import FINGERPRINT, open_regular

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a report's start)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ScanResult", "native_scanner", "scan_file"]

ScanResult = tuple["Any", ...]
"""The tuple ``_sessiontree.scan_listing`` returns (see its stub)."""



# ------------------------------------------------------------------- choice
def native_scanner() -> Any:
    """``_sessiontree`` when the native reader is to be used, else ``None``
    (``$SESSIONTREE_BACKEND=python`` or no extension): ``_select.native_module``."""
    from .._select import native_module

    return native_module()


def scan_file(path: str | os.PathLike[str], start: int, prior: bytes, content: bool, limit: int,
              *, texts: bool = False, docs: bool = False, native: Any = None) -> ScanResult:
    """One call's scan of ``path`` from ``start`` (a line start: 0 or an earlier call's
    ``end``), with the rules above.

    Args:
        path: the session file.
        start: where to start.
        prior: the entries record of everything before ``start``.
        content: collect the usage log.
        docs: collect docs and usage rows too (and the usage log).
        texts: collect the listing text (``all_messages_text``, else ``""``): the one
            part of the listing facts that needs every user and assistant message's
            content read, which is most of a listing's work.
        limit: return at the first line end at or past ``start + limit`` (after the
            header).
        native: ``_sessiontree`` to read in Rust (see :func:`native_scanner`), else the
            Python rules read.

    Returns:
        The tuple ``_sessiontree.scan_listing`` documents (``ends`` with
        ``_filestate.FINGERPRINT`` bytes at each end). The Rust reader stops at a
        version 1 header and reports a ``fallback`` for a text whose ``String()`` it does
        not compute; then this reads the file with the Python rules (the same call). A
        version 1 file is read to its end (``old_version`` true, no entries record).

    Raises:
        OSError: the file cannot be read.
    """
    path = os.fspath(path)
    if native is not None:
        r = native.scan_listing(path, start, prior, docs, limit, FINGERPRINT, texts, content or docs)
        if r[3] is None and not r[2]:
            return r  # type: ignore[no-any-return]
    from ._pyscan import scan_stream

    with open_regular(path) as f:
        return scan_stream(f, start, prior, content or docs, limit, texts)
