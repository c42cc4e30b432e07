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

/// Extra room a column read back gets: a few appends after a reopen must not move
/// every column (a copy of the whole index) for one entry.
fn headroom(n: usize) -> usize {
    n + n / 64 + 64
}

fn w_stat(w: &mut Writer, s: &Stat) {
    w.u64(s.dev);
    w.u64(s.ino);
    w.u64(s.size);
    w.i128(s.mtime_ns);
    w.i128(s.ctime_ns);
}

fn r_stat(r: &mut Reader<'_>) -> Option<Stat> {
    Some(Stat {
        dev: r.u64()?,
        ino: r.u64()?,
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

    let mut b = Writer::default();
    b.buf.reserve(n * 24);
    b.u32s(&ix.lens.short);
    w_pairs(&mut b, &ix.lens.long);
    // Starts: the exceptions to "one byte after the previous entry's end".
    let mut starts = Vec::new();
    let mut expect = 0u64;
    for (e, &s) in ix.start.iter().enumerate() {
        if s != expect {
            starts.push((e as u32, s));
        }
        let len = ix.lens.get(e).unwrap_or(0);
        expect = s.saturating_add(len).saturating_add(1);
    }
    w_pairs(&mut b, &starts);
    w_pairs(&mut b, ix.line_no.runs());
    b.bytes(&ix.kinds.iter().map(|&k| k as u8).collect::<Vec<_>>());
    b.bytes(&ix.roles.iter().map(|&r| r as u8).collect::<Vec<_>>());
    // Times: a 32-bit delta from the previous entry's, `i32::MIN` for one kept whole.
    let mut deltas = Vec::with_capacity(n);
    let mut whole = Vec::new();
    let mut prev = 0i64;
    for (e, &t) in ix.ts.iter().enumerate() {
        match i32::try_from(t.wrapping_sub(prev)) {
            Ok(d) if d != i32::MIN => deltas.push(d as u32),
            _ => {
                deltas.push(i32::MIN as u32);
                whole.push((e as u32, t as u64));
            }
        }
        prev = t;
    }
    b.u32s(&deltas);
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
    b.u32s(&ix.hashes);
    let (width, ends, bytes) = ix.ids.parts();
    b.opt_u64(width.map(|w| w as u64));
    b.list(ends, |w, &x| w.u64(x));
    b.bytes(bytes);
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
    format::join(&h.buf, &b.buf)
}

/// The head's facts (a checked head, [`format::head`]).
pub(crate) fn decode_head(head: &[u8]) -> Option<Head> {
    let mut r = Reader::new(head);
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

/// Fill `ix` (an empty index over the file) from a checked head and body; `None` (and
/// `ix` in an unspecified state) when they hold what no index holds.
pub(crate) fn decode(head_bytes: &[u8], body: &[u8], ix: &mut Index) -> Option<Head> {
    let head = decode_head(head_bytes)?;
    let n = usize::try_from(head.entries).ok()?;
    if u32::try_from(n).is_err() {
        return None;
    }
    let mut r = Reader::new(head_bytes);
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
    if !r.done() || ix.next_line == 0 || ix.mid_line.is_some_and(|m| m > head.image_len) {
        return None;
    }
    ix.usage = UsageTotals::from_parts(tokens, cost, models, messages, exact);
    ix.header = Some(head.header.0..head.header.1);
    ix.image_len = head.image_len;
    ix.leaf = head.leaf.map(|l| l as u32);

    let mut r = Reader::new(body);
    let room = headroom(n);
    let mut short = Vec::with_capacity(room);
    short.extend(r.u32s()?);
    let long = r_pairs(&mut r)?;
    if short.len() != n
        || !ascending(&long, n)
        || long.iter().any(|&(e, _)| short[e as usize] != u32::MAX)
        || short.iter().filter(|&&l| l == u32::MAX).count() != long.len()
    {
        return None;
    }
    ix.lens = Lengths { short, long };
    let starts = r_pairs(&mut r)?;
    if !ascending(&starts, n) {
        return None;
    }
    let mut start = Vec::with_capacity(room);
    let mut next = starts.iter().peekable();
    let mut expect = 0u64;
    for e in 0..n {
        let s = match next.peek() {
            Some(&&(x, s)) if x as usize == e => {
                next.next();
                s
            }
            _ => expect,
        };
        // Every entry lies inside the image.
        let end = s.checked_add(ix.lens.get(e)?)?;
        if end > head.image_len {
            return None;
        }
        start.push(s);
        expect = end + 1;
    }
    ix.start = start;
    ix.line_no = Runs::from_runs(r_pairs(&mut r)?, n as u32)?;
    let kinds = r.bytes()?;
    let roles = r.bytes()?;
    if kinds.len() != n || roles.len() != n {
        return None;
    }
    let mut kv = Vec::with_capacity(room);
    for &k in kinds {
        kv.push(EntryKind::from_code(k)?);
    }
    let mut rv = Vec::with_capacity(room);
    for &x in roles {
        rv.push(Role::from_code(x)?);
    }
    ix.kinds = kv;
    ix.roles = rv;
    let deltas = r.u32s()?;
    let whole = r_pairs(&mut r)?;
    if deltas.len() != n || !ascending(&whole, n) {
        return None;
    }
    let mut ts = Vec::with_capacity(room);
    let mut whole = whole.into_iter();
    let mut prev = 0i64;
    for (e, &d) in deltas.iter().enumerate() {
        let t = if d as i32 == i32::MIN {
            match whole.next() {
                Some((x, t)) if x as usize == e => t as i64,
                _ => return None,
            }
        } else {
            prev.wrapping_add(i64::from(d as i32))
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
    for (e, p) in parents {
        let p = u32::try_from(p).ok()?;
        if p != NONE && p as usize >= n {
            return None;
        }
        parent[e as usize] = p;
    }
    let mut hashes = Vec::with_capacity(room);
    hashes.extend(r.u32s()?);
    if hashes.len() != n {
        return None;
    }
    ix.hashes = hashes;
    let width = r.opt_u64()?.map(usize::try_from).transpose().ok()?;
    let ends = r.list(8, |r| r.u64())?;
    let bytes = r.bytes()?;
    if !crate::ids::IdArena::check_parts(n, width, &ends, bytes) {
        return None;
    }
    let mut id_bytes = Vec::with_capacity(bytes.len() + bytes.len() / 64 + 64);
    id_bytes.extend_from_slice(bytes);
    ix.ids = crate::ids::IdArena::from_parts(n, width, ends, id_bytes);
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
        parent
            .iter()
            .enumerate()
            .all(|(e, &p)| p == NONE || (p as usize) < e)
    };
    if !acyclic {
        return None;
    }
    ix.parent = parent;
    ix.table.reserve(headroom(n), &ix.ids);
    for e in 0..n as u32 {
        ix.table.insert_unique(ix.ids.get(e), e);
    }
    Some(head)
}
