"""Stub of the Rust extension ``sessiontree._sessiontree`` (hand-written; checked with
``python -m mypy.stubtest sessiontree._sessiontree``).

Entries are numbered 0.. in file order (accepted entries only; the header is not one).
Ids are ``str`` (lone surrogates kept, as ``json.loads`` gives them). Lines leave Rust
as ``bytes`` copies, never views of the memory map.
"""

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, final

__all__ = [
    "birth_ns",
    "count_newlines",
    "entries_path",
    "folder_files",
    "index_build",
    "index_merge",
    "index_snippets",
    "html_articles",
    "html_escape",
    "json_unsafe",
    "judge_text",
    "markdown_html",
    "markdown_sections",
    "number_column",
    "plain_columns",
    "plain_json",
    "safe_block",
    "scan_listing",
    "search_files",
    "search_tables",
    "segment_pieces",
    "stat_unchanged",
    "usage_report",
    "usage_sums",
    "walk_folders",
    "HitKeys",
    "HitsJson",
    "Index",
    "SearchScan",
    "UsageScan",
    "__version__",
    "ENTRY_TYPES",
    "ROLES",
    "TOKEN_KEYS",
    "ISSUE_KINDS",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_TORN_CANDIDATES",
    "FINGERPRINT",
    "CLIP_WHOLE_KEYS",
    "TABLE_LIMITS",
]
__version__: str

# The core's tables (``tests/test_tables.py`` holds them equal to Python's).
ENTRY_TYPES: tuple[str, ...]
"""The entry types Pi defines, in the core's table order (``schema.ENTRY_TYPES``)."""
ROLES: tuple[str, ...]
"""The message roles the role column names (``schema.MESSAGE_ROLES``)."""
TOKEN_KEYS: tuple[str, ...]
"""The ``message.usage`` fields ``Index.usage_totals`` sums, in order (``_usage.TOKEN_KEYS``)."""
ISSUE_KINDS: tuple[str, ...]
"""The load-report kinds (the string values of ``_backend.IssueKind``)."""
MAX_DEPTH: int
"""Deepest nesting a line may have (``_jsonl.MAX_DEPTH``)."""
MAX_INT_DIGITS: int
"""Most digits of an integer literal (``_jsonl.MAX_INT_DIGITS``)."""
MAX_TORN_CANDIDATES: int
"""``{"type":`` positions rule 4 tries on an invalid line (``_load._MAX_TORN_CANDIDATES``)."""
FINGERPRINT: int
"""Bytes at each end of an opened image the staleness check holds the file to (``_filestate.FINGERPRINT``)."""
CLIP_WHOLE_KEYS: tuple[str, ...]
"""Top-level keys whose values ``Index.lines_clipped`` never cuts (``_clip.WHOLE_KEYS``)."""
TABLE_LIMITS: tuple[int, int, int, int]
"""Most UTF-8 bytes of ``text``, ``result_text``, ``arguments`` and the other string columns
``Index.table_rows`` gives (``_rows.MAX_TEXT``, ``MAX_RESULT``, ``MAX_ARGUMENTS``, ``MAX_FIELD``)."""

