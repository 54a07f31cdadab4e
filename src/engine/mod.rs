//! Engine: DataFusion over the store, read-only.
//!
//! Every table of the contract is registered over all runs of the store (hive partition
//! `run_id`). SQL is planned with DDL, DML and other statements disabled, so a query can
//! neither create, change nor copy data, and no table function reading other files exists.
//! A store's SQL runs in this process, or on a Ballista cluster ([`Placement`], feature
//! `ballista`); runs held in memory always run here.

pub mod ahead;
pub mod analyst;
#[cfg(feature = "ballista")]
pub mod cluster;
pub mod dictionary_groups;
pub mod functions;
pub mod placement;
pub mod queries;
pub mod reads;
pub mod rows;

pub use placement::{scheduler_address, Placement, WITHOUT_BALLISTA};

use crate::store::Location;
use crate::tables::{schema, ColumnsRead, RunTables};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::empty::EmptyTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::MemTable;
use datafusion::execution::context::SQLOptions;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::SessionStateBuilder;
use datafusion::optimizer::OptimizerRule;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::*;
use reads::Declared;
use std::sync::Arc;

/// Rows per in-memory batch handed to DataFusion.
const MEM_BATCH_ROWS: usize = 8192;

/// Cheap to clone: clones share the session (tables, configuration).
#[derive(Clone)]
pub struct Engine {
    pub ctx: SessionContext,
    /// The columns its tables hold (the others hold zeros, and no statement may read them),
    /// and the statements they were built for.
    built: Arc<Declared>,
}

/// A refused or failed query, as one line.
#[derive(Debug)]
pub struct QueryError(pub String);

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for QueryError {}

/// Arrow schema of a table as seen through the store (contract columns + run_id).
pub fn table_schema(t: &schema::Table) -> datafusion::arrow::datatypes::SchemaRef {
    let mut fields: Vec<_> = schema::arrow_schema(t).fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(datafusion::arrow::datatypes::Field::new("run_id", DataType::Utf8, false));
    Arc::new(datafusion::arrow::datatypes::Schema::new(fields))
}

/// How an engine spreads its queries over the cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Each query runs on every core: one query at a time (`profq run`, `profq sql`).
    Wide,
    /// Each query runs in one partition, for callers that run many independent queries at
    /// once (a summary runs about twenty): those fill the cores, and splitting each query
    /// would only add planning and repartitioning work.
    Narrow,
}

impl Spread {
    fn partitions(self) -> usize {
        match self {
            Spread::Wide => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            Spread::Narrow => 1,
        }
    }
}

/// The session settings every engine shares. One pass of the logical optimizer: a summary
/// plans about twenty queries anew, and the further passes added planning work without
/// making the queries cheaper to run.
fn session_config(partitions: usize) -> SessionConfig {
    SessionConfig::new().with_target_partitions(partitions).set_usize("datafusion.optimizer.max_passes", 1)
}

/// The runtime of every session profq builds: DataFusion's defaults, with profq's one
/// object-store registry, so that `s3://` and `gs://` tables resolve to the stores
/// [`crate::remote`] builds.
fn runtime_env() -> Arc<RuntimeEnv> {
    runtime_env_spilling_to(None)
}

/// [`runtime_env`], with files that spill out of memory written under `dir` (a cluster
/// executor's work directory) instead of the system's temporary directory.
fn runtime_env_spilling_to(dir: Option<&std::path::Path>) -> Arc<RuntimeEnv> {
    // No cache of listings: on its first use it lists a whole table to serve every later
    // prefix, so a query of one run would list the partitions of every run. Without it a
    // query lists only the partitions its `run_id = …` filter names, which keeps the cost of
    // a one-run query flat as a store grows.
    let caches = datafusion::execution::cache::cache_manager::CacheManagerConfig::default().with_list_files_cache_limit(0);
    let mut runtime = RuntimeEnvBuilder::new().with_object_store_registry(crate::remote::registry()).with_cache_manager(caches);
    if let Some(dir) = dir {
        runtime = runtime.with_temp_file_path(dir);
    }
    runtime.build_arc().expect("a runtime of defaults builds")
}

