//! Store: runs as a hive-partitioned Parquet dataset, written atomically.
//!
//! Layout: `<store>/<table>/run_id=<id>/part-<k>.parquet` (zstd where it pays; large tables in several parts). A run is staged whole in
//! `<store>/.staging/<unique>/` and then renamed into place table by table, `runs` last:
//! a run is visible only once its `runs` partition exists, and the next writer removes
//! partitions left without one (a killed ingest) and stale staging directories. Writers
//! serialise their commit on `<store>/.lock`.
//!
//! A store is a directory or a bucket prefix ([`Location`]); in a bucket ([`remote`]) the same
//! steps are kept with uploads, copies and a create-if-absent put ([`Committer`]).

use crate::process::{process_gone, writer_name, writer_pid};
use crate::tables::{schema, RunTables};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod commit;
pub mod location;
mod part_file;
mod remote;
pub use commit::{Committer, Lock};
pub use location::Location;
use part_file::PartFile;

pub const PART_FILE: &str = "part-0.parquet";

/// Tables with at least this many rows are written as several part files in parallel.
const PARALLEL_PART_ROWS: usize = 200_000;

/// How many part files a table of `rows` rows in `pieces` batches (or slices) is written as:
/// one per core when it is large, each a contiguous run of the pieces.
pub fn part_files(rows: usize, pieces: usize) -> usize {
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    if rows >= PARALLEL_PART_ROWS {
        workers.min(pieces).max(1)
    } else {
        1
    }
}

pub struct Store {
    pub root: PathBuf,
}

/// Checks a run id is safe as one path component and readable in SQL.
pub fn validate_run_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 200 {
        return Err(format!("invalid run id {id:?}: must be 1..200 characters"));
    }
    if id == "." || id == ".." || id.starts_with('.') {
        return Err(format!("invalid run id {id:?}: must not start with '.'"));
    }
    if let Some(bad) = id.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))) {
        return Err(format!("invalid run id {id:?}: character {bad:?} not allowed (use letters, digits, - _ . +)"));
    }
    Ok(())
}

/// Makes a readable, valid run id out of any name.
pub fn sanitize_run_id(name: &str) -> String {
    let mut out: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+') { c } else { '_' }).collect();
    while out.starts_with('.') {
        out.remove(0);
    }
    out.truncate(120);
    if out.is_empty() {
        out = "run".into();
    }
    out
}

/// The key of a run's partition of `table` below a bucket store's prefix.
pub(crate) fn partition_key(url: &crate::remote::ObjectUrl, table: &str, run_id: &str) -> object_store::path::Path {
    url.key_of(&format!("{table}/run_id={run_id}"))
}

/// The key of the part file whose existence commits run `run_id`.
pub(crate) fn commit_key(url: &crate::remote::ObjectUrl, run_id: &str) -> object_store::path::Path {
    url.key_of(&format!("runs/run_id={run_id}/{PART_FILE}"))
}

impl Store {
    pub fn open(root: &Path) -> Store {
        Store { root: root.to_path_buf() }
    }

    fn partition(&self, table: &str, run_id: &str) -> PathBuf {
        self.root.join(table).join(format!("run_id={run_id}"))
    }

    pub fn run_exists(&self, run_id: &str) -> bool {
        self.partition("runs", run_id).join(PART_FILE).exists()
    }

