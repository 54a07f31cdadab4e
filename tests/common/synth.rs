//! Small synthetic profiles as real bytes: XSpace protobufs encoded with prost (field numbers
//! of proto/xplane.proto) and gzip'd Chrome trace JSON, for the reference's worked scenarios.
#![allow(dead_code)]

use prost::Message;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

#[derive(Clone, PartialEq, Message)]
pub struct XSpace {
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XPlane {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XLine {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XEvent {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(int64, optional, tag = "2")]
    pub offset_ps: Option<i64>,
    #[prost(int64, optional, tag = "5")]
    pub num_occurrences: Option<i64>,
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XStat {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(double, optional, tag = "2")]
    pub double_value: Option<f64>,
    #[prost(uint64, optional, tag = "3")]
    pub uint64_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int64_value: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub str_value: Option<String>,
    #[prost(bytes, optional, tag = "6")]
    pub bytes_value: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "7")]
    pub ref_value: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XEventMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub display_name: String,
    #[prost(bytes, tag = "3")]
    pub metadata: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct XStatMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
}

/// An event for [`PlaneBuilder::line`]: (name, start, duration, stats).
pub type SynthEvent<'a> = (&'a str, i64, i64, &'a [(&'a str, V)]);

/// A stat value for the builders.
#[derive(Clone)]
pub enum V {
    Str(&'static str),
    U(u64),
    I(i64),
}

/// Builds one plane: events are (name, start, dur, stats) in time units of `unit_ps`.
pub struct PlaneBuilder {
    plane: XPlane,
    names: HashMap<String, i64>,
    stats: HashMap<String, i64>,
    pub unit_ps: i64,
}

impl PlaneBuilder {
    pub fn new(id: i64, name: &str) -> Self {
        PlaneBuilder { plane: XPlane { id, name: name.into(), ..Default::default() }, names: HashMap::new(), stats: HashMap::new(), unit_ps: 1_000_000 }
    }

    fn stat_id(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.stats.get(name) {
            return id;
        }
        let id = self.stats.len() as i64 + 1;
        self.stats.insert(name.into(), id);
        self.plane.stat_metadata.insert(id, XStatMetadata { id, name: name.into(), description: String::new() });
        id
    }

    fn stat(&mut self, key: &str, v: &V) -> XStat {
        let metadata_id = self.stat_id(key);
        match v {
            V::Str(s) => XStat { metadata_id, str_value: Some(s.to_string()), ..Default::default() },
            V::U(x) => XStat { metadata_id, uint64_value: Some(*x), ..Default::default() },
            V::I(x) => XStat { metadata_id, int64_value: Some(*x), ..Default::default() },
        }
    }

    pub fn metadata_stats(&mut self, event_name: &str, stats: &[(&str, V)]) {
        let id = self.meta_id(event_name);
        let built: Vec<XStat> = stats.iter().map(|(k, v)| self.stat(k, v)).collect();
        self.plane.event_metadata.get_mut(&id).unwrap().stats.extend(built);
    }

    fn meta_id(&mut self, name: &str) -> i64 {
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let id = self.names.len() as i64 + 1;
        self.names.insert(name.into(), id);
        self.plane.event_metadata.insert(id, XEventMetadata { id, name: name.into(), ..Default::default() });
        id
    }

    pub fn line(&mut self, id: i64, name: &str, events: &[SynthEvent]) -> &mut Self {
        let mut line = XLine { id, name: name.into(), ..Default::default() };
        for (ename, start, dur, stats) in events {
            let metadata_id = self.meta_id(ename);
            let stats = stats.iter().map(|(k, v)| self.stat(k, v)).collect();
            line.events.push(XEvent { metadata_id, offset_ps: Some(start * self.unit_ps), duration_ps: dur * self.unit_ps, stats, ..Default::default() });
        }
        self.plane.lines.push(line);
        self
    }

    pub fn build(self) -> XPlane {
        self.plane
    }
}

pub fn write_xspace(path: &Path, planes: Vec<XPlane>) {
    let space = XSpace { planes, hostnames: vec!["testhost".into()], ..Default::default() };
    std::fs::write(path, space.encode_to_vec()).unwrap();
}

/// A gzip'd Chrome trace: processes (pid, name), threads (pid, tid, name), X events
/// (pid, tid, name, ts µs, dur µs, args JSON object text).
pub fn write_trace_json(path: &Path, processes: &[(i64, &str)], threads: &[(i64, i64, &str)], events: &[(i64, i64, &str, f64, f64, &str)]) {
    let mut items = Vec::new();
    for (pid, name) in processes {
        items.push(format!(r#"{{"ph":"M","pid":{pid},"name":"process_name","args":{{"name":"{name}"}}}}"#));
    }
    for (pid, tid, name) in threads {
        items.push(format!(r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":"{name}"}}}}"#));
    }
    for (pid, tid, name, ts, dur, args) in events {
        let args = if args.is_empty() { "{}" } else { args };
        items.push(format!(r#"{{"ph":"X","pid":{pid},"tid":{tid},"name":"{name}","ts":{ts},"dur":{dur},"args":{args}}}"#));
    }
    let text = format!(r#"{{"displayTimeUnit":"ns","traceEvents":[{}]}}"#, items.join(","));
    let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap();
}
