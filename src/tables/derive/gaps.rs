//! Idle gaps on device-op lines: the time before an op no earlier op of the line covers,
//! attributed to the op that does the real work after it (the payload), past set-up ops.

use super::{is_setup_op, BTreeMap, Capture, CarriedOp, DecidedOnce, FxHashMap, Gap, Op};

/// What the gaps of a line need of the windows before.
#[derive(Default)]
pub(super) struct GapCarry {
    /// Per line: the latest end of its ops so far (the next op's gap is measured from it).
    pub(super) previous_end: FxHashMap<u32, i64>,
    /// Gaps after a setup marker whose lookahead ran past the end of their window, per line.
    pub(super) pending: BTreeMap<u32, Vec<PendingGap>>,
    /// The pending gaps' marker ops; a pending gap's `marker` indexes this.
    pub(super) markers: Vec<CarriedOp>,
}

/// A gap whose payload is not known yet: its marker (an op of the part's index space, see
/// [`PartDerived::op`]), and how far the lookahead got.
#[derive(Clone, Copy)]
pub(super) struct PendingGap {
    pub(super) marker: usize,
    pub(super) gap_start_ns: i64,
    pub(super) gap_ns: i64,
    pub(super) chain_end: i64,
    pub(super) looked: usize,
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
pub(super) fn find_gaps(capture: &Capture, ops: &[Op], carried: usize, carry: &mut GapCarry, last_window: bool) -> Vec<Gap> {
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
pub(super) enum Lookahead {
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
pub(super) fn look_ahead(ops: &[Op], candidates: &[usize], mut chain_end: i64, mut looked: usize, is_setup: &mut impl FnMut(usize) -> bool) -> Lookahead {
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
