#!/usr/bin/env bash
# profq's SQL on a Ballista cluster against the local engine, on the same store, in the same
# run (speed is measured here, never in tests). Builds a store of SIZE runs (default 1000)
# from the committed captures (ingested once, replicated under new run ids), on local disk
# and in moto's S3 (when its venv is there), starts `profq ballista scheduler` and two
# executors on 127.0.0.1, and times, locally and on the cluster:
#   `run trends` (every run) and an ad-hoc GROUP BY name over all `events`.
# After each cluster statement it reads the executors' task statistics: tasks and shuffle
# bytes per stage, so the scaling to many hosts can be estimated.
# Prints medians, cluster/local ratios and the stages; appends every measurement to
# benches/results/<date>-<commit>.csv.
#
#   benches/ballista.sh [RUNS]
#
# PROFQ: a profq built with --features ballista [default: builds target/release/profq].
# PYTHON: a Python with moto[server] and boto3 (the venv .ci/run makes) [default: .venv's].
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
SIZE="${SIZE:-1000}"
PYTHON="${PYTHON:-$PWD/.venv/bin/python}"
if [ -z "${PROFQ:-}" ]; then
  cargo build --release --quiet --features ballista
  PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
fi
SCRATCH="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$SCRATCH"; }
trap cleanup EXIT

. benches/measure.sh
. benches/stores.sh

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 600); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing listens on $1" >&2; exit 1; }

BASE="$SCRATCH/base"
ingest_committed "$BASE"
STORE="$SCRATCH/store"
replicate "$BASE" "$STORE" "$SIZE"
EVENTS_SQL="SELECT name, count(*) AS n, sum(dur_ns) AS d FROM events GROUP BY name ORDER BY d DESC, name LIMIT 20"

# Stores: the local directory, and the same files in moto's S3.
STORES=("local $STORE")
if "$PYTHON" -c 'import moto, boto3' 2>/dev/null; then
  S3_PORT=$(free_port)
  "$(dirname "$PYTHON")/moto_server" -H 127.0.0.1 -p "$S3_PORT" > /dev/null 2>&1 & PIDS+=($!)
  wait_port "$S3_PORT"
  export AWS_ENDPOINT="http://127.0.0.1:$S3_PORT" AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
  "$PYTHON" tests/servers/objects.py s3 "$AWS_ENDPOINT" mkbucket bench
  "$PYTHON" tests/servers/objects.py s3 "$AWS_ENDPOINT" upload bench store "$STORE"
  STORES+=("s3 s3://bench/store")
else
  echo "no moto in $PYTHON: the S3 store is left out" >&2
fi

# The cluster: one scheduler, two executors of one task slot per core.
SCHED=$(free_port)
"$PROFQ" ballista scheduler --bind "127.0.0.1:$SCHED" > "$SCRATCH/scheduler.log" 2>&1 & PIDS+=($!)
wait_port "$SCHED"
for e in 1 2; do
  FLIGHT=$(free_port); GRPC=$(free_port); mkdir -p "$SCRATCH/work-$e"
  RUST_LOG="warn,ballista_executor::executor_server=debug" "$PROFQ" ballista executor --scheduler "127.0.0.1:$SCHED" --bind "127.0.0.1:$FLIGHT" --grpc-port "$GRPC" \
    --work-dir "$SCRATCH/work-$e" --concurrent-tasks "$(nproc)" > "$SCRATCH/executor-$e.log" 2>&1 & PIDS+=($!)
  wait_port "$FLIGHT"
done
sleep 2
CLUSTER=(--engine ballista --scheduler "df://127.0.0.1:$SCHED")

# Tasks and shuffle bytes per stage of the last job, from the executors' task statistics
# (their debug lines "Task [TID <job>/<stage>.<attempt>/…], execution statistics: …").
stages() {
  python3 - "$SCRATCH" "$1" <<'PY' >> "$SCRATCH/stages"
import collections, os, re, sys
scratch, label = sys.argv[1:3]
tasks = []
for e in ('1', '2'):
    path = os.path.join(scratch, f'executor-{e}.log')
    for line in open(path, errors='replace'):
        m = re.search(r'Task \[TID (\w+)/(\d+)\.\d+/[^\]]*\], execution statistics: Ok\((.*)\)$', line)
        if m:
            tasks.append((m.group(1), int(m.group(2)), sum(int(b) for b in re.findall(r'num_bytes: (\d+)', m.group(3)))))
    open(path, 'w').close()
if tasks:
    job = tasks[-1][0]
    per = collections.defaultdict(lambda: [0, 0])
    for j, stage, nbytes in tasks:
        if j == job:
            per[stage][0] += 1
            per[stage][1] += nbytes
    print(f'{label}: ' + '; '.join(f'stage {s}: {n} tasks, {b / 1e6:.2f} MB shuffled' for s, (n, b) in sorted(per.items())))
PY
}

for entry in "${STORES[@]}"; do
  read -r where url <<< "$entry"
  MEASURE_INPUT="$where store of $SIZE runs, $(basename "$(dirname "$PROFQ")") build"
  for i in $(seq "$RUNS"); do
    ROUND=$i
    measure local "${where}_trends_local" "$PROFQ" run trends --store "$url"
    measure cluster "${where}_trends_cluster" "$PROFQ" run trends --store "$url" "${CLUSTER[@]}"
    [ "$i" = 1 ] && stages "${where}_trends"
    measure local "${where}_events_by_name_local" "$PROFQ" sql "$EVENTS_SQL" --store "$url"
    measure cluster "${where}_events_by_name_cluster" "$PROFQ" sql "$EVENTS_SQL" --store "$url" "${CLUSTER[@]}"
    [ "$i" = 1 ] && stages "${where}_events_by_name"
  done
done

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
python3 benches/record.py "$RESULTS" "$COMMIT" "ballista" 0 0 < "$SCRATCH/results"
python3 - "$SCRATCH/results" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
def med(label):
    return st.median(float(r[2]) for r in rows if r[1] == label)
labels = list(dict.fromkeys(r[1] for r in rows))
for label in labels:
    print(f'{label:36s} {med(label):7.3f} s')
for label in labels:
    if label.endswith('_cluster'):
        base = label[:-len('_cluster')]
        print(f'{base}: cluster / local = {med(label) / med(base + "_local"):.2f}x')
PY
cat "$SCRATCH/stages"
echo "appended to $RESULTS"
