//! Tables: a decoded [`Capture`] becomes the profq tables as Arrow record batches.
//!
//! `schema` is the contract (columns and docs), `derive` the semantic rules (ops, steps,
//! collectives, regions), `columns` the Arrow helpers. [`build`] ties them together.

pub mod columns;
pub mod columns_read;
pub mod command_buffers;
pub mod derive;
pub mod events_of_interest;
pub mod hta;
pub mod schema;

use crate::model::{Capture, EventChunk, Nullable, SparseColumn, CARRIED_TAG, NO_PARENT, NO_STR, NULL_I64};
use arrow::array::{ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, StringArray, StringBuilder};
use arrow::record_batch::RecordBatch;
use columns::{
    i64s, nullable_f64s, nullable_i64s, nullable_u64s, shared_dict, static_dict, text_list, text_map, text_map_rows, DictEncoder, RowValues, Strings, Unread,
};
pub use columns_read::ColumnsRead;
use derive::Label;
use std::sync::Arc;

/// What the caller knows about a run besides its content.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    pub run_id: String,
    pub source_path: String,
    pub trace_sha256: String,
    pub labels: Vec<(String, String)>,
    pub ingested_at_ns: i64,
}

/// All tables of one run, each as a list of record batches (in schema order).
#[derive(Default)]
pub struct RunTables {
    pub tables: Vec<(&'static str, Vec<RecordBatch>)>,
}

impl RunTables {
    pub fn new(tables: Vec<(&'static str, Vec<RecordBatch>)>) -> Self {
        RunTables { tables }
    }
    pub fn get(&self, name: &str) -> Option<&[RecordBatch]> {
        self.tables.iter().find(|(n, _)| *n == name).map(|(_, b)| b.as_slice())
    }
    /// Adds `other`'s batches to this run's (tables keep their first position).
    pub fn append(&mut self, other: RunTables) {
        for (name, batches) in other.tables {
            match self.tables.iter_mut().find(|(n, _)| *n == name) {
                Some((_, mine)) => mine.extend(batches),
                None => self.tables.push((name, batches)),
            }
        }
    }
    pub fn rows(&self, name: &str) -> usize {
        self.get(name).map_or(0, |b| b.iter().map(|b| b.num_rows()).sum())
    }
}

type Result<T> = std::result::Result<T, arrow::error::ArrowError>;

/// Every table of a run, in memory (the capture is one part).
pub fn build(capture: &mut Capture, info: &RunInfo) -> Result<RunTables> {
    let mut deriver = derive::Deriver::new();
    let (events, parts) = build_part(capture, &mut deriver)?;
    let mut tables = vec![("events", events)];
    tables.extend(parts.tables);
    let mut tables = RunTables::new(tables);
    tables.append(run_tables(capture, deriver.finish(), info)?);
    Ok(tables)
}

/// The tables of the part of a run now in `capture.chunks`: its `events` batches, and its
/// `ops`, `collectives` and `gaps` (built beside them on the worker pool).
pub fn build_part(capture: &mut Capture, deriver: &mut derive::Deriver) -> Result<(Vec<RecordBatch>, RunTables)> {
    let ids = derive::prepare_strings(capture);
    let capture = &*capture;
    let first_event_id = deriver.next_event_id();
    let (events, others) = crate::work_queue::join(
        || events_batches(capture, first_event_id),
        || {
            let part = deriver.part(capture, &ids);
            part_tables(capture, &part, &ColumnsRead::every())
        },
    );
    Ok((events?, others?))
}

/// The `events` table: one batch per decoded chunk, built in parallel.
pub fn events_batches(capture: &Capture, first_event_id: i64) -> Result<Vec<RecordBatch>> {
    let bases = derive::chunk_bases(capture, first_event_id);
    let chunks: Vec<_> = capture.chunks.iter().zip(bases).filter(|(c, _)| !c.is_empty()).collect();
    crate::work_queue::map_in_order(chunks, |(chunk, base)| {
        events_batch(capture, chunk, first_event_id, base, 0..chunk.len(), None, DictEncoder::new(&capture.strings))
    })
    .into_iter()
    .collect()
}

/// The tables made of a part's ops (`ops`, the largest, built beside the others).
pub fn part_tables(capture: &Capture, part: &derive::PartDerived, read: &ColumnsRead) -> Result<RunTables> {
    // One values array for every local-string column of the part's tables.
    let locals = &local_strings(part);
    let (ops, others) = crate::work_queue::join(|| ops_batch(capture, part, locals, read), || tables_beside_ops(capture, part, locals, read));
    let mut tables = vec![("ops", vec![ops?])];
    tables.append(&mut others?.tables);
    Ok(RunTables::new(tables))
}

/// The part's small tables: all but `ops` and `gaps` (which ingest writes from
/// [`OpColumns`] and [`GapColumns`]).
pub fn part_small_tables(capture: &Capture, part: &derive::PartDerived) -> Result<RunTables> {
    small_tables(capture, part, &local_strings(part))
}

fn tables_beside_ops(capture: &Capture, part: &derive::PartDerived, locals: &ArrayRef, read: &ColumnsRead) -> Result<RunTables> {
    // In the order of `derive::PART_TABLES`, as the part's other tables.
    let mut tables = small_tables(capture, part, locals)?.tables;
    tables.insert(1, ("gaps", vec![gaps_batch(capture, part, locals, read)?]));
    debug_assert!(tables.iter().map(|(name, _)| *name).eq(derive::PART_TABLES[1..].iter().copied()));
    Ok(RunTables::new(tables))
}

fn small_tables(capture: &Capture, part: &derive::PartDerived, locals: &ArrayRef) -> Result<RunTables> {
    Ok(RunTables::new(vec![
        ("collectives", vec![collectives_batch(capture, part)?]),
        ("event_totals", vec![event_totals_batch(capture, part)?]),
        ("op_totals", vec![op_totals_batch(capture, part, locals)?]),
        ("gap_totals", vec![gap_totals_batch(capture, part, locals)?]),
        ("line_steps", vec![line_steps_batch(capture, part)?]),
    ]))
}

/// The tables only the whole run knows: `runs`, `hosts`, `regions`, `steps`.
pub fn run_tables(capture: &Capture, run: derive::RunDerived, info: &RunInfo) -> Result<RunTables> {
    Ok(RunTables::new(vec![
        ("runs", vec![runs_batch(capture, &run, info)?]),
        ("hosts", vec![hosts_batch(&capture.meta)?]),
        ("regions", vec![regions_batch(&run)?]),
        ("steps", vec![steps_batch(capture, &run)?]),
    ]))
}

fn batch(table: &str, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
    let t = schema::table(table).expect("known table");
    RecordBatch::try_new(schema::arrow_schema(t), columns)
}

fn runs_batch(capture: &Capture, run: &derive::RunDerived, info: &RunInfo) -> Result<RecordBatch> {
    let m = &capture.meta;
    let duration = run.span.map_or(0, |(lo, hi)| (hi - lo).max(0));
    let labels = vec![info.labels.clone()];
    let names = |v: &[(String, usize)]| v.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>();
    let (launch_ids, source_hints) = (names(&run.launch_ids), names(&run.source_hints));
    batch(
        "runs",
        vec![
            Arc::new(StringArray::from(vec![info.source_path.as_str()])),
            Arc::new(DictionaryArray::<arrow::datatypes::Int32Type>::from_iter([m.source_format])),
            Arc::new(StringArray::from(vec![info.trace_sha256.as_str()])),
            text_list(std::slice::from_ref(&m.hosts)),
            i64s([m.num_events_total].into_iter()),
            i64s([m.num_complete_events].into_iter()),
            Arc::new(Int64Array::from(vec![m.start_epoch_ns])),
            i64s([duration].into_iter()),
            Arc::new(BooleanArray::from(vec![m.suspected_truncation])),
            text_list(&[run.quality_warnings(m)]),
            text_map_rows(&labels),
            Arc::new(StringArray::from(vec![m.framework])),
            Arc::new(StringArray::from(vec![m.jax_version.clone()])),
            Arc::new(StringArray::from(vec![m.jaxlib_version.clone()])),
            text_list(std::slice::from_ref(&m.device_kinds)),
            i64s([run.num_devices as i64].into_iter()),
            Arc::new(Float64Array::from(vec![single_peak(&m.peak_flops_per_s)])),
            Arc::new(Float64Array::from(vec![single_peak(&m.peak_hbm_bytes_per_s)])),
            text_list(&[launch_ids]),
            text_list(&[source_hints]),
            Arc::new(StringArray::from(vec![m.display_time_unit.clone()])),
            i64s([info.ingested_at_ns].into_iter()),
            Arc::new(StringArray::from(vec![env!("CARGO_PKG_VERSION")])),
        ],
    )
}

/// One row per host in `meta.hosts` order; a host no decoder stated facts of keeps its
/// name as its file's and its position as its rank.
fn hosts_batch(meta: &crate::model::CaptureMeta) -> Result<RecordBatch> {
    use crate::model::HostFacts;
    let rows: Vec<(HostFacts, i64, &str)> = meta
        .hosts
        .iter()
        .enumerate()
        .map(|(k, h)| {
            let f = meta.host_facts.iter().find(|f| &f.host == h).cloned();
            let f = f.unwrap_or_else(|| HostFacts { host: h.clone(), source_file: h.clone(), ..Default::default() });
            match f.rank {
                Some(rank) => (f, rank, "distributedInfo"),
                None => (f, k as i64, "file_order"),
            }
        })
        .collect();
    batch(
        "hosts",
        vec![
            Arc::new(rows.iter().map(|(f, ..)| f.host.as_str()).collect::<DictionaryArray<arrow::datatypes::Int32Type>>()),
            i64s(rows.iter().map(|(_, rank, _)| *rank)),
            Arc::new(rows.iter().map(|(.., source)| *source).collect::<DictionaryArray<arrow::datatypes::Int32Type>>()),
            Arc::new(rows.iter().map(|(f, ..)| f.world_size).collect::<Int64Array>()),
            Arc::new(rows.iter().map(|(f, ..)| f.backend.as_deref()).collect::<StringArray>()),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|(f, ..)| f.source_file.as_str()))),
            Arc::new(rows.iter().map(|(f, ..)| f.ts_origin_ns).collect::<Int64Array>()),
        ],
    )
}

