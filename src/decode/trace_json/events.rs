//! One stretch of a `traceEvents` array → a [`Piece`]: events as columns, with the strings,
//! lines and names the stretch met in a pool of its own.
//!
//! The JSON is read through serde visitors straight into event columns: no DOM, no String
//! per event (strings are interned or appended to the chunk's value buffer), so memory stays
//! proportional to the events kept, not to the text. What a stretch cannot settle alone is
//! kept for [`super::pieces::join`]: `B` events still open at its end, and `E` events whose
//! `B` came before it.

use crate::model::{EventChunk, StringPool, NO_STR};
use rustc_hash::FxHashMap as HashMap;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A process or thread id: a number, or a string that is not one (ids into the piece's pool).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(super) enum Id {
    Num(i64),
    Str(u32),
}

/// A `B` event waiting for its `E`, with its args.
pub(super) struct OpenB {
    pub name: u32,
    pub cat: u32,
    pub ts_ns: i64,
    pub keys: Vec<u32>,
    pub values: Vec<String>,
}

/// An `E` event that found no open `B` on its thread within its piece.
pub(super) struct LoneE {
    pub thread: (Id, Id),
    pub ts_ns: i64,
    pub keys: Vec<u32>,
    pub values: Vec<String>,
}

/// What one stretch of the events array holds. String ids (names, categories, arg keys,
/// string pids/tids) are into `pool`, line numbers into `line_list`.
pub(super) struct Piece {
    pub pool: StringPool,
    pub chunk: EventChunk,
    /// (pid, tid) of each line, in order of first event.
    pub line_list: Vec<(Id, Id)>,
    lines: HashMap<(Id, Id), u32>,
    pub process_names: HashMap<Id, u32>,
    /// Kineto's `process_labels` (`GPU 0`, `MTIA 9`, `CPU`): the device a process stands for.
    pub process_labels: HashMap<Id, u32>,
    pub thread_names: HashMap<(Id, Id), u32>,
    /// `B` events with no `E` yet, per thread, innermost last.
    pub open_b: HashMap<(Id, Id), Vec<OpenB>>,
    /// `E` events that closed nothing here, in order: they close `B`s of earlier pieces.
    pub lone_e: Vec<LoneE>,
    /// Array elements read (events of every phase, and empty objects).
    pub total: i64,
    pub dropped_flows: i64,
    pub bad_times: i64,
    /// Args of the event being read: slots `0..arg_used` are set.
    arg_keys: Vec<u32>,
    arg_values: Vec<String>,
    arg_used: usize,
    scratch: String,
}

/// The top-level object around the events array.
#[derive(Default)]
pub(super) struct Top {
    pub display_time_unit: Option<String>,
    pub base_time_ns: Option<i64>,
    pub saw_events_key: bool,
    /// Kineto's `deviceProperties` names, in order.
    pub device_kinds: Vec<String>,
    /// `traceEvents` held [`PIECES_MARKER`]: its array was read in pieces.
    pub saw_marker: bool,
    /// Kineto's `distributedInfo`: the file's rank in a distributed job.
    pub distributed: Distributed,
    /// A key only Kineto (PyTorch's profiler) writes: `schemaVersion`, `deviceProperties`,
    /// `distributedInfo`.
    pub kineto: bool,
}

/// Kineto's `distributedInfo` (`{"backend": "nccl", "rank": 3, "world_size": 8, ...}`).
#[derive(Default)]
pub(super) struct Distributed {
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
}

