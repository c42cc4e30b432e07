//! The decoded columns of the `entries` and `tool_calls` tables (docs/TABLES.md), from
//! the JSON text of entries, in Arrow's layouts: `_rows.py`'s rules, which the
//! python backend applies to decoded dicts and `tests/test_tables_rows.py` holds equal
//! to these on generated adversarial sessions.
//!
//! An entry's text is walked once, reading only the members the columns need (the last
//! duplicate of a key wins, as `json.loads` keeps it) and skipping every other value
//! with the validator's string skipper; strings are decoded like `json.loads` (lone
//! surrogates kept in generalized UTF-8), then made valid UTF-8 as Python's
//! `surrogatepass` + `decode("utf-8", "replace")` does (`from_utf8_lossy`: one U+FFFD per
//! byte of a surrogate's form) and cut at a character boundary. Image blocks give their
//! `data` undecoded (base64 and its hash are `_rows.image_stub`'s, in Python, for both
//! backends); a tool call's `arguments` is its JSON text as the line holds it. The
//! text must be a line the index accepted (valid JSON, an object).

use std::borrow::Cow;

use crate::scan::{decode_span, skip_value};

/// Most UTF-8 bytes of `entries.text` (`_rows.MAX_TEXT`).
pub const MAX_TEXT: usize = 64 << 10;
/// Most UTF-8 bytes of `tool_calls.result_text` (`_rows.MAX_RESULT`).
pub const MAX_RESULT: usize = 4 << 10;
/// Most UTF-8 bytes of `tool_calls.arguments` (`_rows.MAX_ARGUMENTS`).
pub const MAX_ARGUMENTS: usize = 16 << 10;
/// Most UTF-8 bytes of every other string column (`_rows.MAX_FIELD`).
pub const MAX_FIELD: usize = 4 << 10;

/// The string columns of `entries` [`Rows::push`] fills, in this order.
pub const STRING_COLUMNS: [&str; 10] = [
    "type",
    "role",
    "provider",
    "model",
    "stop_reason",
    "text",
    "custom_type",
    "label",
    "target_id",
    "first_kept_entry_id",
];
/// Where `text` is in [`STRING_COLUMNS`].
const TEXT: usize = 5;
/// The int64 columns of `entries` [`Rows::push`] fills, in this order.
pub const INT_COLUMNS: [&str; 7] = [
    "text_bytes",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "total_tokens",
    "tokens_before",
];

/// A column of optional UTF-8 (or binary) values: offsets, data, validity.
#[derive(Debug, Default)]
pub struct Strs {
    /// `n + 1` offsets into `data` (i64: an image's data may pass 2 GiB in a batch).
    pub offsets: Vec<i64>,
    /// The values, end to end.
    pub data: Vec<u8>,
    /// Per value: not null.
    pub valid: Vec<bool>,
}

impl Strs {
    fn push(&mut self, v: Option<&[u8]>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        if let Some(b) = v {
            self.data.extend_from_slice(b);
        }
        self.valid.push(v.is_some());
        self.offsets.push(self.data.len() as i64);
    }
}

/// A column of optional values.
#[derive(Debug)]
pub struct Opt<T> {
    /// The values (a default where null).
    pub values: Vec<T>,
    /// Per value: not null.
    pub valid: Vec<bool>,
}

impl<T> Default for Opt<T> {
    fn default() -> Self {
        Opt {
            values: Vec::new(),
            valid: Vec::new(),
        }
    }
}

impl<T: Default> Opt<T> {
    fn push(&mut self, v: Option<T>) {
        self.valid.push(v.is_some());
        self.values.push(v.unwrap_or_default());
    }
}

