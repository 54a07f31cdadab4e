//! Work spread over threads by a shared queue rather than by fixed shares.
//!
//! Items of one stage rarely cost the same (a line's events may all carry stats, or all be
//! new memory to fault in), so a thread that is handed a fixed share can leave the other
//! cores idle while it finishes. Here every thread takes the next item as it finishes one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f(0)`, `f(1)`, … `f(count - 1)` on up to `threads` threads, each thread taking the next
/// index as it finishes one; the results in index order. A panic in `f` is raised again here.
pub fn map_in_order<R: Send>(count: usize, threads: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let results: Vec<Mutex<Option<R>>> = (0..count).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, count.max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = results.get(k) else { break };
                let value = f(k);
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
            });
        }
    });
    results.into_iter().map(|slot| slot.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every item is mapped once")).collect()
}

#[cfg(test)]
mod tests {
    use super::map_in_order;

    #[test]
    fn results_come_in_index_order_whatever_thread_made_them() {
        // Early items are slow, so later ones finish first on the other threads.
        let out = map_in_order(40, 4, |k| {
            if k < 4 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            k * 10
        });
        assert_eq!(out, (0..40).map(|k| k * 10).collect::<Vec<_>>());
        assert!(map_in_order(0, 4, |k| k).is_empty());
        assert_eq!(map_in_order(3, 0, |k| k), vec![0, 1, 2]);
    }
}
