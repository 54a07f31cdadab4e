//! Scalar columns: `Int64`/`UInt64` as DELTA_BINARY_PACKED (or PLAIN), `Float64` and `Boolean`
//! PLAIN, each with the chunk's min, max and null count as arrow-rs computes them.

use super::{
    delta_binary_pack, null_in_required, put_levels, Array, ArrayRef, AsArray, Bytes, ChunkPages, ColumnCloseResult, ColumnDescPtr, DataType, Encoding, Result,
    Statistics, WriterProperties, DELTA_BLOCK,
};

/// A flat scalar column of one row group: `Int64` or `UInt64` (ids, times, counts, program
/// ids; DELTA_BINARY_PACKED or PLAIN as the properties say), `Float64` (op costs) or
/// `Boolean` (flags), with the chunk's min, max and null count, the statistics the
/// properties ask of these columns. arrow-rs's writer does the same through a generic level
/// builder and a compression context made anew for every page.
pub(super) struct ScalarColumn<V: Scalar> {
    pub(super) pages: ChunkPages,
    pub(super) encoding: Encoding,
    /// UInt64: values are kept as their bits, and compared unsigned for min and max.
    pub(super) unsigned: bool,
    pub(super) page_rows_limit: usize,
    pub(super) page_values: Vec<V>,
    /// Definition levels of the page's rows (1 present, 0 null), nullable columns only.
    pub(super) page_levels: Vec<u8>,
    pub(super) page_rows: usize,
    pub(super) min_max: Option<(V, V)>,
    pub(super) nulls: u64,
}

