//! Chrome / Perfetto / Kineto trace JSON → [`Capture`], streamed.
//!
//! The JSON is read once through serde visitors straight into event columns: no DOM, no
//! String per event (strings are interned or appended to the chunk's value buffer), so
//! memory stays proportional to the events kept, not to the text. Phases:
//! * `X` complete events and `B`/`E` pairs (matched per (pid, tid) stack) become events;
//! * `i`/`I` instant events are kept as zero-duration events (args preserved);
//! * `C` counter events are kept as zero-duration events on their (pid, tid) line;
//! * `M` metadata names processes and threads (and is not an event);
//! * flow (`s`/`t`/`f`), async (`b`/`e`/`n`) and object events are counted in
//!   `num_events_total` but not kept: Kineto's correlation is the `correlation` arg.
//!
//! `ts`/`dur` are µs (Chrome trace format); `displayTimeUnit` only changes how viewers show
//! them and is recorded, never applied.

use crate::model::*;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::HashMap;
use std::fmt;

/// Event counts at which known exporters silently stop (JAX's trace JSON keeps 1,000,000 events).
pub const KNOWN_EXPORT_CAPS: [i64; 2] = [1_000_000, 5_000_000];

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Id {
    Num(i64),
    Str(u32),
}

#[derive(Default)]
struct Pending {
    ph: u8,
    name: u32,
    cat: u32,
    pid: Option<Id>,
    tid: Option<Id>,
    ts_ns: Option<i64>,
    dur_ns: Option<i64>,
    /// Range into State.arg_* of this event's args.
    args_start: usize,
}

struct OpenB {
    name: u32,
    cat: u32,
    ts_ns: i64,
    keys: Vec<u32>,
    values: Vec<String>,
}

struct State<'p> {
    pool: &'p mut StringPool,
    chunk: EventChunk,
    /// Args of the event being read.
    arg_keys: Vec<u32>,
    arg_values: Vec<String>,
    arg_used: usize,
    scratch: String,
    lines: HashMap<(Id, Id), u32>,
    line_list: Vec<(Id, Id)>,
    process_names: HashMap<Id, u32>,
    thread_names: HashMap<(Id, Id), u32>,
    open_b: HashMap<(Id, Id), Vec<OpenB>>,
    total: i64,
    dropped_flows: i64,
    unmatched_e: i64,
    bad_times: i64,
    display_time_unit: Option<String>,
    base_time_ns: Option<i64>,
    saw_events_key: bool,
    key_ids: KeyIds,
    device_kinds: Vec<String>,
}

struct KeyIds {
    name: u32,
}

fn us_to_ns(us: f64) -> Option<i64> {
    let ns = (us * 1000.0).round();
    if ns.is_finite() && ns.abs() < 9.0e18 {
        Some(ns as i64)
    } else {
        None
    }
}

/// Result of reading a trace JSON.
pub struct JsonInfo {
    pub display_time_unit: Option<String>,
}

