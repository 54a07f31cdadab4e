//! One function per subcommand: take the parsed arguments, call the library, and return what
//! `render` made of the result: the text the command prints on stdout (`main` prints it,
//! `mcp` returns it as a tool's result). A failure is returned, never printed here (see `exit`).

use super::args::{
    store_or_default, AnswerFormat, BallistaRole, Command, CompareFormat, EngineArgs, ListFormat, PairArgs, ReportFormat, SkillsAction, SourceArgs,
    ThresholdArgs, WandbArgs,
};
use super::bundle;
use profq::compare::{self, track};
use profq::engine::{queries, Engine, Placement, Spread};
use profq::error::Error;
use profq::export::{self, ExportOptions, Window};
use profq::ingest::{self, IngestOptions};
use profq::render::{self, Format};
use profq::store::Location;
use profq::summary::ask::{self, Subject};
use profq::summary::{BreakdownMode, SummaryOptions};
use profq::tables::schema;
use profq::wandb::publish::PublishOptions;
use profq::wandb::run_target as wandb;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A command's stdout, or its failure.
type Done = Result<String, Error>;

pub fn run(mut command: Command) -> Done {
    place_store_engines(&command)?;
    resolve_wandb_inputs(&mut command)?;
    match command {
        Command::Skills { action: SkillsAction::Install { dir } } => super::skills::install(dir.as_deref()),
        Command::Mcp { max_result_bytes, spill_dir } => super::mcp::serve(max_result_bytes, spill_dir).map(|()| String::new()),
        Command::Ingest { inputs, run_target, entity, project, store, run_id, labels, force } => {
            let target = run_target.map(|t| (t, entity, project));
            ingest(&inputs, target, store, run_id, &labels, force)
        }
        Command::Publish { summary, report, entity, project, artifact_name, aliases, dry_run, output } => {
            let opts = PublishOptions { summary, report, entity, project, artifact_name, aliases, dry_run };
            publish(&opts, output.as_deref())
        }
        Command::Sql { query, store, engine: _, format } => sql(&query, store, format),
        Command::Queries { name, format } => list_queries(name.as_deref(), format),
        Command::Run { name, source, params, format } => run_named(&name, &source, &params, format),
        Command::Summarize { source, output, warmup_steps, hot_op_limit, breakdown_mode } => {
            summarize(&source, output.as_deref(), warmup_steps, hot_op_limit, breakdown_mode)
        }
        Command::Query { question, source, summary, top_k, format, show_sql } => query(&question, source, summary, top_k, format, show_sql),
        Command::Report { source, summary, output, top_k, format, trends } => {
            let format = ReportFormat::or_from(format, output.as_deref());
            if trends {
                report_trends(&source, format, output.as_deref())
            } else {
                report(source, summary, output.as_deref(), top_k, format)
            }
        }
        Command::Compare { pair, format, output } => compare(&pair, format, output.as_deref()),
        Command::Track { pair, label, history, output, thresholds } => track(&pair, label.as_deref(), history.as_deref(), output.as_deref(), &thresholds),
        Command::History { history, tail, output } => show_history(&history, tail, output.as_deref()),
        Command::Bundle { pair, output_dir, history, label, output, thresholds } => {
            bundle(&pair, &output_dir, history.as_deref(), label.as_deref(), output.as_deref(), &thresholds)
        }
        Command::Schema { table, markdown } => describe_schema(table.as_deref(), markdown),
        Command::Ballista { role } => ballista(role),
        Command::ExportTrace { source, output, step, steps, representative: _, from_ns, to_ns, hosts, max_events, format, warmup_steps } => {
            let window = match (step, steps, from_ns.zip(to_ns)) {
                (Some(n), _, _) => Window::Step(n),
                (_, Some(range), _) => Window::parse_steps(&range).map_err(Error::usage)?,
                (_, _, Some((from, to))) => Window::Range(from, to),
                _ => Window::Representative,
            };
            export_trace(&source, &output, &ExportOptions { window, hosts, max_events, format, warmup_steps })
        }
    }
}

