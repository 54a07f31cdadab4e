//! Device ops: which events are ops, and an op's identity, HLO instruction, category, scope
//! and launch, each decided once per distinct value and reused.

use super::{
    collective_kind_of_name, collective_kind_of_opcode, is_device_work_category, is_stall_name, scope_of, Capture, EventChunk, FxHashMap, HashMap, HloInstr,
    Label, LocalStrings, Op, OptionalF64, PlaneKind, StringPool, NO_PARENT, NO_STR, NULL_I64,
};
use crate::model::names::{is_async_line, is_device_op_line};

/// What an op's identity (program, module, candidate names) decides, worked out once per
/// identity: ops repeat a few hundred distinct instructions many times.
#[derive(Clone, Copy)]
pub(super) struct KnownOp<'c> {
    /// The name that resolved (see [`make_op`]).
    pub(super) hlo_op: u32,
    /// Its HLO instruction, when the HLO knows it.
    pub(super) instr: Option<&'c HloInstr>,
    pub(super) collective_kind: Option<Label>,
    pub(super) category: Label,
    /// Its opcode is an async one's (`*-start`, `*-done`, `*-update`).
    pub(super) async_opcode: bool,
    /// The instruction's `file:line` (an id in [`OpCaches::strings`]), NO_STR when it has none.
    pub(super) source: u32,
}

/// Per-value results reused across ops: classification, scope, device and source strings.
#[derive(Default)]
pub(super) struct OpCaches<'c> {
    /// (program_id, hlo_module, [hlo_op, display_name, name]) → what they decide.
    pub(super) known: FxHashMap<(i64, u32, [u32; 3]), KnownOp<'c>>,
    /// (tf_op, event name, launch scope) → (region path id, pass); the name only matters
    /// without a tf_op or a launch scope.
    pub(super) scope: FxHashMap<(u32, u32, u32), (u32, Label)>,
    pub(super) cpu_device: FxHashMap<i64, u32>,
    pub(super) strings: LocalStrings,
}