impl Distributed {
    fn read(v: &serde_json::Value) -> Distributed {
        // Numbers may be written as text by some exporters.
        let int = |key: &str| match v.get(key) {
            Some(serde_json::Value::Number(n)) => n.as_i64(),
            Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        let backend = v.get("backend").and_then(|b| b.as_str()).filter(|b| !b.is_empty()).map(str::to_string);
        Distributed { rank: int("rank").filter(|r| *r >= 0), world_size: int("world_size").filter(|w| *w > 0), backend }
    }
}

/// Stands in for the events array in the top-level text when the array is read in pieces
/// (JSON text of a string no trace holds).
pub(super) const PIECES_MARKER: &str = "\u{0}profq:events-read-in-pieces";

/// A Kineto category as today's Kineto names it: 2021-era traces wrote `Operator`,
/// `Kernel`, `Runtime`, `Driver`, `Memcpy` and `Memset` for `cpu_op`, `kernel`,
/// `cuda_runtime`, `cuda_driver`, `gpu_memcpy` and `gpu_memset`; every rule reads today's.
pub(super) fn today_category(cat: &str) -> &str {
    match cat {
        "Operator" => "cpu_op",
        "Kernel" => "kernel",
        "Runtime" => "cuda_runtime",
        "Driver" => "cuda_driver",
        "Memcpy" => "gpu_memcpy",
        "Memset" => "gpu_memset",
        other => other,
    }
}

fn us_to_ns(us: f64) -> Option<i64> {
    let ns = (us * 1000.0).round();
    if ns.is_finite() && ns.abs() < 9.0e18 {
        Some(ns as i64)
    } else {
        None
    }
}

/// Reads a whole trace JSON: the top-level object (or bare array) and, unless the array was
/// replaced by [`PIECES_MARKER`], its events into `piece`.
pub(super) fn read_top<'de, D: Deserializer<'de>>(d: D, top: &mut Top, piece: &mut Piece) -> Result<(), D::Error> {
    TopSeed { top, piece }.deserialize(d)
}

/// Reads a JSON array of trace events into `piece`.
pub(super) fn read_events<'de, D: Deserializer<'de>>(d: D, piece: &mut Piece) -> Result<(), D::Error> {
    let mut top = Top::default();
    EventsSeed { piece, top: &mut top }.deserialize(d)
}

struct TopSeed<'a> {
    top: &'a mut Top,
    piece: &'a mut Piece,
}

impl<'de, 'a> DeserializeSeed<'de> for TopSeed<'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for TopSeed<'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace object with traceEvents, or an array of trace events")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<KeyName>()? {
            match key.0.as_str() {
                "traceEvents" => {
                    self.top.saw_events_key = true;
                    map.next_value_seed(EventsSeed { piece: &mut *self.piece, top: &mut *self.top })?;
                }
                "displayTimeUnit" => {
                    self.top.display_time_unit = map.next_value::<Option<String>>()?;
                }
                "deviceProperties" => {
                    self.top.kineto = true;
                    // Kineto: [{"id": 0, "name": "NVIDIA H100 80GB HBM3", ...}, ...]
                    let props = map.next_value::<Option<Vec<serde_json::Value>>>()?.unwrap_or_default();
                    for p in props {
                        if let Some(name) = p.get("name").and_then(|n| n.as_str()) {
                            if !self.top.device_kinds.iter().any(|k| k == name) {
                                self.top.device_kinds.push(name.to_string());
                            }
                        }
                    }
                }
                "schemaVersion" => {
                    self.top.kineto = true;
                    map.next_value::<IgnoredAny>()?;
                }
                "distributedInfo" => {
                    self.top.kineto = true;
                    let info = map.next_value::<Option<serde_json::Value>>()?.unwrap_or_default();
                    self.top.distributed = Distributed::read(&info);
                }
                "baseTimeNanoseconds" => {
                    self.top.base_time_ns = map.next_value::<Option<serde_json::Number>>()?.and_then(|n| n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)));
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.top.saw_events_key = true;
        EventsSeed { piece: self.piece, top: self.top }.visit_seq(seq)
    }
}

/// Top-level keys are few; an owned String per key is fine.
struct KeyName(String);
impl<'de> serde::Deserialize<'de> for KeyName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(KeyName(String::deserialize(d)?))
    }
}

struct EventsSeed<'a> {
    piece: &'a mut Piece,
    top: &'a mut Top,
}

