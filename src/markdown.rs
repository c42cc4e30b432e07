//! Message text (Markdown) as HTML for the HTML export's page, by pulldown-cmark
//! (CommonMark 0.31, with GFM tables and strikethrough). The page's rules are the export's
//! (`python/sessiontree/export/html.py`, module docstring); this module applies them to
//! the parser's events:
//!
//! * raw HTML is never passed through: an HTML block or inline tag is shown as text
//!   (escaped), and every text is escaped here (`&`, `<`, `>`, `"`), not by the parser;
//! * a link is one only to `http:`, `https:` or `mailto:`; any other link (or image) is
//!   shown as the text it was written as;
//! * an image is never loaded: it is a link to its address, `[image: ALT]`;
//! * links carry `rel="noopener noreferrer nofollow"`, and addresses are percent-encoded
//!   as markdown-it's `normalizeLink` encodes them (its `mdurl.encode` set);
//! * a heading goes one level down (`# A` is an `<h2>`, at most `<h6>`): the page's
//!   title is its only `<h1>`, so no message's heading stands beside it.
//!
//! Tables and strikethrough are written as markdown-it writes them (a line per row and
//! cell, `<s>`), so the page reads the same with either renderer (the export falls
//! back to markdown-it-py without this extension).

use pulldown_cmark::{Alignment, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

const REL: &str = "noopener noreferrer nofollow";

/// `src` (Markdown) as HTML, by the rules above.
pub fn markdown_html(src: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    let mut events: Vec<Event<'_>> = Vec::new();
    let mut iter = Parser::new_ext(src, options).into_offset_iter();
    let mut aligns: Vec<Alignment> = Vec::new();
    let (mut in_head, mut body, mut cell) = (false, false, 0usize);
    while let Some((event, range)) = iter.next() {
        let out = match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => html(escape(&t)),
            Event::Code(t) => html(format!("<code>{}</code>", escape(&t))),
            Event::Start(Tag::HtmlBlock) => html("<p>".into()),
            Event::End(TagEnd::HtmlBlock) => {
                // As a paragraph ends: without the block's last line ending.
                if let Some(Event::Html(last)) = events.last_mut() {
                    if let Some(kept) = last.strip_suffix('\n') {
                        *last = CowStr::from(kept.to_string());
                    }
                }
                html("</p>\n".into())
            }
            Event::Start(Tag::Link {
                dest_url, title, ..
            }) => {
                if allowed(&dest_url) {
                    let title = if title.is_empty() {
                        String::new()
                    } else {
                        format!(" title=\"{}\"", escape(&title))
                    };
                    html(format!(
                        "<a href=\"{}\"{title} rel=\"{REL}\">",
                        escape(&encode_url(&dest_url))
                    ))
                } else {
                    to_end(&mut iter, drop); // its whole source is shown as text
                    html(escape(&src[range]))
                }
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                if allowed(&dest_url) {
                    let alt = alt_text(&mut iter);
                    html(format!(
                        "<a class=\"mdimg\" href=\"{}\" rel=\"{REL}\">[image: {}]</a>",
                        escape(&encode_url(&dest_url)),
                        escape(&alt)
                    ))
                } else {
                    to_end(&mut iter, drop); // its whole source is shown as text
                    html(escape(&src[range]))
                }
            }
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => Event::Start(Tag::Heading {
                level: demoted(level),
                id,
                classes,
                attrs,
            }),
            Event::End(TagEnd::Heading(level)) => Event::End(TagEnd::Heading(demoted(level))),
            Event::End(TagEnd::Link) => html("</a>".into()),
            Event::Start(Tag::Strikethrough) => html("<s>".into()),
            Event::End(TagEnd::Strikethrough) => html("</s>".into()),
            Event::Start(Tag::Table(a)) => {
                aligns = a;
                body = false;
                html("<table>\n".into())
            }
            Event::Start(Tag::TableHead) => {
                in_head = true;
                cell = 0;
                html("<thead>\n<tr>\n".into())
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                html("</tr>\n</thead>\n".into())
            }
            Event::Start(Tag::TableRow) => {
                cell = 0;
                let open = if body { "" } else { "<tbody>\n" };
                body = true;
                html(format!("{open}<tr>\n"))
            }
            Event::End(TagEnd::TableRow) => html("</tr>\n".into()),
            Event::Start(Tag::TableCell) => {
                let tag = if in_head { "th" } else { "td" };
                let style = match aligns.get(cell) {
                    Some(Alignment::Left) => " style=\"text-align:left\"",
                    Some(Alignment::Center) => " style=\"text-align:center\"",
                    Some(Alignment::Right) => " style=\"text-align:right\"",
                    _ => "",
                };
                cell += 1;
                html(format!("<{tag}{style}>"))
            }
            Event::End(TagEnd::TableCell) => {
                html(if in_head { "</th>\n" } else { "</td>\n" }.into())
            }
            Event::End(TagEnd::Table) => html(
                if body {
                    "</tbody>\n</table>\n"
                } else {
                    "</table>\n"
                }
                .into(),
            ),
            other => other,
        };
        events.push(out);
    }
    let mut page = String::with_capacity(src.len() + src.len() / 4 + 16);
    pulldown_cmark::html::push_html(&mut page, events.into_iter());
    page
}

/// A message's heading level on the page: one down, at most 6.
fn demoted(level: HeadingLevel) -> HeadingLevel {
    HeadingLevel::try_from((level as usize + 1).min(6)).unwrap_or(HeadingLevel::H6)
}

fn html(text: String) -> Event<'static> {
    Event::Html(CowStr::from(text))
}