/// The decoded columns of a run of entries, and their tool calls and results.
#[derive(Debug, Default)]
pub struct Rows {
    /// Entries pushed.
    pub n: usize,
    /// [`STRING_COLUMNS`].
    pub strs: [Strs; 10],
    /// [`INT_COLUMNS`].
    pub ints: [Opt<i64>; 7],
    /// `cost`.
    pub cost: Opt<f64>,
    /// `is_error`.
    pub is_error: Opt<bool>,
    /// Per entry, where its images start in `image_data` (`n + 1` offsets).
    pub image_offsets: Vec<i32>,
    /// Each image block's `data` as decoded JSON string bytes (null: absent or not a
    /// string).
    pub image_data: Strs,
    /// Each image block's `mimeType` (a field).
    pub image_mime: Strs,
    /// Per tool call: the number (from the first pushed, 0) of its entry.
    pub call_entry: Vec<i32>,
    /// Per tool call: `id`, `name` (fields), `arguments` (cut JSON text).
    pub call_strs: [Strs; 3],
    /// Per tool call: the whole `arguments` text's length.
    pub call_arguments_bytes: Opt<i64>,
    /// Per `toolResult`: the number of its entry.
    pub result_entry: Vec<i32>,
    /// Per `toolResult`: `toolCallId` (a field), its text (cut to [`MAX_RESULT`]).
    pub result_strs: [Strs; 2],
    /// Per `toolResult`: its text's whole length.
    pub result_text_bytes: Opt<i64>,
    /// Per `toolResult`: `isError`.
    pub result_is_error: Opt<bool>,
}

type Span = (usize, usize);
/// A decoded string value, borrowed where no decoding was needed (`None`: not a string).
type Text<'a> = Option<Cow<'a, [u8]>>;

/// JSON whitespace.
fn ws(s: &[u8], mut i: usize) -> usize {
    while matches!(s.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The last span of each of `keys`'s values in the object at `span` (none if it is not
/// an object).
fn members<const N: usize>(s: &[u8], span: Option<Span>, keys: &[&[u8]; N]) -> [Option<Span>; N] {
    let mut out = [None; N];
    let Some((start, _)) = span else { return out };
    if s.get(start) != Some(&b'{') {
        return out;
    }
    let mut i = ws(s, start + 1);
    let mut key = Vec::new();
    while s.get(i) == Some(&b'"') {
        let kend = crate::scan::skip_str(s, i);
        let Some(body) = s.get(i + 1..kend.saturating_sub(1)) else {
            break;
        };
        let k: &[u8] = if memchr::memchr(b'\\', body).is_some() {
            key.clear();
            decode_span(body, true, false, &mut key);
            &key
        } else {
            body
        };
        let slot = keys.iter().position(|&w| w == k);
        let v = ws(s, ws(s, kend) + 1); // past `:`
        let end = skip_value(s, v);
        if let Some(p) = slot {
            out[p] = Some((v, end));
        }
        i = ws(s, end);
        if s.get(i) != Some(&b',') {
            break;
        }
        i = ws(s, i + 1);
    }
    out
}

/// Calls `f` with the span of each element of the array at `span` (nothing if it is
/// not an array).
fn elements(s: &[u8], span: Option<Span>, mut f: impl FnMut(Span)) {
    let Some((start, _)) = span else { return };
    if s.get(start) != Some(&b'[') {
        return;
    }
    let mut i = ws(s, start + 1);
    if s.get(i) == Some(&b']') {
        return;
    }
    while i < s.len() {
        let end = skip_value(s, i);
        f((i, end));
        i = ws(s, end);
        if s.get(i) != Some(&b',') {
            break;
        }
        i = ws(s, i + 1);
    }
}

fn is(s: &[u8], span: Option<Span>, c: u8) -> bool {
    span.is_some_and(|(a, _)| s.get(a) == Some(&c))
}

/// A string value decoded as `json.loads` does (generalized UTF-8); `None` if the value
/// is absent or not a string.
fn string(s: &[u8], span: Option<Span>, utf8_ok: bool) -> Option<Cow<'_, [u8]>> {
    let (a, b) = span?;
    if s.get(a) != Some(&b'"') {
        return None;
    }
    let body = s.get(a + 1..b.checked_sub(1)?)?;
    let escaped = memchr::memchr(b'\\', body).is_some();
    if !escaped && utf8_ok {
        return Some(Cow::Borrowed(body));
    }
    let mut out = Vec::with_capacity(body.len());
    decode_span(body, escaped, utf8_ok, &mut out);
    Some(Cow::Owned(out))
}

/// Valid UTF-8: each byte of a lone surrogate's generalized form becomes U+FFFD.
fn clean(b: &[u8]) -> Cow<'_, [u8]> {
    // The SIMD check first: nearly every text is valid, and std's lossy walk is a
    // fifth of the rows' time on Pi's text (perf, docs/TABLES.md "Figures").
    if simdutf8::basic::from_utf8(b).is_ok() {
        return Cow::Borrowed(b);
    }
    match String::from_utf8_lossy(b) {
        Cow::Borrowed(t) => Cow::Borrowed(t.as_bytes()),
        Cow::Owned(t) => Cow::Owned(t.into_bytes()),
    }
}

