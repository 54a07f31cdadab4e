//! The command line end to end: ingest behaviour, bad input, read-only SQL, schema docs.

mod common;
use common::*;
use std::path::Path;

fn store_arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn store_is_empty_of_runs(store: &Path) -> bool {
    !store.join("runs").exists() || std::fs::read_dir(store.join("runs")).unwrap().next().is_none()
}

#[test]
fn reingest_is_a_noop_unless_forced_and_run_ids_are_unique() {
    let store = temp_dir("reingest");
    let dir = jax_cpu("mlp_after");
    let o = profq(&["ingest", dir.to_str().unwrap(), "--store", store_arg(&store), "--label", "variant=after"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("ingested mlp_after:"), "{}", stdout(&o));
    let again = profq(&["ingest", dir.to_str().unwrap(), "--store", store_arg(&store)]);
    assert!(again.status.success());
    assert!(stdout(&again).starts_with("unchanged mlp_after"), "{}", stdout(&again));
    // The trace JSON of the same capture is another trace: a new, unique id.
    let json = find_file(&dir, "vm.trace.json.gz").unwrap();
    let o = profq(&["ingest", json.to_str().unwrap(), "--store", store_arg(&store)]);
    assert!(stdout(&o).starts_with("ingested mlp_after-2:"), "{}", stdout(&o));
    let forced = profq(&["ingest", dir.to_str().unwrap(), "--store", store_arg(&store), "--force"]);
    assert!(stdout(&forced).starts_with("ingested mlp_after"), "{}", stdout(&forced));
    let runs = sql(&store, "SELECT run_id, labels FROM runs ORDER BY run_id");
    assert_eq!(runs.len(), 2, "{runs:?}");
    let staging = store.join(".staging");
    assert!(!staging.exists() || std::fs::read_dir(staging).unwrap().next().is_none());
}

#[test]
fn bad_inputs_give_one_clear_line_and_leave_the_store_untouched() {
    let store = temp_dir("bad");
    let work = temp_dir("bad-inputs");
    let real = std::fs::read(xplane_of(&jax_cpu("host_bound_gappy"))).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.xplane.pb", vec![], "empty file"),
        ("truncated.xplane.pb", real[..real.len() / 2].to_vec(), "corrupt or truncated XPlane"),
        ("garbage.xplane.pb", vec![0xff; 64], "corrupt or truncated XPlane"),
        ("json.xplane.pb", b"{\"traceEvents\": []}".to_vec(), "not an XPlane"),
        ("notatrace.json", b"{\"hello\": 1}".to_vec(), "no `traceEvents`"),
        ("broken.json", b"{\"traceEvents\": [{\"ph\": \"X\", ".to_vec(), "truncated JSON"),
        ("nonutf8.json", b"{\"traceEvents\": [{\"name\": \"\xff\xfe\"}]}".to_vec(), "invalid JSON"),
        ("garbage.json.gz", vec![0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7], "read error"),
        ("readme.txt", b"hello".to_vec(), "not a profile"),
    ];
    for (name, bytes, expect) in cases {
        let path = work.join(name);
        std::fs::write(&path, bytes).unwrap();
        let o = profq(&["ingest", path.to_str().unwrap(), "--store", store_arg(&store)]);
        assert_eq!(o.status.code(), Some(3), "{name}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(name) && err.contains(expect), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let missing = profq(&["ingest", "/nonexistent/profile.xplane.pb", "--store", store_arg(&store)]);
    assert_eq!(missing.status.code(), Some(3));
    assert!(store_is_empty_of_runs(&store));
}

#[test]
fn sql_is_read_only() {
    let store = temp_dir("ro");
    ingest(&store, &xplane_of(&jax_cpu("host_bound_gappy")), "g");
    for stmt in [
        "CREATE TABLE t AS SELECT 1",
        "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '/etc'",
        "INSERT INTO runs SELECT * FROM runs",
        "DROP TABLE events",
        "COPY (SELECT 1) TO '/tmp/profq-copy-test.csv'",
        "CREATE VIEW v AS SELECT 1",
        "SET datafusion.execution.batch_size = 1",
    ] {
        let o = profq(&["sql", stmt, "--store", store_arg(&store)]);
        assert_eq!(o.status.code(), Some(4), "{stmt}: {}", stdout(&o));
        assert!(stderr(&o).contains("read-only"), "{stmt}: {}", stderr(&o));
    }
    assert!(!Path::new("/tmp/profq-copy-test.csv").exists());
    let ok = profq(&["sql", "SELECT count(*) AS n FROM events", "--store", store_arg(&store), "--format", "csv"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).starts_with("n\n"), "{}", stdout(&ok));
}

#[test]
fn sql_formats_and_empty_store() {
    let store = temp_dir("empty");
    let o = profq(&["sql", "SELECT count(*) AS n FROM ops", "--store", store_arg(&store), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["n"], 0);
    ingest(&store, &xplane_of(&jax_cpu("mlp_train")), "m");
    let t = profq(&["sql", "SELECT step, dur_ns FROM steps ORDER BY step LIMIT 3", "--store", store_arg(&store)]);
    assert!(stdout(&t).contains("| step |") && stdout(&t).contains("(3 rows)"), "{}", stdout(&t));
    let bad = profq(&["sql", "SELECT nope FROM events", "--store", store_arg(&store)]);
    assert_eq!(bad.status.code(), Some(4));
}

#[test]
fn schema_doc_is_generated_from_the_code() {
    let doc = std::fs::read_to_string(repo().join("docs/schema.md")).expect("docs/schema.md");
    assert_eq!(doc, profq::tables::schema::markdown(), "docs/schema.md is stale: regenerate with `cargo run -- schema --markdown > docs/schema.md`");
    let o = profq(&["schema", "ops"]);
    assert!(stdout(&o).contains("collective_kind"));
    let bad = profq(&["schema", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn run_ids_cannot_escape_the_store() {
    let store = temp_dir("escape");
    let input = xplane_of(&jax_cpu("host_bound_gappy"));
    for id in ["../evil", "a/b", ".hidden", "x\ny", ""] {
        let o = profq(&["ingest", input.to_str().unwrap(), "--store", store_arg(&store), "--run-id", id]);
        assert_eq!(o.status.code(), Some(2), "{id:?}: {}", stderr(&o));
    }
    assert!(store_is_empty_of_runs(&store));
}

#[test]
fn a_killed_ingests_leftovers_are_invisible_and_cleaned() {
    let store = temp_dir("killed");
    // What a writer killed mid-commit leaves: a staged dir of a dead pid, and a partition with no runs row.
    std::fs::create_dir_all(store.join(".staging/999999999-1-ghost/events/run_id=ghost")).unwrap();
    std::fs::create_dir_all(store.join("events/run_id=ghost")).unwrap();
    std::fs::copy(xplane_of(&jax_cpu("host_bound_gappy")), store.join("events/run_id=ghost/part-0.parquet")).ok();
    ingest(&store, &xplane_of(&jax_cpu("host_bound_gappy")), "real");
    assert!(!store.join("events/run_id=ghost").exists());
    assert!(!store.join(".staging/999999999-1-ghost").exists());
    let runs = sql(&store, "SELECT DISTINCT run_id FROM events");
    assert_eq!(runs.len(), 1);
}

/// A run ingested before a table existed (its partition missing) is refused by analyses,
/// which would read the table as empty, with the way out; ingesting it again with
/// `--force` mends it.
#[test]
fn a_run_without_a_newer_table_is_refused_until_ingested_again() {
    let store = temp_dir("older");
    let input = xplane_of(&jax_cpu("host_bound_gappy"));
    ingest(&store, &input, "old");
    std::fs::remove_dir_all(store.join("line_steps/run_id=old")).unwrap();
    let o = profq(&["summarize", "--run", "old", "--store", store_arg(&store)]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("no line_steps table") && stderr(&o).contains("--run-id old --force"), "{}", stderr(&o));
    let again = profq(&["ingest", input.to_str().unwrap(), "--store", store_arg(&store), "--run-id", "old", "--force"]);
    assert!(again.status.success(), "{}", stderr(&again));
    let o = profq(&["summarize", "--run", "old", "--store", store_arg(&store)]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// An analysis of an INPUT derives each part on its own thread while the next part decodes:
/// with one plane per part (several parts in flight) the summary is the one of the profile
/// decoded in one part.
#[test]
fn a_summary_of_parts_derived_while_the_next_decodes_equals_the_whole_one() {
    for capture in [jax_gpu("transformer_lm"), jax_cpu("multi_device_dp")] {
        let summarize = |part_bytes: Option<&str>| {
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_profq"));
            cmd.args(["summarize", capture.to_str().unwrap()]);
            if let Some(bytes) = part_bytes {
                cmd.env("PROFQ_PART_BYTES", bytes);
            }
            let o = cmd.output().unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
            String::from_utf8(o.stdout).unwrap()
        };
        assert_eq!(summarize(None), summarize(Some("1")), "{}", capture.display());
    }
}

/// Ingest streams a profile a group of planes at a time (bounded memory on huge profiles):
/// with one plane per part the tables equal those of the profile decoded whole.
#[test]
fn a_run_streamed_plane_by_plane_equals_the_run_decoded_whole() {
    let totals = "SELECT 'events' AS t, count(*) AS n, sum(self_ns) AS a, sum(depth) AS b, count(DISTINCT name) AS c FROM events
        UNION ALL SELECT 'ops', count(*), sum(self_ns), sum(coalesce(step, 0)), count(DISTINCT region_path) FROM ops
        UNION ALL SELECT 'steps', count(*), sum(busy_ns), sum(op_count), sum(compute_ns) FROM steps
        UNION ALL SELECT 'gaps', count(*), sum(gap_ns), count(DISTINCT payload_op), 0 FROM gaps
        UNION ALL SELECT 'regions', count(*), sum(inclusive_ns), sum(exclusive_ns), sum(num_devices) FROM regions
        UNION ALL SELECT 'collectives', count(*), sum(overlapped_ns), sum(exposed_ns), 0 FROM collectives
        UNION ALL SELECT 'runs', num_devices, duration_ns, num_events_total, array_length(hosts) FROM runs
        ORDER BY t";
    // (capture, planes with events: each is a part of its own here)
    for (capture, planes_with_events) in [(jax_gpu("transformer_lm"), 2), (jax_cpu("multi_device_dp"), 1)] {
        let (whole, parts) = (temp_dir("whole"), temp_dir("parts"));
        ingest(&whole, &capture, "r");
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_profq"))
            .args(["ingest", capture.to_str().unwrap(), "--store", store_arg(&parts), "--run-id", "r"])
            .env("PROFQ_PART_BYTES", "1")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(sql(&whole, totals), sql(&parts, totals), "{}", capture.display());
        let files = std::fs::read_dir(parts.join("events/run_id=r")).unwrap().count();
        assert_eq!(files, planes_with_events, "one events file per part with events");
    }
}

/// A plane too large to be one part is decoded, derived and written a time window at a time,
/// its open events, gaps, collectives, steps and totals carried across the windows: with
/// windows of a few hundred events, the summary and every table (events by their parents,
/// rows referring to events by the events' own fields) equal those of the plane decoded whole.
/// GPU kernels inside CUDA graphs are placed by walks carried across windows; a loop body's graph
/// cut by a window before any of its kernels names the body alone is walked along another
/// computation, or leaves its leading memory copies unplaced (docs/semantics.md), so `scan_remat`
/// is not among these.
#[test]
fn a_plane_streamed_in_time_windows_equals_the_plane_decoded_whole() {
    let by_event = |columns: &str, table: &str, id: &str| {
        format!("SELECT {columns}, e.line AS e_line, e.start_ns AS e_start, e.name AS e_name FROM {table} t JOIN events e ON t.{id} = e.event_id")
    };
    let checks = [
        "SELECT e.line, e.name, e.start_ns, e.dur_ns, e.self_ns, e.depth, e.args, p.line AS p_line, p.start_ns AS p_start, p.name AS p_name \
         FROM events e LEFT JOIN events p ON e.parent_id = p.event_id"
            .to_string(),
        by_event("t.name, t.category, t.region_path, t.step, t.self_ns, t.dur_ns", "ops", "event_id"),
        by_event("t.marker_op, t.payload_op, t.payload_region_path, t.gap_start_ns, t.gap_ns, t.step", "gaps", "payload_event_id"),
        by_event("t.hlo_op, t.overlapped_ns, t.exposed_ns, t.step", "collectives", "event_id"),
        "SELECT * EXCLUDE (run_id) FROM steps".to_string(),
        "SELECT * EXCLUDE (run_id) FROM regions".to_string(),
        "SELECT * EXCLUDE (run_id) FROM event_totals".to_string(),
        "SELECT * EXCLUDE (run_id) FROM op_totals".to_string(),
        "SELECT * EXCLUDE (run_id) FROM gap_totals".to_string(),
        "SELECT * EXCLUDE (run_id) FROM line_steps".to_string(),
    ];
    for capture in [jax_cpu("transformer_lm"), jax_cpu("multi_device_dp"), jax_gpu("mlp_before"), jax_gpu("fused_kernels")] {
        let input = capture.to_str().unwrap();
        assert_eq!(profq_in_windows(&["summarize", input], None), profq_in_windows(&["summarize", input], Some("300")), "{input}");
        let (whole, windows) = (temp_dir("whole"), temp_dir("windows"));
        profq_in_windows(&["ingest", input, "--store", store_arg(&whole), "--run-id", "r"], None);
        profq_in_windows(&["ingest", input, "--store", store_arg(&windows), "--run-id", "r"], Some("300"));
        let files = std::fs::read_dir(windows.join("events/run_id=r")).unwrap().count();
        assert!(files > 4, "{input}: one events file per window, {files} files");
        for check in &checks {
            let sorted = |store: &Path| {
                let mut rows: Vec<String> = sql(store, check).iter().map(|r| r.to_string()).collect();
                rows.sort();
                rows
            };
            let (a, b) = (sorted(&whole), sorted(&windows));
            assert!(!a.is_empty() || check.contains("collectives") || check.contains("steps"), "{input}: no rows for {check}");
            assert!(a == b, "{input}: {check} differs ({} rows whole, {} windowed)", a.len(), b.len());
        }
    }
}

/// The same on a device plane with a `Steps` line, module events, collectives and setup ops
/// across the window cuts: device steps' busy, compute and op counts, collectives' overlap,
/// gaps' payloads and the line's per-step sums equal those of the plane decoded whole.
#[test]
fn a_device_plane_streamed_in_time_windows_equals_the_plane_decoded_whole() {
    use common::synth::*;
    let dir = temp_dir("device_windows");
    let path = dir.join("windows.xplane.pb");
    let mut tpu = PlaneBuilder::new(1, "/device:TPU:0");
    let steps: Vec<(String, i64)> = (0..40).map(|s| (format!("{s}"), s * 100)).collect();
    let step_events: Vec<SynthEvent> = steps.iter().map(|(name, start)| (name.as_str(), *start, 100, &[][..])).collect();
    tpu.line(1, "Steps", &step_events);
    tpu.line(2, "XLA Modules", &(0..40).map(|s| ("jit_train_step(7)", s * 100, 99, &[][..])).collect::<Vec<SynthEvent>>());
    let names = ["fusion.1", "iota.2", "all-reduce.3", "dot.4", "constant.5", "copy-start.6", "all-gather.7"];
    let mut ops: Vec<SynthEvent> = Vec::new();
    for s in 0..40i64 {
        for k in 0..9i64 {
            // Ops of 9 units every 11 (the last runs into the next step); collectives overlap the op after them.
            let name = names[((s * 9 + k) % names.len() as i64) as usize];
            let dur = if name.starts_with("all-") { 15 } else { 9 };
            ops.push((name, s * 100 + k * 11 + (s % 3), dur, &[]));
        }
    }
    ops.sort_by_key(|e| (e.1, -e.2));
    tpu.line(3, "XLA Ops", &ops);
    write_xspace(&path, vec![tpu.build()]);
    let input = path.to_str().unwrap();
    assert_eq!(profq_in_windows(&["summarize", input], None), profq_in_windows(&["summarize", input], Some("25")));
    let (whole, windows) = (dir.join("whole"), dir.join("windows"));
    profq_in_windows(&["ingest", input, "--store", store_arg(&whole), "--run-id", "r"], None);
    profq_in_windows(&["ingest", input, "--store", store_arg(&windows), "--run-id", "r"], Some("25"));
    assert!(std::fs::read_dir(windows.join("ops/run_id=r")).unwrap().count() > 4, "streamed in windows");
    for check in [
        "SELECT step, busy_ns, compute_ns, communication_ns, op_count FROM steps ORDER BY step",
        "SELECT hlo_op, start_ns, overlapped_ns FROM collectives ORDER BY start_ns",
        "SELECT marker_op, payload_op, gap_start_ns, gap_ns FROM gaps ORDER BY gap_start_ns",
        "SELECT hlo_op, hlo_module, count, self_ns FROM op_totals ORDER BY hlo_op, hlo_module",
        "SELECT * EXCLUDE (run_id) FROM line_steps ORDER BY line, step",
    ] {
        let (a, b) = (sql(&whole, check), sql(&windows, check));
        assert!(!a.is_empty(), "{check}");
        assert_eq!(a, b, "{check}");
    }
    assert!(sql(&whole, "SELECT busy_ns FROM steps WHERE busy_ns > 0").len() > 30, "device steps have activity");
}

/// A reader that stops early (`profq summarize X | head -1`) ends profq quietly, as it ends
/// `cat`: no panic message, no status of a panic.
#[test]
fn a_closed_stdout_ends_profq_quietly() {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_profq"))
        .args(["summarize", jax_cpu("transformer_lm").to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_ne!(o.status.code(), Some(101), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

/// A plane that cannot be cut into time windows (a line out of time order in the file) is
/// decoded whole, as before, with a warning that says why memory follows the plane.
#[test]
fn a_plane_out_of_time_order_is_decoded_whole_with_a_warning() {
    use common::synth::*;
    let dir = temp_dir("unordered_windows");
    let path = dir.join("unordered.xplane.pb");
    let mut cpu = PlaneBuilder::new(1, "/host:CPU");
    let events: Vec<SynthEvent> = (0..60).rev().map(|k| ("fusion.1", k * 10, 5, &[("hlo_op", V::Str("fusion.1"))][..])).collect();
    cpu.line(1, "tf_XLAEigen/1", &events);
    write_xspace(&path, vec![cpu.build()]);
    let input = path.to_str().unwrap();
    let store = dir.join("store");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_profq"))
        .args(["ingest", input, "--store", store_arg(&store), "--run-id", "r"])
        .env("PROFQ_WINDOW_EVENTS", "10")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("decoded whole, not in time windows"), "{}", stderr(&o));
    // The summary says so too (a quality warning); the rest is the plane decoded whole.
    let summary = |window| {
        let mut v: serde_json::Value = serde_json::from_str(&profq_in_windows(&["summarize", input], window)).unwrap();
        let warnings = v["trace_overview"]["quality_warnings"].take();
        (v, warnings.as_array().map_or(0, Vec::len))
    };
    let ((whole, whole_warnings), (windowed, windowed_warnings)) = (summary(None), summary(Some("10")));
    assert_eq!(whole, windowed);
    assert_eq!((whole_warnings, windowed_warnings), (0, 1));
    assert_eq!(sql(&store, "SELECT count(*) AS n FROM ops")[0]["n"], 60);
}
