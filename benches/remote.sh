#!/usr/bin/env bash
# profq on object storage against plain local work, on moto's S3 server on 127.0.0.1 (speed is
# measured here, never in tests). Two figures, each a paired ratio in the same run:
#   ingest:  `profq ingest s3://…/<INPUT>` with a cold cache  vs  a plain download of the same
#            object (curl, one stream) + `profq ingest` of the downloaded file. Target ≤ 1.2×.
#   query:   a named query (hot_ops on one run) and an ad-hoc GROUP BY over every run on a
#            store of STORE_RUNS (default 20) committed captures in s3://  vs  the same store
#            on local disk.
# Prints the medians and ratios and appends every measurement to
# benches/results/<date>-<commit>.csv (the columns compare.sh writes; RESULTS overrides).
#
#   benches/remote.sh INPUT.xplane.pb [RUNS]
#
# PROFQ_VENV: a venv with moto[server] and boto3 (default .venv, as .ci/run makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT="$(realpath "$1")"
RUNS="${2:-3}"
STORE_RUNS="${STORE_RUNS:-20}"
VENV="${PROFQ_VENV:-.venv}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
SCRATCH="$(mktemp -d)"
PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT" > /dev/null 2>&1 &
MOTO=$!
trap 'kill $MOTO 2>/dev/null; rm -rf "$SCRATCH"' EXIT
export AWS_ENDPOINT="http://127.0.0.1:$PORT" AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_DEFAULT_REGION=us-east-1
for _ in $(seq 100); do curl -s -o /dev/null "$AWS_ENDPOINT" && break; sleep 0.1; done
OBJECTS=(tests/servers/objects.py s3 "$AWS_ENDPOINT")
"$VENV/bin/python" "${OBJECTS[@]}" mkbucket bench
NAME=$(basename "$INPUT")
"$VENV/bin/python" "${OBJECTS[@]}" upload bench in "$INPUT"
BYTES=$(wc -c < "$INPUT")

. benches/measure.sh

# A store of STORE_RUNS runs: the committed captures (tests/data), ingested locally, then
# copied into the bucket as they are.
CAPTURES=$(ls -d tests/data/jax_cpu/*/plugins/.. tests/data/jax_gpu/*/plugins/.. | head -n "$STORE_RUNS")
i=0
for c in $CAPTURES; do
  i=$((i + 1)); "$PROFQ" ingest "$c" --store "$SCRATCH/store" --run-id "run-$i" > /dev/null
done
"$VENV/bin/python" "${OBJECTS[@]}" upload bench store "$SCRATCH/store"
rm -rf "$SCRATCH/store/.staging" "$SCRATCH/store/.lock"

for i in $(seq "$RUNS"); do
  ROUND=$i
  export PROFQ_CACHE_DIR="$SCRATCH/cache-$i"
  MEASURE_INPUT=""
  measure ingest profq_ingest_s3 "$PROFQ" ingest "s3://bench/in/$NAME" --store "$SCRATCH/s-$i" --run-id bench
  measure ingest curl_download curl -sf --aws-sigv4 "aws:amz:$AWS_DEFAULT_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -o "$SCRATCH/dl-$i-$NAME" "$AWS_ENDPOINT/bench/in/$NAME"
  measure ingest profq_ingest_local "$PROFQ" ingest "$SCRATCH/dl-$i-$NAME" --store "$SCRATCH/l-$i" --run-id bench
  rm -rf "$SCRATCH/s-$i" "$SCRATCH/l-$i" "$SCRATCH/dl-$i-$NAME" "$SCRATCH/cache-$i"
  MEASURE_INPUT="store of $STORE_RUNS committed captures"
  for where in s3 local; do
    store="s3://bench/store"; [ "$where" = local ] && store="$SCRATCH/store"
    measure query "profq_run_hot_ops_$where" "$PROFQ" run hot_ops --run run-1 --store "$store"
    measure query "profq_sql_group_by_run_$where" "$PROFQ" sql "SELECT run_id, count(*) AS ops, sum(self_ns) AS self_ns FROM ops GROUP BY run_id" --store "$store"
  done
done

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
python3 benches/record.py "$RESULTS" "$COMMIT" "$NAME" "$BYTES" 1 < "$SCRATCH/results"
python3 - "$SCRATCH/results" "$RESULTS" "$STORE_RUNS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
results, store_runs = sys.argv[2], sys.argv[3]
med = lambda tool: st.median(float(r[2]) for r in rows if r[1] == tool)
rss = lambda tool: max(int(r[4]) for r in rows if r[1] == tool)
for tool in sorted({r[1] for r in rows}):
    print(f'{tool:34s} {med(tool):7.3f} s  peak {rss(tool) / 1024:6.0f} MB')
local_path = med('curl_download') + med('profq_ingest_local')
print(f'ingest from s3:// / (download + local ingest): {med("profq_ingest_s3") / local_path:.2f}x (target <= 1.2x)')
for q in ['profq_run_hot_ops', 'profq_sql_group_by_run']:
    print(f'{q[6:]} on s3:// / on local disk ({store_runs} runs): {med(q + "_s3") / med(q + "_local"):.2f}x')
print(f'appended to {results}')
PY
