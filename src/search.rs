//! A search over many session files read as they are, with no index: every thread takes
//! the next file, finds the lines whose bytes may hold a match (`needle`: a byte
//! prefilter that never misses one), judges each picked line alone as it meets it, and
//! only when one of them may hit reads the file again by the catalog's rules
//! (`listing`: lines judged as the loader does, the first definition of an id, the
//! entries' text, the tree), judging each picked entry's text by the search rules
//! (`rules`). What only Python's tables can judge goes back as text.
//!
//! The rules are docs/CONTRACT.md §7's; the Python home is `catalog/_search.py`, and
//! `tests/test_search_rules.py` holds the two equal.

pub mod hits_json;
pub mod index;
pub mod needle;
pub mod rules;
pub mod segment;
pub mod tokens;

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::Result;
use crate::listing::{self, Collect, DocKind, DocRef, DocSink, Header, HeaderKind, Name};
use crate::source::open_regular;

use needle::Needle;
use rules::{judge_text, Outcome, Term};

/// A parsed query as the native pass reads it.
pub struct Query {
    /// The terms (all must match); empty for a regular expression.
    pub terms: Vec<Term>,
    /// A regular expression: every picked entry's text goes back to Python.
    pub regex: bool,
    /// For a regular expression, runs of lowercase ASCII letters and digits every
    /// match holds (`catalog/_literals.py`): the prefilter looks for one of them, and
    /// an entry's text goes back only if it holds them all (none: every entry's).
    pub literals: Vec<Vec<u8>>,
}

impl Query {
    /// The terms the prefilter looks for: the query's, or a regular expression's runs
    /// as words.
    fn needle_terms(&self) -> std::borrow::Cow<'_, [Term]> {
        if !self.regex {
            return std::borrow::Cow::Borrowed(&self.terms);
        }
        self.literals
            .iter()
            .map(|run| Term {
                words: vec![run
                    .iter()
                    .map(|&b| rules::PChar::new(u32::from(b), false))
                    .collect()],
            })
            .collect()
    }

    /// Whether an entry's text (generalized UTF-8) may match the regular expression:
    /// it holds every run, ignoring ASCII case, or a character `regex` holds equal to an
    /// ASCII letter (`İ`, `ı`, `ſ`, the Kelvin sign: [`rules::ASCII_FOLDS`]), where a
    /// run may be spelled otherwise.
    fn may_match(&self, text: &[u8]) -> bool {
        let folded = || {
            rules::ASCII_FOLDS.iter().any(|&(c, _)| {
                let mut buf = [0u8; 4];
                let c = char::from_u32(c).map_or(&[][..], |c| c.encode_utf8(&mut buf).as_bytes());
                memchr::memmem::find(text, c).is_some()
            })
        };
        self.literals.iter().all(|run| holds_ascii_ci(text, run)) || folded()
    }
}

/// Whether `text` holds `run` (lowercase ASCII), ignoring ASCII case.
fn holds_ascii_ci(text: &[u8], run: &[u8]) -> bool {
    let Some(&first) = run.first() else {
        return true;
    };
    let mut at = 0;
    while let Some(p) = memchr::memchr2(first, first.to_ascii_uppercase(), &text[at..]) {
        let i = at + p;
        if text.len() - i >= run.len() && text[i..i + run.len()].eq_ignore_ascii_case(run) {
            return true;
        }
        at = i + 1;
    }
    false
}

/// How a hit was judged.
#[derive(Debug)]
pub enum Judged {
    /// Decided here: the score and anchor (characters); the snippet is read for the
    /// hits shown (`index::snippets`).
    Hit { score: u64, anchor: u64 },
    /// Python decides: the entry's text (generalized UTF-8).
    Undecided(Vec<u8>),
}

