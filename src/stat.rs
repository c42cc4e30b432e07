//! Has a path's `stat(2)` changed since the staleness rule last verified it?
//!
//! The rule itself lives in `python/sessiontree/_filestate.py` (`FileWatch.check`): it
//! stats the path once per public call and returns early when device, inode, size and
//! mtime are what it last verified. [`unchanged`] is that early return for the native
//! backend, in one call: a raw `stat` here took 1.8 µs where Python's `os.stat` took
//! 2.7 µs (the result object and its conversions), and it is most of what a repeated
//! per-id call costs (docs/BENCHMARKS.md). Anything else — a change, an error, a path
//! this cannot pass to `stat` — is `false`, and the Python rule looks at the file.

/// What the rule verified: `st_dev`, `st_ino`, `st_size` and `st_mtime_ns`, as Python's
/// `os.stat` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

/// Longest path passed to `stat` from the stack buffer (Linux's `PATH_MAX`, with its
/// NUL); a longer one is `false` (the Python rule stats it).
const PATH_MAX: usize = 4096;

/// `true` iff `stat(path)` succeeds and shows exactly `seen`. `path` is the file name's
/// bytes (`os.fsencode`), without a NUL.
#[cfg(unix)]
pub fn unchanged(path: &[u8], seen: &Seen) -> bool {
    if path.len() >= PATH_MAX || memchr::memchr(0, path).is_some() {
        return false;
    }
    let mut name = [0u8; PATH_MAX];
    name[..path.len()].copy_from_slice(path);
    // SAFETY: `name` is NUL-terminated (zeroed past `path`); `st` is plain data that
    // `stat` fills, read only when it succeeded.
    let st = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(name.as_ptr().cast(), &mut st) != 0 {
            return false;
        }
        st
    };
    let mtime_ns = i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec);
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    let now = Seen {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: st.st_size as u64,
        mtime_ns,
    };
    now == *seen
}

#[cfg(not(unix))]
pub fn unchanged(_path: &[u8], _seen: &Seen) -> bool {
    false
}

/// A session file of a folder as the catalog lists it ([`folder_files`]): its name
/// (the directory entry's bytes), its path (the folder as given joined with the name, as
/// `os.path.join` does) and what `stat` (symlinks followed) shows, or `None` when it
/// cannot be `stat`-ed.
#[derive(Clone, Debug)]
pub struct Listed {
    pub name: Vec<u8>,
    pub path: Vec<u8>,
    pub st: Option<FileStat>,
}

/// `st_dev`, `st_ino`, `st_size`, `st_mtime_ns`, `st_ctime_ns` as Python's `os.stat`
/// gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

/// `dev, ino, size, mtime_ns, ctime_ns` as the catalog holds a file's identity
/// (SQLite's 64-bit integers).
pub type Ident = (i64, i64, i64, i64, i64);

impl FileStat {
    /// Whether the catalog's identity `ident` is this file's as `stat` shows it now: the
    /// one rule by which a warm answer (usage, search) trusts a row to hold the file as
    /// it is. A value past SQLite's integers is never the catalog's.
    pub fn is(&self, ident: &Ident) -> bool {
        let now = (
            i64::try_from(self.dev).ok(),
            i64::try_from(self.ino).ok(),
            i64::try_from(self.size).ok(),
            i64::try_from(self.mtime_ns).ok(),
            i64::try_from(self.ctime_ns).ok(),
        );
        let (a, b, c, d, e) = *ident;
        now == (Some(a), Some(b), Some(c), Some(d), Some(e))
    }
}

/// The listings ([`folder_files`]) of folders, made on a thread of their own while the
/// caller reads the catalog's rows (the `stat` of every file is a third of a warm
/// answer's time); a caller done with its own work lists the folders left beside it
/// ([`Listings::help`]): both cores list. Dropped early, the listing stops after the
/// folders being listed.
pub struct Listings {
    shared: std::sync::Arc<Shared>,
    /// Folders [`Listings::next`] gave.
    taken: usize,
}

struct Shared {
    folders: Vec<Vec<u8>>,
    /// The next folder no one lists yet.
    next: std::sync::atomic::AtomicUsize,
    done: std::sync::Mutex<Vec<Option<Vec<Listed>>>>,
    ready: std::sync::Condvar,
    stop: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// List folders no one lists yet until none is left (or the caller is gone).
    fn work(&self) {
        use std::sync::atomic::Ordering;
        while !self.stop.load(Ordering::Relaxed) {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(f) = self.folders.get(i) else { break };
            let got = folder_files(f);
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            done[i] = Some(got);
            self.ready.notify_all();
        }
    }
}

