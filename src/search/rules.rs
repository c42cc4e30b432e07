//! The search rules over one entry's text (docs/CONTRACT.md §7; the Python home is
//! `catalog/_search.py`'s `_Matcher` and `snippet`): where each term first matches,
//! the relevance score, and the snippet with its marks, decided here whenever the
//! characters involved can be judged without Python's Unicode tables.
//!
//! A term matches, case-insensitively as Python's `re.IGNORECASE` does, at a word
//! start (the character before is not a letter or digit, `str.isalnum`): a word where
//! its characters occur, a phrase where its words occur in order with a run of
//! JavaScript white space between each two. Everything ASCII is decided here; so are
//! the four non-ASCII characters `re.IGNORECASE` holds equal to an ASCII letter
//! ([`ASCII_FOLDS`]), the white space, and the non-ASCII characters known not to be
//! letters or digits ([`NOT_ALNUM`]). Anything else (a cased non-ASCII query
//! character met by a non-ASCII text character, a possible match right after a
//! non-ASCII character of unknown kind) makes the entry [`Outcome::Undecided`], and the
//! caller asks Python's `re`. `tests/test_search_rules.py` holds these tables and every
//! decided answer to Python's.

/// JavaScript white space (`RegExp` `\s`, `_js.WHITESPACE`): a phrase's runs of it
/// match any run in the text, and a snippet shows a run as one space.
pub const JS_WHITESPACE: [u32; 25] = [
    0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
    0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,
];

/// The non-ASCII characters `re.IGNORECASE` matches with an ASCII letter (and that
/// letter's case pair): İ and ı with `i`, ſ with `s`, the Kelvin sign with `k`. All four
/// are letters (`str.isalnum`).
pub const ASCII_FOLDS: [(u32, u8); 4] =
    [(0x130, b'i'), (0x131, b'i'), (0x17F, b's'), (0x212A, b'k')];

/// Ranges of non-ASCII characters that are neither letters nor digits in any Unicode
/// version Python has used (punctuation, symbols, arrows, box drawing, emoji): a match
/// right after one of them is at a word start. Inclusive bounds; held to
/// `str.isalnum` by the tests.
pub const NOT_ALNUM: [(u32, u32); 24] = [
    (0x80, 0xA9),
    (0xAB, 0xB1),
    (0xB4, 0xB4),
    (0xB6, 0xB8),
    (0xBB, 0xBB),
    (0xBF, 0xBF),
    (0xD7, 0xD7),
    (0xF7, 0xF7),
    (0x2000, 0x206F),
    (0x20A0, 0x20C0),
    (0x2190, 0x23FF),
    (0x2500, 0x2775),
    (0x2794, 0x27BF),
    (0x2900, 0x2BFF),
    (0x3000, 0x3004),
    (0x3008, 0x3020),
    (0xFE00, 0xFE0F),
    (0xFE30, 0xFE4F),
    (0xFFF9, 0xFFFD),
    (0x1F300, 0x1F5FF),
    (0x1F600, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F900, 0x1F9FF),
    (0x1FA70, 0x1FAFF),
];

/// A three-valued answer: a question about a character Python's tables would settle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tri {
    No,
    Yes,
    Unknown,
}

/// One character of a query term, as the matcher compares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PChar {
    /// An ASCII letter (lowercase), or a non-ASCII character `re.IGNORECASE` holds equal
    /// to one ([`ASCII_FOLDS`]).
    Letter(u8),
    /// Any other ASCII character: only itself.
    Byte(u8),
    /// A non-ASCII character Python calls uncased: only itself.
    Exact(u32),
    /// A non-ASCII cased character: never an ASCII one; against a non-ASCII character
    /// only Python decides.
    Cased(u32),
}

impl PChar {
    /// `c` as a query character; `uncased` says whether Python holds a non-ASCII `c`
    /// uncased (`_sre.unicode_iscased` is false).
    pub fn new(c: u32, uncased: bool) -> PChar {
        if c < 0x80 {
            let b = c as u8;
            return if b.is_ascii_alphabetic() {
                PChar::Letter(b.to_ascii_lowercase())
            } else {
                PChar::Byte(b)
            };
        }
        if let Some(l) = ascii_fold(c) {
            return PChar::Letter(l);
        }
        if uncased {
            PChar::Exact(c)
        } else {
            PChar::Cased(c)
        }
    }

