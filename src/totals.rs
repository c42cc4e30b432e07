//! A file's usage totals: its usage log (`report`) summed by the keys reports group on,
//! so that a warm report reads a few groups per file, not a record per entry
//! (docs/CONTRACT.md §7; issue 25).
//!
//! A file's totals hold, summed exactly (`report::Sum`'s partials):
//!
//! * by `(provider, model)` pair and 15-minute slice of UTC (or no time), the records
//!   of the file (*all*) and those on its current path (*on*); records whose time is
//!   not bucketed (`report::slice_of`) one by one. Every day, week and month of a zone
//!   whose offsets are whole quarter hours is a union of slices (`+05:30` and `+05:45`
//!   too), and a session file or project is a union of files: every report's groups are
//!   unions of these.
//! * the copy key hashes of its records (`report::copy_hash`, its low 32 bits: a
//!   filter, not a key, so a short one only costs a few files read from their logs at
//!   20,000 sessions, and halves what a report reads): a report sums a file's
//!   totals only when no other file in scope holds one of its hashes, so no record of it
//!   is a copy of (or copied into) another; the files that share one are summed from
//!   their logs, record by record, under the copy rule ([`Warm`]). Equal hashes
//!   of different keys only send a file to that exact path.
//! * what the totals were taken over: the number of entries and a hash of the current
//!   path's entry numbers, so that an append adds its records to *on* when the path up
//!   to the old entries is the same ([`update`]).
//!
//! Inside one file, a copy key is counted once (the report's rule for one file): a log
//! whose new piece repeats a hash the totals hold is summed again from its start.
//! Totals whose sums leave the finite doubles are not kept (the report then reads the
//! file's log, which gives the values themselves).
//!
//! Layout: a version byte, the entry count (varint), the path hash (8 bytes), the
//! number of hashes and each (4 bytes, little-endian), the pairs (varint count, two byte
//! strings each), then *all*, then `1` if *on* is the same (one branch) or `0` and *on*:
//! each a varint count of groups, a group being the
//! pair's number, a bucket (`0` no time, `1` and a zigzag varint slice), the records and
//! six sums (a varint count of partials, each a number as the log writes one); then a
//! varint count of loose records (pair, time as 8 bytes, six numbers).

use std::collections::{HashMap, HashSet};

use crate::report::{
    self, bytes, copy_hash, varint, Bucket, DayOffsets, Fast, FileLog, Group, Key, Records, Report,
};

const VERSION: u8 = 1;
const SMALL: f64 = (1u64 << 52) as f64;

/// Groups by `(pair number, bucket)` and loose records `(pair, time, numbers)`.
#[derive(Clone, Debug, Default)]
struct Part {
    groups: Vec<((u32, Bucket), Group)>,
    loose: Vec<(u32, f64, [f64; 6])>,
}

impl Part {
    fn same(&self, other: &Part) -> bool {
        let bits =
            |n: &[f64; 6], m: &[f64; 6]| n.iter().zip(m).all(|(a, b)| a.to_bits() == b.to_bits());
        self.groups.len() == other.groups.len()
            && self.loose.len() == other.loose.len()
            && self
                .groups
                .iter()
                .zip(&other.groups)
                .all(|((k, g), (l, h))| {
                    k == l
                        && g.records == h.records
                        && g.sums.iter().zip(&h.sums).all(|(s, t)| {
                            s.partials.len() == t.partials.len()
                                && s.partials
                                    .iter()
                                    .zip(&t.partials)
                                    .all(|(a, b)| a.to_bits() == b.to_bits())
                        })
                })
            && self
                .loose
                .iter()
                .zip(&other.loose)
                .all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits() && bits(&a.2, &b.2))
    }
}

/// A file's totals, decoded.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    count: u32,
    path: u64,
    hashes: Vec<u32>,
    models: Vec<(Vec<u8>, Vec<u8>)>,
    /// `models`' numbers by pair (not written: [`Totals::model`] makes it).
    at: HashMap<(Vec<u8>, Vec<u8>), u32>,
    all: Part,
    on: Part,
}

fn number(out: &mut Vec<u8>, n: f64) {
    if n == 0.0 || (n > 0.0 && n < SMALL && n.fract() == 0.0) {
        varint(out, 2 * n as u64);
    } else {
        out.push(1);
        out.extend_from_slice(&n.to_le_bytes());
    }
}

/// A bucket as written: `0` no time, `1` and the slice's zigzag varint.
fn read_bucket(r: &mut Records<'_>) -> Option<Bucket> {
    match r.byte()? {
        0 => Some(Bucket::NoTime),
        1 => {
            let z = r.varint()?;
            Some(Bucket::Slice(((z >> 1) as i64) ^ -((z & 1) as i64)))
        }
        _ => None,
    }
}

