//! Derived tables on real captures: collectives, regions, Kineto kernels, XPlane vs JSON.

mod common;
use common::*;
use std::collections::BTreeSet;

#[test]
fn multi_device_collectives_have_every_kind_with_correct_kinds() {
    let dir = jax_cpu("multi_device_dp");
    let store = temp_dir("coll");
    ingest(&store, &xplane_of(&dir), "dp");
    let rows = sql(
        &store,
        "SELECT hlo_module, hlo_op, kind, count(*) AS n, count(DISTINCT device) AS devices FROM collectives GROUP BY hlo_module, hlo_op, kind ORDER BY hlo_op",
    );
    let got: BTreeSet<(String, String, String)> =
        rows.iter().map(|r| (as_str(&r["hlo_module"]).into(), as_str(&r["hlo_op"]).into(), as_str(&r["kind"]).into())).collect();
    for (module, op, kind) in [
        ("jit_train_step", "reduce_scatter.7", "reduce-scatter"),
        ("jit_train_step", "all_gather.3", "all-gather"),
        ("jit_train_step", "psum.7", "all-reduce"),
        ("jit_train_step", "ppermute.3", "collective-permute"),
        ("jit_eval_step", "all-reduce", "all-reduce"),
    ] {
        assert!(got.contains(&(module.into(), op.into(), kind.into())), "missing {module}/{op} as {kind}; got {got:?}");
    }
    // 8 devices, one execution per device per step for the train-step collectives.
    for r in &rows {
        if as_str(&r["hlo_module"]) == "jit_train_step" {
            assert_eq!(as_i64(&r["devices"]), 8, "{r}");
            assert_eq!(as_i64(&r["n"]), 80, "{r}");
        }
    }
    // Opcode comes from the HloProto, and the scope path too.
    let psum = sql(&store, "SELECT DISTINCT opcode, tf_op, category FROM ops WHERE hlo_op = 'psum.7'");
    assert_eq!(psum.len(), 1);
    assert_eq!(as_str(&psum[0]["opcode"]), "all-reduce");
    assert_eq!(as_str(&psum[0]["tf_op"]), "jit(train_step)/shard_map/loss_all_reduce/psum");
    assert_eq!(as_str(&psum[0]["category"]), "communication");
    // Overlap accounting is consistent.
    let bad = sql(&store, "SELECT count(*) AS n FROM collectives WHERE overlapped_ns + exposed_ns <> dur_ns OR overlapped_ns < 0 OR exposed_ns < 0");
    assert_eq!(as_i64(&bad[0]["n"]), 0);
}

#[test]
fn transformer_regions_show_layers_with_forward_and_backward_separated() {
    let dir = jax_cpu("transformer_lm");
    let store = temp_dir("regions");
    ingest(&store, &xplane_of(&dir), "tlm");
    let rows = sql(&store, "SELECT pass, path FROM regions");
    let have = |pass: &str, suffix: &str| rows.iter().any(|r| as_str(&r["pass"]) == pass && as_str(&r["path"]).ends_with(suffix));
    for layer in ["layer_0", "layer_1"] {
        for scope in ["attention/qkv", "attention/scores", "attention/softmax", "attention/context", "attention/out_proj", "mlp/up", "mlp/gelu", "mlp/down"] {
            let suffix = format!("{layer}/{scope}");
            assert!(have("forward", &suffix), "no forward region …{suffix}");
            assert!(have("backward", &suffix), "no backward region …{suffix}");
        }
    }
    // Inclusive time of a parent covers its children.
    let bad = sql(
        &store,
        "SELECT c.path FROM regions c JOIN regions p ON c.parent_path = p.path AND c.pass = p.pass AND c.run_id = p.run_id WHERE c.inclusive_ns > p.inclusive_ns",
    );
    assert!(bad.is_empty(), "{bad:?}");
    let passes = sql(&store, "SELECT DISTINCT pass FROM ops ORDER BY pass");
    let passes: Vec<&str> = passes.iter().map(|r| as_str(&r["pass"])).collect();
    assert!(passes.contains(&"forward") && passes.contains(&"backward") && passes.contains(&"optimizer"), "{passes:?}");
}

