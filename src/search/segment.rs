//! A segment of the search index: an immutable file holding, for pieces of session
//! files (a byte range of one file as the catalog knew it: its id and epoch), the
//! entries with searchable text (where their line is, entry number, time, role) and,
//! per token ([`super::tokens`]), the entries holding it with the place it first
//! starts. Segments are written once (aside, then renamed), found through the catalog
//! and merged by the indexer.
//!
//! Layout (little-endian): a 64-byte header (`MAGIC`, body length, two xxh3 sums,
//! counts, section offsets), then the body: pieces (`file u32, epoch u64, start u64,
//! end u64, first_doc u32, docs u32`), the documents as columns (line offset u64, line
//! length u32, entry number u32, time f64 (NaN: none), role u8), the postings (per
//! token, per document in order, a varint of the document's distance from the
//! previous one and a varint `pos << 1 | unsure`), then the dictionary (sorted
//! tokens: their byte offsets u32 × (n+1), the bytes, their postings' offsets u64 ×
//! (n+1)). The postings come before the dictionary so that both a new segment and a
//! merge write them as they go, holding one token's at a time.
//!
//! Opening a segment checks its header, its sections' bounds and the sum of
//! everything but the postings (pieces, documents, dictionary: what a query trusts to
//! find a line); every read of the postings is bounds-checked and a malformed one is
//! damage (the caller drops the index). A merge reads its inputs with `pread` (its
//! memory is one token's postings, not the inputs) and checks their postings' sum.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use memmap2::Mmap;
use std::hash::Hasher as _;
use twox_hash::XxHash3_64 as Xxh3;

use super::tokens::{tokens_of, Place};
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"STSEG002";
const HEADER: usize = 64;

/// A token's postings: `(document, pos << 1 | unsure)` in document order.
pub type Postings = Vec<(u32, u32)>;

/// A piece of a file a segment covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The catalog's id of the file.
    pub file: u32,
    /// The catalog's epoch of the file's row when the piece was read.
    pub epoch: u64,
    /// Byte range of the file.
    pub start: u64,
    pub end: u64,
    /// Its documents: `first_doc .. first_doc + docs`.
    pub first_doc: u32,
    pub docs: u32,
}

const PIECE_BYTES: usize = 4 + 8 + 8 + 8 + 4 + 4;
const DOC_BYTES: usize = 8 + 4 + 4 + 8 + 1;

/// One document's facts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DocMeta {
    /// Offset and length (without `\n`) of its line.
    pub offset: u64,
    pub len: u32,
    /// Entry number in its file.
    pub seq: u32,
    /// Time (epoch ms; NaN: none).
    pub time: f64,
    /// 0 user, 1 assistant, 2 name.
    pub role: u8,
}

/// Collects documents and writes a segment.
#[derive(Default)]
pub struct Builder {
    pieces: Vec<Piece>,
    docs: Vec<DocMeta>,
    postings: HashMap<Vec<u8>, Postings>,
    places: HashMap<Vec<u8>, Place>,
    chars: Vec<u32>,
    /// Postings held (to bound a segment's memory).
    pub held: usize,
}

impl Builder {
    /// Start a piece of file `file` (catalog id, epoch) at `start`.
    pub fn begin(&mut self, file: u32, epoch: u64, start: u64) {
        self.pieces.push(Piece {
            file,
            epoch,
            start,
            end: start,
            first_doc: self.docs.len() as u32,
            docs: 0,
        });
    }

    /// Add a document of the current piece; `text` in generalized UTF-8.
    pub fn doc(&mut self, meta: DocMeta, text: &[u8]) {
        let d = self.docs.len() as u32;
        self.docs.push(meta);
        if let Some(p) = self.pieces.last_mut() {
            p.docs += 1;
        }
        self.chars.clear();
        self.chars.extend(super::rules::decode(text));
        tokens_of(&self.chars, &mut self.places);
        for (tok, place) in self.places.drain() {
            self.postings
                .entry(tok)
                .or_default()
                .push((d, place.pos << 1 | place.unsure as u32));
            self.held += 1;
        }
    }

    /// End the current piece at `end`.
    pub fn end(&mut self, end: u64) {
        if let Some(p) = self.pieces.last_mut() {
            p.end = end;
        }
    }

