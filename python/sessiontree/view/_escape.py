"""The one escaping rule for session text shown to a person (session text is untrusted):
which characters are made visible, and how they are spelled.

Modes: :func:`safe` (one terminal line: line breaks and tabs escaped too),
:func:`safe_block` (terminal text on several lines: LF and TAB kept).
"""

from __future__ import annotations

import re

__all__ = ["safe", "safe_block"]


# C0 and C1 controls (ESC, NUL, BEL, BS, CR, ...), DEL, the bidi controls (embeddings,
# overrides, isolates, marks) and the Unicode line/paragraph separators: session text
# is untrusted, and any of these would let it move the cursor, recolour or clear the
# terminal, or reorder what is shown. Also the invisible format characters a terminal
# draws as nothing or as a box (soft hyphen, zero-width space, word joiner, BOM, the
# deprecated format controls, interlinear annotation, tags), which would hide text or
# shift columns, and lone surrogates (the stream would print them as six characters
# the width count did not see); ZWJ/ZWNJ and variation selectors stay, as emoji and
# scripts need them. ``safe_block`` keeps LF and TAB (rendered on purpose as lines and
# indentation); ``safe`` escapes them too.
_UNSAFE_OTHER = ("\x7f-\x9f\xad\u034f\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e"
                 "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f")
_UNSAFE_RE = re.compile(f"[\x00-\x1f{_UNSAFE_OTHER}]")
_UNSAFE_BLOCK_RE = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE_OTHER}]")  # LF (0a) and TAB (09) kept


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"



def safe(text: str) -> str:
    """``text`` fit for a terminal line: controls, bidi controls, U+2028/U+2029 and line
    breaks become visible escapes (``\\x1b``, ``\\u202e``, ``\\x0a``).

    Every piece of session content (and every path or message that may echo it) goes
    through this, or :func:`safe_block`, before human output.
    """
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE_RE.sub(_escape_char, text)


def safe_block(text: str) -> str:
    """Like :func:`safe` but keeps LF and TAB, for text deliberately shown on several lines."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE_BLOCK_RE.sub(_escape_char, text)
