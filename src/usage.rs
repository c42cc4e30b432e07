//! What assistant messages spent: the sums `sessiontree info` shows, read from the line
//! bytes of the assistant entries with a small JSON walker, without building values.
//!
//! The rule is the python backend's (`_usage.py`, the reference): for each assistant
//! `message` entry in file order, the last `message` key's object, its last `usage`
//! key's object, and in it the last `input`, `output`, `cacheRead`, `cacheWrite`,
//! `totalTokens` and `cost.total` that are JSON numbers, summed as Python sums them
//! (integers exactly, and once a float joins, in floating point); plus how often each
//! `(provider, model)` pair occurs, as the JSON text of the two values. A number this
//! walker cannot sum exactly (an integer beyond 128 bits) makes [`UsageTotals::add`]
//! give up, and the caller sums in Python instead.

use std::borrow::Cow;
use std::collections::HashMap;

use memchr::memchr;

use crate::scan::{self, Baseline, Strings};

/// The summed token fields, in this order.
pub const TOKEN_KEYS: [&[u8]; 5] = [
    b"input",
    b"output",
    b"cacheRead",
    b"cacheWrite",
    b"totalTokens",
];

/// A running sum with Python's `int + int` / `int + float` semantics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Total {
    /// Every term so far was an integer (exact).
    Int(i128),
    /// A float joined: the sum as Python's float arithmetic gives it.
    Float(f64),
}

impl Total {
    /// Add one JSON number given as its text; `None` when it cannot be done exactly.
    fn add(self, text: &[u8]) -> Option<Total> {
        let is_float = text.iter().any(|c| matches!(c, b'.' | b'e' | b'E'));
        if is_float {
            let x: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
            // `int + float` converts the int to the nearest double, as `as` does.
            return Some(Total::Float(match self {
                Total::Int(t) => t as f64 + x,
                Total::Float(t) => t + x,
            }));
        }
        // An integer beyond 128 bits does not parse: give up (Python keeps it exact).
        let v: i128 = std::str::from_utf8(text).ok()?.parse().ok()?;
        Some(match self {
            Total::Int(t) => Total::Int(t.checked_add(v)?),
            Total::Float(t) => Total::Float(t + v as f64),
        })
    }
}

/// A `(provider, model)` pair as the JSON texts of the two values (`None`: key absent).
pub type ModelKey = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The sums over the assistant lines added so far.
#[derive(Clone, Debug)]
pub struct UsageTotals {
    /// Sums of [`TOKEN_KEYS`].
    pub tokens: [Total; 5],
    /// Sum of `usage.cost.total`.
    pub cost: Total,
    /// Each `(provider, model)` pair and how many lines had it, in order of first
    /// occurrence.
    pub models: Vec<(ModelKey, u64)>,
    /// Assistant lines added.
    pub messages: u64,
    seen: HashMap<ModelKey, usize>,
}

impl Default for UsageTotals {
    fn default() -> UsageTotals {
        UsageTotals {
            tokens: [Total::Int(0); 5],
            cost: Total::Int(0),
            models: Vec::new(),
            messages: 0,
            seen: HashMap::new(),
        }
    }
}

impl UsageTotals {
    /// Add one assistant entry's line (its JSON text). `false`: the line holds a number
    /// that cannot be summed exactly here, or is not the object it was when indexed;
    /// the totals are then incomplete and the caller must sum another way.
    pub fn add(&mut self, line: &[u8]) -> bool {
        let Some(u) = line_usage(line) else {
            return false;
        };
        self.messages += 1;
        let key = (u.provider.map(<[u8]>::to_vec), u.model.map(<[u8]>::to_vec));
        match self.seen.get(&key) {
            Some(&i) => self.models[i].1 += 1,
            None => {
                self.seen.insert(key.clone(), self.models.len());
                self.models.push((key, 1));
            }
        }
        for (total, v) in self.tokens.iter_mut().zip(u.tokens) {
            if let Some(text) = v {
                match total.add(text) {
                    Some(t) => *total = t,
                    None => return false,
                }
            }
        }
        if let Some(text) = u.cost {
            match self.cost.add(text) {
                Some(t) => self.cost = t,
                None => return false,
            }
        }
        true
    }
}

/// The pieces of one assistant line: number texts (only JSON numbers) and the JSON
/// texts of `provider` and `model`.
#[derive(Debug, Default, PartialEq)]
struct LineUsage<'a> {
    tokens: [Option<&'a [u8]>; 5],
    cost: Option<&'a [u8]>,
    provider: Option<&'a [u8]>,
    model: Option<&'a [u8]>,
}

fn line_usage(s: &[u8]) -> Option<LineUsage<'_>> {
    let mut w = Walker {
        s,
        i: 0,
        strs: Strings::new(Baseline),
    };
    let mut message = None;
    w.members(|w, key| {
        if &*key == b"message" {
            message = Some(w.i);
        }
        w.skip()
    })?;
    let mut out = LineUsage::default();
    let Some(m) = message.filter(|&m| s[m] == b'{') else {
        return Some(out);
    };
    w.i = m;
    let mut usage = None;
    w.members(|w, key| {
        let at = w.i;
        w.skip()?;
        match &*key {
            b"usage" => usage = Some(at),
            b"provider" => out.provider = Some(&s[at..w.i]),
            b"model" => out.model = Some(&s[at..w.i]),
            _ => {}
        }
        Some(())
    })?;
    let Some(u) = usage.filter(|&u| s[u] == b'{') else {
        return Some(out);
    };
    w.i = u;
    let mut spans: [Option<(usize, usize)>; 5] = [None; 5];
    let mut cost = None;
    w.members(|w, key| {
        let at = w.i;
        w.skip()?;
        if let Some(k) = TOKEN_KEYS.iter().position(|&t| t == &*key) {
            spans[k] = Some((at, w.i));
        } else if &*key == b"cost" {
            cost = Some(at);
        }
        Some(())
    })?;
    for (slot, span) in out.tokens.iter_mut().zip(spans) {
        *slot = span.map(|(a, b)| &s[a..b]).filter(|t| is_number(t));
    }
    if let Some(c) = cost.filter(|&c| s[c] == b'{') {
        w.i = c;
        let mut total = None;
        w.members(|w, key| {
            let at = w.i;
            w.skip()?;
            if &*key == b"total" {
                total = Some(&s[at..w.i]);
            }
            Some(())
        })?;
        out.cost = total.filter(|t| is_number(t));
    }
    Some(out)
}

