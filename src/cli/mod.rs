//! The command line, in the order a command goes through it: `args` (what was asked),
//! `commands` (call the library, return what `profq::render` makes of the result), `exit`
//! (print it, and a failure's status). `mcp` serves the same commands as MCP tools.

pub mod args;
pub mod bundle;
pub mod commands;
pub mod exit;
pub mod mcp;
pub mod skills;

use args::Command;
use profq::process::Workload;

/// What the command does with memory ([`profq::process::tune`]): an ingest, an analysis of an
/// XPlane INPUT of so many bytes, or anything else.
pub fn workload(command: &Command) -> Workload {
    let input = match command {
        Command::Ingest { .. } => return Workload::Ingest,
        Command::Summarize { source, .. } | Command::Query { source, .. } | Command::Report { source, .. } | Command::Run { source, .. } => {
            source.input.as_deref()
        }
        _ => None,
    };
    let Some(resolved) = input.and_then(|p| profq::decode::resolve(p).ok()) else { return Workload::Other };
    let xplanes = resolved.files.iter().filter(|f| f.kind == profq::decode::SourceKind::XPlane);
    match xplanes.filter_map(|f| std::fs::metadata(&f.path).ok()).map(|m| m.len()).sum() {
        0 => Workload::Other,
        bytes => Workload::AnalysisOfXPlane { parts: bytes.div_ceil(profq::decode::part_bytes() as u64) },
    }
}
