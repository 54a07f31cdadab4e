//! Links profq's binaries as position-dependent executables on Linux.
//!
//! A PIE binary of this size (~130 MB of code, most of it DataFusion's and Arrow's) starts
//! with ~230 K relative relocations, each writing a pointer into a page of its own copy of
//! `.data.rel.ro`: ~4.5 ms and ~1,000 page faults before `main`, on every command. Linked at
//! a fixed address the loader has nothing to relocate and those pages stay shared with the
//! page cache (`profq --version`: 6.3 ms → 1.9 ms on the 2-core VM). Only the link of the
//! binaries changes: libraries and dependencies build as before, so no rebuild of them.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
