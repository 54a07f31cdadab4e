//! profq's SQL on Apache Ballista (feature `ballista`) gives the rows the local engine gives:
//! every named query and a set of ad-hoc statements over a small store of committed
//! captures, on a cluster built in this process from the pieces the real roles use, and on
//! real `profq ballista` processes over an `s3://` store on moto. Faults: an executor
//! killed mid-query never yields wrong or partial rows, and an unreachable scheduler is
//! one line naming its address.
#![cfg(feature = "ballista")]

mod common;
use common::servers::{free_port, Emulator, Server, S3};
use common::*;
use profq::engine::queries::{ParamKind, QUERIES};
use profq::engine::{Engine, Placement, Spread};
use profq::store::Location;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs of the test store: JAX CPU and GPU captures and a PyTorch Kineto trace.
fn store_inputs() -> Vec<(&'static str, PathBuf)> {
    vec![
        ("r1", jax_cpu("mlp_before")),
        ("r2", jax_cpu("mlp_after")),
        ("r3", jax_gpu("transformer_lm")),
        ("r4", repo().join("tests/data/kineto/torch_mlp_h100.pt.trace.json.gz")),
    ]
}

fn local_store() -> PathBuf {
    let store = temp_dir("ballista-store");
    for (id, input) in store_inputs() {
        ingest(&store, &input, id);
    }
    store
}

/// Every named query, its parameters filled in for the test store's runs.
fn named_statements() -> Vec<(String, String)> {
    QUERIES
        .iter()
        .map(|q| {
            let values: BTreeMap<String, String> = q
                .params()
                .into_iter()
                .filter(|p| p.default.is_none() || p.name.ends_with("_ns"))
                .map(|p| {
                    let value = match (p.kind, p.name.as_str()) {
                        (ParamKind::Text, "before_run") => "r1",
                        (ParamKind::Text, "after_run") => "r2",
                        (ParamKind::Text, "op") => "dot",
                        (ParamKind::Text, _) => "r3",
                        (_, "to_ns") => "1000000000000000",
                        (_, "from_ns") => "0",
                        (_, "step") => "3",
                        _ => "10",
                    };
                    (p.name, value.to_string())
                })
                .collect();
            (q.name.to_string(), q.bind(&values).unwrap())
        })
        .collect()
}

/// Ad-hoc statements of the shapes people write over many runs: grouping by run and by
/// name, joins, windows, profq's functions, nested functions, a pruned run, every table.
fn ad_hoc_statements() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = [
        ("ops_by_run", "SELECT run_id, count(*) AS n, sum(self_ns) AS self_ns, max(dur_ns) AS longest FROM ops GROUP BY run_id ORDER BY run_id"),
        ("events_by_name", "SELECT CAST(name AS VARCHAR) AS name, count(*) AS n, sum(dur_ns) AS dur FROM events GROUP BY 1 ORDER BY n DESC, name LIMIT 25"),
        (
            "steps_join_runs",
            "SELECT r.run_id, r.source_format, count(s.step) AS steps, avg(s.dur_ns) AS mean_ns FROM runs r JOIN steps s ON s.run_id = r.run_id \
             GROUP BY r.run_id, r.source_format ORDER BY r.run_id",
        ),
        (
            "top_op_per_run",
            "SELECT run_id, name, self_ns FROM (SELECT run_id, CAST(name AS VARCHAR) AS name, sum(self_ns) AS self_ns, \
               row_number() OVER (PARTITION BY run_id ORDER BY sum(self_ns) DESC, CAST(name AS VARCHAR)) AS rk FROM ops GROUP BY run_id, name) \
             WHERE rk <= 3 ORDER BY run_id, rk",
        ),
        (
            "profq_functions",
            "SELECT run_id, canonical_name(CAST(name AS VARCHAR)) AS family, top_value(CAST(opcode AS VARCHAR), self_ns) AS opcode, \
               interval_union_ns(start_ns, start_ns + dur_ns) AS covered FROM ops GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 40",
        ),
        (
            "nested_functions",
            "SELECT run_id, k, count(*) AS n FROM (SELECT run_id, unnest(generate_series(1, CAST(count(*) % 3 + 1 AS BIGINT))) AS k FROM ops GROUP BY run_id) \
             GROUP BY run_id, k ORDER BY run_id, k",
        ),
        ("one_run", "SELECT count(*) AS n, min(start_ns) AS first FROM events WHERE run_id = 'r2'"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for t in profq::tables::schema::TABLES {
        out.push((format!("count_{}", t.name), format!("SELECT run_id, count(*) AS n FROM {} GROUP BY run_id ORDER BY run_id", t.name)));
    }
    out
}

fn rows_of(batches: &[datafusion::arrow::record_batch::RecordBatch]) -> Vec<Value> {
    match serde_json::from_str(&profq::render::render(batches, profq::render::Format::Json)).unwrap() {
        Value::Array(rows) => rows,
        other => panic!("not rows: {other}"),
    }
}

/// Whether two answers agree: the same rows in the same order, numbers equal up to the
/// rounding of sums added in another order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w))),
        _ => a == b,
    }
}

