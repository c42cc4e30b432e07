//! One entry line as a JSON value, for the viewers' renderings made in the core
//! (`section`): parsed whole, keys in the order Python's `dict` keeps them, and written
//! back as the viewers write JSON (`view/_text.py` `to_json_bytes`: orjson's bytes, then
//! the command line's escapes).
//!
//! Exactness comes before coverage: [`parse`] gives `None` for every line whose value it
//! cannot hold as `decode_line` (`python/sessiontree/_jsonl.py`) would (invalid UTF-8, a
//! lone surrogate escape, an integer of 19 digits or more, nesting past
//! [`MAX_DEPTH`], an object of more than [`MAX_KEYS`] keys), and the writers give
//! `None` for what they do not spell as Python does (a float outside the plain range of
//! [`write_float`], nesting orjson refuses). The caller then leaves that entry to the
//! Python path.

use std::borrow::Cow;

/// Nesting a line may have here (orjson writes at most 255 levels; a deeper value is
/// written by Python's `json`, which this module does not copy).
pub const MAX_DEPTH: usize = 200;
/// Keys an object may have here: a key seen twice replaces the first one's value in
/// place (as a `dict` does), found by a linear search.
pub const MAX_KEYS: usize = 512;

/// A JSON value as `json.loads` gives it (integers within 18 digits, so within `i64`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Arr(Vec<Value<'a>>),
    Obj(Vec<(Cow<'a, str>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// `dict.get(key)`: the value of `key` in an object (`None` for a missing key or a
    /// value that is not an object).
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Obj(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `key in dict`.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python's truth value of the decoded value (`bool(x)`).
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Arr(a) => !a.is_empty(),
            Value::Obj(o) => !o.is_empty(),
        }
    }
}

/// `bool(d.get(key))` where a missing key is `None`.
pub fn truthy(v: Option<&Value<'_>>) -> bool {
    v.is_some_and(Value::truthy)
}

/// The value of one line (its whole text, surrounding JSON white space allowed), or
/// `None` where it is not held exactly (module doc).
pub fn parse(line: &[u8]) -> Option<Value<'_>> {
    let text = simdutf8::basic::from_utf8(line).ok()?;
    let mut p = Parser {
        s: text,
        b: line,
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    (p.i == line.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn lit(&mut self, word: &[u8], v: Value<'a>) -> Option<Value<'a>> {
        self.b[self.i..].starts_with(word).then(|| {
            self.i += word.len();
            v
        })
    }

    fn value(&mut self, depth: usize) -> Option<Value<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match *self.b.get(self.i)? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(Value::Str),
            b't' => self.lit(b"true", Value::Bool(true)),
            b'f' => self.lit(b"false", Value::Bool(false)),
            b'n' => self.lit(b"null", Value::Null),
            _ => self.number(),
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value<'a>> {
        self.i += 1;
        let mut kv: Vec<(Cow<'a, str>, Value<'a>)> = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Some(Value::Obj(kv));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            let k = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return None;
            }
            self.i += 1;
            let v = self.value(depth + 1)?;
            if let Some(slot) = kv.iter_mut().find(|(old, _)| *old == k) {
                slot.1 = v;
            } else if kv.len() < MAX_KEYS {
                kv.push((k, v));
            } else {
                return None;
            }
            self.ws();
            match *self.b.get(self.i)? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(Value::Obj(kv));
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Value<'a>> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Some(Value::Arr(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.ws();
            match *self.b.get(self.i)? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(Value::Arr(items));
                }
                _ => return None,
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.s.get(self.i..self.i + 4)?;
        if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }

    /// Moves to the next `"` or `\\` of a string (memchr); `None` at the end of the line
    /// or past a raw control character (which JSON does not allow in a string).
    fn run(&mut self) -> Option<()> {
        let at = self.i + memchr::memchr2(b'"', b'\\', &self.b[self.i..])?;
        if self.b[self.i..at].iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i = at;
        Some(())
    }

    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.i += 1;
        let start = self.i;
        // The run without escapes is borrowed; the first backslash starts a copy.
        self.run()?;
        if self.b[self.i] == b'"' {
            let s = &self.s[start..self.i];
            self.i += 1;
            return Some(Cow::Borrowed(s));
        }
        let mut out = String::with_capacity(self.i - start + 16);
        out.push_str(&self.s[start..self.i]);
        loop {
            let run = self.i;
            self.run()?;
            out.push_str(&self.s[run..self.i]);
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    self.i += 1;
                    let e = *self.b.get(self.i)?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xd800..0xdc00).contains(&hi) {
                                // A pair, or a lone surrogate (Python's value; not held here).
                                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return None;
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return None;
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else if (0xdc00..0xe000).contains(&hi) {
                                return None;
                            } else {
                                hi
                            };
                            out.push(char::from_u32(cp)?);
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    fn number(&mut self) -> Option<Value<'a>> {
        let start = self.i;
        let b = self.b;
        if b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = self.i;
        match b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        let int_digits = self.i - digits;
        let mut float = false;
        if b.get(self.i) == Some(&b'.') {
            float = true;
            self.i += 1;
            let f = self.i;
            while b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            if self.i == f {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(self.i) {
            float = true;
            self.i += 1;
            if let Some(b'+' | b'-') = b.get(self.i) {
                self.i += 1;
            }
            let f = self.i;
            while b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            if self.i == f {
                return None;
            }
        }
        let text = &self.s[start..self.i];
        if float {
            // Rust's parse rounds correctly, as Python's float() does; 1e400 is inf there too.
            return text.parse::<f64>().ok().map(Value::Float);
        }
        if int_digits >= 19 {
            return None; // decode_line's exact path; beyond i64 besides
        }
        text.parse::<i64>().ok().map(Value::Int)
    }
}

/// The JSON text `to_json_bytes(value, indent=indent)` writes for a value of this
/// module (orjson's, `OPT_INDENT_2` when `indent`, then DEL, C1, ALM, LRM/RLM,
/// U+2028–U+202E and U+2066–U+2069 as `\uXXXX`), or `None` for a float anywhere in it
/// that [`write_float`] does not spell.
pub fn to_json(v: &Value<'_>, indent: bool) -> Option<String> {
    String::from_utf8(to_json_bytes(v, indent)?).ok()
}

/// [`to_json`]'s text as its UTF-8 bytes.
pub fn to_json_bytes(v: &Value<'_>, indent: bool) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    write_json(v, indent, 0, &mut out)?;
    Some(out)
}

fn newline(out: &mut Vec<u8>, depth: usize) {
    out.push(b'\n');
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
    }
}

