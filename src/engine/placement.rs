//! Where the SQL over a store runs: in this process, or on a Ballista cluster whose
//! scheduler the command line names (`--engine ballista --scheduler df://HOST:PORT`).
//! Chosen once per process, so that every store engine a command opens (its run, the
//! store's run list, a trends query) runs in the same place.

/// Where the SQL over a store runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// In this process.
    #[default]
    Here,
    /// On the Ballista cluster whose scheduler is at `df://HOST:PORT` (feature `ballista`).
    Cluster { scheduler: String },
}

/// The port of a scheduler address without one (Ballista's).
pub const DEFAULT_SCHEDULER_PORT: u16 = 50050;

/// `HOST:PORT` of a scheduler address `df://HOST[:PORT]`.
pub fn scheduler_address(scheduler: &str) -> Result<String, String> {
    let rest = scheduler.strip_prefix("df://").map(|r| r.trim_end_matches('/')).filter(|r| !r.is_empty() && !r.contains('/'));
    let rest = rest.ok_or_else(|| format!("{scheduler:?}: expected df://HOST:PORT"))?;
    Ok(match rest.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() => rest.to_string(),
        _ => format!("{rest}:{DEFAULT_SCHEDULER_PORT}"),
    })
}

/// Why a cluster placement fails in a build without the `ballista` feature.
pub const WITHOUT_BALLISTA: &str = "this profq was built without Ballista: build it with `cargo build --release --features ballista`";

/// The placement of this process's store engines, chosen once by the command line.
static PLACEMENT: std::sync::OnceLock<Placement> = std::sync::OnceLock::new();

impl Placement {
    /// Makes `self` where every store engine of this process runs ([`Engine::open_with`]);
    /// a cluster needs a profq built with the `ballista` feature.
    pub fn choose(self) -> Result<(), String> {
        if matches!(self, Placement::Cluster { .. }) && !cfg!(feature = "ballista") {
            return Err(WITHOUT_BALLISTA.into());
        }
        PLACEMENT.set(self).map_err(|_| "the engine's placement is chosen once per process".to_string())
    }

    /// The placement chosen, else [`Placement::Here`].
    pub fn chosen() -> &'static Placement {
        PLACEMENT.get_or_init(Placement::default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_addresses_read_as_ballista_writes_them() {
        assert_eq!(scheduler_address("df://10.0.0.10:50050").unwrap(), "10.0.0.10:50050");
        assert_eq!(scheduler_address("df://sched").unwrap(), "sched:50050");
        assert_eq!(scheduler_address("df://sched:7000/").unwrap(), "sched:7000");
        for wrong in ["http://sched:50050", "df://", "sched:50050", "df://sched/x"] {
            assert!(scheduler_address(wrong).unwrap_err().contains("expected df://HOST:PORT"), "{wrong}");
        }
    }
}