/// When a session's tables get their rows: at once, or after its statements are planned
/// ([`Engine::pending`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rows {
    Given,
    Later,
}

/// A session for tables held in memory, with profq's SQL functions.
fn in_memory_session(spread: Spread, rows: Rows) -> SessionContext {
    let mut state = SessionStateBuilder::new().with_config(session_config(spread.partitions())).with_runtime_env(runtime_env()).with_default_features();
    if spread == Spread::Narrow {
        state = state.with_optimizer_rules(narrow_logical_rules()).with_physical_optimizer_rules(narrow_physical_rules(rows));
    }
    local_session(state)
}

/// A session that runs in this process, with profq's SQL functions and its operator for
/// grouping by a name column ([`dictionary_groups`]) after the other physical rules.
fn local_session(state: SessionStateBuilder) -> SessionContext {
    let state = state.with_physical_optimizer_rule(Arc::new(dictionary_groups::DictionaryGroups));
    let ctx = SessionContext::new_with_state(state.build());
    functions::register(&ctx);
    ctx
}

/// The logical optimizer rules of a [`Spread::Narrow`] session: DataFusion's, less those
/// that only pay off on plans profq's queries do not have (empty relations, constant group
/// keys, duplicated expressions, unions, outer joins that filters make inner): ~7 ms less
/// planning per summary. Kept: the rewrites the physical planner needs (subqueries,
/// DISTINCT, simplified calls such as `coalesce`), join keys out of filters, filter
/// pushdown and column pruning.
fn narrow_logical_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    use datafusion::optimizer::{
        decorrelate_lateral_join::DecorrelateLateralJoin, decorrelate_predicate_subquery::DecorrelatePredicateSubquery,
        eliminate_cross_join::EliminateCrossJoin, extract_equijoin_predicate::ExtractEquijoinPredicate, optimize_projections::OptimizeProjections,
        push_down_filter::PushDownFilter, replace_distinct_aggregate::ReplaceDistinctWithAggregate, rewrite_set_comparison::RewriteSetComparison,
        scalar_subquery_to_join::ScalarSubqueryToJoin, simplify_expressions::SimplifyExpressions,
    };
    vec![
        Arc::new(RewriteSetComparison::new()),
        Arc::new(SimplifyExpressions::new()),
        Arc::new(ReplaceDistinctWithAggregate::new()),
        Arc::new(DecorrelatePredicateSubquery::new()),
        Arc::new(ScalarSubqueryToJoin::new()),
        Arc::new(DecorrelateLateralJoin::new()),
        Arc::new(ExtractEquijoinPredicate::new()),
        Arc::new(EliminateCrossJoin::new()),
        Arc::new(PushDownFilter::new()),
        Arc::new(OptimizeProjections::new()),
    ]
}

/// The physical optimizer rules of a [`Spread::Narrow`] session: DataFusion's, less those
/// that only pay off on files, several partitions or unbounded input, or only check the
/// plan. A summary plans about twenty statements anew every run, a fixed cost on any
/// input, about half of it in the physical optimizer (docs/architecture.md).
/// Left out: statistics-answered aggregates, filter and sort pushdown into sources,
/// limit-aware aggregation and top-k variants, probe-side buffering, cooperative yielding,
/// the final sanity check, and projection pushdown (the logical plan already prunes the
/// scans' columns, and rebuilding every projection's equivalences made execution no faster). Kept: the ordering and distribution requirements (they make
/// plans runnable; for one partition, the cheaper [`OneStreamRequirements`]), build-side
/// choice, one-stage aggregates and limit pushdown (they keep execution as fast). Build-side
/// choice goes by the tables' statistics, so statements planned before their rows exist
/// ([`Rows::Later`]) are planned without it: there it could never swap a join.
fn narrow_physical_rules(rows: Rows) -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    use datafusion::physical_optimizer::{
        combine_partial_final_agg::CombinePartialFinalAggregate, ensure_requirements::EnsureRequirements, join_selection::JoinSelection,
        limit_pushdown::LimitPushdown, output_requirements::OutputRequirements,
    };
    let build_side: Option<Arc<dyn PhysicalOptimizerRule + Send + Sync>> = (rows == Rows::Given).then(|| Arc::new(JoinSelection::new()) as _);
    let rules: [Option<Arc<dyn PhysicalOptimizerRule + Send + Sync>>; 6] = [
        Some(Arc::new(OutputRequirements::new_add_mode())),
        build_side,
        Some(Arc::new(OneStreamRequirements(EnsureRequirements::new()))),
        Some(Arc::new(CombinePartialFinalAggregate::new())),
        Some(Arc::new(OutputRequirements::new_remove_mode())),
        Some(Arc::new(LimitPushdown::new())),
    ];
    rules.into_iter().flatten().collect()
}

