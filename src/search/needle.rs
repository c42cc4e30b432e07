//! The byte-level prefilter of a search: the lines of a file whose raw bytes may hold
//! a match, found without decoding a line. It never misses one:
//!
//! * the needle is a run of one term's characters that JSON writes as they are (ASCII
//!   letters in either case, other printable ASCII but `"`, `\` and `/`, non-ASCII
//!   characters Python holds uncased), so a match of the term in an entry's text shows
//!   the needle in the line's bytes, unless
//! * the line spells a character with a `\u` escape (any line holding `\u` is a
//!   candidate, but for the escape of a control character, U+0000 to U+001F and
//!   U+007F, which no needle holds: tool output's ANSI colours, `\u001b`, are in most
//!   files of a real history, and made every line of those files a candidate), or
//! * the text holds one of the non-ASCII characters equal to one of the needle's
//!   letters ([`super::rules::ASCII_FOLDS`]: lines holding their UTF-8 bytes are
//!   candidates).
//!
//! Invalid UTF-8 reads as U+FFFD, which is never part of a needle; a text joins its
//! parts with white space, which a needle never holds. A text made of a value that is
//! not a string (a number, an array, an object) is not in the line as it reads: no
//! needle it may spell is taken ([`spelled_otherwise`]).
//!
//! The search is a packed pair (the needle's two rarest bytes at their distance, case
//! folded by OR-ing 0x20 into letters) over 32 bytes at a time with AVX2 when the CPU
//! has it, else the rarest byte by `memchr2`, each hit checked whole.

use memchr::memmem;

use super::rules::{PChar, ASCII_FOLDS};

/// A byte of the needle: a letter (lowercase, either case matches) or an exact byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NByte {
    b: u8,
    letter: bool,
}

/// The compiled prefilter of one query.
pub struct Needle {
    bytes: Vec<NByte>,
    /// Positions of the two rarest bytes (`i1 <= i2`).
    i1: usize,
    i2: usize,
    /// Byte strings whose presence makes a line a candidate too.
    hatches: Vec<memmem::Finder<'static>>,
    /// The hatches of the letters' non-ASCII equals (`hatches[1..]`) as bytes, and
    /// their distinct first bytes: the AVX2 pass finds them with the needle.
    folds: Vec<Vec<u8>>,
    leads: Vec<u8>,
    avx2: bool,
    /// The rest of the phrase the needle is a whole word of, checked around each of
    /// its occurrences ([`Phrase`]); `None`: a one-word term, or a word the check
    /// cannot spell.
    phrase: Option<Phrase>,
    /// The control characters whose `\u` escapes pick no line ([`live_escape`]).
    dead_escapes: u64,
}

/// The words of a phrase before and after the needle's word, each as it stands in a
/// line's bytes. A match of the phrase joins its words with white space, so where the
/// needle occurs with no white space and the neighbouring words around it, that
/// occurrence is no match's, and unless another is, its line is not a candidate.
/// Anything the check cannot read as text (a `"`: a string's end, so the next word may
/// be in the next part of the entry's text; a non-ASCII byte: white space, or a
/// character equal to a letter) lets the occurrence through, as do the hatches.
#[derive(Debug)]
struct Phrase {
    before: Vec<Vec<NByte>>,
    after: Vec<Vec<NByte>>,
}

/// What the bytes next to a word say about a phrase there.
enum Near {
    /// A phrase may go on there (read no further).
    Open,
    /// No phrase goes on there.
    No,
    /// White space up to this offset, then the next word (or: the word is there).
    At(usize),
}

impl Phrase {
    /// The phrase of `words` around word `k`, when each other word is spelled in a
    /// line's bytes as it is (letters, other printable ASCII but `"`, `\` and `/`).
    fn of(words: &[Vec<PChar>], k: usize) -> Option<Phrase> {
        let spell = |w: &Vec<PChar>| -> Option<Vec<NByte>> {
            let mut out = Vec::new();
            for &c in w {
                if matches!(c, PChar::Exact(_) | PChar::Cased(_)) || !needle_bytes(c, &mut out) {
                    return None;
                }
            }
            Some(out)
        };
        if words.len() < 2 {
            return None;
        }
        let before = words[..k].iter().map(spell).collect::<Option<Vec<_>>>()?;
        let after = words[k + 1..]
            .iter()
            .map(spell)
            .collect::<Option<Vec<_>>>()?;
        Some(Phrase { before, after })
    }

