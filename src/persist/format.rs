//! The bytes of a persisted index file: a fixed header, a head (the values of
//! `state.rs`, little-endian, read back in the order they were written, then a table
//! of the sections), and the sections, each at an offset aligned to 8 bytes so that a
//! column can be read in place from a map of the file (`col.rs`).
//!
//! ```text
//! offset  size  field
//!      0     8  MAGIC
//!      8     4  FORMAT (u32)
//!     12     4  0 (reserved)
//!     16     8  the build's source stamp (build.rs): another build's file is not read
//!     24     8  head length (u64)
//!     32     8  file length (u64)
//!     40     8  xxh3-64 of the head
//!     48     8  length of the head's fields (u64)
//!     56     8  xxh3-64 of bytes 0..56
//!     64     …  head: fields, then per section (offset, length, xxh3-64) as u64s
//!      …     …  sections
//! ```
//!
//! Nothing here knows what the values mean (`state.rs` does); a file that is short,
//! long, damaged or of another format or build fails [`open`].

/// The first bytes of every persisted index (a `\r\n` and a `^Z` as PNG's, so a file
/// that went through a text conversion is not one).
pub(crate) const MAGIC: [u8; 8] = *b"STIDX\r\n\x1a";

/// The layout's version: bumped whenever what `state.rs` writes changes shape.
pub(crate) const FORMAT: u32 = 4;

/// Bytes before the head.
pub(crate) const HEADER: usize = 64;

/// The build's stamp (`build.rs`): a hash of the core's sources.
pub(crate) fn stamp() -> u64 {
    u64::from_str_radix(env!("SESSIONTREE_SOURCE_HASH"), 16).unwrap_or(0)
}

fn hash(b: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(b)
}

/// Values appended in order.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub(crate) fn bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn i128(&mut self, v: i128) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A length (u64), then the bytes.
    pub(crate) fn bytes(&mut self, v: &[u8]) {
        self.u64(v.len() as u64);
        self.buf.extend_from_slice(v);
    }
    /// 0, or 1 and the bytes.
    pub(crate) fn opt_bytes(&mut self, v: Option<&[u8]>) {
        match v {
            None => self.u8(0),
            Some(b) => {
                self.u8(1);
                self.bytes(b);
            }
        }
    }
    pub(crate) fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                self.u64(x);
            }
        }
    }
    /// A count (u64), then each item by `f`.
    pub(crate) fn list<T>(&mut self, v: &[T], mut f: impl FnMut(&mut Writer, &T)) {
        self.u64(v.len() as u64);
        for x in v {
            f(self, x);
        }
    }
    /// A count, then the `u32`s back to back.
    pub(crate) fn u32s(&mut self, v: &[u32]) {
        self.u64(v.len() as u64);
        self.buf.reserve(v.len() * 4);
        for &x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }
}

/// Values read back in the order they were written; every read is bounds-checked
/// (`None`: the bytes end too soon or hold what no writer writes).
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
    fn arr<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.arr::<1>()?[0])
    }
    pub(crate) fn bool(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.arr().map(u32::from_le_bytes)
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.arr().map(u64::from_le_bytes)
    }
    pub(crate) fn i128(&mut self) -> Option<i128> {
        self.arr().map(i128::from_le_bytes)
    }
    /// A length no larger than the bytes left (a count of items of `size` bytes).
    pub(crate) fn count(&mut self, size: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(size.max(1))? <= self.b.len() - self.at).then_some(n)
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.count(1)?;
        self.take(n)
    }
    pub(crate) fn opt_bytes(&mut self) -> Option<Option<&'a [u8]>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.bytes().map(Some),
            _ => None,
        }
    }
    pub(crate) fn opt_u64(&mut self) -> Option<Option<u64>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.u64().map(Some),
            _ => None,
        }
    }
    /// A list of items of at least `size` bytes each, read by `f`.
    pub(crate) fn list<T>(
        &mut self,
        size: usize,
        mut f: impl FnMut(&mut Reader<'a>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let n = self.count(size)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(f(self)?);
        }
        Some(v)
    }
    pub(crate) fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.count(4)?;
        let raw = self.take(n * 4)?;
        Some(
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }
    /// Every byte was read.
    pub(crate) fn done(&self) -> bool {
        self.at == self.b.len()
    }
}

fn align8(n: usize) -> usize {
    n.next_multiple_of(8)
}

/// The file's bytes: the header, the head (`fields`, then the table of `sections`),
/// and the sections.
pub(crate) fn assemble(fields: &[u8], sections: &[&[u8]]) -> Vec<u8> {
    let head_len = fields.len() + 8 + sections.len() * 24;
    let mut at = align8(HEADER + head_len);
    let mut table = Writer::default();
    table.u64(sections.len() as u64);
    let mut offsets = Vec::with_capacity(sections.len());
    for sec in sections {
        table.u64(at as u64);
        table.u64(sec.len() as u64);
        table.u64(hash(sec));
        offsets.push(at);
        at = align8(at + sec.len());
    }
    let total = offsets
        .last()
        .zip(sections.last())
        .map_or(HEADER + head_len, |(&o, s)| o + s.len());
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&stamp().to_le_bytes());
    out.extend_from_slice(&(head_len as u64).to_le_bytes());
    out.extend_from_slice(&(total as u64).to_le_bytes());
    let mut head = fields.to_vec();
    head.extend_from_slice(&table.buf);
    out.extend_from_slice(&hash(&head).to_le_bytes());
    out.extend_from_slice(&(fields.len() as u64).to_le_bytes());
    let h = hash(&out);
    out.extend_from_slice(&h.to_le_bytes());
    out.extend_from_slice(&head);
    for (sec, &o) in sections.iter().zip(&offsets) {
        out.resize(o, 0);
        out.extend_from_slice(sec);
    }
    out
}

