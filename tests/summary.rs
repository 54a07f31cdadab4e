//! profile_summary.v1 on the reference's worked scenarios (reference §8.1), built as real
//! XPlane protobuf bytes and gzip'd trace JSON, and on the real captures.

mod common;
use common::synth::*;
use common::*;
use serde_json::Value;
use std::path::Path;

fn query(input: &Path, question: &str) -> Value {
    let o = profq(&["query", question, input.to_str().unwrap()]);
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{question}: {e}: {}{}", stdout(&o), stderr(&o)))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The reference's shared fixture: a TPU process with Steps 0..5 (i×1000, lasting
/// 100, 110, …, 150) and XLA Ops, plus a host `main` thread.
fn reference_trace(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("reference.trace.json.gz");
    let mut events: Vec<(i64, i64, &str, f64, f64, &str)> = Vec::new();
    let names = ["0", "1", "2", "3", "4", "5"];
    for (i, n) in names.iter().enumerate() {
        events.push((1, 1, n, i as f64 * 1000.0, 100.0 + 10.0 * i as f64, ""));
    }
    events.extend([
        (1, 2, "fusion.1", 0.0, 100.0, ""),
        (1, 2, "all-reduce.1", 20.0, 40.0, ""),
        (1, 2, "softmax", 120.0, 60.0, ""),
        (1, 2, "dependency-wait", 190.0, 30.0, ""),
        (1, 2, "psum.1", 230.0, 20.0, ""),
        (2, 3, "python_host_compute", 0.0, 80.0, ""),
        (2, 3, "threading wait", 90.0, 20.0, ""),
    ]);
    write_trace_json(&path, &[(1, "/device:TPU:0"), (2, "/host:CPU")], &[(1, 1, "Steps"), (1, 2, "XLA Ops"), (2, 3, "main")], &events);
    path
}

#[test]
fn reference_trace_breakdown_steps_and_hot_ops() {
    let dir = temp_dir("ref");
    let trace = reference_trace(&dir);
    let s = summarize(&trace, &["--warmup-steps", "2", "--hot-op-limit", "10"]);
    assert_eq!(s["schema_version"], "profile_summary.v1");
    assert_eq!(s["source_format"], "perfetto_trace_json");
    assert_eq!(s["trace_overview"]["num_complete_events"], 13);
    assert_eq!(s["trace_overview"]["display_time_unit"], "ns");
    assert_eq!(s["step_time"]["all_steps"]["count"], 6);
    assert_eq!(s["step_time"]["steady_state_steps"]["count"], 4);
    assert_eq!(f(&s["step_time"]["steady_state_steps"]["median"]), 135.0);
    assert_eq!(f(&s["step_time"]["steady_state_steps"]["p90"]), 147.0);
    let b = &s["time_breakdown"];
    assert_eq!(b["duration_basis"], "exclusive_duration_per_track");
    assert_eq!(f(&b["total_duration"]), 310.0);
    for (k, v) in [("compute", 120.0), ("communication", 60.0), ("host", 80.0), ("stall", 50.0), ("other", 0.0)] {
        assert_eq!(f(&b[k]["total_duration"]), v, "{k}");
    }
    assert_eq!(s["hot_ops"][0]["name"], "fusion.1");
    assert_eq!(f(&s["hot_ops"][0]["exclusive_duration"]), 60.0);
    assert_eq!(s["hot_ops"][1]["name"], "softmax");
    assert_eq!(s["communication_ops"][0]["collective"], "all-reduce");
    assert_eq!(f(&s["communication_ops"][0]["total_duration"]), 60.0);
    assert!(!s["optimization_candidates"].as_array().unwrap().is_empty());
    // Families are computed over every op, and psum.1 counts as a collective.
    let families: Vec<&str> = s["semantic_families"].as_array().unwrap().iter().map(|x| x["family"].as_str().unwrap()).collect();
    assert!(families.contains(&"collective"), "{families:?}");
    let collective = s["semantic_families"].as_array().unwrap().iter().find(|x| x["family"] == "collective").unwrap();
    assert_eq!(collective["count"], 2);

    // Queries on the same trace.
    let top = query(&trace, "What are the top 3 ops by exclusive time?");
    assert_eq!(top["query_type"], "top_ops");
    assert_eq!(top["results"][0]["name"], "fusion.1");
    let cc = query(&trace, "Is comm or compute dominating? Which collective is worst?");
    assert_eq!(cc["query_type"], "compute_vs_communication");
    assert_eq!(cc["dominant"], "compute");
    assert_eq!(query(&trace, "What should we try next?")["query_type"], "optimization_candidates");

    // The report is deterministic and has the reference's sections.
    let r1 = stdout(&profq(&["report", trace.to_str().unwrap()]));
    let r2 = stdout(&profq(&["report", trace.to_str().unwrap()]));
    assert_eq!(r1, r2);
    for section in [
        "# Profile Report (profile_summary.v1)",
        "## Trace Overview",
        "## Time Breakdown (`exclusive_duration_per_track`)",
        "## Pre-Op Gaps",
        "## Gap Context (Region-First)",
        "## Hierarchical Regions",
        "Inclusive %",
        "Exclusive %",
        "## Optimization Candidates",
    ] {
        assert!(r1.contains(section), "report lacks {section}");
    }
    assert!(r1.ends_with("\n") && !r1.ends_with("\n\n"));
}

#[test]
fn global_breakdown_is_a_union_over_the_compute_window() {
    let dir = temp_dir("global");
    let path = dir.join("global.trace.json.gz");
    write_trace_json(
        &path,
        &[(1, "/device:TPU:0"), (2, "/host:CPU")],
        &[(1, 2, "XLA Ops"), (1, 3, "XLA Ops"), (2, 3, "main")],
        &[
            (1, 2, "fusion.1", 100.0, 20.0, ""),
            (1, 2, "all-reduce.1", 130.0, 10.0, ""),
            (1, 2, "fusion.2", 180.0, 20.0, ""),
            // Another device line overlapping fusion.2 exactly must not be counted twice.
            (1, 3, "fusion.3", 180.0, 20.0, ""),
            (2, 3, "host_work", 0.0, 80.0, ""),
        ],
    );
    let s = summarize(&path, &["--breakdown-mode", "exclusive_global"]);
    let b = &s["time_breakdown"];
    assert_eq!(b["duration_basis"], "exclusive_duration_global_timeline");
    assert_eq!(f(&b["total_duration"]), 100.0);
    assert_eq!(f(&b["compute"]["total_duration"]), 40.0);
    assert_eq!(f(&b["communication"]["total_duration"]), 10.0);
    assert_eq!(f(&b["stall"]["total_duration"]), 50.0);
    assert_eq!(f(&b["host"]["total_duration"]), 0.0);
    for fam in s["semantic_families"].as_array().unwrap() {
        assert!((0.0..=1.0).contains(&f(&fam["share_of_total"])));
    }
}

fn gap_trace(dir: &Path, events: &[(&str, f64, f64)]) -> std::path::PathBuf {
    let path = dir.join("gaps.trace.json.gz");
    let ev: Vec<(i64, i64, &str, f64, f64, &str)> = events.iter().map(|(n, s, d)| (1, 2, *n, *s, *d, "")).collect();
    write_trace_json(&path, &[(1, "/device:TPU:0")], &[(1, 2, "XLA Ops")], &ev);
    path
}

#[test]
fn iota_marker_resolves_to_its_payload() {
    let dir = temp_dir("iota");
    let path = gap_trace(&dir, &[("fusion.0", 0.0, 10.0), ("iota.296", 100.0, 1.0), ("dot.1", 101.0, 20.0)]);
    let s = summarize(&path, &[]);
    let gaps = s["gap_before_ops"].as_array().unwrap();
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0]["name"], "dot.1");
    assert_eq!(gaps[0]["payload_op"], "dot.1");
    assert_eq!(gaps[0]["marker_op"], "iota.296");
    assert_eq!(f(&gaps[0]["total_gap_duration"]), 90.0);
    let q = query(&path, "what is the gap before iota.296?");
    assert_eq!(q["query_type"], "pre_op_gap");
    assert_eq!(q["target"], "iota.296");
    assert_eq!(q["match"]["payload_op"], "dot.1");
    assert_eq!(q["match"]["marker_op"], "iota.296");
}

