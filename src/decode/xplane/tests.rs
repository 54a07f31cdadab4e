//! The XPlane decoder on XSpaces built as protobuf bytes (prost), against the rules it follows.

use super::events::{ps_to_ns, read_event_fields};
use super::stats::stat_fields;
use super::units::assemble_chunks;
use super::*;
use prost::Message;

/// XStat as in proto/xplane.proto (the oneof as optional fields).
#[derive(Clone, PartialEq, prost::Message)]
struct Stat {
    #[prost(int64, tag = "1")]
    metadata_id: i64,
    #[prost(double, optional, tag = "2")]
    double_value: Option<f64>,
    #[prost(uint64, optional, tag = "3")]
    uint64_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    int64_value: Option<i64>,
    #[prost(string, optional, tag = "5")]
    str_value: Option<String>,
    #[prost(bytes = "vec", optional, tag = "6")]
    bytes_value: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "7")]
    ref_value: Option<u64>,
}

/// A piece of `line` holding `events` (start, dur), each with an arg naming its order.
fn piece(line: u32, events: &[(i64, i64)]) -> EventChunk {
    let mut c = EventChunk::new();
    for &(start, dur) in events {
        c.push_event(line, 0, NO_STR, NO_STR, start, dur);
        c.push_arg(1, &format!("{start}/{dur}"));
        c.end_args();
    }
    c
}

/// Per event, in part order: (line, start, dur, self, depth, parent, arg).
fn nested_rows(chunks: &[EventChunk]) -> Vec<(u32, i64, i64, i64, u32, u32, String)> {
    let rows = chunks
        .iter()
        .flat_map(|c| (0..c.len()).map(move |i| (c.line[i], c.start_ns[i], c.dur_ns[i], c.self_ns[i], c.depth[i], c.parent[i], c.arg_value(i).to_string())));
    rows.collect()
}

/// A line cut into pieces keeps them as chunks, nested as if they were one: parents and
/// self times cross the cuts. Out-of-order pieces are joined and sorted first; lines of
/// one piece are joined.
#[test]
fn a_cut_line_nests_across_its_pieces() {
    // Line 0: an outer event spanning all three pieces, children cut between them.
    let cut = [vec![(0, 100), (10, 30), (15, 5)], vec![(20, 10), (40, 20)], vec![(45, 5), (70, 10), (100, 1)]];
    let small = [(5, 10), (6, 2)];
    for in_order in [true, false] {
        let mut pieces: Vec<EventChunk> = cut.iter().map(|events| piece(0, events)).collect();
        if !in_order {
            pieces.swap(1, 2);
        }
        pieces.push(piece(1, &small));
        let starts_line = [true, false, false, true];
        let assembled = assemble_chunks(pieces, &starts_line, &[0; 4], 2, &OpenBefore::default()).unwrap();
        assert_eq!(assembled.len(), if in_order { 4 } else { 2 });

        let mut whole = EventChunk::concat(cut.iter().chain([&small.to_vec()]).enumerate().map(|(k, e)| piece((k == 3) as u32, e)).collect());
        whole.sort_within_lines();
        whole.compute_nesting();
        assert_eq!(nested_rows(&assembled), nested_rows(&[whole]));
    }
    let rows = nested_rows(&assemble_chunks(cut.iter().map(|e| piece(0, e)).collect(), &[true, false, false], &[0; 3], 2, &OpenBefore::default()).unwrap());
    // (40, 20) in the second piece is a child of (0, 100), the first event of the part.
    assert_eq!((rows[4].1, rows[4].4, rows[4].5), (40, 1, 0));
    // The outer event's self time: 100 minus its children (10, 30), (40, 20) and (70, 10);
    // (100, 1) starts as it ends.
    assert_eq!(rows[0].3, 40);
}