    /// Tables of the contract that run `run_id` has no partition of: `runs` when the run is
    /// not committed; another when it was ingested by a profq older than that table (each
    /// ingest writes every table, empty ones included).
    pub fn tables_missing(&self, run_id: &str) -> Vec<&'static str> {
        let has = |name: &str| if name == "runs" { self.run_exists(run_id) } else { self.partition(name, run_id).is_dir() };
        schema::TABLES.iter().map(|t| t.name).filter(|name| !has(name)).collect()
    }

    /// Run ids with a committed `runs` partition, sorted.
    pub fn run_ids(&self) -> Vec<String> {
        let Ok(rd) = fs::read_dir(self.root.join("runs")) else { return vec![] };
        let mut ids: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_string_lossy().strip_prefix("run_id=").map(str::to_string))
            .filter(|id| self.run_exists(id))
            .collect();
        ids.sort();
        ids
    }

    /// Takes the store's writer lock for the life of the returned file.
    pub fn lock(&self) -> std::io::Result<File> {
        fs::create_dir_all(&self.root)?;
        let f = File::options().create(true).truncate(false).write(true).open(self.root.join(".lock"))?;
        f.lock()?;
        Ok(f)
    }

    /// Removes what a killed writer left: staging dirs and partitions of runs never committed.
    /// Call with the lock held.
    pub fn clean_up(&self) {
        if let Ok(rd) = fs::read_dir(self.root.join(".staging")) {
            for e in rd.flatten() {
                let alive = writer_pid(&e.file_name().to_string_lossy()).is_some_and(|pid| !process_gone(pid));
                if !alive {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
        for t in schema::TABLES.iter().filter(|t| t.name != "runs") {
            let Ok(rd) = fs::read_dir(self.root.join(t.name)) else { continue };
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if let Some(id) = n.strip_prefix("run_id=") {
                    if !self.run_exists(id) {
                        let _ = fs::remove_dir_all(e.path());
                    }
                }
            }
        }
    }

    /// Deletes a committed run (runs partition first, so it disappears at once). Lock held.
    pub fn remove_run(&self, run_id: &str) -> std::io::Result<()> {
        let _ = fs::remove_dir_all(self.partition("runs", run_id));
        for t in schema::TABLES {
            let p = self.partition(t.name, run_id);
            if p.exists() {
                fs::remove_dir_all(p)?;
            }
        }
        Ok(())
    }

    /// A private staging directory for a run (no lock needed); fill it with [`Store::write_tables`].
    pub fn new_staging(&self, run_id: &str) -> Result<Staged, String> {
        // Named by its writer, so that clean_up can tell abandoned staging dirs.
        let dir = self.root.join(".staging").join(format!("{}-{run_id}", writer_name()));
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Staged { dir, run_id: run_id.to_string(), parts_written: Default::default(), unsynced: Default::default() })
    }

    /// Writes all tables of a run into a new staging directory.
    pub fn stage(&self, tables: &RunTables, run_id: &str) -> Result<Staged, String> {
        let staged = self.new_staging(run_id)?;
        if let Err(e) = self.write_tables(&staged, &tables.tables) {
            staged.discard();
            return Err(e);
        }
        Ok(staged)
    }

    /// Writes tables into a staging directory; a large table is split into parts written in parallel.
    pub fn write_tables(&self, staged: &Staged, tables: &[(&str, Vec<arrow::record_batch::RecordBatch>)]) -> Result<(), String> {
        let mut jobs: Vec<(PartWriter, &[arrow::record_batch::RecordBatch])> = Vec::new();
        for (name, batches) in tables {
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            let parts = part_files(rows, batches.len());
            let per_part = batches.len().div_ceil(parts).max(1);
            let mut chunks: Vec<&[arrow::record_batch::RecordBatch]> = batches.chunks(per_part).collect();
            if chunks.is_empty() {
                chunks.push(&[]);
            }
            let writers = PartWriter::next_parts(staged, name, chunks.len())?;
            jobs.extend(writers.into_iter().zip(chunks));
        }
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = jobs.into_iter().map(|(writer, batches)| s.spawn(move || writer.write_all(batches))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("writer thread panicked".into()))).collect()
        });
        results.into_iter().collect()
    }

    /// Moves a staged run into place under `run_id`, `runs` last, once its files are on disk.
    /// Lock held.
    pub fn commit(&self, staged: &Staged, run_id: &str) -> Result<(), String> {
        staged.sync_files()?;
        let mut names: Vec<&str> = schema::TABLES.iter().map(|t| t.name).filter(|n| *n != "runs").collect();
        names.push("runs");
        for name in names {
            let from = staged.partition(name);
            let to = self.partition(name, run_id);
            fs::create_dir_all(to.parent().unwrap()).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
            fs::rename(&from, &to).map_err(|e| format!("cannot move {} into the store: {e}", from.display()))?;
        }
        let _ = fs::remove_dir_all(&staged.dir);
        Ok(())
    }
}

/// A run written to staging, not yet visible.
pub struct Staged {
    pub dir: PathBuf,
    pub run_id: String,
    /// Part files written so far per table (a run streamed in parts writes several).
    parts_written: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    /// Part files written whose data may not be on disk yet (see [`PartWriter::finish`]).
    unsynced: Arc<std::sync::Mutex<Vec<PathBuf>>>,
}

impl Staged {
    /// The staged run's partition directory of `table`.
    fn partition(&self, table: &str) -> PathBuf {
        self.dir.join(table).join(format!("run_id={}", self.run_id))
    }

    /// Whether a part file of `table` was written.
    pub fn has_parts(&self, table: &str) -> bool {
        self.parts_written.lock().unwrap_or_else(|e| e.into_inner()).get(table).is_some_and(|&n| n > 0)
    }

    /// Reserves `n` part numbers for `table`; returns the first.
    fn take_part_numbers(&self, table: &str, n: usize) -> usize {
        let mut written = self.parts_written.lock().unwrap_or_else(|e| e.into_inner());
        let next = written.entry(table.to_string()).or_insert(0);
        let first = *next;
        *next += n;
        first
    }

    pub fn discard(self) {
        let _ = fs::remove_dir_all(&self.dir);
    }

