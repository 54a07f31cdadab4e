//! A PyTorch job's per-rank traces are one run whose hosts are its ranks: ranks come from
//! `distributedInfo`, the files line up on one clock, and the straggler — the rank whose
//! collectives start last — is named by `straggler_ranks`, by `profq query`, by the summary
//! and by the HTML report.

mod common;
use common::kineto_job::{self, Job};
use common::*;
use serde_json::Value;

fn job_dir(tag: &str, job: &Job) -> std::path::PathBuf {
    let dir = temp_dir(tag).join("job");
    kineto_job::write(job, &dir);
    dir
}

fn run_json(args: &[&str]) -> Vec<Value> {
    let o = profq(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_str::<Value>(&stdout(&o)).unwrap().as_array().cloned().unwrap()
}

const JOB: Job = Job { ranks: 4, steps: 5, late_rank: 2, late_us: 150 };

#[test]
fn a_job_directory_is_one_run_whose_hosts_are_its_ranks() {
    let dir = job_dir("ranks-hosts", &JOB);
    let store = temp_dir("ranks-store");
    ingest(&store, &dir, "job");
    let hosts = sql(
        &store,
        "SELECT CAST(host AS VARCHAR) AS host, rank, CAST(rank_source AS VARCHAR) AS src, world_size, backend, source_file FROM hosts ORDER BY rank",
    );
    assert_eq!(hosts.len(), 4, "{hosts:?}");
    for (k, h) in hosts.iter().enumerate() {
        assert_eq!(h["host"], format!("rank{k}"));
        assert_eq!((as_i64(&h["rank"]), as_str(&h["src"]), as_i64(&h["world_size"]), as_str(&h["backend"])), (k as i64, "distributedInfo", 4, "nccl"));
        assert_eq!(h["source_file"], format!("worker{k}_step_12.1694128201545.pt"));
    }
    // One clock: every rank's first step starts at the same time, though each rank's file
    // starts at another time.
    let starts = sql(&store, "SELECT DISTINCT start_ns FROM events WHERE name = 'ProfilerStep#0'");
    assert_eq!(starts.len(), 1, "{starts:?}");
    // Kineto streams are device lines of GPU:0 in every table that has a device.
    let devices = sql(&store, "SELECT DISTINCT CAST(device AS VARCHAR) AS d FROM ops");
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0]["d"], "GPU:0");
    let idle = sql(&store, "SELECT count(*) AS n FROM steps");
    assert!(as_i64(&idle[0]["n"]) > 0);
}

#[test]
fn the_straggler_is_the_rank_whose_collectives_start_last() {
    let dir = job_dir("ranks-straggler", &JOB);
    let input = dir.to_str().unwrap();
    let ranks = run_json(&["run", "straggler_ranks", input, "--format", "json"]);
    assert_eq!(ranks.len(), 4, "{ranks:?}");
    let late = JOB.steps * JOB.late_us * 1000;
    assert_eq!(
        (as_i64(&ranks[0]["rank"]), as_i64(&ranks[0]["instances"]), as_i64(&ranks[0]["times_last"]), as_i64(&ranks[0]["lateness_ns"])),
        (2, JOB.steps, JOB.steps, late)
    );
    for r in &ranks[1..] {
        assert_eq!((as_i64(&r["times_last"]), as_i64(&r["lateness_ns"])), (0, 0), "{r}");
    }
    let skew = run_json(&["run", "collective_skew", input, "--format", "json"]);
    assert_eq!(skew.len(), (JOB.ranks * JOB.steps) as usize);
    for row in &skew {
        assert_eq!((as_str(&row["grp"]), as_str(&row["collective"]), as_i64(&row["last_rank"])), ("0", "allreduce", 2));
        assert_eq!(as_i64(&row["skew_ns"]), JOB.late_us * 1000);
        let waited = if as_i64(&row["rank"]) == 2 { 0 } else { JOB.late_us * 1000 };
        assert_eq!(as_i64(&row["wait_ns"]), waited, "{row}");
    }

    // The question, the summary and the report name it.
    let o = profq(&["query", "which rank is the straggler?", input]);
    assert!(o.status.success(), "{}", stderr(&o));
    let answer: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(answer["query_type"], "rank_stragglers", "{answer}");
    assert_eq!(as_i64(&answer["results"][0]["rank"]), 2, "{answer}");
    let summary = summarize(&dir, &[]);
    let stragglers = summary["profq_straggler_ranks"].as_array().unwrap();
    assert_eq!((as_i64(&stragglers[0]["rank"]), as_i64(&stragglers[0]["times_last"])), (2, JOB.steps));
    let o = profq(&["report", input, "--format", "html"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = stdout(&o);
    assert!(html.contains("Straggler ranks") && html.contains("rank2"), "the report names the straggler");
}

#[test]
fn a_rank_of_its_own_has_no_instances() {
    let dir = job_dir("ranks-one", &Job { ranks: 1, steps: 3, late_rank: 0, late_us: 0 });
    assert!(run_json(&["run", "straggler_ranks", dir.to_str().unwrap(), "--format", "json"]).is_empty());
}

/// A multi-host XPlane session: hosts are ranks in file order, and its collectives are
/// matched across hosts by module, op and order. The hosts here are copies of one capture,
/// so every collective arrives everywhere at once: no rank is last, none is late.
#[test]
fn xplane_hosts_are_ranks_and_their_collectives_match() {
    let src = xplane_of(&jax_cpu("multi_device_dp"));
    let session = temp_dir("ranks-xplane").join("run/plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&session).unwrap();
    for host in ["worker-0", "worker-1", "worker-2"] {
        std::fs::copy(&src, session.join(format!("{host}.xplane.pb"))).unwrap();
    }
    let input = session.parent().unwrap().parent().unwrap().parent().unwrap().to_str().unwrap().to_string();
    let ranks = run_json(&["run", "straggler_ranks", &input, "--format", "json"]);
    let got: Vec<(i64, &str, i64, i64)> =
        ranks.iter().map(|r| (as_i64(&r["rank"]), as_str(&r["host"]), as_i64(&r["times_last"]), as_i64(&r["lateness_ns"]))).collect();
    assert_eq!(got, [(0, "worker-0", 0, 0), (1, "worker-1", 0, 0), (2, "worker-2", 0, 0)]);
    assert!(as_i64(&ranks[0]["instances"]) > 0 && ranks.iter().all(|r| r["instances"] == ranks[0]["instances"]), "{ranks:?}");
    let hosts = run_json(&["run", "per_host", &input, "--format", "json"]);
    assert_eq!(hosts.iter().map(|h| as_i64(&h["rank"])).collect::<Vec<_>>(), [0, 1, 2]);
}