fn read_number(r: &mut Records<'_>) -> Option<f64> {
    match r.varint()? {
        1 => r.f64(),
        v if v % 2 == 0 => Some((v / 2) as f64),
        _ => None,
    }
}

fn path_hash(path: &[u32]) -> u64 {
    let mut b = Vec::with_capacity(path.len() * 4);
    for s in path {
        b.extend_from_slice(&s.to_le_bytes());
    }
    twox_hash::XxHash3_64::oneshot(&b)
}

impl Totals {
    fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        varint(&mut out, u64::from(self.count));
        out.extend_from_slice(&self.path.to_le_bytes());
        varint(&mut out, self.hashes.len() as u64);
        for h in &self.hashes {
            out.extend_from_slice(&h.to_le_bytes());
        }
        varint(&mut out, self.models.len() as u64);
        for (p, m) in &self.models {
            bytes(&mut out, p);
            bytes(&mut out, m);
        }
        let same = self.on.same(&self.all);
        for part in [&self.all, &self.on] {
            if std::ptr::eq(part, &self.on) {
                // Most sessions are one branch: every record on the path.
                out.push(u8::from(same));
                if same {
                    break;
                }
            }
            varint(&mut out, part.groups.len() as u64);
            for ((k, b), g) in &part.groups {
                varint(&mut out, u64::from(*k));
                match b {
                    Bucket::Slice(n) => {
                        out.push(1);
                        varint(&mut out, ((n << 1) ^ (n >> 63)) as u64);
                    }
                    _ => out.push(0),
                }
                varint(&mut out, g.records);
                for s in &g.sums {
                    varint(&mut out, s.partials.len() as u64);
                    for &p in &s.partials {
                        number(&mut out, p);
                    }
                }
            }
            varint(&mut out, part.loose.len() as u64);
            for (k, t, nums) in &part.loose {
                varint(&mut out, u64::from(*k));
                out.extend_from_slice(&t.to_le_bytes());
                for &n in nums {
                    number(&mut out, n);
                }
            }
        }
        out
    }

    /// The hashes of `blob` (`None`: not totals this version writes).
    fn hashes(blob: &[u8]) -> Option<(Records<'_>, u64)> {
        let mut r = Records::new(blob);
        if r.byte()? != VERSION {
            return None;
        }
        r.varint()?;
        r.chunk(8)?;
        let n = r.varint()?;
        Some((r, n))
    }

    fn decode(blob: &[u8]) -> Option<Totals> {
        let mut r = Records::new(blob);
        if r.byte()? != VERSION {
            return None;
        }
        let count = u32::try_from(r.varint()?).ok()?;
        let path = u64::from_le_bytes(r.chunk(8)?.try_into().ok()?);
        let n = usize::try_from(r.varint()?).ok()?;
        let raw = r.chunk(n.checked_mul(4)?)?;
        let hashes = raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        let n = r.varint()?;
        let mut models = Vec::new();
        for _ in 0..n {
            let p = r.bytes()?.to_vec();
            let m = r.bytes()?.to_vec();
            models.push((p, m));
        }
        let mut parts = [Part::default(), Part::default()];
        let mut same = false;
        for (n, part) in parts.iter_mut().enumerate() {
            if n == 1 {
                same = match r.byte()? {
                    0 => false,
                    1 => true,
                    _ => return None,
                };
                if same {
                    break;
                }
            }
            for _ in 0..r.varint()? {
                let k = u32::try_from(r.varint()?).ok()?;
                if k as usize >= models.len() {
                    return None;
                }
                let b = read_bucket(&mut r)?;
                let mut g = Group {
                    records: r.varint()?,
                    ..Group::default()
                };
                for s in &mut g.sums {
                    for _ in 0..r.varint()? {
                        s.partials.push(read_number(&mut r)?);
                    }
                }
                part.groups.push(((k, b), g));
            }
            for _ in 0..r.varint()? {
                let k = u32::try_from(r.varint()?).ok()?;
                if k as usize >= models.len() {
                    return None;
                }
                let t = r.f64()?;
                let mut nums = [0.0; 6];
                for x in &mut nums {
                    *x = read_number(&mut r)?;
                }
                part.loose.push((k, t, nums));
            }
        }
        if r.byte().is_some() {
            return None;
        }
        let [all, mut on] = parts;
        if same {
            on = all.clone();
        }
        Some(Totals {
            count,
            path,
            hashes,
            models,
            at: HashMap::new(),
            all,
            on,
        })
    }

    /// A part from one report of a log, its pairs renumbered into `self.models`.
    fn absorb(&mut self, into_on: bool, r: &Report) {
        let map: Vec<u32> = r.models.iter().map(|m| self.model(m)).collect();
        let part = if into_on { &mut self.on } else { &mut self.all };
        let mut at: HashMap<(u32, Bucket), usize, Fast> = part
            .groups
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i))
            .collect();
        for ((k, b), g) in &r.groups {
            let k = (map[*k as usize], *b);
            match at.get(&k) {
                Some(&i) => part.groups[i].1.absorb(g),
                None => {
                    at.insert(k, part.groups.len());
                    part.groups.push((k, g.clone()));
                }
            }
        }
        part.loose
            .extend(r.loose.iter().map(|&(k, t, n)| (map[k as usize], t, n)));
    }

    fn model(&mut self, m: &(Vec<u8>, Vec<u8>)) -> u32 {
        // By a map of the pairs (made again when the pairs were read or changed without
        // it): a search of the list per pair was quadratic in a file's models.
        if self.at.len() != self.models.len() {
            self.at = self
                .models
                .iter()
                .enumerate()
                .map(|(i, p)| (p.clone(), i as u32))
                .collect();
        }
        if let Some(&i) = self.at.get(m) {
            return i;
        }
        self.models.push(m.clone());
        let i = (self.models.len() - 1) as u32;
        self.at.insert(m.clone(), i);
        i
    }

    fn spoiled(&self) -> bool {
        [&self.all, &self.on]
            .iter()
            .any(|p| p.groups.iter().any(|g| g.1.sums.iter().any(|s| s.spoiled)))
    }
}

