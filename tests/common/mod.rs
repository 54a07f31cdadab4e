//! Shared test helpers: fixture locations, temp stores, the profq binary, SQL over a store.
#![allow(dead_code)]

pub mod kineto_job;
pub mod servers;
pub mod synth;

use profq::engine::Engine;
use profq::render::{render, Format};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed JAX CPU captures that have XProf oracles next to them.
pub const JAX_CPU_CAPTURES: &[&str] =
    &["host_bound_gappy", "mlp_after", "mlp_before", "mlp_train", "mlp_train_minimal", "multi_device_dp", "scan_remat", "transformer_lm"];

/// The committed JAX NVIDIA-GPU captures (H100 and H200, jax 0.11.2) with XProf oracles next to
/// them.
pub const JAX_GPU_CAPTURES: &[&str] = &[
    "fused_kernels",
    "fused_kernels_concurrent",
    "fused_kernels_nocb",
    "fused_kernels_scan",
    "fused_kernels_scan_concurrent",
    "fused_kernels_scan_nocb",
    "host_bound_gappy",
    "host_bound_gappy_nocb",
    "mlp_after",
    "mlp_before",
    "mlp_train",
    "mlp_train_nocb",
    "mlp_train_detail_nocb_h200",
    "mlp_train_minimal_h200",
    "scan_remat",
    "scan_remat_concurrent",
    "scan_remat_nocb",
    "shape_churn_small",
    "transformer_lm",
    "transformer_lm_concurrent",
    "transformer_lm_nocb",
    "transformer_lm_nohlo_h200",
    "transformer_lm_nohlo_nocb_h200",
    "transformer_lm_wide",
    "transformer_lm_wide_concurrent",
    "transformer_lm_wide_nocb",
];

/// Every profile of the shared fixtures, as inputs (capture dirs or trace files).
pub const SHARED_PROFILES: &[&str] = &[
    "jax_cpu/shape_churn",
    "jax_cpu/transformer_lm",
    "public/openxla-xprof/tpu_v6e_jax_inference",
    "public/TraceLens/mi300x_jax08_conv",
    "public/TraceLens/mi300x_jax08_elementwise",
    "public/TraceLens/mi300x_jax08_gemm",
    "public/TraceLens/mi300x_jax_conv_minimal_legacy",
    "public/TraceLens/kineto/h100_bert-small-uncased.json.gz",
    "public/TraceLens/kineto/mi300_bert-small-uncased.json.gz",
    "public/HolisticTraceAnalysis/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "public/HolisticTraceAnalysis/critical_path",
    "public/HolisticTraceAnalysis/nccl_parser_config/nccl_data.json.gz",
];

/// Our own small JAX CPU captures, committed under tests/data/jax_cpu.
pub fn jax_cpu(name: &str) -> PathBuf {
    repo().join("tests/data/jax_cpu").join(name)
}

/// Our own small JAX GPU captures, committed under tests/data/jax_gpu.
pub fn jax_gpu(name: &str) -> PathBuf {
    repo().join("tests/data/jax_gpu").join(name)
}

/// The shared fixtures folder: $PROFQ_FIXTURES, else ../shared/fixtures next to the repo.
pub fn shared_fixtures() -> PathBuf {
    std::env::var_os("PROFQ_FIXTURES").map(PathBuf::from).unwrap_or_else(|| repo().join("../shared/fixtures"))
}

/// A file under the shared fixtures. Missing: a failure under CI=true, else None (test skipped).
pub fn shared(rel: &str) -> Option<PathBuf> {
    let p = shared_fixtures().join(rel);
    if p.exists() {
        return Some(p);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("fixture {rel} missing under {} (CI requires it)", shared_fixtures().display());
    }
    eprintln!("skipping: fixture {rel} not found under {}", shared_fixtures().display());
    None
}

/// The single xplane.pb of a capture directory.
pub fn xplane_of(capture_dir: &Path) -> PathBuf {
    find_file(capture_dir, ".xplane.pb").expect("capture has an xplane.pb")
}

