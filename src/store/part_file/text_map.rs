//! The `args` map column (non-null `Map<Utf8, Utf8>`): keys dictionary-encoded, values PLAIN,
//! repetition and definition levels written straight from the map's offsets.

use super::{
    null_in_required, put_keys, put_levels, strings_address, Array, ArrayRef, AsArray, Bytes, ChunkPages, ColumnCloseResult, ColumnDescPtr, DataType, Encoding,
    KeyRemap, ParquetError, RemapSource, Result, StringPool, Strings, WriterProperties,
};

/// A `Map<Utf8, Utf8>` column of one row group (the `args` of events): its key leaf
/// dictionary-encoded, its value leaf PLAIN, as arrow-rs writes them, without the per-row
/// level building of a nested arrow-rs column.
pub(super) struct TextMapColumn {
    pub(super) key: ChunkPages,
    pub(super) value: ChunkPages,
    pub(super) dictionary_encoding: Encoding,
    pub(super) data_encoding: Encoding,
    pub(super) page_rows_limit: usize,
    /// A page ends early once its values reach this many bytes (args can be long).
    pub(super) page_bytes_limit: usize,
    /// The chunk's dictionary: a value's id is its key.
    pub(super) dictionary: StringPool,
    /// Key ids mapped to the dictionary's (rows written from string ids).
    pub(super) key_remap: KeyRemap,
    /// Per level of the page: repetition (1 for an entry after its row's first) and the
    /// value's definition (0 a row without entries, 1 a null value, 2 a value).
    pub(super) page_repetition: Vec<u8>,
    pub(super) page_definition: Vec<u8>,
    pub(super) page_keys: Vec<u32>,
    /// The page's values, PLAIN-encoded.
    pub(super) page_values: Vec<u8>,
    pub(super) page_rows: usize,
}

impl TextMapColumn {
    /// A writer for a non-null map of strings to nullable strings whose keys the properties
    /// dictionary-encode and whose values they do not.
    pub(super) fn new(data_type: &DataType, key: ColumnDescPtr, value: ColumnDescPtr, props: &WriterProperties) -> Option<TextMapColumn> {
        let DataType::Map(entries, false) = data_type else { return None };
        let DataType::Struct(fields) = entries.data_type() else { return None };
        let strings = fields.len() == 2 && fields.iter().all(|f| *f.data_type() == DataType::Utf8);
        let levels = (key.max_rep_level(), key.max_def_level(), value.max_rep_level(), value.max_def_level()) == (1, 1, 1, 2);
        if !(strings && levels && props.dictionary_enabled(key.path()) && !props.dictionary_enabled(value.path())) {
            return None;
        }
        Some(TextMapColumn {
            key: ChunkPages::new(key, props, false)?,
            value: ChunkPages::new(value, props, false)?,
            dictionary_encoding: props.dictionary_page_encoding(),
            data_encoding: props.dictionary_data_page_encoding(),
            page_rows_limit: props.data_page_row_count_limit().max(1),
            page_bytes_limit: props.data_page_size_limit().max(1),
            dictionary: StringPool::default(),
            key_remap: KeyRemap::default(),
            page_repetition: Vec::new(),
            page_definition: Vec::new(),
            page_keys: Vec::new(),
            page_values: Vec::new(),
            page_rows: 0,
        })
    }

    pub(super) fn write(&mut self, array: &ArrayRef) -> Result<()> {
        let map = array.as_map();
        if map.null_count() > 0 {
            return Err(null_in_required(self.key.descr.path()));
        }
        let keys = map.keys().as_string::<i32>();
        let values = map.values().as_string::<i32>();
        let offsets = map.value_offsets();
        self.push_rows(
            map.len(),
            |row| offsets[row] as usize..offsets[row + 1] as usize,
            |dictionary, _, entry| dictionary.intern(keys.value(entry)),
            |entry| Ok(values.is_valid(entry).then(|| values.value(entry).as_bytes())),
        )
    }

