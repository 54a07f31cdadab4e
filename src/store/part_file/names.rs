//! Name columns: a top-level `Dictionary(Int32, Utf8)` column, from each batch's own dictionary
//! or from string-pool ids, dictionary-encoded once per distinct value (a row costs one lookup).

use super::{
    null_in_required, put_keys, put_levels, Arc, Array, ArrayRef, AsArray, Bytes, ChunkPages, ColumnCloseResult, ColumnDescPtr, DataType, DictionaryArray,
    Encoding, Int32Type, Result, StringPool, Strings, WriterProperties,
};

/// A dictionary-encoded string column of one row group: its dictionary so far, the pages
/// already encoded and the keys of the page being filled.
pub(super) struct NameColumn {
    pub(super) pages: ChunkPages,
    pub(super) dictionary_encoding: Encoding,
    pub(super) data_encoding: Encoding,
    pub(super) page_rows_limit: usize,
    /// The chunk's dictionary: a value's id is its key.
    pub(super) dictionary: StringPool,
    /// The batch's dictionary keys, or string ids, mapped to this column's.
    pub(super) remap: KeyRemap,
    pub(super) page_keys: Vec<u32>,
    /// Definition levels of the page's rows (1 present, 0 null), nullable columns only.
    pub(super) page_levels: Vec<u8>,
    pub(super) page_rows: usize,
}

impl NameColumn {
    /// A writer for `data_type` when it is a flat dictionary string column that the
    /// properties dictionary-encode.
    pub(super) fn new(data_type: &DataType, descr: ColumnDescPtr, props: &WriterProperties) -> Option<NameColumn> {
        let DataType::Dictionary(key, value) = data_type else { return None };
        let flat = descr.max_rep_level() == 0 && descr.path().parts().len() == 1;
        if !(flat && props.dictionary_enabled(descr.path()) && **key == DataType::Int32 && **value == DataType::Utf8) {
            return None;
        }
        Some(NameColumn {
            pages: ChunkPages::new(descr, props, false)?,
            dictionary_encoding: props.dictionary_page_encoding(),
            data_encoding: props.dictionary_data_page_encoding(),
            page_rows_limit: props.data_page_row_count_limit().max(1),
            dictionary: StringPool::default(),
            remap: KeyRemap::default(),
            page_keys: Vec::new(),
            page_levels: Vec::new(),
            page_rows: 0,
        })
    }

    pub(super) fn write(&mut self, array: &ArrayRef) -> Result<()> {
        let dict: &DictionaryArray<Int32Type> = array.as_dictionary();
        let values = dict.values().as_string::<i32>();
        let keys = dict.keys();
        let nullable = self.pages.descr.max_def_level() > 0;
        if !nullable && dict.logical_null_count() > 0 {
            return Err(null_in_required(self.pages.descr.name()));
        }
        self.remap.keyed_by(RemapSource::Values(dict.values().clone()));
        let key_values = keys.values();
        if keys.null_count() == 0 && values.null_count() == 0 {
            self.push_rows(dict.len(), |r| Some(key_values[r] as usize), |key| values.value(key))
        } else {
            let key_at = |r: usize| Some(key_values[r] as usize).filter(|&key| keys.is_valid(r) && values.is_valid(key));
            self.push_rows(dict.len(), key_at, |key| values.value(key))
        }
    }

    /// Adds rows of ids of `strings` (an id it does not hold is null).
    ///
    /// A page's keys (and levels) are filled by one `extend` each rather than a row at a
    /// time: the events table has eleven name columns of a million rows each.
    pub(super) fn write_ids(&mut self, ids: &[u32], strings: &dyn Strings) -> Result<()> {
        self.remap.keyed_by(RemapSource::Strings(strings_address(strings)));
        let held = strings.count();
        let present = |id: u32| (id as usize) < held;
        let nullable = self.pages.descr.max_def_level() > 0;
        if !nullable && !ids.iter().all(|&id| present(id)) {
            return Err(null_in_required(self.pages.descr.name()));
        }
        let mut row = 0;
        while row < ids.len() {
            let rows = (self.page_rows_limit - self.page_rows).min(ids.len() - row);
            let page = &ids[row..row + rows];
            let NameColumn { remap, dictionary, page_keys, page_levels, .. } = self;
            let mut key = |&id: &u32| remap.key(dictionary, id as usize, || strings.text(id).unwrap_or(""));
            let first = page[0];
            // One id down the whole piece (a line's host, plane, device and line; a column null
            // on every event of it): one lookup and a fill, not one a row.
            if page.iter().all(|&id| id == first) {
                let level = present(first);
                if level {
                    page_keys.resize(page_keys.len() + rows, key(&first));
                }
                if nullable {
                    page_levels.resize(page_levels.len() + rows, level as u8);
                }
            } else if nullable {
                page_levels.extend(page.iter().map(|&id| present(id) as u8));
                page_keys.extend(page.iter().filter(|&&id| present(id)).map(key));
            } else {
                page_keys.extend(page.iter().map(key));
            }
            self.page_rows += rows;
            row += rows;
            if self.page_rows == self.page_rows_limit {
                self.finish_page()?;
            }
        }
        Ok(())
    }

