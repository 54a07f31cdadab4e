//! Ingest: one INPUT → decode → tables → a committed run in the store.

use crate::decode::{self, InputError, LoadError, PartSink};
use crate::model::{ArgsKept, Capture};
use crate::remote;
use crate::store::{self, Committer, Location, Staged, Store};
use crate::tables::{self, derive, derive::Deriver, ColumnsRead, GapColumns, OpColumns, RunInfo, RunTables};
use crate::timing::{now_ns, stage_done};
use std::io::IsTerminal;
use std::path::Path;

pub struct IngestOptions {
    pub store: Location,
    pub run_id: Option<String>,
    pub labels: Vec<(String, String)>,
    pub force: bool,
}

#[derive(Debug)]
pub enum Outcome {
    Ingested { run_id: String, events: usize, ops: usize, steps: usize, warnings: Vec<String> },
    AlreadyPresent { run_id: String },
}

/// Why an ingest failed; each maps to a documented exit code.
#[derive(Debug)]
pub enum IngestError {
    /// The input is missing, unreadable, corrupt or not a profile (exit 3).
    Input(InputError),
    /// Run id or label rejected (exit 2).
    Usage(String),
    /// The store could not be written (exit 4).
    Store(String),
}

impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IngestError::Input(e) => write!(f, "{e}"),
            IngestError::Usage(e) | IngestError::Store(e) => f.write_str(e),
        }
    }
}

/// A failed load: the input's fault, or the tables'/store's (the sinks' errors are messages).
impl From<LoadError<String>> for IngestError {
    fn from(e: LoadError<String>) -> Self {
        match e {
            LoadError::Input(e) => IngestError::Input(e),
            LoadError::Sink(e) => IngestError::Store(e),
        }
    }
}

/// What an ingest has got through: files, bytes, events, and the time left at that pace.
fn progress_line(p: &decode::LoadProgress, elapsed: std::time::Duration) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let mut line = format!("profq: ingesting: {:.0} of {:.0} MB, {:.1} M events", mb(p.bytes_done), mb(p.bytes), p.events as f64 / 1e6);
    if p.files > 1 {
        line += &format!(", {} of {} hosts", p.files_done, p.files);
    }
    if p.bytes_done > 0 && p.bytes > p.bytes_done {
        let left = elapsed.as_secs_f64() * (p.bytes - p.bytes_done) as f64 / p.bytes_done as f64;
        line += &format!(", ~{left:.0} s left");
    }
    line
}

fn progress(msg: &str) {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K{msg}");
        if msg.is_empty() {
            eprint!("\r");
        }
    }
}

/// What an INPUT names: a local path as [`decode::resolve`] reads it, or an `s3://`/`gs://`
/// URL, whose profile files are first mirrored into the local cache ([`remote::mirror`]).
pub fn resolve(input: &Path) -> Result<decode::Resolved, IngestError> {
    let Some(url) = input.to_str().filter(|text| remote::is_url(text)) else {
        return decode::resolve(input).map_err(IngestError::Input);
    };
    let mirrored = remote::mirror::mirror_input(url).map_err(|what| IngestError::Input(InputError { path: input.to_path_buf(), what }))?;
    let mut resolved = decode::resolve(&mirrored.local).map_err(IngestError::Input)?;
    resolved.notes.splice(0..0, mirrored.notes);
    Ok(resolved)
}

/// The run of `location` holding a trace with this sha256, if any: one query over `runs`.
/// A local store without committed runs holds none: no SQL session is built for it (the
/// first ingest into a store, and every benchmark round).
pub fn find_by_sha(location: &Location, sha: &str) -> Result<Option<String>, String> {
    if let Location::Local(root) = location {
        if crate::store::Store::open(root).run_ids().is_empty() {
            return Ok(None);
        }
    }
    remote::block_on(async {
        let engine = crate::engine::Engine::open_with(location, crate::engine::Spread::Narrow).await.map_err(|e| e.to_string())?;
        let sql = format!("SELECT run_id FROM runs WHERE trace_sha256 = '{}' ORDER BY run_id LIMIT 1", sha.replace('\'', "''"));
        let batches = engine.sql(&sql).await.map_err(|e| e.to_string())?;
        Ok(batches.iter().find(|b| b.num_rows() > 0).map(|b| arrow::util::display::array_value_to_string(b.column(0), 0).unwrap_or_default()))
    })
}

