//! Render: record batches as a text table, CSV or JSON, summaries as markdown reports and
//! HTML pages: the one place output formats live.

pub mod html;
pub mod report;

use arrow::array::Array;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// Every cell of the batches as text (null → None), with the column names.
fn cells(batches: &[RecordBatch]) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    let Some(first) = batches.first() else { return (vec![], vec![]) };
    let names = first.schema().fields().iter().map(|f| f.name().clone()).collect();
    let opts = FormatOptions::default();
    let mut rows = Vec::new();
    for b in batches {
        let fmts: Vec<_> = b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("formattable")).collect();
        for r in 0..b.num_rows() {
            rows.push(b.columns().iter().zip(&fmts).map(|(c, f)| (!c.is_null(r)).then(|| f.value(r).to_string())).collect());
        }
    }
    (names, rows)
}

/// What an ingest of `input` did, as the line printed for it.
pub fn ingest_outcome(outcome: &crate::ingest::Outcome, input: &std::path::Path) -> String {
    use crate::ingest::Outcome;
    match outcome {
        Outcome::Ingested { run_id, events, ops, steps, .. } => {
            format!("ingested {run_id}: {events} events, {ops} ops, {steps} steps from {}\n", input.display())
        }
        Outcome::AlreadyPresent { run_id } => {
            format!("unchanged {run_id}: {} is already in the store (same sha256; --force re-ingests)\n", input.display())
        }
    }
}

/// What a trace export wrote, as the line printed for it.
pub fn exported(e: &crate::export::Exported, output: &std::path::Path) -> String {
    let cut = if e.truncated { " (cut at --max-events: marked \"truncated\")" } else { "" };
    format!(
        "{}: {}, {}..{} ns: {} events as {} slices on {} tracks, {} flows, {} bytes{cut}\n",
        output.display(),
        e.label,
        e.from_ns,
        e.to_ns,
        e.events,
        e.slices,
        e.tracks,
        e.flows,
        e.bytes
    )
}

/// An ingest's quality warnings, one line each (for stderr).
pub fn ingest_warnings(outcome: &crate::ingest::Outcome) -> Vec<String> {
    match outcome {
        crate::ingest::Outcome::Ingested { run_id, warnings, .. } => warnings.iter().map(|w| format!("profq: warning: {run_id}: {w}")).collect(),
        crate::ingest::Outcome::AlreadyPresent { .. } => Vec::new(),
    }
}

/// The named analyses, one line each: name (padded), description.
pub fn query_list(queries: &[crate::engine::queries::NamedQuery]) -> String {
    let width = queries.iter().map(|q| q.name.len()).max().unwrap_or(0);
    queries.iter().map(|q| format!("{:width$}  {}\n", q.name, q.description())).collect()
}

/// The named analyses as JSON: each with its name, description, parameters (name, type,
/// default, what it means) and SQL, in the order `profq queries` lists them.
pub fn query_list_json(queries: &[crate::engine::queries::NamedQuery]) -> serde_json::Value {
    use crate::engine::queries::ParamKind;
    let list = queries.iter().map(|q| {
        let params: Vec<serde_json::Value> = q
            .params()
            .iter()
            .map(|p| {
                let kind = match p.kind {
                    ParamKind::Text => "text",
                    ParamKind::Int => "int",
                    ParamKind::Float => "float",
                };
                serde_json::json!({"name": p.name, "type": kind, "default": p.default, "doc": p.doc})
            })
            .collect();
        serde_json::json!({"name": q.name, "description": q.description(), "params": params, "sql": q.text})
    });
    serde_json::Value::Array(list.collect())
}

/// A JSON document as profq prints and writes it: sorted keys, indent 2, trailing newline
/// (the reference tool's convention).
pub fn json_text(doc: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(doc).unwrap_or_default();
    s.push('\n');
    s
}

pub fn render(batches: &[RecordBatch], format: Format) -> String {
    match format {
        Format::Table => table(batches),
        Format::Csv => csv(batches),
        Format::Json => json(batches),
    }
}

