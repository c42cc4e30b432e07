//! A column of plain integers that is either owned or a view of a persisted index's
//! map (`persist`): a reopened index reads its widest columns where the page cache
//! holds them, instead of copying them into fresh memory (on the machine measured a
//! fresh page cost as much as reading 40 KB: 16 ms for the 40 MB of a 1 GiB session's
//! columns, against 1 ms to map and read its persisted file). The first change of a
//! viewed value copies the view into an owned vector; growth is kept after the view.
//!
//! The map is read under the SIGBUS guard (`guard.rs`) for as long as a column views
//! it: if the file were cut short under it, what lies past its new end reads as zeros,
//! and [`Mapping::held`] says so (the guard's flag, or the file's size for the rest of
//! the page the cut falls in, which reads as zeros without a fault); if it were written
//! in place (`cp other.idx` onto it, one byte changed), a map shows the new bytes, and
//! [`Mapping::held`] says that the file's size, mtime or ctime moved since they were
//! seen. The manager asks it before each call (`Index::check_persisted`), which holds
//! the bytes to what was mapped when they moved, and the guard's flag alone is asked
//! after every read of the Python class (`python.rs`, `PyIndex::reading`), so an answer
//! that read past a cut page is not given (`StaleSessionError` instead).
//! Nothing here writes or truncates such a file (they are replaced by rename, removed
//! by unlink; a read marks it used by its mtime, which moves nothing in it), so a cut
//! or a write is another program's doing.

#![allow(unsafe_code)]

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

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
    /// A cut was seen: it stays seen (a file grown again holds other bytes).
    cut: AtomicBool,
    /// Found cut short (1) or written over (2) and given up ([`Mapping::give_up`]): it
    /// stays so, and its file is not looked at again.
    lost: AtomicU8,
    /// The file's size, mtime and ctime (ns) before it was mapped, or when its bytes
    /// were last found to be those mapped ([`Mapping::confirm`]).
    seen: Mutex<Seen>,
    /// The first [`HEAD_COPY`] bytes as mapped: what the bytes are held to once the
    /// file moved (`persist`: they hold the checksums of all the others).
    head: Vec<u8>,
}

/// Bytes of the map's start kept aside ([`Mapping::head`]).
const HEAD_COPY: usize = 64;

/// A file's size, mtime and ctime in ns, as `fstat` shows them.
pub(crate) type Seen = (u64, i128, i128);

/// What the file's `fstat` shows against what was seen ([`Mapping::held`]).
pub(crate) enum Held {
    /// As seen (or a copy: never stale).
    Same,
    /// Shorter than the map, or a read of the map faulted: what was read may be zeros.
    Cut,
    /// Its size, mtime or ctime moved (`Seen` is what it shows now): its bytes may
    /// have been written in place, or only touched (another process's read marks it
    /// used), which only its bytes tell.
    Moved(Seen),
}

fn seen_of(file: &File) -> Option<Seen> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    Some((
        m.len(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
    ))
}

enum Backing {
    // Drop order: the guard (unregisters the range) before the map (unmaps it). The
    // file stays open so that a cut or a write can be seen by its `fstat` (`held`).
    Map(Guard, Mmap, File),
    Copy(Vec<u64>, usize),
}

