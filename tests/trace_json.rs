//! Trace JSON read in pieces on every core reads exactly what one whole read does: on the real
//! traces of the fixtures, cut as finely as an event at a time, and on hand-written texts
//! whose likely cuts fall inside strings and nested values, whose `B`/`E` pairs span pieces,
//! and whose top level has keys around the array.

mod common;

use flate2::read::MultiGzDecoder;
use profq::decode::trace_json::decode_trace_json_as;
use profq::model::{Capture, NO_PARENT, NO_STR};
use std::io::Read;
use std::path::Path;

/// What a decode produced, as text independent of string ids and event order: one line per
/// event (plane, line, name, times, depth, parent, typed stats, args), sorted, then the meta.
fn resolved(c: &Capture) -> Vec<String> {
    let s = |id: u32| if id == NO_STR { "-".to_string() } else { c.strings.get(id).unwrap_or("?").to_string() };
    let mut rows = Vec::new();
    for chunk in &c.chunks {
        for i in 0..chunk.len() {
            let line = &c.lines[chunk.line[i] as usize];
            let plane = &c.planes[line.plane as usize];
            let parent = match chunk.parent.get(i) {
                Some(&p) if p != NO_PARENT => format!("{}@{}", s(chunk.name[p as usize]), chunk.start_ns[p as usize]),
                _ => "-".into(),
            };
            let args: Vec<String> = chunk.args_of(i).map(|j| format!("{}={}", s(chunk.arg_key[j]), chunk.arg_value(j))).collect();
            rows.push(format!(
                "{}/{}({:?})|{}|{}|{}+{}|d{}|p {}|{}|{}|{}|{}|{}|{}|{}|{}",
                s(plane.name),
                s(line.name),
                plane.kind,
                s(chunk.name[i]),
                s(chunk.category.get(i)),
                chunk.start_ns[i],
                chunk.dur_ns[i],
                chunk.depth.get(i).copied().unwrap_or(0),
                parent,
                s(chunk.hlo_op.get(i)),
                s(chunk.hlo_module.get(i)),
                s(chunk.src.get(i)),
                chunk.step.get(i),
                chunk.correlation_id.get(i),
                chunk.program_id.get(i),
                chunk.device_ordinal.get(i),
                args.join(",")
            ));
        }
    }
    rows.sort();
    let m = &c.meta;
    rows.push(format!(
        "total {} complete {} truncated {} epoch {:?} unit {:?}",
        m.num_events_total, m.num_complete_events, m.suspected_truncation, m.start_epoch_ns, m.display_time_unit
    ));
    rows.push(format!("warnings {:?} devices {:?}", m.quality_warnings, m.device_kinds));
    rows
}

fn decode(text: &[u8], pieces: Option<usize>) -> Result<Vec<String>, String> {
    let mut capture = Capture::default();
    decode_trace_json_as(|| text, "host", &mut capture, pieces)?;
    Ok(resolved(&capture))
}

/// Decodes `text` whole and in pieces of each size; every result must be the whole one.
fn same_in_pieces(what: &str, text: &[u8], sizes: &[usize]) -> Result<Vec<String>, String> {
    let whole = decode(text, None);
    for &size in sizes {
        let pieces = decode(text, Some(size));
        assert!(pieces == whole, "{what}: pieces of {size} bytes read differently from the whole text:\n{}", first_difference(&whole, &pieces));
    }
    whole
}

fn first_difference(a: &Result<Vec<String>, String>, b: &Result<Vec<String>, String>) -> String {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            let i = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            format!("{} vs {} rows; first difference at {i}:\n  whole:  {:?}\n  pieces: {:?}", a.len(), b.len(), a.get(i), b.get(i))
        }
        _ => format!("whole: {:?}\npieces: {:?}", a.as_ref().map(Vec::len), b.as_ref().map(Vec::len)),
    }
}

fn read_text(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes;
    }
    let mut text = Vec::new();
    MultiGzDecoder::new(&bytes[..]).read_to_end(&mut text).unwrap();
    text
}

#[test]
fn real_traces_read_the_same_in_pieces() {
    let mut files = vec![];
    for rel in [
        "public/TraceLens/kineto/h100_bert-small-uncased.json.gz",
        "public/TraceLens/kineto/mi300_bert-small-uncased.json.gz",
        "public/HolisticTraceAnalysis/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "public/HolisticTraceAnalysis/nccl_parser_config/nccl_data.json.gz",
    ] {
        files.extend(common::shared(rel));
    }
    for capture in ["mlp_train", "transformer_lm"] {
        let dir = common::jax_cpu(capture);
        files.extend(common::find_file(&dir, "perfetto_trace.json.gz"));
        files.extend(common::find_file(&dir, ".trace.json.gz"));
    }
    assert!(files.len() >= 4, "fixtures: {files:?}");
    for path in files {
        let text = read_text(&path);
        // An event a piece, and pieces of a few KiB (many cuts, each one checked).
        let rows = same_in_pieces(&path.display().to_string(), &text, &[1, 4096, 1 << 16]).unwrap();
        assert!(rows.len() > 100, "{}: {} events", path.display(), rows.len());
    }
}