/// Decodes an INPUT into its tables without touching a store (also used by in-memory
/// analyses). Its `events` table holds only the events of interest
/// ([`tables::events_of_interest`]): the only rows the named queries read one by one.
pub fn load_tables(input: &Path, run_id: &str, labels: &[(String, String)]) -> Result<tables::RunTables, IngestError> {
    load_tables_telling(input, run_id, labels, ColumnsRead::every(), LoadWatch::default())
}

/// What a load tells as it goes (planning ahead waits on it: [`crate::engine::ahead`]).
#[derive(Default)]
pub struct LoadWatch {
    /// Called with each table as soon as it is known to get rows.
    pub on_table_rows: Option<Box<dyn Fn(&'static str) + Send>>,
}

impl LoadWatch {
    fn table_rows(&self, tables: impl IntoIterator<Item = (&'static str, usize)>) {
        if let Some(tell) = &self.on_table_rows {
            tables.into_iter().filter(|&(_, rows)| rows > 0).for_each(|(t, _)| tell(t));
        }
    }
}

/// [`load_tables`], with only the columns `read` reads of the tables that are built so
/// ([`tables::ColumnsRead`]), telling `watch` how the load goes.
pub fn load_tables_telling(
    input: &Path,
    run_id: &str,
    labels: &[(String, String)],
    read: ColumnsRead,
    watch: LoadWatch,
) -> Result<tables::RunTables, IngestError> {
    load_into(input, run_id, labels, MemorySink { deriver: Deriver::new(), tables: RunTables::default(), read, watch, every_event: false })
}

/// [`load_tables`] with every event in its `events` table (their typed columns; of their
/// args, those an analysis reads): what a trace export reads.
pub fn load_tables_with_every_event(input: &Path, run_id: &str) -> Result<tables::RunTables, IngestError> {
    let sink = MemorySink { deriver: Deriver::new(), tables: RunTables::default(), read: ColumnsRead::every(), watch: LoadWatch::default(), every_event: true };
    load_into(input, run_id, &[], sink)
}

fn load_into(input: &Path, run_id: &str, labels: &[(String, String)], mut sink: MemorySink) -> Result<tables::RunTables, IngestError> {
    let mut clock = std::time::Instant::now();
    progress(&format!("profq: decoding {}", input.display()));
    let resolved = resolve(input)?;
    let loaded = decode::load_parts(&resolved, &mut sink)?;
    let info = RunInfo {
        run_id: run_id.to_string(),
        source_path: input.display().to_string(),
        trace_sha256: loaded.trace_sha256.clone(),
        labels: labels.to_vec(),
        ingested_at_ns: now_ns(),
    };
    let run = tables::run_tables(&loaded.capture, sink.deriver.finish(), &info).map_err(|e| IngestError::Store(format!("building tables: {e}")))?;
    sink.tables.append(run);
    stage_done("decode and tables", &mut clock);
    progress("");
    Ok(sink.tables)
}

/// Derives each part's tables in memory; of `events`, only the events of interest unless
/// `every_event`.
struct MemorySink {
    deriver: Deriver,
    tables: RunTables,
    read: ColumnsRead,
    watch: LoadWatch,
    every_event: bool,
}

impl PartSink for MemorySink {
    type Error = String;
    fn part(&mut self, capture: &mut Capture) -> Result<(), String> {
        let mut clock = std::time::Instant::now();
        let ids = tables::derive::pool_ids(&capture.strings);
        let first_event_id = self.deriver.next_event_id();
        let part = self.deriver.part(capture, &ids);
        let events = if self.every_event {
            tables::events_batches(capture, first_event_id)
        } else {
            tables::events_of_interest::events_batches(capture, first_event_id)
        };
        let events = events.map_err(|e| format!("building events: {e}"))?;
        stage_done("  part derive", &mut clock);
        // Told before the tables are built, so that statements waiting on them are planned meanwhile.
        self.watch.table_rows(part.table_rows().into_iter().chain([("events", events.iter().map(|b| b.num_rows()).sum())]));
        // The part's events are summed up now: free them before the tables are built, which
        // is when memory peaks, and give their pages back (the tables' columns are smaller).
        capture.chunks = Vec::new();
        crate::process::freed_for_good();
        self.tables.append(RunTables::new(vec![("events", events)]));
        self.tables.append(tables::part_tables(capture, &part, &self.read).map_err(|e| format!("building tables: {e}"))?);
        stage_done("  part tables", &mut clock);
        Ok(())
    }
    fn args_kept(&self) -> Option<ArgsKept> {
        Some(ArgsKept { keys: tables::derive::reads_arg, every_arg_of: tables::events_of_interest::keeps_every_arg })
    }
    fn prepare_part(&self) -> Option<fn(&mut Capture)> {
        Some(intern_derived_strings)
    }
    fn overlaps_decode(&self) -> bool {
        true
    }
    fn restart(&mut self) -> Result<(), String> {
        self.deriver = Deriver::new();
        self.tables = RunTables::default();
        Ok(())
    }
}

/// Interns what the derivation of a part looks up by value, on the decoding thread.
fn intern_derived_strings(capture: &mut Capture) {
    tables::derive::prepare_strings(capture);
}

/// Writes each part's tables into a staging directory as it is decoded, so that memory
/// holds one part at a time. Refuses the run when its trace is already in the store.
struct StagingSink<'a> {
    store: &'a Store,
    /// The store the run goes into (where its trace is looked for).
    location: &'a Location,
    staged: Option<Staged>,
    provisional: String,
    deriver: Deriver,
    force: bool,
    /// The run already in the store under this trace (the ingest is then a no-op).
    already_present: Option<String>,
    events: usize,
    ops: usize,
    /// When decoding began (the pace the progress line's time left is reckoned from).
    started: std::time::Instant,
}

impl StagingSink<'_> {
    fn staged(&mut self) -> Result<&Staged, String> {
        if self.staged.is_none() {
            self.staged = Some(self.store.new_staging(&self.provisional)?);
        }
        Ok(self.staged.as_ref().expect("just staged"))
    }
}

