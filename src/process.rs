//! The `profq` process: how it treats memory, signals and its exit (its tuning), and how
//! what it writes is named so that another process can tell it has died ([`writer_name`],
//! [`process_gone`]: the store's staging, the mirror's partial copies, a bucket's lock).
//!
//! None of the tuning changes an output; all of it is off with `PROFQ_PLAIN_PROCESS=1` (the
//! allocator's own defaults, huge pages as the system sets them, a normal exit), the first
//! thing to try when profq behaves oddly on an unusual system.
//!
//! * **Freed memory.** On a VM every page first touched costs its zeroing, so memory freed
//!   and taken again soon should stay with the process, and memory freed for good should go
//!   back, or it adds to the peak. The allocator cannot tell the two apart; the binary sets
//!   its purge delay per command ([`tune`]) and the stages say when they have just freed
//!   memory for good ([`freed_for_good`]).
//! * **Huge pages.** Where the host takes freed guest memory back (a virtio balloon that
//!   reports free pages) each huge-page fault waits for the host to back 2 MiB anew, so
//!   profq turns transparent huge pages off for itself there.
//! * **Exit.** The process ends with `_exit` once stdout is flushed: the allocator's exit
//!   handlers would walk every arena to hand freed pages back one range at a time, pages
//!   the kernel frees anyway with the address space. Every file profq writes is complete
//!   and closed (a store's fsynced) before then.
//! * **SIGPIPE** keeps its default action, so that a reader that stops early (`| head`)
//!   ends profq as it ends `cat`, quietly (this one is behaviour, and always on). Threads
//!   that talk to the network block it ([`block_sigpipe_in_this_thread`]): a peer gone
//!   mid-write is an error there, not the end of the process.
//!
//! `MIMALLOC_PURGE_DELAY` and `MIMALLOC_ALLOW_THP` in the environment, read by mimalloc
//! itself, override the first two.

use std::sync::OnceLock;

// The allocator whose options are set here (the binary makes it the global allocator).
extern crate mimalloc;

/// What the command about to run does with memory, which sets how freed pages go back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// An ingest: it holds one part at a time and reuses the previous part's pages, which
    /// the allocator's default delay keeps.
    Ingest,
    /// An analysis of an XPlane INPUT decoded in memory, in this many parts (the decode's
    /// part size divides its bytes).
    AnalysisOfXPlane { parts: u64 },
    /// Anything else: a stored run, trace JSON, or no profile at all.
    Other,
}

/// Whether the tuning is off (`PROFQ_PLAIN_PROCESS` set to anything but `0`).
pub fn plain() -> bool {
    std::env::var_os("PROFQ_PLAIN_PROCESS").is_some_and(|v| v != "0")
}

/// Sets the process up for `workload`; call once, before any other thread starts.
pub fn tune(workload: Workload) {
    if plain() {
        return;
    }
    avoid_transparent_huge_pages_where_costly();
    set_purge_policy(workload);
}

/// Ends the process with `code`: `_exit` after flushing stdout, or a normal exit when
/// [`plain`].
pub fn exit(code: u8) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    #[cfg(unix)]
    if !plain() {
        // SAFETY: `_exit` ends the process; no Rust state is used after it.
        unsafe { libc::_exit(i32::from(code)) }
    }
    std::process::exit(i32::from(code))
}

static GIVE_BACK: OnceLock<fn()> = OnceLock::new();

/// Says that memory just freed will not be taken again soon (an in-memory analysis has
/// dropped a part's decoded events): the allocator may return it to the kernel now. Does
/// nothing unless [`tune`] chose to purge on the stages' word.
pub fn freed_for_good() {
    if let Some(give_back) = GIVE_BACK.get() {
        give_back();
    }
}

/// The purge delay per workload (mimalloc's default is 1 s):
/// * an analysis of an XPlane INPUT of one or two parts frees each part's decoded events
///   before its queries allocate; with a long delay both are resident and the peak is their
///   sum, with a short one pages reused a moment later are faulted in and zeroed again. So
///   freed pages are kept until the stage says they are freed for good ([`freed_for_good`]);
/// * an INPUT of more parts decodes part after part, each part's pages serving the next:
///   2 s outlasts a part, so those pages are reused rather than returned and faulted in;
/// * other analyses keep nothing long (5 ms): they allocate in one sweep;
/// * an ingest keeps the default.
fn set_purge_policy(workload: Workload) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    match workload {
        Workload::Ingest => {}
        Workload::Other => purge_freed_memory_after(5),
        Workload::AnalysisOfXPlane { parts } if parts > 2 => purge_freed_memory_after(2000),
        Workload::AnalysisOfXPlane { .. } => {
            // Long enough never to expire during such an analysis: the purge comes from the stage.
            purge_freed_memory_after(60_000);
            let _ = GIVE_BACK.set(purge_freed_memory_now);
        }
    }
}

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    fn mi_collect(force: bool);
}

