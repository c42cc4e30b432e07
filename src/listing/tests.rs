use super::*;

/// Everything a scan can collect (`content`: docs and usage too).
fn all(content: bool) -> Collect {
    Collect {
        content,
        texts: true,
        usage_log: false,
    }
}

fn scan_bytes(data: &[u8], content: bool) -> Scan {
    scan_with(data, all(content))
}

fn scan_with(data: &[u8], collect: Collect) -> Scan {
    let dir =
        std::env::temp_dir().join(format!("st-listing-{}-{}", std::process::id(), data.len()));
    std::fs::write(&dir, data).unwrap();
    let s = scan_file(&dir, 0, &[], collect, u64::MAX, 4096).unwrap();
    std::fs::remove_file(&dir).unwrap();
    s
}

#[test]
fn basic_listing() {
    let data = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":5}}\n\
{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"timestamp\":\"2025-01-01T00:00:02.000Z\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"yo\"},{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"edit\",\"arguments\":{\"path\":\"x\",\"n\":[\"p\",1]}}],\"usage\":{\"input\":1,\"output\":2,\"cost\":{\"total\":0.5}},\"timestamp\":7}}\n\
{\"type\":\"session_info\",\"id\":\"n\",\"parentId\":\"b\",\"timestamp\":\"x\",\"name\":\" N \"}\n\
{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"dup\"}}\n";
    let s = scan_bytes(data, true);
    assert!(s.eof);
    assert_eq!(s.tail, 0);
    assert!(matches!(s.header, Header::Found(_)));
    assert_eq!(s.message_count, 2);
    assert_eq!(s.first_message.as_deref(), Some(&b"hi"[..]));
    assert_eq!(s.texts, b"hi yo");
    assert_eq!(s.name, Name::Set(b" N ".to_vec()));
    assert_eq!(s.activity, Some(7.0));
    assert_eq!(s.entry_count, 3);
    assert_eq!(s.docs.len(), 3);
    assert_eq!(s.docs[1].text, b"yo\nedit\nx\np");
    assert_eq!(s.usage.len(), 1);
    assert_eq!(s.usage[0].numbers, [1.0, 2.0, 0.0, 0.0, 0.0, 0.5]);
    assert_eq!(entries_path(&s.entries), vec![0, 1, 2]);
}

#[test]
fn facts_without_texts_are_the_same() {
    // The listing facts read from the scanner's fields (no walk of the messages) equal
    // those of the walk: duplicate keys (the last wins), a message without content, a
    // non-numeric message timestamp, a first user message with empty text.
    let lines: [&[u8]; 7] = [
        br#"{"type":"session","version":3,"id":"s"}"#,
        br#"{"type":"message","id":"a","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":[],"timestamp":"9"}}"#,
        br#"{"type":"message","id":"b","message":{"role":"user","content":"q","timestamp":99e9}}"#,
        br#"{"type":"message","id":"c","message":{"role":"assistant","timestamp":5e13}}"#,
        br#"{"type":"message","id":"d","message":{"role":"assistant","content":1,"timestamp":4e13,"timestamp":3}}"#,
        br#"{"type":"message","id":"e","message":{"timestamp":6e13},"message":{"role":"assistant","content":null}}"#,
        br#"{"type":"message","id":"f","message":{"role":"assistant","content":"x","timestamp":7e13},"message":1}"#,
    ];
    let data: Vec<u8> = lines.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
    let walked = scan_bytes(&data, false);
    let fast = scan_with(&data, Collect::default());
    assert_eq!(walked.fallback, None);
    assert_eq!(
        (fast.message_count, &fast.first_message, fast.activity),
        (walked.message_count, &walked.first_message, walked.activity)
    );
    assert_eq!(fast.message_count, 6);
    assert_eq!(fast.first_message.as_deref(), Some(&b"q"[..]));
    // a's entry time (its message's is a string); c has no content, d's last timestamp
    // is 3, e has no time, f's last message is no object.
    assert_eq!(fast.activity, Some(1_735_689_601_000.0));
    assert!(fast.texts.is_empty());
    assert_eq!(walked.texts, b"q");
    // A text whose String() is not computed here matters only where texts are read.
    let mut odd = data.clone();
    odd.extend_from_slice(
        b"{\"type\":\"message\",\"id\":\"g\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":5}]}}\n",
    );
    assert!(scan_bytes(&odd, false).fallback.is_some());
    let fast = scan_with(&odd, Collect::default());
    assert_eq!(
        (fast.fallback, fast.eof, fast.message_count),
        (None, true, 7)
    );
}

