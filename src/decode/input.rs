//! Input resolution: what an INPUT path names (a log dir's newest session, a session dir, one
//! XPlane, a trace JSON) and which files of it form the run, each with its kind and host.

use super::{input_err, File, InputError, Path, PathBuf, Read, Resolved, SourceFile, SourceKind};

pub(super) fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

pub fn kind_of_file(p: &Path) -> Option<SourceKind> {
    let n = file_name(p);
    if n.ends_with(".xplane.pb") {
        Some(SourceKind::XPlane)
    } else if n.ends_with(".json") || n.ends_with(".json.gz") {
        Some(SourceKind::TraceJson)
    } else if n.ends_with(".sqlite") {
        Some(SourceKind::Nsys)
    } else {
        None
    }
}

pub(super) fn host_of_file(p: &Path) -> String {
    let n = file_name(p);
    for suffix in [".xplane.pb", ".trace.json.gz", ".trace.json", ".json.gz", ".json", ".sqlite"] {
        if let Some(stem) = n.strip_suffix(suffix) {
            return stem.to_string();
        }
    }
    n
}

pub(super) fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let rd = std::fs::read_dir(dir).map_err(|e| input_err(dir, format!("cannot read directory: {e}")))?;
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort();
    Ok(v)
}

/// Names a profiler gives its files; other JSON in a directory (summaries, configs) is not a
/// trace. An Nsight Systems export may have any name: every `*.sqlite` is taken for one.
pub fn is_profiler_file(p: &Path) -> bool {
    let n = file_name(p);
    n.ends_with(".xplane.pb")
        || n.ends_with(".sqlite")
        || ["trace.json", "trace.json.gz"].iter().any(|s| n.ends_with(s))
        || n == "perfetto_trace.json.gz"
        || n == "perfetto_trace.json"
}

/// A local file that holds a trace: a profiler's file name ([`is_profiler_file`]), or any
/// other `*.json` / `*.json.gz` whose text starts as a trace does (a `schemaVersion` or
/// `traceEvents` key among its first bytes: Kineto writes them first), as the per-rank files of a
/// PyTorch job are often named (`rank-3.json.gz`). Summaries and configs beside them are not.
pub(super) fn is_trace_file(p: &Path) -> bool {
    is_profiler_file(p) || (kind_of_file(p) == Some(SourceKind::TraceJson) && starts_as_trace(p))
}

fn starts_as_trace(p: &Path) -> bool {
    const HEAD: u64 = 4096;
    let Ok(file) = File::open(p) else { return false };
    let mut head = Vec::new();
    // A read that fails part way (a gzip cut short) still leaves the bytes it gave.
    let _ = if file_name(p).ends_with(".gz") {
        flate2::read::MultiGzDecoder::new(file).take(HEAD).read_to_end(&mut head)
    } else {
        file.take(HEAD).read_to_end(&mut head)
    };
    let text = String::from_utf8_lossy(&head);
    // As keys (followed by `:`), not as words a summary of a trace lists.
    let is_key = |key: &str| text.match_indices(key).any(|(at, k)| text[at + k.len()..].trim_start().starts_with(':'));
    is_key("\"schemaVersion\"") || is_key("\"traceEvents\"")
}

/// How many directory levels below an INPUT its profile sessions are looked for.
pub const SESSION_DEPTH: usize = 6;

/// Why a directory (or a bucket prefix) is not a profile.
pub const NO_PROFILE: &str = "no profile found (no *.xplane.pb, trace JSON or Nsight Systems *.sqlite export under this directory)";

/// The session an INPUT above several means, and a note saying so when there was a choice.
pub struct ChosenSession<'a> {
    pub session: &'a PathBuf,
    pub note: Option<String>,
}

/// Which of the directories holding profiler files (`sessions`) an INPUT means: those under
/// `plugins/profile/` when there are any, of them those with an XPlane when there are any,
/// and of those the newest (session directories are timestamps, which sort by name). One
/// rule for a local directory and a bucket prefix alike.
pub fn choose_session(sessions: &[PathBuf], has_xplane: impl Fn(&Path) -> bool) -> Option<ChosenSession<'_>> {
    let profile_sessions: Vec<&PathBuf> = sessions.iter().filter(|s| s.components().any(|c| c.as_os_str() == "plugins")).collect();
    let candidates: Vec<&PathBuf> = if profile_sessions.is_empty() { sessions.iter().collect() } else { profile_sessions };
    let with_xplane: Vec<&PathBuf> = candidates.iter().copied().filter(|d| has_xplane(d)).collect();
    let candidates = if with_xplane.is_empty() { candidates } else { with_xplane };
    let session = *candidates.iter().max_by_key(|s| file_name(s))?;
    let note = (candidates.len() > 1).then(|| format!("{} profile sessions found; using the newest, {}", candidates.len(), file_name(session)));
    Some(ChosenSession { session, note })
}

/// Directories under `root` (itself included) that directly hold profiler files, depth-limited.
pub(super) fn session_dirs(root: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let entries = sorted_entries(root)?;
    if entries.iter().any(|p| p.is_file() && is_trace_file(p)) {
        out.push(root.to_path_buf());
    }
    if depth == 0 {
        return Ok(());
    }
    for e in entries {
        if e.is_dir() && !file_name(&e).starts_with('.') {
            session_dirs(&e, depth - 1, out)?;
        }
    }
    Ok(())
}

