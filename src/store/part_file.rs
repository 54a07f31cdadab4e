//! One Parquet part file of a table, written a batch at a time, or (ingest's `events` and `ops`)
//! from the columns the decoder and derive hold ([`PartFile::write_rows`]).
//!
//! Why not arrow-rs's `ArrowWriter` alone: it dictionary-encodes a string column by hashing
//! every row's value into its dictionary, even when the column arrives as a dictionary
//! array whose few distinct values are already known, and it builds a nested column's
//! levels generically, row by row. The `events` table has eleven name columns and an `args`
//! map over a million rows, and those were about a third of an ingest's CPU. Its eleven
//! 64-bit integer columns went through a generic level builder and a compression context
//! made anew for every page, and making arrow-rs's writers for a row group allocates a
//! megabyte for every delta-encoded column (~11 % of an ingest's CPU in all). Here these
//! kinds of column are encoded directly:
//! - a top-level `Dictionary(Int32, Utf8)` column (every name column of the schema), from
//!   each batch's own dictionary, or from string-pool ids: a distinct value is looked up
//!   once per batch (per row group for pool ids), a row costs one table lookup;
//! - a non-null `Map<Utf8, Utf8>` (`args`): keys dictionary-encoded, values PLAIN, levels
//!   written straight from the map's offsets;
//! - a top-level `Int64` or `UInt64` column: DELTA_BINARY_PACKED (or PLAIN) values, and a
//!   `Float64` or `Boolean` column: PLAIN values, each with the chunk's min, max and null
//!   count.
//!
//! Their pages are what arrow-rs writes for such columns (a PLAIN dictionary page, data
//! pages v1 of RLE / bit-packed levels and keys, compressed as the table's properties say),
//! with an offset index and chunk statistics only for the scalars (the properties ask none
//! of the others). Every other column (text, lists) goes through arrow-rs's column writers,
//! made only for row groups that have such a column, and the file carries the Arrow
//! schema as `ArrowWriter` writes it, so readers see the same file either way.

use crate::model::StringPool;
use crate::tables::columns::{RowValues, Strings};
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
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;
use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;

/// Bytes gathered for each write of a part file.
const FILE_BUFFER_BYTES: usize = 1 << 20;

/// A Parquet file being written: row groups of at most the properties' row count, each
/// built from the batches given to [`PartFile::write`].
pub struct PartFile {
    file: SerializedFileWriter<BufWriter<File>>,
    schema: SchemaRef,
    props: WriterPropertiesPtr,
    factory: ArrowRowGroupWriterFactory,
    /// Each top-level field's leaf columns.
    field_leaves: Vec<std::ops::Range<usize>>,
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
    /// A map of strings to strings, encoded here.
    TextMap(Box<TextMapColumn>),
    /// A 64-bit integer column, encoded here.
    Ints(Box<ScalarColumn<i64>>),
    /// A Float64 column, encoded here.
    Floats(Box<ScalarColumn<f64>>),
    /// A Boolean column, encoded here.
    Bools(Box<ScalarColumn<bool>>),
}

impl PartFile {
    pub fn create(file: File, schema: SchemaRef, mut props: WriterProperties) -> Result<PartFile> {
        let parquet_schema = ArrowSchemaConverter::new().with_coerce_types(props.coerce_types()).convert(&schema)?;
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let props = Arc::new(props);
        // The writer's own buffer is 8 KiB, which a column chunk passes through: the file's
        // writes are gathered into larger ones here (a chunk of several MB took hundreds).
        let file = SerializedFileWriter::new(BufWriter::with_capacity(FILE_BUFFER_BYTES, file), parquet_schema.root_schema_ptr(), props.clone())?;
        let mut field_leaves = vec![0..0; schema.fields().len()];
        for leaf in 0..parquet_schema.num_columns() {
            let leaves = &mut field_leaves[parquet_schema.get_column_root_idx(leaf)];
            // A field's leaves are consecutive.
            if leaves.start == leaves.end {
                leaves.start = leaf;
            }
            leaves.end = leaf + 1;
        }
        let factory = ArrowRowGroupWriterFactory::new(&file, schema.clone());
        Ok(PartFile { file, schema, props, factory, field_leaves, group: None, groups_written: 0 })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let schema = self.schema.clone();
        self.write_groups(batch.num_rows(), |group, rows| {
            let piece = batch.slice(rows.start, rows.len());
            for ((field, array), writer) in schema.fields().iter().zip(piece.columns()).zip(group.columns.iter_mut()) {
                match writer {
                    FieldWriter::Leaves(leaves) => {
                        for (leaf, w) in compute_leaves(field, array)?.iter().zip(leaves.iter_mut()) {
                            w.write(leaf)?;
                        }
                    }
                    FieldWriter::Names(names) => names.write(array)?,
                    FieldWriter::TextMap(map) => map.write(array)?,
                    FieldWriter::Ints(ints) => ints.write(array)?,
                    FieldWriter::Floats(floats) => floats.write(array)?,
                    FieldWriter::Bools(bools) => bools.write(array)?,
                }
            }
            Ok(())
        })
    }

