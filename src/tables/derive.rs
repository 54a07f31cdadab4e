//! Derives device ops, steps, collectives and regions from a decoded [`Capture`].
//!
//! These are the semantic rules of profq, kept apart from Arrow plumbing:
//! which events are device ops, how an op gets its opcode, scope path and pass, how
//! collectives are classified, and how steps and overlap are computed.

use crate::model::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A text out of the fixed set ops are labelled with (category, pass, collective kind), held
/// as one byte: the op rows are ~180 K on a 40 MB capture and every pass over them reads
/// whole rows, so three 16-byte `&'static str`s were a fifth of each.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Label(u8);

/// Every text a [`Label`] can hold, in the order of their ids ([`Label::id`]).
pub static LABEL_TEXTS: [&str; 14] = [
    "compute",
    "communication",
    "stall",
    "remat",
    "backward",
    "optimizer",
    "forward",
    "other",
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "send-recv",
];

impl Label {
    /// The label of `text`, one of [`LABEL_TEXTS`] (ops are labelled only with those).
    pub fn of(text: &'static str) -> Label {
        Label(LABEL_TEXTS.iter().position(|t| *t == text).expect("ops are labelled only with the texts of LABEL_TEXTS") as u8)
    }
    pub fn as_str(self) -> &'static str {
        LABEL_TEXTS[self.0 as usize]
    }
    /// Its place in [`LABEL_TEXTS`].
    pub fn id(self) -> u32 {
        self.0 as u32
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One device-op execution (a row of the `ops` table, in pool ids).
#[derive(Clone, Debug, Default)]
pub struct Op {
    pub event_id: i64,
    pub chunk: u32,
    pub index: u32,
    pub host: u32,
    pub device: u32,
    pub line: u32,
    /// Index of the line in `Capture.lines` (the op's track).
    pub line_index: u32,
    pub name: u32,
    pub hlo_op: u32,
    pub hlo_module: u32,
    pub program_id: i64,
    pub opcode: u32,
    pub category: Label,
    pub hlo_category: u32,
    pub collective_kind: Option<Label>,
    pub tf_op: u32,
    /// Index into [`Derived::strings`], or NO_STR.
    pub region_path: u32,
    pub pass: Label,
    pub step: i64,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub self_ns: i64,
    pub dur_ps: i64,
    pub shape: u32,
    /// NULL_I64 when the HLO gives no shape.
    pub shape_bytes: i64,
    /// Index into [`Derived::strings`], or NO_STR.
    pub source: u32,
    pub flops: OptionalF64,
    pub bytes_accessed: OptionalF64,
    pub is_async: bool,
    /// On an `Async XLA Ops` line: an in-flight async span, not device occupancy.
    pub async_span: bool,
}

/// An `Option<f64>` in 8 bytes instead of 16 (a large profile holds millions of [`Op`]s, and
/// every pass over them reads their bytes): `None` is a NaN that parsing text never yields.
#[derive(Clone, Copy, Debug)]
pub struct OptionalF64(u64);

impl OptionalF64 {
    /// A signalling NaN: parsing `nan` yields the quiet one, which `new` keeps.
    const NONE_BITS: u64 = 0x7ff4_0000_0000_0001;
    pub const NONE: OptionalF64 = OptionalF64(Self::NONE_BITS);

    pub fn new(value: Option<f64>) -> Self {
        match value {
            Some(v) if v.to_bits() == Self::NONE_BITS => OptionalF64(f64::NAN.to_bits()),
            Some(v) => OptionalF64(v.to_bits()),
            None => Self::NONE,
        }
    }

    pub fn get(self) -> Option<f64> {
        (self.0 != Self::NONE_BITS).then(|| f64::from_bits(self.0))
    }
}

impl Default for OptionalF64 {
    fn default() -> Self {
        Self::NONE
    }
}

impl Op {
    pub fn end_ns(&self) -> i64 {
        self.start_ns.saturating_add(self.dur_ns)
    }
}

#[derive(Clone, Debug)]
pub struct Step {
    pub host: u32,
    pub device: u32,
    pub step: i64,
    pub name: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub source: &'static str,
    pub busy_ns: i64,
    pub compute_ns: i64,
    pub communication_ns: i64,
    pub op_count: i64,
}

/// A collective op, with the time compute ops of its device overlapped it.
#[derive(Clone, Debug)]
pub struct Collective {
    pub op: Op,
    pub overlapped_ns: i64,
}

#[derive(Clone, Debug, Default)]
pub struct Region {
    pub op_count: i64,
    pub inclusive_ns: i64,
    pub exclusive_ns: i64,
    pub devices: Vec<u32>,
}

impl Region {
    fn add_devices(&mut self, devices: &[u32]) {
        for d in devices {
            if !self.devices.contains(d) {
                self.devices.push(*d);
            }
        }
    }
}

/// An idle gap on a device-op line before an op (the marker), attributed to the op that
/// does the real work after it (the payload).
#[derive(Clone, Debug)]
pub struct Gap {
    pub marker: usize,
    pub payload: usize,
    pub gap_start_ns: i64,
    pub gap_ns: i64,
}

/// Strings made by the derivation (region paths, `file:line` sources), by index.
#[derive(Default)]
pub struct LocalStrings {
    pub values: Vec<String>,
    index: FxHashMap<String, u32>,
}

impl LocalStrings {
    fn intern(&mut self, s: String) -> u32 {
        if let Some(&id) = self.index.get(&s) {
            return id;
        }
        let id = self.values.len() as u32;
        self.index.insert(s.clone(), id);
        self.values.push(s);
        id
    }
    pub fn get(&self, id: u32) -> Option<&str> {
        self.values.get(id as usize).map(String::as_str)
    }
}

/// What an op's identity (program, module, candidate names) decides, worked out once per
/// identity: ops repeat a few hundred distinct instructions many times.
#[derive(Clone, Copy)]
struct KnownOp<'c> {
    /// The name that resolved (see [`make_op`]).
    hlo_op: u32,
    /// Its HLO instruction, when the HLO knows it.
    instr: Option<&'c HloInstr>,
    collective_kind: Option<Label>,
    category: Label,
    /// Its opcode is an async one's (`*-start`, `*-done`, `*-update`).
    async_opcode: bool,
    /// The instruction's `file:line` (an id in [`OpCaches::strings`]), NO_STR when it has none.
    source: u32,
}

/// Merged (start, end) intervals.
type Intervals = Vec<(i64, i64)>;

/// Per-value results reused across ops: classification, scope, device and source strings.
#[derive(Default)]
struct OpCaches<'c> {
    /// (program_id, hlo_module, [hlo_op, display_name, name]) → what they decide.
    known: FxHashMap<(i64, u32, [u32; 3]), KnownOp<'c>>,
    /// (tf_op, event name, launch scope) → (region path id, pass); the name only matters
    /// without a tf_op or a launch scope.
    scope: FxHashMap<(u32, u32, u32), (u32, Label)>,
    cpu_device: FxHashMap<i64, u32>,
    strings: LocalStrings,
}

/// Device-op lines: TPU `XLA Ops` / `Async XLA Ops`, GPU `Stream #N(...)`, Kineto `stream N`.
pub fn is_device_op_line(name: &str) -> bool {
    name == "XLA Ops" || name == "Async XLA Ops" || name.starts_with("Stream #") || name.to_ascii_lowercase().starts_with("stream ")
}

/// Kineto categories that are device work (others on stream lines are annotations).
fn is_device_work_category(cat: Option<&str>) -> bool {
    match cat {
        None => true,
        Some(c) => ["kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"].iter().any(|w| c.eq_ignore_ascii_case(w)),
    }
}

/// Collective kind from an HLO opcode.
pub fn collective_kind_of_opcode(opcode: &str) -> Option<&'static str> {
    let base = opcode.trim_end_matches("-start").trim_end_matches("-done").trim_end_matches("-update");
    Some(match base {
        "all-reduce" => "all-reduce",
        "all-gather" => "all-gather",
        "reduce-scatter" => "reduce-scatter",
        "all-to-all" | "ragged-all-to-all" => "all-to-all",
        "collective-permute" => "collective-permute",
        "send" | "recv" => "send-recv",
        "collective-broadcast" => "other",
        _ => return None,
    })
}

/// Splits a name into lower-case alphanumeric words, also at camelCase boundaries
/// (`ncclDevKernel_AllReduce_RING_LL` → nccl dev kernel all reduce ring ll).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            if ch.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
            cur.push(ch.to_ascii_lowercase());
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Collective kind from a name when no opcode is known (kernel names, JAX primitive names).
/// Matches whole words, so `stop` never reads as `top` and `sendfile` needs `send` alone.
pub fn collective_kind_of_name(name: &str) -> Option<&'static str> {
    let w = words(name);
    let has = |a: &str| w.iter().any(|x| x == a);
    let pair = |a: &str, b: &str| w.windows(2).any(|p| p[0] == a && p[1] == b);
    if has("allreduce") || pair("all", "reduce") || has("psum") {
        Some("all-reduce")
    } else if has("allgather") || pair("all", "gather") {
        Some("all-gather")
    } else if has("reducescatter") || pair("reduce", "scatter") {
        Some("reduce-scatter")
    } else if has("alltoall") || w.windows(3).any(|p| p[0] == "all" && p[1] == "to" && p[2] == "all") {
        Some("all-to-all")
    } else if has("ppermute") || pair("collective", "permute") {
        Some("collective-permute")
    } else if has("sendrecv") || has("send") || has("recv") {
        Some("send-recv")
    } else if has("nccl") || has("rccl") || has("broadcast") && (has("nccl") || has("rccl")) {
        Some("other")
    } else {
        None
    }
}

const STALL_WORDS: &[&str] = &["wait", "barrier", "semaphore", "acquire", "idle", "blocked", "sleep"];

fn is_stall(name: &str) -> bool {
    words(name).iter().any(|w| STALL_WORDS.contains(&w.as_str()))
}

/// Splits a scope path at '/' outside parentheses.
fn split_scope(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, ch) in path.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '/' if depth == 0 => {
                out.push(&path[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&path[start..]);
    out
}

const TRANSFORMS: &[&str] =
    &["jvp", "transpose", "vmap", "remat", "checkpoint", "pmap", "xmap", "custom_jvp_call", "custom_vjp_call", "named", "named_call", "jit", "pjit"];

/// Scope components that are runtime plumbing, not user scopes (the reference's blacklist).
fn is_plumbing(component: &str) -> bool {
    let mut norm = String::with_capacity(component.len());
    for ch in component.to_ascii_lowercase().chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            norm.push(ch);
        } else if !norm.ends_with('_') {
            norm.push('_');
        }
    }
    let norm = norm.trim_matches('_');
    norm.is_empty()
        || matches!(
            norm,
            "xla"
                | "xla_ops"
                | "xla_modules"
                | "xla_traceme"
                | "xla_trace_me"
                | "pallas_call"
                | "shard_map"
                | "call"
                | "closed_call"
                | "execute"
                | "launch"
                | "tpu_launch"
                | "command_buffer"
        )
        || ["pjrt", "xla_", "tpu_", "stream_executor"].iter().any(|p| norm.starts_with(p))
        || ["launch", "execute", "thunk", "runtime"].iter().any(|p| norm.contains(p))
}

/// A PyTorch autograd node (`AddmmBackward0`, `NativeLayerNormBackward0`): a backward scope.
fn is_autograd_node(name: &str) -> bool {
    name.trim_end_matches(|c: char| c.is_ascii_digit()).ends_with("Backward")
}

/// Unwraps `transpose(jvp(forward))` into ("forward", ["transpose", "jvp"]).
fn unwrap_transforms(mut comp: &str) -> (&str, Vec<&str>) {
    let mut applied = Vec::new();
    while let Some(open) = comp.find('(') {
        if !comp.ends_with(')') {
            break;
        }
        let head = &comp[..open];
        if !TRANSFORMS.contains(&head) {
            break;
        }
        applied.push(head);
        comp = &comp[open + 1..comp.len() - 1];
    }
    (comp, applied)
}

/// (region path, pass) of a framework scope path such as
/// `jit(train_step)/transpose(jvp(forward))/layer_0/attention/qkv/dot_general`
/// → (`train_step/forward/layer_0/attention/qkv/dot_general`, backward): transforms
/// unwrapped, runtime plumbing (shard_map, pallas_call, ...) removed. The primitive stays the
/// leaf, as in the reference, so a scope's exclusive time is what runs directly in it.
pub fn scope_of(tf_op: &str) -> (Option<String>, &'static str) {
    let tf_op = tf_op.trim().trim_end_matches(':');
    let comps = split_scope(tf_op);
    let mut names = Vec::new();
    let (mut transposed, mut jvp, mut remat, mut optimizer, mut fwd_name, mut bwd_name) = (false, false, false, false, false, false);
    for comp in comps {
        let comp = comp.trim().trim_matches(':');
        // `dynamic_donated[1][0][0].model.params...` names a donated argument: keep the path.
        let comp = match comp.strip_prefix("dynamic_donated") {
            Some(rest) => rest.split_once('.').map_or("", |(_, tail)| tail),
            None => comp,
        };
        let (inner, applied) = unwrap_transforms(comp);
        transposed |= applied.contains(&"transpose");
        jvp |= applied.contains(&"jvp");
        remat |= applied.iter().any(|a| *a == "remat" || *a == "checkpoint");
        let lower = inner.to_ascii_lowercase();
        // The recomputed forward is `rematted_computation`; a bare `checkpoint` scope (the
        // checkpoint primitive) holds the original forward under jvp and the backward under
        // transpose, so it marks no pass of its own.
        remat |= lower == "remat" || lower.starts_with("rematted_computation");
        optimizer |= lower.contains("optimizer") || ["adam", "adamw", "sgd", "optax", "apply_updates", "opt_update"].contains(&lower.as_str());
        fwd_name |= lower == "forward" || lower == "fwd";
        bwd_name |= lower == "backward" || lower == "bwd" || is_autograd_node(inner);
        if !is_plumbing(inner) && !TRANSFORMS.contains(&inner) {
            names.push(inner);
        }
    }
    let pass = if remat {
        "remat"
    } else if transposed || bwd_name {
        "backward"
    } else if optimizer {
        "optimizer"
    } else if jvp || fwd_name {
        "forward"
    } else {
        "other"
    };
    let path = if names.is_empty() { None } else { Some(names.join("/")) };
    (path, pass)
}