/// The log directory name a session belongs to (`<log_dir>/plugins/profile/<ts>` → `<log_dir>`).
/// Levanter and marin write into `<log_dir>/<run id>/profiler/`: a log dir named `profiler`
/// is named by its parent, the run.
pub(super) fn log_dir_name(session: &Path) -> String {
    let comps: Vec<String> = session.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if let Some(k) = comps.iter().rposition(|c| c == "plugins").filter(|&k| k > 0) {
        let named = if comps[k - 1] == "profiler" && k > 1 { k - 2 } else { k - 1 };
        return comps[named].clone();
    }
    file_name(session)
}

pub fn resolve(input: &Path) -> Result<Resolved, InputError> {
    let meta = std::fs::metadata(input).map_err(|e| input_err(input, format!("cannot open: {e}")))?;
    if meta.is_file() {
        if file_name(input).ends_with(".nsys-rep") || file_name(input).ends_with(".qdrep") {
            return Err(input_err(
                input,
                format!("an Nsight Systems report, which profq reads once exported: `{} {}`", super::nsys::EXPORT_HINT, input.display()),
            ));
        }
        let kind = kind_of_file(input)
            .or_else(|| sniff_kind(input))
            .ok_or_else(|| input_err(input, "not a profile: expected *.xplane.pb, *.json, *.json.gz or an Nsight Systems *.sqlite export"))?;
        let hint = match log_dir_name(input.parent().unwrap_or(Path::new(""))) {
            n if input.components().any(|c| c.as_os_str() == "plugins") => n,
            _ => host_of_file(input),
        };
        // A bare file name's parent is "", which names no directory: it lives in ".".
        let dir = input.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let hlo_files = if kind == SourceKind::XPlane { hlo_side_files(dir)? } else { vec![] };
        return Ok(Resolved {
            files: vec![SourceFile { path: input.to_path_buf(), kind, host: host_of_file(input) }],
            fallback: vec![],
            hlo_files,
            name_hint: hint,
            notes: vec![],
        });
    }
    let mut sessions = Vec::new();
    session_dirs(input, SESSION_DEPTH, &mut sessions)?;
    let has_xplane = |d: &Path| sorted_entries(d).is_ok_and(|e| e.iter().any(|p| kind_of_file(p) == Some(SourceKind::XPlane)));
    let Some(chosen) = choose_session(&sessions, has_xplane) else {
        return Err(input_err(input, NO_PROFILE));
    };
    let session = chosen.session.clone();
    let mut notes: Vec<String> = chosen.note.into_iter().collect();
    let entries = sorted_entries(&session)?;
    let xplanes: Vec<SourceFile> = entries
        .iter()
        .filter(|p| kind_of_file(p) == Some(SourceKind::XPlane))
        .map(|p| SourceFile { path: p.clone(), kind: SourceKind::XPlane, host: host_of_file(p) })
        .collect();
    // Per-host `<host>.trace.json.gz` carry the host name; perfetto_trace.json.gz is a copy of one of them.
    let per_host_json: Vec<SourceFile> = entries
        .iter()
        .filter(|p| is_trace_file(p) && kind_of_file(p) == Some(SourceKind::TraceJson) && !file_name(p).starts_with("perfetto_trace"))
        .map(|p| SourceFile { path: p.clone(), kind: SourceKind::TraceJson, host: host_of_file(p) })
        .collect();
    let perfetto: Vec<SourceFile> = entries
        .iter()
        .filter(|p| file_name(p).starts_with("perfetto_trace") && kind_of_file(p).is_some())
        .map(|p| SourceFile { path: p.clone(), kind: SourceKind::TraceJson, host: xplanes.first().map(|x| x.host.clone()).unwrap_or_else(|| "host".into()) })
        .take(1)
        .collect();
    let json = if per_host_json.is_empty() { perfetto } else { per_host_json };
    // Nsight Systems exports (one per process or rank), where the session has nothing else.
    let nsys: Vec<SourceFile> = entries
        .iter()
        .filter(|p| kind_of_file(p) == Some(SourceKind::Nsys))
        .map(|p| SourceFile { path: p.clone(), kind: SourceKind::Nsys, host: host_of_file(p) })
        .collect();
    let (files, fallback) = if !xplanes.is_empty() {
        (xplanes, json)
    } else if !json.is_empty() {
        notes.push("no *.xplane.pb in the session; read the trace JSON instead".into());
        (json, vec![])
    } else {
        (nsys, vec![])
    };
    Ok(Resolved { files, fallback, hlo_files: hlo_side_files(&session)?, name_hint: log_dir_name(&session), notes })
}

/// An HLO module a session keeps beside its XPlanes (names and metadata of the compiled ops).
pub fn is_hlo_side_file(p: &Path) -> bool {
    file_name(p).ends_with(".hlo_proto.pb")
}

pub(super) fn hlo_side_files(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    Ok(sorted_entries(dir)?.into_iter().filter(|p| is_hlo_side_file(p)).collect())
}

/// Guesses the kind of a file without a known extension from its first bytes.
pub(super) fn sniff_kind(p: &Path) -> Option<SourceKind> {
    let mut head = [0u8; 64];
    let n = File::open(p).ok()?.read(&mut head).ok()?;
    let head = &head[..n];
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some(SourceKind::TraceJson);
    }
    if super::nsys::is_sqlite(head) {
        return Some(SourceKind::Nsys);
    }
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') | Some(b'[') => Some(SourceKind::TraceJson),
        _ => None,
    }
}
