//! The index of one session image: per-entry columns, the id table, and loader rules
//! 6–13 (docs/ARCHITECTURE.md) applied to the candidates `lines.rs` scanned, at open
//! and again for each batch of growth (`append_line`, `refresh`), where the result is
//! the index a fresh open of the grown image would give.
//!
//! Entries are numbered 0.. in file order (accepted entries only; the header is not
//! an entry). Per entry the index keeps the line offset (8 bytes), its length (2,
//! longer ones aside), its number (as runs: ~0), the kind and role bytes, the parsed
//! timestamp (8), the parent (4), the line hash (4), the id bytes (8 for Pi's ids, no
//! ends when all have one length) and 8–16 bytes of id table: ~46 bytes for a Pi entry
//! after an open (`Index::memory`; child lists, 8 more, are built when asked for). An
//! index read back from its persisted file (`persist`) views the lengths, hashes, ids
//! and id table in that file's map (`col.rs`). Reads after indexing copy bytes out of
//! the file (`source.rs`). Walks over the parent column (`tree.rs`) and the context
//! plan (`context.rs`) are given the columns they need; they do not know `Index`.
//!
//! Here: the index's columns, the open and the loader rules as each batch of lines is
//! taken in, and growth. `read.rs`: what is read of an index (lines, structure, the
//! context plan, the load report); `columns.rs`: its columns in Arrow layouts and the
//! decoded rows of a range of lines.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use crate::col::{Col, Raw};
use crate::context::{self, Plan};
use crate::error::{Error, HeaderProblem, Result};
use crate::ids::{IdArena, IdTable};
use crate::issue::{self, Issue, IssueKind};
use crate::jsnum;
use crate::kind::{EntryKind, Role};
use crate::lines::{self, Cand, Chunk, Ref};
use crate::runs::{Lengths, Runs};
use crate::scan::{self, Val, Verdict};
use crate::source::Source;
use crate::tree::{self, NONE};
use crate::usage::UsageTotals;

mod columns;
mod read;

/// How many candidates ahead `ingest` prefetches id-table slots (~ DRAM latency /
/// time per candidate).
const PREFETCH_AHEAD: usize = 16;

/// Past this many compactions to check in one batch, one O(n) interval pass is
/// cheaper than walking each one's ancestors (`_load._WALK_LIMIT`).
const WALK_LIMIT: usize = 8;

/// What one `index_new` collects across the blocks it takes in.
#[derive(Default)]
struct Batch {
    /// Entries before the batch.
    before: usize,
    /// Number of the next block's first line.
    line: u64,
    /// First non-blank line (line, offset, content range): named if no header is found.
    first_nonblank: Option<(u64, u64, u64, u64)>,
    /// The final piece without `\n` (see `lines::Chunk::tail`) and its issues.
    tail: Option<(u64, bool)>,
    tail_issues: Vec<Issue>,
    header_line: u64,
    bad_header: bool,
    /// No more blocks are needed (a bad or version 1/2 header).
    stopped: bool,
    /// A forward parent link was made: cycles may exist.
    relink: bool,
    /// Bytes to scan, bytes scanned and candidates seen so far (the density estimates
    /// how many entries are still to come).
    total: u64,
    seen: u64,
    cands: usize,
}

/// One value read from a line: a string decoded (`json.loads`' escapes, lone
/// surrogates in generalized UTF-8, invalid UTF-8 replaced), else its JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A JSON string's decoded bytes.
    Str(Vec<u8>),
    /// Any other value's JSON text, unchanged.
    Json(Vec<u8>),
}

impl Value {
    fn of(line: &[u8], v: Val) -> Option<Value> {
        match v {
            Val::Str { .. } => scan::str_bytes(line, v).map(|b| Value::Str(b.into_owned())),
            _ => scan::value_raw(line, v).map(|t| Value::Json(t.to_vec())),
        }
    }
}

/// A label entry's number and its `targetId`, `label` and `timestamp` (`None`: key
/// absent) ([`Index::label_fields`]).
pub type LabelFields = (u32, [Option<Value>; 3]);

/// Why a read of the header line fails when its bytes changed after the scan.
const HEADER_CHANGED: &str = "the header line changed in the file since it was read";

/// The bytes at the ends of an open's image as the scan read them: the first
/// `lines::FINGERPRINT` of the file and the bytes up to `last_end` of its last `2 *
/// lines::FINGERPRINT` (the chunks hand over consecutive pieces of both). An open from
/// a persisted index starts from the ends it checked against the file
/// ([`Ends::seeded`]) and takes in what the scan of the growth reads.
#[derive(Default)]
pub(crate) struct Ends {
    head: Vec<u8>,
    last: Vec<u8>,
    last_end: u64,
}

