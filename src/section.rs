//! A path's entries as the exports write them, made in the core from the index's lines:
//! the Rust counterpart of `python/sessiontree/export/markdown.py`'s `_section` and
//! `export/html.py`'s `_article` (the rules' homes), over `item` (the view's item of an
//! entry).
//!
//! An entry this module does not render exactly as Python does gives `None` (`item`'s
//! declines, and text whose containment needs markdown-it-py's parse: a `<` that may
//! start raw HTML, a setext underline, a fence in a list or left open), and the export
//! renders it through the Python path; `tests/test_export_native.py` holds the two equal.

use crate::item::{item_of, split_join, Item, Part, PartKind};
use crate::value::{parse, Value};
use std::borrow::Cow;

/// Markdown's `--detail` (`export/markdown.py` `DETAILS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Full,
    NoTools,
    UserOnly,
}

impl Detail {
    pub fn from_name(name: &str) -> Option<Detail> {
        match name {
            "full" => Some(Detail::Full),
            "no-tools" => Some(Detail::NoTools),
            "user-only" => Some(Detail::UserOnly),
            _ => None,
        }
    }
}

/// `view/_entries.py` `CONVERSATION`: the kinds `--detail no-tools` keeps.
const CONVERSATION: [&str; 10] = [
    "custom_message",
    "compaction",
    "branch_summary",
    "user",
    "assistant",
    "custom",
    "system",
    "hookMessage",
    "compactionSummary",
    "branchSummary",
];

/// What `write_markdown` writes for the entry on `line` (`"\n"` and its section, or
/// `""` when the detail leaves it out), or `None` for the Python path. `id` is the id
/// the index holds for the line: a line that names another is left to Python, which
/// reports it stale.
pub fn markdown_section(
    line: &[u8],
    id: &str,
    label: Option<&str>,
    detail: Detail,
) -> Option<String> {
    let entry = parse(line)?;
    if entry.get("id").and_then(Value::as_str) != Some(id) {
        return None;
    }
    let item = item_of(&entry, label)?;
    section(&item, detail)
}

fn plain_part(kind: PartKind) -> bool {
    matches!(kind, PartKind::Text | PartKind::Summary | PartKind::Image)
}

/// `markdown._section`, with the `"\n"` `write_markdown` puts before it.
fn section(item: &Item<'_>, detail: Detail) -> Option<String> {
    let conversation = CONVERSATION.contains(&item.kind.as_str());
    let keep_kind = match detail {
        Detail::Full => true,
        Detail::UserOnly => item.kind == "user",
        Detail::NoTools => conversation,
    };
    if !keep_kind {
        return Some(String::new());
    }
    let parts: Vec<&Part<'_>> = item
        .parts
        .iter()
        .filter(|p| detail == Detail::Full || plain_part(p.kind))
        .collect();
    if parts.is_empty() && detail != Detail::Full {
        return Some(String::new());
    }
    let mut out = String::with_capacity(256);
    out.push_str("\n## ");
    out.push_str(&heading(item, detail == Detail::Full));
    out.push('\n');
    for p in parts {
        out.push('\n');
        part(p, item, &mut out)?;
    }
    Some(out)
}

/// What the HTML export writes for the entry on `line`, its number `n` (`export/html.py`
/// `_article`: `shown` on the path shown, `out` outside the model's context there;
/// `kinds` the view's `KINDS`), or `None` for the Python path.
pub fn html_article(
    line: &[u8],
    id: &str,
    label: Option<&str>,
    n: i64,
    shown: bool,
    out: bool,
    kinds: &[&str],
) -> Option<String> {
    let entry = parse(line)?;
    if entry.get("id").and_then(Value::as_str) != Some(id) {
        return None;
    }
    let item = item_of(&entry, label)?;
    Some(article(&item, n, shown, out, kinds))
}

/// `html.h` (`html.escape(text, quote=True)`).
fn h(text: &str) -> Cow<'_, str> {
    match crate::escape::html_escape(text.as_bytes()) {
        None => Cow::Borrowed(text),
        // The five replaced are ASCII: what is left is the text's UTF-8.
        Some(b) => Cow::Owned(String::from_utf8(b).unwrap_or_default()),
    }
}