/// Module name and program id from an `XLA Modules` event name like `jit_f(1219...)`.
fn parse_module_event(name: &str) -> (&str, Option<i64>) {
    match name.rfind('(') {
        Some(open) if name.ends_with(')') => (&name[..open], name[open + 1..name.len() - 1].parse::<u64>().ok().map(|v| v as i64)),
        _ => (name, None),
    }
}

/// Sorted, merged [start, end) intervals.
fn union(mut iv: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    // Stable sort: the intervals come as a few sorted runs (one per line), which it merges.
    iv.sort();
    union_of_sorted(iv)
}

/// [`union`] of intervals already sorted.
fn union_of_sorted(mut iv: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    // Merged in place: the kept intervals never overtake the one being read.
    let mut kept = 0;
    for r in 0..iv.len() {
        let (s, e) = iv[r];
        if e <= s {
            continue;
        }
        if kept > 0 && s <= iv[kept - 1].1 {
            iv[kept - 1].1 = iv[kept - 1].1.max(e);
        } else {
            iv[kept] = (s, e);
            kept += 1;
        }
    }
    iv.truncate(kept);
    iv
}

/// Length of the part of [s, e) covered by merged intervals.
fn covered(merged: &[(i64, i64)], s: i64, e: i64) -> i64 {
    let mut i = merged.partition_point(|iv| iv.1 <= s);
    let mut total = 0;
    while i < merged.len() && merged[i].0 < e {
        total += merged[i].1.min(e) - merged[i].0.max(s);
        i += 1;
    }
    total.max(0)
}

/// The union of two merged interval lists.
fn merge_unions(a: Vec<(i64, i64)>, b: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    if a.is_empty() {
        return b;
    }
    let mut v = a;
    v.extend(b);
    union(v)
}

/// Interns the strings the derivation looks up by value (CPU device names, module names
/// of `XLA Modules` events, `hlo_category` and the `name` stat that replaces a generic
/// tf_op), so that the derivation itself can read the capture immutably.
pub fn prepare_strings(capture: &mut Capture) -> PoolIds {
    let ids = PoolIds::new(&mut capture.strings);
    let xla_module = ["XlaModule", "XlaModule:"].map(|s| capture.strings.lookup(s));
    let mut wanted: Vec<String> = Vec::new();
    let mut ordinals: Vec<i64> = vec![0];
    let modules_lines = LineRoles::of(capture).modules;
    // This runs on the decoding thread before the part is handed over, while the other cores
    // wait: it reads the args and ordinals held rather than every event.
    for chunk in &capture.chunks {
        let mut last = NULL_I64;
        for &o in chunk.device_ordinal.values() {
            if o != last {
                last = o;
                if o != NULL_I64 && !ordinals.contains(&o) {
                    ordinals.push(o);
                }
            }
        }
        // Arg j is wanted: an hlo_category, or the `name` of an event (found only then) whose
        // tf_op is a generic XlaModule.
        let wanted_arg = |j: usize, event: &dyn Fn() -> usize| {
            let k = chunk.arg_key[j];
            k == ids.hlo_category
                || (k == ids.name && {
                    let tf_op = chunk.tf_op.get(event());
                    tf_op != NO_STR && xla_module.contains(&Some(tf_op))
                })
        };
        for (line, events) in chunk.line_runs() {
            let args = chunk.arg_offsets[events.start] as usize..chunk.arg_offsets[events.end] as usize;
            if !modules_lines[line as usize] {
                // An arg's event: the last whose args start at or before it.
                wanted.extend(
                    args.filter(|&j| wanted_arg(j, &|| chunk.arg_offsets.partition_point(|&a| a as usize <= j) - 1)).map(|j| chunk.arg_value(j).to_string()),
                );
                continue;
            }
            for i in events {
                wanted.extend(chunk.args_of(i).filter(|&j| wanted_arg(j, &|| i)).map(|j| chunk.arg_value(j).to_string()));
                let (m, _) = parse_module_event(capture.strings.get(chunk.name[i]).unwrap_or(""));
                wanted.push(m.to_string());
            }
        }
    }
    for w in wanted {
        capture.strings.intern(&w);
    }
    for o in ordinals {
        capture.strings.intern(&format!("CPU:{o}"));
    }
    ids
}

/// The part's events cut into about one unit per worker, each unit one or more runs of
/// consecutive events of a chunk, (chunk index, event range), in event order.
fn event_units(capture: &Capture) -> Vec<Vec<(usize, std::ops::Range<usize>)>> {
    let workers = crate::work_queue::workers();
    let per_unit = capture.num_events().div_ceil(workers).max(1);
    let (mut units, mut unit, mut filled) = (Vec::new(), Vec::new(), 0);
    for (ci, chunk) in capture.chunks.iter().enumerate() {
        let mut start = 0;
        while start < chunk.len() {
            let end = (start + per_unit - filled).min(chunk.len());
            unit.push((ci, start..end));
            filled += end - start;
            start = end;
            if filled == per_unit {
                units.push(std::mem::take(&mut unit));
                filled = 0;
            }
        }
    }
    if !unit.is_empty() {
        units.push(unit);
    }
    units
}

/// A yes or no about a string, decided at most once per string id (a part's names repeat
/// many times over); an id outside the pool is decided each time.
pub struct DecidedOnce {
    /// By id: 0 not decided yet, 1 no, 2 yes.
    slots: Vec<u8>,
}

impl DecidedOnce {
    pub fn new(pool: &StringPool) -> Self {
        DecidedOnce { slots: vec![0; pool.len()] }
    }
    pub fn get(&mut self, id: u32, decide: impl FnOnce() -> bool) -> bool {
        match self.slots.get_mut(id as usize) {
            Some(slot) => {
                if *slot == 0 {
                    *slot = 1 + decide() as u8;
                }
                *slot == 2
            }
            None => decide(),
        }
    }
}

/// The first event_id of each chunk, numbering from `first` in chunk order.
pub fn chunk_bases(capture: &Capture, first: i64) -> Vec<i64> {
    let mut bases = Vec::with_capacity(capture.chunks.len());
    let mut base = first;
    for c in &capture.chunks {
        bases.push(base);
        base += c.len() as i64;
    }
    bases
}

/// Spans (events or ops) summed: how many, their summed duration and self time, the earliest
/// start and the latest end.
#[derive(Clone, Copy, Debug)]
pub struct SpanSums {
    pub count: i64,
    pub dur_ns: i64,
    pub self_ns: i64,
    /// i64::MAX while there is no span.
    pub first_start_ns: i64,
    /// i64::MIN while there is no span.
    pub last_end_ns: i64,
}

impl SpanSums {
    /// No span.
    pub const NONE: SpanSums = SpanSums { count: 0, dur_ns: 0, self_ns: 0, first_start_ns: i64::MAX, last_end_ns: i64::MIN };

    /// Adds one span.
    #[inline]
    fn push(&mut self, start_ns: i64, dur_ns: i64, self_ns: i64) {
        self.count += 1;
        self.dur_ns = self.dur_ns.saturating_add(dur_ns);
        self.self_ns = self.self_ns.saturating_add(self_ns);
        self.first_start_ns = self.first_start_ns.min(start_ns);
        self.last_end_ns = self.last_end_ns.max(start_ns.saturating_add(dur_ns));
    }

    /// Folds `other`'s spans into these.
    fn add(&mut self, other: &SpanSums) {
        self.count += other.count;
        self.dur_ns = self.dur_ns.saturating_add(other.dur_ns);
        self.self_ns = self.self_ns.saturating_add(other.self_ns);
        self.first_start_ns = self.first_start_ns.min(other.first_start_ns);
        self.last_end_ns = self.last_end_ns.max(other.last_end_ns);
    }
}

/// Events of one (line, name, category, op category) summed (a row of `event_totals`).
#[derive(Clone, Debug)]
pub struct EventTotal {
    /// Index of the line in `Capture.lines`.
    pub line_index: u32,
    pub name: u32,
    /// The events' own category (trace JSON `cat`), NO_STR when they have none.
    pub category: u32,
    pub op_category: Option<&'static str>,
    pub events: SpanSums,
}

/// A distinct op of a device summed over its executions (a row of `op_totals`).
#[derive(Clone, Debug)]
pub struct OpTotal {
    /// One of the executions: the key columns are read from it.
    pub example: usize,
    pub count: i64,
    pub dur_ns: i64,
    pub self_ns: i64,
    pub max_dur_ns: i64,
    pub first_start_ns: i64,
    /// NULL_I64 if no execution has a step.
    pub first_step: i64,
}

impl OpTotal {
    /// Folds `other`'s executions into these (the example stays).
    fn add(&mut self, other: &OpTotal) {
        self.count += other.count;
        self.dur_ns = self.dur_ns.saturating_add(other.dur_ns);
        self.self_ns = self.self_ns.saturating_add(other.self_ns);
        self.max_dur_ns = self.max_dur_ns.max(other.max_dur_ns);
        self.first_start_ns = self.first_start_ns.min(other.first_start_ns);
        if other.first_step != NULL_I64 && (self.first_step == NULL_I64 || other.first_step < self.first_step) {
            self.first_step = other.first_step;
        }
    }
}

/// Gaps with the same (host, device, line, marker op, payload op, payload scope and region)
/// summed (a row of `gap_totals`).
#[derive(Clone, Debug)]
pub struct GapTotal {
    /// One of the gaps' marker and payload ops (see [`PartDerived::op`]): the key columns
    /// are read from them.
    pub marker: usize,
    pub payload: usize,
    pub count: i64,
    pub gap_ns: i64,
    pub max_gap_ns: i64,
}

impl GapTotal {
    /// Folds `other`'s gaps into these (the marker and payload stay).
    fn add(&mut self, other: &GapTotal) {
        self.count += other.count;
        self.gap_ns = self.gap_ns.saturating_add(other.gap_ns);
        self.max_gap_ns = self.max_gap_ns.max(other.max_gap_ns);
    }
}

/// A (host, device, line, step) of `line_steps`, in pool ids (step NULL_I64 outside steps).
type LineStepKey = (u32, u32, u32, i64);

/// The ops of a device-op line in one step, and the gaps before them, summed (a row of
/// `line_steps`).
#[derive(Clone, Debug)]
pub struct LineStep {
    pub host: u32,
    pub device: u32,
    pub line: u32,
    /// NULL_I64 for ops outside every step.
    pub step: i64,
    pub ops: SpanSums,
    pub gap_count: i64,
    pub gap_ns: i64,
    /// NULL_I64 (below every gap) while there is no gap.
    pub max_gap_ns: i64,
}

impl LineStep {
    /// No op or gap, under `op`'s key.
    fn keyed_by(op: &Op) -> LineStep {
        LineStep { host: op.host, device: op.device, line: op.line, step: op.step, ops: SpanSums::NONE, gap_count: 0, gap_ns: 0, max_gap_ns: NULL_I64 }
    }

    /// Adds one gap (under its marker op's key: the marker is counted as an op).
    fn add_gap(&mut self, gap_ns: i64) {
        self.gap_count += 1;
        self.gap_ns = self.gap_ns.saturating_add(gap_ns);
        self.max_gap_ns = self.max_gap_ns.max(gap_ns);
    }

    fn key(&self) -> LineStepKey {
        (self.host, self.device, self.line, self.step)
    }

    /// The key of `op`'s row (that of [`LineStep::keyed_by`]`(op)`).
    fn key_of(op: &Op) -> LineStepKey {
        (op.host, op.device, op.line, op.step)
    }

    /// Folds `other`'s ops and gaps into these (the same key).
    fn add(&mut self, other: &LineStep) {
        self.ops.add(&other.ops);
        self.gap_count += other.gap_count;
        self.gap_ns = self.gap_ns.saturating_add(other.gap_ns);
        self.max_gap_ns = self.max_gap_ns.max(other.max_gap_ns);
    }
}

/// Tables derived from one part of a run: the part's ops and what refers to them.
pub struct PartDerived {
    pub strings: LocalStrings,
    pub ops: Vec<Op>,
    /// Ops of earlier windows that this part's gaps refer to (not rows of its `ops`):
    /// op `ops.len() + j` of the part ([`PartDerived::op`]).
    pub carried_ops: Vec<Op>,
    /// In order of first execution.
    pub op_totals: Vec<OpTotal>,
    pub gaps: Vec<Gap>,
    /// In order of first gap.
    pub gap_totals: Vec<GapTotal>,
    pub collectives: Vec<Collective>,
    /// Sorted by (line index, name id, op category).
    pub event_totals: Vec<EventTotal>,
    /// In order of first op.
    pub line_steps: Vec<LineStep>,
    /// First event_id of each chunk of the part.
    pub chunk_base: Vec<i64>,
}

/// What takes a part's final ops, and the strings they name by index, beside the rest of the
/// derivation ([`Deriver::part_with`]).
pub type WithOps<'o> = Box<dyn FnOnce(&[Op], &dyn crate::tables::columns::Strings) -> Result<(), String> + Send + 'o>;

/// What takes a part's gaps as soon as they are found, with the ops they refer to (by index)
/// and the strings those name, while the rest of the part is derived ([`Deriver::part_with`]).
pub type WithGaps<'o> = Box<dyn FnOnce(&[Gap], &[Op], &(dyn crate::tables::columns::Strings + Sync)) -> Result<(), String> + Send + 'o>;

