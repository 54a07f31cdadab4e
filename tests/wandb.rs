//! W&B, as the reference tool uses it: run targets resolved through W&B's GraphQL API (a
//! stand-in server answering with the API's response shape, tests/servers/wandb_api.py) to
//! the profile the trainer wrote in a bucket (moto's S3), and summaries published through
//! the real `wandb` client in offline mode.

mod common;

use common::servers::{free_port, python, Emulator, S3};
use common::{jax_cpu, stderr, stdout, temp_dir};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};

/// The stand-in API, stopped when dropped.
struct Api {
    child: Child,
    port: u16,
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn api(runs: &Value) -> Api {
    let port = free_port();
    let file = temp_dir("wandb-runs").join("runs.json");
    std::fs::write(&file, runs.to_string()).unwrap();
    let script = common::repo().join("tests/servers/wandb_api.py");
    let child =
        Command::new(python()).arg(script).arg(port.to_string()).arg("test-key").arg(&file).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the W&B stand-in did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Api { child, port }
}

fn has_wandb() -> bool {
    let ok = Command::new(python()).args(["-c", "import wandb"]).output().is_ok_and(|o| o.status.success());
    if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the wandb package is not installed in the test venv (CI requires it; .ci/run installs it)");
    }
    ok
}

#[test]
fn a_run_target_ingests_the_profile_its_trainer_wrote() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("logs");
    s3.upload("logs", "marin/trainer-456/profiler", &jax_cpu("mlp_train"));
    let runs = json!({"marin-community/marin/run-123": {
        "config": {"trainer": {"log_dir": "s3://logs/marin", "id": "trainer-456", "resources": {"tpu_topology": "v6e-8"}}, "git_commit": "0123abcd"},
        "summaryMetrics": {"throughput/device_kind": "TPU v6 lite", "num_devices": 8, "num_hosts": 2}
    }});
    let api = api(&runs);
    let base = format!("http://127.0.0.1:{}", api.port);
    let env = [("WANDB_BASE_URL", base.as_str()), ("WANDB_API_KEY", "test-key")];
    let store = temp_dir("wandb-store");
    let cache = temp_dir("remote-cache");
    for target in ["https://wandb.ai/marin-community/marin/runs/run-123", "run-123"] {
        let mut args = vec!["ingest", "--run-target", target, "--store", store.to_str().unwrap()];
        if target == "run-123" {
            args.extend(["--entity", "marin-community", "--project", "marin"]);
        }
        let o = s3.profq(&args, &cache, &env);
        assert!(o.status.success(), "{target}: {}", stderr(&o));
    }
    let rows = common::sql(&store, "SELECT run_id, source_path, labels FROM runs");
    assert_eq!(rows.len(), 1, "the second ingest of the same trace is a no-op: {rows:?}");
    assert_eq!(rows[0]["run_id"], "trainer-456");
    assert_eq!(rows[0]["source_path"], "s3://logs/marin/trainer-456/profiler");
    let labels = rows[0]["labels"].to_string();
    for want in ["marin-community/marin/run-123", "0123abcd", "TPU v6 lite", "v6e-8", "config_hash"] {
        assert!(labels.contains(want), "{want} missing from the run's labels: {labels}");
    }
    // The run's summary carries its W&B metadata.
    let o = common::profq(&["summarize", "--run", "trainer-456", "--store", store.to_str().unwrap()]);
    let summary: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    let meta = &summary["run_metadata"];
    assert_eq!(meta["run_path"], "marin-community/marin/run-123");
    assert_eq!(meta["git_sha"], "0123abcd");
    assert_eq!(meta["mesh_or_topology"], "v6e-8");
    assert_eq!(meta["artifact_ref"], "s3://logs/marin/trainer-456/profiler");
    assert_eq!(meta["run_id"], "trainer-456");
    // A wrong key, an unknown run, a malformed target: one line each.
    let bad_key = s3.profq(
        &["ingest", "--run-target", "marin-community/marin/run-123", "--store", store.to_str().unwrap()],
        &cache,
        &[("WANDB_BASE_URL", &base), ("WANDB_API_KEY", "wrong")],
    );
    assert_eq!(bad_key.status.code(), Some(3), "{}", stderr(&bad_key));
    assert!(stderr(&bad_key).contains("401"), "{}", stderr(&bad_key));
    let unknown = s3.profq(&["ingest", "--run-target", "marin-community/marin/nope", "--store", store.to_str().unwrap()], &cache, &env);
    assert_eq!(unknown.status.code(), Some(3));
    assert!(stderr(&unknown).contains("no such run"), "{}", stderr(&unknown));
    let malformed = s3.profq(&["ingest", "--run-target", "a/b", "--store", store.to_str().unwrap()], &cache, &env);
    assert_eq!(malformed.status.code(), Some(2), "{}", stderr(&malformed));
    for o in [&bad_key, &unknown, &malformed] {
        assert_eq!(stderr(o).trim().lines().count(), 1, "{}", stderr(o));
        assert!(!stderr(o).contains("test-key"));
    }
}