/// Before the `k`th member of an array or object at `depth`: a comma after the first,
/// then with `indent` a new line two spaces deeper (orjson's `OPT_INDENT_2` layout; the
/// one home of it, for [`write_json`] and the writer of Python's values in `python.rs`).
pub(crate) fn member(out: &mut Vec<u8>, k: usize, indent: bool, depth: usize) {
    if k > 0 {
        out.push(b',');
    }
    if indent {
        newline(out, depth + 1);
    }
}

/// Between an object's key and its value.
pub(crate) fn colon(out: &mut Vec<u8>, indent: bool) {
    out.extend_from_slice(if indent { b": " } else { b":" });
}

/// The end (`]` or `}`) of an array or object at `depth` of `members` members (none:
/// `[]` and `{}`, on one line).
pub(crate) fn close(out: &mut Vec<u8>, indent: bool, depth: usize, end: u8, members: usize) {
    if indent && members > 0 {
        newline(out, depth);
    }
    out.push(end);
}

/// An integer as JSON writes it.
pub(crate) fn write_int(i: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
}

fn write_json(v: &Value<'_>, indent: bool, depth: usize, out: &mut Vec<u8>) -> Option<()> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => write_int(*i, out),
        Value::Float(f) => write_float(*f, out)?,
        Value::Str(s) => json_string(out, s),
        Value::Arr(items) => {
            out.push(b'[');
            for (k, item) in items.iter().enumerate() {
                member(out, k, indent, depth);
                write_json(item, indent, depth + 1, out)?;
            }
            close(out, indent, depth, b']', items.len());
        }
        Value::Obj(kv) => {
            out.push(b'{');
            for (k, (key, item)) in kv.iter().enumerate() {
                member(out, k, indent, depth);
                json_string(out, key);
                colon(out, indent);
                write_json(item, indent, depth + 1, out)?;
            }
            close(out, indent, depth, b'}', kv.len());
        }
    }
    Some(())
}

