//! Compare: two runs (store run ids, profile INPUTs or summary files) → the reference's
//! comparison (§6.1) plus profq's full-table comparison and step-noise verdict; `track`
//! turns it into a pass/warn/fail record (§6.2–6.4).

pub mod track;

use crate::engine::analyst::Analyst;
use crate::engine::rows::Row;
use crate::engine::{Engine, QueryError, Spread};
use crate::error::{Error, Kind};
use crate::source::SourceError;
use crate::store::Location;
use crate::summary::doc::{Producer, Summary};
use crate::summary::{self, SummaryOptions};
use crate::tables::{ColumnsRead, RunTables};
use serde_json::{json, Map, Value};
use std::path::Path;

/// One side of a comparison.
pub enum Side {
    /// A profile_summary.v1 document: only the reference's summary-level comparison.
    Summary(Box<SideSummary>),
    /// Full tables of a run (a store run, or an INPUT decoded in memory).
    Tables { tables: RunTables, source_path: String, run_id: Option<String> },
}

/// The summary a path holds, when it is a profile_summary.v1 file.
fn is_summary_file(p: &Path) -> Option<Value> {
    let name = p.file_name()?.to_string_lossy().to_string();
    if !name.ends_with(".json") || name.ends_with(".trace.json") {
        return None;
    }
    let text = std::fs::read_to_string(p).ok()?;
    let doc: Value = serde_json::from_str(&text).ok()?;
    Summary::is_summary(&doc).then_some(doc)
}

/// Resolves X: an existing summary file, an existing profile path, else a run id in `store`.
/// A profile is decoded, and a run's `ops` and `gaps` read, with only the columns `read`
/// (a comparison's: [`columns_read`]).
pub async fn load_side(spec: &str, store: &Location, read: &ColumnsRead) -> Result<Side, SourceError> {
    let path = Path::new(spec);
    if path.exists() || crate::remote::is_url(spec) {
        if let Some(json) = is_summary_file(path) {
            let doc = Summary::from_json(&json).map_err(|e| {
                let what = format!("not a {} summary: {e}", summary::SCHEMA_VERSION);
                SourceError::Ingest(crate::ingest::IngestError::Input(crate::decode::InputError { path: path.to_path_buf(), what }))
            })?;
            return Ok(Side::Summary(Box::new(SideSummary { doc, json })));
        }
        let tables = crate::ingest::load_tables_telling(path, "side", &[], read.clone(), Default::default()).map_err(SourceError::Ingest)?;
        return Ok(Side::Tables { tables, source_path: spec.to_string(), run_id: None });
    }
    let no_store = |e: String| SourceError::Query(crate::engine::QueryError(e));
    if !store.run_exists(spec).await.map_err(no_store)? {
        let known = store.run_ids().await.map_err(no_store)?;
        return Err(SourceError::NoRun(format!("{spec:?} is neither a file nor a run in {store} (runs: {})", known.join(", "))));
    }
    let opened = crate::source::open(&crate::source::Source::Run { store: store.clone(), run_id: spec.to_string() }, Spread::Wide).await?;
    let tables = opened.engine.run_tables(spec, read).await.map_err(SourceError::Query)?;
    Ok(Side::Tables { tables, source_path: opened.source_path, run_id: Some(spec.to_string()) })
}

/// The columns a comparison with `opts` reads: both sides' summary statements and its own
/// queries (`compare_ops`, `compare_regions`), so that its sides hold only those
/// ([`load_side`], [`ColumnsRead`]; its engine refuses any other).
pub fn columns_read(opts: &CompareOptions) -> ColumnsRead {
    let mut sqls: Vec<String> = ["before", "after"].into_iter().flat_map(|run| summary::every_statement(&opts.summary, run)).map(|s| s.sql).collect();
    let params = std::collections::BTreeMap::from([("before_run".to_string(), "before".to_string()), ("after_run".to_string(), "after".to_string())]);
    for query in ["compare_ops", "compare_regions"] {
        match crate::engine::queries::find(query).map(|q| q.bind(&params)) {
            Some(Ok(sql)) => sqls.push(sql),
            _ => return ColumnsRead::every(),
        }
    }
    crate::engine::reads::columns_read(sqls.iter().map(String::as_str))
}

