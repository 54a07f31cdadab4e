//! One Parquet part file of a table, written a batch at a time.
//!
//! Why not arrow-rs's `ArrowWriter` alone: it dictionary-encodes a string column by hashing
//! every row's value into its dictionary, even when the column arrives as a dictionary
//! array whose few distinct values are already known. The `events` table has eleven name
//! columns over a million rows, and that hashing was about a third of the Parquet writer's
//! CPU in an ingest. Here a top-level `Dictionary(Int32, Utf8)` column (every name column of
//! the schema) is encoded from each batch's own dictionary: a distinct value is looked up
//! once per batch, a row costs one table lookup. Its pages are what arrow-rs writes for such
//! a column (one PLAIN dictionary page, then data pages of RLE / bit-packed keys, each
//! compressed as the table's properties say), with an offset index; the column keeps no
//! statistics, as the table's properties ask of name columns. Every other column goes
//! through arrow-rs's column writers, and the file carries the Arrow schema as
//! `ArrowWriter` writes it, so readers see the same file either way.

use arrow::array::{Array, ArrayRef, AsArray, DictionaryArray};
use arrow::datatypes::{DataType, Int32Type, SchemaRef};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::basic::{Compression, Encoding, EncodingMask, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats};
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;
use rustc_hash::FxHashMap;
use std::fs::File;
use std::sync::Arc;

/// A Parquet file being written: row groups of at most the properties' row count, each
/// built from the batches given to [`PartFile::write`].
pub struct PartFile {
    file: SerializedFileWriter<File>,
    schema: SchemaRef,
    props: WriterPropertiesPtr,
    factory: ArrowRowGroupWriterFactory,
    /// The top-level field of each leaf column, in leaf order.
    leaf_fields: Vec<usize>,
    group: Option<RowGroup>,
    groups_written: usize,
}

/// The row group being built: one writer per top-level field.
struct RowGroup {
    columns: Vec<FieldWriter>,
    rows: usize,
}

enum FieldWriter {
    /// arrow-rs's writers of the field's leaf columns.
    Leaves(Vec<ArrowColumnWriter>),
    /// A name column, dictionary-encoded here.
    Names(Box<NameColumn>),
}

impl PartFile {
    pub fn create(file: File, schema: SchemaRef, mut props: WriterProperties) -> Result<PartFile> {
        let parquet_schema = ArrowSchemaConverter::new().with_coerce_types(props.coerce_types()).convert(&schema)?;
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let props = Arc::new(props);
        let file = SerializedFileWriter::new(file, parquet_schema.root_schema_ptr(), props.clone())?;
        let leaf_fields = (0..parquet_schema.num_columns()).map(|leaf| parquet_schema.get_column_root_idx(leaf)).collect();
        let factory = ArrowRowGroupWriterFactory::new(&file, schema.clone());
        Ok(PartFile { file, schema, props, factory, leaf_fields, group: None, groups_written: 0 })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let max_rows = self.props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let mut offset = 0;
        while offset < batch.num_rows() {
            if self.group.is_none() {
                self.group = Some(self.new_group()?);
            }
            let group = self.group.as_mut().expect("a row group is open");
            let rows = (max_rows - group.rows).min(batch.num_rows() - offset);
            let piece = batch.slice(offset, rows);
            for ((field, array), writer) in self.schema.fields().iter().zip(piece.columns()).zip(group.columns.iter_mut()) {
                match writer {
                    FieldWriter::Leaves(leaves) => {
                        for (leaf, w) in compute_leaves(field, array)?.iter().zip(leaves.iter_mut()) {
                            w.write(leaf)?;
                        }
                    }
                    FieldWriter::Names(names) => names.write(array)?,
                }
            }
            group.rows += rows;
            offset += rows;
            if group.rows == max_rows {
                self.flush_group()?;
            }
        }
        Ok(())
    }

    /// Writes the last row group and the footer.
    pub fn finish(mut self) -> Result<File> {
        self.flush_group()?;
        self.file.into_inner()
    }

    fn new_group(&self) -> Result<RowGroup> {
        let mut leaves = self.factory.create_column_writers(self.groups_written)?.into_iter();
        let descriptors = self.file.schema_descr();
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for (index, field) in self.schema.fields().iter().enumerate() {
            let first_leaf = self.leaf_fields.iter().position(|&f| f == index).expect("every field has a leaf");
            let count = self.leaf_fields.iter().filter(|&&f| f == index).count();
            let writers: Vec<ArrowColumnWriter> = leaves.by_ref().take(count).collect();
            let descr = descriptors.column(first_leaf);
            columns.push(match NameColumn::new(field.data_type(), descr, &self.props) {
                Some(names) => FieldWriter::Names(Box::new(names)),
                None => FieldWriter::Leaves(writers),
            });
        }
        Ok(RowGroup { columns, rows: 0 })
    }

