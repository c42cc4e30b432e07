//! Usage reports over many sessions (docs/CONTRACT.md §7; the Python home of the rules
//! is `catalog/_usage.py`): the records a listing pass packs per file (its *usage
//! log*), and their sums by group, exact.
//!
//! A log is what the catalog keeps of a file's recorded usage: per record, in file
//! order, the entry id and `timestamp` string (the copy key), the entry number, the
//! kind, the time, provider and model, and the six numbers. A report reads the logs of
//! the files in scope, oldest holder first, counts each copy key once (charged to its
//! oldest holder; with `active` only if some holder has it on its current path), and
//! sums each group's numbers exactly: the sums are kept as Shewchuk expansions (the
//! partials of CPython's `math.fsum`), so Python's `fsum` over them gives the correctly
//! rounded sum of every record, whatever the order.
//!
//! Groups are a key (a model, or a number the caller gives each file) and, when asked,
//! a time bucket: the 15-minute slice of UTC an integral millisecond time falls in.
//! Times that are not integral milliseconds in years 5–9986 come back one by one.

use std::collections::HashMap;

/// One recorded usage, borrowed.
pub struct Record<'a> {
    /// The entry's id.
    pub id: &'a [u8],
    /// The entry's `timestamp` string, empty when it is not one (never a copy then).
    pub stamp: &'a [u8],
    /// The entry's number in its file.
    pub seq: u32,
    /// `listing::UsageKind` as a number.
    pub kind: u8,
    /// The entry's time, epoch ms.
    pub time: Option<f64>,
    /// `provider` (empty when not a string, or not recorded).
    pub provider: &'a [u8],
    /// `model`, likewise.
    pub model: &'a [u8],
    /// `input`, `output`, `cacheRead`, `cacheWrite`, `totalTokens`, `cost.total`.
    pub numbers: [f64; 6],
}

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Append `r` to a log.
pub fn push(out: &mut Vec<u8>, r: &Record<'_>) {
    put(out, r.id);
    put(out, r.stamp);
    out.extend_from_slice(&r.seq.to_le_bytes());
    out.push(r.kind);
    out.extend_from_slice(&r.time.unwrap_or(f64::NAN).to_le_bytes());
    put(out, r.provider);
    put(out, r.model);
    for n in r.numbers {
        // `usage.get(k) or 0.0`: a zero of either sign is +0.0.
        let n = if n == 0.0 { 0.0 } else { n };
        out.extend_from_slice(&n.to_le_bytes());
    }
}

/// The records of a log; a malformed end stops the walk and sets `bad`.
pub struct Records<'a> {
    rest: &'a [u8],
    /// The log ended in the middle of a record.
    pub bad: bool,
}

impl<'a> Records<'a> {
    pub fn new(log: &'a [u8]) -> Records<'a> {
        Records {
            rest: log,
            bad: false,
        }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Some(a)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        self.take(n)
    }

    fn f64(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn record(&mut self) -> Option<Record<'a>> {
        let id = self.bytes()?;
        let stamp = self.bytes()?;
        let seq = u32::from_le_bytes(self.take(4)?.try_into().ok()?);
        let kind = self.take(1)?[0];
        let time = self.f64()?;
        let provider = self.bytes()?;
        let model = self.bytes()?;
        let mut numbers = [0.0; 6];
        for n in &mut numbers {
            *n = self.f64()?;
        }
        Some(Record {
            id,
            stamp,
            seq,
            kind,
            time: (!time.is_nan()).then_some(time),
            provider,
            model,
            numbers,
        })
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.record();
        if r.is_none() {
            self.bad = true;
            self.rest = &[];
        }
        r
    }
}

/// An exact sum: non-overlapping partials whose exact sum is the sum of every value
/// added (CPython's `msum`), or, once a value is not finite or a partial overflows,
/// the values themselves (the caller sums those as Python does).
#[derive(Clone, Debug, Default)]
pub struct Sum {
    /// The partials, smallest magnitude first.
    pub partials: Vec<f64>,
    /// Every value, kept once the partials cannot be exact.
    pub values: Option<Vec<f64>>,
    all: Vec<f64>,
}

impl Sum {
    fn add(&mut self, x: f64) {
        // `usage.get(k) or 0.0`: a zero of either sign is +0.0.
        let x = if x == 0.0 { 0.0 } else { x };
        if let Some(v) = &mut self.values {
            v.push(x);
            return;
        }
        self.all.push(x);
        if !x.is_finite() {
            self.values = Some(std::mem::take(&mut self.all));
            return;
        }
        let mut x = x;
        let mut i = 0;
        for j in 0..self.partials.len() {
            let mut y = self.partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if !hi.is_finite() {
                self.values = Some(std::mem::take(&mut self.all));
                return;
            }
            if lo != 0.0 {
                self.partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        self.partials.truncate(i);
        self.partials.push(x);
        // Values are only needed while an overflow may still come; a handful of
        // partials stand for them.
        if self.all.len() > 64 {
            self.all.clear();
            self.all.extend_from_slice(&self.partials);
        }
    }
}

/// What a group holds.
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// Records counted.
    pub records: u64,
    /// The six sums.
    pub sums: [Sum; 6],
}

impl Group {
    fn add(&mut self, numbers: &[f64; 6]) {
        self.records += 1;
        for (s, &n) in self.sums.iter_mut().zip(numbers) {
            s.add(n);
        }
    }
}

/// How records are keyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// By `(provider, model)`.
    Model,
    /// By the number the caller gives the record's file.
    File,
    /// One key.
    None,
}

/// A time bucket: a 15-minute slice of UTC, no time, or a time that comes back alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bucket {
    Slice(i64),
    NoTime,
    All,
}

