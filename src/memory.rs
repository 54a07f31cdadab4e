//! When freed memory goes back to the kernel: the binary chooses its allocator's policy, and
//! the stages say when they have just freed memory that the next stages will not reuse.
//!
//! On a VM every page first touched costs its zeroing (~1 ms a fresh MB in slow spells), so
//! memory freed and taken again should stay with the process; memory freed for good should
//! go back, or it adds to the peak. The allocator cannot tell the two apart by itself: a
//! short purge delay gives back both, a long one keeps both.

use std::sync::OnceLock;

static GIVE_BACK: OnceLock<fn()> = OnceLock::new();

/// Sets what [`freed_for_good`] does (once; later calls are ignored). Without it,
/// [`freed_for_good`] does nothing and the allocator's own policy alone applies.
pub fn give_back_with(give_back: fn()) {
    let _ = GIVE_BACK.set(give_back);
}

/// Says that memory just freed will not be taken again soon (an in-memory analysis has
/// dropped a part's decoded events): the allocator may return it to the kernel now.
pub fn freed_for_good() {
    if let Some(give_back) = GIVE_BACK.get() {
        give_back();
    }
}
