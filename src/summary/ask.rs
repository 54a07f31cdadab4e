//! Asking: where a question's answer comes from, and the answer as JSON.
//!
//! A question is routed to an intent ([`super::query::route`]); its answer then comes from
//! one of three places, chosen here and nowhere else:
//! * a trend question about a store (no INPUT, no summary file): the `trends` or `op_trend`
//!   rows of every run;
//! * a question whose analysis a summary does not hold (the roofline, peak memory): the rows
//!   of its intent's named query over the profile or stored run;
//! * any other: a `profile_summary.v1` document, read from `--summary` or computed.

use super::doc::Summary;
use super::query::{self, Intent, RowsAnswer};
use super::timeline::Timeline;
use super::{SummaryOptions, SCHEMA_VERSION};
use crate::engine::{queries, Engine, Spread};
use crate::error::{Error, Kind};
use crate::source::{self, Opened, Source};
use crate::store::Location;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a question or report is about: an INPUT, a stored run, a whole store, or a summary
/// file (at most one of `input`, `run` and `summary`).
pub struct Subject {
    pub input: Option<PathBuf>,
    pub run: Option<String>,
    pub store: Location,
    pub summary: Option<PathBuf>,
}

impl Subject {
    fn source(&self) -> Result<Source, Error> {
        Ok(source::from_args(self.input.as_deref(), self.run.as_deref(), &self.store)?)
    }
}

/// The answer to `question` about `subject`, with the SQL behind it when `show_sql`. An
/// unrecognised question is answered too (with the supported questions); the caller decides
/// how to end on it.
pub async fn ask(question: &str, subject: &Subject, top_k: usize, show_sql: bool) -> Result<Value, Error> {
    let intent = query::route(question);
    let about_store = subject.input.is_none() && subject.summary.is_none();
    if intent.is_some_and(|i| i.query_type == "trend") && about_store {
        return trend_answer(question, &subject.store, show_sql).await;
    }
    if let Some((intent, answer_with)) = intent.filter(|_| subject.summary.is_none()).and_then(|i| Some((i, query::rows_answer(i.query_type)?))) {
        return rows_answer(question, intent, answer_with, &subject.source()?, top_k, show_sql).await;
    }
    let opts = SummaryOptions { hot_op_limit: top_k.max(25), ..SummaryOptions::default() };
    let (doc, run_id) = summary_of(subject, &opts).await?;
    let mut answer = query::answer(&doc, question, top_k);
    if show_sql {
        let params = BTreeMap::from([("run_id".to_string(), run_id.unwrap_or_else(|| "<run_id>".into()))]);
        let names = intent.map(|i| i.queries).unwrap_or_default();
        // Only the queries whose parameters this answer has.
        let bound = names.iter().filter_map(|q| Some(json!({"query": q, "sql": queries::find(q)?.bind(&params).ok()?})));
        answer["sql"] = Value::Array(bound.collect());
    }
    Ok(answer)
}

/// Whether an answer says its question matched no intent.
pub fn is_unrecognized(answer: &Value) -> bool {
    answer["query_type"] == "unrecognized"
}

/// The summary of a subject, and the run id it was computed for (None for a summary file).
pub async fn summary_of(subject: &Subject, opts: &SummaryOptions) -> Result<(Summary, Option<String>), Error> {
    if let Some(file) = &subject.summary {
        if subject.input.is_some() || subject.run.is_some() {
            return Err(Error::usage("give one of INPUT, --run or --summary"));
        }
        return Ok((read_summary_file(file)?, None));
    }
    let (doc, run_id) = summary_of_source(&subject.source()?, opts).await?;
    Ok((doc, Some(run_id)))
}

/// The summary of a subject and the timeline of its representative step (None from a
/// summary file, or without a steady step): what the HTML report draws.
pub async fn report_of(subject: &Subject, opts: &SummaryOptions) -> Result<(Summary, Option<Timeline>), Error> {
    if subject.summary.is_some() {
        return Ok((summary_of(subject, opts).await?.0, None));
    }
    let Opened { engine, run_id, source_path, .. } = source::open(&subject.source()?, Spread::Narrow).await?;
    let doc = super::summarize(&engine, &run_id, &source_path, opts).await?;
    let timeline = match doc.step_time.representative_step() {
        Some(step) => Some(super::timeline::of_step(&crate::engine::analyst::Analyst::new(&engine, &run_id), step).await?),
        None => None,
    };
    Ok((doc, timeline))
}

