//! The markdown root-cause report of a `profile_summary.v1` document (reference §7, plus
//! profq's sections). Deterministic: the same summary gives the same bytes.

// A cell of the summary (typed) or of a comparison (JSON) goes through JSON, so that every
// helper formats both alike.
use crate::summary::doc::{json_of as cell, DeviceIdle, Summary, TinyKernels};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

fn dur<T: Serialize + ?Sized>(v: &T) -> String {
    cell(v).as_f64().map_or("n/a".into(), |x| format!("{x:.3}"))
}

fn pct<T: Serialize + ?Sized>(v: &T) -> String {
    cell(v).as_f64().map_or("n/a".into(), |x| format!("{:.2}%", x * 100.0))
}

fn sci<T: Serialize + ?Sized>(v: &T) -> String {
    cell(v).as_f64().map_or("n/a".into(), |x| format!("{x:.3e}"))
}

fn plain<T: Serialize + ?Sized>(v: &T) -> String {
    match cell(v) {
        Value::Null => "n/a".into(),
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn name<T: Serialize + ?Sized>(v: &T) -> String {
    match cell(v).as_str() {
        Some(s) if !s.is_empty() => format!("`{}`", s.replace('`', "\\`").replace('|', "\\|")),
        _ => "n/a".into(),
    }
}

fn known<T: Serialize + ?Sized>(v: &T) -> String {
    match cell(v) {
        Value::Null => "unknown".into(),
        other => plain(&other),
    }
}

fn rows(v: &Value, k: usize) -> Vec<&Value> {
    v.as_array().map(|a| a.iter().take(k).collect()).unwrap_or_default()
}

fn table(out: &mut String, header: &[&str], body: Vec<Vec<String>>) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}|", header.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in body {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
}

/// The report of summary `s`, each table cut at `top_k` rows: one section per function below,
/// in the reference's order, then profq's own.
pub fn markdown(s: &Summary, top_k: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Profile Report ({})\n", plain(&s.schema_version));
    run_metadata(&mut o, s);
    provenance(&mut o, s);
    overview(&mut o, s);
    step_time(&mut o, s, top_k);
    breakdown(&mut o, s);
    regions(&mut o, s, top_k);
    hot_ops(&mut o, s, top_k);
    families(&mut o, s, top_k);
    collectives(&mut o, s, top_k);
    gaps(&mut o, s, top_k);
    gap_contexts(&mut o, s, top_k);
    passes(&mut o, s, top_k);
    recompilation(&mut o, s, top_k);
    transfers(&mut o, s, top_k);
    launch_and_idle(&mut o, s);
    skew(&mut o, s, top_k);
    candidates(&mut o, s);
    let trimmed = o.trim_end().to_string();
    trimmed + "\n"
}

/// The run, where it came from and when.
fn run_metadata(o: &mut String, s: &Summary) {
    let m = &s.run_metadata;
    let _ = writeln!(o, "## Run Metadata\n");
    for (label, value) in
        [("Run", &m.run_id), ("Artifact", &m.artifact_ref), ("Hardware", &m.hardware_type), ("Topology", &m.mesh_or_topology), ("Git SHA", &m.git_sha)]
    {
        let _ = writeln!(o, "- {label}: {}", known(value));
    }
    let _ = writeln!(o, "- Generated At (UTC): {}\n", known(&s.generated_at_utc));
}

/// The trace's digest and the run ids it names.
fn provenance(o: &mut String, s: &Summary) {
    let p = &s.trace_provenance;
    let _ = writeln!(o, "## Trace Provenance\n");
    let _ = writeln!(o, "- Trace SHA256: {}", known(&p.trace_sha256));
    let ids: Vec<String> = p.run_ids.iter().take(8).map(plain).collect();
    let _ = writeln!(o, "- Observed run_ids: {}\n", if ids.is_empty() { "none".into() } else { ids.join(", ") });
}

