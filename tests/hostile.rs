//! Hostile inputs: truncations at many offsets, flipped bytes, absurd lengths, deep nesting,
//! odd times. profq must never panic; errors are one line and leave the store unchanged.

mod common;
use common::synth::*;
use common::*;
use profq::decode;
use std::path::Path;

/// Decodes a file in-process; Ok or Err, never a panic.
fn decode_file(path: &Path) -> Result<usize, String> {
    let resolved = decode::resolve(path).map_err(|e| e.to_string())?;
    let loaded = decode::load(&resolved).map_err(|e| e.to_string())?;
    Ok(loaded.capture.num_events())
}

#[test]
fn truncated_and_flipped_xplanes_never_panic() {
    let src = std::fs::read(xplane_of(&jax_cpu("host_bound_gappy"))).unwrap();
    let dir = temp_dir("trunc");
    let path = dir.join("t.xplane.pb");
    let step = (src.len() / 200).max(1);
    let mut errors = 0;
    for cut in (1..src.len()).step_by(step) {
        std::fs::write(&path, &src[..cut]).unwrap();
        if let Err(e) = decode_file(&path) {
            assert!(e.contains("t.xplane.pb"), "{e}");
            errors += 1;
        }
    }
    assert!(errors > 150, "most truncations must be detected ({errors})");
    // Flipped bytes: decoded or rejected, never a panic.
    let mut seed = 0x1234_5678u64;
    for _ in 0..100 {
        let mut bytes = src.clone();
        for _ in 0..8 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = (seed >> 33) as usize % bytes.len();
            bytes[k] ^= (seed >> 20) as u8 | 1;
        }
        std::fs::write(&path, &bytes).unwrap();
        let _ = decode_file(&path);
    }
}

#[test]
fn truncated_and_garbled_json_never_panics() {
    let bytes = std::fs::read(find_file(&jax_cpu("host_bound_gappy"), "perfetto_trace.json.gz").unwrap()).unwrap();
    let mut text = String::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut text).unwrap();
    let dir = temp_dir("json");
    let path = dir.join("t.json");
    let step = (text.len() / 100).max(1);
    for cut in (1..text.len()).step_by(step) {
        std::fs::write(&path, &text.as_bytes()[..cut]).unwrap();
        let r = decode_file(&path);
        assert!(r.is_err(), "a JSON cut at {cut} must be an error");
    }
    // Truncated gzip.
    let gz = dir.join("t.json.gz");
    std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
    assert!(decode_file(&gz).is_err());
}

#[test]
fn absurd_nesting_lengths_and_times() {
    let dir = temp_dir("absurd");
    // 100k-deep nesting: a clean error, not a stack overflow.
    let deep = dir.join("deep.json");
    std::fs::write(&deep, format!("{{\"traceEvents\": [{{\"ph\": \"X\", \"args\": {{\"a\": {}1{}}}}}]}}", "[".repeat(100_000), "]".repeat(100_000))).unwrap();
    assert!(decode_file(&deep).unwrap_err().contains("deep.json"));
    // Deep nesting where profq skips values is walked without recursion: no error needed, no crash.
    std::fs::write(&deep, format!("{{\"traceEvents\": [{{\"ignored\": {}1{}}}]}}", "[".repeat(100_000), "]".repeat(100_000))).unwrap();
    let _ = decode_file(&deep);
    // A length prefix of 2^62 bytes: an error, no allocation.
    let huge = dir.join("huge.xplane.pb");
    std::fs::write(&huge, [0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x00]).unwrap();
    assert!(decode_file(&huge).unwrap_err().contains("length prefix"));
    // Negative, huge and non-numeric times; unsorted events; dangling metadata ids; non-UTF-8 names.
    let odd = dir.join("odd.json");
    std::fs::write(
        &odd,
        r#"{"traceEvents":[
            {"ph":"X","pid":1,"tid":1,"name":"late","ts":500,"dur":10},
            {"ph":"X","pid":1,"tid":1,"name":"early","ts":-100,"dur":10},
            {"ph":"X","pid":1,"tid":1,"name":"huge","ts":1e300,"dur":1},
            {"ph":"X","pid":1,"tid":1,"name":"nan","ts":"abc","dur":1},
            {"ph":"E","pid":1,"tid":1,"ts":5},
            {"ph":"B","pid":1,"tid":2,"name":"open","ts":5}
        ]}"#,
    )
    .unwrap();
    let store = temp_dir("odd-store");
    ingest(&store, &odd, "odd");
    let rows = sql(&store, "SELECT name, start_ns FROM events ORDER BY start_ns");
    let names: Vec<&str> = rows.iter().map(|r| as_str(&r["name"])).collect();
    assert_eq!(names, ["early", "late"]);
    let w = sql(&store, "SELECT quality_warnings FROM runs");
    let w = w[0]["quality_warnings"].to_string();
    assert!(w.contains("no usable time") && w.contains("no matching B") && w.contains("no matching E"), "{w}");

    let mut plane = PlaneBuilder::new(1, "/host:CPU");
    plane.line(1, "main", &[("b", 50, 10, &[]), ("a", 0, 100, &[("dangling", V::U(1))])]);
    let mut built = plane.build();
    // An event whose metadata id exists nowhere, and a ref stat to a missing stat id.
    built.lines[0].events.push(XEvent { metadata_id: 999, offset_ps: Some(-5_000_000), duration_ps: 1_000_000, ..Default::default() });
    built.lines[0].events[0].stats.push(XStat { metadata_id: 77, ref_value: Some(4242), ..Default::default() });
    built.event_metadata.get_mut(&1).unwrap().name = String::from_utf8_lossy(b"bad \xff name").into_owned();
    let path = dir.join("odd.xplane.pb");
    write_xspace(&path, vec![built]);
    let store2 = temp_dir("odd-xplane");
    ingest(&store2, &path, "x");
    let ev = sql(&store2, "SELECT name, depth, parent_id FROM events ORDER BY start_ns");
    assert_eq!(ev.len(), 3);
    assert_eq!(ev[1]["depth"], 0, "{ev:?}");
    assert_eq!(ev[2]["depth"], 1, "sorted, then nested: {ev:?}");
}