#[test]
fn usual_stats_read_like_the_field_loop() {
    let s = |id| Stat { metadata_id: id, ..Default::default() };
    let mut encodings: Vec<Vec<u8>> = [
        Stat { double_value: Some(-2.5), ..s(3) },
        Stat { uint64_value: Some(u64::MAX), ..s(300) },
        Stat { int64_value: Some(-7), ..s(1 << 40) },
        Stat { str_value: Some("fusion.12".into()), ..s(9) },
        Stat { str_value: Some(String::new()), ..s(9) },
        Stat { bytes_value: Some(vec![0xff, 0, 1]), ..s(2) },
        Stat { ref_value: Some(5), ..s(4) },
        Stat { int64_value: Some(1), ..s(0) },
        s(6),
    ]
    .iter()
    .map(|m| m.encode_to_vec())
    .collect();
    // A str_value that is not UTF-8, two values (the last wins), and a value before the id.
    encodings.extend([vec![0x08, 1, 0x2a, 2, 0xc3, 0x28], vec![0x08, 1, 0x20, 5, 0x20, 6], vec![0x20, 5, 0x08, 1]]);
    let ref_name = |id: i64| id as u32 + 1000;
    for bytes in &encodings {
        for end in 0..=bytes.len() {
            let b = &bytes[..end];
            assert_eq!(format!("{:?}", stat_id_and_value(b, 0, ref_name)), format!("{:?}", stat_fields(b, 0, ref_name)), "{b:?}");
        }
    }
}

#[test]
fn events_read_like_the_field_loop() {
    let stat = |id: u8| [0x22, 2, 0x08, id];
    let mut usual = vec![0x08, 0x96, 0x01, 0x10, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x18, 0x80, 0x80, 0x04];
    (1..=18).for_each(|k| usual.extend(stat(k)));
    let mut encodings = vec![usual.clone(), [&usual[..], &[0x28, 3]].concat(), vec![0x28, 1, 0x08, 2], vec![0x18, 5, 0x10, 4, 0x08, 3]];
    // Repeated scalars (the last wins), a stat between them, an unknown field, a bad length.
    encodings.extend([vec![0x08, 1, 0x22, 0, 0x08, 2, 0x10, 7], vec![0x08, 1, 0x30, 9, 0x22, 0], vec![0x08, 1, 0x22, 9, 0x08]]);
    // Dropping no stat, and every third one by its id.
    let some = StatSkips(std::array::from_fn(|id| id % 3 == 0));
    for (bytes, skips) in encodings.iter().flat_map(|b| [(b, &StatSkips::NONE), (b, &some)]) {
        for end in 0..=bytes.len() {
            let ev = &bytes[..end];
            let read = |fields_only: bool| {
                let mut stats = StatSlices::new();
                let got = if fields_only { read_event_fields(ev, 100, &mut stats, skips) } else { read_event(ev, 100, &mut stats, skips) };
                got.map(|h| format!("{} {} {} {} {:?}", h.meta_id, h.offset_ps, h.dur_ps, h.aggregated, stats.iter().collect::<Vec<_>>()))
                    .map_err(|e| e.to_string())
            };
            assert_eq!(read(false), read(true), "{ev:?}");
        }
    }
}

#[test]
fn event_spans_round_like_the_wide_path() {
    let cases =
        [(0, 0, 0), (5, 499, 1), (5, 500, 499), (-3, -1501, 2500), (1 << 40, 123_456, 7_890), (i64::MAX / 1000, 999, i64::MAX), (i64::MIN / 999, -5, 3)];
    let edges = [((1 << 52) - 1, (1 << 60) - 1, (1 << 60) - 1), (1 << 52, 0, 0), (7, 1 << 60, 5), (7, 5, 1 << 60), (7, -1, 5), (7, 5, -9)];
    for (t, off, dur) in cases.into_iter().chain(edges) {
        let wide = t as i128 * 1000 + off as i128;
        assert_eq!(event_span_ns(t, off, dur), (ps_to_ns(wide), ps_to_ns(wide + dur.max(0) as i128)), "{t} {off} {dur}");
    }
}
