//! Usage reports over many sessions (docs/CONTRACT.md §7; the Python home of the rules
//! is `catalog/_usage.py`): the records a listing pass packs per file (its *usage
//! log*), and their sums by group, exact.
//!
//! A log is what the catalog keeps of a file's recorded usage, in file order. It is
//! written in pieces (one per scan of the file: a piece starts with `0x00`), each
//! defining the `(provider, model)` pairs its records name (`0x01`, then the two as
//! byte strings; numbered from 0 in the piece) before the records (`0x02`): the entry
//! id and `timestamp` string (the copy key), the entry number, the kind, the time,
//! the pair's number and the six numbers. Byte strings are a varint length and the
//! bytes; numbers are varints; a time is `0` (none), `1` and a zigzag varint
//! (integral ms) or `2` and an `f64`; each of the six numbers is a varint `2n` (an
//! integer `n` below 2^52, zero of either sign as 0) or `1` and an `f64`.
//! `catalog._records.pack_log` writes the same bytes.
//!
//! A report reads the logs of the files in scope, oldest holder first, counts each
//! copy key once (charged to its oldest holder; with `active` only if some holder has
//! it on its current path), and sums each group's numbers exactly: the sums are kept as
//! Shewchuk expansions (the partials of CPython's `math.fsum`), so Python's `fsum`
//! over them gives the correctly rounded sum of every record, whatever the order; a
//! group whose sum is not finite on the way gives its values instead.
//!
//! Groups are a key (a model, or a number the caller gives each file) and, when asked,
//! a time bucket: the 15-minute slice of UTC an integral millisecond time falls in, or,
//! where the caller gives the zone's offset for the slice's UTC day, the local day the
//! slice lies in (the slices of one local day summed here: a report by day, week or
//! month gets a group per local day, not one per slice for Python to place).
//! Times that are not integral milliseconds in years 5–9986 come back one by one.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// One recorded usage, borrowed.
#[derive(Clone, Copy, Debug)]
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

const PIECE: u8 = 0;
const DEFINE: u8 = 1;
const RECORD: u8 = 2;

pub(crate) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Largest integer a number is written as a varint for (exact in an `f64`).
const SMALL: f64 = (1u64 << 52) as f64;

/// One piece of a log, written record by record.
#[derive(Debug, Default)]
pub struct LogWriter {
    /// The bytes (empty while no record was written).
    pub out: Vec<u8>,
    /// Each `(provider, model)` defined, by its key ([`model_key`]) and number, and the
    /// last one written (most records repeat it). A list searched per record took
    /// minutes for a file of 60,000 models (adversary round 51).
    models: HashMap<Vec<u8>, usize>,
    last: Option<(Vec<u8>, usize)>,
    key: Vec<u8>,
}

/// `(provider, model)` as one byte string: the provider's length, then both.
fn model_key(out: &mut Vec<u8>, provider: &[u8], model: &[u8]) {
    out.clear();
    out.extend_from_slice(&(provider.len() as u64).to_le_bytes());
    out.extend_from_slice(provider);
    out.extend_from_slice(model);
}

impl LogWriter {
    /// Append `r`.
    pub fn push(&mut self, r: &Record<'_>) {
        if self.out.is_empty() {
            self.out.push(PIECE);
        }
        model_key(&mut self.key, r.provider, r.model);
        let m = match &self.last {
            Some((k, m)) if *k == self.key => *m,
            _ => {
                let m = match self.models.get(self.key.as_slice()) {
                    Some(&m) => m,
                    None => {
                        self.out.push(DEFINE);
                        bytes(&mut self.out, r.provider);
                        bytes(&mut self.out, r.model);
                        let m = self.models.len();
                        self.models.insert(self.key.clone(), m);
                        m
                    }
                };
                self.last = Some((self.key.clone(), m));
                m
            }
        };
        let out = &mut self.out;
        out.push(RECORD);
        bytes(out, r.id);
        bytes(out, r.stamp);
        varint(out, r.seq as u64);
        out.push(r.kind);
        match r.time {
            None => out.push(0),
            Some(t) if t.fract() == 0.0 && t.abs() < SMALL => {
                out.push(1);
                let t = t as i64;
                varint(out, ((t << 1) ^ (t >> 63)) as u64);
            }
            Some(t) => {
                out.push(2);
                out.extend_from_slice(&t.to_le_bytes());
            }
        }
        varint(out, m as u64);
        for n in r.numbers {
            if n == 0.0 || (n > 0.0 && n < SMALL && n.fract() == 0.0) {
                varint(out, 2 * n as u64);
            } else {
                out.push(1);
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
    }
}

/// The records of a log; a malformed log stops the walk and sets `bad`.
pub struct Records<'a> {
    pub(crate) rest: &'a [u8],
    models: Vec<(&'a [u8], &'a [u8])>,
    /// Pieces met so far (a record's `model` numbers are the current piece's).
    pub piece: u32,
    /// The current record's pair number in its piece.
    pub model: usize,
    /// The log is malformed.
    pub bad: bool,
}

impl<'a> Records<'a> {
    /// The records of `log`.
    pub fn new(log: &'a [u8]) -> Records<'a> {
        Records {
            rest: log,
            models: Vec::new(),
            piece: 0,
            model: 0,
            bad: false,
        }
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(b)
    }

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    pub(crate) fn chunk(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Some(a)
    }

    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.chunk(n)
    }

