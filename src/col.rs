//! A column of plain integers that is either owned or a view of a persisted index's
//! map (`persist`): a reopened index reads its widest columns where the page cache
//! holds them, instead of copying them into fresh memory (on the machine measured a
//! fresh page cost as much as reading 40 KB: 16 ms for the 40 MB of a 1 GiB session's
//! columns, against 1 ms to map and read its persisted file). The first change or
//! growth copies the view into an owned vector.
//!
//! The map is read under the SIGBUS guard (`guard.rs`) for as long as a column views
//! it: if the file were cut short under it, the pages past its new end read as zeros
//! and [`Mapping::faulted`] says so (the manager's next call raises
//! `StaleSessionError`); nothing here writes or truncates such a file (they are
//! replaced by rename, removed by unlink), so that is another program's doing.

#![allow(unsafe_code)]

use std::fs::File;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};

use crate::guard::Guard;

/// The integer types a column may view in a map: every bit pattern is a value, and
/// the map holds them little-endian (the only byte order persisted indexes are made
/// on, `persist::format`).
pub(crate) trait Raw: Copy + Default + 'static {}
impl Raw for u8 {}
impl Raw for u16 {}
impl Raw for u32 {}

/// The bytes of a whole persisted index file: a read-only map guarded against SIGBUS
/// while it lives, or (when no guard is free: `guard.rs` has 64) a copy read into
/// memory aligned for the widest column.
pub(crate) struct Mapping {
    backing: Backing,
}

enum Backing {
    // Drop order: the guard (unregisters the range) before the map (unmaps it).
    Map(Guard, Mmap),
    Copy(Vec<u64>, usize),
}

impl Mapping {
    /// Map `file` (`len` bytes), else read it; `None` when it cannot be read.
    pub(crate) fn new(file: File, len: usize) -> Option<Arc<Mapping>> {
        if len == 0 {
            return None;
        }
        // SAFETY: a read-only private map; reads through it are guarded (a fault past
        // a new end of file reads zeros and is flagged), and every value read is an
        // integer of a type valid for any bits.
        let map = unsafe { MmapOptions::new().len(len).map(&file) }.ok()?;
        let backing = match Guard::new(map.as_ptr(), map.len()) {
            Some(guard) => Backing::Map(guard, map),
            None => {
                drop(map);
                let mut words = vec![0u64; len.div_ceil(8)];
                let bytes = words_as_bytes(&mut words, len);
                std::os::unix::fs::FileExt::read_exact_at(&file, bytes, 0).ok()?;
                Backing::Copy(words, len)
            }
        };
        Some(Arc::new(Mapping { backing }))
    }

    /// How the bytes are held (tests).
    #[cfg(test)]
    pub(crate) fn backing_name(&self) -> &'static str {
        match self.backing {
            Backing::Map(..) => "map",
            Backing::Copy(..) => "copy",
        }
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Map(_, map) => map,
            // SAFETY: `len` bytes of the vector's memory, which holds at least that many;
            // any `u64` is valid as bytes.
            Backing::Copy(words, len) => unsafe {
                std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), *len)
            },
        }
    }

    /// A page of the map faulted: the file was cut short under it (a copy is never
    /// stale). One atomic load: asked on every call of the manager. A cut is seen at
    /// the first read of a page past the new end (what that read gave is zeros), not
    /// before: an `fstat` per call to see it sooner cost 0.3 µs of a 0.9 µs
    /// `get_entry`, for a file nothing here ever truncates.
    pub(crate) fn faulted(&self) -> bool {
        match &self.backing {
            Backing::Map(guard, _) => guard.faulted(),
            Backing::Copy(..) => false,
        }
    }

    /// `len` values of `T` at byte `off`, if they lie in the bytes and `off` is aligned.
    fn slice<T: Raw>(&self, off: usize, len: usize) -> Option<&[T]> {
        let size = std::mem::size_of::<T>();
        let end = off.checked_add(len.checked_mul(size)?)?;
        let bytes = self.bytes().get(off..end)?;
        if cfg!(target_endian = "big") || (bytes.as_ptr() as usize) % std::mem::align_of::<T>() != 0
        {
            return None;
        }
        // SAFETY: the range lies in the bytes (checked above) and is aligned for `T`;
        // `T` is a plain integer (`Raw`), valid for any bits; the bytes live as long
        // as `self`, which the returned slice borrows.
        Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), len) })
    }
}

