//! The run-bound query runner that the summary, the trace export and the comparison share:
//! named queries over one run, their run id bound, started ahead so that independent ones
//! overlap, and plans made before the run's tables existed executed as planned.

use super::ahead::{Planned, Prepared};
use super::rows::Row;
use super::{Engine, QueryError};
use std::collections::{BTreeMap, BTreeSet};

/// Runs named queries for one run and returns rows as JSON objects.
pub struct Analyst<'a> {
    pub engine: &'a Engine,
    pub run_id: &'a str,
    /// Queries started ahead (see [`Analyst::prefetch`]), by name and parameters.
    pending: std::sync::Mutex<BTreeMap<String, tokio::task::JoinHandle<QueryResult>>>,
    /// Queries planned before the analyst was made ([`crate::engine::ahead`]), by the same key.
    planned: std::sync::Mutex<BTreeMap<String, Planned>>,
    /// Tables known to hold no rows of the run: a query whose rows come only from one of
    /// them (`Rows only from:`) returns none without being planned.
    without_rows: BTreeSet<&'static str>,
}

type QueryResult = Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError>;

/// A named query with its parameters.
pub type QueryCall = (&'static str, Vec<(&'static str, String)>);

/// `params` of `query`, with the run id added where the query takes one.
pub fn bind(query: &str, params: &[(&str, String)], run_id: &str) -> BTreeMap<String, String> {
    let mut p: BTreeMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    if super::queries::find(query).is_some_and(|q| q.params().iter().any(|p| p.name == "run_id")) {
        p.insert("run_id".into(), run_id.to_string());
    }
    p
}

/// What a query's result is found by: its name and bound parameters.
pub fn key(query: &str, params: &BTreeMap<String, String>) -> String {
    format!("{query}{params:?}")
}

impl<'a> Analyst<'a> {
    pub fn new(engine: &'a Engine, run_id: &'a str) -> Self {
        Analyst::with_plans(engine, run_id, Prepared::default())
    }

    /// An analyst that executes the statements `prepared` planned (by the keys of `crate::summary::statements`)
    /// instead of planning them again, and skips those it knows return no rows.
    pub fn with_plans(engine: &'a Engine, run_id: &'a str, prepared: Prepared) -> Self {
        Analyst { engine, run_id, pending: Default::default(), planned: std::sync::Mutex::new(prepared.planned), without_rows: prepared.without_rows }
    }

    /// Runs a query: its plan if one was made ahead, else the query planned now.
    fn run(
        &self,
        query: &str,
        key: &str,
        params: &BTreeMap<String, String>,
    ) -> impl std::future::Future<Output = Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError>> + Send + 'static {
        let planned = self.planned.lock().expect("planned queries").remove(key);
        let no_rows = super::queries::find(query).and_then(|q| q.rows_only_from()).is_some_and(|t| self.without_rows.contains(t));
        let (engine, name, params) = (self.engine.clone(), query.to_string(), params.clone());
        async move {
            match planned {
                _ if no_rows => Ok(Vec::new()),
                Some(p) => p.execute().await.map_err(|e| QueryError(format!("query {name}: {e}"))),
                None => engine.run_named(&name, &params).await,
            }
        }
    }

    /// Starts queries now, on the runtime's workers, so that independent analyses overlap;
    /// [`Analyst::rows`] then picks up their results.
    pub fn prefetch(&self, queries: &[QueryCall]) {
        if crate::timing::serial() {
            return;
        }
        let mut pending = self.pending.lock().expect("prefetch lock");
        for (query, params) in queries {
            let bound = bind(query, params, self.run_id);
            let key = key(query, &bound);
            pending.entry(key).or_insert_with_key(|key| tokio::spawn(self.run(query, key, &bound)));
        }
    }

    /// Batches of one SQL statement: its plan if one was made ahead (keyed by the SQL itself,
    /// see `crate::summary::statements`), else the statement planned now.
    pub async fn sql_batches(&self, sql: &str) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError> {
        let planned = self.planned.lock().expect("planned queries").remove(sql);
        match planned {
            Some(p) => p.execute().await,
            None => self.engine.sql(sql).await,
        }
    }

    pub async fn rows(&self, query: &str, params: &[(&str, String)]) -> Result<Vec<Row>, QueryError> {
        Ok(super::rows::rows(&self.batches(query, params).await?))
    }

    /// The batches of named query `query` over the analyst's run, as [`Analyst::rows`] reads
    /// them (for callers that read columns rather than JSON rows).
    pub async fn batches(&self, query: &str, params: &[(&str, String)]) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, QueryError> {
        let p = bind(query, params, self.run_id);
        let key = key(query, &p);
        let t0 = std::time::Instant::now();
        let started = self.pending.lock().expect("prefetch lock").remove(&key);
        let batches = match started {
            Some(handle) => handle.await.map_err(|e| QueryError(format!("query {query}: {e}")))??,
            None => self.run(query, &key, &p).await?,
        };
        if crate::timing::enabled() {
            eprintln!("profq: timing: query {query}: {:.3} s", t0.elapsed().as_secs_f64());
        }
        Ok(batches)
    }
}
