//! Places the GPU kernels that ran inside CUDA graphs (XLA command buffers) on their HLO
//! instructions, by the program's schedule.
//!
//! Inside a command buffer every kernel's `hlo_op` is the buffer (`command_buffer_1`), not the
//! instruction it runs. XLA names a fusion's kernel after its instruction (`gemm_fusion_dot.9`
//! runs as `gemm_fusion_dot_9`), but reuses one kernel for identical fusions, so the second
//! layer's matmul runs the first layer's kernel; library kernels (cuBLAS `nvjet_*`, cuDNN,
//! memsets) and Pallas/Triton kernels (named by the user) name no instruction at all.
//!
//! A graph runs its kernels in scheduled order, so the kernels of one launch (one stream, one
//! correlation id), in the order they ran, are walked along the schedule of the computation most
//! of them name (a loop body's graph along the body's; kernels that identical fusions of several
//! computations share count only where no other kernel names one). A kernel named after an
//! instruction is placed on the first instruction at or after the walk's position that is the
//! named one or identical to it (same name stem, opcode and shape: what makes XLA share the
//! kernel). Kernels that name no instruction, after a placed one, go to the custom-call
//! scheduled next after it (a cuBLAS matmul, a cuDNN attention with its memsets, a Pallas
//! kernel) when only instructions that launch nothing (bitcasts, tuples, parameters, ...) lie
//! between, and no other custom-call follows it that way; otherwise they keep their names, as
//! does the rest of a launch once nothing of a kernel's kind is left ahead.
//!
//! A graph XLA builds with concurrent scheduling (`--xla_gpu_command_buffer_scheduling_mode=
//! CONCURRENT`) runs independent kernels at once, on several streams, in no schedule order. Its
//! kernels carry `cuda_graph_node_id` (the graph's id, then the node's index in the order XLA
//! added the commands, which is the schedule's), so such a launch is walked in node order
//! instead ([`Schedule::node_order`]). A command traced into a child graph (a cuBLAS or cuDNN
//! call, a memory copy) leaves a gap in the indices, and its kernels are numbered after the
//! graph's own nodes, in command order: they go back into the gaps, one group per gap (kernels
//! back to back on one stream, split where the library changes when the gaps need it), and each
//! such command goes to the next custom-call ahead. A launch that cannot be put in node order
//! (a window cut it, or its groups do not fill the gaps) takes what a launch of the same graph
//! put in node order placed on each node; failing that, its own nodes are walked in order and
//! its traced kernels keep their names.
//!
//! A plane streamed in time windows carries each launch's walk into the next window
//! ([`Walks`]). Only the choice of computation looks ahead, at the launch's kernels in the
//! window where it begins: a launch cut by a window whose first part names another computation
//! most is walked along that one, and its kernels keep their names once it is lost. Checked
//! against the same workloads captured with command buffers off, where every kernel carries its
//! own instruction (tests/oracle.rs).

use crate::model::names::kernel_alias;
use crate::model::{Capture, EventChunk, NO_STR, NULL_I64};
use rustc_hash::FxHashMap;

/// Whether an event's `hlo_op` is a command buffer (`command_buffer_1`) rather than the
/// instruction its kernel runs.
pub fn names_command_buffer(hlo_op: &str) -> bool {
    hlo_op.starts_with("command_buffer")
}

/// Instruction name ids of buffered kernels placed by schedule: per chunk (empty for a chunk
/// without any), per event, NO_STR for an event not placed.
#[derive(Default)]
pub struct Placements(Vec<Vec<u32>>);

impl Placements {
    /// The instruction event `i` of chunk `chunk` was placed on, if any.
    pub fn get(&self, chunk: usize, i: usize) -> Option<u32> {
        self.0.get(chunk).and_then(|events| events.get(i)).copied().filter(|&name| name != NO_STR)
    }

    fn insert(&mut self, capture: &Capture, kernel: &Kernel, name: u32) {
        let chunk = kernel.chunk as usize;
        if self.0.len() <= chunk {
            self.0.resize_with(capture.chunks.len(), Vec::new);
        }
        let events = &mut self.0[chunk];
        if events.is_empty() {
            events.resize(capture.chunks[chunk].len(), NO_STR);
        }
        events[kernel.index as usize] = name;
    }
}