impl Ends {
    /// The ends of an image of `len` bytes whose fingerprint is `fp` (as
    /// [`Ends::fingerprint`] gives it).
    pub(crate) fn seeded(len: u64, fp: &[u8]) -> Ends {
        let head = (len as usize).min(lines::FINGERPRINT).min(fp.len());
        Ends {
            head: fp[..head].to_vec(),
            last: fp[head..].to_vec(),
            last_end: len,
        }
    }

    /// Take a chunk's ends; `end` is the offset where the bytes it covered end.
    fn take(&mut self, ch: &mut Chunk, end: u64) {
        let fp = lines::FINGERPRINT;
        if self.head.len() < fp && self.head.len() as u64 == self.last_end {
            // The image so far is shorter than the head: this chunk's first bytes follow.
            let more = (fp - self.head.len()).min(ch.first_bytes.len());
            self.head.extend_from_slice(&ch.first_bytes[..more]);
        }
        if end == self.last_end {
            return;
        }
        if ch.last_bytes.is_empty() {
            self.last_end = end;
            if self.last.len() as u64 > 0 {
                // Bytes between what was kept and this chunk's end were not handed over.
                self.last.clear();
            }
            return;
        }
        let from = end - ch.last_bytes.len() as u64;
        if from != self.last_end {
            self.last.clear();
        }
        self.last.append(&mut ch.last_bytes);
        self.last_end = end;
        let cap = 2 * fp;
        if self.last.len() > cap {
            self.last.drain(..self.last.len() - cap);
        }
    }

    /// The fingerprint of the image's first `len` bytes, if the bytes kept hold it.
    pub(crate) fn fingerprint(&self, len: u64) -> Option<Vec<u8>> {
        let fp = lines::FINGERPRINT as u64;
        let head = len.min(fp) as usize;
        let last_start = self.last_end.checked_sub(self.last.len() as u64)?;
        let tail_start = len.saturating_sub(fp);
        if self.head.len() < head || tail_start < last_start || len > self.last_end {
            return None;
        }
        let a = (tail_start - last_start) as usize;
        let b = (len - last_start) as usize;
        let mut out = self.head[..head].to_vec();
        out.extend_from_slice(&self.last[a..b]);
        Some(out)
    }
}

/// Child lists (CSR) of entries `0..n`: the children of `e` in file order are
/// `list[start[e]..start[e + 1]]`; later entries are found by a scan.
pub(crate) struct Children {
    start: Vec<u32>,
    list: Vec<u32>,
    n: u32,
}

/// The index of one session image.
pub struct Index {
    pub(crate) src: Source,
    pub(crate) header: Option<Range<u64>>,
    /// oh-my-pi's title slot: a `title` object before the header (its bytes).
    pub(crate) title: Option<Range<u64>>,
    /// `lines::line_hash` of the header line when scanned (checked on every read).
    pub(crate) header_hash: u32,
    /// The open's image length and its first and last `lines::FINGERPRINT` bytes, as
    /// the scan read them ([`Index::fingerprint`]).
    pub(crate) fingerprint: Option<(u64, Vec<u8>)>,
    /// Set until an open's scan is done: the ends it keeps for `fingerprint`.
    pub(crate) keep_ends: Option<Ends>,
    pub(crate) needs_migration: bool,
    // Per-entry columns.
    pub(crate) start: Vec<u64>,
    /// Each entry's byte length (`end - start`).
    pub(crate) lens: Lengths,
    /// Each entry's 1-based line number.
    pub(crate) line_no: Runs,
    pub(crate) kinds: Vec<EntryKind>,
    pub(crate) roles: Vec<Role>,
    pub(crate) ts: Vec<i64>,
    pub(crate) parent: Vec<u32>,
    /// `lines::line_hash` of each entry's bytes when indexed (checked on every read).
    pub(crate) hashes: Col<u32>,
    pub(crate) ids: IdArena,
    pub(crate) table: IdTable,
    // Sparse facts.
    /// Entries whose physical line starts before their object (a BOM, torn bytes or
    /// objects glued before it).
    pub(crate) line_offs: Vec<(u32, u64)>,
    /// Entries whose `parentId` names no entry yet (a later line may define it).
    pub(crate) unresolved: Vec<(u32, Vec<u8>)>,
    /// Cycle breakers and the link they had.
    pub(crate) broken: Vec<(u32, u32)>,
    /// Compactions and their `firstKeptEntryId` (`None`: not a string).
    pub(crate) compactions: Vec<(u32, Option<Vec<u8>>)>,
    /// Context edits and their `targetId` (`None`: not a string).
    pub(crate) edits: Vec<(u32, Option<Vec<u8>>)>,
    /// Some entry's parent comes later in the file (only then can cycles exist).
    pub(crate) has_forward: bool,
    pub(crate) issues: Vec<Issue>,
    /// `cycle` and `first_kept_off_path` items (recomputed when links change).
    pub(crate) post_issues: Vec<Issue>,
    /// Items about the pending tail (dropped when it completes).
    pub(crate) tail_issues: Vec<Issue>,
    pub(crate) image_len: u64,
    pub(crate) next_line: u64,
    /// `image_len` is inside a line (an accepted last line without `\n`): its offset.
    pub(crate) mid_line: Option<u64>,
    /// The child lists of the entries it covers, built when first asked for (an open
    /// that is not asked for children does not pay 8 bytes per entry for them); dropped
    /// when links change or many entries were added since.
    pub(crate) children: OnceLock<Children>,
    /// Bytes handed to the scanner so far (tests: growth scans only new bytes).
    pub(crate) scanned: u64,
    /// What the assistant messages accepted so far spent (`usage.rs`).
    pub(crate) usage: UsageTotals,
    /// The largest [`crate::lines::Cand::activity`] of the entries accepted so far
    /// (at least 0): a listing's last activity time (`listing::indexed`).
    pub(crate) activity: Option<f64>,
    /// Entries whose line has a number with a long digit run (`scan::LONG_DIGITS`),
    /// ascending: rare, so kept as a list.
    pub(crate) long_numbers: Vec<u32>,
    /// The leaf after the entries accepted so far (rule 13): the last entry, or what
    /// the last `leaf` entry with a valid `targetId` moved it to (`None`: before the
    /// first entry).
    pub(crate) leaf: Option<u32>,
    /// The persisted index this one was read from or written to (`persist`).
    pub(crate) persisted: Option<crate::col::Persisted>,
}

