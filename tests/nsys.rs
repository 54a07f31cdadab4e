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

/// A tiny export written with SQLite itself, in nsys's schema: thread 8 of process 7 (python3)
/// opens the NVTX ranges `nvtx` (start, end, text) and launches a kernel `gemm` per
/// `launches` (launch start; the kernel runs from 200 ns after it for 300 ns); `extra`: more SQL.
fn tiny_export(path: &Path, nvtx: &[(i64, i64, &str)], launches: &[i64], extra: &str) {
    let pid: i64 = 7 << 24;
    let tid: i64 = pid | 8;
    let db = Connection::open(path).unwrap();
    let nvtx: Vec<String> = nvtx.iter().map(|(s, e, t)| format!("({s}, {e}, 59, '{t}', {tid}, NULL)")).collect();
    let runtime: Vec<String> = launches.iter().enumerate().map(|(k, s)| format!("({s}, {}, 0, {tid}, {}, 1)", s + 100, 11 + k)).collect();
    let kernels: Vec<String> =
        launches.iter().enumerate().map(|(k, s)| format!("({}, {}, 0, 7, {}, {pid}, 2, 3, 1, 1, 1, 32, 1, 1)", s + 200, s + 500, 11 + k)).collect();
    db.execute_batch(&format!(
        "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME', 'NVIDIA Nsight Systems');
         CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO StringIds VALUES (1, 'cuLaunchKernel'), (2, 'void gemm<float>(float*)'), (3, 'gemm'), (4, 'main');
         CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
         INSERT INTO PROCESSES VALUES ({pid}, 7, 'python3');
         CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
         INSERT INTO ThreadNames VALUES (4, 0, {tid});
         CREATE TABLE NVTX_EVENTS (start INTEGER, \"end\" INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER, textId INTEGER);
         INSERT INTO NVTX_EVENTS VALUES {nvtx}, (1100, 1200, 34, 'a mark', {tid}, NULL);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, \"end\" INTEGER, eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES {runtime};
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
           demangledName INTEGER, shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES {kernels};
         {extra}",
        nvtx = nvtx.join(", "),
        runtime = runtime.join(", "),
        kernels = kernels.join(", "),
    ))
    .unwrap();
}

/// Two NVTX `step N` ranges, each launching one kernel: the steps are the run's, and each
/// kernel is in the step its launch ran in.
#[test]
fn nvtx_ranges_that_mark_steps_are_steps() {
    let dir = temp_dir("nsys-steps");
    let path = dir.join("steps.sqlite");
    tiny_export(&path, &[(1000, 5000, "step 1"), (6000, 9000, "step 2")], &[1500, 6500], "");
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

/// `--step-marker REGEX` names the ranges that mark steps: numbered by the first group, else
/// in order; the usual markers then mark nothing.
#[test]
fn a_step_marker_names_the_step_ranges() {
    let dir = temp_dir("nsys-step-marker");
    let path = dir.join("iters.sqlite");
    tiny_export(&path, &[(1000, 5000, "iter-3"), (6000, 9000, "iter-4"), (9500, 9900, "step 9")], &[1500, 6500], "");
    for (marker, steps) in [(r"^iter-(\d+)$", [3, 4]), ("^iter", [0, 1])] {
        let o = profq(&["run", "step_durations", path.to_str().unwrap(), "--step-marker", marker, "--format", "json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
        let got: Vec<i64> = rows.iter().map(|r| as_i64(&r["step"])).collect();
        assert_eq!(got, steps, "{marker}: {}", stdout(&o));
    }
    let o = profq(&["summarize", path.to_str().unwrap(), "--step-marker", "("]);
    assert_eq!(o.status.code(), Some(2), "a bad regex is a usage error: {}", stderr(&o));
}

/// JAX on GPU: XLA's NVTX ranges (`XlaModule:#…#` around a module's execution, `Thunk:#…#`
/// around an op's launches, a `StepTraceAnnotation`) place each kernel in its HLO op, module
/// and step, with the op's op_name as its scope; a kernel launched outside them keeps its own
/// name. TARGET_INFO_GPU's memory bandwidth is the run's peak, and a directory holding the
/// export is read as the export.
#[test]
fn xla_ranges_place_kernels_in_their_hlo_ops() {
    let dir = temp_dir("nsys-xla");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let path = logs.join("report1.sqlite");
    tiny_export(
        &path,
        &[
            (800, 9600, "train:#step_num=7,_r=1#"),
            (900, 9500, "XlaModule:#prefix=jit(train_step),hlo_module=jit_train_step,program_id=5#"),
            (1000, 2000, "Thunk:#name=mlp/dot_general,hlo_op=fusion.3#"),
            (3000, 4000, "Thunk:#hlo_op=copy.1#"),
        ],
        &[1500, 3500, 9700],
        "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, memoryBandwidth INTEGER);
         INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', 3352320000000);",
    );
    let store = dir.join("store");
    ingest(&store, &logs, "xla");
    let ops = sql(
        &store,
        "SELECT step, CAST(hlo_op AS VARCHAR) AS op, CAST(hlo_module AS VARCHAR) AS module, program_id, CAST(tf_op AS VARCHAR) AS scope FROM ops ORDER BY start_ns",
    );
    type Placed<'a> = (Option<i64>, &'a str, Option<&'a str>, Option<i64>, Option<&'a str>);
    let got: Vec<Placed> =
        ops.iter().map(|r| (r["step"].as_i64(), as_str(&r["op"]), r["module"].as_str(), r["program_id"].as_i64(), r["scope"].as_str())).collect();
    assert_eq!(
        got,
        [
            (Some(7), "fusion.3", Some("jit_train_step"), Some(5), Some("jit(train_step)/mlp/dot_general")),
            (Some(7), "copy.1", Some("jit_train_step"), Some(5), None),
            (None, "gemm", None, None, None),
        ]
    );
    let runs = sql(&store, "SELECT source_format, peak_hbm_bytes_per_s AS bw FROM runs");
    assert_eq!((runs[0]["source_format"].as_str(), runs[0]["bw"].as_f64()), (Some("nsys"), Some(3.35232e12)));
    let ranges = sql(&store, "SELECT CAST(name AS VARCHAR) AS name FROM events WHERE category = 'nvtx' ORDER BY start_ns");
    let names: Vec<&str> = ranges.iter().map(|r| as_str(&r["name"])).collect();
    assert_eq!(names, ["train", "jit_train_step", "fusion.3", "copy.1"]);
}

/// An export larger than a part is read a part per process: its summary is the one-part
/// summary, byte for byte.
#[test]
fn a_large_export_is_read_a_process_at_a_time() {
    let Some((_, export)) = exports().into_iter().find(|(name, _)| name == "h100_2gpu_1s") else { return };
    let args = ["summarize", export.to_str().unwrap()];
    let one_part = profq_env(&args, &[]);
    let per_process = profq_env(&args, &[("PROFQ_PART_BYTES", "1000000"), ("PROFQ_TIMING", "1")]);
    assert_eq!(stderr(&per_process).matches("nsys: read").count(), 2, "two processes, two parts: {}", stderr(&per_process));
    assert!(stdout(&one_part) == stdout(&per_process), "the parts summarised unlike the whole");
}