/// Event counts and quality warnings.
fn overview(o: &mut String, s: &Summary) {
    let t = &s.trace_overview;
    let _ = writeln!(o, "## Trace Overview\n");
    let _ = writeln!(o, "- Complete events: {}", plain(&t.num_complete_events));
    let _ = writeln!(o, "- Total events: {}", plain(&t.num_events_total));
    let _ = writeln!(o, "- Processes: {}", plain(&t.num_processes));
    let _ = writeln!(o, "- Threads: {}", plain(&t.num_threads));
    let _ = writeln!(o, "- Suspected truncation: {}", if t.suspected_truncation { "yes" } else { "no" });
    if t.quality_warnings.is_empty() {
        let _ = writeln!(o, "- Quality warnings: none");
    } else {
        let _ = writeln!(o, "- Quality warnings:");
        for w in &t.quality_warnings {
            let _ = writeln!(o, "  - {w}");
        }
    }
    o.push('\n');
}

/// Steady-state step time, and the step classes.
fn step_time(o: &mut String, s: &Summary, k: usize) {
    let st = &s.step_time.steady_state_steps;
    let _ = writeln!(o, "## Step Time (Steady State)\n");
    let _ = writeln!(o, "- Steps counted: {}", st.count);
    let _ = writeln!(o, "- Median: {}", dur(&st.median));
    let _ = writeln!(o, "- P90: {}", dur(&st.p90));
    let _ = writeln!(o, "- Mean: {}\n", dur(&st.mean));

    let classes = &s.step_time.classes[..k.min(s.step_time.classes.len())];
    if !classes.is_empty() {
        let _ = writeln!(o, "## Step Classes\n");
        table(
            o,
            &["Class", "Count", "Fraction", "Median", "P90", "Representative Step", "Periodicity"],
            classes
                .iter()
                .map(|c| {
                    vec![
                        plain(&c.name),
                        plain(&c.count),
                        pct(&c.fraction_of_steady),
                        dur(&c.duration_stats.median),
                        dur(&c.duration_stats.p90),
                        plain(&c.representative_step),
                        plain(&c.periodicity),
                    ]
                })
                .collect(),
        );
    }
}

/// The time breakdown by category.
fn breakdown(o: &mut String, s: &Summary) {
    let b = &s.time_breakdown;
    let _ = writeln!(o, "## Time Breakdown (`{}`)\n", plain(&b.duration_basis));
    table(
        o,
        &["Category", "Duration", "Share"],
        [("Compute", &b.compute), ("Communication", &b.communication), ("Host", &b.host), ("Stall", &b.stall), ("Other", &b.other)]
            .iter()
            .map(|(label, c)| vec![label.to_string(), dur(&c.total_duration), pct(&c.share_of_total)])
            .collect(),
    );
}

/// Named-scope regions, with shares of their root.
fn regions(o: &mut String, s: &Summary, k: usize) {
    let regions = &s.hierarchical_regions;
    let _ = writeln!(o, "## Hierarchical Regions\n");
    table(
        o,
        &["Region Path", "Depth", "Count", "Inclusive", "Inclusive %", "Exclusive", "Exclusive %"],
        regions
            .iter()
            .take(k)
            .map(|r| {
                let total = crate::summary::region_root_total(regions, &r.path);
                let share = |d: Option<f64>| (total > 0.0).then(|| d.unwrap_or(0.0) / total);
                vec![
                    name(&r.path),
                    plain(&r.depth),
                    plain(&r.count),
                    dur(&r.inclusive_duration),
                    pct(&share(r.inclusive_duration)),
                    dur(&r.exclusive_duration),
                    pct(&share(r.exclusive_duration)),
                ]
            })
            .collect(),
    );
}

/// The hottest ops by exclusive time.
fn hot_ops(o: &mut String, s: &Summary, k: usize) {
    let _ = writeln!(o, "## Top Ops\n");
    table(
        o,
        &["Op", "Canonical", "Category", "Count", "Exclusive", "Avg", "Shape Signature", "HLO/TF Path"],
        s.hot_ops
            .iter()
            .take(k)
            .map(|h| {
                vec![
                    name(&h.name),
                    name(&h.canonical_name),
                    plain(&h.category),
                    plain(&h.count),
                    dur(&h.exclusive_duration),
                    dur(&h.avg_duration),
                    name(&h.shape_signature),
                    name(&h.tf_op_path),
                ]
            })
            .collect(),
    );
}

