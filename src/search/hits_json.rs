//! A chunk of a search's hits as `sessiontree search --json` writes them, made here
//! from the hits' keys and their snippets (`index::snippets`) instead of a Python
//! object, a dict and a serializer per hit: all the hits of a word in nearly every
//! file (72,546 at 2,000 sessions) spent about 0.4 s of Python on that
//! (docs/BENCHMARKS.md, issue 25).
//!
//! The shape's home is `cli/search.py` (`_hit_json`), the bytes' home
//! `view/_text.py` (`to_json_bytes`: orjson's indented output, then DEL, C1 and the
//! bidi controls as `\uXXXX`); `tests/test_search_json.py` holds this writer to them
//! over generated strings, times and marks. Where a hit falls outside what is written
//! here exactly (a snippet only Python builds, a changed line, an id or a file's text
//! that is not UTF-8, a time that is not a whole millisecond), [`write`] answers
//! `None` and the caller makes the chunk in Python as before.

use std::path::PathBuf;

use crate::search::index::{snippets, KeyHit, Snippet};
use crate::search::rules::Term;
use crate::value::json_string as string;

/// What every hit of one file shares.
pub struct Head {
    pub path: String,
    pub session_id: String,
    pub session_name: Option<String>,
    pub cwd: String,
    /// The `open` field up to the entry's id: `sessiontree context QUOTED_PATH --leaf `.
    pub open: String,
    /// The entries on the session's current path (bit `seq` set), for hits whose
    /// `on_path` is not given.
    pub path_bits: Option<Vec<u8>>,
}

/// One hit to write: its key (rank into the paths and heads) and, when known, whether
/// it is on the current path.
pub struct JsonHit {
    pub key: KeyHit,
    pub on_path: Option<bool>,
}

/// The hits as the items of the `hits` list of `--json` (each object indented by four
/// spaces, the items joined by `,\n`, no trailing newline), their snippets read from
/// `paths` with `threads` threads; `None` when a hit is one only Python writes (above).
pub fn write(
    paths: &[PathBuf],
    heads: &[Option<Head>],
    hits: &[JsonHit],
    terms: &[Term],
    threads: usize,
) -> Option<Vec<u8>> {
    // A hit with no head cannot be written: known before any line is read.
    if hits
        .iter()
        .any(|h| !matches!(heads.get(h.key.rank as usize), Some(Some(_))))
    {
        return None;
    }
    let keys: Vec<KeyHit> = hits.iter().map(|h| h.key).collect();
    let got = snippets(paths, &keys, terms, threads);
    let mut out = Vec::with_capacity(hits.len() * 900);
    for (i, (h, s)) in hits.iter().zip(got).enumerate() {
        let Snippet::Done(id, snip, marks) = s else {
            return None;
        };
        let id = std::str::from_utf8(&id).ok()?;
        let head = heads.get(h.key.rank as usize)?.as_ref()?;
        let on_path = match h.on_path {
            Some(x) => x,
            None => {
                let bits = head.path_bits.as_deref()?;
                let q = h.key.seq as usize;
                bits.get(q >> 3).is_some_and(|b| b >> (q & 7) & 1 == 1)
            }
        };
        if i > 0 {
            out.extend_from_slice(b",\n");
        }
        out.extend_from_slice(b"    {\n      \"path\": ");
        string(&mut out, &head.path);
        out.extend_from_slice(b",\n      \"sessionId\": ");
        string(&mut out, &head.session_id);
        out.extend_from_slice(b",\n      \"sessionName\": ");
        match &head.session_name {
            Some(n) => string(&mut out, n),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\n      \"cwd\": ");
        string(&mut out, &head.cwd);
        out.extend_from_slice(b",\n      \"entryId\": ");
        string(&mut out, id);
        out.extend_from_slice(b",\n      \"role\": \"");
        out.extend_from_slice(match h.key.role {
            0 => b"user".as_slice(),
            1 => b"assistant",
            _ => b"name",
        });
        out.extend_from_slice(b"\",\n      \"time\": ");
        match h.key.time {
            Some(t) => iso_time(&mut out, t)?,
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\n      \"onPath\": ");
        out.extend_from_slice(if on_path { b"true" } else { b"false" });
        out.extend_from_slice(b",\n      \"score\": ");
        out.extend_from_slice(h.key.score.to_string().as_bytes());
        out.extend_from_slice(b",\n      \"snippet\": ");
        string(&mut out, &snip);
        out.extend_from_slice(b",\n      \"marks\": ");
        if marks.is_empty() {
            out.extend_from_slice(b"[]");
        } else {
            out.extend_from_slice(b"[\n");
            for (j, (a, b)) in marks.iter().enumerate() {
                if j > 0 {
                    out.extend_from_slice(b",\n");
                }
                out.extend_from_slice(
                    format!("        [\n          {a},\n          {b}\n        ]").as_bytes(),
                );
            }
            out.extend_from_slice(b"\n      ]");
        }
        out.extend_from_slice(b",\n      \"open\": ");
        let mut open = String::with_capacity(head.open.len() + id.len() + 2);
        open.push_str(&head.open);
        shell_quote(&mut open, id);
        string(&mut out, &open);
        out.extend_from_slice(b"\n    }");
    }
    Some(out)
}

