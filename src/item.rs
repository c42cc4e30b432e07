//! What one entry shows, made in the core from its line: the Rust counterpart of
//! `python/sessiontree/view/_render.py` and `_entries.item_of` (the rules' home; each
//! function here names the one it follows), for the exports (`section`).
//!
//! Python's answer is the reference. Every function returns `None` where it does not
//! spell the value as Python would (a float, a role or entry type not covered, a
//! preview with characters whose terminal width or `repr` needs Unicode tables), and
//! the caller shows that entry through the Python path instead. `tests/test_export_native.py`
//! holds the two equal on the corpus, the damaged cases and generated sessions.

use crate::value::{to_json, truthy, Value};
use std::borrow::Cow;

/// A piece of an entry's content (`_render.Part`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Image,
    Output,
    Summary,
    Json,
    Note,
}

#[derive(Debug)]
pub struct Part<'a> {
    pub kind: PartKind,
    pub text: Cow<'a, str>,
    pub title: String,
    pub mime: &'a str,
    pub data: &'a str,
    pub error: bool,
}

impl<'a> Part<'a> {
    fn new(kind: PartKind, text: Cow<'a, str>) -> Self {
        Part {
            kind,
            text,
            title: String::new(),
            mime: "",
            data: "",
            error: false,
        }
    }

    fn titled(kind: PartKind, text: Cow<'a, str>, title: String) -> Self {
        Part {
            title,
            ..Part::new(kind, text)
        }
    }
}

/// One entry as shown (`_render.Item`).
#[derive(Debug, Default)]
pub struct Item<'a> {
    pub id: &'a str,
    pub kind: String,
    pub when: String,
    pub meta: Vec<String>,
    pub label: Option<String>,
    pub parts: Vec<Part<'a>>,
}

// ------------------------------------------------------------------ text, as Python

/// Python's `str.isspace` for the characters `str.split()` splits on.
fn py_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\x1c'..='\x1f' | ' ' | '\u{85}' | '\u{a0}' | '\u{1680}'
        | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

/// `" ".join(text.split())`.
pub fn split_join(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for w in text.split(py_space).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// `text[:n]` (code points).
pub fn take_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// `len(text)` (code points) compared with `n` without counting past it.
fn longer_than(text: &str, n: usize) -> bool {
    text.len() > n && text.chars().nth(n).is_some()
}

/// `_escape.safe_block` (the core's one pass, `escape::safe_block`).
pub fn safe_block(text: Cow<'_, str>) -> Cow<'_, str> {
    match crate::escape::safe_block(text.as_bytes()) {
        None => text,
        Some(s) => Cow::Owned(s),
    }
}

/// `_text.value_text(value, limit, none=none)`; `None` for a float (Python's `repr`).
pub fn value_text<'v>(
    v: Option<&'v Value<'_>>,
    limit: Option<usize>,
    none: &'static str,
) -> Option<Cow<'v, str>> {
    let text: Cow<'v, str> = match v {
        None | Some(Value::Null) => Cow::Borrowed(none),
        Some(Value::Str(s)) => Cow::Borrowed(s.as_ref()),
        Some(Value::Bool(b)) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Some(Value::Int(i)) => Cow::Owned(i.to_string()),
        Some(Value::Float(_)) => return None,
        Some(x) => Cow::Owned(to_json(x, false)?),
    };
    Some(match limit {
        Some(n) if longer_than(&text, n) => Cow::Owned(cut_marked(&text, n)),
        _ => text,
    })
}

/// `text` (longer than `n` characters) cut to `n`, the last an `…`, as
/// `_text.value_text` cuts: a preview says it was cut.
fn cut_marked(text: &str, n: usize) -> String {
    if n == 0 {
        return String::new();
    }
    let mut s = take_chars(text, n - 1).to_owned();
    s.push('…');
    s
}

/// `_render.clean(value)`.
pub fn clean<'v>(v: Option<&'v Value<'_>>) -> Option<Cow<'v, str>> {
    Some(safe_block(value_text(v, None, "")?))
}

