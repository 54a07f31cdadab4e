#!/usr/bin/env bash
# Generates the ~1 M-event, ~40 MB benchmark XPlane with the shared generator
# (transformer_lm, 6 layers, 250 steps) into $1 (default: target/bench/transformer_lm_6x250).
# Needs a Python with jax[cpu]==0.10.2 optax flax: set BENCH_PYTHON (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-target/bench/transformer_lm_6x250}"
PY="${BENCH_PYTHON:-python3}"
GEN="$(cd ../shared/fixtures/gen && pwd)"
mkdir -p "$OUT"
(cd "$GEN" && "$PY" transformer_lm.py --layers 6 --steps 250 --out "$(cd - >/dev/null && cd "$OUT" && pwd)")
find "$OUT" -name '*.xplane.pb' -printf '%s bytes  %p\n'
