# Sourced by the benchmark scripts that need stores of many runs (many_runs.sh, ballista.sh).
# `ingest_committed BASE` ingests every committed capture (tests/data/jax_cpu, jax_gpu) into
# the store BASE as runs base-1 … base-N and sets BASE_RUNS=N. `replicate BASE STORE SIZE`
# makes STORE a store of SIZE runs, run-k a copy of base run (k mod BASE_RUNS) + 1 (a run
# is its `<table>/run_id=<id>/` directories; the files hold no run id). Needs $PROFQ.
ingest_committed() {
  local base=$1 c
  BASE_RUNS=0
  for c in $(ls -d tests/data/jax_cpu/*/plugins/.. tests/data/jax_gpu/*/plugins/..); do
    BASE_RUNS=$((BASE_RUNS + 1)); "$PROFQ" ingest "$c" --store "$base" --run-id "base-$BASE_RUNS" > /dev/null 2>&1
  done
}

replicate() {
  local base=$1 store=$2 size=$3 table t k
  for table in "$base"/*/; do
    t=$(basename "$table"); mkdir -p "$store/$t"
    for k in $(seq 0 $((size - 1))); do cp -r "$table/run_id=base-$((k % BASE_RUNS + 1))" "$store/$t/run_id=run-$k"; done
  done
}
