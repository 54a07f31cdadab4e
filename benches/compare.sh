#!/usr/bin/env bash
# profq against its peers on the same XPlane, in one command (speed is measured here, never
# in tests). For each of RUNS rounds, every tool gets a fresh scratch copy of the file (XProf
# writes cache files next to its input, which would otherwise help the next tool):
#   ingest:     profq ingest            vs  xprof create_events_db
#   summarize:  profq summarize         vs  xprof get_overview, xprof-rs get_overview
# Prints median wall time, CPU time (user+sys), peak RSS and the ratios.
#
#   benches/compare.sh XPLANE [RUNS]
#
# XPROF / XPROF_RS: the peers' CLIs (pip install xprof==2.24.2 xprof-rs), default on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
XPLANE="$(realpath "$1")"
RUNS="${2:-3}"
XPROF="${XPROF:-xprof}"
XPROF_RS="${XPROF_RS:-xprof-rs}"
cargo build --release --quiet
PROFQ="$PWD/target/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
BYTES=$(stat -c %s "$XPLANE")
NAME=$(basename "$XPLANE")

fresh_logdir() { # a new logdir holding a copy of the file; prints its path
  local d="$SCRATCH/logdir-$RANDOM$RANDOM"
  mkdir -p "$d/plugins/profile/session"
  cp "$XPLANE" "$d/plugins/profile/session/$NAME"
  echo "$d"
}

measure() { # group label command... ; appends "group label wall cpu rss_kb"
  local group=$1 label=$2; shift 2
  /usr/bin/time -f "%e %U %S %M" -o "$SCRATCH/t" "$@" > /dev/null 2> "$SCRATCH/err" || { echo "$label failed:" >&2; cat "$SCRATCH/err" >&2; exit 1; }
  read -r wall user sys rss < "$SCRATCH/t"
  echo "$group $label $wall $(awk "BEGIN{print $user + $sys}") $rss" >> "$SCRATCH/results"
}

for i in $(seq "$RUNS"); do
  d=$(fresh_logdir); measure ingest "profq_ingest" "$PROFQ" ingest "$d" --store "$d/store" --run-id bench
  d=$(fresh_logdir); measure ingest "xprof_create_events_db" "$XPROF" create_events_db --bypass_cache=True --session_id=session --logdir="$d"
  d=$(fresh_logdir); measure summarize "profq_summarize" "$PROFQ" summarize "$d"
  d=$(fresh_logdir); measure summarize "xprof_get_overview" "$XPROF" get_overview --bypass_cache=True --session_id=session --logdir="$d"
  d=$(fresh_logdir); measure summarize "xprof-rs_get_overview" "$XPROF_RS" get_overview --session_id=session --logdir="$d"
  rm -rf "$SCRATCH"/logdir-*
done

python3 - "$SCRATCH/results" "$BYTES" "$XPLANE" "$RUNS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
nbytes, path, runs = int(sys.argv[2]), sys.argv[3], sys.argv[4]
print(f"file: {path.rsplit('/', 1)[-1]} ({nbytes/1e6:.1f} MB); median of {runs} runs; {open('/proc/cpuinfo').read().count('processor')} cores")
for group in ("ingest", "summarize"):
    labels = list(dict.fromkeys(r[1] for r in rows if r[0] == group))
    med = {l: [st.median(float(r[k]) for r in rows if r[1] == l) for k in (2, 3, 4)] for l in labels}
    print(f"\n| {group} | wall s | cpu s | peak RSS MB | wall vs profq | RSS vs profq |")
    print("|---|---|---|---|---|---|")
    base = med[labels[0]]
    for l in labels:
        w, c, m = med[l]
        print(f"| {l} | {w:.3f} | {c:.3f} | {m/1024:.0f} | {w/base[0]:.1f}x | {m/base[2]:.1f}x |")
    if group == "ingest":
        print(f"\nprofq ingest throughput: {nbytes/1e6/base[0]:.0f} MB/s (wall)")
PY