/// `_render.doc_line(value, limit)`.
pub fn doc_line(v: Option<&Value<'_>>, limit: usize) -> Option<String> {
    let raw = value_text(v, Some(limit * 4), "")?;
    Some(cut_line(&safe_block(raw), limit))
}

/// The rest of `doc_line` once the text is clean: one line, at most `limit` characters.
fn cut_line(clean_text: &str, limit: usize) -> String {
    let text = split_join(clean_text);
    if longer_than(&text, limit) {
        let mut s = take_chars(&text, limit - 1).to_owned();
        s.push('…');
        s
    } else {
        text
    }
}

/// `doc_line` of a string.
pub fn doc_line_str(s: &str, limit: usize) -> String {
    let raw = if longer_than(s, limit * 4) {
        Cow::Owned(cut_marked(s, limit * 4))
    } else {
        Cow::Borrowed(s)
    };
    cut_line(&safe_block(raw), limit)
}

/// `f"{n:,}"` of an integer.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `_text.num(value)`; `None` for a float.
fn num(v: Option<&Value<'_>>) -> Option<String> {
    match v {
        Some(Value::Int(i)) => Some(thousands(*i)),
        Some(Value::Float(_)) => None,
        _ => Some("-".to_owned()),
    }
}

/// `_text.usage_text(usage)`; `None` where a number is a float (the cost's total aside).
pub fn usage_text(usage: Option<&Value<'_>>) -> Option<Vec<String>> {
    let Some(u @ Value::Obj(_)) = usage else {
        return Some(Vec::new());
    };
    let number = |k: &str| match u.get(k) {
        Some(v @ (Value::Int(_) | Value::Float(_))) => Some(v),
        _ => None,
    };
    let mut parts = Vec::new();
    for (key, word) in [("input", "in"), ("output", "out")] {
        if let Some(v) = number(key) {
            parts.push(format!("{word} {}", num(Some(v))?));
        }
    }
    let (cr, cw) = (number("cacheRead"), number("cacheWrite"));
    if cr.is_some_and(Value::truthy) || cw.is_some_and(Value::truthy) {
        let zero = Value::Int(0);
        let or0 = |v: Option<&Value<'_>>| match v {
            Some(x) if x.truthy() => num(Some(x)),
            _ => num(Some(&zero)),
        };
        parts.push(format!("cache {} read, {} written", or0(cr)?, or0(cw)?));
    }
    let mut out = if parts.is_empty() {
        Vec::new()
    } else {
        vec![parts.join(" · ")]
    };
    let total = match u.get("cost") {
        Some(c @ Value::Obj(_)) => match c.get("total") {
            Some(Value::Int(i)) if i.unsigned_abs() <= 1 << 53 => Some(*i as f64),
            Some(Value::Int(_)) => return None,
            Some(Value::Float(f)) => Some(*f),
            _ => None,
        },
        _ => None,
    };
    if let Some(t) = total {
        if !t.is_finite() {
            return None;
        }
        // Rust's fixed precision is correctly rounded, ties to even, as Python's.
        out.push(format!("${t:.4}"));
    }
    Some(out)
}

/// `_text.model_label(provider, model, unknown=unknown)` (`usage::model_name`): a side
/// that is not a non-empty string is a side the session does not give.
pub fn model_label(
    provider: Option<&Value<'_>>,
    model: Option<&Value<'_>>,
    unknown: &str,
) -> String {
    fn side<'v>(v: Option<&'v Value<'_>>) -> &'v [u8] {
        match v {
            Some(Value::Str(s)) => s.as_bytes(),
            _ => b"",
        }
    }
    let name = crate::usage::model_name(side(provider), side(model), unknown.as_bytes());
    // UTF-8 throughout: the sides are `str`s and `unknown` one.
    String::from_utf8(name).unwrap_or_default()
}

const MS_YEAR_10000: i64 = 253_402_300_800_000;

