//! compare / track / history / bundle / trends on real captures and the reference's cases.

mod common;
use common::synth::*;
use common::*;
use serde_json::Value;
use std::path::Path;

fn compare(before: &Path, after: &Path, extra: &[&str]) -> (Value, std::process::Output) {
    let mut args = vec!["compare", "--before", before.to_str().unwrap(), "--after", after.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = profq(&args);
    let v = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    (v, o)
}

#[test]
fn mlp_before_after_is_a_significant_improvement_and_names_the_eager_ops() {
    // The same workloads captured on CPU and on an H100.
    for dir in [jax_cpu as fn(&str) -> std::path::PathBuf, jax_gpu] {
        check_mlp_before_after(&dir("mlp_before"), &dir("mlp_after"));
    }
}

fn check_mlp_before_after(before: &std::path::Path, after: &std::path::Path) {
    let (c, o) = compare(before, after, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c["profq_comparison_level"], "tables");
    assert_eq!(c["profq_step_noise"]["verdict"], "improved", "{}", c["profq_step_noise"]);
    let delta = c["step_time"]["steady_state_median_delta"].as_f64().unwrap();
    assert!(delta < -15_000.0, "median delta {delta} µs");
    let gone: Vec<String> = c["profq_ops"]["disappeared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{} {}", r["name_before"].as_str().unwrap_or(""), r["scope_path"].as_str().unwrap_or("")))
        .collect();
    for eager in ["jit(add)", "jit(sqrt)", "jit(true_divide)", "jit(integer_pow)"] {
        assert!(gone.iter().any(|g| g.contains(eager)), "{eager} not among disappeared ops: {gone:?}");
    }
    assert!(!c["improved_ops"].as_array().unwrap().is_empty());
    assert_eq!(c["provenance_checks"]["status"], "pass");
}

