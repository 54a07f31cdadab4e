//! The HTML pages without a browser: byte-stable, offline by construction (CSP, no external
//! `src`/`href`), every chart spec parses, the KPI strip holds the summary's numbers, and a
//! page stays within its 2 MB budget. `tests/browser.rs` checks that the pages render.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

const BUDGET: usize = 2 * 1024 * 1024;

fn run_ok(args: &[&str]) -> String {
    let o = profq(args);
    assert!(o.status.success(), "profq {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// The page's text outside its `<script>` elements (the inlined libraries hold URL strings
/// that are not attributes).
fn markup(page: &str) -> String {
    let mut out = String::new();
    let mut rest = page;
    while let Some(start) = rest.find("<script") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("</script>").map(|e| start + e + "</script>".len()).expect("closed script");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The chart specs of a page, parsed, in order.
fn specs(page: &str) -> Vec<Value> {
    let open = "<script type=\"application/json\" id=\"spec-";
    page.match_indices(open)
        .map(|(at, _)| {
            let body_start = at + page[at..].find('>').unwrap() + 1;
            let body_end = body_start + page[body_start..].find("</script>").unwrap();
            serde_json::from_str(&page[body_start..body_end]).unwrap_or_else(|e| panic!("spec at {at} does not parse: {e}"))
        })
        .collect()
}

/// The checks every page passes: size, CSP, no external references, specs that parse and
/// match the chart count the page declares. Returns the specs.
fn check_page(page: &str, what: &str) -> Vec<Value> {
    assert!(page.len() <= BUDGET, "{what}: {} bytes over the 2 MB budget", page.len());
    assert!(page.contains(&format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">", profq::render::html::CSP)), "{what}: CSP");
    let markup = markup(page);
    for attr in ["src=", "href="] {
        assert!(!markup.contains(attr), "{what}: a {attr} attribute outside scripts");
    }
    for tag in markup.match_indices('<').map(|(i, _)| &markup[i..markup[i..].find('>').map_or(markup.len(), |e| i + e)]) {
        assert!(!tag.contains("http://") && !tag.contains("https://"), "{what}: external reference in {tag}");
    }
    let specs = specs(page);
    let declared: usize = page.split("<main data-charts=\"").nth(1).and_then(|r| r.split('"').next()).and_then(|n| n.parse().ok()).expect("data-charts");
    assert_eq!(specs.len(), declared, "{what}: one spec per chart");
    assert_eq!(page.matches("data-profq-chart=\"spec-").count(), declared, "{what}: one chart element per spec");
    for spec in &specs {
        assert!(spec.get("data").is_some() || spec.get("layer").is_some(), "{what}: a spec without data");
    }
    specs
}

/// The value the KPI `key` holds (`data-value`).
fn kpi(page: &str, key: &str) -> Option<f64> {
    let at = page.find(&format!("data-kpi=\"{key}\""))?;
    let tag = &page[at..at + page[at..].find('>').unwrap()];
    tag.split("data-value=\"").nth(1)?.split('"').next()?.parse().ok()
}

fn close(a: Option<f64>, b: Option<f64>, what: &str) {
    match (a, b) {
        (Some(x), Some(y)) => assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "{what}: {x} != {y}"),
        (x, y) => assert_eq!(x.is_some(), y.is_some(), "{what}: {x:?} vs {y:?}"),
    }
}

#[test]
fn a_report_page_holds_the_summary_and_is_byte_stable() {
    let dir = temp_dir("html-report");
    let input = jax_cpu("transformer_lm");
    let summary = dir.join("s.json");
    run_ok(&["summarize", input.to_str().unwrap(), "--output", summary.to_str().unwrap()]);
    let doc = read_json(&summary);
    let from_summary = |name: &str| {
        let out = dir.join(name);
        run_ok(&["report", "--summary", summary.to_str().unwrap(), "--output", out.to_str().unwrap()]);
        std::fs::read_to_string(out).unwrap()
    };
    let (a, b) = (from_summary("a.html"), from_summary("b.html"));
    assert!(a == b, "the same summary gives the same bytes");
    let specs = check_page(&a, "report from a summary");
    assert_eq!(specs.len(), 6, "step time, breakdown, hot ops, families, regions, gaps");
    assert!(a.contains("The timeline needs the run&#39;s tables"), "a summary alone says why it has no timeline");

    let steady = &doc["step_time"]["steady_state_steps"];
    close(kpi(&a, "steady_median_us"), steady["median"].as_f64(), "median");
    close(kpi(&a, "steady_p90_us"), steady["p90"].as_f64(), "p90");
    close(kpi(&a, "steady_steps"), steady["count"].as_f64(), "steady steps");
    close(kpi(&a, "compute_share"), doc["time_breakdown"]["compute"]["share_of_total"].as_f64(), "compute share");
    close(kpi(&a, "idle_share"), doc["profq_device_idle"]["avg_idle_share"].as_f64(), "idle share");

    // The step chart's rows are the summary's steps.
    let steps: Vec<(i64, f64)> =
        doc["profq_steps"].as_array().unwrap().iter().map(|s| (s["step"].as_i64().unwrap(), s["duration"].as_f64().unwrap())).collect();
    assert_eq!(steps.len() as i64, doc["step_time"]["all_steps"]["count"].as_i64().unwrap());
    let drawn: Vec<(i64, f64)> =
        specs[0]["data"]["values"].as_array().unwrap().iter().map(|r| (r["step"].as_i64().unwrap(), r["duration"].as_f64().unwrap())).collect();
    assert_eq!(drawn, steps);

    // From the profile itself, the representative step's timeline is drawn too.
    let out = dir.join("input.html");
    run_ok(&["report", input.to_str().unwrap(), "--format", "html", "--output", out.to_str().unwrap()]);
    let page = std::fs::read_to_string(out).unwrap();
    let specs = check_page(&page, "report from the profile");
    assert_eq!(specs.len(), 7);
    let timeline = specs.iter().find(|s| s["encoding"]["y"]["field"] == "lane").expect("a timeline chart");
    let step = doc["step_time"]["classes"][0]["representative_step"].as_i64().unwrap();
    assert!(timeline["encoding"]["x"]["title"].as_str().unwrap().ends_with(&format!("step {step}")));
    assert!(!timeline["data"]["values"].as_array().unwrap().is_empty());
}

#[test]
fn compare_trends_and_bundle_pages() {
    let dir = temp_dir("html-pages");
    let (before, after) = (jax_cpu("mlp_before"), jax_cpu("mlp_after"));
    let compare_page = |name: &str| {
        let out = dir.join(name);
        run_ok(&["compare", "--before", before.to_str().unwrap(), "--after", after.to_str().unwrap(), "--format", "html", "--output", out.to_str().unwrap()]);
        std::fs::read_to_string(out).unwrap()
    };
    let (a, b) = (compare_page("a.html"), compare_page("b.html"));
    assert!(a == b, "a comparison page is byte-stable");
    let specs = check_page(&a, "compare");
    assert_eq!(specs.len(), 5, "step series, breakdown, op, region and family deltas");
    assert!(a.contains("data-verdict=\"improved\""));
    let comparison: Value = serde_json::from_str(&run_ok(&["compare", "--before", before.to_str().unwrap(), "--after", after.to_str().unwrap()])).unwrap();
    close(kpi(&a, "median_delta_us"), comparison["step_time"]["steady_state_median_delta"].as_f64(), "median delta");
    close(kpi(&a, "mann_whitney_p"), comparison["profq_step_noise"]["mann_whitney_p"].as_f64(), "p");

    let store = dir.join("store");
    ingest(&store, &before, "before");
    ingest(&store, &after, "after");
    let trends = dir.join("trends.html");
    run_ok(&["report", "--store", store.to_str().unwrap(), "--trends", "--output", trends.to_str().unwrap()]);
    let page = std::fs::read_to_string(&trends).unwrap();
    let specs = check_page(&page, "trends");
    let runs: std::collections::BTreeSet<&str> = specs[0]["data"]["values"].as_array().unwrap().iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(runs.into_iter().collect::<Vec<_>>(), ["after", "before"]);
    let o = profq(&["report", "--store", store.to_str().unwrap(), "--trends"]);
    assert_eq!(o.status.code(), Some(2), "trends are a page: markdown is refused");
    assert!(stderr(&o).contains("--format html"), "{}", stderr(&o));

    let bundle = dir.join("bundle");
    run_ok(&["bundle", "--before", "before", "--after", "after", "--store", store.to_str().unwrap(), "--output-dir", bundle.to_str().unwrap()]);
    for name in ["before.report.html", "after.report.html", "compare.html"] {
        check_page(&std::fs::read_to_string(bundle.join(name)).unwrap(), name);
    }
}

#[test]
fn a_summary_without_steps_says_so() {
    let dir = temp_dir("html-nosteps");
    // The reference tool's summary (no profq_steps): the page says why there is no step chart.
    let seed = jax_cpu("transformer_lm").join("seed");
    let Some(file) = std::fs::read_dir(&seed).unwrap().flatten().map(|e| e.path()).find(|p| is_summary(p)) else {
        panic!("no reference summary under {}", seed.display())
    };
    let out = dir.join("seed.html");
    run_ok(&["report", "--summary", file.to_str().unwrap(), "--format", "html", "--output", out.to_str().unwrap()]);
    let page = std::fs::read_to_string(out).unwrap();
    check_page(&page, "reference summary");
    assert!(page.contains("This summary has no per-step series"));
}

fn is_summary(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "json") && std::fs::read_to_string(p).is_ok_and(|t| t.contains("\"profile_summary.v1\""))
}
