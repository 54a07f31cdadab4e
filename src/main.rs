//! The `profq` command line: parse arguments, call the library, print.
//!
//! Exit codes: 0 success; 1 internal error; 2 usage error (bad arguments, run id, label);
//! 3 bad input (missing, unreadable, corrupt or not a profile); 4 store or query error
//! (including SQL refused as not read-only).

use clap::{Parser, Subcommand};

// Large column buffers come and go at every stage; mimalloc reuses their pages instead of
// returning them to the kernel and faulting them in again.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    fn mi_collect(force: bool);
}

/// Sets how long mimalloc keeps freed pages before it returns them to the kernel (its
/// default: 1 s in mimalloc 3).
///
/// An analysis of an INPUT of one part frees the decoded events before its queries allocate:
/// with the long delay both are resident, so the peak is their sum (43 MB XPlane: ~320 MB).
/// At 0 ms every freed page goes back at once, and memory freed and taken again a moment
/// later (column buffers of one stage) is faulted in, zeroed, each time: ~40 K faults
/// against ~24 K at 5 ms, for ~8 MB more peak (~200 vs ~208 MB). So 5 ms, where the stages
/// do not say themselves when to give pages back ([`set_memory_policy`]).
///
/// An INPUT of many parts decodes part after part, and each part's pages serve the next:
/// returned after 5 ms they are faulted in again for every part (tiled ×10 file: ~275 K
/// faults, 1.2 s of kernel time). 2 s outlasts a part (~0.1 s) and the gap between a page's
/// free and its reuse by a later stage (the end's tables and queries reuse the parts'
/// pages): against 200 ms (session 35, 7 interleaved rounds), tiled ×10 ~171 K → ~140 K
/// faults, 1.25 → 1.13 s; 8 hosts ~152 K → ~127 K faults, 1.12 → 1.01 s; for 20–35 MB
/// more peak (~0.55–0.6 GB, set by the part size). Never purging saved no more. Ingest
/// keeps the default: it holds one part at a time and reuses the previous part's pages.
fn purge_freed_memory_after(ms: std::ffi::c_long) {
    // `mi_option_purge_delay` in mimalloc.h (the mimalloc in Cargo.lock; stable since 2.1).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}

/// Returns to the kernel every page freed so far whose purge is pending (see
/// [`set_memory_policy`]).
fn purge_freed_memory_now() {
    unsafe { mi_collect(true) }
}

/// Turns transparent huge pages off for this process where the host takes freed guest memory
/// back (a virtio balloon that reports free pages: [`profq::memory::host_reclaims_free_pages`]),
/// unless `MIMALLOC_ALLOW_THP` in the environment decides (mimalloc reads it; `=0` turns them
/// off anywhere, `=1` keeps them).
///
/// mimalloc asks for huge pages on all its arenas. Where the host reclaims free pages, each
/// huge-page fault waits for the host to back 2 MiB anew: on the project's VM, a run that came
/// two seconds after the last (how a person runs profq) took 0.54–0.56 s to ingest the
/// 41.1 MB bench file with them and 0.32–0.34 s without, and 0.36–0.38 s against 0.23 s to
/// summarize it. Where no host takes memory back they save ~60 K page faults and TLB misses,
/// as they did there for runs back to back on memory just freed: ingest 0.27 against 0.32 s,
/// summarize 0.18 against 0.23 s. docs/decisions.md (Memory) has the figures.
fn avoid_transparent_huge_pages_where_costly() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() || !profq::memory::host_reclaims_free_pages() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes one integer argument and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// How freed memory goes back to the kernel for this command (see
/// [`purge_freed_memory_after`]; `MIMALLOC_PURGE_DELAY` in the environment overrides it).
///
/// An analysis of an XPlane INPUT of one or two parts keeps freed pages for reuse and
/// returns them once, when a part's decoded events are dropped ([`profq::memory`]): freed
/// by the clock after 5 ms, ~420 MB of pages went back over a summarize of the 43 MB
/// XPlane whose peak is ~225 MB committed, most of them to be faulted in and zeroed again.
/// Against the 5 ms delay (15 interleaved rounds): ~6.8 K faults instead of ~10.2 K, 3–6 %
/// less CPU and wall time, for ~12 MB more peak (~250 vs ~238 MB). Keeping every freed page
/// saved twice that but cost ~50 MB of peak (~286 MB, xprof-rs's): later stages reuse only
/// some of the pages earlier ones free.
fn set_memory_policy(command: &Command) {
    if matches!(command, Command::Ingest { .. }) || std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    match input_xplane_bytes(command) {
        0 => purge_freed_memory_after(5),
        bytes if bytes > 2 * profq::decode::part_bytes() as u64 => purge_freed_memory_after(2000),
        _ => {
            // Long enough never to expire during such an analysis: the purge comes from the stage.
            purge_freed_memory_after(60_000);
            profq::memory::give_back_with(purge_freed_memory_now);
        }
    }
}

/// Bytes of XPlane the command's INPUT holds (0 without one): past two parts' worth, its
/// parts reuse each other's pages (see [`purge_freed_memory_after`]).
fn input_xplane_bytes(command: &Command) -> u64 {
    let input = match command {
        Command::Summarize { source, .. } | Command::Query { source, .. } | Command::Report { source, .. } | Command::Run { source, .. } => {
            source.input.as_deref()
        }
        _ => None,
    };
    let Some(resolved) = input.and_then(|p| profq::decode::resolve(p).ok()) else { return 0 };
    resolved.files.iter().filter(|f| f.kind == profq::decode::SourceKind::XPlane).filter_map(|f| std::fs::metadata(&f.path).ok()).map(|m| m.len()).sum()
}

use profq::compare::{self, bundle, track, track::Thresholds, CompareOptions};
use profq::engine::{queries, Engine, Spread};
use profq::ingest::{self, IngestError, IngestOptions, Outcome};
use profq::render::{self, Format};
use profq::source::{self, SourceError};
use profq::summary::{self, BreakdownMode, SummaryOptions};
use profq::tables::schema;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
        #[arg(allow_hyphen_values = true)]
        query: String,
        #[arg(long)]
        store: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// List the named analyses (queries/*.sql), or print one.
    Queries { name: Option<String> },
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
    /// Markdown root-cause report of a run, a profile INPUT or a summary JSON.
    Report {
        #[command(flatten)]
        source: SourceArgs,
        #[arg(long)]
        summary: Option<PathBuf>,
        #[arg(long)]
        output: Option<PathBuf>,
        #[arg(long, default_value_t = 10)]
        top_k: usize,
    },
    /// Compare two runs: X is a store run id, a profile INPUT or a profile_summary.v1 file.
    Compare {
        #[command(flatten)]
        pair: PairArgs,
        #[arg(long, value_enum, default_value = "json")]
        format: CompareFormat,
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
    /// Describe the tables (all, or one).
    Schema {
        table: Option<String>,
        /// Print docs/schema.md (Markdown for every table).
        #[arg(long)]
        markdown: bool,
    },
}

/// The two sides of a comparison and how to compare them.
#[derive(clap::Args, Clone, Debug)]
struct PairArgs {
    /// Baseline: a store run id, a profile INPUT or a profile_summary.v1 file.
    #[arg(long)]
    before: String,
    /// Candidate, as --before.
    #[arg(long)]
    after: String,
    #[arg(long)]
    store: Option<PathBuf>,
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Exit 5 when the provenance checks fail (e.g. the same trace twice).
    #[arg(long)]
    strict_provenance: bool,
    #[arg(long, default_value_t = 5)]
    warmup_steps: i64,
}

impl PairArgs {
    fn store(&self) -> PathBuf {
        self.store.clone().unwrap_or_else(profq::store::default_root)
    }
    fn options(&self) -> CompareOptions {
        CompareOptions {
            top_k: self.top_k,
            summary: SummaryOptions { warmup_steps: self.warmup_steps, hot_op_limit: self.top_k.max(25), ..SummaryOptions::default() },
        }
    }
}

/// Where an analysis reads its run: a profile INPUT (decoded in memory) or `--run ID` of a store.
#[derive(clap::Args, Clone, Debug)]
struct SourceArgs {
    /// Profile to analyse without a store (log dir, session dir, .xplane.pb, trace JSON).
    input: Option<PathBuf>,
    /// Run id in the store.
    #[arg(long = "run")]
    run: Option<String>,
    /// Store directory [default: $PROFQ_STORE, else ./profq-store].
    #[arg(long)]
    store: Option<PathBuf>,
}

impl SourceArgs {
    fn store(&self) -> PathBuf {
        self.store.clone().unwrap_or_else(profq::store::default_root)
    }
    fn source(&self) -> Result<source::Source, Exit> {
        source::from_args(self.input.as_deref(), self.run.as_deref(), &self.store()).map_err(|e| fail(2, e))
    }
}

#[derive(clap::Args, Clone, Debug)]
struct ThresholdArgs {
    #[arg(long, default_value_t = 5.0)]
    max_step_median_regression_pct: f64,
    #[arg(long, default_value_t = 10.0)]
    max_step_p90_regression_pct: f64,
    #[arg(long, default_value_t = 0.05)]
    max_communication_share_regression_abs: f64,
    #[arg(long, default_value_t = 0.05)]
    max_stall_share_regression_abs: f64,
}

impl ThresholdArgs {
    fn thresholds(&self) -> Thresholds {
        Thresholds {
            max_step_median_regression_pct: self.max_step_median_regression_pct,
            max_step_p90_regression_pct: self.max_step_p90_regression_pct,
            max_communication_share_regression_abs: self.max_communication_share_regression_abs,
            max_stall_share_regression_abs: self.max_stall_share_regression_abs,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum CompareFormat {
    Json,
    Table,
    Md,
}

/// "How did X change across runs?": the trends of every run of the store, or one op's trend.
async fn trend_answer(question: &str, store: PathBuf, format: AnswerFormat, show_sql: bool) -> Exit {
    let engine = match Engine::open(&store).await {
        Ok(e) => e,
        Err(e) => return fail(4, e),
    };
    let target = summary::query::trend_target(question);
    let (name, mut params) = match &target {
        Some(op) => ("op_trend", BTreeMap::from([("op".to_string(), op.clone())])),
        None => ("trends", BTreeMap::new()),
    };
    let sql = queries::find(name).and_then(|q| q.bind(&params).ok());
    let rows = match engine.run_named(name, &params).await {
        Ok(b) => render::rows(&b),
        Err(e) => return fail(4, e),
    };
    params.clear();
    let mut answer = serde_json::json!({"query_type": "trend", "question": question, "target": target, "analysis": name, "results": rows});
    if show_sql {
        answer["sql"] = serde_json::json!([{"query": name, "sql": sql}]);
    }
    print_answer(&answer, format);
    Exit::SUCCESS
}

/// A question whose analysis a summary does not hold (the roofline, memory), answered from
/// its intent's named query over the profile or stored run.
async fn answer_from_rows(
    question: &str,
    intent: &summary::query::Intent,
    answer_with: summary::query::RowsAnswer,
    source: &SourceArgs,
    top_k: usize,
    format: AnswerFormat,
    show_sql: bool,
) -> Exit {
    let opened = match open_wide(source).await {
        Ok(o) => o,
        Err(code) => return code,
    };
    let name = intent.queries[0];
    // Every row: the answer's totals are over all of them.
    let mut params = BTreeMap::from([("run_id".to_string(), opened.run_id.clone())]);
    if queries::find(name).is_some_and(|q| q.params().iter().any(|p| p.name == "top_k")) {
        params.insert("top_k".to_string(), i64::MAX.to_string());
    }
    let rows = match opened.engine.run_named(name, &params).await {
        Ok(b) => render::rows(&b),
        Err(e) => return fail(4, e),
    };
    let mut answer = answer_with(question, &rows, top_k);
    if show_sql {
        let sql = queries::find(name).and_then(|q| q.bind(&params).ok());
        answer["sql"] = serde_json::json!([{"query": name, "sql": sql}]);
    }
    print_answer(&answer, format);
    Exit::SUCCESS
}

/// The profile or stored run of the arguments, opened for one query (spread over the cores).
async fn open_wide(source: &SourceArgs) -> Result<source::Opened, Exit> {
    source::open(&source.source()?, Spread::Wide).await.map_err(source_failure)
}

fn print_answer(answer: &serde_json::Value, format: AnswerFormat) {
    match format {
        AnswerFormat::Json => print!("{}", summary::to_json_text(answer)),
        AnswerFormat::Table => print!("{}", render::answer_table(answer)),
    }
}

/// Loads both sides and compares them; Err is the exit code.
async fn run_compare(pair: &PairArgs) -> Result<serde_json::Value, Exit> {
    let opts = pair.options();
    let read = compare::columns_read(&opts);
    let b = compare::load_side(&pair.before, &pair.store(), &read).await.map_err(source_failure)?;
    let a = compare::load_side(&pair.after, &pair.store(), &read).await.map_err(source_failure)?;
    let result = compare::compare(b, a, &opts, &read).await.map_err(|e| fail(4, e))?;
    if pair.strict_provenance && result["provenance_checks"]["status"] == "fail" {
        let msgs: Vec<String> =
            result["provenance_checks"]["messages"].as_array().into_iter().flatten().filter_map(|m| m.as_str().map(str::to_string)).collect();
        return Err(fail(5, format!("Provenance checks failed. {}", msgs.join(" "))));
    }
    Ok(result)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum AnswerFormat {
    Json,
    Table,
}

/// A summary from `--summary FILE`, or computed from a run or INPUT. Err is the exit code.
async fn summary_of(src: &SourceArgs, summary_file: Option<&std::path::Path>, opts: &SummaryOptions) -> Result<(serde_json::Value, Option<String>), Exit> {
    if let Some(file) = summary_file {
        if src.input.is_some() || src.run.is_some() {
            return Err(fail(2, "give one of INPUT, --run or --summary"));
        }
        let text = std::fs::read_to_string(file).map_err(|e| fail(3, format!("{}: {e}", file.display())))?;
        let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| fail(3, format!("{}: not JSON: {e}", file.display())))?;
        if doc["schema_version"] != summary::SCHEMA_VERSION {
            return Err(fail(3, format!("{}: not a {} summary (schema_version {})", file.display(), summary::SCHEMA_VERSION, doc["schema_version"])));
        }
        return Ok((doc, None));
    }
    let (doc, run_id) = summary_of_source(&src.source()?, opts).await?;
    Ok((doc, Some(run_id)))
}

/// The summary of a source and its run id; an INPUT's statements are planned while it decodes.
async fn summary_of_source(source: &source::Source, opts: &SummaryOptions) -> Result<(serde_json::Value, String), Exit> {
    let statements = summary::statements(opts, source::INPUT_RUN_ID);
    let opened = source::open_planning(source, Spread::Narrow, statements).await.map_err(source_failure)?;
    let doc = summary::summarize_planned(&opened.engine, &opened.run_id, &opened.source_path, opts, opened.prepared).await.map_err(|e| fail(4, e))?;
    Ok((doc, opened.run_id))
}

fn fail(code: u8, msg: impl std::fmt::Display) -> Exit {
    eprintln!("profq: {msg}");
    Exit(code)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime")
}

fn source_failure(e: SourceError) -> Exit {
    match e {
        SourceError::Ingest(e @ IngestError::Input(_)) => fail(3, e),
        SourceError::Ingest(e @ IngestError::Usage(_)) | SourceError::Ingest(e @ IngestError::Store(_)) => fail(4, e),
        SourceError::NoRun(e) => fail(2, e),
        SourceError::Query(e) => fail(4, e),
    }
}

/// A reader that stops early (`profq summarize X | head`) ends profq as it ends `cat`: by
/// SIGPIPE, quietly, rather than with a panic from `print!` (Rust ignores SIGPIPE).
fn quiet_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Prints `text`, or writes it to `output` (creating parent dirs) and prints only the path.
fn emit(text: &str, output: Option<&std::path::Path>) -> Exit {
    match output {
        None => {
            print!("{text}");
            Exit::SUCCESS
        }
        Some(path) => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                if let Err(e) = std::fs::create_dir_all(parent) {
                    return fail(4, format!("{}: {e}", parent.display()));
                }
            }
            match std::fs::write(path, text) {
                Ok(()) => {
                    println!("{}", path.display());
                    Exit::SUCCESS
                }
                Err(e) => fail(4, format!("{}: {e}", path.display())),
            }
        }
    }
}

fn key_values(pairs: &[String], flag: &str) -> Result<BTreeMap<String, String>, String> {
    pairs.iter().map(|p| p.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| format!("{flag} {p:?}: expected KEY=VALUE"))).collect()
}

/// The status profq ends with: 0, or the documented code of a failure (README, exit codes).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Exit(u8);

impl Exit {
    const SUCCESS: Exit = Exit(0);
}

fn main() {
    let Exit(code) = run();
    exit_without_teardown(code)
}

/// Ends the process with `code` once stdout is flushed, without the process-exit handlers:
/// mimalloc's walks every arena to hand all freed pages back to the kernel one range at a
/// time, pages that the kernel frees anyway, at once, with the address space (from the
/// output line to the end of an ingest of the 41 MB bench file: 20 → 17 ms). Every file profq writes is complete and closed (a store's
/// fsynced) before this point, and nothing else is registered to run at exit.
fn exit_without_teardown(code: u8) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    #[cfg(unix)]
    // SAFETY: `_exit` ends the process; no Rust state is used after it.
    unsafe {
        libc::_exit(i32::from(code))
    }
    #[cfg(not(unix))]
    std::process::exit(i32::from(code))
}

