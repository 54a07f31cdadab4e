//! Query results as JSON rows: how every analysis reads a batch (the summary's sections,
//! the question router's answers, the comparison), and how `--format json` prints one.
//! Numbers and booleans stay typed; every other cell is its text.

use arrow::array::Array;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use serde_json::{Map, Value};

/// One result row: column name → value.
pub type Row = Map<String, Value>;

/// Rows as JSON objects; numbers and booleans stay typed, everything else is text.
pub fn rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    let opts = FormatOptions::default();
    for b in batches {
        let schema = b.schema();
        let fmts: Vec<_> = b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("formattable")).collect();
        for r in 0..b.num_rows() {
            let mut obj = serde_json::Map::new();
            for (k, f) in schema.fields().iter().enumerate() {
                let col = b.column(k);
                let v = if col.is_null(r) { serde_json::Value::Null } else { cell_value(col.as_ref(), &fmts[k], r) };
                obj.insert(f.name().clone(), v);
            }
            out.push(obj);
        }
    }
    out
}

/// A non-null cell as its JSON value: off its array where [`typed_value`] can, else from its
/// text ([`text_value`]).
fn cell_value(col: &dyn Array, fmt: &ArrayFormatter, r: usize) -> serde_json::Value {
    typed_value(col, r).unwrap_or_else(|| text_value(col.data_type(), fmt.value(r).to_string()))
}

/// A cell of an integer, 64-bit float or boolean column as its JSON value, read without
/// going through text (a summary renders thousands of cells); None for any other column and
/// for a float JSON cannot hold (NaN, infinities), which [`text_value`] renders as before.
fn typed_value(col: &dyn Array, r: usize) -> Option<serde_json::Value> {
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
    Some(match col.data_type() {
        DataType::Int8 => col.as_primitive::<Int8Type>().value(r).into(),
        DataType::Int16 => col.as_primitive::<Int16Type>().value(r).into(),
        DataType::Int32 => col.as_primitive::<Int32Type>().value(r).into(),
        DataType::Int64 => col.as_primitive::<Int64Type>().value(r).into(),
        DataType::UInt8 => col.as_primitive::<UInt8Type>().value(r).into(),
        DataType::UInt16 => col.as_primitive::<UInt16Type>().value(r).into(),
        DataType::UInt32 => col.as_primitive::<UInt32Type>().value(r).into(),
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(r).into(),
        DataType::Float64 => serde_json::Value::Number(serde_json::Number::from_f64(col.as_primitive::<Float64Type>().value(r))?),
        DataType::Boolean => col.as_boolean().value(r).into(),
        _ => return None,
    })
}

/// A cell's text as its JSON value: a number or boolean when its column is one and the text
/// parses as JSON, else the text.
fn text_value(data_type: &arrow::datatypes::DataType, text: String) -> serde_json::Value {
    use arrow::datatypes::DataType::*;
    match data_type {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float32 | Float64 | Boolean => {
            serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
        }
        _ => serde_json::Value::String(text),
    }
}

#[cfg(test)]
mod tests {
    use super::{cell_value, text_value};
    use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, UInt64Array};
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    use std::sync::Arc;

    /// Cells read off their arrays serialise as their printed text parsed back does wherever
    /// that parse is exact (as for these values); where serde_json's parse of the text is not,
    /// the typed value is the one the query computed.
    #[test]
    fn typed_cells_are_the_values_their_text_parses_to() {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![0, -1, i64::MIN, i64::MAX, 42, 7])),
            Arc::new(UInt64Array::from(vec![0, u64::MAX, 1, 2, 3, 4])),
            Arc::new(Int32Array::from(vec![-5, 0, i32::MAX, 1, 2, 3])),
            Arc::new(Float64Array::from(vec![0.1, -0.0, 1e300, 5e-324, 3.0, 2.0 / 3.0])),
            Arc::new(Float64Array::from(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5, -2.25, 1e-7])),
            Arc::new(BooleanArray::from(vec![true, false, true, false, true, false])),
        ];
        let opts = FormatOptions::default();
        for col in &columns {
            let fmt = ArrayFormatter::try_new(col.as_ref(), &opts).unwrap();
            for r in 0..col.len() {
                let by_text = text_value(col.data_type(), fmt.value(r).to_string());
                let typed = cell_value(col.as_ref(), &fmt, r);
                assert_eq!(serde_json::to_string(&typed).unwrap(), serde_json::to_string(&by_text).unwrap(), "{:?} row {r}", col.data_type());
            }
        }
    }
}
