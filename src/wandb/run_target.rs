//! W&B run targets: which profile a training run wrote, and what the run says about itself.
//!
//! A run target is a W&B run (`ENTITY/PROJECT/RUN_ID`, `ENTITY/PROJECT/runs/RUN_ID`, a
//! `https://wandb.ai/ENTITY/PROJECT/runs/RUN_ID` URL, or a bare id with `--entity` and
//! `--project`), read through W&B's public GraphQL API at `$WANDB_BASE_URL` (default
//! `https://api.wandb.ai`) with `$WANDB_API_KEY`, as W&B's own client reads it. Levanter and
//! marin record the trainer's `log_dir` and `id` in the run's config, and write the profile
//! under `<log_dir>/<id>/profiler` (usually `gs://`): that is the INPUT the target names.
//! The run's metadata becomes run labels (the reference tool's `run_metadata`).

use serde_json::{json, Map, Value};

/// A W&B run, by its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunTarget {
    pub entity: String,
    pub project: String,
    pub run_id: String,
}

impl RunTarget {
    /// Reads a run target in any of its forms (see the module); a bare id takes `entity` and
    /// `project`.
    pub fn parse(target: &str, entity: Option<&str>, project: Option<&str>) -> Result<RunTarget, String> {
        let target = target.trim();
        let path = match target.split_once("://") {
            Some((_, rest)) => {
                let parts: Vec<&str> = rest.split('/').skip(1).filter(|p| !p.is_empty()).collect();
                if parts.len() < 3 {
                    return Err(format!("run target {target:?}: a W&B run URL is https://wandb.ai/ENTITY/PROJECT/runs/RUN_ID"));
                }
                parts
            }
            None => target.split('/').filter(|p| !p.is_empty()).collect(),
        };
        let found = match path.as_slice() {
            [e, p, "runs", id, ..] | [e, p, id] => (e.to_string(), p.to_string(), id.to_string()),
            [id] => match (entity, project) {
                (Some(e), Some(p)) => (e.to_string(), p.to_string(), id.to_string()),
                _ => return Err(format!("run target {target:?}: a bare run id needs --entity and --project")),
            },
            _ => return Err(format!("run target {target:?}: unrecognized (give ENTITY/PROJECT/RUN_ID or a W&B run URL)")),
        };
        let (entity, project, run_id) = found;
        Ok(RunTarget { entity, project, run_id })
    }

    pub fn path(&self) -> String {
        format!("{}/{}/{}", self.entity, self.project, self.run_id)
    }
}

/// The W&B run an INPUT names, when it names one: `wandb://ENTITY/PROJECT/RUN_ID`, a bare
/// `wandb://RUN_ID` of `entity` and `project` (default `$WANDB_ENTITY`, `$WANDB_PROJECT`),
/// or a wandb.ai run URL. Any other INPUT is None.
pub fn run_of_input(input: &str, entity: Option<&str>, project: Option<&str>) -> Option<Result<RunTarget, String>> {
    let target = match input.strip_prefix("wandb://") {
        Some(path) if path.split('/').filter(|p| !p.is_empty()).count() == 2 => {
            return Some(Err(format!("{input:?}: a W&B run INPUT is wandb://ENTITY/PROJECT/RUN_ID, wandb://RUN_ID or a wandb.ai run URL")))
        }
        Some(path) => path,
        None if input.starts_with("https://wandb.ai/") => input,
        None => return None,
    };
    // A bare id is of the entity and project given, else those W&B's own client defaults to.
    let from_env = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
    let entity = entity.map(str::to_string).or_else(|| from_env("WANDB_ENTITY"));
    let project = project.map(str::to_string).or_else(|| from_env("WANDB_PROJECT"));
    Some(
        RunTarget::parse(target, entity.as_deref(), project.as_deref())
            .map_err(|e| e.replace("--entity and --project", "--entity and --project (or WANDB_ENTITY and WANDB_PROJECT)")),
    )
}

/// What W&B holds of a run: its config and summary, as the client presents them (each
/// config key's value unwrapped from W&B's `{"value": …, "desc": …}`).
#[derive(Clone, Debug)]
pub struct WandbRun {
    pub target: RunTarget,
    pub config: Value,
    pub summary: Value,
}

/// The GraphQL query W&B's client sends for `Api().run(path)`, reduced to the fields read here.
const RUN_QUERY: &str = "query Run($project: String!, $entity: String!, $name: String!) { project(name: $project, entityName: $entity) { run(name: $name) { id name displayName config summaryMetrics } } }";

/// Reads the run from W&B's GraphQL API.
pub fn fetch_run(target: &RunTarget) -> Result<WandbRun, String> {
    let variables = json!({"entity": target.entity, "project": target.project, "name": target.run_id});
    let answer = super::api::graphql(RUN_QUERY, variables, "read run targets")?;
    run_of(target, &answer)
}

/// The run in a GraphQL answer (`{"data": {"project": {"run": {…}}}}`; config and summary are
/// JSON texts, as W&B sends them).
fn run_of(target: &RunTarget, answer: &Value) -> Result<WandbRun, String> {
    if let Some(messages) = super::api::errors(answer) {
        return Err(format!("W&B run {}: {messages}", target.path()));
    }
    let run = &answer["data"]["project"]["run"];
    if !run.is_object() {
        return Err(format!("W&B run {}: no such run", target.path()));
    }
    let parse = |field: &str| -> Value {
        match &run[field] {
            Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            other => other.clone(),
        }
    };
    let config = match parse("config") {
        Value::Object(entries) => {
            Value::Object(entries.into_iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k, unwrap_value(v))).collect::<Map<_, _>>())
        }
        _ => Value::Object(Map::new()),
    };
    Ok(WandbRun { target: target.clone(), config, summary: parse("summaryMetrics") })
}

