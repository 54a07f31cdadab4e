//! Nsight Systems SQLite exports as INPUTs: profq's tables of the two shared exports against
//! plain SQL over the export itself (read with SQLite), and every command on them; a raw
//! `.nsys-rep` refused with the command that exports it.

mod common;

use common::*;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

const EXPORTS: [&str; 2] = ["public/nsys-ai/mock/mock.sqlite", "public/nsys-ai/h100_2gpu_1s/h100_2gpu_1s.sqlite"];

fn exports() -> Vec<(String, PathBuf)> {
    EXPORTS.iter().filter_map(|rel| shared(rel).map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))).collect()
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// (count, summed duration) of the export's device work per GPU, by plain SQL.
fn device_work(db: &Connection) -> Vec<(String, i64, i64)> {
    let sql = "SELECT 'GPU:' || deviceId, count(*), sum(\"end\" - start) FROM (
                 SELECT deviceId, start, \"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL
                 UNION ALL SELECT deviceId, start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY
                 UNION ALL SELECT deviceId, start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMSET)
               GROUP BY deviceId ORDER BY deviceId";
    let tables: Vec<String> = db.prepare("SELECT name FROM sqlite_master").unwrap().query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    // An export holds only the activity tables it recorded.
    let mut sql = sql.to_string();
    for t in ["CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"] {
        if !tables.iter().any(|n| n == t) {
            sql = sql.replace(&format!("UNION ALL SELECT deviceId, start, \"end\" FROM {t}"), "");
        }
    }
    db.prepare(&sql).unwrap().query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn exports_tables_equal_sql_over_the_export() {
    let dir = temp_dir("nsys-tables");
    for (name, path) in exports() {
        let store = dir.join(&name);
        ingest(&store, &path, &name);
        let db = open(&path);
        let runs = sql(&store, "SELECT source_format FROM runs");
        assert_eq!(runs[0]["source_format"], "nsys", "{name}");

        // Every kernel, memcpy and memset is an op of its GPU, with its duration.
        let ours: Vec<(String, i64, i64)> =
            sql(&store, "SELECT CAST(device AS VARCHAR) AS device, count(*) AS n, CAST(sum(dur_ns) AS BIGINT) AS d FROM ops GROUP BY device ORDER BY device")
                .iter()
                .map(|r| (as_str(&r["device"]).to_string(), as_i64(&r["n"]), as_i64(&r["d"])))
                .collect();
        assert_eq!(ours, device_work(&db), "{name}: ops per device");

        // NVTX ranges, each an event of category nvtx.
        let ranges: i64 = db.query_row("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)", [], |r| r.get(0)).unwrap_or(0);
        let nvtx = as_i64(&sql(&store, "SELECT count(*) AS n FROM events WHERE category = 'nvtx'")[0]["n"]);
        assert_eq!(nvtx, ranges, "{name}: NVTX ranges");

        // NCCL kernels are communication, and nothing else is.
        let nccl = sql(
            &store,
            "SELECT count(*) AS n, count(*) FILTER (WHERE category = 'communication') AS comm FROM ops WHERE lower(CAST(hlo_op AS VARCHAR)) LIKE '%nccl%'",
        );
        assert_eq!(nccl[0]["n"], nccl[0]["comm"], "{name}: NCCL kernels are communication ops");

        // The top kernel by self time is the kernel with the most total time: ops are named by
        // their short name (ops.name keeps the demangled one).
        let top_kernel: String = db
            .query_row(
                "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                 GROUP BY s.value ORDER BY sum(k.\"end\" - k.start) DESC, s.value LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let hot = profq(&["run", "hot_ops", "--run", &name, "--store", store.to_str().unwrap(), "--format", "json"]);
        assert!(hot.status.success(), "{name}: {}", stderr(&hot));
        let hot: serde_json::Value = serde_json::from_str(&stdout(&hot)).unwrap();
        let first_kernel = hot.as_array().unwrap().iter().map(|r| as_str(&r["hlo_op"])).find(|op| !op.starts_with("Memcpy") && !op.starts_with("Memset"));
        assert_eq!(first_kernel, Some(top_kernel.as_str()), "{name}: top kernel");
        let demangled = sql(&store, "SELECT count(*) AS n FROM ops o JOIN events e ON e.run_id = o.run_id AND e.event_id = o.event_id WHERE o.name = e.name");
        assert_eq!(as_i64(&demangled[0]["n"]), ours.iter().map(|o| o.1).sum::<i64>(), "{name}: ops keep the event's (demangled) name");

        // Launches reach their kernels: every kernel has the runtime call of its correlation id.
        let launched = sql(
            &store,
            "SELECT count(*) AS n FROM events k JOIN events l ON l.run_id = k.run_id AND l.correlation_id = k.correlation_id AND l.category = 'cuda_runtime'
             WHERE k.category = 'kernel'",
        );
        // Correlation ids count per process: a launch is its own process's.
        let kernels: i64 = db
            .query_row(
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                 ON r.correlationId = k.correlationId AND (r.globalTid & ~16777215) = k.globalPid",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(as_i64(&launched[0]["n"]), kernels, "{name}: kernels linked to their launches");
    }
}

#[test]
fn every_command_reads_an_export() {
    let all = exports();
    let Some((_, export)) = all.last() else { return };
    let dir = temp_dir("nsys-commands");
    let input = export.to_str().unwrap();
    let summary = summarize(export, &[]);
    assert_eq!(summary["source_format"], "nsys_sqlite");
    assert!(summary["hot_ops"].as_array().is_some_and(|h| !h.is_empty()), "hot ops");
    assert_eq!(summary["run_metadata"]["num_devices"], 2);

    let page = dir.join("report.html");
    let o = profq(&["report", input, "--format", "html", "--output", page.to_str().unwrap()]);
    assert!(o.status.success(), "report: {}", stderr(&o));
    let trace = dir.join("trace.pftrace");
    // No step markers in this export: a time range, with launches drawn as flows to their work.
    let o = profq(&["export-trace", input, "--output", trace.to_str().unwrap(), "--from-ns", "0", "--to-ns", "2000000000"]);
    assert!(o.status.success(), "export-trace: {}", stderr(&o));
    let checked = profq::export::perfetto::check::check(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(checked.flows > 0, "launch flows: {}", stdout(&o));
    let o = profq(&["query", "what are the hottest ops?", input]);
    assert!(o.status.success(), "query: {}", stderr(&o));
    if let [(_, before), (_, after)] = &all[..] {
        let o = profq(&["compare", "--before", before.to_str().unwrap(), "--after", after.to_str().unwrap(), "--format", "json"]);
        assert!(o.status.success(), "compare: {}", stderr(&o));
    }
}

#[test]
fn a_raw_report_names_the_export_command() {
    let dir = temp_dir("nsys-rep");
    let report = dir.join("run.nsys-rep");
    std::fs::write(&report, b"not a database").unwrap();
    let o = profq(&["summarize", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("nsys export --type sqlite"), "{}", stderr(&o));
    assert_eq!(stderr(&o).trim().lines().count(), 1, "one line: {}", stderr(&o));
}

/// A tiny export written with SQLite itself, in nsys's schema: two NVTX `step N` ranges on a
/// thread, each launching one kernel. The steps are the run's, and each kernel is in the step
/// its launch ran in.
#[test]
fn nvtx_ranges_that_mark_steps_are_steps() {
    let dir = temp_dir("nsys-steps");
    let path = dir.join("steps.sqlite");
    let db = Connection::open(&path).unwrap();
    let tid: i64 = (7 << 24) | 8;
    db.execute_batch(&format!(
        "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME', 'NVIDIA Nsight Systems');
         CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'void gemm<float>(float*)'), (3, 'gemm'), (4, 'main');
         CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
         INSERT INTO PROCESSES VALUES ({pid}, 7, 'python3');
         CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
         INSERT INTO ThreadNames VALUES (4, 0, {tid});
         CREATE TABLE NVTX_EVENTS (start INTEGER, \"end\" INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER, textId INTEGER);
         INSERT INTO NVTX_EVENTS VALUES (1000, 5000, 59, 'step 1', {tid}, NULL), (6000, 9000, 59, 'step 2', {tid}, NULL), (1100, 1200, 34, 'a mark', {tid}, NULL);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, \"end\" INTEGER, eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1500, 1600, 0, {tid}, 11, 1), (6500, 6600, 0, {tid}, 12, 1);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
           demangledName INTEGER, shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1700, 4000, 0, 7, 11, {pid}, 2, 3, 1, 1, 1, 32, 1, 1), (6700, 8000, 0, 7, 12, {pid}, 2, 3, 1, 1, 1, 32, 1, 1);",
        pid = 7_i64 << 24
    ))
    .unwrap();
    drop(db);
    let store = dir.join("store");
    ingest(&store, &path, "steps");
    let ops = sql(
        &store,
        "SELECT step, CAST(hlo_op AS VARCHAR) AS op, CAST(name AS VARCHAR) AS name, CAST(region_path AS VARCHAR) AS region FROM ops ORDER BY start_ns",
    );
    let got: Vec<(i64, &str, &str)> = ops.iter().map(|r| (as_i64(&r["step"]), as_str(&r["op"]), as_str(&r["name"]))).collect();
    assert_eq!(got, [(1, "gemm", "void gemm<float>(float*)"), (2, "gemm", "void gemm<float>(float*)")]);
    assert_eq!(ops[0]["region"], serde_json::Value::Null, "a range marking a step is no scope");
    let steps = sql(&store, "SELECT count(DISTINCT step) AS n FROM steps");
    assert_eq!(as_i64(&steps[0]["n"]), 2);
    let marks = sql(&store, "SELECT count(*) AS n FROM events WHERE category = 'nvtx'");
    assert_eq!(as_i64(&marks[0]["n"]), 2, "marks are not ranges");
}