/// `_text.ms_time(ms)`; `None` where Python goes through `datetime` (a float, a time
/// before 1970 or from the year 10000).
pub fn ms_time(v: Option<&Value<'_>>) -> Option<String> {
    match v {
        Some(Value::Int(ms)) => utc_text(*ms),
        Some(Value::Float(_)) => None,
        _ => Some(String::new()),
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` of epoch milliseconds from 1970 to the year 9999 (the
/// zone said: docs/CONTRACT.md §10 "Times"), else `None` (Python's `datetime` words it).
fn utc_text(ms: i64) -> Option<String> {
    if !(0..MS_YEAR_10000).contains(&ms) {
        return None;
    }
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = crate::time::civil_from_days(days);
    Some(format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    ))
}

/// `_render._when`: an entry's ISO `timestamp` in UTC (`utc_text`), `""` when it is
/// no time; `None` for a time `utc_text` leaves to Python.
fn entry_when(ts: &str) -> Option<String> {
    match crate::time::parse_iso_ms(ts.as_bytes()) {
        Some(ms) => utc_text(ms),
        None => Some(String::new()),
    }
}

/// Python's `repr` of a string made of ASCII and `…` (the caller checks), else `None`.
fn py_repr(s: &str) -> Option<String> {
    if !s.chars().all(|c| c.is_ascii() || c == '…') {
        return None;
    }
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    Some(out)
}

/// `_text.collapse(value, limit)`.
fn collapse(v: Option<&Value<'_>>, limit: usize, none: &'static str) -> Option<String> {
    Some(split_join(&value_text(v, Some(limit), none)?))
}

/// `_cells.fit(text, width)` for text of one-cell characters (ASCII and `…`), else `None`.
fn fit(text: &str, width: usize) -> Option<String> {
    if !text.chars().all(|c| c.is_ascii() || c == '…') {
        return None;
    }
    if !longer_than(text, width) {
        return Some(text.to_owned());
    }
    let kept = take_chars(text, width - 1)
        .trim_end_matches(py_space)
        .trim_end_matches('…');
    Some(format!("{kept}…"))
}

/// `_preview.tool_call_preview(block, width, clean)` with `_render.clean`.
fn tool_call_preview(block: &Value<'_>, width: usize) -> Option<String> {
    let mut shown = Vec::new();
    if let Some(Value::Obj(args)) = block.get("arguments") {
        for (key, value) in args.iter().take(3) {
            let mut v = collapse(Some(value), 80, "")?;
            if longer_than(&v, 40) {
                v = format!("{}…", take_chars(&v, 39));
            }
            if matches!(value, Value::Str(_)) {
                v = py_repr(&v)?;
            }
            let k = if longer_than(key, 80) {
                split_join(&cut_marked(key, 80))
            } else {
                split_join(key)
            };
            shown.push(format!("{k}={v}"));
        }
    }
    let question = Value::Str(Cow::Borrowed("?"));
    let name = collapse(Some(block.get("name").unwrap_or(&question)), 200, "")?;
    let text = format!("{name}({})", shown.join(", "));
    fit(&safe_block(Cow::Owned(text)), width)
}

// ------------------------------------------------------------------ the item

/// `_entries.item_of(entry, label)`, or `None` where Python's spelling is not copied.
pub fn item_of<'a>(entry: &'a Value<'a>, label: Option<&str>) -> Option<Item<'a>> {
    let id = entry.get("id")?.as_str()?;
    // An id is shown escaped, whole, up to 80 characters (`_render.doc_id`): one of
    // ASCII graphic characters is shown as it is; any other goes to Python.
    if id.len() > 80 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let mut item = Item {
        id,
        kind: doc_line(entry.get("type"), 60)?,
        when: match entry.get("timestamp") {
            Some(Value::Str(ts)) => entry_when(ts)?,
            _ => String::new(),
        },
        label: label.map(|l| safe_block(Cow::Borrowed(l)).into_owned()),
        ..Item::default()
    };
    match entry.get("type").and_then(Value::as_str) {
        Some("message") => {
            let msg @ Value::Obj(_) = entry.get("message")? else {
                return None;
            };
            let role = msg.get("role");
            item.kind = match role {
                None | Some(Value::Null) => "message".to_owned(),
                r => doc_line(r, 60)?,
            };
            // `_render.start_message`: a message's own time, even none (no time); the
            // entry's only where the message has no `timestamp`.
            match msg.get("timestamp") {
                None | Some(Value::Null) => {}
                ts => item.when = ms_time(ts)?,
            }
            match role.and_then(Value::as_str) {
                Some("assistant") => assistant(&mut item, msg)?,
                Some("toolResult") => tool_result(&mut item, msg)?,
                Some("bashExecution") => bash_execution(&mut item, msg)?,
                Some("custom" | "hookMessage") => {
                    item.meta.push(doc_line(msg.get("customType"), 120)?);
                    content_parts(&mut item.parts, msg.get("content"), PartKind::Text, false)?;
                }
                Some("compactionSummary" | "branchSummary") => {
                    item.parts
                        .push(Part::new(PartKind::Summary, clean(msg.get("summary"))?));
                }
                _ => content_parts(&mut item.parts, msg.get("content"), PartKind::Text, false)?,
            }
        }
        Some("compaction") => {
            item.meta
                .push(format!("{} tokens before", num(entry.get("tokensBefore"))?));
            item.meta.push(format!(
                "keeps from {}",
                doc_line(entry.get("firstKeptEntryId"), 120)?
            ));
            item.meta.extend(usage_text(entry.get("usage"))?);
            item.parts
                .push(Part::new(PartKind::Summary, clean(entry.get("summary"))?));
        }
        Some("branch_summary") => {
            item.meta
                .push(format!("from {}", doc_line(entry.get("fromId"), 120)?));
            item.meta.extend(usage_text(entry.get("usage"))?);
            let mut s = clean(entry.get("summary"))?;
            if s.is_empty() {
                s = Cow::Borrowed("(empty summary)");
            }
            item.parts.push(Part::new(PartKind::Summary, s));
        }
        Some("custom_message") => {
            let hidden = if truthy(entry.get("display")) {
                ""
            } else {
                " (hidden from the user)"
            };
            item.meta.push(format!(
                "{}{hidden}",
                doc_line(entry.get("customType"), 120)?
            ));
            content_parts(&mut item.parts, entry.get("content"), PartKind::Text, false)?;
        }
        Some("custom") => {
            item.meta.push(doc_line(entry.get("customType"), 120)?);
            if entry.has("data") {
                let json = to_json(entry.get("data")?, true)?;
                item.parts.push(Part::titled(
                    PartKind::Json,
                    safe_block(Cow::Owned(json)),
                    "extension state".into(),
                ));
            }
        }
        Some("model_change") if entry.has("provider") || entry.has("modelId") => {
            let text = model_label(
                entry.get("provider"),
                entry.get("modelId"),
                crate::usage::UNKNOWN,
            );
            note(&mut item, format!("model → {}", doc_line_str(&text, 300)));
        }
        Some("thinking_level_change") => {
            note(
                &mut item,
                format!(
                    "thinking level → {}",
                    doc_line(entry.get("thinkingLevel"), 120)?
                ),
            );
        }
        Some("label") => {
            let what = match entry.get("label") {
                Some(Value::Str(l)) if !l.is_empty() => {
                    format!("label {}", py_repr(&doc_line_str(l, 120))?)
                }
                _ => "label cleared".to_owned(),
            };
            note(
                &mut item,
                format!("{what} on {}", doc_line(entry.get("targetId"), 120)?),
            );
        }
        Some("session_info") => {
            note(
                &mut item,
                format!("session name: {}", doc_line(entry.get("name"), 120)?),
            );
        }
        _ => return None,
    }
    Some(item)
}

fn note(item: &mut Item<'_>, text: String) {
    item.parts.push(Part::new(PartKind::Note, Cow::Owned(text)));
}

/// `_render.assistant`.
fn assistant<'a>(item: &mut Item<'a>, msg: &'a Value<'a>) -> Option<()> {
    let model = model_label(msg.get("provider"), msg.get("model"), "");
    if !model.is_empty() {
        item.meta.push(doc_line_str(&model, 300));
    }
    match msg.get("stopReason") {
        None | Some(Value::Null) => {}
        Some(Value::Str(s)) if s == "stop" || s == "toolUse" => {}
        stop => item.meta.push(format!("stop: {}", doc_line(stop, 60)?)),
    }
    item.meta.extend(usage_text(msg.get("usage"))?);
    if truthy(msg.get("errorMessage")) {
        note(
            item,
            format!("error: {}", doc_line(msg.get("errorMessage"), 500)?),
        );
    }
    content_parts(&mut item.parts, msg.get("content"), PartKind::Text, false)
}

/// `_render.tool_result`.
fn tool_result<'a>(item: &mut Item<'a>, msg: &'a Value<'a>) -> Option<()> {
    let error = truthy(msg.get("isError"));
    item.meta.push(format!(
        "{}{}",
        doc_line(msg.get("toolName"), 80)?,
        if error { " ✗ error" } else { "" }
    ));
    content_parts(
        &mut item.parts,
        msg.get("content"),
        PartKind::ToolResult,
        error,
    )
}

/// `_render.bash_execution`.
fn bash_execution<'a>(item: &mut Item<'a>, msg: &'a Value<'a>) -> Option<()> {
    let code = msg.get("exitCode");
    item.meta.push(match code {
        None | Some(Value::Null) => "no exit code".to_owned(),
        c => format!("exit {}", doc_line(c, 20)?),
    });
    if truthy(msg.get("excludeFromContext")) {
        item.meta.push("excluded from the context".to_owned());
    }
    note(item, format!("$ {}", doc_line(msg.get("command"), 2000)?));
    // `code not in (0, None)`: False == 0 in Python.
    let error = !matches!(
        code,
        None | Some(Value::Null | Value::Int(0) | Value::Bool(false))
    );
    let mut out = Part::new(PartKind::Output, clean(msg.get("output"))?);
    out.error = error;
    item.parts.push(out);
    Some(())
}

/// `_render._content_parts`.
fn content_parts<'a>(
    parts: &mut Vec<Part<'a>>,
    content: Option<&'a Value<'a>>,
    kind: PartKind,
    error: bool,
) -> Option<()> {
    let text_part = |text: Cow<'a, str>| Part {
        error,
        ..Part::new(kind, text)
    };
    match content {
        Some(Value::Str(_)) => parts.push(text_part(clean(content)?)),
        None | Some(Value::Null) => {}
        Some(Value::Arr(blocks)) => {
            for block in blocks {
                if !matches!(block, Value::Obj(_)) {
                    parts.push(json_part(block, "content block".into())?);
                    continue;
                }
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(text_part(clean(block.get("text"))?)),
                    Some("thinking") => {
                        if truthy(block.get("redacted")) && !truthy(block.get("thinking")) {
                            parts.push(Part::new(
                                PartKind::Note,
                                Cow::Borrowed("(redacted thinking)"),
                            ));
                        } else {
                            parts
                                .push(Part::new(PartKind::Thinking, clean(block.get("thinking"))?));
                        }
                    }
                    Some("toolCall") => {
                        let args = match block.get("arguments") {
                            Some(a) => to_json(a, true)?,
                            None => "null".to_owned(),
                        };
                        let title = tool_call_preview(block, 120)?;
                        parts.push(Part::titled(
                            PartKind::ToolCall,
                            safe_block(Cow::Owned(args)),
                            title,
                        ));
                    }
                    Some("image") => parts.push(image(block)?),
                    _ => {
                        let mut title = doc_line(block.get("type"), 60)?;
                        if title.is_empty() {
                            title = "block".to_owned();
                        }
                        parts.push(json_part(block, title)?);
                    }
                }
            }
        }
        Some(other) => parts.push(json_part(other, "content".into())?),
    }
    Some(())
}

fn json_part<'a>(v: &Value<'_>, title: String) -> Option<Part<'a>> {
    Some(Part::titled(
        PartKind::Json,
        safe_block(Cow::Owned(to_json(v, true)?)),
        title,
    ))
}

const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// `_render._image`; `None` for oh-my-pi's blob references (rare; Python words them).
fn image<'a>(block: &'a Value<'a>) -> Option<Part<'a>> {
    let mime = block.get("mimeType");
    let data = block.get("data");
    if let Some(Value::Str(d)) = data {
        if d.starts_with("blob:") {
            return None;
        }
    }
    let size = match data {
        Some(Value::Str(d)) => d.chars().count() as u64 * 3 / 4,
        _ => 0,
    };
    let base64 = |d: &str| {
        let body = d.trim_end_matches('=');
        d.len() - body.len() <= 2
            && body
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
    };
    match (mime, data) {
        (Some(Value::Str(m)), Some(Value::Str(d)))
            if IMAGE_TYPES.contains(&m.as_ref()) && base64(d) =>
        {
            let mut p = Part::titled(
                PartKind::Image,
                Cow::Borrowed(""),
                format!("image {m} {}", human_bytes(size)),
            );
            p.mime = m;
            p.data = d;
            Some(p)
        }
        _ => Some(Part::new(
            PartKind::Note,
            Cow::Owned(format!(
                "[image {} {}, not shown: not a PNG, JPEG, GIF or WebP in base64]",
                doc_line(mime, 60)?,
                human_bytes(size)
            )),
        )),
    }
}

/// `_text.human_bytes(n)`.
pub fn human_bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1024.0;
    for unit in ["KiB", "MiB", "GiB"] {
        if x.abs() < 1024.0 {
            return format!("{x:.1} {unit}");
        }
        x /= 1024.0;
    }
    format!("{x:.1} TiB")
}

#[cfg(test)]
mod tests {
    use super::{
        entry_when, fit, human_bytes, model_label, ms_time, py_repr, split_join, thousands,
    };
    use crate::time::civil_from_days;
    use crate::value::Value;

    #[test]
    fn spells_as_python() {
        assert_eq!(thousands(-1_234_567), "-1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(split_join(" a \u{1f} b\u{a0}\n"), "a b");
        assert_eq!(py_repr("it's").as_deref(), Some("\"it's\""));
        assert_eq!(py_repr("a'\"\\").as_deref(), Some("'a\\'\"\\\\'"));
        assert_eq!(py_repr("é"), None);
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(fit("abcdef", 4).as_deref(), Some("abc…"));
        assert_eq!(fit("ab …def", 4).as_deref(), Some("ab…"));
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(
            ms_time(Some(&Value::Int(1_762_506_850_306))).as_deref(),
            Some("2025-11-07 09:14:10 UTC")
        );
        assert_eq!(
            entry_when("2025-11-07T10:14:10.306+01:00").as_deref(),
            Some("2025-11-07 09:14:10 UTC")
        );
        assert_eq!(entry_when("not a time").as_deref(), Some("")); // no time: not shown
        let (p, m) = (Value::Str("p".into()), Value::Str("".into()));
        assert_eq!(model_label(Some(&p), Some(&m), ""), "p/(unknown)");
        assert_eq!(model_label(None, Some(&Value::Null), ""), "");
        assert_eq!(
            model_label(Some(&m), Some(&Value::Int(1)), "(unknown)"),
            "(unknown)"
        );
        assert_eq!(entry_when("1969-12-31T23:59:59Z"), None);
        assert_eq!(ms_time(Some(&Value::Float(1.5))), None);
    }
}