type GroupFn<'f> = dyn FnMut(u32, Bucket, u64, &[Vec<f64>; 6]) + 'f;
type LooseFn<'f> = dyn FnMut(u32, f64, [f64; 6]) + 'f;

/// One part of totals from `r`: each group (pair, bucket, records, the six sums'
/// partials) and loose record to `emit`, or skipped (`None`). `None` when malformed.
fn read_part(
    r: &mut Records<'_>,
    pairs: u64,
    mut emit: Option<(&mut GroupFn<'_>, &mut LooseFn<'_>)>,
    scratch: &mut [Vec<f64>; 6],
) -> Option<()> {
    for _ in 0..r.varint()? {
        let k = u32::try_from(r.varint()?).ok()?;
        if u64::from(k) >= pairs {
            return None;
        }
        let b = read_bucket(r)?;
        let records = r.varint()?;
        for s in scratch.iter_mut() {
            s.clear();
            for _ in 0..r.varint()? {
                s.push(read_number(r)?);
            }
        }
        if let Some((group, _)) = emit.as_mut() {
            group(k, b, records, scratch);
        }
    }
    for _ in 0..r.varint()? {
        let k = u32::try_from(r.varint()?).ok()?;
        if u64::from(k) >= pairs {
            return None;
        }
        let t = r.f64()?;
        let mut nums = [0.0; 6];
        for x in &mut nums {
            *x = read_number(r)?;
        }
        if let Some((_, loose)) = emit.as_mut() {
            loose(k, t, nums);
        }
    }
    Some(())
}

/// Walk the totals `blob` without building them: its pairs to `pair` (in order: a
/// group's pair is its number), then the groups and loose records of *all* (or, with
/// `on`, of *on*). `None` when it is not totals this version writes.
fn visit<'a>(
    blob: &'a [u8],
    on: bool,
    pair: &mut dyn FnMut(&'a [u8], &'a [u8]),
    group: &mut GroupFn<'_>,
    loose: &mut LooseFn<'_>,
) -> Option<()> {
    let mut r = Records::new(blob);
    if r.byte()? != VERSION {
        return None;
    }
    r.varint()?;
    r.chunk(8)?;
    let n = usize::try_from(r.varint()?).ok()?;
    r.chunk(n.checked_mul(4)?)?;
    let pairs = r.varint()?;
    for _ in 0..pairs {
        let p = r.bytes()?;
        let m = r.bytes()?;
        pair(p, m);
    }
    let mut scratch: [Vec<f64>; 6] = Default::default();
    let all = r.rest;
    read_part(
        &mut r,
        pairs,
        (!on).then_some((&mut *group, &mut *loose)),
        &mut scratch,
    )?;
    let same = match r.byte()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    if same {
        if on {
            let mut again = Records::new(all);
            read_part(&mut again, pairs, Some((group, loose)), &mut scratch)?;
        }
        return r.byte().is_none().then_some(());
    }
    read_part(&mut r, pairs, on.then_some((group, loose)), &mut scratch)?;
    r.byte().is_none().then_some(())
}

/// The sums of one log (as one file) by pair and slice; with `on`, only its records on
/// that path. `None` when a sum is not finite or the log is malformed.
fn sums_of(log: &[u8], on: Option<&[bool]>) -> Option<Report> {
    let f = FileLog {
        log,
        key: 0,
        on_path: on.map(<[bool]>::to_vec),
    };
    let mut none = |d: &[i64]| vec![None; d.len()];
    let r = report::report(&[f], Key::Model, true, on.is_some(), Some(&mut none));
    let values = r
        .groups
        .iter()
        .any(|g| g.1.sums.iter().any(|s| s.values.is_some()));
    (!r.bad && !values).then_some(r)
}

