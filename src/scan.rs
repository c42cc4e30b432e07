//! The JSON validator and field extractor: one line (or suffix) in, a verdict and the
//! spans of the top-level fields the index needs out, without building a value.
//!
//! Guarantees: [`validate`] accepts exactly the documents `json.loads` accepts, except
//! that the `NaN`/`Infinity` literals, nesting deeper than [`MAX_DEPTH`] and integers
//! longer than [`MAX_INT_DIGITS`] digits are invalid (`_jsonl.decode_line`'s rules, so
//! both backends agree on every line); invalid UTF-8 is not a JSON error (it is
//! reported and replaced like `from_utf8_lossy`). No input can panic or recurse: every
//! byte is read through `get`, and open containers are a fixed bit stack.
//! [`validate_line`] gives the same verdicts while it finds the line's `\n`.
//! [`split_line`] is rule 4: a complete line that is not one value read as glued
//! objects and torn fragments ([`validate_prefix`] finds where each object ends; at
//! most [`MAX_TORN_CANDIDATES`] candidates tried per line). Fields (`type`, `id`, `parentId`, `timestamp`,
//! `firstKeptEntryId`, `version`, `label`, and `message`'s `role`, `provider`,
//! `model`, `timestamp`, `content` (where it starts) and the numbers of `usage` that `usage.rs` sums) are recorded as spans
//! while the validator passes them, keys in any order, the last duplicate winning
//! (nested fields from the last duplicate of each enclosing key, as `json.loads`
//! keeps them); only spans
//! that contain `\` or invalid UTF-8 are decoded ([`decode_span`]: escapes as
//! `json.loads`, lone surrogates kept in generalized UTF-8).
//!
//! Design: every line is validated to its end (an early stop cannot reject what
//! `json.loads` rejects). String bodies are skipped a 64-byte window at a time by
//! `block.rs` (AVX2 when detected, else SSE2, SWAR elsewhere); the state machine is
//! compiled a second time with AVX2 enabled. Measurements: docs/BENCHMARKS.md,
//! "Core measurements (history)".

use std::borrow::Cow;

use crate::kind::EntryKind;

pub(crate) mod block; // also read by `listing` (string ends over validated lines)
pub(crate) use block::{Classify, Strings};

/// Deepest nesting of arrays/objects a line may have: `_jsonl.MAX_DEPTH` (orjson's
/// limit, also enforced on its `json.loads` fallback), so both backends agree.
pub const MAX_DEPTH: usize = 1024;

/// Largest number of digits `json.loads` accepts in an integer literal (CPython's
/// default `sys.get_int_max_str_digits()`; beyond it `int()` raises ValueError).
pub const MAX_INT_DIGITS: usize = 4300;

/// How many `{"type":` candidates rule 4 tries on an invalid line (in all its
/// fragments together).
pub const MAX_TORN_CANDIDATES: usize = 16;

/// What a top-level field (or `message.role`) held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Val {
    /// The key does not occur.
    #[default]
    Absent,
    /// `null`.
    Null,
    /// A string; `start..end` is the body between the quotes (relative to the scanned
    /// slice); `escaped` says it contains `\`.
    Str {
        /// First byte of the body.
        start: usize,
        /// One past the last byte of the body.
        end: usize,
        /// The body contains a backslash escape.
        escaped: bool,
    },
    /// A number; `start..end` is its text.
    Num {
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// Anything else (true/false, object, array); `start` is its first byte.
    Other {
        /// First byte of the value.
        start: usize,
    },
}

/// The top-level fields the index needs, as spans into the scanned slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// `type`.
    pub ty: Val,
    /// `id`.
    pub id: Val,
    /// `parentId`.
    pub parent_id: Val,
    /// `timestamp`.
    pub timestamp: Val,
    /// `firstKeptEntryId` (compaction).
    pub first_kept: Val,
    /// `targetId` (context_edit, label).
    pub target_id: Val,
    /// `version` (header).
    pub version: Val,
    /// `label` (label).
    pub label: Val,
    /// `message.role`, from the last `message` key whose value is an object.
    pub role: Val,
    /// `message.provider` (as `role`).
    pub provider: Val,
    /// `message.model` (as `role`).
    pub model: Val,
    /// `message.timestamp` (as `role`).
    pub msg_timestamp: Val,
    /// `message.content` (as `role`): where its value starts, `Absent` if it has none.
    pub content: Val,
    /// `message.usage`'s [`TOKEN_KEYS`] fields, from its last `usage` key whose
    /// value is an object: what an assistant message spent is summed at indexing time.
    pub tokens: [Val; 5],
    /// `message.usage.cost.total` (as `tokens`, from the last `cost` object).
    pub cost_total: Val,
    /// `message.usage` (as `role`): the last `usage` key's value, `Absent` if none.
    pub usage: Val,
    /// Some number of the document has a run of [`LONG_DIGITS`] or more digits not
    /// after a `.` (an integer orjson cannot decode exactly): `_jsonl.decode_line`
    /// takes its exact path for such a line, and need not look for one in the others.
    pub long_number: bool,
}

