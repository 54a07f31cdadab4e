//! Work spread over the process's worker pool: one thread per core, started once (rayon's
//! global pool) and shared by every stage.
//!
//! Items of one stage rarely cost the same (a line's events may all carry stats, or all be
//! new memory to fault in), so a thread that is handed a fixed share can leave the other
//! cores idle while it finishes: here each worker takes the next item as it finishes one.
//! Stages that overlap (a part decoding while the previous one is derived) share the pool's
//! threads rather than each starting as many as there are cores: on two cores, threads
//! started per stage left more threads runnable than cores, and a summarize of the 43 MB
//! XPlane took ~5 % longer in wall time for the same CPU time.
//!
//! Only work that computes belongs here: a pool thread that waits on a channel (a pipeline
//! stage, a file writer) would hold a core's worker; those have threads of their own.

use rayon::prelude::*;
use std::sync::OnceLock;

/// The pool: one worker per core, at most 16 (more cores add threads that each hold a
/// unit's columns, more than they add speed to a decode that reads one file).
fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 16);
        rayon::ThreadPoolBuilder::new().num_threads(cores).thread_name(|k| format!("profq-worker-{k}")).build().expect("the worker pool starts")
    })
}

/// How many workers the pool has.
pub fn workers() -> usize {
    pool().current_num_threads()
}

/// `f` of each of `items` on the pool's workers, each taking the next item as it finishes
/// one; the results in the items' order. A panic in `f` is raised again here.
pub fn map_in_order<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    // Items are units sized for one worker each: none is split further.
    pool().install(|| items.into_par_iter().with_max_len(1).map(f).collect())
}

/// `a` and `b` side by side on the pool's workers; a panic in either is raised again here.
pub fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    pool().install(|| rayon::join(a, b))
}

/// Lets the calling thread run only on cycles no other thread wants (`SCHED_IDLE` on Linux):
/// for work off the critical path whose result is needed late (a summary's plans, the
/// trace's digest), so that it fills the cores' idle time instead of holding up the stages
/// whose results are needed first. Elsewhere it does nothing.
pub fn run_only_when_idle() {
    #[cfg(all(target_os = "linux", feature = "engine"))]
    // SAFETY: sched_setscheduler reads the parameter struct only; pid 0 is this thread.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

#[cfg(test)]
mod tests {
    use super::map_in_order;

    #[test]
    fn results_come_in_item_order_whatever_thread_made_them() {
        // Early items are slow, so later ones finish first on the other threads.
        let out = map_in_order((0..40).collect(), |k: usize| {
            if k < 4 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            k * 10
        });
        assert_eq!(out, (0..40).map(|k| k * 10).collect::<Vec<_>>());
        assert!(map_in_order(Vec::<usize>::new(), |k| k).is_empty());
        assert_eq!(map_in_order(vec!["a".to_string(), "b".to_string()], |s| s + "!"), vec!["a!", "b!"]);
    }
}