/// A run's peak when its devices state one value; none when they state none or differ.
fn single_peak(peaks: &[f64]) -> Option<f64> {
    match peaks {
        [p] => Some(*p),
        _ => None,
    }
}

/// Rows per batch of a streamed `events` table ([`event_slices`]): large enough for Parquet's
/// pages, small enough that only a few batches are in memory at once.
pub const EVENT_SLICE_ROWS: usize = 1 << 16;

/// Rows per slice of the derived `ops` and `gaps` tables that ingest copies out of the op
/// and gap rows and writes ([`OpColumns::refill`], [`GapColumns::refill`]), for the same reason.
pub const DERIVED_SLICE_ROWS: usize = 1 << 16;

/// A run of consecutive events of one chunk, with the event ids of its part's and its
/// chunk's first events.
pub struct EventSlice<'c> {
    pub chunk: &'c EventChunk,
    pub part_base: i64,
    pub base: i64,
    pub rows: std::ops::Range<usize>,
}

/// The part's events in file order, as slices of at most `rows_per_slice` (ingest:
/// [`EVENT_SLICE_ROWS`]), so that the `events` table can be built and written a slice at a
/// time ([`EventRows`]).
pub fn event_slices(capture: &Capture, first_event_id: i64, rows_per_slice: usize) -> Vec<EventSlice<'_>> {
    let bases = derive::chunk_bases(capture, first_event_id);
    let mut slices = Vec::new();
    for (chunk, base) in capture.chunks.iter().zip(bases) {
        for start in (0..chunk.len()).step_by(rows_per_slice) {
            slices.push(EventSlice { chunk, part_base: first_event_id, base, rows: start..(start + rows_per_slice).min(chunk.len()) });
        }
    }
    slices
}

