//! Optimization candidates (reference §4.13), derived from a finished summary, plus
//! profq's own triggers for recompilation, transfers, launch-bound steps, idle devices and
//! stragglers (appended after the reference's, with their own candidate ids).

use super::doc::{Candidate, Summary};

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A cell as the summary's JSON shows it (`null` when absent).
fn shown<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_string(), |v| v.to_string())
}

/// Whether the profile is PyTorch's: its suggestions then name PyTorch's means
/// (torch.compile, pin_memory, CUDA graphs, DataLoader workers) rather than JAX's.
fn pytorch(s: &Summary) -> bool {
    s.profq_producer.as_ref().and_then(|p| p.framework.as_deref()) == Some("pytorch")
}

fn candidate(id: &str, title: &str, rationale: String, evidence: Vec<String>, suggestions: &[&str]) -> Candidate {
    Candidate { candidate_id: id.into(), title: title.into(), rationale, evidence, suggestions: suggestions.iter().map(|s| s.to_string()).collect() }
}

/// The candidates of summary `s`: the reference's triggers in its order (or its fallback when
/// none fires), then profq's.
pub fn optimization_candidates(s: &Summary) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = [communication_heavy(s), stall_heavy(s), single_hot_op(s), pre_op_gap(s), step_jitter(s)].into_iter().flatten().collect();
    if out.is_empty() {
        out.push(no_dominant_bottleneck(s));
    }
    out.extend([recompilation(s), transfers(s), launch_bound(s), device_idle(s), straggler(s), rank_straggler(s)].into_iter().flatten());
    out
}

/// Communication is a large share of the breakdown.
fn communication_heavy(s: &Summary) -> Option<Candidate> {
    let comm = s.time_breakdown.communication.share_of_total;
    if comm < 0.15 {
        return None;
    }
    let top = s.communication_ops.first().and_then(|c| c.collective.clone()).unwrap_or_else(|| "collectives".into());
    Some(candidate(
        "communication-heavy",
        "Communication appears dominant",
        format!("Communication accounts for {} of exclusive profiled duration.", pct(comm)),
        vec![format!("Communication share: {}", pct(comm)), format!("Top collective: {top}")],
        &[
            "Revisit sharding and layout to reduce the bytes each step communicates.",
            "Overlap collectives with compute (async collectives, latency-hiding scheduling).",
            "Inspect the all-reduce/all-gather call sites behind the top collective.",
        ],
    ))
}

/// Stalls are a large share of the breakdown.
fn stall_heavy(s: &Summary) -> Option<Candidate> {
    let stall = s.time_breakdown.stall.share_of_total;
    (stall >= 0.20).then(|| {
        candidate(
            "stall-heavy",
            "Stalls and waits are significant",
            format!("Stall time accounts for {} of exclusive profiled duration.", pct(stall)),
            vec![format!("Stall share: {}", pct(stall))],
            &["Look for waits and barriers on the critical path.", "Check the host input pipeline and blocking host calls."],
        )
    })
}

/// The breakdown's total, the denominator of an op's or a gap's share (1 when empty).
fn breakdown_total(s: &Summary) -> f64 {
    let total = s.time_breakdown.total_duration;
    if total > 0.0 {
        total
    } else {
        1.0
    }
}

/// The hottest op alone is a large share of the breakdown.
fn single_hot_op(s: &Summary) -> Option<Candidate> {
    let op = s.hot_ops.first()?;
    let (excl, d) = (op.exclusive_duration.unwrap_or(0.0), breakdown_total(s));
    if excl / d < 0.08 {
        return None;
    }
    let name = op.name.as_deref().unwrap_or("");
    Some(candidate(
        "single-hot-op",
        "A single op dominates",
        format!("{name} accounts for {} of exclusive profiled duration.", pct(excl / d)),
        vec![format!("Top op: {name}"), format!("Exclusive duration: {excl:.3}"), format!("Share: {}", pct(excl / d))],
        &["Tune the kernel: tiling, fusion, layout.", "Try algorithm variants for this op.", "Microbenchmark the op in isolation."],
    ))
}

