//! The cache folder's files: one persisted index per session file identity
//! (`<dev>-<ino>.idx`, hex), written whole beside its name and renamed over it (a
//! reader sees the old file or the new one, never part of one; two writers of one
//! index leave one of their files), read whole, and evicted least recently used first
//! once the folder holds more than its budget. Every failure here is a cache miss: the
//! caller scans the session file instead.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::col::Mapping;

/// A temporary file older than this was left by a writer that died (a write takes
/// milliseconds): eviction removes it.
const DEAD_TEMP: Duration = Duration::from_secs(3600);

/// The name of the persisted index of the file with this device and inode.
pub(crate) fn entry_name(dev: u64, ino: u64) -> String {
    format!("{dev:x}-{ino:x}.idx")
}

/// A guarded map of the file at `path` if it is a regular file (a symlink, a FIFO or a
/// device put there is not mapped), and mark it used now (its mtime: eviction's
/// clock, as atimes are often not kept).
pub(crate) fn map(path: &Path) -> Option<Arc<Mapping>> {
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    // Not fatal: a file another user wrote cannot be touched, and is still read.
    let _ = f.set_modified(SystemTime::now());
    Mapping::new(f, usize::try_from(meta.len()).ok()?)
}

fn random() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() as u32
}

/// Write `bytes` as `dir/name`: to a temporary file in `dir` (created with the folder,
/// private to the user), then renamed over the name.
///
/// # Errors
/// The folder cannot be created or written.
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let target = dir.join(name);
    let temp = dir.join(format!(
        ".{name}.{}.{:08x}.tmp",
        std::process::id(),
        random()
    ));
    let out = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        f.write_all(bytes)?;
        drop(f);
        fs::rename(&temp, &target)
    })();
    if out.is_err() {
        let _ = fs::remove_file(&temp);
    }
    out.map(|()| target)
}

/// Whether `name` is one of this module's: `Some(false)` for an index
/// ([`entry_name`]), `Some(true)` for a writer's temporary file ([`write`]'s
/// `.<index name>.<pid>.<8 hex digits>.tmp`), `None` for any other name.
fn ours(name: &str) -> Option<bool> {
    fn hex(s: &str) -> bool {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    }
    fn index(name: &str) -> bool {
        name.strip_suffix(".idx")
            .and_then(|n| n.split_once('-'))
            .is_some_and(|(dev, ino)| hex(dev) && hex(ino))
    }
    if index(name) {
        return Some(false);
    }
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (rest, rand) = rest.rsplit_once('.')?;
    let (index_name, pid) = rest.rsplit_once('.')?;
    let ok =
        rand.len() == 8 && hex(rand) && pid.bytes().all(|b| b.is_ascii_digit()) && !pid.is_empty();
    (ok && index(index_name)).then_some(true)
}

/// Remove a persisted index (one found wrong).
pub(crate) fn remove(path: &Path) {
    let _ = fs::remove_file(path);
}

/// Keep the folder within `budget` bytes: its persisted indexes are removed least
/// recently used first (by mtime, which a read sets), never `keep`; temporary files of
/// dead writers go too. Only this module's names are touched. Another process may evict
/// at the same time: a file already gone is skipped.
pub(crate) fn evict(dir: &Path, budget: u64, keep: &Path) {
    let Ok(rd) = fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    let mut files: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    let mut total = 0u64;
    for entry in rd.flatten() {
        let name = entry.file_name();
        let Some(temp) = name.to_str().and_then(ours) else {
            continue; // another program's file, in a folder it may share
        };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let path = entry.path();
        if temp && now.duration_since(mtime).is_ok_and(|age| age > DEAD_TEMP) {
            let _ = fs::remove_file(&path);
            continue;
        }
        total += meta.len();
        files.push((mtime, meta.len(), path));
    }
    if total <= budget {
        return;
    }
    files.sort();
    for (_, size, path) in files {
        if total <= budget {
            break;
        }
        if path == keep || path.extension().is_none_or(|e| e != "idx") {
            continue; // a live writer's temporary file stays
        }
        if fs::remove_file(&path).is_ok() {
            total -= size;
        }
    }
}
