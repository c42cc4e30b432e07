//! One pass over a session file for a catalog: what a session picker shows (Pi's
//! `buildSessionInfo`), the text search needs and the usage a report sums, read from
//! a given offset so that a file that grew costs only its new bytes.
//!
//! The rules are Python's `sessiontree.catalog._extract` (the one Python home; tests
//! hold the two equal on every corpus file, damaged case and generated folder): lines
//! are framed and judged as the loader does (`scan::validate_line` / `scan_line` /
//! `split_line`: `\n` only, one CR stripped, BOM before the header, blank and invalid
//! lines skipped, on a line ended by `\n` every object of glued ones read and torn
//! fragments skipped); the header is the first object; later
//! headers are ignored; an entry needs a non-empty string id and the first definition stands. What a line holds
//! beyond the scanner's top-level fields is read here, over the validated bytes, without
//! building a value: duplicate keys as `json.loads` keeps them (the last value wins).
//! A text whose JavaScript `String()` this module does not compute (a number, array or
//! object where Pi writes a string) makes the scan report [`Scan::fallback`], and the
//! caller reads that file with the Python rules instead.
//!
//! Reading is `pread` into a buffer that holds at most one read block plus the longest
//! line, so memory does not grow with the file, and a file cut short while it is read
//! gives what its short read gives. (Mapping files of 64 KiB or 1 MiB and more instead
//! was measured slower in the threaded listing, its `munmap`s costing more than the
//! copy: docs/BENCHMARKS.md.)
//! Each call stops at the first line end
//! past `limit` bytes; the entries seen so far travel between calls as a byte string
//! (see [`entries_path`] for its layout), so a long file is read in bounded pieces.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::Result;
use crate::ids::{IdArena, IdTable};
use crate::jsnum;
use crate::scan::{
    self, json_number as number, skip_str, skip_str_esc, skip_value, Fields, Val, Verdict,
};
use crate::source::open_regular;
use crate::time::parse_iso_ms;
use crate::tree;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// Bytes asked of the file per read.
const BLOCK: usize = 1 << 20;

/// The header as one scan saw it.
#[derive(Debug, Default, PartialEq)]
pub enum Header {
    /// The scan started after the header (a resumed scan).
    #[default]
    Before,
    /// The header object's bytes (after a BOM or a torn fragment).
    Found(Vec<u8>),
    /// No header: the file's first non-blank line `(line, offset, bytes)` (CR and BOM
    /// stripped), or `None` when it has none. The caller words why.
    Missing(Option<(u64, u64, Vec<u8>)>),
}

/// What a scan saw of `session_info` names (and of oh-my-pi's title slot, which counts
/// as one before the first entry).
#[derive(Debug, Default, PartialEq)]
pub enum Name {
    /// No `session_info` entry.
    #[default]
    Unset,
    /// The last one's `name` (decoded, not trimmed).
    Set(Vec<u8>),
    /// The last one's `name` is not a string.
    Cleared,
}

/// Which entry a [`Doc`] (a piece of searchable text) comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    /// A user message: its text.
    User,
    /// An assistant message: its text, then each tool call's name and arguments.
    Assistant,
    /// A `session_info` entry: the name.
    Name,
}

/// The searchable text of one entry.
#[derive(Debug, PartialEq)]
pub struct Doc {
    /// Entry number (accepted entries in file order, from 0).
    pub seq: u32,
    /// The entry's id.
    pub id: Vec<u8>,
    /// Where the text comes from.
    pub kind: DocKind,
    /// The entry's time in epoch ms ([`Scan`] explains which).
    pub time: Option<f64>,
    /// The text: parts joined by `\n` (generalized UTF-8: lone surrogates kept).
    pub text: Vec<u8>,
}

/// Which entry a [`UsageRow`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageKind {
    /// An assistant message's `usage`.
    Message,
    /// A `usage` entry (Pi 0.87+).
    Usage,
    /// A compaction's `usage`.
    Compaction,
    /// A branch summary's `usage`.
    BranchSummary,
}

/// One recorded usage: token counts and the cost Pi recorded.
#[derive(Debug, PartialEq)]
pub struct UsageRow {
    /// Entry number.
    pub seq: u32,
    /// The entry's id.
    pub id: Vec<u8>,
    /// The entry's `timestamp` string as written (empty if it is not a string).
    pub stamp: Vec<u8>,
    /// The entry's time in epoch ms.
    pub time: Option<f64>,
    /// Where the usage is recorded.
    pub kind: UsageKind,
    /// `provider` (the message's, or the usage entry's), empty if not a string.
    pub provider: Vec<u8>,
    /// `model`, likewise.
    pub model: Vec<u8>,
    /// `input`, `output`, `cacheRead`, `cacheWrite`, `totalTokens` and `cost.total`:
    /// a JSON number's value, 0 for anything else.
    pub numbers: [f64; 6],
}

/// What one call of [`scan_file`] saw.
#[derive(Debug, Default)]
pub struct Scan {
    /// Offset after the last complete (`\n`-ended) line taken: where the next call
    /// starts.
    pub end: u64,
    /// The data ran out: no line is left after `end` but the unterminated piece, if
    /// any, which was taken too (see `tail`).
    pub eof: bool,
    /// Length of an unterminated last piece that was taken (0 if none). A later scan
    /// must read it again: it may be completed.
    pub tail: u64,
    /// Bytes read from the file by this call (the lines; not `ends`).
    pub bytes_read: u64,
    /// The first and the last `fingerprint` bytes of the file's first `end` bytes
    /// (`_filestate.indexed_ends`: what must not change while the file only grows),
    /// read once the scan is done.
    pub ends: Vec<u8>,
    /// The header (only a scan from offset 0 looks for it).
    pub header: Header,
    /// The header's `version` is absent, null or a number below 2 (a version 1 file:
    /// entries have no ids). The scan stops at the header.
    pub old_version: bool,
    /// Something the rules here do not compute was met (a text's JavaScript
    /// `String()`); the scan stopped and the caller reads the file with the Python rules.
    pub fallback: Option<&'static str>,
    /// `message` entries.
    pub message_count: u64,
    /// Text of the first user message with non-empty text.
    pub first_message: Option<Vec<u8>>,
    /// Non-empty user/assistant texts, joined by spaces (only with [`Collect::texts`]).
    pub texts: Vec<u8>,
    /// The last `session_info` name.
    pub name: Name,
    /// Largest user/assistant message time (the message's numeric `timestamp`, else
    /// the entry's ISO time), at least 0, if any.
    pub activity: Option<f64>,
    /// The accepted entries, in [`entries_path`]'s layout (this call's only).
    pub entries: Vec<u8>,
    /// Entries accepted so far, with the prior ones.
    pub entry_count: u32,
    /// Searchable texts (only with `content`).
    pub docs: Vec<Doc>,
    /// Recorded usage (only with `content`).
    pub usage: Vec<UsageRow>,
    /// Recorded usage in `crate::report`'s packed layout (only with
    /// [`Collect::usage_log`]).
    pub usage_log: Vec<u8>,
}

