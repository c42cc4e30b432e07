//! The core's one error type: every failure of the core is an [`Error`]; `python.rs`
//! maps each variant to one Python exception class of `sessiontree.errors` (or
//! `OSError`).

use std::fmt;
use std::io;

/// Why an image has no session header (loader rule 6), judged on its first non-blank
/// line exactly as the python backend judges it (rule 4's torn-fragment recovery
/// applies). The words are Python's (`_load.header_error_from_code`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderProblem {
    /// No non-blank line.
    Empty,
    /// The line is not valid JSON.
    NotJson,
    /// Valid JSON, not an object.
    NotObject,
    /// `type` is `"session"` but `id` is absent or not a string.
    NoStringId,
    /// `type` is not `"session"`: the JSON text of its value (`None`: no `type` key).
    WrongType(Option<String>),
}

impl HeaderProblem {
    /// The stable code Python receives: `empty`, `not_json`, `not_object`, `no_id`,
    /// `type:<JSON text>`, or `type` when the key is absent.
    pub fn code(&self) -> String {
        match self {
            HeaderProblem::Empty => "empty".into(),
            HeaderProblem::NotJson => "not_json".into(),
            HeaderProblem::NotObject => "not_object".into(),
            HeaderProblem::NoStringId => "no_id".into(),
            HeaderProblem::WrongType(None) => "type".into(),
            HeaderProblem::WrongType(Some(t)) => format!("type:{t}"),
        }
    }
}

/// Everything the core can fail with.
#[derive(Debug)]
pub enum Error {
    /// An operating-system error (open, stat, map).
    Io(io::Error),
    /// Loader rule 6: the image has no valid header.
    InvalidSession {
        /// Why.
        problem: HeaderProblem,
        /// 1-based line of the first non-blank line, if any.
        line: Option<u64>,
        /// Its byte offset.
        offset: Option<u64>,
    },
    /// The file no longer holds the indexed bytes (it shrank below them): reopen it.
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
            Error::InvalidSession { problem, .. } => {
                write!(f, "no session header ({})", problem.code())
            }
            Error::Stale(why) => write!(f, "session file changed under the index: {why}"),
            Error::Closed => write!(f, "the session index is closed"),
        }
    }
}

impl std::error::Error for Error {}