#[derive(Clone, Debug)]
pub struct CompareOptions {
    pub top_k: usize,
    pub summary: SummaryOptions,
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn delta(b: Option<f64>, a: Option<f64>) -> Value {
    match (b, a) {
        (Some(b), Some(a)) => json!(a - b),
        _ => Value::Null,
    }
}

pub fn pct_delta(b: Option<f64>, a: Option<f64>) -> Value {
    match (b, a) {
        (Some(b), Some(a)) if b > 0.0 => json!((a - b) / b * 100.0),
        _ => Value::Null,
    }
}

fn ratio(b: Option<f64>, a: Option<f64>) -> Value {
    match (b, a) {
        (Some(b), Some(a)) if b > 0.0 => json!(a / b),
        _ => Value::Null,
    }
}

/// Provenance checks of §6.1, plus profq's: producer versions, device kinds and counts.
fn provenance(b: &Summary, a: &Summary) -> Value {
    let mut status = "pass";
    let mut messages: Vec<String> = Vec::new();
    let (sb, sa) = (&b.trace_provenance.trace_sha256, &a.trace_provenance.trace_sha256);
    let warn = |status: &mut &str| {
        if *status == "pass" {
            *status = "warn";
        }
    };
    let same_text = |x: &Option<String>, y: &Option<String>| x.is_some() && x == y;
    if same_text(sb, sa) {
        status = "fail";
        messages.push("Before and after have identical trace content (same trace_sha256).".into());
    }
    if b.source_path == a.source_path {
        warn(&mut status);
        messages.push("Before and after come from the same source path.".into());
    }
    let (rb, ra) = (&b.run_metadata.run_id, &a.run_metadata.run_id);
    if same_text(rb, ra) {
        warn(&mut status);
        messages.push("Before and after have the same run id.".into());
    }
    if same_text(&b.run_metadata.artifact_ref, &a.run_metadata.artifact_ref) {
        warn(&mut status);
        messages.push("Before and after come from the same artifact.".into());
    }
    if sb.is_none() || sa.is_none() {
        warn(&mut status);
        messages.push("A trace_sha256 is missing, so identical inputs cannot be ruled out.".into());
    }
    let no_producer = Producer::default();
    let (pb, pa) = (b.profq_producer.as_ref().unwrap_or(&no_producer), a.profq_producer.as_ref().unwrap_or(&no_producer));
    for (x, y, what) in [(&pb.jax_version, &pa.jax_version, "JAX versions"), (&pb.jaxlib_version, &pa.jaxlib_version, "jaxlib versions")] {
        if let (Some(x), Some(y)) = (x, y) {
            if x != y {
                warn(&mut status);
                messages.push(format!("Producer {what} differ: {x} vs {y}."));
            }
        }
    }
    if let (Some(hb), Some(ha)) = (&b.run_metadata.hardware_type, &a.run_metadata.hardware_type) {
        if hb != ha {
            warn(&mut status);
            messages.push(format!("Device kinds differ: {hb} vs {ha}."));
        }
    }
    if let (Some(db), Some(da)) = (b.run_metadata.num_devices, a.run_metadata.num_devices) {
        if db != da {
            warn(&mut status);
            messages.push(format!("Device counts differ: {db} vs {da}."));
        }
    }
    json!({
        "status": status, "messages": messages,
        "before_trace_sha256": sb, "after_trace_sha256": sa, "before_run_id": rb, "after_run_id": ra,
    })
}

fn class_rows(doc: &Summary) -> Vec<Value> {
    doc.step_time
        .classes
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "count": c.count, "fraction_of_steady": c.fraction_of_steady,
                "median_duration": c.duration_stats.median, "p90_duration": c.duration_stats.p90,
                "representative_step": c.representative_step, "representative_duration": c.representative_duration,
                "periodicity": c.periodicity,
            })
        })
        .collect()
}

/// Entries by their name (the last of equal names); entries without one are left out.
fn by_key<T>(list: &[T], key: impl Fn(&T) -> &Option<String>) -> std::collections::BTreeMap<String, &T> {
    list.iter().filter_map(|e| key(e).clone().map(|k| (k, e))).collect()
}