impl<'de, 'a> DeserializeSeed<'de> for EventsSeed<'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for EventsSeed<'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(EventSeed { piece: &mut *self.piece })?.is_some() {}
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if v != PIECES_MARKER {
            return Err(E::invalid_type(de::Unexpected::Str(v), &self));
        }
        self.top.saw_marker = true;
        Ok(())
    }
}

struct EventSeed<'a> {
    piece: &'a mut Piece,
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

/// The fields of the event being read.
#[derive(Default)]
struct Pending {
    ph: u8,
    name: u32,
    cat: u32,
    pid: Option<Id>,
    tid: Option<Id>,
    ts_ns: Option<i64>,
    dur_ns: Option<i64>,
}

impl<'de, 'a> DeserializeSeed<'de> for EventSeed<'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for EventSeed<'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.piece;
        st.total += 1;
        st.arg_used = 0;
        let mut ev = Pending { name: NO_STR, cat: NO_STR, ..Default::default() };
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::Ph => {
                    let s = map.next_value_seed(TextSeed { out: &mut st.scratch, nested: false })?;
                    ev.ph = if s { st.scratch.bytes().next().unwrap_or(0) } else { 0 };
                }
                EventKey::Name => {
                    if map.next_value_seed(TextSeed { out: &mut st.scratch, nested: false })? {
                        ev.name = st.pool.intern(&st.scratch);
                    }
                }
                EventKey::Cat => {
                    if map.next_value_seed(TextSeed { out: &mut st.scratch, nested: false })? {
                        ev.cat = st.pool.intern(today_category(&st.scratch));
                    }
                }
                EventKey::Pid => ev.pid = map.next_value_seed(IdSeed { pool: &mut st.pool })?,
                EventKey::Tid => ev.tid = map.next_value_seed(IdSeed { pool: &mut st.pool })?,
                EventKey::Ts => ev.ts_ns = map.next_value_seed(TimeSeed)?,
                EventKey::Dur => ev.dur_ns = map.next_value_seed(TimeSeed)?,
                // An event's args are the last `args` object it holds.
                EventKey::Args => {
                    st.arg_used = 0;
                    map.next_value_seed(ArgsSeed { piece: &mut *st })?;
                }
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        st.finish_event(ev);
        Ok(())
    }
    // Stray non-objects in the array are counted and skipped.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.piece.total += 1;
        Ok(())
    }
}

struct IdSeed<'a> {
    pool: &'a mut StringPool,
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
            Err(_) => Ok(Some(Id::Str(self.pool.intern(v)))),
        }
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Id>, E> {
        Ok(None)
    }
}

/// A µs timestamp or duration (number or numeric string) in ns, read from its decimal text so
/// that no digit is lost: as an f64, a ts of 1.7e15 µs (epoch µs) keeps only 0.25 µs steps.
struct TimeSeed;

impl<'de> DeserializeSeed<'de> for TimeSeed {
    type Value = Option<i64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<i64>, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Ok(us_text_to_ns(raw.get()))
    }
}

/// µs written as JSON (a number, or a string holding one; null is none) in ns: the integer
/// and the first three decimals exactly, the fourth rounding half away from zero. A number
/// with an exponent is read as an f64.
pub(super) fn us_text_to_ns(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text).trim();
    if text.contains(['e', 'E']) {
        return text.parse::<f64>().ok().and_then(us_to_ns);
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns: i64 = if whole.is_empty() { 0 } else { whole.parse::<i64>().ok()? }.checked_mul(1000)?;
    let f = fraction.as_bytes();
    let digit = |k: usize| f.get(k).map_or(0, |b| (b - b'0') as i64);
    ns = ns.checked_add(digit(0) * 100 + digit(1) * 10 + digit(2))?;
    if digit(3) >= 5 {
        ns = ns.checked_add(1)?;
    }
    Some(if negative { -ns } else { ns })
}

