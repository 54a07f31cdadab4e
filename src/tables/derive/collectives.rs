//! Collectives: each collective op with the time compute ops of its device overlapped it,
//! and the rule of exposed communication: a collective's time that no compute of its device
//! hides. The `collectives` table and the trace export's exposed-communication track both
//! follow it ([`hides_communication`], [`exposed_parts`]).

use super::{uncovered, union, Collective, FxHashMap, Op};

/// Whether an op's time hides communication on its device: compute, and not an async span
/// (an async op's span is in flight while other ops run, not device occupancy).
pub fn hides_communication(category: &str, async_span: bool) -> bool {
    category == "compute" && !async_span
}

/// The parts of a collective's `[start, end)` that the merged intervals of its device's
/// hiding ops ([`hides_communication`]) leave uncovered: its exposed time.
pub fn exposed_parts(hiding: &[(i64, i64)], start: i64, end: i64) -> Vec<(i64, i64)> {
    uncovered(hiding, start, end)
}

/// Collectives that ops of a later window may still overlap, and the compute intervals that
/// may still overlap a collective to come.
#[derive(Default)]
pub(super) struct CollectiveCarry {
    pub(super) pending: Vec<Collective>,
    /// Per (host, device): merged compute intervals of earlier windows.
    pub(super) compute: FxHashMap<(u32, u32), Vec<(i64, i64)>>,
}

/// The collective ops, each with the time the same device computed while it ran.
pub(super) fn collectives_of(ops: &[Op], carry: &mut CollectiveCarry, last_window: bool) -> Vec<Collective> {
    if last_window && carry.pending.is_empty() && ops.iter().all(|op| op.collective_kind.is_none()) {
        carry.compute.clear();
        return Vec::new();
    }
    let mut compute_by_device: FxHashMap<(u32, u32), Vec<(i64, i64)>> = std::mem::take(&mut carry.compute);
    for op in ops {
        if hides_communication(op.category.as_str(), op.async_span) {
            compute_by_device.entry((op.host, op.device)).or_default().push((op.start_ns, op.end_ns()));
        }
    }
    let compute_by_device: FxHashMap<_, _> = compute_by_device.into_iter().map(|(k, v)| (k, union(v))).collect();
    let mut collectives = std::mem::take(&mut carry.pending);
    collectives.extend(ops.iter().filter(|op| op.collective_kind.is_some()).map(|op| Collective { op: op.clone(), overlapped_ns: 0 }));
    for c in collectives.iter_mut() {
        let hiding = compute_by_device.get(&(c.op.host, c.op.device)).map_or(&[][..], Vec::as_slice);
        let exposed: i64 = exposed_parts(hiding, c.op.start_ns, c.op.end_ns()).iter().map(|(s, e)| e - s).sum();
        c.overlapped_ns = c.op.dur_ns - exposed;
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
