//! Planning ahead: an analysis of an INPUT plans its SQL while the INPUT is still decoding.
//!
//! Planning depends on the tables' schemas only, and a summary's ~20 statements take about
//! as long to plan as to run. An engine made by [`Engine::pending`] has every table of the
//! contract registered with its schema and no rows yet; [`TableSlots::fill`] hands it the
//! run's batches once they are built, and plans made before that read them when executed.
//!
//! The statements are planned by [`IdlePlanner`], on a thread of idle priority
//! (`SCHED_IDLE` on Linux), from the start of the decode: the planner gets the cycles the
//! decode leaves, the second core while one reads the metadata and HLO modules, then the
//! gaps in the derive and the table build, though it still shares the caches and the memory
//! bus with them. Starting with the decode matters most for small captures, which are
//! decoded before a later planner could plan anything (docs/architecture.md, Planning ahead).
//!
//! A named query whose rows come only from one table (`Rows only from:`, e.g. the
//! collectives or the compile events) is planned only once the load says that table gets
//! rows ([`RowsSeen`]), and an analysis whose table stayed empty skips it ([`Prepared`]):
//! a capture without collectives, compilation or transfers plans three statements fewer.

use super::{dealt_batches, table_schema, Engine, QueryError, Spread};
use crate::tables::{schema, RunTables};
use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::memory::{LazyBatchGenerator, LazyMemoryExec};
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::RwLock;
use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

/// A table's batches, dealt to its partitions; set once.
type Slot = Arc<OnceLock<Vec<Vec<RecordBatch>>>>;

/// Where the batches of an engine made by [`Engine::pending`] go, once they exist.
#[derive(Clone)]
pub struct TableSlots {
    slots: Arc<Vec<(&'static str, Slot)>>,
    partitions: usize,
}

impl TableSlots {
    /// Gives every table its batches from `runs`, each run under its id (once; a table
    /// already filled keeps its batches).
    pub fn fill(&self, runs: &[(&RunTables, &str)]) -> Result<(), QueryError> {
        for (t, (name, slot)) in schema::TABLES.iter().zip(self.slots.iter()) {
            debug_assert_eq!(t.name, *name);
            let _ = slot.set(dealt_batches(t, runs, self.partitions)?);
        }
        Ok(())
    }
}

/// A table whose rows arrive after queries over it are planned.
#[derive(Debug)]
struct PendingTable {
    name: &'static str,
    schema: SchemaRef,
    slot: Slot,
    partitions: usize,
}

#[async_trait]
impl TableProvider for PendingTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn table_type(&self) -> TableType {
        TableType::Base
    }
    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let generators = (0..self.partitions)
            .map(|partition| {
                let reader = SlotReader { table: self.name, slot: self.slot.clone(), partition, next: 0 };
                Arc::new(RwLock::new(reader)) as Arc<RwLock<dyn LazyBatchGenerator>>
            })
            .collect();
        Ok(Arc::new(LazyMemoryExec::try_new(self.schema.clone(), generators)?.with_projection(projection.cloned())))
    }
}

/// Reads one partition of a filled slot, batch by batch (batches share their buffers).
#[derive(Debug)]
struct SlotReader {
    table: &'static str,
    slot: Slot,
    partition: usize,
    next: usize,
}

impl std::fmt::Display for SlotReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} partition {}", self.table, self.partition)
    }
}

impl LazyBatchGenerator for SlotReader {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn generate_next_batch(&mut self) -> datafusion::error::Result<Option<RecordBatch>> {
        let Some(partitions) = self.slot.get() else {
            return Err(datafusion::error::DataFusionError::Execution(format!("table {} was read before its rows were given", self.table)));
        };
        let batch = partitions.get(self.partition).and_then(|batches| batches.get(self.next)).cloned();
        self.next += 1;
        Ok(batch)
    }
    fn reset_state(&self) -> Arc<RwLock<dyn LazyBatchGenerator>> {
        Arc::new(RwLock::new(SlotReader { table: self.table, slot: self.slot.clone(), partition: self.partition, next: 0 }))
    }
}

/// A statement planned, ready to execute.
pub struct Planned {
    pub plan: Arc<dyn ExecutionPlan>,
    pub task: Arc<TaskContext>,
}