/// An entry that matches (or may: [`Judged::Undecided`]).
#[derive(Debug)]
pub struct Hit {
    /// Entry number in the file.
    pub seq: u32,
    /// Offset of the entry's line and its length (without `\n`).
    pub offset: u64,
    pub len: u64,
    /// The entry's id.
    pub id: Vec<u8>,
    /// Which text it is.
    pub kind: DocKind,
    /// The entry's time (epoch ms).
    pub time: Option<f64>,
    /// On the session's current path (root to the last entry).
    pub on_path: bool,
    /// The verdict.
    pub judged: Judged,
}

/// What one file gave.
#[derive(Debug)]
pub enum FileResult {
    /// A session (version 2 or later) read here; `header` and `name` only when it has
    /// hits.
    Session {
        header: Option<Vec<u8>>,
        name: Name,
        hits: Vec<Hit>,
        /// Bytes read.
        read: u64,
    },
    /// Not a session (no header first).
    NotSession { read: u64 },
    /// To be read with the Python rules (a version 1 file, or a text whose
    /// `String()` is not computed here).
    Python { read: u64 },
    /// The file could not be read.
    Error(String),
}

/// Bytes asked of the file per read by the prefilter.
const BLOCK: usize = 1 << 20;

/// The decided hits of a search over files: how many, and the best `k` of them (file
/// index in `paths`, hit), best first; and every hit Python must judge.
#[derive(Debug, Default)]
pub struct Ranked {
    pub total: u64,
    pub top: Vec<(usize, Hit)>,
    pub undecided: Vec<(usize, Hit)>,
}

/// The ranking key of a decided hit of file `rank` (relevance, or newest first with
/// `recent`; then newest, path (the order of `paths`), entry).
fn key(h: &Hit, rank: usize, recent: bool) -> (u64, bool, i64, usize, u32) {
    let score = match h.judged {
        Judged::Hit { score, .. } if !recent => score,
        _ => 0,
    };
    let (no_time, neg) = match h.time {
        Some(t) => (false, index::order_key(-t)),
        None => (true, 0),
    };
    (score, no_time, neg, rank, h.seq)
}

/// [`search_files`], then the hits taken out of the results and ranked: the best `k`
/// (`None`: all) of the decided ones, and the undecided ones.
pub fn search_ranked(
    paths: &[PathBuf],
    q: &Query,
    threads: usize,
    k: Option<usize>,
    recent: bool,
) -> (Vec<FileResult>, Ranked) {
    let mut results = search_files(paths, q, threads);
    let mut r = Ranked::default();
    let mut decided = Vec::new();
    for (i, res) in results.iter_mut().enumerate() {
        if let FileResult::Session { hits, .. } = res {
            for h in std::mem::take(hits) {
                match h.judged {
                    Judged::Hit { .. } => decided.push((i, h)),
                    Judged::Undecided(_) => r.undecided.push((i, h)),
                }
            }
        }
    }
    r.total = decided.len() as u64;
    let k = k.unwrap_or(decided.len()).min(decided.len());
    if k < decided.len() {
        decided.select_nth_unstable_by_key(k, |(i, h)| key(h, *i, recent));
        decided.truncate(k);
    }
    decided.sort_unstable_by_key(|(i, h)| key(h, *i, recent));
    r.top = decided;
    (results, r)
}

/// Search `paths` with `threads` threads; one result per path, in order.
pub fn search_files(paths: &[PathBuf], q: &Query, threads: usize) -> Vec<FileResult> {
    let needle = Needle::of(&q.needle_terms());
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, FileResult)>> = Vec::new();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.max(1).min(paths.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    let (mut buf, mut buf2) = (Vec::new(), Vec::new());
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = paths.get(i) else { break };
                        let r = match one(path, q, needle.as_ref(), &mut buf, &mut buf2) {
                            Ok(r) => r,
                            Err(e) => FileResult::Error(e.to_string()),
                        };
                        if buf.len() > 4 * BLOCK {
                            buf = Vec::new();
                        }
                        if buf2.len() > 4 * BLOCK {
                            buf2 = Vec::new();
                        }
                        out.push((i, r));
                    }
                    out
                })
            })
            .collect();
        for w in workers {
            parts.push(w.join().unwrap_or_default());
        }
    });
    let mut all: Vec<(usize, FileResult)> = parts.into_iter().flatten().collect();
    all.sort_by_key(|x| x.0);
    all.into_iter().map(|x| x.1).collect()
}

