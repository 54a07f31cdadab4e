//! SQL functions profq adds to every engine, so named queries and ad-hoc SQL share them.
//! Each calls the Rust rule of the same name, so that SQL and the derivation agree by
//! construction: `canonical_name(name)`, `collective_kind(name)` and `is_stall_name(name)`
//! ([`crate::tables::derive::rules`]); `is_async_line(line)` ([`crate::model::names`]); `shape_signature(shape)` and `flop_proxy(family, signature)`, the reference's coarse
//! work measure (reference §3.12); `is_compile_event(name)` and
//! `is_transfer_event(name, category)`, `transfer_direction(name, category)` and
//! `is_collective_kernel(name)`, the events the analyses read one by one
//! ([`crate::tables::events_of_interest`]); `hta_kernel_type(name)`, HTA's type of a GPU
//! event ([`crate::tables::hta`]). They are Rust because SQL cannot fold over a
//! shape's dims, and the same rules are needed outside SQL. One aggregate, `top_value(value,
//! weight)`: the most frequent value of a group, which SQL can only say as a second grouping
//! joined back (planned and run once more for each such column of a query). And
//! `interval_union_ns(start_ns, end_ns)`: the time covered by a group's intervals, overlaps
//! counted once, which SQL can only say as a running sum over every start and end.

use crate::model::names::is_async_line;
use crate::tables::derive::rules::{canonical_name, collective_kind_of_name, is_stall_name};
use crate::tables::events_of_interest::{is_collective_kernel, is_compile_event, is_transfer_event, transfer_direction};
use crate::tables::hta::hta_kernel_type;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, StringArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    create_udf, Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, EmitTo, GroupsAccumulator, ScalarUDF, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Registers profq's functions on a session.
pub fn register(ctx: &SessionContext) {
    for f in scalar_functions() {
        ctx.register_udf(f);
    }
    for f in aggregate_functions() {
        ctx.register_udaf(f);
    }
}

/// profq's scalar functions, for sessions built from parts (a cluster's roles).
pub fn scalar_functions() -> Vec<ScalarUDF> {
    let text_rule = |name: &str, out: DataType, rule: fn(&StringArray) -> ArrayRef| {
        create_udf(name, vec![DataType::Utf8], out, Volatility::Immutable, Arc::new(move |args: &[ColumnarValue]| text_rule_udf(args, rule)))
    };
    vec![
        create_udf("shape_signature", vec![DataType::Utf8], DataType::Utf8, Volatility::Immutable, Arc::new(shape_signature_udf)),
        create_udf("flop_proxy", vec![DataType::Utf8, DataType::Utf8], DataType::Float64, Volatility::Immutable, Arc::new(flop_proxy_udf)),
        text_rule("canonical_name", DataType::Utf8, |names| Arc::new(names.iter().map(|n| n.map(canonical_name)).collect::<StringArray>())),
        text_rule("collective_kind", DataType::Utf8, |names| Arc::new(names.iter().map(|n| n.and_then(collective_kind_of_name)).collect::<StringArray>())),
        text_rule("is_stall_name", DataType::Boolean, |names| Arc::new(names.iter().map(|n| n.map(is_stall_name)).collect::<BooleanArray>())),
        text_rule("hta_kernel_type", DataType::Utf8, |names| Arc::new(names.iter().map(|n| n.map(hta_kernel_type)).collect::<StringArray>())),
        text_rule("is_async_line", DataType::Boolean, |lines| Arc::new(lines.iter().map(|n| n.map(is_async_line)).collect::<BooleanArray>())),
        create_udf("is_compile_event", vec![DataType::Utf8], DataType::Boolean, Volatility::Immutable, Arc::new(is_compile_event_udf)),
        create_udf("is_transfer_event", vec![DataType::Utf8, DataType::Utf8], DataType::Boolean, Volatility::Immutable, Arc::new(is_transfer_event_udf)),
        create_udf("transfer_direction", vec![DataType::Utf8, DataType::Utf8], DataType::Utf8, Volatility::Immutable, Arc::new(transfer_direction_udf)),
        text_rule("is_collective_kernel", DataType::Boolean, |names| Arc::new(names.iter().map(|n| n.map(is_collective_kernel)).collect::<BooleanArray>())),
    ]
}