/// What the placement of a plane's graph launches carries from one time window into the next.
#[derive(Default)]
pub struct Walks {
    /// Where the walk of each launch stands: (line index, correlation id) for a launch on one
    /// stream, ([`ON_SEVERAL_LINES`] minus the plane, correlation id) for one on several.
    launches: FxHashMap<(u32, i64), Walk>,
    /// Per graph (plane, program id, module, graph id): the instruction each node's kernel was
    /// placed on (name id), learnt from a launch placed in node order. A graph runs the same
    /// nodes at every launch, so a launch that a window cuts, which cannot be put in node order,
    /// is placed by it.
    nodes: FxHashMap<(u32, i64, u32, u32), FxHashMap<u32, u32>>,
}

impl Walks {
    pub fn clear(&mut self) {
        self.launches.clear();
        self.nodes.clear();
    }
}

/// The key of a launch that ran on several lines of a plane, minus the plane's index: above any
/// line index a capture can have.
const ON_SEVERAL_LINES: u32 = u32::MAX;

/// The stat that numbers a CUDA graph's nodes: the graph's id in the high 32 bits, the node's
/// index in the low ones. The derivation reads it as an arg ([`super::derive::reads_arg`]).
pub const GRAPH_NODE_ARG: &str = "cuda_graph_node_id";

/// A kernel without [`GRAPH_NODE_ARG`].
const NO_NODE: u32 = u32::MAX;

/// Where the walk of one launch stands: the computation it walks (None before its first part),
/// the position after the last placed kernel, and that kernel's position; the position after
/// the last instruction a memory copy was placed on. `lost` once a kernel's kind was nowhere
/// ahead.
#[derive(Clone, Copy, Default)]
pub struct Walk {
    sequence: Option<usize>,
    next: usize,
    last_placed: Option<usize>,
    next_copy: usize,
    lost: bool,
    /// In node order, the custom-call of the command whose kernels are being placed.
    command: Option<usize>,
}

/// One buffered kernel: where it ran and what it names.
#[derive(Clone)]
struct Kernel {
    plane: u32,
    line: u32,
    correlation: i64,
    /// Its node's index in the graph ([`GRAPH_NODE_ARG`]'s low 32 bits), or NO_NODE; the
    /// graph's id (the high 32 bits).
    node: u32,
    graph: u32,
    start_ns: i64,
    chunk: u32,
    index: u32,
    name: u32,
    /// A graph's memory-copy node (`memcpy128`, `memcpy32_post`), which names nothing.
    is_copy: bool,
    library: Library,
    program_id: i64,
    module: u32,
}