/// The copy key hashes of a log's stamped records, each once.
fn log_hashes(log: &[u8]) -> Option<Vec<u32>> {
    let mut recs = Records::new(log);
    let mut seen: HashSet<u32, Fast> = HashSet::default();
    let mut out = Vec::new();
    for rec in recs.by_ref() {
        if !rec.stamp.is_empty() {
            let h = copy_hash(&rec) as u32;
            if seen.insert(h) {
                out.push(h);
            }
        }
    }
    (!recs.bad).then_some(out)
}

fn on_path(path: &[u32]) -> Vec<bool> {
    let n = path.iter().max().map_or(0, |&m| m as usize + 1);
    let mut on = vec![false; n];
    for &s in path {
        on[s as usize] = true;
    }
    on
}

/// The totals of a whole log, whose file's entries record is `entries` (`count`
/// entries).
fn whole(log: &[u8], path: &[u32], count: u32) -> Option<Totals> {
    let mut t = Totals {
        count,
        path: path_hash(path),
        hashes: log_hashes(log)?,
        ..Totals::default()
    };
    t.absorb(false, &sums_of(log, None)?);
    t.absorb(true, &sums_of(log, Some(&on_path(path)))?);
    (!t.spoiled()).then_some(t)
}

/// A file's totals after its usage log grew by `piece`: `old` (its totals before, if
/// kept) with `piece`'s records added, or taken again from the whole `log` (`old` then
/// `piece`) when `old` is missing or unreadable, `piece` repeats a copy key hash, or
/// the current path up to the old entries changed. `entries` is the file's entries
/// record now (`count` entries). `None`: totals are not kept (a sum not finite, a
/// malformed log).
pub fn update(
    old: Option<&[u8]>,
    piece: &[u8],
    log: &[u8],
    entries: &[u8],
    count: u32,
) -> Option<Vec<u8>> {
    let path = crate::entries_path(entries);
    let grown = old.and_then(Totals::decode).and_then(|mut t| {
        let before: Vec<u32> = path.iter().copied().filter(|&s| s < t.count).collect();
        if path_hash(&before) != t.path || count < t.count {
            return None;
        }
        let mut held: HashSet<u32, Fast> = t.hashes.iter().copied().collect();
        let new = log_hashes(piece)?;
        if !new.iter().all(|h| held.insert(*h)) {
            return None;
        }
        t.hashes.extend(new);
        t.absorb(false, &sums_of(piece, None)?);
        t.absorb(true, &sums_of(piece, Some(&on_path(&path)))?);
        t.count = count;
        t.path = path_hash(&path);
        (!t.spoiled()).then_some(t)
    });
    grown
        .or_else(|| whole(log, &path, count))
        .map(|t| t.encode())
}

/// A warm report from the catalog's totals, fed one file at a time so that what it holds
/// does not grow with the files (issue 25): each file's totals are added to the report
/// as they are read, and only their copy key hashes (4 bytes a record) are kept to find,
/// at the end, the files that share one with another file in scope ([`Warm::involved`]).
/// Those, and the files without readable totals, are then summed from their logs under
/// the copy rule ([`Warm::finish`]), after their totals are taken out again: the sums
/// are exact (`report::Sum`'s partials), so adding a file's totals and its totals
/// negated leaves every sum as it was.
pub struct Warm {
    key: Key,
    buckets: bool,
    active: bool,
    models: HashMap<(Vec<u8>, Vec<u8>), u32>,
    out_models: Vec<(Vec<u8>, Vec<u8>)>,
    index: HashMap<(u32, Bucket), usize, Fast>,
    groups: Vec<((u32, Bucket), Group)>,
    /// Loose records with the file they came from.
    loose: Vec<(u32, f64, [f64; 6], u32)>,
    /// Every summed file's copy key hashes, file after file (`ends[f]`: where file
    /// `f`'s end, a file without totals holding none).
    hashes: Vec<u32>,
    ends: Vec<u32>,
    /// Per file: the hash of the totals summed, or `None` (to be read from its log).
    summed: Vec<Option<u64>>,
    /// The copy key hashes of files without totals, from their logs ([`Warm::log_hashes`]).
    late: Vec<(u32, Vec<u32>)>,
    /// A file's totals did not read: the report cannot come from the totals.
    broken: bool,
}

