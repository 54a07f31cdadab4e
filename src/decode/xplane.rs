//! XPlane (`*.xplane.pb`, an XSpace) → [`Capture`].
//!
//! The file is read in place (memory-mapped by the caller) with the zero-copy wire reader:
//! plane headers and metadata are decoded first, then the lines are cut into units of
//! events that the workers take from a shared queue, one [`EventChunk`] per unit. Field
//! numbers are those of `proto/xplane.proto`. Times become integer ns relative to the host's
//! profile start: `line.timestamp_ns + offset_ps`, rounded at both ends so nesting is
//! preserved.

use super::hlo::index_hlo_proto;
use super::wire::{last_varint, leading_field1_varint, varint_at, Fields, Value, WireError};
use crate::model::*;
use std::collections::HashMap;

/// What a stat becomes in the events table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    HloOp,
    HloModule,
    TfOp,
    Src,
    ProgramId,
    Step,
    CorrelationId,
    DeviceOrdinal,
    Arg,
    /// A stat the caller does not read ([`Capture::args_kept`]: an arg, or `_src`, whose key
    /// it does not name), unless the event keeps every arg ([`EventMeta::every_arg`]): then the stat
    /// takes its own role ([`StatInfo::kept_as`]).
    Skip,
}

fn role_of(name: &str) -> Role {
    match name {
        "hlo_op" => Role::HloOp,
        "hlo_module" => Role::HloModule,
        "tf_op" => Role::TfOp,
        "program_id" => Role::ProgramId,
        "step_num" => Role::Step,
        "correlation_id" => Role::CorrelationId,
        "device_ordinal" => Role::DeviceOrdinal,
        "_src" => Role::Src,
        _ => Role::Arg,
    }
}

#[derive(Clone, Copy, Debug)]
struct StatInfo {
    name: u32,
    role: Role,
    /// The role of a [`Role::Skip`] stat on an event that keeps every arg (else `role`).
    kept_as: Role,
}

/// A stat value resolved enough to be applied to an event.
#[derive(Clone, Copy, Debug)]
enum StatValue<'a> {
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(&'a str),
    /// A string already in the run pool (refs, metadata strings).
    Pooled(u32),
    Bytes(&'a [u8]),
}

/// Dense-or-sparse map from protobuf int64 ids (metadata ids are usually small and dense).
struct IdMap<T> {
    dense: Vec<Option<T>>,
    sparse: HashMap<i64, T>,
}

impl<T> IdMap<T> {
    fn new() -> Self {
        IdMap { dense: Vec::new(), sparse: HashMap::new() }
    }
    fn insert(&mut self, id: i64, v: T) {
        if (0..1 << 20).contains(&id) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i] = Some(v);
        } else {
            self.sparse.insert(id, v);
        }
    }
    #[inline]
    fn get(&self, id: i64) -> Option<&T> {
        if (0..self.dense.len() as i64).contains(&id) {
            self.dense[id as usize].as_ref()
        } else if self.sparse.is_empty() {
            None
        } else {
            self.sparse.get(&id)
        }
    }
}

struct EventMeta {
    name: u32,
    display_name: u32,
    /// Its events keep the args [`Role::Skip`] leaves out ([`crate::model::ArgsKept::every_arg_of`]).
    every_arg: bool,
    /// Stats attached to the metadata; event-level stats with the same key win.
    stats: Vec<(StatInfo, OwnedStat)>,
}

#[derive(Clone, Debug)]
enum OwnedStat {
    Int(i64),
    UInt(u64),
    Double(f64),
    Pooled(u32),
}

impl OwnedStat {
    fn as_value(&self) -> StatValue<'static> {
        match *self {
            OwnedStat::Int(v) => StatValue::Int(v),
            OwnedStat::UInt(v) => StatValue::UInt(v),
            OwnedStat::Double(v) => StatValue::Double(v),
            OwnedStat::Pooled(v) => StatValue::Pooled(v),
        }
    }
}

/// Plane-level decoding context shared read-only by the line workers.
struct PlaneCtx {
    stats: IdMap<StatInfo>,
    /// The plane's [`Role::Skip`] stats, dropped as their events are read.
    skips: StatSkips,
    events: IdMap<EventMeta>,
    /// Every arg of every event is kept (no [`Capture::args_kept`]: an ingest).
    all_args: bool,
}

/// The stats [`read_event`] drops on sight by their metadata id, when it is below 128 (one byte:
/// every producer numbers stat metadata from 1 and writes the id first). Most stats of a CPU
/// capture are flow ids and `_src` files that a summary does not read: dropped there, they are
/// neither kept as slices nor looked up again (the 41 MB bench file: 2.4 M of its 3.3 M stats,
/// 5 % of the instructions of its summary, session 39).
struct StatSkips([bool; 128]);

impl StatSkips {
    const NONE: StatSkips = StatSkips([false; 128]);
    /// For a reader of the events' times only.
    const ALL: StatSkips = StatSkips([true; 128]);

    fn of(stats: &IdMap<StatInfo>) -> Self {
        StatSkips(std::array::from_fn(|id| stats.get(id as i64).is_some_and(|info| info.role == Role::Skip)))
    }

    #[inline]
    fn drops(&self, stat: &[u8]) -> bool {
        match *stat {
            [0x08, id, ..] if id < 0x80 => self.0[id as usize],
            _ => false,
        }
    }
}

/// A line whose events are to be decoded: its bytes (at file offset `base`), how many events
/// they hold, and where every [`EVENTS_PER_MARK`]-th event's field starts, so that a worker can
/// start reading at any multiple of it. No per-event index: a million events' slices would
/// be 16 MB written, faulted in and read back only to find each event once more.
struct LineJob<'a> {
    line_index: u32,
    timestamp_ns: i64,
    bytes: &'a [u8],
    base: usize,
    events: LineEvents,
    plane: usize,
}

/// The fewest bytes an event's stat with a metadata id takes in its line (its field key and
/// length, the id's key and a one-byte id, a value's key and a one-byte value): what bounds
/// the args a unit reserves room for.
const MIN_STAT_BYTES: usize = 6;

/// Arg text a unit reserves per event ([`decode_unit`]).
const ARG_BYTES_PER_EVENT: usize = 8;

/// Args a unit reserves per event where every arg is kept ([`decode_unit`]).
const ALL_ARGS_PER_EVENT: usize = 2;

/// Events between two marks of a [`LineJob`]; units of work start at multiples of it.
const EVENTS_PER_MARK: usize = 1024;

impl LineJob<'_> {
    /// Where in `bytes` the field of the marked event at or before event `k` starts (event
    /// `k` itself for a multiple of [`EVENTS_PER_MARK`]), or the end of the line for
    /// `k == events`.
    fn mark(&self, k: usize) -> usize {
        if k == self.events.count {
            self.bytes.len()
        } else {
            self.events.marks[k / EVENTS_PER_MARK]
        }
    }

    /// The line's fields from event `k` on: read from the mark at or before it, the events
    /// between passed over.
    fn fields_from(&self, k: usize) -> Result<Fields<'_>> {
        let first = self.mark(k);
        let mut fields = Fields::with_base(&self.bytes[first..], self.base + first);
        if k < self.events.count {
            for _ in 0..k % EVENTS_PER_MARK {
                next_event_field(&mut fields)?;
            }
        }
        Ok(fields)
    }
}

/// A scanned line's events: how many, and where every [`EVENTS_PER_MARK`]-th one's field starts.
#[derive(Default)]
struct LineEvents {
    count: usize,
    marks: Vec<usize>,
}

/// Drops bytes of the file that were read and are not needed again from memory (the
/// caller's mapping), so that RSS holds what is decoded rather than what was read.
pub type Release<'r> = dyn Fn(&[u8]) + Sync + 'r;

/// Planes of more bytes than this together are released as they are scanned.
const RELEASE_SCANNED_ABOVE: usize = 256 << 20;