    /// The character (an ASCII letter lowercase).
    pub fn code(self) -> u32 {
        match self {
            PChar::Letter(b) | PChar::Byte(b) => b as u32,
            PChar::Exact(c) | PChar::Cased(c) => c,
        }
    }

    /// Whether text character `x` is this query character under `re.IGNORECASE`.
    #[inline]
    fn eq(self, x: u32) -> Tri {
        match self {
            PChar::Letter(l) => {
                let yes = if x < 0x80 {
                    (x as u8).to_ascii_lowercase() == l
                } else {
                    ascii_fold(x) == Some(l)
                };
                tri(yes)
            }
            PChar::Byte(b) => tri(x == b as u32),
            PChar::Exact(c) => tri(x == c),
            PChar::Cased(c) => {
                if x == c {
                    Tri::Yes
                } else if x < 0x80 || ascii_fold(x).is_some() {
                    Tri::No // their classes hold only ASCII letters' equals
                } else {
                    Tri::Unknown
                }
            }
        }
    }
}

#[inline]
fn tri(b: bool) -> Tri {
    if b {
        Tri::Yes
    } else {
        Tri::No
    }
}

/// The ASCII letter a non-ASCII character is equal to under `re.IGNORECASE`, if any.
#[inline]
pub fn ascii_fold(c: u32) -> Option<u8> {
    ASCII_FOLDS.iter().find(|f| f.0 == c).map(|f| f.1)
}

/// Whether `c` is JavaScript white space.
#[inline]
pub fn is_space(c: u32) -> bool {
    if c < 0x80 {
        return matches!(c, 0x09..=0x0D | 0x20);
    }
    JS_WHITESPACE.contains(&c)
}

/// Whether `c` is a letter or digit (`str.isalnum`), when that is known here.
#[inline]
fn is_alnum(c: u32) -> Tri {
    if c < 0x80 {
        return tri((c as u8).is_ascii_alphanumeric());
    }
    if ascii_fold(c).is_some() {
        return Tri::Yes;
    }
    if is_space(c) || NOT_ALNUM.iter().any(|&(lo, hi)| lo <= c && c <= hi) {
        return Tri::No;
    }
    Tri::Unknown
}

/// A query term: a word (one part) or a phrase (its words, white space between).
#[derive(Clone, Debug)]
pub struct Term {
    /// The words, each at least one character, none white space.
    pub words: Vec<Vec<PChar>>,
}

/// What one entry's text says to a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Some term does not match.
    Miss,
    /// Every term matches: the sum of their first matches' positions and the earliest
    /// of them (characters).
    Hit { score: u64, anchor: u64 },
    /// Only Python's tables can tell.
    Undecided,
}

/// Why a walk stopped without an answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Undecided;

/// A text as characters: ASCII bytes as they are, else code points (a lone surrogate
/// read as U+FFFD, as the search reads it).
pub enum Chars<'a> {
    /// Every byte is ASCII.
    Ascii(&'a [u8]),
    /// Decoded code points.
    Wide(Vec<u32>),
}