    /// Adds rows whose entries are given by their pool ids and value bytes (see
    /// [`RowValues::TextMap`]; `entries` has one more item than there are rows).
    pub(super) fn write_entries(&mut self, entries: &[u32], keys: &[u32], value_offsets: &[u32], value_bytes: &[u8], strings: &dyn Strings) -> Result<()> {
        let path = self.key.descr.path().clone();
        let bad = |what: &str| ParquetError::General(format!("column {path}: {what}"));
        if entries.windows(2).any(|w| w[0] > w[1]) || entries.last().is_some_and(|&end| end as usize > keys.len()) {
            return Err(bad("map entries out of order or past the keys"));
        }
        let used = entries.first().zip(entries.last()).map_or(&keys[..0], |(&first, &end)| &keys[first as usize..end as usize]);
        let needed = used.iter().max().map_or(0, |&id| id as usize + 1);
        if needed > strings.count() {
            return Err(bad("a key past the strings held"));
        }
        self.key_remap.keyed_by(RemapSource::Strings(strings_address(strings)));
        self.push_rows(
            entries.len().saturating_sub(1),
            |row| entries[row] as usize..entries[row + 1] as usize,
            |dictionary, remap, entry| {
                let id = keys[entry] as usize;
                remap.key(dictionary, id, || strings.text(id as u32).unwrap_or(""))
            },
            |entry| {
                let range = value_offsets.get(entry..entry + 2).ok_or_else(|| bad("a value past the value offsets"))?;
                value_bytes.get(range[0] as usize..range[1] as usize).map(Some).ok_or_else(|| bad("a value past the value bytes"))
            },
        )
    }

    /// Adds `rows` rows: row `r`'s entries are `entries(r)`, entry `e` the dictionary key
    /// `key(dictionary, key_remap, e)` and the value `value(e)` (None: null).
    pub(super) fn push_rows<'v>(
        &mut self,
        rows: usize,
        entries: impl Fn(usize) -> std::ops::Range<usize>,
        mut key: impl FnMut(&mut StringPool, &mut KeyRemap, usize) -> u32,
        value: impl Fn(usize) -> Result<Option<&'v [u8]>>,
    ) -> Result<()> {
        for row in 0..rows {
            let entries = entries(row);
            let first = entries.start;
            if entries.is_empty() {
                self.page_repetition.push(0);
                self.page_definition.push(0);
            }
            for entry in entries {
                self.page_repetition.push((entry > first) as u8);
                self.page_keys.push(key(&mut self.dictionary, &mut self.key_remap, entry));
                match value(entry)? {
                    Some(value) => {
                        self.page_definition.push(2);
                        self.page_values.extend_from_slice(&(value.len() as u32).to_le_bytes());
                        self.page_values.extend_from_slice(value);
                    }
                    None => self.page_definition.push(1),
                }
            }
            self.page_rows += 1;
            if self.page_rows == self.page_rows_limit || self.page_values.len() >= self.page_bytes_limit {
                self.finish_page()?;
            }
        }
        Ok(())
    }

    pub(super) fn finish_page(&mut self) -> Result<()> {
        let levels = self.page_repetition.len();
        // Both leaves have the same repetition levels: encoded once.
        let mut repetition = Vec::with_capacity(levels / 8 + 16);
        put_levels(&self.page_repetition, 1, &mut repetition);
        // The key is defined wherever the entry is (the value's 1 and 2).
        let key_definition: Vec<u8> = self.page_definition.iter().map(|&d| d.min(1)).collect();
        let mut key_raw = Vec::with_capacity(repetition.len() + levels / 8 + self.page_keys.len() + 16);
        key_raw.extend_from_slice(&repetition);
        put_levels(&key_definition, 1, &mut key_raw);
        put_keys(&self.page_keys, self.dictionary.len() as u32, &mut key_raw);
        self.key.add_data_page(key_raw, levels, self.page_rows, self.data_encoding)?;
        let mut value_raw = Vec::with_capacity(repetition.len() + levels / 4 + self.page_values.len() + 16);
        value_raw.extend_from_slice(&repetition);
        put_levels(&self.page_definition, 2, &mut value_raw);
        value_raw.append(&mut self.page_values);
        self.page_repetition.clear();
        self.page_definition.clear();
        self.value.add_data_page(value_raw, levels, self.page_rows, Encoding::PLAIN)?;
        self.page_keys.clear();
        self.page_rows = 0;
        Ok(())
    }

    /// The key and value chunks, in leaf order.
    pub(super) fn close(mut self) -> Result<[(Bytes, ColumnCloseResult); 2]> {
        if self.page_rows > 0 {
            self.finish_page()?;
        }
        let key = self.key.close(Some((&self.dictionary, self.dictionary_encoding)), self.data_encoding, None)?;
        let value = self.value.close(None, Encoding::PLAIN, None)?;
        Ok([key, value])
    }
}
