//! Walks over the parent links: cycle breaking (rule 10), paths, the tree shape.

use crate::index::{Index, NONE};

/// Break every parent cycle at its earliest entry (lowest number), which becomes a
/// root. Returns each cycle's members in file order with the link the breaker had.
/// Iterative and linear: each entry is walked once.
pub fn break_cycles(parent: &mut [u32]) -> Vec<(Vec<u32>, u32)> {
    let n = parent.len();
    // 0 = unvisited, else 1 + the entry whose walk visited it.
    let mut mark = vec![0u32; n];
    let mut cycles = Vec::new();
    for s in 0..n {
        if mark[s] != 0 {
            continue;
        }
        let walk = s as u32 + 1;
        let mut x = s as u32;
        while x != NONE && mark[x as usize] == 0 {
            mark[x as usize] = walk;
            x = parent[x as usize];
        }
        if x == NONE || mark[x as usize] != walk {
            continue;
        }
        let mut members = vec![x];
        let mut y = parent[x as usize];
        while y != x {
            members.push(y);
            y = parent[y as usize];
        }
        members.sort_unstable();
        let first = members[0];
        let link = parent[first as usize];
        parent[first as usize] = NONE;
        cycles.push((members, link));
    }
    cycles.sort_by_key(|(m, _)| m[0]);
    cycles
}

/// How `getTree` orders siblings: by `Date.parse(timestamp)`, stable. Pi's comparator
/// gives NaN for an invalid timestamp; `_pure.py` (the reference) sorts those after
/// every valid sibling, in file order. Valid times are within ±8.64e15, so `MAX` is free.
fn tree_key(ts: i64) -> i64 {
    if ts == i64::MIN {
        i64::MAX
    } else {
        ts
    }
}

impl Index {
    /// Entries from the root down to `e` (empty for an unknown number).
    pub fn path(&self, e: u32) -> Vec<u32> {
        let mut v = Vec::new();
        if e as usize >= self.len() {
            return v;
        }
        let mut x = e;
        // Cycles are broken, so the walk ends; the bound only guards the invariant.
        while x != NONE && v.len() <= self.len() {
            v.push(x);
            x = self.parent[x as usize];
        }
        v.reverse();
        v
    }

    /// The `getTree` shape: roots in file order, and for each entry its children
    /// sorted oldest first (CSR: children of `e` are `list[start[e]..start[e+1]]`).
    pub fn tree(&self) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let n = self.len();
        let roots = (0..n as u32)
            .filter(|&e| self.parent[e as usize] == NONE)
            .collect();
        let (start, mut list) = children_csr(&self.parent);
        for e in 0..n {
            let kids = &mut list[start[e] as usize..start[e + 1] as usize];
            if kids.len() > 1 {
                kids.sort_by_key(|&c| tree_key(self.ts[c as usize]));
            }
        }
        (roots, start, list)
    }
}

/// Children lists of a parent column, in file order, as CSR: the children of `e` are
/// `list[start[e]..start[e + 1]]`. Counting sort, O(n), no per-entry allocation.
pub(crate) fn children_csr(parent: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = parent.len();
    let mut start = vec![0u32; n + 1];
    for &p in parent {
        if p != NONE {
            start[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut list = vec![0u32; start[n] as usize];
    for (e, &p) in parent.iter().enumerate() {
        if p != NONE {
            list[fill[p as usize] as usize] = e as u32;
            fill[p as usize] += 1;
        }
    }
    (start, list)
}