/// What a scan collects beyond the listing facts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Collect {
    /// Docs and usage rows.
    pub content: bool,
    /// [`Scan::texts`] (`all_messages_text`, read only when a caller asks for it: the
    /// messages' content is then walked, which is most of a listing pass's work).
    pub texts: bool,
    /// [`Scan::usage_log`]: the recorded usage packed (`crate::report`), an
    /// assistant message's from the validator's spans (no walk of the message).
    pub usage_log: bool,
}

/// Scan the file at `path` from `start` (0, or a previous call's [`Scan::end`]).
///
/// `prior` holds the entries before `start` (the previous calls' [`Scan::entries`]
/// concatenated; empty for `start == 0`); `collect` says what else to gather; the call
/// returns at the first line end at or past `start + limit` (the header is always
/// found first); `fingerprint` sizes [`Scan::ends`].
///
/// # Errors
/// The file cannot be opened or read.
pub fn scan_file(
    path: &Path,
    start: u64,
    prior: &[u8],
    collect: Collect,
    limit: u64,
    fingerprint: u64,
) -> Result<Scan> {
    // One buffer per thread, kept between files: a fresh one per file costs its
    // zeroing and page faults, a large share of a small file's scan.
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let file = open_regular(path)?;
    let mut scan = BUF.with(|b| {
        let mut buf = b.take();
        let r = scan_into(&file, start, prior, collect, limit, &mut buf, None);
        if buf.len() <= 4 * BLOCK {
            b.replace(buf);
        }
        r
    })?;
    let n = fingerprint.min(scan.end) as usize;
    let mut ends = vec![0u8; 2 * n];
    let (head, tail) = ends.split_at_mut(n);
    let got = read_full(&file, head, 0)? + read_full(&file, tail, scan.end - n as u64)?;
    ends.truncate(got);
    scan.ends = ends;
    Ok(scan)
}

/// [`scan_file`] with `buf` (any contents) as the read buffer: `buf[..filled]` holds
/// the file's bytes from `buf_off`; `buf` only grows (to the longest line).
pub(crate) fn scan_into(
    file: &File,
    start: u64,
    prior: &[u8],
    collect: Collect,
    limit: u64,
    buf: &mut Vec<u8>,
    sink: Option<&mut dyn DocSink>,
) -> Result<Scan> {
    let size = file.metadata()?.len();
    let stop_at = start.saturating_add(limit);
    let mut st = State::new(prior, start, collect);
    st.sink = sink;
    // A small file gets a small first read; a file that grows while it is read is
    // read on, block by block.
    let mut block = (size.saturating_sub(start) as usize + 1).clamp(4096, BLOCK);
    let mut buf_off = start; // file offset of buf[0]
    let mut filled = 0usize; // valid bytes in buf
    let mut pos = 0usize; // next line start in buf
    let mut eof = false;
    loop {
        while pos < filled {
            let off = buf_off + pos as u64;
            let Some((n, go)) = take_line(&mut st, &buf[pos..filled], off) else {
                break;
            };
            pos += n;
            st.out.end = buf_off + pos as u64;
            if !go || (st.header_found && st.out.end >= stop_at) {
                return Ok(st.finish(false));
            }
        }
        if eof {
            let tail = &buf[pos..filled];
            if !tail.is_empty() {
                let off = buf_off + pos as u64;
                st.out.tail = tail.len() as u64;
                st.line_len = tail.len() as u64;
                if !st.line(tail, off, false) {
                    return Ok(st.finish(false));
                }
            }
            return Ok(st.finish(true));
        }
        buf.copy_within(pos..filled, 0);
        filled -= pos;
        buf_off += pos as u64;
        pos = 0;
        let want = block.max(filled);
        block = BLOCK;
        if buf.len() < filled + want {
            buf.resize(filled + want, 0);
        }
        let n = read_full(
            file,
            &mut buf[filled..filled + want],
            buf_off + filled as u64,
        )?;
        st.out.bytes_read += n as u64;
        filled += n;
        eof = n < want;
    }
}

/// [`scan_into`] over a whole file already in memory (`data`, from offset 0): no copy,
/// no read. The scan sees the file end where `data` does.
pub(crate) fn scan_slice(data: &[u8], collect: Collect, sink: Option<&mut dyn DocSink>) -> Scan {
    let mut st = State::new(&[], 0, collect);
    st.sink = sink;
    st.out.bytes_read = data.len() as u64;
    let mut pos = 0usize;
    while pos < data.len() {
        let Some((n, go)) = take_line(&mut st, &data[pos..], pos as u64) else {
            break;
        };
        pos += n;
        st.out.end = pos as u64;
        if !go {
            return st.finish(false);
        }
    }
    let tail = &data[pos..];
    if !tail.is_empty() {
        st.out.tail = tail.len() as u64;
        st.line_len = tail.len() as u64;
        if !st.line(tail, pos as u64, false) {
            return st.finish(false);
        }
    }
    st.finish(true)
}

/// What a file's header says, read from the first lines only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderKind {
    /// A header of version 2 or later: the file is a session this module reads.
    Session,
    /// A version 1 header (entries without ids: read with the Python rules).
    Old,
    /// The first object is not a header, or there is none: not a session.
    Missing,
}

/// The header of the file whose first bytes are `data` (from offset 0; `eof`: the
/// file ends there), judged by the rules of a scan; `None` when `data` ends before a
/// whole object line decides it.
pub(crate) fn header_kind(data: &[u8], eof: bool) -> Option<HeaderKind> {
    let mut st = State::new(&[], 0, Collect::default());
    let mut pos = 0usize;
    let decided = |st: &State<'_>| {
        if st.header_found {
            Some(if st.out.old_version {
                HeaderKind::Old
            } else {
                HeaderKind::Session
            })
        } else if matches!(st.out.header, Header::Missing(_)) {
            Some(HeaderKind::Missing)
        } else {
            None
        }
    };
    while pos < data.len() {
        let Some((n, _)) = take_line(&mut st, &data[pos..], pos as u64) else {
            break;
        };
        pos += n;
        if let Some(k) = decided(&st) {
            return Some(k);
        }
    }
    if !eof {
        return None;
    }
    if pos < data.len() {
        st.line(&data[pos..], pos as u64, false);
    }
    Some(decided(&st).unwrap_or(HeaderKind::Missing))
}

