//! One pure function per chart: rows in, a Vega-Lite spec (`serde_json::Value`) out.
//!
//! Times are µs, as in the summary. Every mark has a tooltip with exact values; colours
//! of time categories come from one scale ([`category_scale`]) so that a colour means the
//! same thing on every chart of every page. Each function also returns how many marks it
//! draws (the page draws large charts on a canvas).

use crate::summary::doc::{Collective, DurationStats, GapBeforeOp, HotOp, PassRegion, PerDevice, SemanticFamily, StepRow, TimeBreakdown};
use crate::summary::timeline::Timeline;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A chart and how many marks it draws.
pub type Chart = (Value, usize);

const WIDTH: i64 = 900;

/// The time categories, in stacking order, and their colours.
const CATEGORIES: [(&str, &str); 9] = [
    ("compute", "#4c78a8"),
    ("communication", "#f58518"),
    ("host", "#72b7b2"),
    ("stall", "#e45756"),
    ("idle", "#bab0ac"),
    ("other", "#9d755d"),
    ("mixed", "#b279a2"),
    ("exposed", "#f58518"),
    ("overlapped", "#ffbf79"),
];

/// Step classes (`StepRow::class`, plus warm-up and steady for steps without one) and their
/// colours.
const STEP_CLASSES: [(&str, &str); 5] = [("warm-up", "#bab0ac"), ("typical", "#1d2733"), ("light", "#54a24b"), ("heavy", "#b22222"), ("steady", "#1d2733")];

/// The colour scale of the time categories a chart shows, in the order of [`CATEGORIES`],
/// so that its legend lists only those.
fn category_scale(shows: impl Fn(&str) -> bool) -> Value {
    let shown: Vec<&(&str, &str)> = CATEGORIES.iter().filter(|(name, _)| shows(name)).collect();
    json!({"domain": shown.iter().map(|c| c.0).collect::<Vec<_>>(), "range": shown.iter().map(|c| c.1).collect::<Vec<_>>()})
}

/// The before/after colour scale.
fn side_scale() -> Value {
    json!({"domain": ["before", "after"], "range": ["#8c9aa8", "#4c78a8"]})
}

/// A tooltip field of µs, 3 decimals.
fn micros(field: &str, title: &str) -> Value {
    json!({"field": field, "type": "quantitative", "title": title, "format": ",.3f"})
}

fn nominal(field: &str, title: &str) -> Value {
    json!({"field": field, "type": "nominal", "title": title})
}

fn bar_height(rows: usize) -> i64 {
    (rows as i64 * 18).clamp(60, 600)
}

