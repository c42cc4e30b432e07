//! Whether JSON output holds a character the command line escapes after the serializer
//! (the rule's home is `python/sessiontree/view/_text.py`, `_JSON_UNSAFE_RE`): the raw
//! UTF-8 of DEL, C1 controls (U+0080–U+009F), ALM (U+061C), LRM/RLM (U+200E/U+200F),
//! U+2028–U+202E and U+2066–U+2069. Only the test lives here: the lead bytes are found
//! with `memchr` (a regular expression tried every byte of 60 MB of hits in 0.27 s),
//! and Python rewrites what the test finds.
//!
//! [`safe_block`] is the escaping rule's block mode (`view/_escape.py`, `safe_block`) in
//! one pass over the text's bytes: the exports run every message's text through it,
//! and the rule's regular expressions (two substitutions, two copies) stepped through
//! every character (~19 ns a character on the texts that need an escape, a third of the
//! Markdown export's work on a session with many). The Python function stays the rule's
//! statement and is what runs without the extension; the two are held equal on every
//! code point and on generated text (`tests/test_view_escape.py`).

/// `true` iff `data` holds one of those characters' UTF-8.
pub fn json_unsafe(data: &[u8]) -> bool {
    if memchr::memchr(0x7f, data).is_some() {
        return true;
    }
    let mut at = 0;
    while let Some(i) = memchr::memchr3(0xc2, 0xd8, 0xe2, &data[at..]) {
        let i = at + i;
        let next = |k: usize| data.get(i + k).copied().unwrap_or(0);
        let hit = match data[i] {
            0xc2 => (0x80..=0x9f).contains(&next(1)),
            0xd8 => next(1) == 0x9c,
            _ => match next(1) {
                0x80 => matches!(next(2), 0x8e | 0x8f | 0xa8..=0xae),
                0x81 => (0xa6..=0xa9).contains(&next(2)),
                _ => false,
            },
        };
        if hit {
            return true;
        }
        at = i + 1;
    }
    false
}

/// Whether `safe_block` escapes the code point `cp` (LF, TAB and the line breaks it turns
/// into LF aside): C0 controls, DEL and C1, the bidi controls, the invisible format
/// characters and lone surrogates (`_escape._UNSAFE_OTHER`).
fn unsafe_char(cp: u32) -> bool {
    matches!(cp,
        0x00..=0x08 | 0x0b..=0x1f | 0x7f..=0x9f | 0xad | 0x34f | 0x61c | 0x115f | 0x1160
        | 0x17b4 | 0x17b5 | 0x180e | 0x200b | 0x200e | 0x200f | 0x202a..=0x202e
        | 0x2060..=0x206f | 0x3164 | 0xfeff | 0xffa0 | 0xfff0..=0xfffb | 0xd800..=0xdfff
        | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0xe0000..=0xe0fff)
}

/// The escape of `cp` as `_escape._escape_char` spells it: `\xNN`, `\uNNNN`, `\UNNNNNNNN`.
fn push_escape(out: &mut Vec<u8>, cp: u32) {
    use std::io::Write;
    let _ = if cp < 0x100 {
        write!(out, "\\x{cp:02x}")
    } else if cp < 0x10000 {
        write!(out, "\\u{cp:04x}")
    } else {
        write!(out, "\\U{cp:08x}")
    };
}

/// The bytes where [`safe_block`] may change something: the ASCII controls but LF and TAB,
/// DEL, and the UTF-8 lead bytes of every other code point it changes (C1 and U+00AD
/// `c2`, U+034F `cd`, U+061C `d8`, U+180E `e1`, U+200B–U+206F `e2`, lone surrogates `ed`,
/// U+FEFF and U+FFF9–U+FFFB `ef`, tags `f3`). Any other byte is copied as it is: a
/// continuation byte (`80`–`bf`) is never one of these leads, so the characters of other
/// scripts are stepped over a byte at a time without being decoded.
const MAY_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b != 0x0a && b != 0x09;
        b += 1;
    }
    t[0x7f] = true;
    t[0xc2] = true;
    t[0xcd] = true;
    t[0xd8] = true;
    t[0xe1] = true;
    t[0xe2] = true;
    t[0xed] = true;
    t[0xe3] = true;
    t[0xef] = true;
    t[0xf0] = true;
    t[0xf3] = true;
    t
};