    /// Writes `rows` rows given as the decoder holds them, one [`RowValues`] per field of the
    /// schema, in order; each field must be of a kind encoded here (a name, a scalar, a map
    /// of strings). A column maps each id of its strings to its dictionary once per row
    /// group, so every call on one file gives a column the same strings (they may grow
    /// between calls: an id keeps its string).
    pub fn write_rows(&mut self, rows: usize, columns: &[RowValues<'_>]) -> Result<()> {
        let schema = self.schema.clone();
        if columns.len() != schema.fields().len() {
            return Err(ParquetError::General(format!("{} columns given for a schema of {}", columns.len(), schema.fields().len())));
        }
        for (field, values) in schema.fields().iter().zip(columns) {
            let (given, expected) = match values {
                RowValues::Names { ids, .. } => (ids.len(), rows),
                RowValues::Ints { values, .. } => (values.len(), rows),
                RowValues::Floats { values, present: None } => (values.len(), rows),
                RowValues::Floats { values, present: Some(present) } => (values.len().min(present.len()), rows),
                RowValues::Bools(values) => (values.len(), rows),
                RowValues::TextMap { entries, .. } => (entries.len(), rows + 1),
            };
            if given != expected {
                return Err(ParquetError::General(format!("column {}: {given} values given for {rows} rows", field.name())));
            }
        }
        self.write_groups(rows, |group, rows| {
            for ((field, values), writer) in schema.fields().iter().zip(columns).zip(group.columns.iter_mut()) {
                match (values, writer) {
                    (RowValues::Names { ids, strings }, FieldWriter::Names(names)) => names.write_ids(&ids[rows.clone()], *strings)?,
                    (RowValues::Ints { values, null }, FieldWriter::Ints(ints)) => ints.write_values(&values[rows.clone()], *null)?,
                    (RowValues::Floats { values, present }, FieldWriter::Floats(floats)) => {
                        let values = &values[rows.clone()];
                        match present.map(|p| &p[rows.clone()]).filter(|p| p.contains(&false)) {
                            None => floats.push_values(values, None::<fn(usize) -> bool>)?,
                            Some(present) => floats.push_values(values, Some(|r| present[r]))?,
                        }
                    }
                    (RowValues::Bools(values), FieldWriter::Bools(bools)) => bools.push_values(&values[rows.clone()], None::<fn(usize) -> bool>)?,
                    (RowValues::TextMap { entries, keys, value_offsets, value_bytes, strings }, FieldWriter::TextMap(map)) => {
                        map.write_entries(&entries[rows.start..=rows.end], keys, value_offsets, value_bytes, *strings)?
                    }
                    _ => return Err(ParquetError::General(format!("column {}: rows of another kind than the column's writer", field.name()))),
                }
            }
            Ok(())
        })
    }

    /// Hands `write` the open row group and each piece of `0..rows` that fits in it, opening
    /// and flushing row groups of the properties' row count as they fill.
    fn write_groups(&mut self, rows: usize, mut write: impl FnMut(&mut RowGroup, std::ops::Range<usize>) -> Result<()>) -> Result<()> {
        let max_rows = self.props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let mut offset = 0;
        while offset < rows {
            if self.group.is_none() {
                self.group = Some(self.new_group()?);
            }
            let group = self.group.as_mut().expect("a row group is open");
            let piece = (max_rows - group.rows).min(rows - offset);
            write(group, offset..offset + piece)?;
            group.rows += piece;
            offset += piece;
            if group.rows == max_rows {
                self.flush_group()?;
            }
        }
        Ok(())
    }

    /// Writes the last row group and the footer.
    pub fn finish(mut self) -> Result<File> {
        self.flush_group()?;
        self.file.into_inner()?.into_inner().map_err(|e| ParquetError::External(Box::new(e.into_error())))
    }

    fn new_group(&self) -> Result<RowGroup> {
        let descriptors = self.file.schema_descr();
        let encoded_here: Vec<Option<FieldWriter>> = self
            .schema
            .fields()
            .iter()
            .zip(&self.field_leaves)
            .map(|(field, leaves)| {
                let descr = descriptors.column(leaves.start);
                match leaves.len() {
                    1 => NameColumn::new(field.data_type(), descr.clone(), &self.props)
                        .map(|names| FieldWriter::Names(Box::new(names)))
                        .or_else(|| ScalarColumn::new(field.data_type(), descr.clone(), &self.props).map(|c| FieldWriter::Ints(Box::new(c))))
                        .or_else(|| ScalarColumn::new(field.data_type(), descr.clone(), &self.props).map(|c| FieldWriter::Floats(Box::new(c))))
                        .or_else(|| ScalarColumn::new(field.data_type(), descr, &self.props).map(|c| FieldWriter::Bools(Box::new(c)))),
                    2 => TextMapColumn::new(field.data_type(), descr, descriptors.column(leaves.start + 1), &self.props)
                        .map(|map| FieldWriter::TextMap(Box::new(map))),
                    _ => None,
                }
            })
            .collect();
        // arrow-rs's writers only when some field needs them: making them allocates a buffer
        // for every leaf of the schema (a megabyte each for delta-encoded integers).
        let columns = if encoded_here.iter().all(Option::is_some) {
            encoded_here.into_iter().flatten().collect()
        } else {
            let mut leaves = self.factory.create_column_writers(self.groups_written)?.into_iter();
            encoded_here
                .into_iter()
                .zip(&self.field_leaves)
                .map(|(here, field_leaves)| {
                    let writers: Vec<ArrowColumnWriter> = leaves.by_ref().take(field_leaves.len()).collect();
                    here.unwrap_or(FieldWriter::Leaves(writers))
                })
                .collect()
        };
        Ok(RowGroup { columns, rows: 0 })
    }

    fn flush_group(&mut self) -> Result<()> {
        let Some(group) = self.group.take() else { return Ok(()) };
        let mut row_group = self.file.next_row_group()?;
        for writer in group.columns {
            let chunks = match writer {
                FieldWriter::Leaves(leaves) => {
                    for w in leaves {
                        w.close()?.append_to_row_group(&mut row_group)?;
                    }
                    continue;
                }
                FieldWriter::Names(names) => vec![names.close()?],
                FieldWriter::Ints(c) => vec![c.close()?],
                FieldWriter::Floats(c) => vec![c.close()?],
                FieldWriter::Bools(c) => vec![c.close()?],
                FieldWriter::TextMap(map) => map.close()?.into(),
            };
            for (bytes, close) in chunks {
                row_group.append_column(&bytes, close)?;
            }
        }
        row_group.close()?;
        self.groups_written += 1;
        Ok(())
    }
}

/// The pages of one leaf column chunk, compressed as they fill, and the chunk's bytes and
/// metadata once it is closed.
struct ChunkPages {
    descr: ColumnDescPtr,
    compression: Compression,
    /// The zstd level of the chunk's pages (None: stored uncompressed).
    zstd_level: Option<i32>,
    /// Each data page and the rows it holds.
    pages: Vec<(CompressedPage, usize)>,
    /// Levels written (the chunk's `num_values`: rows, plus a map's entries past a row's first).
    values: usize,
    /// Whether the chunk's codec and level are settled: a number column's by its first data
    /// page (see [`ChunkPages::compress`]); a text column's dictionary page compresses well
    /// whatever its keys do, so it stays compressed at the table's level.
    codec_settled: bool,
}

/// A number column's chunk stays compressed only if its first data page shrinks by at least a
/// quarter: delta-packed times and durations are near random in their low bits (zstd saves
/// 0–22 % on them), and compressing them was ~4 % of an ingest's instructions.
const KEPT_COMPRESSED_AT_MOST: (usize, usize) = (3, 4);

/// A number column whose first page is kept compressed but shrinks by less than half is
/// noise-like (durations, self times, parent ids delta-packed): its other pages are
/// compressed at zstd's fast level [`NOISE_LEVEL`]. zstd's gain there is the entropy coding
/// of bytes, not matches, so hunting matches less hard costs little. On the bench file's
/// pages, level -3 against level 1: `dur_ns` 71 % of the bytes against 70 %, `self_ns` 72 %
/// against 70 %, `parent_id` 59 % against 54 %, in 45 % less time; the whole store 0.9 %
/// larger for 2 % fewer instructions per ingest.
const NOISE_AT_LEAST: (usize, usize) = (1, 2);
const NOISE_LEVEL: i32 = -3;

impl ChunkPages {
    /// Pages for `descr` when the properties ask nothing of it that is not done here: no
    /// bloom filter, zstd or no compression, and no statistics, or chunk statistics where
    /// the column computes them (`chunk_statistics`).
    fn new(descr: ColumnDescPtr, props: &WriterProperties, chunk_statistics: bool) -> Option<ChunkPages> {
        use parquet::file::properties::EnabledStatistics;
        let path = descr.path();
        let statistics_done = match props.statistics_enabled(path) {
            EnabledStatistics::None => true,
            EnabledStatistics::Chunk => chunk_statistics,
            EnabledStatistics::Page => false,
        };
        if !statistics_done || props.bloom_filter_properties(path).is_some() {
            return None;
        }
        let compression = props.compression(path);
        let zstd_level = match compression {
            Compression::UNCOMPRESSED => None,
            Compression::ZSTD(level) => Some(level.compression_level()),
            _ => return None,
        };
        Some(ChunkPages { descr, compression, zstd_level, pages: Vec::new(), values: 0, codec_settled: true })
    }

    fn compress(&mut self, raw: Vec<u8>) -> Result<(Bytes, usize)> {
        let size = raw.len();
        if size > i32::MAX as usize {
            return Err(ParquetError::General(format!("column {}: a page of {size} bytes is over Parquet's 2 GiB", self.descr.path())));
        }
        let Some(level) = self.zstd_level else { return Ok((Bytes::from(raw), size)) };
        let settled = std::mem::replace(&mut self.codec_settled, true);
        let (bytes, compressed) = with_zstd(level, |compressor, page| {
            page.clear();
            page.reserve(zstd::zstd_safe::compress_bound(size));
            compressor.compress_to_buffer(&raw, page)?;
            // Copied out at its size: the row group's pages are held until it is written, so
            // only their bytes are kept.
            let (most, of) = KEPT_COMPRESSED_AT_MOST;
            let kept = settled || page.len() * of <= size * most;
            Ok((kept.then(|| Bytes::copy_from_slice(page)), page.len()))
        })?;
        let Some(bytes) = bytes else {
            self.zstd_level = None;
            self.compression = Compression::UNCOMPRESSED;
            return Ok((Bytes::from(raw), size));
        };
        let (most, of) = NOISE_AT_LEAST;
        if !settled && compressed * of > size * most {
            self.zstd_level = Some(NOISE_LEVEL);
        }
        Ok((bytes, size))
    }