fn summary_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("summary.json");
    let o = common::profq(&["summarize", jax_cpu("mlp_train").to_str().unwrap(), "--output", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    path
}

#[test]
fn a_dry_run_says_what_would_be_published() {
    let dir = temp_dir("publish");
    let summary = summary_file(&dir);
    let o = common::profq(&["publish", summary.to_str().unwrap(), "--entity", "e", "--project", "p", "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["status"], "dry_run");
    assert_eq!(v["artifact_type"], "profile_summary");
    assert_eq!(v["aliases"], json!(["latest"]));
    assert_eq!(v["summary_path"], summary.to_str().unwrap());
    assert!(v["artifact_name"].as_str().unwrap().starts_with("profile-summary-"));
    assert_eq!(v["metadata"]["schema_version"], "profile_summary.v1");
    assert_eq!(v["metadata"]["source_format"], "xplane_pb");
    assert!(v["metadata"]["step_median"].is_number());
    let named = common::profq(&[
        "publish",
        summary.to_str().unwrap(),
        "--entity",
        "e",
        "--project",
        "p",
        "--artifact-name",
        "n",
        "--alias",
        "a",
        "--alias",
        "b",
        "--dry-run",
    ]);
    let v: Value = serde_json::from_str(&stdout(&named)).unwrap();
    assert_eq!((v["artifact_name"].clone(), v["aliases"].clone()), (json!("n"), json!(["a", "b"])));
    let no_project = Command::new(env!("CARGO_BIN_EXE_profq"))
        .args(["publish", summary.to_str().unwrap(), "--entity", "e", "--dry-run"])
        .env_remove("WANDB_PROJECT")
        .output()
        .unwrap();
    assert_eq!(no_project.status.code(), Some(3), "{}", stderr(&no_project));
    assert!(stderr(&no_project).contains("--project"));
}

#[test]
fn publishing_records_the_artifact_in_an_offline_wandb_run() {
    if !has_wandb() {
        return;
    }
    let dir = temp_dir("publish");
    let summary = summary_file(&dir);
    let report = dir.join("report.md");
    let o = common::profq(&["report", jax_cpu("mlp_train").to_str().unwrap(), "--output", report.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let wandb_dir = temp_dir("wandb-dir");
    let o = Command::new(env!("CARGO_BIN_EXE_profq"))
        .args([
            "publish",
            summary.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--entity",
            "e",
            "--project",
            "p",
            "--artifact-name",
            "mlp-train-summary",
        ])
        .env("PROFQ_PYTHON", python())
        .env("WANDB_MODE", "offline")
        .env("WANDB_DIR", &wandb_dir)
        .env("WANDB_SILENT", "true")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["status"], "published");
    let script = common::repo().join("tests/servers/wandb_offline_artifacts.py");
    let read = Command::new(python()).arg(script).arg(&wandb_dir).output().unwrap();
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    let artifacts: Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(artifacts.as_array().unwrap().len(), 1, "{artifacts}");
    assert_eq!(artifacts[0]["name"], "mlp-train-summary");
    assert_eq!(artifacts[0]["type"], "profile_summary");
    assert_eq!(artifacts[0]["files"], json!(["report.md", "summary.json"]));
}

/// Two W&B runs (run-1 before a change, run-2 after it) whose trainers wrote their profiles
/// to moto's S3, and a third whose config names no log dir, served by the stand-in API.
fn two_runs() -> Option<(S3, Api)> {
    let s3 = S3::start()?;
    s3.mkbucket("logs");
    s3.upload("logs", "marin/before-1/profiler", &jax_cpu("mlp_before"));
    s3.upload("logs", "marin/after-2/profiler", &jax_cpu("mlp_after"));
    let runs = json!({
        "marin-community/marin/run-1": {"config": {"trainer": {"log_dir": "s3://logs/marin", "id": "before-1"}}, "summaryMetrics": {}},
        "marin-community/marin/run-2": {"config": {"trainer": {"log_dir": "s3://logs/marin", "id": "after-2"}}, "summaryMetrics": {}},
        "marin-community/marin/no-log-dir": {"config": {"trainer": {}}, "summaryMetrics": {}},
    });
    Some((s3, api(&runs)))
}

/// A W&B run is an INPUT of every command (`wandb://ENTITY/PROJECT/RUN_ID` or a wandb.ai run
/// URL): each reads the profile its trainer wrote, as `--run-target` does, on both sides of a
/// comparison too; an ingest labels the run with the W&B run's metadata.
#[test]
fn a_wandb_run_is_an_input_everywhere() {
    let Some((s3, api)) = two_runs() else { return };
    let base = format!("http://127.0.0.1:{}", api.port);
    let env = [("WANDB_BASE_URL", base.as_str()), ("WANDB_API_KEY", "test-key")];
    let cache = temp_dir("wandb-input-cache");
    let run = |args: &[&str]| {
        let o = s3.profq(args, &cache, &env);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    let by_bucket = run(&["summarize", "s3://logs/marin/before-1/profiler"]);
    assert_eq!(run(&["summarize", "wandb://marin-community/marin/run-1"]), by_bucket, "summarize");
    assert_eq!(run(&["summarize", "https://wandb.ai/marin-community/marin/runs/run-1"]), by_bucket, "a run URL");
    let bare = s3.profq(&["summarize", "wandb://run-1"], &cache, &[env[0], env[1], ("WANDB_ENTITY", "marin-community"), ("WANDB_PROJECT", "marin")]);
    assert_eq!(stdout(&bare), by_bucket, "a bare id of WANDB_ENTITY/WANDB_PROJECT: {}", stderr(&bare));
    assert_eq!(run(&["summarize", "run-1", "--entity", "marin-community", "--project", "marin"]), by_bucket, "a bare id of --entity and --project");
    assert_eq!(
        run(&["compare", "--before", "run-1", "--after", "run-2", "--entity", "marin-community", "--project", "marin", "--format", "json"]),
        run(&["compare", "--before", "s3://logs/marin/before-1/profiler", "--after", "s3://logs/marin/after-2/profiler", "--format", "json"]),
        "bare ids on both sides"
    );
    let question = "what are the top 10 ops by exclusive time?";
    assert_eq!(run(&["query", question, "wandb://marin-community/marin/run-1"]), run(&["query", question, "s3://logs/marin/before-1/profiler"]));
    assert_eq!(
        run(&["compare", "--before", "wandb://marin-community/marin/run-1", "--after", "wandb://marin-community/marin/run-2", "--format", "json"]),
        run(&["compare", "--before", "s3://logs/marin/before-1/profiler", "--after", "s3://logs/marin/after-2/profiler", "--format", "json"]),
        "both sides of a comparison"
    );
    let store = temp_dir("wandb-input-store");
    run(&["ingest", "wandb://marin-community/marin/run-2", "--store", store.to_str().unwrap()]);
    let rows = common::sql(&store, "SELECT run_id, labels FROM runs");
    assert_eq!(rows[0]["run_id"], "after-2");
    assert!(rows[0]["labels"].to_string().contains("marin-community/marin/run-2"), "{rows:?}");
    // A missing run, a run without a profile dir, a wrong key, a malformed target: one line each, no key.
    for (input, env, code, says) in [
        ("wandb://marin-community/marin/nope", &env[..], 3, "no such run"),
        ("wandb://marin-community/marin/no-log-dir", &env[..], 3, "log_dir"),
        ("wandb://marin-community/marin/run-1", &[("WANDB_BASE_URL", base.as_str()), ("WANDB_API_KEY", "wrong")][..], 3, "401"),
        ("wandb://marin-community/marin", &env[..], 2, "ENTITY/PROJECT/RUN_ID"),
        ("wandb://run-1", &env[..], 2, "WANDB_ENTITY"),
    ] {
        let o = s3.profq(&["summarize", input], &cache, env);
        assert_eq!(o.status.code(), Some(code), "{input}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{input}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
        assert!(!stderr(&o).contains("test-key") && !stderr(&o).contains("wrong"), "{}", stderr(&o));
    }
}

/// A W&B artifact is an INPUT (`wandb-artifact://ENTITY/PROJECT/NAME:ALIAS`): its files are
/// listed through the API (page by page), fetched into the cache once, and read there as the
/// local profile dir is; a second read fetches nothing while the digest is the same.
#[test]
fn a_wandb_artifact_is_an_input_fetched_once() {
    let profile = jax_cpu("mlp_before");
    let runs = json!({"__artifacts__": {"marin-community/marin/profile:v0": {"digest": "0123abcd", "dir": profile}}});
    let api = api(&runs);
    let base = format!("http://127.0.0.1:{}", api.port);
    let cache = temp_dir("wandb-artifact-cache");
    let run = |args: &[&str], key: &str| {
        Command::new(env!("CARGO_BIN_EXE_profq"))
            .args(args)
            .env_remove("PROFQ_STORE")
            .env("PROFQ_CACHE_DIR", &cache)
            .env("WANDB_BASE_URL", &base)
            .env("WANDB_API_KEY", key)
            .output()
            .unwrap()
    };
    let downloads = || -> u64 {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", api.port)).unwrap();
        std::io::Write::write_all(&mut stream, b"GET /downloads HTTP/1.0\r\n\r\n").unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
        let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        body["downloads"].as_u64().unwrap()
    };
    let input = "wandb-artifact://marin-community/marin/profile:v0";
    let local = common::profq(&["summarize", profile.to_str().unwrap()]);
    let o = run(&["summarize", input], "test-key");
    assert!(o.status.success(), "{}", stderr(&o));
    let body = |text: String| {
        let mut doc: Value = serde_json::from_str(&text).unwrap();
        doc.as_object_mut().unwrap().remove("source_path");
        doc
    };
    assert!(body(stdout(&o)) == body(stdout(&local)), "the artifact summarised unlike the local dir");
    let fetched = downloads();
    assert!(fetched > 2, "several pages of files: {fetched}");
    let o = run(&["summarize", input], "test-key");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(downloads(), fetched, "the second read comes from the cache");
    for (input, key, code, says) in [
        ("wandb-artifact://marin-community/marin/nope:v0", "test-key", 3, "no such artifact"),
        ("wandb-artifact://marin-community/marin/profile:v0", "wrong", 3, "401"),
        ("wandb-artifact://marin-community/profile", "test-key", 2, "NAME:ALIAS"),
    ] {
        let o = run(&["summarize", input], key);
        assert_eq!(o.status.code(), Some(code), "{input}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{input}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
}

/// The reference workflow through `profq mcp` against two W&B runs: an agent summarizes the
/// run before a change and the run after it, asks what the top ops are, compares the two and
/// reads the report, each tool given `wandb://` INPUTs (tests/agents/mcp_client.py, the
/// official Python MCP client).
#[test]
fn an_agent_compares_two_wandb_runs_over_mcp() {
    if !common::has_mcp_client() {
        return;
    }
    let Some((s3, api)) = two_runs() else { return };
    let (before, after) = ("wandb://marin-community/marin/run-1", "wandb://marin-community/marin/run-2");
    let calls = json!([
        ["summarize", {"input": before}],
        ["summarize", {"input": after}],
        ["query", {"question": "what are the top 10 ops by exclusive time?", "input": after}],
        ["compare", {"before": before, "after": after}],
        ["report", {"input": after}],
    ]);
    let plan = json!({"servers": [{"args": [], "calls": calls}]});
    let cache = temp_dir("wandb-mcp-cache");
    let mut env = s3.env();
    env.extend([
        ("PROFQ_CACHE_DIR".to_string(), cache.display().to_string()),
        ("WANDB_BASE_URL".to_string(), format!("http://127.0.0.1:{}", api.port)),
        ("WANDB_API_KEY".to_string(), "test-key".to_string()),
    ]);
    let out = common::drive_mcp(&plan, &env);
    let results = out[0]["results"].as_array().unwrap();
    for r in results {
        assert_eq!(r["is_error"], false, "{}: {}", r["tool"], r["text"]);
    }
    let before_summary: Value = serde_json::from_str(results[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(before_summary["source_path"], "s3://logs/marin/before-1/profiler", "the run's profile");
    assert_ne!(results[0]["text"], results[1]["text"], "two runs, two summaries");
    let compared: Value = serde_json::from_str(results[3]["text"].as_str().unwrap()).unwrap();
    assert!(compared.get("verdict").is_some() || compared.get("step_time").is_some(), "a comparison: {compared}");
    assert!(results[4]["text"].as_str().unwrap().starts_with('#'), "a markdown report");
}