    pub(crate) fn f64(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.chunk(8)?.try_into().ok()?))
    }

    fn step(&mut self) -> Option<Record<'a>> {
        loop {
            match self.byte()? {
                PIECE => {
                    self.models.clear();
                    self.piece += 1;
                }
                DEFINE => {
                    let p = self.bytes()?;
                    let m = self.bytes()?;
                    self.models.push((p, m));
                }
                RECORD => break,
                _ => return None,
            }
        }
        if self.piece == 0 {
            return None;
        }
        let id = self.bytes()?;
        let stamp = self.bytes()?;
        let seq = u32::try_from(self.varint()?).ok()?;
        let kind = self.byte()?;
        let time = match self.byte()? {
            0 => None,
            1 => {
                let z = self.varint()?;
                Some((((z >> 1) as i64) ^ -((z & 1) as i64)) as f64)
            }
            2 => Some(self.f64()?),
            _ => return None,
        };
        let m = usize::try_from(self.varint()?).ok()?;
        let &(provider, model) = self.models.get(m)?;
        self.model = m;
        let mut numbers = [0.0; 6];
        for n in &mut numbers {
            let v = self.varint()?;
            *n = match v {
                1 => self.f64()?,
                v if v % 2 == 0 => (v / 2) as f64,
                _ => return None,
            };
        }
        Some(Record {
            id,
            stamp,
            seq,
            kind,
            time,
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
        let r = self.step();
        if r.is_none() {
            self.bad = true;
            self.rest = &[];
        }
        r
    }
}

