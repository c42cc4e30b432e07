use super::*;

fn verdict(s: &[u8]) -> Verdict {
    let mut f = Fields::default();
    let v = validate(s, &mut f);
    same_as_line_mode(s, v, &f);
    v
}

/// `validate_line` on `s` + a line ending + more lines agrees with `validate` on `s`
/// (for an `s` without `\n`, i.e. a line): the same object verdict and fields.
fn same_as_line_mode(s: &[u8], v: Verdict, f: &Fields) {
    if s.contains(&b'\n') {
        return;
    }
    for rest in [&b"\n"[..], b"\r\n{\"a\":1}\n", b"\n\"\\", b"\n}"] {
        let mut buf = s.to_vec();
        buf.extend_from_slice(rest);
        let mut g = Fields::default();
        let got = validate_line(&buf, &mut g);
        let crlf = usize::from(rest.starts_with(b"\r"));
        assert_eq!(
            got,
            (v == Verdict::Object).then_some(s.len() + crlf),
            "{:?}",
            String::from_utf8_lossy(s)
        );
        if got.is_some() {
            assert_eq!(&g, f);
        }
    }
    // No line ending at all: never an object in line mode.
    assert_eq!(validate_line(s, &mut Fields::default()), None);
}

fn field(line: &[u8], pick: impl Fn(&Fields) -> Val) -> Option<Vec<u8>> {
    let mut f = Fields::default();
    assert_eq!(validate(line, &mut f), Verdict::Object);
    str_bytes(line, pick(&f)).map(|c| c.into_owned())
}

#[test]
fn literals_and_numbers() {
    for ok in [
        "0",
        "-0",
        "1e400",
        "-1.5E+3",
        "12.0e-1",
        "true",
        "false",
        "null",
        " \t\r\n[1] ",
        "\"\"",
        "[]",
        "{}",
        "[[],{}]",
    ] {
        assert_ne!(verdict(ok.as_bytes()), Verdict::Invalid, "{ok}");
    }
    for bad in [
        "NaN",
        "Infinity",
        "-Infinity",
        "01",
        "1.",
        ".5",
        "-",
        "+1",
        "1e",
        "1e+",
        "tru",
        "nul",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "{\"a\" 1}",
        "{1:2}",
        "",
        " ",
        "\u{feff}{}",
        "{}x",
        "[",
        "{\"a\":",
        "\"abc",
        "'a'",
        "[1]]",
    ] {
        assert_eq!(verdict(bad.as_bytes()), Verdict::Invalid, "{bad:?}");
    }
}

#[test]
fn big_integers_follow_python_digit_limit() {
    let ok = "1".repeat(MAX_INT_DIGITS);
    assert_eq!(verdict(ok.as_bytes()), Verdict::NotObject);
    assert_eq!(verdict(format!("-{ok}").as_bytes()), Verdict::NotObject);
    let bad = "1".repeat(MAX_INT_DIGITS + 1);
    assert_eq!(verdict(bad.as_bytes()), Verdict::Invalid);
    // Floats have no such limit.
    assert_eq!(verdict(format!("{bad}.0").as_bytes()), Verdict::NotObject);
    assert_eq!(verdict(format!("{bad}e1").as_bytes()), Verdict::NotObject);
}

#[test]
fn strings_and_escapes() {
    for ok in [
        r#""\"\\\/\b\f\n\r\t""#,
        r#""\u0041\u00e9\uD83D\uDE00\udc00\uD800""#,
        "\"raw \u{2028} \u{85} é\"",
        "\"\x7f\"",
    ] {
        assert_eq!(verdict(ok.as_bytes()), Verdict::NotObject, "{ok}");
    }
    for bad in [
        r#""\x""#,
        r#""\u12""#,
        r#""\u12G4""#,
        r#""\'""#,
        "\"a\u{0}\"",
        "\"\t\"",
        "\"\n\"",
        "\"\u{1f}\"",
        r#""\"#,
    ] {
        assert_eq!(verdict(bad.as_bytes()), Verdict::Invalid, "{bad:?}");
    }
    // Invalid UTF-8 inside a string is not a JSON error (it is reported separately).
    assert_eq!(verdict(b"\"\xff\xfe\""), Verdict::NotObject);
    assert_eq!(verdict(b"[\xff]"), Verdict::Invalid);
}