/// The placements of the buffered kernels of the part's device-op lines (`device_op_line` per
/// line) that the schedules place, the launches' walks going on from `walks` (empty for a part
/// decoded whole; a window's left by the window before) and left there for the next window.
pub fn place_buffered_kernels(capture: &Capture, device_op_line: &[bool], walks: &mut Walks) -> Placements {
    let mut placements = Placements::default();
    // A CPU capture has schedules but no device-op lines: its events are not looked at.
    if (capture.hlo.schedule_by_program.is_empty() && capture.hlo.schedule_by_module.is_empty()) || !device_op_line.contains(&true) {
        return placements;
    }
    // The device-op lines' runs first, so that the kernels' vector is made once at its size.
    let runs: Vec<(usize, u32, std::ops::Range<usize>)> = capture
        .chunks
        .iter()
        .enumerate()
        .flat_map(|(ci, chunk)| chunk.line_runs().filter(|(line, _)| device_op_line[*line as usize]).map(move |(line, events)| (ci, line, events)))
        .collect();
    let node_key = capture.strings.lookup(GRAPH_NODE_ARG).unwrap_or(NO_STR);
    let mut is_buffer: FxHashMap<u32, bool> = FxHashMap::default();
    let mut kinds: FxHashMap<u32, (bool, Library)> = FxHashMap::default();
    let mut kernels = Vec::with_capacity(runs.iter().map(|r| r.2.len()).sum());
    for (ci, line, events) in runs {
        let chunk = &capture.chunks[ci];
        for i in events {
            let hlo_op = chunk.hlo_op.get(i);
            let correlation = chunk.correlation_id.get(i);
            if hlo_op == NO_STR || correlation == NULL_I64 || chunk.name[i] == NO_STR {
                continue;
            }
            if *is_buffer.entry(hlo_op).or_insert_with(|| capture.str(hlo_op).is_some_and(names_command_buffer)) {
                let graph_node = graph_node(chunk, i, node_key);
                let kind = *kinds.entry(chunk.name[i]).or_insert_with(|| {
                    let name = capture.str(chunk.name[i]).unwrap_or("");
                    (names_memory_copy(name), Library::of(name))
                });
                kernels.push(Kernel {
                    plane: capture.lines[line as usize].plane,
                    line,
                    correlation,
                    node: graph_node.0,
                    graph: graph_node.1,
                    start_ns: chunk.start_ns[i],
                    chunk: ci as u32,
                    index: i as u32,
                    name: chunk.name[i],
                    is_copy: kind.0,
                    library: kind.1,
                    program_id: chunk.program_id.get(i),
                    module: chunk.hlo_module.get(i),
                });
            }
        }
    }
    kernels.sort_unstable_by_key(|k| (k.plane, k.correlation, k.line, k.start_ns, k.chunk, k.index));
    let mut schedules: FxHashMap<(i64, u32), Option<Schedule>> = FxHashMap::default();
    for launch in kernels.chunk_by(|a, b| (a.plane, a.correlation) == (b.plane, b.correlation)) {
        let first = &launch[0];
        let Some(schedule) = schedules.entry((first.program_id, first.module)).or_insert_with(|| Schedule::of(capture, first.program_id, first.module)) else {
            continue;
        };
        let on_one_line = first.line == launch[launch.len() - 1].line;
        let graph = |k: &Kernel| (k.plane, k.program_id, k.module, k.graph);
        let on_several_lines = (ON_SEVERAL_LINES - first.plane, first.correlation);
        if on_one_line || launch.iter().any(|k| k.node == NO_NODE) {
            // One stream runs a graph's kernels in schedule order; without node indices a
            // launch on several is walked a stream at a time.
            for on_line in launch.chunk_by(|a, b| a.line == b.line) {
                let walk = walks.launches.entry((on_line[0].line, first.correlation)).or_default();
                schedule.place(capture, &on_line.iter().collect::<Vec<_>>(), &[], walk, &mut placements);
            }
            continue;
        }
        // Sorted once for both walks in node order below.
        let by_node = schedule.by_node(launch);
        if let Some((order, commands)) = by_node.as_ref().and_then(|b| schedule.node_order(b)) {
            let walk = walks.launches.entry(on_several_lines).or_default();
            schedule.place(capture, &order, &commands, walk, &mut placements);
            for kernel in launch {
                if let Some(name) = placements.get(kernel.chunk as usize, kernel.index as usize) {
                    walks.nodes.entry(graph(kernel)).or_default().entry(kernel.node).or_insert(name);
                }
            }
        } else if walks.nodes.contains_key(&graph(first)) {
            // Cut by a window, or its traced kernels not told apart: what a launch of the graph
            // put in node order placed.
            for kernel in launch {
                if let Some(&name) = walks.nodes.get(&graph(kernel)).and_then(|nodes| nodes.get(&kernel.node)) {
                    placements.insert(capture, kernel, name);
                }
            }
        } else if let Some((own, commands)) = by_node.map(|b| schedule.own_node_order(b)) {
            // No such launch yet: the graph's own nodes in order, its traced kernels left out.
            let walk = walks.launches.entry(on_several_lines).or_default();
            schedule.place(capture, &own, &commands, walk, &mut placements);
        }
    }
    placements
}

/// A launch's kernels sorted by node index, each with its position in the launch, and the
/// index of the last that names an instruction ([`Schedule::by_node`]).
type ByNode<'k> = (Vec<(usize, &'k Kernel)>, u32);

/// Which library a kernel comes from, as far as its name tells: what separates two traced
/// commands whose kernels ran back to back on one stream.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Library {
    /// A memset, which XLA's cuBLAS and cuDNN child graphs start with (workspace clears).
    Memset,
    Cudnn,
    Other,
}

impl Library {
    fn of(kernel: &str) -> Library {
        let lower = kernel.to_ascii_lowercase();
        if lower.starts_with("memset") {
            Library::Memset
        } else if lower.contains("cudnn") {
            Library::Cudnn
        } else {
            Library::Other
        }
    }

    /// Whether `next`, run right after `self` on one stream, begins another child graph: a
    /// memset after a kernel, or a kernel of another library.
    fn begins_another(self, next: Library) -> bool {
        match (self, next) {
            (Library::Memset, _) => false,
            (_, Library::Memset) => true,
            (a, b) => a != b,
        }
    }
}