/// FxHash's step: keys here are hashes or small numbers already.
#[derive(Default)]
pub(crate) struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    fn write_i64(&mut self, x: i64) {
        self.write_u64(x as u64);
    }
    fn write_u8(&mut self, x: u8) {
        self.write_u64(x as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

pub(crate) type Fast = BuildHasherDefault<Mix>;

/// An exact sum's partials, the first four held inline.
pub type Partials = smallvec::SmallVec<[f64; 4]>;

/// An exact sum: non-overlapping partials whose exact sum is the sum of every value
/// added (CPython's `msum`); `spoiled` once a value or a partial is not finite (the
/// report then gives the group's values).
#[derive(Clone, Debug, Default)]
pub struct Sum {
    /// The partials.
    pub partials: Partials,
    /// Every value, when the partials cannot stand for them.
    pub values: Option<Vec<f64>>,
    pub(crate) spoiled: bool,
}

impl Sum {
    pub(crate) fn add(&mut self, x: f64) {
        if self.spoiled {
            return;
        }
        // `usage.get(k) or 0.0`: a zero of either sign is +0.0.
        let mut x = if x == 0.0 { 0.0 } else { x };
        if !x.is_finite() {
            self.spoiled = true;
            return;
        }
        let mut i = 0;
        for j in 0..self.partials.len() {
            let mut y = self.partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if !hi.is_finite() {
                self.spoiled = true;
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
    }
}

impl Sum {
    /// The sum rounded once, as CPython's `math.fsum` rounds its partials (from the
    /// largest down while exact, then half-even across partials): the partials are
    /// `msum`'s, so this is the correctly rounded exact sum, `catalog/_usage.exact_sum`'s
    /// value. `None` when spoiled or beyond the double range (that rule's other cases).
    pub fn rounded(&self) -> Option<f64> {
        if self.spoiled || self.values.is_some() {
            return None;
        }
        let p = &self.partials;
        let mut n = p.len();
        let mut hi = 0.0;
        let mut lo = 0.0;
        if n > 0 {
            n -= 1;
            hi = p[n];
            while n > 0 {
                let x = hi;
                n -= 1;
                let y = p[n];
                hi = x + y;
                lo = y - (hi - x);
                if lo != 0.0 {
                    break;
                }
            }
            if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
                let y = lo * 2.0;
                let x = hi + y;
                if y == x - hi {
                    hi = x;
                }
            }
        }
        hi.is_finite().then_some(hi)
    }
}

/// A report as its lines (each its key, records and six sums, each rounded once) and
/// their total (`(records, sums)`).
pub type LinesOf<K> = (Vec<(K, u64, [f64; 6])>, (u64, [f64; 6]));

/// A report by key (a file, a project, a pair) as its lines.
pub type Lines = LinesOf<u32>;

/// A time report as its lines, each named.
pub type NamedLines = LinesOf<String>;

/// A report by model as its lines, each named by the model's bytes.
pub type NamedBytesLines = LinesOf<Vec<u8>>;

impl Report {
    /// The report as its lines and their total (`(records, sums)`), one line a key
    /// (a file, a project, a pair), when every sum rounds ([`Sum::rounded`]): with no
    /// time buckets, each group is a line; with `span`, the groups of the local days
    /// from its first to its last (days since 1970-01-01) are merged into their key's
    /// line, and records without a time left out (`--since`, `--until`). `None`
    /// otherwise (the caller sums the groups' partials).
    pub fn lines(&self, span: Option<(i64, i64)>) -> Option<Lines> {
        self.keyed(span, Some)
    }

    /// [`Report::lines`] of a report by `(provider, model)` pair, one line a name as
    /// `usage::model_name` gives it (`view.model_label`'s spelling: `provider/model`,
    /// an empty side `(unknown)`, neither given `(unknown)`): two pairs that read alike
    /// are one line.
    pub fn model_lines(&self, span: Option<(i64, i64)>) -> Option<NamedBytesLines> {
        use crate::usage::{model_name, UNKNOWN};
        self.keyed(span, |k| {
            let (p, m) = self.models.get(k as usize)?;
            Some(model_name(p, m, UNKNOWN.as_bytes()))
        })
    }

    /// [`Report::lines`], each group's line named by `name` of its key.
    fn keyed<K: Clone + Eq + std::hash::Hash>(
        &self,
        span: Option<(i64, i64)>,
        name: impl Fn(u32) -> Option<K>,
    ) -> Option<LinesOf<K>> {
        self.merged(|k, b| match (b, span) {
            (Bucket::All, None) => Some(Some(name(k)?)),
            (Bucket::Day(d), Some((first, last))) if (first..=last).contains(&d) => {
                Some(Some(name(k)?))
            }
            (Bucket::Day(_) | Bucket::NoTime, Some(_)) => Some(None),
            _ => None,
        })
    }

    /// The report as its lines named by `period` and their total, when every group is
    /// a local day or without time (`(no time)`, the last line) and every sum rounds;
    /// `None` otherwise (a slice no local day holds, a loose record: the caller sums
    /// the groups' partials). Lines in time order, as `_usage._summary` orders them.
    /// With `span`, only the local days from its first to its last (days since
    /// 1970-01-01), and no records without a time (`--since`, `--until`).
    pub fn period_lines(&self, period: Period, span: Option<(i64, i64)>) -> Option<NamedLines> {
        let (mut lines, total) = self.merged(|_, b| match (b, span) {
            (Bucket::Day(d), Some((first, last))) if !(first..=last).contains(&d) => Some(None),
            (Bucket::Day(d), _) => Some(Some(period.name(d))),
            (Bucket::NoTime, Some(_)) => Some(None),
            (Bucket::NoTime, None) => Some(Some(NO_TIME.to_owned())),
            (Bucket::Slice(_) | Bucket::All, _) => None,
        })?;
        lines.sort_by(|a, b| (a.0 == NO_TIME, &a.0).cmp(&(b.0 == NO_TIME, &b.0)));
        Some((lines, total))
    }

    /// The groups merged into lines by `line_of` (`None`: the report has no such lines;
    /// `Some(None)`: the group is left out), in the order first met, each sum and the
    /// total's rounded once.
    fn merged<K: Clone + Eq + std::hash::Hash>(
        &self,
        line_of: impl Fn(u32, Bucket) -> Option<Option<K>>,
    ) -> Option<LinesOf<K>> {
        if !self.loose.is_empty() || self.bad {
            return None;
        }
        let mut at: HashMap<K, usize> = HashMap::new();
        let mut merged: Vec<(K, Group)> = Vec::new();
        let mut total = Group::default();
        for ((k, b), g) in &self.groups {
            let Some(key) = line_of(*k, *b)? else {
                continue;
            };
            total.absorb(g);
            match at.get(&key) {
                Some(&i) => merged[i].1.absorb(g),
                None => {
                    at.insert(key.clone(), merged.len());
                    merged.push((key, g.clone()));
                }
            }
        }
        let round = |g: &Group| -> Option<[f64; 6]> {
            let mut sums = [0.0; 6];
            for (out, s) in sums.iter_mut().zip(&g.sums) {
                *out = s.rounded()?;
            }
            Some(sums)
        };
        let mut lines = Vec::with_capacity(merged.len());
        for (key, g) in merged {
            lines.push((key, g.records, round(&g)?));
        }
        Some((lines, (total.records, round(&total)?)))
    }
}

/// The stretch of local time a time report's line covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    /// `YYYY-MM-DD`.
    Day,
    /// The ISO week, `YYYY-Www` (the year the week's Thursday is in).
    Week,
    /// `YYYY-MM`.
    Month,
}

impl Period {
    /// The name of the line local day `day` (days since 1970-01-01) is in, as Python's
    /// `date` writes it (`_usage._key`: years of four digits).
    pub fn name(self, day: i64) -> String {
        use crate::time::{civil_from_days, days_from_civil};
        let (y, m, d) = civil_from_days(day);
        match self {
            Period::Day => format!("{y:04}-{m:02}-{d:02}"),
            Period::Month => format!("{y:04}-{m:02}"),
            Period::Week => {
                // 1970-01-01 was a Thursday: Monday is 0.
                let thursday = day - (day + 3).rem_euclid(7) + 3;
                let (year, ..) = civil_from_days(thursday);
                let week = (thursday - days_from_civil(year, 1, 1)) / 7 + 1;
                format!("{year:04}-W{week:02}")
            }
        }
    }
}

/// The line of records without a time in a time report.
const NO_TIME: &str = "(no time)";

/// What a group holds.
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// Records counted.
    pub records: u64,
    /// The six sums.
    pub sums: [Sum; 6],
}

impl Group {
    /// Count `g`'s records and sums in this group too (its partials added exactly).
    pub(crate) fn absorb(&mut self, g: &Group) {
        self.records += g.records;
        for (s, t) in self.sums.iter_mut().zip(&g.sums) {
            for &p in &t.partials {
                s.add(p);
            }
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

/// A time bucket: a 15-minute slice of UTC, a local day (days since 1970-01-01 in the
/// caller's zone), no time, or none asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bucket {
    Slice(i64),
    Day(i64),
    NoTime,
    All,
}

/// Milliseconds in a bucket.
pub const SLICE_MS: i64 = 15 * 60 * 1000;

/// Milliseconds in a day (of UTC; a local day is one too between offset changes).
pub const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// The zone's offsets through each UTC day asked (days since 1970-01-01, ascending),
/// `None` where they are not known. A slice of a day with one offset that is a whole
/// number of slices lies in one local day, and so does a slice of a day of several
/// offsets whose two ends have one and lie in one local day; the others stay slices.
pub type DayOffsets<'f> = &'f mut AskDays<'f>;

/// The question [`DayOffsets`] answers.
pub type AskDays<'a> = dyn FnMut(&[i64]) -> Vec<Option<DayOffset>> + 'a;

/// A zone's offsets (ms east of UTC) through one UTC day.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DayOffset {
    /// One offset all day.
    One(i64),
    /// A day the offset changes in (a summer time's start or end): the offset of each of
    /// its 96 slices, where the slice's start and end have one.
    Slices(Vec<Option<i64>>),
}

/// Slices in a day.
const DAY_SLICES: i64 = DAY_MS / SLICE_MS;

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
    /// `(key, bucket)` and the group; for [`Key::Model`] the key indexes `models`.
    pub groups: Vec<((u32, Bucket), Group)>,
    /// Records whose time is not bucketed: `(key, time, numbers)`.
    pub loose: Vec<(u32, f64, [f64; 6])>,
    /// The `(provider, model)` pairs of [`Key::Model`].
    pub models: Vec<(Vec<u8>, Vec<u8>)>,
    /// Some log was malformed (the catalog is damaged).
    pub bad: bool,
}

/// A record a report counts: its file, the record, its group key, and whether some
/// holder has it on its current path.
struct Owned<'a> {
    rec: Record<'a>,
    key: u32,
    on: bool,
}

