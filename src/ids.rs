//! Entry ids: the id bytes of every entry back to back ([`IdArena`]) and an
//! open-addressing table from id to entry number ([`IdTable`]) that keeps no id of its
//! own: 4 bytes per slot, load at most 1/2 (8–16 bytes per entry). Both may view a
//! persisted index's map (`col.rs`).
//!
//! Why these shapes (a 1 GiB session of 799,330 Pi entries): the arena held a `u64`
//! end per id beside the bytes, 16 bytes per 8-hex id, and the table 8-byte slots (a
//! 32-bit hash tag and the entry), 21 bytes per entry. Ids of one length (Pi's 8 hex,
//! a UUID) need no ends; a slot needs as many bits for the entry as the table has
//! slots, and the rest of 32 still filter nearly every wrong candidate before the id is
//! compared (11 bits at this size). 37 → 18.5 bytes per entry.

use crate::col::Col;

/// Open-addressing table of entry numbers keyed by the id bytes kept in an
/// [`IdArena`]: no `String` per id, 4 bytes per slot (`e + 1` in the low `k` bits of
/// a table of `2^k` slots, a hash tag in the rest), linear probing, load at most 1/2.
pub(crate) struct IdTable {
    slots: Col<u32>,
    len: usize,
    seed: u64,
    /// Ids inserted while `slots` views a persisted index: a table of their own, so
    /// that a reopen that grows by a few entries does not copy the viewed one (4 bytes
    /// per slot, 8 MB for 799,330 entries, ~4 ms of fresh memory); merged into it once
    /// it holds an eighth as many.
    added: Option<Box<IdTable>>,
    /// The first entry number this table may hold: a slot keeps `e - base + 1` (an
    /// `added` table holds entries from the viewed one's count on, in as few bits as
    /// its own slot count gives).
    base: u32,
}

/// The entries held by the slots of a table whose first entry is `base`: a slot keeps
/// `e - base + 1` in its low `log2(slots.len())` bits (0: empty).
fn entries_of(slots: &[u32], base: u32) -> impl Iterator<Item = u32> + '_ {
    let low = (slots.len() as u64).wrapping_sub(1);
    slots
        .iter()
        .filter(|&&s| s != 0)
        .map(move |&s| (s as u64 & low) as u32 - 1 + base)
}

fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl IdTable {
    pub(crate) fn new() -> IdTable {
        use std::hash::{BuildHasher, Hasher};
        // A per-process random seed keeps a crafted file from forcing collisions.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(0);
        IdTable::seeded(h.finish())
    }

    fn seeded(seed: u64) -> IdTable {
        IdTable {
            slots: Col::default(),
            len: 0,
            seed,
            added: None,
            base: 0,
        }
    }

    /// The slots (never appended to, so always one piece).
    #[inline]
    fn slots(&self) -> &[u32] {
        self.slots.as_slice().unwrap_or(&[])
    }

    fn hash(&self, id: &[u8]) -> u64 {
        let mut h = self.seed ^ (id.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut chunks = id.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        fmix(h ^ u64::from_le_bytes(last))
    }

    /// Bits of a slot that hold the entry (`log2` of the slot count).
    fn bits(&self) -> u32 {
        self.slots.len().trailing_zeros()
    }

    /// The probe start and the slot's tag bits for hash `h` (a table of `2^k` slots
    /// takes the start from the low bits and the tag from the high ones).
    #[inline]
    fn split(&self, h: u64) -> (usize, u32) {
        let k = self.bits();
        let start = h as usize & (self.slots.len() - 1);
        let tag = ((h >> 32) as u32).checked_shl(k).unwrap_or(0);
        (start, tag)
    }

    /// The entry whose id is `id`.
    pub(crate) fn find(&self, id: &[u8], ids: &IdArena) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        match self.probe(id, ids) {
            Ok(e) => Some(e),
            Err(_) => self.added.as_ref().and_then(|a| a.find(id, ids)),
        }
    }

    /// Follow the probe sequence of `id` (the table must have slots): `Ok(entry)`
    /// where it is stored, or `Err((slot, tag))` for the empty slot that ends the
    /// sequence, where it would go, and its tag.
    #[inline]
    fn probe(&self, id: &[u8], ids: &IdArena) -> Result<u32, (usize, u32)> {
        let (mut i, tag) = self.split(self.hash(id));
        let slots = self.slots();
        let mask = slots.len() - 1;
        let low = (1u64 << self.bits()) - 1;
        loop {
            let s = slots[i];
            if s == 0 {
                return Err((i, tag));
            }
            if s & !(low as u32) == tag {
                let e = (s as u64 & low) as u32 - 1 + self.base;
                if ids.get(e) == id {
                    return Ok(e);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Hint the CPU to fetch the slot where a probe for `id` starts.
    #[inline]
    pub(crate) fn prefetch(&self, id: &[u8]) {
        if self.slots.is_empty() {
            return;
        }
        let i = self.split(self.hash(id)).0;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p: *const u32 = &self.slots()[i];
            // SAFETY: SSE is part of the x86_64 baseline; a prefetch only hints the
            // cache, never faults, and `p` points into `slots`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Make room for `more` entries without growing in between (one rehash instead
    /// of one per doubling while a big file is ingested). A rehash hashes the ids
    /// again (`ids` holds every id in the table): a slot keeps too few hash bits to
    /// find its new place.
    pub(crate) fn reserve(&mut self, more: usize, ids: &IdArena) {
        if self.slots.is_view() {
            // A hint only: inserts go to `added` (which grows as they come) until it
            // is merged.
            return;
        }
        // A linear-probing miss costs ~(1 + 1/(1-a)^2)/2 probes: 32 at load 7/8, 8.5 at
        // 3/4, 2.5 at 1/2: a table grows to load 1/2 once it would pass 3/4 (a
        // persisted one is kept at up to 3/4, `parts`: one more entry must not make a
        // reopen rehash every id).
        let need = self.len + more;
        if need * 4 > self.slots.len() * 3 || self.slots.len() < 16 {
            let want = (need * 2).max(16).next_power_of_two();
            let old = std::mem::replace(&mut self.slots, Col::from(vec![0; want]));
            for e in entries_of(old.as_slice().unwrap_or(&[]), self.base) {
                self.put(self.hash(ids.get(e)), e);
            }
        }
    }

    /// Insert `id` → `entry` unless the id is already there; then return the entry
    /// that has it. One hash and one probe sequence for the duplicate check and the
    /// insert together.
    pub(crate) fn insert_new(&mut self, id: &[u8], entry: u32, ids: &IdArena) -> Option<u32> {
        if self.slots.is_view() {
            if let Ok(e) = self.probe(id, ids) {
                return Some(e);
            }
            let first = self.len as u32;
            let added = self.added.get_or_insert_with(|| {
                let mut t = IdTable::seeded(self.seed);
                t.base = first;
                Box::new(t)
            });
            if added.len < self.len / 8 && entry >= added.base {
                return added.insert_new(id, entry, ids);
            }
            self.merge(ids);
        }
        self.reserve(1, ids);
        match self.probe(id, ids) {
            Ok(e) => Some(e),
            Err((i, tag)) => {
                self.slots.as_mut_slice()[i] = tag | (entry - self.base + 1);
                self.len += 1;
                None
            }
        }
    }

    /// The entries of `slots` (not of `added`).
    fn entries(&self) -> impl Iterator<Item = u32> + '_ {
        entries_of(self.slots(), self.base)
    }

    /// Copy the viewed slots into owned memory and move `added`'s ids into them.
    fn merge(&mut self, ids: &IdArena) {
        self.slots.as_mut_slice();
        if let Some(added) = self.added.take() {
            self.reserve(added.len, ids);
            for e in added.entries() {
                self.put(self.hash(ids.get(e)), e);
            }
            self.len += added.len;
        }
    }

    fn put(&mut self, h: u64, entry: u32) {
        let (mut i, tag) = self.split(h);
        let slots = self.slots.as_mut_slice();
        let mask = slots.len() - 1;
        while slots[i] != 0 {
            i = (i + 1) & mask;
        }
        slots[i] = tag | (entry - self.base + 1);
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.heap_bytes() + self.added.as_ref().map_or(0, |a| a.heap_bytes())
    }

    /// The table as a persisted index keeps it: the slots of the same entries at load
    /// at most 3/4 (a table of half as many slots when that holds them: 8 instead of 16
    /// bytes per entry at worst, on disk and in the page cache; a look-up there takes
    /// ~2.5 probes instead of 1.5, each a slot of the same cache line mostly, and an
    /// insert makes it grow back to load 1/2), the entries held and the hash seed.
    pub(crate) fn parts(&self, ids: &IdArena) -> (Vec<u32>, usize, u64) {
        let added = self.added.as_ref().map_or(0, |a| a.len);
        let len = self.len + added;
        let want = (len * 4 / 3 + 1).max(16).next_power_of_two();
        if want >= self.slots.len() && added == 0 {
            return (self.slots.to_vec(), len, self.seed);
        }
        let mut t = IdTable::seeded(self.seed);
        t.slots = Col::from(vec![0; want]);
        let more = self.added.as_ref().map(|a| a.entries());
        for e in self.entries().chain(more.into_iter().flatten()) {
            t.put(t.hash(ids.get(e)), e);
        }
        (t.slots.to_vec(), len, self.seed)
    }

    /// A table from [`IdTable::parts`]; `None` unless the slot count is a power of two
    /// that holds `len` entries at load at most 3/4 and has an empty slot (a probe
    /// always ends; the slots themselves are the checksummed bytes of a table this
    /// build wrote: a wrong one could only miss entries, never loop).
    pub(crate) fn from_parts(slots: Col<u32>, len: usize, seed: u64) -> Option<IdTable> {
        let n = slots.len();
        let empty = slots.iter().any(|&s| s == 0);
        (n.is_power_of_two() && n >= 16 && len * 4 <= n * 3 && empty).then_some(IdTable {
            slots,
            len,
            seed,
            added: None,
            base: 0,
        })
    }
}

/// Id bytes of all entries, back to back. While every id has the same length (Pi's 8
/// hex digits, a UUID) entry `e`'s id is the `e`-th run of that many bytes; the first
/// id of another length switches to an end offset per id.
#[derive(Default)]
pub(crate) struct IdArena {
    /// The length of every id so far (`None`: ids of several lengths, see `end`).
    width: Option<usize>,
    /// Where each id ends (only once the lengths differ).
    end: Vec<u64>,
    bytes: Col<u8>,
    n: usize,
}

impl IdArena {
    /// The id of entry `e` (empty for an unknown number).
    #[inline]
    pub(crate) fn get(&self, e: u32) -> &[u8] {
        let e = e as usize;
        if e >= self.n {
            return &[];
        }
        match self.width {
            // An id lies in one piece of `bytes`: a view ends where an id ends.
            Some(w) => self.bytes.range(e * w, e * w + w).unwrap_or(&[]),
            None => {
                let start = if e == 0 { 0 } else { self.end[e - 1] };
                self.bytes
                    .range(start as usize, self.end[e] as usize)
                    .unwrap_or(&[])
            }
        }
    }

    /// Append the id of the next entry.
    pub(crate) fn push(&mut self, id: &[u8]) {
        match self.width {
            Some(w) if w != id.len() => {
                // The first id of another length: every id so far gets its end.
                self.end = (1..=self.n as u64).map(|k| k * w as u64).collect();
                self.width = None;
            }
            None if self.n == 0 => self.width = Some(id.len()),
            _ => {}
        }
        self.bytes.extend_from_slice(id);
        if self.width.is_none() {
            self.end.push(self.bytes.len() as u64);
        }
        self.n += 1;
    }

    /// Room for exactly `total` ids of `total_bytes` bytes in all (an estimate of the
    /// final size: no doubling slack).
    pub(crate) fn reserve_total(&mut self, total: usize, total_bytes: usize) {
        if self.width.is_none() && self.n > 0 {
            if let Some(more) = total.checked_sub(self.end.len()).filter(|&m| m > 0) {
                self.end.reserve_exact(more);
            }
        }
        if let Some(more) = total_bytes.checked_sub(self.bytes.len()).filter(|&m| m > 0) {
            self.bytes.reserve_exact(more);
        }
    }

    /// Bytes of all ids so far.
    pub(crate) fn total_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Give back spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.end.shrink_to_fit();
        self.bytes.shrink_to_fit();
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.end.capacity() * 8 + self.bytes.heap_bytes()
    }

    /// The arena as its parts: the common id length (`None`: `ends` holds each id's
    /// end) and the bytes.
    pub(crate) fn parts(&self) -> (Option<usize>, &[u64], std::borrow::Cow<'_, [u8]>) {
        let bytes = match self.bytes.as_slice() {
            Some(b) => std::borrow::Cow::Borrowed(b),
            None => std::borrow::Cow::Owned(self.bytes.to_vec()),
        };
        (self.width, &self.end, bytes)
    }

    /// An arena from [`IdArena::parts`] (the caller checked that they fit together:
    /// [`IdArena::check_parts`]).
    pub(crate) fn from_parts(
        n: usize,
        width: Option<usize>,
        end: Vec<u64>,
        bytes: Col<u8>,
    ) -> IdArena {
        IdArena {
            width,
            end,
            bytes,
            n,
        }
    }

    /// Whether `n` ids can be read from these parts without a read out of bounds:
    /// `width * n` bytes, or `n` ascending ends within the bytes.
    pub(crate) fn check_parts(n: usize, width: Option<usize>, end: &[u64], bytes: &[u8]) -> bool {
        match width {
            Some(w) => w > 0 && end.is_empty() && w.checked_mul(n) == Some(bytes.len()),
            None => {
                end.len() == n
                    && end
                        .last()
                        .map_or(bytes.is_empty(), |&l| l == bytes.len() as u64)
                    && end.windows(2).all(|p| p[0] < p[1])
                    && end.first().is_none_or(|&f| f > 0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_one_length_and_then_another() {
        let mut a = IdArena::default();
        let mut t = IdTable::new();
        let ids: Vec<Vec<u8>> = (0..5000u32)
            .map(|i| {
                if i < 3000 {
                    format!("{i:08x}").into_bytes()
                } else {
                    format!("id-{i}").into_bytes()
                }
            })
            .collect();
        for (e, id) in ids.iter().enumerate() {
            assert_eq!(t.insert_new(id, e as u32, &a), None);
            a.push(id);
            if e == 2999 {
                assert!(a.parts().0 == Some(8));
            }
        }
        assert!(a.parts().0.is_none());
        for (e, id) in ids.iter().enumerate() {
            assert_eq!(a.get(e as u32), &id[..]);
            assert_eq!(t.find(id, &a), Some(e as u32));
            assert_eq!(t.insert_new(id, 9999, &a), Some(e as u32));
        }
        assert_eq!(t.find(b"nope", &a), None);
        assert_eq!(a.get(5000), b"");
        let (w, end, bytes) = a.parts();
        assert!(IdArena::check_parts(5000, w, end, &bytes));
        assert!(!IdArena::check_parts(5001, w, end, &bytes));
    }
}

#[cfg(test)]
mod view_tests {
    use super::*;
    use crate::col::Mapping;

    /// A table and arena read back as views of a file (as a reopen reads them), then
    /// grown: the ids added go to a table of their own until it is merged; every id
    /// is found, before and after, and the persisted parts hold them all.
    #[test]
    fn a_viewed_table_grows_without_copying_until_it_merges() {
        for base in [3usize, 37, 500] {
            let mut a = IdArena::default();
            let mut t = IdTable::new();
            let id = |i: usize| format!("{i:08x}").into_bytes();
            for i in 0..base {
                assert_eq!(t.insert_new(&id(i), i as u32, &a), None);
                a.push(&id(i));
            }
            let (slots, len, seed) = t.parts(&a);
            let (w, _, bytes) = a.parts();
            let mut file = bytes.to_vec();
            let table_at = file.len().next_multiple_of(4);
            file.resize(table_at, 0);
            for s in &slots {
                file.extend_from_slice(&s.to_le_bytes());
            }
            let dir = std::env::temp_dir().join(format!("st-ids-{}-{base}", std::process::id()));
            std::fs::write(&dir, &file).unwrap();
            let map = Mapping::new(std::fs::File::open(&dir).unwrap(), file.len()).unwrap();
            std::fs::remove_file(&dir).unwrap();
            let mut a = IdArena::from_parts(
                base,
                w,
                Vec::new(),
                Col::view(&map, 0, bytes.len()).unwrap(),
            );
            let mut t =
                IdTable::from_parts(Col::view(&map, table_at, slots.len()).unwrap(), len, seed)
                    .unwrap();
            for i in base..base * 2 + 20 {
                assert_eq!(t.insert_new(&id(i), i as u32, &a), None, "{base} {i}");
                a.push(&id(i));
                assert_eq!(t.insert_new(&id(i / 2), 0, &a), Some((i / 2) as u32));
                for j in 0..=i {
                    assert_eq!(t.find(&id(j), &a), Some(j as u32), "{base} {i} {j}");
                }
            }
            let (slots, len, _) = t.parts(&a);
            assert_eq!(len, base * 2 + 20);
            assert_eq!(slots.iter().filter(|&&s| s != 0).count(), len);
        }
    }
}
