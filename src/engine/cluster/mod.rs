//! profq's SQL on an Apache Ballista cluster (feature `ballista`): the client that sends a
//! store's statements to a scheduler, and the session each role of the cluster builds.
//!
//! The scheduler and the executors are profq's own binary (`profq ballista scheduler` and
//! `executor`, [`roles`]), so every side has profq's SQL functions and its object-store
//! registry: the scheduler lists a store's files while it plans, the executors read them.
//! A plan names a function and each side looks the name up in its own registry, so the
//! same functions must be registered everywhere; that is what [`session_state`] and
//! [`function_registry`] are for. Only listing and empty tables travel in a plan, so the
//! engine's in-memory and plan-ahead tables never run here.

pub mod roles;

use super::{functions, runtime_env, QueryError};
use ballista::prelude::SessionContextExt;
use ballista_core::extension::{ballista_aggregate_functions, ballista_scalar_functions, ballista_window_functions, SessionConfigExt};
use ballista_core::registry::BallistaFunctionRegistry;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use std::sync::Arc;

/// A session of a cluster's role, for a client session's `config`: DataFusion's functions
/// with the nested ones (arrays, maps, `generate_series`: several named queries use them),
/// Ballista's logical rules, and profq's functions and runtime (its object stores).
pub fn session_state(config: SessionConfig, runtime: Arc<RuntimeEnv>) -> SessionState {
    let mut scalar = ballista_scalar_functions();
    scalar.extend(functions::scalar_functions().into_iter().map(Arc::new));
    let mut aggregate = ballista_aggregate_functions();
    aggregate.extend(functions::aggregate_functions().into_iter().map(Arc::new));
    SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_optimizer_rules(ballista_core::optimizer::ballista_default_optimizer_rules())
        .with_scalar_functions(scalar)
        .with_aggregate_functions(aggregate)
        .with_window_functions(ballista_window_functions())
        .build()
}

/// The functions an executor can run: those of [`session_state`]. Ballista's default
/// registry lacks the nested ones, and tasks that call them would be rejected.
pub fn function_registry(runtime: Arc<RuntimeEnv>) -> BallistaFunctionRegistry {
    BallistaFunctionRegistry::from(&session_state(SessionConfig::new_with_ballista(), runtime))
}

/// A session whose statements run on the cluster of `scheduler` (`df://HOST:PORT`).
pub async fn client(scheduler: &str, config: SessionConfig) -> Result<SessionContext, QueryError> {
    reachable(scheduler)?;
    // Ballista's adaptive planner re-planned one of the named queries (a join of a window's
    // result) into new stages without end; the static planner runs every query.
    let config = config.upgrade_for_ballista().set_bool(ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED, false);
    let ctx = SessionContext::remote_with_state(scheduler, session_state(config, runtime_env()))
        .await
        .map_err(|e| QueryError(format!("Ballista scheduler at {scheduler}: {e}")))?;
    // Connecting rebuilds the client's function lists from Ballista's own, without profq's:
    // the planner would not know them.
    functions::register(&ctx);
    Ok(ctx)
}

/// Whether the scheduler accepts connections: Ballista itself would connect only when the
/// first statement runs, and report a refused connection as a failed job.
fn reachable(scheduler: &str) -> Result<(), QueryError> {
    use std::net::{TcpStream, ToSocketAddrs};
    let unreachable = |why: String| QueryError(format!("cannot reach the Ballista scheduler at {scheduler}: {why}"));
    let address = super::scheduler_address(scheduler).map_err(unreachable)?;
    let mut why = "the name resolves to no address".to_string();
    for a in address.to_socket_addrs().map_err(|e| unreachable(e.to_string()))? {
        match TcpStream::connect_timeout(&a, std::time::Duration::from_secs(5)) {
            Ok(_) => return Ok(()),
            Err(e) => why = e.to_string(),
        }
    }
    Err(unreachable(why))
}
