//! Reads and queries of an index: its facts (length, leaf, ids, header), the lines
//! read back from the file (each checked against the hash it was indexed with), the
//! structure (children, paths, the tree, the context plan) and the load report.

use super::*;

impl Index {
    /// Number of accepted entries.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// True when no entry was accepted.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The header's `version` is absent or < 3: only the header was indexed.
    pub fn needs_migration(&self) -> bool {
        self.needs_migration
    }

    /// `(st_dev, st_ino)` of the file the index reads (`None` for an owned image): the
    /// manager compares it with what the path names after an open.
    ///
    /// # Errors
    /// `fstat` fails.
    pub fn file_id(&self) -> Result<Option<(u64, u64)>> {
        self.src.file_id()
    }

    /// Bytes of the image consumed (complete lines and an accepted last line).
    pub fn image_len(&self) -> u64 {
        self.image_len
    }

    /// An invalid last piece without `\n` waits for the rest of its line (reported
    /// `truncated`; `image_len` stops before it).
    pub fn has_pending_tail(&self) -> bool {
        self.tail_issues
            .iter()
            .any(|i| i.kind == IssueKind::Truncated)
    }

    /// The image does not end with `\n` (a pending or blank last piece, or an accepted
    /// last line without one): whoever appends writes `\n` first.
    pub(super) fn ends_mid_line(&self) -> bool {
        self.image_len < self.src.len() || self.mid_line.is_some()
    }

    /// The last accepted entry.
    pub fn last(&self) -> Option<u32> {
        self.len().checked_sub(1).map(|n| n as u32)
    }

    /// The leaf on open (rule 13): after a `leaf` entry its `targetId` (`None`: before
    /// the first entry), after any other entry that entry.
    pub fn file_leaf(&self) -> Option<u32> {
        self.leaf
    }

    /// Entry number of `id`.
    pub fn find(&self, id: &[u8]) -> Option<u32> {
        self.table.find(id, &self.ids)
    }

    /// The id of entry `e` (empty for an out-of-range number).
    pub fn id(&self, e: u32) -> &[u8] {
        self.ids.get(e)
    }

    /// Offset of the physical line holding entry `e`.
    pub(super) fn line_off(&self, e: u32) -> u64 {
        match self.line_offs.binary_search_by_key(&e, |&(x, _)| x) {
            Ok(i) => self.line_offs[i].1,
            Err(_) => self.start[e as usize],
        }
    }

    /// The header line's bytes (a copy; `pread`, never the map), checked against the
    /// hash it had when scanned.
    ///
    /// # Errors
    /// [`Error::Stale`]: the file shrank, or the line's bytes changed.
    pub fn header(&self) -> Result<Vec<u8>> {
        let Some(r) = self.header.clone() else {
            return Ok(Vec::new());
        };
        self.src.check(r.end)?;
        let bytes = self.src.read(r.start, r.end)?;
        if lines::line_hash(&bytes) != self.header_hash {
            self.distrust_persisted();
            return Err(Error::Stale(HEADER_CHANGED.into()));
        }
        Ok(bytes)
    }

    /// The bytes of oh-my-pi's title slot (a `title` object before the header), as the
    /// file holds them now (the slot is rewritten in place while oh-my-pi runs: no hash
    /// is checked); `None` without one.
    ///
    /// # Errors
    /// [`Error::Stale`]: the file shrank.
    pub fn title_slot(&self) -> Result<Option<Vec<u8>>> {
        let Some(r) = self.title.clone() else {
            return Ok(None);
        };
        self.src.check(r.end)?;
        Ok(Some(self.src.read(r.start, r.end)?))
    }

    /// The image length of the open and the first and last `lines::FINGERPRINT` bytes
    /// of that many (as `_filestate.indexed_ends` reads them from a file), as the scan
    /// read them; `None` for an image in memory, or when the scan did not keep them (a
    /// pending last piece longer than the fingerprint).
    pub fn fingerprint(&self) -> Option<(u64, &[u8])> {
        self.fingerprint.as_ref().map(|(n, f)| (*n, &f[..]))
    }

