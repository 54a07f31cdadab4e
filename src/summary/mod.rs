//! Summary: one run → a `profile_summary.v1` JSON, computed by the named queries.
//!
//! Keys, units (µs) and defaults are those of the reference tool
//! (`../shared/reference/profile_summary_v1.md` §4); where profq computes a key
//! differently on purpose, `docs/profile_summary_v1.md` says how and why. profq-only
//! content lives under new top-level keys (listed in [`PROFQ_KEYS`]).

pub mod ask;
pub mod candidates;
pub mod doc;
pub mod from_rows;
pub mod query;
pub mod steps;
pub mod timeline;

use crate::engine::ahead::{Prepared, Statement};
use crate::engine::analyst::{bind, key, Analyst, QueryCall};
use crate::engine::rows::{rows, Row};
use crate::engine::{Engine, QueryError};
use datafusion::arrow::record_batch::RecordBatch;
use doc::{
    CategoryTime, DeviceIdle, Producer, Recompilation, Region, RunMetadata, StepCompilation, StepRow, StepTime, Summary, TimeBreakdown, TinyKernels,
    TraceOverview, TraceProvenance,
};
use from_rows::{each, Cells, FromRow};
use serde_json::Value;
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: &str = "profile_summary.v1";

/// Top-level keys profq adds to the reference schema.
pub const PROFQ_KEYS: &[&str] = &[
    "profq_collectives",
    "profq_device_idle",
    "profq_per_device",
    "profq_per_host",
    "profq_producer",
    "profq_recompilation",
    "profq_regions_by_pass",
    "profq_steps",
    "profq_straggler_ranks",
    "profq_tiny_kernels",
    "profq_transfers",
    "profq_version",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BreakdownMode {
    #[value(name = "exclusive_per_track")]
    ExclusivePerTrack,
    #[value(name = "exclusive_global")]
    ExclusiveGlobal,
}

#[derive(Clone, Debug)]
pub struct SummaryOptions {
    pub warmup_steps: i64,
    pub hot_op_limit: usize,
    pub breakdown_mode: BreakdownMode,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions { warmup_steps: 5, hot_op_limit: 25, breakdown_mode: BreakdownMode::ExclusivePerTrack }
    }
}

/// The named queries of a summary with their parameters, slowest first: they are
/// independent, so they run side by side.
fn summary_queries(opts: &SummaryOptions) -> Vec<QueryCall> {
    let n = opts.hot_op_limit;
    let (warm, top, long) = (vec![warmup_param(opts)], vec![("top_k", n.to_string())], vec![long_limit_param(opts)]);
    vec![
        ("semantic_families", vec![("top_k", n.max(50).to_string())]),
        (breakdown_query(opts), vec![]),
        ("gap_contexts", long.clone()),
        ("transfers", vec![]),
        ("trace_overview", vec![]),
        ("recompilation", vec![]),
        ("pre_op_gaps", long.clone()),
        ("hot_ops", top),
        ("per_host", warm.clone()),
        ("step_skew", warm.clone()),
        ("tiny_kernels", warm.clone()),
        ("collectives_by_kind", vec![]),
        ("hierarchical_regions", long.clone()),
        ("regions", long),
        ("shape_churn", vec![]),
        ("device_idle", warm.clone()),
        ("step_durations", warm),
        ("provenance_hints", vec![]),
    ]
}

/// The statements a summary of run `run_id` runs: what can be planned before the run's
/// tables exist ([`crate::engine::ahead`]; [`Analyst::with_plans`] takes the plans).
pub fn statements(opts: &SummaryOptions, run_id: &str) -> Vec<Statement> {
    // `PROFQ_TIMING=serial` times each statement's planning apart from its execution.
    if crate::timing::serial() {
        return Vec::new();
    }
    every_statement(opts, run_id)
}