#[test]
fn cuts_inside_strings_and_nested_values_are_found_out() {
    let text = br#"{"otherData": {"note": "}, {\"traceEvents\": [", "traceEvents": [{"name": "fake"}]},
      "traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 10, "args": {"s": "}, {", "list": [{"x": 1}, {"y": 2}], "o": {"p": {"q": [1, {"r": "}]},{"}]}}}},
        {"ph": "X", "name": "b}, {", "pid": 1, "tid": 1, "ts": 2, "dur": 3, "args": {"t": "x\"}, {\"y"}},
        {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"n": 1.5e3, "i": -7, "u": 18446744073709551615, "b": true, "z": null, "arr": []}},
        {},
        {"ph": "X", "name": "d", "pid": "p}, {", "tid": 1, "ts": 6, "dur": 1}
      ],
      "displayTimeUnit": "ns", "trailer": ["]", {"a": "]"}]}
    "#;
    let rows = same_in_pieces("hand-written", text, &[0, 1, 7, 64]).unwrap();
    assert_eq!(rows.len() - 2, 4, "four events and the meta: {rows:#?}");
    assert!(rows.iter().any(|r| r.contains("s=}, {") && r.contains(r#"list=[{"x":1},{"y":2}]"#)), "{rows:#?}");
    assert!(rows.iter().any(|r| r.contains("n=1500.0") && r.contains("u=18446744073709551615") && r.contains("b=true") && !r.contains("z=")), "{rows:#?}");
    assert!(rows.iter().any(|r| r.contains(r#"unit Some("ns")"#)), "{rows:#?}");
}

#[test]
fn begin_end_pairs_spanning_pieces_close_innermost_first() {
    let mut text = String::from(r#"{"traceEvents": ["#);
    let mut events = vec![r#"{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "early"}}"#.to_string()];
    for i in 0..40 {
        let t = i * 100;
        events.push(format!(r#"{{"ph": "B", "name": "outer{i}", "pid": 1, "tid": 1, "ts": {t}, "args": {{"k": "b", "only_b": {i}}}}}"#));
        events.push(format!(r#"{{"ph": "B", "name": "inner{i}", "pid": 1, "tid": 1, "ts": {}}}"#, t + 10));
        events.push(format!(r#"{{"ph": "X", "name": "x{i}", "pid": 1, "tid": 2, "ts": {}, "dur": 5}}"#, t + 11));
        events.push(format!(r#"{{"ph": "E", "pid": 1, "tid": 1, "ts": {}, "args": {{"k": "e"}}}}"#, t + 20));
        events.push(format!(r#"{{"ph": "E", "pid": 1, "tid": 1, "ts": {}}}"#, t + 90));
    }
    events.push(r#"{"ph": "E", "pid": 1, "tid": 1, "ts": 9999}"#.into());
    events.push(r#"{"ph": "B", "name": "never closed", "pid": 1, "tid": 3, "ts": 5000}"#.into());
    events.push(r#"{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "renamed later"}}"#.into());
    text.push_str(&events.join(",\n"));
    text.push_str("]}");
    let rows = same_in_pieces("B/E", text.as_bytes(), &[1, 50, 300, 1000]).unwrap();
    let outer = rows.iter().find(|r| r.contains("|outer7|")).unwrap();
    // Times are µs in the text, ns in the capture; the `E` at +20 closes inner7 with its args.
    assert!(outer.contains("|700000+90000|") && outer.contains("k=b,only_b=7") && outer.contains("renamed later"), "{outer}");
    assert!(rows.iter().any(|r| r.contains("|inner7|") && r.contains("|710000+10000|") && r.contains("p outer7@700000") && r.ends_with("|k=e")), "{rows:#?}");
    let warnings = rows.last().unwrap();
    assert!(warnings.contains("1 B events have no matching E") && warnings.contains("1 E events have no matching B"), "{warnings}");
}

#[test]
fn bare_arrays_empty_arrays_and_odd_top_levels() {
    let bare = br#"  [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 4, "dur": 2}]  "#;
    assert_eq!(same_in_pieces("bare", bare, &[0, 1, 5]).unwrap().len(), 4);
    let kineto = br#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}], "traceEvents": [
        {"ph": "X", "name": "k", "pid": 0, "tid": "stream 7", "ts": 1.5, "dur": 2.25, "args": {"correlation": 12}},
        {"ph": "X", "name": "l", "pid": 0, "tid": "stream 7", "ts": 4, "dur": 1}
      ], "traceName": "x]", "baseTimeNanoseconds": 1700000000000000000}"#;
    let rows = same_in_pieces("kineto", kineto, &[0, 1, 5]).unwrap();
    assert!(rows.iter().any(|r| r.contains("NVIDIA H100")) && rows.iter().any(|r| r.contains("epoch Some(1700000000000001500)")), "{rows:#?}");
    for empty in [&b"[]"[..], b"{\"traceEvents\": []}", b"{\"traceEvents\": [ ], \"displayTimeUnit\": \"ms\"}"] {
        same_in_pieces("empty", empty, &[0, 1]).unwrap();
    }
    assert!(decode(b"{\"other\": [1, 2]}", Some(1)).unwrap_err().contains("no `traceEvents`"));
}

#[test]
fn malformed_json_gets_the_whole_reads_error() {
    let cases: [&[u8]; 6] = [
        br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 1}, {"ph": "X", "name": "b", "ts": 2"#,
        br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 1}, {"ph": "X", "name": "b" "ts": 2}]}"#,
        br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 1}, {"ph": "X", "name": "b}, {", "ts": 2}]"#,
        br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 1}], "traceEvents": [{"ph": "X", "name": "b", "ts": 1}]}"#,
        br#"{"traceEvents": [{"ph": "X"}] } trailing"#,
        br#"{"traceEvents": "not an array"}"#,
    ];
    for text in cases {
        let whole = decode(text, None);
        for size in [0, 1, 9] {
            assert_eq!(decode(text, Some(size)), whole, "{}", String::from_utf8_lossy(text));
        }
    }
    assert!(decode(cases[0], Some(1)).unwrap_err().starts_with("truncated JSON"));
    assert!(decode(cases[1], Some(1)).unwrap_err().starts_with("invalid JSON"));
}