/// The whole line at the head of `rest` (file offset `off`), taken: its length with
/// the `\n`, and whether the scan goes on; `None` when `rest` holds no whole line.
#[inline]
fn take_line(st: &mut State<'_>, rest: &[u8], off: u64) -> Option<(usize, bool)> {
    // An object line is validated up to its `\n` without a search for it first (not
    // line 1: it may start with a BOM).
    let (len, fast) = match (off != 0)
        .then(|| scan::validate_line(rest, &mut st.fields))
        .flatten()
    {
        Some(n) => (n, true),
        None => (memchr::memchr(b'\n', rest)?, false),
    };
    st.line_len = len as u64;
    let line = &rest[..len];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let go = if fast {
        st.line_no += 1;
        st.at = (off, st.line_len);
        st.object(line, off)
    } else {
        st.line(line, off, true)
    };
    Some((len + 1, go))
}

/// Read until `buf` is full or the file ends.
pub(crate) fn read_full(file: &File, buf: &mut [u8], mut at: u64) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                at += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// Where a scan hands the searchable text of the entries a caller asks for (the search
/// pass: the lines its prefilter picked), as it meets them.
pub(crate) trait DocSink {
    /// Whether the entry on the line at `offset` is wanted.
    fn wants(&mut self, offset: u64) -> bool;
    /// One wanted entry's searchable text (see [`Doc`]), and where it lies.
    fn doc(&mut self, doc: DocRef<'_>);
    /// Whether an assistant message's text blocks alone (`text`, before its tool
    /// calls) settle what this sink makes of the entry: then [`DocSink::doc`] gets
    /// that text without the calls' names and arguments (which are not read).
    fn settled_by(&mut self, _text: &[u8]) -> bool {
        false
    }
}

/// A [`Doc`] borrowed from the scan, with the offset of its line and the line's length
/// (without its `\n`); for an object of a line of glued ones, the offset and length of
/// that object (read back alone, it is that entry: `doc_of_line`).
pub(crate) struct DocRef<'a> {
    pub seq: u32,
    pub id: &'a [u8],
    pub kind: DocKind,
    pub time: Option<f64>,
    pub text: &'a [u8],
    pub offset: u64,
    pub len: u64,
}

/// Hand the entry on one whole line (at offset `off`, without its `\n`) to `sink` as a
/// scan would, the entry taken as accepted (the caller knows it was: a line an index
/// kept); a message's text read no further than `budget` bytes when that many come
/// before its tool calls (then the text is a prefix of the entry's).
pub(crate) fn doc_of_line(line: &[u8], off: u64, budget: usize, sink: &mut dyn DocSink) {
    let mut st = State::new(&[], off.max(1), Collect::default());
    st.sink = Some(sink);
    st.budget = budget;
    st.line_len = line.len() as u64;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    st.line(line, off, true);
}

/// Hand the entry on one whole line (at offset `off`, without its `\n`) to `sink` as a
/// scan would if it were accepted: what the search makes of a picked line before it reads
/// the whole file (a scan hands `sink` no doc of this line that this call does not: an
/// entry it rejects, a duplicate id, hands none). False, with nothing handed over or
/// some of it, when the line is not one JSON object (a BOM, glued objects: only a scan
/// of the file reads those) or its text is one this module does not compute
/// ([`Scan::fallback`]).
pub(crate) fn probe_line(line: &[u8], off: u64, sink: &mut dyn DocSink) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let ls = scan::scan_line(line);
    if ls.verdict != Verdict::Object {
        return false;
    }
    // Read as a line after the header (offset > 0); a first user message taken as seen
    // keeps no copy of its text.
    let mut st = State::new(&[], off.max(1), Collect::default());
    st.sink = Some(sink);
    st.line_len = line.len() as u64;
    st.out.first_message = Some(Vec::new());
    st.fields = ls.fields;
    st.at = (off, line.len() as u64);
    st.object(line, off);
    st.out.fallback.is_none()
}

/// Whether a scan of a file with no sink wanting a line would stop at a text it does not
/// compute ([`Scan::fallback`]), read from the file's lines as they come: the only text
/// such a scan computes is the first user message's, so the answer is known once that
/// message is read.
pub(crate) struct FirstMessage {
    st: State<'static>,
    /// The answer, once known.
    falls_back: Option<bool>,
}

impl FirstMessage {
    pub(crate) fn new() -> FirstMessage {
        let mut st = State::new(&[], 0, Collect::default());
        st.until_first_message = true;
        FirstMessage {
            st,
            falls_back: None,
        }
    }

    /// Read on: `data` holds the file's next bytes from offset `off` (the offset after
    /// the bytes fed before, 0 first), up to a line end unless the file ends there
    /// (`eof`). The answer, once known (at the file's end at the latest).
    pub(crate) fn feed(&mut self, data: &[u8], off: u64, eof: bool) -> Option<bool> {
        if self.falls_back.is_some() {
            return self.falls_back;
        }
        let st = &mut self.st;
        let mut pos = 0usize;
        let mut go = true;
        while go && pos < data.len() {
            let Some((n, g)) = take_line(st, &data[pos..], off + pos as u64) else {
                break;
            };
            pos += n;
            go = g;
        }
        if go && eof && pos < data.len() {
            st.line_len = (data.len() - pos) as u64;
            st.line(&data[pos..], off + pos as u64, false);
            go = false;
        }
        if !go || eof {
            self.falls_back = Some(st.out.fallback.is_some());
        }
        self.falls_back
    }
}