/// Step time per step: stacked compute, exposed communication and idle bars, a tick at each
/// step's duration coloured by its class (the mark a test counts: one per step), warm-up
/// steps faded, the steady median and p90 as rules.
pub fn step_time(steps: &[StepRow], steady: &DurationStats) -> Chart {
    let rows: Vec<Value> = steps
        .iter()
        .map(|s| {
            let busy = s.busy_duration.unwrap_or(0.0);
            let communication = s.communication_duration.unwrap_or(0.0);
            let class = if s.warmup { "warm-up".to_string() } else { s.class.clone().unwrap_or_else(|| "steady".into()) };
            json!({
                "step": s.step, "duration": s.duration, "compute": (busy - communication).max(0.0), "communication": communication,
                "idle": s.idle_duration.unwrap_or(s.duration - busy).max(0.0), "busy": busy, "op_count": s.op_count,
                "warmup": s.warmup, "class": class,
            })
        })
        .collect();
    let rules: Vec<Value> =
        [("steady median", steady.median), ("steady p90", steady.p90)].into_iter().filter_map(|(name, v)| Some(json!({"rule": name, "value": v?}))).collect();
    let x = json!({"field": "step", "type": "ordinal", "title": "step", "axis": {"labelOverlap": "greedy"}});
    let classes: Vec<&(&str, &str)> = STEP_CLASSES.iter().filter(|(name, _)| rows.iter().any(|r| r["class"] == *name)).collect();
    let class_scale = json!({"domain": classes.iter().map(|c| c.0).collect::<Vec<_>>(), "range": classes.iter().map(|c| c.1).collect::<Vec<_>>()});
    let mut layers = vec![
        json!({
            "transform": [{"fold": ["compute", "communication", "idle"], "as": ["part", "time"]}],
            "mark": {"type": "bar"},
            "encoding": {
                "x": x, "y": {"field": "time", "type": "quantitative", "stack": "zero", "title": "time (µs)"},
                "color": {"field": "part", "type": "nominal", "scale": category_scale(|c| ["compute", "communication", "idle"].contains(&c)), "title": "part of the step"},
                "opacity": {"condition": {"test": "datum.warmup", "value": 0.35}, "value": 1},
                "tooltip": [{"field": "step", "type": "ordinal", "title": "step"}, nominal("part", "part"), micros("time", "time (µs)")]
            }
        }),
        json!({
            "mark": {"type": "tick", "thickness": 3},
            "encoding": {
                "x": x, "y": {"field": "duration", "type": "quantitative"},
                "color": {"field": "class", "type": "nominal", "title": "step class", "scale": class_scale},
                "tooltip": [
                    {"field": "step", "type": "ordinal", "title": "step"}, micros("duration", "step time (µs)"), nominal("class", "class"),
                    micros("busy", "busy (µs)"), micros("communication", "exposed communication (µs)"), micros("idle", "idle (µs)"),
                    {"field": "op_count", "type": "quantitative", "title": "ops"}
                ]
            }
        }),
    ];
    if !rules.is_empty() {
        layers.push(json!({
            "data": {"values": rules},
            "mark": {"type": "rule", "color": "#1d2733"},
            "encoding": {"y": {"field": "value", "type": "quantitative"}, "strokeDash": {"field": "rule", "type": "nominal", "title": "steady steps"},
                         "tooltip": [nominal("rule", "rule"), micros("value", "µs")]}
        }));
    }
    let spec = json!({"width": WIDTH, "height": 280, "data": {"values": rows}, "layer": layers, "resolve": {"scale": {"color": "independent"}}});
    (spec, steps.len() * 4 + 2)
}

/// The time breakdown as one 100 % bar per row label (`rows`: label and breakdown).
pub fn breakdown(rows: &[(&str, &TimeBreakdown)]) -> Chart {
    let values: Vec<Value> = rows
        .iter()
        .flat_map(|(label, tb)| {
            ["compute", "communication", "host", "stall", "other"].into_iter().filter_map(move |name| {
                let c = tb.category(name)?;
                Some(json!({"run": label, "category": name, "time": c.total_duration, "share": c.share_of_total}))
            })
        })
        .collect();
    let spec = json!({
        "width": WIDTH, "height": 34 * rows.len().max(1) as i64 + 10, "data": {"values": values},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "run", "type": "nominal", "title": null, "sort": rows.iter().map(|r| r.0).collect::<Vec<_>>()},
            "x": {"field": "time", "type": "quantitative", "stack": "normalize", "title": "share of time", "axis": {"format": "%"}},
            "color": {"field": "category", "type": "nominal", "scale": category_scale(|c| values.iter().any(|v| v["category"] == c)), "title": "category"},
            "tooltip": [nominal("run", "run"), nominal("category", "category"), micros("time", "time (µs)"), {"field": "share", "type": "quantitative", "title": "share", "format": ".2%"}]
        }
    });
    (spec, values.len())
}

/// Horizontal bars of the top `k` rows by value, largest first (ties: name).
fn top_bars(rows: Vec<Value>, value_title: &str, color: Value, tooltip: Vec<Value>) -> Chart {
    let n = rows.len();
    let spec = json!({
        "width": WIDTH - 300, "height": bar_height(n), "data": {"values": rows},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "name", "type": "nominal", "title": null, "sort": {"field": "rank", "order": "ascending"}, "axis": {"labelLimit": 300}},
            "x": {"field": "value", "type": "quantitative", "title": value_title},
            "color": color,
            "tooltip": tooltip
        }
    });
    (spec, n)
}

