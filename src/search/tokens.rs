//! The words the search index keeps of an entry's text, and the words a query looks up.
//!
//! A *token* is a run of ASCII letters and digits (and the four non-ASCII letters equal
//! to ASCII ones, [`super::rules::ASCII_FOLDS`], read as those), lowercased and cut to
//! [`MAX_TOKEN`] bytes, kept with the position (in characters) where it first starts
//! in the text. Every match of a query term starts where a token starts or inside a
//! run of other characters (see [`runs`]), so the index never misses one. A token
//! right after a non-ASCII character whose kind (letter or not) is not known here is
//! *unsure*: Python may not count its start as a word start, so an answer that rests
//! on it is checked by the rules.

use std::collections::HashMap;

use super::rules::{ascii_fold, is_space, NOT_ALNUM};

/// Longest token kept (bytes); longer runs are cut, and a query word longer than this
/// is looked up by its first [`MAX_TOKEN`] bytes and checked.
pub const MAX_TOKEN: usize = 32;

/// A token character as its ASCII letter or digit (lowercase).
#[inline]
fn token_char(c: u32) -> Option<u8> {
    if c < 0x80 {
        let b = c as u8;
        return b.is_ascii_alphanumeric().then(|| b.to_ascii_lowercase());
    }
    ascii_fold(c)
}

/// Whether a match may start right after `c` (the character before a token) for
/// certain: `c` is known not to be a letter or digit.
#[inline]
fn sure_boundary(c: u32) -> bool {
    c < 0x80 || is_space(c) || NOT_ALNUM.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

/// Starts and joins the two tokens of a *pair*: a token and the next one when only
/// white space stands between them (what a phrase's words are), kept like a token
/// (`PAIR first PAIR second`: all pairs sort before every token), at the first one's
/// place.
pub const PAIR: u8 = 1;

/// A token's first place in a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// Position (characters) of its first start.
    pub pos: u32,
    /// That start is unsure (see the module docstring).
    pub unsure: bool,
}

/// Every token and pair of `text` (code points) with its first place, into `out`
/// (cleared).
pub fn tokens_of(text: &[u32], out: &mut HashMap<Vec<u8>, Place>) {
    out.clear();
    let mut i = 0;
    let n = text.len();
    let mut tok = Vec::with_capacity(MAX_TOKEN);
    // The previous token and its place, while only white space followed it.
    let mut prev: Option<(Vec<u8>, Place)> = None;
    let mut pair = Vec::with_capacity(2 * MAX_TOKEN + 1);
    while i < n {
        if token_char(text[i]).is_none() {
            if !is_space(text[i]) {
                prev = None;
            }
            i += 1;
            continue;
        }
        let start = i;
        tok.clear();
        while i < n {
            match token_char(text[i]) {
                Some(b) => {
                    if tok.len() < MAX_TOKEN {
                        tok.push(b);
                    }
                    i += 1;
                }
                None => break,
            }
        }
        let unsure = start > 0 && !sure_boundary(text[start - 1]);
        let place = Place {
            pos: start as u32,
            unsure,
        };
        if let Some((p, pp)) = prev.take() {
            // A pair only across white space (a token ends at a non-token character).
            if start > 0 && is_space(text[start - 1]) {
                pair.clear();
                pair.push(PAIR);
                pair.extend_from_slice(&p);
                pair.push(PAIR);
                pair.extend_from_slice(&tok);
                if !out.contains_key(pair.as_slice()) {
                    out.insert(pair.clone(), pp);
                }
            }
        }
        if !out.contains_key(tok.as_slice()) {
            out.insert(tok.clone(), place);
        }
        prev = Some((tok.clone(), place));
    }
}

/// What the index must find for one query term: each run of token characters in it,
/// as `(token, whole)`: `whole` when the text's token must be exactly this one (the
/// run is followed by another character of the term), else a prefix of it; and how
/// many characters of the term come before the first run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermRuns {
    /// The runs, in order.
    pub runs: Vec<(Vec<u8>, bool)>,
    /// Pairs a phrase needs (a word ending in a run, the next starting with one): the
    /// key, and whether the second token must be whole.
    pub pairs: Vec<(Vec<u8>, bool)>,
    /// Characters of the term before its first run.
    pub lead: u32,
    /// A run is longer than [`MAX_TOKEN`] (looked up by its cut form).
    pub cut: bool,
}

