#!/usr/bin/env bash
# Runs every fuzz target for RUNS executions each (default 1,000,000), seeded with fuzz/seeds/
# (small well-formed inputs cut from the committed captures; rebuild with fuzz/make_seeds.py).
#
#   fuzz/run.sh [RUNS] [TARGET...]          targets: xplane trace_json hlo (default: all)
#
# cargo fuzz needs nightly compiler flags; with only a stable toolchain RUSTC_BOOTSTRAP=1
# enables them. The fuzz crate builds profq without its `engine` feature (no DataFusion), with
# debug assertions (integer overflow panics) and no sanitizer: the decoders are safe Rust, so
# what is hunted are panics, hangs (-timeout) and huge allocations (-rss_limit_mb,
# -malloc_limit_mb). Crashes land in fuzz/artifacts/<target>/: copy each into
# tests/data/fuzz_regressions/<target>/ (cargo test replays them) and fix the decoder.
set -euo pipefail
cd "$(dirname "$0")"
RUNS="${1:-1000000}"
shift || true
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(xplane trace_json hlo)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for target in "${TARGETS[@]}"; do
  mkdir -p "corpus/$target"
  cp -n seeds/"$target"/* "corpus/$target/"
  cargo fuzz run -s none -O -a "$target" "corpus/$target" -- \
    -runs="$RUNS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1
done