/// Sum the records of `files` (oldest holder first): each copy key once, charged to its
/// first holder; with `active`, only records on some holder's current path; grouped by
/// `key` and, with `buckets`, by [`Bucket`]: by local day where `days` gives the
/// slice's UTC day an offset, else by slice.
pub fn report(
    files: &[FileLog<'_>],
    key: Key,
    buckets: bool,
    active: bool,
    days: Option<DayOffsets<'_>>,
) -> Report {
    let mut none = |d: &[i64]| vec![None; d.len()];
    let ask: &mut AskDays<'_> = match days {
        Some(f) => f,
        None => &mut none,
    };
    if !active {
        if let Some(r) = streamed(files, key, buckets, &mut *ask) {
            return r;
        }
    }
    held(files, key, buckets, active, ask)
}

/// The slice of UTC an integral millisecond time in years 5–9986 falls in.
pub(crate) fn slice_of(t: Option<f64>) -> Option<i64> {
    match t {
        Some(t) if t.fract() == 0.0 && (FIRST_MS..LAST_MS).contains(&t) => {
            Some((t as i64).div_euclid(SLICE_MS))
        }
        _ => None,
    }
}

/// The offsets `ask` gives the UTC days of `slices`: one offset that is a whole number
/// of slices (another's slices are not all in one local day), or one per slice.
pub(crate) fn day_table(
    slices: impl Iterator<Item = i64>,
    ask: &mut AskDays<'_>,
) -> HashMap<i64, DayOffset, Fast> {
    let mut utc: Vec<i64> = slices.map(|n| (n * SLICE_MS).div_euclid(DAY_MS)).collect();
    utc.sort_unstable();
    utc.dedup();
    if utc.is_empty() {
        return HashMap::default();
    }
    let got = ask(&utc);
    utc.into_iter()
        .zip(got)
        .filter_map(|(d, off)| match off? {
            DayOffset::One(o) if o % SLICE_MS != 0 => None,
            DayOffset::Slices(v) if v.len() as i64 != DAY_SLICES => None,
            off => Some((d, off)),
        })
        .collect()
}

