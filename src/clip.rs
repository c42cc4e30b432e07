//! A line with its long string values cut, for viewers that show only the start of
//! each entry (`SessionManager.get_entries_by_id(..., clip=N)`; `sessiontree tree`'s
//! previews read no string past its first 600 characters). Decoding the cut line costs
//! what the shown text costs: the lines `tree` draws on a large session average 2.4 KB,
//! mostly tool output that no preview shows.
//!
//! The rule, the same as `_jsonl.clip_entry` applies to a decoded entry (the python
//! backend's and the reference `tests/test_clip.py` holds this to): every string
//! *value* of more than `keep` characters becomes its first `keep`; object keys stay
//! whole, and so do the values of the top-level `id`, `parentId` and `type`. A
//! character is what Python's `json.loads` makes one of: a code point of the UTF-8, one
//! escape, or a `\uD8xx\uDCxx` pair; invalid UTF-8 counts as the U+FFFD it decodes to.
//! Anything this walk does not recognise as JSON is left whole (the lines come from the
//! index, which accepted them).

/// Top-level keys whose values are never cut (the entry's identity and kind;
/// `_clip.WHOLE_KEYS`).
pub const WHOLE: [&[u8]; 3] = [b"id", b"parentId", b"type"];

/// Copy `line` into `out` (cleared first) with string values cut to `keep` characters.
pub fn clip_strings(line: &[u8], keep: usize, out: &mut Vec<u8>) {
    // Invalid UTF-8 is cut as it decodes: each bad sequence one U+FFFD, by the rules
    // the python decoder replaces it with (`_jsonl.decode_line_ex`, WHATWG's).
    let text: std::borrow::Cow<'_, [u8]> = match simdutf8::basic::from_utf8(line) {
        Ok(_) => line.into(),
        Err(_) => String::from_utf8_lossy(line)
            .into_owned()
            .into_bytes()
            .into(),
    };
    out.clear();
    if !clip_into(&text, keep, out) {
        out.clear();
        out.extend_from_slice(line);
    }
}

/// The walk; `false` if `line` is not the JSON it should be.
fn clip_into(s: &[u8], keep: usize, out: &mut Vec<u8>) -> bool {
    let mut depth = 0usize;
    // Whether the value being read is a top-level value that stays whole.
    let mut whole_next = false;
    let mut i = 0;
    let mut copied = 0; // s[..copied] is in out
    while i < s.len() {
        match s[i] {
            b'{' | b'[' if whole_next => {
                // A container under a top-level key that stays whole: all of it does.
                let Some(end) = container_end(s, i) else {
                    return false;
                };
                whole_next = false;
                i = end;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'"' => {
                let Some(end) = string_end(s, i + 1) else {
                    return false;
                };
                let body = &s[i + 1..end];
                let mut j = end + 1;
                while j < s.len() && matches!(s[j], b' ' | b'\t' | b'\r' | b'\n') {
                    j += 1;
                }
                if s.get(j) == Some(&b':') {
                    // A key: the value after it stays whole if this is one of WHOLE at
                    // the top level (spelled with escapes or not).
                    whole_next = depth == 1 && is_whole_key(body);
                } else {
                    if !whole_next {
                        if let Some(cut) = cut_at(body, keep) {
                            out.extend_from_slice(&s[copied..i + 1 + cut]);
                            out.push(b'"');
                            copied = end + 1;
                        }
                    }
                    whole_next = false;
                }
                i = end + 1;
            }
            b',' => {
                whole_next = false;
                i += 1;
            }
            _ => i += 1,
        }
    }
    out.extend_from_slice(&s[copied..]);
    true
}

/// The index of the closing quote of a string whose body starts at `from`.
fn string_end(s: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let k = from + memchr::memchr2(b'"', b'\\', s.get(from..)?)?;
        if s[k] == b'"' {
            return Some(k);
        }
        from = k + 2;
    }
}