/// DataFusion's `EnsureRequirements` for a [`Spread::Narrow`] session, whose scans have one
/// partition each: a union's output (one partition per input) is merged into one first,
/// and then, every operator having one partition, every distribution requirement holds, so
/// only the sort requirements are enforced (a `SortExec` where an operator needs ordered
/// input, e.g. a window). The full rule makes seven passes over the plan, rebuilding
/// operators and their equivalence properties in each: a large share of a small capture's
/// summary.
/// A plan with any other multi-partition operator gets the full rule.
#[derive(Debug)]
struct OneStreamRequirements(datafusion::physical_optimizer::ensure_requirements::EnsureRequirements);

/// Whether every operator of `plan` has one partition, a union merged into one counting as one.
fn one_stream(plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> bool {
    use datafusion::physical_plan::{coalesce_partitions::CoalescePartitionsExec, union::UnionExec, ExecutionPlanProperties};
    let children = plan.children();
    match children.as_slice() {
        [union] if plan.is::<CoalescePartitionsExec>() && union.is::<UnionExec>() => union.children().into_iter().all(one_stream),
        _ => plan.output_partitioning().partition_count() <= 1 && children.into_iter().all(one_stream),
    }
}

impl PhysicalOptimizerRule for OneStreamRequirements {
    fn optimize(
        &self,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        config: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::physical_optimizer::enforce_sorting::{ensure_sorting, PlanWithCorrespondingSort};
        use datafusion::physical_plan::ExecutionPlanProperties;
        use datafusion::physical_plan::{coalesce_partitions::CoalescePartitionsExec, union::UnionExec};
        let plan = plan
            .transform_up(|node| {
                let union = node.is::<UnionExec>() && node.output_partitioning().partition_count() > 1;
                Ok(if union { Transformed::yes(Arc::new(CoalescePartitionsExec::new(node)) as _) } else { Transformed::no(node) })
            })?
            .data;
        if !one_stream(&plan) {
            return self.0.optimize(plan, config);
        }
        Ok(PlanWithCorrespondingSort::new_default(plan).transform_up(ensure_sorting)?.data.plan)
    }

    fn name(&self) -> &str {
        "OneStreamRequirements"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

impl Engine {
    fn over_every_column(ctx: SessionContext) -> Engine {
        Engine { ctx, built: Arc::new(Declared::columns(ColumnsRead::every())) }
    }

    pub async fn open(store: &Location) -> Result<Engine, QueryError> {
        Engine::open_with(store, Spread::Wide).await
    }

    /// An engine over every run of a store, a directory or a bucket, where this process's
    /// store engines run ([`Placement::chosen`]).
    pub async fn open_with(store: &Location, spread: Spread) -> Result<Engine, QueryError> {
        Engine::open_on(store, Placement::chosen(), spread).await
    }

    /// An engine over every run of a store, placed as `placement` says: each table a listing
    /// table over its files (hive partition `run_id`), or empty when it has none. `spread`
    /// is for this process's cores: a cluster's queries are always spread wide, over its
    /// executors.
    pub async fn open_on(store: &Location, placement: &Placement, spread: Spread) -> Result<Engine, QueryError> {
        let spread = if *placement == Placement::Here { spread } else { Spread::Wide };
        // Statistics would be read from every file's footer while planning (and again while
        // executing): over many runs' small files that doubles the reads of a scan.
        let config = session_config(spread.partitions()).with_information_schema(true).with_collect_statistics(false);
        let ctx = match placement {
            Placement::Here => local_session(SessionStateBuilder::new().with_config(config).with_runtime_env(runtime_env()).with_default_features()),
            #[cfg(feature = "ballista")]
            Placement::Cluster { scheduler } => cluster::client(scheduler, config).await?,
            #[cfg(not(feature = "ballista"))]
            Placement::Cluster { .. } => return Err(QueryError(WITHOUT_BALLISTA.into())),
        };
        register_store_tables(&ctx, store).await?;
        Ok(Engine::over_every_column(ctx))
    }

    /// An engine over one run held in memory (summaries of an INPUT without a store).
    pub fn from_tables(tables: &RunTables, run_id: &str, spread: Spread) -> Result<Engine, QueryError> {
        Engine::from_runs(&[(tables, run_id)], spread)
    }

    /// An engine over several runs held in memory, each under its run id.
    pub fn from_runs(runs: &[(&RunTables, &str)], spread: Spread) -> Result<Engine, QueryError> {
        Engine::from_runs_built(runs, spread, ColumnsRead::every())
    }

    /// [`Engine::from_runs`] over tables that hold only the columns `built` reads (the others
    /// zeros, which no statement may read: see [`ColumnsRead`]).
    pub fn from_runs_built(runs: &[(&RunTables, &str)], spread: Spread, built: ColumnsRead) -> Result<Engine, QueryError> {
        let partitions = spread.partitions();
        let ctx = in_memory_session(spread, Rows::Given);
        for t in schema::TABLES {
            let mem = MemTable::try_new(table_schema(t), dealt_batches(t, runs, partitions)?).map_err(|e| QueryError(e.to_string()))?;
            ctx.register_table(t.name, Arc::new(mem)).map_err(|e| QueryError(e.to_string()))?;
        }
        Ok(Engine { ctx, built: Arc::new(Declared::columns(built)) })
    }

    /// The tables of one run as an analysis in memory holds them, in batches of the contract
    /// schema (run_id left out): every table, but of `events` only the events of interest
    /// ([`crate::tables::events_of_interest`]), as for an INPUT, and of `ops` and `gaps`
    /// only the columns `read` reads (the others zeros, as for an INPUT). The events are found
    /// through the run's distinct (name, category) pairs in `event_totals`, so that a run
    /// without any reads none of its events.
    pub async fn run_tables(&self, run_id: &str, read: &ColumnsRead) -> Result<RunTables, QueryError> {
        let mut out = Vec::new();
        let run = run_id.replace('\'', "''");
        for t in schema::TABLES {
            let pruned = matches!(t.name, "ops" | "gaps");
            let selected: Vec<&schema::Column> = t.columns.iter().filter(|c| !pruned || read.reads(t.name, c.name)).collect();
            let mut cols: Vec<String> = selected.iter().map(|c| format!("e.\"{}\"", c.name)).collect();
            if cols.is_empty() {
                // The rows still count (count(*)).
                cols.push("e.\"run_id\"".into());
            }
            let sql = if t.name == "events" {
                format!(
                    "SELECT {} FROM (SELECT DISTINCT name, category FROM event_totals WHERE run_id = '{run}' \
                       AND (is_compile_event(CAST(name AS VARCHAR)) OR is_transfer_event(CAST(name AS VARCHAR), CAST(category AS VARCHAR)))) k \
                     JOIN events e ON e.name = k.name AND e.category IS NOT DISTINCT FROM k.category \
                     WHERE e.run_id = '{run}' ORDER BY e.event_id",
                    cols.join(", ")
                )
            } else {
                format!("SELECT {} FROM {} e WHERE e.run_id = '{run}'", cols.join(", "), t.name)
            };
            let batches = self.sql(&sql).await?;
            let contract = schema::arrow_schema(t);
            let batches = batches
                .into_iter()
                .map(|b| {
                    let unread = crate::tables::columns::Unread::rows(b.num_rows());
                    let mut given = selected.iter().zip(b.columns()).map(|(c, array)| (c.name, array.clone())).peekable();
                    let columns = t
                        .columns
                        .iter()
                        .map(|c| match given.peek() {
                            Some((name, _)) if *name == c.name => given.next().expect("peeked").1,
                            _ => unread.column(c),
                        })
                        .collect();
                    RecordBatch::try_new(contract.clone(), columns).map_err(|e| QueryError(format!("{}: {e}", t.name)))
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.push((t.name, batches));
        }
        Ok(RunTables::new(out))
    }

    /// Runs a named query with its parameters.
    pub async fn run_named(&self, name: &str, params: &std::collections::BTreeMap<String, String>) -> Result<Vec<RecordBatch>, QueryError> {
        let q = queries::find(name).ok_or_else(|| {
            let names: Vec<&str> = queries::QUERIES.iter().map(|q| q.name).collect();
            QueryError(format!("no query {name:?}; queries: {}", names.join(", ")))
        })?;
        let sql = q.bind(params).map_err(QueryError)?;
        self.sql(&sql).await.map_err(|e| QueryError(format!("query {name}: {e}")))
    }

    /// Runs one read-only SQL statement.
    pub async fn sql(&self, sql: &str) -> Result<Vec<RecordBatch>, QueryError> {
        self.plan(sql).await?.execute().await
    }

    /// Plans one read-only SQL statement, down to its physical plan.
    pub async fn plan(&self, sql: &str) -> Result<ahead::Planned, QueryError> {
        if let Some((table, column)) = self.built.first_missing(sql) {
            return Err(QueryError(format!("this analysis built its tables without {table}.{column}, which a statement it did not declare ahead reads")));
        }
        let options = SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false);
        let to_plan = std::time::Instant::now();
        let df = self.ctx.sql_with_options(sql, options).await.map_err(|e| {
            let msg = e.to_string();
            if msg.contains("not supported") && (msg.contains("DDL") || msg.contains("DML") || msg.contains("Statement")) {
                QueryError(format!("profq sql is read-only (SELECT, WITH, EXPLAIN): {}", msg.trim()))
            } else {
                QueryError(msg.trim().to_string())
            }
        })?;
        let logical = std::time::Instant::now();
        let task = Arc::new(df.task_ctx());
        let plan = df.create_physical_plan().await.map_err(failed)?;
        if crate::timing::serial() {
            // Planning apart from execution (a summary's queries run one at a time here).
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            eprintln!("profq: timing:   SQL to plan {:.1} ms, optimize and plan {:.1} ms", ms(logical - to_plan), ms(logical.elapsed()));
        }
        Ok(ahead::Planned { plan, task })
    }
}

/// Registers every table of the contract over a store's files: a listing table (hive
/// partition `run_id`) where the table has files, else an empty table. Both kinds travel in
/// a plan to a cluster's scheduler (a MemTable would not).
async fn register_store_tables(ctx: &SessionContext, store: &Location) -> Result<(), QueryError> {
    let urls = store.table_urls().await.map_err(QueryError)?;
    for t in schema::TABLES {
        let table: Arc<dyn datafusion::catalog::TableProvider> = match urls.get(t.name) {
            Some(url) => {
                let url = ListingTableUrl::parse(url).map_err(|e| QueryError(e.to_string()))?;
                let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
                    .with_file_extension(".parquet")
                    .with_table_partition_cols(vec![("run_id".to_string(), DataType::Utf8)]);
                let config = ListingTableConfig::new(url).with_listing_options(options).with_schema(schema::arrow_schema(t));
                Arc::new(ListingTable::try_new(config).map_err(|e| QueryError(e.to_string()))?)
            }
            None => Arc::new(EmptyTable::new(table_schema(t))),
        };
        ctx.register_table(t.name, table).map_err(|e| QueryError(e.to_string()))?;
    }
    Ok(())
}

/// Table `t`'s batches of `runs`, each with its run's id, dealt to `partitions` partitions at
/// the size DataFusion's operators expect (slices share the buffers, and every slice of a run
/// shares one run_id column).
fn dealt_batches(t: &schema::Table, runs: &[(&RunTables, &str)], partitions: usize) -> Result<Vec<Vec<RecordBatch>>, QueryError> {
    use datafusion::arrow::array::{ArrayRef, StringArray};
    let full = table_schema(t);
    let mut by_partition: Vec<Vec<RecordBatch>> = vec![Vec::new(); partitions];
    let mut k = 0;
    for (tables, run_id) in runs {
        let batches = tables.get(t.name).unwrap_or(&[]);
        let longest = batches.iter().map(|b| b.num_rows().min(MEM_BATCH_ROWS)).max().unwrap_or(0);
        let run_ids: ArrayRef = Arc::new(StringArray::from(vec![*run_id; longest]));
        for b in batches {
            let mut offset = 0;
            while offset < b.num_rows() {
                let len = MEM_BATCH_ROWS.min(b.num_rows() - offset);
                let mut cols: Vec<ArrayRef> = b.columns().iter().take(full.fields().len() - 1).map(|c| c.slice(offset, len)).collect();
                cols.push(run_ids.slice(0, len));
                by_partition[k % partitions].push(RecordBatch::try_new(full.clone(), cols).map_err(|e| QueryError(format!("{}: {e}", t.name)))?);
                k += 1;
                offset += len;
            }
        }
    }
    Ok(by_partition)
}

/// A query that failed after planning began, as one line.
fn failed(e: datafusion::error::DataFusionError) -> QueryError {
    QueryError(e.to_string().trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array};
    use datafusion::arrow::datatypes::{Field, Schema};

    /// A narrow session (sort requirements only, unions merged into one stream) answers
    /// as a wide one with every DataFusion rule, on the shapes a summary's queries take:
    /// a window over a union, a join, an aggregate and an ordered result.
    #[tokio::test]
    async fn a_narrow_session_answers_as_a_wide_one() {
        let schema = Arc::new(Schema::new(vec![Field::new("step", DataType::Int64, false), Field::new("ns", DataType::Int64, false)]));
        let column = |v: Vec<i64>| Arc::new(Int64Array::from(v)) as ArrayRef;
        let rows = RecordBatch::try_new(schema.clone(), vec![column(vec![1, 1, 2, 2, 3, 3, 3]), column(vec![5, 9, 4, 4, 7, 1, 8])]).unwrap();
        let sql = "WITH per AS (SELECT step, ns FROM t UNION ALL SELECT step, ns * 2 FROM t WHERE ns > 4), \
                   lagged AS (SELECT step, ns, ns - min(ns) OVER (PARTITION BY step) AS lag, \
                              row_number() OVER (PARTITION BY step ORDER BY ns DESC) AS rk FROM per) \
                   SELECT l.step, count(*) AS n, sum(l.lag) AS lag, max(l.rk) AS rk, min(s.ns) AS least \
                   FROM lagged l JOIN (SELECT step, min(ns) AS ns FROM t GROUP BY step) s ON s.step = l.step \
                   GROUP BY l.step ORDER BY l.step";
        let mut answers = Vec::new();
        for spread in [Spread::Narrow, Spread::Wide] {
            let ctx = in_memory_session(spread, Rows::Given);
            let partitions = (0..spread.partitions()).map(|p| if p == 0 { vec![rows.clone()] } else { Vec::new() }).collect();
            ctx.register_table("t", Arc::new(MemTable::try_new(schema.clone(), partitions).unwrap())).unwrap();
            let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
            answers.push(crate::engine::rows::rows(&batches));
        }
        assert_eq!(answers[0].len(), 3);
        assert_eq!(answers[0], answers[1]);
    }
}
