//! Entry ids: the id bytes of every entry back to back ([`IdArena`]) and an
//! open-addressing table from id to entry number ([`IdTable`]) that keeps no id of its
//! own: 8 bytes per slot, load at most 1/2 (8–16 bytes per entry).

/// Open-addressing table of entry numbers keyed by the id bytes kept in an
/// [`IdArena`]: no `String` per id, 8 bytes per slot (32-bit hash tag + entry number +
/// 1), linear probing, load at most 1/2.
pub(crate) struct IdTable {
    slots: Vec<u64>,
    len: usize,
    seed: u64,
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
        IdTable {
            slots: Vec::new(),
            len: 0,
            seed: h.finish(),
        }
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

    /// The entry whose id is `id`.
    pub(crate) fn find(&self, id: &[u8], ids: &IdArena) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        self.probe(id, ids).1.ok()
    }

    /// Follow the probe sequence of `id` (the table must have slots): its tag, and
    /// `Ok(entry)` where it is stored or `Err(slot)` for the empty slot that ends the
    /// sequence, where it would go.
    #[inline]
    fn probe(&self, id: &[u8], ids: &IdArena) -> (u64, Result<u32, usize>) {
        let tag = self.hash(id) >> 32;
        let mask = self.slots.len() - 1;
        let mut i = tag as usize & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return (tag, Err(i));
            }
            if s >> 32 == tag {
                let e = (s as u32).wrapping_sub(1);
                if ids.get(e) == id {
                    return (tag, Ok(e));
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
        let i = (self.hash(id) >> 32) as usize & (self.slots.len() - 1);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p: *const u64 = &self.slots[i];
            // SAFETY: SSE is part of the x86_64 baseline; a prefetch only hints the
            // cache, never faults, and `p` points into `slots`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Make room for `more` entries without growing in between (one rehash instead
    /// of one per doubling while a big file is ingested).
    pub(crate) fn reserve(&mut self, more: usize) {
        // A linear-probing miss costs ~(1 + 1/(1-a)^2)/2 probes: 32 at load 7/8, 2.5
        // at 1/2, so the load stays at most 1/2.
        let want = ((self.len + more) * 2).max(16).next_power_of_two();
        if want > self.slots.len() {
            // The probe start is taken from the stored 32-bit tag, so growing needs no
            // access to the ids.
            let old = std::mem::replace(&mut self.slots, vec![0; want]);
            for s in old.into_iter().filter(|&s| s != 0) {
                self.put(s);
            }
        }
    }

    /// Insert `id` → `entry` unless the id is already there; then return the entry
    /// that has it. One hash and one probe sequence for the duplicate check and the
    /// insert together.
    pub(crate) fn insert_new(&mut self, id: &[u8], entry: u32, ids: &IdArena) -> Option<u32> {
        self.reserve(1);
        match self.probe(id, ids) {
            (_, Ok(e)) => Some(e),
            (tag, Err(i)) => {
                self.slots[i] = tag << 32 | (entry as u64 + 1);
                self.len += 1;
                None
            }
        }
    }

    fn put(&mut self, slot: u64) {
        let mask = self.slots.len() - 1;
        let mut i = (slot >> 32) as usize & mask;
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }
}

/// Id bytes of all entries, back to back; entry `e`'s id ends at `end[e]`.
#[derive(Default)]
pub(crate) struct IdArena {
    end: Vec<u64>,
    bytes: Vec<u8>,
}

impl IdArena {
    /// The id of entry `e` (empty for an unknown number).
    pub(crate) fn get(&self, e: u32) -> &[u8] {
        let e = e as usize;
        let Some(&end) = self.end.get(e) else {
            return &[];
        };
        let start = if e == 0 { 0 } else { self.end[e - 1] };
        &self.bytes[start as usize..end as usize]
    }
    /// Append the id of the next entry.
    pub(crate) fn push(&mut self, id: &[u8]) {
        self.bytes.extend_from_slice(id);
        self.end.push(self.bytes.len() as u64);
    }

    /// Room for `more` ids (of unknown length).
    pub(crate) fn reserve(&mut self, more: usize) {
        self.end.reserve(more);
    }

    /// Room for exactly `total` ids of `total_bytes` bytes in all (an estimate of the
    /// final size: no doubling slack).
    pub(crate) fn reserve_total(&mut self, total: usize, total_bytes: usize) {
        if let Some(more) = total.checked_sub(self.end.len()).filter(|&m| m > 0) {
            self.end.reserve_exact(more);
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
}
