//! Summed rows: per (line, name) event totals, per op and per gap totals and per (line,
//! step) activity, so that analyses read sums instead of every event.

use super::{Capture, FxHashMap, Gap, Label, Op, NULL_I64};

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
    pub(super) fn push(&mut self, start_ns: i64, dur_ns: i64, self_ns: i64) {
        self.count += 1;
        self.dur_ns = self.dur_ns.saturating_add(dur_ns);
        self.self_ns = self.self_ns.saturating_add(self_ns);
        self.first_start_ns = self.first_start_ns.min(start_ns);
        self.last_end_ns = self.last_end_ns.max(start_ns.saturating_add(dur_ns));
    }

    /// Folds `other`'s spans into these.
    pub(super) fn add(&mut self, other: &SpanSums) {
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
    pub(super) fn add(&mut self, other: &OpTotal) {
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
    pub(super) fn add(&mut self, other: &GapTotal) {
        self.count += other.count;
        self.gap_ns = self.gap_ns.saturating_add(other.gap_ns);
        self.max_gap_ns = self.max_gap_ns.max(other.max_gap_ns);
    }
}

/// A (host, device, line, step) of `line_steps`, in pool ids (step NULL_I64 outside steps).
pub(super) type LineStepKey = (u32, u32, u32, i64);

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
    pub(super) fn keyed_by(op: &Op) -> LineStep {
        LineStep { host: op.host, device: op.device, line: op.line, step: op.step, ops: SpanSums::NONE, gap_count: 0, gap_ns: 0, max_gap_ns: NULL_I64 }
    }

    /// Adds one gap (under its marker op's key: the marker is counted as an op).
    pub(super) fn add_gap(&mut self, gap_ns: i64) {
        self.gap_count += 1;
        self.gap_ns = self.gap_ns.saturating_add(gap_ns);
        self.max_gap_ns = self.max_gap_ns.max(gap_ns);
    }

    pub(super) fn key(&self) -> LineStepKey {
        (self.host, self.device, self.line, self.step)
    }

    /// The key of `op`'s row (that of [`LineStep::keyed_by`]`(op)`).
    pub(super) fn key_of(op: &Op) -> LineStepKey {
        (op.host, op.device, op.line, op.step)
    }

    /// Folds `other`'s ops and gaps into these (the same key).
    pub(super) fn add(&mut self, other: &LineStep) {
        self.ops.add(&other.ops);
        self.gap_count += other.gap_count;
        self.gap_ns = self.gap_ns.saturating_add(other.gap_ns);
        self.max_gap_ns = self.max_gap_ns.max(other.max_gap_ns);
    }
}

/// `ops` summed per distinct op of a device (every column of `op_totals`' key).
pub(super) fn op_totals(ops: &[Op]) -> Vec<OpTotal> {
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
pub(super) fn gap_totals<'a>(gaps: &[Gap], op: impl Fn(usize) -> &'a Op) -> Vec<GapTotal> {
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
pub(super) fn line_steps<'a>(ops: &[Op], gaps: &[Gap], op: impl Fn(usize) -> &'a Op) -> Vec<LineStep> {
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
pub(super) fn group_rows<T, K: std::hash::Hash + Eq, R>(
    items: &[T],
    key: impl Fn(&T) -> K,
    start: impl Fn(usize) -> R,
    mut add: impl FnMut(&mut R, &T),
) -> Vec<R> {
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
pub(super) fn event_totals(capture: &Capture, ops: &[Op]) -> Vec<EventTotal> {
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
            let op_category_key = op_category.map_or(0, |c| c.id() + 1);
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