/// The `events` rows of slices, to be written without Arrow arrays ([`RowValues`], the
/// columns in schema order, as `events_batch` builds them): what a chunk holds as the
/// table does (names, times, args) is lent as it is; the rest is built into buffers that
/// are reused from slice to slice.
#[derive(Default)]
pub struct EventRows {
    event_id: Vec<i64>,
    line_names: [Vec<u32>; 4],
    line_id: Vec<i64>,
    depth: Vec<i64>,
    parent: Vec<i64>,
    sparse_names: [Vec<u32>; 6],
    sparse_ints: [Vec<i64>; 4],
}

impl EventRows {
    /// The columns of `slice`'s rows; name ids and arg keys are ids of `capture.strings`.
    pub fn of<'s>(&'s mut self, capture: &'s Capture, slice: &EventSlice<'s>) -> Vec<RowValues<'s>> {
        let (c, rows) = (slice.chunk, slice.rows.clone());
        let EventRows { event_id, line_names, line_id, depth, parent, sparse_names, sparse_ints } = self;
        refill(event_id, rows.clone().map(|i| slice.base + i as i64));
        // A line's events are consecutive: its columns are filled run by run.
        let line_runs: Vec<_> = c.line_runs_in(rows.clone()).collect();
        let [host, plane, device, line] = line_names;
        let plane_of = |l: u32| &capture.planes[capture.lines[l as usize].plane as usize];
        refill_runs(host, &line_runs, |l| plane_of(l).host);
        refill_runs(plane, &line_runs, |l| plane_of(l).name);
        refill_runs(device, &line_runs, |l| plane_of(l).device);
        refill_runs(line, &line_runs, |l| capture.lines[l as usize].name);
        refill_runs(line_id, &line_runs, |l| capture.lines[l as usize].line_id);
        refill(depth, c.depth[rows.clone()].iter().map(|&d| d as i64));
        refill(parent, c.parent[rows.clone()].iter().map(|&p| parent_id(capture, slice.part_base, p).unwrap_or(NULL_I64)));
        let [display_name, category, hlo_op, hlo_module, tf_op, src] = sparse_names;
        let [program_id, step, correlation_id, device_ordinal] = sparse_ints;
        let pool: &'s dyn Strings = &capture.strings;
        let names = |ids: &'s [u32]| RowValues::Names { ids, strings: pool };
        let (ints, nullable_ints) = (RowValues::ints, RowValues::nullable_ints);
        vec![
            ints(event_id),
            names(host),
            names(plane),
            names(device),
            names(line),
            ints(line_id),
            names(&c.name[rows.clone()]),
            names(dense(&c.display_name, rows.clone(), display_name)),
            names(dense(&c.category, rows.clone(), category)),
            ints(&c.start_ns[rows.clone()]),
            ints(&c.dur_ns[rows.clone()]),
            ints(&c.self_ns[rows.clone()]),
            ints(depth),
            nullable_ints(parent),
            names(dense(&c.hlo_op, rows.clone(), hlo_op)),
            names(dense(&c.hlo_module, rows.clone(), hlo_module)),
            nullable_ints(dense(&c.program_id, rows.clone(), program_id)),
            names(dense(&c.tf_op, rows.clone(), tf_op)),
            nullable_ints(dense(&c.step, rows.clone(), step)),
            nullable_ints(dense(&c.correlation_id, rows.clone(), correlation_id)),
            nullable_ints(dense(&c.device_ordinal, rows.clone(), device_ordinal)),
            names(dense(&c.src, rows.clone(), src)),
            RowValues::TextMap {
                entries: &c.arg_offsets[rows.start..=rows.end],
                keys: &c.arg_key,
                value_offsets: &c.arg_value_offsets,
                value_bytes: &c.arg_value_bytes,
                strings: pool,
            },
        ]
    }
}

/// `buffer` holding `values` alone.
fn refill<T>(buffer: &mut Vec<T>, values: impl Iterator<Item = T>) {
    buffer.clear();
    buffer.extend(values);
}

/// `buffer` holding `value_of(line)` for each event of each run of a line.
fn refill_runs<T: Clone>(buffer: &mut Vec<T>, line_runs: &[(u32, std::ops::Range<usize>)], value_of: impl Fn(u32) -> T) {
    buffer.clear();
    for (line, events) in line_runs {
        buffer.resize(buffer.len() + events.len(), value_of(*line));
    }
}

/// A sparse column's values of `rows`: lent from the column where it holds them so, else
/// written into `buffer`, nulls included.
fn dense<'a, T: Nullable>(column: &'a SparseColumn<T>, rows: std::ops::Range<usize>, buffer: &'a mut Vec<T>) -> &'a [T] {
    match column.dense_slice(rows.clone()) {
        Some(held) => held,
        None => {
            buffer.clear();
            column.append_range(rows, buffer);
            buffer
        }
    }
}

/// The event id of a parent given as a position in the part (see [`events_batch`]).
fn parent_id(capture: &Capture, part_base: i64, parent: u32) -> Option<i64> {
    match parent {
        NO_PARENT => None,
        p if p & CARRIED_TAG != 0 => capture.carried_parents.get((p & !CARRIED_TAG) as usize).copied(),
        p => Some(part_base + p as i64),
    }
}

/// The `events` rows of `chunk`'s events `rows` (ascending), numbered as in the whole table.
fn picked_events_batch(capture: &Capture, chunk: &EventChunk, part_base: i64, base: i64, rows: &[u32]) -> Result<RecordBatch> {
    events_batch(capture, &chunk.picked(rows), part_base, base, 0..rows.len(), Some(rows), DictEncoder::new(&capture.strings))
}