/// Consumes the events up to the end of the link or image just opened, giving each
/// one inside it to `each`.
fn to_end<'a>(
    iter: &mut impl Iterator<Item = (Event<'a>, std::ops::Range<usize>)>,
    mut each: impl FnMut(Event<'a>),
) {
    let mut depth = 1usize;
    for (event, _) in iter.by_ref() {
        match event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return;
        }
        each(event);
    }
}

/// The plain text of the image just opened (its alt), consuming its events.
fn alt_text<'a>(iter: &mut impl Iterator<Item = (Event<'a>, std::ops::Range<usize>)>) -> String {
    let mut alt = String::new();
    to_end(iter, |event| match event {
        Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => alt.push_str(&t),
        Event::SoftBreak | Event::HardBreak => alt.push('\n'),
        _ => {}
    });
    alt
}

/// Whether a link may point at `url`: `http:`, `https:` or `mailto:` (any case), the
/// export's `_LINK_RE`.
fn allowed(url: &str) -> bool {
    let head = url.as_bytes().get(..8).unwrap_or(url.as_bytes());
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    lower.starts_with(b"http://") || lower.starts_with(b"https://") || lower.starts_with(b"mailto:")
}

/// `text` escaped for HTML text and attribute values (`&`, `<`, `>`, `"`), as
/// markdown-it's `escapeHtml`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut last = 0;
    for (i, b) in text.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => continue,
        };
        out.push_str(&text[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&text[last..]);
    out
}

/// `url` percent-encoded as `mdurl.encode` does by default: ASCII letters, digits and
/// `;/?:@&=+$,-_.!~*'()#` stay, so does a `%` starting a valid escape; every other byte
/// of the UTF-8 becomes `%XX`.
fn encode_url(url: &str) -> String {
    const KEEP: &[u8] = b";/?:@&=+$,-_.!~*'()#";
    let bytes = url.as_bytes();
    let mut out = String::with_capacity(url.len());
    for (i, &b) in bytes.iter().enumerate() {
        let valid_escape = b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if b.is_ascii_alphanumeric() || KEEP.contains(&b) || valid_escape {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::markdown_html as md;

    #[test]
    fn raw_html_is_text() {
        assert_eq!(
            md("a <b onclick=x>b</b>"),
            "<p>a &lt;b onclick=x&gt;b&lt;/b&gt;</p>\n"
        );
        let block = md("<script>alert(1)</script>\n\nafter");
        assert!(!block.contains("<script"), "{block}");
        assert!(
            block.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{block}"
        );
        assert!(
            block.ends_with("&lt;/script&gt;</p>\n<p>after</p>\n"),
            "{block}"
        );
        // A comment is one HTML block up to its end, blank lines and all (markdown-it, which
        // does not read HTML, makes two paragraphs of it): shown as the text it is.
        assert_eq!(
            md("<!-- hide\n\nrest -->"),
            "<p>&lt;!-- hide\n\nrest --&gt;</p>\n"
        );
    }

    #[test]
    fn links_only_to_the_web_and_mail() {
        assert_eq!(
            md("[x](https://e.org/a b)"),
            "<p>[x](https://e.org/a b)</p>\n",
            "not a link in CommonMark: a space in the address"
        );
        assert_eq!(
            md("[x](https://e.org/ä?q=1&r=\"2\" \"T\")"),
            "<p><a href=\"https://e.org/%C3%A4?q=1&amp;r=%222%22\" title=\"T\" rel=\"noopener noreferrer nofollow\">x</a></p>\n"
        );
        assert_eq!(
            md("[*x*](javascript:alert(1))"),
            "<p>[*x*](javascript:alert(1))</p>\n"
        );
        assert_eq!(
            md("<javascript:alert(1)>"),
            "<p>&lt;javascript:alert(1)&gt;</p>\n"
        );
        assert_eq!(
            md("<MAILTO:a@b.c>"),
            "<p><a href=\"MAILTO:a@b.c\" rel=\"noopener noreferrer nofollow\">MAILTO:a@b.c</a></p>\n"
        );
    }

    #[test]
    fn images_are_links_never_loaded() {
        assert_eq!(
            md("![a *b*](https://e.org/i.png)"),
            "<p><a class=\"mdimg\" href=\"https://e.org/i.png\" rel=\"noopener noreferrer nofollow\">[image: a b]</a></p>\n"
        );
        assert_eq!(
            md("![a](data:image/png;base64,AA==)"),
            "<p>![a](data:image/png;base64,AA==)</p>\n"
        );
    }

    #[test]
    fn tables_and_strikethrough_as_markdown_it_writes_them() {
        assert_eq!(
            md("| a | b |\n|:--|--:|\n| 1 | ~~2~~ |"),
            "<table>\n<thead>\n<tr>\n<th style=\"text-align:left\">a</th>\n<th style=\"text-align:right\">b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td style=\"text-align:left\">1</td>\n<td style=\"text-align:right\"><s>2</s></td>\n</tr>\n</tbody>\n</table>\n"
        );
        assert_eq!(
            md("| a |\n|---|"),
            "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n</table>\n"
        );
    }

    #[test]
    fn text_and_code_escape_quotes() {
        assert_eq!(
            md("say \"hi\" & `<b \"x\">`"),
            "<p>say &quot;hi&quot; &amp; <code>&lt;b &quot;x&quot;&gt;</code></p>\n"
        );
        assert_eq!(
            md("```py\nif a < \"b\":\n```"),
            "<pre><code class=\"language-py\">if a &lt; &quot;b&quot;:\n</code></pre>\n"
        );
    }
}
