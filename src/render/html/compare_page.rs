//! The HTML page of a before/after comparison: the verdict with its noise test, step-time
//! distributions, the breakdown of both runs, then where the difference comes from (ops,
//! regions, families, collectives) as diverging bars.

use super::{charts, duration, esc, thousands, Cell, Page};
use crate::summary::doc::Summary;
use serde_json::Value;

/// The page of `comparison` (what `profq compare` prints as JSON) and the summaries of its
/// two sides.
pub fn page(comparison: &Value, before: &Summary, after: &Summary, top_k: usize) -> String {
    let label = |s: &Summary, key: &str| {
        s.run_metadata
            .run_id
            .clone()
            .filter(|r| !r.is_empty())
            .or_else(|| comparison[key].as_str().map(str::to_string))
            .unwrap_or_else(|| s.source_path.clone())
    };
    let (b, a) = (label(before, "before_source"), label(after, "after_source"));
    let mut p = Page::new(
        &format!("profq compare · {b} → {a}"),
        &format!("before: {b} · after: {a} · comparison level: {}", comparison["profq_comparison_level"].as_str().unwrap_or("summary")),
    );

    verdict(&mut p, comparison);

    p.section("Step time, before and after", Some("Every step of both runs (warm-up faded), and box plots of the steady steps."));
    if before.profq_steps.is_empty() || after.profq_steps.is_empty() {
        p.note("A side has no per-step series (a summary without it, or no steps): only the statistics above compare.");
    } else {
        let (spec, marks) = charts::step_series(&before.profq_steps, &after.profq_steps);
        p.chart("step_series", spec, marks);
    }

    p.section("Time breakdown, before and after", None);
    let (spec, marks) = charts::breakdown(&[("before", &before.time_breakdown), ("after", &after.time_breakdown)]);
    p.chart("breakdown", spec, marks);
    let shares = &comparison["time_breakdown_share_delta"];
    if let Some(map) = shares.as_object() {
        let rows = map.iter().map(|(k, v)| vec![Cell::text(k.clone()), Cell::Num(v.as_f64().map(|d| d * 100.0), 2)]).collect();
        p.table("share_delta", &["category", "share change (points)"], rows);
    }

    p.section("Op deltas", Some("Self time per step, after minus before: red got slower, green faster; appeared and disappeared ops are named so."));
    let ops = op_deltas(comparison, top_k);
    if ops.is_empty() {
        p.note("No op changed.");
    } else {
        let (spec, marks) = charts::deltas(&ops, "Δ self time (µs per step)");
        p.chart("op_deltas", spec, marks);
    }

    p.section("Region deltas", Some("Named-scope regions by pass, op self time per step, after minus before."));
    let regions: Vec<(String, f64, String)> = comparison["profq_regions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some((format!("{} · {}", r["pass"].as_str()?, r["path"].as_str()?), r["delta_us"].as_f64()?, pct_note(&r["delta_pct"]))))
        .filter(|r| r.1 != 0.0)
        .take(top_k)
        .collect();
    if regions.is_empty() {
        p.note("No region deltas (none changed, or a side is a summary file).");
    } else {
        let (spec, marks) = charts::deltas(&regions, "Δ self time (µs per step)");
        p.chart("region_deltas", spec, marks);
    }

    p.section("Family deltas", Some("Semantic families, exclusive time after minus before; the tooltip's note has time per unit of work."));
    let families: Vec<(String, f64, String)> = comparison["semantic_family_delta"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let note = match f["time_per_flop_regression_pct"].as_f64() {
                Some(x) => format!("time per flop proxy {x:+.1}%"),
                None => String::new(),
            };
            Some((f["family"].as_str()?.to_string(), f["exclusive_duration_delta"].as_f64()?, note))
        })
        .filter(|f| f.1 != 0.0)
        .take(top_k)
        .collect();
    if families.is_empty() {
        p.note("No family changed.");
    } else {
        let (spec, marks) = charts::deltas(&families, "Δ exclusive time (µs)");
        p.chart("family_deltas", spec, marks);
    }

    p.section("Collectives, before and after", Some("Exposed against overlapped time per kind; faded bars are the before run."));
    let collectives: Vec<(&str, &_)> =
        before.profq_collectives.iter().map(|c| ("before", c)).chain(after.profq_collectives.iter().map(|c| ("after", c))).collect();
    if collectives.is_empty() {
        p.note("No collectives in either run.");
    } else {
        let (spec, marks) = charts::collectives(&collectives);
        p.chart("collective_deltas", spec, marks);
    }
    p.finish()
}