    fn flush_group(&mut self) -> Result<()> {
        let Some(group) = self.group.take() else { return Ok(()) };
        let mut row_group = self.file.next_row_group()?;
        for writer in group.columns {
            match writer {
                FieldWriter::Leaves(leaves) => {
                    for w in leaves {
                        w.close()?.append_to_row_group(&mut row_group)?;
                    }
                }
                FieldWriter::Names(names) => {
                    let (bytes, close) = names.close()?;
                    row_group.append_column(&bytes, close)?;
                }
            }
        }
        row_group.close()?;
        self.groups_written += 1;
        Ok(())
    }
}

/// A dictionary-encoded string column of one row group: its dictionary so far, the pages
/// already encoded and the keys of the page being filled.
struct NameColumn {
    descr: ColumnDescPtr,
    compression: Compression,
    compressor: Option<zstd::bulk::Compressor<'static>>,
    dictionary_encoding: Encoding,
    data_encoding: Encoding,
    page_rows_limit: usize,
    dictionary: Dictionary,
    /// The batch's dictionary keys remapped to this column's (u32::MAX: not seen yet).
    remap: Vec<u32>,
    page_keys: Vec<u32>,
    /// Definition levels of the page's rows (1 present, 0 null), nullable columns only.
    page_levels: Vec<u8>,
    page_rows: usize,
    pages: Vec<(CompressedPage, usize)>,
    rows: usize,
}

impl NameColumn {
    /// A writer for `data_type` when it is a flat dictionary string column that the
    /// properties dictionary-encode, without statistics, with a compression handled here.
    fn new(data_type: &DataType, descr: ColumnDescPtr, props: &WriterProperties) -> Option<NameColumn> {
        let DataType::Dictionary(key, value) = data_type else { return None };
        let path = descr.path();
        let flat = descr.max_rep_level() == 0 && descr.path().parts().len() == 1;
        let wanted = props.dictionary_enabled(path)
            && props.statistics_enabled(path) == parquet::file::properties::EnabledStatistics::None
            && props.bloom_filter_properties(path).is_none();
        if !(flat && wanted && **key == DataType::Int32 && **value == DataType::Utf8) {
            return None;
        }
        let compression = props.compression(path);
        let compressor = match compression {
            Compression::UNCOMPRESSED => None,
            Compression::ZSTD(level) => Some(zstd::bulk::Compressor::new(level.compression_level()).ok()?),
            _ => return None,
        };
        Some(NameColumn {
            descr,
            compression,
            compressor,
            dictionary_encoding: props.dictionary_page_encoding(),
            data_encoding: props.dictionary_data_page_encoding(),
            page_rows_limit: props.data_page_row_count_limit().max(1),
            dictionary: Dictionary::default(),
            remap: Vec::new(),
            page_keys: Vec::new(),
            page_levels: Vec::new(),
            page_rows: 0,
            pages: Vec::new(),
            rows: 0,
        })
    }

    fn write(&mut self, array: &ArrayRef) -> Result<()> {
        let dict: &DictionaryArray<Int32Type> = array.as_dictionary();
        let values = dict.values().as_string::<i32>();
        let keys = dict.keys();
        let nullable = self.descr.max_def_level() > 0;
        if !nullable && dict.logical_null_count() > 0 {
            return Err(ParquetError::General(format!("column {} is not nullable but has a null", self.descr.name())));
        }
        self.remap.clear();
        self.remap.resize(values.len(), u32::MAX);
        let all_present = keys.null_count() == 0 && values.null_count() == 0;
        let mut row = 0;
        while row < dict.len() {
            let rows = (self.page_rows_limit - self.page_rows).min(dict.len() - row);
            let (remap, dictionary) = (&mut self.remap, &mut self.dictionary);
            let mut key_of = |key: usize| match remap[key] {
                u32::MAX => {
                    let k = dictionary.key_of(values.value(key));
                    remap[key] = k;
                    k
                }
                k => k,
            };
            if all_present {
                if nullable {
                    self.page_levels.resize(self.page_levels.len() + rows, 1);
                }
                self.page_keys.extend(keys.values()[row..row + rows].iter().map(|&key| key_of(key as usize)));
            } else {
                for r in row..row + rows {
                    let key = keys.values()[r] as usize;
                    let present = keys.is_valid(r) && values.is_valid(key);
                    if nullable {
                        self.page_levels.push(present as u8);
                    }
                    if present {
                        self.page_keys.push(key_of(key));
                    }
                }
            }
            self.page_rows += rows;
            row += rows;
            if self.page_rows == self.page_rows_limit {
                self.finish_page()?;
            }
        }
        self.rows += dict.len();
        Ok(())
    }