#[test]
fn lookahead_never_bridges_a_second_gap() {
    let dir = temp_dir("nobridge");
    let path = gap_trace(&dir, &[("fusion.0", 0.0, 10.0), ("iota.296", 100.0, 1.0), ("iota.297", 101.0, 1.0), ("dot.1", 130.0, 20.0)]);
    let s = summarize(&path, &[]);
    let gaps = s["gap_before_ops"].as_array().unwrap();
    let by_name = |n: &str| gaps.iter().find(|g| g["name"] == n).unwrap_or_else(|| panic!("no gap for {n}: {gaps:?}"));
    assert_eq!(f(&by_name("iota.296")["total_gap_duration"]), 90.0);
    assert_eq!(by_name("iota.296")["marker_op"], "iota.296");
    assert_eq!(f(&by_name("dot.1")["total_gap_duration"]), 28.0);
}

#[test]
fn scope_rules_wrappers_blacklist_donated_and_copy_labels() {
    let dir = temp_dir("scopes");
    let path = dir.join("scopes.trace.json.gz");
    write_trace_json(
        &path,
        &[(1, "/device:TPU:0")],
        &[(1, 2, "XLA Ops")],
        &[
            (1, 2, "fusion.9", 0.0, 100.0, r#"{"tf_op":"jit(_train_step)/shard_map/apply_rotary_embedding/pallas_call"}"#),
            (1, 2, "copy.7", 150.0, 10.0, r#"{"tf_op":"dynamic_donated[1][0][0].model.params.blocks[0].attn.w_k:"}"#),
            (1, 2, "copy.1", 200.0, 5.0, ""),
            (1, 2, "copy.1", 300.0, 5.0, ""),
            (1, 2, "train_step=>block_0", 400.0, 7.0, ""),
        ],
    );
    let s = summarize(&path, &[]);
    let regions = s["hierarchical_regions"].as_array().unwrap();
    assert!(regions.iter().any(|r| r["path"] == "train_step"), "a name written as a path is a region: {regions:?}");
    let region = |p: &str| regions.iter().find(|r| r["path"] == p).unwrap_or_else(|| panic!("no region {p}: {regions:?}"));
    assert_eq!(f(&region("_train_step")["inclusive_duration"]), 100.0);
    assert_eq!(f(&region("_train_step")["exclusive_duration"]), 0.0);
    assert_eq!(f(&region("_train_step=>apply_rotary_embedding")["exclusive_duration"]), 100.0);
    assert!(regions.iter().all(|r| !r["path"].as_str().unwrap().contains("shard_map") && !r["path"].as_str().unwrap().contains("pallas_call")));
    let contexts = s["gap_region_contexts"].as_array().unwrap();
    let label = |op: &str| {
        contexts.iter().find(|c| c["op_name"] == op).map(|c| c["region_path"].clone()).unwrap_or_else(|| panic!("no context for {op}: {contexts:?}"))
    };
    assert_eq!(label("copy.7"), "copy(model.params.blocks[0].attn.w_k)");
    assert_eq!(label("copy.1"), "copy");
    let q = query(&path, "show context for op copy.1");
    assert_eq!(q["query_type"], "gap_region_context");
    assert_eq!(q["target"], "copy.1");
    assert_eq!(q["results"][0]["region_path"], "copy");
}

#[test]
fn gpu_streams_with_nccl_kernels_and_string_step_numbers() {
    let dir = temp_dir("gpu");
    let path = dir.join("gpu.trace.json.gz");
    write_trace_json(
        &path,
        &[(1, "/device:GPU:0"), (2, "/host:CPU")],
        &[(1, 10, "Stream #0(compute)"), (1, 11, "Stream #1(nccl)"), (2, 1, "main")],
        &[
            (2, 1, "train", 0.0, 100.0, r#"{"step_num":"0"}"#),
            (2, 1, "train", 100.0, 120.0, r#"{"step_num":"1"}"#),
            (2, 1, "train", 220.0, 130.0, r#"{"step_num":"2"}"#),
            (1, 10, "fusion.1", 10.0, 40.0, ""),
            (1, 10, "fusion.1", 110.0, 40.0, ""),
            (1, 10, "fusion.1", 260.0, 40.0, ""),
            (1, 11, "ncclDevKernel_AllGather_RING_LL", 60.0, 20.0, ""),
            (1, 11, "ncclDevKernel_ReduceScatter_RING_LL", 160.0, 20.0, ""),
            (1, 11, "ncclDevKernel_ReduceScatter_RING_LL", 310.0, 20.0, ""),
        ],
    );
    let s = summarize(&path, &["--warmup-steps", "1"]);
    assert_eq!(s["step_time"]["all_steps"]["count"], 3);
    assert_eq!(s["step_time"]["steady_state_steps"]["count"], 2);
    assert!(s["hot_ops"].as_array().unwrap().iter().any(|h| h["name"] == "fusion.1"));
    let kinds: Vec<&str> = s["communication_ops"].as_array().unwrap().iter().map(|c| c["collective"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"all-gather") && kinds.contains(&"reduce-scatter"), "{kinds:?}");
    assert!(!s["gap_before_ops"].as_array().unwrap().is_empty());
}

#[test]
fn direct_xplane_scenario() {
    let dir = temp_dir("xplane");
    let path = dir.join("direct.xplane.pb");
    let mut tpu = PlaneBuilder::new(1, "/device:TPU:0");
    tpu.line(1, "Steps", &[("10", 0, 110, &[]), ("11", 200, 130, &[])]);
    tpu.line(
        2,
        "XLA Ops",
        &[
            ("fusion.1", 0, 10, &[("run_id", V::U(7))]),
            ("iota.296", 80, 1, &[("run_id", V::U(7))]),
            ("dot.1", 81, 19, &[("run_id", V::U(7)), ("tf_op", V::Str("jit(train_step)/block_0/matmul"))]),
            ("fusion.1", 110, 10, &[("run_id", V::U(7))]),
            ("dot.1", 120, 19, &[("run_id", V::U(7)), ("tf_op", V::Str("jit(train_step)/block_0/matmul"))]),
        ],
    );
    write_xspace(&path, vec![tpu.build()]);
    let s = summarize(&path, &[]);
    assert_eq!(s["source_format"], "xplane_pb");
    assert_eq!(s["trace_overview"]["display_time_unit"], "us");
    assert_eq!(s["trace_overview"]["num_complete_events"], 7);
    assert_eq!(s["trace_overview"]["num_processes"], 1);
    assert_eq!(s["trace_overview"]["num_threads"], 2);
    assert_eq!(s["step_time"]["steady_state_steps"]["count"], 2);
    assert_eq!(f(&s["step_time"]["steady_state_steps"]["median"]), 120.0);
    let names: Vec<&str> = s["hot_ops"].as_array().unwrap().iter().map(|h| h["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"fusion.1") && names.contains(&"dot.1"));
    assert_eq!(s["gap_before_ops"][0]["payload_op"], "dot.1");
    assert_eq!(s["gap_before_ops"][0]["marker_op"], "iota.296");
    assert_eq!(f(&s["gap_before_ops"][0]["total_gap_duration"]), 70.0);
    let paths: Vec<&str> = s["hierarchical_regions"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"train_step") && paths.contains(&"train_step=>block_0=>matmul"), "{paths:?}");
    assert_eq!(s["trace_provenance"]["run_ids"], serde_json::json!(["7"]));
}

#[test]
fn xla_module_tf_op_falls_back_to_the_name_stat_only_then() {
    let dir = temp_dir("xlamodule");
    let path = dir.join("moe.xplane.pb");
    let mut gpu = PlaneBuilder::new(1, "/device:GPU:0");
    gpu.line(
        5,
        "Stream #0(compute)",
        &[
            ("kernel_a", 0, 10, &[("tf_op", V::Str("XlaModule:")), ("name", V::Str("jit(fwd_0)/MoEMLP/moe_up_down/pallas_call"))]),
            ("kernel_b", 20, 10, &[("name", V::Str("fabricated/scope"))]),
        ],
    );
    write_xspace(&path, vec![gpu.build()]);
    let s = summarize(&path, &[]);
    let paths: Vec<&str> = s["hierarchical_regions"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert!(paths.iter().any(|p| p.contains("moe_up_down")), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains("fabricated")), "{paths:?}");
}

#[test]
fn host_tracks_aggregate_with_metadata_stats() {
    let dir = temp_dir("host");
    let path = dir.join("host.xplane.pb");
    let mut host = PlaneBuilder::new(1, "/host:CPU");
    host.line(3, "main", &[("step_fn", 0, 130, &[]), ("compute", 10, 30, &[]), ("wait for data", 50, 20, &[])]);
    host.metadata_stats("step_fn", &[("run_id", V::U(9)), ("source", V::Str("train.py"))]);
    write_xspace(&path, vec![host.build()]);
    let s = summarize(&path, &[]);
    assert_eq!(s["trace_overview"]["num_complete_events"], 3);
    assert_eq!(f(&s["time_breakdown"]["host"]["total_duration"]), 110.0);
    assert_eq!(f(&s["time_breakdown"]["stall"]["total_duration"]), 20.0);
    assert_eq!(s["trace_provenance"]["run_ids"], serde_json::json!(["9"]));
    assert_eq!(s["trace_provenance"]["source_file_hints"], serde_json::json!(["train.py"]));
    assert_eq!(s["hot_ops"], serde_json::json!([]));
}

#[test]
fn planes_reusing_a_line_id_stay_apart() {
    let dir = temp_dir("lineids");
    let path = dir.join("reuse.xplane.pb");
    let mut a = PlaneBuilder::new(1, "/device:TPU:0");
    a.line(7, "XLA Ops", &[("fusion.host0", 0, 10, &[])]);
    let mut b = PlaneBuilder::new(2, "/device:TPU:1");
    b.line(7, "XLA Ops", &[("fusion.host1", 0, 20, &[])]);
    write_xspace(&path, vec![a.build(), b.build()]);
    let s = summarize(&path, &[]);
    assert_eq!(s["trace_overview"]["num_processes"], 2);
    assert_eq!(s["trace_overview"]["num_threads"], 2);
    assert_eq!(s["trace_overview"]["num_complete_events"], 2);
    assert_eq!(f(&s["time_breakdown"]["total_duration"]), 30.0);
    let mut names: Vec<&str> = s["hot_ops"].as_array().unwrap().iter().map(|h| h["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["fusion.host0", "fusion.host1"]);
}

#[test]
fn truncation_at_known_caps_only() {
    let dir = temp_dir("trunc");
    for (n, expected) in [(999_999usize, false), (1_000_000, true)] {
        let path = dir.join(format!("cap{n}.trace.json.gz"));
        let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::fast());
        use std::io::Write;
        gz.write_all(br#"{"traceEvents":["#).unwrap();
        for i in 0..n {
            if i > 0 {
                gz.write_all(b",").unwrap();
            }
            write!(gz, r#"{{"ph":"X","pid":1,"tid":1,"name":"e","ts":{i},"dur":1}}"#).unwrap();
        }
        gz.write_all(b"]}").unwrap();
        gz.finish().unwrap();
        let store = temp_dir("trunc-store");
        ingest(&store, &path, "t");
        let runs = sql(&store, "SELECT suspected_truncation, array_length(quality_warnings) AS w FROM runs");
        assert_eq!(runs[0]["suspected_truncation"], expected, "{n}");
        assert_eq!(runs[0]["w"].as_i64().unwrap_or(0) > 0, expected, "{n}: {runs:?}");
    }
}

#[test]
fn directories_prefer_xplane_and_fall_back_to_json_when_it_is_corrupt() {
    let root = temp_dir("fallback");
    let session = root.join("run/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::write(session.join("vm.xplane.pb"), b"\xff").unwrap();
    let src = find_file(&jax_cpu("mlp_after"), "vm.trace.json.gz").unwrap();
    std::fs::copy(&src, session.join("vm.trace.json.gz")).unwrap();
    let s = summarize(&root.join("run"), &[]);
    assert_eq!(s["source_format"], "perfetto_trace_json");
    let warnings = s["trace_overview"]["quality_warnings"].to_string();
    assert!(warnings.contains("XPlane not used"), "{warnings}");
    // Without the JSON the corrupt XPlane is an error.
    std::fs::remove_file(session.join("vm.trace.json.gz")).unwrap();
    let o = profq(&["summarize", root.join("run").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("vm.xplane.pb"));
}

#[test]
fn summarize_output_and_summary_file_round_trip() {
    let dir = temp_dir("out");
    let out = dir.join("nested/summary.json");
    let o = profq(&["summarize", jax_cpu("mlp_train").to_str().unwrap(), "--warmup-steps", "1", "--output", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{}\n", out.display()));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(s["source_format"], "xplane_pb");
    let q = profq(&["query", "top ops", "--summary", out.to_str().unwrap(), "--top-k", "3"]);
    let a: Value = serde_json::from_str(&stdout(&q)).unwrap();
    assert_eq!(a["results"].as_array().unwrap().len(), 3);
    let r1 = profq(&["report", "--summary", out.to_str().unwrap()]);
    let r2 = profq(&["report", "--summary", out.to_str().unwrap()]);
    assert_eq!(stdout(&r1), stdout(&r2));
    let unknown = profq(&["query", "when does it stop", "--summary", out.to_str().unwrap()]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stdout(&unknown).contains("supported_questions"));
}

#[test]
fn xplane_and_json_summaries_of_real_captures_agree() {
    for name in ["mlp_train", "host_bound_gappy", "mlp_after", "multi_device_dp", "transformer_lm"] {
        let dir = jax_cpu(name);
        let x = summarize(&xplane_of(&dir), &[]);
        let j = summarize(&find_file(&dir, "perfetto_trace.json.gz").unwrap(), &[]);
        assert_eq!(x["source_format"], "xplane_pb");
        assert_eq!(j["source_format"], "perfetto_trace_json");
        for key in ["count", "median", "p90"] {
            let (a, b) = (f(&x["step_time"]["all_steps"][key]), f(&j["step_time"]["all_steps"][key]));
            assert!((a - b).abs() < 0.002, "{name}: steps {key}: {a} vs {b}");
        }
        let names = |s: &Value| s["hot_ops"].as_array().unwrap().iter().take(10).map(|h| (h["name"].clone(), h["count"].clone())).collect::<Vec<_>>();
        assert_eq!(names(&x), names(&j), "{name}: top ops");
    }
}

/// The same on NVIDIA GPU captures: step times and the time breakdown agree; hot ops too where
/// no kernel ran inside a CUDA graph (XLA command buffer), whose kernels the XPlane's HLO places
/// on their instructions while the JSON, without HLO, names them by kernel.
#[test]
fn xplane_and_json_summaries_of_gpu_captures_agree() {
    for name in JAX_GPU_CAPTURES {
        let dir = jax_gpu(name);
        let x = summarize(&xplane_of(&dir), &[]);
        let j = summarize(&find_file(&dir, "perfetto_trace.json.gz").unwrap(), &[]);
        for key in ["count", "median", "p90"] {
            let (a, b) = (f(&x["step_time"]["all_steps"][key]), f(&j["step_time"]["all_steps"][key]));
            assert!((a - b).abs() < 0.002, "{name}: steps {key}: {a} vs {b}");
        }
        assert_eq!(x["time_breakdown"], j["time_breakdown"], "{name}: time breakdown");
        let names = |s: &Value| s["hot_ops"].as_array().unwrap().iter().take(10).map(|h| (h["name"].clone(), h["count"].clone())).collect::<Vec<_>>();
        assert!(!names(&x).iter().any(|(n, _)| n.as_str().unwrap().starts_with("command_buffer")), "{name}");
        // Inside CUDA graphs the XPlane's schedule places kernels on their instructions; the JSON
        // holds no HLO, and names them by kernel.
        let in_graphs = x["trace_overview"]["quality_warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("ran inside CUDA graphs"));
        if !in_graphs {
            assert_eq!(names(&x), names(&j), "{name}: top ops");
        }
    }
}

/// GPU copies: the stream's MemcpyH2D kernels are host-to-device transfers with their bytes.
#[test]
fn gpu_memcpy_streams_are_transfers_with_bytes() {
    let q = query(&jax_gpu("host_bound_gappy"), "how much time goes to host to device transfers?");
    assert_eq!(q["query_type"], "transfers");
    let rows = q["results"].as_array().unwrap();
    let h2d = rows.iter().find(|r| r["direction"] == "host_to_device" && r["on_device"] == true).expect("device-side H2D copies");
    assert_eq!(h2d["count"], 30);
    assert!(h2d["bytes"].as_i64().unwrap() > 0, "{h2d}");
}

/// A PyTorch (Kineto) trace captured on an H100: kernels on their CUDA stream become ops.
#[test]
fn kineto_h100_capture_summarizes() {
    let input = repo().join("tests/data/kineto/torch_mlp_h100.pt.trace.json.gz");
    let s = summarize(&input, &[]);
    assert_eq!(s["source_format"], "perfetto_trace_json");
    let hot = s["hot_ops"].as_array().unwrap();
    assert!(hot.iter().any(|h| h["name"].as_str().unwrap().contains("gemm") || h["name"].as_str().unwrap().contains("Kernel")), "{hot:?}");
}

/// The FLOP proxy follows the reference's rules: on the TPU capture each hot op's proxy per
/// invocation equals the seed tool's, and a family whose ops all made the seed's truncated
/// hot-op list (there: `collective`, the same 12 all-reduces) has the seed's total.
#[test]
fn flop_proxies_match_the_seed_tool() {
    let Some(dir) = shared("public/openxla-xprof/tpu_v6e_jax_inference") else { return };
    let s = summarize(&dir.join("tpu_inference_2.xplane.pb"), &[]);
    let seed: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("seed/xplane.summary.json")).unwrap()).unwrap();
    let mut compared = 0;
    for theirs in seed["hot_ops"].as_array().unwrap() {
        if let Some(ours) = s["hot_ops"].as_array().unwrap().iter().find(|h| h["name"] == theirs["name"]) {
            assert_eq!(ours["flop_proxy_per_invocation"], theirs["flop_proxy_per_invocation"], "{}", theirs["name"]);
            compared += 1;
        }
    }
    assert!(compared >= 5, "hot ops in common: {compared}");
    let family = |doc: &Value, name: &str| doc["semantic_families"].as_array().unwrap().iter().find(|x| x["family"] == name).cloned().unwrap();
    let (ours, theirs) = (family(&s, "collective"), family(&seed, "collective"));
    assert_eq!(ours["count"], theirs["count"]);
    assert_eq!(ours["flop_proxy_total"], theirs["flop_proxy_total"]);
    let ratio = f(&ours["time_per_flop_proxy"]) / f(&theirs["time_per_flop_proxy"]);
    assert!((ratio - 1.0).abs() < 0.01, "time per proxy: ours {} seed {}", ours["time_per_flop_proxy"], theirs["time_per_flop_proxy"]);
    for fam in s["semantic_families"].as_array().unwrap() {
        let total = f(&fam["flop_proxy_total"]);
        assert!(total > 0.0 && (f(&fam["time_per_flop_proxy"]) - f(&fam["exclusive_duration"]) / total).abs() < 1e-12, "{fam}");
    }
}

#[test]
fn every_real_fixture_summarizes() {
    let mut inputs: Vec<std::path::PathBuf> = JAX_CPU_CAPTURES.iter().map(|n| jax_cpu(n)).chain(JAX_GPU_CAPTURES.iter().map(|n| jax_gpu(n))).collect();
    for rel in SHARED_PROFILES {
        inputs.extend(shared(rel));
    }
    let kineto = repo().join("tests/data/kineto");
    inputs.extend(["torch_mlp_h100", "torch_tlm_eager_mem", "torch_tlm_cudagraphs"].map(|n| kineto.join(format!("{n}.pt.trace.json.gz"))));
    for input in inputs {
        let s = summarize(&input, &[]);
        assert_eq!(s["schema_version"], "profile_summary.v1", "{}", input.display());
        for key in [
            "run_metadata",
            "trace_overview",
            "trace_provenance",
            "step_time",
            "time_breakdown",
            "hot_ops",
            "semantic_families",
            "communication_ops",
            "gap_before_ops",
            "hierarchical_regions",
            "gap_region_contexts",
            "optimization_candidates",
        ] {
            assert!(s.get(key).is_some(), "{}: missing {key}", input.display());
        }
        assert!(!s["optimization_candidates"].as_array().unwrap().is_empty());
    }
}

#[test]
fn shape_churn_recompilation_is_found() {
    let Some(dir) = shared("jax_cpu/shape_churn") else { return };
    let q = query(&dir, "is anything recompiling?");
    assert_eq!(q["query_type"], "recompilation");
    let steps: Vec<i64> = q["results"]["steps_with_compilation"].as_array().unwrap().iter().map(|c| c["step"].as_i64().unwrap()).collect();
    assert_eq!(steps, [2, 5, 11]);
    assert_eq!(q["results"]["modules_with_several_programs"][0]["programs"], 4);
}

/// On a real H100 capture (JAX 0.11; XLA's GPU compiler shows as
/// `PjRtStreamExecutorClient::CompileInternal`, and `CompileToBackendResult` on compile-pool
/// threads) compilation is found in the steps where the generator recorded a new shape, and
/// not in the later step whose shape was already compiled (a jit cache hit).
#[test]
fn gpu_recompilation_is_found_where_the_generator_compiled() {
    let dir = jax_gpu("shape_churn_small");
    let capture = read_json(&dir.join("capture.json"));
    let expected: Vec<i64> = capture["expected_compile_steps"].as_array().unwrap().iter().map(|s| s.as_i64().unwrap()).collect();
    assert_eq!(capture["backend"], "gpu");
    let q = query(&dir, "is anything recompiling?");
    assert_eq!(q["query_type"], "recompilation");
    let steps: Vec<i64> = q["results"]["steps_with_compilation"].as_array().unwrap().iter().map(|c| c["step"].as_i64().unwrap()).collect();
    assert_eq!(steps, expected);
    // One program compiled before the capture (step 0's shape) and one per new shape.
    assert_eq!(q["results"]["modules_with_several_programs"][0]["programs"], expected.len() as i64 + 1);
}

/// A compiler object's host-to-device copies (`PjRtCApiCompiler::BufferFromHostBuffer(f32[])`
/// on the H100 captures, every step) are transfers, not compilation.
#[test]
fn compiler_buffer_copies_are_transfers_not_compiles() {
    let s = summarize(&repo().join("tests/data/jax_gpu/mlp_before"), &[]);
    assert_eq!(s["profq_recompilation"]["steps_with_compilation"], serde_json::json!([]), "{}", s["profq_recompilation"]);
    let candidates: Vec<&str> = s["optimization_candidates"].as_array().unwrap().iter().map(|c| c["candidate_id"].as_str().unwrap()).collect();
    assert!(!candidates.contains(&"recompilation") && candidates.contains(&"host-device-transfers"), "{candidates:?}");
}

#[test]
fn every_intent_answers_on_a_real_capture() {
    let input = jax_cpu("multi_device_dp");
    let summary_path = temp_dir("intents").join("s.json");
    let o = profq(&["summarize", input.to_str().unwrap(), "--output", summary_path.to_str().unwrap()]);
    assert!(o.status.success());
    for intent in profq::summary::query::INTENTS {
        let o = profq(&["query", intent.example, "--summary", summary_path.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", intent.example, stderr(&o));
        let a: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(a["query_type"], intent.query_type, "{}", intent.example);
        let t = profq(&["query", intent.example, "--summary", summary_path.to_str().unwrap(), "--format", "table"]);
        assert!(stdout(&t).starts_with(&format!("query_type: {}\n", intent.query_type)), "{}", stdout(&t));
    }
    let collectives = query(&input, "break down the collectives");
    let kinds: Vec<&str> = collectives["results"].as_array().unwrap().iter().map(|c| c["collective"].as_str().unwrap()).collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    let sql = profq(&["query", "top ops", input.to_str().unwrap(), "--show-sql"]);
    assert!(stdout(&sql).contains("FROM op_totals WHERE run_id = 'input'"), "{}", stdout(&sql));
    let stragglers = query(&input, "which device is the straggler?");
    assert_eq!(stragglers["results"].as_array().unwrap().len(), 8);
}

/// "Memory- or compute-bound?" is answered from the roofline where the ops carry a cost model
/// and the profile states peaks (TPU), and stays `unsupported_from_trace_only` where not,
/// saying which is missing: a CPU capture, and a summary file (which holds no roofline).
#[test]
fn bound_question_is_answered_from_the_roofline() {
    let question = "Is it memory-bound or compute-bound?";
    let cpu = query(&jax_cpu("transformer_lm"), question);
    assert_eq!(cpu["result"], "unsupported_from_trace_only", "{cpu}");
    assert!(cpu["explanation"].as_str().unwrap().contains("no cost model"), "{cpu}");
    let summary_path = temp_dir("bound").join("s.json");
    assert!(profq(&["summarize", jax_cpu("transformer_lm").to_str().unwrap(), "--output", summary_path.to_str().unwrap()]).status.success());
    let o = profq(&["query", question, "--summary", summary_path.to_str().unwrap()]);
    let from_summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(from_summary["result"], "unsupported_from_trace_only", "{from_summary}");
    let Some(tpu) = shared("public/openxla-xprof/tpu_v6e_jax_inference") else { return };
    let a = query(&xplane_of(&tpu), question);
    assert_eq!((a["result"].as_str(), a["bound_by"].as_str()), (Some("roofline"), Some("memory")), "{a}");
    let shares: f64 = a["by_bound"].as_array().unwrap().iter().map(|b| f(&b["share_of_self"])).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{a}");
    let top = &a["results"][0];
    assert_eq!((top["hlo_op"].as_str(), top["bound_by"].as_str(), top["is_async"].as_bool()), (Some("copy-done.4"), Some("memory"), Some(true)), "{a}");
    let sql = profq(&["query", question, xplane_of(&tpu).to_str().unwrap(), "--show-sql"]);
    assert!(stdout(&sql).contains("-- query: roofline") || stdout(&sql).contains("\"query\": \"roofline\""), "{}", stdout(&sql));
}

/// "How much memory at peak?" is answered from the allocators' events of a profile (kept in
/// memory as events of interest): every allocator and the one closest to full. A capture
/// without them, and a summary file, say so.
#[test]
fn memory_question_is_answered_from_the_allocator_events() {
    let question = "How much device memory is used at peak?";
    let cpu = query(&jax_cpu("mlp_train"), question);
    assert_eq!(cpu["result"], "no_memory_events", "{cpu}");
    let summary_path = temp_dir("memory").join("s.json");
    assert!(profq(&["summarize", jax_cpu("mlp_train").to_str().unwrap(), "--output", summary_path.to_str().unwrap()]).status.success());
    let o = profq(&["query", question, "--summary", summary_path.to_str().unwrap()]);
    assert_eq!(serde_json::from_str::<Value>(&stdout(&o)).unwrap()["result"], "needs_profile");
    // PyTorch's `[memory]` events: the peak is the most `Total Allocated` of a device.
    let kineto = repo().join("tests/data/kineto/torch_tlm_eager_mem.pt.trace.json.gz");
    let trace: Value = serde_json::from_reader(flate2::read::GzDecoder::new(std::fs::File::open(&kineto).unwrap())).unwrap();
    let cuda_peak = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "[memory]" && e["args"]["Device Type"] == 1 && e["args"]["Device Id"] == 0)
        .map(|e| e["args"]["Total Allocated"].as_i64().unwrap())
        .max()
        .unwrap();
    let k = query(&kineto, question);
    assert_eq!((k["fullest"]["memory_id"].as_str(), k["fullest"]["peak_in_use_bytes"].as_i64()), (Some("cuda:0"), Some(cuda_peak)), "{k}");
    assert!(k["fullest"]["peak_reserved_bytes"].as_i64().unwrap() >= cuda_peak, "{k}");
    let Some(tpu) = shared("public/openxla-xprof/tpu_v6e_jax_inference") else { return };
    let a = query(&xplane_of(&tpu), question);
    let ids: Vec<&str> = a["results"].as_array().unwrap().iter().map(|r| r["memory_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["0", "1", "2", "3"], "{a}");
    // Memories 1 and 2 peak equally high: the first in (host, memory_id) order is the fullest.
    assert_eq!(a["fullest"]["memory_id"], "1", "{a}");
    let store = temp_dir("memory-store");
    ingest(&store, &xplane_of(&tpu), "r");
    let stored = profq(&["query", question, "--run", "r", "--store", store.to_str().unwrap()]);
    assert_eq!(serde_json::from_str::<Value>(&stdout(&stored)).unwrap()["results"], a["results"], "a stored run answers as its profile");
}

/// In memory, `events` holds only the events of interest (compiles, copies), with every arg,
/// and `ops` and `gaps` only the columns the summary reads: the summary of an INPUT equals
/// the summary of its stored run, which has every event and column, on
/// captures with compiles, with GPU copies (XPlane and Kineto JSON, with bytes args), on TPU,
/// and without either.
#[test]
fn input_summary_equals_stored_run_summary() {
    let mut inputs = vec![jax_gpu("host_bound_gappy"), jax_cpu("mlp_train"), repo().join("tests/data/kineto/torch_mlp_h100.pt.trace.json.gz")];
    for rel in ["jax_cpu/shape_churn", "public/openxla-xprof/tpu_v6e_jax_inference", "public/TraceLens/mi300x_jax08_gemm"] {
        inputs.extend(shared(rel));
    }
    let store = temp_dir("input-vs-run");
    for (i, input) in inputs.iter().enumerate() {
        let run_id = format!("r{i}");
        let o = profq(&["ingest", input.to_str().unwrap(), "--store", store.to_str().unwrap(), "--run-id", &run_id]);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut from_input = summarize(input, &[]);
        let o = profq(&["summarize", "--run", &run_id, "--store", store.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut from_run: Value = serde_json::from_str(&stdout(&o)).unwrap();
        for s in [&mut from_input, &mut from_run] {
            s["run_metadata"]["run_id"] = Value::Null;
        }
        assert_eq!(from_input, from_run, "{}", input.display());
        let q = query(input, "is anything recompiling?");
        assert_eq!(q["query_type"], "recompilation", "{}", input.display());
    }
}

/// Statements planned before an INPUT's tables exist ([`profq::engine::ahead`]) read the
/// tables given afterwards: the summary equals one planned over the filled tables, and a
/// plan executed before its tables are given fails with an error rather than empty rows.
#[tokio::test]
async fn statements_planned_ahead_read_the_tables_given_later() {
    use profq::engine::{reads::Declared, Engine, Spread};
    use profq::summary::{self, SummaryOptions};
    let input = jax_cpu("mlp_train");
    let tables = profq::ingest::load_tables(&input, "input", &[]).unwrap();
    let opts = SummaryOptions::default();
    let path = input.display().to_string();
    let direct = summary::summarize(&Engine::from_tables(&tables, "input", Spread::Narrow).unwrap(), "input", &path, &opts).await.unwrap();

    let (engine, slots) = Engine::pending(Spread::Narrow, Declared::columns(profq::tables::ColumnsRead::every()));
    let early = engine.plan("SELECT count(*) AS n FROM ops").await.unwrap();
    let err = early.execute().await.unwrap_err();
    assert!(err.0.contains("ops was read before its rows were given"), "{err}");
    let mut planned = std::collections::BTreeMap::new();
    for s in summary::statements(&opts, "input") {
        planned.insert(s.key, engine.plan(&s.sql).await.unwrap());
    }
    assert_eq!(planned.len(), 20);
    slots.fill(&[(&tables, "input")]).unwrap();
    let prepared = profq::engine::ahead::Prepared { planned, without_rows: Default::default() };
    let ahead = summary::summarize_planned(&engine, "input", &path, &opts, prepared).await.unwrap();
    assert_eq!(profq::render::json_text(&ahead.to_value()), profq::render::json_text(&direct.to_value()));
}

/// An analysis of an INPUT builds only the columns of `ops` and `gaps` that its statements
/// read: what they read equals what every column gives, and a statement it did not declare
/// that reads a column left out is refused rather than answered from the zeros there.
#[tokio::test]
async fn an_analysis_builds_the_columns_it_reads_and_refuses_others() {
    use profq::engine::{reads::Declared, Engine, Spread};
    let input = jax_cpu("multi_device_dp");
    let declared = "SELECT device, sum(self_ns) AS busy, count(*) AS n FROM ops WHERE run_id = 'input' GROUP BY device ORDER BY device";
    let ahead = Declared::of([declared.to_string()]);
    let read = ahead.columns.clone();
    assert!(read.reads("ops", "self_ns") && !read.reads("ops", "flops") && !read.reads("gaps", "gap_ns"));
    let pruned = profq::ingest::load_tables_telling(&input, "input", &[], read.clone(), Default::default()).unwrap();
    let whole = profq::ingest::load_tables(&input, "input", &[]).unwrap();
    assert_eq!(pruned.rows("ops"), whole.rows("ops"));
    let (engine, slots) = Engine::pending(Spread::Narrow, ahead);
    slots.fill(&[(&pruned, "input")]).unwrap();
    // Declared: planned without a second scan of what it reads.
    let answer = engine.sql(declared).await.unwrap();
    let expected = Engine::from_tables(&whole, "input", Spread::Narrow).unwrap().sql(declared).await.unwrap();
    assert_eq!(profq::engine::rows::rows(&answer), profq::engine::rows::rows(&expected));
    assert_eq!(profq::engine::rows::rows(&answer).len(), 8);
    for undeclared in ["SELECT sum(flops) FROM ops", "SELECT * FROM ops", "SELECT max(gap_ns) FROM gaps"] {
        let err = engine.sql(undeclared).await.unwrap_err();
        assert!(err.0.contains("built its tables without"), "{undeclared}: {err}");
    }
}

/// A named query that says its rows come only from one table (`Rows only from:`) returns none
/// when the run has no rows there, so an analysis may skip it without planning it: checked
/// on real captures where the query has rows, with that table emptied.
#[tokio::test]
async fn a_query_with_rows_only_from_a_table_returns_none_without_its_rows() {
    use profq::engine::{queries, Engine, Spread};
    use profq::tables::{schema, RunTables};
    use std::collections::{BTreeMap, BTreeSet};
    let declared: Vec<(&str, &str)> = queries::QUERIES.iter().filter_map(|q| Some((q.name, q.rows_only_from()?))).collect();
    assert_eq!(
        declared,
        [
            ("collectives_by_kind", "collectives"),
            ("collective_skew", "collectives"),
            ("idle_breakdown", "events"),
            ("kernel_breakdown", "events"),
            ("recompilation", "events"),
            ("straggler_ranks", "collectives"),
            ("temporal_breakdown", "events"),
            ("transfers", "events")
        ]
    );
    // Collectives over 8 devices; host-to-device copies; compilation inside the window; a
    // PyTorch job of 4 ranks with its collectives.
    let job = temp_dir("rows-only-job").join("job");
    common::kineto_job::write(&common::kineto_job::Job { ranks: 4, steps: 4, late_rank: 1, late_us: 50 }, &job);
    let mut inputs = vec![jax_cpu("multi_device_dp"), jax_gpu("host_bound_gappy"), job];
    inputs.extend(shared("jax_cpu/shape_churn"));
    let params = BTreeMap::from([("run_id".to_string(), "input".to_string())]);
    let row_count = |batches: Vec<arrow::record_batch::RecordBatch>| batches.iter().map(|b| b.num_rows()).sum::<usize>();
    let mut had_rows = BTreeSet::new();
    for input in &inputs {
        let tables = profq::ingest::load_tables_with_every_event(input, "input").unwrap();
        let whole = Engine::from_tables(&tables, "input", Spread::Narrow).unwrap();
        for &(query, table) in &declared {
            assert!(schema::table(table).is_some(), "{query}: no table {table}");
            if row_count(whole.run_named(query, &params).await.unwrap()) > 0 {
                had_rows.insert(query);
            }
            let emptied = RunTables::new(tables.tables.iter().filter(|(t, _)| *t != table).cloned().collect());
            let engine = Engine::from_tables(&emptied, "input", Spread::Narrow).unwrap();
            assert_eq!(row_count(engine.run_named(query, &params).await.unwrap()), 0, "{query} without {table} rows, {}", input.display());
        }
    }
    if inputs.len() == 4 {
        assert_eq!(had_rows.len(), declared.len(), "each claim is checked where its query has rows: {had_rows:?}");
    }
}

/// The typed document (`summary::doc::Summary`) holds every key a summary has: profq's own
/// summaries and the reference tool's read back into it and serialize to the same JSON
/// (the reference's lack the `profq_*` keys, which stay out).
#[test]
fn summaries_read_back_into_the_typed_document_unchanged() {
    use profq::summary::doc::Summary;
    let round_trip = |doc: &Value| -> Value {
        let typed: Summary = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}"));
        let mut back = typed.to_value();
        // Keys the reference tool does not write read back empty: drop them where the
        // document had none, to compare the rest.
        let kept: Vec<String> = back.as_object().unwrap().keys().filter(|k| doc.get(k.as_str()).is_none()).cloned().collect();
        for k in kept {
            assert!(k.starts_with("profq_"), "{k} is not optional");
            back.as_object_mut().unwrap().remove(&k);
        }
        back
    };
    for input in [jax_cpu("transformer_lm"), jax_cpu("multi_device_dp"), jax_gpu("fused_kernels")] {
        let ours = summarize(&input, &[]);
        assert_eq!(round_trip(&ours), ours, "{}", input.display());
    }
    for capture in ["jax_cpu/mlp_before", "jax_cpu/transformer_lm", "public/openxla-xprof/tpu_v6e_jax_inference"] {
        let Some(dir) = shared(capture) else { continue };
        let seed: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("seed/xplane.summary.json")).unwrap()).unwrap();
        assert_eq!(round_trip(&seed), seed, "{capture}");
    }
}

/// A collective is in the `collective` family wherever it was called from: the scope path of
/// an all-reduce issued under `attention` or of an all-gather under a norm says where it was
/// issued, not what it does.
#[test]
fn a_collective_stays_a_collective() {
    let dir = temp_dir("families");
    let path = dir.join("scoped.trace.json.gz");
    let events = [
        (1, 1, "fusion.1", 0.0, 100.0, r#"{"tf_op": "model/attention/dot_general"}"#),
        (1, 1, "all-reduce.26", 100.0, 40.0, r#"{"tf_op": "model/attention/psum"}"#),
        (1, 1, "all-gather.6", 140.0, 30.0, r#"{"tf_op": "model/rmsnorm/all_gather"}"#),
        (1, 1, "fusion.2", 170.0, 20.0, r#"{"tf_op": "model/rmsnorm/mul"}"#),
    ];
    write_trace_json(&path, &[(1, "/device:TPU:0")], &[(1, 1, "XLA Ops")], &events);
    let s = summarize(&path, &[]);
    let family = |name: &str| s["semantic_families"].as_array().unwrap().iter().find(|x| x["family"] == name).cloned();
    let collective = family("collective").unwrap_or_else(|| panic!("{}", s["semantic_families"]));
    assert_eq!(collective["count"], 2, "{collective}");
    assert_eq!(family("attention_dense").map(|f| f["count"].clone()), Some(Value::from(1)));
    assert_eq!(family("norm_gating").map(|f| f["count"].clone()), Some(Value::from(1)));
}
