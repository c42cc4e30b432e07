//! Scanning a byte range of the image into candidates and issues: line framing,
//! rules 1–5 (BOM, blank lines, UTF-8, JSON validity with torn-fragment recovery,
//! objects only) and the fields the index needs from each object line. Which
//! candidates become entries (rules 6–13) is `index/`'s business.
//!
//! A range is read and scanned in blocks ([`scan_blocks`]): block `k` holds the lines
//! that *start* in the `k`-th [`BLOCK`] bytes of the range, so each block finds its
//! own bounds from the bytes alone (after the first `\n` before its start, up to the
//! `\n` that ends its last line) and blocks are scanned in parallel without
//! coordination. The caller gets the blocks' chunks in file order, at most
//! [`WINDOW`] ahead of the one it is consuming: the candidates of a whole file never
//! exist at once (they were 5.8x the file on short lines), and every block is copied
//! into a buffer with `pread`, never mapped (a file cut short under a map kills the
//! process with SIGBUS). The result is the same as one serial scan.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

use crate::error::Result;
use crate::issue::{Issue, IssueKind};
use crate::kind::{EntryKind, Role};
use crate::scan::{self, Val, Verdict};
use crate::time::parse_iso_ms;
use crate::usage::{self, Numbers};

const BOM: &[u8] = b"\xef\xbb\xbf";

/// What an append writes after a pending (torn) last piece, before its `\n`: not JSON
/// outside a string and unable to close one, so neither the sealed line nor any suffix
/// of it parses, and rule 4 cannot recover a nested object of a line cut by a crash
/// as an entry (`_reader.TORN_SEAL`).
pub(crate) const TORN_SEAL: u8 = b'#';

/// Bytes at each end of an opened image that the manager's staleness check holds the
/// file to (`_filestate.FINGERPRINT`): a scan from offset 0 keeps them as it read them,
/// so a rewrite between the scan and the first check is seen.
pub const FINGERPRINT: usize = 4096;

/// Bytes of a range per block: lines starting in them are scanned together. Small
/// enough to stay in cache between the copy and the scan, large enough that the
/// handing over of a block costs nothing next to its scan.
pub(crate) const BLOCK: u64 = if cfg!(test) { 4 << 10 } else { 256 << 10 };

/// Blocks scanned ahead of the one the caller consumes: always up to [`WINDOW`], and
/// up to [`WINDOW_MAX`] while the candidates waiting are fewer than [`WAITING_MAX`]
/// (bounds the memory of a scan to a few MB of candidates, yet lets the scanners run
/// ahead freely on long lines, whose blocks hold few).
const WINDOW: usize = 8;
const WINDOW_MAX: usize = 4096;
const WAITING_MAX: usize = 1 << 17;

/// Bytes read at a time (at least) for a line that runs past its block.
const PROBE: usize = 64 << 10;

/// Reads `buf.len()` bytes of the image at an offset (an error if they are not all
/// there: the file shrank).
pub(crate) type Reader<'a> = &'a (dyn Fn(u64, &mut [u8]) -> Result<()> + Sync);

/// A string field decoded into a chunk arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ref {
    /// The key does not occur.
    Absent,
    /// `null`.
    Null,
    /// Anything but a string or `null`.
    NotStr,
    /// A string: its decoded bytes are `arena[a..b]`.
    Str(usize, usize),
}

/// An object line as the scanner saw it; the loader rules decide what it becomes.
pub(crate) struct Cand {
    /// 1-based line number.
    pub(crate) line: u64,
    /// Offset of the line's first byte.
    pub(crate) line_off: u64,
    /// The object's bytes `start..end` (after a BOM, torn bytes or objects glued
    /// before it; no CR/LF).
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) kind: EntryKind,
    pub(crate) role: Role,
    pub(crate) id: Ref,
    pub(crate) parent: Ref,
    /// `Date.parse(timestamp)` in ms, `i64::MIN` if it does not parse.
    pub(crate) ts: i64,
    /// A compaction's `firstKeptEntryId`, a context edit's or a leaf move's
    /// `targetId`, an unknown entry's `type`; else `Absent`.
    pub(crate) extra: Ref,
    /// [`line_hash`] of the object's bytes.
    pub(crate) hash: u32,
    /// An assistant message's usage: its row of [`Chunk::spent`].
    pub(crate) spent: Option<u32>,
    /// `scan::Fields::long_number` of the object.
    pub(crate) long_number: bool,
    /// A user or assistant message with `content`: its time as a listing counts it
    /// (the message's numeric `timestamp`, else the entry's; `listing.rs`, Pi's
    /// `getLastActivityTime`), `None` for any other entry or no time.
    pub(crate) activity: Option<f64>,
    /// Read behind torn bytes only because it ends the line (`scan::Piece::may_nest`):
    /// an entry only if it continues the tree (rule 3, `Index::continues_tree`).
    pub(crate) may_nest: bool,
}