/// The reference's summary-level comparison (§6.1).
pub fn compare_summaries(b: &Summary, a: &Summary, top_k: usize) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("before_source".into(), json!(b.source_path));
    out.insert("after_source".into(), json!(a.source_path));
    out.insert("provenance_checks".into(), provenance(b, a));
    let (sb, sa) = (&b.step_time.steady_state_steps, &a.step_time.steady_state_steps);
    out.insert(
        "step_time".into(),
        json!({
            "steady_state_median_before": sb.median, "steady_state_median_after": sa.median,
            "steady_state_median_delta": delta(sb.median, sa.median),
            "steady_state_p90_before": sb.p90, "steady_state_p90_after": sa.p90,
            "steady_state_p90_delta": delta(sb.p90, sa.p90),
        }),
    );
    let (cb, ca) = (class_rows(b), class_rows(a));
    let mut names: Vec<String> = cb.iter().chain(&ca).filter_map(|c| c["name"].as_str().map(str::to_string)).collect();
    names.sort();
    names.dedup();
    let find = |rows: &[Value], n: &str| rows.iter().find(|c| c["name"] == n).cloned().unwrap_or(Value::Null);
    let class_delta: Vec<Value> = names
        .iter()
        .map(|n| {
            let (x, y) = (find(&cb, n), find(&ca, n));
            json!({"name": n, "count_before": x["count"], "count_after": y["count"], "fraction_before": x["fraction_of_steady"],
               "fraction_after": y["fraction_of_steady"], "median_before": x["median_duration"], "median_after": y["median_duration"],
               "median_delta": delta(f(&x["median_duration"]), f(&y["median_duration"])),
               "median_regression_pct": pct_delta(f(&x["median_duration"]), f(&y["median_duration"]))})
        })
        .collect();
    out.insert("step_classes".into(), json!({"before": cb, "after": ca, "delta": class_delta}));
    let mut shares = Map::new();
    for k in ["compute", "communication", "host", "stall", "other"] {
        let share = |s: &Summary| s.time_breakdown.category(k).map(|c| c.share_of_total);
        shares.insert(k.into(), delta(share(b), share(a)));
    }
    out.insert("time_breakdown_share_delta".into(), Value::Object(shares));
    let (fb, fa) = (by_key(&b.semantic_families, |f| &f.family), by_key(&a.semantic_families, |f| &f.family));
    let mut fams: Vec<&String> = fb.keys().chain(fa.keys()).collect();
    fams.sort();
    fams.dedup();
    let families: Vec<Value> = fams
        .iter()
        .map(|fam| {
            let (x, y) = (fb.get(*fam).copied(), fa.get(*fam).copied());
            let (eb, ea) = (x.and_then(|x| x.exclusive_duration).or(Some(0.0)), y.and_then(|y| y.exclusive_duration).or(Some(0.0)));
            let (wb, wa) = (x.and_then(|x| x.flop_proxy_total), y.and_then(|y| y.flop_proxy_total));
            let (tb, ta) = (x.and_then(|x| x.time_per_flop_proxy), y.and_then(|y| y.time_per_flop_proxy));
            let time_ratio = ratio(eb, ea);
            let work_ratio = ratio(wb, wa);
            let efficiency = match (f(&time_ratio), f(&work_ratio)) {
                (Some(t), Some(w)) if w > 0.0 => json!(t / w),
                _ => Value::Null,
            };
            json!({"family": fam, "exclusive_before": eb, "exclusive_after": ea, "exclusive_duration_delta": delta(eb, ea),
               "exclusive_regression_pct": pct_delta(eb, ea), "flop_proxy_total_before": wb, "flop_proxy_total_after": wa,
               "flop_proxy_ratio": work_ratio.clone(), "time_per_flop_proxy_before": tb,
               "time_per_flop_proxy_after": ta,
               "time_per_flop_regression_pct": pct_delta(tb, ta),
               "time_ratio": time_ratio, "work_ratio": work_ratio, "efficiency_ratio": efficiency,
               "example_before": x.and_then(|x| x.example_op.clone()), "example_after": y.and_then(|y| y.example_op.clone()),
               "shape_signature_before": x.and_then(|x| x.dominant_shape_signature.clone()),
               "shape_signature_after": y.and_then(|y| y.dominant_shape_signature.clone())})
        })
        .collect();
    out.insert("semantic_family_delta".into(), Value::Array(families));
    let (ob, oa) = (by_key(&b.hot_ops, |o| &o.name), by_key(&a.hot_ops, |o| &o.name));
    let mut ops: Vec<(String, f64, f64)> = Vec::new();
    let mut all: Vec<&String> = ob.keys().chain(oa.keys()).collect();
    all.sort();
    all.dedup();
    for n in all {
        let x = ob.get(n).and_then(|o| o.exclusive_duration).unwrap_or(0.0);
        let y = oa.get(n).and_then(|o| o.exclusive_duration).unwrap_or(0.0);
        ops.push((n.clone(), x, y));
    }
    let (reg, imp) = split_ops(ops, top_k);
    out.insert("regressed_ops".into(), reg);
    out.insert("improved_ops".into(), imp);
    out
}