/// The fields of `message.usage` the validator records ([`Fields::tokens`], in this
/// order): the token counts `usage.rs` sums (`_usage.py`'s rule).
pub const TOKEN_KEYS: [&[u8]; 5] = [
    b"input",
    b"output",
    b"cacheRead",
    b"cacheWrite",
    b"totalTokens",
];

/// Digits in a run that make `_jsonl.decode_line` take its exact path
/// (`_jsonl._DIGITS19`).
pub const LONG_DIGITS: usize = 19;

/// Whether the number text `num` has a run of [`LONG_DIGITS`] digits not after `.`.
fn long_digit_run(num: &[u8]) -> bool {
    let (mut run, mut counts) = (0, false);
    for (k, &c) in num.iter().enumerate() {
        if !c.is_ascii_digit() {
            run = 0;
            continue;
        }
        if run == 0 {
            counts = k == 0 || num[k - 1] != b'.';
        }
        run += 1;
        if counts && run >= LONG_DIGITS {
            return true;
        }
    }
    false
}

/// The verdict on one line (or a suffix of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Valid JSON whose top-level value is an object.
    Object,
    /// Valid JSON, but not an object.
    NotObject,
    /// Not valid JSON by `json.loads` rules (NaN/Infinity rejected, depth capped).
    Invalid,
}

/// Which field a top-level key feeds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    None,
    Type,
    Id,
    ParentId,
    Timestamp,
    FirstKept,
    TargetId,
    Version,
    Label,
    Message,
    Role,
    Usage,
    Provider,
    Model,
    MsgTimestamp,
    Content,
    /// A field of `message.usage`: `TOKEN_KEYS[k]`.
    Token(u8),
    Cost,
    CostTotal,
}

fn top_slot(key: &[u8]) -> Slot {
    match key {
        b"type" => Slot::Type,
        b"id" => Slot::Id,
        b"parentId" => Slot::ParentId,
        b"timestamp" => Slot::Timestamp,
        b"firstKeptEntryId" => Slot::FirstKept,
        b"targetId" => Slot::TargetId,
        b"version" => Slot::Version,
        b"label" => Slot::Label,
        b"message" => Slot::Message,
        _ => Slot::None,
    }
}

/// Skip a number starting at `i`; `None` if malformed or an integer beyond
/// [`MAX_INT_DIGITS`] digits.
#[inline]
fn skip_number(s: &[u8], mut i: usize) -> Option<usize> {
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    let int_start = i;
    match *s.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => {
            i += 1;
            while s.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        _ => return None,
    }
    let int_digits = i - int_start;
    let mut is_int = true;
    if s.get(i) == Some(&b'.') {
        i += 1;
        let d = i;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == d {
            return None;
        }
        is_int = false;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let d = i;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == d {
            return None;
        }
        is_int = false;
    }
    if is_int && int_digits > MAX_INT_DIGITS {
        return None;
    }
    Some(i)
}

/// Skip JSON whitespace; in `LINE` mode `\n` is not whitespace (it ends the line).
#[inline(always)]
fn skip_ws<const LINE: bool>(s: &[u8], mut i: usize) -> usize {
    while let Some(&c) = s.get(i) {
        if !(c == b' ' || c == b'\t' || c == b'\r' || (!LINE && c == b'\n')) {
            break;
        }
        i += 1;
    }
    i
}

/// Container kinds of the open containers, one bit each (1 = object).
struct Stack {
    bits: [u64; MAX_DEPTH / 64],
    depth: usize,
}

impl Stack {
    #[inline(always)]
    fn push(&mut self, obj: bool) -> bool {
        if self.depth >= MAX_DEPTH {
            return false;
        }
        let (w, b) = (self.depth / 64, self.depth % 64);
        if obj {
            self.bits[w] |= 1 << b;
        } else {
            self.bits[w] &= !(1 << b);
        }
        self.depth += 1;
        true
    }
    #[inline(always)]
    fn top_is_obj(&self) -> bool {
        let d = self.depth - 1;
        self.bits[d / 64] >> (d % 64) & 1 == 1
    }
}

/// Validate `s` as one JSON document by `json.loads` rules and record the top-level
/// fields of an object into `f` (which is reset first).
pub fn validate(s: &[u8], f: &mut Fields) -> Verdict {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = block::Avx2::detect() {
        // SAFETY: `avx2` exists only if the CPU supports AVX2.
        return unsafe { validate_avx2::<false, false>(s, f, avx2) }.0;
    }
    validate_with::<_, false, false>(s, f, block::Baseline).0
}

