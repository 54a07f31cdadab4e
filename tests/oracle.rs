//! profq's tables checked against XProf 2.24.2's numbers for the same files (`oracle/`).

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Event counts and total durations per (plane, line, event) equal XProf's
/// `aggregate_xplane_events --group_by=plane,line,event`.
fn check_event_aggregates(xplane: &Path, oracle_dir: &Path) {
    let store = temp_dir("agg");
    ingest(&store, xplane, "r");
    let rows = sql(&store, "SELECT plane, line, name, count(*) AS n, sum(dur_ns) AS total FROM events GROUP BY plane, line, name");
    let mut ours: BTreeMap<(String, String, String), (i64, i64)> = BTreeMap::new();
    for r in &rows {
        let key = (as_str(&r["plane"]).to_string(), as_str(&r["line"]).to_string(), as_str(&r["name"]).to_string());
        ours.insert(key, (as_i64(&r["n"]), as_i64(&r["total"])));
    }
    let oracle = read_json(&oracle_dir.join("cli_aggregate_xplane_events.json"));
    assert_eq!(oracle["truncated"], false);
    let aggs = oracle["aggregates"].as_array().unwrap();
    let mut oracle_events = 0;
    for a in aggs {
        let key = (as_str(&a["plane"]).to_string(), as_str(&a["line"]).to_string(), as_str(&a["event"]).to_string());
        let count = as_i64(&a["count"]);
        oracle_events += count;
        let total_ps = a["total_duration_ps"].as_f64().unwrap();
        let Some(&(n, total_ns)) = ours.get(&key) else { panic!("{}: oracle group {key:?} missing from events", xplane.display()) };
        assert_eq!(n, count, "{}: count of {key:?}", xplane.display());
        // Each event is rounded to whole ns at both ends: at most 1 ns off per event.
        let diff = (total_ns as f64 - total_ps / 1000.0).abs();
        assert!(diff <= count as f64 + 1.0, "{}: duration of {key:?}: ours {total_ns} ns vs xprof {total_ps} ps", xplane.display());
    }
    let ours_total: i64 = ours.values().map(|v| v.0).sum();
    assert_eq!(ours_total, oracle_events, "{}: total events", xplane.display());
    assert_eq!(ours.len(), aggs.len(), "{}: number of (plane, line, event) groups", xplane.display());
}

#[test]
fn jax_cpu_event_aggregates_match_xprof() {
    for name in JAX_CPU_CAPTURES {
        let dir = jax_cpu(name);
        check_event_aggregates(&xplane_of(&dir), &dir.join("oracle"));
    }
}

#[test]
fn jax_gpu_event_aggregates_match_xprof() {
    for name in JAX_GPU_CAPTURES {
        let dir = jax_gpu(name);
        check_event_aggregates(&xplane_of(&dir), &dir.join("oracle"));
    }
}

/// The public XPlane captures (TPU v6e, AMD MI300X) in `../shared/fixtures`.
const PUBLIC_XPLANES: [&str; 5] = [
    "public/openxla-xprof/tpu_v6e_jax_inference",
    "public/TraceLens/mi300x_jax08_conv",
    "public/TraceLens/mi300x_jax08_elementwise",
    "public/TraceLens/mi300x_jax08_gemm",
    "public/TraceLens/mi300x_jax_conv_minimal_legacy",
];

#[test]
fn public_xplane_event_aggregates_match_xprof() {
    for rel in PUBLIC_XPLANES {
        let Some(dir) = shared(rel) else { continue };
        check_event_aggregates(&xplane_of(&dir), &dir.join("oracle"));
    }
}

/// GPU kernels: count and total time per kernel name equal XProf's `get_kernel_stats`.
#[test]
fn jax_gpu_kernel_stats_match_xprof() {
    for name in JAX_GPU_CAPTURES {
        let dir = jax_gpu(name);
        let store = temp_dir("kernels");
        ingest(&store, &xplane_of(&dir), "r");
        let rows = sql(&store, "SELECT name, count(*) AS n, sum(dur_ps) AS total FROM ops WHERE device = 'GPU:0' GROUP BY name");
        let ours: BTreeMap<String, (i64, i64)> = rows.iter().map(|r| (as_str(&r["name"]).to_string(), (as_i64(&r["n"]), as_i64(&r["total"])))).collect();
        let oracle = read_json(&dir.join("oracle/cli_get_kernel_stats.json"));
        assert_eq!(oracle["truncated"], false);
        let records = oracle["kernel_records"].as_array().unwrap();
        assert!(!records.is_empty(), "{name}: oracle lists kernels");
        for k in records {
            let kernel = as_str(&k["kernel_name"]);
            let Some(&(n, total_ps)) = ours.get(kernel) else { panic!("{name}: kernel {kernel} missing from ops") };
            assert_eq!(n, as_i64(&k["execution_count"]), "{name}: executions of {kernel}");
            let theirs_us = k["total_duration_us"].as_f64().unwrap();
            assert!((total_ps as f64 / 1e6 - theirs_us).abs() <= 0.001 * n as f64 + 1e-6, "{name}: {kernel}: ours {total_ps} ps vs xprof {theirs_us} us");
        }
    }
}