fn is_number(text: &[u8]) -> bool {
    matches!(text.first(), Some(b'-' | b'0'..=b'9'))
}

/// A cursor over a line the scanner validated at indexing time. Every step checks what
/// it reads, so bytes that changed since give `None`, never a panic or a loop. String
/// bodies are skipped a 64-byte window at a time by the validator's own scanner.
struct Walker<'a> {
    s: &'a [u8],
    i: usize,
    strs: Strings<Baseline>,
}

impl<'a> Walker<'a> {
    fn ws(&mut self) {
        while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// Past the string whose opening quote is at `i`; its body span.
    fn string(&mut self) -> Option<(usize, usize)> {
        let start = self.i + 1;
        let (end, _) = self.strs.skip_string(self.s, start)?;
        self.i = end;
        Some((start, end - 1))
    }

    /// Past the value at `i` (after whitespace); nesting is counted, not recursed.
    fn skip(&mut self) -> Option<()> {
        self.ws();
        match *self.s.get(self.i)? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.s.get(self.i)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let n = self.s[self.i..]
                    .iter()
                    .position(|c| !matches!(c, b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | b'-' | b'+' | b'.'))
                    .unwrap_or(self.s.len() - self.i);
                if n == 0 {
                    return None;
                }
                self.i += n;
                Some(())
            }
        }
    }

    /// Call `f` with each key of the object at `i`, positioned at its value (after
    /// whitespace); `f` must consume the value. Ends past the closing brace.
    fn members(&mut self, mut f: impl FnMut(&mut Self, Cow<'a, [u8]>) -> Option<()>) -> Option<()> {
        self.ws();
        if self.s.get(self.i) != Some(&b'{') {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return None;
            }
            let (a, b) = self.string()?;
            let raw = &self.s[a..b];
            let key = if memchr(b'\\', raw).is_some() {
                let mut v = Vec::new();
                scan::decode_into(raw, true, &mut v);
                Cow::Owned(v)
            } else {
                Cow::Borrowed(raw)
            };
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return None;
            }
            self.i += 1;
            self.ws();
            f(self, key)?;
            self.ws();
            match self.s.get(self.i)? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(lines: &[&str]) -> Option<UsageTotals> {
        let mut t = UsageTotals::default();
        lines.iter().all(|l| t.add(l.as_bytes())).then_some(t)
    }

    #[test]
    fn sums_the_last_duplicate_and_numbers_only() {
        let t = totals(&[
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":1,"output":true,"input":2,"cost":{"total":0.5}},"provider":"a","model":"m"}}"#,
            r#"{"type":"message","message":{"usage":{"input":3}},"message":{"role":"assistant","provider":"a","model":"m","usage":{"input":4,"output":1.5,"cost":{"total":"x"}}}}"#,
            r#"{"message":{"role":"assistant","usage":[1],"model":{"a":"}"}}}"#,
            r#"{"message":{"role":"assistant","us\u0061ge":{"output":-2e0,"totalTokens":170141183460469231731687303715884105727}}}"#,
        ])
        .unwrap();
        assert_eq!(t.tokens[0], Total::Int(6));
        assert_eq!(t.tokens[1], Total::Float(-0.5));
        assert_eq!(t.tokens[4], Total::Int(i128::MAX));
        assert_eq!(t.cost, Total::Float(0.5));
        assert_eq!(t.messages, 4);
        let models: Vec<_> = t
            .models
            .iter()
            .map(|((p, m), n)| (p.clone(), m.clone(), *n))
            .collect();
        assert_eq!(
            models,
            vec![
                (Some(b"\"a\"".to_vec()), Some(b"\"m\"".to_vec()), 2),
                (None, Some(br#"{"a":"}"}"#.to_vec()), 1),
                (None, None, 1),
            ]
        );
    }

    #[test]
    fn gives_up_where_python_keeps_exact_integers() {
        assert!(totals(&[
            r#"{"message":{"usage":{"input":1234567890123456789012345678901234567890}}}"#
        ])
        .is_none());
        let max = r#"{"message":{"usage":{"input":170141183460469231731687303715884105727}}}"#;
        assert!(totals(&[max, r#"{"message":{"usage":{"input":1}}}"#]).is_none());
        // A float sum never overflows into an error: 1e400 is inf, as in Python.
        let t = totals(&[r#"{"message":{"usage":{"cost":{"total":1e400}}}}"#]).unwrap();
        assert_eq!(t.cost, Total::Float(f64::INFINITY));
    }

    #[test]
    fn changed_bytes_give_up_without_panicking() {
        for bad in [
            "",
            "{",
            r#"{"message":{"usage":{"input":1"#,
            r#"{"message""#,
            "[1]",
            r#"{"a":"\"#,
        ] {
            assert!(totals(&[bad]).is_none(), "{bad}");
        }
    }
}
