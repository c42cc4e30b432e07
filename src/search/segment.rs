//! A segment of the search index: an immutable file holding, for pieces of session
//! files (a byte range of one file as the catalog knew it: its id and epoch), the
//! entries with searchable text (where their line is, entry number, time, role) and,
//! per token ([`super::tokens`]), the entries holding it with the place it first
//! starts. Segments are written once, found through the catalog, merged by the
//! indexer, and read through a map that every access bounds-checks (a damaged file
//! gives an error, never a panic or a wrong read past its end; its checksum is checked
//! when it is opened).
//!
//! Layout (little-endian): a 64-byte header (`MAGIC`, body length, xxh3 of the body,
//! counts, section offsets), then the body: pieces (`file u32, epoch u64, start u64,
//! end u64, first_doc u32, docs u32`), the documents as columns (line offset u64,
//! line length u32, entry number u32, time f64 (NaN: none), role u8), the dictionary
//! (sorted tokens: their byte offsets u32 × (n+1), the bytes, their postings' offsets
//! u64 × (n+1)), and the postings: per token, per document in order, a varint of the
//! document's distance from the previous one and a varint `pos << 1 | unsure`.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use memmap2::Mmap;

use super::tokens::{tokens_of, Place};
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"STSEG001";
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
        encode(
            path,
            &self.pieces,
            &self.docs,
            toks.iter().map(|(t, l)| (t.as_slice(), l.as_slice())),
        )
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Write a segment from its parts (tokens sorted, each with its postings in document
/// order).
fn encode<'a>(
    path: &Path,
    pieces: &[Piece],
    docs: &[DocMeta],
    toks: impl Iterator<Item = (&'a [u8], &'a [(u32, u32)])>,
) -> Result<u64> {
    let mut body = Vec::new();
    for p in pieces {
        body.extend_from_slice(&p.file.to_le_bytes());
        body.extend_from_slice(&p.epoch.to_le_bytes());
        body.extend_from_slice(&p.start.to_le_bytes());
        body.extend_from_slice(&p.end.to_le_bytes());
        body.extend_from_slice(&p.first_doc.to_le_bytes());
        body.extend_from_slice(&p.docs.to_le_bytes());
    }
    for d in docs {
        body.extend_from_slice(&d.offset.to_le_bytes());
    }
    for d in docs {
        body.extend_from_slice(&d.len.to_le_bytes());
    }
    for d in docs {
        body.extend_from_slice(&d.seq.to_le_bytes());
    }
    for d in docs {
        body.extend_from_slice(&d.time.to_le_bytes());
    }
    body.extend(docs.iter().map(|d| d.role));
    let off_dict = body.len() as u64;
    let mut tok_off: Vec<u32> = vec![0];
    let mut tok_bytes = Vec::new();
    let mut post_off: Vec<u64> = vec![0];
    let mut post = Vec::new();
    for (tok, list) in toks {
        tok_bytes.extend_from_slice(tok);
        tok_off.push(tok_bytes.len() as u32);
        let mut prev = 0u32;
        for (k, &(d, p)) in list.iter().enumerate() {
            varint(&mut post, (d - if k == 0 { 0 } else { prev }) as u64);
            varint(&mut post, p as u64);
            prev = d;
        }
        post_off.push(post.len() as u64);
    }
    let n_tokens = tok_off.len() - 1;
    for o in &tok_off {
        body.extend_from_slice(&o.to_le_bytes());
    }
    body.extend_from_slice(&tok_bytes);
    for o in &post_off {
        body.extend_from_slice(&o.to_le_bytes());
    }
    let off_post = body.len() as u64;
    body.extend_from_slice(&post);
    let mut head = Vec::with_capacity(HEADER);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&(body.len() as u64).to_le_bytes());
    head.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
    head.extend_from_slice(&(pieces.len() as u32).to_le_bytes());
    head.extend_from_slice(&(docs.len() as u32).to_le_bytes());
    head.extend_from_slice(&(n_tokens as u32).to_le_bytes());
    head.extend_from_slice(&(tok_bytes.len() as u32).to_le_bytes());
    head.extend_from_slice(&off_dict.to_le_bytes());
    head.extend_from_slice(&off_post.to_le_bytes());
    head.resize(HEADER, 0);
    let mut f = File::create(path)?;
    f.write_all(&head)?;
    f.write_all(&body)?;
    f.sync_all()?;
    Ok((HEADER + body.len()) as u64)
}

fn damaged(path: &Path, why: &str) -> Error {
    Error::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: a damaged search segment ({why})", path.display()),
    ))
}