#[test]
fn every_escape_decodes_like_json_loads() {
    let line = br#"{"id":"a\"b\\c\/d\be\ff\ng\rh\ti\u0041\u00e9\u20ac\ud83d\ude00"}"#;
    let got = field(line, |f| f.id).unwrap();
    let want = "a\"b\\c/d\u{8}e\u{c}f\ng\rh\tiAé€😀".as_bytes();
    assert_eq!(got, want);
    // Lone surrogates: 3-byte generalized UTF-8 (Python's surrogatepass).
    let got = field(br#"{"id":"x\ud800y\udc00\ud800\ud800"}"#, |f| f.id).unwrap();
    assert_eq!(
        got,
        b"x\xed\xa0\x80y\xed\xb0\x80\xed\xa0\x80\xed\xa0\x80".to_vec()
    );
    // High surrogate followed by a non-low escape stays lone.
    let got = field(br#"{"id":"\ud800\u0041"}"#, |f| f.id).unwrap();
    assert_eq!(got, b"\xed\xa0\x80A".to_vec());
    // Invalid UTF-8 is replaced like from_utf8_lossy, also next to escapes.
    let got = field(b"{\"id\":\"a\xffb\\n\xe2\x82\"}", |f| f.id).unwrap();
    assert_eq!(got, "a\u{fffd}b\n\u{fffd}".as_bytes());
}

#[test]
fn keys_in_any_order_last_duplicate_wins() {
    let line = br#"{"data":{"id":"inner","type":"x"},"customType":"c","type":"custom","id":"late","parentId":null}"#;
    assert_eq!(field(line, |f| f.id).unwrap(), b"late");
    assert_eq!(field(line, |f| f.ty).unwrap(), b"custom");
    let mut f = Fields::default();
    validate(line, &mut f);
    assert_eq!(f.parent_id, Val::Null);
    let dup = br#"{"id":"a","id":"b","parentId":"p","parentId":7}"#;
    assert_eq!(field(dup, |f| f.id).unwrap(), b"b");
    let mut f = Fields::default();
    validate(dup, &mut f);
    assert_eq!(f.parent_id, Val::Num { start: 45, end: 46 });
    // Escaped keys are keys too.
    assert_eq!(field(br#"{"\u0069d":"esc"}"#, |f| f.id).unwrap(), b"esc");
}

#[test]
fn message_role_from_the_last_message_object() {
    let l = br#"{"type":"message","message":{"content":[{"role":"user"}],"role":"assistant"}}"#;
    assert_eq!(field(l, |f| f.role).unwrap(), b"assistant");
    let l = br#"{"message":{"role":"assistant"},"message":"x"}"#;
    assert_eq!(field(l, |f| f.role), None);
    let l = br#"{"message":{"role":"user"},"message":{"x":{"role":"assistant"}}}"#;
    assert_eq!(field(l, |f| f.role), None);
    let l = br#"{"role":"assistant","message":{}}"#;
    assert_eq!(field(l, |f| f.role), None);
}

#[test]
fn nesting_is_capped_at_max_depth_without_recursion() {
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert_eq!(verdict(ok.as_bytes()), Verdict::NotObject);
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert_eq!(verdict(deep.as_bytes()), Verdict::Invalid);
    let objs = format!("{}1{}", "{\"a\":".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
    assert_eq!(verdict(objs.as_bytes()), Verdict::Object);
    let huge = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(verdict(huge.as_bytes()), Verdict::Invalid);
    assert_eq!(verdict("[".repeat(100_000).as_bytes()), Verdict::Invalid);
}

#[test]
fn every_truncation_is_rejected_without_panic() {
    let line = br#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"h\u00e9llo \"q\" \ud83d\ude00","n":[1,-2.5e3,true,false,null,{}]}}"#;
    assert_eq!(verdict(line), Verdict::Object);
    for i in 0..line.len() {
        assert_eq!(verdict(&line[..i]), Verdict::Invalid, "prefix {i}");
        let _ = scan_line(&line[i..]);
    }
}

/// The pieces of `split_line(line)` as strings, and its fragments.
fn split(line: &[u8]) -> Option<(Vec<&str>, Vec<&str>)> {
    let s = split_line(line)?;
    let text = |a: usize, b: usize| std::str::from_utf8(&line[a..b]).unwrap();
    Some((
        s.pieces.iter().map(|p| text(p.start, p.end)).collect(),
        s.fragments.iter().map(|&(a, b)| text(a, b)).collect(),
    ))
}

#[test]
fn scan_line_flags_utf8_and_split_recovers_torn_fragments() {
    let s = scan_line(b"{\"type\":\"x\",\"id\":\"\xff\"}");
    assert!(s.bad_utf8);
    assert_eq!(s.verdict, Verdict::Object);
    let entry = r#"{"type":"message","id":"b","parentId":null}"#;
    let torn = format!(r#"{{"type":"message","id":"a","mess{entry}"#);
    assert_eq!(scan_line(torn.as_bytes()).verdict, Verdict::Invalid);
    let got = split_line(torn.as_bytes()).unwrap();
    let at = torn.len() - entry.len();
    assert_eq!((got.pieces[0].start, got.pieces[0].end), (at, torn.len()));
    assert_eq!(got.fragments, vec![(0, at)]);
    let id = str_bytes(&torn.as_bytes()[at..], got.pieces[0].fields.id).unwrap();
    assert_eq!(id.as_ref(), b"b");
    // A candidate at 0 that is cut is no piece; a suffix that is not an object is none.
    assert_eq!(split(br#"{"type":"a""#), None);
    assert_eq!(
        split(br#"xx{"type":"label"}"#),
        Some((vec![r#"{"type":"label"}"#], vec!["xx"]))
    );
    // Only an object whose type names an entry type is recovered after a fragment: not
    // a content block (a line cut right after one, then ended by a bare LF), not a
    // non-string type.
    assert_eq!(split(br#"xx{"type":1}"#), None);
    let cut = br#"{"type":"message","id":"a","message":{"content":[{"type":"toolCall","id":"c"}"#;
    assert_eq!(split(cut), None);
    assert_eq!(
        split(br#"xx{"type":"session","id":"h"}"#).unwrap().0,
        vec![r#"{"type":"session","id":"h"}"#]
    );
    // At most MAX_TORN_CANDIDATES tries of a `{"type":` that may name an entry type.
    let mut many = b"x".to_vec();
    for _ in 0..MAX_TORN_CANDIDATES {
        many.extend_from_slice(br#"{"type":"message""#);
    }
    many.extend_from_slice(br#"{"type":"label"}"#);
    assert_eq!(split(&many), None);
    // One whose value names no entry type (a content block's), or is no string, costs
    // no try: the entry behind many of them is found.
    let mut blocks = b"x".to_vec();
    for _ in 0..MAX_TORN_CANDIDATES {
        blocks.extend_from_slice(br#"{"type":"toolCall","id":"c"},{"type":"#);
    }
    blocks.extend_from_slice(br#"{"type":"label"}"#);
    assert_eq!(split(&blocks).unwrap().0, vec![r#"{"type":"label"}"#]);
}

#[test]
fn glued_objects_are_each_a_piece() {
    let a = r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"}{"}]}}"#;
    let b = r#"{"type":"compaction","id":"b","parentId":"a","summary":"s","firstKeptEntryId":"a"}"#;
    let c = r#"{"type":"label","id":"c","parentId":"b","targetId":"a"}"#;
    // Two and three whole objects, blanks between them kept out of every fragment.
    let two = format!("{a}{b}");
    assert_eq!(split(two.as_bytes()), Some((vec![a, b], vec![])));
    let three = format!("{a} \t{b}{c} ");
    assert_eq!(split(three.as_bytes()), Some((vec![a, b, c], vec![])));
    // Any object that starts the line or follows a piece is one, whatever its type.
    let odd = format!(r#"{{"x":1}}{b}"#);
    assert_eq!(split(odd.as_bytes()), Some((vec![r#"{"x":1}"#, b], vec![])));
    // Bytes that are no object are fragments where they are: before, between, after.
    let mixed = format!("{a}garbage{c}");
    assert_eq!(split(mixed.as_bytes()), Some((vec![a, c], vec!["garbage"])));
    let tail = format!("{a} {b}[1,tail");
    assert_eq!(split(tail.as_bytes()), Some((vec![a, b], vec!["[1,tail"])));
    // Behind torn bytes (cut in a string, after a key...) every glued object is read.
    let two = format!(r#"{{"type":"message","id":"x","text":"cut{b}{c}"#);
    let torn = &two[..two.len() - b.len() - c.len()];
    assert_eq!(split(two.as_bytes()), Some((vec![b, c], vec![torn])));
    let key = format!(r#"{{"type":"message","id"{b}{c}"#);
    assert_eq!(split(key.as_bytes()).unwrap().0, vec![b, c]);
    // Behind a record cut where a value may follow, only an object that ends the line.
    let comma = format!(r#"{{"type":"message","id":"x",{b}{c}"#);
    assert_eq!(split(comma.as_bytes()).unwrap().0, vec![c]);
    // A record cut right after a nested entry-shaped object: the nested object is no
    // entry, whether another writer's line, our seal or the line's end follows.
    let cut = format!(r#"{{"type":"custom","id":"t","data":[{c}"#);
    let glued = format!("{cut}{b}");
    assert_eq!(split(glued.as_bytes()), Some((vec![b], vec![&cut[..]])));
    assert_eq!(split(format!("{cut}#").as_bytes()), None);
    let member = format!("{cut},{b}");
    assert_eq!(split(member.as_bytes()).unwrap().0, vec![b]);
    // Each piece's fields are its own.
    let s = split_line(three.as_bytes()).unwrap();
    let ids: Vec<_> = s
        .pieces
        .iter()
        .map(|p| {
            str_bytes(&three.as_bytes()[p.start..], p.fields.id)
                .unwrap()
                .into_owned()
        })
        .collect();
    assert_eq!(ids, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
}

#[test]
fn validate_prefix_ends_where_the_object_ends() {
    let mut f = Fields::default();
    assert_eq!(validate_prefix(br#"{"a":"}"}tail"#, &mut f), Some(9));
    assert_eq!(validate_prefix(br#"{"a":[{}]} {"b":1}"#, &mut f), Some(10));
    assert_eq!(validate_prefix(br#" {"a":1}"#, &mut f), None);
    assert_eq!(validate_prefix(br#"[1]"#, &mut f), None);
    assert_eq!(validate_prefix(br#"{"a":NaN}"#, &mut f), None);
    assert_eq!(validate_prefix(br#"{"a":1"#, &mut f), None);
    let deep = format!(
        "{}{}",
        "{\"a\":".repeat(MAX_DEPTH + 1),
        "}".repeat(MAX_DEPTH + 1)
    );
    assert_eq!(validate_prefix(deep.as_bytes(), &mut f), None);
    let ok = format!("{}1{}x", "{\"a\":".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
    assert_eq!(validate_prefix(ok.as_bytes(), &mut f), Some(ok.len() - 1));
}

// --------------------------------------------------------------------- property test

/// xorshift64*: a small deterministic generator (no proptest dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ATOMS: &[&str] = &[
    "0",
    "-1",
    "1.5e3",
    "1e400",
    "true",
    "false",
    "null",
    "\"\"",
    "\"a\\\"b\"",
    "\"\\u00e9\"",
    "\"\\ud800\"",
    "\"\\ud83d\\ude00\"",
    "\"é€\"",
    "\"\\n\\t\"",
    "123456789012345678901234",
];
const KEYS: &[&str] = &[
    "type",
    "id",
    "parentId",
    "timestamp",
    "message",
    "role",
    "\\u0069d",
    "data",
    "type",
];

fn gen_value(r: &mut Rng, depth: u32, out: &mut String) {
    match if depth > 4 { 0 } else { r.below(4) } {
        0 | 1 => out.push_str(ATOMS[r.below(ATOMS.len() as u64) as usize]),
        2 => {
            out.push('[');
            for i in 0..r.below(4) {
                if i > 0 {
                    out.push(',');
                }
                gen_value(r, depth + 1, out);
            }
            out.push(']');
        }
        _ => gen_object(r, depth + 1, out),
    }
}

fn gen_object(r: &mut Rng, depth: u32, out: &mut String) {
    out.push('{');
    for i in 0..r.below(6) {
        if i > 0 {
            out.push(',');
        }
        if r.below(8) == 0 {
            out.push(' ');
        }
        out.push('"');
        out.push_str(KEYS[r.below(KEYS.len() as u64) as usize]);
        out.push_str("\":");
        gen_value(r, depth, out);
    }
    out.push('}');
}

/// serde_json's view of a top-level string field (last duplicate wins there too).
fn oracle_str(v: &serde_json::Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_owned)
}

#[test]
fn scanner_agrees_with_serde_json_on_generated_and_mutated_lines() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for _ in 0..20_000 {
        let mut s = String::new();
        gen_object(&mut r, 0, &mut s);
        let mut bytes = s.into_bytes();
        // Mutate a third of the lines: truncate, flip a byte, or insert a character.
        match r.below(6) {
            0 => bytes.truncate(r.below(bytes.len() as u64 + 1) as usize),
            1 if !bytes.is_empty() => {
                let i = r.below(bytes.len() as u64) as usize;
                bytes[i] = b"{}[]\",:\\ 0x\x01\xff"[r.below(13) as usize];
            }
            _ => {}
        }
        let mut f = Fields::default();
        let ours = validate(&bytes, &mut f);
        same_as_line_mode(&bytes, ours, &f);
        // serde_json accepts big numbers and lone surrogates differently; compare on
        // what both define identically: validity of lines without those atoms.
        let text = String::from_utf8_lossy(&bytes);
        let comparable = !text.contains("\\ud")
            && !text.contains("1e400")
            && !text.contains("123456789012345678901234");
        let theirs = serde_json::from_slice::<serde_json::Value>(&bytes);
        if comparable && std::str::from_utf8(&bytes).is_ok() {
            assert_eq!(
                ours != Verdict::Invalid,
                theirs.is_ok(),
                "{:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        if let (Verdict::Object, Ok(v)) = (ours, &theirs) {
            for (key, val) in [("id", f.id), ("type", f.ty), ("parentId", f.parent_id)] {
                let got =
                    str_bytes(&bytes, val).map(|c| String::from_utf8(c.into_owned()).unwrap());
                let raw_key_escaped = text.contains("\\u0069d");
                if key != "id" || !raw_key_escaped {
                    assert_eq!(got, oracle_str(v, key), "{key} in {text}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 5_000, "only {checked} objects compared");
}

#[test]
fn random_bytes_never_panic() {
    let mut r = Rng(42);
    for _ in 0..20_000 {
        let n = r.below(64) as usize;
        let v: Vec<u8> = (0..n)
            .map(|_| b"{}[]\",:\\ 0123456789eE.+-tfnrlsua\x00\x1f\x80\xff"[r.below(36) as usize])
            .collect();
        let ls = scan_line(&v);
        let _ = crate::time::parse_iso_ms(&v);
        same_as_line_mode(&v, ls.verdict, &ls.fields);
        if let Some(s) = split_line(&v) {
            for p in &s.pieces {
                assert_eq!(
                    validate(&v[p.start..p.end], &mut Fields::default()),
                    Verdict::Object
                );
            }
        }
    }
}

/// Throughput of the pieces of a scan over a big file (set `SESSIONTREE_BENCH_FILE`;
/// `validate_line walk` is the scan's fast path, line after line as `lines.rs` calls it;
/// `index::tests::bench_open` times a whole `Index::from_image`):
/// `cargo test --release --no-default-features -- --ignored --nocapture bench_scan`.
#[test]
#[ignore]
fn bench_scan() {
    let Ok(path) = std::env::var("SESSIONTREE_BENCH_FILE") else {
        return;
    };
    let data = std::fs::read(path).unwrap();
    let gb = data.len() as f64 / 1e9;
    // Best of 5 in this thread's CPU time (steadier than wall time on a shared box);
    // `BENCH_ONLY=name` runs the timings whose name holds it.
    let cpu = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    };
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let time = |name: &str, f: &mut dyn FnMut() -> usize| {
        if !name.contains(only.as_str()) {
            return;
        }
        let mut best = f64::MAX;
        let mut r = 0;
        for _ in 0..5 {
            let t = cpu();
            r = f();
            best = best.min(cpu() - t);
        }
        println!("{name:<28} {:>6.3}s {:>6.2} GB/s  ({r})", best, gb / best);
    };
    time("memchr newlines", &mut || {
        memchr::memchr_iter(b'\n', &data).count()
    });
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    time("std from_utf8 per line", &mut || {
        lines
            .iter()
            .filter(|l| std::str::from_utf8(l).is_ok())
            .count()
    });
    time("simdutf8 per line", &mut || {
        lines
            .iter()
            .filter(|l| simdutf8::basic::from_utf8(l).is_ok())
            .count()
    });
    let mut f = Fields::default();
    time("validate per line", &mut || {
        lines
            .iter()
            .filter(|l| validate(l, &mut f) == Verdict::Object)
            .count()
    });
    time("validate_line walk", &mut || {
        let mut pos = 0;
        let mut n = 0;
        while pos < data.len() {
            match validate_line(&data[pos..], &mut f) {
                Some(k) => {
                    pos += k + 1;
                    n += 1;
                }
                None => {
                    pos += memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |p| p + 1);
                }
            }
        }
        n
    });
    time("scan_line per line", &mut || {
        lines
            .iter()
            .filter(|l| scan_line(l).verdict == Verdict::Object)
            .count()
    });
}

// ------------------------------------------------------------- stage 1 (block.rs)

mod stage1 {
    use super::super::block::{self, Classes, Classify, Strings, BLOCK};
    use super::super::{validate_with, Fields, Verdict};
    use super::Rng;

    /// Every classifier this CPU can run, against the scalar reference.
    fn all_classifiers(b: &[u8; BLOCK]) -> Vec<(&'static str, Classes)> {
        let mut v = vec![
            ("swar", block::classify_swar(b)),
            ("baseline", block::Baseline.classify(b)),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            v.push(("sse2", block::classify_sse2(b)));
            if let Some(a) = block::Avx2::detect() {
                v.push(("avx2", a.classify(b)));
            }
        }
        v
    }

    fn check_block(b: &[u8; BLOCK]) {
        let want = block::classify_scalar(b);
        for (name, got) in all_classifiers(b) {
            assert_eq!(got, want, "{name} on {b:?}");
        }
    }

    #[test]
    fn every_byte_value_at_every_position() {
        for fill in [b' ', b'a', b'\\', 0xff] {
            for pos in 0..BLOCK {
                for v in 0..=255u8 {
                    let mut b = [fill; BLOCK];
                    b[pos] = v;
                    check_block(&b);
                }
            }
        }
    }

    #[test]
    fn random_blocks() {
        let mut r = Rng(7);
        let alphabet = b"\"\\/bfnrtu0aA \x00\x1f\x20\x7f\x80\xff";
        for _ in 0..20_000 {
            let mut b = [0u8; BLOCK];
            let dense = r.below(2) == 0;
            for x in &mut b {
                *x = if dense {
                    alphabet[r.below(alphabet.len() as u64) as usize]
                } else {
                    r.next() as u8
                };
            }
            check_block(&b);
        }
    }

    #[test]
    fn escaped_matches_scalar() {
        let mut r = Rng(11);
        let mut cases = vec![0, u64::MAX, 1, 1 << 63, 0x5555_5555_5555_5555, ODD];
        const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
        for _ in 0..100_000 {
            // Runs of backslashes: AND of random words makes sparse, OR dense masks.
            let m = match r.below(3) {
                0 => r.next(),
                1 => r.next() & r.next(),
                _ => r.next() | r.next(),
            };
            cases.push(m);
        }
        for m in cases {
            for carry in [0, 1] {
                assert_eq!(
                    block::escaped(m, carry),
                    block::escaped_scalar(m, carry),
                    "{m:#x} carry {carry}"
                );
            }
        }
    }

    /// Reference string skipper: one byte at a time.
    fn skip_scalar(s: &[u8], mut i: usize) -> Option<(usize, bool)> {
        let mut esc = false;
        loop {
            match *s.get(i)? {
                b'"' => return Some((i + 1, esc)),
                b'\\' => {
                    esc = true;
                    match *s.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let h = s.get(i + 2..i + 6)?;
                            if !h.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => i += 1,
            }
        }
    }

    fn skip_all(s: &[u8], start: usize) -> Vec<Option<(usize, bool)>> {
        let mut v = vec![Strings::new(block::Baseline).skip_string(s, start)];
        #[cfg(target_arch = "x86_64")]
        if let Some(a) = block::Avx2::detect() {
            v.push(Strings::new(a).skip_string(s, start));
        }
        v
    }

    #[test]
    fn strings_across_block_boundaries() {
        // Bodies of every length around 1-3 windows, with escapes and backslash runs
        // placed so they straddle window edges, and every end of the line.
        let pieces: &[&[u8]] = &[
            b"a",
            b"\\\\",
            b"\\\"",
            b"\\n",
            b"\\u00e9",
            b"\\\\\\\\\\\\",
            b"\xc3\xa9",
        ];
        let mut r = Rng(3);
        for _ in 0..30_000 {
            let mut body = Vec::new();
            let target = r.below(3 * BLOCK as u64) as usize;
            while body.len() < target {
                let p = if r.below(3) == 0 {
                    pieces[r.below(pieces.len() as u64) as usize]
                } else {
                    b"x"
                };
                body.extend_from_slice(p);
            }
            let lead = r.below(BLOCK as u64) as usize;
            let mut s = vec![b' '; lead];
            s.push(b'"');
            s.extend_from_slice(&body);
            s.push(b'"');
            s.extend_from_slice(b",\"next\"");
            // Sometimes break it: cut it, or plant a control byte, stray `\`, bad `\u`.
            let kept = r.below(5);
            match kept {
                0 => s.truncate(lead + 1 + r.below(body.len() as u64 + 2) as usize),
                1 => {
                    let at = lead + 1 + r.below(body.len() as u64 + 1) as usize;
                    let bad: &[u8] = [&b"\x01"[..], b"\\x", b"\\u12", b"\\"][r.below(4) as usize];
                    s.splice(at..at, bad.iter().copied());
                }
                _ => {}
            }
            let want = skip_scalar(&s, lead + 1);
            for got in skip_all(&s, lead + 1) {
                assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&s));
            }
            // A string the validator accepted is skipped again on its quotes and
            // backslashes alone, to the same end.
            if kept >= 2 {
                let got = block::skip_valid_string(&s, lead + 1);
                assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&s));
            }
        }
    }

    #[test]
    fn short_lines_and_last_partial_block() {
        let mut r = Rng(5);
        let alphabet = b"\"\\nu0a \x01";
        for _ in 0..100_000 {
            let n = r.below(2 * BLOCK as u64 + 2) as usize;
            let mut s: Vec<u8> = (0..n)
                .map(|_| alphabet[r.below(alphabet.len() as u64) as usize])
                .collect();
            if !s.is_empty() {
                s[0] = b'"';
            }
            let want = skip_scalar(&s, 1);
            for got in skip_all(&s, 1) {
                assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&s));
            }
        }
    }

    #[test]
    fn reused_window_serves_later_strings() {
        // Many short strings in one window, some with escapes, and a backslash run
        // ending exactly at a window edge.
        for shift in 0..BLOCK {
            let mut line = b"[".to_vec();
            line.extend(std::iter::repeat_n(b' ', shift));
            line.extend_from_slice(br#""a\\","\"","b","c\\\\\\","\u0041",1,"x"#);
            line.extend(std::iter::repeat_n(b'\\', 2 * (shift % 5)));
            line.extend_from_slice(br#"y",null,"\\\\"]"#);
            let mut f = Fields::default();
            assert_eq!(
                validate_with::<_, false, false>(&line, &mut f, block::Baseline).0,
                Verdict::NotObject,
                "{shift}"
            );
            let odd = line.iter().position(|&c| c == b'y').unwrap();
            let mut bad = line.clone();
            bad.insert(odd, b'\\'); // `\y`: invalid escape
            assert_eq!(
                validate_with::<_, false, false>(&bad, &mut f, block::Baseline).0,
                Verdict::Invalid
            );
            #[cfg(target_arch = "x86_64")]
            if let Some(a) = block::Avx2::detect() {
                assert_eq!(
                    validate_with::<_, false, false>(&line, &mut f, a).0,
                    Verdict::NotObject
                );
                assert_eq!(
                    validate_with::<_, false, false>(&bad, &mut f, a).0,
                    Verdict::Invalid
                );
            }
        }
    }
}

#[test]
fn value_text_spells_numbers_and_literals_whole() {
    // A header's non-string `type` is named in the error (`type is -1.5e+3`): a number's
    // sign, point and exponent are part of it.
    let s = br#"{"type":-1.5e+3,"id":"h"}"#;
    let mut f = Fields::default();
    assert_eq!(validate(s, &mut f), Verdict::Object);
    assert_eq!(value_text(s, f.ty).as_deref(), Some("-1.5e+3"));
    let s = br#"{"type":[1,{"a":"]"}],"id":"h"}"#;
    assert_eq!(validate(s, &mut f), Verdict::Object);
    assert_eq!(value_text(s, f.ty).as_deref(), Some(r#"[1,{"a":"]"}]"#));
}

#[test]
fn long_number_flags_the_digit_runs_decode_line_looks_for() {
    let long = |s: &str| {
        let mut f = Fields::default();
        assert_eq!(validate(s.as_bytes(), &mut f), Verdict::Object, "{s}");
        f.long_number
    };
    assert!(long(r#"{"a":1234567890123456789}"#));
    assert!(long(r#"{"a":[-12345678901234567890]}"#));
    assert!(long(r#"{"a":1e1234567890123456789}"#));
    assert!(long(r#"{"a":{"b":1.5e-0000000000000000001}}"#));
    assert!(!long(r#"{"a":123456789012345678}"#)); // 18 digits: orjson is exact
    assert!(!long(r#"{"a":0.1234567890123456789012}"#)); // after `.`: a float either way
    assert!(!long(r#"{"a":"12345678901234567890123"}"#)); // in a string
    assert!(!long(r#"{"1234567890123456789012":1}"#));
}

// ------------------------------------------- differential test against a reference

/// An independent reference for [`validate`]: a byte-at-a-time recursive descent
/// written from the rules (`json.loads` with `_jsonl.decode_line`'s: `NaN` and
/// `Infinity` invalid, at most [`MAX_DEPTH`] nested containers, integers of at most
/// [`MAX_INT_DIGITS`] digits, lone surrogate escapes valid, bytes >= 0x80 taken as
/// they are). Returns the verdict and, for an object, its top-level members as
/// (decoded key, first byte of the value, one past its last).
struct Reference<'a> {
    s: &'a [u8],
    i: usize,
}

type Members = Vec<(Vec<u8>, usize, usize)>;

impl Reference<'_> {
    fn check(s: &[u8]) -> (Verdict, Members) {
        let mut r = Reference { s, i: 0 };
        let mut members = Vec::new();
        r.ws();
        let obj = r.peek() == Some(b'{');
        let ok = r.value(0, Some(&mut members)).is_some() && {
            r.ws();
            r.i == s.len()
        };
        match (ok, obj) {
            (false, _) => (Verdict::Invalid, Vec::new()),
            (true, true) => (Verdict::Object, members),
            (true, false) => (Verdict::NotObject, Vec::new()),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A value at nesting `depth` (containers already open around it).
    fn value(&mut self, depth: usize, top: Option<&mut Members>) -> Option<()> {
        match self.peek()? {
            b'{' => {
                if depth == MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                self.ws();
                if self.eat(b'}').is_some() {
                    return Some(());
                }
                let mut top = top;
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    let start = self.i;
                    self.value(depth + 1, None)?;
                    if let Some(m) = top.as_deref_mut() {
                        m.push((key, start, self.i));
                    }
                    self.ws();
                    if self.eat(b',').is_none() {
                        return self.eat(b'}');
                    }
                }
            }
            b'[' => {
                if depth == MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                self.ws();
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1, None)?;
                    self.ws();
                    if self.eat(b',').is_none() {
                        return self.eat(b']');
                    }
                }
            }
            b'"' => self.string().map(drop),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => self.number(),
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        (self.s.get(self.i..self.i + w.len())? == w).then(|| self.i += w.len())
    }

    fn digits(&mut self) -> usize {
        let from = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - from
    }

    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        let int = match self.peek()? {
            b'0' => {
                self.i += 1;
                1
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        };
        let mut float = false;
        if self.eat(b'.').is_some() {
            (self.digits() > 0).then_some(())?;
            float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            (self.digits() > 0).then_some(())?;
            float = true;
        }
        (float || int <= MAX_INT_DIGITS).then_some(())
    }

    /// A string; its body decoded (escapes resolved, a lone surrogate as its 3-byte
    /// form; other bytes as they are).
    fn string(&mut self) -> Option<Vec<u8>> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            match c {
                b'"' => return Some(out),
                0..=0x1f => return None,
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    let simple = match e {
                        b'"' | b'\\' | b'/' => e,
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp)
                                && self.s.get(self.i..self.i + 2) == Some(b"\\u")
                            {
                                let save = self.i;
                                self.i += 2;
                                match self.hex4() {
                                    Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                    }
                                    _ => self.i = save,
                                }
                            }
                            let mut buf = [0u8; 4];
                            match char::from_u32(cp) {
                                Some(ch) => {
                                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes())
                                }
                                None => out.extend_from_slice(&[
                                    0xE0 | (cp >> 12) as u8,
                                    0x80 | ((cp >> 6) & 0x3F) as u8,
                                    0x80 | (cp & 0x3F) as u8,
                                ]),
                            }
                            continue;
                        }
                        _ => return None,
                    };
                    out.push(simple);
                }
                _ => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
        if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }
}

/// What a top-level member's value is, as [`Val`] records it.
fn reference_val(s: &[u8], start: usize, end: usize) -> Val {
    match s[start] {
        b'"' => Val::Str {
            start: start + 1,
            end: end - 1,
            escaped: s[start + 1..end - 1].contains(&b'\\'),
        },
        b'n' => Val::Null,
        b'-' | b'0'..=b'9' => Val::Num { start, end },
        _ => Val::Other { start },
    }
}

/// Pi-shaped lines of every size, with strings that cross 64-byte windows (and run
/// past the validator's prefetch distance), escape runs at window edges, non-ASCII
/// text, numbers of every form, nesting, and keys spelled with escapes.
fn gen_line(r: &mut Rng) -> Vec<u8> {
    fn text(r: &mut Rng, out: &mut Vec<u8>) {
        let pieces: [&[u8]; 12] = [
            b"a",
            b"word ",
            b"\\n",
            b"\\\"",
            b"\\\\",
            b"\\u00e9",
            b"\\ud83d\\ude00",
            b"\\udc00",
            "é€😀".as_bytes(),
            b"{\\\"type\\\":\\\"x\\\"}",
            b"\\/",
            b"\\t",
        ];
        let n = match r.below(8) {
            0 => 1500 + r.below(6000),
            1 => 60 + r.below(140),
            _ => r.below(24),
        };
        let mut len = 0;
        while len < n {
            let p: &[u8] = if r.below(3) == 0 {
                pieces[r.below(pieces.len() as u64) as usize]
            } else {
                b"xyz"
            };
            out.extend_from_slice(p);
            len += p.len() as u64;
        }
    }
    fn value(r: &mut Rng, depth: u32, out: &mut Vec<u8>) {
        match if depth > 4 { r.below(3) } else { r.below(6) } {
            0 => {
                out.push(b'"');
                text(r, out);
                out.push(b'"');
            }
            1 => {
                let nums: [&[u8]; 10] = [
                    b"0",
                    b"-0",
                    b"1756713717119",
                    b"0.035720749999999996",
                    b"1e400",
                    b"-2.5E-3",
                    b"12345678901234567890123",
                    b"true",
                    b"false",
                    b"null",
                ];
                if r.below(40) == 0 {
                    // An integer at the digit limit or one past it.
                    let n = MAX_INT_DIGITS + r.below(2) as usize;
                    out.extend(std::iter::repeat_n(b'9', n));
                } else {
                    out.extend_from_slice(nums[r.below(nums.len() as u64) as usize]);
                }
            }
            2 => out.extend_from_slice(b"\"\""),
            3 => {
                out.push(b'[');
                for k in 0..r.below(4) {
                    if k > 0 {
                        out.push(b',');
                    }
                    value(r, depth + 1, out);
                }
                out.push(b']');
            }
            _ => object(r, depth + 1, out),
        }
    }
    fn object(r: &mut Rng, depth: u32, out: &mut Vec<u8>) {
        let keys: [&[u8]; 12] = [
            b"type",
            b"id",
            b"parentId",
            b"timestamp",
            b"message",
            b"role",
            b"content",
            b"usage",
            b"\\u0069d",
            b"text",
            b"type",
            b"cost",
        ];
        out.push(b'{');
        for k in 0..r.below(7) {
            if k > 0 {
                out.push(b',');
            }
            if r.below(10) == 0 {
                out.extend_from_slice(b" \t");
            }
            out.push(b'"');
            out.extend_from_slice(keys[r.below(keys.len() as u64) as usize]);
            out.extend_from_slice(b"\":");
            value(r, depth, out);
        }
        out.push(b'}');
    }
    let mut line = Vec::new();
    object(r, 0, &mut line);
    line
}

/// Break a line the ways a torn write, a bad writer or bit rot would: cut it, flip,
/// insert or delete a byte (often a structural one, often at a window edge), plant a
/// control byte, a stray `\`, a bad escape or invalid UTF-8.
fn mutate(r: &mut Rng, line: &mut Vec<u8>) {
    let at = |r: &mut Rng, n: usize| -> usize {
        if r.below(3) == 0 && n > 64 {
            (r.below((n / 64) as u64) as usize * 64 + 63 + r.below(3) as usize).min(n)
        } else {
            r.below(n as u64 + 1) as usize
        }
    };
    let n = line.len();
    let k = at(r, n);
    let junk: [&[u8]; 12] = [
        b"\"", b"\\", b"{", b"}", b"[", b"]", b",", b":", b"\x01", b"\xff", b"\\x", b"\\u12",
    ];
    match r.below(5) {
        0 => line.truncate(k),
        1 if k < n => line[k] = junk[r.below(junk.len() as u64) as usize][0],
        2 => {
            let j = junk[r.below(junk.len() as u64) as usize];
            line.splice(k..k, j.iter().copied());
        }
        3 if k < n => {
            line.remove(k);
        }
        _ => {
            let j: &[u8] = [
                &b"NaN"[..],
                b"Infinity",
                b"-Infinity",
                b"01",
                b"1.",
                b"\x00",
            ][r.below(6) as usize];
            line.splice(k..k, j.iter().copied());
        }
    }
}

#[test]
fn validator_agrees_with_a_reference_on_random_and_broken_lines() {
    let mut r = Rng(0x5eed_2705);
    let (mut objects, mut invalid) = (0, 0);
    for round in 0..6000 {
        let mut line = gen_line(&mut r);
        if round % 2 == 1 {
            for _ in 0..=r.below(2) {
                mutate(&mut r, &mut line);
            }
        }
        // A line holds no `\n`: the scan splits there (a `\n` escape is `\\n`).
        line.retain(|&c| c != b'\n');
        let (want, members) = Reference::check(&line);
        let mut f = Fields::default();
        let got = validate(&line, &mut f);
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&line));
        // The scan's fast path (followed by the next line) and the line as the scan
        // frames it agree with it (`same_as_line_mode`).
        same_as_line_mode(&line, got, &f);
        assert_eq!(scan_line(&line).verdict, want);
        if want != Verdict::Object {
            invalid += usize::from(want == Verdict::Invalid);
            continue;
        }
        objects += 1;
        for (key, pick) in [
            (&b"type"[..], f.ty),
            (b"id", f.id),
            (b"parentId", f.parent_id),
            (b"timestamp", f.timestamp),
        ] {
            // The last duplicate of the key wins, as in `json.loads`.
            let want = members
                .iter()
                .rev()
                .find(|(k, ..)| k == key)
                .map_or(Val::Absent, |&(_, a, b)| reference_val(&line, a, b));
            assert_eq!(
                pick,
                want,
                "{} in {:?}",
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(&line)
            );
        }
    }
    assert!(
        objects > 2000 && invalid > 1000,
        "{objects} objects, {invalid} invalid"
    );
}

#[test]
fn reference_follows_the_rules() {
    // The reference itself, on the cases the rules name.
    for (s, want) in [
        (&b"{}"[..], Verdict::Object),
        (b"[NaN]", Verdict::Invalid),
        (b"-Infinity", Verdict::Invalid),
        (b"1e400", Verdict::NotObject),
        (b"\"\\ud800\"", Verdict::NotObject),
        (b"\"\xff\"", Verdict::NotObject),
        (b"\"a\x1fb\"", Verdict::Invalid),
        (b"{\"a\":1,}", Verdict::Invalid),
        (b" {\"a\" : [1 , 2]}\r", Verdict::Object),
    ] {
        assert_eq!(
            Reference::check(s).0,
            want,
            "{:?}",
            String::from_utf8_lossy(s)
        );
    }
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert_eq!(
        Reference::check(deep(MAX_DEPTH).as_bytes()).0,
        Verdict::NotObject
    );
    assert_eq!(
        Reference::check(deep(MAX_DEPTH + 1).as_bytes()).0,
        Verdict::Invalid
    );
    let digits = "7".repeat(MAX_INT_DIGITS + 1);
    assert_eq!(Reference::check(digits.as_bytes()).0, Verdict::Invalid);
    assert_eq!(
        Reference::check(format!("{digits}.5").as_bytes()).0,
        Verdict::NotObject
    );
    // Against the validator on the same cases.
    assert_eq!(verdict(deep(MAX_DEPTH).as_bytes()), Verdict::NotObject);
    assert_eq!(verdict(deep(MAX_DEPTH + 1).as_bytes()), Verdict::Invalid);
}

#[test]
fn may_name_line_type_reads_far_enough() {
    // The window it reads holds the longest name and its closing quote.
    let longest = crate::kind::ENTRY_TYPES
        .iter()
        .chain(&["session"])
        .map(|t| t.len())
        .max()
        .unwrap();
    assert_eq!(longest, 21);
    for t in crate::kind::ENTRY_TYPES.iter().chain(&["session"]) {
        assert!(may_name_line_type(format!("\"{t}\",\"id\":1}}").as_bytes()));
        assert!(may_name_line_type(format!(" \"{t}\"}}").as_bytes()));
    }
    for rest in [
        &b"\"text\",\"text\":\"x\"}"[..],
        b"\"toolCall\"",
        b"1}",
        b"null}",
        b"\"messages\"",
        b"\"message",
    ] {
        assert!(
            !may_name_line_type(rest),
            "{}",
            String::from_utf8_lossy(rest)
        );
    }
    assert!(may_name_line_type(b"\"mess\\u0061ge\"}")); // an escape: read in full
}