/// `shlex.quote(s)` appended to `out`, or `s` itself when it is ASCII letters and
/// digits (`cli/search.py`'s `_quote`, the same text).
pub fn shell_quote(out: &mut String, s: &str) {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        out.push_str(s);
        return;
    }
    out.push('\'');
    out.push_str(&s.replace('\'', "'\"'\"'"));
    out.push('\'');
}

/// The first and last millisecond `datetime` holds (years 1 to 9999).
const MIN_MS: i64 = -62_135_596_800_000;
const MAX_MS: i64 = 253_402_300_799_999;

/// Epoch milliseconds as `datetime_from_ms(t).isoformat()` writes them, quoted
/// (`"2025-12-03T07:26:04.263000+00:00"`; no fraction when it is zero), or `null`
/// where that gives `None` (not finite, outside years 1 to 9999). `None` for a time
/// that is not a whole millisecond (Python's rounding of the microseconds decides it).
pub fn iso_time(out: &mut Vec<u8>, t: f64) -> Option<()> {
    if t.is_finite() && t.fract() != 0.0 {
        return None;
    }
    if !t.is_finite() || t < MIN_MS as f64 || t > MAX_MS as f64 {
        out.extend_from_slice(b"null");
        return Some(());
    }
    let ms = t as i64;
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = crate::time::civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    let frac = if milli == 0 {
        String::new()
    } else {
        format!(".{:06}", milli * 1000)
    };
    out.extend_from_slice(
        format!("\"{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}+00:00\"").as_bytes(),
    );
    Some(())
}

#[cfg(test)]
mod tests {
    use super::{iso_time, shell_quote, string};
    use crate::time::civil_from_days as civil;

    fn iso(t: f64) -> Option<String> {
        let mut v = Vec::new();
        iso_time(&mut v, t).map(|_| String::from_utf8(v).unwrap())
    }

    #[test]
    fn times_as_isoformat_writes_them() {
        assert_eq!(iso(0.0).unwrap(), "\"1970-01-01T00:00:00+00:00\"");
        assert_eq!(
            iso(1_764_746_764_263.0).unwrap(),
            "\"2025-12-03T07:26:04.263000+00:00\""
        );
        assert_eq!(iso(-1.0).unwrap(), "\"1969-12-31T23:59:59.999000+00:00\"");
        assert_eq!(
            iso(-62_135_596_800_000.0).unwrap(),
            "\"0001-01-01T00:00:00+00:00\""
        );
        assert_eq!(iso(-62_135_596_800_001.0).unwrap(), "null");
        assert_eq!(iso(f64::NAN).unwrap(), "null");
        assert_eq!(iso(1.5), None);
        assert_eq!(civil(11_016), (2000, 2, 29));
    }

    #[test]
    fn strings_and_quotes() {
        let mut v = Vec::new();
        string(&mut v, "a\"b\\\n\u{1}\u{7f}\u{85}\u{2028}é");
        assert_eq!(v, b"\"a\\\"b\\\\\\n\\u0001\\u007f\\u0085\\u2028\xc3\xa9\"");
        let mut s = String::new();
        shell_quote(&mut s, "it's");
        assert_eq!(s, "'it'\"'\"'s'");
        let mut s = String::new();
        shell_quote(&mut s, "");
        assert_eq!(s, "''");
    }
}
