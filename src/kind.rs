//! What an entry is: its `type` ([`EntryKind`]) and, for a `message`, its
//! `message.role` ([`Role`]). Each is one byte per entry in the index.
//!
//! The known entry types are one table (the `entry_kinds!` invocation below): the
//! variant, its name, [`ENTRY_TYPES`] and [`EntryKind::from_name`] all come from it, so
//! adding a type is one line there (and the same name in Python's
//! `schema.ENTRY_TYPES`; `tests/test_tables.py` holds the two equal).

/// Declares [`EntryKind`] from a table of `Variant = b"name"` rows, plus the two kinds
/// that are not in the table: `Unknown` (any other `type`) and `Session` (a header).
macro_rules! entry_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// An entry's `type`.
        #[repr(u8)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum EntryKind {
            $($(#[$doc])* $variant,)*
            /// Any other `type` (or none): kept, reported `unknown_type` (rule 12).
            Unknown,
            /// `session`: a header line (rules 6 and 7).
            Session,
        }

        /// The entry types Pi defines, in table order.
        pub const ENTRY_TYPES: [&str; [$(EntryKind::$variant),*].len()] = [$(utf8($name)),*];

        impl EntryKind {
            /// The kind of a decoded `type` string (one `match`: a length switch and
            /// one compare).
            #[inline]
            pub fn from_name(name: &[u8]) -> EntryKind {
                match name {
                    $($name => EntryKind::$variant,)*
                    b"session" => EntryKind::Session,
                    _ => EntryKind::Unknown,
                }
            }

            /// The kind whose byte (`kind as u8`) is `code`, if any.
            pub fn from_code(code: u8) -> Option<EntryKind> {
                const ALL: &[EntryKind] =
                    &[$(EntryKind::$variant,)* EntryKind::Unknown, EntryKind::Session];
                ALL.get(usize::from(code)).copied()
            }

            /// The type name of a kind in [`ENTRY_TYPES`]; `None` for `Unknown` and
            /// `Session`.
            pub fn name(self) -> Option<&'static str> {
                ENTRY_TYPES.get(self as usize).copied()
            }
        }
    };
}

/// A table name as `&str` (checked at compile time).
const fn utf8(name: &'static [u8]) -> &'static str {
    match std::str::from_utf8(name) {
        Ok(s) => s,
        Err(_) => panic!("entry type names are UTF-8"),
    }
}

entry_kinds! {
    /// `message`.
    Message = b"message",
    /// `custom_message`.
    CustomMessage = b"custom_message",
    /// `compaction`.
    Compaction = b"compaction",
    /// `branch_summary`.
    BranchSummary = b"branch_summary",
    /// `model_change`.
    ModelChange = b"model_change",
    /// `thinking_level_change`.
    ThinkingLevelChange = b"thinking_level_change",
    /// `label`.
    Label = b"label",
    /// `session_info`.
    SessionInfo = b"session_info",
    /// `custom`.
    Custom = b"custom",
    /// `usage` (Pi 0.87+): usage not tied to a message.
    Usage = b"usage",
    /// `context_edit` (Pi 0.87+): an edit of what an earlier entry contributes.
    ContextEdit = b"context_edit",
    /// `active_tools_change` (agent-core's harness): the active tool names, context state.
    ActiveToolsChange = b"active_tools_change",
    /// `leaf` (agent-core's harness): a persisted leaf move; after it the leaf is its
    /// `targetId` (`null`: before the first entry). Itself a tree node.
    Leaf = b"leaf",
}

/// `message.role` of a `message` entry (`None` for every other entry, and for a
/// message whose role is absent or not a string).
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Role {
    /// Not a message, or no string role.
    #[default]
    None,
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `toolResult`.
    ToolResult,
    /// `bashExecution`.
    BashExecution,
    /// `custom`.
    Custom,
    /// `system`.
    System,
    /// Any other string.
    Other,
}

impl Role {
    /// The names of the roles after `None`, in variant order (`Other` is any other
    /// string): `Role as u8` is 1 + the index here.
    pub const NAMES: [&'static str; 6] = [
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "system",
    ];

    /// The role whose byte (`role as u8`) is `code`, if any.
    pub fn from_code(code: u8) -> Option<Role> {
        const ALL: &[Role] = &[
            Role::None,
            Role::User,
            Role::Assistant,
            Role::ToolResult,
            Role::BashExecution,
            Role::Custom,
            Role::System,
            Role::Other,
        ];
        ALL.get(usize::from(code)).copied()
    }

    /// The role of a decoded `message.role` string (`None`: not a string).
    #[inline]
    pub fn from_name(name: Option<&[u8]>) -> Role {
        match name {
            None => Role::None,
            Some(b"user") => Role::User,
            Some(b"assistant") => Role::Assistant,
            Some(b"toolResult") => Role::ToolResult,
            Some(b"bashExecution") => Role::BashExecution,
            Some(b"custom") => Role::Custom,
            Some(b"system") => Role::System,
            Some(_) => Role::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_the_table() {
        assert_eq!(ENTRY_TYPES.len(), EntryKind::Unknown as usize);
        for (i, name) in ENTRY_TYPES.iter().enumerate() {
            let k = EntryKind::from_name(name.as_bytes());
            assert_eq!(k as usize, i);
            assert_eq!(k.name(), Some(*name));
        }
        assert_eq!(EntryKind::from_name(b"session"), EntryKind::Session);
        assert_eq!(EntryKind::from_name(b"Message"), EntryKind::Unknown);
        assert_eq!(EntryKind::Session.name(), None);
        assert_eq!(EntryKind::Unknown.name(), None);
        for k in [
            EntryKind::Message,
            EntryKind::Leaf,
            EntryKind::Unknown,
            EntryKind::Session,
        ] {
            assert_eq!(EntryKind::from_code(k as u8), Some(k));
        }
        assert_eq!(EntryKind::from_code(EntryKind::Session as u8 + 1), None);
    }

    #[test]
    fn roles() {
        assert_eq!(Role::from_name(Some(b"assistant")), Role::Assistant);
        assert_eq!(Role::from_name(Some(b"system")), Role::System);
        assert_eq!(Role::from_name(Some(b"hookMessage")), Role::Other);
        assert_eq!(Role::from_name(None), Role::None);
        for (i, name) in Role::NAMES.iter().enumerate() {
            assert_eq!(Role::from_name(Some(name.as_bytes())) as usize, i + 1);
        }
        assert_eq!(Role::Other as usize, Role::NAMES.len() + 1);
        for c in 0..=Role::Other as u8 {
            assert_eq!(Role::from_code(c).map(|r| r as u8), Some(c));
        }
        assert_eq!(Role::from_code(Role::Other as u8 + 1), None);
    }
}