/// The runs of a term given as its words' characters (a phrase's words are separated
/// by white space in the text, so a run never spans two words).
pub fn runs(words: &[Vec<u32>]) -> TermRuns {
    let mut out = TermRuns {
        runs: Vec::new(),
        pairs: Vec::new(),
        lead: 0,
        cut: false,
    };
    let mut seen_run = false;
    // The previous word's last run, when it ended the word.
    let mut ending: Option<Vec<u8>> = None;
    for (w, word) in words.iter().enumerate() {
        let starts = word.first().is_some_and(|&c| token_char(c).is_some());
        let mut first_run = true;
        let mut i = 0;
        while i < word.len() {
            let Some(_) = token_char(word[i]) else {
                if !seen_run && w == 0 {
                    out.lead += 1;
                }
                i += 1;
                continue;
            };
            let mut tok = Vec::new();
            while i < word.len() {
                let Some(b) = token_char(word[i]) else { break };
                tok.push(b);
                i += 1;
            }
            // Followed by another character of the term, or by the white space before
            // the phrase's next word: the text's token ends where the run does.
            let whole = i < word.len() || w + 1 < words.len();
            let whole = if tok.len() > MAX_TOKEN {
                tok.truncate(MAX_TOKEN);
                out.cut = true;
                false
            } else {
                whole
            };
            if let (true, true, Some(prev)) = (first_run, starts, ending.take()) {
                let mut key = vec![PAIR];
                key.extend_from_slice(&prev);
                key.push(PAIR);
                key.extend_from_slice(&tok);
                out.pairs.push((key, whole));
            }
            first_run = false;
            if i == word.len() {
                ending = Some(tok.clone());
            }
            out.runs.push((tok, whole));
            seen_run = true;
        }
        if word.last().is_some_and(|&c| token_char(c).is_none()) {
            ending = None;
        }
        if !seen_run {
            // A phrase's first word without a run: later runs are not at a fixed
            // distance from the term's start.
            out.lead = u32::MAX;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<u32> {
        s.chars().map(|c| c as u32).collect()
    }

    #[test]
    fn tokens_and_their_first_places() {
        let mut m = HashMap::new();
        tokens_of(
            &chars("The session—SESSION_x éclair \u{212a}elvin the"),
            &mut m,
        );
        assert_eq!(
            m[&b"the"[..]],
            Place {
                pos: 0,
                unsure: false
            }
        );
        assert_eq!(
            m[&b"session"[..]],
            Place {
                pos: 4,
                unsure: false
            }
        );
        assert_eq!(
            m[&b"x"[..]],
            Place {
                pos: 20,
                unsure: false
            }
        );
        assert_eq!(
            m[&b"clair"[..]],
            Place {
                pos: 23,
                unsure: true
            }
        );
        assert_eq!(
            m[&b"kelvin"[..]],
            Place {
                pos: 29,
                unsure: false
            }
        );
        let sure = |pos| Place { pos, unsure: false };
        assert_eq!(m[&b"\x01the\x01session"[..]], sure(0));
        assert_eq!(m[&b"\x01kelvin\x01the"[..]], sure(29));
        assert!(!m.contains_key(&b"\x01session\x01session"[..]));
        assert_eq!(m.len(), 8);
    }

    #[test]
    fn runs_of_terms() {
        let r = runs(&[chars("src/main.rs")]);
        assert_eq!(
            r.runs,
            vec![
                (b"src".to_vec(), true),
                (b"main".to_vec(), true),
                (b"rs".to_vec(), false)
            ]
        );
        assert_eq!(r.lead, 0);
        let r = runs(&[chars(".env")]);
        assert_eq!((r.runs, r.lead), (vec![(b"env".to_vec(), false)], 1));
        let r = runs(&[chars("caf\u{e9}")]);
        assert_eq!(r.runs, vec![(b"caf".to_vec(), true)]);
        let r = runs(&[chars("the"), chars("sess")]);
        assert_eq!(
            r.runs,
            vec![(b"the".to_vec(), true), (b"sess".to_vec(), false)]
        );
        assert_eq!(r.pairs, vec![(b"\x01the\x01sess".to_vec(), false)]);
        let r = runs(&[chars("a."), chars("b"), chars("c")]);
        assert_eq!(r.pairs, vec![(b"\x01b\x01c".to_vec(), false)]);
    }
}
