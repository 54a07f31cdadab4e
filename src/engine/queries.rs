//! Named queries: the analyses in `queries/*.sql`, embedded in the binary, with their
//! documented parameters bound safely.
//!
//! A query file starts with a header of `--` comment lines: the first line is its one-line
//! description; a `Parameters:` block lists `name TYPE [= default] description` lines
//! (TYPE is TEXT, INT or FLOAT); a `Columns:` block documents every output column. A
//! `Rows only from: TABLE` line says that every output row comes from the run's rows of
//! TABLE, so that a run without any gets no rows (an analysis then neither plans nor runs
//! the query; a test checks each such claim).
//! Placeholders `{{name}}` in the body are replaced by SQL literals: TEXT is quoted with
//! quotes doubled, INT and FLOAT must parse as numbers, so no value can inject SQL.
//!
//! What several queries share is written once, in `queries/include/NAME.sql` (a header as
//! above, then one SELECT), and taken in where a query writes `{{include NAME}}`, as
//! Perfetto's standard library includes its modules: `per_step AS ({{include per_step}})`.

use std::collections::BTreeMap;

pub struct NamedQuery {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! q {
    ($name:literal) => {
        NamedQuery { name: $name, text: include_str!(concat!("../../queries/", $name, ".sql")) }
    };
}

/// Every named query, by name.
pub const QUERIES: &[NamedQuery] = &[
    q!("collectives_by_kind"),
    q!("collective_skew"),
    q!("comm_comp_overlap"),
    q!("compare_ops"),
    q!("compare_regions"),
    q!("device_idle"),
    q!("export_budget"),
    q!("export_events"),
    q!("export_gaps"),
    q!("export_steps"),
    q!("gap_contexts"),
    q!("hierarchical_regions"),
    q!("hot_ops"),
    q!("idle_breakdown"),
    q!("kernel_breakdown"),
    q!("memory_profile"),
    q!("op_trend"),
    q!("per_host"),
    q!("pre_op_gaps"),
    q!("provenance_hints"),
    q!("recompilation"),
    q!("regions"),
    q!("roofline"),
    q!("semantic_families"),
    q!("shape_churn"),
    q!("steady_steps"),
    q!("step_durations"),
    q!("step_skew"),
    q!("straggler_ranks"),
    q!("step_timeline"),
    q!("step_times"),
    q!("temporal_breakdown"),
    q!("time_breakdown"),
    q!("time_breakdown_global"),
    q!("tiny_kernels"),
    q!("trace_overview"),
    q!("transfers"),
    q!("trends"),
];

/// The SELECTs queries share, by name (`queries/include/NAME.sql`).
pub const INCLUDES: &[(&str, &str)] = &[
    ("categories", include_str!("../../queries/include/categories.sql")),
    ("collective_arrivals", include_str!("../../queries/include/collective_arrivals.sql")),
    ("hta_kernels", include_str!("../../queries/include/hta_kernels.sql")),
    ("hta_merged", include_str!("../../queries/include/hta_merged.sql")),
    ("per_step", include_str!("../../queries/include/per_step.sql")),
];

/// `text` with every `{{include NAME}}` replaced by that include's SELECT (its header left out).
fn expand_includes(name: &str, text: &str) -> Result<String, String> {
    const OPEN: &str = "{{include ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let end = rest[start..].find("}}").map(|e| start + e).ok_or_else(|| format!("query {name}: unclosed {OPEN}"))?;
        let wanted = rest[start + OPEN.len()..end].trim();
        let (_, body) = INCLUDES.iter().find(|(n, _)| *n == wanted).ok_or_else(|| format!("query {name} includes unknown {wanted:?}"))?;
        out.push_str(&rest[..start]);
        out.push_str(body.lines().filter(|l| !l.starts_with("--")).collect::<Vec<_>>().join("\n").trim());
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    Text,
    Int,
    Float,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    pub default: Option<String>,
    pub doc: String,
}

pub fn find(name: &str) -> Option<&'static NamedQuery> {
    QUERIES.iter().find(|q| q.name == name)
}