/// Add (or, `negate`, take out) one group of `records` and `partials` at `(k, b)`.
#[allow(clippy::too_many_arguments)]
fn put(
    index: &mut HashMap<(u32, Bucket), usize, Fast>,
    groups: &mut Vec<((u32, Bucket), Group)>,
    buckets: bool,
    k: u32,
    b: Bucket,
    records: u64,
    partials: &[Vec<f64>; 6],
    negate: bool,
) -> bool {
    let b = if buckets { b } else { Bucket::All };
    let i = match index.get(&(k, b)) {
        Some(&i) => i,
        None if negate => return false,
        None => {
            index.insert((k, b), groups.len());
            groups.push(((k, b), Group::default()));
            groups.len() - 1
        }
    };
    let g = &mut groups[i].1;
    if negate {
        match g.records.checked_sub(records) {
            Some(r) => g.records = r,
            None => return false,
        }
    } else {
        g.records += records;
    }
    for (s, p) in g.sums.iter_mut().zip(partials) {
        for &x in p {
            s.add(if negate { -x } else { x });
        }
    }
    true
}

/// One file of [`Warm::finish`]: a file [`Warm::involved`] named, with its totals as
/// the catalog holds them (those [`Warm::add`] was given), its usage log and, for an
/// `active` report, its entries record's current path.
pub struct LogFile<'a> {
    pub file: u32,
    pub totals: Option<&'a [u8]>,
    pub log: FileLog<'a>,
}

impl Warm {
    /// A report keyed by `key`; with `buckets`, by slice too; with `active`, of the
    /// records on the current paths.
    pub fn new(key: Key, buckets: bool, active: bool) -> Warm {
        Warm {
            key,
            buckets,
            active,
            models: HashMap::new(),
            out_models: Vec::new(),
            index: HashMap::default(),
            groups: Vec::new(),
            loose: Vec::new(),
            hashes: Vec::new(),
            ends: Vec::new(),
            summed: Vec::new(),
            late: Vec::new(),
            broken: false,
        }
    }