/// Reads an `args` object into the piece's arg slots (values rendered as text;
/// nested objects and arrays as compact JSON).
struct ArgsSeed<'a> {
    piece: &'a mut Piece,
}

impl<'de, 'a> DeserializeSeed<'de> for ArgsSeed<'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for ArgsSeed<'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.piece;
        while map.next_key_seed(TextSeed { out: &mut st.scratch, nested: false })?.is_some() {
            let key = st.pool.intern(&st.scratch);
            let slot = st.arg_used;
            if st.arg_values.len() <= slot {
                st.arg_values.push(String::new());
                st.arg_keys.push(0);
            }
            st.arg_keys[slot] = key;
            if map.next_value_seed(TextSeed { out: &mut st.arg_values[slot], nested: true })? {
                st.arg_used += 1;
            }
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

/// Renders a JSON value as text into `out` (cleared first): strings as they are, numbers and
/// bools as JSON writes them, objects and arrays as compact JSON when `nested` (arg values),
/// else skipped (names, categories). Returns false for null and for what it skipped.
struct TextSeed<'a> {
    out: &'a mut String,
    nested: bool,
}

impl<'de, 'a> DeserializeSeed<'de> for TextSeed<'a> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        self.out.clear();
        d.deserialize_any(self)
    }
}

impl<'de, 'a> Visitor<'de> for TextSeed<'a> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.out.push_str(v);
        Ok(true)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.out.push_str(itoa::Buffer::new().format(v));
        Ok(true)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.out.push_str(itoa::Buffer::new().format(v));
        Ok(true)
    }
    // As serde_json writes a finite f64 (a parsed JSON number always is one).
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.out.push_str(ryu::Buffer::new().format_finite(v));
        Ok(true)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(true)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        if !self.nested {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(false);
        }
        let value = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        self.out.push_str(&value.to_string());
        Ok(true)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        if !self.nested {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(false);
        }
        let value = serde_json::Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        self.out.push_str(&value.to_string());
        Ok(true)
    }
}

use serde::Deserialize as _;

impl Piece {
    pub fn new() -> Piece {
        Piece {
            pool: StringPool::default(),
            chunk: EventChunk::new(),
            line_list: Vec::new(),
            lines: HashMap::default(),
            process_names: HashMap::default(),
            process_labels: HashMap::default(),
            thread_names: HashMap::default(),
            open_b: HashMap::default(),
            lone_e: Vec::new(),
            total: 0,
            dropped_flows: 0,
            bad_times: 0,
            arg_keys: Vec::new(),
            arg_values: Vec::new(),
            arg_used: 0,
            scratch: String::new(),
        }
    }

    fn line_of(&mut self, thread: (Id, Id)) -> u32 {
        line_of(&mut self.lines, &mut self.line_list, thread)
    }

    fn arg_text(&self, key: &str) -> Option<&str> {
        let key = self.pool.lookup(key)?;
        (0..self.arg_used).find(|&j| self.arg_keys[j] == key).map(|j| self.arg_values[j].as_str())
    }