/// The lines a file's prefilter picked: their offsets, ascending, or every line.
enum Picked {
    All,
    Lines(Vec<u64>),
}

/// Files up to this size are read once, whole: the prefilter and the full read (when
/// the file has candidate lines) both work on that copy.
const WHOLE: u64 = 64 << 20;

fn one(
    path: &std::path::Path,
    q: &Query,
    needle: Option<&Needle>,
    buf: &mut Vec<u8>,
    buf2: &mut Vec<u8>,
) -> Result<FileResult> {
    let file = open_regular(path)?;
    let size = file.metadata()?.len();
    let mut read = 0u64;
    // A file read whole into `buf` (then `buf[..whole]` is all of it).
    let mut whole: Option<usize> = None;
    let picked = match needle {
        None => Picked::All,
        Some(n) => {
            let pre = prefilter(&file, n, q, buf, size <= WHOLE)?;
            read += pre.read;
            whole = pre.whole;
            match pre.kind {
                Some(HeaderKind::Missing) => return Ok(FileResult::NotSession { read }),
                Some(HeaderKind::Old) => return Ok(FileResult::Python { read }),
                Some(HeaderKind::Session) if pre.lines.is_empty() || !pre.may_hit => {
                    return Ok(FileResult::Session {
                        header: None,
                        name: Name::Unset,
                        hits: Vec::new(),
                        read,
                    })
                }
                _ => Picked::Lines(pre.lines),
            }
        }
    };
    let mut sink = Judge::new(q, picked);
    let scan = match whole {
        Some(n) => listing::scan_slice(&buf[..n], Collect::default(), Some(&mut sink)),
        None => {
            let s = listing::scan_into(
                &file,
                0,
                &[],
                Collect::default(),
                u64::MAX,
                buf2,
                Some(&mut sink),
            )?;
            read += s.bytes_read;
            s
        }
    };
    if scan.fallback.is_some() || scan.old_version {
        return Ok(FileResult::Python { read });
    }
    let header = match scan.header {
        Header::Found(h) => h,
        _ => return Ok(FileResult::NotSession { read }),
    };
    let mut hits = sink.hits;
    if hits.is_empty() {
        return Ok(FileResult::Session {
            header: None,
            name: Name::Unset,
            hits,
            read,
        });
    }
    let path_seqs = listing::entries_path(&scan.entries);
    let mut on = vec![false; scan.entry_count as usize];
    for s in path_seqs {
        if let Some(x) = on.get_mut(s as usize) {
            *x = true;
        }
    }
    for h in &mut hits {
        h.on_path = on.get(h.seq as usize).copied().unwrap_or(false);
    }
    Ok(FileResult::Session {
        header: Some(header),
        name: scan.name,
        hits,
        read,
    })
}

/// What the prefilter saw of a file.
struct Pre {
    /// What its header says (`None`: not decided by its first block, the full read
    /// will tell).
    kind: Option<HeaderKind>,
    /// The offsets of the lines the needle picked, ascending.
    lines: Vec<u64>,
    /// Bytes read.
    read: u64,
    /// The length of the whole file kept in `buf` for the full read, if it is.
    whole: Option<usize>,
    /// Whether the full read may find a hit, or hand the file to the Python rules
    /// ([`Probe`]); when not, the file is answered without it.
    may_hit: bool,
}

