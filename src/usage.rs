//! What assistant messages spent: the sums `sessiontree info` shows, taken while the
//! session is indexed, so that asking for them reads nothing.
//!
//! The rule is the python backend's (`_usage.py`, the reference): for each assistant
//! `message` entry in file order, the last `message` key's object, its last `usage`
//! key's object, and in it the last `input`, `output`, `cacheRead`, `cacheWrite`,
//! `totalTokens` and `cost.total` that are JSON numbers, summed as Python sums them
//! (integers exactly, and once a float joins, in floating point); plus how often each
//! `(provider, model)` pair occurs, as the JSON text of the two values. The validator
//! records the spans of those numbers, `provider` and `model` as it passes them
//! (`scan::Fields`, duplicates resolved as `json.loads` resolves them); the scanning
//! threads parse each assistant line's numbers ([`numbers`]) and the index folds them
//! in file order as it accepts entries ([`UsageTotals::add`]). A number that cannot be
//! summed exactly here (an integer beyond 128 bits) marks the totals inexact, and the
//! caller sums in Python instead.
//!
//! Why at indexing time (corpus-shaped 1 GiB session, 799,330 entries): walking every
//! assistant line again from its start, past its `content`, took 1.39 s per call;
//! a second walk of each `usage` object at scan time (instead of spans from the
//! validator) added ~0.4 s of CPU to the open. Now the totals cost the index a few
//! bytes per *model*, not per entry, and a call reads nothing.

use std::collections::HashMap;

use crate::scan::{Fields, Val};

/// One JSON number of a `usage` object, parsed for summing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    /// An integer that fits 128 bits.
    Int(i128),
    /// A number with a fraction or exponent, as Python's `float()` reads it.
    Float(f64),
    /// An integer beyond 128 bits (Python keeps it exact; this module cannot).
    Huge,
}

impl Num {
    /// A JSON number's text (as the validator passed it) as a number to sum.
    fn parse(text: &[u8]) -> Option<Num> {
        let (neg, digits) = match text.split_first()? {
            (b'-', rest) => (true, rest),
            _ => (false, text),
        };
        // Most token counts: up to 18 digits, summed without a string conversion.
        if digits.len() <= 18 && !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
            let v = digits
                .iter()
                .fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
            return Some(Num::Int(i128::from(if neg { -v } else { v })));
        }
        let t = std::str::from_utf8(text).ok()?;
        if text.iter().any(|c| matches!(c, b'.' | b'e' | b'E')) {
            return t.parse().ok().map(Num::Float);
        }
        Some(t.parse().map_or(Num::Huge, Num::Int))
    }
}

/// A running sum with Python's `int + int` / `int + float` semantics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Total {
    /// Every term so far was an integer (exact).
    Int(i128),
    /// A float joined: the sum as Python's float arithmetic gives it.
    Float(f64),
}

impl Total {
    /// Add one number; `None` when it cannot be done exactly.
    fn add(self, n: Num) -> Option<Total> {
        Some(match (self, n) {
            (_, Num::Huge) => return None,
            // `int + float` converts the int to the nearest double, as `as` does.
            (Total::Int(t), Num::Float(x)) => Total::Float(t as f64 + x),
            (Total::Float(t), Num::Float(x)) => Total::Float(t + x),
            (Total::Int(t), Num::Int(v)) => Total::Int(t.checked_add(v)?),
            (Total::Float(t), Num::Int(v)) => Total::Float(t + v as f64),
        })
    }
}

/// The numbers of one assistant line's `usage` object: [`scan::TOKEN_KEYS`](crate::scan::TOKEN_KEYS), then
/// `cost.total` (`None`: absent or not a number).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Numbers {
    pub(crate) tokens: [Option<Num>; 5],
    pub(crate) cost: Option<Num>,
}

