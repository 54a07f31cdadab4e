//! HTML pages: one self-contained file each, made offline and deterministically.
//!
//! A page is plain HTML (header, KPI strip, sections, sortable tables) plus Vega-Lite charts
//! ([`charts`]) rendered in the browser by the vendored, pinned vega, vega-lite and
//! vega-embed (`assets/`, see README.md there), inlined once per page. Specs travel as
//! `<script type="application/json">` blocks; `assets/report.js` renders them and marks
//! `<html>` with `data-profq-status` and `data-profq-charts` so that a browser test can tell
//! a page that drew from one that only looks fine. The page's CSP forbids every network
//! load and `eval` (vega-embed runs with `ast: true`), so a page that renders is offline.

pub mod charts;
pub mod compare_page;
pub mod run_page;
pub mod trends_page;

use serde_json::Value;
use std::fmt::Write;

const VEGA: &str = include_str!("assets/vega-6.4.0.min.js");
const VEGA_LITE: &str = include_str!("assets/vega-lite-6.5.0.min.js");
const VEGA_EMBED: &str = include_str!("assets/vega-embed-7.3.0.min.js");
const REPORT_JS: &str = include_str!("assets/report.js");
const REPORT_CSS: &str = include_str!("assets/report.css");

/// The page's Content-Security-Policy: inline scripts and styles, data: images, nothing else.
pub const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

/// Charts with more marks than this are drawn on a canvas (SVG slows past a few thousand).
const CANVAS_ABOVE: usize = 3_000;

/// Text as HTML (element content and attribute values).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A JSON value as the text of a `<script type="application/json">`: `<` is escaped so that
/// no string in it can close the script.
fn script_json(v: &Value) -> String {
    serde_json::to_string(v).expect("specs serialize").replace('<', "\\u003c")
}

/// A table cell: text, or a number shown with `decimals` places and sorted by its value.
pub enum Cell {
    Text(String),
    Num(Option<f64>, usize),
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    /// A number of µs or a count as shown in tables: 3 decimals.
    pub fn num(v: Option<f64>) -> Cell {
        Cell::Num(v, 3)
    }
    pub fn int(v: Option<i64>) -> Cell {
        Cell::Num(v.map(|v| v as f64), 0)
    }
    /// A share in [0, 1] shown as a percentage.
    pub fn pct(v: Option<f64>) -> Cell {
        Cell::Num(v.map(|v| v * 100.0), 2)
    }
}

/// A page being built: sections of HTML in order, and the charts they hold.
pub struct Page {
    title: String,
    subtitle: String,
    body: String,
    charts: usize,
}

impl Page {
    pub fn new(title: &str, subtitle: &str) -> Page {
        Page { title: title.to_string(), subtitle: subtitle.to_string(), body: String::new(), charts: 0 }
    }

    /// Opens a section with a heading and an optional note under it.
    pub fn section(&mut self, heading: &str, note: Option<&str>) {
        self.close_section();
        let _ = write!(self.body, "<section><h2>{}</h2>", esc(heading));
        if let Some(n) = note {
            let _ = write!(self.body, "<p class=\"note\">{}</p>", esc(n));
        }
    }

    fn close_section(&mut self) {
        if self.body.ends_with("</section>") || self.body.is_empty() {
            return;
        }
        self.body.push_str("</section>");
    }

    /// A paragraph of text.
    pub fn note(&mut self, text: &str) {
        let _ = write!(self.body, "<p class=\"note\">{}</p>", esc(text));
    }

    /// HTML the caller built (escaped with [`esc`]).
    pub fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// A KPI strip: (key, label, value shown, exact value). The exact value is kept in
    /// `data-value` (what a test compares with the summary).
    pub fn kpis(&mut self, items: &[(&str, &str, String, Option<f64>)]) {
        self.body.push_str("<div class=\"kpis\">");
        for (key, label, shown, exact) in items {
            let value = exact.map(|v| format!(" data-value=\"{v}\"")).unwrap_or_default();
            let _ = write!(
                self.body,
                "<div class=\"kpi\" data-kpi=\"{}\"{value}><div class=\"label\">{}</div><div class=\"value\">{}</div></div>",
                esc(key),
                esc(label),
                esc(shown)
            );
        }
        self.body.push_str("</div>");
    }