/// The `events` rows of `c`'s events `rows`. Event `i` is event `base + i` of the table, or
/// `base + original[i]` when `c` holds events picked out of a chunk; its parent is event
/// `part_base + parent[i]` (parents are positions in the part), or for a parent tagged
/// [`CARRIED_TAG`] an event of an earlier window ([`Capture::carried_parents`]).
fn events_batch(
    capture: &Capture,
    c: &EventChunk,
    part_base: i64,
    base: i64,
    rows: std::ops::Range<usize>,
    original: Option<&[u32]>,
    mut dict: DictEncoder,
) -> Result<RecordBatch> {
    let r = || rows.clone();
    let event_ids = match original {
        None => i64s(r().map(|i| base + i as i64)),
        Some(original) => i64s(r().map(|i| base + original[i] as i64)),
    };
    let lines = &capture.lines;
    let planes = &capture.planes;
    let plane_of = |i: usize| &planes[lines[c.line[i] as usize].plane as usize];
    let host = dict.encode(r().map(|i| plane_of(i).host));
    let plane = dict.encode(r().map(|i| plane_of(i).name));
    let device = dict.encode(r().map(|i| plane_of(i).device));
    let line = dict.encode(c.line[r()].iter().map(|&l| lines[l as usize].name));
    let line_id = i64s(c.line[r()].iter().map(|&l| lines[l as usize].line_id));
    let name = dict.encode(c.name[r()].iter().copied());
    let display_name = dict.encode(c.display_name.range(r()));
    let category = dict.encode(c.category.range(r()));
    let parent = Arc::new(c.parent[r()].iter().map(|&p| parent_id(capture, part_base, p)).collect::<Int64Array>());
    let hlo_op = dict.encode(c.hlo_op.range(r()));
    let hlo_module = dict.encode(c.hlo_module.range(r()));
    let tf_op = dict.encode(c.tf_op.range(r()));

    // args: keys from the pool, values straight from the chunk's byte buffer; the slice's
    // offsets are rebased to its first arg and first value byte.
    let (first_arg, end_arg) = (c.arg_offsets[rows.start] as usize, c.arg_offsets[rows.end] as usize);
    let mut keys = StringBuilder::with_capacity(end_arg - first_arg, (end_arg - first_arg) * 8);
    for &k in &c.arg_key[first_arg..end_arg] {
        keys.append_value(capture.strings.get(k).unwrap_or(""));
    }
    let value_bytes = &c.arg_value_offsets[first_arg..=end_arg];
    let first_byte = value_bytes[0];
    let value_offsets: Vec<i32> = value_bytes.iter().map(|&o| (o - first_byte) as i32).collect();
    let values = StringArray::new(
        arrow::buffer::OffsetBuffer::new(arrow::buffer::ScalarBuffer::from(value_offsets)),
        arrow::buffer::Buffer::from(&c.arg_value_bytes[first_byte as usize..value_bytes[value_bytes.len() - 1] as usize]),
        None,
    );
    let offsets: Vec<i32> = c.arg_offsets[rows.start..=rows.end].iter().map(|&o| (o as usize - first_arg) as i32).collect();
    let args = text_map(offsets, Arc::new(keys.finish()), Arc::new(values));

    batch(
        "events",
        vec![
            event_ids,
            host,
            plane,
            device,
            line,
            line_id,
            name,
            display_name,
            category,
            i64s(c.start_ns[r()].iter().copied()),
            i64s(c.dur_ns[r()].iter().copied()),
            i64s(c.self_ns[r()].iter().copied()),
            i64s(c.depth[r()].iter().map(|&d| d as i64)),
            parent,
            hlo_op,
            hlo_module,
            nullable_u64s(c.program_id.range(r())),
            tf_op,
            nullable_i64s(c.step.range(r())),
            nullable_i64s(c.correlation_id.range(r())),
            nullable_i64s(c.device_ordinal.range(r())),
            dict.encode(c.src.range(r())),
            args,
        ],
    )
}

/// The part's [`derive::LocalStrings`] (region paths, sources): the dictionary values that
/// [`local_dict`] columns share.
fn local_strings(d: &derive::PartDerived) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(d.strings.values.iter()))
}

/// A dictionary column of local string ids over `values` (from [`local_strings`]).
fn local_dict(values: &ArrayRef, ids: impl Iterator<Item = u32>) -> ArrayRef {
    shared_dict(values, ids)
}

/// The `ops` table's columns, copied out of a part's op rows once: `Op` rows are wide (152
/// bytes), so each column then reads a compact vector instead of striding over every row
/// again. Held as ids (of the pool, of the part's local strings, of [`derive::LABEL_TEXTS`])
/// for ingest's writer ([`OpColumns::rows`]) and made Arrow arrays for analyses in memory
/// (`ops_batch`).
pub struct OpColumns {
    /// host, device, line, name, hlo_op, hlo_module, opcode, hlo_category, tf_op, shape.
    names: [Vec<u32>; 10],
    /// region_path, source: ids of the part's local strings.
    local_names: [Vec<u32>; 2],
    /// category, collective_kind, pass (NO_STR: no label).
    labels: [Vec<u32>; 3],
    /// event_id, program_id, step, start_ns, dur_ns, self_ns, dur_ps.
    ints: [Vec<i64>; 7],
    /// flops, bytes_accessed, and whether each is known.
    floats: [Vec<f64>; 2],
    floats_known: [Vec<bool>; 2],
    is_async: Vec<bool>,
}

/// Which of [`OpColumns`]' columns to copy out, group by group as its fields hold them.
struct OpKeep {
    names: [bool; 10],
    local_names: [bool; 2],
    labels: [bool; 3],
    ints: [bool; 7],
    floats: [bool; 2],
    is_async: bool,
}

impl OpKeep {
    const EVERY: OpKeep = OpKeep { names: [true; 10], local_names: [true; 2], labels: [true; 3], ints: [true; 7], floats: [true; 2], is_async: true };

    /// The columns `read` reads of `ops`.
    fn of(read: &ColumnsRead) -> OpKeep {
        fn reads<const N: usize>(read: &ColumnsRead, columns: [&str; N]) -> [bool; N] {
            columns.map(|c| read.reads("ops", c))
        }
        OpKeep {
            names: reads(read, ["host", "device", "line", "name", "hlo_op", "hlo_module", "opcode", "hlo_category", "tf_op", "shape"]),
            local_names: reads(read, ["region_path", "source"]),
            labels: reads(read, ["category", "collective_kind", "pass"]),
            ints: reads(read, ["event_id", "program_id", "step", "start_ns", "dur_ns", "self_ns", "dur_ps"]),
            floats: reads(read, ["flops", "bytes_accessed"]),
            is_async: read.reads("ops", "is_async"),
        }
    }
}

