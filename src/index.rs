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

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use crate::col::{Col, Raw};
use crate::context::{self, Plan};
use crate::error::{Error, HeaderProblem, Result};
use crate::ids::{IdArena, IdTable};
use crate::issue::{self, Issue, IssueKind};
use crate::kind::{EntryKind, Role};
use crate::lines::{self, Cand, Chunk, Ref};
use crate::runs::{Lengths, Runs};
use crate::scan::{self, Val, Verdict};
use crate::source::Source;
use crate::tree::{self, NONE};
use crate::usage::UsageTotals;

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
        if self.mid_line.is_some() {
            check_continuation(src, self.image_len, total, self.next_line)?;
        }
        let mut first_off = self.mid_line;
        let read = |off: u64, buf: &mut [u8]| src.read_into(off, buf);
        let segs = src.segments_from(self.image_len);
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
        // `_load.is_old_version`: absent, null or a number below 3 migrates; any other
        // value is taken as current.
        self.needs_migration = match f.version {
            Val::Absent | Val::Null => true,
            Val::Num { start, end } => std::str::from_utf8(&bytes[start..end])
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .is_some_and(|v| v < 3.0),
            _ => false,
        };
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

    // ------------------------------------------------------------------ queries

    /// Number of accepted entries.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// True when no entry was accepted.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The header's `version` is absent or < 3: only the header was indexed.
    pub fn needs_migration(&self) -> bool {
        self.needs_migration
    }

    /// `(st_dev, st_ino)` of the file the index reads (`None` for an owned image): the
    /// manager compares it with what the path names after an open.
    ///
    /// # Errors
    /// `fstat` fails.
    pub fn file_id(&self) -> Result<Option<(u64, u64)>> {
        self.src.file_id()
    }

    /// Bytes of the image consumed (complete lines and an accepted last line).
    pub fn image_len(&self) -> u64 {
        self.image_len
    }

    /// An invalid last piece without `\n` waits for the rest of its line (reported
    /// `truncated`; `image_len` stops before it).
    pub fn has_pending_tail(&self) -> bool {
        self.tail_issues
            .iter()
            .any(|i| i.kind == IssueKind::Truncated)
    }

    /// The image does not end with `\n` (a pending or blank last piece, or an accepted
    /// last line without one): whoever appends writes `\n` first.
    fn ends_mid_line(&self) -> bool {
        self.image_len < self.src.len() || self.mid_line.is_some()
    }

    /// The last accepted entry.
    pub fn last(&self) -> Option<u32> {
        self.len().checked_sub(1).map(|n| n as u32)
    }

    /// The leaf on open (rule 13): after a `leaf` entry its `targetId` (`None`: before
    /// the first entry), after any other entry that entry.
    pub fn file_leaf(&self) -> Option<u32> {
        self.leaf
    }

    /// Entry number of `id`.
    pub fn find(&self, id: &[u8]) -> Option<u32> {
        self.table.find(id, &self.ids)
    }

    /// The id of entry `e` (empty for an out-of-range number).
    pub fn id(&self, e: u32) -> &[u8] {
        self.ids.get(e)
    }

    /// Offset of the physical line holding entry `e`.
    fn line_off(&self, e: u32) -> u64 {
        match self.line_offs.binary_search_by_key(&e, |&(x, _)| x) {
            Ok(i) => self.line_offs[i].1,
            Err(_) => self.start[e as usize],
        }
    }

    /// The header line's bytes (a copy; `pread`, never the map), checked against the
    /// hash it had when scanned.
    ///
    /// # Errors
    /// [`Error::Stale`]: the file shrank, or the line's bytes changed.
    pub fn header(&self) -> Result<Vec<u8>> {
        let Some(r) = self.header.clone() else {
            return Ok(Vec::new());
        };
        self.src.check(r.end)?;
        let bytes = self.src.read(r.start, r.end)?;
        if lines::line_hash(&bytes) != self.header_hash {
            self.distrust_persisted();
            return Err(Error::Stale(HEADER_CHANGED.into()));
        }
        Ok(bytes)
    }

    /// The bytes of oh-my-pi's title slot (a `title` object before the header), as the
    /// file holds them now (the slot is rewritten in place while oh-my-pi runs: no hash
    /// is checked); `None` without one.
    ///
    /// # Errors
    /// [`Error::Stale`]: the file shrank.
    pub fn title_slot(&self) -> Result<Option<Vec<u8>>> {
        let Some(r) = self.title.clone() else {
            return Ok(None);
        };
        self.src.check(r.end)?;
        Ok(Some(self.src.read(r.start, r.end)?))
    }

    /// The image length of the open and the first and last `lines::FINGERPRINT` bytes
    /// of that many (as `_filestate.indexed_ends` reads them from a file), as the scan
    /// read them; `None` for an image in memory, or when the scan did not keep them (a
    /// pending last piece longer than the fingerprint).
    pub fn fingerprint(&self) -> Option<(u64, &[u8])> {
        self.fingerprint.as_ref().map(|(n, f)| (*n, &f[..]))
    }

    /// The byte range of entry `e`'s line (no CR/LF); empty for an unknown number.
    fn range(&self, e: u32) -> (u64, u64) {
        let e = e as usize;
        match (self.start.get(e), self.lens.get(e)) {
            (Some(&s), Some(l)) => (s, s + l),
            _ => (0, 0),
        }
    }

    /// Length of entry `e`'s line (0 for an unknown number).
    pub fn line_len(&self, e: u32) -> usize {
        let (s, t) = self.range(e);
        (t - s) as usize
    }

    /// Copy entry `e`'s line into `buf` (of [`Index::line_len`] bytes) with `pread`
    /// (or from memory); a file that shrank gives [`Error::Stale`], never a SIGBUS.
    pub fn read_line(&self, e: u32, buf: &mut [u8]) -> Result<()> {
        let (s, t) = self.range(e);
        if buf.len() as u64 != t - s {
            return Err(Error::Stale(format!(
                "line of entry {e} is {} bytes",
                t - s
            )));
        }
        self.src.read_into(s, buf)?;
        self.verify(e, buf)
    }

    /// Entry `e`'s bytes as read now must be the bytes indexed: a line rewritten in
    /// place since (same size, both ends of the file kept) is [`Error::Stale`].
    fn verify(&self, e: u32, bytes: &[u8]) -> Result<()> {
        match self.hashes.get(e as usize) {
            Some(&h) if h != lines::line_hash(bytes) => {
                self.distrust_persisted();
                Err(Error::Stale(format!(
                    "the line of entry {} changed in the file since it was read",
                    String::from_utf8_lossy(self.ids.get(e))
                )))
            }
            _ => Ok(()),
        }
    }

    /// Entry `e`'s line as a copy (see [`Index::read_line`]).
    #[cfg(test)]
    pub fn line(&self, e: u32) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.line_len(e)];
        self.read_line(e, &mut v)?;
        Ok(v)
    }

    /// Call `f` with the line of each entry of `es`, in order (adjacent lines are read
    /// in one `pread`; unknown numbers give empty lines).
    pub fn for_each_line(&self, es: &[u32], mut f: impl FnMut(&[u8])) -> Result<()> {
        let ranges: Vec<(u64, u64)> = es.iter().map(|&e| self.range(e)).collect();
        let mut k = 0;
        let mut bad = Ok(());
        self.src.read_each(&ranges, |b| {
            if bad.is_ok() {
                bad = es.get(k).map_or(Ok(()), |&e| self.verify(e, b));
            }
            k += 1;
            f(b)
        })?;
        bad
    }

    /// Children of `e` in file order.
    pub fn children(&self, e: u32) -> Vec<u32> {
        if e as usize >= self.len() {
            return Vec::new();
        }
        let lists = self.child_lists();
        let mut v = if e < lists.n {
            let (a, b) = (lists.start[e as usize], lists.start[e as usize + 1]);
            lists.list[a as usize..b as usize].to_vec()
        } else {
            Vec::new()
        };
        for c in lists.n..self.len() as u32 {
            if self.parent[c as usize] == e {
                v.push(c);
            }
        }
        v
    }

    /// Entries from the root down to `e` (empty for an unknown number).
    pub fn path(&self, e: u32) -> Vec<u32> {
        tree::path(&self.parent, e)
    }

    /// The `getTree` shape (`tree::shape`): roots in file order, children oldest
    /// first as CSR.
    pub fn tree(&self) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        tree::shape(&self.parent, &self.ts)
    }

    /// The context plan at leaf `e` (`None`, or an unknown number: an empty plan).
    pub fn plan(&self, leaf: Option<u32>) -> Plan {
        match leaf.filter(|&e| (e as usize) < self.len()) {
            None => Plan::default(),
            Some(e) => context::plan(
                &self.path(e),
                &self.kinds,
                &self.roles,
                |c| self.named_by(&self.compactions, c),
                |x| self.named_by(&self.edits, x),
            ),
        }
    }

    /// The entry that the id an entry of `column` holds (a compaction's
    /// `firstKeptEntryId`, a context edit's `targetId`) names, if any.
    fn named_by(&self, column: &[(u32, Option<Vec<u8>>)], e: u32) -> Option<u32> {
        let i = column.binary_search_by_key(&e, |(x, _)| *x).ok()?;
        self.find(column[i].1.as_deref()?)
    }

    /// Entries of kind `k` numbered `from` or later, in file order (labels,
    /// session_info, ...: callers that keep what they folded ask only for new ones).
    pub fn entries_of_kind(&self, k: EntryKind, from: u32) -> Vec<u32> {
        (from.min(self.len() as u32)..self.len() as u32)
            .filter(|&e| self.kinds[e as usize] == k)
            .collect()
    }

    // ---------------------------------------------------------------- structure

    /// The parent column: `parents()[e]` is `e`'s parent after cycle breaking, [`NONE`]
    /// for a root.
    pub fn parents(&self) -> &[u32] {
        &self.parent
    }

    /// The kind column (file order).
    pub fn kinds(&self) -> &[EntryKind] {
        &self.kinds
    }

    /// The role column (file order; [`Role::None`] for entries that are not messages).
    pub fn roles(&self) -> &[Role] {
        &self.roles
    }

    /// The timestamp column: `Date.parse(timestamp)` in ms, `i64::MIN` when it does not
    /// parse (or is not a string).
    pub fn timestamps(&self) -> &[i64] {
        &self.ts
    }

    /// The parent of `e` (`None` for a root or an unknown number).
    pub fn parent_of(&self, e: u32) -> Option<u32> {
        self.parent.get(e as usize).copied().filter(|&p| p != NONE)
    }

    /// The kind of `e` (`None` for an unknown number).
    pub fn kind_of(&self, e: u32) -> Option<EntryKind> {
        self.kinds.get(e as usize).copied()
    }

    /// Entries without children, in file order.
    pub fn leaves(&self) -> Vec<u32> {
        let mut has_child = vec![false; self.len()];
        for &p in &self.parent {
            if p != NONE {
                has_child[p as usize] = true;
            }
        }
        (0..self.len() as u32)
            .filter(|&e| !has_child[e as usize])
            .collect()
    }

    /// Entries whose id starts with `prefix` (bytes of the decoded id): the first
    /// `limit` of them in file order, and how many there are in all.
    pub fn with_prefix(&self, prefix: &[u8], limit: usize) -> (Vec<u32>, usize) {
        let mut first = Vec::new();
        let mut count = 0;
        for e in 0..self.len() as u32 {
            if self.ids.get(e).starts_with(prefix) {
                if first.len() < limit {
                    first.push(e);
                }
                count += 1;
            }
        }
        (first, count)
    }

    /// The `message.role` strings the role column holds as [`Role::Other`], read from
    /// those entries' lines (rare: Pi writes seven roles): `(entry, role bytes)` in file
    /// order. A line whose role is no longer a string (rewritten) is left out.
    pub fn other_roles(&self) -> Result<Vec<(u32, Vec<u8>)>> {
        let es: Vec<u32> = (0..self.len() as u32)
            .filter(|&e| self.roles[e as usize] == Role::Other)
            .collect();
        let mut out = Vec::with_capacity(es.len());
        let mut k = 0;
        self.for_each_line(&es, |line| {
            let mut f = scan::Fields::default();
            if scan::validate(line, &mut f) == Verdict::Object {
                if let Some(r) = scan::str_bytes(line, f.role) {
                    out.push((es[k], r.into_owned()));
                }
            }
            k += 1;
        })?;
        Ok(out)
    }

    /// The entries of `es` whose line has a number with a run of `scan::LONG_DIGITS`
    /// digits not after a `.` (where orjson may not be exact), in the order of `es`:
    /// `_jsonl.decode_line` looks for such runs only in these lines.
    pub fn long_numbers(&self, es: &[u32]) -> Vec<u32> {
        if self.long_numbers.is_empty() {
            return Vec::new();
        }
        es.iter()
            .copied()
            .filter(|e| self.long_numbers.binary_search(e).is_ok())
            .collect()
    }

    /// The fields Pi's label rule reads (`_labels.apply_labels`) from the label entries
    /// numbered `from` or later, in file order: `(entry, [targetId, label, timestamp])`
    /// ([`Value`]; `None`: key absent). Only those lines are read (each checked against
    /// its hash), and only these values leave them.
    pub fn label_fields(&self, from: u32) -> Result<Vec<LabelFields>> {
        let es = self.entries_of_kind(EntryKind::Label, from);
        let mut out = Vec::with_capacity(es.len());
        let mut k = 0;
        let mut changed = false;
        self.for_each_line(&es, |line| {
            let mut f = scan::Fields::default();
            if scan::validate(line, &mut f) == Verdict::Object {
                let v = |v| Value::of(line, v);
                out.push((es[k], [v(f.target_id), v(f.label), v(f.timestamp)]));
            } else {
                changed = true;
            }
            k += 1;
        })?;
        if changed {
            // Unreachable unless the hash missed a rewrite: a line no longer an object.
            return Err(Error::Stale(
                "a label line changed in the file since it was read".into(),
            ));
        }
        Ok(out)
    }

    /// Token and cost totals of every assistant message on every branch
    /// ([`usage::UsageTotals`]), summed as the entries were indexed: nothing is read.
    /// `None` when a line holds a number that cannot be summed exactly here (the
    /// caller sums in Python).
    pub fn usage_totals(&self) -> Option<&UsageTotals> {
        self.usage.exact.then_some(&self.usage)
    }

    /// Heap bytes each part of the index holds (capacities; the benchmarks' breakdown
    /// of memory per entry).
    pub fn memory(&self) -> Vec<(&'static str, usize)> {
        fn cap<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let issues: usize = [&self.issues, &self.post_issues, &self.tail_issues]
            .iter()
            .map(|v| cap(v) + v.iter().map(Issue::heap_bytes).sum::<usize>())
            .sum();
        let sparse = cap(&self.line_offs)
            + cap(&self.unresolved)
            + self
                .unresolved
                .iter()
                .map(|(_, p)| p.capacity())
                .sum::<usize>()
            + cap(&self.broken)
            + cap(&self.compactions)
            + cap(&self.edits)
            + [&self.compactions, &self.edits]
                .iter()
                .flat_map(|c| c.iter())
                .map(|(_, k)| k.as_ref().map_or(0, Vec::capacity))
                .sum::<usize>()
            + cap(&self.long_numbers);
        vec![
            ("start", cap(&self.start)),
            ("length", self.lens.heap_bytes()),
            ("line", self.line_no.heap_bytes()),
            ("kind", cap(&self.kinds)),
            ("role", cap(&self.roles)),
            ("timestamp", cap(&self.ts)),
            ("parent", cap(&self.parent)),
            ("hash", self.hashes.heap_bytes()),
            ("ids", self.ids.heap_bytes()),
            ("id_table", self.table.heap_bytes()),
            (
                "children",
                self.children
                    .get()
                    .map_or(0, |c| cap(&c.start) + cap(&c.list)),
            ),
            ("issues", issues),
            ("sparse", sparse),
        ]
    }

    /// `load_report`: by line, then rule order.
    pub fn issues(&self) -> Vec<Issue> {
        let mut v: Vec<Issue> = self
            .issues
            .iter()
            .chain(&self.post_issues)
            .chain(&self.tail_issues)
            .cloned()
            .collect();
        issue::sort(&mut v);
        v
    }

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