/// Every statement a summary of run `run_id` runs (those [`statements`] plans ahead, also
/// when timing runs them one at a time).
pub fn every_statement(opts: &SummaryOptions, run_id: &str) -> Vec<Statement> {
    summary_queries(opts)
        .into_iter()
        // Run only for a run of several hosts: planned (and its columns built), not prefetched.
        .chain(std::iter::once(("straggler_ranks", vec![])))
        .filter_map(|(query, params)| {
            let bound = bind(query, &params, run_id);
            let named = crate::engine::queries::find(query)?;
            Some(Statement { key: key(query, &bound), sql: named.bind(&bound).ok()?, rows_only_from: named.rows_only_from() })
        })
        .chain(std::iter::once(run_statement(run_id)).map(|sql| Statement { key: sql.clone(), sql, rows_only_from: None }))
        .collect()
}

fn warmup_param(opts: &SummaryOptions) -> (&'static str, String) {
    ("warmup_steps", opts.warmup_steps.to_string())
}

fn long_limit_param(opts: &SummaryOptions) -> (&'static str, String) {
    ("top_k", opts.hot_op_limit.max(500).to_string())
}

fn breakdown_query(opts: &SummaryOptions) -> &'static str {
    match opts.breakdown_mode {
        BreakdownMode::ExclusivePerTrack => "time_breakdown",
        BreakdownMode::ExclusiveGlobal => "time_breakdown_global",
    }
}

/// Builds the profile_summary.v1 document of one run.
pub async fn summarize(engine: &Engine, run_id: &str, source_path: &str, opts: &SummaryOptions) -> Result<Summary, QueryError> {
    summarize_planned(engine, run_id, source_path, opts, Prepared::default()).await
}

/// [`summarize`], executing the statements `prepared` planned (by [`statements`]' keys) as
/// planned, and skipping those it knows return no rows.
pub async fn summarize_planned(engine: &Engine, run_id: &str, source_path: &str, opts: &SummaryOptions, prepared: Prepared) -> Result<Summary, QueryError> {
    let mut clock = std::time::Instant::now();
    let a = Analyst::with_plans(engine, run_id, prepared);
    a.prefetch(&summary_queries(opts));
    let (n, warmup, long) = (opts.hot_op_limit, [warmup_param(opts)], [long_limit_param(opts)]);

    let run_batches = a.sql_batches(&run_statement(run_id)).await?;
    let run = rows(&run_batches).into_iter().next().ok_or_else(|| QueryError(format!("no run {run_id:?}")))?;
    let overview = a.rows("trace_overview", &[]).await?.into_iter().next().unwrap_or_default();
    let source_format = match run.text("source_format").as_deref() {
        Some("xplane") => "xplane_pb",
        Some("nsys") => "nsys_sqlite",
        _ => "perfetto_trace_json",
    };
    let device_kinds = list_texts(&run_batches, "device_kinds");
    let (step_time, profq_steps) = step_section(&a, opts).await?;
    let collectives = a.rows("collectives_by_kind", &[]).await?;
    let mut doc = Summary {
        schema_version: SCHEMA_VERSION.into(),
        // Reproducible: the capture's own start time, never the wall clock (epoch 0 when unknown).
        generated_at_utc: crate::timing::iso_utc(run.count("start_epoch_ns").unwrap_or(0)),
        source_format: source_format.into(),
        source_path: source_path.into(),
        run_metadata: run_metadata(run_id, &run, &overview, &device_kinds),
        trace_overview: trace_overview(source_format, &run, &run_batches, &overview),
        trace_provenance: provenance(&run, &a.rows("provenance_hints", &[]).await?),
        step_time,
        time_breakdown: breakdown_section(&a, opts).await?,
        hot_ops: each(&a.rows("hot_ops", &[("top_k", n.to_string())]).await?),
        semantic_families: each(&a.rows("semantic_families", &[("top_k", n.max(50).to_string())]).await?),
        communication_ops: each(&collectives),
        gap_before_ops: each(&a.rows("pre_op_gaps", &long).await?),
        hierarchical_regions: each(&a.rows("hierarchical_regions", &long).await?),
        gap_region_contexts: each(&a.rows("gap_contexts", &long).await?),
        optimization_candidates: Vec::new(),
        profq_version: Some(env!("CARGO_PKG_VERSION").into()),
        profq_producer: Some(Producer {
            framework: run.text("framework"),
            jax_version: run.text("jax_version"),
            jaxlib_version: run.text("jaxlib_version"),
            device_kinds,
        }),
        profq_collectives: each(&collectives),
        profq_regions_by_pass: each(&a.rows("regions", &long).await?),
        profq_per_device: each(&a.rows("step_skew", &warmup).await?),
        profq_per_host: each(&a.rows("per_host", &warmup).await?),
        // Collectives are matched across ranks only where there are several.
        profq_straggler_ranks: if list_texts(&run_batches, "hosts").len() > 1 { each(&a.rows("straggler_ranks", &[]).await?) } else { Vec::new() },
        profq_recompilation: Some(recompilation(&a.rows("recompilation", &[]).await?, &a.rows("shape_churn", &[]).await?)),
        profq_transfers: each(&a.rows("transfers", &[]).await?),
        profq_tiny_kernels: Some(tiny_kernels(&a.rows("tiny_kernels", &warmup).await?)),
        profq_device_idle: Some(device_idle(&a.rows("device_idle", &warmup).await?)),
        profq_steps,
    };
    doc.optimization_candidates = candidates::optimization_candidates(&doc);
    crate::timing::stage_done("queries and summary", &mut clock);
    Ok(doc)
}

