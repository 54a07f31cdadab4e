//! Derives device ops, steps, collectives, gaps, regions and totals from a decoded
//! [`Capture`]: the semantic rules of profq, kept apart from Arrow plumbing.
//!
//! [`Deriver`] runs the stages over a part (or a time window of one) and carries what a
//! later window needs; each stage's rule lives in its own module:
//! * [`rows`]: the rows made (ops, steps, collectives, regions, gaps);
//! * [`rules`]: device-op lines, collective kinds, stall words, canonical names;
//! * [`scopes`]: scope paths and passes;
//! * [`ops`]: which events are ops, and what an op's identity decides;
//! * [`steps`], [`gaps`], [`collectives`]: those analyses;
//! * [`totals`]: summed rows the analyses read instead of every event;
//! * [`windows`]: what one window hands to the next.

mod collectives;
mod gaps;
mod ops;
pub mod rows;
pub mod rules;
pub mod scopes;
mod steps;
pub mod totals;
mod windows;

use collectives::{collectives_of, CollectiveCarry};
pub use collectives::{exposed_parts, hides_communication};
pub use gaps::GAP_LOOKAHEAD;
use gaps::{find_gaps, GapCarry};
pub use ops::{chunk_bases, pool_ids, prepare_strings, reads_arg, DecidedOnce, PoolIds};
use ops::{event_units, is_op_event, make_op, parse_module_event, LaunchScopes, LineRoles, OpCaches, OpContext, PROVENANCE_ARG_KEYS};
pub use rows::{Collective, Gap, Label, LocalStrings, Op, OptionalF64, Region, Step, LABEL_TEXTS};
use rules::is_device_work_category;
pub use rules::{canonical_name, collective_kind_of_name, collective_kind_of_opcode, is_setup_op, is_stall_name};
pub use scopes::scope_of;
use scopes::split_scope;
use steps::{assign_steps, collect_steps};
use totals::{event_totals, gap_totals, line_steps, op_totals, LineStepKey};
pub use totals::{EventTotal, GapTotal, LineStep, OpTotal, SpanSums};
use windows::{carried_op, landed_op, CarriedOp, WindowCarry};

use crate::intervals::{covered, merge_unions, uncovered, union, union_of_sorted, Intervals};
use crate::model::{Capture, CaptureMeta, EventChunk, HloInstr, PlaneKind, StringPool, TimeWindow, NO_PARENT, NO_STR, NULL_I64};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
pub(crate) struct FromOps {
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
pub(crate) struct Totals {
    op_totals: Vec<OpTotal>,
    gap_totals: Vec<GapTotal>,
    event_totals: Vec<EventTotal>,
    line_steps: Vec<LineStep>,
}

/// The tables made of a part's ops ([`crate::tables::part_tables`]), in the order both that
/// and [`PartDerived::table_rows`] give them.
pub const PART_TABLES: [&str; 7] = ["ops", "collectives", "gaps", "event_totals", "op_totals", "gap_totals", "line_steps"];

/// Op `k` of a part: one of its own `ops`, or after them one carried from an earlier window.
pub(crate) fn op_at<'a>(ops: &'a [Op], carried: &'a [Op], k: usize) -> &'a Op {
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
        self.note_hosts_with_device_ops(capture, &roles);
        let module_windows = self.module_windows(capture, &roles);
        let first_new_device_step = self.fold_steps(capture, &roles);
        crate::timing::stage_done("    derive: modules, steps", &mut clock);
        let op_events = self.op_events(capture, &roles);
        crate::timing::stage_done("    derive: ops found", &mut clock);
        let (mut ops, mut strings) = self.make_ops(capture, pool_ids, &roles, &module_windows, &chunk_base, &op_events, &mut clock);
        drop(op_events);
        self.note_devices(&ops);

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

    /// Notes the hosts whose device planes hold ops (their host events with `hlo_op` are then
    /// launches, not ops).
    fn note_hosts_with_device_ops(&mut self, capture: &Capture, roles: &LineRoles) {
        for &host in &capture.meta.hosts_with_device_ops {
            self.note_device_ops(host);
        }
        // Most lines hold neither device ops nor modules: their events are not looked at.
        'chunks: for chunk in &capture.chunks {
            for (line, events) in chunk.line_runs() {
                let plane = &capture.planes[capture.lines[line as usize].plane as usize];
                if roles.device_op[line as usize] && plane.kind == PlaneKind::Device && events.clone().any(|i| is_op_event(capture, roles, chunk, i)) {
                    self.note_device_ops(plane.host);
                    continue 'chunks;
                }
            }
        }
    }