/// Milliseconds in a bucket.
pub const SLICE_MS: i64 = 15 * 60 * 1000;

/// Times bucketed here: integral milliseconds inside years 5–9986 (a local day, week
/// or month of any zone is then a union of slices; the caller checks each slice).
const FIRST_MS: f64 = -62_000_000_000_000.0;
const LAST_MS: f64 = 253_000_000_000_000.0;

/// One file in scope of a report.
pub struct FileLog<'a> {
    /// Its usage log.
    pub log: &'a [u8],
    /// Its key for [`Key::File`].
    pub key: u32,
    /// Entry numbers on its current path (only for an `active` report).
    pub on_path: Option<Vec<bool>>,
}

/// A report's result.
#[derive(Debug, Default)]
pub struct Report {
    /// `(key, bucket)` → the group; for [`Key::Model`] the key indexes `models`.
    pub groups: Vec<((u32, Bucket), Group)>,
    /// Records whose time is not bucketed: `(key, time, numbers)`.
    pub loose: Vec<(u32, f64, [f64; 6])>,
    /// The `(provider, model)` pairs of [`Key::Model`].
    pub models: Vec<(Vec<u8>, Vec<u8>)>,
    /// Some log was malformed (the catalog is damaged).
    pub bad: bool,
}

/// Sum the records of `files` (oldest holder first): each copy key once, charged to its
/// first holder; with `active`, only records on some holder's current path; grouped by
/// `key` and, with `buckets`, by [`Bucket`].
pub fn report(files: &[FileLog<'_>], key: Key, buckets: bool, active: bool) -> Report {
    // Copy key → (owner's file, its record index in `owned`); holders' path flags OR-ed.
    let mut owners: HashMap<(&[u8], &[u8]), usize> = HashMap::new();
    struct Owned<'a> {
        file: usize,
        rec: Record<'a>,
        on: bool,
    }
    let mut owned: Vec<Owned<'_>> = Vec::new();
    let mut out = Report::default();
    for (fi, f) in files.iter().enumerate() {
        let mut recs = Records::new(f.log);
        for rec in &mut recs {
            let on = f
                .on_path
                .as_ref()
                .is_some_and(|p| p.get(rec.seq as usize).copied().unwrap_or(false));
            if !rec.stamp.is_empty() {
                if let Some(&k) = owners.get(&(rec.id, rec.stamp)) {
                    owned[k].on |= on;
                    continue;
                }
                owners.insert((rec.id, rec.stamp), owned.len());
            }
            owned.push(Owned { file: fi, rec, on });
        }
        out.bad |= recs.bad;
    }
    let mut models: HashMap<(&[u8], &[u8]), u32> = HashMap::new();
    let mut groups: HashMap<(u32, Bucket), Group> = HashMap::new();
    for o in &owned {
        if active && !o.on {
            continue;
        }
        let r = &o.rec;
        let k = match key {
            Key::Model => {
                let n = models.len() as u32;
                *models.entry((r.provider, r.model)).or_insert_with(|| {
                    out.models.push((r.provider.to_vec(), r.model.to_vec()));
                    n
                })
            }
            Key::File => files[o.file].key,
            Key::None => 0,
        };
        let b = match (buckets, r.time) {
            (false, _) => Bucket::All,
            (true, None) => Bucket::NoTime,
            (true, Some(t)) if t.fract() == 0.0 && (FIRST_MS..LAST_MS).contains(&t) => {
                Bucket::Slice((t as i64).div_euclid(SLICE_MS))
            }
            (true, Some(t)) => {
                out.loose.push((k, t, r.numbers));
                continue;
            }
        };
        groups.entry((k, b)).or_default().add(&r.numbers);
    }
    out.groups = groups.into_iter().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (id, stamp, seq, time, model, numbers)
    type Rec<'a> = (&'a str, &'a str, u32, Option<f64>, &'a str, [f64; 6]);

    fn log(recs: &[Rec<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(id, stamp, seq, time, model, numbers) in recs {
            push(
                &mut out,
                &Record {
                    id: id.as_bytes(),
                    stamp: stamp.as_bytes(),
                    seq,
                    kind: 0,
                    time,
                    provider: b"p",
                    model: model.as_bytes(),
                    numbers,
                },
            );
        }
        out
    }

    fn total(s: &Sum) -> f64 {
        s.partials.iter().sum()
    }

    #[test]
    fn copies_once_to_the_oldest_holder() {
        let a = log(&[
            ("x", "t1", 0, Some(0.0), "m", [1.0; 6]),
            ("y", "", 1, None, "m", [2.0; 6]),
        ]);
        let b = log(&[
            ("x", "t1", 0, Some(0.0), "n", [5.0; 6]),
            ("y", "", 1, None, "n", [3.0; 6]),
        ]);
        let files = [
            FileLog {
                log: &a,
                key: 0,
                on_path: None,
            },
            FileLog {
                log: &b,
                key: 1,
                on_path: None,
            },
        ];
        let r = report(&files, Key::File, false, false);
        let mut g: Vec<_> = r
            .groups
            .iter()
            .map(|((k, _), g)| (*k, g.records, total(&g.sums[0])))
            .collect();
        g.sort_by_key(|x| x.0);
        assert_eq!(g, vec![(0, 2, 3.0), (1, 1, 3.0)]);
    }

    #[test]
    fn sums_are_exact() {
        let mut s = Sum::default();
        for x in [1e16, 1.0, -1e16, 0.1, 0.2] {
            s.add(x);
        }
        // The partials hold 1.0 + 0.1 + 0.2 exactly (as doubles): fsum gives 1.3.
        let mut p = s.partials.clone();
        p.sort_by(|a, b| a.abs().partial_cmp(&b.abs()).unwrap());
        assert!((p.iter().sum::<f64>() - 1.3).abs() < 1e-15);
        let mut o = Sum::default();
        o.add(1e308);
        o.add(1e308);
        assert_eq!(o.values.as_deref(), Some(&[1e308, 1e308][..]));
    }

    #[test]
    fn buckets_and_loose_times() {
        let a = log(&[
            ("a", "1", 0, Some(900_000.0), "m", [1.0; 6]),
            ("b", "2", 1, Some(1_799_999.0), "m", [1.0; 6]),
            ("c", "3", 2, Some(0.5), "m", [1.0; 6]),
            ("d", "4", 3, None, "m", [1.0; 6]),
        ]);
        let r = report(
            &[FileLog {
                log: &a,
                key: 0,
                on_path: None,
            }],
            Key::Model,
            true,
            false,
        );
        let mut b: Vec<_> = r.groups.iter().map(|((_, b), g)| (*b, g.records)).collect();
        b.sort_by_key(|x| format!("{:?}", x.0));
        assert_eq!(b, vec![(Bucket::NoTime, 1), (Bucket::Slice(1), 2)]);
        assert_eq!(r.loose.len(), 1);
        assert_eq!(r.models, vec![(b"p".to_vec(), b"m".to_vec())]);
    }
}