impl Index {
    /// Map and index the session file at `path` (rules 1–13; never writes).
    pub fn open(path: &Path) -> Result<Index> {
        Index::build(Source::open(path)?)
    }

    /// Index an in-memory image.
    pub fn from_image(data: Vec<u8>) -> Result<Index> {
        Index::build(Source::from_bytes(data))
    }

    pub(crate) fn build(src: Source) -> Result<Index> {
        let mut ix = Index::empty(src);
        ix.keep_ends = ix.src.holds_file().then(Ends::default);
        ix.index_new()?;
        // The child lists the compaction check built are not kept: 8 bytes per entry
        // that most opens never ask for again (`children()` builds them then).
        ix.children = OnceLock::new();
        ix.shrink();
        give_back_freed_memory();
        Ok(ix)
    }

    /// An index of nothing yet over `src`.
    pub(crate) fn empty(src: Source) -> Index {
        Index {
            src,
            header: None,
            title: None,
            header_hash: 0,
            fingerprint: None,
            keep_ends: None,
            needs_migration: false,
            start: Vec::new(),
            lens: Lengths::default(),
            line_no: Runs::default(),
            kinds: Vec::new(),
            roles: Vec::new(),
            ts: Vec::new(),
            parent: Vec::new(),
            hashes: Col::default(),
            ids: IdArena::default(),
            table: IdTable::new(),
            line_offs: Vec::new(),
            unresolved: Vec::new(),
            broken: Vec::new(),
            compactions: Vec::new(),
            edits: Vec::new(),
            has_forward: false,
            issues: Vec::new(),
            post_issues: Vec::new(),
            tail_issues: Vec::new(),
            image_len: 0,
            next_line: 1,
            mid_line: None,
            children: OnceLock::new(),
            scanned: 0,
            usage: UsageTotals::default(),
            activity: None,
            long_numbers: Vec::new(),
            leaf: None,
            persisted: None,
        }
    }

    /// Room for `more` entries now and about `later` after them: the columns are
    /// allocated once at the estimated final size rather than doubled, whose spare
    /// half was most of the peak memory of an open on short lines (shrunk to fit at
    /// the end of an open). Past the estimate they grow by at least a quarter.
    fn reserve(&mut self, more: usize, later: usize) {
        fn fit<T>(v: &mut Vec<T>, need: usize, want: usize) {
            if v.capacity() < need {
                let target = want.max(need).max(v.capacity() + v.capacity() / 4);
                v.reserve_exact(target - v.len());
            }
        }
        fn fit_col<T: Raw>(v: &mut Col<T>, need: usize, want: usize) {
            if v.capacity() < need {
                let target = want.max(need).max(v.capacity() + v.capacity() / 4);
                v.reserve_exact(target - v.len());
            }
        }
        let n = self.start.len();
        let need = n + more;
        let want = need + later + later / 32;
        if self.start.capacity() < need {
            let target = want.max(self.start.capacity() + self.start.capacity() / 4);
            self.table.reserve(target - n, &self.ids);
            let per_id = self.ids.total_bytes().checked_div(n).map_or(16, |b| b + 1);
            self.ids.reserve_total(target, target * per_id);
        }
        fit(&mut self.start, need, want);
        fit_col(&mut self.lens.short, need, want);
        fit(&mut self.kinds, need, want);
        fit(&mut self.roles, need, want);
        fit(&mut self.ts, need, want);
        fit(&mut self.parent, need, want);
        fit_col(&mut self.hashes, need, want);
        self.table.reserve(more, &self.ids);
    }