/// The hash of an entry's bytes kept by the index: every later read of the line must
/// hash the same, so a line rewritten in place after indexing is noticed when it is
/// read (xxh3, folded to 32 bits: ~0.05 ms per MB read; a change goes unnoticed with
/// probability 2^-32).
pub(crate) fn line_hash(bytes: &[u8]) -> u32 {
    let h = twox_hash::XxHash3_64::oneshot(bytes);
    (h ^ (h >> 32)) as u32
}

/// An assistant line's usage numbers and the JSON texts of its `provider` and `model`.
pub(crate) type Spent<'a> = (&'a Numbers, Option<&'a [u8]>, Option<&'a [u8]>);

/// What scanning one range produced.
#[derive(Default)]
pub(crate) struct Chunk {
    pub(crate) cands: Vec<Cand>,
    arena: Vec<u8>,
    pub(crate) issues: Vec<Issue>,
    /// `\n` bytes in the range.
    pub(crate) newlines: u64,
    /// First non-blank line: (line, offset, logical range of its content: no BOM, no
    /// CR/LF), the line a missing header is reported on.
    pub(crate) first_nonblank: Option<(u64, u64, u64, u64)>,
    /// The final piece had no `\n`: `(offset, true)` if it was accepted (valid),
    /// `(offset, false)` if it is pending (invalid, issues in `tail_issues`).
    pub(crate) tail: Option<(u64, bool)>,
    pub(crate) tail_issues: Vec<Issue>,
    /// Assistant messages' usage numbers and the JSON texts (in the arena) of their
    /// `provider` and `model` (`usage.rs`).
    spent: Vec<(Numbers, Ref, Ref)>,
    /// When the scan keeps the ends (an open): the first [`FINGERPRINT`] bytes the
    /// chunk covers (its first block only) and those of its bytes among the range's
    /// last `2 * FINGERPRINT` (empty for all but the last chunk or two), as read.
    pub(crate) first_bytes: Vec<u8>,
    pub(crate) last_bytes: Vec<u8>,
}

impl Chunk {
    fn intern(&mut self, src: &[u8], v: Val, utf8_ok: bool) -> Ref {
        match v {
            Val::Absent => Ref::Absent,
            Val::Null => Ref::Null,
            Val::Str {
                start,
                end,
                escaped,
            } => {
                let a = self.arena.len();
                scan::decode_span(&src[start..end], escaped, utf8_ok, &mut self.arena);
                Ref::Str(a, self.arena.len())
            }
            _ => Ref::NotStr,
        }
    }

    /// The decoded bytes of a string field.
    pub(crate) fn get(&self, r: Ref) -> Option<&[u8]> {
        match r {
            Ref::Str(a, b) => Some(&self.arena[a..b]),
            _ => None,
        }
    }

    /// Keep what an assistant message spent (`obj`: its object, `f`: its fields).
    fn add_spent(&mut self, obj: &[u8], f: &scan::Fields) -> u32 {
        let numbers = usage::numbers(obj, f);
        let mut text = |v: Val| match scan::value_raw(obj, v) {
            None => Ref::Absent,
            Some(t) => {
                let a = self.arena.len();
                self.arena.extend_from_slice(t);
                Ref::Str(a, self.arena.len())
            }
        };
        let row = (numbers, text(f.provider), text(f.model));
        self.spent.push(row);
        (self.spent.len() - 1) as u32
    }

    /// Candidate `c`'s usage numbers and `provider` / `model` JSON texts, if it is an
    /// assistant message.
    pub(crate) fn spent(&self, c: &Cand) -> Option<Spent<'_>> {
        let (n, p, m) = self.spent.get(c.spent? as usize)?;
        Some((n, self.get(*p), self.get(*m)))
    }
}