/// Hot ops by exclusive time, the top `k`, coloured by category.
pub fn hot_ops(ops: &[HotOp], k: usize) -> Chart {
    let rows: Vec<Value> = ops
        .iter()
        .take(k)
        .enumerate()
        .map(|(rank, o)| {
            json!({"rank": rank, "name": o.name, "value": o.exclusive_duration, "category": o.category, "count": o.count, "total": o.total_duration,
                   "avg": o.avg_duration, "shape": o.shape_signature, "scope": o.tf_op_path})
        })
        .collect();
    let tooltip = vec![
        nominal("name", "op"),
        micros("value", "self time (µs)"),
        micros("total", "total time (µs)"),
        json!({"field": "count", "type": "quantitative", "title": "count"}),
        micros("avg", "avg (µs)"),
        nominal("category", "category"),
        nominal("shape", "shape"),
        nominal("scope", "scope"),
    ];
    let color = json!({"field": "category", "type": "nominal", "scale": category_scale(|c| rows.iter().any(|v| v["category"] == c)), "title": "category"});
    top_bars(rows, "self time (µs)", color, tooltip)
}

/// Semantic families by exclusive time, the top `k`.
pub fn families(families: &[SemanticFamily], k: usize) -> Chart {
    let rows: Vec<Value> = families
        .iter()
        .take(k)
        .enumerate()
        .map(|(rank, f)| {
            json!({"rank": rank, "name": f.family, "value": f.exclusive_duration, "share": f.share_of_total, "count": f.count, "example": f.example_op,
                   "shape": f.dominant_shape_signature})
        })
        .collect();
    let tooltip = vec![
        nominal("name", "family"),
        micros("value", "self time (µs)"),
        json!({"field": "share", "type": "quantitative", "title": "share", "format": ".2%"}),
        json!({"field": "count", "type": "quantitative", "title": "count"}),
        nominal("example", "example op"),
        nominal("shape", "shape"),
    ];
    top_bars(rows, "self time (µs)", json!({"value": "#4c78a8"}), tooltip)
}

/// Named-scope regions as an icicle per pass: depth downwards, inclusive time across, each
/// region under its parent, siblings by inclusive time (ties: path). Regions whose parent
/// is not listed are left out. None when there are none.
pub fn regions(regions: &[PassRegion]) -> Option<Chart> {
    const SEP: &str = "=>";
    let mut by_pass: BTreeMap<&str, Vec<&PassRegion>> = BTreeMap::new();
    for r in regions {
        by_pass.entry(r.pass.as_deref().unwrap_or("other")).or_default().push(r);
    }
    let mut rects = Vec::new();
    for (pass, list) in by_pass {
        let mut children: BTreeMap<Option<&str>, Vec<&PassRegion>> = BTreeMap::new();
        for r in &list {
            children.entry(r.path.rsplit_once(SEP).map(|(parent, _)| parent)).or_default().push(r);
        }
        for kids in children.values_mut() {
            kids.sort_by(|a, b| b.inclusive_duration.unwrap_or(0.0).total_cmp(&a.inclusive_duration.unwrap_or(0.0)).then(a.path.cmp(&b.path)));
        }
        // From the top level down, each region starting where its elder siblings end.
        let incl = |r: &PassRegion| r.inclusive_duration.unwrap_or(0.0);
        let mut queue: Vec<(&PassRegion, f64)> = Vec::new();
        let mut x = 0.0;
        for top in children.get(&None).into_iter().flatten() {
            queue.push((top, x));
            x += incl(top);
        }
        while let Some((r, x0)) = queue.pop() {
            let inclusive = incl(r);
            let name = r.path.rsplit(SEP).next().unwrap_or(&r.path);
            rects.push(json!({"pass": pass, "path": r.path.replace(SEP, " / "), "name": name, "depth": r.depth, "x0": x0, "x1": x0 + inclusive,
                              "inclusive": inclusive, "exclusive": r.exclusive_duration, "share": r.inclusive_share, "count": r.count}));
            let mut cx = x0;
            for child in children.get(&Some(r.path.as_str())).into_iter().flatten() {
                queue.push((child, cx));
                cx += incl(child);
            }
        }
    }
    if rects.is_empty() {
        return None;
    }
    rects.sort_by(|a, b| a["pass"].as_str().cmp(&b["pass"].as_str()).then(a["path"].as_str().cmp(&b["path"].as_str())));
    let n = rects.len();
    let spec = json!({
        "data": {"values": rects},
        "facet": {"row": {"field": "pass", "type": "nominal", "title": "pass"}},
        "resolve": {"scale": {"x": "independent"}},
        "spec": {
            "width": WIDTH - 80, "height": 120,
            "layer": [
                {"mark": {"type": "bar", "stroke": "#fff", "strokeWidth": 0.5},
                 "encoding": {
                    "x": {"field": "x0", "type": "quantitative", "title": "inclusive time (µs)"}, "x2": {"field": "x1"},
                    "y": {"field": "depth", "type": "ordinal", "title": "depth"},
                    "color": {"field": "depth", "type": "ordinal", "scale": {"scheme": "blues"}, "legend": null},
                    "tooltip": [nominal("path", "region"), micros("inclusive", "inclusive (µs)"), micros("exclusive", "exclusive (µs)"),
                                {"field": "share", "type": "quantitative", "title": "share of pass", "format": ".2%"}, {"field": "count", "type": "quantitative", "title": "ops"}]
                 }},
                {"mark": {"type": "text", "align": "left", "dx": 3, "fontSize": 10, "limit": 140},
                 "transform": [{"filter": "datum.share > 0.08"}],
                 "encoding": {"x": {"field": "x0", "type": "quantitative"}, "y": {"field": "depth", "type": "ordinal"}, "text": {"field": "name"}}}
            ]
        }
    });
    Some((spec, n * 2))
}

