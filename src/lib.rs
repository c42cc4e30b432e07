//! sessiontree core: index Pi session JSONL files without building JSON values.
//!
//! Data flows one way: bytes ([`source`]) → lines and their fields (`lines`, over the
//! JSON scanner `scan`) → columns and loader rules ([`Index`]) → paths and tree
//! (`tree`) → context plan (`context`). `python.rs` (feature `python`) is the only
//! file that touches PyO3. Module dependencies form a DAG (docs/ARCHITECTURE.md).

mod context;
mod error;
mod ids;
mod index;
mod issue;
mod kind;
mod lines;
mod scan;
mod source;
mod time;
mod tree;

pub use context::Plan;
pub use error::{Error, Result};
pub use index::Index;
pub use issue::{Issue, IssueKind};
pub use kind::{EntryKind, Role, ENTRY_TYPES};
pub use scan::{MAX_DEPTH, MAX_INT_DIGITS, MAX_TORN_CANDIDATES};
pub use source::count_newlines;
pub use time::parse_iso_ms;

#[cfg(feature = "python")]
mod python;
