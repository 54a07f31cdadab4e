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

/// Lets the process end without waiting for the kernel to free its memory: a holder process
/// that shares the address space (`clone(CLONE_VM)`, not a thread) keeps it alive past the
/// process's exit, so the exit is reported to the caller at once, and the kernel frees the
/// pages when the holder ends, right after. Freeing the ~200 MB of an
/// ingest of the 41 MB bench file took ~16 ms after its output line, on one core; mold forks
/// for the same reason. Call once, before any file is opened: the holder closes every
/// descriptor it was given, so that no pipe or lock outlives the process. Needs Linux 5.3
/// (pidfd); where the holder cannot be made or cannot watch the process, the process frees its
/// memory at exit as before. So it does with `PROFQ_FREE_AT_EXIT` set, and under valgrind
/// (which ends a program that clones so).
///
/// The time the kernel takes to free the pages is then the holder's, not the process's: a
/// caller's CPU time and wait no longer include it; its peak RSS does.
#[cfg(all(feature = "engine", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn free_address_space_after_exit() {
    const STACK_BYTES: usize = 64 * 1024;
    let under_valgrind = std::env::var("LD_PRELOAD").is_ok_and(|preload| preload.contains("vgpreload"));
    if under_valgrind || std::env::var_os("PROFQ_FREE_AT_EXIT").is_some() {
        return;
    }
    // SAFETY: the holder runs on a stack of its own and makes raw system calls only: it reads
    // and writes no memory of the process (no errno, no TLS, no allocation), so sharing the
    // address space with the running process is sound. Every signal is blocked in it (the mask
    // is inherited): no handler of the process runs on its stack.
    unsafe {
        let stack =
            libc::mmap(std::ptr::null_mut(), STACK_BYTES, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK, -1, 0);
        if stack == libc::MAP_FAILED {
            return;
        }
        let (mut all, mut before): (libc::sigset_t, libc::sigset_t) = (std::mem::zeroed(), std::mem::zeroed());
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
        let parent = libc::getpid() as usize;
        let top = (stack as *mut u8).add(STACK_BYTES) as *mut libc::c_void;
        // No exit signal: the holder outlives its parent and is reaped by whoever adopts it.
        libc::clone(hold_address_space, top, libc::CLONE_VM, parent as *mut libc::c_void);
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
    }
}

/// The holder of [`free_address_space_after_exit`]: closes its descriptors, waits until its
/// parent (`parent`, a pid) has ended, every thread of it (a pidfd turns readable then; woken
/// earlier, as by a parent-death signal, which comes when the main thread ends, its freeing
/// would hold up the other threads' exits), and ends.
#[cfg(all(feature = "engine", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
extern "C" fn hold_address_space(parent: *mut libc::c_void) -> libc::c_int {
    // SAFETY: system calls on registers and the holder's own stack only.
    unsafe {
        // close_range (Linux 5.9); on an older kernel each of the usual first descriptors.
        if raw_syscall(libc::SYS_close_range, [0, u32::MAX as usize, 0, 0, 0]) != 0 {
            for fd in 0..1024 {
                raw_syscall(libc::SYS_close, [fd, 0, 0, 0, 0]);
            }
        }
        let pidfd = raw_syscall(libc::SYS_pidfd_open, [parent as usize, 0, 0, 0, 0]) as isize;
        // The pidfd is of the parent only if the parent was still there after it was made.
        if pidfd >= 0 && raw_syscall(libc::SYS_getppid, [0; 5]) == parent as usize {
            let mut watch = libc::pollfd { fd: pidfd as libc::c_int, events: libc::POLLIN, revents: 0 };
            while (raw_syscall(libc::SYS_ppoll, [&mut watch as *mut libc::pollfd as usize, 1, 0, 0, 8]) as isize) <= 0 {}
        }
        raw_syscall(libc::SYS_exit, [0; 5]);
    }
    0
}

/// A system call, made without libc (which would set the calling thread's errno, which the
/// holder shares with the main thread).
#[cfg(all(feature = "engine", target_os = "linux", target_arch = "x86_64"))]
unsafe fn raw_syscall(number: libc::c_long, [a, b, c, d, e]: [usize; 5]) -> usize {
    let ret: usize;
    std::arch::asm!("syscall", inlateout("rax") number as usize => ret, in("rdi") a, in("rsi") b, in("rdx") c, in("r10") d, in("r8") e,
        lateout("rcx") _, lateout("r11") _, options(nostack));
    ret
}

#[cfg(all(feature = "engine", target_os = "linux", target_arch = "aarch64"))]
unsafe fn raw_syscall(number: libc::c_long, [a, b, c, d, e]: [usize; 5]) -> usize {
    let ret: usize;
    std::arch::asm!("svc 0", in("x8") number as usize, inlateout("x0") a => ret, in("x1") b, in("x2") c, in("x3") d, in("x4") e, options(nostack));
    ret
}

/// Elsewhere the process frees its memory at exit.
#[cfg(not(all(feature = "engine", target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
pub fn free_address_space_after_exit() {}

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