/// The device idles long before one op.
fn pre_op_gap(s: &Summary) -> Option<Candidate> {
    let g = s.gap_before_ops.first()?;
    let (tot, max) = (g.total_gap_duration.unwrap_or(0.0), g.max_gap_duration.unwrap_or(0.0));
    let payload = g.payload_op.as_deref().unwrap_or("");
    if !(tot > 0.0 && (tot / breakdown_total(s) >= 0.05 || max >= 1000.0)) {
        return None;
    }
    Some(candidate(
        "pre-op-gap",
        "Idle gaps before an op",
        format!("The device idles {tot:.3} µs in total before {payload}."),
        vec![
            format!("Payload op with largest pre-gap: {payload}"),
            format!("Observed first op after gap (marker): {}", g.marker_op.as_deref().unwrap_or("")),
            format!("Total gap: {tot:.3}"),
            format!("Max gap: {max:.3}"),
            format!("Occurrences: {}", shown(g.count)),
        ],
        &["Find the upstream dependency the op waits for.", "Check host dispatch between the ops.", "Use region totals to find where the gap sits."],
    ))
}

/// Steady steps vary: p90 well above the median.
fn step_jitter(s: &Summary) -> Option<Candidate> {
    let steady = &s.step_time.steady_state_steps;
    let (count, median, p90) = (steady.count as f64, steady.median.unwrap_or(0.0), steady.p90.unwrap_or(0.0));
    (count >= 4.0 && median > 0.0 && p90 / median >= 1.4).then(|| {
        candidate(
            "step-jitter",
            "Step time jitter",
            format!("Steady-state p90 is {:.2}x the median.", p90 / median),
            vec![format!("Median: {median:.3}"), format!("P90: {p90:.3}"), format!("Ratio: {:.2}", p90 / median)],
            &["Correlate slow steps with host activity.", "Look for periodic checkpoint, eval or input stalls.", "Disable callbacks to test."],
        )
    })
}

/// What the reference says when none of its triggers fired.
fn no_dominant_bottleneck(s: &Summary) -> Candidate {
    let share = |k: &str| pct(s.time_breakdown.category(k).map_or(0.0, |c| c.share_of_total));
    candidate(
        "no-dominant-bottleneck",
        "No single dominant bottleneck",
        "No trigger fired: time is spread across categories and ops.".into(),
        vec![
            format!("Compute share: {}", share("compute")),
            format!("Communication share: {}", share("communication")),
            format!("Host share: {}", share("host")),
            format!("Stall share: {}", share("stall")),
        ],
        &["Start with the top 3 hot ops.", "Use a before/after comparison to measure each change."],
    )
}

/// Steps that compiled during the capture.
fn recompilation(s: &Summary) -> Option<Candidate> {
    let recompilation = s.profq_recompilation.clone().unwrap_or_default();
    let compiles = &recompilation.steps_with_compilation;
    if compiles.is_empty() {
        return None;
    }
    let steps: Vec<String> = compiles.iter().map(|c| shown(c.step)).collect();
    let worst = compiles.iter().map(|c| c.compile_duration.unwrap_or(0.0)).fold(0.0, f64::max);
    let (title, suggestions): (&str, &[&str]) = if pytorch(s) {
        (
            "torch.compile compiles inside training steps",
            &[
                "See why it recompiles: TORCH_LOGS=recompiles names the guard that failed.",
                "Mark dimensions that vary as dynamic (torch._dynamo.mark_dynamic), or pad them to a few sizes.",
                "Warm up every shape before timing.",
            ],
        )
    } else {
        (
            "XLA compiles inside training steps",
            &[
                "Pad or bucket input shapes so a jitted function sees few distinct shapes.",
                "Mark shape-determining arguments static only when they rarely change.",
                "Warm up every shape before timing.",
            ],
        )
    };
    Some(candidate(
        "recompilation",
        title,
        format!("{} step(s) compiled during the capture; the longest compile took {worst:.3} µs.", compiles.len()),
        vec![
            format!("Steps with compilation: {}", steps.join(", ")),
            format!("Modules with several programs: {}", recompilation.modules_with_several_programs.len()),
        ],
        suggestions,
    ))
}

/// Host-device transfers are a noticeable share of steady step time.
fn transfers(s: &Summary) -> Option<Candidate> {
    let steady = &s.step_time.steady_state_steps;
    let transfer_us: f64 = s.profq_transfers.iter().map(|t| t.total_duration.unwrap_or(0.0)).sum();
    let steady_total = steady.mean.unwrap_or(0.0) * steady.count as f64;
    (steady_total > 0.0 && transfer_us / steady_total >= 0.05).then(|| {
        candidate(
            "host-device-transfers",
            "Host-device transfers take noticeable time",
            format!("Transfers add up to {} of steady step time.", pct(transfer_us / steady_total)),
            vec![format!("Transfer time: {transfer_us:.3}")],
            if pytorch(s) {
                &[
                    "Load batches into pinned memory (DataLoader pin_memory=True) and copy them with .to(device, non_blocking=True).",
                    "Keep tensors on the GPU between steps; avoid .item(), .cpu() and .numpy() in the step loop.",
                    "Prefetch the next batch on a side CUDA stream.",
                ]
            } else {
                &[
                    "Keep data on device between steps.",
                    "Prefetch inputs asynchronously (double-buffer device_put).",
                    "Avoid device_get / np.asarray in the step loop.",
                ]
            },
        )
    })
}

