//! A layout as Chrome trace JSON, for tools that read nothing else (chrome://tracing, HTA):
//! one process per host, one thread per leaf track (named by its path, ordered by rank),
//! `X` slices and `i` instants with their annotations, `s`/`f` flows. Timestamps are µs
//! after the window start with three decimals, so ns survive a double.

use super::tracks::{Arg, Layout, Track};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

/// Writes `layout` to `out`; `origin` (ns) becomes time 0.
pub fn write(layout: &Layout, origin: i64, out: &mut dyn Write) -> io::Result<()> {
    let by_uuid: HashMap<u64, &Track> = layout.tracks.iter().map(|t| (t.uuid, t)).collect();
    // A track's process: its top ancestor's pid (profq's own track is process 0).
    let pid_of = |uuid: u64| {
        let mut t = by_uuid[&uuid];
        while let Some(p) = t.parent {
            t = by_uuid[&p];
        }
        t.process.as_ref().map_or(0, |p| p.0)
    };
    let path_of = |uuid: u64| {
        let mut names = Vec::new();
        let mut t = by_uuid[&uuid];
        while t.process.is_none() {
            names.push(t.name.as_str());
            match t.parent {
                Some(p) => t = by_uuid[&p],
                None => break,
            }
        }
        names.reverse();
        names.join(" · ")
    };
    let mut first = true;
    let mut item = |out: &mut dyn Write, v: serde_json::Value| -> io::Result<()> {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        serde_json::to_writer(&mut *out, &v).map_err(io::Error::other)
    };
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    for t in layout.tracks.iter().filter(|t| t.process.is_some()) {
        let (pid, name) = t.process.clone().expect("a process");
        item(out, serde_json::json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}))?;
        item(out, serde_json::json!({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": t.rank}}))?;
    }
    // Threads: the tracks with slices, in declaration order (parents before children, so in rank order).
    let used: BTreeMap<usize, u64> = {
        let with_slices: std::collections::HashSet<u64> = layout.slices.iter().map(|s| s.track).collect();
        layout.tracks.iter().enumerate().filter(|(_, t)| with_slices.contains(&t.uuid)).map(|(i, t)| (i, t.uuid)).collect()
    };
    for (order, uuid) in &used {
        let pid = pid_of(*uuid);
        item(out, serde_json::json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": uuid, "args": {"name": path_of(*uuid)}}))?;
        item(out, serde_json::json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": uuid, "args": {"sort_index": order}}))?;
    }
    let us = |ns: i64| serde_json::json!((ns - origin) as f64 / 1000.0);
    for (_, _, _, i) in super::perfetto::timeline(layout).into_iter().filter(|e| e.1 != super::perfetto::proto::TYPE_SLICE_END) {
        let s = &layout.slices[i];
        let pid = pid_of(s.track);
        let args: serde_json::Map<String, serde_json::Value> = s
            .args
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Arg::Int(x) => serde_json::json!(x),
                    Arg::Float(x) => serde_json::json!(x),
                    Arg::Bool(x) => serde_json::json!(x),
                    Arg::Text(id) => serde_json::json!(layout.strings[*id as usize]),
                };
                (k.to_string(), v)
            })
            .collect();
        let name = &layout.strings[s.name as usize];
        if s.dur <= 0 {
            item(out, serde_json::json!({"ph": "i", "s": "t", "name": name, "pid": pid, "tid": s.track, "ts": us(s.start), "args": args}))?;
            continue;
        }
        item(out, serde_json::json!({"ph": "X", "name": name, "pid": pid, "tid": s.track, "ts": us(s.start), "dur": us(origin + s.dur), "args": args}))?;
        for &id in &s.flow_out {
            item(out, serde_json::json!({"ph": "s", "name": "launch", "cat": "flow", "id": id, "pid": pid, "tid": s.track, "ts": us(s.start)}))?;
        }
        if let Some(id) = s.flow_in {
            item(out, serde_json::json!({"ph": "f", "bp": "e", "name": "launch", "cat": "flow", "id": id, "pid": pid, "tid": s.track, "ts": us(s.start)}))?;
        }
    }
    out.write_all(b"\n]}\n")
}
