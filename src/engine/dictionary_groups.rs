//! GROUP BY one name column, grouped on its dictionary.
//!
//! Every name column of profq's tables is `Dictionary(Int32, Utf8)`: a few hundred distinct
//! strings per file, repeated over thousands of rows. DataFusion 55 groups such a column row
//! by row through its row format (each row's string copied and compared), which makes a
//! `GROUP BY name` over a store of many runs about half aggregation. Grouped on the dictionary,
//! each distinct string of a batch is looked up once and each row costs an index.
//!
//! [`DictionaryGroups`] is the physical optimizer rule: it wraps each aggregate that reads raw
//! rows and groups by a single `Dictionary(Int32, Utf8)` column (no grouping sets, every
//! aggregate with a groups accumulator, no limit, unordered input) in a [`DictionaryGroupsExec`].
//! That runs the aggregate's own accumulators on the aggregate's own arguments and filters,
//! with group indices from the dictionary, and emits what the aggregate would (states for a
//! partial aggregate, values for a single one), with the same schema and groups in the same
//! first-seen order. Plans it does not match are left as they are. It is for this process's
//! sessions only: a Ballista cluster cannot ship an operator it does not know.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{aggregate_expressions, AggregateExec, AggregateInputMode, AggregateOutputMode};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, InputOrderMode, PhysicalExpr, PlanProperties, SendableRecordBatchStream};
use futures::StreamExt;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// The rule: see the module doc.
#[derive(Debug, Default)]
pub struct DictionaryGroups;

impl PhysicalOptimizerRule for DictionaryGroups {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(plan
            .transform_up(|node| {
                Ok(match node.downcast_ref::<AggregateExec>() {
                    Some(agg) if groups_on_dictionary(agg) => Transformed::yes(Arc::new(DictionaryGroupsExec::new(Arc::clone(&node))) as _),
                    _ => Transformed::no(node),
                })
            })?
            .data)
    }

    fn name(&self) -> &str {
        "DictionaryGroups"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `agg` is one [`DictionaryGroupsExec`] runs as it would run.
fn groups_on_dictionary(agg: &AggregateExec) -> bool {
    let group_by = agg.group_expr();
    let [(key, _)] = group_by.expr() else { return false };
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    agg.mode().input_mode() == AggregateInputMode::Raw
        && !group_by.has_grouping_set()
        && group_by.groups().iter().all(|g| g.iter().all(|null| !null))
        && key.data_type(&agg.input_schema()).is_ok_and(|t| t == dictionary)
        && agg.aggr_expr().iter().all(|a| a.groups_accumulator_supported())
        && agg.limit_options().is_none()
        && agg.dynamic_expressions_produced().is_empty()
        && *agg.input_order_mode() == InputOrderMode::Linear
}

/// An [`AggregateExec`] run with group indices from its key's dictionary.
#[derive(Debug)]
pub struct DictionaryGroupsExec {
    /// The aggregate replaced: its input, expressions, schema and properties.
    agg: Arc<dyn ExecutionPlan>,
    metrics: ExecutionPlanMetricsSet,
}

impl DictionaryGroupsExec {
    fn new(agg: Arc<dyn ExecutionPlan>) -> DictionaryGroupsExec {
        DictionaryGroupsExec { agg, metrics: ExecutionPlanMetricsSet::new() }
    }

    fn aggregate(&self) -> &AggregateExec {
        self.agg.downcast_ref::<AggregateExec>().expect("wraps an AggregateExec")
    }
}

impl DisplayAs for DictionaryGroupsExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "DictionaryGroupsExec: ")?;
        self.aggregate().fmt_as(t, f)
    }
}

impl ExecutionPlan for DictionaryGroupsExec {
    fn name(&self) -> &str {
        "DictionaryGroupsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.agg.properties()
    }

