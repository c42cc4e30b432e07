//! Walks over a parent column (`parent[e]` is `e`'s parent entry, [`NONE`] for a root):
//! cycle breaking (rule 10), paths, children lists, preorder intervals and the
//! `getTree` shape. Every walk is iterative and bounded, so no input depth or cycle
//! can overflow the stack or loop forever.

/// "No entry" in parent and entry-number columns.
pub const NONE: u32 = u32::MAX;

/// Break every parent cycle at its earliest entry (lowest number), which becomes a
/// root. Returns each cycle's members in file order with the link the breaker had.
/// Linear: each entry is walked once.
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

/// Entries from the root down to `e` (empty for an unknown number). The parent
/// column must be acyclic; the walk is bounded by its length all the same.
pub fn path(parent: &[u32], e: u32) -> Vec<u32> {
    let mut v = Vec::new();
    if e as usize >= parent.len() {
        return v;
    }
    let mut x = e;
    while x != NONE && v.len() <= parent.len() {
        v.push(x);
        x = parent[x as usize];
    }
    v.reverse();
    v
}

/// Is `a` an ancestor of `e` (not `e` itself)? `ordered`: every parent precedes its
/// children (no forward links), so the walk stops once it passes below `a`.
pub fn is_strict_ancestor(parent: &[u32], a: u32, e: u32, ordered: bool) -> bool {
    let mut x = parent[e as usize];
    let mut steps = 0usize;
    while x != NONE && steps <= parent.len() {
        #[cfg(test)]
        WALK_STEPS.with(|n| n.set(n.get() + 1));
        if x == a {
            return true;
        }
        if ordered && x < a {
            return false;
        }
        x = parent[x as usize];
        steps += 1;
    }
    false
}

