//! Summary: one run → a `profile_summary.v1` JSON, computed by the named queries.
//!
//! Keys, units (µs) and defaults are those of the reference tool
//! (`../shared/reference/profile_summary_v1.md` §4); where profq computes a key
//! differently on purpose, `docs/profile_summary_v1.md` says how and why. profq-only
//! content lives under new top-level keys (listed in [`PROFQ_KEYS`]).

pub mod ask;
pub mod candidates;
pub mod doc;
pub mod query;
pub mod steps;
pub mod timeline;

use crate::engine::ahead::{Planned, Prepared, Statement};
use crate::engine::functions::{flop_proxy, proxy_family_of_name, shape_signature};
use crate::engine::{Engine, QueryError};
use doc::*;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

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

/// Runs named queries for one run and returns rows as JSON objects.
pub struct Analyst<'a> {
    pub engine: &'a Engine,
    pub run_id: &'a str,
    /// Queries started ahead (see [`Analyst::prefetch`]), by name and parameters.
    pending: std::sync::Mutex<BTreeMap<String, tokio::task::JoinHandle<QueryResult>>>,
    /// Queries planned before the analyst was made ([`crate::engine::ahead`]), by the same key.
    planned: std::sync::Mutex<BTreeMap<String, Planned>>,
    /// Tables known to hold no rows of the run: a query whose rows come only from one of
    /// them (`Rows only from:`) returns none without being planned.
    without_rows: BTreeSet<&'static str>,
}

pub type Row = Map<String, Value>;

type QueryResult = Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError>;

/// A named query with its parameters.
pub type QueryCall = (&'static str, Vec<(&'static str, String)>);

/// `params` of `query`, with the run id added where the query takes one.
fn bind(query: &str, params: &[(&str, String)], run_id: &str) -> BTreeMap<String, String> {
    let mut p: BTreeMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    if crate::engine::queries::find(query).is_some_and(|q| q.params().iter().any(|p| p.name == "run_id")) {
        p.insert("run_id".into(), run_id.to_string());
    }
    p
}

/// What a query's result is found by: its name and bound parameters.
fn key(query: &str, params: &BTreeMap<String, String>) -> String {
    format!("{query}{params:?}")
}

impl<'a> Analyst<'a> {
    pub fn new(engine: &'a Engine, run_id: &'a str) -> Self {
        Analyst::with_plans(engine, run_id, Prepared::default())
    }

    /// An analyst that executes the statements `prepared` planned (by [`statements`]' keys)
    /// instead of planning them again, and skips those it knows return no rows.
    pub fn with_plans(engine: &'a Engine, run_id: &'a str, prepared: Prepared) -> Self {
        Analyst { engine, run_id, pending: Default::default(), planned: std::sync::Mutex::new(prepared.planned), without_rows: prepared.without_rows }
    }