/// Module name and program id from an `XLA Modules` event name like `jit_f(1219...)`.
pub(super) fn parse_module_event(name: &str) -> (&str, Option<i64>) {
    match name.rfind('(') {
        Some(open) if name.ends_with(')') => (&name[..open], name[open + 1..name.len() - 1].parse::<u64>().ok().map(|v| v as i64)),
        _ => (name, None),
    }
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
pub(super) fn event_units(capture: &Capture) -> Vec<Vec<(usize, std::ops::Range<usize>)>> {
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
    pub(super) slots: Vec<u8>,
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

/// Arg keys the op builder and string preparation read, in [`PoolIds`] field order.
pub(super) const OP_ARG_KEYS: [&str; 6] = ["name", "hlo_category", "flops", "bytes_accessed", "source", "device_duration_ps"];

/// Arg keys counted as provenance hints: the launch id, then the source-file keys.
pub(super) const PROVENANCE_ARG_KEYS: [&str; 4] = ["run_id", "source", "source_file", "file_name"];

/// Whether the derivation reads the stat `key` as an arg: an in-memory analysis decodes
/// only those (`Capture::args_kept`), and not `_src` either, which nothing reads. A test
/// keeps an INPUT's summary equal to its stored run's, which has every stat.
pub fn reads_arg(key: &str) -> bool {
    OP_ARG_KEYS.contains(&key) || PROVENANCE_ARG_KEYS.contains(&key) || key == crate::tables::command_buffers::GRAPH_NODE_ARG
}

/// Pool ids of arg keys the op builder reads.
pub struct PoolIds {
    pub(super) name: u32,
    pub(super) hlo_category: u32,
    pub(super) flops: u32,
    pub(super) bytes_accessed: u32,
    pub(super) source: u32,
    pub(super) device_duration_ps: u32,
}

impl PoolIds {
    pub(super) fn new(pool: &mut StringPool) -> Self {
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
pub(super) struct OpArgs<'c> {
    pub(super) name: Option<&'c str>,
    pub(super) hlo_category: Option<&'c str>,
    pub(super) flops: Option<&'c str>,
    pub(super) bytes_accessed: Option<&'c str>,
    pub(super) source: Option<&'c str>,
    pub(super) device_duration_ps: Option<&'c str>,
}

impl<'c> OpArgs<'c> {
    pub(super) fn of(chunk: &'c EventChunk, i: usize, ids: &PoolIds) -> Self {
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
pub(super) struct LineRoles {
    pub(super) device_op: Vec<bool>,
    pub(super) modules: Vec<bool>,
    pub(super) steps: Vec<bool>,
    /// Its ops are async (`Async XLA Ops`, or `Async` anywhere in the name).
    pub(super) async_ops: Vec<bool>,
    /// Its ops are in-flight async spans, not device occupancy (the name starts `Async`).
    pub(super) async_spans: Vec<bool>,
}

impl LineRoles {
    pub(super) fn of(capture: &Capture) -> Self {
        let names: Vec<&str> = capture.lines.iter().map(|l| capture.str(l.name).unwrap_or("")).collect();
        let each = |role: fn(&str) -> bool| names.iter().map(|n| role(n)).collect();
        LineRoles {
            device_op: each(is_device_op_line),
            modules: each(|n| n == "XLA Modules"),
            steps: each(|n| n == "Steps"),
            async_ops: each(|n| n.contains("Async")),
            async_spans: each(is_async_line),
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
pub(super) struct LaunchScopes {
    pub(super) by_correlation: FxHashMap<i64, Launch>,
    pub(super) paths: Vec<String>,
}

/// Where a kernel was launched: its scope (an index into `LaunchScopes::paths`, u32::MAX when
/// none) and the step the launch ran in (the nearest enclosing event with a step number,
/// `ProfilerStep#N`; NULL_I64 when none). A kernel belongs to the step that launched it, though
/// it may run after the host has gone on to the next one.
#[derive(Clone, Copy)]
pub(super) struct Launch {
    pub(super) path: u32,
    pub(super) step: i64,
}

impl LaunchScopes {
    pub(super) fn of(capture: &Capture) -> Self {
        let id = |s: &str| capture.strings.lookup(s).unwrap_or(NO_STR);
        let (runtime, driver) = (id("cuda_runtime"), id("cuda_driver"));
        let mut scopes = LaunchScopes::default();
        if runtime == NO_STR && driver == NO_STR {
            return scopes;
        }
        // Nsight Systems' NVTX ranges are scopes as `record_function`'s are.
        let (annotation, nvtx, cpu_op) = (id("user_annotation"), id("nvtx"), id("cpu_op"));
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
                    // A range that marks a step is no scope: each step would be a region apart.
                    // Nor is one of XLA's (a module, an HLO op): the op's op_name is its scope.
                    let annotates = category == annotation && !name.starts_with("ProfilerStep#");
                    let xla = c.hlo_op.get(j) != NO_STR || c.hlo_module.get(j) != NO_STR;
                    if annotates || (category == nvtx && nvtx != NO_STR && c.step.get(j) == NULL_I64 && !xla) {
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
    pub(super) fn of_kernel(&self, correlation: i64) -> Option<Launch> {
        self.by_correlation.get(&correlation).copied()
    }
}

pub(super) fn is_op_event(capture: &Capture, roles: &LineRoles, chunk: &EventChunk, i: usize) -> bool {
    roles.device_op[chunk.line[i] as usize] && (chunk.category.get(i) == NO_STR || is_device_work_category(capture.str(chunk.category.get(i))))
}

/// What every op of a part is made with (see [`make_op`]).
pub(super) struct OpContext<'c> {
    pub(super) capture: &'c Capture,
    pub(super) ids: &'c PoolIds,
    pub(super) roles: &'c LineRoles,
    /// Per plane, `XLA Modules` windows (start, end, module, program id) by start.
    pub(super) module_windows: &'c HashMap<u32, Vec<(i64, i64, u32, i64)>>,
    pub(super) launches: &'c LaunchScopes,
}

/// The op of event `i` of chunk `ci` (`base`: the chunk's first event id; `placed`: the
/// instruction a command buffer's schedule placed the kernel on).
pub(super) fn make_op<'c>(context: &OpContext<'c>, caches: &mut OpCaches<'c>, ci: usize, i: usize, base: i64, placed: Option<u32>) -> Op {
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
pub(super) fn know_op<'c>(
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
            let buffered = capture.str(chunk.hlo_op.get(i)).is_some_and(crate::tables::command_buffers::names_command_buffer) && chunk.name[i] != NO_STR;
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
    } else if is_stall_name(name_text) {
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