/// The timeline of one step: a bar per op (or block of small ops) per device line.
pub fn timeline(t: &Timeline) -> Chart {
    let marks: Vec<Value> = t.marks.iter().map(|m| serde_json::to_value(m).expect("marks serialize")).collect();
    let lanes: std::collections::BTreeSet<&str> = t.marks.iter().map(|m| m.lane.as_str()).collect();
    let spec = json!({
        "width": WIDTH - 250, "height": (lanes.len() as i64 * 26).clamp(60, 600),
        "data": {"values": marks},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "lane", "type": "nominal", "title": null, "axis": {"labelLimit": 250}},
            "x": {"field": "start", "type": "quantitative", "title": format!("µs after the start of step {}", t.step)}, "x2": {"field": "end"},
            "color": {"field": "category", "type": "nominal", "scale": category_scale(|c| marks.iter().any(|v| v["category"] == c)), "title": "category"},
            "tooltip": [nominal("name", "op"), nominal("category", "category"), micros("start", "start (µs)"), micros("end", "end (µs)"),
                        {"field": "ops", "type": "quantitative", "title": "ops"}, nominal("region", "region")]
        }
    });
    (spec, t.marks.len())
}

/// Collectives per kind: exposed against overlapped time, bytes and bandwidth in the tooltip.
pub fn collectives(rows: &[(&str, &Collective)]) -> Chart {
    let values: Vec<Value> = rows
        .iter()
        .flat_map(|(run, c)| {
            [("exposed", c.exposed_duration), ("overlapped", c.overlapped_duration)].into_iter().map(move |(part, v)| {
                json!({"run": run, "kind": c.collective, "part": part, "time": v, "count": c.count, "bytes": c.bytes, "gbps": c.gbytes_per_s, "top_op": c.top_op})
            })
        })
        .collect();
    let several = rows.iter().map(|r| r.0).collect::<std::collections::BTreeSet<_>>().len() > 1;
    let mut encoding = json!({
        "y": {"field": "kind", "type": "nominal", "title": null},
        "x": {"field": "time", "type": "quantitative", "title": "time (µs)"},
        "color": {"field": "part", "type": "nominal", "scale": category_scale(|c| values.iter().any(|v| v["part"] == c)), "title": "part"},
        "tooltip": [nominal("run", "run"), nominal("kind", "collective"), nominal("part", "part"), micros("time", "time (µs)"),
                    {"field": "count", "type": "quantitative", "title": "count"}, {"field": "bytes", "type": "quantitative", "title": "bytes", "format": ","},
                    {"field": "gbps", "type": "quantitative", "title": "GB/s", "format": ".3f"}, nominal("top_op", "top op")]
    });
    if several {
        encoding["yOffset"] = json!({"field": "run", "type": "nominal", "sort": ["before", "after"]});
        encoding["opacity"] = json!({"field": "run", "type": "nominal", "scale": {"domain": ["before", "after"], "range": [0.5, 1.0]}, "title": "run"});
    }
    let spec = json!({"width": WIDTH - 300, "height": bar_height(values.len() / 2 * if several { 2 } else { 1 }), "data": {"values": values}, "mark": {"type": "bar"}, "encoding": encoding});
    (spec, values.len())
}