/// Scan `bytes` (logical offset `base`, first line number `first_line`); `last` says
/// a final piece without `\n` is the image's tail.
///
/// Only the lines that start before `soft_end` are scanned (the last of them runs to
/// its `\n`, wherever that is); returns the chunk and the bytes it covered.
fn scan_range(
    bytes: &[u8],
    base: u64,
    first_line: u64,
    first_off: Option<u64>,
    last: bool,
    soft_end: usize,
) -> (Chunk, usize) {
    let mut ch = Chunk::default();
    let mut pos = 0usize;
    let mut line_no = first_line;
    // The fast path's scan, its fields written in place (a `Fields` is a few hundred
    // bytes: copying it per line showed in profiles).
    let mut ls = scan::LineScan {
        verdict: Verdict::Object,
        bad_utf8: false,
        fields: scan::Fields::default(),
    };
    while pos < bytes.len() && pos < soft_end {
        // Fast path: an object line is validated up to its `\n` without searching for
        // that first (not the first line of the image: it may hold a BOM).
        let line_off = match first_off {
            Some(o) if pos == 0 => o,
            _ => base + pos as u64,
        };
        if line_off != 0 {
            if let Some(n) = scan::validate_line(&bytes[pos..], &mut ls.fields) {
                let nl = pos + n;
                let ce = if nl > pos && bytes[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                };
                let content = &bytes[pos..ce];
                if ch.first_nonblank.is_none() {
                    let range = (base + pos as u64, base + ce as u64);
                    ch.first_nonblank = Some((line_no, line_off, range.0, range.1));
                }
                ls.bad_utf8 = simdutf8::basic::from_utf8(content).is_err();
                let cbase = base + pos as u64;
                scan_one(
                    &mut ch, content, &ls, cbase, cbase, line_no, line_off, false,
                );
                ch.newlines += 1;
                line_no += 1;
                pos = nl + 1;
                continue;
            }
        }
        let (content_end, next, is_tail) = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(p) => {
                let nl = pos + p;
                let ce = if nl > pos && bytes[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                };
                (ce, nl + 1, false)
            }
            None => {
                // Like a complete line, an accepted last line loses one trailing CR.
                let ce = if last && bytes.ends_with(b"\r") && bytes.len() > pos {
                    bytes.len() - 1
                } else {
                    bytes.len()
                };
                (ce, bytes.len(), last)
            }
        };
        let mut cstart = pos;
        // A continuation of an accepted unterminated line keeps that line's offset.
        if line_off == 0 && bytes[..content_end].starts_with(BOM) {
            cstart = BOM.len();
            ch.issues.push(Issue::at(IssueKind::Bom, line_no, 0));
        }
        let cs = cstart.min(content_end);
        let content = &bytes[cs..content_end];
        if !scan::is_blank(content) {
            if ch.first_nonblank.is_none() {
                let range = (base + cs as u64, base + content_end as u64);
                ch.first_nonblank = Some((line_no, line_off, range.0, range.1));
            }
            scan_one(
                &mut ch,
                content,
                &scan::scan_line(content),
                base + cstart as u64,
                base + pos as u64,
                line_no,
                line_off,
                is_tail,
            );
        } else if is_tail {
            // A blank last piece is not consumed: it may be the start of a line.
            ch.tail = Some((base + pos as u64, false));
        }
        if bytes[next - 1] == b'\n' {
            ch.newlines += 1;
        }
        line_no += 1;
        pos = next;
    }
    (ch, pos)
}

/// Apply the line's scan `ls` (rules 3–5; rule 4's split of a complete invalid line)
/// and record its candidates and issues. `cbase` is the offset of `content[0]`,
/// `cbase_line` that of the line's first byte.
#[allow(clippy::too_many_arguments)]
#[inline]
fn scan_one(
    ch: &mut Chunk,
    content: &[u8],
    ls: &scan::LineScan,
    cbase: u64,
    cbase_line: u64,
    line: u64,
    line_off: u64,
    is_tail: bool,
) {
    let mut issues = Vec::new();
    if ls.bad_utf8 {
        issues.push(Issue::at(IssueKind::InvalidUtf8, line, line_off));
    }
    match ls.verdict {
        Verdict::Invalid if is_tail => {
            // A pending line is judged whole once complete; until then only its
            // truncation is reported (the python backend's rule too).
            ch.tail = Some((cbase_line, false));
            ch.tail_issues =
                vec![Issue::at(IssueKind::Truncated, line, line_off).n(content.len() as u64)];
            return;
        }
        Verdict::Invalid => match scan::split_line(content) {
            None => issues.push(Issue::at(IssueKind::InvalidJson, line, line_off)),
            Some(split) => {
                ch.issues.append(&mut issues);
                let at = Place {
                    cbase,
                    line,
                    line_off,
                };
                add_split(ch, content, &split, ls.bad_utf8, at, 0);
                return;
            }
        },
        Verdict::NotObject => {
            issues.push(Issue::at(IssueKind::NotAnObject, line, line_off));
            if is_tail {
                // Read for good, as an object is: an append starts a new line.
                ch.tail = Some((line_off, true));
            }
        }
        Verdict::Object => {
            add_cand(ch, content, &ls.fields, ls.bad_utf8, cbase, line, line_off);
            if is_tail {
                ch.tail = Some((line_off, true));
            }
        }
    }
    ch.issues.append(&mut issues);
}