#[test]
fn texts_read_where_the_validator_saw_them() {
    // A message's text, usage, provider and model come from the last `message` key's
    // last `content`/`usage`/`provider`/`model` as the validator recorded them; a line
    // with invalid UTF-8 has each string checked and replaced on its own.
    let lines: [&[u8]; 7] = [
        br#"{"type":"session","version":3,"id":"s"}"#,
        br#"{"type":"message","id":"a","message":{"role":"user","content":"old"},"message":{"role":"user","content":"one","content":[{"type":"text","text":"two"},{"type":"text","text":"th\u00e9\n"}]}}"#,
        br#"{"type":"message","id":"b","message":{"role":"assistant","content":[{"type":"thinking","thinking":"no \"text\" here"},{"type":"toolCall","name":"edit","arguments":{"p":"x\\y","p":"z","q":[1,"w"]}}],"provider":"a","usage":{"input":9},"provider":"p","model":"m","usage":{"input":1,"cost":{"total":2}}}}"#,
        b"{\"type\":\"message\",\"id\":\"c\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"bad \xff byte\"},{\"type\":\"toolCall\",\"name\":\"n\",\"arguments\":{\"k\":\"\xc3\xa9\"}}]}}",
        br#"{"type":"message","id":"d","message":{"role":"assistant","content":null,"content":"kept"}}"#,
        br#"{"type":"message","id":"e","message":{"role":"assistant","content":"lost","content":null}}"#,
        br#"{"type":"message","id":"f","message":{"role":"assistant","content":"lost"},"message":{"role":"assistant","content":7}}"#,
    ];
    let data: Vec<u8> = lines.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
    let s = scan_bytes(&data, true);
    assert_eq!(s.fallback, None);
    let texts: Vec<(&[u8], &[u8])> = s.docs.iter().map(|d| (&d.id[..], &d.text[..])).collect();
    assert_eq!(
        texts,
        vec![
            (&b"a"[..], "two th\u{e9}\n".as_bytes()),
            (b"b", b"edit\nz\nw"),
            (b"c", "bad \u{fffd} byte".as_bytes()),
            (b"d", b"kept"),
        ]
    );
    assert_eq!(s.usage.len(), 1);
    assert_eq!(
        (&s.usage[0].provider[..], &s.usage[0].model[..]),
        (&b"p"[..], &b"m"[..])
    );
    assert_eq!(s.usage[0].numbers, [1.0, 0.0, 0.0, 0.0, 0.0, 2.0]);
    assert_eq!(
        s.first_message.as_deref(),
        Some("two th\u{e9}\n".as_bytes())
    );
}

#[test]
fn resume_and_limit() {
    let mut data = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n".to_vec();
    for i in 0..100 {
        let p = if i == 0 {
            "null".to_string()
        } else {
            format!("\"e{}\"", i - 1)
        };
        data.extend_from_slice(
            format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{p},\"message\":{{\"role\":\"user\",\"content\":\"t{i}\"}}}}\n").as_bytes(),
        );
    }
    let path = std::env::temp_dir().join(format!("st-listing-resume-{}", std::process::id()));
    std::fs::write(&path, &data).unwrap();
    let mut start = 0;
    let mut prior = Vec::new();
    let mut count = 0;
    let mut texts = Vec::new();
    loop {
        let s = scan_file(&path, start, &prior, all(true), 500, 4096).unwrap();
        count += s.message_count;
        if !s.texts.is_empty() {
            if !texts.is_empty() {
                texts.push(b' ');
            }
            texts.extend_from_slice(&s.texts);
        }
        prior.extend_from_slice(&s.entries);
        start = s.end;
        if s.eof {
            break;
        }
    }
    std::fs::remove_file(&path).unwrap();
    assert_eq!(count, 100);
    assert_eq!(start, data.len() as u64);
    let all = scan_bytes(&data, false);
    assert_eq!(all.texts, texts);
    assert_eq!(entries_path(&prior).len(), 100);
}

