//! Time windows: a group of planes too large to decode whole is cut at event times into
//! windows of about `PROFQ_WINDOW_EVENTS` events, with the events each cut leaves open.

use super::{
    decode_events, decode_whole, encloses, event_span_ns, next_event_field, prepare_planes, push_chunks, read_event, release_read, window_events, Capture,
    HashMap, LineJob, OpenBefore, OpenEvent, PlaneRef, Release, Result, StatSkips, StatSlices, TimeWindow, WireError, CARRIED_TAG, EVENTS_PER_MARK,
};

/// Decodes `planes` (whole planes of one host's XSpace, as [`decode_planes`]) and hands
/// them to `on_part`: as one part, or, for planes of more than twice [`window_events`]
/// events whose lines are each in time order, a time window at a time. A window holds
/// the events that start in it; the events still open where it ends are carried into the
/// next ones as their lines' open parents ([`OpenBefore`]), their self times found
/// beforehand by a pass over the plane's times ([`plan_windows`]).
#[allow(clippy::too_many_arguments)]
pub fn decode_group<E>(
    planes: &[&PlaneRef],
    host: u32,
    start_epoch: Option<i64>,
    capture: &mut Capture,
    read: &Release<'_>,
    wire_err: &dyn Fn(WireError) -> E,
    on_part: &mut dyn FnMut(&mut Capture) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let (ctxs, jobs) = prepare_planes(planes, host, start_epoch, capture, read).map_err(wire_err)?;
    let total: usize = jobs.iter().map(|j| j.events.count).sum();
    let per_window = window_events();
    let too_large = total > 2 * per_window;
    let windows = if too_large { plan_windows(&jobs, total, per_window, read).map_err(wire_err)? } else { None };
    if too_large && windows.is_none() {
        let names: Vec<String> = planes.iter().map(|p| p.name.clone()).collect();
        capture.meta.quality_warnings.push(format!(
            "{} ({total} events) decoded whole, not in time windows: a line's events are out of time order in the file (or all start together), so memory grows with the plane",
            names.join(", ")
        ));
    }
    let Some((cut_times, line_cuts)) = windows else {
        decode_whole(planes, &jobs, &ctxs, capture, read).map_err(wire_err)?;
        return on_part(capture);
    };
    let job_of_line: HashMap<u32, usize> = jobs.iter().enumerate().map(|(j, job)| (job.line_index, j)).collect();
    let last = cut_times.len();
    // Per line: (kept index, event id) of its first event in each window that has any.
    let mut first_ids: Vec<Vec<(usize, i64)>> = vec![Vec::new(); jobs.len()];
    let mut released = vec![0usize; jobs.len()];
    for k in 0..=last {
        let ranges: Vec<std::ops::Range<usize>> = jobs
            .iter()
            .zip(&line_cuts)
            .map(|(job, cuts)| (if k == 0 { 0 } else { cuts.at[k - 1].0 })..(if k == last { job.events.count } else { cuts.at[k].0 }))
            .collect();
        let first_kept: Vec<usize> = line_cuts.iter().map(|cuts| if k == 0 { 0 } else { cuts.at[k - 1].1 }).collect();
        let mut open_before = OpenBefore::default();
        let mut carried = Vec::new();
        if k > 0 {
            for (j, (job, cuts)) in jobs.iter().zip(&line_cuts).enumerate() {
                if ranges[j].is_empty() || cuts.open[k - 1].is_empty() {
                    continue;
                }
                let open = cuts.open[k - 1].iter().map(|&(kept, end)| {
                    let ids = &first_ids[j];
                    let w = ids.partition_point(|&(first, _)| first <= kept) - 1;
                    carried.push(ids[w].1 + (kept - ids[w].0) as i64);
                    OpenEvent { end, parent: CARRIED_TAG | (carried.len() - 1) as u32 }
                });
                open_before.insert(job.line_index, open.collect());
            }
        }
        let mut chunks = decode_events(&jobs, &ranges, &ctxs, capture, &open_before).map_err(wire_err)?;
        // Each line's first event id in this window, and the self times of its events that
        // later windows nest under, found by the plan.
        let events_before = capture.meta.num_complete_events;
        let mut seen = vec![0usize; jobs.len()];
        let mut position = 0i64;
        for chunk in chunks.iter_mut() {
            let runs: Vec<(u32, std::ops::Range<usize>)> = chunk.line_runs().collect();
            for (line, run) in runs {
                let j = job_of_line[&line];
                let kept = first_kept[j] + seen[j];
                if seen[j] == 0 {
                    first_ids[j].push((kept, events_before + position));
                }
                for (&q, &self_ns) in line_cuts[j].open_self.range(kept..kept + run.len()) {
                    chunk.self_ns[run.start + (q - kept)] = self_ns;
                }
                seen[j] += run.len();
                position += run.len() as i64;
            }
        }
        push_chunks(capture, chunks);
        capture.carried_parents = carried;
        capture.window = Some(TimeWindow { last: k == last });
        // The window's bytes of each line are read: their pages go.
        for (j, job) in jobs.iter().enumerate() {
            release_read(job.bytes, &mut released[j], job.mark(ranges[j].end), true, read);
        }
        on_part(capture)?;
    }
    for plane in planes {
        read(plane.bytes);
    }
    Ok(())
}

