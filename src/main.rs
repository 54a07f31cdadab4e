//! The `profq` command line: parse arguments, call the library, print.
//!
//! Exit codes: 0 success; 1 internal error; 2 usage error (bad arguments, run id, label);
//! 3 bad input (missing, unreadable, corrupt or not a profile); 4 store or query error
//! (including SQL refused as not read-only).

use clap::{Parser, Subcommand};
use profq::engine::Engine;
use profq::ingest::{self, IngestError, IngestOptions, Outcome};
use profq::render::{self, Format};
use profq::tables::schema;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "profq", version, about = "Columnar analytics for ML training profiles (XPlane, Chrome/Perfetto/Kineto trace JSON)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode profiles and add them to the store as runs (one run per INPUT).
    Ingest {
        /// Profile log dirs, session dirs, *.xplane.pb or trace JSON (.json, .json.gz).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Store directory [default: $PROFQ_STORE, else ./profq-store].
        #[arg(long)]
        store: Option<PathBuf>,
        /// Run id (default: derived from the path, made unique).
        #[arg(long)]
        run_id: Option<String>,
        /// KEY=VALUE label attached to the run (repeatable).
        #[arg(long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// Re-ingest even if the same trace (sha256) is already in the store, replacing it.
        #[arg(long)]
        force: bool,
    },
    /// Run a read-only SQL query over every table of the store (all runs).
    Sql {
        query: String,
        #[arg(long)]
        store: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Describe the tables (all, or one).
    Schema {
        table: Option<String>,
        /// Print docs/schema.md (Markdown for every table).
        #[arg(long)]
        markdown: bool,
    },
}

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("profq: {msg}");
    ExitCode::from(code)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Ingest { inputs, store, run_id, labels, force } => {
            if run_id.is_some() && inputs.len() > 1 {
                return fail(2, "--run-id names one run: give one INPUT with it");
            }
            let mut parsed = Vec::new();
            for l in &labels {
                match l.split_once('=') {
                    Some((k, v)) => parsed.push((k.to_string(), v.to_string())),
                    None => return fail(2, format!("--label {l:?}: expected KEY=VALUE")),
                }
            }
            let opts = IngestOptions { store_root: store.unwrap_or_else(profq::store::default_root), run_id, labels: parsed, force };
            for input in &inputs {
                match ingest::ingest(input, &opts) {
                    Ok(Outcome::Ingested { run_id, events, ops, steps, warnings }) => {
                        println!("ingested {run_id}: {events} events, {ops} ops, {steps} steps from {}", input.display());
                        for w in warnings {
                            eprintln!("profq: warning: {run_id}: {w}");
                        }
                    }
                    Ok(Outcome::AlreadyPresent { run_id }) => {
                        println!("unchanged {run_id}: {} is already in the store (same sha256; --force re-ingests)", input.display());
                    }
                    Err(e @ IngestError::Input(_)) => return fail(3, e),
                    Err(e @ IngestError::Usage(_)) => return fail(2, e),
                    Err(e @ IngestError::Store(_)) => return fail(4, e),
                }
            }
            ExitCode::SUCCESS
        }
        Command::Sql { query, store, format } => {
            let root = store.unwrap_or_else(profq::store::default_root);
            let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return fail(1, e),
            };
            let result = rt.block_on(async {
                let engine = Engine::open(&root).await?;
                engine.sql(&query).await
            });
            match result {
                Ok(batches) => {
                    print!("{}", render::render(&batches, format));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(4, e),
            }
        }
        Command::Schema { table, markdown } => {
            if markdown {
                print!("{}", schema::markdown());
                return ExitCode::SUCCESS;
            }
            match table {
                Some(name) => match schema::table(&name) {
                    Some(t) => print!("{}", schema::describe(t)),
                    None => {
                        let names: Vec<&str> = schema::TABLES.iter().map(|t| t.name).collect();
                        return fail(2, format!("no table {name:?}; tables: {}", names.join(", ")));
                    }
                },
                None => {
                    for (i, t) in schema::TABLES.iter().enumerate() {
                        if i > 0 {
                            println!();
                        }
                        print!("{}", schema::describe(t));
                    }
                }
            }
            ExitCode::SUCCESS
        }
    }
}