#[test]
fn xplane_and_trace_json_of_one_capture_agree() {
    for name in ["mlp_train", "host_bound_gappy", "multi_device_dp"] {
        let dir = jax_cpu(name);
        let store = temp_dir("agree");
        ingest(&store, &xplane_of(&dir), "x");
        ingest(&store, &find_file(&dir, "perfetto_trace.json.gz").unwrap(), "j");
        let q = |run: &str, sql_text: &str| sql(&store, &sql_text.replace("$RUN", run));
        let steps_x = q("x", "SELECT step, dur_ns FROM steps WHERE run_id = '$RUN' ORDER BY step");
        let steps_j = q("j", "SELECT step, dur_ns FROM steps WHERE run_id = '$RUN' ORDER BY step");
        assert_eq!(steps_x.len(), steps_j.len(), "{name}");
        for (a, b) in steps_x.iter().zip(&steps_j) {
            assert_eq!(a["step"], b["step"]);
            assert!((as_i64(&a["dur_ns"]) - as_i64(&b["dur_ns"])).abs() <= 1, "{name}: {a} vs {b}");
        }
        let top = "SELECT hlo_op, count(*) AS n, sum(dur_ns) AS t FROM ops WHERE run_id = '$RUN' GROUP BY hlo_op ORDER BY t DESC, hlo_op LIMIT 10";
        let (tx, tj) = (q("x", top), q("j", top));
        assert_eq!(
            tx.iter().map(|r| (r["hlo_op"].clone(), r["n"].clone())).collect::<Vec<_>>(),
            tj.iter().map(|r| (r["hlo_op"].clone(), r["n"].clone())).collect::<Vec<_>>(),
            "{name}"
        );
        let events = q("x", "SELECT count(*) AS n FROM events WHERE run_id = '$RUN'");
        let events_j = q("j", "SELECT count(*) AS n FROM events WHERE run_id = '$RUN'");
        assert_eq!(events, events_j, "{name}: every xplane event is in the JSON");
    }
}

#[test]
fn kineto_traces_ingest_with_kernels_on_streams() {
    for rel in [
        "public/TraceLens/kineto/h100_bert-small-uncased.json.gz",
        "public/TraceLens/kineto/mi300_bert-small-uncased.json.gz",
        "public/HolisticTraceAnalysis/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    ] {
        let Some(path) = shared(rel) else { continue };
        let store = temp_dir("kineto");
        ingest(&store, &path, "k");
        let kernels = sql(&store, "SELECT count(*) AS n FROM events WHERE category = 'kernel'");
        let ops = sql(&store, "SELECT count(*) AS n, count(DISTINCT line) AS lines, min(line) AS line FROM ops WHERE name IS NOT NULL");
        assert!(as_i64(&kernels[0]["n"]) > 0, "{rel}");
        assert!(as_i64(&ops[0]["n"]) >= as_i64(&kernels[0]["n"]), "{rel}: every kernel is an op");
        assert!(as_str(&ops[0]["line"]).starts_with("stream"), "{rel}: {:?}", ops[0]);
        let runs = sql(&store, "SELECT source_format FROM runs");
        assert_eq!(as_str(&runs[0]["source_format"]), "trace_json");
    }
}

/// A Kineto kernel's scope is where the host launched it (its `correlation` shared with the
/// launching `cudaLaunchKernel`): the `record_function` scopes around the launch and the
/// autograd node, then the aten op. A C++ kernel signature (`void at::native::…`) is no path.
#[test]
fn kineto_kernels_take_the_scope_they_were_launched_from() {
    let store = temp_dir("kineto_scopes");
    ingest(&store, &repo().join("tests/data/kineto/torch_tlm_eager_mem.pt.trace.json.gz"), "k");
    let scoped = sql(&store, "SELECT count(*) AS n, count(region_path) AS scoped FROM ops");
    assert_eq!(as_i64(&scoped[0]["n"]), as_i64(&scoped[0]["scoped"]), "every kernel was launched from a scope");
    let pass_of = |path: &str| {
        let rows = sql(&store, &format!("SELECT DISTINCT pass FROM regions WHERE path = '{path}'"));
        rows.iter().map(|r| as_str(&r["pass"]).to_string()).collect::<Vec<_>>()
    };
    assert_eq!(pass_of("forward/attention"), ["forward"]);
    assert_eq!(pass_of("forward/mlp/aten::addmm"), ["forward"]);
    assert_eq!(pass_of("AddmmBackward0/aten::mm"), ["backward"], "kernels the autograd engine launched");
    assert_eq!(pass_of("optimizer/Optimizer.step#AdamW.step"), ["optimizer"]);
    let signatures = sql(&store, "SELECT count(*) AS n FROM regions WHERE path LIKE '%void %' OR path LIKE '%<%'");
    assert_eq!(as_i64(&signatures[0]["n"]), 0);
    // The forward scopes hold the forward kernels: as many matmuls under forward/mlp as
    // `aten::addmm` calls launched a kernel there (2 layers x 2 linear layers x 5 steps).
    let mlp = sql(&store, "SELECT count(*) AS n FROM ops WHERE region_path = 'forward/mlp/aten::addmm'");
    assert_eq!(as_i64(&mlp[0]["n"]), 20);
}