/// A checked file: its head's fields and its sections as `(offset, length)`.
pub(crate) struct Opened<'a> {
    pub(crate) fields: &'a [u8],
    pub(crate) sections: Vec<(usize, usize)>,
}

/// The head of `file` (its fields and section table), checked against the header;
/// `None` for anything but a file this format and build wrote, of exactly the length
/// it says. The sections are not checked: see [`check_sections`].
pub(crate) fn open(file: &[u8]) -> Option<Opened<'_>> {
    let h = file.get(..HEADER)?;
    let le = |a: usize| u64::from_le_bytes(h[a..a + 8].try_into().unwrap_or([0; 8]));
    if h[..8] != MAGIC
        || h[8..12] != FORMAT.to_le_bytes()
        || le(16) != stamp()
        || le(56) != hash(&h[..56])
        || le(32) != file.len() as u64
    {
        return None;
    }
    let head_len = usize::try_from(le(24)).ok()?;
    let head = file.get(HEADER..HEADER.checked_add(head_len)?)?;
    if hash(head) != le(40) {
        return None;
    }
    let count_at = usize::try_from(le(48)).ok()?;
    let mut r = Reader::new(head.get(count_at..)?);
    let sections = r.list(24, |r| {
        let (off, len, _) = (r.u64()?, r.u64()?, r.u64()?);
        let (off, len) = (usize::try_from(off).ok()?, usize::try_from(len).ok()?);
        (off % 8 == 0 && off.checked_add(len)? <= file.len()).then_some((off, len))
    })?;
    if !r.done() {
        return None;
    }
    Some(Opened {
        fields: &head[..count_at],
        sections,
    })
}

/// Every section of `file` holds the bytes its hash in the head says.
pub(crate) fn check_sections(file: &[u8], opened: &Opened<'_>) -> bool {
    let head_end = HEADER + opened.fields.len();
    let mut r = Reader::new(&file[head_end + 8..]);
    opened.sections.iter().all(|&(off, len)| {
        let (_, _, want) = (r.u64(), r.u64(), r.u64());
        want == Some(hash(&file[off..off + len]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_and_damage_is_refused() {
        let mut w = Writer::default();
        w.u8(7);
        w.bool(true);
        w.u32(0xdead_beef);
        w.u64(u64::MAX);
        w.i128(-(1 << 100));
        w.bytes(b"abc");
        w.opt_bytes(None);
        w.opt_bytes(Some(b""));
        w.opt_u64(Some(9));
        w.list(&[1u64, 2], |w, &x| w.u64(x));
        w.u32s(&[3, 4, 5]);
        let file = assemble(b"fields", &[&w.buf, b"second"]);
        let opened = open(&file).unwrap();
        assert!(check_sections(&file, &opened));
        assert_eq!(opened.fields, b"fields");
        assert_eq!(opened.sections.len(), 2);
        let (o, l) = opened.sections[0];
        assert_eq!(o % 8, 0);
        let body = &file[o..o + l];
        let (o2, l2) = opened.sections[1];
        assert_eq!(&file[o2..o2 + l2], b"second");
        let mut r = Reader::new(body);
        assert_eq!(r.u8(), Some(7));
        assert_eq!(r.bool(), Some(true));
        assert_eq!(r.u32(), Some(0xdead_beef));
        assert_eq!(r.u64(), Some(u64::MAX));
        assert_eq!(r.i128(), Some(-(1 << 100)));
        assert_eq!(r.bytes(), Some(&b"abc"[..]));
        assert_eq!(r.opt_bytes(), Some(None));
        assert_eq!(r.opt_bytes(), Some(Some(&b""[..])));
        assert_eq!(r.opt_u64(), Some(Some(9)));
        assert_eq!(r.list(8, |r| r.u64()), Some(vec![1, 2]));
        assert_eq!(r.u32s(), Some(vec![3, 4, 5]));
        assert!(r.done());
        assert_eq!(r.u8(), None);
        // Every single flipped byte, every cut and an extra byte are refused (a
        // flipped padding byte is no damage).
        let ok = |f: &[u8]| open(f).is_some_and(|o| check_sections(f, &o));
        let pad: Vec<usize> = (0..file.len())
            .filter(|&k| {
                !opened
                    .sections
                    .iter()
                    .any(|&(o, l)| (o..o + l).contains(&k))
            })
            .filter(|&k| k >= HEADER + opened.fields.len() + 8 + 2 * 24)
            .collect();
        for k in 0..file.len() {
            let mut bad = file.clone();
            bad[k] ^= 0x40;
            assert_eq!(ok(&bad), pad.contains(&k), "byte {k}");
        }
        for k in 0..file.len() {
            assert!(!ok(&file[..k]), "cut at {k}");
        }
        let mut long = file.clone();
        long.push(0);
        assert!(!ok(&long));
        // A count larger than what is left is refused before anything is allocated.
        let mut w = Writer::default();
        w.u64(u64::MAX / 2);
        assert_eq!(Reader::new(&w.buf).u32s(), None);
        assert_eq!(Reader::new(&w.buf).bytes(), None);
    }
}
