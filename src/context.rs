//! The context plan (Pi's `buildSessionContext` on integer columns): which path
//! entries become messages, honouring the latest compaction and its
//! `firstKeptEntryId`, and where thinking level and model come from. Cost: one walk
//! of the path; nothing is decoded.

use crate::index::{kind, Index, Plan};

fn is_message(k: u8) -> bool {
    matches!(
        k,
        kind::MESSAGE | kind::CUSTOM_MESSAGE | kind::BRANCH_SUMMARY
    )
}

impl Index {
    /// The plan at leaf `e` (`None`: before the first entry, an empty plan).
    pub fn plan(&self, leaf: Option<u32>) -> Plan {
        let Some(leaf) = leaf.filter(|&e| (e as usize) < self.len()) else {
            return Plan::default();
        };
        let path = self.path(leaf);
        let mut plan = Plan::default();
        let mut comp_at = None;
        for (i, &e) in path.iter().enumerate() {
            let raw = self.kinds[e as usize];
            match raw & 0x7f {
                kind::THINKING_LEVEL_CHANGE => plan.thinking = Some(e),
                kind::MODEL_CHANGE => plan.model = Some(e),
                kind::MESSAGE if raw & kind::ASSISTANT != 0 => plan.model = Some(e),
                kind::COMPACTION => comp_at = Some(i),
                _ => {}
            }
        }
        let take = |range: &[u32], out: &mut Vec<u32>| {
            out.extend(range.iter().copied().filter(|&e| is_message(self.kind(e))));
        };
        match comp_at {
            None => take(&path, &mut plan.messages),
            Some(ci) => {
                let c = path[ci];
                plan.compaction = Some(c);
                let kept = self
                    .compactions
                    .binary_search_by_key(&c, |(e, _)| *e)
                    .ok()
                    .and_then(|i| self.compactions[i].1.as_deref())
                    .and_then(|k| self.find(k))
                    .and_then(|k| path[..ci].iter().position(|&x| x == k));
                if let Some(from) = kept {
                    take(&path[from..ci], &mut plan.messages);
                }
                take(&path[ci + 1..], &mut plan.messages);
            }
        }
        plan
    }
}