/// What [`WithOps`] and [`WithGaps`] returned; `gaps` is None where the gaps were not handed
/// over (a time window's, which may refer to earlier windows' ops).
pub struct Handed {
    pub ops: Result<(), String>,
    pub gaps: Option<Result<(), String>>,
}

/// What [`Deriver::derive_from_ops`] makes of a part's final ops.
struct FromOps {
    carried_ops: Vec<Op>,
    gaps: Vec<Gap>,
    collectives: Vec<Collective>,
    totals: Totals,
    /// What [`WithGaps`] returned, if the gaps were handed to it.
    gaps_handed: Option<Result<(), String>>,
}

/// A part's tables summed per key, which the windows of a group of planes sum before they
/// are written ([`WindowTotals`]).
#[derive(Default)]
struct Totals {
    op_totals: Vec<OpTotal>,
    gap_totals: Vec<GapTotal>,
    event_totals: Vec<EventTotal>,
    line_steps: Vec<LineStep>,
}

/// The tables made of a part's ops ([`crate::tables::part_tables`]), in the order both that
/// and [`PartDerived::table_rows`] give them.
pub const PART_TABLES: [&str; 7] = ["ops", "collectives", "gaps", "event_totals", "op_totals", "gap_totals", "line_steps"];

/// Op `k` of a part: one of its own `ops`, or after them one carried from an earlier window.
fn op_at<'a>(ops: &'a [Op], carried: &'a [Op], k: usize) -> &'a Op {
    ops.get(k).unwrap_or_else(|| &carried[k - ops.len()])
}

impl PartDerived {
    /// The op a gap's `marker` or `payload` refers to ([`PartDerived::carried_ops`]).
    pub fn op(&self, k: usize) -> &Op {
        op_at(&self.ops, &self.carried_ops, k)
    }

    /// The rows each of the part's tables ([`PART_TABLES`]) gets.
    pub fn table_rows(&self) -> [(&'static str, usize); 7] {
        let rows = [
            self.ops.len(),
            self.collectives.len(),
            self.gaps.len(),
            self.event_totals.len(),
            self.op_totals.len(),
            self.gap_totals.len(),
            self.line_steps.len(),
        ];
        std::array::from_fn(|k| (PART_TABLES[k], rows[k]))
    }
}

/// What only the whole run knows: its steps (with their device activity), regions and totals.
pub struct RunDerived {
    pub steps: Vec<Step>,
    /// (pass, path) -> totals, ordered.
    pub regions: BTreeMap<(&'static str, String), Region>,
    pub num_devices: usize,
    /// Earliest event start and latest event end (ns), if any event.
    pub span: Option<(i64, i64)>,
    /// `run_id` arg values and source hints (`source`, `source_file`, `file_name` args) by count.
    pub launch_ids: Vec<(String, usize)>,
    pub source_hints: Vec<(String, usize)>,
    /// What the derivation noticed that makes the run's numbers less complete.
    pub warnings: Vec<String>,
}

impl RunDerived {
    /// The run's quality warnings: the capture's (decoding), then the derivation's.
    pub fn quality_warnings(&self, meta: &CaptureMeta) -> Vec<String> {
        meta.quality_warnings.iter().chain(&self.warnings).cloned().collect()
    }
}

/// Derives a run's tables part by part, so that a capture too large for memory is decoded,
/// derived and written a group of planes at a time. A part holds whole planes; parts come
/// host planes before device planes, so the host step annotations that device ops are
/// assigned to are known when the device ops arrive. Only small per-run state is kept
/// between parts: steps, the merged busy intervals of each host, region totals and counts.
#[derive(Default)]
pub struct Deriver {
    /// Hosts whose device planes hold device ops (their host events with hlo_op are launches).
    hosts_with_device_ops: Vec<u32>,
    next_event_id: i64,
    host_steps: BTreeMap<(u32, i64), Step>,
    device_steps: Vec<Step>,
    /// Per host: merged intervals of all ops and of compute ops, over every part so far.
    /// (None: the compute intervals are all of them, no device of the host having collectives.)
    host_busy: HashMap<u32, (Intervals, Option<Intervals>)>,
    leaves: FxHashMap<(&'static str, String), Region>,
    devices: Vec<u32>,
    span: Option<(i64, i64)>,
    launch_ids: FxHashMap<String, usize>,
    source_hints: FxHashMap<String, usize>,
    /// Kernels run inside a GPU command buffer, of programs whose HLO the capture holds: all of
    /// them and those that match no HLO instruction, as (count, ns); and the ns of every op.
    buffered_kernels: (usize, i64),
    unplaced_kernels: (usize, i64),
    /// XLA ops (with a program id or module) of an XPlane whose program's HLO the capture
    /// does not hold, as (count, ns), and how many of them ran inside a command buffer.
    ops_without_hlo: (usize, i64),
    buffered_without_hlo: usize,
    modules_without_hlo: BTreeSet<String>,
    op_ns: i64,
    /// What a group of planes streamed in time windows carries from one window to the next.
    windows: WindowCarry,
}

/// The state a window of a group of planes ([`crate::model::TimeWindow`]) leaves to the
/// next: what an op or gap there needs of the ops before it.
#[derive(Default)]
struct WindowCarry {
    gaps: GapCarry,
    collectives: CollectiveCarry,
    totals: WindowTotals,
    /// The group's device steps start here in `Deriver::device_steps`.
    first_device_step: Option<usize>,
    /// Per (host, device): merged intervals of all ops and of compute ops not yet credited
    /// to the group's device steps (those a later window's ops may still extend).
    device_busy: FxHashMap<(u32, u32), (Intervals, Intervals)>,
    /// Per plane: the `XLA Modules` events so far, (start, end, module, program id) by start.
    module_windows: HashMap<u32, Vec<(i64, i64, u32, i64)>>,
    /// Where each GPU graph launch's walk along its program's schedule stands.
    graph_walks: super::command_buffers::Walks,
}

/// An op with the text of its part-local strings (`region_path`, `source`), to be carried
/// into a later part.
type CarriedOp = (Op, Option<String>, Option<String>);

/// An op of a part as a [`CarriedOp`].
fn carried_op(op: &Op, strings: &LocalStrings) -> CarriedOp {
    let text = |id: u32| if id == NO_STR { None } else { strings.get(id).map(str::to_string) };
    (op.clone(), text(op.region_path), text(op.source))
}

/// A [`CarriedOp`] as an op of this part: its strings interned in the part's.
fn landed_op((mut op, region_path, source): CarriedOp, strings: &mut LocalStrings) -> Op {
    op.region_path = region_path.map_or(NO_STR, |v| strings.intern(v));
    op.source = source.map_or(NO_STR, |v| strings.intern(v));
    op
}

/// The totals tables of the windows of a group of planes, summed over its windows and
/// written with the last, so that each key has one row as when the planes are one part.
#[derive(Default)]
struct WindowTotals {
    events: BTreeMap<(u32, u32, u32, Option<&'static str>), EventTotal>,
    ops: Vec<(OpTotal, CarriedOp)>,
    op_index: FxHashMap<OpTotalKey, usize>,
    gaps: Vec<(GapTotal, CarriedOp, CarriedOp)>,
    gap_index: FxHashMap<GapTotalKey, usize>,
    lines: Vec<LineStep>,
    line_index: FxHashMap<LineStepKey, usize>,
}

/// Adds `row` to `rows` under `key`: merged into the row already there, or as a new one.
/// Returns the row's position in `rows`.
fn fold_row<K: std::hash::Hash + Eq, R>(index: &mut FxHashMap<K, usize>, rows: &mut Vec<R>, key: K, row: R, merge: impl FnOnce(&mut R, R)) -> usize {
    match index.get(&key) {
        Some(&j) => {
            merge(&mut rows[j], row);
            j
        }
        None => {
            index.insert(key, rows.len());
            rows.push(row);
            rows.len() - 1
        }
    }
}

/// An `op_totals` key with its part-local strings as text.
type OpTotalKey = ((u32, u32, u32, u32, i64, u32), (Label, Option<Label>, u32, Option<String>, Label, u32, Option<String>));
/// A `gap_totals` key with its part-local string as text.
type GapTotalKey = (u32, u32, u32, u32, u32, u32, Option<String>);

impl WindowTotals {
    /// Adds a window's totals (`ops` and `carried` are its ops, `strings` its strings).
    fn fold(&mut self, ops: &[Op], carried: &[Op], strings: &LocalStrings, totals: Totals) {
        let Totals { op_totals, gap_totals, event_totals, line_steps } = totals;
        for t in event_totals {
            match self.events.entry((t.line_index, t.name, t.category, t.op_category)) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(t);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => o.get_mut().events.add(&t.events),
            }
        }
        let op = |k: usize| op_at(ops, carried, k);
        for t in op_totals {
            let (example, region_path, source) = carried_op(op(t.example), strings);
            let o = &example;
            let key = (
                (o.host, o.device, o.hlo_op, o.hlo_module, o.program_id, o.opcode),
                (o.category, o.collective_kind, o.tf_op, region_path.clone(), o.pass, o.shape, source.clone()),
            );
            fold_row(&mut self.op_index, &mut self.ops, key, (t, (example, region_path, source)), |(sum, _), (t, _)| sum.add(&t));
        }
        for t in gap_totals {
            let (marker, payload) = (carried_op(op(t.marker), strings), carried_op(op(t.payload), strings));
            let (m, p) = (&marker.0, &payload.0);
            let key = (m.host, m.device, m.line, m.hlo_op, p.hlo_op, p.tf_op, payload.1.clone());
            fold_row(&mut self.gap_index, &mut self.gaps, key, (t, marker, payload), |(sum, ..), (t, ..)| sum.add(&t));
        }
        for t in line_steps {
            fold_row(&mut self.line_index, &mut self.lines, t.key(), t, |sum, t| sum.add(&t));
        }
    }

    /// The summed totals, their example ops appended to `carried` (op `first + j` of the
    /// part, `first` being its own ops' count).
    fn finish(self, first: usize, carried: &mut Vec<Op>, strings: &mut LocalStrings) -> Totals {
        let mut land = |op: CarriedOp, carried: &mut Vec<Op>| {
            carried.push(landed_op(op, strings));
            first + carried.len() - 1
        };
        let op_totals = self.ops.into_iter().map(|(t, op)| OpTotal { example: land(op, carried), ..t }).collect();
        let gap_totals =
            self.gaps.into_iter().map(|(t, marker, payload)| GapTotal { marker: land(marker, carried), payload: land(payload, carried), ..t }).collect();
        Totals { op_totals, gap_totals, event_totals: self.events.into_values().collect(), line_steps: self.lines }
    }
}

/// What the gaps of a line need of the windows before.
#[derive(Default)]
struct GapCarry {
    /// Per line: the latest end of its ops so far (the next op's gap is measured from it).
    previous_end: FxHashMap<u32, i64>,
    /// Gaps after a setup marker whose lookahead ran past the end of their window, per line.
    pending: BTreeMap<u32, Vec<PendingGap>>,
    /// The pending gaps' marker ops; a pending gap's `marker` indexes this.
    markers: Vec<CarriedOp>,
}

/// A gap whose payload is not known yet: its marker (an op of the part's index space, see
/// [`PartDerived::op`]), and how far the lookahead got.
#[derive(Clone, Copy)]
struct PendingGap {
    marker: usize,
    gap_start_ns: i64,
    gap_ns: i64,
    chain_end: i64,
    looked: usize,
}

/// Collectives that ops of a later window may still overlap, and the compute intervals that
/// may still overlap a collective to come.
#[derive(Default)]
struct CollectiveCarry {
    pending: Vec<Collective>,
    /// Per (host, device): merged compute intervals of earlier windows.
    compute: FxHashMap<(u32, u32), Vec<(i64, i64)>>,
}

impl Deriver {
    pub fn new() -> Self {
        Deriver::default()
    }

    /// Records that `host` has device ops (its host events with hlo_op are launches).
    fn note_device_ops(&mut self, host: u32) {
        if !self.hosts_with_device_ops.contains(&host) {
            self.hosts_with_device_ops.push(host);
        }
    }

    /// The event_id the next part's first event gets.
    pub fn next_event_id(&self) -> i64 {
        self.next_event_id
    }

    /// Derives the ops of the events now in `capture.chunks` (one part) and folds the part
    /// into the run's state. `pool_ids` comes from [`prepare_strings`] on this part (or
    /// [`pool_ids`] after it).
    pub fn part(&mut self, capture: &Capture, pool_ids: &PoolIds) -> PartDerived {
        self.part_with(capture, pool_ids, None).0
    }

    /// [`Deriver::part`], handing the part's ops to `with_ops` as soon as they are final, with
    /// the strings of [`PartDerived::strings`] they name, on a thread beside the rest of the
    /// derivation (ingest writes the `ops` table there), and its gaps to `with_gaps` as soon
    /// as they are found (ingest writes the `gaps` table there). Returns what they returned.
    pub fn part_with<'o>(&mut self, capture: &Capture, pool_ids: &PoolIds, with: Option<(WithOps<'o>, WithGaps<'o>)>) -> (PartDerived, Option<Handed>) {
        let mut clock = std::time::Instant::now();
        let chunk_base = chunk_bases(capture, self.next_event_id);
        let roles = LineRoles::of(capture);
        self.next_event_id += capture.num_events() as i64;
        self.note_provenance(capture);
        for &host in &capture.meta.hosts_with_device_ops {
            self.note_device_ops(host);
        }

        // Most lines hold neither device ops nor modules: their events are not looked at.
        'chunks: for chunk in &capture.chunks {
            for (line, events) in chunk.line_runs() {
                let plane = &capture.planes[capture.lines[line as usize].plane as usize];
                if roles.device_op[line as usize] && plane.kind == PlaneKind::Device && events.clone().any(|i| is_op_event(capture, &roles, chunk, i)) {
                    self.note_device_ops(plane.host);
                    continue 'chunks;
                }
            }
        }

