//! The context plan: Pi's `buildSessionContext` on entry kinds and roles. Given a
//! leaf's path it says which entries become messages (honouring the latest compaction
//! and its `firstKeptEntryId`) and where thinking level and model come from. One walk
//! of the path; nothing is decoded.

use crate::kind::{EntryKind, Role};

/// The context plan of a leaf, as entry numbers (Python's `ContextPlan`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Entries to turn into messages, in output order.
    pub messages: Vec<u32>,
    /// The latest compaction on the path.
    pub compaction: Option<u32>,
    /// The last `thinking_level_change` on the path.
    pub thinking: Option<u32>,
    /// The last `model_change` or assistant message on the path.
    pub model: Option<u32>,
}

/// The entry kinds that become messages.
fn is_message(k: EntryKind) -> bool {
    matches!(
        k,
        EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary
    )
}

/// The plan along `path` (root first), where `kinds[e]` and `roles[e]` describe entry
/// `e` and `first_kept_of(c)` is the entry a compaction's `firstKeptEntryId` names.
pub fn plan(
    path: &[u32],
    kinds: &[EntryKind],
    roles: &[Role],
    first_kept_of: impl Fn(u32) -> Option<u32>,
) -> Plan {
    let mut plan = Plan::default();
    let mut comp_at = None;
    for (i, &e) in path.iter().enumerate() {
        match kinds[e as usize] {
            EntryKind::ThinkingLevelChange => plan.thinking = Some(e),
            EntryKind::ModelChange => plan.model = Some(e),
            EntryKind::Message if roles[e as usize] == Role::Assistant => plan.model = Some(e),
            EntryKind::Compaction => comp_at = Some(i),
            _ => {}
        }
    }
    let take = |range: &[u32], out: &mut Vec<u32>| {
        out.extend(
            range
                .iter()
                .copied()
                .filter(|&e| is_message(kinds[e as usize])),
        );
    };
    match comp_at {
        None => take(path, &mut plan.messages),
        Some(ci) => {
            let c = path[ci];
            plan.compaction = Some(c);
            // Kept from `firstKeptEntryId` if it is before the compaction on the path.
            let kept = first_kept_of(c).and_then(|k| path[..ci].iter().position(|&x| x == k));
            if let Some(from) = kept {
                take(&path[from..ci], &mut plan.messages);
            }
            take(&path[ci + 1..], &mut plan.messages);
        }
    }
    plan
}