/// Ops grouped by semantic family.
fn families(o: &mut String, s: &Summary, k: usize) {
    let _ = writeln!(o, "## Semantic Families\n");
    let _ = writeln!(o, "_FLOP-proxy metrics are relative heuristics, not MFU. Families cover every op, not only the top ops._\n");
    table(
        o,
        &["Family", "Count", "Exclusive", "Share", "Avg Exclusive", "FLOP Proxy Total", "Time/FLOP Proxy", "Example Op"],
        s.semantic_families
            .iter()
            .take(k)
            .map(|f| {
                vec![
                    plain(&f.family),
                    plain(&f.count),
                    dur(&f.exclusive_duration),
                    pct(&f.share_of_total),
                    dur(&f.avg_exclusive_duration),
                    sci(&f.flop_proxy_total),
                    sci(&f.time_per_flop_proxy),
                    name(&f.example_op),
                ]
            })
            .collect(),
    );
}

/// Collectives by kind, with exposed time and bandwidth.
fn collectives(o: &mut String, s: &Summary, k: usize) {
    let _ = writeln!(o, "## Communication Collectives\n");
    table(
        o,
        &["Collective", "Count", "Total", "Avg", "Exposed", "Exposed %", "GB/s"],
        s.profq_collectives
            .iter()
            .take(k)
            .map(|c| {
                vec![
                    plain(&c.collective),
                    plain(&c.count),
                    dur(&c.total_duration),
                    dur(&c.total_duration.zip(c.count).map(|(t, n)| t / n as f64)),
                    dur(&c.exposed_duration),
                    pct(&c.exposed_share),
                    dur(&c.gbytes_per_s),
                ]
            })
            .collect(),
    );
}

/// Gaps before ops, by payload op.
fn gaps(o: &mut String, s: &Summary, k: usize) {
    let _ = writeln!(o, "## Pre-Op Gaps\n");
    table(
        o,
        &["Payload Op", "Marker Op", "Count", "Total Gap", "Max Gap", "Avg Gap"],
        s.gap_before_ops
            .iter()
            .take(k)
            .map(|g| {
                vec![name(&g.payload_op), name(&g.marker_op), plain(&g.count), dur(&g.total_gap_duration), dur(&g.max_gap_duration), dur(&g.avg_gap_duration)]
            })
            .collect(),
    );
}

/// Gap contexts re-aggregated by region.
fn gap_contexts(o: &mut String, s: &Summary, k: usize) {
    let mut by_region: std::collections::BTreeMap<String, (i64, f64, std::collections::BTreeMap<String, i64>)> = Default::default();
    for c in &s.gap_region_contexts {
        let e = by_region.entry(plain(&c.region_path)).or_default();
        let n = c.count.unwrap_or(0);
        e.0 += n;
        e.1 += c.total_gap_duration.unwrap_or(0.0);
        *e.2.entry(plain(&c.op_name)).or_default() += n;
    }
    let mut regions_by_gap: Vec<_> = by_region.into_iter().collect();
    regions_by_gap.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    let _ = writeln!(o, "## Gap Context (Region-First)\n");
    table(
        o,
        &["Region Path", "Count", "Total Gap", "Avg Gap", "Top Payload Ops"],
        regions_by_gap
            .iter()
            .take(k)
            .map(|(path, (n, total, ops))| {
                let mut top: Vec<(&String, &i64)> = ops.iter().collect();
                top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                let names: Vec<String> = top.iter().take(3).map(|(o, _)| o.to_string()).collect();
                vec![name(path), n.to_string(), format!("{total:.3}"), format!("{:.3}", if *n > 0 { total / *n as f64 } else { 0.0 }), names.join(", ")]
            })
            .collect(),
    );
}

/// Regions by pass (profq's sections start here).
fn passes(o: &mut String, s: &Summary, k: usize) {
    let _ = writeln!(o, "## Regions by Pass\n");
    table(
        o,
        &["Pass", "Region Path", "Depth", "Count", "Inclusive", "Share of Root"],
        s.profq_regions_by_pass
            .iter()
            .take(k)
            .map(|r| vec![plain(&r.pass), name(&r.path), plain(&r.depth), plain(&r.count), dur(&r.inclusive_duration), pct(&r.inclusive_share)])
            .collect(),
    );
}