/// A `(provider, model)` pair as the JSON texts of the two values (`None`: key absent).
pub type ModelKey = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The sums over the assistant lines added so far.
#[derive(Clone, Debug)]
pub struct UsageTotals {
    /// Sums of [`scan::TOKEN_KEYS`](crate::scan::TOKEN_KEYS).
    pub tokens: [Total; 5],
    /// Sum of `usage.cost.total`.
    pub cost: Total,
    /// Each `(provider, model)` pair and how many lines had it, in order of first
    /// occurrence.
    pub models: Vec<(ModelKey, u64)>,
    /// Assistant lines added.
    pub messages: u64,
    /// Every number added was summed exactly (else the sums are not to be used).
    pub exact: bool,
    /// `models` rows by [`model_key`].
    seen: HashMap<Vec<u8>, usize>,
    key: Vec<u8>,
    /// The row the last line added to (consecutive lines mostly share a model).
    last: usize,
}

impl Default for UsageTotals {
    fn default() -> UsageTotals {
        UsageTotals {
            tokens: [Total::Int(0); 5],
            cost: Total::Int(0),
            models: Vec::new(),
            messages: 0,
            exact: true,
            seen: HashMap::new(),
            key: Vec::new(),
            last: 0,
        }
    }
}

/// One byte string for a pair of optional texts (a tag and a length before each), so
/// that looking a pair up allocates nothing.
fn model_key(out: &mut Vec<u8>, provider: Option<&[u8]>, model: Option<&[u8]>) {
    out.clear();
    for t in [provider, model] {
        match t {
            None => out.push(0),
            Some(t) => {
                out.push(1);
                out.extend_from_slice(&(t.len() as u64).to_le_bytes());
                out.extend_from_slice(t);
            }
        }
    }
}

impl UsageTotals {
    /// Totals from their parts (a persisted index): the look-up of `models` rows is
    /// built again.
    pub(crate) fn from_parts(
        tokens: [Total; 5],
        cost: Total,
        models: Vec<(ModelKey, u64)>,
        messages: u64,
        exact: bool,
    ) -> UsageTotals {
        let mut seen = HashMap::with_capacity(models.len());
        let mut key = Vec::new();
        for (i, ((p, m), _)) in models.iter().enumerate() {
            model_key(&mut key, p.as_deref(), m.as_deref());
            seen.insert(key.clone(), i);
        }
        UsageTotals {
            tokens,
            cost,
            models,
            messages,
            exact,
            seen,
            key: Vec::new(),
            last: 0,
        }
    }

    /// Add one assistant entry: its `usage` numbers and the JSON texts of its
    /// `provider` and `model`. A number that cannot be summed exactly clears
    /// [`UsageTotals::exact`].
    pub(crate) fn add(&mut self, n: &Numbers, provider: Option<&[u8]>, model: Option<&[u8]>) {
        self.messages += 1;
        let same =
            |((p, m), _): &(ModelKey, u64)| p.as_deref() == provider && m.as_deref() == model;
        match self.models.get(self.last) {
            Some(row) if same(row) => self.models[self.last].1 += 1,
            _ => {
                model_key(&mut self.key, provider, model);
                match self.seen.get(self.key.as_slice()) {
                    Some(&i) => {
                        self.models[i].1 += 1;
                        self.last = i;
                    }
                    None => {
                        self.last = self.models.len();
                        self.seen.insert(self.key.clone(), self.last);
                        let pair = (provider.map(<[u8]>::to_vec), model.map(<[u8]>::to_vec));
                        self.models.push((pair, 1));
                    }
                }
            }
        }
        for (total, v) in self
            .tokens
            .iter_mut()
            .chain([&mut self.cost])
            .zip(n.tokens.iter().chain([&n.cost]))
        {
            if let Some(v) = *v {
                match total.add(v) {
                    Some(t) => *total = t,
                    None => self.exact = false,
                }
            }
        }
    }
}

/// The numbers of a line's `message.usage` as the validator recorded them in `f`
/// (`s`: the line the spans are in); a field that is not a JSON number is `None`.
pub(crate) fn numbers(s: &[u8], f: &Fields) -> Numbers {
    let num = |v: Val| match v {
        Val::Num { start, end } => s.get(start..end).and_then(Num::parse),
        _ => None,
    };
    Numbers {
        tokens: f.tokens.map(num),
        cost: num(f.cost_total),
    }
}

/// How a model is named for a side a session does not give (`_models.UNKNOWN`).
pub const UNKNOWN: &str = "(unknown)";