/// What another writer appended after a line read without its `\n` (a complete JSON
/// value, accepted as Pi reads a last line): see [`continued`].
pub(crate) enum Continued {
    /// Blanks so far, up to a `\n` or the end: the usual scan reads on.
    Blank,
    /// More than blanks and no `\n` yet: the fused line is pending (rule 4: a last line
    /// without `\n` that is not one value), of `n` bytes counted as any last line's.
    Pending(u64),
    /// The fused line, complete: what it holds that was not read before (its line
    /// numbers 0-based, as a block's), and the offset after its `\n`.
    Line(Box<Chunk>, u64),
    /// The fused line no longer reads as the object read before followed by others: no
    /// refresh can agree with a fresh open.
    Changed,
}

/// Read the line that starts at `line_off` and whose value up to `accepted` was read
/// without its `\n`, now that the image ends at `total`. A fresh open reads the fused
/// line by rule 4 (objects glued with no `\n` between them, torn bytes among them),
/// which keeps the object that starts the line whatever follows it, so when that value
/// was an `object` what the line holds past it is new; a value that was not (which gave
/// no entry, only its issues, for the caller to withdraw) is read again with the whole
/// line, as a fresh open reads it (`_load.Loader._continued` has the same rule).
pub(crate) fn continued(
    read: Reader<'_>,
    line_off: u64,
    accepted: u64,
    total: u64,
    object: bool,
) -> Result<Continued> {
    let mut buf = Vec::new();
    let mut at = accepted;
    let mut blank = true;
    let mut nl = None;
    let mut cr = false;
    while at < total {
        let n = ((total - at) as usize).min(PROBE);
        buf.resize(n, 0);
        read(at, &mut buf)?;
        let upto = memchr::memchr(b'\n', &buf);
        blank &= scan::is_blank(&buf[..upto.unwrap_or(n)]);
        if let Some(p) = upto {
            nl = Some(at + p as u64);
            break;
        }
        cr = buf.ends_with(b"\r");
        at += n as u64;
    }
    if blank {
        return Ok(Continued::Blank);
    }
    let Some(nl) = nl else {
        // Counted as any last line: without a BOM and a final CR.
        let mut head = [0u8; 3];
        let bom = line_off == 0 && read(0, &mut head).is_ok() && head == BOM;
        return Ok(Continued::Pending(
            total - line_off - 3 * u64::from(bom) - u64::from(cr),
        ));
    };
    let mut line = vec![0u8; (nl - line_off) as usize];
    read(line_off, &mut line)?;
    let ce = line.len() - usize::from(line.ends_with(b"\r"));
    let cs = if line_off == 0 && line.starts_with(BOM) {
        BOM.len()
    } else {
        0
    };
    let content = &line[cs..ce];
    let cbase = line_off + cs as u64;
    let mut ch = Chunk {
        newlines: 1,
        ..Chunk::default()
    };
    if !object {
        scan_one(
            &mut ch,
            content,
            &scan::scan_line(content),
            cbase,
            line_off,
            0,
            line_off,
            false,
        );
        return Ok(Continued::Line(Box::new(ch), nl + 1));
    }
    let acc = ((accepted - cbase) as usize).min(content.len());
    let Some(split) = scan::split_line(content) else {
        return Ok(Continued::Changed);
    };
    let read_before = split.pieces.iter().take_while(|p| p.start < acc).count();
    if read_before != 1
        || split.pieces[0].end > acc
        || split.fragments.iter().any(|&(a, _)| a < acc)
    {
        return Ok(Continued::Changed);
    }
    let bad = simdutf8::basic::from_utf8(content).is_err();
    if bad && simdutf8::basic::from_utf8(&content[..acc]).is_ok() {
        // Reported once per line: the part read before had none.
        ch.issues
            .push(Issue::at(IssueKind::InvalidUtf8, 0, line_off));
    }
    let at = Place {
        cbase,
        line: 0,
        line_off,
    };
    add_split(&mut ch, content, &split, bad, at, acc);
    Ok(Continued::Line(Box::new(ch), nl + 1))
}

/// Where a line's content is: its first byte at `cbase`, on line `line` at `line_off`.
#[derive(Clone, Copy)]
struct Place {
    cbase: u64,
    line: u64,
    line_off: u64,
}