    /// Whether the needle at `h[at..end]` may be the phrase's word: its words
    /// before and after it, with white space between, are there (or unreadable).
    fn around(&self, h: &[u8], at: usize, end: usize) -> bool {
        let before = side(h, at, self.before.iter().rev(), space_before, word_before);
        before && side(h, end, &self.after, space_after, word_after)
    }
}

/// Whether `words` stand one after another from `h[p]` on one side of the needle, each
/// behind white space (`space` finds its end, `word` the word's far end): `true` also
/// where the bytes cannot be read as text (`Near::Open`).
fn side<'a>(
    h: &[u8],
    mut p: usize,
    words: impl IntoIterator<Item = &'a Vec<NByte>>,
    space: fn(&[u8], usize) -> Near,
    word: fn(&[u8], usize, &[NByte]) -> Near,
) -> bool {
    // A place to go on from, or the verdict there.
    let at = |near: Near| match near {
        Near::Open => Err(true),
        Near::No => Err(false),
        Near::At(q) => Ok(q),
    };
    for w in words {
        let q = match at(space(h, p)) {
            Ok(q) => q,
            Err(verdict) => return verdict,
        };
        p = match at(word(h, q, w)) {
            Ok(e) => e,
            Err(verdict) => return verdict,
        };
    }
    true
}

/// JSON's spelling of white space in a string that does not need `\u`: ` `, and the
/// escapes of tab, LF, FF and CR (`\u000b` and non-ASCII white space go through the
/// hatches and the non-ASCII rule).
fn is_space_escape(c: u8) -> bool {
    matches!(c, b't' | b'n' | b'f' | b'r')
}

/// The white space that ends at `h[p]`: where it starts.
fn space_before(h: &[u8], p: usize) -> Near {
    let mut q = p;
    while q > 0 {
        let c = h[q - 1];
        if c == b' ' {
            q -= 1;
        } else if c == b'"' && escapes(h, q - 1) % 2 == 0 || c >= 0x80 {
            // A string's end (not `\"`, a quote of the text).
            return Near::Open;
        } else if q >= 2 && h[q - 2] == b'\\' && is_space_escape(c) {
            q -= 2;
        } else {
            break;
        }
    }
    if q == p {
        Near::No
    } else {
        Near::At(q)
    }
}

/// How many backslashes stand right before `h[i]`.
fn escapes(h: &[u8], i: usize) -> usize {
    h[..i].iter().rev().take_while(|&&c| c == b'\\').count()
}

/// The white space that starts at `h[p]`: where it ends.
fn space_after(h: &[u8], p: usize) -> Near {
    let mut q = p;
    while q < h.len() {
        let c = h[q];
        if c == b' ' {
            q += 1;
        } else if c == b'"' || c >= 0x80 {
            return Near::Open;
        } else if c == b'\\' && h.get(q + 1).is_some_and(|&e| is_space_escape(e)) {
            q += 2;
        } else {
            break;
        }
    }
    if q == h.len() {
        Near::Open
    } else if q == p {
        Near::No
    } else {
        Near::At(q)
    }
}

/// Whether a byte is word `w`'s byte `n`.
#[inline]
fn same(x: u8, n: NByte) -> bool {
    if n.letter {
        x | 0x20 == n.b
    } else {
        x == n.b
    }
}

/// Word `w` ending at `h[q]`: where it starts. A non-ASCII byte among the bytes it
/// would take (or a few more: a letter's non-ASCII equal is longer) leaves it open.
fn word_before(h: &[u8], q: usize, w: &[NByte]) -> Near {
    let reach = &h[q.saturating_sub(4 * w.len())..q];
    if reach.iter().any(|&c| c >= 0x80) {
        return Near::Open;
    }
    if q < w.len() || !h[q - w.len()..q].iter().zip(w).all(|(&x, &n)| same(x, n)) {
        return Near::No;
    }
    Near::At(q - w.len())
}

/// Word `w` starting at `h[q]`: where it ends (as [`word_before`]).
fn word_after(h: &[u8], q: usize, w: &[NByte]) -> Near {
    let reach = &h[q..h.len().min(q + 4 * w.len())];
    if reach.iter().any(|&c| c >= 0x80) {
        return Near::Open;
    }
    if h.len() - q < w.len() {
        return Near::Open; // the bytes end (a region's last line): not read here
    }
    if !h[q..q + w.len()].iter().zip(w).all(|(&x, &n)| same(x, n)) {
        return Near::No;
    }
    Near::At(q + w.len())
}

