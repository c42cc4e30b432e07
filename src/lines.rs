//! Scanning a byte range of the image into candidates and issues: line framing,
//! rules 1–5 (BOM, blank lines, UTF-8, JSON validity with torn-fragment recovery,
//! objects only) and the fields the index needs from each object line. Large ranges
//! are scanned by two threads that meet at a `\n`; the result is the same as one
//! serial scan. Which candidates become entries (rules 6–13) is `index.rs`'s business.

use crate::issue::{Issue, IssueKind};
use crate::kind::{EntryKind, Role};
use crate::scan::{self, Val, Verdict};
use crate::time::parse_iso_ms;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// What an append writes after a pending (torn) last piece, before its `\n`: not JSON
/// outside a string and unable to close one, so neither the sealed line nor any suffix
/// of it parses, and rule 4 cannot recover a nested object of a line cut by a crash
/// as an entry (`_reader.TORN_SEAL`).
pub(crate) const TORN_SEAL: u8 = b'#';

/// Ranges of at least this many bytes are scanned by two threads.
const PARALLEL_MIN: usize = 16 << 20;

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
    /// The object's bytes `start..end` (after a BOM or torn fragment; no CR/LF).
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) kind: EntryKind,
    pub(crate) role: Role,
    pub(crate) id: Ref,
    pub(crate) parent: Ref,
    /// `Date.parse(timestamp)` in ms, `i64::MIN` if it does not parse.
    pub(crate) ts: i64,
    /// A compaction's `firstKeptEntryId`, a context edit's `targetId`, an unknown
    /// entry's `type`; else `Absent`.
    pub(crate) extra: Ref,
    /// [`line_hash`] of the object's bytes.
    pub(crate) hash: u32,
}

/// The hash of an entry's bytes kept by the index: every later read of the line must
/// hash the same, so a line rewritten in place after indexing is noticed when it is
/// read (xxh3, folded to 32 bits: ~0.05 ms per MB read; a change goes unnoticed with
/// probability 2^-32).
pub(crate) fn line_hash(bytes: &[u8]) -> u32 {
    let h = xxhash_rust::xxh3::xxh3_64(bytes);
    (h ^ (h >> 32)) as u32
}

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
}

/// Scan `bytes` (logical offset `base`, first line number `first_line`); `last` says
/// a final piece without `\n` is the image's tail.
fn scan_range(
    bytes: &[u8],
    base: u64,
    first_line: u64,
    first_off: Option<u64>,
    last: bool,
) -> Chunk {
    let mut ch = Chunk::default();
    let mut pos = 0usize;
    let mut line_no = first_line;
    let mut fields = scan::Fields::default();
    while pos < bytes.len() {
        // Fast path: an object line is validated up to its `\n` without searching for
        // that first (not the first line of the image: it may hold a BOM).
        let line_off = match first_off {
            Some(o) if pos == 0 => o,
            _ => base + pos as u64,
        };
        if line_off != 0 {
            if let Some(n) = scan::validate_line(&bytes[pos..], &mut fields) {
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
                let ls = scan::LineScan {
                    verdict: Verdict::Object,
                    bad_utf8: simdutf8::basic::from_utf8(content).is_err(),
                    recovered_at: 0,
                    fields,
                };
                let cbase = base + pos as u64;
                scan_one(&mut ch, content, ls, cbase, cbase, line_no, line_off, false);
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
                scan::scan_piece(content, !is_tail),
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
    ch
}

/// Apply the line's scan `ls` (rules 3–5) and record a candidate or issues.
#[allow(clippy::too_many_arguments)]
#[inline]
fn scan_one(
    ch: &mut Chunk,
    content: &[u8],
    ls: scan::LineScan,
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
        Verdict::Invalid => {
            issues.push(if is_tail {
                Issue::at(IssueKind::Truncated, line, line_off).n(content.len() as u64)
            } else {
                Issue::at(IssueKind::InvalidJson, line, line_off)
            });
            if is_tail {
                // A pending line is judged whole once complete; until then only its
                // truncation is reported (the python backend's rule too).
                issues.retain(|i| i.kind == IssueKind::Truncated);
                ch.tail = Some((cbase_line, false));
                ch.tail_issues = issues;
                return;
            }
        }
        Verdict::NotObject => issues.push(Issue::at(IssueKind::NotAnObject, line, line_off)),
        Verdict::Object => {
            let at = ls.recovered_at;
            if at > 0 {
                // Counted from the line's first byte (a BOM or the start of a
                // continued line included), as the python backend counts.
                let before = cbase + at as u64 - line_off;
                issues.push(Issue::at(IssueKind::TornFragment, line, line_off).n(before));
            }
            let obj = &content[at..];
            let f = &ls.fields;
            // A line that is valid UTF-8 needs no second check of its spans.
            let ok = !ls.bad_utf8;
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
            let extra = match kind {
                EntryKind::Compaction => ch.intern(obj, f.first_kept, ok),
                EntryKind::ContextEdit => ch.intern(obj, f.target_id, ok),
                EntryKind::Unknown => ch.intern(obj, f.ty, ok),
                _ => Ref::Absent,
            };
            ch.cands.push(Cand {
                line,
                line_off,
                start: cbase + at as u64,
                end: cbase + content.len() as u64,
                kind,
                role,
                id,
                parent,
                ts,
                extra,
                hash: line_hash(obj),
            });
        }
    }
    if is_tail {
        ch.tail = Some((line_off, true));
    }
    ch.issues.append(&mut issues);
}

/// Usable CPUs, asked once per process.
fn cpus() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Scan `bytes` (logical offset `base`; its first line is number `first_line` and, if
/// `first_off` is given, continues an accepted line that starts there); `last` says a
/// final piece without `\n` is the image's tail. Two threads when `bytes` is large:
/// the halves meet at a `\n`, and the chunks come back in file order.
pub(crate) fn scan_parallel(
    bytes: &[u8],
    base: u64,
    first_line: u64,
    first_off: Option<u64>,
    last: bool,
) -> Vec<Chunk> {
    // Size first: `available_parallelism` reads cgroup files (~50 µs), which was most
    // of an `append_line`.
    if bytes.len() < PARALLEL_MIN || cpus() < 2 {
        return vec![scan_range(bytes, base, first_line, first_off, last)];
    }
    let Some(split) =
        memchr::memchr(b'\n', &bytes[bytes.len() / 2..]).map(|p| bytes.len() / 2 + p + 1)
    else {
        return vec![scan_range(bytes, base, first_line, first_off, last)];
    };
    let (a, b) = bytes.split_at(split);
    let (ca, mut cb) = std::thread::scope(|s| {
        let hb = s.spawn(|| scan_range(b, base + split as u64, 0, None, last));
        let ca = scan_range(a, base, first_line, first_off, false);
        let cb = match hb.join() {
            Ok(cb) => cb,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        (ca, cb)
    });
    // The second half numbered its lines from 0.
    let shift = first_line + ca.newlines;
    for c in &mut cb.cands {
        c.line += shift;
    }
    for i in cb.issues.iter_mut().chain(cb.tail_issues.iter_mut()) {
        i.line = i.line.map(|l| l + shift);
    }
    if let Some(f) = &mut cb.first_nonblank {
        f.0 += shift;
    }
    vec![ca, cb]
}