        // Module windows per plane from `XLA Modules` lines (TPU ops carry no hlo_module).
        let mut module_windows: HashMap<u32, Vec<(i64, i64, u32, i64)>> = HashMap::new();
        let mut name_cache: HashMap<u32, (u32, i64)> = HashMap::new();
        for chunk in &capture.chunks {
            for i in chunk.line_runs().filter(|(line, _)| roles.modules[*line as usize]).flat_map(|(_, events)| events) {
                let line = &capture.lines[chunk.line[i] as usize];
                let (module, pid) = *name_cache.entry(chunk.name[i]).or_insert_with(|| {
                    let (m, p) = parse_module_event(capture.str(chunk.name[i]).unwrap_or(""));
                    (capture.strings.lookup(m).unwrap_or(NO_STR), p.unwrap_or(NULL_I64))
                });
                module_windows.entry(line.plane).or_default().push((chunk.start_ns[i], chunk.start_ns[i] + chunk.dur_ns[i], module, pid));
            }
        }
        for w in module_windows.values_mut() {
            w.sort_unstable_by_key(|x| x.0);
        }
        // In a window of a group, ops can run in modules that began in an earlier window
        // (whose module events all started before this window's).
        if capture.window.is_some() {
            for (plane, w) in module_windows.drain() {
                self.windows.module_windows.entry(plane).or_default().extend(w);
            }
            module_windows = self.windows.module_windows.iter().map(|(plane, w)| (*plane, w.clone())).collect();
        }

        // Steps of this part join the run's; the outermost annotation of a host step wins.
        let (part_host_steps, part_device_steps) = collect_steps(capture, &roles);
        for s in part_host_steps {
            let key = (s.host, s.step);
            if self.host_steps.get(&key).is_none_or(|old| s.end_ns - s.start_ns > old.end_ns - old.start_ns) {
                self.host_steps.insert(key, s);
            }
        }
        let first_new_device_step = self.device_steps.len();
        self.device_steps.extend(part_device_steps);

        // Ops, a unit of events per worker (a CPU capture's busiest thread can be most of a
        // part's events): their events are found first, so that every unit fills its own
        // slice of one vector; strings made for each unit then join the first unit's.
        let hosts_with_device_ops = &self.hosts_with_device_ops;
        // What makes an event of each line an op: its line's plane kind, and for host lines
        // whether the host's device planes hold the ops instead.
        let line_kinds: Vec<(PlaneKind, bool)> = capture
            .lines
            .iter()
            .map(|line| {
                let plane = &capture.planes[line.plane as usize];
                (plane.kind, hosts_with_device_ops.contains(&plane.host))
            })
            .collect();
        crate::timing::stage_done("    derive: modules, steps", &mut clock);
        let units = event_units(capture);
        // Each unit's op events: (chunk index, event index).
        let op_events: Vec<Vec<(u32, u32)>> = {
            let (roles, line_kinds) = (&roles, &line_kinds);
            crate::work_queue::map_in_order(units.iter().collect(), |runs| {
                let mut found = Vec::new();
                for (ci, range) in runs {
                    let chunk = &capture.chunks[*ci];
                    found.extend(
                        range
                            .clone()
                            .filter(|&i| match line_kinds[chunk.line[i] as usize] {
                                (PlaneKind::Device, _) => is_op_event(capture, roles, chunk, i),
                                (PlaneKind::Host, launches_only) => !launches_only && chunk.hlo_op.is_set(i),
                                (PlaneKind::Other, _) => false,
                            })
                            .map(|i| (*ci as u32, i as u32)),
                    );
                }
                found
            })
        };
        crate::timing::stage_done("    derive: ops found", &mut clock);
        // The rows are written once, in place, by the workers that make them: no default rows
        // written (and their fresh pages faulted in) on this thread first.
        let op_count = op_events.iter().map(Vec::len).sum();
        let mut ops: Vec<Op> = Vec::with_capacity(op_count);
        let per_unit_strings: Vec<LocalStrings> = {
            let mut rest = &mut ops.spare_capacity_mut()[..op_count];
            let mut work = Vec::new();
            for events in &op_events {
                let (slots, tail) = std::mem::take(&mut rest).split_at_mut(events.len());
                rest = tail;
                work.push((slots, events));
            }
            let launches = LaunchScopes::of(capture);
            let placements = super::command_buffers::place_buffered_kernels(capture, &roles.device_op, &mut self.windows.graph_walks);
            if capture.window.is_none_or(|w| w.last) {
                self.windows.graph_walks.clear();
            }
            let context = OpContext { capture, ids: pool_ids, roles: &roles, module_windows: &module_windows, launches: &launches };
            let (chunk_base, placements) = (&chunk_base, &placements);
            crate::work_queue::map_in_order(work, |(slots, events): (&mut [std::mem::MaybeUninit<Op>], &Vec<(u32, u32)>)| {
                let mut caches = OpCaches::default();
                for (slot, &(ci, i)) in slots.iter_mut().zip(events) {
                    let (ci, i) = (ci as usize, i as usize);
                    let placed = placements.get(ci, i);
                    slot.write(make_op(&context, &mut caches, ci, i, chunk_base[ci], placed));
                }
                caches.strings
            })
        };
        // SAFETY: the units' slices split `0..op_count` among them without a gap, and each
        // unit's worker wrote every slot of its slice (zipped with as many events); a worker
        // that panicked raised its panic in `map_in_order` above, before this line.
        unsafe { ops.set_len(op_count) };
        crate::timing::stage_done("    derive: ops made", &mut clock);
        let mut per_unit_strings = per_unit_strings.into_iter();
        let mut strings = per_unit_strings.next().unwrap_or_default();
        let mut first = op_events.first().map_or(0, Vec::len);
        for (unit_strings, events) in per_unit_strings.zip(op_events.iter().skip(1)) {
            let remap: Vec<u32> = unit_strings.values.into_iter().map(|v| strings.intern(v)).collect();
            let local = |id: u32| if id == NO_STR { id } else { remap[id as usize] };
            for op in &mut ops[first..first + events.len()] {
                (op.region_path, op.source) = (local(op.region_path), local(op.source));
            }
            first += events.len();
        }
        drop(op_events);
        // Ops come a line at a time: a device is looked up when it changes.
        let mut last_device = None;
        for op in &ops {
            if last_device != Some(op.device) {
                last_device = Some(op.device);
                if let Err(k) = self.devices.binary_search(&op.device) {
                    self.devices.insert(k, op.device);
                }
            }
        }

        // Steps → op step numbers.
        let known_steps: Vec<&Step> = self.host_steps.values().chain(self.device_steps.iter()).collect();
        assign_steps(&mut ops, &known_steps);

        crate::timing::stage_done("    derive: strings, devices, step numbers", &mut clock);
        // The ops are final: `with_ops` takes them (and the strings they name as they are now)
        // on a thread of its own while the rest is derived from them.
        let named = if with.is_some() { strings.values.clone() } else { Vec::new() };
        let (with_ops, with_gaps) = with.unzip();
        let (rest, beside) = std::thread::scope(|s| {
            let beside = with_ops.map(|f| {
                let (ops, named) = (&ops, &named);
                s.spawn(move || f(ops, named))
            });
            let rest = self.derive_from_ops(
                capture,
                &ops,
                &mut strings,
                first_new_device_step,
                with_gaps.map(|f| (f, &named as &(dyn crate::tables::columns::Strings + Sync))),
            );
            (rest, beside.map(|b| b.join().unwrap_or_else(|_| Err("the thread given the part's ops panicked".to_string()))))
        });
        crate::timing::stage_done("    derive: gaps, totals, activity, regions", &mut clock);
        let FromOps { carried_ops, gaps, collectives, totals, gaps_handed } = rest;
        let Totals { op_totals, gap_totals, event_totals, line_steps } = totals;
        let handed = beside.map(|ops| Handed { ops, gaps: gaps_handed });
        (PartDerived { strings, ops, carried_ops, op_totals, gaps, gap_totals, collectives, event_totals, line_steps, chunk_base }, handed)
    }

