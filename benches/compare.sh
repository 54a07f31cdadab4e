#!/usr/bin/env bash
# profq against its peers on the same profile, in one command (speed is measured here,
# never in tests). INPUT is an .xplane.pb, a session directory of several hosts' files, or a
# trace JSON (.json / .json.gz: the peers read XPlane alone; a .json.gz is timed against
# `zcat` of the same file, the inflate alone, and throughput is of the uncompressed text).
# For each of RUNS rounds, every tool gets a fresh scratch copy (XProf writes cache files
# next to its input, which would otherwise help the next tool):
#   ingest:     profq ingest            vs  xprof create_events_db
#   summarize:  profq summarize         vs  xprof get_overview, xprof-rs get_overview
#   queries:    three named queries on the ingested store (hot_ops, time_breakdown_global, pre_op_gaps)
# Prints median wall time, CPU time (user+sys), peak RSS, the ratios and whether the
# regression guards hold (docs/benchmarking.md), and appends every measurement to
# benches/results/<date>-<commit>.csv (RESULTS overrides the file). A command that
# runs past TIMEOUT_S (default 900) is reported as a timeout; a peer that fails (XProf's
# create_events_db refuses multi-host sessions) is reported as failed.
#
#   benches/compare.sh INPUT [RUNS] [BASELINE]
#
# BASELINE: another profq binary (the previous release build) to pair against: its ingest
# and summarize run right after profq's in every round, and the guard "no slower than the
# baseline" (median wall within 3 %) is printed with the others.
#
# XPROF / XPROF_RS: the peers' CLIs (pip install xprof==2.24.2 xprof-rs), default on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT="$(realpath "$1")"
RUNS="${2:-3}"
BASELINE="${3:+$(realpath "$3")}"
XPROF="${XPROF:-xprof}"
XPROF_RS="${XPROF_RS:-xprof-rs}"
TIMEOUT_S="${TIMEOUT_S:-900}"
cargo build --release --quiet
PROFQ="${CARGO_TARGET_DIR:-$PWD/target}/release/profq"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
if [ -d "$INPUT" ]; then
  FILES=("$INPUT"/*.xplane.pb)
else
  FILES=("$INPUT")
fi
PEERS=1
case "$INPUT" in *.json | *.json.gz) PEERS=0 ;; esac
BYTES=$(cat "${FILES[@]}" | wc -c)
TEXT_BYTES=$BYTES
case "$INPUT" in *.json.gz) TEXT_BYTES=$(zcat "$INPUT" | wc -c) ;; esac

fresh_logdir() { # a new logdir holding copies of the files; prints its path
  local d="$SCRATCH/logdir-$RANDOM$RANDOM"
  mkdir -p "$d/plugins/profile/session"
  cp "${FILES[@]}" "$d/plugins/profile/session/"
  echo "$d"
}

measure() { # group label command... ; appends "group label wall cpu rss_kb round" (or "timeout")
  local group=$1 label=$2; shift 2
  if ! /usr/bin/time -f "%e %U %S %M" -o "$SCRATCH/t" timeout "$TIMEOUT_S" "$@" > /dev/null 2> "$SCRATCH/err"; then
    if grep -q "Command exited with non-zero status 124" "$SCRATCH/t"; then
      echo "$group $label timeout - - $ROUND" >> "$SCRATCH/results"; return
    fi
    case "$label" in
      profq*) echo "$label failed:" >&2; cat "$SCRATCH/err" >&2; exit 1 ;;
      *) echo "$group $label failed - - $ROUND" >> "$SCRATCH/results"; echo "$label failed (reported, not fatal): $(head -c 300 "$SCRATCH/err")" >&2; return ;;
    esac
  fi
  read -r wall user sys rss < <(tail -1 "$SCRATCH/t")
  echo "$group $label $wall $(awk "BEGIN{print $user + $sys}") $rss $ROUND" >> "$SCRATCH/results"
}

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src queries Cargo.lock || echo +dirty)"
RESULTS="${RESULTS:-benches/results/$(date -u +%F)-$COMMIT.csv}"
mkdir -p "$(dirname "$RESULTS")"
for i in $(seq "$RUNS"); do
  ROUND=$i
  d=$(fresh_logdir); measure ingest "profq_ingest" "$PROFQ" ingest "$d" --store "$SCRATCH/store-$i" --run-id bench
  if [ -n "$BASELINE" ]; then d=$(fresh_logdir); measure ingest "baseline_ingest" "$BASELINE" ingest "$d" --store "$SCRATCH/base-$i" --run-id bench; rm -rf "$SCRATCH/base-$i"; fi
  for q in hot_ops time_breakdown_global pre_op_gaps; do
    measure queries "profq_run_$q" "$PROFQ" run "$q" --run bench --store "$SCRATCH/store-$i"
  done
  rm -rf "$SCRATCH/store-$i"
  case "$INPUT" in *.json.gz) measure ingest "zcat" zcat "$INPUT" ;; esac
  if [ "$PEERS" = 1 ]; then d=$(fresh_logdir); measure ingest "xprof_create_events_db" "$XPROF" create_events_db --bypass_cache=True --session_id=session --logdir="$d"; fi
  d=$(fresh_logdir); measure summarize "profq_summarize" "$PROFQ" summarize "$d"
  if [ -n "$BASELINE" ]; then d=$(fresh_logdir); measure summarize "baseline_summarize" "$BASELINE" summarize "$d"; fi
  if [ "$PEERS" = 1 ]; then
    d=$(fresh_logdir); measure summarize "xprof_get_overview" "$XPROF" get_overview --bypass_cache=True --session_id=session --logdir="$d"
    d=$(fresh_logdir); measure summarize "xprof-rs_get_overview" "$XPROF_RS" get_overview --session_id=session --logdir="$d"
  fi
  rm -rf "$SCRATCH"/logdir-*
done

python3 benches/record.py "$RESULTS" "$COMMIT" "$(basename "$INPUT")" "$BYTES" "${#FILES[@]}" < "$SCRATCH/results"
python3 - "$SCRATCH/results" "$BYTES" "$INPUT" "$RUNS" "${#FILES[@]}" "$RESULTS" "$TEXT_BYTES" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
nbytes, path, runs, nfiles = int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
results, text_bytes = sys.argv[6], int(sys.argv[7])
print(f"input: {path.rsplit('/', 1)[-1]} ({nbytes/1e6:.1f} MB in {nfiles} file(s)); median of {runs} runs; {open('/proc/cpuinfo').read().count('processor')} cores")
for group in ("ingest", "summarize", "queries"):
    labels = list(dict.fromkeys(r[1] for r in rows if r[0] == group))
    def med(l):
        ok = [r for r in rows if r[1] == l and r[2] not in ("timeout", "failed")]
        return [st.median(float(r[k]) for r in ok) for k in (2, 3, 4)] if ok else None
    print(f"\n| {group} | wall s | cpu s | peak RSS MB | wall vs profq | RSS vs profq |")
    print("|---|---|---|---|---|---|")
    base = med(labels[0])
    for l in labels:
        m = med(l)
        if m is None:
            why = next(r[2] for r in rows if r[1] == l)
            print(f"| {l} | {why} | | | | |"); continue
        w, c, r = m
        ratio = f"{w/base[0]:.1f}x | {r/base[2]:.1f}x" if group != "queries" else "| "
        print(f"| {l} | {w:.3f} | {c:.3f} | {r/1024:.0f} | {ratio} |")
    if group == "ingest" and base:
        print(f"\nprofq ingest throughput: {nbytes/1e6/base[0]:.0f} MB/s (wall)")
        if text_bytes != nbytes:
            print(f"profq ingest throughput: {text_bytes/1e6/base[0]:.0f} MB/s of uncompressed text (wall)")
# The regression guards (docs/benchmarking.md): summarize >= 1.3x xprof-rs get_overview,
# ingest >= 10x XProf create_events_db, peak RSS below both peers; with a baseline binary,
# no slower than it (median wall within 3 %).
def m(label):
    ok = [r for r in rows if r[1] == label and r[2] not in ("timeout", "failed")]
    return (st.median(float(r[2]) for r in ok), st.median(float(r[4]) for r in ok)) if ok else None
guards = [("summarize", "profq_summarize", "xprof-rs_get_overview", 1.3), ("summarize", "profq_summarize", "xprof_get_overview", 1.0),
          ("ingest", "profq_ingest", "xprof_create_events_db", 10.0)]
print()
for group, ours, peer, speedup in guards:
    a, b = m(ours), m(peer)
    if a and b:
        held = b[0] / a[0] >= speedup and a[1] < b[1]
        print(f"guard {group}: {b[0]/a[0]:.2f}x {peer} (needs >= {speedup}x), RSS {a[1]/1024:.0f} vs {b[1]/1024:.0f} MB: {'held' if held else 'BROKEN'}")
for group in ("ingest", "summarize"):
    a, b = m(f"profq_{group}"), m(f"baseline_{group}")
    if a and b:
        print(f"guard {group} vs baseline: {b[0]/a[0]:.3f}x (needs >= 0.97x), RSS {a[1]/1024:.0f} vs {b[1]/1024:.0f} MB: {'held' if b[0] / a[0] >= 0.97 else 'BROKEN'}")
print(f"raw figures appended to {results}")
PY