/// A segment opened for reading.
pub struct Segment {
    map: Mmap,
    n_pieces: usize,
    n_docs: usize,
    n_tokens: usize,
    /// Section offsets in the map.
    pieces: usize,
    docs: usize,
    tok_off: usize,
    tok_bytes: usize,
    post_off: usize,
    post: usize,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl Segment {
    /// Open and check the segment at `path`.
    ///
    /// # Errors
    /// It cannot be read, or it is not a whole, undamaged segment (`InvalidData`).
    pub fn open(path: &Path) -> Result<Segment> {
        let file = File::open(path)?;
        // SAFETY: segments are written once, aside, and renamed into place; never
        // changed afterwards (a truncation by another program is the one risk of any
        // map, as for the catalog's SQLite file).
        let map = unsafe { Mmap::map(&file)? };
        let b = &map[..];
        let bad = |why| damaged(path, why);
        if b.len() < HEADER || &b[..8] != MAGIC {
            return Err(bad("not a segment"));
        }
        let body_len = u64_at(b, 8).ok_or_else(|| bad("header"))? as usize;
        if b.len() != HEADER + body_len {
            return Err(bad("length"));
        }
        let sum = u64_at(b, 16).ok_or_else(|| bad("header"))?;
        if xxhash_rust::xxh3::xxh3_64(&b[HEADER..]) != sum {
            return Err(bad("checksum"));
        }
        let n_pieces = u32_at(b, 24).ok_or_else(|| bad("header"))? as usize;
        let n_docs = u32_at(b, 28).ok_or_else(|| bad("header"))? as usize;
        let n_tokens = u32_at(b, 32).ok_or_else(|| bad("header"))? as usize;
        let n_tok_bytes = u32_at(b, 36).ok_or_else(|| bad("header"))? as usize;
        let off_dict = u64_at(b, 40).ok_or_else(|| bad("header"))? as usize;
        let off_post = u64_at(b, 48).ok_or_else(|| bad("header"))? as usize;
        let pieces = HEADER;
        let docs = pieces + n_pieces * PIECE_BYTES;
        let tok_off = HEADER + off_dict;
        let tok_bytes = tok_off + 4 * (n_tokens + 1);
        let post_off = tok_bytes + n_tok_bytes;
        let post = HEADER + off_post;
        let s = Segment {
            map,
            n_pieces,
            n_docs,
            n_tokens,
            pieces,
            docs,
            tok_off,
            tok_bytes,
            post_off,
            post,
        };
        if docs + n_docs * 25 != tok_off
            || post_off + 8 * (n_tokens + 1) != post
            || post > s.map.len()
        {
            return Err(bad("sections"));
        }
        Ok(s)
    }

    /// The pieces.
    pub fn pieces(&self) -> Vec<Piece> {
        let b = &self.map[..];
        (0..self.n_pieces)
            .filter_map(|i| {
                let at = self.pieces + i * PIECE_BYTES;
                Some(Piece {
                    file: u32_at(b, at)?,
                    epoch: u64_at(b, at + 4)?,
                    start: u64_at(b, at + 12)?,
                    end: u64_at(b, at + 20)?,
                    first_doc: u32_at(b, at + 28)?,
                    docs: u32_at(b, at + 32)?,
                })
            })
            .collect()
    }

    /// Documents.
    pub fn n_docs(&self) -> usize {
        self.n_docs
    }

    /// Document `d`'s facts.
    pub fn doc(&self, d: usize) -> Option<DocMeta> {
        let b = &self.map[..];
        let n = self.n_docs;
        if d >= n {
            return None;
        }
        let base = self.docs;
        Some(DocMeta {
            offset: u64_at(b, base + 8 * d)?,
            len: u32_at(b, base + 8 * n + 4 * d)?,
            seq: u32_at(b, base + 12 * n + 4 * d)?,
            time: f64::from_bits(u64_at(b, base + 16 * n + 8 * d)?),
            role: *b.get(base + 24 * n + d)?,
        })
    }

    /// Token `i`'s bytes.
    fn token(&self, i: usize) -> Option<&[u8]> {
        let b = &self.map[..];
        let lo = u32_at(b, self.tok_off + 4 * i)? as usize;
        let hi = u32_at(b, self.tok_off + 4 * i + 4)? as usize;
        b.get(self.tok_bytes + lo..self.tok_bytes + hi)
    }

    /// Tokens: how many.
    pub fn n_tokens(&self) -> usize {
        self.n_tokens
    }

    /// The first token index whose bytes are `>= key`.
    fn lower_bound(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.n_tokens);
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
        while hi < self.n_tokens {
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
    pub fn postings(&self, i: usize, mut f: impl FnMut(u32, u32, bool)) -> bool {
        let b = &self.map[..];
        let (Some(lo), Some(hi)) = (
            u64_at(b, self.post_off + 8 * i),
            u64_at(b, self.post_off + 8 * i + 8),
        ) else {
            return false;
        };
        let Some(mut p) = b.get(self.post + lo as usize..self.post + hi as usize) else {
            return false;
        };
        let mut d = 0u64;
        let mut first = true;
        while !p.is_empty() {
            let (Some(delta), Some(pp)) = (read_varint(&mut p), read_varint(&mut p)) else {
                return false;
            };
            d = if first { delta } else { d + delta };
            first = false;
            if d >= self.n_docs as u64 || pp > u32::MAX as u64 {
                return false;
            }
            f(d as u32, (pp >> 1) as u32, pp & 1 == 1);
        }
        true
    }

    /// Token `i`'s bytes and its postings as pairs (for a merge).
    fn token_list(&self, i: usize) -> Option<(&[u8], Postings)> {
        let t = self.token(i)?;
        let mut l = Vec::new();
        self.postings(i, |d, p, u| l.push((d, p << 1 | u as u32)))
            .then_some((t, l))
    }
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

/// Merge segments into one at `path`, keeping the pieces `live(piece)` says are; its
/// size, and the pieces kept. Postings are read token by token from each input in
/// order, so memory holds one token's postings at a time (and the documents' facts).
pub fn merge(
    inputs: &[Segment],
    live: impl Fn(&Piece) -> bool,
    path: &Path,
) -> Result<(u64, Vec<Piece>)> {
    let mut pieces = Vec::new();
    let mut docs = Vec::new();
    // Per input: old document → new number.
    let mut maps: Vec<Vec<u32>> = Vec::new();
    for s in inputs {
        let mut map = vec![u32::MAX; s.n_docs()];
        for p in s.pieces() {
            if !live(&p) {
                continue;
            }
            let first = docs.len() as u32;
            for d in p.first_doc..p.first_doc.saturating_add(p.docs) {
                let Some(meta) = s.doc(d as usize) else {
                    return Err(damaged(path, "documents"));
                };
                map[d as usize] = docs.len() as u32;
                docs.push(meta);
            }
            pieces.push(Piece {
                first_doc: first,
                docs: docs.len() as u32 - first,
                ..p
            });
        }
        maps.push(map);
    }
    // k-way merge of the sorted dictionaries.
    let mut cursor = vec![0usize; inputs.len()];
    let mut merged: Vec<(Vec<u8>, Postings)> = Vec::new();
    loop {
        let mut best: Option<&[u8]> = None;
        for (k, s) in inputs.iter().enumerate() {
            if let Some(t) = (cursor[k] < s.n_tokens())
                .then(|| s.token(cursor[k]))
                .flatten()
            {
                if best.is_none_or(|b| t < b) {
                    best = Some(t);
                }
            }
        }
        let Some(tok) = best.map(<[u8]>::to_vec) else {
            break;
        };
        let mut list = Vec::new();
        for (k, s) in inputs.iter().enumerate() {
            if cursor[k] < s.n_tokens() && s.token(cursor[k]) == Some(tok.as_slice()) {
                let Some((_, l)) = s.token_list(cursor[k]) else {
                    return Err(damaged(path, "postings"));
                };
                list.extend(l.into_iter().filter_map(|(d, p)| {
                    let n = maps[k][d as usize];
                    (n != u32::MAX).then_some((n, p))
                }));
                cursor[k] += 1;
            }
        }
        if !list.is_empty() {
            list.sort_unstable_by_key(|x| x.0);
            merged.push((tok, list));
        }
    }
    let size = encode(
        path,
        &pieces,
        &docs,
        merged.iter().map(|(t, l)| (t.as_slice(), l.as_slice())),
    )?;
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
        let inputs = [Segment::open(&a).unwrap(), Segment::open(&c).unwrap()];
        let (_, kept) = merge(&inputs, |p| p.file != 8, &m).unwrap();
        assert_eq!(kept.len(), 2);
        let s = Segment::open(&m).unwrap();
        assert_eq!(s.n_docs(), 3);
        assert_eq!(words(&s, b"sess", false).len(), 4);
        assert!(words(&s, b"nothing", true).is_empty());
        // Damage is an error, not a panic.
        let mut bytes = std::fs::read(&m).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        std::fs::write(&m, &bytes).unwrap();
        assert!(Segment::open(&m).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