/// (regressed, improved) op lists: {name, before, after, delta}, largest changes first, ties by name.
fn split_ops(ops: Vec<(String, f64, f64)>, k: usize) -> (Value, Value) {
    let mut reg: Vec<&(String, f64, f64)> = ops.iter().filter(|o| o.2 - o.1 > 0.0).collect();
    reg.sort_by(|x, y| (y.2 - y.1).total_cmp(&(x.2 - x.1)).then(x.0.cmp(&y.0)));
    let mut imp: Vec<&(String, f64, f64)> = ops.iter().filter(|o| o.2 - o.1 < 0.0).collect();
    imp.sort_by(|x, y| (x.2 - x.1).total_cmp(&(y.2 - y.1)).then(x.0.cmp(&y.0)));
    let row = |o: &&(String, f64, f64)| json!({"name": o.0, "before": o.1, "after": o.2, "delta": o.2 - o.1});
    (Value::Array(reg.iter().take(k).map(row).collect()), Value::Array(imp.iter().take(k).map(row).collect()))
}

/// Loads both sides (store run ids, profile INPUTs or summary files) and compares them; with
/// `strict_provenance`, failed provenance checks are an error ([`provenance_failure`]).
pub async fn compare_pair(before: &str, after: &str, store: &Location, opts: &CompareOptions, strict_provenance: bool) -> Result<Value, Error> {
    Ok(compare_pair_with_summaries(before, after, store, opts, strict_provenance).await?.0)
}

/// [`compare_pair`], with the summaries of both sides (what the HTML page draws besides).
pub async fn compare_pair_with_summaries(
    before: &str,
    after: &str,
    store: &Location,
    opts: &CompareOptions,
    strict_provenance: bool,
) -> Result<(Value, SideSummary, SideSummary), Error> {
    let read = columns_read(opts);
    let b = load_side(before, store, &read).await?;
    let a = load_side(after, store, &read).await?;
    let (result, sb, sa) = compare_with_summaries(b, a, opts, &read).await?;
    match provenance_failure(&result).filter(|_| strict_provenance) {
        Some(failed) => Err(failed),
        None => Ok((result, sb, sa)),
    }
}