    /// Module windows per plane, (start, end, module, program id) in start order, from
    /// `XLA Modules` lines: TPU ops carry no `hlo_module`.
    fn module_windows(&mut self, capture: &Capture, roles: &LineRoles) -> HashMap<u32, Vec<(i64, i64, u32, i64)>> {
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
        module_windows
    }

    /// Joins the part's steps to the run's; returns the index of its first device step.
    fn fold_steps(&mut self, capture: &Capture, roles: &LineRoles) -> usize {
        // The outermost annotation of a host step wins.
        let (part_host_steps, part_device_steps) = collect_steps(capture, roles);
        for s in part_host_steps {
            let key = (s.host, s.step);
            if self.host_steps.get(&key).is_none_or(|old| s.end_ns - s.start_ns > old.end_ns - old.start_ns) {
                self.host_steps.insert(key, s);
            }
        }
        let first_new_device_step = self.device_steps.len();
        self.device_steps.extend(part_device_steps);
        first_new_device_step
    }

    /// The part's op events, (chunk index, event index), a list per unit of events.
    fn op_events(&self, capture: &Capture, roles: &LineRoles) -> Vec<Vec<(u32, u32)>> {
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
        let units = event_units(capture);
        // Each unit's op events: (chunk index, event index).
        let line_kinds = &line_kinds;
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
    }

    /// The ops of `op_events`, made on the workers a unit each, and the strings they name.
    #[allow(clippy::too_many_arguments)]
    fn make_ops(
        &mut self,
        capture: &Capture,
        pool_ids: &PoolIds,
        roles: &LineRoles,
        module_windows: &HashMap<u32, Vec<(i64, i64, u32, i64)>>,
        chunk_base: &[i64],
        op_events: &[Vec<(u32, u32)>],
        clock: &mut std::time::Instant,
    ) -> (Vec<Op>, LocalStrings) {
        // The rows are written once, in place, by the workers that make them: no default rows
        // written (and their fresh pages faulted in) on this thread first.
        let op_count = op_events.iter().map(Vec::len).sum();
        let mut ops: Vec<Op> = Vec::with_capacity(op_count);
        let per_unit_strings: Vec<LocalStrings> = {
            let mut rest = &mut ops.spare_capacity_mut()[..op_count];
            let mut work = Vec::new();
            for events in op_events {
                let (slots, tail) = std::mem::take(&mut rest).split_at_mut(events.len());
                rest = tail;
                work.push((slots, events));
            }
            let launches = LaunchScopes::of(capture);
            let placements = crate::tables::command_buffers::place_buffered_kernels(capture, &roles.device_op, &mut self.windows.graph_walks);
            if capture.window.is_none_or(|w| w.last) {
                self.windows.graph_walks.clear();
            }
            let context = OpContext { capture, ids: pool_ids, roles, module_windows, launches: &launches };
            let placements = &placements;
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
        crate::timing::stage_done("    derive: ops made", clock);
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
        (ops, strings)
    }

    /// Adds the devices of `ops` to the run's, sorted.
    fn note_devices(&mut self, ops: &[Op]) {
        // Ops come a line at a time: a device is looked up when it changes.
        let mut last_device = None;
        for op in ops {
            if last_device != Some(op.device) {
                last_device = Some(op.device);
                if let Err(k) = self.devices.binary_search(&op.device) {
                    self.devices.insert(k, op.device);
                }
            }
        }
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
            let mut is_buffered =
                || *buffered.entry(hlo_op).or_insert_with(|| capture.str(hlo_op).is_some_and(crate::tables::command_buffers::names_command_buffer));
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