/// The index after the container that opens at `s[at]`.
fn container_end(s: &[u8], mut at: usize) -> Option<usize> {
    let mut depth = 0usize;
    while at < s.len() {
        match s[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            b'"' => at = string_end(s, at + 1)?,
            _ => {}
        }
        at += 1;
    }
    None
}

/// The four hex digits at `s[at..at + 4]` as a code unit.
fn hex4(s: &[u8], at: usize) -> Option<u32> {
    let h = s.get(at..at + 4)?;
    let t = std::str::from_utf8(h).ok()?;
    u32::from_str_radix(t, 16).ok()
}

/// Bytes of the character that starts `body[at..]` (an escape, a pair of `\u`
/// surrogates, or a UTF-8 sequence).
fn char_len(body: &[u8], at: usize) -> usize {
    let b = body[at];
    if b == b'\\' {
        if body.get(at + 1) != Some(&b'u') {
            return 2;
        }
        let hi = hex4(body, at + 2).unwrap_or(0);
        if (0xD800..0xDC00).contains(&hi) && body.get(at + 6..at + 8) == Some(b"\\u") {
            if let Some(lo) = hex4(body, at + 8) {
                if (0xDC00..0xE000).contains(&lo) {
                    return 12;
                }
            }
        }
        return 6;
    }
    match b {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// Where to cut `body` so that it keeps `keep` characters, or `None` if it has no more.
fn cut_at(body: &[u8], keep: usize) -> Option<usize> {
    if body.len() <= keep {
        return None; // every character takes at least one byte
    }
    let mut at = 0;
    for _ in 0..keep {
        if at >= body.len() {
            return None;
        }
        at += char_len(body, at);
    }
    (at < body.len()).then_some(at)
}

/// A top-level key that is `id`, `parentId` or `type` once its escapes are read.
fn is_whole_key(body: &[u8]) -> bool {
    if !body.contains(&b'\\') {
        return WHOLE.contains(&body);
    }
    let mut name = Vec::with_capacity(body.len());
    let mut at = 0;
    while at < body.len() {
        let n = char_len(body, at);
        let c = &body[at..at + n];
        let byte = match c {
            [b'\\', b'u', ..] => match hex4(c, 2) {
                Some(v) if v < 0x80 => v as u8,
                _ => return false, // not ASCII: none of the names
            },
            [b'\\', e] => match e {
                b'"' | b'\\' | b'/' => *e,
                _ => return false, // a control character: none of the names
            },
            [b] => *b,
            _ => return false,
        };
        name.push(byte);
        at += n;
    }
    WHOLE.contains(&name.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clip(line: &str, keep: usize) -> String {
        let mut out = Vec::new();
        clip_strings(line.as_bytes(), keep, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// The rule over decoded values: the reference for the byte walk.
    fn clip_value(v: &serde_json::Value, keep: usize, top: bool) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) if s.chars().count() > keep => {
                Value::String(s.chars().take(keep).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| clip_value(x, keep, false)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| {
                        let whole = top && WHOLE.contains(&k.as_bytes());
                        (
                            k.clone(),
                            if whole {
                                x.clone()
                            } else {
                                clip_value(x, keep, false)
                            },
                        )
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    #[test]
    fn long_values_are_cut_and_keys_and_the_identity_stay_whole() {
        let line = r#"{"type":"messageXYZ","id":"abcdefgh","parentId":"0123456789","message":{"role":"assistant","id":"abcdefgh","content":[{"type":"text","text":"hello world"}],"abcdefghijk":1}}"#;
        assert_eq!(
            clip(line, 4),
            r#"{"type":"messageXYZ","id":"abcdefgh","parentId":"0123456789","message":{"role":"assi","id":"abcd","content":[{"type":"text","text":"hell"}],"abcdefghijk":1}}"#
        );
    }

    #[test]
    fn escapes_and_pairs_are_one_character_each() {
        assert_eq!(
            clip(r#"{"a":"\n\t\u00e9\ud83d\ude00xyz"}"#, 4),
            r#"{"a":"\n\t\u00e9\ud83d\ude00"}"#
        );
        assert_eq!(
            clip(r#"{"a":"\ud83d\ud83dxy"}"#, 2),
            r#"{"a":"\ud83d\ud83d"}"#
        );
        assert_eq!(clip(r#"{"a":"éé😀😀"}"#, 3), r#"{"a":"éé😀"}"#);
        assert_eq!(clip(r#"{"a":"\"\\\"\\"}"#, 2), r#"{"a":"\"\\"}"#);
    }

    #[test]
    fn a_top_level_key_spelled_with_escapes_still_keeps_its_value() {
        let line = r#"{"\u0069d":"abcdefgh","t\u0079pe":"abcdefgh","\u00e9":"abcdefgh","x":{"id":"abcdefgh"}}"#;
        assert_eq!(
            clip(line, 3),
            r#"{"\u0069d":"abcdefgh","t\u0079pe":"abcdefgh","\u00e9":"abc","x":{"id":"abc"}}"#
        );
        let nested = r#"{"id":{"a":["abcdefgh",{"b":"abcdefgh"}]},"x":["abcdefgh"]}"#;
        assert_eq!(
            clip(nested, 3),
            r#"{"id":{"a":["abcdefgh",{"b":"abcdefgh"}]},"x":["abc"]}"#
        );
    }

    #[test]
    fn invalid_utf8_counts_as_its_replacements_and_what_is_not_json_is_left_whole() {
        let mut out = Vec::new();
        clip_strings(b"{\"a\":\"\xff\xe2\x82 abcdefgh\"}", 3, &mut out);
        assert_eq!(out, "{\"a\":\"\u{fffd}\u{fffd} \"}".as_bytes());
        clip_strings(br#"{"a":"abcdefgh"#, 2, &mut out);
        assert_eq!(out, br#"{"a":"abcdefgh"#);
    }

    #[test]
    fn the_walk_agrees_with_the_rule_over_decoded_values() {
        // A brute-force check over generated lines (serde_json decodes and re-encodes;
        // pairs only: it refuses lone surrogates, which tests/test_clip.py covers).
        let pieces = [
            "a",
            "é",
            "😀",
            "\\n",
            "\\\"",
            "\\u00e9",
            "\\ud83d\\ude00",
            " ",
            "\\\\",
            "\\/",
        ];
        let mut seed = 12345u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..2000 {
            let text = |next: &mut dyn FnMut(usize) -> usize| {
                (0..next(12))
                    .map(|_| pieces[next(pieces.len())])
                    .collect::<String>()
            };
            let keys = ["id", "type", "parentId", "message", "text", "i\\u0064"];
            let mut line = String::from("{");
            for k in 0..next(5) + 1 {
                if k > 0 {
                    line.push(',');
                }
                let key = keys[next(keys.len())];
                let value = match next(5) {
                    4 => format!(
                        "{{\"id\": [\"{}\"], \"k\": \"{}\"}}",
                        text(&mut next),
                        text(&mut next)
                    ),
                    0 => format!("\"{}\"", text(&mut next)),
                    1 => format!(
                        "[\"{}\", 3, {{\"id\": \"{}\"}}]",
                        text(&mut next),
                        text(&mut next)
                    ),
                    2 => format!("{{\"{}\": \"{}\"}}", text(&mut next), text(&mut next)),
                    _ => "null".to_string(),
                };
                line.push_str(&format!("\"{key}\" : {value}"));
            }
            line.push('}');
            let keep = next(6);
            let full: serde_json::Value = serde_json::from_str(&line).unwrap();
            let cut: serde_json::Value = serde_json::from_str(&clip(&line, keep)).unwrap();
            assert_eq!(cut, clip_value(&full, keep, true), "{line} keep {keep}");
        }
    }
}