/// What a picked line may give, judged by that line alone before the whole file is
/// read (the validation of every line and the entries' tree: most of a `re:` search's
/// CPU when few of its candidates are hits, a `\u` escape making a line one).
struct Probe<'q> {
    /// The picked lines' entries, judged as if each were accepted (an entry a scan
    /// rejects, a duplicate id, gives no hit there).
    judge: Judge<'q>,
    /// Whether the scan with no line wanted stops at the first user message's text.
    first: listing::FirstMessage,
    /// A picked line may hit, or was not read alone (a BOM, glued objects, the file's
    /// last piece: only the full read reads those), or its text is not computed here.
    may_hit: bool,
}

impl<'q> Probe<'q> {
    fn new(q: &'q Query) -> Probe<'q> {
        Probe {
            judge: Judge::new(q, Picked::All),
            first: listing::FirstMessage::new(),
            may_hit: false,
        }
    }

    /// Judge the lines of `region` (the file's next bytes, from offset `at`, up to a
    /// line end unless the file ends there: `eof`) at the picked offsets `found`.
    fn lines(&mut self, region: &[u8], at: u64, found: &[u64], eof: bool) {
        if self.may_hit {
            return;
        }
        for &off in found {
            let rest = &region[(off - at) as usize..];
            let Some(len) = memchr::memchr(b'\n', rest) else {
                self.may_hit = true;
                return;
            };
            if !listing::probe_line(&rest[..len], off, &mut self.judge)
                || !self.judge.hits.is_empty()
            {
                self.may_hit = true;
                return;
            }
        }
        // A scan that computes no text but the first user message's may still stop at
        // it (then the Python rules read the file, and judge every entry).
        if self.first.feed(region, at, eof).unwrap_or(eof) {
            self.may_hit = true;
        }
    }
}

/// The prefilter over a whole file ([`Pre`]), each picked line judged alone as it is
/// met ([`Probe`]) until one may hit; `keep`: a file of at most [`WHOLE`] bytes, kept
/// whole in `buf` for the full read once a line is picked.
///
/// The file is read [`STEP`] bytes at a time into the same bytes of `buf` (they stay
/// in the cache: the kernel's copy is most of a rare word's search, and a file read
/// whole in one call was copied to fresh memory and read back from it), until a line is
/// picked: from there (`keep`) the rest is read on after it and the bytes before it
/// read again, so that the full read scans one copy of the whole file. (Kept from the
/// first line that may hit instead, a `re:` search was no faster, within the noise.)
fn prefilter(file: &File, n: &Needle, q: &Query, buf: &mut Vec<u8>, keep: bool) -> Result<Pre> {
    let (mut may_keep, mut keep) = (keep, false);
    // `buf[..filled]` holds the file from `base`; its lines before `scanned` are searched.
    let (mut base, mut filled, mut scanned, mut read) = (0u64, 0usize, 0usize, 0u64);
    let mut kind = None;
    let mut lines: Vec<u64> = Vec::new();
    let mut probe = Probe::new(q);
    loop {
        let want = if keep { STEP } else { STEP.max(filled) };
        if buf.len() < filled + want {
            buf.resize(filled + want, 0);
        }
        let got = listing::read_full(file, &mut buf[filled..filled + want], base + filled as u64)?;
        let before = filled;
        read += got as u64;
        filled += got;
        let eof = got < want;
        if base == 0 && kind.is_none() {
            kind = listing::header_kind(&buf[..filled], eof);
            if matches!(kind, Some(HeaderKind::Missing | HeaderKind::Old)) {
                return Ok(Pre {
                    kind,
                    lines,
                    read,
                    whole: None,
                    may_hit: true,
                });
            }
        }
        // Whole lines only (all of it at the end of the file); a newline is looked for
        // in the new bytes alone, so that a long line costs its length once.
        let end = if eof {
            filled
        } else {
            memchr::memrchr(b'\n', &buf[before..filled]).map_or(scanned, |p| before + p + 1)
        };
        let region = &buf[scanned..end];
        let at = base + scanned as u64;
        let mut found: Vec<u64> = Vec::new();
        n.each(region, |i| {
            let start = memchr::memrchr(b'\n', &region[..i]).map_or(0, |p| p + 1);
            found.push(at + start as u64);
            memchr::memchr(b'\n', &region[i..]).map_or(region.len(), |p| i + p + 1)
        });
        found.sort_unstable();
        found.dedup();
        probe.lines(region, at, &found, eof);
        lines.extend(found);
        scanned = end;
        if may_keep && !keep && !lines.is_empty() {
            // The first pick: the bytes before `buf`'s read again in front of them (a file
            // cut meanwhile is read on a step at a time; the full read reads it again).
            let head = base as usize;
            if buf.len() < head + filled {
                buf.resize(head + filled, 0);
            }
            buf.copy_within(0..filled, head);
            let got = listing::read_full(file, &mut buf[..head], 0)?;
            read += got as u64;
            if got == head {
                keep = true;
                (base, scanned, filled) = (0, scanned + head, filled + head);
            } else {
                buf.copy_within(head..head + filled, 0);
                may_keep = false;
            }
        }
        if eof {
            lines.dedup();
            return Ok(Pre {
                kind,
                lines,
                read,
                whole: keep.then_some(filled),
                may_hit: probe.may_hit,
            });
        }
        if keep && filled > WHOLE as usize {
            // Grown past WHOLE since it was sized: read on a step at a time.
            (keep, may_keep) = (false, false);
        }
        if !keep {
            buf.copy_within(scanned..filled, 0);
            filled -= scanned;
            base += scanned as u64;
            scanned = 0;
        }
    }
}

/// Bytes read and searched at a time.
const STEP: usize = 256 << 10;

/// The sink of the full read: wants the picked lines, judges their texts.
struct Judge<'q> {
    q: &'q Query,
    /// Every term is one word (no phrase, no regular expression).
    words: bool,
    picked: Picked,
    next: usize,
    hits: Vec<Hit>,
    /// The verdict [`DocSink::settled_by`] reached, for the `doc` call that follows.
    settled: Option<Outcome>,
}