/// Bytes read in a walk over a line before they are released ([`Release`]).
const RELEASE_BYTES: usize = 8 << 20;

/// Releases `bytes[*from..to]` once it reaches [`RELEASE_BYTES`] (or when `done`).
fn release_read(bytes: &[u8], from: &mut usize, to: usize, done: bool, release: &Release<'_>) {
    if to > *from && (done || to - *from >= RELEASE_BYTES) {
        release(&bytes[*from..to]);
        *from = to;
    }
}

/// Errors carry the file offset where decoding failed.
pub type Result<T> = std::result::Result<T, WireError>;

/// One plane of an XSpace, located but not decoded.
pub struct PlaneRef<'a> {
    pub bytes: &'a [u8],
    /// Offset of `bytes` in the file (for error messages).
    pub off: usize,
    pub name: String,
    pub kind: PlaneKind,
    /// A device plane with events on a device-op line (`XLA Ops`, `Stream #N`).
    pub has_device_ops: bool,
}

/// The top level of an XSpace: where its planes are, and what the host says about itself.
pub struct Layout<'a> {
    pub planes: Vec<PlaneRef<'a>>,
    pub hostnames: Vec<String>,
    /// XSpace errors and warnings, as quality warnings.
    pub notes: Vec<String>,
    /// The host's profile start (ns since epoch), from the `profile_start_time` plane stat.
    pub start_epoch: Option<i64>,
}

/// Reads the XSpace's top level and each plane's header, skipping the events, so that the
/// planes can then be decoded a group at a time ([`decode_planes`]). `scanned` sees each
/// plane's bytes once read (the caller may drop them from memory).
pub fn scan<'a>(bytes: &'a [u8], scanned: &mut dyn FnMut(&[u8])) -> Result<Layout<'a>> {
    let mut layout = Layout { planes: Vec::new(), hostnames: Vec::new(), notes: Vec::new(), start_epoch: None };
    let mut f = Fields::new(bytes);
    while let Some((field, value, off)) = f.next_field()? {
        match field {
            1 => {
                let plane = scan_plane(value.as_bytes(), off, &mut layout.start_epoch)?;
                scanned(plane.bytes);
                layout.planes.push(plane);
            }
            2 | 3 => {
                let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
                let kind = if field == 2 { "error" } else { "warning" };
                layout.notes.push(format!("xspace {kind}: {text}"));
            }
            4 => layout.hostnames.push(String::from_utf8_lossy(value.as_bytes()).into_owned()),
            _ => {}
        }
    }
    Ok(layout)
}

/// A slice of the file and its offset in the file.
type Located<'a> = (&'a [u8], usize);

/// An XPlane's fields, located but not decoded.
struct PlaneFields<'a> {
    name: String,
    lines: Vec<Located<'a>>,
    event_metadata: Vec<Located<'a>>,
    stat_metadata: Vec<Located<'a>>,
    stats: Vec<Located<'a>>,
}

fn plane_fields(bytes: &[u8], off: usize) -> Result<PlaneFields<'_>> {
    let mut p = PlaneFields { name: String::new(), lines: Vec::new(), event_metadata: Vec::new(), stat_metadata: Vec::new(), stats: Vec::new() };
    let mut pf = Fields::with_base(bytes, off);
    while let Some((field, value, voff)) = pf.next_field()? {
        match field {
            2 => p.name = String::from_utf8_lossy(value.as_bytes()).into_owned(),
            3 => p.lines.push((value.as_bytes(), voff)),
            4 => p.event_metadata.push((value.as_bytes(), voff)),
            5 => p.stat_metadata.push((value.as_bytes(), voff)),
            6 => p.stats.push((value.as_bytes(), voff)),
            _ => {}
        }
    }
    Ok(p)
}

/// The id and name of a `stat_metadata` map entry.
fn stat_metadata_name(entry: &[u8], off: usize) -> Result<(i64, &[u8])> {
    let (id, msg) = map_entry(entry, off)?;
    let mut name: &[u8] = b"";
    let mut mf = Fields::with_base(msg.0, msg.1);
    while let Some((field, value, _)) = mf.next_field()? {
        if field == 2 {
            name = value.as_bytes();
        }
    }
    Ok((id, name))
}

fn scan_plane<'a>(bytes: &'a [u8], off: usize, start_epoch: &mut Option<i64>) -> Result<PlaneRef<'a>> {
    let PlaneFields { name, lines, stat_metadata, stats: plane_stats, .. } = plane_fields(bytes, off)?;
    let mut stat_names: HashMap<i64, &[u8]> = HashMap::new();
    for (entry, eoff) in stat_metadata {
        let (id, name) = stat_metadata_name(entry, eoff)?;
        stat_names.insert(id, name);
    }
    for (stat, soff) in plane_stats {
        let (id, value) = stat_id_and_value(stat, soff, |_| NO_STR)?;
        if stat_names.get(&id) == Some(&&b"profile_start_time"[..]) {
            *start_epoch = value_i64(value).or(*start_epoch);
        }
    }
    let kind = plane_kind(&name);
    let mut has_device_ops = false;
    if kind == PlaneKind::Device {
        for (line, loff) in lines {
            if has_device_ops {
                break;
            }
            let mut has_events = false;
            let header = read_line(line, loff, |_| has_events = true)?;
            has_device_ops |= has_events && crate::tables::derive::is_device_op_line(&String::from_utf8_lossy(header.display()));
        }
    }
    Ok(PlaneRef { bytes, off, name, kind, has_device_ops })
}

/// The header fields of an XLine (everything but its events).
#[derive(Default)]
struct LineHeader<'a> {
    id: i64,
    name: &'a [u8],
    display_name: &'a [u8],
    timestamp_ns: i64,
}

impl<'a> LineHeader<'a> {
    /// The name a viewer shows: the display name when there is one.
    fn display(&self) -> &'a [u8] {
        if self.display_name.is_empty() {
            self.name
        } else {
            self.display_name
        }
    }
}

/// Reads an XLine in one walk: its header, and where each event's field starts in `bytes`,
/// handed to `on_event`.
fn read_line<'a>(bytes: &'a [u8], off: usize, mut on_event: impl FnMut(usize)) -> Result<LineHeader<'a>> {
    let mut h = LineHeader::default();
    let mut lf = Fields::with_base(bytes, off);
    loop {
        let field_start = lf.offset() - off;
        // Events are nearly all of a line's fields: passed over without the general reader.
        if lf.next_bytes_keyed(0x22).is_some() {
            on_event(field_start);
            continue;
        }
        let Some((field, value, _)) = lf.next_field()? else { break };
        match field {
            1 => h.id = value.as_i64(),
            2 => h.name = value.as_bytes(),
            11 => h.display_name = value.as_bytes(),
            3 => h.timestamp_ns = value.as_i64(),
            4 => on_event(field_start),
            _ => {}
        }
    }
    Ok(h)
}

/// A line to scan: its plane's index, its plane context's, its bytes and their file offset.
type PendingLine<'a> = (u32, usize, &'a [u8], usize);
/// A scanned line: its header and its events' count and marks.
type ScannedLine<'a> = Result<(LineHeader<'a>, LineEvents)>;

