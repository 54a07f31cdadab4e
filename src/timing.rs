//! Stage timings on stderr when `PROFQ_TIMING` is set: a profiling aid, never part of output.

use std::time::Instant;

pub fn enabled() -> bool {
    std::env::var_os("PROFQ_TIMING").is_some()
}

/// Resident memory now and its peak so far (Linux `VmRSS`, `VmHWM`), in MiB; 0 where unknown.
fn rss_mib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        let kb = status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
        kb.unwrap_or(0) / 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Prints how long `stage` took since `since` (and the RSS now and at its peak), then restarts the clock.
pub fn stage_done(stage: &str, since: &mut Instant) {
    if enabled() {
        let (now, peak) = rss_mib();
        eprintln!("profq: timing: {stage}: {:.3} s (RSS {now} MiB, peak {peak} MiB)", since.elapsed().as_secs_f64());
    }
    *since = Instant::now();
}
