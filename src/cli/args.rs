//! The command line's grammar: every subcommand, flag and default (clap derive). Nothing
//! here runs anything; `commands` does.

use clap::{Parser, Subcommand};
use profq::compare::{track::Thresholds, CompareOptions};
use profq::engine::Placement;
use profq::error::Error;
use profq::export::TraceFormat;
use profq::render::Format;
use profq::source::Source;
use profq::store::Location;
use profq::summary::{BreakdownMode, SummaryOptions};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "profq", version, about = "Columnar analytics for ML training profiles (XPlane, Chrome/Perfetto/Kineto trace JSON)")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Nsight Systems exports: the NVTX ranges whose name matches REGEX mark steps, numbered
    /// by its first capture group where that is a number, else in order from 0 [default:
    /// `ProfilerStep#N`, `step N`, a JAX step annotation].
    #[arg(long, global = true, value_name = "REGEX", value_parser = regex::Regex::new)]
    pub step_marker: Option<regex::Regex>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Decode profiles and add them to the store as runs (one run per INPUT).
    Ingest {
        /// Profile log dirs, session dirs, *.xplane.pb or trace JSON (.json, .json.gz); local
        /// paths or s3://bucket/prefix, gs://bucket/prefix.
        #[arg(required_unless_present = "run_target")]
        inputs: Vec<PathBuf>,
        /// A W&B run (ENTITY/PROJECT/RUN_ID, a wandb.ai run URL, or a bare id with --entity
        /// and --project): ingests the profile its trainer wrote (<log_dir>/<id>/profiler).
        #[arg(long, conflicts_with = "inputs")]
        run_target: Option<String>,
        /// W&B entity of a bare --run-target id.
        #[arg(long, requires = "run_target")]
        entity: Option<String>,
        /// W&B project of a bare --run-target id.
        #[arg(long, requires = "run_target")]
        project: Option<String>,
        /// Store: a directory, s3://bucket/prefix or gs://bucket/prefix [default: $PROFQ_STORE, else ./profq-store].
        #[arg(long, value_parser = Location::parse)]
        store: Option<Location>,
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
        #[arg(allow_hyphen_values = true)]
        query: String,
        /// Store: a directory, s3://bucket/prefix or gs://bucket/prefix [default: $PROFQ_STORE, else ./profq-store].
        #[arg(long, value_parser = Location::parse)]
        store: Option<Location>,
        #[command(flatten)]
        engine: EngineArgs,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// List the named analyses (queries/*.sql), or print one.
    Queries {
        name: Option<String>,
        /// text, or json: each analysis with its description and parameters.
        #[arg(long, value_enum, default_value = "text")]
        format: ListFormat,
    },
    /// The agent skill that teaches profq's workflow (skills/profq/SKILL.md).
    Skills {
        #[command(subcommand)]
        action: SkillsAction,
    },
    /// Serve the analyses to a coding agent over MCP (stdio): the tools summarize, query,
    /// run_query, sql, compare, list_queries, list_runs, report and export_trace, each the
    /// command of its name with `--format json`.
    Mcp {
        /// A result larger than this is written to a file, and the tool returns its path, its
        /// size and its first rows.
        #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
        max_result_bytes: usize,
        /// Where such results (and traces exported without an `output`) are written
        /// [default: profq-mcp in the temp dir].
        #[arg(long, value_name = "DIR")]
        spill_dir: Option<PathBuf>,
    },
    /// Run a named analysis on a run of the store or on a profile INPUT (decoded in memory).
    Run {
        name: String,
        #[command(flatten)]
        source: SourceArgs,
        /// KEY=VALUE query parameter (repeatable); see `profq queries NAME`.
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Build the profile_summary.v1 JSON of a run or of a profile INPUT (decoded in memory).
    Summarize {
        #[command(flatten)]
        source: SourceArgs,
        /// Write the JSON here and print only the path.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Steps with a smaller step number are warm-up.
        #[arg(long, default_value_t = 5)]
        warmup_steps: i64,
        #[arg(long, default_value_t = 25)]
        hot_op_limit: usize,
        #[arg(long, value_enum, default_value = "exclusive_per_track")]
        breakdown_mode: BreakdownMode,
    },
    /// Answer a question about a run ("what are the top ops?", "is comm dominating?", ...).
    Query {
        question: String,
        #[command(flatten)]
        source: SourceArgs,
        /// A profile_summary.v1 JSON to answer from.
        #[arg(long)]
        summary: Option<PathBuf>,
        #[arg(long, default_value_t = 10)]
        top_k: usize,
        #[arg(long, value_enum, default_value = "json")]
        format: AnswerFormat,
        /// Also print the SQL of the named queries behind the answer.
        #[arg(long)]
        show_sql: bool,
    },
    /// Root-cause report of a run, a profile INPUT or a summary JSON (markdown, or a
    /// self-contained HTML page with charts); with --trends, the trends of every run of the store.
    Report {
        #[command(flatten)]
        source: SourceArgs,
        #[arg(long)]
        summary: Option<PathBuf>,
        /// Write the report here and print only the path (a name ending in .html means --format html).
        #[arg(long)]
        output: Option<PathBuf>,
        #[arg(long, default_value_t = 10)]
        top_k: usize,
        /// md, or html [default: html when --output ends in .html, else md].
        #[arg(long, value_enum)]
        format: Option<ReportFormat>,
        /// Trends across every run of the store (step time, communication share, top ops).
        #[arg(long, conflicts_with_all = ["input", "run", "summary"])]
        trends: bool,
    },
    /// Compare two runs: X is a store run id, a profile INPUT or a profile_summary.v1 file.
    Compare {
        #[command(flatten)]
        pair: PairArgs,
        #[arg(long, value_enum, default_value = "json")]
        format: CompareFormat,
        /// Write the result here and print only the path.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Compare and assess: a pass/warn/fail record, appended to a JSONL history.
    Track {
        #[command(flatten)]
        pair: PairArgs,
        #[arg(long)]
        label: Option<String>,
        #[arg(long)]
        history: Option<PathBuf>,
        #[arg(long)]
        output: Option<PathBuf>,
        #[command(flatten)]
        thresholds: ThresholdArgs,
    },
    /// Summarize a JSONL regression history.
    History {
        #[arg(long)]
        history: PathBuf,
        #[arg(long, default_value_t = 20)]
        tail: usize,
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Summaries, comparison, track record and reports of a before/after pair, in one folder.
    Bundle {
        #[command(flatten)]
        pair: PairArgs,
        #[arg(long)]
        output_dir: PathBuf,
        #[arg(long)]
        history: Option<PathBuf>,
        #[arg(long)]
        label: Option<String>,
        /// Write the manifest here and print only the path.
        #[arg(long)]
        output: Option<PathBuf>,
        #[command(flatten)]
        thresholds: ThresholdArgs,
    },
    /// Publish a summary (and its report) to W&B as a `profile_summary` artifact.
    Publish {
        /// A profile_summary.v1 file.
        summary: PathBuf,
        /// A markdown report to publish beside it.
        #[arg(long)]
        report: Option<PathBuf>,
        /// W&B entity [default: $WANDB_ENTITY].
        #[arg(long)]
        entity: Option<String>,
        /// W&B project [default: $WANDB_PROJECT].
        #[arg(long)]
        project: Option<String>,
        /// [default: profile-summary-<run id>, else profile-summary-<UTC time>].
        #[arg(long)]
        artifact_name: Option<String>,
        /// Artifact alias (repeatable) [default: latest].
        #[arg(long = "alias")]
        aliases: Vec<String>,
        /// Print what would be published; publish nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Export a window of a run (a step, steps, the representative step or a time range) as a
    /// trace for the Perfetto UI, with profq's steps, regions, gaps and collectives as tracks.
    ExportTrace {
        #[command(flatten)]
        source: SourceArgs,
        /// The trace file (.pftrace; .gz compresses it).
        #[arg(long)]
        output: PathBuf,
        /// One step.
        #[arg(long, group = "window")]
        step: Option<i64>,
        /// Steps A..B (both included).
        #[arg(long, group = "window", value_name = "A..B")]
        steps: Option<String>,
        /// The representative step of the summary (the default).
        #[arg(long, group = "window")]
        representative: bool,
        /// Window start, ns since the run start (with --to-ns).
        #[arg(long, group = "window", requires = "to_ns")]
        from_ns: Option<i64>,
        /// Window end, ns since the run start.
        #[arg(long, requires = "from_ns")]
        to_ns: Option<i64>,
        /// Hosts to export (comma-separated) [default: all].
        #[arg(long, value_delimiter = ',')]
        hosts: Vec<String>,
        /// Events written at most; past it the window is cut and marked "truncated".
        #[arg(long, default_value_t = 1_000_000)]
        max_events: usize,
        #[arg(long, value_enum, default_value = "perfetto")]
        format: TraceFormat,
        /// Steps with a smaller number are warm-up (for --representative).
        #[arg(long, default_value_t = 5)]
        warmup_steps: i64,
    },
    /// Run a role of a Ballista cluster that runs profq's SQL over a store (`--engine
    /// ballista`); needs a profq built with `--features ballista`.
    Ballista {
        #[command(subcommand)]
        role: BallistaRole,
    },
    /// Describe the tables (all, or one).
    Schema {
        table: Option<String>,
        /// Print docs/schema.md (Markdown for every table).
        #[arg(long)]
        markdown: bool,
    },
}

/// The roles of a Ballista cluster (docs/distributed.md). Their ports are unauthenticated:
/// bind them to a private network.
#[derive(Subcommand, Clone, Debug)]
pub enum BallistaRole {
    /// The scheduler: plans each statement into stages and hands their tasks to executors.
    Scheduler {
        /// Address to listen on, for clients and executors.
        #[arg(long, default_value = "127.0.0.1:50050")]
        bind: SocketAddr,
        /// The name executors and clients reach it by [default: the bind address].
        #[arg(long)]
        external_host: Option<String>,
        /// Seconds without a heartbeat after which an executor is dead and its tasks run
        /// again on the others.
        #[arg(long, default_value_t = 30)]
        executor_timeout: u64,
    },
    /// An executor: runs tasks, and serves their shuffle output to the other executors.
    Executor {
        /// The scheduler, HOST:PORT.
        #[arg(long)]
        scheduler: String,
        /// Address to serve shuffle output on (Arrow Flight).
        #[arg(long, default_value = "127.0.0.1:50051")]
        bind: SocketAddr,
        /// Port the scheduler sends tasks to [default: the bind port + 1].
        #[arg(long)]
        grpc_port: Option<u16>,
        /// The name the scheduler and other executors reach it by [default: the address
        /// its connection to the scheduler comes from].
        #[arg(long)]
        external_host: Option<String>,
        /// Shuffle and spill files [default: a directory under the system's temporary one].
        #[arg(long)]
        work_dir: Option<PathBuf>,
        /// Tasks run at once [default: the cores].
        #[arg(long, default_value_t = 0)]
        concurrent_tasks: usize,
        /// Seconds between heartbeats to the scheduler.
        #[arg(long, default_value_t = 5)]
        heartbeat: u64,
    },
}

/// Where the SQL over a store runs.
#[derive(clap::Args, Clone, Debug)]
pub struct EngineArgs {
    /// local: in this process; ballista: on the cluster of --scheduler (a store's runs
    /// only, not an INPUT).
    #[arg(long, value_enum, default_value = "local")]
    pub engine: EngineKind,
    /// The Ballista scheduler, df://HOST:PORT [default: $PROFQ_SCHEDULER].
    #[arg(long, value_parser = parse_scheduler)]
    pub scheduler: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    Local,
    Ballista,
}

impl EngineArgs {
    /// Where the store's SQL runs, as the flags (or `PROFQ_SCHEDULER`) say.
    pub fn placement(&self) -> Result<Placement, Error> {
        match self.engine {
            EngineKind::Local => Ok(Placement::Here),
            EngineKind::Ballista => {
                let scheduler = match &self.scheduler {
                    Some(s) => s.clone(),
                    None => match std::env::var("PROFQ_SCHEDULER") {
                        Ok(s) if !s.is_empty() => parse_scheduler(&s).map_err(|e| Error::usage(format!("PROFQ_SCHEDULER: {e}")))?,
                        _ => return Err(Error::usage("--engine ballista needs --scheduler df://HOST:PORT (or PROFQ_SCHEDULER)")),
                    },
                };
                Ok(Placement::Cluster { scheduler })
            }
        }
    }
}

/// A scheduler address as given, once it reads as `df://HOST[:PORT]`.
fn parse_scheduler(text: &str) -> Result<String, String> {
    profq::engine::scheduler_address(text).map(|_| text.to_string())
}

/// The two sides of a comparison and how to compare them.
#[derive(clap::Args, Clone, Debug)]
pub struct PairArgs {
    /// Baseline: a store run id, a profile INPUT or a profile_summary.v1 file.
    #[arg(long)]
    pub before: String,
    /// Candidate, as --before.
    #[arg(long)]
    pub after: String,
    /// Store: a directory, s3://bucket/prefix or gs://bucket/prefix [default: $PROFQ_STORE, else ./profq-store].
    #[arg(long, value_parser = Location::parse)]
    pub store: Option<Location>,
    #[arg(long, default_value_t = 10)]
    pub top_k: usize,
    /// Exit 5 when the provenance checks fail (e.g. the same trace twice).
    #[arg(long)]
    pub strict_provenance: bool,
    #[arg(long, default_value_t = 5)]
    pub warmup_steps: i64,
    #[command(flatten)]
    pub wandb: WandbArgs,
}

impl PairArgs {
    pub fn store(&self) -> Result<Location, Error> {
        store_or_default(&self.store)
    }
    pub fn options(&self) -> CompareOptions {
        CompareOptions {
            top_k: self.top_k,
            summary: SummaryOptions { warmup_steps: self.warmup_steps, hot_op_limit: self.top_k.max(25), ..SummaryOptions::default() },
        }
    }
}

/// Where an analysis reads its run: a profile INPUT (decoded in memory) or `--run ID` of a store.
#[derive(clap::Args, Clone, Debug)]
pub struct SourceArgs {
    /// Profile to analyse without a store (log dir, session dir, .xplane.pb, trace JSON).
    pub input: Option<PathBuf>,
    /// Run id in the store.
    #[arg(long = "run")]
    pub run: Option<String>,
    /// Store: a directory, s3://bucket/prefix or gs://bucket/prefix [default: $PROFQ_STORE, else ./profq-store].
    #[arg(long, value_parser = Location::parse)]
    pub store: Option<Location>,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub wandb: WandbArgs,
}

/// The W&B entity and project of an INPUT given as a bare W&B run id.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct WandbArgs {
    /// W&B entity of a bare run id INPUT (`RUN_ID` or `wandb://RUN_ID`) [default: $WANDB_ENTITY].
    #[arg(long)]
    pub entity: Option<String>,
    /// W&B project of a bare run id INPUT [default: $WANDB_PROJECT].
    #[arg(long)]
    pub project: Option<String>,
}

impl SourceArgs {
    pub fn store(&self) -> Result<Location, Error> {
        store_or_default(&self.store)
    }
    /// The run to analyse: the INPUT, or `--run` in the store.
    pub fn source(&self) -> Result<Source, Error> {
        Ok(profq::source::from_args(self.input.as_deref(), self.run.as_deref(), &self.store()?)?)
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct ThresholdArgs {
    #[arg(long, default_value_t = 5.0)]
    pub max_step_median_regression_pct: f64,
    #[arg(long, default_value_t = 10.0)]
    pub max_step_p90_regression_pct: f64,
    #[arg(long, default_value_t = 0.05)]
    pub max_communication_share_regression_abs: f64,
    #[arg(long, default_value_t = 0.05)]
    pub max_stall_share_regression_abs: f64,
}

impl ThresholdArgs {
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            max_step_median_regression_pct: self.max_step_median_regression_pct,
            max_step_p90_regression_pct: self.max_step_p90_regression_pct,
            max_communication_share_regression_abs: self.max_communication_share_regression_abs,
            max_stall_share_regression_abs: self.max_stall_share_regression_abs,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    Json,
    Table,
    Md,
    Html,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Md,
    Html,
}

impl ReportFormat {
    /// The format asked for, else html for an output named `*.html`, else md.
    pub fn or_from(format: Option<ReportFormat>, output: Option<&std::path::Path>) -> ReportFormat {
        format.unwrap_or(match output.and_then(|o| o.extension()) {
            Some(ext) if ext.eq_ignore_ascii_case("html") => ReportFormat::Html,
            _ => ReportFormat::Md,
        })
    }
}

#[derive(Subcommand)]
pub enum SkillsAction {
    /// Copy the skill into DIR (default: ~/.claude/skills), keeping any file already there.
    Install { dir: Option<PathBuf> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswerFormat {
    Json,
    Table,
}

/// The store named by `--store`, else the default one ([`Location::default_store`]).
pub fn store_or_default(store: &Option<Location>) -> Result<Location, Error> {
    match store {
        Some(location) => Ok(location.clone()),
        None => Location::default_store().map_err(Error::usage),
    }
}
