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

mod encoding;
mod names;
mod pages;
mod scalars;
#[cfg(test)]
mod tests;
mod text_map;

use encoding::{delta_binary_pack, put_keys, put_levels, DELTA_BLOCK};
use names::{strings_address, KeyRemap, NameColumn, RemapSource};
use pages::{null_in_required, ChunkPages};
use scalars::ScalarColumn;
use text_map::TextMapColumn;

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
