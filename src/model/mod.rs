//! The in-memory form of one decoded capture, shared by every decoder.
//!
//! Decoders (XPlane, trace JSON) fill a [`Capture`]: planes, lines and columnar event
//! chunks whose strings are ids into one run-wide [`StringPool`]. Nothing here owns a
//! String per event: names are pool ids, stat values that are not typed columns are
//! appended to one byte buffer per chunk. The tables stage turns a Capture into Arrow.

mod chunk;
mod hlo;
pub mod names;
mod sparse;
mod strings;
#[cfg(test)]
mod tests;

pub use chunk::{encloses, nest_lines, EventChunk, OpenBefore, OpenEvent};
pub use hlo::{HloIndex, HloInstr, ModuleSchedule, Schedules};
use rustc_hash::FxHashMap as HashMap;
pub use sparse::{Nullable, SparseColumn};
pub use strings::StringPool;

/// Sentinel for "no string" in id columns.
pub const NO_STR: u32 = u32::MAX;

/// Sentinel for "null" in i64 columns.
pub const NULL_I64: i64 = i64::MIN;

/// Sentinel for "no parent" in parent columns.
pub const NO_PARENT: u32 = u32::MAX;

/// Tag bit marking a parent that is an event of an earlier part: the rest of the value
/// indexes [`Capture::carried_parents`] (a part's own positions stay below it).
pub const CARRIED_TAG: u32 = 1 << 31;

/// Tag bit marking a chunk-local string id (see [`EventChunk::local_strings`]).
pub const LOCAL_TAG: u32 = 1 << 31;

/// What a plane is, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneKind {
    /// `/device:TPU:0`, `/device:GPU:3`, or a Kineto GPU process.
    Device,
    /// `/host:CPU` or a host process of a trace JSON.
    Host,
    /// `/host:metadata`, `Task Environment`, `/device:CUSTOM:*`: metadata only.
    Other,
}

#[derive(Debug, Clone)]
pub struct Plane {
    pub host: u32,
    pub name: u32,
    pub kind: PlaneKind,
    /// Device name for device planes (`TPU:0`, `GPU:3`), NO_STR otherwise.
    pub device: u32,
}

#[derive(Debug, Clone)]
pub struct Line {
    pub plane: u32,
    pub line_id: i64,
    pub name: u32,
}

/// Facts about the capture as a whole (feeds the runs table).
#[derive(Default, Debug, Clone)]
pub struct CaptureMeta {
    pub source_format: &'static str,
    pub hosts: Vec<String>,
    /// Absolute start of the capture (ns since the Unix epoch), when the profile says.
    pub start_epoch_ns: Option<i64>,
    pub num_events_total: i64,
    pub num_complete_events: i64,
    pub suspected_truncation: bool,
    pub quality_warnings: Vec<String>,
    pub jax_version: Option<String>,
    pub jaxlib_version: Option<String>,
    pub device_kinds: Vec<String>,
    /// Distinct peak FLOP rates (FLOP/s) the accelerator planes state, in the order seen.
    pub peak_flops_per_s: Vec<f64>,
    /// Distinct peak HBM bandwidths (bytes/s) the accelerator planes state, in the order seen.
    pub peak_hbm_bytes_per_s: Vec<f64>,
    /// Hosts (pool ids) whose device planes hold device ops: their host events that carry
    /// hlo_op are launches, not ops. Known from the XPlane layout before any events decode.
    pub hosts_with_device_ops: Vec<u32>,
    /// Trace JSON `displayTimeUnit` (a viewer hint, never applied to times).
    pub display_time_unit: Option<String>,
    /// The framework that wrote the profile, as far as its format tells: `jax` (XPlane),
    /// `pytorch` (a Kineto trace JSON); None when it does not.
    pub framework: Option<&'static str>,
    /// What a host's file states of it beyond its name (the `hosts` table), in host order.
    pub host_facts: Vec<HostFacts>,
}

/// What one host's file states of the host: its rank in a distributed job (Kineto's
/// `distributedInfo`) and the file time of the host's start_ns 0.
#[derive(Default, Debug, Clone, PartialEq)]
pub struct HostFacts {
    pub host: String,
    pub source_file: String,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
    /// The file's own timestamp (ns) at the host's `start_ns` 0, when its events keep file
    /// time (trace JSON): `file ts = start_ns + ts_origin_ns`.
    pub ts_origin_ns: Option<i64>,
}

/// Keeps a positive, finite peak once per distinct value (a run states one per device kind).
pub fn note_peak(peaks: &mut Vec<f64>, peak: Option<f64>) {
    if let Some(p) = peak.filter(|p| p.is_finite() && *p > 0.0) {
        if !peaks.contains(&p) {
            peaks.push(p);
        }
    }
}

/// A decoded capture: what every decoder produces and every table is built from.
#[derive(Default, Debug)]
pub struct Capture {
    pub strings: StringPool,
    pub planes: Vec<Plane>,
    pub lines: Vec<Line>,
    pub chunks: Vec<EventChunk>,
    /// Shared with the parts handed to a sink ([`Capture::take_part`]): written only while a
    /// file's metadata plane or HLO side files are read.
    pub hlo: std::sync::Arc<HloIndex>,
    pub meta: CaptureMeta,
    /// When set, XPlane stats are kept as args, and `_src` as the `src` column, only as it
    /// says (an analysis that builds few `events` rows needs little else than what derive
    /// reads); None keeps every stat. Trace JSON keeps every arg either way.
    pub args_kept: Option<ArgsKept>,
    /// Event ids of the parents this part's events have in earlier parts (a plane streamed
    /// in time windows): a parent value `CARRIED_TAG | k` is event `carried_parents[k]`.
    pub carried_parents: Vec<i64>,
    /// Set when this part is a time window of a group of planes too large to be one part.
    pub window: Option<TimeWindow>,
}

/// A part that is a time window of a group of planes: whether it is the group's last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    pub last: bool,
}

/// Which args a decoder keeps, for a caller that reads only some.
#[derive(Clone, Copy, Debug)]
pub struct ArgsKept {
    /// Stat keys kept on every event: args, and `_src` (the `src` column, on nearly every
    /// CPU TraceMe).
    pub keys: fn(&str) -> bool,
    /// Event names whose events keep every arg.
    pub every_arg_of: fn(&str) -> bool,
}

impl Capture {
    pub fn str(&self, id: u32) -> Option<&str> {
        self.strings.get(id)
    }
    pub fn num_events(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }
    /// The part now decoded, for a sink on another thread while the next part decodes: its
    /// events move out; strings, planes, lines and metadata are copied as they are now (the
    /// decoder goes on appending to its own, with the same ids).
    pub fn take_part(&mut self) -> Capture {
        Capture {
            strings: self.strings.clone(),
            planes: self.planes.clone(),
            lines: self.lines.clone(),
            chunks: std::mem::take(&mut self.chunks),
            hlo: self.hlo.clone(),
            meta: self.meta.clone(),
            args_kept: self.args_kept,
            carried_parents: std::mem::take(&mut self.carried_parents),
            window: self.window.take(),
        }
    }
}