/// Event `i`'s node index in its CUDA graph and the graph's id ([`GRAPH_NODE_ARG`], whose pool
/// id is `key`), or NO_NODE.
fn graph_node(chunk: &EventChunk, i: usize, key: u32) -> (u32, u32) {
    let id = (key != NO_STR).then(|| chunk.args_of(i).find(|&j| chunk.arg_key[j] == key)).flatten().and_then(|j| chunk.arg_value(j).parse::<u64>().ok());
    id.map_or((NO_NODE, 0), |id| ((id as u32).min(NO_NODE - 1), (id >> 32) as u32))
}

/// What makes XLA run identical instructions as one kernel: name stem, opcode and shape, as an
/// index into the schedule's kinds.
type Kind = u32;

/// One scheduled computation, indexed for the walk.
#[derive(Default)]
struct Sequence {
    /// Per position in scheduled order, the instruction (name id) its kernels run: the
    /// scheduled one, or for an async-start the one it starts.
    runs: Vec<u32>,
    /// Kind → the positions of the instructions of that kind, in order.
    alike: FxHashMap<Kind, Vec<usize>>,
    /// Per position: whether the instruction is a custom-call.
    custom_call: Vec<bool>,
    /// Per position: the next position after it whose instruction launches anything (the
    /// sequence's length where none does), so that a hostile schedule costs no scan per kernel.
    next_launching: Vec<usize>,
    /// The positions of the instructions a GPU runs as a memory copy, in order.
    copies: Vec<usize>,
    /// Per position: the first position at or after it that may launch a kernel other than a
    /// memory copy (the sequence's length where none does). A `copy` may: one that changes the
    /// layout runs as a transpose kernel named after it.
    next_kernel: Vec<usize>,
}

impl Sequence {
    /// The custom-call that the kernels naming no instruction after position `placed` belong
    /// to: the next instruction that launches anything, when it is a custom-call and the next
    /// after it is none.
    fn custom_call_after(&self, placed: usize) -> Option<usize> {
        let is_call = |p: usize| self.custom_call.get(p).copied().unwrap_or(false);
        let call = self.next_launching[placed];
        (is_call(call) && !is_call(self.next_launching[call])).then_some(call)
    }
}