/// A GPU that runs a step behind its host: each kernel belongs to the step whose host code
/// launched it (the `ProfilerStep#N` around its `cudaLaunchKernel`, same `correlation`), not to
/// the step the host has gone on to when the kernel starts.
#[test]
fn kineto_kernels_belong_to_the_step_that_launched_them() {
    let dir = temp_dir("kineto_lag");
    let path = dir.join("lag.pt.trace.json");
    let mut events = vec![serde_json::json!({"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}})];
    for step in 1..=3i64 {
        let t0 = step * 1000;
        events
            .push(serde_json::json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"), "pid": 1, "tid": 1, "ts": t0, "dur": 1000}));
        events.push(serde_json::json!({"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 1, "tid": 1, "ts": t0 + 100, "dur": 500}));
        events.push(serde_json::json!({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 200, "dur": 100}));
        events.push(serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 210, "dur": 20, "args": {"correlation": step}}));
        // Starts 1.5 steps later, in the next step's host window.
        events.push(serde_json::json!({"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": t0 + 1500, "dur": 300, "args": {"correlation": step}}));
    }
    std::fs::write(&path, serde_json::json!({"traceEvents": events}).to_string()).unwrap();
    let store = temp_dir("kineto_lag_store");
    ingest(&store, &path, "lag");
    let ops = sql(&store, "SELECT start_ns, step, region_path FROM ops ORDER BY start_ns");
    let steps: Vec<i64> = ops.iter().map(|r| as_i64(&r["step"])).collect();
    assert_eq!(steps, [1, 2, 3], "{ops:?}");
    assert!(ops.iter().all(|r| as_str(&r["region_path"]) == "forward/aten::mm"), "{ops:?}");
}

/// Layers under `jax.checkpoint` inside a `jax.lax.scan` (`scan_remat`, on CPU and on an NVIDIA GPU
/// with command buffers off, where every kernel names its HLO instruction): the backward of a
/// checkpointed layer runs under its `checkpoint` scope and the recomputed forward under
/// `rematted_computation`. Only the recomputation is the remat pass.
#[test]
fn scanned_remat_layers_separate_recomputation_from_backward() {
    for dir in [jax_cpu("scan_remat"), jax_gpu("scan_remat_nocb")] {
        let store = temp_dir("scan_remat");
        ingest(&store, &xplane_of(&dir), "r");
        let misplaced = sql(&store, "SELECT count(*) AS n FROM ops WHERE (pass = 'remat') <> (tf_op LIKE '%/rematted_computation/%')");
        assert_eq!(as_i64(&misplaced[0]["n"]), 0, "{dir:?}");
        let passes = sql(&store, "SELECT pass, sum(self_ns) AS ns FROM ops WHERE region_path LIKE '%/layer/mlp/%' GROUP BY pass ORDER BY pass");
        let by_pass: Vec<(&str, i64)> = passes.iter().map(|r| (as_str(&r["pass"]), as_i64(&r["ns"]))).collect();
        assert_eq!(by_pass.iter().map(|p| p.0).collect::<Vec<_>>(), ["backward", "forward", "remat"], "{dir:?}: {by_pass:?}");
        // The recomputation repeats the layers' forward: about as long, far shorter than the backward.
        let ns = |pass: &str| by_pass.iter().find(|p| p.0 == pass).unwrap().1;
        assert!(ns("remat") < ns("backward"), "{dir:?}: {by_pass:?}");
    }
}

#[test]
fn nccl_kernels_are_collectives() {
    let Some(path) = shared("public/HolisticTraceAnalysis/nccl_parser_config/nccl_data.json.gz") else { return };
    let store = temp_dir("nccl");
    ingest(&store, &path, "nccl");
    let rows = sql(&store, "SELECT kind, count(*) AS n FROM collectives GROUP BY kind ORDER BY kind");
    assert!(!rows.is_empty(), "no collectives found");
    let nccl_kernels = sql(&store, "SELECT count(*) AS n FROM ops WHERE lower(hlo_op) LIKE '%nccl%'");
    let collectives: i64 = rows.iter().map(|r| as_i64(&r["n"])).sum();
    assert_eq!(collectives, as_i64(&nccl_kernels[0]["n"]), "{rows:?}");
}

#[test]
fn gpu_xplane_ops_are_kernels_not_host_launches() {
    let Some(dir) = shared("public/TraceLens/mi300x_jax08_conv") else { return };
    let store = temp_dir("gpu");
    ingest(&store, &xplane_of(&dir), "g");
    let rows = sql(&store, "SELECT count(DISTINCT device) AS d, count(*) AS n, min(device) AS first FROM ops");
    assert_eq!(as_i64(&rows[0]["d"]), 8);
    assert_eq!(as_str(&rows[0]["first"]), "GPU:0");
    let host_ops = sql(&store, "SELECT count(*) AS n FROM ops WHERE device LIKE 'CPU%'");
    assert_eq!(as_i64(&host_ops[0]["n"]), 0);
    let kinds = sql(&store, "SELECT device_kinds FROM runs");
    assert!(kinds[0]["device_kinds"].to_string().contains("AMD"), "{kinds:?}");
}

#[test]
fn tpu_ops_get_module_program_and_cost_stats() {
    let Some(dir) = shared("public/openxla-xprof/tpu_v6e_jax_inference") else { return };
    let store = temp_dir("tpu");
    ingest(&store, &xplane_of(&dir), "t");
    let rows = sql(&store, "SELECT count(*) AS n, count(hlo_module) AS m, count(program_id) AS p, count(flops) AS f FROM ops WHERE line = 'XLA Ops'");
    let n = as_i64(&rows[0]["n"]);
    assert!(n > 6000, "{rows:?}");
    assert_eq!(as_i64(&rows[0]["m"]), n);
    assert_eq!(as_i64(&rows[0]["p"]), n);
    let ar = sql(&store, "SELECT DISTINCT kind, hlo_module FROM collectives");
    assert_eq!(ar.len(), 1, "{ar:?}");
    assert_eq!(as_str(&ar[0]["kind"]), "all-reduce");
    assert_eq!(as_str(&ar[0]["hlo_module"]), "jit__psum");
}

/// Ingest writes `ops` from the op rows' columns, not from the Arrow batch that analyses in
/// memory build: the stored rows equal that batch's, on captures with op costs and async ops
/// (TPU), collectives (8 CPU devices) and region paths (GPU).
#[test]
fn stored_ops_equal_the_in_memory_ops() {
    let tpu = shared("public/openxla-xprof/tpu_v6e_jax_inference");
    for dir in [tpu, Some(jax_cpu("multi_device_dp")), Some(jax_gpu("transformer_lm_nocb"))].into_iter().flatten() {
        let store = temp_dir("ops-rows");
        ingest(&store, &xplane_of(&dir), "r");
        let stored = sql(&store, "SELECT * EXCLUDE (run_id) FROM ops ORDER BY event_id");
        let mut capture = profq::decode::load(&profq::decode::resolve(&xplane_of(&dir)).unwrap()).unwrap().capture;
        let tables = profq::tables::build(&mut capture, &profq::tables::RunInfo::default()).unwrap();
        let text = profq::render::render(tables.get("ops").unwrap(), profq::render::Format::Json);
        let mut in_memory: Vec<serde_json::Value> = serde_json::from_str::<Vec<serde_json::Value>>(&text).unwrap();
        in_memory.sort_by_key(|row| as_i64(&row["event_id"]));
        assert!(stored.len() > 1000, "{}: {} ops", dir.display(), stored.len());
        assert_eq!(stored, in_memory, "{}", dir.display());
    }
}

/// Every profile in the shared fixtures ingests (directories resolve to their capture).
#[test]
fn every_shared_fixture_ingests() {
    let store = temp_dir("all");
    let mut expected = 0;
    for rel in SHARED_PROFILES {
        let Some(path) = shared(rel) else { continue };
        let o = profq(&["ingest", path.to_str().unwrap(), "--store", store.to_str().unwrap()]);
        assert!(o.status.success(), "{rel}: {}", stderr(&o));
        expected += 1;
    }
    for dir in JAX_CPU_CAPTURES.iter().map(|n| jax_cpu(n)).chain(JAX_GPU_CAPTURES.iter().map(|n| jax_gpu(n))) {
        let o = profq(&["ingest", dir.to_str().unwrap(), "--store", store.to_str().unwrap(), "--force"]);
        assert!(o.status.success(), "{}: {}", dir.display(), stderr(&o));
    }
    let o = profq(&["ingest", repo().join("tests/data/kineto/torch_mlp_h100.pt.trace.json.gz").to_str().unwrap(), "--store", store.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The shared jax_cpu/transformer_lm is the committed one: its second ingest replaced the first.
    let repeated = shared("jax_cpu/transformer_lm").map_or(0, |_| 1);
    expected += (JAX_CPU_CAPTURES.len() + JAX_GPU_CAPTURES.len() + 1) as i64 - repeated;
    let runs = sql(&store, "SELECT count(*) AS n, sum(CASE WHEN num_complete_events > 0 THEN 1 ELSE 0 END) AS nonempty FROM runs");
    assert_eq!(as_i64(&runs[0]["n"]), expected);
    assert_eq!(as_i64(&runs[0]["nonempty"]), expected);
    // Each totals table is its detail table summed, in every run: no row of one is missing
    // from, or differs in, the other.
    assert_same_rows(
        &store,
        "event_totals",
        "SELECT e.run_id, e.host, e.plane, e.line, e.name, CAST(o.category AS VARCHAR) AS op_category, count(*) AS count,
                sum(e.dur_ns) AS dur_ns, sum(e.self_ns) AS self_ns, min(e.start_ns) AS first_start_ns, max(e.start_ns + e.dur_ns) AS last_end_ns
         FROM events e LEFT JOIN ops o ON o.run_id = e.run_id AND o.event_id = e.event_id
         GROUP BY e.run_id, e.host, e.plane, e.line, e.name, o.category",
        "SELECT run_id, host, plane, line, name, CAST(op_category AS VARCHAR) AS op_category, count, dur_ns, self_ns, first_start_ns, last_end_ns
         FROM event_totals",
    );
    let keys = "run_id, host, device, hlo_op, hlo_module, program_id, opcode, category, collective_kind, tf_op, region_path, pass, shape, source";
    assert_same_rows(
        &store,
        "op_totals",
        &format!(
            "SELECT {keys}, count(*) AS count, sum(dur_ns) AS dur_ns, sum(self_ns) AS self_ns, max(dur_ns) AS max_dur_ns,
                    min(start_ns) AS first_start_ns, min(step) AS first_step
             FROM ops GROUP BY {keys}"
        ),
        &format!(
            "SELECT {keys}, sum(count) AS count, sum(dur_ns) AS dur_ns, sum(self_ns) AS self_ns, max(max_dur_ns) AS max_dur_ns,
                    min(first_start_ns) AS first_start_ns, min(first_step) AS first_step
             FROM op_totals GROUP BY {keys}"
        ),
    );
    let keys = "run_id, host, device, line, marker_op, payload_op, payload_tf_op, payload_region_path";
    assert_same_rows(
        &store,
        "gap_totals",
        &format!("SELECT {keys}, count(*) AS count, sum(gap_ns) AS gap_ns, max(gap_ns) AS max_gap_ns FROM gaps GROUP BY {keys}"),
        &format!("SELECT {keys}, sum(count) AS count, sum(gap_ns) AS gap_ns, max(max_gap_ns) AS max_gap_ns FROM gap_totals GROUP BY {keys}"),
    );
    let keys = "run_id, host, device, line, step";
    let same_key = ["run_id", "host", "device", "line"].map(|k| format!("o.{k} = g.{k}")).join(" AND ");
    assert_same_rows(
        &store,
        "line_steps",
        &format!(
            "SELECT o.*, coalesce(g.gap_count, 0) AS gap_count, coalesce(g.gap_ns, 0) AS gap_ns, g.max_gap_ns
             FROM (SELECT {keys}, count(*) AS op_count, sum(dur_ns) AS dur_ns, sum(self_ns) AS self_ns, min(start_ns) AS first_start_ns,
                          max(start_ns + dur_ns) AS last_end_ns
                   FROM ops GROUP BY {keys}) o
             LEFT JOIN (SELECT {keys}, count(*) AS gap_count, sum(gap_ns) AS gap_ns, max(gap_ns) AS max_gap_ns FROM gaps GROUP BY {keys}) g
               ON {same_key} AND o.step IS NOT DISTINCT FROM g.step"
        ),
        &format!(
            "SELECT {keys}, sum(op_count) AS op_count, sum(dur_ns) AS dur_ns, sum(self_ns) AS self_ns, min(first_start_ns) AS first_start_ns,
                    max(last_end_ns) AS last_end_ns, sum(gap_count) AS gap_count, sum(gap_ns) AS gap_ns, max(max_gap_ns) AS max_gap_ns
             FROM line_steps GROUP BY {keys}"
        ),
    );
    // shape_churn's compiles: the four jit_train_step programs all ran ops in the capture.
    if shared("jax_cpu/shape_churn").is_some() {
        let programs = sql(&store, "SELECT count(DISTINCT program_id) AS n FROM ops WHERE run_id = 'shape_churn' AND hlo_module = 'jit_train_step'");
        assert_eq!(as_i64(&programs[0]["n"]), 4);
    }
}

/// Several hosts' files in one session are one run with a host column, aligned in time.
#[test]
fn a_multi_host_session_is_one_run() {
    let src = xplane_of(&jax_cpu("mlp_train"));
    let root = temp_dir("multihost");
    let session = root.join("myrun/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&session).unwrap();
    for host in ["worker-0", "worker-1", "worker-2"] {
        std::fs::copy(&src, session.join(format!("{host}.xplane.pb"))).unwrap();
    }
    let store = temp_dir("multihost-store");
    let o = profq(&["ingest", root.join("myrun").to_str().unwrap(), "--store", store.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("ingested myrun:"), "{}", stdout(&o));
    let runs = sql(&store, "SELECT hosts, num_complete_events FROM runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["hosts"].to_string(), "\"[worker-0, worker-1, worker-2]\"");
    let per_host = sql(&store, "SELECT host, count(*) AS n, min(start_ns) AS s FROM steps GROUP BY host ORDER BY host");
    assert_eq!(per_host.len(), 3);
    assert!(per_host.iter().all(|r| as_i64(&r["n"]) == 10 && r["s"] == per_host[0]["s"]), "{per_host:?}");
    let s = profq(&["summarize", "--run", "myrun", "--store", store.to_str().unwrap()]);
    assert!(s.status.success(), "{}", stderr(&s));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&s)).unwrap();
    assert_eq!(doc["run_metadata"]["num_hosts"], 3);
    let hosts: Vec<&str> = doc["profq_per_host"].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["worker-0", "worker-1", "worker-2"]);
}

/// Asserts that `expected` (a detail table summed) and `totals` (its totals table) give the
/// same rows, NULLs equal, and that there are some.
fn assert_same_rows(store: &std::path::Path, table: &str, expected: &str, totals: &str) {
    let found = sql(
        store,
        &format!(
            "WITH e AS ({expected}), t AS ({totals})
             SELECT (SELECT count(*) FROM (SELECT * FROM e EXCEPT SELECT * FROM t)) + (SELECT count(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM e)) AS n,
                    (SELECT count(*) FROM t) AS rows"
        ),
    );
    assert_eq!(as_i64(&found[0]["n"]), 0, "{table} differs from the rows it sums");
    assert!(as_i64(&found[0]["rows"]) > 0, "{table} is empty");
}