/// Validate the JSON object that starts at `s[0]` (a `{`) and ends wherever its
/// closing `}` is, whatever follows: `Some(length)` iff it is an object by
/// [`validate`]'s rules (then `f` holds its fields, relative to `s`), else `None`.
/// Rule 4 reads a line of glued objects with it ([`split_line`]).
pub fn validate_prefix(s: &[u8], f: &mut Fields) -> Option<usize> {
    if s.first() != Some(&b'{') {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    let (v, end) = if let Some(avx2) = block::Avx2::detect() {
        // SAFETY: `avx2` exists only if the CPU supports AVX2.
        unsafe { validate_avx2::<false, true>(s, f, avx2) }
    } else {
        validate_with::<_, false, true>(s, f, block::Baseline)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (v, end) = validate_with::<_, false, true>(s, f, block::Baseline);
    (v == Verdict::Object).then_some(end)
}

/// Validate the line that starts at `s[0]` and ends at the first `\n` of `s`, without
/// looking for that `\n` first: `Some(position of the \n)` iff the line is an object
/// by [`validate`]'s rules (then `f` holds its fields, relative to `s`), else `None`
/// (an invalid or non-object line, or no `\n`: the caller frames the line itself and
/// asks [`scan_line`]). Saves the separate newline search on valid lines.
pub fn validate_line(s: &[u8], f: &mut Fields) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    let (v, end) = if let Some(avx2) = block::Avx2::detect() {
        // SAFETY: `avx2` exists only if the CPU supports AVX2.
        unsafe { validate_avx2::<true, false>(s, f, avx2) }
    } else {
        validate_with::<_, true, false>(s, f, block::Baseline)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (v, end) = validate_with::<_, true, false>(s, f, block::Baseline);
    (v == Verdict::Object).then_some(end)
}

/// [`validate`] compiled with AVX2 enabled, so the state machine and the AVX2
/// classifier inline into one function.
///
/// # Safety
/// The CPU must support AVX2 (`avx2` proves it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn validate_avx2<const LINE: bool, const PREFIX: bool>(
    s: &[u8],
    f: &mut Fields,
    avx2: block::Avx2,
) -> (Verdict, usize) {
    validate_with::<_, LINE, PREFIX>(s, f, avx2)
}

/// The state machine, over string bodies classified by `cls`. With `LINE`, the
/// document ends at the first `\n` (returned with the verdict; `Invalid` if there is
/// none), else at the end of `s` (returned); with `PREFIX`, right after the top-level
/// value (returned), whatever follows.
#[inline(always)]
fn validate_with<C: Classify, const LINE: bool, const PREFIX: bool>(
    s: &[u8],
    f: &mut Fields,
    cls: C,
) -> (Verdict, usize) {
    let bad = (Verdict::Invalid, 0);
    *f = Fields::default();
    let mut st = Stack {
        bits: [0; MAX_DEPTH / 64],
        depth: 0,
    };
    let mut strs = Strings::new(cls);
    let top_obj = s.get(skip_ws::<LINE>(s, 0)) == Some(&b'{');
    // Which field the value being parsed feeds; bit d of `open` is set while the
    // container at depth d holds recorded fields: the top-level object (1), its
    // `message` (2), that one's `usage` (3) and the usage's `cost` (4).
    let mut slot = Slot::None;
    let mut open: u8 = 0b10;
    let mut i = skip_ws::<LINE>(s, 0);
    // `true` = expecting a value, `false` = just after one.
    let mut want_value = true;
    loop {
        if want_value {
            i = skip_ws::<LINE>(s, i);
            let Some(&c) = s.get(i) else {
                return bad;
            };
            let start = i;
            match c {
                b'{' | b'[' => {
                    let obj = c == b'{';
                    if !st.push(obj) {
                        return bad;
                    }
                    if obj && opens(slot, st.depth) {
                        open |= 1 << st.depth;
                    }
                    record(f, slot, Val::Other { start });
                    i += 1;
                    if obj {
                        // Expect a key or `}`.
                        match read_key::<C, LINE>(s, i, true, &mut strs) {
                            KeyRead::End(j) => {
                                i = j;
                                close(&mut st, &mut open);
                                want_value = false;
                                continue;
                            }
                            KeyRead::Key(j, ks, ke, esc) => {
                                slot = key_slot(s, ks, ke, esc, st.depth, open, f);
                                i = j;
                                continue; // want_value stays true
                            }
                            KeyRead::Bad => return bad,
                        }
                    }
                    // Array: `]` right away or a value.
                    let j = skip_ws::<LINE>(s, i);
                    if s.get(j) == Some(&b']') {
                        i = j + 1;
                        close(&mut st, &mut open);
                        want_value = false;
                    } else {
                        slot = Slot::None;
                    }
                    continue;
                }
                b'"' => {
                    let Some((j, esc)) = strs.skip_string(s, i + 1) else {
                        return bad;
                    };
                    record(
                        f,
                        slot,
                        Val::Str {
                            start: start + 1,
                            end: j - 1,
                            escaped: esc,
                        },
                    );
                    i = j;
                }
                b'-' | b'0'..=b'9' => {
                    let Some(j) = skip_number(s, i) else {
                        return bad;
                    };
                    if j - start >= LONG_DIGITS && long_digit_run(&s[start..j]) {
                        f.long_number = true;
                    }
                    record(f, slot, Val::Num { start, end: j });
                    i = j;
                }
                b't' | b'f' | b'n' => {
                    let lit: &[u8] = match c {
                        b't' => b"true",
                        b'f' => b"false",
                        _ => b"null",
                    };
                    if s.get(i..i + lit.len()) != Some(lit) {
                        return bad;
                    }
                    let v = if c == b'n' {
                        Val::Null
                    } else {
                        Val::Other { start }
                    };
                    record(f, slot, v);
                    i += lit.len();
                }
                _ => return bad,
            }
            want_value = false;
        } else {
            // After a value: end of document, `,`, or the container's close.
            if PREFIX && st.depth == 0 {
                let v = if top_obj {
                    Verdict::Object
                } else {
                    Verdict::NotObject
                };
                return (v, i);
            }
            i = skip_ws::<LINE>(s, i);
            if st.depth == 0 {
                let end = if LINE {
                    s.get(i) == Some(&b'\n')
                } else {
                    i == s.len()
                };
                if !end {
                    return bad;
                }
                let v = if top_obj {
                    Verdict::Object
                } else {
                    Verdict::NotObject
                };
                return (v, i);
            }
            let obj = st.top_is_obj();
            match s.get(i) {
                Some(b',') => {
                    i += 1;
                    if obj {
                        match read_key::<C, LINE>(s, i, false, &mut strs) {
                            KeyRead::Key(j, ks, ke, esc) => {
                                slot = key_slot(s, ks, ke, esc, st.depth, open, f);
                                i = j;
                                want_value = true;
                            }
                            _ => return bad,
                        }
                    } else {
                        slot = Slot::None;
                        want_value = true;
                    }
                }
                Some(b'}') if obj => {
                    i += 1;
                    close(&mut st, &mut open);
                }
                Some(b']') if !obj => {
                    i += 1;
                    close(&mut st, &mut open);
                }
                _ => return bad,
            }
        }
    }
}

#[inline(always)]
fn close(st: &mut Stack, open: &mut u8) {
    if st.depth <= 4 {
        *open &= !(1 << st.depth);
    }
    st.depth -= 1;
}

/// Whether an object that is the value of `slot`, at `depth`, holds recorded fields.
#[inline(always)]
fn opens(slot: Slot, depth: usize) -> bool {
    matches!(
        (slot, depth),
        (Slot::Message, 2) | (Slot::Usage, 3) | (Slot::Cost, 4)
    )
}

enum KeyRead {
    /// `}` closed an empty object; index after it.
    End(usize),
    /// A key and its `:`; (index after `:`, key body start, key body end, escaped).
    Key(usize, usize, usize, bool),
    Bad,
}

#[inline(always)]
fn read_key<C: Classify, const LINE: bool>(
    s: &[u8],
    i: usize,
    allow_end: bool,
    strs: &mut Strings<C>,
) -> KeyRead {
    let i = skip_ws::<LINE>(s, i);
    match s.get(i) {
        Some(b'}') if allow_end => KeyRead::End(i + 1),
        Some(b'"') => {
            let Some((j, esc)) = strs.skip_string(s, i + 1) else {
                return KeyRead::Bad;
            };
            let k = skip_ws::<LINE>(s, j);
            if s.get(k) != Some(&b':') {
                return KeyRead::Bad;
            }
            KeyRead::Key(k + 1, i + 1, j - 1, esc)
        }
        _ => KeyRead::Bad,
    }
}

/// The slot a key at `depth` feeds. Also resets the `message` fields when a new
/// top-level `message` value starts (the last duplicate wins, even if it is not an
/// object).
#[inline(always)]
fn key_slot(
    s: &[u8],
    ks: usize,
    ke: usize,
    esc: bool,
    depth: usize,
    open: u8,
    f: &mut Fields,
) -> Slot {
    // Most keys of a Pi line are nested deeper: decide that without a call.
    if depth > 4 || open >> depth & 1 == 0 {
        return Slot::None;
    }
    key_slot_named(s, ks, ke, esc, depth, f)
}

#[inline(never)]
fn key_slot_named(s: &[u8], ks: usize, ke: usize, esc: bool, depth: usize, f: &mut Fields) -> Slot {
    let raw = &s[ks..ke];
    let key: Cow<'_, [u8]> = if esc {
        let mut v = Vec::new();
        decode_into(raw, true, &mut v);
        Cow::Owned(v)
    } else {
        Cow::Borrowed(raw)
    };
    match depth {
        1 => {
            let slot = top_slot(&key);
            if slot == Slot::Message {
                f.role = Val::Absent;
                f.provider = Val::Absent;
                f.model = Val::Absent;
                f.msg_timestamp = Val::Absent;
                f.content = Val::Absent;
                f.tokens = [Val::Absent; 5];
                f.cost_total = Val::Absent;
                f.usage = Val::Absent;
            }
            slot
        }
        2 => match &*key {
            b"role" => Slot::Role,
            b"provider" => Slot::Provider,
            b"model" => Slot::Model,
            b"timestamp" => Slot::MsgTimestamp,
            b"content" => Slot::Content,
            b"usage" => {
                f.tokens = [Val::Absent; 5];
                f.cost_total = Val::Absent;
                Slot::Usage
            }
            _ => Slot::None,
        },
        3 => match TOKEN_KEYS.iter().position(|&t| t == &*key) {
            Some(k) => Slot::Token(k as u8),
            None if &*key == b"cost" => {
                f.cost_total = Val::Absent;
                Slot::Cost
            }
            None => Slot::None,
        },
        _ if &*key == b"total" => Slot::CostTotal,
        _ => Slot::None,
    }
}

