//! The persisted index: what an open learned about a session file, kept in a cache
//! folder (never the session's) so that the next open of the same file, in any
//! process, reads it instead of scanning the file, and scans only the bytes the file
//! gained since.
//!
//! The rule (one, for opens and for the catalog, which keeps the same facts of a
//! file): a persisted index is used only for the file it was made of, provably
//! unchanged in what it covers:
//!
//! * the same device, inode (the folder is keyed by them), inode generation and birth
//!   time (a file replaced by rename onto a freed inode number has another generation
//!   on ext4, XFS and Btrfs, another birth time there and on overlayfs, which keeps no
//!   generation; where neither is kept, NFS or 9p, both are 0 and only the ends below
//!   tell), and either the same size, mtime and ctime (nothing was written since), or a
//!   larger size (it grew);
//! * the first and last `FINGERPRINT` bytes of what it covers, read from the file now,
//!   are the ones it holds (`_filestate.indexed_ends`; these become the open's
//!   fingerprint, so the manager's staleness check goes on from them);
//! * the file is read (`format.rs`) only if it is exactly what this build writes:
//!   magic, format, the build's source stamp, lengths, checksums; every number in it is
//!   checked before use (`state.rs`).
//!
//! Anything else (replaced, truncated, rewritten without growing, touched, a damaged,
//! foreign, cut or other-version index file) is a miss: the file is scanned as if no
//! index were kept, and the new index written. As for an open session, a rewrite in
//! the middle of a file that keeps both ends and then grows is not seen here; every line
//! read is still checked against its hash, and a line found changed removes the
//! persisted index, so the next open scans the file.
//!
//! An index is written only of what was stable while it was read: the file's `fstat`
//! after the scan must equal the one before, and its mtime and ctime must be older than
//! [`Cache::settle`] (a write within one tick of a coarse file system clock can leave both
//! times as they were; git calls such entries racily clean). After growth it is written
//! again once the bytes scanned beyond it outweigh its size, so reopens of a growing
//! session cost O(new bytes) and the writes O(index size) per as many bytes.
//!
//! Why the python backend does not use it: its index is every entry decoded (it reads
//! and parses each line at open); offsets and ids from a file would spare it nothing,
//! and it stays the independent reference the native backend is held to.

mod folder;
pub(crate) mod format;
mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::col::{Held, Persisted};
use crate::error::{Error, Result};
use crate::index::{Ends, Index};
use crate::lines::FINGERPRINT;
use crate::source::{Source, Stat};

/// Where persisted indexes live and how much room they get.
#[derive(Clone, Debug)]
pub struct Cache {
    /// The folder (created when first written).
    pub dir: PathBuf,
    /// Bytes the folder may hold; past it the least recently used indexes go.
    pub budget: u64,
    /// Session files shorter than this are scanned and not persisted (their scan
    /// costs about what reading an index does).
    pub min_bytes: u64,
    /// A file whose mtime or ctime is this recent may still change without either
    /// moving (one tick of a coarse file system clock): its index is not written yet.
    pub settle: Duration,
}

/// `stat`'s times are both at least `settle` before now.
fn settled(s: &Stat, settle: Duration) -> bool {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let racy = settle.as_nanos() as i128;
    now - s.mtime_ns >= racy && now - s.ctime_ns >= racy
}

/// The first and last `FINGERPRINT` bytes of the first `len` bytes of the file, read
/// now (`None`: it cannot be read that far).
fn ends_now(src: &Source, len: u64) -> Option<Vec<u8>> {
    let fp = FINGERPRINT as u64;
    let mut out = vec![0u8; 2 * len.min(fp) as usize];
    let (head, tail) = out.split_at_mut(len.min(fp) as usize);
    src.read_into(0, head).ok()?;
    src.read_into(len - len.min(fp), tail).ok()?;
    Some(out)
}

enum Restore {
    Done(Box<Index>),
    Miss(Source),
    Failed,
}