impl<'a> Chars<'a> {
    /// The characters of `text`, generalized UTF-8 (lone surrogates allowed; anything
    /// malformed reads as U+FFFD).
    pub fn of(text: &'a [u8]) -> Chars<'a> {
        if text.is_ascii() {
            return Chars::Ascii(text);
        }
        Chars::Wide(decode(text))
    }

    /// The first `n` characters of `text` and one more if there is one (all a snippet
    /// within `n` characters reads, and whether the text goes on).
    pub fn prefix(text: &'a [u8], n: usize) -> Chars<'a> {
        // n + 1 characters take at most 4(n + 1) bytes, then to a character's end.
        let mut cut = text.len().min(4 * (n + 1));
        while text.get(cut).is_some_and(|&b| b & 0xC0 == 0x80) {
            cut += 1;
        }
        let head = &text[..cut];
        if head.is_ascii() {
            return Chars::Ascii(&head[..head.len().min(n + 1)]);
        }
        let mut w = decode(head);
        w.truncate(n + 1);
        Chars::Wide(w)
    }

    #[inline]
    fn len(&self) -> usize {
        match self {
            Chars::Ascii(b) => b.len(),
            Chars::Wide(w) => w.len(),
        }
    }

    #[inline]
    fn at(&self, i: usize) -> u32 {
        match self {
            Chars::Ascii(b) => b[i] as u32,
            Chars::Wide(w) => w[i],
        }
    }
}

/// Code points of generalized UTF-8 `s`; surrogates and malformed sequences as U+FFFD.
pub fn decode(s: &[u8]) -> Vec<u32> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        let (len, init) = match b {
            0x00..=0x7F => (1, b as u32),
            0xC0..=0xDF => (2, (b & 0x1F) as u32),
            0xE0..=0xEF => (3, (b & 0x0F) as u32),
            0xF0..=0xF7 => (4, (b & 0x07) as u32),
            _ => (0, 0),
        };
        if len == 0 || i + len > s.len() || !s[i + 1..i + len].iter().all(|&c| c & 0xC0 == 0x80) {
            out.push(0xFFFD);
            i += 1;
            continue;
        }
        let mut cp = init;
        for &c in &s[i + 1..i + len] {
            cp = (cp << 6) | (c & 0x3F) as u32;
        }
        out.push(if (0xD800..0xE000).contains(&cp) || cp > 0x10FFFF {
            0xFFFD
        } else {
            cp
        });
        i += len;
    }
    out
}

impl Term {
    /// Whether the term matches at `p`, and where that match ends (one past), within
    /// `end`; white space between words taken greedily (no word starts with it).
    fn at(&self, t: &Chars<'_>, p: usize, end: usize) -> (Tri, usize) {
        let mut i = p;
        let mut unknown = false;
        for (k, word) in self.words.iter().enumerate() {
            if k > 0 {
                let from = i;
                while i < end && is_space(t.at(i)) {
                    i += 1;
                }
                if i == from {
                    return (Tri::No, 0);
                }
            }
            if i + word.len() > end {
                return (Tri::No, 0);
            }
            for &pc in word {
                match pc.eq(t.at(i)) {
                    Tri::No => return (Tri::No, 0),
                    Tri::Unknown => unknown = true,
                    Tri::Yes => {}
                }
                i += 1;
            }
        }
        (if unknown { Tri::Unknown } else { Tri::Yes }, i)
    }

    /// The leftmost match that starts at or after `from`, at a word start, and ends by
    /// `end`: `(start, end)`; `Err` when a possible match before the first certain
    /// one cannot be judged.
    pub fn find(
        &self,
        t: &Chars<'_>,
        from: usize,
        end: usize,
    ) -> Result<Option<(usize, usize)>, Undecided> {
        let first = self.words[0][0];
        let mut p = from;
        while p < end {
            p = match next_start(t, first, p, end) {
                Some(q) => q,
                None => return Ok(None),
            };
            let start = if p == 0 {
                Tri::Yes
            } else {
                not(is_alnum(t.at(p - 1)))
            };
            if start != Tri::No {
                let (m, e) = self.at(t, p, end);
                match (start, m) {
                    (_, Tri::No) => {}
                    (Tri::Yes, Tri::Yes) => return Ok(Some((p, e))),
                    _ => return Err(Undecided),
                }
            }
            p += 1;
        }
        Ok(None)
    }
}

#[inline]
fn not(t: Tri) -> Tri {
    match t {
        Tri::No => Tri::Yes,
        Tri::Yes => Tri::No,
        Tri::Unknown => Tri::Unknown,
    }
}

