//! Stage timings on stderr when `PROFQ_TIMING` is set: a profiling aid, never part of output.
//! `PROFQ_TIMING=serial` also runs a summary's queries one at a time, so that each query's
//! time is its own rather than shared with the others running beside it, and splits each
//! SQL statement's time into planning (SQL to plan; optimize and physical plan) and execution;
//! with `PROFQ_EXPLAIN` set too, it prints each executed plan with its operators' metrics.
//! Also the wall clock's reading, for what records when it happened ([`now_ns`], [`now_utc`]).

use std::sync::OnceLock;
use std::time::Instant;

static PROCESS_START: OnceLock<Instant> = OnceLock::new();

/// The wall clock: ns since the Unix epoch (0 for a clock set before it).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// ISO-8601 UTC with microseconds and a `Z` suffix.
pub fn iso_utc(epoch_ns: i64) -> String {
    let secs = epoch_ns.div_euclid(1_000_000_000);
    let micros = epoch_ns.rem_euclid(1_000_000_000) / 1000;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", sod / 3600, sod % 3600 / 60, sod % 60)
}

/// ISO-8601 UTC of now, as a record's timestamp.
pub fn now_utc() -> String {
    iso_utc(now_ns())
}

/// Marks the start of the process: each stage line then also says when it ended since
/// then (which stages wait on others shows in these times, not in the stage durations).
/// Where nothing marked it, the times count from the first stage line.
pub fn mark_start() {
    PROCESS_START.get_or_init(Instant::now);
}

pub fn enabled() -> bool {
    std::env::var_os("PROFQ_TIMING").is_some()
}

/// Whether queries should run one at a time (`PROFQ_TIMING=serial`).
pub fn serial() -> bool {
    std::env::var_os("PROFQ_TIMING").is_some_and(|v| v == "serial")
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

/// CPU seconds (user + system) of the whole process so far and its minor page faults
/// (Linux `/proc/self/stat`); zeros where unknown.
fn cpu_and_faults() -> (f64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name, which may itself hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let field = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // minflt is field 10 of the file, utime 14, stime 15 (1-based); `fields` starts at field 3.
    ((field(11) + field(12)) as f64 / 100.0, field(7))
}

/// Prints how long `stage` took since `since` (and the process's CPU time, minor faults,
/// RSS now and at its peak, all so far), then restarts the clock.
pub fn stage_done(stage: &str, since: &mut Instant) {
    if enabled() {
        let (now, peak) = rss_mib();
        let (cpu, faults) = cpu_and_faults();
        let at_ms = PROCESS_START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3;
        eprintln!(
            "profq: timing: {stage}: {:.3} s (at {at_ms:.1} ms; so far: CPU {cpu:.2} s, {faults} faults; RSS {now} MiB, peak {peak} MiB)",
            since.elapsed().as_secs_f64()
        );
    }
    *since = Instant::now();
}

#[cfg(test)]
mod tests {
    use super::iso_utc;

    #[test]
    fn iso_times() {
        assert_eq!(iso_utc(1_786_190_400_123_456_000), "2026-08-08T12:00:00.123456Z");
    }
}