/// Rule 4's reading `split` of the line `content`: its fragments reported, its objects
/// recorded, those that start at `since` or later ([`continued`]: what the line holds
/// past a value read before). `bad_utf8`: the line is not valid UTF-8.
fn add_split(
    ch: &mut Chunk,
    content: &[u8],
    split: &scan::Split,
    bad_utf8: bool,
    at: Place,
    since: usize,
) {
    let Place {
        cbase,
        line,
        line_off,
    } = at;
    for &(a, b) in split.fragments.iter().filter(|&&(a, _)| a >= since) {
        // A fragment that starts the line is counted from the line's first byte (a BOM
        // included), as the python backend counts.
        let at = if a == 0 { line_off } else { cbase + a as u64 };
        ch.issues
            .push(Issue::at(IssueKind::TornFragment, line, at).n(cbase + b as u64 - at));
    }
    for p in split.pieces.iter().filter(|p| p.start >= since) {
        let obj = &content[p.start..p.end];
        add_cand(
            ch,
            obj,
            &p.fields,
            bad_utf8,
            cbase + p.start as u64,
            line,
            line_off,
        );
        if let Some(c) = ch.cands.last_mut() {
            c.may_nest = p.may_nest;
        }
    }
}

/// Record the object `obj` (its fields `f`, its first byte at offset `start`) found on
/// the line `line` at `line_off`.
#[inline]
fn add_cand(
    ch: &mut Chunk,
    obj: &[u8],
    f: &scan::Fields,
    bad_utf8: bool,
    start: u64,
    line: u64,
    line_off: u64,
) {
    // A line that is valid UTF-8 needs no second check of its spans.
    let ok = !bad_utf8;
    let ty = scan::str_bytes_of(obj, f.ty, ok);
    let kind = ty
        .as_deref()
        .map_or(EntryKind::Unknown, EntryKind::from_name);
    let role = if kind == EntryKind::Message {
        Role::from_name(scan::str_bytes_of(obj, f.role, ok).as_deref())
    } else {
        Role::None
    };
    let ts = scan::str_bytes_of(obj, f.timestamp, ok)
        .and_then(|t| parse_iso_ms(&t))
        .unwrap_or(i64::MIN);
    let id = ch.intern(obj, f.id, ok);
    let parent = ch.intern(obj, f.parent_id, ok);
    let spent = (role == Role::Assistant).then(|| ch.add_spent(obj, f));
    let activity = match role {
        Role::User | Role::Assistant if f.content != scan::Val::Absent => {
            scan::message_time(obj, f, (ts != i64::MIN).then_some(ts as f64))
        }
        _ => None,
    };
    let extra = match kind {
        EntryKind::Compaction => ch.intern(obj, f.first_kept, ok),
        EntryKind::ContextEdit | EntryKind::Leaf => ch.intern(obj, f.target_id, ok),
        EntryKind::Unknown => ch.intern(obj, f.ty, ok),
        _ => Ref::Absent,
    };
    ch.cands.push(Cand {
        line,
        line_off,
        start,
        end: start + obj.len() as u64,
        kind,
        role,
        id,
        parent,
        ts,
        extra,
        hash: line_hash(obj),
        spent,
        long_number: f.long_number,
        activity,
        may_nest: false,
    });
}

/// Usable CPUs, asked once per process.
fn cpus() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// One range `[from, end)` split into blocks.
struct Blocks<'a> {
    /// The range's bytes when they are in memory (a guarded map, owned bytes).
    mem: Option<&'a [u8]>,
    read: Reader<'a>,
    from: u64,
    end: u64,
    first_off: Option<u64>,
    last: bool,
    /// Chunks carry the range's first and last bytes (`Chunk::first_bytes`).
    keep_ends: bool,
}

