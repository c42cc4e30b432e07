//! What a persisted index holds: every part of an [`Index`] but its file and what is
//! built again in O(n) from the rest (the id table, the child lists), written from an
//! index ([`encode`]) and read back into one ([`decode`]) with every number checked, so
//! that no file, however made, can make a later query read out of bounds or loop.
//!
//! On disk the columns that follow a pattern on Pi's files are kept as exceptions to
//! it: an entry starts one byte after the previous one ends (its `\n`), its parent is
//! the previous entry, its line the previous line plus one, its time the previous time
//! plus a 32-bit delta. What is left per entry is its length, kind, role, hash, time
//! delta and id: 22 bytes for a Pi entry (8-hex id), where the index holds ~49.

use std::sync::Arc;

use crate::col::{Col, Mapping};
use crate::index::Index;
use crate::issue::{Issue, IssueKind};
use crate::kind::{EntryKind, Role};
use crate::lines::FINGERPRINT;
use crate::persist::format::{self, Reader, Writer};
use crate::runs::{Lengths, Runs};
use crate::source::Stat;
use crate::tree::{self, NONE};
use crate::usage::{ModelKey, Total, UsageTotals};

/// The head: the file the index is of, its ends, and what a reader of a session's
/// summary wants without the columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// The session file as `fstat` showed it before and after the scan.
    pub(crate) stat: Stat,
    /// Bytes indexed (complete lines and an accepted last line).
    pub(crate) image_len: u64,
    /// The first and last `FINGERPRINT` bytes of `image_len` (`_filestate.indexed_ends`).
    pub(crate) fingerprint: Vec<u8>,
    /// Accepted entries.
    pub(crate) entries: u64,
    /// The header line's range.
    pub(crate) header: (u64, u64),
    /// The entry the leaf is on after the file (rule 13; `None`: before the first).
    pub(crate) leaf: Option<u64>,
}

/// Entries from which a reopen works out the starts on a second thread (a thread's
/// start, tens of microseconds, is more than the pass below this); the tests' sessions
/// take both ways.
#[cfg(not(test))]
const PARALLEL_STARTS: usize = 1 << 15;
#[cfg(test)]
const PARALLEL_STARTS: usize = 64;

/// Extra room a column read back gets: a few appends after a reopen must not move
/// every column (a copy of the whole index) for one entry.
fn headroom(n: usize) -> usize {
    n + n / 64 + 64
}

fn w_stat(w: &mut Writer, s: &Stat) {
    w.u64(s.dev);
    w.u64(s.ino);
    w.u64(s.generation);
    w.i128(s.birth_ns);
    w.u64(s.size);
    w.i128(s.mtime_ns);
    w.i128(s.ctime_ns);
}

fn r_stat(r: &mut Reader<'_>) -> Option<Stat> {
    Some(Stat {
        dev: r.u64()?,
        ino: r.u64()?,
        generation: r.u64()?,
        birth_ns: r.i128()?,
        size: r.u64()?,
        mtime_ns: r.i128()?,
        ctime_ns: r.i128()?,
    })
}

fn w_total(w: &mut Writer, t: Total) {
    match t {
        Total::Int(i) => {
            w.u8(0);
            w.i128(i);
        }
        Total::Float(x) => {
            w.u8(1);
            w.u64(x.to_bits());
        }
    }
}

fn r_total(r: &mut Reader<'_>) -> Option<Total> {
    match r.u8()? {
        0 => r.i128().map(Total::Int),
        1 => r.u64().map(|b| Total::Float(f64::from_bits(b))),
        _ => None,
    }
}

fn w_issue(w: &mut Writer, i: &Issue) {
    w.u8(i.kind as u8);
    w.opt_u64(i.line);
    w.opt_u64(i.offset);
    w.list(&i.ids, |w, id| w.bytes(id));
    w.opt_u64(i.n);
    w.opt_bytes(i.text.as_deref());
}