/// `b` (valid UTF-8) cut to at most `limit` bytes at a character boundary.
fn cut(b: &[u8], limit: usize) -> &[u8] {
    if b.len() <= limit {
        return b;
    }
    let mut k = limit;
    while k > 0 && b[k] & 0xC0 == 0x80 {
        k -= 1;
    }
    &b[..k]
}

/// A short string column's value (`_rows.field`).
fn field<'a>(s: &'a [u8], span: Option<Span>, utf8_ok: bool) -> Option<Cow<'a, [u8]>> {
    let v = string(s, span, utf8_ok)?;
    Some(match v {
        Cow::Borrowed(b) => Cow::Borrowed(cut(b, MAX_FIELD)),
        Cow::Owned(b) => Cow::Owned(cut(&clean(&b), MAX_FIELD).to_vec()),
    })
}

fn number_text(s: &[u8], span: Option<Span>) -> Option<&str> {
    let (a, b) = span?;
    let t = s.get(a..b)?;
    if !matches!(t.first(), Some(b'-' | b'0'..=b'9')) {
        return None;
    }
    std::str::from_utf8(t).ok()
}

/// A token count (`_rows.integer`): an integer, or an integral float, within int64.
fn integer(s: &[u8], span: Option<Span>) -> Option<i64> {
    let t = number_text(s, span)?;
    if t.bytes().any(|c| matches!(c, b'.' | b'e' | b'E')) {
        let f: f64 = t.parse().ok()?;
        const TWO63: f64 = 9_223_372_036_854_775_808.0;
        return (f.is_finite() && f.fract() == 0.0 && (-TWO63..TWO63).contains(&f))
            .then_some(f as i64);
    }
    t.parse().ok()
}

/// A cost (`_rows.number`): any number whose float is finite.
fn number(s: &[u8], span: Option<Span>) -> Option<f64> {
    let f: f64 = number_text(s, span)?.parse().ok()?;
    f.is_finite().then_some(f)
}

fn boolean(s: &[u8], span: Option<Span>) -> Option<bool> {
    let (a, _) = span?;
    match s.get(a) {
        Some(b't') => Some(true),
        Some(b'f') => Some(false),
        _ => None,
    }
}

/// The texts of a content value's text blocks (a string is one) and its image blocks.
struct Blocks<'a> {
    texts: Vec<Cow<'a, [u8]>>,
    /// (`data`, `mimeType`) of each image block.
    images: Vec<(Text<'a>, Text<'a>)>,
}