impl Blocks<'_> {
    fn count(&self) -> usize {
        (self.end - self.from).div_ceil(BLOCK) as usize
    }

    /// Read block `k` into `buf`: the lines that start in `[from + k * BLOCK,
    /// from + (k + 1) * BLOCK)`, each through its `\n`, at `buf[at..]`. Returns
    /// `(at, offset of buf[at])`, or `None` for a block inside a line that started
    /// before it. One `pread` of the block (from the byte before it, to see whether a
    /// line starts at its first byte), then more only for the line that runs past it.
    fn read(&self, k: usize, buf: &mut Vec<u8>) -> Result<Option<(usize, u64)>> {
        let lo = self.from + k as u64 * BLOCK;
        let hi = (lo + BLOCK).min(self.end);
        let base = if k == 0 { lo } else { lo - 1 };
        buf.clear();
        buf.resize((hi - base) as usize, 0);
        (self.read)(base, buf)?;
        let at = if k == 0 {
            0
        } else {
            // The first line starting in the block follows the first `\n` from `lo - 1`.
            match memchr::memchr(b'\n', &buf[..buf.len() - 1]) {
                Some(p) => p + 1,
                None => return Ok(None),
            }
        };
        if hi < self.end {
            // Through the `\n` that ends the line holding byte `hi - 1`.
            let mut look = buf.len() - 1;
            loop {
                if let Some(p) = memchr::memchr(b'\n', &buf[look..]) {
                    buf.truncate(look + p + 1);
                    break;
                }
                let pos = base + buf.len() as u64;
                if pos >= self.end {
                    break;
                }
                look = buf.len();
                let n = (self.end - pos).min((PROBE as u64).max(buf.len() as u64 / 2));
                buf.resize(look + n as usize, 0);
                (self.read)(pos, &mut buf[look..])?;
            }
        }
        Ok(Some((at, base + at as u64)))
    }

    /// Read and scan block `k` (lines numbered from 0; the caller shifts them).
    /// Block `k` of a range in memory (the same bounds as [`Blocks::read`]): the rest
    /// of the range from the block's first line start, and how far into it the
    /// block's lines start (the scan runs the last of them to its end).
    fn slice<'m>(&self, k: usize, m: &'m [u8]) -> Option<(u64, &'m [u8], usize)> {
        let lo = k as u64 * BLOCK;
        let hi = (lo + BLOCK).min(m.len() as u64) as usize;
        let lo = lo as usize;
        let start = if k == 0 {
            0
        } else {
            lo + memchr::memchr(b'\n', &m[lo - 1..hi - 1])?
        };
        Some((self.from + start as u64, &m[start..], hi - start))
    }

    fn scan(&self, k: usize, buf: &mut Vec<u8>) -> Result<(Chunk, u64)> {
        let (start, bytes, soft) = match self.mem {
            Some(m) => match self.slice(k, m) {
                Some(b) => b,
                None => return Ok((Chunk::default(), 0)),
            },
            None => match self.read(k, buf)? {
                Some((at, start)) => (start, &buf[at..], buf.len() - at),
                None => return Ok((Chunk::default(), 0)),
            },
        };
        let first_off = if k == 0 { self.first_off } else { None };
        let last = self.last && start + bytes.len() as u64 == self.end;
        let (mut ch, n) = scan_range(bytes, start, 0, first_off, last, soft);
        if self.keep_ends {
            let covered = &bytes[..n];
            if k == 0 {
                ch.first_bytes = covered[..n.min(FINGERPRINT)].to_vec();
            }
            // A chunk covers no byte past the range's end.
            let near_end = self.end.saturating_sub(2 * FINGERPRINT as u64);
            let skip = near_end.saturating_sub(start).min(n as u64) as usize;
            ch.last_bytes = covered[skip..].to_vec();
        }
        Ok((ch, n as u64))
    }
}

/// Read and scan `[from, end)` of the image (the bytes `mem` when given, else through
/// `read`), block by block, and hand
/// each block's chunk (lines numbered from 0, `newlines` to shift the next by; the
/// bytes it covered) to `sink` in file order. `first_off` says the range starts inside
/// an accepted line that starts there; `last` that a final piece without `\n` is the
/// image's tail. Blocks are scanned by all CPUs, at most [`WINDOW`] ahead of `sink`;
/// `sink` returns `false` to stop early (the rest is not read). `keep_ends`: the chunks
/// carry the range's first and last bytes as read (`Chunk::first_bytes`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_blocks(
    mem: Option<&[u8]>,
    read: Reader<'_>,
    from: u64,
    end: u64,
    first_off: Option<u64>,
    last: bool,
    keep_ends: bool,
    sink: &mut dyn FnMut(Chunk, u64) -> Result<bool>,
) -> Result<()> {
    let blocks = Blocks {
        mem,
        read,
        from,
        end,
        first_off,
        last,
        keep_ends,
    };
    let n = blocks.count();
    let mut buf = Vec::new();
    let workers = cpus().min(n).saturating_sub(1);
    if workers == 0 {
        for k in 0..n {
            let (ch, bytes) = blocks.scan(k, &mut buf)?;
            if !sink(ch, bytes)? {
                break;
            }
        }
        return Ok(());
    }
    type Done = BTreeMap<usize, Result<(Chunk, u64)>>;
    struct State {
        claimed: usize,
        consumed: usize,
        stop: bool,
        done: Done,
        /// Candidates in `done`.
        waiting: usize,
    }
    let state = Mutex::new(State {
        claimed: 0,
        consumed: 0,
        stop: false,
        done: BTreeMap::new(),
        waiting: 0,
    });
    let cv = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    // Claim the next block if the window allows it.
    let claim = |st: &mut State| -> Option<usize> {
        let room = st.claimed < st.consumed + WINDOW
            || (st.waiting < WAITING_MAX && st.claimed < st.consumed + WINDOW_MAX);
        (st.claimed < n && room && !st.stop).then(|| {
            st.claimed += 1;
            st.claimed - 1
        })
    };
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut buf = Vec::new();
                let mut st = lock();
                loop {
                    if st.stop || st.claimed >= n {
                        return;
                    }
                    let Some(k) = claim(&mut st) else {
                        st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                        continue;
                    };
                    drop(st);
                    let r = blocks.scan(k, &mut buf);
                    st = lock();
                    st.waiting += r.as_ref().map_or(0, |(c, _)| c.cands.len());
                    st.done.insert(k, r);
                    cv.notify_all();
                }
            });
        }
        let mut run = || -> Result<()> {
            for k in 0..n {
                let r = loop {
                    let mut st = lock();
                    if let Some(r) = st.done.remove(&k) {
                        st.waiting -= r.as_ref().map_or(0, |(c, _)| c.cands.len());
                        st.consumed = k + 1;
                        cv.notify_all();
                        break r;
                    }
                    // Not there yet: scan a block here too rather than wait.
                    if let Some(j) = claim(&mut st) {
                        drop(st);
                        let r = blocks.scan(j, &mut buf);
                        let mut st = lock();
                        st.waiting += r.as_ref().map_or(0, |(c, _)| c.cands.len());
                        st.done.insert(j, r);
                        cv.notify_all();
                        continue;
                    }
                    drop(cv.wait(st).unwrap_or_else(|e| e.into_inner()));
                };
                let (ch, bytes) = r?;
                if !sink(ch, bytes)? {
                    break;
                }
            }
            Ok(())
        };
        let out = run();
        lock().stop = true;
        cv.notify_all();
        out
    })
}