/// Idle gaps by the op they are attributed to (payload), the top `k` by total gap time.
pub fn gaps(gaps: &[GapBeforeOp], k: usize) -> Chart {
    let rows: Vec<Value> = gaps
        .iter()
        .take(k)
        .enumerate()
        .map(|(rank, g)| {
            json!({"rank": rank, "name": g.payload_op.clone().or(g.name.clone()), "value": g.total_gap_duration, "count": g.count,
                   "max": g.max_gap_duration, "avg": g.avg_gap_duration, "marker": g.marker_op})
        })
        .collect();
    let tooltip = vec![
        nominal("name", "payload op"),
        nominal("marker", "marker op"),
        micros("value", "total gap (µs)"),
        json!({"field": "count", "type": "quantitative", "title": "gaps"}),
        micros("max", "max gap (µs)"),
        micros("avg", "avg gap (µs)"),
    ];
    top_bars(rows, "idle time before the op (µs)", json!({"value": "#bab0ac"}), tooltip)
}

/// Per-device skew: mean and largest lag behind the fastest device of each steady step.
pub fn skew(devices: &[PerDevice]) -> Chart {
    let values: Vec<Value> = devices
        .iter()
        .flat_map(|d| {
            let name = format!("{} · {}", d.host.as_deref().unwrap_or(""), d.device.as_deref().unwrap_or(""));
            [("mean lag", d.avg_lag_duration), ("max lag", d.max_lag_duration)].into_iter().map(
                move |(what, v)| json!({"device": name, "what": what, "lag": v, "active": d.avg_active_duration, "slowest": d.times_slowest, "steps": d.steps}),
            )
        })
        .collect();
    let spec = json!({
        "width": WIDTH - 300, "height": bar_height(values.len()), "data": {"values": values},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "device", "type": "nominal", "title": null},
            "yOffset": {"field": "what", "type": "nominal"},
            "x": {"field": "lag", "type": "quantitative", "title": "lag behind the fastest device (µs)"},
            "color": {"field": "what", "type": "nominal", "scale": {"domain": ["mean lag", "max lag"], "range": ["#4c78a8", "#b22222"]}, "title": null},
            "tooltip": [nominal("device", "device"), nominal("what", "lag"), micros("lag", "lag (µs)"), micros("active", "mean active time (µs)"),
                        {"field": "slowest", "type": "quantitative", "title": "times slowest"}, {"field": "steps", "type": "quantitative", "title": "steps"}]
        }
    });
    (spec, values.len())
}

