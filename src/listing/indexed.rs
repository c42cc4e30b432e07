//! A listing pass answered from a session's index (`persist`: what an open learned),
//! so that listing a session that was opened reads a few of its lines, not the file,
//! and a listing of a session never opened leaves an index that makes its next open a
//! reopen (the catalog's `_shared.py` chooses; docs/ARCHITECTURE.md, "One cache").
//!
//! The result is the [`Scan`] a [`super::scan_file`] from offset 0 with no content
//! collected would give for the same bytes `[0, end)`, `end` the end of the last line
//! the index covers (the caller scans the rest from there as a resumed pass):
//!
//! * the header and oh-my-pi's title slot, the `leaf` entries (their moves), the last
//!   `session_info` entry (the name) and the user messages up to the first one with
//!   text are read and taken through the same [`State`] as a scan's lines;
//! * every other entry is taken from the index: its id, its `parentId` as written
//!   (the parent found, the link a cycle breaker had, or the id that names no entry),
//!   one `message` more for a message;
//! * the last activity time is the index's, kept by the same rule at indexing time
//!   (`lines::Cand::activity`).
//!
//! The entries record is the scan's, byte for byte (an entry whose `parentId` is its
//! own id, which the index links to nothing, is known by the one-entry `cycle` item
//! the index reported for it).

use std::collections::{HashMap, HashSet};

use super::{push_record, Collect, Move, Scan, State};
use crate::error::Result;
use crate::index::Index;
use crate::issue::IssueKind;
use crate::kind::{EntryKind, Role};
use crate::tree::NONE;

/// The listing of `ix`'s bytes up to the end of the last line it covers, or `None`
/// when the index cannot give it as a scan would (no header, a version 1 file, an
/// index that ends inside a line). `fingerprint` sizes [`Scan::ends`].
///
/// # Errors
/// A line read no longer holds the bytes indexed, or the file shrank
/// ([`crate::Error::Stale`]), or a read fails.
pub fn scan_indexed(ix: &Index, fingerprint: u64) -> Result<Option<Scan>> {
    let Some(header) = ix.header.clone() else {
        return Ok(None);
    };
    if ix.needs_migration || ix.mid_line.is_some() {
        return Ok(None);
    }
    let end = ix.image_len;
    let mut st = State::new(&[], 0, Collect::default());
    let mut read = 0u64;
    let mut feed = |st: &mut State<'_>, bytes: &[u8], off: u64| {
        read += bytes.len() as u64;
        st.line_len = bytes.len() as u64;
        st.line(bytes, off, true)
    };
    if let (Some(t), Some(bytes)) = (ix.title.clone(), ix.title_slot()?) {
        feed(&mut st, &bytes, t.start);
    }
    if !feed(&mut st, &ix.header()?, header.start) || !st.header_found || st.out.old_version {
        return Ok(None);
    }
    let n = ix.len();
    let last_info = (0..n)
        .rev()
        .find(|&e| ix.kinds[e] == EntryKind::SessionInfo);
    let unresolved: HashMap<u32, &[u8]> = ix.unresolved.iter().map(|(e, p)| (*e, &p[..])).collect();
    let broken: HashMap<u32, u32> = ix.broken.iter().copied().collect();
    let own: HashSet<&[u8]> = ix
        .issues
        .iter()
        .filter(|i| i.kind == IssueKind::Cycle && i.n == Some(1))
        .filter_map(|i| i.ids.first().map(|id| &id[..]))
        .collect();
    let mut first_wanted = true;
    let mut buf = Vec::new();
    for e in 0..n {
        let (kind, role) = (ix.kinds[e], ix.roles[e]);
        let user = kind == EntryKind::Message && role == Role::User;
        let e32 = e as u32;
        if kind == EntryKind::Leaf || last_info == Some(e) || (user && first_wanted) {
            buf.resize(ix.line_len(e32), 0);
            ix.read_line(e32, &mut buf)?;
            let start = ix.start[e];
            let before = st.out.entry_count;
            feed(&mut st, &buf, start);
            if st.out.entry_count != before + 1 {
                return Ok(None); // not taken as a scan takes it: let a scan decide
            }
            first_wanted = st.out.first_message.is_none();
            continue;
        }
        let id = ix.ids.get(e32);
        let parent = if let Some(&raw) = unresolved.get(&e32) {
            Some(raw)
        } else if let Some(&link) = broken.get(&e32) {
            Some(ix.ids.get(link))
        } else {
            match ix.parent[e] {
                NONE if own.contains(id) => Some(id),
                NONE => None,
                p => Some(ix.ids.get(p)),
            }
        };
        push_record(&mut st.out.entries, id, parent, Move::Not);
        // Numbered as a scan numbers them (the table holds only the entries read).
        st.arena.push(id);
        st.out.entry_count += 1;
        if kind == EntryKind::Message {
            st.out.message_count += 1;
        }
    }
    st.out.activity = ix.activity;
    st.out.end = end;
    let mut scan = st.finish(false);
    let k = fingerprint.min(end);
    let mut ends = ix.src.read(0, k)?;
    ends.extend(ix.src.read(end - k, end)?);
    scan.ends = ends;
    // What the open scanned (the whole file, or the bytes it gained since its index
    // was kept) and the lines read here.
    scan.bytes_read = ix.scanned + read;
    Ok(Some(scan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::scan_file;
    use std::fmt::Write as _;

    fn facts(s: &Scan) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "end={} eof={} tail={} header={:?} old={} fb={:?} count={} first={:?} name={:?} \
             activity={:?} entries={:?} n={} ends={:?}",
            s.end,
            s.eof,
            s.tail,
            s.header,
            s.old_version,
            s.fallback,
            s.message_count,
            s.first_message,
            s.name,
            s.activity,
            s.entries,
            s.entry_count,
            s.ends
        );
        out
    }

    /// Every listing fact and the entries record read from an index equal a scan's of
    /// the same bytes, on sessions with every kind of damage the loader reports
    /// (`persist::tests`' generator: cycles, forward and missing parents, own-id
    /// parents, glued and torn lines, duplicate ids, leaf moves, names, titles).
    #[test]
    fn a_listing_from_the_index_is_the_scan_of_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("st-indexed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut used = 0;
        for seed in 1..300u64 {
            let path = dir.join(format!("s{seed}.jsonl"));
            std::fs::write(&path, crate::persist::tests::generated(seed)).unwrap();
            let ix = Index::open(&path).unwrap();
            let Some(got) = scan_indexed(&ix, 4096).unwrap() else {
                continue;
            };
            used += 1;
            let want = scan_file(&path, 0, &[], Collect::default(), got.end.max(1), 4096).unwrap();
            assert_eq!(facts(&got), facts(&want), "seed {seed}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(used > 200, "{used}");
    }
}
