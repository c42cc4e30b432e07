//! Where the image's bytes live: the session file, read with `pread` from the file
//! descriptor held since `open`, or owned bytes (`from_image`), plus an owned tail
//! buffer for lines appended through the API.
//!
//! Guarantees: the file is opened once (`open`, or `attach` for an owned image written
//! to a file since) and never by path again; growth is read from that file descriptor,
//! O(new bytes), and a file shorter than the indexed bytes is [`Error::Stale`].
//! Whether the path still names the same file with the same bytes is the caller's to
//! check (the Python manager's staleness check; every line read is also checked
//! against the hash it had when indexed, `index/read.rs`). Nothing is ever written.
//!
//! No SIGBUS: touching a mapped page past the end of a file that shrank kills the
//! process, and no check can close the window between a check and the touch. The one
//! reader of a map is the scan of a long range ([`Source::window`]), under a guard
//! that turns such a fault into [`Error::Stale`] (`guard.rs`); short ranges are copied
//! into buffers with `pread`, and so is every read after indexing: a file that shrank
//! gives a short read, reported as [`Error::Stale`]. The scan gives the map's pages
//! back behind it ([`Window::release`]): an open never holds the whole file resident.
//! Measurements: docs/BENCHMARKS.md, "Reading the file". The crate's `unsafe` is this map, the guard's signal handler,
//! CPU intrinsics (`scan/block.rs`), a cache prefetch (`ids.rs`), a persisted index's
//! map and the columns that view it (`col.rs`) and `malloc_trim` (`index/mod.rs`).

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::{Mmap, MmapOptions};

use crate::error::{Error, Result};
use crate::guard::{page_size, Guard};

/// Ranges of the file at least this long are scanned through a guarded map
/// ([`Window`]) rather than copied with `pread` (the copy doubled an open's CPU time).
const MAP_MIN: u64 = if cfg!(test) { 64 << 10 } else { 4 << 20 };

/// A read-only map of `[from, end)` of the held file for one scan, with a SIGBUS
/// guard over it (`guard.rs`): if the file shrinks while the map is read, the pages
/// past its end read as zeros and [`Window::faulted`] says so.
pub struct Window {
    // Drop order: the guard (unregisters the range) before the map (unmaps it).
    guard: Guard,
    map: Mmap,
    /// Bytes at the start of the map whose pages were given back ([`Window::release`]).
    released: std::sync::atomic::AtomicUsize,
}

/// Pages are given back [`RELEASE_STEP`] bytes at a time at least (one `madvise`
/// each).
const RELEASE_STEP: usize = if cfg!(test) { 16 << 10 } else { 8 << 20 };

impl Window {
    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The scan is done with the first `upto` bytes of the map: their pages leave this
    /// process (`MADV_DONTNEED`; the file's pages stay in the page cache), so a scan's
    /// resident memory is the part of the map it is reading, not the whole file. A
    /// page touched again is read again from the file: only a cost, never a change
    /// of what the scan sees (a map of a file shows its current bytes either way).
    pub fn release(&self, upto: usize) {
        use std::sync::atomic::Ordering;
        let page = page_size();
        let upto = upto.min(self.map.len()) & !(page - 1);
        let done = self.released.load(Ordering::Relaxed);
        if upto < done + RELEASE_STEP {
            return;
        }
        // SAFETY: the map is read-only and private: dropping its pages makes the next
        // read of them fault them in from the file again, and nothing holds on to
        // their old contents (the scan reads each byte through the map when needed).
        let ok = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, done, upto - done)
        };
        if ok.is_ok() {
            self.released.store(upto, Ordering::Relaxed);
        }
    }

    /// A page faulted: what was read is not the file's, and the file is stale.
    pub fn faulted(&self) -> bool {
        self.guard.faulted()
    }
}