/// Sets how long mimalloc keeps freed pages before it returns them to the kernel.
fn purge_freed_memory_after(ms: std::ffi::c_long) {
    // `mi_option_purge_delay` in mimalloc.h (stable since mimalloc 2.1).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    // SAFETY: sets one integer option of the allocator linked into this process.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}

/// Returns to the kernel every freed page whose purge is pending.
fn purge_freed_memory_now() {
    // SAFETY: a collection of the allocator's own free lists.
    unsafe { mi_collect(true) }
}

/// Turns transparent huge pages off for this process where the host reclaims free pages
/// ([`host_reclaims_free_pages`]), unless `MIMALLOC_ALLOW_THP` decides (`=0` turns them
/// off anywhere, `=1` keeps them). Where no host takes memory back huge pages save page
/// faults and TLB misses, so they stay.
fn avoid_transparent_huge_pages_where_costly() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() || !host_reclaims_free_pages() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes one integer argument and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Restores SIGPIPE's default action (Rust ignores it, and `print!` would then panic on a
/// closed stdout); call first thing in `main`.
pub fn keep_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Makes a write to a closed pipe or socket from the calling thread fail (EPIPE) instead of
/// ending the process: for threads that talk to the network (object stores, a cluster's
/// scheduler and executors), whose peers may go away mid-write. hyper writes with
/// `writev`, which cannot ask the kernel to spare the signal. A blocked SIGPIPE stays
/// pending on its thread, harmless; the main thread keeps the default action for stdout.
pub fn block_sigpipe_in_this_thread() {
    #[cfg(unix)]
    // SAFETY: changes only the calling thread's signal mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Whether the host takes back the memory this (virtual) machine frees: a virtio balloon
/// device (`/sys/bus/virtio/devices/*/device` = `0x0005`) that offers free page reporting
/// (feature bit 5, `VIRTIO_BALLOON_F_REPORTING`, in its `features` string of 0s and 1s).
pub fn host_reclaims_free_pages() -> bool {
    let Ok(devices) = std::fs::read_dir("/sys/bus/virtio/devices") else { return false };
    devices.flatten().any(|d| {
        let read = |name: &str| std::fs::read_to_string(d.path().join(name)).unwrap_or_default();
        is_reporting_balloon(&read("device"), &read("features"))
    })
}

/// A virtio device's `device` id and `features` bits (sysfs text): a balloon that reports
/// free pages.
fn is_reporting_balloon(device: &str, features: &str) -> bool {
    const BALLOON: &str = "0x0005";
    const REPORTING_BIT: usize = 5;
    device.trim() == BALLOON && features.trim().as_bytes().get(REPORTING_BIT) == Some(&b'1')
}

/// A name for what this process writes now, unique to it and the moment: its pid, then the
/// wall clock in ns. What a killed writer left is told by the pid ([`writer_pid`]).
pub fn writer_name() -> String {
    format!("{}-{}", std::process::id(), crate::timing::now_ns())
}

/// The pid that leads a name made by [`writer_name`] (more may follow it).
pub fn writer_pid(name: &str) -> Option<u32> {
    name.split('-').next()?.parse().ok()
}

/// Whether process `pid` of this host has ended (this one never has).
pub fn process_gone(pid: u32) -> bool {
    pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::is_reporting_balloon;

    #[test]
    fn a_balloon_reports_free_pages_by_feature_bit_5() {
        // A Firecracker balloon's sysfs text, and variations of it.
        let reporting = "0110010100000000000000000000000010000000\n";
        assert!(is_reporting_balloon("0x0005\n", reporting));
        assert!(!is_reporting_balloon("0x0005\n", "0110000100000000000000000000000010000000\n"));
        assert!(!is_reporting_balloon("0x0002\n", reporting), "a block device");
        assert!(!is_reporting_balloon("0x0005", "0110"), "too few bits");
        assert!(!is_reporting_balloon("", ""));
    }
}
