//! Where the image's bytes live: a read-only memory map of the session file, or owned
//! bytes (`from_image`), plus an owned tail buffer for lines appended through the API
//! and for bytes another process appended.
//!
//! Guarantees: the file is opened once (`open`, or `attach` for an owned image written
//! to a file since) and never by path again; growth is read from that file descriptor
//! with `pread`, O(new bytes), and a file shorter than the indexed bytes is
//! [`Error::Stale`]. Whether the path still names the same file with the same bytes
//! is the caller's to check (the Python manager's staleness check). Nothing is ever
//! written.
//!
//! SIGBUS: touching a mapped page past the end of a file that shrank kills the
//! process, and no check can close the window between a check and the touch (another
//! process may truncate in between). So the map is read only by the one-pass scan at
//! open / refresh ([`Source::segments_from`]); every read after indexing (lines,
//! header, a pending fragment) copies the bytes out of the file with `pread`
//! ([`Source::read_into`]), where a file that shrank gives a short read, reported as
//! [`Error::Stale`], never a signal. The only remaining SIGBUS window is a truncation
//! racing the initial scan (or the scan of a refresh that mapped the file again).
//! All `unsafe` of the crate is here (the map), except CPU intrinsics (`scan/block.rs`,
//! a cache prefetch in `ids.rs`). Measurements: docs/BENCHMARKS.md.

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::{Mmap, MmapOptions};

use crate::error::{Error, Result};

/// Maps of at least this size are pre-faulted (`MAP_POPULATE`): indexing reads every
/// page anyway, and one bulk fault is much cheaper than one fault per 4 KiB page.
const POPULATE_MIN: u64 = 1 << 20;

/// `grow` keeps up to max(this, map length / 4) bytes read from the file in the tail
/// buffer before it maps the file again (small in tests so they reach that path).
const FOLD_MIN: u64 = if cfg!(test) { 64 << 10 } else { 32 << 20 };

/// `read_each` reads two file ranges in one `pread` when at most this many bytes lie
/// between them (reading them costs less than a second system call).
const GAP_MAX: u64 = 4 << 10;

/// One batched `pread` of `read_each` covers at most this many bytes (the buffer stays
/// in cache; a longer single range is read alone).
const BATCH_MAX: u64 = 64 << 10;

/// Where `[0, primary_len)` of the image lives.
enum Primary {
    /// A map of the held file (`None`: the file was empty), read only by the scan.
    Mapped(Option<Mmap>),
    /// Owned bytes (`from_bytes`).
    Owned(Vec<u8>),
}

/// The image: `[0, primary_len)` from the map or owned bytes, `[tail_base, len)` from
/// the tail buffer (which may start before `primary_len` when a pending fragment was
/// copied into it). Growth is read from `file`, the file descriptor held since `open`
/// (or `attach`): the core never opens a path again.
pub struct Source {
    file: Option<File>,
    primary: Primary,
    tail: Vec<u8>,
    tail_base: u64,
    closed: bool,
    /// Bytes `grow` read into the tail; times it mapped the file again.
    grow_read: u64,
    remaps: u64,
}

/// `pread` into `buf` from `off` until it is full or the file ends; the bytes read.
fn read_full(file: &File, off: u64, buf: &mut [u8]) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn map_file(file: &File, len: u64, populate: bool) -> io::Result<Option<Mmap>> {
    if len == 0 {
        return Ok(None);
    }
    let mut opts = MmapOptions::new();
    if populate && len >= POPULATE_MIN {
        opts.populate();
    }
    // SAFETY: the map is read-only and private to this `Source`. Well-behaved writers
    // (Pi, sessiontree) only append, so the prefix [0, indexed_len) is never rewritten;
    // we never trust two reads of the same byte to be equal (no unchecked UTF-8, no
    // cached borrowed &str). The map is read only by the scan at open / refresh
    // (`segments_from`, after `Source::check`); every later read uses `pread`
    // (`read_into`). The only remaining SIGBUS window is a truncation racing that
    // scan: it is inherent to reading a map, and a scan is one pass, while reads after
    // indexing happen for as long as the index lives.
    let map = unsafe { opts.map(file) }?;
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(Some(map))
}