/// A guarded map of `[from, end)` of `file` (`from < end`) for one scan, or `None`
/// when no guard is free: then the scan copies the range with `pread`.
///
/// # Errors
/// The map cannot be made.
pub fn map_guarded(file: &File, from: u64, end: u64) -> Result<Option<Window>> {
    // Not populated: the scan threads fault in the pages they read (fault-around maps
    // 16 pages a fault) and [`Window::release`] drops those behind them, so the whole
    // file is never resident in this process at once (it was: 1.1 GB of RSS for an
    // open of a 1 GiB file).
    let mut opts = MmapOptions::new();
    opts.offset(from).len((end - from) as usize);
    // SAFETY: a read-only private map, read only by this one scan while `Guard`
    // turns a fault past a new end of file into a flag (`guard.rs`); the scan
    // never trusts two reads of one byte to agree, and nothing borrows from the
    // map after the scan.
    let map = unsafe { opts.map(file) }?;
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(Guard::new(map.as_ptr(), map.len()).map(|guard| Window {
        guard,
        map,
        released: Default::default(),
    }))
}

/// A file's identity (device, inode, the inode's generation and the file's birth
/// time), size and modification and change times in ns, as `fstat` (`statx`),
/// [`generation`] and [`birth_ns`] gave them: the facts the catalog keeps of a file
/// too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) generation: u64,
    pub(crate) birth_ns: i128,
    pub(crate) size: u64,
    pub(crate) mtime_ns: i128,
    pub(crate) ctime_ns: i128,
}

/// The inode's generation number (`FS_IOC_GETVERSION`: ext4, XFS, Btrfs), 0 where the
/// file system keeps none (tmpfs). ext4 hands a freed inode number out again at once:
/// a file replaced by rename twice (`sed -i`) can be back on its old inode, larger and
/// with both ends as they were; its generation is new (`_filestate.generation` reads
/// the same number).
pub(crate) fn generation(file: &File) -> u64 {
    use std::os::fd::AsRawFd;
    // _IOR('v', 1, long); the kernel writes an int into it.
    const FS_IOC_GETVERSION: libc::c_ulong = 0x8008_7601;
    let mut v = [0u8; 8];
    // SAFETY: the call writes at most a long (8 bytes) into `v`, which lives across it.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_GETVERSION as _, v.as_mut_ptr()) };
    if r == 0 {
        u64::from(u32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
    } else {
        0
    }
}

/// The file's birth time in ns since the epoch (`statx`'s `stx_btime`, which
/// `Metadata::created` reads on Linux), 0 where the file system keeps none (NFS, 9p,
/// old kernels). Where no inode generation is kept, it still tells a file from
/// another on the same inode number: overlayfs (Docker's root file system) hands the
/// number of a file replaced by rename back to the next one (and answers no
/// `FS_IOC_GETVERSION`), but passes its upper layer's btime through, which each new
/// file gets anew (`_filestate.inode_marks` reads the same number through
/// `_sessiontree.birth_ns`).
pub fn birth_ns(meta: &std::fs::Metadata) -> i128 {
    match meta.created() {
        Ok(t) => match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        },
        Err(_) => 0,
    }
}

/// `read_each` reads two file ranges in one `pread` when at most this many bytes lie
/// between them (reading them costs less than a second system call).
const GAP_MAX: u64 = 4 << 10;

/// One batched `pread` of `read_each` covers at most this many bytes (the buffer stays
/// in cache; a longer single range is read alone).
const BATCH_MAX: u64 = 64 << 10;

/// Where `[0, primary_len)` of the image lives.
enum Primary {
    /// The first `len` bytes of the held file, read with `pread`.
    File(u64),
    /// Owned bytes (`from_bytes`).
    Owned(Vec<u8>),
}

/// The image: `[0, primary_len)` from the file or owned bytes, `[tail_base, len)` from
/// the tail buffer (which may start before `primary_len` when a pending fragment was
/// copied into it). Growth is read from `file`, the file descriptor held since `open`
/// (or `attach`): the core never opens a path again.
pub struct Source {
    file: Option<File>,
    primary: Primary,
    tail: Vec<u8>,
    tail_base: u64,
    closed: bool,
    /// Set when the file shrank under a scan that had taken in part of it: every later
    /// read is [`Error::Stale`] with this reason.
    failed: Option<String>,
    /// Bytes copied out of the file by `pread` (tests: growth reads only new bytes).
    file_read: std::sync::atomic::AtomicU64,
}