    /// Runs a query: its plan if one was made ahead, else the query planned now.
    fn run(
        &self,
        query: &str,
        key: &str,
        params: &BTreeMap<String, String>,
    ) -> impl std::future::Future<Output = Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError>> + Send + 'static {
        let planned = self.planned.lock().expect("planned queries").remove(key);
        let no_rows = crate::engine::queries::find(query).and_then(|q| q.rows_only_from()).is_some_and(|t| self.without_rows.contains(t));
        let (engine, name, params) = (self.engine.clone(), query.to_string(), params.clone());
        async move {
            match planned {
                _ if no_rows => Ok(Vec::new()),
                Some(p) => p.execute().await.map_err(|e| QueryError(format!("query {name}: {e}"))),
                None => engine.run_named(&name, &params).await,
            }
        }
    }

    /// Starts queries now, on the runtime's workers, so that independent analyses overlap;
    /// [`Analyst::rows`] then picks up their results.
    pub fn prefetch(&self, queries: &[QueryCall]) {
        if crate::timing::serial() {
            return;
        }
        let mut pending = self.pending.lock().expect("prefetch lock");
        for (query, params) in queries {
            let bound = bind(query, params, self.run_id);
            let key = key(query, &bound);
            pending.entry(key).or_insert_with_key(|key| tokio::spawn(self.run(query, key, &bound)));
        }
    }

    /// Batches of one SQL statement: its plan if one was made ahead (keyed by the SQL itself,
    /// see [`statements`]), else the statement planned now.
    pub async fn sql_batches(&self, sql: &str) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError> {
        let planned = self.planned.lock().expect("planned queries").remove(sql);
        match planned {
            Some(p) => p.execute().await,
            None => self.engine.sql(sql).await,
        }
    }

    pub async fn rows(&self, query: &str, params: &[(&str, String)]) -> Result<Vec<Row>, QueryError> {
        Ok(crate::render::rows(&self.batches(query, params).await?))
    }

    /// The batches of named query `query` over the analyst's run, as [`Analyst::rows`] reads
    /// them (for callers that read columns rather than JSON rows).
    pub async fn batches(&self, query: &str, params: &[(&str, String)]) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError> {
        let p = bind(query, params, self.run_id);
        let key = key(query, &p);
        let t0 = std::time::Instant::now();
        let started = self.pending.lock().expect("prefetch lock").remove(&key);
        let batches = match started {
            Some(handle) => handle.await.map_err(|e| QueryError(format!("query {query}: {e}")))??,
            None => self.run(query, &key, &p).await?,
        };
        if crate::timing::enabled() {
            eprintln!("profq: timing: query {query}: {:.3} s", t0.elapsed().as_secs_f64());
        }
        Ok(batches)
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

fn f(row: &Row, key: &str) -> f64 {
    row.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

/// A cell of ns as µs (null stays null).
fn us(row: &Row, key: &str) -> Option<f64> {
    row.get(key).and_then(Value::as_f64).map(|ns| ns / 1000.0)
}

fn number(row: &Row, key: &str) -> Option<f64> {
    row.get(key).and_then(Value::as_f64)
}

fn count(row: &Row, key: &str) -> Option<i64> {
    row.get(key).and_then(Value::as_i64)
}

fn text(row: &Row, key: &str) -> Option<String> {
    row.get(key).and_then(Value::as_str).map(str::to_string)
}

/// ISO-8601 UTC with microseconds and a `Z` suffix.
pub fn iso_utc(epoch_ns: i64) -> String {
    let secs = epoch_ns.div_euclid(1_000_000_000);
    let micros = epoch_ns.rem_euclid(1_000_000_000) / 1000;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", sod / 3600, sod % 3600 / 60, sod % 60)
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
    let n = opts.hot_op_limit;
    let warmup = warmup_param(opts);
    let long_limit = long_limit_param(opts);
    let breakdown_query = breakdown_query(opts);
    a.prefetch(&summary_queries(opts));

    let run_batches = a.sql_batches(&run_statement(run_id)).await?;
    let run = crate::render::rows(&run_batches).into_iter().next().ok_or_else(|| QueryError(format!("no run {run_id:?}")))?;
    let overview = a.rows("trace_overview", &[]).await?.into_iter().next().unwrap_or_default();
    let source_format = if run.get("source_format").and_then(Value::as_str) == Some("xplane") { "xplane_pb" } else { "perfetto_trace_json" };
    let mut all_warnings = list_texts(&run_batches, "quality_warnings");
    let device_kinds = list_texts(&run_batches, "device_kinds");
    let truncated = run.get("suspected_truncation").and_then(Value::as_bool).unwrap_or(false);

    // Steps.
    let per_step = a.rows("step_durations", std::slice::from_ref(&warmup)).await?;
    let all_steps: Vec<(i64, f64)> = per_step.iter().map(|r| (f(r, "step") as i64, f(r, "dur_ns") / 1000.0)).collect();
    let steady: Vec<(i64, f64)> = all_steps.iter().copied().filter(|s| s.0 >= opts.warmup_steps).collect();
    let durations = |v: &[(i64, f64)]| v.iter().map(|s| s.1).collect::<Vec<_>>();
    let classified = steps::classify(&steady);
    let class_of: BTreeMap<i64, &str> = classified.iter().flat_map(|(c, members)| members.iter().map(|&m| (m, c.name.as_str()))).collect();
    let profq_steps: Vec<StepRow> = per_step
        .iter()
        .map(|r| {
            let step = f(r, "step") as i64;
            StepRow {
                step,
                duration: f(r, "dur_ns") / 1000.0,
                busy_duration: us(r, "busy_ns"),
                communication_duration: us(r, "communication_ns"),
                idle_duration: us(r, "idle_ns"),
                op_count: count(r, "op_count"),
                warmup: r.get("warmup").and_then(Value::as_bool).unwrap_or(false),
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

    // Breakdown.
    let basis = match opts.breakdown_mode {
        BreakdownMode::ExclusivePerTrack => "exclusive_duration_per_track",
        BreakdownMode::ExclusiveGlobal => "exclusive_duration_global_timeline",
    };
    let breakdown_rows = a.rows(breakdown_query, &[]).await?;
    let mut time_breakdown = TimeBreakdown { duration_basis: basis.into(), ..TimeBreakdown::default() };
    for r in &breakdown_rows {
        let category = r.get("category").and_then(Value::as_str).unwrap_or("other");
        if let Some(c) = time_breakdown.category_mut(category) {
            *c = CategoryTime { total_duration: f(r, "total_ns") / 1000.0, share_of_total: f(r, "share_of_total") };
        }
    }
    // Per track: the sum over categories; global: the window, which the categories tile.
    time_breakdown.total_duration = breakdown_rows.iter().map(|r| f(r, "total_ns")).sum::<f64>() / 1000.0;

    // Ops.
    let hot = a.rows("hot_ops", &[("top_k", n.to_string())]).await?;
    let hot_ops = hot
        .iter()
        .map(|r| {
            let sig = r.get("shape").and_then(Value::as_str).and_then(shape_signature);
            let family = r.get("hlo_op").and_then(Value::as_str).and_then(proxy_family_of_name);
            let proxy = sig.as_deref().and_then(|s| flop_proxy(family, s));
            HotOp {
                name: text(r, "hlo_op"),
                canonical_name: text(r, "canonical_name"),
                category: text(r, "category"),
                count: count(r, "count"),
                total_duration: us(r, "total_ns"),
                exclusive_duration: us(r, "self_ns"),
                avg_duration: us(r, "avg_ns"),
                shape_signature: sig,
                source_file: text(r, "source"),
                tf_op_path: text(r, "scope_path"),
                flop_proxy_per_invocation: proxy,
            }
        })
        .collect();
    let families = a.rows("semantic_families", &[("top_k", n.max(50).to_string())]).await?;
    let semantic_families = families
        .iter()
        .map(|r| {
            let work = r.get("flop_proxy_total").and_then(Value::as_f64).filter(|w| *w > 0.0);
            SemanticFamily {
                family: text(r, "family"),
                count: count(r, "count"),
                total_duration: us(r, "total_ns"),
                exclusive_duration: us(r, "self_ns"),
                share_of_total: f(r, "share_of_total"),
                avg_duration: us(r, "avg_ns"),
                avg_exclusive_duration: us(r, "avg_self_ns"),
                example_op: text(r, "example_op"),
                dominant_shape_signature: r.get("dominant_shape").and_then(Value::as_str).and_then(shape_signature),
                flop_proxy_total: work,
                time_per_flop_proxy: work.map(|w| f(r, "self_ns") / 1000.0 / w),
            }
        })
        .collect();
    let collectives = a.rows("collectives_by_kind", &[]).await?;
    let communication_ops = collectives
        .iter()
        .map(|r| CommunicationOp { collective: text(r, "kind"), count: count(r, "count"), total_duration: us(r, "total_ns"), avg_duration: us(r, "avg_ns") })
        .collect();
    let profq_collectives = collectives
        .iter()
        .map(|r| Collective {
            collective: text(r, "kind"),
            count: count(r, "count"),
            total_duration: us(r, "total_ns"),
            exposed_duration: us(r, "exposed_ns"),
            overlapped_duration: us(r, "overlapped_ns"),
            exposed_share: f(r, "exposed_share"),
            bytes: count(r, "bytes"),
            gbytes_per_s: number(r, "gbytes_per_s"),
            top_op: text(r, "top_op"),
        })
        .collect();

    // Gaps and regions.
    let gaps = a.rows("pre_op_gaps", std::slice::from_ref(&long_limit)).await?;
    let gap_before_ops = gaps
        .iter()
        .map(|r| GapBeforeOp {
            name: text(r, "payload_op"),
            payload_op: text(r, "payload_op"),
            marker_op: text(r, "marker_op"),
            count: count(r, "count"),
            total_gap_duration: us(r, "total_gap_ns"),
            max_gap_duration: us(r, "max_gap_ns"),
            avg_gap_duration: us(r, "avg_gap_ns"),
        })
        .collect();
    let arrow_path = |r: &Row, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").replace('/', "=>");
    let contexts = a.rows("gap_contexts", std::slice::from_ref(&long_limit)).await?;
    let gap_region_contexts = contexts
        .iter()
        .map(|r| GapRegionContext {
            op_name: text(r, "op_name"),
            region_path: arrow_path(r, "region_path"),
            count: count(r, "count"),
            total_gap_duration: us(r, "total_gap_ns"),
            avg_gap_duration: us(r, "avg_gap_ns"),
        })
        .collect();
    let regions = a.rows("hierarchical_regions", std::slice::from_ref(&long_limit)).await?;
    let hierarchical_regions = regions
        .iter()
        .map(|r| Region {
            path: arrow_path(r, "path"),
            depth: count(r, "depth"),
            count: count(r, "op_count"),
            inclusive_duration: us(r, "inclusive_ns"),
            exclusive_duration: us(r, "exclusive_ns"),
        })
        .collect();
    let by_pass = a.rows("regions", std::slice::from_ref(&long_limit)).await?;
    let profq_regions_by_pass = by_pass
        .iter()
        .map(|r| PassRegion {
            pass: text(r, "pass"),
            path: arrow_path(r, "path"),
            depth: count(r, "depth"),
            count: count(r, "op_count"),
            inclusive_duration: us(r, "inclusive_ns"),
            exclusive_duration: us(r, "exclusive_ns"),
            inclusive_share: f(r, "inclusive_share"),
        })
        .collect();

    // profq analyses.
    let skew = a.rows("step_skew", std::slice::from_ref(&warmup)).await?;
    let profq_per_device = skew
        .iter()
        .map(|r| PerDevice {
            host: text(r, "host"),
            device: text(r, "device"),
            steps: count(r, "steps"),
            avg_active_duration: us(r, "avg_active_ns"),
            avg_lag_duration: us(r, "avg_lag_ns"),
            max_lag_duration: us(r, "max_lag_ns"),
            times_slowest: count(r, "times_slowest"),
        })
        .collect();
    let hosts = a.rows("per_host", std::slice::from_ref(&warmup)).await?;
    let profq_per_host = hosts
        .iter()
        .map(|r| PerHost {
            host: text(r, "host"),
            steady_steps: count(r, "steady_steps"),
            median_step_duration: us(r, "median_step_ns"),
            busy_share: number(r, "busy_share"),
            ops: count(r, "ops"),
            op_exclusive_duration: us(r, "op_self_ns"),
            devices: count(r, "devices"),
        })
        .collect();
    let recompiles = a.rows("recompilation", &[]).await?;
    let churn = a.rows("shape_churn", &[]).await?;
    let outside_steps = |r: &&Row| r.get("step").is_some_and(Value::is_null);
    let profq_recompilation = Recompilation {
        steps_with_compilation: recompiles
            .iter()
            .filter(|r| !outside_steps(r))
            .map(|r| StepCompilation {
                step: count(r, "step"),
                compile_duration: us(r, "compile_ns"),
                compile_share_of_step: number(r, "compile_share"),
                compile_events: count(r, "compile_events"),
                example: text(r, "example"),
            })
            .collect(),
        compile_outside_steps: recompiles.iter().find(outside_steps).and_then(|r| us(r, "compile_ns")),
        modules_with_several_programs: churn
            .iter()
            .map(|r| ModulePrograms { hlo_module: text(r, "hlo_module"), programs: count(r, "programs"), first_steps: text(r, "first_steps") })
            .collect(),
    };
    let transfers = a.rows("transfers", &[]).await?;
    let profq_transfers = transfers
        .iter()
        .map(|r| Transfer {
            direction: text(r, "direction"),
            on_device: r.get("on_device").and_then(Value::as_bool),
            count: count(r, "count"),
            total_duration: us(r, "total_ns"),
            bytes: count(r, "bytes"),
            example: text(r, "example"),
        })
        .collect();
    let tiny = a.rows("tiny_kernels", std::slice::from_ref(&warmup)).await?;
    let profq_tiny_kernels = TinyKernels {
        tiny_threshold_us: 10,
        steady_steps: tiny.len() as i64,
        launch_bound_steps: tiny.iter().filter(|r| r.get("launch_bound").and_then(Value::as_bool) == Some(true)).count() as i64,
        avg_ops_per_step: mean(tiny.iter().map(|r| f(r, "op_count"))),
        avg_tiny_share: mean(tiny.iter().map(|r| f(r, "tiny_share"))),
        avg_busy_share: mean(tiny.iter().map(|r| f(r, "busy_share"))),
    };
    let idle = a.rows("device_idle", std::slice::from_ref(&warmup)).await?;
    let profq_device_idle = DeviceIdle {
        steady_steps: idle.len() as i64,
        avg_idle_share: mean(idle.iter().map(|r| f(r, "idle_share"))),
        max_idle_share: idle.iter().map(|r| f(r, "idle_share")).reduce(f64::max),
        total_idle_duration: idle.iter().map(|r| f(r, "idle_ns")).sum::<f64>() / 1000.0,
    };

    let hints = a.rows("provenance_hints", &[]).await?;
    let hint_values =
        |kind: &str| -> Vec<String> { hints.iter().filter(|r| r.get("kind").and_then(Value::as_str) == Some(kind)).filter_map(|r| text(r, "value")).collect() };

    if truncated && !all_warnings.iter().any(|w| w.contains("cap")) {
        all_warnings.push(format!(
            "Trace contains exactly {} complete events; this often indicates export truncation at a collector cap.",
            overview.get("num_complete_events").cloned().unwrap_or(Value::Null)
        ));
    }
    // Reproducible: the capture's own start time, never the wall clock (epoch 0 when unknown).
    let start_epoch = run.get("start_epoch_ns").and_then(Value::as_i64).unwrap_or(0);
    let mut doc = Summary {
        schema_version: SCHEMA_VERSION.into(),
        generated_at_utc: iso_utc(start_epoch),
        source_format: source_format.into(),
        source_path: source_path.into(),
        run_metadata: fill_from_labels(
            RunMetadata {
                // A profile summarized in memory has no store run id.
                run_id: (run_id != crate::source::INPUT_RUN_ID).then(|| run_id.to_string()),
                hardware_type: Some(device_kinds.first().cloned().unwrap_or_else(|| "CPU".into())),
                num_devices: count(&overview, "num_devices"),
                num_hosts: count(&overview, "num_hosts"),
                ..RunMetadata::default()
            },
            &run,
        ),
        trace_overview: TraceOverview {
            display_time_unit: if source_format == "xplane_pb" { Some("us".into()) } else { text(&run, "display_time_unit") },
            num_events_total: count(&overview, "num_events_total"),
            num_complete_events: count(&overview, "num_complete_events"),
            num_processes: count(&overview, "num_processes"),
            num_threads: count(&overview, "num_threads"),
            profile_start_ts: us(&overview, "profile_start_ns"),
            profile_end_ts: us(&overview, "profile_end_ns"),
            duration_basis: "exclusive_duration_per_track".into(),
            suspected_truncation: truncated,
            quality_warnings: all_warnings,
        },
        trace_provenance: TraceProvenance {
            trace_sha256: text(&run, "trace_sha256"),
            run_ids: hint_values("run_ids"),
            source_file_hints: hint_values("source_file_hints"),
        },
        step_time,
        time_breakdown,
        hot_ops,
        semantic_families,
        communication_ops,
        gap_before_ops,
        hierarchical_regions,
        gap_region_contexts,
        optimization_candidates: Vec::new(),
        profq_version: Some(env!("CARGO_PKG_VERSION").into()),
        profq_producer: Some(Producer { jax_version: text(&run, "jax_version"), jaxlib_version: text(&run, "jaxlib_version"), device_kinds }),
        profq_collectives,
        profq_regions_by_pass,
        profq_per_device,
        profq_per_host,
        profq_recompilation: Some(profq_recompilation),
        profq_transfers,
        profq_tiny_kernels: Some(profq_tiny_kernels),
        profq_device_idle: Some(profq_device_idle),
        profq_steps,
    };
    doc.optimization_candidates = candidates::optimization_candidates(&doc);
    crate::timing::stage_done("queries and summary", &mut clock);
    Ok(doc)
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
            *slot = text(run, &format!("label_{field}"));
        }
    }
    metadata
}

/// The texts of list column `column` in the first row of `batches` (the run's warnings or
/// device kinds), in order; none where the row or column is missing.
fn list_texts(batches: &[datafusion::arrow::record_batch::RecordBatch], column: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(iso_utc(1_786_190_400_123_456_000), "2026-08-08T12:00:00.123456Z");
    }
}