/// The per-entry columns of the `entries` table that the index holds, in Arrow's
/// layouts (docs/TABLES.md): little-endian values, validity and boolean bitmaps LSB
/// first (1 = valid / true), strings as `i32` offsets (n + 1) and UTF-8 data.
pub struct Columns {
    /// Entry ids, as `i32` offsets and their bytes (a lone surrogate's bytes become
    /// U+FFFD, as Python's `decode("utf-8", "replace")` of its `surrogatepass` form).
    pub id_offsets: Vec<u8>,
    pub id_data: Vec<u8>,
    /// `i64`: 1-based line, byte offset and length of each entry's JSON text.
    pub line: Vec<u8>,
    pub offset: Vec<u8>,
    pub length: Vec<u8>,
    /// `i32` parent entry numbers (0 under a null) and their validity (roots null).
    pub parent: Vec<u8>,
    pub parent_valid: Vec<u8>,
    /// `i32` depth below its root (a root is 0).
    pub depth: Vec<u8>,
    /// On the path root → leaf (a bitmap).
    pub on_path: Vec<u8>,
    /// `i64` `Date.parse` of the entry's `timestamp` in ms (0 under a null), validity.
    pub timestamp: Vec<u8>,
    pub timestamp_valid: Vec<u8>,
}

/// A bitmap of `n` bits, set where `f` holds.
fn bitmap(n: usize, f: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut b = vec![0u8; n.div_ceil(8)];
    for i in (0..n).filter(|&i| f(i)) {
        b[i / 8] |= 1 << (i % 8);
    }
    b
}