/// profq's aggregate functions, for sessions built from parts (a cluster's roles).
pub fn aggregate_functions() -> Vec<AggregateUDF> {
    vec![AggregateUDF::from(TopValueFunction::default()), AggregateUDF::from(IntervalUnionFunction::default())]
}

/// A rule of one text argument, applied to every row (null for a null text, as a pattern
/// match on it would be).
fn text_rule_udf(args: &[ColumnarValue], rule: fn(&StringArray) -> ArrayRef) -> Result<ColumnarValue, DataFusionError> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    Ok(ColumnarValue::Array(rule(&strings(&arrays[0])?)))
}

/// Null for a null name, as a pattern match on it would be.
fn is_compile_event_udf(args: &[ColumnarValue]) -> Result<ColumnarValue, DataFusionError> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let out: BooleanArray = strings(&arrays[0])?.iter().map(|name| name.map(is_compile_event)).collect();
    Ok(ColumnarValue::Array(Arc::new(out)))
}

/// True for the copy category whatever the name; else null for a null name.
fn is_transfer_event_udf(args: &[ColumnarValue]) -> Result<ColumnarValue, DataFusionError> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let (names, categories) = (strings(&arrays[0])?, strings(&arrays[1])?);
    let out: BooleanArray = names
        .iter()
        .zip(categories.iter())
        .map(|(name, category)| match name {
            Some(name) => Some(is_transfer_event(name, category)),
            None => is_transfer_event("", category).then_some(true),
        })
        .collect();
    Ok(ColumnarValue::Array(Arc::new(out)))
}

/// A transfer's direction, null for what is no transfer (a null name reads as empty).
fn transfer_direction_udf(args: &[ColumnarValue]) -> Result<ColumnarValue, DataFusionError> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let (names, categories) = (strings(&arrays[0])?, strings(&arrays[1])?);
    let out: StringArray = names.iter().zip(categories.iter()).map(|(name, category)| transfer_direction(name.unwrap_or(""), category)).collect();
    Ok(ColumnarValue::Array(Arc::new(out)))
}

fn strings(arg: &ArrayRef) -> Result<StringArray, DataFusionError> {
    let utf8 = cast(arg, &DataType::Utf8)?;
    Ok(utf8.as_any().downcast_ref::<StringArray>().expect("cast to Utf8 gives a StringArray").clone())
}

fn int64s(arg: &ArrayRef) -> Result<Int64Array, DataFusionError> {
    let int64 = cast(arg, &DataType::Int64)?;
    Ok(int64.as_any().downcast_ref::<Int64Array>().expect("cast to Int64 gives an Int64Array").clone())
}

/// The field of an aggregate's state column `name`: a list of `item` values per group.
fn state_list_field(name: &str, item: DataType) -> FieldRef {
    Arc::new(Field::new(name, DataType::List(Arc::new(Field::new_list_field(item, true))), true))
}

/// A state column of [`state_list_field`]'s type: each group's `items`, cut by `offsets`.
fn state_list(offsets: OffsetBuffer<i32>, items: ArrayRef) -> ListArray {
    ListArray::new(Arc::new(Field::new_list_field(items.data_type().clone(), true)), offsets, items, None)
}

/// A state column handed back to `function`'s merge, as the list [`state_list`] made.
fn as_state_list(column: &ArrayRef, function: &str) -> Result<ListArray, DataFusionError> {
    column.as_any().downcast_ref::<ListArray>().cloned().ok_or_else(|| DataFusionError::Internal(format!("{function} state is not a list")))
}

fn shape_signature_udf(args: &[ColumnarValue]) -> Result<ColumnarValue, DataFusionError> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let shapes = strings(&arrays[0])?;
    let out: StringArray = shapes.iter().map(|s| s.and_then(shape_signature)).collect();
    Ok(ColumnarValue::Array(Arc::new(out)))
}

fn flop_proxy_udf(args: &[ColumnarValue]) -> Result<ColumnarValue, DataFusionError> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let (families, signatures) = (strings(&arrays[0])?, strings(&arrays[1])?);
    let out: Float64Array = families.iter().zip(signatures.iter()).map(|(family, sig)| sig.and_then(|s| flop_proxy(family, s))).collect();
    Ok(ColumnarValue::Array(Arc::new(out)))
}