/// Compilation inside steps, and modules run as several programs.
fn recompilation(o: &mut String, s: &Summary, k: usize) {
    let rc = s.profq_recompilation.clone().unwrap_or_default();
    let _ = writeln!(o, "## Recompilation\n");
    let compiles = &rc.steps_with_compilation[..k.min(rc.steps_with_compilation.len())];
    if compiles.is_empty() {
        let _ = writeln!(o, "No compilation inside steps.\n");
    } else {
        table(
            o,
            &["Step", "Compile Time", "Share of Step", "Events", "Example"],
            compiles
                .iter()
                .map(|c| vec![plain(&c.step), dur(&c.compile_duration), pct(&c.compile_share_of_step), plain(&c.compile_events), name(&c.example)])
                .collect(),
        );
    }
    for m in rc.modules_with_several_programs.iter().take(k) {
        let _ = writeln!(o, "- {} ran as {} programs (first steps: {})", name(&m.hlo_module), plain(&m.programs), plain(&m.first_steps));
    }
}

/// Host-device transfers by direction.
fn transfers(o: &mut String, s: &Summary, k: usize) {
    let _ = writeln!(o, "\n## Host-Device Transfers\n");
    table(
        o,
        &["Direction", "On Device", "Count", "Total", "Example"],
        s.profq_transfers
            .iter()
            .take(k)
            .map(|t| vec![plain(&t.direction), plain(&t.on_device), plain(&t.count), dur(&t.total_duration), name(&t.example)])
            .collect(),
    );
}

/// Launch-bound steps and device idle time.
fn launch_and_idle(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "## Launch-Bound Steps and Idle Devices\n");
    let (tk, idle) = (&s.profq_tiny_kernels, &s.profq_device_idle);
    let of_tiny = |f: fn(&TinyKernels) -> Value| tk.as_ref().map_or(Value::Null, f);
    let of_idle = |f: fn(&DeviceIdle) -> Value| idle.as_ref().map_or(Value::Null, f);
    let _ = writeln!(o, "- Launch-bound steady steps: {} of {}", plain(&of_tiny(|t| cell(&t.launch_bound_steps))), plain(&of_tiny(|t| cell(&t.steady_steps))));
    let _ = writeln!(
        o,
        "- Ops per step: {}; tiny (< {} µs) share: {}",
        dur(&of_tiny(|t| cell(&t.avg_ops_per_step))),
        plain(&of_tiny(|t| cell(&t.tiny_threshold_us))),
        pct(&of_tiny(|t| cell(&t.avg_tiny_share)))
    );
    let _ = writeln!(
        o,
        "- Average device idle share of a steady step: {} (max {})\n",
        pct(&of_idle(|d| cell(&d.avg_idle_share))),
        pct(&of_idle(|d| cell(&d.max_idle_share)))
    );
}

/// Per-device step skew.
fn skew(o: &mut String, s: &Summary, k: usize) {
    let _ = writeln!(o, "## Per-Device Step Skew\n");
    table(
        o,
        &["Host", "Device", "Steps", "Avg Active", "Avg Lag", "Max Lag", "Times Slowest"],
        s.profq_per_device
            .iter()
            .take(k)
            .map(|d| {
                vec![
                    plain(&d.host),
                    plain(&d.device),
                    plain(&d.steps),
                    dur(&d.avg_active_duration),
                    dur(&d.avg_lag_duration),
                    dur(&d.max_lag_duration),
                    plain(&d.times_slowest),
                ]
            })
            .collect(),
    );
}

/// What to try next.
fn candidates(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "## Optimization Candidates\n");
    for c in &s.optimization_candidates {
        let _ = writeln!(o, "### {}\n", c.title);
        let _ = writeln!(o, "{}\n", c.rationale);
        let _ = writeln!(o, "Evidence:");
        for e in &c.evidence {
            let _ = writeln!(o, "- {e}");
        }
        let _ = writeln!(o, "\nSuggestions:");
        for e in &c.suggestions {
            let _ = writeln!(o, "- {e}");
        }
        o.push('\n');
    }
}

