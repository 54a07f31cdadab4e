//! XPlane (`*.xplane.pb`, an XSpace) → [`Capture`].
//!
//! The file is read in place (memory-mapped by the caller) with the zero-copy wire reader:
//! plane headers and metadata are decoded first, then the lines are cut into units of
//! events that the workers take from a shared queue, one [`EventChunk`] per unit. Field
//! numbers are those of `proto/xplane.proto`. Times become integer ns relative to the host's
//! profile start: `line.timestamp_ns + offset_ps`, rounded at both ends so nesting is
//! preserved.
//!
//! In the order a file goes through them: [`scan`] (the layout, no event decoded),
//! [`metadata`] (each plane's event and stat metadata), [`windows`] (a large group cut at
//! event times), `units` (lines cut into work units), `events` (the event loop) and `stats`
//! (stat values into typed columns and args).

mod events;
mod metadata;
mod scan;
mod stats;
#[cfg(test)]
mod tests;
mod units;
mod windows;

use super::hlo::index_hlo_proto;
use super::wire::{last_varint, leading_field1_varint, varint_at, Fields, Value, WireError};
use crate::model::{encloses, nest_lines, Capture, EventChunk, Line, OpenBefore, OpenEvent, Plane, PlaneKind, StringPool, TimeWindow, CARRIED_TAG, NO_STR};
use events::{decode_unit, event_span_ns, next_event_field, read_event, StatSlices};
pub use metadata::plane_kind;
use metadata::{prepare_planes, IdMap, PlaneCtx, Role, StatInfo, StatSkips, StatValue};
use scan::{plane_fields, release_read, scan_lines, stat_metadata_name, PendingLine, PlaneFields, RELEASE_SCANNED_ABOVE};
pub use scan::{scan, Layout, PlaneRef, Release};
use stats::{
    bytes_text, map_entry, push_varint_arg, read_stat, set_int_column, set_string_column, set_typed_column, stat_id_and_value, usual_varint_value, value_f64,
    value_i64, value_text, write_value,
};
use std::collections::HashMap;
use units::{decode_events, LineEvents, LineJob, ALL_ARGS_PER_EVENT, ARG_BYTES_PER_EVENT, EVENTS_PER_MARK, MIN_STAT_BYTES};
pub use windows::decode_group;

/// Errors carry the file offset where decoding failed.
pub type Result<T> = std::result::Result<T, WireError>;

/// Decodes an XSpace and appends its planes, lines and events to `capture` (all planes as
/// one part). Returns the host's profile start (ns since epoch) when the profile records it.
pub fn decode_xspace(bytes: &[u8], default_host: &str, capture: &mut Capture) -> Result<Option<i64>> {
    let layout = scan(bytes, &mut |_| {})?;
    let host = register_host(&layout, default_host, capture);
    let planes: Vec<&PlaneRef> = layout.planes.iter().collect();
    decode_planes(&planes, host, layout.start_epoch, capture, &|_| {})?;
    Ok(layout.start_epoch)
}

/// Records the XSpace's notes and its host in `capture`; returns the host's pool id.
/// The file name (`<host>.xplane.pb`) names the host, as XProf does: it is unique within a
/// session even when every XSpace reports the same hostname.
pub fn register_host(layout: &Layout, default_host: &str, capture: &mut Capture) -> u32 {
    capture.meta.quality_warnings.extend(layout.notes.iter().cloned());
    let host_name = if default_host.is_empty() { layout.hostnames.first().cloned().unwrap_or_else(|| "host".into()) } else { default_host.to_string() };
    let host = capture.strings.intern(&host_name);
    if !capture.meta.hosts.contains(&host_name) {
        capture.meta.hosts.push(host_name);
    }
    if layout.planes.iter().any(|p| p.has_device_ops) && !capture.meta.hosts_with_device_ops.contains(&host) {
        capture.meta.hosts_with_device_ops.push(host);
    }
    host
}

/// Decodes `planes` (whole planes of one host's XSpace) and appends them to `capture`.
/// `start_epoch` is the host's profile start, to which line timestamps are made relative.
/// `read` is given each plane's bytes once they are decoded and no longer needed.
pub fn decode_planes(planes: &[&PlaneRef], host: u32, start_epoch: Option<i64>, capture: &mut Capture, read: &Release<'_>) -> Result<()> {
    let (ctxs, jobs) = prepare_planes(planes, host, start_epoch, capture, read)?;
    decode_whole(planes, &jobs, &ctxs, capture, read)
}

/// Every event of the prepared `planes` into `capture`, as one part.
fn decode_whole(planes: &[&PlaneRef], jobs: &[LineJob], ctxs: &[PlaneCtx], capture: &mut Capture, read: &Release<'_>) -> Result<()> {
    let whole: Vec<_> = jobs.iter().map(|j| 0..j.events.count).collect();
    let chunks = decode_events(jobs, &whole, ctxs, capture, &OpenBefore::default());
    // The events are decoded: the planes' pages can go before their chunks are put together.
    for plane in planes {
        read(plane.bytes);
    }
    push_chunks(capture, chunks?);
    Ok(())
}

fn push_chunks(capture: &mut Capture, chunks: Vec<EventChunk>) {
    for chunk in chunks {
        capture.meta.num_complete_events += chunk.len() as i64;
        capture.chunks.push(chunk);
    }
}

/// Events per time window of a plane streamed in windows; `PROFQ_WINDOW_EVENTS` overrides
/// it. A plane of more than twice as many is decoded, derived and written a window at a
/// time, so that memory holds a window's events rather than the plane's.
pub fn window_events() -> usize {
    std::env::var("PROFQ_WINDOW_EVENTS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(1_000_000)
}
