//! Every column encoded here read back by arrow-rs's reader as `ArrowWriter` would write it.

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