/// A value type of [`ScalarColumn`]: how arrays hold it, how pages and statistics do.
pub(super) trait Scalar: Copy {
    /// The encodings written here, the first where the properties name none.
    const ENCODINGS: &'static [Encoding];
    /// Whether `data_type` holds this type: Some(whether its values compare unsigned).
    fn accepts(data_type: &DataType) -> Option<bool>;
    /// An array's values (a null's at any value) and its nulls.
    fn values(array: &ArrayRef) -> (std::borrow::Cow<'_, [Self]>, Option<&arrow::buffer::NullBuffer>);
    /// `so_far` widened by `values`' min and max (values that do not order, NaN, left out).
    fn widen(so_far: Option<(Self, Self)>, values: &[Self], unsigned: bool) -> Option<(Self, Self)>;
    fn encode(values: &[Self], encoding: Encoding, out: &mut Vec<u8>);
    fn statistics(min_max: Option<(Self, Self)>, nulls: u64) -> Statistics;
}

impl Scalar for i64 {
    const ENCODINGS: &'static [Encoding] = &[Encoding::PLAIN, Encoding::DELTA_BINARY_PACKED];
    fn accepts(data_type: &DataType) -> Option<bool> {
        match data_type {
            DataType::Int64 => Some(false),
            DataType::UInt64 => Some(true),
            _ => None,
        }
    }
    fn values(array: &ArrayRef) -> (std::borrow::Cow<'_, [i64]>, Option<&arrow::buffer::NullBuffer>) {
        if array.data_type() == &DataType::UInt64 {
            // Parquet stores a UInt64 as the i64 of the same bits.
            let a = array.as_primitive::<arrow::datatypes::UInt64Type>();
            (a.values().inner().typed_data::<i64>().into(), a.nulls())
        } else {
            let a = array.as_primitive::<arrow::datatypes::Int64Type>();
            (a.values().as_ref().into(), a.nulls())
        }
    }
    fn widen(so_far: Option<(i64, i64)>, values: &[i64], unsigned: bool) -> Option<(i64, i64)> {
        if values.is_empty() {
            return so_far;
        }
        Some(if unsigned {
            let (lo, hi) = values.iter().fold((u64::MAX, u64::MIN), |(lo, hi), &v| (lo.min(v as u64), hi.max(v as u64)));
            let (a, b) = so_far.map_or((lo, hi), |(a, b)| (lo.min(a as u64), hi.max(b as u64)));
            (a as i64, b as i64)
        } else {
            let (lo, hi) = values.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            so_far.map_or((lo, hi), |(a, b)| (lo.min(a), hi.max(b)))
        })
    }
    fn encode(values: &[i64], encoding: Encoding, out: &mut Vec<u8>) {
        match encoding {
            Encoding::DELTA_BINARY_PACKED => delta_binary_pack(values, out),
            _ => out.extend(values.iter().flat_map(|v| v.to_le_bytes())),
        }
    }
    fn statistics(min_max: Option<(i64, i64)>, nulls: u64) -> Statistics {
        let (min, max) = min_max.unzip();
        Statistics::int64(min, max, None, Some(nulls), false)
    }
}

impl Scalar for f64 {
    const ENCODINGS: &'static [Encoding] = &[Encoding::PLAIN];
    fn accepts(data_type: &DataType) -> Option<bool> {
        (data_type == &DataType::Float64).then_some(false)
    }
    fn values(array: &ArrayRef) -> (std::borrow::Cow<'_, [f64]>, Option<&arrow::buffer::NullBuffer>) {
        let a = array.as_primitive::<arrow::datatypes::Float64Type>();
        (a.values().as_ref().into(), a.nulls())
    }
    fn widen(so_far: Option<(f64, f64)>, values: &[f64], _: bool) -> Option<(f64, f64)> {
        // As arrow-rs: a value replaces the min (max) only when smaller (larger), so of -0.0
        // and 0.0 the first met stays until `statistics` writes zeros as the format says.
        values.iter().filter(|v| !v.is_nan()).fold(so_far, |min_max, &v| match min_max {
            None => Some((v, v)),
            Some((lo, hi)) => Some((if v < lo { v } else { lo }, if v > hi { v } else { hi })),
        })
    }
    fn encode(values: &[f64], _: Encoding, out: &mut Vec<u8>) {
        out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }
    fn statistics(min_max: Option<(f64, f64)>, nulls: u64) -> Statistics {
        // A zero min is written as -0.0, a zero max as 0.0 (the format's rule for floats).
        let (min, max) = min_max.map(|(lo, hi)| (if lo == 0.0 { -0.0 } else { lo }, if hi == 0.0 { 0.0 } else { hi })).unzip();
        Statistics::double(min, max, None, Some(nulls), false)
    }
}

impl Scalar for bool {
    const ENCODINGS: &'static [Encoding] = &[Encoding::PLAIN];
    fn accepts(data_type: &DataType) -> Option<bool> {
        (data_type == &DataType::Boolean).then_some(false)
    }
    fn values(array: &ArrayRef) -> (std::borrow::Cow<'_, [bool]>, Option<&arrow::buffer::NullBuffer>) {
        let a = array.as_boolean();
        (a.values().iter().collect::<Vec<bool>>().into(), a.nulls())
    }
    fn widen(so_far: Option<(bool, bool)>, values: &[bool], _: bool) -> Option<(bool, bool)> {
        values.iter().fold(so_far, |min_max, &v| {
            let (lo, hi) = min_max.unwrap_or((v, v));
            Some((lo & v, hi | v))
        })
    }
    fn encode(values: &[bool], _: Encoding, out: &mut Vec<u8>) {
        // PLAIN booleans: one bit each, least significant first, the last byte padded.
        out.extend(values.chunks(8).map(|bits| bits.iter().enumerate().fold(0u8, |byte, (i, &b)| byte | ((b as u8) << i))));
    }
    fn statistics(min_max: Option<(bool, bool)>, nulls: u64) -> Statistics {
        let (min, max) = min_max.unzip();
        Statistics::boolean(min, max, None, Some(nulls), false)
    }
}

impl<V: Scalar> ScalarColumn<V> {
    pub(super) fn new(data_type: &DataType, descr: ColumnDescPtr, props: &WriterProperties) -> Option<ScalarColumn<V>> {
        let unsigned = V::accepts(data_type)?;
        let path = descr.path();
        let flat = descr.max_rep_level() == 0 && path.parts().len() == 1;
        let encoding = match props.encoding(path) {
            None => V::ENCODINGS[0],
            Some(e) if V::ENCODINGS.contains(&e) => e,
            Some(_) => return None,
        };
        if !flat || props.dictionary_enabled(path) {
            return None;
        }
        Some(ScalarColumn {
            pages: ChunkPages { codec_settled: false, ..ChunkPages::new(descr, props, true)? },
            encoding,
            unsigned,
            page_rows_limit: props.data_page_row_count_limit().max(1),
            page_values: Vec::new(),
            page_levels: Vec::new(),
            page_rows: 0,
            min_max: None,
            nulls: 0,
        })
    }