/// `view/_escape.py`'s `safe_block` of the text whose UTF-8 is `src` (a lone surrogate as
/// the three bytes `encode("utf-8", "surrogatepass")` writes): CR, CRLF, U+2028 and
/// U+2029 as LF, LF and TAB kept, every other character [`unsafe_char`] names escaped.
/// `None` when nothing changes (the caller keeps its own string).
pub fn safe_block(src: &[u8]) -> Option<String> {
    let mut out: Vec<u8> = Vec::new();
    let mut copied = 0; // src[..copied] is in out
    let mut changed = false;
    let mut i = 0;
    let n = src.len();
    while i < n {
        let b = src[i];
        if !MAY_ESCAPE[usize::from(b)] {
            i += 1;
            continue;
        }
        let (len, cp) = if b < 0x80 {
            (1, u32::from(b))
        } else {
            let len = match b {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                _ => 4,
            }
            .min(n - i);
            let mut cp = u32::from(b) & (0x7f >> len);
            for &c in &src[i + 1..i + len] {
                cp = (cp << 6) | (u32::from(c) & 0x3f);
            }
            (len, cp)
        };
        let (skip, newline) = match cp {
            0x0d if src.get(i + 1) == Some(&b'\n') => (2, true),
            0x0d | 0x2028 | 0x2029 => (len, true),
            _ if unsafe_char(cp) => (len, false),
            _ => {
                i += len;
                continue;
            }
        };
        if !changed {
            out.reserve(n + 16);
            changed = true;
        }
        out.extend_from_slice(&src[copied..i]);
        if newline {
            out.push(b'\n');
        } else {
            push_escape(&mut out, cp);
        }
        i += skip;
        copied = i;
    }
    if !changed {
        return None;
    }
    out.extend_from_slice(&src[copied..]);
    // Every surrogate was escaped, so what is left is the input's valid UTF-8.
    Some(
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

/// `html.escape(text, quote=True)` of the text whose UTF-8 is `src`, in one pass (the
/// standard library's makes a copy per character it replaces: five over a tool's whole
/// output): `&`, `<`, `>`, `"` and `'` as `&amp;`, `&lt;`, `&gt;`, `&quot;` and `&#x27;`.
/// `None` when there is none (the caller keeps its own string). Held equal to
/// `html.escape` by `tests/test_view_escape.py`.
pub fn html_escape(src: &[u8]) -> Option<Vec<u8>> {
    let special = |b: &u8| matches!(b, b'&' | b'<' | b'>' | b'"' | b'\'');
    let mut at = src.iter().position(special)?;
    let mut out = Vec::with_capacity(src.len() + src.len() / 8 + 16);
    out.extend_from_slice(&src[..at]);
    while at < src.len() {
        out.extend_from_slice(match src[at] {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            _ => b"&#x27;",
        });
        // The run up to the next special character, copied whole.
        let from = at + 1;
        at = src[from..]
            .iter()
            .position(special)
            .map_or(src.len(), |k| from + k);
        out.extend_from_slice(&src[from..at]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{html_escape, json_unsafe, safe_block};

    #[test]
    fn html_escape_replaces_the_five() {
        assert_eq!(html_escape(b"plain text"), None);
        assert_eq!(
            html_escape(b"<a href=\"x\">&'</a>").as_deref(),
            Some(&b"&lt;a href=&quot;x&quot;&gt;&amp;&#x27;&lt;/a&gt;"[..])
        );
    }

    #[test]
    fn safe_block_escapes_as_the_rule_spells_it() {
        assert_eq!(safe_block(b"plain\ttext\n"), None);
        assert_eq!(
            safe_block("a\r\nb\u{2028}c\rd\u{2029}e".as_bytes()).as_deref(),
            Some("a\nb\nc\nd\ne")
        );
        assert_eq!(
            safe_block("\u{1b}[0m\u{85}".as_bytes()).as_deref(),
            Some("\\x1b[0m\\x85")
        );
        assert_eq!(
            safe_block("x\u{202e}\u{e0041}\u{feff}".as_bytes()).as_deref(),
            Some("x\\u202e\\U000e0041\\ufeff")
        );
        assert_eq!(safe_block(b"\xed\xa0\xbd!").as_deref(), Some("\\ud83d!"));
        assert_eq!(safe_block("é→\u{200d}".as_bytes()), None);
    }

    #[test]
    fn finds_each_escaped_character_and_nothing_else() {
        for c in [
            '\u{7f}', '\u{80}', '\u{9f}', '\u{61c}', '\u{200e}', '\u{200f}', '\u{2028}',
            '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            let s = format!("ab\"{c}\"");
            assert!(json_unsafe(s.as_bytes()), "{c:?}");
        }
        for c in [
            '\u{7e}', '\u{a0}', '\u{61b}', '\u{200d}', '\u{2027}', '\u{202f}', '\u{2065}',
            '\u{206a}', '“', '…', '→',
        ] {
            let s = format!("ab\"{c}\"");
            assert!(!json_unsafe(s.as_bytes()), "{c:?}");
        }
        assert!(!json_unsafe(b"\xe2"));
        assert!(!json_unsafe(b"\xe2\x80"));
        assert!(!json_unsafe(b""));
    }
}