#[inline(always)]
fn record(f: &mut Fields, slot: Slot, v: Val) {
    let dst = match slot {
        Slot::None | Slot::Message | Slot::Cost => return,
        Slot::Usage => &mut f.usage,
        Slot::Type => &mut f.ty,
        Slot::Id => &mut f.id,
        Slot::ParentId => &mut f.parent_id,
        Slot::Timestamp => &mut f.timestamp,
        Slot::FirstKept => &mut f.first_kept,
        Slot::TargetId => &mut f.target_id,
        Slot::Version => &mut f.version,
        Slot::Label => &mut f.label,
        Slot::Role => &mut f.role,
        Slot::Provider => &mut f.provider,
        Slot::Model => &mut f.model,
        Slot::MsgTimestamp => &mut f.msg_timestamp,
        Slot::Content => &mut f.content,
        Slot::Token(k) => &mut f.tokens[k as usize],
        Slot::CostTotal => &mut f.cost_total,
    };
    *dst = v;
}

/// Append the JSON string body `raw` decoded to `out`: escapes resolved like
/// `json.loads` (surrogate pairs combined, a lone surrogate as its 3-byte generalized
/// UTF-8 form, i.e. Python's `surrogatepass`), invalid UTF-8 replaced by U+FFFD like
/// `String::from_utf8_lossy`. `raw` must be a body the validator accepted.
pub fn decode_into(raw: &[u8], escaped: bool, out: &mut Vec<u8>) {
    decode_span(raw, escaped, false, out);
}

