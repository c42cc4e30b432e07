//! Where the image's bytes live: a read-only memory map of the session file, or owned
//! bytes (`from_image`), plus an owned tail buffer for lines appended through the
//! API and for bytes another process appended (`grow` reads them with `pread`, so a
//! refresh costs O(new bytes), not a new map of the whole file). All `unsafe` of the crate is in this file, except CPU intrinsics (the SIMD
//! classifiers of `scan/block.rs`, a cache prefetch in `index.rs`).
//!
//! SIGBUS: touching a mapped page past the end of a file that shrank kills the
//! process, so every access path calls [`Source::check`] (one `fstat`) first and
//! reports [`Error::Stale`] when the file is shorter than what will be read. The race
//! between that `fstat` and the read remains (STYLE.md §6); lines leave as copies,
//! never as views of the map.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use memmap2::{Mmap, MmapOptions};

use crate::error::{Error, Result};

/// Maps of at least this size are pre-faulted (`MAP_POPULATE`): indexing reads every
/// page anyway, and one bulk fault is much cheaper than one fault per 4 KiB page.
const POPULATE_MIN: u64 = 1 << 20;

/// `grow` keeps up to max(this, map length / 4) bytes read from the file in the tail
/// buffer before it maps the file again (small in tests so they reach that path).
const FOLD_MIN: u64 = if cfg!(test) { 64 << 10 } else { 32 << 20 };

struct Mapped {
    file: File,
    map: Option<Mmap>,
    dev: u64,
    ino: u64,
}

