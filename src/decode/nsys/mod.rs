//! Nsight Systems' SQLite export (`nsys export --type sqlite`) → [`Capture`].
//!
//! The export is read read-only with the SQLite rusqlite bundles, a table at a time, each in
//! start order. It maps onto the same planes and lines as a Kineto trace, so that every rule
//! downstream reads it as it reads PyTorch's:
//! * each GPU (`deviceId`) is a device plane `/device:GPU:<id>` with a line `stream <id>` per
//!   CUDA stream; kernels (`CUPTI_ACTIVITY_KIND_KERNEL`, named by their demangled name, shown
//!   by their short name), memory copies and memsets are its events, with categories
//!   `kernel`, `gpu_memcpy` and `gpu_memset`, and their `correlationId`;
//! * each process is a host plane named `<process> (pid N)`, with a line per thread
//!   (`ThreadNames`); CUDA runtime calls (`CUPTI_ACTIVITY_KIND_RUNTIME`, category
//!   `cuda_runtime`) carry the correlation id that links a launch to its kernel (made unique
//!   across processes: `pid · 2³² + correlationId`), NVTX push/pop
//!   and start/end ranges (`NVTX_EVENTS`, category `nvtx`) nest as on the timeline, and
//!   synchronizations (`CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`, category `cuda_sync`) are waits
//!   on a line `CUDA synchronization` of their process;
//! * times are the export's ns, made relative to the earliest event.
//!
//! An NVTX range's name is its text less the per-call suffixes PyTorch's `emit_nvtx` appends
//! (`, op_id = 3`, `, seq = 7`, `, sizes = […]`), so that ranges of one op share one name; the
//! full text stays in the `text` arg. A range that marks a step ([`step_marked`], a JAX step
//! annotation, or what `--step-marker` matches) carries it. XLA's ranges name the HLO op and
//! module of the kernels launched inside them ([`xla`]).

mod xla;

use super::part_bytes;
use crate::model::names::step_marked;
use crate::model::{note_peak, Capture, EventChunk, Line, Plane, PlaneKind, NO_STR};
use regex::Regex;
use rusqlite::{Connection, OpenFlags};
use rustc_hash::FxHashMap as HashMap;
use std::path::Path;
use xla::{full_op_name, xla_range};

/// `--step-marker REGEX`, set once for the process (see [`set_step_marker`]).
static STEP_MARKER: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();

/// Makes the NVTX ranges whose name matches `marker` the ones that mark steps, in place of
/// the usual markers ([`step_marked`], a JAX step annotation). The first time counts.
pub fn set_step_marker(marker: Regex) {
    let _ = STEP_MARKER.set(marker);
}

/// Numbers the ranges `--step-marker` matches: by the regex's first capture group where it
/// is a number, else in start order per thread from 0.
struct StepMarker {
    regex: &'static Regex,
    seen: HashMap<i64, i64>,
}

impl StepMarker {
    fn step(&mut self, thread: i64, name: &str) -> Option<i64> {
        let found = self.regex.captures(name)?;
        let counted = self.seen.entry(thread).or_insert(0);
        *counted += 1;
        Some(found.get(1).and_then(|g| g.as_str().parse().ok()).unwrap_or(*counted - 1))
    }
}

/// The command that turns a raw report into what profq reads.
pub const EXPORT_HINT: &str = "nsys export --type sqlite";

/// NVTX event types kept: push/pop ranges and start/end ranges (`ENUM_NSYS_EVENT_TYPE`).
const NVTX_PUSH_POP: i64 = 59;
const NVTX_START_END: i64 = 60;

/// A row's `globalPid` from its `globalTid`, in SQL (see [`global_pid_of`]).
const BY_THREAD: &str = "(globalTid & -16777216)";

/// The line of a process's synchronizations (the export gives their process, not a thread).
const SYNC_LINE: &str = "CUDA synchronization";

