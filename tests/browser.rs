//! The HTML pages in a real browser: Debian's `chromium-headless-shell`, run as a subprocess
//! (`$PROFQ_CHROMIUM`, else `chromium-headless-shell` or `chromium` on PATH; missing, the
//! tests are skipped, except under CI=true where they fail).
//!
//! `--dump-dom` gives the page after its scripts ran and `--enable-logging=stderr --v=0`
//! puts every console message, JS error and CSP violation on stderr as a `:CONSOLE` line:
//! a page passes with none, `data-profq-status="ok"`, and every chart rendered. The SVG
//! renderer labels each mark with its data (`aria-label`), so the tests check that the
//! summary's numbers were drawn. A screenshot of each page lands in `target/browser/` for
//! people to look at (not compared).

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser to drive, if any.
fn browser() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PROFQ_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let found = ["chromium-headless-shell", "chromium"]
        .into_iter()
        .find_map(|name| std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file())));
    if found.is_none() && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("no headless Chromium (CI requires it: apt-get install chromium-headless-shell)");
    }
    found
}

struct Rendered {
    dom: String,
    console: Vec<String>,
}

/// The page after its scripts ran, and the console lines it caused; a screenshot is saved as
/// `target/browser/<name>.png`.
fn render(chromium: &Path, page: &Path, name: &str) -> Rendered {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let common = ["--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=10000"];
    let o = Command::new(chromium).args(common).args(["--enable-logging=stderr", "--v=0", "--dump-dom", &url]).output().expect("run chromium");
    assert!(o.status.success(), "chromium on {name}: {}", String::from_utf8_lossy(&o.stderr));
    let console = String::from_utf8_lossy(&o.stderr).lines().filter(|l| l.contains(":CONSOLE")).map(str::to_string).collect();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("browser");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = format!("--screenshot={}", shots.join(format!("{name}.png")).display());
    let s = Command::new(chromium).args(common).args(["--window-size=1280,3600", &shot, &url]).output().expect("run chromium");
    assert!(s.status.success(), "screenshot of {name}");
    Rendered { dom: String::from_utf8_lossy(&o.stdout).into_owned(), console }
}

/// A page rendered clean: no console line, status ok, all its charts drawn.
fn assert_clean(r: &Rendered, page: &str, name: &str) {
    assert!(r.console.is_empty(), "{name}: console lines:\n{}", r.console.join("\n"));
    let html_tag = &r.dom[r.dom.find("<html").unwrap()..];
    let html_tag = &html_tag[..html_tag.find('>').unwrap()];
    assert!(html_tag.contains("data-profq-status=\"ok\""), "{name}: {html_tag}");
    let charts = page.matches("data-profq-chart=\"spec-").count();
    assert!(charts > 0, "{name}: a page without charts");
    assert!(html_tag.contains(&format!("data-profq-charts=\"{charts}\"")), "{name}: {html_tag}");
    assert_eq!(r.dom.matches("data-profq-rendered=\"true\"").count(), charts, "{name}: every chart rendered");
}

/// The aria-labels of the marks whose label starts with `prefix`, unescaped.
fn labels(dom: &str, prefix: &str) -> Vec<String> {
    let unescape = |s: &str| s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&");
    dom.split("aria-label=\"").skip(1).map(|rest| unescape(&rest[..rest.find('"').unwrap()])).filter(|l| l.starts_with(prefix)).collect()
}

/// A field of an aria-label (`key: value; ...`).
fn field<'a>(label: &'a str, key: &str) -> Option<&'a str> {
    label.split("; ").find_map(|part| part.strip_prefix(key)?.strip_prefix(": "))
}

fn write_report(dir: &Path, input: &Path, name: &str) -> (PathBuf, String, Value) {
    let out = dir.join(format!("{name}.html"));
    let o = profq(&["report", input.to_str().unwrap(), "--format", "html", "--output", out.to_str().unwrap()]);
    assert!(o.status.success(), "report {name}: {}", stderr(&o));
    let page = std::fs::read_to_string(&out).unwrap();
    (out, page, summarize(input, &[]))
}

