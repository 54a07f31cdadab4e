//! The `pip install profq` route: the wheel maturin builds (the debug profile, in the tests'
//! own target dir, so it costs a link), installed into a fresh venv without the network, puts
//! a working `profq` on the venv's PATH that runs the README's main command.

mod common;

use common::servers::{missing, python, venv_program};
use common::*;
use std::path::Path;
use std::process::Command;

#[test]
fn the_wheel_installs_a_working_profq() {
    let Some(maturin) = venv_program("maturin") else { return missing("maturin (pip install maturin)") };
    let dir = temp_dir("wheel");
    // The target dir the test binary was built in: .../<target>/debug/profq.
    let target = Path::new(env!("CARGO_BIN_EXE_profq")).parent().and_then(Path::parent).unwrap();
    let wheels = dir.join("wheels");
    let mut build = Command::new(&maturin);
    build.args(["build", "--profile", "dev", "--out", wheels.to_str().unwrap()]).current_dir(repo());
    as_from_the_shell(&mut build);
    let o = build.env("CARGO_TARGET_DIR", target).output().unwrap();
    assert!(o.status.success(), "maturin build: {}", stderr(&o));
    let wheel = std::fs::read_dir(&wheels).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "whl")).expect("a wheel");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(name.starts_with(&format!("profq-{version}-py3-none-manylinux_")), "version from Cargo.toml, a manylinux tag: {name}");

    // A fresh venv, and nothing but the wheel: no index, no other package.
    let venv = dir.join("venv");
    let o = Command::new(python()).args(["-m", "venv", venv.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "venv: {}", stderr(&o));
    let o = Command::new(venv.join("bin/pip")).args(["install", "--no-index", "--disable-pip-version-check", wheel.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "pip install: {}", stderr(&o));
    let installed = venv.join("bin/profq");
    let o = Command::new(&installed).arg("--version").output().unwrap();
    assert_eq!(stdout(&o).trim(), format!("profq {version}"));

    // The README's main command, with the installed profq.
    let store = dir.join("store");
    let run = |args: &[&str]| {
        let o = Command::new(&installed).args(args).current_dir(repo()).env_remove("PROFQ_STORE").output().unwrap();
        assert!(o.status.success(), "profq {args:?}: {}", stderr(&o));
        stdout(&o)
    };
    run(&["ingest", "tests/data/jax_cpu/transformer_lm", "--store", store.to_str().unwrap()]);
    let answer = run(&["query", "show hierarchical regions", "--run", "transformer_lm", "--store", store.to_str().unwrap(), "--format", "table"]);
    assert!(answer.contains("region"), "{answer}");
}

/// `cmd` in the environment `cargo test` was started from: without what cargo sets for the
/// test process (its `CARGO_*` package variables, `OUT_DIR`, rustup's toolchain variables, its
/// library and tool paths). Under them the build's dependencies would not be the ones the
/// tests were built with (a crate that reads such a variable at compile time is rebuilt), and
/// the wheel would cost a whole build instead of a link.
fn as_from_the_shell(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let set_by_cargo = (key.starts_with("CARGO") && key != "CARGO_HOME") || key.starts_with("RUSTUP_TOOLCHAIN");
        if set_by_cargo || ["OUT_DIR", "RUST_RECURSION_COUNT", "LD_LIBRARY_PATH"].contains(&key.as_ref()) {
            cmd.env_remove(key.as_ref());
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        let kept: Vec<_> = std::env::split_paths(&path).filter(|p| !p.to_string_lossy().contains("/lib/rustlib/")).collect();
        cmd.env("PATH", std::env::join_paths(kept).unwrap());
    }
}