async fn answers(engine: &Engine, statements: &[(String, String)]) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for (name, sql) in statements {
        out.push(rows_of(&engine.sql(sql).await.unwrap_or_else(|e| panic!("{name}: {e}"))));
    }
    out
}

/// Whether a statement orders its result: an ORDER BY after its last closing parenthesis
/// (the outermost SELECT's). The rows of one that does not (`export_events`, which the
/// export orders itself) are compared as a multiset.
fn ordered(sql: &str) -> bool {
    let upper = sql.to_uppercase();
    upper.rfind("ORDER BY").is_some_and(|at| upper.rfind(')').is_none_or(|paren| at > paren))
}

fn sorted(rows: &[Value]) -> Value {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| r.to_string());
    Value::Array(rows)
}

fn assert_same_answers(statements: &[(String, String)], local: &[Vec<Value>], cluster: &[Vec<Value>], where_: &str) {
    let mut nonempty = 0;
    for (((name, sql), l), c) in statements.iter().zip(local).zip(cluster) {
        let agree = if ordered(sql) { same(&Value::Array(l.clone()), &Value::Array(c.clone())) } else { same(&sorted(l), &sorted(c)) };
        assert!(agree, "{name}: {where_} answers otherwise\nlocal:   {l:?}\ncluster: {c:?}");
        nonempty += usize::from(!l.is_empty());
    }
    // The store must give most statements rows to compare, or the check says little.
    assert!(nonempty * 4 >= statements.len() * 3, "only {nonempty} of {} statements return rows", statements.len());
}

/// Every named query and the ad-hoc statements, locally and on a scheduler with two
/// executors in this process: their session builder, runtime and function registry are
/// those of `profq ballista scheduler|executor`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cluster_answers_every_query_as_the_local_engine() {
    let store = Location::Local(local_store());
    let mut statements = named_statements();
    statements.extend(ad_hoc_statements());
    let local = answers(&Engine::open_on(&store, &Placement::Here, Spread::Wide).await.unwrap(), &statements).await;
    profq::engine::cluster::roles::log_to_stderr();
    let scheduler = profq::engine::cluster::roles::in_process(2, 2).await.unwrap();
    let cluster = Engine::open_on(&store, &Placement::Cluster { scheduler }, Spread::Wide).await.unwrap();
    let distributed = answers(&cluster, &statements).await;
    assert_same_answers(&statements, &local, &distributed, "an in-process cluster");
}

/// A `profq ballista` role process listening on `port`, its output in a log file under the
/// temp dir; killed when dropped.
fn start_role(name: &str, args: &[&str], env: &[(String, String)], port: u16) -> Server {
    let log = std::fs::File::create(std::env::temp_dir().join(format!("profq-ballista-{}-{name}.log", std::process::id()))).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_profq"));
    cmd.arg("ballista").args(args).envs(env.iter().cloned()).stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
    Server::listening(cmd, name, port)
}

/// A `profq ballista executor` and its work directory (its shuffle files).
struct Executor {
    role: Server,
    work: PathBuf,
}

/// The shuffle files under an executor's work dir: `<job>/<stage>/<partition>/…` (its
/// `datafusion-*` directory holds spills).
fn shuffle_files(work: &std::path::Path) -> usize {
    let mut stack: Vec<PathBuf> = std::fs::read_dir(work).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    stack.retain(|p| !p.file_name().unwrap().to_string_lossy().starts_with("datafusion-"));
    let mut files = 0;
    while let Some(p) = stack.pop() {
        match std::fs::read_dir(&p) {
            Ok(d) => stack.extend(d.flatten().map(|e| e.path())),
            Err(_) => files += usize::from(p.is_file()),
        }
    }
    files
}

/// A scheduler and two executors on 127.0.0.1, on free ports, with `env` (the store's
/// credentials); executors are declared dead after `timeout_s` without a heartbeat.
fn start_cluster(env: &[(String, String)], timeout_s: u64) -> (String, Server, Vec<Executor>) {
    let port = free_port();
    let timeout = timeout_s.to_string();
    let scheduler = start_role("scheduler", &["scheduler", "--bind", &format!("127.0.0.1:{port}"), "--executor-timeout", &timeout], env, port);
    let executors = (0..2)
        .map(|i| {
            let (flight, grpc) = (free_port(), free_port());
            let work = temp_dir(&format!("executor-{i}"));
            let args = [
                "executor",
                "--scheduler",
                &format!("127.0.0.1:{port}"),
                "--bind",
                &format!("127.0.0.1:{flight}"),
                "--grpc-port",
                &grpc.to_string(),
                "--work-dir",
                work.to_str().unwrap(),
                "--concurrent-tasks",
                "2",
                "--heartbeat",
                "1",
            ];
            Executor { role: start_role(&format!("executor-{i}"), &args, env, flight), work }
        })
        .collect();
    // Executors register with their first heartbeat.
    std::thread::sleep(Duration::from_secs(2));
    (format!("df://127.0.0.1:{port}"), scheduler, executors)
}