/// The image: `[0, primary_len)` from the map or owned bytes, `[tail_base, len)` from
/// the tail buffer (which may start before `primary_len` when a pending fragment was
/// copied into it).
pub struct Source {
    mapped: Option<Mapped>,
    owned: Vec<u8>,
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
    // cached borrowed &str), and every read is preceded by `Source::check`, which turns
    // a shrunken file into `Error::Stale` instead of a SIGBUS.
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
            mapped: Some(Mapped {
                file,
                map,
                dev: meta.dev(),
                ino: meta.ino(),
            }),
            owned: Vec::new(),
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
            mapped: None,
            owned: data,
            tail: Vec::new(),
            tail_base: len,
            closed: false,
            grow_read: 0,
            remaps: 0,
        }
    }

    fn primary(&self) -> &[u8] {
        match &self.mapped {
            Some(m) => m.map.as_deref().unwrap_or(&[]),
            None => &self.owned,
        }
    }

    /// Logical length of the image (primary + tail).
    pub fn len(&self) -> u64 {
        // `tail_base` never exceeds the primary length; primary bytes past it are
        // shadowed by the tail (or gone from the file, see `grow`).
        self.tail_base + self.tail.len() as u64
    }

    /// True when the image holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fail with [`Error::Stale`] unless the mapped file still holds `[0, need)` of the
    /// primary segment. Owned images always pass.
    pub fn check(&self, need: u64) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        let Some(m) = &self.mapped else { return Ok(()) };
        let need = need.min(self.tail_base).min(self.primary().len() as u64);
        if need == 0 {
            return Ok(());
        }
        let size = m.file.metadata()?.len();
        if size < need {
            return Err(Error::Stale(format!(
                "the file is {size} bytes, {need} are indexed"
            )));
        }
        Ok(())
    }

    /// The bytes `[start, end)` (which never straddle `tail_base`). Callers run
    /// [`Source::check`] first.
    pub fn slice(&self, start: u64, end: u64) -> &[u8] {
        if start >= self.tail_base {
            let (a, b) = (
                (start - self.tail_base) as usize,
                (end - self.tail_base) as usize,
            );
            self.tail.get(a..b).unwrap_or(&[])
        } else {
            self.primary()
                .get(start as usize..end as usize)
                .unwrap_or(&[])
        }
    }

    /// The contiguous segments covering `[from, len)`, with their logical base.
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
            self.check(plen)?;
            let frag = self.primary()[pending_from as usize..].to_vec();
            self.tail = frag;
            self.tail_base = pending_from;
        }
        self.tail.extend_from_slice(bytes);
        Ok(())
    }

    /// Bring the image up to the file at `path` after it grew: `[0, indexed)` stays as
    /// it is, `[indexed, file length)` is taken from the file. When `ends_line`, the
    /// file's byte at `indexed - 1` must still be `\n` (else it was rewritten in place).
    /// Fails with [`Error::Stale`] if the file is gone, another file than the one
    /// mapped, shorter than `indexed` or rewritten.
    ///
    /// Cost O(new bytes): the new bytes are read with `pread` into the tail buffer; the
    /// map is left alone (mapping the whole file again cost 78 ms at 1 GiB, most of it
    /// `MAP_POPULATE` re-faulting every page). Only once the tail outgrows
    /// max(`FOLD_MIN`, map length / 4) is the file mapped again, without populating
    /// more than the new range, so the copying stays amortized O(new bytes) too.
    pub fn grow(&mut self, path: &Path, indexed: u64, ends_line: bool) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        let file = File::open(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Error::Stale(format!("{} is gone", path.display())),
            _ => Error::Io(e),
        })?;
        let meta = file.metadata()?;
        if let Some(m) = &self.mapped {
            if (m.dev, m.ino) != (meta.dev(), meta.ino()) {
                return Err(Error::Stale(format!("{} was replaced", path.display())));
            }
        }
        let size = meta.len();
        if size < indexed {
            return Err(Error::Stale(format!(
                "{} is {size} bytes, {indexed} are indexed",
                path.display(),
            )));
        }
        if ends_line && indexed > 0 {
            let mut b = [0u8; 1];
            if read_full(&file, indexed - 1, &mut b)? != 1 || b != *b"\n" {
                return Err(Error::Stale(format!("{} was rewritten", path.display())));
            }
        }
        let plen = self.primary().len() as u64;
        // What the tail would hold: its bytes below `indexed`, then the new ones.
        let kept = if self.tail.is_empty() {
            0
        } else {
            indexed.checked_sub(self.tail_base).unwrap_or(u64::MAX)
        };
        let want = kept.saturating_add(size - indexed);
        let fits = self.mapped.is_some()
            && kept <= self.tail.len() as u64
            && want <= FOLD_MIN.max(plen / 4);
        if !fits {
            return self.remap(file, meta, indexed);
        }
        if self.tail.is_empty() {
            self.tail_base = indexed;
        }
        self.tail.truncate(kept as usize);
        let at = self.tail.len();
        self.tail.resize(at + (size - indexed) as usize, 0);
        // A file cut short since the `fstat` gives a short read: index what is there.
        let got = read_full(&file, indexed, &mut self.tail[at..])?;
        self.tail.truncate(at + got);
        self.grow_read += got as u64;
        Ok(())
    }

    /// Map the file again (the tail buffer is dropped: the file holds those bytes);
    /// only the part past `indexed` is pre-faulted.
    fn remap(&mut self, file: File, meta: std::fs::Metadata, indexed: u64) -> Result<()> {
        let map = map_file(&file, meta.len(), false)?;
        if let Some(m) = &map {
            let from = (indexed as usize).min(m.len());
            if m.len() - from >= POPULATE_MIN as usize {
                #[cfg(target_os = "linux")]
                let _ = m.advise_range(memmap2::Advice::PopulateRead, from, m.len() - from);
            }
        }
        let len = map.as_ref().map_or(0, |m| m.len() as u64);
        self.mapped = Some(Mapped {
            file,
            map,
            dev: meta.dev(),
            ino: meta.ino(),
        });
        self.owned = Vec::new();
        self.tail = Vec::new();
        self.tail_base = len;
        self.remaps += 1;
        Ok(())
    }

    /// Bytes `grow` read with `pread`, and how many times it mapped the file again
    /// (tests use these to show that a refresh costs O(new bytes)).
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