impl Mapping {
    /// Map `file` (`len` bytes), else read it; `None` when it cannot be read.
    pub(crate) fn new(file: File, len: usize) -> Option<Arc<Mapping>> {
        if len == 0 {
            return None;
        }
        // Before a byte is read: a write from here on moves the file's times.
        let seen = seen_of(&file)?;
        // SAFETY: a read-only private map; reads through it are guarded (a fault past
        // a new end of file reads zeros and is flagged), and every value read is an
        // integer of a type valid for any bits.
        let map = unsafe { MmapOptions::new().len(len).map(&file) }.ok()?;
        let backing = match Guard::new(map.as_ptr(), map.len()) {
            Some(guard) => Backing::Map(guard, map, file),
            None => {
                drop(map);
                let mut words = vec![0u64; len.div_ceil(8)];
                let bytes = words_as_bytes(&mut words, len);
                std::os::unix::fs::FileExt::read_exact_at(&file, bytes, 0).ok()?;
                Backing::Copy(words, len)
            }
        };
        let mut m = Mapping {
            backing,
            cut: AtomicBool::new(false),
            lost: AtomicU8::new(0),
            seen: Mutex::new(seen),
            head: Vec::new(),
        };
        m.head = m.bytes()[..len.min(HEAD_COPY)].to_vec();
        Some(Arc::new(m))
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
            Backing::Map(_, map, _) => map,
            // SAFETY: `len` bytes of the vector's memory, which holds at least that many;
            // any `u64` is valid as bytes.
            Backing::Copy(words, len) => unsafe {
                std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), *len)
            },
        }
    }

    /// A page of the map faulted: the file was cut short under it and a read past its
    /// new end gave zeros (one atomic load; a copy is never stale). Asked right after a
    /// read: in the open, and after every call of the Python class.
    pub(crate) fn faulted(&self) -> bool {
        match &self.backing {
            Backing::Map(guard, ..) => guard.faulted(),
            Backing::Copy(..) => false,
        }
    }

    /// Whether the file is still as mapped, by its `fstat` (about 0.3 µs, asked once per
    /// call of the manager, before it: `Index::check_persisted`; CONTRACT §6,
    /// "Bounded"). Shorter than the map: some of what was read from it may have been
    /// zeros (a fault says so for a read past the new end's page; the rest of that page
    /// reads as zeros without one, which only the size shows). A file that cannot be
    /// `fstat`ed counts as cut.
    pub(crate) fn held(&self) -> Held {
        let Backing::Map(guard, map, file) = &self.backing else {
            return Held::Same;
        };
        if self.cut.load(Ordering::Relaxed) || guard.faulted() {
            return Held::Cut;
        }
        match seen_of(file) {
            Some(now) if now.0 >= map.len() as u64 => {
                if *self.seen.lock().unwrap_or_else(|e| e.into_inner()) == now {
                    Held::Same
                } else {
                    Held::Moved(now)
                }
            }
            _ => {
                self.cut.store(true, Ordering::Relaxed);
                Held::Cut
            }
        }
    }

    /// The bytes were found to be those mapped when the file showed `now` (taken
    /// before they were read): it is what is seen from here on.
    pub(crate) fn confirm(&self, now: Seen) {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }

    /// Give the file up as cut short (`cut`) or written over; whether this call gave
    /// it up (the first to: only it removes the file, which another process may have
    /// written again since).
    pub(crate) fn give_up(&self, cut: bool) -> bool {
        let code = if cut { 1 } else { 2 };
        self.lost
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// `Some(cut)` once given up ([`Mapping::give_up`]).
    pub(crate) fn lost(&self) -> Option<bool> {
        match self.lost.load(Ordering::Relaxed) {
            0 => None,
            code => Some(code == 1),
        }
    }

    /// The first bytes of the map as they were when it was made.
    pub(crate) fn head(&self) -> &[u8] {
        &self.head
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

/// A column: owned values, or `len` values viewed at a byte offset of a map followed
/// by owned values appended since (a reopened index that grows by one entry must not
/// copy its viewed columns into fresh memory first: that copy was ~11 MB and ~5 ms of a
/// 1 GiB session's reopen after one append). A value is read where it lies; a change
/// of a viewed value copies the view first ([`Col::as_mut_slice`]).
pub(crate) struct Col<T: Raw> {
    /// All values (no view), or the values appended after the view.
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

    /// The viewed values (empty without a view).
    #[inline]
    fn viewed(&self) -> &[T] {
        match &self.mapped {
            // SAFETY: `view` checked that these values lie in the bytes, aligned for
            // `T`, and the bytes live as long as the `Arc` held here.
            Some((m, off, len)) => unsafe {
                std::slice::from_raw_parts(m.bytes().as_ptr().add(*off).cast::<T>(), *len)
            },
            None => &[],
        }
    }

    /// The values as one slice when they lie in one piece (no view, or nothing
    /// appended after it), else `None`.
    #[inline]
    pub(crate) fn as_slice(&self) -> Option<&[T]> {
        match &self.mapped {
            Some(_) if !self.owned.is_empty() => None,
            Some(_) => Some(self.viewed()),
            None => Some(&self.owned),
        }
    }

    /// The values in two pieces: the viewed ones and those after them.
    #[inline]
    pub(crate) fn parts(&self) -> (&[T], &[T]) {
        (self.viewed(), &self.owned)
    }

    /// Values `[from, to)` when they lie in one piece (the view or what follows it),
    /// else `None`.
    #[inline]
    pub(crate) fn range(&self, from: usize, to: usize) -> Option<&[T]> {
        let (head, tail) = self.parts();
        if to <= head.len() {
            head.get(from..to)
        } else {
            let h = head.len();
            tail.get(from.checked_sub(h)?..to - h)
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.mapped.as_ref().map_or(0, |m| m.2) + self.owned.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let head = self.viewed();
        match head.get(i) {
            Some(x) => Some(x),
            None => self.owned.get(i - head.len()),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        let (head, tail) = self.parts();
        head.iter().chain(tail)
    }

    pub(crate) fn to_vec(&self) -> Vec<T> {
        let (head, tail) = self.parts();
        let mut v = Vec::with_capacity(head.len() + tail.len());
        v.extend_from_slice(head);
        v.extend_from_slice(tail);
        v
    }

    /// The values to change in place: a view is copied into owned memory first.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        if let Some((m, off, len)) = self.mapped.take() {
            let mut v = Vec::with_capacity(len + self.owned.len() + len / 64 + 64);
            v.extend_from_slice(m.slice::<T>(off, len).unwrap_or(&[]));
            v.append(&mut self.owned);
            self.owned = v;
        }
        &mut self.owned
    }

    pub(crate) fn push(&mut self, x: T) {
        self.owned.push(x);
    }

    pub(crate) fn extend_from_slice(&mut self, xs: &[T]) {
        self.owned.extend_from_slice(xs);
    }

    /// Room for the values (view and appended ones).
    pub(crate) fn capacity(&self) -> usize {
        self.mapped.as_ref().map_or(0, |m| m.2) + self.owned.capacity()
    }

    /// Room for `more` values after the last.
    pub(crate) fn reserve_exact(&mut self, more: usize) {
        self.owned.reserve_exact(more);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.owned.shrink_to_fit();
    }

    /// Bytes of memory the column owns (a view owns none).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.owned.capacity() * std::mem::size_of::<T>()
    }

    /// Whether some values are a view of a map.
    pub(crate) fn is_view(&self) -> bool {
        self.mapped.is_some()
    }
}

impl<T: Raw> std::ops::Index<usize> for Col<T> {
    type Output = T;

    #[inline]
    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(x) => x,
            None => panic!("index {i} out of a column of {}", self.len()),
        }
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