/// Opcodes of instructions that run no kernel of their own on a GPU (an async op's done waits for
/// what its start launched).
const LAUNCH_NOTHING: [&str; 11] =
    ["parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "add-dependency", "opt-barrier", "domain", "async-done", "copy-done"];

/// Opcodes of instructions a GPU runs as a memory copy; so does an async-start of a fusion
/// (XLA's dynamic-slice fusions, wrapped to run beside the loop body's kernels).
const COPY: [&str; 2] = ["copy", "copy-start"];

/// Whether a kernel is a CUDA graph's memory-copy node (`memcpy128`, `memcpy32_post`).
fn names_memory_copy(kernel: &str) -> bool {
    kernel.get(..6).is_some_and(|head| head.eq_ignore_ascii_case("memcpy"))
}

/// A program's schedule, indexed for the walk.
struct Schedule {
    sequences: Vec<Sequence>,
    /// Name id (and its `_`-spelled kernel alias) → (sequence, kind) of the instruction it names.
    home: FxHashMap<u32, (usize, Kind)>,
    /// Kind → how many sequences hold instructions of it.
    runs_of_kind: Vec<usize>,
}

impl Schedule {
    fn of(capture: &Capture, program_id: i64, module: u32) -> Option<Schedule> {
        let module_schedule = capture.hlo.schedule(program_id, module)?;
        let opcode_id = |text: &str| capture.strings.lookup(text).unwrap_or(NO_STR);
        let opcode_ids = |texts: &[&str]| texts.iter().map(|t| opcode_id(t)).filter(|&id| id != NO_STR).collect::<Vec<u32>>();
        let (custom_call, fusion, copy_start) = (opcode_id("custom-call"), opcode_id("fusion"), opcode_id("copy-start"));
        let (launch_nothing, copy) = (opcode_ids(&LAUNCH_NOTHING), opcode_ids(&COPY));
        let mut schedule = Schedule { sequences: Vec::new(), home: FxHashMap::default(), runs_of_kind: Vec::new() };
        let mut kinds: FxHashMap<(&str, u32, u32), Kind> = FxHashMap::default();
        let mut aliases = Vec::new();
        for (s, order) in module_schedule.sequences.iter().enumerate() {
            let mut sequence = Sequence { runs: Vec::with_capacity(order.len()), ..Sequence::default() };
            let (mut launches_nothing, mut surely_copy) = (Vec::with_capacity(order.len()), Vec::with_capacity(order.len()));
            for (p, &scheduled) in order.iter().enumerate() {
                let started = module_schedule.started.get(&scheduled).copied();
                let name = started.unwrap_or(scheduled);
                let text = capture.str(name).unwrap_or("");
                let (opcode, shape) = capture.hlo.find(program_id, module, name).map_or((NO_STR, NO_STR), |h| (h.opcode, h.shape));
                sequence.runs.push(name);
                sequence.custom_call.push(opcode == custom_call && opcode != NO_STR);
                launches_nothing.push(started.is_none() && launch_nothing.contains(&opcode));
                let starts_copy = started.is_some() && opcode == fusion && opcode != NO_STR;
                if starts_copy || copy.contains(&opcode) {
                    sequence.copies.push(p);
                }
                surely_copy.push(starts_copy || opcode == copy_start);
                let next_kind = kinds.len() as Kind;
                let kind = *kinds.entry((stem(text), opcode, shape)).or_insert(next_kind);
                sequence.alike.entry(kind).or_default().push(p);
                schedule.home.entry(name).or_insert((s, kind));
                if let Some(alias) = kernel_alias(text).and_then(|alias| capture.strings.lookup(&alias)) {
                    aliases.push((alias, (s, kind)));
                }
            }
            sequence.next_launching = next_launching(&launches_nothing);
            sequence.next_kernel = next_kernel(&launches_nothing, &surely_copy);
            schedule.runs_of_kind.resize(kinds.len(), 0);
            for &kind in sequence.alike.keys() {
                schedule.runs_of_kind[kind as usize] += 1;
            }
            schedule.sequences.push(sequence);
        }
        // Aliases after every real name: an alias never hides one.
        for (alias, home) in aliases {
            schedule.home.entry(alias).or_insert(home);
        }
        Some(schedule)
    }

    /// The kernels of a launch ([`Schedule::by_node`]) in the order of the graph's nodes, each
    /// group of kernels numbered after the last node that names an instruction going into a gap
    /// in the indices before it, in order. A group is a memory copy alone, or kernels that ran
    /// one right after the other on one line (a child graph runs its kernels in sequence on one
    /// stream). None when the groups cannot fill the gaps one for one: which kernels a traced
    /// command ran is then unknown. With the order, which kernels begin a command that names no instruction
    /// (a traced command's first kernel, a Pallas kernel): [`Schedule::place`] puts each such
    /// command on the next custom-call.
    fn node_order<'k>(&self, (by_node, last_named): &ByNode<'k>) -> Option<(Vec<&'k Kernel>, Vec<bool>)> {
        let last_named = *last_named;
        let split = by_node.partition_point(|(_, k)| k.node <= last_named);
        let (direct, traced) = by_node.split_at(split);
        let mut groups: Vec<&[(usize, &Kernel)]> = traced.chunk_by(|(pa, a), (pb, b)| !a.is_copy && !b.is_copy && a.line == b.line && pa + 1 == *pb).collect();
        // The graph's own nodes end where the gaps among them are as many as the groups: a
        // child graph may number a node without a kernel first (cuDNN's), so the first traced
        // kernel can come after that end.
        let first_traced = traced.first().map_or(last_named as usize + 1, |(_, k)| k.node as usize);
        let gaps = last_named as usize + 1 - direct.len()..=first_traced - direct.len();
        if groups.len() < *gaps.start() {
            // Fewer groups than gaps: two commands ran back to back on one stream (a cuBLAS
            // matmul right after the cuDNN attention whose output it takes). Split where the
            // library changes, if that makes the count.
            let split: Vec<&[(usize, &Kernel)]> = groups.iter().flat_map(|g| g.chunk_by(|(_, a), (_, b)| !a.library.begins_another(b.library))).collect();
            if !gaps.contains(&split.len()) {
                return None;
            }
            groups = split;
        }
        let own_nodes = direct.len() + groups.len();
        if !gaps.contains(&groups.len()) {
            return None;
        }
        groups.reverse();
        let (mut order, mut commands) = (Vec::with_capacity(by_node.len()), Vec::with_capacity(by_node.len()));
        let mut direct = direct.iter().peekable();
        for node in 0..own_nodes as u32 {
            match direct.next_if(|(_, k)| k.node == node) {
                Some(&(_, kernel)) => {
                    order.push(kernel);
                    commands.push(!self.home.contains_key(&kernel.name));
                }
                None => {
                    let group = groups.pop()?;
                    order.extend(group.iter().map(|&(_, k)| k));
                    commands.extend((0..group.len()).map(|i| i == 0));
                }
            }
        }
        Some((order, commands))
    }

    /// The kernels of a launch up to the last that names an instruction, in node order (the
    /// graph's own nodes, without the kernels of the commands it traced), whether or not the
    /// groups of traced kernels fill the gaps.
    fn own_node_order<'k>(&self, (by_node, last_named): ByNode<'k>) -> (Vec<&'k Kernel>, Vec<bool>) {
        let own: Vec<&Kernel> = by_node.into_iter().take_while(|(_, k)| k.node <= last_named).map(|(_, k)| k).collect();
        let commands = own.iter().map(|k| !self.home.contains_key(&k.name)).collect();
        (own, commands)
    }

    /// A launch's kernels by node index, each with its position in the launch, and the index of
    /// the last that names an instruction; None when a kernel has no index, two share one, or
    /// none names an instruction.
    fn by_node<'k>(&self, launch: &'k [Kernel]) -> Option<ByNode<'k>> {
        if launch.iter().any(|k| k.node == NO_NODE) {
            return None;
        }
        let last_named = launch.iter().filter(|k| !k.is_copy && self.home.contains_key(&k.name)).map(|k| k.node).max()?;
        // The position on its line tells two kernels that ran back to back there.
        let mut by_node: Vec<(usize, &Kernel)> = launch.iter().enumerate().collect();
        by_node.sort_unstable_by_key(|(_, k)| k.node);
        if by_node.windows(2).any(|w| w[0].1.node == w[1].1.node) {
            return None;
        }
        Some((by_node, last_named))
    }

    /// Walks one launch's kernels (in the order they ran, or their nodes') on from `walk`, along
    /// the computation most of them name (the first on a tie) unless the walk began in an
    /// earlier window. In node order `commands` says which kernels that name no instruction
    /// begin a command of their own (empty in the order they ran).
    fn place(&self, capture: &Capture, launch: &[&Kernel], commands: &[bool], walk: &mut Walk, placements: &mut Placements) {
        if walk.sequence.is_none() {
            // (sure, any) votes of the computations the launch's kernels name: a kernel whose kind
            // only one computation runs names that computation for sure; one shared by identical
            // fusions of several (a loop body's, the entry's) counts only if no kernel is sure.
            let mut votes: std::collections::BTreeMap<usize, (usize, usize)> = std::collections::BTreeMap::new();
            for kernel in launch.iter() {
                if let Some(&(s, kind)) = self.home.get(&kernel.name) {
                    let vote = votes.entry(s).or_default();
                    vote.0 += usize::from(self.runs_of_kind[kind as usize] == 1);
                    vote.1 += 1;
                }
            }
            let most = |count: fn(&(usize, usize)) -> usize| {
                votes.iter().filter(|(_, v)| count(v) > 0).max_by_key(|&(&s, v)| (count(v), std::cmp::Reverse(s))).map(|(&s, _)| s)
            };
            walk.sequence = most(|v| v.0).or_else(|| most(|v| v.1));
        }
        let Some(s) = walk.sequence else { return };
        let sequence = &self.sequences[s];
        for (i, &kernel) in launch.iter().enumerate() {
            if walk.lost {
                return;
            }
            if kernel.is_copy {
                // The next instruction run as a memory copy, in schedule order among them: copies
                // run beside the kernels (an async start's), so they keep a position of their own,
                // and move the walk only past instructions that launch no other kernel.
                let Some(&at) = sequence.copies.get(sequence.copies.partition_point(|&p| p < walk.next_copy)) else { continue };
                placements.insert(capture, kernel, sequence.runs[at]);
                walk.next_copy = at + 1;
                if at >= walk.next && sequence.next_kernel[walk.next] >= at {
                    walk.last_placed = Some(at);
                    walk.next = at + 1;
                }
                continue;
            }
            let Some(&(_, kind)) = self.home.get(&kernel.name) else {
                let call = match commands.get(i) {
                    // In node order a command is the next instruction that launches a kernel,
                    // when that is a custom-call; its later kernels go with it.
                    Some(true) => {
                        let next = sequence.next_kernel[walk.next];
                        walk.command = sequence.custom_call.get(next).copied().unwrap_or(false).then_some(next);
                        if let Some(call) = walk.command {
                            walk.last_placed = Some(call);
                            walk.next = call + 1;
                        }
                        walk.command
                    }
                    Some(false) => walk.command,
                    // In the order they ran: the custom-call after the last placed kernel, if one.
                    None => walk.last_placed.and_then(|placed| sequence.custom_call_after(placed)),
                };
                if let Some(call) = call {
                    placements.insert(capture, kernel, sequence.runs[call]);
                }
                continue;
            };
            // The named instruction itself when it is in this computation, else one identical to it.
            let alike = sequence.alike.get(&kind).map_or(&[][..], Vec::as_slice);
            let Some(&at) = alike.get(alike.partition_point(|&p| p < walk.next)) else {
                // Nothing of this kind is left ahead (a kernel of a nested loop's body, or one run
                // out of order): the rest of the launch keeps its names.
                walk.lost = true;
                return;
            };
            placements.insert(capture, kernel, sequence.runs[at]);
            walk.last_placed = Some(at);
            walk.next = at + 1;
        }
    }
}

