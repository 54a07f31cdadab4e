//! When freed memory goes back to the kernel: the binary chooses its allocator's policy, and
//! the stages say when they have just freed memory that the next stages will not reuse; and
//! whether the host reclaims what the machine frees (where huge pages cost more than they save).
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

/// Whether the host takes back the memory this (virtual) machine frees: a virtio balloon
/// device (`/sys/bus/virtio/devices/*/device` = `0x0005`) that offers free page reporting
/// (feature bit 5, `VIRTIO_BALLOON_F_REPORTING`, in its `features` string of 0s and 1s).
/// There each fresh page costs the host's backing too, a 2 MiB huge page at once: the binary
/// turns transparent huge pages off (docs/decisions.md, Memory).
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

#[cfg(test)]
mod tests {
    use super::is_reporting_balloon;

    #[test]
    fn a_balloon_reports_free_pages_by_feature_bit_5() {
        // As read on the project's VM (a Firecracker balloon), and variations of it.
        let reporting = "0110010100000000000000000000000010000000\n";
        assert!(is_reporting_balloon("0x0005\n", reporting));
        assert!(!is_reporting_balloon("0x0005\n", "0110000100000000000000000000000010000000\n"));
        assert!(!is_reporting_balloon("0x0002\n", reporting), "a block device");
        assert!(!is_reporting_balloon("0x0005", "0110"), "too few bits");
        assert!(!is_reporting_balloon("", ""));
    }
}
