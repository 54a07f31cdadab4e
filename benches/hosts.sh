#!/usr/bin/env bash
# Big sessions: `profq ingest` and `profq summarize` of one session of H hosts, for each H in
# HOSTS (default "1 8 64"), every host a link to the same XPlane (named host0.xplane.pb, …:
# the decoder reads each as its own host). Time should grow linearly with hosts and peak RSS
# stay bounded (target: 64 hosts of the 43 MB bench file, ~2.8 GB, in ≤ 1 GiB). Prints the
# medians, time per host and RSS per session size, and appends every measurement to
# benches/results/<date>-<commit>.csv.
#
#   benches/hosts.sh XPLANE [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
XPLANE="$(realpath "$1")"
RUNS="${2:-1}"
HOSTS="${HOSTS:-1 8 64}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

. benches/measure.sh

for H in $HOSTS; do
  SESSION="$SCRATCH/session-$H/plugins/profile/2026_01_01_00_00_00"
  mkdir -p "$SESSION"
  for h in $(seq 0 $((H - 1))); do ln "$XPLANE" "$SESSION/host$h.xplane.pb" 2> /dev/null || cp "$XPLANE" "$SESSION/host$h.xplane.pb"; done
  MEASURE_INPUT="session of $H hosts"
  for i in $(seq "$RUNS"); do
    ROUND=$i
    rm -rf "$SCRATCH/store"
    measure ingest profq_ingest "$PROFQ" ingest "$SESSION" --store "$SCRATCH/store"
    measure summarize profq_summarize "$PROFQ" summarize "$SESSION" --output "$SCRATCH/summary.json"
  done
  rm -rf "$SCRATCH/session-$H" "$SCRATCH/store"
done

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
python3 benches/record.py "$RESULTS" "$COMMIT" "$(basename "$XPLANE") sessions" "$(stat -c %s "$XPLANE")" 1 < "$SCRATCH/results"
python3 - "$SCRATCH/results" "$HOSTS" "$RESULTS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
hosts, results = sys.argv[2].split(), sys.argv[3]
for tool in dict.fromkeys(r[1] for r in rows):
    print(tool)
    for h in hosts:
        sel = [r for r in rows if r[1] == tool and r[8] == h]
        wall = st.median(float(r[2]) for r in sel)
        rss = max(int(r[4]) for r in sel) / 1024
        print(f'  {h:>3} hosts: {wall:7.2f} s, {wall / int(h):5.2f} s/host, peak RSS {rss:6.0f} MiB')
print(f'appended to {results}')
PY