/// W&B keeps each config entry as `{"value": v, "desc": d}`; the client shows `v`.
fn unwrap_value(v: Value) -> Value {
    match v {
        Value::Object(mut entry) if entry.contains_key("value") => entry.remove("value").unwrap_or(Value::Null),
        other => other,
    }
}

/// An int-like value (bools are not counts).
fn count(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

impl WandbRun {
    /// Where the run's profile is: `<trainer.log_dir>/<trainer.id or the run id>/profiler`.
    pub fn profile_dir(&self) -> Result<String, String> {
        let trainer = &self.config["trainer"];
        let log_dir = trainer["log_dir"]
            .as_str()
            .filter(|d| !d.is_empty())
            .ok_or_else(|| format!("W&B run {}: its config has no trainer.log_dir", self.target.path()))?;
        let id = trainer["id"].as_str().filter(|d| !d.is_empty()).unwrap_or(&self.target.run_id);
        Ok(format!("{}/{id}/profiler", log_dir.trim_end_matches('/')))
    }

    /// The run's metadata as run labels named like the summary's `run_metadata` fields, by the
    /// reference tool's rules: its path, git sha, config hash (first 16 hex digits of the
    /// SHA-256 of the config as sorted JSON), device kind, topology, and host and device counts.
    pub fn labels(&self) -> Vec<(String, String)> {
        use sha2::{Digest, Sha256};
        let mut labels = vec![("run_path".to_string(), self.target.path())];
        if let Ok(dir) = self.profile_dir() {
            labels.push(("artifact_ref".into(), dir));
            labels.push(("artifact_name".into(), "profiler".into()));
        }
        let first = |keys: &[&str], from: &[&Value]| from.iter().flat_map(|v| keys.iter().map(move |k| &v[*k])).find(|v| !v.is_null()).cloned();
        if let Some(sha) = first(&["git_commit", "git_sha"], &[&self.config]).and_then(|v| v.as_str().map(str::to_string)) {
            labels.push(("git_sha".into(), sha));
        }
        // serde_json's maps are sorted (no preserve_order), so this is the sorted-keys JSON.
        let digest = Sha256::digest(self.config.to_string().as_bytes());
        labels.push(("config_hash".into(), digest[..8].iter().map(|b| format!("{b:02x}")).collect()));
        if let Some(kind) = first(&["throughput/device_kind", "device_kind"], &[&self.summary]).and_then(|v| v.as_str().map(str::to_string)) {
            labels.push(("hardware_type".into(), kind));
        }
        let resources = &self.config["trainer"]["resources"];
        if let Some(topology) = first(&["topology", "tpu_topology", "mesh_shape"], &[resources]) {
            labels.push(("mesh_or_topology".into(), topology.as_str().map(str::to_string).unwrap_or_else(|| topology.to_string())));
        }
        for (label, keys) in [("num_hosts", ["num_hosts", "throughput/num_hosts"]), ("num_devices", ["num_devices", "throughput/num_devices"])] {
            if let Some(n) = [&self.summary, &self.config].iter().flat_map(|v| keys.iter().map(move |k| &v[*k])).find_map(count) {
                labels.push((label.into(), n.to_string()));
            }
        }
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_targets_in_every_form() {
        let want = RunTarget { entity: "marin-community".into(), project: "marin".into(), run_id: "abc123".into() };
        for t in ["https://wandb.ai/marin-community/marin/runs/abc123", "marin-community/marin/abc123", "marin-community/marin/runs/abc123"] {
            assert_eq!(RunTarget::parse(t, None, None).unwrap(), want, "{t}");
        }
        assert_eq!(RunTarget::parse("abc123", Some("marin-community"), Some("marin")).unwrap(), want);
        assert!(RunTarget::parse("abc123", None, None).unwrap_err().contains("--entity and --project"));
        assert!(RunTarget::parse("a/b", None, None).unwrap_err().contains("unrecognized"));
        assert!(RunTarget::parse("https://wandb.ai/a", None, None).is_err());
    }

    #[test]
    fn a_run_names_its_profile_and_labels() {
        let target = RunTarget::parse("e/p/run-123", None, None).unwrap();
        let config = json!({"trainer": {"value": {"log_dir": "gs://b/logs/", "id": "trainer-456", "resources": {"tpu_topology": "v6e-8"}}, "desc": null}, "git_commit": {"value": "deadbeef"}, "_wandb": {"value": {}}}).to_string();
        let summary = json!({"throughput/device_kind": "TPU v6 lite", "num_devices": 8, "num_hosts": true}).to_string();
        let answer = json!({"data": {"project": {"run": {"id": "x", "name": "run-123", "config": config, "summaryMetrics": summary}}}});
        let run = run_of(&target, &answer).unwrap();
        assert_eq!(run.profile_dir().unwrap(), "gs://b/logs/trainer-456/profiler");
        let labels: std::collections::BTreeMap<_, _> = run.labels().into_iter().collect();
        assert_eq!(labels["run_path"], "e/p/run-123");
        assert_eq!((labels["artifact_ref"].as_str(), labels["artifact_name"].as_str()), ("gs://b/logs/trainer-456/profiler", "profiler"));
        assert_eq!(labels["git_sha"], "deadbeef");
        assert_eq!(labels["hardware_type"], "TPU v6 lite");
        assert_eq!(labels["mesh_or_topology"], "v6e-8");
        assert_eq!(labels["num_devices"], "8");
        assert!(!labels.contains_key("num_hosts"), "a bool is not a count");
        assert_eq!(labels["config_hash"].len(), 16);
        let missing = json!({"data": {"project": {"run": null}}});
        assert!(run_of(&target, &missing).unwrap_err().contains("no such run"));
    }
}