    /// The byte range of entry `e`'s line (no CR/LF); empty for an unknown number.
    pub(super) fn range(&self, e: u32) -> (u64, u64) {
        let e = e as usize;
        match (self.start.get(e), self.lens.get(e)) {
            (Some(&s), Some(l)) => (s, s + l),
            _ => (0, 0),
        }
    }

    /// Length of entry `e`'s line (0 for an unknown number).
    pub fn line_len(&self, e: u32) -> usize {
        let (s, t) = self.range(e);
        (t - s) as usize
    }

    /// Copy entry `e`'s line into `buf` (of [`Index::line_len`] bytes) with `pread`
    /// (or from memory); a file that shrank gives [`Error::Stale`], never a SIGBUS.
    pub fn read_line(&self, e: u32, buf: &mut [u8]) -> Result<()> {
        let (s, t) = self.range(e);
        if buf.len() as u64 != t - s {
            return Err(Error::Stale(format!(
                "line of entry {e} is {} bytes",
                t - s
            )));
        }
        self.src.read_into(s, buf)?;
        self.verify(e, buf)
    }

    /// Entry `e`'s bytes as read now must be the bytes indexed: a line rewritten in
    /// place since (same size, both ends of the file kept) is [`Error::Stale`].
    pub(super) fn verify(&self, e: u32, bytes: &[u8]) -> Result<()> {
        match self.hashes.get(e as usize) {
            Some(&h) if h != lines::line_hash(bytes) => {
                self.distrust_persisted();
                Err(Error::Stale(format!(
                    "the line of entry {} changed in the file since it was read",
                    String::from_utf8_lossy(self.ids.get(e))
                )))
            }
            _ => Ok(()),
        }
    }