/// Streams a trace JSON (object with `traceEvents`, or a bare array of events) into `capture`.
pub fn decode_trace_json<R: std::io::Read>(reader: R, host: &str, capture: &mut Capture) -> Result<JsonInfo, String> {
    let name_key = capture.strings.intern("name");
    let mut state = State {
        pool: &mut capture.strings,
        chunk: EventChunk::new(),
        arg_keys: Vec::new(),
        arg_values: Vec::new(),
        arg_used: 0,
        scratch: String::new(),
        lines: HashMap::new(),
        line_list: Vec::new(),
        process_names: HashMap::new(),
        thread_names: HashMap::new(),
        open_b: HashMap::new(),
        total: 0,
        dropped_flows: 0,
        unmatched_e: 0,
        bad_times: 0,
        display_time_unit: None,
        base_time_ns: None,
        saw_events_key: false,
        key_ids: KeyIds { name: name_key },
        device_kinds: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 20, reader));
    let de_result = TopSeed { state: &mut state }.deserialize(&mut de).and_then(|_| de.end());
    if let Err(e) = de_result {
        return Err(describe_json_error(&e));
    }
    if !state.saw_events_key {
        return Err("not a trace: JSON has no `traceEvents` array".into());
    }
    let State {
        chunk,
        lines: _,
        line_list,
        process_names,
        thread_names,
        open_b,
        total,
        dropped_flows,
        unmatched_e,
        bad_times,
        display_time_unit,
        base_time_ns,
        device_kinds,
        ..
    } = state;
    for k in device_kinds {
        if !capture.meta.device_kinds.contains(&k) {
            capture.meta.device_kinds.push(k);
        }
    }
    let mut chunk = chunk;

    // Planes (one per pid) and lines (one per (pid, tid)), named by the M events.
    let host_id = capture.strings.intern(host);
    if !capture.meta.hosts.iter().any(|h| h == host) {
        capture.meta.hosts.push(host.to_string());
    }
    let mut plane_of_pid: HashMap<Id, u32> = HashMap::new();
    let first_line = capture.lines.len() as u32;
    let mut device_pids: Vec<Id> = Vec::new();
    for (pid, tid) in &line_list {
        let tname = thread_names.get(&(pid.clone(), tid.clone())).and_then(|&id| capture.strings.get(id)).map(str::to_string);
        if let Some(t) = &tname {
            if t.trim_start().to_ascii_lowercase().starts_with("stream ") && !device_pids.contains(pid) {
                device_pids.push(pid.clone());
            }
        }
    }
    for (pid, tid) in &line_list {
        let plane = match plane_of_pid.get(pid) {
            Some(&p) => p,
            None => {
                let pname = match process_names.get(pid).and_then(|&id| capture.strings.get(id)) {
                    Some(n) => n.to_string(),
                    None => format!("pid {}", id_text(pid, &capture.strings)),
                };
                let mut kind = crate::decode::xplane::plane_kind(&pname);
                let mut device = NO_STR;
                if pname.starts_with("/device:") {
                    device = capture.strings.intern(pname.trim_start_matches("/device:"));
                } else if device_pids.contains(pid) {
                    kind = PlaneKind::Device;
                    device = capture.strings.intern(&format!("GPU:{}", id_text(pid, &capture.strings)));
                } else if kind == PlaneKind::Other {
                    kind = PlaneKind::Host;
                }
                let p = capture.planes.len() as u32;
                let name = capture.strings.intern(&pname);
                capture.planes.push(Plane { host: host_id, name, kind, device });
                plane_of_pid.insert(pid.clone(), p);
                p
            }
        };
        let tname = match thread_names.get(&(pid.clone(), tid.clone())).and_then(|&id| capture.strings.get(id)) {
            Some(n) => n.trim_end().to_string(),
            None => format!("tid {}", id_text(tid, &capture.strings)),
        };
        let line_id = match tid {
            Id::Num(n) => *n,
            Id::Str(_) => -1,
        };
        let name = capture.strings.intern(&tname);
        capture.lines.push(Line { plane, line_id, name });
    }
    for l in chunk.line.iter_mut() {
        *l += first_line;
    }

    // Relative times: the run starts at the earliest event.
    let min_ts = chunk.start_ns.iter().copied().min().unwrap_or(0);
    for s in chunk.start_ns.iter_mut() {
        *s -= min_ts;
    }
    if capture.meta.start_epoch_ns.is_none() {
        capture.meta.start_epoch_ns = match base_time_ns {
            Some(base) => Some(base + min_ts),
            // µs since the epoch (after 2001) when ts are absolute.
            None if min_ts > 1_000_000_000_000_000_000 => Some(min_ts),
            None => None,
        };
    }
    let unclosed: usize = open_b.values().map(|v| v.len()).sum();
    if unclosed > 0 {
        capture.meta.quality_warnings.push(format!("{unclosed} B events have no matching E event (dropped)"));
    }
    if unmatched_e > 0 {
        capture.meta.quality_warnings.push(format!("{unmatched_e} E events have no matching B event (dropped)"));
    }
    if bad_times > 0 {
        capture.meta.quality_warnings.push(format!("{bad_times} events have no usable time (missing, non-numeric or out of range ts) and were dropped"));
    }
    if dropped_flows > 0 {
        capture.meta.quality_warnings.push(format!("{dropped_flows} flow/async/object events not kept (correlation stays in args)"));
    }
    if KNOWN_EXPORT_CAPS.contains(&total) || KNOWN_EXPORT_CAPS.contains(&(total - 1)) {
        capture.meta.suspected_truncation = true;
        capture
            .meta
            .quality_warnings
            .push(format!("trace JSON holds {total} events, a known exporter cap: later events were probably dropped; read the xplane.pb instead"));
    }
    capture.meta.num_events_total += total;
    if capture.meta.display_time_unit.is_none() {
        capture.meta.display_time_unit = display_time_unit.clone();
    }
    capture.meta.num_complete_events += chunk.len() as i64;
    chunk.merge_strings_into(&mut capture.strings);
    chunk.sort_within_lines();
    chunk.compute_nesting();
    capture.chunks.push(chunk);
    Ok(JsonInfo { display_time_unit })
}