    /// The files added without readable totals: their copy key hashes are only in their
    /// logs, which [`Warm::log_hashes`] must be given before [`Warm::involved`].
    pub fn untotalled(&self) -> Vec<u32> {
        self.summed
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.is_none().then_some(i as u32))
            .collect()
    }

    /// The copy key hashes of `file`, added without totals, read from its usage `log`,
    /// so that a file sharing one goes to its log too (adversary round 51: the other
    /// file's totals were summed whole, and the copy counted twice). A log that does not
    /// read leaves the report to the logs.
    pub fn log_hashes(&mut self, file: u32, log: &[u8]) {
        match log_hashes(log) {
            Some(h) if self.summed.get(file as usize) == Some(&None) => self.late.push((file, h)),
            _ => self.broken = true,
        }
    }

    /// Files added so far.
    pub fn files(&self) -> u32 {
        self.summed.len() as u32
    }

    /// Add the next file (its number: [`Warm::files`] before the call), `key` its
    /// report key for [`Key::File`], by its `totals`: summed now, or (none, or not
    /// readable) left to its log.
    pub fn add(&mut self, key: u32, totals: Option<&[u8]>) {
        let file = self.summed.len() as u32;
        let hashes = totals.and_then(|t| {
            let (mut r, n) = Totals::hashes(t)?;
            r.chunk(usize::try_from(n).ok()?.checked_mul(4)?)
        });
        let (Some(t), Some(raw)) = (totals, hashes) else {
            self.summed.push(None);
            self.ends.push(self.hashes.len() as u32);
            return;
        };
        self.summed.push(Some(twox_hash::XxHash3_64::oneshot(t)));
        self.hashes.extend(
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default())),
        );
        self.ends.push(self.hashes.len() as u32);
        if !self.visit(file, key, t, false) {
            self.broken = true;
        }
    }

    /// Sum (or take out) one file's totals.
    fn visit(&mut self, file: u32, key: u32, totals: &[u8], negate: bool) -> bool {
        let Warm {
            key: by,
            buckets,
            active,
            models,
            out_models,
            index,
            groups,
            loose,
            ..
        } = self;
        let (by, buckets) = (*by, *buckets);
        let map: std::cell::RefCell<Vec<u32>> = Default::default();
        let mut ok = true;
        let read = visit(
            totals,
            *active,
            &mut |p, m| {
                map.borrow_mut().push(match by {
                    Key::Model => {
                        let n = models.len() as u32;
                        *models.entry((p.to_vec(), m.to_vec())).or_insert_with(|| {
                            out_models.push((p.to_vec(), m.to_vec()));
                            n
                        })
                    }
                    Key::File => key,
                    Key::None => 0,
                })
            },
            &mut |k, b, records, partials| {
                let k = map.borrow()[k as usize];
                ok &= put(index, groups, buckets, k, b, records, partials, negate);
            },
            &mut |k, time, n| {
                if !negate {
                    loose.push((map.borrow()[k as usize], time, n, file));
                }
            },
        );
        read.is_some() && ok
    }

    /// The files to sum from their logs, in order: those without readable totals and
    /// those holding a copy key hash another file holds. Equal hashes of different keys
    /// only send a file to that exact path.
    ///
    /// Two bitmaps of the hashes' low bits (seen, seen again) leave the few hashes that
    /// may repeat, which a table then settles: 4 bytes a record held (3.2 MB for
    /// 807,000 records) and two bitmaps, where a table of every hash and its file took
    /// 13 MB and 20 ms (docs/BENCHMARKS.md, issue 25).
    pub fn involved(&mut self) -> Vec<u32> {
        let hashes = std::mem::take(&mut self.hashes);
        let late = std::mem::take(&mut self.late);
        let mut out: Vec<bool> = self.summed.iter().map(Option::is_none).collect();
        // Every file's hashes: those of its totals, in `hashes` by `ends`, then those of
        // the files without totals, from their logs.
        let ends = &self.ends;
        let each = |visit: &mut dyn FnMut(usize, u32)| {
            let mut start = 0usize;
            for (f, &end) in ends.iter().enumerate() {
                for &h in &hashes[start..end as usize] {
                    visit(f, h);
                }
                start = end as usize;
            }
            for (f, hs) in &late {
                for &h in hs {
                    visit(*f as usize, h);
                }
            }
        };
        let count = hashes.len() + late.iter().map(|l| l.1.len()).sum::<usize>();
        // 8–16 bits per hash (at most 2^27: 16 MiB a map): about 1 in 8 of the hashes
        // falls on a bit another set, and only those go into the table.
        let bits = (count.max(1) * 8).next_power_of_two().clamp(64, 1 << 27);
        let mask = bits as u32 - 1;
        let mut seen = vec![0u64; bits / 64];
        let mut again = vec![0u64; bits / 64];
        each(&mut |_, h| {
            let b = (h & mask) as usize;
            let (w, m) = (b / 64, 1u64 << (b % 64));
            if seen[w] & m != 0 {
                again[w] |= m;
            }
            seen[w] |= m;
        });
        drop(seen);
        let mut first: HashMap<u32, u32, Fast> = HashMap::default();
        each(&mut |f, h| {
            let b = (h & mask) as usize;
            if again[b / 64] & (1u64 << (b % 64)) == 0 {
                return;
            }
            // A file lists each of its hashes once: another file holds this one.
            let held = *first.entry(h).or_insert(f as u32);
            if held as usize != f {
                out[f] = true;
                out[held as usize] = true;
            }
        });
        out.iter()
            .enumerate()
            .filter_map(|(i, &x)| x.then_some(i as u32))
            .collect()
    }

    /// The report: the files [`Warm::involved`] named (oldest holder first) taken out of
    /// the totals and summed from their logs, the rest as added. `None` when the totals
    /// cannot answer: some did not read, a file's totals are not those added, a sum is
    /// not finite (the logs give the values themselves).
    pub fn finish(mut self, files: &[LogFile<'_>], days: Option<DayOffsets<'_>>) -> Option<Report> {
        if self.broken {
            return None;
        }
        let mut out_of_totals: HashSet<u32, Fast> = HashSet::default();
        for f in files {
            let held = *self.summed.get(f.file as usize)?;
            match (held, f.totals) {
                (None, _) => {}
                (Some(h), Some(t)) if twox_hash::XxHash3_64::oneshot(t) == h => {
                    if !self.visit(f.file, f.log.key, t, true) {
                        return None;
                    }
                    out_of_totals.insert(f.file);
                }
                _ => return None,
            }
        }
        let (key, buckets, active) = (self.key, self.buckets, self.active);
        let Warm {
            models,
            out_models,
            index,
            groups,
            loose,
            ..
        } = &mut self;
        groups.retain(|g| g.1.records > 0);
        index.clear();
        for (i, g) in groups.iter().enumerate() {
            index.insert(g.0, i);
        }
        let mut out = Report {
            loose: loose
                .iter()
                .filter(|l| !out_of_totals.contains(&l.3))
                .map(|&(k, t, n, _)| (k, t, n))
                .collect(),
            ..Report::default()
        };
        if !files.is_empty() {
            let logs: Vec<FileLog<'_>> = files
                .iter()
                .map(|f| FileLog {
                    log: f.log.log,
                    key: f.log.key,
                    on_path: f.log.on_path.clone(),
                })
                .collect();
            let mut none = |d: &[i64]| vec![None; d.len()];
            let r = report::report(&logs, key, true, active, Some(&mut none));
            if r.groups
                .iter()
                .any(|g| g.1.sums.iter().any(|s| s.values.is_some()))
            {
                return None;
            }
            out.bad = r.bad;
            let map: Vec<u32> = r
                .models
                .iter()
                .map(|m| {
                    let n = models.len() as u32;
                    *models.entry(m.clone()).or_insert_with(|| {
                        out_models.push(m.clone());
                        n
                    })
                })
                .collect();
            let k_of = |k: u32| {
                if key == Key::Model {
                    map[k as usize]
                } else {
                    k
                }
            };
            for ((k, b), g) in &r.groups {
                let partials: [Vec<f64>; 6] = std::array::from_fn(|i| g.sums[i].partials.to_vec());
                put(
                    index,
                    groups,
                    buckets,
                    k_of(*k),
                    *b,
                    g.records,
                    &partials,
                    false,
                );
            }
            for &(k, t, n) in &r.loose {
                out.loose.push((k_of(k), t, n));
            }
        }
        let mut groups = std::mem::take(groups);
        out.models = std::mem::take(out_models);
        let spoiled =
            |g: &[((u32, Bucket), Group)]| g.iter().any(|g| g.1.sums.iter().any(|s| s.spoiled));
        if spoiled(&groups) {
            return None;
        }
        if !buckets {
            // The loose records' times are not asked for: they join their key's group.
            for (k, _t, n) in std::mem::take(&mut out.loose) {
                let partials: [Vec<f64>; 6] = std::array::from_fn(|i| vec![n[i]]);
                put(
                    index,
                    &mut groups,
                    false,
                    k,
                    Bucket::All,
                    1,
                    &partials,
                    false,
                );
            }
        } else if let Some(ask) = days {
            groups = report::slices_into_days(groups, ask);
        }
        if spoiled(&groups) {
            return None;
        }
        out.groups = groups;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(id, stamp, seq, time, model, input)`
    type Rec<'a> = (&'a str, &'a str, u32, Option<f64>, &'a str, f64);

    /// A log of records, the numbers made from `input`.
    fn log(recs: &[Rec<'_>]) -> Vec<u8> {
        let full: Vec<crate::report::tests::Rec<'_>> = recs
            .iter()
            .map(|&(id, stamp, seq, time, model, x)| {
                (
                    id,
                    stamp,
                    seq,
                    time,
                    model,
                    [x, 1.0, 0.0, 0.0, x + 1.0, x * 0.1],
                )
            })
            .collect();
        crate::report::tests::log(&full)
    }

    /// The groups of one part, as sorted text (partials summed, in magnitude order).
    fn norm(blob: &[u8], on: bool) -> Vec<String> {
        let mut pairs = Vec::new();
        let mut out = Vec::new();
        let mut loose = Vec::new();
        visit(
            blob,
            on,
            &mut |p, m| pairs.push((p.to_vec(), m.to_vec())),
            &mut |k, b, records, sums| {
                let s: Vec<f64> = sums.iter().map(|p| p.iter().sum()).collect();
                out.push(format!("{k} {b:?} {records} {s:?}"));
            },
            &mut |k, t, n| loose.push(format!("{k} loose {t} {n:?}")),
        )
        .unwrap();
        out.extend(loose);
        let mut named: Vec<String> = out
            .into_iter()
            .map(|g| {
                let (k, rest) = g.split_once(' ').unwrap();
                format!("{:?} {rest}", pairs[k.parse::<usize>().unwrap()])
            })
            .collect();
        named.sort();
        named
    }

    /// An entries record (`listing`'s layout): `(id, parent)` per entry, none a leaf
    /// move (a length and the id; a length and the parent, or `u32::MAX` for none;
    /// `u32::MAX`: not a move).
    fn entries(ids: &[(&str, Option<&str>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (id, parent) in ids {
            out.extend_from_slice(&(id.len() as u32).to_le_bytes());
            out.extend_from_slice(id.as_bytes());
            match parent {
                Some(p) => {
                    out.extend_from_slice(&(p.len() as u32).to_le_bytes());
                    out.extend_from_slice(p.as_bytes());
                }
                None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
            }
            out.extend_from_slice(&u32::MAX.to_le_bytes());
        }
        out
    }

    #[test]
    fn grown_totals_equal_the_whole_log_s() {
        let a = log(&[
            ("e0", "t0", 0, Some(0.0), "m", 1.0),
            ("e1", "t1", 1, Some(1_000_000.0), "n", 2.0),
            ("e2", "", 2, Some(0.5), "m", 3.0),
        ]);
        let b = log(&[
            ("e3", "t3", 3, Some(2_000_000.0), "m", 4.0),
            ("e4", "t4", 4, None, "o", 5.0),
        ]);
        let whole: Vec<u8> = [a.clone(), b.clone()].concat();
        // e3 and e4 are both children of e2: e4 is the leaf, e3 is off the path.
        let first = entries(&[("e0", None), ("e1", Some("e0")), ("e2", Some("e1"))]);
        let now = entries(&[
            ("e0", None),
            ("e1", Some("e0")),
            ("e2", Some("e1")),
            ("e3", Some("e2")),
            ("e4", Some("e2")),
        ]);
        let old = update(None, &a, &a, &first, 3).unwrap();
        let grown = update(Some(&old), &b, &whole, &now, 5).unwrap();
        let fresh = update(None, &whole, &whole, &now, 5).unwrap();
        for on in [false, true] {
            assert_eq!(norm(&grown, on), norm(&fresh, on), "on {on}");
        }
        assert_ne!(norm(&grown, false), norm(&grown, true));
        // A piece repeating a copy key is summed again from the whole log.
        let again = log(&[("e0", "t0", 5, Some(0.0), "m", 9.0)]);
        let whole2: Vec<u8> = [whole.clone(), again.clone()].concat();
        let grown2 = update(Some(&grown), &again, &whole2, &now, 5).unwrap();
        let fresh2 = update(None, &whole2, &whole2, &now, 5).unwrap();
        assert_eq!(norm(&grown2, false), norm(&fresh2, false));
    }

    fn warm_of(t: &[Option<&[u8]>]) -> Warm {
        let mut w = Warm::new(Key::Model, false, false);
        for (i, x) in t.iter().enumerate() {
            w.add(i as u32, *x);
        }
        w
    }

    #[test]
    fn files_sharing_a_hash_are_involved() {
        let a = log(&[("x", "t", 0, Some(0.0), "m", 1.0)]);
        let b = log(&[
            ("y", "u", 0, Some(0.0), "m", 1.0),
            ("x", "t", 1, Some(0.0), "m", 2.0),
        ]);
        let c = log(&[("z", "v", 0, Some(0.0), "m", 1.0)]);
        let e = entries(&[("x", None)]);
        let t: Vec<Vec<u8>> = [&a, &b, &c]
            .iter()
            .map(|l| update(None, l, l, &e, 1).unwrap())
            .collect();
        let refs: Vec<Option<&[u8]>> =
            vec![Some(&t[0]), Some(&t[1]), Some(&t[2]), None, Some(b"\x07")];
        assert_eq!(warm_of(&refs).involved(), vec![0, 1, 3, 4]);
    }

    /// Each model's records and sums (partials summed), sorted.
    fn by_model(r: &Report) -> Vec<String> {
        let mut out: Vec<String> = r
            .groups
            .iter()
            .map(|((k, _), g)| {
                let s: Vec<f64> = g.sums.iter().map(|s| s.partials.iter().sum()).collect();
                let (p, m) = &r.models[*k as usize];
                let name = format!(
                    "{}/{}",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(m)
                );
                format!("{name} {} {s:?}", g.records)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_involved_files_taken_out_and_summed_from_their_logs_give_the_logs_report() {
        // a and b share a copy (x/t); b's copy has other numbers: the first holder's count.
        let a = log(&[
            ("x", "t", 0, Some(0.0), "m", 1.0),
            ("a1", "ta", 1, None, "only-a", 4.0),
        ]);
        let b = log(&[
            ("y", "u", 0, Some(0.0), "n", 1.0),
            ("x", "t", 1, Some(0.0), "m", 2.0),
        ]);
        let c = log(&[("z", "v", 0, Some(0.0), "m", 1.0)]);
        let e = entries(&[("x", None)]);
        let logs = [&a, &b, &c];
        let t: Vec<Vec<u8>> = logs
            .iter()
            .map(|l| update(None, l, l, &e, 1).unwrap())
            .collect();
        let mut w = warm_of(&[Some(&t[0]), Some(&t[1]), Some(&t[2])]);
        let need = w.involved();
        assert_eq!(need, vec![0, 1]);
        let files: Vec<LogFile<'_>> = need
            .iter()
            .map(|&i| LogFile {
                file: i,
                totals: Some(&t[i as usize]),
                log: FileLog {
                    log: logs[i as usize],
                    key: i,
                    on_path: None,
                },
            })
            .collect();
        let got = w.finish(&files, None).unwrap();
        let all: Vec<FileLog<'_>> = logs
            .iter()
            .enumerate()
            .map(|(i, l)| FileLog {
                log: l,
                key: i as u32,
                on_path: None,
            })
            .collect();
        let want = report::report(&all, Key::Model, false, false, None);
        assert_eq!(by_model(&got), by_model(&want));
        assert!(by_model(&got).iter().any(|g| g.contains("only-a")));
        // Totals that are not the ones added: no answer.
        let mut w = warm_of(&[Some(&t[0]), Some(&t[1]), Some(&t[2])]);
        w.involved();
        let swapped = [LogFile {
            file: 0,
            totals: Some(&t[1]),
            log: FileLog {
                log: &a,
                key: 0,
                on_path: None,
            },
        }];
        assert!(w.finish(&swapped, None).is_none());
    }
}