/// [`decode_into`], told whether the line holding `raw` is known to be valid UTF-8
/// (then no byte run is checked again).
pub fn decode_span(raw: &[u8], escaped: bool, utf8_ok: bool, out: &mut Vec<u8>) {
    let push_lossy = |raw: &[u8], out: &mut Vec<u8>| {
        if utf8_ok {
            out.extend_from_slice(raw);
        } else {
            push_lossy(raw, out);
        }
    };
    if !escaped {
        push_lossy(raw, out);
        return;
    }
    let mut i = 0;
    while i < raw.len() {
        let run_end = memchr::memchr(b'\\', &raw[i..]).map_or(raw.len(), |p| i + p);
        push_lossy(&raw[i..run_end], out);
        i = run_end;
        if i >= raw.len() {
            break;
        }
        let Some(&e) = raw.get(i + 1) else { break };
        i += 2;
        let c = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let Some(cp) = hex4(raw, i) else { break };
                i += 4;
                let mut cp = cp;
                if (0xD800..0xDC00).contains(&cp) && raw.get(i..i + 2) == Some(b"\\u") {
                    if let Some(lo) = hex4(raw, i + 2) {
                        if (0xDC00..0xE000).contains(&lo) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            i += 6;
                        }
                    }
                }
                push_cp(cp, out);
                continue;
            }
            _ => break,
        };
        out.push(c);
    }
}