/// `_models.model_name`: `provider/model` from a model's two sides (empty: the session
/// gives none), an empty side [`UNKNOWN`], `unknown` when both are: the one spelling of
/// the exports' labels (`item::model_label`) and of `usage`'s lines by model
/// (`Report::model_lines`).
pub fn model_name(provider: &[u8], model: &[u8], unknown: &[u8]) -> Vec<u8> {
    fn side(s: &[u8]) -> &[u8] {
        if s.is_empty() {
            UNKNOWN.as_bytes()
        } else {
            s
        }
    }
    if provider.is_empty() && model.is_empty() {
        return unknown.to_vec();
    }
    [side(provider), b"/", side(model)].concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan;

    /// The totals over lines as the index takes them: validated, then each assistant
    /// message's numbers and model texts from the validator's fields.
    fn totals(lines: &[&str]) -> UsageTotals {
        let mut t = UsageTotals::default();
        for l in lines {
            let s = l.as_bytes();
            let mut f = scan::Fields::default();
            assert_eq!(scan::validate(s, &mut f), scan::Verdict::Object, "{l}");
            if scan::str_bytes(s, f.role).as_deref() != Some(b"assistant") {
                continue;
            }
            t.add(
                &numbers(s, &f),
                scan::value_raw(s, f.provider),
                scan::value_raw(s, f.model),
            );
        }
        t
    }

    #[test]
    fn sums_the_last_duplicate_and_numbers_only() {
        let t = totals(&[
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":1,"output":true,"input":2,"cost":{"total":0.5}},"provider":"a","model":"m"}}"#,
            r#"{"type":"message","message":{"role":"assistant","usage":{"input":3}},"message":{"role":"assistant","provider":"a","model":"m","usage":{"input":4,"output":1.5,"cost":{"total":"x"}}}}"#,
            r#"{"message":{"role":"assistant","usage":[1],"model":{"a":"}"}}}"#,
            r#"{"message":{"role":"assistant","us\u0061ge":{"output":-2e0,"totalTokens":170141183460469231731687303715884105727}}}"#,
            // The last `message` is not an object: no role, nothing counted.
            r#"{"message":{"role":"assistant","usage":{"input":100}},"message":1}"#,
            // The last `usage` of the last `message` counts, even when it is no object.
            r#"{"message":{"role":"assistant","usage":{"input":100},"usage":null,"provider":null}}"#,
            r#"{"message":{"role":"user","usage":{"input":100}}}"#,
            // Only `usage`'s own fields and its last `cost` object's own `total`.
            r#"{"message":{"role":"assistant","usage":{"cost":{"total":1},"cost":2,"x":{"input":5}}}}"#,
            r#"{"message":{"role":"assistant","usage":{"cost":{"x":{"total":9},"total":0.5}},"x":{"usage":{"input":9}}}}"#,
        ]);
        assert!(t.exact);
        assert_eq!(t.tokens[0], Total::Int(6));
        assert_eq!(t.tokens[1], Total::Float(-0.5));
        assert_eq!(t.tokens[4], Total::Int(i128::MAX));
        assert_eq!(t.cost, Total::Float(1.0));
        assert_eq!(t.messages, 7);
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
                (None, None, 3),
                (Some(b"null".to_vec()), None, 1),
            ]
        );
    }

    #[test]
    fn inexact_where_python_keeps_exact_integers() {
        let big = r#"{"message":{"role":"assistant","usage":{"input":1234567890123456789012345678901234567890}}}"#;
        assert!(!totals(&[big]).exact);
        let max = r#"{"message":{"role":"assistant","usage":{"input":170141183460469231731687303715884105727}}}"#;
        let one = r#"{"message":{"role":"assistant","usage":{"input":1}}}"#;
        assert!(!totals(&[max, one]).exact);
        assert!(totals(&[max]).exact);
        // A float sum never overflows into an error: 1e400 is inf, as in Python.
        let t = totals(&[r#"{"message":{"role":"assistant","usage":{"cost":{"total":1e400}}}}"#]);
        assert!(t.exact);
        assert_eq!(t.cost, Total::Float(f64::INFINITY));
    }
}