/// Each line's header and its events (count and marks), scanned on all workers (lines dealt largest
/// first to the least loaded); results in the order of `lines`.
fn scan_lines<'a>(lines: &[PendingLine<'a>], read: &Release<'_>) -> Vec<ScannedLine<'a>> {
    let scan = |bytes: &'a [u8], off: usize| {
        let mut events = LineEvents::default();
        let mut released = 0;
        let header = read_line(bytes, off, |field_start| {
            if events.count % EVENTS_PER_MARK == 0 {
                events.marks.push(field_start);
                release_read(bytes, &mut released, field_start, false, read);
            }
            events.count += 1;
        });
        release_read(bytes, &mut released, bytes.len(), true, read);
        header.map(|header| (header, events))
    };
    let workers = crate::work_queue::workers().min(lines.len());
    let total: usize = lines.iter().map(|l| l.2.len()).sum();
    if workers <= 1 || total < (1 << 20) {
        return lines.iter().map(|&(_, _, bytes, off)| scan(bytes, off)).collect();
    }
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lines[i].2.len()));
    let mut shares: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); workers];
    for i in order {
        let least = shares.iter_mut().min_by_key(|(load, _)| *load).expect("a worker");
        least.0 += lines[i].2.len();
        least.1.push(i);
    }
    let mut out: Vec<Option<ScannedLine<'a>>> = (0..lines.len()).map(|_| None).collect();
    let scanned = crate::work_queue::map_in_order(shares, |(_, indices)| indices.into_iter().map(|i| (i, scan(lines[i].2, lines[i].3))).collect::<Vec<_>>());
    for (i, r) in scanned.into_iter().flatten() {
        out[i] = Some(r);
    }
    out.into_iter().map(|r| r.expect("every line scanned")).collect()
}

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

/// Decodes `planes` (whole planes of one host's XSpace, as [`decode_planes`]) and hands
/// them to `on_part`: as one part, or, for planes of more than twice [`window_events`]
/// events whose lines are each in time order, a time window at a time. A window holds
/// the events that start in it; the events still open where it ends are carried into the
/// next ones as their lines' open parents ([`OpenBefore`]), their self times found
/// beforehand by a pass over the plane's times ([`plan_windows`]).
#[allow(clippy::too_many_arguments)]
pub fn decode_group<E>(
    planes: &[&PlaneRef],
    host: u32,
    start_epoch: Option<i64>,
    capture: &mut Capture,
    read: &Release<'_>,
    wire_err: &dyn Fn(WireError) -> E,
    on_part: &mut dyn FnMut(&mut Capture) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let (ctxs, jobs) = prepare_planes(planes, host, start_epoch, capture, read).map_err(wire_err)?;
    let total: usize = jobs.iter().map(|j| j.events.count).sum();
    let per_window = window_events();
    let too_large = total > 2 * per_window;
    let windows = if too_large { plan_windows(&jobs, total, per_window, read).map_err(wire_err)? } else { None };
    if too_large && windows.is_none() {
        let names: Vec<String> = planes.iter().map(|p| p.name.clone()).collect();
        capture.meta.quality_warnings.push(format!(
            "{} ({total} events) decoded whole, not in time windows: a line's events are out of time order in the file (or all start together), so memory grows with the plane",
            names.join(", ")
        ));
    }
    let Some((cut_times, line_cuts)) = windows else {
        decode_whole(planes, &jobs, &ctxs, capture, read).map_err(wire_err)?;
        return on_part(capture);
    };
    let job_of_line: HashMap<u32, usize> = jobs.iter().enumerate().map(|(j, job)| (job.line_index, j)).collect();
    let last = cut_times.len();
    // Per line: (kept index, event id) of its first event in each window that has any.
    let mut first_ids: Vec<Vec<(usize, i64)>> = vec![Vec::new(); jobs.len()];
    let mut released = vec![0usize; jobs.len()];
    for k in 0..=last {
        let ranges: Vec<std::ops::Range<usize>> = jobs
            .iter()
            .zip(&line_cuts)
            .map(|(job, cuts)| (if k == 0 { 0 } else { cuts.at[k - 1].0 })..(if k == last { job.events.count } else { cuts.at[k].0 }))
            .collect();
        let first_kept: Vec<usize> = line_cuts.iter().map(|cuts| if k == 0 { 0 } else { cuts.at[k - 1].1 }).collect();
        let mut open_before = OpenBefore::default();
        let mut carried = Vec::new();
        if k > 0 {
            for (j, (job, cuts)) in jobs.iter().zip(&line_cuts).enumerate() {
                if ranges[j].is_empty() || cuts.open[k - 1].is_empty() {
                    continue;
                }
                let open = cuts.open[k - 1].iter().map(|&(kept, end)| {
                    let ids = &first_ids[j];
                    let w = ids.partition_point(|&(first, _)| first <= kept) - 1;
                    carried.push(ids[w].1 + (kept - ids[w].0) as i64);
                    OpenEvent { end, parent: CARRIED_TAG | (carried.len() - 1) as u32 }
                });
                open_before.insert(job.line_index, open.collect());
            }
        }
        let mut chunks = decode_events(&jobs, &ranges, &ctxs, capture, &open_before).map_err(wire_err)?;
        // Each line's first event id in this window, and the self times of its events that
        // later windows nest under, found by the plan.
        let events_before = capture.meta.num_complete_events;
        let mut seen = vec![0usize; jobs.len()];
        let mut position = 0i64;
        for chunk in chunks.iter_mut() {
            let runs: Vec<(u32, std::ops::Range<usize>)> = chunk.line_runs().collect();
            for (line, run) in runs {
                let j = job_of_line[&line];
                let kept = first_kept[j] + seen[j];
                if seen[j] == 0 {
                    first_ids[j].push((kept, events_before + position));
                }
                for (&q, &self_ns) in line_cuts[j].open_self.range(kept..kept + run.len()) {
                    chunk.self_ns[run.start + (q - kept)] = self_ns;
                }
                seen[j] += run.len();
                position += run.len() as i64;
            }
        }
        push_chunks(capture, chunks);
        capture.carried_parents = carried;
        capture.window = Some(TimeWindow { last: k == last });
        // The window's bytes of each line are read: their pages go.
        for (j, job) in jobs.iter().enumerate() {
            release_read(job.bytes, &mut released[j], job.mark(ranges[j].end), true, read);
        }
        on_part(capture)?;
    }
    for plane in planes {
        read(plane.bytes);
    }
    Ok(())
}

/// Where one line's events are cut into windows.
struct LineCuts {
    /// Per cut time: the index of the line's first event starting at or after it
    /// (aggregated events counted), and how many events are kept before it.
    at: Vec<(usize, usize)>,
    /// Per cut time: the events open just before that first event, outermost first, as
    /// (kept index, end).
    open: Vec<Vec<(usize, i64)>>,
    /// The final self time of every event open at some cut, by kept index.
    open_self: std::collections::BTreeMap<usize, i64>,
}

/// Kept events of a line in file order: `each(index, start, end)` (ns, as decoded).
fn walk_events(job: &LineJob, read: &Release<'_>, mut each: impl FnMut(usize, i64, i64)) -> Result<()> {
    let mut fields = job.fields_from(0)?;
    let mut released = 0;
    let mut stats = StatSlices::new();
    for e in 0..job.events.count {
        let (ev, off) = next_event_field(&mut fields)?;
        let head = read_event(ev, off, &mut stats, &StatSkips::ALL)?;
        if !head.aggregated {
            let (start, end) = event_span_ns(job.timestamp_ns, head.offset_ps, head.dur_ps);
            each(e, start, end);
        }
        if e % EVENTS_PER_MARK == 0 {
            release_read(job.bytes, &mut released, job.mark(e), false, read);
        }
    }
    release_read(job.bytes, &mut released, job.bytes.len(), true, read);
    Ok(())
}

