use super::*;
use crate::usage::Total;

const H: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/"}"#;

fn ix(lines: &[&str]) -> Index {
    let mut img = String::from(H);
    img.push('\n');
    for l in lines {
        img.push_str(l);
        img.push('\n');
    }
    Index::from_image(img.into_bytes()).unwrap()
}

fn e(id: &str, parent: Option<&str>, ty: &str) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(r#"{{"type":"{ty}","id":"{id}","parentId":{p},"timestamp":"2025-01-01T00:00:00Z"}}"#)
}

fn kinds(ix: &Index) -> Vec<(&'static str, Option<u64>)> {
    ix.issues()
        .iter()
        .map(|i| (i.kind.as_str(), i.line))
        .collect()
}

#[test]
fn cycles_break_at_the_earliest_entry_in_linear_time() {
    let n = 200_000;
    let mut lines: Vec<String> = (0..n)
        .map(|i| e(&format!("e{i}"), Some(&format!("e{}", i + 1)), "custom"))
        .collect();
    lines.push(e("x", Some("e0"), "custom"));
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let ix = ix(&refs);
    // e{n-1} names a missing e{n}; no cycle. Now close one: last -> first.
    assert_eq!(ix.path(ix.find(b"x").unwrap()).len(), n + 1);
    let cyc = ix_cycle();
    assert_eq!(kinds(&cyc), vec![("cycle", Some(2))]);
    assert_eq!(cyc.path(0), vec![0]); // the breaker is a root
    assert_eq!(cyc.path(2), vec![0, 1, 2]);
}

fn ix_cycle() -> Index {
    ix(&[
        &e("a", Some("c"), "custom"),
        &e("b", Some("a"), "custom"),
        &e("c", Some("b"), "custom"),
    ])
}

#[test]
fn header_rules() {
    assert!(matches!(
        Index::from_image(b"\n \n".to_vec()),
        Err(Error::InvalidSession { line: None, .. })
    ));
    let bad = format!("garbage\n{}\n", e("a", None, "message"));
    assert!(matches!(
        Index::from_image(bad.into_bytes()),
        Err(Error::InvalidSession {
            line: Some(1),
            offset: Some(0),
            ..
        })
    ));
    let ok = format!("garbage\n{H}\n{}\n{H}\n", e("a", None, "message"));
    let ix = Index::from_image(ok.into_bytes()).unwrap();
    assert_eq!(
        kinds(&ix),
        vec![("invalid_json", Some(1)), ("extra_header", Some(4))]
    );
    let old = b"{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\"}\nx\n".to_vec();
    let ix = Index::from_image(old).unwrap();
    assert!(ix.needs_migration() && ix.is_empty() && ix.issues().is_empty());
    let bom = format!("\u{feff}{H}\r\n{}\r\n", e("a", None, "message"));
    let ix = Index::from_image(bom.into_bytes()).unwrap();
    assert_eq!(kinds(&ix), vec![("bom", Some(1))]);
    assert!(ix.line(0).unwrap().ends_with(b"}"));
}