    /// What the part's final ops give (gaps, totals, collectives, step activity, regions,
    /// attribution), folded into the run's state where it spans parts.
    fn derive_from_ops(
        &mut self,
        capture: &Capture,
        ops: &[Op],
        strings: &mut LocalStrings,
        first_new_device_step: usize,
        with_gaps: Option<(WithGaps<'_>, &(dyn crate::tables::columns::Strings + Sync))>,
    ) -> FromOps {
        // What folds into the run's state, beside the part's own gaps and totals.
        // Ops of earlier windows that gaps still pending refer to: after this part's own ops.
        let gap_carry = &mut std::mem::take(&mut self.windows.gaps);
        let mut carried_ops: Vec<Op> = std::mem::take(&mut gap_carry.markers).into_iter().map(|op| landed_op(op, strings)).collect();
        let last_window = capture.window.is_none_or(|w| w.last);
        let collective_carry = &mut std::mem::take(&mut self.windows.collectives);
        let (((gaps, gap_totals, line_steps, gaps_handed), event_totals), (collectives, op_totals)) = crate::work_queue::join(
            || {
                let gaps = find_gaps(capture, ops, carried_ops.len(), gap_carry, last_window);
                // A whole part's gaps refer to its own ops alone: handed over at once, they are
                // written while the rest is derived rather than after.
                let handed = match with_gaps {
                    Some((f, named)) if capture.window.is_none() && carried_ops.is_empty() => Some(f(&gaps, ops, named)),
                    _ => None,
                };
                let gap_totals = gap_totals(&gaps, |k| op_at(ops, &carried_ops, k));
                let line_steps = line_steps(ops, &gaps, |k| op_at(ops, &carried_ops, k));
                ((gaps, gap_totals, line_steps, handed), event_totals(capture, ops))
            },
            || {
                let collectives = collectives_of(ops, collective_carry, last_window);
                let op_totals = op_totals(ops);
                self.fold_step_activity(ops, first_new_device_step, capture.window);
                self.fold_regions(ops, strings);
                self.note_op_attribution(capture, ops);
                (collectives, op_totals)
            },
        );
        for t in &event_totals {
            let e = &t.events;
            self.span = Some(self.span.map_or((e.first_start_ns, e.last_end_ns), |(lo, hi)| (lo.min(e.first_start_ns), hi.max(e.last_end_ns))));
        }
        // The markers of gaps still pending go on with the text of their local strings.
        let mut marker_index: FxHashMap<usize, usize> = FxHashMap::default();
        for pending in gap_carry.pending.values_mut().flatten() {
            let next = marker_index.len();
            pending.marker = *marker_index.entry(pending.marker).or_insert(next);
        }
        let mut markers: Vec<(usize, usize)> = marker_index.into_iter().map(|(k, j)| (j, k)).collect();
        markers.sort_unstable();
        gap_carry.markers = markers.into_iter().map(|(_, k)| carried_op(op_at(ops, &carried_ops, k), strings)).collect();
        self.windows.gaps = std::mem::take(gap_carry);
        // A window's totals wait for its group's last window.
        let totals = Totals { op_totals, gap_totals, event_totals, line_steps };
        let totals = match capture.window {
            None => totals,
            Some(window) => {
                self.windows.totals.fold(ops, &carried_ops, strings, totals);
                if window.last {
                    std::mem::take(&mut self.windows.totals).finish(ops.len(), &mut carried_ops, strings)
                } else {
                    Default::default()
                }
            }
        };
        self.windows.collectives = std::mem::take(collective_carry);
        if last_window {
            self.windows = WindowCarry::default();
        }
        FromOps { carried_ops, gaps, collectives, totals, gaps_handed }
    }

    /// Device steps of this part get their device's activity (a device's ops and its `Steps`
    /// line share a plane, so a part); host steps count this part's op starts, and the host's
    /// busy intervals grow by this part's ops (their coverage is taken at the end).
    ///
    /// The windows of a group of planes ([`TimeWindow`]) fold their activity into the device
    /// steps of every window so far: op starts as they come, busy and compute time as the
    /// merged intervals become final (no later window's op can extend them).
    fn fold_step_activity(&mut self, ops: &[Op], first_new_device_step: usize, window: Option<TimeWindow>) {
        // Per device: its ops' intervals, its compute ops' intervals and its ops' starts; a
        // host's activity is its devices' together (a union of their unions, a sum of their
        // counts: every op has one device). Ops come a line at a time, so the last device's
        // slot is usually the one wanted. The starts are read off the sorted intervals, and a
        // device without collectives has its compute intervals only in a count until then:
        // they are all its intervals.
        type Activity = (Vec<(i64, i64)>, Vec<(i64, i64)>, Vec<i64>);
        let mut devices: Vec<((u32, u32), Activity)> = Vec::new();
        let mut last = usize::MAX;
        let mut slot_of = |devices: &mut Vec<((u32, u32), Activity)>, key: (u32, u32)| {
            if devices.get(last).is_none_or(|(k, _)| *k != key) {
                last = devices.iter().position(|(k, _)| *k == key).unwrap_or_else(|| {
                    devices.push((key, Activity::default()));
                    devices.len() - 1
                });
            }
            last
        };
        // Counted first (ops, and collectives among them), so that each device's vectors are
        // allocated once at their size.
        let mut counts: Vec<(usize, usize)> = Vec::new();
        for op in ops.iter().filter(|o| !o.async_span) {
            let k = slot_of(&mut devices, (op.host, op.device));
            if k == counts.len() {
                counts.push((0, 0));
            }
            counts[k].0 += 1;
            counts[k].1 += usize::from(op.collective_kind.is_some());
        }
        for ((_, (all, compute, _)), &(n, collectives)) in devices.iter_mut().zip(&counts) {
            *all = Vec::with_capacity(n);
            if collectives > 0 {
                *compute = Vec::with_capacity(n - collectives);
            }
        }
        for op in ops.iter().filter(|o| !o.async_span) {
            let k = slot_of(&mut devices, (op.host, op.device));
            let (all, compute, _) = &mut devices[k].1;
            all.push((op.start_ns, op.end_ns()));
            if op.collective_kind.is_none() && counts[k].1 > 0 {
                compute.push((op.start_ns, op.end_ns()));
            }
        }
        for ((_, (all, compute, starts)), &(_, collectives)) in devices.iter_mut().zip(&counts) {
            // Stable: merges the sorted runs (one per line) the intervals come in.
            all.sort();
            *starts = all.iter().map(|iv| iv.0).collect();
            *all = union_of_sorted(std::mem::take(all));
            *compute = if collectives > 0 { union(std::mem::take(compute)) } else { all.clone() };
        }
        let count = |v: &[i64], s: i64, e: i64| (v.partition_point(|&t| t < e) - v.partition_point(|&t| t < s)) as i64;
        let by_device: FxHashMap<(u32, u32), &Activity> = devices.iter().map(|(key, activity)| (*key, activity)).collect();
        if let Some(window) = window {
            // Ops of later windows start after every op of this one: merged intervals that
            // end by this window's last start are final, and go to the steps now (a step of a
            // later window starts after them too); the rest wait for the next window's ops.
            let first = *self.windows.first_device_step.get_or_insert(first_new_device_step);
            let last_start = if window.last { i64::MAX } else { ops.iter().map(|op| op.start_ns).max().unwrap_or(i64::MIN) };
            let keys: BTreeSet<(u32, u32)> = devices.iter().map(|(key, _)| *key).chain(self.windows.device_busy.keys().copied()).collect();
            for key in keys {
                let slot = self.windows.device_busy.entry(key).or_default();
                if let Some((all, compute, _)) = by_device.get(&key) {
                    slot.0 = merge_unions(std::mem::take(&mut slot.0), all.clone());
                    slot.1 = merge_unions(std::mem::take(&mut slot.1), compute.clone());
                }
                let final_all = slot.0.partition_point(|iv| iv.1 <= last_start);
                let final_compute = slot.1.partition_point(|iv| iv.1 <= last_start);
                for s in self.device_steps[first..].iter_mut().filter(|s| (s.host, s.device) == key) {
                    s.busy_ns += covered(&slot.0[..final_all], s.start_ns, s.end_ns);
                    s.compute_ns += covered(&slot.1[..final_compute], s.start_ns, s.end_ns);
                }
                slot.0.drain(..final_all);
                slot.1.drain(..final_compute);
            }
            for s in self.device_steps[first..].iter_mut() {
                s.op_count += by_device.get(&(s.host, s.device)).map_or(0, |(_, _, starts)| count(starts, s.start_ns, s.end_ns));
            }
        } else {
            for s in self.device_steps[first_new_device_step..].iter_mut() {
                let activity = by_device.get(&(s.host, s.device));
                s.busy_ns = activity.map_or(0, |(all, _, _)| covered(all, s.start_ns, s.end_ns));
                s.compute_ns = activity.map_or(0, |(_, compute, _)| covered(compute, s.start_ns, s.end_ns));
                s.op_count = activity.map_or(0, |(_, _, starts)| count(starts, s.start_ns, s.end_ns));
            }
        }
        for s in self.host_steps.values_mut() {
            s.op_count += devices.iter().filter(|((host, _), _)| *host == s.host).map(|(_, (_, _, starts))| count(starts, s.start_ns, s.end_ns)).sum::<i64>();
        }
        // A host's unions are its devices' unions merged (a host of one device: that one).
        // Compute intervals are kept apart only once a device of the host has collectives
        // (until then they are all its intervals: None).
        type DevicesUnions = (Vec<Intervals>, Vec<Option<Intervals>>);
        let mut by_host: BTreeMap<u32, DevicesUnions> = BTreeMap::new();
        for (((host, _), (all, compute, _)), &(_, collectives)) in devices.into_iter().zip(&counts) {
            let (alls, computes) = by_host.entry(host).or_default();
            computes.push((collectives > 0).then_some(compute));
            alls.push(all);
        }
        let union_of = |mut unions: Vec<Intervals>| if unions.len() == 1 { unions.pop().unwrap_or_default() } else { union(unions.concat()) };
        for (host, (alls, computes)) in by_host {
            let computed = if computes.iter().all(Option::is_none) {
                None
            } else {
                Some(union_of(computes.into_iter().zip(&alls).map(|(compute, all)| compute.unwrap_or_else(|| all.clone())).collect()))
            };
            let merged = union_of(alls);
            let slot = self.host_busy.entry(host).or_default();
            slot.1 = match (slot.1.take(), computed) {
                (None, None) => None,
                (before, now) => Some(merge_unions(before.unwrap_or_else(|| slot.0.clone()), now.unwrap_or_else(|| merged.clone()))),
            };
            slot.0 = merge_unions(std::mem::take(&mut slot.0), merged);
        }
    }

    /// Region totals per distinct (pass, path) of this part's ops.
    fn fold_regions(&mut self, ops: &[Op], strings: &LocalStrings) {
        let mut leaves: FxHashMap<(&'static str, u32), Region> = FxHashMap::default();
        for op in ops {
            if op.region_path == NO_STR {
                continue;
            }
            let r = leaves.entry((op.pass.as_str(), op.region_path)).or_default();
            r.op_count += 1;
            r.exclusive_ns += op.self_ns;
            r.add_devices(&[op.device]);
        }
        for ((pass, path_id), leaf) in leaves {
            let r = self.leaves.entry((pass, strings.get(path_id).unwrap_or("").to_string())).or_default();
            r.op_count += leaf.op_count;
            r.exclusive_ns += leaf.exclusive_ns;
            r.add_devices(&leaf.devices);
        }
    }

    /// Counts the part's kernels that ran inside a GPU command buffer (CUDA graph), where a
    /// kernel carries only the buffer as `hlo_op`: XLA's own kernels are matched to an
    /// instruction by kernel name, library kernels (cuBLAS, cuDNN) to none. Also counts the
    /// XLA ops of an XPlane whose program's HLO the capture lacks (a profile taken with
    /// `enable_hlo_proto=False`): those have no opcode, shape or HLO scope path. (Trace JSON
    /// never holds HLO: nothing to say there.)
    fn note_op_attribution(&mut self, capture: &Capture, ops: &[Op]) {
        let programs: FxHashSet<i64> = capture.hlo.modules.values().flatten().copied().collect();
        let xplane = capture.meta.source_format == "xplane";
        let mut buffered: FxHashMap<u32, bool> = FxHashMap::default();
        let mut modules_without_hlo: FxHashSet<u32> = FxHashSet::default();
        for op in ops {
            self.op_ns += op.dur_ns;
            let hlo_op = capture.chunks[op.chunk as usize].hlo_op.get(op.index as usize);
            let mut is_buffered = || *buffered.entry(hlo_op).or_insert_with(|| capture.str(hlo_op).is_some_and(super::command_buffers::names_command_buffer));
            if !programs.contains(&op.program_id) && !capture.hlo.modules.contains_key(&op.hlo_module) {
                if xplane && (op.program_id != NULL_I64 || op.hlo_module != NO_STR) {
                    self.ops_without_hlo.0 += 1;
                    self.ops_without_hlo.1 += op.dur_ns;
                    self.buffered_without_hlo += usize::from(is_buffered());
                    modules_without_hlo.insert(op.hlo_module);
                }
                continue;
            }
            if !is_buffered() {
                continue;
            }
            self.buffered_kernels.0 += 1;
            self.buffered_kernels.1 += op.dur_ns;
            if op.opcode == NO_STR {
                self.unplaced_kernels.0 += 1;
                self.unplaced_kernels.1 += op.dur_ns;
            }
        }
        // Module names as text once per part, not per op: they outlive the part's strings.
        self.modules_without_hlo.extend(modules_without_hlo.into_iter().filter_map(|m| capture.str(m)).map(str::to_string));
    }

    /// Counts the part's `run_id` and source-file arg values.
    fn note_provenance(&mut self, capture: &Capture) {
        let [run_id, sources @ ..] = PROVENANCE_ARG_KEYS.map(|k| capture.strings.lookup(k).unwrap_or(NO_STR));
        if run_id == NO_STR && sources.iter().all(|&k| k == NO_STR) {
            return;
        }
        fn add(counts: &mut FxHashMap<String, usize>, value: &str, n: usize) {
            match counts.get_mut(value) {
                Some(count) => *count += n,
                None => {
                    counts.insert(value.to_string(), n);
                }
            }
        }
        for c in &capture.chunks {
            // A launch id is on every op of one execution, one after another: a run of equal
            // values is counted, then looked up once (a CPU capture has ~180 K of them).
            let mut run: Option<(bool, &str, usize)> = None;
            for j in 0..c.arg_key.len() {
                let k = c.arg_key[j];
                let is_launch = if k == run_id {
                    true
                } else if sources.contains(&k) {
                    false
                } else {
                    continue;
                };
                let value = c.arg_value(j);
                match &mut run {
                    Some((launch, held, n)) if *launch == is_launch && *held == value => *n += 1,
                    _ => {
                        if let Some((launch, held, n)) = run.replace((is_launch, value, 1)) {
                            add(if launch { &mut self.launch_ids } else { &mut self.source_hints }, held, n);
                        }
                    }
                }
            }
            if let Some((launch, held, n)) = run {
                add(if launch { &mut self.launch_ids } else { &mut self.source_hints }, held, n);
            }
        }
    }

    /// The run-level tables once every part has been seen.
    pub fn finish(self) -> RunDerived {
        let mut steps: Vec<Step> = self.host_steps.into_values().collect();
        for s in steps.iter_mut() {
            if let Some((all, compute)) = self.host_busy.get(&s.host) {
                s.busy_ns = covered(all, s.start_ns, s.end_ns);
                s.compute_ns = covered(compute.as_ref().unwrap_or(all), s.start_ns, s.end_ns);
            }
        }
        steps.extend(self.device_steps);
        for s in steps.iter_mut() {
            s.communication_ns = s.busy_ns - s.compute_ns;
        }
        steps.sort_by_key(|s| (s.host, s.device != NO_STR, s.device, s.start_ns, s.step));

        // Region totals rolled up to every prefix of their path.
        let mut regions: BTreeMap<(&'static str, String), Region> = BTreeMap::new();
        for ((pass, path), leaf) in &self.leaves {
            let comps = split_scope(path);
            for k in 1..=comps.len() {
                let r = regions.entry((*pass, comps[..k].join("/"))).or_default();
                r.op_count += leaf.op_count;
                r.inclusive_ns += leaf.exclusive_ns;
                if k == comps.len() {
                    r.exclusive_ns += leaf.exclusive_ns;
                }
                r.add_devices(&leaf.devices);
            }
        }
        let top = |m: FxHashMap<String, usize>| {
            let mut v: Vec<(String, usize)> = m.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            v.truncate(20);
            v
        };
        let mut warnings = Vec::new();
        let share = |ns: i64| 100.0 * ns as f64 / self.op_ns.max(1) as f64;
        if let (ops @ 1.., ns) = self.ops_without_hlo {
            let modules = &self.modules_without_hlo;
            let mut named: Vec<&str> = modules.iter().take(3).map(String::as_str).collect();
            if modules.len() > named.len() {
                named.push("...");
            }
            let buffered = match self.buffered_without_hlo {
                0 => String::new(),
                n => format!(
                    "; {n} of them ran inside CUDA graphs (XLA command buffers), where a kernel names no HLO op: they keep \
                     their kernel names, with no scope path or pass"
                ),
            };
            warnings.push(format!(
                "{ops} XLA ops ({:.1}% of op time) ran in {} whose HLO the profile does not hold{}: they have \
                 no opcode, shape or source, their scope path is only what their events say, and collectives among them \
                 are told by name{buffered}. A profile taken with enable_hlo_proto=False holds no HLO; the candidate \
                 kernels XLA's GPU autotuner runs while compiling belong to programs of their own.",
                share(ns),
                match modules.len() {
                    0 | 1 => "a program".to_string(),
                    n => format!("{n} programs"),
                },
                if named.is_empty() { String::new() } else { format!(" ({})", named.join(", ")) }
            ));
        }
        if let (kernels @ 1.., ns) = self.buffered_kernels {
            let (unplaced, unplaced_ns) = self.unplaced_kernels;
            let placed = format!(
                "{kernels} GPU kernels ({:.1}% of op time) ran inside CUDA graphs (XLA command buffers), where a kernel names \
                 no HLO op: profq placed {} on their op by the program's schedule and the kernels' names",
                share(ns),
                kernels - unplaced
            );
            warnings.push(if unplaced == 0 {
                format!("{placed}.")
            } else {
                format!(
                    "{placed}, and {unplaced} ({:.1}% of op time: library kernels or memory copies the schedule does not tie \
                     to one op) on none. Capture with XLA_FLAGS=--xla_gpu_enable_command_buffer= for \
                     exact per-op attribution.",
                    share(unplaced_ns)
                )
            });
        }
        RunDerived {
            steps,
            regions,
            num_devices: self.devices.len(),
            span: self.span,
            launch_ids: top(self.launch_ids),
            source_hints: top(self.source_hints),
            warnings,
        }
    }
}

/// Canonical op name: leading `%` and one trailing `.<digits>` removed (`fusion.12` → `fusion`).
pub fn canonical_name(name: &str) -> &str {
    let name = name.trim_start_matches('%');
    match name.rfind('.') {
        Some(k) if k > 0 && k + 1 < name.len() && name[k + 1..].bytes().all(|b| b.is_ascii_digit()) => &name[..k],
        _ => name,
    }
}

/// The collective ops, each with the time the same device computed while it ran.
fn collectives_of(ops: &[Op], carry: &mut CollectiveCarry, last_window: bool) -> Vec<Collective> {
    if last_window && carry.pending.is_empty() && ops.iter().all(|op| op.collective_kind.is_none()) {
        carry.compute.clear();
        return Vec::new();
    }
    let mut compute_by_device: FxHashMap<(u32, u32), Vec<(i64, i64)>> = std::mem::take(&mut carry.compute);
    for op in ops {
        if op.category == "compute" && !op.async_span {
            compute_by_device.entry((op.host, op.device)).or_default().push((op.start_ns, op.end_ns()));
        }
    }
    let compute_by_device: FxHashMap<_, _> = compute_by_device.into_iter().map(|(k, v)| (k, union(v))).collect();
    let mut collectives = std::mem::take(&mut carry.pending);
    collectives.extend(ops.iter().filter(|op| op.collective_kind.is_some()).map(|op| Collective { op: op.clone(), overlapped_ns: 0 }));
    for c in collectives.iter_mut() {
        let overlapped = compute_by_device.get(&(c.op.host, c.op.device)).map_or(0, |m| covered(m, c.op.start_ns, c.op.end_ns()));
        c.overlapped_ns = overlapped.min(c.op.dur_ns);
    }
    // Every op of a later window starts after every op of this one: a collective that ends
    // by this window's last start is final, and compute that ends by then overlaps nothing
    // to come but the collectives still pending.
    if !last_window {
        let last_start = ops.iter().map(|op| op.start_ns).max().unwrap_or(i64::MIN);
        let (done, pending): (Vec<Collective>, Vec<Collective>) = collectives.into_iter().partition(|c| c.op.end_ns() <= last_start);
        let horizon = pending.iter().map(|c| c.op.start_ns).min().unwrap_or(last_start).min(last_start);
        carry.compute = compute_by_device
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().filter(|iv| iv.1 > horizon).collect::<Vec<_>>()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        carry.pending = pending;
        collectives = done;
    }
    collectives
}

/// Ops that only set up data (the reference's marker set): a gap before them is attributed
/// to the op they feed.
pub fn is_setup_op(name: &str) -> bool {
    // Case-insensitive without a lowercased copy: it runs once per gap.
    let c = canonical_name(name).as_bytes();
    let starts = |prefix: &str| c.len() >= prefix.len() && c[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes());
    ["iota", "constant", "bitcast", "get-tuple-element", "parameter", "tuple", "after-all"].iter().any(|w| c.eq_ignore_ascii_case(w.as_bytes()))
        || starts("copy-start")
        || starts("copy-done")
}

/// Lookahead for the payload of a setup marker (reference §3.8).
pub const GAP_LOOKAHEAD: usize = 8;

/// Pre-op gaps per device-op line (reference §3.8): ops ordered by (start, end); a gap is a
/// start after the running maximum end; a setup marker is resolved to the first non-setup
/// op within 8 that starts before the chain of ops after the marker goes idle again.
///
/// In a window of a plane streamed in windows ([`GapCarry`]), a line's first op is measured
/// from the end its earlier ops reached, and a setup marker whose lookahead runs past the
/// window's last op waits for the next window's ops (its marker is then op
/// `ops.len() + j`, `j` < `carried`, of this part) unless this is the last window.
fn find_gaps(capture: &Capture, ops: &[Op], carried: usize, carry: &mut GapCarry, last_window: bool) -> Vec<Gap> {
    // A line's ops come one after another (chunks hold whole lines): added a run at a time.
    let mut by_line: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let mut run_start = 0;
    for k in 1..=ops.len() {
        if k == ops.len() || ops[k].line_index != ops[run_start].line_index {
            by_line.entry(ops[run_start].line_index).or_default().extend(run_start..k);
            run_start = k;
        }
    }
    // Whether op k is a setup op, decided once per name (nearly every CPU op follows a gap).
    let mut setup_by_name = DecidedOnce::new(&capture.strings);
    let mut is_setup = |k: usize| {
        let id = ops[k].hlo_op;
        setup_by_name.get(id, || is_setup_op(capture.str(id).unwrap_or("")))
    };
    let mut gaps = Vec::with_capacity(ops.len());
    let mut still_pending: BTreeMap<u32, Vec<PendingGap>> = BTreeMap::new();
    // A lookahead that ran out of ops: pending, or in the last window its own payload.
    let mut open_gap = |gaps: &mut Vec<Gap>, line: u32, gap: PendingGap| {
        if last_window {
            gaps.push(Gap { marker: gap.marker, payload: gap.marker, gap_start_ns: gap.gap_start_ns, gap_ns: gap.gap_ns });
        } else {
            still_pending.entry(line).or_default().push(gap);
        }
    };
    let mut pending_lines = std::mem::take(&mut carry.pending);
    let carried_base = ops.len();
    for (&line, track) in by_line.iter_mut() {
        let order = |&k: &usize| (ops[k].start_ns, ops[k].end_ns(), k);
        if !track.is_sorted_by_key(order) {
            track.sort_by_key(order);
        }
        for mut gap in pending_lines.remove(&line).unwrap_or_default() {
            gap.marker += carried_base;
            match look_ahead(ops, track, gap.chain_end, gap.looked, &mut is_setup) {
                Lookahead::Payload(payload) => gaps.push(Gap { marker: gap.marker, payload, gap_start_ns: gap.gap_start_ns, gap_ns: gap.gap_ns }),
                Lookahead::Marker => gaps.push(Gap { marker: gap.marker, payload: gap.marker, gap_start_ns: gap.gap_start_ns, gap_ns: gap.gap_ns }),
                Lookahead::Open { chain_end, looked } => open_gap(&mut gaps, line, PendingGap { chain_end, looked, ..gap }),
            }
        }
        let mut previous_end = carry.previous_end.get(&line).copied();
        for (pos, &k) in track.iter().enumerate() {
            let op = &ops[k];
            if let Some(previous_end) = previous_end.filter(|&end| op.start_ns > end) {
                let (gap_start_ns, gap_ns) = (previous_end, op.start_ns - previous_end);
                let payload = if is_setup(k) {
                    match look_ahead(ops, &track[pos + 1..], op.end_ns(), 0, &mut is_setup) {
                        Lookahead::Payload(payload) => Some(payload),
                        Lookahead::Marker => Some(k),
                        Lookahead::Open { chain_end, looked } => {
                            open_gap(&mut gaps, line, PendingGap { marker: k, gap_start_ns, gap_ns, chain_end, looked });
                            None
                        }
                    }
                } else {
                    Some(k)
                };
                if let Some(payload) = payload {
                    gaps.push(Gap { marker: k, payload, gap_start_ns, gap_ns });
                }
            }
            previous_end = Some(previous_end.map_or(op.end_ns(), |end| end.max(op.end_ns())));
        }
        if let Some(end) = previous_end {
            carry.previous_end.insert(line, end);
        }
    }
    // Lines with gaps pending and no ops in this window.
    for (line, pending) in pending_lines {
        for mut gap in pending {
            gap.marker += carried_base;
            open_gap(&mut gaps, line, gap);
        }
    }
    debug_assert!(still_pending.values().flatten().all(|g| g.marker < ops.len() + carried));
    carry.pending = still_pending;
    gaps
}

/// Where a setup marker's lookahead ended.
enum Lookahead {
    /// At the first non-setup op of the chain within [`GAP_LOOKAHEAD`] ops.
    Payload(usize),
    /// The chain went idle, or every op of the lookahead was a setup op: the marker is its
    /// own payload.
    Marker,
    /// The ops ran out first: the chain's end so far and the ops looked at.
    Open { chain_end: i64, looked: usize },
}

/// Goes on with a setup marker's lookahead over `candidates` (the ops after it on its line,
/// in order) from `chain_end`, having looked at `looked` ops already.
fn look_ahead(ops: &[Op], candidates: &[usize], mut chain_end: i64, mut looked: usize, is_setup: &mut impl FnMut(usize) -> bool) -> Lookahead {
    for &cand in candidates {
        if looked == GAP_LOOKAHEAD || ops[cand].start_ns > chain_end {
            return Lookahead::Marker;
        }
        chain_end = chain_end.max(ops[cand].end_ns());
        looked += 1;
        if !is_setup(cand) {
            return Lookahead::Payload(cand);
        }
    }
    if looked == GAP_LOOKAHEAD {
        Lookahead::Marker
    } else {
        Lookahead::Open { chain_end, looked }
    }
}

/// `ops` summed per distinct op of a device (every column of `op_totals`' key).
fn op_totals(ops: &[Op]) -> Vec<OpTotal> {
    type Key = ((u32, u32, u32, u32, i64, u32), (Label, Option<Label>, u32, u32, Label, u32, u32));
    let key = |o: &Op| -> Key {
        ((o.host, o.device, o.hlo_op, o.hlo_module, o.program_id, o.opcode), (o.category, o.collective_kind, o.tf_op, o.region_path, o.pass, o.shape, o.source))
    };
    let start = |k| OpTotal { example: k, count: 0, dur_ns: 0, self_ns: 0, max_dur_ns: i64::MIN, first_start_ns: i64::MAX, first_step: NULL_I64 };
    group_rows(ops, key, start, |t, op| {
        let one =
            OpTotal { example: 0, count: 1, dur_ns: op.dur_ns, self_ns: op.self_ns, max_dur_ns: op.dur_ns, first_start_ns: op.start_ns, first_step: op.step };
        t.add(&one)
    })
}

/// `gaps` summed per (host, device, line, marker op, payload op, payload scope and region).
fn gap_totals<'a>(gaps: &[Gap], op: impl Fn(usize) -> &'a Op) -> Vec<GapTotal> {
    type Key = (u32, u32, u32, u32, u32, u32, u32);
    let key = |g: &Gap| -> Key {
        let (marker, payload) = (op(g.marker), op(g.payload));
        (marker.host, marker.device, marker.line, marker.hlo_op, payload.hlo_op, payload.tf_op, payload.region_path)
    };
    group_rows(
        gaps,
        key,
        |k| GapTotal { marker: gaps[k].marker, payload: gaps[k].payload, count: 0, gap_ns: 0, max_gap_ns: i64::MIN },
        |t, gap| t.add(&GapTotal { marker: gap.marker, payload: gap.payload, count: 1, gap_ns: gap.gap_ns, max_gap_ns: gap.gap_ns }),
    )
}

/// `ops` and `gaps` summed per (host, device, line, step), the gaps under their marker op's,
/// in order of first op.
fn line_steps<'a>(ops: &[Op], gaps: &[Gap], op: impl Fn(usize) -> &'a Op) -> Vec<LineStep> {
    let mut index: FxHashMap<LineStepKey, usize> = FxHashMap::default();
    let mut rows: Vec<LineStep> = Vec::new();
    // Ops come a line at a time in start order, so most fold into the previous op's row:
    // summed in place, without a row of their own to fold.
    let mut last: Option<(LineStepKey, usize)> = None;
    let mut row_of = |keyed_by: &Op, rows: &mut Vec<LineStep>| -> usize {
        let key = LineStep::key_of(keyed_by);
        match last {
            Some((last_key, slot)) if last_key == key => slot,
            _ => {
                let slot = *index.entry(key).or_insert_with(|| {
                    rows.push(LineStep::keyed_by(keyed_by));
                    rows.len() - 1
                });
                last = Some((key, slot));
                slot
            }
        }
    };
    for o in ops {
        let slot = row_of(o, &mut rows);
        rows[slot].ops.push(o.start_ns, o.dur_ns, o.self_ns);
    }
    for g in gaps {
        let slot = row_of(op(g.marker), &mut rows);
        rows[slot].add_gap(g.gap_ns);
    }
    rows
}

/// One row per distinct `key` of `items`, in order of first appearance: `start` makes a
/// row from the index of its first item, `add` folds every item of the row into it.
fn group_rows<T, K: std::hash::Hash + Eq, R>(items: &[T], key: impl Fn(&T) -> K, start: impl Fn(usize) -> R, mut add: impl FnMut(&mut R, &T)) -> Vec<R> {
    let mut index: FxHashMap<K, usize> = FxHashMap::default();
    let mut rows: Vec<R> = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let slot = *index.entry(key(item)).or_insert_with(|| {
            rows.push(start(k));
            rows.len() - 1
        });
        add(&mut rows[slot], item);
    }
    rows
}

/// Every event of `capture` summed per (line, name, category, op category); `ops` are its ops.
fn event_totals(capture: &Capture, ops: &[Op]) -> Vec<EventTotal> {
    // Ops are made in event order, so each event's op (if any) is found by walking them along.
    debug_assert!(ops.windows(2).all(|w| (w[0].chunk, w[0].index) < (w[1].chunk, w[1].index)));
    let mut ops = ops.iter().peekable();
    // Each row with its op category's key. A row is found by its whole key through `index`,
    // or first through the row its name last went to on this line (`by_name`): a line's
    // events come one after another, and a name's category and op category seldom change.
    let mut rows: Vec<(EventTotal, u32)> = Vec::new();
    let mut index: FxHashMap<(u32, u32, u32, u32), usize> = FxHashMap::default();
    let mut by_name: Vec<u32> = vec![u32::MAX; capture.strings.len()];
    let mut names_on_line: Vec<u32> = Vec::new();
    let mut current_line = u32::MAX;
    for (ci, chunk) in capture.chunks.iter().enumerate() {
        for i in 0..chunk.len() {
            let op_category = ops.next_if(|op| (op.chunk as usize, op.index as usize) == (ci, i)).map(|op| op.category);
            // Keyed by the label's byte (0: not an op), not its text: this runs once per
            // event, and integer keys hash and compare fastest.
            let op_category_key = op_category.map_or(0, |c| c.0 as u32 + 1);
            let op_category = op_category.map(Label::as_str);
            let (line, name, category) = (chunk.line[i], chunk.name[i], chunk.category.get(i));
            if line != current_line {
                for n in names_on_line.drain(..) {
                    by_name[n as usize] = u32::MAX;
                }
                current_line = line;
            }
            let last_row = by_name
                .get(name as usize)
                .map(|&k| k as usize)
                .filter(|&k| rows.get(k).is_some_and(|(t, key)| t.category == category && *key == op_category_key));
            let row = match last_row {
                Some(k) => k,
                None => {
                    let k = *index.entry((line, name, category, op_category_key)).or_insert_with(|| {
                        let total = EventTotal { line_index: line, name, category, op_category, events: SpanSums::NONE };
                        rows.push((total, op_category_key));
                        rows.len() - 1
                    });
                    if let Some(slot) = by_name.get_mut(name as usize) {
                        if *slot == u32::MAX {
                            names_on_line.push(name);
                        }
                        *slot = k as u32;
                    }
                    k
                }
            };
            rows[row].0.events.push(chunk.start_ns[i], chunk.dur_ns[i], chunk.self_ns[i]);
        }
    }
    let mut rows: Vec<EventTotal> = rows.into_iter().map(|(t, _)| t).collect();
    rows.sort_by_key(|t| (t.line_index, t.name, t.category, t.op_category));
    rows
}

/// Arg keys the op builder and string preparation read, in [`PoolIds`] field order.
const OP_ARG_KEYS: [&str; 6] = ["name", "hlo_category", "flops", "bytes_accessed", "source", "device_duration_ps"];
/// Arg keys counted as provenance hints: the launch id, then the source-file keys.
const PROVENANCE_ARG_KEYS: [&str; 4] = ["run_id", "source", "source_file", "file_name"];

/// Whether the derivation reads the stat `key` as an arg: an in-memory analysis decodes
/// only those (`Capture::args_kept`), and not `_src` either, which nothing reads. A test
/// keeps an INPUT's summary equal to its stored run's, which has every stat.
pub fn reads_arg(key: &str) -> bool {
    OP_ARG_KEYS.contains(&key) || PROVENANCE_ARG_KEYS.contains(&key) || key == super::command_buffers::GRAPH_NODE_ARG
}

/// Pool ids of arg keys the op builder reads.
pub struct PoolIds {
    name: u32,
    hlo_category: u32,
    flops: u32,
    bytes_accessed: u32,
    source: u32,
    device_duration_ps: u32,
}

impl PoolIds {
    fn new(pool: &mut StringPool) -> Self {
        for key in OP_ARG_KEYS {
            pool.intern(key);
        }
        pool_ids(pool)
    }
}

/// The [`PoolIds`] of a pool that [`prepare_strings`] has seen (a key it lacks is NO_STR,
/// which no arg has).
pub fn pool_ids(pool: &StringPool) -> PoolIds {
    let [name, hlo_category, flops, bytes_accessed, source, device_duration_ps] = OP_ARG_KEYS.map(|k| pool.lookup(k).unwrap_or(NO_STR));
    PoolIds { name, hlo_category, flops, bytes_accessed, source, device_duration_ps }
}

/// The args [`make_op`] reads of an event (the first of each key), found in one pass over the
/// event's args rather than one per key.
#[derive(Default)]
struct OpArgs<'c> {
    name: Option<&'c str>,
    hlo_category: Option<&'c str>,
    flops: Option<&'c str>,
    bytes_accessed: Option<&'c str>,
    source: Option<&'c str>,
    device_duration_ps: Option<&'c str>,
}