impl OpColumns {
    /// Room for `n` ops' values, none held yet.
    pub fn with_capacity(n: usize) -> OpColumns {
        OpColumns {
            names: std::array::from_fn(|_| Vec::with_capacity(n)),
            local_names: std::array::from_fn(|_| Vec::with_capacity(n)),
            labels: std::array::from_fn(|_| Vec::with_capacity(n)),
            ints: std::array::from_fn(|_| Vec::with_capacity(n)),
            floats: std::array::from_fn(|_| Vec::with_capacity(n)),
            floats_known: std::array::from_fn(|_| Vec::with_capacity(n)),
            is_async: Vec::with_capacity(n),
        }
    }

    /// The values of `ops` instead of those held, in the same buffers: ingest writes a part's
    /// ops a slice at a time ([`DERIVED_SLICE_ROWS`]), so only a slice of them is copied out at once.
    pub fn refill(&mut self, ops: &[derive::Op]) {
        self.refill_keeping(ops, &OpKeep::EVERY);
    }

    /// Every op of the part, of the columns `read` reads (the others left empty).
    fn of_read(d: &derive::PartDerived, read: &ColumnsRead) -> OpColumns {
        let mut c = OpColumns::with_capacity(0);
        c.refill_keeping(&d.ops, &OpKeep::of(read));
        c
    }

    /// [`OpColumns::refill`], of the columns `keep` keeps. The rows are copied out a block at
    /// a time, a column at a time: a block's rows stay in cache while each column is filled by
    /// one `extend` (no capacity test per value), and `keep` is tested once per column and
    /// block rather than per value (row by row, every column's push was ~4 % of an ingest's
    /// CPU time).
    fn refill_keeping(&mut self, ops: &[derive::Op], keep: &OpKeep) {
        // 256 rows of ~150 bytes: well inside a core's L2 cache.
        const BLOCK_ROWS: usize = 256;
        let c = self;
        c.names.iter_mut().for_each(Vec::clear);
        c.local_names.iter_mut().for_each(Vec::clear);
        c.labels.iter_mut().for_each(Vec::clear);
        c.ints.iter_mut().for_each(Vec::clear);
        c.floats.iter_mut().for_each(Vec::clear);
        c.floats_known.iter_mut().for_each(Vec::clear);
        c.is_async.clear();
        fn reserve<T>(columns: &mut [Vec<T>], kept: &[bool], n: usize) {
            columns.iter_mut().zip(kept).filter(|(_, &k)| k).for_each(|(column, _)| column.reserve(n));
        }
        reserve(&mut c.names, &keep.names, ops.len());
        reserve(&mut c.local_names, &keep.local_names, ops.len());
        reserve(&mut c.labels, &keep.labels, ops.len());
        reserve(&mut c.ints, &keep.ints, ops.len());
        reserve(&mut c.floats, &keep.floats, ops.len());
        reserve(&mut c.floats_known, &keep.floats, ops.len());
        reserve(std::slice::from_mut(&mut c.is_async), &[keep.is_async], ops.len());
        // Each kept column of a group gets one `extend` over the block with its own field.
        macro_rules! fill {
            ($block:ident, $columns:expr, $kept:expr, $o:ident => [$($field:expr),+ $(,)?]) => {{
                let mut columns = $columns.iter_mut().zip($kept);
                $(
                    let (column, &kept) = columns.next().expect("a column for each field");
                    if kept {
                        column.extend($block.iter().map(|$o| $field));
                    }
                )+
            }};
        }
        for block in ops.chunks(BLOCK_ROWS) {
            fill!(block, c.names, &keep.names, o => [o.host, o.device, o.line, o.name, o.hlo_op, o.hlo_module, o.opcode, o.hlo_category, o.tf_op, o.shape]);
            fill!(block, c.local_names, &keep.local_names, o => [o.region_path, o.source]);
            fill!(block, c.labels, &keep.labels, o => [o.category.id(), o.collective_kind.map_or(NO_STR, Label::id), o.pass.id()]);
            fill!(block, c.ints, &keep.ints, o => [o.event_id, o.program_id, o.step, o.start_ns, o.dur_ns, o.self_ns, o.dur_ps]);
            fill!(block, c.floats, &keep.floats, o => [o.flops.get().unwrap_or(0.0), o.bytes_accessed.get().unwrap_or(0.0)]);
            fill!(block, c.floats_known, &keep.floats, o => [o.flops.get().is_some(), o.bytes_accessed.get().is_some()]);
            let is_async = [keep.is_async];
            fill!(block, std::slice::from_mut(&mut c.is_async), &is_async, o => [o.is_async]);
        }
    }

    pub fn len(&self) -> usize {
        self.is_async.len()
    }

    pub fn is_empty(&self) -> bool {
        self.is_async.is_empty()
    }

    /// The columns in schema order, for [`crate::store::PartWriter::write_rows`].
    /// `locals`: the strings of [`derive::PartDerived::strings`] the ops name by index.
    pub fn rows<'s>(&'s self, capture: &'s Capture, locals: &'s dyn Strings) -> Vec<RowValues<'s>> {
        let pool: &'s dyn Strings = &capture.strings;
        let labels: &'s dyn Strings = &derive::LABEL_TEXTS;
        let [host, device, line, name, hlo_op, hlo_module, opcode, hlo_category, tf_op, shape] = &self.names;
        let [region_path, source] = &self.local_names;
        let [category, collective_kind, pass] = &self.labels;
        let [event_id, program_id, step, start_ns, dur_ns, self_ns, dur_ps] = &self.ints;
        let [flops, bytes_accessed] = &self.floats;
        let [flops_known, bytes_accessed_known] = &self.floats_known;
        let names = |ids: &'s [u32], strings: &'s dyn Strings| RowValues::Names { ids, strings };
        let (ints, nullable_ints) = (RowValues::ints, RowValues::nullable_ints);
        let floats = |values: &'s [f64], known: &'s [bool]| RowValues::Floats { values, present: Some(known) };
        vec![
            ints(event_id),
            names(host, pool),
            names(device, pool),
            names(line, pool),
            names(name, pool),
            names(hlo_op, pool),
            names(hlo_module, pool),
            nullable_ints(program_id),
            names(opcode, pool),
            names(category, labels),
            names(hlo_category, pool),
            names(collective_kind, labels),
            names(tf_op, pool),
            names(region_path, locals),
            names(pass, labels),
            nullable_ints(step),
            ints(start_ns),
            ints(dur_ns),
            ints(self_ns),
            ints(dur_ps),
            names(shape, pool),
            names(source, locals),
            floats(flops, flops_known),
            floats(bytes_accessed, bytes_accessed_known),
            RowValues::Bools(&self.is_async),
        ]
    }
}

