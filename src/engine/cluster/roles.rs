//! The cluster's server roles, run by profq's own binary: a scheduler that plans each
//! statement into stages, and executors that run the stages' tasks and serve their shuffle
//! output. [`in_process`] assembles the same pieces in one process, for tests.

use super::{function_registry, session_state};
use crate::engine::{runtime_env, runtime_env_spilling_to};
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::BallistaCodec;
use ballista_core::{ConfigProducer, RuntimeProducer};
use ballista_scheduler::SessionBuilder;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::SessionConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// How a scheduler listens and when it gives an executor up.
pub struct SchedulerOptions {
    pub bind: SocketAddr,
    /// The name executors and clients reach it by [default: the bind address].
    pub external_host: Option<String>,
    /// An executor not heard from for this long is dead: its tasks run again elsewhere.
    pub executor_timeout_s: u64,
}

/// How an executor joins its scheduler and where it keeps shuffle files.
pub struct ExecutorOptions {
    /// The scheduler, `HOST:PORT`.
    pub scheduler: String,
    /// Where the executor serves its shuffle output (Arrow Flight).
    pub bind: SocketAddr,
    /// Where the scheduler sends it tasks.
    pub grpc_port: u16,
    /// The name the scheduler and the other executors reach it by [default: the address
    /// its connection to the scheduler comes from].
    pub external_host: Option<String>,
    /// Shuffle and spill files [default: a directory under the system's temporary one].
    pub work_dir: Option<PathBuf>,
    /// Tasks run at once [default: the cores].
    pub concurrent_tasks: usize,
    /// How often it tells the scheduler it is alive.
    pub heartbeat_s: u64,
}

/// Sends Ballista's log lines to stderr: warnings and errors (a task that failed, an
/// executor lost), or what `RUST_LOG` asks for: `LEVEL` or `TARGET=LEVEL` items, comma
/// separated, the longest matching target deciding (`warn,ballista_executor=debug`).
pub fn log_to_stderr() {
    let mut filter = StderrLog { default: log::LevelFilter::Warn, targets: Vec::new() };
    for item in std::env::var("RUST_LOG").unwrap_or_default().split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            Some((target, level)) => filter.targets.extend(level.parse().ok().map(|l| (target.to_string(), l))),
            None => filter.default = item.parse().unwrap_or(filter.default),
        }
    }
    filter.targets.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
    let most = filter.targets.iter().map(|(_, l)| *l).chain([filter.default]).max().unwrap_or(log::LevelFilter::Warn);
    if log::set_logger(Box::leak(Box::new(filter))).is_ok() {
        log::set_max_level(most);
    }
}

/// One line per record: level, where it comes from, message.
struct StderrLog {
    default: log::LevelFilter,
    /// Targets (module path prefixes) with a level of their own, longest first.
    targets: Vec<(String, log::LevelFilter)>,
}

impl log::Log for StderrLog {
    fn enabled(&self, meta: &log::Metadata) -> bool {
        let level = self.targets.iter().find(|(t, _)| meta.target().starts_with(t.as_str())).map_or(self.default, |(_, l)| *l);
        meta.level() <= level
    }
    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{} {}: {}", record.level(), record.target(), record.args());
        }
    }
    fn flush(&self) {}
}

/// The scheduler's session for each client session: the client's settings, profq's
/// functions and one runtime (one object-store registry) for all sessions.
fn session_builder(runtime: Arc<RuntimeEnv>) -> SessionBuilder {
    Arc::new(move |config: SessionConfig| Ok(session_state(config, runtime.clone())))
}

fn runtime_producer(runtime: Arc<RuntimeEnv>) -> RuntimeProducer {
    Arc::new(move |_: &SessionConfig| Ok(runtime.clone()))
}

fn config_producer() -> ConfigProducer {
    Arc::new(SessionConfig::new_with_ballista)
}

/// Runs a scheduler until the process ends.
pub async fn run_scheduler(opts: SchedulerOptions) -> Result<(), String> {
    use ballista_scheduler::cluster::BallistaCluster;
    use ballista_scheduler::config::SchedulerConfig;
    let timeout = opts.executor_timeout_s.max(1);
    let config = SchedulerConfig {
        bind_host: opts.bind.ip().to_string(),
        bind_port: opts.bind.port(),
        external_host: opts.external_host.unwrap_or_else(|| opts.bind.ip().to_string()),
        executor_timeout_seconds: timeout,
        expire_dead_executor_interval_seconds: (timeout / 4).max(1),
        no_executors_grace_period_seconds: timeout,
        override_session_builder: Some(session_builder(runtime_env())),
        override_config_producer: Some(config_producer()),
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&config).await.map_err(|e| e.to_string())?;
    eprintln!("profq: Ballista scheduler listening on {}", opts.bind);
    ballista_scheduler::scheduler_process::start_server(cluster, opts.bind, Arc::new(config)).await.map_err(|e| format!("scheduler on {}: {e}", opts.bind))
}

/// Runs an executor until the process ends or its scheduler stops it.
pub async fn run_executor(opts: ExecutorOptions) -> Result<(), String> {
    use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
    let (scheduler_host, scheduler_port) = opts
        .scheduler
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
        .ok_or_else(|| format!("--scheduler {:?}: expected HOST:PORT", opts.scheduler))?;
    let work_dir = opts.work_dir.unwrap_or_else(|| std::env::temp_dir().join(format!("profq-executor-{}", std::process::id())));
    std::fs::create_dir_all(&work_dir).map_err(|e| format!("{}: {e}", work_dir.display()))?;
    let runtime = runtime_env_spilling_to(Some(&work_dir));
    let config = ExecutorProcessConfig {
        bind_host: opts.bind.ip().to_string(),
        port: opts.bind.port(),
        grpc_port: opts.grpc_port,
        external_host: opts.external_host,
        scheduler_host,
        scheduler_port,
        vcores: opts.concurrent_tasks,
        work_dir: Some(work_dir.display().to_string()),
        executor_heartbeat_interval_seconds: opts.heartbeat_s.max(1),
        override_function_registry: Some(Arc::new(function_registry(runtime.clone()))),
        override_runtime_producer: Some(runtime_producer(runtime)),
        override_config_producer: Some(config_producer()),
        ..ExecutorProcessConfig::default()
    };
    eprintln!("profq: Ballista executor on {} (tasks on port {}), scheduler {}", opts.bind, opts.grpc_port, opts.scheduler);
    start_executor_process(Arc::new(config)).await.map_err(|e| format!("executor of scheduler {}: {e}", opts.scheduler))
}

/// A scheduler and `executors` executors of `vcores` task slots each, in this process, on
/// free ports of localhost, built from the pieces the real roles use (session builder,
/// runtime, function registry); returns the scheduler's `df://` address.
pub async fn in_process(executors: usize, vcores: usize) -> Result<String, String> {
    use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
    let runtime = runtime_env();
    let addr =
        ballista_scheduler::standalone::new_standalone_scheduler_with_builder(session_builder(runtime.clone()), config_producer(), BallistaCodec::default())
            .await
            .map_err(|e| e.to_string())?;
    let url = format!("http://localhost:{}", addr.port());
    for _ in 0..executors {
        let scheduler = SchedulerGrpcClient::connect(url.clone()).await.map_err(|e| format!("{url}: {e}"))?;
        ballista_executor::new_standalone_executor_from_builder(
            scheduler,
            vcores,
            config_producer(),
            runtime_producer(runtime.clone()),
            BallistaCodec::default(),
            function_registry(runtime.clone()),
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    Ok(format!("df://localhost:{}", addr.port()))
}