/// Per position of a sequence of `len` and one past its end, the first position at or after it
/// that `skip` does not skip; `len` where there is none.
fn first_not_skipped(len: usize, skip: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut first = vec![len; len + 1];
    for p in (0..len).rev() {
        first[p] = if skip(p) { first[p + 1] } else { p };
    }
    first
}

/// Per position, the next position after it whose instruction launches anything (not
/// `launches_nothing`); the length where none does.
fn next_launching(launches_nothing: &[bool]) -> Vec<usize> {
    first_not_skipped(launches_nothing.len(), |p| launches_nothing[p]).split_off(1)
}

/// Per position and one past the end, the first position at or after it whose instruction may
/// launch a kernel other than a memory copy (neither `launches_nothing` nor `surely_copy`); the
/// length where none does.
fn next_kernel(launches_nothing: &[bool], surely_copy: &[bool]) -> Vec<usize> {
    first_not_skipped(launches_nothing.len(), |p| launches_nothing[p] || surely_copy[p])
}

/// An instruction's name without its `.N` suffix (`gemm_fusion_dot.13` → `gemm_fusion_dot`).
fn stem(name: &str) -> &str {
    match name.rsplit_once('.') {
        Some((stem, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => stem,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernels naming nothing go to the custom-call that launches next, unless another custom-call
    /// launches right after it (which of the two ran which kernel is not known).
    #[test]
    fn custom_call_after_a_placed_kernel() {
        // fusion, gte, custom-call, gte, fusion, custom-call, bitcast, custom-call
        let launches_nothing = [false, true, false, true, false, false, true, false];
        let sequence = Sequence {
            custom_call: vec![false, false, true, false, false, true, false, true],
            next_launching: next_launching(&launches_nothing),
            ..Sequence::default()
        };
        assert_eq!(sequence.next_launching, [2, 2, 4, 4, 5, 7, 7, 8]);
        assert_eq!(sequence.custom_call_after(0), Some(2));
        assert_eq!(sequence.custom_call_after(1), Some(2));
        assert_eq!(sequence.custom_call_after(2), None, "a fusion launches next");
        assert_eq!(sequence.custom_call_after(4), None, "two custom-calls in a row");
        assert_eq!(sequence.custom_call_after(5), Some(7));
        assert_eq!(sequence.custom_call_after(7), None, "the end");
    }

    /// A memory copy moves the kernels' position only past instructions that launch no other
    /// kernel: what launches nothing and what surely copies (not a `copy`, which may transpose).
    #[test]
    fn copies_and_what_launches_nothing_are_skipped_to_the_next_kernel() {
        // parameter, copy, fusion, async-start of a copy, bitcast
        let (launches_nothing, surely_copy) = ([true, false, false, false, true], [false, false, false, true, false]);
        assert_eq!(next_kernel(&launches_nothing, &surely_copy), [1, 1, 2, 5, 5, 5]);
        assert!(names_memory_copy("memcpy128") && names_memory_copy("MemcpyD2D"));
        assert!(!names_memory_copy("Memset 0") && !names_memory_copy("memc") && !names_memory_copy("gemm_fusion_dot_9"));
    }

    /// A concurrent launch in node order: kernels numbered after the last one that names an
    /// instruction fill the gaps before it, a group per gap: a memory copy alone, or kernels that
    /// ran back to back on one line (a child graph's cuBLAS workspace memset and its matmul).
    #[test]
    fn node_order_puts_traced_kernels_back_into_their_gaps() {
        let (fusion_a, fusion_b, memset, gemm, memcpy, attention) = (10, 11, 20, 21, 22, 23);
        let schedule = Schedule { sequences: Vec::new(), home: FxHashMap::from_iter([(fusion_a, (0, 0)), (fusion_b, (0, 1))]), runs_of_kind: Vec::new() };
        let kernel = |line: u32, start_ns: i64, node: u32, name: u32| Kernel {
            plane: 0,
            line,
            correlation: 7,
            node,
            graph: 3,
            start_ns,
            chunk: 0,
            index: node,
            name,
            is_copy: name == memcpy,
            library: [(memset, Library::Memset), (attention, Library::Cudnn)].into_iter().find(|&(n, _)| n == name).map_or(Library::Other, |(_, l)| l),
            program_id: 1,
            module: 2,
        };
        // Sorted by line, then start, as a launch is. Nodes 1 and 3 are the traced commands.
        let launch = [
            kernel(1, 0, 0, fusion_a),
            kernel(1, 10, 5, memset),
            kernel(1, 20, 6, gemm),
            kernel(1, 40, 7, memcpy),
            kernel(2, 5, 2, fusion_b),
            kernel(2, 30, 4, fusion_a),
        ];
        let in_node_order = |launch: &[Kernel]| {
            schedule.by_node(launch).and_then(|b| schedule.node_order(&b).map(|(order, commands)| (order.iter().map(|k| k.node).collect::<Vec<_>>(), commands)))
        };
        let order = |launch: &[Kernel]| in_node_order(launch).map(|(order, _)| order);
        let commands = in_node_order(&launch).map(|(_, commands)| commands);
        assert_eq!(commands, Some(vec![false, true, false, false, true, false]), "the memset begins the matmul's command, the copy its own");
        assert_eq!(order(&launch), Some(vec![0, 5, 6, 2, 7, 4]));
        // The first child graph numbers a node without a kernel first (as cuDNN's do): the
        // graph's own nodes still end at 5, where two gaps meet two groups.
        let mut later = launch.to_vec();
        for k in later.iter_mut().filter(|k| k.node >= 5) {
            k.node += 1;
        }
        assert_eq!(order(&later), Some(vec![0, 6, 7, 2, 8, 4]));
        // Another kernel ran between the memset and the matmul on their line: three groups for
        // two gaps, so which command ran which is unknown.
        let mut apart = launch.to_vec();
        apart.insert(2, kernel(1, 15, 3, fusion_b));
        assert_eq!(order(&apart), None, "node 3 is no longer a gap, and the groups outnumber the gaps");
        // A cuDNN call's kernel right after the matmul on its line: the library tells them apart.
        let mut back_to_back = launch.to_vec();
        back_to_back[3] = kernel(1, 40, 7, attention);
        assert_eq!(order(&back_to_back), Some(vec![0, 5, 6, 2, 7, 4]));
        let own = schedule.by_node(&apart).map(|b| schedule.own_node_order(b).0.iter().map(|k| k.node).collect::<Vec<_>>());
        assert_eq!(own, Some(vec![0, 2, 3, 4]), "the graph's own nodes are still walked in order");
        let mut unnumbered = launch.to_vec();
        unnumbered[4].node = NO_NODE;
        assert_eq!(order(&unnumbered), None);
        let mut twice = launch.to_vec();
        twice[5].node = 2;
        assert_eq!(order(&twice), None);
    }

    #[test]
    fn libraries() {
        assert_eq!(Library::of("Memset 0"), Library::Memset);
        assert_eq!(Library::of("void cudnn::fusion::convert_dq_to_16bits<true>(void const*)"), Library::Cudnn);
        assert_eq!(Library::of("cudnn_generated_fort_native_sdpa_sm90_flash_bprop"), Library::Cudnn);
        assert_eq!(Library::of("nvjet_sm90_tss_128x64_64x8_1x2_h_bz_TNT"), Library::Other);
        assert!(Library::Other.begins_another(Library::Memset) && Library::Cudnn.begins_another(Library::Other));
        assert!(!Library::Memset.begins_another(Library::Cudnn) && !Library::Cudnn.begins_another(Library::Cudnn));
    }

    #[test]
    fn stems() {
        assert_eq!(stem("gemm_fusion_dot.13"), "gemm_fusion_dot");
        assert_eq!(stem("wrapped_convert"), "wrapped_convert");
        assert_eq!(stem("fusion.3.clone"), "fusion.3.clone");
        assert_eq!(stem("custom-call."), "custom-call.");
    }
}
