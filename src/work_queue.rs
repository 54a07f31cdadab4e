//! Work spread over threads by a shared queue rather than by fixed shares.
//!
//! Items of one stage rarely cost the same (a line's events may all carry stats, or all be
//! new memory to fault in), so a thread that is handed a fixed share can leave the other
//! cores idle while it finishes. Here every thread takes the next item as it finishes one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of each of `items` on up to `threads` threads, each thread taking the next item as it
/// finishes one; the results in the items' order. A panic in `f` is raised again here.
pub fn map_in_order<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let count = items.len();
    // Each item is taken by exactly one thread, which leaves its result in the same slot.
    let slots: Vec<Mutex<(Option<T>, Option<R>)>> = items.into_iter().map(|item| Mutex::new((Some(item), None))).collect();
    let next = AtomicUsize::new(0);
    let lock = |k: usize| slots[k].lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, count.max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= count {
                    break;
                }
                let item = lock(k).0.take().expect("every item is taken once");
                let value = f(item);
                lock(k).1 = Some(value);
            });
        }
    });
    slots.into_iter().map(|slot| slot.into_inner().unwrap_or_else(|e| e.into_inner()).1.expect("every item is mapped once")).collect()
}

#[cfg(test)]
mod tests {
    use super::map_in_order;

    #[test]
    fn results_come_in_item_order_whatever_thread_made_them() {
        // Early items are slow, so later ones finish first on the other threads.
        let out = map_in_order((0..40).collect(), 4, |k: usize| {
            if k < 4 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            k * 10
        });
        assert_eq!(out, (0..40).map(|k| k * 10).collect::<Vec<_>>());
        assert!(map_in_order(Vec::<usize>::new(), 4, |k| k).is_empty());
        assert_eq!(map_in_order(vec!["a".to_string(), "b".to_string()], 0, |s| s + "!"), vec!["a!", "b!"]);
    }
}