#[test]
fn missing_header_and_tail() {
    let s = scan_bytes(
        b"\n  \nnot json\n{\"type\":\"message\",\"id\":\"x\"}\n",
        false,
    );
    assert_eq!(
        s.header,
        Header::Missing(Some((3, 4, b"not json".to_vec())))
    );
    let s = scan_bytes(b"", false);
    assert_eq!(s.header, Header::Missing(None));
    let s = scan_bytes(
        b"{\"type\":\"session\",\"id\":\"s\",\"version\":3}\n{\"type\":\"message\",\"id\":\"a\"",
        false,
    );
    assert!(s.eof);
    assert_eq!(s.tail, 26);
    assert_eq!(s.message_count, 0);
    let s = scan_bytes(b"{\"type\":\"session\",\"id\":\"s\"}\n", false);
    assert!(s.old_version);
}

#[test]
fn cycles_and_forward_parents() {
    let mut e = Vec::new();
    push_record(&mut e, b"a", Some(b"c"), Move::Not);
    push_record(&mut e, b"b", Some(b"a"), Move::Not);
    push_record(&mut e, b"c", Some(b"b"), Move::Not);
    push_record(&mut e, b"d", Some(b"d"), Move::Not);
    push_record(&mut e, b"f", Some(b"g"), Move::Not);
    push_record(&mut e, b"g", Some(b"b"), Move::Not);
    // a<-c<-b<-a is a cycle broken at a; f's parent g comes later in the file.
    assert_eq!(entries_path(&e), vec![0, 1, 5]);
}

#[test]
fn leaf_moves_pick_the_current_path() {
    let mut base = Vec::new();
    push_record(&mut base, b"a", None, Move::Not);
    push_record(&mut base, b"b", Some(b"a"), Move::Not);
    push_record(&mut base, b"c", Some(b"b"), Move::Not);
    let with = |mv: Move<'_>| {
        let mut e = base.clone();
        push_record(&mut e, b"L", Some(b"c"), mv);
        entries_path(&e)
    };
    assert_eq!(with(Move::To(b"a")), vec![0]);
    assert_eq!(with(Move::ToNull), Vec::<u32>::new());
    // A move to no earlier entry (or to itself), or with no string target, moves nothing.
    assert_eq!(with(Move::To(b"zz")), vec![0, 1, 2]);
    assert_eq!(with(Move::To(b"L")), vec![0, 1, 2]);
    assert_eq!(with(Move::Nothing), vec![0, 1, 2]);
    // After a move, the next entry's own place decides.
    let mut e = base.clone();
    push_record(&mut e, b"L", Some(b"c"), Move::To(b"a"));
    push_record(&mut e, b"d", Some(b"a"), Move::Not);
    assert_eq!(entries_path(&e), vec![0, 4]);
    // Records round-trip their moves.
    let mut e = Vec::new();
    for mv in [
        Move::Not,
        Move::ToNull,
        Move::Nothing,
        Move::To(b""),
        Move::To(b"t"),
    ] {
        push_record(&mut e, b"x", None, mv);
    }
    let got: Vec<Move<'_>> = Records(&e).map(|r| r.2).collect();
    assert_eq!(
        got,
        vec![
            Move::Not,
            Move::ToNull,
            Move::Nothing,
            Move::To(b""),
            Move::To(b"t")
        ]
    );
}

#[test]
fn string_ends_match_a_byte_walk() {
    // Valid JSON strings of every mix of quotes, backslashes and text, at every offset
    // of a window, against a plain byte-by-byte walk.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..3000 {
        let mut body = Vec::new();
        for _ in 0..(next() % 200) {
            match next() % 6 {
                0 => body.extend_from_slice(b"\\\""),
                1 => body.extend_from_slice(b"\\\\"),
                2 => body.extend_from_slice(b"\\n"),
                3 => body.extend_from_slice("é漢".as_bytes()),
                _ => body.push(b'a' + (next() % 26) as u8),
            }
        }
        let pad = (next() % 70) as usize;
        let mut s = vec![b' '; pad];
        s.push(b'"');
        s.extend_from_slice(&body);
        s.extend_from_slice(b"\",\"k\":\"v\"}");
        let mut j = pad + 1;
        while s[j] != b'"' {
            j += if s[j] == b'\\' { 2 } else { 1 };
        }
        assert_eq!(skip_str(&s, pad), j + 1);
        assert_eq!(str_body(&s, pad).2, body.contains(&b'\\'));
    }
}
