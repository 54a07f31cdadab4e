#!/usr/bin/env bash
# Runs every fuzz target for MINUTES each (default 10), seeded from the real captures.
# cargo fuzz needs nightly compiler flags; this machine has only the stable toolchain, so
# RUSTC_BOOTSTRAP=1 enables them. The first build instruments DataFusion too: expect a
# long first build. Crashes land in fuzz/artifacts/<target>/: copy each into
# tests/data/fuzz_regressions/<target>/ (a test replays them) and fix the decoder.
set -euo pipefail
cd "$(dirname "$0")"
MINUTES="${1:-10}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
export RUSTC_BOOTSTRAP=1
mkdir -p corpus/xplane corpus/trace_json corpus/hlo
for f in ../tests/data/jax_cpu/*/plugins/profile/*/*.xplane.pb; do
  cp "$f" "corpus/xplane/$(echo "$f" | cut -d/ -f5).xplane.pb"
done
for f in ../tests/data/jax_cpu/*/plugins/profile/*/perfetto_trace.json.gz; do
  gunzip -c "$f" > "corpus/trace_json/$(echo "$f" | cut -d/ -f5).json"
done
cp ../../shared/fixtures/public/TraceLens/mi300x_jax_conv_minimal_legacy/*.hlo_proto.pb corpus/hlo/ 2>/dev/null || true
for target in xplane trace_json hlo; do
  cargo fuzz run "$target" "corpus/$target" -- -max_total_time=$((MINUTES * 60)) -rss_limit_mb=4096 -max_len=4194304
done