/// Kernels inside a CUDA graph (XLA command buffer) carry the buffer as `hlo_op`; profq places each
/// on the HLO instruction it runs (by the program's schedule and the kernel's name), so opcodes,
/// scope paths and passes survive. XProf 2.24 leaves these out of hlo_stats and op_profile altogether.
#[test]
fn gpu_command_buffer_kernels_resolve_to_their_instructions() {
    let dir = jax_gpu("transformer_lm");
    assert!(read_json(&dir.join("oracle/cli_get_hlo_stats.json"))["records"].as_array().unwrap().is_empty());
    let store = temp_dir("cmdbuf");
    ingest(&store, &xplane_of(&dir), "r");
    let buffered = sql(&store, "SELECT count(*) AS n FROM events WHERE hlo_op LIKE 'command_buffer%' AND plane = '/device:GPU:0'");
    assert!(as_i64(&buffered[0]["n"]) > 1000, "the capture runs its step as a command buffer");
    let unresolved = sql(&store, "SELECT count(*) AS n FROM ops WHERE hlo_op LIKE 'command_buffer%' OR opcode IS NULL");
    assert_eq!(as_i64(&unresolved[0]["n"]), 0);
    let gemm = sql(&store, "SELECT DISTINCT opcode, region_path, pass FROM ops WHERE hlo_op = 'gemm_fusion_dot.9'");
    assert_eq!(gemm.len(), 1);
    assert_eq!(as_str(&gemm[0]["opcode"]), "fusion");
    assert_eq!(as_str(&gemm[0]["region_path"]), "train_step/forward/layer_0/attention/qkv/dot_general");
    assert_eq!(as_str(&gemm[0]["pass"]), "forward");
    let passes = sql(&store, "SELECT DISTINCT pass FROM regions WHERE path LIKE '%/attention' ORDER BY pass");
    let passes: Vec<&str> = passes.iter().map(|r| as_str(&r["pass"])).collect();
    assert_eq!(passes, ["backward", "forward"]);
    // The second layer runs the first layer's kernels (identical fusions): they are its own ops.
    let layers =
        sql(&store, "SELECT DISTINCT region_path FROM ops WHERE region_path = 'train_step/forward/layer_1/attention/qkv/dot_general' AND opcode = 'fusion'");
    assert_eq!(layers.len(), 1, "{layers:?}");
}

