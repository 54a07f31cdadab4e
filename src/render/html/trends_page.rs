//! The HTML page of trends across the runs of a store (`queries/trends.sql`): step time,
//! communication share, the hottest op and collective time, run by run in ingest order.

use super::{charts, Cell, Page};
use serde_json::{Map, Value};

/// Measures drawn, in order: (title, column, scale from the column's unit, drawn only when
/// some run has a non-zero value).
const MEASURES: [(&str, &str, f64, bool); 9] = [
    ("steady median step (µs)", "steady_median_ns", 1e-3, false),
    ("communication share", "communication_share", 1.0, false),
    ("compute share", "compute_share", 1.0, false),
    ("top op self time (µs)", "top_op_self_ns", 1e-3, false),
    ("all-reduce (µs)", "all_reduce_ns", 1e-3, true),
    ("all-gather (µs)", "all_gather_ns", 1e-3, true),
    ("reduce-scatter (µs)", "reduce_scatter_ns", 1e-3, true),
    ("all-to-all (µs)", "all_to_all_ns", 1e-3, true),
    ("other collectives (µs)", "other_collective_ns", 1e-3, true),
];

/// The page of the `trends` rows of store `store`.
pub fn page(rows: &[Map<String, Value>], store: &str) -> String {
    let mut p = Page::new(&format!("profq trends · {store}"), &format!("{} runs, in ingest order", rows.len()));
    let order = |r: &Map<String, Value>| r.get("ingest_order").and_then(Value::as_i64).unwrap_or(0);
    let run = |r: &Map<String, Value>| r.get("run_id").and_then(Value::as_str).unwrap_or("").to_string();
    let shown: Vec<_> =
        MEASURES.iter().filter(|(_, col, _, if_any)| !if_any || rows.iter().any(|r| r.get(*col).and_then(Value::as_f64).unwrap_or(0.0) != 0.0)).collect();
    p.section("Across runs", Some("One panel per measure; hover a point for the run."));
    if rows.is_empty() {
        p.note("The store has no runs.");
        return p.finish();
    }
    let points: Vec<(i64, String, &str, Option<f64>)> = shown
        .iter()
        .flat_map(|(title, col, scale, _)| rows.iter().map(move |r| (order(r), run(r), *title, r.get(*col).and_then(Value::as_f64).map(|v| v * scale))))
        .collect();
    let titles: Vec<&str> = shown.iter().map(|m| m.0).collect();
    let (spec, marks) = charts::trends(&points, &titles);
    p.chart("trends", spec, marks);

    p.section("Runs", None);
    let text = |r: &Map<String, Value>, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let num = |r: &Map<String, Value>, k: &str, scale: f64| r.get(k).and_then(Value::as_f64).map(|v| v * scale);
    let table = rows
        .iter()
        .map(|r| {
            vec![
                Cell::int(Some(order(r))),
                Cell::text(run(r)),
                Cell::text(text(r, "labels")),
                Cell::int(r.get("steady_steps").and_then(Value::as_i64)),
                Cell::num(num(r, "steady_median_ns", 1e-3)),
                Cell::pct(num(r, "communication_share", 1.0)),
                Cell::text(text(r, "top_op")),
                Cell::num(num(r, "top_op_self_ns", 1e-3)),
            ]
        })
        .collect();
    p.table("runs", &["#", "run", "labels", "steady steps", "steady median (µs)", "communication", "top op", "top op self (µs)"], table);
    p.finish()
}
