//! Steps: host step annotations and device `Steps` lines, and each op's step.

use super::{BTreeMap, Capture, HashMap, LineRoles, Op, PlaneKind, Step, NO_STR, NULL_I64};

/// Steps of the events in `capture`: host step annotations (the outermost event per (host,
/// step) carrying step_num) and device `Steps` lines.
pub(super) fn collect_steps(capture: &Capture, roles: &LineRoles) -> (Vec<Step>, Vec<Step>) {
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

pub(super) fn new_step(host: u32, device: u32, step: i64, name: u32, start_ns: i64, end_ns: i64, source: &'static str) -> Step {
    Step { host, device, step, name, start_ns, end_ns, source, busy_ns: 0, compute_ns: 0, communication_ns: 0, op_count: 0 }
}

/// Each op gets the step whose window contains its start: its device's `Steps` line first,
/// else its host's step annotations. An op that already has one kept it from its launch
/// ([`Launch`]).
pub(super) fn assign_steps(ops: &mut [Op], steps: &[&Step]) {
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