fn pct_note(v: &Value) -> String {
    v.as_f64().map_or_else(String::new, |x| format!("{x:+.1}%"))
}

/// Op deltas, largest change first (ties: name): from the full tables when the comparison
/// has them, else the summary-level regressed and improved ops.
fn op_deltas(comparison: &Value, top_k: usize) -> Vec<(String, f64, String)> {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let mut rows: Vec<(String, f64, String)> = if comparison["profq_ops"].is_object() {
        let o = &comparison["profq_ops"];
        [list(&o["changed"]), list(&o["appeared"]), list(&o["disappeared"])]
            .concat()
            .iter()
            .filter_map(|r| {
                let name = r["name_after"].as_str().or(r["name_before"].as_str())?.to_string();
                let kind = r["match_kind"].as_str().unwrap_or("");
                let note = match kind {
                    "appeared" | "disappeared" => kind.to_string(),
                    _ => pct_note(&r["delta_pct"]),
                };
                Some((name, r["delta_us"].as_f64()?, note))
            })
            .collect()
    } else {
        [list(&comparison["regressed_ops"]), list(&comparison["improved_ops"])]
            .concat()
            .iter()
            .filter_map(|r| Some((r["name"].as_str()?.to_string(), r["delta"].as_f64()?, String::new())))
            .collect()
    };
    rows.retain(|r| r.1 != 0.0);
    rows.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()).then(x.0.cmp(&y.0)));
    rows.dedup_by(|x, y| x.0 == y.0);
    rows.truncate(top_k);
    rows
}

/// The verdict banner: the noise test when both sides had tables, the step medians always,
/// and the provenance checks.
fn verdict(p: &mut Page, c: &Value) {
    p.section("Verdict", None);
    let noise = &c["profq_step_noise"];
    let st = &c["step_time"];
    let verdict = noise["verdict"].as_str().unwrap_or("unknown");
    let headline = match verdict {
        "improved" => "Faster: the steady step time improved beyond noise",
        "regressed" => "Slower: the steady step time regressed beyond noise",
        "within noise" => "No significant change: within noise",
        "insufficient steps" => "No noise test: too few steady steps",
        _ => "No noise test: a side is a summary file",
    };
    let class = verdict.replace(' ', "_");
    p.raw(&format!("<div class=\"verdict {}\" data-verdict=\"{}\">{}</div>", esc(&class), esc(verdict), esc(headline)));
    let num = |v: &Value| v.as_f64();
    p.kpis(&[
        ("median_before_us", "steady median before", duration(num(&st["steady_state_median_before"])), num(&st["steady_state_median_before"])),
        ("median_after_us", "steady median after", duration(num(&st["steady_state_median_after"])), num(&st["steady_state_median_after"])),
        ("median_delta_us", "median change", duration(num(&st["steady_state_median_delta"])), num(&st["steady_state_median_delta"])),
        ("median_delta_pct", "median change %", num(&noise["median_delta_pct"]).map_or("n/a".into(), |x| format!("{x:+.2}%")), num(&noise["median_delta_pct"])),
        (
            "ci95",
            "95% CI of the change",
            match (num(&noise["ci95_low"]), num(&noise["ci95_high"])) {
                (Some(lo), Some(hi)) => format!("{} … {} µs", thousands(lo, 1), thousands(hi, 1)),
                _ => "n/a".into(),
            },
            None,
        ),
        ("mann_whitney_p", "Mann-Whitney p", num(&noise["mann_whitney_p"]).map_or("n/a".into(), |x| format!("{x:.4}")), num(&noise["mann_whitney_p"])),
    ]);
    if let Some(method) = noise["method"].as_str() {
        p.note(&format!("Steady steps: {} before, {} after. {method}.", noise["n_before"], noise["n_after"]));
    }
    let checks = &c["provenance_checks"];
    let messages: Vec<&str> = checks["messages"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    p.note(&format!(
        "Provenance checks: {}{}",
        checks["status"].as_str().unwrap_or("n/a"),
        if messages.is_empty() { String::new() } else { format!(" — {}", messages.join(" ")) }
    ));
}