/// The tables of device work: (table, category, the columns [`Reader::device_work`] reads).
const DEVICE_WORK: [(&str, &str, &str); 3] = [
    (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "kernel",
        "start, end, deviceId, streamId, correlationId, globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, NULL",
    ),
    (
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "gpu_memcpy",
        "start, end, deviceId, streamId, correlationId, globalPid, copyKind, NULL, NULL, NULL, NULL, NULL, NULL, NULL, bytes",
    ),
    (
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "gpu_memset",
        "start, end, deviceId, streamId, correlationId, globalPid, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, bytes",
    ),
];

/// Whether the bytes a file starts with are an SQLite database's.
pub fn is_sqlite(head: &[u8]) -> bool {
    head.starts_with(b"SQLite format 3\0")
}

/// Decodes the export at `path` into `capture`, as host `host`. A large export is read a
/// part per process ([`parts`]): the events of one process (its threads' calls and ranges,
/// and the device work it launched), handed to `part` before the next is read, so memory
/// holds one process's events at a time. `fail` makes the decoder's one-line errors `E`s.
pub fn decode_nsys<E>(
    path: &Path,
    host: &str,
    capture: &mut Capture,
    part: &mut dyn FnMut(&mut Capture) -> Result<(), E>,
    fail: impl Fn(String) -> E,
) -> Result<(), E> {
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| fail(format!("cannot open as SQLite: {e}")))?;
    let tables = texts(&db, "SELECT name FROM sqlite_master WHERE type = 'table'").map_err(&fail)?;
    let has = |table: &str| tables.iter().any(|t| t == table);
    if !has("META_DATA_EXPORT") && !tables.iter().any(|t| t.starts_with("CUPTI_ACTIVITY_KIND_")) {
        return Err(fail(format!("not an Nsight Systems export: an SQLite database without its tables (make one with `{EXPORT_HINT} REPORT`)")));
    }
    note_targets(&db, &has, capture).map_err(&fail)?;
    let export_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let (base, parts) = (earliest_start(&db, &has).map_err(&fail)?, parts(&db, &has, export_bytes).map_err(&fail)?);
    let mut reader = Reader::new(&db, &has, host, capture).map_err(&fail)?;
    for rows in parts {
        let mut clock = std::time::Instant::now();
        reader.read_part(rows, &has).map_err(&fail)?;
        crate::timing::stage_done("  nsys: read", &mut clock);
        reader.finish_part(base);
        crate::timing::stage_done("  nsys: sort and nesting", &mut clock);
        part(&mut *reader.capture)?;
    }
    if !reader.any_step {
        reader.capture.meta.quality_warnings.push("no NVTX range marks a step (`ProfilerStep#N`, `step N`): the export has no steps".into());
    }
    Ok(())
}

/// What the export says of its targets: the GPUs' kinds (`TARGET_INFO_GPU`, else `NVIDIA
/// GPU` where CUPTI recorded device work: CUPTI is NVIDIA's), their memory bandwidth (bytes/s;
/// nsys states no FLOP rate), and the session's start.
fn note_targets(db: &Connection, has: &dyn Fn(&str) -> bool, capture: &mut Capture) -> Result<(), String> {
    let mut kinds = if has("TARGET_INFO_GPU") { texts(db, "SELECT DISTINCT name FROM TARGET_INFO_GPU ORDER BY id")? } else { Vec::new() };
    if kinds.is_empty() && DEVICE_WORK.iter().any(|(table, ..)| has(table)) {
        kinds.push("NVIDIA GPU".to_string());
    }
    for k in kinds {
        if !capture.meta.device_kinds.contains(&k) {
            capture.meta.device_kinds.push(k);
        }
    }
    if has("TARGET_INFO_GPU") && columns(db, "TARGET_INFO_GPU")?.iter().any(|c| c == "memoryBandwidth") {
        for bandwidth in texts(db, "SELECT CAST(memoryBandwidth AS TEXT) FROM TARGET_INFO_GPU ORDER BY id")? {
            note_peak(&mut capture.meta.peak_hbm_bytes_per_s, bandwidth.parse().ok());
        }
    }
    if has("TARGET_INFO_SESSION_START_TIME") && capture.meta.start_epoch_ns.is_none() {
        capture.meta.start_epoch_ns = db.query_row("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME", [], |r| r.get::<_, Option<i64>>(0)).ok().flatten();
    }
    Ok(())
}