struct State<'s> {
    sink: Option<&'s mut dyn DocSink>,
    /// Bytes of a message's text worth reading (see `text_of`).
    budget: usize,
    /// Length of the line being read (without its `\n`).
    line_len: u64,
    /// Offset and length of the object being read: its line, or its piece of a line
    /// of glued objects (a `DocRef`'s, so that reading them back gives this object).
    at: (u64, u64),
    log: crate::report::LogWriter,
    arena: IdArena,
    table: IdTable,
    header_found: bool,
    title_seen: bool,
    line_no: u64,
    first_nonblank: Option<(u64, u64, Vec<u8>)>,
    fields: Fields,
    /// The object being read is `scan::Piece::may_nest` (only while it is read).
    may_nest: bool,
    /// The leaf so far (`None`: no entry accepted yet, or a `leaf` entry moved it to
    /// `null`), by [`leaf_after`].
    leaf: Option<u32>,
    collect: Collect,
    /// Stop once the first user message's text is read ([`FirstMessage`]).
    until_first_message: bool,
    out: Scan,
}

impl<'s> State<'s> {
    fn new(prior: &[u8], start: u64, collect: Collect) -> State<'s> {
        let mut st = State {
            sink: None,
            budget: usize::MAX,
            line_len: 0,
            at: (0, 0),
            log: crate::report::LogWriter::default(),
            arena: IdArena::default(),
            table: IdTable::new(),
            header_found: start > 0,
            title_seen: false,
            line_no: 0,
            first_nonblank: None,
            fields: Fields::default(),
            may_nest: false,
            leaf: None,
            collect,
            until_first_message: false,
            out: Scan {
                end: start,
                ..Scan::default()
            },
        };
        for (id, _, mv) in Records(prior) {
            st.accept(id);
            st.moved(mv);
        }
        st
    }

    /// Whether the object continues the tree as the writer that appended it would have:
    /// its `parentId` an id accepted before it, or `null` while no entry is the leaf.
    fn continues_tree(&self, obj: &[u8], f: &Fields) -> bool {
        match f.parent_id {
            Val::Null => self.leaf.is_none(),
            Val::Str { .. } => str_of(obj, f.parent_id)
                .is_some_and(|p| !p.is_empty() && self.table.find(&p, &self.arena).is_some()),
            _ => false,
        }
    }

    /// The leaf after the entry just accepted (number `entry_count - 1`), whose move is
    /// `mv`.
    fn moved(&mut self, mv: Move<'_>) {
        let n = self.out.entry_count.wrapping_sub(1);
        self.leaf = leaf_after(self.leaf, n, mv, &self.table, &self.arena);
    }

    /// Record an id; false if it was already there (the first definition stands).
    fn accept(&mut self, id: &[u8]) -> bool {
        let n = self.out.entry_count;
        if self.table.insert_new(id, n, &self.arena).is_some() {
            return false;
        }
        self.arena.push(id);
        self.out.entry_count += 1;
        true
    }

    fn finish(mut self, eof: bool) -> Scan {
        self.out.usage_log = std::mem::take(&mut self.log.out);
        self.out.eof = eof && self.out.fallback.is_none() && !self.out.old_version;
        if !self.header_found && self.out.header == Header::Before {
            self.out.header = Header::Missing(self.first_nonblank.take());
        }
        self.out
    }

    /// One physical line (CR stripped; a tail keeps its CR) at offset `off`;
    /// `complete`: ended by `\n` (rule 4 reads glued objects and torn fragments only
    /// then, as the loader does: `scan::split_line`); false stops the scan.
    fn line(&mut self, line: &[u8], off: u64, complete: bool) -> bool {
        self.line_no += 1;
        let whole = line.len();
        let line = if off == 0 {
            line.strip_prefix(BOM).unwrap_or(line)
        } else {
            line
        };
        let lead = (whole - line.len()) as u64;
        if scan::is_blank(line) {
            return true;
        }
        if !self.header_found && self.first_nonblank.is_none() {
            self.first_nonblank = Some((self.line_no, off, line.to_vec()));
        }
        let ls = scan::scan_line(line);
        match ls.verdict {
            Verdict::Object => {
                self.fields = ls.fields;
                self.at = (off, self.line_len);
                self.object(line, off)
            }
            Verdict::Invalid if complete => {
                let Some(split) = scan::split_line(line) else {
                    return true;
                };
                for p in &split.pieces {
                    self.fields = p.fields;
                    self.may_nest = p.may_nest;
                    self.at = (off + lead + p.start as u64, (p.end - p.start) as u64);
                    let go = self.object(&line[p.start..p.end], off);
                    // Every other line's object is read as not nested (the fast path
                    // of `take_line` included).
                    self.may_nest = false;
                    if !go {
                        return false;
                    }
                }
                true
            }
            _ => true,
        }
    }

    /// An object (its fields in `self.fields`) on the line at offset `off`.
    fn object(&mut self, obj: &[u8], off: u64) -> bool {
        let f = self.fields;
        let ty = str_of(obj, f.ty);
        if !self.header_found {
            if self.first_nonblank.is_none() {
                self.first_nonblank = Some((self.line_no, off, obj.to_vec()));
            }
            let is_header = ty.as_deref() == Some(b"session") && matches!(f.id, Val::Str { .. });
            if !is_header && !self.title_seen && ty.as_deref() == Some(b"title") {
                // oh-my-pi's title slot (`_reader.is_title_slot`): the session's name
                // until a `session_info` entry says otherwise.
                self.title_seen = true;
                let title = member(obj, ws(obj, 0), b"title").and_then(|v| string(obj, v));
                if let Some(t) = title {
                    self.out.name = Name::Set(t.into_owned());
                }
                return true;
            }
            if !is_header {
                self.out.header = Header::Missing(self.first_nonblank.take());
                return false;
            }
            self.header_found = true;
            self.out.header = Header::Found(obj.to_vec());
            // Pi's `version < 2`: a version 1 file (`_extract`'s `old_version`).
            self.out.old_version = jsnum::header_version(obj, f.version) < 2.0;
            return !self.out.old_version;
        }
        let Some(ty) = ty else {
            return self.entry(obj, b"", &f, off);
        };
        if &*ty == b"session" {
            return true; // a later header
        }
        let ty = ty.into_owned();
        self.entry(obj, &ty, &f, off)
    }

    fn entry(&mut self, obj: &[u8], ty: &[u8], f: &Fields, off: u64) -> bool {
        let Some(id) = str_of(obj, f.id) else {
            return true;
        };
        if id.is_empty() {
            return true;
        }
        if self.may_nest && !self.continues_tree(obj, f) {
            return true; // torn bytes (rule 3; `Index::continues_tree`)
        }
        if !self.accept(&id) {
            return true;
        }
        let seq = self.out.entry_count - 1;
        let parent = str_of(obj, f.parent_id).filter(|p| !p.is_empty());
        let target = str_of(obj, f.target_id);
        let mv = match (ty, f.target_id) {
            (b"leaf", Val::Null) => Move::ToNull,
            (b"leaf", _) => target.as_deref().map_or(Move::Nothing, Move::To),
            _ => Move::Not,
        };
        self.moved(mv);
        push_record(&mut self.out.entries, &id, parent.as_deref(), mv);
        let stamp = str_of(obj, f.timestamp);
        let entry_ms = stamp.as_deref().and_then(parse_iso_ms).map(|ms| ms as f64);
        match ty {
            b"message" => self.message(obj, seq, &id, entry_ms, stamp.as_deref(), off),
            b"session_info" => {
                let name = member(obj, ws(obj, 0), b"name");
                self.out.name = match name.and_then(|v| string(obj, v)) {
                    Some(n) => Name::Set(n.into_owned()),
                    None => Name::Cleared,
                };
                if let (Some(sink), Name::Set(n)) = (self.sink.as_deref_mut(), &self.out.name) {
                    if sink.wants(off) {
                        sink.doc(DocRef {
                            seq,
                            id: &id,
                            kind: DocKind::Name,
                            time: entry_ms,
                            text: n,
                            offset: self.at.0,
                            len: self.at.1,
                        });
                    }
                }
                if let (true, Name::Set(n)) = (self.collect.content, &self.out.name) {
                    let text = n.clone();
                    self.out.docs.push(Doc {
                        seq,
                        id: id.into_owned(),
                        kind: DocKind::Name,
                        time: entry_ms,
                        text,
                    });
                }
                true
            }
            b"usage" | b"compaction" | b"branch_summary"
                if self.collect.content || self.collect.usage_log =>
            {
                let kind = match ty {
                    b"usage" => UsageKind::Usage,
                    b"compaction" => UsageKind::Compaction,
                    _ => UsageKind::BranchSummary,
                };
                let m = Members::of(obj, ws(obj, 0), &[b"usage", b"provider", b"model"]);
                if let Some(u) = m.get(0).filter(|&u| obj.get(u) == Some(&b'{')) {
                    let (provider, model) = if kind == UsageKind::Usage {
                        (m.text(obj, 1), m.text(obj, 2))
                    } else {
                        (Vec::new(), Vec::new())
                    };
                    let numbers = usage_numbers(obj, u);
                    if self.collect.usage_log {
                        self.log.push(&crate::report::Record {
                            id: &id,
                            stamp: stamp.as_deref().unwrap_or_default(),
                            seq,
                            kind: kind as u8,
                            time: entry_ms,
                            provider: &provider,
                            model: &model,
                            numbers,
                        });
                    }
                    if !self.collect.content {
                        return true;
                    }
                    self.out.usage.push(UsageRow {
                        seq,
                        id: id.into_owned(),
                        stamp: stamp.map(Cow::into_owned).unwrap_or_default(),
                        time: entry_ms,
                        kind,
                        provider,
                        model,
                        numbers,
                    });
                }
                true
            }
            _ => true,
        }
    }

    fn message(
        &mut self,
        obj: &[u8],
        seq: u32,
        id: &[u8],
        entry_ms: Option<f64>,
        stamp: Option<&[u8]>,
        off: u64,
    ) -> bool {
        self.out.message_count += 1;
        // Only user and assistant messages say more (tool results, the bulk, are
        // skipped on the scanner's `message.role`).
        let user = match str_of(obj, self.fields.role).as_deref() {
            Some(b"user") => true,
            Some(b"assistant") => false,
            _ => return true,
        };
        // getLastActivityTime: the largest message time over messages with `content`;
        // at least 0.
        let time = scan::message_time(obj, &self.fields, entry_ms);
        if let (Some(t), true) = (time, self.fields.content != Val::Absent) {
            self.out.activity = scan::later_activity(self.out.activity, t);
        }
        if let (true, false, Val::Other { start }) =
            (self.collect.usage_log, user, self.fields.usage)
        {
            if obj.get(start) == Some(&b'{') {
                let f = &self.fields;
                let num = |v: Val| match v {
                    Val::Num { start, end } => number(&obj[start..end]),
                    _ => 0.0,
                };
                let mut numbers = [0.0; 6];
                for (o, &v) in numbers.iter_mut().zip(&f.tokens) {
                    *o = num(v);
                }
                numbers[5] = num(f.cost_total);
                let text = |v: Val| str_of(obj, v).map(Cow::into_owned).unwrap_or_default();
                let (provider, model) = (text(f.provider), text(f.model));
                self.log.push(&crate::report::Record {
                    id,
                    stamp: stamp.unwrap_or_default(),
                    seq,
                    kind: UsageKind::Message as u8,
                    time,
                    provider: &provider,
                    model: &model,
                    numbers,
                });
            }
        }
        let sunk = self.sink.as_deref_mut().is_some_and(|s| s.wants(off));
        if !(self.collect.content
            || self.collect.texts
            || sunk
            || user && self.out.first_message.is_none())
        {
            return true; // no text wanted: the walk below is 35–45% of a listing pass's CPU
        }
        // The validator recorded where the last `message` object's last `content`,
        // `usage`, `provider` and `model` stand (the values `json.loads` keeps): the
        // text is read from there, with no walk over the line to find them again.
        let f = self.fields;
        // Whether the whole object is valid UTF-8, settled once for all its strings:
        // a check per decoded string cost more than the strings (many are short).
        let utf8_ok = simdutf8::basic::from_utf8(obj).is_ok();
        let mut text = Vec::new();
        let mut calls = Vec::new();
        let content_at = match f.content {
            Val::Str { start, .. } => Some(start - 1),
            Val::Other { start } => Some(start),
            _ => None, // absent, null or a number: no text
        };
        // A user message's tool calls are not searched: not read either.
        let want_calls = !user && (self.collect.content || sunk);
        let (budget, content) = (self.budget, self.collect.content);
        let mut settled = |t: &[u8]| {
            !content && sunk && self.sink.as_deref_mut().is_some_and(|s| s.settled_by(t))
        };
        let fallback = content_at.is_some_and(|v| {
            let calls = want_calls.then_some(&mut calls);
            text_of(obj, v, &mut text, calls, budget, utf8_ok, &mut settled).is_none()
        });
        if let (false, true, Val::Other { start: u }) = (user, self.collect.content, f.usage) {
            if obj.get(u) == Some(&b'{') {
                let named = |v: Val| str_of(obj, v).map(Cow::into_owned).unwrap_or_default();
                self.out.usage.push(UsageRow {
                    seq,
                    id: id.to_vec(),
                    stamp: stamp.map(<[u8]>::to_vec).unwrap_or_default(),
                    time,
                    kind: UsageKind::Message,
                    provider: named(f.provider),
                    model: named(f.model),
                    numbers: usage_numbers(obj, u),
                });
            }
        }
        if self.fields.content == Val::Absent {
            return true;
        }
        if fallback {
            self.out.fallback = Some("a text that is not a string");
            return false;
        }
        if !text.is_empty() {
            if self.collect.texts {
                if !self.out.texts.is_empty() {
                    self.out.texts.push(b' ');
                }
                self.out.texts.extend_from_slice(&text);
            }
            if user && self.out.first_message.is_none() {
                self.out.first_message = Some(text.clone());
                if self.until_first_message {
                    return false;
                }
            }
        }
        if self.collect.content || sunk {
            if !calls.is_empty() {
                if !text.is_empty() {
                    text.push(b'\n');
                }
                text.extend_from_slice(&calls);
            }
            if let (true, Some(sink)) = (sunk && !text.is_empty(), self.sink.as_deref_mut()) {
                sink.doc(DocRef {
                    seq,
                    id,
                    kind: if user {
                        DocKind::User
                    } else {
                        DocKind::Assistant
                    },
                    time,
                    text: &text,
                    offset: self.at.0,
                    len: self.at.1,
                });
            }
            if self.collect.content && !text.is_empty() {
                self.out.docs.push(Doc {
                    seq,
                    id: id.to_vec(),
                    kind: if user {
                        DocKind::User
                    } else {
                        DocKind::Assistant
                    },
                    time,
                    text,
                });
            }
        }
        true
    }
}

