//! sessiontree core: index Pi session JSONL files without building JSON values.
//!
//! Data flows one way: bytes ([`source`]) → lines and fields ([`scan`]) → columns and
//! loader rules ([`index`]) → paths and tree ([`tree`]) → context plan ([`context`]).
//! `python.rs` (feature `python`) is the only file that touches PyO3.

pub mod context;
pub mod error;
pub mod index;
pub mod scan;
pub mod source;
pub mod tree;

pub use error::{Error, Result};
pub use index::{Index, Issue, IssueKind, Plan};

#[cfg(feature = "python")]
mod python;