fn r_issue(r: &mut Reader<'_>) -> Option<Issue> {
    Some(Issue {
        kind: *IssueKind::ALL.get(usize::from(r.u8()?))?,
        line: r.opt_u64()?,
        offset: r.opt_u64()?,
        ids: r.list(8, |r| r.bytes().map(<[u8]>::to_vec))?,
        n: r.opt_u64()?,
        text: r.opt_bytes()?.map(<[u8]>::to_vec),
    })
}

/// `(entry, u64)` pairs.
fn w_pairs(w: &mut Writer, v: &[(u32, u64)]) {
    w.list(v, |w, &(e, x)| {
        w.u32(e);
        w.u64(x);
    });
}

fn r_pairs(r: &mut Reader<'_>) -> Option<Vec<(u32, u64)>> {
    r.list(12, |r| Some((r.u32()?, r.u64()?)))
}

/// The entries of a list of `(entry, ...)` ascend strictly and are below `n`.
fn ascending<T>(v: &[(u32, T)], n: usize) -> bool {
    v.windows(2).all(|p| p[0].0 < p[1].0) && v.last().is_none_or(|l| (l.0 as usize) < n)
}

fn le_bytes<'a, T: Copy + 'a, const N: usize>(
    v: impl IntoIterator<Item = &'a T>,
    f: impl Fn(T) -> [u8; N],
) -> Vec<u8> {
    let v = v.into_iter();
    let mut out = Vec::with_capacity(v.size_hint().0 * N);
    for &x in v {
        out.extend_from_slice(&f(x));
    }
    out
}

/// The persisted index of `ix`, whose file `stat` showed before and after it was read.
pub(crate) fn encode(ix: &Index, stat: &Stat, fingerprint: &[u8]) -> Vec<u8> {
    let n = ix.len();
    let mut h = Writer::default();
    w_stat(&mut h, stat);
    h.u64(ix.image_len);
    h.bytes(fingerprint);
    h.u64(n as u64);
    let header = ix.header.clone().unwrap_or(0..0);
    h.u64(header.start);
    h.u64(header.end);
    h.opt_u64(ix.leaf.map(u64::from));
    h.u64(ix.next_line);
    h.opt_u64(ix.mid_line);
    h.u32(ix.header_hash);
    match &ix.title {
        None => h.u8(0),
        Some(t) => {
            h.u8(1);
            h.u64(t.start);
            h.u64(t.end);
        }
    }
    let u = &ix.usage;
    for &t in &u.tokens {
        w_total(&mut h, t);
    }
    w_total(&mut h, u.cost);
    h.list(&u.models, |w, ((p, m), k)| {
        w.opt_bytes(p.as_deref());
        w.opt_bytes(m.as_deref());
        w.u64(*k);
    });
    h.u64(u.messages);
    h.bool(u.exact);
    h.opt_u64(ix.activity.map(f64::to_bits));
    let (slots, table_len, seed) = ix.table.parts(&ix.ids);
    h.u64(table_len as u64);
    h.u64(seed);
    let (width, ends, id_bytes) = ix.ids.parts();
    h.opt_u64(width.map(|w| w as u64));

    let lens = le_bytes(ix.lens.short.iter(), u16::to_le_bytes);
    let kr: Vec<u8> = ix
        .kinds
        .iter()
        .zip(ix.roles.iter())
        .map(|(&k, &r)| k as u8 | (r as u8) << 4)
        .collect();
    // Times: a 32-bit delta from the previous entry's, `i32::MIN` for one kept whole.
    let mut deltas = Vec::with_capacity(n * 4);
    let mut whole = Vec::new();
    let mut prev = 0i64;
    for (e, &t) in ix.ts.iter().enumerate() {
        let d = match i32::try_from(t.wrapping_sub(prev)) {
            Ok(d) if d != i32::MIN => d,
            _ => {
                whole.push((e as u32, t as u64));
                i32::MIN
            }
        };
        deltas.extend_from_slice(&d.to_le_bytes());
        prev = t;
    }
    let hashes = le_bytes(ix.hashes.iter(), u32::to_le_bytes);
    let table = le_bytes(&slots, u32::to_le_bytes);

    let mut b = Writer::default();
    w_pairs(&mut b, &ix.lens.long);
    // Starts: the exceptions to "one byte after the previous entry's end".
    let mut starts = Vec::new();
    let mut expect = 0u64;
    for (e, &s) in ix.start.iter().enumerate() {
        if s != expect {
            starts.push((e as u32, s));
        }
        expect = s
            .saturating_add(ix.lens.get(e).unwrap_or(0))
            .saturating_add(1);
    }
    w_pairs(&mut b, &starts);
    w_pairs(&mut b, ix.line_no.runs());
    w_pairs(&mut b, &whole);
    // Parents: the exceptions to "the previous entry".
    let parents: Vec<(u32, u64)> = ix
        .parent
        .iter()
        .enumerate()
        .filter(|&(e, &p)| p != (e as u32).wrapping_sub(1))
        .map(|(e, &p)| (e as u32, u64::from(p)))
        .collect();
    w_pairs(&mut b, &parents);
    b.list(ends, |w, &x| w.u64(x));
    w_pairs(&mut b, &ix.line_offs);
    b.list(&ix.unresolved, |w, (e, p)| {
        w.u32(*e);
        w.bytes(p);
    });
    b.list(&ix.broken, |w, &(e, p)| {
        w.u32(e);
        w.u32(p);
    });
    for named in [&ix.compactions, &ix.edits] {
        b.list(named, |w, (e, id)| {
            w.u32(*e);
            w.opt_bytes(id.as_deref());
        });
    }
    b.bool(ix.has_forward);
    for issues in [&ix.issues, &ix.post_issues, &ix.tail_issues] {
        b.list(issues, w_issue);
    }
    b.u32s(&ix.long_numbers);
    format::assemble(
        &h.buf,
        &[&lens, &kr, &deltas, &hashes, &id_bytes, &table, &b.buf],
    )
}

