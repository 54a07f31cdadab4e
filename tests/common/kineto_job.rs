//! A PyTorch job's per-rank Kineto traces, written from the format's documented shapes
//! (`distributedInfo`, `baseTimeNanoseconds`, `ProfilerStep#N` annotations, `cudaLaunchKernel`
//! runtime events and the kernels of their `correlation` on `stream 7`, NCCL kernels with
//! their `Collective name` / `Process Group Name` / `Group size` args), with a straggler
//! whose collectives start late.

use serde_json::{json, Value};
use std::path::Path;

/// The job's shape.
pub struct Job {
    pub ranks: i64,
    pub steps: i64,
    /// The rank whose collectives start `late_us` after the others'.
    pub late_rank: i64,
    pub late_us: i64,
}

/// Absolute time (µs since the epoch) at which every rank's first step starts.
pub const JOB_START_US: i64 = 1_700_000_000_000_000;
/// Each rank's profiler starts `rank * RANK_START_STAGGER_US` later (its file's earliest
/// event), while its steps and collectives stay on the job's clock.
pub const RANK_START_STAGGER_US: i64 = 40;
/// A step: three compute kernels of 100 µs, then an all-reduce.
pub const STEP_US: i64 = 1000;
pub const ALLREDUCE_AT_US: i64 = 500;
pub const ALLREDUCE_US: i64 = 200;

/// Writes `worker{rank}_step_12.{ts}.pt.trace.json` per rank into `dir`.
pub fn write(job: &Job, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for rank in 0..job.ranks {
        let trace = rank_trace(job, rank);
        let name = format!("worker{rank}_step_12.1694128201545.pt.trace.json");
        // Written as Kineto writes it, `"rank": 3` with a space: HTA finds ranks by that text.
        std::fs::write(dir.join(name), serde_json::to_vec_pretty(&trace).unwrap()).unwrap();
    }
}

fn rank_trace(job: &Job, rank: i64) -> Value {
    // The file's ts count from its own base, a whole second before the job (as Kineto's base
    // is the trace's start rounded down); events keep their place on the job's clock.
    let base_ns = (JOB_START_US / 1_000_000 - 1) * 1_000_000_000;
    let file_ts = |abs_us: i64| -> f64 { (abs_us * 1000 - base_ns) as f64 / 1000.0 };
    let (pid, tid) = (1000 + rank, 1000 + rank);
    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python3"}}),
        json!({"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python3"}}),
        json!({"name": "process_labels", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}),
        json!({"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}}),
        json!({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": format!("thread {tid} (python3)")}}),
    ];
    let start = JOB_START_US + rank * RANK_START_STAGGER_US;
    events.push(json!({"ph": "X", "cat": "python_function", "name": "train.py(1): <module>", "pid": pid, "tid": tid,
        "ts": file_ts(start - 50), "dur": (job.steps * STEP_US + 100) as f64, "args": {}}));
    let mut correlation = 10;
    let mut launch = |events: &mut Vec<Value>, name: &str, at_us: i64, dur_us: i64, extra: Value| {
        correlation += 1;
        events.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
            "ts": file_ts(at_us - 20), "dur": 5.0, "args": {"correlation": correlation, "cbid": 211}}));
        let mut args = json!({"device": 0, "stream": 7, "correlation": correlation, "context": 1});
        if let (Some(a), Value::Object(more)) = (args.as_object_mut(), extra) {
            a.extend(more);
        }
        events.push(json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": file_ts(at_us), "dur": dur_us as f64, "args": args}));
    };
    for step in 0..job.steps {
        let s = JOB_START_US + step * STEP_US;
        events.push(json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"), "pid": pid, "tid": tid,
            "ts": file_ts(s), "dur": STEP_US as f64 - 1.0, "args": {}}));
        for k in 0..3 {
            launch(&mut events, "void gemm_kernel<float>(float*)", s + 50 + k * 110, 100, json!({}));
        }
        let late = if rank == job.late_rank { job.late_us } else { 0 };
        let nccl = json!({"Collective name": "allreduce", "Process Group Name": "0", "Process Group Description": "default_pg",
            "Group size": job.ranks, "In msg nelems": 1024, "dtype": "Float"});
        launch(&mut events, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", s + ALLREDUCE_AT_US + late, ALLREDUCE_US, nccl);
    }
    json!({
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912u64}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": job.ranks, "pg_count": 1},
        "traceEvents": events,
        "traceName": format!("worker{rank}.pt.trace.json"),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns,
    })
}