/// The same workload captured with command buffers and without them (where every kernel carries
/// its own instruction) gives the same ops: per instruction where XLA compiled both alike, per
/// scope path and pass everywhere (the autotuner may pick cuBLAS in one and a Triton GEMM in the
/// other). cuBLAS, cuDNN and Pallas kernels are placed on their custom-calls, loop bodies on their
/// own computation's schedule, a graph's memory copies on the copies and the async dynamic-slice
/// fusions they run (`memcpy128` in a graph, `MemcpyD2D` outside one). Memsets differ between the
/// two modes (cuDNN's workspace clears) and are left out. Graphs built with concurrent scheduling
/// (`_concurrent`: kernels of one launch at once on many streams, in no schedule order) are placed
/// by their nodes' indices, and agree as well.
#[test]
fn gpu_command_buffer_kernels_are_placed_as_without_command_buffers() {
    let counts = |name: &str, key: &str, kernels: &str| {
        let store = temp_dir("placed");
        ingest(&store, &xplane_of(&jax_gpu(name)), "r");
        let rows =
            sql(&store, &format!("SELECT {key} AS k, count(*) AS n FROM ops WHERE lower(name) NOT LIKE 'memset%' AND {kernels} GROUP BY {key} ORDER BY k"));
        rows.iter().map(|r| (r["k"].to_string(), as_i64(&r["n"]))).collect::<BTreeMap<String, i64>>()
    };
    let scope = "coalesce(region_path, '') || ' ' || pass";
    let nocb = |name: &str| format!("{}_nocb", name.trim_end_matches("_concurrent"));
    for name in
        ["fused_kernels", "fused_kernels_scan", "host_bound_gappy", "mlp_train", "scan_remat", "transformer_lm", "transformer_lm_wide"].into_iter().chain([
            "fused_kernels_concurrent",
            "fused_kernels_scan_concurrent",
            "scan_remat_concurrent",
            "transformer_lm_concurrent",
            "transformer_lm_wide_concurrent",
        ])
    {
        assert_eq!(counts(name, scope, "true"), counts(&nocb(name), scope, "true"), "{name}: kernels per scope path and pass");
    }
    for name in ["host_bound_gappy", "mlp_train", "transformer_lm", "transformer_lm_wide", "transformer_lm_concurrent", "transformer_lm_wide_concurrent"] {
        assert_eq!(counts(name, "hlo_op", "true"), counts(&nocb(name), "hlo_op", "true"), "{name}: kernels per instruction");
    }
    for name in ["fused_kernels_scan", "fused_kernels_scan_concurrent", "scan_remat", "scan_remat_concurrent"] {
        let copies = counts(name, "hlo_op", "lower(name) LIKE 'memcpy%'");
        assert!(copies.keys().filter(|op| op.contains("dynamic_slice_fusion.")).count() >= 6, "{name}: {copies:?}");
        assert_eq!(copies, counts(&nocb(name), "hlo_op", "lower(name) LIKE 'memcpy%'"), "{name}: memory copies per instruction");
    }
    // The concurrent captures do run each launch's kernels at once on several streams.
    for name in
        ["fused_kernels_concurrent", "fused_kernels_scan_concurrent", "scan_remat_concurrent", "transformer_lm_concurrent", "transformer_lm_wide_concurrent"]
    {
        let store = temp_dir("concurrent");
        ingest(&store, &xplane_of(&jax_gpu(name)), "r");
        let lines =
            sql(&store, "SELECT max(n) AS n FROM (SELECT count(DISTINCT line) AS n FROM events WHERE hlo_op LIKE 'command_buffer%' GROUP BY correlation_id)");
        assert!(as_i64(&lines[0]["n"]) >= 10, "{name}: {lines:?}");
    }
    // cuDNN flash attention (forward and backward), cuBLAS matmuls and the Pallas kernel; in a
    // concurrent graph each cuDNN call is a child graph whose first node runs no kernel.
    let library = "name LIKE '%cudnn%' OR name LIKE 'nvjet%' OR name = 'bias_gelu'";
    for name in ["fused_kernels", "fused_kernels_concurrent"] {
        let placed: BTreeMap<String, i64> = counts(name, "hlo_op", library).into_iter().map(|(op, n)| (op.trim_matches('"').to_string(), n)).collect();
        assert!(
            placed.keys().all(|op| op.starts_with("custom-call.") || op.starts_with("dot_product_attention_") || op.starts_with("pallas_call.")),
            "{name}: {placed:?}"
        );
        for (op, n) in [("pallas_call.2", 10), ("pallas_call.3", 10), ("dot_product_attention_fwd.10", 10), ("dot_product_attention_bwd.24", 30)] {
            assert_eq!(placed.get(op), Some(&n), "{name}: {op} in {placed:?}");
        }
    }
    // Each custom-call of a concurrent compile runs what it runs without command buffers (the
    // autotuner gave one more matmul to cuBLAS there). In the scanned backward body a cuBLAS
    // matmul runs on one stream right after the cuDNN attention whose output it takes: the
    // libraries tell the two commands apart.
    for name in ["fused_kernels_concurrent", "fused_kernels_scan_concurrent"] {
        let without = counts(&nocb(name), "hlo_op", library);
        for (op, n) in counts(name, "hlo_op", library) {
            assert_eq!(without.get(&op), Some(&n), "{name}: {op}: library kernels per instruction");
        }
    }
}