/// `f32[8,128]` / `(f32[8], s32[])` → the reference's shape signature `8,128` / `8|`: each
/// shape's dims without spaces, joined by `|`; None without any shape.
pub fn shape_signature(shape: &str) -> Option<String> {
    let mut dims = Vec::new();
    let mut rest = shape;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']')? + open;
        dims.push(rest[open + 1..close].replace(' ', ""));
        rest = &rest[close + 1..];
    }
    (!dims.is_empty()).then(|| dims.join("|"))
}

/// The family the reference reads from an op's name alone (its base list), where that family
/// changes the proxy: the attention kernels and the cross-entropy loss. Hot ops use it.
pub fn proxy_family_of_name(name: &str) -> Option<&'static str> {
    let lower = name.trim_start_matches('%').to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["splash_mha", "splash_attention"]) {
        Some("attention_splash")
    } else if has(&["flash_attention", "fused_attention", "fa4_cute"]) {
        Some("attention_flash")
    } else if has(&["linear_softmax_cross_entropy_loss", "softmax_cross_entropy", "xent"]) {
        Some("loss_xent")
    } else {
        None
    }
}

/// The reference's FLOP proxy of one invocation with shape `signature` in `family`: a coarse
/// relative measure of work, not FLOPs.
/// * attention families (`attention_*`) with rank-4 shapes: 2·B·H·S²·(d_qk + d_v), B, H, S
///   the largest positive dims 0, 1, 2 of those shapes, d_qk the largest dim 3, d_v the smallest;
/// * `loss_xent` with shapes of rank ≥ 2: 2·rows·cols, the largest positive dims 0 and 1;
/// * otherwise the largest product of dims over the shapes (a dim ≤ 0 makes a product 0).
///
/// None when the result is 0 or not finite.
pub fn flop_proxy(family: Option<&str>, signature: &str) -> Option<f64> {
    let shapes: Vec<Vec<f64>> = signature
        .split('|')
        .map(|dims| if dims.is_empty() { Vec::new() } else { dims.split(',').map(|d| d.trim().parse::<i64>().map_or(0.0, |v| v as f64)).collect() })
        .collect();
    let largest_positive = |of: &[&Vec<f64>], axis: usize| of.iter().map(|s| s[axis]).filter(|&d| d > 0.0).fold(0.0, f64::max);
    let family = family.unwrap_or("");
    let rank4: Vec<&Vec<f64>> = shapes.iter().filter(|s| s.len() == 4).collect();
    let rank2plus: Vec<&Vec<f64>> = shapes.iter().filter(|s| s.len() >= 2).collect();
    let proxy = if family.starts_with("attention_") && !rank4.is_empty() {
        let (b, h, s) = (largest_positive(&rank4, 0), largest_positive(&rank4, 1), largest_positive(&rank4, 2));
        let d_qk = rank4.iter().map(|s| s[3]).fold(f64::MIN, f64::max);
        let d_v = rank4.iter().map(|s| s[3]).fold(f64::MAX, f64::min);
        2.0 * b * h * s * s * (d_qk + d_v)
    } else if family == "loss_xent" && !rank2plus.is_empty() {
        2.0 * largest_positive(&rank2plus, 0) * largest_positive(&rank2plus, 1)
    } else {
        shapes.iter().map(|dims| dims.iter().map(|&d| d.max(0.0)).product::<f64>()).fold(0.0, f64::max)
    };
    (proxy > 0.0 && proxy.is_finite()).then_some(proxy)
}

/// `top_value(value, weight)`: the value whose rows' weights sum highest in the group, ties
/// broken by the smaller value (byte order); rows with a null value or weight are left out,
/// and a group without other rows gives null. As `first_value(value ORDER BY value IS NULL,
/// n DESC, value)` over `SELECT value, sum(weight) AS n ... GROUP BY value`, in one pass and
/// one grouping.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TopValueFunction {
    signature: Signature,
}

