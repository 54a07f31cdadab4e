//! Ingest: one INPUT → decode → tables → a committed run in the store.

use crate::decode::{self, InputError};
use crate::store::{self, Store};
use crate::tables::{self, RunInfo};
use crate::timing::stage_done;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

pub struct IngestOptions {
    pub store_root: PathBuf,
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

fn progress(msg: &str) {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K{msg}");
        if msg.is_empty() {
            eprint!("\r");
        }
    }
}

/// Decodes an INPUT into its tables without touching a store (also used by in-memory analyses).
pub fn load_tables(input: &Path, run_id: &str, labels: &[(String, String)]) -> Result<tables::RunTables, IngestError> {
    let (mut loaded, _) = load(input)?;
    let info = RunInfo {
        run_id: run_id.to_string(),
        source_path: input.display().to_string(),
        trace_sha256: loaded.trace_sha256.clone(),
        labels: labels.to_vec(),
        ingested_at_ns: now_ns(),
    };
    let built = tables::build(&mut loaded.capture, &info).map_err(|e| IngestError::Store(format!("building tables: {e}")));
    progress("");
    built
}

fn load(input: &Path) -> Result<(decode::Loaded, String), IngestError> {
    progress(&format!("profq: decoding {}", input.display()));
    let resolved = decode::resolve(input).map_err(IngestError::Input)?;
    let loaded = decode::load(&resolved).map_err(IngestError::Input)?;
    Ok((loaded, resolved.name_hint))
}

fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
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
    let (mut loaded, name_hint) = load(input)?;
    stage_done("decode", &mut clock);
    let store = Store::open(&opts.store_root);
    let store_err = |e: std::io::Error| IngestError::Store(format!("{}: {e}", opts.store_root.display()));

    // Cheap check before the work; repeated under the lock below.
    if !opts.force {
        if let Some(existing) = store.find_by_sha(&loaded.trace_sha256) {
            progress("");
            return Ok(Outcome::AlreadyPresent { run_id: existing });
        }
    }
    let provisional = opts.run_id.clone().unwrap_or_else(|| store::sanitize_run_id(&name_hint));
    let info = RunInfo {
        run_id: provisional.clone(),
        source_path: input.display().to_string(),
        trace_sha256: loaded.trace_sha256.clone(),
        labels: opts.labels.clone(),
        ingested_at_ns: now_ns(),
    };
    progress(&format!("profq: building tables ({} events)", loaded.capture.num_events()));
    let staged = store.new_staging(&provisional).map_err(IngestError::Store)?;
    // The events table (most of the bytes) is built and written while the other tables are
    // derived: the two need only read the capture once its strings are prepared.
    let ids = tables::derive::prepare_strings(&mut loaded.capture);
    let capture = &loaded.capture;
    let written: Result<(usize, usize, usize), String> = std::thread::scope(|s| {
        let events = s.spawn(|| -> Result<usize, String> {
            let mut clock = std::time::Instant::now();
            let batches = tables::events_batches(capture).map_err(|e| format!("building events: {e}"))?;
            stage_done("  events batches", &mut clock);
            let rows = batches.iter().map(|b| b.num_rows()).sum();
            store.write_tables(&staged, &[("events", batches)])?;
            stage_done("  events parquet", &mut clock);
            Ok(rows)
        });
        let mut clock = std::time::Instant::now();
        let derived = tables::derive::derive(capture, &ids);
        stage_done("  derive", &mut clock);
        let others = tables::derived_tables(capture, &derived, &info).map_err(|e| format!("building tables: {e}"))?;
        stage_done("  derived batches", &mut clock);
        store.write_tables(&staged, &others.tables)?;
        stage_done("  derived parquet", &mut clock);
        let events = events.join().map_err(|_| "events writer panicked".to_string())??;
        Ok((events, others.rows("ops"), others.rows("steps")))
    });
    let (events, ops, steps) = match written {
        Ok(counts) => counts,
        Err(e) => {
            staged.discard();
            return Err(IngestError::Store(e));
        }
    };
    stage_done("tables and parquet", &mut clock);

    let _lock = store.lock().map_err(store_err)?;
    store.clean_up();
    if !opts.force {
        if let Some(existing) = store.find_by_sha(&loaded.trace_sha256) {
            staged.discard();
            progress("");
            return Ok(Outcome::AlreadyPresent { run_id: existing });
        }
    }
    let run_id = match &opts.run_id {
        Some(id) if store.run_exists(id) && !opts.force => {
            staged.discard();
            return Err(IngestError::Usage(format!("run id {id:?} already exists in {} (use --force to replace it)", opts.store_root.display())));
        }
        Some(id) => id.clone(),
        None => {
            let mut id = provisional.clone();
            let mut k = 2;
            while store.run_exists(&id) {
                id = format!("{provisional}-{k}");
                k += 1;
            }
            id
        }
    };
    if opts.force {
        if let Some(existing) = store.find_by_sha(&loaded.trace_sha256) {
            store.remove_run(&existing).map_err(store_err)?;
        }
        if store.run_exists(&run_id) {
            store.remove_run(&run_id).map_err(store_err)?;
        }
    }
    let committed = store.commit(&staged, &run_id);
    if let Err(e) = committed {
        let _ = store.remove_run(&run_id);
        staged.discard();
        return Err(IngestError::Store(e));
    }
    progress("");
    Ok(Outcome::Ingested { run_id, events, ops, steps, warnings: loaded.capture.meta.quality_warnings.clone() })
}
