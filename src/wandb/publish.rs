//! Publishing a summary to W&B: a `profile_summary` artifact holding the summary file (and
//! its markdown report), with the reference tool's metadata, logged by W&B's official
//! Python client (`wandb_publish.py`, run with `$PROFQ_PYTHON`, else `python3`). A dry run
//! only says what would be published.

use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The artifact type of a published summary.
pub const ARTIFACT_TYPE: &str = "profile_summary";

const SCRIPT: &str = include_str!("wandb_publish.py");

pub struct PublishOptions {
    pub summary: PathBuf,
    pub report: Option<PathBuf>,
    /// Default `$WANDB_ENTITY`.
    pub entity: Option<String>,
    /// Default `$WANDB_PROJECT`.
    pub project: Option<String>,
    pub artifact_name: Option<String>,
    /// Default `["latest"]`.
    pub aliases: Vec<String>,
    pub dry_run: bool,
}

/// Publishes (or, dry, describes) the artifact; returns the reference tool's answer:
/// `{status, entity, project, artifact_name, artifact_type, aliases, summary_path,
/// report_path, metadata}`, and `artifact_version` once published.
pub fn publish(opts: &PublishOptions) -> Result<Value, String> {
    let text = std::fs::read_to_string(&opts.summary).map_err(|e| format!("{}: {e}", opts.summary.display()))?;
    let summary: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", opts.summary.display()))?;
    if summary["schema_version"] != crate::summary::SCHEMA_VERSION {
        return Err(format!("{}: not a {} summary", opts.summary.display(), crate::summary::SCHEMA_VERSION));
    }
    if let Some(report) = opts.report.as_ref().filter(|r| !r.is_file()) {
        return Err(format!("{}: no such report file", report.display()));
    }
    let from_env = |given: &Option<String>, var: &str, flag: &str| {
        given.clone().or_else(|| std::env::var(var).ok().filter(|v| !v.is_empty())).ok_or_else(|| format!("give {flag} (or set {var})"))
    };
    let entity = from_env(&opts.entity, "WANDB_ENTITY", "--entity")?;
    let project = from_env(&opts.project, "WANDB_PROJECT", "--project")?;
    let run_id = summary["run_metadata"]["run_id"].as_str().filter(|s| !s.is_empty());
    let artifact_name = opts.artifact_name.clone().unwrap_or_else(|| match run_id {
        Some(id) => format!("profile-summary-{id}"),
        None => format!("profile-summary-{}", utc_stamp()),
    });
    let aliases = if opts.aliases.is_empty() { vec!["latest".to_string()] } else { opts.aliases.clone() };
    let mut answer = json!({
        "status": "dry_run",
        "entity": entity,
        "project": project,
        "artifact_name": artifact_name,
        "artifact_type": ARTIFACT_TYPE,
        "aliases": aliases,
        "summary_path": opts.summary.display().to_string(),
        "report_path": opts.report.as_ref().map(|r| r.display().to_string()),
        "metadata": metadata(&summary),
    });
    if opts.dry_run {
        return Ok(answer);
    }
    let logged = run_client(&answer)?;
    answer["status"] = json!("published");
    answer["artifact_version"] = logged["artifact_version"].clone();
    answer["wandb_run_path"] = logged["run_path"].clone();
    Ok(answer)
}

/// The artifact's metadata, read from the summary as the reference tool reads it.
fn metadata(summary: &Value) -> Value {
    let meta = &summary["run_metadata"];
    let steady = &summary["step_time"]["steady_state_steps"];
    let breakdown = &summary["time_breakdown"];
    let top_gap = summary["gap_before_ops"].as_array().and_then(|gaps| gaps.first());
    let count = |key: &str| summary[key].as_array().map_or(0, Vec::len);
    let mut m = Map::new();
    for key in ["schema_version", "source_format", "source_path", "generated_at_utc"] {
        m.insert(key.into(), summary[key].clone());
    }
    for key in ["run_path", "run_id", "hardware_type", "mesh_or_topology", "git_sha", "config_hash"] {
        m.insert(key.into(), meta[key].clone());
    }
    m.insert("source_artifact_ref".into(), meta["artifact_ref"].clone());
    m.insert("step_median".into(), steady["median"].clone());
    m.insert("step_p90".into(), steady["p90"].clone());
    for part in ["compute", "communication", "host", "stall"] {
        m.insert(format!("{part}_share"), breakdown[part]["share_of_total"].clone());
    }
    m.insert("top_pre_gap_op".into(), top_gap.map_or(Value::Null, |g| g["name"].clone()));
    m.insert("top_pre_gap_total".into(), top_gap.map_or(Value::Null, |g| g["total_gap_duration"].clone()));
    m.insert("num_hierarchical_regions".into(), json!(count("hierarchical_regions")));
    m.insert("num_gap_region_contexts".into(), json!(count("gap_region_contexts")));
    Value::Object(m)
}

/// Runs W&B's client on the artifact described by `spec`; returns what it printed.
fn run_client(spec: &Value) -> Result<Value, String> {
    let python = std::env::var_os("PROFQ_PYTHON").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("python3"));
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("W&B publish needs Python with the wandb package ({}: {e})", Path::new(&python).display()))?;
    child.stdin.take().expect("piped").write_all(spec.to_string().as_bytes()).map_err(|e| format!("W&B publish: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("W&B publish: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("failed");
        return Err(format!("W&B publish: {}", crate::remote::one_line(last)));
    }
    let printed = String::from_utf8_lossy(&out.stdout);
    let last = printed.lines().rev().find(|l| l.starts_with('{')).unwrap_or("{}");
    serde_json::from_str(last).map_err(|e| format!("W&B publish: unreadable answer from the client: {e}"))
}

/// Now in UTC as `YYYYmmdd-HHMMSS`.
fn utc_stamp() -> String {
    // `YYYY-mm-ddTHH:MM:SS…Z` → `YYYYmmdd-HHMMSS`.
    let iso = crate::timing::now_utc();
    let digits: String = iso.chars().take(19).filter(char::is_ascii_digit).collect();
    format!("{}-{}", &digits[..8], &digits[8..14])
}

#[cfg(test)]
mod tests {
    #[test]
    fn stamps_are_utc_dates() {
        let s = super::utc_stamp();
        assert_eq!(s.len(), 15);
        assert!(s.starts_with("20") && s.as_bytes()[8] == b'-');
    }
}