/// Plans a plane's time windows of about `per_window` events: the cut times, and each
/// line's [`LineCuts`]. Two passes over the events' times, a line per worker: the first
/// samples starts (the cut times are their quantiles),
/// the second nests each line as [`nest_lines`] does to find what is open at each cut.
/// None when a line is not in (start, -dur) order: the plane is then decoded whole.
fn plan_windows(jobs: &[LineJob], total: usize, per_window: usize, read: &Release<'_>) -> Result<Option<(Vec<i64>, Vec<LineCuts>)>> {
    // A start sampled every `every` events: at least 16 samples a window.
    let every = (per_window / 16).clamp(1, EVENTS_PER_MARK);
    let sampled = crate::work_queue::map_in_order(jobs.iter().collect(), |job: &LineJob| -> Result<Option<Vec<i64>>> {
        let (mut samples, mut kept, mut sorted, mut previous) = (Vec::new(), 0usize, true, (i64::MIN, i64::MIN));
        walk_events(job, read, |_, start, end| {
            sorted &= previous <= (start, start - end);
            previous = (start, start - end);
            if kept % every == 0 {
                samples.push(start);
            }
            kept += 1;
        })?;
        Ok(sorted.then_some(samples))
    });
    let mut samples = Vec::new();
    for s in sampled {
        match s? {
            Some(s) => samples.extend(s),
            None => return Ok(None),
        }
    }
    if samples.is_empty() {
        return Ok(None);
    }
    samples.sort_unstable();
    let windows = total.div_ceil(per_window);
    let mut cut_times: Vec<i64> = (1..windows).map(|c| samples[c * samples.len() / windows]).collect();
    cut_times.dedup();
    if cut_times.is_empty() {
        return Ok(None);
    }
    let cut_times_ref = &cut_times;
    let line_cuts = crate::work_queue::map_in_order(jobs.iter().collect(), |job: &LineJob| -> Result<LineCuts> {
        /// An open event of the nesting: kept index, end, self time so far, whether some cut saw it open.
        struct Open {
            kept: usize,
            end: i64,
            self_ns: i64,
            at_cut: bool,
        }
        let mut cuts = LineCuts { at: Vec::new(), open: Vec::new(), open_self: Default::default() };
        let mut stack: Vec<Open> = Vec::new();
        let mut kept = 0usize;
        let reach_cut = |cuts: &mut LineCuts, stack: &mut Vec<Open>, index: usize, kept: usize| {
            cuts.at.push((index, kept));
            cuts.open.push(stack.iter().map(|o| (o.kept, o.end)).collect());
            stack.iter_mut().for_each(|o| o.at_cut = true);
        };
        let close = |cuts: &mut LineCuts, o: Open| {
            if o.at_cut {
                cuts.open_self.insert(o.kept, o.self_ns.max(0));
            }
        };
        walk_events(job, read, |index, start, end| {
            while cuts.at.len() < cut_times_ref.len() && start >= cut_times_ref[cuts.at.len()] {
                reach_cut(&mut cuts, &mut stack, index, kept);
            }
            while stack.last().is_some_and(|top| !encloses(top.end, start, end)) {
                let top = stack.pop().expect("a top");
                close(&mut cuts, top);
            }
            let dur = end - start;
            if let Some(top) = stack.last_mut() {
                top.self_ns = top.self_ns.saturating_sub(dur);
            }
            stack.push(Open { kept, end, self_ns: dur, at_cut: false });
            kept += 1;
        })?;
        while cuts.at.len() < cut_times_ref.len() {
            reach_cut(&mut cuts, &mut stack, job.events.count, kept);
        }
        for o in stack.drain(..) {
            close(&mut cuts, o);
        }
        Ok(cuts)
    });
    Ok(Some((cut_times, line_cuts.into_iter().collect::<Result<_>>()?)))
}

/// Pass 1 of a decode: `planes`' headers, metadata tables and special planes into
/// `capture`, and their lines registered; returns each plane's context and the lines that
/// hold events, to be decoded.
fn prepare_planes<'a>(
    planes: &[&PlaneRef<'a>],
    host: u32,
    start_epoch: Option<i64>,
    capture: &mut Capture,
    read: &Release<'_>,
) -> Result<(Vec<PlaneCtx>, Vec<LineJob<'a>>)> {
    let mut clock = std::time::Instant::now();
    let mut ctxs: Vec<PlaneCtx> = Vec::new();
    let mut jobs: Vec<LineJob> = Vec::new();
    // Every line, in file order.
    let mut pending_lines: Vec<PendingLine> = Vec::new();
    for plane in planes {
        let PlaneFields { name, lines: line_slices, event_metadata: event_meta_entries, stat_metadata: stat_meta_entries, stats: plane_stats } =
            plane_fields(plane.bytes, plane.off)?;
        let mut stats = IdMap::new();
        for (entry, off) in stat_meta_entries {
            let (id, sname) = stat_metadata_name(entry, off)?;
            let sname = String::from_utf8_lossy(sname);
            let kept_as = role_of(&sname);
            let role = match (kept_as, capture.args_kept) {
                (Role::Arg | Role::Src, Some(kept)) if !(kept.keys)(&sname) => Role::Skip,
                (role, _) => role,
            };
            stats.insert(id, StatInfo { name: capture.strings.intern(&sname), role, kept_as });
        }

        let plane_index = capture.planes.len() as u32;
        let kind = plane_kind(&name);
        let device = if kind == PlaneKind::Device { capture.strings.intern(name.trim_start_matches("/device:")) } else { NO_STR };
        let plane_name = capture.strings.intern(&name);
        capture.planes.push(Plane { host, name: plane_name, kind, device });

        // Plane stats: producer versions, profile start, device kind.
        for (stat_bytes, off) in plane_stats {
            let (info, value) = read_stat(stat_bytes, off, &stats)?;
            let Some(info) = info else { continue };
            let key = capture.strings.get(info.name).unwrap_or("").to_string();
            let text = value_text(value, &capture.strings);
            match key.as_str() {
                "jax_version" => capture.meta.jax_version = Some(text),
                "jaxlib_version" => capture.meta.jaxlib_version = Some(text),
                "device_type_string" | "device_vendor" => {
                    let kind = if key == "device_vendor" { format!("{text} GPU") } else { text };
                    if !capture.meta.device_kinds.contains(&kind) {
                        capture.meta.device_kinds.push(kind);
                    }
                }
                // TPU planes state peaks in decimal tera / giga units, a GPU's bandwidth in bytes/s.
                "peak_teraflops_per_second" => note_peak(&mut capture.meta.peak_flops_per_s, value_f64(value).map(|v| v * 1e12)),
                "peak_hbm_bw_gigabytes_per_second" => note_peak(&mut capture.meta.peak_hbm_bytes_per_s, value_f64(value).map(|v| v * 1e9)),
                "memory_bandwidth" => note_peak(&mut capture.meta.peak_hbm_bytes_per_s, value_f64(value)),
                _ => {}
            }
        }

        let is_metadata_plane = name == "/host:metadata";
        let mut events = IdMap::new();
        for (entry, off) in event_meta_entries {
            let (id, msg) = map_entry(entry, off)?;
            let mut mname: &[u8] = b"";
            let mut dname: &[u8] = b"";
            let mut mstats = Vec::new();
            let mut hlo_bytes: Option<&[u8]> = None;
            let mut program_id: Option<i64> = None;
            let mut mf = Fields::with_base(msg.0, msg.1);
            while let Some((field, value, off)) = mf.next_field()? {
                match field {
                    2 => mname = value.as_bytes(),
                    4 => dname = value.as_bytes(),
                    5 => {
                        let (info, v) = read_stat(value.as_bytes(), off, &stats)?;
                        let Some(info) = info else { continue };
                        if is_metadata_plane {
                            let key = capture.strings.get(info.name).unwrap_or("");
                            if key == "Hlo Proto" {
                                if let StatValue::Bytes(b) = v {
                                    hlo_bytes = Some(b);
                                }
                                continue;
                            }
                            if key == "program_id" {
                                program_id = value_i64(v);
                            }
                        }
                        let owned = match v {
                            StatValue::Int(x) => OwnedStat::Int(x),
                            StatValue::UInt(x) => OwnedStat::UInt(x),
                            StatValue::Double(x) => OwnedStat::Double(x),
                            StatValue::Pooled(x) => OwnedStat::Pooled(x),
                            StatValue::Str(s) => OwnedStat::Pooled(capture.strings.intern(s)),
                            StatValue::Bytes(b) => OwnedStat::Pooled(capture.strings.intern(&bytes_text(b))),
                        };
                        mstats.push((info, owned));
                    }
                    _ => {}
                }
            }
            let mname = String::from_utf8_lossy(mname);
            if let Some(hlo) = hlo_bytes {
                let program_id = program_id.or_else(|| program_id_from_module_name(&mname));
                if let Err(e) = index_hlo_proto(hlo, program_id, &mut capture.strings, std::sync::Arc::make_mut(&mut capture.hlo)) {
                    capture.meta.quality_warnings.push(format!("{mname}: {e}"));
                }
            }
            let dname = String::from_utf8_lossy(dname);
            let name_id = capture.strings.intern(&mname);
            let display_id = if dname.is_empty() || dname == mname { NO_STR } else { capture.strings.intern(&dname) };
            let every_arg = capture.args_kept.is_some_and(|kept| (kept.every_arg_of)(&mname));
            events.insert(id, EventMeta { name: name_id, display_name: display_id, every_arg, stats: mstats });
        }

        // Lines: headers and events' bytes once every plane's metadata is read.
        pending_lines.extend(line_slices.into_iter().map(|(bytes, off)| (plane_index, ctxs.len(), bytes, off)));
        ctxs.push(PlaneCtx { skips: StatSkips::of(&stats), stats, events, all_args: capture.args_kept.is_none() });
    }

    // The lines are split into events on every worker (a CPU line can hold most of a file's
    // events), then registered in file order.
    // A group larger than memory should hold drops the pages its scan read (they are read
    // again when decoded); a smaller one keeps them for its decode.
    let scanned_bytes: usize = planes.iter().map(|p| p.bytes.len()).sum();
    let scanned = scan_lines(&pending_lines, if scanned_bytes > RELEASE_SCANNED_ABOVE { read } else { &|_| {} });
    for ((plane_index, ctx, bytes, off), scan) in pending_lines.iter().zip(scanned) {
        let (header, events) = scan?;
        let chosen = header.display();
        let line_name = if chosen.is_empty() { format!("xline:{}", capture.lines.len()) } else { String::from_utf8_lossy(chosen).into_owned() };
        capture.meta.num_events_total += events.count as i64;
        let line_index = capture.lines.len() as u32;
        capture.lines.push(Line { plane: *plane_index, line_id: header.id, name: capture.strings.intern(&line_name) });
        if events.count > 0 {
            jobs.push(LineJob { line_index, timestamp_ns: header.timestamp_ns, bytes, base: *off, events, plane: *ctx });
        }
    }

    // Line timestamps are relative to the profile start on every producer we know; a value
    // that is plainly an epoch time is made relative too.
    for job in jobs.iter_mut() {
        if let Some(start) = start_epoch {
            if job.timestamp_ns > 1_000_000_000_000_000_000 / 10 && job.timestamp_ns >= start / 2 {
                job.timestamp_ns -= start;
            }
        }
    }

    crate::timing::stage_done("  xplane headers and metadata", &mut clock);
    Ok((ctxs, jobs))
}

