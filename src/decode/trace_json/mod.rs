//! Chrome / Perfetto / Kineto trace JSON → [`Capture`], streamed.
//!
//! [`events`] reads a stretch of the `traceEvents` array into columns; [`pieces`] cuts the
//! array into stretches parsed on every core and joins them; this module turns the joined
//! events into the capture's planes and lines. Phases:
//! * `X` complete events and `B`/`E` pairs (matched per (pid, tid) stack) become events;
//! * `i`/`I` instant events are kept as zero-duration events (args preserved);
//! * `C` counter events are kept as zero-duration events on their (pid, tid) line;
//! * `M` metadata names processes and threads (and is not an event);
//! * flow (`s`/`t`/`f`), async (`b`/`e`/`n`) and object events are counted in
//!   `num_events_total` but not kept: Kineto's correlation is the `correlation` arg.
//!
//! `ts`/`dur` are µs (Chrome trace format); `displayTimeUnit` only changes how viewers show
//! them and is recorded, never applied.

mod events;
mod pieces;

use crate::model::{Capture, CaptureMeta, HostFacts, Line, Plane, PlaneKind, StringPool, NO_STR};
use events::{Distributed, Id, Piece, Top};
use rustc_hash::FxHashMap as HashMap;
use std::io::Read;

/// Event counts at which known exporters silently stop (JAX's trace JSON keeps 1,000,000 events).
pub const KNOWN_EXPORT_CAPS: [i64; 2] = [1_000_000, 5_000_000];

/// Result of reading a trace JSON.
pub struct JsonInfo {
    pub display_time_unit: Option<String>,
}

/// Decodes a trace JSON (object with `traceEvents`, or a bare array of events) into
/// `capture`. `open` gives the text from its start: it is read in pieces on every core, and
/// read again whole, in one go, when the pieces cannot be trusted (see [`pieces`]) or the
/// JSON is malformed (the whole read names the error).
pub fn decode_trace_json<R: Read>(open: impl FnMut() -> R, host: &str, capture: &mut Capture) -> Result<JsonInfo, String> {
    decode_trace_json_as(open, host, capture, Some(pieces::PIECE_BYTES))
}

/// [`decode_trace_json`] with the events array read in pieces of at least `piece_bytes`, or
/// whole (None): tests check that every cut reads what the whole read does.
#[doc(hidden)]
pub fn decode_trace_json_as<R: Read>(mut open: impl FnMut() -> R, host: &str, capture: &mut Capture, piece_bytes: Option<usize>) -> Result<JsonInfo, String> {
    let mut clock = std::time::Instant::now();
    let (top, pieces) = match piece_bytes.and_then(|bytes| pieces::read_in_pieces(open(), bytes)) {
        Some(read) => read,
        None => {
            let (mut top, mut piece) = (Top::default(), Piece::new());
            let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 20, open()));
            events::read_top(&mut de, &mut top, &mut piece).and_then(|_| de.end()).map_err(|e| describe_json_error(&e))?;
            (top, vec![piece])
        }
    };
    crate::timing::stage_done("  trace json: parse", &mut clock);
    if !top.saw_events_key {
        return Err("not a trace: JSON has no `traceEvents` array".into());
    }
    let pieces::Joined { mut chunk, line_list, process_names, process_labels, thread_names, unclosed, unmatched_e, total, dropped_flows, bad_times } =
        pieces::join(pieces, &mut capture.strings);
    crate::timing::stage_done("  trace json: join pieces", &mut clock);
    let Top { display_time_unit, base_time_ns, device_kinds, distributed, kineto, .. } = top;
    if kineto {
        capture.meta.framework = Some("pytorch");
    }
    let (file_host, host) = (host, host_name(host, &distributed, &capture.meta));
    let host = host.as_str();
    for k in device_kinds {
        if !capture.meta.device_kinds.contains(&k) {
            capture.meta.device_kinds.push(k);
        }
    }

    // Planes (one per pid) and lines (one per (pid, tid)), named by the M events.
    let host_id = capture.strings.intern(host);
    if !capture.meta.hosts.iter().any(|h| h == host) {
        capture.meta.hosts.push(host.to_string());
    }
    let mut plane_of_pid: HashMap<Id, u32> = HashMap::default();
    let first_plane = capture.planes.len();
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
                let label = process_labels.get(pid).and_then(|&id| capture.strings.get(id)).map(str::to_string);
                let (kind, device) = plane_kind_and_device(&pname, label.as_deref(), device_pids.contains(pid).then(|| id_text(pid, &capture.strings)));
                let device = device.map_or(NO_STR, |d| capture.strings.intern(&d));
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
    if kineto && !capture.planes[first_plane..].iter().any(|p| p.kind == PlaneKind::Device) {
        capture.meta.quality_warnings.push(format!(
            "{host}: a CPU-only trace (no GPU or other device activity was captured): device sections are empty; profile with ProfilerActivity.CUDA to see the device"
        ));
    }

    let ts_origin_ns = place_on_run_clock(&mut chunk, base_time_ns, &mut capture.meta);
    capture.meta.host_facts.push(HostFacts {
        host: host.to_string(),
        source_file: file_host.to_string(),
        rank: distributed.rank,
        world_size: distributed.world_size,
        backend: distributed.backend,
        ts_origin_ns,
    });
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
    chunk.sort_within_lines();
    crate::timing::stage_done("  trace json: sort", &mut clock);
    chunk.compute_nesting();
    crate::timing::stage_done("  trace json: nesting", &mut clock);
    capture.chunks.push(chunk);
    Ok(JsonInfo { display_time_unit })
}