impl Source {
    /// Map the file at `path` read-only.
    pub fn open(path: &Path) -> Result<Source> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            )));
        }
        let map = map_file(&file, meta.len(), true)?;
        let len = map.as_ref().map_or(0, |m| m.len() as u64);
        Ok(Source {
            file: Some(file),
            primary: Primary::Mapped(map),
            tail: Vec::new(),
            tail_base: len,
            closed: false,
            grow_read: 0,
            remaps: 0,
        })
    }

    /// Owned bytes (a new, in-memory or migrated session).
    pub fn from_bytes(data: Vec<u8>) -> Source {
        let len = data.len() as u64;
        Source {
            file: None,
            primary: Primary::Owned(data),
            tail: Vec::new(),
            tail_base: len,
            closed: false,
            grow_read: 0,
            remaps: 0,
        }
    }

    /// Hold the file at `path` for growth: an owned image that has been written there
    /// since (the caller vouches that the file holds the image). A no-op for a source
    /// that already holds a file.
    pub fn attach(&mut self, path: &Path) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        if self.file.is_none() {
            self.file = Some(File::open(path)?);
        }
        Ok(())
    }

    fn primary(&self) -> &[u8] {
        match &self.primary {
            Primary::Mapped(map) => map.as_deref().unwrap_or(&[]),
            Primary::Owned(v) => v,
        }
    }

    /// Logical length of the image (primary + tail).
    pub fn len(&self) -> u64 {
        // `tail_base` never exceeds the primary length; primary bytes past it are
        // shadowed by the tail (or gone from the file, see `grow`).
        self.tail_base + self.tail.len() as u64
    }

    /// Fail with [`Error::Stale`] unless the mapped file still holds `[0, need)` of the
    /// primary segment. Owned images always pass.
    pub fn check(&self, need: u64) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        let (Primary::Mapped(_), Some(file)) = (&self.primary, &self.file) else {
            return Ok(());
        };
        let need = need.min(self.tail_base).min(self.primary().len() as u64);
        if need == 0 {
            return Ok(());
        }
        let size = file.metadata()?.len();
        if size < need {
            return Err(Error::Stale(format!(
                "the file is {size} bytes, {need} are indexed"
            )));
        }
        Ok(())
    }

    /// The bytes `[start, end)` if the image holds them in memory (the tail buffer or
    /// an owned image); `None` when they must be read from the file
    /// ([`Source::read_into`]). Ranges never straddle `tail_base`.
    pub fn mem(&self, start: u64, end: u64) -> Option<&[u8]> {
        if start >= self.tail_base {
            let (a, b) = (
                (start - self.tail_base) as usize,
                (end - self.tail_base) as usize,
            );
            Some(self.tail.get(a..b).unwrap_or(&[]))
        } else if let Primary::Owned(v) = &self.primary {
            Some(v.get(start as usize..end as usize).unwrap_or(&[]))
        } else {
            None
        }
    }

    /// Copy the bytes `[start, start + buf.len())` into `buf` (a range that never
    /// straddles `tail_base`): from memory, or from the file with `pread`, never from
    /// the map. A file that no longer holds them (it shrank) gives [`Error::Stale`].
    pub fn read_into(&self, start: u64, buf: &mut [u8]) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        let end = start + buf.len() as u64;
        if let Some(b) = self.mem(start, end) {
            if b.len() != buf.len() {
                return Err(Error::Stale(format!(
                    "bytes {start}..{end} are not in the image"
                )));
            }
            buf.copy_from_slice(b);
            return Ok(());
        }
        let Some(file) = &self.file else {
            return Ok(());
        };
        let got = read_full(file, start, buf)?;
        if got < buf.len() {
            return Err(Error::Stale(format!(
                "the file ends at {}, {end} bytes are indexed",
                start + got as u64
            )));
        }
        Ok(())
    }

    /// The bytes `[start, end)` as a copy (see [`Source::read_into`]).
    pub fn read(&self, start: u64, end: u64) -> Result<Vec<u8>> {
        let mut v = vec![0u8; end.saturating_sub(start) as usize];
        self.read_into(start, &mut v)?;
        Ok(v)
    }

    /// Call `f` with the bytes of each range of `ranges`, in order (ranges never
    /// straddle `tail_base`). In-memory ranges are passed as they are; ranges of the
    /// file are copied with `pread`, ascending neighbours at most [`GAP_MAX`] apart in
    /// one read of up to [`BATCH_MAX`] bytes (a path's lines are mostly adjacent).
    pub fn read_each(&self, ranges: &[(u64, u64)], mut f: impl FnMut(&[u8])) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        let mut buf = Vec::new();
        let mut i = 0;
        while i < ranges.len() {
            let (s, e) = ranges[i];
            if let Some(b) = self.mem(s, e) {
                if b.len() as u64 != e - s {
                    return Err(Error::Stale(format!("bytes {s}..{e} are not in the image")));
                }
                f(b);
                i += 1;
                continue;
            }
            let (mut j, mut hi) = (i + 1, e);
            while let Some(&(s2, e2)) = ranges.get(j) {
                if s2 < hi || s2 - hi > GAP_MAX || e2 - s > BATCH_MAX || s2 >= self.tail_base {
                    break;
                }
                hi = e2;
                j += 1;
            }
            buf.resize((hi - s) as usize, 0);
            self.read_into(s, &mut buf)?;
            for &(a, b) in &ranges[i..j] {
                f(&buf[(a - s) as usize..(b - s) as usize]);
            }
            i = j;
        }
        Ok(())
    }

    /// The contiguous segments covering `[from, len)`, with their logical base: the
    /// scan's view, the only reader of the map (call [`Source::check`] first).
    pub fn segments_from(&self, from: u64) -> Vec<(u64, &[u8])> {
        let mut out = Vec::new();
        let p = self.primary();
        let plen = (p.len() as u64).min(self.tail_base);
        if from < plen {
            out.push((from, &p[from as usize..plen as usize]));
        }
        if !self.tail.is_empty() {
            let s = from.max(self.tail_base);
            out.push((s, &self.tail[(s - self.tail_base) as usize..]));
        }
        out
    }

    /// Append `bytes` at the logical end. A pending fragment `[pending_from, len)` of
    /// the primary segment is copied into the tail first, so lines never straddle.
    pub fn append(&mut self, pending_from: u64, bytes: &[u8]) -> Result<()> {
        let plen = self.primary().len() as u64;
        if self.tail.is_empty() && pending_from < plen && self.tail_base == plen {
            self.tail = self.read(pending_from, plen)?;
            self.tail_base = pending_from;
        }
        self.tail.extend_from_slice(bytes);
        Ok(())
    }

    /// Bring the image up to the held file after it grew: `[0, indexed)` stays as it
    /// is, `[indexed, file length)` is read from the file descriptor (`fstat` for the
    /// length). Fails with [`Error::Stale`] if the file is shorter than `indexed` (reads
    /// of indexed lines would come up short). Whether it is still the same file and
    /// holds the same bytes is the caller's to check; a source without a file has
    /// nothing to grow from.
    ///
    /// Cost O(new bytes): the new bytes are read with `pread` into the tail buffer; the
    /// map is left alone (mapping the whole file again cost 78 ms at 1 GiB, most of it
    /// `MAP_POPULATE` re-faulting every page). Only once the tail outgrows
    /// max(`FOLD_MIN`, map length / 4) is the file mapped again, without populating
    /// more than the new range, so the copying stays amortized O(new bytes) too.
    pub fn grow(&mut self, indexed: u64) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        let Some(file) = &self.file else {
            return Ok(());
        };
        let size = file.metadata()?.len();
        if size < indexed {
            return Err(Error::Stale(format!(
                "the file is {size} bytes, {indexed} are indexed"
            )));
        }
        let plen = self.primary().len() as u64;
        // What the tail would hold: its bytes below `indexed`, then the new ones.
        let kept = if self.tail.is_empty() {
            0
        } else {
            indexed.checked_sub(self.tail_base).unwrap_or(u64::MAX)
        };
        let want = kept.saturating_add(size - indexed);
        let fits = matches!(self.primary, Primary::Mapped(_))
            && kept <= self.tail.len() as u64
            && want <= FOLD_MIN.max(plen / 4);
        if !fits {
            return self.remap(size, indexed);
        }
        if self.tail.is_empty() {
            self.tail_base = indexed;
        }
        self.tail.truncate(kept as usize);
        let at = self.tail.len();
        self.tail.resize(at + (size - indexed) as usize, 0);
        // A file cut short since the `fstat` gives a short read: index what is there.
        let got = read_full(file, indexed, &mut self.tail[at..])?;
        self.tail.truncate(at + got);
        self.grow_read += got as u64;
        Ok(())
    }

    /// Map the held file again (`size` bytes at the last `fstat`; the tail buffer and
    /// owned bytes are dropped: the file holds them); only the part past `indexed` is
    /// pre-faulted.
    fn remap(&mut self, size: u64, indexed: u64) -> Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let map = map_file(file, size, false)?;
        if let Some(m) = &map {
            let from = (indexed as usize).min(m.len());
            if m.len() - from >= POPULATE_MIN as usize {
                #[cfg(target_os = "linux")]
                let _ = m.advise_range(memmap2::Advice::PopulateRead, from, m.len() - from);
            }
        }
        let len = map.as_ref().map_or(0, |m| m.len() as u64);
        self.primary = Primary::Mapped(map);
        self.tail = Vec::new();
        self.tail_base = len;
        self.remaps += 1;
        Ok(())
    }

    /// Bytes `grow` read with `pread`, and how many times it mapped the file again
    /// (tests use these to show that a refresh costs O(new bytes)).
    #[cfg(test)]
    pub fn grow_stats(&self) -> (u64, u64) {
        (self.grow_read, self.remaps)
    }

    /// Drop the map and buffers.
    pub fn close(&mut self) {
        *self = Source::from_bytes(Vec::new());
        self.closed = true;
    }
}

/// Count `\n` bytes of the file at `path` through the same mapping `open` uses: the
/// physical floor the benchmarks compare indexing against.
pub fn count_newlines(path: &Path) -> Result<u64> {
    let src = Source::open(path)?;
    src.check(src.len())?;
    Ok(memchr::memchr_iter(b'\n', src.primary()).count() as u64)
}
