//! sessiontree core: index Pi session JSONL files without building JSON values.

#[cfg(feature = "python")]
mod python;
