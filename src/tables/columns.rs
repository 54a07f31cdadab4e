//! Small helpers that turn id and sentinel vectors into Arrow arrays.

use crate::model::{StringPool, NULL_I64};
use arrow::array::builder::NullBufferBuilder;
use arrow::array::{
    new_null_array, Array, ArrayBuilder, ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array, ListBuilder, MapArray, StringArray,
    StringBuilder, StructArray, UInt64Array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Int32Type};
use std::sync::Arc;

/// One column of rows as the decoder and derive hold them, for a writer that encodes them
/// without an Arrow array in between (ingest's `events` and `ops`: [`crate::tables::EventRows`],
/// [`crate::tables::OpColumns`]).
#[derive(Clone, Copy)]
pub enum RowValues<'a> {
    /// A name column: ids of `strings` (an id it does not hold, such as
    /// [`crate::model::NO_STR`], is null).
    Names {
        ids: &'a [u32],
        strings: &'a dyn Strings,
    },
    /// 64-bit integers (a UInt64 column's as their bits); a value equal to `null` is null.
    Ints {
        values: &'a [i64],
        null: Option<i64>,
    },
    /// Float64 values; where `present` is given, a value is null where it says false.
    Floats {
        values: &'a [f64],
        present: Option<&'a [bool]>,
    },
    Bools(&'a [bool]),
    /// A map of strings: row `i`'s entries are `entries[i]..entries[i + 1]` (so `entries`
    /// has one more item than there are rows), entry `e` the key `keys[e]` (an id of
    /// `strings`) and the value `value_bytes[value_offsets[e]..value_offsets[e + 1]]`.
    TextMap {
        entries: &'a [u32],
        keys: &'a [u32],
        value_offsets: &'a [u32],
        value_bytes: &'a [u8],
        strings: &'a dyn Strings,
    },
}

impl<'a> RowValues<'a> {
    /// Integers without nulls.
    pub fn ints(values: &'a [i64]) -> RowValues<'a> {
        RowValues::Ints { values, null: None }
    }
    /// Integers where [`NULL_I64`] is null (the decoder's and derive's sentinel).
    pub fn nullable_ints(values: &'a [i64]) -> RowValues<'a> {
        RowValues::Ints { values, null: Some(NULL_I64) }
    }
}

/// Strings that a name column's ids refer to: a capture's pool, a part's local strings
/// (region paths, sources), the fixed texts of op labels.
pub trait Strings: Sync {
    /// The string of `id`; None past the strings held.
    fn text(&self, id: u32) -> Option<&str>;
    /// How many strings are held (ids `0..count`).
    fn count(&self) -> usize;
}

impl Strings for StringPool {
    fn text(&self, id: u32) -> Option<&str> {
        self.get(id)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl Strings for Vec<String> {
    fn text(&self, id: u32) -> Option<&str> {
        self.get(id as usize).map(String::as_str)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl<const N: usize> Strings for [&'static str; N] {
    fn text(&self, id: u32) -> Option<&str> {
        self.get(id as usize).copied()
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// A dictionary column of ids into `values`, shared with other columns and batches; an id
/// past the values (`NO_STR`) is null.
pub fn shared_dict(values: &ArrayRef, ids: impl Iterator<Item = u32>) -> ArrayRef {
    let len = values.len();
    let keys = dict_keys(ids.map(|id| ((id as usize) < len).then_some(id as i32)));
    // SAFETY: every key is below `values.len()`: ids past it became nulls above.
    Arc::new(unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys, values.clone()) })
}

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
        let keys = dict_keys(ids.map(|id| {
            let slot = self.remap.get_mut(id as usize)?;
            if *slot < 0 {
                *slot = values.len() as i32;
                values.push(self.pool.get(id).unwrap_or(""));
                used.push(id);
            }
            Some(*slot)
        }));
        for id in used {
            self.remap[id as usize] = -1;
        }
        // SAFETY: every key is a position in `values`, given when its value was pushed.
        Arc::new(unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys, Arc::new(StringArray::from(values))) })
    }
}

/// Dictionary keys, None as null: the tables are built a column at a time over hundreds of
/// thousands of rows, so rows are written straight into the buffers.
pub fn dict_keys(keys: impl Iterator<Item = Option<i32>>) -> Int32Array {
    let (values, nulls) = values_and_nulls(keys);
    Int32Array::new(values.into(), nulls)
}

/// The values (0 where None) and, when any is None, their validity.
///
/// Collected rather than pushed: when `items` maps a vector of another type of the same
/// layout (a column of ids copied out of the rows, made keys), the standard library writes
/// the values into that vector's own buffer instead of a new one.
fn values_and_nulls<T: Default>(items: impl Iterator<Item = Option<T>>) -> (Vec<T>, Option<NullBuffer>) {
    let mut nulls = NullBufferBuilder::new(items.size_hint().0);
    let values = items
        .map(|item| match item {
            Some(v) => {
                nulls.append_non_null();
                v
            }
            None => {
                nulls.append_null();
                T::default()
            }
        })
        .collect();
    (values, nulls.finish())
}

/// A dictionary column over a few distinct `&'static`-like strings (categories, passes),
/// found by a scan of the values seen so far rather than by hashing every row.
pub fn static_dict<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut distinct: Vec<&str> = Vec::new();
    let keys = dict_keys(values.map(|v| {
        let v = v?;
        let k = match distinct.iter().position(|d| std::ptr::eq(*d, v) || *d == v) {
            Some(k) => k,
            None => {
                distinct.push(v);
                distinct.len() - 1
            }
        };
        Some(k as i32)
    }));
    // SAFETY: every key is a position in `distinct`, given when its value was pushed.
    Arc::new(unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys, Arc::new(StringArray::from(distinct))) })
}