    pub(super) fn write(&mut self, array: &ArrayRef) -> Result<()> {
        let (values, nulls) = V::values(array);
        match nulls.filter(|n| n.null_count() > 0) {
            None => self.push_values(&values, None::<fn(usize) -> bool>),
            Some(n) => self.push_values(&values, Some(|r| n.is_valid(r))),
        }
    }
    /// Adds `values`, value `r` a null where `present(r)` is false; all present without one.
    pub(super) fn push_values(&mut self, values: &[V], present: Option<impl Fn(usize) -> bool>) -> Result<()> {
        let nullable = self.pages.descr.max_def_level() > 0;
        if !nullable && present.is_some() {
            return Err(null_in_required(self.pages.descr.name()));
        }
        let mut row = 0;
        while row < values.len() {
            let rows = (self.page_rows_limit - self.page_rows).min(values.len() - row);
            let first_new = self.page_values.len();
            match &present {
                // A whole page among the given values: encoded from them, not copied first.
                None if self.page_rows == 0 && rows == self.page_rows_limit => {
                    let page = &values[row..row + rows];
                    if nullable {
                        self.page_levels.resize(rows, 1);
                    }
                    self.min_max = V::widen(self.min_max, page, self.unsigned);
                    self.page_rows = rows;
                    self.encode_page(page)?;
                    row += rows;
                    continue;
                }
                None => {
                    if nullable {
                        self.page_levels.resize(self.page_levels.len() + rows, 1);
                    }
                    self.page_values.extend_from_slice(&values[row..row + rows]);
                }
                Some(present) => {
                    // Levels, then the present values: two passes without a branch a row to
                    // mispredict where nulls and values alternate.
                    let levels_from = self.page_levels.len();
                    self.page_levels.extend((row..row + rows).map(|r| present(r) as u8));
                    let present_rows: usize = self.page_levels[levels_from..].iter().map(|&l| l as usize).sum();
                    self.page_values.extend(values[row..row + rows].iter().zip(&self.page_levels[levels_from..]).filter(|(_, &l)| l == 1).map(|(&v, _)| v));
                    self.nulls += (rows - present_rows) as u64;
                }
            }
            self.note_min_max(first_new);
            self.page_rows += rows;
            row += rows;
            if self.page_rows == self.page_rows_limit {
                self.finish_page()?;
            }
        }
        Ok(())
    }

    /// Adds `rows` nulls.
    pub(super) fn push_nulls(&mut self, mut rows: usize) -> Result<()> {
        if self.pages.descr.max_def_level() == 0 {
            return Err(null_in_required(self.pages.descr.name()));
        }
        while rows > 0 {
            let piece = (self.page_rows_limit - self.page_rows).min(rows);
            self.page_levels.resize(self.page_levels.len() + piece, 0);
            self.nulls += piece as u64;
            self.page_rows += piece;
            rows -= piece;
            if self.page_rows == self.page_rows_limit {
                self.finish_page()?;
            }
        }
        Ok(())
    }

    /// Widens the chunk's min and max by the page's values from `first_new` on.
    pub(super) fn note_min_max(&mut self, first_new: usize) {
        self.min_max = V::widen(self.min_max, &self.page_values[first_new..], self.unsigned);
    }

    /// Encodes the filled page: definition levels (nullable columns), then the values.
    pub(super) fn finish_page(&mut self) -> Result<()> {
        let mut values = std::mem::take(&mut self.page_values);
        self.encode_page(&values)?;
        values.clear();
        self.page_values = values;
        Ok(())
    }

    /// Encodes a page of the `page_rows` rows whose levels are held and whose present
    /// values are `values`.
    pub(super) fn encode_page(&mut self, values: &[V]) -> Result<()> {
        // Room for the most the values can take (delta-packed at full width: a value's bytes
        // and each block's header), reserved but touched only as far as written: a page that
        // outgrows its buffer is copied into fresh pages.
        let most = std::mem::size_of_val(values) + values.len().div_ceil(DELTA_BLOCK) * 16;
        let mut raw = Vec::with_capacity(self.page_rows / 4 + most + 64);
        if self.pages.descr.max_def_level() > 0 {
            put_levels(&self.page_levels, 1, &mut raw);
            self.page_levels.clear();
        }
        V::encode(values, self.encoding, &mut raw);
        self.pages.add_data_page(raw, self.page_rows, self.page_rows, self.encoding)?;
        self.page_rows = 0;
        Ok(())
    }

    pub(super) fn close(mut self) -> Result<(Bytes, ColumnCloseResult)> {
        if self.page_rows > 0 {
            self.finish_page()?;
        }
        let statistics = V::statistics(self.min_max, self.nulls);
        self.pages.close(None, self.encoding, Some(statistics))
    }
}

impl ScalarColumn<i64> {
    /// Adds values, those equal to `null` (if given) as nulls.
    pub(super) fn write_values(&mut self, values: &[i64], null: Option<i64>) -> Result<()> {
        match null.filter(|null| values.contains(null)) {
            None => self.push_values(values, None::<fn(usize) -> bool>),
            // A column null on every event of a piece (most events carry no program id, step
            // or correlation id): levels filled, no value looked at a row at a time.
            Some(null) if values.iter().all(|&v| v == null) => self.push_nulls(values.len()),
            Some(null) => self.push_values(values, Some(|r| values[r] != null)),
        }
    }
}
