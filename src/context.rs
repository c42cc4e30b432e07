//! The context plan: Pi 0.99's `buildContextEntries` / `buildSessionProjection` on entry
//! kinds and roles. Given a leaf's path it says which entries are context entries
//! (honouring the latest compaction, its `firstKeptEntryId`, and leaving `system`
//! messages out of the kept range), which of them may contribute messages, which
//! `context_edit` applies to each edited one, and where thinking level and model come
//! (and, for agent-core's harness files, the active tool names) come from. One walk of the path; nothing is decoded.

use crate::kind::{EntryKind, Role};

/// The context plan of a leaf, as entry numbers (Python's `ContextPlan`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Context entries after the leading compaction that may contribute messages
    /// (message, custom_message, branch_summary), in order.
    pub messages: Vec<u32>,
    /// The latest compaction on the path (it leads the context entries).
    pub compaction: Option<u32>,
    /// The last `thinking_level_change` on the path.
    pub thinking: Option<u32>,
    /// The last `model_change` or assistant message on the path.
    pub model: Option<u32>,
    /// The last `active_tools_change` on the path (agent-core's harness).
    pub active_tools: Option<u32>,
    /// Every context entry, in order.
    pub entries: Vec<u32>,
    /// `(target, edit)`: the `context_edit` among the context entries that applies to
    /// a context entry (the last one in context order), in order of first edit.
    pub edits: Vec<(u32, u32)>,
}

/// The entry kinds that may contribute messages (besides the leading compaction).
fn contributes(k: EntryKind) -> bool {
    matches!(
        k,
        EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary
    )
}

/// The plan along `path` (root first), where `kinds[e]` and `roles[e]` describe entry
/// `e`, `first_kept_of(c)` is the entry a compaction's `firstKeptEntryId` names and
/// `target_of(x)` the entry a context edit's `targetId` names.
pub fn plan(
    path: &[u32],
    kinds: &[EntryKind],
    roles: &[Role],
    first_kept_of: impl Fn(u32) -> Option<u32>,
    target_of: impl Fn(u32) -> Option<u32>,
) -> Plan {
    let mut plan = Plan::default();
    let mut comp_at = None;
    for (i, &e) in path.iter().enumerate() {
        match kinds[e as usize] {
            EntryKind::ThinkingLevelChange => plan.thinking = Some(e),
            EntryKind::ModelChange => plan.model = Some(e),
            EntryKind::ActiveToolsChange => plan.active_tools = Some(e),
            EntryKind::Message if roles[e as usize] == Role::Assistant => plan.model = Some(e),
            EntryKind::Compaction => comp_at = Some(i),
            _ => {}
        }
    }
    match comp_at {
        None => plan.entries.extend_from_slice(path),
        Some(ci) => {
            let c = path[ci];
            plan.compaction = Some(c);
            plan.entries.push(c);
            // Kept from `firstKeptEntryId` if it is before the compaction on the path
            // (a self-retaining compaction names itself: nothing), system messages out.
            let kept = first_kept_of(c).and_then(|k| path[..ci].iter().position(|&x| x == k));
            if let Some(from) = kept {
                plan.entries
                    .extend(path[from..ci].iter().copied().filter(|&e| {
                        !(kinds[e as usize] == EntryKind::Message
                            && roles[e as usize] == Role::System)
                    }));
            }
            plan.entries.extend_from_slice(&path[ci + 1..]);
        }
    }
    let start = usize::from(plan.compaction.is_some());
    plan.messages.extend(
        plan.entries[start..]
            .iter()
            .copied()
            .filter(|&e| contributes(kinds[e as usize])),
    );
    // Edits keyed by target over the context entries (a later one wins); only targets
    // that are context entries can be edited. Paths are short next to the file, so a
    // sorted copy of the entries answers "is a context entry" without a per-file table.
    let edits: Vec<u32> = plan
        .entries
        .iter()
        .copied()
        .filter(|&x| kinds[x as usize] == EntryKind::ContextEdit)
        .collect();
    if edits.is_empty() {
        return plan;
    }
    let mut members = plan.entries.clone();
    members.sort_unstable();
    let mut slot_of = std::collections::HashMap::new();
    for x in edits {
        if let Some(t) = target_of(x).filter(|t| members.binary_search(t).is_ok()) {
            let slot = *slot_of.entry(t).or_insert(plan.edits.len());
            if slot == plan.edits.len() {
                plan.edits.push((t, x));
            } else {
                plan.edits[slot].1 = x;
            }
        }
    }
    plan
}
