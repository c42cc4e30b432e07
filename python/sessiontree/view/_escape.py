"""The one escaping rule for session text shown to a person: which characters are made
visible, and how they are spelled. Session text is untrusted; every viewer (the command
line, the browser, the HTML and Markdown exports) shows it through this rule.

Two modes:

* :func:`safe`: one line (a terminal row, a heading, an attribute): line breaks and
  tabs are escaped too.
* :func:`safe_block`: text shown on several lines (a message in the context, the
  browser's detail pane, an exported page): CR, CRLF, U+2028 and U+2029 become LF, and
  LF and TAB stay. Each format still escapes for its own syntax (HTML entities,
  Markdown fences) after this.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .._lazy import lazy_pattern
from .._select import extension

__all__ = ["safe", "safe_block", "safe_block_rule"]


# C0 and C1 controls (ESC, NUL, BEL, BS, CR, ...), DEL, the bidi controls (embeddings,
# overrides, isolates, marks) and the Unicode line/paragraph separators: session text
# is untrusted, and any of these would let it move the cursor, recolour or clear the
# terminal, or reorder what is shown. Also the invisible format characters a terminal
# or a page draws as nothing or as a box (soft hyphen, combining grapheme joiner,
# Mongolian vowel separator, zero-width space, word joiner and the invisible operators,
# BOM, the deprecated format controls, interlinear annotation, tags), which would hide
# text or shift columns, and lone surrogates (a stream would print them as six
# characters the width count did not see). Of Unicode's default-ignorable characters
# only ZWJ/ZWNJ and the variation selectors VS1-16 and Mongolian's stay, as emoji and
# scripts need them; the rest is escaped too (Hangul fillers, Khmer's inherent vowels,
# U+FFF0-FFF8, the shorthand, musical and Egyptian format controls, and U+E0080-E0FFF
# with the variation selector supplement: a run of those carries a hidden text one
# byte a character, adversary round 43).
_UNSAFE_OTHER = ("\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f"
                 "\u2028\u2029\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff0-\ufff8\ufff9-\ufffb"
                 "\ud800-\udfff\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                 "\U000e0000-\U000e0fff")
_UNSAFE_RE: re.Pattern[str] = lazy_pattern(f"[\x00-\x1f{_UNSAFE_OTHER}]")
_UNSAFE_BLOCK_RE: re.Pattern[str] = lazy_pattern(f"[\x00-\x08\x0b-\x1f{_UNSAFE_OTHER}]")  # LF (0a) and TAB (09) kept
_BREAK_RE: re.Pattern[str] = lazy_pattern("\r\n?|[\u2028\u2029]")  # line breaks a block shows as LF
# The characters the rule escapes that str.isprintable accepts (tests/test_view_escape.py
# checks each code point): a printable text without them has nothing to change.
_PRINTABLE_UNSAFE_RE: re.Pattern[str] = lazy_pattern("[\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0"
                                                     "\U000e0100-\U000e01ef]")


def _printable_safe(text: str) -> bool:
    """``text`` is printable and holds none of the printable characters the rule escapes."""
    return text.isprintable() and (text.isascii() or _PRINTABLE_UNSAFE_RE.search(text) is None)

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def safe(text: str) -> str:
    """``text`` fit for one line: controls, bidi and invisible format characters, lone
    surrogates and line breaks become visible escapes (``\\x1b``, ``\\u202e``,
    ``\\u200b``, ``\\n``).

    Every piece of session content (and every path or message that may echo it) goes
    through this, or :func:`safe_block`, before a person sees it.
    """
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE_RE.sub(_escape_char, text)


def safe_block(text: str) -> str:
    """``text`` fit to be shown on several lines: as :func:`safe`, but CR, CRLF, U+2028
    and U+2029 become LF, and LF and TAB stay.

    The extension's ``safe_block`` (``src/escape.rs``: one pass over the text, where the
    expressions below step through every character twice) computes it when it is built;
    :func:`safe_block_rule` states the rule and is what runs without it. The two are held
    equal on every code point and on generated text (``tests/test_view_escape.py``)."""
    if _printable_safe(text):
        return text
    native = _native_block()
    return native(text) if native is not None else safe_block_rule(text)


def safe_block_rule(text: str) -> str:
    """:func:`safe_block` by the rule's expressions (the statement of the rule)."""
    if _printable_safe(text):
        return text
    # Text that is printable without its LFs and TABs (kept) and holds none of the
    # printable characters the rule escapes has nothing to change: two copies at memory
    # speed, where the expression below steps through every character.
    if _printable_safe(text.replace("\n", "").replace("\t", "")):
        return text
    if not text.isascii() and _UNSAFE_BLOCK_RE.search(text) is None:  # printable says no to more than the rule
        return text
    return _UNSAFE_BLOCK_RE.sub(_escape_char, _BREAK_RE.sub("\n", text))


def _native_block() -> Callable[[str], str] | None:
    """The extension's ``safe_block``, or ``None`` when it is not built."""
    block: Callable[[str], str] | None = getattr(extension(), "safe_block", None)
    return block
