//! A header's `version` as Pi compares it: `header.version ?? 1`, then `<` / `>=` against
//! numbers, which JavaScript does on `ToNumber` of the value (`true` is 1, `"2"` is 2,
//! `[]` is 0, `{}` and `"v2"` are NaN, which is neither below nor at 3). One home in the
//! core for what `_reader.header_version` decides in Python (`_js.to_number`).

use crate::scan::{json_number, skip_value, Val};
use crate::value::{self, Value};

/// The number Pi compares for a header's `version` (`Val` of the header line `line`):
/// absent or `null` is 1, anything else its JavaScript `ToNumber`.
pub(crate) fn header_version(line: &[u8], v: Val) -> f64 {
    match v {
        Val::Absent | Val::Null => 1.0,
        Val::Num { start, end } => line.get(start..end).map_or(f64::NAN, json_number),
        // A string's span is its body: the value starts at its opening quote.
        Val::Str { start, end, .. } => value_at(line, start.wrapping_sub(1), end + 1),
        Val::Other { start } => value_at(line, start, skip_value(line, start)),
    }
}

/// A value `value::parse` does not hold (an integer of 19 digits or more in an array,
/// nesting past its depth) is NaN: not taken for an old version.
fn value_at(line: &[u8], start: usize, end: usize) -> f64 {
    line.get(start..end)
        .and_then(value::parse)
        .map_or(f64::NAN, |v| to_number(&v))
}

/// JavaScript's `ToNumber` of a JSON value (an object is NaN: `"[object Object]"`).
fn to_number(v: &Value<'_>) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Int(i) => *i as f64,
        Value::Float(x) => *x,
        Value::Str(s) => string_to_number(s),
        // `String(array)` joins the elements with ","; two or more always leave a
        // comma, which no number has; one is its own `String` (null: "").
        Value::Arr(a) => match a.as_slice() {
            [] | [Value::Null] => 0.0,
            [Value::Bool(_) | Value::Obj(_)] => f64::NAN,
            [one] => to_number(one),
            _ => f64::NAN,
        },
        Value::Obj(_) => f64::NAN,
    }
}

/// ECMAScript WhiteSpace and LineTerminator (what `StringToNumber` trims).
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// JavaScript's `StringToNumber`: white space trimmed, empty is 0; a decimal literal
/// (optional sign, `Infinity`, digits with an optional fraction and exponent) or an
/// unsigned `0x` / `0o` / `0b` integer; anything else NaN.
fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(js_space);
    if t.is_empty() {
        return 0.0;
    }
    let b = t.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return t[2..]
                .chars()
                .try_fold(0.0f64, |acc, c| {
                    c.to_digit(radix)
                        .map(|d| acc * f64::from(radix) + f64::from(d))
                })
                .unwrap_or(f64::NAN);
        }
    }
    let (sign, body) = match b[0] {
        b'+' => (1.0, &t[1..]),
        b'-' => (-1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return sign * f64::INFINITY;
    }
    if !decimal_literal(body.as_bytes()) {
        return f64::NAN;
    }
    body.parse::<f64>().map_or(f64::NAN, |x| sign * x)
}

/// `StrUnsignedDecimalLiteral` without `Infinity`: `1`, `1.`, `.5`, `1.5e-3`.
fn decimal_literal(b: &[u8]) -> bool {
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(0);
    let mut i = int;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        frac = digits(i + 1);
        i += 1 + frac;
    }
    if int + frac == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = digits(i);
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{validate, Fields};

    fn version(header: &str) -> f64 {
        let mut f = Fields::default();
        validate(header.as_bytes(), &mut f);
        header_version(header.as_bytes(), f.version)
    }

    #[test]
    fn versions_as_javascript_compares_them() {
        let cases: &[(&str, f64)] = &[
            ("", 1.0),
            (r#","version":null"#, 1.0),
            (r#","version":true"#, 1.0),
            (r#","version":false"#, 0.0),
            (r#","version":2"#, 2.0),
            (r#","version":1.5"#, 1.5),
            (r#","version":"2""#, 2.0),
            (r#","version":" 2\n""#, 2.0),
            (r#","version":"\u00a02""#, 2.0),
            (r#","version":"""#, 0.0),
            (r#","version":"0x2""#, 2.0),
            (r#","version":"0b1""#, 1.0),
            (r#","version":"1e0""#, 1.0),
            (r#","version":".5""#, 0.5),
            (r#","version":"-Infinity""#, f64::NEG_INFINITY),
            (r#","version":[]"#, 0.0),
            (r#","version":[[2]]"#, 2.0),
            (r#","version":["2"]"#, 2.0),
            (r#","version":[null]"#, 0.0),
        ];
        for (extra, want) in cases {
            let header = format!(r#"{{"type":"session","id":"s"{extra},"cwd":"/p"}}"#);
            assert_eq!(version(&header), *want, "{header}");
        }
        for extra in [
            r#""v2""#,
            r#""inf""#,
            r#""1_0""#,
            r#""-0x2""#,
            r#""0x""#,
            r#""."#,
            r#""1e""#,
            "{}",
            "[1,2]",
            "[true]",
            r#""Infinityx""#,
            r#""nan""#,
        ] {
            let header = format!(r#"{{"type":"session","id":"s","version":{extra},"cwd":"/p"}}"#);
            assert!(version(&header).is_nan(), "{header}");
        }
    }
}
