//! Perfetto's import rules, checked on a written trace (decoded with the same structs):
//! every track is declared once, before use, with its parent declared; timestamps never go
//! back on the sequence; slices on a track begin and end balanced and strictly nested;
//! interned ids are defined, after a packet that cleared the state, before they are used;
//! every flow joins two slices. Tests run it on every export.

use super::proto::{Trace, SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END};
use prost::Message;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What a valid trace holds.
#[derive(Debug, Default)]
pub struct Checked {
    pub packets: usize,
    pub tracks: usize,
    /// Slices (BEGIN packets) and instants per track name.
    pub slices_by_track: BTreeMap<String, usize>,
    /// The summed duration of the slices per track name, in the trace's time unit (ns).
    pub time_by_track: BTreeMap<String, u64>,
    pub slices: usize,
    pub instants: usize,
    pub flows: usize,
    /// Event names in the order their slices begin.
    pub names: Vec<String>,
}

/// Checks a trace (gzip-compressed or not).
pub fn check(bytes: &[u8]) -> Result<Checked, String> {
    let raw;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut out).map_err(|e| format!("gzip: {e}"))?;
        raw = out;
        &raw[..]
    } else {
        bytes
    };
    let trace = Trace::decode(bytes).map_err(|e| format!("not a trace: {e}"))?;
    let mut c = Checked { packets: trace.packet.len(), ..Default::default() };
    let mut tracks: HashMap<u64, String> = HashMap::new();
    let mut open: HashMap<u64, Vec<(u64, String)>> = HashMap::new();
    let (mut names, mut keys, mut values) = (HashMap::new(), HashSet::new(), HashSet::new());
    let mut cleared = false;
    let mut last_ts = 0u64;
    let mut flows: HashMap<u64, usize> = HashMap::new();
    for (n, p) in trace.packet.iter().enumerate() {
        let at = |what: String| format!("packet {n}: {what}");
        if p.trusted_packet_sequence_id.is_none() {
            return Err(at("no sequence id".into()));
        }
        let flags = p.sequence_flags.unwrap_or(0);
        if flags & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            cleared = true;
            names.clear();
            keys.clear();
            values.clear();
        }
        if let Some(d) = &p.interned_data {
            if !cleared {
                return Err(at("interned data before the state was cleared".into()));
            }
            for e in &d.event_names {
                names.insert(e.iid.ok_or_else(|| at("event name without iid".into()))?, e.name.clone().unwrap_or_default());
            }
            keys.extend(d.debug_annotation_names.iter().filter_map(|k| k.iid));
            values.extend(d.debug_annotation_string_values.iter().filter_map(|v| v.iid));
        }
        if let Some(t) = &p.track_descriptor {
            let uuid = t.uuid.ok_or_else(|| at("track without uuid".into()))?;
            if let Some(parent) = t.parent_uuid {
                if !tracks.contains_key(&parent) {
                    return Err(at(format!("track {uuid}'s parent {parent} is not declared before it")));
                }
            }
            let name = t.name.clone().or_else(|| t.process.as_ref().and_then(|p| p.process_name.clone())).unwrap_or_default();
            if tracks.insert(uuid, name).is_some() {
                return Err(at(format!("track {uuid} declared twice")));
            }
        }
        let Some(e) = &p.track_event else { continue };
        let ts = p.timestamp.ok_or_else(|| at("event without timestamp".into()))?;
        if ts < last_ts {
            return Err(at(format!("timestamp {ts} before {last_ts}")));
        }
        last_ts = ts;
        if flags & SEQ_NEEDS_INCREMENTAL_STATE == 0 || !cleared {
            return Err(at("event on a sequence without incremental state".into()));
        }
        let track = e.track_uuid.ok_or_else(|| at("event without track".into()))?;
        let track_name = tracks.get(&track).ok_or_else(|| at(format!("event on undeclared track {track}")))?.clone();
        for a in &e.debug_annotations {
            if !a.name_iid.is_some_and(|k| keys.contains(&k)) {
                return Err(at(format!("annotation name {:?} not interned", a.name_iid)));
            }
            if let Some(v) = a.string_value_iid {
                if !values.contains(&v) {
                    return Err(at(format!("annotation value {v} not interned")));
                }
            }
        }
        let name = || -> Result<String, String> {
            let iid = e.name_iid.ok_or_else(|| at("event without name".into()))?;
            names.get(&iid).cloned().ok_or_else(|| at(format!("name {iid} not interned")))
        };
        for id in e.flow_ids.iter().chain(&e.terminating_flow_ids) {
            *flows.entry(*id).or_default() += 1;
        }
        match e.r#type {
            Some(TYPE_SLICE_BEGIN) => {
                let name = name()?;
                open.entry(track).or_default().push((ts, name.clone()));
                *c.slices_by_track.entry(track_name).or_default() += 1;
                c.slices += 1;
                c.names.push(name);
            }
            Some(TYPE_SLICE_END) => {
                let stack = open.entry(track).or_default();
                let (begin, _) = stack.pop().ok_or_else(|| at(format!("END without BEGIN on track {track}")))?;
                if ts < begin {
                    return Err(at("slice ends before it begins".into()));
                }
                *c.time_by_track.entry(track_name).or_default() += ts - begin;
            }
            Some(TYPE_INSTANT) => {
                c.names.push(name()?);
                *c.slices_by_track.entry(track_name).or_default() += 1;
                c.instants += 1;
            }
            other => return Err(at(format!("unexpected event type {other:?}"))),
        }
    }
    if let Some((track, stack)) = open.iter().find(|(_, s)| !s.is_empty()) {
        return Err(format!("track {track}: {} slices never end (first {:?})", stack.len(), stack[0].1));
    }
    if let Some((id, n)) = flows.iter().find(|(_, &n)| n != 2) {
        return Err(format!("flow {id} joins {n} slices, not two (a launch and its work)"));
    }
    c.tracks = tracks.len();
    c.flows = flows.len();
    Ok(c)
}
