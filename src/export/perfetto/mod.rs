//! A layout as Perfetto's native trace: TrackEvent packets on one sequence, written packet by
//! packet. Tracks are declared first; slices follow as BEGIN/END packets in time order
//! (instants as INSTANT), names and annotation strings interned on first use.

pub mod check;
pub mod proto;

use super::tracks::{Arg, Layout};
use prost::Message;
use proto::{
    DebugAnnotation, DebugAnnotationName, EventName, InternedData, InternedString, ProcessDescriptor, TracePacket, TrackDescriptor, TrackEvent,
    CHILD_ORDERING_EXPLICIT, SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
};
use std::collections::HashMap;
use std::io::{self, Write};

/// The sequence every packet is on.
const SEQUENCE: u32 = 1;

/// Writes `layout` to `out`.
pub fn write(layout: &Layout, out: &mut dyn Write) -> io::Result<()> {
    let mut w = PacketWriter { out, buf: Vec::with_capacity(256) };
    for (i, t) in layout.tracks.iter().enumerate() {
        let descriptor = TrackDescriptor {
            uuid: Some(t.uuid),
            name: t.process.is_none().then(|| t.name.clone()),
            process: t.process.as_ref().map(|(pid, name)| ProcessDescriptor { pid: Some(*pid), process_name: Some(name.clone()) }),
            parent_uuid: t.parent,
            child_ordering: Some(CHILD_ORDERING_EXPLICIT),
            sibling_order_rank: Some(t.rank),
            description: t.description.clone(),
        };
        let first = i == 0;
        w.packet(&TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            sequence_flags: Some(if first { SEQ_INCREMENTAL_STATE_CLEARED } else { SEQ_NEEDS_INCREMENTAL_STATE }),
            first_packet_on_sequence: first.then_some(true),
            track_descriptor: Some(descriptor),
            ..Default::default()
        })?;
    }
    let mut interned = Interned::default();
    for (ts, kind, _, i) in timeline(layout) {
        let s = &layout.slices[i];
        let mut data = InternedData::default();
        let mut event = TrackEvent { track_uuid: Some(s.track), r#type: Some(kind), ..Default::default() };
        if kind != TYPE_SLICE_END {
            event.name_iid = Some(interned.name(s.name, layout, &mut data));
            event.debug_annotations = s.args.iter().map(|(key, value)| interned.annotation(key, value, layout, &mut data)).collect();
            event.flow_ids.extend(&s.flow_out);
            event.terminating_flow_ids.extend(s.flow_in);
        }
        let has_data = !(data.event_names.is_empty() && data.debug_annotation_names.is_empty() && data.debug_annotation_string_values.is_empty());
        w.packet(&TracePacket {
            timestamp: Some(ts as u64),
            trusted_packet_sequence_id: Some(SEQUENCE),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            track_event: Some(event),
            interned_data: has_data.then_some(data),
            ..Default::default()
        })?;
    }
    Ok(())
}

/// Every BEGIN, END and INSTANT of the layout in the order a reader must see them: by time;
/// at one instant ENDs first (the latest begun first), then instants, then BEGINs (the
/// longest first, as laid out). Entries: (time, type, tie-break, slice).
pub fn timeline(layout: &Layout) -> Vec<(i64, i32, u64, usize)> {
    // Slices begin in layout order sorted by (start, longest first): the begin order.
    let mut begun: Vec<usize> = (0..layout.slices.len()).collect();
    begun.sort_by(|&a, &b| {
        let (x, y) = (&layout.slices[a], &layout.slices[b]);
        x.start.cmp(&y.start).then(y.dur.cmp(&x.dur)).then(a.cmp(&b))
    });
    let mut order = Vec::with_capacity(layout.slices.len() * 2);
    for (seq, &i) in begun.iter().enumerate() {
        let s = &layout.slices[i];
        let seq = seq as u64;
        if s.dur <= 0 {
            order.push((s.start, TYPE_INSTANT, seq, i));
        } else {
            order.push((s.start, TYPE_SLICE_BEGIN, seq, i));
            order.push((s.start + s.dur, TYPE_SLICE_END, u64::MAX - seq, i));
        }
    }
    let rank = |kind: i32| match kind {
        TYPE_SLICE_END => 0,
        TYPE_INSTANT => 1,
        _ => 2,
    };
    order.sort_unstable_by_key(|&(ts, kind, tie, _)| (ts, rank(kind), tie));
    order
}

/// Interned ids of the sequence, given in order of first use (so that the bytes depend on
/// the layout alone): event names, annotation keys and annotation string values.
#[derive(Default)]
struct Interned {
    names: HashMap<u32, u64>,
    values: HashMap<u32, u64>,
    keys: HashMap<&'static str, u64>,
}

impl Interned {
    fn name(&mut self, id: u32, layout: &Layout, data: &mut InternedData) -> u64 {
        let next = self.names.len() as u64 + 1;
        *self.names.entry(id).or_insert_with(|| {
            data.event_names.push(EventName { iid: Some(next), name: Some(layout.strings[id as usize].clone()) });
            next
        })
    }

    fn annotation(&mut self, key: &'static str, value: &Arg, layout: &Layout, data: &mut InternedData) -> DebugAnnotation {
        let next = self.keys.len() as u64 + 1;
        let key_iid = *self.keys.entry(key).or_insert_with(|| {
            data.debug_annotation_names.push(DebugAnnotationName { iid: Some(next), name: Some(key.to_string()) });
            next
        });
        let mut a = DebugAnnotation { name_iid: Some(key_iid), ..Default::default() };
        match value {
            Arg::Int(v) => a.int_value = Some(*v),
            Arg::Float(v) => a.double_value = Some(*v),
            Arg::Bool(v) => a.bool_value = Some(*v),
            Arg::Text(id) => {
                let next = self.values.len() as u64 + 1;
                let iid = *self.values.entry(*id).or_insert_with(|| {
                    data.debug_annotation_string_values.push(InternedString { iid: Some(next), str: Some(layout.strings[*id as usize].as_bytes().to_vec()) });
                    next
                });
                a.string_value_iid = Some(iid);
            }
        }
        a
    }
}

/// Writes packets as the fields of a `Trace`: tag, length, bytes.
struct PacketWriter<'a> {
    out: &'a mut dyn Write,
    buf: Vec<u8>,
}

impl PacketWriter<'_> {
    fn packet(&mut self, p: &TracePacket) -> io::Result<()> {
        self.buf.clear();
        // Field 1 (packet), wire type 2 (length-delimited).
        self.buf.push(0x0A);
        prost::encoding::encode_varint(p.encoded_len() as u64, &mut self.buf);
        p.encode(&mut self.buf).map_err(io::Error::other)?;
        self.out.write_all(&self.buf)
    }
}