/// The first position at or after `p` (before `end`) whose character may be `first`.
#[inline]
fn next_start(t: &Chars<'_>, first: PChar, p: usize, end: usize) -> Option<usize> {
    match (t, first) {
        (Chars::Ascii(b), PChar::Letter(l)) => {
            memchr::memchr2(l, l.to_ascii_uppercase(), &b[p..end]).map(|k| p + k)
        }
        (Chars::Ascii(b), PChar::Byte(c)) => memchr::memchr(c, &b[p..end]).map(|k| p + k),
        (Chars::Ascii(_), _) => None, // non-ASCII query characters equal no ASCII one
        (Chars::Wide(w), _) => (p..end).find(|&i| first.eq(w[i]) != Tri::No),
    }
}

/// The code point at `t[i]` (generalized UTF-8; a surrogate or anything malformed is
/// U+FFFD, as [`decode`] reads it) and its length in bytes.
#[inline]
fn char_at(t: &[u8], i: usize) -> (u32, usize) {
    let b = t[i];
    if b < 0x80 {
        return (b as u32, 1);
    }
    let (len, init) = match b {
        0xC0..=0xDF => (2, (b & 0x1F) as u32),
        0xE0..=0xEF => (3, (b & 0x0F) as u32),
        0xF0..=0xF7 => (4, (b & 0x07) as u32),
        _ => return (0xFFFD, 1),
    };
    let Some(rest) = t.get(i + 1..i + len) else {
        return (0xFFFD, 1);
    };
    if !rest.iter().all(|&c| c & 0xC0 == 0x80) {
        return (0xFFFD, 1);
    }
    let cp = rest
        .iter()
        .fold(init, |cp, &c| (cp << 6) | (c & 0x3F) as u32);
    let cp = if (0xD800..0xE000).contains(&cp) || cp > 0x10FFFF {
        0xFFFD
    } else {
        cp
    };
    (cp, len)
}

/// The code point that ends right before `t[i]` (`i > 0`).
#[inline]
fn char_before(t: &[u8], i: usize) -> u32 {
    let mut s = i - 1;
    while s > 0 && i - s < 4 && t[s] & 0xC0 == 0x80 {
        s -= 1;
    }
    let (cp, len) = char_at(t, s);
    if s + len == i {
        cp
    } else {
        0xFFFD
    }
}

/// Characters in `t[..i]` ([`decode`]'s count: a lead byte, or a byte it reads alone).
fn chars_before(t: &[u8], i: usize) -> usize {
    let mut n = 0;
    let mut k = 0;
    while k < i {
        let (_, len) = char_at(t, k);
        k += len;
        n += 1;
    }
    n
}

impl Term {
    /// Whether every character is an ASCII one (or equal to one): the term is then
    /// matched over the text's bytes, with no decoding.
    fn ascii(&self) -> bool {
        self.words
            .iter()
            .flatten()
            .all(|c| matches!(c, PChar::Letter(_) | PChar::Byte(_)))
    }

    /// [`Term::at`] over UTF-8 bytes (byte positions).
    fn at_bytes(&self, t: &[u8], p: usize, end: usize) -> (Tri, usize) {
        let mut i = p;
        for (k, word) in self.words.iter().enumerate() {
            if k > 0 {
                let from = i;
                while i < end {
                    let (c, len) = char_at(t, i);
                    if !is_space(c) {
                        break;
                    }
                    i += len;
                }
                if i == from || i > end {
                    return (Tri::No, 0);
                }
            }
            for &pc in word {
                if i >= end {
                    return (Tri::No, 0);
                }
                let (c, len) = char_at(t, i);
                if i + len > end || pc.eq(c) != Tri::Yes {
                    return (Tri::No, 0); // an ASCII query character is always decided
                }
                i += len;
            }
        }
        (Tri::Yes, i)
    }