impl Index {
    /// The columns of [`Columns`] for every entry, `leaf` (if any) marking the path.
    /// Fails only if the ids hold more than 2 GiB (`i32` offsets).
    pub fn columns(&self, leaf: Option<u32>) -> Result<Columns> {
        let n = self.len();
        let mut id_offsets = Vec::with_capacity(4 * (n + 1));
        let mut id_data = Vec::with_capacity(n * 8);
        id_offsets.extend_from_slice(&0i32.to_le_bytes());
        for e in 0..n as u32 {
            let id = self.ids.get(e);
            match simdutf8::basic::from_utf8(id) {
                Ok(_) => id_data.extend_from_slice(id),
                Err(_) => id_data.extend_from_slice(String::from_utf8_lossy(id).as_bytes()),
            }
            let end = i32::try_from(id_data.len())
                .map_err(|_| Error::Stale("entry ids exceed 2 GiB".to_string()))?;
            id_offsets.extend_from_slice(&end.to_le_bytes());
        }
        let le64 = |v: &mut dyn Iterator<Item = i64>| v.flat_map(i64::to_le_bytes).collect();
        let path = leaf.map_or_else(Vec::new, |e| self.path(e));
        let mut on_path = vec![0u8; n.div_ceil(8)];
        for e in path {
            on_path[e as usize / 8] |= 1 << (e % 8);
        }
        let ts = |e: usize| self.ts[e] != i64::MIN;
        Ok(Columns {
            id_offsets,
            id_data,
            line: le64(&mut self.line_no.iter().map(|l| l as i64)),
            offset: le64(&mut self.start.iter().map(|&s| s as i64)),
            length: le64(&mut (0..n).map(|e| self.lens.get(e).unwrap_or(0) as i64)),
            parent: self
                .parent
                .iter()
                .flat_map(|&p| (if p == NONE { 0 } else { p as i32 }).to_le_bytes())
                .collect(),
            parent_valid: bitmap(n, |e| self.parent[e] != NONE),
            depth: tree::depths(&self.parent)
                .into_iter()
                .flat_map(|d| (d as i32).to_le_bytes())
                .collect(),
            on_path,
            timestamp: le64(&mut (0..n).map(|e| if ts(e) { self.ts[e] } else { 0 })),
            timestamp_valid: bitmap(n, ts),
        })
    }
}