impl NamedQuery {
    fn header(&self) -> impl Iterator<Item = &'static str> {
        self.text.lines().take_while(|l| l.starts_with("--")).map(|l| l.trim_start_matches("--"))
    }

    /// The first header line.
    pub fn description(&self) -> &'static str {
        self.header().next().unwrap_or("").trim()
    }

    fn block(&self, title: &str) -> Vec<&'static str> {
        let mut lines = self.header().skip_while(|l| l.trim() != title);
        lines.next();
        lines.take_while(|l| !l.trim().is_empty()).map(str::trim).collect()
    }

    pub fn params(&self) -> Vec<Param> {
        self.block("Parameters:")
            .into_iter()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let name = words.next()?.to_string();
                let kind = match words.next()? {
                    "TEXT" => ParamKind::Text,
                    "INT" => ParamKind::Int,
                    "FLOAT" => ParamKind::Float,
                    _ => return None,
                };
                let rest: Vec<&str> = words.collect();
                let (default, doc) =
                    if rest.first() == Some(&"=") && rest.len() >= 2 { (Some(rest[1].to_string()), rest[2..].join(" ")) } else { (None, rest.join(" ")) };
                Some(Param { name, kind, default, doc })
            })
            .collect()
    }

    /// The table whose rows of the run every output row comes from (`Rows only from:`):
    /// without any, the query returns no rows.
    pub fn rows_only_from(&self) -> Option<&'static str> {
        self.header().find_map(|l| l.trim().strip_prefix("Rows only from:")).and_then(|rest| rest.split_whitespace().next())
    }

    /// Whether the query reads the `events` table row by row beyond the events of interest
    /// (its header says `Reads every event`): an INPUT is then opened with all its events
    /// (`source::open_whole`).
    pub fn reads_every_event(&self) -> bool {
        self.header().any(|l| l.trim().starts_with("Reads every event"))
    }

    /// Documented output column names: the `Columns:` block's lines `--   name  meaning`
    /// (three spaces in); lines indented deeper continue a meaning, and the block ends at a
    /// blank line or one indented less.
    pub fn columns(&self) -> Vec<&'static str> {
        let mut lines = self.header().skip_while(|l| l.trim() != "Columns:");
        lines.next();
        lines
            .take_while(|l| l.starts_with("   ") && !l.trim().is_empty())
            .filter(|l| !l.starts_with("    "))
            .filter_map(|l| l.split_whitespace().next())
            .collect()
    }

    /// The query's text with its includes taken in, placeholders left as they are.
    pub fn sql(&self) -> Result<String, String> {
        expand_includes(self.name, self.text)
    }

    /// The SQL with every placeholder replaced. Missing parameters take their default;
    /// a parameter without default, an unknown one or a malformed number is an error.
    pub fn bind(&self, values: &BTreeMap<String, String>) -> Result<String, String> {
        let params = self.params();
        for k in values.keys() {
            if !params.iter().any(|p| &p.name == k) {
                let known: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
                return Err(format!("query {} has no parameter {k:?} (parameters: {})", self.name, known.join(", ")));
            }
        }
        let mut sql = self.sql()?;
        for p in &params {
            let raw = values.get(&p.name).or(p.default.as_ref()).ok_or_else(|| format!("query {} needs --param {}=...", self.name, p.name))?;
            let literal = match p.kind {
                ParamKind::Text => format!("'{}'", raw.replace('\'', "''")),
                ParamKind::Int => raw.trim().parse::<i64>().map_err(|_| format!("parameter {} must be an integer, got {raw:?}", p.name))?.to_string(),
                ParamKind::Float => {
                    let v = raw.trim().parse::<f64>().map_err(|_| format!("parameter {} must be a number, got {raw:?}", p.name))?;
                    if !v.is_finite() {
                        return Err(format!("parameter {} must be finite", p.name));
                    }
                    format!("{v:?}")
                }
            };
            sql = sql.replace(&format!("{{{{{}}}}}", p.name), &literal);
        }
        if let Some(start) = sql.find("{{") {
            let end = sql[start..].find("}}").map_or(sql.len(), |e| start + e + 2);
            return Err(format!("query {} uses undeclared parameter {}", self.name, &sql[start..end]));
        }
        Ok(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_file_is_registered_and_documented() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter_map(|f| f.strip_suffix(".sql").map(str::to_string))
            .collect();
        files.sort();
        let mut names: Vec<String> = QUERIES.iter().map(|q| q.name.to_string()).collect();
        names.sort();
        assert_eq!(files, names);
        for q in QUERIES {
            assert!(!q.description().is_empty(), "{}", q.name);
            assert!(!q.columns().is_empty(), "{} documents no columns", q.name);
            let params = q.params();
            let mut values = BTreeMap::new();
            for p in params.iter().filter(|p| p.kind == ParamKind::Text) {
                values.insert(p.name.clone(), "it's".to_string());
            }
            let text_params = values.len();
            for p in params.iter().filter(|p| p.kind != ParamKind::Text && p.default.is_none()) {
                values.insert(p.name.clone(), "0".to_string());
            }
            // Every query but those over every run of a store takes a run (or op) to bind.
            if !["trends", "steady_steps"].contains(&q.name) {
                assert!(text_params > 0, "{} has no text parameter", q.name);
            }
            let sql = q.bind(&values).unwrap_or_else(|e| panic!("{e}"));
            assert!(text_params == 0 || sql.contains("'it''s'"), "{}", q.name);
        }
    }

    #[test]
    fn every_include_is_registered_documented_and_used() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries/include");
        let mut files: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".sql").to_string()).collect();
        files.sort();
        let names: Vec<&str> = INCLUDES.iter().map(|(n, _)| *n).collect();
        assert_eq!(files, names, "INCLUDES lists every file of queries/include, by name");
        for (name, text) in INCLUDES {
            assert!(text.lines().any(|l| l.trim_start_matches("--").trim() == "Columns:"), "{name} documents no columns");
            let used = QUERIES.iter().any(|q| q.text.contains(&format!("{{{{include {name}}}}}")));
            assert!(used, "no query includes {name}");
        }
        assert!(expand_includes("q", "SELECT 1 FROM ({{include nope}})").is_err());
    }

    /// An INPUT analysed in memory keeps only the events of interest as its `events` table
    /// (`tables::events_of_interest`), which is right only while every named query reads
    /// events through a join on names those rules pick. A query reading `events` otherwise
    /// needs that table built in full again.
    #[test]
    fn events_are_read_only_through_the_rules_of_interest() {
        let reads_events = |sql: &str| {
            let words: Vec<String> = sql.split(|c: char| !(c.is_alphanumeric() || c == '_')).map(str::to_lowercase).collect();
            words.windows(2).any(|w| (w[0] == "from" || w[0] == "join") && w[1] == "events")
        };
        let mut readers: Vec<(&str, String)> = QUERIES.iter().map(|q| (q.name, q.sql().unwrap())).filter(|(_, sql)| reads_events(sql)).collect();
        readers.sort();
        let names: Vec<&str> = readers.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            [
                "collective_skew",
                "comm_comp_overlap",
                "export_budget",
                "export_events",
                "idle_breakdown",
                "kernel_breakdown",
                "memory_profile",
                "recompilation",
                "straggler_ranks",
                "temporal_breakdown",
                "transfers"
            ]
        );
        for (name, text) in &readers {
            let rule = match *name {
                // Read every event, so their caller opens an INPUT with all of them.
                "export_budget" | "export_events" => "source::open_whole".to_string(),
                "comm_comp_overlap" | "idle_breakdown" | "kernel_breakdown" | "temporal_breakdown" => {
                    assert!(find(name).unwrap().reads_every_event(), "{name} must say it reads every event");
                    "Reads every event".to_string()
                }
                "collective_skew" | "straggler_ranks" => "is_collective_kernel(".to_string(),
                "transfers" => "transfer_direction(".to_string(),
                "recompilation" => "is_compile_event(".to_string(),
                _ => format!("IN ('{}')", crate::tables::events_of_interest::MEMORY_EVENTS.join("', '")),
            };
            assert!(text.contains(&rule), "{name} must pick its events with {rule}");
        }
    }

    #[test]
    fn numbers_are_checked() {
        let q = find("hot_ops").unwrap();
        let mut v = BTreeMap::new();
        v.insert("run_id".into(), "r".into());
        v.insert("top_k".into(), "5; DROP TABLE x".into());
        assert!(q.bind(&v).is_err());
        v.insert("nope".into(), "1".into());
        assert!(q.bind(&v).is_err());
    }
}