#[test]
fn run_reports_render_clean_and_draw_the_summary() {
    let Some(chromium) = browser() else { return };
    let dir = temp_dir("browser-reports");
    let inputs = [
        ("jax_cpu_transformer_lm", jax_cpu("transformer_lm")),
        ("jax_cpu_multi_device_dp", jax_cpu("multi_device_dp")),
        ("jax_gpu_transformer_lm", jax_gpu("transformer_lm")),
        ("kineto_torch_mlp_h100", repo().join("tests/data/kineto/torch_mlp_h100.pt.trace.json.gz")),
    ];
    for (name, input) in inputs {
        let (file, page, doc) = write_report(&dir, &input, name);
        let r = render(&chromium, &file, name);
        assert_clean(&r, &page, name);

        // One tick per step, labelled with its number and the summary's duration.
        let steps = doc["profq_steps"].as_array().unwrap();
        let ticks: Vec<String> = labels(&r.dom, "step: ").into_iter().filter(|l| l.contains("step time (µs)")).collect();
        assert_eq!(ticks.len(), steps.len(), "{name}: one step mark per step");
        for s in steps {
            let step = s["step"].as_i64().unwrap().to_string();
            let tick = ticks.iter().find(|l| field(l, "step") == Some(step.as_str())).unwrap_or_else(|| panic!("{name}: no mark for step {step}"));
            let drawn: f64 = field(tick, "duration").unwrap().parse().unwrap();
            let want = s["duration"].as_f64().unwrap();
            assert!((drawn - want).abs() <= 1e-6 * want.max(1.0), "{name}: step {step} drawn {drawn}, summary {want}");
        }

        // The hot-op bars are the summary's top 10, with their self time.
        let bars: Vec<String> = labels(&r.dom, "self time (µs): ").into_iter().filter(|l| field(l, "op").is_some()).collect();
        let top: Vec<&Value> = doc["hot_ops"].as_array().unwrap().iter().take(10).collect();
        assert_eq!(bars.len(), top.len(), "{name}: hot-op bars");
        for op in top {
            let op_name = op["name"].as_str().unwrap();
            let bar = bars.iter().find(|l| field(l, "op") == Some(op_name)).unwrap_or_else(|| panic!("{name}: no bar for {op_name}"));
            let drawn: f64 = field(bar, "self time (µs)").unwrap().parse().unwrap();
            let want = op["exclusive_duration"].as_f64().unwrap();
            assert!((drawn - want).abs() <= 1e-6 * want.max(1.0), "{name}: {op_name} drawn {drawn}, summary {want}");
        }

        if doc["profq_per_device"].as_array().unwrap().len() > 1 {
            assert!(page.contains("data-chart-name=\"skew\""), "{name}: several devices draw the skew chart");
        }
    }
}

#[test]
fn comparison_and_trend_pages_render_clean() {
    let Some(chromium) = browser() else { return };
    let dir = temp_dir("browser-compare");
    for (name, before, after, verdict) in
        [("compare_mlp_change", "mlp_before", "mlp_after", "improved"), ("compare_mlp_repeat", "mlp_train", "mlp_train_repeat", "within noise")]
    {
        let out = dir.join(format!("{name}.html"));
        let (b, a) = (jax_cpu(before), jax_cpu(after));
        let o = profq(&["compare", "--before", b.to_str().unwrap(), "--after", a.to_str().unwrap(), "--format", "html", "--output", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let page = std::fs::read_to_string(&out).unwrap();
        let r = render(&chromium, &out, name);
        assert_clean(&r, &page, name);
        assert!(r.dom.contains(&format!("data-verdict=\"{verdict}\"")), "{name}: verdict {verdict}");
        // Every step of both runs is a point.
        let steps = |input: &Path| summarize(input, &[])["profq_steps"].as_array().unwrap().len();
        let points = labels(&r.dom, "step: ").into_iter().filter(|l| field(l, "run").is_some() && field(l, "steady").is_some()).count();
        assert_eq!(points, steps(&b) + steps(&a), "{name}: one point per step of each run");
    }

    let store = dir.join("store");
    ingest(&store, &jax_cpu("mlp_before"), "before");
    ingest(&store, &jax_cpu("mlp_after"), "after");
    let out = dir.join("trends.html");
    let o = profq(&["report", "--store", store.to_str().unwrap(), "--trends", "--output", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = render(&chromium, &out, "trends");
    assert_clean(&r, &std::fs::read_to_string(&out).unwrap(), "trends");
}

/// The self-check is not vacuous: a chart that fails to render marks the page as an error.
#[test]
fn a_broken_chart_marks_the_page_as_failed() {
    let Some(chromium) = browser() else { return };
    let dir = temp_dir("browser-broken");
    let (_, page, _) = write_report(&dir, &jax_cpu("mlp_train"), "ok");
    let spec_at = page.find("id=\"spec-1\">").unwrap() + "id=\"spec-1\">".len();
    let spec_end = spec_at + page[spec_at..].find("</script>").unwrap();
    let broken = format!(
        "{}{{\"mark\":\"bar\",\"data\":{{\"values\":[1]}},\"encoding\":{{\"x\":{{\"field\":\"a\",\"type\":\"nope\"}}}}}}{}",
        &page[..spec_at],
        &page[spec_end..]
    );
    let file = dir.join("broken.html");
    std::fs::write(&file, broken).unwrap();
    let r = render(&chromium, &file, "broken");
    let html_tag = &r.dom[r.dom.find("<html").unwrap()..];
    assert!(html_tag[..html_tag.find('>').unwrap()].contains("data-profq-status=\"error\""), "a failed chart is an error");
}
