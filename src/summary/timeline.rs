//! The timeline of one step, as a picture can hold it: the step's ops per device line
//! (`queries/step_timeline.sql`), with runs of ops too narrow to see merged into blocks so
//! that a chart stays within a mark budget.

use crate::engine::analyst::Analyst;
use crate::engine::rows::Row;
use crate::engine::QueryError;
use serde::Serialize;
use serde_json::Value;

/// One bar of the timeline (µs after the step's start): an op, or a block of `ops`
/// consecutive narrow ops of one line (named "N small ops").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mark {
    /// `host · device · line`.
    pub lane: String,
    pub name: String,
    pub category: String,
    pub region: String,
    pub start: f64,
    pub end: f64,
    pub ops: i64,
}

/// The timeline of a step: its marks, and how many ops they stand for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timeline {
    pub step: i64,
    pub marks: Vec<Mark>,
    /// Ops the query returned (at most `max_ops`); more than marks when some were merged.
    pub ops: usize,
    /// Whether the step had more ops than `max_ops` (the latest were left out).
    pub truncated: bool,
}

/// Ops read at most for one step's timeline.
pub const MAX_OPS: usize = 20_000;
/// Marks drawn at most.
pub const MAX_MARKS: usize = 5_000;

/// The timeline of step `step` of the analyst's run.
pub async fn of_step(a: &Analyst<'_>, step: i64) -> Result<Timeline, QueryError> {
    let rows = a.rows("step_timeline", &[("step", step.to_string()), ("max_ops", (MAX_OPS + 1).to_string())]).await?;
    let truncated = rows.len() > MAX_OPS;
    let text = |r: &Row, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let num = |r: &Row, k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let ops: Vec<Mark> = rows
        .iter()
        .take(MAX_OPS)
        .map(|r| {
            let start = num(r, "offset_ns") / 1000.0;
            Mark {
                lane: format!("{} · {} · {}", text(r, "host"), text(r, "device"), text(r, "line")),
                name: text(r, "hlo_op"),
                category: text(r, "category"),
                region: text(r, "region_path"),
                start,
                end: start + num(r, "dur_ns") / 1000.0,
                ops: 1,
            }
        })
        .collect();
    let n = ops.len();
    Ok(Timeline { step, marks: merge(ops, MAX_MARKS), ops: n, truncated })
}

/// Ops (any order) as at most about `budget` marks. With more ops than that, per lane in
/// start order, consecutive ops narrower than w = span / `budget` that start within w of the
/// previous one's end become one block ("N small ops"), up to 4·w wide; wider ops stay as
/// they are. Sorted by lane, start, name.
pub fn merge(mut ops: Vec<Mark>, budget: usize) -> Vec<Mark> {
    ops.sort_by(|a, b| a.lane.cmp(&b.lane).then(a.start.total_cmp(&b.start)).then(a.name.cmp(&b.name)));
    if ops.len() <= budget {
        return ops;
    }
    let lo = ops.iter().map(|m| m.start).fold(f64::INFINITY, f64::min);
    let hi = ops.iter().map(|m| m.end).fold(f64::NEG_INFINITY, f64::max);
    let w = (hi - lo) / budget.max(1) as f64;
    // Each mark, and whether it is narrow (an op, or a block of them) so that more may join.
    let mut out: Vec<(Mark, bool)> = Vec::new();
    for op in ops {
        let narrow = op.end - op.start < w;
        match out.last_mut() {
            Some((block, true)) if narrow && block.lane == op.lane && op.start - block.end <= w && op.end - block.start < 4.0 * w => {
                block.end = block.end.max(op.end);
                block.ops += 1;
                block.name = format!("{} small ops", block.ops);
                if block.category != op.category {
                    block.category = "mixed".into();
                }
                block.region.clear();
            }
            _ => out.push((op, narrow)),
        }
    }
    out.into_iter().map(|(m, _)| m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(lane: &str, name: &str, start: f64, end: f64) -> Mark {
        Mark { lane: lane.into(), name: name.into(), category: "compute".into(), region: String::new(), start, end, ops: 1 }
    }

    #[test]
    fn narrow_ops_merge_per_lane_and_wide_ones_stay() {
        let mut ops: Vec<Mark> = (0..100).map(|i| op("a", &format!("k{i}"), i as f64, i as f64 + 0.5)).collect();
        ops.push(op("a", "big", 100.0, 1000.0));
        ops.extend((0..100).map(|i| op("b", &format!("k{i}"), i as f64, i as f64 + 0.5)));
        let marks = merge(ops, 20);
        assert!(marks.len() <= 40, "{}", marks.len());
        assert_eq!(marks.iter().map(|m| m.ops).sum::<i64>(), 201);
        assert!(marks.iter().any(|m| m.name == "big" && m.ops == 1));
        assert!(marks.iter().all(|m| m.lane == "a" || m.lane == "b"));
        let few = merge(vec![op("a", "x", 1.0, 2.0), op("a", "y", 0.0, 1.0)], 20);
        assert_eq!(few.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["y", "x"]);
    }
}