impl<'c> OpArgs<'c> {
    fn of(chunk: &'c EventChunk, i: usize, ids: &PoolIds) -> Self {
        let mut args = OpArgs::default();
        for j in chunk.args_of(i) {
            let key = chunk.arg_key[j];
            let slot = match key {
                k if k == ids.name => &mut args.name,
                k if k == ids.hlo_category => &mut args.hlo_category,
                k if k == ids.flops => &mut args.flops,
                k if k == ids.bytes_accessed => &mut args.bytes_accessed,
                k if k == ids.source => &mut args.source,
                k if k == ids.device_duration_ps => &mut args.device_duration_ps,
                _ => continue,
            };
            slot.get_or_insert_with(|| chunk.arg_value(j));
        }
        args
    }
}

/// What the derivation asks of every line, answered once per line instead of per event.
struct LineRoles {
    device_op: Vec<bool>,
    modules: Vec<bool>,
    steps: Vec<bool>,
    /// Its ops are async (`Async XLA Ops`, or `Async` anywhere in the name).
    async_ops: Vec<bool>,
    /// Its ops are in-flight async spans, not device occupancy (the name starts `Async`).
    async_spans: Vec<bool>,
}

impl LineRoles {
    fn of(capture: &Capture) -> Self {
        let names: Vec<&str> = capture.lines.iter().map(|l| capture.str(l.name).unwrap_or("")).collect();
        let each = |role: fn(&str) -> bool| names.iter().map(|n| role(n)).collect();
        LineRoles {
            device_op: each(is_device_op_line),
            modules: each(|n| n == "XLA Modules"),
            steps: each(|n| n == "Steps"),
            async_ops: each(|n| n.contains("Async")),
            async_spans: each(|n| n.starts_with("Async")),
        }
    }
}