    fn shrink(&mut self) {
        self.start.shrink_to_fit();
        self.lens.short.shrink_to_fit();
        self.line_no.shrink_to_fit();
        self.kinds.shrink_to_fit();
        self.roles.shrink_to_fit();
        self.ts.shrink_to_fit();
        self.parent.shrink_to_fit();
        self.hashes.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    /// Scan `[image_len, len)` and apply the loader rules to what it holds. Returns
    /// the number of entries added. The bytes are read and scanned a block at a time
    /// (`lines::scan_blocks`) and each block's candidates are taken in as it comes, so
    /// a scan never holds more than a few blocks' candidates. A file that shrinks
    /// while it is read is [`Error::Stale`], and so is every later call (the index
    /// holds part of the growth).
    pub(crate) fn index_new(&mut self) -> Result<usize> {
        let total = self.src.len();
        self.src.check(total)?;
        // The scan reads through the source while the batch mutates the columns: the
        // source is set aside for the scan's duration.
        let src = std::mem::replace(&mut self.src, Source::from_bytes(Vec::new()));
        let out = self.scan_and_ingest(&src, total);
        self.src = src;
        if let Err(Error::Stale(why)) = &out {
            self.src.fail(why.clone());
        }
        out
    }

    fn scan_and_ingest(&mut self, src: &Source, total: u64) -> Result<usize> {
        let mut batch = Batch {
            before: self.start.len(),
            line: self.next_line,
            ..Batch::default()
        };
        let read = |off: u64, buf: &mut [u8]| src.read_into(off, buf);
        let mut from = self.image_len;
        let mut first_off = self.mid_line;
        if let Some(line_off) = self.mid_line {
            let line = self.next_line;
            let object = !self
                .issues
                .iter()
                .any(|i| i.kind == IssueKind::NotAnObject && i.line == Some(line));
            match lines::continued(&read, line_off, self.image_len, total, object)? {
                lines::Continued::Blank => {}
                lines::Continued::Pending(n) => {
                    batch.tail = Some((self.image_len, false));
                    batch.tail_issues = vec![Issue::at(IssueKind::Truncated, line, line_off).n(n)];
                    from = total;
                }
                lines::Continued::Line(ch, next) => {
                    if !object {
                        // That value is read again with the whole line: its issues go.
                        self.issues.retain(|i| {
                            i.line != Some(line)
                                || !matches!(
                                    i.kind,
                                    IssueKind::NotAnObject | IssueKind::InvalidUtf8
                                )
                        });
                    }
                    self.scanned += next - from;
                    let more = self.ingest_chunk(src, *ch, next - from, &mut batch)?;
                    from = if more { next } else { total };
                    first_off = None;
                }
                lines::Continued::Changed => {
                    return Err(Error::Stale(format!(
                        "another writer continued line {line}, which had no line feed and was \
                         already read, into a line a fresh open reads otherwise; reopen the \
                         session"
                    )))
                }
            }
        }
        let segs = src.segments_from(from);
        batch.total = segs.iter().map(|&(a, b)| b - a).sum();
        let n = segs.len();
        // The ends are kept by an open (the first scan of a file, or the growth after
        // a persisted index), as the fingerprint of what it read.
        let mut ends = self.keep_ends.take();
        for (k, (from, end)) in segs.into_iter().enumerate() {
            let window = src.window(from, end)?;
            let mem = window.as_ref().map(|w| w.bytes());
            let mut done = 0u64;
            lines::scan_blocks(
                mem,
                &read,
                from,
                end,
                first_off.take(),
                k + 1 == n,
                ends.is_some(),
                &mut |mut ch, bytes| {
                    self.scanned += bytes;
                    // Blocks are handed over in file order and the ones still being
                    // scanned start past what is done (a block reads from the byte
                    // before its start): the map's pages behind them can go.
                    done += bytes;
                    if let Some(w) = &window {
                        w.release(done.saturating_sub(lines::BLOCK) as usize);
                    }
                    if let Some(ends) = ends.as_mut().filter(|_| bytes > 0) {
                        ends.take(&mut ch, from + done);
                    }
                    self.ingest_chunk(src, ch, bytes, &mut batch)
                },
            )?;
            if window.is_some_and(|w| w.faulted()) {
                return Err(Error::Stale(format!(
                    "the file shrank below {end} bytes while it was indexed"
                )));
            }
            if batch.stopped {
                break;
            }
        }
        if batch.bad_header || self.header.is_none() {
            return Err(self.header_error(src, batch.first_nonblank));
        }
        let total_newlines = batch.line - self.next_line;
        self.tail_issues.clear();
        self.image_len = total;
        if total_newlines > 0 {
            self.mid_line = None;
        }
        self.next_line = batch.line;
        match batch.tail {
            Some((off, true)) if self.mid_line.is_none() => self.mid_line = Some(off),
            Some((_, true)) => {}
            Some((off, false)) => {
                self.image_len = off;
                self.tail_issues = std::mem::take(&mut batch.tail_issues);
            }
            None => {}
        }
        if let Some(ends) = ends {
            self.fingerprint = ends
                .fingerprint(self.image_len)
                .map(|f| (self.image_len, f));
        }
        if self.needs_migration {
            // Only the header is indexed: what follows is the migration's business.
            let h = batch.header_line;
            if h > 0 {
                self.issues.retain(|i| i.line.is_some_and(|l| l <= h));
            }
            self.tail_issues.retain(|i| i.line.is_some_and(|l| l <= h));
            return Ok(0);
        }
        let before = batch.before;
        let mut relink = batch.relink;
        if self.start.len() > before && !self.unresolved.is_empty() {
            relink |= self.retry_unresolved();
        }
        if relink || (before == 0 && self.has_forward) {
            self.relink_all();
        } else {
            self.check_compactions(before as u32);
            let n = self.start.len() as u32;
            if self
                .children
                .get()
                .is_some_and(|c| n - c.n > 1024 + c.n / 8)
            {
                self.children = OnceLock::new();
            }
        }
        Ok(self.start.len() - before)
    }

    /// Take in one block's chunk (lines numbered from 0): its issues, then rules 6–9
    /// for each candidate, the parent links of the block resolved at its end (a parent
    /// defined in a later block is resolved by `retry_unresolved`). Returns whether to
    /// read on (not once a version 1/2 header is found: only it is indexed).
    fn ingest_chunk(
        &mut self,
        src: &Source,
        mut ch: Chunk,
        bytes: u64,
        b: &mut Batch,
    ) -> Result<bool> {
        let shift = b.line;
        b.line += ch.newlines;
        for c in &mut ch.cands {
            c.line += shift;
        }
        for i in ch.issues.iter_mut().chain(ch.tail_issues.iter_mut()) {
            i.line = i.line.map(|l| l + shift);
        }
        if let Some(mut f) = ch.first_nonblank {
            f.0 += shift;
            b.first_nonblank.get_or_insert(f);
        }
        if ch.tail.is_some() {
            b.tail = ch.tail;
            b.tail_issues = std::mem::take(&mut ch.tail_issues);
        }
        self.issues.append(&mut ch.issues);
        if self.needs_migration {
            b.stopped = true;
            return Ok(false);
        }
        let more = ch.cands.len();
        b.seen += bytes;
        b.cands += more;
        // Entries still to come at the density seen so far.
        let density = b.cands as f64 / b.seen.max(1) as f64;
        let later = (density * b.total.saturating_sub(b.seen) as f64) as usize;
        self.reserve(more, later);
        let mut links: Vec<(u32, Ref)> = Vec::with_capacity(more);
        for (k, c) in ch.cands.iter().enumerate() {
            // The duplicate check misses the cache on nearly every entry of a big
            // file (random slots of a table of many MB): start the load early.
            if let Some(id) = ch.cands.get(k + PREFETCH_AHEAD).and_then(|a| ch.get(a.id)) {
                self.table.prefetch(id);
            }
            if self.header.is_none() {
                if self.title.is_none() && is_title_slot(c, &ch) {
                    self.title = Some(c.start..c.end);
                    continue;
                }
                if c.kind != EntryKind::Session || ch.get(c.id).is_none() {
                    b.bad_header = true;
                    b.stopped = true;
                    return Ok(false);
                }
                self.accept_header(src, c.start..c.end, c.hash)?;
                b.header_line = c.line;
                continue;
            }
            if self.needs_migration {
                b.stopped = true;
                return Ok(false);
            }
            self.accept(c, &ch, &mut links);
        }
        for (e, r) in links {
            let pid = ch.get(r).unwrap_or_default();
            b.relink |= self.link(e, pid);
        }
        Ok(true)
    }

    /// Rule 6 failed: the error naming the first non-blank line and why.
    fn header_error(&self, src: &Source, first_nonblank: Option<(u64, u64, u64, u64)>) -> Error {
        let Some((line, offset, start, end)) = first_nonblank else {
            return Error::InvalidSession {
                problem: HeaderProblem::Empty,
                line: None,
                offset: None,
            };
        };
        match src.read(start, end) {
            Ok(content) => Error::InvalidSession {
                problem: header_problem(&content),
                line: Some(line),
                offset: Some(offset),
            },
            Err(e) => e,
        }
    }

    fn accept_header(&mut self, src: &Source, range: Range<u64>, hash: u32) -> Result<()> {
        let bytes = &src.read(range.start, range.end)?[..];
        if lines::line_hash(bytes) != hash {
            return Err(Error::Stale(HEADER_CHANGED.into()));
        }
        let mut f = scan::Fields::default();
        scan::validate(bytes, &mut f);
        // `_reader.is_old_version`: Pi's `version < 3` (NaN is not below 3).
        self.needs_migration = jsnum::header_version(bytes, f.version) < 3.0;
        self.header = Some(range);
        self.header_hash = hash;
        Ok(())
    }

    fn accept(&mut self, c: &Cand, ch: &Chunk, links: &mut Vec<(u32, Ref)>) {
        let k = c.kind;
        if k == EntryKind::Session {
            self.issues
                .push(Issue::at(IssueKind::ExtraHeader, c.line, c.line_off));
            return;
        }
        if c.may_nest && !self.continues_tree(c, ch) {
            // Rule 3: an object behind torn bytes that may be nested in the torn record
            // is the entry a writer appended there only if it continues the tree.
            self.issues
                .push(Issue::at(IssueKind::TornFragment, c.line, c.start).n(c.end - c.start));
            return;
        }
        let id = match ch.get(c.id) {
            Some(id) if !id.is_empty() => id,
            _ => {
                self.issues
                    .push(Issue::at(IssueKind::MissingId, c.line, c.line_off));
                return;
            }
        };
        let e = self.start.len() as u32;
        if let Some(first) = self.table.insert_new(id, e, &self.ids) {
            self.issues.push(
                Issue::at(IssueKind::DuplicateId, c.line, c.line_off)
                    .ids(vec![id.to_vec()])
                    .n(self.line_no.get(first)),
            );
            return;
        }
        self.start.push(c.start);
        self.lens.push(c.end - c.start);
        self.line_no.push(c.line);
        self.kinds.push(c.kind);
        self.roles.push(c.role);
        self.ts.push(c.ts);
        self.parent.push(NONE);
        self.hashes.push(c.hash);
        self.ids.push(id);
        if c.line_off != c.start {
            self.line_offs.push((e, c.line_off));
        }
        if c.long_number {
            self.long_numbers.push(e);
        }
        if let Some((n, provider, model)) = ch.spent(c) {
            self.usage.add(n, provider, model);
        }
        if let Some(t) = c.activity {
            self.activity = scan::later_activity(self.activity, t);
        }
        match c.parent {
            Ref::Null => {}
            Ref::Str(a, b) if b > a => links.push((e, c.parent)),
            _ => self.issues.push(
                Issue::at(IssueKind::InvalidParent, c.line, c.line_off).ids(vec![id.to_vec()]),
            ),
        }
        if k == EntryKind::Unknown {
            self.issues.push(
                Issue::at(IssueKind::UnknownType, c.line, c.line_off)
                    .ids(vec![id.to_vec()])
                    .text(ch.get(c.extra).map(<[u8]>::to_vec)),
            );
        }
        if k == EntryKind::Compaction {
            self.compactions
                .push((e, ch.get(c.extra).map(<[u8]>::to_vec)));
        }
        if k == EntryKind::ContextEdit {
            self.edits.push((e, ch.get(c.extra).map(<[u8]>::to_vec)));
        }
        if k != EntryKind::Leaf {
            self.leaf = Some(e);
        } else if c.extra == Ref::Null {
            self.leaf = None;
        } else {
            // The target must be an entry accepted before this one (agent-core's
            // `setLeafId` moves only to an existing entry); else the move is reported
            // and moves nothing.
            let target = ch.get(c.extra);
            match target.and_then(|t| self.find(t)).filter(|&t| t != e) {
                Some(t) => self.leaf = Some(t),
                None => {
                    let mut ids = vec![id.to_vec()];
                    ids.extend(target.map(<[u8]>::to_vec));
                    self.issues
                        .push(Issue::at(IssueKind::InvalidLeafTarget, c.line, c.line_off).ids(ids));
                }
            }
        }
    }

    /// Whether `c` continues the tree as an entry a writer appended behind a torn record
    /// does: its `parentId` the id of an entry accepted before it (the leaf the writer
    /// resumed from, or the place it went back to), or `null` while no entry is the
    /// leaf (a parsed first line of another session has `null` too, and is no entry).
    fn continues_tree(&self, c: &Cand, ch: &Chunk) -> bool {
        match c.parent {
            Ref::Null => self.leaf.is_none(),
            Ref::Str(..) => ch
                .get(c.parent)
                .is_some_and(|p| !p.is_empty() && self.find(p).is_some()),
            _ => false,
        }
    }

    /// Resolve entry `e`'s parent id; returns true if a forward link was made.
    fn link(&mut self, e: u32, pid: &[u8]) -> bool {
        if pid == self.ids.get(e) {
            // A cycle of one: a root (as Pi makes it), reported like any other cycle.
            self.issues.push(
                Issue::at(IssueKind::Cycle, self.line_no.get(e), self.line_off(e))
                    .ids(vec![pid.to_vec()])
                    .n(1),
            );
            return false;
        }
        // Pi chains entries: the parent is nearly always the entry just before, and
        // ids are unique, so this skips a (cache-missing) table probe.
        if e > 0 && pid == self.ids.get(e - 1) {
            self.parent[e as usize] = e - 1;
            return false;
        }
        match self.table.find(pid, &self.ids) {
            Some(p) => {
                self.parent[e as usize] = p;
                if p > e {
                    self.has_forward = true;
                    return true;
                }
                false
            }
            None => {
                self.issues.push(
                    Issue::at(
                        IssueKind::MissingParent,
                        self.line_no.get(e),
                        self.line_off(e),
                    )
                    .ids(vec![self.ids.get(e).to_vec(), pid.to_vec()]),
                );
                self.unresolved.push((e, pid.to_vec()));
                false
            }
        }
    }

    /// Entries added by this batch may define parents that entries named before
    /// (earlier batches, or earlier blocks of this one).
    fn retry_unresolved(&mut self) -> bool {
        let mut changed = false;
        let pending = std::mem::take(&mut self.unresolved);
        for (e, pid) in pending {
            match self.table.find(&pid, &self.ids) {
                Some(p) => {
                    self.parent[e as usize] = p;
                    self.has_forward |= p > e;
                    let own = self.ids.get(e).to_vec();
                    self.issues.retain(|i| {
                        !(i.kind == IssueKind::MissingParent && i.ids.first() == Some(&own))
                    });
                    changed = true;
                }
                None => self.unresolved.push((e, pid)),
            }
        }
        changed
    }

    /// Links changed in a way that may close cycles: break them again from scratch,
    /// recheck every compaction and rebuild the child lists.
    fn relink_all(&mut self) {
        for (e, p) in self.broken.drain(..) {
            self.parent[e as usize] = p;
        }
        self.post_issues.clear();
        for (cycle, link) in tree::break_cycles(&mut self.parent) {
            let first = cycle[0];
            self.broken.push((first, link));
            self.post_issues.push(
                Issue::at(
                    IssueKind::Cycle,
                    self.line_no.get(first),
                    self.line_off(first),
                )
                .ids(cycle.iter().map(|&e| self.ids.get(e).to_vec()).collect())
                .n(cycle.len() as u64),
            );
        }
        self.children = OnceLock::new();
        self.check_compactions(0);
    }

    /// Rule 11 for the compactions numbered `from` and later. A few are checked by
    /// walking their ancestors (usually a few steps: without forward links the walk
    /// stops below the kept entry); more than [`WALK_LIMIT`] in one batch (open, a big
    /// refresh, a relink) share one O(n) pass over DFS intervals, since a walk per
    /// compaction is O(depth) and quadratic when many keep a distant entry (the python
    /// backend's `_finish_batch` makes the same choice).
    fn check_compactions(&mut self, from: u32) {
        let i0 = self.compactions.partition_point(|&(e, _)| e < from);
        let spans = (self.compactions.len() - i0 > WALK_LIMIT).then(|| self.intervals());
        for i in i0..self.compactions.len() {
            let (c, ref fk) = self.compactions[i];
            let target = fk.as_deref().and_then(|k| self.table.find(k, &self.ids));
            // A self-retaining compaction (Pi 0.87+) keeps nothing before it: valid.
            let kept = target.is_some_and(|k| {
                k == c
                    || match &spans {
                        // `k` is an ancestor of `c` or `c` itself iff its preorder range holds
                        // `c`'s preorder number.
                        Some((tin, tout)) => {
                            let (k, c) = (k as usize, c as usize);
                            k != c && tin[k] <= tin[c] && tin[c] < tout[k]
                        }
                        None => tree::is_strict_ancestor(&self.parent, k, c, !self.has_forward),
                    }
            });
            if kept {
                continue;
            }
            let mut ids = vec![self.ids.get(c).to_vec()];
            if let Some(k) = fk {
                ids.push(k.clone());
            }
            self.post_issues.push(
                Issue::at(
                    IssueKind::FirstKeptOffPath,
                    self.line_no.get(c),
                    self.line_off(c),
                )
                .ids(ids),
            );
        }
    }

    /// Preorder intervals of the (acyclic) forest (see [`tree::intervals`]), the child
    /// lists built first if entries were added since.
    fn intervals(&mut self) -> (Vec<u32>, Vec<u32>) {
        if self
            .children
            .get()
            .is_some_and(|c| (c.n as usize) < self.len())
        {
            self.children = OnceLock::new();
        }
        let c = self.child_lists();
        tree::intervals(&self.parent, &c.start, &c.list)
    }

    /// The child lists, built now if they are not (of every entry then).
    fn child_lists(&self) -> &Children {
        self.children.get_or_init(|| {
            let (start, list) = tree::children_csr(&self.parent);
            Children {
                start,
                list,
                n: self.parent.len() as u32,
            }
        })
    }
}

impl Index {
    // ------------------------------------------------------------------ growth