impl Listings {
    /// Start listing `folders`.
    pub fn start(folders: Vec<Vec<u8>>) -> Listings {
        let n = folders.len();
        let shared = std::sync::Arc::new(Shared {
            folders,
            next: std::sync::atomic::AtomicUsize::new(0),
            done: std::sync::Mutex::new((0..n).map(|_| None).collect()),
            ready: std::sync::Condvar::new(),
            stop: std::sync::atomic::AtomicBool::new(false),
        });
        let worker = std::sync::Arc::clone(&shared);
        std::thread::spawn(move || worker.work());
        Listings { shared, taken: 0 }
    }

    /// List the folders no one lists yet on this thread too.
    pub fn help(&self) {
        self.shared.work();
    }
}

/// Each folder's listing, in the order given (each waited for).
impl Iterator for Listings {
    type Item = Vec<Listed>;

    fn next(&mut self) -> Option<Vec<Listed>> {
        let i = self.taken;
        if i >= self.shared.folders.len() {
            return None;
        }
        self.taken += 1;
        let mut done = self.shared.done.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(got) = done[i].take() {
                return Some(got);
            }
            done = self
                .shared
                .ready
                .wait(done)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Listings {
    fn drop(&mut self) {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The `*.jsonl` regular files of `folder` (symlinks followed), or the one file
/// `folder` names when it is not a directory, in no particular order: the catalog's
/// one listing rule (`catalog/_files.folder_files` sorts this by name; the warm usage
/// scan lists with it too), with `fstatat` against the open directory (one path
/// component to resolve, not the whole path). A folder that cannot be read (missing,
/// no permission) has no files; a file that cannot be `stat`-ed is listed with
/// `st: None`.
#[cfg(unix)]
pub fn folder_files(folder: &[u8]) -> Vec<Listed> {
    let mut out = Vec::new();
    if folder.len() >= PATH_MAX || memchr::memchr(0, folder).is_some() {
        return out;
    }
    let mut name = [0u8; PATH_MAX];
    name[..folder.len()].copy_from_slice(folder);
    let join = |n: &[u8]| {
        let mut p = folder.to_vec();
        if !p.is_empty() && !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(n);
        p
    };
    // SAFETY: `name` is NUL-terminated; the directory stream is closed below and its
    // entries are read (copied) before the next `readdir`; `st` is plain data read only
    // when `fstatat` succeeded.
    unsafe {
        let dir = libc::opendir(name.as_ptr().cast());
        if dir.is_null() {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOTDIR) {
                // One session file named: itself (`os.path.basename` of the path as given).
                let base = folder
                    .rsplit(|&b| b == b'/')
                    .next()
                    .unwrap_or(folder)
                    .to_vec();
                let st = stat_at(libc::AT_FDCWD, name.as_ptr().cast());
                if st.is_none_or(|(_, reg)| reg) {
                    out.push(Listed {
                        name: base,
                        path: folder.to_vec(),
                        st: st.map(|s| s.0),
                    });
                }
            }
            return out;
        }
        each_entry(dir, |fd, n, _| {
            let bytes = n.to_bytes();
            if !bytes.ends_with(b".jsonl") {
                return;
            }
            let st = stat_at(fd, n.as_ptr());
            if st.is_none_or(|(_, reg)| reg) {
                out.push(Listed {
                    name: bytes.to_vec(),
                    path: join(bytes),
                    st: st.map(|s| s.0),
                });
            }
        });
    }
    out
}

/// Call `f(fd, name, d_type)` for each entry of the directory stream `dir` (`fd` its
/// descriptor, for `fstatat`), then close it.
///
/// # Safety
/// `dir` is an open stream from `opendir`, used by nothing else; `name` is valid only
/// until `f` returns (the next `readdir` reuses it).
#[cfg(unix)]
unsafe fn each_entry(dir: *mut libc::DIR, mut f: impl FnMut(libc::c_int, &std::ffi::CStr, u8)) {
    let fd = libc::dirfd(dir);
    loop {
        let e = libc::readdir(dir);
        if e.is_null() {
            break;
        }
        f(
            fd,
            std::ffi::CStr::from_ptr((*e).d_name.as_ptr()),
            (*e).d_type,
        );
    }
    libc::closedir(dir);
}

/// Folders already walked, by `(st_dev, st_ino)`.
pub type Walked = std::collections::HashSet<(u64, u64)>;

/// `root` and every folder under it, as `cli/_scope._walk` lists a PATH: the root, then,
/// folder by folder from the root down (each folder's subfolders before any of theirs,
/// the first subfolder's tree before the second's), each folder's subfolders sorted by
/// name as Python sorts `os.fsdecode`d names. Subfolders are the entries that are
/// folders with symlinks followed (`os.scandir`'s `is_dir()`); one whose `stat`
/// (followed) fails or shows a folder in `seen` is left out with its tree, so a link
/// that loops ends the walk there. A root that cannot be `stat`-ed, or is in `seen`,
/// gives nothing; a folder that cannot be read has no subfolders. Every folder listed
/// is added to `seen`. Paths are joined as `os.path.join` does.
///
/// Python's `os.walk` costs a method call per entry (a file too): 15 ms of CPU over
/// 20,000 files in 10 folders, before any answer.
#[cfg(unix)]
pub fn walk(root: &[u8], seen: &mut Walked) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if !first_time(root, seen) {
        return out;
    }
    out.push(root.to_vec());
    walk_under(root, seen, &mut out);
    out
}

#[cfg(unix)]
fn walk_under(top: &[u8], seen: &mut Walked, out: &mut Vec<Vec<u8>>) {
    let mut names = subfolders(top);
    names.sort_by_cached_key(|n| code_points(n));
    let kept: Vec<Vec<u8>> = names
        .iter()
        .map(|n| path_join(top, n))
        .filter(|p| first_time(p, seen))
        .collect();
    out.extend(kept.iter().cloned());
    for p in &kept {
        walk_under(p, seen, out);
    }
}

/// `os.path.join(a, b)` for a name `b` (no `/` in it).
fn path_join(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut p = a.to_vec();
    if !p.is_empty() && !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(b);
    p
}

/// A name as `os.fsdecode` makes it, as code points: Python's order of names.
pub fn code_points(name: &[u8]) -> Vec<u32> {
    let mut out = Vec::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        out.extend(chunk.valid().chars().map(u32::from));
        out.extend(chunk.invalid().iter().map(|&b| 0xDC00 + u32::from(b)));
    }
    out
}

/// `stat(path)` (followed) succeeds and its folder is not in `seen`; then it is.
#[cfg(unix)]
fn first_time(path: &[u8], seen: &mut Walked) -> bool {
    let Ok(c) = std::ffi::CString::new(path) else {
        return false;
    };
    // SAFETY: `c` is NUL-terminated; `st` is plain data read only when `stat` succeeded.
    let st = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(c.as_ptr(), &mut st) != 0 {
            return false;
        }
        st
    };
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    seen.insert((st.st_dev as u64, st.st_ino as u64))
}

