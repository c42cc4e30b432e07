//! sessiontree core: index Pi session JSONL files without building JSON values.
//!
//! Data flows one way: bytes (`source`, maps read under `guard`) → lines and their fields (`lines`, over the
//! JSON scanner `scan`) → columns and loader rules ([`Index`], in `index`) → paths and
//! tree (`tree`) → context plan (`context`). `kind`, `issue`, `ids`, `time` and `error`
//! hold the shared vocabulary and import no other module. `listing` is a second reader
//! of the same lines, for a catalog: one pass per file from an offset, listing facts,
//! search text and usage (over `scan`, `ids`, `tree`, `time`). `stat` answers the
//! staleness check's early return (the rule is in Python); `clip` cuts a line's long
//! string values for previews; `escape` tests JSON output for the characters the command
//! line escapes and runs the viewers' escaping rule and `html.escape` in one pass each
//! (their statements are in Python); `figures` writes a usage report's numbers as its
//! table shows them (the rules are in Python); `markdown` renders message text as HTML for the
//! HTML export (over pulldown-cmark, importing nothing of the crate); `value`, `item` and `section`
//! render an export's entries from their lines (the view's rules, stated in Python, for
//! the entries they cover; the rest is left to Python). `python.rs` (feature
//! `python`) is the only file that touches PyO3. `use crate::` edges form a DAG
//! (docs/ARCHITECTURE.md lists them).

mod clip;
mod col;
mod context;
mod error;
mod escape;
mod figures;
mod guard;
mod ids;
mod index;
mod issue;
mod item;
mod jsnum;
mod kind;
mod lines;
mod listing;
mod markdown;
mod persist;
mod report;
pub mod rows;
mod runs;
mod scan;
pub mod search;
mod section;
mod source;
mod stat;
mod table;
mod time;
mod totals;
mod tree;
mod usage;
mod value;
mod warm_rows;

pub use clip::{clip_strings, WHOLE as CLIP_WHOLE_KEYS};
pub use context::Plan;
pub use error::{Error, Result};
pub use escape::{html_escape, json_unsafe, safe_block};
pub use figures::{write as write_figure, Figure, Style as FigureStyle};
pub use index::Index;
pub use issue::{Issue, IssueKind};
pub use kind::{EntryKind, Role, ENTRY_TYPES};
pub use lines::FINGERPRINT;
pub use listing::indexed::scan_indexed;
pub use listing::{
    entries_path, scan_file, Collect, Doc, DocKind, Header, Name, Scan, UsageKind, UsageRow,
};
pub use markdown::markdown_html;
pub use persist::Cache;
pub use report::{
    report as usage_report, Bucket, DayOffset, DayOffsets, FileLog, Key as ReportKey, Period,
    Report, Sum,
};
pub use scan::{MAX_DEPTH, MAX_INT_DIGITS, MAX_TORN_CANDIDATES, TOKEN_KEYS};
pub use search::index::{
    build as index_build, query as index_query, Answer, Indexed, Row as SearchRow, Scope, ToIndex,
    Written,
};
pub use search::rules::{PChar, Term, ASCII_FOLDS, JS_WHITESPACE, NOT_ALNUM};
pub use search::segment::{merge as merge_segments, Piece, Segment};
pub use search::{search_files, FileResult, Hit, Judged, Query};
pub use section::{html_article, markdown_section, Detail};
pub use source::{birth_ns, count_newlines};
pub use stat::{
    code_points, folder_files, unchanged as stat_unchanged, walk, FileStat, Ident, Listed,
    Listings, Seen, Walked,
};
pub use table::{plain_columns, Column as TableColumn};
pub use time::parse_iso_ms;
pub use totals::{update as usage_sums, LogFile, Warm as UsageWarm};
pub use usage::{Total, UsageTotals};
pub use warm_rows::{rows as warm_rows, Record as WarmRecord, WarmRow};

#[cfg(feature = "python")]
mod python;
