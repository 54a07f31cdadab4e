//! Track: a comparison → a pass/warn/fail regression record (reference §6.2–6.4), the JSONL
//! history it is appended to, and the history summary.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The reference's thresholds and defaults.
#[derive(Clone, Debug)]
pub struct Thresholds {
    pub max_step_median_regression_pct: f64,
    pub max_step_p90_regression_pct: f64,
    pub max_communication_share_regression_abs: f64,
    pub max_stall_share_regression_abs: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            max_step_median_regression_pct: 5.0,
            max_step_p90_regression_pct: 10.0,
            max_communication_share_regression_abs: 0.05,
            max_stall_share_regression_abs: 0.05,
        }
    }
}

/// §6.2: fail on step-time regressions, warn on share increases, else pass (strict `>`).
pub fn assess(comparison: &Value, t: &Thresholds) -> Value {
    let st = &comparison["step_time"];
    let median_pct = super::pct_delta(st["steady_state_median_before"].as_f64(), st["steady_state_median_after"].as_f64());
    let p90_pct = super::pct_delta(st["steady_state_p90_before"].as_f64(), st["steady_state_p90_after"].as_f64());
    let comm = comparison["time_breakdown_share_delta"]["communication"].clone();
    let stall = comparison["time_breakdown_share_delta"]["stall"].clone();
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    if let Some(v) = median_pct.as_f64().filter(|v| *v > t.max_step_median_regression_pct) {
        failures.push(format!("Steady-state median step time regressed by {v:.2}% (threshold {:.2}%).", t.max_step_median_regression_pct));
    }
    if let Some(v) = p90_pct.as_f64().filter(|v| *v > t.max_step_p90_regression_pct) {
        failures.push(format!("Steady-state p90 step time regressed by {v:.2}% (threshold {:.2}%).", t.max_step_p90_regression_pct));
    }
    if let Some(v) = comm.as_f64().filter(|v| *v > t.max_communication_share_regression_abs) {
        warnings.push(format!("Communication share rose by {v:.4} (threshold {:.4}).", t.max_communication_share_regression_abs));
    }
    if let Some(v) = stall.as_f64().filter(|v| *v > t.max_stall_share_regression_abs) {
        warnings.push(format!("Stall share rose by {v:.4} (threshold {:.4}).", t.max_stall_share_regression_abs));
    }
    let status = if !failures.is_empty() {
        "fail"
    } else if !warnings.is_empty() {
        "warn"
    } else {
        "pass"
    };
    json!({
        "status": status, "failures": failures, "warnings": warnings,
        "metrics": {"steady_state_median_regression_pct": median_pct, "steady_state_p90_regression_pct": p90_pct,
                    "communication_share_delta": comm, "stall_share_delta": stall},
        "comparison": comparison,
    })
}

/// §6.3: the record of one tracked comparison.
pub fn record(assessment: &Value, label: Option<&str>) -> Value {
    let c = &assessment["comparison"];
    let side = |which: &str| json!({"source_path": c[format!("{which}_source")], "run_path": null, "run_id": c["provenance_checks"][format!("{which}_run_id")], "artifact_ref": null});
    json!({"recorded_at_utc": crate::timing::now_utc(), "label": label, "before": side("before"), "after": side("after"), "assessment": assessment})
}

/// Appends a record as one sorted-keys JSON line, creating parent directories.
pub fn append_history(path: &Path, record: &Value) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(f, "{}", serde_json::to_string(record).unwrap_or_default())
}

/// Records of a JSONL history: blank and non-object lines are skipped; a missing file is empty.
pub fn load_history(path: &Path) -> std::io::Result<Vec<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    Ok(text.lines().filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok()).filter(Value::is_object).collect())
}

/// §6.4: counts by status, the most common failures and warnings, latest and recent records.
pub fn summarize_history(path: &Path, tail: usize) -> std::io::Result<Value> {
    let records = load_history(path)?;
    let mut status_counts: BTreeMap<String, i64> = BTreeMap::new();
    let mut failures: BTreeMap<String, i64> = BTreeMap::new();
    let mut warnings: BTreeMap<String, i64> = BTreeMap::new();
    for r in &records {
        let a = &r["assessment"];
        *status_counts.entry(a["status"].as_str().unwrap_or("unknown").to_string()).or_default() += 1;
        for m in a["failures"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            *failures.entry(m.to_string()).or_default() += 1;
        }
        for m in a["warnings"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            *warnings.entry(m.to_string()).or_default() += 1;
        }
    }
    let top = |m: BTreeMap<String, i64>| {
        let mut v: Vec<(String, i64)> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        Value::Array(v.into_iter().take(10).map(|(message, count)| json!({"message": message, "count": count})).collect())
    };
    let recent: Vec<Value> = if tail == 0 { vec![] } else { records.iter().skip(records.len().saturating_sub(tail)).cloned().collect() };
    Ok(json!({
        "history_path": path.display().to_string(), "num_records": records.len(),
        "status_counts": Value::Object(status_counts.into_iter().map(|(k, v)| (k, json!(v))).collect::<Map<_, _>>()),
        "top_failures": top(failures), "top_warnings": top(warnings),
        "latest_record": records.last().cloned().unwrap_or(Value::Null), "recent_records": recent,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_threshold_case_fails() {
        // Steps 100..150 -> 130..180 with warmup 2: steady median 135 -> 165 (+22%).
        let comparison = json!({
            "step_time": {"steady_state_median_before": 135.0, "steady_state_median_after": 165.0,
                          "steady_state_p90_before": 147.0, "steady_state_p90_after": 177.0},
            "time_breakdown_share_delta": {"communication": 0.0, "stall": 0.0},
        });
        let a = assess(&comparison, &Thresholds::default());
        assert_eq!(a["status"], "fail");
        assert!(!a["failures"].as_array().unwrap().is_empty());
        let dir = std::env::temp_dir().join(format!("profq-track-{}", std::process::id()));
        let path = dir.join("nested/history.jsonl");
        let _ = std::fs::remove_dir_all(&dir);
        append_history(&path, &record(&a, Some("t1"))).unwrap();
        let h = summarize_history(&path, 20).unwrap();
        assert_eq!(h["num_records"], 1);
        assert_eq!(h["status_counts"]["fail"], 1);
        assert_eq!(h["latest_record"]["label"], "t1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