/// The first `len` bytes of `words` as a byte slice to read into.
fn words_as_bytes(words: &mut [u64], len: usize) -> &mut [u8] {
    debug_assert!(len <= words.len() * 8);
    // SAFETY: `len` bytes of the slice's memory (it holds `8 * words.len()`); any
    // bytes written make valid `u64`s.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}

/// A column: owned values, or `len` values viewed at a byte offset of a map.
pub(crate) struct Col<T: Raw> {
    owned: Vec<T>,
    mapped: Option<(Arc<Mapping>, usize, usize)>,
}

impl<T: Raw> Default for Col<T> {
    fn default() -> Col<T> {
        Col {
            owned: Vec::new(),
            mapped: None,
        }
    }
}

impl<T: Raw> From<Vec<T>> for Col<T> {
    fn from(owned: Vec<T>) -> Col<T> {
        Col {
            owned,
            mapped: None,
        }
    }
}

impl<T: Raw> Col<T> {
    /// A view of `len` values at byte `off` of `map` (`None`: out of the map, or
    /// misaligned).
    pub(crate) fn view(map: &Arc<Mapping>, off: usize, len: usize) -> Option<Col<T>> {
        map.slice::<T>(off, len)?;
        Some(Col {
            owned: Vec::new(),
            mapped: Some((Arc::clone(map), off, len)),
        })
    }

    /// Make the values owned (a copy of a view, with room for a few more).
    fn own(&mut self) {
        if let Some((m, off, len)) = self.mapped.take() {
            let mut v = Vec::with_capacity(len + len / 64 + 64);
            v.extend_from_slice(m.slice::<T>(off, len).unwrap_or(&[]));
            self.owned = v;
        }
    }

    pub(crate) fn push(&mut self, x: T) {
        self.own();
        self.owned.push(x);
    }

    pub(crate) fn extend_from_slice(&mut self, xs: &[T]) {
        self.own();
        self.owned.extend_from_slice(xs);
    }

    pub(crate) fn capacity(&self) -> usize {
        match &self.mapped {
            Some((_, _, len)) => *len,
            None => self.owned.capacity(),
        }
    }

    pub(crate) fn reserve_exact(&mut self, more: usize) {
        self.own();
        self.owned.reserve_exact(more);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.owned.shrink_to_fit();
    }

    /// Bytes of memory the column owns (a view owns none).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.owned.capacity() * std::mem::size_of::<T>()
    }
}

impl<T: Raw> Deref for Col<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match &self.mapped {
            // SAFETY: `view` checked that these values lie in the bytes, aligned for
            // `T`, and the bytes live as long as the `Arc` held here.
            Some((m, off, len)) => unsafe {
                std::slice::from_raw_parts(m.bytes().as_ptr().add(*off).cast::<T>(), *len)
            },
            None => &self.owned,
        }
    }
}

impl<T: Raw> DerefMut for Col<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.own();
        &mut self.owned
    }
}

/// The persisted index an index was read from or written to (`persist` makes it; the
/// index keeps it, so that its columns' views and a rewrite know their file).
pub(crate) struct Persisted {
    pub(crate) path: std::path::PathBuf,
    /// Bytes of the session it covers.
    pub(crate) image_len: u64,
    /// Its own size.
    pub(crate) bytes: u64,
    /// Its map, while columns of the index view it.
    pub(crate) map: Option<Arc<Mapping>>,
}