// ------------------------------------------------------------ reading a validated value
//
// Every function below reads a line the validator accepted, so brackets balance and
// strings close; all the same, every byte is read through `get` and a short line ends
// a walk instead of panicking.

#[inline]
fn ws(s: &[u8], mut i: usize) -> usize {
    while matches!(s.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// The body of the string whose opening quote is `s[i]` and whether it holds a
/// backslash.
#[inline]
fn str_body(s: &[u8], i: usize) -> (usize, usize, bool) {
    let (end, esc) = skip_str_esc(s, i);
    (i + 1, end.saturating_sub(1).max(i + 1), esc)
}

/// The scanner's view of the value at `s[i]`.
fn value(s: &[u8], i: usize) -> Val {
    match s.get(i) {
        Some(b'"') => {
            let (start, end, escaped) = str_body(s, i);
            Val::Str {
                start,
                end,
                escaped,
            }
        }
        Some(b'-' | b'0'..=b'9') => Val::Num {
            start: i,
            end: skip_value(s, i),
        },
        Some(b'n') => Val::Null,
        Some(_) => Val::Other { start: i },
        None => Val::Absent,
    }
}

/// The decoded string at `s[i]`, if the value there is a string.
fn string(s: &[u8], i: usize) -> Option<Cow<'_, [u8]>> {
    scan::str_bytes(s, value(s, i))
}

/// The decoded string at `s[i]` (if a string), no more of it than the first `budget`
/// bytes of its body need (rounded up past an escape, a surrogate pair or a UTF-8
/// sequence, so that the result is a prefix of the whole decoding); `utf8_ok`: `s` is
/// known to be valid UTF-8 (no byte run is checked again).
fn string_prefix(s: &[u8], i: usize, budget: usize, utf8_ok: bool) -> Option<Cow<'_, [u8]>> {
    let v = value(s, i);
    let Val::Str {
        start,
        end,
        escaped,
    } = v
    else {
        return None;
    };
    if end - start <= budget {
        return scan::str_bytes_of(s, v, utf8_ok);
    }
    let raw = s.get(start..end)?;
    let mut k = 0;
    while k < budget {
        if raw[k] != b'\\' {
            k += 1;
            continue;
        }
        k += if raw.get(k + 1) == Some(&b'u') {
            // A high surrogate's escape and the low one's after it decode as one.
            let pair = raw.get(k + 2..k + 4).is_some_and(|h| {
                matches!(h[0], b'd' | b'D')
                    && matches!(h[1], b'8' | b'9' | b'a' | b'b' | b'A' | b'B')
            }) && raw.get(k + 6..k + 8) == Some(b"\\u");
            if pair {
                12
            } else {
                6
            }
        } else {
            2
        };
    }
    while raw.get(k).is_some_and(|&b| b & 0xC0 == 0x80) {
        k += 1;
    }
    let k = k.min(raw.len());
    let mut out = Vec::with_capacity(k);
    scan::decode_span(&raw[..k], escaped, utf8_ok, &mut out);
    Some(Cow::Owned(out))
}