/// The earliest start of any event: the run's time 0, the same for every part.
fn earliest_start(db: &Connection, has: &dyn Fn(&str) -> bool) -> Result<i64, String> {
    let mut earliest = None::<i64>;
    let host_tables = ["CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"];
    for table in DEVICE_WORK.iter().map(|(table, ..)| *table).chain(host_tables).filter(|t| has(t)) {
        let start: Option<i64> = db.query_row(&format!("SELECT min(start) FROM {table}"), [], |r| r.get(0)).map_err(sql_error)?;
        earliest = match (earliest, start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    Ok(earliest.unwrap_or(0))
}

/// Which rows of the export's tables a part holds.
#[derive(Debug, Clone, PartialEq)]
enum Rows {
    All,
    /// Those of one process (a `globalPid`).
    Of(i64),
    /// Those of every process but these.
    NotOf(Vec<i64>),
}

/// The export's parts: one per process that ran device work, the last of them also holding
/// every other process's rows, when the export is larger than a part ([`part_bytes`]) and
/// there are several; else one part of every row. Each part's query scans the whole table
/// again, so a small export is read in one.
fn parts(db: &Connection, has: &dyn Fn(&str) -> bool, export_bytes: u64) -> Result<Vec<Rows>, String> {
    if export_bytes <= part_bytes() as u64 {
        return Ok(vec![Rows::All]);
    }
    let mut pids = std::collections::BTreeSet::new();
    for (table, ..) in DEVICE_WORK.iter().filter(|(table, ..)| has(table)) {
        let mut stmt = db.prepare(&format!("SELECT DISTINCT globalPid FROM {table} WHERE globalPid IS NOT NULL")).map_err(sql_error)?;
        for pid in stmt.query_map([], |r| r.get::<_, i64>(0)).map_err(sql_error)? {
            pids.insert(pid.map_err(sql_error)?);
        }
    }
    let mut pids: Vec<i64> = pids.into_iter().collect();
    pids.pop();
    if pids.is_empty() {
        return Ok(vec![Rows::All]);
    }
    let mut parts: Vec<Rows> = pids.iter().map(|&p| Rows::Of(p)).collect();
    parts.push(Rows::NotOf(pids));
    Ok(parts)
}

/// The first column of every row of `sql`, as text.
fn texts(db: &Connection, sql: &str) -> Result<Vec<String>, String> {
    let mut stmt = db.prepare(sql).map_err(sql_error)?;
    let rows = stmt.query_map([], |r| r.get::<_, Option<String>>(0)).map_err(sql_error)?;
    rows.filter_map(|r| r.map_err(sql_error).transpose()).collect()
}

/// The column names of `table`.
fn columns(db: &Connection, table: &str) -> Result<Vec<String>, String> {
    texts(db, &format!("SELECT name FROM pragma_table_info('{table}')"))
}

/// The first two columns of every row of `sql`; none when the export has no `table`.
fn pairs<A: rusqlite::types::FromSql, B: rusqlite::types::FromSql>(
    db: &Connection,
    has: &dyn Fn(&str) -> bool,
    table: &str,
    sql: &str,
) -> Result<Vec<(A, B)>, String> {
    if !has(table) {
        return Ok(Vec::new());
    }
    let mut stmt = db.prepare(sql).map_err(sql_error)?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(sql_error)?;
    rows.map(|r| r.map_err(sql_error)).collect()
}

fn sql_error(e: rusqlite::Error) -> String {
    format!("unreadable Nsight Systems export: {e}")
}

/// A thread's or process's parts of a `globalTid`: nsys packs the pid in bits 24..48 and the
/// tid in bits 0..24 (`globalPid` is the `globalTid` of tid 0).
fn pid_of(global_tid: i64) -> i64 {
    (global_tid >> 24) & 0xFF_FFFF
}

fn tid_of(global_tid: i64) -> i64 {
    global_tid & 0xFF_FFFF
}

fn global_pid_of(global_tid: i64) -> i64 {
    global_tid & !0xFF_FFFF
}

/// An NVTX text less the per-call suffixes of PyTorch's `emit_nvtx` (see the module).
pub fn nvtx_name(text: &str) -> &str {
    [", op_id = ", ", seq = ", ", sizes = ", ", input_op_ids = "].iter().filter_map(|s| text.find(s)).min().map_or(text, |cut| &text[..cut])
}

/// The readers of the export's tables, and the planes and lines they add.
struct Reader<'a> {
    db: &'a Connection,
    capture: &'a mut Capture,
    host: u32,
    /// The rows of the part being read.
    rows: Rows,
    /// The part's events, and its chunk-local ids of `StringIds` texts and of arg keys.
    chunk: EventChunk,
    strings: HashMap<i64, u32>,
    keys: Keys,
    /// `StringIds`: the texts the tables name by id.
    string_ids: HashMap<i64, String>,
    /// Device plane per `deviceId`; line per (`deviceId`, `streamId`).
    device_planes: HashMap<i64, u32>,
    stream_lines: HashMap<(i64, i64), u32>,
    /// Host plane per `globalPid`; line per `globalTid` (and per process for its syncs).
    process_planes: HashMap<i64, u32>,
    thread_lines: HashMap<i64, u32>,
    process_names: HashMap<i64, String>,
    thread_names: HashMap<i64, i64>,
    step_marker: Option<StepMarker>,
    /// Whether any range read so far marks a step.
    any_step: bool,
}

/// Arg keys, interned once per part.
struct Keys {
    bytes: u32,
    text: u32,
    stream: u32,
    grid: u32,
    block: u32,
}

impl Keys {
    fn new(chunk: &mut EventChunk) -> Keys {
        let mut key = |k: &str| chunk.local(k);
        Keys { bytes: key("bytes"), text: key("text"), stream: key("stream"), grid: key("grid"), block: key("block") }
    }
}

impl<'a> Reader<'a> {
    /// A reader of `db`, whose tables `has` tells.
    fn new(db: &'a Connection, has: &dyn Fn(&str) -> bool, host: &str, capture: &'a mut Capture) -> Result<Self, String> {
        let host_id = capture.strings.intern(host);
        if !capture.meta.hosts.iter().any(|h| h == host) {
            capture.meta.hosts.push(host.to_string());
        }
        let string_ids = pairs::<i64, Option<String>>(db, has, "StringIds", "SELECT id, value FROM StringIds")?
            .into_iter()
            .map(|(id, value)| (id, value.unwrap_or_default()))
            .collect();
        let process_names = pairs::<i64, Option<String>>(db, has, "PROCESSES", "SELECT globalPid, name FROM PROCESSES")?
            .into_iter()
            .map(|(pid, name)| (pid, name.unwrap_or_default()))
            .collect();
        let thread_names = pairs::<i64, i64>(db, has, "ThreadNames", "SELECT globalTid, nameId FROM ThreadNames")?.into_iter().collect();
        let mut chunk = EventChunk::new();
        let keys = Keys::new(&mut chunk);
        Ok(Reader {
            db,
            capture,
            host: host_id,
            rows: Rows::All,
            chunk,
            strings: HashMap::default(),
            keys,
            string_ids,
            device_planes: HashMap::default(),
            stream_lines: HashMap::default(),
            process_planes: HashMap::default(),
            thread_lines: HashMap::default(),
            process_names,
            thread_names,
            step_marker: STEP_MARKER.get().map(|regex| StepMarker { regex, seen: HashMap::default() }),
            any_step: false,
        })
    }

    /// Reads the events of a part's `rows` into a new chunk.
    fn read_part(&mut self, rows: Rows, has: &dyn Fn(&str) -> bool) -> Result<(), String> {
        self.rows = rows;
        self.chunk = EventChunk::new();
        self.keys = Keys::new(&mut self.chunk);
        self.strings.clear();
        for (table, category, columns) in DEVICE_WORK {
            if has(table) {
                self.device_work(table, category, columns)?;
            }
        }
        if has("CUPTI_ACTIVITY_KIND_RUNTIME") {
            self.runtime_calls()?;
        }
        if has("NVTX_EVENTS") {
            self.nvtx_ranges()?;
        }
        if has("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") {
            self.synchronizations()?;
        }
        Ok(())
    }

    /// Makes the chunk read a part of the capture: times from `base`, strings in the pool,
    /// events sorted and nested, kernels placed in XLA's ops ([`xla::place_kernels`]).
    fn finish_part(&mut self, base: i64) {
        let mut chunk = std::mem::take(&mut self.chunk);
        for s in chunk.start_ns.iter_mut() {
            *s -= base;
        }
        self.any_step |= chunk.step.values().iter().any(|&s| s != crate::model::NULL_I64);
        let capture = &mut *self.capture;
        capture.meta.num_complete_events += chunk.len() as i64;
        chunk.merge_strings_into(&mut capture.strings);
        chunk.sort_within_lines();
        chunk.compute_nesting();
        if let Some(runtime) = capture.strings.lookup("cuda_runtime") {
            xla::place_kernels(&mut chunk, runtime);
        }
        capture.chunks.push(chunk);
    }

    /// `WHERE` the rows are the part's, by `pid` (the expression of a row's `globalPid`).
    fn only_process(&self, pid: &str) -> String {
        match &self.rows {
            Rows::All => String::new(),
            Rows::Of(p) => format!("WHERE {pid} = {p}"),
            Rows::NotOf(others) => {
                let others: Vec<String> = others.iter().map(i64::to_string).collect();
                format!("WHERE {pid} IS NULL OR {pid} NOT IN ({})", others.join(", "))
            }
        }
    }

    /// A `StringIds` text (chunk-local), or `fallback` where the id names none.
    fn string(&mut self, id: Option<i64>, fallback: &str) -> u32 {
        let Some(id) = id else { return self.chunk.local(fallback) };
        if let Some(&s) = self.strings.get(&id) {
            return s;
        }
        let s = match self.string_ids.get(&id) {
            Some(text) => self.chunk.local(text),
            None => return self.chunk.local(fallback),
        };
        self.strings.insert(id, s);
        s
    }

    fn add_plane(&mut self, name: &str, kind: PlaneKind, device: &str) -> u32 {
        let plane = self.capture.planes.len() as u32;
        let (name, device) = (self.capture.strings.intern(name), if device.is_empty() { NO_STR } else { self.capture.strings.intern(device) });
        self.capture.planes.push(Plane { host: self.host, name, kind, device });
        plane
    }

    fn add_line(&mut self, plane: u32, line_id: i64, name: &str) -> u32 {
        let line = self.capture.lines.len() as u32;
        let name = self.capture.strings.intern(name);
        self.capture.lines.push(Line { plane, line_id, name });
        line
    }

    /// The line of stream `stream` of GPU `device`.
    fn stream_line(&mut self, device: i64, stream: i64) -> u32 {
        if let Some(&line) = self.stream_lines.get(&(device, stream)) {
            return line;
        }
        let plane = match self.device_planes.get(&device) {
            Some(&p) => p,
            None => {
                let p = self.add_plane(&format!("/device:GPU:{device}"), PlaneKind::Device, &format!("GPU:{device}"));
                self.device_planes.insert(device, p);
                p
            }
        };
        let line = self.add_line(plane, stream, &format!("stream {stream}"));
        self.stream_lines.insert((device, stream), line);
        line
    }

    /// The host plane of process `global_pid`.
    fn process_plane(&mut self, global_pid: i64) -> u32 {
        if let Some(&p) = self.process_planes.get(&global_pid) {
            return p;
        }
        let pid = pid_of(global_pid);
        let name = match self.process_names.get(&global_pid).filter(|n| !n.is_empty()) {
            Some(n) => format!("{n} (pid {pid})"),
            None => format!("pid {pid}"),
        };
        let p = self.add_plane(&name, PlaneKind::Host, "");
        self.process_planes.insert(global_pid, p);
        p
    }

    /// The line of thread `global_tid` (named by `ThreadNames`).
    fn thread_line(&mut self, global_tid: i64) -> u32 {
        if let Some(&line) = self.thread_lines.get(&global_tid) {
            return line;
        }
        let plane = self.process_plane(global_pid_of(global_tid));
        let name = match self.thread_names.get(&global_tid).and_then(|id| self.string_ids.get(id)) {
            Some(text) => text.clone(),
            None => format!("tid {}", tid_of(global_tid)),
        };
        let line = self.add_line(plane, tid_of(global_tid), &name);
        self.thread_lines.insert(global_tid, line);
        line
    }

    /// The line of process `global_pid`'s synchronizations.
    fn sync_line(&mut self, global_pid: i64) -> u32 {
        // Keyed apart from every thread: a globalTid's low 24 bits are never all set.
        let key = global_pid | 0xFF_FFFF;
        if let Some(&line) = self.thread_lines.get(&key) {
            return line;
        }
        let plane = self.process_plane(global_pid);
        let line = self.add_line(plane, -1, SYNC_LINE);
        self.thread_lines.insert(key, line);
        line
    }

    /// Sets event `i`'s correlation id: CUPTI's `correlationId` counts per process, so it is
    /// made unique across the export's processes as `pid · 2³² + correlationId`.
    fn correlation(&mut self, i: usize, global_pid: i64, correlation: Option<i64>) {
        if let Some(c) = correlation {
            let capacity = self.chunk.capacity();
            self.chunk.correlation_id.set(i, capacity, (pid_of(global_pid) << 32) | (c & 0xFFFF_FFFF));
        }
    }

    /// Calls `each` on every row of `sql`, counting the rows in the run's `num_events_total`.
    fn for_each_row(&mut self, sql: &str, mut each: impl FnMut(&mut Self, Cells) -> Result<(), String>) -> Result<(), String> {
        let db = self.db;
        let mut stmt = db.prepare(sql).map_err(sql_error)?;
        let mut rows = stmt.query([]).map_err(sql_error)?;
        while let Some(r) = rows.next().map_err(sql_error)? {
            self.capture.meta.num_events_total += 1;
            each(self, Cells(r))?;
        }
        Ok(())
    }

    /// Kernels, memcpys or memsets of `table` (a row of [`DEVICE_WORK`]): events on their
    /// GPU's stream lines.
    fn device_work(&mut self, table: &str, category: &str, columns: &str) -> Result<(), String> {
        let category = self.chunk.local(category);
        let only = self.only_process("globalPid");
        self.for_each_row(&format!("SELECT {columns} FROM {table} {only} ORDER BY start"), |me, r| {
            let (Some(start), Some(end)) = (r.int(0)?, r.int(1)?) else { return Ok(()) };
            let stream = r.int(3)?.unwrap_or(0);
            let line = me.stream_line(r.int(2)?.unwrap_or(0), stream);
            let (name, display) = match table {
                "CUPTI_ACTIVITY_KIND_KERNEL" => {
                    let short = me.string(r.int(7)?, "kernel");
                    (me.string(r.int(6)?, "kernel"), short)
                }
                "CUPTI_ACTIVITY_KIND_MEMCPY" => (me.chunk.local(&format!("Memcpy {}", copy_kind(r.int(6)?))), NO_STR),
                _ => (me.chunk.local("Memset"), NO_STR),
            };
            let i = me.chunk.push_event(line, name, display, category, start, end - start);
            me.correlation(i, r.int(5)?.unwrap_or(0), r.int(4)?);
            me.chunk.push_arg(me.keys.stream, &stream.to_string());
            for (key, at) in [(me.keys.grid, 8), (me.keys.block, 11)] {
                if let (Some(x), Some(y), Some(z)) = (r.int(at)?, r.int(at + 1)?, r.int(at + 2)?) {
                    me.chunk.push_arg(key, &format!("[{x}, {y}, {z}]"));
                }
            }
            if let Some(bytes) = r.int(14)? {
                me.chunk.push_arg(me.keys.bytes, &bytes.to_string());
            }
            me.chunk.end_args();
            Ok(())
        })
    }

    /// CUDA runtime calls: events on their thread's line, linked to their work by correlation.
    fn runtime_calls(&mut self) -> Result<(), String> {
        let category = self.chunk.local("cuda_runtime");
        let sql =
            format!("SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME {} ORDER BY start", self.only_process(BY_THREAD));
        self.for_each_row(&sql, |me, r| {
            let (Some(start), Some(end), Some(tid)) = (r.int(0)?, r.int(1)?, r.int(2)?) else { return Ok(()) };
            let line = me.thread_line(tid);
            let name = me.string(r.int(4)?, "CUDA runtime call");
            let i = me.chunk.push_event(line, name, NO_STR, category, start, end - start);
            me.correlation(i, global_pid_of(tid), r.int(3)?);
            me.chunk.end_args();
            Ok(())
        })
    }

    /// NVTX push/pop and start/end ranges, on the thread that opened them.
    fn nvtx_ranges(&mut self) -> Result<(), String> {
        let category = self.chunk.local("nvtx");
        // Per thread, the end and op_name prefix of its latest `XlaModule` range.
        let mut modules: HashMap<i64, (i64, Option<String>)> = HashMap::default();
        let sql = format!("SELECT start, end, globalTid, eventType, text, textId FROM NVTX_EVENTS {} ORDER BY start", self.only_process(BY_THREAD));
        self.for_each_row(&sql, |me, r| {
            let (Some(start), Some(end), Some(tid)) = (r.int(0)?, r.int(1)?, r.int(2)?) else { return Ok(()) };
            if !matches!(r.int(3)?, Some(NVTX_PUSH_POP | NVTX_START_END)) {
                return Ok(());
            }
            let text = match r.text(4)? {
                Some(t) => t,
                None => r.int(5)?.and_then(|id| me.string_ids.get(&id)).cloned().unwrap_or_default(),
            };
            let line = me.thread_line(tid);
            let xla = xla_range(&text);
            let name = xla.as_ref().map_or_else(|| nvtx_name(&text), |x| x.name);
            let name_id = me.chunk.local(name);
            let i = me.chunk.push_event(line, name_id, NO_STR, category, start, end - start);
            let capacity = me.chunk.capacity();
            let step = match (me.step_marker.as_mut(), &xla) {
                (Some(marker), _) => marker.step(tid, name),
                (None, Some(x)) => x.step,
                (None, None) => step_marked(name),
            };
            if let Some(step) = step {
                me.chunk.step.set(i, capacity, step);
            }
            if let Some(x) = xla {
                if let Some(module) = x.hlo_module {
                    let module = me.chunk.local(module);
                    me.chunk.hlo_module.set(i, capacity, module);
                    modules.insert(tid, (end, x.prefix.map(str::to_string)));
                }
                if let Some(program_id) = x.program_id {
                    me.chunk.program_id.set(i, capacity, program_id);
                }
                if let Some(op) = x.hlo_op {
                    let op = me.chunk.local(op);
                    me.chunk.hlo_op.set(i, capacity, op);
                }
                if let Some(name) = x.op_name {
                    let prefix = modules.get(&tid).filter(|m| start < m.0).and_then(|m| m.1.as_deref());
                    let op_name = full_op_name(prefix, name);
                    if !op_name.is_empty() {
                        let op_name = me.chunk.local(&op_name);
                        me.chunk.tf_op.set(i, capacity, op_name);
                    }
                }
            }
            if name.len() != text.len() {
                me.chunk.push_arg(me.keys.text, &text);
            }
            me.chunk.end_args();
            Ok(())
        })
    }

    /// Synchronizations: the host waiting on a stream, an event or the device.
    fn synchronizations(&mut self) -> Result<(), String> {
        let category = self.chunk.local("cuda_sync");
        let sql = format!(
            "SELECT start, end, globalPid, correlationId, syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION {} ORDER BY start",
            self.only_process("globalPid")
        );
        self.for_each_row(&sql, |me, r| {
            let (Some(start), Some(end), Some(pid)) = (r.int(0)?, r.int(1)?, r.int(2)?) else { return Ok(()) };
            let line = me.sync_line(pid);
            let name = me.chunk.local(&format!("Synchronization wait ({})", sync_kind(r.int(4)?)));
            let i = me.chunk.push_event(line, name, NO_STR, category, start, end - start);
            me.correlation(i, pid, r.int(3)?);
            me.chunk.end_args();
            Ok(())
        })
    }
}

/// A row's cells by column index.
struct Cells<'r, 's>(&'r rusqlite::Row<'s>);

impl Cells<'_, '_> {
    fn int(&self, k: usize) -> Result<Option<i64>, String> {
        self.0.get(k).map_err(sql_error)
    }
    fn text(&self, k: usize) -> Result<Option<String>, String> {
        self.0.get(k).map_err(sql_error)
    }
}

/// A memcpy's direction by CUPTI's `copyKind` (`ENUM_CUDA_MEMCPY_OPER`), spelled as the
/// transfer rules read it.
fn copy_kind(kind: Option<i64>) -> &'static str {
    match kind {
        Some(1) => "HtoD",
        Some(2) => "DtoH",
        Some(3) => "HtoA",
        Some(4) => "AtoH",
        Some(5) => "AtoA",
        Some(6) => "AtoD",
        Some(7) => "DtoA",
        Some(8) => "DtoD",
        Some(9) => "HtoH",
        Some(10) => "PtoP",
        Some(11) => "HtoD (unified)",
        Some(12) => "DtoH (unified)",
        Some(13) => "DtoD (unified)",
        _ => "unknown",
    }
}