    /// [`Term::find`] over UTF-8 bytes for an [`ascii`](Term::ascii) term: byte
    /// positions.
    fn find_bytes(
        &self,
        t: &[u8],
        from: usize,
        end: usize,
    ) -> Result<Option<(usize, usize)>, Undecided> {
        let first = self.words[0][0];
        let (a, b, fold) = match first {
            PChar::Letter(l) => (
                l,
                l.to_ascii_uppercase(),
                ASCII_FOLDS.iter().any(|f| f.1 == l),
            ),
            PChar::Byte(c) => (c, c, false),
            _ => return Ok(None),
        };
        let mut p = from;
        while p < end {
            let next = if fold {
                // The letter's non-ASCII equals start with these bytes.
                memchr::memchr3(a, b, 0xC4, &t[p..end])
                    .into_iter()
                    .chain(memchr::memchr2(0xC5, 0xE2, &t[p..end]))
                    .min()
            } else {
                memchr::memchr2(a, b, &t[p..end])
            };
            let Some(q) = next else { return Ok(None) };
            p += q;
            let start = if p == 0 {
                Tri::Yes
            } else {
                not(is_alnum(char_before(t, p)))
            };
            if start != Tri::No {
                let (m, e) = self.at_bytes(t, p, end);
                match (start, m) {
                    (_, Tri::No) => {}
                    (Tri::Yes, Tri::Yes) => return Ok(Some((p, e))),
                    _ => return Err(Undecided),
                }
            }
            p += 1;
        }
        Ok(None)
    }
}

/// What the entry's `text` (generalized UTF-8) says to `terms` ([`judge`] without
/// decoding the text when every term is ASCII).
pub fn judge_text(terms: &[Term], text: &[u8]) -> Outcome {
    if text.is_ascii() || !terms.iter().all(Term::ascii) {
        return judge(terms, &Chars::of(text));
    }
    let (mut score, mut anchor, mut unknown) = (0u64, u64::MAX, false);
    for term in terms {
        match term.find_bytes(text, 0, text.len()) {
            Ok(None) => return Outcome::Miss,
            Ok(Some((s, _))) => {
                let s = chars_before(text, s) as u64;
                score += s;
                anchor = anchor.min(s);
            }
            Err(Undecided) => unknown = true,
        }
    }
    if unknown {
        return Outcome::Undecided;
    }
    Outcome::Hit {
        score,
        anchor: if anchor == u64::MAX { 0 } else { anchor },
    }
}

/// What `text` says to `terms` (every term must match; see [`Outcome`]).
pub fn judge(terms: &[Term], text: &Chars<'_>) -> Outcome {
    let (mut score, mut anchor, mut unknown) = (0u64, u64::MAX, false);
    for term in terms {
        match term.find(text, 0, text.len()) {
            Ok(None) => return Outcome::Miss,
            Ok(Some((s, _))) => {
                score += s as u64;
                anchor = anchor.min(s as u64);
            }
            Err(Undecided) => unknown = true,
        }
    }
    if unknown {
        return Outcome::Undecided;
    }
    Outcome::Hit {
        score,
        anchor: if anchor == u64::MAX { 0 } else { anchor },
    }
}

/// Characters of text a snippet shows around the first match (`_search.SNIPPET`).
pub const SNIPPET: usize = 160;

/// How far past the shown window matches are looked for (`_Matcher.spans`).
const SPAN_MARGIN: usize = 200;

/// The snippet of `text` around `anchor` (`_search.snippet`): `SNIPPET` characters on
/// one line, white-space runs as one space, `…` where cut, and the marks of the
/// matches in it (character offsets in the snippet).
pub fn snippet(
    terms: &[Term],
    text: &Chars<'_>,
    anchor: usize,
) -> Result<(String, Vec<(u32, u32)>), Undecided> {
    let n = text.len();
    let width = SNIPPET;
    let lo = anchor.saturating_sub(width / 3);
    let hi = n.min(lo + width);
    let lo = lo.min(hi.saturating_sub(width));
    let spans = spans(terms, text, lo, hi)?;
    let mut out = String::new();
    let mut pos = 0u32;
    if lo > 0 {
        out.push('…');
        pos = 1;
    }
    let mut marks = Vec::new();
    let (mut k, mut open_at, mut prev_space) = (0usize, None::<u32>, false);
    for i in lo..hi {
        while k < spans.len() && spans[k].1 <= i {
            k += 1;
        }
        let inside = k < spans.len() && spans[k].0 <= i && i < spans[k].1;
        if inside && open_at.is_none() {
            open_at = Some(pos);
        }
        if !inside {
            if let Some(o) = open_at.take() {
                marks.push((o, pos));
            }
        }
        let mut c = text.at(i);
        if is_space(c) {
            if prev_space {
                continue;
            }
            c = 0x20;
            prev_space = true;
        } else {
            prev_space = false;
        }
        out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
        pos += 1;
    }
    if let Some(o) = open_at {
        marks.push((o, pos));
    }
    if hi < n {
        out.push('…');
    }
    Ok((out, marks))
}

