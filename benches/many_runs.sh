#!/usr/bin/env bash
# profq over many runs against DuckDB's CLI on the same Parquet files (speed is measured here,
# never in tests). Builds stores of each size in SIZES (default "100 1000") from the committed
# captures (tests/data/jax_cpu, tests/data/jax_gpu), ingested once and replicated under new
# run ids (a run is its `<table>/run_id=<id>/` directories; the files hold no run id), then
# times, as paired ratios in the same run:
#   ad-hoc SQL:  GROUP BY run_id over `ops`, GROUP BY name over `events`  vs  duckdb on
#                read_parquet('<store>/<table>/*/*.parquet', hive_partitioning=true);
#   named queries over every run: `trends`, `op_trend` (profq only);
#   one run: `run hot_ops --run` and `summarize --run` (their cost should not grow with the
#   number of runs).
# Prints medians and ratios and appends every measurement to benches/results/<date>-<commit>.csv.
#
#   benches/many_runs.sh [RUNS]
#
# DUCKDB: DuckDB's CLI (pip install duckdb-cli), default on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
SIZES="${SIZES:-100 1000}"
DUCKDB="${DUCKDB:-duckdb}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

. benches/measure.sh
. benches/stores.sh

BASE="$SCRATCH/base"
ingest_committed "$BASE"

for SIZE in $SIZES; do
  STORE="$SCRATCH/store-$SIZE"
  MEASURE_INPUT="store of $SIZE runs"
  replicate "$BASE" "$STORE" "$SIZE"
  OP=$("$PROFQ" run trends --store "$STORE" --format json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["top_op"])')
  for i in $(seq "$RUNS"); do
    ROUND=$i
    measure adhoc profq_ops_by_run "$PROFQ" sql "SELECT run_id, count(*) AS n, sum(self_ns) AS s FROM ops GROUP BY run_id ORDER BY run_id" --store "$STORE"
    measure adhoc duckdb_ops_by_run "$DUCKDB" -c "SELECT run_id, count(*) AS n, sum(self_ns) AS s FROM read_parquet('$STORE/ops/*/*.parquet', hive_partitioning=true) GROUP BY run_id ORDER BY run_id"
    measure adhoc profq_events_by_name "$PROFQ" sql "SELECT name, count(*) AS n, sum(dur_ns) AS d FROM events GROUP BY name ORDER BY d DESC LIMIT 20" --store "$STORE"
    measure adhoc duckdb_events_by_name "$DUCKDB" -c "SELECT name, count(*) AS n, sum(dur_ns) AS d FROM read_parquet('$STORE/events/*/*.parquet', hive_partitioning=true) GROUP BY name ORDER BY d DESC LIMIT 20"
    measure named profq_trends "$PROFQ" run trends --store "$STORE"
    measure named profq_op_trend "$PROFQ" run op_trend --param "op=$OP" --store "$STORE"
    measure one_run profq_hot_ops_one_run "$PROFQ" run hot_ops --run run-1 --store "$STORE"
    measure one_run profq_summarize_one_run "$PROFQ" summarize --run run-1 --store "$STORE"
  done
  rm -rf "$STORE"
done

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
python3 benches/record.py "$RESULTS" "$COMMIT" "many runs" 0 0 < "$SCRATCH/results"
python3 - "$SCRATCH/results" "$RESULTS" "$SIZES" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
results, sizes = sys.argv[2], sys.argv[3].split()
def med(tool, size):
    return st.median(float(r[2]) for r in rows if r[1] == tool and r[8] == size)
for size in sizes:
    print(f'\nstore of {size} runs')
    for tool in dict.fromkeys(r[1] for r in rows):
        print(f'  {tool:26s} {med(tool, size):7.3f} s')
    for q in ['ops_by_run', 'events_by_name']:
        print(f'  {q}: profq / duckdb = {med("profq_" + q, size) / med("duckdb_" + q, size):.2f}x')
if len(sizes) > 1:
    a, b = sizes[0], sizes[-1]
    for tool in ['profq_hot_ops_one_run', 'profq_summarize_one_run']:
        print(f'{tool}: {b} runs / {a} runs = {med(tool, b) / med(tool, a):.2f}x (target 1x)')
print(f'appended to {results}')
PY