/// The names of `top`'s entries that are folders, symlinks followed (`DirEntry.is_dir()`:
/// the entry's type, or `stat` where it is a link or unknown; an error is no folder).
#[cfg(unix)]
fn subfolders(top: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let Ok(c) = std::ffi::CString::new(top) else {
        return out;
    };
    // SAFETY: `c` is NUL-terminated; each entry's name is read before the next
    // `readdir`; the stream is closed below; `st` is read only when `fstatat` succeeded.
    unsafe {
        let dir = libc::opendir(c.as_ptr());
        if dir.is_null() {
            return out;
        }
        each_entry(dir, |fd, n, d_type| {
            let bytes = n.to_bytes();
            if bytes == b"." || bytes == b".." {
                return;
            }
            let is_dir = match d_type {
                libc::DT_DIR => true,
                libc::DT_LNK | libc::DT_UNKNOWN => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::fstatat(fd, n.as_ptr(), &mut st, 0) == 0
                        && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR
                }
                _ => false,
            };
            if is_dir {
                out.push(bytes.to_vec());
            }
        });
    }
    out
}

#[cfg(not(unix))]
pub fn walk(_root: &[u8], _seen: &mut Walked) -> Vec<Vec<u8>> {
    Vec::new()
}

/// `fstatat(fd, name)` following symlinks: the stat and whether it is a regular file.
#[cfg(unix)]
unsafe fn stat_at(fd: libc::c_int, name: *const libc::c_char) -> Option<(FileStat, bool)> {
    let mut st: libc::stat = std::mem::zeroed();
    if libc::fstatat(fd, name, &mut st, 0) != 0 {
        return None;
    }
    let ns = |s: libc::time_t, n: libc::c_long| i128::from(s) * 1_000_000_000 + i128::from(n);
    #[allow(clippy::unnecessary_cast)] // the field types differ between targets
    let out = FileStat {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: st.st_size as u64,
        mtime_ns: ns(st.st_mtime, st.st_mtime_nsec as libc::c_long),
        ctime_ns: ns(st.st_ctime, st.st_ctime_nsec as libc::c_long),
    };
    Some((out, (st.st_mode & libc::S_IFMT) == libc::S_IFREG))
}