/// The host scope each GPU kernel of a Kineto (PyTorch) trace was launched from, by correlation
/// id: the `record_function` scopes (`user_annotation`) around its launch (`cuda_runtime` /
/// `cuda_driver`) and the autograd node when the autograd engine launched it
/// (`AddmmBackward0`), outermost first, then the framework op nearest the launch (`aten::addmm`). Kineto
/// kernels carry no scope path of their own; this is where the time of one is spent in the
/// program, as the trace's own flow events (`ac2g`) link them.
#[derive(Default)]
struct LaunchScopes {
    by_correlation: FxHashMap<i64, Launch>,
    paths: Vec<String>,
}

/// Where a kernel was launched: its scope (an index into `LaunchScopes::paths`, u32::MAX when
/// none) and the step the launch ran in (the nearest enclosing event with a step number,
/// `ProfilerStep#N`; NULL_I64 when none). A kernel belongs to the step that launched it, though
/// it may run after the host has gone on to the next one.
#[derive(Clone, Copy)]
struct Launch {
    path: u32,
    step: i64,
}

impl LaunchScopes {
    fn of(capture: &Capture) -> Self {
        let id = |s: &str| capture.strings.lookup(s).unwrap_or(NO_STR);
        let (runtime, driver) = (id("cuda_runtime"), id("cuda_driver"));
        let mut scopes = LaunchScopes::default();
        if runtime == NO_STR && driver == NO_STR {
            return scopes;
        }
        let (annotation, cpu_op) = (id("user_annotation"), id("cpu_op"));
        // Where each chunk's events start among the part's events (what `parent` counts in).
        let starts = chunk_bases(capture, 0);
        let locate = |pos: u32| {
            let ci = starts.partition_point(|&s| s <= pos as i64) - 1;
            (&capture.chunks[ci], pos as usize - starts[ci] as usize)
        };
        let mut path_ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut pieces: Vec<&str> = Vec::new();
        for chunk in &capture.chunks {
            for i in 0..chunk.len() {
                let category = chunk.category.get(i);
                let correlation = chunk.correlation_id.get(i);
                if (category != runtime && category != driver) || category == NO_STR || correlation == NULL_I64 {
                    continue;
                }
                // Innermost first, then turned around.
                pieces.clear();
                let (mut framework_op, mut in_autograd_node, mut step) = (None, false, NULL_I64);
                let mut parent = chunk.parent[i];
                while parent != NO_PARENT {
                    let (c, j) = locate(parent);
                    let name = capture.str(c.name[j]).unwrap_or("");
                    let category = c.category.get(j);
                    if step == NULL_I64 {
                        step = c.step.get(j);
                    }
                    if category == annotation && !name.starts_with("ProfilerStep#") {
                        pieces.push(name);
                    } else if category == cpu_op {
                        match name.strip_prefix("autograd::engine::evaluate_function: ") {
                            Some(node) if !in_autograd_node => {
                                pieces.push(node);
                                in_autograd_node = true;
                            }
                            Some(_) => {}
                            None => {
                                framework_op.get_or_insert(name);
                            }
                        }
                    }
                    parent = c.parent[j];
                }
                pieces.reverse();
                pieces.extend(framework_op);
                let path = if pieces.is_empty() {
                    u32::MAX
                } else {
                    let next = scopes.paths.len() as u32;
                    *path_ids.entry(pieces.join("/")).or_insert_with_key(|path| {
                        scopes.paths.push(path.clone());
                        next
                    })
                };
                if path != u32::MAX || step != NULL_I64 {
                    scopes.by_correlation.insert(correlation, Launch { path, step });
                }
            }
        }
        scopes
    }

    /// A kernel without a correlation id finds nothing: no launch is kept under NULL_I64.
    fn of_kernel(&self, correlation: i64) -> Option<Launch> {
        self.by_correlation.get(&correlation).copied()
    }
}

fn is_op_event(capture: &Capture, roles: &LineRoles, chunk: &EventChunk, i: usize) -> bool {
    roles.device_op[chunk.line[i] as usize] && (chunk.category.get(i) == NO_STR || is_device_work_category(capture.str(chunk.category.get(i))))
}

/// What every op of a part is made with (see [`make_op`]).
struct OpContext<'c> {
    capture: &'c Capture,
    ids: &'c PoolIds,
    roles: &'c LineRoles,
    /// Per plane, `XLA Modules` windows (start, end, module, program id) by start.
    module_windows: &'c HashMap<u32, Vec<(i64, i64, u32, i64)>>,
    launches: &'c LaunchScopes,
}

/// The op of event `i` of chunk `ci` (`base`: the chunk's first event id; `placed`: the
/// instruction a command buffer's schedule placed the kernel on).
fn make_op<'c>(context: &OpContext<'c>, caches: &mut OpCaches<'c>, ci: usize, i: usize, base: i64, placed: Option<u32>) -> Op {
    let OpContext { capture, ids, roles, module_windows, launches } = *context;
    let chunk = &capture.chunks[ci];
    let line_index = chunk.line[i];
    let line = &capture.lines[line_index as usize];
    let plane = &capture.planes[line.plane as usize];
    let start = chunk.start_ns[i];
    let mut hlo_module = chunk.hlo_module.get(i);
    let mut program_id = chunk.program_id.get(i);
    if hlo_module == NO_STR || program_id == NULL_I64 {
        if let Some(windows) = module_windows.get(&line.plane) {
            let k = windows.partition_point(|w| w.0 <= start);
            if k > 0 {
                let w = windows[k - 1];
                if start < w.1.max(w.0 + 1) {
                    if hlo_module == NO_STR {
                        hlo_module = w.2;
                    }
                    if program_id == NULL_I64 {
                        program_id = w.3;
                    }
                }
            }
        }
    }
    // The first name the module's HLO knows wins: inside a GPU command buffer (CUDA graph) every
    // kernel's hlo_op is the buffer (`command_buffer_1`, absent from the HLO), so the instruction
    // the program's schedule placed it on comes first (`command_buffers`), then its kernel name.
    let names = [placed.unwrap_or(chunk.hlo_op.get(i)), chunk.display_name.get(i), chunk.name[i]];
    let OpCaches { known, scope, strings, cpu_device } = caches;
    let KnownOp { hlo_op, instr, collective_kind, category, async_opcode, source } =
        *known.entry((program_id, hlo_module, names)).or_insert_with(|| know_op(capture, chunk, i, program_id, hlo_module, names, strings));
    let opcode = instr.map_or(NO_STR, |h| h.opcode);

    // Scope path: the tf_op stat, else the instruction's HLO op_name. The generic `XlaModule:` says
    // nothing of the scope: the op_name does (as in XProf), else the `name` stat, a scope range that
    // is often only a prefix of the op_name (`jit(train_step)` for a backward matmul).
    let args = OpArgs::of(chunk, i, ids);
    let mut tf_op = chunk.tf_op.get(i);
    let hlo_scope = instr.map_or(NO_STR, |h| h.op_name);
    if capture.str(tf_op).is_some_and(|t| t.trim().trim_end_matches(':') == "XlaModule") {
        if hlo_scope != NO_STR {
            tf_op = hlo_scope;
        } else if let Some(n) = args.name.and_then(|n| capture.strings.lookup(n)) {
            tf_op = n;
        }
    }
    if capture.str(tf_op).is_none_or(|t| t.trim().is_empty()) {
        tf_op = hlo_scope;
    }
    // Without a scope path, a name written as a path (`train_step=>block_0`, `ns::fn`) is one.
    // A Kineto kernel's scope is where its launch ran on the host (see `LaunchScopes`).
    let launch = launches.of_kernel(chunk.correlation_id.get(i));
    let launch_path = match launch {
        Some(l) if tf_op == NO_STR => l.path,
        _ => u32::MAX,
    };
    let scope_key = (tf_op, if tf_op == NO_STR && launch_path == u32::MAX { chunk.name[i] } else { NO_STR }, launch_path);
    let (region_path, pass) = *scope.entry(scope_key).or_insert_with(|| {
        let scoped = match (capture.str(tf_op), launches.paths.get(launch_path as usize)) {
            (Some(t), _) => Some(scope_of(t)),
            (None, Some(path)) => Some(scope_of(path)),
            // A C++ signature (`void at::native::kernel<float>(...)`) is no path of scopes.
            (None, None) => capture
                .str(chunk.name[i])
                .filter(|n| n.contains("=>") || (n.contains("::") && !n.contains(['(', '<', ' '])))
                .map(|n| scope_of(&n.replace("=>", "/").replace("::", "/"))),
        };
        match scoped {
            Some((Some(path), pass)) => (strings.intern(path), Label::of(pass)),
            Some((None, pass)) => (NO_STR, Label::of(pass)),
            None => (NO_STR, Label::of("other")),
        }
    });
    let device = if plane.kind == PlaneKind::Device {
        plane.device
    } else {
        let ordinal = if chunk.device_ordinal.get(i) == NULL_I64 { 0 } else { chunk.device_ordinal.get(i) };
        *cpu_device.entry(ordinal).or_insert_with(|| capture.strings.lookup(&format!("CPU:{ordinal}")).unwrap_or(NO_STR))
    };
    let is_async = roles.async_ops[line_index as usize] || async_opcode;
    let source = if source != NO_STR { source } else { args.source.map_or(NO_STR, |s| strings.intern(s.to_string())) };
    let num = |arg: Option<&str>| arg.and_then(|v| v.trim().parse::<f64>().ok());
    // The device's own measurement wins over the host-aligned timeline span (as in XProf).
    let device_ps = num(args.device_duration_ps).filter(|d| *d >= 0.0 && *d < 9.0e18).map(|ps| ps as i64);
    let dur_ns = device_ps.map_or(chunk.dur_ns[i], |ps| (ps + 500) / 1000);
    let nested_ns = chunk.dur_ns[i] - chunk.self_ns[i];
    Op {
        event_id: base + i as i64,
        chunk: ci as u32,
        index: i as u32,
        host: plane.host,
        device,
        line: line.name,
        line_index,
        name: chunk.name[i],
        hlo_op,
        hlo_module,
        program_id,
        opcode,
        category,
        hlo_category: args.hlo_category.and_then(|v| capture.strings.lookup(v)).unwrap_or(NO_STR),
        collective_kind,
        tf_op,
        region_path,
        pass,
        step: launch.map_or(NULL_I64, |l| l.step),
        start_ns: start,
        dur_ns,
        self_ns: (dur_ns - nested_ns).max(0),
        dur_ps: device_ps.unwrap_or(dur_ns.saturating_mul(1000)),
        shape: instr.map_or(NO_STR, |h| h.shape),
        shape_bytes: instr.and_then(|h| h.shape_bytes).unwrap_or(NULL_I64),
        source,
        flops: OptionalF64::new(num(args.flops)),
        bytes_accessed: OptionalF64::new(num(args.bytes_accessed)),
        is_async,
        async_span: roles.async_spans[line_index as usize],
    }
}