/// Inside a command buffer every kernel carries only the buffer as `hlo_op`. Kernels the
/// schedule cannot place keep their names; profq says how many kernels ran so, placed and not,
/// with their share of op time; the same workload with command buffers off has every kernel
/// attributed, XProf's hlo_stats agreeing (`jax_gpu_hlo_stats_without_command_buffers_match_xprof`).
/// Every kernel of the committed captures is placed; a plane streamed in tiny time windows cuts
/// loop-body launches between the graph's leading memory copies and the first kernel that names
/// the body, and those copies stay unplaced (docs/semantics.md).
#[test]
fn gpu_kernels_in_command_buffers_are_reported() {
    let windowed = |name: &str, window: Option<&str>| {
        let store = temp_dir("buffered");
        profq_in_windows(&["ingest", xplane_of(&jax_gpu(name)).to_str().unwrap(), "--store", store.to_str().unwrap(), "--run-id", "r"], window);
        let counts = sql(
            &store,
            "SELECT count(*) AS kernels, count(*) FILTER (WHERE o.opcode IS NULL) AS unplaced FROM ops o JOIN events e USING (event_id) \
             WHERE e.hlo_op LIKE 'command_buffer%'",
        );
        let warnings = sql(&store, "SELECT unnest(quality_warnings) AS w FROM runs");
        ((as_i64(&counts[0]["kernels"]), as_i64(&counts[0]["unplaced"])), warnings.iter().map(|r| as_str(&r["w"]).to_string()).collect::<Vec<_>>())
    };
    let buffered = |name: &str| windowed(name, None);
    let ((kernels, unplaced), warnings) = windowed("scan_remat", Some("20"));
    assert!(unplaced > 0, "launches cut ahead of their first named kernel: {unplaced}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(w.starts_with(&format!("{kernels} GPU kernels (")), "{w}");
    assert!(w.contains(&format!(": profq placed {} on their op", kernels - unplaced)) && w.contains(&format!(", and {unplaced} (")), "{w}");
    assert!(w.contains("--xla_gpu_enable_command_buffer="), "{w}");
    assert_eq!(buffered("transformer_lm_wide_nocb"), ((0, 0), Vec::new()));
    for name in [
        "scan_remat",
        "fused_kernels_scan",
        "transformer_lm",
        "transformer_lm_wide",
        "fused_kernels_concurrent",
        "fused_kernels_scan_concurrent",
        "scan_remat_concurrent",
        "transformer_lm_wide_concurrent",
    ] {
        let ((kernels, unplaced), warnings) = buffered(name);
        assert!(kernels > 1000 && unplaced == 0 && warnings.len() == 1, "{name}: {warnings:?}");
        assert!(warnings[0].ends_with(&format!("profq placed {kernels} on their op by the program's schedule and the kernels' names.")), "{}", warnings[0]);
        let summary = summarize(&jax_gpu(name), &[]);
        assert_eq!(summary["trace_overview"]["quality_warnings"], serde_json::json!(warnings), "{name}");
    }
    // The trace JSON beside the XPlane has no HLO: no op has an opcode there, command buffer or not.
    let json = xplane_of(&jax_gpu("transformer_lm_wide")).with_file_name("vm.trace.json.gz");
    assert_eq!(summarize(&json, &[])["trace_overview"]["quality_warnings"], serde_json::json!([]));
}

/// A profile taken with `enable_hlo_proto=False` holds no HLO (XProf's hlo_stats is then empty):
/// its ops keep their kernels' times and stats, have no opcode, and the run says so, with the
/// programs concerned and, where the step ran as a CUDA graph, that its kernels have no scope.
/// The autotuner's candidate programs of an in-step compile hold no HLO either.
#[test]
fn gpu_ops_of_programs_without_hlo_are_reported() {
    let without_hlo = |name: &str| {
        let dir = jax_gpu(name);
        let store = temp_dir("nohlo");
        ingest(&store, &xplane_of(&dir), "r");
        let ops = sql(&store, "SELECT count(*) AS n, count(opcode) AS with_opcode, count(*) FILTER (WHERE pass <> 'other') AS with_pass FROM ops");
        let warnings = sql(&store, "SELECT w FROM (SELECT unnest(quality_warnings) AS w FROM runs) WHERE w LIKE '%whose HLO the profile does not hold%'");
        let counts = (as_i64(&ops[0]["n"]), as_i64(&ops[0]["with_opcode"]), as_i64(&ops[0]["with_pass"]));
        (counts, warnings.iter().map(|r| as_str(&r["w"]).to_string()).collect::<Vec<_>>(), dir)
    };
    for name in ["transformer_lm_nohlo_h200", "transformer_lm_nohlo_nocb_h200"] {
        let ((ops, with_opcode, with_pass), warnings, dir) = without_hlo(name);
        assert!(read_json(&dir.join("oracle/cli_get_hlo_stats.json"))["records"].as_array().unwrap().is_empty(), "{name}");
        assert_eq!(with_opcode, 0, "{name}");
        assert_eq!(warnings.len(), 1, "{name}: {warnings:?}");
        let w = &warnings[0];
        assert!(w.starts_with(&format!("{ops} XLA ops (100.0% of op time) ran in a program whose HLO the profile does not hold (jit_train_step)")), "{w}");
        if name.ends_with("_nocb_h200") {
            // Each kernel's `name` stat still gives its scope range, so passes survive.
            assert!(with_pass > ops / 2, "{name}: {with_pass} of {ops} ops have a pass");
            assert!(!w.contains("CUDA graphs"), "{w}");
        } else {
            assert_eq!(with_pass, 0, "{name}: inside a command buffer a kernel has no scope range");
            assert!(w.contains(&format!("; {ops} of them ran inside CUDA graphs")), "{w}");
        }
    }
    let (_, warnings, _) = without_hlo("shape_churn_small");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("programs whose HLO the profile does not hold (gemm_fusion_dot."), "{}", warnings[0]);
    for name in ["transformer_lm_nocb", "mlp_train_detail_nocb_h200", "mlp_train_minimal_h200"] {
        assert_eq!(without_hlo(name).1, Vec::<String>::new(), "{name}");
    }
}

/// GPU steps are the host's `train` annotations (the wall time a step takes); XProf's GPU step
/// time is the device-side span of the step's kernels instead (docs/semantics.md). Both list the
/// same steps, and the device is never busier than the step lasts. Where XLA compiles inside a
/// step (`shape_churn_small`), its autotuner runs candidate kernels on the GPU during the
/// compile: here they are busy time of the step whose host window they run in, while XProf's
/// device-side spans give them to the step before; there the busy time is compared in sum.
#[test]
fn jax_gpu_steps_are_the_step_annotations() {
    for name in JAX_GPU_CAPTURES {
        let dir = jax_gpu(name);
        let (store, steps, expected) = steps_beside_xprof(&dir, "step, dur_ns, busy_ns, source");
        assert_eq!(steps.len(), expected.len(), "{name}: number of steps");
        let compiles_in_steps = read_json(&dir.join("capture.json")).get("expected_compile_steps").and_then(|s| s.as_array()).is_some_and(|s| !s.is_empty());
        let compute_ns = |theirs: &serde_json::Value| theirs["compute_time_ms"].as_f64().unwrap() * 1e6;
        for (ours, theirs) in steps.iter().zip(&expected) {
            assert_eq!(as_i64(&ours["step"]), as_i64(&theirs["step_num"]), "{name}");
            assert_eq!(as_str(&ours["source"]), "step_annotation");
            let busy = as_i64(&ours["busy_ns"]);
            assert!(compiles_in_steps || busy as f64 >= compute_ns(theirs) * 0.9, "{name}: busy {busy} vs xprof compute {}", compute_ns(theirs));
            assert!(busy <= as_i64(&ours["dur_ns"]), "{name}");
        }
        let busy: f64 = steps.iter().map(|s| as_i64(&s["busy_ns"]) as f64).sum();
        let compute: f64 = expected.iter().map(compute_ns).sum();
        assert!(busy >= compute * 0.9, "{name}: busy {busy} vs xprof compute {compute} over all steps");
        assert_steps_are_train_events(&store, steps.len(), name);
    }
}

/// Ingests a capture; returns the store, its steps (`columns`, by step) and XProf's cold step trace.
fn steps_beside_xprof(dir: &Path, columns: &str) -> (std::path::PathBuf, Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let store = temp_dir("steps");
    ingest(&store, &xplane_of(dir), "r");
    let steps = sql(&store, &format!("SELECT {columns} FROM steps ORDER BY step"));
    let oracle = read_json(&dir.join("oracle/cli_get_step_trace_cold.json"));
    (store, steps, oracle["step_breakdown"].as_array().unwrap().clone())
}

/// The steps are exactly the `train` events carrying step_num.
fn assert_steps_are_train_events(store: &Path, steps: usize, name: &str) {
    let train = sql(store, "SELECT count(*) AS n FROM events WHERE name = 'train' AND step IS NOT NULL");
    assert_eq!(as_i64(&train[0]["n"]), steps as i64, "{name}");
}

/// Steps equal the `train` StepTraceAnnotation events, as XProf's cold step trace lists them.
#[test]
fn jax_cpu_steps_match_step_annotations() {
    for name in JAX_CPU_CAPTURES {
        let (store, steps, expected) = steps_beside_xprof(&jax_cpu(name), "step, dur_ns, source, device");
        assert_eq!(steps.len(), expected.len(), "{name}: number of steps");
        for (ours, theirs) in steps.iter().zip(&expected) {
            let ms = theirs["step_time_ms"].as_f64().unwrap();
            let ours_ms = as_i64(&ours["dur_ns"]) as f64 / 1e6;
            assert!((ours_ms - ms).abs() < 1e-3, "{name}: step {} is {ours_ms} ms, xprof {ms} ms", ours["step"]);
            assert_eq!(as_str(&ours["source"]), "step_annotation");
            assert!(ours["device"].is_null());
        }
        assert_steps_are_train_events(&store, steps.len(), name);
    }
}

/// Per-(program_id, hlo_op) executions and scope path equal XProf's hlo_stats, device time within 0.5%.
fn check_hlo_stats(dir: &Path) {
    let rel = dir.display();
    let store = temp_dir("hlo");
    ingest(&store, &xplane_of(dir), "r");
    let oracle = read_json(&dir.join("oracle/cli_get_hlo_stats.json"));
    let records = oracle["records"].as_array().unwrap();
    assert!(!records.is_empty(), "{rel}: oracle has hlo_stats rows");
    let rows = sql(
        &store,
        "SELECT CAST(program_id AS VARCHAR) AS pid, hlo_op, count(*) AS n, sum(dur_ps) AS total, min(tf_op) AS tf_op, min(source) AS source FROM ops \
         WHERE line NOT LIKE 'Async%' GROUP BY program_id, hlo_op",
    );
    let text = |r: &serde_json::Value, key: &str| r[key].as_str().unwrap_or("").to_string();
    let ours: BTreeMap<(String, String), (i64, i64, String, String)> = rows
        .iter()
        .map(|r| {
            ((as_str(&r["pid"]).to_string(), as_str(&r["hlo_op"]).to_string()), (as_i64(&r["n"]), as_i64(&r["total"]), text(r, "tf_op"), text(r, "source")))
        })
        .collect();
    for rec in records {
        let pid = match &rec["program_id"] {
            serde_json::Value::Number(n) => n.to_string(),
            v => as_str(v).to_string(),
        };
        let op = as_str(&rec["op_name"]).to_string();
        let total_us = rec["total_time_us"].as_f64().unwrap();
        let Some((n, total_ps, tf_op, source)) = ours.get(&(pid.clone(), op.clone())) else { panic!("{rel}: ({pid}, {op}) missing from ops") };
        let (n, total_ps) = (*n, *total_ps);
        assert_eq!(n, as_i64(&rec["occurrences"]), "{rel}: occurrences of ({pid}, {op})");
        // XProf's scope path is the instruction's HLO op_name; where it has none (AMD captures
        // without op_name metadata) profq falls back to the event's stats.
        let theirs_scope = as_str(&rec["tf_op_name"]).trim_end_matches(':');
        if !theirs_scope.is_empty() {
            assert_eq!(tf_op.trim_end_matches(':'), theirs_scope, "{rel}: scope path of ({pid}, {op})");
        }
        // XProf shows the op's file and lists its call stack (`file:line:column` a frame) in the
        // cell's title; profq's source is the innermost frame's `file:line`: one of those frames,
        // in the file shown.
        let cell = as_str(&rec["source_file"]);
        if let Some((stack, shown_file)) = cell.split_once("title='").and_then(|(_, rest)| rest.split_once("'>")) {
            let frames: Vec<&str> = stack.lines().map(|f| f.rsplit_once(':').map_or(f, |(file_line, _column)| file_line)).collect();
            assert!(frames.contains(&source.as_str()), "{rel}: source of ({pid}, {op}) {source:?} is none of XProf's frames {frames:?}");
            assert_eq!(source.rsplit_once(':').map(|(file, _line)| file), Some(shown_file), "{rel}: source file of ({pid}, {op})");
        }
        let ours_us = total_ps as f64 / 1e6;
        let rel_err = (ours_us - total_us).abs() / total_us.max(1e-9);
        assert!(rel_err <= 0.005, "{rel}: ({pid}, {op}) ours {ours_us} us vs xprof {total_us} us");
    }
}

#[test]
fn tpu_hlo_stats_match_xprof() {
    if let Some(dir) = shared("public/openxla-xprof/tpu_v6e_jax_inference") {
        check_hlo_stats(&dir);
    }
}

#[test]
fn gpu_hlo_stats_match_xprof() {
    for rel in ["public/TraceLens/mi300x_jax08_conv", "public/TraceLens/mi300x_jax08_elementwise", "public/TraceLens/mi300x_jax08_gemm"] {
        if let Some(dir) = shared(rel) {
            check_hlo_stats(&dir);
        }
    }
}

/// With command buffers off (`--xla_gpu_enable_command_buffer=`) every NVIDIA kernel carries its
/// own HLO instruction, and XProf's hlo_stats lists them: profq's ops agree per (program, op).
#[test]
fn jax_gpu_hlo_stats_without_command_buffers_match_xprof() {
    for name in [
        "fused_kernels_nocb",
        "fused_kernels_scan_nocb",
        "host_bound_gappy_nocb",
        "mlp_train_nocb",
        "mlp_train_detail_nocb_h200",
        "scan_remat_nocb",
        "transformer_lm_nocb",
        "transformer_lm_wide_nocb",
    ] {
        check_hlo_stats(&jax_gpu(name));
    }
}

/// The `roofline` query's rows for (program, op) equal XProf's roofline_model "Total" rows:
/// executions, FLOP rate (GFLOP/s), HBM bandwidth (GiB/s), intensity, bound and efficiency;
/// the run's peaks equal the roofline's. XProf's GPU rows come from its own HLO cost analysis,
/// which profq does not redo: there the ops carry no cost model and only the bandwidth is checked.
#[test]
fn roofline_matches_xprof() {
    for rel in ["public/openxla-xprof/tpu_v6e_jax_inference", "public/TraceLens/mi300x_jax08_gemm"] {
        let Some(dir) = shared(rel) else { continue };
        let store = temp_dir("roofline");
        ingest(&store, &xplane_of(&dir), "r");
        let oracle = read_json(&dir.join("oracle/roofline_model.json"));
        let table = &oracle[0];
        let peak = |key: &str| table["p"][key].as_str().and_then(|v| v.parse::<f64>().ok());
        let run = &sql(&store, "SELECT peak_flops_per_s, peak_hbm_bytes_per_s FROM runs")[0];
        let close = |ours: f64, theirs: f64, rel_tol: f64| (ours - theirs).abs() <= rel_tol * theirs.abs().max(1e-12);
        // The roofline's table prints peaks to six significant digits, in GFLOP/s and GiB/s.
        let hbm = peak("peak_hbm_bw").unwrap() * (1u64 << 30) as f64;
        assert!(close(run["peak_hbm_bytes_per_s"].as_f64().unwrap(), hbm, 1e-5), "{rel}: peak bandwidth {run}");
        let ids: Vec<&str> = table["cols"].as_array().unwrap().iter().map(|c| as_str(&c["id"])).collect();
        let rows: Vec<BTreeMap<&str, &serde_json::Value>> =
            table["rows"].as_array().unwrap().iter().map(|r| ids.iter().copied().zip(r["c"].as_array().unwrap().iter().map(|c| &c["v"])).collect()).collect();
        let totals: Vec<_> = rows.iter().filter(|r| r["step"] == "Total" && r["include_infeed_outfeed"] == true && r["operation"] != "Program").collect();
        assert!(!totals.is_empty(), "{rel}: oracle has roofline rows");
        let Some(peak_flops) = run["peak_flops_per_s"].as_f64() else {
            // A GPU: the profile states no peak FLOP rate, and its ops no FLOPs.
            let ops = profq(&["run", "roofline", &xplane_of(&dir).to_string_lossy(), "--format", "json"]);
            assert_eq!(stdout(&ops).trim(), "[]", "{rel}: {}", stderr(&ops));
            continue;
        };
        assert!(close(peak_flops, peak("peak_flop_rate").unwrap() * 1e9, 1e-5), "{rel}: peak FLOP rate {run}");
        let out = profq(&["run", "roofline", "--run", "r", "--store", &store.to_string_lossy(), "--param", "top_k=100000", "--format", "json"]);
        let ours: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{rel}: {e}: {}", stderr(&out)));
        assert_eq!(ours.len(), totals.len(), "{rel}: roofline rows");
        for theirs in totals {
            let op = as_str(theirs["operation"]);
            let program = as_str(theirs["hlo_module_id"]);
            let row = ours
                .iter()
                .find(|r| as_str(&r["hlo_op"]) == op && r["program_id"] == program.parse::<u64>().unwrap())
                .unwrap_or_else(|| panic!("{rel}: ({program}, {op}) missing from roofline"));
            let num = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
            assert_eq!(as_i64(&row["count"]) as f64, num(theirs["occurrences"]), "{rel}: executions of {op}");
            assert_eq!(as_str(&row["category"]), as_str(theirs["category"]), "{rel}: category of {op}");
            assert!(close(num(&row["flop_rate"]) / 1e9, num(theirs["measured_flop_rate"]), 1e-6), "{rel}: FLOP rate of {op}: {row}");
            assert!(close(num(&row["bandwidth"]) / (1u64 << 30) as f64, num(theirs["measured_memory_bw"]), 1e-6), "{rel}: bandwidth of {op}: {row}");
            assert!(close(num(&row["intensity"]), num(theirs["operational_intensity"]), 1e-9), "{rel}: intensity of {op}: {row}");
            assert!(close(num(&row["roofline_efficiency"]), num(theirs["roofline_efficiency"]), 1e-6), "{rel}: efficiency of {op}: {row}");
            let bound = match as_str(theirs["bound_by"]) {
                "HBM" => "memory",
                "Compute" => "compute",
                _ => "unknown",
            };
            assert_eq!(as_str(&row["bound_by"]), bound, "{rel}: bound of {op}");
        }
    }
}

/// The `memory_profile` query's rows equal XProf's memory_profile summaries per allocator:
/// lifetime peak, the peak's heap, stack and free bytes, fragmentation and capacity. XProf's
/// peak time counts from another origin than the run start, so what is checked is that the
/// two differ by one offset for every allocator of a capture.
#[test]
fn memory_profile_matches_xprof() {
    let mut checked = 0;
    for rel in PUBLIC_XPLANES {
        let Some(dir) = shared(rel) else { continue };
        let out = profq(&["run", "memory_profile", &xplane_of(&dir).to_string_lossy(), "--format", "json"]);
        let ours: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{rel}: {e}: {}", stderr(&out)));
        let oracle = read_json(&dir.join("oracle/memory_profile.json"));
        let allocators = oracle["memoryProfilePerAllocator"].as_object().unwrap();
        assert_eq!(ours.len(), allocators.len(), "{rel}: allocators");
        let mut offsets = Vec::new();
        for (id, theirs) in allocators {
            let row = ours.iter().find(|r| as_str(&r["memory_id"]) == id).unwrap_or_else(|| panic!("{rel}: allocator {id} missing"));
            let summary = &theirs["profileSummary"];
            let peak = &summary["peakStats"];
            let int = |v: &serde_json::Value| v.as_str().unwrap().parse::<i64>().unwrap();
            assert_eq!(as_i64(&row["lifetime_peak_bytes"]), int(&summary["peakBytesUsageLifetime"]), "{rel}: {id} lifetime peak");
            assert_eq!(as_i64(&row["peak_in_use_bytes"]), int(&peak["peakBytesInUse"]), "{rel}: {id} peak in use");
            assert_eq!(as_i64(&row["peak_heap_bytes"]), int(&peak["heapAllocatedBytes"]), "{rel}: {id} heap at peak");
            assert_eq!(as_i64(&row["peak_stack_bytes"]), int(&peak["stackReservedBytes"]), "{rel}: {id} stack at peak");
            assert_eq!(as_i64(&row["peak_free_bytes"]), int(&peak["freeMemoryBytes"]), "{rel}: {id} free at peak");
            assert_eq!(as_i64(&row["capacity_bytes"]), int(&summary["memoryCapacity"]), "{rel}: {id} capacity");
            let fragmentation = row["peak_fragmentation"].as_f64().unwrap();
            assert!((fragmentation - peak["fragmentation"].as_f64().unwrap()).abs() < 1e-6, "{rel}: {id} fragmentation");
            offsets.push(int(&summary["peakStatsTimePs"]) / 1000 - as_i64(&row["peak_time_ns"]));
            checked += 1;
        }
        assert!(offsets.iter().all(|o| (o - offsets[0]).abs() <= 1), "{rel}: peak times {offsets:?}");
    }
    if shared("public/openxla-xprof/tpu_v6e_jax_inference").is_some() {
        assert!(checked >= 4, "allocators checked: {checked}");
    }
}