fn json_rows(o: &std::process::Output, what: &str) -> Value {
    assert!(o.status.success(), "{what}: {}", stderr(o));
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{what}: {e}: {}", stdout(o)))
}

/// Real processes: a store ingested into moto's S3, `profq ballista scheduler` and two
/// executors reading it with the store's credentials, and the client commands
/// (`sql`, `run`, `summarize`, `query`) with `--engine ballista` answering as locally.
#[test]
fn profq_processes_answer_over_a_store_in_s3() {
    let Some(s3) = S3::start() else { return };
    s3.mkbucket("profq");
    let cache = temp_dir("ballista-cache");
    let store = "s3://profq/store";
    for (id, input) in store_inputs() {
        let o = s3.profq(&["ingest", input.to_str().unwrap(), "--store", store, "--run-id", id], &cache, &[]);
        assert!(o.status.success(), "ingest {id}: {}", stderr(&o));
    }
    let (scheduler, _s, _executors) = start_cluster(&s3.env(), 30);
    let on = |args: &[&str], cluster: bool| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--store", store]);
        if cluster {
            all.extend(["--engine", "ballista", "--scheduler", &scheduler]);
        }
        s3.profq(&all, &cache, &[])
    };
    let commands: Vec<Vec<&str>> = vec![
        vec!["sql", "SELECT run_id, count(*) AS n, sum(self_ns) AS s FROM ops GROUP BY run_id ORDER BY run_id", "--format", "json"],
        vec!["run", "trends", "--format", "json"],
        vec!["run", "hot_ops", "--run", "r3", "--format", "json"],
        vec!["summarize", "--run", "r3"],
        vec!["query", "which run is the slowest?"],
    ];
    for args in &commands {
        let local = json_rows(&on(args, false), &format!("{args:?} locally"));
        let cluster = json_rows(&on(args, true), &format!("{args:?} on the cluster"));
        assert!(same(&local, &cluster), "{args:?}: the cluster answers otherwise\nlocal:   {local}\ncluster: {cluster}");
    }
}

/// An executor killed while a query runs: the query returns the rows the local engine
/// returns (its tasks run again on the other executor), or fails with an error; never
/// wrong or partial rows. The executor killed is the first to hold the query's shuffle
/// files, so its finished work is lost with it.
#[test]
fn an_executor_killed_mid_query_never_yields_wrong_rows() {
    let store = local_store();
    let store_arg = store.to_str().unwrap();
    // About a second of work per executor: every op of every run, ten thousand times over.
    let sql = "SELECT a.run_id, a.k % 7 AS g, count(*) AS n, sum(a.self_ns) AS s \
               FROM (SELECT run_id, self_ns, unnest(generate_series(1, 10000)) AS k FROM ops) a GROUP BY 1, 2 ORDER BY 1, 2";
    let local = json_rows(&profq(&["sql", sql, "--store", store_arg, "--format", "json"]), "locally");
    let (scheduler, _s, mut executors) = start_cluster(&[], 3);
    let mut client = Command::new(env!("CARGO_BIN_EXE_profq"))
        .args(["sql", sql, "--store", store_arg, "--format", "json", "--engine", "ballista", "--scheduler", &scheduler])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let holds_files = |e: &Executor| shuffle_files(&e.work) > 0;
    let victim = loop {
        if let Some(i) = executors.iter().position(holds_files) {
            break i;
        }
        assert!(client.try_wait().unwrap().is_none(), "the query ended before any executor wrote shuffle files: make it longer");
        assert!(started.elapsed() < Duration::from_secs(60), "no executor wrote shuffle files");
        std::thread::sleep(Duration::from_millis(5));
    };
    let victim = executors.remove(victim);
    let _ = Command::new("kill").args(["-9", &victim.role.pid().to_string()]).status();
    let killed_at = started.elapsed();
    assert!(client.try_wait().unwrap().is_none(), "the query ended before the executor was killed: make it longer");
    let o = client.wait_with_output().unwrap();
    if o.status.success() {
        let cluster: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert!(same(&local, &cluster), "after an executor died the cluster answered otherwise\nlocal:   {local}\ncluster: {cluster}");
    } else {
        let err = stderr(&o);
        assert!(err.starts_with("profq: ") && !err.trim().is_empty(), "a failure says why: {err:?}");
        assert!(stdout(&o).trim().is_empty(), "a failed query prints no rows: {}", stdout(&o));
    }
    eprintln!("executor killed after {killed_at:?}; the query {} after {:?}", if o.status.success() { "answered" } else { "failed" }, started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(120), "the query neither finished nor failed in time");
}

/// A scheduler nobody listens at: exit 4 and one line naming its address.
#[test]
fn an_unreachable_scheduler_is_one_line_naming_it() {
    let store = temp_dir("ballista-unreachable");
    let scheduler = format!("df://127.0.0.1:{}", free_port());
    let o = profq(&["sql", "SELECT 1", "--store", store.to_str().unwrap(), "--engine", "ballista", "--scheduler", &scheduler]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&scheduler) && err.contains("cannot reach"), "{err}");
}