/// Count the `\n` bytes of `[from, end)` (the bytes `mem` when given, else read
/// through `read`) in blocks on all CPUs, as [`scan_blocks`] reads them (the
/// benchmarks' floor).
pub(crate) fn count_blocks(
    mem: Option<&[u8]>,
    read: Reader<'_>,
    from: u64,
    end: u64,
) -> Result<u64> {
    let n = (end - from).div_ceil(BLOCK);
    let next = std::sync::atomic::AtomicU64::new(0);
    let count = |buf: &mut Vec<u8>| -> Result<u64> {
        let mut total = 0;
        loop {
            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if k >= n {
                return Ok(total);
            }
            let lo = from + k * BLOCK;
            let len = (end - lo).min(BLOCK) as usize;
            let bytes = match mem {
                Some(m) => &m[(lo - from) as usize..(lo - from) as usize + len],
                None => {
                    buf.resize(len, 0);
                    read(lo, &mut buf[..len])?;
                    &buf[..len]
                }
            };
            total += memchr::memchr_iter(b'\n', bytes).count() as u64;
        }
    };
    std::thread::scope(|s| {
        let others: Vec<_> = (1..cpus().min(n as usize).max(1))
            .map(|_| s.spawn(|| count(&mut Vec::new())))
            .collect();
        let mut total = count(&mut Vec::new())?;
        for h in others {
            total += h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        }
        Ok(total)
    })
}