pub fn find_file(dir: &Path, suffix: &str) -> Option<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    let mut found = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap().to_string_lossy().ends_with(suffix) {
                found.push(p);
            }
        }
    }
    found.sort();
    found.into_iter().next()
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory under the system temp dir. It is left in place when the test
/// ends (a failed test's store stays there to look at); the first call of a test process
/// removes those of test processes that are no longer running.
pub fn temp_dir(tag: &str) -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(remove_temp_dirs_of_ended_processes);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let p = std::env::temp_dir().join(format!("profq-test-{}-{}-{tag}", std::process::id(), n));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// Removes `profq-test-<pid>-*` directories whose process has ended. Only where `/proc` tells
/// which processes run: a test binary running beside this one keeps its directories.
fn remove_temp_dirs_of_ended_processes() {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("profq-test-")).and_then(|rest| rest.split('-').next()) else { continue };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

pub fn profq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profq")).args(args).env_remove("PROFQ_STORE").output().expect("run profq")
}

/// profq with `env` set, asserting success.
pub fn profq_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_profq")).args(args).env_remove("PROFQ_STORE").envs(env.iter().copied()).output().expect("run profq");
    assert!(o.status.success(), "profq {args:?}: {}", stderr(&o));
    o
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Ingests `input` into `store` with the binary and asserts success.
pub fn ingest(store: &Path, input: &Path, run_id: &str) {
    let o = profq(&["ingest", input.to_str().unwrap(), "--store", store.to_str().unwrap(), "--run-id", run_id]);
    assert!(o.status.success(), "ingest {} failed: {}", input.display(), stderr(&o));
}

/// profq's output of `args`, with planes streamed in time windows of `window` events if given.
pub fn profq_in_windows(args: &[&str], window: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_profq"));
    cmd.args(args);
    if let Some(events) = window {
        cmd.env("PROFQ_WINDOW_EVENTS", events);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// `profq summarize INPUT EXTRA...`: the profile_summary.v1 document.
pub fn summarize(input: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["summarize", input.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = profq(&args);
    assert!(o.status.success(), "summarize {}: {}", input.display(), stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// Runs SQL over a store in-process and returns the rows as JSON objects.
pub fn sql(store: &Path, query: &str) -> Vec<serde_json::Value> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let batches = rt.block_on(async {
        let engine = Engine::open(&profq::store::Location::Local(store.to_path_buf())).await.unwrap();
        engine.sql(query).await.unwrap_or_else(|e| panic!("{query}: {e}"))
    });
    let text = render(&batches, Format::Json);
    match serde_json::from_str(&text).unwrap() {
        serde_json::Value::Array(a) => a,
        _ => unreachable!(),
    }
}

/// A JSON file, or the gzipped `<path>.gz` beside it where only that exists (the oracle
/// script gzips its large outputs).
pub fn read_json(path: &Path) -> serde_json::Value {
    let gzipped = path.with_file_name(format!("{}.gz", path.file_name().unwrap().to_string_lossy()));
    if !path.exists() && gzipped.exists() {
        let file = std::fs::File::open(&gzipped).unwrap_or_else(|e| panic!("{}: {e}", gzipped.display()));
        return serde_json::from_reader(std::io::BufReader::new(flate2::read::GzDecoder::new(file))).unwrap();
    }
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

pub fn as_i64(v: &serde_json::Value) -> i64 {
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)).unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn as_str(v: &serde_json::Value) -> &str {
    v.as_str().unwrap_or("")
}

/// Runs `plan` through the official Python MCP client (`tests/agents/mcp_client.py`) against
/// `profq mcp` started with `env`; per server, its listing and its results.
pub fn drive_mcp(plan: &serde_json::Value, env: &[(String, String)]) -> Vec<serde_json::Value> {
    use std::io::Write;
    let mut child = Command::new(servers::python())
        .arg(repo().join("tests/agents/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_profq"))
        .env_remove("PROFQ_STORE")
        .envs(env.iter().cloned())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(plan.to_string().as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "mcp client: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Whether the Python MCP client is installed (under `CI=true` it must be).
pub fn has_mcp_client() -> bool {
    if Command::new(servers::python()).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    servers::missing("the Python MCP client (pip install mcp)");
    false
}