    /// Index one line appended to the image (the caller writes `line + "\n"`, after
    /// `"#\n"` if the image ends with a pending piece, after `"\n"` if it ends with
    /// another unterminated one: `_reader.line_prefix`). Returns the new entry, or `None` if
    /// the line was not accepted (reported in `issues`).
    pub fn append_line(&mut self, line: &[u8]) -> Result<Option<u32>> {
        let mut bytes = Vec::with_capacity(line.len() + 3);
        if self.has_pending_tail() {
            // A torn last piece is sealed first, so no part of it can be recovered
            // as an entry once it is a complete line (`lines::TORN_SEAL`).
            bytes.push(lines::TORN_SEAL);
        }
        if self.ends_mid_line() {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        let at = self.src.len() + (bytes.len() - line.len() - 1) as u64;
        self.src.append(self.image_len, &bytes)?;
        let before = self.len();
        self.index_new()?;
        Ok(
            (self.len() > before && self.start[self.len() - 1] >= at)
                .then(|| self.len() as u32 - 1),
        )
    }

    /// Index complete lines appended to the file since `image_len` (read from the
    /// file descriptor held since `open` or [`Index::attach`]; an in-memory image with
    /// no file has nothing to read). Returns how many entries were added. A file now
    /// shorter than `image_len` is [`Error::Stale`]; whether it is still the same file
    /// with the same bytes is the caller's to check.
    pub fn refresh(&mut self) -> Result<usize> {
        self.src.grow(self.image_len)?;
        if self.needs_migration {
            self.image_len = self.src.len();
            return Ok(0);
        }
        self.index_new()
    }

    /// Hold the file at `path` for later refreshes: an in-memory image (`from_image`)
    /// that has been written there. A no-op for an index that holds a file already.
    pub fn attach(&mut self, path: &Path) -> Result<()> {
        self.src.attach(path)
    }

    /// Release the map.
    pub fn close(&mut self) {
        self.src.close();
    }
}

/// Return the heap an open freed to the system: the scan threads' blocks and
/// candidates (allocated and freed in their own malloc arenas, which glibc keeps) and
/// the bytes of a persisted index written were ~9 bytes per entry of private memory
/// after an open (1 GiB session, 422,072 entries: 63 -> 53 B/entry; `malloc_trim`
/// does not show in a profile of the open).
pub(crate) fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of the allocator's arenas; it
    // has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// oh-my-pi writes a fixed-size `{"type":"title","v":1,...}` line before the header
/// (rewritten in place as the title changes): the first object before the header is
/// that slot when its `type` is `"title"` (`_load.Loader`'s rule too).
fn is_title_slot(c: &Cand, ch: &Chunk) -> bool {
    c.kind == EntryKind::Unknown && ch.get(c.extra) == Some(&b"title"[..])
}

/// Why `content`, the first non-blank line of an image without a header, is not one:
/// judged as `_load.header_error` judges it (the first object rule 4 finds counts).
fn header_problem(content: &[u8]) -> HeaderProblem {
    let ls = scan::scan_line(content);
    let (obj, f) = match ls.verdict {
        Verdict::NotObject => return HeaderProblem::NotObject,
        Verdict::Object => (content, ls.fields),
        Verdict::Invalid => match scan::split_line(content) {
            None => return HeaderProblem::NotJson,
            Some(split) => {
                let p = split.pieces[0];
                (&content[p.start..], p.fields)
            }
        },
    };
    let ty = scan::str_bytes(obj, f.ty);
    if ty.is_some_and(|t| EntryKind::from_name(&t) == EntryKind::Session) {
        HeaderProblem::NoStringId
    } else {
        HeaderProblem::WrongType(scan::value_text(obj, f.ty))
    }
}

#[cfg(test)]
mod tests;