#[test]
fn header_problems_are_judged_like_the_python_backend() {
    let problem = |img: &[u8]| match Index::from_image(img.to_vec()) {
        Err(Error::InvalidSession {
            problem,
            line,
            offset,
        }) => (problem.code(), line, offset),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted {:?}", String::from_utf8_lossy(img)),
    };
    let at = |code: &str, line, offset| (code.to_string(), Some(line), Some(offset));
    assert_eq!(problem(b""), ("empty".to_string(), None, None));
    assert_eq!(problem(b" \n\r\n"), ("empty".to_string(), None, None));
    assert_eq!(problem(b"\n  \ngarbage\n"), at("not_json", 3, 4));
    assert_eq!(problem(b"\xef\xbb\xbf[1]\r\n"), at("not_object", 1, 0));
    assert_eq!(problem(b"{\"type\":\"sess"), at("not_json", 1, 0));
    assert_eq!(problem(br#"{"type":"session"}"#), at("no_id", 1, 0));
    assert_eq!(
        problem(br#"{"type":"sess\u0069on","id":5}"#),
        at("no_id", 1, 0)
    );
    assert_eq!(problem(br#"{"id":"a"}"#), at("type", 1, 0));
    for (ty, code) in [
        (r#""message""#, r#"type:"message""#),
        (r#""m\u00e9""#, r#"type:"m\u00e9""#),
        ("null", "type:null"),
        ("true", "type:true"),
        ("-1.5e5", "type:-1.5e5"),
        (
            r#" {"a" : [1, "]}\"", {}]} "#,
            r#"type:{"a" : [1, "]}\"", {}]}"#,
        ),
    ] {
        let line = format!(r#"{{"type":{ty},"id":"a"}}"#);
        assert_eq!(problem(line.as_bytes()), at(code, 1, 0), "{ty}");
    }
    // An entry glued before a header: the first object of the line counts.
    let fused = format!("{}\r{H}\n", e("a", None, "message"));
    assert_eq!(problem(fused.as_bytes()), at(r#"type:"message""#, 1, 0));
    let torn = format!("{{\"type\":\"sess{}\n", e("a", None, "message"));
    assert_eq!(problem(torn.as_bytes()), at(r#"type:"message""#, 1, 0));
    // A header glued to the next line (by a lone CR): both are read.
    let glued = format!("{H}\r{}\n", e("a", None, "message"));
    let ix = Index::from_image(glued.into_bytes()).unwrap();
    assert_eq!((ix.len(), ix.id(0)), (1, &b"a"[..]));
    assert!(kinds(&ix).is_empty());
    // The first non-blank line is named even when a later object is the culprit.
    let later = format!("oops\n{}\n", e("a", None, "message"));
    assert_eq!(problem(later.as_bytes()), at("not_json", 1, 0));
}

#[test]
fn context_plan_honours_latest_compaction() {
    let comp = |id: &str, parent: &str, kept: &str| {
        format!(
            r#"{{"type":"compaction","id":"{id}","parentId":"{parent}","firstKeptEntryId":"{kept}"}}"#
        )
    };
    let asst = r#"{"type":"message","id":"a2","parentId":"u1","message":{"role":"assistant"}}"#;
    let ix = ix(&[
        &e("u1", None, "message"),
        asst,
        &e("t", Some("a2"), "thinking_level_change"),
        &comp("c1", "t", "u1"),
        &e("u3", Some("c1"), "message"),
        &comp("c2", "u3", "a2"),
        &e("m", Some("c2"), "model_change"),
        &e("u4", Some("m"), "branch_summary"),
        &comp("c3", "u4", "zz"),
    ]);
    let p = ix.plan(ix.find(b"u4"));
    assert_eq!(p.compaction, ix.find(b"c2"));
    assert_eq!(p.messages, vec![1, 4, 7]); // a2, u3 (kept from a2), then u4
    assert_eq!(p.thinking, ix.find(b"t"));
    assert_eq!(p.model, ix.find(b"m"));
    let p = ix.plan(ix.find(b"c3"));
    assert!(p.messages.is_empty()); // firstKept off path: summary only
    assert_eq!(kinds(&ix), vec![("first_kept_off_path", Some(10))]);
    assert_eq!(ix.plan(None), Plan::default());
}

#[test]
fn leaf_entries_move_the_leaf_on_open_and_on_append() {
    let leaf = |id: &str, parent: &str, target: &str| {
        format!(r#"{{"type":"leaf","id":"{id}","parentId":"{parent}","targetId":{target}}}"#)
    };
    let tools =
        r#"{"type":"active_tools_change","id":"t","parentId":"a","activeToolNames":["read"]}"#;
    let mut ix = ix(&[
        &e("a", None, "message"),
        tools,
        &e("b", Some("t"), "message"),
        &leaf("L1", "b", r#""t""#),
    ]);
    assert_eq!(ix.file_leaf(), ix.find(b"t"));
    assert_eq!(ix.last(), ix.find(b"L1"));
    assert!(kinds(&ix).is_empty());
    assert_eq!(ix.plan(ix.find(b"b")).active_tools, ix.find(b"t"));
    assert_eq!(ix.plan(ix.find(b"a")).active_tools, None);
    // null: before the first entry; then an entry is the leaf again.
    ix.append_line(leaf("L2", "t", "null").as_bytes()).unwrap();
    assert_eq!(ix.file_leaf(), None);
    ix.append_line(e("c", None, "message").as_bytes()).unwrap();
    assert_eq!(ix.file_leaf(), ix.find(b"c"));
    // A target that is no earlier entry (a later one, itself, none) or not a string
    // is reported and moves nothing.
    for (id, target) in [("M1", r#""zz""#), ("M2", "5"), ("M3", r#""""#)] {
        ix.append_line(leaf(id, "c", target).as_bytes()).unwrap();
    }
    ix.append_line(leaf("L4", "c", r#""L4""#).as_bytes())
        .unwrap();
    ix.append_line(br#"{"type":"leaf","id":"L5","parentId":"c"}"#)
        .unwrap();
    assert_eq!(ix.file_leaf(), ix.find(b"c"));
    let bad: Vec<_> = ix
        .issues()
        .iter()
        .filter(|i| i.kind == IssueKind::InvalidLeafTarget)
        .map(|i| i.ids.clone())
        .collect();
    assert_eq!(bad.last(), Some(&vec![b"L5".to_vec()]));
    assert!(bad.contains(&vec![b"L4".to_vec(), b"L4".to_vec()]));
}

#[test]
fn structure_queries() {
    let msg = |id: &str, parent: Option<&str>, role: &str| {
        let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(r#"{{"type":"message","id":"{id}","parentId":{p},"message":{{"role":"{role}"}}}}"#)
    };
    let ix = ix(&[
        &msg("ab1", None, "user"),
        &msg("ab2", Some("ab1"), "hookMessage"),
        &msg("ac3", Some("ab1"), "assistant"),
        &e("x", Some("ac3"), "weird"),
        &e("y", Some("zz"), "label"),
    ]);
    assert_eq!(ix.parent_of(1), Some(0));
    assert_eq!(ix.parent_of(4), None); // an orphan is a root
    assert_eq!(ix.parent_of(9), None);
    assert_eq!(ix.kind_of(3), Some(EntryKind::Unknown));
    assert_eq!(ix.kind_of(4), Some(EntryKind::Label));
    assert_eq!(ix.leaves(), vec![1, 3, 4]);
    assert_eq!(ix.with_prefix(b"ab", 1), (vec![0], 2));
    assert_eq!(ix.with_prefix(b"a", 5), (vec![0, 1, 2], 3));
    assert_eq!(ix.with_prefix(b"q", 5), (vec![], 0));
    assert_eq!(
        ix.other_roles().unwrap(),
        vec![(1, b"hookMessage".to_vec())]
    );
    assert_eq!(ix.roles()[2], Role::Assistant);
    assert_eq!(ix.entries_of_kind(EntryKind::Message, 1), vec![1, 2]);
    assert_eq!(
        ix.entries_of_kind(EntryKind::Message, 99),
        Vec::<u32>::new()
    );
    let t = ix.usage_totals().unwrap();
    assert_eq!(t.messages, 1);
}

#[test]
fn label_fields_are_the_json_texts_of_the_label_lines() {
    let ix = ix(&[
        &e("a", None, "message"),
        r#"{"type":"label","id":"l1","parentId":"a","targetId":"a","label":"x\u0079","timestamp":"t"}"#,
        r#"{"type":"label","id":"l2","parentId":"l1","targetId":7,"label":{"k":[1]}}"#,
        r#"{"label":null,"type":"label","id":"l3","parentId":"l2","label":"last","targetId":"a"}"#,
    ]);
    let v = |t: &str| match t.strip_prefix('"') {
        _ if t.is_empty() => None,
        Some(s) => Some(Value::Str(s.as_bytes().to_vec())),
        None => Some(Value::Json(t.as_bytes().to_vec())),
    };
    let got: Vec<_> = ix.label_fields(0).unwrap().into_iter().collect();
    assert_eq!(
        got,
        vec![
            (1, [v("\"a"), v("\"xy"), v("\"t")]),
            (2, [v("7"), v(r#"{"k":[1]}"#), None]),
            (3, [v("\"a"), v("\"last"), None]),
        ]
    );
    assert_eq!(ix.label_fields(3).unwrap().len(), 1);
    assert!(ix.label_fields(4).unwrap().is_empty());
}

#[test]
fn long_numbers_are_the_accepted_entries_with_long_digit_runs() {
    let big = |id: &str, v: &str| {
        format!(r#"{{"type":"custom","id":"{id}","parentId":null,"data":{v}}}"#)
    };
    let mut ix = ix(&[
        &big("a", "1"),
        &big("b", "12345678901234567890"),
        &big("b", "1"),
        &big("c", "[0.12345678901234567890]"),
        // Behind a record cut after `:`, an entry continues the tree (rule 3).
        &format!(
            "{{\"x\":{}",
            big("d", "{\"k\":-99999999999999999999}").replace("null", "\"c\"")
        ),
    ]);
    assert_eq!(ix.long_numbers(&[0, 1, 2, 3]), vec![1, 3]);
    assert_eq!(ix.id(3), b"d"); // recovered behind a torn fragment
    ix.append_line(big("e", "1e0000000000000000009").as_bytes())
        .unwrap();
    assert_eq!(ix.long_numbers(&[4, 3, 0]), vec![4, 3]);
}

#[test]
fn usage_totals_count_accepted_assistant_entries_as_they_are_indexed() {
    let spend = |id: &str, input: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":null,"message":{{"role":"assistant","provider":"p","usage":{{"input":{input}}}}}}}"#
        )
    };
    let mut ix = ix(&[&spend("a", "1"), &spend("a", "10"), &spend("b", "2")]);
    let t = ix.usage_totals().unwrap();
    assert_eq!((t.messages, t.tokens[0]), (2, Total::Int(3))); // the duplicate id is skipped
    ix.append_line(spend("c", "0.5").as_bytes()).unwrap();
    let t = ix.usage_totals().unwrap();
    assert_eq!((t.messages, t.tokens[0]), (3, Total::Float(3.5)));
    assert_eq!(t.models, vec![((Some(b"\"p\"".to_vec()), None), 3)]);
    ix.append_line(spend("d", &"9".repeat(40)).as_bytes())
        .unwrap();
    assert!(ix.usage_totals().is_none()); // beyond 128 bits: Python sums it
}

/// A temporary session file holding `img` (removed on drop).
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(tag: &str, img: &[u8]) -> TempFile {
        let p = std::env::temp_dir().join(format!(
            "sessiontree-{tag}-{}-{:?}.jsonl",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&p, img).unwrap();
        TempFile(p)
    }
    fn append(&self, bytes: &[u8]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.0)
            .unwrap();
        f.write_all(bytes).unwrap();
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn session(n: usize, pad: usize) -> Vec<u8> {
    let mut img = format!("{H}\n");
    for i in 0..n {
        let p = if i == 0 {
            None
        } else {
            Some(format!("e{}", i - 1))
        };
        let l = e(&format!("e{i}"), p.as_deref(), "message");
        img.push_str(&l[..l.len() - 1]);
        img.push_str(&format!(r#","pad":"{}"}}"#, "x".repeat(pad)));
        img.push('\n');
    }
    img.into_bytes()
}

#[test]
fn refresh_reads_and_scans_only_new_bytes() {
    // The same one-line growth on a 0.1 MB and a 16 MB file costs the same bytes:
    // read with pread and scanned, nothing else.
    for (tag, n) in [("small", 100), ("large", 16_000)] {
        let f = TempFile::new(tag, &session(n, 1000));
        let mut ix = Index::open(&f.0).unwrap();
        let read0 = ix.src.file_read();
        let scanned0 = ix.scanned;
        let line = e("new", Some(&format!("e{}", n - 1)), "message");
        f.append(format!("{line}\n").as_bytes());
        assert_eq!(ix.refresh().unwrap(), 1);
        let want = line.len() as u64 + 1;
        assert_eq!(ix.src.file_read(), read0 + want, "{tag}");
        assert_eq!(ix.scanned - scanned0, want, "{tag}");
        assert_eq!(ix.path(n as u32).len(), n + 1);
        assert_eq!(ix.line(n as u32).unwrap(), line.as_bytes());
        assert_eq!(ix.refresh().unwrap(), 0);
        assert_eq!(ix.scanned - scanned0, want, "{tag}");
    }
}

#[test]
fn refresh_reads_the_held_file_only() {
    // Identity is the caller's to check: a path replaced or removed does not change
    // what the index reads; a held file cut below `image_len` is stale.
    let f = TempFile::new("held", &session(5, 10));
    let mut ix = Index::open(&f.0).unwrap();
    let first = ix.line(0).unwrap();
    let other = TempFile::new("other", &session(9, 10));
    std::fs::rename(&other.0, &f.0).unwrap();
    assert_eq!(ix.refresh().unwrap(), 0);
    std::fs::remove_file(&f.0).unwrap();
    assert_eq!(ix.refresh().unwrap(), 0);
    assert_eq!(ix.line(0).unwrap(), first);
    let g = TempFile::new("cut", &session(5, 10));
    let mut ix = Index::open(&g.0).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&g.0).unwrap();
    file.set_len(ix.image_len() - 1).unwrap();
    assert!(matches!(ix.refresh(), Err(Error::Stale(_))));
}

#[test]
fn an_image_attached_to_its_file_refreshes_from_it() {
    let img = session(3, 10);
    let mut ix = Index::from_image(img.clone()).unwrap();
    assert_eq!(ix.refresh().unwrap(), 0); // no file: nothing to read
    let f = TempFile::new("attach", &img);
    ix.attach(&f.0).unwrap();
    let line = e("x", Some("e2"), "message");
    f.append(format!("{line}\n").as_bytes());
    assert_eq!(ix.refresh().unwrap(), 1);
    assert_eq!(ix.line(3).unwrap(), line.as_bytes());
    assert_eq!(ix.path(3), vec![0, 1, 2, 3]);
}

#[test]
fn refresh_after_a_pending_fragment_and_many_lines() {
    let f = TempFile::new("fold", &session(10, 100));
    let mut ix = Index::open(&f.0).unwrap();
    // A pending fragment, then its rest and more lines than the tail may hold.
    let first = e("n0", Some("e9"), "message");
    f.append(&first.as_bytes()[..20]);
    assert_eq!(ix.refresh().unwrap(), 0);
    assert!(ix.has_pending_tail());
    let mut more = format!("{}\n", &first[20..]);
    for i in 1..2000 {
        more.push_str(&e(&format!("n{i}"), Some(&format!("n{}", i - 1)), "custom"));
        more.push('\n');
    }
    f.append(more.as_bytes());
    assert_eq!(ix.refresh().unwrap(), 2000);
    assert!(!ix.has_pending_tail() && ix.issues().is_empty());
    assert_eq!(ix.path(ix.last().unwrap()).len(), 2010);
    assert_eq!(ix.line(10).unwrap(), first.as_bytes());
    assert_eq!(ix.image_len(), std::fs::metadata(&f.0).unwrap().len());
    // Appended through the API, then the file catches up (the writer's bytes).
    let own = e("own", Some("n1999"), "message");
    assert_eq!(ix.append_line(own.as_bytes()).unwrap(), Some(2010));
    f.append(format!("{own}\n").as_bytes());
    let next = e("next", Some("own"), "message");
    f.append(format!("{next}\n").as_bytes());
    assert_eq!(ix.refresh().unwrap(), 1);
    assert_eq!(ix.line(2010).unwrap(), own.as_bytes());
    assert_eq!(ix.line(2011).unwrap(), next.as_bytes());
    assert_eq!(ix.path(2011).len(), 2012);
}

#[test]
fn issues_carry_their_facts() {
    type Fact = (&'static str, Option<u64>, Option<Vec<u8>>);
    let facts = |ix: &Index| -> Vec<Fact> {
        ix.issues()
            .into_iter()
            .map(|i| (i.kind.as_str(), i.n, i.text))
            .collect()
    };
    let mut img = format!("\u{feff}xy{H}\n").into_bytes();
    for l in [
        e("a", None, "message"),
        e("a", None, "message"),
        format!("junk{}", e("b", Some("c"), "custom")),
        e("c", Some("b"), "wei\\u0072d"),
        r#"{"type":7,"id":"d","parentId":null}"#.to_string(),
    ] {
        img.extend_from_slice(l.as_bytes());
        img.push(b'\n');
    }
    img.extend_from_slice(b"{\"type\":\r");
    let ix = Index::from_image(img).unwrap();
    assert_eq!(
        facts(&ix),
        vec![
            ("bom", None, None),
            ("torn_fragment", Some(5), None), // BOM + "xy": from the line's first byte
            ("duplicate_id", Some(2), None),
            ("torn_fragment", Some(4), None),
            ("cycle", Some(2), None),
            ("unknown_type", None, Some(b"weird".to_vec())),
            ("unknown_type", None, None),
            ("truncated", Some(8), None), // the CR is the line ending's
        ]
    );
}

#[test]
fn append_and_pending_tail() {
    let mut ix = ix(&[&e("a", None, "message")]);
    assert_eq!(
        ix.append_line(e("b", Some("a"), "message").as_bytes())
            .unwrap(),
        Some(1)
    );
    assert_eq!(ix.children(0), vec![1]);
    assert_eq!(ix.append_line(b"nope").unwrap(), None);
    assert_eq!(kinds(&ix), vec![("invalid_json", Some(4))]);
    let mut img = format!("{H}\n{}\n", e("a", None, "message")).into_bytes();
    img.extend_from_slice(b"{\"type\":");
    let mut ix = Index::from_image(img).unwrap();
    assert!(ix.has_pending_tail());
    assert_eq!(kinds(&ix), vec![("truncated", Some(3))]);
    ix.append_line(e("b", Some("a"), "message").as_bytes())
        .unwrap();
    assert_eq!(kinds(&ix), vec![("invalid_json", Some(3))]);
    assert_eq!(ix.path(1), vec![0, 1]);
}

fn comp(id: &str, parent: Option<&str>, kept: &str) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(r#"{{"type":"compaction","id":"{id}","parentId":{p},"firstKeptEntryId":"{kept}"}}"#)
}

/// The `first_kept_off_path` compactions, by id.
fn off_path(ix: &Index) -> Vec<Vec<u8>> {
    ix.issues()
        .into_iter()
        .filter(|i| i.kind == IssueKind::FirstKeptOffPath)
        .map(|i| i.ids[0].clone())
        .collect()
}

#[test]
fn many_compactions_are_checked_in_one_linear_pass() {
    // A chain where every second entry is a compaction keeping the root: a walk per
    // compaction is O(n^2) (1.25e9 steps here), the interval pass O(n).
    let n = 100_000;
    let mut lines = vec![e("e0", None, "message")];
    for i in 1..n {
        let p = format!("e{}", i - 1);
        lines.push(if i % 2 == 0 {
            comp(&format!("e{i}"), Some(&p), "e0")
        } else {
            e(&format!("e{i}"), Some(&p), "message")
        });
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let before = tree::WALK_STEPS.with(|s| s.get());
    let ix = ix(&refs);
    assert!(ix.issues().is_empty());
    // Work is counted, not timed: no compaction was checked by a walk.
    assert_eq!(tree::WALK_STEPS.with(|s| s.get()), before);
}

#[test]
fn interval_and_walk_verdicts_agree() {
    // A forest with branches, forward links, a cycle, self-keeps and kept entries
    // on other branches; checked once in one batch (intervals) and once entry by
    // entry through `append_line` (walks).
    let mut lines = vec![
        e("r", None, "message"),
        e("a", Some("r"), "message"),
        e("b", Some("r"), "message"),
        comp("c1", Some("a"), "r"),
        comp("c2", Some("b"), "a"),
        comp("c3", Some("c1"), "a"),
        comp("c4", Some("c3"), "c4"), // self-retaining: valid
        comp("c5", Some("c4"), "nope"),
        e("f", Some("later"), "message"),
        comp("c6", Some("f"), "later"),
        comp("c7", Some("f"), "f"),
        e("later", Some("c1"), "message"),
        comp("c8", Some("later"), "r"),
        comp("c9", Some("c8"), "b"),
        comp("c10", Some("c9"), "c3"),
        e("x", Some("z"), "custom"),
        e("y", Some("x"), "custom"),
        e("z", Some("y"), "custom"),
        comp("c11", Some("z"), "x"),
        comp("c12", Some("y"), "z"),
    ];
    lines.push(comp("c13", Some("c12"), "c11"));
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let batch = ix(&refs);
    let want: Vec<&[u8]> = vec![b"c2", b"c5", b"c9", b"c10", b"c12", b"c13"];
    assert_eq!(off_path(&batch), want);
    assert!(kinds(&batch).contains(&("cycle", Some(17))));
    let mut one = ix(&[]);
    for l in &refs {
        one.append_line(l.as_bytes()).unwrap();
    }
    assert_eq!(one.issues(), batch.issues());
    // New compactions past the limit in one refresh-sized batch use intervals too.
    let mut grown = ix(&refs[..3]);
    let mut more = Vec::new();
    for l in &refs[3..] {
        more.extend_from_slice(l.as_bytes());
        more.push(b'\n');
    }
    grown.src.append(grown.image_len(), &more).unwrap();
    grown.index_new().unwrap();
    assert_eq!(grown.issues(), batch.issues());
}

#[test]
fn reads_after_indexing_use_pread_and_a_shrunk_file_is_stale() {
    let f = TempFile::new("shrink", &session(50, 300));
    let ix = Index::open(&f.0).unwrap();
    let path = ix.path(49);
    let mut got = Vec::new();
    ix.for_each_line(&path, |b| got.push(b.to_vec())).unwrap();
    let want: Vec<Vec<u8>> = path.iter().map(|&e| ix.line(e).unwrap()).collect();
    assert_eq!(got, want);
    assert!(got[10].starts_with(br#"{"type":"message","id":"e10""#));
    assert!(ix.header().unwrap().starts_with(br#"{"type":"session""#));
    // Cut the file inside entry 40: earlier lines still read, later ones are stale
    // (a short pread, where a read of the map would raise SIGBUS).
    let cut = ix.start[40] + 10;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f.0)
        .unwrap()
        .set_len(cut)
        .unwrap();
    assert_eq!(ix.line(39).unwrap(), want[39]);
    assert!(matches!(ix.line(40), Err(Error::Stale(_))));
    assert!(matches!(
        ix.for_each_line(&path, |_| ()),
        Err(Error::Stale(_))
    ));
    assert!(ix.header().is_ok()); // before the cut
}

#[test]
fn an_open_through_a_released_map_is_the_scan_of_the_bytes() {
    // Long enough to be mapped and given back many times (test sizes: 64 KiB map
    // minimum, 4 KiB blocks, 16 KiB release steps), with damage spread through it.
    let mut img = session(3000, 200);
    for k in (1000..img.len() - 100).step_by(40_000) {
        img[k] = b'{';
    }
    let f = TempFile::new("released", &img);
    let opened = Index::open(&f.0).unwrap();
    let owned = Index::from_image(img.clone()).unwrap();
    assert_eq!(opened.len(), owned.len());
    assert!(!owned.issues().is_empty());
    assert_eq!(opened.issues(), owned.issues());
    assert_eq!(opened.start, owned.start);
    assert_eq!(opened.parent, owned.parent);
    let src = Source::open(&f.0).unwrap();
    let w = src.window(0, img.len() as u64).unwrap().unwrap();
    assert_eq!(w.bytes(), &img[..]);
    w.release(img.len());
    assert_eq!(w.bytes(), &img[..]); // read again from the file
}

#[test]
fn the_fingerprint_is_the_ends_of_the_image_as_scanned() {
    // `_filestate.indexed_ends` of the file's first image_len bytes, for images of
    // one block and of many (test blocks are 4 KiB), mapped or read, with a short
    // and a long pending last piece (the long one is past what the scan keeps).
    let fp = lines::FINGERPRINT;
    let ends = |img: &[u8], n: usize| {
        let mut out = img[..n.min(fp)].to_vec();
        out.extend_from_slice(&img[n.saturating_sub(fp)..n]);
        out
    };
    for (lines_n, pad, tail) in [
        (3, 10, 0),
        (40, 300, 0),
        (3000, 200, 0),
        (3000, 200, 100),
        (500, 50, 3 * fp),
    ] {
        let mut img = session(lines_n, pad);
        let full = img.len();
        img.extend(std::iter::repeat_n(b'x', tail)); // an invalid last piece without LF
        let f = TempFile::new("fingerprint", &img);
        let ix = Index::open(&f.0).unwrap();
        assert_eq!(ix.image_len() as usize, full);
        match ix.fingerprint() {
            Some((n, got)) => {
                assert_eq!(n as usize, full);
                assert_eq!(got, &ends(&img, full)[..]);
            }
            None => assert!(tail > fp, "{lines_n} {pad} {tail}"),
        }
        assert!(Index::from_image(img).unwrap().fingerprint().is_none());
    }
}

/// A whole `Index::from_image` of a big file (set `SESSIONTREE_BENCH_FILE`), best
/// of 3: `cargo test --release --no-default-features -- --ignored --nocapture
/// bench_open` (`scan::tests::bench_scan` times its pieces).
#[test]
#[ignore]
fn bench_open() {
    let Ok(path) = std::env::var("SESSIONTREE_BENCH_FILE") else {
        return;
    };
    let data = std::fs::read(path).unwrap();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let n = Index::from_image(data.clone()).map_or(0, |i| i.len());
        best = best.min(t.elapsed().as_secs_f64());
        assert!(n > 0);
    }
    println!("Index::from_image {best:.3}s");
}

#[test]
fn columns_hold_the_index_in_arrow_layouts() {
    let i32s = |b: &[u8]| -> Vec<i32> {
        b.chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let i64s = |b: &[u8]| -> Vec<i64> {
        b.chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    // A root, a child, a forward link (f names the later g), a torn line and a
    // timestamp that does not parse.
    let ix = ix(&[
        &e("a", None, "message"),
        &e("b", Some("a"), "message"),
        &e("f", Some("g"), "custom"),
        &format!("junk{}", e("g", Some("b"), "custom")),
        r#"{"type":"custom","id":"\udc80x","parentId":"f","timestamp":"nope"}"#,
    ]);
    let c = ix.columns(ix.find(b"f")).unwrap();
    // Each byte of the surrogate's 3-byte form is one U+FFFD (Python's "replace").
    assert_eq!(i32s(&c.id_offsets), vec![0, 1, 2, 3, 4, 14]);
    assert_eq!(&c.id_data[..4], b"abfg");
    let lossy = std::str::from_utf8(&c.id_data[4..]).unwrap();
    assert_eq!(lossy, "\u{fffd}\u{fffd}\u{fffd}x");
    assert_eq!(i64s(&c.line), vec![2, 3, 4, 5, 6]);
    let (off, len) = (i64s(&c.offset), i64s(&c.length));
    for e in 0..5 {
        let (s, t) = (off[e] as u64, (off[e] + len[e]) as u64);
        assert_eq!((s, t), ix.range(e as u32));
    }
    assert_eq!(i32s(&c.parent), vec![0, 0, 3, 1, 2]);
    assert_eq!(c.parent_valid, vec![0b11110]);
    assert_eq!(i32s(&c.depth), vec![0, 1, 3, 2, 4]);
    assert_eq!(c.on_path, vec![0b01111]);
    assert_eq!(c.timestamp_valid, vec![0b01111]);
    assert_eq!(i64s(&c.timestamp)[4], 0);
    assert_eq!(i64s(&c.timestamp)[0], 1_735_689_600_000);
    let none = ix.columns(None).unwrap();
    assert_eq!(none.on_path, vec![0]);
}

#[test]
fn a_line_read_without_its_lf_is_continued_as_a_fresh_open_reads_it() {
    let (a, b, c) = (
        e("a", None, "message"),
        e("b", Some("a"), "message"),
        e("c", Some("b"), "message"),
    );
    let f = TempFile::new("continued", format!("{H}\n{a}").as_bytes());
    let mut ix = Index::open(&f.0).unwrap();
    assert_eq!(ix.len(), 1);
    f.append(b.as_bytes()); // glued, no `\n` yet: pending
    assert_eq!(ix.refresh().unwrap(), 0);
    assert!(ix.has_pending_tail());
    assert_eq!(kinds(&ix), vec![("truncated", Some(2))]);
    f.append(format!("xx{c}\n").as_bytes());
    assert_eq!(ix.refresh().unwrap(), 2);
    assert_eq!(ix.line(1).unwrap(), b.as_bytes());
    assert_eq!(ix.path(2), vec![0, 1, 2]);
    assert_eq!(kinds(&ix), vec![("torn_fragment", Some(2))]);
    let fresh = Index::open(&f.0).unwrap();
    assert_eq!(fresh.len(), 3);
    assert_eq!(kinds(&fresh), kinds(&ix));
    assert_eq!(fresh.issues()[0].offset, ix.issues()[0].offset);
    assert_eq!(fresh.issues()[0].n, ix.issues()[0].n);
    // A value that is not an object, read without its `\n`, then continued: the fused
    // line reads it as torn bytes, its `not_an_object` withdrawn.
    let f = TempFile::new("continued-array", format!("{H}\n[1,2]").as_bytes());
    let mut ix = Index::open(&f.0).unwrap();
    assert_eq!(kinds(&ix), vec![("not_an_object", Some(2))]);
    f.append(format!("{a}\n").as_bytes());
    assert_eq!(ix.refresh().unwrap(), 1);
    assert_eq!(kinds(&ix), vec![("torn_fragment", Some(2))]);
    assert_eq!(kinds(&Index::open(&f.0).unwrap()), kinds(&ix));
}

#[test]
fn an_object_that_may_be_nested_in_a_torn_record_is_an_entry_only_if_it_continues_the_tree() {
    let a = e("a", None, "message");
    // A tool result cut right after a parsed session line in its `details`, the line
    // then ended by a bare `\n`: the object ends the line and may be nested.
    let torn =
        |nested: &str| format!(r#"{{"type":"message","id":"t","parentId":"a","details":{nested}"#);
    for (parent, entry) in [
        (Some("elsewhere"), false),
        (Some("b"), false),
        (None, false), // a root while the leaf is `a`: another session's first line
        (Some("a"), true),
    ] {
        let nested = e("ph", parent, "message");
        let b = e("b", Some("a"), "message");
        let body = format!("{H}\n{a}\n{}\n{b}\n", torn(&nested));
        let f = TempFile::new("may-nest", body.as_bytes());
        let ix = Index::open(&f.0).unwrap();
        assert_eq!(ix.len(), if entry { 3 } else { 2 }, "parent {parent:?}");
        let issues = ix.issues();
        let torn_items: Vec<_> = issues
            .iter()
            .filter(|i| i.kind.as_str() == "torn_fragment")
            .collect();
        assert_eq!(torn_items.len(), if entry { 1 } else { 2 });
        if !entry {
            // The object's own bytes at its own offset.
            let at = body.find(&nested).unwrap() as u64;
            assert_eq!(
                (torn_items[1].offset, torn_items[1].n),
                (Some(at), Some(nested.len() as u64))
            );
        }
    }
}
