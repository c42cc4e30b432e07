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
    let mut out = String::new();
    write_json(v, indent, 0, &mut out)?;
    Some(out)
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_json(v: &Value<'_>, indent: bool, depth: usize, out: &mut String) -> Option<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => write_float(*f, out)?,
        Value::Str(s) => json_string(s, out),
        Value::Arr(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return Some(());
            }
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                if indent {
                    newline(out, depth + 1);
                }
                write_json(item, indent, depth + 1, out)?;
            }
            if indent {
                newline(out, depth);
            }
            out.push(']');
        }
        Value::Obj(kv) => {
            if kv.is_empty() {
                out.push_str("{}");
                return Some(());
            }
            out.push('{');
            for (k, (key, item)) in kv.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                if indent {
                    newline(out, depth + 1);
                }
                json_string(key, out);
                out.push_str(if indent { ": " } else { ":" });
                write_json(item, indent, depth + 1, out)?;
            }
            if indent {
                newline(out, depth);
            }
            out.push('}');
        }
    }
    Some(())
}

/// A float as orjson and Python's `repr` both spell it, where they agree: zero, or
/// 1e-4 <= |x| < 1e16, in plain decimal with the shortest digits that read back
/// (`0.1`, `1e15` as `1000000000000000.0`, `-0.0`). `None` elsewhere: there the two
/// choose different exponent forms (`1e-05` and `1e-5`), and NaN and the infinities are
/// no JSON (`view/_text.py` `_plain` holds the same range).
fn write_float(f: f64, out: &mut String) -> Option<()> {
    if !(f == 0.0 || (1e-4..1e16).contains(&f.abs())) {
        return None;
    }
    // Ryu writes this range in plain decimal with a `.0` on a whole number, as `repr`
    // does (`1e15` as `1000000000000000.0`, `1e-4` as `0.0001`).
    out.push_str(ryu::Buffer::new().format_finite(f));
    Some(())
}

/// The bytes that start a character `json_string` may escape: C0 controls, `"`, `\`,
/// DEL, and the lead bytes of C1 (`c2`), ALM (`d8`) and the U+2000 block (`e2`).
static ATTENTION: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7f] = true;
    t[0xc2] = true;
    t[0xd8] = true;
    t[0xe2] = true;
    t
};

/// Whether one of the eight bytes of `w` is below 0x20, `"`, `\`, or 0x7f and above.
fn has_special(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    // A byte < 0x20: (b - 0x20) borrows into its high bit where b has none; a byte >= 0x7f:
    // (b + 1) sets the high bit, or b has it.
    let low = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let high = (w | w.wrapping_add(ONES)) & HIGH;
    low | high | zero_in(w ^ (ONES * u64::from(b'"'))) | zero_in(w ^ (ONES * u64::from(b'\\'))) != 0
}

/// A JSON string as orjson writes it (`"`, `\`, and C0 controls escaped: `\b \t \n \f
/// \r`, else `\u00xx`), with the command line's escapes after it (`\uxxxx` lowercase).
fn json_string(s: &str, out: &mut String) {
    use std::fmt::Write;
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Only the bytes of `ATTENTION` start a character that may be escaped; the rest
        // are copied in runs, eight at a time where none of them is ASCII's `"`, `\`, a
        // control or DEL, nor above ASCII (a per-character decode was ~7x orjson on a
        // page of hits).
        if let Some(chunk) = bytes.get(i..i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            if !has_special(w) {
                i += 8;
                continue;
            }
        }
        if !ATTENTION[usize::from(bytes[i])] {
            i += 1;
            continue;
        }
        let c = s[i..].chars().next().unwrap_or('\0');
        let width = c.len_utf8();
        let esc: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\t' => Some("\\t"),
            '\r' => Some("\\r"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            _ => None,
        };
        let unsafe_cp = matches!(u32::from(c),
            0x00..=0x1f | 0x7f..=0x9f | 0x61c | 0x200e | 0x200f | 0x2028..=0x202e | 0x2066..=0x2069);
        if esc.is_some() || unsafe_cp {
            out.push_str(&s[run..i]);
            match esc {
                Some(e) => out.push_str(e),
                None => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
            }
            run = i + width;
        }
        i += width;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::{parse, to_json, Value};

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
}