fn id_text(id: &Id, pool: &StringPool) -> String {
    match id {
        Id::Num(n) => n.to_string(),
        Id::Str(s) => pool.get(*s).unwrap_or("").to_string(),
    }
}

fn describe_json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Io => "read error",
        Category::Syntax => "invalid JSON",
        Category::Data => "JSON is not a trace",
        Category::Eof => "truncated JSON (unexpected end of data)",
    };
    format!("{what}: {e}")
}

struct TopSeed<'a, 'p> {
    state: &'a mut State<'p>,
}

impl<'de, 'a, 'p> DeserializeSeed<'de> for TopSeed<'a, 'p> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a, 'p> Visitor<'de> for TopSeed<'a, 'p> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace object with traceEvents, or an array of trace events")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<KeyName>()? {
            match key.0.as_str() {
                "traceEvents" => {
                    self.state.saw_events_key = true;
                    map.next_value_seed(EventsSeed { state: self.state })?;
                }
                "displayTimeUnit" => {
                    self.state.display_time_unit = map.next_value::<Option<String>>()?;
                }
                "deviceProperties" => {
                    // Kineto: [{"id": 0, "name": "NVIDIA H100 80GB HBM3", ...}, ...]
                    let props = map.next_value::<Option<Vec<serde_json::Value>>>()?.unwrap_or_default();
                    for p in props {
                        if let Some(name) = p.get("name").and_then(|n| n.as_str()) {
                            if !self.state.device_kinds.iter().any(|k| k == name) {
                                self.state.device_kinds.push(name.to_string());
                            }
                        }
                    }
                }
                "baseTimeNanoseconds" => {
                    self.state.base_time_ns = map.next_value::<Option<serde_json::Number>>()?.and_then(|n| n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.state.saw_events_key = true;
        EventsSeed { state: self.state }.visit_seq(seq)
    }
}

/// Top-level keys are few; an owned String per key is fine.
struct KeyName(String);
impl<'de> serde::Deserialize<'de> for KeyName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(KeyName(String::deserialize(d)?))
    }
}

struct EventsSeed<'a, 'p> {
    state: &'a mut State<'p>,
}

impl<'de, 'a, 'p> DeserializeSeed<'de> for EventsSeed<'a, 'p> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'a, 'p> Visitor<'de> for EventsSeed<'a, 'p> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(EventSeed { state: &mut *self.state })?.is_some() {}
        Ok(())
    }
}

struct EventSeed<'a, 'p> {
    state: &'a mut State<'p>,
}

/// Keys of a trace event that profq reads; the rest are ignored.
enum EventKey {
    Ph,
    Name,
    Cat,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    Other,
}

impl<'de> serde::Deserialize<'de> for EventKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EventKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EventKey, E> {
                Ok(match v {
                    "ph" => EventKey::Ph,
                    "name" => EventKey::Name,
                    "cat" => EventKey::Cat,
                    "pid" => EventKey::Pid,
                    "tid" => EventKey::Tid,
                    "ts" => EventKey::Ts,
                    "dur" => EventKey::Dur,
                    "args" => EventKey::Args,
                    _ => EventKey::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de, 'a, 'p> DeserializeSeed<'de> for EventSeed<'a, 'p> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a, 'p> Visitor<'de> for EventSeed<'a, 'p> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.state;
        st.total += 1;
        st.arg_used = 0;
        let mut ev = Pending { name: NO_STR, cat: NO_STR, ..Default::default() };
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::Ph => {
                    let s = map.next_value_seed(StrSeed { scratch: &mut st.scratch })?;
                    ev.ph = if s { st.scratch.bytes().next().unwrap_or(0) } else { 0 };
                }
                EventKey::Name => {
                    if map.next_value_seed(StrSeed { scratch: &mut st.scratch })? {
                        ev.name = st.pool.intern(&st.scratch);
                    }
                }
                EventKey::Cat => {
                    if map.next_value_seed(StrSeed { scratch: &mut st.scratch })? {
                        ev.cat = st.pool.intern(&st.scratch);
                    }
                }
                EventKey::Pid => ev.pid = map.next_value_seed(IdSeed { pool: &mut *st.pool, scratch: &mut st.scratch })?,
                EventKey::Tid => ev.tid = map.next_value_seed(IdSeed { pool: &mut *st.pool, scratch: &mut st.scratch })?,
                EventKey::Ts => ev.ts_ns = map.next_value_seed(TimeSeed)?,
                EventKey::Dur => ev.dur_ns = map.next_value_seed(TimeSeed)?,
                EventKey::Args => {
                    ev.args_start = st.arg_used;
                    map.next_value_seed(ArgsSeed { state: &mut *st })?;
                }
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        st.finish_event(ev);
        Ok(())
    }
    // `{}` and stray non-objects in the array (JAX ends it with `{}`) are skipped.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.state.total += 1;
        Ok(())
    }
}