/// Runs the store engines of this command where `--engine` says. A cluster reads a store:
/// an INPUT is decoded and analysed here, so it is refused rather than silently run here.
fn place_store_engines(command: &Command) -> Result<(), Error> {
    let (engine, input): (&EngineArgs, Option<&PathBuf>) = match command {
        Command::Sql { engine, .. } => (engine, None),
        Command::Run { source, .. }
        | Command::Summarize { source, .. }
        | Command::Query { source, .. }
        | Command::Report { source, .. }
        | Command::ExportTrace { source, .. } => (&source.engine, source.input.as_ref()),
        _ => return Ok(()),
    };
    match engine.placement()? {
        Placement::Here => Ok(()),
        cluster => {
            if let Some(input) = input {
                return Err(Error::usage(format!("--engine ballista reads a store's runs: ingest {} and give --run ID", input.display())));
            }
            cluster.choose().map_err(Error::usage)
        }
    }
}

/// A profile to read, and the labels an ingest gives its run.
type Labelled = (PathBuf, Vec<(String, String)>);

/// A W&B INPUT as a profile and the labels an ingest gives its run: an artifact
/// (`wandb-artifact://ENTITY/PROJECT/NAME:ALIAS`) is the cache directory of its files; a run
/// (`wandb://ENTITY/PROJECT/RUN_ID`, a wandb.ai run URL, or a bare run id of `--entity` and
/// `--project`) is the profile its trainer wrote, with the run's metadata. None for any other
/// INPUT.
fn wandb_input(input: &str, names: &WandbArgs) -> Result<Option<Labelled>, Error> {
    if let Some(artifact) = profq::wandb::artifact::of_input(input) {
        let artifact = artifact.map_err(Error::usage)?;
        let dir = profq::wandb::artifact::fetch(&artifact, &profq::remote::mirror::cache_dir()).map_err(Error::input)?;
        return Ok(Some((dir, vec![("artifact_ref".to_string(), input.to_string())])));
    }
    // A bare id without the wandb:// scheme, when an entity and a project say it is one and no
    // file has that name.
    let bare = names.entity.is_some() && names.project.is_some() && !input.contains('/') && !Path::new(input).exists();
    let input = if bare { format!("wandb://{input}") } else { input.to_string() };
    let Some(target) = wandb::run_of_input(&input, names.entity.as_deref(), names.project.as_deref()) else { return Ok(None) };
    Ok(Some(wandb_run_profile(&target.map_err(Error::usage)?)?))
}

/// The profile a W&B run's trainer wrote, and the run's metadata as labels.
fn wandb_run_profile(target: &wandb::RunTarget) -> Result<Labelled, Error> {
    let run = wandb::fetch_run(target).map_err(Error::input)?;
    Ok((PathBuf::from(run.profile_dir().map_err(Error::input)?), run.labels()))
}