/// Matches of any term inside `[lo, hi)`, merged, in order (`_Matcher.spans`: each
/// term's matches found one after another from `lo - 200`, none past `hi + 200`).
fn spans(
    terms: &[Term],
    text: &Chars<'_>,
    lo: usize,
    hi: usize,
) -> Result<Vec<(usize, usize)>, Undecided> {
    let from = lo.saturating_sub(SPAN_MARGIN);
    let end = text.len().min(hi + SPAN_MARGIN);
    let mut found = Vec::new();
    for term in terms {
        let mut q = from;
        while let Some((s, e)) = term.find(text, q, end)? {
            let (s2, e2) = (s.max(lo), e.min(hi));
            if e2 > s2 {
                found.push((s2, e2));
            }
            q = e;
        }
    }
    found.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in found {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    Ok(merged)
}

/// A term of `words` (each char its own, no fold), for the search modules' tests.
#[cfg(test)]
pub(crate) fn term(words: &[&str]) -> Term {
    Term {
        words: words
            .iter()
            .map(|w| w.chars().map(|c| PChar::new(c as u32, false)).collect())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge_str(terms: &[Term], s: &str) -> Outcome {
        judge(terms, &Chars::of(s.as_bytes()))
    }

    #[test]
    fn words_at_word_starts() {
        let t = [term(&["session"])];
        assert_eq!(
            judge_str(&t, "the SessionManager"),
            Outcome::Hit {
                score: 4,
                anchor: 4
            }
        );
        assert_eq!(judge_str(&t, "xsession"), Outcome::Miss);
        assert_eq!(
            judge_str(&t, "_session"),
            Outcome::Hit {
                score: 1,
                anchor: 1
            }
        );
        assert_eq!(
            judge_str(&t, "ſeſſion"),
            Outcome::Hit {
                score: 0,
                anchor: 0
            }
        );
        // A possible match after a character whose kind is not known here.
        assert_eq!(judge_str(&t, "\u{4e00}session"), Outcome::Undecided);
        assert_eq!(
            judge_str(&t, "—session"),
            Outcome::Hit {
                score: 1,
                anchor: 1
            }
        );
    }

    #[test]
    fn overlapping_candidates_are_all_tried() {
        // `re.finditer` would take "a.a" at 1 (not a word start) and resume at 4.
        assert_eq!(
            judge_str(&[term(&["a.a"])], "xa.a.a"),
            Outcome::Hit {
                score: 3,
                anchor: 3
            }
        );
        assert_eq!(
            judge_str(&[term(&["a", "a"])], "xa a a"),
            Outcome::Hit {
                score: 3,
                anchor: 3
            }
        );
    }

    #[test]
    fn phrases_take_any_white_space() {
        let t = [term(&["the", "sess"])];
        assert_eq!(
            judge_str(&t, "in the \u{3000}\n session"),
            Outcome::Hit {
                score: 3,
                anchor: 3
            }
        );
        assert_eq!(judge_str(&t, "thesession"), Outcome::Miss);
    }

    #[test]
    fn snippets_cut_and_mark() {
        let t = [term(&["b"])];
        let text = format!("{}b  c", "a ".repeat(100));
        let (s, m) = snippet(&t, &Chars::of(text.as_bytes()), 200).unwrap();
        assert!(s.starts_with('…'));
        assert_eq!(m.len(), 1);
        let (a, b) = m[0];
        assert_eq!(
            s.chars()
                .skip(a as usize)
                .take((b - a) as usize)
                .collect::<String>(),
            "b"
        );
    }
}