    fn finish_event(&mut self, ev: Pending) {
        let pid = ev.pid.unwrap_or(Id::Num(0));
        let tid = ev.tid.unwrap_or(Id::Num(0));
        let args = 0..self.arg_used;
        match ev.ph {
            b'M' => {
                let key = if self.pool.get(ev.name) == Some("process_labels") { "labels" } else { "name" };
                let Some(value) = self.arg_text(key).map(str::to_string) else { return };
                let id = self.pool.intern(&value);
                match self.pool.get(ev.name) {
                    Some("process_name") => {
                        self.process_names.insert(pid, id);
                    }
                    Some("process_labels") => {
                        self.process_labels.insert(pid, id);
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
                let line = self.line_of((pid, tid));
                push(&mut self.chunk, &mut self.pool, line, (ev.name, ev.cat), (ts, dur), &self.arg_keys[args.clone()], &self.arg_values[args]);
            }
            b'B' => {
                let Some(ts) = ev.ts_ns else {
                    self.bad_times += 1;
                    return;
                };
                let open = OpenB { name: ev.name, cat: ev.cat, ts_ns: ts, keys: self.arg_keys[args.clone()].to_vec(), values: self.arg_values[args].to_vec() };
                self.open_b.entry((pid, tid)).or_default().push(open);
            }
            b'E' => {
                let Some(ts) = ev.ts_ns else {
                    self.bad_times += 1;
                    return;
                };
                let thread = (pid, tid);
                let Some(open) = self.open_b.get_mut(&thread).and_then(|s| s.pop()) else {
                    self.lone_e.push(LoneE { thread, ts_ns: ts, keys: self.arg_keys[args.clone()].to_vec(), values: self.arg_values[args].to_vec() });
                    return;
                };
                let line = self.line_of(thread);
                close_b(&mut self.chunk, &mut self.pool, line, open, ts, &self.arg_keys[args.clone()], &self.arg_values[args]);
            }
            0 => {}
            _ => self.dropped_flows += 1,
        }
    }
}

/// The line of a (pid, tid), numbered in order of first use.
pub(super) fn line_of(lines: &mut HashMap<(Id, Id), u32>, line_list: &mut Vec<(Id, Id)>, thread: (Id, Id)) -> u32 {
    if let Some(&l) = lines.get(&thread) {
        return l;
    }
    let l = line_list.len() as u32;
    line_list.push(thread.clone());
    lines.insert(thread, l);
    l
}

/// Appends the event a `B` and its `E` at `ts` make: the `E`'s args are merged over the `B`'s.
pub(super) fn close_b(c: &mut EventChunk, pool: &mut StringPool, line: u32, open: OpenB, ts: i64, e_keys: &[u32], e_values: &[String]) {
    let OpenB { name, cat, ts_ns, mut keys, mut values } = open;
    for (k, v) in e_keys.iter().zip(e_values) {
        match keys.iter().position(|x| x == k) {
            Some(p) => values[p].clone_from(v),
            None => {
                keys.push(*k);
                values.push(v.clone());
            }
        }
    }
    push(c, pool, line, (name, cat), (ts_ns, (ts - ts_ns).max(0)), &keys, &values);
}

/// Appends an event spanning `(ts, dur)` ns with its args; the args profq types (`hlo_op`,
/// `step_num`, `correlation`, …) go to their columns, the rest stay args.
pub(super) fn push(c: &mut EventChunk, pool: &mut StringPool, line: u32, (name, cat): (u32, u32), (ts, dur): (i64, i64), keys: &[u32], values: &[String]) {
    let i = c.push_event(line, name, NO_STR, cat, ts, dur);
    let capacity = c.capacity();
    if let Some(n) = pool.get(name).and_then(crate::model::names::profiler_step) {
        c.step.set(i, capacity, n);
    }
    for (&key, value) in keys.iter().zip(values) {
        let key_name = pool.get(key).unwrap_or("");
        let int = || value.trim().parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f as i64);
        match key_name {
            "hlo_op" => c.hlo_op.set(i, capacity, pool.intern(value)),
            "hlo_module" => c.hlo_module.set(i, capacity, pool.intern(value)),
            "tf_op" => c.tf_op.set(i, capacity, pool.intern(value)),
            "_src" => c.src.set(i, capacity, pool.intern(value)),
            "program_id" if int().is_some() => c.program_id.set(i, capacity, int().unwrap()),
            "step_num" if int().is_some() => c.step.set(i, capacity, int().unwrap()),
            "correlation_id" | "correlation" if int().is_some() => c.correlation_id.set(i, capacity, int().unwrap()),
            "device_ordinal" if int().is_some() => c.device_ordinal.set(i, capacity, int().unwrap()),
            _ => c.push_arg(key, value),
        }
    }
    c.end_args();
}