/// Open `path` for reading if it is a regular file, checked on the open file: a FIFO
/// put at the path after the caller's `stat` cannot block the open (`O_NONBLOCK`, which
/// changes nothing for a regular file's reads) and a device or a directory is refused.
///
/// # Errors
/// It cannot be opened (`NotFound`, ...), or is not a regular file (`InvalidInput`).
pub(crate) fn open_regular(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !file.metadata()?.is_file() {
        let what = format!("{}: not a regular file", path.display());
        return Err(io::Error::new(io::ErrorKind::InvalidInput, what).into());
    }
    Ok(file)
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

impl Source {
    /// Hold the file at `path` (read-only) as the image.
    pub fn open(path: &Path) -> Result<Source> {
        let file = open_regular(path)?;
        let len = file.metadata()?.len();
        Ok(Source {
            file: Some(file),
            primary: Primary::File(len),
            tail: Vec::new(),
            tail_base: len,
            closed: false,
            failed: None,
            file_read: 0.into(),
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
            failed: None,
            file_read: 0.into(),
        }
    }

    /// Hold the file at `path` for growth: an owned image that has been written there
    /// since (the caller vouches that the file holds the image). A no-op for a source
    /// that already holds a file.
    pub fn attach(&mut self, path: &Path) -> Result<()> {
        self.usable()?;
        if self.file.is_none() {
            self.file = Some(File::open(path)?);
        }
        Ok(())
    }

    fn primary_len(&self) -> u64 {
        match &self.primary {
            Primary::File(len) => *len,
            Primary::Owned(v) => v.len() as u64,
        }
    }

    /// Make every later read fail with [`Error::Stale`] (`why`): the index took in
    /// part of a scan that the file's shrinking cut short.
    pub fn fail(&mut self, why: String) {
        self.failed = Some(why);
    }

    fn usable(&self) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        match &self.failed {
            Some(why) => Err(Error::Stale(why.clone())),
            None => Ok(()),
        }
    }

    /// Logical length of the image (primary + tail).
    pub fn len(&self) -> u64 {
        // `tail_base` never exceeds the primary length; primary bytes past it are
        // shadowed by the tail (or gone from the file, see `grow`).
        self.tail_base + self.tail.len() as u64
    }

    /// Fail with [`Error::Stale`] unless the held file still holds `[0, need)` of the
    /// primary segment. Owned images always pass.
    pub fn check(&self, need: u64) -> Result<()> {
        self.usable()?;
        let (Primary::File(plen), Some(file)) = (&self.primary, &self.file) else {
            return Ok(());
        };
        let need = need.min(self.tail_base).min(*plen);
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
    /// straddles `tail_base`): from memory, or from the file with `pread`. A file that
    /// no longer holds them (it shrank) gives [`Error::Stale`].
    pub fn read_into(&self, start: u64, buf: &mut [u8]) -> Result<()> {
        self.usable()?;
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
        self.file_read
            .fetch_add(got as u64, std::sync::atomic::Ordering::Relaxed);
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
        self.usable()?;
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

    /// The contiguous ranges covering `[from, len)` (the primary part, then the tail
    /// buffer's): what the scan reads, each with [`Source::read_into`] (call
    /// [`Source::check`] first). No line straddles two ranges.
    pub fn segments_from(&self, from: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let plen = self.primary_len().min(self.tail_base);
        if from < plen {
            out.push((from, plen));
        }
        if !self.tail.is_empty() {
            out.push((from.max(self.tail_base), self.len()));
        }
        out
    }

    /// A guarded map of `[from, end)` (a range of the primary segment) for the scan,
    /// or `None` when the range is short or in memory, or no guard is free: then the
    /// scan copies it with [`Source::read_into`].
    pub fn window(&self, from: u64, end: u64) -> Result<Option<Window>> {
        self.usable()?;
        let (Primary::File(plen), Some(file)) = (&self.primary, &self.file) else {
            return Ok(None);
        };
        if end - from < MAP_MIN || end > *plen.min(&self.tail_base) {
            return Ok(None);
        }
        map_guarded(file, from, end)
    }

    /// Append `bytes` at the logical end. A pending fragment `[pending_from, len)` of
    /// the primary segment is copied into the tail first, so lines never straddle.
    pub fn append(&mut self, pending_from: u64, bytes: &[u8]) -> Result<()> {
        let plen = self.primary_len();
        if self.tail.is_empty() && pending_from < plen && self.tail_base == plen {
            self.tail = self.read(pending_from, plen)?;
            self.tail_base = pending_from;
        }
        self.tail.extend_from_slice(bytes);
        Ok(())
    }

    /// Bring the image up to the held file after it grew: `[0, indexed)` stays as it
    /// is, `[indexed, file length)` is now part of the image (`fstat` for the length),
    /// read by the scan that follows. Fails with [`Error::Stale`] if the file is shorter
    /// than `indexed` (reads of indexed lines would come up short). Whether it is still
    /// the same file and holds the same bytes is the caller's to check; a source without
    /// a file has nothing to grow from.
    ///
    /// O(1): the file holds every byte of the image (an owned image was written there,
    /// lines appended through the API were written there first), so the image becomes
    /// the file's first `size` bytes and the owned bytes and the tail buffer are dropped.
    pub fn grow(&mut self, indexed: u64) -> Result<()> {
        self.usable()?;
        let Some(file) = &self.file else {
            return Ok(());
        };
        let size = file.metadata()?.len();
        if size < indexed {
            return Err(Error::Stale(format!(
                "the file is {size} bytes, {indexed} are indexed"
            )));
        }
        self.primary = Primary::File(size);
        self.tail = Vec::new();
        self.tail_base = size;
        Ok(())
    }

    /// Bytes copied out of the file with `pread` so far (tests use it to show that a
    /// refresh costs O(new bytes)).
    #[cfg(test)]
    pub fn file_read(&self) -> u64 {
        self.file_read.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The image's first segment is a file (not owned bytes).
    pub fn holds_file(&self) -> bool {
        matches!(self.primary, Primary::File(_))
    }

    /// `(st_dev, st_ino)` of the held file (`None`: an owned image, or closed): the file
    /// these bytes were read from, whatever the path names now.
    ///
    /// # Errors
    /// `fstat` fails.
    pub fn file_id(&self) -> Result<Option<(u64, u64)>> {
        use std::os::unix::fs::MetadataExt;
        match &self.file {
            Some(f) if !self.closed => {
                let m = f.metadata()?;
                Ok(Some((m.dev(), m.ino())))
            }
            _ => Ok(None),
        }
    }

    /// The held file's identity, size and times (`fstat`; `None`: an owned image, or
    /// closed): what a persisted index of it is held to (`persist`).
    ///
    /// # Errors
    /// `fstat` fails.
    pub(crate) fn stat(&self) -> Result<Option<Stat>> {
        use std::os::unix::fs::MetadataExt;
        match &self.file {
            Some(f) if !self.closed => {
                let m = f.metadata()?;
                let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
                Ok(Some(Stat {
                    dev: m.dev(),
                    ino: m.ino(),
                    generation: generation(f),
                    birth_ns: birth_ns(&m),
                    size: m.len(),
                    mtime_ns: ns(m.mtime(), m.mtime_nsec()),
                    ctime_ns: ns(m.ctime(), m.ctime_nsec()),
                }))
            }
            _ => Ok(None),
        }
    }

    /// Drop the file and buffers.
    pub fn close(&mut self) {
        *self = Source::from_bytes(Vec::new());
        self.closed = true;
    }
}

/// Count `\n` bytes of the file at `path`, read the way `open` reads it (a guarded map,
/// two threads): the physical floor the benchmarks compare indexing against.
pub fn count_newlines(path: &Path) -> Result<u64> {
    let src = Source::open(path)?;
    let len = src.len();
    let window = src.window(0, len)?;
    let read = |off: u64, buf: &mut [u8]| src.read_into(off, buf);
    let n = crate::lines::count_blocks(window.as_ref().map(|w| w.bytes()), &read, 0, len)?;
    if window.is_some_and(|w| w.faulted()) {
        return Err(Error::Stale("the file shrank while it was read".into()));
    }
    Ok(n)
}