/// Pass 2 of a decode: events `ranges[j]` of each line `jobs[j]`, in parallel. Lines are cut
/// into units of similar size (one line of a CPU capture can hold most of the events),
/// decoded on all workers, then put back together line by line into chunks (their strings
/// merged into `capture`'s pool) whose nesting is computed in parallel too, each line from
/// the events `open_before` says are open where its range starts.
fn decode_events(
    jobs: &[LineJob],
    ranges: &[std::ops::Range<usize>],
    ctxs: &[PlaneCtx],
    capture: &mut Capture,
    open_before: &OpenBefore,
) -> Result<Vec<EventChunk>> {
    let mut clock = std::time::Instant::now();
    let workers = crate::work_queue::workers();
    let units = plan_units(ranges, workers);
    let pool = &capture.strings;
    let decoded: Vec<Result<EventChunk>> =
        crate::work_queue::map_in_order(units.iter().collect(), |u: &Unit| decode_unit(&jobs[u.job], u.events.clone(), ctxs, pool));
    crate::timing::stage_done("  xplane events", &mut clock);
    let mut pieces = Vec::with_capacity(units.len());
    for piece in decoded {
        let mut piece = piece?;
        piece.merge_strings_into(&mut capture.strings);
        pieces.push(piece);
    }
    let starts_line: Vec<bool> = units.iter().map(|u| u.events.start == ranges[u.job].start).collect();
    let line_offsets: Vec<usize> = units.iter().map(|u| jobs[u.job].base).collect();
    let assembled = assemble_chunks(pieces, &starts_line, &line_offsets, workers, open_before);
    crate::timing::stage_done("  xplane string merge", &mut clock);
    assembled
}

pub fn plane_kind(name: &str) -> PlaneKind {
    if name.starts_with("/device:") && !name.starts_with("/device:CUSTOM") {
        PlaneKind::Device
    } else if name.starts_with("/host:") && name != "/host:metadata" {
        PlaneKind::Host
    } else {
        PlaneKind::Other
    }
}

fn program_id_from_module_name(name: &str) -> Option<i64> {
    let open = name.rfind('(')?;
    let inner = name[open + 1..].strip_suffix(')')?;
    inner.parse::<u64>().ok().map(|v| v as i64)
}

/// A run of consecutive events of one line, decoded as one piece.
struct Unit {
    job: usize,
    events: std::ops::Range<usize>,
}

/// Cuts every line's events `ranges[j]` into units of at most ~1/(16 × workers) of all
/// events (a multiple of [`EVENTS_PER_MARK`]): workers take units as they finish one, so no
/// worker waits long on another's last unit, nor on one long line.
fn plan_units(ranges: &[std::ops::Range<usize>], workers: usize) -> Vec<Unit> {
    let total: usize = ranges.iter().map(|r| r.len()).sum();
    let max_events = (total / (workers * 16).max(1)).max(4096).next_multiple_of(EVENTS_PER_MARK);
    let mut units = Vec::new();
    for (job_index, range) in ranges.iter().enumerate() {
        let mut start = range.start;
        while start < range.end {
            let end = (start + max_events).min(range.end);
            units.push(Unit { job: job_index, events: start..end });
            start = end;
        }
    }
    units
}