fn hex4(raw: &[u8], i: usize) -> Option<u32> {
    let h = raw.get(i..i + 4)?;
    let mut v = 0u32;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Encode a code point (surrogates included) as generalized UTF-8.
fn push_cp(cp: u32, out: &mut Vec<u8>) {
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

fn push_lossy(raw: &[u8], out: &mut Vec<u8>) {
    // simdutf8 settles the common case (valid text) several times faster than std.
    if simdutf8::basic::from_utf8(raw).is_ok() {
        out.extend_from_slice(raw);
        return;
    }
    match String::from_utf8_lossy(raw) {
        Cow::Borrowed(s) => out.extend_from_slice(s.as_bytes()),
        Cow::Owned(s) => out.extend_from_slice(s.as_bytes()),
    }
}

/// The decoded bytes of a string field, borrowing when no decoding is needed.
pub fn str_bytes<'a>(s: &'a [u8], v: Val) -> Option<Cow<'a, [u8]>> {
    str_bytes_of(s, v, false)
}

/// [`str_bytes`], told whether `s` is known to be valid UTF-8.
#[inline]
pub fn str_bytes_of<'a>(s: &'a [u8], v: Val, utf8_ok: bool) -> Option<Cow<'a, [u8]>> {
    let Val::Str {
        start,
        end,
        escaped,
    } = v
    else {
        return None;
    };
    let raw = s.get(start..end)?;
    if !escaped && (utf8_ok || simdutf8::basic::from_utf8(raw).is_ok()) {
        return Some(Cow::Borrowed(raw));
    }
    let mut out = Vec::with_capacity(raw.len());
    decode_span(raw, escaped, utf8_ok, &mut out);
    Some(Cow::Owned(out))
}

/// The JSON text of a field's value as it stands in `s` (a line [`validate`] accepted,
/// which `v` came from); `None` when the key is absent. Invalid UTF-8 is replaced as
/// `from_utf8_lossy` does, so decoding the text gives the value `json.loads` gives.
pub fn value_text(s: &[u8], v: Val) -> Option<String> {
    value_raw(s, v).map(|raw| String::from_utf8_lossy(raw).into_owned())
}

/// The JSON text of a field's value as it stands in `s` (a line [`validate`] accepted,
/// which `v` came from), unchanged bytes; `None` when the key is absent.
pub fn value_raw(s: &[u8], v: Val) -> Option<&[u8]> {
    Some(match v {
        Val::Absent => return None,
        Val::Null => b"null",
        Val::Str { start, end, .. } => s.get(start - 1..end + 1)?,
        Val::Num { start, end } => s.get(start..end)?,
        Val::Other { start } => s.get(start..skip_value(s, start))?,
    })
}

/// One past the closing quote of the string whose opening quote is `s[i]`, and whether
/// its body holds a backslash. A string without escapes ends at the first quote (most
/// keys and values); one with escapes is skipped 64 bytes at a time on its quote and
/// backslash masks (`block::skip_valid_string`: the line was validated, so nothing
/// else needs classifying), as Pi's text is dense with both (`\n`, `\"`) and a byte
/// search restarted at each costs more than the string.
#[inline]
pub(crate) fn skip_str_esc(s: &[u8], i: usize) -> (usize, bool) {
    let Some(body) = s.get(i + 1..) else {
        return (s.len(), false);
    };
    match memchr::memchr2(b'"', b'\\', body) {
        Some(p) if body[p] == b'"' => return (i + 2 + p, false),
        None => return (s.len(), false),
        Some(_) => {}
    }
    block::skip_valid_string(s, i + 1).unwrap_or((s.len(), true))
}

#[inline]
pub(crate) fn skip_str(s: &[u8], i: usize) -> usize {
    skip_str_esc(s, i).0
}