impl<'q> Judge<'q> {
    fn new(q: &'q Query, picked: Picked) -> Judge<'q> {
        Judge {
            q,
            words: !q.regex && q.terms.iter().all(|t| t.words.len() == 1),
            picked,
            next: 0,
            hits: Vec::new(),
            settled: None,
        }
    }
}

impl DocSink for Judge<'_> {
    fn wants(&mut self, offset: u64) -> bool {
        match &self.picked {
            Picked::All => true,
            Picked::Lines(lines) => {
                while self.next < lines.len() && lines[self.next] < offset {
                    self.next += 1;
                }
                self.next < lines.len() && lines[self.next] == offset
            }
        }
    }

    /// A hit of every term of words in an assistant message's text is the hit of its
    /// whole text (the text, `\n`, then the calls): no word holds white space, so no
    /// match reaches across the `\n` into the calls, and the first match of each term
    /// and every possible match before it lie in the text. (A phrase may reach across;
    /// a miss or an undecided text needs the calls.)
    fn settled_by(&mut self, text: &[u8]) -> bool {
        if !self.words {
            return false;
        }
        let o = judge_text(&self.q.terms, text);
        let hit = matches!(o, Outcome::Hit { .. });
        self.settled = hit.then_some(o);
        hit
    }

    fn doc(&mut self, d: DocRef<'_>) {
        let settled = self.settled.take();
        let judged = if self.q.regex {
            if !self.q.may_match(d.text) {
                return;
            }
            Judged::Undecided(d.text.to_vec())
        } else {
            match settled.unwrap_or_else(|| judge_text(&self.q.terms, d.text)) {
                Outcome::Miss => return,
                Outcome::Undecided => Judged::Undecided(d.text.to_vec()),
                Outcome::Hit { score, anchor } => Judged::Hit { score, anchor },
            }
        };
        self.hits.push(Hit {
            seq: d.seq,
            offset: d.offset,
            len: d.len,
            id: d.id.to_vec(),
            kind: d.kind,
            time: d.time,
            on_path: false,
            judged,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rules::PChar;

    fn query(terms: &[&str]) -> Query {
        let word = |w: &str| w.chars().map(|c| PChar::new(c as u32, false)).collect();
        Query {
            terms: terms
                .iter()
                .map(|t| Term {
                    words: t.split(' ').map(word).collect(),
                })
                .collect(),
            regex: false,
            literals: Vec::new(),
        }
    }

    /// `(seq, score)` of each hit of `terms` in a session of `entries` (a header first).
    fn scores(entries: &[&str], terms: &[&str]) -> Vec<(u32, u64)> {
        let dir = std::env::temp_dir().join(format!("st-search-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.jsonl", terms.join("_").replace(' ', "-")));
        let mut data = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
        for (k, e) in entries.iter().enumerate() {
            data.push_str(&format!(
                "{{\"type\":\"message\",\"id\":\"e{k}\",\"message\":{{\"role\":\"assistant\",\"content\":{e}}}}}\n"
            ));
        }
        std::fs::write(&path, data).unwrap();
        let got = search_files(std::slice::from_ref(&path), &query(terms), 1);
        std::fs::remove_file(&path).unwrap();
        let Some(FileResult::Session { hits, .. }) = got.into_iter().next() else {
            panic!("not read as a session");
        };
        hits.iter()
            .map(|h| match h.judged {
                Judged::Hit { score, .. } => (h.seq, score),
                Judged::Undecided(_) => panic!("undecided"),
            })
            .collect()
    }

    #[test]
    fn calls_are_read_unless_the_text_settles_the_hit() {
        let entries = [
            // The word only in the arguments: "say a\nb\nthe" (the calls are read).
            r#"[{"type":"text","text":"say a"},{"type":"toolCall","name":"b","arguments":{"x":"the"}}]"#,
            // In the text and the arguments: the text's match is the first.
            r#"[{"type":"text","text":"in the"},{"type":"toolCall","name":"the","arguments":{"x":"zzz"}}]"#,
            // Only in thinking: no hit.
            r#"[{"type":"thinking","thinking":"the"},{"type":"toolCall","name":"n","arguments":{}}]"#,
        ];
        assert_eq!(scores(&entries, &["the"]), vec![(0, 8), (1, 3)]);
        // A second term only in the calls: "in the\nthe\nzzz".
        assert_eq!(scores(&entries, &["the", "zzz"]), vec![(1, 3 + 11)]);
        // A phrase across the text's end and the calls ("a\nb").
        assert_eq!(scores(&entries, &["a b"]), vec![(0, 4)]);
    }

    #[test]
    fn a_regex_with_runs_hands_back_only_the_entries_whose_lines_hold_one() {
        let dir = std::env::temp_dir().join(format!("st-search-re-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("re.jsonl");
        let texts = ["alpha", "a ZEBRAfish", "beta", r"zebr\u0061", "gamma"];
        let mut data = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
        for (k, t) in texts.iter().enumerate() {
            data.push_str(&format!(
                "{{\"type\":\"message\",\"id\":\"e{k}\",\"message\":{{\"role\":\"user\",\"content\":\"{t}\"}}}}\n"
            ));
        }
        // The run only in thinking and in a key: the line is picked, its text is not.
        data.push_str(r#"{"type":"message","id":"t","message":{"role":"assistant","zebra":1,"content":[{"type":"thinking","thinking":"zebra"},{"type":"text","text":"none"}]}}"#);
        data.push('\n');
        std::fs::write(&path, data).unwrap();
        let seqs = |literals: &[&str]| {
            let q = Query {
                terms: Vec::new(),
                regex: true,
                literals: literals.iter().map(|l| l.as_bytes().to_vec()).collect(),
            };
            let got = search_files(std::slice::from_ref(&path), &q, 1);
            let Some(FileResult::Session { hits, .. }) = got.into_iter().next() else {
                panic!("not read as a session");
            };
            hits.iter()
                .map(|h| {
                    assert!(matches!(h.judged, Judged::Undecided(_)));
                    h.seq
                })
                .collect::<Vec<_>>()
        };
        // The run's line, and the line spelling a letter with a `\u` escape.
        assert_eq!(seqs(&["zebra"]), vec![1, 3]);
        // Every run in the text: not "a ZEBRAfish" (no "cake").
        assert_eq!(seqs(&["zebra", "cake"]), Vec::<u32>::new());
        // No run: every entry goes back.
        assert_eq!(seqs(&[]), vec![0, 1, 2, 3, 4, 5]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Whether a picked line of a session (its lines after the header: `lines`) may hit
    /// `q` (a word, or `re:` runs).
    fn probed(lines: &[&str], q: &Query) -> bool {
        let dir = std::env::temp_dir().join(format!("st-search-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.jsonl");
        let mut data = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
        for l in lines {
            data.push_str(l);
        }
        std::fs::write(&path, data).unwrap();
        let file = File::open(&path).unwrap();
        let needle = Needle::of(&q.needle_terms()).unwrap();
        let pre = prefilter(&file, &needle, q, &mut Vec::new(), true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(pre.kind, Some(HeaderKind::Session));
        assert!(!pre.lines.is_empty(), "no line picked");
        pre.may_hit
    }

    #[test]
    fn a_file_is_read_in_full_only_when_a_picked_line_may_hit() {
        let msg = |id: &str, role: &str, content: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":null,"message":{{"role":"{role}","content":{content}}}}}"#
            ) + "\n"
        };
        let user = msg("u", "user", r#""hello""#);
        // The word only in a tool result, thinking, a key, or a `\u` escape of another
        // letter: no line may hit.
        let none = [
            user.clone(),
            msg("r", "toolResult", r#""zebra""#),
            msg(
                "t",
                "assistant",
                r#"[{"type":"thinking","thinking":"zebra"}]"#,
            ),
            msg("k", "user", r#""\u0041""#),
            msg(
                "y",
                "assistant",
                r#"[{"type":"text","text":"ok","zebra":1}]"#,
            ),
        ];
        let words = query(&["zebra"]);
        let re = Query {
            terms: Vec::new(),
            regex: true,
            literals: vec![b"zebra".to_vec()],
        };
        for q in [&words, &re] {
            let none: Vec<&str> = none.iter().map(String::as_str).collect();
            assert!(!probed(&none, q));
            let with = |line: &str| {
                let mut v = none.clone();
                v.insert(2, line);
                probed(&v, q)
            };
            // A hit, in a user message or a tool call's arguments.
            assert!(with(&msg("h", "user", r#""a zebra""#)));
            let call = r#"[{"type":"toolCall","name":"n","arguments":{"x":"zebra"}}]"#;
            assert!(with(&msg("c", "assistant", call)));
            // A duplicate id is judged as if accepted (the full read decides).
            assert!(with(&msg("u", "user", r#""zebra""#)));
            // Glued objects, a line that is not JSON: read by the full read only.
            let glued = msg("g", "toolResult", r#""zebra""#).trim_end().to_owned() + &user;
            assert!(with(&glued));
            assert!(with("zebra {\n"));
            // The last line, not ended by `\n`.
            let mut last = none.clone();
            let tail = msg("r2", "toolResult", r#""zebra""#);
            last.push(tail.trim_end());
            assert!(probed(&last, q));
            // A first user message whose text is not computed here: the full read hands
            // the file to the Python rules.
            let mut first = none.clone();
            let number = msg("u", "user", r#"[{"type":"text","text":5}]"#);
            first[0] = &number;
            assert!(probed(&first, q));
        }
    }
}