def count_newlines(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> int:
    """Count LF bytes of the file at ``path`` (memchr over the mapped file)."""

_ListingHeader = tuple[str, bytes | tuple[int, int, bytes] | None]
_ListingFacts = tuple[int, str | None, str, tuple[bool, str | None], float | None]
_ListingDoc = tuple[int, str, str, float | None, str]
_ListingUsage = tuple[
    tuple[int, str, str, float | None, str, str, str], tuple[float, float, float, float, float, float]
]
_ListingScan = tuple[
    tuple[int, bool, int, int, bytes],
    _ListingHeader,
    bool,
    str | None,
    _ListingFacts,
    bytes,
    int,
    list[_ListingDoc],
    list[_ListingUsage],
    bytes,
]

def scan_listing(
    path: str | os.PathLike[str], start: int, prior: bytes, content: bool, limit: int, fingerprint: int,
    texts: bool, usage_log: bool = False,
) -> _ListingScan:
    """One pass over a session file from ``start`` for a catalog (``src/listing.rs``;
    the rules are ``catalog._extract``'s; releases the GIL).

    ``prior``: the entries record of the lines before ``start`` (the earlier calls'
    ``entries`` concatenated). ``content``: collect docs and usage too. Stops at the
    first line end at or past ``start + limit`` once the header is found.
    ``fingerprint``: bytes at each end of ``[0, end)`` to return (``_filestate.FINGERPRINT``).
    ``texts``: collect the listing text (else ``facts``' ``texts`` is ``""``).
    ``usage_log``: collect the usage log (``catalog._extract``'s layout).

    Returns:
        ``((end, eof, tail, bytes_read, ends), header, old_version, fallback, facts, entries,
        entry_count, docs, usage, log)``: ``end`` where the next call starts, ``eof`` the
        data ran out, ``tail`` the length of an unterminated last piece that was read;
        ``header`` ``("before", None)`` (resumed), ``("found", bytes)`` or ``("missing",
        (line, offset, bytes) | None)``; ``old_version`` a version 1 header (the scan
        stopped there); ``fallback`` why the Python rules must read this file, or
        ``None``; ``facts`` ``(message_count, first_message, texts, (name_seen, name),
        activity)``; ``entries`` this call's entries record; ``entry_count`` entries so
        far; ``docs`` ``(seq, id, kind, time, text)``; ``usage`` ``((seq, id, stamp, time,
        kind, provider, model), (input, output, cacheRead, cacheWrite, totalTokens,
        cost))``; ``log`` this call's usage log (empty without ``usage_log``).

    Raises:
        OSError: the file cannot be read.
    """

def birth_ns(fd: int) -> int:
    """The birth time (``statx``'s ``stx_btime``) in ns since the epoch of the file open
    as ``fd`` (not closed), 0 where the file system keeps none or ``fd`` cannot be
    ``statx``ed (``src/source.rs``, ``birth_ns``)."""

def folder_files(folder: bytes) -> list[tuple[str, str, tuple[int, int, int, int, int] | None]]:
    """The ``*.jsonl`` regular files of ``folder`` (symlinks followed), or the one file
    ``folder`` names when it is not a directory, in no particular order (``src/stat.rs``,
    the rule of ``catalog._files.folder_files``): ``(name, path, stat)``, the name and
    the path (``folder`` joined with the name) decoded as ``os.fsdecode`` does, the stat
    ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`` or ``None`` where the file
    cannot be ``stat``-ed. A folder that cannot be read lists nothing."""

def walk_folders(root: bytes, seen: set[tuple[int, int]]) -> list[str]:
    """``root`` and every folder under it (``src/stat.rs``, ``walk``; the rule of
    ``cli._scope.walk``): the root, then each folder's subfolders (symlinks followed)
    sorted by name, from the root down, as ``os.fsdecode`` names them. A folder whose
    ``(st_dev, st_ino)`` is in ``seen``, or that cannot be ``stat``-ed, is left out with
    its tree; each listed one is added to ``seen``.

    Raises:
        TypeError, OverflowError: ``seen`` holds something else than two integers
            from 0 to 2**64 - 1.
    """

def stat_unchanged(path: bytes, dev: int, ino: int, size: int, mtime_ns: int) -> bool:
    """``True`` iff ``stat`` of ``path`` succeeds and shows exactly this ``st_dev``,
    ``st_ino``, ``st_size`` and ``st_mtime_ns`` (``src/stat.rs``); a change, an error,
    or a name ``stat`` cannot take (a NUL, over 4095 bytes) is ``False``.

    Raises:
        OverflowError: a number outside the field's range (negative dev/ino/size).
    """

def json_unsafe(data: bytes) -> bool:
    """``True`` iff ``data`` holds the UTF-8 of a character JSON output escapes (DEL, C1
    controls, ALM, LRM/RLM, U+2028-U+202E, U+2066-U+2069: ``view._text``'s rule), found
    with ``memchr`` (``src/escape.rs``)."""

def plain_columns(columns: Iterable[Iterable[str]], right: Sequence[bool],
                  sizes: Sequence[Sequence[int] | None]) -> str | None:
    """``view._cells.plain_columns(columns, right)`` written natively (``src/table.rs``):
    the first ``len(right)`` columns, ``sizes[k]`` each cell's width in terminal cells
    of column ``k`` (``None``: its cells are ASCII); ``None`` when a cell holds a lone
    surrogate (left to the Python statement).

    Raises:
        TypeError: a cell that is not a ``str``.
        ValueError: columns of unequal lengths, sizes not one a cell, or fewer sizes
            than columns."""

def number_column(values: Iterable[float], style: str) -> list[str] | None:
    """``view._figures.number_column(values, style)`` written natively
    (``src/figures.rs``); ``None`` when a value is anything but an exact ``int`` within
    64 bits or a ``float``.

    Raises:
        ValueError: an unknown style."""

def plain_json(value: Any, indent: bool, nodes: int) -> bytes | None:
    """``view._text.to_json_bytes(value, indent=indent)``'s bytes (orjson's, then the
    escapes of DEL, C1, bidi controls and U+2028/U+2029), written natively
    (``src/value.rs``); ``None`` when ``value`` holds anything but exact ``dict``s with
    ``str`` keys, ``list``s, ``tuple``s, ``str``, ``bool``, ``None``, integers within 63
    bits and floats that are zero or of 1e-4 <= |x| < 1e16, nests past 100 levels,
    holds a lone surrogate, or holds more than ``nodes`` values."""

def safe_block(text: str) -> str:
    """The escaping rule's block mode (``view/_escape.py``: ``safe_block``) in one pass
    (``src/escape.rs``): CR, CRLF, U+2028 and U+2029 as LF, LF and TAB kept, controls,
    bidi and invisible format characters and lone surrogates as ``\\x1b``, ``\\u202e``,
    ``\\U000e0041``; ``text`` itself when nothing changes."""

def html_articles(lines: list[bytes], ids: list[str], labels: list[str | None], nums: list[int], shown: bool,
                  outs: list[bool], kinds: list[str]) -> list[bytes | None]:
    """What the HTML export writes for each entry whose JSON text is in ``lines``
    (``ids`` the ids the index holds for them, ``labels`` their current labels, ``nums``
    their entry numbers, ``outs`` whether each is outside the model's context, ``shown``
    whether they are the path shown, ``kinds`` the view's ``KINDS``; ``src/section.rs``):
    its ``<article>`` as UTF-8, ``None`` for an entry the core leaves to the Python path
    (``export/html.py``).

    Raises:
        ValueError: lists of different lengths.
    """

def html_escape(text: str) -> str:
    """``html.escape(text, quote=True)`` in one pass (``src/escape.rs``); ``text`` itself
    when it holds none of ``&<>"'``."""

def markdown_sections(lines: list[bytes], ids: list[str], labels: list[str | None], detail: str) -> list[bytes | None]:
    """What the Markdown export writes for each entry whose JSON text is in ``lines``
    (``ids`` the ids the index holds for them, ``labels`` their current labels;
    ``src/section.rs``), as UTF-8: ``"\\n"`` and its section, empty when ``detail``
    (``full``, ``no-tools``, ``user-only``) leaves it out, ``None`` for an entry the
    core leaves to the Python path (``export/markdown.py``).

    Raises:
        ValueError: an unknown ``detail``, or lists of different lengths.
    """

def markdown_html(text: str) -> str:
    """Message text (Markdown) as the HTML export shows it (``src/markdown.rs``):
    CommonMark with GFM tables and strikethrough, raw HTML as escaped text, links only
    to ``http:``, ``https:`` and ``mailto:`` (with ``rel="noopener noreferrer
    nofollow"``; any other stays text), images as links to them (``[image: ALT]``),
    headings one level down (``# A`` is an ``<h2>``, at most ``<h6>``).

    Raises:
        UnicodeEncodeError: ``text`` holds a lone surrogate (``view.clean`` escapes them).
    """

def entries_path(entries: bytes) -> list[int]:
    """Entry numbers from the root to the last entry of an entries record (the
    current path, by the loader's parent and cycle rules)."""

@final
class Index:
    """The index of one session image (see ``_native.NativeIndex`` for the adapter).

    Every method that reads the index raises ``StaleSessionError`` when a read met the
    cut of a persisted index it views in place (``check_persisted``; ``src/python.rs``,
    ``PyIndex::reading``): the answer may hold the zeros such a read gives.
    """

    @staticmethod
    def open(
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        cache: tuple[str | bytes | os.PathLike[str] | os.PathLike[bytes], int, int, float] | None = None,
    ) -> Index:
        """Index a session file (releases the GIL). With ``cache`` = ``(folder, budget
        bytes, min file bytes, settle seconds)``, through the persisted indexes kept in
        that folder (``src/persist/``): read from there when one is provably this
        file's, the bytes it gained since scanned, written there when due.

        Raises:
            OSError: the file cannot be opened or mapped.
            InvalidSessionError: no valid header (loader rule 6); ``reason`` is a code
                (``empty``, ``not_json``, ``not_object``, ``no_id``, ``type:<JSON text
                of the type>`` or ``type``), worded by ``_reader.header_error`` (``problem_from_code``).
        """
    @staticmethod
    def from_image(data: bytes) -> Index:
        """Index an in-memory image (releases the GIL).

        Raises:
            InvalidSessionError: no valid header (``reason`` a code, as for ``open``).
        """
    @property
    def needs_migration(self) -> bool:
        """The header's ``version`` is absent, null or below 3: only it was indexed."""
    def header(self) -> bytes:
        """The header line's bytes."""
    def title_slot(self) -> bytes | None:
        """oh-my-pi's title slot before the header (its bytes as the file holds them
        now), or ``None``."""
    def issues(self) -> list[tuple[str, int | None, int | None, tuple[str, ...], int | None, str | None]]:
        """``load_report`` items ``(kind, line, offset, ids, n, text)``, by line then rule:
        the facts ``_backend.describe_issue`` words the ``detail`` from."""
    def __len__(self) -> int: ...
    def ids(self, ns: Sequence[int] | None = None) -> list[str]:
        """Ids of entries ``ns`` (all entries in file order when ``None``)."""
    def id(self, n: int) -> str:
        """The id of entry ``n`` (``IndexError`` if out of range)."""
    def find(self, entry_id: object) -> int | None:
        """Entry number of ``entry_id``; ``None`` if absent or not a ``str``."""
    def line(self, n: int) -> bytes:
        """The JSON text of entry ``n`` (no CR/LF)."""
    def lines(self, ns: Sequence[int] | None = None) -> list[bytes]:
        """Lines of entries ``ns`` (all entries when ``None``)."""
    def lines_clipped(self, ns: Sequence[int], keep: int) -> list[bytes]:
        """Lines of entries ``ns`` (read and checked as :meth:`lines` reads them) with
        every string value of more than ``keep`` characters cut to its first ``keep``;
        object keys and the top-level ``id``, ``parentId`` and ``type`` stay whole, and
        a line that is not valid UTF-8 is left whole (``src/clip.rs``).

        Raises:
            IndexError: a number is out of range.
            OverflowError: ``keep`` is negative.
            StaleSessionError: a line no longer holds the bytes indexed.
        """
    def last(self) -> int | None:
        """The last accepted entry."""
    def file_leaf(self) -> int | None:
        """The leaf on open (loader rule 13): after a ``leaf`` entry its ``targetId``
        (``None``: before the first entry), after any other entry that entry."""
    def file_id(self) -> tuple[int, int] | None:
        """``(st_dev, st_ino)`` of the file the index reads; ``None`` for an image in memory."""
    def fingerprint(self) -> tuple[int, bytes] | None:
        """``(image length, its first and last FINGERPRINT bytes)`` as the open's scan read
        them; ``None`` for an image in memory or when the scan did not keep them."""
    @staticmethod
    def open_kept(
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        cache: tuple[str | bytes | os.PathLike[str] | os.PathLike[bytes], int, int, float],
    ) -> Index | None:
        """``Index.open(path, cache)`` when the folder keeps an index of the file that is
        still its own (the bytes the file gained since are scanned), else ``None``
        without scanning the file (releases the GIL).

        Raises:
            OSError: the file cannot be read.
            StaleSessionError: the file shrank while its growth was read.
        """
    def listing(self, fingerprint: int) -> _ListingScan | None:
        """What ``scan_listing(path, 0, b"", False, limit, fingerprint, False)`` gives
        for the bytes up to the end of the last line this index covers (``limit`` that
        end), read from the index and a few lines (the header, a title slot, ``leaf``
        entries, the last ``session_info``, the user messages up to the first with
        text): ``src/listing/indexed.rs``. ``None`` when the index cannot give it so (no
        header, a version 1 file, an index that ends inside a line).

        Raises:
            StaleSessionError: a line read changed since it was indexed, or the file shrank.
            OSError: a read failed.
        """
    def check_persisted(self) -> bool:
        """Whether the index reads a persisted index's file in place (``src/col.rs``).

        Raises:
            StaleSessionError: that file was cut short or written over under it (by
                another program; CONTRACT.md §6).
        """
    def memory(self) -> list[tuple[str, int]]:
        """Heap bytes each part of the index holds (the benchmarks' breakdown)."""
    def image_len(self) -> int:
        """Bytes of the image consumed (stops before a pending last piece)."""
    def has_pending_tail(self) -> bool:
        """An invalid last piece without LF waits for the rest of its line."""
    def children(self, n: int) -> list[int]:
        """Children of entry ``n`` in file order."""
    def path(self, n: int) -> list[int]:
        """Entry numbers from the root down to ``n``."""
    def path_in(self, n: int, items: list[Any]) -> list[Any] | None:
        """``items[k]`` for each entry ``k`` from the root down to ``n``, or ``None`` if
        one of them is ``None`` or past the end of ``items``.

        Raises:
            IndexError: ``n`` is out of range.
        """
    def children_in(self, n: int, items: list[Any]) -> list[Any] | None:
        """``items[k]`` for each child ``k`` of entry ``n`` in file order, or ``None`` if
        one of them is ``None`` or past the end of ``items``.

        Raises:
            IndexError: ``n`` is out of range.
        """
    def path_ids(self, n: int) -> list[str]:
        """Ids from the root down to ``n``."""
    def tree(self) -> tuple[list[int], list[int], list[int]]:
        """``(roots, start, children)``: children of ``e``, oldest first, are
        ``children[start[e]:start[e + 1]]``; roots in file order."""
    def entries_of_type(self, type_name: str, start: int = 0) -> list[int]:
        """Entries of one of ``ENTRY_TYPES`` numbered ``start`` or later, in file order
        (``ValueError`` for another type)."""
    def long_numbers(self, ns: list[int]) -> list[int]:
        """Those of entries ``ns`` whose line has a number with a run of 19 or more
        digits not after ``.`` (``_jsonl.decode_line`` looks for such runs only in
        these), in the order given."""
    def label_fields(self, start: int = 0) -> list[tuple[int, str | bytes | None, str | bytes | None, str | bytes | None]]:
        """``(entry, targetId, label, timestamp)`` of the label entries numbered ``start``
        or later, in file order: a string value as ``str``, another as its JSON text
        (``bytes``), ``None`` when the key is absent (only those lines are read;
        ``StaleSessionError`` for one changed in the file)."""
    def shape(self) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes, list[tuple[int, str]]]:
        """The tree's shape as packed columns in native byte order: ``(parents`` i32,
        -1 for a root; ``kinds`` u8, the index in ``ENTRY_TYPES`` (``len(ENTRY_TYPES)``:
        another type); ``roles`` u8, 0 none, 1 + the index in ``ROLES``,
        ``len(ROLES) + 1`` another string; ``timestamps`` i64 ms, ``-2**63`` none;
        ``roots`` u32; ``start`` u32 (n + 1 items); ``children`` u32 in ``getTree``
        order ``)``, and the other role strings as ``[(entry, role)]``."""
    def parent(self, n: int) -> int | None:
        """The parent of entry ``n`` (``None`` for a root)."""
    def kind(self, n: int) -> str | None:
        """The ``type`` of entry ``n`` when it is one of ``ENTRY_TYPES``, else ``None``."""
    def leaves(self) -> list[int]:
        """Entries without children, in file order."""
    def with_prefix(self, prefix: object, limit: int) -> tuple[list[int], int]:
        """The first ``limit`` entries whose id starts with ``prefix`` (file order) and
        how many there are; ``([], 0)`` for a non-``str``."""
    def usage_totals(
        self,
    ) -> tuple[tuple[int | float, ...], int | float, list[tuple[bytes | None, bytes | None, int]], int] | None:
        """``((input, output, cacheRead, cacheWrite, totalTokens), cost, [(provider,
        model, count)], messages)`` over the assistant lines (provider and model as
        JSON text, ``None`` when absent), summed while the lines were indexed (nothing
        is read), or ``None`` when a number cannot be summed exactly there
        (``src/usage.rs``)."""
    def context_plan(
        self, leaf: int | None
    ) -> tuple[list[int], int | None, int | None, int | None, list[int], list[tuple[int, int]], int | None]:
        """``(messages, compaction, thinking, model, entries, edits, active_tools)``
        entry numbers at ``leaf``: the entries that may contribute after the leading
        compaction, the compaction, the thinking-level and model entries, every context
        entry, ``(target, edit)`` pairs (the ``context_edit`` that applies to a context
        entry) and the last ``active_tools_change`` on the path."""
    def append_line(self, line: bytes) -> int | None:
        """Index one line appended to the image; its entry number, or ``None`` if it
        was not accepted (then reported)."""
    def refresh(self) -> int:
        """Index complete lines appended since ``image_len()``, read from the file the
        index holds (none for ``from_image`` until ``attach``); how many entries were
        added. File identity is the caller's to check.

        Raises:
            StaleSessionError: the file is shorter than ``image_len()``.
        """
    def attach(self, path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> None:
        """Hold the file at ``path`` for later refreshes (an image from ``from_image``
        that has been written there); a no-op when the index holds a file already."""
    def close(self) -> None:
        """Release the map; later reads raise ``SessionError``."""
    def table_rows(self, start: int, stop: int) -> dict[str, bytes]:
        """The decoded columns of the ``entries`` and ``tool_calls`` tables for entries
        ``start`` to ``stop - 1`` (``_rows.py``'s rules; the GIL is released
        while the lines are read and decoded), as ``bytes`` in Arrow layouts
        (little-endian; bitmaps LSB first, 1 = valid/true), by name: for each string
        column (``type``, ``role``, ``provider``, ``model``, ``stop_reason``, ``text``,
        ``custom_type``, ``label``, ``target_id``, ``first_kept_entry_id``,
        ``image_data``, ``image_mime``, ``call_id``, ``tool_name``, ``arguments``,
        ``result_call``, ``result_text``) ``NAME.offsets`` (i32; i64 when the values pass
        2 GiB), ``NAME.data``,
        ``NAME.valid``; for each int64 column (``text_bytes``, ``input_tokens``,
        ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
        ``total_tokens``, ``tokens_before``, ``arguments_bytes``, ``result_text_bytes``),
        ``cost`` (f64) and each bool column (``is_error``, ``result_is_error``)
        ``NAME.values`` and ``NAME.valid``; ``images.offsets`` (i32, n + 1: each entry's
        images in ``image_*``), ``call.entry`` and ``result.entry`` (i32 entry numbers
        from ``start`` of each tool call and ``toolResult``).

        Raises:
            StaleSessionError: a line changed in the file since it was indexed.
        """
    def table_columns(self, leaf: int | None) -> dict[str, bytes]:
        """The ``entries`` table's index columns as ``bytes`` in Arrow layouts
        (little-endian; bitmaps LSB first): ``id_offsets`` (i32, n + 1) and
        ``id_data`` (UTF-8, a lone surrogate's bytes as U+FFFD), ``line``, ``offset``,
        ``length`` (i64: the entry's JSON text), ``parent`` (i32 entry number) and
        ``parent_valid``, ``depth`` (i32), ``on_path`` (root -> ``leaf``),
        ``timestamp`` (i64 ms, ``Date.parse``) and ``timestamp_valid``."""

_SearchHit = tuple[int, int, int, int, str, str, float | None, bool, int | None, int | None, str | None]

def search_files(
    paths: Sequence[bytes], terms: Sequence[Sequence[str]] | None, uncased: str, threads: int, k: int | None,
    recent: bool, literals: Sequence[str] = ...,
) -> tuple[list[tuple[Any, ...]], int, list[_SearchHit], list[_SearchHit]]:
    """Search session files read as they are (``src/search.rs``; releases the GIL).

    ``paths`` as ``os.fsencode`` gives them, in the order that breaks ties; ``terms``
    each a list of words (a phrase's words, one for a word), or ``None`` for a regular
    expression (the text of every entry picked comes back for Python to judge: with
    ``literals``, runs of lowercase ASCII letters and digits every match holds, the
    entries whose lines hold one and whose texts hold them all; else every entry); ``uncased`` the query's
    non-ASCII characters Python holds uncased; ``threads`` reading threads; ``k`` the
    decided hits wanted (``None``: all), best first by relevance or, with ``recent``,
    newest first.

    Returns:
        ``(files, decided, top, undecided)``: one tuple per path, ``("session", header,
        (name_seen, name), bytes_read)`` (``header`` the header line's bytes when the file
        has hits), ``("not_session", bytes_read)``, ``("python", bytes_read)`` (the Python
        rules must read it: a version 1 file, or a text the native rules do not compute)
        or ``("error", message)``; how many hits were decided; the best ``k`` of them; the
        hits Python must judge. A hit is ``(file, seq, offset, length, entry_id, role,
        time, on_path, score, anchor, text)``: ``file`` its index in ``paths``, ``offset``
        and ``length`` its line's (``index_snippets`` reads its snippet), ``score`` and
        ``anchor`` when decided, else ``text`` the entry's text.

    Raises:
        ValueError: a term with an empty word.
    """

def search_tables() -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """The native search rules' tables: JavaScript white space, the non-ASCII characters
    equal to an ASCII letter ``(char, letter)``, ranges of non-letters ``(lo, hi)``."""

def judge_text(
    terms: Sequence[Sequence[str]], uncased: str, text: bytes,
) -> tuple[str, tuple[int, int, str, list[tuple[int, int]]] | None]:
    """The native search rules over one text (generalized UTF-8): ``("miss", None)``,
    ``("undecided", None)`` or ``("hit", (score, anchor, snippet, marks))``."""

def usage_report(
    logs: Sequence[bytes], keys: Sequence[int], entries: Sequence[bytes] | None, key: str, buckets: bool,
    active: bool, days: Callable[[list[int]], Sequence[int | Sequence[int | None] | None]] | None = None,
) -> tuple[list[tuple[int, int | tuple[str, int] | bool | None, int, list[tuple[bool, list[float]]]]],
           list[tuple[int, float, tuple[float, float, float, float, float, float]]],
           list[tuple[str, str]], bool]:
    """Sums of usage logs by group (``src/report.rs``; releases the GIL): files oldest
    holder first, each its ``key`` (``key="file"``) and with ``active`` its entries
    record; ``key`` ``"model"``, ``"file"`` or ``"none"``; ``buckets``: also by
    15-minute slice of UTC, or by local day where ``days`` (called once with the UTC
    days' numbers since 1970-01-01, ascending) places a slice: a UTC day's one offset
    (ms east of UTC; one that is not a whole number of slices is taken as ``None``), or
    a list of its 96 slices' offsets (``None`` for a slice without one; a slice whose
    ends are not in one local day stays a slice), or ``None`` (not known).

    Returns:
        ``(groups, loose, models, bad)``: groups ``(key, bucket, records, sums)``
        (bucket a slice number, ``("day", n)`` a local day as days since 1970-01-01,
        ``None`` no time, ``True`` not bucketed; each sum
        ``(exact, floats)``, the partials or the values), loose records ``(key, time,
        numbers)`` whose time is not bucketed, the ``(provider, model)`` pairs keys
        name, whether some log was malformed.

    Raises:
        ValueError: an unknown ``key``, lists of different lengths, or ``days`` giving
            not one answer per day; what ``days`` raises is raised.
    """

def usage_sums(old: bytes | None, piece: bytes, log: bytes, entries: bytes, count: int) -> bytes | None:
    """A file's usage totals (``src/totals.rs``) after its usage log grew by ``piece``:
    ``old`` (its totals before, if kept) with the piece's records added, or taken again
    from the whole ``log`` (a repeated copy key hash, a changed path, no ``old``);
    ``entries`` its entries record now, of ``count`` entries. ``None``: none kept (a sum
    not finite, a malformed log)."""

_Report = tuple[list[tuple[int, int | tuple[str, int] | bool | None, int, list[tuple[bool, list[float]]]]],
                list[tuple[int, float, tuple[float, float, float, float, float, float]]],
                list[tuple[str, str]], bool]

@final
class UsageScan:
    """A warm usage report from the catalog's usage totals (``src/totals.rs``,
    ``catalog._usage._warm``), one folder at a time: the folders are listed and
    ``stat``-ed on a thread of its own (``catalog._files.folder_files``' rule) while the
    rows are read, each file the catalog holds as it is summed by its totals as it comes,
    only its copy key hashes (4 bytes a record) and place kept.

    Args:
        folders: ``os.fsencode`` of each folder (or one session file) of the scope, in
            the order :meth:`folder` is called.
        key: ``model``, ``file`` (a key per file, in the order added), ``project`` (a
            key per cwd) or ``none``.
        buckets: by 15-minute slice of UTC too; active: the current paths' records only.

    Raises:
        ValueError: an unknown ``key``.
    """

    def __new__(cls, folders: Sequence[bytes], key: str, buckets: bool, active: bool) -> UsageScan: ...
    def folder(self, rows: Iterable[tuple[Any, ...]]) -> int:
        """Add the next folder's files from ``rows`` (a cursor: each row let go once
        read), each ``(name, warm, totals, cwd)`` (``catalog._usage._WARM``): 0 added, 1
        some file is new, changed, not read to its end or cannot be ``stat``-ed (bring
        the catalog up to date), 2 a row holds a value the catalog never writes.

        Raises:
            ValueError: more calls than folders.
        """
    def folder_record(self, record: bytes) -> int:
        """:meth:`folder` from the folder's rows as one value (a record :meth:`record`
        gave, ``src/warm_rows.rs``): 2 when ``record`` is not such a value (nothing is
        taken: :meth:`folder` then reads the same folder's rows).

        Raises:
            ValueError: more calls than folders; a scan by project (it reads its rows).
        """
    def record(self) -> bytes | None:
        """The rows the last :meth:`folder` call read, as one value for
        :meth:`folder_record`; ``None`` when it did not add its files, the scan is by
        project or the folder listed no file."""
    @property
    def files(self) -> int:
        """Files added."""
    def paths(self) -> list[str]:
        """Every file's path as ``os.fsdecode`` gives it, in the order added."""
    def cwds(self) -> list[str | bytes | None]:
        """The projects' cwds as the catalog holds them, in key order."""
    def untotalled(self) -> list[tuple[int, int, bytes, bytes]]:
        """The files added without totals, as :meth:`involved` names them: each one's
        usage log goes to :meth:`log_hashes` before :meth:`involved` is asked."""
    def log_hashes(self, file: int, log: bytes) -> None:
        """``file``'s copy key hashes from its usage ``log`` (a file :meth:`untotalled`
        named), so that the files sharing one are read from their logs too."""
    def involved(self) -> list[tuple[int, int, bytes, bytes]]:
        """The files the report must sum from their logs (no readable totals, or a copy
        key hash another file holds): ``(file, folder call, name, path)``."""
    def report(self, files: Sequence[tuple[int, bytes | None, bytes, bytes | None]],
               days: Callable[[list[int]], Sequence[int | Sequence[int | None] | None]] | None = None,
               line: type[_L] | None = None, period: str | None = None,
               span: tuple[int, int] | None = None, names: Sequence[str] | None = None
               ) -> _Report | tuple[list[_L], _L] | None:
        """The report (as :func:`usage_report`), the :meth:`involved` files, oldest holder
        first, given as ``(file, totals, log, entries)`` (``entries`` for an active
        report): taken out of the totals and summed from their logs under the copy
        rule. ``None`` when the totals cannot answer (some did not read, a file's totals
        are not those added, a sum not finite). Once only.

        With ``line`` (a named tuple class of ``key, records, input, output,
        cache_read, cache_write, total_tokens, cost``), a report whose groups are its
        lines (no time buckets) and whose sums all round to finite doubles comes as
        ``(lines, total)``, each a ``line`` (made by ``tuple.__new__``), each sum rounded
        once as ``math.fsum`` rounds (the token sums that are whole numbers as ``int``),
        the total's key ``"total"``; costliest first, then by key. Each line's key is
        ``names[k]`` by file or project (the key's number ``k`` without ``names``), the
        ``provider/model`` name by model (``(unknown)``; pairs that read alike one
        line). With ``period`` too (``"daily"``, ``"weekly"`` or ``"monthly"``), a report
        whose groups are all local days or without time comes so, each line's key its
        name (``YYYY-MM-DD``, ``YYYY-Www``, ``YYYY-MM``, ``(no time)`` last), in time
        order; with ``span`` too, only the local days ``(first, last)`` (days since
        1970-01-01) and no records without a time. Without ``period``, with ``span``, a
        report by key whose groups are local days: one line a key of those days.

        Raises:
            ValueError: a file not of this scan, a second call, an unknown ``period``, a
                key without a name; what ``days`` raises, or comparing two keys raises.
        """

_L = TypeVar("_L", bound=tuple[object, ...])
_Piece = tuple[int, int, int, int, int]

def index_build(
    folder: bytes, files: Sequence[tuple[bytes, int, int, int, int, bytes]], threads: int, max_postings: int,
) -> tuple[list[tuple[str, int, list[_Piece]]], list[str], str | None]:
    """Index pieces of files into new search segments in ``folder`` (``src/search/index.rs``;
    releases the GIL). ``files``: ``(path, file id, epoch, start, end, prior entries
    record)``; ``max_postings`` how many postings a thread holds before it writes a
    segment.

    Returns:
        ``(segments, outcomes, failure)``: each segment ``(name, size, pieces)``, a piece
        ``(file, epoch, start, end, docs)``; per file ``"done"``, ``"python"`` (read it with
        the Python rules), ``"changed"`` or ``"error: ..."``; ``failure`` why a segment
        could not be written (``None``).
    """

def index_merge(folder: bytes, inputs: Sequence[bytes], live: Sequence[tuple[int, int, int]]) -> tuple[str, int, list[_Piece]]:
    """Merge the segments ``inputs`` into a new one in ``folder`` keeping the pieces
    ``live`` names (``(file, epoch, s_end)``); ``(name, size, pieces)``.

    Raises:
        OSError: an input cannot be read or is damaged, or the output cannot be written.
    """

_Listed = tuple[str, str, tuple[int, int, int, int, int] | None]

@final
class SearchScan:
    """A warm search's freshness check (``catalog._search._Search._from_index``): the
    folders are listed and ``stat``-ed on a thread of its own (``catalog._files``' rule)
    while the rows are read; each row is checked natively (the file as the row holds it,
    every complete line listed and indexed); the files the index holds are kept (path,
    name, id, device, inode, epoch, search end) and ranked by path as Python sorts
    paths.

    Args:
        folders: ``os.fsencode`` of each folder (or one session file) of the scope, in
            the order :meth:`folder` is called.
    """

    def __new__(cls, folders: Sequence[bytes]) -> SearchScan: ...
    def folder(self, rows: Iterable[tuple[Any, ...]]) -> bool:
        """Check the next folder's files against ``rows`` (a cursor), each ``(name, id,
        dev, ino, size, mtime_ns, ctime_ns, l_end, tail, problem, old, epoch, s_end)``;
        ``False`` when a row holds a value the catalog never writes.

        Raises:
            ValueError: more calls than folders.
        """
    def __len__(self) -> int:
        """The files the index holds."""
    def others(self) -> list[_Listed]:
        """The other files listed, as :func:`folder_files` gives them, in listing order."""
    def listed(self) -> list[_Listed]:
        """Every file listed (those the index holds first, by path), as
        :func:`folder_files` gives them."""
    def paths(self) -> list[bytes]:
        """The paths of the files the index holds, by rank (``os.fsencode`` form)."""
    def file(self, rank: int) -> tuple[str, int, str | bytes, int, int]:
        """File ``rank``: ``(path, catalog id, name as stored, dev, ino)``.

        Raises:
            IndexError: no file of that rank.
        """
    def query(
        self, segments: Sequence[bytes], terms: Sequence[Sequence[str]], uncased: str, k: int | None, recent: bool,
        threads: int,
    ) -> tuple[int, HitKeys, list[tuple[int, int, int, str, str, float | None, str]], bool]:
        """Answer a query from the search segments ``segments`` for the files the index
        holds; ``k`` the best decided hits wanted (``None``: all; newest first with
        ``recent``).

        Returns:
            ``(total, top, unsure, stale)``: decided hits in all; the best ``k``, best
            first (:class:`HitKeys`; :func:`index_snippets` reads their snippets, by
            rank from :meth:`paths`); entries Python must judge as ``(rank, seq, offset,
            entry_id, role, time, text)``; whether a file no longer holds what was
            indexed.

        Raises:
            OSError: a segment cannot be read or is damaged.
            ValueError: a term without ASCII letters or digits (the index cannot narrow
                it).
        """

@final
class HitKeys:
    """Decided hits of :meth:`SearchScan.query`, best first, held natively (about 56 bytes
    each) and made into tuples a slice at a time."""

    def __len__(self) -> int: ...
    def take(self, start: int, n: int) -> list[tuple[int, int, int, int, str, float | None, int, int]]:
        """Hits ``[start, start + n)`` (fewer at the end) as ``(rank, seq, offset,
        length, role, time, score, anchor)``."""
    def ranks(self, start: int, n: int) -> list[int]:
        """The files (ranks) of hits ``[start, start + n)``, each once, ascending."""

@final
class HitsJson:
    """A search's hits written as ``sessiontree search --json`` writes them
    (``src/search/hits_json.rs``), a chunk at a time: made with the paths the hits'
    ranks index and the query, each file's shared fields given once (:meth:`head`).

    Raises:
        ValueError: no terms, or a term with an empty word.
    """

    def __new__(cls, paths: Sequence[bytes], terms: Sequence[Sequence[str]], uncased: str) -> HitsJson: ...
    def head(self, rank: int, path: str, session_id: str, session_name: str | None, cwd: str, open: str,
             path_bits: bytes | None) -> None:
        """The fields the hits of file ``rank`` share (``open``: the ``open`` field up to
        the entry's id); ``path_bits`` the entries on its current path as a bitmap (bit
        ``seq``), for hits whose ``on_path`` is ``None``.

        Raises:
            IndexError: ``rank`` is not one of the paths'.
            UnicodeEncodeError: a text holds a lone surrogate.
        """
    def write(self, hits: Sequence[tuple[int, int, int, str, int, int, float | None, int, bool | None]],
              threads: int) -> bytes | None:
        """The hits ``(rank, offset, length, role, anchor, seq, time, score, on_path)`` as
        the items of ``--json``'s ``hits`` list (objects indented four spaces, joined by
        ``,\\n``), their snippets read with ``threads`` threads; ``None`` where Python
        must write them (a snippet only Python builds, a changed line, an id that is
        not UTF-8, a time that is not a whole millisecond, a file with no head)."""
    def write_keys(self, keys: HitKeys, start: int, n: int, threads: int) -> bytes | None:
        """:meth:`write` of hits ``[start, start + n)`` of ``keys`` (their ``on_path``
        from their files' heads' bitmaps)."""

def index_snippets(
    paths: Sequence[bytes], hits: Sequence[tuple[int, int, int, str, int]], terms: Sequence[Sequence[str]],
    uncased: str, threads: int,
) -> list[tuple[Any, ...]]:
    """The snippets of hits ``(rank, offset, length, role, anchor)`` (as
    :meth:`SearchScan.query` gives them) read from ``paths`` by rank: each ``("done",
    entry_id, snippet, marks)``, ``("text", entry_id, text)`` (only Python builds it) or
    ``("stale", None)`` (the line changed).

    Raises:
        ValueError: no terms, or a term with an empty word.
    """

def segment_pieces(path: bytes) -> list[_Piece]:
    """The pieces of a search segment: ``(file, epoch, start, end, docs)``.

    Raises:
        OSError: it cannot be read or is damaged.
    """