/// A float as orjson and Python's `repr` both spell it, where they agree: zero, or
/// 1e-4 <= |x| < 1e16, in plain decimal with the shortest digits that read back
/// (`0.1`, `1e15` as `1000000000000000.0`, `-0.0`). `None` elsewhere: there the two
/// choose different exponent forms (`1e-05` and `1e-5`), and NaN and the infinities are
/// no JSON (`view/_text.py` `_plain` holds the same range).
pub(crate) fn write_float(f: f64, out: &mut Vec<u8>) -> Option<()> {
    if !(f == 0.0 || (1e-4..1e16).contains(&f.abs())) {
        return None;
    }
    // Ryu writes this range in plain decimal with a `.0` on a whole number, as `repr`
    // does (`1e15` as `1000000000000000.0`, `1e-4` as `0.0001`).
    out.extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes());
    Some(())
}

/// `s` as a JSON string as the command line writes it: orjson's escapes (`\"`, `\\`,
/// `\b`, `\f`, `\n`, `\r`, `\t`, other controls as `\u00xx`), then DEL, C1 controls,
/// ALM, LRM/RLM, U+2028–U+202E and U+2066–U+2069 as `\uxxxx` (`_JSON_UNSAFE_RE`).
pub(crate) fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let b = s.as_bytes();
    let mut from = 0;
    let mut i = 0;
    // Eight bytes at a time while none is a control, `"`, `\\`, DEL or above ASCII,
    // then byte by byte through a table: only a control, `"`, `\\`, DEL and the lead
    // bytes of the escaped characters (C2: C1 controls; D8: ALM; E2: U+200E–U+2069)
    // stop it. A text's characters one by one took a tenth of `search --limit 0 --json`.
    while i < b.len() {
        if let Some(chunk) = b.get(i..i + 8) {
            if !has_special(u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]))) {
                i += 8;
                continue;
            }
        }
        if !STOP[b[i] as usize] {
            i += 1;
            continue;
        }
        let c = s[i..].chars().next().unwrap_or('\0');
        let next = i + c.len_utf8();
        if let Some(short) = escape_of(c) {
            out.extend_from_slice(&b[from..i]);
            write_escape(out, c, short);
            from = next;
        }
        i = next;
    }
    out.extend_from_slice(&b[from..]);
    out.push(b'"');
}

/// Whether one of the eight bytes of `w` is below 0x20, `"`, `\\`, or 0x7f and above
/// (ASCII that [`json_string`] copies as it is has none of them).
fn has_special(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    // A byte < 0x20: (b - 0x20) borrows into its high bit where b has none; a byte >=
    // 0x7f: (b + 1) sets the high bit, or b has it.
    let low = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let high = (w | w.wrapping_add(ONES)) & HIGH;
    low | high | zero_in(w ^ (ONES * u64::from(b'"'))) | zero_in(w ^ (ONES * u64::from(b'\\'))) != 0
}

/// Whether [`json_string`] escapes `c` (`None`: written as it is) and how: a short escape,
/// or `None` for `\\uxxxx`.
fn escape_of(c: char) -> Option<Option<&'static [u8]>> {
    let code = c as u32;
    let short: Option<&'static [u8]> = match c {
        '"' => Some(b"\\\""),
        '\\' => Some(b"\\\\"),
        '\u{8}' => Some(b"\\b"),
        '\u{c}' => Some(b"\\f"),
        '\n' => Some(b"\\n"),
        '\r' => Some(b"\\r"),
        '\t' => Some(b"\\t"),
        _ => None,
    };
    let escaped = short.is_some()
        || code < 0x20
        || code == 0x7f
        || (0x80..=0x9f).contains(&code)
        || code == 0x61c
        || code == 0x200e
        || code == 0x200f
        || (0x2028..=0x202e).contains(&code)
        || (0x2066..=0x2069).contains(&code);
    escaped.then_some(short)
}

/// `c`'s escape appended to `out`: `short`, as [`escape_of`] gave it for `c`, else
/// `\\uxxxx`.
fn write_escape(out: &mut Vec<u8>, c: char, short: Option<&[u8]>) {
    match short {
        Some(x) => out.extend_from_slice(x),
        None => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
    }
}

/// The bytes at which [`json_string`] looks at the character: every character it escapes
/// starts with one of them.
const STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7f] = true;
    t[0xc2] = true; // U+0080–U+00BF (the C1 controls among them)
    t[0xd8] = true; // U+0600–U+063F (ALM, U+061C)
    t[0xe2] = true; // U+2000–U+2FFF (U+200E, U+200F, U+2028–U+202E, U+2066–U+2069)
    t
};