/// A field's decoded string.
fn str_of(s: &[u8], v: Val) -> Option<Cow<'_, [u8]>> {
    scan::str_bytes(s, v)
}

/// The value positions of the last member named by each of `keys` in the object at
/// `s[i]` (`json.loads` keeps the last of duplicate keys).
struct Members {
    at: [Option<usize>; 8],
    /// One past the value.
    end: usize,
}

impl Members {
    fn of(s: &[u8], i: usize, keys: &[&[u8]]) -> Members {
        Members::walk(s, i, keys, |_, _| None)
    }

    /// [`Members::of`], calling `read(k, value)` at each member named `keys[k]`: it
    /// may read the value itself and return where the value ends.
    fn walk(
        s: &[u8],
        i: usize,
        keys: &[&[u8]],
        mut read: impl FnMut(usize, usize) -> Option<usize>,
    ) -> Members {
        let mut m = Members {
            at: [None; 8],
            end: s.len(),
        };
        if s.get(i) != Some(&b'{') {
            m.end = skip_value(s, i);
            return m;
        }
        let mut j = ws(s, i + 1);
        let mut key = Vec::new();
        while s.get(j) == Some(&b'"') {
            let (ks, ke, esc) = str_body(s, j);
            let raw = s.get(ks..ke).unwrap_or_default();
            let ke = ke + 1;
            let name: &[u8] = if esc {
                key.clear();
                scan::decode_into(raw, true, &mut key);
                &key
            } else {
                raw
            };
            let v = ws(s, ws(s, ke) + 1);
            let mut end = None;
            if let Some(k) = keys.iter().position(|&k| k == name) {
                m.at[k] = Some(v);
                end = read(k, v);
            }
            j = ws(s, end.unwrap_or_else(|| skip_value(s, v)));
            if s.get(j) != Some(&b',') {
                break;
            }
            j = ws(s, j + 1);
        }
        if s.get(j) == Some(&b'}') {
            m.end = j + 1;
        }
        m
    }