/// Puts the decoded pieces (in order) together into the part's chunks, then sorts and nests
/// every line, in parallel over runs of chunks that share no line.
///
/// Whole lines are joined into chunks of about 1/`n` of the events each. The pieces of a line
/// cut into several (a CPU capture's busiest thread can be most of a file) are not copied:
/// they stay chunks of their own, the line running on from one into the next, unless they are
/// out of order, and are then joined and sorted.
///
/// A line whose stat text alone reaches 2 GiB cannot be one Arrow string column (i32
/// offsets): it is refused with the line's file offset rather than written wrong.
fn assemble_chunks(pieces: Vec<EventChunk>, starts_line: &[bool], line_offsets: &[usize], n: usize, open_before: &OpenBefore) -> Result<Vec<EventChunk>> {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let target = total / n.max(1) + 1;
    // Arg offsets within a chunk are u32: a chunk also ends before its arg bytes near 2 GiB.
    const MAX_ARG_BYTES: usize = 1 << 31;
    // Each line's pieces (they follow each other).
    let mut lines: Vec<std::ops::Range<usize>> = Vec::new();
    for (k, &starts) in starts_line.iter().enumerate().take(pieces.len()) {
        match lines.last_mut() {
            Some(line) if !starts => line.end = k + 1,
            _ => lines.push(k..k + 1),
        }
    }
    let mut pieces = pieces.into_iter();
    let mut runs: Vec<ChunkRun> = Vec::new();
    // Whole lines being joined, their events and stat text.
    let (mut joining, mut events, mut arg_bytes): (Vec<EventChunk>, usize, usize) = (Vec::new(), 0, 0);
    for line in lines {
        let line_pieces: Vec<EventChunk> = pieces.by_ref().take(line.len()).collect();
        let line_events = line_pieces.iter().map(EventChunk::len).sum::<usize>();
        let line_bytes = line_pieces.iter().map(|p| p.arg_value_bytes.len()).sum::<usize>();
        if line_bytes >= MAX_ARG_BYTES {
            return Err(WireError { offset: line_offsets[line.start], what: "line with 2 GiB or more of stat text (more than profq holds per line)" });
        }
        let cut = line_pieces.len() > 1;
        if !joining.is_empty() && (cut || events >= target || arg_bytes + line_bytes >= MAX_ARG_BYTES) {
            runs.push(ChunkRun::Join(std::mem::take(&mut joining)));
            (events, arg_bytes) = (0, 0);
        }
        if cut {
            let in_order = line_pieces.iter().all(EventChunk::lines_sorted) && line_pieces.windows(2).all(|w| w[0].line_continues_into(&w[1]));
            runs.push(if in_order { ChunkRun::Keep(line_pieces) } else { ChunkRun::Join(line_pieces) });
        } else {
            joining.extend(line_pieces);
            (events, arg_bytes) = (events + line_events, arg_bytes + line_bytes);
        }
    }
    if !joining.is_empty() {
        runs.push(ChunkRun::Join(joining));
    }

    // Each run's first position in the part; runs are taken by the next free worker.
    let mut position = 0u32;
    let runs: Vec<(ChunkRun, u32)> = runs
        .into_iter()
        .map(|run| {
            let first = position;
            position += run.events() as u32;
            (run, first)
        })
        .collect();
    let assembled = crate::work_queue::map_in_order(runs, |(run, first)| run.assembled(first, open_before));
    Ok(assembled.into_iter().flatten().collect())
}

/// Pieces of a part that make chunks together.
enum ChunkRun {
    /// Joined into one chunk: whole lines, or the pieces of a line that are out of order.
    Join(Vec<EventChunk>),
    /// Kept as chunks of their own: the pieces of one line, in order.
    Keep(Vec<EventChunk>),
}

impl ChunkRun {
    fn events(&self) -> usize {
        let (ChunkRun::Join(pieces) | ChunkRun::Keep(pieces)) = self;
        pieces.iter().map(EventChunk::len).sum()
    }

    /// The run's chunks, each line sorted and nested; `first_position`: the position of the
    /// run's first event in its part.
    fn assembled(self, first_position: u32, open_before: &OpenBefore) -> Vec<EventChunk> {
        let mut chunks = match self {
            ChunkRun::Join(pieces) => {
                let mut chunk = EventChunk::concat(pieces);
                chunk.sort_within_lines();
                vec![chunk]
            }
            ChunkRun::Keep(pieces) => pieces,
        };
        nest_lines(&mut chunks, first_position, open_before);
        chunks
    }
}

/// Parses a map<int64, Message> entry: key = 1, value = 2.
fn map_entry(entry: &[u8], off: usize) -> Result<(i64, (&[u8], usize))> {
    let mut id = 0;
    let mut msg: (&[u8], usize) = (&[], off);
    let mut f = Fields::with_base(entry, off);
    while let Some((field, value, voff)) = f.next_field()? {
        match field {
            1 => id = value.as_i64(),
            2 => msg = (value.as_bytes(), voff),
            _ => {}
        }
    }
    Ok((id, msg))
}

/// Reads one XStat. Unknown stat metadata ids yield `None` (the stat is dropped).
#[inline]
fn read_stat<'a>(bytes: &'a [u8], off: usize, stats: &IdMap<StatInfo>) -> Result<(Option<StatInfo>, StatValue<'a>)> {
    let (id, value) = stat_id_and_value(bytes, off, |r| stats.get(r).map_or(NO_STR, |target| target.name))?;
    Ok((stats.get(id).copied(), value))
}

/// An XStat's metadata id and value; a ref value (a stat-metadata id whose name is the
/// value) becomes the pool id `ref_name` gives for it.
#[inline]
fn stat_id_and_value<'a>(bytes: &'a [u8], off: usize, ref_name: impl Fn(i64) -> u32) -> Result<(i64, StatValue<'a>)> {
    match usual_stat(bytes, &ref_name) {
        Some(stat) => Ok(stat),
        None => stat_fields(bytes, off, ref_name),
    }
}

/// [`stat_id_and_value`] for any layout, field by field.
fn stat_fields<'a>(bytes: &'a [u8], off: usize, ref_name: impl Fn(i64) -> u32) -> Result<(i64, StatValue<'a>)> {
    let mut f = Fields::with_base(bytes, off);
    let mut id = 0i64;
    let mut value = StatValue::Int(0);
    while let Some((field, v, _)) = f.next_field()? {
        value = match (field, v) {
            (1, v) => {
                id = v.as_i64();
                continue;
            }
            (2, v) => StatValue::Double(v.as_f64()),
            (3, v) => StatValue::UInt(v.as_u64()),
            (4, v) => StatValue::Int(v.as_i64()),
            (5, Value::Bytes(b)) => match std::str::from_utf8(b) {
                Ok(s) => StatValue::Str(s),
                Err(_) => StatValue::Bytes(b),
            },
            (6, Value::Bytes(b)) => StatValue::Bytes(b),
            (7, v) => StatValue::Pooled(ref_name(v.as_i64())),
            _ => continue,
        };
    }
    Ok((id, value))
}

/// An XStat written the usual way (the metadata id first, then one value, each behind a
/// one-byte key), read without the general field loop: stats are read millions of times a
/// file. None for any other layout, which [`stat_id_and_value`] then reads field by field.
#[inline]
fn usual_stat<'a>(b: &'a [u8], ref_name: &impl Fn(i64) -> u32) -> Option<(i64, StatValue<'a>)> {
    if b.first() != Some(&0x08) {
        return None;
    }
    let mut pos = 1;
    let id = varint_at(b, &mut pos)? as i64;
    let key = *b.get(pos)?;
    pos += 1;
    let value = match key {
        0x11 => {
            let bits = b.get(pos..pos + 8)?;
            pos += 8;
            StatValue::Double(f64::from_le_bytes(bits.try_into().ok()?))
        }
        0x18 => StatValue::UInt(varint_at(b, &mut pos)?),
        0x20 => StatValue::Int(varint_at(b, &mut pos)? as i64),
        0x38 => StatValue::Pooled(ref_name(varint_at(b, &mut pos)? as i64)),
        0x2a | 0x32 => {
            let n = usize::try_from(varint_at(b, &mut pos)?).ok().filter(|&n| n <= b.len() - pos)?;
            let bytes = &b[pos..pos + n];
            pos += n;
            match (key, std::str::from_utf8(bytes)) {
                (0x2a, Ok(s)) => StatValue::Str(s),
                _ => StatValue::Bytes(bytes),
            }
        }
        _ => return None,
    };
    (pos == b.len()).then_some((id, value))
}

/// The value of an XStat written the usual way when it is a varint (uint64 = 3, int64 = 4,
/// ref = 7), `pos` being where the value's key is: the key byte and the raw bits. None for
/// any other layout.
#[inline]
fn usual_varint_value(b: &[u8], pos: usize) -> Option<(u8, u64)> {
    let key = *b.get(pos)?;
    if !matches!(key, 0x18 | 0x20 | 0x38) {
        return None;
    }
    Some((key, last_varint(b, pos + 1)?))
}

