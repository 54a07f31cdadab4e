#!/usr/bin/env bash
# Nsight Systems exports: `profq ingest` and `profq summarize` of an `nsys export --type
# sqlite` file against SQLite's own full read of the tables profq reads (the `sqlite3` CLI,
# every row of each, written to /dev/null), in the same rounds. The ratio says what profq
# adds to reading the rows: building the tables, deriving, and Parquet. `PROFQ_TIMING=1` on
# one ingest then says where profq's own time goes (read, sort and nesting, derive, write).
#
#   benches/nsys.sh EXPORT.sqlite [RUNS]
#
# SQLITE3: the CLI (default on PATH; Debian's `sqlite3`).
set -euo pipefail
cd "$(dirname "$0")/.."
EXPORT="$(realpath "$1")"
RUNS="${2:-5}"
SQLITE3="${SQLITE3:-sqlite3}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

. benches/measure.sh

# The tables and columns profq reads, as SQLite would read them.
tables=$("$SQLITE3" "$EXPORT" "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN
  ('StringIds', 'PROCESSES', 'ThreadNames', 'CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY',
   'CUPTI_ACTIVITY_KIND_MEMSET', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS', 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION')")
read_all=""
for t in $tables; do read_all="$read_all SELECT * FROM $t;"; done
MEASURE_INPUT="$(basename "$EXPORT")"
for i in $(seq "$RUNS"); do
  ROUND=$i
  rm -rf "$SCRATCH/store"
  measure ingest profq_ingest "$PROFQ" ingest "$EXPORT" --store "$SCRATCH/store"
  measure ingest sqlite3_read_tables "$SQLITE3" "$EXPORT" "$read_all"
  measure summarize profq_summarize "$PROFQ" summarize "$EXPORT" --output "$SCRATCH/summary.json"
done
rm -rf "$SCRATCH/store"
PROFQ_TIMING=1 "$PROFQ" ingest "$EXPORT" --store "$SCRATCH/store" 2>&1 >/dev/null | grep -E "nsys|tables|derive|written" || true

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
python3 benches/record.py "$RESULTS" "$COMMIT" "$(basename "$EXPORT")" "$(stat -c %s "$EXPORT")" 1 < "$SCRATCH/results"
python3 - "$SCRATCH/results" "$RESULTS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
med = {t: (st.median(float(r[2]) for r in rows if r[1] == t), max(int(r[4]) for r in rows if r[1] == t) / 1024) for t in dict.fromkeys(r[1] for r in rows)}
for t, (wall, rss) in med.items():
    print(f"{t:22} {wall:7.3f} s  peak RSS {rss:6.0f} MiB")
print(f"ingest / sqlite3 read: {med['profq_ingest'][0] / med['sqlite3_read_tables'][0]:.2f}x")
print(f"appended to {sys.argv[2]}")
PY
