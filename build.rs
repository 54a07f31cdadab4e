//! How profq's binaries are linked.
//!
//! - Position-dependent on Linux. A PIE binary of this size (~100 MB of code, most of it
//!   DataFusion's and Arrow's) starts with ~230 K relative relocations, each writing a pointer
//!   into a page of its own copy of `.data.rel.ro`: ~4.5 ms and ~1,000 page faults before
//!   `main`, on every command. Linked at a fixed address the loader has nothing to relocate
//!   and those pages stay shared with the page cache (`profq --version`: 6.3 ms → 1.9 ms on
//!   the 2-core VM).
//! - Identical functions folded into one (`--icf=all`) in release builds that rust-lld links,
//!   the default linker of x86_64 Linux: every codegen unit of every crate keeps a copy of the
//!   drop glue and inlined generics it uses, and many copies are the same machine code.
//!   4 % of the release binary without LTO, at the same speed
//!   (benches/results/2026-12-07-binary-size.csv).
//!   Skipped where another linker may be in use (one named in the environment or in
//!   RUSTFLAGS), since GNU ld has no `--icf`.
//!
//! Only the link of the binaries changes: libraries and dependencies build as before.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // What a user sets to change the linker, which the decision below depends on (cargo
    // hands the build script RUSTC_LINKER and CARGO_ENCODED_RUSTFLAGS from these).
    for key in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER"] {
        println!("cargo:rerun-if-env-changed={key}");
    }
    let env = |key: &str| std::env::var(key).unwrap_or_default();
    if env("CARGO_CFG_TARGET_OS") == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    let default_lld =
        env("TARGET") == "x86_64-unknown-linux-gnu" && std::env::var_os("RUSTC_LINKER").is_none() && !env("CARGO_ENCODED_RUSTFLAGS").contains("link");
    if env("PROFILE") == "release" && default_lld {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}
