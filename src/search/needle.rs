//! The byte-level prefilter of a search: the lines of a file whose raw bytes may hold
//! a match, found without decoding a line. It never misses one:
//!
//! * the needle is a run of one term's characters that JSON writes as they are (ASCII
//!   letters in either case, other printable ASCII but `"`, `\` and `/`, non-ASCII
//!   characters Python holds uncased), so a match of the term in an entry's text shows
//!   the needle in the line's bytes, unless
//! * the line spells a character with a `\u` escape (any line holding `\u` is a
//!   candidate), or
//! * the text holds one of the non-ASCII characters equal to one of the needle's
//!   letters ([`super::rules::ASCII_FOLDS`]: lines holding their UTF-8 bytes are
//!   candidates).
//!
//! Invalid UTF-8 reads as U+FFFD, which is never part of a needle; a text joins its
//! parts with white space, which a needle never holds.
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
    avx2: bool,
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

impl Needle {
    /// The best needle of a query's terms (each term a list of words, each a list of
    /// characters), or `None` when no term has a character that can stand in one
    /// (then every line holding an entry's text is a candidate).
    pub fn of(terms: &[super::rules::Term]) -> Option<Needle> {
        let mut best: Option<(i64, Vec<NByte>)> = None;
        for term in terms {
            for word in &term.words {
                let mut run = Vec::new();
                // A run and its pieces between letters with non-ASCII equals: each of
                // those costs a pass over the bytes for the equals' encodings.
                let mut consider = |run: &mut Vec<NByte>| {
                    let folds = |b: &NByte| b.letter && ASCII_FOLDS.iter().any(|f| f.1 == b.b);
                    let mut score_of = |piece: &[NByte]| {
                        if piece.is_empty() {
                            return;
                        }
                        let rare: i64 = piece.iter().map(|&b| 260 - rank(b) as i64).sum();
                        let score = rare - 150 * piece.iter().any(folds) as i64;
                        if best.as_ref().is_none_or(|(s, _)| score > *s) {
                            best = Some((score, piece.to_vec()));
                        }
                    };
                    score_of(run);
                    for piece in run.split(folds) {
                        score_of(piece);
                    }
                    run.clear();
                };
                for &c in word {
                    if !needle_bytes(c, &mut run) {
                        consider(&mut run);
                    }
                }
                consider(&mut run);
            }
        }
        let (_, bytes) = best?;
        let mut order: Vec<usize> = (0..bytes.len()).collect();
        order.sort_by_key(|&i| (rank(bytes[i]), i));
        let (a, b) = (order[0], *order.get(1).unwrap_or(&order[0]));
        let (i1, i2) = (a.min(b), a.max(b));
        let mut hatches = vec![memmem::Finder::new(b"\\u").into_owned()];
        for &(cp, l) in &ASCII_FOLDS {
            if bytes.iter().any(|b| b.letter && b.b == l) {
                let mut buf = [0u8; 4];
                let s = char::from_u32(cp).unwrap().encode_utf8(&mut buf);
                hatches.push(memmem::Finder::new(s.as_bytes()).into_owned());
            }
        }
        Some(Needle {
            bytes,
            i1,
            i2,
            hatches,
            avx2: avx2(),
        })
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
            // One pass finds the needle and `\u` both; the last bytes, where only an
            // escape can start, are looked at alone.
            // SAFETY: AVX2 was detected at run time.
            while let Some(at) = unsafe { self.find_avx2_or_escape(h, p) } {
                p = f(at).max(at + 1);
            }
            let tail = (h.len() - self.bytes.len()).max(p);
            let mut q = tail;
            while let Some(k) = self.hatches[0].find(&h[q..]) {
                q = f(q + k).max(q + k + 1);
            }
            self.each_hatch(h, &self.hatches[1..], &mut f);
            return;
        }
        while let Some(at) = self.find(h, p) {
            p = f(at).max(at + 1);
        }
        self.each_hatch(h, &self.hatches, &mut f);
    }

    fn each_hatch(
        &self,
        h: &[u8],
        hatches: &[memmem::Finder<'static>],
        f: &mut impl FnMut(usize) -> usize,
    ) {
        for hatch in hatches {
            let mut p = 0;
            while p < h.len() {
                let Some(k) = hatch.find(&h[p..]) else { break };
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
    /// start) where the needle or a `\u` starts.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn find_avx2_or_escape(&self, h: &[u8], from: usize) -> Option<usize> {
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
            let mut mask =
                _mm256_movemask_epi8(_mm256_or_si256(_mm256_and_si256(ea, eb), esc)) as u32;
            while mask != 0 {
                let at = p + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if (at <= last && self.verify(h, at)) || h.get(at..at + 2) == Some(b"\\u") {
                    return Some(at);
                }
            }
            p += 32;
        }
        while p <= last {
            if self.verify(h, p) || h.get(p..p + 2) == Some(b"\\u") {
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
                let mut got = Vec::new();
                n.each(hay, |at| {
                    got.push(at);
                    at + 1
                });
                got.sort_unstable();
                got.dedup();
                let mut want = naive(&n, hay);
                want.extend((0..hay.len()).filter(|&i| hay[i..].starts_with(b"\\u")));
                want.sort_unstable();
                want.dedup();
                assert_eq!(got, want, "{s} {len}");
            }
        }
    }

    #[test]
    fn hatches_for_folded_letters() {
        assert_eq!(needle("zebra").hatches.len(), 1); // `\u` only
        assert_eq!(needle("kiss").hatches.len(), 5); // and İ, ı, ſ, K
    }
}