/// `step_time` (all and steady steps, their classes) and `profq_steps` (each step, with its
/// class), from `step_durations`.
async fn step_section(a: &Analyst<'_>, opts: &SummaryOptions) -> Result<(StepTime, Vec<StepRow>), QueryError> {
    let per_step = a.rows("step_durations", &[warmup_param(opts)]).await?;
    let all_steps: Vec<(i64, f64)> = per_step.iter().map(|r| (r.float("step") as i64, r.float("dur_ns") / 1000.0)).collect();
    let steady: Vec<(i64, f64)> = all_steps.iter().copied().filter(|s| s.0 >= opts.warmup_steps).collect();
    let durations = |v: &[(i64, f64)]| v.iter().map(|s| s.1).collect::<Vec<_>>();
    let classified = steps::classify(&steady);
    let class_of: BTreeMap<i64, &str> = classified.iter().flat_map(|(c, members)| members.iter().map(|&m| (m, c.name.as_str()))).collect();
    let rows = per_step
        .iter()
        .map(|r| {
            let step = r.float("step") as i64;
            StepRow {
                step,
                duration: r.float("dur_ns") / 1000.0,
                busy_duration: r.us("busy_ns"),
                communication_duration: r.us("communication_ns"),
                idle_duration: r.us("idle_ns"),
                op_count: r.count("op_count"),
                warmup: r.flag("warmup").unwrap_or(false),
                class: class_of.get(&step).map(|c| c.to_string()),
            }
        })
        .collect();
    let step_time = StepTime {
        warmup_steps_ignored: opts.warmup_steps,
        all_steps: steps::duration_stats(&durations(&all_steps)),
        steady_state_steps: steps::duration_stats(&durations(&steady)),
        classes: classified.into_iter().map(|(c, _)| c).collect(),
    };
    Ok((step_time, rows))
}

/// `time_breakdown`, by the mode `opts` names.
async fn breakdown_section(a: &Analyst<'_>, opts: &SummaryOptions) -> Result<TimeBreakdown, QueryError> {
    let basis = match opts.breakdown_mode {
        BreakdownMode::ExclusivePerTrack => "exclusive_duration_per_track",
        BreakdownMode::ExclusiveGlobal => "exclusive_duration_global_timeline",
    };
    let rows = a.rows(breakdown_query(opts), &[]).await?;
    let mut breakdown = TimeBreakdown { duration_basis: basis.into(), ..TimeBreakdown::default() };
    for r in &rows {
        let category = r.get("category").and_then(Value::as_str).unwrap_or("other");
        if let Some(c) = breakdown.category_mut(category) {
            *c = CategoryTime { total_duration: r.float("total_ns") / 1000.0, share_of_total: r.float("share_of_total") };
        }
    }
    // Per track: the sum over categories; global: the window, which the categories tile.
    breakdown.total_duration = rows.iter().map(|r| r.float("total_ns")).sum::<f64>() / 1000.0;
    Ok(breakdown)
}

