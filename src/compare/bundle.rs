//! Bundle: one before/after pair → both summaries, the comparison, the track record, both
//! reports and a comparison report (markdown and HTML) in one folder, plus a manifest
//! (reference §6.5).

use super::track::{self, Thresholds};
use super::{columns_read, compare_with_summaries, load_side, provenance_failure, CompareOptions};
use crate::error::Error;
use serde_json::{json, Value};
use std::path::Path;

#[allow(clippy::too_many_arguments)]
pub async fn write_bundle(
    before: &str,
    after: &str,
    store: &crate::store::Location,
    output_dir: &Path,
    opts: &CompareOptions,
    thresholds: &Thresholds,
    label: Option<&str>,
    history: Option<&Path>,
    strict_provenance: bool,
) -> Result<Value, Error> {
    let read = columns_read(opts);
    let b = load_side(before, store, &read).await?;
    let a = load_side(after, store, &read).await?;
    let (comparison, sb, sa) = compare_with_summaries(b, a, opts, &read).await?;
    // Under --strict-provenance a failed check writes nothing.
    if let Some(failed) = provenance_failure(&comparison).filter(|_| strict_provenance) {
        return Err(failed);
    }
    let assessment = track::assess(&comparison, thresholds);
    let record = track::record(&assessment, label);
    std::fs::create_dir_all(output_dir).map_err(|e| Error::store(format!("{}: {e}", output_dir.display())))?;
    let files = [
        ("before_summary_path", "before.summary.json", crate::render::json_text(&sb.json)),
        ("after_summary_path", "after.summary.json", crate::render::json_text(&sa.json)),
        ("comparison_path", "compare.json", crate::render::json_text(&comparison)),
        ("tracking_path", "track.json", crate::render::json_text(&record)),
        ("before_report_path", "before.report.md", crate::render::report::markdown(&sb.doc, opts.top_k)),
        ("after_report_path", "after.report.md", crate::render::report::markdown(&sa.doc, opts.top_k)),
        ("comparison_report_path", "compare.md", crate::render::report::comparison_markdown(&comparison, opts.top_k)),
        ("before_html_path", "before.report.html", crate::render::html::run_page::page(&sb.doc, None, opts.top_k)),
        ("after_html_path", "after.report.html", crate::render::html::run_page::page(&sa.doc, None, opts.top_k)),
        ("comparison_html_path", "compare.html", crate::render::html::compare_page::page(&comparison, &sb.doc, &sa.doc, opts.top_k)),
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