impl Default for TopValueFunction {
    fn default() -> Self {
        TopValueFunction { signature: Signature::exact(vec![DataType::Utf8, DataType::Int64], Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for TopValueFunction {
    fn name(&self) -> &str {
        "top_value"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType, DataFusionError> {
        Ok(DataType::Utf8)
    }
    fn state_fields(&self, _args: StateFieldsArgs) -> Result<Vec<FieldRef>, DataFusionError> {
        Ok(vec![state_list_field("values", DataType::Utf8), state_list_field("weights", DataType::Int64)])
    }
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>, DataFusionError> {
        Ok(Box::<TopValues>::default())
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>, DataFusionError> {
        Ok(Box::<TopValues>::default())
    }
}

/// Each group's summed weight per value, values interned once for all groups.
#[derive(Debug, Default)]
struct TopValues {
    ids: FxHashMap<Box<str>, u32>,
    values: Vec<Box<str>>,
    groups: Vec<BTreeMap<u32, i64>>,
}

impl TopValues {
    fn intern(&mut self, value: &str) -> u32 {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        let id = self.values.len() as u32;
        self.values.push(value.into());
        self.ids.insert(value.into(), id);
        id
    }

    /// Adds rows `(value, weight)` to the groups `group_of(row)` says (None: row left out).
    fn add(&mut self, values: &ArrayRef, weights: &ArrayRef, group_of: impl Fn(usize) -> Option<usize>, total_groups: usize) -> Result<(), DataFusionError> {
        let (values, weights) = (strings(values)?, int64s(weights)?);
        if self.groups.len() < total_groups {
            self.groups.resize_with(total_groups, BTreeMap::new);
        }
        for (row, (value, weight)) in values.iter().zip(weights.iter()).enumerate() {
            if let (Some(value), Some(weight), Some(group)) = (value, weight, group_of(row)) {
                let id = self.intern(value);
                let sum = self.groups[group].entry(id).or_insert(0);
                *sum = sum.saturating_add(weight);
            }
        }
        Ok(())
    }

    fn top(&self, group: &BTreeMap<u32, i64>) -> Option<&str> {
        group
            .iter()
            .map(|(&id, &w)| (&*self.values[id as usize], w))
            .reduce(|best, next| if next.1 > best.1 || (next.1 == best.1 && next.0 < best.0) { next } else { best })
            .map(|(value, _)| value)
    }

    /// The groups as the two state lists: each group's values and their summed weights.
    fn lists<'a>(&self, groups: impl Iterator<Item = &'a BTreeMap<u32, i64>> + Clone) -> Vec<ArrayRef> {
        let offsets = OffsetBuffer::from_lengths(groups.clone().map(BTreeMap::len));
        let values: StringArray = groups.clone().flat_map(|g| g.keys().map(|&id| Some(&*self.values[id as usize]))).collect();
        let weights: Int64Array = groups.flat_map(|g| g.values().map(|&w| Some(w))).collect();
        vec![Arc::new(state_list(offsets.clone(), Arc::new(values))), Arc::new(state_list(offsets, Arc::new(weights)))]
    }

    /// Merges state lists (see [`TopValues::lists`]) into the groups `group_of(row)` says.
    fn merge(&mut self, states: &[ArrayRef], group_of: impl Fn(usize) -> usize, total_groups: usize) -> Result<(), DataFusionError> {
        let (values, weights) = (as_state_list(&states[0], "top_value")?, as_state_list(&states[1], "top_value")?);
        let offsets = values.value_offsets().to_vec();
        let row_of_item: Vec<usize> = (0..values.len()).flat_map(|row| std::iter::repeat_n(row, (offsets[row + 1] - offsets[row]) as usize)).collect();
        let first = offsets[0] as usize;
        let (items, item_weights) = (values.values().slice(first, row_of_item.len()), weights.values().slice(first, row_of_item.len()));
        self.add(&items, &item_weights, |item| Some(group_of(row_of_item[item])), total_groups)
    }
}

impl GroupsAccumulator for TopValues {
    fn update_batch(
        &mut self,
        args: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<(), DataFusionError> {
        let kept = |row: usize| opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        self.add(&args[0], &args[1], |row| kept(row).then(|| group_indices[row]), total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef, DataFusionError> {
        let groups = emit_to.take_needed(&mut self.groups);
        Ok(Arc::new(groups.iter().map(|g| self.top(g)).collect::<StringArray>()))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>, DataFusionError> {
        let groups = emit_to.take_needed(&mut self.groups);
        Ok(self.lists(groups.iter()))
    }

    fn merge_batch(&mut self, states: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<(), DataFusionError> {
        self.merge(states, |row| group_indices[row], total_num_groups)
    }

    fn convert_to_state(&self, args: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>, DataFusionError> {
        let mut rows = TopValues::default();
        let kept = |row: usize| opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        rows.add(&args[0], &args[1], |row| kept(row).then_some(row), args[0].len())?;
        Ok(rows.lists(rows.groups.iter()))
    }

    fn size(&self) -> usize {
        let entries: usize = self.groups.iter().map(|g| g.len() * 40).sum();
        std::mem::size_of_val(self) + self.values.iter().map(|v| 2 * v.len() + 48).sum::<usize>() + self.groups.capacity() * 24 + entries
    }
}

/// The single-group form (an aggregate without GROUP BY, or over a window).
impl Accumulator for TopValues {
    fn update_batch(&mut self, args: &[ArrayRef]) -> Result<(), DataFusionError> {
        self.add(&args[0], &args[1], |_| Some(0), 1)
    }

    fn evaluate(&mut self) -> Result<ScalarValue, DataFusionError> {
        Ok(ScalarValue::Utf8(self.groups.first().and_then(|g| self.top(g)).map(str::to_string)))
    }

    fn size(&self) -> usize {
        GroupsAccumulator::size(self)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>, DataFusionError> {
        let empty = BTreeMap::new();
        let lists = self.lists(std::iter::once(self.groups.first().unwrap_or(&empty)));
        lists.iter().map(|a| ScalarValue::try_from_array(a, 0)).collect()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<(), DataFusionError> {
        self.merge(states, |_| 0, 1)
    }
}

/// `interval_union_ns(start_ns, end_ns)`: the length of the union of the group's half-open
/// intervals `[start_ns, end_ns)`, the time at least one of them covers. Rows with a null
/// bound or an end not after their start are left out; a group without others gives 0.
/// Perfetto's standard library sweeps intervals the same way. In SQL this is a running sum
/// over every start and end ordered by time, several times slower on a large run.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalUnionFunction {
    signature: Signature,
}

impl Default for IntervalUnionFunction {
    fn default() -> Self {
        IntervalUnionFunction { signature: Signature::uniform(2, vec![DataType::Int64], Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for IntervalUnionFunction {
    fn name(&self) -> &str {
        "interval_union_ns"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType, DataFusionError> {
        Ok(DataType::Int64)
    }
    fn state_fields(&self, _args: StateFieldsArgs) -> Result<Vec<FieldRef>, DataFusionError> {
        Ok(vec![state_list_field("starts", DataType::Int64), state_list_field("ends", DataType::Int64)])
    }
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>, DataFusionError> {
        Ok(Box::<IntervalUnion>::default())
    }
}

/// A group's intervals as `(start, end)`; merged into disjoint ones before they are summed
/// or handed on as state, so a partial state holds no overlap twice.
#[derive(Debug, Default)]
struct IntervalUnion {
    intervals: Vec<(i64, i64)>,
}

impl IntervalUnion {
    fn add(&mut self, starts: &ArrayRef, ends: &ArrayRef) -> Result<(), DataFusionError> {
        let (starts, ends) = (int64s(starts)?, int64s(ends)?);
        self.intervals.reserve(starts.len());
        for (start, end) in starts.iter().zip(ends.iter()) {
            if let (Some(start), Some(end)) = (start, end) {
                if end > start {
                    self.intervals.push((start, end));
                }
            }
        }
        Ok(())
    }

    /// Merges the intervals into disjoint ones ([`crate::intervals::union`]).
    fn merge_overlaps(&mut self) {
        self.intervals = crate::intervals::union(std::mem::take(&mut self.intervals));
    }
}

impl Accumulator for IntervalUnion {
    fn update_batch(&mut self, args: &[ArrayRef]) -> Result<(), DataFusionError> {
        self.add(&args[0], &args[1])
    }

    fn evaluate(&mut self) -> Result<ScalarValue, DataFusionError> {
        self.merge_overlaps();
        // Disjoint intervals of i64 bounds can still sum past i64: saturate rather than wrap.
        let covered: i128 = self.intervals.iter().map(|&(start, end)| end as i128 - start as i128).sum();
        Ok(ScalarValue::Int64(Some(covered.min(i64::MAX as i128) as i64)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.intervals.capacity() * std::mem::size_of::<(i64, i64)>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>, DataFusionError> {
        self.merge_overlaps();
        let list = |values: Int64Array| ScalarValue::List(Arc::new(state_list(OffsetBuffer::from_lengths([values.len()]), Arc::new(values))));
        let starts: Int64Array = self.intervals.iter().map(|&(start, _)| Some(start)).collect();
        let ends: Int64Array = self.intervals.iter().map(|&(_, end)| Some(end)).collect();
        Ok(vec![list(starts), list(ends)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<(), DataFusionError> {
        let (starts, ends) = (as_state_list(&states[0], "interval_union_ns")?, as_state_list(&states[1], "interval_union_ns")?);
        // Every row of a state is one partial group's intervals, a start and an end per item.
        for row in 0..starts.len() {
            if starts.is_valid(row) && ends.is_valid(row) {
                self.add(&starts.value(row), &ends.value(row))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Schema;
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionConfig;

    /// A session with profq's functions and a table `t` of `rows`, split into `partitions`
    /// partitions of one batch each (made by `batch`): an aggregate over it merges as many
    /// partial states.
    fn session_with_table<R>(partitions: usize, schema: &Arc<Schema>, rows: &[R], batch: impl Fn(&[R]) -> RecordBatch) -> SessionContext {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
        register(&ctx);
        let parts: Vec<Vec<RecordBatch>> = rows.chunks(rows.len().div_ceil(partitions)).map(|c| vec![batch(c)]).collect();
        ctx.register_table("t", Arc::new(MemTable::try_new(schema.clone(), parts).unwrap())).unwrap();
        ctx
    }

    /// The two event rules equal the patterns the queries matched with before they were
    /// functions, through DataFusion's own regex and `lower` (names from real captures, and
    /// each alternative with its neighbours).
    #[tokio::test]
    async fn event_rules_equal_the_patterns_they_replace() {
        let names = [
            "backend_compile_and_load",
            "PjRtCpuClient::Compile",
            "CpuCompiler::RunBackend",
            "PjRtCApiCompiler::BufferFromHostBuffer(f32[])",
            "XlaCompile",
            "COMPILE transfer",
            "Memcpy HtoD (Pageable -> Device)",
            "Memcpy DtoH",
            "Memcpy DtoD",
            "TransferToDevice",
            "transfer_to_device",
            "transfer_todevice",
            "transferto_device",
            "transfer__to_device",
            "transfer_from_Device",
            "transferfromdevice",
            "transfer_fromdev",
            "TransferLiteralToDevice",
            "TransferToInfeed",
            "host_to_device",
            "device_to_host",
            "H2D copy",
            "d2h",
            "copy_to_host",
            "from_host_buffer",
            "CopyToHostAsync",
            "device_put",
            "device_get",
            "ncclDevKernel_AllReduce",
            "fusion.12",
            "ΣCOMPILE",
            "",
        ];
        let ctx = SessionContext::new();
        register(&ctx);
        let list = names.iter().map(|n| format!("('{}')", n.replace('\'', "''"))).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "SELECT column1 AS name, is_compile_event(column1) AS compile_fn, \
               regexp_like(lower(column1), 'compile([^d]|$)') AND NOT regexp_like(lower(column1), 'bufferfromhost|copytohost|transfer') AS compile_re, \
               is_transfer_event(column1, NULL) AS transfer_fn, \
               regexp_like(lower(column1), 'memcpy|device_put|transfer_?to_?device|transfer_?from_?device|transferliteral|transfertoinfeed|host_to_device|device_to_host|htod|dtoh|dtod|h2d|d2h|to_host|from_host|bufferfromhost|copytohost|device_get') \
                 AND NOT (regexp_like(lower(column1), 'dtod|d2d') AND NOT regexp_like(lower(column1), 'htod|h2d|dtoh|d2h|host|device_put|device_get|ptop|p2p|peer')) AS transfer_re, \
               is_transfer_event(column1, 'gpu_memcpy') AS copy_category \
             FROM (VALUES {list})"
        );
        let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        let mut seen = 0;
        for b in &batches {
            let bools = |i: usize| b.column(i).as_any().downcast_ref::<BooleanArray>().unwrap().clone();
            let names = strings(b.column(0)).unwrap();
            let (compile_fn, compile_re, transfer_fn, transfer_re, copy) = (bools(1), bools(2), bools(3), bools(4), bools(5));
            for i in 0..b.num_rows() {
                let name = names.value(i);
                assert_eq!(compile_fn.value(i), compile_re.value(i), "compile {name:?}");
                assert_eq!(transfer_fn.value(i), transfer_re.value(i), "transfer {name:?}");
                // A copy within one device is no transfer, whatever its category.
                assert_eq!(copy.value(i), !name.to_lowercase().contains("dtod"), "{name:?}");
                seen += 1;
            }
        }
        assert_eq!(seen, names.len());
    }

    /// The most weighty value per group: ties to the smaller value, nulls left out, a group
    /// of nulls null; the same through one partition and through partial states merged from
    /// several (a store query) or made row by row.
    #[tokio::test]
    async fn top_value_picks_the_heaviest_value() {
        let rows: [(&str, Option<&str>, Option<i64>); 11] = [
            ("a", Some("x"), Some(2)),
            ("a", Some("y"), Some(3)),
            ("a", Some("x"), Some(2)),
            ("b", Some("q"), Some(5)),
            ("b", Some("p"), Some(5)),
            ("b", None, Some(50)),
            ("c", None, Some(1)),
            ("c", Some("z"), None),
            ("d", Some("m"), Some(1)),
            ("d", Some("n"), Some(3)),
            ("d", Some("m"), Some(4)),
        ];
        let expected = "a=x b=p c=- d=m";
        let schema =
            Arc::new(Schema::new(vec![Field::new("g", DataType::Utf8, false), Field::new("v", DataType::Utf8, true), Field::new("w", DataType::Int64, true)]));
        let batch = |rows: &[(&str, Option<&str>, Option<i64>)]| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(rows.iter().map(|r| Some(r.0)).collect::<StringArray>()),
                Arc::new(rows.iter().map(|r| r.1).collect::<StringArray>()),
                Arc::new(rows.iter().map(|r| r.2).collect::<Int64Array>()),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        };
        for partitions in [1, 3] {
            let ctx = session_with_table(partitions, &schema, &rows, batch);
            for sql in [
                "SELECT g, top_value(v, w) AS top FROM t GROUP BY g ORDER BY g",
                "SELECT g, top_value(v, w) AS top FROM (SELECT g, v, w FROM t ORDER BY w) GROUP BY g ORDER BY g",
            ] {
                let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
                let mut got = Vec::new();
                for b in &batches {
                    let (g, top) = (strings(b.column(0)).unwrap(), strings(b.column(1)).unwrap());
                    got.extend((0..b.num_rows()).map(|i| format!("{}={}", g.value(i), if top.is_valid(i) { top.value(i) } else { "-" })));
                }
                assert_eq!(got.join(" "), expected, "{partitions} partitions: {sql}");
            }
            let whole = ctx.sql("SELECT top_value(v, w) AS top FROM t").await.unwrap().collect().await.unwrap();
            // m, p and q each weigh 5 in all: the smallest wins.
            assert_eq!(strings(whole[0].column(0)).unwrap().value(0), "m", "{partitions} partitions, no grouping");
        }
    }

    /// The covered time of each group's intervals equals a count over every nanosecond they
    /// span: overlaps, touching and nested intervals once, empty, inverted and null ones left
    /// out; the same through one partition and through partial states merged from several,
    /// with FILTER, and without grouping.
    #[tokio::test]
    async fn interval_union_counts_covered_time_once() {
        // A fixed pseudo-random spread of intervals over two groups, then the edge cases.
        let mut random = crate::xorshift(0x9e37_79b9);
        let mut next = |below: u64| (random() % below) as i64;
        type Row<'a> = (&'a str, Option<i64>, Option<i64>);
        let mut rows: Vec<Row> = (0..400)
            .map(|k| {
                let start = next(2_000);
                (if k % 3 == 0 { "a" } else { "b" }, Some(start), Some(start + next(60) - 5))
            })
            .collect();
        rows.extend([("a", Some(10), Some(20)), ("a", Some(20), Some(30)), ("a", Some(12), Some(14)), ("a", None, Some(40)), ("a", Some(3000), None)]);
        rows.push(("c", Some(5), Some(5)));
        let brute = |keep: &dyn Fn(&Row) -> bool| -> i64 {
            let mut covered = vec![false; 4_000];
            for r in rows.iter().filter(|r| keep(r)) {
                if let (Some(s), Some(e)) = (r.1, r.2) {
                    (s.max(0)..e.max(0)).for_each(|t| covered[t as usize] = true);
                }
            }
            covered.iter().filter(|&&c| c).count() as i64
        };
        let expected = format!("a={} b={} c=0 odd={}", brute(&|r| r.0 == "a"), brute(&|r| r.0 == "b"), brute(&|r| r.1.is_some_and(|s| s % 2 == 1)));
        let all = brute(&|_| true);
        let schema =
            Arc::new(Schema::new(vec![Field::new("g", DataType::Utf8, false), Field::new("s", DataType::Int64, true), Field::new("e", DataType::Int64, true)]));
        let batch = |rows: &[Row]| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(rows.iter().map(|r| Some(r.0)).collect::<StringArray>()),
                Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>()),
                Arc::new(rows.iter().map(|r| r.2).collect::<Int64Array>()),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        };
        for partitions in [1, 3] {
            let ctx = session_with_table(partitions, &schema, &rows, batch);
            let sql = "SELECT g, interval_union_ns(s, e) AS u FROM t GROUP BY g \
                       UNION ALL SELECT 'odd', interval_union_ns(s, e) FILTER (WHERE s % 2 = 1) FROM t ORDER BY g";
            let mut got = Vec::new();
            for b in ctx.sql(sql).await.unwrap().collect().await.unwrap() {
                let (g, u) = (strings(b.column(0)).unwrap(), b.column(1).as_any().downcast_ref::<Int64Array>().unwrap().clone());
                got.extend((0..b.num_rows()).map(|i| format!("{}={}", g.value(i), u.value(i))));
            }
            assert_eq!(got.join(" "), expected, "{partitions} partitions");
            let whole = ctx.sql("SELECT interval_union_ns(s, e) FROM t").await.unwrap().collect().await.unwrap();
            assert_eq!(whole[0].column(0).as_any().downcast_ref::<Int64Array>().unwrap().value(0), all, "{partitions} partitions, no grouping");
        }
    }

    #[test]
    fn shape_signatures() {
        assert_eq!(shape_signature("f32[8,128]").as_deref(), Some("8,128"));
        assert_eq!(shape_signature("(f32[8], s32[])").as_deref(), Some("8|"));
        assert_eq!(shape_signature("token"), None);
    }

    #[test]
    fn proxies_follow_the_reference_rules() {
        assert_eq!(flop_proxy(None, "8,128|4"), Some(1024.0));
        assert_eq!(flop_proxy(None, "8|"), Some(8.0));
        // The reference's own cases: dims ≤ 0 are ignored, and nothing positive is left.
        assert_eq!(flop_proxy(Some("attention_splash"), "0,8,2048,64|0,8,2048,64"), None);
        assert_eq!(flop_proxy(Some("loss_xent"), "0,512|0,128256"), None);
        // 2·B·H·S²·(d_qk + d_v) with d_qk = 128, d_v = 64.
        assert_eq!(flop_proxy(Some("attention_flash"), "2,8,16,128|2,8,16,64"), Some(2.0 * 2.0 * 8.0 * 256.0 * 192.0));
        // Without rank-4 shapes an attention op falls back to the largest product.
        assert_eq!(flop_proxy(Some("attention_dense"), "4,4"), Some(16.0));
        assert_eq!(flop_proxy(Some("loss_xent"), "512,1000|512"), Some(2.0 * 512.0 * 1000.0));
        assert_eq!(proxy_family_of_name("%splash_mha_fwd.3"), Some("attention_splash"));
        assert_eq!(proxy_family_of_name("fusion.1"), None);
    }
}
