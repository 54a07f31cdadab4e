//! Small helpers that turn id and sentinel vectors into Arrow arrays.

use crate::model::{StringPool, NO_STR, NULL_I64};
use arrow::array::*;
use arrow::buffer::{OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Int32Type};
use std::sync::Arc;

/// Builds compact dictionary arrays from pool ids, reusing one remap table.
pub struct DictEncoder<'a> {
    pool: &'a StringPool,
    remap: Vec<i32>,
}

impl<'a> DictEncoder<'a> {
    pub fn new(pool: &'a StringPool) -> Self {
        DictEncoder { pool, remap: vec![-1; pool.len()] }
    }

    pub fn encode(&mut self, ids: impl Iterator<Item = u32>) -> ArrayRef {
        let mut values: Vec<&str> = Vec::new();
        let mut used: Vec<u32> = Vec::new();
        let mut keys: Vec<Option<i32>> = Vec::with_capacity(ids.size_hint().0);
        for id in ids {
            if id == NO_STR || id as usize >= self.remap.len() {
                keys.push(None);
                continue;
            }
            let slot = &mut self.remap[id as usize];
            if *slot < 0 {
                *slot = values.len() as i32;
                values.push(self.pool.get(id).unwrap_or(""));
                used.push(id);
            }
            keys.push(Some(*slot));
        }
        for id in used {
            self.remap[id as usize] = -1;
        }
        let dict = DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), Arc::new(StringArray::from(values))).expect("dictionary keys are in range");
        Arc::new(dict)
    }
}

pub fn i64s(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(values))
}

pub fn nullable_i64s(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(values.map(|v| if v == NULL_I64 { None } else { Some(v) }).collect::<Int64Array>())
}

/// Unsigned ids stored as i64 bits (NULL_I64 = null).
pub fn nullable_u64s(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(values.map(|v| if v == NULL_I64 { None } else { Some(v as u64) }).collect::<UInt64Array>())
}

pub fn text_list(rows: &[Vec<String>]) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new());
    for row in rows {
        for v in row {
            b.values().append_value(v);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

/// Map<Utf8, Utf8> array from per-row entry offsets, keys and values.
pub fn text_map(offsets: Vec<i32>, keys: ArrayRef, values: ArrayRef) -> ArrayRef {
    let entries = StructArray::new(vec![Field::new("key", DataType::Utf8, false), Field::new("value", DataType::Utf8, true)].into(), vec![keys, values], None);
    let field = Arc::new(Field::new("entries", entries.data_type().clone(), false));
    Arc::new(MapArray::new(field, OffsetBuffer::new(ScalarBuffer::from(offsets)), entries, None, false))
}

pub fn text_map_rows(rows: &[Vec<(String, String)>]) -> ArrayRef {
    let mut offsets = vec![0i32];
    let mut keys = StringBuilder::new();
    let mut values = StringBuilder::new();
    for row in rows {
        for (k, v) in row {
            keys.append_value(k);
            values.append_value(v);
        }
        offsets.push(keys.len() as i32);
    }
    text_map(offsets, Arc::new(keys.finish()), Arc::new(values.finish()))
}