#[cfg(test)]
thread_local! {
    /// Ancestor steps walked by [`is_strict_ancestor`] on this thread (tests count work
    /// instead of timing it).
    pub(crate) static WALK_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Children lists of a parent column, in file order, as CSR: the children of `e` are
/// `list[start[e]..start[e + 1]]`. Counting sort, O(n), no per-entry allocation.
pub fn children_csr(parent: &[u32]) -> (Vec<u32>, Vec<u32>) {
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

/// Preorder intervals of an acyclic forest given as `parent` and its children CSR
/// (`start`, `list`, from [`children_csr`]): entry `e`'s subtree is the preorder
/// numbers `tin[e]..tout[e]`, so `a` is an ancestor of `e` or `e` itself iff
/// `tin[a] <= tin[e] < tout[a]`. One iterative DFS, O(n) whatever the depth.
pub fn intervals(parent: &[u32], start: &[u32], list: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = parent.len();
    let (mut tin, mut tout) = (vec![0u32; n], vec![0u32; n]);
    let mut clock = 0u32;
    // (entry, position of its next child in `list`)
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for r in 0..n {
        if parent[r] != NONE {
            continue;
        }
        tin[r] = clock;
        clock += 1;
        stack.push((r as u32, start[r]));
        while let Some(top) = stack.last_mut() {
            let (v, next) = *top;
            if next < start[v as usize + 1] {
                top.1 += 1;
                let c = list[next as usize];
                tin[c as usize] = clock;
                clock += 1;
                stack.push((c, start[c as usize]));
            } else {
                tout[v as usize] = clock;
                stack.pop();
            }
        }
    }
    (tin, tout)
}

/// How `getTree` orders siblings: by `Date.parse(timestamp)`, stable. Pi's comparator
/// gives NaN for an invalid timestamp (`i64::MIN` here); `_pure.py` (the reference)
/// sorts those after every valid sibling, in file order. Valid times are within
/// ±8.64e15, so `MAX` is free.
fn tree_key(ts: i64) -> i64 {
    if ts == i64::MIN {
        i64::MAX
    } else {
        ts
    }
}

/// The `getTree` shape of an acyclic forest with timestamps `ts` (ms, `i64::MIN` for
/// none): roots in file order, and for each entry its children sorted oldest first
/// (CSR: the children of `e` are `list[start[e]..start[e + 1]]`).
pub fn shape(parent: &[u32], ts: &[i64]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let n = parent.len();
    let roots = (0..n as u32)
        .filter(|&e| parent[e as usize] == NONE)
        .collect();
    let (start, mut list) = children_csr(parent);
    for e in 0..n {
        let kids = &mut list[start[e] as usize..start[e + 1] as usize];
        if kids.len() > 1 {
            kids.sort_by_key(|&c| tree_key(ts[c as usize]));
        }
    }
    (roots, start, list)
}

/// Depth of every entry of an acyclic forest (a root is 0). Each entry is resolved
/// once: a walk up to the first entry whose depth is known, then numbered back down,
/// so the whole column is O(n) whatever the order of parents and children.
pub fn depths(parent: &[u32]) -> Vec<u32> {
    let n = parent.len();
    let mut depth = vec![NONE; n];
    let mut walk = Vec::new();
    for s in 0..n as u32 {
        let mut x = s;
        while x != NONE && depth[x as usize] == NONE && walk.len() <= n {
            walk.push(x);
            x = parent[x as usize];
        }
        let mut d = if x == NONE {
            0
        } else {
            depth[x as usize].saturating_add(1)
        };
        while let Some(y) = walk.pop() {
            depth[y as usize] = d;
            d = d.saturating_add(1);
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_break_at_their_earliest_entry() {
        // 0 -> 2 -> 1 -> 0 is a cycle; 3 hangs off it; 4 is a self-loop.
        let mut parent = vec![2, 0, 1, 1, 4];
        let cycles = break_cycles(&mut parent);
        assert_eq!(cycles, vec![(vec![0, 1, 2], 2), (vec![4], 4)]);
        assert_eq!(parent, vec![NONE, 0, 1, 1, NONE]);
        assert_eq!(path(&parent, 3), vec![0, 1, 3]);
        assert!(path(&parent, 9).is_empty());
    }

    #[test]
    fn ancestors_intervals_and_shape_agree() {
        // Roots 0 and 4; 0 -> {1, 2}, 1 -> {3}, 4 -> {6}, and 6 -> {5}: a forward
        // link (the parent comes later in the file).
        let parent = vec![NONE, 0, 0, 1, NONE, 6, 4];
        let (start, list) = children_csr(&parent);
        assert_eq!(start, vec![0, 2, 3, 3, 3, 4, 4, 5]);
        assert_eq!(list, vec![1, 2, 3, 6, 5]);
        let (tin, tout) = intervals(&parent, &start, &list);
        for a in 0..parent.len() as u32 {
            for e in 0..parent.len() as u32 {
                let walk = is_strict_ancestor(&parent, a, e, false);
                let (ai, ei) = (a as usize, e as usize);
                let span = a != e && tin[ai] <= tin[ei] && tin[ei] < tout[ai];
                assert_eq!(walk, span, "{a} {e}");
            }
        }
        let ts = vec![0, 5, 1, 0, 0, 0, i64::MIN];
        let (roots, start, list) = shape(&parent, &ts);
        assert_eq!(roots, vec![0, 4]);
        assert_eq!(&list[start[0] as usize..start[1] as usize], &[2, 1]);
    }

    #[test]
    fn depths_follow_forward_and_backward_links() {
        // 0 <- 1 <- 2, root 3, 4 -> 6 (forward) -> 5 -> 3.
        let parent = vec![NONE, 0, 1, NONE, 6, 3, 5];
        assert_eq!(depths(&parent), vec![0, 1, 2, 0, 3, 1, 2]);
        let chain: Vec<u32> = (0..100_000u32)
            .map(|i| if i == 0 { NONE } else { i - 1 })
            .collect();
        assert_eq!(depths(&chain)[99_999], 99_999);
    }
}