impl Index {
    /// [`Index::open`] through the persisted indexes in `cache`: the file's index is
    /// read from there when it holds one that is provably this file's (module notes),
    /// the bytes the file gained since are scanned, and a new index is written when it
    /// is due; otherwise the file is scanned whole. The answers are a scan's in every
    /// case.
    ///
    /// # Errors
    /// As [`Index::open`].
    pub fn open_cached(path: &Path, cache: &Cache) -> Result<Index> {
        let src = Source::open(path)?;
        let Some(before) = src.stat()? else {
            return Index::build(src);
        };
        if before.size < cache.min_bytes {
            return Index::build(src);
        }
        let file = cache.dir.join(folder::entry_name(before.dev, before.ino));
        let mut ix = match restore(src, &before, file) {
            Restore::Done(ix) => *ix,
            Restore::Miss(src) => Index::build(src)?,
            // The growth could not be read on from the persisted index: a scan of the
            // file as it is now decides (and raises what it raises).
            Restore::Failed => return Index::open(path),
        };
        ix.persist_if_due(cache, &before);
        crate::index::give_back_freed_memory();
        Ok(ix)
    }

    /// [`Index::open_cached`] when `cache` keeps an index of the file that is still
    /// its own (grown by what the file gained since, and kept again when due); `None`
    /// when it keeps none, without scanning the file: for a reader that has its own way
    /// to read it (the catalog's listing, `listing::indexed`), and makes no index of a
    /// session nothing opened.
    ///
    /// # Errors
    /// As [`Index::open_cached`] (the growth is read; a file no longer a session's).
    pub fn open_kept(path: &Path, cache: &Cache) -> Result<Option<Index>> {
        let src = Source::open(path)?;
        let Some(before) = src.stat()? else {
            return Ok(None);
        };
        if before.size < cache.min_bytes {
            return Ok(None);
        }
        let file = cache.dir.join(folder::entry_name(before.dev, before.ino));
        let mut ix = match restore(src, &before, file) {
            Restore::Done(ix) => *ix,
            Restore::Miss(_) | Restore::Failed => return Ok(None),
        };
        ix.persist_if_due(cache, &before);
        crate::index::give_back_freed_memory();
        Ok(Some(ix))
    }

    /// Write this index to `cache` if it covers enough that a persisted copy pays, if
    /// the file was stable while it was read (`before`: its `fstat` before the read),
    /// and if the copy it came from (if any) is behind by more than its own size.
    fn persist_if_due(&mut self, cache: &Cache, before: &Stat) {
        // An image that ends inside an accepted line (no `\n` yet) is not kept: rare,
        // and a writer that glues its line onto that one makes the growth read the
        // line again from its first byte (`lines::continued`).
        if self.needs_migration || self.mid_line.is_some() || self.image_len < cache.min_bytes {
            return;
        }
        let Some((len, fp)) = &self.fingerprint else {
            return;
        };
        if *len != self.image_len {
            return;
        }
        if let Some(p) = &self.persisted {
            if self.image_len.saturating_sub(p.image_len) < p.bytes.max(1) {
                return;
            }
        }
        match self.src.stat() {
            Ok(Some(after)) if after == *before && settled(&after, cache.settle) => {
                let bytes = state::encode(self, &after, fp);
                let name = folder::entry_name(after.dev, after.ino);
                if let Ok(path) = folder::write(&cache.dir, &name, &bytes) {
                    folder::evict(&cache.dir, cache.budget, &path);
                    self.persisted = Some(Persisted {
                        path,
                        image_len: self.image_len,
                        bytes: bytes.len() as u64,
                        map: None,
                    });
                }
            }
            _ => {}
        }
    }

    /// [`Error::Stale`] if the persisted index this one views was cut short under its
    /// map, or written in place (by another program: nothing here truncates or writes
    /// one in place), as its `fstat` shows or a read past the cut's page flagged
    /// (`col::Mapping::held`: the manager asks once per call, before it); the answers
    /// since may be wrong, and it goes. A file whose size, mtime or ctime moved while
    /// it is no shorter (another process's read marks it used by its mtime; a program
    /// may have written it) is read whole once: if its bytes are still those mapped
    /// (the header as it was, which holds the checksum of the head, which holds those
    /// of the sections, and every checksum right), what it shows is seen from then on;
    /// else it was written in place.
    ///
    /// # Errors
    /// As said.
    pub fn check_persisted(&self) -> Result<()> {
        let Some(map) = self.persisted.as_ref().and_then(|p| p.map.as_deref()) else {
            return Ok(());
        };
        if let Some(cut) = map.lost() {
            return self.persisted_stale(cut);
        }
        let cut = match map.held() {
            Held::Same => return Ok(()),
            Held::Cut => true,
            Held::Moved(now) => {
                let bytes = map.bytes();
                let intact = bytes.get(..map.head().len()) == Some(map.head())
                    && format::open(bytes).is_some_and(|o| format::check_sections(bytes, &o));
                if intact && !map.faulted() {
                    map.confirm(now);
                    return Ok(());
                }
                map.faulted()
            }
        };
        self.persisted_stale(cut)
    }

