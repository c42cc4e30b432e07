//! The index's columns in Arrow's layouts (the `entries` table's indexed columns) and
//! the decoded columns of a run of entries (`rows.rs`).

use super::*;

/// The per-entry columns of the `entries` table that the index holds, in Arrow's
/// layouts (docs/TABLES.md): little-endian values, validity and boolean bitmaps LSB
/// first (1 = valid / true), strings as `i32` offsets (n + 1) and UTF-8 data.
pub struct Columns {
    /// Entry ids, as `i32` offsets and their bytes (a lone surrogate's bytes become
    /// U+FFFD, as Python's `decode("utf-8", "replace")` of its `surrogatepass` form).
    pub id_offsets: Vec<u8>,
    pub id_data: Vec<u8>,
    /// `i64`: 1-based line, byte offset and length of each entry's JSON text.
    pub line: Vec<u8>,
    pub offset: Vec<u8>,
    pub length: Vec<u8>,
    /// `i32` parent entry numbers (0 under a null) and their validity (roots null).
    pub parent: Vec<u8>,
    pub parent_valid: Vec<u8>,
    /// `i32` depth below its root (a root is 0).
    pub depth: Vec<u8>,
    /// On the path root → leaf (a bitmap).
    pub on_path: Vec<u8>,
    /// `i64` `Date.parse` of the entry's `timestamp` in ms (0 under a null), validity.
    pub timestamp: Vec<u8>,
    pub timestamp_valid: Vec<u8>,
}

/// A bitmap of `n` bits, set where `f` holds.
fn bitmap(n: usize, f: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut b = vec![0u8; n.div_ceil(8)];
    for i in (0..n).filter(|&i| f(i)) {
        b[i / 8] |= 1 << (i % 8);
    }
    b
}

impl Index {
    /// The columns of [`Columns`] for every entry, `leaf` (if any) marking the path.
    /// Fails only if the ids hold more than 2 GiB (`i32` offsets).
    pub fn columns(&self, leaf: Option<u32>) -> Result<Columns> {
        let n = self.len();
        let mut id_offsets = Vec::with_capacity(4 * (n + 1));
        let mut id_data = Vec::with_capacity(n * 8);
        id_offsets.extend_from_slice(&0i32.to_le_bytes());
        for e in 0..n as u32 {
            let id = self.ids.get(e);
            match simdutf8::basic::from_utf8(id) {
                Ok(_) => id_data.extend_from_slice(id),
                Err(_) => id_data.extend_from_slice(String::from_utf8_lossy(id).as_bytes()),
            }
            let end = i32::try_from(id_data.len())
                .map_err(|_| Error::Stale("entry ids exceed 2 GiB".to_string()))?;
            id_offsets.extend_from_slice(&end.to_le_bytes());
        }
        let le64 = |v: &mut dyn Iterator<Item = i64>| v.flat_map(i64::to_le_bytes).collect();
        let path = leaf.map_or_else(Vec::new, |e| self.path(e));
        let mut on_path = vec![0u8; n.div_ceil(8)];
        for e in path {
            on_path[e as usize / 8] |= 1 << (e % 8);
        }
        let ts = |e: usize| self.ts[e] != i64::MIN;
        Ok(Columns {
            id_offsets,
            id_data,
            line: le64(&mut self.line_no.iter().map(|l| l as i64)),
            offset: le64(&mut self.start.iter().map(|&s| s as i64)),
            length: le64(&mut (0..n).map(|e| self.lens.get(e).unwrap_or(0) as i64)),
            parent: self
                .parent
                .iter()
                .flat_map(|&p| (if p == NONE { 0 } else { p as i32 }).to_le_bytes())
                .collect(),
            parent_valid: bitmap(n, |e| self.parent[e] != NONE),
            depth: tree::depths(&self.parent)
                .into_iter()
                .flat_map(|d| (d as i32).to_le_bytes())
                .collect(),
            on_path,
            timestamp: le64(&mut (0..n).map(|e| if ts(e) { self.ts[e] } else { 0 })),
            timestamp_valid: bitmap(n, ts),
        })
    }
}

impl Index {
    /// The decoded columns of entries `a..b` (`rows::Rows`: the `entries` and
    /// `tool_calls` tables' columns that are not the index's), from their lines as read
    /// now.
    ///
    /// # Errors
    /// [`Error::Stale`]: a line changed since it was indexed; I/O errors.
    pub fn rows(&self, a: u32, b: u32) -> Result<crate::rows::Rows> {
        let es: Vec<u32> = (a..b.min(self.len() as u32)).collect();
        let mut k = 0;
        let mut bad = Ok(());
        let ranges: Vec<(u64, u64)> = es.iter().map(|&e| self.range(e)).collect();
        let bytes = ranges
            .iter()
            .map(|&(a, b)| b.saturating_sub(a))
            .sum::<u64>();
        let mut rows = crate::rows::Rows::with_capacity(es.len(), bytes as usize);
        self.src.read_each(&ranges, |line| {
            if bad.is_ok() {
                bad = es.get(k).map_or(Ok(()), |&e| self.verify(e, line));
            }
            k += 1;
            // A changed line is never decoded: the rows are discarded with the error.
            rows.push(if bad.is_ok() { line } else { b"{}" });
        })?;
        bad.map(|()| rows)
    }
}