    /// Drop the current piece and its documents (its file could not be read here).
    pub fn abandon(&mut self) {
        let Some(p) = self.pieces.pop() else { return };
        let first = p.first_doc;
        self.docs.truncate(first as usize);
        for list in self.postings.values_mut() {
            while list.last().is_some_and(|&(d, _)| d >= first) {
                list.pop();
            }
        }
        self.postings.retain(|_, l| !l.is_empty());
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The pieces so far.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// Write the segment to `path` (created anew); its size in bytes.
    pub fn write(self, path: &Path) -> Result<u64> {
        let mut toks: Vec<(Vec<u8>, Postings)> = self.postings.into_iter().collect();
        toks.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut w = Writer::create(path, &self.pieces, &self.docs)?;
        for (t, l) in &toks {
            w.token(t, l)?;
        }
        w.finish()
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes a segment: pieces and documents first, then one token's postings at a time
/// (in token order), then the dictionary and the header.
struct Writer {
    file: std::io::BufWriter<File>,
    meta: Xxh3,
    post: Xxh3,
    tok_off: Vec<u32>,
    tok_bytes: Vec<u8>,
    post_off: Vec<u64>,
    written: u64,
    scratch: Vec<u8>,
    n_pieces: u32,
    n_docs: u32,
    off_post: u64,
}

impl Writer {
    fn create(path: &Path, pieces: &[Piece], docs: &[DocMeta]) -> Result<Writer> {
        let mut file = std::io::BufWriter::with_capacity(1 << 20, File::create(path)?);
        file.write_all(&[0u8; HEADER])?;
        let mut head = Vec::with_capacity(pieces.len() * PIECE_BYTES + docs.len() * DOC_BYTES);
        for p in pieces {
            head.extend_from_slice(&p.file.to_le_bytes());
            head.extend_from_slice(&p.epoch.to_le_bytes());
            head.extend_from_slice(&p.start.to_le_bytes());
            head.extend_from_slice(&p.end.to_le_bytes());
            head.extend_from_slice(&p.first_doc.to_le_bytes());
            head.extend_from_slice(&p.docs.to_le_bytes());
        }
        for d in docs {
            head.extend_from_slice(&d.offset.to_le_bytes());
        }
        for d in docs {
            head.extend_from_slice(&d.len.to_le_bytes());
        }
        for d in docs {
            head.extend_from_slice(&d.seq.to_le_bytes());
        }
        for d in docs {
            head.extend_from_slice(&d.time.to_le_bytes());
        }
        head.extend(docs.iter().map(|d| d.role));
        file.write_all(&head)?;
        let mut meta = Xxh3::new();
        meta.write(&head);
        Ok(Writer {
            file,
            meta,
            post: Xxh3::new(),
            tok_off: vec![0],
            tok_bytes: Vec::new(),
            post_off: vec![0],
            written: 0,
            scratch: Vec::new(),
            n_pieces: pieces.len() as u32,
            n_docs: docs.len() as u32,
            off_post: head.len() as u64,
        })
    }

    /// The next token (greater than the last) and its postings, documents ascending.
    fn token(&mut self, tok: &[u8], list: &[(u32, u32)]) -> Result<()> {
        self.scratch.clear();
        let mut prev = 0u32;
        for (k, &(d, p)) in list.iter().enumerate() {
            varint(
                &mut self.scratch,
                (d - if k == 0 { 0 } else { prev }) as u64,
            );
            varint(&mut self.scratch, p as u64);
            prev = d;
        }
        self.file.write_all(&self.scratch)?;
        self.post.write(&self.scratch);
        self.written += self.scratch.len() as u64;
        self.tok_bytes.extend_from_slice(tok);
        self.tok_off.push(self.tok_bytes.len() as u32);
        self.post_off.push(self.written);
        Ok(())
    }

    fn finish(mut self) -> Result<u64> {
        let mut dict = Vec::with_capacity(
            4 * self.tok_off.len() + self.tok_bytes.len() + 8 * self.post_off.len(),
        );
        for o in &self.tok_off {
            dict.extend_from_slice(&o.to_le_bytes());
        }
        dict.extend_from_slice(&self.tok_bytes);
        for o in &self.post_off {
            dict.extend_from_slice(&o.to_le_bytes());
        }
        self.file.write_all(&dict)?;
        self.meta.write(&dict);
        let body = self.off_post + self.written + dict.len() as u64;
        let mut head = Vec::with_capacity(HEADER);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&body.to_le_bytes());
        head.extend_from_slice(&self.meta.finish().to_le_bytes());
        head.extend_from_slice(&self.post.finish().to_le_bytes());
        head.extend_from_slice(&self.n_pieces.to_le_bytes());
        head.extend_from_slice(&self.n_docs.to_le_bytes());
        head.extend_from_slice(&((self.tok_off.len() - 1) as u32).to_le_bytes());
        head.extend_from_slice(&(self.tok_bytes.len() as u32).to_le_bytes());
        head.extend_from_slice(&self.off_post.to_le_bytes());
        head.extend_from_slice(&(self.off_post + self.written).to_le_bytes());
        head.resize(HEADER, 0);
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&head)?;
        file.sync_all()?;
        Ok(HEADER as u64 + body)
    }
}

fn damaged(path: &Path, why: &str) -> Error {
    Error::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: a damaged search segment ({why})", path.display()),
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Where a segment's sections are (offsets in the file), from its header.
#[derive(Clone, Copy, Debug)]
struct Layout {
    n_docs: usize,
    n_tokens: usize,
    meta_sum: u64,
    post_sum: u64,
    pieces: usize,
    docs: usize,
    post: usize,
    tok_off: usize,
    tok_bytes: usize,
    post_off: usize,
    end: usize,
}

impl Layout {
    fn of(head: &[u8], file_len: usize, path: &Path) -> Result<Layout> {
        let bad = |why| damaged(path, why);
        if head.len() < HEADER || &head[..8] != MAGIC {
            return Err(bad("not a segment"));
        }
        let h = |at| u64_at(head, at).ok_or_else(|| bad("header"));
        let w = |at| {
            u32_at(head, at)
                .map(|x| x as usize)
                .ok_or_else(|| bad("header"))
        };
        let body = h(8)? as usize;
        let (n_pieces, n_docs, n_tokens, n_tok_bytes) = (w(32)?, w(36)?, w(40)?, w(44)?);
        // Counts read from the file are checked against its length before any use.
        let (off_post, off_dict) = (h(48)? as usize, h(56)? as usize);
        let pieces = HEADER;
        let docs = pieces.checked_add(
            n_pieces
                .checked_mul(PIECE_BYTES)
                .ok_or_else(|| bad("counts"))?,
        );
        let docs = docs.ok_or_else(|| bad("counts"))?;
        let post = HEADER
            .checked_add(off_post)
            .ok_or_else(|| bad("sections"))?;
        let tok_off = HEADER
            .checked_add(off_dict)
            .ok_or_else(|| bad("sections"))?;
        let tok_bytes = tok_off + 4 * (n_tokens + 1);
        let post_off = tok_bytes + n_tok_bytes;
        let end = post_off + 8 * (n_tokens + 1);
        if file_len != HEADER + body
            || docs.checked_add(n_docs.checked_mul(DOC_BYTES).ok_or_else(|| bad("counts"))?)
                != Some(post)
            || post > tok_off
            || end != file_len
        {
            return Err(bad("sections"));
        }
        Ok(Layout {
            n_docs,
            n_tokens,
            meta_sum: h(16)?,
            post_sum: h(24)?,
            pieces,
            docs,
            post,
            tok_off,
            tok_bytes,
            post_off,
            end,
        })
    }
}

/// A segment opened for reading (queries: a map, bounds-checked).
pub struct Segment {
    map: Mmap,
    l: Layout,
}

impl Segment {
    /// Open the segment at `path`, its header, bounds and all but its postings checked.
    ///
    /// # Errors
    /// It cannot be read, or it is not a whole, undamaged segment (`InvalidData`).
    pub fn open(path: &Path) -> Result<Segment> {
        // Never blocks on a FIFO put in a segment's place, nor maps a device.
        let file = crate::source::open_regular(path)?;
        // SAFETY: segments are written once, aside, and renamed into place; never
        // changed afterwards (a truncation by another program is the one risk of any
        // map, as for the catalog's SQLite file).
        let map = unsafe { Mmap::map(&file)? };
        let l = Layout::of(&map[..map.len().min(HEADER)], map.len(), path)?;
        let mut meta = Xxh3::new();
        meta.write(&map[l.pieces..l.post]);
        meta.write(&map[l.tok_off..l.end]);
        if meta.finish() != l.meta_sum {
            return Err(damaged(path, "checksum"));
        }
        Ok(Segment { map, l })
    }

    /// The pieces.
    pub fn pieces(&self) -> Vec<Piece> {
        pieces_of(&self.map[self.l.pieces..self.l.docs])
    }

    /// Documents.
    pub fn n_docs(&self) -> usize {
        self.l.n_docs
    }

    /// Document `d`'s facts.
    pub fn doc(&self, d: usize) -> Option<DocMeta> {
        doc_of(&self.map[self.l.docs..self.l.post], self.l.n_docs, d)
    }

    /// Token `i`'s bytes.
    fn token(&self, i: usize) -> Option<&[u8]> {
        let b = &self.map[..];
        let lo = u32_at(b, self.l.tok_off + 4 * i)? as usize;
        let hi = u32_at(b, self.l.tok_off + 4 * i + 4)? as usize;
        b.get(self.l.tok_bytes + lo..self.l.tok_bytes + hi)
    }

    /// The first token index whose bytes are `>= key`.
    fn lower_bound(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.l.n_tokens);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.token(mid).is_some_and(|t| t < key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The token indices matching `key` exactly (`whole`) or as a prefix.
    pub fn lookup(&self, key: &[u8], whole: bool) -> std::ops::Range<usize> {
        let lo = self.lower_bound(key);
        let mut hi = lo;
        while hi < self.l.n_tokens {
            let Some(t) = self.token(hi) else { break };
            if (whole && t != key) || !t.starts_with(key) {
                break;
            }
            hi += 1;
            if whole {
                break;
            }
        }
        lo..hi
    }

    /// Visit token `i`'s postings: `f(doc, pos, unsure)`; `false` if they are malformed.
    pub fn postings(&self, i: usize, f: impl FnMut(u32, u32, bool)) -> bool {
        let b = &self.map[..];
        let (Some(lo), Some(hi)) = (
            u64_at(b, self.l.post_off + 8 * i),
            u64_at(b, self.l.post_off + 8 * i + 8),
        ) else {
            return false;
        };
        let (lo, hi) = (self.l.post + lo as usize, self.l.post + hi as usize);
        if lo > hi || hi > self.l.tok_off {
            return false;
        }
        decode_postings(&b[lo..hi], self.l.n_docs, f)
    }
}

fn pieces_of(b: &[u8]) -> Vec<Piece> {
    b.chunks_exact(PIECE_BYTES)
        .filter_map(|c| {
            Some(Piece {
                file: u32_at(c, 0)?,
                epoch: u64_at(c, 4)?,
                start: u64_at(c, 12)?,
                end: u64_at(c, 20)?,
                first_doc: u32_at(c, 28)?,
                docs: u32_at(c, 32)?,
            })
        })
        .collect()
}

fn doc_of(b: &[u8], n: usize, d: usize) -> Option<DocMeta> {
    if d >= n {
        return None;
    }
    Some(DocMeta {
        offset: u64_at(b, 8 * d)?,
        len: u32_at(b, 8 * n + 4 * d)?,
        seq: u32_at(b, 12 * n + 4 * d)?,
        time: f64::from_bits(u64_at(b, 16 * n + 8 * d)?),
        role: *b.get(24 * n + d)?,
    })
}

/// Decode one token's postings (`f(doc, pos, unsure)`, documents below `n_docs` and
/// ascending); `false` if they are malformed.
fn decode_postings(mut p: &[u8], n_docs: usize, mut f: impl FnMut(u32, u32, bool)) -> bool {
    let mut d = 0u64;
    let mut first = true;
    while !p.is_empty() {
        let (Some(delta), Some(pp)) = (read_varint(&mut p), read_varint(&mut p)) else {
            return false;
        };
        if !first && delta == 0 {
            return false;
        }
        d = if first { delta } else { d + delta };
        first = false;
        if d >= n_docs as u64 || pp > u32::MAX as u64 {
            return false;
        }
        f(d as u32, (pp >> 1) as u32, pp & 1 == 1);
    }
    true
}

fn read_varint(p: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = p.split_first()?;
        *p = rest;
        v |= u64::from(b & 0x7F) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// A segment read for a merge: its small sections in memory, its postings read from
/// the file token by token.
struct Input {
    file: File,
    l: Layout,
    pieces: Vec<Piece>,
    docs: Vec<u8>,
    tok_off: Vec<u32>,
    tok_bytes: Vec<u8>,
    post_off: Vec<u64>,
    post: Xxh3,
}

impl Input {
    fn open(path: &Path) -> Result<Input> {
        let file = crate::source::open_regular(path)?;
        let len = file.metadata()?.len() as usize;
        let mut head = [0u8; HEADER];
        read_exact_at(&file, &mut head, 0)?;
        let l = Layout::of(&head, len, path)?;
        let mut meta = vec![0u8; l.post - l.pieces];
        read_exact_at(&file, &mut meta, l.pieces as u64)?;
        let mut dict = vec![0u8; l.end - l.tok_off];
        read_exact_at(&file, &mut dict, l.tok_off as u64)?;
        let mut sum = Xxh3::new();
        sum.write(&meta);
        sum.write(&dict);
        if sum.finish() != l.meta_sum {
            return Err(damaged(path, "checksum"));
        }
        let n = l.n_tokens + 1;
        let tok_off: Vec<u32> = dict[..4 * n]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
            .collect();
        let tok_bytes = dict[4 * n..l.post_off - l.tok_off].to_vec();
        let post_off: Vec<u64> = dict[l.post_off - l.tok_off..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        let pieces = pieces_of(&meta[..l.docs - l.pieces]);
        let docs = meta[l.docs - l.pieces..].to_vec();
        Ok(Input {
            file,
            l,
            pieces,
            docs,
            tok_off,
            tok_bytes,
            post_off,
            post: Xxh3::new(),
        })
    }

    fn token(&self, i: usize) -> Option<&[u8]> {
        let lo = *self.tok_off.get(i)? as usize;
        let hi = *self.tok_off.get(i + 1)? as usize;
        self.tok_bytes.get(lo..hi)
    }

    /// Token `i`'s postings (read in token order, so that their sum can be checked).
    fn postings(&mut self, i: usize, buf: &mut Vec<u8>, out: &mut Postings) -> Option<()> {
        let lo = *self.post_off.get(i)?;
        let hi = *self.post_off.get(i + 1)?;
        if lo > hi || self.l.post as u64 + hi > self.l.tok_off as u64 {
            return None;
        }
        buf.resize((hi - lo) as usize, 0);
        read_exact_at(&self.file, buf, self.l.post as u64 + lo).ok()?;
        self.post.write(buf);
        out.clear();
        decode_postings(buf, self.l.n_docs, |d, p, u| {
            out.push((d, p << 1 | u as u32))
        })
        .then_some(())
    }
}

fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, at)
}

/// Merge the segments at `inputs` into one at `path`, keeping the pieces `live(piece)`
/// says are; its size and the pieces kept. Memory holds the documents' facts, the
/// dictionaries and one token's postings.
///
/// # Errors
/// An input cannot be read or is damaged (its sum, its structure), or the output
/// cannot be written.
pub fn merge(
    inputs: &[&Path],
    live: impl Fn(&Piece) -> bool,
    path: &Path,
) -> Result<(u64, Vec<Piece>)> {
    let mut ins = inputs
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    let mut pieces = Vec::new();
    let mut docs = Vec::new();
    // Per input: old document → new number.
    let mut maps: Vec<Vec<u32>> = Vec::new();
    for (k, s) in ins.iter().enumerate() {
        let mut map = vec![u32::MAX; s.l.n_docs];
        for p in &s.pieces {
            if !live(p) {
                continue;
            }
            let first = docs.len() as u32;
            for d in p.first_doc..p.first_doc.saturating_add(p.docs) {
                let Some(meta) = doc_of(&s.docs, s.l.n_docs, d as usize) else {
                    return Err(damaged(inputs[k], "documents"));
                };
                map[d as usize] = docs.len() as u32;
                docs.push(meta);
            }
            pieces.push(Piece {
                first_doc: first,
                docs: docs.len() as u32 - first,
                ..*p
            });
        }
        maps.push(map);
    }
    let mut w = Writer::create(path, &pieces, &docs)?;
    let mut cursor = vec![0usize; ins.len()];
    let (mut buf, mut got, mut list) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let mut best: Option<Vec<u8>> = None;
        for (k, s) in ins.iter().enumerate() {
            if let Some(t) = s.token(cursor[k]) {
                if best.as_deref().is_none_or(|b| t < b) {
                    best = Some(t.to_vec());
                }
            }
        }
        let Some(tok) = best else { break };
        list.clear();
        for k in 0..ins.len() {
            if ins[k].token(cursor[k]) != Some(tok.as_slice()) {
                continue;
            }
            if ins[k].postings(cursor[k], &mut buf, &mut got).is_none() {
                return Err(damaged(inputs[k], "postings"));
            }
            list.extend(got.iter().filter_map(|&(d, p)| {
                let n = maps[k][d as usize];
                (n != u32::MAX).then_some((n, p))
            }));
            cursor[k] += 1;
        }
        if !list.is_empty() {
            list.sort_unstable_by_key(|x| x.0);
            w.token(&tok, &list)?;
        }
    }
    for (k, s) in ins.iter().enumerate() {
        if s.post.finish() != s.l.post_sum {
            return Err(damaged(inputs[k], "checksum"));
        }
    }
    let size = w.finish()?;
    Ok((size, pieces))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(offset: u64) -> DocMeta {
        DocMeta {
            offset,
            len: 10,
            seq: offset as u32,
            time: 1.0,
            role: 0,
        }
    }

    fn words(s: &Segment, key: &[u8], whole: bool) -> Vec<(u32, u32, bool)> {
        let mut out = Vec::new();
        for i in s.lookup(key, whole) {
            assert!(s.postings(i, |d, p, u| out.push((d, p, u))));
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn write_read_merge() {
        let dir = std::env::temp_dir().join(format!("st-seg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut b = Builder::default();
        b.begin(7, 99, 0);
        b.doc(meta(10), "the session and the sessions".as_bytes());
        b.doc(meta(20), "«Session» x".as_bytes());
        b.end(30);
        b.begin(8, 5, 100);
        b.doc(meta(110), "nothing".as_bytes());
        b.end(120);
        let a = dir.join("a.seg");
        b.write(&a).unwrap();
        let s = Segment::open(&a).unwrap();
        assert_eq!(s.pieces().len(), 2);
        assert_eq!(s.doc(1).unwrap().offset, 20);
        assert_eq!(
            words(&s, b"session", true),
            vec![(0, 4, false), (1, 1, false)]
        );
        assert_eq!(
            words(&s, b"sess", false),
            vec![(0, 4, false), (0, 20, false), (1, 1, false)]
        );
        assert!(words(&s, b"sess", true).is_empty());
        let mut b2 = Builder::default();
        b2.begin(9, 1, 0);
        b2.doc(meta(5), b"sessile");
        b2.end(6);
        let c = dir.join("c.seg");
        b2.write(&c).unwrap();
        let m = dir.join("m.seg");
        let (_, kept) = merge(&[a.as_path(), c.as_path()], |p| p.file != 8, &m).unwrap();
        assert_eq!(kept.len(), 2);
        let s = Segment::open(&m).unwrap();
        assert_eq!(s.n_docs(), 3);
        assert_eq!(words(&s, b"sess", false).len(), 4);
        assert!(words(&s, b"nothing", true).is_empty());
        // Damage is an error, not a panic: in the dictionary (seen on open), in the
        // postings (seen by a merge, or a read that finds them malformed).
        let good = std::fs::read(&m).unwrap();
        let mut bytes = good.clone();
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        std::fs::write(&m, &bytes).unwrap();
        assert!(Segment::open(&m).is_err());
        let s = Segment::open(&a).unwrap();
        let post = s.l.post;
        let mut bytes = std::fs::read(&a).unwrap();
        bytes[post] ^= 0x40;
        std::fs::write(&a, &bytes).unwrap();
        assert!(merge(&[a.as_path()], |_| true, &dir.join("x.seg")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