/// One past the value that starts at `s[i]`.
pub(crate) fn skip_value(s: &[u8], i: usize) -> usize {
    match s.get(i) {
        Some(b'"') => skip_str(s, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while let Some(&c) = s.get(j) {
                match c {
                    b'"' => {
                        j = skip_str(s, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            s.len()
        }
        Some(_) => {
            let mut j = i;
            while s
                .get(j)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
            {
                j += 1;
            }
            j
        }
        None => s.len(),
    }
}

/// Only space, tab and CR (rule 2: skipped silently).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// The outcome of scanning one complete or tail line as one JSON value (rules 3, 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineScan {
    /// The verdict on the line.
    pub verdict: Verdict,
    /// The line contains invalid UTF-8 (reported once per line).
    pub bad_utf8: bool,
    /// Fields of the object, relative to the line.
    pub fields: Fields,
}

/// Scan one non-blank line as one JSON value: UTF-8 check and validation. A line ended
/// by `\n` that is `Invalid` goes on to rule 4 ([`split_line`]); a final piece without
/// `\n` never does: it may be a line still being written or cut by a crash, and a
/// prefix of a Pi line that ends right after a nested `{"type":...}` object (every
/// content block, a parsed session line inside a tool result) looks exactly like a
/// fragment followed by a complete entry (`_reader.read_line`'s rule too).
pub fn scan_line(line: &[u8]) -> LineScan {
    // simdutf8 (runtime-detected AVX2/SSE4.2): std's validator ran at 0.6 GB/s on
    // Pi lines with ~4% non-ASCII bytes, a third of the whole scan.
    let bad_utf8 = simdutf8::basic::from_utf8(line).is_err();
    let mut fields = Fields::default();
    let verdict = validate(line, &mut fields);
    LineScan {
        verdict,
        bad_utf8,
        fields,
    }
}

/// One object of a line read by rule 4: `line[start..end]`, its fields relative to
/// `line[start..]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// First byte (`{`).
    pub start: usize,
    /// One past the closing `}`.
    pub end: usize,
    /// Its top-level fields.
    pub fields: Fields,
    /// Read behind torn bytes only because it ends the line: it may be a value nested
    /// in the torn record ([`Torn::may_nest`]), so it is an entry only if it continues
    /// the tree (rule 3's check, `lines::Cand::may_nest`).
    pub may_nest: bool,
}

/// What rule 4 makes of a complete line that is not one JSON value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The objects, in line order.
    pub pieces: Vec<Piece>,
    /// The non-blank runs of bytes outside them (`start..end`), in line order.
    pub fragments: Vec<(usize, usize)>,
}

/// Rule 4 (`_reader.read_line`'s rule): a complete line that is not one JSON value is
/// read as objects glued with no `\n` between them and the torn bytes among them.
///
/// From the line's first non-blank byte: a complete object that starts there is a
/// piece, whatever its type (a record a writer wrote), and reading goes on right after
/// it (blanks skipped). Bytes where no object starts are a fragment: a torn record.
/// It runs to the first `{"type":` (at most [`MAX_TORN_CANDIDATES`] tried) that begins
/// a complete object whose `type` is an entry type or `session`, and that either ends
/// the line or cannot be a value nested in the torn record ([`Torn::may_nest`]: inside
/// one of its strings, or after a byte JSON allows no value after); else the fragment
/// runs to the line's end. One that ends the line and may be nested is marked
/// [`Piece::may_nest`]: the readers take it for an entry only if it continues the
/// tree (rule 3, `Index::continues_tree`). So an object nested in a record cut right after it (a
/// content block, a parsed session line in a tool result) is never taken for an entry
/// when another writer's record, or our seal (`#`), follows the cut; a line cut right
/// after a content block and ended by a bare `\n` (Pi 0.84.4+ does that on load) is
/// kept from it by the entry type. The price: behind a record cut right after `[`, `,`
/// or `:`, only an object that ends the line is read. Linear: each piece is validated
/// once, a fragment's bytes are read once for [`Torn`], and each candidate costs at
/// most the line's length.
///
/// Returns `None` when no piece is found (the line is `invalid_json`).
pub fn split_line(line: &[u8]) -> Option<Split> {
    let blank = |mut i: usize| {
        while line
            .get(i)
            .is_some_and(|&c| matches!(c, b' ' | b'\t' | b'\r'))
        {
            i += 1;
        }
        i
    };
    let mut out = Split::default();
    let mut f = Fields::default();
    let mut tries = 0;
    let mut pos = blank(0);
    while pos < line.len() {
        if let Some(n) = validate_prefix(&line[pos..], &mut f) {
            out.pieces.push(Piece {
                start: pos,
                end: pos + n,
                fields: f,
                may_nest: false,
            });
            pos = blank(pos + n);
            continue;
        }
        let mut found = None;
        let mut torn = Torn {
            at: pos,
            in_str: false,
            esc: false,
            known: line[pos..].starts_with(b"{\""),
        };
        for q in memchr::memmem::find_iter(&line[pos + 1..], b"{\"type\":") {
            if tries == MAX_TORN_CANDIDATES {
                break;
            }
            let q = pos + 1 + q;
            if !may_name_line_type(&line[q + 8..]) {
                continue;
            }
            tries += 1;
            let Some(n) = validate_prefix(&line[q..], &mut f) else {
                continue;
            };
            torn.advance(line, q);
            if !is_line_type(&line[q..], f.ty) {
                continue;
            }
            let may_nest = torn.may_nest(line, pos, q);
            if !may_nest || blank(q + n) == line.len() {
                found = Some((q, n, may_nest));
                break;
            }
        }
        let Some((q, n, may_nest)) = found else {
            out.fragments.push((pos, line.len()));
            break;
        };
        out.fragments.push((pos, q));
        out.pieces.push(Piece {
            start: q,
            end: q + n,
            fields: f,
            may_nest,
        });
        pos = blank(q + n);
    }
    (!out.pieces.is_empty()).then_some(out)
}

/// How a JSON reader would stand in a fragment's bytes (from its first byte): inside a
/// string or not. Only a fragment that starts as a record does (`{"`) starts outside a
/// string; in one that starts otherwise (the rest of a record a raw LF split, or two
/// writers interleaved) a byte's string state is not known, and `may_nest` takes it as
/// outside (`_reader.py` `_Torn` is the same rule).
struct Torn {
    /// Bytes before this are read.
    at: usize,
    in_str: bool,
    /// The last byte read is a `\\` inside a string.
    esc: bool,
    /// The fragment starts a record: string states are known.
    known: bool,
}

impl Torn {
    /// Read the fragment's bytes up to `to` (not before `at`).
    fn advance(&mut self, line: &[u8], to: usize) {
        let mut i = self.at;
        while i < to {
            if self.esc {
                self.esc = false;
                i += 1;
                continue;
            }
            if self.in_str {
                let Some(k) = memchr::memchr2(b'"', b'\\', &line[i..to]) else {
                    break;
                };
                if line[i + k] == b'\\' {
                    self.esc = true;
                } else {
                    self.in_str = false;
                }
                i += k + 1;
            } else {
                let Some(k) = memchr::memchr(b'"', &line[i..to]) else {
                    break;
                };
                self.in_str = true;
                i += k + 1;
            }
        }
        self.at = self.at.max(to);
    }

    /// Whether an object starting at `q` (read up to) could be a value nested in the
    /// record the fragment from `from` is a cut piece of: outside a string, right after
    /// `[`, `,` or `:`. Anywhere else JSON allows no value, so the object can only be
    /// a record glued on after the cut.
    fn may_nest(&self, line: &[u8], from: usize, q: usize) -> bool {
        if self.in_str && self.known {
            return false;
        }
        let mut i = q;
        while i > from && matches!(line[i - 1], b' ' | b'\t' | b'\r') {
            i -= 1;
        }
        i > from && matches!(line[i - 1], b'[' | b',' | b':')
    }
}

/// Whether a recovered suffix's `type` names one of Pi's entry types (or `session`, a
/// header behind a torn fragment). A content block
/// (`text`, `toolCall`, `thinking`, `image`) cut at its end and then ended by a bare
/// `\n` (Pi 0.84.4+ ends an unterminated last line when it loads the file) validates
/// as "a fragment, then an object"; only an entry can have been appended behind a
/// torn fragment. Pi itself recovers nothing: an invalid line is skipped.
/// Whether the value after a `{"type":` (`rest`) may name an entry type or `session`,
/// from its bytes alone: a string with no escape that is no such name cannot (a
/// content block: `text`, `toolCall`, `thinking`, `image`; nor can a value that is no
/// string), so it costs no try of the line's [`MAX_TORN_CANDIDATES`]. Reads at most
/// the longest name's length past the quote (`_reader.py` `_may_name_line_type`).
fn may_name_line_type(rest: &[u8]) -> bool {
    const LONGEST: usize = 21; // "thinking_level_change"; checked by a test
    let i = rest
        .iter()
        .position(|&c| !matches!(c, b' ' | b'\t' | b'\r'))
        .unwrap_or(rest.len());
    if rest.get(i) != Some(&b'"') {
        return false;
    }
    let window = &rest[i + 1..rest.len().min(i + 2 + LONGEST)];
    match memchr::memchr2(b'"', b'\\', window) {
        None => false,
        Some(k) if window[k] == b'\\' => true,
        Some(k) => EntryKind::from_name(&window[..k]) != EntryKind::Unknown,
    }
}

fn is_line_type(s: &[u8], ty: Val) -> bool {
    str_bytes(s, ty).is_some_and(|t| EntryKind::from_name(&t) != EntryKind::Unknown)
}

/// A JSON number's value as `float()` reads its text (out of range: ±inf; 0 for text
/// that is not one: the validator already judged it a number).
pub(crate) fn json_number(text: &[u8]) -> f64 {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// A message's time as Pi reads it (`getLastActivityTime`, a usage record's time): its
/// numeric `message.timestamp`, else the entry's time (`entry_ms`). `obj` is the line
/// `f` was read from.
pub(crate) fn message_time(obj: &[u8], f: &Fields, entry_ms: Option<f64>) -> Option<f64> {
    match f.msg_timestamp {
        Val::Num { start, end } => Some(json_number(&obj[start..end])),
        _ => entry_ms,
    }
}

/// `last` with activity time `t` met: the largest time so far, at least 0
/// (`getLastActivityTime` starts from 0).
pub(crate) fn later_activity(last: Option<f64>, t: f64) -> Option<f64> {
    Some(last.unwrap_or(0.0).max(t))
}

#[cfg(test)]
mod tests;
