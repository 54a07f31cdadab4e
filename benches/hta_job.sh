#!/usr/bin/env bash
# A PyTorch job of per-rank Kineto traces: profq's ingest plus summary of the job against
# HTA's (HolisticTraceAnalysis 0.5.0) load plus its four breakdowns, in the same rounds.
# HTA's figure is its own: TraceAnalysis load and the four calls as run_hta_oracle.py times
# them (`load_seconds` + each call's `seconds`), without Python's start and imports; the
# whole HTA process is recorded beside it. profq's is the two commands' wall time, and,
# beside it, the four HTA-defined queries run on the stored job (what HTA's calls compute).
#
#   benches/hta_job.sh [RUNS] [make_kineto_job.py options...]
#
# PYTHON: a Python with HolisticTraceAnalysis==0.5.0 (default .venv/bin/python).
# HTA_ORACLE: gen/run_hta_oracle.py of the shared fixtures (default ../shared/fixtures/gen).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
shift || true
PYTHON="${PYTHON:-.venv/bin/python}"
HTA_ORACLE="${HTA_ORACLE:-../shared/fixtures/gen/run_hta_oracle.py}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

. benches/measure.sh

python3 benches/make_kineto_job.py "$SCRATCH/job" "$@"
MEASURE_INPUT="kineto_job_$(ls "$SCRATCH/job" | wc -l)_ranks"
for i in $(seq "$RUNS"); do
  ROUND=$i
  rm -rf "$SCRATCH/store"
  measure pytorch_job profq_ingest "$PROFQ" ingest "$SCRATCH/job" --store "$SCRATCH/store" --run-id job
  measure pytorch_job profq_summarize "$PROFQ" summarize --run job --store "$SCRATCH/store" --output "$SCRATCH/summary.json"
  measure pytorch_job profq_hta_queries bash -c 'for q in temporal_breakdown idle_breakdown kernel_breakdown comm_comp_overlap; do "$0" run $q --run job --store "$1" --format json > /dev/null || exit 1; done' "$PROFQ" "$SCRATCH/store"
  measure pytorch_job hta_process "$PYTHON" "$HTA_ORACLE" --out "$SCRATCH/hta" "$SCRATCH"/job/*.json.gz
  "$PYTHON" - "$SCRATCH/hta/hta_oracle.json" "$i" "$MEASURE_INPUT" >> "$SCRATCH/results" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
own = o["load_seconds"] + sum(c["seconds"] for c in o["calls"].values())
print(f"pytorch_job hta_load_and_analyses {own:.2f} 0 0 {sys.argv[2]} {sys.argv[3]}")
PY
done

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
BYTES=$(du -cb "$SCRATCH"/job/*.json.gz | tail -1 | cut -f1)
python3 benches/record.py "$RESULTS" "$COMMIT" "$MEASURE_INPUT" "$BYTES" "$(ls "$SCRATCH/job" | wc -l)" < "$SCRATCH/results"
python3 - "$SCRATCH/results" "$RESULTS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
med = {t: st.median(float(r[2]) for r in rows if r[1] == t) for t in dict.fromkeys(r[1] for r in rows)}
for t, wall in med.items():
    print(f"{t:24} {wall:7.3f} s")
profq = med["profq_ingest"] + med["profq_summarize"]
print(f"profq ingest + summary {profq:.3f} s; HTA load + analyses {med['hta_load_and_analyses']:.3f} s: HTA / profq = {med['hta_load_and_analyses'] / profq:.2f}x")
with_hta = profq + med["profq_hta_queries"]
print(f"profq ingest + summary + the four HTA queries {with_hta:.3f} s: HTA / profq = {med['hta_load_and_analyses'] / with_hta:.2f}x")
print(f"appended to {sys.argv[2]}")
PY