/// The part's `ops` batch, with the columns `read` reads (the others hold zeros, never read).
fn ops_batch(capture: &Capture, d: &derive::PartDerived, locals: &ArrayRef, read: &ColumnsRead) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    let c = OpColumns::of_read(d, read);
    let [host, device, line, name, hlo_op, hlo_module, opcode, hlo_category, tf_op, shape] = c.names;
    let [region_path, source] = c.local_names;
    let [event_id, program_id, step, start_ns, dur_ns, self_ns, dur_ps] = c.ints;
    let [flops, bytes_accessed] = c.floats;
    let [flops_known, bytes_accessed_known] = c.floats_known;
    let label = |ids: Vec<u32>| static_dict(ids.iter().map(|&id| derive::LABEL_TEXTS.get(id as usize).copied()));
    let float = |values: Vec<f64>, known: Vec<bool>| nullable_f64s(values.into_iter().zip(known).map(|(v, known)| known.then_some(v)));
    let [category, collective_kind, pass] = c.labels;
    let mut columns = ReadColumns::of("ops", read, d.ops.len());
    columns.add("event_id", || i64s(event_id.into_iter()));
    columns.add("host", || dict.encode(host.into_iter()));
    columns.add("device", || dict.encode(device.into_iter()));
    columns.add("line", || dict.encode(line.into_iter()));
    columns.add("name", || dict.encode(name.into_iter()));
    columns.add("hlo_op", || dict.encode(hlo_op.into_iter()));
    columns.add("hlo_module", || dict.encode(hlo_module.into_iter()));
    columns.add("program_id", || nullable_u64s(program_id.into_iter()));
    columns.add("opcode", || dict.encode(opcode.into_iter()));
    columns.add("category", || label(category));
    columns.add("hlo_category", || dict.encode(hlo_category.into_iter()));
    columns.add("collective_kind", || label(collective_kind));
    columns.add("tf_op", || dict.encode(tf_op.into_iter()));
    columns.add("region_path", || local_dict(locals, region_path.into_iter()));
    columns.add("pass", || label(pass));
    columns.add("step", || nullable_i64s(step.into_iter()));
    columns.add("start_ns", || i64s(start_ns.into_iter()));
    columns.add("dur_ns", || i64s(dur_ns.into_iter()));
    columns.add("self_ns", || i64s(self_ns.into_iter()));
    columns.add("dur_ps", || i64s(dur_ps.into_iter()));
    columns.add("shape", || dict.encode(shape.into_iter()));
    columns.add("source", || local_dict(locals, source.into_iter()));
    columns.add("flops", || float(flops, flops_known));
    columns.add("bytes_accessed", || float(bytes_accessed, bytes_accessed_known));
    columns.add("is_async", || Arc::new(BooleanArray::from(c.is_async)));
    columns.batch()
}

/// A batch's columns in the contract's order, each built only if its analysis reads it
/// ([`ColumnsRead`]; the others hold zeros, [`Unread`]).
struct ReadColumns<'r> {
    table: &'static schema::Table,
    read: &'r ColumnsRead,
    unread: Unread,
    columns: Vec<ArrayRef>,
}

impl<'r> ReadColumns<'r> {
    fn of(table: &str, read: &'r ColumnsRead, rows: usize) -> Self {
        let table = schema::table(table).expect("known table");
        ReadColumns { table, read, unread: Unread::rows(rows), columns: Vec::with_capacity(table.columns.len()) }
    }

    /// The next column, which must be `name`, built by `build` if it is read.
    fn add(&mut self, name: &str, build: impl FnOnce() -> ArrayRef) {
        let column = &self.table.columns[self.columns.len()];
        assert_eq!(column.name, name, "{} columns out of the contract's order", self.table.name);
        self.columns.push(if self.read.reads(self.table.name, name) { build() } else { self.unread.column(column) });
    }

    fn batch(self) -> Result<RecordBatch> {
        batch(self.table.name, self.columns)
    }
}

fn regions_batch(d: &derive::RunDerived) -> Result<RecordBatch> {
    let rows: Vec<_> = d.regions.iter().collect();
    let parent = |p: &str| p.rfind('/').map(|k| p[..k].to_string());
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    batch(
        "regions",
        vec![
            static_dict(rows.iter().map(|((pass, _), _)| Some(*pass))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|((_, p), _)| p.as_str()))),
            i64s(rows.iter().map(|((_, p), _)| p.matches('/').count() as i64)),
            Arc::new(rows.iter().map(|((_, p), _)| parent(p)).collect::<StringArray>()),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|((_, p), _)| name(p)))),
            i64s(rows.iter().map(|(_, r)| r.op_count)),
            i64s(rows.iter().map(|(_, r)| r.inclusive_ns)),
            i64s(rows.iter().map(|(_, r)| r.exclusive_ns)),
            i64s(rows.iter().map(|(_, r)| r.devices.len() as i64)),
        ],
    )
}

