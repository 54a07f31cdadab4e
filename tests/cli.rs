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
