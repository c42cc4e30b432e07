//! Load-report items: the reasons ([`IssueKind`], the strings of Python's `IssueKind`),
//! one item ([`Issue`]) and the report's order ([`sort`]: by line, then rule).

/// Reasons of `load_report` items.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IssueKind {
    /// Rule 1.
    Bom,
    /// Rule 3.
    InvalidUtf8,
    /// Rule 4: bytes that are no object on a line whose objects were read.
    TornFragment,
    /// Rule 4.
    InvalidJson,
    /// Rule 4, the tail.
    Truncated,
    /// Rule 5.
    NotAnObject,
    /// Rule 7.
    ExtraHeader,
    /// Rule 8.
    MissingId,
    /// Rule 8.
    DuplicateId,
    /// Rule 9.
    InvalidParent,
    /// Rule 9.
    MissingParent,
    /// Rule 10.
    Cycle,
    /// Rule 11.
    FirstKeptOffPath,
    /// Rule 12.
    UnknownType,
    /// Rule 13: a `leaf` entry whose `targetId` is neither `null` nor an earlier entry.
    InvalidLeafTarget,
}

impl IssueKind {
    /// Every kind, in declaration order.
    pub const ALL: [IssueKind; 15] = [
        IssueKind::Bom,
        IssueKind::InvalidUtf8,
        IssueKind::TornFragment,
        IssueKind::InvalidJson,
        IssueKind::Truncated,
        IssueKind::NotAnObject,
        IssueKind::ExtraHeader,
        IssueKind::MissingId,
        IssueKind::DuplicateId,
        IssueKind::InvalidParent,
        IssueKind::MissingParent,
        IssueKind::Cycle,
        IssueKind::FirstKeptOffPath,
        IssueKind::UnknownType,
        IssueKind::InvalidLeafTarget,
    ];

    /// The stable string Python's `IssueKind` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::Bom => "bom",
            IssueKind::InvalidUtf8 => "invalid_utf8",
            IssueKind::TornFragment => "torn_fragment",
            IssueKind::InvalidJson => "invalid_json",
            IssueKind::Truncated => "truncated",
            IssueKind::NotAnObject => "not_an_object",
            IssueKind::ExtraHeader => "extra_header",
            IssueKind::MissingId => "missing_id",
            IssueKind::DuplicateId => "duplicate_id",
            IssueKind::InvalidParent => "invalid_parent",
            IssueKind::MissingParent => "missing_parent",
            IssueKind::Cycle => "cycle",
            IssueKind::FirstKeptOffPath => "first_kept_off_path",
            IssueKind::UnknownType => "unknown_type",
            IssueKind::InvalidLeafTarget => "invalid_leaf_target",
        }
    }

    /// The loader rule that reports it: the order of issues on one line.
    pub fn rule(self) -> u8 {
        match self {
            IssueKind::Bom => 1,
            IssueKind::InvalidUtf8 => 3,
            IssueKind::TornFragment | IssueKind::InvalidJson | IssueKind::Truncated => 4,
            IssueKind::NotAnObject => 5,
            IssueKind::ExtraHeader => 7,
            IssueKind::MissingId | IssueKind::DuplicateId => 8,
            IssueKind::InvalidParent | IssueKind::MissingParent => 9,
            IssueKind::Cycle => 10,
            IssueKind::FirstKeptOffPath => 11,
            IssueKind::UnknownType => 12,
            IssueKind::InvalidLeafTarget => 13,
        }
    }
}

/// One `load_report` item: the facts only. Its words are Python's
/// (`_backend.describe_issue`), the same for both backends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// The reason.
    pub kind: IssueKind,
    /// 1-based physical line.
    pub line: Option<u64>,
    /// Byte offset of that line's first byte (a `torn_fragment` that does not start
    /// the line: of its own first byte).
    pub offset: Option<u64>,
    /// Entry ids involved (decoded bytes; lone surrogates in generalized UTF-8).
    pub ids: Vec<Vec<u8>>,
    /// A count: `duplicate_id` the line of the first definition, `torn_fragment` its
    /// bytes, `truncated` the length of the piece, `cycle`
    /// the number of entries.
    pub n: Option<u64>,
    /// `unknown_type`: the `type` when it is a string (decoded, like `ids`).
    pub text: Option<Vec<u8>>,
}

impl Issue {
    /// Heap bytes the item holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.ids.capacity() * 24
            + self.ids.iter().map(Vec::capacity).sum::<usize>()
            + self.text.as_ref().map_or(0, Vec::capacity)
    }

    /// An item about the line `line` at `offset`, with no ids, count or text.
    pub(crate) fn at(kind: IssueKind, line: u64, offset: u64) -> Issue {
        Issue {
            kind,
            line: Some(line),
            offset: Some(offset),
            ids: Vec::new(),
            n: None,
            text: None,
        }
    }

    /// With these entry ids.
    pub(crate) fn ids(mut self, ids: Vec<Vec<u8>>) -> Issue {
        self.ids = ids;
        self
    }

    /// With this count.
    pub(crate) fn n(mut self, n: u64) -> Issue {
        self.n = Some(n);
        self
    }

    /// With this text.
    pub(crate) fn text(mut self, text: Option<Vec<u8>>) -> Issue {
        self.text = text;
        self
    }
}

/// Put `issues` in report order: by line (items without one last), then rule order,
/// a line's `missing_parent` items after its other rule-9 ones (as a fresh open finds
/// them: when its last entry was read, also if its line was continued since); stable,
/// so items of one rule on one line keep the order they were found in
/// (`_backend.issue_order`).
pub fn sort(issues: &mut [Issue]) {
    issues.sort_by_key(|i| {
        (
            i.line.is_none(),
            i.line,
            i.kind.rule(),
            i.kind == IssueKind::MissingParent,
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_kind_once_in_order() {
        for (i, k) in IssueKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        assert_eq!(
            IssueKind::ALL.len(),
            IssueKind::InvalidLeafTarget as usize + 1
        );
    }
}