/// `run_metadata`: what the profile says, then the run's labels for what it leaves empty.
fn run_metadata(run_id: &str, run: &Row, overview: &Row, device_kinds: &[String]) -> RunMetadata {
    let from_profile = RunMetadata {
        // A profile summarized in memory has no store run id.
        run_id: (run_id != crate::source::INPUT_RUN_ID).then(|| run_id.to_string()),
        hardware_type: Some(device_kinds.first().cloned().unwrap_or_else(|| "CPU".into())),
        num_devices: overview.count("num_devices"),
        num_hosts: overview.count("num_hosts"),
        ..RunMetadata::default()
    };
    fill_from_labels(from_profile, run)
}

/// `trace_overview`, with the run's quality warnings (and one for a suspected truncation).
fn trace_overview(source_format: &str, run: &Row, run_batches: &[RecordBatch], overview: &Row) -> TraceOverview {
    let mut warnings = list_texts(run_batches, "quality_warnings");
    let truncated = run.flag("suspected_truncation").unwrap_or(false);
    if truncated && !warnings.iter().any(|w| w.contains("cap")) {
        warnings.push(format!(
            "Trace contains exactly {} complete events; this often indicates export truncation at a collector cap.",
            overview.get("num_complete_events").cloned().unwrap_or(Value::Null)
        ));
    }
    TraceOverview {
        display_time_unit: if source_format == "xplane_pb" { Some("us".into()) } else { run.text("display_time_unit") },
        num_events_total: overview.count("num_events_total"),
        num_complete_events: overview.count("num_complete_events"),
        num_processes: overview.count("num_processes"),
        num_threads: overview.count("num_threads"),
        profile_start_ts: overview.us("profile_start_ns"),
        profile_end_ts: overview.us("profile_end_ns"),
        duration_basis: "exclusive_duration_per_track".into(),
        suspected_truncation: truncated,
        quality_warnings: warnings,
    }
}

/// `trace_provenance`: the trace's digest and `provenance_hints`' values by kind.
fn provenance(run: &Row, hints: &[Row]) -> TraceProvenance {
    let values = |kind: &str| -> Vec<String> { hints.iter().filter(|r| r.text("kind").as_deref() == Some(kind)).filter_map(|r| r.text("value")).collect() };
    TraceProvenance { trace_sha256: run.text("trace_sha256"), run_ids: values("run_ids"), source_file_hints: values("source_file_hints") }
}

/// `profq_recompilation`, from `recompilation` (one row per step, and one outside steps) and
/// `shape_churn`.
fn recompilation(recompiles: &[Row], churn: &[Row]) -> Recompilation {
    let outside_steps = |r: &&Row| r.get("step").is_some_and(Value::is_null);
    Recompilation {
        steps_with_compilation: recompiles.iter().filter(|r| !outside_steps(r)).map(StepCompilation::from_row).collect(),
        compile_outside_steps: recompiles.iter().find(outside_steps).and_then(|r| r.us("compile_ns")),
        modules_with_several_programs: each(churn),
    }
}

/// `profq_tiny_kernels`, averaged over the steady steps `tiny_kernels` returns.
fn tiny_kernels(tiny: &[Row]) -> TinyKernels {
    TinyKernels {
        tiny_threshold_us: 10,
        steady_steps: tiny.len() as i64,
        launch_bound_steps: tiny.iter().filter(|r| r.flag("launch_bound") == Some(true)).count() as i64,
        avg_ops_per_step: mean(tiny.iter().map(|r| r.float("op_count"))),
        avg_tiny_share: mean(tiny.iter().map(|r| r.float("tiny_share"))),
        avg_busy_share: mean(tiny.iter().map(|r| r.float("busy_share"))),
    }
}