#[cfg(not(unix))]
pub fn folder_files(_folder: &[u8]) -> Vec<Listed> {
    Vec::new()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;

    fn seen_of(path: &std::path::Path) -> Seen {
        let m = std::fs::metadata(path).unwrap();
        Seen {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        }
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("sessiontree-stat-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("s.jsonl")
    }

    #[test]
    fn a_file_as_verified_is_unchanged_and_any_field_that_differs_is_not() {
        let p = temp("fields");
        std::fs::write(&p, b"{}\n").unwrap();
        let seen = seen_of(&p);
        let name = p.as_os_str().as_bytes();
        assert!(unchanged(name, &seen));
        for other in [
            Seen {
                dev: seen.dev ^ 1,
                ..seen
            },
            Seen {
                ino: seen.ino ^ 1,
                ..seen
            },
            Seen {
                size: seen.size + 1,
                ..seen
            },
            Seen {
                mtime_ns: seen.mtime_ns + 1,
                ..seen
            },
        ] {
            assert!(!unchanged(name, &other), "{other:?}");
        }
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_append_a_replacement_and_a_removal_are_changes() {
        let p = temp("changes");
        std::fs::write(&p, b"{}\n").unwrap();
        let seen = seen_of(&p);
        let name = p.as_os_str().as_bytes().to_vec();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{}\n")
            .unwrap();
        assert!(!unchanged(&name, &seen));
        let seen = seen_of(&p);
        let other = p.with_extension("new");
        std::fs::write(&other, b"{}\n{}\n").unwrap();
        std::fs::rename(&other, &p).unwrap();
        assert!(!unchanged(&name, &seen), "another inode at the path");
        let seen = seen_of(&p);
        std::fs::remove_file(&p).unwrap();
        assert!(!unchanged(&name, &seen), "gone");
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_name_stat_cannot_take_is_never_unchanged() {
        let p = temp("names");
        std::fs::write(&p, b"{}\n").unwrap();
        let seen = seen_of(&p);
        let mut with_nul = p.as_os_str().as_bytes().to_vec();
        with_nul.push(0);
        assert!(!unchanged(&with_nul, &seen));
        assert!(!unchanged(&vec![b'a'; PATH_MAX], &seen));
        assert!(!unchanged(b"", &seen));
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_folder_lists_its_jsonl_regular_files_with_their_stat() {
        let dir = temp("folder").parent().unwrap().to_path_buf();
        std::fs::write(dir.join("a.jsonl"), b"{}\n").unwrap();
        std::fs::write(dir.join("b.txt"), b"{}\n").unwrap();
        std::fs::create_dir_all(dir.join("sub.jsonl")).unwrap();
        std::os::unix::fs::symlink(dir.join("a.jsonl"), dir.join("link.jsonl")).unwrap();
        std::os::unix::fs::symlink(dir.join("missing"), dir.join("dangling.jsonl")).unwrap();
        let raw = std::ffi::OsStr::from_bytes(b"c\xff.jsonl");
        std::fs::write(dir.join(raw), b"{}\n{}\n").unwrap();
        let folder = dir.as_os_str().as_bytes();
        let mut got = folder_files(folder);
        got.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<&[u8]> = got.iter().map(|l| l.name.as_slice()).collect();
        assert_eq!(
            names,
            vec![
                &b"a.jsonl"[..],
                b"c\xff.jsonl",
                b"dangling.jsonl",
                b"link.jsonl"
            ]
        );
        let a = seen_of(&dir.join("a.jsonl"));
        let st = got[0].st.unwrap();
        assert_eq!(
            (st.dev, st.ino, st.size, st.mtime_ns),
            (a.dev, a.ino, a.size, a.mtime_ns)
        );
        assert_eq!(got[3].st, got[0].st, "a symlink is followed");
        assert!(
            got[2].st.is_none(),
            "a file stat cannot take is listed without one"
        );
        assert_eq!(got[1].st.unwrap().size, 6);
        assert_eq!(got[0].path, [folder, b"/a.jsonl"].concat());
        // One file named: itself; a folder that is not there: nothing.
        let one = [folder, b"/a.jsonl"].concat();
        let single = folder_files(&one);
        assert_eq!(single.len(), 1);
        assert_eq!(
            (single[0].name.as_slice(), single[0].path.as_slice()),
            (&b"a.jsonl"[..], one.as_slice())
        );
        assert!(folder_files(&[folder, b"/nowhere"].concat()).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_walk_lists_folders_from_the_root_down_each_once() {
        let dir = temp("walk").parent().unwrap().to_path_buf();
        for d in ["b/y", "b/x", "a/z", "c"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("a/f.jsonl"), b"{}\n").unwrap();
        std::os::unix::fs::symlink(dir.join("b"), dir.join("c/to-b")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("a/z/up")).unwrap();
        std::os::unix::fs::symlink(dir.join("missing"), dir.join("a/gone")).unwrap();
        let root = dir.as_os_str().as_bytes();
        let mut seen = Walked::new();
        let got: Vec<Vec<u8>> = walk(root, &mut seen);
        let rel: Vec<String> = got
            .iter()
            .map(|p| String::from_utf8_lossy(&p[root.len()..]).into_owned())
            .collect();
        // The link to b is b again (seen), the link up is the root (seen).
        assert_eq!(rel, ["", "/a", "/b", "/c", "/a/z", "/b/x", "/b/y"]);
        assert_eq!(seen.len(), 7);
        assert!(walk(root, &mut seen).is_empty(), "a root already walked");
        let mut fresh = Walked::new();
        assert_eq!(walk(&[root, b"/a/f.jsonl"].concat(), &mut fresh).len(), 1);
        assert!(walk(&[root, b"/nowhere"].concat(), &mut fresh).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_catalog_identity_is_a_stat_only_field_for_field() {
        let st = FileStat {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: 4,
            ctime_ns: 5,
        };
        assert!(st.is(&(1, 2, 3, 4, 5)));
        for other in [
            (9, 2, 3, 4, 5),
            (1, 9, 3, 4, 5),
            (1, 2, 9, 4, 5),
            (1, 2, 3, 9, 5),
            (1, 2, 3, 4, 9),
        ] {
            assert!(!st.is(&other), "{other:?}");
        }
        // A device number past SQLite's integers is never the catalog's.
        let big = FileStat {
            dev: u64::MAX,
            ..st
        };
        assert!(!big.is(&(-1, 2, 3, 4, 5)));
    }

    #[test]
    fn listings_come_in_order_whoever_lists_them() {
        let dir = temp("listings").parent().unwrap().to_path_buf();
        let mut folders = Vec::new();
        for i in 0..12 {
            let d = dir.join(format!("f{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for j in 0..=i {
                std::fs::write(d.join(format!("{j}.jsonl")), b"{}\n").unwrap();
            }
            folders.push(d.as_os_str().as_bytes().to_vec());
        }
        for help in [false, true] {
            let mut l = Listings::start(folders.clone());
            if help {
                l.help();
            }
            for i in 0..12 {
                assert_eq!(l.next().unwrap().len(), i + 1, "folder {i}, help {help}");
            }
            assert!(l.next().is_none());
        }
        // Dropped before the end: nothing waits.
        drop(Listings::start(folders));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_sort_as_python_sorts_decoded_names() {
        let mut names: Vec<&[u8]> = vec![b"\xef\x80\x80", b"\xff", b"b", "\u{e9}".as_bytes()];
        names.sort_by_cached_key(|n| code_points(n));
        // U+00E9 < U+DCFF (the byte 0xFF escaped) < U+F000.
        assert_eq!(
            names,
            vec![&b"b"[..], "\u{e9}".as_bytes(), b"\xff", b"\xef\x80\x80"]
        );
    }
}