/// The markdown report of a comparison (profq compare --format md, bundle's compare.md).
pub fn comparison_markdown(c: &Value, top_k: usize) -> String {
    let k = top_k;
    let mut o = String::new();
    let _ = writeln!(o, "# Profile Comparison\n");
    let _ = writeln!(o, "- Before: {}", known(&c["before_source"]));
    let _ = writeln!(o, "- After: {}", known(&c["after_source"]));
    let _ = writeln!(o, "- Comparison level: {}\n", known(&c["profq_comparison_level"]));
    let p = &c["provenance_checks"];
    let _ = writeln!(o, "## Provenance: {}\n", plain(&p["status"]));
    for m in rows(&p["messages"], usize::MAX) {
        let _ = writeln!(o, "- {}", plain(m));
    }
    let st = &c["step_time"];
    let _ = writeln!(o, "\n## Step Time (Steady State)\n");
    table(
        &mut o,
        &["Metric", "Before", "After", "Delta"],
        vec![
            vec!["Median".into(), dur(&st["steady_state_median_before"]), dur(&st["steady_state_median_after"]), dur(&st["steady_state_median_delta"])],
            vec!["P90".into(), dur(&st["steady_state_p90_before"]), dur(&st["steady_state_p90_after"]), dur(&st["steady_state_p90_delta"])],
        ],
    );
    let n = &c["profq_step_noise"];
    if n.is_object() {
        let _ = writeln!(
            o,
            "Verdict: **{}** (median delta {}, 95% CI [{}, {}], Mann-Whitney p = {}; {} vs {} steady steps)\n",
            plain(&n["verdict"]),
            dur(&n["median_delta"]),
            dur(&n["ci95_low"]),
            dur(&n["ci95_high"]),
            dur(&n["mann_whitney_p"]),
            plain(&n["n_before"]),
            plain(&n["n_after"])
        );
    }
    let _ = writeln!(o, "## Time Breakdown Share Delta\n");
    let sd = &c["time_breakdown_share_delta"];
    table(
        &mut o,
        &["Category", "Share Delta"],
        ["compute", "communication", "host", "stall", "other"].iter().map(|k| vec![k.to_string(), pct(&sd[*k])]).collect(),
    );
    for (title, key) in [("Regressed Ops", "regressed_ops"), ("Improved Ops", "improved_ops")] {
        let _ = writeln!(o, "## {title}\n");
        table(
            &mut o,
            &["Op", "Before", "After", "Delta"],
            rows(&c[key], k).iter().map(|r| vec![name(&r["name"]), dur(&r["before"]), dur(&r["after"]), dur(&r["delta"])]).collect(),
        );
    }
    let ops = &c["profq_ops"];
    if ops.is_object() {
        for (title, key) in [("Ops That Disappeared", "disappeared"), ("Ops That Appeared", "appeared")] {
            let list = rows(&ops[key], usize::MAX);
            let _ = writeln!(o, "## {title} ({})\n", list.len());
            table(
                &mut o,
                &["Op", "Scope", "Per Step Before", "Per Step After"],
                list.iter()
                    .take(k)
                    .map(|r| {
                        vec![
                            name(if r["name_before"].is_null() { &r["name_after"] } else { &r["name_before"] }),
                            name(&r["scope_path"]),
                            dur(&r["self_before_us"]),
                            dur(&r["self_after_us"]),
                        ]
                    })
                    .collect(),
            );
        }
        let _ = writeln!(o, "## Regions (per step)\n");
        table(
            &mut o,
            &["Pass", "Region", "Before", "After", "Delta", "Delta %"],
            rows(&c["profq_regions"], k)
                .iter()
                .map(|r| {
                    vec![
                        plain(&r["pass"]),
                        name(&r["path"]),
                        dur(&r["before_us"]),
                        dur(&r["after_us"]),
                        dur(&r["delta_us"]),
                        r["delta_pct"].as_f64().map_or("n/a".into(), |v| format!("{v:.2}%")),
                    ]
                })
                .collect(),
        );
    }
    let _ = writeln!(o, "## Semantic Families\n");
    table(
        &mut o,
        &["Family", "Before", "After", "Delta", "Regression %"],
        rows(&c["semantic_family_delta"], k)
            .iter()
            .map(|r| {
                vec![
                    plain(&r["family"]),
                    dur(&r["exclusive_before"]),
                    dur(&r["exclusive_after"]),
                    dur(&r["exclusive_duration_delta"]),
                    r["exclusive_regression_pct"].as_f64().map_or("n/a".into(), |v| format!("{v:.2}%")),
                ]
            })
            .collect(),
    );
    o.trim_end().to_string() + "\n"
}