/// Collected into a vector first: a vector's own iterator gives its buffer back unchanged,
/// and the array takes that buffer without a copy.
pub fn i64s(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from(values.collect::<Vec<i64>>()))
}

pub fn nullable_i64s(values: impl Iterator<Item = i64>) -> ArrayRef {
    let (values, nulls) = values_and_nulls(values.map(|v| (v != NULL_I64).then_some(v)));
    Arc::new(Int64Array::new(values.into(), nulls))
}

/// Unsigned ids stored as i64 bits (NULL_I64 = null).
pub fn nullable_u64s(values: impl Iterator<Item = i64>) -> ArrayRef {
    let (values, nulls) = values_and_nulls(values.map(|v| (v != NULL_I64).then_some(v as u64)));
    Arc::new(UInt64Array::new(values.into(), nulls))
}

pub fn nullable_f64s(values: impl Iterator<Item = Option<f64>>) -> ArrayRef {
    let (values, nulls) = values_and_nulls(values);
    Arc::new(Float64Array::new(values.into(), nulls))
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

/// The columns of a batch that no statement of its analysis reads ([`super::ColumnsRead`]):
/// zeros of the column's type, all sharing one buffer, so that they cost neither building
/// nor memory (the engine refuses any statement that would read one).
pub struct Unread {
    /// Made by the first column that needs it.
    zeros: std::cell::OnceCell<arrow::buffer::Buffer>,
    rows: usize,
}

impl Unread {
    pub fn rows(rows: usize) -> Unread {
        Unread { zeros: std::cell::OnceCell::new(), rows }
    }

    pub fn column(&self, c: &super::schema::Column) -> ArrayRef {
        use super::schema::Col;
        let n = self.rows;
        let zeros = || self.zeros.get_or_init(|| arrow::buffer::MutableBuffer::from_len_zeroed(n * 8).into()).clone();
        match c.ty {
            Col::Int => Arc::new(Int64Array::new(ScalarBuffer::new(zeros(), 0, n), None)),
            Col::UInt => Arc::new(UInt64Array::new(ScalarBuffer::new(zeros(), 0, n), None)),
            Col::Float => Arc::new(Float64Array::new(ScalarBuffer::new(zeros(), 0, n), None)),
            Col::Bool => Arc::new(BooleanArray::new(arrow::buffer::BooleanBuffer::new(zeros(), 0, n), None)),
            Col::Name => {
                let keys = Int32Array::new(ScalarBuffer::new(zeros(), 0, n), None);
                // SAFETY: every key is 0, and the dictionary has one value. (`try_new` would
                // read every key to check it: 1 % of a summary's instructions.)
                Arc::new(unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys, Arc::new(StringArray::from(vec![""]))) })
            }
            Col::Text | Col::TextList | Col::TextMap => new_null_array(&c.ty.data_type(), n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::AsArray;
    use arrow::datatypes::Int64Type;

    /// The `ops` table's columns are copied out of the rows into vectors once; making those
    /// vectors arrays must not copy them again.
    #[test]
    fn vectors_become_arrays_in_their_own_buffers() {
        let times: Vec<i64> = (0..10_000).map(|i| i * 7).collect();
        let buffer = times.as_ptr();
        let array = i64s(times.into_iter());
        let array = array.as_primitive::<Int64Type>();
        assert_eq!(array.values().as_ptr(), buffer);
        assert_eq!(array.value(9_999), 69_993);

        let ids: Vec<u32> = (0..10_000).map(|i| if i % 1000 == 0 { u32::MAX } else { i }).collect();
        let buffer = ids.as_ptr() as *const i32;
        let keys = dict_keys(ids.into_iter().map(|id| (id != u32::MAX).then_some(id as i32)));
        assert_eq!(keys.values().as_ptr(), buffer);
        assert_eq!((keys.null_count(), keys.value(1), keys.is_null(1000)), (10, 1, true));
    }
}
