//! Stage timings on stderr when `PROFQ_TIMING` is set: a profiling aid, never part of output.

use std::time::Instant;

pub fn enabled() -> bool {
    std::env::var_os("PROFQ_TIMING").is_some()
}

/// Peak resident memory so far (Linux `VmHWM`), in MiB; 0 where unknown.
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kb.unwrap_or(0) / 1024
}

/// Prints how long `stage` took since `since` (and the peak RSS so far), then restarts the clock.
pub fn stage_done(stage: &str, since: &mut Instant) {
    if enabled() {
        eprintln!("profq: timing: {stage}: {:.3} s (peak RSS {} MiB)", since.elapsed().as_secs_f64(), peak_rss_mib());
    }
    *since = Instant::now();
}