impl PartSink for StagingSink<'_> {
    type Error = String;
    fn identifies_first(&self) -> bool {
        true
    }
    fn identified(&mut self, trace_sha256: &str) -> Result<(), String> {
        if !self.force {
            let mut clock = std::time::Instant::now();
            let existing = find_by_sha(self.location, trace_sha256)?;
            crate::timing::stage_done("store lookup by sha256", &mut clock);
            if let Some(existing) = existing {
                self.already_present = Some(existing);
                return Err("already present".into());
            }
        }
        Ok(())
    }
    fn prepare_part(&self) -> Option<fn(&mut Capture)> {
        Some(intern_derived_strings)
    }
    fn progress(&mut self, told: &decode::LoadProgress) {
        progress(&progress_line(told, self.started.elapsed()));
    }
    fn part(&mut self, capture: &mut Capture) -> Result<(), String> {
        let ids = tables::derive::pool_ids(&capture.strings);
        let capture = &*capture;
        let first_event_id = self.deriver.next_event_id();
        let store = self.store;
        self.staged()?;
        let staged = self.staged.as_ref().expect("staged above");
        let deriver = &mut self.deriver;
        // The events table (most of the bytes) is built and written while the part's ops are
        // derived here and written beside. Tables without rows here write no file (each table
        // gets at least one when the run is finished).
        let (events, ops) = std::thread::scope(|s| -> Result<(usize, usize), String> {
            let events = s.spawn(|| -> Result<usize, String> {
                let mut clock = std::time::Instant::now();
                let rows = write_events(capture, first_event_id, staged)?;
                stage_done("  part events", &mut clock);
                Ok(rows)
            });
            let mut clock = std::time::Instant::now();
            // `ops` is written from its columns, a slice of ops at a time, on a thread of its
            // own as soon as the ops are final, while the rest of the part is derived here.
            let write_ops: derive::WithOps = Box::new(|ops, named| {
                let mut columns = OpColumns::with_capacity(ops.len().min(tables::DERIVED_SLICE_ROWS));
                write_in_slices(staged, "ops", ops, |writer, slice| {
                    columns.refill(slice);
                    writer.write_rows(slice.len(), &columns.rows(capture, named))
                })
            });
            // `gaps` too, as soon as the part's gaps are found.
            let write_gaps: derive::WithGaps = Box::new(|gaps, ops, named| write_gaps_table(staged, capture, gaps, |k| &ops[k], named));
            let (part, handed) = deriver.part_with(capture, &ids, Some((write_ops, write_gaps)));
            stage_done("  part derive", &mut clock);
            let handed = handed.expect("rows handed over");
            handed.ops?;
            let part = &part;
            match handed.gaps {
                Some(written) => written?,
                None => write_gaps_table(staged, capture, &part.gaps, |k| part.op(k), &part.strings.values)?,
            }
            let mut others = tables::part_small_tables(capture, part).map_err(|e| format!("building tables: {e}"))?;
            others.tables.retain(|(_, batches)| batches.iter().any(|b| b.num_rows() > 0));
            store.write_tables(staged, &others.tables)?;
            stage_done("  part tables written", &mut clock);
            Ok((events.join().map_err(|_| "events writer panicked".to_string())??, part.ops.len()))
        })?;
        self.events += events;
        self.ops += ops;
        Ok(())
    }
    fn restart(&mut self) -> Result<(), String> {
        if let Some(s) = self.staged.take() {
            s.discard();
        }
        self.deriver = Deriver::new();
        self.events = 0;
        self.ops = 0;
        Ok(())
    }
}