fn table(batches: &[RecordBatch]) -> String {
    if batches.iter().all(|b| b.num_rows() == 0) {
        let cols = batches.first().map(|b| b.schema().fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>().join(", "));
        return format!("(0 rows{})\n", cols.map(|c| format!("; columns: {c}")).unwrap_or_default());
    }
    let nonempty: Vec<RecordBatch> = batches.iter().filter(|b| b.num_rows() > 0).cloned().collect();
    let mut out = arrow::util::pretty::pretty_format_batches(&nonempty).map(|d| d.to_string()).unwrap_or_default();
    let n: usize = nonempty.iter().map(|b| b.num_rows()).sum();
    out.push_str(&format!("\n({n} row{})\n", if n == 1 { "" } else { "s" }));
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv(batches: &[RecordBatch]) -> String {
    let (names, rows) = cells(batches);
    let mut out = names.iter().map(|n| csv_field(n)).collect::<Vec<_>>().join(",");
    out.push('\n');
    for r in rows {
        out.push_str(&r.iter().map(|c| c.as_deref().map(csv_field).unwrap_or_default()).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// JSON array of row objects (see [`crate::engine::rows::rows`]).
fn json(batches: &[RecordBatch]) -> String {
    json_text(&serde_json::Value::Array(crate::engine::rows::rows(batches).into_iter().map(serde_json::Value::Object).collect()))
}

/// A query answer for people: scalar fields as `key: value` lines, lists of objects as
/// tables (identifying columns first, then by name), nested objects indented.
pub fn answer_table(answer: &serde_json::Value) -> String {
    use serde_json::Value;
    fn cell(v: &Value) -> String {
        match v {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() => format!("{f:.3}"),
                _ => n.to_string(),
            },
            other => other.to_string(),
        }
    }
    fn section(out: &mut String, key: &str, v: &Value, indent: usize) {
        let pad = " ".repeat(indent);
        match v {
            Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
                out.push_str(&format!("{pad}{key}:\n"));
                // Identifying columns first (in this order), then the rest by name.
                const FIRST: &[&str] = &[
                    "ingest_order",
                    "run_id",
                    "host",
                    "device",
                    "step",
                    "pass",
                    "name",
                    "payload_op",
                    "op_name",
                    "path",
                    "region_path",
                    "collective",
                    "family",
                    "direction",
                    "kind",
                    "candidate_id",
                    "title",
                ];
                let mut cols: Vec<String> = items.iter().flat_map(|i| i.as_object().unwrap().keys().cloned()).collect();
                cols.sort_by_key(|c| (FIRST.iter().position(|f| f == c).unwrap_or(FIRST.len()), c.clone()));
                cols.dedup();
                let cells: Vec<Vec<String>> = items.iter().map(|i| cols.iter().map(|c| cell(&i[c.as_str()])).collect()).collect();
                let widths: Vec<usize> =
                    cols.iter().enumerate().map(|(k, c)| cells.iter().map(|r| r[k].chars().count()).max().unwrap_or(0).max(c.len())).collect();
                let line = |vals: Vec<&str>| vals.iter().zip(&widths).map(|(v, w)| format!("{v:w$}")).collect::<Vec<_>>().join("  ");
                out.push_str(&format!("{pad}  {}\n", line(cols.iter().map(String::as_str).collect())));
                for r in &cells {
                    out.push_str(&format!("{pad}  {}\n", line(r.iter().map(String::as_str).collect())));
                }
            }
            Value::Array(items) if items.is_empty() => out.push_str(&format!("{pad}{key}: (none)\n")),
            Value::Array(items) => out.push_str(&format!("{pad}{key}: {}\n", items.iter().map(cell).collect::<Vec<_>>().join(", "))),
            Value::Object(map) => {
                out.push_str(&format!("{pad}{key}:\n"));
                for (k, v) in map {
                    section(out, k, v, indent + 2);
                }
            }
            other => out.push_str(&format!("{pad}{key}: {}\n", cell(other))),
        }
    }
    let mut out = String::new();
    if let Some(map) = answer.as_object() {
        // query_type and question first, then the rest in key order.
        for key in ["query_type", "question"] {
            if let Some(v) = map.get(key) {
                section(&mut out, key, v, 0);
            }
        }
        for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "query_type" && k.as_str() != "question" && k.as_str() != "sql") {
            section(&mut out, k, v, 0);
        }
        if let Some(Value::Array(sql)) = map.get("sql") {
            for q in sql {
                out.push_str(&format!("\n-- query: {}\n{}", cell(&q["query"]), cell(&q["sql"])));
            }
        }
    }
    out
}