    /// Adds `len` rows: row `r` is the value of key `key_at(r)` (`value_of` gives it, the
    /// first time a key is met in the row group), or null where `key_at` gives none.
    pub(super) fn push_rows<'v>(&mut self, len: usize, key_at: impl Fn(usize) -> Option<usize>, value_of: impl Fn(usize) -> &'v str) -> Result<()> {
        let nullable = self.pages.descr.max_def_level() > 0;
        let mut row = 0;
        while row < len {
            let rows = (self.page_rows_limit - self.page_rows).min(len - row);
            self.page_keys.reserve(rows);
            for r in row..row + rows {
                match key_at(r) {
                    Some(key) => {
                        self.page_keys.push(self.remap.key(&mut self.dictionary, key, || value_of(key)));
                        if nullable {
                            self.page_levels.push(1);
                        }
                    }
                    None if nullable => self.page_levels.push(0),
                    None => return Err(null_in_required(self.pages.descr.name())),
                }
            }
            self.page_rows += rows;
            row += rows;
            if self.page_rows == self.page_rows_limit {
                self.finish_page()?;
            }
        }
        Ok(())
    }

    /// Encodes the filled page: definition levels, then the keys' bit width and the keys.
    pub(super) fn finish_page(&mut self) -> Result<()> {
        let mut raw = Vec::with_capacity(self.page_keys.len() * 2 + 16);
        if self.pages.descr.max_def_level() > 0 {
            put_levels(&self.page_levels, 1, &mut raw);
            self.page_levels.clear();
        }
        put_keys(&self.page_keys, self.dictionary.len() as u32, &mut raw);
        self.pages.add_data_page(raw, self.page_rows, self.page_rows, self.data_encoding)?;
        self.page_keys.clear();
        self.page_rows = 0;
        Ok(())
    }

    pub(super) fn close(mut self) -> Result<(Bytes, ColumnCloseResult)> {
        if self.page_rows > 0 {
            self.finish_page()?;
        }
        self.pages.close(Some((&self.dictionary, self.dictionary_encoding)), self.data_encoding, None)
    }
}

/// Ids of some strings (a batch dictionary's keys, or ids of [`Strings`]) mapped to a column
/// chunk's dictionary keys, kept from batch to batch of a row group while they refer to the
/// same strings: a distinct string is interned once, a row costs one table lookup.
#[derive(Default)]
pub(super) struct KeyRemap {
    /// The dictionary key of each id (u32::MAX: not met yet).
    pub(super) keys: Vec<u32>,
    pub(super) source: RemapSource,
}

impl KeyRemap {
    /// Starts over unless the ids are of the strings it already maps.
    pub(super) fn keyed_by(&mut self, source: RemapSource) {
        let same = match (&self.source, &source) {
            (RemapSource::Values(a), RemapSource::Values(b)) => Arc::ptr_eq(a, b),
            (RemapSource::Strings(a), RemapSource::Strings(b)) => a == b,
            _ => false,
        };
        if !same {
            self.keys.clear();
            self.source = source;
        }
    }

    /// The dictionary key of `id`, interning `text()` the first time the row group meets it.
    pub(super) fn key<'v>(&mut self, dictionary: &mut StringPool, id: usize, text: impl FnOnce() -> &'v str) -> u32 {
        if id >= self.keys.len() {
            // As far as the ids in use reach (a column refers to few of the strings, which
            // can be many), found as rows come rather than by a pass over them first.
            self.keys.resize(id + 1 + id / 8, u32::MAX);
        }
        match self.keys[id] {
            u32::MAX => {
                let k = dictionary.intern(text());
                self.keys[id] = k;
                k
            }
            k => k,
        }
    }
}

/// What a [`KeyRemap`]'s ids are of.
#[derive(Default)]
pub(super) enum RemapSource {
    #[default]
    Nothing,
    /// The keys of batches over this dictionary values array (held, so that its memory is
    /// never another array's while compared).
    Values(ArrayRef),
    /// The ids of the strings at this address (the same strings for every call of one file:
    /// [`PartFile::write_rows`]).
    Strings(usize),
}

/// Where `strings` live: what tells one column's strings from another's.
pub(super) fn strings_address(strings: &dyn Strings) -> usize {
    strings as *const dyn Strings as *const () as usize
}