fn run() -> Exit {
    profq::timing::mark_start();
    profq::memory::free_address_space_after_exit();
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    avoid_transparent_huge_pages_where_costly();
    set_memory_policy(&cli.command);
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
            Exit::SUCCESS
        }
        Command::Sql { query, store, format } => {
            let root = store.unwrap_or_else(profq::store::default_root);
            let result = runtime().block_on(async {
                let engine = Engine::open(&root).await?;
                engine.sql(&query).await
            });
            match result {
                Ok(batches) => {
                    print!("{}", render::render(&batches, format));
                    Exit::SUCCESS
                }
                Err(e) => fail(4, e),
            }
        }
        Command::Queries { name } => match name {
            None => {
                let width = queries::QUERIES.iter().map(|q| q.name.len()).max().unwrap_or(0);
                for q in queries::QUERIES {
                    println!("{:width$}  {}", q.name, q.description());
                }
                Exit::SUCCESS
            }
            Some(n) => match queries::find(&n) {
                Some(q) => {
                    print!("{}", q.text);
                    Exit::SUCCESS
                }
                None => fail(2, format!("no query {n:?}; `profq queries` lists them")),
            },
        },
        Command::Run { name, source, params, format } => {
            let Some(query) = queries::find(&name) else {
                return fail(2, format!("no query {name:?}; `profq queries` lists them"));
            };
            let mut params = match key_values(&params, "--param") {
                Ok(p) => p,
                Err(e) => return fail(2, e),
            };
            let per_run = query.params().iter().any(|p| p.name == "run_id");
            runtime().block_on(async {
                // Queries over several runs (trends, comparisons) read the whole store.
                let engine = if !per_run && source.input.is_none() {
                    match Engine::open(&source.store()).await {
                        Ok(e) => e,
                        Err(e) => return fail(4, e),
                    }
                } else {
                    let opened = match open_wide(&source).await {
                        Ok(o) => o,
                        Err(code) => return code,
                    };
                    if per_run {
                        params.insert("run_id".into(), opened.run_id.clone());
                    }
                    opened.engine
                };
                match engine.run_named(&name, &params).await {
                    Ok(batches) => {
                        print!("{}", render::render(&batches, format));
                        Exit::SUCCESS
                    }
                    Err(e) if e.0.contains("parameter") => fail(2, e),
                    Err(e) => fail(4, e),
                }
            })
        }
        Command::Summarize { source, output, warmup_steps, hot_op_limit, breakdown_mode } => {
            let source = match source.source() {
                Ok(s) => s,
                Err(code) => return code,
            };
            let opts = SummaryOptions { warmup_steps, hot_op_limit, breakdown_mode };
            runtime().block_on(async {
                match summary_of_source(&source, &opts).await {
                    Ok((doc, _)) => emit(&summary::to_json_text(&doc), output.as_deref()),
                    Err(code) => code,
                }
            })
        }
        Command::Query { question, source, summary: summary_file, top_k, format, show_sql } => {
            let opts = SummaryOptions { hot_op_limit: top_k.max(25), ..SummaryOptions::default() };
            let intent = summary::query::route(&question);
            if intent.is_some_and(|i| i.query_type == "trend") && source.input.is_none() && summary_file.is_none() {
                return runtime().block_on(trend_answer(&question, source.store(), format, show_sql));
            }
            if let Some((i, answer_with)) = intent.filter(|_| summary_file.is_none()).and_then(|i| Some((i, summary::query::rows_answer(i.query_type)?))) {
                return runtime().block_on(answer_from_rows(&question, i, answer_with, &source, top_k, format, show_sql));
            }
            runtime().block_on(async {
                let (doc, run_id) = match summary_of(&source, summary_file.as_deref(), &opts).await {
                    Ok(d) => d,
                    Err(code) => return code,
                };
                let mut answer = summary::query::answer(&doc, &question, top_k);
                if show_sql {
                    let mut params = BTreeMap::new();
                    params.insert("run_id".to_string(), run_id.unwrap_or_else(|| "<run_id>".into()));
                    let sql: Vec<serde_json::Value> = intent
                        .map(|i| i.queries)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|q| queries::find(q).and_then(|nq| nq.bind(&params).ok()).map(|text| serde_json::json!({"query": q, "sql": text})))
                        .collect();
                    answer["sql"] = serde_json::Value::Array(sql);
                }
                print_answer(&answer, format);
                if answer["query_type"] == "unrecognized" {
                    Exit(2)
                } else {
                    Exit::SUCCESS
                }
            })
        }
        Command::Report { source, summary: summary_file, output, top_k } => runtime().block_on(async {
            let opts = SummaryOptions { hot_op_limit: top_k.max(25), ..SummaryOptions::default() };
            match summary_of(&source, summary_file.as_deref(), &opts).await {
                Ok((doc, _)) => emit(&render::report::markdown(&doc, top_k), output.as_deref()),
                Err(code) => code,
            }
        }),
        Command::Compare { pair, format } => runtime().block_on(async {
            match run_compare(&pair).await {
                Ok(result) => {
                    match format {
                        CompareFormat::Json => print!("{}", summary::to_json_text(&result)),
                        CompareFormat::Table => print!("{}", render::answer_table(&result)),
                        CompareFormat::Md => print!("{}", render::report::comparison_markdown(&result, pair.top_k)),
                    }
                    Exit::SUCCESS
                }
                Err(code) => code,
            }
        }),
        Command::Track { pair, label, history, output, thresholds } => runtime().block_on(async {
            let comparison = match run_compare(&pair).await {
                Ok(c) => c,
                Err(code) => return code,
            };
            let assessment = track::assess(&comparison, &thresholds.thresholds());
            let record = track::record(&assessment, label.as_deref());
            if let Some(h) = &history {
                if let Err(e) = track::append_history(h, &record) {
                    return fail(4, format!("{}: {e}", h.display()));
                }
            }
            emit(&summary::to_json_text(&record), output.as_deref())
        }),
        Command::History { history, tail, output } => match track::summarize_history(&history, tail) {
            Ok(h) => emit(&summary::to_json_text(&h), output.as_deref()),
            Err(e) => fail(3, format!("{}: {e}", history.display())),
        },
        Command::Bundle { pair, output_dir, history, label, output, thresholds } => runtime().block_on(async {
            match bundle::write_bundle(
                &pair.before,
                &pair.after,
                &pair.store(),
                &output_dir,
                &pair.options(),
                &thresholds.thresholds(),
                label.as_deref(),
                history.as_deref(),
                pair.strict_provenance,
            )
            .await
            {
                Ok(manifest) => emit(&summary::to_json_text(&manifest), output.as_deref()),
                Err(bundle::BundleError::Source(e)) => source_failure(e),
                Err(bundle::BundleError::Provenance(m)) => fail(5, m),
                Err(bundle::BundleError::Other(m)) => fail(4, m),
            }
        }),
        Command::Schema { table, markdown } => {
            if markdown {
                print!("{}", schema::markdown());
                return Exit::SUCCESS;
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
            Exit::SUCCESS
        }
    }
}