    /// Waits until every part file written is on disk (fsync), several at once: each file's
    /// writeback started when it was finished, so most of the waiting is behind us, and what
    /// is left overlaps rather than queues.
    fn sync_files(&self) -> Result<(), String> {
        let files = std::mem::take(&mut *self.unsynced.lock().unwrap_or_else(|e| e.into_inner()));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let sync = || -> Result<(), String> {
            loop {
                let Some(path) = files.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) else { return Ok(()) };
                File::open(path).and_then(|f| f.sync_all()).map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
            }
        };
        std::thread::scope(|s| {
            let helpers: Vec<_> = (1..files.len().min(SYNCING_THREADS)).map(|_| s.spawn(sync)).collect();
            let mine = sync();
            helpers.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("sync thread panicked".into()))).chain([mine]).collect()
        })
    }
}

/// Files synced at once when a run is committed.
const SYNCING_THREADS: usize = 8;

/// One part file of a table, written a batch at a time (a streamed table never has all its
/// batches in memory).
pub struct PartWriter {
    table: String,
    writer: PartFile,
    path: PathBuf,
    /// Where the finished file is noted for its run's commit to sync ([`Staged::sync_files`]).
    unsynced: Arc<std::sync::Mutex<Vec<PathBuf>>>,
}

impl PartWriter {
    /// Starts part files of `table` in a staged run: `count` writers numbered in order, so
    /// that writers running at once get their numbers from their place, not from which
    /// thread starts first.
    pub fn next_parts(staged: &Staged, table: &str, count: usize) -> Result<Vec<PartWriter>, String> {
        let first = staged.take_part_numbers(table, count);
        let dir = staged.partition(table);
        (first..first + count).map(|number| PartWriter::create(&dir.join(format!("part-{number}.parquet")), table, staged.unsynced.clone())).collect()
    }

    fn create(path: &Path, table: &str, unsynced: Arc<std::sync::Mutex<Vec<PathBuf>>>) -> Result<PartWriter, String> {
        let dir = path.parent().expect("part files live in a partition directory");
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let file = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let contract = schema::table(table).expect("known table");
        let writer = PartFile::create(file, schema::arrow_schema(contract), writer_properties(contract)).map_err(|e| format!("{table}: {e}"))?;
        Ok(PartWriter { table: table.to_string(), writer, path: path.to_path_buf(), unsynced })
    }

    pub fn write(&mut self, batch: &arrow::record_batch::RecordBatch) -> Result<(), String> {
        self.writer.write(batch).map_err(|e| format!("{}: {e}", self.table))
    }

    /// Writes rows given as the decoder holds them (see [`PartFile::write_rows`]).
    pub fn write_rows(&mut self, rows: usize, columns: &[crate::tables::columns::RowValues<'_>]) -> Result<(), String> {
        self.writer.write_rows(rows, columns).map_err(|e| format!("{}: {e}", self.table))
    }

    /// Writes `batches` as the whole part file, then finishes it.
    fn write_all(mut self, batches: &[arrow::record_batch::RecordBatch]) -> Result<(), String> {
        for b in batches {
            self.write(b)?;
        }
        self.finish()
    }

    /// Closes the file and starts writing it to disk, without waiting: its run's commit
    /// waits for it with the run's other files ([`Staged::sync_files`]). A writer that
    /// waited here held up the next stage (an `events` file took 3-7 ms to sync).
    pub fn finish(self) -> Result<(), String> {
        let f = self.writer.finish().map_err(|e| format!("{}: {e}", self.table))?;
        start_writeback(&f);
        drop(f);
        self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).push(self.path);
        Ok(())
    }
}

/// Asks the kernel to start writing `file`'s dirty pages to disk now rather than when it
/// gets to them, so that the fsync at commit finds little left to do.
fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor is open for the call; the call reads no memory of ours.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

fn writer_properties(contract: &schema::Table) -> WriterProperties {
    // Dictionary pages only where values repeat (name columns, arg keys): building one for
    // unique numbers is wasted work. Chunk-level statistics are enough for pruning.
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()))
        .set_max_row_group_row_count(Some(1 << 20))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_dictionary_enabled(false);
    for c in contract.columns.iter() {
        match c.ty {
            // No min/max for names: computing them compares every value's bytes (a large share
            // of ingest time) and names never prune a scan; run ids prune by partition.
            schema::Col::Name => {
                props = props
                    .set_column_dictionary_enabled(ColumnPath::from(c.name), true)
                    .set_column_statistics_enabled(ColumnPath::from(c.name), EnabledStatistics::None);
            }
            // Ids and times grow along the rows, program ids repeat: delta encoding makes
            // them small before zstd.
            schema::Col::Int | schema::Col::UInt => props = props.set_column_encoding(ColumnPath::from(c.name), parquet::basic::Encoding::DELTA_BINARY_PACKED),
            _ => {}
        }
    }
    let arg_key = ColumnPath::from(vec!["args".to_string(), "entries".to_string(), "key".to_string()]);
    let arg_value = ColumnPath::from(vec!["args".to_string(), "entries".to_string(), "value".to_string()]);
    props
        .set_column_dictionary_enabled(arg_key.clone(), true)
        .set_column_statistics_enabled(arg_key, EnabledStatistics::None)
        .set_column_statistics_enabled(arg_value, EnabledStatistics::None)
        .build()
}