fn blocks(s: &[u8], content: Option<Span>, utf8_ok: bool) -> Blocks<'_> {
    let mut out = Blocks {
        texts: Vec::new(),
        images: Vec::new(),
    };
    if let Some(t) = string(s, content, utf8_ok) {
        out.texts.push(t);
        return out;
    }
    elements(s, content, |block| {
        let [ty, text, data, mime] =
            members(s, Some(block), &[b"type", b"text", b"data", b"mimeType"]);
        match string(s, ty, utf8_ok).as_deref() {
            Some(b"text") => out.texts.extend(string(s, text, utf8_ok)),
            Some(b"image") => out
                .images
                .push((string(s, data, utf8_ok), field(s, mime, utf8_ok))),
            _ => {}
        }
    });
    out
}

/// The texts joined by `\n`, made valid UTF-8: `None` when there is none. One text
/// (most entries) is passed on as it is when it is valid: a long text is never copied
/// here (it is copied once, into its column).
fn joined(texts: Vec<Cow<'_, [u8]>>) -> Option<Cow<'_, [u8]>> {
    let mut texts = texts.into_iter();
    let first = texts.next()?;
    let Some(second) = texts.next() else {
        return Some(match first {
            Cow::Borrowed(b) => clean(b),
            Cow::Owned(v) => match clean(&v) {
                Cow::Borrowed(_) => Cow::Owned(v),
                Cow::Owned(c) => Cow::Owned(c),
            },
        });
    };
    let mut all = first.into_owned();
    for t in std::iter::once(second).chain(texts) {
        all.push(b'\n');
        all.extend_from_slice(&t);
    }
    Some(match clean(&all) {
        Cow::Borrowed(_) => Cow::Owned(all),
        Cow::Owned(c) => Cow::Owned(c),
    })
}

const TOP: [&[u8]; 13] = [
    b"type",
    b"message",
    b"customType",
    b"content",
    b"summary",
    b"usage",
    b"firstKeptEntryId",
    b"tokensBefore",
    b"provider",
    b"modelId",
    b"model",
    b"targetId",
    b"label",
];
const MESSAGE: [&[u8]; 10] = [
    b"role",
    b"provider",
    b"model",
    b"stopReason",
    b"usage",
    b"output",
    b"content",
    b"customType",
    b"isError",
    b"toolCallId",
];

impl Rows {
    /// Room for `entries` rows whose lines hold `bytes`: the `text` column's data
    /// (about as long as the lines at most: a hint, it grows past it if it must) is
    /// reserved whole, so it is not moved as it grows (pages of the reserve never
    /// written are never touched).
    pub fn with_capacity(entries: usize, bytes: usize) -> Rows {
        let mut rows = Rows::default();
        for c in &mut rows.strs {
            c.offsets.reserve(entries + 1);
            c.valid.reserve(entries);
        }
        rows.strs[TEXT].data.reserve(bytes);
        rows
    }

    /// Add the row of the entry whose JSON text is `line` (an object the index
    /// accepted), its tool calls and its result; `entry` numbers it in the batch.
    pub fn push(&mut self, line: &[u8]) {
        let entry = self.n as i32;
        self.n += 1;
        if self.image_offsets.is_empty() {
            self.image_offsets.push(0);
        }
        let s = line;
        let ok = simdutf8::basic::from_utf8(s).is_ok();
        let top = members(s, Some((ws(s, 0), s.len())), &TOP);
        let [ty, message, custom_type, content, summary, usage, first_kept, tokens_before, provider, model_id, model, target_id, label] =
            top;
        let etype = string(s, ty, ok);
        let mut strs: [Option<Cow<'_, [u8]>>; 10] = Default::default();
        let mut tokens: [Option<i64>; 5] = [None; 5];
        let mut cost = None;
        let mut before = None;
        let mut is_error = None;
        let mut b = Blocks {
            texts: Vec::new(),
            images: Vec::new(),
        };
        let usage_of = |u: Option<Span>, tokens: &mut [Option<i64>; 5], cost: &mut Option<f64>| {
            let [i, o, cr, cw, tt, c] = members(
                s,
                u,
                &[
                    b"input",
                    b"output",
                    b"cacheRead",
                    b"cacheWrite",
                    b"totalTokens",
                    b"cost",
                ],
            );
            if !is(s, u, b'{') {
                return;
            }
            *tokens = [
                integer(s, i),
                integer(s, o),
                integer(s, cr),
                integer(s, cw),
                integer(s, tt),
            ];
            *cost = if is(s, c, b'{') {
                let [total] = members(s, c, &[b"total"]);
                number(s, total)
            } else {
                number(s, c)
            };
        };
        match etype.as_deref() {
            Some(b"message") if is(s, message, b'{') => {
                let [role, m_provider, m_model, stop, m_usage, output, m_content, m_custom, m_error, call_id] =
                    members(s, message, &MESSAGE);
                let role_v = string(s, role, ok);
                strs[1] = field(s, role, ok);
                strs[2] = field(s, m_provider, ok);
                strs[3] = field(s, m_model, ok);
                strs[4] = field(s, stop, ok);
                usage_of(m_usage, &mut tokens, &mut cost);
                match role_v.as_deref() {
                    Some(b"bashExecution") => b.texts.extend(string(s, output, ok)),
                    _ => b = blocks(s, m_content, ok),
                }
                match role_v.as_deref() {
                    Some(b"custom") => strs[6] = field(s, m_custom, ok),
                    Some(b"toolResult") => {
                        is_error = boolean(s, m_error);
                        if let Some(call) = field(s, call_id, ok) {
                            self.result_entry.push(entry);
                            self.result_strs[0].push(Some(&call));
                            self.result_is_error.push(is_error);
                        }
                    }
                    Some(b"assistant") => self.push_calls(s, m_content, entry, ok),
                    _ => {}
                }
            }
            Some(b"custom_message") => {
                strs[6] = field(s, custom_type, ok);
                b = blocks(s, content, ok);
            }
            Some(t @ (b"compaction" | b"branch_summary")) => {
                b.texts.extend(string(s, summary, ok));
                usage_of(usage, &mut tokens, &mut cost);
                if t == b"compaction" {
                    strs[9] = field(s, first_kept, ok);
                    before = integer(s, tokens_before);
                }
            }
            Some(b"model_change") => {
                strs[2] = field(s, provider, ok);
                strs[3] = field(s, model_id, ok);
            }
            Some(b"usage") => {
                strs[2] = field(s, provider, ok);
                strs[3] = field(s, model, ok);
                usage_of(usage, &mut tokens, &mut cost);
            }
            Some(b"label") => {
                strs[8] = field(s, target_id, ok);
                strs[7] = field(s, label, ok);
            }
            Some(b"context_edit" | b"leaf") => strs[8] = field(s, target_id, ok),
            Some(b"custom") => strs[6] = field(s, custom_type, ok),
            _ => {}
        }
        strs[0] = field(s, ty, ok);
        let text = joined(std::mem::take(&mut b.texts));
        let text_bytes = text.as_ref().map(|t| t.len() as i64);
        if self.result_entry.last() == Some(&entry) {
            self.result_strs[1].push(text.as_deref().map(|t| cut(t, MAX_RESULT)));
            self.result_text_bytes.push(text_bytes);
        }
        for (k, (col, v)) in self.strs.iter_mut().zip(&strs).enumerate() {
            if k == TEXT {
                col.push(text.as_deref().map(|t| cut(t, MAX_TEXT)));
            } else {
                col.push(v.as_deref());
            }
        }
        for (col, v) in self.ints.iter_mut().zip([
            text_bytes, tokens[0], tokens[1], tokens[2], tokens[3], tokens[4], before,
        ]) {
            col.push(v);
        }
        self.cost.push(cost);
        self.is_error.push(is_error);
        for (data, mime) in &b.images {
            self.image_data.push(data.as_deref());
            self.image_mime.push(mime.as_deref());
        }
        self.image_offsets
            .push((self.image_data.valid.len()) as i32);
    }

    fn push_calls(&mut self, s: &[u8], content: Option<Span>, entry: i32, ok: bool) {
        elements(s, content, |block| {
            let [ty, id, name, arguments] =
                members(s, Some(block), &[b"type", b"id", b"name", b"arguments"]);
            if string(s, ty, ok).as_deref() != Some(b"toolCall") {
                return;
            }
            self.call_entry.push(entry);
            self.call_strs[0].push(field(s, id, ok).as_deref());
            self.call_strs[1].push(field(s, name, ok).as_deref());
            match arguments {
                Some((a, b)) => {
                    let text = clean(s.get(a..b).unwrap_or_default());
                    self.call_strs[2].push(Some(cut(&text, MAX_ARGUMENTS)));
                    self.call_arguments_bytes.push(Some(text.len() as i64));
                }
                None => {
                    self.call_strs[2].push(None);
                    self.call_arguments_bytes.push(None);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: &Strs, k: usize) -> Option<&str> {
        r.valid[k].then(|| {
            std::str::from_utf8(&r.data[r.offsets[k] as usize..r.offsets[k + 1] as usize]).unwrap()
        })
    }

    #[test]
    fn a_message_its_usage_calls_and_a_result() {
        let mut r = Rows::default();
        r.push(br#"{"type":"message","id":"a","message":{"role":"assistant","provider":"p","model":"m","content":[{"type":"text","text":"hi"},5,{"type":"toolCall","id":"c1","name":"read","arguments":{"x": [1, 2]}},{"type":"text","text":"\ud800x"}],"usage":{"input":1,"output":2.0,"cacheRead":true,"cacheWrite":"3","totalTokens":1e400,"cost":{"total":0.5}},"stopReason":"toolUse"}}"#);
        r.push(br#"{"type":"message","id":"b","message":{"role":"toolResult","toolCallId":"c1","isError":false,"content":[{"type":"image","data":"abc","mimeType":"image/png"},{"type":"text","text":"out"}]}}"#);
        r.push(br#"{"type":"compaction","summary":"s","tokensBefore":12.0,"firstKeptEntryId":"a","type":"label","label":"l","targetId":"a"}"#);
        assert_eq!(r.n, 3);
        assert_eq!(text(&r.strs[0], 0), Some("message"));
        assert_eq!(text(&r.strs[5], 0), Some("hi\n\u{fffd}\u{fffd}\u{fffd}x"));
        assert_eq!(r.ints[0].values[0], 13);
        assert_eq!(
            (0..6)
                .map(|k| r.ints[k].valid[0].then_some(r.ints[k].values[0]))
                .collect::<Vec<_>>(),
            vec![Some(13), Some(1), Some(2), None, None, None]
        );
        assert_eq!(r.cost.values[0], 0.5);
        assert_eq!(text(&r.call_strs[2], 0), Some(r#"{"x": [1, 2]}"#));
        assert_eq!(r.result_entry, vec![1]);
        assert_eq!(text(&r.result_strs[1], 0), Some("out"));
        assert_eq!(r.image_offsets, vec![0, 0, 1, 1]);
        assert_eq!(text(&r.image_data, 0), Some("abc"));
        // The last `type` wins: a label.
        assert_eq!(text(&r.strs[0], 2), Some("label"));
        assert_eq!(text(&r.strs[7], 2), Some("l"));
        assert!(!r.ints[6].valid[2]);
    }

    #[test]
    fn cuts_at_a_character_boundary() {
        assert_eq!(cut("aé".as_bytes(), 2), b"a");
        assert_eq!(cut("aé".as_bytes(), 3), "aé".as_bytes());
        assert_eq!(integer(b"-0", Some((0, 2))), Some(0));
        assert_eq!(integer(b"9223372036854775808", Some((0, 19))), None);
        assert_eq!(integer(b"1e3", Some((0, 3))), Some(1000));
        assert_eq!(number(b"1e400", Some((0, 5))), None);
    }
}
