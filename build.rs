//! Stamps the build with a hash of the core's sources (`SESSIONTREE_SOURCE_HASH`): a
//! persisted index (`src/persist/`) is used only by the build that wrote it, since any
//! change to the loader rules changes what an index holds.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in rd.flatten() {
        let p = entry.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    files.sort();
    // SipHash with fixed keys: the same sources give the same stamp with one toolchain
    // (another toolchain may give another stamp, and indexes are rebuilt once).
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    for f in &files {
        h.write(f.to_string_lossy().as_bytes());
        h.write(&std::fs::read(f).unwrap_or_default());
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed=src");
    println!(
        "cargo:rustc-env=SESSIONTREE_SOURCE_HASH={:016x}",
        h.finish()
    );
}