impl Planned {
    /// Executes the statement.
    pub async fn execute(self) -> Result<Vec<RecordBatch>, QueryError> {
        let started = std::time::Instant::now();
        let explained = (crate::timing::serial() && std::env::var_os("PROFQ_EXPLAIN").is_some()).then(|| self.plan.clone());
        let out = datafusion::physical_plan::collect(self.plan, self.task).await.map_err(super::failed);
        if crate::timing::serial() {
            eprintln!("profq: timing:   execute {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
        }
        if let Some(plan) = explained {
            eprintln!("{}", datafusion::physical_plan::display::DisplayableExecutionPlan::with_metrics(plan.as_ref()).indent(true));
        }
        out
    }
}

impl Engine {
    /// An engine over one run in memory whose batches are given later ([`TableSlots::fill`]);
    /// queries may be planned before then, and executed after. Its tables will hold the
    /// columns `built` says (see [`super::reads::Declared`]).
    pub fn pending(spread: Spread, built: super::reads::Declared) -> (Engine, TableSlots) {
        let partitions = spread.partitions();
        let ctx = super::in_memory_session(spread, super::Rows::Later);
        let mut slots = Vec::new();
        for t in schema::TABLES {
            let slot = Slot::default();
            let table = PendingTable { name: t.name, schema: table_schema(t), slot: slot.clone(), partitions };
            ctx.register_table(t.name, Arc::new(table)).expect("a new session takes every table name");
            slots.push((t.name, slot));
        }
        (Engine { ctx, built: Arc::new(built) }, TableSlots { slots: Arc::new(slots), partitions })
    }
}

/// What an analysis knows before it runs its statements: those planned ahead, by key, and
/// the tables that hold no rows of its run.
#[derive(Default)]
pub struct Prepared {
    pub planned: BTreeMap<String, Planned>,
    pub without_rows: BTreeSet<&'static str>,
}

/// The tables of the contract that `tables` gives no rows.
pub fn tables_without_rows(tables: &RunTables) -> BTreeSet<&'static str> {
    schema::TABLES.iter().filter(|t| tables.rows(t.name) == 0).map(|t| t.name).collect()
}

/// A statement to plan ahead.
pub struct Statement {
    /// What its caller finds the plan by.
    pub key: String,
    pub sql: String,
    /// The table whose rows of the run every output row comes from (a named query's
    /// `Rows only from:`): planned only once that table is known to get rows.
    pub rows_only_from: Option<&'static str>,
}

/// What the planner and those who call it share.
#[derive(Default)]
struct Shared {
    state: Mutex<PlannerState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct PlannerState {
    queue: VecDeque<Statement>,
    planned: BTreeMap<String, Planned>,
    /// Tables known to get rows of the run.
    with_rows: BTreeSet<&'static str>,
}

impl Shared {
    fn change(&self, f: impl FnOnce(&mut PlannerState)) {
        f(&mut self.state.lock().expect("planner state"));
        self.changed.notify_all();
    }

    /// Waits for the first statement in the queue that may be planned now; none once the
    /// queue is empty.
    fn next_to_plan(&self) -> Option<Statement> {
        let mut s = self.state.lock().expect("planner state");
        loop {
            if s.queue.is_empty() {
                return None;
            }
            let with_rows = &s.with_rows;
            if let Some(k) = s.queue.iter().position(|q| q.rows_only_from.is_none_or(|t| with_rows.contains(t))) {
                return s.queue.remove(k);
            }
            s = self.changed.wait(s).expect("planner state");
        }
    }
}

/// Plans statements one after another on a thread of idle priority, from the moment it is
/// made; [`IdlePlanner::finish`] takes what is planned by then. A
/// statement whose rows come only from one table waits until [`RowsSeen`] says that table
/// gets rows: one never told so is never planned (its caller skips it when the table stays
/// empty).
pub struct IdlePlanner {
    shared: Arc<Shared>,
}

/// Tells an [`IdlePlanner`] which tables get rows, as soon as the loader knows.
#[derive(Clone)]
pub struct RowsSeen(Arc<Shared>);

impl RowsSeen {
    pub fn has_rows(&self, table: &'static str) {
        self.0.change(|s| {
            s.with_rows.insert(table);
        });
    }
}

impl IdlePlanner {
    /// A planner of `statements` on `engine`, in order.
    pub fn new(engine: &Engine, statements: Vec<Statement>) -> IdlePlanner {
        let shared = Arc::new(Shared::default());
        shared.state.lock().expect("planner state").queue = statements.into();
        let (engine, planner) = (engine.clone(), shared.clone());
        let spawned = std::thread::Builder::new().name("profq-planner".into()).spawn(move || {
            crate::work_queue::run_only_when_idle();
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else { return };
            while let Some(next) = planner.next_to_plan() {
                // A statement that fails to plan is planned again, and its error reported, by
                // the caller's own path.
                if let Ok(plan) = rt.block_on(engine.plan(&next.sql)) {
                    planner.change(|s| {
                        s.planned.insert(next.key, plan);
                    });
                }
            }
        });
        if spawned.is_err() {
            shared.change(|s| s.queue.clear());
        }
        IdlePlanner { shared }
    }

    /// What tells the planner which tables get rows.
    pub fn rows_seen(&self) -> RowsSeen {
        RowsSeen(self.shared.clone())
    }

    /// Stops planning and returns the statements planned so far, by key. One being planned
    /// at this moment is left to the caller (the planner finishes it in idle time, unread).
    pub fn finish(self) -> BTreeMap<String, Planned> {
        self.stop();
        std::mem::take(&mut self.shared.state.lock().expect("planner state").planned)
    }

    fn stop(&self) {
        // A planner waiting for a table's rows would otherwise wait for ever (the table
        // stayed empty, or the load failed).
        self.shared.change(|s| s.queue.clear());
    }
}

impl Drop for IdlePlanner {
    fn drop(&mut self) {
        self.stop();
    }
}