/// `html._article`.
fn article(item: &Item<'_>, n: i64, shown: bool, out: bool, kinds: &[&str]) -> String {
    let known = kinds.contains(&item.kind.as_str());
    let kind = h(&item.kind);
    let kcls = if known {
        format!(" k-{}", item.kind)
    } else {
        String::new()
    };
    let mut o = String::with_capacity(512);
    o.push_str(&format!("<article id=\"a{n}\" class=\"m"));
    if known {
        o.push_str(&format!(" m-{}", item.kind));
    }
    if shown {
        o.push_str(" shown");
    }
    if out {
        o.push_str(" out");
    }
    o.push_str(&format!(
        "\" data-n=\"{n}\"><header><span class=\"k{kcls}\">{kind}</span>"
    ));
    if !item.when.is_empty() {
        o.push_str(&format!("<span>{}</span>", h(&item.when)));
    }
    if !item.meta.is_empty() {
        let meta: Vec<&str> = item
            .meta
            .iter()
            .filter(|m| !m.is_empty())
            .map(String::as_str)
            .collect();
        o.push_str(&format!("<span>{}</span>", h(&meta.join(" · "))));
    }
    if let Some(label) = &item.label {
        o.push_str(&format!(
            "<span class=\"lb\">[{}]</span>",
            h(&crate::item::doc_line_str(label, 200))
        ));
    }
    o.push_str(&format!(
        "<a class=\"eid\" href=\"#a{n}\">{}</a></header>",
        h(&crate::item::doc_line_str(item.id, 80))
    ));
    if out {
        o.push_str("<p class=\"outnote\">summarized by a later compaction: not in the model's context at this leaf</p>");
    }
    for p in &item.parts {
        html_part(p, item, &mut o);
    }
    o.push_str("</article>\n");
    o
}

/// The page's Markdown: `html.visible(markdown_html)`.
fn md_html(text: &str) -> String {
    let html = crate::markdown_html(text);
    match crate::escape::safe_block(html.as_bytes()) {
        None => html,
        Some(s) => s,
    }
}

/// `html._lines`.
fn lines_fact(text: &str) -> String {
    let n = if text.is_empty() {
        0
    } else {
        memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1
    };
    let digits = crate::item::thousands(n as i64);
    format!(
        "{digits} line{}, {}",
        if n == 1 { "" } else { "s" },
        crate::item::human_bytes(text.len() as u64)
    )
}

const THINKING_OPEN: usize = 600;
const OUTPUT_OPEN: usize = 20;

/// `html._part`.
fn html_part(p: &Part<'_>, item: &Item<'_>, o: &mut String) {
    let err = if p.error { " err" } else { "" };
    match p.kind {
        PartKind::Text | PartKind::Summary => {
            o.push_str("<div class=\"md\">");
            o.push_str(&md_html(&p.text));
            o.push_str("</div>");
        }
        PartKind::Thinking => {
            let opened = if p.text.len() < THINKING_OPEN || p.text.chars().count() < THINKING_OPEN {
                " open"
            } else {
                ""
            };
            o.push_str(&format!("<details class=\"js\"{opened}><summary>thinking</summary><div class=\"thinking md\">"));
            o.push_str(&md_html(&p.text));
            o.push_str("</div></details>");
        }
        PartKind::ToolCall => {
            o.push_str(&format!(
                "<details class=\"tc\"><summary>→ {}</summary><pre><code>",
                h(&p.title)
            ));
            o.push_str(&h(&p.text));
            o.push_str("</code></pre></details>");
        }
        PartKind::ToolResult => {
            let tool = item.meta.first().map_or("result", String::as_str);
            o.push_str(&format!(
                "<details class=\"tr{err}\"><summary>← {} · {}</summary><pre>",
                h(tool),
                lines_fact(&p.text)
            ));
            o.push_str(&h(&p.text));
            o.push_str("</pre></details>");
        }
        PartKind::Image => {
            o.push_str(&format!(
                "<img class=\"im\" alt=\"{}\" src=\"data:{};base64,{}\">",
                h(&p.title),
                p.mime,
                p.data
            ));
        }
        PartKind::Output => {
            let newlines = memchr::memchr_iter(b'\n', p.text.as_bytes()).count();
            let opened = if newlines < OUTPUT_OPEN { " open" } else { "" };
            o.push_str(&format!(
                "<details class=\"tr{err}\"{opened}><summary>output · {}</summary><pre>",
                lines_fact(&p.text)
            ));
            o.push_str(&h(&p.text));
            o.push_str("</pre></details>");
        }
        PartKind::Json => {
            o.push_str(&format!(
                "<details class=\"js\"><summary>{}</summary><pre>",
                h(&p.title)
            ));
            o.push_str(&h(&p.text));
            o.push_str("</pre></details>");
        }
        PartKind::Note => o.push_str(&format!("<p class=\"note\">{}</p>", h(&p.text))),
    }
}

