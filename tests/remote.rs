//! Profiles and stores in object storage, against real servers of the protocols: moto's S3
//! server and fake-gcs-server (tests/common/servers.rs). Remote inputs must mean what local
//! paths mean, a bucket store must keep a local store's promises (a run is visible whole or
//! not at all; re-ingests are no-ops; concurrent writers both land; a killed writer leaves
//! nothing visible and is cleaned up), and every fault must end in one line and a non-zero
//! exit with nothing half-written.

mod common;

use common::servers::{flaky_proxy, Emulator, Gcs, S3};
use common::{jax_cpu, shared, stderr, stdout, temp_dir};
use serde_json::Value;
use std::path::Path;

/// A summary with the one field that names where it came from removed.
fn summary_body(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    v.as_object_mut().expect("a summary is an object").remove("source_path");
    v
}

fn local_summary(input: &Path) -> Value {
    let o = common::profq(&["summarize", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    summary_body(&stdout(&o))
}

/// The files left in a cache that are not whole copies (`.partial` downloads).
fn partial_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().contains(".partial") {
                out.push(p.display().to_string());
            }
        }
    }
    out
}

/// One line on stderr, a non-zero exit.
fn assert_one_line_failure(o: &std::process::Output, says: &str) {
    assert!(!o.status.success(), "expected a failure, got: {}", stdout(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {err}");
    assert!(err.contains(says), "expected {says:?} in: {err}");
    assert!(!err.contains("test") || !err.contains("AWS_SECRET"), "credentials leaked: {err}");
}

fn inputs_mean_what_local_paths_mean(emulator: &dyn Emulator) {
    let capture = jax_cpu("mlp_train");
    emulator.mkbucket("profiles");
    emulator.upload("profiles", "team/run-a", &capture);
    let cache = temp_dir("remote-cache");
    let scheme = emulator.scheme();
    let session = std::fs::read_dir(capture.join("plugins/profile")).unwrap().next().unwrap().unwrap().file_name().into_string().unwrap();
    let want = local_summary(&capture);
    for url in [
        format!("{scheme}://profiles/team/run-a"),
        format!("{scheme}://profiles/team/run-a/plugins/profile/{session}/"),
        format!("{scheme}://profiles/team/run-a/plugins/profile/{session}/vm.xplane.pb"),
    ] {
        let o = emulator.profq(&["summarize", &url], &cache, &[]);
        assert!(o.status.success(), "{url}: {}", stderr(&o));
        assert!(summary_body(&stdout(&o)) == want, "{url} summarised unlike the local copy");
    }
    // Every command that takes an INPUT reads the URL as it reads the directory.
    let url = format!("{scheme}://profiles/team/run-a");
    let local = capture.to_str().unwrap();
    for (remote_args, local_args) in [
        (vec!["run", "hot_ops", url.as_str(), "--format", "csv"], vec!["run", "hot_ops", local, "--format", "csv"]),
        (vec!["query", "top ops", url.as_str()], vec!["query", "top ops", local]),
        (vec!["report", url.as_str()], vec!["report", local]),
    ] {
        let r = emulator.profq(&remote_args, &cache, &[]);
        assert!(r.status.success(), "{remote_args:?}: {}", stderr(&r));
        let l = common::profq(&local_args);
        assert_eq!(stdout(&r).replace(url.as_str(), local), stdout(&l), "{remote_args:?}");
    }
    let compared = emulator.profq(&["compare", "--before", &url, "--after", local], &cache, &[]);
    assert!(compared.status.success(), "{}", stderr(&compared));
    let compared: Value = serde_json::from_str(&stdout(&compared)).unwrap();
    assert_eq!(compared["before_source"], url.as_str());
    assert!(compared.to_string().contains("same trace_sha256"), "the URL's trace is the local copy's");
    // The session's profile files are cached whole, with their log dir's path.
    let copy = cache.join(format!("objects/{scheme}/profiles/team/run-a/plugins/profile/{session}/vm.xplane.pb"));
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(capture.join(format!("plugins/profile/{session}/vm.xplane.pb"))).unwrap());
    assert!(partial_files(&cache).is_empty());

    // Ingested from the bucket: the run is named after its log dir and records the URL.
    let store = temp_dir("remote-input-store");
    let url = format!("{scheme}://profiles/team/run-a");
    let o = emulator.profq(&["ingest", &url, "--store", store.to_str().unwrap()], &cache, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = common::sql(&store, "SELECT run_id, source_path FROM runs");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["run_id"], "run-a");
    assert_eq!(rows[0]["source_path"], url.as_str());
}

#[test]
fn s3_inputs_mean_what_local_paths_mean() {
    let Some(s3) = S3::start() else { return };
    inputs_mean_what_local_paths_mean(&s3);
}

#[test]
fn gcs_inputs_mean_what_local_paths_mean() {
    let Some(gcs) = Gcs::start() else { return };
    inputs_mean_what_local_paths_mean(&gcs);
}

#[test]
fn a_cached_input_is_not_fetched_again_and_a_changed_one_is() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("pbucket");
    let xplane = common::xplane_of(&jax_cpu("mlp_train"));
    s3.upload("pbucket", "one", &xplane);
    let cache = temp_dir("remote-cache");
    let url = "s3://pbucket/one/vm.xplane.pb";
    let first = s3.profq(&["summarize", url], &cache, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    // Through a proxy that cuts every response past 64 KiB (listings pass, the 420 KiB
    // XPlane would not): only the cached copy can answer.
    let cutting = flaky_proxy(s3.server.port, "down", 65_536, 0);
    let mut cmd = s3.command(&["summarize", url], &cache, &[("PROFQ_REMOTE_RETRIES", "0")]);
    cmd.envs(s3.env_via(cutting.port));
    let again = cmd.output().unwrap();
    assert!(again.status.success(), "the cached copy was not used: {}", stderr(&again));
    assert_eq!(stdout(&again), stdout(&first));
    // A changed object is fetched again.
    let other = common::xplane_of(&jax_cpu("mlp_after"));
    let dir = temp_dir("renamed");
    std::fs::copy(&other, dir.join("vm.xplane.pb")).unwrap();
    s3.upload("pbucket", "one", &dir.join("vm.xplane.pb"));
    let changed = s3.profq(&["summarize", url], &cache, &[]);
    assert!(changed.status.success(), "{}", stderr(&changed));
    assert!(summary_body(&stdout(&changed)) == local_summary(&other), "the changed object was not fetched again");
}

fn store_url(scheme: &str) -> String {
    format!("{scheme}://store/team/profq")
}

#[test]
fn an_s3_store_keeps_a_local_stores_promises() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("store");
    let cache = temp_dir("remote-cache");
    let url = store_url("s3");
    let local = temp_dir("local-store");
    for (name, id) in [("mlp_train", "a"), ("mlp_after", "b")] {
        let input = jax_cpu(name);
        let o = s3.profq(&["ingest", input.to_str().unwrap(), "--store", &url, "--run-id", id], &cache, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        common::ingest(&local, &input, id);
    }
    // Re-ingesting the same trace is a no-op.
    let again = s3.profq(&["ingest", jax_cpu("mlp_train").to_str().unwrap(), "--store", &url], &cache, &[]);
    assert!(again.status.success() && stdout(&again).contains("already"), "{}{}", stdout(&again), stderr(&again));
    // Every analysis reads the bucket as it reads the directory.
    let same = |args: &[&str]| {
        let mut remote_args = args.to_vec();
        remote_args.extend(["--store", &url]);
        let r = s3.profq(&remote_args, &cache, &[]);
        assert!(r.status.success(), "{args:?}: {}", stderr(&r));
        let mut local_args = args.to_vec();
        local_args.extend(["--store", local.to_str().unwrap()]);
        let l = common::profq(&local_args);
        assert!(l.status.success(), "{args:?}: {}", stderr(&l));
        (stdout(&r), stdout(&l))
    };
    let (r, l) = same(&["sql", "SELECT run_id, trace_sha256, count(*) AS n FROM runs GROUP BY run_id, trace_sha256 ORDER BY run_id", "--format", "csv"]);
    assert_eq!(r, l);
    let (r, l) = same(&["sql", "SELECT run_id, count(*) AS events FROM events GROUP BY run_id ORDER BY run_id", "--format", "csv"]);
    assert_eq!(r, l);
    let (r, l) = same(&["run", "hot_ops", "--run", "a", "--format", "csv"]);
    assert_eq!(r, l);
    let (r, l) = same(&["summarize", "--run", "b"]);
    assert!(summary_body(&r) == summary_body(&l), "summarize --run differs between the bucket and the directory");
    let (r, l) = same(&["compare", "--before", "a", "--after", "b"]);
    assert_eq!(r, l);
    let (r, l) = same(&["run", "trends", "--format", "csv"]);
    assert_eq!(r, l);
    // PROFQ_STORE names a bucket store as --store does.
    let by_env = s3.profq(&["sql", "SELECT count(*) AS runs FROM runs", "--format", "csv"], &cache, &[("PROFQ_STORE", &url)]);
    assert_eq!(stdout(&by_env), "runs\n2\n", "{}", stderr(&by_env));
    // Nothing is left beside the runs: no staging objects, no lock.
    let keys = s3.keys("store", "team/profq/");
    assert!(keys.iter().all(|k| !k.contains(".staging") && !k.ends_with(".lock")), "{keys:?}");
    // A named run that exists is refused; --force replaces it.
    let clash = s3.profq(&["ingest", jax_cpu("mlp_before").to_str().unwrap(), "--store", &url, "--run-id", "a"], &cache, &[]);
    assert_eq!(clash.status.code(), Some(2), "{}", stderr(&clash));
    let forced = s3.profq(&["ingest", jax_cpu("mlp_before").to_str().unwrap(), "--store", &url, "--run-id", "a", "--force"], &cache, &[]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    let ids = s3.profq(&["sql", "SELECT run_id, source_path FROM runs ORDER BY run_id", "--store", &url, "--format", "csv"], &cache, &[]);
    assert!(stdout(&ids).contains("mlp_before") && !stdout(&ids).contains("mlp_train"), "{}", stdout(&ids));
}

#[test]
fn concurrent_writers_both_land_in_one_bucket() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("store");
    let url = store_url("s3");
    let started: Vec<_> = ["mlp_train", "scan_remat", "transformer_lm"]
        .iter()
        .map(|name| {
            let cache = temp_dir("remote-cache");
            let child =
                s3.command(&["ingest", jax_cpu(name).to_str().unwrap(), "--store", &url], &cache, &[]).stderr(std::process::Stdio::piped()).spawn().unwrap();
            (name, child)
        })
        .collect();
    for (name, child) in started {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
    }
    let cache = temp_dir("remote-cache");
    let o = s3.profq(&["sql", "SELECT run_id FROM runs ORDER BY run_id", "--store", &url, "--format", "csv"], &cache, &[]);
    assert_eq!(stdout(&o), "run_id\nmlp_train\nscan_remat\ntransformer_lm\n", "{}", stderr(&o));
}

#[test]
fn a_killed_ingest_leaves_no_visible_run_and_is_cleaned_up() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("store");
    let url = store_url("s3");
    // Through a slow proxy the upload takes seconds: kill the writer while it holds the lock.
    let slow = flaky_proxy(s3.server.port, "up", 0, 250);
    let cache = temp_dir("remote-cache");
    let mut cmd = s3.command(&["ingest", jax_cpu("transformer_lm").to_str().unwrap(), "--store", &url, "--run-id", "killed"], &cache, &[]);
    cmd.envs(s3.env_via(slow.port)).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let keys = s3.keys("store", "team/profq/");
        if keys.iter().any(|k| k.contains(".staging/")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(), "the ingest never started uploading: {keys:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(slow);
    let visible = |cache: &Path| {
        let o = s3.profq(&["sql", "SELECT run_id FROM runs ORDER BY run_id", "--store", &url, "--format", "csv"], cache, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert!(!visible(&cache).contains("killed"), "a killed ingest's run is visible");
    // The next writer takes over the dead writer's lock and removes what it left.
    let o = s3.profq(&["ingest", jax_cpu("mlp_train").to_str().unwrap(), "--store", &url, "--run-id", "next"], &cache, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(visible(&cache), "run_id\nnext\n");
    let keys = s3.keys("store", "team/profq/");
    assert!(keys.iter().all(|k| !k.contains(".staging") && !k.contains("run_id=killed") && !k.ends_with(".lock")), "{keys:?}");
}

#[test]
fn a_gcs_store_is_read_as_a_local_one() {
    let Some(gcs) = Gcs::start() else { return };
    gcs.mkbucket("store");
    let local = temp_dir("local-store");
    common::ingest(&local, &jax_cpu("mlp_train"), "a");
    common::ingest(&local, &jax_cpu("mlp_after"), "b");
    // fake-gcs-server takes JSON-API uploads only: the store's files are copied in as they are.
    for entry in std::fs::read_dir(&local).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if !name.starts_with('.') {
            gcs.upload("store", &format!("team/profq/{name}"), &entry.path());
        }
    }
    let cache = temp_dir("remote-cache");
    let url = store_url("gs");
    for args in [
        vec!["sql", "SELECT run_id, count(*) AS ops FROM ops GROUP BY run_id ORDER BY run_id", "--format", "csv"],
        vec!["run", "hot_ops", "--run", "b", "--format", "csv"],
        vec!["summarize", "--run", "a"],
    ] {
        let mut r = args.clone();
        r.extend(["--store", &url]);
        let remote = gcs.profq(&r, &cache, &[]);
        assert!(remote.status.success(), "{args:?}: {}", stderr(&remote));
        let mut l = args.clone();
        l.extend(["--store", local.to_str().unwrap()]);
        let here = common::profq(&l);
        if args[0] == "summarize" {
            assert!(summary_body(&stdout(&remote)) == summary_body(&stdout(&here)), "summarize --run differs between the bucket and the directory");
        } else {
            assert_eq!(stdout(&remote), stdout(&here), "{args:?}");
        }
    }
    let missing = gcs.profq(&["summarize", "--run", "zzz", "--store", &url], &cache, &[]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
}

#[test]
fn bad_remote_inputs_fail_in_one_line() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("pbucket");
    s3.upload("pbucket", "notes", &jax_cpu("mlp_train").join("capture.json"));
    let cache = temp_dir("remote-cache");
    let store = temp_dir("store");
    let ingest = |url: &str| s3.profq(&["ingest", url, "--store", store.to_str().unwrap()], &cache, &[("PROFQ_REMOTE_RETRIES", "0")]);
    assert_one_line_failure(&ingest("s3://no-such-bucket/x"), "s3://no-such-bucket/x");
    assert_one_line_failure(&ingest("s3://pbucket/no/such/prefix"), "no such object or prefix");
    assert_one_line_failure(&ingest("s3://pbucket/notes"), "no profile found");
    assert_one_line_failure(&ingest("az://p/x"), "unsupported scheme");
    for o in [ingest("s3://no-such-bucket/x"), ingest("s3://pbucket/notes")] {
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    }
    assert!(!store.join("runs").exists(), "a failed ingest wrote into the store");
    let bad_store = s3.profq(&["sql", "SELECT 1", "--store", "s3://no-such-bucket/s"], &cache, &[("PROFQ_REMOTE_RETRIES", "0")]);
    assert_one_line_failure(&bad_store, "s3://no-such-bucket");
}

#[test]
fn access_denied_fails_in_one_line_without_the_keys() {
    let Some(s3) = S3::start_with(true) else { return };
    let cache = temp_dir("remote-cache");
    let secret = [("AWS_SECRET_ACCESS_KEY", "do-not-print-me"), ("PROFQ_REMOTE_RETRIES", "0")];
    let read = s3.profq(&["summarize", "s3://pbucket/run"], &cache, &secret);
    assert_one_line_failure(&read, "s3://pbucket/run");
    let write = s3.profq(&["ingest", jax_cpu("mlp_train").to_str().unwrap(), "--store", "s3://pbucket/store"], &cache, &secret);
    assert_one_line_failure(&write, "s3://pbucket/store");
    for o in [&read, &write] {
        assert!(!stderr(o).contains("do-not-print-me"), "{}", stderr(o));
        assert!(stderr(o).contains("403") || stderr(o).to_lowercase().contains("denied") || stderr(o).contains("InvalidAccessKeyId"), "{}", stderr(o));
    }
}

#[test]
fn a_dropped_download_leaves_no_partial_copy() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("pbucket");
    s3.upload("pbucket", "run", &jax_cpu("mlp_before"));
    let cutting = flaky_proxy(s3.server.port, "down", 300_000, 0);
    let cache = temp_dir("remote-cache");
    let store = temp_dir("store");
    let mut cmd = s3.command(&["ingest", "s3://pbucket/run", "--store", store.to_str().unwrap()], &cache, &[("PROFQ_REMOTE_RETRIES", "1")]);
    cmd.envs(s3.env_via(cutting.port));
    let o = cmd.output().unwrap();
    assert_one_line_failure(&o, "s3://pbucket/run");
    assert!(partial_files(&cache).is_empty(), "{:?}", partial_files(&cache));
    assert!(!store.join("runs").exists());
    // Straight to the server, the same ingest then works.
    let ok = s3.profq(&["ingest", "s3://pbucket/run", "--store", store.to_str().unwrap()], &cache, &[]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn a_dropped_upload_leaves_no_visible_run() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("store");
    let url = store_url("s3");
    let cutting = flaky_proxy(s3.server.port, "up", 20_000, 0);
    let cache = temp_dir("remote-cache");
    let mut cmd =
        s3.command(&["ingest", jax_cpu("transformer_lm").to_str().unwrap(), "--store", &url, "--run-id", "cut"], &cache, &[("PROFQ_REMOTE_RETRIES", "1")]);
    cmd.envs(s3.env_via(cutting.port));
    let o = cmd.output().unwrap();
    assert!(!o.status.success(), "the upload went through a proxy that cuts it: {}", stdout(&o));
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let runs = s3.keys("store", "team/profq/runs/");
    assert!(runs.is_empty(), "{runs:?}");
    let ok = s3.profq(&["ingest", jax_cpu("transformer_lm").to_str().unwrap(), "--store", &url, "--run-id", "cut"], &cache, &[]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let keys = s3.keys("store", "team/profq/");
    assert!(keys.iter().all(|k| !k.contains(".staging") && !k.ends_with(".lock")), "{keys:?}");
}

#[test]
fn the_cache_keeps_to_its_budget_evicting_the_least_recently_used() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("pbucket");
    let names = ["mlp_train", "mlp_after", "host_bound_gappy"];
    for name in names {
        s3.upload("pbucket", name, &common::xplane_of(&jax_cpu(name)));
    }
    let cache = temp_dir("remote-cache");
    let size = |name: &str| std::fs::metadata(common::xplane_of(&jax_cpu(name))).unwrap().len();
    // Room for the two most recent copies only.
    let budget = (size("mlp_after") + size("host_bound_gappy") + 1).to_string();
    for name in names {
        let o = s3.profq(&["summarize", &format!("s3://pbucket/{name}/vm.xplane.pb")], &cache, &[("PROFQ_CACHE_BYTES", &budget)]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
    }
    let cached = |name: &str| cache.join(format!("objects/s3/pbucket/{name}/vm.xplane.pb")).exists();
    assert!(!cached("mlp_train"), "the least recently used copy stays past the budget");
    assert!(cached("mlp_after") && cached("host_bound_gappy"));
    // A copy larger than the whole budget is still used for its own INPUT.
    let o = s3.profq(&["summarize", "s3://pbucket/mlp_train/vm.xplane.pb"], &cache, &[("PROFQ_CACHE_BYTES", "1")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(cached("mlp_train") && !cached("mlp_after") && !cached("host_bound_gappy"));
}

/// An Nsight Systems export in a bucket is read as the local file is, named as an object or
/// by its prefix.
#[test]
fn an_nsys_export_in_a_bucket_is_read_as_the_local_file() {
    let Some(export) = shared("public/nsys-ai/mock/mock.sqlite") else { return };
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("profiles");
    s3.upload("profiles", "nsys", export.parent().unwrap());
    let cache = temp_dir("remote-nsys-cache");
    // The object itself, and the prefix that holds it.
    for url in ["s3://profiles/nsys/mock.sqlite", "s3://profiles/nsys"] {
        let o = s3.profq(&["summarize", url], &cache, &[]);
        assert!(o.status.success(), "{url}: {}", stderr(&o));
        assert!(summary_body(&stdout(&o)) == local_summary(&export), "{url}: the bucket's export summarised unlike the local file");
    }
}
