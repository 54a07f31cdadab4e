//! Where an analysis reads a run from: a run in a store, or an INPUT decoded in memory.

use crate::engine::ahead::{self, IdlePlanner, Prepared, Statement};
use crate::engine::{Engine, QueryError, Spread};
use crate::ingest::{self, IngestError};
use crate::store::Location;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub enum Source {
    /// A run already in a store.
    Run { store: Location, run_id: String },
    /// A profile decoded in memory, never written to a store.
    Input(PathBuf),
}

impl Source {
    /// The source as messages name it: `run "id"`, or the INPUT's path.
    pub fn name(&self) -> String {
        match self {
            Source::Run { run_id, .. } => format!("run {run_id:?}"),
            Source::Input(path) => path.display().to_string(),
        }
    }
}

/// A failure to open a source, with the exit code class it maps to.
#[derive(Debug)]
pub enum SourceError {
    Ingest(IngestError),
    Query(QueryError),
    /// The run id is not in the store (exit 2).
    NoRun(String),
    /// The arguments name no run, or two (exit 2).
    Usage(&'static str),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Ingest(e) => write!(f, "{e}"),
            SourceError::Query(e) => write!(f, "{e}"),
            SourceError::NoRun(e) => f.write_str(e),
            SourceError::Usage(e) => f.write_str(e),
        }
    }
}

/// A store that cannot be read: a query error (its message names the store).
fn no_store(what: String) -> SourceError {
    SourceError::Query(QueryError(what))
}

/// An engine holding the source's run, and that run's id.
pub struct Opened {
    pub engine: Engine,
    pub run_id: String,
    /// Path of the profile the run came from.
    pub source_path: String,
    /// Statements planned while an INPUT decoded, by their callers' keys, and the tables
    /// without rows of an INPUT (see [`open_planning`]); nothing for a stored run.
    pub prepared: Prepared,
}

/// The run id an in-memory INPUT gets.
pub const INPUT_RUN_ID: &str = "input";

/// Opens a source for queries spread as `spread` says (see [`Spread`]).
pub async fn open(source: &Source, spread: Spread) -> Result<Opened, SourceError> {
    open_planning(source, spread, Vec::new()).await
}

/// [`open`], planning `statements` (over run [`INPUT_RUN_ID`]) while an INPUT's first events
/// are derived and tabled, on the cycles that leaves idle ([`crate::engine::ahead`]);
/// [`Opened::prepared`] holds those planned by the time the tables are built. A stored run
/// plans nothing ahead.
pub async fn open_planning(source: &Source, spread: Spread, statements: Vec<Statement>) -> Result<Opened, SourceError> {
    match source {
        Source::Run { store, run_id } => {
            // One look at the run's partitions: without `runs` it is not in the store; without
            // another table its analyses would read it as empty (wrong answers, not an error).
            let missing = store.tables_missing(run_id).await.map_err(no_store)?;
            if missing.contains(&"runs") {
                let known = store.run_ids().await.map_err(no_store)?;
                return Err(SourceError::NoRun(format!(
                    "no run {run_id:?} in {store} (runs: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )));
            }
            if !missing.is_empty() {
                return Err(SourceError::Query(QueryError(format!(
                    "run {run_id:?} in {store} has no {} table (ingested by an older profq): ingest its profile again with `--run-id {run_id} --force`",
                    missing.join(", ")
                ))));
            }
            let engine = Engine::open_with(store, spread).await.map_err(SourceError::Query)?;
            let sql = format!("SELECT source_path FROM runs WHERE run_id = '{}'", run_id.replace('\'', "''"));
            let batches = engine.sql(&sql).await.map_err(SourceError::Query)?;
            let source_path = batches
                .first()
                .filter(|b| b.num_rows() > 0)
                .and_then(|b| b.column(0).as_any().downcast_ref::<datafusion::arrow::array::StringArray>().map(|a| a.value(0).to_string()))
                .unwrap_or_default();
            Ok(Opened { engine, run_id: run_id.clone(), source_path, prepared: Prepared::default() })
        }
        Source::Input(path) if statements.is_empty() => {
            let tables = ingest::load_tables(path, INPUT_RUN_ID, &[]).map_err(SourceError::Ingest)?;
            let mut clock = std::time::Instant::now();
            let engine = Engine::from_tables(&tables, INPUT_RUN_ID, spread).map_err(SourceError::Query)?;
            crate::timing::stage_done("engine", &mut clock);
            let prepared = Prepared { planned: BTreeMap::new(), without_rows: ahead::tables_without_rows(&tables) };
            Ok(Opened { engine, run_id: INPUT_RUN_ID.into(), source_path: path.display().to_string(), prepared })
        }
        Source::Input(path) => {
            // Only the columns the statements read are built (ops and gaps, the largest tables).
            let declared = crate::engine::reads::Declared::of(statements.iter().map(|s| s.sql.clone()));
            let read = declared.columns.clone();
            let (engine, slots) = Engine::pending(spread, declared);
            let planner = IdlePlanner::new(&engine, statements);
            let rows_seen = planner.rows_seen();
            let watch = ingest::LoadWatch { on_table_rows: Some(Box::new(move |t| rows_seen.has_rows(t))) };
            let tables = ingest::load_tables_telling(path, INPUT_RUN_ID, &[], read, watch).map_err(SourceError::Ingest)?;
            let mut clock = std::time::Instant::now();
            slots.fill(&[(&tables, INPUT_RUN_ID)]).map_err(SourceError::Query)?;
            let prepared = Prepared { planned: planner.finish(), without_rows: ahead::tables_without_rows(&tables) };
            crate::timing::stage_done(&format!("engine ({} statements planned ahead)", prepared.planned.len()), &mut clock);
            Ok(Opened { engine, run_id: INPUT_RUN_ID.into(), source_path: path.display().to_string(), prepared })
        }
    }
}

/// [`open`] with every event of an INPUT in its `events` table (an analysis of an INPUT
/// otherwise keeps only the events its queries read one by one): for reads of `events` row
/// by row, as a trace export does. A stored run is opened as by [`open`].
pub async fn open_whole(source: &Source, spread: Spread) -> Result<Opened, SourceError> {
    match source {
        Source::Input(path) => {
            let tables = ingest::load_tables_with_every_event(path, INPUT_RUN_ID).map_err(SourceError::Ingest)?;
            let engine = Engine::from_tables(&tables, INPUT_RUN_ID, spread).map_err(SourceError::Query)?;
            let prepared = Prepared { planned: BTreeMap::new(), without_rows: ahead::tables_without_rows(&tables) };
            Ok(Opened { engine, run_id: INPUT_RUN_ID.into(), source_path: path.display().to_string(), prepared })
        }
        run => open(run, spread).await,
    }
}

/// The source named by an optional INPUT and an optional `--run` id; naming neither or both
/// is a usage error.
pub fn from_args(input: Option<&Path>, run: Option<&str>, store: &Location) -> Result<Source, SourceError> {
    match (input, run) {
        (Some(_), Some(_)) => Err(SourceError::Usage("give either an INPUT or --run, not both")),
        (Some(p), None) => Ok(Source::Input(p.to_path_buf())),
        (None, Some(id)) => Ok(Source::Run { store: store.clone(), run_id: id.to_string() }),
        (None, None) => Err(SourceError::Usage("give an INPUT (profile dir or file) or --run ID")),
    }
}