/// Steady steps whose many tiny ops leave the device mostly idle.
fn launch_bound(s: &Summary) -> Option<Candidate> {
    let tiny = s.profq_tiny_kernels.clone().unwrap_or_default();
    (tiny.launch_bound_steps > 0).then(|| {
        candidate(
            "launch-bound",
            "Many tiny ops, device mostly idle",
            format!("{} of {} steady steps are launch-bound.", tiny.launch_bound_steps, tiny.steady_steps),
            vec![format!("Ops per step: {:.1}", tiny.avg_ops_per_step.unwrap_or(0.0)), format!("Tiny op share: {}", pct(tiny.avg_tiny_share.unwrap_or(0.0)))],
            if pytorch(s) {
                &[
                    "Compile the model with torch.compile to fuse small kernels.",
                    "Replay the step as a CUDA graph (torch.compile mode=\"reduce-overhead\", or torch.cuda.graphs) so launches cost nothing.",
                ]
            } else {
                &["Fuse the step into one jit (eager ops dispatch one by one).", "Batch small ops; avoid Python loops over arrays."]
            },
        )
    })
}

/// Devices idle for much of each steady step.
fn device_idle(s: &Summary) -> Option<Candidate> {
    let idle = s.profq_device_idle.as_ref().and_then(|d| d.avg_idle_share).unwrap_or(0.0);
    (idle >= 0.3).then(|| {
        candidate(
            "device-idle",
            "Devices idle for much of the step",
            format!("On average {} of each steady step runs no device op.", pct(idle)),
            vec![format!("Average idle share: {}", pct(idle))],
            if pytorch(s) {
                &[
                    "Feed the GPU faster: more DataLoader workers (num_workers), persistent_workers and prefetch_factor.",
                    "Overlap host work with device execution; avoid synchronising calls (.item(), torch.cuda.synchronize) in the step.",
                ]
            } else {
                &["Profile the host side of the step (input pipeline, Python, logging).", "Overlap host work with device execution."]
            },
        )
    })
}

/// A device that finishes its steps well after the fastest one.
fn straggler(s: &Summary) -> Option<Candidate> {
    let worst = s.profq_per_device.first()?;
    let median = s.step_time.steady_state_steps.median.unwrap_or(0.0);
    let lag = worst.avg_lag_duration.unwrap_or(0.0);
    let device = worst.device.as_deref().unwrap_or("");
    (median > 0.0 && lag / median >= 0.05 && s.profq_per_device.len() > 1).then(|| {
        candidate(
            "straggler",
            "A device finishes its steps late",
            format!("{device} finishes on average {lag:.3} µs after the fastest device."),
            vec![format!("Straggler: {device}"), format!("Times slowest: {}", shown(worst.times_slowest))],
            &["Check load balance of the sharding.", "Look for host-side interference on that device's host."],
        )
    })
}

/// A rank that arrives last at most of the collectives it shares with the other ranks.
fn rank_straggler(s: &Summary) -> Option<Candidate> {
    let worst = s.profq_straggler_ranks.first()?;
    let (instances, last) = (worst.instances.unwrap_or(0), worst.times_last.unwrap_or(0));
    let rank = shown(worst.rank);
    (instances >= 2 && 2 * last >= instances && worst.lateness_duration.unwrap_or(0.0) > 0.0).then(|| {
        candidate(
            "rank-straggler",
            "One rank holds up the collectives",
            format!("Rank {rank} arrived last at {last} of {instances} collectives, {:.3} µs late in all.", worst.lateness_duration.unwrap_or(0.0)),
            vec![format!("Straggler rank: {rank} ({})", worst.host.as_deref().unwrap_or("")), format!("Times last: {last} of {instances}")],
            &[
                "Compare that rank's step with the others': input loading, host threads, a slower or throttled device.",
                "Balance the work per rank (batch sizes, sequence lengths, uneven shards).",
            ],
        )
    })
}