    fn compress(&mut self, raw: Vec<u8>) -> Result<(Bytes, usize)> {
        let size = raw.len();
        match &mut self.compressor {
            None => Ok((Bytes::from(raw), size)),
            Some(c) => Ok((Bytes::from(c.compress(&raw)?), size)),
        }
    }

    /// Encodes the filled page: definition levels (4-byte length, hybrid at width 1), then
    /// the keys' bit width and the keys (hybrid).
    fn finish_page(&mut self) -> Result<()> {
        let mut raw = Vec::with_capacity(self.page_keys.len() * 2 + 16);
        if self.descr.max_def_level() > 0 {
            let mut levels = Vec::new();
            hybrid_encode(&self.page_levels, 1, &mut levels);
            raw.extend_from_slice(&(levels.len() as u32).to_le_bytes());
            raw.extend_from_slice(&levels);
        }
        let width = bit_width(self.dictionary.entries.saturating_sub(1));
        raw.push(width);
        hybrid_encode(&self.page_keys, width, &mut raw);
        let (buf, size) = self.compress(raw)?;
        let page = Page::DataPage {
            buf,
            num_values: self.page_rows as u32,
            encoding: self.data_encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        self.pages.push((CompressedPage::new(page, size), self.page_rows));
        self.page_keys.clear();
        self.page_levels.clear();
        self.page_rows = 0;
        Ok(())
    }

    /// The column chunk's bytes (dictionary page first) and what the row group needs to
    /// splice them in: offsets relative to the bytes' start.
    fn close(mut self) -> Result<(Bytes, ColumnCloseResult)> {
        if self.page_rows > 0 {
            self.finish_page()?;
        }
        let entries = self.dictionary.entries;
        let values = std::mem::take(&mut self.dictionary.values);
        let (buf, size) = self.compress(values)?;
        let dictionary_page = Page::DictionaryPage { buf, num_values: entries, encoding: self.dictionary_encoding, is_sorted: false };
        let mut sink = TrackedWrite::new(Vec::new());
        let mut page_writer = SerializedPageWriter::new(&mut sink);
        let spec = page_writer.write_page(CompressedPage::new(dictionary_page, size))?;
        let (mut compressed, mut uncompressed) = (spec.compressed_size as i64, spec.uncompressed_size as i64);
        let mut offsets = OffsetIndexBuilder::new();
        let mut data_page_offset = None;
        let data_pages = self.pages.len() as i32;
        for (page, rows) in std::mem::take(&mut self.pages) {
            let spec = page_writer.write_page(page)?;
            data_page_offset.get_or_insert(spec.offset as i64);
            compressed += spec.compressed_size as i64;
            uncompressed += spec.uncompressed_size as i64;
            offsets.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
            offsets.append_row_count(rows as i64);
        }
        page_writer.close()?;
        let bytes = Bytes::from(sink.into_inner()?);
        let encodings = [self.dictionary_encoding, Encoding::RLE, self.data_encoding];
        let metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(self.compression)
            .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
            .set_page_encoding_stats(vec![
                PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: self.dictionary_encoding, count: 1 },
                PageEncodingStats { page_type: PageType::DATA_PAGE, encoding: self.data_encoding, count: data_pages },
            ])
            .set_total_compressed_size(compressed)
            .set_total_uncompressed_size(uncompressed)
            .set_num_values(self.rows as i64)
            .set_data_page_offset(data_page_offset.unwrap_or(0))
            .set_dictionary_page_offset(Some(0))
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: compressed as u64,
            rows_written: self.rows as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(offsets.build()),
        };
        Ok((bytes, close))
    }
}

/// A column chunk's dictionary: its distinct values in key order.
#[derive(Default)]
struct Dictionary {
    keys_by_value: FxHashMap<Box<str>, u32>,
    /// The dictionary page's values, PLAIN-encoded (u32 length, bytes).
    values: Vec<u8>,
    entries: u32,
}

impl Dictionary {
    fn key_of(&mut self, value: &str) -> u32 {
        if let Some(&k) = self.keys_by_value.get(value) {
            return k;
        }
        let k = self.entries;
        self.entries += 1;
        self.values.extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.values.extend_from_slice(value.as_bytes());
        self.keys_by_value.insert(value.into(), k);
        k
    }
}

/// Bits needed for `max` (at least 1).
fn bit_width(max: u32) -> u8 {
    (32 - max.leading_zeros()).max(1) as u8
}

/// The longest bit-packed run arrow-rs writes: its header then fits one byte.
const MAX_PACKED_GROUPS: usize = 63;