/// Whether a query character can stand in a needle, and its bytes.
fn needle_bytes(c: PChar, out: &mut Vec<NByte>) -> bool {
    match c {
        PChar::Letter(l) => out.push(NByte { b: l, letter: true }),
        PChar::Byte(b) => {
            if b < 0x20 || b == 0x7F || matches!(b, b'"' | b'\\' | b'/') {
                return false;
            }
            out.push(NByte { b, letter: false });
        }
        PChar::Exact(cp) => {
            if cp == 0xFFFD {
                return false; // invalid UTF-8 reads as U+FFFD
            }
            let mut buf = [0u8; 4];
            let Some(ch) = char::from_u32(cp) else {
                return false;
            };
            for &b in ch.encode_utf8(&mut buf).as_bytes() {
                out.push(NByte { b, letter: false });
            }
        }
        PChar::Cased(_) => return false,
    }
    true
}

/// A needle score from which a piece is rare enough to leave few candidates (a rare
/// letter, or several less common ones: `zebraf`, not `th`).
const STRONG: i64 = 200;

/// What a phrase check adds to a needle's score: a common word with its neighbours
/// picks fewer lines than a rare letter alone (`the file`: `file` checked around each
/// occurrence, where `f` alone was chosen, found in nearly every line).
const PHRASE_BONUS: i64 = 400;

/// A rough rank of how often a (case-folded) byte occurs in session text: lower is
/// rarer.
fn rank(b: NByte) -> u32 {
    if b.b >= 0x80 {
        return 40;
    }
    match b.b.to_ascii_lowercase() {
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' => 250,
        b'h' | b'l' | b'd' | b'c' | b'u' | b'm' | b'p' => 180,
        b'f' | b'g' | b'w' | b'y' | b'b' | b'v' | b'.' | b'-' | b'_' | b':' | b',' => 120,
        b'0'..=b'9' => 110,
        b'k' => 70,
        b'x' | b'j' | b'q' | b'z' => 20,
        _ => 60,
    }
}

/// The control characters that are white space to Python or JavaScript (U+0009 to
/// U+000D, U+001C to U+001F), as bits: a phrase's words may be apart by one, spelled
/// `\u000b` (say) in the line.
const WHITE_CONTROLS: u64 = 0b1111 << 0x1C | 0b11111 << 0x09;

/// Every control character's bit: U+0000 to U+001F, and U+007F as bit 0x20.
const ALL_CONTROLS: u64 = (1 << 0x21) - 1;

/// Whether `rest` starts with a `\u` escape that may spell a character of a match:
/// any but that of a control character in `dead` (bit `c` for U+00`c`, bit 0x20 for
/// U+007F). An escape cut short by the end of `rest` may be anything.
#[inline]
fn live_escape(rest: &[u8], dead: u64) -> bool {
    match rest {
        [b'\\', b'u', b'0', b'0', hi, lo, ..] if lo.is_ascii_hexdigit() => {
            let lo = (*lo as char).to_digit(16).unwrap_or(0);
            let bit = match hi {
                b'0' => lo,
                b'1' => 0x10 + lo,
                b'7' if lo == 0xF => 0x20,
                _ => return true,
            };
            dead >> bit & 1 == 0
        }
        [b'\\', b'u', ..] => true,
        _ => false,
    }
}