/// Makes every INPUT that is a W&B run or artifact the profile it stands for ([`wandb_input`]),
/// so that every command reads them alike. Ingest reads them itself, to label its runs.
fn resolve_wandb_inputs(command: &mut Command) -> Result<(), Error> {
    let profile = |input: &str, names: &WandbArgs| Ok::<_, Error>(wandb_input(input, names)?.map(|(dir, _)| dir));
    match command {
        Command::Run { source, .. }
        | Command::Summarize { source, .. }
        | Command::Query { source, .. }
        | Command::Report { source, .. }
        | Command::ExportTrace { source, .. } => {
            if let Some(input) = source.input.as_mut() {
                if let Some(dir) = profile(&input.to_string_lossy(), &source.wandb)? {
                    *input = dir;
                }
            }
        }
        Command::Compare { pair, .. } | Command::Track { pair, .. } | Command::Bundle { pair, .. } => {
            for side in [&mut pair.before, &mut pair.after] {
                if let Some(dir) = profile(side, &pair.wandb)? {
                    *side = dir.display().to_string();
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Runs a role of a Ballista cluster until the process is stopped.
fn ballista(role: BallistaRole) -> Done {
    #[cfg(feature = "ballista")]
    {
        use profq::engine::cluster::roles::{self, ExecutorOptions, SchedulerOptions};
        // Ballista's own servers give their threads 32 MiB of stack: plans are walked
        // recursively. A server's every thread talks to the network (see `runtime`).
        profq::process::block_sigpipe_in_this_thread();
        roles::log_to_stderr();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_stack_size(32 << 20)
            .on_thread_start(profq::process::block_sigpipe_in_this_thread)
            .build()
            .expect("tokio runtime");
        let served = match role {
            BallistaRole::Scheduler { bind, external_host, executor_timeout } => {
                runtime.block_on(roles::run_scheduler(SchedulerOptions { bind, external_host, executor_timeout_s: executor_timeout }))
            }
            BallistaRole::Executor { scheduler, bind, grpc_port, external_host, work_dir, concurrent_tasks, heartbeat } => {
                let scheduler = profq::engine::scheduler_address(&format!("df://{}", scheduler.trim_start_matches("df://"))).map_err(Error::usage)?;
                let grpc_port = grpc_port.unwrap_or(bind.port().wrapping_add(1));
                let opts = ExecutorOptions { scheduler, bind, grpc_port, external_host, work_dir, concurrent_tasks, heartbeat_s: heartbeat };
                runtime.block_on(roles::run_executor(opts))
            }
        };
        served.map_err(Error::store).map(|()| String::new())
    }
    #[cfg(not(feature = "ballista"))]
    {
        let _ = role;
        Err(Error::usage(profq::engine::WITHOUT_BALLISTA))
    }
}

/// A W&B run target as given: the target, and the entity and project of a bare id.
type RunTargetArgs = (String, Option<String>, Option<String>);

fn ingest(
    inputs_given: &[PathBuf],
    run_target: Option<RunTargetArgs>,
    store: Option<Location>,
    run_id: Option<String>,
    labels: &[String],
    force: bool,
) -> Done {
    if run_id.is_some() && inputs_given.len() > 1 {
        return Err(Error::usage("--run-id names one run: give one INPUT with it"));
    }
    let labels = key_values(labels, "--label")?;
    // Each INPUT with the labels of the W&B run it came from, if any.
    let mut inputs: Vec<Labelled> = Vec::new();
    for input in inputs_given {
        inputs.push(wandb_input(&input.to_string_lossy(), &WandbArgs::default())?.unwrap_or_else(|| (input.clone(), Vec::new())));
    }
    if let Some((target, entity, project)) = run_target {
        inputs.push(wandb_run_profile(&wandb::RunTarget::parse(&target, entity.as_deref(), project.as_deref()).map_err(Error::usage)?)?);
    }
    let store = store_or_default(&store)?;
    let mut out = String::new();
    for (input, from_wandb) in &inputs {
        let opts = IngestOptions { store: store.clone(), run_id: run_id.clone(), labels: [labels.clone(), from_wandb.clone()].concat(), force };
        let outcome = ingest::ingest(input, &opts)?;
        out.push_str(&render::ingest_outcome(&outcome, input));
        for line in render::ingest_warnings(&outcome) {
            eprintln!("{line}");
        }
    }
    Ok(out)
}

fn publish(opts: &PublishOptions, output: Option<&Path>) -> Done {
    let answer = profq::wandb::publish::publish(opts).map_err(Error::input)?;
    emit(&render::json_text(&answer), output)
}

fn sql(query: &str, store: Option<Location>, format: Format) -> Done {
    let store = store_or_default(&store)?;
    let batches = runtime().block_on(async { Engine::open(&store).await?.sql(query).await })?;
    Ok(render::render(&batches, format))
}

fn list_queries(name: Option<&str>, format: ListFormat) -> Done {
    let chosen = match name {
        None => queries::QUERIES,
        Some(n) => std::slice::from_ref(find_query(n)?),
    };
    Ok(match (format, name) {
        (ListFormat::Json, _) => render::json_text(&render::query_list_json(chosen)),
        (ListFormat::Text, None) => render::query_list(chosen),
        (ListFormat::Text, Some(_)) => chosen[0].text.to_string(),
    })
}

fn find_query(name: &str) -> Result<&'static queries::NamedQuery, Error> {
    queries::find(name).ok_or_else(|| Error::usage(format!("no query {name:?}; `profq queries` lists them")))
}

fn run_named(name: &str, source: &SourceArgs, params: &[String], format: Format) -> Done {
    let query = find_query(name)?;
    let mut params: BTreeMap<String, String> = key_values(params, "--param")?.into_iter().collect();
    let per_run = query.params().iter().any(|p| p.name == "run_id");
    let batches = runtime().block_on(async {
        // Queries over several runs (trends, comparisons) read the whole store.
        let engine = if !per_run && source.input.is_none() {
            Engine::open(&source.store()?).await?
        } else {
            let source = source.source()?;
            let opened = if query.reads_every_event() {
                profq::source::open_whole(&source, Spread::Wide).await?
            } else {
                profq::source::open(&source, Spread::Wide).await?
            };
            if per_run {
                params.insert("run_id".into(), opened.run_id.clone());
            }
            opened.engine
        };
        // Parameters are the caller's to get right: checked before anything runs.
        query.bind(&params).map_err(Error::usage)?;
        Ok::<_, Error>(engine.run_named(name, &params).await?)
    })?;
    Ok(render::render(&batches, format))
}

fn summarize(source: &SourceArgs, output: Option<&Path>, warmup_steps: i64, hot_op_limit: usize, breakdown_mode: BreakdownMode) -> Done {
    let source = source.source()?;
    let opts = SummaryOptions { warmup_steps, hot_op_limit, breakdown_mode };
    let (doc, _) = runtime().block_on(ask::summary_of_source(&source, &opts))?;
    emit(&render::json_text(&doc.to_value()), output)
}

fn subject(source: SourceArgs, summary: Option<PathBuf>) -> Result<Subject, Error> {
    let store = source.store()?;
    Ok(Subject { input: source.input, run: source.run, store, summary })
}

fn query(question: &str, source: SourceArgs, summary: Option<PathBuf>, top_k: usize, format: AnswerFormat, show_sql: bool) -> Done {
    let answer = runtime().block_on(ask::ask(question, &subject(source, summary)?, top_k, show_sql))?;
    let text = match format {
        AnswerFormat::Json => render::json_text(&answer),
        AnswerFormat::Table => render::answer_table(&answer),
    };
    if ask::is_unrecognized(&answer) {
        return Err(ask::unrecognized(text));
    }
    Ok(text)
}

fn report(source: SourceArgs, summary: Option<PathBuf>, output: Option<&Path>, top_k: usize, format: ReportFormat) -> Done {
    let opts = SummaryOptions { hot_op_limit: top_k.max(25), ..SummaryOptions::default() };
    let subject = subject(source, summary)?;
    let text = match format {
        ReportFormat::Md => render::report::markdown(&runtime().block_on(ask::summary_of(&subject, &opts))?.0, top_k),
        ReportFormat::Html => {
            let (doc, timeline) = runtime().block_on(ask::report_of(&subject, &opts))?;
            render::html::run_page::page(&doc, timeline.as_ref(), top_k)
        }
    };
    emit(&text, output)
}

fn report_trends(source: &SourceArgs, format: ReportFormat, output: Option<&Path>) -> Done {
    if format != ReportFormat::Html {
        return Err(Error::usage("--trends draws an HTML page: add --format html (or an --output ending in .html); `profq run trends` prints the rows"));
    }
    let store = source.store()?;
    let rows = runtime().block_on(ask::trends_of(&store))?;
    emit(&render::html::trends_page::page(&rows, &store.to_string()), output)
}

fn compare(pair: &PairArgs, format: CompareFormat, output: Option<&Path>) -> Done {
    let text = match format {
        CompareFormat::Html => {
            let (result, before, after) =
                runtime().block_on(compare::compare_pair_with_summaries(&pair.before, &pair.after, &pair.store()?, &pair.options(), pair.strict_provenance))?;
            render::html::compare_page::page(&result, &before.doc, &after.doc, pair.top_k)
        }
        CompareFormat::Json => render::json_text(&compared(pair)?),
        CompareFormat::Table => render::answer_table(&compared(pair)?),
        CompareFormat::Md => render::report::comparison_markdown(&compared(pair)?, pair.top_k),
    };
    emit(&text, output)
}

fn compared(pair: &PairArgs) -> Result<serde_json::Value, Error> {
    runtime().block_on(compare::compare_pair(&pair.before, &pair.after, &pair.store()?, &pair.options(), pair.strict_provenance))
}

fn track(pair: &PairArgs, label: Option<&str>, history: Option<&Path>, output: Option<&Path>, thresholds: &ThresholdArgs) -> Done {
    let comparison = compared(pair)?;
    let assessment = track::assess(&comparison, &thresholds.thresholds());
    let record = track::record(&assessment, label);
    if let Some(h) = history {
        track::append_history(h, &record).map_err(|e| Error::store(format!("{}: {e}", h.display())))?;
    }
    emit(&render::json_text(&record), output)
}

fn show_history(history: &Path, tail: usize, output: Option<&Path>) -> Done {
    let summary = track::summarize_history(history, tail).map_err(|e| Error::input(format!("{}: {e}", history.display())))?;
    emit(&render::json_text(&summary), output)
}

fn bundle(pair: &PairArgs, output_dir: &Path, history: Option<&Path>, label: Option<&str>, output: Option<&Path>, thresholds: &ThresholdArgs) -> Done {
    let manifest = runtime().block_on(bundle::write_bundle(
        &pair.before,
        &pair.after,
        &pair.store()?,
        output_dir,
        &pair.options(),
        &thresholds.thresholds(),
        label,
        history,
        pair.strict_provenance,
    ))?;
    emit(&render::json_text(&manifest), output)
}

fn export_trace(source: &SourceArgs, output: &Path, opts: &ExportOptions) -> Done {
    let source = source.source()?;
    let done = runtime().block_on(async {
        let opened = profq::source::open_whole(&source, Spread::Narrow).await?;
        export::export(&opened.engine, &opened.run_id, &source.name(), opts, output).await
    })?;
    Ok(render::exported(&done, output))
}

fn describe_schema(table: Option<&str>, markdown: bool) -> Done {
    if markdown {
        return Ok(schema::markdown());
    }
    match table {
        Some(name) => {
            let t = schema::table(name).ok_or_else(|| {
                let names: Vec<&str> = schema::TABLES.iter().map(|t| t.name).collect();
                Error::usage(format!("no table {name:?}; tables: {}", names.join(", ")))
            })?;
            Ok(schema::describe(t))
        }
        None => Ok(schema::describe_all()),
    }
}

/// `text`, or, given an `output`, the line of its path once `text` is written there
/// (creating parent dirs).
fn emit(text: &str, output: Option<&Path>) -> Done {
    let Some(path) = output else { return Ok(text.to_string()) };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::store(format!("{}: {e}", parent.display())))?;
    }
    std::fs::write(path, text).map_err(|e| Error::store(format!("{}: {e}", path.display())))?;
    Ok(format!("{}\n", path.display()))
}

/// `KEY=VALUE` arguments as pairs, in the order given.
fn key_values(pairs: &[String], flag: &str) -> Result<Vec<(String, String)>, Error> {
    pairs
        .iter()
        .map(|p| p.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| Error::usage(format!("{flag} {p:?}: expected KEY=VALUE"))))
        .collect()
}

/// The runtime of a command's library calls. Its threads may talk to the network (object
/// stores, a cluster), so a peer gone mid-write fails the write instead of ending profq.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().on_thread_start(profq::process::block_sigpipe_in_this_thread).build().expect("tokio runtime")
}