    /// A Vega-Lite chart; `marks` (about how many it draws) picks SVG or canvas.
    pub fn chart(&mut self, name: &str, spec: Value, marks: usize) {
        self.charts += 1;
        let renderer = if marks > CANVAS_ABOVE { "canvas" } else { "svg" };
        let id = format!("spec-{}", self.charts);
        let _ = write!(
            self.body,
            "<div class=\"chart\" data-chart-name=\"{}\" data-profq-chart=\"{id}\" data-renderer=\"{renderer}\"></div><script type=\"application/json\" id=\"{id}\">{}</script>",
            esc(name),
            script_json(&spec)
        );
    }

    /// A sortable table.
    pub fn table(&mut self, name: &str, header: &[&str], rows: Vec<Vec<Cell>>) {
        if rows.is_empty() {
            self.note("(none)");
            return;
        }
        let _ = write!(self.body, "<table class=\"sortable\" data-table=\"{}\"><thead><tr>", esc(name));
        for h in header {
            let _ = write!(self.body, "<th>{}</th>", esc(h));
        }
        self.body.push_str("</tr></thead><tbody>");
        for row in rows {
            self.body.push_str("<tr>");
            for cell in row {
                match cell {
                    Cell::Text(t) => {
                        let _ = write!(self.body, "<td>{}</td>", esc(&t));
                    }
                    Cell::Num(Some(v), decimals) => {
                        let _ = write!(self.body, "<td class=\"num\" data-sort=\"{v}\">{}</td>", thousands(v, decimals));
                    }
                    Cell::Num(None, _) => self.body.push_str("<td class=\"num\" data-sort=\"-1e300\">n/a</td>"),
                }
            }
            self.body.push_str("</tr>");
        }
        self.body.push_str("</tbody></table>");
    }

    /// The finished page.
    pub fn finish(mut self) -> String {
        self.close_section();
        let mut out = String::with_capacity(VEGA.len() + VEGA_LITE.len() + VEGA_EMBED.len() + self.body.len() + 8192);
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\" data-profq-status=\"pending\">\n<head>\n<meta charset=\"utf-8\">\n");
        let _ = writeln!(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        let _ = writeln!(out, "<meta name=\"generator\" content=\"profq {}\">", env!("CARGO_PKG_VERSION"));
        let _ = writeln!(out, "<title>{}</title>", esc(&self.title));
        let _ = writeln!(out, "<style>\n{REPORT_CSS}</style>");
        out.push_str("<!-- Charts: vega 6.4.0, vega-lite 6.5.0, vega-embed 7.3.0 (BSD-3-Clause, (c) University of Washington Interactive Data Lab; bundled d3 modules and topojson-client ISC, fast-json-patch and json-stringify-pretty-compact MIT, semver ISC), inlined below. -->\n");
        for js in [VEGA, VEGA_LITE, VEGA_EMBED] {
            let _ = writeln!(out, "<script>{js}</script>");
        }
        out.push_str("</head>\n<body>\n");
        let _ = writeln!(out, "<header><h1>{}</h1><p>{}</p></header>", esc(&self.title), esc(&self.subtitle));
        let _ = writeln!(out, "<main data-charts=\"{}\">\n{}\n</main>", self.charts, self.body);
        let _ = writeln!(out, "<script>\n{REPORT_JS}</script>\n</body>\n</html>");
        out
    }
}

/// A number with `decimals` places and thousands separators (`12,345.678`).
pub fn thousands(v: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, v.abs());
    let (int, frac) = text.split_once('.').map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (k, c) in int.chars().enumerate() {
        if k > 0 && (int.len() - k) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// µs as people read a duration: µs below 1 ms, else ms, else s.
pub fn duration(us: Option<f64>) -> String {
    match us {
        None => "n/a".into(),
        Some(v) if v.abs() < 1_000.0 => format!("{v:.1} µs"),
        Some(v) if v.abs() < 1_000_000.0 => format!("{:.3} ms", v / 1_000.0),
        Some(v) => format!("{:.3} s", v / 1_000_000.0),
    }
}

/// A share in [0, 1] as a percentage with one decimal.
pub fn percent(share: Option<f64>) -> String {
    share.map_or("n/a".into(), |s| format!("{:.1}%", s * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_text_as_html() {
        assert_eq!(thousands(1234567.891, 3), "1,234,567.891");
        assert_eq!(thousands(-999.5, 0), "-1,000");
        assert_eq!(thousands(-0.0001, 2), "0.00");
        assert_eq!(thousands(12.0, 0), "12");
        assert_eq!(esc("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
        assert_eq!(script_json(&serde_json::json!({"a": "</script>"})), "{\"a\":\"\\u003c/script>\"}");
        assert_eq!((duration(Some(999.0)), duration(Some(1500.0)), duration(Some(2.5e6))), ("999.0 µs".into(), "1.500 ms".into(), "2.500 s".into()));
    }
}