#[cfg(test)]
mod bench_hash {
    /// `SESSIONTREE_BENCH_FILE=... cargo test --release --no-default-features -- --ignored --nocapture bench_hash`
    #[test]
    #[ignore]
    fn bench_hash() {
        let Ok(path) = std::env::var("SESSIONTREE_BENCH_FILE") else {
            return;
        };
        let data = std::fs::read(path).unwrap();
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let mut x = 0u32;
            for line in data.split(|&b| b == b'\n') {
                x ^= super::line_hash(line);
            }
            println!("hash per line: {:?} ({x})", t.elapsed());
            let t = std::time::Instant::now();
            let h = twox_hash::XxHash3_64::oneshot(&data);
            println!("xxh3 whole: {:?} ({h})", t.elapsed());
            let t = std::time::Instant::now();
            let mut s = 0u64;
            for c in data.chunks_exact(8) {
                s = s
                    .wrapping_add(u64::from_le_bytes(c.try_into().unwrap()))
                    .rotate_left(5);
            }
            println!("sum: {:?} ({s})", t.elapsed());
            let t = std::time::Instant::now();
            let n = memchr::memchr_iter(b'\n', &data).count();
            println!("memchr: {:?} ({n})", t.elapsed());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_hash_is_xxh3_folded() {
        // XXH3-64 (seed 0) of byte `i` = `i * 31 + i / 7`, as xxhash-rust 0.8.21 (the
        // implementation used before) computes it; the first is the reference value
        // of the empty input. Every length class of XXH3 (0, 1-3, 4-16, 17-128,
        // 129-240, the long loop and its tail), so the SIMD path picked at run time
        // gives the same hashes as any other.
        let want: [(usize, u64); 12] = [
            (0, 0x2d06_8005_38d3_94c2),
            (1, 0xc44b_dff4_074e_ecdb),
            (3, 0x3698_b801_91e6_25f9),
            (16, 0x68b2_cc87_3ff2_7302),
            (17, 0xb06f_8260_bd2b_bef6),
            (128, 0x7401_9cb4_6f85_b9d9),
            (129, 0x8630_ae45_a41c_5069),
            (240, 0x37fb_55e8_6782_7b0c),
            (241, 0xa940_cb6f_5924_251e),
            (1024, 0x5d6b_898b_002c_4976),
            (2600, 0xb02d_6dbd_94b0_3ef1),
            (100_000, 0xa186_88f2_f785_6c61),
        ];
        for (len, h) in want {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 + i / 7) as u8).collect();
            assert_eq!(line_hash(&bytes), (h ^ (h >> 32)) as u32, "length {len}");
        }
    }

    type Seen = (
        Vec<(u64, u64, u64, u64, u32)>,
        Vec<(IssueKind, Option<u64>)>,
        Option<(u64, bool)>,
        u64,
        u64,
    );

    /// Everything a scan reports, lines shifted to absolute numbers, as one scan.
    fn by_blocks(img: &[u8], from: u64, in_memory: bool, last: bool) -> Seen {
        let read = |off: u64, buf: &mut [u8]| {
            buf.copy_from_slice(&img[off as usize..off as usize + buf.len()]);
            Ok(())
        };
        let mem = in_memory.then_some(&img[from as usize..]);
        let (mut cands, mut issues, mut tail, mut line, mut covered) =
            (vec![], vec![], None, 1u64, 0);
        scan_blocks(
            mem,
            &read,
            from,
            img.len() as u64,
            None,
            last,
            false,
            &mut |ch, bytes| {
                covered += bytes;
                for c in &ch.cands {
                    cands.push((c.line + line, c.line_off, c.start, c.end, c.hash));
                }
                for i in ch.issues.iter().chain(&ch.tail_issues) {
                    issues.push((i.kind, i.line.map(|l| l + line)));
                }
                if ch.tail.is_some() {
                    tail = ch.tail;
                }
                line += ch.newlines;
                Ok(true)
            },
        )
        .unwrap();
        (cands, issues, tail, line, covered)
    }

    fn at_once(img: &[u8], from: u64, last: bool) -> Seen {
        let bytes = &img[from as usize..];
        let (ch, n) = scan_range(bytes, from, 1, None, last, bytes.len());
        let cands = ch
            .cands
            .iter()
            .map(|c| (c.line, c.line_off, c.start, c.end, c.hash))
            .collect();
        let issues = ch
            .issues
            .iter()
            .chain(&ch.tail_issues)
            .map(|i| (i.kind, i.line))
            .collect();
        (cands, issues, ch.tail, 1 + ch.newlines, n as u64)
    }

    #[test]
    fn blocks_give_what_one_scan_gives() {
        // Lines shorter and longer than a block (4 KiB in tests), blank and invalid
        // ones, CRLF, torn fragments, glued objects, and endings with and without a
        // final LF.
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for round in 0..60 {
            let mut img = Vec::new();
            for i in 0..next(40) + 1 {
                let pad = "x".repeat(match next(6) {
                    0 => 9000 + next(20000) as usize,
                    1 => 3000 + next(3000) as usize,
                    _ => next(200) as usize,
                });
                let obj =
                    format!(r#"{{"type":"message","id":"e{i}","parentId":null,"p":"{pad}"}}"#);
                match next(8) {
                    7 => img.extend_from_slice(format!("{obj} {obj}junk{obj}\n").as_bytes()),
                    0 => img.extend_from_slice(b"  \n"),
                    1 => img.extend_from_slice(format!("garbage {pad}\n").as_bytes()),
                    2 => img.extend_from_slice(format!("{obj}\r\n").as_bytes()),
                    3 => img.extend_from_slice(format!("{{\"type\":\"mess{obj}\n").as_bytes()),
                    _ => img.extend_from_slice(format!("{obj}\n").as_bytes()),
                }
            }
            if round % 3 == 0 {
                img.extend_from_slice(br#"{"type":"message","id":"t","p":"unfinished"#);
            }
            let from = if round % 4 == 1 {
                img.iter()
                    .position(|&b| b == b'\n')
                    .map_or(0, |p| p as u64 + 1)
            } else {
                0
            };
            for last in [true, false] {
                let want = at_once(&img, from, last);
                assert_eq!(
                    by_blocks(&img, from, true, last),
                    want,
                    "round {round} in memory"
                );
                assert_eq!(
                    by_blocks(&img, from, false, last),
                    want,
                    "round {round} read"
                );
            }
        }
    }
}
