#!/usr/bin/env bash
# Ingest benchmark: profq ingest vs XProf's `xprof create_events_db` on the same XPlane,
# alternating, in one command. Prints wall time, CPU time, peak RSS (median of RUNS) and
# the ratios. Speed is measured here, never in tests.
#
#   benches/ingest_bench.sh XPLANE [RUNS]
#
# XPROF: the xprof CLI (pip install xprof==2.24.2), default `xprof` on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
XPLANE="$(realpath "$1")"
RUNS="${2:-3}"
XPROF="${XPROF:-xprof}"
cargo build --release --quiet
PROFQ="$PWD/target/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/logdir/plugins/profile/session"
cp "$XPLANE" "$SCRATCH/logdir/plugins/profile/session/"
BYTES=$(stat -c %s "$XPLANE")

measure() { # label, command... ; appends "label wall cpu rss_kb" to results
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$SCRATCH/t" "$@" > /dev/null 2> "$SCRATCH/err" || { cat "$SCRATCH/err" >&2; exit 1; }
  read -r wall user sys rss < "$SCRATCH/t"
  echo "$label $wall $(awk "BEGIN{print $user + $sys}") $rss" >> "$SCRATCH/results"
}

for i in $(seq "$RUNS"); do
  rm -rf "$SCRATCH/store"
  measure profq "$PROFQ" ingest "$XPLANE" --store "$SCRATCH/store" --run-id bench
  measure xprof "$XPROF" create_events_db --bypass_cache=True --session_id=session --logdir="$SCRATCH/logdir"
done

python3 - "$SCRATCH/results" "$BYTES" "$XPLANE" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
nbytes, path = int(sys.argv[2]), sys.argv[3]
med = {}
for tool in ("profq", "xprof"):
    r = [x for x in rows if x[0] == tool]
    med[tool] = [st.median(float(x[k]) for x in r) for k in (1, 2, 3)]
print(f"file: {path} ({nbytes/1e6:.1f} MB), median of {len(rows)//2} runs")
print(f"| tool | wall s | cpu s | peak RSS MB |")
print(f"|---|---|---|---|")
for t, (w, c, m) in med.items():
    print(f"| {'profq ingest' if t=='profq' else 'xprof create_events_db'} | {w:.3f} | {c:.3f} | {m/1024:.0f} |")
p, x = med["profq"], med["xprof"]
print(f"profq vs xprof: {x[0]/p[0]:.1f}x faster (wall), {x[1]/p[1]:.1f}x less CPU, {x[2]/p[2]:.1f}x less memory; profq {nbytes/1e6/p[0]:.0f} MB/s")
PY
