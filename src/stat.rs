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
}