    /// [`Index::check_persisted`] by the guard's flag alone (one atomic load): asked
    /// after every read of the index (`python.rs`, `PyIndex::reading`), it sees a cut
    /// that the read itself met past the cut's page.
    ///
    /// # Errors
    /// As said.
    pub fn check_persisted_reads(&self) -> Result<()> {
        match self.persisted.as_ref().and_then(|p| p.map.as_deref()) {
            Some(m) if m.faulted() => self.persisted_stale(true),
            _ => Ok(()),
        }
    }

    fn persisted_stale(&self, cut: bool) -> Result<()> {
        let Some(p) = &self.persisted else {
            return Ok(());
        };
        // Removed once: the path may hold an index another process wrote since.
        let map = p.map.as_deref();
        if map.is_some_and(|m| m.give_up(cut)) {
            folder::remove(&p.path);
        }
        let cut = map.and_then(|m| m.lost()).unwrap_or(cut); // as it was first given up
                                                             // Say which file changed: the kept index, which may be all that did.
        Err(Error::Stale(format!(
            "the index of this session kept in {} was {} while in use \
             (by another program); reopen the session",
            p.path.display(),
            if cut { "cut short" } else { "written over" }
        )))
    }

    /// Some column of this index reads a persisted index's map in place.
    pub fn views_persisted(&self) -> bool {
        self.persisted.as_ref().is_some_and(|p| p.map.is_some())
    }

    /// A line of the file no longer holds what this index says: its persisted copy is
    /// wrong too (the file was rewritten in a way the open could not see), and goes.
    pub(crate) fn distrust_persisted(&self) {
        if let Some(p) = &self.persisted {
            folder::remove(&p.path);
        }
    }
}

/// The index of the file `src` reads (whose `fstat` is `now`) from its persisted copy
/// at `file`, grown by the bytes the file gained since; a miss gives `src` back, a
/// growth that fails to be read is [`Restore::Failed`].
fn restore(src: Source, now: &Stat, file: PathBuf) -> Restore {
    let Some(map) = folder::map(&file) else {
        return Restore::Miss(src);
    };
    let bytes = map.bytes();
    let Some(opened) = format::open(bytes) else {
        return Restore::Miss(src);
    };
    let Some(then) = state::decode_head(opened.fields) else {
        return Restore::Miss(src);
    };
    let s = then.stat;
    let same = s.dev == now.dev
        && s.ino == now.ino
        && s.generation == now.generation
        && s.birth_ns == now.birth_ns;
    let unchanged = now.size == s.size && now.mtime_ns == s.mtime_ns && now.ctime_ns == s.ctime_ns;
    if !same || !(unchanged || now.size > s.size) {
        return Restore::Miss(src);
    }
    if ends_now(&src, then.image_len).as_deref() != Some(&then.fingerprint[..]) {
        return Restore::Miss(src);
    }
    // The sections' checksums are checked on another core while this one decodes
    // (the decode reads only bounds-checked values; it is discarded if a sum fails).
    let mut ix = Index::empty(src);
    let (sums, decoded) = std::thread::scope(|s| {
        let sums = s.spawn(|| format::check_sections(bytes, &opened));
        let decoded = state::decode(&map, &opened, &mut ix);
        (sums.join().unwrap_or(false), decoded)
    });
    if !sums || decoded.is_none() || map.faulted() {
        let src = std::mem::replace(&mut ix.src, Source::from_bytes(Vec::new()));
        return Restore::Miss(src);
    }
    ix.keep_ends = Some(Ends::seeded(then.image_len, &then.fingerprint));
    ix.persisted = Some(Persisted {
        path: file,
        image_len: then.image_len,
        bytes: bytes.len() as u64,
        map: Some(Arc::clone(&map)),
    });
    match ix.index_new() {
        Ok(_) => Restore::Done(Box::new(ix)),
        Err(_) => Restore::Failed,
    }
}

#[cfg(test)]
pub(crate) mod tests;