/// Copies a JSON string into the scratch buffer; numbers and bools are rendered. Returns false for null.
struct StrSeed<'a> {
    scratch: &'a mut String,
}

impl<'de, 'a> DeserializeSeed<'de> for StrSeed<'a> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for StrSeed<'a> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.scratch.clear();
        self.scratch.push_str(v);
        Ok(true)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.scratch.clear();
        self.scratch.push_str(itoa::Buffer::new().format(v));
        Ok(true)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.scratch.clear();
        self.scratch.push_str(itoa::Buffer::new().format(v));
        Ok(true)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.scratch.clear();
        self.scratch.push_str(&v.to_string());
        Ok(true)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.scratch.clear();
        self.scratch.push_str(if v { "true" } else { "false" });
        Ok(true)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

struct IdSeed<'a> {
    pool: &'a mut StringPool,
    scratch: &'a mut String,
}

impl<'de, 'a> DeserializeSeed<'de> for IdSeed<'a> {
    type Value = Option<Id>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Id>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for IdSeed<'a> {
    type Value = Option<Id>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a pid/tid")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<Id>, E> {
        Ok(Some(Id::Num(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<Id>, E> {
        Ok(Some(Id::Num(v as i64)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<Id>, E> {
        Ok(Some(Id::Num(v as i64)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Id>, E> {
        match v.parse::<i64>() {
            Ok(n) => Ok(Some(Id::Num(n))),
            Err(_) => {
                self.scratch.clear();
                self.scratch.push_str(v);
                Ok(Some(Id::Str(self.pool.intern(self.scratch))))
            }
        }
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Id>, E> {
        Ok(None)
    }
}

/// A µs timestamp or duration (number or numeric string) in ns.
struct TimeSeed;

impl<'de> DeserializeSeed<'de> for TimeSeed {
    type Value = Option<i64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<i64>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TimeSeed {
    type Value = Option<i64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a time in µs")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<i64>, E> {
        Ok(v.checked_mul(1000))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<i64>, E> {
        Ok(i64::try_from(v).ok().and_then(|v| v.checked_mul(1000)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<i64>, E> {
        Ok(us_to_ns(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<i64>, E> {
        Ok(v.trim().parse::<f64>().ok().and_then(us_to_ns))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<i64>, E> {
        Ok(None)
    }
}

/// Reads an `args` object into the state's arg buffers (values rendered as text;
/// nested objects and arrays as compact JSON).
struct ArgsSeed<'a, 'p> {
    state: &'a mut State<'p>,
}

impl<'de, 'a, 'p> DeserializeSeed<'de> for ArgsSeed<'a, 'p> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a, 'p> Visitor<'de> for ArgsSeed<'a, 'p> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.state;
        while map.next_key_seed(StrSeed { scratch: &mut st.scratch })?.is_some() {
            let key = st.pool.intern(&st.scratch);
            let value: serde_json::Value = map.next_value()?;
            let slot = st.arg_used;
            if st.arg_values.len() <= slot {
                st.arg_values.push(String::new());
                st.arg_keys.push(0);
            }
            st.arg_keys[slot] = key;
            let out = &mut st.arg_values[slot];
            out.clear();
            match value {
                serde_json::Value::Null => continue,
                serde_json::Value::String(s) => out.push_str(&s),
                other => out.push_str(&other.to_string()),
            }
            st.arg_used += 1;
        }
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

impl<'p> State<'p> {
    fn line_of(&mut self, pid: Id, tid: Id) -> u32 {
        let key = (pid, tid);
        if let Some(&l) = self.lines.get(&key) {
            return l;
        }
        let l = self.line_list.len() as u32;
        self.line_list.push(key.clone());
        self.lines.insert(key, l);
        l
    }

    fn arg_text(&self, start: usize, key: u32) -> Option<&str> {
        (start..self.arg_used).find(|&j| self.arg_keys[j] == key).map(|j| self.arg_values[j].as_str())
    }

    fn finish_event(&mut self, ev: Pending) {
        let pid = ev.pid.clone().unwrap_or(Id::Num(0));
        let tid = ev.tid.clone().unwrap_or(Id::Num(0));
        match ev.ph {
            b'M' => {
                let Some(value) = self.arg_text(ev.args_start, self.key_ids.name).map(str::to_string) else { return };
                let id = self.pool.intern(&value);
                match self.pool.get(ev.name) {
                    Some("process_name") => {
                        self.process_names.insert(pid, id);
                    }
                    Some("thread_name") => {
                        self.thread_names.insert((pid, tid), id);
                    }
                    _ => {}
                }
            }
            b'X' | b'i' | b'I' | b'C' => {
                let Some(ts) = ev.ts_ns else {
                    self.bad_times += 1;
                    return;
                };
                let dur = if ev.ph == b'X' { ev.dur_ns.unwrap_or(0).max(0) } else { 0 };
                let line = self.line_of(pid, tid);
                let keys: Vec<u32> = self.arg_keys[ev.args_start..self.arg_used].to_vec();
                self.push(line, ev.name, ev.cat, (ts, dur), ev.args_start, &keys);
            }
            b'B' => {
                let Some(ts) = ev.ts_ns else {
                    self.bad_times += 1;
                    return;
                };
                let keys = self.arg_keys[ev.args_start..self.arg_used].to_vec();
                let values = self.arg_values[ev.args_start..self.arg_used].to_vec();
                self.open_b.entry((pid, tid)).or_default().push(OpenB { name: ev.name, cat: ev.cat, ts_ns: ts, keys, values });
            }
            b'E' => {
                let Some(ts) = ev.ts_ns else {
                    self.bad_times += 1;
                    return;
                };
                let Some(open) = self.open_b.get_mut(&(pid.clone(), tid.clone())).and_then(|s| s.pop()) else {
                    self.unmatched_e += 1;
                    return;
                };
                let line = self.line_of(pid, tid);
                // E args are merged over B args.
                let e_keys: Vec<u32> = self.arg_keys[ev.args_start..self.arg_used].to_vec();
                let mut keys = open.keys.clone();
                let mut values = open.values.clone();
                for (j, k) in e_keys.iter().enumerate() {
                    let v = self.arg_values[ev.args_start + j].clone();
                    match keys.iter().position(|x| x == k) {
                        Some(p) => values[p] = v,
                        None => {
                            keys.push(*k);
                            values.push(v);
                        }
                    }
                }
                let start = self.arg_used;
                for (k, v) in keys.iter().zip(values) {
                    if self.arg_values.len() <= self.arg_used {
                        self.arg_values.push(String::new());
                        self.arg_keys.push(0);
                    }
                    self.arg_keys[self.arg_used] = *k;
                    self.arg_values[self.arg_used] = v;
                    self.arg_used += 1;
                }
                self.push(line, open.name, open.cat, (open.ts_ns, (ts - open.ts_ns).max(0)), start, &keys);
            }
            0 => {}
            _ => self.dropped_flows += 1,
        }
    }

    /// Appends an event spanning `(ts, dur)` ns, with its args from `args_start` on.
    fn push(&mut self, line: u32, name: u32, cat: u32, (ts, dur): (i64, i64), args_start: usize, keys: &[u32]) {
        let c = &mut self.chunk;
        let i = c.push_event(line, name, NO_STR, cat, ts, dur);
        let capacity = c.capacity();
        // PyTorch's profiler marks each step as `ProfilerStep#<N>` (what `prof.step()` records).
        if let Some(n) = self.pool.get(name).and_then(|n| n.strip_prefix("ProfilerStep#")).and_then(|n| n.parse().ok()) {
            c.step.set(i, capacity, n);
        }
        for (j, &key) in keys.iter().enumerate() {
            let value = &self.arg_values[args_start + j];
            let key_name = self.pool.get(key).unwrap_or("");
            let int = || value.trim().parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f as i64);
            match key_name {
                "hlo_op" => c.hlo_op.set(i, capacity, self.pool.intern(value)),
                "hlo_module" => c.hlo_module.set(i, capacity, self.pool.intern(value)),
                "tf_op" => c.tf_op.set(i, capacity, self.pool.intern(value)),
                "_src" => c.src.set(i, capacity, self.pool.intern(value)),
                "program_id" if int().is_some() => c.program_id.set(i, capacity, int().unwrap()),
                "step_num" if int().is_some() => c.step.set(i, capacity, int().unwrap()),
                "correlation_id" | "correlation" if int().is_some() => c.correlation_id.set(i, capacity, int().unwrap()),
                "device_ordinal" if int().is_some() => c.device_ordinal.set(i, capacity, int().unwrap()),
                _ => c.push_arg(key, value),
            }
        }
        c.end_args();
    }
}
