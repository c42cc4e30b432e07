//! Whether JSON output holds a character the command line escapes after the serializer
//! (the rule's home is `python/sessiontree/view/_text.py`, `_JSON_UNSAFE_RE`): the raw
//! UTF-8 of DEL, C1 controls (U+0080–U+009F), ALM (U+061C), LRM/RLM (U+200E/U+200F),
//! U+2028–U+202E and U+2066–U+2069. Only the test lives here: the lead bytes are found
//! with `memchr` (a regular expression tried every byte of 60 MB of hits in 0.27 s),
//! and Python rewrites what the test finds.

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

#[cfg(test)]
mod tests {
    use super::json_unsafe;

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