#[test]
fn concurrent_ingests_into_one_store() {
    let store = temp_dir("concurrent");
    let a = xplane_of(&jax_cpu("host_bound_gappy"));
    let b = xplane_of(&jax_cpu("mlp_after"));
    let spawn = |p: &Path, id: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_profq"));
        cmd.args(["ingest", p.to_str().unwrap(), "--store", store.to_str().unwrap()]);
        if let Some(id) = id {
            cmd.args(["--run-id", id]);
        }
        cmd.spawn().unwrap()
    };
    // Different runs, and the same trace twice, all at once.
    let children = vec![spawn(&a, Some("one")), spawn(&b, Some("two")), spawn(&a, None), spawn(&b, None)];
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let runs = sql(&store, "SELECT run_id, trace_sha256 FROM runs ORDER BY run_id");
    assert_eq!(runs.len(), 2, "the same trace is stored once: {runs:?}");
    let dups = sql(&store, "SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id");
    let na = sql(&store, "SELECT num_complete_events AS n FROM runs ORDER BY run_id");
    for (d, r) in dups.iter().zip(&na) {
        assert_eq!(d["n"], r["n"], "no duplicated events: {dups:?}");
    }
}

#[test]
fn a_killed_ingest_leaves_no_visible_run() {
    let store = temp_dir("sigkill");
    let input = xplane_of(&jax_cpu("mlp_before"));
    for delay_ms in [5u64, 20, 60, 150] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_profq"))
            .args(["ingest", input.to_str().unwrap(), "--store", store.to_str().unwrap(), "--run-id", "victim", "--force"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever was left: every visible run is complete (its events match its runs row).
        let runs = sql(&store, "SELECT run_id, num_complete_events AS n FROM runs");
        for r in &runs {
            let ev = sql(&store, &format!("SELECT count(*) AS n FROM events WHERE run_id = '{}'", as_str(&r["run_id"])));
            assert_eq!(ev[0]["n"], r["n"], "partial run visible after kill at {delay_ms} ms");
        }
    }
    // The next ingest cleans up and succeeds.
    ingest(&store, &xplane_of(&jax_cpu("host_bound_gappy")), "next");
    let staging = store.join(".staging");
    assert!(!staging.exists() || std::fs::read_dir(staging).unwrap().next().is_none());
}

#[test]
fn corrupt_hlo_protos_are_warnings_not_failures() {
    let dir = temp_dir("badhlo");
    let mut meta = PlaneBuilder::new(1, "/host:metadata");
    meta.line(1, "unused", &[]);
    let mut metadata = meta.build();
    metadata.lines.clear();
    let stat_id = 1;
    metadata.stat_metadata.insert(stat_id, XStatMetadata { id: stat_id, name: "Hlo Proto".into(), description: String::new() });
    for (id, bytes) in [(1i64, vec![0xff, 0xff, 0xff]), (2, vec![0x0a, 0x80, 0x80, 0x80, 0x80, 0x10])] {
        metadata.event_metadata.insert(
            id,
            XEventMetadata {
                id,
                name: format!("jit_bad({id})"),
                stats: vec![XStat { metadata_id: stat_id, bytes_value: Some(bytes), ..Default::default() }],
                ..Default::default()
            },
        );
    }
    let mut cpu = PlaneBuilder::new(2, "/host:CPU");
    cpu.line(1, "tf_XLAEigen/1", &[("fusion.1", 0, 10, &[("hlo_op", V::Str("fusion.1")), ("hlo_module", V::Str("jit_bad")), ("program_id", V::I(1))])]);
    let path = dir.join("badhlo.xplane.pb");
    write_xspace(&path, vec![metadata, cpu.build()]);
    let store = temp_dir("badhlo-store");
    ingest(&store, &path, "b");
    let w = sql(&store, "SELECT quality_warnings FROM runs")[0]["quality_warnings"].to_string();
    assert!(w.contains("jit_bad(1)") && w.contains("undecodable HloProto"), "{w}");
    let ops = sql(&store, "SELECT hlo_op, opcode FROM ops");
    assert_eq!(ops.len(), 1);
    assert!(ops[0]["opcode"].is_null());
}

#[test]
fn fuzz_regressions_decode_without_panicking() {
    for (target, ext) in [("xplane", "xplane.pb"), ("trace_json", "json")] {
        let dir = repo().join("tests/data/fuzz_regressions").join(target);
        let work = temp_dir("fuzz-regression");
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = work.join(format!("{}.{ext}", entry.file_name().to_string_lossy()));
            std::fs::copy(entry.path(), &path).unwrap();
            let _ = decode_file(&path);
        }
    }
}