    fn get(&self, k: usize) -> Option<usize> {
        self.at[k]
    }

    /// Key `k`'s decoded string, empty when absent or not a string.
    fn text(&self, s: &[u8], k: usize) -> Vec<u8> {
        self.get(k)
            .and_then(|v| string(s, v))
            .map(Cow::into_owned)
            .unwrap_or_default()
    }
}

/// The first member of the object at `s[i]` named `key` (the last one, if repeated).
fn member(s: &[u8], i: usize, key: &[u8]) -> Option<usize> {
    Members::of(s, i, &[key]).get(0)
}

/// Visit the elements of the array at `s[i]` (`f` returns where each ends, `None` to
/// stop); one past the array, or `None` if `f` stopped.
fn elements(s: &[u8], i: usize, mut f: impl FnMut(usize) -> Option<usize>) -> Option<usize> {
    if s.get(i) != Some(&b'[') {
        return Some(skip_value(s, i));
    }
    let mut j = ws(s, i + 1);
    if s.get(j) == Some(&b']') {
        return Some(j + 1);
    }
    while j < s.len() {
        j = ws(s, f(j)?);
        if s.get(j) != Some(&b',') {
            break;
        }
        j = ws(s, j + 1);
    }
    Some(j + 1)
}

/// `extractTextContent` of a message's `content` at `s[v]` into `out` (a string, or
/// the text blocks' texts joined by a space, `null`/absent texts as ""); with `calls`,
/// each tool call's name and the strings of its arguments go there, joined by `\n`.
/// Returns one past the value, or `None` if a text is a value whose `String()` is not
/// computed here. `utf8_ok`: `s` is known to be valid UTF-8; the calls are not read
/// when `settled(text)` says the text alone is enough.
fn text_of(
    s: &[u8],
    v: usize,
    out: &mut Vec<u8>,
    calls: Option<&mut Vec<u8>>,
    budget: usize,
    utf8_ok: bool,
    settled: &mut dyn FnMut(&[u8]) -> bool,
) -> Option<usize> {
    // Past `budget` bytes of text the rest is not needed (a snippet near the start):
    // the walk stops there, as if the line ended.
    let mut cut = false;
    // Tool calls' names and arguments, read once every text block is (they follow
    // the text).
    let mut pending: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    let end = match s.get(v) {
        Some(b'"') => {
            if let Some(t) = string_prefix(s, v, budget, utf8_ok) {
                out.extend_from_slice(&t);
            }
            Some(skip_str(s, v))
        }
        Some(b'[') => {
            let mut first = true;
            elements(s, v, |e| {
                let b = Members::of(s, e, &[b"type", b"text", b"name", b"arguments"]);
                let ty = b
                    .get(0)
                    .and_then(|t| scan::str_bytes_of(s, value(s, t), utf8_ok));
                match ty.as_deref() {
                    Some(b"text") => {
                        if !first {
                            out.push(b' ');
                        }
                        first = false;
                        match b.get(1).map(|t| value(s, t)) {
                            None | Some(Val::Null) | Some(Val::Absent) => {}
                            Some(Val::Str { .. }) => {
                                let rest = budget.saturating_sub(out.len());
                                if let Some(t) =
                                    b.get(1).and_then(|t| string_prefix(s, t, rest, utf8_ok))
                                {
                                    out.extend_from_slice(&t);
                                }
                            }
                            Some(Val::Other { start }) if s[start..].starts_with(b"true") => {
                                out.extend_from_slice(b"true")
                            }
                            Some(Val::Other { start }) if s[start..].starts_with(b"false") => {
                                out.extend_from_slice(b"false")
                            }
                            Some(_) => return None,
                        }
                        if out.len() >= budget {
                            cut = true;
                            return None;
                        }
                    }
                    Some(b"toolCall") if calls.is_some() => {
                        pending.push((b.get(2), b.get(3)));
                    }
                    _ => {}
                }
                Some(b.end)
            })
        }
        _ => Some(skip_value(s, v)),
    };
    let calls = calls.filter(|_| end.is_some() && !cut && !pending.is_empty() && !settled(out));
    if let Some(c) = calls {
        let budget = budget.saturating_sub(out.len() + 1);
        for (name, args) in pending {
            if c.len() >= budget {
                break;
            }
            if let Some(n) = name.and_then(|n| string_prefix(s, n, budget - c.len(), utf8_ok)) {
                part(c, &n);
            }
            if let Some(a) = args {
                leaves(s, a, c, 0, budget, utf8_ok);
            }
        }
    }
    if cut {
        Some(s.len())
    } else {
        end
    }
}

/// Add a non-empty `text` to `out`, after a `\n` if `out` holds some.
fn part(out: &mut Vec<u8>, text: &[u8]) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push(b'\n');
    }
    out.extend_from_slice(text);
}

/// The strings of the value at `s[v]` in `json.loads` order (an object's keys where
/// they first occur, with their last values), each a [`part`]; `utf8_ok`: `s` is known
/// to be valid UTF-8.
fn leaves(s: &[u8], v: usize, out: &mut Vec<u8>, depth: usize, budget: usize, utf8_ok: bool) {
    if depth > scan::MAX_DEPTH || out.len() >= budget {
        return;
    }
    match s.get(v) {
        Some(b'"') => {
            if let Some(t) = string_prefix(s, v, budget - out.len(), utf8_ok) {
                part(out, &t);
            }
        }
        Some(b'[') => {
            elements(s, v, |e| {
                if out.len() >= budget {
                    return None;
                }
                leaves(s, e, out, depth + 1, budget, utf8_ok);
                Some(skip_value(s, e))
            });
        }
        Some(b'{') => {
            // Keys in first-occurrence order, each with its last value.
            let mut slots: Vec<(Cow<'_, [u8]>, usize)> = Vec::new();
            let mut j = ws(s, v + 1);
            while s.get(j) == Some(&b'"') {
                let (ks, ke, esc) = str_body(s, j);
                let raw = s.get(ks..ke).unwrap_or_default();
                let ke = ke + 1;
                let key: Cow<'_, [u8]> = if esc {
                    let mut k = Vec::new();
                    scan::decode_into(raw, true, &mut k);
                    Cow::Owned(k)
                } else {
                    Cow::Borrowed(raw)
                };
                let val = ws(s, ws(s, ke) + 1);
                match slots.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = val,
                    None => slots.push((key, val)),
                }
                j = ws(s, skip_value(s, val));
                if s.get(j) != Some(&b',') {
                    break;
                }
                j = ws(s, j + 1);
            }
            for (_, val) in slots {
                leaves(s, val, out, depth + 1, budget, utf8_ok);
            }
        }
        _ => {}
    }
}

