//! A folder's warm rows as one value (`catalog/_store`'s `usage_folder.record`): each
//! file row the warm usage scan reads (`catalog/_usage._WARM`: the name as the catalog
//! stores it, the identity and state of `file.warm`, the `usage_sum` totals), in the
//! order read. A warm report of a folder unchanged since its record was made reads one
//! value instead of a row per file: SQLite gave ~1.5 µs a row and a lookup of its
//! totals (33 ms of a report of 20,000 files, docs/BENCHMARKS.md).
//!
//! Layout: a version byte, the number of rows (varint), then per row: the name (varint
//! length, bytes), the five integers of the identity and the state (zigzag varints), the
//! totals (varint length plus one, then the bytes; 0: none kept).

use crate::report::{bytes, varint, Records};

/// The layout's version: a record of another is not read (the catalog is remade when
/// its schema changes, so none is met but in a damaged catalog).
const VERSION: u8 = 1;

/// One file row of a folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarmRow<'a> {
    /// The name as stored: a `str`'s UTF-8 or the `bytes` (`catalog/_store.db_text`).
    pub name: &'a [u8],
    /// `dev`, `ino`, `size`, `mtime_ns`, `ctime_ns` of `file.warm`.
    pub ident: crate::Ident,
    /// `file.warm`'s state: 0 not a session, 1 its usage log read to its end, 2 not.
    pub state: i64,
    /// The usage totals (`None`: none kept).
    pub totals: Option<&'a [u8]>,
}

fn zigzag(out: &mut Vec<u8>, v: i64) {
    varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn unzigzag(r: &mut Records<'_>) -> Option<i64> {
    let z = r.varint()?;
    Some(((z >> 1) as i64) ^ -((z & 1) as i64))
}

/// A record being made, row by row.
#[derive(Debug, Default)]
pub struct Record {
    body: Vec<u8>,
    rows: u64,
}

impl Record {
    /// Add `row`.
    pub fn push(&mut self, row: &WarmRow<'_>) {
        bytes(&mut self.body, row.name);
        let (dev, ino, size, mtime, ctime) = row.ident;
        for v in [dev, ino, size, mtime, ctime, row.state] {
            zigzag(&mut self.body, v);
        }
        match row.totals {
            None => varint(&mut self.body, 0),
            Some(t) => {
                varint(&mut self.body, t.len() as u64 + 1);
                self.body.extend_from_slice(t);
            }
        }
        self.rows += 1;
    }

    /// The record's value.
    pub fn into_bytes(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body.len() + 11);
        out.push(VERSION);
        varint(&mut out, self.rows);
        out.extend_from_slice(&self.body);
        out
    }
}

/// The rows of `record`, or `None` when it is not a value [`Record`] made (a damaged
/// catalog's: cut, lengthened or of another layout).
pub fn rows(record: &[u8]) -> Option<Vec<WarmRow<'_>>> {
    let (&version, rest) = record.split_first()?;
    if version != VERSION {
        return None;
    }
    let mut r = Records::new(rest);
    let count = usize::try_from(r.varint()?).ok()?;
    // Each row takes at least 8 bytes: a count past that is no record's.
    let mut out = Vec::with_capacity(count.min(r.rest.len() / 8));
    for _ in 0..count {
        let name = r.bytes()?;
        let mut ident = [0i64; 5];
        for v in &mut ident {
            *v = unzigzag(&mut r)?;
        }
        let state = unzigzag(&mut r)?;
        let totals = match usize::try_from(r.varint()?).ok()? {
            0 => None,
            n => Some(r.chunk(n - 1)?),
        };
        let [dev, ino, size, mtime, ctime] = ident;
        out.push(WarmRow {
            name,
            ident: (dev, ino, size, mtime, ctime),
            state,
            totals,
        });
    }
    r.rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<WarmRow<'static>> {
        vec![
            WarmRow {
                name: b"2025-01-01_a.jsonl",
                ident: (64768, 1234, 5_000_000, 1_700_000_000_123_456_789, -1),
                state: 1,
                totals: Some(b"\x03\x00totals"),
            },
            WarmRow {
                name: b"b\xed\xb3\xbf.jsonl",
                ident: (i64::MIN, i64::MAX, 0, 0, 0),
                state: 2,
                totals: None,
            },
            WarmRow {
                name: b"",
                ident: (0, 0, 0, 0, 0),
                state: 0,
                totals: Some(b""),
            },
        ]
    }

    fn made(rows: &[WarmRow<'_>]) -> Vec<u8> {
        let mut record = Record::default();
        for row in rows {
            record.push(row);
        }
        record.into_bytes()
    }

    #[test]
    fn rows_read_back_as_pushed() {
        assert_eq!(rows(&made(&sample())), Some(sample()));
        assert_eq!(rows(&made(&[])), Some(Vec::new()));
    }

    #[test]
    fn a_cut_lengthened_or_foreign_record_is_refused() {
        let record = made(&sample());
        for end in 0..record.len() {
            assert_eq!(rows(&record[..end]), None, "{end}");
        }
        let mut longer = record.clone();
        longer.push(0);
        assert_eq!(rows(&longer), None);
        let mut other = record.clone();
        other[0] = VERSION + 1;
        assert_eq!(rows(&other), None);
        // A count no record of its length holds is refused before anything is made.
        assert_eq!(rows(&[VERSION, 0xff, 0xff, 0xff, 0xff, 0x0f]), None);
    }
}