fn steps_batch(capture: &Capture, d: &derive::RunDerived) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    let s = &d.steps;
    batch(
        "steps",
        vec![
            dict.encode(s.iter().map(|x| x.host)),
            dict.encode(s.iter().map(|x| x.device)),
            i64s(s.iter().map(|x| x.step)),
            dict.encode(s.iter().map(|x| x.name)),
            i64s(s.iter().map(|x| x.start_ns)),
            i64s(s.iter().map(|x| x.end_ns)),
            i64s(s.iter().map(|x| x.end_ns - x.start_ns)),
            static_dict(s.iter().map(|x| Some(x.source))),
            i64s(s.iter().map(|x| x.busy_ns)),
            i64s(s.iter().map(|x| x.compute_ns)),
            i64s(s.iter().map(|x| x.communication_ns)),
            i64s(s.iter().map(|x| (x.end_ns - x.start_ns) - x.busy_ns)),
            i64s(s.iter().map(|x| x.op_count)),
        ],
    )
}

fn collectives_batch(capture: &Capture, d: &derive::PartDerived) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    let rows: Vec<(&derive::Op, i64)> = d.collectives.iter().map(|c| (&c.op, c.overlapped_ns)).collect();
    batch(
        "collectives",
        vec![
            i64s(rows.iter().map(|(o, _)| o.event_id)),
            dict.encode(rows.iter().map(|(o, _)| o.host)),
            dict.encode(rows.iter().map(|(o, _)| o.device)),
            dict.encode(rows.iter().map(|(o, _)| o.hlo_op)),
            dict.encode(rows.iter().map(|(o, _)| o.hlo_module)),
            static_dict(rows.iter().map(|(o, _)| o.collective_kind.map(Label::as_str))),
            nullable_i64s(rows.iter().map(|(o, _)| o.step)),
            i64s(rows.iter().map(|(o, _)| o.start_ns)),
            i64s(rows.iter().map(|(o, _)| o.dur_ns)),
            nullable_i64s(rows.iter().map(|(o, _)| o.shape_bytes)),
            Arc::new(BooleanArray::from(rows.iter().map(|(o, _)| o.is_async).collect::<Vec<bool>>())),
            i64s(rows.iter().map(|(_, ov)| *ov)),
            i64s(rows.iter().map(|(o, ov)| o.dur_ns - ov)),
        ],
    )
}

fn event_totals_batch(capture: &Capture, d: &derive::PartDerived) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    let t = &d.event_totals;
    let line = |x: &derive::EventTotal| &capture.lines[x.line_index as usize];
    let plane = |x: &derive::EventTotal| &capture.planes[line(x).plane as usize];
    batch(
        "event_totals",
        vec![
            dict.encode(t.iter().map(|x| plane(x).host)),
            dict.encode(t.iter().map(|x| plane(x).name)),
            dict.encode(t.iter().map(|x| plane(x).device)),
            dict.encode(t.iter().map(|x| line(x).name)),
            dict.encode(t.iter().map(|x| x.name)),
            dict.encode(t.iter().map(|x| x.category)),
            static_dict(t.iter().map(|x| x.op_category)),
            i64s(t.iter().map(|x| x.events.count)),
            i64s(t.iter().map(|x| x.events.dur_ns)),
            i64s(t.iter().map(|x| x.events.self_ns)),
            i64s(t.iter().map(|x| x.events.first_start_ns)),
            i64s(t.iter().map(|x| x.events.last_end_ns)),
        ],
    )
}

/// The `gaps` table's columns, copied out of a part's gaps in one pass, as [`OpColumns`] are:
/// each gap's two ops are read once rather than once per column.
pub struct GapColumns {
    /// host, device, line, marker hlo_op (of the marker op), payload hlo_op and tf_op (pool
    /// ids), payload region_path (an id of the part's local strings).
    ids: [Vec<u32>; 7],
    /// step, gap_start_ns, gap_ns, marker_event_id, payload_event_id.
    ints: [Vec<i64>; 5],
}

impl GapColumns {
    /// Room for `n` gaps' values, none held yet.
    pub fn with_capacity(n: usize) -> GapColumns {
        GapColumns { ids: std::array::from_fn(|_| Vec::with_capacity(n)), ints: std::array::from_fn(|_| Vec::with_capacity(n)) }
    }

    /// The values of `gaps` (of part `d`) instead of those held: ingest writes the table a slice
    /// of gaps at a time ([`DERIVED_SLICE_ROWS`]), as it writes `ops`.
    pub fn refill(&mut self, d: &derive::PartDerived, gaps: &[derive::Gap]) {
        self.refill_from(|k| d.op(k), gaps);
    }

    /// [`GapColumns::refill`] with the ops the gaps refer to given by `op`.
    pub fn refill_from<'o>(&mut self, op: impl Fn(usize) -> &'o derive::Op, gaps: &[derive::Gap]) {
        self.ids.iter_mut().for_each(Vec::clear);
        self.ints.iter_mut().for_each(Vec::clear);
        for g in gaps {
            let (marker, payload) = (op(g.marker), op(g.payload));
            for (col, v) in
                self.ids.iter_mut().zip([marker.host, marker.device, marker.line, marker.hlo_op, payload.hlo_op, payload.tf_op, payload.region_path])
            {
                col.push(v);
            }
            for (col, v) in self.ints.iter_mut().zip([marker.step, g.gap_start_ns, g.gap_ns, marker.event_id, payload.event_id]) {
                col.push(v);
            }
        }
    }

    /// The columns in schema order, for [`crate::store::PartWriter::write_rows`].
    pub fn rows<'s>(&'s self, capture: &'s Capture, d: &'s derive::PartDerived) -> Vec<RowValues<'s>> {
        self.rows_naming(capture, &d.strings.values)
    }

    /// [`GapColumns::rows`] with the region paths (of [`derive::PartDerived::strings`]) in
    /// `locals`.
    pub fn rows_naming<'s>(&'s self, capture: &'s Capture, locals: &'s dyn Strings) -> Vec<RowValues<'s>> {
        let pool: &'s dyn Strings = &capture.strings;
        let [host, device, line, marker_hlo_op, payload_hlo_op, payload_tf_op, payload_region_path] = &self.ids;
        let [step, gap_start_ns, gap_ns, marker_event_id, payload_event_id] = &self.ints;
        let names = |ids: &'s [u32], strings: &'s dyn Strings| RowValues::Names { ids, strings };
        vec![
            names(host, pool),
            names(device, pool),
            names(line, pool),
            RowValues::nullable_ints(step),
            RowValues::ints(gap_start_ns),
            RowValues::ints(gap_ns),
            RowValues::ints(marker_event_id),
            names(marker_hlo_op, pool),
            RowValues::ints(payload_event_id),
            names(payload_hlo_op, pool),
            names(payload_tf_op, pool),
            names(payload_region_path, locals),
        ]
    }
}