/// Writes a part's rows of `table` (`ops`, `gaps`) as one part file, a slice of
/// [`tables::DERIVED_SLICE_ROWS`] at a time: `write` copies a slice into its columns and writes
/// them, so that only a slice is copied out of the part's rows at once.
fn write_in_slices<T>(
    staged: &Staged,
    table: &str,
    rows: &[T],
    mut write: impl FnMut(&mut store::PartWriter, &[T]) -> Result<(), String>,
) -> Result<(), String> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut writers = store::PartWriter::next_parts(staged, table, 1)?;
    let mut writer = writers.pop().expect("one writer asked for");
    for slice in rows.chunks(tables::DERIVED_SLICE_ROWS) {
        write(&mut writer, slice)?;
    }
    writer.finish()
}

/// Writes a part's `gaps` rows ([`write_in_slices`]): `op` gives the ops they refer to by
/// index, `locals` the strings of [`derive::PartDerived::strings`] those name.
fn write_gaps_table<'o>(
    staged: &Staged,
    capture: &Capture,
    gaps: &[derive::Gap],
    op: impl Fn(usize) -> &'o derive::Op,
    locals: &dyn tables::columns::Strings,
) -> Result<(), String> {
    let mut columns = GapColumns::with_capacity(gaps.len().min(tables::DERIVED_SLICE_ROWS));
    write_in_slices(staged, "gaps", gaps, |writer, slice| {
        columns.refill_from(&op, slice);
        writer.write_rows(slice.len(), &columns.rows_naming(capture, locals))
    })
}

/// Builds and writes the part's `events` table a slice at a time, so that only a few slices'
/// batches exist at once: one part file per core, each a contiguous run of slices written
/// by its own thread. Returns the rows written.
fn write_events(capture: &Capture, first_event_id: i64, staged: &Staged) -> Result<usize, String> {
    let slices = tables::event_slices(capture, first_event_id, tables::EVENT_SLICE_ROWS);
    let rows: usize = slices.iter().map(|s| s.rows.len()).sum();
    if rows == 0 {
        return Ok(0);
    }
    let files = store::part_files(rows, slices.len());
    let runs: Vec<_> = slices.chunks(slices.len().div_ceil(files)).collect();
    let writers: Vec<store::PartWriter> = store::PartWriter::next_parts(staged, "events", runs.len())?;
    std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .into_iter()
            .zip(writers)
            .map(|(run, mut writer)| {
                s.spawn(move || -> Result<(), String> {
                    let mut rows = tables::EventRows::default();
                    for slice in run {
                        writer.write_rows(slice.rows.len(), &rows.of(capture, slice))?;
                    }
                    writer.finish()
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|_| Err("events writer panicked".into())))
    })?;
    Ok(rows)
}