/// `profq_device_idle`, over the steady steps `device_idle` returns.
fn device_idle(idle: &[Row]) -> DeviceIdle {
    DeviceIdle {
        steady_steps: idle.len() as i64,
        avg_idle_share: mean(idle.iter().map(|r| r.float("idle_share"))),
        max_idle_share: idle.iter().map(|r| r.float("idle_share")).reduce(f64::max),
        total_idle_duration: idle.iter().map(|r| r.float("idle_ns")).sum::<f64>() / 1000.0,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A `run_metadata` field a run label of the same name fills when the profile leaves it
/// empty (`--label git_sha=…`; a W&B run target records them), and where it is.
type LabelledField = (&'static str, fn(&mut RunMetadata) -> &mut Option<String>);

const LABELLED_METADATA: [LabelledField; 7] = [
    ("run_path", |m| &mut m.run_path),
    ("artifact_ref", |m| &mut m.artifact_ref),
    ("artifact_name", |m| &mut m.artifact_name),
    ("hardware_type", |m| &mut m.hardware_type),
    ("mesh_or_topology", |m| &mut m.mesh_or_topology),
    ("git_sha", |m| &mut m.git_sha),
    ("config_hash", |m| &mut m.config_hash),
];

/// The statement over `runs` a summary reads: the run's row, and its labels named like
/// [`LABELLED_METADATA`] as `label_<field>`.
fn run_statement(run_id: &str) -> String {
    let labelled: Vec<String> = LABELLED_METADATA.iter().map(|(f, _)| format!("labels['{f}'] AS label_{f}")).collect();
    format!("SELECT *, {} FROM runs WHERE run_id = '{}'", labelled.join(", "), run_id.replace('\'', "''"))
}

/// `metadata` with the fields it leaves empty filled from the run's labels.
fn fill_from_labels(mut metadata: RunMetadata, run: &Row) -> RunMetadata {
    for (field, slot) in LABELLED_METADATA {
        let slot = slot(&mut metadata);
        if slot.is_none() {
            *slot = run.text(&format!("label_{field}"));
        }
    }
    metadata
}

/// The texts of list column `column` in the first row of `batches` (the run's warnings or
/// device kinds), in order; none where the row or column is missing.
fn list_texts(batches: &[RecordBatch], column: &str) -> Vec<String> {
    use datafusion::arrow::array::{Array, ListArray, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field};
    let text_list = DataType::List(std::sync::Arc::new(Field::new_list_field(DataType::Utf8, true)));
    let first = batches.iter().find(|b| b.num_rows() > 0);
    let lists = first.and_then(|b| b.column_by_name(column)).and_then(|c| datafusion::arrow::compute::cast(c, &text_list).ok());
    let Some(list) = lists.as_ref().and_then(|c| c.as_any().downcast_ref::<ListArray>()).filter(|l| l.is_valid(0)) else {
        return Vec::new();
    };
    let texts = list.value(0);
    texts.as_any().downcast_ref::<StringArray>().map(|t| t.iter().flatten().map(str::to_string).collect()).unwrap_or_default()
}

/// Inclusive time of the root (first `=>` component) of a hierarchical region path, the
/// denominator of region shares; the largest root when that root is not listed (reference §3.9).
pub fn region_root_total(regions: &[Region], path: &str) -> f64 {
    let root = path.split("=>").next().unwrap_or(path);
    regions
        .iter()
        .find(|r| r.path == root)
        .and_then(|r| r.inclusive_duration)
        .or_else(|| regions.iter().filter(|r| r.depth == Some(1)).filter_map(|r| r.inclusive_duration).reduce(f64::max))
        .unwrap_or(0.0)
}