/// The part's `gaps` batch, with the columns `read` reads (the others hold zeros, never read).
fn gaps_batch(capture: &Capture, d: &derive::PartDerived, locals: &ArrayRef, read: &ColumnsRead) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    // A summary reads no column of `gaps` (its gap analyses read `gap_totals` and
    // `line_steps`): then its rows are only counted, never gathered.
    let gathered = if read.reads_any("gaps") { &d.gaps[..] } else { &[] };
    let mut c = GapColumns::with_capacity(gathered.len());
    c.refill(d, gathered);
    let [host, device, line, marker_hlo_op, payload_hlo_op, payload_tf_op, payload_region_path] = c.ids;
    let [step, gap_start_ns, gap_ns, marker_event_id, payload_event_id] = c.ints;
    let mut columns = ReadColumns::of("gaps", read, d.gaps.len());
    columns.add("host", || dict.encode(host.into_iter()));
    columns.add("device", || dict.encode(device.into_iter()));
    columns.add("line", || dict.encode(line.into_iter()));
    columns.add("step", || nullable_i64s(step.into_iter()));
    columns.add("gap_start_ns", || i64s(gap_start_ns.into_iter()));
    columns.add("gap_ns", || i64s(gap_ns.into_iter()));
    columns.add("marker_event_id", || i64s(marker_event_id.into_iter()));
    columns.add("marker_op", || dict.encode(marker_hlo_op.into_iter()));
    columns.add("payload_event_id", || i64s(payload_event_id.into_iter()));
    columns.add("payload_op", || dict.encode(payload_hlo_op.into_iter()));
    columns.add("payload_tf_op", || dict.encode(payload_tf_op.into_iter()));
    columns.add("payload_region_path", || local_dict(locals, payload_region_path.into_iter()));
    columns.batch()
}

fn gap_totals_batch(capture: &Capture, d: &derive::PartDerived, locals: &ArrayRef) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    let t = &d.gap_totals;
    let marker = |x: &derive::GapTotal| d.op(x.marker);
    let payload = |x: &derive::GapTotal| d.op(x.payload);
    batch(
        "gap_totals",
        vec![
            dict.encode(t.iter().map(|x| marker(x).host)),
            dict.encode(t.iter().map(|x| marker(x).device)),
            dict.encode(t.iter().map(|x| marker(x).line)),
            dict.encode(t.iter().map(|x| marker(x).hlo_op)),
            dict.encode(t.iter().map(|x| payload(x).hlo_op)),
            dict.encode(t.iter().map(|x| payload(x).tf_op)),
            local_dict(locals, t.iter().map(|x| payload(x).region_path)),
            i64s(t.iter().map(|x| x.count)),
            i64s(t.iter().map(|x| x.gap_ns)),
            i64s(t.iter().map(|x| x.max_gap_ns)),
        ],
    )
}

fn line_steps_batch(capture: &Capture, d: &derive::PartDerived) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    let t = &d.line_steps;
    batch(
        "line_steps",
        vec![
            dict.encode(t.iter().map(|x| x.host)),
            dict.encode(t.iter().map(|x| x.device)),
            dict.encode(t.iter().map(|x| x.line)),
            nullable_i64s(t.iter().map(|x| x.step)),
            i64s(t.iter().map(|x| x.ops.count)),
            i64s(t.iter().map(|x| x.ops.dur_ns)),
            i64s(t.iter().map(|x| x.ops.self_ns)),
            i64s(t.iter().map(|x| x.ops.first_start_ns)),
            i64s(t.iter().map(|x| x.ops.last_end_ns)),
            i64s(t.iter().map(|x| x.gap_count)),
            i64s(t.iter().map(|x| x.gap_ns)),
            nullable_i64s(t.iter().map(|x| x.max_gap_ns)),
        ],
    )
}

fn op_totals_batch(capture: &Capture, d: &derive::PartDerived, locals: &ArrayRef) -> Result<RecordBatch> {
    let mut dict = DictEncoder::new(&capture.strings);
    let t = &d.op_totals;
    let op = |x: &derive::OpTotal| d.op(x.example);
    batch(
        "op_totals",
        vec![
            dict.encode(t.iter().map(|x| op(x).host)),
            dict.encode(t.iter().map(|x| op(x).device)),
            dict.encode(t.iter().map(|x| op(x).hlo_op)),
            dict.encode(t.iter().map(|x| op(x).hlo_module)),
            nullable_u64s(t.iter().map(|x| op(x).program_id)),
            dict.encode(t.iter().map(|x| op(x).opcode)),
            static_dict(t.iter().map(|x| Some(op(x).category.as_str()))),
            static_dict(t.iter().map(|x| op(x).collective_kind.map(Label::as_str))),
            dict.encode(t.iter().map(|x| op(x).tf_op)),
            local_dict(locals, t.iter().map(|x| op(x).region_path)),
            static_dict(t.iter().map(|x| Some(op(x).pass.as_str()))),
            dict.encode(t.iter().map(|x| op(x).shape)),
            local_dict(locals, t.iter().map(|x| op(x).source)),
            i64s(t.iter().map(|x| x.count)),
            i64s(t.iter().map(|x| x.dur_ns)),
            i64s(t.iter().map(|x| x.self_ns)),
            i64s(t.iter().map(|x| x.max_dur_ns)),
            i64s(t.iter().map(|x| x.first_start_ns)),
            nullable_i64s(t.iter().map(|x| x.first_step)),
        ],
    )
}