pub fn ingest(input: &Path, opts: &IngestOptions) -> Result<Outcome, IngestError> {
    if let Some(id) = &opts.run_id {
        store::validate_run_id(id).map_err(IngestError::Usage)?;
    }
    for (k, v) in &opts.labels {
        if k.is_empty() || k.chars().chain(v.chars()).any(|c| c.is_control()) {
            return Err(IngestError::Usage(format!("invalid label {k:?}={v:?}: keys must be non-empty, no control characters")));
        }
    }
    let mut clock = std::time::Instant::now();
    progress(&format!("profq: decoding {}", input.display()));
    let resolved = resolve(input)?;
    let target = Committer::open(&opts.store).map_err(IngestError::Store)?;
    let store = target.staging_store();
    let provisional = opts.run_id.clone().unwrap_or_else(|| store::sanitize_run_id(&resolved.name_hint));
    let mut sink = StagingSink {
        store: &store,
        location: &opts.store,
        staged: None,
        provisional: provisional.clone(),
        deriver: Deriver::new(),
        force: opts.force,
        already_present: None,
        events: 0,
        ops: 0,
        started: std::time::Instant::now(),
    };
    let loaded = decode::load_parts(&resolved, &mut sink);
    if let Some(existing) = sink.already_present.take() {
        sink.restart().ok();
        progress("");
        return Ok(Outcome::AlreadyPresent { run_id: existing });
    }
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            sink.restart().ok();
            progress("");
            return Err(e.into());
        }
    };
    stage_done("decode, tables and parquet", &mut clock);
    let info = RunInfo {
        run_id: provisional.clone(),
        source_path: input.display().to_string(),
        trace_sha256: loaded.trace_sha256.clone(),
        labels: opts.labels.clone(),
        ingested_at_ns: now_ns(),
    };
    let (events, ops) = (sink.events, sink.ops);
    let derived = std::mem::take(&mut sink.deriver).finish();
    let warnings = derived.quality_warnings(&loaded.capture.meta);
    let written = tables::run_tables(&loaded.capture, derived, &info).map_err(|e| format!("building tables: {e}")).and_then(|mut run| {
        let steps = run.rows("steps");
        let staged = sink.staged()?;
        for table in tables::schema::TABLES {
            if !staged.has_parts(table.name) && run.get(table.name).is_none() {
                run.tables.push((table.name, Vec::new()));
            }
        }
        store.write_tables(staged, &run.tables)?;
        Ok(steps)
    });
    let staged = sink.staged.take();
    let (steps, staged) = match (written, staged) {
        (Ok(steps), Some(staged)) => (steps, staged),
        (Err(e), staged) => {
            if let Some(s) = staged {
                s.discard();
            }
            return Err(IngestError::Store(e));
        }
        (Ok(_), None) => return Err(IngestError::Store("nothing was staged".into())),
    };
    stage_done("run tables", &mut clock);
    progress(&format!("profq: committing to {}", opts.store));
    let committed = commit(&target, staged, &loaded.trace_sha256, opts);
    progress("");
    committed.map(|run_id| match run_id {
        Committed::New(run_id) => Outcome::Ingested { run_id, events, ops, steps, warnings },
        Committed::AlreadyPresent(run_id) => Outcome::AlreadyPresent { run_id },
    })
}

/// What a commit did: made a new run, or found the trace already stored.
enum Committed {
    New(String),
    AlreadyPresent(String),
}

/// Commits a staged run under the store's lock: cleans up after killed writers, refuses a
/// trace already stored (unless forced: then it replaces it), picks the run id and commits.
/// The staged copy is gone afterwards, whatever happened.
fn commit(target: &Committer, staged: Staged, sha: &str, opts: &IngestOptions) -> Result<Committed, IngestError> {
    let decided = target.lock().map_err(IngestError::Store).and_then(|lock| Ok((lock, decide(target, &staged.run_id, sha, opts)?)));
    match decided {
        Ok((_lock, Committed::New(run_id))) => {
            target.commit(staged, &run_id).map_err(IngestError::Store)?;
            Ok(Committed::New(run_id))
        }
        Ok((_lock, present)) => {
            staged.discard();
            Ok(present)
        }
        Err(e) => {
            staged.discard();
            Err(e)
        }
    }
}

/// With the lock held: the run id a staged run (named `provisional`) is committed under, or
/// the run already holding its trace. Removes what killed writers left, and what `--force`
/// replaces.
fn decide(target: &Committer, provisional: &str, sha: &str, opts: &IngestOptions) -> Result<Committed, IngestError> {
    let store_err = IngestError::Store;
    target.clean_up().map_err(store_err)?;
    let existing = find_by_sha(&opts.store, sha).map_err(store_err)?;
    if let (Some(existing), false) = (&existing, opts.force) {
        return Ok(Committed::AlreadyPresent(existing.clone()));
    }
    let run_id = match &opts.run_id {
        Some(id) if !opts.force && target.run_exists(id).map_err(store_err)? => {
            return Err(IngestError::Usage(format!("run id {id:?} already exists in {} (use --force to replace it)", opts.store)));
        }
        Some(id) => id.clone(),
        None => {
            let mut id = provisional.to_string();
            let mut k = 2;
            while target.run_exists(&id).map_err(store_err)? {
                id = format!("{provisional}-{k}");
                k += 1;
            }
            id
        }
    };
    if opts.force {
        for replaced in existing.iter().chain([&run_id]) {
            if target.run_exists(replaced).map_err(store_err)? {
                target.remove_run(replaced).map_err(store_err)?;
            }
        }
    }
    Ok(Committed::New(run_id))
}