    fn apply_expressions(&self, f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        self.agg.apply_expressions(f)
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.aggregate().input()]
    }

    #[allow(deprecated)]
    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(DictionaryGroupsExec::new(Arc::clone(&self.agg).with_new_children(children)?)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let agg = self.aggregate();
        let schema = agg.schema();
        let input = agg.input().execute(partition, context)?;
        let mut groups = Groups {
            key: Arc::clone(&agg.group_expr().expr()[0].0),
            arguments: aggregate_expressions(agg.aggr_expr(), agg.mode(), 0)?,
            filters: agg.filter_expr().to_vec(),
            accumulators: agg.aggr_expr().iter().map(|a| a.create_groups_accumulator()).collect::<Result<_>>()?,
            partial: agg.mode().output_mode() == AggregateOutputMode::Partial,
            names: HashMap::default(),
            values: Vec::new(),
            null_group: None,
            seen: None,
            group_of_key: Vec::new(),
            indices: Vec::new(),
        };
        let metrics = BaselineMetrics::new(&self.metrics, partition);
        let out_schema = Arc::clone(&schema);
        let stream = futures::stream::once(async move {
            let mut input = input;
            while let Some(batch) = input.next().await {
                let batch = batch?;
                let _timer = metrics.elapsed_compute().timer();
                groups.update(&batch)?;
            }
            let _timer = metrics.elapsed_compute().timer();
            let out = groups.emit(&out_schema)?;
            metrics.record_output(out.num_rows());
            Ok(out)
        })
        .filter(|b| std::future::ready(!matches!(b, Ok(b) if b.num_rows() == 0)));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// Whether two string arrays are the same buffers (an array held alive cannot have its buffers
/// reused by another).
fn same_strings(a: &StringArray, b: &StringArray) -> bool {
    a.len() == b.len()
        && a.values().as_ptr() == b.values().as_ptr()
        && a.offsets().inner().inner().as_ptr() == b.offsets().inner().inner().as_ptr()
        && a.nulls() == b.nulls()
}

/// The groups of one partition, with the aggregate's accumulators.
struct Groups {
    key: Arc<dyn PhysicalExpr>,
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    /// Emit states (a partial aggregate) rather than values.
    partial: bool,
    /// Each distinct string's group, and the strings in group order.
    names: HashMap<String, usize>,
    values: Vec<Option<String>>,
    null_group: Option<usize>,
    /// The dictionary `group_of_key` was built for, held so that its buffers stay its own:
    /// batches that share a dictionary share the lookups.
    seen: Option<ArrayRef>,
    /// Each dictionary key's group, `usize::MAX` until a row uses the key.
    group_of_key: Vec<usize>,
    indices: Vec<usize>,
}

impl Groups {
    fn group_of_string(&mut self, s: &str) -> usize {
        if let Some(&g) = self.names.get(s) {
            return g;
        }
        let g = self.values.len();
        self.values.push(Some(s.to_string()));
        self.names.insert(s.to_string(), g);
        g
    }

    fn group_of_null(&mut self) -> usize {
        *self.null_group.get_or_insert_with(|| {
            self.values.push(None);
            self.values.len() - 1
        })
    }

    fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        let rows = batch.num_rows();
        let key = self.key.evaluate(batch)?.into_array(rows)?;
        let dict = key.as_dictionary::<Int32Type>();
        let strings: &StringArray = dict.values().as_string();
        if !self.seen.as_ref().is_some_and(|seen| same_strings(seen.as_string(), strings)) {
            self.seen = Some(Arc::clone(dict.values()));
            self.group_of_key.clear();
            self.group_of_key.resize(strings.len(), usize::MAX);
        }
        let mut indices = std::mem::take(&mut self.indices);
        indices.clear();
        for (row, &k) in dict.keys().values().iter().enumerate() {
            let g = if dict.keys().is_null(row) {
                self.group_of_null()
            } else {
                let k = k as usize;
                match self.group_of_key[k] {
                    usize::MAX => {
                        let g = if strings.is_null(k) { self.group_of_null() } else { self.group_of_string(strings.value(k)) };
                        self.group_of_key[k] = g;
                        g
                    }
                    g => g,
                }
            };
            indices.push(g);
        }
        let total = self.values.len();
        for ((acc, args), filter) in self.accumulators.iter_mut().zip(&self.arguments).zip(&self.filters) {
            let values = args.iter().map(|e| e.evaluate(batch).and_then(|v| v.into_array(rows))).collect::<Result<Vec<ArrayRef>>>()?;
            let filter = filter.as_ref().map(|f| f.evaluate(batch).and_then(|v| v.into_array(rows))).transpose()?;
            acc.update_batch(&values, &indices, filter.as_ref().map(|f| f.as_boolean() as &BooleanArray), total)?;
        }
        self.indices = indices;
        Ok(())
    }

    /// The groups and their states or values, as the aggregate would emit them.
    fn emit(&mut self, schema: &datafusion::arrow::datatypes::SchemaRef) -> Result<RecordBatch> {
        let strings: StringArray = self.values.iter().map(|v| v.as_deref()).collect();
        let mut columns = vec![cast(&strings, schema.field(0).data_type())?];
        for acc in &mut self.accumulators {
            if self.partial {
                columns.extend(acc.state(EmitTo::All)?);
            } else {
                columns.push(acc.evaluate(EmitTo::All)?);
            }
        }
        Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{DictionaryArray, Float64Array, Int64Array};
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::execution::SessionStateBuilder;
    use datafusion::prelude::SessionContext;

    fn names(keys: &[Option<i32>], values: &[Option<&str>]) -> ArrayRef {
        let values: ArrayRef = Arc::new(values.iter().copied().collect::<StringArray>());
        Arc::new(DictionaryArray::<Int32Type>::try_new(keys.iter().copied().collect(), values).unwrap())
    }

    /// Grouped on the dictionary, every aggregate answers as DataFusion's own grouping does:
    /// dictionaries shared by batches and not, a string under two keys, null keys and null
    /// values, filters, DISTINCT, HAVING, a second aggregate level and a single-partition plan.
    #[tokio::test]
    async fn answers_as_datafusion_groups_rows() {
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let schema =
            Arc::new(Schema::new(vec![Field::new("name", dict, true), Field::new("ns", DataType::Int64, true), Field::new("f", DataType::Float64, true)]));
        let batch = |name: ArrayRef, ns: Vec<Option<i64>>, f: Vec<f64>| {
            RecordBatch::try_new(schema.clone(), vec![name, Arc::new(Int64Array::from(ns)), Arc::new(Float64Array::from(f))]).unwrap()
        };
        let shared = names(&[Some(0), Some(1), Some(2), None, Some(0)], &[Some("fusion.1"), Some("all-reduce"), Some("fusion.1"), None]);
        let shared_values = shared.as_dictionary::<Int32Type>().values().clone();
        let again: ArrayRef = Arc::new(DictionaryArray::<Int32Type>::try_new(vec![Some(3), Some(1), Some(1)].into_iter().collect(), shared_values).unwrap());
        let other = names(&[Some(1), Some(0), Some(2), Some(2)], &[Some("copy"), Some("all-reduce"), Some("fusion.1")]);
        let partitions = vec![
            vec![
                batch(shared, vec![Some(5), Some(7), None, Some(2), Some(9)], vec![0.1, 0.2, 0.3, 0.4, 0.5]),
                batch(again, vec![Some(1), Some(2), Some(3)], vec![1.5, 2.5, 3.5]),
            ],
            vec![batch(other, vec![Some(4), Some(6), Some(8), Some(10)], vec![0.7, 0.11, 0.13, 0.17])],
        ];
        let queries = [
            "SELECT name, count(*), count(ns), sum(ns), min(ns), max(ns), avg(f), sum(f) FROM t GROUP BY name ORDER BY name NULLS FIRST",
            "SELECT name, sum(ns) FILTER (WHERE f > 0.2), count(DISTINCT ns) FROM t GROUP BY name ORDER BY name NULLS FIRST",
            "SELECT name, sum(ns) AS s FROM t GROUP BY name HAVING sum(ns) > 5 ORDER BY s DESC, name",
            "SELECT n, count(*) FROM (SELECT name, count(*) AS n FROM t GROUP BY name) GROUP BY n ORDER BY n",
            "SELECT name FROM t GROUP BY name ORDER BY name NULLS LAST",
        ];
        for sql in queries {
            let mut answers = Vec::new();
            for (rule, target_partitions) in [(false, 2), (true, 2), (true, 1)] {
                let config = datafusion::prelude::SessionConfig::new().with_target_partitions(target_partitions);
                let mut state = SessionStateBuilder::new().with_config(config).with_default_features();
                if rule {
                    state = state.with_physical_optimizer_rule(Arc::new(DictionaryGroups));
                }
                let ctx = SessionContext::new_with_state(state.build());
                ctx.register_table("t", Arc::new(MemTable::try_new(schema.clone(), partitions.clone()).unwrap())).unwrap();
                let df = ctx.sql(sql).await.unwrap();
                let plan = format!("{}", datafusion::physical_plan::displayable(df.clone().create_physical_plan().await.unwrap().as_ref()).indent(false));
                // (DISTINCT groups by (name, ns) first, which stays DataFusion's.)
                assert!(plan.contains("DictionaryGroupsExec") == rule || sql.contains("DISTINCT"), "{sql}\n{plan}");
                answers.push(crate::engine::rows::rows(&df.collect().await.unwrap()));
            }
            assert!(!answers[0].is_empty(), "{sql}");
            assert_eq!(answers[0], answers[1], "{sql}");
            assert_eq!(answers[0], answers[2], "{sql}");
        }
    }
}