/// `markdown.md_inline`.
fn md_inline(text: &str) -> String {
    let line = split_join(text);
    if !line.contains(['\\', '`', '*', '_', '[', ']', '<', '>', '#', '|', '~', '&']) {
        return line;
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn py_strip_empty(s: &str) -> bool {
    split_join(s).is_empty()
}

/// `markdown._heading`.
fn heading(item: &Item<'_>, full: bool) -> String {
    let mut head: Vec<Cow<'_, str>> = vec![Cow::Borrowed(item.kind.as_str())];
    if !item.when.is_empty() {
        head.push(Cow::Borrowed(item.when.as_str()));
    }
    if full {
        head.extend(
            item.meta
                .iter()
                .filter(|m| !m.is_empty())
                .map(|m| Cow::Borrowed(m.as_str())),
        );
        head.push(Cow::Owned(crate::item::doc_line_str(item.id, 80)));
    }
    let label = item
        .label
        .as_deref()
        .map(|l| crate::item::doc_line_str(l, 200));
    if head.iter().all(|x| !py_strip_empty(x))
        && label.as_deref().is_none_or(|l| !py_strip_empty(l))
    {
        if let Some(l) = &label {
            head.push(Cow::Owned(format!("label: {l}")));
        }
        return md_inline(&head.join(" · "));
    }
    let mut pieces: Vec<String> = head.iter().map(|x| md_inline(x)).collect();
    if let Some(l) = &label {
        pieces.push(format!("label: {}", md_inline(l)));
    }
    pieces.join(" · ")
}

/// `markdown._part`.
fn part(p: &Part<'_>, item: &Item<'_>, out: &mut String) -> Option<()> {
    match p.kind {
        PartKind::Text | PartKind::Summary => {
            out.push_str(&contain(p.text.trim_end_matches('\n'))?);
            out.push('\n');
        }
        PartKind::Thinking => {
            out.push_str("> *thinking*\n>\n");
            let text = contain(p.text.trim_end_matches('\n'))?;
            for (k, line) in text.split('\n').enumerate() {
                if k > 0 {
                    out.push('\n');
                }
                quoted(line, out);
            }
            out.push('\n');
        }
        PartKind::ToolCall => {
            out.push_str(&format!("**→ {}**\n\n", md_inline(&p.title)));
            fence(&p.text, "json", out);
        }
        PartKind::ToolResult => {
            let tool = item.meta.first().map_or("result", String::as_str);
            out.push_str(&format!("**← {}**\n\n", md_inline(tool)));
            fence(&p.text, "", out);
        }
        PartKind::Output => fence(&p.text, "", out),
        PartKind::Image => out.push_str(&format!("*[{}]*\n", md_inline(&p.title))),
        PartKind::Json => {
            out.push_str(&format!("*{}*\n\n", md_inline(&p.title)));
            fence(&p.text, "json", out);
        }
        PartKind::Note => out.push_str(&format!("*{}*\n", md_inline(&p.text))),
    }
    Some(())
}

/// `markdown._quoted`.
fn quoted(line: &str, out: &mut String) {
    if line.is_empty() {
        out.push('>');
        return;
    }
    out.push_str("> ");
    // Python's `str.expandtabs(4)`: a column per code point, back to 0 after CR or LF.
    let mut col = 0;
    for c in line.chars() {
        match c {
            '\t' => {
                let to = 4 - col % 4;
                out.extend(std::iter::repeat_n(' ', to));
                col += to;
            }
            '\r' | '\n' => {
                out.push(c);
                col = 0;
            }
            _ => {
                out.push(c);
                col += 1;
            }
        }
    }
}

/// `markdown.fence`.
fn fence(text: &str, info: &str, out: &mut String) {
    let b = text.as_bytes();
    let mut longest = 0;
    let mut at = 0;
    while let Some(k) = memchr::memchr(b'`', &b[at..]) {
        let start = at + k;
        let run = b[start..].iter().take_while(|&&c| c == b'`').count();
        if run >= 3 {
            longest = longest.max(run);
        }
        at = start + run;
    }
    let ticks = "`".repeat(3.max(longest + 1));
    out.push_str(&ticks);
    out.push_str(info);
    out.push('\n');
    out.push_str(text);
    out.push('\n');
    out.push_str(&ticks);
    out.push('\n');
}

// --------------------------------------------------------------- containment

/// A character `\d` (Unicode decimal digits) surely does not match in any Python's
/// Unicode tables; a non-ASCII one outside these ranges makes the answer unsure.
fn surely_not_digit(c: char) -> bool {
    if c.is_ascii() {
        return !c.is_ascii_digit();
    }
    matches!(u32::from(c), 0x80..=0x65f | 0x2000..=0x2bff | 0x2e00..=0x2fff | 0x3000..=0x9fff
        | 0xac00..=0xd7af | 0x1f000..=0x1faff)
}

/// Whether `line` matches `markdown._MAY_LEAK_RE` (searched on that line alone), `None`
/// when a non-ASCII character where a digit may stand leaves it unsure.
fn may_leak_line(line: &str) -> Option<bool> {
    if has_tag_start(line) {
        return Some(true);
    }
    may_leak_at(line.as_bytes(), line, 0)
}

fn has_tag_start(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr_iter(b'<', b).any(|i| {
        b.get(i + 1)
            .is_some_and(|&c| c.is_ascii_alphabetic() || matches!(c, b'/' | b'!' | b'?'))
    })
}

fn may_leak_at(b: &[u8], s: &str, p: usize) -> Option<bool> {
    let mut q = p;
    while matches!(b.get(q), Some(b' ' | b'\t')) {
        q += 1;
    }
    let rest = &b[q..];
    let blank_after = |r: &[u8], allow: &[u8]| r.iter().all(|c| allow.contains(c));
    match rest.first() {
        Some(b'#') => return Some(true),
        Some(b'=') => {
            let r = &rest[rest.iter().take_while(|&&c| c == b'=').count()..];
            if blank_after(r, b" \t") {
                return Some(true);
            }
        }
        Some(b'-') if blank_after(&rest[1..], b" \t-") => return Some(true),
        _ => {}
    }
    if rest.starts_with(b"```") || rest.starts_with(b"~~~") {
        return Some(true);
    }
    // A container marker, then the same again (the expression's `(...)*` backtracks, so
    // every choice of markers is tried).
    let after_marker = |k: usize| matches!(b.get(k), None | Some(b' ' | b'\t'));
    match rest.first() {
        Some(b'>') => return may_leak_at(b, s, q + 1),
        Some(b'-' | b'*' | b'+') if after_marker(q + 1) => return may_leak_at(b, s, q + 1),
        _ => {}
    }
    let mut k = q;
    for c in s[q..].chars() {
        if c.is_ascii_digit() {
            k += 1;
            continue;
        }
        if !surely_not_digit(c) {
            return None;
        }
        break;
    }
    let digits = k - q;
    if (1..=9).contains(&digits) && matches!(b.get(k), Some(b'.' | b')')) && after_marker(k + 1) {
        return may_leak_at(b, s, k + 1);
    }
    Some(false)
}

/// Whether `text` holds a character reference as `markdown._REF_RE` finds one
/// (`&#8203;`, `&#x202E;`, `&rlm;`): where it is literal and where a renderer decodes
/// it (`markdown.escape_references`) takes markdown-it-py's parse.
fn has_reference(text: &str) -> bool {
    let b = text.as_bytes();
    let run = |r: &[u8], ok: fn(&u8) -> bool, min: usize, max: usize| {
        let n = r.iter().take_while(|c| ok(c)).count();
        (min..=max).contains(&n) && r.get(n) == Some(&b';')
    };
    memchr::memchr_iter(b'&', b).any(|i| match &b[i + 1..] {
        [b'#', b'x' | b'X', r @ ..] => run(r, u8::is_ascii_hexdigit, 1, 6),
        [b'#', r @ ..] => run(r, u8::is_ascii_digit, 1, 7),
        [c, r @ ..] if c.is_ascii_alphabetic() => run(r, u8::is_ascii_alphanumeric, 1, 31),
        _ => false,
    })
}

/// `markdown.contain`, or `None` where it takes markdown-it-py's parse.
pub fn contain(text: &str) -> Option<Cow<'_, str>> {
    if has_reference(text) {
        return None;
    }
    let mut leak = has_tag_start(text);
    if !leak {
        for line in text.split('\n') {
            if may_leak_at(line.as_bytes(), line, 0)? {
                leak = true;
                break;
            }
        }
    }
    if !leak {
        return Some(Cow::Borrowed(text));
    }
    contain_plain(text)
}

/// `markdown._contain_plain`.
fn contain_plain(text: &str) -> Option<Cow<'_, str>> {
    if text.contains(['\r', '\0']) {
        return None;
    }
    let mut out: Option<String> = None;
    let mut fence: &str = "";
    let lines: Vec<&str> = text.split('\n').collect();
    let mut changed_at: Vec<(usize, usize)> = Vec::new(); // (line, hashes to add)
    for (i, line) in lines.iter().enumerate() {
        if !fence.is_empty() {
            let body = line.trim_start_matches(' ');
            if line.len() - body.len() <= 3 && body.starts_with(fence) {
                let ch = fence.chars().next().unwrap_or('`');
                let rest = body.trim_start_matches(ch);
                if rest.trim_matches(' ').is_empty() {
                    fence = "";
                } else if rest.trim_matches([' ', '\t']).is_empty() {
                    return None;
                }
            }
            continue;
        }
        if !may_leak_line(line)? {
            continue;
        }
        if has_tag_start(line) {
            return None;
        }
        let hashes = line.bytes().take_while(|&c| c == b'#').count();
        if (1..=6).contains(&hashes)
            && matches!(line.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
        {
            let deeper = (hashes + 2).min(6);
            changed_at.push((i, deeper - hashes));
            continue;
        }
        let marker = line.bytes().next();
        let run = match marker {
            Some(c @ (b'`' | b'~')) => line.bytes().take_while(|&x| x == c).count(),
            _ => 0,
        };
        if run < 3 || (marker == Some(b'`') && line[run..].contains('`')) {
            return None;
        }
        fence = &line[..run];
    }
    if !fence.is_empty() {
        return None;
    }
    if changed_at.is_empty() {
        return Some(Cow::Borrowed(text));
    }
    let s = out.get_or_insert_with(|| String::with_capacity(text.len() + 2 * changed_at.len()));
    let mut next = changed_at.iter().peekable();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        if let Some(&&(at, add)) = next.peek() {
            if at == i {
                s.extend(std::iter::repeat_n('#', add));
                next.next();
            }
        }
        s.push_str(line);
    }
    out.map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::{contain, heading, may_leak_line, md_inline};
    use crate::item::Item;

    #[test]
    fn containment_as_python() {
        assert_eq!(contain("plain text").as_deref(), Some("plain text"));
        assert_eq!(contain("# Goal\ntext").as_deref(), Some("### Goal\ntext"));
        assert_eq!(contain("##### x").as_deref(), Some("###### x"));
        assert_eq!(
            contain("```\n# in code\n```\n## out").as_deref(),
            Some("```\n# in code\n```\n#### out")
        );
        assert_eq!(contain("a <b>"), None);
        assert_eq!(contain("```\nopen"), None);
        assert_eq!(contain("text\n---"), None);
        assert_eq!(may_leak_line("- # x"), Some(true));
        assert_eq!(may_leak_line("-"), Some(true));
        assert_eq!(may_leak_line("1. > ~~~"), Some(true));
        assert_eq!(may_leak_line("1234567890. #"), Some(false));
        assert_eq!(may_leak_line("a # b"), Some(false));
        assert_eq!(may_leak_line("\u{663}. #"), None);
        assert_eq!(may_leak_line("→ #"), Some(false));
    }

    #[test]
    fn references_go_to_python() {
        for text in ["a &#x202E; b", "&#8203;", "`&rlm;`", "&#1234567;", "&Ab1;"] {
            assert_eq!(contain(text), None, "{text}");
        }
        for text in [
            "a && b",
            "&x;",
            "&#;",
            "&#12345678;",
            "&#x1234567;",
            "&#xg;",
            "& amp;",
        ] {
            assert_eq!(contain(text).as_deref(), Some(text), "{text}");
        }
    }

    #[test]
    fn headings_escape_punctuation() {
        assert_eq!(md_inline(" a_b  [c] "), "a\\_b \\[c\\]");
        let item = Item {
            id: "e1",
            kind: "user".into(),
            when: "2025-01-01 00:00:00".into(),
            ..Item::default()
        };
        assert_eq!(heading(&item, true), "user · 2025-01-01 00:00:00 · e1");
    }
}