impl Index {
    /// The decoded columns of entries `a..b` (`rows::Rows`: the `entries` and
    /// `tool_calls` tables' columns that are not the index's), from their lines as read
    /// now.
    ///
    /// # Errors
    /// [`Error::Stale`]: a line changed since it was indexed; I/O errors.
    pub fn rows(&self, a: u32, b: u32) -> Result<crate::rows::Rows> {
        let es: Vec<u32> = (a..b.min(self.len() as u32)).collect();
        let mut rows = crate::rows::Rows::default();
        let mut k = 0;
        let mut bad = Ok(());
        let ranges: Vec<(u64, u64)> = es.iter().map(|&e| self.range(e)).collect();
        self.src.read_each(&ranges, |line| {
            if bad.is_ok() {
                bad = es.get(k).map_or(Ok(()), |&e| self.verify(e, line));
            }
            k += 1;
            // A changed line is never decoded: the rows are discarded with the error.
            rows.push(if bad.is_ok() { line } else { b"{}" });
        })?;
        bad.map(|()| rows)
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

/// Bytes appended after an accepted line that had no `\n` must start with blanks up to
/// a `\n`: anything else means another writer glued its line onto that one, which a
/// fresh open reads as one fused line (rule 4) and no refresh can turn the accepted
/// entry into. `_load.Loader.feed` has the same check.
fn check_continuation(src: &Source, from: u64, total: u64, line: u64) -> Result<()> {
    let mut buf = [0u8; 4096];
    let mut at = from;
    while at < total {
        let n = ((total - at) as usize).min(buf.len());
        src.read_into(at, &mut buf[..n])?;
        for &b in &buf[..n] {
            match b {
                b'\n' => return Ok(()),
                b' ' | b'\t' | b'\r' => {}
                _ => {
                    return Err(Error::Stale(format!(
                        "another writer continued line {line}, which had no line feed and was \
                         already read; reopen the session"
                    )))
                }
            }
        }
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::Total;

    const H: &str =
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/"}"#;

    fn ix(lines: &[&str]) -> Index {
        let mut img = String::from(H);
        img.push('\n');
        for l in lines {
            img.push_str(l);
            img.push('\n');
        }
        Index::from_image(img.into_bytes()).unwrap()
    }

    fn e(id: &str, parent: Option<&str>, ty: &str) -> String {
        let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"{ty}","id":"{id}","parentId":{p},"timestamp":"2025-01-01T00:00:00Z"}}"#
        )
    }

    fn kinds(ix: &Index) -> Vec<(&'static str, Option<u64>)> {
        ix.issues()
            .iter()
            .map(|i| (i.kind.as_str(), i.line))
            .collect()
    }

    #[test]
    fn cycles_break_at_the_earliest_entry_in_linear_time() {
        let n = 200_000;
        let mut lines: Vec<String> = (0..n)
            .map(|i| e(&format!("e{i}"), Some(&format!("e{}", i + 1)), "custom"))
            .collect();
        lines.push(e("x", Some("e0"), "custom"));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let ix = ix(&refs);
        // e{n-1} names a missing e{n}; no cycle. Now close one: last -> first.
        assert_eq!(ix.path(ix.find(b"x").unwrap()).len(), n + 1);
        let cyc = ix_cycle();
        assert_eq!(kinds(&cyc), vec![("cycle", Some(2))]);
        assert_eq!(cyc.path(0), vec![0]); // the breaker is a root
        assert_eq!(cyc.path(2), vec![0, 1, 2]);
    }

    fn ix_cycle() -> Index {
        ix(&[
            &e("a", Some("c"), "custom"),
            &e("b", Some("a"), "custom"),
            &e("c", Some("b"), "custom"),
        ])
    }

    #[test]
    fn header_rules() {
        assert!(matches!(
            Index::from_image(b"\n \n".to_vec()),
            Err(Error::InvalidSession { line: None, .. })
        ));
        let bad = format!("garbage\n{}\n", e("a", None, "message"));
        assert!(matches!(
            Index::from_image(bad.into_bytes()),
            Err(Error::InvalidSession {
                line: Some(1),
                offset: Some(0),
                ..
            })
        ));
        let ok = format!("garbage\n{H}\n{}\n{H}\n", e("a", None, "message"));
        let ix = Index::from_image(ok.into_bytes()).unwrap();
        assert_eq!(
            kinds(&ix),
            vec![("invalid_json", Some(1)), ("extra_header", Some(4))]
        );
        let old = b"{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\"}\nx\n".to_vec();
        let ix = Index::from_image(old).unwrap();
        assert!(ix.needs_migration() && ix.is_empty() && ix.issues().is_empty());
        let bom = format!("\u{feff}{H}\r\n{}\r\n", e("a", None, "message"));
        let ix = Index::from_image(bom.into_bytes()).unwrap();
        assert_eq!(kinds(&ix), vec![("bom", Some(1))]);
        assert!(ix.line(0).unwrap().ends_with(b"}"));
    }

