//! Bundle: one before/after pair → both summaries, the comparison, the track record, both
//! reports and a comparison report (markdown and HTML) in one folder, plus a manifest
//! (reference §6.5).

use profq::compare::track::{self, Thresholds};
use profq::compare::{compare_pair_with_summaries, CompareOptions};
use profq::error::Error;
use profq::render::html::{compare_page, run_page};
use profq::render::{json_text, report};
use profq::store::Location;
use serde_json::{json, Value};
use std::path::Path;

#[allow(clippy::too_many_arguments)]
pub async fn write_bundle(
    before: &str,
    after: &str,
    store: &Location,
    output_dir: &Path,
    opts: &CompareOptions,
    thresholds: &Thresholds,
    label: Option<&str>,
    history: Option<&Path>,
    strict_provenance: bool,
) -> Result<Value, Error> {
    // Under --strict-provenance a failed check writes nothing.
    let (comparison, sb, sa) = compare_pair_with_summaries(before, after, store, opts, strict_provenance).await?;
    let assessment = track::assess(&comparison, thresholds);
    let record = track::record(&assessment, label);
    std::fs::create_dir_all(output_dir).map_err(|e| Error::store(format!("{}: {e}", output_dir.display())))?;
    let files = [
        ("before_summary_path", "before.summary.json", json_text(&sb.json)),
        ("after_summary_path", "after.summary.json", json_text(&sa.json)),
        ("comparison_path", "compare.json", json_text(&comparison)),
        ("tracking_path", "track.json", json_text(&record)),
        ("before_report_path", "before.report.md", report::markdown(&sb.doc, opts.top_k)),
        ("after_report_path", "after.report.md", report::markdown(&sa.doc, opts.top_k)),
        ("comparison_report_path", "compare.md", report::comparison_markdown(&comparison, opts.top_k)),
        ("before_html_path", "before.report.html", run_page::page(&sb.doc, None, opts.top_k)),
        ("after_html_path", "after.report.html", run_page::page(&sa.doc, None, opts.top_k)),
        ("comparison_html_path", "compare.html", compare_page::page(&comparison, &sb.doc, &sa.doc, opts.top_k)),
    ];
    let mut manifest = json!({"output_dir": output_dir.display().to_string(), "status": assessment["status"]});
    for (key, name, text) in files {
        let path = output_dir.join(name);
        std::fs::write(&path, text).map_err(|e| Error::store(format!("{}: {e}", path.display())))?;
        manifest[key] = json!(path.display().to_string());
    }
    if let Some(h) = history {
        track::append_history(h, &record).map_err(|e| Error::store(format!("{}: {e}", h.display())))?;
        manifest["history_path"] = json!(h.display().to_string());
    }
    Ok(manifest)
}