/// Whether a text the reader makes of a value that is not a string (JavaScript's
/// `String()`: a number's shortest digits, `1e2` as `100`, `1e400` as `Infinity`; an
/// array's elements joined by `,`; an object as `[object Object]`) may spell `bytes`
/// where the line's own bytes do not: such a needle could miss its line (adversary
/// round 53), and is not taken.
fn spelled_otherwise(bytes: &[NByte]) -> bool {
    let b: Vec<u8> = bytes.iter().map(|n| n.b).collect();
    let within = |s: &[u8]| memmem::find(s, &b).is_some();
    b.contains(&b',')
        || b.iter()
            .all(|&c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
        || within(b"[object object]")
        || within(b"-infinity")
}

impl Needle {
    /// The best needle of a query's terms (each term a list of words, each a list of
    /// characters), or `None` when no term has a character that can stand in one
    /// (then every line holding an entry's text is a candidate).
    pub fn of(terms: &[super::rules::Term]) -> Option<Needle> {
        // Every candidate: its rarity (with a phrase's bonus), whether it holds a
        // letter with non-ASCII equals, its bytes and its phrase check.
        let mut all: Vec<(i64, bool, Vec<NByte>, Option<Phrase>)> = Vec::new();
        let folds = |b: &NByte| b.letter && ASCII_FOLDS.iter().any(|f| f.1 == b.b);
        for term in terms {
            for (k, word) in term.words.iter().enumerate() {
                // A whole word of a phrase is checked with its neighbours where it
                // occurs, which makes far fewer lines candidates than its bytes alone.
                let mut phrase = Phrase::of(&term.words, k).filter(|_| {
                    word.iter()
                        .all(|&c| !matches!(c, PChar::Exact(_)) && needle_bytes(c, &mut Vec::new()))
                });
                let mut run = Vec::new();
                // A run and its pieces between letters with non-ASCII equals.
                let mut consider = |run: &mut Vec<NByte>, phrase: &mut Option<Phrase>| {
                    let mut add = |piece: &[NByte], phrase: Option<Phrase>| {
                        if !piece.is_empty() {
                            let rare: i64 = piece.iter().map(|&b| 260 - rank(b) as i64).sum();
                            let bonus = if phrase.is_some() { PHRASE_BONUS } else { 0 };
                            let f = piece.iter().any(folds);
                            all.push((rare + bonus, f, piece.to_vec(), phrase));
                        }
                    };
                    // Only the whole word (one run: `phrase` is kept only then) is a
                    // phrase's word.
                    add(run, phrase.take());
                    for piece in run.split(folds) {
                        add(piece, None);
                    }
                    run.clear();
                };
                for &c in word {
                    if !needle_bytes(c, &mut run) {
                        consider(&mut run, &mut None);
                    }
                }
                consider(&mut run, &mut phrase);
            }
        }
        all.retain(|c| !spelled_otherwise(&c.2));
        let avx2 = avx2();
        // What a letter with non-ASCII equals costs: their encodings are looked for too,
        // with AVX2 in the needle's pass (a compare per first byte for every 32 bytes,
        // and a check at each such byte), else in a pass of their own each. That is
        // worth it only when no piece without such letters is rare enough to leave few
        // candidates: `this` (`th` alone picks nearly every line), not `zebrafish`
        // (`zebraf`, where the compares cost a rare word's search a fifth more).
        let strong = all.iter().any(|c| !c.1 && c.0 >= STRONG);
        let fold_cost = if avx2 && !strong { 5 } else { 150 };
        let mut best: Option<(i64, Vec<NByte>, Option<Phrase>)> = None;
        for (score, f, bytes, phrase) in all {
            let score = score - fold_cost * i64::from(f);
            if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, bytes, phrase));
            }
        }
        let (_, bytes, phrase) = best?;
        let mut order: Vec<usize> = (0..bytes.len()).collect();
        order.sort_by_key(|&i| (rank(bytes[i]), i));
        let (a, b) = (order[0], *order.get(1).unwrap_or(&order[0]));
        let (i1, i2) = (a.min(b), a.max(b));
        // A needle holds no control character (`needle_bytes`), so their escapes are
        // passed over (tool output's ANSI colours, `\u001b`, are in most files of a
        // real history, and made every line of those files a candidate); but for a
        // phrase's check, white space's, which may part its words; and none when a
        // term holds a control character (a phrase's other words may).
        let controls = terms
            .iter()
            .flat_map(|t| &t.words)
            .flatten()
            .any(|c| matches!(c, PChar::Byte(b) if *b < 0x20 || *b == 0x7F));
        let dead_escapes = match (&phrase, controls) {
            (_, true) => 0,
            (Some(_), false) => ALL_CONTROLS & !WHITE_CONTROLS,
            (None, false) => ALL_CONTROLS,
        };
        let mut hatches = vec![memmem::Finder::new(b"\\u").into_owned()];
        let (mut folds, mut leads) = (Vec::new(), Vec::new());
        for &(cp, l) in &ASCII_FOLDS {
            if bytes.iter().any(|b| b.letter && b.b == l) {
                let mut buf = [0u8; 4];
                let s = char::from_u32(cp).unwrap().encode_utf8(&mut buf);
                hatches.push(memmem::Finder::new(s.as_bytes()).into_owned());
                folds.push(s.as_bytes().to_vec());
                if !leads.contains(&s.as_bytes()[0]) {
                    leads.push(s.as_bytes()[0]);
                }
            }
        }
        Some(Needle {
            bytes,
            i1,
            i2,
            hatches,
            folds,
            leads,
            avx2,
            phrase,
            dead_escapes,
        })
    }

    /// Whether a hatch starts at `h[at]`.
    #[inline]
    fn hatch_at(&self, h: &[u8], at: usize) -> bool {
        let rest = &h[at.min(h.len())..];
        live_escape(rest, self.dead_escapes) || self.folds.iter().any(|f| rest.starts_with(f))
    }

    /// Whether the needle found at `h[at]` may be a match's (the phrase around it).
    #[inline]
    fn may_match_at(&self, h: &[u8], at: usize) -> bool {
        match &self.phrase {
            None => true,
            Some(p) => p.around(h, at, at + self.bytes.len()),
        }
    }

    #[inline]
    fn verify(&self, h: &[u8], at: usize) -> bool {
        h.len() >= at + self.bytes.len()
            && h[at..at + self.bytes.len()]
                .iter()
                .zip(&self.bytes)
                .all(|(&x, n)| if n.letter { x | 0x20 == n.b } else { x == n.b })
    }

    /// Call `f(pos)` at every position of `h` where the needle or a hatch starts (in no
    /// particular order between the two kinds); `f` returns the position to go on
    /// from (past the end of the line it took, say).
    pub fn each(&self, h: &[u8], mut f: impl FnMut(usize) -> usize) {
        let mut p = 0;
        #[cfg(target_arch = "x86_64")]
        if self.avx2 && h.len() >= self.bytes.len() {
            // One pass finds the needle and every hatch; the last bytes, where only a
            // hatch can start, are looked at alone.
            let find = |p| {
                // SAFETY: AVX2 was detected at run time.
                unsafe {
                    if self.leads.is_empty() {
                        self.find_avx2_or_escape::<false>(h, p)
                    } else {
                        self.find_avx2_or_escape::<true>(h, p)
                    }
                }
            };
            while let Some(at) = find(p) {
                if !self.hatch_at(h, at) && !self.may_match_at(h, at) {
                    p = at + 1;
                    continue;
                }
                p = f(at).max(at + 1);
            }
            let tail = (h.len() - self.bytes.len()).max(p);
            self.each_hatch(h, tail, &self.hatches, &mut f);
            return;
        }
        while let Some(at) = self.find(h, p) {
            if !self.may_match_at(h, at) {
                p = at + 1;
                continue;
            }
            p = f(at).max(at + 1);
        }
        self.each_hatch(h, 0, &self.hatches, &mut f);
    }

    /// Call `f` at every hatch from `h[from]` on.
    fn each_hatch(
        &self,
        h: &[u8],
        from: usize,
        hatches: &[memmem::Finder<'static>],
        f: &mut impl FnMut(usize) -> usize,
    ) {
        for hatch in hatches {
            let escapes = hatch.needle() == b"\\u";
            let mut p = from;
            while p < h.len() {
                let Some(k) = hatch.find(&h[p..]) else { break };
                if escapes && !live_escape(&h[p + k..], self.dead_escapes) {
                    p += k + 1;
                    continue;
                }
                p = f(p + k).max(p + k + 1);
            }
        }
    }

    /// The first position at or after `from` where the needle starts.
    pub fn find(&self, h: &[u8], from: usize) -> Option<usize> {
        let n = self.bytes.len();
        if h.len() < n || from > h.len() - n {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2 was detected at run time.
            return unsafe { self.find_avx2(h, from) };
        }
        self.find_scalar(h, from)
    }

    fn find_scalar(&self, h: &[u8], from: usize) -> Option<usize> {
        let n = self.bytes.len();
        let r = self.bytes[self.i1];
        let last = h.len() - n; // last start
        let mut p = from;
        while p <= last {
            let window = &h[p + self.i1..last + self.i1 + 1];
            let k = if r.letter {
                memchr::memchr2(r.b, r.b.to_ascii_uppercase(), window)
            } else {
                memchr::memchr(r.b, window)
            }?;
            let at = p + k;
            if self.verify(h, at) {
                return Some(at);
            }
            p = at + 1;
        }
        None
    }

    /// The first position at or after `from` (and before the needle's last possible
    /// start) where the needle or a hatch starts; `LEADS`: look for the first bytes
    /// of the letters' non-ASCII equals too (compiled apart: the compares cost a
    /// needle without them a fifth of a rare word's search).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn find_avx2_or_escape<const LEADS: bool>(
        &self,
        h: &[u8],
        from: usize,
    ) -> Option<usize> {
        use std::arch::x86_64::*;
        let n = self.bytes.len();
        let last = h.len() - n; // last needle start
        let (b1, b2) = (self.bytes[self.i1], self.bytes[self.i2]);
        let fold = |b: NByte| if b.letter { 0x20 } else { 0 };
        let m1 = _mm256_set1_epi8(fold(b1) as i8);
        let m2 = _mm256_set1_epi8(fold(b2) as i8);
        let v1 = _mm256_set1_epi8(b1.b as i8);
        let v2 = _mm256_set1_epi8(b2.b as i8);
        let bs = _mm256_set1_epi8(b'\\' as i8);
        let u = _mm256_set1_epi8(b'u' as i8);
        // The hatches' first bytes (a lead byte absent: 0, which no text byte is in a
        // line, and which a match checks anyway).
        let lead = |k: usize| _mm256_set1_epi8(*self.leads.get(k).unwrap_or(&0) as i8);
        let (l0, l1, l2) = (lead(0), lead(1), lead(2));
        let hatch = |at: usize| {
            if LEADS {
                self.hatch_at(h, at)
            } else {
                live_escape(&h[at..], self.dead_escapes)
            }
        };
        let mut p = from;
        // Loads at p + i1, p + i2 and p + 1 stay inside `h` (n >= 1, so p + 33 <= ...).
        while p + 32 + n.max(2) <= h.len() {
            // SAFETY: p + max(i2, 1) + 32 <= p + max(n, 2) + 32 - 1 < h.len().
            let a = _mm256_loadu_si256(h.as_ptr().add(p + self.i1) as *const __m256i);
            let b = _mm256_loadu_si256(h.as_ptr().add(p + self.i2) as *const __m256i);
            let c = _mm256_loadu_si256(h.as_ptr().add(p) as *const __m256i);
            let d = _mm256_loadu_si256(h.as_ptr().add(p + 1) as *const __m256i);
            let ea = _mm256_cmpeq_epi8(_mm256_or_si256(a, m1), v1);
            let eb = _mm256_cmpeq_epi8(_mm256_or_si256(b, m2), v2);
            let esc = _mm256_and_si256(_mm256_cmpeq_epi8(c, bs), _mm256_cmpeq_epi8(d, u));
            let mut hat = esc;
            if LEADS {
                let l = _mm256_or_si256(_mm256_cmpeq_epi8(c, l0), _mm256_cmpeq_epi8(c, l1));
                hat = _mm256_or_si256(hat, _mm256_or_si256(l, _mm256_cmpeq_epi8(c, l2)));
            }
            let mut mask =
                _mm256_movemask_epi8(_mm256_or_si256(_mm256_and_si256(ea, eb), hat)) as u32;
            while mask != 0 {
                let at = p + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if (at <= last && self.verify(h, at)) || hatch(at) {
                    return Some(at);
                }
            }
            p += 32;
        }
        while p <= last {
            if self.verify(h, p) || hatch(p) {
                return Some(p);
            }
            p += 1;
        }
        None
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn find_avx2(&self, h: &[u8], from: usize) -> Option<usize> {
        use std::arch::x86_64::*;
        let n = self.bytes.len();
        let last = h.len() - n; // last start
        let (b1, b2) = (self.bytes[self.i1], self.bytes[self.i2]);
        let fold = |b: NByte| if b.letter { 0x20 } else { 0 };
        let m1 = _mm256_set1_epi8(fold(b1) as i8);
        let m2 = _mm256_set1_epi8(fold(b2) as i8);
        let v1 = _mm256_set1_epi8(b1.b as i8);
        let v2 = _mm256_set1_epi8(b2.b as i8);
        let mut p = from;
        // 32 starts at a time while both loads stay inside `h`.
        while p + 32 <= last + 1 {
            // SAFETY: p + i2 + 32 <= last + 1 + i2 <= h.len() (i2 < n).
            let a = _mm256_loadu_si256(h.as_ptr().add(p + self.i1) as *const __m256i);
            let b = _mm256_loadu_si256(h.as_ptr().add(p + self.i2) as *const __m256i);
            let ea = _mm256_cmpeq_epi8(_mm256_or_si256(a, m1), v1);
            let eb = _mm256_cmpeq_epi8(_mm256_or_si256(b, m2), v2);
            let mut mask = _mm256_movemask_epi8(_mm256_and_si256(ea, eb)) as u32;
            while mask != 0 {
                let at = p + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if self.verify(h, at) {
                    return Some(at);
                }
            }
            p += 32;
        }
        while p <= last {
            if self.verify(h, p) {
                return Some(p);
            }
            p += 1;
        }
        None
    }
}

fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::rules::Term;
    use super::*;

    fn needle(s: &str) -> Needle {
        let t = Term {
            words: vec![s.chars().map(|c| PChar::new(c as u32, true)).collect()],
        };
        Needle::of(&[t]).unwrap()
    }

    /// Every position `each` reports in `h`, ascending, once.
    fn picks(n: &Needle, h: &[u8]) -> Vec<usize> {
        let mut got = Vec::new();
        n.each(h, |at| {
            got.push(at);
            at + 1
        });
        got.sort_unstable();
        got.dedup();
        got
    }

    fn naive(n: &Needle, h: &[u8]) -> Vec<usize> {
        (0..h.len()).filter(|&i| n.verify(h, i)).collect()
    }

    fn all(n: &Needle, h: &[u8], avx: bool) -> Vec<usize> {
        let mut out = Vec::new();
        let mut p = 0;
        loop {
            let r = if avx {
                n.find(h, p)
            } else {
                n.find_scalar(h, p)
            };
            let Some(at) = r else { break };
            out.push(at);
            p = at + 1;
        }
        out
    }

    #[test]
    fn finds_every_case_and_position() {
        let mut h = Vec::new();
        let mut x: u32 = 12345;
        for _ in 0..5000 {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            h.push(b"sSeEiIoOnN zZ-\"\\x"[(x >> 16) as usize % 17]);
        }
        for s in ["session", "z", "Se", "ion", "n-z", "ZZ", "x\u{2014}"] {
            let n = needle(s);
            assert_eq!(all(&n, &h, true), naive(&n, &h), "{s}");
            assert_eq!(all(&n, &h, false), naive(&n, &h), "{s}");
        }
    }

    #[test]
    fn each_finds_the_needle_and_every_escape() {
        let mut h = Vec::new();
        let mut x: u32 = 99;
        for _ in 0..3000 {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            h.push(b"\\uUzZebra \n"[(x >> 16) as usize % 11]);
        }
        for s in ["zebra", "z", "u"] {
            let n = needle(s);
            for len in [0, 1, 2, 5, 40, 100, h.len()] {
                let hay = &h[..len];
                let got = picks(&n, hay);
                let mut want = naive(&n, hay);
                want.extend((0..hay.len()).filter(|&i| hay[i..].starts_with(b"\\u")));
                want.sort_unstable();
                want.dedup();
                assert_eq!(got, want, "{s} {len}");
            }
        }
    }

    /// Whether `n` picks anything in `h` (the needle or a hatch).
    fn occurs(n: &Needle, h: &[u8]) -> bool {
        let mut found = false;
        n.each(h, |_| {
            found = true;
            h.len()
        });
        found
    }

    fn phrase(words: &[&str]) -> Vec<Term> {
        let word = |w: &str| w.chars().map(|c| PChar::new(c as u32, true)).collect();
        vec![Term {
            words: words.iter().map(|w| word(w)).collect(),
        }]
    }

    /// A session line whose assistant message holds `texts` as text blocks (JSON
    /// strings as `serde_json` writes them, so escapes as a writer makes them).
    fn line(texts: &[&str]) -> Vec<u8> {
        let blocks: Vec<_> = texts
            .iter()
            .map(|t| serde_json::json!({"type": "text", "text": t}))
            .collect();
        let v = serde_json::json!({"type": "message", "id": "a",
            "message": {"role": "assistant", "content": blocks}});
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn a_phrase_needs_its_words_around_the_needle() {
        let n = Needle::of(&phrase(&["the", "file"])).unwrap();
        assert!(n.phrase.is_some());
        for yes in [
            &["see the file"][..],
            &["The  FILE"],
            &["the\nfile"],
            &["the\t\r\n file"],
            &["the\u{a0}file"],        // non-ASCII white space: read no further
            &["the\u{b}file"],         // `\u000b`: a hatch
            &["and the", "file too"],  // across text blocks (joined by a space)
            &["the thefile the file"], // not the first occurrence
            &["the files"],
            &["ſ the file"],
        ] {
            assert!(occurs(&n, &line(yes)), "{yes:?}");
        }
        for no in [
            &["thefile"][..],
            &["the thefile"],
            &["a file, the end"],
            &["the\"file"],
            &["the/file"],
            &["the-file"],
        ] {
            assert!(!occurs(&n, &line(no)), "{no:?}");
        }
        // A word the check cannot spell: no phrase check.
        assert!(Needle::of(&phrase(&["a/b", "file"]))
            .unwrap()
            .phrase
            .is_none());
        // The needle not a whole word (`/` splits it): no phrase check.
        assert!(Needle::of(&phrase(&["the", "zebra/x"]))
            .unwrap()
            .phrase
            .is_none());
    }

    /// The prefilter never misses a line whose text matches: random texts of phrase
    /// words, white space of every kind, quotes and letters' non-ASCII equals, each
    /// judged by the rules, the line picked whenever the judge says hit or undecided.
    #[test]
    fn a_phrase_needle_misses_no_match() {
        let pieces = [
            "the", "The", "file", "FILE", "fi", "le", " ", "  ", "\n", "\t", "\r", "\u{c}",
            "\u{b}", "\u{a0}", "\u{3000}", "\"", "/", "x", "ſ", "\u{212a}", "é", "-", "", "\\",
            "\u{1b}", "\u{1f}", "\u{0}", "\u{7f}",
        ];
        let mut x: u32 = 7;
        let mut next = |m: usize| {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            (x >> 16) as usize % m
        };
        let queries = [
            &["the", "file"][..],
            &["file", "the"],
            &["the", "fi", "le"],
            &["x", "the", "x"],
            &["kelvin", "the"],
            &["the", "x\u{1b}file"],
        ];
        let mut all_hits = 0;
        for q in queries {
            let terms = phrase(q);
            let n = Needle::of(&terms).unwrap();
            let (mut picked, mut hits) = (0, 0);
            for _ in 0..4000 {
                let mut blocks = Vec::new();
                for _ in 0..1 + next(3) {
                    let t: String = (0..next(9)).map(|_| pieces[next(pieces.len())]).collect();
                    blocks.push(t);
                }
                let refs: Vec<&str> = blocks.iter().map(String::as_str).collect();
                let text = refs.join(" ");
                let judged = super::super::rules::judge_text(&terms, text.as_bytes());
                let hit = !matches!(judged, super::super::rules::Outcome::Miss);
                let got = occurs(&n, &line(&refs));
                picked += usize::from(got);
                hits += usize::from(hit);
                assert!(!hit || got, "{q:?} missed {text:?}");
            }
            // (A term holding a control character takes every `\u` escape.)
            let controls = q.iter().any(|w| w.chars().any(char::is_control));
            assert!(controls || picked < 4000, "{q:?} {picked}");
            all_hits += hits;
        }
        assert!(all_hits > 100, "{all_hits}");
    }

    /// Every letter's non-ASCII equal is found, by the AVX2 pass and the scalar one
    /// alike, among other non-ASCII characters with the same first bytes.
    #[test]
    fn each_finds_every_folded_letter() {
        let pieces = [
            "ki", "ss", "ı", "İ", "ſ", "\u{212a}", "’", "—", "Ā", "ő", " ", "\\u", "kiss",
        ];
        let mut h = Vec::new();
        let mut x: u32 = 5;
        for _ in 0..3000 {
            x = x.wrapping_mul(1103515245).wrapping_add(12345);
            h.extend_from_slice(pieces[(x >> 16) as usize % pieces.len()].as_bytes());
        }
        for s in ["kiss", "k", "is", "s"] {
            let mut n = needle(s);
            for avx in [true, false] {
                n.avx2 = avx && avx2();
                for len in [0, 1, 3, 40, 100, h.len()] {
                    let hay = &h[..len];
                    let got = picks(&n, hay);
                    let mut want = naive(&n, hay);
                    want.extend((0..hay.len()).filter(|&i| n.hatch_at(hay, i)));
                    want.sort_unstable();
                    want.dedup();
                    assert_eq!(got, want, "{s} {len} {avx}");
                }
            }
        }
    }

    #[test]
    fn hatches_for_folded_letters() {
        assert_eq!(needle("zebra").hatches.len(), 1); // `\u` only
        assert_eq!(needle("kiss").hatches.len(), 5); // and İ, ı, ſ, K
    }
    #[test]
    fn no_needle_holds_a_control_character() {
        // What lets `live_escape` pass over their escapes.
        for c in (0..0x20).chain([0x7F]) {
            assert!(
                !needle_bytes(PChar::new(c, true), &mut Vec::new()),
                "{c:#x}"
            );
        }
    }

    #[test]
    fn a_control_characters_escape_picks_no_line() {
        let line = br#"{"text":"\u001b[31mred\u001B[0m \u0000\u000b\u001F\u007f\u007F zebr"}"#;
        for avx in [true, false] {
            let mut n = needle("zebra");
            n.avx2 &= avx;
            let got = picks(&n, line);
            assert!(got.is_empty(), "{got:?}");
            // Escapes that may spell a letter, and ones cut short, still pick it.
            for live in [
                &br#"\u0041"#[..],
                br#"\u007a"#,
                br#"\u00e9"#,
                br#"\u212a"#,
                br#"\u00"#,
                br#"\u001"#,
                br#"\u00gg"#,
                br#"\u0020"#,
            ] {
                let mut hay = line.to_vec();
                hay.extend_from_slice(live);
                let got = picks(&n, &hay);
                assert_eq!(got, vec![line.len()], "{}", String::from_utf8_lossy(live));
            }
        }
    }
}
