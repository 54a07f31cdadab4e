//! A column chunk's pages: compressed as the table's properties say (zstd only where it
//! pays, see [`ChunkPages`]), with the chunk's metadata and offset index, as arrow-rs writes them.

use super::{
    Bytes, ColumnChunkMetaData, ColumnCloseResult, ColumnDescPtr, CompressedPage, Compression, Encoding, EncodingMask, OffsetIndexBuilder, Page,
    PageEncodingStats, PageType, PageWriter, ParquetError, Result, SerializedPageWriter, Statistics, StringPool, TrackedWrite, WriterProperties,
};

/// The pages of one leaf column chunk, compressed as they fill, and the chunk's bytes and
/// metadata once it is closed.
pub(super) struct ChunkPages {
    pub(super) descr: ColumnDescPtr,
    pub(super) compression: Compression,
    /// The zstd level of the chunk's pages (None: stored uncompressed).
    pub(super) zstd_level: Option<i32>,
    /// Each data page and the rows it holds.
    pub(super) pages: Vec<(CompressedPage, usize)>,
    /// Levels written (the chunk's `num_values`: rows, plus a map's entries past a row's first).
    pub(super) values: usize,
    /// Whether the chunk's codec and level are settled: a number column's by its first data
    /// page (see [`ChunkPages::compress`]); a text column's dictionary page compresses well
    /// whatever its keys do, so it stays compressed at the table's level.
    pub(super) codec_settled: bool,
}

/// A number column's chunk stays compressed only if its first data page shrinks by at least a
/// quarter: delta-packed times and durations are near random in their low bits, so zstd
/// saves little on them for a noticeable share of an ingest's CPU.
pub(super) const KEPT_COMPRESSED_AT_MOST: (usize, usize) = (3, 4);

/// A number column whose first page is kept compressed but shrinks by less than half is
/// noise-like (durations, self times, parent ids delta-packed): its other pages are
/// compressed at zstd's fast level [`NOISE_LEVEL`]. zstd's gain there is the entropy coding
/// of bytes, not matches, so hunting matches less hard keeps nearly the same ratio in about
/// half the time.
pub(super) const NOISE_AT_LEAST: (usize, usize) = (1, 2);

pub(super) const NOISE_LEVEL: i32 = -3;

impl ChunkPages {
    /// Pages for `descr` when the properties ask nothing of it that is not done here: no
    /// bloom filter, zstd or no compression, and no statistics, or chunk statistics where
    /// the column computes them (`chunk_statistics`).
    pub(super) fn new(descr: ColumnDescPtr, props: &WriterProperties, chunk_statistics: bool) -> Option<ChunkPages> {
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

    pub(super) fn compress(&mut self, raw: Vec<u8>) -> Result<(Bytes, usize)> {
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
    pub(super) fn add_data_page(&mut self, raw: Vec<u8>, values: usize, rows: usize, encoding: Encoding) -> Result<()> {
        let (buf, size) = self.compress(raw)?;
        let page =
            Page::DataPage { buf, num_values: values as u32, encoding, def_level_encoding: Encoding::RLE, rep_level_encoding: Encoding::RLE, statistics: None };
        self.pages.push((CompressedPage::new(page, size), rows));
        self.values += values;
        Ok(())
    }

    /// The chunk's bytes (the dictionary page, if any, first) and what the row group needs
    /// to splice them in, with offsets relative to the bytes' start.
    pub(super) fn close(
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
pub(super) fn null_in_required(column: impl std::fmt::Display) -> ParquetError {
    ParquetError::General(format!("column {column} is not nullable but has a null"))
}

/// A thread's zstd context, at the level it was last set to, and the buffer it compresses a
/// page into.
pub(super) struct PageCompressor {
    pub(super) context: zstd::bulk::Compressor<'static>,
    pub(super) level: i32,
    pub(super) page: Vec<u8>,
}

thread_local! {
    /// Pages are compressed one at a time on the thread that writes their file, so the
    /// columns of a file share one context (made once, its tables touched once) rather than
    /// holding one each.
    static PAGE_COMPRESSOR: std::cell::RefCell<Option<PageCompressor>> = const { std::cell::RefCell::new(None) };
}

/// Runs `compress` with this thread's zstd context, set to `level`, and its page buffer.
pub(super) fn with_zstd<T>(level: i32, compress: impl FnOnce(&mut zstd::bulk::Compressor<'static>, &mut Vec<u8>) -> std::io::Result<T>) -> Result<T> {
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

/// A dictionary page's values, PLAIN-encoded (u32 length, bytes), in key order.
pub(super) fn plain_values(dictionary: &StringPool) -> Vec<u8> {
    let values = (0..dictionary.len() as u32).filter_map(|k| dictionary.get(k));
    let mut page = Vec::with_capacity(values.clone().map(|v| v.len() + 4).sum());
    for v in values {
        page.extend_from_slice(&(v.len() as u32).to_le_bytes());
        page.extend_from_slice(v.as_bytes());
    }
    page
}
