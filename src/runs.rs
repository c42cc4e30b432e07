//! Per-entry numbers kept in less than a word each: line numbers as runs (a Pi file's
//! entries are on consecutive lines, so one run holds them all) and line lengths as
//! `u16`s with the longer ones aside. Both are read by entry number in O(log runs)
//! or O(1) and appended in entry order.

use crate::col::Col;

/// A non-decreasing-by-entry column stored as runs: `get(e) = v + (e - first)` for the
/// last run `(first, v)` with `first <= e`. An entry whose value is not its
/// predecessor's plus one starts a run (skipped lines, objects glued on one line).
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Runs {
    runs: Vec<(u32, u64)>,
    n: u32,
}

impl Runs {
    /// Append the value of entry `self.len()`.
    pub(crate) fn push(&mut self, v: u64) {
        let e = self.n;
        if self.n == 0 || self.get(e - 1).checked_add(1) != Some(v) {
            self.runs.push((e, v));
        }
        self.n += 1;
    }

    /// The value of entry `e` (`e < len`).
    #[inline]
    pub(crate) fn get(&self, e: u32) -> u64 {
        let i = self.runs.partition_point(|&(f, _)| f <= e);
        match i.checked_sub(1).map(|i| self.runs[i]) {
            Some((f, v)) => v + u64::from(e - f),
            None => 0,
        }
    }

    /// Every value in entry order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let n = self.n;
        self.runs.iter().enumerate().flat_map(move |(i, &(f, v))| {
            let to = self.runs.get(i + 1).map_or(n, |r| r.0);
            (0..to - f).map(move |k| v + u64::from(k))
        })
    }

    /// The runs `(first entry, its value)` (for the persisted index).
    pub(crate) fn runs(&self) -> &[(u32, u64)] {
        &self.runs
    }

    /// Runs read back: `n` entries; `None` unless the runs start at entry 0 (when
    /// `n > 0`) and their first entries ascend below `n`.
    pub(crate) fn from_runs(runs: Vec<(u32, u64)>, n: u32) -> Option<Runs> {
        let ok = (n == 0 && runs.is_empty())
            || (runs.first().is_some_and(|r| r.0 == 0)
                && runs.windows(2).all(|p| p[0].0 < p[1].0)
                && runs.last().is_some_and(|r| r.0 < n));
        ok.then_some(Runs { runs, n })
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.runs.capacity() * 16
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.runs.shrink_to_fit();
    }
}

/// Line lengths: a `u16` each, [`u16::MAX`] meaning "see `long`" (a line of 64 KiB
/// or more, kept as `(entry, length)`: a few in a hundred lines of a Pi session).
#[derive(Default)]
pub(crate) struct Lengths {
    pub(crate) short: Col<u16>,
    pub(crate) long: Vec<(u32, u64)>,
}

impl Lengths {
    pub(crate) fn push(&mut self, len: u64) {
        match u16::try_from(len) {
            Ok(l) if l != u16::MAX => self.short.push(l),
            _ => {
                self.long.push((self.short.len() as u32, len));
                self.short.push(u16::MAX);
            }
        }
    }

    #[inline]
    pub(crate) fn get(&self, e: usize) -> Option<u64> {
        match *self.short.get(e)? {
            u16::MAX => self
                .long
                .binary_search_by_key(&(e as u32), |&(x, _)| x)
                .ok()
                .map(|i| self.long[i].1),
            l => Some(u64::from(l)),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.short.heap_bytes() + self.long.capacity() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_give_back_what_was_pushed() {
        let vals = [2u64, 3, 4, 4, 4, 9, 10, 1, 2, u64::MAX, 0];
        let mut r = Runs::default();
        for &v in &vals {
            r.push(v);
        }
        assert_eq!(r.runs().len(), 7);
        for (e, &v) in vals.iter().enumerate() {
            assert_eq!(r.get(e as u32), v);
        }
        assert_eq!(r.iter().collect::<Vec<_>>(), vals);
        let back = Runs::from_runs(r.runs().to_vec(), vals.len() as u32).unwrap();
        assert_eq!(back, r);
        assert!(Runs::from_runs(vec![(1, 5)], 3).is_none());
        assert!(Runs::from_runs(vec![(0, 5), (3, 1)], 3).is_none());
        let mut l = Lengths::default();
        let vals = [5u64, 65_534, 65_535, 7, 1 << 40, 0];
        for v in vals {
            l.push(v);
        }
        let got: Vec<u64> = (0..6).map(|e| l.get(e).unwrap()).collect();
        assert_eq!(got, vals);
        assert_eq!(l.long.len(), 2);
        assert_eq!(l.get(6), None);
    }
}