/// The error a comparison whose provenance checks failed ends with, under `--strict-provenance`.
pub fn provenance_failure(comparison: &Value) -> Option<Error> {
    let checks = &comparison["provenance_checks"];
    if checks["status"] != "fail" {
        return None;
    }
    let msgs: Vec<&str> = checks["messages"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    Some(Error::new(Kind::Provenance, format!("Provenance checks failed. {}", msgs.join(" "))))
}

/// A side's summary as compared, and its JSON as written (a summary file's, as it was read).
pub struct SideSummary {
    pub doc: Summary,
    pub json: Value,
}

impl SideSummary {
    fn built(doc: Summary) -> Self {
        let json = doc.to_value();
        SideSummary { doc, json }
    }
}

/// Compares two sides, and returns the two summaries it compared too. Both with tables:
/// full-table op/region deltas per step and the step-noise verdict are added, and
/// regressed/improved ops come from the full tables. `read`: the columns the sides' tables
/// hold ([`columns_read`] of `opts`, given to [`load_side`]).
pub async fn compare_with_summaries(
    before: Side,
    after: Side,
    opts: &CompareOptions,
    read: &ColumnsRead,
) -> Result<(Value, SideSummary, SideSummary), QueryError> {
    match (before, after) {
        (Side::Tables { tables: tb, source_path: pb, run_id: rb }, Side::Tables { tables: ta, source_path: pa, run_id: ra }) => {
            let engine = Engine::from_runs_built(&[(&tb, "before"), (&ta, "after")], Spread::Narrow, read.clone())?;
            let mut sb = summary::summarize(&engine, "before", &pb, &opts.summary).await?;
            let mut sa = summary::summarize(&engine, "after", &pa, &opts.summary).await?;
            sb.run_metadata.run_id = rb;
            sa.run_metadata.run_id = ra;
            let mut out = compare_summaries(&sb, &sa, opts.top_k);
            let an = Analyst::new(&engine, "before");
            let params = [("before_run", "before".to_string()), ("after_run", "after".to_string())];
            let ops = an.rows("compare_ops", &params).await?;
            let us = |r: &Row, k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0) / 1000.0;
            let named: Vec<(String, f64, f64)> = ops
                .iter()
                .map(|r| {
                    let name = r.get("name_after").and_then(Value::as_str).or_else(|| r.get("name_before").and_then(Value::as_str)).unwrap_or("").to_string();
                    (name, us(r, "self_before_ns"), us(r, "self_after_ns"))
                })
                .collect();
            let (reg, imp) = split_ops(named, opts.top_k);
            out.insert("regressed_ops".into(), reg);
            out.insert("improved_ops".into(), imp);
            let to_us = |rows: &[Row], keys: &[&str]| -> Vec<Value> {
                rows.iter()
                    .map(|r| {
                        let mut m = r.clone();
                        for k in keys {
                            if let Some(v) = r.get(*k).and_then(Value::as_f64) {
                                m.insert(k.replace("_ns", "_us"), json!(v / 1000.0));
                                m.remove(*k);
                            }
                        }
                        Value::Object(m)
                    })
                    .collect()
            };
            let kinds = |kind: &str| ops.iter().filter(|r| r.get("match_kind").and_then(Value::as_str) == Some(kind)).cloned().collect::<Vec<_>>();
            let time_keys = ["self_before_ns", "self_after_ns", "delta_ns"];
            out.insert("profq_ops".into(), json!({
                "basis": "op self time per step over the full op tables (µs per step)",
                "changed": to_us(&ops.iter().filter(|r| matches!(r.get("match_kind").and_then(Value::as_str), Some("name") | Some("canonical+scope"))).take(opts.top_k).cloned().collect::<Vec<_>>(), &time_keys),
                "appeared": to_us(&kinds("appeared"), &time_keys),
                "disappeared": to_us(&kinds("disappeared"), &time_keys),
                "matched_by_name": kinds("name").len(),
                "matched_by_canonical_and_scope": kinds("canonical+scope").len(),
            }));
            let regions = an.rows("compare_regions", &params).await?;
            out.insert("profq_regions".into(), json!(to_us(&regions.into_iter().take(opts.top_k).collect::<Vec<_>>(), &["before_ns", "after_ns", "delta_ns"])));
            let warmup = ("warmup_steps", opts.summary.warmup_steps.to_string());
            let steady =
                |rows: Vec<Row>| rows.iter().filter(|r| r.get("warmup").and_then(Value::as_bool) == Some(false)).map(|r| us(r, "dur_ns")).collect::<Vec<f64>>();
            let db = steady(Analyst::new(&engine, "before").rows("step_durations", std::slice::from_ref(&warmup)).await?);
            let da = steady(Analyst::new(&engine, "after").rows("step_durations", &[warmup]).await?);
            out.insert("profq_step_noise".into(), crate::stats::step_verdict(&db, &da));
            out.insert("profq_comparison_level".into(), json!("tables"));
            Ok((Value::Object(out), SideSummary::built(sb), SideSummary::built(sa)))
        }
        (before, after) => {
            let (sb, sa) = (side_summary(before, opts).await?, side_summary(after, opts).await?);
            let mut out = compare_summaries(&sb.doc, &sa.doc, opts.top_k);
            out.insert("profq_comparison_level".into(), json!("summary"));
            Ok((Value::Object(out), sb, sa))
        }
    }
}

async fn side_summary(side: Side, opts: &CompareOptions) -> Result<SideSummary, QueryError> {
    match side {
        Side::Summary(given) => Ok(*given),
        Side::Tables { tables, source_path, run_id } => {
            let engine = Engine::from_tables(&tables, "side", Spread::Narrow)?;
            let mut doc = summary::summarize(&engine, "side", &source_path, &opts.summary).await?;
            doc.run_metadata.run_id = run_id;
            Ok(SideSummary::built(doc))
        }
    }
}