    /// Adds a data page (format v1: levels, then values) of `values` levels over `rows` rows.
    fn add_data_page(&mut self, raw: Vec<u8>, values: usize, rows: usize, encoding: Encoding) -> Result<()> {
        let (buf, size) = self.compress(raw)?;
        let page =
            Page::DataPage { buf, num_values: values as u32, encoding, def_level_encoding: Encoding::RLE, rep_level_encoding: Encoding::RLE, statistics: None };
        self.pages.push((CompressedPage::new(page, size), rows));
        self.values += values;
        Ok(())
    }

    /// The chunk's bytes (the dictionary page, if any, first) and what the row group needs
    /// to splice them in, with offsets relative to the bytes' start.
    fn close(
        mut self,
        dictionary: Option<(&StringPool, Encoding)>,
        data_encoding: Encoding,
        statistics: Option<Statistics>,
    ) -> Result<(Bytes, ColumnCloseResult)> {
        let dictionary_page = match dictionary {
            Some((pool, encoding)) => Some((pool.len(), encoding, self.compress(plain_values(pool))?)),
            None => None,
        };
        // The chunk's bytes are the pages' with a header each: sized for them at once, so that
        // the buffer is not grown (and copied into fresh pages) as they are written.
        const PAGE_HEADER_ROOM: usize = 64;
        let held: usize = self.pages.iter().map(|(page, _)| page.data().len() + PAGE_HEADER_ROOM).sum();
        let dictionary_bytes = dictionary_page.as_ref().map_or(0, |(_, _, (buf, _))| buf.len() + PAGE_HEADER_ROOM);
        let mut sink = TrackedWrite::new(Vec::with_capacity(held + dictionary_bytes));
        let mut page_writer = SerializedPageWriter::new(&mut sink);
        let (mut compressed, mut uncompressed) = (0i64, 0i64);
        let mut encodings = vec![Encoding::RLE, data_encoding];
        let mut encoding_stats = Vec::new();
        let mut dictionary_page_offset = None;
        if let Some((len, encoding, (buf, size))) = dictionary_page {
            let page = Page::DictionaryPage { buf, num_values: len as u32, encoding, is_sorted: false };
            let spec = page_writer.write_page(CompressedPage::new(page, size))?;
            compressed += spec.compressed_size as i64;
            uncompressed += spec.uncompressed_size as i64;
            dictionary_page_offset = Some(spec.offset as i64);
            encodings.push(encoding);
            encoding_stats.push(PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding, count: 1 });
        }
        encoding_stats.push(PageEncodingStats { page_type: PageType::DATA_PAGE, encoding: data_encoding, count: self.pages.len() as i32 });
        let mut offsets = OffsetIndexBuilder::new();
        let mut data_page_offset = None;
        let rows: usize = self.pages.iter().map(|(_, rows)| rows).sum();
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
        let mut metadata = ColumnChunkMetaData::builder(self.descr.clone());
        if let Some(statistics) = statistics {
            metadata = metadata.set_statistics(statistics);
        }
        let metadata = metadata
            .set_compression(self.compression)
            .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
            .set_page_encoding_stats(encoding_stats)
            .set_total_compressed_size(compressed)
            .set_total_uncompressed_size(uncompressed)
            .set_num_values(self.values as i64)
            .set_data_page_offset(data_page_offset.unwrap_or(0))
            .set_dictionary_page_offset(dictionary_page_offset)
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: compressed as u64,
            rows_written: rows as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(offsets.build()),
        };
        Ok((bytes, close))
    }
}

/// The error for a null in column `column`, whose schema says it has none.
fn null_in_required(column: impl std::fmt::Display) -> ParquetError {
    ParquetError::General(format!("column {column} is not nullable but has a null"))
}

/// A thread's zstd context, at the level it was last set to, and the buffer it compresses a
/// page into.
struct PageCompressor {
    context: zstd::bulk::Compressor<'static>,
    level: i32,
    page: Vec<u8>,
}

thread_local! {
    /// Pages are compressed one at a time on the thread that writes their file, so the
    /// columns of a file share one context (made once, its tables touched once) rather than
    /// holding one each.
    static PAGE_COMPRESSOR: std::cell::RefCell<Option<PageCompressor>> = const { std::cell::RefCell::new(None) };
}