/// Sets event `i`'s typed column of `role` from a varint value as [`apply_stat`] would: a
/// string column from a ref (the referenced stat metadata's name), an integer column from
/// an int64 or uint64. False for any other pairing, which [`apply_stat`] then takes.
#[inline]
fn set_typed_column(chunk: &mut EventChunk, i: usize, role: Role, key: u8, raw: u64, stats: &IdMap<StatInfo>) -> bool {
    match (role, key) {
        (Role::HloOp | Role::HloModule | Role::TfOp | Role::Src, 0x38) => {
            set_string_column(chunk, i, role, stats.get(raw as i64).map_or(NO_STR, |target| target.name));
            true
        }
        (Role::ProgramId | Role::Step | Role::CorrelationId | Role::DeviceOrdinal, 0x18 | 0x20) => {
            set_int_column(chunk, i, role, raw as i64);
            true
        }
        _ => false,
    }
}

/// Adds a varint-valued stat of the `Arg` role as [`apply_stat`] would, its text written
/// straight into the chunk's arg bytes: a CPU capture's flow ids (`_p`, `_c`, ...) are most
/// of its stats. False for any other role, which the caller then takes.
#[inline]
fn push_varint_arg(chunk: &mut EventChunk, info: StatInfo, key: u8, raw: u64, stats: &IdMap<StatInfo>, pool: &StringPool) -> bool {
    if info.role != Role::Arg {
        return false;
    }
    match key {
        0x18 => chunk.push_arg(info.name, itoa::Buffer::new().format(raw)),
        0x20 => chunk.push_arg(info.name, itoa::Buffer::new().format(raw as i64)),
        _ => chunk.push_arg(info.name, pool.get(stats.get(raw as i64).map_or(NO_STR, |target| target.name)).unwrap_or("")),
    }
    true
}

/// Sets event `i`'s column of a string role (hlo_op, hlo_module, _src, tf_op).
#[inline]
fn set_string_column(chunk: &mut EventChunk, i: usize, role: Role, id: u32) {
    let capacity = chunk.capacity();
    let col = match role {
        Role::HloOp => &mut chunk.hlo_op,
        Role::HloModule => &mut chunk.hlo_module,
        Role::Src => &mut chunk.src,
        _ => &mut chunk.tf_op,
    };
    col.set(i, capacity, id);
}

/// Sets event `i`'s column of an integer role (program_id, step, correlation_id, device_ordinal).
#[inline]
fn set_int_column(chunk: &mut EventChunk, i: usize, role: Role, v: i64) {
    let capacity = chunk.capacity();
    let col = match role {
        Role::ProgramId => &mut chunk.program_id,
        Role::Step => &mut chunk.step,
        Role::CorrelationId => &mut chunk.correlation_id,
        _ => &mut chunk.device_ordinal,
    };
    col.set(i, capacity, v);
}

fn value_f64(v: StatValue) -> Option<f64> {
    match v {
        StatValue::Int(x) => Some(x as f64),
        StatValue::UInt(x) => Some(x as f64),
        StatValue::Double(x) => Some(x),
        StatValue::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Keeps a positive, finite peak once per distinct value (a run states one per device kind).
fn note_peak(peaks: &mut Vec<f64>, peak: Option<f64>) {
    if let Some(p) = peak.filter(|p| p.is_finite() && *p > 0.0) {
        if !peaks.contains(&p) {
            peaks.push(p);
        }
    }
}

fn value_i64(v: StatValue) -> Option<i64> {
    match v {
        StatValue::Int(x) => Some(x),
        StatValue::UInt(x) => Some(x as i64),
        StatValue::Double(x) if x.is_finite() => Some(x as i64),
        StatValue::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn bytes_text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::with_capacity(2 + b.len() * 2);
            out.push_str("0x");
            for byte in b {
                out.push_str(&format!("{byte:02x}"));
            }
            out
        }
    }
}

fn value_text(v: StatValue, pool: &StringPool) -> String {
    let mut out = String::new();
    write_value(v, pool, &mut out);
    out
}

fn write_value(v: StatValue, pool: &StringPool, out: &mut String) {
    match v {
        StatValue::Int(x) => out.push_str(itoa::Buffer::new().format(x)),
        StatValue::UInt(x) => out.push_str(itoa::Buffer::new().format(x)),
        StatValue::Double(x) => {
            if x.is_finite() {
                out.push_str(ryu::Buffer::new().format(x))
            } else {
                out.push_str(&x.to_string())
            }
        }
        StatValue::Str(s) => out.push_str(s),
        StatValue::Pooled(id) => out.push_str(pool.get(id).unwrap_or("")),
        StatValue::Bytes(b) => out.push_str(&bytes_text(b)),
    }
}

/// `ps_to_ns(timestamp_ns × 1000 + offset_ps)` and the same of `+ dur_ps`: in u64 when every
/// term is ≥ 0 and small enough that nothing overflows (relative times of real captures; an
/// unsigned division by 1000 is a multiplication), else in i64, else in i128.
#[inline]
fn event_span_ns(timestamp_ns: i64, offset_ps: i64, dur_ps: i64) -> (i64, i64) {
    let dur_ps = dur_ps.max(0);
    if (0..1 << 52).contains(&timestamp_ns) && (0..1 << 60).contains(&offset_ps) && dur_ps < 1 << 60 {
        // Below 2^62 + 2^60 + 2^60 + 500 < 2^63.
        let start_ps = timestamp_ns as u64 * 1000 + offset_ps as u64;
        return (((start_ps + 500) / 1000) as i64, ((start_ps + dur_ps as u64 + 500) / 1000) as i64);
    }
    let start_ps = timestamp_ns.checked_mul(1000).and_then(|t| t.checked_add(offset_ps));
    match start_ps.and_then(|s| Some((s.checked_add(500)?, s.checked_add(dur_ps)?.checked_add(500)?))) {
        Some((start, end)) => (start.div_euclid(1000), end.div_euclid(1000)),
        None => {
            let start_ps = timestamp_ns as i128 * 1000 + offset_ps as i128;
            (ps_to_ns(start_ps), ps_to_ns(start_ps + dur_ps as i128))
        }
    }
}

fn ps_to_ns(ps: i128) -> i64 {
    let ns = (ps + 500).div_euclid(1000);
    ns.clamp(i64::MIN as i128 + 1, i64::MAX as i128) as i64
}

/// Decodes events `range` of one line (no sorting or nesting yet).
fn decode_unit(job: &LineJob, range: std::ops::Range<usize>, ctxs: &[PlaneCtx], pool: &StringPool) -> Result<EventChunk> {
    let mut chunk = EventChunk::with_capacity(range.len());
    // Room for one short arg per event, and no more than the span's bytes can hold; more grow
    // by doubling. Most events keep no arg (their stats are typed columns or skipped): room
    // for every stat the span could hold, text half the span, was ~40× what a CPU capture's
    // events keep, and though never touched, it moved each part's buffers onto fresh pages
    // (summarize, tiled ×10 file: peak ~515 against ~455 MB and ~10 % more page faults; 8
    // hosts ~525 against ~475 MB; the time within this VM's noise, session 38).
    // A decode that keeps every arg (an ingest) fills far more: there the room is for what a
    // CPU capture's events hold (~1.6 args and ~9 bytes of text each), so that the columns
    // are not copied into fresh pages as they double.
    let (span, events) = (job.mark(range.end) - job.mark(range.start), range.len());
    let per_event = if ctxs[job.plane].all_args { ALL_ARGS_PER_EVENT } else { 1 };
    chunk.reserve_args((span / MIN_STAT_BYTES).min(events * per_event), (span / 2).min(events * per_event * ARG_BYTES_PER_EVENT));
    let mut fields = job.fields_from(range.start)?;
    let mut next_event = || next_event_field(&mut fields);
    let mut scratch = String::new();
    let mut seen: Vec<u32> = Vec::new();
    {
        let ctx = &ctxs[job.plane];
        // Filled anew by every event.
        let mut stats = StatSlices::new();
        for _ in range {
            let (ev, ev_offset) = next_event()?;
            let EventHead { meta_id, offset_ps, dur_ps, aggregated } = read_event(ev, ev_offset, &mut stats, &ctx.skips)?;
            if aggregated {
                continue;
            }
            let (start, end) = event_span_ns(job.timestamp_ns, offset_ps, dur_ps);
            let meta = ctx.events.get(meta_id);
            // An event that keeps every arg keeps the skipped ones too: read again without
            // dropping any (compile and transfer events, a few a file).
            let every_arg = meta.is_some_and(|m| m.every_arg);
            if every_arg {
                read_event(ev, ev_offset, &mut stats, &StatSkips::NONE)?;
            }
            let i = chunk.push_event(job.line_index, meta.map_or(NO_STR, |m| m.name), meta.map_or(NO_STR, |m| m.display_name), NO_STR, start, end - start);
            seen.clear();
            let role_for_event = |info: StatInfo| if every_arg && info.role == Role::Skip { StatInfo { role: info.kept_as, ..info } } else { info };
            for &(bytes, off) in stats.iter() {
                let mut pos = 0;
                if let Some(info) = leading_field1_varint(bytes, &mut pos).and_then(|id| ctx.stats.get(id as i64)) {
                    let info = role_for_event(*info);
                    // Most stats of a CPU capture are flow ids no caller reads: skipped
                    // unparsed. (Their metadata-level namesakes have the same role, so none is
                    // let through.)
                    if info.role == Role::Skip {
                        continue;
                    }
                    // Typed columns set from a reference or an integer (hlo_op, hlo_module,
                    // program_id, step, …: most stats that are read) straight from the bytes.
                    if let Some((key, raw)) = usual_varint_value(bytes, pos) {
                        if set_typed_column(&mut chunk, i, info.role, key, raw, &ctx.stats) || push_varint_arg(&mut chunk, info, key, raw, &ctx.stats, pool) {
                            seen.push(info.name);
                            continue;
                        }
                    }
                }
                let (info, value) = read_stat(bytes, off, &ctx.stats)?;
                if let Some(info) = info {
                    seen.push(info.name);
                    apply_stat(&mut chunk, i, role_for_event(info), value, pool, &mut scratch);
                }
            }
            if let Some(meta) = meta {
                for (info, value) in &meta.stats {
                    if !seen.contains(&info.name) {
                        apply_stat(&mut chunk, i, role_for_event(*info), value.as_value(), pool, &mut scratch);
                    }
                }
            }
            chunk.end_args();
        }
    }
    Ok(chunk)
}

/// The next event's bytes and file offset among a line's fields (its other fields are
/// passed over).
#[inline]
fn next_event_field<'a>(fields: &mut Fields<'a>) -> Result<(&'a [u8], usize)> {
    if let Some(event) = fields.next_bytes_keyed(0x22) {
        return Ok(event);
    }
    loop {
        match fields.next_field()? {
            Some((4, value, off)) => return Ok((value.as_bytes(), off)),
            Some(_) => {}
            None => return Err(WireError { offset: fields.offset(), what: "line ends before the events its scan counted" }),
        }
    }
}

