//! What real PyTorch (Kineto) traces carry, each from the format's documented shapes: ns
//! resolution on epoch timestamps, integers beyond i64 in args, 2021-era category names,
//! devices that are no CUDA GPU (MTIA, ROCm), CPU-only traces, and the findings PyTorch
//! engineers read (transfers, compilation) in PyTorch's terms.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Writes a trace's JSON text as `rank0.pt.trace.json` in a directory of its own.
fn write_text(tag: &str, text: &str) -> PathBuf {
    let trace = temp_dir(tag).join("rank0.pt.trace.json");
    std::fs::write(&trace, text).unwrap();
    trace
}

/// Writes a Kineto trace of `events` (with `extra` top-level keys).
fn write_trace(tag: &str, events: Vec<Value>, extra: Value) -> PathBuf {
    let mut top = json!({"schemaVersion": 1, "traceEvents": events, "displayTimeUnit": "ms"});
    if let (Some(t), Value::Object(more)) = (top.as_object_mut(), extra) {
        t.extend(more);
    }
    write_text(tag, &top.to_string())
}

/// Ingests a trace into a store beside it and returns the store.
fn ingest_file(trace: &std::path::Path) -> PathBuf {
    let store = trace.parent().unwrap().join("store");
    ingest(&store, trace, "t");
    store
}

fn ingest_trace(tag: &str, events: Vec<Value>, extra: Value) -> PathBuf {
    ingest_file(&write_trace(tag, events, extra))
}

fn meta(pid: i64, tid: i64, process: &str, label: &str, thread: &str) -> Vec<Value> {
    vec![
        json!({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": process}}),
        json!({"name": "process_labels", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"labels": label}}),
        json!({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": thread}}),
    ]
}

#[test]
fn ns_timestamps_on_the_epoch_keep_every_ns() {
    // 1.7e15 µs as an f64 keeps 0.25 µs steps: these three events would collapse.
    // serde_json would write the f64s rounded; the text is what a trace holds.
    let store = ingest_file(&write_text(
        "kineto-ns",
        r#"{"schemaVersion":1,"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1700000000000000.001,"dur":0.5},
            {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":1700000000000000.124,"dur":0.0007},
            {"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":"1700000000000001.999","dur":"1.0005"}]}"#,
    ));
    let rows = sql(&store, "SELECT CAST(name AS VARCHAR) AS name, start_ns, dur_ns FROM events ORDER BY name");
    let got: Vec<(String, i64, i64)> = rows.iter().map(|r| (as_str(&r["name"]).to_string(), as_i64(&r["start_ns"]), as_i64(&r["dur_ns"]))).collect();
    assert_eq!(got, [("a".into(), 0, 500), ("b".into(), 123, 1), ("c".into(), 1998, 1001)]);
    let runs = sql(&store, "SELECT start_epoch_ns FROM runs");
    assert_eq!(as_i64(&runs[0]["start_epoch_ns"]), 1_700_000_000_000_000_001);
}

/// Kineto writes C++'s 64-bit integers: addresses and hashes up to u64::MAX.
#[test]
fn integers_beyond_i64_stay_exact_in_args() {
    let store = ingest_file(&write_text(
        "kineto-bigint",
        r#"{"schemaVersion": 1, "traceEvents": [
        {"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":10,"dur":5,
         "args":{"Addr": 18446744073709551615, "Hash": 9223372036854775808, "Neg": -9223372036854775808}}]}"#,
    ));
    let rows = sql(&store, "SELECT args['Addr'] AS addr, args['Hash'] AS hash, args['Neg'] AS neg FROM events");
    assert_eq!(rows[0]["addr"], "18446744073709551615");
    assert_eq!(rows[0]["hash"], "9223372036854775808");
    assert_eq!(rows[0]["neg"], "-9223372036854775808");
}