/// The bucket of slice `n`: its local day where `table` gives it one.
pub(crate) fn day_of(n: i64, table: &HashMap<i64, DayOffset, Fast>) -> Bucket {
    let start = n * SLICE_MS;
    let day = start.div_euclid(DAY_MS);
    match table.get(&day) {
        Some(DayOffset::One(off)) => Bucket::Day((start + off).div_euclid(DAY_MS)),
        Some(DayOffset::Slices(offs)) => match offs[(n - day * DAY_SLICES) as usize] {
            // As `_usage._pieces` places a slice: its two ends in one local day.
            Some(off)
                if (start + off).div_euclid(DAY_MS)
                    == (start + SLICE_MS - 1 + off).div_euclid(DAY_MS) =>
            {
                Bucket::Day((start + off).div_euclid(DAY_MS))
            }
            _ => Bucket::Slice(n),
        },
        None => Bucket::Slice(n),
    }
}

/// `groups` with each 15-minute slice put into its local day where `ask` gives its UTC
/// day an offset of whole slices ([`day_table`]), the partial sums of one key and day
/// merged; a slice whose day has no such offset stays a slice (placed by the caller).
pub(crate) fn slices_into_days(
    groups: Vec<((u32, Bucket), Group)>,
    ask: &mut AskDays<'_>,
) -> Vec<((u32, Bucket), Group)> {
    let slices = groups.iter().filter_map(|((_, b), _)| match b {
        Bucket::Slice(n) => Some(*n),
        _ => None,
    });
    let table = day_table(slices, ask);
    if table.is_empty() {
        return groups;
    }
    let mut at: HashMap<(u32, Bucket), usize, Fast> = HashMap::default();
    let mut merged: Vec<((u32, Bucket), Group)> = Vec::new();
    for ((k, b), g) in groups {
        let b = match b {
            Bucket::Slice(n) => day_of(n, &table),
            _ => b,
        };
        match at.get(&(k, b)) {
            Some(&i) => merged[i].1.absorb(&g),
            None => {
                at.insert((k, b), merged.len());
                merged.push(((k, b), g));
            }
        }
    }
    merged
}

/// The report keys of `(provider, model)` pairs: a piece's pair numbers → the
/// report's, numbered as first met.
#[derive(Default)]
struct ModelKeys<'a> {
    keys: HashMap<(&'a [u8], &'a [u8]), u32>,
    piece: u32,
    local: Vec<Option<u32>>,
}

impl<'a> ModelKeys<'a> {
    /// A new file starts.
    fn file(&mut self) {
        self.piece = 0;
        self.local.clear();
    }