/// The `trends` rows of every run of a store, in ingest order.
pub async fn trends_of(store: &Location) -> Result<Vec<serde_json::Map<String, Value>>, Error> {
    let engine = Engine::open(store).await?;
    Ok(crate::engine::rows::rows(&engine.run_named("trends", &BTreeMap::new()).await?))
}

/// A profile_summary.v1 document from a file (written by profq or the reference tool).
pub fn read_summary_file(file: &Path) -> Result<Summary, Error> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::input(format!("{}: {e}", file.display())))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| Error::input(format!("{}: not JSON: {e}", file.display())))?;
    if !Summary::is_summary(&doc) {
        return Err(Error::input(format!("{}: not a {SCHEMA_VERSION} summary (schema_version {})", file.display(), doc["schema_version"])));
    }
    Summary::from_json(&doc).map_err(|e| Error::input(format!("{}: not a {SCHEMA_VERSION} summary: {e}", file.display())))
}

/// The summary of a source and its run id; an INPUT's statements are planned while it decodes.
pub async fn summary_of_source(source: &Source, opts: &SummaryOptions) -> Result<(Summary, String), Error> {
    let statements = super::statements(opts, source::INPUT_RUN_ID);
    let opened = source::open_planning(source, Spread::Narrow, statements).await?;
    let doc = super::summarize_planned(&opened.engine, &opened.run_id, &opened.source_path, opts, opened.prepared).await?;
    Ok((doc, opened.run_id))
}

/// "How did X change across runs?": the trends of every run of the store, or one op's trend.
async fn trend_answer(question: &str, store: &Location, show_sql: bool) -> Result<Value, Error> {
    let engine = Engine::open(store).await?;
    let target = query::trend_target(question);
    let (name, params) = match &target {
        Some(op) => ("op_trend", BTreeMap::from([("op".to_string(), op.clone())])),
        None => ("trends", BTreeMap::new()),
    };
    let rows = crate::engine::rows::rows(&engine.run_named(name, &params).await?);
    let mut answer = json!({"query_type": "trend", "question": question, "target": target, "analysis": name});
    if name == "trends" {
        answer["slowest_run"] = query::extreme_run(&rows, true);
        answer["fastest_run"] = query::extreme_run(&rows, false);
        let steps = crate::engine::rows::rows(&engine.run_named("steady_steps", &BTreeMap::new()).await?);
        answer["run_verdicts"] = query::run_verdicts(&rows, &steps);
    }
    answer["results"] = json!(rows);
    if show_sql {
        answer["sql"] = json!([sql_of(name, &params)]);
    }
    Ok(answer)
}

/// A question whose analysis a summary does not hold, answered from its intent's named
/// query over every row of the profile or stored run (the answer's totals are over all).
async fn rows_answer(question: &str, intent: &Intent, answer_with: RowsAnswer, source: &Source, top_k: usize, show_sql: bool) -> Result<Value, Error> {
    let Opened { engine, run_id, .. } = source::open(source, Spread::Wide).await?;
    let name = intent.queries[0];
    let mut params = BTreeMap::from([("run_id".to_string(), run_id)]);
    if queries::find(name).is_some_and(|q| q.params().iter().any(|p| p.name == "top_k")) {
        params.insert("top_k".to_string(), i64::MAX.to_string());
    }
    let rows = crate::engine::rows::rows(&engine.run_named(name, &params).await?);
    let mut answer = answer_with(question, &rows, top_k);
    if show_sql {
        answer["sql"] = json!([sql_of(name, &params)]);
    }
    Ok(answer)
}

/// `{"query": name, "sql": <the bound SQL, or null>}` of a named query, for `--show-sql`.
fn sql_of(name: &str, params: &BTreeMap<String, String>) -> Value {
    json!({"query": name, "sql": queries::find(name).and_then(|q| q.bind(params).ok())})
}

/// Ends a command on an unrecognised question with exit 2, printing its answer (`text`).
pub fn unrecognized(text: String) -> Error {
    Error::quiet(Kind::Usage, text)
}