/// An XEvent's scalar fields.
#[derive(Default)]
struct EventHead {
    meta_id: i64,
    offset_ps: i64,
    dur_ps: i64,
    aggregated: bool,
}

/// Reads an XEvent: its scalar fields, returned, and into `stats` its stats' bytes but those
/// `skips` drops. Events are read a million times a file, so the usual one-byte keys are matched directly;
/// anything else is read again field by field, which also reports malformed bytes. Always
/// inlined: called, it cost ~27 instructions an event in saved registers and a head returned
/// through memory (1.3 % of a summary's, session 39).
#[inline(always)]
fn read_event<'a>(ev: &'a [u8], base: usize, stats: &mut StatSlices<'a>, skips: &StatSkips) -> Result<EventHead> {
    stats.clear();
    // Producers write the fields in field-number order, so each key is tested in turn: a
    // chain of branches that always go the same way (a `match` on the key jumps through a
    // table, which the CPU mispredicts at every field). A keyed read that does not match
    // reads nothing, so any other layout, or malformed bytes, leaves the event unfinished.
    let mut fields = Fields::with_base(ev, base);
    let mut scalar = |key| fields.next_varint_keyed(key).map_or(0, |v| v as i64);
    let (meta_id, offset_ps, dur_ps) = (scalar(0x08), scalar(0x10), scalar(0x18));
    while let Some((stat, off)) = fields.next_bytes_keyed(0x22) {
        if !skips.drops(stat) {
            stats.push(stat, off);
        }
    }
    let aggregated = fields.next_varint_keyed(0x28).is_some();
    if fields.at_end() {
        return Ok(EventHead { meta_id, offset_ps, dur_ps, aggregated });
    }
    read_event_fields(ev, base, stats, skips)
}

/// [`read_event`] field by field, in any order (the last of a repeated scalar wins), with an
/// error for malformed bytes.
fn read_event_fields<'a>(ev: &'a [u8], base: usize, stats: &mut StatSlices<'a>, skips: &StatSkips) -> Result<EventHead> {
    stats.clear();
    let mut head = EventHead::default();
    let mut f = Fields::with_base(ev, base);
    while let Some((field, value, off)) = f.next_field()? {
        match field {
            1 => head.meta_id = value.as_i64(),
            2 => head.offset_ps = value.as_i64(),
            3 => head.dur_ps = value.as_i64(),
            4 if !skips.drops(value.as_bytes()) => stats.push(value.as_bytes(), off),
            5 => head.aggregated = true,
            _ => {}
        }
    }
    Ok(head)
}

/// An event's stats, as their bytes and file offsets in order: the first 16 in place (an
/// event seldom has more), the rest in a vector.
struct StatSlices<'a> {
    inline: [(&'a [u8], usize); 16],
    extra: Vec<(&'a [u8], usize)>,
    len: usize,
}

impl<'a> StatSlices<'a> {
    fn new() -> Self {
        StatSlices { inline: [(&[], 0); 16], extra: Vec::new(), len: 0 }
    }

    #[inline]
    fn clear(&mut self) {
        self.len = 0;
        self.extra.clear();
    }

    #[inline]
    fn push(&mut self, slice: &'a [u8], off: usize) {
        if self.len < 16 {
            self.inline[self.len] = (slice, off);
        } else {
            self.extra.push((slice, off));
        }
        self.len += 1;
    }

    #[inline]
    fn iter(&self) -> impl Iterator<Item = &(&'a [u8], usize)> {
        self.inline[..self.len.min(16)].iter().chain(self.extra.iter())
    }
}

#[inline]
fn apply_stat(chunk: &mut EventChunk, i: usize, info: StatInfo, value: StatValue, pool: &StringPool, scratch: &mut String) {
    match info.role {
        Role::HloOp | Role::HloModule | Role::TfOp | Role::Src => {
            let id = match value {
                StatValue::Pooled(id) => id,
                StatValue::Str(s) => chunk.local(s),
                other => {
                    scratch.clear();
                    write_value(other, pool, scratch);
                    chunk.local(scratch)
                }
            };
            set_string_column(chunk, i, info.role, id);
        }
        Role::ProgramId | Role::Step | Role::CorrelationId | Role::DeviceOrdinal => {
            let Some(v) = (match value {
                StatValue::Pooled(id) => pool.get(id).and_then(|s| s.trim().parse().ok()),
                other => value_i64(other),
            }) else {
                return;
            };
            set_int_column(chunk, i, info.role, v);
        }
        Role::Skip => {}
        Role::Arg => {
            scratch.clear();
            write_value(value, pool, scratch);
            chunk.push_arg(info.name, scratch);
        }
    }
}

#[cfg(test)]
mod tests {
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
        let rows = chunks.iter().flat_map(|c| {
            (0..c.len()).map(move |i| (c.line[i], c.start_ns[i], c.dur_ns[i], c.self_ns[i], c.depth[i], c.parent[i], c.arg_value(i).to_string()))
        });
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
}