/// A profile side is decoded, and a stored run's side read, with only the columns a comparison
/// reads (its engine refuses a statement reading any other): comparing two INPUTs gives what
/// comparing their stored runs gives, on CPU and on an H100.
#[test]
fn comparing_inputs_equals_comparing_their_stored_runs() {
    let store = temp_dir("compare-inputs-vs-runs");
    for dir in [jax_cpu as fn(&str) -> std::path::PathBuf, jax_gpu] {
        let (before, after) = (dir("mlp_before"), dir("mlp_after"));
        for (input, run) in [(&before, "b"), (&after, "a")] {
            let o = profq(&["ingest", input.to_str().unwrap(), "--store", store.to_str().unwrap(), "--run-id", run, "--force"]);
            assert!(o.status.success(), "{}", stderr(&o));
        }
        let (from_inputs, o) = compare(&before, &after, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let (from_runs, o) = compare(Path::new("b"), Path::new("a"), &["--store", store.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let without_run_ids = |mut c: Value| {
            for key in ["before_run_id", "after_run_id"] {
                c["provenance_checks"][key] = Value::Null;
            }
            c
        };
        assert_eq!(without_run_ids(from_inputs), without_run_ids(from_runs), "{}", before.display());
    }
}

/// The same workload captured with command buffers (CUDA graphs) and without them compares op by
/// op: the graphs' kernels are placed on the instructions the other capture's kernels name, so
/// no op appears or disappears (before placement, 85 appeared and 64 disappeared here).
#[test]
fn captures_with_and_without_command_buffers_compare_op_by_op() {
    for name in ["mlp_train", "transformer_lm", "transformer_lm_wide"] {
        let (c, o) = compare(&jax_gpu(name), &jax_gpu(&format!("{name}_nocb")), &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        for side in ["appeared", "disappeared"] {
            assert_eq!(c["profq_ops"][side], serde_json::json!([]), "{name}: {side}");
        }
        assert!(!c["profq_ops"]["changed"].as_array().unwrap().is_empty(), "{name}");
    }
}

#[test]
fn bundle_writes_every_file() {
    let out = temp_dir("bundle");
    let history = out.join("h/history.jsonl");
    let o = profq(&[
        "bundle",
        "--before",
        jax_cpu("mlp_before").to_str().unwrap(),
        "--after",
        jax_cpu("mlp_after").to_str().unwrap(),
        "--output-dir",
        out.join("b").to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
        "--label",
        "bundle-test",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(["pass", "warn", "fail"].contains(&m["status"].as_str().unwrap()));
    for key in
        ["before_summary_path", "after_summary_path", "comparison_path", "tracking_path", "before_report_path", "after_report_path", "comparison_report_path"]
    {
        let p = m[key].as_str().unwrap_or_else(|| panic!("manifest lacks {key}"));
        assert!(std::fs::metadata(p).unwrap().len() > 0, "{key}");
    }
    let h = profq(&["history", "--history", history.to_str().unwrap()]);
    let hv: Value = serde_json::from_str(&stdout(&h)).unwrap();
    assert_eq!(hv["num_records"], 1);
    assert_eq!(hv["latest_record"]["label"], "bundle-test");
}

#[test]
fn kineto_h100_vs_mi300_warns_on_device_kind_and_compares_kernels() {
    let (Some(h100), Some(mi300)) =
        (shared("public/TraceLens/kineto/h100_bert-small-uncased.json.gz"), shared("public/TraceLens/kineto/mi300_bert-small-uncased.json.gz"))
    else {
        return;
    };
    let (c, o) = compare(&h100, &mi300, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c["provenance_checks"]["status"], "warn");
    let msgs = c["provenance_checks"]["messages"].to_string();
    assert!(msgs.contains("Device kinds differ") && msgs.contains("H100"), "{msgs}");
    let ops = &c["profq_ops"];
    assert!(!ops["changed"].as_array().unwrap().is_empty());
    assert!(!ops["appeared"].as_array().unwrap().is_empty() && !ops["disappeared"].as_array().unwrap().is_empty());
}

#[test]
fn identical_capture_fails_strict_provenance_and_repeat_capture_is_noise() {
    let mlp = jax_cpu("mlp_train");
    let (c, o) = compare(&mlp, &mlp, &[]);
    assert!(o.status.success());
    assert_eq!(c["provenance_checks"]["status"], "fail");
    let (_, strict) = compare(&mlp, &mlp, &["--strict-provenance"]);
    assert_eq!(strict.status.code(), Some(5));
    assert!(stderr(&strict).contains("Provenance checks failed"), "{}", stderr(&strict));
    let (c, o) = compare(&mlp, &jax_cpu("mlp_train_repeat"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c["profq_step_noise"]["verdict"], "within noise", "{}", c["profq_step_noise"]);
    assert_eq!(c["provenance_checks"]["status"], "pass");
}

fn steps_trace(dir: &Path, name: &str, first: f64) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.trace.json.gz"));
    let labels = ["0", "1", "2", "3", "4", "5"];
    let mut events: Vec<(i64, i64, &str, f64, f64, &str)> =
        labels.iter().enumerate().map(|(i, n)| (1, 1, *n, i as f64 * 1000.0, first + 10.0 * i as f64, "")).collect();
    events.push((1, 2, "fusion.1", 0.0, 50.0, ""));
    write_trace_json(&path, &[(1, "/device:TPU:0")], &[(1, 1, "Steps"), (1, 2, "XLA Ops")], &events);
    path
}

#[test]
fn track_fails_on_a_step_time_regression_and_appends_history() {
    let dir = temp_dir("track");
    let before = steps_trace(&dir, "before", 100.0);
    let after = steps_trace(&dir, "after", 130.0);
    let history = dir.join("history.jsonl");
    let o = profq(&[
        "track",
        "--before",
        before.to_str().unwrap(),
        "--after",
        after.to_str().unwrap(),
        "--warmup-steps",
        "2",
        "--max-step-median-regression-pct",
        "5",
        "--label",
        "nightly",
        "--history",
        history.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["assessment"]["status"], "fail");
    assert!(!r["assessment"]["failures"].as_array().unwrap().is_empty());
    let lines: Vec<String> = std::fs::read_to_string(&history).unwrap().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 1);
    let rec: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(rec["label"], "nightly");
    // The same pair from its tables, and from two summary files: median delta is exactly the shift.
    let (c, _) = compare(&before, &after, &["--warmup-steps", "2"]);
    assert_eq!(c["step_time"]["steady_state_median_delta"].as_f64(), Some(30.0));
    let (sb, sa) = (dir.join("before.summary.json"), dir.join("after.summary.json"));
    for (input, out) in [(&before, &sb), (&after, &sa)] {
        let o = profq(&["summarize", input.to_str().unwrap(), "--warmup-steps", "2", "--output", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (c, o) = compare(&sb, &sa, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c["profq_comparison_level"], "summary");
    assert_eq!(c["step_time"]["steady_state_median_delta"].as_f64(), Some(30.0));
    assert_eq!(c["provenance_checks"]["status"], "pass");
}

#[test]
fn trends_over_a_store_of_real_runs() {
    let store = temp_dir("trends");
    let runs = ["mlp_before", "mlp_after", "mlp_train", "mlp_train_repeat", "transformer_lm", "multi_device_dp"];
    for r in runs {
        let o = profq(&["ingest", jax_cpu(r).to_str().unwrap(), "--store", store.to_str().unwrap(), "--label", &format!("name={r}")]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let run = |args: &[&str]| stdout(&profq(args));
    let a = run(&["run", "trends", "--store", store.to_str().unwrap(), "--format", "json"]);
    let b = run(&["run", "trends", "--store", store.to_str().unwrap(), "--format", "json"]);
    assert_eq!(a, b);
    let rows: Vec<Value> = serde_json::from_str(&a).unwrap();
    assert_eq!(rows.len(), runs.len());
    let order: Vec<&str> = rows.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(order, runs);
    assert!(rows.iter().all(|r| r["steady_median_ns"].as_f64().unwrap() > 0.0));
    assert!(rows[5]["all_reduce_ns"].as_i64().unwrap() > 0);
    assert_eq!(rows[0]["labels"], "name=mlp_before");
    let q = profq(&["query", "how did dot.1 change across runs?", "--store", store.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&stdout(&q)).unwrap();
    assert_eq!(v["query_type"], "trend");
    assert_eq!(v["results"].as_array().unwrap().len(), runs.len());
    let compare_runs = profq(&["compare", "--before", "mlp_before", "--after", "mlp_after", "--store", store.to_str().unwrap()]);
    let c: Value = serde_json::from_str(&stdout(&compare_runs)).unwrap();
    assert_eq!(c["provenance_checks"]["before_run_id"], "mlp_before");
    assert_eq!(c["profq_step_noise"]["verdict"], "improved");
}