/// A synchronization's kind by CUPTI's `syncType` (`ENUM_CUPTI_SYNC_TYPE`).
fn sync_kind(kind: Option<i64>) -> &'static str {
    match kind {
        Some(1) => "event",
        Some(2) => "stream wait event",
        Some(3) => "stream",
        Some(4) => "context",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::{global_pid_of, nvtx_name, pid_of, tid_of};
    use crate::model::names::step_marked;

    #[test]
    fn ranges_that_mark_steps() {
        for (name, step) in [
            ("ProfilerStep#12", Some(12)),
            ("step 3", Some(3)),
            ("Step_4", Some(4)),
            ("STEP #5", Some(5)),
            ("step", None),
            ("steps 3", None),
            ("step3x", None),
            ("train_step 3", None),
        ] {
            assert_eq!(step_marked(name), step, "{name}");
        }
    }

    #[test]
    fn pytorch_nvtx_suffixes_are_not_names() {
        assert_eq!(nvtx_name("aten::mul, op_id = 322567"), "aten::mul");
        assert_eq!(nvtx_name("aten::addmm, seq = 7, op_id = 12, sizes = [[2, 3]]"), "aten::addmm");
        assert_eq!(nvtx_name("train_step"), "train_step");
    }

    #[test]
    fn global_thread_ids() {
        let tid = (1 << 56) | (466 << 24) | 467;
        assert_eq!((pid_of(tid), tid_of(tid), global_pid_of(tid)), (466, 467, (1 << 56) | (466 << 24)));
    }
}