#[cfg(test)]
mod tests {
    use super::{escape_of, json_string, parse, to_json, write_escape, Value};

    #[test]
    fn keys_keep_their_first_place_and_last_value() {
        let v = parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(to_json(&v, false).as_deref(), Some(r#"{"a":3,"b":2}"#));
    }

    #[test]
    fn writes_as_orjson_indents() {
        let v =
            parse(br#"{"a":[],"b":{},"c":[1,{"d":null}],"e":"\u001f\u007f\u202e\"x"}"#).unwrap();
        assert_eq!(
            to_json(&v, true).as_deref(),
            Some("{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": null\n    }\n  ],\n  \"e\": \"\\u001f\\u007f\\u202e\\\"x\"\n}")
        );
    }

    #[test]
    fn declines_what_python_holds_otherwise() {
        assert_eq!(parse(br#"{"a":"\ud800"}"#), None);
        assert_eq!(parse(br#"{"a":"\udc00x"}"#), None);
        assert_eq!(parse(b"{\"a\":1234567890123456789}"), None);
        assert_eq!(parse(b"{\"a\":\"\xff\"}"), None);
        assert_eq!(parse(b"{\"a\":1} x"), None);
        let v = parse(br#"{"a":1e-5,"b":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(v.get("b").and_then(Value::as_str), Some("😀"));
        assert_eq!(to_json(&v, false), None);
    }

    #[test]
    fn floats_are_spelled_as_repr_in_the_plain_range() {
        // Each pair is a float's JSON text and `repr` of `float(text)` in Python 3.11.
        let cases = [
            ("0.0", "0.0"),
            ("-0.0", "-0.0"),
            ("1e-4", "0.0001"),
            ("-1e-4", "-0.0001"),
            ("1e15", "1000000000000000.0"),
            ("9.999999999999998e15", "9999999999999998.0"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("123456.789", "123456.789"),
            ("2.5", "2.5"),
            ("100", "100"),
            // Exact ties between two shortest spellings go to the even digit.
            ("1871172633224776.25", "1871172633224776.2"),
            ("12490229889040.0625", "12490229889040.062"),
        ];
        for (text, repr) in cases {
            let line = format!("[{text}]");
            let v = parse(line.as_bytes()).unwrap();
            assert_eq!(to_json(&v, false), Some(format!("[{repr}]")), "{text}");
        }
        for text in ["1e-5", "1e16", "-1e16", "5e-324", "1.7976931348623157e308"] {
            let line = format!("[{text}]");
            let v = parse(line.as_bytes()).unwrap();
            assert_eq!(to_json(&v, false), None, "{text}");
        }
    }

    #[test]
    fn every_character_is_escaped_as_one_at_a_time() {
        // The rule character by character, as `json_string` was written before its table.
        fn one_at_a_time(s: &str) -> Vec<u8> {
            let mut out = vec![b'"'];
            for c in s.chars() {
                if let Some(short) = escape_of(c) {
                    write_escape(&mut out, c, short);
                } else {
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
            }
            out.push(b'"');
            out
        }
        let every: String = (0..0x11_0000u32).filter_map(char::from_u32).collect();
        for text in [
            every.as_str(),
            "",
            "plain",
            "a\u{2029}b\u{85}\u{61c}\u{2069}\u{206a}\u{a0}",
        ] {
            let mut v = Vec::new();
            json_string(&mut v, text);
            assert_eq!(v, one_at_a_time(text));
        }
        // Each byte that stops the eight-byte step, at each place of a long ASCII text.
        for b in (0u8..0x20).chain([b'"', b'\\', 0x7f]) {
            for at in 0..20 {
                let mut text = "abcdefghijklmnopqrstuvwx".to_owned().into_bytes();
                text[at] = b;
                let text = String::from_utf8(text).unwrap_or_default();
                let mut v = Vec::new();
                json_string(&mut v, &text);
                assert_eq!(v, one_at_a_time(&text), "{b:#x} at {at}");
            }
        }
        for c in (0..0x11_0000u32).filter_map(char::from_u32) {
            let text = format!("x{c}y{c}");
            let mut v = Vec::new();
            json_string(&mut v, &text);
            assert_eq!(v, one_at_a_time(&text), "{c:?}");
        }
    }
}