    fn key(
        &mut self,
        recs: &Records<'a>,
        rec: &Record<'a>,
        out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> u32 {
        if recs.piece != self.piece {
            self.piece = recs.piece;
            self.local.clear();
        }
        if self.local.len() <= recs.model {
            self.local.resize(recs.model + 1, None);
        }
        let keys = &mut self.keys;
        *self.local[recs.model].get_or_insert_with(|| {
            let n = keys.len() as u32;
            *keys.entry((rec.provider, rec.model)).or_insert_with(|| {
                out.push((rec.provider.to_vec(), rec.model.to_vec()));
                n
            })
        })
    }
}

/// The copy key's hash (`id`, then `timestamp` string).
pub(crate) fn copy_hash(rec: &Record<'_>) -> u64 {
    twox_hash::XxHash3_64::oneshot_with_seed(twox_hash::XxHash3_64::oneshot(rec.id), rec.stamp)
}

/// [`report`] without `active`, each record summed as it is read (a later copy is
/// skipped): no record is held, only the copy keys met and the groups, by slice and
/// then (with days' offsets) merged into local days, their partials added. At 20,000
/// sessions (807,000 records) the held records were 115 MB of fresh pages. `None` when
/// a sum is spoiled: the held pass then gives the group's values.
fn streamed(files: &[FileLog<'_>], key: Key, buckets: bool, ask: &mut AskDays) -> Option<Report> {
    let mut out = Report::default();
    // Copy keys by their hash, to where the key itself is kept (read again only when a
    // hash is met again): the table stays small for the cache.
    let mut owners: HashMap<u64, u32, Fast> = HashMap::default();
    let mut keys: Vec<(&[u8], &[u8])> = Vec::new();
    let mut collided: std::collections::HashSet<(&[u8], &[u8])> = Default::default();
    let mut models = ModelKeys::default();
    let mut index: HashMap<(u32, Bucket), usize, Fast> = HashMap::default();
    let mut groups: Vec<((u32, Bucket), Group)> = Vec::new();
    for f in files {
        let mut recs = Records::new(f.log);
        models.file();
        while let Some(rec) = recs.next() {
            if !rec.stamp.is_empty() {
                let h = copy_hash(&rec);
                match owners.get(&h) {
                    Some(&i) if keys[i as usize] == (rec.id, rec.stamp) => continue,
                    Some(_) => {
                        if !collided.insert((rec.id, rec.stamp)) {
                            continue;
                        }
                    }
                    None => {
                        owners.insert(h, keys.len() as u32);
                        keys.push((rec.id, rec.stamp));
                    }
                }
            }
            let k = match key {
                Key::Model => models.key(&recs, &rec, &mut out.models),
                Key::File => f.key,
                Key::None => 0,
            };
            let b = match (buckets, rec.time, slice_of(rec.time)) {
                (false, _, _) => Bucket::All,
                (true, None, _) => Bucket::NoTime,
                (true, Some(_), Some(n)) => Bucket::Slice(n),
                (true, Some(t), None) => {
                    out.loose.push((k, t, rec.numbers));
                    continue;
                }
            };
            let g = *index.entry((k, b)).or_insert_with(|| {
                groups.push(((k, b), Group::default()));
                groups.len() - 1
            });
            let group = &mut groups[g].1;
            group.records += 1;
            for (s, &n) in group.sums.iter_mut().zip(&rec.numbers) {
                s.add(n);
            }
        }
        out.bad |= recs.bad;
    }
    let spoiled =
        |g: &[((u32, Bucket), Group)]| g.iter().any(|g| g.1.sums.iter().any(|s| s.spoiled));
    if spoiled(&groups) {
        return None;
    }
    if buckets {
        groups = slices_into_days(groups, ask);
        if spoiled(&groups) {
            return None;
        }
    }
    out.groups = groups;
    Some(out)
}

/// [`report`] with every record held until the end: `active` (a later holder may put
/// an earlier holder's record on a current path) and spoiled sums (their values).
fn held(files: &[FileLog<'_>], key: Key, buckets: bool, active: bool, ask: &mut AskDays) -> Report {
    let mut out = Report::default();
    // Copy keys by a hash of (id, stamp); the records themselves settle a collision.
    let mut owners: HashMap<u64, usize, Fast> = HashMap::default();
    let mut collided: HashMap<(&[u8], &[u8]), usize> = HashMap::new();
    let mut models = ModelKeys::default();
    let mut owned: Vec<Owned<'_>> = Vec::new();
    for f in files {
        let mut recs = Records::new(f.log);
        models.file();
        while let Some(rec) = recs.next() {
            let on = f
                .on_path
                .as_ref()
                .is_some_and(|p| p.get(rec.seq as usize).copied().unwrap_or(false));
            if !rec.stamp.is_empty() {
                let h = copy_hash(&rec);
                match owners.get(&h) {
                    Some(&k) if owned[k].rec.id == rec.id && owned[k].rec.stamp == rec.stamp => {
                        owned[k].on |= on;
                        continue;
                    }
                    Some(_) => match collided.get(&(rec.id, rec.stamp)) {
                        Some(&k) => {
                            owned[k].on |= on;
                            continue;
                        }
                        None => {
                            collided.insert((rec.id, rec.stamp), owned.len());
                        }
                    },
                    None => {
                        owners.insert(h, owned.len());
                    }
                }
            }
            let k = match key {
                Key::Model => models.key(&recs, &rec, &mut out.models),
                Key::File => f.key,
                Key::None => 0,
            };
            owned.push(Owned { rec, key: k, on });
        }
        out.bad |= recs.bad;
    }
    let table = if buckets {
        day_table(
            owned
                .iter()
                .filter(|o| !active || o.on)
                .filter_map(|o| slice_of(o.rec.time)),
            ask,
        )
    } else {
        HashMap::default()
    };
    let mut index: HashMap<(u32, Bucket), usize, Fast> = HashMap::default();
    let mut groups: Vec<((u32, Bucket), Group)> = Vec::new();
    let mut member: Vec<usize> = vec![usize::MAX; owned.len()];
    for (i, o) in owned.iter().enumerate() {
        if active && !o.on {
            continue;
        }
        let r = &o.rec;
        let b = match (buckets, r.time, slice_of(r.time)) {
            (false, _, _) => Bucket::All,
            (true, None, _) => Bucket::NoTime,
            (true, Some(_), Some(n)) => day_of(n, &table),
            (true, Some(t), None) => {
                out.loose.push((o.key, t, r.numbers));
                continue;
            }
        };
        let g = *index.entry((o.key, b)).or_insert_with(|| {
            groups.push(((o.key, b), Group::default()));
            groups.len() - 1
        });
        member[i] = g;
        let group = &mut groups[g].1;
        group.records += 1;
        for (s, &n) in group.sums.iter_mut().zip(&r.numbers) {
            s.add(n);
        }
    }
    // A sum that met a value or a partial that is not finite: its values instead.
    if groups.iter().any(|g| g.1.sums.iter().any(|s| s.spoiled)) {
        for (i, o) in owned.iter().enumerate() {
            let Some((_, g)) = groups.get_mut(member[i]) else {
                continue;
            };
            for (s, &n) in g.sums.iter_mut().zip(&o.rec.numbers) {
                if s.spoiled {
                    s.values
                        .get_or_insert_with(Vec::new)
                        .push(if n == 0.0 { 0.0 } else { n });
                }
            }
        }
    }
    out.groups = groups;
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn summed(xs: &[f64]) -> Sum {
        let mut s = Sum::default();
        for &x in xs {
            s.add(x);
        }
        s
    }

    #[test]
    fn a_sum_rounds_once_as_fsum_does() {
        // 1e16 + 1 lies half-way between two doubles: the third partial breaks the tie.
        assert_eq!(summed(&[1e16, 1.0, 1e-10]).rounded(), Some(1e16 + 2.0));
        assert_eq!(summed(&[-1e16, -1.0, -1e-10]).rounded(), Some(-1e16 - 2.0));
        assert_eq!(summed(&[1e16, 1.0]).rounded(), Some(1e16));
        assert_eq!(summed(&[0.1; 10]).rounded(), Some(1.0));
        assert_eq!(summed(&[]).rounded(), Some(0.0));
        assert_eq!(summed(&[1e308, 1e308]).rounded(), None); // beyond the double range
        assert_eq!(summed(&[1e308, 1e308, -1e308]).rounded(), None); // a partial overflowed: spoiled
        assert_eq!(summed(&[f64::INFINITY]).rounded(), None);
    }

    /// (id, stamp, seq, time, model, numbers)
    pub(crate) type Rec<'a> = (&'a str, &'a str, u32, Option<f64>, &'a str, [f64; 6]);

    /// A log of records (provider `p`, kind 0).
    pub(crate) fn log(recs: &[Rec<'_>]) -> Vec<u8> {
        let mut w = LogWriter::default();
        for &(id, stamp, seq, time, model, numbers) in recs {
            w.push(&Record {
                id: id.as_bytes(),
                stamp: stamp.as_bytes(),
                seq,
                kind: 0,
                time,
                provider: b"p",
                model: model.as_bytes(),
                numbers,
            });
        }
        w.out
    }

    /// `log` as file `key`, without an entries record.
    fn file(log: &[u8], key: u32) -> FileLog<'_> {
        FileLog {
            log,
            key,
            on_path: None,
        }
    }

    fn total(s: &Sum) -> f64 {
        s.partials.iter().sum()
    }

    #[test]
    fn logs_read_back() {
        let mut a = log(&[
            (
                "x",
                "t",
                3,
                Some(-5.0),
                "m",
                [0.0, -0.0, 1.5, 2.0, 1e300, f64::NAN],
            ),
            ("y", "", 4, Some(0.25), "n", [1.0; 6]),
        ]);
        a.extend(log(&[("z", "u", 5, None, "n", [7.0; 6])]));
        let recs: Vec<_> = Records::new(&a).collect();
        assert_eq!(recs.len(), 3);
        assert_eq!(
            (recs[0].seq, recs[0].time, recs[0].model),
            (3, Some(-5.0), &b"m"[..])
        );
        assert_eq!(recs[0].numbers[..5], [0.0, 0.0, 1.5, 2.0, 1e300]);
        assert!(recs[0].numbers[5].is_nan());
        assert_eq!((recs[1].time, recs[1].model), (Some(0.25), &b"n"[..]));
        assert_eq!(
            (recs[2].id, recs[2].model, recs[2].time),
            (&b"z"[..], &b"n"[..], None)
        );
        let mut cut = Records::new(&a[..a.len() - 3]);
        assert_eq!(cut.by_ref().count(), 2);
        assert!(cut.bad);
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
        let files = [file(&a, 0), file(&b, 1)];
        let r = report(&files, Key::File, false, false, None);
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
        let mut p = s.partials.clone();
        p.sort_by(|a, b| a.abs().partial_cmp(&b.abs()).unwrap());
        assert!((p.iter().sum::<f64>() - 1.3).abs() < 1e-15);
        let a = log(&[
            ("a", "1", 0, None, "m", [1e308; 6]),
            ("b", "2", 1, None, "m", [1e308; 6]),
        ]);
        let r = report(&[file(&a, 0)], Key::None, false, false, None);
        assert_eq!(
            r.groups[0].1.sums[0].values.as_deref(),
            Some(&[1e308, 1e308][..])
        );
    }

    #[test]
    fn buckets_and_loose_times() {
        let a = log(&[
            ("a", "1", 0, Some(900_000.0), "m", [1.0; 6]),
            ("b", "2", 1, Some(1_799_999.0), "m", [1.0; 6]),
            ("c", "3", 2, Some(0.5), "m", [1.0; 6]),
            ("d", "4", 3, None, "m", [1.0; 6]),
        ]);
        let r = report(&[file(&a, 0)], Key::Model, true, false, None);
        let mut b: Vec<_> = r.groups.iter().map(|((_, b), g)| (*b, g.records)).collect();
        b.sort_by_key(|x| format!("{:?}", x.0));
        assert_eq!(b, vec![(Bucket::NoTime, 1), (Bucket::Slice(1), 2)]);
        assert_eq!(r.loose.len(), 1);
        assert_eq!(r.models, vec![(b"p".to_vec(), b"m".to_vec())]);
    }

    #[test]
    fn slices_of_a_day_with_an_offset_are_one_local_day() {
        // 23:45 and 00:15 UTC of 1970-01-01/02; day 1 at +1 h; day 0 with no one offset.
        let a = log(&[
            ("a", "1", 0, Some(85_500_000.0), "m", [1.0; 6]),
            ("b", "2", 1, Some(87_300_000.0), "m", [2.0; 6]),
            ("c", "3", 2, Some(170_000_000.0), "m", [4.0; 6]),
        ]);
        let files = [file(&a, 0)];
        let mut asked = Vec::new();
        let mut days = |d: &[i64]| {
            asked.extend_from_slice(d);
            vec![None, Some(DayOffset::One(3_600_000))]
        };
        let r = report(&files, Key::None, true, false, Some(&mut days));
        assert_eq!(asked, vec![0, 1]);
        let mut b: Vec<_> = r
            .groups
            .iter()
            .map(|((_, b), g)| (*b, g.records, total(&g.sums[0])))
            .collect();
        b.sort_by_key(|x| format!("{:?}", x.0));
        // 00:15 and 23:13 UTC of day 1 are local 01:15 and 00:13 of day 2.
        assert_eq!(
            b,
            vec![
                (Bucket::Day(1), 1, 2.0),
                (Bucket::Day(2), 1, 4.0),
                (Bucket::Slice(95), 1, 1.0)
            ]
        );
        // An offset that is not a whole number of slices leaves the slices.
        let mut odd = |d: &[i64]| vec![Some(DayOffset::One(7 * 60_000)); d.len()];
        let r = report(&files, Key::None, true, false, Some(&mut odd));
        assert!(r
            .groups
            .iter()
            .all(|((_, b), _)| matches!(b, Bucket::Slice(_))));
    }

    #[test]
    fn the_streamed_pass_equals_the_held_one() {
        // Copies across files (some with other models and numbers), records without a
        // copy key, several models, times over three UTC days and none.
        let mut logs = Vec::new();
        for f in 0..5u32 {
            let mut recs = Vec::new();
            for i in 0..60u32 {
                let id = format!("e{}", (i + 7 * f) % 90);
                let stamp = if i % 11 == 0 {
                    String::new()
                } else {
                    format!("t{}", (i + 7 * f) % 90)
                };
                let time = (i % 13 != 0).then(|| f64::from(i) * 3_700_000.0 + f64::from(f) * 1e7);
                let model = ["a", "b", "c"][(i % 3) as usize];
                let x = f64::from(i) * 0.1 + f64::from(f);
                recs.push((id, stamp, i, time, model, [x, 1.0, 0.5, -x, 2.0, x * 1e-3]));
            }
            let borrowed: Vec<Rec<'_>> = recs
                .iter()
                .map(|(id, st, i, t, m, n)| (id.as_str(), st.as_str(), *i, *t, *m, *n))
                .collect();
            logs.push(log(&borrowed));
        }
        let files: Vec<FileLog<'_>> = logs
            .iter()
            .enumerate()
            .map(|(i, l)| file(l, i as u32 % 3))
            .collect();
        let norm = |r: &Report| {
            let mut g: Vec<String> = r
                .groups
                .iter()
                .map(|((k, b), g)| {
                    let sums: Vec<f64> = g
                        .sums
                        .iter()
                        .map(|s| {
                            let mut p = s.partials.clone();
                            p.sort_by(|a, b| a.abs().partial_cmp(&b.abs()).unwrap());
                            p.iter().sum()
                        })
                        .collect();
                    format!("{k} {b:?} {} {sums:?}", g.records)
                })
                .collect();
            g.sort();
            (g, r.loose.clone(), r.models.clone())
        };
        for key in [Key::Model, Key::File, Key::None] {
            for buckets in [false, true] {
                // Day 1 unknown, day 2 of two offsets (the first half an hour ahead).
                let mut days = |d: &[i64]| {
                    d.iter()
                        .map(|&x| match x {
                            1 => None,
                            2 => Some(DayOffset::Slices(
                                (0..96)
                                    .map(|n| Some(if n < 48 { 3_600_000 } else { 0 }))
                                    .collect(),
                            )),
                            _ => Some(DayOffset::One(3_600_000 * x)),
                        })
                        .collect()
                };
                let a = streamed(&files, key, buckets, &mut days).unwrap();
                let b = held(&files, key, buckets, false, &mut days);
                assert_eq!(norm(&a), norm(&b), "{key:?} {buckets}");
                assert!(a.groups.iter().map(|g| g.1.records).sum::<u64>() > 100);
            }
        }
    }

    #[test]
    fn periods_are_named_as_iso_names_days_weeks_and_months() {
        let day = |y, m, d| crate::time::days_from_civil(y, m, d);
        for (d, daily, weekly, monthly) in [
            (day(1970, 1, 1), "1970-01-01", "1970-W01", "1970-01"),
            (day(2020, 12, 31), "2020-12-31", "2020-W53", "2020-12"),
            (day(2021, 1, 3), "2021-01-03", "2020-W53", "2021-01"),
            (day(2021, 1, 4), "2021-01-04", "2021-W01", "2021-01"),
            (day(2024, 12, 30), "2024-12-30", "2025-W01", "2024-12"),
            (day(2027, 1, 1), "2027-01-01", "2026-W53", "2027-01"),
            (day(999, 6, 1), "0999-06-01", "0999-W22", "0999-06"),
            (day(5, 1, 1), "0005-01-01", "0004-W53", "0005-01"),
        ] {
            assert_eq!(Period::Day.name(d), daily);
            assert_eq!(Period::Week.name(d), weekly, "{daily}");
            assert_eq!(Period::Month.name(d), monthly);
        }
    }
}