    #[test]
    fn header_problems_are_judged_like_the_python_backend() {
        let problem = |img: &[u8]| match Index::from_image(img.to_vec()) {
            Err(Error::InvalidSession {
                problem,
                line,
                offset,
            }) => (problem.code(), line, offset),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted {:?}", String::from_utf8_lossy(img)),
        };
        let at = |code: &str, line, offset| (code.to_string(), Some(line), Some(offset));
        assert_eq!(problem(b""), ("empty".to_string(), None, None));
        assert_eq!(problem(b" \n\r\n"), ("empty".to_string(), None, None));
        assert_eq!(problem(b"\n  \ngarbage\n"), at("not_json", 3, 4));
        assert_eq!(problem(b"\xef\xbb\xbf[1]\r\n"), at("not_object", 1, 0));
        assert_eq!(problem(b"{\"type\":\"sess"), at("not_json", 1, 0));
        assert_eq!(problem(br#"{"type":"session"}"#), at("no_id", 1, 0));
        assert_eq!(
            problem(br#"{"type":"sess\u0069on","id":5}"#),
            at("no_id", 1, 0)
        );
        assert_eq!(problem(br#"{"id":"a"}"#), at("type", 1, 0));
        for (ty, code) in [
            (r#""message""#, r#"type:"message""#),
            (r#""m\u00e9""#, r#"type:"m\u00e9""#),
            ("null", "type:null"),
            ("true", "type:true"),
            ("-1.5e5", "type:-1.5e5"),
            (
                r#" {"a" : [1, "]}\"", {}]} "#,
                r#"type:{"a" : [1, "]}\"", {}]}"#,
            ),
        ] {
            let line = format!(r#"{{"type":{ty},"id":"a"}}"#);
            assert_eq!(problem(line.as_bytes()), at(code, 1, 0), "{ty}");
        }
        // An entry glued before a header: the first object of the line counts.
        let fused = format!("{}\r{H}\n", e("a", None, "message"));
        assert_eq!(problem(fused.as_bytes()), at(r#"type:"message""#, 1, 0));
        let torn = format!("{{\"type\":\"sess{}\n", e("a", None, "message"));
        assert_eq!(problem(torn.as_bytes()), at(r#"type:"message""#, 1, 0));
        // A header glued to the next line (by a lone CR): both are read.
        let glued = format!("{H}\r{}\n", e("a", None, "message"));
        let ix = Index::from_image(glued.into_bytes()).unwrap();
        assert_eq!((ix.len(), ix.id(0)), (1, &b"a"[..]));
        assert!(kinds(&ix).is_empty());
        // The first non-blank line is named even when a later object is the culprit.
        let later = format!("oops\n{}\n", e("a", None, "message"));
        assert_eq!(problem(later.as_bytes()), at("not_json", 1, 0));
    }

    #[test]
    fn context_plan_honours_latest_compaction() {
        let comp = |id: &str, parent: &str, kept: &str| {
            format!(
                r#"{{"type":"compaction","id":"{id}","parentId":"{parent}","firstKeptEntryId":"{kept}"}}"#
            )
        };
        let asst = r#"{"type":"message","id":"a2","parentId":"u1","message":{"role":"assistant"}}"#;
        let ix = ix(&[
            &e("u1", None, "message"),
            asst,
            &e("t", Some("a2"), "thinking_level_change"),
            &comp("c1", "t", "u1"),
            &e("u3", Some("c1"), "message"),
            &comp("c2", "u3", "a2"),
            &e("m", Some("c2"), "model_change"),
            &e("u4", Some("m"), "branch_summary"),
            &comp("c3", "u4", "zz"),
        ]);
        let p = ix.plan(ix.find(b"u4"));
        assert_eq!(p.compaction, ix.find(b"c2"));
        assert_eq!(p.messages, vec![1, 4, 7]); // a2, u3 (kept from a2), then u4
        assert_eq!(p.thinking, ix.find(b"t"));
        assert_eq!(p.model, ix.find(b"m"));
        let p = ix.plan(ix.find(b"c3"));
        assert!(p.messages.is_empty()); // firstKept off path: summary only
        assert_eq!(kinds(&ix), vec![("first_kept_off_path", Some(10))]);
        assert_eq!(ix.plan(None), Plan::default());
    }

    #[test]
    fn leaf_entries_move_the_leaf_on_open_and_on_append() {
        let leaf = |id: &str, parent: &str, target: &str| {
            format!(r#"{{"type":"leaf","id":"{id}","parentId":"{parent}","targetId":{target}}}"#)
        };
        let tools =
            r#"{"type":"active_tools_change","id":"t","parentId":"a","activeToolNames":["read"]}"#;
        let mut ix = ix(&[
            &e("a", None, "message"),
            tools,
            &e("b", Some("t"), "message"),
            &leaf("L1", "b", r#""t""#),
        ]);
        assert_eq!(ix.file_leaf(), ix.find(b"t"));
        assert_eq!(ix.last(), ix.find(b"L1"));
        assert!(kinds(&ix).is_empty());
        assert_eq!(ix.plan(ix.find(b"b")).active_tools, ix.find(b"t"));
        assert_eq!(ix.plan(ix.find(b"a")).active_tools, None);
        // null: before the first entry; then an entry is the leaf again.
        ix.append_line(leaf("L2", "t", "null").as_bytes()).unwrap();
        assert_eq!(ix.file_leaf(), None);
        ix.append_line(e("c", None, "message").as_bytes()).unwrap();
        assert_eq!(ix.file_leaf(), ix.find(b"c"));
        // A target that is no earlier entry (a later one, itself, none) or not a string
        // is reported and moves nothing.
        for (id, target) in [("M1", r#""zz""#), ("M2", "5"), ("M3", r#""""#)] {
            ix.append_line(leaf(id, "c", target).as_bytes()).unwrap();
        }
        ix.append_line(leaf("L4", "c", r#""L4""#).as_bytes())
            .unwrap();
        ix.append_line(br#"{"type":"leaf","id":"L5","parentId":"c"}"#)
            .unwrap();
        assert_eq!(ix.file_leaf(), ix.find(b"c"));
        let bad: Vec<_> = ix
            .issues()
            .iter()
            .filter(|i| i.kind == IssueKind::InvalidLeafTarget)
            .map(|i| i.ids.clone())
            .collect();
        assert_eq!(bad.last(), Some(&vec![b"L5".to_vec()]));
        assert!(bad.contains(&vec![b"L4".to_vec(), b"L4".to_vec()]));
    }

    #[test]
    fn structure_queries() {
        let msg = |id: &str, parent: Option<&str>, role: &str| {
            let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"{role}"}}}}"#
            )
        };
        let ix = ix(&[
            &msg("ab1", None, "user"),
            &msg("ab2", Some("ab1"), "hookMessage"),
            &msg("ac3", Some("ab1"), "assistant"),
            &e("x", Some("ac3"), "weird"),
            &e("y", Some("zz"), "label"),
        ]);
        assert_eq!(ix.parent_of(1), Some(0));
        assert_eq!(ix.parent_of(4), None); // an orphan is a root
        assert_eq!(ix.parent_of(9), None);
        assert_eq!(ix.kind_of(3), Some(EntryKind::Unknown));
        assert_eq!(ix.kind_of(4), Some(EntryKind::Label));
        assert_eq!(ix.leaves(), vec![1, 3, 4]);
        assert_eq!(ix.with_prefix(b"ab", 1), (vec![0], 2));
        assert_eq!(ix.with_prefix(b"a", 5), (vec![0, 1, 2], 3));
        assert_eq!(ix.with_prefix(b"q", 5), (vec![], 0));
        assert_eq!(
            ix.other_roles().unwrap(),
            vec![(1, b"hookMessage".to_vec())]
        );
        assert_eq!(ix.roles()[2], Role::Assistant);
        assert_eq!(ix.entries_of_kind(EntryKind::Message, 1), vec![1, 2]);
        assert_eq!(
            ix.entries_of_kind(EntryKind::Message, 99),
            Vec::<u32>::new()
        );
        let t = ix.usage_totals().unwrap();
        assert_eq!(t.messages, 1);
    }

    #[test]
    fn label_fields_are_the_json_texts_of_the_label_lines() {
        let ix = ix(&[
            &e("a", None, "message"),
            r#"{"type":"label","id":"l1","parentId":"a","targetId":"a","label":"x\u0079","timestamp":"t"}"#,
            r#"{"type":"label","id":"l2","parentId":"l1","targetId":7,"label":{"k":[1]}}"#,
            r#"{"label":null,"type":"label","id":"l3","parentId":"l2","label":"last","targetId":"a"}"#,
        ]);
        let v = |t: &str| match t.strip_prefix('"') {
            _ if t.is_empty() => None,
            Some(s) => Some(Value::Str(s.as_bytes().to_vec())),
            None => Some(Value::Json(t.as_bytes().to_vec())),
        };
        let got: Vec<_> = ix.label_fields(0).unwrap().into_iter().collect();
        assert_eq!(
            got,
            vec![
                (1, [v("\"a"), v("\"xy"), v("\"t")]),
                (2, [v("7"), v(r#"{"k":[1]}"#), None]),
                (3, [v("\"a"), v("\"last"), None]),
            ]
        );
        assert_eq!(ix.label_fields(3).unwrap().len(), 1);
        assert!(ix.label_fields(4).unwrap().is_empty());
    }

    #[test]
    fn long_numbers_are_the_accepted_entries_with_long_digit_runs() {
        let big = |id: &str, v: &str| {
            format!(r#"{{"type":"custom","id":"{id}","parentId":null,"data":{v}}}"#)
        };
        let mut ix = ix(&[
            &big("a", "1"),
            &big("b", "12345678901234567890"),
            &big("b", "1"),
            &big("c", "[0.12345678901234567890]"),
            &format!("{{\"x\":{}", big("d", "{\"k\":-99999999999999999999}")),
        ]);
        assert_eq!(ix.long_numbers(&[0, 1, 2, 3]), vec![1, 3]);
        assert_eq!(ix.id(3), b"d"); // recovered behind a torn fragment
        ix.append_line(big("e", "1e0000000000000000009").as_bytes())
            .unwrap();
        assert_eq!(ix.long_numbers(&[4, 3, 0]), vec![4, 3]);
    }

    #[test]
    fn usage_totals_count_accepted_assistant_entries_as_they_are_indexed() {
        let spend = |id: &str, input: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":null,"message":{{"role":"assistant","provider":"p","usage":{{"input":{input}}}}}}}"#
            )
        };
        let mut ix = ix(&[&spend("a", "1"), &spend("a", "10"), &spend("b", "2")]);
        let t = ix.usage_totals().unwrap();
        assert_eq!((t.messages, t.tokens[0]), (2, Total::Int(3))); // the duplicate id is skipped
        ix.append_line(spend("c", "0.5").as_bytes()).unwrap();
        let t = ix.usage_totals().unwrap();
        assert_eq!((t.messages, t.tokens[0]), (3, Total::Float(3.5)));
        assert_eq!(t.models, vec![((Some(b"\"p\"".to_vec()), None), 3)]);
        ix.append_line(spend("d", &"9".repeat(40)).as_bytes())
            .unwrap();
        assert!(ix.usage_totals().is_none()); // beyond 128 bits: Python sums it
    }

    /// A temporary session file holding `img` (removed on drop).
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(tag: &str, img: &[u8]) -> TempFile {
            let p = std::env::temp_dir().join(format!(
                "sessiontree-{tag}-{}-{:?}.jsonl",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::write(&p, img).unwrap();
            TempFile(p)
        }
        fn append(&self, bytes: &[u8]) {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&self.0)
                .unwrap();
            f.write_all(bytes).unwrap();
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn session(n: usize, pad: usize) -> Vec<u8> {
        let mut img = format!("{H}\n");
        for i in 0..n {
            let p = if i == 0 {
                None
            } else {
                Some(format!("e{}", i - 1))
            };
            let l = e(&format!("e{i}"), p.as_deref(), "message");
            img.push_str(&l[..l.len() - 1]);
            img.push_str(&format!(r#","pad":"{}"}}"#, "x".repeat(pad)));
            img.push('\n');
        }
        img.into_bytes()
    }

    #[test]
    fn refresh_reads_and_scans_only_new_bytes() {
        // The same one-line growth on a 0.1 MB and a 16 MB file costs the same bytes:
        // read with pread and scanned, nothing else.
        for (tag, n) in [("small", 100), ("large", 16_000)] {
            let f = TempFile::new(tag, &session(n, 1000));
            let mut ix = Index::open(&f.0).unwrap();
            let read0 = ix.src.file_read();
            let scanned0 = ix.scanned;
            let line = e("new", Some(&format!("e{}", n - 1)), "message");
            f.append(format!("{line}\n").as_bytes());
            assert_eq!(ix.refresh().unwrap(), 1);
            let want = line.len() as u64 + 1;
            assert_eq!(ix.src.file_read(), read0 + want, "{tag}");
            assert_eq!(ix.scanned - scanned0, want, "{tag}");
            assert_eq!(ix.path(n as u32).len(), n + 1);
            assert_eq!(ix.line(n as u32).unwrap(), line.as_bytes());
            assert_eq!(ix.refresh().unwrap(), 0);
            assert_eq!(ix.scanned - scanned0, want, "{tag}");
        }
    }

    #[test]
    fn refresh_reads_the_held_file_only() {
        // Identity is the caller's to check: a path replaced or removed does not change
        // what the index reads; a held file cut below `image_len` is stale.
        let f = TempFile::new("held", &session(5, 10));
        let mut ix = Index::open(&f.0).unwrap();
        let first = ix.line(0).unwrap();
        let other = TempFile::new("other", &session(9, 10));
        std::fs::rename(&other.0, &f.0).unwrap();
        assert_eq!(ix.refresh().unwrap(), 0);
        std::fs::remove_file(&f.0).unwrap();
        assert_eq!(ix.refresh().unwrap(), 0);
        assert_eq!(ix.line(0).unwrap(), first);
        let g = TempFile::new("cut", &session(5, 10));
        let mut ix = Index::open(&g.0).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&g.0).unwrap();
        file.set_len(ix.image_len() - 1).unwrap();
        assert!(matches!(ix.refresh(), Err(Error::Stale(_))));
    }

    #[test]
    fn an_image_attached_to_its_file_refreshes_from_it() {
        let img = session(3, 10);
        let mut ix = Index::from_image(img.clone()).unwrap();
        assert_eq!(ix.refresh().unwrap(), 0); // no file: nothing to read
        let f = TempFile::new("attach", &img);
        ix.attach(&f.0).unwrap();
        let line = e("x", Some("e2"), "message");
        f.append(format!("{line}\n").as_bytes());
        assert_eq!(ix.refresh().unwrap(), 1);
        assert_eq!(ix.line(3).unwrap(), line.as_bytes());
        assert_eq!(ix.path(3), vec![0, 1, 2, 3]);
    }

    #[test]
    fn refresh_after_a_pending_fragment_and_many_lines() {
        let f = TempFile::new("fold", &session(10, 100));
        let mut ix = Index::open(&f.0).unwrap();
        // A pending fragment, then its rest and more lines than the tail may hold.
        let first = e("n0", Some("e9"), "message");
        f.append(&first.as_bytes()[..20]);
        assert_eq!(ix.refresh().unwrap(), 0);
        assert!(ix.has_pending_tail());
        let mut more = format!("{}\n", &first[20..]);
        for i in 1..2000 {
            more.push_str(&e(&format!("n{i}"), Some(&format!("n{}", i - 1)), "custom"));
            more.push('\n');
        }
        f.append(more.as_bytes());
        assert_eq!(ix.refresh().unwrap(), 2000);
        assert!(!ix.has_pending_tail() && ix.issues().is_empty());
        assert_eq!(ix.path(ix.last().unwrap()).len(), 2010);
        assert_eq!(ix.line(10).unwrap(), first.as_bytes());
        assert_eq!(ix.image_len(), std::fs::metadata(&f.0).unwrap().len());
        // Appended through the API, then the file catches up (the writer's bytes).
        let own = e("own", Some("n1999"), "message");
        assert_eq!(ix.append_line(own.as_bytes()).unwrap(), Some(2010));
        f.append(format!("{own}\n").as_bytes());
        let next = e("next", Some("own"), "message");
        f.append(format!("{next}\n").as_bytes());
        assert_eq!(ix.refresh().unwrap(), 1);
        assert_eq!(ix.line(2010).unwrap(), own.as_bytes());
        assert_eq!(ix.line(2011).unwrap(), next.as_bytes());
        assert_eq!(ix.path(2011).len(), 2012);
    }

    #[test]
    fn issues_carry_their_facts() {
        type Fact = (&'static str, Option<u64>, Option<Vec<u8>>);
        let facts = |ix: &Index| -> Vec<Fact> {
            ix.issues()
                .into_iter()
                .map(|i| (i.kind.as_str(), i.n, i.text))
                .collect()
        };
        let mut img = format!("\u{feff}xy{H}\n").into_bytes();
        for l in [
            e("a", None, "message"),
            e("a", None, "message"),
            format!("junk{}", e("b", Some("c"), "custom")),
            e("c", Some("b"), "wei\\u0072d"),
            r#"{"type":7,"id":"d","parentId":null}"#.to_string(),
        ] {
            img.extend_from_slice(l.as_bytes());
            img.push(b'\n');
        }
        img.extend_from_slice(b"{\"type\":\r");
        let ix = Index::from_image(img).unwrap();
        assert_eq!(
            facts(&ix),
            vec![
                ("bom", None, None),
                ("torn_fragment", Some(5), None), // BOM + "xy": from the line's first byte
                ("duplicate_id", Some(2), None),
                ("torn_fragment", Some(4), None),
                ("cycle", Some(2), None),
                ("unknown_type", None, Some(b"weird".to_vec())),
                ("unknown_type", None, None),
                ("truncated", Some(8), None), // the CR is the line ending's
            ]
        );
    }

    #[test]
    fn append_and_pending_tail() {
        let mut ix = ix(&[&e("a", None, "message")]);
        assert_eq!(
            ix.append_line(e("b", Some("a"), "message").as_bytes())
                .unwrap(),
            Some(1)
        );
        assert_eq!(ix.children(0), vec![1]);
        assert_eq!(ix.append_line(b"nope").unwrap(), None);
        assert_eq!(kinds(&ix), vec![("invalid_json", Some(4))]);
        let mut img = format!("{H}\n{}\n", e("a", None, "message")).into_bytes();
        img.extend_from_slice(b"{\"type\":");
        let mut ix = Index::from_image(img).unwrap();
        assert!(ix.has_pending_tail());
        assert_eq!(kinds(&ix), vec![("truncated", Some(3))]);
        ix.append_line(e("b", Some("a"), "message").as_bytes())
            .unwrap();
        assert_eq!(kinds(&ix), vec![("invalid_json", Some(3))]);
        assert_eq!(ix.path(1), vec![0, 1]);
    }

    fn comp(id: &str, parent: Option<&str>, kept: &str) -> String {
        let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(r#"{{"type":"compaction","id":"{id}","parentId":{p},"firstKeptEntryId":"{kept}"}}"#)
    }

    /// The `first_kept_off_path` compactions, by id.
    fn off_path(ix: &Index) -> Vec<Vec<u8>> {
        ix.issues()
            .into_iter()
            .filter(|i| i.kind == IssueKind::FirstKeptOffPath)
            .map(|i| i.ids[0].clone())
            .collect()
    }

    #[test]
    fn many_compactions_are_checked_in_one_linear_pass() {
        // A chain where every second entry is a compaction keeping the root: a walk per
        // compaction is O(n^2) (1.25e9 steps here), the interval pass O(n).
        let n = 100_000;
        let mut lines = vec![e("e0", None, "message")];
        for i in 1..n {
            let p = format!("e{}", i - 1);
            lines.push(if i % 2 == 0 {
                comp(&format!("e{i}"), Some(&p), "e0")
            } else {
                e(&format!("e{i}"), Some(&p), "message")
            });
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let before = tree::WALK_STEPS.with(|s| s.get());
        let ix = ix(&refs);
        assert!(ix.issues().is_empty());
        // Work is counted, not timed: no compaction was checked by a walk.
        assert_eq!(tree::WALK_STEPS.with(|s| s.get()), before);
    }

    #[test]
    fn interval_and_walk_verdicts_agree() {
        // A forest with branches, forward links, a cycle, self-keeps and kept entries
        // on other branches; checked once in one batch (intervals) and once entry by
        // entry through `append_line` (walks).
        let mut lines = vec![
            e("r", None, "message"),
            e("a", Some("r"), "message"),
            e("b", Some("r"), "message"),
            comp("c1", Some("a"), "r"),
            comp("c2", Some("b"), "a"),
            comp("c3", Some("c1"), "a"),
            comp("c4", Some("c3"), "c4"), // self-retaining: valid
            comp("c5", Some("c4"), "nope"),
            e("f", Some("later"), "message"),
            comp("c6", Some("f"), "later"),
            comp("c7", Some("f"), "f"),
            e("later", Some("c1"), "message"),
            comp("c8", Some("later"), "r"),
            comp("c9", Some("c8"), "b"),
            comp("c10", Some("c9"), "c3"),
            e("x", Some("z"), "custom"),
            e("y", Some("x"), "custom"),
            e("z", Some("y"), "custom"),
            comp("c11", Some("z"), "x"),
            comp("c12", Some("y"), "z"),
        ];
        lines.push(comp("c13", Some("c12"), "c11"));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let batch = ix(&refs);
        let want: Vec<&[u8]> = vec![b"c2", b"c5", b"c9", b"c10", b"c12", b"c13"];
        assert_eq!(off_path(&batch), want);
        assert!(kinds(&batch).contains(&("cycle", Some(17))));
        let mut one = ix(&[]);
        for l in &refs {
            one.append_line(l.as_bytes()).unwrap();
        }
        assert_eq!(one.issues(), batch.issues());
        // New compactions past the limit in one refresh-sized batch use intervals too.
        let mut grown = ix(&refs[..3]);
        let mut more = Vec::new();
        for l in &refs[3..] {
            more.extend_from_slice(l.as_bytes());
            more.push(b'\n');
        }
        grown.src.append(grown.image_len(), &more).unwrap();
        grown.index_new().unwrap();
        assert_eq!(grown.issues(), batch.issues());
    }

    #[test]
    fn reads_after_indexing_use_pread_and_a_shrunk_file_is_stale() {
        let f = TempFile::new("shrink", &session(50, 300));
        let ix = Index::open(&f.0).unwrap();
        let path = ix.path(49);
        let mut got = Vec::new();
        ix.for_each_line(&path, |b| got.push(b.to_vec())).unwrap();
        let want: Vec<Vec<u8>> = path.iter().map(|&e| ix.line(e).unwrap()).collect();
        assert_eq!(got, want);
        assert!(got[10].starts_with(br#"{"type":"message","id":"e10""#));
        assert!(ix.header().unwrap().starts_with(br#"{"type":"session""#));
        // Cut the file inside entry 40: earlier lines still read, later ones are stale
        // (a short pread, where a read of the map would raise SIGBUS).
        let cut = ix.start[40] + 10;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&f.0)
            .unwrap()
            .set_len(cut)
            .unwrap();
        assert_eq!(ix.line(39).unwrap(), want[39]);
        assert!(matches!(ix.line(40), Err(Error::Stale(_))));
        assert!(matches!(
            ix.for_each_line(&path, |_| ()),
            Err(Error::Stale(_))
        ));
        assert!(ix.header().is_ok()); // before the cut
    }

    #[test]
    fn an_open_through_a_released_map_is_the_scan_of_the_bytes() {
        // Long enough to be mapped and given back many times (test sizes: 64 KiB map
        // minimum, 4 KiB blocks, 16 KiB release steps), with damage spread through it.
        let mut img = session(3000, 200);
        for k in (1000..img.len() - 100).step_by(40_000) {
            img[k] = b'{';
        }
        let f = TempFile::new("released", &img);
        let opened = Index::open(&f.0).unwrap();
        let owned = Index::from_image(img.clone()).unwrap();
        assert_eq!(opened.len(), owned.len());
        assert!(!owned.issues().is_empty());
        assert_eq!(opened.issues(), owned.issues());
        assert_eq!(opened.start, owned.start);
        assert_eq!(opened.parent, owned.parent);
        let src = Source::open(&f.0).unwrap();
        let w = src.window(0, img.len() as u64).unwrap().unwrap();
        assert_eq!(w.bytes(), &img[..]);
        w.release(img.len());
        assert_eq!(w.bytes(), &img[..]); // read again from the file
    }

    #[test]
    fn the_fingerprint_is_the_ends_of_the_image_as_scanned() {
        // `_filestate.indexed_ends` of the file's first image_len bytes, for images of
        // one block and of many (test blocks are 4 KiB), mapped or read, with a short
        // and a long pending last piece (the long one is past what the scan keeps).
        let fp = lines::FINGERPRINT;
        let ends = |img: &[u8], n: usize| {
            let mut out = img[..n.min(fp)].to_vec();
            out.extend_from_slice(&img[n.saturating_sub(fp)..n]);
            out
        };
        for (lines_n, pad, tail) in [
            (3, 10, 0),
            (40, 300, 0),
            (3000, 200, 0),
            (3000, 200, 100),
            (500, 50, 3 * fp),
        ] {
            let mut img = session(lines_n, pad);
            let full = img.len();
            img.extend(std::iter::repeat_n(b'x', tail)); // an invalid last piece without LF
            let f = TempFile::new("fingerprint", &img);
            let ix = Index::open(&f.0).unwrap();
            assert_eq!(ix.image_len() as usize, full);
            match ix.fingerprint() {
                Some((n, got)) => {
                    assert_eq!(n as usize, full);
                    assert_eq!(got, &ends(&img, full)[..]);
                }
                None => assert!(tail > fp, "{lines_n} {pad} {tail}"),
            }
            assert!(Index::from_image(img).unwrap().fingerprint().is_none());
        }
    }

    /// A whole `Index::from_image` of a big file (set `SESSIONTREE_BENCH_FILE`), best
    /// of 3: `cargo test --release --no-default-features -- --ignored --nocapture
    /// bench_open` (`scan::tests::bench_scan` times its pieces).
    #[test]
    #[ignore]
    fn bench_open() {
        let Ok(path) = std::env::var("SESSIONTREE_BENCH_FILE") else {
            return;
        };
        let data = std::fs::read(path).unwrap();
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let n = Index::from_image(data.clone()).map_or(0, |i| i.len());
            best = best.min(t.elapsed().as_secs_f64());
            assert!(n > 0);
        }
        println!("Index::from_image {best:.3}s");
    }

    #[test]
    fn columns_hold_the_index_in_arrow_layouts() {
        let i32s = |b: &[u8]| -> Vec<i32> {
            b.chunks(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let i64s = |b: &[u8]| -> Vec<i64> {
            b.chunks(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        // A root, a child, a forward link (f names the later g), a torn line and a
        // timestamp that does not parse.
        let ix = ix(&[
            &e("a", None, "message"),
            &e("b", Some("a"), "message"),
            &e("f", Some("g"), "custom"),
            &format!("junk{}", e("g", Some("b"), "custom")),
            r#"{"type":"custom","id":"\udc80x","parentId":"f","timestamp":"nope"}"#,
        ]);
        let c = ix.columns(ix.find(b"f")).unwrap();
        // Each byte of the surrogate's 3-byte form is one U+FFFD (Python's "replace").
        assert_eq!(i32s(&c.id_offsets), vec![0, 1, 2, 3, 4, 14]);
        assert_eq!(&c.id_data[..4], b"abfg");
        let lossy = std::str::from_utf8(&c.id_data[4..]).unwrap();
        assert_eq!(lossy, "\u{fffd}\u{fffd}\u{fffd}x");
        assert_eq!(i64s(&c.line), vec![2, 3, 4, 5, 6]);
        let (off, len) = (i64s(&c.offset), i64s(&c.length));
        for e in 0..5 {
            let (s, t) = (off[e] as u64, (off[e] + len[e]) as u64);
            assert_eq!((s, t), ix.range(e as u32));
        }
        assert_eq!(i32s(&c.parent), vec![0, 0, 3, 1, 2]);
        assert_eq!(c.parent_valid, vec![0b11110]);
        assert_eq!(i32s(&c.depth), vec![0, 1, 3, 2, 4]);
        assert_eq!(c.on_path, vec![0b01111]);
        assert_eq!(c.timestamp_valid, vec![0b01111]);
        assert_eq!(i64s(&c.timestamp)[4], 0);
        assert_eq!(i64s(&c.timestamp)[0], 1_735_689_600_000);
        let none = ix.columns(None).unwrap();
        assert_eq!(none.on_path, vec![0]);
    }
}
