//! The store read back by real DuckDB and pandas gives the same counts and sums as profq sql.

mod common;
use common::*;
use std::process::Command;

/// Python with duckdb, pandas and pyarrow: $PROFQ_PYTHON (set by .ci/run), else .venv/bin/python.
fn python() -> Option<String> {
    let candidates = [std::env::var("PROFQ_PYTHON").ok(), Some(repo().join(".venv/bin/python").display().to_string())];
    for c in candidates.into_iter().flatten() {
        let ok = Command::new(&c).args(["-c", "import duckdb, pandas, pyarrow"]).output().is_ok_and(|o| o.status.success());
        if ok {
            return Some(c);
        }
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("no python with duckdb, pandas and pyarrow (run .ci/run, which installs them)");
    }
    eprintln!("skipping: no python with duckdb, pandas and pyarrow");
    None
}

#[test]
fn duckdb_and_pandas_read_the_dataset() {
    let Some(py) = python() else { return };
    let store = temp_dir("interop");
    ingest(&store, &xplane_of(&jax_cpu("multi_device_dp")), "dp");
    ingest(&store, &find_file(&jax_cpu("mlp_train"), "perfetto_trace.json.gz").unwrap(), "mlp_json");
    // Every table, each with a number column summed.
    let summed = [
        ("events", "dur_ns"),
        ("ops", "dur_ns"),
        ("steps", "dur_ns"),
        ("collectives", "dur_ns"),
        ("regions", "inclusive_ns"),
        ("runs", "num_events_total"),
        ("hosts", "rank"),
        ("gaps", "gap_ns"),
        ("event_totals", "dur_ns"),
        ("op_totals", "dur_ns"),
        ("gap_totals", "gap_ns"),
        ("line_steps", "dur_ns"),
    ];
    let mut tables: Vec<&str> = summed.iter().map(|(t, _)| *t).collect();
    tables.sort();
    let mut contract: Vec<&str> = profq::tables::schema::TABLES.iter().map(|t| t.name).collect();
    contract.sort();
    assert_eq!(tables, contract, "every table of the contract is read back");
    let ours: Vec<(String, i64, i64)> = summed
        .iter()
        .map(|(t, col)| {
            let r = sql(&store, &format!("SELECT count(*) AS n, coalesce(sum({col}), 0) AS s FROM {t}"));
            (t.to_string(), as_i64(&r[0]["n"]), as_i64(&r[0]["s"]))
        })
        .collect();
    let script = r#"
import sys, json, duckdb, pandas as pd
store, summed = sys.argv[1], json.loads(sys.argv[2])
out = {}
con = duckdb.connect()
for t, col in summed:
    n, s = con.execute(f"SELECT count(*), coalesce(sum({col}),0) FROM read_parquet('{store}/{t}/*/*.parquet', hive_partitioning=true)").fetchone()
    df = pd.read_parquet(f"{store}/{t}")
    out[t] = {"duckdb": [int(n), int(s)], "pandas": [len(df), int(df[col].sum())], "runs": sorted(str(r) for r in df["run_id"].unique())}
# args is a real MAP: DuckDB can index it.
out["args"] = con.execute(f"SELECT count(*) FROM read_parquet('{store}/events/*/*.parquet', hive_partitioning=true) WHERE args['run_id'] IS NOT NULL").fetchone()[0]
print(json.dumps(out))
"#;
    let o = Command::new(&py).args(["-c", script, store.to_str().unwrap(), &serde_json::json!(summed).to_string()]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for (t, n, s) in ours {
        assert_eq!(v[&t]["duckdb"], serde_json::json!([n, s]), "duckdb {t}");
        assert_eq!(v[&t]["pandas"], serde_json::json!([n, s]), "pandas {t}");
        if ["events", "ops", "steps", "runs", "event_totals", "op_totals", "line_steps"].contains(&t.as_str()) {
            assert_eq!(v[&t]["runs"], serde_json::json!(["dp", "mlp_json"]), "{t}");
        }
    }
    assert!(as_i64(&v["args"]) > 0);
}