/// The head's facts, from the fields of a checked head ([`format::open`]).
pub(crate) fn decode_head(fields: &[u8]) -> Option<Head> {
    let mut r = Reader::new(fields);
    let stat = r_stat(&mut r)?;
    let image_len = r.u64()?;
    let fingerprint = r.bytes()?.to_vec();
    let entries = r.u64()?;
    let header = (r.u64()?, r.u64()?);
    let leaf = r.opt_u64()?;
    let fp = image_len.min(FINGERPRINT as u64) as usize * 2;
    let ok = image_len <= stat.size
        && fingerprint.len() == fp
        && header.0 <= header.1
        && header.1 <= image_len
        && leaf.is_none_or(|l| l < entries);
    ok.then_some(Head {
        stat,
        image_len,
        fingerprint,
        entries,
        header,
        leaf,
    })
}

/// Fill `ix` (an empty index over the file) from the persisted index mapped at `map`,
/// whose head is `opened` (checked, sections too); `None` (and `ix` in an unspecified
/// state) when it holds what no index holds. The widest columns (lengths, hashes, ids,
/// the id table) stay in the map (`col.rs`); the others are decoded.
pub(crate) fn decode(
    map: &Arc<Mapping>,
    opened: &format::Opened<'_>,
    ix: &mut Index,
) -> Option<Head> {
    let head = decode_head(opened.fields)?;
    let n = usize::try_from(head.entries).ok()?;
    if u32::try_from(n).is_err() || opened.sections.len() != 7 {
        return None;
    }
    let mut r = Reader::new(opened.fields);
    r_stat(&mut r)?;
    r.u64()?;
    r.bytes()?;
    r.u64()?;
    r.u64()?;
    r.u64()?;
    r.opt_u64()?;
    ix.next_line = r.u64()?;
    ix.mid_line = r.opt_u64()?;
    ix.header_hash = r.u32()?;
    ix.title = match r.u8()? {
        0 => None,
        1 => {
            let (a, b) = (r.u64()?, r.u64()?);
            if a > b || b > head.image_len {
                return None;
            }
            Some(a..b)
        }
        _ => return None,
    };
    let mut tokens = [Total::Int(0); 5];
    for t in &mut tokens {
        *t = r_total(&mut r)?;
    }
    let cost = r_total(&mut r)?;
    let models: Vec<(ModelKey, u64)> = r.list(3, |r| {
        let p = r.opt_bytes()?.map(<[u8]>::to_vec);
        let m = r.opt_bytes()?.map(<[u8]>::to_vec);
        Some(((p, m), r.u64()?))
    })?;
    let messages = r.u64()?;
    let exact = r.bool()?;
    ix.activity = r.opt_u64()?.map(f64::from_bits);
    let table_len = usize::try_from(r.u64()?).ok()?;
    let seed = r.u64()?;
    let width = r.opt_u64()?.map(usize::try_from).transpose().ok()?;
    if !r.done()
        || ix.next_line == 0
        || ix.mid_line.is_some_and(|m| m > head.image_len)
        || table_len != n
    {
        return None;
    }
    ix.usage = UsageTotals::from_parts(tokens, cost, models, messages, exact);
    ix.header = Some(head.header.0..head.header.1);
    ix.image_len = head.image_len;
    ix.leaf = head.leaf.map(|l| l as u32);

    let bytes = map.bytes();
    let sec = |k: usize| {
        let (o, l) = opened.sections[k];
        (o, l, &bytes[o..o + l])
    };
    let (lo, ll, _) = sec(0);
    let (_, _, kr) = sec(1);
    let (_, _, deltas) = sec(2);
    let (ho, hl, _) = sec(3);
    let (io, il, id_bytes) = sec(4);
    let (to, tl, _) = sec(5);
    let (_, _, sparse) = sec(6);
    if ll != 2 * n || kr.len() != n || deltas.len() != 4 * n || hl != 4 * n || tl % 4 != 0 {
        return None;
    }
    let mut r = Reader::new(sparse);
    let long = r_pairs(&mut r)?;
    let short = Col::<u16>::view(map, lo, n)?;
    let starts = r_pairs(&mut r)?;
    if !ascending(&long, n) || !ascending(&starts, n) {
        return None;
    }
    // The starts, the longest pass of a reopen, are worked out on a second thread while
    // this one decodes the other columns (a reopen of a 1 GiB session: 53% of its time
    // in this function).
    let room = headroom(n);
    let (short_ref, starts_ref, long_ref, image_len) = (&short, &starts, &long, head.image_len);
    let (start, parent) = std::thread::scope(|sc| {
        let worker = (n >= PARALLEL_STARTS)
            .then(|| sc.spawn(move || starts_of(short_ref, starts_ref, long_ref, image_len, room)));
        // The columns after the starts: line numbers, kinds, roles, times, the id
        // table and the lists; the parent column, checked acyclic.
        let rest = (|| -> Option<Vec<u32>> {
            ix.line_no = Runs::from_runs(r_pairs(&mut r)?, n as u32)?;
            let mut kinds = Vec::with_capacity(room);
            let mut roles = Vec::with_capacity(room);
            for &x in kr {
                kinds.push(EntryKind::from_code(x & 15)?);
                roles.push(Role::from_code(x >> 4)?);
            }
            ix.kinds = kinds;
            ix.roles = roles;
            let whole = r_pairs(&mut r)?;
            if !ascending(&whole, n) {
                return None;
            }
            let mut ts = Vec::with_capacity(room);
            let mut whole = whole.into_iter();
            let mut prev = 0i64;
            for (e, d) in deltas.chunks_exact(4).enumerate() {
                let d = i32::from_le_bytes([d[0], d[1], d[2], d[3]]);
                let t = if d == i32::MIN {
                    match whole.next() {
                        Some((x, t)) if x as usize == e => t as i64,
                        _ => return None,
                    }
                } else {
                    prev.wrapping_add(i64::from(d))
                };
                ts.push(t);
                prev = t;
            }
            if whole.next().is_some() {
                return None;
            }
            ix.ts = ts;
            let parents = r_pairs(&mut r)?;
            if !ascending(&parents, n) {
                return None;
            }
            let mut parent = Vec::with_capacity(room);
            parent.extend((0..n as u32).map(|e| e.wrapping_sub(1)));
            let mut backward = true;
            for &(e, p) in &parents {
                let p = u32::try_from(p).ok()?;
                if p != NONE && p as usize >= n {
                    return None;
                }
                backward &= p == NONE || p < e;
                parent[e as usize] = p;
            }
            ix.hashes = Col::<u32>::view(map, ho, n)?;
            let ends = r.list(8, |r| r.u64())?;
            if !crate::ids::IdArena::check_parts(n, width, &ends, id_bytes) {
                return None;
            }
            ix.ids = crate::ids::IdArena::from_parts(n, width, ends, Col::<u8>::view(map, io, il)?);
            ix.table =
                crate::ids::IdTable::from_parts(Col::<u32>::view(map, to, tl / 4)?, n, seed)?;
            ix.line_offs = r_pairs(&mut r)?;
            ix.unresolved = r.list(12, |r| Some((r.u32()?, r.bytes()?.to_vec())))?;
            ix.broken = r.list(8, |r| Some((r.u32()?, r.u32()?)))?;
            ix.compactions = r.list(5, |r| Some((r.u32()?, r.opt_bytes()?.map(<[u8]>::to_vec))))?;
            ix.edits = r.list(5, |r| Some((r.u32()?, r.opt_bytes()?.map(<[u8]>::to_vec))))?;
            ix.has_forward = r.bool()?;
            ix.issues = r.list(7, r_issue)?;
            ix.post_issues = r.list(7, r_issue)?;
            ix.tail_issues = r.list(7, r_issue)?;
            ix.long_numbers = r.u32s()?;
            if !r.done()
                || !ascending(&ix.line_offs, n)
                || !ascending(&ix.compactions, n)
                || !ascending(&ix.edits, n)
                || ix.unresolved.iter().any(|&(e, _)| e as usize >= n)
                || ix
                    .broken
                    .iter()
                    .any(|&(e, p)| e as usize >= n || (p != NONE && p as usize >= n))
                || !ix.long_numbers.windows(2).all(|p| p[0] < p[1])
                || ix.long_numbers.last().is_some_and(|&l| l as usize >= n)
            {
                return None;
            }
            // The parent column of an index has no cycle (rule 10 broke them): without forward
            // links every parent precedes its child.
            let acyclic = if ix.has_forward {
                tree::break_cycles(&mut parent.clone()).is_empty()
            } else {
                backward
            };
            if !acyclic {
                return None;
            }
            Some(parent)
        })();
        let start = match worker {
            Some(w) => w.join().ok().flatten(),
            None => starts_of(short_ref, starts_ref, long_ref, image_len, room),
        };
        (start, rest)
    });
    ix.lens = Lengths { short, long };
    ix.start = start?;
    ix.parent = parent?;
    Some(head)
}

/// Every entry's start from the lengths and the exceptions, each entry checked to lie
/// inside the image and every `u16::MAX` length matched with its long one, in one pass.
fn starts_of(
    short: &Col<u16>,
    starts: &[(u32, u64)],
    long: &[(u32, u64)],
    image_len: u64,
    room: usize,
) -> Option<Vec<u64>> {
    let mut start = Vec::with_capacity(room);
    let (mut starts, mut longs) = (starts.iter().peekable(), long.iter().peekable());
    let mut expect = 0u64;
    for (e, &l) in short.iter().enumerate() {
        let s = match starts.peek() {
            Some(&&(x, s)) if x as usize == e => {
                starts.next();
                s
            }
            _ => expect,
        };
        let len = match longs.peek() {
            Some(&&(x, len)) if x as usize == e && l == u16::MAX => {
                longs.next();
                len
            }
            _ if l == u16::MAX => return None,
            _ => u64::from(l),
        };
        let end = s.checked_add(len)?;
        if end > image_len {
            return None;
        }
        start.push(s);
        expect = end + 1;
    }
    if longs.next().is_some() {
        return None;
    }
    Some(start)
}