/// Runs `compress` with this thread's zstd context, set to `level`, and its page buffer.
fn with_zstd<T>(level: i32, compress: impl FnOnce(&mut zstd::bulk::Compressor<'static>, &mut Vec<u8>) -> std::io::Result<T>) -> Result<T> {
    PAGE_COMPRESSOR
        .with_borrow_mut(|held| {
            let compressor = match held {
                Some(c) => c,
                None => held.insert(PageCompressor { context: zstd::bulk::Compressor::new(level)?, level, page: Vec::new() }),
            };
            if compressor.level != level {
                compressor.context.set_compression_level(level)?;
                compressor.level = level;
            }
            compress(&mut compressor.context, &mut compressor.page)
        })
        .map_err(|e| ParquetError::General(format!("zstd: {e}")))
}

/// Appends levels as a format-v1 page holds them: their byte length, then the hybrid
/// encoding at the width of `max_level`.
fn put_levels(levels: &[u8], max_level: i16, raw: &mut Vec<u8>) {
    let length_at = raw.len();
    raw.extend_from_slice(&[0; 4]);
    if max_level == 1 {
        hybrid_encode_bits(levels, raw);
    } else {
        hybrid_encode(levels, bit_width(max_level as u32), raw);
    }
    let length = (raw.len() - length_at - 4) as u32;
    raw[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
}

/// A dictionary-encoded string column of one row group: its dictionary so far, the pages
/// already encoded and the keys of the page being filled.
struct NameColumn {
    pages: ChunkPages,
    dictionary_encoding: Encoding,
    data_encoding: Encoding,
    page_rows_limit: usize,
    /// The chunk's dictionary: a value's id is its key.
    dictionary: StringPool,
    /// The batch's dictionary keys, or string ids, mapped to this column's.
    remap: KeyRemap,
    page_keys: Vec<u32>,
    /// Definition levels of the page's rows (1 present, 0 null), nullable columns only.
    page_levels: Vec<u8>,
    page_rows: usize,
}

impl NameColumn {
    /// A writer for `data_type` when it is a flat dictionary string column that the
    /// properties dictionary-encode.
    fn new(data_type: &DataType, descr: ColumnDescPtr, props: &WriterProperties) -> Option<NameColumn> {
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

    fn write(&mut self, array: &ArrayRef) -> Result<()> {
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
    fn write_ids(&mut self, ids: &[u32], strings: &dyn Strings) -> Result<()> {
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
    fn push_rows<'v>(&mut self, len: usize, key_at: impl Fn(usize) -> Option<usize>, value_of: impl Fn(usize) -> &'v str) -> Result<()> {
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
    fn finish_page(&mut self) -> Result<()> {
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

    fn close(mut self) -> Result<(Bytes, ColumnCloseResult)> {
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
struct KeyRemap {
    /// The dictionary key of each id (u32::MAX: not met yet).
    keys: Vec<u32>,
    source: RemapSource,
}

impl KeyRemap {
    /// Starts over unless the ids are of the strings it already maps.
    fn keyed_by(&mut self, source: RemapSource) {
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
    fn key<'v>(&mut self, dictionary: &mut StringPool, id: usize, text: impl FnOnce() -> &'v str) -> u32 {
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
enum RemapSource {
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
fn strings_address(strings: &dyn Strings) -> usize {
    strings as *const dyn Strings as *const () as usize
}

/// Appends dictionary keys as a data page holds them: their bit width (for a dictionary of
/// `entries` values), then the keys.
fn put_keys(keys: &[u32], entries: u32, raw: &mut Vec<u8>) {
    let width = bit_width(entries.saturating_sub(1));
    raw.push(width);
    hybrid_encode(keys, width, raw);
}

/// A flat scalar column of one row group: `Int64` or `UInt64` (ids, times, counts, program
/// ids; DELTA_BINARY_PACKED or PLAIN as the properties say), `Float64` (op costs) or
/// `Boolean` (flags), with the chunk's min, max and null count, the statistics the
/// properties ask of these columns. arrow-rs's writer does the same through a generic level
/// builder and a compression context made anew for every page.
struct ScalarColumn<V: Scalar> {
    pages: ChunkPages,
    encoding: Encoding,
    /// UInt64: values are kept as their bits, and compared unsigned for min and max.
    unsigned: bool,
    page_rows_limit: usize,
    page_values: Vec<V>,
    /// Definition levels of the page's rows (1 present, 0 null), nullable columns only.
    page_levels: Vec<u8>,
    page_rows: usize,
    min_max: Option<(V, V)>,
    nulls: u64,
}

/// A value type of [`ScalarColumn`]: how arrays hold it, how pages and statistics do.
trait Scalar: Copy {
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
    fn new(data_type: &DataType, descr: ColumnDescPtr, props: &WriterProperties) -> Option<ScalarColumn<V>> {
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

    fn write(&mut self, array: &ArrayRef) -> Result<()> {
        let (values, nulls) = V::values(array);
        match nulls.filter(|n| n.null_count() > 0) {
            None => self.push_values(&values, None::<fn(usize) -> bool>),
            Some(n) => self.push_values(&values, Some(|r| n.is_valid(r))),
        }
    }
    /// Adds `values`, value `r` a null where `present(r)` is false; all present without one.
    fn push_values(&mut self, values: &[V], present: Option<impl Fn(usize) -> bool>) -> Result<()> {
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
    fn push_nulls(&mut self, mut rows: usize) -> Result<()> {
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
    fn note_min_max(&mut self, first_new: usize) {
        self.min_max = V::widen(self.min_max, &self.page_values[first_new..], self.unsigned);
    }

    /// Encodes the filled page: definition levels (nullable columns), then the values.
    fn finish_page(&mut self) -> Result<()> {
        let mut values = std::mem::take(&mut self.page_values);
        self.encode_page(&values)?;
        values.clear();
        self.page_values = values;
        Ok(())
    }

    /// Encodes a page of the `page_rows` rows whose levels are held and whose present
    /// values are `values`.
    fn encode_page(&mut self, values: &[V]) -> Result<()> {
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

    fn close(mut self) -> Result<(Bytes, ColumnCloseResult)> {
        if self.page_rows > 0 {
            self.finish_page()?;
        }
        let statistics = V::statistics(self.min_max, self.nulls);
        self.pages.close(None, self.encoding, Some(statistics))
    }
}

impl ScalarColumn<i64> {
    /// Adds values, those equal to `null` (if given) as nulls.
    fn write_values(&mut self, values: &[i64], null: Option<i64>) -> Result<()> {
        match null.filter(|null| values.contains(null)) {
            None => self.push_values(values, None::<fn(usize) -> bool>),
            // A column null on every event of a piece (most events carry no program id, step
            // or correlation id): levels filled, no value looked at a row at a time.
            Some(null) if values.iter().all(|&v| v == null) => self.push_nulls(values.len()),
            Some(null) => self.push_values(values, Some(|r| values[r] != null)),
        }
    }
}

/// Ors `$values[i]` into `$words` from bit `i × $w`, for each listed `i` (the bits past a
/// word start the next): with `$w` a constant, every shift and word is fixed when compiled.
macro_rules! or_at_fixed_width {
    ($values:ident, $words:ident, $w:ident; $($i:literal)*) => {$(
        {
            let (word, shift) = ($i * $w / 64, $i * $w % 64);
            $words[word] |= $values[$i] << shift;
            if shift + $w > 64 {
                $words[word + 1] |= $values[$i] >> (64 - shift);
            }
        }
    )*};
}

/// Values of a DELTA_BINARY_PACKED block, and of each of its miniblocks (arrow-rs's sizes).
const DELTA_BLOCK: usize = 128;
const DELTA_MINIBLOCKS: usize = 4;
const DELTA_MINIBLOCK: usize = DELTA_BLOCK / DELTA_MINIBLOCKS;

/// Appends `values` in Parquet's DELTA_BINARY_PACKED encoding: a header (block size,
/// miniblocks per block, value count, first value), then per block of deltas its minimum
/// and each miniblock's bit width, and the miniblocks' deltas less that minimum, bit-packed.
/// Unused miniblocks of the last block have width 0 and no bytes; a partly used one is
/// padded to its full size, as the format says.
fn delta_binary_pack(values: &[i64], out: &mut Vec<u8>) {
    put_varint(out, DELTA_BLOCK as u64);
    put_varint(out, DELTA_MINIBLOCKS as u64);
    put_varint(out, values.len() as u64);
    put_varint(out, zigzag(values.first().copied().unwrap_or(0)));
    let mut deltas = [0i64; DELTA_BLOCK];
    let mut previous = values.first().copied().unwrap_or(0);
    for block in values.get(1..).unwrap_or_default().chunks(DELTA_BLOCK) {
        let mut min = i64::MAX;
        for (d, &v) in deltas.iter_mut().zip(block) {
            *d = v.wrapping_sub(previous);
            min = min.min(*d);
            previous = v;
        }
        put_varint(out, zigzag(min));
        // Each delta less the block's minimum; past the block's end 0, the padding.
        let mut relative = [0u64; DELTA_BLOCK];
        for (r, &d) in relative.iter_mut().zip(&deltas[..block.len()]) {
            *r = d.wrapping_sub(min) as u64;
        }
        let mut widths = [0u8; DELTA_MINIBLOCKS];
        for (width, mini) in widths.iter_mut().zip(relative.chunks_exact(DELTA_MINIBLOCK)) {
            *width = (64 - mini.iter().fold(0, |acc, &r| acc | r).leading_zeros()) as u8;
        }
        out.extend_from_slice(&widths);
        for (&width, mini) in widths.iter().zip(relative.chunks_exact(DELTA_MINIBLOCK)) {
            pack_miniblock(mini.try_into().expect("a miniblock"), width, out);
        }
    }
}

/// Packs a miniblock's values at `width` bits each, least significant bit first (4 ×
/// `width` bytes; none at width 0).
fn pack_miniblock(values: &[u64; DELTA_MINIBLOCK], width: u8, out: &mut Vec<u8>) {
    let mut words = [0u64; DELTA_MINIBLOCK];
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                0 => return,
                $($w => pack_at_width::<$w>(values, &mut words),)*
                _ => unreachable!("a delta's width is at most 64 bits"),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64);
    let mut bytes = [0u8; DELTA_MINIBLOCK * 8];
    for (b, w) in bytes.chunks_exact_mut(8).zip(words) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&bytes[..DELTA_MINIBLOCK / 8 * width as usize]);
}

/// [`pack_miniblock`]'s values at `W` bits each into `words`, value `i` from bit `i × W`:
/// every shift and word is fixed when compiled.
#[inline(always)]
fn pack_at_width<const W: usize>(values: &[u64; DELTA_MINIBLOCK], words: &mut [u64; DELTA_MINIBLOCK]) {
    or_at_fixed_width!(values, words, W; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// A `Map<Utf8, Utf8>` column of one row group (the `args` of events): its key leaf
/// dictionary-encoded, its value leaf PLAIN, as arrow-rs writes them, without the per-row
/// level building of a nested arrow-rs column.
struct TextMapColumn {
    key: ChunkPages,
    value: ChunkPages,
    dictionary_encoding: Encoding,
    data_encoding: Encoding,
    page_rows_limit: usize,
    /// A page ends early once its values reach this many bytes (args can be long).
    page_bytes_limit: usize,
    /// The chunk's dictionary: a value's id is its key.
    dictionary: StringPool,
    /// Key ids mapped to the dictionary's (rows written from string ids).
    key_remap: KeyRemap,
    /// Per level of the page: repetition (1 for an entry after its row's first) and the
    /// value's definition (0 a row without entries, 1 a null value, 2 a value).
    page_repetition: Vec<u8>,
    page_definition: Vec<u8>,
    page_keys: Vec<u32>,
    /// The page's values, PLAIN-encoded.
    page_values: Vec<u8>,
    page_rows: usize,
}

impl TextMapColumn {
    /// A writer for a non-null map of strings to nullable strings whose keys the properties
    /// dictionary-encode and whose values they do not.
    fn new(data_type: &DataType, key: ColumnDescPtr, value: ColumnDescPtr, props: &WriterProperties) -> Option<TextMapColumn> {
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

    fn write(&mut self, array: &ArrayRef) -> Result<()> {
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
    fn write_entries(&mut self, entries: &[u32], keys: &[u32], value_offsets: &[u32], value_bytes: &[u8], strings: &dyn Strings) -> Result<()> {
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
    fn push_rows<'v>(
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

    fn finish_page(&mut self) -> Result<()> {
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
    fn close(mut self) -> Result<[(Bytes, ColumnCloseResult); 2]> {
        if self.page_rows > 0 {
            self.finish_page()?;
        }
        let key = self.key.close(Some((&self.dictionary, self.dictionary_encoding)), self.data_encoding, None)?;
        let value = self.value.close(None, Encoding::PLAIN, None)?;
        Ok([key, value])
    }
}

/// A dictionary page's values, PLAIN-encoded (u32 length, bytes), in key order.
fn plain_values(dictionary: &StringPool) -> Vec<u8> {
    let values = (0..dictionary.len() as u32).filter_map(|k| dictionary.get(k));
    let mut page = Vec::with_capacity(values.clone().map(|v| v.len() + 4).sum());
    for v in values {
        page.extend_from_slice(&(v.len() as u32).to_le_bytes());
        page.extend_from_slice(v.as_bytes());
    }
    page
}

/// Bits needed for `max` (at least 1).
fn bit_width(max: u32) -> u8 {
    (32 - max.leading_zeros()).max(1) as u8
}

/// The longest bit-packed run arrow-rs writes: its header then fits one byte.
const MAX_PACKED_GROUPS: usize = 63;

/// Appends `values` in Parquet's RLE / bit-packed hybrid encoding (no length prefix).
fn hybrid_encode<T: Copy + PartialEq + Into<u32>>(values: &[T], width: u8, out: &mut Vec<u8>) {
    let value_bytes = (width as usize).div_ceil(8);
    hybrid_sections(
        values.len(),
        |i| values[i..].iter().take_while(|&&v| v == values[i]).count(),
        |i| values.get(i..i + 8).is_some_and(|group| group.iter().all(|&v| v == values[i])),
        |i, out| out.extend_from_slice(&values[i].into().to_le_bytes()[..value_bytes]),
        |range, groups, out| bit_pack(&values[range], groups * 8, width, out),
        out,
    );
}

/// [`hybrid_encode`] of levels that are all 0 or 1 (width 1), eight at a time: a group is
/// one word compared and one multiply packed. Most of a page's levels are of flat nullable
/// columns (definition levels) or of maps (repetition levels), and the generic encoder's
/// value-by-value runs and packing were ~4 % of an ingest's instructions.
fn hybrid_encode_bits(levels: &[u8], out: &mut Vec<u8>) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Byte k of the word (0 or 1) moves to bit 56 + k; no two products meet or carry.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let n = levels.len();
    let word = |i: usize| u64::from_le_bytes(levels[i..i + 8].try_into().expect("eight levels"));
    let run_at = |i: usize| {
        let mut end = i + 1;
        while end + 8 <= n && word(end) == levels[i] as u64 * ONES {
            end += 8;
        }
        while end < n && levels[end] == levels[i] {
            end += 1;
        }
        end - i
    };
    let pack = |range: std::ops::Range<usize>, _groups: usize, out: &mut Vec<u8>| {
        for group in levels[range].chunks(8) {
            let mut bytes = [0u8; 8];
            bytes[..group.len()].copy_from_slice(group);
            out.push((u64::from_le_bytes(bytes).wrapping_mul(GATHER) >> 56) as u8);
        }
    };
    hybrid_sections(n, run_at, |i| i + 8 <= n && matches!(word(i), 0 | ONES), |i, out| out.push(levels[i]), pack, out);
}

/// The layout of the hybrid encoding over `n` values: a run of eight or more equal values
/// (`run_at(i)`: the length of the run starting at `i`) as one RLE run (`put_value(i)`
/// writes its value), everything else bit-packed in groups of eight, the last group padded
/// with zeros (`pack(range, groups)`), a packed section ending before eight equal values
/// (`eight_equal_at`).
fn hybrid_sections(
    n: usize,
    run_at: impl Fn(usize) -> usize,
    eight_equal_at: impl Fn(usize) -> bool,
    put_value: impl Fn(usize, &mut Vec<u8>),
    pack: impl Fn(std::ops::Range<usize>, usize, &mut Vec<u8>),
    out: &mut Vec<u8>,
) {
    let mut i = 0;
    while i < n {
        let run = run_at(i);
        if run >= 8 {
            put_varint(out, (run as u64) << 1);
            put_value(i, out);
            i += run;
            continue;
        }
        let start = i;
        let mut groups = 0;
        loop {
            groups += 1;
            i += 8;
            if i >= n || groups == MAX_PACKED_GROUPS || eight_equal_at(i) {
                break;
            }
        }
        put_varint(out, ((groups as u64) << 1) | 1);
        pack(start..i.min(n), groups, out);
        i = i.min(n);
    }
}

/// Packs `count` values (zeros past the slice; `count` a multiple of eight) at `width` ≤ 32
/// bits each, least significant bit first: each eight values make `width` bytes. One packer
/// per width (dictionary keys and levels are packed by the million per ingest).
fn bit_pack<T: Copy + Into<u32>>(values: &[T], count: usize, width: u8, out: &mut Vec<u8>) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => pack_eights::<T, $w>(values, count, out),)*
                _ => unreachable!("keys and levels are 1 to 32 bits wide"),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

/// [`bit_pack`] at `W` bits: value `k` of each eight from bit `k × W` of its `W` bytes.
#[inline(always)]
fn pack_eights<T: Copy + Into<u32>, const W: usize>(values: &[T], count: usize, out: &mut Vec<u8>) {
    out.reserve(count / 8 * W);
    for start in (0..count).step_by(8) {
        let mut eight = [0u64; 8];
        for (k, v) in eight.iter_mut().enumerate() {
            *v = values.get(start + k).map_or(0, |&v| v.into() as u64);
        }
        let mut words = [0u64; 4];
        or_at_fixed_width!(eight, words, W; 0 1 2 3 4 5 6 7);
        let mut bytes = [0u8; 32];
        for (b, w) in bytes.chunks_exact_mut(8).zip(words) {
            b.copy_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&bytes[..W]);
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
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn names(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(values.iter().copied().collect::<DictionaryArray<Int32Type>>())
    }

    /// Name columns with runs, alternations, nulls and many distinct values, and a map with
    /// rows of no, one and several entries (null values among them), over several batches,
    /// pages (ended by rows, and by bytes for the map) and row groups, read back by
    /// arrow-rs's reader.
    #[test]
    fn columns_encoded_here_read_back_as_written() {
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let text_map = |offsets: Vec<i32>, keys: Vec<&str>, values: Vec<Option<&str>>| {
            crate::tables::columns::text_map(offsets, Arc::new(StringArray::from(keys)), Arc::new(StringArray::from(values)))
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("host", dict.clone(), false),
            Field::new("name", dict, true),
            Field::new("args", text_map(vec![0], vec![], vec![]).data_type().clone(), false),
        ]));
        let descriptors = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(Default::default()))
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
            .set_dictionary_enabled(false)
            .set_column_dictionary_enabled("host".into(), true)
            .set_column_dictionary_enabled("name".into(), true)
            .set_column_dictionary_enabled(descriptors.column(3).path().clone(), true)
            .set_data_page_row_count_limit(1000)
            .set_data_page_size_limit(4096)
            .set_max_row_group_row_count(Some(2500))
            .build();
        for (field, leaf) in [(1, 1), (2, 2)] {
            assert!(NameColumn::new(schema.field(field).data_type(), descriptors.column(leaf), &props).is_some(), "the name columns are encoded here");
        }
        assert!(TextMapColumn::new(schema.field(3).data_type(), descriptors.column(3), descriptors.column(4), &props).is_some(), "the map is encoded here");
        let path = std::env::temp_dir().join(format!("profq-part-file-test-{}.parquet", std::process::id()));
        let mut file = PartFile::create(File::create(&path).unwrap(), schema.clone(), props).unwrap();
        type Args = Vec<(String, Option<String>)>;
        let mut expected: Vec<(i64, String, Option<String>, Args)> = Vec::new();
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
            let args_owned: Vec<Args> =
                (0..rows).map(|r| (0..(r * 7 + batch) % 4).map(|j| (format!("k{}", (r + j) % 5), (j != 2).then(|| format!("v{r}.{j}")))).collect()).collect();
            let ids: Vec<i64> = (0..rows).map(|r| (expected.len() + r) as i64).collect();
            for r in 0..rows {
                expected.push((ids[r], hosts[r].clone(), names_owned[r].clone(), args_owned[r].clone()));
            }
            let mut offsets = vec![0i32];
            let (mut keys, mut values) = (Vec::new(), Vec::new());
            for row in &args_owned {
                for (k, v) in row {
                    keys.push(k.as_str());
                    values.push(v.as_deref());
                }
                offsets.push(keys.len() as i32);
            }
            let host_col = names(&hosts.iter().map(|h| Some(h.as_str())).collect::<Vec<_>>());
            let name_col = names(&names_owned.iter().map(|n| n.as_deref()).collect::<Vec<_>>());
            let args_col = text_map(offsets, keys, values);
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(ids)), host_col, name_col, args_col]).unwrap();
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
            let args = batch.column(3).as_map();
            for r in 0..batch.num_rows() {
                let entries = args.value(r);
                let (keys, values) = (entries.column(0).as_string::<i32>(), entries.column(1).as_string::<i32>());
                let row_args = (0..entries.len()).map(|j| (keys.value(j).to_string(), values.is_valid(j).then(|| values.value(j).to_string()))).collect();
                got.push((ids.value(r), text(1, r).unwrap(), text(2, r), row_args));
            }
        }
        std::fs::remove_file(&path).ok();
        assert_eq!(got, expected);
    }

    /// The `events` table written from a real capture's decoded rows, in slices of an odd
    /// length (so slices start inside events' args) over row groups smaller than the run of
    /// slices, reads back as the batches built for the in-memory tables.
    #[test]
    fn event_rows_read_back_as_the_events_batches() {
        use crate::tables::{event_slices, events_batches, EventRows};
        let capture = decoded("tests/data/jax_cpu/mlp_train");
        let mut file = table_file("events", "event-rows");
        let mut rows = EventRows::default();
        for slice in event_slices(&capture, 0, 777) {
            file.0.write_rows(slice.rows.len(), &rows.of(&capture, &slice)).unwrap();
        }
        assert_reads_back_as(file, &events_batches(&capture, 0).unwrap(), 777 * 3);
    }

    /// The `ops` table written from a part's op columns reads back as the batch built for the
    /// in-memory tables, on captures with collectives and async ops (CPU, 8 devices), and
    /// with op costs (`flops`, `bytes_accessed`) and region paths (GPU).
    #[test]
    fn op_rows_read_back_as_the_ops_batch() {
        use crate::tables::{derive::Deriver, part_tables, OpColumns};
        for capture in ["tests/data/jax_cpu/multi_device_dp", "tests/data/jax_gpu/transformer_lm_nocb"] {
            let capture = decoded(capture);
            let part = Deriver::new().part(&capture, &crate::tables::derive::pool_ids(&capture.strings));
            let mut ops = OpColumns::with_capacity(part.ops.len());
            ops.refill(&part.ops);
            let mut file = table_file("ops", "op-rows");
            file.0.write_rows(ops.len(), &ops.rows(&capture, &part.strings.values)).unwrap();
            let batches = part_tables(&capture, &part, &crate::tables::ColumnsRead::every()).unwrap();
            assert_reads_back_as(file, batches.get("ops").unwrap(), 1000);
        }
    }

    /// The `gaps` table written from a part's gap columns, a slice at a time, reads back as the
    /// batch built for the in-memory tables.
    #[test]
    fn gap_rows_read_back_as_the_gaps_batch() {
        use crate::tables::{derive::Deriver, part_tables, GapColumns};
        let capture = decoded("tests/data/jax_cpu/transformer_lm");
        let part = Deriver::new().part(&capture, &crate::tables::derive::pool_ids(&capture.strings));
        let mut file = table_file("gaps", "gap-rows");
        let mut columns = GapColumns::with_capacity(700);
        for slice in part.gaps.chunks(700) {
            columns.refill(&part, slice);
            file.0.write_rows(slice.len(), &columns.rows(&capture, &part)).unwrap();
        }
        let batches = part_tables(&capture, &part, &crate::tables::ColumnsRead::every()).unwrap();
        assert_reads_back_as(file, batches.get("gaps").unwrap(), 1000);
    }

    /// A capture decoded in memory, its derived strings in the pool.
    fn decoded(dir: &str) -> crate::model::Capture {
        let input = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut capture = crate::decode::load(&crate::decode::resolve(&input).unwrap()).unwrap().capture;
        crate::tables::derive::prepare_strings(&mut capture);
        capture
    }

    /// Rows per row group of [`table_file`]'s files.
    const TEST_GROUP_ROWS: usize = 1000;

    /// A part file of `table` with the store's properties but row groups of
    /// [`TEST_GROUP_ROWS`] rows.
    fn table_file(table: &str, name: &str) -> (PartFile, std::path::PathBuf) {
        let contract = crate::tables::schema::table(table).unwrap();
        let props = super::super::writer_properties(contract).into_builder().set_max_row_group_row_count(Some(TEST_GROUP_ROWS)).build();
        let path = std::env::temp_dir().join(format!("profq-{name}-test-{}.parquet", std::process::id()));
        (PartFile::create(File::create(&path).unwrap(), crate::tables::schema::arrow_schema(contract), props).unwrap(), path)
    }

    /// The file reads back, in full row groups, as `expected` (more than `min_rows` rows).
    fn assert_reads_back_as((file, path): (PartFile, std::path::PathBuf), expected: &[RecordBatch], min_rows: usize) {
        file.finish().unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let expected_rows: usize = expected.iter().map(|b| b.num_rows()).sum();
        assert_eq!(reader.metadata().num_row_groups(), expected_rows.div_ceil(TEST_GROUP_ROWS));
        let read: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
        std::fs::remove_file(&path).ok();
        // Dictionaries differ (a file's per row group, a batch's per chunk): compared as text.
        let as_text = |batches: &[RecordBatch]| -> Vec<ArrayRef> {
            let batch = arrow::compute::concat_batches(&batches[0].schema(), batches).unwrap();
            batch
                .columns()
                .iter()
                .map(|c| match c.data_type() {
                    DataType::Dictionary(..) => arrow::compute::cast(c, &DataType::Utf8).unwrap(),
                    _ => c.clone(),
                })
                .collect()
        };
        let (got, expected_columns) = (as_text(&read), as_text(expected));
        assert!(expected_columns[0].len() > min_rows, "{} rows", expected_columns[0].len());
        for (field, (got, expected)) in expected[0].schema().fields().iter().zip(got.iter().zip(&expected_columns)) {
            assert_eq!(got, expected, "column {}", field.name());
        }
    }

    /// Float64 (NaN, both zeros, infinities, nulls, a row group of NaN and nulls only) and
    /// Boolean columns over pages of every fill and several row groups: the file reads back
    /// as arrow-rs's `ArrowWriter` writes the same batches, with the same chunk statistics.
    #[test]
    fn float_and_boolean_columns_read_back_as_arrow_rs_writes_them() {
        use arrow::array::{BooleanArray, Float64Array};
        let schema = Arc::new(Schema::new(vec![
            Field::new("flops", DataType::Float64, true),
            Field::new("ratio", DataType::Float64, false),
            Field::new("is_async", DataType::Boolean, false),
            Field::new("flag", DataType::Boolean, true),
        ]));
        let props = || {
            WriterProperties::builder()
                .set_compression(Compression::ZSTD(Default::default()))
                .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk)
                .set_dictionary_enabled(false)
                .set_data_page_row_count_limit(1000)
                .set_max_row_group_row_count(Some(2500))
                .build()
        };
        let descriptors = ArrowSchemaConverter::new().convert(&schema).unwrap();
        for c in [0, 1] {
            assert!(ScalarColumn::<f64>::new(schema.field(c).data_type(), descriptors.column(c), &props()).is_some(), "encoded here");
        }
        for c in [2, 3] {
            assert!(ScalarColumn::<bool>::new(schema.field(c).data_type(), descriptors.column(c), &props()).is_some(), "encoded here");
        }
        let mut batches = Vec::new();
        let mut at = 0usize;
        for rows in [1usize, 33, 129, 900, 1500, 2, 2500, 7] {
            let only_nan = rows == 2500;
            let flops: Vec<Option<f64>> = (0..rows)
                .map(|r| match (at + r) % 13 {
                    _ if only_nan => (at + r).is_multiple_of(2).then_some(f64::NAN),
                    0 => None,
                    1 => Some(f64::NAN),
                    2 => Some(-0.0),
                    3 => Some(0.0),
                    k => Some((k as f64 - 6.5) * (at + r) as f64),
                })
                .collect();
            let ratio: Vec<f64> = (0..rows).map(|r| if (at + r).is_multiple_of(101) { f64::INFINITY } else { ((at + r) % 17) as f64 / 4.0 }).collect();
            let is_async: Vec<bool> = (0..rows).map(|r| (at + r).is_multiple_of(3) && rows > 1).collect();
            let flag: Vec<Option<bool>> = (0..rows).map(|r| ((at + r) % 4 != 1).then_some((at + r).is_multiple_of(5))).collect();
            at += rows;
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Float64Array::from(flops)),
                Arc::new(Float64Array::from(ratio)),
                Arc::new(BooleanArray::from(is_async)),
                Arc::new(BooleanArray::from(flag)),
            ];
            batches.push(RecordBatch::try_new(schema.clone(), columns).unwrap());
        }
        let dir = std::env::temp_dir();
        let (ours, theirs) =
            (dir.join(format!("profq-scalar-ours-{}.parquet", std::process::id())), dir.join(format!("profq-scalar-arrow-{}.parquet", std::process::id())));
        let mut file = PartFile::create(File::create(&ours).unwrap(), schema.clone(), props()).unwrap();
        let mut arrow_writer = parquet::arrow::ArrowWriter::try_new(File::create(&theirs).unwrap(), schema.clone(), Some(props())).unwrap();
        for batch in &batches {
            file.write(batch).unwrap();
            arrow_writer.write(batch).unwrap();
        }
        file.finish().unwrap();
        arrow_writer.close().unwrap();
        let read = |path: &std::path::Path| {
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
            let metadata = reader.metadata().clone();
            let statistics: Vec<Vec<Option<Statistics>>> =
                metadata.row_groups().iter().map(|g| g.columns().iter().map(|c| c.statistics().cloned()).collect()).collect();
            let batches: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
            (arrow::compute::concat_batches(&schema, &batches).unwrap(), statistics)
        };
        let ((got, got_statistics), (expected, expected_statistics)) = (read(&ours), read(&theirs));
        std::fs::remove_file(&ours).ok();
        std::fs::remove_file(&theirs).ok();
        assert!(got_statistics.len() > 2);
        assert_eq!(got_statistics, expected_statistics);
        // NaN != NaN: compared by bits.
        let bits = |b: &RecordBatch, c: usize| -> Vec<Option<u64>> {
            b.column(c).as_primitive::<arrow::datatypes::Float64Type>().iter().map(|v| v.map(f64::to_bits)).collect()
        };
        for c in [0, 1] {
            assert_eq!(bits(&got, c), bits(&expected, c), "column {c}");
        }
        for c in [2, 3] {
            assert_eq!(got.column(c).as_boolean(), expected.column(c).as_boolean(), "column {c}");
        }
    }

    /// Delta-encoded and PLAIN 64-bit columns (signed with jumps across the whole range,
    /// unsigned above i64::MAX, nulls, constant runs) over pages of every fill and several
    /// row groups: arrow-rs reads back what was written, and each chunk's statistics hold
    /// its min, max and null count.
    #[test]
    fn integer_columns_read_back_with_their_statistics() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("time", DataType::Int64, false),
            Field::new("parent", DataType::Int64, true),
            Field::new("program", DataType::UInt64, true),
            Field::new("plain", DataType::Int64, false),
        ]));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(Default::default()))
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk)
            .set_dictionary_enabled(false)
            .set_column_encoding("time".into(), Encoding::DELTA_BINARY_PACKED)
            .set_column_encoding("parent".into(), Encoding::DELTA_BINARY_PACKED)
            .set_column_encoding("program".into(), Encoding::DELTA_BINARY_PACKED)
            .set_data_page_row_count_limit(1000)
            .set_max_row_group_row_count(Some(2500))
            .build();
        let path = std::env::temp_dir().join(format!("profq-int-columns-test-{}.parquet", std::process::id()));
        let mut file = PartFile::create(File::create(&path).unwrap(), schema.clone(), props).unwrap();
        let mut expected: Vec<(i64, Option<i64>, Option<u64>, i64)> = Vec::new();
        for batch in 0..6usize {
            let rows = [1, 33, 129, 900, 1500, 2][batch];
            let at = expected.len();
            let time: Vec<i64> = (0..rows)
                .map(|r| match (at + r) % 97 {
                    0 => i64::MIN,
                    1 => i64::MAX,
                    k if k < 40 => 1_000_000 * (at + r) as i64,
                    k => (k as i64 - 60) * 7919,
                })
                .collect();
            let parent: Vec<Option<i64>> = (0..rows).map(|r| (!(at + r).is_multiple_of(5)).then_some(((at + r) / 3) as i64)).collect();
            let program: Vec<Option<u64>> = (0..rows).map(|r| ((at + r) % 7 != 3).then_some(u64::MAX - ((at + r) % 11) as u64)).collect();
            let plain: Vec<i64> = (0..rows).map(|r| -((at + r) as i64)).collect();
            for r in 0..rows {
                expected.push((time[r], parent[r], program[r], plain[r]));
            }
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(time)),
                Arc::new(Int64Array::from(parent)),
                Arc::new(arrow::array::UInt64Array::from(program)),
                Arc::new(Int64Array::from(plain)),
            ];
            file.write(&RecordBatch::try_new(schema.clone(), columns).unwrap()).unwrap();
        }
        file.finish().unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let metadata = reader.metadata().clone();
        assert!(metadata.num_row_groups() > 1);
        let mut first_row = 0;
        for group in metadata.row_groups() {
            let rows = &expected[first_row..first_row + group.num_rows() as usize];
            first_row += rows.len();
            let stats = |c: usize| match group.column(c).statistics() {
                Some(Statistics::Int64(s)) => (*s.min_opt().unwrap(), *s.max_opt().unwrap(), s.null_count_opt().unwrap()),
                other => panic!("column {c}: {other:?}"),
            };
            assert_eq!(stats(0), (rows.iter().map(|r| r.0).min().unwrap(), rows.iter().map(|r| r.0).max().unwrap(), 0));
            let parents = rows.iter().filter_map(|r| r.1);
            assert_eq!(stats(1), (parents.clone().min().unwrap(), parents.max().unwrap(), rows.iter().filter(|r| r.1.is_none()).count() as u64));
            let programs = rows.iter().filter_map(|r| r.2);
            let (lo, hi, nulls) = stats(2);
            assert_eq!(
                (lo as u64, hi as u64, nulls),
                (programs.clone().min().unwrap(), programs.max().unwrap(), rows.iter().filter(|r| r.2.is_none()).count() as u64)
            );
            assert_eq!(group.column(0).encodings().collect::<Vec<_>>(), vec![Encoding::RLE, Encoding::DELTA_BINARY_PACKED]);
        }
        let mut got = Vec::new();
        for batch in reader.build().unwrap() {
            let batch = batch.unwrap();
            let int = |c: usize| batch.column(c).as_primitive::<arrow::datatypes::Int64Type>().clone();
            let (time, parent, plain) = (int(0), int(1), int(3));
            let program = batch.column(2).as_primitive::<arrow::datatypes::UInt64Type>();
            for r in 0..batch.num_rows() {
                got.push((time.value(r), parent.is_valid(r).then(|| parent.value(r)), program.is_valid(r).then(|| program.value(r)), plain.value(r)));
            }
        }
        std::fs::remove_file(&path).ok();
        assert_eq!(got, expected);
    }

    /// The packer of each width against the bit-at-a-time reading of the format: value `i`'s
    /// bit `b` is bit `i * width + b` of the miniblock, least significant first.
    #[test]
    fn miniblocks_pack_at_every_width_as_the_format_says() {
        let mut random = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for width in 0..=64u8 {
            let mut values = [0u64; DELTA_MINIBLOCK];
            for v in values.iter_mut() {
                let r = random();
                *v = if width == 64 { r } else { r & ((1u64 << width) - 1) };
            }
            let mut out = vec![0xAB];
            pack_miniblock(&values, width, &mut out);
            assert_eq!(out.len(), 1 + 4 * width as usize, "width {width}");
            let bit = |k: usize| (out[1 + k / 8] >> (k % 8)) & 1;
            for (i, &expected) in values.iter().enumerate() {
                let read = (0..width as usize).fold(0u64, |v, b| v | (bit(i * width as usize + b) as u64) << b);
                assert_eq!(read, expected, "width {width}, value {i}");
            }
        }
    }

    /// The key packer of each width against the bit-at-a-time reading of the format, with
    /// zeros past the values given.
    #[test]
    fn keys_bit_pack_at_every_width_as_the_format_says() {
        let mut random = crate::xorshift(0x2545_f491_4f6c_dd1d);
        for width in 1..=32u8 {
            for len in [0usize, 5, 8, 13, 24] {
                let values: Vec<u32> = (0..len).map(|_| (random() & ((1u64 << width) - 1)) as u32).collect();
                let count = len.div_ceil(8).max(1) * 8;
                let mut out = vec![0xCD];
                bit_pack(&values, count, width, &mut out);
                assert_eq!(out.len(), 1 + count / 8 * width as usize, "width {width}, len {len}");
                let bit = |k: usize| (out[1 + k / 8] >> (k % 8)) & 1;
                for i in 0..count {
                    let read = (0..width as usize).fold(0u32, |v, b| v | (bit(i * width as usize + b) as u32) << b);
                    assert_eq!(read, values.get(i).copied().unwrap_or(0), "width {width}, len {len}, value {i}");
                }
            }
        }
    }

    #[test]
    fn bit_levels_encode_as_the_generic_encoder_does() {
        let mut random = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut cases: Vec<Vec<u8>> = vec![vec![], vec![1], vec![0; 7], vec![1; 8], vec![0; 9], vec![1; 70_000]];
        for len in [3usize, 8, 15, 16, 17, 63, 64, 65, 511, 512, 513, 1000, 20_000] {
            // Random levels, long runs cut by noise, and runs of every length around eight.
            cases.push((0..len).map(|_| (random() & 1) as u8).collect());
            cases.push((0..len).map(|k| ((k / 97) % 2) as u8 ^ random().is_multiple_of(50) as u8).collect());
            cases.push((0..len).map(|k| ((k / (1 + k % 13)) % 2) as u8).collect());
        }
        for levels in cases {
            let (mut fast, mut generic) = (Vec::new(), Vec::new());
            hybrid_encode_bits(&levels, &mut fast);
            hybrid_encode(&levels, 1, &mut generic);
            assert_eq!(fast, generic, "{} levels", levels.len());
        }
    }

    #[test]
    fn hybrid_encoding_packs_runs_and_groups() {
        let mut out = Vec::new();
        hybrid_encode(&[5u32; 10], 3, &mut out);
        assert_eq!(out, vec![10 << 1, 5]);
        out.clear();
        hybrid_encode(&[1u8, 0, 1], 1, &mut out);
        assert_eq!(out, vec![0b11, 0b101]);
        // Bit-packing at every width against packing bit by bit.
        for width in 1..=32u8 {
            let values: Vec<u32> = (0..21u32).map(|k| k.wrapping_mul(2_654_435_761) & (u32::MAX >> (32 - width))).collect();
            let mut expected = vec![0u8; 24 * width as usize / 8];
            for (k, v) in values.iter().enumerate() {
                for b in 0..width as usize {
                    let at = k * width as usize + b;
                    expected[at / 8] |= (((v >> b) & 1) as u8) << (at % 8);
                }
            }
            out.clear();
            bit_pack(&values, 24, width, &mut out);
            assert_eq!(out, expected, "width {width}");
        }
    }
}
