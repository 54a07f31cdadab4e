//! Stage timings on stderr when `PROFQ_TIMING` is set: a profiling aid, never part of output.

use std::time::Instant;

pub fn enabled() -> bool {
    std::env::var_os("PROFQ_TIMING").is_some()
}

/// Prints how long `stage` took since `since`, then restarts the clock.
pub fn stage_done(stage: &str, since: &mut Instant) {
    if enabled() {
        eprintln!("profq: timing: {stage}: {:.3} s", since.elapsed().as_secs_f64());
    }
    *since = Instant::now();
}