/// Appends `values` in Parquet's RLE / bit-packed hybrid encoding (no length prefix): a run
/// of eight or more equal values as one RLE run, everything else bit-packed in groups of
/// eight (the last group padded with zeros).
fn hybrid_encode<T: Copy + PartialEq + Into<u32>>(values: &[T], width: u8, out: &mut Vec<u8>) {
    let value_bytes = (width as usize).div_ceil(8);
    let run_at = |i: usize, cap: usize| values[i..].iter().take(cap).take_while(|&&v| v == values[i]).count();
    let mut i = 0;
    while i < values.len() {
        let run = run_at(i, usize::MAX);
        if run >= 8 {
            put_varint(out, (run as u64) << 1);
            out.extend_from_slice(&values[i].into().to_le_bytes()[..value_bytes]);
            i += run;
            continue;
        }
        let start = i;
        let mut groups = 0;
        loop {
            groups += 1;
            i += 8;
            if i >= values.len() || groups == MAX_PACKED_GROUPS || run_at(i, 8) == 8 {
                break;
            }
        }
        put_varint(out, ((groups as u64) << 1) | 1);
        bit_pack(&values[start..i.min(values.len())], groups * 8, width, out);
        i = i.min(values.len());
    }
}

/// Packs `count` values (zeros past the slice) at `width` bits each, least significant bit
/// first.
fn bit_pack<T: Copy + Into<u32>>(values: &[T], count: usize, width: u8, out: &mut Vec<u8>) {
    let (mut acc, mut bits) = (0u64, 0u8);
    for k in 0..count {
        acc |= (values.get(k).map_or(0, |&v| v.into()) as u64) << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn names(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(values.iter().copied().collect::<DictionaryArray<Int32Type>>())
    }

    /// Name columns with runs, alternations, nulls and many distinct values, over several
    /// batches, pages and row groups, read back by arrow-rs's reader.
    #[test]
    fn name_columns_read_back_as_written() {
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let schema =
            Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), Field::new("host", dict.clone(), false), Field::new("name", dict, true)]));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(Default::default()))
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
            .set_data_page_row_count_limit(1000)
            .set_max_row_group_row_count(Some(2500))
            .build();
        let descriptors = ArrowSchemaConverter::new().convert(&schema).unwrap();
        for (field, leaf) in [(1, 1), (2, 2)] {
            assert!(NameColumn::new(schema.field(field).data_type(), descriptors.column(leaf), &props).is_some(), "the name columns are encoded here");
        }
        let path = std::env::temp_dir().join(format!("profq-part-file-test-{}.parquet", std::process::id()));
        let mut file = PartFile::create(File::create(&path).unwrap(), schema.clone(), props.clone()).unwrap();
        let mut expected: Vec<(i64, String, Option<String>)> = Vec::new();
        for batch in 0..7 {
            let rows = 900 + batch * 37;
            let hosts: Vec<String> = (0..rows).map(|r| format!("host-{}", (r / 100) % 3)).collect();
            let names_owned: Vec<Option<String>> = (0..rows)
                .map(|r| match (r + batch) % 11 {
                    0 => None,
                    1..=4 => Some("same".to_string()),
                    5 => Some(format!("unique-{batch}-{r}")),
                    k => Some(format!("name-{}", (k * r) % 300)),
                })
                .collect();
            let ids: Vec<i64> = (0..rows).map(|r| (expected.len() + r) as i64).collect();
            for r in 0..rows {
                expected.push((ids[r], hosts[r].clone(), names_owned[r].clone()));
            }
            let host_col = names(&hosts.iter().map(|h| Some(h.as_str())).collect::<Vec<_>>());
            let name_col = names(&names_owned.iter().map(|n| n.as_deref()).collect::<Vec<_>>());
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(ids)), host_col, name_col]).unwrap();
            file.write(&batch).unwrap();
        }
        file.finish().unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        assert!(reader.metadata().num_row_groups() > 2);
        let mut got = Vec::new();
        for batch in reader.build().unwrap() {
            let batch = batch.unwrap();
            let ids = batch.column(0).as_primitive::<arrow::datatypes::Int64Type>();
            let text = |c: usize, r: usize| {
                let d: &DictionaryArray<Int32Type> = batch.column(c).as_dictionary();
                d.is_valid(r).then(|| d.values().as_string::<i32>().value(d.keys().value(r) as usize).to_string())
            };
            for r in 0..batch.num_rows() {
                got.push((ids.value(r), text(1, r).unwrap(), text(2, r)));
            }
        }
        std::fs::remove_file(&path).ok();
        assert_eq!(got, expected);
    }

    #[test]
    fn hybrid_encoding_packs_runs_and_groups() {
        let mut out = Vec::new();
        hybrid_encode(&[5u32; 10], 3, &mut out);
        assert_eq!(out, vec![10 << 1, 5]);
        out.clear();
        hybrid_encode(&[1u8, 0, 1], 1, &mut out);
        assert_eq!(out, vec![0b11, 0b101]);
    }
}