#[test]
fn categories_of_2021_are_read_as_todays() {
    let mut events = meta(0, 7, "python3", "GPU 0", "stream 7");
    events.extend([
        json!({"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50, "args": {}}),
        json!({"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 5, "args": {"correlation": 3}}),
        json!({"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 120, "dur": 40, "args": {"correlation": 3, "stream": 7, "device": 0}}),
        json!({"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 170, "dur": 30, "args": {"correlation": 4}}),
        json!({"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7, "ts": 175, "dur": 20, "args": {"correlation": 4, "stream": 7, "device": 0}}),
    ]);
    let store = ingest_trace("kineto-2021", events, json!({}));
    let cats = sql(&store, "SELECT DISTINCT CAST(category AS VARCHAR) AS c FROM events ORDER BY c");
    let cats: Vec<&str> = cats.iter().map(|r| as_str(&r["c"])).collect();
    assert_eq!(cats, ["cpu_op", "cuda_runtime", "gpu_memcpy", "kernel"]);
    let ops = sql(
        &store,
        "SELECT CAST(name AS VARCHAR) AS name, CAST(device AS VARCHAR) AS device, CAST(region_path AS VARCHAR) AS scope FROM ops ORDER BY start_ns",
    );
    assert_eq!((as_str(&ops[0]["name"]), as_str(&ops[0]["device"])), ("volta_sgemm_128x64_nn", "GPU:0"));
    // The kernel's launch is found through the 2021 runtime category.
    assert!(as_str(&ops[0]["scope"]).contains("aten::mm"), "{ops:?}");
}

#[test]
fn devices_are_named_by_the_traces_own_device_fields() {
    let mut events = meta(9, 4, "MTIA 9", "MTIA 9", "Stream 1 FW");
    events.extend(meta(2, 0, "python3", "GPU 2", "stream 0 "));
    events.extend([
        json!({"ph": "X", "cat": "mtia_ccp_events", "name": "permute_2d_sparse_data", "pid": 9, "tid": 4, "ts": 100, "dur": 30, "args": {"correlation": 1, "stream": 102}}),
        json!({"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_HHS_BH_MT64x64x16", "pid": 2, "tid": 0, "ts": 100, "dur": 20, "args": {"correlation": 2, "stream": 0, "device": 2}}),
    ]);
    let store = ingest_trace("kineto-devices", events, json!({}));
    let planes = sql(&store, "SELECT DISTINCT CAST(plane AS VARCHAR) AS plane, CAST(device AS VARCHAR) AS device FROM events ORDER BY device");
    let got: Vec<(&str, &str)> = planes.iter().map(|r| (as_str(&r["plane"]), as_str(&r["device"]))).collect();
    assert_eq!(got, [("python3", "GPU:2"), ("MTIA 9", "MTIA:9")]);
}

#[test]
fn a_cpu_only_trace_summarizes_with_no_device_and_says_so() {
    let events = vec![
        json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 500, "args": {}}),
        json!({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 120, "dur": 300, "args": {}}),
        json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 700, "dur": 500, "args": {}}),
        json!({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 720, "dur": 300, "args": {}}),
    ];
    let trace = write_trace("kineto-cpu", events, json!({}));
    let s = summarize(&trace, &[]);
    assert_eq!(s["run_metadata"]["num_devices"], 0, "{}", s["run_metadata"]);
    assert!(s["hot_ops"].as_array().unwrap().is_empty());
    let warnings = s["trace_overview"]["quality_warnings"].to_string();
    assert!(warnings.contains("CPU-only"), "{warnings}");
}

#[test]
fn pytorch_findings_speak_pytorch() {
    // A step that copies a batch in (the host's cudaMemcpyAsync waits for it), copies
    // within the device, and runs a compiled function's backward.
    let mut events = meta(0, 7, "python3", "GPU 0", "stream 7");
    for step in 0..8 {
        let s = 1000 * step;
        events.extend([
            json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"), "pid": 1, "tid": 1, "ts": s, "dur": 990, "args": {}}),
            json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": s + 10, "dur": 600, "args": {"correlation": 10 * step + 1}}),
            json!({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": s + 500, "dur": 100, "args": {"correlation": 10 * step + 1, "stream": 7, "device": 0, "bytes": 4096}}),
            json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": s + 620, "dur": 5, "args": {"correlation": 10 * step + 2}}),
            json!({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7, "ts": s + 630, "dur": 200, "args": {"correlation": 10 * step + 2, "stream": 7, "device": 0}}),
            json!({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: CompiledFunctionBackward", "pid": 1, "tid": 1, "ts": s + 640, "dur": 300, "args": {}}),
            json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": s + 650, "dur": 5, "args": {"correlation": 10 * step + 3}}),
            json!({"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7, "ts": s + 840, "dur": 100, "args": {"correlation": 10 * step + 3, "stream": 7, "device": 0}}),
        ]);
    }
    let trace = write_trace("kineto-findings", events, json!({}));
    let s = summarize(&trace, &["--warmup-steps", "1"]);
    assert_eq!(s["profq_producer"]["framework"], "pytorch");
    // Only the device's host-to-device copy is a transfer: not the host's API call, not the DtoD copy.
    let transfers = s["profq_transfers"].as_array().unwrap();
    assert_eq!(transfers.len(), 1, "{transfers:?}");
    assert_eq!((transfers[0]["direction"].as_str(), transfers[0]["on_device"].as_bool()), (Some("host_to_device"), Some(true)));
    // A compiled function running is not compiling.
    assert!(s["profq_recompilation"]["steps_with_compilation"].as_array().unwrap().is_empty(), "{}", s["profq_recompilation"]);
    let candidates = s["optimization_candidates"].to_string();
    assert!(!candidates.contains("XLA compiles"), "{candidates}");
    assert!(!candidates.contains("device_put") && !candidates.contains("jit"), "suggestions speak JAX: {candidates}");
    if candidates.contains("host-device-transfers") {
        assert!(candidates.contains("pin_memory"), "{candidates}");
    }
}
