//! A table whose batches are built only when a query reads them.
//!
//! An in-memory analysis of an INPUT does not build its `events` table up front: most
//! queries read `event_totals` and the derived tables, and the two that read events
//! (`recompilation`, `transfers`) join them against a list of candidate names that is
//! empty on most profiles. DataFusion's hash join then completes without polling its probe
//! side, so the events are never built. When a query does read them, each run's batches
//! are built once ([`Deferred`]) and served as slices.

use crate::tables::Deferred;
use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::memory::{LazyBatchGenerator, LazyMemoryExec};
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::RwLock;
use std::sync::Arc;

/// One run's batches: ready, or built on first read.
#[derive(Clone, Debug)]
pub enum RunBatches {
    Ready(Arc<Vec<RecordBatch>>),
    Deferred(Arc<Deferred>),
}

impl RunBatches {
    fn get(&self) -> Result<&[RecordBatch]> {
        match self {
            RunBatches::Ready(b) => Ok(b),
            RunBatches::Deferred(d) => d.get().map_err(|e| DataFusionError::Execution(format!("building the events table: {e}"))),
        }
    }
}

/// A table over several runs' batches (contract schema, `run_id` appended per run).
#[derive(Debug)]
pub struct DeferredTable(Shape);

impl DeferredTable {
    pub fn new(schema: SchemaRef, runs: Vec<(String, RunBatches)>, partitions: usize, batch_rows: usize) -> Self {
        DeferredTable(Shape { schema, runs: Arc::new(runs), partitions: partitions.max(1), batch_rows: batch_rows.max(1) })
    }
}

#[async_trait]
impl TableProvider for DeferredTable {
    fn schema(&self) -> SchemaRef {
        self.0.schema.clone()
    }
    fn table_type(&self) -> TableType {
        TableType::Base
    }
    async fn scan(&self, _state: &dyn Session, projection: Option<&Vec<usize>>, _filters: &[Expr], _limit: Option<usize>) -> Result<Arc<dyn ExecutionPlan>> {
        let generators = (0..self.0.partitions)
            .map(|partition| {
                let g = SliceGenerator { table: self.0.clone(), partition, cursor: Cursor::default() };
                Arc::new(RwLock::new(g)) as Arc<RwLock<dyn LazyBatchGenerator>>
            })
            .collect();
        Ok(Arc::new(LazyMemoryExec::try_new(self.0.schema.clone(), generators)?.with_projection(projection.cloned())))
    }
}

/// The table, as every partition's generator shares it.
#[derive(Clone, Debug)]
struct Shape {
    /// Contract columns + `run_id`.
    schema: SchemaRef,
    runs: Arc<Vec<(String, RunBatches)>>,
    partitions: usize,
    batch_rows: usize,
}

/// Position in (run, batch, row offset); `slice` counts slices handed out by any partition.
#[derive(Clone, Debug, Default)]
struct Cursor {
    run: usize,
    batch: usize,
    offset: usize,
    slice: usize,
}

/// Partition `partition` serves every `partitions`-th slice of `batch_rows` rows.
#[derive(Debug)]
struct SliceGenerator {
    table: Shape,
    partition: usize,
    cursor: Cursor,
}

impl std::fmt::Display for SliceGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeferredTable partition {} of {}", self.partition, self.table.partitions)
    }
}

impl LazyBatchGenerator for SliceGenerator {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn generate_next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let t = &self.table;
        loop {
            let c = &mut self.cursor;
            let Some((run_id, batches)) = t.runs.get(c.run) else { return Ok(None) };
            let batches = batches.get()?;
            let Some(b) = batches.get(c.batch) else {
                (c.run, c.batch, c.offset) = (c.run + 1, 0, 0);
                continue;
            };
            if c.offset >= b.num_rows() {
                (c.batch, c.offset) = (c.batch + 1, 0);
                continue;
            }
            let len = t.batch_rows.min(b.num_rows() - c.offset);
            let (offset, mine) = (c.offset, c.slice % t.partitions == self.partition);
            c.offset += len;
            c.slice += 1;
            if mine {
                let mut cols: Vec<ArrayRef> = b.slice(offset, len).columns().to_vec();
                cols.push(Arc::new(StringArray::from(vec![run_id.as_str(); len])));
                return Ok(Some(RecordBatch::try_new(t.schema.clone(), cols)?));
            }
        }
    }
    fn reset_state(&self) -> Arc<RwLock<dyn LazyBatchGenerator>> {
        Arc::new(RwLock::new(SliceGenerator { table: self.table.clone(), partition: self.partition, cursor: Cursor::default() }))
    }
}
