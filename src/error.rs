//! The core's one error type; `src/python.rs` maps it to Python exceptions.

use std::fmt;
use std::io;

/// Everything the core can fail with.
#[derive(Debug)]
pub enum Error {
    /// An operating-system error (open, stat, map).
    Io(io::Error),
    /// Loader rule 6: the image has no valid header.
    InvalidSession {
        /// What is wrong, in words.
        reason: String,
        /// 1-based line of the first non-blank line, if any.
        line: Option<u64>,
        /// Its byte offset.
        offset: Option<u64>,
    },
    /// The file shrank below the indexed length or was replaced: reopen it.
    Stale(String),
    /// The index was closed.
    Closed,
}

/// The core's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::InvalidSession { reason, .. } => write!(f, "{reason}"),
            Error::Stale(why) => write!(f, "session file changed under the index: {why}"),
            Error::Closed => write!(f, "the session index is closed"),
        }
    }
}

impl std::error::Error for Error {}