    /// Entry `e`'s line as a copy (see [`Index::read_line`]).
    #[cfg(test)]
    pub fn line(&self, e: u32) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.line_len(e)];
        self.read_line(e, &mut v)?;
        Ok(v)
    }

    /// Call `f` with the line of each entry of `es`, in order (adjacent lines are read
    /// in one `pread`; unknown numbers give empty lines).
    pub fn for_each_line(&self, es: &[u32], mut f: impl FnMut(&[u8])) -> Result<()> {
        let ranges: Vec<(u64, u64)> = es.iter().map(|&e| self.range(e)).collect();
        let mut k = 0;
        let mut bad = Ok(());
        self.src.read_each(&ranges, |b| {
            if bad.is_ok() {
                bad = es.get(k).map_or(Ok(()), |&e| self.verify(e, b));
            }
            k += 1;
            f(b)
        })?;
        bad
    }

    /// Children of `e` in file order.
    pub fn children(&self, e: u32) -> Vec<u32> {
        if e as usize >= self.len() {
            return Vec::new();
        }
        let lists = self.child_lists();
        let mut v = if e < lists.n {
            let (a, b) = (lists.start[e as usize], lists.start[e as usize + 1]);
            lists.list[a as usize..b as usize].to_vec()
        } else {
            Vec::new()
        };
        for c in lists.n..self.len() as u32 {
            if self.parent[c as usize] == e {
                v.push(c);
            }
        }
        v
    }

    /// Entries from the root down to `e` (empty for an unknown number).
    pub fn path(&self, e: u32) -> Vec<u32> {
        tree::path(&self.parent, e)
    }

    /// The `getTree` shape (`tree::shape`): roots in file order, children oldest
    /// first as CSR.
    pub fn tree(&self) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        tree::shape(&self.parent, &self.ts)
    }

    /// The context plan at leaf `e` (`None`, or an unknown number: an empty plan).
    pub fn plan(&self, leaf: Option<u32>) -> Plan {
        match leaf.filter(|&e| (e as usize) < self.len()) {
            None => Plan::default(),
            Some(e) => context::plan(
                &self.path(e),
                &self.kinds,
                &self.roles,
                |c| self.named_by(&self.compactions, c),
                |x| self.named_by(&self.edits, x),
            ),
        }
    }

    /// The entry that the id an entry of `column` holds (a compaction's
    /// `firstKeptEntryId`, a context edit's `targetId`) names, if any.
    fn named_by(&self, column: &[(u32, Option<Vec<u8>>)], e: u32) -> Option<u32> {
        let i = column.binary_search_by_key(&e, |(x, _)| *x).ok()?;
        self.find(column[i].1.as_deref()?)
    }

    /// Entries of kind `k` numbered `from` or later, in file order (labels,
    /// session_info, ...: callers that keep what they folded ask only for new ones).
    pub fn entries_of_kind(&self, k: EntryKind, from: u32) -> Vec<u32> {
        (from.min(self.len() as u32)..self.len() as u32)
            .filter(|&e| self.kinds[e as usize] == k)
            .collect()
    }

    // ---------------------------------------------------------------- structure

    /// The parent column: `parents()[e]` is `e`'s parent after cycle breaking, [`NONE`]
    /// for a root.
    pub fn parents(&self) -> &[u32] {
        &self.parent
    }

    /// The kind column (file order).
    pub fn kinds(&self) -> &[EntryKind] {
        &self.kinds
    }

    /// The role column (file order; [`Role::None`] for entries that are not messages).
    pub fn roles(&self) -> &[Role] {
        &self.roles
    }

    /// The timestamp column: `Date.parse(timestamp)` in ms, `i64::MIN` when it does not
    /// parse (or is not a string).
    pub fn timestamps(&self) -> &[i64] {
        &self.ts
    }

    /// The parent of `e` (`None` for a root or an unknown number).
    pub fn parent_of(&self, e: u32) -> Option<u32> {
        self.parent.get(e as usize).copied().filter(|&p| p != NONE)
    }

    /// The kind of `e` (`None` for an unknown number).
    pub fn kind_of(&self, e: u32) -> Option<EntryKind> {
        self.kinds.get(e as usize).copied()
    }

    /// Entries without children, in file order.
    pub fn leaves(&self) -> Vec<u32> {
        let mut has_child = vec![false; self.len()];
        for &p in &self.parent {
            if p != NONE {
                has_child[p as usize] = true;
            }
        }
        (0..self.len() as u32)
            .filter(|&e| !has_child[e as usize])
            .collect()
    }

    /// Entries whose id starts with `prefix` (bytes of the decoded id): the first
    /// `limit` of them in file order, and how many there are in all.
    pub fn with_prefix(&self, prefix: &[u8], limit: usize) -> (Vec<u32>, usize) {
        let mut first = Vec::new();
        let mut count = 0;
        for e in 0..self.len() as u32 {
            if self.ids.get(e).starts_with(prefix) {
                if first.len() < limit {
                    first.push(e);
                }
                count += 1;
            }
        }
        (first, count)
    }

    /// The `message.role` strings the role column holds as [`Role::Other`], read from
    /// those entries' lines (rare: Pi writes seven roles): `(entry, role bytes)` in file
    /// order. A line whose role is no longer a string (rewritten) is left out.
    pub fn other_roles(&self) -> Result<Vec<(u32, Vec<u8>)>> {
        let es: Vec<u32> = (0..self.len() as u32)
            .filter(|&e| self.roles[e as usize] == Role::Other)
            .collect();
        let mut out = Vec::with_capacity(es.len());
        let mut k = 0;
        self.for_each_line(&es, |line| {
            let mut f = scan::Fields::default();
            if scan::validate(line, &mut f) == Verdict::Object {
                if let Some(r) = scan::str_bytes(line, f.role) {
                    out.push((es[k], r.into_owned()));
                }
            }
            k += 1;
        })?;
        Ok(out)
    }

    /// The entries of `es` whose line has a number with a run of `scan::LONG_DIGITS`
    /// digits not after a `.` (where orjson may not be exact), in the order of `es`:
    /// `_jsonl.decode_line` looks for such runs only in these lines.
    pub fn long_numbers(&self, es: &[u32]) -> Vec<u32> {
        if self.long_numbers.is_empty() {
            return Vec::new();
        }
        es.iter()
            .copied()
            .filter(|e| self.long_numbers.binary_search(e).is_ok())
            .collect()
    }

    /// The fields Pi's label rule reads (`_labels.apply_labels`) from the label entries
    /// numbered `from` or later, in file order: `(entry, [targetId, label, timestamp])`
    /// ([`Value`]; `None`: key absent). Only those lines are read (each checked against
    /// its hash), and only these values leave them.
    pub fn label_fields(&self, from: u32) -> Result<Vec<LabelFields>> {
        let es = self.entries_of_kind(EntryKind::Label, from);
        let mut out = Vec::with_capacity(es.len());
        let mut k = 0;
        let mut changed = false;
        self.for_each_line(&es, |line| {
            let mut f = scan::Fields::default();
            if scan::validate(line, &mut f) == Verdict::Object {
                let v = |v| Value::of(line, v);
                out.push((es[k], [v(f.target_id), v(f.label), v(f.timestamp)]));
            } else {
                changed = true;
            }
            k += 1;
        })?;
        if changed {
            // Unreachable unless the hash missed a rewrite: a line no longer an object.
            return Err(Error::Stale(
                "a label line changed in the file since it was read".into(),
            ));
        }
        Ok(out)
    }

    /// Token and cost totals of every assistant message on every branch
    /// ([`usage::UsageTotals`]), summed as the entries were indexed: nothing is read.
    /// `None` when a line holds a number that cannot be summed exactly here (the
    /// caller sums in Python).
    pub fn usage_totals(&self) -> Option<&UsageTotals> {
        self.usage.exact.then_some(&self.usage)
    }

    /// Heap bytes each part of the index holds (capacities; the benchmarks' breakdown
    /// of memory per entry).
    pub fn memory(&self) -> Vec<(&'static str, usize)> {
        fn cap<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let issues: usize = [&self.issues, &self.post_issues, &self.tail_issues]
            .iter()
            .map(|v| cap(v) + v.iter().map(Issue::heap_bytes).sum::<usize>())
            .sum();
        let sparse = cap(&self.line_offs)
            + cap(&self.unresolved)
            + self
                .unresolved
                .iter()
                .map(|(_, p)| p.capacity())
                .sum::<usize>()
            + cap(&self.broken)
            + cap(&self.compactions)
            + cap(&self.edits)
            + [&self.compactions, &self.edits]
                .iter()
                .flat_map(|c| c.iter())
                .map(|(_, k)| k.as_ref().map_or(0, Vec::capacity))
                .sum::<usize>()
            + cap(&self.long_numbers);
        vec![
            ("start", cap(&self.start)),
            ("length", self.lens.heap_bytes()),
            ("line", self.line_no.heap_bytes()),
            ("kind", cap(&self.kinds)),
            ("role", cap(&self.roles)),
            ("timestamp", cap(&self.ts)),
            ("parent", cap(&self.parent)),
            ("hash", self.hashes.heap_bytes()),
            ("ids", self.ids.heap_bytes()),
            ("id_table", self.table.heap_bytes()),
            (
                "children",
                self.children
                    .get()
                    .map_or(0, |c| cap(&c.start) + cap(&c.list)),
            ),
            ("issues", issues),
            ("sparse", sparse),
        ]
    }

    /// `load_report`: by line, then rule order.
    pub fn issues(&self) -> Vec<Issue> {
        let mut v: Vec<Issue> = self
            .issues
            .iter()
            .chain(&self.post_issues)
            .chain(&self.tail_issues)
            .cloned()
            .collect();
        issue::sort(&mut v);
        v
    }
}
