//! What one time window of a part hands to the next: ops still open at its end, and the
//! totals folded across windows, so that a part derived window by window gives the rows
//! the whole part gives.

use super::{
    op_at, BTreeMap, CollectiveCarry, EventTotal, FxHashMap, GapCarry, GapTotal, HashMap, Intervals, Label, LineStep, LineStepKey, LocalStrings, Op, OpTotal,
    Totals, NO_STR,
};

/// The state a window of a group of planes ([`crate::model::TimeWindow`]) leaves to the
/// next: what an op or gap there needs of the ops before it.
#[derive(Default)]
pub(super) struct WindowCarry {
    pub(super) gaps: GapCarry,
    pub(super) collectives: CollectiveCarry,
    pub(super) totals: WindowTotals,
    /// The group's device steps start here in `Deriver::device_steps`.
    pub(super) first_device_step: Option<usize>,
    /// Per (host, device): merged intervals of all ops and of compute ops not yet credited
    /// to the group's device steps (those a later window's ops may still extend).
    pub(super) device_busy: FxHashMap<(u32, u32), (Intervals, Intervals)>,
    /// Per plane: the `XLA Modules` events so far, (start, end, module, program id) by start.
    pub(super) module_windows: HashMap<u32, Vec<(i64, i64, u32, i64)>>,
    /// Where each GPU graph launch's walk along its program's schedule stands.
    pub(super) graph_walks: crate::tables::command_buffers::Walks,
}

/// An op with the text of its part-local strings (`region_path`, `source`), to be carried
/// into a later part.
pub(super) type CarriedOp = (Op, Option<String>, Option<String>);

/// An op of a part as a [`CarriedOp`].
pub(super) fn carried_op(op: &Op, strings: &LocalStrings) -> CarriedOp {
    let text = |id: u32| if id == NO_STR { None } else { strings.get(id).map(str::to_string) };
    (op.clone(), text(op.region_path), text(op.source))
}

/// A [`CarriedOp`] as an op of this part: its strings interned in the part's.
pub(super) fn landed_op((mut op, region_path, source): CarriedOp, strings: &mut LocalStrings) -> Op {
    op.region_path = region_path.map_or(NO_STR, |v| strings.intern(v));
    op.source = source.map_or(NO_STR, |v| strings.intern(v));
    op
}

/// The totals tables of the windows of a group of planes, summed over its windows and
/// written with the last, so that each key has one row as when the planes are one part.
#[derive(Default)]
pub(super) struct WindowTotals {
    pub(super) events: BTreeMap<(u32, u32, u32, Option<&'static str>), EventTotal>,
    pub(super) ops: Vec<(OpTotal, CarriedOp)>,
    pub(super) op_index: FxHashMap<OpTotalKey, usize>,
    pub(super) gaps: Vec<(GapTotal, CarriedOp, CarriedOp)>,
    pub(super) gap_index: FxHashMap<GapTotalKey, usize>,
    pub(super) lines: Vec<LineStep>,
    pub(super) line_index: FxHashMap<LineStepKey, usize>,
}

/// Adds `row` to `rows` under `key`: merged into the row already there, or as a new one.
/// Returns the row's position in `rows`.
pub(super) fn fold_row<K: std::hash::Hash + Eq, R>(index: &mut FxHashMap<K, usize>, rows: &mut Vec<R>, key: K, row: R, merge: impl FnOnce(&mut R, R)) -> usize {
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
pub(super) type OpTotalKey = ((u32, u32, u32, u32, i64, u32), (Label, Option<Label>, u32, Option<String>, Label, u32, Option<String>));

/// A `gap_totals` key with its part-local string as text.
pub(super) type GapTotalKey = (u32, u32, u32, u32, u32, u32, Option<String>);

impl WindowTotals {
    /// Adds a window's totals (`ops` and `carried` are its ops, `strings` its strings).
    pub(super) fn fold(&mut self, ops: &[Op], carried: &[Op], strings: &LocalStrings, totals: Totals) {
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
    pub(super) fn finish(self, first: usize, carried: &mut Vec<Op>, strings: &mut LocalStrings) -> Totals {
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