/// Step times of two runs on one axis, and box plots of their steady steps.
pub fn step_series(before: &[StepRow], after: &[StepRow]) -> Chart {
    let rows: Vec<Value> = [("before", before), ("after", after)]
        .into_iter()
        .flat_map(|(side, steps)| steps.iter().map(move |s| json!({"run": side, "step": s.step, "duration": s.duration, "steady": !s.warmup})))
        .collect();
    let color = json!({"field": "run", "type": "nominal", "scale": side_scale(), "title": "run"});
    let spec = json!({
        "data": {"values": rows},
        "hconcat": [
            {"width": WIDTH - 330, "height": 260,
             "layer": [
                {"mark": {"type": "line", "strokeWidth": 1}, "encoding": {"x": {"field": "step", "type": "quantitative", "title": "step", "axis": {"tickMinStep": 1, "format": "d"}},
                                                           "y": {"field": "duration", "type": "quantitative", "title": "step time (µs)"}, "color": color}},
                {"mark": {"type": "point", "filled": true},
                 "encoding": {"x": {"field": "step", "type": "quantitative"}, "y": {"field": "duration", "type": "quantitative"}, "color": color,
                              "opacity": {"condition": {"test": "datum.steady", "value": 1}, "value": 0.35},
                              "tooltip": [nominal("run", "run"), {"field": "step", "type": "quantitative", "title": "step"}, micros("duration", "step time (µs)"),
                                          {"field": "steady", "type": "nominal", "title": "steady"}]}}
             ]},
            {"width": 160, "height": 260, "transform": [{"filter": "datum.steady"}],
             "mark": {"type": "boxplot", "extent": "min-max"},
             "encoding": {"x": {"field": "run", "type": "nominal", "sort": ["before", "after"], "title": "steady steps"},
                          "y": {"field": "duration", "type": "quantitative", "title": "step time (µs)"}, "color": color}}
        ]
    });
    (spec, rows.len() * 2 + 10)
}

/// Diverging horizontal bars of deltas (µs per step, or as given): worse (positive) red,
/// better green, largest magnitude first. `rows`: name, delta, and a note (`appeared`...).
pub fn deltas(rows: &[(String, f64, String)], value_title: &str) -> Chart {
    let values: Vec<Value> = rows
        .iter()
        .enumerate()
        .map(|(rank, (name, delta, note))| json!({"rank": rank, "name": name, "delta": delta, "note": note, "direction": if *delta > 0.0 { "slower" } else { "faster" }}))
        .collect();
    let spec = json!({
        "width": WIDTH - 340, "height": bar_height(values.len()), "data": {"values": values},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "name", "type": "nominal", "title": null, "sort": {"field": "rank", "order": "ascending"}, "axis": {"labelLimit": 320}},
            "x": {"field": "delta", "type": "quantitative", "title": value_title},
            "color": {"field": "direction", "type": "nominal", "scale": {"domain": ["slower", "faster"], "range": ["#d62728", "#2ca02c"]}, "title": null},
            "tooltip": [nominal("name", "name"), micros("delta", value_title), nominal("note", "note")]
        }
    });
    (spec, rows.len())
}

/// Trends across runs: one line per measure (`rows`: run order, run id, measure, value),
/// one panel per measure, each with its own y axis.
pub fn trends(rows: &[(i64, String, &str, Option<f64>)], measures: &[&str]) -> Chart {
    let values: Vec<Value> = rows.iter().map(|(order, run, measure, v)| json!({"order": order, "run": run, "measure": measure, "value": v})).collect();
    let spec = json!({
        "data": {"values": values},
        "facet": {"row": {"field": "measure", "type": "nominal", "title": null, "sort": measures}},
        "resolve": {"scale": {"y": "independent"}},
        "spec": {
            "width": WIDTH - 120, "height": 140,
            "layer": [
                {"mark": {"type": "line"}, "encoding": {"x": {"field": "order", "type": "quantitative", "title": "run (ingest order)", "axis": {"tickMinStep": 1}},
                                                       "y": {"field": "value", "type": "quantitative", "title": null}}},
                {"mark": {"type": "point", "filled": true},
                 "encoding": {"x": {"field": "order", "type": "quantitative"}, "y": {"field": "value", "type": "quantitative"},
                              "tooltip": [{"field": "order", "type": "quantitative", "title": "ingest order"}, nominal("run", "run"), nominal("measure", "measure"),
                                          {"field": "value", "type": "quantitative", "title": "value", "format": ",.4~f"}]}}
            ]
        }
    });
    (spec, rows.len() * 2)
}