/// `input`, `output`, `cacheRead`, `cacheWrite`, `totalTokens`, `cost.total` of the
/// usage object at `s[u]`.
fn usage_numbers(s: &[u8], u: usize) -> [f64; 6] {
    let m = Members::of(
        s,
        u,
        &[
            b"input",
            b"output",
            b"cacheRead",
            b"cacheWrite",
            b"totalTokens",
            b"cost",
        ],
    );
    let num = |at: Option<usize>| match at.map(|v| value(s, v)) {
        Some(Val::Num { start, end }) => number(&s[start..end]),
        _ => 0.0,
    };
    let mut out = [0.0; 6];
    for (k, o) in out.iter_mut().enumerate().take(5) {
        *o = num(m.get(k));
    }
    out[5] = num(m.get(5).and_then(|c| member(s, c, b"total")));
    out
}

// ---------------------------------------------------------------- the entries record

const NO_PARENT: u32 = u32::MAX;

/// An entry's leaf move in the entries record (loader rule 13): after the id and the
/// parent, `NOT_A_MOVE` for any entry but `leaf`; for a `leaf` entry `MOVE_TO_NULL`
/// (`targetId` null), `MOVES_NOTHING` (`targetId` absent or not a string), else the
/// target's length and bytes.
const NOT_A_MOVE: u32 = u32::MAX;
const MOVE_TO_NULL: u32 = u32::MAX - 1;
const MOVES_NOTHING: u32 = u32::MAX - 2;

/// A record's leaf move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move<'a> {
    /// Not a `leaf` entry: the leaf becomes the entry.
    Not,
    /// `targetId` null: the leaf is before the first entry.
    ToNull,
    /// `targetId` absent or not a string: the leaf stays.
    Nothing,
    /// `targetId`: the leaf moves there if it names an earlier entry, else stays.
    To(&'a [u8]),
}

fn push_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn push_record(out: &mut Vec<u8>, id: &[u8], parent: Option<&[u8]>, mv: Move<'_>) {
    push_bytes(out, id);
    match parent {
        Some(p) => push_bytes(out, p),
        None => out.extend_from_slice(&NO_PARENT.to_le_bytes()),
    }
    match mv {
        Move::Not => out.extend_from_slice(&NOT_A_MOVE.to_le_bytes()),
        Move::ToNull => out.extend_from_slice(&MOVE_TO_NULL.to_le_bytes()),
        Move::Nothing => out.extend_from_slice(&MOVES_NOTHING.to_le_bytes()),
        Move::To(t) => push_bytes(out, t),
    }
}

/// The records of an entries byte string: `(id, parent, move)`; a malformed end stops
/// it.
struct Records<'a>(&'a [u8]);

impl<'a> Iterator for Records<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>, Move<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        // A length, or one of the markers (`None` past the end).
        let take = |b: &mut &'a [u8]| -> Option<std::result::Result<&'a [u8], u32>> {
            let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?);
            *b = &b[4..];
            if n >= MOVES_NOTHING {
                return Some(Err(n));
            }
            let v = b.get(..n as usize)?;
            *b = &b[n as usize..];
            Some(Ok(v))
        };
        let mut b = self.0;
        let id = take(&mut b)?.ok()?;
        let parent = match take(&mut b)? {
            Ok(p) => Some(p),
            Err(NO_PARENT) => None,
            Err(_) => return None,
        };
        let mv = match take(&mut b)? {
            Ok(t) => Move::To(t),
            Err(NOT_A_MOVE) => Move::Not,
            Err(MOVE_TO_NULL) => Move::ToNull,
            Err(_) => Move::Nothing,
        };
        self.0 = b;
        Some((id, parent, mv))
    }
}

/// Rule 13: the leaf after entry `n`, whose move is `mv`, when it was `leaf` before
/// (`None`: before the first entry); `table` holds the ids of entries `0..=n`. A move
/// to an entry not read before `n`, or to `n` itself, moves nothing.
fn leaf_after(
    leaf: Option<u32>,
    n: u32,
    mv: Move<'_>,
    table: &IdTable,
    arena: &IdArena,
) -> Option<u32> {
    match mv {
        Move::Not => Some(n),
        Move::ToNull => None,
        Move::Nothing => leaf,
        Move::To(t) => table.find(t, arena).filter(|&t| t != n).or(leaf),
    }
}

/// The current path of a session given its entries (all of a file's [`Scan::entries`]
/// concatenated: per entry, in file order, a little-endian `u32` length and the id
/// bytes, then the `parentId` the same way or `u32::MAX` when it is not a non-empty
/// string, then its leaf move, [`Move`]): entry numbers from the root down to the leaf
/// on open, by the loader's rules (a parent names an entry anywhere in the file, an
/// unknown or own id makes a root, cycles are broken at their earliest entry; rule 13:
/// after a `leaf` entry the leaf is its `targetId` if that is `null` or an earlier
/// entry, after any other entry that entry).
pub fn entries_path(entries: &[u8]) -> Vec<u32> {
    let mut arena = IdArena::default();
    let mut table = IdTable::new();
    let mut parents = Vec::new();
    let mut n = 0u32;
    let mut leaf: Option<u32> = None;
    for (id, parent, mv) in Records(entries) {
        if table.insert_new(id, n, &arena).is_none() {
            arena.push(id);
            parents.push(parent);
            leaf = leaf_after(leaf, n, mv, &table, &arena);
            n += 1;
        }
    }
    let mut column: Vec<u32> = parents
        .iter()
        .enumerate()
        .map(|(e, p)| match p.and_then(|p| table.find(p, &arena)) {
            Some(q) if q as usize != e => q,
            _ => tree::NONE,
        })
        .collect();
    tree::break_cycles(&mut column);
    match leaf {
        Some(leaf) => tree::path(&column, leaf),
        None => Vec::new(),
    }
}

pub mod indexed;

#[cfg(test)]
mod tests;