/// A host is named by its rank when its file states one (`rank3`): the files of a job are
/// named by their writers in many ways, their ranks in one. A second file of the same rank
/// keeps its file's name.
fn host_name(file_host: &str, distributed: &Distributed, meta: &CaptureMeta) -> String {
    match distributed.rank.map(|r| format!("rank{r}")) {
        Some(name) if !meta.hosts.contains(&name) => name,
        _ => file_host.to_string(),
    }
}

/// Puts a file's events (file times, ns) on the run's clock and returns the file time at
/// the clock's 0. The run starts at its first file's earliest event. A later file whose
/// events state absolute time (Kineto's `baseTimeNanoseconds` + ts, or ts since the epoch)
/// keeps its offset from the first, so that ranks of one job line up as they ran (its
/// events may then start before 0); otherwise it starts at 0 too.
fn place_on_run_clock(chunk: &mut crate::model::EventChunk, base_time_ns: Option<i64>, meta: &mut CaptureMeta) -> Option<i64> {
    let min_ts = chunk.start_ns.iter().copied().min()?;
    let file_start_epoch = match base_time_ns {
        Some(base) => Some(base + min_ts),
        // µs since the epoch (after 2001) when ts are absolute.
        None if min_ts > 1_000_000_000_000_000_000 => Some(min_ts),
        None => None,
    };
    let origin = match (meta.start_epoch_ns, file_start_epoch) {
        (Some(run_start), Some(file_start)) if !meta.host_facts.is_empty() => min_ts - (file_start - run_start),
        _ => min_ts,
    };
    if meta.start_epoch_ns.is_none() && meta.host_facts.is_empty() {
        meta.start_epoch_ns = file_start_epoch;
    }
    for s in chunk.start_ns.iter_mut() {
        *s -= origin;
    }
    Some(origin)
}

/// A process's plane kind and device, by the trace's own device fields: an XPlane-style
/// `/device:…` name; else Kineto's `process_labels` naming a device (`GPU 0`, `MTIA 9`: device
/// `GPU:0`, `MTIA:9`); else a process with `stream N` threads, device `GPU:<pid>` (`pid_text`).
fn plane_kind_and_device(pname: &str, label: Option<&str>, pid_text: Option<String>) -> (PlaneKind, Option<String>) {
    if let Some(device) = pname.strip_prefix("/device:") {
        return (crate::decode::xplane::plane_kind(pname), Some(device.to_string()));
    }
    let labelled = label.and_then(|l| {
        let (kind, index) = l.trim().rsplit_once(' ')?;
        (kind != "CPU" && !kind.is_empty() && index.parse::<u32>().is_ok()).then(|| format!("{kind}:{index}"))
    });
    match (labelled, pid_text) {
        (Some(device), _) => (PlaneKind::Device, Some(device)),
        (None, Some(pid)) => (PlaneKind::Device, Some(format!("GPU:{pid}"))),
        (None, None) => match crate::decode::xplane::plane_kind(pname) {
            PlaneKind::Other => (PlaneKind::Host, None),
            kind => (kind, None),
        },
    }
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