/// What the identity (`program_id`, `hlo_module`, candidate `names`) of event `i` of `chunk`
/// decides: the name that resolves in the HLO and its instruction, its class, and its source
/// line (interned in `strings`).
fn know_op<'c>(
    capture: &'c Capture,
    chunk: &EventChunk,
    i: usize,
    program_id: i64,
    hlo_module: u32,
    names: [u32; 3],
    strings: &mut LocalStrings,
) -> KnownOp<'c> {
    let (hlo_op, instr) =
        names.into_iter().filter(|&x| x != NO_STR).find_map(|x| capture.hlo.find(program_id, hlo_module, x).map(|h| (x, Some(h)))).unwrap_or_else(|| {
            // Without HLO (trace JSON) the kernel still names its work better than its buffer.
            let buffered = capture.str(chunk.hlo_op.get(i)).is_some_and(super::command_buffers::names_command_buffer) && chunk.name[i] != NO_STR;
            (if buffered { chunk.name[i] } else { names.into_iter().find(|&x| x != NO_STR).unwrap_or(NO_STR) }, None)
        });
    let name_text = capture.str(hlo_op).unwrap_or("");
    let opcode = instr.and_then(|h| capture.str(h.opcode));
    let kind = match opcode {
        Some(oc) => collective_kind_of_opcode(oc),
        None => collective_kind_of_name(name_text),
    };
    let category = if kind.is_some() {
        "communication"
    } else if is_stall(name_text) {
        "stall"
    } else {
        "compute"
    };
    let source = match instr.filter(|h| h.source_file != NO_STR) {
        Some(h) => {
            let f = capture.str(h.source_file).unwrap_or("");
            strings.intern(if h.source_line > 0 { format!("{f}:{}", h.source_line) } else { f.to_string() })
        }
        None => NO_STR,
    };
    let async_opcode = opcode.is_some_and(|o| o.ends_with("-start") || o.ends_with("-done") || o.ends_with("-update"));
    KnownOp { hlo_op, instr, collective_kind: kind.map(Label::of), category: Label::of(category), async_opcode, source }
}

/// Steps of the events in `capture`: host step annotations (the outermost event per (host,
/// step) carrying step_num) and device `Steps` lines.
fn collect_steps(capture: &Capture, roles: &LineRoles) -> (Vec<Step>, Vec<Step>) {
    let mut host_steps: BTreeMap<(u32, i64), Step> = BTreeMap::new();
    let mut device_steps = Vec::new();
    for chunk in &capture.chunks {
        let mut seq_by_line: HashMap<u32, i64> = HashMap::new();
        // Events past the chunk's last step value can only be steps on a `Steps` line.
        let has_steps_line = chunk.line_runs().any(|(line, _)| roles.steps[line as usize]);
        let looked_at = if has_steps_line { chunk.len() } else { chunk.step.extent() };
        for i in 0..looked_at {
            // Most events are neither: the plane is looked up only for those that may be.
            let annotated = chunk.step.is_set(i) && chunk.dur_ns[i] > 0;
            if !annotated && !roles.steps[chunk.line[i] as usize] {
                continue;
            }
            let line = &capture.lines[chunk.line[i] as usize];
            let plane = &capture.planes[line.plane as usize];
            let (s, e) = (chunk.start_ns[i], chunk.start_ns[i] + chunk.dur_ns[i]);
            if plane.kind == PlaneKind::Host && annotated {
                let key = (plane.host, chunk.step.get(i));
                let keep = host_steps.get(&key).is_none_or(|old| e - s > old.end_ns - old.start_ns);
                if keep {
                    host_steps.insert(key, new_step(plane.host, NO_STR, chunk.step.get(i), chunk.name[i], s, e, "step_annotation"));
                }
            } else if plane.kind == PlaneKind::Device && roles.steps[chunk.line[i] as usize] {
                let seq = seq_by_line.entry(chunk.line[i]).or_insert(0);
                let number = if chunk.step.get(i) != NULL_I64 {
                    chunk.step.get(i)
                } else {
                    capture.str(chunk.name[i]).and_then(|n| n.trim().parse().ok()).unwrap_or(*seq)
                };
                *seq += 1;
                device_steps.push(new_step(plane.host, plane.device, number, chunk.name[i], s, e, "device_steps_line"));
            }
        }
    }
    (host_steps.into_values().collect(), device_steps)
}

fn new_step(host: u32, device: u32, step: i64, name: u32, start_ns: i64, end_ns: i64, source: &'static str) -> Step {
    Step { host, device, step, name, start_ns, end_ns, source, busy_ns: 0, compute_ns: 0, communication_ns: 0, op_count: 0 }
}

/// Each op gets the step whose window contains its start: its device's `Steps` line first,
/// else its host's step annotations. An op that already has one kept it from its launch
/// ([`Launch`]).
fn assign_steps(ops: &mut [Op], steps: &[&Step]) {
    // (start, end, step) of a host's or device's steps, by start.
    type Windows = Vec<(i64, i64, i64)>;
    let mut windows: HashMap<(u32, u32), Windows> = HashMap::new();
    for s in steps {
        windows.entry((s.host, s.device)).or_default().push((s.start_ns, s.end_ns, s.step));
    }
    for w in windows.values_mut() {
        w.sort_unstable();
    }
    let find = |w: &Windows, t: i64| -> Option<i64> {
        let k = w.partition_point(|x| x.0 <= t);
        (k > 0 && t < w[k - 1].1).then(|| w[k - 1].2)
    };
    // Ops come a line at a time: the windows of the last (host, device) are kept at hand
    // (the device's own, then its host's).
    type AtHand<'w> = ((u32, u32), Option<&'w Windows>, Option<&'w Windows>);
    let mut last: Option<AtHand> = None;
    for op in ops.iter_mut().filter(|op| op.step == NULL_I64) {
        let key = (op.host, op.device);
        let (_, device_windows, host_windows) = match last {
            Some(l) if l.0 == key => l,
            _ => *last.insert((key, windows.get(&key), windows.get(&(op.host, NO_STR)))),
        };
        let by_device = device_windows.and_then(|w| find(w, op.start_ns));
        op.step = by_device.or_else(|| host_windows.and_then(|w| find(w, op.start_ns))).unwrap_or(NULL_I64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_optional_f64_keeps_every_value_and_none() {
        for v in [0.0, -0.0, 1.5e300, f64::INFINITY, f64::MIN_POSITIVE] {
            assert_eq!(OptionalF64::new(Some(v)).get().map(f64::to_bits), Some(v.to_bits()));
        }
        assert!(OptionalF64::new("nan".parse().ok()).get().is_some_and(f64::is_nan));
        assert!(OptionalF64::new(Some(f64::from_bits(OptionalF64::NONE_BITS))).get().is_some_and(f64::is_nan));
        assert_eq!(OptionalF64::new(None).get(), None);
        assert_eq!(OptionalF64::default().get(), None);
        // What the field types save: every pass over a large profile's ops reads their bytes.
        assert!(std::mem::size_of::<Op>() <= 152, "{}", std::mem::size_of::<Op>());
    }

    #[test]
    fn scope_paths_and_passes() {
        assert_eq!(
            scope_of("jit(train_step)/jvp(forward)/layer_0/attention/qkv/dot_general"),
            (Some("train_step/forward/layer_0/attention/qkv/dot_general".into()), "forward")
        );
        assert_eq!(
            scope_of("jit(train_step)/backward/transpose(jvp(forward))/layer_0/attention/context/dot_general"),
            (Some("train_step/backward/forward/layer_0/attention/context/dot_general".into()), "backward")
        );
        assert_eq!(scope_of("jit(train_step)/optimizer/mul").1, "optimizer");
        assert_eq!(scope_of("jit(f)/jit(main)/add:"), (Some("f/main/add".into()), "other"));
        assert_eq!(scope_of("shard_map"), (None, "other"));
        assert_eq!(scope_of("jit(f)/remat(block)/mlp/dot_general").1, "remat");
        // jax.checkpoint inside a scanned layer stack (JAX 0.10): only the recomputation is remat.
        let scanned = "jit(train_step)/transpose(jvp(forward))/while/body/closed_call/checkpoint";
        assert_eq!(scope_of(&format!("{scanned}/rematted_computation/layer/mlp/dot_general")).1, "remat");
        assert_eq!(scope_of(&format!("{scanned}/layer/mlp/dot_general")), (Some("train_step/forward/while/body/layer/mlp/dot_general".into()), "backward"));
        assert_eq!(scope_of("jit(train_step)/jvp(forward)/while/body/closed_call/checkpoint/layer/mlp/dot_general").1, "forward");
        assert_eq!(scope_of("jit(_train_step)/shard_map/apply_rotary_embedding/pallas_call").0, Some("_train_step/apply_rotary_embedding".into()));
        assert_eq!(scope_of("jit(train_step)/shard_map/halo_exchange/ppermute").0, Some("train_step/halo_exchange/ppermute".into()));
        assert_eq!(scope_of("dynamic_donated[1][0][0].model.params.blocks[0].attn.w_k:").0, Some("model.params.blocks[0].attn.w_k".into()));
    }

    #[test]
    fn every_label_an_op_can_get_is_a_label_text() {
        let opcodes =
            ["all-reduce-start", "all-gather", "reduce-scatter", "ragged-all-to-all", "collective-permute-done", "send", "recv", "collective-broadcast"];
        let names = ["psum.1", "ncclDevKernel_AllGather", "reduce_scatter", "all_to_all", "ppermute", "sendrecv", "ncclKernel"];
        let kinds = opcodes.iter().map(|o| collective_kind_of_opcode(o)).chain(names.iter().map(|n| collective_kind_of_name(n)));
        let scopes = ["jit(f)/remat(b)/x", "jit(f)/transpose(jvp(g))/x", "jit(f)/optimizer/x", "jit(f)/jvp(g)/x", "jit(f)/x"];
        let texts: Vec<&str> =
            kinds.map(|k| k.expect("a collective")).chain(scopes.iter().map(|s| scope_of(s).1)).chain(["compute", "communication", "stall"]).collect();
        for text in &texts {
            assert_eq!(Label::of(text).as_str(), *text);
        }
        // And no text is listed that no op can get.
        assert!(LABEL_TEXTS.iter().all(|t| texts.contains(t)));
    }

    #[test]
    fn collective_names_match_words_not_substrings() {
        assert_eq!(collective_kind_of_name("ncclDevKernel_AllGather_RING_LL"), Some("all-gather"));
        assert_eq!(collective_kind_of_name("ncclDevKernel_ReduceScatter_RING_LL"), Some("reduce-scatter"));
        assert_eq!(collective_kind_of_name("psum.1"), Some("all-reduce"));
        assert_eq!(collective_kind_of_name("all-reduce.3"), Some("all-reduce"));
        assert_eq!(collective_kind_of_name("ppermute.3"), Some("collective-permute"));
        assert_eq!(collective_kind_of_name("fusion.12"), None);
        assert_eq!(collective_kind_of_name("sendfile_fusion"), None);
        assert_eq!(collective_kind_of_opcode("all-gather-start"), Some("all-gather"));
    }

    #[test]
    fn canonical_names() {
        assert_eq!(canonical_name("%fusion.12"), "fusion");
        assert_eq!(canonical_name("fusion.1.2"), "fusion.1");
        assert_eq!(canonical_name("copy-start"), "copy-start");
        assert!(is_setup_op("iota.296") && is_setup_op("copy-done.4") && !is_setup_op("dot.1"));
    }

    #[test]
    fn coverage_of_merged_intervals() {
        let m = union(vec![(0, 10), (5, 20), (30, 40)]);
        assert_eq!(m, vec![(0, 20), (30, 40)]);
        assert_eq!(covered(&m, 15, 35), 10);
    }
}
