//! Decode: profile files and directories → one [`Capture`] per run.
//!
//! An INPUT is a profile log directory (`<log_dir>/.../plugins/profile/<timestamp>/`), a
//! session directory, an `*.xplane.pb`, a trace JSON (`.json`, `.json.gz`), or an Nsight
//! Systems SQLite export (`.sqlite`). All hosts'
//! files of one session form one run. XPlane is preferred; when it is missing or cannot be
//! decoded the session's trace JSON is used and the reason goes into the run's warnings.
//!
//! [`input`] resolves an INPUT to the run's files; [`load`] maps, hashes and decodes them part
//! by part into a [`PartSink`]; `wire`, `xplane`, `hlo`, `trace_json` and `nsys` read each
//! format.

pub mod hlo;
mod input;
mod load;
pub mod nsys;
pub mod trace_json;
pub mod wire;
pub mod xplane;

use crate::model::{ArgsKept, Capture, PlaneKind};
use input::file_name;
pub use input::{choose_session, is_hlo_side_file, is_profiler_file, kind_of_file, resolve, ChosenSession, NO_PROFILE, SESSION_DEPTH};
pub use load::{load, load_parts, LoadProgress, Loaded, PartSink};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    XPlane,
    TraceJson,
    /// Nsight Systems' SQLite export.
    Nsys,
}

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    pub kind: SourceKind,
    pub host: String,
}

/// What an INPUT resolves to.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Files of the chosen session (all XPlanes, or the trace JSONs).
    pub files: Vec<SourceFile>,
    /// Trace JSONs to fall back to when the XPlanes cannot be decoded.
    pub fallback: Vec<SourceFile>,
    /// `*.hlo_proto.pb` side files of the session.
    pub hlo_files: Vec<PathBuf>,
    /// A readable name for the run (the log directory name, or the file stem).
    pub name_hint: String,
    pub notes: Vec<String>,
}

/// An input problem, reported as one line: `<path>: <what>`.
#[derive(Debug)]
pub struct InputError {
    pub path: PathBuf,
    pub what: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

impl std::error::Error for InputError {}

fn input_err(path: &Path, what: impl Into<String>) -> InputError {
    InputError { path: path.to_path_buf(), what: what.into() }
}

/// Planes decoded together as one part, in bytes of XPlane: whole planes, so a plane larger
/// than this is a part alone. Bounds memory on huge profiles; `PROFQ_PART_BYTES` overrides it.
pub fn part_bytes() -> usize {
    std::env::var("PROFQ_PART_BYTES").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(32 << 20)
}

/// A part with fewer events than this never holds the decoder up (see [`load_parts`]).
const SMALL_PART_EVENTS: usize = 1 << 16;

/// Why a streamed load failed: the input, or the sink.
#[derive(Debug)]
pub enum LoadError<E> {
    Input(InputError),
    Sink(E),
}

impl<E> From<InputError> for LoadError<E> {
    fn from(e: InputError) -> Self {
        LoadError::Input(e)
    }
}