/// Where one line's events are cut into windows.
pub(super) struct LineCuts {
    /// Per cut time: the index of the line's first event starting at or after it
    /// (aggregated events counted), and how many events are kept before it.
    pub(super) at: Vec<(usize, usize)>,
    /// Per cut time: the events open just before that first event, outermost first, as
    /// (kept index, end).
    pub(super) open: Vec<Vec<(usize, i64)>>,
    /// The final self time of every event open at some cut, by kept index.
    pub(super) open_self: std::collections::BTreeMap<usize, i64>,
}

/// Kept events of a line in file order: `each(index, start, end)` (ns, as decoded).
pub(super) fn walk_events(job: &LineJob, read: &Release<'_>, mut each: impl FnMut(usize, i64, i64)) -> Result<()> {
    let mut fields = job.fields_from(0)?;
    let mut released = 0;
    let mut stats = StatSlices::new();
    for e in 0..job.events.count {
        let (ev, off) = next_event_field(&mut fields)?;
        let head = read_event(ev, off, &mut stats, &StatSkips::ALL)?;
        if !head.aggregated {
            let (start, end) = event_span_ns(job.timestamp_ns, head.offset_ps, head.dur_ps);
            each(e, start, end);
        }
        if e % EVENTS_PER_MARK == 0 {
            release_read(job.bytes, &mut released, job.mark(e), false, read);
        }
    }
    release_read(job.bytes, &mut released, job.bytes.len(), true, read);
    Ok(())
}

/// Plans a plane's time windows of about `per_window` events: the cut times, and each
/// line's [`LineCuts`]. Two passes over the events' times, a line per worker: the first
/// samples starts (the cut times are their quantiles),
/// the second nests each line as [`nest_lines`] does to find what is open at each cut.
/// None when a line is not in (start, -dur) order: the plane is then decoded whole.
pub(super) fn plan_windows(jobs: &[LineJob], total: usize, per_window: usize, read: &Release<'_>) -> Result<Option<(Vec<i64>, Vec<LineCuts>)>> {
    // A start sampled every `every` events: at least 16 samples a window.
    let every = (per_window / 16).clamp(1, EVENTS_PER_MARK);
    let sampled = crate::work_queue::map_in_order(jobs.iter().collect(), |job: &LineJob| -> Result<Option<Vec<i64>>> {
        let (mut samples, mut kept, mut sorted, mut previous) = (Vec::new(), 0usize, true, (i64::MIN, i64::MIN));
        walk_events(job, read, |_, start, end| {
            sorted &= previous <= (start, start - end);
            previous = (start, start - end);
            if kept % every == 0 {
                samples.push(start);
            }
            kept += 1;
        })?;
        Ok(sorted.then_some(samples))
    });
    let mut samples = Vec::new();
    for s in sampled {
        match s? {
            Some(s) => samples.extend(s),
            None => return Ok(None),
        }
    }
    if samples.is_empty() {
        return Ok(None);
    }
    samples.sort_unstable();
    let windows = total.div_ceil(per_window);
    let mut cut_times: Vec<i64> = (1..windows).map(|c| samples[c * samples.len() / windows]).collect();
    cut_times.dedup();
    if cut_times.is_empty() {
        return Ok(None);
    }
    let cut_times_ref = &cut_times;
    let line_cuts = crate::work_queue::map_in_order(jobs.iter().collect(), |job: &LineJob| -> Result<LineCuts> {
        /// An open event of the nesting: kept index, end, self time so far, whether some cut saw it open.
        struct Open {
            kept: usize,
            end: i64,
            self_ns: i64,
            at_cut: bool,
        }
        let mut cuts = LineCuts { at: Vec::new(), open: Vec::new(), open_self: Default::default() };
        let mut stack: Vec<Open> = Vec::new();
        let mut kept = 0usize;
        let reach_cut = |cuts: &mut LineCuts, stack: &mut Vec<Open>, index: usize, kept: usize| {
            cuts.at.push((index, kept));
            cuts.open.push(stack.iter().map(|o| (o.kept, o.end)).collect());
            stack.iter_mut().for_each(|o| o.at_cut = true);
        };
        let close = |cuts: &mut LineCuts, o: Open| {
            if o.at_cut {
                cuts.open_self.insert(o.kept, o.self_ns.max(0));
            }
        };
        walk_events(job, read, |index, start, end| {
            while cuts.at.len() < cut_times_ref.len() && start >= cut_times_ref[cuts.at.len()] {
                reach_cut(&mut cuts, &mut stack, index, kept);
            }
            while stack.last().is_some_and(|top| !encloses(top.end, start, end)) {
                let top = stack.pop().expect("a top");
                close(&mut cuts, top);
            }
            let dur = end - start;
            if let Some(top) = stack.last_mut() {
                top.self_ns = top.self_ns.saturating_sub(dur);
            }
            stack.push(Open { kept, end, self_ns: dur, at_cut: false });
            kept += 1;
        })?;
        while cuts.at.len() < cut_times_ref.len() {
            reach_cut(&mut cuts, &mut stack, job.events.count, kept);
        }
        for o in stack.drain(..) {
            close(&mut cuts, o);
        }
        Ok(cuts)
    });
    Ok(Some((cut_times, line_cuts.into_iter().collect::<Result<_>>()?)))
}
